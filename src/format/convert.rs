//! Values written in a way the server does not read, rewritten on the
//! client when the user says how they are written: `--decimal-comma`
//! (numbers with a decimal comma, dots or spaces between thousands:
//! `1.234,5`, as spreadsheets in much of Europe export them),
//! `--thousands CHAR` (numbers with a decimal point and commas or other
//! marks between thousands: `1,234.5`, as spreadsheets in the US, the UK,
//! India or Switzerland export formatted numbers), `--currency SIGN`
//! (amounts with a currency sign and accounting's parentheses around
//! negative ones: `$1,234.50`, `($5.00)`, `1.234,50 €`; see
//! [`super::currency`]), `--percent` (`12.5%` as 0.125, the value a
//! spreadsheet's percentage cell holds), `--trailing-minus` (`1.234,50-`
//! and `5.00-`, negative numbers as SAP's exports and COBOL reports write
//! them) and `--unix-times UNIT` (dates and
//! times as a count of seconds, milliseconds, microseconds or nanoseconds
//! since 1970: what `time.time()`, JavaScript's `Date.now()` and pandas'
//! `to_json` write).
//!
//! COPY has no option for any of them, so the peers' users convert the file
//! first (`sed 's/,/./g'`, which cannot tell a decimal comma from a
//! delimiter, or a spreadsheet), or load into a text or number column and
//! convert it in SQL afterwards, which writes every row twice. Here each
//! field of a number column (or of a date or timestamp column) is rewritten
//! where the records are rewritten for left-out fields ([`super::pick`]),
//! and each value where documents become text lines
//! ([`super::documents`]), so the server, the binary encoder and isolation
//! see plain values and the rejects file the record as it was written.
//! A value that fits neither the declared way nor the plain one (`2.5`
//! with `--decimal-comma`: is its dot a decimal point or between
//! thousands?) is rejected on the client, with its column and why, not
//! guessed at.
//!
//! Why our own: the digit rules are a few dozen lines, and the calendar
//! arithmetic (days since 1970 to a date, Hinnant's `civil_from_days`) is
//! ten; humantime, which sluice uses for RFC 3339, panics before 1970,
//! where pandas writes a 1965 birthday as `-152582400000`.

use super::currency::Currency;

/// How a column's values are rewritten.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conversion {
    /// A number column's value written as these say, as a plain number.
    Number(NumberWriting),
    /// A number in a date or timestamp column, as the time it counts since
    /// 1970-01-01 00:00 UTC.
    UnixTime { unit: TimeUnit, into: TimeColumn },
}

/// How a number column's values are written, when not plainly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumberWriting {
    /// The decimal mark and the mark between thousands.
    pub marks: NumberMarks,
    /// `--currency`: the sign written with amounts.
    pub currency: Option<Currency>,
    /// `--percent`: a number with `%` after it is a hundredth of it.
    pub percent: bool,
    /// `--trailing-minus`: a number with `-` right after its last digit
    /// is negative.
    pub trailing_minus: bool,
    /// `--zero-fractions`, for an integer column: a number whose fraction
    /// is all zeros (`3.0`) is the integer it is written as.
    pub zero_fractions: bool,
}

impl NumberWriting {
    /// Numbers as the server reads them.
    pub const PLAIN: NumberWriting = NumberWriting {
        marks: NumberMarks::Plain,
        currency: None,
        percent: false,
        trailing_minus: false,
        zero_fractions: false,
    };

    /// Numbers written with these marks and nothing else.
    pub const fn with_marks(marks: NumberMarks) -> NumberWriting {
        NumberWriting { marks, ..NumberWriting::PLAIN }
    }

    /// The marks with which this writing's sign and `%` read `value`, in
    /// [`NumberMarks::ALL`]'s order: for the hints and refusals that name
    /// the flag a value needs.
    pub fn marks_that_read(self, value: &[u8]) -> Vec<NumberMarks> {
        let reads = |marks: &NumberMarks| {
            let writing = NumberWriting { marks: *marks, ..self };
            Conversion::Number(writing).apply(value, &mut Vec::new()) == Ok(true)
        };
        NumberMarks::ALL.into_iter().filter(reads).collect()
    }

    /// The flags that read numbers written so: `--currency '$' --thousands ','`.
    pub fn flags(&self) -> String {
        let currency = self.currency.map(|currency| format!("--currency {}", currency.flag_value()));
        let percent = self.percent.then(|| "--percent".to_string());
        let minus = self.trailing_minus.then(|| "--trailing-minus".to_string());
        let zeros = self.zero_fractions.then(|| "--zero-fractions".to_string());
        let flags = currency.into_iter().chain(self.marks.flag()).chain(percent).chain(minus).chain(zeros);
        flags.collect::<Vec<_>>().join(" ")
    }
}

/// A number's decimal mark and the mark between its thousands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumberMarks {
    /// A decimal point and no mark between thousands, as the server reads
    /// numbers.
    Plain,
    /// `--decimal-comma`: a decimal comma, dots or spaces between
    /// thousands.
    DecimalComma,
    /// `--thousands CHAR`: a decimal point and this mark between thousands.
    Thousands(u8),
}

impl NumberMarks {
    /// Every way of marks sluice reads, simplest first: for the hints and
    /// the sketch, which try each on values the load would not read.
    pub const ALL: [NumberMarks; 5] = [
        NumberMarks::Plain,
        NumberMarks::Thousands(b','),
        NumberMarks::DecimalComma,
        NumberMarks::Thousands(b'\''),
        NumberMarks::Thousands(b' '),
    ];

    /// The flag that reads numbers written with these marks (none for
    /// plain ones).
    pub fn flag(self) -> Option<String> {
        match self {
            NumberMarks::Plain => None,
            NumberMarks::DecimalComma => Some("--decimal-comma".into()),
            NumberMarks::Thousands(mark) => Some(thousands_flag(mark)),
        }
    }

    /// Rewrites `value` as [`Conversion::apply`] does, for these marks.
    fn apply(self, value: &[u8], out: &mut Vec<u8>) -> Result<bool, String> {
        match self {
            NumberMarks::Plain => Ok(false),
            NumberMarks::DecimalComma => decimal_comma(value, out),
            NumberMarks::Thousands(mark) => thousands(value, mark, out),
        }
    }
}

impl Conversion {
    /// Numbers written with a decimal comma (`--decimal-comma`).
    pub const DECIMAL_COMMA: Conversion = Conversion::Number(NumberWriting::with_marks(NumberMarks::DecimalComma));

    /// Numbers written with `mark` between thousands (`--thousands`).
    pub fn thousands(mark: u8) -> Conversion {
        Conversion::Number(NumberWriting::with_marks(NumberMarks::Thousands(mark)))
    }
}

/// What a Unix time counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TimeUnit {
    Seconds,
    Milliseconds,
    Microseconds,
    Nanoseconds,
}

impl TimeUnit {
    /// The unit from its name as `--unix-times` takes it (`s`, `ms`, `us`,
    /// `ns`, or the whole word).
    pub fn parse(name: &str) -> Result<TimeUnit, String> {
        Ok(match name.to_ascii_lowercase().as_str() {
            "s" | "sec" | "second" | "seconds" => TimeUnit::Seconds,
            "ms" | "millisecond" | "milliseconds" => TimeUnit::Milliseconds,
            "us" | "µs" | "microsecond" | "microseconds" => TimeUnit::Microseconds,
            "ns" | "nanosecond" | "nanoseconds" => TimeUnit::Nanoseconds,
            _ => return Err(format!("\"{name}\" is no unit of time; use s, ms, us or ns")),
        })
    }

