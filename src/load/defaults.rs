//! What a JSON document without a key loads into that key's column: the
//! column's default.
//!
//! Why the client writes it: COPY fills a column's default only for columns
//! it is not given, and it is given every column any document has. A
//! default that calls only immutable functions on constants (`'new'`, `0`
//! into a bigint, `'{}'::jsonb`, `1 + 2`) has one value, which the server
//! computes here once: every document without the key gets it. One that
//! changes (`now()`, a sequence, an identity, `gen_random_uuid()`) is
//! written as a mark ([`DEFAULT_MARK`]), and the worker replaces the
//! chunk's marks with values the server computes in the chunk's
//! transaction ([`fill`]): one query per column, for one value when the
//! default stays the same throughout a transaction (`now()`,
//! `current_user`: the value COPY's own defaults get), else for one value
//! per mark. Why not COPY's `DEFAULT` option, which asks the server row by
//! row: it needs PostgreSQL 16 and the text format; this works on every
//! version, keeps such chunks binary, and measured as fast on PostgreSQL 18
//! (README, JSON lines).
//!
//! Constant is told from the stored expression (`pg_attrdef.adbin`, the
//! server's own node tree): only node kinds that compute nothing of their
//! own, and the functions' volatility in the catalog.

use std::collections::BTreeSet;

use crate::chunk::Chunk;
use crate::error::Error;
use crate::format::documents::{escape_text, ComputedDefault, DocumentColumns, DEFAULT_MARK, DOC_MARK};
use crate::sink::postgres::{PgSession, TableInfo};
use crate::sql::{quote_ident, quote_literal};

/// Node kinds of a stored expression that compute nothing of their own:
/// the expression is constant when its functions are immutable, and the
/// same throughout a transaction when none is volatile. Anything else (a
/// subquery, a cast through text I/O, an identity's next value) is taken
/// as computed per row.
const PLAIN_NODES: [&str; 7] = ["CONST", "FUNCEXPR", "OPEXPR", "RELABELTYPE", "ARRAYEXPR", "BOOLEXPR", "COLLATEEXPR"];

/// `CURRENT_DATE`, `CURRENT_TIMESTAMP`, `current_user` and their kin (from
/// PostgreSQL 16 `current_user` is a call of a stable function): the same
/// throughout a transaction.
const TRANSACTION_VALUE: &str = "SQLVALUEFUNCTION";

/// Each column's default (its expression as SQL, its stored node tree; a
/// domain's when the column has none) and, for an identity, its sequence.
const DEFAULTS: &str = "SELECT a.attname, \
    COALESCE(pg_catalog.pg_get_expr(d.adbin, d.adrelid), pg_catalog.pg_get_expr(t.typdefaultbin, 0)), \
    COALESCE(d.adbin, t.typdefaultbin)::text, \
    CASE WHEN a.attidentity <> '' THEN pg_catalog.pg_get_serial_sequence(a.attrelid::regclass::text, a.attname) END \
    FROM pg_catalog.pg_attribute a \
    LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
    JOIN pg_catalog.pg_type t ON t.oid = a.atttypid \
    WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped \
    AND (d.adbin IS NOT NULL OR a.attidentity <> '' OR (t.typtype = 'd' AND t.typdefaultbin IS NOT NULL))";

/// Sets what each loaded column gets from a document without its key.
pub fn apply(control: &PgSession, table: &TableInfo, columns: &mut DocumentColumns) -> Result<(), Error> {
    let rows = control.query(DEFAULTS, &[Some(&table.oid.to_string())])?;
    for row in rows {
        let [Some(name), expression, tree, sequence] = <[Option<String>; 4]>::try_from(row).unwrap_or_default() else {
            continue;
        };
        let Some(index) = columns.columns.iter().position(|c| *c == name) else {
            continue;
        };
        let computed = match (&expression, &tree) {
            (Some(expression), Some(tree)) => how_computed(control, expression, tree)?,
            _ => Computed::PerRow,
        };
        match (computed, sequence, expression) {
            (Computed::Once(Some(text)), _, _) => columns.set_missing(index, &text),
            (Computed::Once(None), _, _) => {}
            (Computed::PerTransaction, _, Some(expression)) => columns.compute(index, expression, false),
            (_, Some(sequence), _) => {
                let next = format!("pg_catalog.nextval({}::regclass)", quote_literal(&sequence));
                columns.compute(index, next, true)
            }
            (_, None, Some(expression)) => columns.compute(index, expression, true),
            // Not a default this query finds.
            (_, None, None) => {}
        }
    }
    Ok(())
}

