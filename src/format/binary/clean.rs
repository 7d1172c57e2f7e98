//! The fast path for clean records: a whole line with nothing that needs
//! unescaping or unquoting (no backslash in the text format, no quote in
//! CSV, no NUL, no line-end byte but its own LF or CRLF). In the text format with the
//! default NULL string `\N` a backslash is allowed in a field that is
//! exactly `\N`: exports from PostgreSQL write every NULL so, and lines
//! with one took the exact splitter (flights, 29 columns, most lines with a
//! NULL: sluice's CPU for a binary load of 2 M rows went from 1.8 to 1.4 s).
//! In CSV whose escape is its quote, a field may be enclosed in quotes when
//! none is inside it (exporters that quote every string, or every field,
//! write little else), and may hold the delimiter (addresses, `"Smith,
//! John"`) and doubled quotes (JSON in CSV, `"12"" screen"`): delimiters
//! between an odd and an even quote do not end fields, and a line is clean
//! when its quotes are each at an end of a field they enclose or one of a
//! pair inside it. A line end inside quotes still takes the exact splitter;
//! so does any line this path splits wrongly, since a piece cut inside
//! quotes does not both start and end with one and breaks the count.
//!
//! Why: most lines of a real file are clean, and for them the exact
//! splitter's per-byte walk over five special bytes, a second walk over each
//! value and a length check per byte written cost more than the server saved
//! on lineitem (bench/README.md: encoding 6 M rows took 2.2 s of one core,
//! now 1.45 s). Here the line is found with `memchr`, its delimiters eight
//! bytes at a time, short text fields are copied as fixed-size blocks and
//! the tuple is written straight into the output's spare room. Whatever
//! this path does not read on the first try (a value that may be the NULL
//! string, a 19-digit integer, a long decimal, a wrong field count) returns
//! `None` and the exact splitter takes the record from its start; a
//! property test checks that both give the same bytes.
//!
//! Where the CPU has AVX2 (checked once per encoder), one pass over 64 bytes
//! at a time (two 32-byte loads) finds the newline, the delimiters and any
//! byte that makes the line unclean, instead of three passes (the newline,
//! the unclean bytes, the delimiters eight at a time): splitting lineitem in
//! memory took 0.21 s instead of 0.47 s of the encoder's 1.46 s. Which bytes
//! are inside quotes comes from the block's quotes by a prefix XOR, carried
//! from block to block (lineitem as CSV with a quoted comma in every
//! comment: 370 ns a record before, 182-187 now; with one in 9 % of them,
//! 181 before and 163-170 now; `cargo bench --bench encoding`). Our own
//! code, not a crate's: it is the encoder's inner loop, and what it must
//! report (field ends up to a count, or "not clean") is specific to it. A
//! property test checks it against the portable pass.

use std::mem::MaybeUninit;

use memchr::{memchr, memchr2, memchr3};

use super::{
    boolean, encode_value, exponent_written_out, float, interval, iso_date, numeric, reread, short_decimal_of,
    time_of_day, time_with_offset, timestamp, timestamptz, unpadded, uuid, Codec, DateOrder, Layout, Rules,
};

/// Where clean records are taken apart and built, kept by the encoder so
/// that nothing is allocated or zeroed per record.
#[derive(Clone, Debug)]
pub(super) struct Workspace {
    ends: Vec<u32>,
    /// A quoted value with its doubled quotes made single.
    undoubled: Vec<u8>,
    /// The CPU has AVX2 (set only by [`wide::available`]): lines are split
    /// 32 bytes at a time.
    wide: bool,
}

impl Default for Workspace {
    fn default() -> Self {
        Workspace { ends: Vec::new(), undoubled: Vec::new(), wide: wide::available() }
    }
}

impl Workspace {
    /// A workspace that splits lines without AVX2 even where the CPU has
    /// it, so that tests also run the portable record loop.
    #[cfg(test)]
    pub(super) fn portable() -> Workspace {
        Workspace { wide: false, ..Workspace::default() }
    }
}

/// How the record's fields are read: each column's codec, and the order of
/// day and month in the session's dates (see [`reread`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Columns<'a> {
    pub codecs: &'a [Codec],
    pub date_order: Option<DateOrder>,
}

/// Encodes the records at the front of `input` while they are clean and
/// every field reads on the first try, appending their tuples to `out`;
/// returns the bytes and records taken. What depends only on the chunk is
/// set up once per call, not per record (`cargo bench --bench encoding`,
/// the two builds alternated 4 times: lineitem 141-144 ns a record against
/// 147-155, transactions 32.1-32.4 against 37.0-38.6).
pub(super) fn records(
    columns: Columns,
    rules: &Rules,
    input: &[u8],
    crlf: bool,
    work: &mut Workspace,
    out: &mut Vec<u8>,
) -> (usize, u64) {
    let special = if rules.kind == Layout::Csv { rules.quote } else { b'\\' };
    work.ends.resize(columns.codecs.len() + wide::ROOM_AFTER_ENDS, 0);
    // A CRLF line is split at its carriage return, and a line feed before it
    // makes the line unclean, as a carriage return does in an LF line.
    let (newline, stray) = if crlf { (b'\r', b'\n') } else { (b'\n', b'\r') };
    let counted_specials = rules.escaped_null || rules.quoted_in_clean_lines;
    let quoted_fields = rules.quoted_in_clean_lines;
    let stops = Stops { delimiter: rules.delimiter, special, counted_specials, quoted_fields, newline, stray };
    let reading = Reading { columns, rules, stops };
    #[cfg(target_arch = "x86_64")]
    if work.wide {
        // SAFETY: `wide` is true only where `wide::available` found AVX2.
        return unsafe { records_avx2(reading, input, work, out) };
    }
    records_in_loop::<false>(reading, input, work, out)
}

/// What reads the records of a call to [`records`]: the columns, the
/// format's rules and the bytes that split a line.
#[derive(Clone, Copy)]
struct Reading<'a> {
    columns: Columns<'a>,
    rules: &'a Rules,
    stops: Stops,
}

/// [`records_in_loop`] compiled for AVX2, POPCNT and BMI1, with the wide
/// line split inlined into it (see [`wide::split_line`]); the rest of the
/// loop gains from the wider instructions too.
///
/// # Safety
/// The CPU must have them ([`wide::available`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt,bmi1")]
unsafe fn records_avx2(reading: Reading, input: &[u8], work: &mut Workspace, out: &mut Vec<u8>) -> (usize, u64) {
    records_in_loop::<true>(reading, input, work, out)
}

/// The loop of [`records`]; `WIDE`: the lines are split by the AVX2 pass,
/// which only [`records_avx2`] may ask for.
#[inline(always)]
fn records_in_loop<const WIDE: bool>(
    reading: Reading,
    input: &[u8],
    work: &mut Workspace,
    out: &mut Vec<u8>,
) -> (usize, u64) {
    let (mut taken, mut count) = (0, 0);
    while let Some(len) = record::<WIDE>(reading, &input[taken..], work, out) {
        taken += len;
        count += 1;
    }
    (taken, count)
}

