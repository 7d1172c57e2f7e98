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
//! table for every key of the run at once, in one query (its columns'
//! values as the server reads them: `007` finds 7), so each record
//! referring to a missing key is rejected with its own key named, and the
//! rest goes whole; for a key of one column or several. Where it cannot (a
//! key referring to the loaded table itself, whose records may refer to
//! rows of the same run; MATCH FULL; no right to read the referenced
//! table), the key the refusal names is matched as text (one column);
//! where nothing matches (a key of two columns, a message in another
//! language), isolation halves as before. Each reject's detail is the
//! refusal's with its own key's values, in the server's words.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use crate::error::Error;
use crate::format::binary::BinaryEncoder;
use crate::format::FormatOptions;
use crate::sink::postgres::{PgSession, TableInfo, PARTITION_TREE};
use crate::sink::CopyRefusal;

use super::value_check::{split_columns, text_array_literal, text_splitter};

/// What a foreign key's refusal says, and the server's SQLSTATE for it.
const FOREIGN_KEY_VIOLATION: &str = "23503";

/// After [`PARTITION_TREE`] (`$1`, the table's OID): for the foreign key
/// the refusal names (`$2`, its quoted schema and name), MATCH SIMPLE, on
/// the table or a partition of it, referring to another table: for each
/// of its columns in order, that table (as SQL), the referenced column
/// (quoted), the referring column and its type. Once: a partitioned
/// table's partitions hold copies of its key, of the same name.
const REFERENCED: &str = "SELECT DISTINCT ON (k.place) c.confrelid::regclass::text, \
    pg_catalog.quote_ident(ra.attname), fa.attname, pg_catalog.format_type(fa.atttypid, fa.atttypmod) \
    FROM pg_catalog.pg_constraint c \
    JOIN pg_catalog.pg_namespace n ON n.oid = c.connamespace \
    CROSS JOIN LATERAL ROWS FROM (pg_catalog.unnest(c.conkey), pg_catalog.unnest(c.confkey)) WITH ORDINALITY \
      AS k(fk, rk, place) \
    JOIN pg_catalog.pg_attribute fa ON fa.attrelid = c.conrelid AND fa.attnum = k.fk \
    JOIN pg_catalog.pg_attribute ra ON ra.attrelid = c.confrelid AND ra.attnum = k.rk \
    WHERE c.contype = 'f' AND c.confmatchtype = 's' \
    AND '\"' || pg_catalog.replace(n.nspname, '\"', '\"\"') || '\".\"' || pg_catalog.replace(c.conname, '\"', '\"\"') \
      || '\"' = $2 \
    AND c.conrelid IN (SELECT oid FROM tree) AND c.confrelid NOT IN (SELECT oid FROM tree) \
    ORDER BY k.place";

/// A foreign key's column: the referenced table and column (as SQL), the
/// referring column's place among the loaded ones and its type.
struct KeyColumn {
    referenced: String,
    key: String,
    at: usize,
    ty: String,
}