/// `chunk` with each [`DEFAULT_MARK`] in `records` (its copied records)
/// replaced by a value of its column's default, which the server computes
/// in `session`'s open transaction (the chunk's); `None` when it has no
/// mark. Memory: the chunk once more, only while it loads.
pub fn fill(
    session: &PgSession,
    columns: &DocumentColumns,
    chunk: &Chunk,
    records: &[u8],
) -> Result<Option<Chunk>, Error> {
    let marks = marks(records, &columns.computed);
    if marks.is_empty() {
        return Ok(None);
    }
    let values = values_for(session, columns, &marks)?;
    let mut out = Vec::with_capacity(records.len() + marks.len() * 16);
    let mut from = 0;
    let mut taken = vec![0; values.len()];
    for (at, which) in marks {
        out.extend_from_slice(&records[from..at]);
        // A value the same throughout the transaction is computed once.
        let field = &values[which][taken[which].min(values[which].len() - 1)];
        out.extend_from_slice(field);
        taken[which] += 1;
        from = at + DEFAULT_MARK.len();
    }
    out.extend_from_slice(&records[from..]);
    Ok(Some(chunk.with_records(out)))
}

/// For each of `columns.computed`, the fields its `marks` get, escaped
/// for the text format: one for a default that stays the same in a
/// transaction, else one a mark.
fn values_for(
    session: &PgSession,
    columns: &DocumentColumns,
    marks: &[(usize, usize)],
) -> Result<Vec<Vec<Vec<u8>>>, Error> {
    let mut values = Vec::with_capacity(columns.computed.len());
    for (which, default) in columns.computed.iter().enumerate() {
        let marked = marks.iter().filter(|m| m.1 == which).count();
        let wanted = if default.per_row { marked } else { marked.min(1) };
        let fields = computed(session, &columns.columns[default.column], default, wanted)?.into_iter().map(|value| {
            let mut field = Vec::new();
            match value {
                Some(value) => escape_text(value.as_bytes(), &mut field),
                None => field.extend_from_slice(b"\\N"),
            }
            field
        });
        values.push(fields.collect());
    }
    Ok(values)
}

/// Where each mark is in `records` (text-format lines, from the
/// documents), with the index in `computed` of its column. A raw tab ends a
/// field and a raw newline a line there: the conversion escapes both in
/// values, as it does a backslash, so no value reads as a mark, and a mark
/// is a field that is `\D` whole. Found by searching for `\D` (SIMD), so
/// lines without one cost nothing: splitting every line into fields took
/// a fifth of sluice's CPU where half the documents had a mark.
fn marks(records: &[u8], computed: &[ComputedDefault]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    if computed.is_empty() {
        return found;
    }
    for at in memchr::memmem::find_iter(records, DEFAULT_MARK) {
        let after = records.get(at + DEFAULT_MARK.len()).copied();
        let line_start = memchr::memrchr(b'\n', &records[..at]).map_or(0, |n| n + 1);
        let field_start = at == line_start || records[at - 1] == b'\t';
        // A document that could not be read holds its reason, not fields.
        if !field_start || !matches!(after, None | Some(b'\t' | b'\n')) || records[line_start] == DOC_MARK {
            continue;
        }
        let column = memchr::memchr_iter(b'\t', &records[line_start..at]).count();
        found.extend(computed.iter().position(|p| p.column == column).map(|which| (at, which)));
    }
    found
}

