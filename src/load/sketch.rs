//! A `CREATE TABLE` for a table that does not exist yet, from the first
//! records of the input: said with the error that stops the load, for the
//! user to read, change and run. sluice creates no table itself.
//!
//! Why: the target table must exist before COPY, and writing its statement
//! by hand for a file of 40 columns is the first chore of every new load
//! (psql, pgloader's CSV source and timescaledb-parallel-copy all stop
//! there, as sluice did, with no more than "does not exist"). Why our own
//! code: the guess is a few rules over sampled values, in the types the
//! server reads those values as; no crate guesses PostgreSQL types.
//!
//! The rules: a column is `bigint` when each of its values is a whole
//! number that fits, `numeric` when each is a number, `boolean` for
//! `true`/`false` (`t`/`f`, `yes`/`no`), `date` for ISO dates, `timestamp`
//! or `timestamptz` (any with a zone) for ISO times, `time`, `uuid`, `jsonb` for
//! JSON objects and arrays, and `text` for anything else or a mix. Empty
//! values are NULL and say nothing. Names are the header's (or the keys'),
//! written as SQL names (`Order ID` as `order_id`, which `--header` matches
//! to the field), or `column1`... without a header. Numbers are read as
//! `--decimal-comma`, `--thousands`, `--currency`, `--percent` and
//! `--trailing-minus` say, and a text column
//! whose values are numbers written another way is named after the
//! statement with the flags that read them, and one of dates in the other
//! order of day and month with the DateStyle that reads them (see
//! [`ReadOtherwise`]).

use std::borrow::Cow;

use serde_json::Value;

use crate::format::binary::{time_value, Codec, DateOrder};
use crate::format::convert::{before_trailing_minus, Conversion, NumberMarks, NumberWriting};
use crate::format::currency::Currency;
use crate::format::{documents, head_records, FormatKind, FormatOptions};
use crate::report::thousands;
use crate::sql::quote_ident;

use super::plan::header_fields;
use super::suspect;

/// How many records of the first input the guess reads.
const SAMPLED_RECORDS: usize = 1_000;

/// How many records of each block from across the input (see
/// `first_look::across`) the guess reads besides.
const RECORDS_A_BLOCK: usize = 250;

/// What the first records say: the columns' names (as many as known) and
/// guesses, how many records were read (from the start, and from across
/// the input), and whether a first line was taken for a header without
/// `--header`.
struct Sampled {
    names: Vec<String>,
    guesses: Vec<Guess>,
    read: usize,
    read_across: usize,
    header_guessed: bool,
    /// Text columns whose values are numbers as other flags write them,
    /// or dates in the order of day and month the session does not read.
    otherwise: Vec<ReadOtherwise>,
}

/// Columns guessed text whose every value reads as a number with the
/// flags that say how numbers are written (`--currency '$' --thousands
/// ','` for `$1,234.50`), or as a date or time in the other order of day
/// and month than the session's DateStyle (`31/01/2024` where it is MDY).
/// Why: the sketch fits the load as given, so such a column was `text`,
/// and the table made from it loaded the amounts or dates as text without
/// a word.
#[derive(Debug, PartialEq)]
struct ReadOtherwise {
    /// The columns, by place.
    columns: Vec<usize>,
    /// What reads them.
    by: ReadBy,
    /// The first value of the first column that is read only so.
    example: String,
    /// What each column then fits: bigint or numeric (one for all), a
    /// date or time.
    guesses: Vec<Guess>,
}

/// What reads a text column's values as numbers, or as dates or times.
#[derive(Debug, PartialEq)]
enum ReadBy {
    /// These flags, or two ways for a lone comma before three digits.
    Flags(String),
    /// A session whose DateStyle reads dates in this order.
    DateStyle(DateOrder),
}

/// What a column's values so far fit, narrowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Guess {
    /// No value yet (or NULLs only).
    Nothing,
    Bigint,
    Numeric,
    Boolean,
    Date,
    Timestamp,
    TimestampTz,
    /// A time of day.
    Time,
    Uuid,
    Jsonb,
    Text,
}

impl Guess {
    fn sql(self) -> &'static str {
        match self {
            Guess::Nothing | Guess::Text => "text",
            Guess::Bigint => "bigint",
            Guess::Numeric => "numeric",
            Guess::Boolean => "boolean",
            Guess::Date => "date",
            Guess::Timestamp => "timestamp",
            Guess::TimestampTz => "timestamptz",
            Guess::Time => "time",
            Guess::Uuid => "uuid",
            Guess::Jsonb => "jsonb",
        }
    }

    /// The narrowest guess that takes the values of both: whole numbers
    /// widen to numbers, dates to times, times to times with a zone; any
    /// other pair is text.
    fn join(self, other: Guess) -> Guess {
        use Guess::*;
        match (self, other) {
            (a, b) if a == b => a,
            (Nothing, x) | (x, Nothing) => x,
            (Bigint, Numeric) | (Numeric, Bigint) => Numeric,
            (Date | Timestamp, Timestamp) | (Timestamp, Date) => Timestamp,
            (Date | Timestamp | TimestampTz, TimestampTz) | (TimestampTz, Date | Timestamp) => TimestampTz,
            _ => Text,
        }
    }
}

