//! The record scanner: where does the next record end?
//!
//! BE ADVISED: this scanner decides every chunk boundary. If it disagrees with
//! PostgreSQL's COPY parser about where a record ends, a chunk starts in the
//! middle of a record and the server loads garbage or fails. It therefore copies
//! the state machine of `CopyReadLineText` (src/backend/commands/copyfromparse.c)
//! rather than following a CSV specification:
//!
//! - csv: a newline ends a record unless it is inside quotes. Inside quotes, an
//!   escape byte toggles "last was escape", and a quote that does not follow an
//!   escape toggles the quote state. When the escape equals the quote the server
//!   sets the escape to NUL (so doubled quotes are two toggles), and so do we.
//! - text (PostgreSQL's TSV): a backslash escapes the next byte, newline
//!   included, so `\` + newline is data, not a record end.
//! - lines (JSON lines): every newline ends a record; a raw newline cannot occur
//!   inside a JSON document.
//!
//! ADVICE FOR HACKERS: the scanner never allocates and owns no I/O; the caller
//! feeds it slices in any split and it carries its state across them. The slow
//! byte-at-a-time [`reference_record_ends`] is the specification: the unit and
//! property tests run both in lockstep on random input split at random points.
//! Change both or neither.
//!
//! Line ends: like the server, which takes a COPY stream's line-end style from
//! its first line end, the scanner ends records at `\n` (which also ends a
//! `\r\n`) or, for an input whose first line end is a bare `\r` (classic Mac
//! files, Excel for Mac's "CSV (Macintosh)"), at `\r`; see [`line_end_of`].
//! A line end of the other style inside such an input is data here and an
//! error on the server, which makes its record a reject.
//!
//! Quote-dense CSV (JSON in CSV: twenty quotes a line) cost the byte loop a
//! search per quote, and the chunker most of sluice's CPU on such files. Where
//! the quote is its own escape and the CPU has AVX2, the bulk count takes 64
//! bytes at a time: every quote toggles the state there (the escape is NUL,
//! so a block with a NUL goes to the byte loop), and which line ends are
//! inside quotes comes from the block's quote bits by a prefix XOR.

use memchr::{memchr, memchr2, memchr3};

/// How records end in one of the formats sluice reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// Every `\n` ends a record (JSON lines).
    Lines,
    /// PostgreSQL's text format: `\` escapes the next byte, newline included.
    Text,
    /// PostgreSQL's CSV format with the given quote and escape bytes.
    Csv { quote: u8, escape: u8 },
}

impl Dialect {
    /// Whether the server's `COPY t, line N` counts newlines inside quoted
    /// fields as lines (CSV does; text counts records only).
    pub fn server_counts_embedded_newlines(self) -> bool {
        matches!(self, Dialect::Csv { .. })
    }
}

/// The byte that ends records and lines in one input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LineEnd {
    /// `\n`, alone or after `\r`.
    #[default]
    Lf,
    /// A bare `\r`.
    Cr,
}

impl LineEnd {
    pub fn byte(self) -> u8 {
        match self {
            LineEnd::Lf => b'\n',
            LineEnd::Cr => b'\r',
        }
    }
}

/// The line-end style of an input that starts with `head`: the style of
/// its first line end outside quotes and escapes, a `\r\n` counting as
/// `\n`, as the server takes it for a COPY stream (`CopyReadLineText`);
/// but a bare `\r` first with more line feeds than bare `\r`s after it is
/// a carriage return inside a line of a file of line feeds (taken for the
/// line end, the first line loaded cut short at it, and the rest of the
/// file was one rejected record), told in the first [`LINE_END_WINDOW`]
/// bytes. `None` while `head` cannot tell: no line end yet, a `\r` as its
/// last byte, or a bare `\r` in fewer bytes than that window, when more
/// input may follow (`complete` is false).
pub fn line_end_of(dialect: Dialect, head: &[u8], complete: bool) -> Option<LineEnd> {
    let first = live_bytes(dialect, head).find(|&i| matches!(head[i], b'\r' | b'\n'))?;
    match (head[first], head.get(first + 1)) {
        (b'\r', Some(b)) if *b != b'\n' && !complete && head.len() < LINE_END_WINDOW => None,
        (b'\r', Some(b)) if *b != b'\n' => {
            let window = &head[..head.len().min(LINE_END_WINDOW)];
            Some(if more_line_feeds_than_bare_returns(dialect, window) { LineEnd::Lf } else { LineEnd::Cr })
        }
        _ => first_line_end(head, first, complete),
    }
}

/// The style of the line end at `first`, as the server takes it.
fn first_line_end(head: &[u8], first: usize, complete: bool) -> Option<LineEnd> {
    match (head[first], head.get(first + 1)) {
        (b'\n', _) | (_, Some(b'\n')) => Some(LineEnd::Lf),
        (_, Some(_)) => Some(LineEnd::Cr),
        (_, None) => complete.then_some(LineEnd::Cr),
    }
}

