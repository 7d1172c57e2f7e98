//! Fields left out: `--columns id,-,name` (a `-` for each field to leave
//! out) and `--skip-other-fields` (with `--header`: the fields whose name
//! is no column's) load only some of each record's fields. The same
//! rewriting converts the values of some columns (`--decimal-comma`,
//! `--thousands`, `--unix-times`: see [`crate::format::convert`]).
//!
//! COPY takes every field of a record into a column and cannot leave one
//! out, so the peers' users cut their files first (`cut`, which splits a
//! quoted CSV value at its commas, or `csvcut`), reading every byte once
//! more. Here each chunk's records are rewritten on the client after the
//! chunker has cut them ([`pick_fields`]), before anything else sees them:
//! a record keeps its kept fields byte for byte (quotes, escapes, the
//! delimiter and its line end as written), so the server reads each kept
//! value exactly as it would have read it in the whole record. Everything
//! after (isolation, suspects, the binary encoder, the key checks) works on
//! the rewritten records, one per input record, and the chunk keeps its
//! input bytes ([`OriginalText`]) for the rejects file and for the line each
//! record starts on: a record whose left-out field held line breaks spans
//! fewer lines once rewritten.
//!
//! A record with another number of fields cannot be rewritten (which of its
//! fields is which?): it becomes a marked line ([`DOC_MARK`] and the
//! reason), which isolation rejects on the client, as it does a document
//! it could not read; so does a record with a value its column's
//! conversion refuses.
//!
//! Why our own: the split must be the server's (`CopyReadAttributesText`,
//! `CopyReadAttributesCSV`) and keep each field's bytes as written, with
//! the record scanner's quote rules; a CSV crate unquotes values and knows
//! neither the text format nor COPY's escape.

use crate::chunk::Chunk;
use crate::format::convert::Conversion;
use crate::format::documents::{OriginalText, DOC_MARK};
use crate::format::scan::{Dialect, LineEnd, QuoteState, RecordScanner};
use crate::format::FormatOptions;

/// Which of a record's fields load, and how some are converted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPicks {
    /// One per field of the input's records, in order: whether it loads.
    kept: Vec<bool>,
    /// One per field of the input's records, or none: how its values are
    /// converted, with its column's name for the reasons of rejects.
    conversions: Vec<Option<(Conversion, String)>>,
}

impl FieldPicks {
    pub fn new(kept: Vec<bool>) -> FieldPicks {
        FieldPicks { kept, conversions: Vec::new() }
    }

    /// Every one of `fields` fields kept.
    pub fn all(fields: usize) -> FieldPicks {
        FieldPicks::new(vec![true; fields])
    }

    /// These picks with the kept fields' conversions: one per kept field,
    /// in order, with the column it loads into.
    pub fn converting(mut self, kept_fields: Vec<Option<(Conversion, String)>>) -> FieldPicks {
        let mut each = kept_fields.into_iter();
        self.conversions = self.kept.iter().map(|&kept| if kept { each.next().flatten() } else { None }).collect();
        self
    }

    /// These picks with each converted column's conversion as `settled`
    /// makes it from it and the column's name (none: the column's values
    /// go as written).
    pub fn with_conversions(&self, settled: impl Fn(Conversion, &str) -> Option<Conversion>) -> FieldPicks {
        let conversions = self.conversions.iter().map(|c| {
            let (conversion, name) = c.as_ref()?;
            Some((settled(*conversion, name)?, name.clone()))
        });
        FieldPicks { kept: self.kept.clone(), conversions: conversions.collect() }
    }

    /// Whether any field is left out.
    pub fn leave_some_out(&self) -> bool {
        self.kept.contains(&false)
    }

    /// The columns whose values are converted, with how, in field order.
    pub fn conversions(&self) -> impl Iterator<Item = &(Conversion, String)> {
        self.conversions.iter().flatten()
    }

    /// The fields each record has.
    pub fn fields(&self) -> usize {
        self.kept.len()
    }

    /// The fields left out, numbered from 1 as `cut` numbers them.
    pub fn left_out(&self) -> Vec<usize> {
        (self.kept.iter().enumerate()).filter(|(_, &kept)| !kept).map(|(i, _)| i + 1).collect()
    }
}

/// How a record's fields are told apart.
#[derive(Clone, Copy, Debug)]
struct Splitter<'a> {
    dialect: Dialect,
    delimiter: u8,
    /// The NULL string, which no conversion touches.
    null: &'a [u8],
}

