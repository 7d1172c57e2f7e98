//! What a JSON document without a key loads into that key's column: the
//! column's default, where the server can be made to give it.
//!
//! Why the client writes it: COPY fills a column's default only for columns
//! it is not given, and it is given every column any document has; asking
//! for a default row by row (COPY's `DEFAULT` option) needs PostgreSQL 16
//! and the text format. A default that calls only immutable functions on
//! constants (`'new'`, `0` into a bigint, `'{}'::jsonb`, `1 + 2`) has one
//! value, which the server computes here once: every document without the
//! key gets it, on every server and in binary too. One computed per row
//! (`now()`, a sequence, an identity, `gen_random_uuid()`) the client
//! cannot write: from PostgreSQL 16 such a document's field asks the server
//! for it ([`DocumentColumns::ask_for_default`]; its chunk goes as text,
//! which COPY's `DEFAULT` needs); before 16 it loads NULL, and the load
//! says so before it starts.
//!
//! Constant is told from the stored expression (`pg_attrdef.adbin`, the
//! server's own node tree): only node kinds that compute nothing of their
//! own, and functions the catalog marks immutable.

use std::collections::BTreeSet;

use crate::error::Error;
use crate::format::documents::DocumentColumns;
use crate::sink::postgres::{PgSession, TableInfo};

/// Node kinds of a stored expression that are constant when their
/// functions are immutable. Anything else (`CURRENT_DATE`, a subquery, a
/// cast through text I/O) is taken as computed per row, as is a call of a
/// function that is not immutable (`now()`, a sequence's `nextval`).
const CONSTANT_NODES: [&str; 7] =
    ["CONST", "FUNCEXPR", "OPEXPR", "RELABELTYPE", "ARRAYEXPR", "BOOLEXPR", "COLLATEEXPR"];

/// Each column's default (its expression as SQL, its stored node tree);
/// an identity, or a domain's default, without an expression of its own.
const DEFAULTS: &str = "SELECT a.attname, pg_catalog.pg_get_expr(d.adbin, d.adrelid), d.adbin::text, \
    a.attidentity <> '' FROM pg_catalog.pg_attribute a \
    LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
    JOIN pg_catalog.pg_type t ON t.oid = a.atttypid \
    WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped \
    AND (d.adbin IS NOT NULL OR a.attidentity <> '' OR (t.typtype = 'd' AND t.typdefaultbin IS NOT NULL))";

/// Sets what each loaded column gets from a document without its key, and
/// returns a warning for each column whose default those documents cannot
/// get (they load NULL into it).
pub fn apply(control: &PgSession, table: &TableInfo, columns: &mut DocumentColumns) -> Result<Vec<String>, Error> {
    let rows = control.query(DEFAULTS, &[Some(&table.oid.to_string())])?;
    let mut per_row = Vec::new();
    for row in rows {
        let [Some(name), expression, tree, identity] = <[Option<String>; 4]>::try_from(row).unwrap_or_default() else {
            continue;
        };
        let Some(index) = columns.columns.iter().position(|c| *c == name) else {
            continue;
        };
        let constant = match (&expression, &tree) {
            (Some(expression), Some(tree)) => constant_value(control, expression, tree)?,
            _ => None,
        };
        match constant {
            Some(Some(text)) => columns.set_missing(index, &text),
            Some(None) => {}
            None if control.server_version() >= 160000 => columns.ask_for_default(index),
            None => {
                let what = match (expression, identity.as_deref()) {
                    (Some(expression), _) => format!("its default, {expression}"),
                    (None, Some("t")) => "the next identity value".to_string(),
                    _ => "its type's default".to_string(),
                };
                per_row.push(per_row_warning(&columns.keys[index], &name, &what));
            }
        }
    }
    Ok(per_row)
}

fn per_row_warning(key: &str, column: &str, what: &str) -> String {
    format!(
        "a document without the key \"{key}\" loads NULL into column \"{column}\", not {what}: before \
         PostgreSQL 16, COPY computes a default only for columns it is not given. To get it, load such documents \
         with --columns naming the other keys"
    )
}

/// The value of a constant default (`Some(None)`: NULL), computed by the
/// server; `None` when the default is computed per row.
fn constant_value(control: &PgSession, expression: &str, tree: &str) -> Result<Option<Option<String>>, Error> {
    let Some(functions) = functions_of_a_constant(tree) else {
        return Ok(None);
    };
    if !functions.is_empty() {
        let list = format!("{{{}}}", functions.iter().map(u32::to_string).collect::<Vec<_>>().join(","));
        let immutable = control.query(
            "SELECT count(*) FROM pg_catalog.pg_proc WHERE oid = ANY($1::oid[]) AND provolatile = 'i'",
            &[Some(&list)],
        )?;
        let count = immutable.first().and_then(|r| r.first()?.as_deref()?.parse::<usize>().ok());
        if count != Some(functions.len()) {
            return Ok(None);
        }
    }
    // One the server cannot compute (`1 / 0`) is left to it, to refuse as
    // COPY refuses it.
    let Ok(value) = control.query(&format!("SELECT ({expression})::text"), &[]) else {
        return Ok(None);
    };
    Ok(Some(value.into_iter().next().and_then(|r| r.into_iter().next().flatten())))
}

/// The functions a stored expression (`tree`, a `pg_node_tree` as text)
/// calls, when it is made only of [`CONSTANT_NODES`]; `None` otherwise.
fn functions_of_a_constant(tree: &str) -> Option<BTreeSet<u32>> {
    let mut functions = BTreeSet::new();
    let mut rest = tree;
    while let Some(at) = rest.find(['{', ':']) {
        rest = &rest[at..];
        let word_end = |s: &str| s.find(|c: char| !c.is_ascii_alphanumeric() && c != '_').unwrap_or(s.len());
        let word = &rest[1..1 + word_end(&rest[1..])];
        if rest.starts_with('{') && !CONSTANT_NODES.contains(&word) {
            return None;
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
    Some(functions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_are_told_from_what_is_computed_per_row() {
        let text = "{CONST :consttype 25 :consttypmod -1 :constcollid 100 :constlen -1 :constbyval false \
            :constisnull false :location 10 :constvalue 5 [ 20 0 0 0 120 ]}";
        assert_eq!(functions_of_a_constant(text), Some(BTreeSet::new()));
        let to_bigint = "{FUNCEXPR :funcid 481 :funcresulttype 20 :funcretset false :funcvariadic false \
            :funcformat 2 :funccollid 0 :inputcollid 0 :args ({CONST :consttype 23 :constvalue 4 [ 0 0 0 0 0 0 0 0 ]}) \
            :location -1}";
        assert_eq!(functions_of_a_constant(to_bigint), Some(BTreeSet::from([481])));
        let sum =
            "{OPEXPR :opno 551 :opfuncid 177 :opresulttype 23 :args ({CONST :consttype 23} {CONST :consttype 23})}";
        assert_eq!(functions_of_a_constant(sum), Some(BTreeSet::from([177])));
        assert_eq!(functions_of_a_constant("{SQLVALUEFUNCTION :op 0 :type 1082 :typmod -1 :location 354}"), None);
        assert_eq!(functions_of_a_constant("{OPEXPR :opno 551 :opfuncid 0 :args <>}"), None, "not yet looked up");
        let through_text = "{COERCEVIAIO :arg {CONST :consttype 25} :resulttype 1184}";
        assert_eq!(functions_of_a_constant(through_text), None);
    }
}
