//! Guessing, on the client, which records of a refused chunk the server will
//! refuse for their values, so isolation needs few COPY statements.
//!
//! Why: on PostgreSQL 15 each extra COPY statement costs about 1.6 ms (see
//! bench/README.md), so re-copying runs around every bad record halves the
//! throughput when bad records are frequent. Isolation therefore sends the
//! records it does not suspect as one COPY and each suspect alone.
//!
//! These are guesses, never verdicts: the server still decides every
//! record. A wrong guess costs one small COPY; a missed bad record costs a
//! re-copy. That is why a simple field splitter is acceptable here, next to
//! the one record scanner: it can change how fast isolation goes, never what
//! is loaded. The checks: field count, integers, NOT NULL, declared length,
//! enum labels, booleans, a digit in numbers, dates and times (an empty
//! string or `N/A` in such a column is the most common bad value in exported
//! files), a day that does not exist in a `YYYY-MM-DD` date (MySQL's
//! `0000-00-00`), more integer digits than `numeric(p,s)` holds, and a uuid
//! that is not 32 hex digits among hyphens and braces.

use crate::format::binary::{iso_date, without_modifier};
use crate::format::{FormatKind, FormatOptions};
use crate::sink::postgres::TableInfo;

/// What a column accepts, as far as the guess goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnRule {
    /// The column's name, for messages.
    pub name: String,
    not_null: bool,
    kind: ValueRule,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum ValueRule {
    Integer {
        min: i128,
        max: i128,
    },
    /// `varchar(n)` / `char(n)`: at most `n` characters.
    MaxChars(usize),
    /// An enum: one of its labels, as written (a label with escapes or
    /// quotes in the file is suspected, wrongly, at the cost of one COPY).
    Label(Vec<String>),
    /// Numbers, dates, times and intervals: a digit somewhere, or one of
    /// the words their inputs take ([`DIGITLESS`]).
    Digit,
    /// date and timestamps: as [`Digit`](Self::Digit), and a day that
    /// exists when written `YYYY-MM-DD`.
    Date,
    /// `numeric(p,s)`: as [`Digit`](Self::Digit), and at most `p - s`
    /// digits before the point when written without an exponent.
    Numeric {
        integer_digits: usize,
    },
    /// boolean: `t`, `yes`, `off`, `1`... as the server's input reads them.
    Bool,
    /// uuid: 32 hex digits, with only hyphens and braces among them.
    Uuid,
    Any,
}

/// True when a JSON-lines record is not one valid JSON document (the
/// server's json/jsonb input would refuse it). Parses without building
/// values, and only in the isolation path.
pub fn suspect_json(record: &[u8]) -> bool {
    let line = record.strip_suffix(b"\n").unwrap_or(record);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    serde_json::from_slice::<serde::de::IgnoredAny>(line).is_err()
}

/// Rules for the columns COPY fills, in order; `None` when the format has
/// no fields to check (jsonl).
pub fn rules(table: &TableInfo, columns: Option<&[String]>, format: &FormatOptions) -> Option<Vec<ColumnRule>> {
    if format.kind == FormatKind::Jsonl {
        return None;
    }
    Some(
        table
            .copy_columns(columns)
            .into_iter()
            .map(|(name, ty)| {
                let labels = table.enums.iter().find(|(column, _)| *column == name);
                let kind = labels.map_or_else(|| value_rule(&ty), |(_, labels)| ValueRule::Label(labels.clone()));
                // A column forced not null reads its unquoted NULL string
                // as a value (one forced null as well may still be NULL:
                // the guess lets it pass, the server decides).
                let not_null = table.not_null.contains(&name) && !format.force_not_null.contains(&name);
                ColumnRule { not_null, kind, name }
            })
            .collect(),
    )
}