impl Splitter<'_> {
    /// Appends the offsets of `body`'s field delimiters (outside quotes in
    /// CSV, not escaped in the text format) to `at`. Only the bytes that
    /// can change the state are looked at (found with `memchr`): a byte by
    /// byte loop was most of a converting load's rewrite.
    fn delimiters(self, body: &[u8], at: &mut Vec<usize>) {
        match self.dialect {
            Dialect::Csv { quote, escape } => {
                // As the scanner reads quotes: an escape that is the quote is none.
                let escape = if escape == quote { 0 } else { escape };
                let mut quotes = QuoteState::default();
                let mut next = 0;
                for i in memchr::memchr3_iter(self.delimiter, quote, escape, body) {
                    if i > next {
                        quotes.other_bytes();
                    }
                    next = i + 1;
                    let c = body[i];
                    quotes.step(c, quote, escape);
                    if c == self.delimiter && !quotes.in_quote {
                        at.push(i);
                    }
                }
            }
            Dialect::Text | Dialect::Lines => {
                let mut escaped_byte = None;
                for i in memchr::memchr2_iter(b'\\', self.delimiter, body) {
                    if escaped_byte == Some(i) {
                        escaped_byte = None;
                    } else if body[i] == b'\\' {
                        escaped_byte = Some(i + 1);
                    } else {
                        at.push(i);
                    }
                }
            }
        }
    }

    /// Whether `byte` would change how the marked line's reason is read
    /// (a quote would open a field running past the line).
    fn disturbs(self, byte: u8) -> bool {
        match self.dialect {
            Dialect::Csv { quote, escape } => byte == quote || byte == escape,
            Dialect::Text | Dialect::Lines => byte == b'\\',
        }
    }
}

/// Rewrites `chunk`'s records (its bytes, which it carries) with only
/// their kept fields, and keeps its input bytes as its original text. A
/// runaway record (see [`crate::chunk::Runaway`]) is not copied: it stays
/// as it was, after the rewritten records, its offset moved with it.
pub fn pick_fields(chunk: &mut Chunk, format: &FormatOptions, picks: &FieldPicks) {
    let (dialect, delimiter, null) = (format.dialect(), format.field_delimiter(), format.null_string().as_bytes());
    let input = chunk.data.take().expect("chunks whose fields are picked carry their bytes");
    let copied = chunk.runaway.map_or(input.len(), |r| r.offset as usize);
    let splitter = Splitter { dialect, delimiter, null };
    let (mut data, records) = pick_records(&input[..copied], splitter, chunk.line_end, picks);
    if let Some(runaway) = &mut chunk.runaway {
        runaway.offset = data.len() as u64;
        data.extend_from_slice(&input[copied..]);
    }
    chunk.data = Some(data);
    chunk.original = Some(std::sync::Arc::new(OriginalText {
        offset: chunk.loc.byte_offset,
        bytes: input,
        records,
        cut: Vec::new(),
    }));
}

/// `record` (one record as it was in the input) with its kept fields, as
/// the load sent it; `None` when it has another number of fields.
pub fn picked_record(record: &[u8], format: &FormatOptions, picks: &FieldPicks) -> Option<Vec<u8>> {
    let splitter = Splitter {
        dialect: format.dialect(),
        delimiter: format.field_delimiter(),
        null: format.null_string().as_bytes(),
    };
    let mut out = Vec::with_capacity(record.len());
    pick_record(record, splitter, LineEnd::Lf, picks, &mut Vec::new(), &mut out);
    (out.first() != Some(&DOC_MARK)).then_some(out)
}

/// `chunk`'s records with their kept fields, and where each record starts
/// in `chunk` with the line ends before it (and the end, last).
fn pick_records(
    chunk: &[u8],
    splitter: Splitter,
    line_end: LineEnd,
    picks: &FieldPicks,
) -> (Vec<u8>, Vec<(usize, u64)>) {
    let mut scanner = RecordScanner::new(splitter.dialect, line_end);
    let mut out = Vec::with_capacity(chunk.len());
    let mut records = vec![(0, 0)];
    let mut delimiters = Vec::with_capacity(picks.fields());
    let (mut pos, mut lines) = (0, 0);
    while pos < chunk.len() {
        let step = scanner.scan(&chunk[pos..], true);
        pick_record(&chunk[pos..pos + step.consumed], splitter, line_end, picks, &mut delimiters, &mut out);
        pos += step.consumed;
        lines += step.newlines;
        records.push((pos, lines));
    }
    (out, records)
}

