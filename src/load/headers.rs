//! Headers checked against the table before anything loads.
//!
//! COPY reads fields by position, so a header is only a promise about
//! which column each field lands in. These checks read every input's header
//! record (a block of each input) before the first COPY, and refuse an input
//! whose header would put a field into the wrong column, with the command
//! (`cut`, `--columns`) that fixes it: a refused input leaves the table as it
//! was.

use crate::chunk::{Chunker, ChunkerConfig, Preamble};
use crate::error::Error;
use crate::format::pick::FieldPicks;
use crate::format::{Dialect, FormatKind, FormatOptions};
use crate::report::count_of;
use crate::sink::postgres::TableInfo;
use crate::source::Source;
use crate::sql::{display_ident, quote_ident};

use super::plan::{self, HeaderColumns};
use super::{chunker_config, hints, LoadRequest};

/// The name of the input whose header names the columns, and the columns.
pub(super) type HeaderNames = (std::sync::Arc<str>, Vec<String>);
/// The columns a header names and which of its fields load.
type HeaderPicks = (Vec<String>, FieldPicks);

/// The inputs (by place) whose first record is data, not a header: under
/// `--header=first-file`, a later input whose first record is not the
/// first input's header (see [`Source::no_header`]). In input order.
pub(super) type WithoutHeader = Vec<usize>;

/// The columns the first header names (see [`HeaderColumns`]) and the name
/// of its input (an empty input has none), when `--header` is given, once
/// every other input's header is found to name the same: COPY reads fields by position, so an input whose header lists
/// the columns in another order would load into the wrong ones. A header
/// that names a column where position would put another (`Misplaced`), or
/// fields no column takes (`Unloadable`), or that follows one of labels but
/// names the columns in another order, is refused. All are read before anything loads (a block of each input), so
/// a refused input leaves the table as it was.
pub(super) fn names_in_headers(
    sources: &[Source],
    format: &FormatOptions,
    req: &LoadRequest,
    table: &TableInfo,
) -> Result<(Option<HeaderNames>, WithoutHeader), Error> {
    let mut without = WithoutHeader::new();
    if !format.header {
        return Ok((None, without));
    }
    let mut first: Option<(&Source, Vec<u8>, HeaderColumns)> = None;
    for (index, source) in sources.iter().enumerate() {
        let Some(header) = header_of(source, format, req)? else {
            continue;
        };
        let columns = plan::header_columns(table, &header, format);
        if let HeaderColumns::Misplaced { field, column, instead } = &columns {
            return Err(misplaced_header(source, &header, *field, column, instead.as_deref()));
        }
        if let HeaderColumns::Twice { column, fields, named } = &columns {
            return Err(a_column_named_twice(source, &header, column, *fields, named));
        }
        if let HeaderColumns::Unloadable { kept, others, generated } = &columns {
            return Err(unloadable_header(source, format, table, kept, others, generated));
        }
        if let Some(delimiter) = plan::header_delimiter(table, &header, format) {
            return Err(header_at_another_delimiter(source, &header, format, delimiter));
        }
        let Some((first_source, first_header, first_columns)) = &first else {
            first = Some((source, header, columns));
            continue;
        };
        let agrees = match (first_columns, &columns) {
            (HeaderColumns::Positional, HeaderColumns::Named(_))
                if format.header_in_first_file_only && !same_labels(first_header, &header, format) =>
            {
                return Err(the_header_further_on(source, &header, first_source, first_header));
            }
            (HeaderColumns::Positional, HeaderColumns::Named(names)) => plan::in_table_order(table, names),
            (HeaderColumns::Positional, _) if !same_labels(first_header, &header, format) => {
                without.push(a_record_there(source, &header, (first_source, first_header), format, index)?);
                true
            }
            (HeaderColumns::Named(_), HeaderColumns::Positional) => {
                without.push(a_record_there(source, &header, (first_source, first_header), format, index)?);
                true
            }
            (HeaderColumns::Positional, _) => true,
            (named, _) => *named == columns,
        };
        if !agrees {
            return Err(source.input_error(&format!(
                "its header ({}) is not the header of {} ({}), whose names sluice loads the columns by; load it \
                 on its own, or name the columns with --columns",
                String::from_utf8_lossy(&header).trim_end(),
                first_source.name,
                String::from_utf8_lossy(first_header).trim_end()
            )));
        }
    }
    let names = first.and_then(|(source, _, columns)| match columns {
        HeaderColumns::Named(names) => Some((source.name.clone(), names)),
        _ => None,
    });
    Ok((names, without))
}

