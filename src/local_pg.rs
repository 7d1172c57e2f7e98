//! A throwaway PostgreSQL server: `sluice demo` and the tests start one.
//!
//! It finds the server binaries (`SLUICE_PG_BINDIR`, PATH, `pg_config
//! --bindir`, `/usr/lib/postgresql/*/bin`), runs initdb in a temporary folder
//! and starts the server on a Unix socket in that folder and, when asked, on a
//! free 127.0.0.1 port with password authentication. initdb refuses to run as
//! root, so as root the server runs as the unprivileged user `nobody`.
//! Stopping it (or dropping the handle) shuts the server down and deletes the
//! folder.

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::Error;

/// The superuser initdb creates.
pub const SUPERUSER: &str = "sluice";

#[derive(Clone, Debug, Default)]
pub struct LocalOptions {
    /// Also listen on 127.0.0.1 (password authentication there).
    pub tcp: bool,
    /// The superuser's password (used over TCP; the socket trusts local users).
    pub password: Option<String>,
    /// `postgresql.conf` settings, e.g. `("shared_buffers", "1GB")`.
    pub settings: Vec<(String, String)>,
    /// Serve TLS with a fresh self-signed certificate for `localhost`
    /// (made with the `openssl` tool); its path is [`LocalPostgres::tls_cert`].
    pub tls: bool,
    /// Variables for the server's environment (a test points `LOCPATH` at
    /// a locale it made, for the server's messages in another language).
    pub environment: Vec<(String, String)>,
}

/// A running throwaway server.
#[derive(Debug)]
pub struct LocalPostgres {
    root: PathBuf,
    pid: i32,
    pub port: u16,
    pub tcp: bool,
    bindir: PathBuf,
    settings: Vec<(String, String)>,
    environment: Vec<(String, String)>,
}

/// The folder holding `initdb` and `postgres`.
pub fn find_bindir() -> Result<PathBuf, Error> {
    let has_both = |d: &Path| d.join("initdb").is_file() && d.join("postgres").is_file();
    let mut candidates: Vec<PathBuf> = Vec::new();
    candidates.extend(std::env::var_os("SLUICE_PG_BINDIR").map(PathBuf::from));
    if let Ok(initdb) = which::which("initdb") {
        candidates.extend(fs::canonicalize(initdb).ok().and_then(|p| p.parent().map(Path::to_path_buf)));
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        candidates.push(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    }
    let mut versions: Vec<PathBuf> = glob::glob("/usr/lib/postgresql/*/bin").into_iter().flatten().flatten().collect();
    versions.sort_by_key(|p| {
        let version = p.parent().and_then(|v| v.file_name()).and_then(|v| v.to_str()).unwrap_or("0");
        std::cmp::Reverse(version.parse::<u32>().unwrap_or(0))
    });
    candidates.extend(versions);
    candidates.into_iter().find(|d| has_both(d)).ok_or_else(|| {
        Error::Usage(
            "no PostgreSQL server binaries found (initdb and postgres); install them with \
             'apt-get install postgresql' or set SLUICE_PG_BINDIR"
                .into(),
        )
    })
}

/// uid and gid to run the server as: ourselves, or `nobody` when root.
fn server_identity() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions; getpwnam returns a pointer to a
    // static record that we read at once.
    unsafe {
        if libc::geteuid() != 0 {
            return None;
        }
        let pw = libc::getpwnam(c"nobody".as_ptr());
        if pw.is_null() {
            return Some((65534, 65534));
        }
        Some(((*pw).pw_uid, (*pw).pw_gid))
    }
}

fn free_port() -> Result<u16, Error> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|e| Error::Database(format!("finding a free port: {e}")))?;
    Ok(listener.local_addr().map_err(|e| Error::Database(e.to_string()))?.port())
}

fn setup_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Database(format!("starting the local PostgreSQL: {what}: {e}"))
}

