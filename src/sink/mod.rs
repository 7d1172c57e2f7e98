//! The database side of a load: the types the loader and a sink exchange.
//!
//! Contract (from rust-postgres): a chunk is committed only when its copy
//! finishes; if feeding the bytes fails, the chunk is rolled back, never half
//! loaded. PostgreSQL is the only sink so far, and the loader calls its
//! session directly (COPY with savepoints, the ledger, statements). When
//! MySQL / MariaDB (`LOAD DATA LOCAL`) arrives, the trait is to be drawn
//! from the calls the loader actually makes, not guessed ahead of them.

pub mod postgres;
pub mod socket;

use crate::error::Error;

/// What the server said when it refused a chunk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CopyRefusal {
    pub sqlstate: Option<String>,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    /// 1-based line of the chunk's stream the server names (`COPY t, line N`).
    pub server_line: Option<u64>,
    pub column: Option<String>,
    /// The constraint a violation breaks, as the server names it (schema
    /// and name, each quoted): what `SET CONSTRAINTS` takes.
    pub constraint: Option<String>,
}

/// How a chunk's copy ended.
#[derive(Debug)]
pub enum CopyOutcome {
    /// Committed; the server's row count.
    Loaded(u64),
    /// The server refused a record; nothing of the chunk was committed.
    Refused(CopyRefusal),
}

/// Takes bytes for the server; returns false once the server has refused the
/// chunk, so the feeder can stop reading.
pub type CopyWriter<'a> = dyn FnMut(&[u8]) -> bool + 'a;

/// Produces a chunk's bytes into a [`CopyWriter`]; fails only for input trouble
/// (reading the file).
pub type Feed<'a> = dyn FnMut(&mut CopyWriter<'_>) -> Result<(), Error> + 'a;