/// Without `--header`, refuses a first input whose first record names
/// every column loaded (in any order) where each of those columns takes
/// its name as a value: a header, which would load as a row. Why: a staging
/// table of text columns took `id | name` as a row, with no reject and no
/// word, where a typed column rejects it and the summary says it looks like
/// a header (see `hints::header_warning`). `--no-header` loads it.
pub(super) fn refuse_a_header_taken_for_a_row(
    sources: &[Source],
    format: &FormatOptions,
    req: &LoadRequest,
    table: &TableInfo,
    columns: Option<&[String]>,
) -> Result<(), Error> {
    if format.header || req.no_header || format.kind == FormatKind::Jsonl || format.documents.is_some() {
        return Ok(());
    }
    let as_header = FormatOptions { header: true, ..format.clone() };
    let first_record = sources.iter().find_map(|source| Some((source, header_of(source, &as_header, req).ok()??)));
    let Some((source, record)) = first_record else { return Ok(()) };
    let Some(fields) = plan::header_fields(&record, format) else { return Ok(()) };
    let loaded = table.copy_columns(columns);
    if !plan::names_every_column(&loaded, &fields) {
        return Ok(());
    }
    // Loaded by position, as COPY reads it.
    if !loaded.iter().zip(&fields).all(|((name, sql_type), field)| takes_as_it_is(table, (name, sql_type), field)) {
        return Ok(());
    }
    Err(source.input_error(&format!(
        "its first line ({}) names the columns loaded, and each of them takes any text, so it would load as a row: \
         if it is a header, pass --header (it is skipped, and the columns it names load by name); if it is a \
         record, pass --no-header",
        String::from_utf8_lossy(&record).trim_end()
    )))
}

/// Whether `column` (its name and SQL type) takes `value` as it is: text,
/// a name, a character type long enough, or a type whose input is text's
/// own (citext). A typed column rejects a header's name.
fn takes_as_it_is(table: &TableInfo, (name, sql_type): (&String, &String), value: &str) -> bool {
    let fits = |length: &str| match length.strip_prefix('(').and_then(|n| n.strip_suffix(')')) {
        Some(most) => most.parse::<usize>().is_ok_and(|most| value.trim().chars().count() <= most),
        None => length.is_empty(),
    };
    match sql_type.as_str() {
        "text" | "name" => true,
        _ if table.text_like.contains(name) => true,
        _ => {
            sql_type.strip_prefix("character varying").or_else(|| sql_type.strip_prefix("character")).is_some_and(fits)
        }
    }
}

/// With `--columns` (which the header does not name the columns for), the
/// inputs whose first record is not the first input's header, which
/// `--header` would skip as one (see [`names_in_headers`]): a record of a
/// file `split -l` cut was lost without a word, one a file.
pub(super) fn first_records_that_are_not_the_header(
    sources: &[Source],
    format: &FormatOptions,
    req: &LoadRequest,
    table: &TableInfo,
) -> Result<WithoutHeader, Error> {
    let mut without = WithoutHeader::new();
    if !format.header {
        return Ok(without);
    }
    let mut first: Option<(&Source, Vec<u8>)> = None;
    for (index, source) in sources.iter().enumerate() {
        let Some(header) = header_of(source, format, req)? else { continue };
        let Some((first_source, first_header)) = &first else {
            first = Some((source, header));
            continue;
        };
        if same_labels(first_header, &header, format) {
            continue;
        }
        if let HeaderColumns::Named(_) = plan::header_columns(table, &header, format) {
            // Names the table's columns: a header, of other labels than
            // the first's.
            return Err(match format.header_in_first_file_only {
                true => the_header_further_on(source, &header, first_source, first_header),
                false => not_the_first_header(source, &header, first_source, first_header),
            });
        }
        without.push(a_record_there(source, &header, (first_source, first_header), format, index)?);
    }
    Ok(without)
}

/// `sources`, those at the places `without` marked as having no header.
pub(super) fn marked_without_header(sources: &[Source], without: &[usize]) -> Vec<Source> {
    let marked = |(index, source): (usize, &Source)| Source {
        no_header: without.binary_search(&index).is_ok(),
        ..source.clone()
    };
    sources.iter().enumerate().map(marked).collect()
}

