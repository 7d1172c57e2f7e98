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
//! UTF-8 byte-order mark at the very start of an input is skipped; so are
//! the lines `--skip-lines` names (lines, not records: a title's quote
//! opens nothing), then, with a header, the first record of each input (not
//! of each chunk). With a record cap (`--limit`), the last chunk ends at
//! the cap's record, taken one record at a time near it.
//! Records end at the line-end style of the input's first line end, as the
//! server reads each chunk (see [`line_end_of`]): `\n` for most files, `\r`
//! for files with bare carriage returns, so these load in parallel chunks
//! too. A first line end past the first block (128 KiB) is taken to be `\n`.
//!
//! Open quotes (csv, when the COPY's column count is known): a record that
//! spans lines (a line end inside quotes) has its fields counted and its
//! quotes' places checked ([`FieldCounter`]). With more or fewer fields than
//! the COPY has columns and a quote out of place (opening inside a field, or
//! closing before anything but a delimiter or line end), or with the input
//! ending inside the quote, the server rejects it whatever it holds, and
//! what made it span lines is almost always a quote left open: its first
//! line alone ends the chunk as a rejected record
//! ([`RunawayKind::OpenQuote`]), and scanning starts afresh on the next
//! line, from bytes given back to be read again. A record whose quotes are
//! all in place is one record whatever its field count. Measured on a 2 M-line
//! file with one stray quote: 0 rows and 369 rejects before, 1,999,999 rows
//! and 1 reject now. The cut depends only on the bytes and the column
//! count, so it stays deterministic. Only records that span lines are
//! counted, so the scanner keeps its speed elsewhere (store_sales, 380
//! spanning records in 2 M: 3.4 GB/s unchecked, 2.8 GB/s checked).
//!
//! Tail taper: when the load's remaining size is known up front (this input
//! and the ones after it are plain files), the chunks in the load's last four
//! targets' worth of bytes shrink to a quarter of what is left, down to an
//! eighth of the target (not below 1 MiB). Workers then finish within a
//! small chunk of each other instead of one idling while another loads a
//! full-size last chunk (measured: 55-72 ms apart on a 3.1 s load of 32
//! chunks). Only the load's end is tapered, not every file's: many small
//! files would otherwise all be cut fine. The sizes depend only on the
//! offset, the target and the inputs' sizes, so the cut stays deterministic.
//!
//! Head taper: the load's first input starts with 1 MiB chunks, each chunk
//! then as long as the bytes before it, up to the target (1, 1, 2, 4, 8, 16
//! MiB). A worker's first COPY waits for its first chunk to be cut: on
//! lineitem (16 MiB chunks) the workers' sessions were open 26 ms before
//! the first full-size chunk was (server log). The sizes depend only on the
//! offset and the target.

use std::io::{self, Read};

use xxhash_rust::xxh3::Xxh3;

use crate::error::Position;
use crate::format::scan::{line_end_of, skipped_line_end, FieldCounter, LineEnd, RecordShape, Walked};
use crate::format::{Dialect, RecordScanner, Step};
use crate::samples::LineSampler;
use crate::source::{RawCounter, Start};

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
    /// JSON values: the line of the file each record's document begins at,
    /// where `first_line` counts the lines made of them, one a document
    /// (see [`crate::format::json_values::DocumentLines`]). Set by the
    /// load's feeder.
    #[serde(skip)]
    pub document_lines: Option<std::sync::Arc<[u64]>>,
}

impl Location {
    /// Where a record of this chunk is in its file, from the record's index
    /// in the chunk, the newlines before it and its offset in the chunk.
    pub fn position(&self, file: &str, index: u64, lines_before: u64, byte_in_chunk: u64) -> Position {
        Position {
            file: file.to_string(),
            line: self.line_of(index, lines_before),
            record: self.first_record + index,
            byte: self.byte_offset + byte_in_chunk,
        }
    }

    /// The file's line record `index` of the chunk begins at, after
    /// `lines_before` line ends in the chunk.
    pub fn line_of(&self, index: u64, lines_before: u64) -> u64 {
        let of_its_document = self.document_lines.as_ref().and_then(|lines| lines.get(index as usize));
        of_its_document.copied().unwrap_or(self.first_line + lines_before)
    }
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
    /// For JSON lines read into columns, the chunk's lines as they were in
    /// the input, for the rejects file (`data` holds them as text-format
    /// lines); set by the load's feeder. Shared with the copy whose
    /// defaults are filled in ([`Chunk::with_records`]), which loads instead.
    pub original: Option<std::sync::Arc<crate::format::documents::OriginalText>>,
    /// A hash of the chunk's bytes (xxh3, hashed as they are scanned),
    /// which the ledger keeps so that a resumed load can tell the same input
    /// from other data of the same record lengths: stdin, or a file copied or
    /// touched since (its size and time no longer tell). `None` only in
    /// ledger rows of older versions.
    pub content_hash: Option<u64>,
    /// Hashes of some of its lines (see [`crate::samples`]), which the
    /// ledger keeps: whether a file written anew holds its rows again.
    pub line_samples: Vec<u64>,
    /// A record that outgrew the maximum record size ends the chunk; it is
    /// rejected, not copied.
    pub runaway: Option<Runaway>,
    /// How the input's records end, for whoever splits the chunk into them.
    pub line_end: LineEnd,
    /// The chunk ends its input inside a record: no line end after the last
    /// one, or a quote still open. Only the end of the data ends such a
    /// record, so no other input may follow it in one COPY.
    pub unterminated: bool,
}

/// Where a runaway record starts inside its chunk; it runs to the chunk's
/// end. A chunk that keeps its bytes holds only the beginning of a record
/// that outgrew the maximum size: it may be shorter than its span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Runaway {
    /// Offset of the record's first byte within the chunk.
    pub offset: u64,
    /// Line ends in the chunk before the record.
    pub lines_before: u64,
    pub kind: RunawayKind,
}

/// Why a record is rejected by the chunker rather than copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunawayKind {
    /// It outgrew the maximum record size; it runs to the next line end.
    TooLong,
    /// A quote left open on its first line, which alone is rejected: read
    /// on, the record spanned `lines` more lines and had `fields` fields (at
    /// least) where the COPY has `expected` columns, or the input ended
    /// inside the quote (`closed` false).
    OpenQuote { fields: u64, expected: u64, lines: u64, closed: bool },
    /// The input's header again, among its records (see [`HeaderRepeats`]).
    RepeatedHeader,
}

impl Chunk {
    /// Bytes of the chunk that go to COPY: all but a runaway record.
    pub fn copy_len(&self) -> u64 {
        self.runaway.map_or(self.data_len(), |r| r.offset)
    }

    /// Bytes of the chunk as the workers have them: the input's, or its
    /// records rewritten (documents read into columns, fields left out),
    /// whose length is not the input's; those it carries hold only the
    /// beginning of a runaway record.
    pub fn data_len(&self) -> u64 {
        match &self.data {
            Some(data) => data.len() as u64,
            None => self.loc.byte_len,
        }
    }

    /// This chunk with `records` in place of its copied records (rewritten:
    /// see `load::defaults`), its runaway record after them as it was.
    /// Only for chunks that keep their input's text apart ([`Chunk::original`]).
    pub fn with_records(&self, mut records: Vec<u8>) -> Chunk {
        debug_assert!(self.original.is_some(), "a rewritten chunk keeps its input's text");
        let runaway = self.runaway.map(|r| Runaway { offset: records.len() as u64, ..r });
        if let Some(data) = &self.data {
            records.extend_from_slice(&data[self.copy_len() as usize..]);
        }
        Chunk {
            seq: self.seq,
            loc: self.loc.clone(),
            records: self.records,
            source_span: self.source_span,
            data: Some(records),
            original: self.original.clone(),
            content_hash: self.content_hash,
            line_samples: self.line_samples.clone(),
            runaway,
            line_end: self.line_end,
            unterminated: self.unterminated,
        }
    }

    /// Records that go to COPY: all but a runaway record.
    pub fn copied_records(&self) -> u64 {
        self.records - u64::from(self.runaway.is_some())
    }
}

/// A chunk being cut.
struct Cut {
    data: Option<Vec<u8>>,
    hash: Xxh3,
    samples: LineSampler,
    len: u64,
    records: u64,
    runaway: Option<Runaway>,
}

impl Cut {
    /// Adds scanned bytes to the chunk.
    fn take(&mut self, bytes: &[u8]) {
        self.len += bytes.len() as u64;
        self.hash.update(bytes);
        self.samples.take(bytes);
        if let Some(d) = self.data.as_mut() {
            d.extend_from_slice(bytes);
        }
    }

    /// Adds bytes to the chunk's span without keeping them: the rest of a
    /// runaway record's line, which nothing reads again.
    fn skip(&mut self, bytes: &[u8]) {
        self.len += bytes.len() as u64;
        self.hash.update(bytes);
    }
}

#[derive(Clone, Debug)]
pub struct ChunkerConfig {
    pub dialect: Dialect,
    /// Target chunk size in bytes; chunks end at the next record end after it.
    pub target: u64,
    /// Lines skipped before the header or the first record (`--skip-lines`).
    pub skip_lines: u64,
    /// The most records cut (`--limit`): the last chunk ends at that
    /// record's end, and nothing after it is read.
    pub record_cap: Option<u64>,
    pub header: bool,
    /// Keep the chunk's bytes in memory (for streamed inputs).
    pub keep_bytes: bool,
    /// A record longer than this is a runaway (usually an open quote): it is
    /// cut off at the next newline and rejected, so memory stays bounded.
    pub max_record: u64,
    /// csv: the fields every record must have, for the open-quote check
    /// (see the module docs); `None` turns it off.
    pub shape: Option<RecordShape>,
}

