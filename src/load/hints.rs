//! What rejected records say about the load's options. Why: a wrong
//! option rejects records with the server's reason for each (the value it
//! refused), not the option that would have read them: a header loaded as
//! a record, dates written day first read month first, a file in another
//! encoding, a delimiter that splits records into the wrong number of
//! fields. Noted as chunks commit, these become the summary's warnings and
//! the stop's advice, each naming the option that fixes it; most are also
//! shown once while the load runs, as soon as a chunk gives them.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use super::{suspect, Shared};
use crate::format::binary::DateOrder;
use crate::format::convert::{self, NumberMarks};
use crate::format::{delimiter_text, FormatKind, FormatOptions};
use crate::rejects::Reject;
use crate::report::{count_of, thousands};

/// The notes, kept while the load runs.
#[derive(Default)]
pub(super) struct RejectNotes {
    /// Inputs whose first line of data, or a line a little after it (a
    /// header under a title), was rejected and names the table's columns,
    /// with that line, and the lines rejected where the data begins (see
    /// [`note_headers`]).
    header_like: Mutex<Vec<(String, u64)>>,
    rejected_first_lines: Mutex<HashMap<String, HashSet<u64>>>,
    /// Rejected dates that exist read in the other order of day and month
    /// (see [`date_order_warning`]).
    dates_the_other_way: Tally,
    /// Records rejected for bytes that are not UTF-8 (see [`note_not_utf8`]).
    not_utf8: Mutex<NotUtf8>,
    /// Empty fields a typed column refused in the text format (see
    /// [`empty_field_warning`]).
    empty_fields: Tally,
    /// Quoted empty strings a typed column refused in CSV (see
    /// [`quoted_empty_warning`]).
    quoted_empties: Tally,
    /// Numbers rejected for a decimal comma (see [`decimal_comma_warning`]).
    decimal_commas: Tally,
    /// Numbers rejected for marks between thousands, with the mark of the
    /// first (see [`thousands_warning`]).
    thousands_marks: Tally,
    thousands_mark: Mutex<Option<u8>>,
    /// Numbers rejected for a comma that reads either way (see
    /// [`comma_either_way_warning`]).
    commas_either_way: Tally,
    /// Amounts rejected for a currency sign, with the first's sign and
    /// marks (see [`currency_warning`]).
    currency_amounts: Tally,
    currency_amount: Mutex<Option<suspect::SignedAmount>>,
    /// Numbers rejected for a percent sign, with the flags that read the
    /// first (see [`percent_warning`]).
    percentages: Tally,
    percent_flags: Mutex<Option<String>>,
    /// Numbers rejected for a minus after their digits, with the flags
    /// that read the first (see [`trailing_minus_warning`]).
    trailing_minuses: Tally,
    trailing_minus_flags: Mutex<Option<String>>,
    /// Integers rejected for how they are written, with the flags that
    /// read the first (see [`written_integer_warning`]).
    written_integers: Tally,
    written_integer_flags: Mutex<Option<String>>,
    /// Numbers where a date or time goes that read as Unix times, with
    /// the unit of the first (see [`unix_time_warning`]).
    unix_times: Tally,
    unix_time_unit: Mutex<Option<(&'static str, u64)>>,
    /// Words for NULL a typed column refused (see [`null_word_warning`]).
    null_words: Tally,
    /// Records that are empty lines (see [`empty_line_warning`]).
    empty_lines: Tally,
    /// Records that are DOS's end-of-file mark (see [`end_of_file_mark_warning`]).
    end_of_file_marks: Tally,
    /// Records among the data that repeat the header (see
    /// [`repeated_header_warning`]).
    repeated_headers: Tally,
    /// Records that are a JSON document and a comma (see
    /// [`comma_after_document_warning`]).
    documents_with_a_comma: Tally,
    /// Records that are a client's row count under a query's result, with
    /// the client of the first (see [`row_count_footer_warning`]).
    row_count_footers: Tally,
    row_count_client: Mutex<Option<QueryClient>>,
    /// Records rejected for a key a row held (see [`held_key_warning`]).
    held_keys: Tally,
    /// Records no partition of the table takes (see [`no_partition_warning`]).
    no_partition: Tally,
    /// Which of [`ALERTS`] were shown while the load runs.
    alerted: [AtomicBool; ALERTS.len()],
}

/// The warnings shown as soon as they apply, while the load goes on (see
/// [`alert_new_warnings`]): each means that the file is read with a wrong
/// option, so the rows being committed may hold wrong values (a swapped
/// day and month, a word for NULL or an empty string in a text column) and
/// the file will be loaded again anyway.
const ALERTS: [fn(&Shared) -> Option<String>; 13] = [
    date_order_warning,
    unix_time_warning,
    encoding_warning,
    empty_field_warning,
    quoted_empty_warning,
    decimal_comma_warning,
    thousands_warning,
    comma_either_way_warning,
    currency_warning,
    percent_warning,
    trailing_minus_warning,
    written_integer_warning,
    null_word_warning,
];

/// Shows each warning of [`ALERTS`] once, when a committed chunk first
/// gives it. Why: on a load of hours the summary comes after every row was
/// committed, which the user then has to delete. Not while the load may
/// still stop for its first records (see `super::leading`): that stop says
/// the same, and that nothing was committed.
fn alert_new_warnings(shared: &Shared) {
    if shared.leading.undecided() {
        return;
    }
    for (warning, shown) in ALERTS.iter().zip(&shared.notes.alerted) {
        if shown.load(Ordering::Relaxed) {
            continue;
        }
        if let Some(text) = warning(shared).filter(|_| !shown.swap(true, Ordering::Relaxed)) {
            shared.progress.alert(format!(
                "so far, {text}. The load goes on committing rows: stop it (Ctrl-C) to load again as this says"
            ));
        }
    }
}

/// How many times a sign was seen, and the first, as the warning quotes it.
#[derive(Default)]
struct Tally(Mutex<(u64, Option<String>)>);

impl Tally {
    fn add(&self, first: impl FnOnce() -> String) {
        let mut tally = self.0.lock().unwrap_or_else(|e| e.into_inner());
        tally.0 += 1;
        tally.1.get_or_insert_with(first);
    }