/// What `--header=first-file` took for records, in the summary: the user
/// sees which of the files this run read it read as `split -l` parts.
pub(super) fn without_header_said(sources: &[Source]) -> Option<String> {
    let without: Vec<&str> = sources.iter().filter(|s| s.no_header).map(|s| &*s.name).collect();
    let names = super::job::names_listed(without.iter().copied());
    let (lines, records, they) = match without.len() {
        0 => return None,
        1 => ("line", "a record", "it is"),
        _ => ("lines", "records", "they are"),
    };
    Some(format!(
        "loading the first {lines} of {names} as {records}, as --header=first-file asks: {they} not the header \
         the first file begins with"
    ))
}

/// Whether two headers of labels (not the table's columns) are the same,
/// as fields, whatever their quoting, case and spaces around them.
fn same_labels(first: &[u8], other: &[u8], format: &FormatOptions) -> bool {
    let labels = |header: &[u8]| {
        plan::header_fields(header, format)
            .map(|fields| fields.iter().map(|f| f.trim().to_lowercase()).collect::<Vec<_>>())
            .unwrap_or_else(|| vec![String::from_utf8_lossy(header).trim().to_lowercase()])
    };
    labels(first) == labels(other)
}

/// Input `index`, whose first record is not the first input's header:
/// data, under `--header=first-file`; refused otherwise (see
/// [`not_the_first_header`]).
fn a_record_there(
    source: &Source,
    header: &[u8],
    (first_source, first_header): (&Source, &[u8]),
    format: &FormatOptions,
    index: usize,
) -> Result<usize, Error> {
    match format.header_in_first_file_only {
        true => Ok(index),
        false => Err(not_the_first_header(source, header, first_source, first_header)),
    }
}

/// A later input whose first line is not the first input's header, nor
/// names columns: most likely a record, from a file cut out of a larger
/// one, which keeps the header in its first part only (`split -l`). After
/// a header of labels, skipped as a header, one record of each such file
/// was lost without a word.
fn not_the_first_header(source: &Source, header: &[u8], first_source: &Source, first_header: &[u8]) -> Error {
    if source.skip_lines > 0 {
        return source.input_error(&format!(
            "its line {} ({}), the first after the {} --skip-lines skips, which --header skips as a header, is \
             not the header of {} ({}): the files may have other numbers of lines above their header; load those \
             with their own --skip-lines, each on its own",
            source.skip_lines + 1,
            String::from_utf8_lossy(header).trim_end(),
            count_of(source.skip_lines, "line"),
            first_source.name,
            String::from_utf8_lossy(first_header).trim_end()
        ));
    }
    source.input_error(&format!(
        "its first line ({}), which --header skips as a header, is not the header of {} ({}): if it is a \
         record (a file cut from a larger one keeps the header in its first part only), it would not load. Pass \
         --header=first-file, which loads such a line as a record (and skips a later file's first line that \
         repeats the header); or, if the headers differ on purpose, load each file on its own",
        String::from_utf8_lossy(header).trim_end(),
        first_source.name,
        String::from_utf8_lossy(first_header).trim_end()
    ))
}

/// Under `--header=first-file`, a later input whose first line names the
/// table's columns where the first input's does not: the header is likely
/// in that input, and the first input's first line, skipped as the header,
/// a record (parts loaded out of their order). Both were skipped.
fn the_header_further_on(source: &Source, header: &[u8], first_source: &Source, first_header: &[u8]) -> Error {
    source.input_error(&format!(
        "its first line ({}) names the table's columns, but the first file, {}, begins with {}, which \
         --header=first-file skips as the header: if the header is in this file, give it first (globs load in \
         sorted order), or name the columns with --columns",
        String::from_utf8_lossy(header).trim_end(),
        first_source.name,
        String::from_utf8_lossy(first_header).trim_end()
    ))
}

