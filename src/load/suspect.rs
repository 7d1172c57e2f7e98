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
//! enum labels, booleans, a digit in dates, times and intervals (an empty
//! string or `N/A` in such a column is the most common bad value in exported
//! files), a day that does not exist in a date of three numbers read in the
//! session's DateStyle (MySQL's `0000-00-00`, `31/12/2024` read month
//! first), a number where a date goes (a spreadsheet's serial day `45321`,
//! a year alone, `12 %`) or a time goes (`10`), an hour, minute or second
//! out of range, numbers written as numbers (not `1,234.50`, `$5` or
//! `12 %`) that fit the column
//! (`numeric(p,s)`'s integer digits, real's and double's range), a uuid that
//! is not 32 hex digits among hyphens and braces, network addresses of hex
//! digits, dots, colons and a slash (an IPv4 one of numbers to 255), array
//! literals in braces, and JSON that does not parse.
//!
//! A wrong guess is cheap when the value check runs (see `value_check`):
//! the suspect's values pass and it goes back to the clean run. That is why
//! these rules may be stricter than the server; never looser, or a bad
//! record costs a re-copy.

use crate::format::binary::{iso_date, type_modifiers, unescape_text, without_modifier, DateOrder};
use crate::format::convert::{Conversion, NumberMarks, NumberWriting};
use crate::format::currency::Currency;
use crate::format::{FormatKind, FormatOptions, COMMON_DELIMITERS};
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
    /// Intervals: a digit somewhere, or one of the words their inputs take
    /// ([`DIGITLESS`]).
    Digit,
    /// time and timetz: as [`Digit`](Self::Digit), a time of day in range
    /// when it starts as one, and a colon or `HHMM[SS]` when it has no
    /// letters.
    Time,
    /// date and timestamps: as [`Time`](Self::Time) after the date, and a
    /// day that exists when the date is three numbers, read in `order`
    /// (`None`: year first), or digits alone; without letters, one of the
    /// server's letterless dates.
    Date {
        order: Option<DateOrder>,
    },
    /// numeric, real and double: a number as their inputs write it, or one
    /// of their words; at most `integer_digits` digits before the point
    /// (`numeric(p,s)`'s `p - s`) when written without an exponent; within
    /// `range`.
    Number {
        integer_digits: Option<usize>,
        range: FloatRange,
    },
    /// inet and cidr: an IPv6 address of hex digits and colons, or an IPv4
    /// one of up to four numbers to 255 and a mask length to 32; four
    /// numbers in an inet without a mask length (a `cidr` reads `192.168`
    /// as `192.168.0.0/24`).
    Network {
        cidr: bool,
    },
    /// macaddr and macaddr8: hex digits among colons, hyphens and dots.
    MacAddress,
    /// An array: its literal in braces (a dimension decoration before it).
    Array,
    /// json and jsonb: one JSON document once the format's escapes are read.
    Json,
    /// boolean: `t`, `yes`, `off`, `1`... as the server's input reads them.
    Bool,
    /// uuid: 32 hex digits, with only hyphens and braces among them.
    Uuid,
    Any,
}

/// Which floating-point type's range a number must be in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FloatRange {
    Unlimited,
    Real,
    Double,
}

/// True when a JSON-lines record is not one valid JSON document (the
/// server's json/jsonb input would refuse it). Parses without building
/// values, and only in the isolation path.
pub fn suspect_json(record: &[u8]) -> bool {
    let line = crate::format::without_line_end(record);
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
                let order = DateOrder::of_date_style(&table.session_date_style);
                let kind =
                    labels.map_or_else(|| value_rule(&ty, order), |(_, labels)| ValueRule::Label(labels.clone()));
                // A column forced not null reads its unquoted NULL string
                // as a value (one forced null as well may still be NULL:
                // the guess lets it pass, the server decides).
                let not_null = table.not_null.contains(&name) && !format.force_not_null.contains(&name);
                ColumnRule { not_null, kind, name }
            })
            .collect(),
    )
}

fn value_rule(sql_type: &str, order: Option<DateOrder>) -> ValueRule {
    let base = without_modifier(sql_type);
    let length = match (base.as_str(), &type_modifiers(sql_type)[..]) {
        ("character varying" | "character", &[n]) => usize::try_from(n).ok(),
        _ => None,
    };
    let number = |range| ValueRule::Number {
        integer_digits: numeric_modifier(sql_type).map(|(precision, scale)| precision.saturating_sub(scale)),
        range,
    };
    match base.as_str() {
        "smallint" => ValueRule::Integer { min: i16::MIN.into(), max: i16::MAX.into() },
        "integer" => ValueRule::Integer { min: i32::MIN.into(), max: i32::MAX.into() },
        "bigint" => ValueRule::Integer { min: i64::MIN.into(), max: i64::MAX.into() },
        "boolean" => ValueRule::Bool,
        "uuid" => ValueRule::Uuid,
        "numeric" => number(FloatRange::Unlimited),
        "real" => number(FloatRange::Real),
        "double precision" => number(FloatRange::Double),
        "inet" => ValueRule::Network { cidr: false },
        "cidr" => ValueRule::Network { cidr: true },
        "macaddr" | "macaddr8" => ValueRule::MacAddress,
        "json" | "jsonb" => ValueRule::Json,
        "time without time zone" | "time with time zone" => ValueRule::Time,
        _ if is_date_or_timestamp(&base) => ValueRule::Date { order },
        _ if base == "interval" || base.starts_with("interval ") => ValueRule::Digit,
        _ if base.ends_with("[]") => ValueRule::Array,
        _ => match length {
            Some(n) => ValueRule::MaxChars(n),
            None => ValueRule::Any,
        },
    }
}

fn is_date_or_timestamp(base_type: &str) -> bool {
    ["date", "timestamp without time zone", "timestamp with time zone"].contains(&base_type)
}

/// `numeric(p,s)` → `(p, s)`; `numeric(p)` → `(p, 0)`.
fn numeric_modifier(sql_type: &str) -> Option<(usize, usize)> {
    if without_modifier(sql_type) != "numeric" {
        return None;
    }
    let (precision, scale) = match type_modifiers(sql_type)[..] {
        [precision] => (precision, 0),
        [precision, scale] => (precision, scale),
        _ => return None,
    };
    Some((usize::try_from(precision).ok()?, usize::try_from(scale).ok()?))
}

/// False for a date (alone, or before a time) of three numbers whose day
/// does not exist as the server reads them: year first when the first has
/// more than two digits, else in the DateStyle's `order` (`None`: year
/// first). Month 0 or 13, February 30th, `0000-00-00`, `31/12/2024` read
/// month first. A date of digits alone is read whatever the DateStyle as a
/// month and day in its last four digits after the year (`20240115`,
/// `240115`), so fewer than six digits (`97`, `2024`, a spreadsheet's
/// `45321`) are refused. Also false for a letterless value that does not
/// start as a date (see [`letterless_date`]) or for a time after the date
/// that is out of range.
fn real_date(value: &[u8], order: Option<DateOrder>) -> bool {
    let value = value.trim_ascii();
    let (date, time) = match value.iter().position(|&b| b == b' ' || b == b'T') {
        Some(gap) => (&value[..gap], &value[gap + 1..]),
        None => (value, &value[..0]),
    };
    // The common ISO date first, alone: a whole refused chunk is screened.
    if iso_date(date).is_some() {
        return time_in_range(time);
    }
    if !value.iter().any(u8::is_ascii_alphabetic) && !letterless_date(value) {
        return false;
    }
    let day_exists = digits_only_date(date).unwrap_or_else(|| date_of_three_numbers(date, order));
    day_exists && time_in_range(time)
}

/// For a date of digits alone, whether its day exists read as the server
/// reads it (see [`real_date`]); `None` for any other date.
fn digits_only_date(date: &[u8]) -> Option<bool> {
    if date.is_empty() || !date.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // Up to seven digits of year: a date's last year is 5874897.
    if !(6..=11).contains(&date.len()) {
        return Some(false);
    }
    let (year, month_day) = date.split_at(date.len() - 4);
    Some(day_exists(year, number(&month_day[..2]), number(&month_day[2..])))
}

