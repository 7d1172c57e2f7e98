//! A foreign key's refusal: every record of the refused run that refers to
//! the key the server says is missing, found on the client.
//!
//! Why: a foreign key is checked at the end of a COPY statement, so its
//! refusal names no line, and isolation halved the run until the record
//! stood alone, some 16 COPY statements a bad record (1 M rows with a
//! missing reference every 1,000 lines: 16.55 s, 6.68 s so, clean 3.43 s). The refusal's
//! detail names the key (`Key (dim_id)=(1000) is not present in table
//! "dim".`), and every record whose field COPY reads as that text refers
//! to it: they are rejected together, for the server's reason, and the
//! rest of the run is copied again, in runs sized as after any error: one
//! refusal says nothing of the other missing keys in the rest, and sent
//! whole, the rest went again for each (each line referring to a key of
//! its own: 62.9 s, 26.2 s before this module, 7.6 s so).
//!
//! One refusal names one key: [`MissingKeys::look_up`] asks the referenced
//! table for every value of the run's column at once, in one query (as
//! the server reads them: `007` finds 7), so each record referring to a
//! missing key is rejected with its own key named, and the rest goes
//! whole. Where it cannot (a key referring to the loaded table itself,
//! whose records may refer to rows of the same run; no right to read the
//! referenced table), the key the refusal names is matched as text; where
//! nothing matches (a key of two columns, a message in another language),
//! isolation halves as before.

use std::collections::{HashMap, HashSet};

use crate::error::Error;
use crate::format::binary::BinaryEncoder;
use crate::format::FormatOptions;
use crate::sink::postgres::{PgSession, TableInfo};
use crate::sink::CopyRefusal;

use super::value_check::{split_columns, text_array_literal, text_splitter};

/// What a foreign key's refusal says, and the server's SQLSTATE for it.
const FOREIGN_KEY_VIOLATION: &str = "23503";

/// For the foreign key of one column the refusal names (`$1`, its quoted
/// schema and name) on the table `$2` or a partition of it, referring to
/// another table: that table (as SQL), its key column (quoted) and the
/// referring column's type.
const REFERENCED: &str = "SELECT c.confrelid::regclass::text, pg_catalog.quote_ident(ra.attname), \
    pg_catalog.format_type(fa.atttypid, fa.atttypmod) \
    FROM pg_catalog.pg_constraint c \
    JOIN pg_catalog.pg_namespace n ON n.oid = c.connamespace \
    JOIN pg_catalog.pg_attribute fa ON fa.attrelid = c.conrelid AND fa.attnum = c.conkey[1] \
    JOIN pg_catalog.pg_attribute ra ON ra.attrelid = c.confrelid AND ra.attnum = c.confkey[1] \
    WHERE c.contype = 'f' AND pg_catalog.cardinality(c.conkey) = 1 \
    AND '\"' || pg_catalog.replace(n.nspname, '\"', '\"\"') || '\".\"' || pg_catalog.replace(c.conname, '\"', '\"\"') \
      || '\"' = $1 \
    AND c.conrelid IN (WITH RECURSIVE tree(oid) AS (SELECT $2::int8::oid UNION ALL \
      SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN tree ON i.inhparent = tree.oid) SELECT oid FROM tree) \
    AND c.confrelid NOT IN (WITH RECURSIVE tree(oid) AS (SELECT $2::int8::oid UNION ALL \
      SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN tree ON i.inhparent = tree.oid) SELECT oid FROM tree)";

/// Reads the COPY columns' fields as COPY reads them.
pub(super) struct MissingKeys {
    splitter: BinaryEncoder,
    names: Vec<String>,
    /// The table's OID, to find its foreign keys.
    table: u32,
}

impl MissingKeys {
    /// `None` for a table with a trigger of the user's on insert, which may
    /// change a value before the key is checked: a record's field would
    /// not be the value the server found missing.
    pub fn new(table: &TableInfo, columns: &[(String, String)], format: &FormatOptions) -> Option<MissingKeys> {
        if !table.insert_triggers.is_empty() {
            return None;
        }
        let splitter = text_splitter(columns, format)?;
        Some(MissingKeys { splitter, names: columns.iter().map(|(name, _)| name.clone()).collect(), table: table.oid })
    }

