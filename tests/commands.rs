//! Progress, the JSON report, `sluice gen` and `sluice demo`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::util::{server, sluice, sluice_command, sluice_with_stdin, Finish, TestDb, PASSWORD};

/// Starts `sluice args` with stderr read line by line on a thread: the lines
/// arrive on the channel as they are printed.
fn spawn_watched(args: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut child = sluice_command().args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (send, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = send.send(line);
        }
    });
    (child, lines)
}

/// Waits for a stderr line containing `needle`; every line seen until then.
fn wait_for_line(lines: &mpsc::Receiver<String>, needle: &str) -> Vec<String> {
    let mut seen = Vec::new();
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(120)) {
        let found = line.contains(needle);
        seen.push(line);
        if found {
            return seen;
        }
    }
    panic!("no line with {needle:?}: {seen:?}")
}

fn terminate(child: &Child) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
}

#[test]
fn report_accounts_for_every_record_and_progress_is_plain_when_piped() {
    let db = TestDb::new();
    db.execute(&sluice::gen::Dataset::Transactions.ddl("t"));
    let header = b"tid\tms\tamount\tdescription\n";
    let mut data = header.to_vec();
    sluice::gen::generate(sluice::gen::Dataset::Transactions, 400_000, 1, &mut data).unwrap();
    let file = db.file("t.tsv", &data);
    let report = db.dir.path().join("report.json");
    let run = db.load(&[
        file.to_str().unwrap(),
        "--table",
        "t",
        "--header",
        "--chunk-size",
        "1MiB",
        "--report",
        report.to_str().unwrap(),
        "--progress-interval",
        "0.02",
    ]);
    run.assert_ok();
    assert!(run.stdout.starts_with("loaded 400,000 rows ("), "{}", run.stdout);
    assert!(run.stderr.lines().any(|l| l.starts_with("sluice: ") && l.contains("rows/s")), "{}", run.stderr);
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let s = &json["summary"];
    assert_eq!(s["rows_loaded"], 400_000);
    assert_eq!(s["records_read"], 400_000);
    assert_eq!(s["header_lines"], 1);
    assert_eq!(s["complete"], true);
    let f = &json["per_file"][0];
    assert_eq!(f["records_read"], f["rows_loaded"]);
    assert_eq!(f["bytes"], data.len() as u64);
    let chunks = json["chunks"].as_array().unwrap();
    assert!(chunks.len() > 10);
    let rows: u64 = chunks.iter().map(|c| c["rows"].as_u64().unwrap()).sum();
    assert_eq!(rows, 400_000);
    let bytes: u64 = chunks.iter().map(|c| c["byte_len"].as_u64().unwrap()).sum();
    assert_eq!(bytes + header.len() as u64, data.len() as u64, "chunks cover all but the header");
    assert_eq!(chunks[0]["first_line"], 2);
    assert!(chunks.iter().all(|c| c["end_s"].as_f64() >= c["start_s"].as_f64()));
    assert_eq!(db.count("t"), 400_000);
}