/// Reads the COPY columns' fields as COPY reads them.
pub(super) struct MissingKeys {
    splitter: BinaryEncoder,
    names: Vec<String>,
    /// The table's OID, to find its foreign keys.
    table: u32,
    /// The words around the key's values in each refusal's detail met so
    /// far (see [`around_key`]): a chunk looks up the missing keys of
    /// another chunk's refusal, whose own key is not among its records.
    words_around: Mutex<HashMap<String, (String, String)>>,
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
        let names = columns.iter().map(|(name, _)| name.clone()).collect();
        Some(MissingKeys { splitter, names, table: table.oid, words_around: Mutex::default() })
    }

    /// The foreign key a refusal names (schema and name, quoted).
    pub fn foreign_key_of<'r>(&self, refusal: &'r CopyRefusal) -> Option<&'r str> {
        (refusal.sqlstate.as_deref() == Some(FOREIGN_KEY_VIOLATION)).then_some(refusal.constraint.as_deref()).flatten()
    }

    /// Of `records` (each `(index, bytes)`), those referring to a key the
    /// referenced table does not hold, by the foreign key `refusal` names,
    /// each with the refusal it gets (the server's, for its values), looked
    /// up in one query; `None` when that cannot be (a key referring to the
    /// table itself, whose records may refer to each other; one MATCH FULL
    /// or with a column not loaded; no right to read the referenced table:
    /// the query's refusal leaves the transaction to roll back to the
    /// savepoint). A record with a NULL in the key refers to nothing, as
    /// MATCH SIMPLE has it.
    pub fn look_up<'r>(
        &self,
        session: &PgSession,
        refusal: &CopyRefusal,
        records: impl Iterator<Item = (usize, &'r [u8])>,
    ) -> Result<Option<Vec<(usize, CopyRefusal)>>, Error> {
        let Some(constraint) = self.foreign_key_of(refusal) else { return Ok(None) };
        let Some(columns) = self.key_columns(session, constraint)? else { return Ok(None) };
        let at: Vec<usize> = columns.iter().map(|c| c.at).collect();
        let (mut splitter, mut tuple) = (self.splitter.clone(), Vec::new());
        let keys: Vec<(usize, Vec<String>)> = records
            .filter_map(|(i, record)| {
                let fields = split_columns(&mut splitter, record, &mut tuple, &at)?;
                Some((i, fields.into_iter().collect::<Option<Vec<String>>>()?))
            })
            .collect();
        let distinct: HashSet<&Vec<String>> = keys.iter().map(|(_, key)| key).collect();
        let arrays: Vec<String> = (0..columns.len())
            .map(|k| text_array_literal(&distinct.iter().map(|key| Some(key[k].clone())).collect::<Vec<_>>()))
            .collect();
        let Some(missing) = missing_keys(session, &columns, &arrays)? else { return Ok(None) };
        let around = self.words_around(refusal.detail.as_deref().unwrap_or_default(), &missing);
        let for_key = |shown: &[String]| CopyRefusal {
            detail: around.as_ref().map(|(before, after)| format!("{before}{}{after}", shown.join(", "))),
            ..refusal.clone()
        };
        Ok(Some(keys.into_iter().filter_map(|(i, key)| Some((i, for_key(missing.get(&key)?)))).collect()))
    }

    /// The words around the key's values in `detail`, a refusal's, found
    /// among the keys `missing` or known from an earlier lookup.
    fn words_around(&self, detail: &str, missing: &HashMap<Vec<String>, Vec<String>>) -> Option<(String, String)> {
        let mut known = self.words_around.lock().ok()?;
        if let Some(words) = known.get(detail) {
            return Some(words.clone());
        }
        let (before, after) = around_key(detail, missing.values())?;
        let words = (before.to_string(), after.to_string());
        known.insert(detail.to_string(), words.clone());
        Some(words)
    }

    /// The columns of the foreign key `constraint`, when each is loaded and
    /// it refers to another table (see [`REFERENCED`]).
    fn key_columns(&self, session: &PgSession, constraint: &str) -> Result<Option<Vec<KeyColumn>>, Error> {
        let query = format!("{PARTITION_TREE}{REFERENCED}");
        let params = [Some(self.table.to_string()), Some(constraint.to_string())];
        // Refused (a catalog of another shape), it is not looked up.
        let Ok(rows) = session.query_or_refusal(&query, &params.each_ref().map(Option::as_deref))? else {
            return Ok(None);
        };
        let columns: Option<Vec<KeyColumn>> = rows
            .into_iter()
            .map(|row| {
                let [Some(referenced), Some(key), Some(name), Some(ty)] = <[Option<String>; 4]>::try_from(row).ok()?
                else {
                    return None;
                };
                let at = self.names.iter().position(|loaded| *loaded == name)?;
                Some(KeyColumn { referenced, key, at, ty })
            })
            .collect();
        Ok(columns.filter(|c| !c.is_empty()))
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

/// Keys the referenced table does not hold: each as written (its columns'
/// fields) and as the server writes it.
type Missing = HashMap<Vec<String>, Vec<String>>;

/// Of the distinct keys in `arrays` (one text array a column), those the
/// referenced table does not hold; `None` when the server refused the
/// query.
fn missing_keys(session: &PgSession, columns: &[KeyColumn], arrays: &[String]) -> Result<Option<Missing>, Error> {
    let names: Vec<String> = (0..columns.len()).map(|k| format!("v{k}")).collect();
    let shown: Vec<String> = columns.iter().enumerate().map(|(k, c)| format!("v{k}::{}::text", c.ty)).collect();
    let equal: Vec<String> =
        columns.iter().enumerate().map(|(k, c)| format!("r.{} = u.v{k}::{}", c.key, c.ty)).collect();
    let query = format!(
        "SELECT {}, {} FROM ROWS FROM ({}) AS u({}) WHERE NOT EXISTS (SELECT 1 FROM {} r WHERE {})",
        names.join(", "),
        shown.join(", "),
        arrays.iter().map(|array| format!("pg_catalog.unnest({array})")).collect::<Vec<_>>().join(", "),
        names.join(", "),
        columns[0].referenced,
        equal.join(" AND ")
    );
    let rows = match session.query_statements(&query)? {
        Ok(rows) => rows,
        Err(_) => return Ok(None),
    };
    let width = columns.len();
    let pairs = rows.into_iter().filter_map(|row| {
        let values: Vec<String> = row.into_iter().collect::<Option<Vec<String>>>()?;
        (values.len() == 2 * width).then(|| (values[..width].to_vec(), values[width..].to_vec()))
    });
    Ok(Some(pairs.collect()))
}

/// The server's detail for the missing key it names (`Key (a, b)=(1, 2)
/// is not present in table "t".`, in the server's language) cut around
/// that key's values, which are one of `missing` (each key's values as the
/// server shows them): the words before them and after. Found by the values
/// rather than by the English words around them, as a server writing
/// German words the detail otherwise (`Schlüssel (a)=(1) ist nicht in
/// Tabelle »t« vorhanden.`).
/// Where none of them is the key (another chunk's), the English words.
fn around_key<'d, 'v>(
    detail: &'d str,
    mut missing: impl Iterator<Item = &'v Vec<String>>,
) -> Option<(&'d str, &'d str)> {
    let found = missing.find_map(|values| {
        let key = format!(")=({})", values.join(", "));
        let at = detail.find(&key)?;
        Some((&detail[..at + 3], &detail[at + key.len() - 1..]))
    });
    found.or_else(|| {
        let (columns, _) = detail.split_once(")=(")?;
        let after = ") is not present in table ";
        let (values, _) = detail.rsplit_once(after)?;
        Some((&detail[..columns.len() + 3], &detail[values.len()..]))
    })
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

    #[test]
    fn the_detail_names_each_records_own_key() {
        let shown = |values: &[&str]| values.iter().map(|v| v.to_string()).collect::<Vec<_>>();
        let in_detail = |detail: &str, missing: &[Vec<String>], own: &[String]| {
            around_key(detail, missing.iter()).map(|(before, after)| format!("{before}{}{after}", own.join(", ")))
        };
        let one = "Key (dim_id)=(1000) is not present in table \"dim\".";
        let missing = [shown(&["10"]), shown(&["7"]), shown(&["1000"])];
        let seven = in_detail(one, &missing, &shown(&["7"]));
        assert_eq!(seven.as_deref(), Some("Key (dim_id)=(7) is not present in table \"dim\"."));
        let two = "Key (a, b)=(1, x) is not present in table \"pair\".";
        let own = shown(&["2", "y) is not present in table (z"]);
        let own = in_detail(two, &[own.clone(), shown(&["1", "x"])], &own).unwrap();
        assert_eq!(own, "Key (a, b)=(2, y) is not present in table (z) is not present in table \"pair\".");
        let german = "Schlüssel (a)=(1) ist nicht in Tabelle »t« vorhanden.";
        let two = in_detail(german, &[shown(&["1"])], &shown(&["2"]));
        assert_eq!(two.as_deref(), Some("Schlüssel (a)=(2) ist nicht in Tabelle »t« vorhanden."));
        let another = in_detail(one, &[shown(&["100"])], &shown(&["2"]));
        assert_eq!(another.as_deref(), Some("Key (dim_id)=(2) is not present in table \"dim\"."), "in English");
        assert_eq!(in_detail(german, &[shown(&["100"])], &shown(&["2"])), None, "the refused key is not among them");
    }
}
