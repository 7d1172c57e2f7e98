//! Cutting an input into chunks that start and end on record boundaries.
//!
//! Why our own: chunking is sluice's edge. Peers either parse on one thread
//! and cut batches of rows (timescaledb-parallel-copy), guess boundaries and
//! sometimes lose rows on quoted newlines (DuckDB), or do not split at all
//! (pgloader, COPY). Here one sequential pass of the [`RecordScanner`] at
//! memchr speed finds boundaries well ahead of the workers, and the cut is
//! deterministic: the same bytes, format and chunk size always give the same
//! chunks, which resume (issue 4) depends on.
//!
//! Rules: a chunk ends at the first record end at or after `target` bytes; a
//! UTF-8 byte-order mark at the very start of an input is skipped; with a
//! header, the first record of each input (not of each chunk) is skipped.

use std::io::{self, Read};

use crate::format::{Dialect, RecordScanner};
use crate::source::RawCounter;

/// Where a chunk lies in its input. It travels with the chunk and appears in
/// every message about it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Location {
    /// Index of the input in the load's list of sources.
    pub source: usize,
    /// Offset of the first byte in the (decompressed) input.
    pub byte_offset: u64,
    pub byte_len: u64,
    /// 1-based physical line of the first byte, counting a header line.
    pub first_line: u64,
    /// 1-based number of the first data record (header excluded).
    pub first_record: u64,
}

/// A unit of work: one COPY, one transaction.
#[derive(Debug)]
pub struct Chunk {
    /// Position in the whole load, from 0, in input order.
    pub seq: u64,
    pub loc: Location,
    /// Records the scanner counted in the chunk.
    pub records: u64,
    /// On-disk bytes this chunk accounts for (compressed bytes for compressed
    /// inputs), for progress.
    pub source_span: u64,
    /// The bytes, for inputs that cannot be read by range (stdin, compressed).
    pub data: Option<Vec<u8>>,
}

#[derive(Clone, Debug)]
pub struct ChunkerConfig {
    pub dialect: Dialect,
    /// Target chunk size in bytes; chunks end at the next record end after it.
    pub target: u64,
    pub header: bool,
    /// Keep the chunk's bytes in memory (for streamed inputs).
    pub keep_bytes: bool,
    /// In-memory chunks may exceed the target by at most this much before the
    /// input is declared to have a runaway record (memory stays bounded).
    pub max_record: u64,
}

/// What the chunker skipped before the first chunk of an input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Preamble {
    pub bom: bool,
    pub header_records: u64,
    pub header_lines: u64,
}

const BLOCK: usize = 1 << 20;

/// Room reserved past the target for the record that crosses it.
const RECORD_SLACK: u64 = 64 << 10;

/// Cuts one input stream into chunks; see the module docs.
pub struct Chunker<R> {
    reader: R,
    cfg: ChunkerConfig,
    source: usize,
    scanner: RecordScanner,
    block: Vec<u8>,
    block_pos: usize,
    block_len: usize,
    eof: bool,
    /// Decompressed bytes consumed so far.
    offset: u64,
    /// Newlines consumed so far.
    lines: u64,
    /// Data records completed so far.
    records: u64,
    preamble: Option<Preamble>,
    raw: Option<(RawCounter, u64)>,
    total_size: Option<u64>,
    span_emitted: u64,
    next_seq: u64,
}

/// A record that outgrew `max_record` while being held in memory.
#[derive(Debug)]
pub struct RunawayRecord {
    pub line: u64,
    pub byte: u64,
}

#[derive(Debug)]
pub enum ChunkError {
    Io(io::Error),
    Runaway(RunawayRecord),
}

impl From<io::Error> for ChunkError {
    fn from(e: io::Error) -> Self {
        ChunkError::Io(e)
    }
}

impl<R: Read> Chunker<R> {
    /// `raw` counts on-disk bytes below a decompressor (for progress);
    /// `total_size` is the on-disk size when known; `first_seq` numbers chunks
    /// across inputs.
    pub fn new(reader: R, cfg: ChunkerConfig, source: usize, first_seq: u64) -> Self {
        let scanner = RecordScanner::new(cfg.dialect);
        Chunker {
            reader,
            cfg,
            source,
            scanner,
            block: vec![0; BLOCK],
            block_pos: 0,
            block_len: 0,
            eof: false,
            offset: 0,
            lines: 0,
            records: 0,
            preamble: None,
            raw: None,
            total_size: None,
            span_emitted: 0,
            next_seq: first_seq,
        }
    }