/// `wanted` values of `default`, as text (`None`: NULL).
fn computed(
    session: &PgSession,
    column: &str,
    default: &ComputedDefault,
    wanted: usize,
) -> Result<Vec<Option<String>>, Error> {
    if wanted == 0 {
        return Ok(Vec::new());
    }
    let sql = format!("SELECT ({})::text FROM pg_catalog.generate_series(1, $1::int8)", default.expression);
    let rows = session.query(&sql, &[Some(&wanted.to_string())]).map_err(|e| match e {
        Error::Server(message) => Error::Server(format!(
            "computing column {}'s default, {}, for the documents without its key: {message}; fix the default \
             (or give the key in every document) and run the same command again",
            quote_ident(column),
            default.expression
        )),
        other => other,
    })?;
    let values: Vec<Option<String>> = rows.into_iter().map(|r| r.into_iter().next().flatten()).collect();
    match values.len() == wanted {
        true => Ok(values),
        false => Err(Error::Server(format!(
            "the server computed {} values of {}, not {wanted}",
            values.len(),
            default.expression
        ))),
    }
}

/// How often a default's value changes.
#[derive(Debug, PartialEq, Eq)]
enum Computed {
    /// Never: its value (`None`: NULL), computed here.
    Once(Option<String>),
    /// Not within a transaction (`now()`, `current_user`).
    PerTransaction,
    /// From row to row (a sequence, `random()`), or it cannot be told.
    PerRow,
}

/// How often the default `expression` (stored as `tree`) changes, from its
/// node kinds and its functions' volatility in the catalog.
fn how_computed(control: &PgSession, expression: &str, tree: &str) -> Result<Computed, Error> {
    let Some((functions, transaction_value)) = functions_of(tree) else {
        return Ok(Computed::PerRow);
    };
    let counts = match functions.is_empty() {
        true => Some((0, 0, 0)),
        false => volatilities(control, &functions)?,
    };
    let Some((_, immutable, stable)) = counts.filter(|&(found, _, _)| found == functions.len()) else {
        return Ok(Computed::PerRow);
    };
    if !transaction_value && immutable == functions.len() {
        // One the server cannot compute (`1 / 0`) is left to the chunks,
        // whose load then stops with the server's reason.
        if let Ok(value) = control.query(&format!("SELECT ({expression})::text"), &[]) {
            return Ok(Computed::Once(value.into_iter().next().and_then(|r| r.into_iter().next().flatten())));
        }
    }
    Ok(if immutable + stable == functions.len() { Computed::PerTransaction } else { Computed::PerRow })
}

/// How many of `functions` the catalog has, and how many of those are
/// immutable and how many stable.
fn volatilities(control: &PgSession, functions: &BTreeSet<u32>) -> Result<Option<(usize, usize, usize)>, Error> {
    let list = format!("{{{}}}", functions.iter().map(u32::to_string).collect::<Vec<_>>().join(","));
    let counts = control.query(
        "SELECT count(*), count(*) FILTER (WHERE provolatile = 'i'), count(*) FILTER (WHERE provolatile = 's') \
         FROM pg_catalog.pg_proc WHERE oid = ANY($1::oid[])",
        &[Some(&list)],
    )?;
    let count = |i: usize| counts.first().and_then(|r| r.get(i)?.as_deref()?.parse::<usize>().ok());
    Ok(count(0).zip(count(1)).zip(count(2)).map(|((found, immutable), stable)| (found, immutable, stable)))
}