#[test]
fn gen_is_deterministic_and_prints_ddl() {
    let a = sluice(&["gen", "cname", "--rows", "2k", "--seed", "4"]);
    let b = sluice(&["gen", "cname", "--rows", "2k", "--seed", "4"]);
    a.assert_ok();
    assert_eq!(a.stdout, b.stdout);
    assert_eq!(a.stdout.lines().count(), 2000);
    let ddl = sluice(&["gen", "flights", "--ddl", "--table", "extract"]);
    assert!(ddl.stdout.starts_with("CREATE TABLE \"extract\" ("), "{}", ddl.stdout);
    let bad = sluice(&["gen", "nope"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("choose one of transactions, cname"), "{}", bad.stderr);
}

/// The whole main job on the embedded default: start a server, generate,
/// load, summarise, stop and clean up.
#[test]
fn demo_runs_end_to_end() {
    let run = sluice(&["demo", "--rows", "300k", "--dataset", "store_sales"]);
    run.assert_ok();
    assert!(run.stdout.contains("loaded 300,000 rows"), "{}", run.stdout);
    // Where the time went, as `sluice load` prints it (20 samples a second).
    assert!(run.stdout.contains("server sessions ("), "{}", run.stdout);
    assert!(run.stderr.contains("stopping the server"), "{}", run.stderr);
}

/// TERM (or Ctrl-C) during the demo's load still stops the throwaway server
/// and removes its files and the generated data.
#[test]
fn demo_interrupted_stops_its_server_and_cleans_up() {
    let (child, lines) = spawn_watched(&["demo", "--rows", "1M"]);
    let seen = wait_for_line(&lines, "sluice demo: sluice load ");
    let data_dir = seen.iter().find_map(|l| l.split(" into ").nth(1)).expect("the demo names its data folder");
    let children = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", child.id())).unwrap();
    let children: Vec<String> = children.split_whitespace().map(String::from).collect();
    assert!(!children.is_empty(), "the demo's server runs as its child");
    terminate(&child);
    let status = child.finish().status;
    let rest: Vec<String> = lines.iter().collect();
    assert_eq!(status.code(), Some(3), "{rest:?}");
    assert!(rest.iter().any(|l| l.contains("stopping the server and removing its files")), "{rest:?}");
    for pid in &children {
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "process {pid} outlived the demo");
    }
    assert!(!Path::new(data_dir).exists(), "{data_dir} was left behind");
}

/// `sluice doctor` reads the settings and the table and gives advice with
/// the numbers behind it.
#[test]
fn doctor_reads_settings_and_table() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE parent (id int PRIMARY KEY); \
         CREATE TABLE orders (id int PRIMARY KEY, parent int REFERENCES parent, qty int CHECK (qty > 0)); \
         CREATE INDEX orders_qty ON orders (qty)",
    );
    let run = sluice(&["doctor", "--db", &db.conninfo(), "--table", "orders", "--json"]);
    run.assert_ok();
    let findings: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let find = |topic: &str| findings.as_array().unwrap().iter().find(|f| f["topic"] == topic).cloned().unwrap();
    assert_eq!(find("max_connections")["level"], "ok");
    // The test server keeps the default 80MB.
    assert_eq!(find("min_wal_size")["level"], "advice");
    assert!(find("min_wal_size")["advice"].as_str().unwrap().contains("zero-fills"));
    assert_eq!(find("wal_recycle")["level"], "ok");
    let cpus = find("server CPUs")["value"].as_str().unwrap().to_string();
    assert!(cpus.ends_with("(the server runs on this machine)"), "the test server is local: {cpus}");
    assert!(find("shared_buffers")["value"].as_str().unwrap().ends_with("MB"));
    let indexes = find("public.orders indexes");
    assert_eq!(indexes["level"], "advice");
    assert!(indexes["value"].as_str().unwrap().contains("orders_qty"));
    assert!(indexes["advice"].as_str().unwrap().contains("--defer-indexes yes drops all 2 there too (unique ones too"));
    assert_eq!(find("public.orders foreign keys")["value"], "1");
    assert_eq!(find("public.orders CHECK constraints")["value"], "1");
    assert_eq!(find("connection")["value"], "Unix socket");
    // The test server's role is named sluice, as the ledger's schema is.
    let search_path = find("search_path");
    assert_eq!(search_path["level"], "advice");
    assert!(search_path["advice"].as_str().unwrap().contains("SET search_path = public"), "{search_path}");
    // Over TCP to this machine the doctor names the server's socket, which
    // sluice load uses by itself.
    let tcp = sluice(&["doctor", "--db", &db.url_with_password(PASSWORD), "--json"]);
    tcp.assert_ok();
    let tcp: serde_json::Value = serde_json::from_str(&tcp.stdout).unwrap();
    let connection = tcp.as_array().unwrap().iter().find(|f| f["topic"] == "connection").unwrap();
    assert_eq!(connection["value"], "TCP to 127.0.0.1");
    assert_eq!(connection["level"], "ok");
    let socket_dir = server().socket_dir().display().to_string();
    let advice = connection["advice"].as_str().unwrap();
    assert!(advice.contains(&format!("host={socket_dir} ")), "{connection}");
    assert!(advice.contains("sluice load goes through it by itself"), "{connection}");
    let text = sluice(&["doctor", "--db", &db.conninfo()]);
    assert!(text.stdout.lines().any(|l| l.starts_with("-> max_wal_size = ")), "{}", text.stdout);
    assert!(text.stdout.contains("wal_buffers = "), "{}", text.stdout);
    let missing = sluice(&["doctor", "--db", &db.conninfo(), "--table", "nope"]);
    assert_eq!(missing.code, 2);
}

