//! Deciding what to run before any byte is copied: the format, the target
//! columns, the COPY statement and whether chunks go as binary.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::error::Error;
use crate::format::binary::{unescape_text, BinaryEncoder};
use crate::format::convert::{self, Conversion, NumberMarks, NumberWriting, TimeUnit, UnixTimes};
use crate::format::documents::{self, ColumnKind, DocumentColumns};
use crate::format::pick::FieldPicks;
use crate::format::{FormatKind, FormatOptions, COMMON_DELIMITERS};
use crate::sink::postgres::{PgSession, TableInfo};
use crate::source::Source;
use crate::sql::{display_ident, parse_qualified_name, quote_ident};

/// The format from `--format`, or guessed from the first named file, or
/// else from the first line of the first input (see [`format_by_content`]).
pub fn resolve_kind(given: Option<FormatKind>, sources: &[Source]) -> Result<FormatKind, Error> {
    if let Some(kind) = given {
        return Ok(kind);
    }
    let guessed: Vec<FormatKind> =
        sources.iter().filter_map(|s| s.path.as_deref().and_then(FormatKind::guess)).collect();
    match guessed.first() {
        Some(&kind) if guessed.iter().all(|&k| k == kind) => Ok(kind),
        Some(_) => Err(Error::Usage("the inputs have different extensions; say which format with --format".into())),
        None => format_by_content(sources).map(|(kind, _)| kind).ok_or_else(|| {
            Error::Usage(format!(
                "cannot tell the format of {} from its name or its first line; pass --format csv, tsv or jsonl",
                sources[0].name
            ))
        }),
    }
}

/// The format of inputs whose names say none (stdin, `.dat`), from the
/// first input's first line, with why: a JSON object (jsonl), commas and
/// no tab (csv), tabs and no comma (tsv); `None` when it could be either.
/// Why: psql reads stdin as its text format and timescaledb-parallel-copy
/// as CSV, so a user piping `zcat x.csv.gz` into sluice expects one of
/// them; a wrong guess rejects every line (a line of one format splits
/// into the wrong fields in the other), and the warning says which was taken.
pub fn format_by_content(sources: &[Source]) -> Option<(FormatKind, &'static str)> {
    let (_, head) = super::first_look::first_head(sources);
    let head = head.strip_prefix(documents::BOM).unwrap_or(&head);
    let line = head.split(|&b| b == b'\n').find(|line| !line.trim_ascii().is_empty())?;
    let (commas, tabs) = (line.contains(&b','), line.contains(&b'\t'));
    match line.trim_ascii_start().first() {
        Some(b'{') => Some((FormatKind::Jsonl, "a JSON object")),
        Some(b'[') if crate::format::json_values::are_json_values(head) => {
            Some((FormatKind::Jsonl, "a JSON array of documents"))
        }
        _ if commas && !tabs => Some((FormatKind::Csv, "commas, no tab")),
        _ if tabs && !commas => Some((FormatKind::Tsv, "tabs, no comma")),
        _ => None,
    }
}

/// The warning for a format taken from the inputs' first line (see
/// [`format_by_content`]).
pub fn format_by_content_said(given: Option<FormatKind>, sources: &[Source]) -> Option<String> {
    let named = sources.iter().any(|s| s.path.as_deref().and_then(FormatKind::guess).is_some());
    let (kind, why) = format_by_content(sources).filter(|_| given.is_none() && !named)?;
    // Read as lines made of them, its first line is a document.
    let why = if sources[0].json_values.is_some() { "JSON documents" } else { why };
    Some(format!(
        "{}: no format in its name; loading it as {} by its first line ({why}); pass --format to say otherwise",
        sources[0].name,
        kind.name()
    ))
}

/// The table's columns a row must be given: NOT NULL, without a default
/// (of their own or their domain's), not an identity (a generated column's
/// expression is its `pg_attrdef` row).
const REQUIRED_COLUMNS: &str = "SELECT a.attname FROM pg_catalog.pg_attribute a \
    JOIN pg_catalog.pg_type t ON t.oid = a.atttypid \
    LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
    WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attnotnull \
    AND d.adbin IS NULL AND a.attidentity = '' AND NOT (t.typtype = 'd' AND t.typdefaultbin IS NOT NULL) \
    ORDER BY a.attnum";

/// Refuses a load whose columns (from `--columns`, a header or the
/// documents' keys) leave out a column every row must be given: each row
/// would be refused, and the load would stop after its first 1,000
/// records, blaming no option in particular. Not where a BEFORE INSERT
/// row trigger may fill it.
pub fn refuse_required_left_out(
    control: &PgSession,
    table: &TableInfo,
    columns: Option<&[String]>,
) -> Result<(), Error> {
    let Some(columns) = columns.filter(|_| table.before_row_triggers.is_empty() && !table.is_view) else {
        return Ok(());
    };
    let rows = control.query(REQUIRED_COLUMNS, &[Some(&table.oid.to_string())])?;
    let left_out: Vec<String> = rows
        .into_iter()
        .filter_map(|row| row.into_iter().next().flatten())
        .filter(|name| !columns.contains(name))
        .collect();
    let Some(first) = left_out.first() else { return Ok(()) };
    let names: Vec<String> = left_out.iter().map(|name| display_ident(name)).collect();
    Err(Error::Target(format!(
        "{} {} of {} {} NOT NULL without a default, and the columns loaded ({}) leave {} out: every row would be \
         refused. Load {} too (--columns names the columns loaded), or give it a default (ALTER TABLE {} ALTER \
         COLUMN {} SET DEFAULT ...)",
        if left_out.len() == 1 { "column" } else { "columns" },
        names.join(", "),
        table.display(),
        if left_out.len() == 1 { "is" } else { "are" },
        columns.iter().map(|c| display_ident(c)).collect::<Vec<_>>().join(", "),
        if left_out.len() == 1 { "it" } else { "them" },
        if left_out.len() == 1 { "it" } else { "them" },
        table.display(),
        quote_ident(first)
    )))
}