/// Encodes the record at the front of `input` if it is clean and every
/// field reads on the first try, appending its tuple to `out`; returns its
/// length with the newline.
#[inline(always)]
fn record<const WIDE: bool>(
    Reading { columns: Columns { codecs, date_order }, rules, stops }: Reading,
    input: &[u8],
    work: &mut Workspace,
    out: &mut Vec<u8>,
) -> Option<usize> {
    let crlf = stops.newline == b'\r';
    let (end, specials) = split_line::<WIDE>(input, stops, &mut work.ends, codecs.len())?;
    let line = &input[..end];
    let len = match crlf {
        false => end + 1,
        true if input.get(end + 1) == Some(&b'\n') => end + 2,
        true => return None,
    };
    if line == b"\\." {
        return None;
    }
    // The tuple is written straight into `out`'s spare room, reserved for
    // the largest tuple the line can give (each field's encoding is at most
    // its text plus 28 bytes): one length check per record instead of one
    // per value, and no copy of the finished tuple (lineitem: 170 ns a
    // record against 165, `cargo bench --bench encoding`).
    out.reserve(2 + ROOM_PER_FIELD * codecs.len() + line.len() + BLOCK_TEXT);
    let mut tuple = Cursor { room: out.spare_capacity_mut(), at: 0 };
    tuple.put(&(codecs.len() as i16).to_be_bytes());
    let fields = Line { text: line, input, ends: &work.ends };
    let columns = Columns { codecs, date_order };
    match specials == 0 && !rules.null_in_clean_lines {
        true => plain_fields(columns, fields, &mut tuple)?,
        false => marked_fields(columns, fields, rules, specials, &mut work.undoubled, &mut tuple)?,
    }
    let written = tuple.at;
    // SAFETY: the cursor wrote every byte of `room[..at]` (it only moves
    // `at` past bytes it has just written), and `room` is `out`'s spare
    // capacity, so the first `written` bytes after `out.len()` are
    // initialized.
    unsafe { out.set_len(out.len() + written) };
    Some(len)
}

/// A clean line's text, where it starts in the input (whose bytes past the
/// line let short fields be copied as fixed-size blocks) and its fields'
/// ends.
#[derive(Clone, Copy)]
struct Line<'a> {
    text: &'a [u8],
    input: &'a [u8],
    ends: &'a [u32],
}

/// The fields of a line with no quote or backslash and no NULL string to
/// look for (the text format's default `\N` has a backslash): each is its
/// codec's value. A loop of its own because the general one's checks per
/// field stayed in the loop although they depend only on the line
/// (lineitem: 146-148 ns a record against 152-172, `cargo bench --bench
/// encoding`, the two builds alternated 4 times).
#[inline(always)]
fn plain_fields(Columns { codecs, date_order }: Columns, line: Line, tuple: &mut Cursor) -> Option<()> {
    let mut start = 0;
    for (&codec, &end) in codecs.iter().zip(line.ends) {
        let (from, end) = (start, end as usize);
        start = end + 1;
        if matches!(codec, Codec::Text) {
            tuple.text(&line.input[from..], end - from);
        } else {
            field_or_reread(codec, &line.text[from..end], date_order, tuple)?;
        }
    }
    Some(())
}

/// The fields of a line that has quotes or `\N` fields, or a NULL string
/// that a field may equal; `specials` is the line's count of quotes or
/// backslashes, each of which must be accounted for.
#[inline(always)]
fn marked_fields(
    Columns { codecs, date_order }: Columns,
    Line { text: line, input, ends }: Line,
    rules: &Rules,
    specials: u32,
    undoubled: &mut Vec<u8>,
    tuple: &mut Cursor,
) -> Option<()> {
    let mut start = 0;
    // A line with backslashes is clean when each is a `\N` field's, a CSV
    // line with quotes when each is at an end of a field they enclose.
    let mut accounted = 0;
    for (column, (&codec, &end)) in codecs.iter().zip(ends).enumerate() {
        let (mut from, mut text) = (start, &line[start..end as usize]);
        start = end as usize + 1;
        if specials > 0 && rules.quoted_in_clean_lines && enclosed(text, rules.quote) {
            // Quoted: the value between the quotes, where a doubled quote
            // is one; not NULL unless the column is forced.
            let inner = &text[1..text.len() - 1];
            accounted += 2;
            if memchr(rules.quote, inner).is_some() {
                accounted += undouble(inner, rules.quote, undoubled)?;
                match codec {
                    _ if rules.quoted_is_null(column, undoubled) => tuple.put(&(-1i32).to_be_bytes()),
                    Codec::Text => tuple.value(undoubled),
                    _ => field_or_reread(codec, undoubled, date_order, tuple)?,
                }
                continue;
            }
            if rules.quoted_is_null(column, inner) {
                tuple.put(&(-1i32).to_be_bytes());
                continue;
            }
            (from, text) = (from + 1, inner);
        } else if specials > 0 && rules.escaped_null && text == b"\\N" {
            accounted += 1;
            tuple.put(&(-1i32).to_be_bytes());
            continue;
        } else if rules.null_in_clean_lines && rules.unquoted_is_null(column, text) {
            tuple.put(&(-1i32).to_be_bytes());
            continue;
        }
        if matches!(codec, Codec::Text) {
            tuple.text(&input[from..], text.len());
        } else {
            field_or_reread(codec, text, date_order, tuple)?;
        }
    }
    (accounted == specials).then_some(())
}

/// A quoted CSV value's text with each doubled quote made one, into
/// `value`; how many quotes it held, or `None` for a quote that is not
/// doubled (the exact splitter reads that field as the server does).
fn undouble(inner: &[u8], quote: u8, value: &mut Vec<u8>) -> Option<u32> {
    value.clear();
    let (mut rest, mut quotes) = (inner, 0);
    while let Some(at) = memchr(quote, rest) {
        if rest.get(at + 1) != Some(&quote) {
            return None;
        }
        value.extend_from_slice(&rest[..=at]);
        rest = &rest[at + 2..];
        quotes += 2;
    }
    value.extend_from_slice(rest);
    Some(quotes)
}

/// Whether a CSV field is enclosed in quotes: starts and ends with one.
/// That the quotes inside are doubled ones is settled by [`undouble`], and
/// that no other field holds a quote by counting the line's quotes.
fn enclosed(text: &[u8], quote: u8) -> bool {
    text.len() >= 2 && text[0] == quote && text[text.len() - 1] == quote
}

/// The bytes a line split looks for besides the newline.
#[derive(Clone, Copy, Debug)]
struct Stops {
    delimiter: u8,
    /// The byte that makes a field need the exact splitter (backslash or
    /// quote).
    special: u8,
    /// A line with `special` may still be clean when each one is a `\N`
    /// field's (the text format's default NULL string) or, in CSV, at an
    /// end of a quoted field: the line's count of them is checked against
    /// its fields.
    counted_specials: bool,
    /// `special` is a CSV quote: a delimiter between an odd and an even
    /// one is inside a quoted field, not a field's end, and a line with an
    /// odd count (a quoted line end) is not clean.
    quoted_fields: bool,
    /// The byte that ends the line (`\n`, or `\r` for CRLF lines).
    newline: u8,
    /// The other of the two, which makes the line unclean.
    stray: u8,
}

