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
use crate::chunk::Chunk;
use crate::error::Error;
use crate::report::ChunkRecord;
use crate::sink::postgres::COPY_PIECE;
use crate::sink::{CopyOutcome, CopyWriter, Session};
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
        let outcome = session.copy_chunk(&mut |send| reader.feed(shared, &chunk, send));
        let loaded = match outcome {
            Ok(CopyOutcome::Loaded(rows)) => Ok(Isolated { rows, rejects: Vec::new() }),
            Ok(CopyOutcome::Refused(refusal)) => {
                reader.bytes_of(shared, &chunk).and_then(|bytes| isolate(&mut session, shared, &chunk, &bytes, refusal))
            }
            Err(err) => Err(err),
        };
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
            send(data);
            return Ok(());
        }
        let source = &shared.sources[chunk.loc.source];
        self.buf.resize(COPY_PIECE, 0);
        let file = open_cached(&mut self.files, shared, chunk.loc.source)?;
        let (mut at, end) = (chunk.loc.byte_offset, chunk.loc.byte_offset + chunk.loc.byte_len);
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

    /// The chunk's bytes, for isolating refused records.
    fn bytes_of(&mut self, shared: &Shared, chunk: &Chunk) -> Result<Vec<u8>, Error> {
        if let Some(data) = &chunk.data {
            return Ok(data.clone());
        }
        let mut bytes = vec![0; chunk.loc.byte_len as usize];
        let source = &shared.sources[chunk.loc.source];
        open_cached(&mut self.files, shared, chunk.loc.source)?
            .read_exact_at(&mut bytes, chunk.loc.byte_offset)
            .map_err(|e| source.input_error(&io_reason(&e)))?;
        Ok(bytes)
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