/// A table `orders` and a CSV file of `rows` rows for it.
fn orders(db: &TestDb, key: &str, rows: u64) -> std::path::PathBuf {
    db.execute(&format!("CREATE TABLE orders (id int {key}, qty int, note text)"));
    let data: String = (1..=rows).map(|i| format!("{i},{},note {i}\n", i % 7)).collect();
    db.file("orders.csv", data.as_bytes())
}

/// No scratch table and no ledger rows of `sluice bench` stay behind.
fn assert_bench_left_nothing(db: &TestDb) {
    assert_eq!(db.scalar("SELECT count(*) FROM pg_class WHERE relname LIKE 'sluice_bench_%'"), "0", "scratch dropped");
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.jobs WHERE job LIKE 'sluice-bench-%'"), "0");
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.chunks WHERE job LIKE 'sluice-bench-%'"), "0");
}

/// `sluice bench` loads every setting into a scratch copy, answers the three
/// questions, recommends a command line, writes every run as CSV, and
/// leaves the user's table alone.
#[test]
fn bench_measures_a_matrix_and_recommends_a_command() {
    let db = TestDb::new();
    let file = orders(&db, "PRIMARY KEY", 30_000);
    let csv = db.dir.path().join("runs.csv");
    let args = [file.to_str().unwrap(), "--table", "orders", "--rounds", "2", "--csv", csv.to_str().unwrap()];
    let run = sluice(&[&["bench", "--db", &db.conninfo()][..], &args].concat());
    run.assert_ok();
    for needle in [
        "1 worker, one transaction",
        "workers auto (chose ",
        "2 workers, binary COPY",
        "2 workers, indexes kept",
        "Is the load fast?",
        "Is one transaction a problem?",
        "Do parallel sessions help?",
        "Is the machine the limit?",
        &format!("Use: sluice load {} --table orders", file.display()),
    ] {
        assert!(run.stdout.contains(needle), "{needle}: {}", run.stdout);
    }
    let runs = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(runs.lines().count(), 1 + 2 * 10, "a header and 10 settings x 2 rounds: {runs}");
    assert!(runs.lines().skip(1).all(|l| l.contains(",30000,")), "every run loaded every row: {runs}");
    assert_eq!(db.count("orders"), 0, "the user's table is not written");
    assert_bench_left_nothing(&db);

    // A file under lines of title, its header naming the columns in another
    // order: read as `sluice load` reads it, and the command says how.
    let rows: String = (1..=30_000).map(|i| format!("{},{i},note {i}\n", i % 7)).collect();
    let titled = db.file("titled.csv", format!("Orders \"Q4\nnotes\nqty,id,note\n{rows}").as_bytes());
    let args = [titled.to_str().unwrap(), "--table", "orders", "--rounds", "1", "--csv", csv.to_str().unwrap()];
    let flags = ["--skip-lines", "2", "--header", "--delimiter", ","];
    let run = sluice(&[&["bench", "--db", &db.conninfo()][..], &args, &flags].concat());
    run.assert_ok();
    let runs = std::fs::read_to_string(&csv).unwrap();
    assert!(runs.lines().skip(1).all(|l| l.contains(",30000,")), "every run loaded every row: {runs}");
    let said = format!("Use: sluice load {} --table orders --delimiter ',' --skip-lines 2 --header", titled.display());
    assert!(run.stdout.contains(&said), "{}", run.stdout);
    assert_bench_left_nothing(&db);

    // Stdin can be read once: the matrix's later runs would load nothing.
    let data = std::fs::read(&file).unwrap();
    let piped = sluice_with_stdin(&["bench", "--db", &db.conninfo(), "-", "--table", "orders"], &data);
    piped.assert_refused("stdin can be read only once: save it to a file");
    assert_bench_left_nothing(&db);
}