/// Where the line at the front of `input` ends (its newline) when it is clean
/// (no stray line-end byte or NUL, and no `special` byte unless
/// `counted_specials`) and has exactly `fields` fields, with each field's
/// end (the delimiters outside quotes with `quoted_fields`, then the
/// newline) in `ends[..fields]`, and how many `special` bytes it holds;
/// `None` otherwise, or without a newline. `ends`
/// has room for [`wide::ROOM_AFTER_ENDS`] more, which the wide pass may
/// overwrite.
#[inline(always)]
fn split_line<const WIDE: bool>(input: &[u8], stops: Stops, ends: &mut [u32], fields: usize) -> Option<(usize, u32)> {
    if WIDE {
        // SAFETY: `WIDE` is true only in `records_avx2`, called only where
        // `wide::available` found AVX2.
        match unsafe { wide::split_line(input, stops, ends, fields) } {
            wide::Split::Line(newline, specials) => return Some((newline, specials)),
            wide::Split::NotClean => return None,
            wide::Split::NearTheEnd => {}
        }
    }
    let newline = memchr(stops.newline, input)?;
    let line = &input[..newline];
    let specials = match memchr3(stops.special, stops.stray, 0, line) {
        None => 0,
        Some(_) if stops.counted_specials && memchr2(stops.stray, 0, line).is_none() => {
            memchr::memchr_iter(stops.special, line).count() as u32
        }
        Some(_) => return None,
    };
    let ends = &mut ends[..fields];
    match stops.quoted_fields && specials > 0 {
        true if specials % 2 == 1 => None,
        true => quoted_field_ends(line, stops.delimiter, stops.special, ends),
        false => field_ends(line, stops.delimiter, ends),
    }
    .map(|_| (newline, specials))
}

/// [`field_ends`] for a CSV line with quotes, where only the delimiters
/// outside them end fields: byte by byte, as only the lines the wide pass
/// leaves (near the input's end, or without AVX2) come here.
fn quoted_field_ends<'a>(line: &[u8], delimiter: u8, quote: u8, ends: &'a mut [u32]) -> Option<&'a [u32]> {
    let last = ends.len().checked_sub(1)?;
    let (mut found, mut inside) = (0, false);
    for (at, &b) in line.iter().enumerate() {
        if b == quote {
            inside = !inside;
        } else if b == delimiter && !inside {
            *ends.get_mut(found).filter(|_| found < last)? = at as u32;
            found += 1;
        }
    }
    (found == last).then(|| {
        ends[last] = u32::try_from(line.len()).unwrap_or(u32::MAX);
        &ends[..]
    })
}

/// Where each field of `line` ends (the delimiters, then the line's end),
/// when it has exactly `ends.len()` fields. Eight bytes at a time: a
/// per-field `memchr` costs more than the field on short fields.
fn field_ends<'a>(line: &[u8], delimiter: u8, ends: &'a mut [u32]) -> Option<&'a [u32]> {
    let last = ends.len().checked_sub(1)?;
    let mut found = 0;
    let mut record = |at: usize| -> Option<()> {
        *ends.get_mut(found).filter(|_| found < last)? = at as u32;
        found += 1;
        Some(())
    };
    let words = line.chunks_exact(8);
    let tail_from = line.len() - words.remainder().len();
    for (w, word) in words.enumerate() {
        let mut hits = equal_bytes(u64::from_le_bytes(word.try_into().unwrap()), delimiter);
        while hits != 0 {
            record(8 * w + hits.trailing_zeros() as usize / 8)?;
            hits &= hits - 1;
        }
    }
    for (i, &b) in line[tail_from..].iter().enumerate() {
        if b == delimiter {
            record(tail_from + i)?;
        }
    }
    (found == last).then(|| {
        ends[last] = u32::try_from(line.len()).unwrap_or(u32::MAX);
        &ends[..]
    })
}

/// The high bit of each byte of `word` that equals `byte` (exact: no carry
/// between bytes).
#[inline]
fn equal_bytes(word: u64, byte: u8) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let x = word ^ u64::from_ne_bytes([byte; 8]);
    !(((x & LOW7).wrapping_add(LOW7)) | x) & !LOW7
}