/// The statement that creates `table` (as the user named it) for the
/// first records of `head`, the first input's start (named `input`), and
/// those of `across`, blocks of whole lines from across the rest of it
/// (and from other inputs, the `bool`),
/// with the columns `given` (`--columns`) or else those the header or keys
/// name, and how many records it read; `None` when it holds none, or when
/// `--columns` leaves fields out. Why across: the first records of an
/// export are often its oldest, or the first ids, and a column whole there
/// (`bigint`) held `12.5` or `n/a` further on, where every such record was
/// then rejected by the table made from the sketch.
pub(super) fn create_table(
    table: &str,
    format: &FormatOptions,
    given: Option<&[String]>,
    (input, head): (&str, &[u8]),
    order: Option<DateOrder>,
    (across, from_others): (&[Vec<u8>], bool),
) -> Option<String> {
    let Sampled { mut names, mut guesses, read, read_across, header_guessed, otherwise } = match format.kind {
        FormatKind::Jsonl => documents(head, order, across)?,
        _ => records(format, head, order, across)?,
    };
    if let Some(given) = given {
        if given.iter().any(|name| name.trim() == "-") || format.kind == FormatKind::Jsonl {
            return None;
        }
        names = given.iter().map(|name| name.trim().to_string()).collect();
    }
    names.resize(guesses.len().max(names.len()), String::new());
    guesses.resize(names.len(), Guess::Nothing);
    let columns: Vec<String> =
        sql_names(&names).iter().zip(&guesses).map(|(name, guess)| format!("{name} {}", guess.sql())).collect();
    let records = match read {
        1 => "record".to_string(),
        n => format!("{} records", thousands(n as u64)),
    };
    let across = match read_across {
        0 => String::new(),
        n if from_others => format!(" and {} from across the inputs", thousands(n as u64)),
        n => format!(" and {} from across it", thousands(n as u64)),
    };
    let header = match header_guessed && given.is_none() {
        true => ", its first line read as a header (pass --header, which skips it)",
        false => "",
    };
    let input = if input == "-" { "standard input" } else { input };
    let otherwise: String = otherwise.iter().map(|o| read_otherwise_said(o, &names)).collect();
    // Documents also load whole, into a table's one json or jsonb column.
    let whole = match format.kind {
        FormatKind::Jsonl => {
            format!(
                " Or, for each document whole: CREATE TABLE {} (\"doc\" jsonb);",
                crate::sql::quote_qualified_name(table)
            )
        }
        _ => String::new(),
    };
    Some(format!(
        "The first {records} of {input}{across} fit this table{header}: CREATE TABLE {} ({});{otherwise}{whole}",
        crate::sql::quote_qualified_name(table),
        columns.join(", ")
    ))
}

/// CSV and TSV: the header's names (or none) and each field's guess. A
/// first line without `--header` whose every field is text where the
/// records after it have a typed column is taken for a header (and said).
fn records(format: &FormatOptions, head: &[u8], order: Option<DateOrder>, across: &[Vec<u8>]) -> Option<Sampled> {
    // Whole records only: the head may end inside one.
    let all = head_records(head, &FormatOptions { header: false, ..format.clone() });
    let all = &all[..all.len().min(SAMPLED_RECORDS + 1)];
    // Files joined with cat repeat their header among the records: as
    // values, a repeat of `id` made the id column text.
    let (first, rest) = match all.split_first() {
        Some((first, rest)) => (Some(*first), rest.iter().copied().filter(|r| !same_line(r, first)).collect()),
        None => (None, Vec::new()),
    };
    let (names, body, header_guessed) = match (format.header, first) {
        (true, Some(header)) => (header_fields(header, format).unwrap_or_default(), &rest[..], false),
        (false, Some(first)) if is_a_header(first, &rest, format, order) => {
            (header_fields(first, format).unwrap_or_default(), &rest[..], true)
        }
        _ => (Vec::new(), all, false),
    };
    let body = &body[..body.len().min(SAMPLED_RECORDS)];
    if body.is_empty() && names.is_empty() {
        return None;
    }
    let read = body.len();
    let header = first.filter(|_| format.header || header_guessed);
    let across = records_across(format, across, &names, body);
    let across: Vec<&[u8]> = across.into_iter().filter(|r| header.map_or(true, |h| !same_line(r, h))).collect();
    let body = [body, &across].concat();
    let mut guesses = guesses_of(&body, format, order);
    guesses.resize(guesses.len().max(names.len()), Guess::Nothing);
    let mut otherwise = numbers_otherwise(&body, format, &guesses, order);
    otherwise.extend(dates_otherwise(&body, format, &guesses, order));
    otherwise.sort_by_key(|read| read.columns[0]);
    Some(Sampled { names, guesses, read, read_across: body.len() - read, header_guessed, otherwise })
}

/// Whether two records are the same line, whatever their line ends and a
/// byte-order mark before either.
fn same_line(a: &[u8], b: &[u8]) -> bool {
    let bare = |record| {
        let line = crate::format::without_line_end(record);
        line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
    };
    bare(a) == bare(b)
}

/// The records of `across`'s blocks (see [`RECORDS_A_BLOCK`]) that have as
/// many fields as the header `names` (or the first of `body`). A block
/// begins after a line end, which may be inside a quoted field: read from
/// there, its quotes open where they close and most records have another
/// count. So each block is read from after each of its first
/// [`STARTS_TRIED`] line ends, and the start that gives the most such
/// records is taken.
fn records_across<'a>(
    format: &FormatOptions,
    across: &'a [Vec<u8>],
    names: &[String],
    body: &[&[u8]],
) -> Vec<&'a [u8]> {
    let count = |record: &[u8]| header_fields(record, format).map(|fields| fields.len());
    let Some(fields) = (!names.is_empty()).then_some(names.len()).or_else(|| count(body.first()?)) else {
        return Vec::new();
    };
    let unheaded = FormatOptions { header: false, ..format.clone() };
    let fitting = |block: &'a [u8]| -> Vec<&'a [u8]> {
        let records = head_records(block, &unheaded).into_iter().take(RECORDS_A_BLOCK);
        records.filter(|record| count(record) == Some(fields)).collect()
    };
    let mut found = Vec::new();
    for block in across {
        let starts = std::iter::once(0).chain(memchr::memchr_iter(b'\n', block).map(|at| at + 1));
        let best = starts.take(STARTS_TRIED).map(|start| fitting(&block[start..])).max_by_key(Vec::len);
        found.extend(best.unwrap_or_default());
    }
    found
}