/// What the chunker skipped before the first chunk of an input.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Preamble {
    pub bom: bool,
    /// Lines skipped before the header (`--skip-lines`): fewer than asked
    /// where the input ended first.
    pub skipped_lines: u64,
    pub header_records: u64,
    /// Lines the header record took.
    pub header_lines: u64,
    /// The header record as written, without its line end (at most
    /// [`HEADER_KEPT`] bytes): the load reads column names from it.
    pub header: Vec<u8>,
    /// The header record's end was read (not the end of the input first):
    /// read from a pipe's head, a header cut there is not the whole header.
    pub header_ended: bool,
}

/// How much of a header record is kept: column names, not a runaway line.
pub const HEADER_KEPT: usize = 64 * 1024;

/// How much of its input the chunker reads at a time: little enough to stay
/// in a core's L2 cache while the server shares the core. Measured on
/// lineitem (754 MB, a 2-core load): a 1 MiB block behind a 1 MiB `BufReader`
/// cost 0.34 s of CPU in the read's copy alone, this block read straight from
/// the file 0.07 s; sluice's CPU for the load went from 2.09 to 1.76 s. The
/// size is what matters (4 interleaved loads each, blocks read straight:
/// 1 MiB 2.02 s, 256 KiB 2.05 s, 128 KiB 1.83 s, 64 KiB 1.82 s).
const BLOCK: usize = 128 << 10;

/// Names the rule that cuts chunks; part of a job's fingerprint, so a job
/// begun by a sluice that cut differently is not resumed under the same
/// chunk numbers. Change it whenever a cut would change.
pub const CUT_RULE: &str =
    "target, head doubling from 1 MiB, tail tapered to a quarter of the rest; a spanning csv record of the wrong \
     width cut after its first line";

/// Names the cut at a record that repeats the header (see
/// [`HeaderRepeats`]), a part of the fingerprint of a job with a header.
pub const HEADER_REPEATS_RULE: &str = "a record repeating the header ends its chunk";

/// The smallest tapered chunk, at the load's tail and at its head: below
/// it, a chunk's commit and ledger row would cost more than the idle time
/// it saves.
const MIN_TAPERED: u64 = 1 << 20;

/// Room reserved past the target for the record that crosses it.
const RECORD_SLACK: u64 = 64 << 10;

/// An input's header, looked for at each record start of its data (csv and
/// tsv with `--header`). Why: files that each begin with their header,
/// joined with `cat` (or an export that repeats it every page), hold it
/// again among the records. Into text columns it loaded as a row, without
/// a reject or a word; typed columns rejected it with their type's words.
/// Met at a record start, as written (with a UTF-8 byte-order mark before
/// it or not, ending in LF or CR LF), it ends its chunk as a rejected
/// record. Found at memmem speed, a block at a time, so the cut depends on
/// the bytes alone and stays deterministic.
struct HeaderRepeats {
    /// The header as a record repeats it: without and with a byte-order mark.
    written: [Vec<u8>; 2],
    line_end: LineEnd,
    /// Each of `written` after a line end.
    after_line_end: [memchr::memmem::Finder<'static>; 2],
}

/// Whether a record repeats the header (see [`HeaderRepeats::at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Repeat {
    /// It does, in this many bytes with its line end.
    Here(usize),
    /// The bytes read end before that shows.
    Unsure,
    No,
}

/// The longest header watched for: column names, not a runaway line.
const WATCHED_HEADER: usize = 4 << 10;

const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

impl HeaderRepeats {
    /// `None` for a header too long to look for, empty, or holding a line end.
    fn new(header: &[u8], line_end: LineEnd) -> Option<HeaderRepeats> {
        if header.is_empty() || header.len() > WATCHED_HEADER || header.contains(&line_end.byte()) {
            return None;
        }
        let written = [header.to_vec(), [BYTE_ORDER_MARK, header].concat()];
        let after = |written: &[u8]| memchr::memmem::Finder::new(&[&[line_end.byte()], written].concat()).into_owned();
        let after_line_end = [after(&written[0]), after(&written[1])];
        Some(HeaderRepeats { written, line_end, after_line_end })
    }

    /// Whether `bytes`, from a record's start, begin with the header and its
    /// line end (or the input's end, where no `more` follows them).
    fn at(&self, bytes: &[u8], more: bool) -> Repeat {
        let as_written = |written: &[u8]| {
            let (len, seen) = (written.len(), bytes.len().min(written.len()));
            if bytes[..seen] != written[..seen] {
                return Repeat::No;
            }
            match (&bytes[seen..], self.line_end) {
                _ if seen < len => Repeat::Unsure,
                ([b'\n', ..], LineEnd::Lf) | ([b'\r', ..], LineEnd::Cr) => Repeat::Here(len + 1),
                ([b'\r', b'\n', ..], LineEnd::Lf) => Repeat::Here(len + 2),
                ([] | [b'\r'], LineEnd::Lf) | ([], LineEnd::Cr) if more => Repeat::Unsure,
                ([], _) => Repeat::Here(len),
                _ => Repeat::No,
            }
        };
        match (as_written(&self.written[0]), as_written(&self.written[1])) {
            (found @ Repeat::Here(_), _) | (_, found @ Repeat::Here(_)) => found,
            (Repeat::Unsure, _) | (_, Repeat::Unsure) if more => Repeat::Unsure,
            _ => Repeat::No,
        }
    }

    /// How many of `bytes` to scan before looking again, at most `take`:
    /// up to the first line start after the first byte where the header
    /// repeats, or may (the block ending before that shows). Whether a
    /// record starts there is the scanner's to say.
    fn next_start(&self, bytes: &[u8], take: usize, more: bool) -> usize {
        let window = &bytes[..bytes.len().min(take + self.written[1].len() + 2)];
        let first_at = |finder: &memchr::memmem::Finder<'_>| {
            finder.find_iter(window).map(|i| i + 1).find(|&at| at < take && self.at(&bytes[at..], more) != Repeat::No)
        };
        let found = self.after_line_end.iter().filter_map(first_at).min();
        let last_line = memchr::memrchr(self.line_end.byte(), &bytes[..take]).map(|i| i + 1);
        let cut_off =
            last_line.filter(|&at| at < take && take == bytes.len() && self.at(&bytes[at..], more) == Repeat::Unsure);
        [found, cut_off].into_iter().flatten().min().unwrap_or(take)
    }
}

/// Cuts one input stream into chunks; see the module docs.
pub struct Chunker<R> {
    reader: R,
    cfg: ChunkerConfig,
    source: usize,
    /// Decided before the preamble is skipped; `Lf` until then.
    line_end: LineEnd,
    scanner: RecordScanner,
    block: Vec<u8>,
    block_pos: usize,
    block_len: usize,
    eof: bool,
    /// Decompressed bytes consumed so far.
    offset: u64,
    /// Line ends consumed so far.
    lines: u64,
    /// Data records completed so far.
    records: u64,
    preamble: Option<Preamble>,
    raw: Option<(RawCounter, u64)>,
    /// Offset and lines before the first byte of the record in progress.
    record_start: (u64, u64),
    total_size: Option<u64>,
    span_emitted: u64,
    next_seq: u64,
    /// The load's bytes from this input's start to the load's end, when the
    /// tail is tapered.
    taper_over: Option<u64>,
    /// Whether this input opens the load, so its first chunks are small.
    opens_load: bool,
    /// The open-quote check's counter at a record's start (csv with a
    /// shape), once the line end is known.
    counter: Option<FieldCounter>,
    /// The field count of the record in progress when the block began: its
    /// start and the counter over its bytes in earlier blocks.
    carry: Option<(u64, FieldCounter)>,
    /// Bytes read but given back by the open-quote check, read again before
    /// the input's next bytes: the lines after a cut first line.
    replay: Vec<u8>,
    replay_pos: usize,
    /// Where in its input the reader begins, for an input read from the
    /// middle (see [`Chunker::starting_at`]); offsets, lines and records
    /// above count from there.
    start: Option<Start>,
    /// Where the record the input ended inside began (offset and lines
    /// before it), once a chunk ends so.
    cut_record: Option<(u64, u64)>,
    /// The input's header, watched for among its records.
    repeats: Option<HeaderRepeats>,
    /// For an input read from its middle: the header at its start.
    header_above: Option<Preamble>,
}

impl<R: Read> Chunker<R> {
    /// `raw` counts on-disk bytes below a decompressor (for progress);
    /// `total_size` is the on-disk size when known; `first_seq` numbers chunks
    /// across inputs.
    pub fn new(reader: R, cfg: ChunkerConfig, source: usize, first_seq: u64) -> Self {
        Self::on_block(reader, cfg, source, first_seq, Vec::new())
    }