/// TERM during `sluice bench` stops it with its scratch table dropped and its
/// ledger rows deleted: nothing of it stays in the user's database.
#[test]
fn bench_interrupted_leaves_nothing_behind() {
    let db = TestDb::new();
    let file = orders(&db, "", 100_000);
    let conninfo = db.conninfo();
    let csv = db.dir.path().join("runs.csv");
    let args = ["bench", "--db", &conninfo, file.to_str().unwrap(), "--table", "orders", "--rounds", "5"];
    let (child, lines) = spawn_watched(&[&args[..], &["--csv", csv.to_str().unwrap()]].concat());
    wait_for_line(&lines, "sluice bench: round 1 ");
    terminate(&child);
    let status = child.finish().status;
    let rest: Vec<String> = lines.iter().collect();
    assert_eq!(status.code(), Some(3), "{rest:?}");
    assert!(rest.iter().any(|l| l.contains("interrupted; its scratch table and ledger rows were removed")), "{rest:?}");
    assert_bench_left_nothing(&db);
}

/// `--report` also writes a self-contained HTML chart; headless Chromium lays
/// it out and every chunk's bar gets a real width.
#[test]
fn report_chart_renders_in_a_browser() {
    let db = TestDb::new();
    let file = db.generated(sluice::gen::Dataset::Transactions, "t", 100_000, 3, "t.tsv");
    let report = db.dir.path().join("run.json");
    let path = file.to_str().unwrap();
    db.load(&[path, "--table", "t", "--chunk-size", "256KiB", "--report", report.to_str().unwrap()]).assert_ok();
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let chunks = json["chunks"].as_array().unwrap().len();
    let html = db.dir.path().join("run.html");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(!page.contains("src=\"http") && !page.contains("href=\"http"), "nothing is fetched from a network");
    let profile = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
        .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--virtual-time-budget=2000", "--dump-dom"])
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("run chromium (scripts/setup.sh installs it)");
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        dom.contains(&format!("data-rendered=\"{chunks}\"")),
        "rendered bars for {chunks} chunks:\n{}",
        &dom[..dom.len().min(400)]
    );
    assert!(chunks > 5);
}

/// The report says what the loading sessions waited on: here a lock another
/// session holds on the table for the first 1.5 s of the load.
/// A warning from the server (a trigger's RAISE WARNING here; the server's
/// own, such as the one every session gets when it shuts down) comes once,
/// counted, among the summary's warnings, and in the report; not on stderr
/// once per row, over several lines, as libpq prints notices by default.
#[test]
fn server_warnings_are_counted_among_the_warnings_not_printed_as_they_come() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, note text)");
    db.execute(
        "CREATE FUNCTION warn() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
         IF NEW.id % 2 = 1 THEN RAISE WARNING 'odd id' USING DETAIL = 'odd ids are fine'; END IF; \
         IF NEW.id <= 12 THEN RAISE WARNING 'row %', NEW.id; END IF; RETURN NEW; END $$",
    );
    db.execute("CREATE TRIGGER warn BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION warn()");
    let rows: String = (1..=1000).map(|i| format!("{i}\tnote {i}\n")).collect();
    let file = db.file("t.tsv", rows.as_bytes());
    let report = db.dir.path().join("t.json");
    let run =
        db.load(&[file.to_str().unwrap(), "--table", "t", "--workers", "1", "--report", report.to_str().unwrap()]);
    run.assert_ok();
    assert_eq!(db.count("t"), 1000);
    let said = "sluice: warning: the server said 500 times: WARNING: odd id DETAIL: odd ids are fine";
    assert!(run.stderr.contains(said), "{}", run.stderr);
    assert_eq!(run.stderr.matches("odd ids are fine").count(), 1, "said once: {}", run.stderr);
    assert!(run.stderr.contains("the server said: WARNING: row 1\n"), "{}", run.stderr);
    // 13 distinct warnings: 10 are kept, the other 3 counted.
    assert!(run.stderr.contains("the server said 3 more things, not kept"), "{}", run.stderr);
    assert!(!run.stderr.contains("row 12"), "{}", run.stderr);
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let warnings: Vec<&str> = json["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).collect();
    assert!(warnings.iter().any(|w| w.starts_with("the server said 500 times: WARNING: odd id")), "{warnings:?}");
    let page = std::fs::read_to_string(report.with_extension("html")).unwrap();
    assert!(page.contains("<li>the server said 500 times: WARNING: odd id"), "the chart's page lists the warnings");
    // A load that fails says them too, after its error.
    let bad = db.file("bad.tsv", format!("{rows}x\tnot a number\n").as_bytes());
    let failed = db.load(&[bad.to_str().unwrap(), "--table", "t", "--workers", "1", "--max-errors", "0", "--truncate"]);
    assert_ne!(failed.code, 0, "{}", failed.stderr);
    // (The chunk the bad line was in went to the server twice: once whole,
    // refused, then without the bad line, so its rows warned twice.)
    let at = |text: &str| failed.stderr.find(text).unwrap_or_else(|| panic!("{text}: {}", failed.stderr));
    assert!(
        at("sluice: warning: the server said 1000 times: WARNING: odd id") > at("sluice: stopped: 1 record rejected")
    );
}