impl LocalPostgres {
    pub fn start(opts: &LocalOptions) -> Result<Self, Error> {
        let bindir = find_bindir()?;
        let root = tempfile::Builder::new()
            .prefix("sluice-pg-")
            .tempdir()
            .map_err(|e| setup_error("creating a temporary folder", e))?
            .keep();
        let identity = server_identity();
        let give = |path: &Path| -> Result<(), Error> {
            match identity {
                Some((uid, gid)) => {
                    std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(|e| setup_error("chown", e))
                }
                None => Ok(()),
            }
        };
        give(&root)?;
        fs::set_permissions(&root, fs::Permissions::from_mode(0o700)).map_err(|e| setup_error("chmod", e))?;
        let pwfile = root.join("pwfile");
        fs::write(&pwfile, opts.password.as_deref().unwrap_or("sluice-local")).map_err(|e| setup_error("pwfile", e))?;
        give(&pwfile)?;
        let mut settings = opts.settings.clone();
        if opts.tls {
            settings.extend(self_signed_tls(&root, &give)?);
        }
        let log = root.join("server.log");
        let log_file = fs::File::create(&log).map_err(|e| setup_error("log file", e))?;
        let data = root.join("data");
        let mut initdb = Command::new(bindir.join("initdb"));
        initdb
            .args(["-D"])
            .arg(&data)
            .args(["-U", SUPERUSER, "-E", "UTF8", "--no-locale", "--no-sync"])
            .args(["--auth-local=trust", "--auth-host=scram-sha-256"])
            .arg(format!("--pwfile={}", pwfile.display()))
            .env("LC_ALL", "C")
            .stdout(log_file.try_clone().map_err(|e| setup_error("log", e))?)
            .stderr(log_file.try_clone().map_err(|e| setup_error("log", e))?);
        as_identity(&mut initdb, identity);
        let status = initdb.status().map_err(|e| setup_error("running initdb", e))?;
        if !status.success() {
            return Err(setup_error("initdb failed", log_tail(&log)));
        }
        let port = free_port()?;
        let environment = opts.environment.clone();
        let mut pg = LocalPostgres { root, pid: 0, port, tcp: opts.tcp, bindir, settings, environment };
        pg.spawn_server()?;
        Ok(pg)
    }

    /// Starts the postmaster on the cluster and waits until it accepts
    /// connections.
    fn spawn_server(&mut self) -> Result<(), Error> {
        let log = self.root.join("server.log");
        let log_file = fs::OpenOptions::new().append(true).open(&log).map_err(|e| setup_error("log file", e))?;
        let mut server = Command::new(self.bindir.join("postgres"));
        server
            .arg("-D")
            .arg(self.root.join("data"))
            .arg("-k")
            .arg(&self.root)
            .args(["-p", &self.port.to_string()])
            .args(["-c", &format!("listen_addresses={}", if self.tcp { "127.0.0.1" } else { "" })]);
        for (k, v) in &self.settings {
            server.args(["-c", &format!("{k}={v}")]);
        }
        server.envs(self.environment.iter().map(|(k, v)| (k, v)));
        server.stdin(Stdio::null()).stdout(log_file.try_clone().map_err(|e| setup_error("log", e))?).stderr(log_file);
        as_identity(&mut server, server_identity());
        let child = server.spawn().map_err(|e| setup_error("running postgres", e))?;
        self.pid = child.id() as i32;
        self.wait_ready(&log)
    }

    /// Stops the server (fast shutdown: sessions are terminated, as in a
    /// server restart) and starts it again on the same cluster and port.
    pub fn restart(&mut self) -> Result<(), Error> {
        self.shut_down();
        self.spawn_server()
    }