/// `--skip-other-fields`: the columns the first header names and which of
/// its fields load, once every other input's header is found to name the
/// same at the same places (a later file whose fields stand elsewhere would
/// load the wrong ones). A first header naming no column is refused: it is
/// likely not a header, or of another table. A later input's first record
/// naming none is a record (see [`a_record_there`]).
pub(super) fn fields_the_headers_name(
    sources: &[Source],
    format: &FormatOptions,
    req: &LoadRequest,
    table: &TableInfo,
) -> Result<(HeaderNames, FieldPicks, WithoutHeader), Error> {
    let mut first: Option<(&Source, Vec<u8>, HeaderPicks)> = None;
    let mut without = WithoutHeader::new();
    for (index, source) in sources.iter().enumerate() {
        let Some(header) = header_of(source, format, req)? else { continue };
        let named = plan::fields_a_header_names(table, &header, format);
        match (&first, named) {
            (Some((first_source, first_header, _)), None) => {
                without.push(a_record_there(source, &header, (first_source, first_header), format, index)?);
            }
            (None, None) => {
                if let HeaderColumns::Twice { column, fields, named } = plan::header_columns(table, &header, format) {
                    return Err(a_column_named_twice(source, &header, &column, fields, &named));
                }
                return Err(source.input_error(&format!(
                    "its header ({}) names no column of {}, so --skip-other-fields cannot tell \
                     which fields to load; check --delimiter, or name the columns with --columns, a - for each \
                     field to leave out",
                    String::from_utf8_lossy(&header).trim_end(),
                    table.display()
                )));
            }
            (None, Some(named)) => first = Some((source, header, named)),
            (Some((_, _, same)), Some(named)) if *same == named => {}
            (Some((first_source, first_header, _)), Some(_)) => {
                return Err(source.input_error(&format!(
                    "its header ({}) names other columns, or at other places, than the header of {} ({}); load it on \
                     its own",
                    String::from_utf8_lossy(&header).trim_end(),
                    first_source.name,
                    String::from_utf8_lossy(first_header).trim_end()
                )))
            }
        }
    }
    let Some((source, _, (names, picks))) = first else {
        return Err(Error::Usage("--skip-other-fields: no input has a header to read the columns from".into()));
    };
    Ok(((source.name.clone(), names), picks, without))
}

/// A header that names the table's columns when split at `delimiter`, not
/// at the load's: see [`plan::header_delimiter`].
fn header_at_another_delimiter(source: &Source, header: &[u8], format: &FormatOptions, delimiter: u8) -> Error {
    source.input_error(&format!(
        "its header ({}) names the table's columns when split at {}; pass {}",
        String::from_utf8_lossy(header).trim_end(),
        hints::delimiter_shown(delimiter),
        format.flag_for_delimiter(delimiter)
    ))
}

/// `--columns` naming the columns an input's header names, in another
/// order: COPY would load each field into the column `--columns` puts at
/// its place, which the header says is another's, and columns of one type
/// take that silently. Every input's header is read (as when loading by the
/// headers' names), so a later file of a glob cannot load swapped. A
/// header of other labels is not checked.
pub(super) fn refuse_columns_a_header_reorders(
    sources: &[Source],
    format: &FormatOptions,
    req: &LoadRequest,
    table: &TableInfo,
    given: &[String],
) -> Result<(), Error> {
    if !format.header {
        return Ok(());
    }
    let sorted = |names: &[String]| {
        let mut names = names.to_vec();
        names.sort();
        names
    };
    for source in sources {
        let Some(header) = header_of(source, format, req)? else { continue };
        let HeaderColumns::Named(named) = plan::header_columns(table, &header, format) else { continue };
        if named.as_slice() == given || sorted(&named) != sorted(given) {
            continue;
        }
        return Err(source.input_error(&format!(
            "its header ({}) names the columns of --columns ({}) in another order, so its fields would load \
             into each other's columns; leave out --columns to load by the header's names, or give them in the \
             file's order",
            String::from_utf8_lossy(&header).trim_end(),
            given.join(",")
        )));
    }
    Ok(())
}