/// Whether a value without letters starts with one of the server's
/// letterless dates: digits alone, three numbers (`2024-01-15`,
/// `1/15/2024`, `15.01.2024`) or a year and a day of the year
/// (`1999.008`). A number (`1,234`, `12 %`, `$5`, `5.`), two numbers
/// (`1/15`), a time alone or an address (`10.0.0.1`) does not.
fn letterless_date(value: &[u8]) -> bool {
    let end = value.iter().position(|b| !(b.is_ascii_digit() || b"-/.".contains(b))).unwrap_or(value.len());
    let date = &value[..end];
    let digits = |part: &[u8]| part.iter().all(u8::is_ascii_digit);
    let year_and_day = date.iter().position(|&b| b == b'.').is_some_and(|dot| {
        let (year, day) = (&date[..dot], &date[dot + 1..]);
        !year.is_empty() && digits(year) && digits(day) && day.len() == 3
    });
    digits_only_date(date).unwrap_or_else(|| three_numbers(date).is_some() || year_and_day)
}

/// Whether the day of a date of three numbers exists as the server reads
/// it (see [`real_date`]); true for any other date.
fn date_of_three_numbers(date: &[u8], order: Option<DateOrder>) -> bool {
    three_numbers(date).map_or(true, |parts| {
        let (year, month, day) = match (parts[0].len() > 2, order) {
            (true, _) | (false, None) => (parts[0], parts[1], parts[2]),
            (false, Some(DateOrder::MonthFirst)) => (parts[2], parts[0], parts[1]),
            (false, Some(DateOrder::DayFirst)) => (parts[2], parts[1], parts[0]),
        };
        day_exists(year, number(month), number(day))
    })
}

/// `a/b/c`, `a-b-c` or `a.b.c` (the same separator twice), each of one to
/// nine digits.
fn three_numbers(date: &[u8]) -> Option<[&[u8]; 3]> {
    let separator = *date.iter().find(|b| !b.is_ascii_digit())?;
    if !matches!(separator, b'/' | b'-' | b'.') {
        return None;
    }
    let mut parts = date.split(|&b| b == separator);
    let three = [parts.next()?, parts.next()?, parts.next()?];
    let numbers = three.iter().all(|p| (1..=9).contains(&p.len()) && p.iter().all(u8::is_ascii_digit));
    (parts.next().is_none() && numbers).then_some(three)
}

/// The value of up to nine digits.
fn number(digits: &[u8]) -> u32 {
    digits.iter().fold(0, |n, &d| n * 10 + u32::from(d - b'0'))
}

/// Whether `month`/`day` exists in `year` as written: a year of one or two
/// digits is in this century or the last (so February 29th may exist), and
/// only a longer one can be year zero, which does not.
fn day_exists(year: &[u8], month: u32, day: u32) -> bool {
    const MONTH_DAYS: [u32; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let (short, year) = (year.len() <= 2, number(year));
    let leap = short || (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0));
    let most = match month {
        2 if !leap => 28,
        1..=12 => MONTH_DAYS[month as usize - 1],
        _ => return false,
    };
    (short || year > 0) && (1..=most).contains(&day)
}

/// False for a value that starts as a time of day (`H:MM`, `HH:MM:SS`,
/// fractions) out of range: an hour past 24, a minute past 59, a second
/// past 60, or past 24:00:00. What follows (an offset, `AM`) is not read.
fn time_in_range(value: &[u8]) -> bool {
    let Some((hours, rest)) = short_number(value, 1) else { return true };
    let Some((minutes, rest)) = rest.strip_prefix(b":").and_then(|r| short_number(r, 2)) else { return true };
    let (seconds, rest) = rest.strip_prefix(b":").and_then(|r| short_number(r, 2)).unwrap_or((0, rest));
    let fraction = rest.strip_prefix(b".").unwrap_or_default();
    let past_midnight = fraction.iter().take_while(|b| b.is_ascii_digit()).any(|&d| d != b'0');
    (hours < 24 && minutes < 60 && seconds <= 60) || (hours == 24 && minutes == 0 && seconds == 0 && !past_midnight)
}

/// False for a value without letters that cannot be a time: one without a
/// colon unless it starts with the four or six digits of `HHMM` or
/// `HHMMSS` (`10`, `1,234`, `5.` are refused).
fn time_shape(value: &[u8]) -> bool {
    let value = value.trim_ascii();
    let digits = value.iter().take_while(|b| b.is_ascii_digit()).count();
    value.iter().any(|b| b.is_ascii_alphabetic() || *b == b':') || digits == 4 || digits == 6
}

/// A number of `least` to two digits at the start of `text` (no third
/// digit after them), and the rest.
fn short_number(text: &[u8], least: usize) -> Option<(u32, &[u8])> {
    let n = text.iter().take_while(|b| b.is_ascii_digit()).count();
    (least..=2).contains(&n).then(|| (number(&text[..n]), &text[n..]))
}

/// False when a decimal has more than `most` digits before its point
/// (leading zeros aside, its exponent counted): `numeric field overflow`.
fn fits_integer_digits(value: &[u8], most: usize) -> bool {
    let value = value.trim_ascii();
    let unsigned = value.strip_prefix(b"-").or_else(|| value.strip_prefix(b"+")).unwrap_or(value);
    let (mantissa, exponent) = match unsigned.iter().position(|&b| b == b'e' || b == b'E') {
        Some(at) => {
            (&unsigned[..at], std::str::from_utf8(&unsigned[at + 1..]).ok().and_then(|e| e.parse::<i64>().ok()))
        }
        None => (unsigned, Some(0)),
    };
    let (Some(exponent), Some(integer)) = (exponent, mantissa.split(|&b| b == b'.').next()) else { return true };
    if !integer.iter().all(u8::is_ascii_digit) {
        return true;
    }
    let fraction = mantissa.get(integer.len() + 1..).unwrap_or_default();
    let significant = integer.iter().skip_while(|&&b| b == b'0').count() as i64;
    // Where the first significant digit stands, in digits before the point.
    let magnitude = match significant {
        0 => match fraction.iter().position(|&b| b != b'0') {
            Some(zeros) => -(zeros as i64),
            None => return true,
        },
        n => n,
    };
    magnitude.saturating_add(exponent) <= most as i64
}

/// `[+-]digits[.digits][e[+-]digits]` (or `.digits`), spaces around, or
/// `NaN`, `Infinity` or `inf` in any case after a sign: what numeric, real
/// and double read (PostgreSQL 16's underscores and hex integers aside),
/// within `range`. Thousands separators, currency and percent signs and
/// decimal commas make no number for the server.
fn plain_number(value: &[u8], range: FloatRange) -> bool {
    let value = value.trim_ascii();
    let unsigned = value.strip_prefix(b"-").or_else(|| value.strip_prefix(b"+")).unwrap_or(value);
    if b"nan".eq_ignore_ascii_case(unsigned) {
        // numeric's NaN takes no sign.
        return range != FloatRange::Unlimited || unsigned.len() == value.len();
    }
    if b"infinity".eq_ignore_ascii_case(unsigned) || b"inf".eq_ignore_ascii_case(unsigned) {
        return true;
    }
    let digits = |from: usize| unsigned[from..].iter().take_while(|b| b.is_ascii_digit()).count();
    let integer = digits(0);
    let mut end = integer;
    if unsigned.get(end) == Some(&b'.') {
        end += 1 + digits(end + 1);
    }
    let mantissa = &unsigned[..end];
    if !mantissa.iter().any(u8::is_ascii_digit) {
        return false;
    }
    if matches!(unsigned.get(end), Some(b'e' | b'E')) {
        end += 1 + usize::from(matches!(unsigned.get(end + 1), Some(b'+' | b'-')));
        let exponent = if end <= unsigned.len() { digits(end) } else { 0 };
        if exponent == 0 {
            return false;
        }
        end += exponent;
    }
    end == unsigned.len() && in_range(value, mantissa, range)
}