/// How many line ends of a block from across the input are tried as its
/// first record's start (see [`records_across`]): a record of a quoted
/// field with line ends in it spans as many lines and one more.
const STARTS_TRIED: usize = 4;

/// The text columns of `guesses` whose every value in `body` reads as a
/// number when written as other flags say, grouped by those flags (all
/// of them: a column the user's flags read is a number column already).
fn numbers_otherwise(
    body: &[&[u8]],
    format: &FormatOptions,
    guesses: &[Guess],
    order: Option<DateOrder>,
) -> Vec<ReadOtherwise> {
    let text: Vec<usize> = (0..guesses.len()).filter(|&at| guesses[at] == Guess::Text).collect();
    let number = |value: &str| matches!(guess_text(value, None), Guess::Bigint | Guess::Numeric | Guess::Nothing);
    let firsts = first_values(body, format, &text, |value| !number(value));
    let mut currencies: Vec<Option<Currency>> = vec![None];
    for (_, value) in &firsts {
        let sign = suspect::currency_sign_in(value).and_then(|sign| Currency::parse(sign).ok());
        if sign.is_some() && !currencies.contains(&sign) {
            currencies.push(sign);
        }
    }
    let percents = firsts.iter().any(|(_, value)| value.ends_with('%'));
    let minuses = firsts.iter().any(|(_, value)| before_trailing_minus(value.as_bytes()).is_some());
    // Without a sign first, so that the simplest way reads a column.
    let either = |found: bool| [false, true].into_iter().filter(move |&with| found || !with);
    let signs = currencies.into_iter().flat_map(|currency| {
        either(percents).flat_map(move |percent| either(minuses).map(move |minus| (currency, percent, minus)))
    });
    // Each column's ways, the simplest that read it (two for `1,234`).
    let mut ways: Vec<(usize, Vec<NumberWriting>, Guess)> = Vec::new();
    for (currency, percent, trailing_minus) in signs {
        let signed = currency.is_some() || percent || trailing_minus;
        for marks in NumberMarks::ALL.into_iter().filter(|m| signed || *m != NumberMarks::Plain) {
            let options =
                FormatOptions { currency, percent, trailing_minus, ..format.clone() }.with_number_marks(marks);
            let read = guesses_of(body, &options, order);
            for &at in &text {
                let guess = read.get(at).copied().unwrap_or(Guess::Nothing);
                if !matches!(guess, Guess::Bigint | Guess::Numeric) {
                    continue;
                }
                let writing = NumberWriting { marks, currency, percent, trailing_minus, zero_fractions: false };
                let other_signs = |found: &NumberWriting| {
                    (found.currency, found.percent, found.trailing_minus) != (currency, percent, trailing_minus)
                };
                match ways.iter_mut().find(|(column, ..)| *column == at) {
                    // A simpler way read it already; a lone comma reads two ways.
                    Some((_, found, _)) if other_signs(&found[0]) || found[0].marks == NumberMarks::Plain => {}
                    Some((_, found, joined)) => {
                        found.push(writing);
                        *joined = joined.join(guess);
                    }
                    None => ways.push((at, vec![writing], guess)),
                }
            }
        }
    }
    settle_ways(&mut ways);
    let mut grouped: Vec<ReadOtherwise> = Vec::new();
    for (at, writings, guess) in ways {
        let flags: Vec<String> = writings.iter().map(NumberWriting::flags).collect();
        let by = ReadBy::Flags(flags.join(" or "));
        match grouped.iter_mut().find(|group| group.by == by) {
            Some(group) => {
                group.columns.push(at);
                let joined = group.guesses[0].join(guess);
                group.guesses = vec![joined; group.columns.len()];
            }
            None => {
                let example =
                    firsts.iter().find(|(column, _)| *column == at).map(|(_, v)| v.clone()).unwrap_or_default();
                grouped.push(ReadOtherwise { columns: vec![at], by, example, guesses: vec![guess] });
            }
        }
    }
    grouped
}

/// Each column's ways as one set of flags reads every column: a column
/// read by the sign alone (`$12.00`) takes the way of one read by the
/// sign and marks (`$1,234.50`), which reads it too, and one read two
/// ways (`1,234`) the way another column is read in (`1,5`: a decimal
/// comma), as the file writes all its numbers one way.
fn settle_ways(ways: &mut [(usize, Vec<NumberWriting>, Guess)]) {
    let settled: Vec<NumberWriting> = ways
        .iter()
        .filter(|(_, writings, _)| writings.len() == 1 && writings[0].marks != NumberMarks::Plain)
        .map(|(_, writings, _)| writings[0])
        .collect();
    for (_, writings, _) in ways.iter_mut() {
        let signed_alone =
            |way: &NumberWriting| writings.as_slice() == [NumberWriting { marks: NumberMarks::Plain, ..*way }];
        if let Some(way) = settled.iter().find(|way| writings.contains(way) || signed_alone(way)) {
            *writings = vec![*way];
        }
    }
    ways.sort_by_key(|(at, ..)| *at);
}

/// The text columns of `guesses` whose every value in `body` reads as a
/// date or time in the other `order` of day and month than the session's:
/// one note for them all, since DateStyle is the session's.
fn dates_otherwise(
    body: &[&[u8]],
    format: &FormatOptions,
    guesses: &[Guess],
    order: Option<DateOrder>,
) -> Option<ReadOtherwise> {
    let other = order?.other();
    let read = guesses_of(body, format, Some(other));
    let timed = |guess: &Guess| matches!(guess, Guess::Date | Guess::Timestamp | Guess::TimestampTz);
    let columns: Vec<usize> =
        (0..guesses.len()).filter(|&at| guesses[at] == Guess::Text && read.get(at).is_some_and(timed)).collect();
    let guesses: Vec<Guess> = columns.iter().map(|&at| read[at]).collect();
    let firsts = first_values(body, format, &columns, |value| guess_text(value, order) == Guess::Text);
    let example = firsts.first().map(|(_, value)| value.clone())?;
    Some(ReadOtherwise { columns, by: ReadBy::DateStyle(other), example, guesses })
}