fn value_rule(sql_type: &str) -> ValueRule {
    let length = |prefix: &str| {
        sql_type.strip_prefix(prefix).and_then(|r| r.strip_suffix(')')).and_then(|n| n.parse::<usize>().ok())
    };
    let base = without_modifier(sql_type);
    match sql_type {
        "smallint" => ValueRule::Integer { min: i16::MIN.into(), max: i16::MAX.into() },
        "integer" => ValueRule::Integer { min: i32::MIN.into(), max: i32::MAX.into() },
        "bigint" => ValueRule::Integer { min: i64::MIN.into(), max: i64::MAX.into() },
        "boolean" => ValueRule::Bool,
        "uuid" => ValueRule::Uuid,
        _ if is_date_or_timestamp(&base) => ValueRule::Date,
        _ if takes_digits(&base) => match numeric_modifier(sql_type) {
            Some((precision, scale)) => ValueRule::Numeric { integer_digits: precision.saturating_sub(scale) },
            None => ValueRule::Digit,
        },
        _ => match length("character varying(").or_else(|| length("character(")) {
            Some(n) => ValueRule::MaxChars(n),
            None => ValueRule::Any,
        },
    }
}

/// Numbers, dates, times, timestamps and intervals (not their ranges, whose
/// input takes `empty` and unbounded `[,)`).
fn takes_digits(base_type: &str) -> bool {
    const TYPES: [&str; 9] = [
        "numeric",
        "real",
        "double precision",
        "date",
        "time without time zone",
        "time with time zone",
        "timestamp without time zone",
        "timestamp with time zone",
        "interval",
    ];
    TYPES.contains(&base_type) || base_type.starts_with("interval ")
}

fn is_date_or_timestamp(base_type: &str) -> bool {
    ["date", "timestamp without time zone", "timestamp with time zone"].contains(&base_type)
}

/// `numeric(p,s)` → `(p, s)`; `numeric(p)` → `(p, 0)`.
fn numeric_modifier(sql_type: &str) -> Option<(usize, usize)> {
    let inside = sql_type.strip_prefix("numeric(")?.strip_suffix(')')?;
    let (precision, scale) = inside.split_once(',').unwrap_or((inside, "0"));
    Some((precision.trim().parse().ok()?, scale.trim().parse().ok()?))
}

/// False for a date written `YYYY-MM-DD` (alone, or before a time) whose
/// day does not exist: month 0 or 13, February 30th, year 0.
fn real_day_if_iso(value: &[u8]) -> bool {
    let value = value.trim_ascii();
    let shaped = value.len() >= 10
        && value
            .iter()
            .take(10)
            .enumerate()
            .all(|(i, b)| if i == 4 || i == 7 { *b == b'-' } else { b.is_ascii_digit() })
        && matches!(value.get(10), None | Some(b' ' | b'T'));
    !shaped || iso_date(&value[..10]).is_some()
}

/// False when a decimal without an exponent has more than `most` digits
/// before its point (leading zeros aside): `numeric field overflow`.
fn fits_integer_digits(value: &[u8], most: usize) -> bool {
    let value = value.trim_ascii();
    let digits = value.strip_prefix(b"-").or_else(|| value.strip_prefix(b"+")).unwrap_or(value);
    let integer = digits.split(|&b| b == b'.').next().unwrap_or_default();
    if !integer.iter().all(u8::is_ascii_digit) || digits.iter().any(|&b| b == b'e' || b == b'E') {
        return true;
    }
    integer.iter().skip_while(|&&b| b == b'0').count() <= most
}

/// The values without a digit that numeric, float, date, time, timestamp
/// or interval input takes (any case, spaces around, a sign before).
const DIGITLESS: [&[u8]; 9] =
    [b"nan", b"infinity", b"inf", b"epoch", b"now", b"today", b"tomorrow", b"yesterday", b"allballs"];

fn has_digit_or_is_a_word(value: &[u8]) -> bool {
    let word = value.trim_ascii();
    let word = word.strip_prefix(b"-").or_else(|| word.strip_prefix(b"+")).unwrap_or(word);
    value.iter().any(u8::is_ascii_digit) || DIGITLESS.iter().any(|w| w.eq_ignore_ascii_case(word))
}

/// PostgreSQL's boolean input: a prefix of `true`, `false`, `yes` or
/// `no`, `on`, `of(f)`, `1` or `0`, in any case, spaces around.
fn boolean(value: &[u8]) -> bool {
    let word = value.trim_ascii();
    let prefix_of = |whole: &[u8], least: usize| {
        (least..=whole.len()).contains(&word.len()) && whole[..word.len()].eq_ignore_ascii_case(word)
    };
    prefix_of(b"true", 1)
        || prefix_of(b"false", 1)
        || prefix_of(b"yes", 1)
        || prefix_of(b"no", 1)
        || prefix_of(b"on", 2)
        || prefix_of(b"off", 2)
        || word == b"1"
        || word == b"0"
}