/// Whether `value` is a number numeric reads (see [`plain_number`]).
pub(super) fn numeric_text(value: &[u8]) -> bool {
    plain_number(value, FloatRange::Unlimited)
}

/// Whether a number's value is neither too large for `range` nor so small
/// that it reads as zero (the server refuses both as out of range).
fn in_range(value: &[u8], mantissa: &[u8], range: FloatRange) -> bool {
    if range == FloatRange::Unlimited {
        return true;
    }
    let Ok(text) = std::str::from_utf8(value) else { return true };
    let text = text.strip_prefix('+').unwrap_or(text);
    let (zero, infinite) = match range {
        FloatRange::Unlimited => return true,
        FloatRange::Real => text.parse::<f32>().map_or((false, false), |v| (v == 0.0, v.is_infinite())),
        FloatRange::Double => text.parse::<f64>().map_or((false, false), |v| (v == 0.0, v.is_infinite())),
    };
    let underflow = zero && mantissa.iter().any(|b| (b'1'..=b'9').contains(b));
    !(infinite || underflow)
}

/// inet and cidr input: an IPv4 or IPv6 address and its mask length; no
/// spaces, which the server refuses.
fn network_address(value: &[u8], cidr: bool) -> bool {
    let well_formed =
        value.iter().any(u8::is_ascii_hexdigit) && value.iter().all(|b| b.is_ascii_hexdigit() || b".:/".contains(b));
    well_formed && (value.contains(&b':') || ipv4_address(value, cidr))
}

/// An IPv4 address as inet and cidr read it (see [`ValueRule::Network`]).
fn ipv4_address(value: &[u8], cidr: bool) -> bool {
    let small = |digits: &[u8], most: u32| {
        (1..=9).contains(&digits.len()) && digits.iter().all(u8::is_ascii_digit) && number(digits) <= most
    };
    let (address, mask) = match value.iter().position(|&b| b == b'/') {
        Some(slash) => (&value[..slash], Some(&value[slash + 1..])),
        None => (value, None),
    };
    let numbers = address.split(|&b| b == b'.').count();
    let parts_read = numbers == 4 || (numbers < 4 && (cidr || mask.is_some()));
    parts_read && address.split(|&b| b == b'.').all(|n| small(n, 255)) && mask.map_or(true, |m| small(m, 32))
}

/// macaddr and macaddr8 input: twelve or sixteen hex digits among `:`, `-`
/// and `.`, spaces around.
fn mac_address(value: &[u8]) -> bool {
    let value = value.trim_ascii();
    value.iter().filter(|b| b.is_ascii_hexdigit()).count() >= 12
        && value.iter().all(|b| b.is_ascii_hexdigit() || b":-.".contains(b))
}

/// An array literal: `{...}`, or `[1:2]={...}`, spaces around.
fn array_literal(value: &[u8]) -> bool {
    let value = value.trim_ascii();
    matches!(value.first(), Some(b'{' | b'[')) && value.last() == Some(&b'}')
}

/// Whether a field holds one JSON document once its escapes are read as
/// COPY reads them: doubled quotes (or the escape character) in CSV,
/// backslash escapes in text.
fn json_document(value: &[u8], format: &FormatOptions) -> bool {
    let mut unescaped = Vec::with_capacity(value.len());
    if format.kind == FormatKind::Csv {
        let quote = format.quote.unwrap_or(b'"');
        let escape = format.escape.unwrap_or(quote);
        let mut bytes = value.iter().copied().peekable();
        while let Some(b) = bytes.next() {
            let escaped = b == escape && bytes.peek().is_some_and(|&n| n == quote || n == escape);
            unescaped.push(if escaped { bytes.next().unwrap_or(b) } else { b });
        }
    } else if unescape_text(value, &mut unescaped).is_err() {
        return true;
    }
    serde_json::from_slice::<serde::de::IgnoredAny>(&unescaped).is_ok()
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
    rules.iter().any(|rule| !fields.next().is_some_and(|field| plausible(&field, rule, format)))
        || fields.next().is_some()
}

/// True when COPY refuses `record` (terminator included) whatever its
/// values: a field too many or too few, or a NULL in a NOT NULL column.
pub fn misshapen(record: &[u8], rules: &[ColumnRule], format: &FormatOptions) -> bool {
    let mut fields = fields(record, format);
    rules.iter().any(|rule| fields.next().map_or(true, |field| field.is_none() && rule.not_null))
        || fields.next().is_some()
}

/// True when a NULL in a NOT NULL column is all the client finds wrong
/// with `record` (terminator included): one such NULL or more, the right
/// number of fields, and every other value plausible. COPY refuses it for
/// the first such column, unless a value before the constraints are checked
/// refuses it first; the CHECK query (see `check_constraint`) can tell.
pub fn only_nulls_where_none_go(record: &[u8], rules: &[ColumnRule], format: &FormatOptions) -> bool {
    let mut fields = fields(record, format);
    let mut null = false;
    for rule in rules {
        let Some(field) = fields.next() else { return false };
        if field.is_none() && rule.not_null {
            null = true;
        } else if !plausible(&field, rule, format) {
            return false;
        }
    }
    null && fields.next().is_none()
}

/// Whether `record` reads as a header line: every field a label (not
/// empty, not a number), and one at least the name of one of `columns` (in
/// any case, with quotes and spaces around or not). Why not every field a
/// column's: an export's header names a column or two another way
/// (`region` for `name`), and its line was rejected without a word of
/// `--header`.
pub fn reads_as_a_header(record: &[u8], columns: &[(String, String)], format: &FormatOptions) -> bool {
    let names: Option<Vec<&[u8]>> = fields(record, format)
        .map(|field| {
            let name = field?.trim_ascii();
            let name = name.strip_prefix(b"\"").and_then(|n| n.strip_suffix(b"\"")).unwrap_or(name);
            let number = std::str::from_utf8(name).is_ok_and(|n| n.parse::<f64>().is_ok());
            (!name.is_empty() && !number).then_some(name)
        })
        .collect();
    let names_a_column = |name: &[u8]| columns.iter().any(|(column, _)| column.as_bytes().eq_ignore_ascii_case(name));
    names.is_some_and(|names| names.iter().any(|name| names_a_column(name)))
}

/// Whether every field of `record` (a UTF-8 byte-order mark before it
/// aside) names one of `columns`, in any case, with quotes and spaces
/// around or not: a header line, stricter than [`reads_as_a_header`], for a
/// record among the data.
pub fn names_only_columns(record: &[u8], columns: &[(String, String)], format: &FormatOptions) -> bool {
    let record = record.strip_prefix(b"\xef\xbb\xbf").unwrap_or(record);
    let names_a_column = |name: &[u8]| columns.iter().any(|(column, _)| column.as_bytes().eq_ignore_ascii_case(name));
    fields(record, format).all(|field| {
        let name = field.unwrap_or_default().trim_ascii();
        let name = name.strip_prefix(b"\"").and_then(|n| n.strip_suffix(b"\"")).unwrap_or(name);
        names_a_column(name)
    })
}

/// `value` (of a column with `rule`) when that column holds dates
/// and the value's day does not exist read in the session's order of day
/// and month but does in the other order (`13/01/2024` month first): a
/// file written day first, loaded month first, or the reverse. Then the
/// rows loaded with it may hold day and month swapped (`05/01/2024`).
pub fn date_in_the_other_order(rule: &ColumnRule, value: &[u8]) -> Option<String> {
    let ValueRule::Date { order: Some(order) } = rule.kind else { return None };
    let other = match order {
        DateOrder::MonthFirst => DateOrder::DayFirst,
        DateOrder::DayFirst => DateOrder::MonthFirst,
    };
    (!real_date(value, Some(order)) && real_date(value, Some(other)))
        .then(|| String::from_utf8_lossy(value.trim_ascii()).into_owned())
}