/// How much of an input's start tells a bare `\r` line end from a carriage
/// return inside a line: the same bytes however it is read (less than the
/// chunker's first block).
const LINE_END_WINDOW: usize = 64 << 10;

/// Whether `head` holds more line feeds than carriage returns not followed
/// by one, outside quotes and escapes.
fn more_line_feeds_than_bare_returns(dialect: Dialect, head: &[u8]) -> bool {
    let (mut feeds, mut bare) = (0usize, 0usize);
    for i in live_bytes(dialect, head) {
        match (head[i], head.get(i + 1)) {
            (b'\n', _) => feeds += 1,
            (b'\r', Some(b'\n')) => {}
            (b'\r', _) => bare += 1,
            _ => {}
        }
    }
    feeds > bare
}

/// Whether `record` (of an input whose lines end in line feeds) holds a
/// carriage return not followed by a line feed, outside quotes and escapes:
/// at the head of a COPY, the server takes it for the line end.
pub fn holds_a_bare_return(dialect: Dialect, record: &[u8]) -> bool {
    memchr::memchr(b'\r', record).is_some()
        && live_bytes(dialect, record).any(|i| record[i] == b'\r' && record.get(i + 1) != Some(&b'\n'))
}

/// The byte that ends each line `--skip-lines` skips in an input that
/// begins with `head`: a `\n`, or a bare `\r` where the first line ends so.
/// Lines, not records: quotes and escapes there mean nothing. The chunker
/// and the load's looks at an input's start both skip by it.
pub fn skipped_line_end(head: &[u8], complete: bool) -> u8 {
    let first = live_bytes(Dialect::Lines, head).find(|&i| matches!(head[i], b'\r' | b'\n'));
    first.and_then(|first| first_line_end(head, first, complete)).unwrap_or_default().byte()
}

/// What one call to [`RecordScanner::scan`] saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// Bytes consumed from the slice.
    pub consumed: usize,
    /// Records that ended (their terminating newline was consumed).
    pub records: u64,
    /// Line-end bytes (`\n`, or `\r` in a [`LineEnd::Cr`] input) consumed,
    /// inside records or ending them.
    pub newlines: u64,
    /// Offset just past the last record end in the slice (when `records > 0`).
    pub last_end: usize,
}

/// PostgreSQL's quote and escape state inside a CSV record.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct QuoteState {
    /// Inside a quoted field.
    pub(crate) in_quote: bool,
    /// The previous byte was an escape inside quotes.
    last_was_esc: bool,
}

impl QuoteState {
    /// The step for bytes that are neither the quote nor the escape.
    #[inline]
    pub(crate) fn other_bytes(&mut self) {
        self.last_was_esc = false;
    }

    /// The step for one byte (copied from `CopyReadLineText`; see the
    /// module docs); any byte but the escape clears "last was escape".
    #[inline]
    pub(crate) fn step(&mut self, c: u8, quote: u8, escape: u8) {
        if self.in_quote && c == escape {
            self.last_was_esc = !self.last_was_esc;
        }
        if c == quote && !self.last_was_esc {
            self.in_quote = !self.in_quote;
        }
        if c != escape {
            self.last_was_esc = false;
        }
    }
}

/// Incremental record-boundary scanner; see the module docs.
#[derive(Clone, Debug)]
pub struct RecordScanner {
    dialect: Dialect,
    /// The byte that ends records ([`LineEnd::byte`]).
    eol: u8,
    /// csv: inside a quoted field, or after an escape there.
    quotes: QuoteState,
    /// text: the previous byte was a backslash whose target is still ahead.
    pending_backslash: bool,
    /// Some byte of the current record has been consumed.
    mid_record: bool,
    /// The CPU has AVX2: quote-dense CSV is counted 64 bytes at a time.
    wide: bool,
}

impl RecordScanner {
    pub fn new(dialect: Dialect, line_end: LineEnd) -> Self {
        RecordScanner {
            dialect,
            eol: line_end.byte(),
            quotes: QuoteState::default(),
            pending_backslash: false,
            mid_record: false,
            wide: wide::available(),
        }
    }

    /// True when the scanner stands between records.
    pub fn at_record_start(&self) -> bool {
        !self.mid_record
    }

    /// Scans `buf`. With `stop_at_record_end`, stops right after the first
    /// record terminator (check `records == 1`); otherwise consumes all of it.
    pub fn scan(&mut self, buf: &[u8], stop_at_record_end: bool) -> Step {
        let (step, last_end) = match self.dialect {
            Dialect::Lines => scan_lines(buf, stop_at_record_end, self.eol),
            Dialect::Text => self.scan_text(buf, stop_at_record_end),
            Dialect::Csv { quote, escape } => {
                let escape = if escape == quote { 0 } else { escape };
                self.scan_csv(buf, quote, escape, stop_at_record_end)
            }
        };
        if step.consumed > 0 {
            // The record is in progress unless the last byte consumed ended it.
            self.mid_record = last_end != step.consumed;
        }
        Step { last_end, ..step }
    }

