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
//! to the field), or `column1`... without a header.

use serde_json::Value;

use crate::format::binary::{time_value, Codec};
use crate::format::{documents, head_records, FormatKind, FormatOptions};
use crate::report::thousands;
use crate::sql::quote_ident;

use super::plan::header_fields;

/// How many records of the first input the guess reads.
const SAMPLED_RECORDS: usize = 1_000;

/// What the first records say: the columns' names (as many as known) and
/// guesses, how many records were read, and whether a first line was taken
/// for a header without `--header`.
struct Sampled {
    names: Vec<String>,
    guesses: Vec<Guess>,
    read: usize,
    header_guessed: bool,
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
/// first records of `head`, the first input's start (named `input`), with
/// the columns `given` (`--columns`) or else those the header or keys
/// name, and how many records it read; `None` when it holds none, or when
/// `--columns` leaves fields out.
pub(super) fn create_table(
    table: &str,
    format: &FormatOptions,
    given: Option<&[String]>,
    (input, head): (&str, &[u8]),
) -> Option<String> {
    let Sampled { mut names, mut guesses, read, header_guessed } = match format.kind {
        FormatKind::Jsonl => documents(head)?,
        _ => records(format, head)?,
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
    let header = match header_guessed && given.is_none() {
        true => ", its first line read as a header (pass --header, which skips it)",
        false => "",
    };
    let input = if input == "-" { "standard input" } else { input };
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
        "The first {records} of {input} fit this table{header}: CREATE TABLE {} ({});{whole}",
        crate::sql::quote_qualified_name(table),
        columns.join(", ")
    ))
}

/// CSV and TSV: the header's names (or none) and each field's guess. A
/// first line without `--header` whose every field is text where the
/// records after it have a typed column is taken for a header (and said).
fn records(format: &FormatOptions, head: &[u8]) -> Option<Sampled> {
    // Whole records only: the head may end inside one.
    let all = head_records(head, &FormatOptions { header: false, ..format.clone() });
    let all = &all[..all.len().min(SAMPLED_RECORDS + 1)];
    let (names, body, header_guessed) = match (format.header, all.split_first()) {
        (true, Some((header, body))) => (header_fields(header, format).unwrap_or_default(), body, false),
        (false, Some((first, rest))) if is_a_header(first, rest, format) => {
            (header_fields(first, format).unwrap_or_default(), rest, true)
        }
        _ => (Vec::new(), all, false),
    };
    let body = &body[..body.len().min(SAMPLED_RECORDS)];
    if body.is_empty() && names.is_empty() {
        return None;
    }
    let mut guesses = guesses_of(body, format);
    guesses.resize(guesses.len().max(names.len()), Guess::Nothing);
    Some(Sampled { names, guesses, read: body.len(), header_guessed })
}

/// Each field's guess over `records`.
fn guesses_of(records: &[&[u8]], format: &FormatOptions) -> Vec<Guess> {
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
                *guess = guess.join(guess_text(value));
            }
        }
    }
    guesses
}