/// The line split 64 bytes at a time with AVX2.
#[cfg(target_arch = "x86_64")]
mod wide {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8,
    };

    use super::Stops;
    use crate::format::scan::prefix_xor;
    pub(crate) use crate::format::scan::wide_available as available;

    /// Ends written past the line's last field: a block's delimiters are
    /// written eight at a time, without a branch per delimiter (whose count
    /// per block varies, so a loop over them is mispredicted about
    /// once a block); the ends past the count are overwritten or ignored.
    /// lineitem: 341 ns a record against 329 (`cargo bench --bench encoding`,
    /// medians of 11 runs, twice).
    pub const ROOM_AFTER_ENDS: usize = 8;

    /// Bytes looked at per step: two 32-byte loads. One load a step took
    /// twice the steps, and twice the newline checks that are mispredicted
    /// at each line's end (lineitem: 155-163 ns a record against 147-154;
    /// transactions 43.7 against 42.4; four loads a step: 155 on lineitem,
    /// whose lines are about 125 bytes long; `cargo bench --bench encoding`).
    pub const BLOCK: usize = 64;

    /// What one pass over a line found.
    pub enum Split {
        /// The line is clean, with the expected field count; its newline,
        /// and how many special bytes it holds.
        Line(usize, u32),
        /// An unclean byte, or another field count.
        NotClean,
        /// The line runs into the input's last 63 bytes: the portable pass
        /// takes it.
        NearTheEnd,
    }

    /// See [`super::split_line`]. Not compiled for AVX2 itself but inlined
    /// into [`super::records_avx2`], which is, so that the line split and
    /// its intrinsics become part of the record loop: a function with
    /// target features of its own cannot be forced inline, and as a call per
    /// line it cost lineitem 138-141 ns a record against 130-137 now,
    /// transactions 31.5-32.0 against 26.9-27.6 (`cargo bench --bench
    /// encoding`, alternated 4 times). Called elsewhere (the tests), the
    /// intrinsics are calls, which is slower but reads the same.
    ///
    /// # Safety
    /// The CPU must have AVX2, POPCNT and BMI1 ([`available`]).
    #[inline(always)]
    pub unsafe fn split_line(input: &[u8], stops: Stops, ends: &mut [u32], fields: usize) -> Split {
        // SAFETY: the caller checked that the CPU has AVX2, POPCNT and BMI1.
        unsafe { split_line_avx2(input, stops, ends, fields) }
    }

    /// `ends` holds `fields` ends and [`ROOM_AFTER_ENDS`] more.
    /// Its caller enables POPCNT and BMI1 too: with AVX2 alone, each `count_ones` was
    /// a dozen instructions (lineitem: 166.2 ns a record against 170.0,
    /// `cargo bench --bench encoding`, 5 runs alternated, medians).
    #[inline(always)]
    unsafe fn split_line_avx2(input: &[u8], stops: Stops, ends: &mut [u32], fields: usize) -> Split {
        let Some(last) = fields.checked_sub(1) else { return Split::NotClean };
        let [delimiter, special, newline, stray, nul] =
            [stops.delimiter, stops.special, stops.newline, stops.stray, 0].map(|b| _mm256_set1_epi8(b as i8));
        let mut specials = 0;
        let mut found = 0;
        let mut at = 0;
        // All ones while the block starts inside a quoted field.
        let mut quoted_before: u64 = 0;
        while at + BLOCK <= input.len() {
            // SAFETY: `at + BLOCK <= input.len()`: both 32-byte loads are in `input`.
            let halves = unsafe {
                let first = input.as_ptr().add(at).cast::<__m256i>();
                [_mm256_loadu_si256(first), _mm256_loadu_si256(first.add(1))]
            };
            // One bit per byte of the 64: the high bit of each byte of the halves.
            let bits = |[low, high]: [__m256i; 2]| {
                u64::from(_mm256_movemask_epi8(low) as u32) | u64::from(_mm256_movemask_epi8(high) as u32) << 32
            };
            let mask = |byte| bits(halves.map(|half| _mm256_cmpeq_epi8(half, byte)));
            let newlines = mask(newline);
            let before_newline = match newlines {
                0 => u64::MAX,
                n => (1 << n.trailing_zeros()) - 1,
            };
            let unclean =
                bits(halves.map(|half| _mm256_or_si256(_mm256_cmpeq_epi8(half, stray), _mm256_cmpeq_epi8(half, nul))));
            if unclean & before_newline != 0 {
                return Split::NotClean;
            }
            let all_specials = mask(special);
            let special_bytes = all_specials & before_newline;
            if special_bytes != 0 {
                if !stops.counted_specials {
                    return Split::NotClean;
                }
                specials += special_bytes.count_ones();
            }
            let mut delimiters = mask(delimiter) & before_newline;
            if stops.quoted_fields && (all_specials | quoted_before) != 0 {
                let inside = prefix_xor(all_specials) ^ quoted_before;
                delimiters &= !inside;
                quoted_before = ((inside >> 63) & 1).wrapping_neg();
            }
            let count = delimiters.count_ones() as usize;
            if found + count > last {
                return Split::NotClean;
            }
            // Eight at a time: `written` stays below `last`, so every index
            // written is below `last + ROOM_AFTER_ENDS`.
            let mut written = found;
            while delimiters != 0 {
                for end in &mut ends[written..written + ROOM_AFTER_ENDS] {
                    *end = (at + delimiters.trailing_zeros() as usize) as u32;
                    delimiters &= delimiters.wrapping_sub(1);
                }
                written += ROOM_AFTER_ENDS;
            }
            found += count;
            if newlines != 0 {
                // An odd count of quotes: the line end is inside a quoted field.
                if found != last || (stops.quoted_fields && specials % 2 == 1) {
                    return Split::NotClean;
                }
                let end = at + newlines.trailing_zeros() as usize;
                ends[last] = end as u32;
                return Split::Line(end, specials);
            }
            at += BLOCK;
        }
        Split::NearTheEnd
    }
}

/// Elsewhere the portable pass splits every line.
#[cfg(not(target_arch = "x86_64"))]
#[allow(dead_code)] // never called: no AVX2 on this architecture
mod wide {
    pub(crate) use crate::format::scan::wide_available as available;

    pub enum Split {
        Line(usize, u32),
        NotClean,
        NearTheEnd,
    }

    pub const BLOCK: usize = 64;

    /// # Safety
    /// None needed: never called ([`available`] is false here).
    pub const ROOM_AFTER_ENDS: usize = 0;

    pub unsafe fn split_line(_: &[u8], _: super::Stops, _: &mut [u32], _: usize) -> Split {
        Split::NearTheEnd
    }
}

/// Bytes a field's binary form may need beyond its text: the 4-byte length
/// and at most 24 more (a numeric's 8-byte header and padded groups, an
/// 8-byte float or timestamp from a one-digit text); an array can need more
/// (see [`field`]).
const ROOM_PER_FIELD: usize = 28;

/// Text fields up to this length are copied as one fixed-size block of
/// 32 or 64 bytes (a third of lineitem's comments are 33 to 44 bytes long).
const BLOCK_TEXT: usize = 64;

/// Where the tuple is written: the output's spare room, and how much of it
/// is written (every byte before `at`).
struct Cursor<'a> {
    room: &'a mut [MaybeUninit<u8>],
    at: usize,
}

impl Cursor<'_> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        write_bytes(&mut self.room[self.at..self.at + bytes.len()], bytes);
        self.at += bytes.len();
    }

    /// What has been written.
    #[cfg(test)]
    fn written(&self) -> Vec<u8> {
        // SAFETY: every byte before `at` was written by `put` or `text`.
        self.room[..self.at].iter().map(|b| unsafe { b.assume_init() }).collect()
    }

    /// A text field of `len` bytes at the front of `source`. A short one is
    /// copied as a fixed-size block when both sides have room for it (the
    /// bytes past `len` are overwritten next), which is a few moves instead
    /// of a call to `memcpy` per field.
    #[inline]
    fn text(&mut self, source: &[u8], len: usize) {
        self.put(&(len as i32).to_be_bytes());
        let copied = match len {
            0..=32 => self.block::<32>(source, len),
            33..=BLOCK_TEXT => self.block::<BLOCK_TEXT>(source, len),
            _ => false,
        };
        if !copied {
            self.put(&source[..len]);
        }
    }

    /// Writes the first `N` bytes of `source` and keeps the first `len` of
    /// them, when both have room for `N`; a copy of known size is inlined
    /// where one of `len` bytes calls `memcpy` (lineitem's four decimals and
    /// its longer comments: 165 ns a record against 158).
    #[inline]
    fn block<const N: usize>(&mut self, source: &[u8], len: usize) -> bool {
        match (source.first_chunk::<N>(), self.room.get_mut(self.at..self.at + N)) {
            (Some(block), Some(room)) => {
                write_bytes(room, block);
                self.at += len;
                true
            }
            _ => false,
        }
    }

    /// Writes a 20-byte block given as words and keeps its first `len`
    /// bytes, when there is room for all 20 (the bytes past `len` are
    /// overwritten next).
    #[inline]
    fn words(&mut self, (first, second, third): ([u8; 8], [u8; 8], [u8; 4]), len: usize) -> bool {
        let Some(room) = self.room.get_mut(self.at..self.at + 20) else { return false };
        write_bytes(&mut room[..8], &first);
        write_bytes(&mut room[8..16], &second);
        write_bytes(&mut room[16..], &third);
        self.at += len;
        true
    }

    /// A field's length and bytes.
    #[inline]
    fn value(&mut self, bytes: &[u8]) {
        self.put(&(bytes.len() as i32).to_be_bytes());
        self.put(bytes);
    }
}