/// The role, the table's owner, whether the role may empty the table, the
/// table's columns it may not insert into (separated by 0x1F), and the
/// sequences it may not take values from (`nextval` needs USAGE or UPDATE)
/// that columns' defaults take them from: a serial's, or a `DEFAULT
/// nextval(...)` (an identity's needs no right of its own, and has no
/// `pg_attrdef` row to depend on it), each as its
/// column, its name and its owner, separated by 0x1E. The CASE keeps the
/// privilege check from a relation that is no sequence: the planner may
/// evaluate it before the join has filtered them out.
const RIGHTS: &str = "SELECT current_user, pg_catalog.pg_get_userbyid(c.relowner), \
     pg_catalog.has_table_privilege(c.oid, 'TRUNCATE')::text, \
     coalesce((SELECT string_agg(a.attname, E'\\x1f' ORDER BY a.attnum) FROM pg_catalog.pg_attribute a \
       WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped \
       AND NOT pg_catalog.has_column_privilege(c.oid, a.attnum, 'INSERT')), ''), \
     coalesce((SELECT string_agg(a.attname || E'\\x1e' || s.oid::regclass::text || E'\\x1e' \
         || pg_catalog.pg_get_userbyid(s.relowner), E'\\x1f' ORDER BY a.attnum) \
       FROM pg_catalog.pg_attribute a \
       JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
       JOIN pg_catalog.pg_depend dep ON dep.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass \
         AND dep.objid = d.oid AND dep.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass \
       JOIN pg_catalog.pg_class s ON s.oid = dep.refobjid AND s.relkind = 'S' \
       WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped \
         AND CASE WHEN s.relkind = 'S' THEN NOT pg_catalog.has_sequence_privilege(s.oid, 'USAGE') \
           AND NOT pg_catalog.has_sequence_privilege(s.oid, 'UPDATE') END), '') \
     FROM pg_catalog.pg_class c WHERE c.oid = $1::int8::oid";

/// Refuses, before anything is set up, a load the role has not the right
/// to do: insert into a loaded column, take a value from the sequence of
/// a column left to its default (a serial key the file leaves out), or with
/// `--truncate`, empty the table. COPY said so only at the first chunk
/// (`COPY refused: permission denied for table t`), with advice to resume
/// once the cause is fixed, after the job was opened in the ledger; and
/// of the sequence, at each record: every record was rejected, `permission
/// denied for sequence t_id_seq` (a role given INSERT on a table and not
/// USAGE on its serial's sequence, PostgreSQL's classic).
pub fn refuse_without_rights(
    control: &PgSession,
    table: &TableInfo,
    columns: Option<&[String]>,
    truncate: bool,
) -> Result<(), Error> {
    let rows = control.query(RIGHTS, &[Some(&table.oid.to_string())])?;
    let Some(row) = rows.first() else { return Ok(()) };
    let text = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
    let (role, owner) = (quote_ident(&text(0)), quote_ident(&text(1)));
    let barred: Vec<String> = text(3).split('\x1f').map(str::to_string).collect();
    let loaded = table.copy_columns(columns);
    let cannot: Vec<&str> =
        loaded.iter().map(|(name, _)| name.as_str()).filter(|c| barred.iter().any(|b| b == c)).collect();
    let ask = |grant: String| {
        format!("ask its owner, {owner} (or a superuser), to run {grant} TO {role}, or load as a role that may")
    };
    if !cannot.is_empty() {
        let all = cannot.len() == loaded.len();
        let (what, grant) = match all {
            true => (String::new(), format!("GRANT INSERT ON {}", table.quoted())),
            false => {
                let names: Vec<String> = cannot.iter().map(|c| quote_ident(c)).collect();
                (
                    format!(" column {}", names.join(", ")),
                    format!("GRANT INSERT ({}) ON {}", names.join(", "), table.quoted()),
                )
            }
        };
        return Err(Error::Target(format!(
            "role {role} may not insert into{what} {}: {}",
            if all { table.display() } else { format!("of {}", table.display()) },
            ask(grant)
        )));
    }
    let sequences = text(4);
    let mut taken = sequences.split('\x1f').filter_map(|taken| {
        let mut parts = taken.split('\x1e');
        Some((parts.next()?, parts.next()?, parts.next()?))
    });
    let left_out = |column: &str| !loaded.iter().any(|(name, _)| name == column);
    if let Some((column, sequence, sequence_owner)) = taken.find(|(column, ..)| left_out(column)) {
        return Err(Error::Target(format!(
            "role {role} may not take values from sequence {sequence}, which gives column {column} of {} its \
             default, and the columns loaded leave {column} out: ask its owner, {} (or a superuser), to run GRANT \
             USAGE ON SEQUENCE {sequence} TO {role}, or load as a role that may",
            table.display(),
            quote_ident(sequence_owner),
            column = quote_ident(column),
        )));
    }
    if truncate && text(2) != "true" {
        return Err(Error::Target(format!(
            "role {role} may not empty {} (--truncate): {}; or leave --truncate out",
            table.display(),
            ask(format!("GRANT TRUNCATE ON {}", table.quoted()))
        )));
    }
    Ok(())
}

/// Each of `columns`' conversion under `format`'s `--decimal-comma`,
/// `--thousands` and `--unix-times`, with the column's name, in order: empty when no column
/// has one.
pub fn conversions(columns: &[(String, String)], format: &FormatOptions) -> Vec<Option<(Conversion, String)>> {
    let each = columns.iter().map(|(name, ty)| {
        let unit = format.unix_times.map(UnixTimes::unit_to_begin_with);
        Conversion::for_column(ty, format.number_conversion(), unit).map(|c| (c, name.clone()))
    });
    let each: Vec<_> = each.collect();
    match each.iter().any(Option::is_some) {
        true => each,
        false => Vec::new(),
    }
}

/// What `--decimal-comma` (or `--thousands`) and `--unix-times` do in
/// this load, for the start of its summary: the columns they convert, or
/// that they convert none; `unconverted`, the time columns `--unix-times
/// auto` could not tell a unit for.
pub fn conversions_said(
    converted: &[(Conversion, String)],
    unconverted: &[String],
    format: &FormatOptions,
) -> Vec<String> {
    let mut said = Vec::new();
    if let Some(Conversion::Number(writing)) = format.number_conversion() {
        let names = |integers: bool| -> Vec<String> {
            let named = |c: &Conversion| matches!(c, Conversion::Number(w) if w.zero_fractions || !integers);
            converted.iter().filter(|(c, _)| named(c)).map(|(_, name)| display_ident(name)).collect()
        };
        let marked = NumberWriting { zero_fractions: false, ..writing };
        if marked != NumberWriting::PLAIN {
            let (flag, written) = number_writing_said(Conversion::Number(marked));
            said.push(match names(false).as_slice() {
                [] => format!("{flag}: no loaded column is a number, so nothing is converted"),
                names => format!("reading the numbers of {} {written}, as asked", names.join(", ")),
            });
        }
        if writing.zero_fractions {
            said.push(match names(true).as_slice() {
                [] => "--zero-fractions: no loaded column is an integer, so nothing is converted".to_string(),
                names => format!(
                    "loading values with a fraction of zeros (3.0) in {} as the integers they are, as asked",
                    names.join(", ")
                ),
            });
        }
    }
    if let Some(unix_times) = format.unix_times {
        said.extend(unix_times_said(converted, unconverted, unix_times));
    }
    said
}