    /// Its name as `--unix-times` takes it.
    pub fn flag(self) -> &'static str {
        match self {
            TimeUnit::Seconds => "s",
            TimeUnit::Milliseconds => "ms",
            TimeUnit::Microseconds => "us",
            TimeUnit::Nanoseconds => "ns",
        }
    }

    /// Its name in words, for messages.
    pub fn words(self) -> &'static str {
        match self {
            TimeUnit::Seconds => "seconds",
            TimeUnit::Milliseconds => "milliseconds",
            TimeUnit::Microseconds => "microseconds",
            TimeUnit::Nanoseconds => "nanoseconds",
        }
    }

    /// How many of it make a second.
    pub fn per_second(self) -> u64 {
        10u64.pow(self.digits_per_second())
    }

    /// How many digits of a count of it make a second.
    fn digits_per_second(self) -> u32 {
        match self {
            TimeUnit::Seconds => 0,
            TimeUnit::Milliseconds => 3,
            TimeUnit::Microseconds => 6,
            TimeUnit::Nanoseconds => 9,
        }
    }
}

/// The unit a number is likely a Unix time in, told by its count of whole
/// digits, with the whole seconds since 1970 it then stands for: 9-10
/// seconds (`time.time()`), 12-13 milliseconds (what pandas' `to_json`
/// writes for times unless told otherwise, and JavaScript's `Date.now()`),
/// 15-16 microseconds, 18-19 nanoseconds; `None` for a value that is no
/// such number or whose time is not between 1990 and 2100.
pub fn likely_unit(value: &[u8]) -> Option<(TimeUnit, u64)> {
    let value = value.trim_ascii();
    let whole = value.split(|&b| b == b'.').next()?;
    let fraction = &value[whole.len()..];
    let digits = |part: &[u8]| part.iter().all(u8::is_ascii_digit);
    if !digits(whole) || !(fraction.is_empty() || fraction.len() > 1 && digits(&fraction[1..])) {
        return None;
    }
    let unit = match whole.len() {
        9 | 10 => TimeUnit::Seconds,
        12 | 13 => TimeUnit::Milliseconds,
        15 | 16 => TimeUnit::Microseconds,
        18 | 19 => TimeUnit::Nanoseconds,
        _ => return None,
    };
    let seconds = std::str::from_utf8(whole).ok()?.parse::<u64>().ok()? / unit.per_second();
    // 1990-01-01 to 2100-01-01.
    (631_152_000..4_102_444_800).contains(&seconds).then_some((unit, seconds))
}

/// Why `unit` is likely wrong for `values` of column `column` (the first
/// records' values, as written): every one of them that is a likely Unix
/// time (see [`likely_unit`]) is one in the same other unit. Loaded in
/// `unit`, milliseconds taken for seconds are in January 1970, and a
/// day's worth of the load would go in before anyone looked.
pub fn wrong_unit<'v>(column: &str, unit: TimeUnit, values: impl IntoIterator<Item = &'v [u8]>) -> Option<String> {
    let mut likely = values.into_iter().filter_map(|v| likely_unit(v).map(|(u, _)| (u, v)));
    let (other, first) = likely.next()?;
    if other == unit || likely.any(|(u, _)| u != other) {
        return None;
    }
    let as_time = |unit| {
        let mut time = Vec::new();
        match unix_time(first, unit, TimeColumn::Timestamp, &mut time) {
            Ok(true) => format!("{} UTC", String::from_utf8_lossy(&time)),
            _ => "past the year 9999".into(),
        }
    };
    Some(format!(
        "--unix-times {}: the first records' numbers in column \"{column}\" read as Unix times in {}, not {} ({} is \
         {} in {} but {} in {}); pass --unix-times {}",
        unit.flag(),
        other.words(),
        unit.words(),
        String::from_utf8_lossy(first.trim_ascii()),
        as_time(other),
        other.words(),
        as_time(unit),
        unit.words(),
        other.flag(),
    ))
}

/// How `--unix-times` was given: a unit, or `auto`, where each time
/// column's unit is the one its first records' numbers read in by their
/// digit counts (see [`unit_told_by`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnixTimes {
    Unit(TimeUnit),
    Auto,
}

impl UnixTimes {
    /// `--unix-times`' value: a unit as [`TimeUnit::parse`] takes it, or
    /// `auto`.
    pub fn parse(name: &str) -> Result<UnixTimes, String> {
        match name.eq_ignore_ascii_case("auto") {
            true => Ok(UnixTimes::Auto),
            false => TimeUnit::parse(name).map(UnixTimes::Unit).map_err(|_| {
                format!("\"{name}\" is no unit of time; use s, ms, us, ns, or auto to tell it from the numbers")
            }),
        }
    }

    /// The unit conversions are built with. For `auto` it is a first
    /// guess, which the load replaces with each column's own before it
    /// reads any record but the first ones (`load::settle_time_units`).
    pub fn unit_to_begin_with(self) -> TimeUnit {
        match self {
            UnixTimes::Unit(unit) => unit,
            UnixTimes::Auto => TimeUnit::Milliseconds,
        }
    }
}

/// The unit column `column`'s `values` (its first records' values, as
/// written) are Unix times in, for `--unix-times auto`: the one every
/// likely Unix time among them (see [`likely_unit`]) is in; `Ok(None)`
/// when none is one; `Err` with why when two are in different units
/// (`1706702400` and `1706702400123`: guessing would put one of them in
/// 1970 or past 9999).
pub fn unit_told_by<'v>(column: &str, values: impl IntoIterator<Item = &'v [u8]>) -> Result<Option<TimeUnit>, String> {
    let mut likely = values.into_iter().filter_map(|v| likely_unit(v).map(|(u, _)| (u, v)));
    let Some((unit, first)) = likely.next() else { return Ok(None) };
    match likely.find(|(other, _)| *other != unit) {
        None => Ok(Some(unit)),
        Some((other, value)) => Err(format!(
            "--unix-times auto: the first records' numbers in column \"{column}\" read as Unix times in two units \
             ({} in {}, {} in {}); say which with --unix-times {} or {}",
            String::from_utf8_lossy(first.trim_ascii()),
            unit.words(),
            String::from_utf8_lossy(value.trim_ascii()),
            other.words(),
            unit.flag(),
            other.flag(),
        )),
    }
}

/// Whether `value` is a number `--unix-times` converts (digits, with a
/// sign or a fraction or neither), of any size.
pub fn is_count(value: &[u8]) -> bool {
    count_parts(value.trim_ascii()).is_some()
}

/// A number's sign (whether negative), whole digits and fraction's
/// digits; `None` for anything else (a date written as a date).
fn count_parts(value: &[u8]) -> Option<(bool, &[u8], &[u8])> {
    let (negative, rest) = match value.first() {
        Some(b'-') => (true, &value[1..]),
        Some(b'+') => (false, &value[1..]),
        _ => (false, value),
    };
    let (whole, fraction) = match rest.iter().position(|&b| b == b'.') {
        Some(point) => (&rest[..point], &rest[point + 1..]),
        None => (rest, &rest[rest.len()..]),
    };
    let digits = |part: &[u8]| part.iter().all(u8::is_ascii_digit);
    let read =
        !whole.is_empty() && digits(whole) && digits(fraction) && !(fraction.is_empty() && whole.len() < rest.len());
    read.then_some((negative, whole, fraction))
}

/// The kind of column a Unix time goes into, which decides how it is
/// written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeColumn {
    /// The day in UTC.
    Date,
    /// The time of day in UTC, without an offset.
    Timestamp,
    /// With the offset `+00`, so the session's time zone does not matter.
    TimestampTz,
}

impl Conversion {
    /// The conversion the user's flags give a column of (base) type
    /// `sql_type`, as `format_type` writes it; `None` for other types.
    /// `numbers` is how number columns' values are written
    /// ([`Conversion::Number`]), if not plainly.
    pub fn for_column(sql_type: &str, numbers: Option<Conversion>, unix_times: Option<TimeUnit>) -> Option<Conversion> {
        let base = sql_type.split('(').next().unwrap_or(sql_type);
        let integer = matches!(base, "smallint" | "integer" | "bigint");
        let number = integer || matches!(base, "numeric" | "real" | "double precision");
        if let (true, Some(Conversion::Number(writing))) = (number, numbers) {
            // Only an integer's input refuses a fraction of zeros.
            let writing = NumberWriting { zero_fractions: writing.zero_fractions && integer, ..writing };
            return (writing != NumberWriting::PLAIN).then_some(Conversion::Number(writing));
        }
        let into = match base {
            "date" => TimeColumn::Date,
            // `timestamp(3) with time zone` is `timestamp` before its `(`.
            "timestamp" | "timestamp with time zone" if sql_type.ends_with(" with time zone") => {
                TimeColumn::TimestampTz
            }
            "timestamp" | "timestamp without time zone" => TimeColumn::Timestamp,
            _ => return None,
        };
        Some(Conversion::UnixTime { unit: unix_times?, into })
    }

