//! One worker: one connection, one chunk per transaction.
//!
//! The worker streams a chunk's bytes to COPY without looking at fields: on a
//! 2-core machine every client cycle is taken from the server, which does the
//! parsing anyway. Positioned inputs are read by range in small pieces, so a
//! worker holds one piece of memory whatever the chunk size.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use super::isolate::{isolate, Isolated};
use super::{Event, Shared};
use crate::chunk::{Chunk, Runaway};
use crate::error::Error;
use crate::ledger::{self, ChunkRow, Claim};
use crate::rejects::Reject;
use crate::report::ChunkRecord;
use crate::sink::postgres::PgSession;
use crate::sink::postgres::COPY_PIECE;
use crate::sink::{CopyOutcome, CopyWriter};
use crate::source::io_reason;

pub(super) fn run(id: usize, shared: &Shared, queue: Receiver<Chunk>, events: Sender<Event>) {
    let session = match open_session(shared) {
        Ok(s) => s,
        Err(e) => {
            let _ = events.send(Event::Failed(e));
            return;
        }
    };
    let mut worker = Worker { shared, session, reader: RangeReader::default(), expect_rejects: false };
    let mut deferred = Vec::new();
    // The queue first; then the chunks another process held, waiting for
    // each: done by then, or its loader died and the lock went with it.
    let mut work: Work = Box::new(queue.into_iter().map(|c| (c, false)));
    while let Some((chunk, wait)) = next_work(&mut work, &mut deferred) {
        if shared.stopping() {
            break;
        }
        let start_s = shared.clock.elapsed().as_secs_f64();
        let event = match worker.load_with_retries(&chunk, wait) {
            Ok(Outcome::Busy) => {
                deferred.push(chunk);
                continue;
            }
            Ok(Outcome::Elsewhere) => Event::Elsewhere,
            Ok(Outcome::Committed(done)) => {
                let rejected = done.rejects.len() as u64;
                shared.progress.chunk_done(chunk.source_span, done.rows, rejected);
                Event::Committed(record(shared, &chunk, done.rows, rejected, id, start_s), done.rejects)
            }
            Err(err) => Event::Failed(err),
        };
        let failed = matches!(event, Event::Failed(_));
        if events.send(event).is_err() || failed {
            break;
        }
    }
}

/// Chunks to load, each with whether to wait for another process's claim.
type Work<'a> = Box<dyn Iterator<Item = (Chunk, bool)> + 'a>;

/// The next chunk: from the queue, then the deferred ones (waiting).
fn next_work(work: &mut Work<'_>, deferred: &mut Vec<Chunk>) -> Option<(Chunk, bool)> {
    if let Some(next) = work.next() {
        return Some(next);
    }
    *work = Box::new(std::mem::take(deferred).into_iter().map(|c| (c, true)));
    work.next()
}

/// How a chunk ended.
enum Outcome {
    /// This process committed it (or an earlier attempt of this process did,
    /// just before the connection was lost).
    Committed(Isolated),
    /// Another process committed it first.
    Elsewhere,
    /// Another process is loading it right now.
    Busy,
}

/// A connection ready to load: the COPY statement set and, unless asked
/// otherwise, `synchronous_commit` off (safe with the ledger: a commit lost in
/// a crash loses its ledger row too, and the chunk is loaded again).
fn open_session(shared: &Shared) -> Result<PgSession, Error> {
    let mut session = shared.target.connect()?;
    session.set_copy_statement(&shared.copy_sql, shared.table);
    if !shared.sync_commit {
        session.execute("SET synchronous_commit = off")?;
    }
    Ok(session)
}

/// Connects again, backing off from 0.1 s to 5 s between attempts.
fn reconnect(shared: &Shared, deadline: Instant) -> Result<PgSession, Error> {
    let mut pause = Duration::from_millis(100);
    loop {
        std::thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
        match open_session(shared) {
            Ok(session) => return Ok(session),
            Err(e) if Instant::now() >= deadline || shared.stopping() => return Err(e),
            Err(_) => pause = (pause * 2).min(Duration::from_secs(5)),
        }
    }
}

/// One worker's connection and reading state.
struct Worker<'s> {
    shared: &'s Shared<'s>,
    session: PgSession,
    reader: RangeReader,
    /// The last chunk had rejects: expect more in the next one.
    expect_rejects: bool,
}