    /// Returns the step and the offset just past the last record end (0 if
    /// none); likewise `scan_csv`.
    fn scan_text(&mut self, buf: &[u8], stop: bool) -> (Step, usize) {
        if !stop {
            return self.count_text(buf);
        }
        let mut step = Step::default();
        let (mut pos, mut last_end) = (0, 0);
        loop {
            if self.pending_backslash {
                let Some(&escaped) = buf.get(pos) else { break };
                step.newlines += u64::from(escaped == self.eol);
                self.pending_backslash = false;
                pos += 1;
                continue;
            }
            let Some(i) = memchr2(b'\\', self.eol, &buf[pos..]) else {
                pos = buf.len();
                break;
            };
            let at = pos + i;
            pos = at + 1;
            if buf[at] == b'\\' {
                self.pending_backslash = true;
            } else {
                step.newlines += 1;
                step.records += 1;
                last_end = pos;
                break;
            }
        }
        step.consumed = pos;
        (step, last_end)
    }

    /// The bulk path: between backslashes every newline ends a record, so
    /// newlines are counted a stretch at a time instead of one by one.
    fn count_text(&mut self, buf: &[u8]) -> (Step, usize) {
        let mut step = Step { consumed: buf.len(), ..Step::default() };
        let (mut pos, mut last_end) = (0, 0);
        while pos < buf.len() {
            if self.pending_backslash {
                step.newlines += u64::from(buf[pos] == self.eol);
                self.pending_backslash = false;
                pos += 1;
                continue;
            }
            let stretch_end = memchr(b'\\', &buf[pos..]).map_or(buf.len(), |i| pos + i);
            if let Some((n, last)) = newlines_in(&buf[pos..stretch_end], self.eol) {
                step.newlines += n;
                step.records += n;
                last_end = pos + last + 1;
            }
            if stretch_end < buf.len() {
                self.pending_backslash = true;
            }
            pos = stretch_end + 1;
        }
        (step, last_end)
    }

    fn scan_csv(&mut self, buf: &[u8], quote: u8, escape: u8, stop: bool) -> (Step, usize) {
        if !stop {
            return self.count_csv(buf, quote, escape);
        }
        let mut step = Step::default();
        let (mut pos, mut last_end) = (0, 0);
        while let Some(i) = memchr3(quote, escape, self.eol, &buf[pos..]) {
            let at = pos + i;
            if i > 0 {
                // Ordinary bytes were skipped: each resets "last was escape".
                self.quotes.last_was_esc = false;
            }
            let c = buf[at];
            pos = at + 1;
            self.quote_step(c, quote, escape);
            if c == self.eol {
                step.newlines += 1;
                if !self.quotes.in_quote {
                    step.records += 1;
                    last_end = pos;
                    if stop {
                        step.consumed = pos;
                        return (step, last_end);
                    }
                }
            }
        }
        if pos < buf.len() {
            self.quotes.last_was_esc = false;
        }
        step.consumed = buf.len();
        (step, last_end)
    }
}

impl RecordScanner {
    #[inline]
    fn quote_step(&mut self, c: u8, quote: u8, escape: u8) {
        self.quotes.step(c, quote, escape);
    }

    /// The bulk path for CSV: between quote and escape bytes the quote state
    /// cannot change, so newlines are counted a stretch at a time (records
    /// outside quotes, embedded lines inside).
    fn count_csv(&mut self, buf: &[u8], quote: u8, escape: u8) -> (Step, usize) {
        let mut step = Step { consumed: buf.len(), ..Step::default() };
        let (mut pos, mut last_end) = (0, 0);
        while pos < buf.len() {
            let special = memchr2(quote, escape, &buf[pos..]).map_or(buf.len(), |i| pos + i);
            let stretch = &buf[pos..special];
            if !stretch.is_empty() {
                // Ordinary bytes, newlines included, reset "last was escape".
                self.quotes.last_was_esc = false;
                if let Some((n, last)) = newlines_in(stretch, self.eol) {
                    step.newlines += n;
                    if !self.quotes.in_quote {
                        step.records += n;
                        last_end = pos + last + 1;
                    }
                }
            }
            if special == buf.len() {
                break;
            }
            self.quote_step(buf[special], quote, escape);
            pos = special + 1;
            if escape == 0 && self.wide && stretch.len() < DENSE {
                pos = self.count_csv_blocks(buf, pos, quote, &mut step, &mut last_end);
            }
        }
        (step, last_end)
    }
}