    /// This conversion with Unix times in `unit` (from
    /// `--unix-times auto`'s first guess to the column's own).
    pub fn in_unit(self, unit: TimeUnit) -> Conversion {
        match self {
            Conversion::UnixTime { into, .. } => Conversion::UnixTime { unit, into },
            Conversion::Number(_) => self,
        }
    }

    /// Whether it applies to a JSON number, whose point is a decimal point
    /// whatever the file's numbers as text are written with.
    pub fn converts_numbers(self) -> bool {
        matches!(self, Conversion::UnixTime { .. })
    }

    /// Rewrites `value` (a field's text, unquoted and unescaped) into
    /// `out` as the server reads it; `Ok(false)`, with nothing written,
    /// for a value that needs no rewriting (one without a comma or dot, a
    /// date written as a date); `Err` with why for one that fits neither.
    pub fn apply(self, value: &[u8], out: &mut Vec<u8>) -> Result<bool, String> {
        match self {
            Conversion::Number(writing) => number(value, writing, out),
            Conversion::UnixTime { unit, into } => unix_time(value, unit, into, out),
        }
    }
}

/// `1.234,5` as `1234.5`, `-2,50` as `-2.50`, `1 000` as `1000`, `1,5e3`
/// as `1.5e3`. Values with neither a comma, a dot nor an inner space (`12`,
/// `NaN`, `\N`) stay as they are.
fn decimal_comma(value: &[u8], out: &mut Vec<u8>) -> Result<bool, String> {
    let value = with_plain_spaces(value);
    let value = value.trim_ascii();
    if !value.iter().any(|&b| matches!(b, b',' | b'.' | b' ')) {
        return Ok(false);
    }
    let number = Written::split(value, b',');
    if !in_thousands(number.whole) || !number.rest_reads() {
        return Err(format!(
            "\"{}\" is no number as --decimal-comma reads them: a comma before the fraction, and dots or spaces \
             only between thousands (1.234,5)",
            String::from_utf8_lossy(value)
        ));
    }
    number.write_plain(out);
    Ok(true)
}

/// With `mark` `,`: `1,234.5` as `1234.5`, `-12,34,567` (Indian lakhs) as
/// `-1234567`. Values without the mark (`2.5`, `NaN`, `\N`) stay as they
/// are; one with the mark elsewhere (`1,5`: a decimal comma?) is refused.
fn thousands(value: &[u8], mark: u8, out: &mut Vec<u8>) -> Result<bool, String> {
    let value = if mark == b' ' { with_plain_spaces(value) } else { std::borrow::Cow::Borrowed(value) };
    let value = value.trim_ascii();
    if !value.contains(&mark) {
        return Ok(false);
    }
    let number = Written::split(value, b'.');
    if !(in_groups_of_three(number.whole, mark) || in_lakhs(number.whole, mark)) || !number.rest_reads() {
        return Err(format!(
            "\"{}\" is no number as --thousands reads them: a decimal point before the fraction, and {} only \
             between thousands (1{}234.5)",
            String::from_utf8_lossy(value),
            mark_words(mark),
            mark as char,
        ));
    }
    number.write_plain(out);
    Ok(true)
}

/// A number column's `value` written as `writing` says, as a plain
/// number; with `--zero-fractions`, without a fraction of zeros (`3.0` as
/// `3`, `1.234,00` with `--decimal-comma` as `1234`). Another fraction
/// goes to the server as it is, whose refusal says the integer's type.
fn number(value: &[u8], writing: NumberWriting, out: &mut Vec<u8>) -> Result<bool, String> {
    if !writing.zero_fractions {
        return signed_number(value, writing, out);
    }
    let start = out.len();
    let converted = signed_number(value, writing, out)?;
    let written = if converted { &out[start..] } else { value.trim_ascii() };
    let Some(point) = zero_fraction_at(written) else { return Ok(converted) };
    match converted {
        true => out.truncate(start + point),
        false => out.extend_from_slice(&value.trim_ascii()[..point]),
    }
    Ok(true)
}

/// Where the fraction of `number` starts, when it is a plain number whose
/// fraction is all zeros: `[+-]digits.0...`, as pandas writes an integer
/// column that has a missing value (as floats: `3.0`).
pub fn zero_fraction_at(number: &[u8]) -> Option<usize> {
    let digits_at = usize::from(matches!(number.first(), Some(b'-' | b'+')));
    let point = digits_at + number[digits_at..].iter().position(|b| !b.is_ascii_digit())?;
    let zeros = number[point..].strip_prefix(b".")?;
    let whole = point > digits_at && !zeros.is_empty() && zeros.iter().all(|&b| b == b'0');
    whole.then_some(point)
}

/// [`number`] before `--zero-fractions`: with `--percent`, `12.5%` as
/// `0.125`, exactly.
fn signed_number(value: &[u8], writing: NumberWriting, out: &mut Vec<u8>) -> Result<bool, String> {
    let NumberWriting { currency, percent, .. } = writing;
    let read = |value: &[u8], out: &mut Vec<u8>| match currency {
        Some(currency) => amount(value, writing, currency, out),
        None => with_marks(value, writing, out),
    };
    let Some(number) = percent.then(|| without_percent_sign(value)).flatten() else { return read(value, out) };
    let start = out.len();
    if !read(number, out)? {
        out.extend_from_slice(number);
    }
    let written = &out[start..];
    let digits = written.iter().any(u8::is_ascii_digit);
    if !digits || !is_plain_number(written) || written.iter().any(|b| matches!(b, b'e' | b'E')) {
        let number = String::from_utf8_lossy(written).into_owned();
        let why = match marks_that_read(written) {
            flags if !flags.is_empty() => format!("reads as a number with {} as well", flags.join(" or ")),
            _ => "is no plain number".to_string(),
        };
        out.truncate(start);
        let value = String::from_utf8_lossy(value.trim_ascii());
        return Err(format!("\"{value}\" is no percentage as --percent reads them: \"{number}\" {why}"));
    }
    to_hundredths(out, start);
    Ok(true)
}

/// `out[start..]`, a plain number without an exponent, a hundredth of it:
/// its point moved two places left (`12.5` as `0.125`, `1250` as
/// `12.50`, `-3` as `-0.03`). Why not `12.5e-2`: the binary encoder reads
/// an exponent on a slower path, which made a converted load a fifth
/// slower (1.21 s against 1.00 s for 2 M rows).
fn to_hundredths(out: &mut Vec<u8>, start: usize) {
    let digits_at = start + usize::from(matches!(out.get(start), Some(b'-' | b'+')));
    let whole_end = match out[digits_at..].iter().position(|&b| b == b'.') {
        Some(point) => {
            out.remove(digits_at + point);
            digits_at + point
        }
        None => out.len(),
    };
    match whole_end - digits_at {
        whole @ 3.. => out.insert(digits_at + whole - 2, b'.'),
        whole => {
            let zeros = std::iter::repeat(b'0').take(2 - whole);
            out.splice(digits_at..digits_at, [b'0', b'.'].into_iter().chain(zeros));
        }
    }
}

/// `value` without the `%` after it (and the spaces before that, no-break
/// ones too: `12,5 %` as French exports write it), if it has one.
fn without_percent_sign(value: &[u8]) -> Option<&[u8]> {
    let mut number = value.trim_ascii().strip_suffix(b"%")?;
    loop {
        let trimmed = number.trim_ascii_end();
        let trimmed = trimmed.strip_suffix("\u{a0}".as_bytes()).unwrap_or(trimmed);
        let trimmed = trimmed.strip_suffix("\u{202f}".as_bytes()).unwrap_or(trimmed);
        if trimmed.len() == number.len() {
            return Some(number);
        }
        number = trimmed;
    }
}