impl Worker<'_> {
    /// Loads a chunk; when the connection is lost or the server is
    /// restarting, reconnects with backoff until `--retry-timeout`, then asks
    /// the ledger whether the lost attempt committed before trying again, so
    /// a chunk is never loaded twice.
    fn load_with_retries(&mut self, chunk: &Chunk, wait: bool) -> Result<Outcome, Error> {
        let mut deadline = None;
        loop {
            let err = match self.load_once(chunk, wait) {
                Err(err @ (Error::Database(_) | Error::Connect { .. })) => err,
                other => return other,
            };
            let deadline = *deadline.get_or_insert_with(|| Instant::now() + self.shared.retry_timeout);
            self.session = reconnect(self.shared, deadline).map_err(|_| err)?;
            if let Some(done) = self.committed_before(chunk)? {
                return Ok(Outcome::Committed(done));
            }
        }
    }

    /// Claims the chunk in the ledger, loads it, and commits it with its
    /// rejects and its ledger row, all in one transaction.
    fn load_once(&mut self, chunk: &Chunk, wait: bool) -> Result<Outcome, Error> {
        match ledger::claim(&self.session, &ledger_row(self.shared, chunk, 0, 0), wait)? {
            Claim::Busy => return Ok(Outcome::Busy),
            Claim::Done => return Ok(Outcome::Elsewhere),
            Claim::Mine => {}
        }
        let mut done = self.copy_or_isolate(chunk)?;
        self.expect_rejects = !done.rejects.is_empty();
        if let Some(runaway) = chunk.runaway {
            done.rejects.push(self.reader.runaway_reject(self.shared, chunk, runaway)?);
        }
        self.commit_chunk(chunk, &done)?;
        Ok(Outcome::Committed(done))
    }

    /// The fast path (one COPY of the whole chunk, under a savepoint so a
    /// refusal keeps the transaction and its claim); on a refusal, isolation.
    fn copy_or_isolate(&mut self, chunk: &Chunk) -> Result<Isolated, Error> {
        let (shared, reader) = (self.shared, &mut self.reader);
        if chunk.copy_len() == 0 {
            return Ok(Isolated { rows: 0, rejects: Vec::new() });
        }
        if self.expect_rejects {
            // The previous chunk had bad records: skip a fast path that would
            // most likely fail part way after sending the whole chunk.
            let bytes = reader.bytes_of(shared, chunk)?;
            return isolate(&mut self.session, shared, chunk, &bytes, None);
        }
        match self.session.copy_after("SAVEPOINT sluice_chunk", &mut |send| reader.feed(shared, chunk, send))? {
            CopyOutcome::Loaded(rows) => Ok(Isolated { rows, rejects: Vec::new() }),
            CopyOutcome::Refused(refusal) => {
                self.session.execute("ROLLBACK TO SAVEPOINT sluice_chunk")?;
                let bytes = reader.bytes_of(shared, chunk)?;
                isolate(&mut self.session, shared, chunk, &bytes, Some(refusal))
            }
        }
    }

    /// Stores the chunk's rejects, marks its ledger row done and commits: the
    /// good rows, the rejected records and the ledger row are durable together.
    fn commit_chunk(&mut self, chunk: &Chunk, done: &Isolated) -> Result<(), Error> {
        let shared = self.shared;
        if !done.rejects.is_empty() {
            let rows = crate::rejects::copy_text(&done.rejects, &shared.job, &shared.table.display());
            self.session.copy_rows(crate::rejects::COPY_INTO_TABLE, &rows)?;
        }
        let row = ledger_row(shared, chunk, done.rows, done.rejects.len() as u64);
        self.session.execute(&format!("{}; COMMIT", row.done_sql()))
    }

    /// The chunk's counts and rejects when its ledger row is done: an attempt
    /// whose connection was lost after the server committed.
    fn committed_before(&self, chunk: &Chunk) -> Result<Option<Isolated>, Error> {
        let shared = self.shared;
        let Some(rows) = ledger::committed_rows(&self.session, &shared.job, chunk.seq)? else {
            return Ok(None);
        };
        let (from, to) = (chunk.loc.byte_offset.to_string(), (chunk.loc.byte_offset + chunk.loc.byte_len).to_string());
        let file = shared.sources[chunk.loc.source].name.to_string();
        let rejects = self
            .session
            .query(crate::rejects::SELECT_FOR_RANGE, &[Some(&shared.job), Some(&file), Some(&from), Some(&to)])?
            .iter()
            .map(|r| Reject::from_row(r))
            .collect();
        Ok(Some(Isolated { rows, rejects }))
    }
}