/// For each of the `columns`, its first value in `body` that is `wanted`,
/// if any.
fn first_values(
    body: &[&[u8]],
    format: &FormatOptions,
    columns: &[usize],
    wanted: impl Fn(&str) -> bool,
) -> Vec<(usize, String)> {
    let mut firsts: Vec<(usize, String)> = Vec::new();
    for record in body {
        let Some(fields) = header_fields(record, format) else { continue };
        for &at in columns {
            let Some(value) = fields.get(at) else { continue };
            if wanted(value) && !firsts.iter().any(|(column, _)| *column == at) {
                firsts.push((at, value.trim().to_string()));
            }
        }
        if firsts.len() == columns.len() {
            break;
        }
    }
    firsts
}

/// The sentence for `otherwise`, its columns named from `names`.
fn read_otherwise_said(otherwise: &ReadOtherwise, names: &[String]) -> String {
    let sql = sql_names(names);
    let columns: Vec<&str> = otherwise.columns.iter().filter_map(|&at| sql.get(at).map(String::as_str)).collect();
    let (column, is, holds, it) = match columns.len() {
        1 => ("Column", "is", "holds", "it loads"),
        _ => ("Columns", "are", "hold", "they load"),
    };
    let (what, with) = match &otherwise.by {
        ReadBy::Flags(flags) if flags.contains(" or ") => {
            (format!("numbers as {flags} reads them"), "either, as the file writes its numbers".to_string())
        }
        ReadBy::Flags(flags) if flags.matches("--").count() == 1 => {
            (format!("numbers as {flags} reads them"), "that flag".to_string())
        }
        ReadBy::Flags(flags) => (format!("numbers as {flags} reads them"), "those flags".to_string()),
        ReadBy::DateStyle(order) => {
            let first = if *order == DateOrder::DayFirst { "day" } else { "month" };
            (format!("dates {first} first"), super::hints::date_style_setting(order.date_style()))
        }
    };
    let mut types: Vec<&str> = otherwise.guesses.iter().map(|guess| guess.sql()).collect();
    let types = match types.windows(2).all(|pair| pair[0] == pair[1]) {
        true => types[0].to_string(),
        false => {
            let last = types.pop().unwrap_or_default();
            format!("{} and {last} respectively", types.join(", "))
        }
    };
    format!(
        " {column} {} {is} text here, but {holds} {what} (\"{}\"): with {with}, {it} as {types}.",
        columns.join(", "),
        otherwise.example,
    )
}

/// Each field's guess over `records`.
fn guesses_of(records: &[&[u8]], format: &FormatOptions, order: Option<DateOrder>) -> Vec<Guess> {
    let numbers = format.number_conversion();
    let mut guesses = Vec::new();
    for record in records {
        let Some(fields) = header_fields(record, format) else { continue };
        if guesses.len() < fields.len() {
            guesses.resize(fields.len(), Guess::Nothing);
        }
        let nulls = nulls_in(record, format, fields.len());
        for ((guess, value), null) in
            guesses.iter_mut().zip(&fields).zip(nulls.into_iter().chain(std::iter::repeat(false)))
        {
            if !null {
                *guess = guess.join(guess_text(&as_numbers_written(value, numbers), order));
            }
        }
    }
    guesses
}

/// `value` as a number column reads it under `--decimal-comma`,
/// `--thousands` or `--currency` (`$1,234.50` as `1234.50`), so that a
/// column of such values is guessed a number, as it then loads.
fn as_numbers_written(value: &str, numbers: Option<Conversion>) -> Cow<'_, str> {
    let mut plain = Vec::new();
    match numbers.map(|numbers| numbers.apply(value.as_bytes(), &mut plain)) {
        Some(Ok(true)) => String::from_utf8(plain).map_or(Cow::Borrowed(value), Cow::Owned),
        _ => Cow::Borrowed(value),
    }
}

/// Whether `first` reads as a header of the records after it: every field
/// text, not empty, and some column typed in the `rest`.
fn is_a_header(first: &[u8], rest: &[&[u8]], format: &FormatOptions, order: Option<DateOrder>) -> bool {
    let Some(fields) = header_fields(first, format) else { return false };
    let labels = fields.iter().all(|f| guess_text(f, order) == Guess::Text);
    labels && guesses_of(rest, format, order).iter().any(|g| !matches!(g, Guess::Text | Guess::Nothing))
}

/// With `--header`, csv and tsv: the first record of `head` (an input's
/// start), which `--header` skips, as written, where it reads as one of the
/// records under it (see [`reads_as_a_record`]). Why: a file without a
/// header, loaded with `--header`, lost its first record without a word.
pub(super) fn a_record_taken_for_the_header(
    format: &FormatOptions,
    head: &[u8],
    order: Option<DateOrder>,
) -> Option<String> {
    if !format.header || format.skip_lines > 0 || format.kind == FormatKind::Jsonl {
        return None;
    }
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let all = head_records(head, &FormatOptions { header: false, ..format.clone() });
    let (first, rest) = all[..all.len().min(SAMPLED_RECORDS + 1)].split_first()?;
    let first = crate::format::without_line_end(first);
    reads_as_a_record(first, rest, format, order).then(|| String::from_utf8_lossy(first).into_owned())
}