    /// Measure progress in on-disk bytes read below a decompressor.
    pub fn with_raw_counter(mut self, raw: RawCounter, total_size: Option<u64>) -> Self {
        self.raw = Some((raw, 0));
        self.total_size = total_size;
        self
    }

    pub fn with_total_size(mut self, total_size: Option<u64>) -> Self {
        self.total_size = total_size;
        self
    }

    /// What was skipped before the first chunk (valid after the first call to
    /// [`Chunker::next_chunk`]).
    pub fn preamble(&self) -> Preamble {
        self.preamble.unwrap_or_default()
    }

    /// Records and lines seen so far, header excluded / included.
    pub fn totals(&self) -> (u64, u64) {
        (self.records, self.lines)
    }

    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The next chunk, or `None` at the end of the input.
    pub fn next_chunk(&mut self) -> Result<Option<Chunk>, ChunkError> {
        if self.preamble.is_none() {
            self.skip_preamble()?;
        }
        let loc_start = (self.offset, self.lines + 1, self.records + 1);
        // Sized up front: a doubling Vec would reserve twice the chunk size
        // for a chunk that ends one record past the target.
        let reserve = (self.cfg.target + RECORD_SLACK) as usize;
        let mut data = self.cfg.keep_bytes.then(|| Vec::with_capacity(reserve));
        let (mut len, mut records) = (0u64, 0u64);
        loop {
            if self.block_pos == self.block_len && !self.fill()? {
                break;
            }
            let avail = &self.block[self.block_pos..self.block_len];
            let step = if len < self.cfg.target {
                let take = avail.len().min((self.cfg.target - len) as usize);
                self.scanner.scan(&avail[..take], false)
            } else {
                self.scanner.scan(avail, true)
            };
            if let Some(d) = data.as_mut() {
                d.extend_from_slice(&avail[..step.consumed]);
            }
            self.block_pos += step.consumed;
            len += step.consumed as u64;
            records += step.records;
            self.lines += step.newlines;
            if len >= self.cfg.target && self.scanner.at_record_start() {
                break;
            }
            if data.is_some() && len > self.cfg.target + self.cfg.max_record {
                return Err(ChunkError::Runaway(RunawayRecord { line: loc_start.1, byte: loc_start.0 + len }));
            }
        }
        if len == 0 {
            return Ok(None);
        }
        if self.eof && self.block_pos == self.block_len && !self.scanner.at_record_start() {
            // The last record has no trailing newline; it still counts.
            records += 1;
            self.scanner = RecordScanner::new(self.cfg.dialect);
        }
        self.offset += len;
        self.records += records;
        let chunk = Chunk {
            seq: self.next_seq,
            loc: Location {
                source: self.source,
                byte_offset: loc_start.0,
                byte_len: len,
                first_line: loc_start.1,
                first_record: loc_start.2,
            },
            records,
            source_span: self.take_span(),
            data,
        };
        self.next_seq += 1;
        Ok(Some(chunk))
    }

    /// On-disk bytes since the previous chunk; the last chunk takes whatever
    /// is left of the known size, so spans add up to the file size.
    fn take_span(&mut self) -> u64 {
        let consumed = match &self.raw {
            Some((counter, _)) => counter.get(),
            None => self.offset,
        };
        let at_end = self.eof && self.block_pos == self.block_len;
        let upto = match (at_end, self.total_size) {
            (true, Some(size)) => size,
            _ => consumed,
        };
        let span = upto.saturating_sub(self.span_emitted);
        self.span_emitted = upto.max(self.span_emitted);
        span
    }

    fn skip_preamble(&mut self) -> Result<(), ChunkError> {
        let mut pre = Preamble::default();
        while self.block_len - self.block_pos < 3 && self.fill_more()? {}
        if self.block[self.block_pos..self.block_len].starts_with(b"\xEF\xBB\xBF") {
            self.block_pos += 3;
            self.offset += 3;
            pre.bom = true;
        }
        if self.cfg.header {
            loop {
                if self.block_pos == self.block_len && !self.fill()? {
                    break;
                }
                let step = self.scanner.scan(&self.block[self.block_pos..self.block_len], true);
                self.block_pos += step.consumed;
                self.offset += step.consumed as u64;
                self.lines += step.newlines;
                if step.records == 1 {
                    break;
                }
            }
            pre.header_records = u64::from(self.offset > u64::from(pre.bom) * 3);
            pre.header_lines = self.lines;
            self.scanner = RecordScanner::new(self.cfg.dialect);
        }
        self.preamble = Some(pre);
        Ok(())
    }