/// Copies `bytes` into `room` of the same length (`write_copy_of_slice`,
/// which does this, needs Rust 1.93).
#[inline]
fn write_bytes(room: &mut [MaybeUninit<u8>], bytes: &[u8]) {
    assert_eq!(room.len(), bytes.len());
    // SAFETY: both are valid for `bytes.len()` bytes (checked just above),
    // `MaybeUninit<u8>` has the layout of `u8`, and a shared and a mutable
    // borrow cannot overlap.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), room.as_mut_ptr().cast::<u8>(), bytes.len()) }
}

/// [`field`], or for a value it does not read, the value without the
/// spaces around it (see [`unpadded`]) or, for a date or timestamp,
/// [`reread`].
///
/// Inlined into [`record`] with [`field`], the rest kept out of line: as a
/// call per field (it could not be inlined while it called itself), the
/// saving and restoring of registers took an eighth of its samples
/// (`cargo bench --bench encoding`: lineitem 170 ns a record before, 157
/// after; transactions 48.8 before, 44.1 after; sluice's CPU loading
/// lineitem, 4 rounds alternated: 1.56 s before, 1.48 s after).
#[inline(always)]
fn field_or_reread(codec: Codec, text: &[u8], date_order: Option<DateOrder>, tuple: &mut Cursor) -> Option<()> {
    let at = tuple.at;
    if field(codec, text, tuple).is_some() {
        return Some(());
    }
    // A field that failed may have written its value before the check.
    tuple.at = at;
    unusual_field(codec, text, date_order, tuple)
}

/// [`field_or_reread`] for a value [`field`] did not read. Not `#[cold]`:
/// in a file whose values all have a space before them every value comes
/// here, and marked cold that file's load took 4-8 % more of sluice's CPU.
#[inline(never)]
fn unusual_field(codec: Codec, text: &[u8], date_order: Option<DateOrder>, tuple: &mut Cursor) -> Option<()> {
    if let Some(unpadded) = unpadded(codec, text) {
        return field_or_reread(codec, unpadded, date_order, tuple);
    }
    if codec == Codec::Numeric {
        // `4.39563e-5` (Python's floats below 1e-4): read here, its record
        // no longer goes to the exact path (sluice's CPU for 2 M records
        // of one such value: 0.37 s there, 0.24 s here, 0.13 s for the same
        // values written plain). Its binary form, a decimal's of its
        // digits, fits the room reserved for its text.
        let (decimal, length) = short_decimal_of(&exponent_written_out(text)?)?;
        return (leading_numeric(&decimal[..length], tuple)? == length).then_some(());
    }
    reread(codec, text, date_order)?.write(|bytes| tuple.value(bytes));
    Some(())
}

/// Encodes one field's text; `None` when the exact path must decide.
#[inline(always)]
fn field(codec: Codec, text: &[u8], tuple: &mut Cursor) -> Option<()> {
    let whole = |used: usize| (used == text.len()).then_some(());
    match codec {
        Codec::Int2 => {
            let (v, used) = leading_integer(text, i16::MIN.into(), i16::MAX.into())?;
            tuple.value(&(v as i16).to_be_bytes());
            whole(used)
        }
        Codec::Int4 => {
            let (v, used) = leading_integer(text, i32::MIN.into(), i32::MAX.into())?;
            tuple.value(&(v as i32).to_be_bytes());
            whole(used)
        }
        Codec::Int8 => {
            let (v, used) = leading_integer(text, i64::MIN, i64::MAX)?;
            tuple.value(&v.to_be_bytes());
            whole(used)
        }
        Codec::Numeric => whole(leading_numeric(text, tuple)?),
        Codec::Date => {
            tuple.value(&(iso_date(text)? as i32).to_be_bytes());
            Some(())
        }
        Codec::Timestamp | Codec::TimestampTz | Codec::TimestampTzUtc | Codec::Time => {
            let micros = match codec {
                Codec::Timestamp => timestamp(text),
                Codec::TimestampTz => timestamptz(text, false),
                Codec::TimestampTzUtc => timestamptz(text, true),
                _ => time_of_day(text),
            };
            tuple.value(&micros?.to_be_bytes());
            Some(())
        }
        Codec::TimeTz => {
            tuple.value(&time_with_offset(text)?);
            Some(())
        }
        Codec::Interval => {
            tuple.value(&interval(text)?.binary());
            Some(())
        }
        Codec::Text => {
            tuple.value(text);
            Some(())
        }
        Codec::Uuid => {
            tuple.value(&uuid(text)?);
            Some(())
        }
        Codec::Bool => {
            tuple.value(&[u8::from(boolean(text)?)]);
            Some(())
        }
        Codec::Float8 => {
            tuple.value(&float(text)?.to_be_bytes());
            Some(())
        }
        _ => {
            let mut value = Vec::with_capacity(text.len() + ROOM_PER_FIELD);
            encode_value(codec, text, &mut value).ok()?;
            // The line's room is reserved for fields within ROOM_PER_FIELD
            // of their text: an array of short elements can be more, and
            // the exact path, which writes to a `Vec`, takes its record.
            (value.len() <= text.len() + ROOM_PER_FIELD).then(|| tuple.put(&value))
        }
    }
}

/// `[-+]digits` at the front of `text`, up to 18 digits (longer ones go to
/// the exact path), within `min..=max`; with the bytes it took. Not the
/// exact path's `integer`: bounding the digits keeps the arithmetic in u64
/// (no i128 range check), 3-6 % of the whole encoding on lineitem and
/// transactions.
#[inline]
fn leading_integer(text: &[u8], min: i64, max: i64) -> Option<(i64, usize)> {
    if let Some(v) = short_digits(text) {
        let v = v as i64;
        return (min..=max).contains(&v).then_some((v, text.len()));
    }
    let (negative, sign) = leading_sign(text);
    let (magnitude, digits) = leading_digits(&text[sign..]);
    if digits == 0 || digits > 18 {
        return None;
    }
    let v = if negative { -(magnitude as i64) } else { magnitude as i64 };
    (min..=max).contains(&v).then_some((v, sign + digits))
}

/// Whether `text` starts with a minus, and the sign's length (0 or 1).
#[inline]
fn leading_sign(text: &[u8]) -> (bool, usize) {
    match text.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    }
}

/// The value and count of the decimal digits at the front of `text`
/// (wrapping past 19 digits: callers bound the count).
#[inline]
fn leading_digits(text: &[u8]) -> (u64, usize) {
    let mut value = 0u64;
    for (i, &b) in text.iter().enumerate() {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return (value, i);
        }
        value = value.wrapping_mul(10).wrapping_add(u64::from(d));
    }
    (value, text.len())
}

