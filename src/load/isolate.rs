//! Reject isolation: when the server refuses a chunk, reject exactly the bad
//! records and load the rest of the chunk, in one transaction.
//!
//! Why our own: this is what makes a bad record cost only itself. Algorithm:
//!
//! 1. Index the chunk's records with the same scanner that cut it.
//! 2. Reject on the client, without a round trip, every record with a NUL
//!    byte or (for UTF-8 input) invalid UTF-8.
//! 3. In the chunk's transaction (opened by the worker's ledger claim), copy
//!    runs of consecutive records, each under a savepoint.
//!    When the server names the failing line (`COPY t, line N`), reject that
//!    record, re-copy the good records before it (the failed COPY rolled them
//!    back) and go on after it. When it names no line, split the run in two
//!    (bisection) until the bad record stands alone.
//! 4. Leave the transaction open: the worker adds the rejected records to
//!    `sluice.rejects` and the chunk's ledger row, and commits them with the
//!    chunk's good rows.
//!
//! Every good record is sent at most twice. After an error, runs shrink to
//! about sqrt(2 * overhead / error density) records, the size that minimises
//! re-sent records plus per-statement overhead, so scattered bad records cost
//! a bounded share of the throughput instead of a re-copy of the whole chunk.

use super::Shared;
use crate::chunk::{locate_server_line, Chunk};
use crate::error::{Error, Position};
use crate::format::RecordScanner;
use crate::rejects::Reject;
use crate::sink::postgres::PgSession;
use crate::sink::{CopyOutcome, CopyRefusal};

/// Cost of one extra COPY statement, in small records' worth of server time.
/// Measured on PostgreSQL 15: a COPY builds (and at its end drops) a tuple
/// slot per buffered row, up to 1,000, each registered with its resource
/// owner, about 1.6 ms in all, the time of some 3,700 small rows in a long
/// COPY. Sweeping this constant over 100..50,000 on 10 M rows with one bad
/// record in 10,000 put the optimum near 10,000 (bench/README.md).
const STATEMENT_COST: f64 = 10_000.0;
const MIN_RUN: usize = 16;

/// The statements that travel with the next run's COPY: the chunk's
/// transaction is already open (the worker claimed the chunk in it).
const FIRST_RUN: &str = "SAVEPOINT sluice_run";
const AFTER_REFUSAL: &str = "ROLLBACK TO SAVEPOINT sluice_run";

/// What a chunk loaded and rejected (its transaction still open).
pub(super) struct Isolated {
    pub rows: u64,
    pub rejects: Vec<Reject>,
}

/// The chunk's records: start offsets and newlines before each, with an end
/// sentinel, so record `i` is `bytes[start[i]..start[i + 1]]`.
struct RecordIndex {
    start: Vec<usize>,
    lines_before: Vec<u64>,
}

impl RecordIndex {
    fn build(shared: &Shared, bytes: &[u8]) -> RecordIndex {
        let mut scanner = RecordScanner::new(shared.format.dialect());
        let (mut start, mut lines_before) = (vec![0], vec![0]);
        let (mut pos, mut lines) = (0, 0);
        while pos < bytes.len() {
            let step = scanner.scan(&bytes[pos..], true);
            pos += step.consumed;
            lines += step.newlines;
            start.push(pos);
            lines_before.push(lines);
        }
        RecordIndex { start, lines_before }
    }

    fn len(&self) -> usize {
        self.start.len() - 1
    }

    fn bytes<'a>(&self, chunk: &'a [u8], from: usize, to: usize) -> &'a [u8] {
        &chunk[self.start[from]..self.start[to]]
    }
}

struct Isolator<'a> {
    shared: &'a Shared<'a>,
    chunk: &'a Chunk,
    bytes: &'a [u8],
    index: RecordIndex,
    rejects: Vec<Reject>,
    rows: u64,
    /// Records tried and errors met so far, for the run size.
    seen: usize,
    errors: usize,
}