/// `value` read as `writing`'s marks read it and, with `--trailing-minus`,
/// with a minus right after its last digit (`1.234,50-`, `5-`) as
/// negative. Only right after a digit: `$ -` is Excel's zero, and a
/// minus after a `%` or a currency sign is written nowhere we know of.
fn with_marks(value: &[u8], writing: NumberWriting, out: &mut Vec<u8>) -> Result<bool, String> {
    let Some(number) = writing.trailing_minus.then(|| before_trailing_minus(value)).flatten() else {
        return writing.marks.apply(value, out).map_err(|why| match before_trailing_minus(value) {
            Some(number) if writing.marks.apply(number, &mut Vec::new()).is_ok() => {
                format!("{why}; with its minus after the digits, it reads with --trailing-minus")
            }
            _ => why,
        });
    };
    let start = out.len();
    out.push(b'-');
    match writing.marks.apply(number, out) {
        Ok(false) => out.extend_from_slice(number),
        Ok(true) => {}
        Err(why) => {
            out.truncate(start);
            return Err(why);
        }
    }
    // A sign of its own (`-5-`) makes the number no plain one.
    if is_plain_number(&out[start..]) {
        return Ok(true);
    }
    out.truncate(start);
    Err(format!(
        "\"{}\" is no number as --trailing-minus reads them: digits, then the minus (1234.50-)",
        String::from_utf8_lossy(value.trim_ascii())
    ))
}

/// The number before the minus of `value` (trimmed) when it ends with a
/// minus right after a digit: `1.234,50` of `1.234,50-`.
pub fn before_trailing_minus(value: &[u8]) -> Option<&[u8]> {
    let number = value.trim_ascii().strip_suffix(b"-")?;
    number.last().is_some_and(u8::is_ascii_digit).then_some(number)
}

/// An amount written with `currency`'s sign, and numbers as `writing`'s
/// marks say, as a plain number: `$1,234.50` as `1234.50`, `($5.00)` and
/// `-$5.00` as `-5.00`, `$ -` (how Excel's accounting format writes 0) as
/// `0`. A value with neither the sign nor parentheses is read as the
/// marks read it.
fn amount(value: &[u8], writing: NumberWriting, currency: Currency, out: &mut Vec<u8>) -> Result<bool, String> {
    let spaced = with_plain_spaces(value);
    let refused = |why: String| {
        let value = String::from_utf8_lossy(value.trim_ascii());
        format!("\"{value}\" is no amount as --currency {} reads them: {why}", currency.flag_value())
    };
    let Some(amount) = currency.amount(spaced.trim_ascii()) else {
        if another_sign(spaced.trim_ascii()) {
            return Err(refused(format!("its sign is not {}", currency.flag_value())));
        }
        return with_marks(value, writing, out);
    };
    let Some(number) = amount.number else {
        out.push(b'0');
        return Ok(true);
    };
    if number.is_empty() {
        return Err(refused("no number goes with the sign".into()));
    }
    // Written in place and checked there, without a buffer a value.
    let start = out.len();
    if amount.negative {
        out.push(b'-');
    }
    let at = out.len();
    match with_marks(number, writing, out) {
        Ok(false) => out.extend_from_slice(number),
        Ok(true) => {}
        Err(why) => {
            out.truncate(start);
            return Err(refused(why));
        }
    }
    let written = &out[at..];
    let signed = matches!(written.first(), Some(b'-' | b'+'));
    if is_plain_number(written) && !(amount.negative && signed) {
        return Ok(true);
    }
    let text = String::from_utf8_lossy(written).into_owned();
    let why = match marks_that_read(written) {
        _ if amount.negative && signed => format!("\"{text}\" has a sign of its own"),
        _ if another_sign(written) => format!("its sign is not {}", currency.flag_value()),
        flags if !flags.is_empty() => format!("\"{text}\" reads as a number with {} as well", flags.join(" or ")),
        _ => format!("\"{text}\" is no number"),
    };
    out.truncate(start);
    Err(refused(why))
}

/// Whether `value` is a number with something else before or after it
/// (`€5`, `5 USD`): under `--currency '$'`, an amount in another currency,
/// refused rather than read as dollars by a later flag or the server.
fn another_sign(value: &[u8]) -> bool {
    // A `%` is `--percent`'s, or the server's to refuse.
    let in_number = |b: &u8| b.is_ascii_digit() || b".,'+-()_ %".contains(b);
    let ends = [value.first(), value.last()];
    value.iter().any(u8::is_ascii_digit) && ends.into_iter().flatten().any(|b| !in_number(b))
}

/// The flags whose marks read `number` (`--thousands ','` for
/// `1,234.5`; both it and `--decimal-comma` for `1,234`), for a refused
/// amount's or percentage's reason.
fn marks_that_read(number: &[u8]) -> Vec<String> {
    NumberWriting::PLAIN.marks_that_read(number).into_iter().filter_map(NumberMarks::flag).collect()
}

/// Whether `value` is a number as the server reads one: a sign, digits
/// with a decimal point among or around them, an exponent (`-1234.5`,
/// `.5`, `2e3`), or `NaN` and `Infinity`.
fn is_plain_number(value: &[u8]) -> bool {
    let unsigned = value.strip_prefix(b"-").or_else(|| value.strip_prefix(b"+")).unwrap_or(value);
    if [&b"NaN"[..], b"Infinity", b"inf"].iter().any(|word| unsigned.eq_ignore_ascii_case(word)) {
        return true;
    }
    let number = Written::split(unsigned, b'.');
    number.sign.is_none() && number.whole.iter().all(u8::is_ascii_digit) && number.rest_reads()
}

/// `--thousands`' value: the mark between the thousands of numbers written
/// with a decimal point. Not a dot: that goes with a decimal comma.
pub fn thousands_mark(text: &str) -> Result<u8, String> {
    match text {
        "," | "'" | " " | "_" => Ok(text.as_bytes()[0]),
        "." => Err("a dot between thousands goes with a decimal comma (1.234,5): pass --decimal-comma".into()),
        _ => Err(format!("\"{text}\" is no mark between thousands sluice reads: use ',', \"'\", ' ' or '_'")),
    }
}

/// The marks `--thousands` takes, in words (they are hard to read
/// quoted): `commas`.
pub fn mark_words(mark: u8) -> &'static str {
    match mark {
        b',' => "commas",
        b'\'' => "apostrophes",
        b' ' => "spaces",
        _ => "underscores",
    }
}

/// `--thousands` with `mark`, quoted for the shell.
pub fn thousands_flag(mark: u8) -> String {
    match mark {
        b'\'' => "--thousands \"'\"".into(),
        mark => format!("--thousands '{}'", mark as char),
    }
}

/// A number's parts as written, around its decimal mark.
struct Written<'v> {
    sign: Option<u8>,
    /// Digits, with marks between thousands where written so.
    whole: &'v [u8],
    /// After the decimal mark, when there is one.
    fraction: Option<&'v [u8]>,
    /// `e-3`, with its `e`; empty without one.
    exponent: &'v [u8],
}