/// Whether `first` reads as one of the records after it (`rest`): under
/// each column the rest hold typed values in (numbers, dates, times,
/// booleans, uuids), a value of that kind (or none), and one such column
/// at least. A header's labels are text there.
fn reads_as_a_record(first: &[u8], rest: &[&[u8]], format: &FormatOptions, order: Option<DateOrder>) -> bool {
    let Some(fields) = header_fields(first, format) else { return false };
    let below = guesses_of(rest, format, order);
    let typed: Vec<(&String, Guess)> = (fields.iter().zip(below.iter().copied()))
        .filter(|(_, guess)| !matches!(guess, Guess::Nothing | Guess::Text | Guess::Jsonb))
        .collect();
    let fits = |(field, guess): &(&String, Guess)| {
        let own = guess_text(&as_numbers_written(field, format.number_conversion()), order);
        own == Guess::Nothing || guess.join(own) == *guess
    };
    fields.len() == below.len() && typed.iter().any(|(field, _)| !field.trim().is_empty()) && typed.iter().all(fits)
}

/// Which of a record's `count` fields are the NULL string: in TSV, `\N`
/// (or `--null`) as written, before escapes are read (split at each
/// delimiter: an escaped one, rare, shifts the fields after it, and the
/// guess of their columns is text); in CSV, `--null` as read (the default,
/// an empty field, says nothing anyway).
fn nulls_in(record: &[u8], format: &FormatOptions, count: usize) -> Vec<bool> {
    let line = crate::format::without_line_end(record);
    match (format.kind, format.null.as_deref()) {
        (FormatKind::Tsv, null) => {
            let null = null.unwrap_or("\\N").as_bytes();
            line.split(|&b| b == format.field_delimiter()).map(|raw| raw == null).collect()
        }
        (_, Some(null)) => header_fields(line, format)
            .map(|fields| fields.iter().map(|f| f == null).collect())
            .unwrap_or_else(|| vec![false; count]),
        (_, None) => vec![false; count],
    }
}

/// JSON lines: the keys, in the order the documents first have them, and
/// each key's guess.
fn documents(head: &[u8], order: Option<DateOrder>, across: &[Vec<u8>]) -> Option<Sampled> {
    let lines: Vec<&[u8]> = head.split(|&b| b == b'\n').take(SAMPLED_RECORDS).collect();
    let names: Vec<String> = documents::keys_in(&lines.join(&b'\n')).into_iter().map(|(key, _)| key).collect();
    let mut guesses = vec![Guess::Nothing; names.len()];
    let (mut read, mut read_across) = (0, 0);
    let lines_across = across.iter().flat_map(|block| block.split(|&b| b == b'\n').take(RECORDS_A_BLOCK));
    let from_head = lines.into_iter().map(|line| (line, true));
    for (line, in_head) in from_head.chain(lines_across.map(|line| (line, false))) {
        let Ok(Value::Object(document)) = serde_json::from_slice::<Value>(line) else { continue };
        match in_head {
            true => read += 1,
            false => read_across += 1,
        }
        for (guess, name) in guesses.iter_mut().zip(&names) {
            let value = document.get(name).map_or(Guess::Nothing, |value| guess_json(value, order));
            // A jsonb column takes any JSON value: sluice loads each as JSON.
            *guess = match (*guess, value) {
                (Guess::Jsonb, _) | (_, Guess::Jsonb) => Guess::Jsonb,
                (guess, value) => guess.join(value),
            };
        }
    }
    (read > 0).then_some(Sampled { names, guesses, read, read_across, header_guessed: false, otherwise: Vec::new() })
}

fn guess_json(value: &Value, order: Option<DateOrder>) -> Guess {
    match value {
        Value::Null => Guess::Nothing,
        Value::Bool(_) => Guess::Boolean,
        Value::Number(n) if n.is_i64() => Guess::Bigint,
        // Beyond i64: numeric takes it, exactly.
        Value::Number(_) => Guess::Numeric,
        Value::String(text) => match guess_text(text, order) {
            // A number in quotes is text to whoever wrote it.
            Guess::Bigint | Guess::Numeric | Guess::Boolean => Guess::Text,
            guess => guess,
        },
        Value::Array(_) | Value::Object(_) => Guess::Jsonb,
    }
}

/// What one text value fits (an empty one: anything, as NULL), dates
/// and times read as a session with DateStyle's `order` of day and month
/// reads them (`1/31/2024 14:05` is a timestamp month first).
fn guess_text(value: &str, order: Option<DateOrder>) -> Guess {
    let text = value.trim();
    let bytes = text.as_bytes();
    if text.is_empty() {
        return Guess::Nothing;
    }
    if text.parse::<i64>().is_ok() && !is_padded(text) {
        return Guess::Bigint;
    }
    if is_number(text) {
        return Guess::Numeric;
    }
    if ["true", "false", "t", "f", "yes", "no"].iter().any(|word| text.eq_ignore_ascii_case(word)) {
        return Guess::Boolean;
    }
    // A date input function reads a timestamp too, and leaves out its time.
    let timed = bytes.contains(&b':');
    if !timed && time_value(Codec::Date, bytes, order).is_some() {
        return Guess::Date;
    }
    if timed && time_value(Codec::Timestamp, bytes, order).is_some() {
        return Guess::Timestamp;
    }
    if timed && time_value(Codec::TimestampTz, bytes, order).is_some() {
        return Guess::TimestampTz;
    }
    if is_time_of_day(bytes) {
        return Guess::Time;
    }
    if is_uuid(text) {
        return Guess::Uuid;
    }
    Guess::Text
}

/// A whole number written with leading zeros (`007`, a code, a ZIP) is
/// text: a number column would drop them.
fn is_padded(text: &str) -> bool {
    let digits = text.trim_start_matches(['-', '+']);
    digits.len() > 1 && digits.starts_with('0')
}

/// A number as numeric reads it (sign, digits with one point, exponent:
/// suspect's rule, without `NaN` and `Infinity`), its whole part not padded.
fn is_number(text: &str) -> bool {
    let whole = text.split(['.', 'e', 'E']).next().unwrap_or_default();
    super::suspect::numeric_text(text.as_bytes()) && text.bytes().any(|b| b.is_ascii_digit()) && !is_padded(whole)
}

