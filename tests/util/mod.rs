//! The test harness: a PostgreSQL server started once per test process with
//! the same library code as `sluice demo`, a fresh database per test, the
//! `sluice` binary, and `psql \copy` as the reference loader.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, OnceLock};
use std::time::Duration;

use sluice::local_pg::{LocalOptions, LocalPostgres, SUPERUSER};
use sluice::sink::postgres::{PgSession, PgTarget};

/// The superuser's password for TCP connections (the socket is trusted).
pub const PASSWORD: &str = "correct-horse-battery";

static SERVER: OnceLock<LocalPostgres> = OnceLock::new();

extern "C" fn stop_server() {
    if let Some(server) = SERVER.get() {
        server.stop();
    }
}

pub fn server() -> &'static LocalPostgres {
    SERVER.get_or_init(|| {
        let settings = [("fsync", "off"), ("max_connections", "200"), ("shared_buffers", "256MB")];
        let opts = LocalOptions {
            tcp: true,
            password: Some(PASSWORD.into()),
            settings: settings.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            tls: false,
            environment: Vec::new(),
        };
        let server = LocalPostgres::start(&opts).expect("start the test PostgreSQL server");
        // SAFETY: registering a plain extern "C" function; it runs at exit.
        unsafe { libc::atexit(stop_server) };
        server
    })
}

/// A database of its own for one test.
pub struct TestDb {
    pub name: String,
    pub dir: tempfile::TempDir,
}

static NEXT_DB: AtomicUsize = AtomicUsize::new(0);

impl TestDb {
    pub fn new() -> TestDb {
        let server = server();
        let name = format!("t{}_{}", std::process::id(), NEXT_DB.fetch_add(1, Ordering::SeqCst));
        let admin = PgTarget::new(Some(&server.conninfo("postgres"))).connect().unwrap();
        admin.execute(&format!("CREATE DATABASE {name}")).unwrap();
        TestDb { name, dir: tempfile::tempdir().unwrap() }
    }

    /// A tablespace of its own (named like the database) in an empty
    /// folder the server's user owns, next to the server's socket.
    pub fn tablespace(&self) -> String {
        use std::os::unix::fs::MetadataExt;
        let socket_dir = server().socket_dir();
        let owner = std::fs::metadata(socket_dir).unwrap();
        let location = socket_dir.join(format!("ts_{}", self.name));
        std::fs::create_dir(&location).unwrap();
        std::os::unix::fs::chown(&location, Some(owner.uid()), Some(owner.gid())).unwrap();
        let name = format!("ts_{}", self.name);
        self.execute(&format!("CREATE TABLESPACE {name} LOCATION '{}'", location.display()));
        name
    }

    /// Unix-socket connection string (trusted).
    pub fn conninfo(&self) -> String {
        server().conninfo(&self.name)
    }

    /// TCP URL with the password in it.
    pub fn url_with_password(&self, password: &str) -> String {
        format!("postgresql://{SUPERUSER}:{password}@127.0.0.1:{}/{}", server().port, self.name)
    }

    pub fn session(&self) -> PgSession {
        PgTarget::new(Some(&self.conninfo())).connect().unwrap()
    }

    pub fn execute(&self, sql: &str) {
        self.session().execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// The first column of the first row, as text.
    pub fn scalar(&self, sql: &str) -> String {
        let rows = self.session().query(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}"));
        rows[0][0].clone().unwrap_or_default()
    }

    pub fn count(&self, table: &str) -> u64 {
        self.scalar(&format!("SELECT count(*) FROM {table}")).parse().unwrap()
    }

    /// A file in this test's folder.
    pub fn file(&self, name: &str, content: &[u8]) -> PathBuf {
        let path = self.dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, content).unwrap();
        path
    }

    /// Creates `table` shaped like `dataset` and writes `rows` generated rows
    /// (with `seed`) to the file `name` in this test's folder.
    pub fn generated(&self, dataset: sluice::gen::Dataset, table: &str, rows: u64, seed: u64, name: &str) -> PathBuf {
        self.execute(&dataset.ddl(table));
        let mut data = Vec::new();
        sluice::gen::generate(dataset, rows, seed, &mut data).unwrap();
        self.file(name, &data)
    }

