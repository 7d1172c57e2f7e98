//! What rejected records say about the load's options. Why: a wrong
//! option rejects records with the server's reason for each (the value it
//! refused), not the option that would have read them: a header loaded as
//! a record, dates written day first read month first, a file in another
//! encoding, a delimiter that splits records into the wrong number of
//! fields. Noted as chunks commit, these become the summary's warnings and
//! the stop's advice, each naming the option that fixes it.

use std::sync::Mutex;

use super::{suspect, Shared};
use crate::format::binary::DateOrder;
use crate::format::FormatKind;
use crate::rejects::Reject;
use crate::report::{count_of, thousands};

/// The notes, kept while the load runs.
#[derive(Default)]
pub(super) struct RejectNotes {
    /// Inputs whose first line, rejected, names the table's columns (see
    /// [`note_headers`]).
    header_like: Mutex<Vec<String>>,
    /// Rejected dates that exist read in the other order of day and month
    /// (see [`note_date_order`]): how many, and the first.
    dates_the_other_way: Mutex<(u64, Option<String>)>,
    /// Records rejected for bytes that are not UTF-8 (see [`note_not_utf8`]).
    not_utf8: Mutex<NotUtf8>,
    /// Records a typed column refused for an empty field in the text format
    /// (see [`note_empty_fields`]): how many, and the first.
    empty_fields: Mutex<(u64, Option<String>)>,
    /// Numbers rejected for a decimal comma (see [`note_decimal_commas`]):
    /// how many, and the first.
    decimal_commas: Mutex<(u64, Option<String>)>,
}

/// Notes what a committed chunk's rejects say.
pub(super) fn note(shared: &Shared, rejects: &[Reject]) {
    note_headers(shared, rejects);
    note_date_order(shared, rejects);
    note_not_utf8(shared, rejects);
    note_empty_fields(shared, rejects);
    note_decimal_commas(shared, rejects);
}

/// The warnings the notes give, for the summary and the report.
pub(super) fn warnings(shared: &Shared) -> Vec<String> {
    let headers = header_warning(&shared.notes.header_like.lock().unwrap_or_else(|e| e.into_inner()));
    let (dates, encoding) = (date_order_warning(shared), encoding_warning(shared));
    let (empty_fields, commas) = (empty_field_warning(shared), decimal_comma_warning(shared));
    [headers, dates, encoding, empty_fields, commas].into_iter().flatten().collect()
}

/// `1 record was` / `2 records were`, and the same for other nouns.
fn how_many_were(count: u64, noun: &str) -> String {
    match count {
        1 => format!("1 {noun} was"),
        n => format!("{} {noun}s were", thousands(n)),
    }
}

/// Counts the records a typed column refused for an empty field in the
/// text format. Why: there NULL is `\N` and an empty field an empty
/// string, which numbers, dates and most other types refuse; exports that
/// write NULL as nothing (spreadsheets saved as TSV, many databases' text
/// dumps) need `--null ''`, which the server's reason does not say.
fn note_empty_fields(shared: &Shared, rejects: &[Reject]) {
    let Some(rules) = &shared.rules else { return };
    if shared.format.kind != FormatKind::Tsv || shared.format.null.is_some() {
        return;
    }
    // invalid_text_representation, invalid_datetime_format
    let refused_value = |r: &&Reject| matches!(r.sqlstate.as_deref(), Some("22P02" | "22007"));
    for reject in rejects.iter().filter(refused_value) {
        let (Some(column), Some(raw)) = (&reject.column, &reject.raw) else { continue };
        if suspect::field_is_empty(raw.as_bytes(), rules, shared.format, column) {
            let mut noted = shared.notes.empty_fields.lock().unwrap_or_else(|e| e.into_inner());
            noted.0 += 1;
            noted.1.get_or_insert_with(|| format!("{} line {}, column {column}", reject.file, reject.line));
        }
    }
}

/// Counts the numbers rejected for a decimal comma (`2,50`): spreadsheets
/// in much of Europe export them so, with `;` between fields, and the
/// server reads a decimal point only. Why: its reason (`invalid input
/// syntax for type numeric`) does not say what is wrong with the value.
fn note_decimal_commas(shared: &Shared, rejects: &[Reject]) {
    let Some(rules) = &shared.rules else { return };
    for reject in rejects.iter().filter(|r| r.sqlstate.as_deref() == Some("22P02")) {
        let (Some(column), Some(raw)) = (&reject.column, &reject.raw) else { continue };
        let Some(value) = suspect::decimal_comma(raw.as_bytes(), rules, shared.format, column) else { continue };
        let mut noted = shared.notes.decimal_commas.lock().unwrap_or_else(|e| e.into_inner());
        noted.0 += 1;
        noted.1.get_or_insert_with(|| format!("\"{value}\", {} line {}, column {column}", reject.file, reject.line));
    }
}

/// What to do about numbers written with a decimal comma (see
/// [`note_decimal_commas`]).
fn decimal_comma_warning(shared: &Shared) -> Option<String> {
    let (count, first) = shared.notes.decimal_commas.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Some(format!(
        "{} rejected for a decimal comma (the first: {}): PostgreSQL reads numbers with a decimal point only. \
         Convert them before loading, or load them into a text column and convert it in SQL \
         (replace(replace(value, '.', ''), ',', '.')::numeric)",
        how_many_were(count, "number"),
        first?
    ))
}