/// A header some of whose fields no column takes (see
/// [`HeaderColumns::Unloadable`]), with the command that cuts them out.
fn unloadable_header(
    source: &Source,
    format: &FormatOptions,
    table: &TableInfo,
    kept: &[usize],
    others: &[(usize, String)],
    generated: &[(usize, String)],
) -> Error {
    let listed = |fields: &[(usize, String)], name: &dyn Fn(&str) -> String| {
        fields_naming(&fields.iter().map(|(i, f)| (*i, name(f))).collect::<Vec<_>>())
    };
    let mut why = Vec::new();
    if !generated.is_empty() {
        let kind = if generated.len() == 1 { "a generated column" } else { "generated columns" };
        why.push(format!("{} {kind}, which the server computes", listed(generated, &|name| quote_ident(name))));
    }
    if !others.is_empty() {
        // A header that ends with the delimiter, as the lines of some
        // exports do, names its last field by nothing.
        let fields = kept.len() + others.len() + generated.len();
        let label = |index: usize, name: &str| match (name.is_empty(), index + 1 == fields) {
            (true, true) => "empty: the header ends with the delimiter, as some exports end every line".to_string(),
            (true, false) => "empty".to_string(),
            (false, _) => name.to_string(),
        };
        let labelled: Vec<(usize, String)> = others.iter().map(|(i, name)| (*i, label(*i, name))).collect();
        why.push(format!("{} no column of {}", listed(&labelled, &|name| name.to_string()), table.display()));
    }
    let all: Vec<usize> = others.iter().chain(generated).map(|(i, _)| i + 1).collect();
    let (those, them) = if all.len() == 1 { ("that field", "it") } else { ("those fields", "them") };
    let mut advice = format!("cut {them} out first ({}", cut_command(source, format, kept));
    if format.kind == FormatKind::Csv {
        let delimiter = match format.field_delimiter() {
            b',' => String::new(),
            other => format!("-d {} ", shell_byte(other)),
        };
        advice.push_str(&format!(
            ", or, where values hold the delimiter inside quotes, a CSV tool: csvcut {delimiter}-C {}",
            field_list(&all)
        ));
    }
    advice.push(')');
    if !others.is_empty() {
        advice.push_str(if others.len() == 1 {
            ", or add a column for it to the table"
        } else {
            ", or add columns for them to the table"
        });
    }
    source.input_error(&format!(
        "its header names columns of the table, but {}; COPY can neither load {those} nor leave {them} out, so \
         pass --skip-other-fields, which leaves {them} out on the way, or {advice}",
        why.join(", and ")
    ))
}

/// How many fields [`fields_naming`] lists.
const FIELDS_LISTED: usize = 8;

/// "field 3 (x) names" or "fields 3 (x), 6 (y) name", of fields numbered
/// from 0: the first [`FIELDS_LISTED`], and how many more (a file whose
/// lines end in no line feed is one header of thousands of fields).
fn fields_naming(fields: &[(usize, String)]) -> String {
    let each: Vec<String> = fields.iter().take(FIELDS_LISTED).map(|(i, name)| format!("{} ({name})", i + 1)).collect();
    match (fields.len(), fields.len().saturating_sub(FIELDS_LISTED)) {
        (1, _) => format!("field {} names", each[0]),
        (_, 0) => format!("fields {} name", each.join(", ")),
        (_, more) => format!("fields {} and {more} more name", each.join(", ")),
    }
}

/// The shell command that writes `source`'s text with only the fields
/// `kept` (from 0).
fn cut_command(source: &Source, format: &FormatOptions, kept: &[usize]) -> String {
    let delimiter = match format.field_delimiter() {
        b'\t' => String::new(),
        other => format!("-d {} ", shell_byte(other)),
    };
    let fields: Vec<usize> = kept.iter().map(|i| i + 1).collect();
    let cut = format!("cut {delimiter}-f {}", field_list(&fields));
    let file = crate::source::shell_word(&source.name);
    match (source.name.as_ref(), source.compression.cat_command()) {
        ("-", _) => format!("... | {cut}"),
        (_, Some(cat)) => format!("{cat} {file} | {cut}"),
        (_, None) => format!("{cut} {file}"),
    }
}

/// A byte as a shell word: `,` as is, `;` quoted.
fn shell_byte(byte: u8) -> String {
    crate::source::shell_word(&char::from(byte).to_string())
}

/// Field numbers as cut takes them, runs of three or more as ranges:
/// `1,2,4,6-9`.
pub(super) fn field_list(fields: &[usize]) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &field in fields {
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == field => *last = field,
            _ => runs.push((field, field)),
        }
    }
    let run = |&(first, last): &(usize, usize)| match last - first {
        0 => first.to_string(),
        1 => format!("{first},{last}"),
        _ => format!("{first}-{last}"),
    };
    runs.iter().map(run).collect::<Vec<_>>().join(",")
}