/// The flags that say how numbers are written (`--currency, --thousands`)
/// and how, in words (`as amounts in $ with commas between thousands`).
fn number_writing_said(numbers: Conversion) -> (String, String) {
    let Conversion::Number(writing) = numbers else { return Default::default() };
    let (mut flags, mut written) = (Vec::new(), Vec::new());
    if let Some(currency) = writing.currency {
        flags.push("--currency");
        written.push(format!("as amounts in {}", currency.as_str()));
    }
    match writing.marks {
        NumberMarks::Plain => {}
        NumberMarks::DecimalComma => {
            flags.push("--decimal-comma");
            written.push("with a decimal comma".into());
        }
        NumberMarks::Thousands(mark) => {
            flags.push("--thousands");
            written.push(format!("with {} between thousands", convert::mark_words(mark)));
        }
    }
    if writing.percent {
        flags.push("--percent");
        written.push("(a percentage as its hundredth: 12.5% as 0.125)".into());
    }
    if writing.trailing_minus {
        flags.push("--trailing-minus");
        written.push("(negative ones with the minus after the digits: 5- as -5)".into());
    }
    (flags.join(", "), written.join(" "))
}

/// What `--unix-times` does in this load (see [`conversions_said`]).
fn unix_times_said(converted: &[(Conversion, String)], unconverted: &[String], unix_times: UnixTimes) -> Vec<String> {
    let mut said = Vec::new();
    let timed: Vec<(TimeUnit, String)> = converted
        .iter()
        .filter_map(|(c, name)| match c {
            Conversion::UnixTime { unit, .. } => Some((*unit, display_ident(name))),
            Conversion::Number(_) => None,
        })
        .collect();
    if !unconverted.is_empty() {
        let (column, its, it) =
            if unconverted.len() == 1 { ("column", "its", "it") } else { ("columns", "their", "them") };
        said.push(format!(
            "--unix-times auto: the first records of {column} {} hold no number to tell {its} unit by, so {its} \
             values load as written (a number in {it} is rejected, naming the unit it likely is in)",
            quoted_list(unconverted)
        ));
    }
    if timed.is_empty() && unconverted.is_empty() {
        let flag = match unix_times {
            UnixTimes::Unit(unit) => unit.flag(),
            UnixTimes::Auto => "auto",
        };
        said.push(format!("--unix-times {flag}: no loaded column is a date or timestamp, so nothing is converted"));
    }
    let why = match unix_times {
        UnixTimes::Unit(_) => "as asked",
        UnixTimes::Auto => "as their first records' numbers read (--unix-times auto)",
    };
    let mut units: Vec<TimeUnit> = Vec::new();
    for (unit, _) in &timed {
        if !units.contains(unit) {
            units.push(*unit);
        }
    }
    for unit in units {
        let names: Vec<&str> = timed.iter().filter(|(u, _)| *u == unit).map(|(_, name)| name.as_str()).collect();
        said.push(format!("reading numbers in {} as Unix times in {} (UTC), {why}", names.join(", "), unit.words()));
    }
    said
}

/// The columns COPY names: `--columns` (checked against the table), for
/// jsonl the table's one json/jsonb column, otherwise all of them (`None`).
pub fn choose_columns(
    table: &TableInfo,
    given: Option<&[String]>,
    kind: FormatKind,
) -> Result<Option<Vec<String>>, Error> {
    if let Some(columns) = given {
        return columns.iter().map(|c| find_column(table, c)).collect::<Result<Vec<_>, _>>().map(Some);
    }
    if kind != FormatKind::Jsonl {
        return Ok(None);
    }
    let json: Vec<&String> =
        table.columns.iter().filter(|(_, ty)| ty == "json" || ty == "jsonb").map(|(name, _)| name).collect();
    match json.as_slice() {
        [one] => Ok(Some(vec![(*one).clone()])),
        _ if table.columns.len() == 1 => Ok(Some(vec![table.columns[0].0.clone()])),
        [] => Err(Error::Target(format!(
            "table {} has no json or jsonb column for the documents; name one with --columns (columns: {})",
            table.display(),
            column_list(table)
        ))),
        _ => Err(Error::Target(format!(
            "table {} has several json columns; say which gets the documents with --columns",
            table.display()
        ))),
    }
}

/// `--columns` as the columns it names and, when it marks fields to leave
/// out with `-` (`id,-,name`), which fields load (see
/// [`crate::format::pick`]).
pub fn fields_left_out(
    given: Option<&[String]>,
    (kind, header): (FormatKind, bool),
    skip_other_fields: bool,
) -> Result<(Option<Vec<String>>, Option<FieldPicks>), Error> {
    if skip_other_fields && given.is_some() {
        return Err(Error::Usage(
            "--skip-other-fields reads the fields to load from a CSV or TSV header, or a JSON document's keys; with \
             --columns, mark each field to leave out with a - instead (--columns id,-,name), and a JSON document's \
             keys no column takes are left out already"
                .into(),
        ));
    }
    if skip_other_fields && !header && kind != FormatKind::Jsonl {
        return Err(Error::Usage(
            "--skip-other-fields reads the fields to load from the header: pass --header too (or, with no header, \
             mark each field to leave out with a - in --columns: id,-,name)"
                .into(),
        ));
    }
    let Some(given) = given else { return Ok((None, None)) };
    let kept: Vec<bool> = given.iter().map(|name| name.trim() != "-").collect();
    if kept.iter().all(|&k| k) {
        return Ok((Some(given.to_vec()), None));
    }
    if kind == FormatKind::Jsonl {
        return Err(Error::Usage(
            "--columns: a `-` leaves out a field of CSV or TSV records; a JSON document's keys are named, and those \
             --columns does not name are left out already"
                .into(),
        ));
    }
    let names: Vec<String> = given.iter().filter(|name| name.trim() != "-").cloned().collect();
    if names.is_empty() {
        return Err(Error::Usage("--columns names no column, only fields to leave out (-)".into()));
    }
    Ok((Some(names), Some(FieldPicks::new(kept))))
}

/// For jsonl: whether each document goes whole into one column (the
/// column `--columns` names when no document at the start of the input,
/// `head`, has a key of that name; the table's only column when it is json
/// or jsonb or no key names it; its one json or jsonb column when no key
/// names one of its other columns) rather than its keys' values into the
/// columns of the same names (see [`document_columns`]). Why not whole
/// whenever there is one json column: documents whose keys name the
/// table's columns, but one, would load whole into it, every other column
/// NULL, without a reject to show it; they are refused for that key. Why
/// the key where one names the column: `{"id":7}` loaded whole into a
/// bigint column (`--columns id`, or a table of that one column) was
/// rejected, every document of the file.
pub fn whole_documents<'h>(table: &TableInfo, given: Option<&[String]>, head: impl FnOnce() -> &'h [u8]) -> bool {
    if let Some(names) = given {
        return names.len() == 1 && !documents::keys_in(head()).iter().any(|(key, _)| key == names[0].trim());
    }
    if let [(_, ty)] = table.columns.as_slice() {
        let loadable = column_names(table);
        let names_it = |key: &str| spelt_in(&loadable, key).is_some() || find_column(table, key).is_ok();
        return is_json(ty) || !documents::keys_in(head()).iter().any(|(key, _)| names_it(key));
    }
    let json: Vec<&String> = table.columns.iter().filter(|(_, ty)| is_json(ty)).map(|(name, _)| name).collect();
    let names_another = |key: &str| find_column(table, key).is_ok_and(|column| !json.contains(&&column));
    json.len() == 1 && !documents::keys_in(head()).iter().any(|(key, _)| names_another(key))
}