impl RecordScanner {
    /// [`count_csv`](Self::count_csv) 64 bytes at a time from `pos`, where
    /// the quote is its own escape (see the module docs), until a block
    /// without a quote; where it got to. The byte loop takes the rest: long
    /// stretches without quotes (where a search runs faster than blocks), a
    /// short tail, a block with a NUL, or a start just after a NUL inside
    /// quotes.
    fn count_csv_blocks(
        &mut self,
        buf: &[u8],
        mut pos: usize,
        quote: u8,
        step: &mut Step,
        last_end: &mut usize,
    ) -> usize {
        // All ones while inside quotes.
        let mut inside = if self.quotes.in_quote { u64::MAX } else { 0 };
        while pos + wide::BLOCK <= buf.len() && !self.quotes.last_was_esc {
            // SAFETY: `wide` is set only where AVX2 is available.
            let (quotes, eols, nuls) = unsafe { wide::masks(&buf[pos..pos + wide::BLOCK], quote, self.eol) };
            if nuls != 0 {
                break;
            }
            let within = prefix_xor(quotes) ^ inside;
            let ends = eols & !within;
            step.newlines += u64::from(eols.count_ones());
            step.records += u64::from(ends.count_ones());
            if ends != 0 {
                *last_end = pos + wide::BLOCK - ends.leading_zeros() as usize;
            }
            inside = ((within >> 63) & 1).wrapping_neg();
            pos += wide::BLOCK;
            if quotes == 0 {
                break;
            }
        }
        self.quotes.in_quote = inside != 0;
        pos
    }
}

/// Bytes between two quotes below which CSV counts as quote-dense, and is
/// counted by blocks: store_sales (a quote now and then) counted 6.0 GB/s
/// by searches and 5.1 GB/s by blocks only (`cargo bench --bench chunking`).
const DENSE: usize = 64;

/// Bit `i` set when an odd number of the bits up to and including `i` are:
/// given a block's quote bits, which of its bytes are inside quotes.
#[inline]
pub(crate) fn prefix_xor(mut bits: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        bits ^= bits << shift;
    }
    bits
}

/// Whether the CPU has AVX2 (and POPCNT and BMI1, which every CPU with
/// AVX2 has): the chunker's block count and the binary encoder's line
/// split both ask here (`std` caches the answer).
pub(crate) fn wide_available() -> bool {
    wide::available()
}

/// A block's bytes compared 64 at a time with AVX2.
#[cfg(target_arch = "x86_64")]
mod wide {
    use std::arch::x86_64::{__m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_set1_epi8};

    pub const BLOCK: usize = 64;

    pub fn available() -> bool {
        std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("popcnt")
            && std::is_x86_feature_detected!("bmi1")
    }

    /// One bit per byte of `block` (64 bytes): its quotes, line ends and NULs.
    ///
    /// # Safety
    /// The CPU must have AVX2 ([`available`]).
    #[target_feature(enable = "avx2")]
    pub unsafe fn masks(block: &[u8], quote: u8, eol: u8) -> (u64, u64, u64) {
        assert_eq!(block.len(), BLOCK);
        // SAFETY: `block` holds 64 bytes: both 32-byte loads are in it.
        let halves = unsafe {
            let first = block.as_ptr().cast::<__m256i>();
            [_mm256_loadu_si256(first), _mm256_loadu_si256(first.add(1))]
        };
        let mask = |byte: u8| {
            let byte = _mm256_set1_epi8(byte as i8);
            let [low, high] = halves.map(|half| _mm256_movemask_epi8(_mm256_cmpeq_epi8(half, byte)) as u32);
            u64::from(low) | u64::from(high) << 32
        };
        (mask(quote), mask(eol), mask(0))
    }
}

/// Elsewhere the byte loop counts every block.
#[cfg(not(target_arch = "x86_64"))]
mod wide {
    pub const BLOCK: usize = 64;

    pub fn available() -> bool {
        false
    }

    /// # Safety
    /// None needed: never called ([`available`] is false here).
    pub unsafe fn masks(_: &[u8], _: u8, _: u8) -> (u64, u64, u64) {
        unreachable!("no AVX2 here")
    }
}

/// The number of line ends (`eol` bytes) in `stretch` and the offset of the
/// last one, or `None` without any. Short stretches (dense `\N` or quotes)
/// are counted by a plain loop: the SIMD search costs more to start than it
/// saves there.
fn newlines_in(stretch: &[u8], eol: u8) -> Option<(u64, usize)> {
    if stretch.len() < 64 {
        let mut found = None;
        for (i, &b) in stretch.iter().enumerate() {
            if b == eol {
                found = Some((found.map_or(0, |(n, _)| n) + 1, i));
            }
        }
        return found;
    }
    let last = memchr::memrchr(eol, stretch)?;
    Some((memchr::memchr_iter(eol, stretch).count() as u64, last))
}