fn misplaced_header(source: &Source, header: &[u8], field: usize, column: &str, instead: Option<&str>) -> Error {
    let instead = match instead {
        Some(other) => format!("into column {}", quote_ident(other)),
        None => "past the table's last column".to_string(),
    };
    source.input_error(&format!(
        "its header ({}) names column {} as field {}, but not every field is a column's name, so the fields \
         would load by position, field {} {instead}; make every field of the header a column's name (to load \
         by name), or give the file's columns in order with --columns",
        String::from_utf8_lossy(header).trim_end(),
        quote_ident(column),
        field + 1,
        field + 1,
    ))
}

/// The refusal of a header whose fields `first` and `second` (from 0) name
/// `column` (see [`HeaderColumns::Twice`]), with the `--columns` that
/// loads the first of them and leaves the second out.
fn a_column_named_twice(
    source: &Source,
    header: &[u8],
    column: &str,
    (first, second): (usize, usize),
    named: &[Option<String>],
) -> Error {
    let columns: Vec<String> = named
        .iter()
        .enumerate()
        .map(|(field, name)| match name {
            Some(name) if field != second => display_ident(name),
            _ => "-".to_string(),
        })
        .collect();
    source.input_error(&format!(
        "its header ({}) names column {} twice, as fields {} and {}, and a column loads one field; say which field \
         goes into which column with --columns, in the file's order, a - for a field to leave out (--columns {}), \
         or rename one of them in the header",
        String::from_utf8_lossy(header).trim_end(),
        quote_ident(column),
        first + 1,
        second + 1,
        columns.join(",")
    ))
}

/// A first input that begins with `sep=;` (and a line end), the line
/// Excel reads as the file's delimiter and some exports write first, is
/// refused, with the flags that load it (`--skip-lines 1` and the
/// delimiter). Why: taken for the header (or a record) it named no column,
/// and every record after it was rejected at the delimiter given, or the
/// comma. Only the first input is read: a glob's files come from one tool.
pub(super) fn refuse_a_separator_line(sources: &[Source]) -> Result<(), Error> {
    let (name, head) = super::first_look::first_head(sources);
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&head);
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let (Some(&delimiter), true) = (line.strip_prefix(b"sep=").and_then(|d| d.first()), line.len() == 5) else {
        return Ok(());
    };
    if head.len() == line.len() {
        return Ok(());
    }
    let source = sources.iter().find(|s| s.name == name).unwrap_or(&sources[0]);
    Err(source.input_error(&format!(
        "its {}, sep={}, is a note for Excel of the file's delimiter, not a header or a record: load it with \
         --skip-lines {} --delimiter {}",
        match source.skip_lines {
            0 => "first line".to_string(),
            skipped => format!("line {}", skipped + 1),
        },
        char::from(delimiter),
        source.skip_lines + 1,
        shell_byte(delimiter)
    )))
}

/// An input's header record (`None`: the input is empty): from the file's
/// start, or from the head of stdin or a pipe (read ahead when it was
/// opened), so columns are matched by name whatever the input. A header
/// that runs past that head is refused rather than taken in part.
fn header_of(source: &Source, format: &FormatOptions, req: &LoadRequest) -> Result<Option<Vec<u8>>, Error> {
    let (preamble, whole) = preamble_of(source, chunker_config((format, source), req, 1, false, None))?;
    if preamble.header_lines > 1 {
        refuse_a_header_that_runs_on(source, format, &preamble)?;
    }
    if !preamble.header_ended && !whole {
        return Err(source.input_error(&format!(
            "its header does not end within the first {} read ahead; name the columns with --columns",
            crate::report::human_bytes(crate::source::STREAM_HEAD as u64)
        )));
    }
    Ok((preamble.header_records > 0).then_some(preamble.header))
}

/// What `source` holds above its data, as a chunker with `config` skips
/// it from the input's start, and whether the input was read whole.
pub(super) fn preamble_of(source: &Source, config: ChunkerConfig) -> Result<(Preamble, bool), Error> {
    let (stream, raw, whole) = source.open_start()?;
    let config = ChunkerConfig { record_cap: None, ..config };
    let preamble = Chunker::new(stream, config, 0, 0).read_preamble().map_err(|e| source.read_error(&e, raw.get()))?;
    Ok((preamble, whole))
}