/// True when the server will probably refuse `record` (terminator included).
/// Fields are taken one at a time and the first implausible one settles it:
/// isolation screens every record of a chunk, most of them clean (3 M rows
/// with a bad id every 1,000 lines spent a quarter of sluice's CPU here
/// when each record's fields were first collected).
pub fn suspect(record: &[u8], rules: &[ColumnRule], format: &FormatOptions) -> bool {
    let mut fields = fields(record, format);
    rules.iter().any(|rule| !fields.next().is_some_and(|field| plausible(&field, rule))) || fields.next().is_some()
}

/// How many fields `record` (terminator included) splits into, as far as
/// the guess goes.
pub fn field_count(record: &[u8], format: &FormatOptions) -> usize {
    fields(record, format).count()
}

fn fields<'a>(record: &'a [u8], format: &'a FormatOptions) -> Fields<'a> {
    let line = record.strip_suffix(b"\n").unwrap_or(record);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match format.kind {
        FormatKind::Csv => {
            let quote = format.quote.unwrap_or(b'"');
            Fields::Csv(CsvFields {
                line,
                at: 0,
                done: false,
                delimiter: format.delimiter.unwrap_or(b','),
                quote,
                escape: format.escape.unwrap_or(quote),
                null: format.null.as_deref().unwrap_or("").as_bytes(),
            })
        }
        _ => Fields::Text(TextFields {
            line,
            at: 0,
            done: false,
            delimiter: format.delimiter.unwrap_or(b'\t'),
            null: format.null.as_deref().unwrap_or("\\N").as_bytes(),
        }),
    }
}

/// A field as the guess sees it: `None` for NULL.
type Field<'a> = Option<&'a [u8]>;

/// A line's fields, one at a time, in either format.
enum Fields<'a> {
    Text(TextFields<'a>),
    Csv(CsvFields<'a>),
}

impl<'a> Iterator for Fields<'a> {
    type Item = Field<'a>;

    fn next(&mut self) -> Option<Field<'a>> {
        match self {
            Fields::Text(fields) => fields.next(),
            Fields::Csv(fields) => fields.next(),
        }
    }
}

fn plausible(field: &Field<'_>, rule: &ColumnRule) -> bool {
    let Some(value) = field else { return !rule.not_null };
    match rule.kind {
        ValueRule::Any => true,
        ValueRule::MaxChars(n) => {
            let end = value.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
            // UTF-8 characters are the bytes that do not continue one.
            value[..end].iter().filter(|&&b| b & 0xC0 != 0x80).count() <= n
        }
        ValueRule::Integer { min, max } => integer(value).is_some_and(|v| (min..=max).contains(&v)),
        ValueRule::Label(ref labels) => labels.iter().any(|label| label.as_bytes() == *value),
        ValueRule::Digit => has_digit_or_is_a_word(value),
        ValueRule::Date => has_digit_or_is_a_word(value) && real_day_if_iso(value),
        ValueRule::Numeric { integer_digits } => {
            has_digit_or_is_a_word(value) && fits_integer_digits(value, integer_digits)
        }
        ValueRule::Bool => boolean(value),
        ValueRule::Uuid => {
            value.iter().filter(|b| b.is_ascii_hexdigit()).count() == 32
                && value.iter().all(|b| b.is_ascii_hexdigit() || b"-{}".contains(b))
        }
    }
}

/// `[ws][+|-]digits[ws]` as PostgreSQL 15's integer input reads it.
fn integer(value: &[u8]) -> Option<i128> {
    let t = value.trim_ascii();
    let (negative, digits) = match t.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, t),
    };
    if digits.is_empty() || digits.len() > 20 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = digits.iter().fold(0i128, |acc, &d| acc * 10 + i128::from(d - b'0'));
    Some(if negative { -v } else { v })
}