/// Lines need no state: the last byte tells whether a record just ended.
fn scan_lines(buf: &[u8], stop: bool, eol: u8) -> (Step, usize) {
    let step = if stop {
        match memchr(eol, buf) {
            Some(i) => Step { consumed: i + 1, records: 1, newlines: 1, last_end: 0 },
            None => Step { consumed: buf.len(), ..Step::default() },
        }
    } else {
        let n = memchr::memchr_iter(eol, buf).count() as u64;
        Step { consumed: buf.len(), records: n, newlines: n, last_end: 0 }
    };
    let last_end = match step.records {
        0 => 0,
        _ => memchr::memrchr(eol, &buf[..step.consumed]).map_or(0, |i| i + 1),
    };
    (step, last_end)
}

/// The specification of record ends, one byte at a time: returns the offset
/// just past each record terminator. Slow and obvious on purpose; tests check
/// the fast scanner against it.
pub fn reference_record_ends(dialect: Dialect, line_end: LineEnd, input: &[u8]) -> Vec<usize> {
    live_bytes(dialect, input).filter(|&i| input[i] == line_end.byte()).map(|i| i + 1).collect()
}

/// What a CSV record must look like for the open-quote check: the
/// delimiter and the number of fields (the COPY's columns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordShape {
    pub delimiter: u8,
    pub fields: u64,
}

/// Walks one CSV record byte by byte, counting its fields and noting quotes
/// out of place, to tell a quote left open from a quoted field that holds
/// line ends.
///
/// Why: with a quote left open (`5" screen`, a closing quote lost), the
/// server joins lines until the next quote, and from there every quoted
/// field is read inside out: one stray quote made a 2 M-line file all
/// rejects. A record that spans lines and has more or fewer fields than the
/// COPY has columns is rejected by the server whatever else it holds, so
/// cutting it after its first line loses nothing the server would load; the
/// chunker then rejects that line alone and reads on from the next one (see
/// `chunk`). Only when a quote is out of place, though: one that opens
/// inside a field or is followed by anything but the delimiter or the line
/// end after it closes. A record whose quotes all stand where quoted fields
/// put them holds its line ends on purpose, and a field too many or too few
/// is the record's fault, not a quote's: cut, its other lines were read as
/// records of their own and rejected too (a random test found one record
/// rejected as two, with a reason that blamed a quote). The quote logic is
/// [`RecordScanner`]'s, so both agree on where the record ends.
#[derive(Clone, Debug)]
pub struct FieldCounter {
    quote: u8,
    escape: u8,
    eol: u8,
    shape: RecordShape,
    quotes: QuoteState,
    /// Fields so far (delimiters outside quotes, plus one).
    pub fields: u64,
    /// Bytes of the record walked so far.
    pub len: u64,
    /// Line ends inside quotes so far.
    pub lines: u64,
    /// Bytes from the record's start through its first line end inside quotes.
    pub first_line: Option<u64>,
    /// A quote opened inside a field, or a closing one was followed by
    /// something other than the delimiter, a line end or (where the escape
    /// is the quote) the quote doubling it.
    misplaced_quote: bool,
    /// The next byte starts a field (the record's first, or after a
    /// delimiter outside quotes).
    at_field_start: bool,
    /// The last byte closed a quoted part.
    after_closing_quote: bool,
}

/// Where [`FieldCounter::walk`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Walked {
    /// The record ended after this many of the bytes (its line end included).
    Ended(usize),
    /// All the bytes were walked and the record goes on.
    More,
    /// The record spans lines and already has more fields than the shape
    /// allows, after this many of the bytes: the server rejects it however
    /// it ends.
    TooManyFields(usize),
}

impl FieldCounter {
    /// A counter at the start of a record; `None` unless `dialect` is CSV.
    pub fn new(dialect: Dialect, line_end: LineEnd, shape: RecordShape) -> Option<FieldCounter> {
        let Dialect::Csv { quote, escape } = dialect else { return None };
        let escape = if escape == quote { 0 } else { escape };
        Some(FieldCounter::at_record_start(quote, escape, line_end.byte(), shape))
    }

    /// The same counter at the start of the next record.
    pub fn fresh(&self) -> FieldCounter {
        FieldCounter::at_record_start(self.quote, self.escape, self.eol, self.shape)
    }

    fn at_record_start(quote: u8, escape: u8, eol: u8, shape: RecordShape) -> FieldCounter {
        FieldCounter {
            quote,
            escape,
            eol,
            shape,
            quotes: QuoteState::default(),
            fields: 1,
            len: 0,
            lines: 0,
            first_line: None,
            misplaced_quote: false,
            at_field_start: true,
            after_closing_quote: false,
        }
    }

    /// Inside a quoted field (at the end of the input: a quote never closed).
    pub fn in_quote(&self) -> bool {
        self.quotes.in_quote
    }

