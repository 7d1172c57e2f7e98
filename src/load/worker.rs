//! One worker: one connection, one chunk per transaction.
//!
//! The worker streams a chunk's bytes to COPY without looking at fields: on a
//! 2-core machine every client cycle is taken from the server, which does the
//! parsing anyway. Positioned inputs are read by range in small pieces, so a
//! worker holds one piece of memory whatever the chunk size.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering;

use crossbeam_channel::{Receiver, Sender};

use super::isolate::{isolate, Isolated};
use super::{Event, Shared};
use crate::chunk::{Chunk, Runaway};
use crate::error::{Error, Position};
use crate::rejects::Reject;
use crate::report::ChunkRecord;
use crate::sink::postgres::PgSession;
use crate::sink::postgres::COPY_PIECE;
use crate::sink::{CopyOutcome, CopyWriter};
use crate::source::io_reason;

pub(super) fn run(id: usize, shared: &Shared, queue: Receiver<Chunk>, events: Sender<Event>) {
    let mut session = match shared.target.connect() {
        Ok(s) => s,
        Err(e) => {
            let _ = events.send(Event::Failed(e));
            return;
        }
    };
    session.set_copy_statement(&shared.copy_sql, shared.table);
    let mut reader = RangeReader::default();
    for chunk in queue {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let start_s = shared.clock.elapsed().as_secs_f64();
        let loaded = copy_or_isolate(&mut session, shared, &mut reader, &chunk).and_then(|mut done| {
            if let Some(runaway) = chunk.runaway {
                done.rejects.push(reader.runaway_reject(shared, &chunk, runaway)?);
            }
            commit_with_rejects(&mut session, shared, &done)?;
            Ok(done)
        });
        let event = match loaded {
            Ok(done) => {
                let rejected = done.rejects.len() as u64;
                shared.progress.chunk_done(chunk.source_span, done.rows, rejected);
                let mut rec = record(shared, &chunk, done.rows, id, start_s);
                rec.rejected = rejected;
                Event::Committed(rec, done.rejects)
            }
            Err(err) => Event::Failed(err),
        };
        let failed = matches!(event, Event::Failed(_));
        if events.send(event).is_err() || failed {
            break;
        }
    }
}

/// The fast path (one COPY of the whole chunk, its own transaction); on a
/// refusal, isolation. A chunk that ends in a runaway record keeps its
/// transaction open so the reject commits with the rows.
fn copy_or_isolate(
    session: &mut PgSession,
    shared: &Shared,
    reader: &mut RangeReader,
    chunk: &Chunk,
) -> Result<Isolated, Error> {
    let open = chunk.runaway.is_some();
    if chunk.copy_len() == 0 {
        session.execute("BEGIN")?;
        return Ok(Isolated { rows: 0, rejects: Vec::new(), open_transaction: true });
    }
    let prelude = if open { "BEGIN" } else { "" };
    match session.copy_after(prelude, &mut |send| reader.feed(shared, chunk, send))? {
        CopyOutcome::Loaded(rows) => Ok(Isolated { rows, rejects: Vec::new(), open_transaction: open }),
        CopyOutcome::Refused(refusal) => {
            if open {
                session.execute("ROLLBACK")?;
            }
            let bytes = reader.bytes_of(shared, chunk)?;
            isolate(session, shared, chunk, &bytes, refusal)
        }
    }
}

/// Stores the chunk's rejects in `sluice.rejects` and commits, so the good
/// rows and the rejected records of a chunk are durable together.
fn commit_with_rejects(session: &mut PgSession, shared: &Shared, done: &Isolated) -> Result<(), Error> {
    if !done.open_transaction {
        return Ok(());
    }
    if shared.rejects_in_db && !done.rejects.is_empty() {
        let rows = crate::rejects::copy_text(&done.rejects, &shared.load_id, &shared.table.display());
        session.copy_rows(crate::rejects::COPY_INTO_TABLE, &rows)?;
    }
    session.execute("COMMIT")
}

fn record(shared: &Shared, chunk: &Chunk, rows: u64, worker: usize, start_s: f64) -> ChunkRecord {
    ChunkRecord {
        seq: chunk.seq,
        file: shared.sources[chunk.loc.source].name.to_string(),
        byte_offset: chunk.loc.byte_offset,
        byte_len: chunk.loc.byte_len,
        first_line: chunk.loc.first_line,
        first_record: chunk.loc.first_record,
        records: chunk.records,
        rows,
        rejected: 0,
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
        let position = Position {
            file: shared.sources[chunk.loc.source].name.to_string(),
            line: chunk.loc.first_line + runaway.lines_before,
            record: chunk.loc.first_record + chunk.records - 1,
            byte: chunk.loc.byte_offset + runaway.offset,
        };
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