#[test]
fn report_names_what_the_server_sessions_waited_on() {
    let db = TestDb::new();
    db.execute(&sluice::gen::Dataset::Transactions.ddl("t"));
    let mut data = Vec::new();
    sluice::gen::generate(sluice::gen::Dataset::Transactions, 20_000, 2, &mut data).unwrap();
    let file = db.file("t.tsv", &data);
    let report = db.dir.path().join("waits.json");
    let xid = || db.scalar("SELECT pg_current_xact_id()::text").parse::<u64>().unwrap();
    let first_xid = xid();
    let holder = db.session();
    holder.execute("BEGIN; LOCK TABLE t IN SHARE MODE").unwrap();
    let load = std::thread::spawn({
        let args: Vec<String> = ["load", "--db", &db.conninfo(), file.to_str().unwrap(), "--table", "t", "--report"]
            .into_iter()
            .map(String::from)
            .chain([report.to_str().unwrap().to_string()])
            .collect();
        move || sluice(&args.iter().map(String::as_str).collect::<Vec<_>>())
    });
    std::thread::sleep(std::time::Duration::from_millis(1500));
    holder.execute("COMMIT").unwrap();
    let run = load.join().unwrap();
    run.assert_ok();
    assert_eq!(db.count("t"), 20_000);
    // The sampler woke the WAL writer with an empty transaction after each
    // sample, 20 a second; the load itself took 12 transaction IDs.
    let taken = xid() - first_xid;
    assert!(taken >= 25, "{taken} transaction IDs taken in 1.5 s");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let waits = &json["summary"]["server_waits"];
    let events = waits["events"].as_array().unwrap();
    let lock = events.iter().find(|e| e["event"] == "Lock:relation").expect("a Lock:relation sample");
    assert!(lock["samples"].as_u64().unwrap() >= 10, "{waits}");
    assert!(lock["share"].as_f64().unwrap() > 0.5, "the load waited most of its time: {waits}");
    let total: u64 = events.iter().map(|e| e["samples"].as_u64().unwrap()).sum();
    assert_eq!(waits["samples"].as_u64(), Some(total));
    assert!(run.stdout.contains("server sessions ("), "{}", run.stdout);
    assert!(run.stdout.contains("Lock:relation: another session held a lock"), "{}", run.stdout);
    let page = std::fs::read_to_string(report.with_extension("html")).unwrap();
    assert!(page.contains("<p>server sessions ("), "the chart's page says it too");
}