    /// Loads `file` into `table` with `psql \copy` (the reference).
    pub fn psql_copy(&self, table: &str, file: &Path, options: &str) {
        let command = format!("\\copy {table} from '{}' {options}", file.display());
        let out = Command::new("psql")
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", &self.conninfo(), "-c", &command])
            .output()
            .expect("run psql");
        assert!(out.status.success(), "psql \\copy failed: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Asserts that two tables hold the same multiset of rows.
    pub fn assert_same_rows(&self, a: &str, b: &str) {
        assert_eq!(self.count(a), self.count(b), "row counts of {a} and {b}");
        let diff = self.scalar(&format!(
            "SELECT count(*) FROM ((TABLE {a} EXCEPT ALL TABLE {b}) UNION ALL (TABLE {b} EXCEPT ALL TABLE {a})) d"
        ));
        assert_eq!(diff, "0", "{a} and {b} differ");
    }

    /// Loads `file` into table `got` with sluice (extra `args`) and into
    /// `want` with `psql \copy` (`psql_options`), then asserts both tables
    /// hold the same rows.
    pub fn assert_loads_like_psql(&self, file: &Path, args: &[&str], psql_options: &str) {
        let path = file.to_str().unwrap();
        let mut full = vec![path, "--table", "got"];
        full.extend_from_slice(args);
        self.load(&full).assert_ok();
        self.psql_copy("want", file, psql_options);
        self.assert_same_rows("got", "want");
    }

    /// `sluice load` against this database with extra arguments.
    /// Runs `sluice load` into this database, in its folder: a rejects
    /// file by its default name goes there, not where the tests run, where
    /// tests running at once would share it.
    pub fn load(&self, args: &[&str]) -> Run {
        let db = self.conninfo();
        let mut full = vec!["load", "--db", db.as_str()];
        full.extend_from_slice(args);
        run_command({
            let mut cmd = sluice_command();
            cmd.args(&full).current_dir(self.dir.path());
            cmd
        })
    }
}

/// The outcome of one `sluice` run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from(out: Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    #[track_caller]
    pub fn assert_ok(&self) -> &Run {
        assert_eq!(self.code, 0, "sluice failed:\n{}\n{}", self.stdout, self.stderr);
        self
    }

    /// The run refused to load (exit 2) and its stderr says `says`.
    #[track_caller]
    pub fn assert_refused(&self, says: &str) -> &Run {
        assert_eq!(self.code, 2, "{}", self.output());
        assert!(self.stderr.contains(says), "{}", self.stderr);
        self
    }

    /// Everything the run printed.
    pub fn output(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// A `sluice` command with no PG* variables leaking in from the machine.
pub fn sluice_command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
    for (key, _) in std::env::vars() {
        if key.starts_with("PG") {
            cmd.env_remove(key);
        }
    }
    cmd.env("PGCONNECT_TIMEOUT", "10").stdin(Stdio::null());
    cmd
}

/// Runs sluice in a scratch folder of its own: a rejects file by its
/// default name goes there, not into the repository (where it was
/// committed once) or a folder other tests share.
pub fn sluice(args: &[&str]) -> Run {
    let scratch = tempfile::tempdir().unwrap();
    let mut cmd = sluice_command();
    cmd.args(args).current_dir(scratch.path());
    run_command(cmd)
}

/// How long one run of sluice may take before the test calls it hung: far
/// over the longest (some seconds), far under CI's limit. A load that hung
/// once (1 in 40, two workers waiting for each other) ran until CI's 90
/// minutes were up, and said nothing of which test it was.
const HUNG_AFTER: Duration = Duration::from_secs(600);

/// Runs `cmd` to its end (see [`Finish`]).
pub fn run_command(mut cmd: Command) -> Run {
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run sluice");
    Run::from(child.finish())
}

/// A child's end, awaited for [`HUNG_AFTER`] at most: then it is killed,
/// and the test fails with what it printed.
pub trait Finish {
    fn finish(self) -> Output;
}

impl Finish for Child {
    fn finish(self) -> Output {
        let pid = self.id();
        let (done, ended) = mpsc::channel();
        std::thread::spawn(move || done.send(self.wait_with_output()));
        if let Ok(out) = ended.recv_timeout(HUNG_AFTER) {
            return out.expect("wait for sluice");
        }
        // SAFETY: kill(2) on our own child, which has not been reaped.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        let run = Run::from(ended.recv().unwrap().expect("wait for sluice"));
        panic!("sluice (pid {pid}) ran over {HUNG_AFTER:?}, killed:\n{}", run.output());
    }
}

/// Runs sluice with `input` on stdin.
pub fn sluice_with_stdin(args: &[&str], input: &[u8]) -> Run {
    use std::io::Write;
    let scratch = tempfile::tempdir().unwrap();
    let mut child = sluice_command()
        .args(args)
        .current_dir(scratch.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let data = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let out = child.finish();
    writer.join().unwrap();
    Run::from(out)
}

/// `data` gzipped (fast level).
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut enc, data).unwrap();
    enc.finish().unwrap()
}

/// `data` compressed by bzip2 in blocks of 100 kB (level 1), so that a
/// file of a few hundred kB is several blocks, decoded apart.
pub fn bzip2_small_blocks(data: &[u8]) -> Vec<u8> {
    let mut enc = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(1));
    std::io::Write::write_all(&mut enc, data).unwrap();
    enc.finish().unwrap()
}