    /// The count and the first, once there is one.
    fn seen(&self) -> Option<(u64, String)> {
        let tally = self.0.lock().unwrap_or_else(|e| e.into_inner());
        Some((tally.0, tally.1.clone()?))
    }
}

/// Notes what a committed chunk's rejects say.
pub(super) fn note(shared: &Shared, rejects: &[Reject]) {
    note_headers(shared, rejects);
    note_not_utf8(shared, rejects);
    note_repeated_headers(shared, rejects);
    note_documents_with_a_comma(shared, rejects);
    let notes = &shared.notes;
    for reject in
        rejects.iter().filter(|r| r.raw.as_deref().is_some_and(|raw| raw.trim_end_matches(['\r', '\n']).is_empty()))
    {
        notes.empty_lines.add(|| format!("{} line {}", reject.file, reject.line));
    }
    for reject in rejects.iter().filter(|r| r.raw.as_deref().is_some_and(|raw| raw.trim_end() == "\u{1a}")) {
        notes.end_of_file_marks.add(|| format!("{} line {}", reject.file, reject.line));
    }
    for reject in rejects {
        let Some((footer, client)) = reject.raw.as_deref().and_then(row_count_footer) else { continue };
        notes.row_count_footers.add(|| {
            *notes.row_count_client.lock().unwrap_or_else(|e| e.into_inner()) = Some(client);
            format!("\"{footer}\", {} line {}", reject.file, reject.line)
        });
    }
    for reject in rejects.iter().filter(|r| r.sqlstate.as_deref() == Some("23505")) {
        notes.held_keys.add(|| format!("{} line {}", reject.file, reject.line));
    }
    for reject in rejects.iter().filter(|r| no_partition_takes(r)) {
        if let Some(key) = partition_key(&reject.reason) {
            notes.no_partition.add(|| format!("{} line {}: {key}", reject.file, reject.line));
        }
    }
    for reject in rejects {
        let Some((sign, column)) = sign(shared, reject) else { continue };
        let place = || format!("{} line {}, column {column}", reject.file, reject.line);
        match sign {
            Sign::OtherDateOrder(value) => notes.dates_the_other_way.add(|| format!("\"{value}\" ({})", place())),
            Sign::DecimalComma(value) => notes.decimal_commas.add(|| format!("\"{value}\", {}", place())),
            Sign::Thousands(value, mark) => notes.thousands_marks.add(|| {
                *notes.thousands_mark.lock().unwrap_or_else(|e| e.into_inner()) = Some(mark);
                format!("\"{value}\", {}", place())
            }),
            Sign::CommaEitherWay(value) => notes.commas_either_way.add(|| format!("\"{value}\", {}", place())),
            Sign::Currency(amount) => {
                notes.currency_amounts.add(|| format!("\"{}\", {}", amount.value, place()));
                note_currency(&notes.currency_amount, amount);
            }
            Sign::Percent(value, flags) => notes.percentages.add(|| {
                *notes.percent_flags.lock().unwrap_or_else(|e| e.into_inner()) = Some(flags);
                format!("\"{value}\", {}", place())
            }),
            Sign::TrailingMinus(value, flags) => notes.trailing_minuses.add(|| {
                *notes.trailing_minus_flags.lock().unwrap_or_else(|e| e.into_inner()) = Some(flags);
                format!("\"{value}\", {}", place())
            }),
            Sign::WrittenInteger(value, flags) => notes.written_integers.add(|| {
                *notes.written_integer_flags.lock().unwrap_or_else(|e| e.into_inner()) = Some(flags);
                format!("\"{value}\", {}", place())
            }),
            Sign::UnixTime(time) => notes.unix_times.add(|| {
                let mut unit = notes.unix_time_unit.lock().unwrap_or_else(|e| e.into_inner());
                *unit = Some((time.unit, time.per_second));
                format!("\"{}\" = {}, {}", time.value, utc(time.seconds), place())
            }),
            Sign::EmptyField => notes.empty_fields.add(place),
            Sign::QuotedEmpty => notes.quoted_empties.add(place),
            Sign::NullWord(word) => notes.null_words.add(|| format!("\"{word}\", {}", place())),
        }
    }
    if !rejects.is_empty() {
        alert_new_warnings(shared);
    }
}

/// Keeps the first amount's sign, with the marks of the first whose number
/// has some: `$12.00` first, then `$1,234.50`, needs `--thousands ','`.
fn note_currency(kept: &Mutex<Option<suspect::SignedAmount>>, amount: suspect::SignedAmount) {
    let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
    match kept.as_mut() {
        None => *kept = Some(amount),
        Some(first) if first.marks == [NumberMarks::Plain] && first.currency == amount.currency => {
            first.marks = amount.marks;
        }
        Some(_) => {}
    }
}

/// What one value a column's type refused says about the options.
enum Sign {
    /// A date that exists only when read in the other order of day and
    /// month (see [`date_order_warning`]).
    OtherDateOrder(String),
    /// A number written with a decimal comma (see [`decimal_comma_warning`]).
    DecimalComma(String),
    /// A number written with this mark between thousands (see
    /// [`thousands_warning`]).
    Thousands(String, u8),
    /// A number whose comma reads either way (see
    /// [`comma_either_way_warning`]).
    CommaEitherWay(String),
    /// An amount with a currency sign (see [`currency_warning`]).
    Currency(suspect::SignedAmount),
    /// A percentage, with the flags that read it (see [`percent_warning`]).
    Percent(String, String),
    /// A number with its minus after the digits, with the flags that read
    /// it (see [`trailing_minus_warning`]).
    TrailingMinus(String, String),
    /// An integer written with a fraction of zeros or marks between
    /// thousands, with the flags that read it (see
    /// [`written_integer_warning`]).
    WrittenInteger(String, String),
    /// A number where a date or time goes that reads as a Unix time (see
    /// [`unix_time_warning`]).
    UnixTime(suspect::UnixTime),
    /// An empty field in the text format (see [`empty_field_warning`]).
    EmptyField,
    /// A quoted empty string in CSV (see [`quoted_empty_warning`]).
    QuotedEmpty,
    /// A word for NULL (see [`null_word_warning`]).
    NullWord(String),
}

/// The sign `reject` gives, with its column: only for a value its column's
/// type refused (a data exception, SQLSTATE class 22, the column named).
/// For JSON documents, their values as the records that were loaded hold
/// them, and only the signs of a value (a date's order, a decimal comma):
/// the others are of the text format's options, which documents do not
/// take.
fn sign<'a>(shared: &Shared, reject: &'a Reject) -> Option<(Sign, &'a str)> {
    let rules = shared.rules.as_ref()?;
    if !reject.sqlstate.as_deref()?.starts_with("22") {
        return None;
    }
    let (column, format) = (reject.column.as_deref()?, shared.format);
    let record = as_loaded(shared, reject)?;
    let (rule, field) = suspect::column_field(&record, rules, format, column)?;
    if let Some(value) = suspect::date_in_the_other_order(rule, field) {
        return Some((Sign::OtherDateOrder(value), column));
    }
    if let Some(value) = suspect::decimal_comma(rule, field) {
        return Some((Sign::DecimalComma(value), column));
    }
    if let Some((value, mark)) = suspect::thousands_marked(rule, field) {
        return Some((Sign::Thousands(value, mark), column));
    }
    if let Some(value) = suspect::comma_either_way(rule, field) {
        return Some((Sign::CommaEitherWay(value), column));
    }
    if let Some(amount) = suspect::currency_amount(rule, field, format.currency) {
        return Some((Sign::Currency(amount), column));
    }
    if let Some((value, flags)) = suspect::percentage(rule, field, format) {
        return Some((Sign::Percent(value, flags), column));
    }
    if let Some((value, flags)) = suspect::trailing_minus(rule, field, format) {
        return Some((Sign::TrailingMinus(value, flags), column));
    }
    if let Some((value, flags)) = suspect::written_integer(rule, field, format) {
        return Some((Sign::WrittenInteger(value, flags), column));
    }
    if let Some(time) = suspect::unix_time(rule, field) {
        return Some((Sign::UnixTime(time), column));
    }
    if reads_documents(shared) {
        return None;
    }
    let value = String::from_utf8_lossy(field);
    // The text format's NULL is `\N` unless --null says otherwise; CSV's
    // is an unquoted empty field, so an empty one here was quoted (`""`;
    // with --force-null naming its column it would have been NULL).
    let empty_is_text = format.kind == FormatKind::Tsv && format.null.is_none();
    let quoted_is_text = format.kind == FormatKind::Csv && format.null.is_none();
    let sign = match value.trim() {
        "" if value.is_empty() && empty_is_text => Sign::EmptyField,
        "" if value.is_empty() && quoted_is_text => Sign::QuotedEmpty,
        word if NULL_WORDS.contains(&word) => Sign::NullWord(word.to_string()),
        _ => return None,
    };
    Some((sign, column))
}

