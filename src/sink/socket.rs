//! A server on this machine, named by a TCP address, is loaded through its
//! Unix socket when it has one: over loopback TCP the kernel's TCP work runs
//! on the same cores as the server, and on 2 cores lineitem loaded 5-9 %
//! faster through the socket (bench/README.md). psql users do this by hand
//! (`host=/var/run/postgresql`); sluice does it by itself, with checks, and
//! `--keep-tcp` keeps the connection exactly as given.
//!
//! Safe only if the socket leads to the same server, the same database and
//! the same role: a socket directory may belong to another cluster (a
//! server in a container publishing port 5432 while the machine's own
//! listens only on its socket; an SSH tunnel to another machine, whose
//! server sees the tunnel's 127.0.0.1 and names its own socket folder and
//! port, which may exist here too for this machine's server). So the
//! socket's session must see the TCP session itself in `pg_stat_activity`,
//! with its process id and start time to the microsecond, which no other
//! server has, and say the same `session_user` and database. Anything else, or any error, keeps TCP.
//! `sslmode` does not apply to a Unix socket (libpq ignores it there): the
//! bytes never leave the machine, and the check above stands in for the
//! certificate's proof of which server it is.

use super::postgres::{PgSession, PgTarget};
use crate::error::Error;

/// Where sockets usually are when `unix_socket_directories` cannot be read
/// (only superusers and pg_read_all_settings may): Debian's, then upstream's.
pub const USUAL_SOCKET_DIRS: &[&str] = &["/var/run/postgresql", "/tmp"];

/// How the load's sessions reach the server, for the summary and report.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ConnectionPath {
    /// `unix socket` or `tcp`.
    pub via: String,
    /// The socket's directory, when sluice went through a socket the
    /// connection string did not name.
    pub socket_dir: Option<String>,
    /// Why TCP was kept for a server on this machine, when it was.
    pub why_tcp: Option<String>,
}

impl ConnectionPath {
    fn tcp(why: Option<String>) -> Self {
        ConnectionPath { via: "tcp".into(), socket_dir: None, why_tcp: why }
    }

    /// ` over the Unix socket in DIR` when sluice chose the socket.
    pub fn describe(&self) -> String {
        self.socket_dir.as_ref().map(|dir| format!(" over the Unix socket in {dir}")).unwrap_or_default()
    }
}

/// What the TCP session says about itself, to be found again through the
/// socket: `session_user`, database, process id and start time.
const WHO_AND_WHERE: &str = "SELECT session_user, current_database(), pg_backend_pid()::text, \
     (SELECT backend_start::text FROM pg_catalog.pg_stat_activity WHERE pid = pg_backend_pid())";

/// Points `target`'s later sessions at the server's Unix socket when `tcp`
/// (a session opened as the user asked) reached a server on this machine
/// over TCP and the socket leads to the very same server (see the module
/// documentation). `keep_tcp` is `--keep-tcp`.
pub fn prefer_local_socket(target: &mut PgTarget, tcp: &PgSession, keep_tcp: bool) -> ConnectionPath {
    match find_same_server(target, tcp, keep_tcp) {
        Ok(Found::Socket(dir, conninfo)) => {
            target.use_socket(conninfo);
            ConnectionPath { via: "unix socket".into(), socket_dir: Some(dir), why_tcp: None }
        }
        Ok(Found::AlreadySocket) => ConnectionPath { via: "unix socket".into(), ..ConnectionPath::default() },
        Ok(Found::Tcp(why)) => ConnectionPath::tcp(why),
        Err(e) => ConnectionPath::tcp(Some(format!("could not check the server's Unix socket: {e}"))),
    }
}

enum Found {
    AlreadySocket,
    /// TCP, with the reason when the server is on this machine.
    Tcp(Option<String>),
    /// The socket's directory and the connection string that leads there.
    Socket(String, String),
}

/// Where a session says its server listens.
pub struct Listening {
    /// The server's address as the session reached it; `None` through a
    /// Unix socket.
    pub address: Option<String>,
    pub port: String,
    /// `unix_socket_directories`; `None` when the role may not read it.
    pub socket_dirs: Option<String>,
}

