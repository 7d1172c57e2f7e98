//! Checking a refused chunk's suspects with the server's input functions,
//! all in one statement, instead of copying each suspect alone.
//!
//! Why our own: this is what keeps a file with many bad values fast. Each
//! COPY statement isolation sends costs a round trip and some 35 µs of the
//! server's time; on a file with one bad record in 20, one COPY per
//! suspect loaded at a fifth of the clean throughput, and half of sluice's
//! own time went to waking up for the replies (bench/README.md).
//!
//! How: the suspects' fields are split exactly as COPY splits them (the
//! binary encoder's splitter with every column read as text, so quotes,
//! escapes, NULL strings and forced columns are the server's), sent as one
//! array per column, and assigned, record by record, to PL/pgSQL variables
//! of the columns' types inside one exception block: the type's input
//! function and modifier run as COPY runs them, and the first column that
//! fails is the one COPY would name. A record the check refuses with a data
//! error (SQLSTATE class 22) is rejected with the server's own message; a
//! record whose every value passes was a wrong guess and goes with the
//! unsuspected records; every other goes to COPY alone as before. Records
//! expected to pass (those whose key the table holds) go first through one
//! statement without the exception block, which costs a third as much, and
//! through the check only when one of their values fails. COPY
//! still decides constraints, triggers and anything the check cannot
//! (domains are checked as their base type, so their constraints are
//! COPY's). The function lives in the
//! session's temporary schema, made again with each check because the
//! chunk's transaction may roll it back.
//!
//! When the check cannot run, it is rolled back to the savepoint and
//! isolation goes on as before. A value the database's encoding cannot hold
//! fails that chunk's check only; anything else (no right to create
//! temporary objects, say) stops the checks for the rest of the load. A
//! table of more than 100 checked columns (a function's limit) has none.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::Error;
use crate::format::binary::BinaryEncoder;
use crate::format::FormatOptions;
use crate::sink::postgres::PgSession;
use crate::sink::CopyRefusal;
use crate::sql::quote_literal;

/// Fewest suspects worth a check: making the function and the check cost
/// about what 8 suspects' COPY statements do.
pub(super) const MIN_SUSPECTS: usize = 8;

/// PL/pgSQL takes at most 100 arguments.
const MAX_CHECKED_COLUMNS: usize = 100;

const FUNCTION: &str = "pg_temp.sluice_first_refusal";

/// The check without its exception block (see
/// [`ValueCheck::check_expecting_pass`]).
const PASS_FUNCTION: &str = "pg_temp.sluice_values_pass";

/// The check for one load's COPY columns.
pub(super) struct ValueCheck {
    /// Splits records as COPY does, every column read as text; cloned for
    /// each check.
    splitter: BinaryEncoder,
    /// The COPY columns' names.
    names: Vec<String>,
    /// For each argument of the function: its COPY column.
    checked: Vec<usize>,
    create_function: String,
    create_pass_function: String,
    /// Set once a check failed: not tried again.
    broken: AtomicBool,
}

/// What a check found.
pub(super) enum Checked {
    /// It ran: the records it refused with a data error (their index among
    /// those given) and why, and those whose every value the columns' types
    /// took. The savepoint it set stands, with nothing in it to undo.
    Ran { refused: Vec<(usize, CopyRefusal)>, passed: Vec<usize> },
    /// It failed: the transaction must roll back to the savepoint.
    Failed,
    /// Nothing was sent (the splitter was unsure of every record): no
    /// savepoint was set.
    Skipped,
}