    /// The record spans lines, a quote in it is out of place and its field
    /// count is not the shape's (or, at the end of the input, a quote is
    /// still open): a quote left open, and the server rejects the record.
    pub fn doomed(&self) -> bool {
        self.lines > 0 && ((self.fields != self.shape.fields && self.misplaced_quote) || self.quotes.in_quote)
    }

    /// Walks on through `buf` until the record ends or is found doomed.
    pub fn walk(&mut self, buf: &[u8]) -> Walked {
        for (i, &c) in buf.iter().enumerate() {
            let was_in_quote = self.quotes.in_quote;
            // Every byte: an ordinary one clears "last was escape".
            self.quotes.step(c, self.quote, self.escape);
            self.len += 1;
            self.note_quote_places(c, was_in_quote);
            if c == self.eol {
                if !self.quotes.in_quote {
                    return Walked::Ended(i + 1);
                }
                self.lines += 1;
                self.first_line.get_or_insert(self.len);
            } else if c == self.shape.delimiter && !self.quotes.in_quote {
                self.fields += 1;
            }
            if self.lines > 0 && self.fields > self.shape.fields && self.misplaced_quote {
                return Walked::TooManyFields(i + 1);
            }
        }
        Walked::More
    }

    /// Notes a quote out of place (see [`misplaced_quote`](Self::misplaced_quote)),
    /// given byte `c` and whether the record was inside quotes before it.
    fn note_quote_places(&mut self, c: u8, was_in_quote: bool) {
        let now_in_quote = self.quotes.in_quote;
        // `escape` is 0 where it is the quote: a quote then doubles one.
        let doubling = c == self.quote && self.escape == 0;
        let opened = now_in_quote && !was_in_quote;
        let followed_well = c == self.shape.delimiter || c == b'\n' || c == b'\r' || doubling;
        if (self.after_closing_quote && !followed_well)
            || (opened && !self.at_field_start && !(self.after_closing_quote && doubling))
        {
            self.misplaced_quote = true;
        }
        self.after_closing_quote = was_in_quote && !now_in_quote;
        self.at_field_start = !was_in_quote && c == self.shape.delimiter;
    }
}

/// The specification of record ends with the open-quote check: like
/// [`reference_record_ends`], except that a record that spans lines and
/// whose field count is not `shape`'s (or that the input ends inside a
/// quote) ends after its first line, and records start again on the next.
pub fn reference_record_ends_checked(
    dialect: Dialect,
    line_end: LineEnd,
    input: &[u8],
    shape: RecordShape,
) -> Vec<usize> {
    if !matches!(dialect, Dialect::Csv { .. }) {
        return reference_record_ends(dialect, line_end, input);
    }
    let eol = line_end.byte();
    let (mut ends, mut from) = (Vec::new(), 0);
    while from < input.len() {
        let rest = &input[from..];
        let end = reference_record_ends(dialect, line_end, rest).first().copied();
        let record = &rest[..end.unwrap_or(rest.len())];
        let live: Vec<usize> = live_bytes(dialect, record).collect();
        let fields = 1 + live.iter().filter(|&&i| record[i] == shape.delimiter).count() as u64;
        let body = &record[..record.len() - usize::from(end.is_some())];
        let first_line = body.iter().position(|&b| b == eol).map(|i| i + 1);
        // A quote still open at the end of the input: its last byte is not live.
        let open = end.is_none() && !live.contains(&(record.len() - 1));
        let misplaced = quote_out_of_place(dialect, shape.delimiter, record);
        match first_line {
            Some(first) if (fields != shape.fields && misplaced) || open => {
                ends.push(from + first);
                from += first;
            }
            _ => match end {
                Some(e) => {
                    ends.push(from + e);
                    from += e;
                }
                None => break,
            },
        }
    }
    ends
}

/// Whether a CSV record has a quote out of place (see
/// [`FieldCounter::misplaced_quote`]): one that opens a quoted part where no
/// field starts (and does not double the quote just closed), or one that
/// closes it and is followed by a byte other than the delimiter, a line
/// end or that doubling quote. Slow and obvious, for the checked reference.
fn quote_out_of_place(dialect: Dialect, delimiter: u8, record: &[u8]) -> bool {
    let Dialect::Csv { quote, escape } = dialect else { return false };
    // As the server reads quotes: an escape that is the quote is none (and
    // a quote then doubles one).
    let doubles = escape == quote;
    let escape = if doubles { 0 } else { escape };
    let (mut in_quote, mut last_was_esc) = (false, false);
    // Where the quotes that open or close a quoted part are, and which.
    let mut toggles: Vec<(usize, bool)> = Vec::new();
    for (i, &c) in record.iter().enumerate() {
        if in_quote && c == escape {
            last_was_esc = !last_was_esc;
        }
        if c == quote && !last_was_esc {
            in_quote = !in_quote;
            toggles.push((i, in_quote));
        }
        if c != escape {
            last_was_esc = false;
        }
    }
    let closed_just_before = |i: usize| toggles.iter().any(|&(at, opened)| at + 1 == i && !opened);
    toggles.iter().any(|&(i, opened)| match opened {
        true => !(i == 0 || record[i - 1] == delimiter || (doubles && closed_just_before(i))),
        false => match record.get(i + 1) {
            None => false,
            Some(&next) => !(next == delimiter || next == b'\n' || next == b'\r' || (doubles && next == quote)),
        },
    })
}