/// The 1 to 8 bytes of `text` in a little-endian word, zero above them;
/// `None` for a longer or empty `text`. Two overlapping loads instead of a
/// loop: the field's length decides, not each byte.
#[inline(always)]
fn short_word(text: &[u8]) -> Option<u64> {
    let n = text.len();
    let word = match n {
        4..=8 => {
            let low = u64::from(u32::from_le_bytes(text[..4].try_into().ok()?));
            let high = u64::from(u32::from_le_bytes(text[n - 4..].try_into().ok()?));
            low | high << (8 * (n - 4))
        }
        1..=3 => u64::from(text[0]) | u64::from(text[n / 2]) << (8 * (n / 2)) | u64::from(text[n - 1]) << (8 * (n - 1)),
        _ => return None,
    };
    Some(word)
}

/// For each byte of `word` that is not an ASCII digit, its high bit. After
/// `^ 0x30` a digit is 0-9; adding 0x76 sets the high bit of 10 and more.
/// A carry out of a byte (from one of 0x8A or more: not ASCII) can mark the
/// byte above it too, never one below: the lowest mark is always right.
#[inline(always)]
fn non_digits(word: u64) -> u64 {
    let values = word ^ 0x3030_3030_3030_3030;
    (values.wrapping_add(0x7676_7676_7676_7676) | values) & 0x8080_8080_8080_8080
}

/// The number written by the digits in the low `count` bytes of `word`
/// (0 to 8; the first digit in the lowest byte): three multiplications
/// combine neighbouring bytes, then pairs, then quads, instead of a loop
/// whose exit, at a different length each field, is a mispredicted branch.
#[inline(always)]
fn digits_value(word: u64, count: usize) -> u64 {
    quads(word, count).wrapping_mul(10_000 << 32 | 1) >> 32
}

/// The digits in the low `count` bytes of `word` (0 to 8) as the two
/// 4-digit numbers they make when padded to 8 digits with leading zeros:
/// the first in the low 32-bit lane, the last four in the high one.
#[inline(always)]
fn quads(word: u64, count: usize) -> u64 {
    if count == 0 {
        return 0;
    }
    // The digits at the top, zeros (leading zeros of the number) below.
    let v = (word & 0x0F0F_0F0F_0F0F_0F0F) << (8 * (8 - count));
    let v = (v.wrapping_mul(10 << 8 | 1)) >> 8 & 0x00FF_00FF_00FF_00FF;
    (v.wrapping_mul(100 << 16 | 1)) >> 16 & 0x0000_FFFF_0000_FFFF
}

/// A mask of the low `count` bytes of a word (0 to 8).
#[inline(always)]
fn low_bytes(count: usize) -> u64 {
    u64::MAX.checked_shr(8 * (8 - count) as u32).unwrap_or(0)
}

/// `text` as an unsigned integer when it is 1 to 8 digits and nothing else.
#[inline(always)]
fn short_digits(text: &[u8]) -> Option<u64> {
    let word = short_word(text)?;
    (non_digits(word) & low_bytes(text.len()) == 0).then(|| digits_value(word, text.len()))
}

/// `text` as a numeric when it is `digits[.digits]` in 1 to 8 bytes with at
/// most 4 fraction digits (lineitem's decimals, most prices): the point
/// found and both parts read without a loop. `None` sends it to
/// [`leading_numeric`]'s loops, which take every other shape. With
/// [`short_digits`] for integers, `cargo bench --bench encoding` (old and
/// new alternated, medians): lineitem 193.4 -> 179.5 ns a record (5 runs),
/// transactions 50.0 -> 42.7 (3 runs).
#[inline(always)]
fn short_decimal(text: &[u8], tuple: &mut Cursor) -> Option<()> {
    let word = short_word(text)?;
    let marks = non_digits(word);
    // The first byte that is no digit: the point, or the zero past the end.
    let point = (marks.trailing_zeros() / 8) as usize;
    let frac_digits = match point < text.len() {
        true => {
            let after = marks.checked_shr(8 * point as u32 + 8).unwrap_or(0);
            let frac_digits = text.len() - point - 1;
            if text[point] != b'.' || after & low_bytes(frac_digits) != 0 || frac_digits > 4 || text.len() == 1 {
                return None;
            }
            frac_digits
        }
        false => 0,
    };
    let fraction = word.checked_shr(8 * (point as u32 + 1)).unwrap_or(0) & low_bytes(frac_digits);
    let lanes = integer_groups(word, point) | fraction_group(fraction) << 16;
    numeric_of_lanes(false, lanes, frac_digits, tuple);
    Some(())
}

/// The integer of up to 8 digits in the low `count` bytes of `word` as
/// its two base-10000 groups, in the 16-bit lanes at bits 48 (ten
/// thousands) and 32 (units) of a numeric's [lanes](numeric_of_lanes).
/// [`quads`], [`digits_value`]'s first two steps, leaves these groups in
/// its 32-bit lanes, so no third multiplication and no division by 10000
/// are needed:
/// a shorter chain of dependent multiplications for each decimal
/// (lineitem, four decimals a record: 115.8-125.1 ns a record against
/// 126.5-134.5, `cargo bench --bench encoding`, alternated 6 times).
#[inline(always)]
fn integer_groups(word: u64, count: usize) -> u64 {
    let v = quads(word, count);
    v << 48 | v & 0xFFFF_0000_0000
}

/// A fraction's up to 4 digits (the first in the lowest byte, zero bytes
/// after the last) as its base-10000 group: `.5` is 5000, `.25` 2500.
/// The same steps as [`quads`] on 4 digits (`quads(digits, 4) >> 32` is the
/// same value), kept on the low 32 bits: written through `quads`, lineitem
/// took 118.9-119.4 ns a record against 114.7-115.5 (`cargo bench --bench
/// encoding`, alternated 3 times).
#[inline(always)]
fn fraction_group(digits: u64) -> u64 {
    let v = digits & 0x0F0F_0F0F;
    let v = (v.wrapping_mul(10 << 8 | 1)) >> 8 & 0x00FF_00FF;
    (v.wrapping_mul(100 << 16 | 1)) >> 16 & 0xFFFF
}

/// `[-+]digits[.digits]` at the front of `text` as a binary numeric, for up
/// to 16 significant integer digits and 16 fraction digits (the exact
/// encoder takes longer ones, and is the reference in the tests). Not the
/// exact `numeric`: that one writes to a `Vec`, this one into the tuple's
/// room, and it needs no per-digit lookups for the short decimals files hold.
///
/// The short decimal is read inline, the rest out of line: as one call per
/// decimal, saving and restoring registers took a fifth of its samples.
#[inline(always)]
fn leading_numeric(text: &[u8], tuple: &mut Cursor) -> Option<usize> {
    match short_decimal(text, tuple) {
        Some(()) => Some(text.len()),
        None => longer_numeric(text, tuple),
    }
}