/// For a load stopped with every record rejected: what the first reject
/// says, as advice, when it is one of the signs above or bytes that are not
/// UTF-8 (the stop comes before the summary's warnings would).
pub(super) fn first_reject_advice(shared: &Shared, first: &Reject) -> Option<String> {
    if first.raw_base64.is_some() && shared.format.encoding.is_none() {
        let bytes = first.raw_bytes();
        let (name, _) = crate::encoding::likely_encoding(&bytes, &bytes)?;
        return Some(format!("Its bytes are not UTF-8 and look like {name} (a guess): pass --encoding {name}"));
    }
    Some(match sign(shared, first)?.0 {
        Sign::OtherDateOrder(value) => {
            let (_, file, other) = date_orders(shared)?;
            format!("\"{value}\" exists only when read {file} first: load with {}", date_style_setting(other))
        }
        Sign::DecimalComma(value) => {
            format!("\"{value}\" has a decimal comma, which PostgreSQL does not read: {DECIMAL_COMMA_FIX}")
        }
        Sign::Thousands(value, mark) => {
            format!("\"{value}\" has marks between thousands, which PostgreSQL does not read: {}", thousands_fix(mark))
        }
        Sign::CommaEitherWay(value) => format!("\"{value}\" has a comma that {COMMA_EITHER_WAY}"),
        Sign::Currency(amount) => format!(
            "\"{}\" is an amount with a currency sign, which PostgreSQL does not read as a number: {}",
            amount.value,
            currency_fix(&amount)
        ),
        Sign::Percent(value, flags) => {
            format!("\"{value}\" is a percentage, which PostgreSQL does not read as a number: {}", percent_fix(&flags))
        }
        Sign::TrailingMinus(value, flags) => format!(
            "\"{value}\" has its minus after the digits, which PostgreSQL does not read: {}",
            trailing_minus_fix(&flags)
        ),
        Sign::WrittenInteger(value, flags) => format!(
            "\"{value}\" is an integer written {}, which PostgreSQL does not read as an integer: {}",
            integer_writing(&flags),
            written_integer_fix(&flags)
        ),
        Sign::UnixTime(time) => format!(
            "\"{}\" looks like a Unix time in {} ({}), which PostgreSQL does not read as a date or time: {}",
            time.value,
            time.unit,
            utc(time.seconds),
            unix_time_fix(time.per_second)
        ),
        Sign::EmptyField => EMPTY_FIELD_FIX.to_string(),
        Sign::QuotedEmpty => QUOTED_EMPTY_FIX.to_string(),
        Sign::NullWord(word) => format!("If \"{word}\" means NULL, pass --null '{word}'"),
    })
}

/// How to load numbers written with a decimal comma.
const DECIMAL_COMMA_FIX: &str = "pass --decimal-comma, which reads a comma before the fraction and dots or \
                                 spaces between thousands (1.234,5) in number columns";

/// How to load numbers written with `mark` between thousands.
fn thousands_fix(mark: u8) -> String {
    format!(
        "pass {}, which removes the {} between thousands (1{}234.5) in number columns",
        convert::thousands_flag(mark),
        convert::mark_words(mark),
        mark as char
    )
}

/// How to load amounts written as `amount` is: `--currency` with its sign,
/// and the marks its number is written with.
fn currency_fix(amount: &suspect::SignedAmount) -> String {
    let flags: Vec<String> = amount.marks.iter().filter_map(|marks| marks.flag()).collect();
    let marks = match flags.as_slice() {
        [] => String::new(),
        [flag] => format!(" {flag}"),
        flags => format!(" with {}, as the file writes its numbers", flags.join(" or ")),
    };
    format!(
        "pass --currency {}{marks}, which removes the sign (and reads amounts in parentheses as negative) in number \
         columns",
        amount.currency.flag_value()
    )
}

/// How to load percentages: `flags`, `--percent` with those the numbers
/// need.
fn percent_fix(flags: &str) -> String {
    format!("pass {flags}, which reads 12.5% as 0.125 in number columns")
}

/// How to load numbers with their minus after the digits: `flags`,
/// `--trailing-minus` with those the numbers need.
fn trailing_minus_fix(flags: &str) -> String {
    format!("pass {flags}, which reads 5.00- as -5.00 in number columns")
}

/// How to load integers written as the first rejected one is: `flags`.
fn written_integer_fix(flags: &str) -> String {
    match flags {
        "--zero-fractions" => "pass --zero-fractions, which reads 3.0 as 3 in integer columns".to_string(),
        flags => format!("pass {flags}, which read it as the integer it is in integer columns"),
    }
}

/// How integers whose flags are `flags` are written, in words.
fn integer_writing(flags: &str) -> &'static str {
    match (flags.contains("--zero-fractions"), flags.contains("--thousands") || flags.contains("--decimal-comma")) {
        (true, false) => "with a fraction of zeros",
        (true, true) => "with marks between thousands and a fraction of zeros",
        _ => "with marks between thousands",
    }
}

/// What a comma before three digits may mean, and the option for each.
const COMMA_EITHER_WAY: &str = "stands either between thousands or before a fraction, and PostgreSQL reads \
                                neither: as the file writes its numbers, pass --thousands ',' (1,234 is 1234) or \
                                --decimal-comma (1,234 is 1.234)";

/// What to do once the option is known: load only the rejected records
/// when the rows that loaded are right, or the whole input again when
/// none loaded, by this run or an earlier one of the job (the rejects
/// are all of it).
fn reload_advice(shared: &Shared) -> &'static str {
    let none_loaded = shared.progress.snapshot().rows_done == 0 && shared.done.is_empty();
    match none_loaded || shared.leading.all_rejected().is_some() {
        true => NOTHING_LOADED,
        false => RELOAD_REJECTS,
    }
}

/// See [`reload_advice`].
const NOTHING_LOADED: &str = "No row loaded: run the same command again with it";

/// See [`reload_advice`].
const RELOAD_REJECTS: &str = "The other rows loaded as they should: to load only the rejected records, pipe `sluice \
                              rejects` of the rejects file to `sluice load -` with it";

/// Why CSV's `""` is no NULL, and the option that makes it one.
const QUOTED_EMPTY_FIX: &str = "In CSV \"\" is an empty string and only an unquoted empty field is NULL. If \"\" \
                                means NULL, pass --force-null '*' (or name its columns)";

/// Why the text format refuses an empty field, and the option that helps.
const EMPTY_FIELD_FIX: &str =
    "In the text format NULL is \\N and an empty field is an empty string. If empty fields mean NULL, pass --null ''";

/// The session's order of day and month and the other one, as words, with
/// the DateStyle order that reads the other.
fn date_orders(shared: &Shared) -> Option<(&'static str, &'static str, &'static str)> {
    Some(match DateOrder::of_date_style(&shared.table.session_date_style)? {
        DateOrder::MonthFirst => ("month", "day", "DMY"),
        DateOrder::DayFirst => ("day", "month", "MDY"),
    })
}