impl ValueCheck {
    /// `columns`: COPY's, with their types (a domain's as its base type);
    /// `text_like`: columns whose input is text's own, which never refuses
    /// a value the client let through. `None` when nothing would be checked.
    pub fn new(columns: &[(String, String)], text_like: &[String], format: &FormatOptions) -> Option<ValueCheck> {
        let checked: Vec<usize> = (0..columns.len())
            .filter(|&i| {
                let (name, sql_type) = &columns[i];
                !text_like.contains(name) && !matches!(sql_type.as_str(), "text" | "character varying")
            })
            .collect();
        if checked.is_empty() || checked.len() > MAX_CHECKED_COLUMNS {
            return None;
        }
        let types: Vec<&str> = checked.iter().map(|&i| columns[i].1.as_str()).collect();
        Some(ValueCheck {
            splitter: text_splitter(columns, format)?,
            names: columns.iter().map(|(name, _)| name.clone()).collect(),
            create_function: create_function(&types)?,
            create_pass_function: create_pass_function(&types)?,
            checked,
            broken: AtomicBool::new(false),
        })
    }

    pub fn usable(&self) -> bool {
        !self.broken.load(Ordering::Relaxed)
    }

    /// Checks `records` (each whole, line end included) after running
    /// `savepoint` (which sets the savepoint isolation rolls back to) on its
    /// own: a check the server refuses before running any of its statements
    /// (a value its encoding cannot hold fails the whole message) must find
    /// the savepoint set. A record the splitter is unsure of (a field too
    /// many or too few, a stray carriage return) is left unchecked.
    pub fn check(&self, session: &PgSession, savepoint: &str, records: &[&[u8]]) -> Result<Checked, Error> {
        let (columns, sent) = self.columns_of(records);
        if sent.is_empty() {
            return Ok(Checked::Skipped);
        }
        session.execute(savepoint)?;
        self.run(session, &columns, &sent)
    }

    /// As [`ValueCheck::check`], for records whose values are expected to
    /// pass (those whose key the table holds, which are about to be rejected
    /// or skipped for it): first one statement that assigns every value
    /// without an exception block, whose error stops it; only when a value
    /// fails does the check run, after `rollback` (to the savepoint
    /// `savepoint` sets). Why: an exception block is a subtransaction per
    /// record, and the check cost the server 4.8 µs a record against 1.4
    /// without it; an export that overlaps the table sends every held
    /// record through it (bench/README.md).
    pub fn check_expecting_pass(
        &self,
        session: &PgSession,
        (savepoint, rollback): (&str, &str),
        records: &[&[u8]],
    ) -> Result<Checked, Error> {
        let (columns, sent) = self.columns_of(records);
        if sent.is_empty() {
            return Ok(Checked::Skipped);
        }
        session.execute(savepoint)?;
        let sql = format!("{}; {}", self.create_pass_function, select_passing(&columns));
        match session.query_statements(&sql)? {
            Ok(_) => Ok(Checked::Ran { refused: Vec::new(), passed: sent }),
            Err(refusal) if is_data_error(&refusal) => {
                session.execute(&format!("{rollback}; {savepoint}"))?;
                self.run(session, &columns, &sent)
            }
            Err(_) => Ok(self.failed_for_good()),
        }
    }

    /// The checked columns' values of the `records` the splitter is sure
    /// of, and those records' indexes.
    fn columns_of(&self, records: &[&[u8]]) -> (Vec<Vec<Option<String>>>, Vec<usize>) {
        let mut splitter = self.splitter.clone();
        let mut columns: Vec<Vec<Option<String>>> = vec![Vec::new(); self.checked.len()];
        let mut sent = Vec::new();
        for (index, record) in records.iter().enumerate() {
            let Some(mut fields) = split(&mut splitter, record) else { continue };
            for (column, &i) in columns.iter_mut().zip(&self.checked) {
                column.push(fields[i].take());
            }
            sent.push(index);
        }
        (columns, sent)
    }