impl<'v> Written<'v> {
    /// `value` (trimmed) split at its sign, its first `point` and its `e`.
    fn split(value: &'v [u8], point: u8) -> Written<'v> {
        let (sign, rest) = match value.first() {
            Some(&sign @ (b'-' | b'+')) => (Some(sign), &value[1..]),
            _ => (None, value),
        };
        let exponent_at = rest.iter().position(|&b| b == b'e' || b == b'E').unwrap_or(rest.len());
        let (number, exponent) = rest.split_at(exponent_at);
        let (whole, fraction) = match number.iter().position(|&b| b == point) {
            Some(at) => (&number[..at], Some(&number[at + 1..])),
            None => (number, None),
        };
        Written { sign, whole, fraction, exponent }
    }

    /// Whether the fraction and exponent are digits, and the number has
    /// some (`,` and `1,5e` are none).
    fn rest_reads(&self) -> bool {
        let digits = |part: &[u8]| part.iter().all(u8::is_ascii_digit);
        let fraction_ok =
            self.fraction.map_or(!self.whole.is_empty(), |f| digits(f) && !(f.is_empty() && self.whole.is_empty()));
        let exponent_ok = match self.exponent.get(1..) {
            None => true,
            Some(power) => {
                let power = power.strip_prefix(b"-").or_else(|| power.strip_prefix(b"+")).unwrap_or(power);
                !power.is_empty() && digits(power)
            }
        };
        fraction_ok && exponent_ok
    }

    /// The number as the server reads it: the whole part's digits alone,
    /// a decimal point.
    fn write_plain(&self, out: &mut Vec<u8>) {
        out.extend(self.sign);
        for group in self.whole.split(|b| !b.is_ascii_digit()) {
            out.extend_from_slice(group);
        }
        if let Some(fraction) = self.fraction {
            out.push(b'.');
            out.extend_from_slice(fraction);
        }
        out.extend_from_slice(self.exponent);
    }
}

/// `value` with its no-break spaces (U+00A0, and U+202F, the narrow one)
/// as plain spaces: French and other locales' spreadsheets put them
/// between thousands (`1 234,56`).
pub fn with_plain_spaces(value: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    const NO_BREAK: [&[u8]; 2] = ["\u{a0}".as_bytes(), "\u{202f}".as_bytes()];
    if !value.iter().any(|&b| b >= 0x80) {
        return std::borrow::Cow::Borrowed(value);
    }
    let mut plain = Vec::with_capacity(value.len());
    let mut rest = value;
    while let Some(&byte) = rest.first() {
        match NO_BREAK.iter().find(|space| rest.starts_with(space)) {
            Some(space) => {
                plain.push(b' ');
                rest = &rest[space.len()..];
            }
            None => {
                plain.push(byte);
                rest = &rest[1..];
            }
        }
    }
    std::borrow::Cow::Owned(plain)
}

/// Whether a whole part is digits, with or without dots or spaces between
/// its thousands (`1.234.567`, `1 234`, `1234`); not when a separator
/// stands elsewhere (`1.23`, `12.3456`) or two kinds are mixed.
pub fn in_thousands(whole: &[u8]) -> bool {
    match whole.iter().copied().find(|&b| b == b'.' || b == b' ') {
        Some(mark) => in_groups_of_three(whole, mark),
        None => whole.iter().all(u8::is_ascii_digit),
    }
}

/// Whether `whole` is digits with `mark` between each three of them from
/// the right (`1,234,567`; `123` too, one group).
fn in_groups_of_three(whole: &[u8], mark: u8) -> bool {
    let digits = |g: &[u8]| g.iter().all(u8::is_ascii_digit);
    let mut groups = whole.split(|&b| b == mark);
    let first = groups.next().unwrap_or_default();
    (1..=3).contains(&first.len()) && digits(first) && groups.all(|g| g.len() == 3 && digits(g))
}

/// Whether `whole` is grouped as in India (lakhs and crores): three digits
/// on the right, then twos (`12,34,567`).
fn in_lakhs(whole: &[u8], mark: u8) -> bool {
    let groups: Vec<&[u8]> = whole.split(|&b| b == mark).collect();
    let Some((last, before)) = groups.split_last() else { return false };
    let digits = |g: &[u8]| !g.is_empty() && g.iter().all(u8::is_ascii_digit);
    let Some((first, middle)) = before.split_first() else { return false };
    last.len() == 3
        && digits(last)
        && (1..=2).contains(&first.len())
        && digits(first)
        && middle.iter().all(|g| g.len() == 2 && digits(g))
}

/// The most digits a Unix time may have, fraction included: an `i128`
/// holds 38.
const MOST_TIME_DIGITS: usize = 30;

/// A Unix time (`1706702400`, `-152582400000`, `1706702400.5`) as the
/// date or timestamp it counts to, in UTC. Values that are not a number
/// (`2024-01-31`) stay as they are.
fn unix_time(value: &[u8], unit: TimeUnit, into: TimeColumn, out: &mut Vec<u8>) -> Result<bool, String> {
    let value = value.trim_ascii();
    let Some((negative, whole, fraction)) = count_parts(value) else { return Ok(false) };
    let text = || String::from_utf8_lossy(value);
    if whole.len() + fraction.len() > MOST_TIME_DIGITS {
        return Err(format!("\"{}\" has too many digits for a Unix time", text()));
    }
    // The value in units of 10^-scale seconds, exactly.
    let scale = unit.digits_per_second() + fraction.len() as u32;
    let (seconds, below) = whole_seconds(whole, fraction, negative, scale);
    let (days, of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    if !(1..=9999).contains(&year) || seconds.abs() == FAR {
        return Err(format!(
            "\"{}\" as a Unix time in {} is {}; is the unit right (--unix-times s, ms, us or ns)?",
            text(),
            unit.words(),
            if seconds.abs() == FAR { "out of every calendar".to_string() } else { format!("in the year {year}") },
        ));
    }
    let year = year as u32;
    push_two(out, year / 100);
    push_two(out, year % 100);
    out.push(b'-');
    push_two(out, month);
    out.push(b'-');
    push_two(out, day);
    if into == TimeColumn::Date {
        return Ok(true);
    }
    for (separator, part) in [(b' ', of_day / 3600), (b':', of_day / 60 % 60), (b':', of_day % 60)] {
        out.push(separator);
        push_two(out, part as u32);
    }
    if below > 0 {
        out.push(b'.');
        push_padded(out, below, scale as usize);
        while out.last() == Some(&b'0') {
            out.pop();
        }
    }
    if into == TimeColumn::TimestampTz {
        out.extend_from_slice(b"+00");
    }
    Ok(true)
}

/// The whole seconds (rounded down) of the count `whole.fraction` of
/// units of 10^-`scale` seconds before the point, and what is left below
/// them in those units. Counts of up to 18 digits, as nearly every Unix
/// time is, take 64-bit arithmetic: 128-bit division is a library call
/// that took a fifth of a converted load's CPU.
fn whole_seconds(whole: &[u8], fraction: &[u8], negative: bool, scale: u32) -> (i64, u128) {
    let digits = whole.iter().chain(fraction);
    if whole.len() + fraction.len() <= 18 && scale <= 18 {
        let count = digits.fold(0i64, |n, &d| n * 10 + i64::from(d - b'0'));
        let count = if negative { -count } else { count };
        let per_second = 10i64.pow(scale);
        return (count.div_euclid(per_second), count.rem_euclid(per_second) as u128);
    }
    let count = digits.fold(0i128, |n, &d| n * 10 + i128::from(d - b'0'));
    let count = if negative { -count } else { count };
    let per_second = 10i128.pow(scale);
    let seconds = count.div_euclid(per_second);
    (i64::try_from(seconds).unwrap_or(FAR * seconds.signum() as i64), count.rem_euclid(per_second) as u128)
}

/// Whole seconds that stand for any count past 64 bits: far past any
/// calendar, and small enough for [`civil_from_days`]' arithmetic.
const FAR: i64 = 1 << 60;

/// Appends `n` in decimal, with zeros before it to `width` digits.
fn push_padded(out: &mut Vec<u8>, n: u128, width: usize) {
    let mut buffer = itoa::Buffer::new();
    // 64-bit formatting is several times faster than 128-bit.
    let digits = match u64::try_from(n) {
        Ok(n) => buffer.format(n).as_bytes(),
        Err(_) => buffer.format(n).as_bytes(),
    };
    out.resize(out.len() + width.saturating_sub(digits.len()), b'0');
    out.extend_from_slice(digits);
}

/// Appends `n` (below 100) as two digits.
fn push_two(out: &mut Vec<u8>, n: u32) {
    out.extend_from_slice(&[b'0' + (n / 10) as u8, b'0' + (n % 10) as u8]);
}

/// Days since 1970-01-01 as (year, month, day) of the proleptic Gregorian
/// calendar (Howard Hinnant, "chrono-Compatible Low-Level Date
/// Algorithms").
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 } as u32;
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn converted(conversion: Conversion, value: &str) -> Result<Option<String>, String> {
        let mut out = Vec::new();
        let changed = conversion.apply(value.as_bytes(), &mut out)?;
        Ok(changed.then(|| String::from_utf8(out).unwrap()))
    }