/// Appends `record` with its kept fields, converted where asked, or a
/// marked line saying why it cannot be rewritten.
fn pick_record(
    record: &[u8],
    splitter: Splitter,
    line_end: LineEnd,
    picks: &FieldPicks,
    delimiters: &mut Vec<usize>,
    out: &mut Vec<u8>,
) {
    let (body, ending) = record.split_at(crate::format::without_line_end(record).len());
    delimiters.clear();
    splitter.delimiters(body, delimiters);
    let fields = delimiters.len() + 1;
    if fields != picks.fields() {
        let left_out: Vec<String> = picks.left_out().iter().map(usize::to_string).collect();
        let why = match left_out.len() {
            0 => "so sluice cannot tell which field is which column's to convert its values".to_string(),
            1 => format!("so sluice cannot tell which to leave out (field {} is left out)", left_out[0]),
            _ => format!("so sluice cannot tell which to leave out (fields {} are left out)", left_out.join(", ")),
        };
        let reason = format!(
            "the record has {fields} fields, not {}, {why}; is a delimiter in a value that is not quoted, or a \
             field missing?",
            picks.fields(),
        );
        return mark(&reason, splitter, line_end, ending, out);
    }
    let start = out.len();
    let mut from = 0;
    let mut first = true;
    for (i, &kept) in picks.kept.iter().enumerate() {
        let to = delimiters.get(i).copied().unwrap_or(body.len());
        if kept {
            if !first {
                out.push(splitter.delimiter);
            }
            let field = &body[from..to];
            match picks.conversions.get(i).and_then(Option::as_ref) {
                None => out.extend_from_slice(field),
                Some((conversion, column)) => {
                    if let Err(why) = convert_field(field, *conversion, splitter, out) {
                        out.truncate(start);
                        return mark(&format!("column \"{column}\": {why}"), splitter, line_end, ending, out);
                    }
                }
            }
            first = false;
        }
        from = to + 1;
    }
    out.extend_from_slice(ending);
}

/// Appends a marked line with `reason`, which isolation rejects. A byte
/// that would change how the line is read is replaced: a quote by an
/// apostrophe (or a space, when the apostrophe is the quote), others by a
/// space.
fn mark(reason: &str, splitter: Splitter, line_end: LineEnd, ending: &[u8], out: &mut Vec<u8>) {
    let stand_in = if splitter.disturbs(b'\'') { b' ' } else { b'\'' };
    out.push(DOC_MARK);
    out.extend(reason.bytes().map(|b| match b {
        b'"' if splitter.disturbs(b) => stand_in,
        b'\n' | b'\r' => b' ',
        b if splitter.disturbs(b) => b' ',
        b => b,
    }));
    match ending {
        [] => out.push(line_end.byte()),
        ending => out.extend_from_slice(ending),
    }
}

/// The column a marked line's reason names, when a conversion refused its
/// value (`column "price": ...`, its quotes maybe apostrophes, see
/// [`mark`]): the reject names it as the server's refusals name theirs.
pub fn refused_column(reason: &str) -> Option<&str> {
    let rest = reason.strip_prefix("column ")?;
    let quote = rest.chars().next().filter(|&c| c == '"' || c == '\'')?;
    let (name, after) = rest[1..].split_once(quote)?;
    after.starts_with(": ").then_some(name)
}

/// Appends `field` with its value converted. A CSV value keeps its quotes
/// (a quoted value is never NULL unless FORCE_NULL says so); a value with
/// escapes or inner quotes, or the NULL string, is no number and goes as
/// written, for the server to judge as without the conversion.
fn convert_field(field: &[u8], conversion: Conversion, splitter: Splitter, out: &mut Vec<u8>) -> Result<(), String> {
    let Some((value, quote)) = convertible_value(field, splitter) else {
        out.extend_from_slice(field);
        return Ok(());
    };
    let start = out.len();
    if !conversion.apply(value, out)? {
        out.extend_from_slice(field);
        return Ok(());
    }
    // A converted time holds ` `, `:`, `-`, `+` and `.`: any of them may
    // be the delimiter, which must then be quoted (CSV) or escaped.
    let holds_delimiter = out[start..].contains(&splitter.delimiter);
    match splitter.dialect {
        Dialect::Csv { quote: csv_quote, .. } if quote != 0 || holds_delimiter => {
            out.insert(start, csv_quote);
            out.push(csv_quote);
        }
        Dialect::Text | Dialect::Lines if holds_delimiter => {
            let converted = out.split_off(start);
            for byte in converted {
                if byte == splitter.delimiter {
                    out.push(b'\\');
                }
                out.push(byte);
            }
        }
        _ => {}
    }
    Ok(())
}