/// The setting that loads dates in the `other` order (`DMY` or `MDY`).
pub(super) fn date_style_setting(other: &str) -> String {
    format!("PGDATESTYLE='ISO, {other}' (or options='-c datestyle=ISO,{other}' in --db)")
}

/// The warnings the notes give, for the summary and the report: the
/// header's, then [`ALERTS`] in their order, then the empty lines'.
pub(super) fn warnings(shared: &Shared) -> Vec<String> {
    let headers = header_warning(&shared.notes, shared.format);
    let alerts = ALERTS.iter().filter_map(|warning| warning(shared));
    let keys = held_key_warning(shared).into_iter().chain(no_partition_warning(shared));
    // A header under a title would be said twice: its warning says more.
    let repeated = repeated_header_warning(shared).filter(|_| headers.is_none());
    let not_data = empty_line_warning(shared)
        .into_iter()
        .chain(repeated)
        .chain(row_count_footer_warning(shared))
        .chain(comma_after_document_warning(shared))
        .chain(end_of_file_mark_warning(shared));
    headers.into_iter().chain(alerts).chain(not_data).chain(keys).collect()
}

/// How the server's reason for a row no partition takes begins (in
/// English; other languages get no warning).
const NO_PARTITION: &str = "no partition of relation ";

/// Whether `reject` is a row no partition of the table takes.
pub(super) fn no_partition_takes(reject: &Reject) -> bool {
    reject.sqlstate.as_deref() == Some("23514") && reject.reason.starts_with(NO_PARTITION)
}

/// The partition key of a row no partition takes, as the server's reason
/// gives it: `(d) = (2025-01-01)`.
fn partition_key(reason: &str) -> Option<&str> {
    const CONTAINS: &str = "failing row contains ";
    let key = &reason[reason.find(CONTAINS)? + CONTAINS.len()..];
    let key = key.strip_suffix(')').unwrap_or(key);
    Some(key.strip_suffix('.').unwrap_or(key))
}

/// Records rejected because no partition takes their key: the partitions
/// to add. Why: a table partitioned by month, loaded with the newest
/// month's rows before its partition was made, rejected each of them with
/// the same words, and nothing said what to do about them all.
fn no_partition_warning(shared: &Shared) -> Option<String> {
    let (count, first) = shared.notes.no_partition.seen()?;
    Some(format!(
        "{} rejected because no partition of {} takes their key (the first: {first}): {NO_PARTITION_FIX}, then, \
         to load only them, pipe `sluice rejects` of the rejects file to `sluice load -` with the same options",
        how_many_were(count, "record"),
        shared.table.display(),
    ))
}

/// What to do about rows no partition takes.
const NO_PARTITION_FIX: &str = "create the partitions they need (or a DEFAULT partition)";

/// Rejected duplicate keys before the hint of [`held_key_warning`]: a few
/// are bad data, many an input that overlaps what is loaded.
const HELD_KEYS_HINT: u64 = 100;

/// Many records rejected for a key that a row held: the flag that skips
/// them. Why: an export that overlaps the table rejected half its records,
/// each with the server's words, and nothing said that they could be
/// skipped instead.
fn held_key_warning(shared: &Shared) -> Option<String> {
    let (count, first) = shared.notes.held_keys.seen().filter(|(count, _)| *count >= HELD_KEYS_HINT)?;
    Some(format!(
        "{} rejected for a key that a row already held (the first: {first}): if the input overlaps what is loaded, \
         --on-conflict-do-nothing skips such records instead, and counts them (--on-conflict-do-update replaces \
         those rows with them)",
        how_many_were(count, "record"),
    ))
}

/// Records that are empty lines, which the server rejects for a missing
/// column (`missing data for column "name"`) where a table has two or more.
/// Why: a blank line between records or at the end (hand-edited files,
/// files put together with `cat`) is no data, but its reason reads as if
/// values were lost; the count tells the user at once that none were.
fn empty_line_warning(shared: &Shared) -> Option<String> {
    let (count, first) = shared.notes.empty_lines.seen()?;
    let (are, they, them) =
        if count == 1 { ("is an empty line", "it holds", "it") } else { ("are empty lines", "they hold", "them") };
    Some(format!(
        "{} rejected that {are} (the first: {first}): {they} no values, so no data is missing from the table for \
         {them}",
        how_many_were(count, "record"),
    ))
}

/// Notes the rejected records after each input's first line of data whose
/// every field names a column of the table.
fn note_repeated_headers(shared: &Shared, rejects: &[Reject]) {
    if shared.format.kind == FormatKind::Jsonl || reads_documents(shared) {
        return;
    }
    let first = first_line_of_data(shared.format);
    for reject in rejects.iter().filter(|r| r.line > first) {
        let Some(raw) = as_loaded(shared, reject) else { continue };
        if suspect::names_only_columns(&raw, &shared.table.columns, shared.format) {
            shared.notes.repeated_headers.add(|| format!("{} line {}", reject.file, reject.line));
        }
    }
}

/// Records among the data that repeat the header: files that each begin
/// with one, joined with `cat` (a UTF-8 byte-order mark may come with
/// each), or an export that repeats it every page. Why: its reason
/// (`invalid input syntax for type integer: "id"`) reads as a bad row, as
/// if data were lost, where none was.
fn repeated_header_warning(shared: &Shared) -> Option<String> {
    let (count, first) = shared.notes.repeated_headers.seen()?;
    let (repeat, hold, them) = if count == 1 { ("repeats", "it names", "it") } else { ("repeat", "they name", "them") };
    Some(format!(
        "{} rejected that {repeat} the header (the first: {first}): {hold} the table's columns and no values, so \
         no data is missing from the table for {them}. Files joined with cat bring each one's header: load the \
         files themselves instead (several names or a glob; --header skips each one's)",
        how_many_were(count, "record"),
    ))
}

/// Notes the rejected JSON lines that are a document and a comma after it.
fn note_documents_with_a_comma(shared: &Shared, rejects: &[Reject]) {
    if shared.format.kind != FormatKind::Jsonl && !reads_documents(shared) {
        return;
    }
    for reject in rejects {
        let Some(raw) = reject.raw.as_deref() else { continue };
        let Some(document) = raw.trim_end().strip_suffix(',') else { continue };
        if serde_json::from_str::<serde::de::IgnoredAny>(document).is_ok() {
            shared.notes.documents_with_a_comma.add(|| format!("{} line {}", reject.file, reject.line));
        }
    }
}

/// JSON lines that are a document and a comma: the elements of a JSON
/// array written one per line, its brackets cut off (the lines of a big
/// array taken with `head` or `split`). Why: each is rejected for its
/// "trailing characters", but the last element, which has no comma, loads,
/// and nothing says that the others are whole documents.
fn comma_after_document_warning(shared: &Shared) -> Option<String> {
    let (count, first) = shared.notes.documents_with_a_comma.seen()?;
    let (are, each) = if count == 1 { ("is", "it loads") } else { ("are", "each loads") };
    Some(format!(
        "{} rejected that {are} a JSON document and a comma after it (the first: {first}), as the elements of a \
         JSON array written one per line are (an array cut out of its brackets): {each} without its comma. Pipe \
         `sluice rejects` of the rejects file through sed 's/,$//' to `sluice load - --format jsonl` with the same \
         table; a file of the whole array, between [ and ], loads as it is",
        how_many_were(count, "record"),
    ))
}