/// `value` (of a column with `rule`) when that column holds numbers and
/// the value is one written with a decimal comma (`2,50`,
/// `-1.234,5`, `1 234,5`), as spreadsheets in much of Europe export them.
pub fn decimal_comma(rule: &ColumnRule, value: &[u8]) -> Option<String> {
    let ValueRule::Number { .. } = rule.kind else { return None };
    let written = value.trim_ascii();
    let plain = crate::format::convert::with_plain_spaces(written);
    let unsigned = plain.strip_prefix(b"-").or_else(|| plain.strip_prefix(b"+")).unwrap_or(&plain);
    let (whole, fraction) = unsigned.split_at(unsigned.iter().position(|&b| b == b',')?);
    let digits = |part: &[u8]| !part.is_empty() && part.iter().all(u8::is_ascii_digit);
    // Thousands grouped by dots or spaces, as `--decimal-comma` reads them.
    let grouped = !whole.is_empty() && crate::format::convert::in_thousands(whole);
    let either_way = comma_either_way(rule, value).is_some();
    (grouped && digits(&fraction[1..]) && !either_way).then(|| String::from_utf8_lossy(written).into_owned())
}

/// `value` (of a number column) with its mark between thousands, when it
/// is written with commas or apostrophes between them and a decimal point
/// (`1,234.50`, `1,234,567`, `12,34,567`, `1'234.5`), as spreadsheets in
/// the US, the UK, India and Switzerland export formatted numbers. Not
/// `1,234` alone: see [`comma_either_way`].
pub fn thousands_marked(rule: &ColumnRule, value: &[u8]) -> Option<(String, u8)> {
    let ValueRule::Number { .. } = rule.kind else { return None };
    if comma_either_way(rule, value).is_some() {
        return None;
    }
    let written = value.trim_ascii();
    let mark = [b',', b'\''].into_iter().find(|mark| written.contains(mark))?;
    let mut plain = Vec::new();
    let read = Conversion::thousands(mark).apply(written, &mut plain) == Ok(true);
    read.then(|| (String::from_utf8_lossy(written).into_owned(), mark))
}

/// `value` (of a number column) when its one comma stands before three
/// digits, after one to three (`1,234`, `-12,500`): between thousands as
/// `--thousands ','` reads it, or before a fraction as `--decimal-comma`
/// does. Only the file's other numbers can tell.
pub fn comma_either_way(rule: &ColumnRule, value: &[u8]) -> Option<String> {
    let ValueRule::Number { .. } = rule.kind else { return None };
    let written = value.trim_ascii();
    let unsigned = written.strip_prefix(b"-").or_else(|| written.strip_prefix(b"+")).unwrap_or(written);
    let (whole, fraction) = unsigned.split_at(unsigned.iter().position(|&b| b == b',')?);
    let digits = |part: &[u8]| part.iter().all(u8::is_ascii_digit);
    let either = (1..=3).contains(&whole.len()) && digits(whole) && fraction.len() == 4 && digits(&fraction[1..]);
    either.then(|| String::from_utf8_lossy(written).into_owned())
}

/// A rejected amount with a currency sign (see [`currency_amount`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedAmount {
    /// The value as written.
    pub value: String,
    /// Its sign, as `--currency` takes it.
    pub currency: Currency,
    /// The marks its number reads with: one, or two for a lone comma
    /// before three digits (`$1,234`), which only the user can tell.
    pub marks: Vec<NumberMarks>,
}

/// Currency symbols a rejected number's sign is looked for among, with
/// three capital letters (an ISO code: `USD 5`, `5 EUR`).
const CURRENCY_SYMBOLS: &str = "$€£¥₹₩₽₺₪₫฿₱₦₴₸₡₲₵₭₮₨¢";

/// `value` (of a number column) when it is an amount written with a
/// currency sign (`$1,234.50`, `-$5`, `($5.00)`, `1.234,50 €`, `R$ 10,00`,
/// `USD 5`), as spreadsheets save currency-formatted cells, with the
/// marks `--currency` would read its number with. Not for a sign other
/// than one `--currency` already gives (amounts in two currencies: the
/// rejects are right).
pub fn currency_amount(rule: &ColumnRule, value: &[u8], given: Option<Currency>) -> Option<SignedAmount> {
    let ValueRule::Number { .. } = rule.kind else { return None };
    let written = crate::format::convert::with_plain_spaces(value.trim_ascii()).into_owned();
    let text = std::str::from_utf8(written.trim_ascii()).ok()?;
    let currency = Currency::parse(currency_sign_in(text)?).ok()?;
    if given.is_some_and(|given| given != currency) {
        return None;
    }
    let signed = NumberWriting { currency: Some(currency), ..NumberWriting::PLAIN };
    let marks = signed.marks_that_read(text.as_bytes());
    // A number without marks reads with each; a lone `1,234` with two.
    let marks = if marks.first() == Some(&NumberMarks::Plain) { vec![NumberMarks::Plain] } else { marks };
    let value = String::from_utf8_lossy(value.trim_ascii()).into_owned();
    (!marks.is_empty()).then_some(SignedAmount { value, currency, marks })
}

/// `value` (of a number column) when it is a percentage (`12.5%`,
/// `-3 %`), as spreadsheets save percentage cells, with the flags that
/// read it: `--percent`, and the flags given or those its number needs.
pub fn percentage(rule: &ColumnRule, value: &[u8], format: &FormatOptions) -> Option<(String, String)> {
    let ValueRule::Number { .. } = rule.kind else { return None };
    let written = value.trim_ascii();
    if format.percent || !written.ends_with(b"%") {
        return None;
    }
    with_the_flags_that_read(written, format, |writing| NumberWriting { percent: true, ..writing })
}

/// `value` (of a number column) when it has its minus after the digits
/// (`1.234,50-`, `5.00-`), as SAP's exports and COBOL reports write
/// negative numbers, with the flags that read it: `--trailing-minus`, and
/// the flags given or those its number needs.
pub fn trailing_minus(rule: &ColumnRule, value: &[u8], format: &FormatOptions) -> Option<(String, String)> {
    let ValueRule::Number { .. } = rule.kind else { return None };
    let written = value.trim_ascii();
    // `12.5-%`: a percentage's minus stands before its `%`.
    let number = written.strip_suffix(b"%").unwrap_or(written);
    if format.trailing_minus || crate::format::convert::before_trailing_minus(number).is_none() {
        return None;
    }
    with_the_flags_that_read(written, format, |writing| NumberWriting { trailing_minus: true, ..writing })
}

/// `value` (of an integer column) when flags would read it as an integer:
/// written with a fraction of zeros (`3.0`, as pandas writes an integer
/// column that has a missing value), marks between thousands (`1,234`, as
/// spreadsheets format counts) or both (`1.234,00`), with the flags that
/// read it: those given, and the marks and `--zero-fractions` it needs,
/// the marks given tried first. In an integer column `1,234` is no decimal
/// comma's 1.234, which is no integer.
pub fn written_integer(rule: &ColumnRule, value: &[u8], format: &FormatOptions) -> Option<(String, String)> {
    let ValueRule::Integer { .. } = rule.kind else { return None };
    let written = value.trim_ascii();
    if !written.iter().any(|b| matches!(b, b'.' | b',' | b'\'' | b' ')) {
        return None;
    }
    let given = format.number_writing();
    let reads = |writing: NumberWriting| {
        let mut out = Vec::new();
        let converted = Conversion::Number(writing).apply(written, &mut out) == Ok(true);
        let digits = out.strip_prefix(b"-").or_else(|| out.strip_prefix(b"+")).unwrap_or(&out);
        converted && !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
    };
    let marks = [given.marks].into_iter().chain(NumberMarks::ALL);
    let writing = marks.map(|marks| NumberWriting { marks, ..given }).find_map(|writing| {
        let zeros = NumberWriting { zero_fractions: true, ..writing };
        [writing, zeros].into_iter().find(|&w| reads(w))
    })?;
    (writing != given).then(|| (String::from_utf8_lossy(written).into_owned(), writing.flags()))
}

