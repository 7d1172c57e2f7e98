//! The sequences of identity and serial columns that the load gave their
//! own values: moved past the highest value loaded.
//!
//! Why: COPY writes an identity or serial column's values as given and
//! leaves its sequence where it was, so the application's next INSERT takes
//! an id the load already used and fails with a duplicate key, long after
//! the load (psql's `\copy` leaves this to the user; it is a common question
//! after one). Moving a sequence forward only skips values, so it is done by
//! default and said in a warning; a sequence already past the loaded values,
//! or counting down, is left alone.
//!
//! The highest value is read through an index that leads with the column
//! (an identity is nearly always the primary key), or by reading a table of
//! up to [`SCANNED`] (1 GiB, its partitions included): a bigger one without
//! such an index would be read whole after the load, so the warning gives
//! the statement to run instead.

use crate::error::Error;
use crate::sink::postgres::{describe_refusal, PgSession, TableInfo};
use crate::sql::{quote_ident, quote_literal};

/// The biggest table whose highest value is read without an index, in
/// bytes (a few seconds' read), and as the warning says it.
const SCANNED: (u64, &str) = (1 << 30, "1 GiB");

/// The table's integer columns that own a sequence (serial or identity)
/// counting up: the column, the sequence as SQL (schema-qualified, quoted
/// where needed), its increment, and whether its highest value is quick to
/// read: a valid plain btree index leads with the column, or the table
/// (with its partitions or children) holds up to `$2` bytes.
const OWNED_SEQUENCES: &str = "SELECT a.attname, q.name, s.seqincrement::text, \
    ((WITH RECURSIVE tree(oid) AS (SELECT c.oid UNION ALL \
      SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN tree ON i.inhparent = tree.oid) \
      SELECT sum(pg_catalog.pg_relation_size(oid)) FROM tree) <= $2::int8 \
    OR EXISTS (SELECT 1 FROM pg_catalog.pg_index i \
      JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid \
      JOIN pg_catalog.pg_am am ON am.oid = ic.relam \
      WHERE i.indrelid = a.attrelid AND i.indkey[0] = a.attnum AND i.indisvalid AND i.indpred IS NULL \
      AND am.amname = 'btree'))::text \
    FROM pg_catalog.pg_attribute a \
    JOIN pg_catalog.pg_class c ON c.oid = a.attrelid \
    CROSS JOIN LATERAL (SELECT pg_catalog.pg_get_serial_sequence(a.attrelid::regclass::text, a.attname) AS name) q \
    JOIN pg_catalog.pg_sequence s ON s.seqrelid = q.name::regclass \
    WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped \
    AND a.atttypid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype) AND s.seqincrement > 0";

/// A loaded column's sequence.
struct Owned {
    column: String,
    /// As SQL (`public.t_id_seq`, quoted where needed), for any search path.
    sequence: String,
    increment: i64,
    /// Whether its column's highest value is quick to read.
    quick: bool,
}

/// Moves the sequences of the loaded `columns` past the highest value their
/// column holds; returns what it did (or could not do) as warnings.
pub(super) fn catch_up(
    control: &PgSession,
    table: &TableInfo,
    columns: &[(String, String)],
) -> Result<Vec<String>, Error> {
    if table.is_view || !table.foreign.is_empty() {
        return Ok(Vec::new());
    }
    let mut warnings = Vec::new();
    for owned in owned_sequences(control, table)?.into_iter().filter(|o| columns.iter().any(|(c, _)| *c == o.column)) {
        let setval = catch_up_statement(table, &owned);
        if !owned.quick {
            warnings.push(format!(
                "{} was loaded with its own values; its sequence {} was left as it was, as no index leads with the \
                 column to find the highest value (the table is over {}): if the values go past it, inserts \
                 that take their value from it collide with the loaded rows. To move it past them, run: {setval}",
                quote_ident(&owned.column),
                owned.sequence,
                SCANNED.1
            ));
            continue;
        }
        warnings.extend(advance(control, &owned, &setval)?);
    }
    Ok(warnings)
}

fn owned_sequences(control: &PgSession, table: &TableInfo) -> Result<Vec<Owned>, Error> {
    let scanned = SCANNED.0.to_string();
    let rows = control.query(OWNED_SEQUENCES, &[Some(&table.oid.to_string()), Some(&scanned)])?;
    Ok(rows
        .into_iter()
        .filter_map(|row| {
            let [Some(column), Some(sequence), Some(increment), Some(quick)] =
                <[Option<String>; 4]>::try_from(row).ok()?
            else {
                return None;
            };
            Some(Owned { column, sequence, increment: increment.parse().ok()?, quick: quick == "true" })
        })
        .collect())
}

/// The statement that moves the sequence to the column's highest value
/// when the value it gives next is not past it, and returns that value:
/// one statement, so the value read is the value set (an application
/// taking values from it at that very moment may still get one it gives
/// again). On an empty table, or a sequence already past, it does nothing.
fn catch_up_statement(table: &TableInfo, owned: &Owned) -> String {
    let column = quote_ident(&owned.column);
    format!(
        "SELECT pg_catalog.setval({}::regclass, max({column})) FROM {} HAVING max({column}) >= (SELECT CASE WHEN \
         is_called THEN last_value::numeric + {} ELSE last_value END FROM {})",
        quote_literal(&owned.sequence),
        table.quoted(),
        owned.increment,
        owned.sequence
    )
}

/// Runs [`catch_up_statement`]; says what it moved, or why it could not.
fn advance(control: &PgSession, owned: &Owned, setval: &str) -> Result<Option<String>, Error> {
    let column = quote_ident(&owned.column);
    Ok(match control.query_statements(setval)? {
        Ok(rows) => rows.first().and_then(|row| row.first().cloned().flatten()).map(|highest| {
            format!(
                "{column} was loaded with values up to {highest}, which its sequence {} had yet to give: it now \
                 gives {} next, so inserts that take their value from it do not collide with the loaded rows",
                owned.sequence,
                highest
                    .parse::<i128>()
                    .map_or_else(|_| "the next value".to_string(), |h| (h + owned.increment as i128).to_string())
            )
        }),
        Err(refusal) => Some(format!(
            "{column} was loaded with its own values, and its sequence {} could not be checked or moved past them \
             ({}): inserts that take their value from it may collide with the loaded rows; run: {setval}",
            owned.sequence,
            describe_refusal(&refusal)
        )),
    })
}