/// Records that are Ctrl-Z (0x1A) alone: the end-of-file mark of CP/M and
/// DOS, which some Windows tools still write after a file's last line.
/// Why: its reason (`invalid input syntax for type integer: ""`, the mark
/// unseen between the quotes) reads as a bad row, as if data were lost.
fn end_of_file_mark_warning(shared: &Shared) -> Option<String> {
    let (count, first) = shared.notes.end_of_file_marks.seen()?;
    let (are, they, them) = if count == 1 { ("is", "it holds", "it") } else { ("are", "they hold", "them") };
    Some(format!(
        "{} rejected that {are} the end-of-file mark DOS-era tools write after a file's last line (Ctrl-Z, 0x1A; \
         the first: {first}): {they} no values, so no data is missing from the table for {them}",
        how_many_were(count, "record"),
    ))
}

/// A client of the server whose output of a query, saved as a file, ends
/// with a count of its rows.
#[derive(Clone, Copy, Debug, PartialEq)]
enum QueryClient {
    /// `(3 rows)`, under `psql -A -F,` (unaligned output keeps the footer).
    Psql,
    /// `(3 rows affected)`, under sqlcmd's and SQL Server Management
    /// Studio's results.
    Sqlcmd,
    /// `3 rows selected.`, under SQL*Plus's.
    SqlPlus,
}

impl QueryClient {
    fn name(self) -> &'static str {
        match self {
            QueryClient::Psql => "psql",
            QueryClient::Sqlcmd => "sqlcmd",
            QueryClient::SqlPlus => "SQL*Plus",
        }
    }

    /// How to save a query's rows without the count.
    fn without_footer(self) -> &'static str {
        match self {
            QueryClient::Psql => "`psql --csv` (or `-P footer=off`, or `\\copy (query) TO file CSV HEADER`)",
            QueryClient::Sqlcmd => "`SET NOCOUNT ON;` before the query",
            QueryClient::SqlPlus => "`SET FEEDBACK OFF` before the query",
        }
    }
}

/// The row count a client prints under a query's result, and that client,
/// when `raw` (a rejected record, its line end aside) is one: `(3 rows)`,
/// `(1 row)`, `(3 rows affected)`, `3 rows selected.`, `no rows selected`.
/// English only, as the clients print it by default.
fn row_count_footer(raw: &str) -> Option<(&str, QueryClient)> {
    /// What follows `3 rows` (or `1 row`) at the start of `text`.
    fn rows_and(text: &str) -> Option<&str> {
        let count = text.find(|c: char| !c.is_ascii_digit()).filter(|&digits| digits > 0)?;
        let rest = text[count..].strip_prefix(" row")?;
        Some(rest.strip_prefix('s').unwrap_or(rest))
    }
    let footer = raw.trim_end_matches(['\r', '\n']);
    let client = match footer.strip_prefix('(').and_then(rows_and) {
        Some(")") => QueryClient::Psql,
        Some(" affected)") => QueryClient::Sqlcmd,
        Some(_) => return None,
        None if footer == "no rows selected" || rows_and(footer) == Some(" selected.") => QueryClient::SqlPlus,
        None => return None,
    };
    Some((footer, client))
}

/// Records that are a client's count of the rows above them: the last line
/// of a query's result saved as a file (`psql -A -F, -c 'SELECT ...' >
/// out.csv`). Why: its reason (`invalid input syntax for type integer:
/// "(3 rows)"`, or `missing data for column`) reads as a bad row, as if
/// data were lost, where none was.
fn row_count_footer_warning(shared: &Shared) -> Option<String> {
    let notes = &shared.notes;
    let (count, first) = notes.row_count_footers.seen()?;
    let client = (*notes.row_count_client.lock().unwrap_or_else(|e| e.into_inner()))?;
    let (are, counts) = if count == 1 { ("is", "it counts") } else { ("are", "each counts") };
    Some(format!(
        "{} rejected that {are} the row count {} prints under a query's result (the first: {first}): {counts} \
         the rows above, so no data is missing from the table for {}. {} saves the result without it",
        how_many_were(count, "record"),
        client.name(),
        if count == 1 { "it" } else { "them" },
        client.without_footer(),
    ))
}

/// `1 record was` / `2 records were`, and the same for other nouns.
fn how_many_were(count: u64, noun: &str) -> String {
    match count {
        1 => format!("1 {noun} was"),
        n => format!("{} {noun}s were", thousands(n)),
    }
}

/// Numbers written with a decimal comma (`2,50`): spreadsheets in much of
/// Europe export them so, with `;` between fields, and the server reads a
/// decimal point only. Why: its reason (`invalid input syntax for type
/// numeric`) does not say what is wrong with the value.
fn decimal_comma_warning(shared: &Shared) -> Option<String> {
    let (count, first) = shared.notes.decimal_commas.seen()?;
    let reload = reload_advice(shared);
    Some(format!(
        "{} rejected for a decimal comma (the first: {first}): PostgreSQL reads numbers with a decimal point only; \
         {DECIMAL_COMMA_FIX}. {reload}",
        how_many_were(count, "number"),
    ))
}

/// Numbers rejected for marks between thousands (`1,234.50`), as
/// spreadsheets in the US, the UK, India and Switzerland export formatted
/// numbers. Why: the server's reason (`invalid input syntax for type
/// numeric`) does not say what is wrong with the value.
fn thousands_warning(shared: &Shared) -> Option<String> {
    let (count, first) = shared.notes.thousands_marks.seen()?;
    let mark = shared.notes.thousands_mark.lock().unwrap_or_else(|e| e.into_inner()).unwrap_or(b',');
    let reload = reload_advice(shared);
    Some(format!(
        "{} rejected for marks between thousands (the first: {first}): PostgreSQL reads numbers without them; {}. \
         {reload}",
        how_many_were(count, "number"),
        thousands_fix(mark),
    ))
}

/// Numbers rejected for a comma before three digits (`1,234`), when no
/// other number showed which way the file writes them. Why: one option
/// reads it as 1234 and the other as 1.234, so guessing could load every
/// such number a thousand times off; only the user can tell.
fn comma_either_way_warning(shared: &Shared) -> Option<String> {
    let notes = &shared.notes;
    if notes.decimal_commas.seen().is_some() || notes.thousands_marks.seen().is_some() {
        return None;
    }
    let (count, first) = notes.commas_either_way.seen()?;
    let reload = reload_advice(shared);
    Some(format!(
        "{} rejected for a comma (the first: {first}) that {COMMA_EITHER_WAY}. {reload}",
        how_many_were(count, "number"),
    ))
}

/// Amounts rejected for a currency sign (`$1,234.50`, `1.234,50 €`), as
/// spreadsheets save currency-formatted cells. Why: the server's reason
/// (`invalid input syntax for type numeric`) does not say what is wrong
/// with the value, and the peers' users remove the signs with `sed`,
/// which also removes them from text columns.
fn currency_warning(shared: &Shared) -> Option<String> {
    let amount = shared.notes.currency_amount.lock().unwrap_or_else(|e| e.into_inner()).clone()?;
    signed_numbers_warning(shared, &shared.notes.currency_amounts, "a currency sign", currency_fix(&amount))
}

