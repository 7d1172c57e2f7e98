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

use super::{Event, Shared};
use crate::chunk::{locate_server_line, Chunk};
use crate::error::{Error, Position, RecordError};
use crate::report::ChunkRecord;
use crate::sink::postgres::COPY_PIECE;
use crate::sink::{CopyOutcome, CopyRefusal, CopyWriter, Session};
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
        let event = match outcome {
            Ok(CopyOutcome::Loaded(rows)) => {
                shared.progress.chunk_done(chunk.source_span, rows);
                Event::Committed(record(shared, &chunk, rows, id, start_s))
            }
            Ok(CopyOutcome::Refused(refusal)) => {
                Event::Failed(refused(shared, &mut reader, &chunk, refusal))
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
        worker,
        start_s,
        end_s: shared.clock.elapsed().as_secs_f64(),
    }
}

/// Turns the server's refusal into an error that names the file, the
/// record's first line, its number and its byte offset.
fn refused(shared: &Shared, reader: &mut RangeReader, chunk: &Chunk, r: CopyRefusal) -> Error {
    let source = &shared.sources[chunk.loc.source];
    let mut position = Position {
        file: source.name.to_string(),
        line: chunk.loc.first_line,
        record: chunk.loc.first_record,
        byte: chunk.loc.byte_offset,
    };
    let mut message = r.message;
    match (r.server_line, reader.bytes_of(shared, chunk)) {
        (Some(line), Ok(bytes)) => {
            let at = locate_server_line(shared.format.dialect(), &bytes, line);
            position.line += at.lines_before;
            position.record += at.index;
            position.byte += at.byte;
        }
        _ => message.push_str(&format!(
            "; the server named no line: the record is in the {} records from here",
            chunk.records
        )),
    }
    Error::Record(Box::new(RecordError {
        position,
        sqlstate: r.sqlstate,
        message,
        detail: r.detail,
        column: r.column,
    }))
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
    fn feed(
        &mut self,
        shared: &Shared,
        chunk: &Chunk,
        send: &mut CopyWriter<'_>,
    ) -> Result<(), Error> {
        if let Some(data) = &chunk.data {
            send(data);
            return Ok(());
        }
        let source = &shared.sources[chunk.loc.source];
        self.buf.resize(COPY_PIECE, 0);
        let file = open_cached(&mut self.files, shared, chunk.loc.source)?;
        let (mut at, end) = (
            chunk.loc.byte_offset,
            chunk.loc.byte_offset + chunk.loc.byte_len,
        );
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

    /// The chunk's bytes, for locating a refused record.
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

fn open_cached<'a>(
    files: &'a mut HashMap<usize, File>,
    shared: &Shared,
    index: usize,
) -> Result<&'a File, Error> {
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