    /// Kills the server as a crash would (immediate shutdown: crash
    /// recovery at the next start, which empties unlogged tables) and
    /// starts it again.
    pub fn crash_and_restart(&mut self) -> Result<(), Error> {
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(self.pid, libc::SIGQUIT) };
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.running() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.spawn_server()
    }

    /// Stops the server, sets the next transaction ID and its epoch with
    /// `pg_resetwal`, and starts it again: a server as it is after
    /// `epoch` wraparounds of its 32-bit transaction IDs, for tests of
    /// what sluice does there (rows frozen long ago keep IDs that new
    /// transactions are given again). `next_xid` must be one the server
    /// has already handed out (its commit log has a page for it).
    pub fn set_next_transaction_id(&mut self, epoch: u32, next_xid: u32) -> Result<(), Error> {
        self.shut_down();
        let log = self.root.join("server.log");
        let log_file = fs::OpenOptions::new().append(true).open(&log).map_err(|e| setup_error("log file", e))?;
        let mut reset = Command::new(self.bindir.join("pg_resetwal"));
        reset
            .args(["-e", &epoch.to_string(), "-x", &next_xid.to_string(), "-D"])
            .arg(self.root.join("data"))
            .stdout(log_file.try_clone().map_err(|e| setup_error("log", e))?)
            .stderr(log_file);
        as_identity(&mut reset, server_identity());
        let status = reset.status().map_err(|e| setup_error("running pg_resetwal", e))?;
        if !status.success() {
            return Err(setup_error("pg_resetwal failed", log_tail(&log)));
        }
        self.spawn_server()
    }

    fn wait_ready(&self, log: &Path) -> Result<(), Error> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if libpq::Connection::ping(&self.conninfo("postgres")) == libpq::ping::Status::Ok {
                return Ok(());
            }
            if !self.running() || Instant::now() > deadline {
                return Err(setup_error("the server did not start", log_tail(log)));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// True while the server process exists (reaps it once it has exited).
    fn running(&self) -> bool {
        let mut status = 0;
        // SAFETY: waitpid on our own child with WNOHANG does not block.
        unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) == 0 }
    }

    /// Connection string over the Unix socket (trusted, no password).
    pub fn conninfo(&self, dbname: &str) -> String {
        format!("host={} port={} user={SUPERUSER} dbname={dbname}", self.root.display(), self.port)
    }

    /// The certificate a TLS server presents (its own CA).
    pub fn tls_cert(&self) -> PathBuf {
        self.root.join("server.crt")
    }

    /// The socket folder, for `PGHOST`.
    pub fn socket_dir(&self) -> &Path {
        &self.root
    }

    /// Shuts the server down (fast mode, then immediate) and deletes its
    /// folder. Safe to call more than once; takes `&self` so a handle kept in
    /// a static can be stopped at process exit.
    pub fn stop(&self) {
        self.shut_down();
        let _ = fs::remove_dir_all(&self.root);
    }

    fn shut_down(&self) {
        if self.running() {
            // SAFETY: signalling our own child process.
            unsafe { libc::kill(self.pid, libc::SIGINT) };
            let deadline = Instant::now() + Duration::from_secs(20);
            while self.running() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if self.running() {
                // SAFETY: as above.
                unsafe { libc::kill(self.pid, libc::SIGQUIT) };
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

impl Drop for LocalPostgres {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A self-signed certificate and key for `localhost`, owned by the server's
/// user (PostgreSQL refuses a key others can read); returns the settings.
fn self_signed_tls(root: &Path, give: &dyn Fn(&Path) -> Result<(), Error>) -> Result<Vec<(String, String)>, Error> {
    let (cert, key) = (root.join("server.crt"), root.join("server.key"));
    let status = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| setup_error("running openssl", e))?;
    if !status.success() {
        return Err(setup_error("openssl", "could not make a certificate"));
    }
    fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).map_err(|e| setup_error("chmod", e))?;
    fs::set_permissions(&cert, fs::Permissions::from_mode(0o644)).map_err(|e| setup_error("chmod", e))?;
    give(&key)?;
    give(&cert)?;
    Ok(vec![
        ("ssl".into(), "on".into()),
        ("ssl_cert_file".into(), cert.display().to_string()),
        ("ssl_key_file".into(), key.display().to_string()),
    ])
}

fn as_identity(cmd: &mut Command, identity: Option<(u32, u32)>) {
    if let Some((uid, gid)) = identity {
        // std drops root's supplementary groups when it changes the uid.
        cmd.uid(uid).gid(gid).env("HOME", "/tmp");
    }
}

fn log_tail(log: &Path) -> String {
    let text = fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(5).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}