/// Percentages rejected (`12.5%`), as spreadsheets save percentage cells.
/// Why: the server's reason (`invalid input syntax for type numeric`) does
/// not say what is wrong with the value, and `sed 's/%//'` loads 12.5% as
/// 12.5, a hundred times what the cell held.
fn percent_warning(shared: &Shared) -> Option<String> {
    let flags = shared.notes.percent_flags.lock().unwrap_or_else(|e| e.into_inner()).clone()?;
    signed_numbers_warning(shared, &shared.notes.percentages, "a percent sign", percent_fix(&flags))
}

/// Negative numbers rejected for their minus after the digits
/// (`1.234,50-`), as SAP's exports and COBOL reports write them. Why: the
/// server's reason (`invalid input syntax for type numeric`) does not say
/// what is wrong with the value, and a `sed` that moves the minus also
/// moves it in text columns (a part number `A-12-`).
fn trailing_minus_warning(shared: &Shared) -> Option<String> {
    let flags = shared.notes.trailing_minus_flags.lock().unwrap_or_else(|e| e.into_inner()).clone()?;
    let (count, first) = shared.notes.trailing_minuses.seen()?;
    let reload = reload_advice(shared);
    Some(format!(
        "{} rejected for a minus after the digits (the first: {first}): PostgreSQL reads a minus only before \
         them; {}. {reload}",
        how_many_were(count, "number"),
        trailing_minus_fix(&flags)
    ))
}

/// Integers rejected for a fraction of zeros (`3.0`), as pandas writes an
/// integer column that has a missing value (its values become floats), or
/// for marks between thousands (`1,234`), as spreadsheets format counts.
/// Why: the server's reason (`invalid input syntax for type bigint:
/// "3.0"`) does not say that the value is whole, the hints for marks were
/// given for numeric columns only, and the peers' users load such a column
/// as numeric or text, or change it in pandas and export again.
fn written_integer_warning(shared: &Shared) -> Option<String> {
    let flags = shared.notes.written_integer_flags.lock().unwrap_or_else(|e| e.into_inner()).clone()?;
    let (count, first) = shared.notes.written_integers.seen()?;
    let reload = reload_advice(shared);
    let (how, why) = match flags.as_str() {
        "--zero-fractions" => (
            "for a fraction of zeros",
            ", as pandas writes an integer column that has a missing value: PostgreSQL reads no fraction in an \
             integer",
        ),
        _ => ("for how they are written", ": PostgreSQL reads an integer as digits alone"),
    };
    Some(format!(
        "{} rejected {how} (the first: {first}){why}; {}. {reload}",
        how_many_were(count, "integer"),
        written_integer_fix(&flags)
    ))
}

/// The warning for the numbers of `tally`, rejected for `sign`, with the
/// flags that read them.
fn signed_numbers_warning(shared: &Shared, tally: &Tally, sign: &str, fix: String) -> Option<String> {
    let (count, first) = tally.seen()?;
    let reload = reload_advice(shared);
    Some(format!(
        "{} rejected for {sign} (the first: {first}): PostgreSQL reads numbers without one; {fix}. {reload}",
        how_many_were(count, "number"),
    ))
}

/// Numbers where a date or time goes that read as Unix times. Why: pandas'
/// `to_json` writes times as milliseconds since 1970 unless told
/// otherwise, and many logs write seconds; the server's reason (`invalid
/// input syntax for type timestamp`) does not say what the number is.
fn unix_time_warning(shared: &Shared) -> Option<String> {
    let (count, first) = shared.notes.unix_times.seen()?;
    let (unit, per_second) = (*shared.notes.unix_time_unit.lock().unwrap_or_else(|e| e.into_inner()))?;
    let reload = reload_advice(shared);
    Some(format!(
        "{} rejected that look like Unix times in {unit} (the first: {first}): PostgreSQL does not read a number \
         as a date or time; {}. {reload}",
        how_many_were(count, "value"),
        unix_time_fix(per_second)
    ))
}

/// How to load Unix times with `per_second` units to the second.
fn unix_time_fix(per_second: u64) -> String {
    let unit = match per_second {
        1 => "s",
        1_000 => "ms",
        1_000_000 => "us",
        _ => "ns",
    };
    format!(
        "pass --unix-times {unit}, which reads numbers in date and timestamp columns as Unix times in UTC (or write \
         them as dates: pandas' to_json(date_format='iso'))"
    )
}

/// Whole seconds since 1970 as a UTC time.
fn utc(seconds: u64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds);
    humantime::format_rfc3339_seconds(time).to_string()
}

/// Empty fields a typed column refused in the text format. Why: there NULL
/// is `\N` and an empty field an empty string, which numbers, dates and most
/// other types refuse; exports that write NULL as nothing (spreadsheets
/// saved as TSV, many databases' text dumps) need `--null ''`, which the
/// server's reason does not say.
fn empty_field_warning(shared: &Shared) -> Option<String> {
    let (count, first) = shared.notes.empty_fields.seen()?;
    Some(format!(
        "{} rejected for an empty field its column's type does not take (the first: {first}). {EMPTY_FIELD_FIX}",
        how_many_were(count, "record"),
    ))
}

/// Quoted empty strings (`""`) a typed column refused in CSV. Why: writers
/// that quote every field (Python's `csv.QUOTE_ALL`, many exporters) write
/// NULL as `""`, which COPY reads as an empty string unless FORCE_NULL
/// names the column; the server's reason shows only `""`.
fn quoted_empty_warning(shared: &Shared) -> Option<String> {
    let (count, first) = shared.notes.quoted_empties.seen()?;
    Some(format!(
        "{} rejected for a quoted empty field its column's type does not take (the first: {first}). \
         {QUOTED_EMPTY_FIX}",
        how_many_were(count, "record"),
    ))
}

/// Words exports write for NULL: SQL Server's `NULL`, R's `NA`, Python's
/// `None`, spreadsheets' `N/A`, MySQL's `\N` in CSV.
const NULL_WORDS: [&str; 7] = ["NULL", "null", "Null", "NA", "N/A", "None", "\\N"];

/// A word for NULL (see [`NULL_WORDS`]) a typed column refused. Why: the
/// server's reason names the value but not `--null`; and a text column of
/// the same file took the word as a string, which only the user can undo.
fn null_word_warning(shared: &Shared) -> Option<String> {
    let (count, first) = shared.notes.null_words.seen()?;
    let word = first.split('"').nth(1).unwrap_or_default();
    Some(format!(
        "{} rejected for a word for NULL its column's type does not take (the first: {first}). If it means NULL, \
         pass --null '{word}' (and mind the text columns, which took it as a string)",
        how_many_were(count, "value"),
    ))
}