fn is_json(ty: &str) -> bool {
    ColumnKind::of_type(ty) == ColumnKind::Json
}

/// Which key of the documents goes to which column: those `--columns`
/// names (each the key of the same name; other keys are left out), or else
/// every key in the documents at the start of the input (`head`, read from
/// `input`), each of which must name a column (as a header's field does:
/// see [`spelt_in`]) unless `skip_other_keys` (`--skip-other-fields`)
/// leaves out those that name none.
///
/// Why check the named keys against the head (and `across`, which reads
/// blocks of documents from across the inputs, see `first_look::across`,
/// only for a named key the head's documents lack): a misspelt
/// one would load NULL into its column in every row, without a reject to
/// show it. Why `across` too: a key that only documents further in have
/// could not be named at all, and such documents were all rejected.
pub fn document_columns(
    table: &TableInfo,
    (given, skip_other_keys): (Option<&[String]>, bool),
    (input, head): (&str, &[u8]),
    across: impl Fn() -> Vec<Vec<u8>>,
) -> Result<DocumentColumns, Error> {
    let keys = documents::keys_in(head);
    let head_size = crate::report::human_bytes(head.len() as u64);
    let column_type = |name: &str| table.columns.iter().find(|(n, _)| n == name).map_or("", |(_, ty)| ty.as_str());
    let mut pairs: Vec<(String, String, ColumnKind)> = Vec::new();
    // The line each key of `pairs` was first seen on (0: named by --columns).
    let mut lines: Vec<u64> = Vec::new();
    let wanted: Vec<(String, u64)> = match given {
        Some(names) => names.iter().map(|n| (n.trim().to_string(), 0)).collect(),
        // No input holds a document (an export of no rows, `[]`): nothing
        // to load, and no key to take the columns from.
        None if head.strip_prefix(documents::BOM).unwrap_or(head).trim_ascii().is_empty() => {
            column_names(table).into_iter().map(|column| (column, 0)).collect()
        }
        None if keys.is_empty() => {
            return Err(Error::Usage(format!(
                "found no JSON object in the first {head_size} of {input} to take the columns from; name the \
                 columns to load with --columns (each is loaded from the key of the same name)"
            )))
        }
        None => keys.clone(),
    };
    let loadable = column_names(table);
    let mut left_out = Vec::new();
    // The keys of the documents read from across the inputs, for a key
    // `--columns` names that the head's documents do not have.
    let later_keys = std::cell::OnceCell::new();
    let in_later_documents =
        |key: &str| later_keys.get_or_init(|| documents::keys_in(&across().concat())).iter().any(|(k, _)| k == key);
    for (key, line) in wanted {
        // A key names its column as a header's field does (`orderId` names
        // order_id); a name given with --columns is a column's, as SQL reads it.
        let spelt = given.is_none().then(|| spelt_in(&loadable, &key)).flatten();
        let found = spelt.map_or_else(|| find_column(table, &key), Ok);
        if found.is_err() && skip_other_keys {
            left_out.push((key, line));
            continue;
        }
        let column = found.map_err(|e| match given {
            Some(_) => e,
            None => Error::Target(format!(
                "the documents' key \"{key}\" ({input} line {line}) {} of table {}; its columns COPY can fill \
                 are: {}. Pass --skip-other-fields to leave out the keys that name no column, or name the columns \
                 to load with --columns (other keys are then left out)",
                match named_in(&table.generated, &key) {
                    Some(_) => "names a generated column, which the server computes,",
                    None => "is not a column",
                },
                table.display(),
                column_list(table)
            )),
        })?;
        if given.is_some() && !keys.is_empty() && !keys.iter().any(|(k, _)| *k == key) && !in_later_documents(&key) {
            return Err(Error::Usage(format!(
                "--columns names \"{key}\", but no document in the first {head_size} of {input}, nor of those read \
                 from across the inputs, has that key (they have: {}), so its column would be NULL in every row; \
                 name the columns by the documents' keys",
                keys.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(", ")
            )));
        }
        if let Some(at) = pairs.iter().position(|(c, _, _)| *c == column) {
            let (other, other_line) = (&pairs[at].1, lines[at]);
            if given.is_some() {
                return Err(Error::Usage(format!("--columns names column \"{column}\" twice")));
            }
            return Err(Error::Usage(format!(
                "the documents' keys \"{other}\" ({input} line {other_line}) and \"{key}\" (line {line}) both name \
                 column \"{column}\" of table {}, and a document with both would fill it twice. If they are one \
                 field spelt two ways, spell it one way first; to load the key \"{column}\" alone, name the columns \
                 to load with --columns (each is loaded from the key of its name; other keys are left out)",
                table.display()
            )));
        }
        let kind = ColumnKind::of_type(column_type(&column));
        pairs.push((column, key, kind));
        lines.push(line);
    }
    if pairs.is_empty() {
        return Err(Error::Target(format!(
            "no key of the documents in the first {head_size} of {input} names a column of table {} (its columns \
             COPY can fill are: {}); name the columns to load with --columns",
            table.display(),
            column_list(table)
        )));
    }
    let mut columns = DocumentColumns::new(pairs, given.is_some() || skip_other_keys);
    columns.keys_left_out = left_out;
    if given.is_none() && !skip_other_keys {
        columns.unloaded = loadable.iter().filter(|name| !columns.columns.contains(name)).cloned().collect();
    }
    columns.no_documents = given.is_none() && keys.is_empty();
    Ok(columns)
}

/// What a header record says about where its fields go.
#[derive(Debug, PartialEq, Eq)]
pub enum HeaderColumns {
    /// Every field names a column of the table (as `--columns` would), once
    /// each: load those columns, by name. Why: COPY reads fields by
    /// position, so a file whose header lists the columns in another order,
    /// or leaves some out (an identity or a `DEFAULT now()` column), loads
    /// into the wrong columns or not at all; the header says which is which.
    Named(Vec<String>),
    /// Labels, another table's names, or a header sluice cannot read (an
    /// open quote, bytes that are not UTF-8): loaded by position, as COPY
    /// does, since no field names a column that position would fill from
    /// another field.
    Positional,
    /// Field `field` (from 0) names `column`, while loading by position
    /// would put it into `instead` (`None`: past the table's last column).
    /// Why refused: a header that names the columns in another order with
    /// one name misspelt would otherwise load by position, each value into
    /// its neighbour's column, and columns of one type take that silently.
    Misplaced { field: usize, column: String, instead: Option<String> },
    /// Fields `fields` (from 0) name the same column. Why refused: by name
    /// a column loads once, and by position one of them would go into
    /// another column; the refusal for a misplaced field said that not
    /// every field named a column, which each did.
    Twice { column: String, fields: (usize, usize), named: Vec<Option<String>> },
    /// The header names columns, but some fields name none COPY can fill:
    /// `others` name no column (and there are not as many fields as the
    /// table has columns), `generated` name generated columns; each with
    /// its index (from 0). `kept`: the fields that name columns. Why
    /// refused: COPY cannot leave a field out, so by position every record
    /// would be rejected (`missing data for column`, `extra data after last
    /// expected column`: a header of three names and an empty field, as an
    /// export that ends each line with a comma writes, into a table of five
    /// columns), or (a generated column's field) load into the next column.
    Unloadable { kept: Vec<usize>, others: Vec<(usize, String)>, generated: Vec<(usize, String)> },
}

