//! sluice: the fastest safe way to move a big file into a database.
//!
//! The pipeline: inputs ([`source`]) are cut into record-aligned chunks
//! ([`chunk`], using the [`mod@format`] scanner), a pool of workers ([`load`]) copies
//! each chunk in its own transaction through a [`sink`], and the run ends in a
//! [`report`]. [`local_pg`] starts a throwaway PostgreSQL for the demo and the
//! tests; [`gen`] makes deterministic data shaped like the field reports.
//!
//! The library never prints. It returns typed [`error::Error`]s and updates
//! [`progress::Progress`] counters that the CLI renders.

pub mod bench;
pub mod chart;
pub mod chunk;
pub mod doctor;
pub mod encoding;
pub mod error;
pub mod format;
pub mod gen;
pub mod ledger;
pub mod load;
pub mod local_pg;
pub mod progress;
pub mod redact;
pub mod rejects;
pub mod report;
pub mod samples;
pub mod sink;
pub mod source;
pub mod sql;

pub use error::Error;

/// Helpers for the unit tests of several modules.
#[cfg(test)]
pub(crate) mod test_support {
    use std::io::{self, Read};

    /// A reader that returns at most `piece` bytes per read, to exercise
    /// state carried across reads.
    pub struct Trickle<'a> {
        pub data: &'a [u8],
        pub piece: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.piece.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }
}