    /// Like `new`, reading through the block an earlier chunker left
    /// (`into_block`): a glob of 50,000 small files spent an eighth of its
    /// time allocating and zeroing a block per file. What the block held is
    /// never read: only bytes read into it since are.
    pub fn on_block(reader: R, cfg: ChunkerConfig, source: usize, first_seq: u64, mut block: Vec<u8>) -> Self {
        block.resize(BLOCK, 0);
        let scanner = RecordScanner::new(cfg.dialect, LineEnd::Lf);
        Chunker {
            reader,
            cfg,
            source,
            line_end: LineEnd::Lf,
            scanner,
            block,
            block_pos: 0,
            block_len: 0,
            eof: false,
            offset: 0,
            lines: 0,
            records: 0,
            preamble: None,
            raw: None,
            record_start: (0, 0),
            total_size: None,
            span_emitted: 0,
            next_seq: first_seq,
            taper_over: None,
            opens_load: false,
            counter: None,
            carry: None,
            replay: Vec::new(),
            replay_pos: 0,
            start: None,
            cut_record: None,
            repeats: None,
            header_above: None,
        }
    }

    /// The read block, for the next input's chunker (see `on_block`).
    pub fn into_block(self) -> Vec<u8> {
        self.block
    }

    /// Measure progress in on-disk bytes read below a decompressor.
    pub fn with_raw_counter(mut self, raw: RawCounter, total_size: Option<u64>) -> Self {
        self.raw = Some((raw, 0));
        self.total_size = total_size;
        self
    }

    /// A plain file's size on disk, so the last chunk's span ends at it and
    /// the spans add up to the file (see `take_span`).
    pub fn with_total_size(mut self, total_size: Option<u64>) -> Self {
        self.total_size = total_size;
        self
    }

    /// Tapers the chunks near the load's end (see the module docs), given
    /// the load's bytes from this input's first byte on, in the bytes this
    /// input's offsets count (so: this input and all later ones are plain files).
    pub fn tapered(mut self, bytes_to_load_end: Option<u64>) -> Self {
        self.taper_over = bytes_to_load_end;
        self
    }

    /// For a reader that begins at `start` in its input (a file an earlier
    /// job loaded the first part of): no byte-order mark or header is looked
    /// for, and the chunks' places and numbers are the input's.
    pub fn starting_at(mut self, start: Option<Start>) -> Self {
        self.start = start;
        self
    }

    /// For a reader that begins past its input's header (see
    /// [`Chunker::starting_at`]): what the input's start holds, whose header
    /// is watched for among the records as from the start.
    pub fn under_the_header(mut self, preamble: Preamble) -> Self {
        self.header_above = Some(preamble);
        self
    }

    /// Starts the load's chunks small (see the module docs): for its first input.
    pub fn opening_the_load(mut self, opens_load: bool) -> Self {
        self.opens_load = opens_load;
        self
    }

    /// The target for a chunk starting at `offset` (see the module docs).
    fn target_at(&self, offset: u64) -> u64 {
        let full = self.cfg.target;
        let head = match self.opens_load {
            true => offset.max(MIN_TAPERED),
            false => full,
        };
        let tail = match self.taper_over {
            Some(size) => (size.saturating_sub(offset) / 4).max((full / 8).max(MIN_TAPERED)),
            None => full,
        };
        full.min(head).min(tail)
    }

    /// What was skipped before the first chunk (valid after the first call to
    /// [`Chunker::next_chunk`]).
    pub fn preamble(&self) -> Preamble {
        self.preamble.clone().unwrap_or_default()
    }

    /// Reads the input's preamble (BOM, header) if not done yet, without
    /// cutting a chunk.
    pub fn read_preamble(&mut self) -> io::Result<Preamble> {
        if self.preamble.is_none() {
            self.skip_preamble()?;
        }
        Ok(self.preamble())
    }

    /// Records and lines seen so far, header excluded / included.
    pub fn totals(&self) -> (u64, u64) {
        (self.records, self.lines)
    }

    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The next chunk, or `None` at the end of the input.
    pub fn next_chunk(&mut self) -> io::Result<Option<Chunk>> {
        if self.preamble.is_none() {
            self.skip_preamble()?;
        }
        if self.records_left(0) == Some(0) {
            return Ok(None);
        }
        let start = (self.offset, self.lines, self.records);
        self.record_start = (self.offset, self.lines);
        let target = self.target_at(start.0);
        // Sized up front: a doubling Vec would reserve twice the chunk size
        // for a chunk that ends one record past the target; no more than a
        // plain file has left (a small file's chunk is kept whole).
        let left = match (&self.raw, self.total_size) {
            (None, Some(size)) => size.saturating_sub(start.0) + 1,
            _ => u64::MAX,
        };
        let reserve = (target + RECORD_SLACK).min(left) as usize;
        let data = self.cfg.keep_bytes.then(|| Vec::with_capacity(reserve));
        let samples = LineSampler::new(crate::samples::spacing(self.cfg.target));
        let mut cut = Cut { data, hash: Xxh3::new(), samples, len: 0, records: 0, runaway: None };
        // Near `--limit`'s cap, records are taken one at a time, so that
        // the chunk ends at the last one's end.
        let mut one_at_a_time = false;
        loop {
            if self.block_pos == self.block_len {
                self.carry_record(start.0 + cut.len);
                if !self.fill()? {
                    break;
                }
            }
            match self.header_here() {
                Repeat::Here(len) => {
                    self.cut_repeated_header(&mut cut, start, len);
                    break;
                }
                Repeat::Unsure => {
                    self.carry_record(start.0 + cut.len);
                    self.fill_more()?;
                    continue;
                }
                Repeat::No => {}
            }
            let before = self.scanner.clone();
            let avail = &self.block[self.block_pos..self.block_len];
            let step = if cut.len < target && !one_at_a_time {
                let take = avail.len().min((target - cut.len) as usize);
                let take = self.repeats.as_ref().map_or(take, |r| r.next_start(avail, take, self.more_to_read()));
                self.scanner.scan(&avail[..take], false)
            } else {
                self.scanner.scan(avail, true)
            };
            if let Some(left) = self.records_left(cut.records) {
                let past = step.records > left || (step.records == left && !self.scanner.at_record_start());
                if past && !one_at_a_time {
                    self.scanner = before;
                    one_at_a_time = true;
                    continue;
                }
            }
            // A line end inside quotes: check that record's fields first.
            if self.counter.is_some() && step.newlines > step.records {
                let after = std::mem::replace(&mut self.scanner, before);
                match self.take_spanning(&mut cut, start, target)? {
                    Some(true) => break,
                    Some(false) => {}
                    None => {
                        self.scanner = after;
                        self.take_block_step(&mut cut, start.0, step);
                    }
                }
            } else {
                self.take_block_step(&mut cut, start.0, step);
            }
            if (cut.len >= target || self.records_left(cut.records) == Some(0)) && self.scanner.at_record_start() {
                break;
            }
            if !self.scanner.at_record_start() && start.0 + cut.len - self.record_start.0 > self.cfg.max_record {
                self.cut_runaway(&mut cut, start)?;
                break;
            }
        }
        if cut.len == 0 {
            return Ok(None);
        }
        let unterminated = self.drained() && !self.scanner.at_record_start();
        if unterminated {
            // The last record has no trailing newline; it still counts.
            cut.records += 1;
            self.cut_record = Some(self.record_start);
            self.scanner = self.fresh_scanner();
        }
        self.offset += cut.len;
        self.records += cut.records;
        let before = self.start.unwrap_or_default();
        let chunk = Chunk {
            seq: self.next_seq,
            loc: Location {
                source: self.source,
                byte_offset: before.byte + start.0,
                byte_len: cut.len,
                first_line: before.lines + start.1 + 1,
                first_record: before.records + start.2 + 1,
                document_lines: None,
            },
            records: cut.records,
            source_span: self.take_span(),
            content_hash: Some(cut.hash.digest()),
            line_samples: cut.samples.finish(),
            data: cut.data,
            original: None,
            runaway: cut.runaway,
            line_end: self.line_end,
            unterminated,
        };
        self.next_seq += 1;
        Ok(Some(chunk))
    }

    /// Where the record the input ended inside begins, once a chunk ended
    /// inside it (`unterminated`): the byte and line of its input, as
    /// [`Location`] counts them.
    pub fn cut_record_start(&self) -> Option<(u64, u64)> {
        let before = self.start.unwrap_or_default();
        self.cut_record.map(|(byte, lines)| (before.byte + byte, before.lines + lines + 1))
    }