/// Reads a header record against the table's columns (see [`HeaderColumns`]).
pub fn header_columns(table: &TableInfo, header: &[u8], format: &FormatOptions) -> HeaderColumns {
    let Some(fields) = header_fields(header, format) else {
        return HeaderColumns::Positional;
    };
    let (named, distinct) = columns_named(table, &fields);
    if let Some((column, fields)) = named_twice(&named) {
        return HeaderColumns::Twice { column, fields, named };
    }
    let found: Vec<&String> = named.iter().flatten().collect();
    if distinct && found.len() == fields.len() {
        return HeaderColumns::Named(found.into_iter().cloned().collect());
    }
    let generated: Vec<(usize, String)> = (fields.iter().enumerate())
        .filter_map(|(field, f)| Some((field, spelt_in(&table.generated, f.trim())?)))
        .collect();
    if distinct && !found.is_empty() && (!generated.is_empty() || fields.len() != table.columns.len()) {
        let (kept, unnamed): (Vec<usize>, Vec<usize>) = (0..fields.len()).partition(|&i| named[i].is_some());
        let others = unnamed
            .into_iter()
            .filter(|i| !generated.iter().any(|(g, _)| g == i))
            .map(|i| (i, fields[i].trim().to_string()))
            .collect();
        return HeaderColumns::Unloadable { kept, others, generated };
    }
    let by_position = |field: usize| table.columns.get(field).map(|(name, _)| name);
    named
        .into_iter()
        .enumerate()
        .find_map(|(field, column)| {
            let column = column?;
            let instead = by_position(field);
            (instead != Some(&column)).then(|| HeaderColumns::Misplaced { field, column, instead: instead.cloned() })
        })
        .unwrap_or(HeaderColumns::Positional)
}

/// `--skip-other-fields`: the columns `header`'s fields name, in its order,
/// and which of its fields load (those naming a column COPY fills, read as
/// [`header_columns`] reads them); `None` when it names none, or one twice.
pub fn fields_a_header_names(
    table: &TableInfo,
    header: &[u8],
    format: &FormatOptions,
) -> Option<(Vec<String>, FieldPicks)> {
    let (named, distinct) = columns_named(table, &header_fields(header, format)?);
    let names: Vec<String> = named.iter().flatten().cloned().collect();
    (distinct && !names.is_empty()).then(|| (names, FieldPicks::new(named.iter().map(Option::is_some).collect())))
}

/// The first column two fields of `named` name, and the two fields.
fn named_twice(named: &[Option<String>]) -> Option<(String, (usize, usize))> {
    named.iter().enumerate().find_map(|(second, column)| {
        let column = column.as_ref()?;
        let first = named[..second].iter().position(|c| c.as_ref() == Some(column))?;
        Some((column.clone(), (first, second)))
    })
}

/// The column each header field names (see [`spelt_in`]), and whether no
/// column is named twice.
fn columns_named(table: &TableInfo, fields: &[String]) -> (Vec<Option<String>>, bool) {
    let columns = column_names(table);
    let named: Vec<Option<String>> = fields.iter().map(|f| spelt_in(&columns, f.trim())).collect();
    let found: Vec<&String> = named.iter().flatten().collect();
    let distinct = found.iter().collect::<std::collections::HashSet<_>>().len() == found.len();
    (named, distinct)
}

/// Whether a field of `header` names a column of the table (as
/// [`header_columns`] reads names).
pub fn names_a_column(table: &TableInfo, header: &[u8], format: &FormatOptions) -> bool {
    header_fields(header, format).is_some_and(|fields| columns_named(table, &fields).0.iter().any(Option::is_some))
}

/// Whether each of `fields` names a distinct column of `loaded` (name and
/// SQL type) and every one is named, in any order (as [`header_columns`]
/// reads a header's names).
pub fn names_every_column(loaded: &[(String, String)], fields: &[String]) -> bool {
    let names: Vec<String> = loaded.iter().map(|(name, _)| name.clone()).collect();
    let named: Option<std::collections::HashSet<String>> =
        fields.iter().map(|field| spelt_in(&names, field.trim())).collect();
    fields.len() == names.len() && named.is_some_and(|named| named.len() == names.len())
}

/// Another common delimiter at which `header`, which names no column at
/// the load's own, names two or more of the table's columns: the file's
/// delimiter, most likely (a semicolon-separated export named `.csv`).
/// Why: every record would be rejected, and the load stop only after 1,000.
pub fn header_delimiter(table: &TableInfo, header: &[u8], format: &FormatOptions) -> Option<u8> {
    if format.kind == FormatKind::Jsonl || header_columns(table, header, format) != HeaderColumns::Positional {
        return None;
    }
    COMMON_DELIMITERS.into_iter().find(|&delimiter| {
        let other = format.at_delimiter(delimiter);
        matches!(header_columns(table, header, &other), HeaderColumns::Named(names) if names.len() >= 2)
    })
}

/// All of the table's columns in its order: what COPY takes without a
/// column list.
pub fn in_table_order(table: &TableInfo, names: &[String]) -> bool {
    names.iter().eq(table.columns.iter().map(|(name, _)| name))
}

/// A header record's fields as the server reads the record: split at the
/// delimiter, text-format escapes read, CSV quotes and escapes removed.
/// `None` for an open quote or bytes that are not UTF-8. A header sluice
/// could not read was loaded by position: with `--escape '\'` a header
/// naming the columns in another order loaded each field into another's
/// column (found by a random test of whole loads).
pub(crate) fn header_fields(header: &[u8], format: &FormatOptions) -> Option<Vec<String>> {
    let mut fields = Vec::new();
    match format.kind {
        FormatKind::Jsonl => return None,
        FormatKind::Tsv => {
            let delimiter = format.delimiter.unwrap_or(b'\t');
            let (mut raw, mut bytes) = (Vec::new(), header.iter());
            let mut raw_fields = Vec::new();
            while let Some(&b) = bytes.next() {
                match b {
                    b'\\' => {
                        raw.push(b);
                        raw.push(*bytes.next()?);
                    }
                    b if b == delimiter => raw_fields.push(std::mem::take(&mut raw)),
                    b => raw.push(b),
                }
            }
            raw_fields.push(raw);
            for raw in raw_fields {
                let mut value = Vec::new();
                unescape_text(&raw, &mut value).ok()?;
                fields.push(value);
            }
        }
        FormatKind::Csv => {
            let (delimiter, quote) = (format.delimiter.unwrap_or(b','), format.quote.unwrap_or(b'"'));
            let escape = format.escape.unwrap_or(quote);
            let (mut field, mut quoted, mut bytes) = (Vec::new(), false, header.iter().peekable());
            while let Some(&b) = bytes.next() {
                match b {
                    // Inside quotes an escape makes the quote or escape after it a byte of the value.
                    b if quoted && b == escape && bytes.peek().is_some_and(|&&n| n == quote || n == escape) => {
                        field.extend(bytes.next());
                    }
                    b if b == quote => quoted = !quoted,
                    b if b == delimiter && !quoted => fields.push(std::mem::take(&mut field)),
                    b => field.push(b),
                }
            }
            if quoted {
                return None;
            }
            fields.push(field);
        }
    }
    fields.into_iter().map(|f| String::from_utf8(f).ok()).collect()
}