    /// Runs the check over `columns`, the values of the records `sent`,
    /// under a savepoint already set.
    fn run(&self, session: &PgSession, columns: &[Vec<Option<String>>], sent: &[usize]) -> Result<Checked, Error> {
        let sql = format!("{}; {}", self.create_function, select_refusals(columns));
        match session.query_statements(&sql)? {
            Ok(rows) => Ok(Checked::Ran { refused: self.refusals(&rows, sent), passed: passed(&rows, sent) }),
            // This chunk's data (a character the database's encoding lacks)
            // fails this check only; anything else, every check.
            Err(refusal) if is_data_error(&refusal) => Ok(Checked::Failed),
            Err(_) => Ok(self.failed_for_good()),
        }
    }

    /// A check that failed for something other than the data (no right to
    /// create temporary objects, say): none is tried again.
    fn failed_for_good(&self) -> Checked {
        self.broken.store(true, Ordering::Relaxed);
        Checked::Failed
    }

    /// The rows of [`select_refusals`] as refusals of the records `sent`
    /// (their indexes among those checked): data errors only.
    fn refusals(&self, rows: &[Vec<Option<String>>], sent: &[usize]) -> Vec<(usize, CopyRefusal)> {
        let mut refusals = Vec::new();
        for row in rows {
            let [Some(n), Some(argument), Some(sqlstate), Some(message), detail] = &row[..] else { continue };
            let (Ok(n), Ok(argument)) = (n.parse::<usize>(), argument.parse::<usize>()) else { continue };
            if !sqlstate.starts_with("22") || n == 0 || argument == 0 || n > sent.len() {
                continue;
            }
            let Some(&column) = self.checked.get(argument - 1) else { continue };
            let refusal = CopyRefusal {
                sqlstate: Some(sqlstate.clone()),
                message: message.clone(),
                detail: detail.clone().filter(|d| !d.is_empty()),
                column: Some(self.names[column].clone()),
                ..CopyRefusal::default()
            };
            refusals.push((sent[n - 1], refusal));
        }
        refusals
    }
}

/// The records `sent` (their indexes among those given) that no row of
/// [`select_refusals`] names, whatever its error; none when a row cannot be
/// read.
fn passed(rows: &[Vec<Option<String>>], sent: &[usize]) -> Vec<usize> {
    let mut named = vec![false; sent.len()];
    for row in rows {
        match row.first().and_then(|n| n.as_deref()?.parse::<usize>().ok()) {
            Some(n) if (1..=sent.len()).contains(&n) => named[n - 1] = true,
            _ => return Vec::new(),
        }
    }
    sent.iter().zip(named).filter(|(_, named)| !named).map(|(&i, _)| i).collect()
}

/// A splitter that reads records as COPY splits them (quotes, escapes,
/// NULL strings, forced columns), every one of `columns` as text.
pub(super) fn text_splitter(columns: &[(String, String)], format: &FormatOptions) -> Option<BinaryEncoder> {
    let as_text: Vec<(String, String)> = columns.iter().map(|(name, _)| (name.clone(), "text".into())).collect();
    BinaryEncoder::new(&as_text, format).ok()
}

/// `values` as a SQL `text[]` literal.
pub(super) fn text_array_literal(values: &[Option<String>]) -> String {
    format!("{}::text[]", quote_literal(&text_array(values)))
}

/// The values COPY's reading of `record` gives its columns (`None`:
/// NULL), or `None` when the splitter is unsure of it.
pub(super) fn split(splitter: &mut BinaryEncoder, record: &[u8]) -> Option<Vec<Option<String>>> {
    let mut tuple = Vec::new();
    let fields = fields_of(splitter, record, &mut tuple)?;
    fields.into_iter().map(text).collect()
}

/// As [`split`], the columns at `wanted` only, in its order, with `tuple`
/// as the encoder's buffer: the key check reads a column or two of every
/// record of a chunk, and a string for each of the others, and a buffer
/// grown anew for each record, were much of its client's time.
pub(super) fn split_columns(
    splitter: &mut BinaryEncoder,
    record: &[u8],
    tuple: &mut Vec<u8>,
    wanted: &[usize],
) -> Option<Vec<Option<String>>> {
    let fields = fields_of(splitter, record, tuple)?;
    wanted.iter().map(|&at| text(*fields.get(at)?)).collect()
}