/// What to do about empty fields a typed column refused (see
/// [`note_empty_fields`]).
fn empty_field_warning(shared: &Shared) -> Option<String> {
    let (count, first) = shared.notes.empty_fields.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Some(format!(
        "{} rejected for an empty field its column's type does not take (the first: {}): in the text format NULL \
         is \\N and an empty field is an empty string. If empty fields mean NULL, pass --null ''",
        how_many_were(count, "record"),
        first?
    ))
}

/// Notes the inputs whose first line was rejected and names the table's
/// columns: a header loaded as a record because `--header` was not given
/// (psql's and pgloader's users give it to each tool differently).
fn note_headers(shared: &Shared, rejects: &[Reject]) {
    if shared.format.header || shared.format.kind == FormatKind::Jsonl {
        return;
    }
    for reject in rejects.iter().filter(|r| r.line == 1) {
        let raw = reject.raw.as_deref().unwrap_or_default().as_bytes();
        if suspect::names_columns(raw, &shared.table.columns, shared.format) {
            shared.notes.header_like.lock().unwrap_or_else(|e| e.into_inner()).push(reject.file.clone());
        }
    }
}

/// Counts the rejected dates that read in the other order of day and
/// month. Why: COPY reads `05/01/2024` in the session's DateStyle; a file
/// written day first, loaded month first, has its dates up to the 12th
/// loaded with day and month swapped and the others rejected. psql's COPY
/// stops at the first of those; loading every good row, sluice must say it.
fn note_date_order(shared: &Shared, rejects: &[Reject]) {
    let Some(rules) = &shared.rules else { return };
    for reject in rejects {
        let (Some(column), Some(raw)) = (&reject.column, &reject.raw) else { continue };
        let Some(value) = suspect::date_in_the_other_order(raw.as_bytes(), rules, shared.format, column) else {
            continue;
        };
        let mut noted = shared.notes.dates_the_other_way.lock().unwrap_or_else(|e| e.into_inner());
        noted.0 += 1;
        noted.1.get_or_insert_with(|| format!("\"{value}\" ({} line {}, column {column})", reject.file, reject.line));
    }
}

/// What to do about dates that read only in the other order (see
/// [`note_date_order`]).
fn date_order_warning(shared: &Shared) -> Option<String> {
    let (count, first) = shared.notes.dates_the_other_way.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let first = first?;
    let style = &shared.table.session_date_style;
    let (session, file, other) = match DateOrder::of_date_style(style)? {
        DateOrder::MonthFirst => ("month", "day", "DMY"),
        DateOrder::DayFirst => ("day", "month", "MDY"),
    };
    let dates = how_many_were(count, "date");
    Some(format!(
        "{dates} rejected that exist only when read {file} first (DateStyle {style} reads {session} first), the \
         first {first}: the input's dates look {file} first, so the rows loaded may hold day and month swapped \
         (those with a day up to the 12th). Delete the rows this load committed and load again with \
         PGDATESTYLE='ISO, {other}' (or options='-c datestyle=ISO,{other}' in --db)"
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
fn header_warning(files: &[String]) -> Option<String> {
    let mut files = files.to_vec();
    files.sort();
    let what = match files.len() {
        0 => return None,
        1 => {
            format!("the first line of {} names the table's columns and was rejected: it looks like a header", files[0])
        }
        n => format!(
            "the first lines of {} and {} name the table's columns and were rejected: they look like headers",
            files[0],
            count_of(n as u64 - 1, "other file")
        ),
    };
    Some(format!("{what}; --header skips each file's first line (and loads the columns it names, by name)"))
}

/// When the first rejected record has another number of fields than COPY
/// fills columns: says both, and the likely wrong option (the delimiter, or
/// a file that holds only some of the table's columns).
pub(super) fn field_count_advice(shared: &Shared, first: &Reject) -> Option<String> {
    let rules = shared.rules.as_ref()?;
    let record = first.raw.as_deref()?.as_bytes();
    let fields = suspect::field_count(record, shared.format);
    let names: Vec<&str> = rules.iter().map(|r| r.name.as_str()).collect();
    let line = record.strip_suffix(b"\n").unwrap_or(record);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let delimiter = shared.format.delimiter.unwrap_or(match shared.format.kind {
        FormatKind::Csv => b',',
        _ => b'\t',
    });
    let trailing = fields == rules.len() + 1 && line.last() == Some(&delimiter);
    let advice = match suspect::delimiter_that_fits(record, shared.format, rules.len()) {
        // As TPC-H's dbgen writes them, and some exporters.
        _ if trailing => format!(
            "each record ends with the delimiter, which COPY reads as one more, empty field: remove it from every \
             line (sed 's/{}$//'), or add a column for it to the table",
            match delimiter {
                b'\t' => "\\t".to_string(),
                other => (other as char).to_string(),
            }
        ),
        Some(delimiter) => format!(
            "pass {} (split at {} it has {})",
            shared.format.flag_for_delimiter(delimiter),
            delimiter_shown(delimiter),
            count_of(rules.len() as u64, "field")
        ),
        None => "check --delimiter, or name the columns the file holds with --columns (the others get their \
                 defaults)"
            .into(),
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

/// A delimiter in a message: quoted, a tab as `\t`.
pub(super) fn delimiter_shown(delimiter: u8) -> String {
    match delimiter {
        b'\t' => "'\\t'".into(),
        other => format!("'{}'", other as char),
    }
}