/// Runs `sluice args` with standard output a pipe whose reader has already
/// gone, as after `| head` has read its lines: every write fails.
fn with_reader_gone(args: &[&str]) -> (std::process::ExitStatus, String) {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: a fresh pipe; its read end is closed at once and the write
    // end handed to the child as its stdout (and owned by the Stdio).
    let stdout = unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        libc::close(fds[0]);
        Stdio::from_raw_fd(fds[1])
    };
    let out = sluice_command().args(args).stdout(stdout).stderr(Stdio::piped()).output().unwrap();
    (out.status, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A reader that stops early (`sluice rejects f | head`) ends the commands
/// that print for it as it ends `cat`: by SIGPIPE, with nothing said.
/// They panicked, backtrace and all, or said "Broken pipe" and exited 2.
/// A load still exits with its own code: its rows are committed by then.
#[test]
fn a_reader_that_stops_early_ends_the_output_commands_quietly_and_a_load_as_it_ends() {
    use std::os::unix::process::ExitStatusExt;
    let db = TestDb::new();
    let file = orders(&db, "", 1000);
    let rejects =
        db.file("t.rejects.jsonl", br#"{"file":"a.csv","line":1,"byte":0,"record":1,"reason":"r","raw":"x\n"}"#);
    for args in [
        vec!["status", "--db", &db.conninfo()],
        vec!["rejects", rejects.to_str().unwrap()],
        vec!["doctor", "--db", &db.conninfo()],
    ] {
        let (status, stderr) = with_reader_gone(&args);
        assert_eq!(status.signal(), Some(libc::SIGPIPE), "{args:?}: {status}, {stderr}");
        assert_eq!(stderr, "", "{args:?}");
    }
    let (status, stderr) =
        with_reader_gone(&["load", file.to_str().unwrap(), "--table", "orders", "--db", &db.conninfo()]);
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(db.count("orders"), 1000);
}

/// The report's bytes for each input are the input's, decompressed, header
/// included: not those of the lines sluice made of its documents, nor of
/// its text in UTF-8. They were 1.1 MB for a 2.6 MB file of documents read
/// into columns, so MB/s was understated 2.4 times, and 0 for a file with
/// a header and no records.
#[test]
fn the_report_counts_each_inputs_own_bytes() {
    use std::io::Write;
    let db = TestDb::new();
    db.execute("CREATE TABLE docs (id int, name text); CREATE TABLE t (id int, name text)");
    let per_file = |args: &[&str]| {
        let report = db.dir.path().join("bytes.json");
        let mut all = args.to_vec();
        all.extend(["--report", report.to_str().unwrap()]);
        db.load(&all).assert_ok();
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        let files: Vec<u64> =
            json["per_file"].as_array().unwrap().iter().map(|f| f["bytes"].as_u64().unwrap()).collect();
        assert_eq!(json["summary"]["bytes"], files.iter().sum::<u64>());
        files
    };
    let docs: String = (0..50_000).map(|i| format!("{{\"id\": {i}, \"name\": \"name number {i}\"}}\n")).collect();
    let plain = db.file("docs.jsonl", docs.as_bytes());
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gzip.write_all(docs.as_bytes()).unwrap();
    let gzip = db.file("docs.jsonl.gz", &gzip.finish().unwrap());
    let files = per_file(&[plain.to_str().unwrap(), gzip.to_str().unwrap(), "--table", "docs"]);
    assert_eq!(files, [docs.len() as u64; 2]);
    assert_eq!(db.count("docs"), 100_000);

    let header = db.file("header.csv", b"id,name\n");
    let rows = db.file("rows.csv", b"id,name\n1,a\n");
    assert_eq!(per_file(&[header.to_str().unwrap(), rows.to_str().unwrap(), "--table", "t", "--header"]), [8, 12]);
    let utf16: Vec<u8> = [0xFF, 0xFE].into_iter().chain("2,é\n".encode_utf16().flat_map(u16::to_le_bytes)).collect();
    let utf16 = db.file("utf16.csv", &utf16);
    assert_eq!(per_file(&[utf16.to_str().unwrap(), "--table", "t", "--encoding", "utf-16"]), [10]);
    assert_eq!(db.count("t"), 2);
}

/// A resumed run reads its inputs whole but loads only what earlier runs
/// did not: its MB/s is of what it loaded, as its rows/s is. Before, a run
/// that loaded the last 1 MB of a 167.8 MB file in 16 s said 10.5 MB/s.
/// The damaged file is long, so the first file's rows commit before the
/// chunker reaches the damage (with 5,000 rows there, CI once saw none
/// committed: the stop came first).
#[test]
fn a_resumed_runs_mb_per_second_is_of_what_it_loaded() {
    use std::io::Write;
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text)");
    let rows = |from: u32, to: u32| -> String { (from..to).map(|i| format!("{i}\tname {i}\n")).collect() };
    let total: u32 = 600_000;
    let first = db.file("a.tsv", rows(0, 90_000).as_bytes());
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gzip.write_all(rows(90_000, total).as_bytes()).unwrap();
    let gzip = gzip.finish().unwrap();
    let second = db.file("b.tsv.gz", &gzip[..gzip.len() * 3 / 4]);
    let report = db.dir.path().join("resumed.json");
    let args =
        [first.to_str().unwrap(), second.to_str().unwrap(), "--table", "t", "--report", report.to_str().unwrap()];
    assert_eq!(db.load(&args).code, 2, "stops at the damaged file");
    let before = db.count("t");
    assert!(before > 0 && before < u64::from(total), "{before}");
    std::fs::write(&second, &gzip).unwrap();
    db.load(&args).assert_ok();
    assert_eq!(db.count("t"), u64::from(total));
    let summary =
        serde_json::from_slice::<serde_json::Value>(&std::fs::read(&report).unwrap()).unwrap()["summary"].clone();
    let loaded_now = summary["rows_loaded"].as_u64().unwrap();
    assert_eq!(loaded_now, u64::from(total) - before, "{summary}");
    let bytes = summary["bytes"].as_f64().unwrap();
    let megabytes_now = summary["mb_per_sec"].as_f64().unwrap() * summary["wall_seconds"].as_f64().unwrap() * 1e6;
    let share = loaded_now as f64 / f64::from(total);
    assert!((megabytes_now / bytes - share).abs() < 0.01, "{megabytes_now} of {bytes} bytes for a share of {share}");
}

/// `sluice status` after a year of nightly loads listed every night's
/// job. It lists every job not finished and the 20 newest finished ones,
/// and says how many it left out; `--all` lists them, `--table` one
/// table's jobs (named as `load -t` names the table).
#[test]
fn status_lists_the_newest_finished_jobs_and_every_one_not_finished() {
    let db = TestDb::new();
    db.execute("CREATE TABLE nightly (id int, name text); CREATE TABLE other (id int, name text)");
    let file = db.file("night.csv", b"1,a\n");
    for night in 0..23 {
        db.load(&[file.to_str().unwrap(), "--table", "nightly", "--job", &format!("night{night:02}"), "--load-again"])
            .assert_ok();
    }
    db.load(&[file.to_str().unwrap(), "--table", "Other", "--job", "other"]).assert_ok();
    db.execute("UPDATE sluice.jobs SET finished_at = NULL WHERE job = 'night00'");
    let conninfo = db.conninfo();
    let status = |extra: &[&str]| {
        let mut args = vec!["status", "--db", &conninfo];
        args.extend_from_slice(extra);
        sluice(&args).stdout
    };
    let jobs_in = |shown: &str| shown.lines().filter(|l| l.starts_with("night") || l.starts_with("other")).count();
    let shown = status(&[]);
    assert_eq!(jobs_in(&shown), 21, "{shown}");
    assert!(shown.contains("\nnight00 "), "the job not finished, however old: {shown}");
    assert!(!shown.contains("\nnight03 ") && shown.contains("\nnight04 "), "{shown}");
    assert!(shown.contains("... and 3 older finished jobs, not listed (--all lists them"), "{shown}");
    assert_eq!(jobs_in(&status(&["--all"])), 24);
    let one_table = status(&["--table", "nightly"]);
    assert_eq!(jobs_in(&one_table), 21, "{one_table}");
    assert!(!one_table.contains("\nother "), "{one_table}");
    let shown = status(&["-t", "OTHER"]);
    assert_eq!(jobs_in(&shown), 1, "{shown}");
    let json: serde_json::Value = serde_json::from_str(&status(&["--json", "--table", "public.nightly"])).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 23);
}