/// A field's text (`None` within: NULL); `None` when it is not UTF-8.
fn text(field: Option<&[u8]>) -> Option<Option<String>> {
    match field {
        None => Some(None),
        Some(bytes) => String::from_utf8(bytes.to_vec()).ok().map(Some),
    }
}

/// `record`'s fields as the splitter writes them into `tuple` (emptied
/// first), each a slice of it (`None`: NULL).
pub(super) fn fields_of<'t>(
    splitter: &mut BinaryEncoder,
    record: &[u8],
    tuple: &'t mut Vec<u8>,
) -> Option<Vec<Option<&'t [u8]>>> {
    tuple.clear();
    splitter.begin_chunk();
    let done = splitter.encode(record, true, tuple).ok()?;
    if done.records != 1 || done.consumed != record.len() {
        return None;
    }
    let tuple: &'t [u8] = tuple;
    let count = i16::from_be_bytes(tuple.get(..2)?.try_into().ok()?);
    let mut at = 2;
    let mut fields = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let len = i32::from_be_bytes(tuple.get(at..at + 4)?.try_into().ok()?);
        at += 4;
        if len < 0 {
            fields.push(None);
            continue;
        }
        fields.push(Some(tuple.get(at..at + len as usize)?));
        at += len as usize;
    }
    Some(fields)
}

/// `CREATE OR REPLACE FUNCTION` of the check: argument `k` is assigned to
/// a variable of `types[k - 1]`; on the first that fails, the function
/// returns its number and the error, else NULLs. `None` when a type name
/// holds the body's quote tag.
fn create_function(types: &[&str]) -> Option<String> {
    const TAG: &str = "$sluice_check$";
    let (arguments, variables, assignments) =
        function_parts(types, TAG, |k| format!("refused_argument := {k}; x{k} := v{k}; "))?;
    Some(format!(
        "CREATE OR REPLACE FUNCTION {FUNCTION}({arguments}, OUT refused_argument int, OUT refused_state text, \
         OUT refused_message text, OUT refused_detail text) LANGUAGE plpgsql AS {TAG} DECLARE {variables}\
         BEGIN {assignments}refused_argument := NULL; EXCEPTION WHEN others THEN GET STACKED DIAGNOSTICS \
         refused_state = RETURNED_SQLSTATE, refused_message = MESSAGE_TEXT, refused_detail = PG_EXCEPTION_DETAIL; \
         END {TAG}"
    ))
}

/// What both check functions are made of: their arguments (`v1 text,
/// ...`), their variables (`x1` of `types[0]`, ...) and `assign(k)` for
/// each argument `k`; `None` when a type name holds the body's quote `tag`.
fn function_parts(types: &[&str], tag: &str, assign: impl Fn(usize) -> String) -> Option<(String, String, String)> {
    if types.iter().any(|t| t.contains(tag)) {
        return None;
    }
    let arguments: Vec<String> = (1..=types.len()).map(|k| format!("v{k} text")).collect();
    let variables: String = types.iter().enumerate().map(|(k, t)| format!("x{} {t}; ", k + 1)).collect();
    let assignments: String = (1..=types.len()).map(assign).collect();
    Some((arguments.join(", "), variables, assignments))
}

/// A refusal for a value (SQLSTATE class 22), not for the check itself.
fn is_data_error(refusal: &CopyRefusal) -> bool {
    refusal.sqlstate.as_deref().is_some_and(|s| s.starts_with("22"))
}

/// `CREATE OR REPLACE FUNCTION` of the check without its exception block:
/// each argument assigned to a variable of its type, as in
/// [`create_function`], the first that fails stopping the statement.
fn create_pass_function(types: &[&str]) -> Option<String> {
    const TAG: &str = "$sluice_pass$";
    let (arguments, variables, assignments) = function_parts(types, TAG, |k| format!("x{k} := v{k}; "))?;
    Some(format!(
        "CREATE OR REPLACE FUNCTION {PASS_FUNCTION}({arguments}) RETURNS int LANGUAGE plpgsql AS {TAG} \
         DECLARE {variables}BEGIN {assignments}RETURN 1; END {TAG}"
    ))
}