/// Notes the inputs whose first line of data was rejected and names the
/// table's columns: a header loaded as a record because `--header` was not
/// given (psql's and pgloader's users give it to each tool differently).
/// Or a line a little further on, when every line before it was rejected
/// too (in this chunk or another: a title's open quote ends its chunk): a
/// header under a title or notes, which `--skip-lines` skips.
fn note_headers(shared: &Shared, rejects: &[Reject]) {
    if shared.format.kind == FormatKind::Jsonl || reads_documents(shared) {
        return;
    }
    let first = first_line_of_data(shared.format);
    for reject in rejects.iter().filter(|r| (first..first + TITLE_LINES).contains(&r.line)) {
        let mut rejected = shared.notes.rejected_first_lines.lock().unwrap_or_else(|e| e.into_inner());
        if rejected.len() < TITLED_FILES || rejected.contains_key(&reject.file) {
            rejected.entry(reject.file.clone()).or_default().insert(reject.line);
        }
        drop(rejected);
        let Some(raw) = as_loaded(shared, reject) else { continue };
        if suspect::reads_as_a_header(&raw, &shared.table.columns, shared.format) {
            shared.notes.header_like.lock().unwrap_or_else(|e| e.into_inner()).push((reject.file.clone(), reject.line));
        }
    }
}

/// The files whose first lines' rejects [`note_headers`] keeps: the
/// warning names the first file, and memory stays bounded over a glob of
/// many files all rejected.
const TITLED_FILES: usize = 64;

/// The most lines above a header that [`note_headers`] takes for a title
/// and notes.
const TITLE_LINES: u64 = 10;

/// The line of each input where its data begins: after the lines
/// `--skip-lines` skips and the header.
fn first_line_of_data(format: &FormatOptions) -> u64 {
    format.skip_lines + u64::from(format.header) + 1
}

/// Dates that exist only when read in the other order of day and month.
/// Why: COPY reads `05/01/2024` in the session's DateStyle; a file written
/// day first, loaded month first, has its dates up to the 12th loaded with
/// day and month swapped and the others rejected. psql's COPY stops at the
/// first of those; loading every good row, sluice must say it.
fn date_order_warning(shared: &Shared) -> Option<String> {
    let (count, first) = shared.notes.dates_the_other_way.seen()?;
    let (session, file, other) = date_orders(shared)?;
    Some(format!(
        "{} rejected that exist only when read {file} first (DateStyle {} reads {session} first), the first \
         {first}: the input's dates look {file} first, so the rows loaded may hold day and month swapped (those \
         with a day up to the 12th). Delete the rows this load committed and load again with --restart and {}",
        how_many_were(count, "date"),
        shared.table.session_date_style,
        date_style_setting(other)
    ))
}

/// Records rejected for bytes that are not UTF-8, when no `--encoding` was
/// given: how many, the first (where, and its bytes) and a sample of their
/// bytes to guess the encoding from.
#[derive(Default)]
struct NotUtf8 {
    count: u64,
    first: Option<(String, Vec<u8>)>,
    sample: Vec<u8>,
}

/// How much of those records' bytes the guess reads: enough for
/// `chardetng`, bounded whatever the rejects.
const ENCODING_SAMPLE: usize = 64 << 10;

/// Keeps the records rejected as not UTF-8. Why: each reject's reason asks
/// whether the file is in another encoding, and a file in windows-1252 has
/// every record with an accent rejected; the summary can say which encoding
/// the bytes look like, and how the first would read in it.
fn note_not_utf8(shared: &Shared, rejects: &[Reject]) {
    if shared.format.encoding.is_some() {
        return;
    }
    for reject in rejects.iter().filter(|r| r.raw_base64.is_some()) {
        let bytes = reject.raw_bytes();
        let mut noted = shared.notes.not_utf8.lock().unwrap_or_else(|e| e.into_inner());
        noted.count += 1;
        let room = ENCODING_SAMPLE.saturating_sub(noted.sample.len());
        noted.sample.extend_from_slice(&bytes[..bytes.len().min(room)]);
        noted.first.get_or_insert_with(|| (format!("{} line {}", reject.file, reject.line), bytes));
    }
}

/// The encoding the records rejected as not UTF-8 look like (see
/// [`note_not_utf8`]), with the first as it reads in it.
fn encoding_warning(shared: &Shared) -> Option<String> {
    let noted = shared.notes.not_utf8.lock().unwrap_or_else(|e| e.into_inner());
    let (place, first) = noted.first.as_ref()?;
    let (name, text) = crate::encoding::likely_encoding(&noted.sample, first)?;
    let text: String = text.trim_end_matches(['\r', '\n']).chars().take(100).collect();
    let records = how_many_were(noted.count, "record");
    Some(format!(
        "{records} rejected as not UTF-8; their bytes look like {name} (a guess), in which the first ({place}) \
         reads \"{text}\". If it reads right, load them with --encoding {name} (into an emptied table: the other \
         records read the same in it)"
    ))
}

/// What to do about inputs whose first line looks like a header (see
/// [`note_headers`]).
fn header_warning(notes: &RejectNotes, format: &FormatOptions) -> Option<String> {
    let first = first_line_of_data(format);
    let rejected = notes.rejected_first_lines.lock().unwrap_or_else(|e| e.into_inner());
    let rejected_at = |file: &String, line| rejected.get(file).is_some_and(|lines| lines.contains(&line));
    let under_rejects = |(file, line): &&(String, u64)| (first..*line).all(|above| rejected_at(file, above));
    let found = notes.header_like.lock().unwrap_or_else(|e| e.into_inner());
    let (mut at_first, mut further): (Vec<_>, Vec<_>) =
        found.iter().filter(under_rejects).partition(|(_, line)| *line == first && !format.header);
    at_first.sort();
    further.sort();
    if let Some((file, line)) = further.first() {
        let others = match further.len() {
            1 => String::new(),
            n => format!(" (so did {})", count_of(n as u64 - 1, "other file")),
        };
        let above = match line - first {
            0 => String::new(),
            1 => format!(", as line {first} above it was"),
            2 => format!(", as lines {first} and {} above it were", first + 1),
            _ => format!(", as lines {first} to {} above it were", line - 1),
        };
        return Some(format!(
            "line {line} of {file} names columns of the table and was rejected{above}: it looks like a header \
             under a title or notes{others}; --skip-lines {} skips the lines above it{}",
            line - 1,
            if format.header { "" } else { " and --header the header (and loads the columns it names, by name)" }
        ));
    }
    if let (Some((file, line)), true) = (at_first.first(), format.skip_lines > 0) {
        return Some(format!(
            "line {line} of {file}, the first after the lines --skip-lines skips, names columns of the table and was \
             rejected: it looks like a header; --header skips it (and loads the columns it names, by name)"
        ));
    }
    let what = match at_first.len() {
        0 => return None,
        1 => format!(
            "the first line of {} names columns of the table and was rejected: it looks like a header",
            at_first[0].0
        ),
        n => format!(
            "the first lines of {} and {} name columns of the table and were rejected: they look like headers",
            at_first[0].0,
            count_of(n as u64 - 1, "other file")
        ),
    };
    Some(format!("{what}; --header skips each file's first line (and loads the columns it names, by name)"))
}

