//! The errors a load can end with, each with the exit code the CLI returns.
//!
//! Messages are written for the person at the terminal: they name the file,
//! line and byte when there is one, say what was expected, and never contain a
//! password (the CLI passes every message through [`crate::redact`] as well).

use crate::report::{count_of, thousands};

/// Exit codes, documented in the README and `sluice load --help`.
pub mod exit {
    /// Every record was loaded.
    pub const OK: i32 = 0;
    /// The load finished; some records were rejected (see the rejects file).
    pub const REJECTS: i32 = 1;
    /// Bad usage, unreadable input, or an unknown table or column: nothing
    /// was loaded.
    pub const USAGE: i32 = 2;
    /// Interrupted (Ctrl-C); running the same command again resumes.
    pub const INTERRUPTED: i32 = 3;
    /// Could not connect, authenticate, or run a statement on the server.
    pub const DATABASE: i32 = 4;
    /// The load stopped because more than `--max-errors` records were
    /// rejected; chunks committed before that stay loaded.
    pub const TOO_MANY_REJECTS: i32 = 5;
}

/// Where a record is in its input, for messages.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Position {
    pub file: String,
    /// 1-based physical line where the record starts, counting a header.
    pub line: u64,
    /// 1-based data record number (the header is not a record).
    pub record: u64,
    /// Byte offset of the record's first byte in the (decompressed) input.
    pub byte: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Usage(String),
    #[error("{file}: {message}")]
    Input { file: String, message: String },
    #[error("{0}")]
    Target(String),
    /// The load's table is not there (boxed: errors travel in every
    /// `Result`, and this one is four strings).
    #[error("{0}")]
    NoSuchTable(Box<MissingTable>),
    #[error("connecting to {target}: {message}")]
    Connect { target: String, message: String },
    #[error("{0}")]
    Database(String),
    /// The connection was lost, or the server failed in a way that may pass
    /// (restarting, a full disk): the load reconnects and tries again until
    /// `--retry-timeout` (see [`Error::may_pass`]).
    #[error("{0}")]
    Transient(String),
    /// The command's job is finished (boxed, as [`Error::NoSuchTable`]).
    #[error("{0}")]
    AlreadyLoaded(Box<FinishedJob>),
    /// Earlier jobs loaded every input in full (see `load::loaded_before`).
    #[error("nothing to do: {0}")]
    NothingNew(String),
    #[error(
        "interrupted after committing {} ({}); run the same command again to resume",
        count_of(*chunks, "chunk"),
        count_of(*rows, "row")
    )]
    Interrupted { chunks: u64, rows: u64 },
    #[error(
        "stopped: {} rejected, more than --max-errors {max} allows; the last: {last}",
        count_of(*rejected, "record")
    )]
    TooManyRejects { max: u64, rejected: u64, last: String },
    #[error(
        "stopped: the first {} records were all rejected, {seems}; the first: {first}. {advice}, or pass \
         --max-errors N to load whatever loads",
        thousands(*rejected)
    )]
    NothingLoads { rejected: u64, seems: &'static str, first: String, advice: String },
    #[error("{0}")]
    Server(String),
}

/// A finished job whose command was run again: `went_on`, what the jobs
/// that loaded its files from where it ended added (see
/// `load::loaded_before::went_on_after`), said after its rows;
/// `rewritten`, what the load says when the table was rewritten since the
/// job finished (see `ledger::rewritten_since_finished`).
#[derive(Debug, thiserror::Error)]
#[error(
    "job {job} already finished at {finished_at} ({}{went_on}); nothing to do. Pass --restart to load it \
     again{rewritten}",
    count_of(*rows, "row")
)]
pub struct FinishedJob {
    pub job: String,
    pub rows: u64,
    pub finished_at: String,
    pub went_on: String,
    pub rewritten: String,
}

/// A table the load names that does not exist: `searched`, the schemas of
/// the search path; `near`, a table of a close name (a typo); `sketch`, a
/// `CREATE TABLE` the input's first records fit (see `load::sketch`), when
/// known.
#[derive(Debug, thiserror::Error)]
#[error(
    "table \"{name}\" does not exist (searched schemas: {searched}); {}create it first, or name it as \
     schema.table{}",
    near.as_ref().map(|t| format!("did you mean {t}? Otherwise ")).unwrap_or_default(),
    sketch.as_ref().map(|s| format!(". {s}")).unwrap_or_default()
)]
pub struct MissingTable {
    pub name: String,
    pub searched: String,
    pub near: Option<String>,
    pub sketch: Option<String>,
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::Input { .. } | Error::Target(_) | Error::NoSuchTable(_) => exit::USAGE,
            Error::Connect { .. } | Error::Database(_) | Error::Transient(_) | Error::Server(_) => exit::DATABASE,
            Error::TooManyRejects { .. } | Error::NothingLoads { .. } => exit::TOO_MANY_REJECTS,
            Error::Interrupted { .. } => exit::INTERRUPTED,
            Error::AlreadyLoaded(_) | Error::NothingNew(_) => exit::OK,
        }
    }

    /// Whether trying again on a new connection may succeed: a lost
    /// connection or a transient failure, or a failed reconnect (a server
    /// restarting refuses connections for a while).
    pub fn may_pass(&self) -> bool {
        matches!(self, Error::Transient(_) | Error::Connect { .. })
    }
}