    /// `chunk` (the input's last, `unterminated`) without the record the
    /// input ended inside: a line still being written into a file that grew
    /// while it was read (see `load::feed_one`), which the next run loads
    /// whole. The bytes before that record are hashed and sampled again as
    /// [`Cut`] does: those the chunk holds, else those `file` reads from the
    /// chunk's first byte. `None` when that record was all of it.
    pub fn without_its_cut_record(&mut self, mut chunk: Chunk, file: impl Read) -> io::Result<Option<Chunk>> {
        let Some((record_byte, _)) = self.cut_record_start() else { return Ok(Some(chunk)) };
        let len = record_byte.saturating_sub(chunk.loc.byte_offset);
        self.records -= 1;
        if len == 0 {
            return Ok(None);
        }
        let mut cut = Cut {
            data: None,
            hash: Xxh3::new(),
            samples: LineSampler::new(crate::samples::spacing(self.cfg.target)),
            len: 0,
            records: 0,
            runaway: None,
        };
        match chunk.data.as_mut() {
            Some(data) => {
                data.truncate(len as usize);
                cut.take(data);
            }
            None => {
                let mut file = file.take(len);
                let mut piece = vec![0; (1 << 20).min(len as usize)];
                while cut.len < len {
                    let read = file.read(&mut piece)?;
                    if read == 0 {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                    cut.take(&piece[..read]);
                }
            }
        }
        chunk.loc.byte_len = len;
        chunk.records -= 1;
        chunk.content_hash = Some(cut.hash.digest());
        chunk.line_samples = cut.samples.finish();
        chunk.unterminated = false;
        Ok(Some(chunk))
    }

    /// Whether `--limit`'s cap ended the input here (not its end).
    pub fn reached_its_cap(&self) -> bool {
        self.records_left(0) == Some(0)
    }

    /// Records `--limit` leaves to cut, with `in_chunk` cut into the chunk
    /// being made; `None` without a cap.
    fn records_left(&self, in_chunk: u64) -> Option<u64> {
        self.cfg.record_cap.map(|cap| cap.saturating_sub(self.records + in_chunk))
    }

    /// Takes the bytes a scan step consumed from the block into the chunk.
    /// Watches for the header `preamble` read, one of one line that ended,
    /// among the records (see [`HeaderRepeats`]).
    fn watch_for(&mut self, preamble: &Preamble) {
        if self.cfg.header && preamble.header_ended && preamble.header_lines == 1 && self.cfg.dialect != Dialect::Lines
        {
            self.repeats = HeaderRepeats::new(&preamble.header, self.line_end);
        }
    }

    /// Whether the record that begins at the block's next byte repeats the
    /// input's header; `Unsure` when the block ends before that shows.
    fn header_here(&self) -> Repeat {
        match &self.repeats {
            Some(repeats) if self.scanner.at_record_start() => {
                repeats.at(&self.block[self.block_pos..self.block_len], self.more_to_read())
            }
            _ => Repeat::No,
        }
    }

    /// The input's header met again as a record (see [`HeaderRepeats`]):
    /// `len` bytes at the block's next byte, with its line end. It ends
    /// the chunk as a rejected record, as a runaway does.
    fn cut_repeated_header(&mut self, cut: &mut Cut, start: (u64, u64, u64), len: usize) {
        cut.runaway =
            Some(Runaway { offset: cut.len, lines_before: self.lines - start.1, kind: RunawayKind::RepeatedHeader });
        let record = &self.block[self.block_pos..][..len];
        self.lines += memchr::memchr_iter(self.line_end.byte(), record).count() as u64;
        cut.take(record);
        cut.records += 1;
        self.block_pos += len;
    }

    /// Whether input may follow the block's bytes.
    fn more_to_read(&self) -> bool {
        !self.eof || self.replay_pos < self.replay.len()
    }

    fn take_block_step(&mut self, cut: &mut Cut, chunk_start: u64, step: Step) {
        let block = std::mem::take(&mut self.block);
        self.take_scanned(cut, chunk_start, &block[self.block_pos..][..step.consumed], step);
        self.block = block;
        self.block_pos += step.consumed;
    }

    /// Takes scanned bytes into the chunk and notes where the record in
    /// progress began.
    fn take_scanned(&mut self, cut: &mut Cut, chunk_start: u64, bytes: &[u8], step: Step) {
        if step.records > 0 {
            let tail = memchr::memchr_iter(self.line_end.byte(), &bytes[step.last_end..]).count() as u64;
            self.record_start = (chunk_start + cut.len + step.last_end as u64, self.lines + step.newlines - tail);
        }
        cut.take(bytes);
        cut.records += step.records;
        self.lines += step.newlines;
    }

    /// The open-quote check (see the module docs), where the block's next
    /// scan step found a line end inside quotes (the scanner stands where it
    /// stood before that step). Takes the records before the one that spans
    /// lines, then that record: whole when its field count is right; else its
    /// first line only, as a rejected record that ends the chunk, giving the
    /// bytes after it back to be scanned afresh. `Some(true)`: the chunk ends
    /// here; `Some(false)`: go on; `None`: nothing taken, the record's start
    /// was not seen (it began more than a block back in a record the check
    /// could not follow), so the scanner's step stands.
    fn take_spanning(&mut self, cut: &mut Cut, start: (u64, u64, u64), target: u64) -> io::Result<Option<bool>> {
        let Some((from, mut walk)) = self.find_spanning(start.0 + cut.len) else { return Ok(None) };
        if from > 0 {
            let step = self.scanner.scan(&self.block[self.block_pos..][..from], false);
            self.take_block_step(cut, start.0, step);
            if cut.len >= target {
                return Ok(Some(true));
            }
        }
        let (held, walked) = self.hold_record(&mut walk)?;
        if walked == Walked::More && walk.len > self.cfg.max_record {
            // Too long to hold: the usual runaway, from the record's start.
            cut.take(&held);
            self.lines += walk.lines;
            self.cut_runaway(cut, start)?;
            return Ok(Some(true));
        }
        let in_chunk = start.0 + cut.len - self.record_start.0;
        let Some(first) = walk.first_line.filter(|&first| walk.doomed() && first > in_chunk) else {
            let step = self.scanner.scan(&held, false);
            self.take_scanned(cut, start.0, &held, step);
            return Ok(Some(false));
        };
        let keep = (first - in_chunk) as usize;
        cut.take(&held[..keep]);
        cut.records += 1;
        self.lines += 1;
        let expected = self.cfg.shape.map_or(0, |s| s.fields);
        cut.runaway = Some(Runaway {
            offset: self.record_start.0 - start.0,
            lines_before: self.record_start.1 - start.1,
            kind: RunawayKind::OpenQuote { fields: walk.fields, expected, lines: walk.lines, closed: !walk.in_quote() },
        });
        self.give_back(&held[keep..]);
        self.scanner = self.fresh_scanner();
        Ok(Some(true))
    }

    /// Where in the unscanned block the first record with a line end inside
    /// quotes starts, and the counter at its start (carried in when it began
    /// before the block's next byte, at `here`). The scanner finds it a
    /// record at a time, at its own speed: only that record is counted.
    fn find_spanning(&self, here: u64) -> Option<(usize, FieldCounter)> {
        let avail = &self.block[self.block_pos..self.block_len];
        let (mut scanner, mut from) = (self.scanner.clone(), 0);
        loop {
            let step = scanner.scan(&avail[from..], true);
            if step.newlines > step.records {
                break;
            }
            if step.records == 0 {
                return None;
            }
            from += step.consumed;
        }
        match from {
            0 => self.counter_at(here),
            _ => self.counter.as_ref().map(FieldCounter::fresh),
        }
        .map(|walk| (from, walk))
    }

    /// Reads the record at the block's next byte, counting its fields, to
    /// its end, until it is found doomed, past `max_record` or to the end of
    /// the input (`Walked::More` for these two); returns its bytes, held out
    /// of the chunk, and where the walk stopped.
    fn hold_record(&mut self, walk: &mut FieldCounter) -> io::Result<(Vec<u8>, Walked)> {
        let mut held = Vec::new();
        loop {
            if self.block_pos == self.block_len && !self.fill()? {
                return Ok((held, Walked::More));
            }
            let avail = &self.block[self.block_pos..self.block_len];
            let walked = walk.walk(avail);
            let n = match walked {
                Walked::Ended(n) | Walked::TooManyFields(n) => n,
                Walked::More => avail.len(),
            };
            held.extend_from_slice(&avail[..n]);
            self.block_pos += n;
            if walked != Walked::More || walk.len > self.cfg.max_record {
                return Ok((held, walked));
            }
        }
    }

    /// The open-quote counter for the record in progress, walked over its
    /// bytes up to `here` (the block's next byte); `None` without a check,
    /// or when that record began before the block and was not carried.
    fn counter_at(&self, here: u64) -> Option<FieldCounter> {
        let fresh = self.counter.as_ref()?.fresh();
        let record = self.record_start.0;
        let block_start = here - self.block_pos as u64;
        let mut walk = match &self.carry {
            _ if record >= block_start => fresh,
            Some((carried, counter)) if *carried == record => counter.clone(),
            _ => return None,
        };
        let from = record.saturating_sub(block_start) as usize;
        (walk.walk(&self.block[from..self.block_pos]) == Walked::More).then_some(walk)
    }

    /// Before the block is read over: the field count of the record in
    /// progress so far, for the open-quote check in the next block.
    fn carry_record(&mut self, here: u64) {
        if self.counter.is_some() {
            self.carry = match self.scanner.at_record_start() {
                true => None,
                false => self.counter_at(here).map(|walk| (self.record_start.0, walk)),
            };
        }
    }

    /// Puts bytes back in front of the unread input.
    fn give_back(&mut self, bytes: &[u8]) {
        let mut replay = bytes.to_vec();
        replay.extend_from_slice(&self.block[self.block_pos..self.block_len]);
        replay.extend_from_slice(&self.replay[self.replay_pos..]);
        (self.replay, self.replay_pos) = (replay, 0);
        self.block_pos = self.block_len;
    }

    /// Every byte of the input was scanned: the reader's and any given back.
    fn drained(&self) -> bool {
        self.eof && self.block_pos == self.block_len && self.replay_pos == self.replay.len()
    }

    /// The current record has outgrown `max_record` (usually a quote left
    /// open): it runs to the next raw line end, however far, and becomes one
    /// rejected record; scanning starts afresh after it, so the rest of the
    /// input still loads. Its bytes past those already held are skipped,
    /// not kept, so memory stays bounded. Why to the line end: it was cut
    /// at another `max_record` bytes before, and scanning went on inside
    /// the line (a line of 300 MB was rejected as two records, and its last
    /// 31 MB were sent to the server as a record of their own).
    fn cut_runaway(&mut self, cut: &mut Cut, start: (u64, u64, u64)) -> io::Result<()> {
        let runaway = Runaway {
            offset: self.record_start.0 - start.0,
            lines_before: self.record_start.1 - start.1,
            kind: RunawayKind::TooLong,
        };
        loop {
            if self.block_pos == self.block_len && !self.fill()? {
                break;
            }
            let avail = &self.block[self.block_pos..self.block_len];
            let newline = memchr::memchr(self.line_end.byte(), avail);
            let take = newline.map_or(avail.len(), |i| i + 1);
            cut.skip(&avail[..take]);
            self.block_pos += take;
            if newline.is_some() {
                self.lines += 1;
                break;
            }
        }
        cut.records += 1;
        cut.runaway = Some(runaway);
        self.scanner = self.fresh_scanner();
        Ok(())
    }

    /// On-disk bytes since the previous chunk; the last chunk takes whatever
    /// is left of the known size, so spans add up to the file size.
    fn take_span(&mut self) -> u64 {
        let consumed = match &self.raw {
            Some((counter, _)) => counter.get(),
            None => self.offset,
        };
        let at_end = self.drained();
        let upto = match (at_end, self.total_size) {
            (true, Some(size)) => size,
            _ => consumed,
        };
        let span = upto.saturating_sub(self.span_emitted);
        self.span_emitted = upto.max(self.span_emitted);
        span
    }

    fn skip_preamble(&mut self) -> io::Result<()> {
        let mut pre = Preamble::default();
        if self.start.is_some() {
            self.decide_line_end()?;
            if let Some(header) = self.header_above.take() {
                self.watch_for(&header);
            }
            self.preamble = Some(pre);
            return Ok(());
        }
        while self.block_len - self.block_pos < 3 && self.fill_more()? {}
        if self.block[self.block_pos..self.block_len].starts_with(BYTE_ORDER_MARK) {
            self.block_pos += 3;
            self.offset += 3;
            pre.bom = true;
        }
        self.decide_line_end()?;
        if self.cfg.skip_lines > 0 {
            pre.skipped_lines = self.skip_lines()?;
            // The lines skipped may end otherwise than the data (a title
            // written by another tool): the data's first line end decides.
            self.decide_line_end()?;
        }
        let before_header = (self.offset, self.lines);
        if self.cfg.header {
            loop {
                if self.block_pos == self.block_len && !self.fill()? {
                    break;
                }
                let step = self.scanner.scan(&self.block[self.block_pos..self.block_len], true);
                let room = HEADER_KEPT.saturating_sub(pre.header.len());
                pre.header.extend_from_slice(&self.block[self.block_pos..][..step.consumed.min(room)]);
                self.block_pos += step.consumed;
                self.offset += step.consumed as u64;
                self.lines += step.newlines;
                if step.records == 1 {
                    pre.header_ended = true;
                    break;
                }
            }
            pre.header_records = u64::from(self.offset > before_header.0);
            pre.header_lines = self.lines - before_header.1;
            let line_end = pre.header.iter().rev().take_while(|&&b| b == b'\n' || b == b'\r').count();
            pre.header.truncate(pre.header.len() - line_end);
            self.scanner = self.fresh_scanner();
            self.watch_for(&pre);
        }
        self.preamble = Some(pre);
        Ok(())
    }

    /// Skips `--skip-lines` lines, each to its line end (`\n`, or `\r`
    /// where the first line ends with a bare one), whatever quotes they
    /// hold; returns how many there were (fewer where the input ends first,
    /// a last line without a line end counted).
    fn skip_lines(&mut self) -> io::Result<u64> {
        let head = &self.block[self.block_pos..self.block_len];
        let line_end = skipped_line_end(head, self.eof);
        let (mut skipped, mut in_line) = (0, false);
        while skipped < self.cfg.skip_lines {
            if self.block_pos == self.block_len && !self.fill()? {
                self.lines += skipped;
                return Ok(skipped + u64::from(in_line));
            }
            let unread = &self.block[self.block_pos..self.block_len];
            let taken = match memchr::memchr(line_end, unread) {
                Some(at) => {
                    (skipped, in_line) = (skipped + 1, false);
                    at + 1
                }
                None => {
                    in_line = true;
                    unread.len()
                }
            };
            self.block_pos += taken;
            self.offset += taken as u64;
        }
        self.lines += skipped;
        Ok(skipped)
    }

    /// Reads ahead until the input's first line end shows its style (or the
    /// block is full, or the input ends) and scans with it from here on.
    fn decide_line_end(&mut self) -> io::Result<()> {
        if let Some(line_end) = self.read_until_the_line_end_shows(self.cfg.dialect)? {
            self.line_end = line_end;
        }
        self.scanner = self.fresh_scanner();
        self.counter = self.cfg.shape.and_then(|shape| FieldCounter::new(self.cfg.dialect, self.line_end, shape));
        Ok(())
    }

    /// The style of the input's first line end as `dialect` reads it (see
    /// [`line_end_of`]), reading ahead until it shows; `None` when the block
    /// fills or the input ends first. A `\r` last in what was read is a
    /// line end of its own only once the input is known to end there, and a
    /// bare one is told from one inside a line by what follows it: read on
    /// (a read of nothing tells), then look again.
    fn read_until_the_line_end_shows(&mut self, dialect: Dialect) -> io::Result<Option<LineEnd>> {
        loop {
            let head = &self.block[self.block_pos..self.block_len];
            if let Some(line_end) = line_end_of(dialect, head, self.eof) {
                return Ok(Some(line_end));
            }
            let block_full = self.block_pos == 0 && self.block_len == self.block.len();
            if block_full || self.eof {
                return Ok(None);
            }
            self.fill_more()?;
        }
    }

    fn fresh_scanner(&self) -> RecordScanner {
        RecordScanner::new(self.cfg.dialect, self.line_end)
    }

    /// Refills an exhausted block; false at end of input.
    fn fill(&mut self) -> io::Result<bool> {
        self.block_pos = 0;
        self.block_len = 0;
        self.fill_more()
    }

    /// Appends more input after the unread bytes; false at end of input.
    fn fill_more(&mut self) -> io::Result<bool> {
        if self.block_pos > 0 {
            self.block.copy_within(self.block_pos..self.block_len, 0);
            self.block_len -= self.block_pos;
            self.block_pos = 0;
        }
        if self.replay_pos < self.replay.len() {
            let n = (self.block.len() - self.block_len).min(self.replay.len() - self.replay_pos);
            self.block[self.block_len..][..n].copy_from_slice(&self.replay[self.replay_pos..][..n]);
            self.block_len += n;
            self.replay_pos += n;
            if self.replay_pos == self.replay.len() {
                (self.replay, self.replay_pos) = (Vec::new(), 0);
            }
            return Ok(true);
        }
        if self.eof {
            return Ok(false);
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
    /// Line ends in the chunk before the record's first byte.
    pub lines_before: u64,
    /// Offset of the record's first byte within the chunk.
    pub byte: u64,
}

/// Finds the record the server means by `COPY t, line N` in a chunk's stream,
/// using the same scanner that cut the chunk. In text the server counts
/// records. In CSV it also counts line ends inside quoted fields, with a quirk
/// copied here: the line-end style is fixed at the stream's first record end,
/// and until then a quoted `\r` (not `\n`) is what counts, so the first
/// record of an LF file counts none of its quoted newlines. In a CR input
/// quoted `\r`s count throughout.
pub fn locate_server_line(dialect: Dialect, line_end: LineEnd, chunk: &[u8], server_line: u64) -> RecordInChunk {
    let mut scanner = RecordScanner::new(dialect, line_end);
    let mut found = RecordInChunk { index: 0, lines_before: 0, byte: 0 };
    let (mut pos, mut index, mut lines, mut server_lines) = (0usize, 0u64, 0u64, 0u64);
    let mut crlf = None;
    while pos < chunk.len() {
        let step = scanner.scan(&chunk[pos..], true);
        let record = &chunk[pos..pos + step.consumed];
        let ends_crlf = record.ends_with(b"\r\n");
        let embedded = if !dialect.server_counts_embedded_newlines() {
            0
        } else if line_end == LineEnd::Cr {
            step.newlines - step.records
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
    use crate::format::scan::{reference_record_ends, reference_record_ends_checked};
    use proptest::prelude::*;

    const CSV: Dialect = Dialect::Csv { quote: b'"', escape: b'"' };

    fn config(dialect: Dialect, target: u64, header: bool) -> ChunkerConfig {
        ChunkerConfig {
            dialect,
            target,
            skip_lines: 0,
            header,
            keep_bytes: true,
            max_record: 1 << 20,
            shape: None,
            record_cap: None,
        }
    }

    use crate::test_support::Trickle;

    fn chunks_of(input: &[u8], cfg: ChunkerConfig, piece: usize) -> Vec<Chunk> {
        let mut chunker = Chunker::new(Trickle { data: input, piece }, cfg, 0, 0);
        let mut out = Vec::new();
        while let Some(c) = chunker.next_chunk().unwrap() {
            out.push(c);
        }
        out
    }

    #[test]
    fn a_small_files_kept_chunk_reserves_only_the_file() {
        // A 1 MiB reserve per file cost an mmap and munmap for each of a
        // glob's small files.
        let input = b"a\nb\nc\n";
        let cfg = config(Dialect::Lines, 1 << 20, false);
        let mut chunker = Chunker::new(&input[..], cfg.clone(), 0, 0).with_total_size(Some(input.len() as u64));
        let chunk = chunker.next_chunk().unwrap().unwrap();
        assert_eq!(chunk.data.as_deref(), Some(&input[..]));
        assert!(chunk.data.unwrap().capacity() <= input.len() + 1);
        // A stream's size is unknown: the chunk reserves the target.
        let mut stream = Chunker::new(&input[..], cfg, 0, 0);
        assert!(stream.next_chunk().unwrap().unwrap().data.unwrap().capacity() >= 1 << 20);
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

    /// `--skip-lines`: lines, whatever quotes they hold, each to its line
    /// end (a bare `\r` where the first ends so), before the header; the
    /// chunks keep the file's line numbers and byte places.
    #[test]
    fn lines_skipped_are_lines_and_keep_their_numbers() {
        let skipping = |lines, header| ChunkerConfig { skip_lines: lines, ..config(CSV, 4, header) };
        let input = b"\xEF\xBB\xBFTitle \"open\nnotes, 2\nid,name\n1,\"a\nb\"\n2,c\n";
        let chunks = chunks_of(input, skipping(2, true), 3);
        let data: Vec<&[u8]> = chunks.iter().map(|c| c.data.as_deref().unwrap()).collect();
        assert_eq!(data, [&b"1,\"a\nb\"\n"[..], b"2,c\n"]);
        let lines: Vec<u64> = chunks.iter().map(|c| c.loc.first_line).collect();
        assert_eq!((lines, chunks[0].loc.first_record), (vec![4, 6], 1));
        assert_eq!(chunks[0].loc.byte_offset, 3 + 12 + 9 + 8);
        let mut chunker = Chunker::new(&input[..], skipping(2, true), 0, 0);
        let preamble = chunker.read_preamble().unwrap();
        assert_eq!(
            (preamble.bom, preamble.skipped_lines, preamble.header_records, preamble.header_lines),
            (true, 2, 1, 1)
        );
        assert_eq!(preamble.header, b"id,name");

        let bare_returns = b"title\r1,a\r2,b\r";
        let data: Vec<Vec<u8>> =
            chunks_of(bare_returns, skipping(1, false), 3).into_iter().map(|c| c.data.unwrap()).collect();
        assert_eq!(data, [b"1,a\r".to_vec(), b"2,b\r".to_vec()]);
        // Fewer lines than asked, the last without a line end: all skipped.
        let mut chunker = Chunker::new(&b"a\nb"[..], skipping(5, true), 0, 0);
        assert!(chunker.next_chunk().unwrap().is_none());
        assert_eq!((chunker.preamble().skipped_lines, chunker.preamble().header_records), (2, 0));
    }

    /// `--limit`: the chunks end at the cap's record, whatever the target,
    /// the pieces the input comes in, and the records that span lines
    /// (checked for open quotes, or not); nothing after it is cut.
    #[test]
    fn a_record_cap_ends_the_last_chunk_at_its_record() {
        let input = b"1,a\n2,\"b\nc\"\n3,d\n4,\"e\nf\"\n5,g\n";
        let ends = [0, 4, 12, 16, 24, 28];
        for (cap, target, piece, shape) in [
            (1, 64, 3, None),
            (2, 64, 1, Some(2)),
            (3, 4, 2, None),
            (4, 64, 5, Some(2)),
            (5, 64, 64, None),
            (9, 8, 3, Some(2)),
        ] {
            let shape = shape.map(|fields| RecordShape { delimiter: b',', fields });
            let cfg = ChunkerConfig { record_cap: Some(cap), shape, ..config(CSV, target, false) };
            let chunks = chunks_of(input, cfg, piece);
            let data: Vec<u8> = chunks.iter().flat_map(|c| c.data.clone().unwrap()).collect();
            let records: u64 = chunks.iter().map(|c| c.records).sum();
            let want = ends[(cap as usize).min(5)];
            assert_eq!((records, &data[..]), (cap.min(5), &input[..want]), "cap {cap}, target {target}, piece {piece}");
        }
    }

    /// Read from the middle (a file an earlier job loaded the first part
    /// of): the first line is data, not a header, and the chunks keep their
    /// places and numbers in the file.
    #[test]
    fn an_input_read_from_its_middle_keeps_the_files_places_and_numbers() {
        let rest = b"3,\"c\nd\"\n4,e\n";
        let start = Start { byte: 100, lines: 7, records: 5, by_lines: false };
        let mut chunker = Chunker::new(&rest[..], config(CSV, 4, true), 0, 0).starting_at(Some(start));
        let first = chunker.next_chunk().unwrap().unwrap();
        let second = chunker.next_chunk().unwrap().unwrap();
        assert_eq!(first.data.as_deref(), Some(&b"3,\"c\nd\"\n"[..]));
        assert_eq!((first.loc.byte_offset, first.loc.first_line, first.loc.first_record), (100, 8, 6));
        assert_eq!((second.loc.byte_offset, second.loc.first_line, second.loc.first_record), (108, 10, 7));
        assert_eq!(chunker.preamble().header_lines, 0);
        assert_eq!(chunker.totals(), (2, 3), "what it read, without what came before");
    }

    #[test]
    fn a_known_size_tapers_the_tail_deterministically() {
        let line = [b'x'; 63].iter().copied().chain([b'\n']).collect::<Vec<u8>>();
        let input = line.repeat(40 << 14); // 40 MiB
        let target = 8 << 20;
        let cut = |piece: usize, size: Option<u64>| {
            let cfg = ChunkerConfig { keep_bytes: false, ..config(Dialect::Lines, target, false) };
            let mut chunker = Chunker::new(Trickle { data: &input, piece }, cfg, 0, 0).tapered(size);
            std::iter::from_fn(|| chunker.next_chunk().unwrap()).map(|c| c.loc).collect::<Vec<_>>()
        };
        let tapered = cut(1 << 20, Some(input.len() as u64));
        assert_eq!(tapered, cut(4099, Some(input.len() as u64)), "the cut depends on the read sizes");
        let lens: Vec<u64> = tapered.iter().map(|l| l.byte_len).collect();
        assert!(tapered.windows(2).all(|w| w[0].byte_offset + w[0].byte_len == w[1].byte_offset));
        assert_eq!(lens.iter().sum::<u64>(), input.len() as u64);
        assert!(lens[..2].iter().all(|&l| l >= target), "{lens:?}");
        assert!(lens.windows(2).all(|w| w[1] <= w[0]), "chunks grow toward the end: {lens:?}");
        let body = &lens[..lens.len() - 1];
        assert!(body.iter().all(|&l| l >= MIN_TAPERED), "{lens:?}");
        assert!(body.last().is_some_and(|&l| l < target / 4), "{lens:?}");
        let plain: Vec<u64> = cut(1 << 20, None).iter().map(|l| l.byte_len).collect();
        assert_eq!(plain.len(), 5, "an unknown size keeps full chunks: {plain:?}");
        let more_to_come: Vec<u64> = cut(1 << 20, Some(10 * input.len() as u64)).iter().map(|l| l.byte_len).collect();
        assert_eq!(more_to_come, plain, "a file far from the load's end keeps full chunks");
    }

    #[test]
    fn the_load_opens_with_chunks_doubling_from_a_mebibyte() {
        let line = [b'x'; 63].iter().copied().chain([b'\n']).collect::<Vec<u8>>();
        let input = line.repeat(40 << 14); // 40 MiB
        let target = 8 << 20;
        let cut = |piece: usize, opens: bool| {
            let cfg = ChunkerConfig { keep_bytes: false, ..config(Dialect::Lines, target, false) };
            let mut chunker = Chunker::new(Trickle { data: &input, piece }, cfg, 0, 0).opening_the_load(opens);
            std::iter::from_fn(|| chunker.next_chunk().unwrap()).map(|c| c.loc.byte_len).collect::<Vec<_>>()
        };
        let opening = cut(1 << 20, true);
        assert_eq!(opening, cut(4099, true), "the cut depends on the read sizes");
        let mib = |l: &u64| l.div_ceil(1 << 20);
        assert_eq!(opening.iter().map(mib).collect::<Vec<_>>(), [1, 1, 2, 4, 8, 8, 8, 8], "{opening:?}");
        assert_eq!(opening.iter().sum::<u64>(), input.len() as u64);
        assert!(cut(1 << 20, false).iter().all(|&l| l == target), "later inputs keep full chunks");
    }

    #[test]
    fn last_record_without_newline_counts() {
        let chunks = chunks_of(b"a\nb", config(Dialect::Lines, 1, false), 1);
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[1].records, 1);
        assert_eq!(chunks.iter().map(|c| c.records).sum::<u64>(), 2);
    }

    /// The last chunk without the record its input ends inside (a line being
    /// written) is the chunk the input without that record gives: the same
    /// bytes, records, hash and samples, read again from the file or cut
    /// from the bytes it holds, and the input's records count one fewer.
    #[test]
    fn a_chunk_without_its_cut_record_is_the_chunk_of_the_input_without_it() {
        const CSV: Dialect = Dialect::Csv { quote: b'"', escape: b'"' };
        let whole: Vec<u8> = (0..5000).flat_map(|i| format!("{i},\"n\n{i}\"\n").into_bytes()).collect();
        for (cut, keep_bytes) in [(&b"5000,\"n\n50"[..], false), (b"5000,n50", true), (b"5000,\"n", true)] {
            let cfg = ChunkerConfig { keep_bytes, ..config(CSV, 16 << 10, false) };
            let written = [&whole[..], cut].concat();
            let mut chunker = Chunker::new(&written[..], cfg.clone(), 0, 0);
            let mut chunks = Vec::new();
            while let Some(c) = chunker.next_chunk().unwrap() {
                chunks.push(c);
            }
            let last = chunks.pop().unwrap();
            assert!(last.unterminated);
            assert_eq!(chunker.cut_record_start(), Some((whole.len() as u64, 10_001)));
            let file = &written[last.loc.byte_offset as usize..];
            let kept = chunker.without_its_cut_record(last, file).unwrap().unwrap();
            assert_eq!(chunker.totals().0, 5000);
            let expected = chunks_of(&whole, cfg, 7).pop().unwrap();
            assert_eq!((kept.loc, kept.records, kept.data), (expected.loc, expected.records, expected.data));
            assert_eq!((kept.content_hash, kept.line_samples), (expected.content_hash, expected.line_samples));
            assert!(!kept.unterminated);
        }
        // A chunk that held only that record is none.
        let mut chunker = Chunker::new(&b"a\nb"[..], config(Dialect::Lines, 1, false), 0, 0);
        let (_, last) = (chunker.next_chunk().unwrap().unwrap(), chunker.next_chunk().unwrap().unwrap());
        assert!(chunker.without_its_cut_record(last, &b"b"[..]).unwrap().is_none());
        assert_eq!(chunker.totals().0, 1);
    }

    /// Only a chunk that ends its input inside a record is unterminated: one
    /// whose data ends at a line end outside quotes may be followed by
    /// another input's records in one COPY.
    #[test]
    fn a_chunk_is_unterminated_only_when_its_input_ends_inside_a_record() {
        const CSV: Dialect = Dialect::Csv { quote: b'"', escape: b'"' };
        let unterminated = |input: &[u8], dialect| -> Vec<bool> {
            chunks_of(input, config(dialect, 1, false), 1).iter().map(|c| c.unterminated).collect()
        };
        assert_eq!(unterminated(b"a\nb\n", Dialect::Lines), [false, false]);
        assert_eq!(unterminated(b"a\nb", Dialect::Lines), [false, true]);
        assert_eq!(unterminated(b"a\n\"b\n", CSV), [false, true], "a quote left open at the end");
        assert_eq!(unterminated(b"a\n\"b\nc\"\n", CSV), [false, false]);
    }

    /// A `\r` that is the input's last byte ends its one line: seen one byte
    /// a read, the end of the input comes after it (found by the property
    /// test below, which took it for `\n`).
    #[test]
    fn a_carriage_return_last_in_the_input_is_its_line_end_whatever_the_reads() {
        for piece in [1, 2, 1 << 20] {
            let chunks = chunks_of(b"a\t\r", config(Dialect::Lines, 1, false), piece);
            assert_eq!(chunks.iter().map(|c| c.line_end).collect::<Vec<_>>(), [LineEnd::Cr], "reads of {piece}");
        }
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

    /// With a header, a record that repeats it (files joined with `cat`,
    /// with a byte-order mark and CR LF or not, the last without a line end)
    /// ends its chunk as a rejected record; one inside a quoted value, or
    /// with more after it, is a record like any. The same whatever the reads.
    #[test]
    fn a_record_that_repeats_the_header_ends_its_chunk_as_a_reject() {
        let input = b"id,name\n1,a\nid,name\n2,\"x\nid,name\ny\"\nid,name2\n\xEF\xBB\xBFid,name\r\n3,c\nid,name";
        for piece in [1, 2, 3, 5, 7, 64, 1 << 20] {
            let chunks = chunks_of(input, config(CSV, 1 << 20, true), piece);
            let cut: Vec<_> = chunks
                .iter()
                .map(|c| {
                    let data = c.data.as_deref().unwrap();
                    let runaway = c.runaway.filter(|r| r.kind == RunawayKind::RepeatedHeader);
                    let held = runaway.map(|r| String::from_utf8_lossy(&data[r.offset as usize..]).into_owned());
                    let copied = String::from_utf8_lossy(&data[..c.copy_len() as usize]).into_owned();
                    (copied, held, runaway.map(|r| c.loc.first_line + r.lines_before), c.records)
                })
                .collect();
            let held = |text: &str| Some(text.to_string());
            let expected = [
                ("1,a\n".to_string(), held("id,name\n"), Some(3), 2),
                ("2,\"x\nid,name\ny\"\nid,name2\n".to_string(), held("\u{feff}id,name\r\n"), Some(8), 3),
                ("3,c\n".to_string(), held("id,name"), Some(10), 2),
            ];
            assert_eq!(cut, expected, "read {piece} bytes at a time");
        }
        let text = b"id\tname\r\n1\ta\r\nid\tname\r\n2\tb\\\nid\tname\r\n";
        let chunks = chunks_of(text, config(Dialect::Text, 1 << 20, true), 3);
        let ends: Vec<_> = chunks.iter().map(|c| (c.copy_len(), c.runaway.map(|r| r.kind))).collect();
        assert_eq!(ends, [(5, Some(RunawayKind::RepeatedHeader)), (14, None)], "an escaped line end ends no record");
        let unwatched = chunks_of(input, config(CSV, 1 << 20, false), 7);
        assert!(unwatched.iter().all(|c| c.runaway.is_none()), "without a header nothing repeats it");
    }

    /// Repeated headers cut the same chunks whatever the reads, with the
    /// target's cuts between them.
    #[test]
    fn repeated_headers_cut_deterministically() {
        let input: Vec<u8> = (0..600)
            .flat_map(|i| if i % 37 == 0 { b"id,note\n".to_vec() } else { format!("{i},\"x\n{i}\"\n").into_bytes() })
            .collect();
        let a = chunks_of(&input, config(CSV, 97, true), 1 << 20);
        for piece in [1, 6, 7, 8, 9, 100] {
            let b = chunks_of(&input, config(CSV, 97, true), piece);
            let cuts = |v: &[Chunk]| v.iter().map(|c| (c.loc.clone(), c.runaway)).collect::<Vec<_>>();
            assert_eq!(cuts(&a), cuts(&b), "read {piece} bytes at a time");
        }
        let repeats = a.iter().filter(|c| c.runaway.is_some_and(|r| r.kind == RunawayKind::RepeatedHeader)).count();
        assert_eq!(repeats, 600 / 37, "each repeat but the first line, which is the header");
        assert_eq!(a.iter().map(|c| c.records).sum::<u64>(), 599);
    }

    #[test]
    fn runaway_record_ends_at_the_next_newline_and_scanning_resumes() {
        let input = [&b"1,a\n2,\"never closed\n"[..], &b"more\n".repeat(100), b"3,b\n"].concat();
        for keep in [true, false] {
            let cfg = ChunkerConfig { max_record: 64, keep_bytes: keep, ..config(CSV, 1 << 20, false) };
            let chunks = chunks_of(&input, cfg, 7);
            let runaway = chunks[0].runaway.expect("the open quote makes a runaway record");
            assert_eq!((runaway.offset, runaway.lines_before), (4, 1));
            let end = chunks[0].loc.byte_len as usize;
            assert_eq!(input[end - 1], b'\n', "the runaway span ends at a newline");
            // Checked after each read (7 bytes here), then on to the end of the line (5).
            assert!(end - 4 > 64 && end - 4 <= 64 + 7 + 5, "runaway of {} bytes", end - 4);
            assert_eq!(chunks[0].copy_len(), 4);
            assert_eq!(chunks[0].records, 2, "one good record and the runaway");
            let total: u64 = chunks.iter().map(|c| c.records).sum();
            let rest_lines = input[end..].iter().filter(|&&b| b == b'\n').count() as u64;
            assert_eq!(total, 2 + rest_lines, "after the runaway every line is a record again");
            assert_eq!(chunks[1].loc.first_line, 1 + input[..end].iter().filter(|&&b| b == b'\n').count() as u64);
        }
        // A line many times the limit is one runaway however long, its
        // bytes past the limit not kept; the next line is the next record.
        let long = [&b"1,a\n2,"[..], &b"x".repeat(1_000), b"\n3,b\n"].concat();
        for keep in [true, false] {
            let cfg = ChunkerConfig { max_record: 64, keep_bytes: keep, ..config(CSV, 1 << 20, false) };
            let chunks = chunks_of(&long, cfg, 7);
            assert_eq!(chunks.iter().map(|c| c.records).sum::<u64>(), 3, "1,a, the long line and 3,b");
            assert_eq!(chunks[0].loc.byte_len, long.len() as u64 - 4, "the runaway's span runs to its line end");
            assert_eq!(chunks[1].loc.first_line, 3);
            if keep {
                assert!(chunks[0].data_len() <= 4 + 64 + 7, "kept: {}", chunks[0].data_len());
            }
        }
    }

    fn shaped(fields: u64, target: u64) -> ChunkerConfig {
        ChunkerConfig { shape: Some(RecordShape { delimiter: b',', fields }), ..config(CSV, target, false) }
    }

    /// The records each chunk holds, as text; a cut-off line in brackets.
    fn records_by_chunk(chunks: &[Chunk]) -> Vec<String> {
        let mut out = Vec::new();
        for c in chunks {
            let data = c.data.as_deref().unwrap();
            let copied = &data[..c.copy_len() as usize];
            let ends = reference_record_ends(CSV, LineEnd::Lf, copied);
            let mut from = 0;
            for end in
                ends.iter().copied().chain((copied.len() > ends.last().copied().unwrap_or(0)).then_some(copied.len()))
            {
                out.push(String::from_utf8_lossy(&copied[from..end]).into_owned());
                from = end;
            }
            if c.runaway.is_some() {
                out.push(format!("[{}]", String::from_utf8_lossy(&data[c.copy_len() as usize..])));
            }
        }
        out
    }

    /// A quote left open on one line (`12" screen`) made the server join
    /// lines up to the next quote and read every quoted field after it
    /// inside out: a 2 M-line file gave 0 rows. Now that line alone is cut
    /// off (its record would span lines with the wrong field count), and
    /// the lines after it are records again, whatever the chunk and read
    /// sizes; a quoted field that spans lines with the right count stays.
    #[test]
    fn a_quote_left_open_costs_its_line_only() {
        let input = b"1,\"a\nb\"\n2,12\" screen\n3,c\n4,\"d, e\"\n5,\"f\"\n";
        for (target, piece) in [(1 << 20, 1 << 20), (1, 1), (5, 3), (12, 7)] {
            let chunks = chunks_of(input, shaped(2, target), piece);
            let records = records_by_chunk(&chunks);
            assert_eq!(
                records,
                ["1,\"a\nb\"\n", "[2,12\" screen\n]", "3,c\n", "4,\"d, e\"\n", "5,\"f\"\n"],
                "target {target}, reads of {piece}"
            );
            let cut = chunks.iter().find(|c| c.runaway.is_some()).unwrap();
            let Some(Runaway { kind: RunawayKind::OpenQuote { lines, closed, .. }, .. }) = cut.runaway else {
                panic!("{:?}", cut.runaway)
            };
            assert!(closed && lines >= 1);
            assert_eq!(cut.loc.first_line + cut.runaway.unwrap().lines_before, 3, "the open quote's line");
            assert_eq!(chunks.iter().map(|c| c.records).sum::<u64>(), 5);
            let joined: Vec<u8> = chunks.iter().flat_map(|c| c.data.clone().unwrap()).collect();
            assert_eq!(joined, input);
        }
        // Without a shape (the check off) the server's reading stands.
        let unchecked = records_by_chunk(&chunks_of(input, config(CSV, 1 << 20, false), 1 << 20));
        assert_eq!(unchecked.len(), 2, "{unchecked:?}");
    }

    /// A record whose quoted field holds a line end on purpose (its quotes
    /// where quoted fields put them) is one record whatever its field count:
    /// the server rejects it whole, with its own reason. Cut after its first
    /// line, its other lines were read as records and rejected as well.
    #[test]
    fn a_record_with_its_quotes_in_place_is_one_record_whatever_its_fields() {
        let input = b"1,\"a\nb\",extra\n2,\"c\"\"\nd\"\n3,\"e\nf\"\r\n4,a\"b\nc\",d\n5,k\n";
        for piece in [1, 3, 1 << 20] {
            let chunks = chunks_of(input, shaped(2, 1 << 20), piece);
            assert_eq!(
                records_by_chunk(&chunks),
                // The quote after `a` opens inside a field: a quote left open.
                ["1,\"a\nb\",extra\n", "2,\"c\"\"\nd\"\n", "3,\"e\nf\"\r\n", "[4,a\"b\n]", "[c\",d\n]", "5,k\n"],
                "reads of {piece}"
            );
        }
    }

    #[test]
    fn a_quote_never_closed_costs_its_line_only() {
        let input = b"1,a\n2,\"b\n3,c\n4,d\n";
        for piece in [1, 4, 1 << 20] {
            let chunks = chunks_of(input, shaped(2, 1 << 20), piece);
            assert_eq!(records_by_chunk(&chunks), ["1,a\n", "[2,\"b\n]", "3,c\n", "4,d\n"], "reads of {piece}");
            let kinds: Vec<_> = chunks.iter().filter_map(|c| c.runaway.map(|r| r.kind)).collect();
            assert!(matches!(kinds[..], [RunawayKind::OpenQuote { closed: false, .. }]), "{kinds:?}");
            assert!(!chunks.last().unwrap().unterminated);
        }
        // A record longer than --max-record-size is still a runaway of its
        // own (read a little at a time, past the first line that sets the
        // line end).
        let long = [&b"0,a,b\n1,\"x\n"[..], &b"y\n".repeat(100), b"\",z\n"].concat();
        let cfg = ChunkerConfig { max_record: 64, ..shaped(3, 1 << 20) };
        let chunks = chunks_of(&long, cfg, 16);
        assert_eq!(chunks[0].runaway.map(|r| (r.kind, r.offset)), Some((RunawayKind::TooLong, 6)));
    }

    #[test]
    fn locates_server_lines_with_embedded_newlines() {
        let chunk = b"1,\"a\nb\"\n2,c\n3,\"x\ny\nz\"\n4,d\n";
        // CSV, LF: the first record's quoted newline is not counted (line 1),
        // record 1 is line 2, record 2 ends at line 5, record 3 is line 6.
        let lf = LineEnd::Lf;
        assert_eq!(locate_server_line(CSV, lf, chunk, 1).index, 0);
        let r = locate_server_line(CSV, lf, chunk, 2);
        assert_eq!((r.index, r.lines_before, r.byte), (1, 2, 8));
        assert_eq!(locate_server_line(CSV, lf, chunk, 5).index, 2);
        assert_eq!(locate_server_line(CSV, lf, chunk, 6).index, 3);
        // CSV, CRLF: quoted CRLFs count from the first record on.
        let crlf = b"1,\"a\r\nb\"\r\n2,c\r\n";
        assert_eq!(locate_server_line(CSV, lf, crlf, 3).index, 1);
        // CSV, CR: quoted carriage returns count from the first record on.
        let cr = b"1,\"a\rb\"\r2,c\r3,\"x\ny\"\r4,d\r";
        assert_eq!(locate_server_line(CSV, LineEnd::Cr, cr, 2).index, 0);
        let r = locate_server_line(CSV, LineEnd::Cr, cr, 3);
        assert_eq!((r.index, r.lines_before, r.byte), (1, 2, 8));
        assert_eq!(locate_server_line(CSV, LineEnd::Cr, cr, 5).index, 3, "a quoted \\n is no line");
        // Text: the server counts records.
        let text = b"a\\\nb\nc\nd\n";
        let r = locate_server_line(Dialect::Text, lf, text, 2);
        assert_eq!((r.index, r.lines_before, r.byte), (1, 2, 5));
    }

    /// Random records built from the bytes that matter to the scanners.
    fn record_strategy() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::sample::select(vec![b'a', b',', b'"', b'\\', b'\n', b'\r', b'\t', b'x']), 0..24)
    }

    fn dialect_strategy() -> impl Strategy<Value = Dialect> {
        prop::sample::select(vec![Dialect::Lines, Dialect::Text, CSV, Dialect::Csv { quote: b'"', escape: b'\\' }])
    }

    /// Concatenated chunks equal the input; every boundary is one of the
    /// reference's record `ends`; lines and records are counted as it does.
    fn cut_like_the_reference(
        input: &[u8],
        chunks: &[Chunk],
        ends: &[usize],
        line_end: LineEnd,
    ) -> Result<(), TestCaseError> {
        let joined: Vec<u8> = chunks.iter().flat_map(|c| c.data.clone().unwrap()).collect();
        prop_assert_eq!(&joined[..], input);
        let mut offset = 0u64;
        for (i, c) in chunks.iter().enumerate() {
            prop_assert_eq!(c.loc.byte_offset, offset);
            offset += c.loc.byte_len;
            let last = i + 1 == chunks.len();
            prop_assert!(last || ends.contains(&(offset as usize)), "boundary {} is inside a record", offset);
            let expected_lines =
                1 + input[..c.loc.byte_offset as usize].iter().filter(|&&b| b == line_end.byte()).count() as u64;
            prop_assert_eq!(c.line_end, line_end);
            prop_assert_eq!(c.loc.first_line, expected_lines);
        }
        let counted: u64 = chunks.iter().map(|c| c.records).sum();
        let trailing = u64::from(ends.last().copied().unwrap_or(0) < input.len());
        prop_assert_eq!(counted, ends.len() as u64 + trailing);
        Ok(())
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
            let line_end = line_end_of(dialect, &input, true).unwrap_or_default();
            cut_like_the_reference(&input, &chunks, &reference_record_ends(dialect, line_end, &input), line_end)?;
        }

        /// With the open-quote check, chunks still cover the input and end
        /// where the checked reference ends records, whatever the reads.
        #[test]
        fn checked_chunks_end_where_the_checked_reference_ends_records(
            parts in prop::collection::vec(record_strategy(), 0..40),
            escape in prop::sample::select(vec![b'"', b'\\']),
            fields in 1u64..5,
            target in 1u64..64,
            piece in 1usize..50,
        ) {
            let input: Vec<u8> = parts.concat();
            let dialect = Dialect::Csv { quote: b'"', escape };
            let shape = RecordShape { delimiter: b',', fields };
            let cfg = ChunkerConfig { shape: Some(shape), ..config(dialect, target, false) };
            let chunks = chunks_of(&input, cfg, piece);
            let line_end = line_end_of(dialect, &input, true).unwrap_or_default();
            let ends = reference_record_ends_checked(dialect, line_end, &input, shape);
            cut_like_the_reference(&input, &chunks, &ends, line_end)?;
            for c in chunks.iter().filter(|c| c.runaway.is_some()) {
                let at = (c.loc.byte_offset + c.runaway.unwrap().offset) as usize;
                prop_assert!(at == 0 || ends.contains(&at), "a cut line starts inside a record");
                let end = (c.loc.byte_offset + c.loc.byte_len) as usize;
                prop_assert!(ends.contains(&end), "a cut line ends the chunk at a record end");
            }
        }
    }
}
