//! What the start of the inputs says before anything loads: the unit of
//! Unix times in columns read with `--unix-times`, and backslashes that the
//! text format would drop without an error.
//!
//! Both are read from the first MiB or so of the first inputs, because a
//! wrong guess here is silent later: seconds loaded as milliseconds all
//! fall in January 1970, and a dropped backslash loads as another value.

use std::collections::HashMap;
use std::sync::Arc;

use crate::encoding::Utf16Sign;
use crate::error::Error;
use crate::format::convert::{self, Conversion, TimeUnit, UnixTimes};
use crate::format::documents::{self, DocumentColumns};
use crate::format::{FormatKind, FormatOptions};
use crate::source::{Compression, Source, STREAM_HEAD};

use super::plan;

/// `format` with each time column's `--unix-times` unit settled by the
/// first records of the first input, and the columns left unconverted. A
/// unit given that their numbers contradict (see [`convert::wrong_unit`])
/// is refused before anything loads, since seconds loaded as milliseconds
/// are all in January 1970; `auto` is settled by [`units_told`].
pub(super) fn settle_time_units(
    sources: &[Source],
    format: &FormatOptions,
) -> Result<(FormatOptions, Vec<String>), Error> {
    let Some(unix_times) = format.unix_times else { return Ok((format.clone(), Vec::new())) };
    let (name, head) = first_head(sources);
    let refused = |message: String| Error::Input { file: name.to_string(), message };
    let columns = time_columns_in_head(&head, format);
    let UnixTimes::Auto = unix_times else {
        let unit = unix_times.unit_to_begin_with();
        for (column, values) in columns {
            if let Some(why) = convert::wrong_unit(&column, unit, values.iter().map(Vec::as_slice)) {
                return Err(refused(why));
            }
        }
        return Ok((format.clone(), Vec::new()));
    };
    let (units, unconverted) = units_told(&columns).map_err(refused)?;
    Ok((with_time_units(format, &units), unconverted))
}

/// For `--unix-times auto`: each time column's unit, told by its values in
/// the first records (`columns`), and the columns left unconverted. A
/// column gets the unit its numbers read in (see
/// [`convert::unit_told_by`]); one whose numbers tell none, the one unit
/// the others' agree on (pandas writes every column in one unit, birthdays
/// before 1990 too). Without that, a column whose first records hold
/// numbers is refused, asking for the unit (a guess is wrong by a factor
/// of a thousand), and one whose first records hold no number is not
/// converted: a number in it later is rejected, with the unit it likely
/// is in (see [`super::hints`]).
fn units_told(columns: &[(String, Vec<Vec<u8>>)]) -> Result<(HashMap<String, TimeUnit>, Vec<String>), String> {
    let mut units = HashMap::new();
    for (column, values) in columns {
        if let Some(unit) = convert::unit_told_by(column, values.iter().map(Vec::as_slice))? {
            units.insert(column.clone(), unit);
        }
    }
    let mut agreed: Vec<TimeUnit> = units.values().copied().collect();
    agreed.sort_unstable();
    agreed.dedup();
    let (mut counted, mut empty) = (Vec::new(), Vec::new());
    let untold: Vec<&(String, Vec<Vec<u8>>)> =
        columns.iter().filter(|(column, _)| !units.contains_key(column)).collect();
    for (column, values) in untold {
        match agreed.as_slice() {
            [unit] => {
                units.insert(column.clone(), *unit);
            }
            _ if values.iter().any(|v| convert::is_count(v)) => counted.push(column.clone()),
            _ => empty.push(column.clone()),
        }
    }
    if counted.is_empty() {
        return Ok((units, empty));
    }
    let others = if agreed.is_empty() { "" } else { ", and the other columns' are in different units" };
    let which = if counted.len() == 1 { "column" } else { "columns" };
    Err(format!(
        "--unix-times auto: no number in the first records of {which} {} reads as a Unix time from 1990 to 2100 \
         (10 digits in seconds, 13 in milliseconds, 16 in microseconds, 19 in nanoseconds){others}; say which unit \
         with --unix-times s, ms, us or ns",
        plan::quoted_list(&counted)
    ))
}