pub fn listening(session: &PgSession) -> Result<Listening, Error> {
    let rows = session.query(
        "SELECT host(inet_server_addr()), current_setting('port'), \
         (SELECT setting FROM pg_catalog.pg_settings WHERE name = 'unix_socket_directories')",
        &[],
    )?;
    let row = rows.into_iter().next().unwrap_or_default();
    let [address, port, socket_dirs] = [0, 1, 2].map(|i| row.get(i).cloned().flatten());
    Ok(Listening { address, port: port.unwrap_or_default(), socket_dirs })
}

fn find_same_server(target: &PgTarget, tcp: &PgSession, keep_tcp: bool) -> Result<Found, Error> {
    let Listening { address, port, socket_dirs } = listening(tcp)?;
    if address.is_none() {
        return Ok(Found::AlreadySocket);
    }
    if !tcp.server_is_local()? {
        return Ok(Found::Tcp(None));
    }
    if keep_tcp {
        return Ok(Found::Tcp(Some("--keep-tcp".into())));
    }
    let Some(dir) = socket_dir(socket_dirs.as_deref(), &port) else {
        return Ok(Found::Tcp(Some(format!("no Unix socket for port {port} found on this machine"))));
    };
    let conninfo = target.conninfo_for_socket(&dir, &port)?;
    let through_socket = target.with_conninfo(&conninfo);
    let socket = match through_socket.connect() {
        Ok(session) => session,
        Err(e) => return Ok(Found::Tcp(Some(format!("the Unix socket in {dir} refused: {e}")))),
    };
    let tcp_side = tcp.query(WHO_AND_WHERE, &[])?;
    let [user, database, pid, started] = [0, 1, 2, 3].map(|i| tcp_side.first().and_then(|r| r[i].clone()));
    let seen = socket.query(
        "SELECT 1 FROM pg_catalog.pg_stat_activity WHERE pid = $1::int AND backend_start::text = $2 \
         AND session_user = $3 AND current_database() = $4",
        &[pid.as_deref(), started.as_deref(), user.as_deref(), database.as_deref()],
    )?;
    Ok(match seen.is_empty() || started.is_none() {
        true => Found::Tcp(Some(format!(
            "the Unix socket in {dir} leads to another server, database or role than --db's address"
        ))),
        false => Found::Socket(dir, conninfo),
    })
}

/// The first of the server's socket directories (`listed`, comma-separated,
/// or the usual ones when it could not be read) that holds the socket for
/// `port` on this machine. Abstract sockets (`@name`) are left out.
pub fn socket_dir(listed: Option<&str>, port: &str) -> Option<String> {
    let dirs: Vec<&str> = match listed {
        Some(list) => list.split(',').map(str::trim).filter(|d| d.starts_with('/')).collect(),
        None => USUAL_SOCKET_DIRS.to_vec(),
    };
    let socket = format!(".s.PGSQL.{port}");
    dirs.into_iter().find(|d| std::path::Path::new(d).join(&socket).exists()).map(str::to_string)
}

/// `value` as a libpq key=value string takes it: in single quotes, with
/// quotes and backslashes escaped.
pub fn conninfo_value(value: &str) -> String {
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_socket_is_looked_for_in_each_listed_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".s.PGSQL.5499"), "").unwrap();
        let path = dir.path().display().to_string();
        let listed = format!("@abstract, /nonexistent, {path}");
        assert_eq!(socket_dir(Some(&listed), "5499"), Some(path));
        assert_eq!(socket_dir(Some(&listed), "5500"), None, "another port's socket");
    }

    #[test]
    fn conninfo_values_are_quoted_as_libpq_reads_them() {
        assert_eq!(conninfo_value("/run/pg"), "'/run/pg'");
        assert_eq!(conninfo_value(r"it's a\b"), r"'it\'s a\\b'");
        assert_eq!(conninfo_value(""), "''");
    }
}