/// `format` with `--force-null` and `--force-not-null` naming the table's
/// columns as the table spells them (found as `--columns` finds them), `*`
/// as every column loaded. A column the COPY does not load is refused here:
/// the server would refuse the statement, in words that do not name the
/// flag.
pub fn resolve_forced(
    table: &TableInfo,
    columns: Option<&[String]>,
    format: &FormatOptions,
) -> Result<FormatOptions, Error> {
    let loaded: Vec<String> = table.copy_columns(columns).into_iter().map(|(name, _)| name).collect();
    let resolve = |flag: &str, given: &[String]| -> Result<Vec<String>, Error> {
        if given.iter().any(|name| name == "*") {
            return Ok(loaded.clone());
        }
        let mut names: Vec<String> = Vec::new();
        for name in given {
            let column = find_column(table, name)?;
            if !loaded.contains(&column) {
                return Err(Error::Usage(format!(
                    "{flag}: column \"{column}\" is not among the columns loaded ({})",
                    loaded.join(", ")
                )));
            }
            if !names.contains(&column) {
                names.push(column);
            }
        }
        Ok(names)
    };
    let mut resolved = format.clone();
    resolved.force_null = resolve("--force-null", &format.force_null)?;
    resolved.force_not_null = resolve("--force-not-null", &format.force_not_null)?;
    Ok(resolved)
}

/// The table's column that `given` names: as written, or else as psql
/// reads it in SQL (`"Total"` keeps its case, bare `Total` is `total`).
pub(super) fn find_column(table: &TableInfo, given: &str) -> Result<String, Error> {
    if let Some(name) = named_in(&column_names(table), given) {
        return Ok(name);
    }
    if let Some(name) = named_in(&table.generated, given) {
        return Err(Error::Target(format!(
            "column {} of table {} is a generated column: the server computes it, and COPY cannot load it; \
             leave it out (the columns COPY can fill: {})",
            quote_ident(&name),
            table.display(),
            column_list(table)
        )));
    }
    Err(Error::Target(format!(
        "column \"{given}\" does not exist in table {}; its columns are: {}",
        table.display(),
        column_list(table)
    )))
}

/// The name among `names` that a header's field names: as `--columns`
/// would (see [`named_in`]), or else as a label that spells one name and no
/// other when case and everything but letters and digits are left out:
/// `Order ID`, `order-id` and `OrderId` name `order_id`. Why: exports from
/// spreadsheets and reporting tools label columns so, and such a header in
/// another order than the table's loaded by position, each value into
/// another's column (all text: nothing refused it).
fn spelt_in(names: &[String], field: &str) -> Option<String> {
    if let Some(name) = named_in(names, field) {
        return Some(name);
    }
    let wanted = crate::sql::folded_name(field);
    let mut spelt = names.iter().filter(|name| !wanted.is_empty() && crate::sql::folded_name(name) == wanted);
    match (spelt.next(), spelt.next()) {
        (Some(name), None) => Some(name.clone()),
        _ => None,
    }
}

/// The name among `names` that `given` names: as written, or else as psql
/// reads it in SQL.
fn named_in(names: &[String], given: &str) -> Option<String> {
    let as_sql = match parse_qualified_name(given) {
        Some(mut parts) if parts.len() == 1 => parts.pop(),
        _ => None,
    };
    [Some(given.to_string()), as_sql].into_iter().flatten().find(|wanted| names.contains(wanted))
}

/// The names of the columns COPY can fill.
fn column_names(table: &TableInfo) -> Vec<String> {
    table.columns.iter().map(|(name, _)| name.clone()).collect()
}

fn column_list(table: &TableInfo) -> String {
    table.columns.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
}

/// `COPY "s"."t" ("a", "b") FROM STDIN WITH (FORMAT csv, ...)`.
///
/// For json lines, `FORCE_NOT_NULL` makes an empty line an empty document,
/// which the server refuses, so it becomes a reject naming its line: CSV
/// mode would load it as a NULL row that no input record asked for.
pub fn copy_statement(table: &TableInfo, columns: Option<&[String]>, format: &FormatOptions) -> String {
    let mut options: Vec<String> = format.copy_options().into_iter().map(|(k, v)| format!("{k} {v}")).collect();
    if let (FormatKind::Jsonl, Some([column])) = (format.kind, columns) {
        options.push(format!("FORCE_NOT_NULL ({})", quote_ident(column)));
    }
    format!("{} WITH ({})", copy_target(table, columns), options.join(", "))
}

/// `COPY "s"."t" ("a", "b") FROM STDIN`.
fn copy_target(table: &TableInfo, columns: Option<&[String]>) -> String {
    let columns = match columns {
        Some(cols) => format!(" ({})", cols.iter().map(|c| quote_ident(c)).collect::<Vec<_>>().join(", ")),
        None => String::new(),
    };
    format!("COPY {}{columns} FROM STDIN", table.quoted())
}

/// `--copy-format`: how chunks travel to the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CopyFormat {
    /// Binary where it pays (see [`Codec::pays`](crate::format::binary::Codec::pays)) and every
    /// column has an encoder, else text.
    #[default]
    Auto,
    Text,
    /// Binary, or a usage error naming the column that prevents it.
    Binary,
}

/// Binary COPY for this load: the statement, the encoder each worker clones,
/// and how often chunks fell back to text.
#[derive(Debug)]
pub struct BinaryPlan {
    pub sql: String,
    pub encoder: BinaryEncoder,
    tried: AtomicU64,
    fell_back: AtomicU64,
    first_fallback: Mutex<Option<String>>,
}

impl BinaryPlan {
    /// Whether to try binary for the next chunk: not once most chunks have
    /// fallen back (a column in a form the encoder does not read), since each
    /// fallback wastes the part of the chunk already sent.
    pub fn wanted(&self) -> bool {
        let fell_back = self.fell_back.load(Ordering::Relaxed);
        fell_back < 3 || fell_back * 2 < self.tried.load(Ordering::Relaxed)
    }