/// `format` with each time column's Unix times in its unit of `units`, and
/// a column without one not converted.
fn with_time_units(format: &FormatOptions, units: &HashMap<String, TimeUnit>) -> FormatOptions {
    let settled = |conversion: Conversion, column: &str| match conversion {
        Conversion::UnixTime { .. } => Some(conversion.in_unit(*units.get(column)?)),
        Conversion::Number(_) => Some(conversion),
    };
    let mut format = format.clone();
    if let Some(picks) = &format.picks {
        let picks = picks.with_conversions(settled);
        let needed = picks.leave_some_out() || picks.conversions().next().is_some();
        format.picks = needed.then(|| Arc::new(picks));
    }
    if let Some(documents) = &format.documents {
        let mut documents = DocumentColumns::clone(documents);
        for (conversion, column) in documents.conversions.iter_mut().zip(&documents.columns) {
            *conversion = conversion.and_then(|c| settled(c, column));
        }
        format.documents = Some(Arc::new(documents));
    }
    format
}

/// Each column whose numbers are read as Unix times, with its values in
/// the records `head` holds whole, as written.
fn time_columns_in_head(head: &[u8], format: &FormatOptions) -> Vec<(String, Vec<Vec<u8>>)> {
    let is_time = |c: &Conversion| matches!(c, Conversion::UnixTime { .. });
    match (&format.picks, &format.documents) {
        (Some(picks), _) => {
            let values = crate::format::pick::converted_values(head, format, picks);
            let columns = picks.conversions().filter(|(c, _)| is_time(c)).map(|(_, column)| column);
            columns
                .map(|column| {
                    let of_column = values.iter().filter(|((_, c), _)| c == column).map(|(_, v)| v.to_vec());
                    (column.clone(), of_column.collect())
                })
                .collect()
        }
        (None, Some(documents)) => {
            let timed: Vec<usize> = (0..documents.columns.len())
                .filter(|&i| documents.conversions.get(i).copied().flatten().is_some_and(|c| is_time(&c)))
                .collect();
            let keys: Vec<&str> = timed.iter().map(|&i| documents.keys[i].as_str()).collect();
            let values = documents::values_in(head, &keys);
            let of_key = |k: usize| values.iter().filter(|(i, _)| *i == k).map(|(_, v)| v.clone()).collect();
            timed.iter().enumerate().map(|(k, &i)| (documents.columns[i].clone(), of_key(k))).collect()
        }
        (None, None) => Vec::new(),
    }
}

/// The start of the first input that holds anything (the last if none
/// does), and its name.
pub(super) fn first_head(sources: &[Source]) -> (Arc<str>, Vec<u8>) {
    let mut first = None;
    for source in sources {
        let head = start_of(source, STREAM_HEAD as u64);
        let found = !head.trim_ascii().is_empty();
        first = Some((source.name.clone(), head));
        if found {
            break;
        }
    }
    first.unwrap_or_default()
}

/// How many blocks [`across`] reads from the first input, how long each
/// is, and of how many other inputs it reads the start.
const BLOCKS_ACROSS: u64 = 16;
const BLOCK_ACROSS: u64 = 64 << 10;
const OTHER_INPUTS: usize = 8;

/// Blocks of whole lines (each from after a line end to its last) from
/// further in the inputs than the first one's head, for the `CREATE TABLE`
/// sketch (see `sketch::create_table`), and whether some are from other
/// inputs: from places evenly apart across the first input past its first
/// [`STREAM_HEAD`] bytes, when it is a plain file (a compressed one or a
/// pipe can only be read from its start), and from the starts of up to
/// [`OTHER_INPUTS`] of the others, evenly apart in their order (a glob's
/// later files hold other months, other shards), each from after its
/// first line end, which leaves out its header. About 1.5 MiB read, in
/// milliseconds.
pub(super) fn across(sources: &[Source], name: &str) -> (Vec<Vec<u8>>, bool) {
    let Some(first) = sources.iter().position(|source| &*source.name == name) else { return (Vec::new(), false) };
    let mut blocks = blocks_across(&sources[first]);
    let others: Vec<&Source> =
        sources[first + 1..].iter().filter(|source| source.utf16 == Utf16Sign::None && source.pipe.is_none()).collect();
    // The last among them: a glob's newest file, often.
    let (n, k) = (others.len(), others.len().min(OTHER_INPUTS));
    let starts: Vec<Vec<u8>> = (0..k)
        .map(|j| others[j * n.saturating_sub(1) / k.saturating_sub(1).max(1)])
        .filter_map(|source| whole_lines(&start_of(source, BLOCK_ACROSS)).map(<[u8]>::to_vec))
        .collect();
    let from_others = !starts.is_empty();
    blocks.extend(starts);
    (blocks, from_others)
}