    /// Refills an exhausted block; false at end of input.
    fn fill(&mut self) -> io::Result<bool> {
        self.block_pos = 0;
        self.block_len = 0;
        self.fill_more()
    }

    /// Appends more input after the unread bytes; false at end of input.
    fn fill_more(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.block_pos > 0 {
            self.block.copy_within(self.block_pos..self.block_len, 0);
            self.block_len -= self.block_pos;
            self.block_pos = 0;
        }
        loop {
            match self.reader.read(&mut self.block[self.block_len..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.block_len += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

/// Where a record lies inside a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordInChunk {
    /// 0-based record index within the chunk.
    pub index: u64,
    /// Newlines in the chunk before the record's first byte.
    pub lines_before: u64,
    /// Offset of the record's first byte within the chunk.
    pub byte: u64,
}

/// Finds the record the server means by `COPY t, line N` in a chunk's stream,
/// using the same scanner that cut the chunk. In text the server counts
/// records. In CSV it also counts line ends inside quoted fields, with a quirk
/// copied here: the line-end style is fixed at the stream's first record end,
/// and until then a quoted `\r` (not `\n`) is what counts, so the first
/// record of an LF file counts none of its quoted newlines.
pub fn locate_server_line(dialect: Dialect, chunk: &[u8], server_line: u64) -> RecordInChunk {
    let mut scanner = RecordScanner::new(dialect);
    let mut found = RecordInChunk { index: 0, lines_before: 0, byte: 0 };
    let (mut pos, mut index, mut lines, mut server_lines) = (0usize, 0u64, 0u64, 0u64);
    let mut crlf = None;
    while pos < chunk.len() {
        let step = scanner.scan(&chunk[pos..], true);
        let record = &chunk[pos..pos + step.consumed];
        let ends_crlf = record.ends_with(b"\r\n");
        let embedded = if !dialect.server_counts_embedded_newlines() {
            0
        } else if crlf.unwrap_or(true) {
            // Quoted carriage returns, the terminator's own excepted.
            memchr::memchr_iter(b'\r', record).count() as u64 - u64::from(ends_crlf)
        } else {
            step.newlines - step.records
        };
        crlf.get_or_insert(ends_crlf);
        server_lines += 1 + embedded;
        found = RecordInChunk { index, lines_before: lines, byte: pos as u64 };
        if server_lines >= server_line {
            break;
        }
        pos += step.consumed;
        lines += step.newlines;
        index += 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::scan::reference_record_ends;
    use proptest::prelude::*;

    const CSV: Dialect = Dialect::Csv { quote: b'"', escape: b'"' };

    fn config(dialect: Dialect, target: u64, header: bool) -> ChunkerConfig {
        ChunkerConfig { dialect, target, header, keep_bytes: true, max_record: 1 << 20 }
    }

    /// A reader that returns at most `piece` bytes per read, to exercise
    /// state carried across reads.
    struct Trickle<'a> {
        data: &'a [u8],
        piece: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.piece.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn chunks_of(input: &[u8], cfg: ChunkerConfig, piece: usize) -> Vec<Chunk> {
        let mut chunker = Chunker::new(Trickle { data: input, piece }, cfg, 0, 0);
        let mut out = Vec::new();
        while let Some(c) = chunker.next_chunk().unwrap() {
            out.push(c);
        }
        out
    }

    #[test]
    fn header_is_skipped_once_and_lines_count_it() {
        let input = b"\xEF\xBB\xBFid,name\n1,\"a\nb\"\n2,c\n3,d\n";
        let chunks = chunks_of(input, config(CSV, 4, true), 3);
        let data: Vec<&[u8]> = chunks.iter().map(|c| c.data.as_deref().unwrap()).collect();
        assert_eq!(data, [&b"1,\"a\nb\"\n"[..], b"2,c\n", b"3,d\n"]);
        let lines: Vec<u64> = chunks.iter().map(|c| c.loc.first_line).collect();
        assert_eq!(lines, [2, 4, 5]);
        let records: Vec<u64> = chunks.iter().map(|c| c.loc.first_record).collect();
        assert_eq!(records, [1, 2, 3]);
        assert_eq!(chunks[0].loc.byte_offset, 3 + 8);
    }

    #[test]
    fn last_record_without_newline_counts() {
        let chunks = chunks_of(b"a\nb", config(Dialect::Lines, 1, false), 1);
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[1].records, 1);
        assert_eq!(chunks.iter().map(|c| c.records).sum::<u64>(), 2);
    }

    #[test]
    fn chunking_is_deterministic_whatever_the_read_sizes() {
        let input: Vec<u8> = (0..500).flat_map(|i| format!("{i},\"x\n{i}\"\r\n").into_bytes()).collect();
        let a = chunks_of(&input, config(CSV, 97, false), 1 << 20);
        let b = chunks_of(&input, config(CSV, 97, false), 7);
        let locs = |v: &[Chunk]| v.iter().map(|c| c.loc.clone()).collect::<Vec<_>>();
        assert_eq!(locs(&a), locs(&b));
        assert!(a.len() > 20);
    }

    #[test]
    fn runaway_record_in_memory_is_an_error() {
        let input = [&b"1,\"never closed\n"[..], &b"more\n".repeat(100)].concat();
        let cfg = ChunkerConfig { max_record: 64, ..config(CSV, 16, false) };
        let mut chunker = Chunker::new(&input[..], cfg, 0, 0);
        assert!(matches!(chunker.next_chunk(), Err(ChunkError::Runaway(_))));
    }

    #[test]
    fn locates_server_lines_with_embedded_newlines() {
        let chunk = b"1,\"a\nb\"\n2,c\n3,\"x\ny\nz\"\n4,d\n";
        // CSV, LF: the first record's quoted newline is not counted (line 1),
        // record 1 is line 2, record 2 ends at line 5, record 3 is line 6.
        assert_eq!(locate_server_line(CSV, chunk, 1).index, 0);
        let r = locate_server_line(CSV, chunk, 2);
        assert_eq!((r.index, r.lines_before, r.byte), (1, 2, 8));
        assert_eq!(locate_server_line(CSV, chunk, 5).index, 2);
        assert_eq!(locate_server_line(CSV, chunk, 6).index, 3);
        // CSV, CRLF: quoted CRLFs count from the first record on.
        let crlf = b"1,\"a\r\nb\"\r\n2,c\r\n";
        assert_eq!(locate_server_line(CSV, crlf, 3).index, 1);
        // Text: the server counts records.
        let text = b"a\\\nb\nc\nd\n";
        let r = locate_server_line(Dialect::Text, text, 2);
        assert_eq!((r.index, r.lines_before, r.byte), (1, 2, 5));
    }

    /// Random records built from the bytes that matter to the scanners.
    fn record_strategy() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::sample::select(vec![b'a', b',', b'"', b'\\', b'\n', b'\r', b'\t', b'x']), 0..24)
    }

    fn dialect_strategy() -> impl Strategy<Value = Dialect> {
        prop::sample::select(vec![Dialect::Lines, Dialect::Text, CSV, Dialect::Csv { quote: b'"', escape: b'\\' }])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// Concatenated chunks equal the input, and every boundary is a record
        /// boundary of the slow reference scanner.
        #[test]
        fn chunks_cover_input_and_end_on_record_boundaries(
            parts in prop::collection::vec(record_strategy(), 0..40),
            dialect in dialect_strategy(),
            target in 1u64..64,
            piece in 1usize..50,
        ) {
            let input: Vec<u8> = parts.concat();
            let chunks = chunks_of(&input, config(dialect, target, false), piece);
            let joined: Vec<u8> = chunks.iter().flat_map(|c| c.data.clone().unwrap()).collect();
            prop_assert_eq!(&joined, &input);
            let ends = reference_record_ends(dialect, &input);
            let mut offset = 0u64;
            for (i, c) in chunks.iter().enumerate() {
                prop_assert_eq!(c.loc.byte_offset, offset);
                offset += c.loc.byte_len;
                let last = i + 1 == chunks.len();
                prop_assert!(last || ends.contains(&(offset as usize)), "boundary {} is inside a record", offset);
                let expected_lines = 1 + input[..c.loc.byte_offset as usize].iter().filter(|&&b| b == b'\n').count() as u64;
                prop_assert_eq!(c.loc.first_line, expected_lines);
            }
            let counted: u64 = chunks.iter().map(|c| c.records).sum();
            let trailing = u64::from(ends.last().copied().unwrap_or(0) < input.len());
            prop_assert_eq!(counted, ends.len() as u64 + trailing);
        }
    }
}