/// When the first rejected record has another number of fields than COPY
/// fills columns: says both, and the likely wrong option (the delimiter, or
/// a file that holds only some of the table's columns).
pub(super) fn field_count_advice(shared: &Shared, first: &Reject) -> Option<String> {
    let rules = shared.rules.as_ref().filter(|_| !reads_documents(shared))?;
    let record = &*as_loaded(shared, first)?;
    let fields = suspect::field_count(record, shared.format);
    let names: Vec<&str> = rules.iter().map(|r| r.name.as_str()).collect();
    let line = crate::format::without_line_end(record);
    let delimiter = shared.format.delimiter.unwrap_or(match shared.format.kind {
        FormatKind::Csv => b',',
        _ => b'\t',
    });
    let trailing = fields == rules.len() + 1 && line.last() == Some(&delimiter);
    let advice = match suspect::delimiter_that_fits(record, shared.format, rules.len()) {
        // As TPC-H's dbgen writes them, and some exporters.
        _ if trailing => format!(
            "each record ends with the delimiter, which COPY reads as one more, empty field: pass --columns {} (a - \
             leaves the field at its place out), or remove it from every line (sed 's/{}$//'), or add a column for \
             it to the table",
            columns_and_one_left_out(&names),
            delimiter_text(delimiter)
        ),
        Some(delimiter) => format!(
            "pass {} (split at {} it has {})",
            shared.format.flag_for_delimiter(delimiter),
            delimiter_shown(delimiter),
            count_of(rules.len() as u64, "field")
        ),
        None => match (with_generated_left_out(shared, &names, fields), without_defaults(shared, &names, fields)) {
            (Some(columns), _) => {
                let generated = &shared.table.generated;
                let (is_one, it) = match generated.len() {
                    1 => ("is a generated column", "it"),
                    _ => ("are generated columns", "them"),
                };
                format!(
                    "{} {is_one} of the table, which the server computes and COPY cannot load: if the file holds \
                     {it} (an export of the whole table), pass --columns {columns} (a - leaves the field at its place \
                     out); else check --delimiter",
                    generated.join(", ")
                )
            }
            (None, Some((needing, defaulted))) => format!(
                "if the file holds the columns without a default, pass --columns {} (the others get their \
                 defaults: {}); else check --delimiter, or name the columns the file holds with --columns",
                shell_list(&needing.join(",")),
                defaulted.join(", ")
            ),
            (None, None) => "check --delimiter, or name the columns the file holds with --columns (the others get \
                             their defaults)"
                .into(),
        },
    };
    (fields != rules.len()).then(|| {
        format!(
            "Its record has {} and COPY fills {} ({}): {advice}",
            count_of(fields as u64, "field"),
            count_of(rules.len() as u64, "column"),
            names.join(", ")
        )
    })
}

/// `--columns` naming `names` (as written, which it takes) and then a
/// field to leave out, quoted for the shell when it needs to be.
fn columns_and_one_left_out(names: &[&str]) -> String {
    shell_list(&format!("{},-", names.join(",")))
}

/// A list of names for `--columns`, quoted for the shell when it needs to be.
fn shell_list(list: &str) -> String {
    match list.chars().all(|c| c.is_ascii_alphanumeric() || "_,-".contains(c)) {
        true => list.to_string(),
        false => format!("'{}'", list.replace('\'', "'\\''")),
    }
}

/// When COPY fills all of the table's columns (`names`, in the table's
/// order) and a record has a field for each of them and each generated
/// column: the `--columns` that leaves the generated ones' fields out. Why:
/// an export of the whole table (`\copy t TO`, `SELECT *`) holds their
/// values, which COPY has no column for (every record rejected, `extra
/// data after last expected column`).
fn with_generated_left_out(shared: &Shared, names: &[&str], fields: usize) -> Option<String> {
    let table = &shared.table;
    let places = &table.generated_places;
    let in_order = names.iter().copied().eq(table.columns.iter().map(|(name, _)| name.as_str()));
    if places.is_empty() || !in_order || fields != names.len() + places.len() {
        return None;
    }
    let mut loaded = names.iter();
    let list: Vec<&str> =
        (0..fields).map(|i| if places.contains(&i) { "-" } else { loaded.next().copied().unwrap_or("-") }).collect();
    Some(shell_list(&list.join(",")))
}

/// When COPY fills all of the table's columns (`names`), and the columns
/// without a default are as many as a record's `fields`: those, and the
/// others. Why: an export of a table whose key is an identity, or whose
/// `created` is `DEFAULT now()`, leaves them out, and COPY then fills the
/// key with the first field (every record rejected, `invalid input syntax
/// for type integer`, or loaded one column off where the types allow).
fn without_defaults(shared: &Shared, names: &[&str], fields: usize) -> Option<(Vec<String>, Vec<String>)> {
    let table = &shared.table;
    if names.len() != table.columns.len() || fields >= names.len() {
        return None;
    }
    let (defaulted, needing): (Vec<String>, Vec<String>) =
        names.iter().map(|name| name.to_string()).partition(|name| table.defaulted.contains(name));
    (needing.len() == fields).then_some((needing, defaulted))
}

/// A delimiter in a message: quoted, a tab as `\t`.
pub(super) fn delimiter_shown(delimiter: u8) -> String {
    format!("'{}'", delimiter_text(delimiter))
}

/// A rejected record as the load sent it: the rejects file holds it as it
/// was in the input, a document read into columns or a record with fields
/// left out (see [`crate::format::pick`]). `None` for one that was not sent
/// (it could not be rewritten), or has no text.
fn as_loaded<'r>(shared: &Shared, reject: &'r Reject) -> Option<Cow<'r, [u8]>> {
    let raw = reject.raw.as_deref()?.as_bytes();
    let format = shared.format;
    Some(match (&format.documents, &format.picks) {
        (Some(columns), _) => Cow::Owned(crate::format::documents::text_record(raw, columns)?),
        (None, Some(picks)) => Cow::Owned(crate::format::pick::picked_record(raw, format, picks)?),
        (None, None) => Cow::Borrowed(raw),
    })
}

/// Whether the rejects hold JSON documents while the records are the
/// text-format lines made of them: the signs read in a rejected record's
/// fields do not apply.
fn reads_documents(shared: &Shared) -> bool {
    shared.format.documents.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clients_row_count_under_a_result_is_told_from_data() {
        let footer = |raw| row_count_footer(raw).map(|(text, client)| (text.to_string(), client));
        assert_eq!(footer("(3 rows)\n"), Some(("(3 rows)".into(), QueryClient::Psql)));
        assert_eq!(footer("(1 row)\r\n"), Some(("(1 row)".into(), QueryClient::Psql)));
        assert_eq!(footer("(12 rows affected)"), Some(("(12 rows affected)".into(), QueryClient::Sqlcmd)));
        assert_eq!(footer("(1 row affected)\n"), Some(("(1 row affected)".into(), QueryClient::Sqlcmd)));
        assert_eq!(footer("2 rows selected.\n"), Some(("2 rows selected.".into(), QueryClient::SqlPlus)));
        assert_eq!(footer("no rows selected\n"), Some(("no rows selected".into(), QueryClient::SqlPlus)));
        for data in ["( rows)", "(3 rows", "(3 rowsx)", "(3, rows)", "3 rows", "(3 rows) ", "x(3 rows)", "(-3 rows)"] {
            assert_eq!(footer(data), None, "{data}");
        }
    }

    #[test]
    fn columns_with_one_left_out_are_quoted_for_the_shell_only_when_needed() {
        assert_eq!(columns_and_one_left_out(&["a", "b_2"]), "a,b_2,-");
        assert_eq!(columns_and_one_left_out(&["id", "Order's Id"]), "'id,Order'\\''s Id,-'");
    }
}
