//! The errors a load can end with, each with the exit code the CLI returns.
//!
//! Messages are written for the person at the terminal: they name the file,
//! line and byte when there is one, say what was expected, and never contain a
//! password (the CLI passes every message through [`crate::redact`] as well).

use std::fmt;

/// Exit codes, documented in the README and `sluice load --help`.
pub mod exit {
    /// Every record was loaded.
    pub const OK: i32 = 0;
    /// The load finished but some records were rejected (reserved for rejects).
    pub const REJECTS: i32 = 1;
    /// Bad usage, unreadable input, or an unknown table or column: nothing
    /// was loaded.
    pub const USAGE: i32 = 2;
    /// Interrupted; running the same command again resumes (reserved).
    pub const INTERRUPTED: i32 = 3;
    /// Could not connect, authenticate, or run a statement on the server.
    pub const DATABASE: i32 = 4;
    /// The server refused a record and the load stopped; chunks committed
    /// before that stay loaded.
    pub const DATA: i32 = 5;
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

/// A record the server refused, with everything the server said about it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordError {
    pub position: Position,
    pub sqlstate: Option<String>,
    pub message: String,
    pub detail: Option<String>,
    pub column: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Usage(String),
    #[error("{file}: {message}")]
    Input { file: String, message: String },
    #[error("{0}")]
    Target(String),
    #[error("connecting to {target}: {message}")]
    Connect { target: String, message: String },
    #[error("{0}")]
    Database(String),
    #[error("{0}")]
    Record(Box<RecordError>),
    #[error("{0}")]
    Server(String),
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::Input { .. } | Error::Target(_) => exit::USAGE,
            Error::Connect { .. } | Error::Database(_) | Error::Server(_) => exit::DATABASE,
            Error::Record(_) => exit::DATA,
        }
    }
}

impl fmt::Display for RecordError {
    /// `orders.csv: line 1851 (record 1843, byte 9482213): column "qty":
    /// invalid input syntax for type integer: "12a" [22P02]`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.position;
        write!(
            f,
            "{}: line {} (record {}, byte {}): ",
            p.file, p.line, p.record, p.byte
        )?;
        if let Some(column) = &self.column {
            write!(f, "column \"{column}\": ")?;
        }
        write!(f, "{}", self.message)?;
        if let Some(detail) = &self.detail {
            write!(f, " ({detail})")?;
        }
        if let Some(code) = &self.sqlstate {
            write!(f, " [{code}]")?;
        }
        Ok(())
    }
}