/// `written` with the flags that read it: those `format` gives, with what
/// `adding` adds (`--percent`), and the marks given, or else the first
/// marks that read it; `None` when none do.
fn with_the_flags_that_read(
    written: &[u8],
    format: &FormatOptions,
    adding: impl Fn(NumberWriting) -> NumberWriting,
) -> Option<(String, String)> {
    let given = format.number_writing();
    let reading = adding(given).marks_that_read(written);
    // The marks given first; else the first that read it.
    let marks = if reading.contains(&given.marks) { given.marks } else { *reading.first()? };
    Some((String::from_utf8_lossy(written).into_owned(), adding(NumberWriting { marks, ..given }).flags()))
}

/// The currency sign before or after the number in `text` (inside a minus
/// or parentheses), when it is a currency symbol or an ISO code.
pub(super) fn currency_sign_in(text: &str) -> Option<&str> {
    let core = text.trim_start_matches(['-', '(', ' ']).trim_end_matches([')', ' ']);
    let in_number = |c: char| c.is_ascii_digit() || "-+.,'() ".contains(c);
    let before = &core[..core.find(in_number)?];
    let after = &core[core.rfind(in_number)? + 1..];
    // No-break spaces between the sign and the number, as French exports write them.
    let (before, after) = (before.trim(), after.trim());
    let sign = match (before.is_empty(), after.is_empty()) {
        (false, true) => before,
        (true, false) => after,
        _ => return None,
    };
    let iso_code = sign.len() == 3 && sign.bytes().all(|b| b.is_ascii_uppercase());
    (iso_code || sign.contains(|c| CURRENCY_SYMBOLS.contains(c))).then_some(sign)
}

/// A number read as a Unix time (see [`unix_time`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnixTime {
    /// The value as written.
    pub value: String,
    /// Its unit: `seconds`, `milliseconds`, `microseconds` or `nanoseconds`.
    pub unit: &'static str,
    /// How many of the unit make a second.
    pub per_second: u64,
    /// The whole seconds since 1970 it stands for.
    pub seconds: u64,
}

/// `value` (of a date or timestamp column) when it is a number that reads
/// as a Unix time between 1990 and 2100 (see
/// [`crate::format::convert::likely_unit`]).
pub fn unix_time(rule: &ColumnRule, value: &[u8]) -> Option<UnixTime> {
    let ValueRule::Date { .. } = rule.kind else { return None };
    let (unit, seconds) = crate::format::convert::likely_unit(value)?;
    Some(UnixTime {
        value: String::from_utf8_lossy(value.trim_ascii()).into_owned(),
        unit: unit.words(),
        per_second: unit.per_second(),
        seconds,
    })
}

/// `record`'s field for `column`, as far as the guess goes, with that
/// column's rule: split once for every check of the value. `None` for a
/// column COPY does not fill, a field the record lacks or the NULL string.
pub fn column_field<'a>(
    record: &'a [u8],
    rules: &'a [ColumnRule],
    format: &'a FormatOptions,
    column: &str,
) -> Option<(&'a ColumnRule, &'a [u8])> {
    let index = rules.iter().position(|rule| rule.name == column)?;
    Some((&rules[index], fields(record, format).nth(index)??))
}

/// How many fields `record` (terminator included) splits into, as far as
/// the guess goes.
pub fn field_count(record: &[u8], format: &FormatOptions) -> usize {
    fields(record, format).count()
}

/// Another common delimiter at which `record` splits into `columns`
/// fields, when the load's does not: the first, in the order of
/// [`COMMON_DELIMITERS`]. Not for jsonl, whose documents are not split.
pub fn delimiter_that_fits(record: &[u8], format: &FormatOptions, columns: usize) -> Option<u8> {
    if format.kind == FormatKind::Jsonl || field_count(record, format) == columns {
        return None;
    }
    COMMON_DELIMITERS.into_iter().find(|&delimiter| field_count(record, &format.at_delimiter(delimiter)) == columns)
}

fn fields<'a>(record: &'a [u8], format: &'a FormatOptions) -> Fields<'a> {
    let line = crate::format::without_line_end(record);
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
                null: format.null_string().as_bytes(),
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

fn plausible(field: &Field<'_>, rule: &ColumnRule, format: &FormatOptions) -> bool {
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
        ValueRule::Time => has_digit_or_is_a_word(value) && time_in_range(value.trim_ascii()) && time_shape(value),
        ValueRule::Date { order } => has_digit_or_is_a_word(value) && real_date(value, order),
        ValueRule::Number { integer_digits, range } => {
            plain_number(value, range) && integer_digits.map_or(true, |most| fits_integer_digits(value, most))
        }
        ValueRule::Network { cidr } => network_address(value, cidr),
        ValueRule::MacAddress => mac_address(value),
        ValueRule::Array => array_literal(value),
        ValueRule::Json => json_document(value, format),
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

/// PostgreSQL CSV, as `CopyReadAttributesCSV` reads it: a quote opens
/// quoting anywhere in a field, not only at its start (`a"b,c"d` is one
/// field), and inside quotes the escape makes a quote or escape after it a
/// byte of the value; a field with no quote equal to the NULL string
/// (default empty) is NULL. The value is the field's bytes, without the
/// quotes that enclose the whole field; the quotes and escapes inside are
/// left. A quote left open runs to the line's end. (Reading quotes only at
/// a field's start split `""",""""` with `--escape '\'` into 2 fields
/// where the server reads 1, found by the property test of `format::pick`.)
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
        let (mut i, mut saw_quote) = (start, false);
        let end = loop {
            // Outside quotes: the field ends at a delimiter; a quote opens quoting.
            let Some(o) = memchr::memchr2(self.delimiter, quote, &line[i..]) else { break line.len() };
            i += o;
            if line[i] == self.delimiter {
                break i;
            }
            saw_quote = true;
            i += 1;
            // Inside quotes, to the quote that closes them.
            loop {
                let Some(o) = memchr::memchr2(quote, escape, &line[i..]) else {
                    i = line.len();
                    break;
                };
                i += o;
                let escaped = line[i] == escape && line.get(i + 1).is_some_and(|&n| n == quote || n == escape);
                i += if escaped { 2 } else { 1 };
                if !escaped && line[i - 1] == quote {
                    break;
                }
            }
            if i >= line.len() {
                break line.len();
            }
        };
        self.done = end >= line.len();
        self.at = end + 1;
        let raw = &line[start..end];
        Some((saw_quote || raw != self.null).then(|| enclosed_value(raw, quote)))
    }
}