    pub fn note_try(&self) {
        self.tried.fetch_add(1, Ordering::Relaxed);
    }

    pub fn note_fallback(&self, why: String) {
        self.fell_back.fetch_add(1, Ordering::Relaxed);
        self.first_fallback.lock().expect("not poisoned").get_or_insert(why);
    }

    /// Why the first chunk that fell back to text did.
    pub fn first_fallback(&self) -> Option<String> {
        self.first_fallback.lock().expect("not poisoned").clone()
    }
}

/// The binary plan, or why chunks go as text.
pub fn choose_copy_format(
    wanted: CopyFormat,
    table: &TableInfo,
    columns: Option<&[String]>,
    format: &FormatOptions,
) -> Result<Result<BinaryPlan, String>, Error> {
    if wanted == CopyFormat::Text {
        return Ok(Err("--copy-format text".into()));
    }
    let encoder = BinaryEncoder::new(&table.encoded_columns(columns), format).map(|e| e.reading(table.session_dates()));
    match encoder {
        Ok(encoder) if wanted == CopyFormat::Auto && !encoder.pays() => Ok(Err(
            "mostly integer, text and similar columns: the server reads their text about as fast as sluice encodes them"
                .into(),
        )),
        Ok(encoder) => Ok(Ok(BinaryPlan {
            sql: format!("{} WITH (FORMAT binary)", copy_target(table, columns)),
            encoder,
            tried: AtomicU64::new(0),
            fell_back: AtomicU64::new(0),
            first_fallback: Mutex::new(None),
        })),
        Err(why) if wanted == CopyFormat::Binary => Err(Error::Usage(format!("--copy-format binary: {why}"))),
        Err(why) => Ok(Err(why)),
    }
}