/// `H:MM`, `HH:MM`, `HH:MM:SS` or with a fraction of a second, in range.
fn is_time_of_day(text: &[u8]) -> bool {
    let number = |digits: &[u8], max: u32| {
        (1..=2).contains(&digits.len())
            && digits.iter().all(u8::is_ascii_digit)
            && digits.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')) <= max
    };
    let (clock, fraction) = match text.iter().position(|&b| b == b'.') {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let parts: Vec<&[u8]> = clock.split(|&b| b == b':').collect();
    let fraction_ok = fraction.map_or(true, |f| !f.is_empty() && f.iter().all(u8::is_ascii_digit));
    let minute_second = |p: &[u8]| p.len() == 2 && number(p, 59);
    match parts.as_slice() {
        [h, m] => fraction.is_none() && number(h, 23) && minute_second(m),
        [h, m, s] => fraction_ok && number(h, 23) && minute_second(m) && minute_second(s),
        _ => false,
    }
}

fn is_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Each name as a column name in SQL: lower case, words joined by `_`
/// (`Order ID` as `order_id`); `columnN`
/// where a name is missing, empty or taken. Quoted, as every name sluice
/// writes into SQL (`when`, `order` and `user` are names of columns too).
fn sql_names(names: &[String]) -> Vec<String> {
    let mut taken: Vec<String> = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let mut snake = String::new();
        for c in name.trim().chars().flat_map(char::to_lowercase) {
            match c.is_alphanumeric() {
                true => snake.push(c),
                false if !snake.is_empty() && !snake.ends_with('_') => snake.push('_'),
                false => {}
            }
        }
        let snake = snake.trim_end_matches('_').to_string();
        let fallback = format!("column{}", i + 1);
        taken.push(if snake.is_empty() || taken.contains(&snake) { fallback } else { snake });
    }
    taken.iter().map(|name| quote_ident(name)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv(header: bool) -> FormatOptions {
        FormatOptions { header, ..FormatOptions::new(FormatKind::Csv) }
    }

    #[test]
    fn each_value_is_guessed_as_the_server_reads_it() {
        let cases = [
            ("42", Guess::Bigint),
            ("-7", Guess::Bigint),
            ("007", Guess::Text),
            ("0", Guess::Bigint),
            ("99999999999999999999", Guess::Numeric),
            ("1.5", Guess::Numeric),
            ("-.5e3", Guess::Numeric),
            ("1e", Guess::Text),
            (".", Guess::Text),
            ("1,5", Guess::Text),
            ("TRUE", Guess::Boolean),
            ("no", Guess::Boolean),
            ("2024-02-29", Guess::Date),
            ("2023-02-29", Guess::Text),
            ("2024-01-02 10:00:00", Guess::Timestamp),
            ("2024-01-02T10:00:00.5+02:00", Guess::TimestampTz),
            ("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", Guess::Uuid),
            ("06:10:40", Guess::Time),
            ("9:05", Guess::Time),
            ("23:59:59.25", Guess::Time),
            ("24:00", Guess::Text),
            ("12:60", Guess::Text),
            ("1:2:3", Guess::Text),
            ("", Guess::Nothing),
            ("  ", Guess::Nothing),
            ("Ann", Guess::Text),
        ];
        for (value, want) in cases {
            assert_eq!(guess_text(value, None), want, "{value:?}");
        }
    }

    #[test]
    fn a_column_takes_the_narrowest_guess_for_all_its_values() {
        use Guess::*;
        assert_eq!(Bigint.join(Numeric), Numeric);
        assert_eq!(Nothing.join(Date), Date);
        assert_eq!(Date.join(Timestamp), Timestamp);
        assert_eq!(Timestamp.join(TimestampTz), TimestampTz);
        assert_eq!(Date.join(TimestampTz), TimestampTz);
        assert_eq!(Bigint.join(Boolean), Text);
        assert_eq!(Uuid.join(Bigint), Text);
        assert_eq!(Jsonb.join(Text), Text);
    }

    #[test]
    fn names_become_sql_names_once_each() {
        let names = ["Order ID", "  Total $ ", "", "order_id", "when", "Straße"].map(String::from);
        let got = sql_names(&names);
        assert_eq!(got, ["\"order_id\"", "\"total\"", "\"column3\"", "\"column4\"", "\"when\"", "\"straße\""]);
    }

    #[test]
    fn the_statement_fits_the_first_records() {
        let head = b"id,Name,amount,day,note\n1,a,1.5,2024-01-02,\n2,\"b, c\",2,2024-01-03,x\n3,d,";
        let said = create_table("Sales.orders", &csv(true), None, ("o.csv", head), None, (&[], false)).unwrap();
        let want = "The first 2 records of o.csv fit this table: CREATE TABLE \"sales\".\"orders\" (\"id\" bigint, \
                    \"name\" text, \"amount\" numeric, \"day\" date, \"note\" text);";
        assert_eq!(said, want);
        let given = ["a", "b"].map(String::from);
        let said = create_table("t", &csv(false), Some(&given), ("o.csv", b"1,x,3\n"), None, (&[], false)).unwrap();
        assert!(said.ends_with("CREATE TABLE \"t\" (\"a\" bigint, \"b\" text, \"column3\" bigint);"), "{said}");
        let left_out = ["a", "-"].map(String::from);
        assert_eq!(create_table("t", &csv(false), Some(&left_out), ("o.csv", b"1,x\n"), None, (&[], false)), None);
        assert_eq!(create_table("t", &csv(false), None, ("o.csv", b""), None, (&[], false)), None);
    }

    #[test]
    fn numbers_written_as_the_flags_say_are_numbers() {
        let head = b"id,price,note\n1,\"$1,234.50\",\"a, b\"\n2,($5.00),\"1,5\"\n";
        let plain = create_table("t", &csv(true), None, ("m.csv", head), None, (&[], false)).unwrap();
        let note = "(\"id\" bigint, \"price\" text, \"note\" text); Column \"price\" is text here, but holds numbers \
                    as --currency '$' --thousands ',' reads them (\"$1,234.50\"): with those flags, it loads as numeric.";
        assert!(plain.ends_with(note), "{plain}");
        let currency = Some(crate::format::currency::Currency::parse("$").unwrap());
        let money = FormatOptions { thousands: Some(b','), currency, ..csv(true) };
        let said = create_table("t", &money, None, ("m.csv", head), None, (&[], false)).unwrap();
        assert!(said.ends_with("(\"id\" bigint, \"price\" numeric, \"note\" text);"), "{said}");
    }

    #[test]
    fn text_columns_of_numbers_written_otherwise_are_named_with_the_flags_that_read_them() {
        let said = |head: &[u8]| {
            let said = create_table("t", &csv(true), None, ("m.csv", head), None, (&[], false)).unwrap();
            said.split_once("); ").map(|(_, note)| note.to_string()).unwrap_or_default()
        };
        // The sign alone reads refund, and with commas price: one set of flags for both.
        let money = said(b"id,refund,price\n1,$0.00,\"$1,234.50\"\n2,($5),$7\n");
        assert_eq!(
            money,
            "Columns \"refund\", \"price\" are text here, but hold numbers as --currency '$' --thousands ',' reads \
             them (\"$0.00\"): with those flags, they load as numeric."
        );
        let euro = said("p\n\"1.234,50\u{a0}€\"\n-2 €\n".as_bytes());
        assert!(
            euro.starts_with("Column \"p\" is text here, but holds numbers as --currency '€' --decimal-comma"),
            "{euro}"
        );
        assert!(euro.ends_with("with those flags, it loads as numeric."), "{euro}");
        // A lone comma before three digits reads two ways, unless another column tells.
        let either = said(b"a\n\"1,234\"\n\"2,000\"\n");
        assert_eq!(
            either,
            "Column \"a\" is text here, but holds numbers as --thousands ',' or --decimal-comma reads them (\"1,234\"): \
             with either, as the file writes its numbers, it loads as numeric."
        );
        let told = said(b"a,b\n\"1,234\",\"1,5\"\n");
        assert!(told.starts_with("Columns \"a\", \"b\" are text here, but hold numbers as --decimal-comma reads"));
        let swiss = said(b"a,b\n1'234.5,CHF 12\n");
        assert!(
            swiss.starts_with("Column \"a\" is text here, but holds numbers as --thousands \"'\" reads"),
            "{swiss}"
        );
        assert!(swiss.contains("Column \"b\" is text here, but holds numbers as --currency 'CHF' reads"), "{swiss}");
        let shares = said(b"p,q\n12.5%,\"1,250.5%\"\n-3 %,7\n");
        assert_eq!(
            said(b"p\n12.5%\n"),
            "Column \"p\" is text here, but holds numbers as --percent reads them \
                                        (\"12.5%\"): with that flag, it loads as numeric."
        );
        assert_eq!(
            shares,
            "Columns \"p\", \"q\" are text here, but hold numbers as --thousands ',' --percent reads them \
             (\"12.5%\"): with those flags, they load as numeric."
        );
        // Notes in the columns' order, whichever flags read them.
        let two = said(b"a,b\n\"1,5\",\"1,234.5\"\n");
        assert!(two.starts_with("Column \"a\" is text here, but holds numbers as --decimal-comma"), "{two}");
        assert!(two.contains(". Column \"b\" is text here, but holds numbers as --thousands ','"), "{two}");
        // Codes, names and a mix of numbers and words get no note.
        assert_eq!(said(b"zip,name,n\n01234,\"Bo, C\",\"1,5\"\n00501,Ann,x\n"), "");
        // A column the flags given read is a number; one they do not is named with all it needs.
        let given = FormatOptions { decimal_comma: true, ..csv(true) };
        let read =
            create_table("t", &given, None, ("m.csv", "a,b\n\"1,5\",\"€5,50\"\n".as_bytes()), None, (&[], false))
                .unwrap();
        let note = "(\"a\" numeric, \"b\" text); Column \"b\" is text here, but holds numbers as --currency '€' \
                    --decimal-comma reads them";
        assert!(read.contains(note), "{read}");
    }

    #[test]
    fn dates_are_read_in_the_sessions_order_and_named_when_they_are_in_the_other() {
        use DateOrder::*;
        let head = b"id,d,t,code\n1,1/31/2024,1/31/2024 14:05,2024-1-5\n2,2/1/2024,,2024-12-31\n";
        let said = |order| create_table("t", &csv(true), None, ("d.csv", head), order, (&[], false)).unwrap();
        let month_first = "(\"id\" bigint, \"d\" date, \"t\" timestamp, \"code\" date);";
        assert!(said(Some(MonthFirst)).ends_with(month_first), "{}", said(Some(MonthFirst)));
        let note = "(\"id\" bigint, \"d\" text, \"t\" text, \"code\" date); Columns \"d\", \"t\" are text here, but \
                    hold dates month first (\"1/31/2024\"): with PGDATESTYLE='ISO, MDY' (or options='-c \
                    datestyle=ISO,MDY' in --db), they load as date and timestamp respectively.";
        assert!(said(Some(DayFirst)).ends_with(note), "{}", said(Some(DayFirst)));
        // Year first (or not known): ISO dates only, and no note.
        assert!(said(None).ends_with("(\"id\" bigint, \"d\" text, \"t\" text, \"code\" date);"), "{}", said(None));
        // A first line of such dates is a record, not a header.
        let headless = create_table(
            "t",
            &csv(false),
            None,
            ("d.csv", b"1/31/2024,a\n2/1/2024,b\n"),
            Some(MonthFirst),
            (&[], false),
        );
        assert!(headless.unwrap().starts_with("The first 2 records of d.csv fit this table: "));
        // Notes in the columns' order, dates' and numbers' alike.
        let mixed = create_table(
            "t",
            &csv(true),
            None,
            ("d.csv", b"d,p\n31/01/2024,\"1,5\"\n"),
            Some(MonthFirst),
            (&[], false),
        );
        let (dates, numbers) =
            (mixed.as_deref().unwrap().find("dates day first"), mixed.as_deref().unwrap().find("--decimal-comma"));
        assert!(dates.unwrap() < numbers.unwrap(), "{mixed:?}");
        // Dates either order reads say nothing of the order.
        let both =
            create_table("t", &csv(true), None, ("d.csv", b"d\n01/02/2024\n"), Some(DayFirst), (&[], false)).unwrap();
        assert!(both.ends_with("(\"d\" date);"), "{both}");
    }

    #[test]
    fn records_from_across_the_input_widen_the_columns_they_fit_with_the_same_field_count() {
        let head = b"id,amount,zip\n1,5,10115\n2,7,20095\n";
        let first = create_table("t", &csv(true), None, ("o.csv", head), None, (&[], false)).unwrap();
        assert!(first.contains("(\"id\" bigint, \"amount\" bigint, \"zip\" bigint)"), "{first}");
        // A block begins after a line end: inside a quoted field, its
        // records have another field count and are left out.
        let across = [b"3,7.5,K1A 0B1\n4,8,10117\n".to_vec(), b"x, y\"\n5,\"a,b\",c,d\n".to_vec()];
        let said = create_table("t", &csv(true), None, ("o.csv", head), None, (&across, false)).unwrap();
        let want = "The first 2 records of o.csv and 2 from across it fit this table: CREATE TABLE \"t\" (\"id\" \
                    bigint, \"amount\" numeric, \"zip\" text);";
        assert_eq!(said, want);
        // Without a header, the first record's field count.
        let headless = create_table("t", &csv(false), None, ("o.csv", b"1,5\n"), None, (&[b"2,x\n3\n".to_vec()], true));
        assert!(headless.unwrap().contains(
            "and 1 from across the inputs fit this table: CREATE TABLE \"t\" (\"column1\" bigint, \"column2\" text)"
        ));
        let jsonl = FormatOptions::new(FormatKind::Jsonl);
        let across = [b"{\"id\": 3, \"at\": \"n/a\"}\n\"id\": 4}\n".to_vec()];
        let said =
            create_table("t", &jsonl, None, ("d.jsonl", b"{\"id\": 1, \"at\": 5}\n"), None, (&across, false)).unwrap();
        assert!(said.contains("and 1 from across it") && said.contains("(\"id\" bigint, \"at\" text)"), "{said}");
    }

    /// Files joined with cat: the header repeated among the records, from
    /// the head or from across the input, says nothing of the columns.
    #[test]
    fn a_header_repeated_among_the_records_types_no_column() {
        let head = b"id,day\n1,2024-01-02\n\xEF\xBB\xBFid,day\r\n2,2024-01-03\n";
        let across = [b"3,2024-01-04\nid,day\n".to_vec()];
        let want = "CREATE TABLE \"t\" (\"id\" bigint, \"day\" date);";
        for header in [true, false] {
            let said = create_table("t", &csv(header), None, ("j.csv", head), None, (&across, false)).unwrap();
            assert!(
                said.contains("The first 2 records of j.csv and 1 from across it") && said.ends_with(want),
                "{said}"
            );
        }
    }

    #[test]
    fn a_first_line_of_labels_over_typed_records_is_taken_for_a_header() {
        let said =
            create_table("t", &csv(false), None, ("h.csv", b"id,name,amount\n1,a,1.5\n2,b,\n"), None, (&[], false))
                .unwrap();
        let want = "The first 2 records of h.csv fit this table, its first line read as a header (pass --header, \
                    which skips it): CREATE TABLE \"t\" (\"id\" bigint, \"name\" text, \"amount\" numeric);";
        assert_eq!(said, want);
        let all_text = create_table("t", &csv(false), None, ("h.csv", b"a,b\nc,d\n"), None, (&[], false)).unwrap();
        assert!(
            all_text.ends_with("this table: CREATE TABLE \"t\" (\"column1\" text, \"column2\" text);"),
            "{all_text}"
        );
    }

    #[test]
    fn tsv_nulls_say_nothing_of_their_column() {
        let tsv = FormatOptions::new(FormatKind::Tsv);
        let said = create_table("t", &tsv, None, ("n.tsv", b"1\t\\N\tx\n\\N\t3.5\t\\N\n"), None, (&[], false)).unwrap();
        assert!(said.ends_with("(\"column1\" bigint, \"column2\" numeric, \"column3\" text);"), "{said}");
        let custom = FormatOptions { null: Some("NULL".into()), ..csv(false) };
        let said =
            create_table("t", &custom, None, ("n.csv", b"1,NULL\nNULL,2024-01-01\n"), None, (&[], false)).unwrap();
        assert!(said.ends_with("(\"column1\" bigint, \"column2\" date);"), "{said}");
    }

    #[test]
    fn documents_give_their_keys_in_order_and_json_for_nested_values() {
        let jsonl = FormatOptions::new(FormatKind::Jsonl);
        let head =
            b"{\"zid\":1,\"tags\":[1],\"at\":\"2024-01-02\",\"n\":\"5\"}\n{\"zid\":2.5,\"tags\":\"x\",\"ok\":true}\n";
        let said = create_table("t", &jsonl, None, ("d.jsonl", head), None, (&[], false)).unwrap();
        let want = "(\"zid\" numeric, \"tags\" jsonb, \"at\" date, \"n\" text, \"ok\" boolean); Or, for each \
                    document whole: CREATE TABLE \"t\" (\"doc\" jsonb);";
        assert!(said.ends_with(want), "{said}");
    }
}