/// [`leading_numeric`] for what [`short_decimal`] does not read.
#[inline(never)]
fn longer_numeric(text: &[u8], tuple: &mut Cursor) -> Option<usize> {
    let (negative, sign) = leading_sign(text);
    let zeros = text[sign..].iter().take_while(|&&b| b == b'0').count();
    let (int, int_digits) = leading_digits(&text[sign + zeros..]);
    let point = sign + zeros + int_digits;
    let ((frac, frac_digits), used) = match text.get(point) {
        Some(b'.') => {
            let fraction = leading_digits(&text[point + 1..]);
            (fraction, point + 1 + fraction.1)
        }
        _ => ((0, 0), point),
    };
    if zeros + int_digits + frac_digits == 0 {
        return None;
    }
    if int_digits > 16 || frac_digits > 16 {
        let mut value = Vec::with_capacity(used + ROOM_PER_FIELD);
        numeric(&text[..used], &mut value)?;
        tuple.put(&value);
        return Some(used);
    }
    if int_digits <= 8 && frac_digits <= 4 {
        short_numeric(negative, int, (frac, frac_digits), tuple);
        return Some(used);
    }
    // Base-10000 groups, most significant first: the integer part's, then
    // the fraction's right-padded to a whole group.
    let int_groups = int_digits.div_ceil(4);
    let frac_groups = frac_digits.div_ceil(4);
    let mut groups = [0i16; 8];
    split_groups(int, &mut groups[..int_groups]);
    let padded_frac = frac * GROUP_PADDING[frac_digits % 4];
    split_groups(padded_frac, &mut groups[int_groups..int_groups + frac_groups]);
    let all = &groups[..int_groups + frac_groups];
    let leading = all.iter().take_while(|&&g| g == 0).count();
    let significant = all.iter().rposition(|&g| g != 0).map_or(0, |i| i + 1 - leading);
    let (weight, sign) = match significant {
        0 => (0, 0u16),
        _ => (int_groups as i16 - 1 - leading as i16, if negative { 0x4000 } else { 0 }),
    };
    tuple.put(&((8 + 2 * significant) as i32).to_be_bytes());
    tuple.put(&(significant as i16).to_be_bytes());
    tuple.put(&weight.to_be_bytes());
    tuple.put(&sign.to_be_bytes());
    tuple.put(&(frac_digits as i16).to_be_bytes());
    for group in &all[leading..leading + significant] {
        tuple.put(&group.to_be_bytes());
    }
    Some(used)
}

/// A numeric of at most 8 integer digits and 4 fraction digits (nearly
/// every decimal in a file: prices, rates, quantities) in straight-line
/// code: its three base-10000 groups (ten-thousands, units, the fraction)
/// are 16-bit lanes of one word. Measured with `cargo bench --bench
/// encoding`: lineitem's 4 decimals took about 85 of 380 ns a record with
/// the general case's loops; this path brought the record from 357 to 325 ns.
#[inline(always)]
fn short_numeric(negative: bool, int: u64, (frac, frac_digits): (u64, usize), tuple: &mut Cursor) {
    let frac_group = frac * GROUP_PADDING[frac_digits % 4];
    let lanes = (int / 10_000) << 48 | (int % 10_000) << 32 | frac_group << 16;
    numeric_of_lanes(negative, lanes, frac_digits, tuple);
}

/// Writes the numeric whose base-10000 groups are the 16-bit lanes of
/// `lanes` (ten thousands, units, the fraction, zero), with `frac_digits`
/// digits after the point.
#[inline(always)]
fn numeric_of_lanes(negative: bool, lanes: u64, frac_digits: usize, tuple: &mut Cursor) {
    // The zero lanes in front and behind are the groups left out. Without
    // a branch for zero (4 leading and 4 trailing lanes: no group, weight
    // 0, no sign), which a tenth of lineitem's decimals are, at random.
    let nonzero = u32::from(lanes != 0);
    let leading = lanes.leading_zeros() / 16;
    let significant = 4u32.saturating_sub(leading + lanes.trailing_zeros() / 16);
    let weight = (1 - leading as i16) * nonzero as i16;
    let sign = 0x4000 * u16::from(negative) * nonzero as u16;
    let groups = lanes << ((16 * leading) & 63);
    let len = 12 + 2 * significant as usize;
    // Stored from registers as three words: a block built a few bytes at a
    // time on the stack and then copied whole is read back before its
    // stores have landed (lineitem: 148.0 ns a record against 146.6,
    // `cargo bench --bench encoding`, old and new alternated).
    let head = u64::from(8 + 2 * significant) << 32 | u64::from(significant) << 16 | u64::from(weight as u16);
    let middle = u64::from(sign) << 48 | (frac_digits as u64) << 32 | groups >> 32;
    let words = (head.to_be_bytes(), middle.to_be_bytes(), (groups as u32).to_be_bytes());
    if !tuple.words(words, len) {
        let mut block = [0u8; 20];
        block[..8].copy_from_slice(&words.0);
        block[8..16].copy_from_slice(&words.1);
        block[16..].copy_from_slice(&words.2);
        tuple.put(&block[..len]);
    }
}

/// What a fraction of `n % 4` digits is multiplied by to fill its last
/// base-10000 group. A static: an array literal indexed in place was built
/// on the stack at every call.
static GROUP_PADDING: [u64; 4] = [1, 1000, 100, 10];