/// PostgreSQL text format: fields split at unescaped delimiters; the raw
/// NULL string (default `\N`) is NULL. Escapes are left in place; a line
/// that ends in a lone backslash loses its last field.
struct TextFields<'a> {
    line: &'a [u8],
    at: usize,
    done: bool,
    delimiter: u8,
    null: &'a [u8],
}

impl<'a> Iterator for TextFields<'a> {
    type Item = Field<'a>;

    fn next(&mut self) -> Option<Field<'a>> {
        if self.done {
            return None;
        }
        let (line, start) = (self.line, self.at);
        let mut i = start;
        let end = loop {
            match memchr::memchr2(self.delimiter, b'\\', &line[i..]) {
                Some(o) if line[i + o] == self.delimiter => break i + o,
                Some(o) => i += o + 2,
                None => {
                    self.done = true;
                    break line.len();
                }
            }
            if i > line.len() {
                self.done = true;
                return None;
            }
        };
        self.at = end + 1;
        let raw = &line[start..end];
        Some((raw != self.null).then_some(raw))
    }
}

/// PostgreSQL CSV: quoted fields may hold delimiters; an unquoted field
/// equal to the NULL string (default empty) is NULL.
struct CsvFields<'a> {
    line: &'a [u8],
    at: usize,
    done: bool,
    delimiter: u8,
    quote: u8,
    escape: u8,
    null: &'a [u8],
}

impl<'a> Iterator for CsvFields<'a> {
    type Item = Field<'a>;

    fn next(&mut self) -> Option<Field<'a>> {
        if self.done {
            return None;
        }
        let (line, start, quote, escape) = (self.line, self.at, self.quote, self.escape);
        let mut i = start;
        let quoted = line.get(i) == Some(&quote);
        if quoted {
            i += 1;
            loop {
                let Some(o) = memchr::memchr2(quote, escape, &line[i..]) else {
                    // A quote left open: the field runs to the line's end.
                    i = line.len();
                    break;
                };
                i += o;
                if line[i] == escape && escape != quote && i + 1 < line.len() {
                    i += 2;
                } else if line[i] != quote {
                    i += 1;
                } else if escape == quote && line.get(i + 1) == Some(&quote) {
                    i += 2;
                } else {
                    i += 1;
                    break;
                }
            }
        }
        let end = memchr::memchr(self.delimiter, &line[i..]).map_or(line.len(), |o| i + o);
        self.done = end >= line.len();
        self.at = end + 1;
        let raw = &line[start..end];
        let value = if quoted { raw.get(1..raw.len().saturating_sub(1)).unwrap_or_default() } else { raw };
        Some((quoted || raw != self.null).then_some(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The splitters as they were when each record's fields were collected
    // first: the reference the iterators are held to.
    /// PostgreSQL text format: fields split at unescaped delimiters; the raw
    /// NULL string (default `\N`) is NULL. Escapes are left in place.
    fn reference_text_fields<'a>(line: &'a [u8], format: &FormatOptions) -> Vec<Field<'a>> {
        let delimiter = format.delimiter.unwrap_or(b'\t');
        let null = format.null.as_deref().unwrap_or("\\N").as_bytes();
        let mut fields = Vec::new();
        let (mut start, mut i) = (0, 0);
        while i <= line.len() {
            if i == line.len() || line[i] == delimiter {
                let raw = &line[start..i];
                fields.push((raw != null).then_some(raw));
                start = i + 1;
            } else if line[i] == b'\\' {
                i += 1;
            }
            i += 1;
        }
        fields
    }