/// [`across`]'s blocks of one plain file.
fn blocks_across(source: &Source) -> Vec<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let plain = source.compression == Compression::None && source.pipe.is_none() && source.start.is_none();
    let (Some(path), Some(size), true) = (&source.path, source.size, plain && source.utf16 == Utf16Sign::None) else {
        return Vec::new();
    };
    let Some(span) = size.checked_sub(STREAM_HEAD as u64 + BLOCK_ACROSS).filter(|&span| span > 0) else {
        return Vec::new();
    };
    let Ok(mut file) = std::fs::File::open(path) else { return Vec::new() };
    let mut blocks = Vec::new();
    for i in 1..=BLOCKS_ACROSS {
        let mut block = Vec::new();
        let at = STREAM_HEAD as u64 + span * i / BLOCKS_ACROSS;
        if file.seek(SeekFrom::Start(at)).is_err() || (&mut file).take(BLOCK_ACROSS).read_to_end(&mut block).is_err() {
            break;
        }
        blocks.extend(whole_lines(&block).map(<[u8]>::to_vec));
    }
    blocks
}

/// `block` from after its first line end to its last.
fn whole_lines(block: &[u8]) -> Option<&[u8]> {
    let (first, last) = (memchr::memchr(b'\n', block)?, memchr::memrchr(b'\n', block)?);
    Some(&block[first + 1..=last])
}

/// How much of the inputs is looked at for backslashes the text format
/// would drop: the first input's first MiB (thousands of lines, read in
/// milliseconds), and the first 64 KiB of each of the next 64, so that a glob
/// whose later files hold Windows paths is not judged by its first file.
const ESCAPES_SAMPLE: u64 = 1 << 20;
const ESCAPES_SAMPLE_OF_OTHERS: u64 = 64 << 10;
const ESCAPES_SAMPLED_INPUTS: usize = 65;

/// The warning for backslashes the text format would drop without an error
/// (see [`crate::format::escapes`]), from the start of the first inputs.
pub(super) fn odd_escapes_warning(sources: &[Source], format: &FormatOptions) -> Option<String> {
    if format.kind != FormatKind::Tsv {
        return None;
    }
    let delimiter = format.delimiter.unwrap_or(b'\t');
    let csv_delimiter = match delimiter {
        b'\t' => "tab".to_string(),
        d => format!("'{}'", d as char),
    };
    sources.iter().take(ESCAPES_SAMPLED_INPUTS).enumerate().find_map(|(i, source)| {
        let sample = start_of(source, if i == 0 { ESCAPES_SAMPLE } else { ESCAPES_SAMPLE_OF_OTHERS });
        let odd = crate::format::escapes::odd_escapes(&sample, delimiter, u64::from(format.header))?;
        let (escape, kept) = (String::from_utf8_lossy(&odd.first), String::from_utf8_lossy(&odd.first[1..]));
        Some(format!(
            "{}: line {} has `{escape}`, a backslash before a byte that PostgreSQL's text format (--format tsv) \
             does not escape: the server drops such backslashes without an error (`{escape}` loads as `{kept}`; {} \
             in its first {}). If the backslashes are data (Windows paths, regular expressions), load it with \
             --format csv --delimiter {csv_delimiter} instead",
            source.name,
            odd.first_line + source.skip_lines,
            odd.count,
            crate::report::human_bytes(sample.len() as u64),
        ))
    })
}

/// Up to `limit` bytes from the start of `source`, after the lines
/// `--skip-lines` skips (and so its byte-order mark with them, if any);
/// what could not be read shows up in the load itself.
pub(super) fn start_of(source: &Source, limit: u64) -> Vec<u8> {
    use std::io::Read;
    let mut sample = Vec::new();
    if let Ok((stream, _, _)) = source.open_start() {
        let mut stream = std::io::BufReader::new(stream);
        if skip_lines(&mut stream, source.skip_lines).is_ok() {
            let _ = stream.take(limit).read_to_end(&mut sample);
        }
    }
    sample
}

/// Reads past the first `lines` lines of `input`, as the chunker skips
/// them: each to a `\n`, or to a `\r` where the first line ends with a
/// bare one.
fn skip_lines(input: &mut impl std::io::BufRead, lines: u64) -> std::io::Result<()> {
    let mut line_end = None;
    for _ in 0..lines {
        loop {
            let unread = input.fill_buf()?;
            if unread.is_empty() {
                return Ok(());
            }
            let end = *line_end.get_or_insert_with(|| crate::format::scan::skipped_line_end(unread, false));
            match memchr::memchr(end, unread) {
                Some(at) => {
                    input.consume(at + 1);
                    break;
                }
                None => {
                    let all = unread.len();
                    input.consume(all);
                }
            }
        }
    }
    Ok(())
}