    #[test]
    fn zero_fractions_leave_an_integer_columns_fraction_of_zeros_off() {
        let zeros =
            |marks| Conversion::Number(NumberWriting { zero_fractions: true, ..NumberWriting::with_marks(marks) });
        let plain = zeros(NumberMarks::Plain);
        assert_eq!(converted(plain, "3.0"), Ok(Some("3".into())));
        assert_eq!(converted(plain, " -12.000 "), Ok(Some("-12".into())));
        assert_eq!(converted(plain, "+0.0"), Ok(Some("+0".into())));
        for unchanged in ["3", "2.5", "3.", ".0", "3.0e2", "1.0.0", "NaN", ""] {
            assert_eq!(converted(plain, unchanged), Ok(None), "{unchanged:?} goes as written, for the server to judge");
        }
        let comma = zeros(NumberMarks::DecimalComma);
        assert_eq!(converted(comma, "1.234,00"), Ok(Some("1234".into())));
        assert_eq!(converted(comma, "1.234,50"), Ok(Some("1234.50".into())));
        assert_eq!(converted(zeros(NumberMarks::Thousands(b',')), "1,234.0"), Ok(Some("1234".into())));
        let minus = NumberWriting { trailing_minus: true, zero_fractions: true, ..NumberWriting::PLAIN };
        assert_eq!(converted(Conversion::Number(minus), "5.00-"), Ok(Some("-5".into())));
        assert_eq!(Conversion::for_column("bigint", Some(plain), None), Some(plain));
        assert_eq!(Conversion::for_column("numeric", Some(plain), None), None, "numeric reads a fraction");
        assert_eq!(Conversion::for_column("numeric(9,2)", Some(comma), None), Some(Conversion::DECIMAL_COMMA));
    }

    fn comma(value: &str) -> Result<Option<String>, String> {
        converted(Conversion::DECIMAL_COMMA, value)
    }

    #[test]
    fn decimal_commas_become_points_and_thousands_lose_their_separators() {
        assert_eq!(comma("2,50"), Ok(Some("2.50".into())));
        assert_eq!(comma("-1.234,5"), Ok(Some("-1234.5".into())));
        assert_eq!(comma("+1 234 567,125"), Ok(Some("+1234567.125".into())));
        assert_eq!(comma("1.234"), Ok(Some("1234".into())));
        assert_eq!(comma(" 12, "), Ok(Some("12.".into())));
        assert_eq!(comma(",5"), Ok(Some(".5".into())));
        assert_eq!(comma("1,5e-3"), Ok(Some("1.5e-3".into())));
        assert_eq!(comma("1,5E3"), Ok(Some("1.5E3".into())));
        // No-break spaces between thousands, as French exports write them.
        assert_eq!(comma("1\u{a0}234\u{a0}567,5"), Ok(Some("1234567.5".into())));
        assert_eq!(comma("-12\u{202f}345,06"), Ok(Some("-12345.06".into())));
        for plain in ["12", "-7", "NaN", "Infinity", "\\N", "", "1e5"] {
            assert_eq!(comma(plain), Ok(None), "{plain}");
        }
    }

    fn marked(mark: u8, value: &str) -> Result<Option<String>, String> {
        converted(Conversion::thousands(mark), value)
    }

    #[test]
    fn marks_between_thousands_are_removed_and_misplaced_ones_refused() {
        assert_eq!(marked(b',', "1,234.50"), Ok(Some("1234.50".into())));
        assert_eq!(marked(b',', "-1,234,567"), Ok(Some("-1234567".into())));
        assert_eq!(marked(b',', " +12,34,567.125 "), Ok(Some("+1234567.125".into())), "Indian lakhs");
        assert_eq!(marked(b',', "1,234.5e-3"), Ok(Some("1234.5e-3".into())));
        assert_eq!(marked(b'\'', "1'234'567.5"), Ok(Some("1234567.5".into())));
        assert_eq!(marked(b' ', "1\u{a0}234.5"), Ok(Some("1234.5".into())));
        assert_eq!(marked(b'_', "1_000"), Ok(Some("1000".into())));
        assert_eq!(marked(b',', "1,234."), Ok(Some("1234.".into())), "as PostgreSQL reads 1234.");
        for plain in ["12", "2.5", "-0.75", "NaN", "\\N", "", "1e5", "1234567.891"] {
            assert_eq!(marked(b',', plain), Ok(None), "{plain}");
        }
        for odd in ["1,5", "12,3456", "1234,567", "1,23,4", ",234", "1,234.5.6", "1,234.x", "1,234e", "1.234,5"] {
            let refused = marked(b',', odd).expect_err(odd);
            let why = "is no number as --thousands reads them: a decimal point before the fraction, and commas only";
            assert!(refused.starts_with(&format!("\"{odd}\" {why}")), "{refused}");
        }
        assert!(marked(b'\'', "1'5").unwrap_err().contains("apostrophes only between thousands (1'234.5)"));
        assert_eq!(thousands_mark(","), Ok(b','));
        assert_eq!(thousands_mark("'"), Ok(b'\''));
        assert!(thousands_mark(".").unwrap_err().contains("pass --decimal-comma"));
        assert!(thousands_mark(";").unwrap_err().contains("is no mark between thousands"));
        assert_eq!(thousands_flag(b'\''), "--thousands \"'\"");
        assert_eq!(thousands_flag(b','), "--thousands ','");
        let marks = Some(Conversion::thousands(b','));
        assert_eq!(Conversion::for_column("bigint", marks, None), marks);
        assert_eq!(Conversion::for_column("text", marks, None), None);
    }

    fn money(sign: &str, marks: NumberMarks, value: &str) -> Result<Option<String>, String> {
        let currency = Some(Currency::parse(sign).unwrap());
        converted(Conversion::Number(NumberWriting { marks, currency, ..NumberWriting::PLAIN }), value)
    }

    #[test]
    fn percentages_are_hundredths_exactly() {
        let percent = |marks, currency: Option<&str>, value| {
            let currency = currency.map(|sign| Currency::parse(sign).unwrap());
            converted(
                Conversion::Number(NumberWriting { marks, currency, percent: true, ..NumberWriting::PLAIN }),
                value,
            )
        };
        let plain = |value| percent(NumberMarks::Plain, None, value);
        assert_eq!(plain("12.5%"), Ok(Some("0.125".into())));
        assert_eq!(plain(" -3 % "), Ok(Some("-0.03".into())));
        assert_eq!(plain("+1250%"), Ok(Some("+12.50".into())));
        assert_eq!(plain(".5%"), Ok(Some("0.005".into())));
        assert_eq!(plain("12.%"), Ok(Some("0.12".into())));
        assert_eq!(plain("100%"), Ok(Some("1.00".into())));
        assert_eq!(
            plain("0,5\u{a0}%"),
            Err("\"0,5\u{a0}%\" is no percentage as --percent reads them: \"0,5\" reads as a \
                                             number with --decimal-comma as well"
                .into())
        );
        assert_eq!(percent(NumberMarks::DecimalComma, None, "12,5\u{a0}%"), Ok(Some("0.125".into())));
        assert_eq!(percent(NumberMarks::Thousands(b','), None, "1,250%"), Ok(Some("12.50".into())));
        assert_eq!(percent(NumberMarks::Plain, Some("$"), "($5)%"), Ok(Some("-0.05".into())), "odd, but exact");
        assert_eq!(percent(NumberMarks::Thousands(b','), Some("$"), "$1,250"), Ok(Some("1250".into())), "no %");
        for plain_value in ["12.5", "NaN", ""] {
            assert_eq!(plain(plain_value), Ok(None), "{plain_value}");
        }
        for odd in ["%", "1e3%", "NaN%", "x%", "5%%"] {
            assert!(plain(odd).unwrap_err().contains("is no percentage as --percent reads them"), "{odd}");
        }
        let flags = NumberWriting { percent: true, ..NumberWriting::with_marks(NumberMarks::Thousands(b',')) }.flags();
        assert_eq!(flags, "--thousands ',' --percent");
    }