fn ledger_row<'a>(shared: &'a Shared, chunk: &Chunk, rows: u64, rejected: u64) -> ChunkRow<'a> {
    ChunkRow {
        job: &shared.job,
        seq: chunk.seq,
        file: &shared.sources[chunk.loc.source].name,
        byte_offset: chunk.loc.byte_offset,
        byte_len: chunk.loc.byte_len,
        first_line: chunk.loc.first_line,
        rows,
        rejected,
    }
}

fn record(shared: &Shared, chunk: &Chunk, rows: u64, rejected: u64, worker: usize, start_s: f64) -> ChunkRecord {
    ChunkRecord {
        seq: chunk.seq,
        file: shared.sources[chunk.loc.source].name.to_string(),
        byte_offset: chunk.loc.byte_offset,
        byte_len: chunk.loc.byte_len,
        first_line: chunk.loc.first_line,
        first_record: chunk.loc.first_record,
        records: chunk.records,
        rows,
        rejected,
        worker,
        start_s,
        end_s: shared.clock.elapsed().as_secs_f64(),
    }
}

/// Reads positioned chunks by range, keeping each input open once per worker.
#[derive(Default)]
struct RangeReader {
    files: HashMap<usize, File>,
    buf: Vec<u8>,
}

impl RangeReader {
    /// Sends the chunk's bytes through `send`; stops early when `send` says
    /// the server has already refused the chunk.
    fn feed(&mut self, shared: &Shared, chunk: &Chunk, send: &mut CopyWriter<'_>) -> Result<(), Error> {
        if let Some(data) = &chunk.data {
            send(&data[..chunk.copy_len() as usize]);
            return Ok(());
        }
        let source = &shared.sources[chunk.loc.source];
        self.buf.resize(COPY_PIECE, 0);
        let file = open_cached(&mut self.files, shared, chunk.loc.source)?;
        let (mut at, end) = (chunk.loc.byte_offset, chunk.loc.byte_offset + chunk.copy_len());
        while at < end {
            let want = ((end - at) as usize).min(self.buf.len());
            let piece = &mut self.buf[..want];
            file.read_exact_at(piece, at).map_err(|e| {
                source.input_error(&format!(
                    "reading bytes {at}..{}: {} (did the file change during the load?)",
                    at + want as u64,
                    io_reason(&e)
                ))
            })?;
            if !send(piece) {
                break;
            }
            at += want as u64;
        }
        Ok(())
    }

    /// The chunk's bytes that go to COPY, for isolating refused records.
    fn bytes_of(&mut self, shared: &Shared, chunk: &Chunk) -> Result<Vec<u8>, Error> {
        self.range(shared, chunk, 0, chunk.copy_len())
    }

    /// Bytes `from..to` of the chunk.
    fn range(&mut self, shared: &Shared, chunk: &Chunk, from: u64, to: u64) -> Result<Vec<u8>, Error> {
        if let Some(data) = &chunk.data {
            return Ok(data[from as usize..to as usize].to_vec());
        }
        let mut bytes = vec![0; (to - from) as usize];
        let source = &shared.sources[chunk.loc.source];
        open_cached(&mut self.files, shared, chunk.loc.source)?
            .read_exact_at(&mut bytes, chunk.loc.byte_offset + from)
            .map_err(|e| source.input_error(&io_reason(&e)))?;
        Ok(bytes)
    }

    /// The reject for a record that outgrew `--max-record-size`.
    fn runaway_reject(&mut self, shared: &Shared, chunk: &Chunk, runaway: Runaway) -> Result<Reject, Error> {
        let raw = self.range(shared, chunk, runaway.offset, chunk.loc.byte_len)?;
        let file = &shared.sources[chunk.loc.source].name;
        // The runaway is the chunk's last record.
        let position = chunk.loc.position(file, chunk.records - 1, runaway.lines_before, runaway.offset);
        let reason = format!(
            "the record runs past --max-record-size ({} bytes) without ending; is a quote left open? \
             sluice went on at the next line",
            shared.max_record_size
        );
        Ok(Reject::new(position, reason, &raw))
    }
}

fn open_cached<'a>(files: &'a mut HashMap<usize, File>, shared: &Shared, index: usize) -> Result<&'a File, Error> {
    use std::collections::hash_map::Entry;
    match files.entry(index) {
        Entry::Occupied(open) => Ok(open.into_mut()),
        Entry::Vacant(slot) => {
            let source = &shared.sources[index];
            let path = source.path.as_ref().expect("positioned sources have paths");
            let file = File::open(path).map_err(|e| source.input_error(&io_reason(&e)))?;
            Ok(slot.insert(file))
        }
    }
}