    /// PostgreSQL CSV: quoted fields may hold delimiters; an unquoted field
    /// equal to the NULL string (default empty) is NULL.
    fn reference_csv_fields<'a>(line: &'a [u8], format: &FormatOptions) -> Vec<Field<'a>> {
        let delimiter = format.delimiter.unwrap_or(b',');
        let quote = format.quote.unwrap_or(b'"');
        let escape = format.escape.unwrap_or(quote);
        let null = format.null.as_deref().unwrap_or("").as_bytes();
        let mut fields = Vec::new();
        let mut i = 0;
        loop {
            let start = i;
            let quoted = line.get(i) == Some(&quote);
            if quoted {
                i += 1;
                while i < line.len() {
                    if line[i] == escape && escape != quote && i + 1 < line.len() {
                        i += 2;
                    } else if line[i] == quote {
                        if escape == quote && line.get(i + 1) == Some(&quote) {
                            i += 2;
                        } else {
                            i += 1;
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            while i < line.len() && line[i] != delimiter {
                i += 1;
            }
            let raw = &line[start..i];
            let value = if quoted { raw.get(1..raw.len().saturating_sub(1)).unwrap_or_default() } else { raw };
            fields.push((quoted || raw != null).then_some(value));
            if i >= line.len() {
                break;
            }
            i += 1;
        }
        fields
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// The field iterators split as the collecting splitters did, in
        /// both formats, with their quotes, escapes and NULL strings.
        #[test]
        fn fields_split_as_the_reference_does(
            line in proptest::collection::vec(proptest::sample::select(b"ab,|\t\"\\N\r".to_vec()), 0..40),
            csv in proptest::bool::ANY,
            dialect in 0usize..4,
        ) {
            let mut format = FormatOptions::new(if csv { FormatKind::Csv } else { FormatKind::Tsv });
            if dialect & 1 == 1 {
                format.delimiter = Some(b'|');
                format.null = Some("N".into());
            }
            if csv && dialect & 2 == 2 {
                format.escape = Some(b'\\');
            }
            let got: Vec<Field> = fields(&line, &format).collect();
            let record = line.strip_suffix(b"\n").unwrap_or(&line);
            let record = record.strip_suffix(b"\r").unwrap_or(record);
            let want = if csv { reference_csv_fields(record, &format) } else { reference_text_fields(record, &format) };
            proptest::prop_assert_eq!(got, want);
        }
    }

    fn table() -> TableInfo {
        TableInfo {
            oid: 16384,
            schema: "public".into(),
            name: "t".into(),
            columns: vec![("id".into(), "integer".into()), ("name".into(), "character varying(5)".into())],
            not_null: vec!["id".into()],
            enums: Vec::new(),
            text_like: Vec::new(),
            is_view: false,
            session_time_zone: "UTC".into(),
            session_date_style: "ISO, MDY".into(),
        }
    }

    #[test]
    fn suspects_what_the_server_would_refuse() {
        let csv = FormatOptions::new(FormatKind::Csv);
        let r = rules(&table(), None, &csv).unwrap();
        assert!(!suspect(b"1,abc\n", &r, &csv));
        assert!(!suspect(b" -7 ,\"a,b\"\r\n", &r, &csv), "quoted delimiter, spaces around integers");
        assert!(!suspect(b"2,\n", &r, &csv), "NULL in a nullable column");
        assert!(suspect(b"x1,abc\n", &r, &csv), "not an integer");
        assert!(suspect(b"9999999999,a\n", &r, &csv), "out of range");
        assert!(suspect(b",abc\n", &r, &csv), "NULL in NOT NULL");
        assert!(suspect(b"1,abcdef\n", &r, &csv), "too long");
        assert!(suspect(b"1\n", &r, &csv), "missing field");
        assert!(suspect(b"1,a,b\n", &r, &csv), "extra field");
        let tsv = FormatOptions::new(FormatKind::Tsv);
        let r = rules(&table(), None, &tsv).unwrap();
        assert!(!suspect(b"1\ta\\tb\n", &r, &tsv), "escaped tab is data");
        assert!(suspect(b"\\N\tabc\n", &r, &tsv), "NULL in NOT NULL");
        assert!(rules(&table(), None, &FormatOptions::new(FormatKind::Jsonl)).is_none());
    }

    #[test]
    fn enum_values_that_are_no_label_are_suspects() {
        let mut t = table();
        t.columns[1].1 = "mood".into();
        t.enums = vec![("name".into(), vec!["ok".into(), "très content".into()])];
        let csv = FormatOptions::new(FormatKind::Csv);
        let r = rules(&t, None, &csv).unwrap();
        assert!(!suspect(b"1,ok\n", &r, &csv));
        assert!(!suspect("2,\"très content\"\n".as_bytes(), &r, &csv), "quoted, with a space");
        assert!(!suspect(b"3,\n", &r, &csv), "NULL");
        assert!(suspect(b"4,OK\n", &r, &csv), "labels are case-sensitive");
        assert!(suspect(b"5, ok\n", &r, &csv), "and not trimmed");
        assert!(suspect(b"6,\"\"\n", &r, &csv), "an empty string is no label");
    }

    #[test]
    fn numbers_dates_and_booleans_without_their_shape_are_suspects() {
        let rule = |ty: &str| ColumnRule { name: "c".into(), not_null: false, kind: value_rule(ty) };
        let plausible = |ty: &str, v: &str| plausible(&Some(v.as_bytes()), &rule(ty));
        for ty in ["numeric(12,2)", "double precision", "date", "timestamp(3) with time zone", "time without time zone"]
        {
            for good in
                ["1", "-1.5e3", "2024-01-02", "Jan 8 99 BC", "04:05", " Infinity ", "-inf", "NaN", "today", "EPOCH"]
            {
                assert!(plausible(ty, good), "{ty} {good:?}");
            }
            for bad in ["", " ", "N/A", "null", "-", "unknown", "infinite"] {
                assert!(!plausible(ty, bad), "{ty} {bad:?}");
            }
        }
        for good in ["t", "TRUE", " yes ", "n", "of", "Off", "on", "1", "0", "fal"] {
            assert!(plausible("boolean", good), "{good:?}");
        }
        for bad in ["", "o", "2", "truee", "yess", "nope", "N/A", "-1"] {
            assert!(!plausible("boolean", bad), "{bad:?}");
        }
        for ty in ["date", "timestamp without time zone", "timestamp(0) with time zone"] {
            for good in
                ["2024-02-29", " 2024-12-31 ", "2024-01-01 10:00", "2024-01-01T10:00Z", "0001-01-01 BC", "12/31/2024"]
            {
                assert!(plausible(ty, good), "{ty} {good:?}");
            }
            for bad in ["0000-00-00", "0000-00-00 00:00:00", "2023-02-29", "2024-13-01", "2024-04-31T00:00"] {
                assert!(!plausible(ty, bad), "{ty} {bad:?}");
            }
        }
        assert!(plausible("time without time zone", "0000-00-00"), "not a date");
        for good in ["99999999.99", "-00012345678", "+12.5", ".5", "1e9", "NaN", "12345678.999"] {
            assert!(plausible("numeric(10,2)", good), "{good:?}");
        }
        for bad in ["123456789", "-123456789.5", " 1000000000 "] {
            assert!(!plausible("numeric(10,2)", bad), "{bad:?}");
        }
        assert!(!plausible("numeric(3)", "1234"));
        assert!(plausible("numeric", "123456789012345678901234567890"), "no modifier");
        assert!(plausible("interval day to second", "1 day"));
        assert!(!plausible("interval day to second", "N/A"));
        assert!(plausible("daterange", "empty"), "ranges are not checked");
        assert!(plausible("text", ""));
        for good in [
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "{A0EEBC999C0B4EF8BB6D6BB9BD380A11}",
            "a0ee-bc99-9c0b4ef8bb6d6bb9bd380a11",
        ] {
            assert!(plausible("uuid", good), "{good:?}");
        }
        for bad in [
            "",
            "N/A",
            " a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
            "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        ] {
            assert!(!plausible("uuid", bad), "{bad:?}");
        }
        assert!(plausible("inet", "N/A"), "not checked");
    }

    #[test]
    fn json_lines_that_do_not_parse_are_suspects() {
        assert!(!suspect_json(b"{\"a\":[1,2,{\"b\":null}]}\r\n"));
        assert!(suspect_json(b"{\"a\":1,}\n"));
        assert!(suspect_json(b"\n"), "an empty line is no document");
    }

    #[test]
    fn integers_as_postgresql_15_reads_them() {
        assert_eq!(integer(b" +12 "), Some(12));
        assert_eq!(integer(b"-7"), Some(-7));
        assert_eq!(integer(b"1_000"), None);
        assert_eq!(integer(b"0x1F"), None);
        assert_eq!(integer(b"-"), None);
        assert_eq!(integer(b""), None);
        assert_eq!(integer(b"99999999999999999999999"), None);
    }
}