/// The query that runs [`create_pass_function`]'s function over `columns`.
fn select_passing(columns: &[Vec<Option<String>>]) -> String {
    let (arrays, names) = arrays_and_names(columns);
    format!("SELECT count({PASS_FUNCTION}({names})) FROM unnest({arrays}) AS u({names})")
}

/// `columns` as arrays for `unnest`, and the names of their elements (`v1,
/// v2, ...`), each a list.
fn arrays_and_names(columns: &[Vec<Option<String>>]) -> (String, String) {
    let arrays: Vec<String> = columns.iter().map(|values| text_array_literal(values)).collect();
    let names: Vec<String> = (1..=columns.len()).map(|k| format!("v{k}")).collect();
    (arrays.join(", "), names.join(", "))
}

/// The query that runs the check over `columns` (one array per checked
/// column, a value per record): the records it refuses, numbered from 1.
fn select_refusals(columns: &[Vec<Option<String>>]) -> String {
    let (arrays, names) = arrays_and_names(columns);
    format!(
        "SELECT u.n, c.refused_argument, c.refused_state, c.refused_message, c.refused_detail \
         FROM unnest({arrays}) WITH ORDINALITY AS u({names}, n), LATERAL {FUNCTION}({names}) AS c \
         WHERE c.refused_argument IS NOT NULL"
    )
}

/// An array literal of text values: every element quoted, `NULL` bare.
fn text_array(values: &[Option<String>]) -> String {
    let mut out = String::from("{");
    for (i, value) in values.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_array_element(&mut out, value.as_deref());
    }
    out.push('}');
    out
}

/// Appends `value` to an array literal being written: quoted, with its
/// quotes and backslashes escaped, or `NULL` bare.
pub(super) fn push_array_element(out: &mut String, value: Option<&str>) {
    let Some(mut rest) = value else {
        out.push_str("NULL");
        return;
    };
    out.push('"');
    while let Some(at) = rest.find(['"', '\\']) {
        out.push_str(&rest[..at]);
        out.push('\\');
        out.push_str(&rest[at..=at]);
        rest = &rest[at + 1..];
    }
    out.push_str(rest);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::FormatKind;

    #[test]
    fn records_split_as_copy_reads_them() {
        let mut csv = FormatOptions::new(FormatKind::Csv);
        csv.null = Some("NULL".into());
        let columns = vec![("a".to_string(), "text".to_string()), ("b".to_string(), "text".to_string())];
        let mut splitter = BinaryEncoder::new(&columns, &csv).unwrap();
        let fields = |s: &mut BinaryEncoder, record: &str| split(s, record.as_bytes());
        assert_eq!(fields(&mut splitter, "\"x,\"\"y\",NULL\n"), Some(vec![Some("x,\"y".into()), None]));
        assert_eq!(fields(&mut splitter, "\"NULL\",\n"), Some(vec![Some("NULL".into()), Some(String::new())]));
        assert_eq!(fields(&mut splitter, "1,2,3\n"), None, "a field too many: COPY's to judge");
        let mut splitter = BinaryEncoder::new(&columns, &FormatOptions::new(FormatKind::Tsv)).unwrap();
        assert_eq!(fields(&mut splitter, "a\\tb\t\\N\r\n"), Some(vec![Some("a\tb".into()), None]));
    }

    #[test]
    fn arrays_quote_every_value() {
        let values = vec![Some("a\"b\\c".to_string()), None, Some(String::new()), Some("NULL".into())];
        assert_eq!(text_array(&values), r#"{"a\"b\\c",NULL,"","NULL"}"#);
    }
}