    #[test]
    fn minuses_after_the_digits_move_in_front() {
        let minus = |marks, currency: Option<&str>, percent, value| {
            let currency = currency.map(|sign| Currency::parse(sign).unwrap());
            let writing = NumberWriting { marks, currency, percent, trailing_minus: true, ..NumberWriting::PLAIN };
            converted(Conversion::Number(writing), value)
        };
        let plain = |value| minus(NumberMarks::Plain, None, false, value);
        assert_eq!(plain("5.00-"), Ok(Some("-5.00".into())));
        assert_eq!(plain(" 12- "), Ok(Some("-12".into())));
        assert_eq!(plain("1e3-"), Ok(Some("-1e3".into())));
        for as_written in ["5.00", "-5.00", "", "NaN", "-", "x-"] {
            assert_eq!(plain(as_written), Ok(None), "{as_written}: the server reads it, or refuses it");
        }
        for odd in ["-5-", "+5-", "5-5-", "1.2.3-", "a5-"] {
            let refused = plain(odd).expect_err(odd);
            assert!(refused.contains("is no number as --trailing-minus reads them"), "{refused}");
        }
        let comma = |value| minus(NumberMarks::DecimalComma, None, false, value);
        assert_eq!(comma("1.234,50-"), Ok(Some("-1234.50".into())));
        assert_eq!(comma("0,5-"), Ok(Some("-0.5".into())));
        assert!(comma("1.23,4-").unwrap_err().contains("--decimal-comma reads them"));
        let thousands = minus(NumberMarks::Thousands(b','), None, false, "1,234.50-");
        assert_eq!(thousands, Ok(Some("-1234.50".into())));
        let dollars = |value| minus(NumberMarks::Thousands(b','), Some("$"), false, value);
        assert_eq!(dollars("$1,234.50-"), Ok(Some("-1234.50".into())));
        assert_eq!(dollars("$ -"), Ok(Some("0".into())), "Excel's zero is no minus after digits");
        assert!(dollars("($5.00-)").unwrap_err().contains("has a sign of its own"));
        let euros = minus(NumberMarks::DecimalComma, Some("EUR"), false, "1.234,50- EUR");
        assert_eq!(euros, Ok(Some("-1234.50".into())), "SAP writes the currency after the minus");
        assert_eq!(minus(NumberMarks::DecimalComma, None, true, "12,5-%"), Ok(Some("-0.125".into())));
        // Without the flag, the refusal names it.
        let without = converted(Conversion::DECIMAL_COMMA, "1.234,50-").unwrap_err();
        assert!(without.ends_with("with its minus after the digits, it reads with --trailing-minus"), "{without}");
        assert!(!converted(Conversion::DECIMAL_COMMA, "1.2,50-").unwrap_err().contains("--trailing-minus"));
        let flags = NumberWriting { trailing_minus: true, ..NumberWriting::with_marks(NumberMarks::DecimalComma) };
        assert_eq!(flags.flags(), "--decimal-comma --trailing-minus");
    }

    #[test]
    fn amounts_lose_their_sign_and_parentheses_make_them_negative() {
        let us = |value| money("$", NumberMarks::Thousands(b','), value);
        assert_eq!(us("$1,234.50"), Ok(Some("1234.50".into())));
        assert_eq!(us(" -$1,234.50 "), Ok(Some("-1234.50".into())));
        assert_eq!(us("($1,234.50)"), Ok(Some("-1234.50".into())));
        assert_eq!(us("$ (5.00)"), Ok(Some("-5.00".into())));
        assert_eq!(us("(7)"), Ok(Some("-7".into())), "parentheses without the sign");
        assert_eq!(us("$-0.5"), Ok(Some("-0.5".into())));
        assert_eq!(us("$ - "), Ok(Some("0".into())), "Excel's accounting zero");
        assert_eq!(us("1,234"), Ok(Some("1234".into())), "no sign: the marks alone");
        for plain in ["12.5", "NaN", "\\N", ""] {
            assert_eq!(us(plain), Ok(None), "{plain}");
        }
        let euro = |value| money("€", NumberMarks::DecimalComma, value);
        assert_eq!(euro("1.234,50\u{a0}€"), Ok(Some("1234.50".into())));
        assert_eq!(euro("-2,5 €"), Ok(Some("-2.5".into())));
        assert_eq!(money("CHF", NumberMarks::Thousands(b'\''), "CHF 1'234.50"), Ok(Some("1234.50".into())));
        assert_eq!(money("$", NumberMarks::Plain, "$12.00"), Ok(Some("12.00".into())));
        let refused = |sign, marks, value| money(sign, marks, value).expect_err(value);
        let why = refused("$", NumberMarks::Plain, "$1,234.50");
        assert_eq!(
            why,
            "\"$1,234.50\" is no amount as --currency '$' reads them: \"1,234.50\" reads as a number with --thousands \
             ',' as well"
        );
        let why = refused("$", NumberMarks::Plain, "$1,234");
        assert!(why.ends_with("with --thousands ',' or --decimal-comma as well"), "{why}");
        assert!(refused("$", NumberMarks::Plain, "-$-5").ends_with("\"-5\" has a sign of its own"));
        assert!(refused("$", NumberMarks::Plain, "($-5)").ends_with("\"-5\" has a sign of its own"));
        assert!(refused("$", NumberMarks::Plain, "$").ends_with("no number goes with the sign"));
        assert!(refused("$", NumberMarks::Plain, "$abc").ends_with("\"abc\" is no number"));
        let marked = refused("$", NumberMarks::Thousands(b','), "$1,5");
        assert!(marked.contains("reads them: \"1,5\" is no number as --thousands reads them"), "{marked}");
        // Another currency's amount is refused, not read as dollars.
        for other in ["€5", "5 USD", "€1,234.50", "(€5)"] {
            assert!(us(other).unwrap_err().ends_with("reads them: its sign is not '$'"), "{other}");
        }
        assert_eq!(us("Infinity"), Ok(None), "a word, for the server");
        assert!(is_plain_number(b"-1234.5e3") && is_plain_number(b".5") && is_plain_number(b"Infinity"));
        assert!(!is_plain_number(b"1.2.3") && !is_plain_number(b"--1") && !is_plain_number(b"1,5"));
    }

    #[test]
    fn values_that_fit_neither_way_are_refused_with_why() {
        for odd in ["2.5", "1.23,4", "1.234 567", "12.3456", "1,2,3", ",", "1,5e", "1,5e+", "x,5", "1234.567,8"] {
            let refused = comma(odd).expect_err(odd);
            assert!(refused.starts_with(&format!("\"{}\" is no number", odd.trim())), "{refused}");
        }
    }

    fn time(unit: TimeUnit, into: TimeColumn, value: &str) -> Result<Option<String>, String> {
        converted(Conversion::UnixTime { unit, into }, value)
    }