/// A field's value without its CSV quotes (and the quote, or 0 when it
/// had none), when a conversion may read it: not the NULL string, nor a
/// value with escapes or inner quotes, which no number has.
fn convertible_value<'f>(field: &'f [u8], splitter: Splitter) -> Option<(&'f [u8], u8)> {
    let value = match splitter.dialect {
        Dialect::Csv { quote, escape } => {
            let inner = field.strip_prefix(&[quote]).and_then(|f| f.strip_suffix(&[quote]));
            match inner {
                Some(inner) if !inner.contains(&quote) && !inner.contains(&escape) => Some((inner, quote)),
                _ if field.contains(&quote) => None,
                _ => Some((field, 0)),
            }
        }
        Dialect::Text | Dialect::Lines => (!field.contains(&b'\\')).then_some((field, 0)),
    };
    value.filter(|(value, _)| *value != splitter.null)
}

/// The values of the converted fields in the records `head` holds whole
/// (after the header, with `--header`), each with its conversion and
/// column, as written: for the checks before the load (see
/// [`crate::format::convert::wrong_unit`]).
pub fn converted_values<'h>(
    head: &'h [u8],
    format: &FormatOptions,
    picks: &'h FieldPicks,
) -> Vec<(&'h (Conversion, String), &'h [u8])> {
    let splitter = Splitter {
        dialect: format.dialect(),
        delimiter: format.field_delimiter(),
        null: format.null_string().as_bytes(),
    };
    let (mut values, mut delimiters) = (Vec::new(), Vec::new());
    for record in crate::format::head_records(head, format) {
        let body = crate::format::without_line_end(record);
        delimiters.clear();
        splitter.delimiters(body, &mut delimiters);
        if delimiters.len() + 1 != picks.fields() {
            continue;
        }
        for (i, conversion) in picks.conversions.iter().enumerate() {
            let Some(conversion) = conversion else { continue };
            let from = if i == 0 { 0 } else { delimiters[i - 1] + 1 };
            let field = &body[from..delimiters.get(i).copied().unwrap_or(body.len())];
            values.extend(convertible_value(field, splitter).map(|(value, _)| (conversion, value)));
        }
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::FormatKind;

    const CSV: Dialect = Dialect::Csv { quote: b'"', escape: b'"' };

    fn picked(input: &str, dialect: Dialect, delimiter: u8, kept: &[bool]) -> (Vec<u8>, Vec<(usize, u64)>) {
        let picks = FieldPicks::new(kept.to_vec());
        pick_records(input.as_bytes(), Splitter { dialect, delimiter, null: b"" }, LineEnd::Lf, &picks)
    }

    #[test]
    fn kept_fields_stay_as_written_and_records_keep_their_input_lines() {
        let input = "1,\"a,\nb\",x,\"\"\"q\"\"\"\r\n2,,\"\",\n3,n,\"two\nlines\nhere\",z";
        let (out, records) = picked(input, CSV, b',', &[true, false, true, true]);
        assert_eq!(out, b"1,x,\"\"\"q\"\"\"\r\n2,\"\",\n3,\"two\nlines\nhere\",z");
        // Records start at input bytes 0, 20 and 27, on lines 1, 3 and 4.
        assert_eq!(records, [(0, 0), (20, 2), (27, 3), (input.len(), 5)]);
    }

    #[test]
    fn a_record_with_another_field_count_becomes_a_marked_line() {
        let (out, records) = picked("1,a,b\n2,\"a,b\"\n3,c,d", CSV, b',', &[true, false, true]);
        let lines: Vec<&[u8]> = out.split_inclusive(|&b| b == b'\n').collect();
        assert_eq!(lines[0], b"1,b\n");
        let reason = crate::format::documents::marked_reason(lines[1]).expect("a marked line");
        assert!(reason.starts_with("the record has 2 fields, not 3, "), "{reason}");
        assert!(reason.contains("(field 2 is left out)"), "{reason}");
        assert!(!reason.contains('"'), "no quote that would open a field: {reason}");
        assert_eq!(lines[2], b"3,d");
        assert_eq!(records.len(), 4);
    }

    #[test]
    fn converted_fields_keep_their_quotes_and_leave_null_and_escapes_as_written() {
        use crate::format::convert::{TimeColumn, TimeUnit};
        let time = Conversion::UnixTime { unit: TimeUnit::Milliseconds, into: TimeColumn::TimestampTz };
        let picks = FieldPicks::new(vec![true, false, true, true]).converting(vec![
            None,
            Some((Conversion::DECIMAL_COMMA, "price".into())),
            Some((time, "at".into())),
        ]);
        let csv = Splitter { dialect: CSV, delimiter: b',', null: b"" };
        let input = b"1,x,\"1.234,5\",1706702400123\n2,y,,\"\"\n3,z,2.5,0\n";
        let (out, _) = pick_records(input, csv, LineEnd::Lf, &picks);
        let lines: Vec<&[u8]> = out.split_inclusive(|&b| b == b'\n').collect();
        assert_eq!(lines[0], b"1,\"1234.5\",2024-01-31 12:00:00.123+00\n");
        assert_eq!(lines[1], b"2,,\"\"\n");
        let reason = crate::format::documents::marked_reason(lines[2]).expect("a marked line");
        assert!(reason.starts_with("column 'price': '2.5' is no number"), "{reason}");
        assert_eq!(refused_column(&reason), Some("price"));
        // The text format: the NULL string and escaped values go as written.
        let text = Splitter { dialect: Dialect::Text, delimiter: b'\t', null: b"0" };
        let (out, _) = pick_records(b"1\tx\t2,5\t0\n2\ty\t2\\,5\t\\N\n", text, LineEnd::Lf, &picks);
        assert_eq!(out, b"1\t2.5\t0\n2\t2\\,5\t\\N\n");
        // A delimiter the converted value holds is quoted, or escaped.
        let spaced = Splitter { dialect: CSV, delimiter: b' ', null: b"" };
        let (out, _) = pick_records(b"1 x 2 1706702400123\n", spaced, LineEnd::Lf, &picks);
        assert_eq!(out, b"1 2 \"2024-01-31 12:00:00.123+00\"\n");
        let coloned = Splitter { dialect: Dialect::Text, delimiter: b':', null: b"" };
        let (out, _) = pick_records(b"1:x:2:1706702400123\n", coloned, LineEnd::Lf, &picks);
        assert_eq!(out, b"1:2:2024-01-31 12\\:00\\:00.123+00\n");
        // Another count of fields: nothing is left out, but which is which?
        let all = FieldPicks::all(2).converting(vec![None, Some((Conversion::DECIMAL_COMMA, "price".into()))]);
        let (out, _) = pick_records(b"1,2,5\n", csv, LineEnd::Lf, &all);
        let reason = crate::format::documents::marked_reason(&out).expect("a marked line");
        assert!(reason.contains("so sluice cannot tell which field is which column's to convert"), "{reason}");
    }

    #[test]
    fn text_format_escapes_keep_a_delimiter_in_its_field() {
        let (out, _) = picked("1\ta\\\tb\tc\n2\t\\N\td\\\\\n", Dialect::Text, b'\t', &[false, true, true]);
        assert_eq!(out, b"a\\\tb\tc\n\\N\td\\\\\n");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 3000, max_global_rejects: 20_000, ..Default::default() })]
        /// Keeping every field gives the record back; the split finds the
        /// fields the server reads in the record (a quote in the middle of
        /// a CSV field opens quotes again, as in `CopyReadAttributesCSV`),
        /// in both formats.
        #[test]
        fn the_split_finds_the_fields_the_server_reads(
            body in proptest::collection::vec(proptest::sample::select(b"ab,|\t\"\\".to_vec()), 0..40),
            csv in proptest::bool::ANY,
            escape in proptest::bool::ANY,
        ) {
            let mut format = FormatOptions::new(if csv { FormatKind::Csv } else { FormatKind::Tsv });
            if csv && escape {
                format.escape = Some(b'\\');
            }
            let splitter = Splitter { dialect: format.dialect(), delimiter: format.field_delimiter(), null: format.null_string().as_bytes() };
            let mut at = Vec::new();
            splitter.delimiters(&body, &mut at);
            // None: a quote left open, or an escape the server refuses.
            let server = crate::load::plan::header_fields(&body, &format);
            proptest::prop_assume!(server.is_some());
            proptest::prop_assert_eq!(at.len() + 1, server.unwrap().len());
            let picks = FieldPicks::new(vec![true; at.len() + 1]);
            let mut out = Vec::new();
            let mut record = body.clone();
            record.push(b'\n');
            pick_record(&record, splitter, LineEnd::Lf, &picks, &mut Vec::new(), &mut out);
            proptest::prop_assert_eq!(out, record);
        }
    }
}