pub(super) fn isolate(
    session: &mut PgSession,
    shared: &Shared,
    chunk: &Chunk,
    bytes: &[u8],
    refusal: CopyRefusal,
) -> Result<Isolated, Error> {
    let index = RecordIndex::build(shared, bytes);
    let mut iso = Isolator { shared, chunk, bytes, index, rejects: Vec::new(), rows: 0, seen: 0, errors: 0 };
    let mut runs = iso.reject_on_client();
    if runs.len() == 1 && runs[0] == (0, iso.index.len()) {
        // The fast path's refusal applies to the whole chunk as sent.
        runs = iso.split_at_refusal(0, iso.index.len(), refusal);
    }
    // Each run is copied under the savepoint `sluice_run`; the savepoint
    // bookkeeping travels in the same round trip as the next COPY.
    let mut prelude = FIRST_RUN;
    while let Some((from, to)) = runs.pop() {
        if from >= to {
            continue;
        }
        let outcome = session.copy_after(prelude, &mut |send| {
            send(iso.index.bytes(bytes, from, to));
            Ok(())
        })?;
        prelude = match outcome {
            CopyOutcome::Loaded(rows) => {
                iso.rows += rows;
                iso.seen += to - from;
                "RELEASE SAVEPOINT sluice_run; SAVEPOINT sluice_run"
            }
            CopyOutcome::Refused(r) => {
                runs.extend(iso.split_at_refusal(from, to, r));
                AFTER_REFUSAL
            }
        };
    }
    // Leave the transaction open and usable: the worker stores the rejects
    // in it and commits.
    if prelude == AFTER_REFUSAL {
        session.execute(AFTER_REFUSAL)?;
    }
    Ok(Isolated { rows: iso.rows, rejects: iso.rejects })
}

impl Isolator<'_> {
    /// Rejects records the server would refuse for their bytes alone; returns
    /// the runs of the others, last run first (the work stack's order).
    fn reject_on_client(&mut self) -> Vec<(usize, usize)> {
        let check_utf8 = self.shared.format.encoding.is_none();
        let mut runs = Vec::new();
        let mut run_start = 0;
        for i in 0..self.index.len() {
            let raw = self.index.bytes(self.bytes, i, i + 1);
            let reason = if memchr::memchr(0, raw).is_some() {
                Some("the record contains a NUL byte (0x00), which PostgreSQL cannot store in text".to_string())
            } else if check_utf8 {
                simdutf8::compat::from_utf8(raw).err().map(|e| {
                    format!(
                        "invalid UTF-8 at byte {} of the record; is the file in another encoding (--encoding)?",
                        e.valid_up_to()
                    )
                })
            } else {
                None
            };
            if let Some(reason) = reason {
                self.reject(i, CopyRefusal { message: reason, ..CopyRefusal::default() });
                runs.push((run_start, i));
                run_start = i + 1;
            }
        }
        runs.push((run_start, self.index.len()));
        runs.reverse();
        runs
    }

    /// The runs still to copy after the server refused `from..to`, last first.
    fn split_at_refusal(&mut self, from: usize, to: usize, r: CopyRefusal) -> Vec<(usize, usize)> {
        self.errors += 1;
        let Some(line) = r.server_line else {
            if to - from == 1 {
                self.reject(from, r);
                return Vec::new();
            }
            let mid = from + (to - from) / 2;
            return vec![(mid, to), (from, mid)];
        };
        let stream = self.index.bytes(self.bytes, from, to);
        let bad = from + locate_server_line(self.shared.format.dialect(), stream, line).index as usize;
        self.seen += bad - from;
        self.reject(bad, r);
        let mut runs = self.runs_after(bad + 1, to);
        runs.push((from, bad));
        runs
    }

    /// `from..to` cut into runs of the size that suits the error density
    /// seen so far, last first.
    fn runs_after(&self, from: usize, to: usize) -> Vec<(usize, usize)> {
        let per_error = (self.seen.max(1) as f64 / self.errors.max(1) as f64).max(1.0);
        let size = ((2.0 * STATEMENT_COST * per_error).sqrt() as usize).max(MIN_RUN);
        let mut runs: Vec<(usize, usize)> = (from..to).step_by(size).map(|a| (a, (a + size).min(to))).collect();
        runs.reverse();
        runs
    }

    fn reject(&mut self, i: usize, r: CopyRefusal) {
        let loc = &self.chunk.loc;
        let position = Position {
            file: self.shared.sources[loc.source].name.to_string(),
            line: loc.first_line + self.index.lines_before[i],
            record: loc.first_record + i as u64,
            byte: loc.byte_offset + self.index.start[i] as u64,
        };
        let mut reason = r.message;
        if let Some(detail) = r.detail {
            reason.push_str(&format!(" ({detail})"));
        }
        let mut reject = Reject::new(position, reason, self.index.bytes(self.bytes, i, i + 1));
        reject.sqlstate = r.sqlstate;
        reject.column = r.column;
        self.rejects.push(reject);
    }
}