/// Offsets of the bytes that are neither escaped (text) nor inside quotes
/// (csv): where a line end ends a record. One byte at a time, as the server
/// reads them.
fn live_bytes(dialect: Dialect, input: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let (mut in_quote, mut last_was_esc, mut escaped) = (false, false, false);
    let mut live = move |c: u8| match dialect {
        Dialect::Lines => true,
        Dialect::Text => {
            let live = !escaped;
            escaped = live && c == b'\\';
            live
        }
        Dialect::Csv { quote, escape } => {
            let escape = if escape == quote { 0 } else { escape };
            if in_quote && c == escape {
                last_was_esc = !last_was_esc;
            }
            if c == quote && !last_was_esc {
                in_quote = !in_quote;
            }
            if c != escape {
                last_was_esc = false;
            }
            !in_quote
        }
    };
    input.iter().enumerate().filter_map(move |(i, &c)| live(c).then_some(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: Dialect = Dialect::Csv { quote: b'"', escape: b'"' };

    /// Record ends found by the fast scanner when fed `input` in `pieces`.
    fn fast_ends(dialect: Dialect, line_end: LineEnd, input: &[u8], pieces: &[usize]) -> Vec<usize> {
        let mut scanner = RecordScanner::new(dialect, line_end);
        let mut ends = Vec::new();
        let mut offset = 0;
        let mut cuts = pieces.iter().cycle();
        while offset < input.len() {
            let len = (*cuts.next().unwrap()).max(1).min(input.len() - offset);
            let mut piece = &input[offset..offset + len];
            let mut base = offset;
            while !piece.is_empty() {
                let step = scanner.scan(piece, true);
                if step.records == 1 {
                    ends.push(base + step.consumed);
                }
                base += step.consumed;
                piece = &piece[step.consumed..];
            }
            offset += len;
        }
        ends
    }

    /// The input cut at the reference scanner's record ends.
    fn records(dialect: Dialect, input: &[u8]) -> Vec<String> {
        let line_end = line_end_of(dialect, input, true).unwrap_or_default();
        let mut start = 0;
        let mut out = Vec::new();
        for end in reference_record_ends(dialect, line_end, input) {
            out.push(String::from_utf8_lossy(&input[start..end]).into_owned());
            start = end;
        }
        out
    }

    fn check_all_splits(dialect: Dialect, input: &[u8]) {
        for line_end in [LineEnd::Lf, LineEnd::Cr] {
            let want = reference_record_ends(dialect, line_end, input);
            for pieces in [&[usize::MAX][..], &[1], &[2], &[3, 1, 7], &[5, 2]] {
                assert_eq!(fast_ends(dialect, line_end, input, pieces), want, "pieces {pieces:?}, {line_end:?}");
            }
        }
    }

    #[test]
    fn csv_quoted_newlines_and_doubled_quotes() {
        let input = b"a,\"x\ny\",1\n\"say \"\"hi\"\"\n\",2\r\n,\"\"\n";
        assert_eq!(records(CSV, input), ["a,\"x\ny\",1\n", "\"say \"\"hi\"\"\n\",2\r\n", ",\"\"\n"]);
        check_all_splits(CSV, input);
    }

    #[test]
    fn csv_distinct_escape_only_counts_inside_quotes() {
        let d = Dialect::Csv { quote: b'"', escape: b'\\' };
        // `\"` inside quotes is an escaped quote; `\\` is an escaped escape.
        let input = b"\"a\\\"\nb\",1\n\"c\\\\\",2\nx\\\"\n";
        assert_eq!(
            records(d, input),
            ["\"a\\\"\nb\",1\n", "\"c\\\\\",2\n"],
            "an escape outside quotes is an ordinary byte, so the last quote opens"
        );
        check_all_splits(d, input);
    }

    #[test]
    fn text_backslash_newline_is_data() {
        let input = b"a\\\nb\t1\nc\\\\\n\\N\td\n";
        assert_eq!(records(Dialect::Text, input), ["a\\\nb\t1\n", "c\\\\\n", "\\N\td\n"]);
        check_all_splits(Dialect::Text, input);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]
        /// The 64-byte count agrees with the byte loop, step by step, on
        /// quote-dense CSV fed in pieces of any size, with NULs (the escape
        /// when the quote is its own) and line ends of both kinds.
        #[test]
        fn blocks_count_csv_as_the_byte_loop_does(
            bytes in proptest::collection::vec(proptest::sample::select(b"ab,\"\"\n\r\0".to_vec()), 0..1500),
            pieces in proptest::collection::vec(1usize..300, 1..8),
            nul_every in 0usize..4,
            cr in proptest::bool::ANY,
        ) {
            // Most inputs without a NUL, so that whole blocks are counted.
            let input: Vec<u8> =
                bytes.iter().map(|&b| if b == 0 && nul_every != 1 { b'a' } else { b }).collect();
            let line_end = if cr { LineEnd::Cr } else { LineEnd::Lf };
            let mut blocks = RecordScanner::new(CSV, line_end);
            if !blocks.wide {
                return Ok(());
            }
            let mut bytewise = RecordScanner { wide: false, ..blocks.clone() };
            let (mut offset, mut cuts) = (0, pieces.iter().cycle());
            while offset < input.len() {
                let len = (*cuts.next().unwrap()).min(input.len() - offset);
                let piece = &input[offset..offset + len];
                proptest::prop_assert_eq!(blocks.scan(piece, false), bytewise.scan(piece, false), "at {}", offset);
                proptest::prop_assert_eq!(blocks.at_record_start(), bytewise.at_record_start());
                offset += len;
            }
        }
    }

    #[test]
    fn counts_records_and_newlines_without_stopping() {
        let mut s = RecordScanner::new(CSV, LineEnd::Lf);
        let step = s.scan(b"1,\"a\nb\"\n2,c\n3", false);
        assert_eq!(step, Step { consumed: 13, records: 2, newlines: 3, last_end: 12 });
        assert!(!s.at_record_start());
        let mut s = RecordScanner::new(Dialect::Lines, LineEnd::Lf);
        assert_eq!(s.scan(b"{}\n{}\n", false).records, 2);
        assert!(s.at_record_start());
        let mut s = RecordScanner::new(CSV, LineEnd::Cr);
        let step = s.scan(b"1,\"a\rb\n\"\r2,c\n\r3", false);
        assert_eq!(step, Step { consumed: 15, records: 2, newlines: 3, last_end: 14 }, "\\n is data, \\r ends");
    }

    #[test]
    fn the_first_line_end_outside_quotes_and_escapes_sets_the_style() {
        let cr = Some(LineEnd::Cr);
        let lf = Some(LineEnd::Lf);
        assert_eq!(line_end_of(CSV, b"a,b\rc,d\r", true), cr);
        assert_eq!(
            line_end_of(CSV, b"a,b\rc,d\r", false),
            None,
            "too little yet to tell a bare \\r from one inside a line"
        );
        assert_eq!(line_end_of(CSV, b"a,b\r\nc,d\r\n", false), lf);
        assert_eq!(line_end_of(CSV, b"a,b\nc\rd\r", false), lf);
        assert_eq!(line_end_of(CSV, b"\"a\nb\",c\rd", true), cr, "a quoted newline is data");
        assert_eq!(line_end_of(CSV, b"\"a\rb\",c\n", false), lf, "a quoted carriage return is data");
        assert_eq!(line_end_of(Dialect::Text, b"a\\\nb\rc", true), cr, "an escaped newline is data");
        assert_eq!(line_end_of(Dialect::Lines, b"{}\r{}", true), cr);
        let text = Dialect::Text;
        assert_eq!(line_end_of(text, b"1\tfo\rur\n2\ttwo\n", true), lf, "a carriage return inside a line");
        assert_eq!(line_end_of(text, b"1\ta\r2\tb\n\r3\tc\r", true), cr, "a stray line feed in a file of \\r");
        assert!(holds_a_bare_return(text, b"1\tfo\rur\n") && !holds_a_bare_return(text, b"1\tfour\r\n"));
        assert!(!holds_a_bare_return(CSV, b"1,\"fo\rur\"\n"), "quoted, it is data");
        assert_eq!(line_end_of(CSV, b"a,b", false), None, "no line end yet");
        assert_eq!(line_end_of(CSV, b"a,b\r", false), None, "a \\r\\n may be split");
        assert_eq!(line_end_of(CSV, b"a,b\r", true), cr, "the whole input ends in a bare \\r");
    }

    #[test]
    fn carriage_return_inputs_end_records_at_carriage_returns() {
        let input = b"a,\"x\ry\",1\r\"q\nz\",2\rb,3";
        assert_eq!(records(CSV, input), ["a,\"x\ry\",1\r", "\"q\nz\",2\r"]);
        check_all_splits(CSV, input);
        let input = b"a\\\rb\t1\rc\n\td\r";
        assert_eq!(records(Dialect::Text, input), ["a\\\rb\t1\r", "c\n\td\r"], "\\ + \\r is data");
        check_all_splits(Dialect::Text, input);
    }
}