/// A CSV header whose first line holds a quote inside a value written
/// without quotes (`Size 5"`): COPY, and sluice with it, reads that quote
/// as opening a quoted value, so the header runs on to the line where
/// another quote closes it, or to the end of the input, and every line in
/// between was skipped as part of it, without a word: such a file loaded
/// 0 rows and exited 0. A header whose line break stands inside a value
/// quoted from its start (a spreadsheet's two-line label) is left alone.
fn refuse_a_header_that_runs_on(source: &Source, format: &FormatOptions, preamble: &Preamble) -> Result<(), Error> {
    let Dialect::Csv { quote, escape } = format.dialect() else { return Ok(()) };
    let first_line = preamble.header.split(|&b| b == b'\n' || b == b'\r').next().unwrap_or_default();
    let Some(field) = quote_inside_a_bare_value(first_line, format.field_delimiter(), quote, escape) else {
        return Ok(());
    };
    let runs_to = match preamble.header_ended {
        true => format!("on to line {}", preamble.skipped_lines + preamble.header_lines),
        false => "to the end of the input".to_string(),
    };
    Err(source.input_error(&format!(
        "its header's field {} (in {}) holds a quote inside a value written without quotes, which CSV reads as \
         opening a quoted value: the header runs {runs_to}, and the lines in it would not load. Write that \
         value in quotes, with its quote doubled (Size 5\" as \"Size 5\"\"\"), or name the columns with --columns and load \
         without --header (line {} is then rejected as a record). If the line is a title above the data, \
         --skip-lines N skips the N lines above the header",
        field + 1,
        String::from_utf8_lossy(first_line),
        preamble.skipped_lines + 1,
    )))
}

/// The field (from 0) of a CSV line where a quote stands inside a value
/// written without quotes, or after a quoted value's closing quote: where
/// COPY opens a quoted value that the writer did not mean.
fn quote_inside_a_bare_value(line: &[u8], delimiter: u8, quote: u8, escape: u8) -> Option<usize> {
    let (mut field, mut at_start, mut quoted) = (0, true, false);
    let mut bytes = line.iter().peekable();
    while let Some(&b) = bytes.next() {
        if quoted {
            let next = bytes.peek().copied().copied();
            if b == escape && (next == Some(quote) || (escape != quote && next == Some(escape))) {
                bytes.next();
            } else if b == quote {
                quoted = false;
            }
        } else if b == delimiter {
            (field, at_start) = (field + 1, true);
        } else if b == quote && at_start {
            (quoted, at_start) = (true, false);
        } else if b == quote {
            return Some(field);
        } else {
            at_start = false;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quote_inside_a_bare_value_is_found_and_quoted_values_are_not() {
        let find = |line: &str| quote_inside_a_bare_value(line.as_bytes(), b',', b'"', b'"');
        assert_eq!(find(r#"id,Size 5",name"#), Some(1));
        assert_eq!(find(r#"id,"Size 5""",name"#), None, "a doubled quote in a quoted value");
        assert_eq!(find(r#"id,"Amount"#), None, "a quoted value that goes on past the line");
        assert_eq!(find(r#""a,b"x,c"#), None, "a quote closes, then a bare tail: no new quote");
        assert_eq!(find(r#""a"b"c",d"#), Some(0), "a quote after the closing one opens another");
        assert_eq!(find(r#"a,b,c""#), Some(2));
        assert_eq!(quote_inside_a_bare_value(br#""a\"b",c"x"#, b',', b'"', b'\\'), Some(1), "escaped quote");
    }

    #[test]
    fn a_header_s_fields_are_listed_up_to_a_few() {
        let fields = |n: usize| (0..n).map(|i| (i + 2, format!("f{i}"))).collect::<Vec<_>>();
        assert_eq!(fields_naming(&fields(1)), "field 3 (f0) names");
        assert_eq!(fields_naming(&fields(2)), "fields 3 (f0), 4 (f1) name");
        let eight = fields_naming(&fields(8));
        assert!(eight.starts_with("fields 3 (f0), ") && eight.ends_with(", 10 (f7) name"), "{eight}");
        let many = fields_naming(&fields(2000));
        assert!(many.ends_with(", 10 (f7) and 1992 more name"), "{many}");
    }

    #[test]
    fn field_numbers_as_cut_takes_them() {
        assert_eq!(field_list(&[1, 2, 4, 6, 7, 8, 9]), "1,2,4,6-9");
        assert_eq!(field_list(&[3]), "3");
        assert_eq!(field_list(&[1, 2, 3, 5, 6]), "1-3,5,6");
    }
}