/// The functions a stored expression (`tree`, a `pg_node_tree` as text)
/// calls and whether it has a [`TRANSACTION_VALUE`], when it is made only
/// of those and [`PLAIN_NODES`]; `None` otherwise.
fn functions_of(tree: &str) -> Option<(BTreeSet<u32>, bool)> {
    let mut functions = BTreeSet::new();
    let mut transaction_value = false;
    let mut rest = tree;
    while let Some(at) = rest.find(['{', ':']) {
        rest = &rest[at..];
        let word_end = |s: &str| s.find(|c: char| !c.is_ascii_alphanumeric() && c != '_').unwrap_or(s.len());
        let word = &rest[1..1 + word_end(&rest[1..])];
        if rest.starts_with('{') {
            match word {
                TRANSACTION_VALUE => transaction_value = true,
                w if PLAIN_NODES.contains(&w) => {}
                _ => return None,
            }
        }
        if rest.starts_with(':') && (word == "funcid" || word == "opfuncid") {
            let number = rest[1 + word.len()..].trim_start();
            let id: u32 = number[..word_end(number)].parse().ok()?;
            if id == 0 {
                return None;
            }
            functions.insert(id);
        }
        rest = &rest[1 + word.len()..];
    }
    Some((functions, transaction_value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_kinds_tell_constants_and_transaction_values_from_what_is_computed_per_row() {
        let text = "{CONST :consttype 25 :consttypmod -1 :constcollid 100 :constlen -1 :constbyval false \
            :constisnull false :location 10 :constvalue 5 [ 20 0 0 0 120 ]}";
        assert_eq!(functions_of(text), Some((BTreeSet::new(), false)));
        let to_bigint = "{FUNCEXPR :funcid 481 :funcresulttype 20 :funcretset false :funcvariadic false \
            :funcformat 2 :funccollid 0 :inputcollid 0 :args ({CONST :consttype 23 :constvalue 4 [ 0 0 0 0 0 0 0 0 ]}) \
            :location -1}";
        assert_eq!(functions_of(to_bigint), Some((BTreeSet::from([481]), false)));
        let sum =
            "{OPEXPR :opno 551 :opfuncid 177 :opresulttype 23 :args ({CONST :consttype 23} {CONST :consttype 23})}";
        assert_eq!(functions_of(sum), Some((BTreeSet::from([177]), false)));
        let today = "{SQLVALUEFUNCTION :op 0 :type 1082 :typmod -1 :location 354}";
        assert_eq!(functions_of(today), Some((BTreeSet::new(), true)));
        assert_eq!(functions_of("{OPEXPR :opno 551 :opfuncid 0 :args <>}"), None, "not yet looked up");
        let through_text = "{COERCEVIAIO :arg {CONST :consttype 25} :resulttype 1184}";
        assert_eq!(functions_of(through_text), None);
        assert_eq!(functions_of("{NEXTVALUEEXPR :seqid 16390 :typeId 20}"), None, "an identity's next value");
    }

    fn per_row(column: usize) -> ComputedDefault {
        ComputedDefault { column, expression: String::new(), per_row: true }
    }

    #[test]
    fn marks_are_found_in_their_columns_only() {
        let records = b"1\t\\D\tx\n2\t5\t\\D\n3\t\\\\D\t\\D\n\xFDa reason\t\\D\n4\t\\D\t\\D";
        let found = marks(records, &[per_row(1), per_row(2)]);
        let at = |line: &[u8], from: usize| from + records[from..].windows(line.len()).position(|w| w == line).unwrap();
        let starts: Vec<usize> = [&b"1\t"[..], b"2\t5\t", b"3\t\\\\D\t", b"4\t", b"4\t\\D\t"]
            .iter()
            .map(|prefix| at(prefix, 0) + prefix.len())
            .collect();
        assert_eq!(found, vec![(starts[0], 0), (starts[1], 1), (starts[2], 1), (starts[3], 0), (starts[4], 1)]);
        assert!(found.iter().all(|&(at, _)| &records[at..at + 2] == DEFAULT_MARK));
        assert_eq!(marks(records, &[per_row(2)]).len(), 3, "a column without a computed default keeps its field");
        assert!(marks(b"1\t\\\\D\n", &[per_row(1)]).is_empty(), "an escaped backslash and a D are a value");
        assert!(marks(b"1\t\\Dx\t\\\\\\D\n", &[per_row(1), per_row(2)]).is_empty(), "parts of fields");
        assert_eq!(marks(b"\\D\t7\n\\D", &[per_row(0)]), vec![(0, 0), (5, 0)], "first fields");
    }
}