/// A TSV file with a bad value now and then: line `i + 1` holds the fields
/// of `row(i)`, except that on each line where `i % every == at` one field
/// is replaced by the next of `bad` (column, value), in turn.
pub struct Spoiled {
    /// The file as written, bad values in.
    pub all: String,
    /// The same lines before any was spoiled.
    pub unspoiled: String,
    /// The spoiled lines' numbers.
    pub bad_lines: Vec<u64>,
}

impl Spoiled {
    pub fn new(
        count: u64,
        (every, at): (u64, u64),
        bad: &[(usize, &str)],
        row: impl Fn(u64) -> Vec<String>,
    ) -> Spoiled {
        let mut spoiled = Spoiled { all: String::new(), unspoiled: String::new(), bad_lines: Vec::new() };
        for i in 0..count {
            let mut fields = row(i);
            spoiled.unspoiled.push_str(&(fields.join("\t") + "\n"));
            if i % every == at {
                let (column, value) = bad[(i / every) as usize % bad.len()];
                fields[column] = value.to_string();
                spoiled.bad_lines.push(i + 1);
            }
            spoiled.all.push_str(&(fields.join("\t") + "\n"));
        }
        spoiled
    }

    /// The file's lines without the spoiled ones: what should load.
    pub fn kept(&self) -> String {
        let kept = self.all.lines().enumerate().filter(|(n, _)| !self.bad_lines.contains(&(*n as u64 + 1)));
        kept.map(|(_, line)| format!("{line}\n")).collect()
    }
}

/// A small deterministic generator (xorshift), so failures reproduce.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

/// The random tests' seed: another explores further
/// (`FUZZ_SEED=7 cargo test the_encoder_reads`).
pub fn fuzz_seed() -> u64 {
    std::env::var("FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x2545_F491_4F6C_DD1D)
}

/// The rejects file's (file name, line) pairs.
pub fn rejected_lines(path: &Path) -> BTreeSet<(String, usize)> {
    let Ok(text) = std::fs::read_to_string(path) else { return BTreeSet::new() };
    text.lines()
        .map(|line| {
            let reject: serde_json::Value = serde_json::from_str(line).unwrap();
            let file = reject["file"].as_str().unwrap();
            let name = Path::new(file).file_name().unwrap().to_str().unwrap();
            (name.to_string(), reject["line"].as_u64().unwrap() as usize)
        })
        .collect()
}

/// A random case's inputs (see `random_loads`): each file's bytes, gzipped
/// one time in four, compressed by bzip2 one in eight, a file named `-`
/// through stdin.
#[derive(Default)]
pub struct CaseInputs {
    pub paths: Vec<String>,
    pub piped: Option<Vec<u8>>,
}

impl CaseInputs {
    pub fn add(&mut self, db: &TestDb, rng: &mut Rng, name: &str, bytes: Vec<u8>) {
        let bytes = match rng.below(8) {
            0 | 1 => gzip(&bytes),
            2 => bzip2_small_blocks(&bytes),
            _ => bytes,
        };
        match name {
            "-" => {
                self.piped = Some(bytes);
                self.paths.push("-".into());
            }
            _ => self.paths.push(db.file(name, &bytes).to_str().unwrap().to_string()),
        }
    }

    /// Loads the inputs into `got` with `flags` and the rejects file
    /// `rejects`, asserts the exit code (1 when `any_bad`, else 0), and
    /// returns the rejected (file name, line) pairs.
    pub fn load(
        &self,
        db: &TestDb,
        rejects: &str,
        flags: &[String],
        any_bad: bool,
        context: &str,
    ) -> BTreeSet<(String, usize)> {
        let rejects = db.dir.path().join(rejects);
        let mut args: Vec<String> = vec!["load".into(), "--db".into(), db.conninfo()];
        args.extend(self.paths.iter().cloned());
        args.extend(["--table".into(), "got".into(), "--rejects".into(), rejects.to_str().unwrap().into()]);
        args.extend(flags.iter().cloned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = sluice_with_stdin(&args, self.piped.as_deref().unwrap_or_default());
        assert_eq!(run.code, i32::from(any_bad), "{context}: {}", run.output());
        rejected_lines(&rejects)
    }
}

/// Asserts the accounting equation in a JSON report, per file and in total
/// (with what earlier runs of the job committed, when it resumed).
pub fn assert_accounts(report: &serde_json::Value) {
    let counts = [
        "rows_loaded",
        "rejected",
        "suppressed",
        "skipped",
        "resumed_rows",
        "resumed_rejected",
        "resumed_suppressed",
        "resumed_skipped",
    ];
    let sum = |v: &serde_json::Value| counts.iter().map(|k| v[k].as_u64().unwrap()).sum::<u64>();
    let s = &report["summary"];
    assert_eq!(s["records_read"], sum(s), "{s}");
    for f in report["per_file"].as_array().unwrap() {
        assert_eq!(f["records_read"], sum(f), "{f}");
    }
}