    #[test]
    fn unix_times_become_utc_dates_and_timestamps() {
        use TimeColumn::*;
        use TimeUnit::*;
        assert_eq!(time(Seconds, TimestampTz, "1706702400"), Ok(Some("2024-01-31 12:00:00+00".into())));
        assert_eq!(time(Milliseconds, Timestamp, "1706702400123"), Ok(Some("2024-01-31 12:00:00.123".into())));
        assert_eq!(time(Milliseconds, Date, "1706702400123"), Ok(Some("2024-01-31".into())));
        assert_eq!(time(Seconds, Timestamp, "1706702400.25"), Ok(Some("2024-01-31 12:00:00.25".into())));
        assert_eq!(
            time(Nanoseconds, Timestamp, "1706702400000000007"),
            Ok(Some("2024-01-31 12:00:00.000000007".into()))
        );
        assert_eq!(time(Microseconds, Timestamp, "0"), Ok(Some("1970-01-01 00:00:00".into())));
        // Before 1970: pandas' milliseconds for 1965-03-02, and half a
        // second before the epoch.
        assert_eq!(time(Milliseconds, Date, "-152582400000"), Ok(Some("1965-03-02".into())));
        assert_eq!(time(Seconds, Timestamp, "-0.5"), Ok(Some("1969-12-31 23:59:59.5".into())));
        for plain in ["2024-01-31", "2024-01-31 12:00", "today", "\\N", "", "1.", ".5", "1e9"] {
            assert_eq!(time(Seconds, Timestamp, plain), Ok(None), "{plain}");
        }
    }

    #[test]
    fn unix_times_out_of_the_calendar_say_the_unit_may_be_wrong() {
        let refused = time(TimeUnit::Seconds, TimeColumn::Date, "1706702400123").unwrap_err();
        assert!(refused.contains("is in the year 56053; is the unit right"), "{refused}");
        let far = time(TimeUnit::Seconds, TimeColumn::Date, &"9".repeat(25)).unwrap_err();
        assert!(far.ends_with("in seconds is out of every calendar; is the unit right (--unix-times s, ms, us or ns)?"));
        let negative = time(TimeUnit::Seconds, TimeColumn::Date, &format!("-{}", "9".repeat(25))).unwrap_err();
        assert!(negative.contains("is out of every calendar"), "{negative}");
        // Past 18 digits the arithmetic is 128-bit, with the same result.
        let long = time(TimeUnit::Nanoseconds, TimeColumn::Timestamp, "1706702400000000007.5");
        assert_eq!(long, Ok(Some("2024-01-31 12:00:00.0000000075".into())));
        let long = "1".repeat(40);
        assert!(time(TimeUnit::Seconds, TimeColumn::Date, &long).unwrap_err().contains("too many digits"));
    }

    #[test]
    fn a_unit_every_likely_unix_time_of_the_head_contradicts_is_named() {
        let values = |v: &'static [&'static str]| v.iter().map(|v| v.as_bytes());
        let wrong = wrong_unit("at", TimeUnit::Milliseconds, values(&["x", "1706702400", "1706702460.5", "12"]));
        let wrong = wrong.expect("seconds taken for milliseconds");
        assert_eq!(
            wrong,
            "--unix-times ms: the first records' numbers in column \"at\" read as Unix times in seconds, not \
             milliseconds (1706702400 is 2024-01-31 12:00:00 UTC in seconds but 1970-01-20 18:05:02.4 UTC in \
             milliseconds); pass --unix-times s"
        );
        assert_eq!(wrong_unit("at", TimeUnit::Seconds, values(&["1706702400", "2024-01-31"])), None);
        assert_eq!(wrong_unit("at", TimeUnit::Seconds, values(&["1706702400", "1706702400000"])), None, "mixed");
        assert_eq!(wrong_unit("at", TimeUnit::Seconds, values(&["2024-01-31", "45321"])), None, "no Unix time");
        let micro = wrong_unit("at", TimeUnit::Nanoseconds, values(&["1706702400000000"])).unwrap();
        assert!(micro.ends_with("pass --unix-times us"), "{micro}");
    }

    #[test]
    fn auto_takes_the_unit_every_likely_unix_time_of_the_head_is_in() {
        let values = |v: &'static [&'static str]| v.iter().map(|v| v.as_bytes());
        let told = |v| unit_told_by("at", values(v));
        assert_eq!(
            told(&["", "2024-01-31", "1706702400123", "315532800000", "1706702400124.5"]),
            Ok(Some(TimeUnit::Milliseconds))
        );
        assert_eq!(told(&[" 1706702400 "]), Ok(Some(TimeUnit::Seconds)));
        assert_eq!(told(&["1706702400123456789"]), Ok(Some(TimeUnit::Nanoseconds)));
        assert_eq!(told(&["2024-01-31", "86400", "-152582400000"]), Ok(None), "no likely Unix time");
        assert_eq!(told(&[]), Ok(None));
        let two = told(&["1706702400123", "1706702400", "1706702400000000"]).unwrap_err();
        assert!(
            two.contains("(1706702400123 in milliseconds, 1706702400 in seconds); say which with --unix-times ms or s"),
            "{two}"
        );
        assert_eq!(UnixTimes::parse("AUTO"), Ok(UnixTimes::Auto));
        assert_eq!(UnixTimes::parse("ms"), Ok(UnixTimes::Unit(TimeUnit::Milliseconds)));
        assert!(UnixTimes::parse("days").unwrap_err().contains("use s, ms, us, ns, or auto"));
        let guess = Conversion::UnixTime { unit: UnixTimes::Auto.unit_to_begin_with(), into: TimeColumn::Date };
        assert_eq!(
            guess.in_unit(TimeUnit::Seconds),
            Conversion::UnixTime { unit: TimeUnit::Seconds, into: TimeColumn::Date }
        );
        assert_eq!(Conversion::DECIMAL_COMMA.in_unit(TimeUnit::Seconds), Conversion::DECIMAL_COMMA);
        for (value, count) in [
            ("12", true),
            ("-1.5", true),
            ("+7", true),
            (" 3 ", true),
            ("1.", false),
            ("-", false),
            ("2024-01-31", false),
            ("", false),
        ] {
            assert_eq!(is_count(value.as_bytes()), count, "{value}");
        }
    }

    #[test]
    fn columns_get_conversions_by_type_and_flag() {
        let unit = Some(TimeUnit::Milliseconds);
        let comma = Some(Conversion::DECIMAL_COMMA);
        let time = |into| Some(Conversion::UnixTime { unit: TimeUnit::Milliseconds, into });
        assert_eq!(Conversion::for_column("numeric(12,2)", comma, None), Some(Conversion::DECIMAL_COMMA));
        assert_eq!(Conversion::for_column("double precision", comma, unit), Some(Conversion::DECIMAL_COMMA));
        assert_eq!(Conversion::for_column("numeric", None, unit), None);
        assert_eq!(Conversion::for_column("text", comma, unit), None);
        assert_eq!(Conversion::for_column("date", comma, unit), time(TimeColumn::Date));
        assert_eq!(Conversion::for_column("timestamp(3) with time zone", None, unit), time(TimeColumn::TimestampTz));
        assert_eq!(Conversion::for_column("timestamp with time zone", None, unit), time(TimeColumn::TimestampTz));
        assert_eq!(Conversion::for_column("timestamp(3) without time zone", None, unit), time(TimeColumn::Timestamp));
        assert_eq!(Conversion::for_column("timestamp without time zone", None, unit), time(TimeColumn::Timestamp));
        assert_eq!(Conversion::for_column("date", comma, None), None);
        assert_eq!(Conversion::for_column("time without time zone", None, unit), None);
    }

    proptest::proptest! {
        /// Every second from year 1 to 9999 is the date and time humantime
        /// writes for it (which knows only times after 1970), shifted by
        /// whole 400-year cycles, whose calendar repeats.
        #[test]
        fn civil_dates_match_humantime(seconds in 0i64..253_402_300_800 - 62_135_596_800, cycles in 0i64..5) {
            let mut out = Vec::new();
            let shifted = seconds - cycles * 12_622_780_800;
            let year_shift = cycles * 400;
            let written = unix_time(shifted.to_string().as_bytes(), TimeUnit::Seconds, TimeColumn::Timestamp, &mut out);
            let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds as u64);
            let expected = humantime::format_rfc3339_seconds(time).to_string();
            let year: i64 = expected[..4].parse().unwrap();
            if (1..=9999).contains(&(year - year_shift)) {
                proptest::prop_assert_eq!(written, Ok(true));
                let expected = format!("{:04}{} {}", year - year_shift, &expected[4..10], &expected[11..19]);
                proptest::prop_assert_eq!(String::from_utf8(out).unwrap(), expected);
            }
        }
    }
}