/// Whether `first` reads as a header of the records after it: every field
/// text, not empty, and some column typed in the `rest`.
fn is_a_header(first: &[u8], rest: &[&[u8]], format: &FormatOptions) -> bool {
    let Some(fields) = header_fields(first, format) else { return false };
    let labels = fields.iter().all(|f| guess_text(f) == Guess::Text);
    labels && guesses_of(rest, format).iter().any(|g| !matches!(g, Guess::Text | Guess::Nothing))
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
fn documents(head: &[u8]) -> Option<Sampled> {
    let lines: Vec<&[u8]> = head.split(|&b| b == b'\n').take(SAMPLED_RECORDS).collect();
    let names: Vec<String> = documents::keys_in(&lines.join(&b'\n')).into_iter().map(|(key, _)| key).collect();
    let mut guesses = vec![Guess::Nothing; names.len()];
    let mut read = 0;
    for line in lines {
        let Ok(Value::Object(document)) = serde_json::from_slice::<Value>(line) else { continue };
        read += 1;
        for (guess, name) in guesses.iter_mut().zip(&names) {
            let value = document.get(name).map_or(Guess::Nothing, guess_json);
            // A jsonb column takes any JSON value: sluice loads each as JSON.
            *guess = match (*guess, value) {
                (Guess::Jsonb, _) | (_, Guess::Jsonb) => Guess::Jsonb,
                (guess, value) => guess.join(value),
            };
        }
    }
    (read > 0).then_some(Sampled { names, guesses, read, header_guessed: false })
}

fn guess_json(value: &Value) -> Guess {
    match value {
        Value::Null => Guess::Nothing,
        Value::Bool(_) => Guess::Boolean,
        Value::Number(n) if n.is_i64() => Guess::Bigint,
        // Beyond i64: numeric takes it, exactly.
        Value::Number(_) => Guess::Numeric,
        Value::String(text) => match guess_text(text) {
            // A number in quotes is text to whoever wrote it.
            Guess::Bigint | Guess::Numeric | Guess::Boolean => Guess::Text,
            guess => guess,
        },
        Value::Array(_) | Value::Object(_) => Guess::Jsonb,
    }
}

/// What one text value fits (an empty one: anything, as NULL).
fn guess_text(value: &str) -> Guess {
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
    if bytes.len() == 10 && time_value(Codec::Date, bytes, None).is_some() {
        return Guess::Date;
    }
    if bytes.len() > 10 && time_value(Codec::Timestamp, bytes, None).is_some() {
        return Guess::Timestamp;
    }
    if bytes.len() > 10 && time_value(Codec::TimestampTz, bytes, None).is_some() {
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
            assert_eq!(guess_text(value), want, "{value:?}");
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
        let said = create_table("Sales.orders", &csv(true), None, ("o.csv", head)).unwrap();
        let want = "The first 2 records of o.csv fit this table: CREATE TABLE \"sales\".\"orders\" (\"id\" bigint, \
                    \"name\" text, \"amount\" numeric, \"day\" date, \"note\" text);";
        assert_eq!(said, want);
        let given = ["a", "b"].map(String::from);
        let said = create_table("t", &csv(false), Some(&given), ("o.csv", b"1,x,3\n")).unwrap();
        assert!(said.ends_with("CREATE TABLE \"t\" (\"a\" bigint, \"b\" text, \"column3\" bigint);"), "{said}");
        let left_out = ["a", "-"].map(String::from);
        assert_eq!(create_table("t", &csv(false), Some(&left_out), ("o.csv", b"1,x\n")), None);
        assert_eq!(create_table("t", &csv(false), None, ("o.csv", b"")), None);
    }

    #[test]
    fn a_first_line_of_labels_over_typed_records_is_taken_for_a_header() {
        let said = create_table("t", &csv(false), None, ("h.csv", b"id,name,amount\n1,a,1.5\n2,b,\n")).unwrap();
        let want = "The first 2 records of h.csv fit this table, its first line read as a header (pass --header, \
                    which skips it): CREATE TABLE \"t\" (\"id\" bigint, \"name\" text, \"amount\" numeric);";
        assert_eq!(said, want);
        let all_text = create_table("t", &csv(false), None, ("h.csv", b"a,b\nc,d\n")).unwrap();
        assert!(
            all_text.ends_with("this table: CREATE TABLE \"t\" (\"column1\" text, \"column2\" text);"),
            "{all_text}"
        );
    }

    #[test]
    fn tsv_nulls_say_nothing_of_their_column() {
        let tsv = FormatOptions::new(FormatKind::Tsv);
        let said = create_table("t", &tsv, None, ("n.tsv", b"1\t\\N\tx\n\\N\t3.5\t\\N\n")).unwrap();
        assert!(said.ends_with("(\"column1\" bigint, \"column2\" numeric, \"column3\" text);"), "{said}");
        let custom = FormatOptions { null: Some("NULL".into()), ..csv(false) };
        let said = create_table("t", &custom, None, ("n.csv", b"1,NULL\nNULL,2024-01-01\n")).unwrap();
        assert!(said.ends_with("(\"column1\" bigint, \"column2\" date);"), "{said}");
    }

    #[test]
    fn documents_give_their_keys_in_order_and_json_for_nested_values() {
        let jsonl = FormatOptions::new(FormatKind::Jsonl);
        let head =
            b"{\"zid\":1,\"tags\":[1],\"at\":\"2024-01-02\",\"n\":\"5\"}\n{\"zid\":2.5,\"tags\":\"x\",\"ok\":true}\n";
        let said = create_table("t", &jsonl, None, ("d.jsonl", head)).unwrap();
        let want = "(\"zid\" numeric, \"tags\" jsonb, \"at\" date, \"n\" text, \"ok\" boolean); Or, for each \
                    document whole: CREATE TABLE \"t\" (\"doc\" jsonb);";
        assert!(said.ends_with(want), "{said}");
    }
}