/// `value`'s base-10000 digits into `groups`, least significant last.
#[inline]
fn split_groups(mut value: u64, groups: &mut [i16]) {
    for group in groups.iter_mut().rev() {
        *group = (value % 10_000) as i16;
        value /= 10_000;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_match_the_exact_encoder() {
        let cases: [&[u8]; 14] = [
            b"21168.23",
            b"-0.04",
            b"0.00",
            b"-0",
            b".00001",
            b"100000000",
            b"0",
            b"+12.5",
            b"0001.1000",
            b"9999999999999999.9999999999999999",
            b"12345678901234567.5",
            b"1.",
            b"00000.000000000",
            b"10000.0001",
        ];
        let fast = |text: &[u8]| {
            let mut room = [MaybeUninit::uninit(); 64];
            let mut tuple = Cursor { room: &mut room, at: 0 };
            leading_numeric(text, &mut tuple).map(|used| (used, tuple.written()))
        };
        for case in cases {
            let mut exact = Vec::new();
            numeric(case, &mut exact).unwrap();
            assert_eq!(fast(case), Some((case.len(), exact)), "{:?}", String::from_utf8_lossy(case));
        }
        assert_eq!(fast(b"."), None);
        assert_eq!(fast(b"-|"), None);
        assert_eq!(fast(b"12|3").map(|f| f.0), Some(2));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// The wide pass finds what the portable one finds: the same
        /// newline and field ends, or the same refusal; lines that run into
        /// the input's last 63 bytes it leaves to the portable pass.
        #[test]
        fn the_wide_pass_splits_like_the_portable_one(
            long_start in proptest::collection::vec(0usize..4, 0..200),
            picks in proptest::collection::vec(0usize..24, 0..400),
            fields_off in -2i64..3,
            csv in proptest::bool::ANY,
            counted_specials in proptest::bool::ANY,
            crlf in proptest::bool::ANY,
            bytes in 0usize..3,
        ) {
            if !wide::available() {
                return Ok(());
            }
            // Short fields and long lines: delimiters, newlines and unclean
            // bytes fall anywhere in a block, and lines cross blocks (the
            // first line starts with `long_start`, clean and with fewer
            // delimiters). `fields` is the first line's count, or near it. With
            // `bytes` 1, lines have no unclean byte and many fields (more than
            // eight delimiters to a block).
            // With 2, CSV lines with quoted fields, which hold delimiters and
            // cross blocks, and some an odd count of quotes.
            let alphabet: &[u8] = [&b"|||\n\"\\\r\0x"[..], b"|||x|\n", b"|x\"xx|xxx|\"x|xxxx|x\"xxx\n"][bytes];
            let start = long_start.iter().map(|&i| b"xxx|"[i]);
            let input: Vec<u8> = start.chain(picks.iter().map(|&i| alphabet[i % alphabet.len()])).collect();
            let (newline, stray) = if crlf { (b'\r', b'\n') } else { (b'\n', b'\r') };
            let quoted_fields = csv && counted_specials;
            let stops =
                Stops { delimiter: b'|', special: if csv { b'"' } else { b'\\' }, counted_specials, quoted_fields, newline, stray };
            // The first line's field count, or one or two off.
            let first_line = &input[..memchr(newline, &input).unwrap_or(input.len())];
            let mut inside = false;
            let delimiters = first_line
                .iter()
                .filter(|&&b| {
                    inside ^= quoted_fields && b == b'"';
                    b == b'|' && !inside
                })
                .count() as i64;
            let fields = (delimiters + 1 + fields_off).max(1) as usize;
            let room = fields + wide::ROOM_AFTER_ENDS;
            let (mut wide_ends, mut portable_ends) = (vec![0; room], vec![0; room]);
            let portable = split_line::<false>(&input, stops, &mut portable_ends, fields);
            // SAFETY: checked just above.
            match unsafe { wide::split_line(&input, stops, &mut wide_ends, fields) } {
                wide::Split::Line(newline, specials) => {
                    proptest::prop_assert_eq!(Some((newline, specials)), portable);
                    proptest::prop_assert_eq!(&wide_ends[..fields], &portable_ends[..fields]);
                }
                wide::Split::NotClean => proptest::prop_assert_eq!(portable, None),
                wide::Split::NearTheEnd => {
                    let newline = memchr(newline, &input);
                    proptest::prop_assert!(newline.map_or(input.len(), |n| n + 1) + wide::BLOCK - 1 > input.len());
                }
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(5000))]
        /// Decimals of every short shape (the straight-line groups) and a
        /// little beyond (the general loop) encode as the exact encoder does.
        #[test]
        fn short_decimals_match_the_exact_encoder(
            sign in 0usize..3,
            zeros in 0usize..3,
            int in proptest::option::of(0u64..2_000_000_000),
            frac in proptest::option::of((0u64..1_000_000, 0usize..7)),
        ) {
            let mut text = ["", "-", "+"][sign].to_string() + &"0".repeat(zeros);
            if let Some(int) = int {
                text += &int.to_string();
            }
            if let Some((frac, digits)) = frac {
                text += &format!(".{:0digits$}", frac % 10u64.pow(digits as u32));
            }
            let mut room = [MaybeUninit::uninit(); 64];
            let mut tuple = Cursor { room: &mut room, at: 0 };
            let fast = leading_numeric(text.as_bytes(), &mut tuple).map(|used| (used, tuple.written()));
            let mut exact = Vec::new();
            match numeric(text.as_bytes(), &mut exact) {
                Some(()) => proptest::prop_assert_eq!(fast, Some((text.len(), exact)), "{}", text),
                None => proptest::prop_assert!(fast.is_none_or(|(used, _)| used < text.len()), "{}", text),
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(5000))]
        /// Numerics with an exponent (`4.39563e-5`), read without sending
        /// their record to the exact path, encode as the exact encoder does;
        /// only those written out past 64 bytes go there.
        #[test]
        fn numerics_with_an_exponent_match_the_exact_encoder(
            sign in 0usize..3,
            int in proptest::option::of(0u64..1_000_000_000),
            frac in proptest::option::of((0u64..1_000_000_000, 0usize..10)),
            e in 0usize..2,
            exponent in -70i64..70,
            exponent_sign in proptest::bool::ANY,
        ) {
            let mut text = ["", "-", "+"][sign].to_string();
            if let Some(int) = int {
                text += &int.to_string();
            }
            if let Some((frac, digits)) = frac {
                text += &format!(".{:0digits$}", frac % 10u64.pow(digits as u32));
            }
            let plus = if exponent_sign && exponent >= 0 { "+" } else { "" };
            text += &format!("{}{plus}{exponent}", ["e", "E"][e]);
            let mut room = [MaybeUninit::uninit(); 256];
            let mut tuple = Cursor { room: &mut room, at: 0 };
            let fast = unusual_field(Codec::Numeric, text.as_bytes(), None, &mut tuple).map(|()| tuple.written());
            let mut exact = Vec::new();
            let exact = encode_value(Codec::Numeric, text.as_bytes(), &mut exact).ok().map(|()| exact);
            match fast {
                Some(fast) => {
                    proptest::prop_assert_eq!(Some(&fast), exact.as_ref(), "{}", text);
                    proptest::prop_assert!(fast.len() <= text.len() + ROOM_PER_FIELD, "{}", text);
                }
                None => {
                    let written_out = exponent_written_out(text.as_bytes()).map(|p| p.concat().len());
                    proptest::prop_assert!(exact.is_none() || written_out > Some(super::super::SHORT_DECIMAL), "{}", text);
                }
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20000))]
        /// Short fields of digits, points, signs and other bytes (a
        /// non-ASCII one, whose carry the digit check must survive): the
        /// word-at-a-time reading takes what the exact encoders take, and
        /// gives what they give.
        #[test]
        fn short_fields_read_a_word_at_a_time_match_the_exact_encoders(
            text in proptest::collection::vec(proptest::sample::select(
                b"0123456789999.-+ e\xc3\xff/:".to_vec()), 0..11),
        ) {
            let mut room = [MaybeUninit::uninit(); 64];
            let mut tuple = Cursor { room: &mut room, at: 0 };
            let fast = leading_numeric(&text, &mut tuple).filter(|&used| used == text.len()).map(|_| tuple.written());
            let mut exact = Vec::new();
            let exact = numeric(&text, &mut exact).map(|()| exact);
            proptest::prop_assert!(fast.is_none() || fast == exact, "{:?}", String::from_utf8_lossy(&text));
            let fast = leading_integer(&text, i64::MIN, i64::MAX).filter(|&(_, used)| used == text.len());
            let naive = std::str::from_utf8(&text).ok().and_then(|t| t.parse::<i64>().ok());
            proptest::prop_assert_eq!(fast.map(|(v, _)| v), naive, "{:?}", String::from_utf8_lossy(&text));
        }
    }

    #[test]
    fn integers_stop_at_the_first_other_byte() {
        assert_eq!(leading_integer(b"-12|x", i64::MIN, i64::MAX), Some((-12, 3)));
        assert_eq!(leading_integer(b"128", -128, 127), None);
        assert_eq!(leading_integer(b"1234567890123456789", i64::MIN, i64::MAX), None, "19 digits: exact path");
        assert_eq!(leading_integer(b"+", i64::MIN, i64::MAX), None);
    }
}