/// A CSV field's bytes without the quotes around them when the field is
/// one quoted value (starts with a quote and ends with one, not the same).
fn enclosed_value(raw: &[u8], quote: u8) -> &[u8] {
    match raw {
        [first, inner @ .., last] if *first == quote && *last == quote => inner,
        _ => raw,
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

    /// PostgreSQL CSV, byte by byte as `CopyReadAttributesCSV` reads it:
    /// quotes open anywhere in a field.
    fn reference_csv_fields<'a>(line: &'a [u8], format: &FormatOptions) -> Vec<Field<'a>> {
        let delimiter = format.delimiter.unwrap_or(b',');
        let quote = format.quote.unwrap_or(b'"');
        let escape = format.escape.unwrap_or(quote);
        let null = format.null.as_deref().unwrap_or("").as_bytes();
        let mut fields = Vec::new();
        let (mut start, mut i, mut quoted, mut saw_quote) = (0, 0, false, false);
        loop {
            if i >= line.len() || (!quoted && line[i] == delimiter) {
                let raw = &line[start..i.min(line.len())];
                fields.push((saw_quote || raw != null).then(|| enclosed_value(raw, quote)));
                if i >= line.len() {
                    return fields;
                }
                (start, saw_quote) = (i + 1, false);
            } else if quoted && line[i] == escape && line.get(i + 1).is_some_and(|&n| n == quote || n == escape) {
                i += 1;
            } else if line[i] == quote {
                quoted = !quoted;
                saw_quote = true;
            }
            i += 1;
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// The field iterators split as the byte-by-byte references do, in
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

        /// CSV fields end where the header reader, which follows the
        /// server's rules, ends them (quotes reopened mid-field, escapes).
        #[test]
        fn csv_fields_end_where_the_server_ends_them(
            line in proptest::collection::vec(proptest::sample::select(b"a,\"\\".to_vec()), 0..24),
            backslash_escape in proptest::bool::ANY,
        ) {
            let mut format = FormatOptions::new(FormatKind::Csv);
            if backslash_escape {
                format.escape = Some(b'\\');
            }
            if let Some(server) = crate::load::plan::header_fields(&line, &format) {
                proptest::prop_assert_eq!(fields(&line, &format).count(), server.len());
            }
        }
    }

    #[test]
    fn a_quote_in_the_middle_of_a_csv_field_opens_quoting_as_on_the_server() {
        let csv = FormatOptions::new(FormatKind::Csv);
        let got: Vec<Field> = fields(b"1,ab\"c,d\"e,\"x\"\"y\",\n", &csv).collect();
        let want: [Field; 4] = [Some(b"1"), Some(b"ab\"c,d\"e"), Some(b"x\"\"y"), None];
        assert_eq!(got, want);
        let backslash = FormatOptions { escape: Some(b'\\'), ..csv };
        assert_eq!(fields(br#"""",""""#, &backslash).count(), 1, "reopened quotes hold the comma");
        assert_eq!(fields(br#""a\",b",c"#, &backslash).count(), 2, "an escaped quote does not close");
    }

    fn table() -> TableInfo {
        TableInfo {
            oid: 16384,
            schema: "public".into(),
            name: "t".into(),
            columns: vec![("id".into(), "integer".into()), ("name".into(), "character varying(5)".into())],
            not_null: vec!["id".into()],
            defaulted: Vec::new(),
            generated: Vec::new(),
            generated_places: Vec::new(),
            enums: Vec::new(),
            text_like: Vec::new(),
            is_view: false,
            foreign: Vec::new(),
            insert_triggers: Vec::new(),
            before_row_triggers: Vec::new(),
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
    fn the_delimiter_a_record_fits_the_columns_at_is_found() {
        let csv = FormatOptions::new(FormatKind::Csv);
        assert_eq!(delimiter_that_fits(b"1;a;2,50\n", &csv, 3), Some(b';'), "a decimal comma is no delimiter");
        assert_eq!(delimiter_that_fits(b"1\t\"a;b\"\t2\r\n", &csv, 3), Some(b'\t'), "quotes still count");
        assert_eq!(delimiter_that_fits(b"1,a,2\n", &csv, 3), None, "the record fits already");
        assert_eq!(delimiter_that_fits(b"1;a\n", &csv, 3), None, "no delimiter fits");
        let tsv = FormatOptions::new(FormatKind::Tsv);
        assert_eq!(delimiter_that_fits(b"1|a|2\n", &tsv, 3), Some(b'|'));
        assert_eq!(delimiter_that_fits(b"1,\"a,b\",2\n", &tsv, 3), Some(b','), "read as CSV at commas");
        let jsonl = FormatOptions::new(FormatKind::Jsonl);
        assert_eq!(delimiter_that_fits(b"{\"a\": 1, \"b\": 2}\n", &jsonl, 2), None, "documents are not split");
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

    fn rule(sql_type: &str, order: Option<DateOrder>) -> ColumnRule {
        ColumnRule { name: "c".into(), not_null: false, kind: value_rule(sql_type, order) }
    }

    #[test]
    fn numbers_with_a_decimal_comma_are_found() {
        let csv = FormatOptions { delimiter: Some(b';'), ..FormatOptions::new(FormatKind::Csv) };
        let comma = |sql_type: &str, value: &str| {
            let rules = [rule(sql_type, None)];
            let record = format!("{value}\n");
            let (rule, value) = column_field(record.as_bytes(), &rules, &csv, "c")?;
            decimal_comma(rule, value)
        };
        for value in
            ["2,50", "-0,5", "+12,0", "1.234,56", "1 234 567,8", "1234,5", " 3,25 ", "1\u{a0}234,5", "1.234,567"]
        {
            assert_eq!(comma("numeric(10,2)", value).as_deref(), Some(value.trim()), "{value}");
        }
        assert!(comma("double precision", "2,5").is_some());
        for value in ["2.50", "2,", ",5", "1.23,4", "12.345.6,7", "1,234,567", "a,5", "2,5e3", "", "1,234", "-12,500"] {
            assert_eq!(comma("numeric", value), None, "{value}");
        }
        assert_eq!(comma("text", "2,50"), None, "not a number column");
    }

    #[test]
    fn numbers_with_marks_between_thousands_are_found_and_a_lone_comma_before_three_digits_is_either() {
        let rules = [rule("numeric", None)];
        let marked = |value: &str| thousands_marked(&rules[0], value.as_bytes());
        for (value, mark) in
            [("1,234.50", b','), ("1,234,567", b','), ("-12,34,567.5", b','), ("1'234.5", b'\''), (" 9,999.9 ", b',')]
        {
            assert_eq!(marked(value), Some((value.trim().to_string(), mark)), "{value}");
        }
        for value in ["1,234", "2,50", "1.234,5", "1234.5", "1,23.4", "12,3456.7", "1,234.5.6", "a,234.5", ""] {
            assert_eq!(marked(value), None, "{value}");
        }
        let either = |value: &str| comma_either_way(&rules[0], value.as_bytes());
        for value in ["1,234", "-12,500", "+100,000", " 999,000 "] {
            assert_eq!(either(value).as_deref(), Some(value.trim()), "{value}");
        }
        for value in ["1,23", "1,2345", "1234,567", "1,234.5", "1.234,567", ",234", "1,234,567"] {
            assert_eq!(either(value), None, "{value}");
        }
        assert_eq!(thousands_marked(&rule("text", None), b"1,234.5"), None, "not a number column");
        assert_eq!(comma_either_way(&rule("date", None), b"1,234"), None, "not a number column");
    }

    #[test]
    fn percentages_are_found_with_the_flags_that_read_them() {
        let rules = [rule("numeric", None)];
        let csv = FormatOptions::new(FormatKind::Csv);
        let found = |value: &str, format: &FormatOptions| percentage(&rules[0], value.as_bytes(), format);
        assert_eq!(found(" 12.5% ", &csv), Some(("12.5%".into(), "--percent".into())));
        assert_eq!(found("1,250.5 %", &csv), Some(("1,250.5 %".into(), "--thousands ',' --percent".into())));
        let comma = FormatOptions { decimal_comma: true, ..FormatOptions::new(FormatKind::Csv) };
        assert_eq!(found("1,5%", &comma), Some(("1,5%".into(), "--decimal-comma --percent".into())), "the flag given");
        for odd in ["12.5", "%", "x%", "12.5%x"] {
            assert_eq!(found(odd, &csv), None, "{odd}");
        }
        let given = FormatOptions { percent: true, ..FormatOptions::new(FormatKind::Csv) };
        assert_eq!(found("1,5%", &given), None, "--percent given: its own reason says why");
        assert_eq!(percentage(&rule("text", None), b"5%", &csv), None, "not a number column");
    }

    #[test]
    fn minuses_after_the_digits_are_found_with_the_flags_that_read_them() {
        let rules = [rule("numeric", None)];
        let csv = FormatOptions::new(FormatKind::Csv);
        let found = |value: &str, format: &FormatOptions| trailing_minus(&rules[0], value.as_bytes(), format);
        assert_eq!(found(" 5.00- ", &csv), Some(("5.00-".into(), "--trailing-minus".into())));
        assert_eq!(found("1.234,50-", &csv), Some(("1.234,50-".into(), "--decimal-comma --trailing-minus".into())));
        let percent = FormatOptions { percent: true, ..FormatOptions::new(FormatKind::Csv) };
        assert_eq!(found("12.5-%", &percent), Some(("12.5-%".into(), "--percent --trailing-minus".into())));
        for odd in ["5", "-5", "-", "$ -", "x-", "5-x", "1.2.3-"] {
            assert_eq!(found(odd, &csv), None, "{odd}");
        }
        let given = FormatOptions { trailing_minus: true, ..FormatOptions::new(FormatKind::Csv) };
        assert_eq!(found("5-", &given), None, "--trailing-minus given: its own reason says why");
        assert_eq!(trailing_minus(&rule("text", None), b"5-", &csv), None, "not a number column");
    }

    #[test]
    fn integers_written_with_a_fraction_of_zeros_or_marks_are_found_with_the_flags_that_read_them() {
        let rules = [rule("bigint", None)];
        let csv = FormatOptions::new(FormatKind::Csv);
        let found = |value: &str, format: &FormatOptions| written_integer(&rules[0], value.as_bytes(), format);
        let with = |value: &str, flags: &str| Some((value.to_string(), flags.to_string()));
        assert_eq!(found(" 3.0 ", &csv), with("3.0", "--zero-fractions"));
        assert_eq!(found("-12.000", &csv), with("-12.000", "--zero-fractions"));
        assert_eq!(found("1.234,00", &csv), with("1.234,00", "--decimal-comma --zero-fractions"));
        assert_eq!(found("1,234", &csv), with("1,234", "--thousands ','"), "no decimal comma: 1.234 is no integer");
        assert_eq!(found("12,34,567.00", &csv), with("12,34,567.00", "--thousands ',' --zero-fractions"));
        for odd in ["3", "2.5", "3.", ".0", "3.0e2", "x.0", "1.0.0", "1,5"] {
            assert_eq!(found(odd, &csv), None, "{odd}");
        }
        let given = FormatOptions { zero_fractions: true, ..FormatOptions::new(FormatKind::Csv) };
        assert_eq!(found("3.0", &given), None, "--zero-fractions given: its own reason says why");
        assert_eq!(found("1,234.0", &given), with("1,234.0", "--thousands ',' --zero-fractions"), "and the marks");
        let comma = FormatOptions { decimal_comma: true, ..FormatOptions::new(FormatKind::Csv) };
        assert_eq!(found("1.234", &comma), None, "read by the flags given: not rejected for its marks");
        assert_eq!(found("1.234,00", &comma), with("1.234,00", "--decimal-comma --zero-fractions"));
        assert_eq!(found("1 234", &comma), None, "spaces between thousands, as --decimal-comma reads them");
        assert_eq!(written_integer(&rule("numeric", None), b"3.0", &csv), None, "numeric reads it");
    }

    #[test]
    fn amounts_with_a_currency_sign_are_found_with_the_marks_their_numbers_need() {
        use NumberMarks::*;
        let rules = [rule("numeric", None)];
        let found = |value: &str, given: Option<&str>| {
            let given = given.map(|sign| Currency::parse(sign).unwrap());
            let amount = currency_amount(&rules[0], value.as_bytes(), given)?;
            Some((amount.value, amount.currency.as_str().to_string(), amount.marks))
        };
        let sign = |value: &str, sign: &str, marks: Vec<NumberMarks>| {
            assert_eq!(found(value, None), Some((value.trim().to_string(), sign.to_string(), marks)), "{value}")
        };
        sign("$12.00", "$", vec![Plain]);
        sign(" $1,234.50 ", "$", vec![Thousands(b',')]);
        sign("-$1,234,567", "$", vec![Thousands(b',')]);
        sign("($5.00)", "$", vec![Plain]);
        sign("$ (1,234.50)", "$", vec![Thousands(b',')]);
        sign("1.234,50 €", "€", vec![DecimalComma]);
        sign("1\u{a0}234,50\u{a0}€", "€", vec![DecimalComma]);
        sign("R$ 10,00", "R$", vec![DecimalComma]);
        sign("CHF 1'234.50", "CHF", vec![Thousands(b'\'')]);
        sign("USD 5", "USD", vec![Plain]);
        sign("£1,234", "£", vec![Thousands(b','), DecimalComma]);
        sign("$ -", "$", vec![Plain]);
        for odd in ["12", "1,234.50", "(5)", "kr 10", "abc 5", "12 kg", "$", "$x", "5 $ 5", "USD", "$1,2,3"] {
            assert_eq!(found(odd, None), None, "{odd}");
        }
        assert_eq!(found("€5", Some("$")), None, "another sign than --currency's");
        assert!(found("$1,234.5", Some("$")).is_some(), "--currency's own, without --thousands");
        assert_eq!(currency_amount(&rule("text", None), b"$5", None), None, "not a number column");
    }

    #[test]
    fn dates_that_exist_only_in_the_other_order_are_found() {
        let csv = FormatOptions::new(FormatKind::Csv);
        let other = |sql_type, order, record: &str| {
            let rules = [rule("integer", order), rule(sql_type, order)];
            let rules = [ColumnRule { name: "id".into(), ..rules[0].clone() }, rules[1].clone()];
            let (rule, value) = column_field(record.as_bytes(), &rules, &csv, "c")?;
            date_in_the_other_order(rule, value)
        };
        let (month_first, day_first) = (Some(DateOrder::MonthFirst), Some(DateOrder::DayFirst));
        assert_eq!(other("date", month_first, "1,13/01/2024\n").as_deref(), Some("13/01/2024"));
        assert_eq!(other("date", day_first, "1,01/13/2024\n").as_deref(), Some("01/13/2024"));
        let stamp = "timestamp without time zone";
        assert_eq!(other(stamp, month_first, "1,31.12.2024 10:00\n").as_deref(), Some("31.12.2024 10:00"));
        assert_eq!(other("date", month_first, "1,02/30/2024\n"), None, "in neither order");
        assert_eq!(other("date", month_first, "1,01/13/2024\n"), None, "not in the other");
        assert_eq!(other("date", month_first, "1,05/01/2024\n"), None, "in both");
        assert_eq!(other("date", None, "1,13/01/2024\n"), None, "year first: the server's reading");
        assert_eq!(other("text", month_first, "1,13/01/2024\n"), None, "no date column");
    }

    #[test]
    fn numbers_that_read_as_unix_times_are_told_with_their_unit() {
        let date = rule("timestamp with time zone", None);
        let unit = |v: &str| unix_time(&date, v.as_bytes()).map(|t| (t.unit, t.seconds));
        assert_eq!(unit("1704067200"), Some(("seconds", 1_704_067_200)));
        assert_eq!(unit(" 1704067200.25 "), Some(("seconds", 1_704_067_200)));
        assert_eq!(unit("1704067200000"), Some(("milliseconds", 1_704_067_200)));
        assert_eq!(unit("1704067200000000"), Some(("microseconds", 1_704_067_200)));
        assert_eq!(unit("1704067200000000000"), Some(("nanoseconds", 1_704_067_200)));
        for no in ["45321", "2024", "20240101", "99999999999", "-1704067200", "1704067200.", "17040672OO", "5000000000"]
        {
            assert_eq!(unit(no), None, "{no}");
        }
        assert_eq!(unix_time(&rule("bigint", None), b"1704067200"), None, "not a date column");
    }

    /// Whether `value` is plausible in a column of `sql_type`, dates read
    /// month first, from a CSV file.
    fn plausible_in(sql_type: &str, value: &str) -> bool {
        plausible(
            &Some(value.as_bytes()),
            &rule(sql_type, Some(DateOrder::MonthFirst)),
            &FormatOptions::new(FormatKind::Csv),
        )
    }

    #[test]
    fn records_whose_only_fault_is_a_null_where_none_goes_are_told_apart() {
        let csv = FormatOptions::new(FormatKind::Csv);
        let mut rules = vec![rule("integer", None), rule("integer", None)];
        rules[1].not_null = true;
        let only = |record: &str| only_nulls_where_none_go(record.as_bytes(), &rules, &csv);
        assert!(only("1,\n"));
        assert!(!only("1,2\n"), "nothing wrong");
        assert!(!only("x,\n"), "a bad value besides");
        assert!(!only("1,,3\n") && !only("\n"), "a field too many, too few");
        assert!(!only(",2\n"), "a NULL where one goes");
    }

    #[test]
    fn numbers_are_suspects_unless_written_as_their_inputs_read_them() {
        for ty in ["numeric", "numeric(12,2)", "real", "double precision"] {
            for good in ["1", " -1.5e3 ", "+.5", "1.", "1.E+5", "007", " Infinity ", "-inf", "NaN", " nan "] {
                assert!(plausible_in(ty, good), "{ty} {good:?}");
            }
            for bad in ["", " ", "N/A", "-", ".", "1,234.50", "$5", "12 %", "12,5", "1e", ".e5", "1 2", "1.2.3"] {
                assert!(!plausible_in(ty, bad), "{ty} {bad:?}");
            }
            // Stricter than the server, which reads floats with strtod: a
            // wrong guess, which the value check clears.
            assert!(!plausible_in(ty, "0x1F"), "{ty}");
        }
        assert!(!plausible_in("numeric", "-NaN"), "numeric's NaN takes no sign");
        assert!(plausible_in("double precision", "-NaN"));
        for good in ["99999999.99", "-00012345678", "12345678.999", "1e7", "0.000123e11", "1234e-5", "0e99"] {
            assert!(plausible_in("numeric(10,2)", good), "{good:?}");
        }
        for bad in ["123456789", "-123456789.5", " 1000000000 ", "1e9", "0.00123e11", "1234e5"] {
            assert!(!plausible_in("numeric(10,2)", bad), "{bad:?}");
        }
        assert!(!plausible_in("numeric(3)", "1234"));
        assert!(plausible_in("numeric", "123456789012345678901234567890"), "no modifier");
        for (ty, good, bad) in [
            ("real", ["3.4e38", "1e-40"], ["3.5e38", "1e-50"]),
            ("double precision", ["1e308", "1e-310"], ["1e309", "1e-400"]),
        ] {
            for v in good {
                assert!(plausible_in(ty, v), "{ty} {v:?}");
            }
            for v in bad {
                assert!(!plausible_in(ty, v), "{ty} {v:?} is out of range");
            }
        }
        assert!(plausible_in("real", "0e-99"), "zero is no underflow");
    }

    #[test]
    fn dates_are_suspects_when_their_day_does_not_exist_as_the_server_reads_it() {
        for ty in ["date", "timestamp without time zone", "timestamp(0) with time zone"] {
            for good in [
                "2024-02-29",
                " 2024-12-31 ",
                "2024-01-01 10:00",
                "2024-01-01T10:00Z",
                "0001-01-01 BC",
                "12/31/2024",
                "2/29/24",
                "1.2.2024",
                "2024/1/5",
                "Jan 8 99 BC",
                "20240101",
                " 20240229 ",
                "20240115T120000",
                "991231",
                "2020115",
                "1999.008",
                "2024-01-15+02",
                "01.15.2024 10:00",
                "today",
                "2024-01-01 24:00:00",
                "2024-01-01 23:59:60",
                "2024-01-01 10:00:00+02",
            ] {
                assert!(plausible_in(ty, good), "{ty} {good:?}");
            }
            for bad in [
                "",
                "N/A",
                "0000-00-00",
                "0000-00-00 00:00:00",
                "2023-02-29",
                "2024-13-01",
                "2024-04-31T00:00",
                "31/12/2024",
                "13-12-2024",
                "0/5/2024",
                "2/29/2023",
                "2024/13/1",
                "99/01/08",
                "2024-01-01 25:00",
                "2024-01-01 10:60",
                "2024-01-01 24:00:01",
                "97",
                " 2024 ",
                "24015",
                "2024015",
                "20240230",
                "000000",
                "1700000000",
                "1700000000115",
                "1,234",
                "12 %",
                "$5",
                "5.",
                "(5)",
                "1/15",
                "10.0.0.1",
                "24:00:01",
            ] {
                assert!(!plausible_in(ty, bad), "{ty} {bad:?}");
            }
        }
        let date =
            |order, v: &str| plausible(&Some(v.as_bytes()), &rule("date", order), &FormatOptions::new(FormatKind::Csv));
        assert!(date(Some(DateOrder::DayFirst), "31/12/2024"));
        assert!(!date(Some(DateOrder::DayFirst), "12/31/2024"));
        assert!(date(None, "24/12/31"), "year first");
        assert!(!date(None, "12/31/2024"));
    }

    #[test]
    fn times_are_suspects_when_out_of_range() {
        for ty in ["time without time zone", "time(3) with time zone"] {
            for good in
                ["04:05", "4:05:06.789", "24:00", "23:59:60", "10:00+02", "1:45 PM", "allballs", "040506", "1000.5"]
            {
                assert!(plausible_in(ty, good), "{ty} {good:?}");
            }
            for bad in ["", "N/A", "25:00", "10:61", "24:00:00.5", "12:30:61", "10", "10.5", "1,234", "5.", "10000"] {
                assert!(!plausible_in(ty, bad), "{ty} {bad:?}");
            }
        }
        assert!(plausible_in("interval day to second", "1 day"));
        assert!(!plausible_in("interval day to second", "N/A"));
    }

    #[test]
    fn addresses_arrays_and_json_without_their_shape_are_suspects() {
        for good in ["10.1.2.3", "10.0.0.0/8", "::1", "2001:DB8::/32", "10/8", "010.0.0.1", "1.2.3.4/024"] {
            assert!(plausible_in("inet", good) && plausible_in("cidr", good), "{good:?}");
        }
        for bad in ["", "N/A", "localhost", " 10.1.2.3", "10.1.2.3 ", "256.1.1.1", "10.0.0.0/33", "1.2.3.4.5", "1.2..4"]
        {
            assert!(!plausible_in("inet", bad) && !plausible_in("cidr", bad), "{bad:?}");
        }
        for short in ["192.168", "10"] {
            assert!(plausible_in("cidr", short) && !plausible_in("inet", short), "{short:?}");
        }
        for good in ["08:00:2b:01:02:03", "0800.2b01.0203", " 08-00-2b-01-02-03", "08002b0102030405"] {
            assert!(plausible_in("macaddr", good), "{good:?}");
        }
        for bad in ["", "N/A", "08:00:2b", "08:00:2b:01:02:0g"] {
            assert!(!plausible_in("macaddr", bad), "{bad:?}");
        }
        for good in ["{}", " {1,2} ", "[0:1]={1,2}", "{{a},{b}}"] {
            assert!(plausible_in("integer[]", good), "{good:?}");
        }
        for bad in ["", "N/A", "1,2", "{1,2"] {
            assert!(!plausible_in("text[]", bad), "{bad:?}");
        }
        // CSV: the splitter leaves doubled quotes; text: backslash escapes.
        for good in [r#"{""a"": [1, ""x""]}"#, " 12 ", "null", r#""""""#] {
            assert!(plausible_in("jsonb", good) && plausible_in("json", good), "{good:?}");
        }
        for bad in ["", "N/A", r#"{""a"": 1,}"#, "{'a': 1}"] {
            assert!(!plausible_in("jsonb", bad), "{bad:?}");
        }
        let text = FormatOptions::new(FormatKind::Tsv);
        let json = |v: &str| plausible(&Some(v.as_bytes()), &rule("json", None), &text);
        assert!(json(r#"{"a":"x\\ty"}"#), "an escaped backslash");
        assert!(json("{\"a\":\\t1}"), "a tab the text format escapes");
        assert!(!json(r#"{"a":"x\ty"}"#), "a raw tab in a JSON string");
    }

    #[test]
    fn booleans_and_uuids_without_their_shape_are_suspects() {
        for good in ["t", "TRUE", " yes ", "n", "of", "Off", "on", "1", "0", "fal"] {
            assert!(plausible_in("boolean", good), "{good:?}");
        }
        for bad in ["", "o", "2", "truee", "yess", "nope", "N/A", "-1"] {
            assert!(!plausible_in("boolean", bad), "{bad:?}");
        }
        assert!(plausible_in("daterange", "empty"), "ranges are not checked");
        assert!(plausible_in("text", ""));
        for good in [
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "{A0EEBC999C0B4EF8BB6D6BB9BD380A11}",
            "a0ee-bc99-9c0b4ef8bb6d6bb9bd380a11",
        ] {
            assert!(plausible_in("uuid", good), "{good:?}");
        }
        for bad in [
            "",
            "N/A",
            " a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
            "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        ] {
            assert!(!plausible_in("uuid", bad), "{bad:?}");
        }
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