    /// The column a foreign key's refusal names, when it is one of one
    /// column among the loaded ones.
    pub fn column_of<'r>(&self, refusal: &'r CopyRefusal) -> Option<&'r str> {
        let (column, _) = missing_key(refusal)?;
        self.names.iter().any(|name| name == column).then_some(column)
    }

    /// Of `records` (each `(index, bytes)`), those referring to a key the
    /// referenced table does not hold, by the foreign key `refusal` names,
    /// each with the refusal it gets (the server's, for its value), looked
    /// up in one query; `None` when that cannot be (another table's key
    /// of several columns, a key referring to the table itself, whose
    /// records may refer to each other, no right to read it: the query's
    /// refusal leaves the transaction to roll back to the savepoint).
    pub fn look_up<'r>(
        &self,
        session: &PgSession,
        refusal: &CopyRefusal,
        records: impl Iterator<Item = (usize, &'r [u8])>,
    ) -> Result<Option<Vec<(usize, CopyRefusal)>>, Error> {
        let (Some(column), Some(constraint)) = (self.column_of(refusal), refusal.constraint.as_deref()) else {
            return Ok(None);
        };
        let at = self.names.iter().position(|name| name == column).expect("a loaded column");
        let found = session.query(REFERENCED, &[Some(constraint), Some(&self.table.to_string())])?;
        let Some([Some(referenced), Some(key), Some(ty)]) =
            found.into_iter().next().and_then(|r| <[Option<String>; 3]>::try_from(r).ok())
        else {
            return Ok(None);
        };
        let (mut splitter, mut tuple) = (self.splitter.clone(), Vec::new());
        let fields: Vec<(usize, String)> = records
            .filter_map(|(i, record)| Some((i, split_columns(&mut splitter, record, &mut tuple, &[at])?.pop()??)))
            .collect();
        let distinct: HashSet<&str> = fields.iter().map(|(_, value)| value.as_str()).collect();
        let values: Vec<Option<String>> = distinct.into_iter().map(|v| Some(v.to_string())).collect();
        // Each missing value as written, and as the server writes it.
        let query = format!(
            "SELECT v, v::{ty}::text FROM pg_catalog.unnest({}) AS v WHERE NOT EXISTS (SELECT 1 FROM {referenced} r \
             WHERE r.{key} = v::{ty})",
            text_array_literal(&values)
        );
        let missing: HashMap<String, String> = match session.query_statements(&query)? {
            Ok(rows) => rows
                .into_iter()
                .filter_map(|row| <[Option<String>; 2]>::try_from(row).ok())
                .filter_map(|[v, shown]| Some((v?, shown?)))
                .collect(),
            Err(_) => return Ok(None),
        };
        let (_, named) = missing_key(refusal).expect("a key of one column");
        let detail = refusal.detail.as_deref().unwrap_or_default();
        let for_value = |shown: &str| CopyRefusal {
            detail: Some(detail.replacen(&format!(")=({named})"), &format!(")=({shown})"), 1)),
            ..refusal.clone()
        };
        Ok(Some(fields.into_iter().filter_map(|(i, v)| Some((i, for_value(missing.get(&v)?)))).collect()))
    }

    /// Of `records` (each `(index, bytes)`), those whose field refers to the
    /// key `refusal` names missing; none when it names none that way.
    pub fn referring<'r>(&self, refusal: &CopyRefusal, records: impl Iterator<Item = (usize, &'r [u8])>) -> Vec<usize> {
        let Some((column, value)) = missing_key(refusal) else { return Vec::new() };
        let Some(at) = self.names.iter().position(|name| name == column) else { return Vec::new() };
        let (mut splitter, mut tuple) = (self.splitter.clone(), Vec::new());
        records
            .filter(|(_, record)| {
                let field = split_columns(&mut splitter, record, &mut tuple, &[at]);
                field.is_some_and(|f| f.first().is_some_and(|v| v.as_deref() == Some(value)))
            })
            .map(|(i, _)| i)
            .collect()
    }
}

/// The column and value of a foreign key's refusal of one column:
/// `Key (dim_id)=(1000) is not present in table "dim".`
fn missing_key(refusal: &CopyRefusal) -> Option<(&str, &str)> {
    if refusal.sqlstate.as_deref() != Some(FOREIGN_KEY_VIOLATION) {
        return None;
    }
    let rest = refusal.detail.as_deref()?.strip_prefix("Key (")?;
    let (column, rest) = rest.split_once(")=(")?;
    let (value, _) = rest.rsplit_once(") is not present in table ")?;
    // A key of two or more columns lists them with ", ", as it does their
    // values: which comma splits which value cannot be told.
    (!column.contains(", ")).then_some((column, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(detail: &str) -> CopyRefusal {
        CopyRefusal {
            sqlstate: Some(FOREIGN_KEY_VIOLATION.into()),
            detail: Some(detail.into()),
            ..CopyRefusal::default()
        }
    }

    #[test]
    fn the_missing_key_is_read_from_the_detail_of_one_column() {
        let one = refusal("Key (dim_id)=(1000) is not present in table \"dim\".");
        assert_eq!(missing_key(&one), Some(("dim_id", "1000")));
        let with_parens = refusal("Key (code)=(a) is not present in table (b)) is not present in table \"c\".");
        assert_eq!(missing_key(&with_parens), Some(("code", "a) is not present in table (b)")));
        assert_eq!(missing_key(&refusal("Key (a, b)=(1, 2) is not present in table \"t\".")), None);
        assert_eq!(missing_key(&refusal("Key is not present in table \"t\".")), None, "no right to read it");
        let check = CopyRefusal { sqlstate: Some("23514".into()), ..one };
        assert_eq!(missing_key(&check), None);
    }
}