/// `sluice forget JOB` deletes a job from the ledger: one stopped for
/// good (its first records all rejected, the file loaded since with other
/// options under another name) no longer shows as stopped; a finished one
/// no longer keeps its file out of a load. An unfinished job that
/// committed rows is refused unless `--rows-stay`, one whose dropped
/// indexes are not built again is refused, and the rows stay.
#[test]
fn forget_deletes_a_job_from_the_ledger_and_refuses_what_would_lose_track_of_rows() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text)");
    let semi: String = (0..1500).map(|i| format!("{i};n{i}\n")).collect();
    let file = db.file("semi.csv", semi.as_bytes());
    let path = file.to_str().unwrap();
    let stopped = db.load(&[path, "--table", "t"]);
    assert_eq!(stopped.code, 5, "{}", stopped.output());
    db.load(&[path, "--table", "t", "--delimiter", ";"]).assert_ok();
    let conninfo = db.conninfo();
    let status = || sluice(&["status", "--db", &conninfo]).stdout;
    let job = db.scalar("SELECT job FROM sluice.jobs WHERE finished_at IS NULL");
    let shown = status();
    assert!(shown.contains("its last run stopped"), "{shown}");
    assert!(shown.contains(&format!("drop it from the ledger: sluice forget {job}\n")), "{shown}");
    let forgot = sluice(&["forget", &job, "--db", &conninfo]);
    assert_eq!(forgot.code, 0, "{}", forgot.output());
    assert!(forgot.stdout.contains(&format!("forgot job {job}, which had committed no row into public.t")));
    assert!(!status().contains("stopped"), "{}", status());
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.jobs"), "1");
    // Finished: its rows stay; its file loads again.
    let done = db.scalar("SELECT job FROM sluice.jobs");
    let forgot = sluice(&["forget", &done, "--db", &conninfo]);
    assert!(forgot.stdout.contains("(1,500 rows into public.t, which stay): a load of its files"), "{}", forgot.stdout);
    assert_eq!(db.count("t"), 1500);
    db.load(&[path, "--table", "t", "--delimiter", ";"]).assert_ok();
    assert_eq!(db.count("t"), 3000);
    // Unfinished with rows committed: refused, then forgotten with --rows-stay.
    db.execute("UPDATE sluice.jobs SET finished_at = NULL");
    let job = db.scalar("SELECT job FROM sluice.jobs");
    let refused = sluice(&["forget", &job, "--db", &conninfo]);
    assert_eq!(refused.code, 2, "{}", refused.output());
    assert!(refused.stderr.contains("committed 1,500 rows into public.t and has not finished"), "{}", refused.stderr);
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.chunks"), "1");
    // Dropped and not built again: refused even then.
    db.execute(
        "INSERT INTO sluice.steps (job, step, target_table, name, drop_sql, create_sql, state) \
         SELECT job, 1, 'public.t', 'index t_id', '', '', 'dropped' FROM sluice.jobs",
    );
    let refused = sluice(&["forget", &job, "--rows-stay", "--db", &conninfo]);
    assert!(refused.stderr.contains("dropped index t_id of public.t for its load"), "{}", refused.stderr);
    db.execute("DELETE FROM sluice.steps");
    sluice(&["forget", &job, "--rows-stay", "--db", &conninfo]).assert_ok();
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.jobs") + &db.scalar("SELECT count(*) FROM sluice.chunks"), "00");
    assert_eq!(db.count("t"), 3000);
    let unknown = sluice(&["forget", "nope", "--db", &conninfo]);
    assert!(unknown.stderr.contains("no job named nope in the ledger"), "{}", unknown.stderr);
}