/// `names`, each in double quotes, joined by commas.
pub fn quoted_list(names: &[String]) -> String {
    names.iter().map(|name| format!("\"{name}\"")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A table `public."T x"` of `cols` (name, type), for tests.
    pub(crate) fn table(cols: &[(&str, &str)]) -> TableInfo {
        TableInfo {
            oid: 16384,
            schema: "public".into(),
            name: "T x".into(),
            columns: cols.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
            not_null: Vec::new(),
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
    fn a_header_of_column_names_in_another_order_names_the_columns() {
        let t = table(&[("id", "integer"), ("Name", "text"), ("amount", "numeric")]);
        let csv = FormatOptions::new(FormatKind::Csv);
        let names = |header: &str| match header_columns(&t, header.as_bytes(), &csv) {
            HeaderColumns::Named(names) => Some(names),
            _ => None,
        };
        let list = |l: &[&str]| Some(l.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(names("amount,Name"), list(&["amount", "Name"]));
        assert_eq!(names(r#" AMOUNT ,"Name",id"#), list(&["amount", "Name", "id"]), "trimmed, unquoted, as psql reads");
        assert!(!in_table_order(&t, &names(r#" AMOUNT ,"Name",id"#).unwrap()));
        assert!(!in_table_order(&t, &names("id,Name").unwrap()), "one left out");
        assert!(in_table_order(&t, &names("id,\"Name\",AMOUNT\r\n").unwrap()), "the table's order: nothing to change");
        assert_eq!(names("id,name,total"), None, "a label that is no column");
        assert_eq!(names("AMOUNT,name"), list(&["amount", "Name"]), "as SQL, or spelt so");
        assert_eq!(names("Amount ($),N-A-M-E,ID"), list(&["amount", "Name", "id"]), "labels spelling the names");
        assert_eq!(names("amount,"), None, "an empty label names nothing");
        assert_eq!(names(r#""amount,Name"#), None, "an open quote");
        let mut tsv = FormatOptions::new(FormatKind::Tsv);
        assert_eq!(header_columns(&t, b"amount\tid", &tsv), HeaderColumns::Named(list(&["amount", "id"]).unwrap()));
        assert_eq!(header_columns(&t, b"amount\\\tid", &tsv), HeaderColumns::Positional, "one field: amount, tab, id");
        assert_eq!(header_columns(&t, b"amou\\156t\tid", &tsv), HeaderColumns::Named(list(&["amount", "id"]).unwrap()));
        let escaped = FormatOptions { escape: Some(b'\\'), ..FormatOptions::new(FormatKind::Csv) };
        let named = HeaderColumns::Named(list(&["amount", "Name", "id"]).unwrap());
        assert_eq!(header_columns(&t, br#""amount","Name",id"#, &escaped), named, "--escape '\\'");
        let kept = Some(vec!["amount".to_string(), "Na\\me".into(), "id".into()]);
        assert_eq!(header_fields(br#""amount","Na\\me",id"#, &escaped), kept, "a backslash before m stays");
        tsv.delimiter = Some(b'|');
        assert_eq!(header_columns(&t, b"Name|amount", &tsv), HeaderColumns::Named(list(&["Name", "amount"]).unwrap()));
    }

    #[test]
    fn a_header_that_names_columns_at_another_delimiter_says_which() {
        let t = table(&[("id", "integer"), ("Name", "text"), ("amount", "numeric")]);
        let csv = FormatOptions::new(FormatKind::Csv);
        assert_eq!(header_delimiter(&t, b"id;Name;amount\n", &csv), Some(b';'));
        assert_eq!(header_delimiter(&t, b"amount|id\n", &csv), Some(b'|'), "some columns, in another order");
        assert_eq!(header_delimiter(&t, b"id\tName\n", &FormatOptions::new(FormatKind::Tsv)), None, "its own");
        assert_eq!(header_delimiter(&t, b"id,Name,amount\n", &csv), None, "named at the load's own");
        assert_eq!(header_delimiter(&t, b"a;b;c\n", &csv), None, "labels");
        assert_eq!(header_delimiter(&t, b"id;x\n", &csv), None, "one column's name is not a header");
    }

    #[test]
    fn a_header_that_names_a_column_another_field_would_fill_is_refused() {
        let t = table(&[("id", "integer"), ("Name", "text"), ("amount", "numeric")]);
        let csv = FormatOptions::new(FormatKind::Csv);
        let read = |header: &str| header_columns(&t, header.as_bytes(), &csv);
        let misplaced = |field: usize, column: &str, instead: Option<&str>| HeaderColumns::Misplaced {
            field,
            column: column.into(),
            instead: instead.map(String::from),
        };
        assert_eq!(read("id,name,total"), HeaderColumns::Positional, "names where position puts them");
        assert_eq!(read("key,label,value"), HeaderColumns::Positional, "labels only");
        assert_eq!(read("Name,id,total"), misplaced(0, "Name", Some("id")), "a misspelt name among swapped ones");
        let twice = HeaderColumns::Twice { column: "id".into(), fields: (0, 1), named: vec![Some("id".into()); 2] };
        assert_eq!(read("id,id"), twice, "a name twice");
    }

    #[test]
    fn a_header_with_fields_no_column_takes_says_which() {
        let mut t = table(&[("id", "integer"), ("Name", "text"), ("n", "integer")]);
        t.generated = vec!["twice".into()];
        let csv = FormatOptions::new(FormatKind::Csv);
        let read = |header: &str| header_columns(&t, header.as_bytes(), &csv);
        let unloadable = |kept: &[usize], others: &[(usize, &str)], generated: &[(usize, &str)]| {
            let owned = |l: &[(usize, &str)]| l.iter().map(|&(i, n)| (i, n.to_string())).collect();
            HeaderColumns::Unloadable { kept: kept.to_vec(), others: owned(others), generated: owned(generated) }
        };
        assert_eq!(read("id,notes,Name,n,region"), unloadable(&[0, 2, 3], &[(1, "notes"), (4, "region")], &[]));
        assert_eq!(read("id, Twice "), unloadable(&[0], &[], &[(1, "twice")]), "fewer fields than columns");
        assert_eq!(read("id,Name,twice,x"), unloadable(&[0, 1], &[(3, "x")], &[(2, "twice")]));
        assert_eq!(read("id,Name,x"), HeaderColumns::Positional, "a label where a column goes");
        assert_eq!(read("ID,Name,Twice,x"), unloadable(&[0, 1], &[(3, "x")], &[(2, "twice")]), "spelt so");
        assert_eq!(read("a,b,c,d"), HeaderColumns::Positional, "labels only: COPY's own error");
        let named = ["n", "id", "n"].map(|c| Some(c.to_string())).into_iter().chain([None]).collect();
        assert_eq!(read("n,id,n,x"), HeaderColumns::Twice { column: "n".into(), fields: (0, 2), named });
    }

    #[test]
    fn jsonl_picks_the_single_json_column() {
        let t = table(&[("id", "bigint"), ("doc", "jsonb")]);
        assert_eq!(choose_columns(&t, None, FormatKind::Jsonl).unwrap(), Some(vec!["doc".to_string()]));
        let t2 = table(&[("a", "json"), ("b", "jsonb")]);
        assert!(choose_columns(&t2, None, FormatKind::Jsonl).is_err());
        assert_eq!(choose_columns(&t, None, FormatKind::Csv).unwrap(), None);
    }

    #[test]
    fn auto_uses_binary_only_where_it_pays() {
        let csv = FormatOptions::new(FormatKind::Csv);
        let plain = table(&[("id", "integer"), ("name", "text")]);
        let why = choose_copy_format(CopyFormat::Auto, &plain, None, &csv).unwrap().unwrap_err();
        assert!(why.contains("about as fast"), "{why}");
        assert!(choose_copy_format(CopyFormat::Binary, &plain, None, &csv).unwrap().is_ok());
        let priced = table(&[("id", "integer"), ("price", "numeric(15,2)")]);
        let plan = choose_copy_format(CopyFormat::Auto, &priced, None, &csv).unwrap().unwrap();
        assert_eq!(plan.sql, "COPY \"public\".\"T x\" FROM STDIN WITH (FORMAT binary)");
        let few = table(&[("a", "integer"), ("b", "text"), ("c", "text"), ("d", "text"), ("price", "numeric")]);
        assert!(choose_copy_format(CopyFormat::Auto, &few, None, &csv).unwrap().is_err(), "one column in five");
        let text = choose_copy_format(CopyFormat::Text, &priced, None, &csv).unwrap();
        assert!(text.is_err());
        let odd = table(&[("cost", "money")]);
        assert!(choose_copy_format(CopyFormat::Binary, &odd, None, &csv).is_err(), "forced binary cannot be done");
    }

    #[test]
    fn unknown_column_lists_the_real_ones() {
        let t = table(&[("id", "bigint")]);
        let err = choose_columns(&t, Some(&["nope".to_string()]), FormatKind::Csv).unwrap_err();
        assert_eq!(err.to_string(), "column \"nope\" does not exist in table public.\"T x\"; its columns are: id");
    }

    #[test]
    fn columns_as_written_or_as_sql_names() {
        let t = table(&[("id", "bigint"), ("Total", "numeric"), ("total", "numeric")]);
        let names = |given: &[&str]| {
            let given: Vec<String> = given.iter().map(|g| g.to_string()).collect();
            choose_columns(&t, Some(&given), FormatKind::Csv).map(Option::unwrap)
        };
        assert_eq!(names(&["Total", "ID"]).unwrap(), ["Total", "id"]);
        assert_eq!(names(&["\"Total\"", "TOTAL"]).unwrap(), ["Total", "total"]);
        assert!(names(&["\"ID\""]).is_err(), "a quoted name keeps its case");
    }

    #[test]
    fn statement_quotes_every_identifier() {
        let t = table(&[("a", "int")]);
        let sql = copy_statement(&t, Some(&["a".into()]), &FormatOptions::new(FormatKind::Tsv));
        assert_eq!(sql, "COPY \"public\".\"T x\" (\"a\") FROM STDIN WITH (FORMAT text)");
        let sql = copy_statement(&t, Some(&["a".into()]), &FormatOptions::new(FormatKind::Jsonl));
        assert!(sql.ends_with(", FORCE_NOT_NULL (\"a\"))"), "{sql}");
    }

    #[test]
    fn forced_columns_are_named_as_the_table_names_them() {
        let t = table(&[("id", "bigint"), ("Note", "text"), ("tag", "text")]);
        let forced = |null: &[&str], not_null: &[&str], columns: Option<&[String]>| {
            let mut csv = FormatOptions::new(FormatKind::Csv);
            csv.force_null = null.iter().map(|n| n.to_string()).collect();
            csv.force_not_null = not_null.iter().map(|n| n.to_string()).collect();
            resolve_forced(&t, columns, &csv).map(|f| (f.force_null, f.force_not_null))
        };
        let (null, not_null) = forced(&["Note", "TAG", "tag"], &["*"], None).unwrap();
        assert_eq!(
            (null, not_null),
            (vec!["Note".to_string(), "tag".into()], vec!["id".into(), "Note".into(), "tag".into()])
        );
        let loaded = ["tag".to_string(), "id".to_string()];
        assert_eq!(forced(&["*"], &[], Some(&loaded)).unwrap().0, loaded, "* is the columns loaded, in their order");
        let err = forced(&[], &["Note"], Some(&loaded)).unwrap_err().to_string();
        assert_eq!(err, "--force-not-null: column \"Note\" is not among the columns loaded (tag, id)");
        assert!(forced(&["nope"], &[], None).is_err());
        let mut csv = FormatOptions::new(FormatKind::Csv);
        csv.force_null = vec!["Note".into()];
        csv.force_not_null = vec!["id".into(), "Note".into()];
        let sql = copy_statement(&t, None, &csv);
        assert!(sql.ends_with("FORMAT csv, FORCE_NOT_NULL (\"id\", \"Note\"), FORCE_NULL (\"Note\"))"), "{sql}");
    }
}
