//! Finding, in one query, the records of a refused chunk whose key the
//! table already holds or an earlier record of the chunk repeats, so that
//! isolation does not meet them part way through a long COPY.
//!
//! Why our own: a duplicate key the server finds part way through a COPY
//! costs that COPY and a re-copy of the rows before it (rows with their
//! index entries): 2 M rows with 1 % duplicate ids took 37 s, against 1.8 s
//! clean (bench/README.md).
//!
//! How: the key columns' values of the chunk's records (split as COPY
//! splits them) go to the server as text arrays, cast to the columns'
//! types. A record whose key a row of the table holds is rejected with the
//! message the server gives for it (`duplicate key value violates unique
//! constraint`, the key's index and value), and that row is locked against
//! deletion or a change of key (`FOR KEY SHARE`) until the chunk commits,
//! so the server would refuse the record too. That needs the conflict to be
//! the first thing the server refuses the record for: the table has no
//! trigger of the user's (which may change the row) and no CHECK constraint
//! (checked first); records with a NULL where none goes are suspects
//! already, and a value the server refuses is looked for before the record
//! is rejected (`Isolator::check_held_values`). Otherwise, and for a record
//! that repeats an earlier one of the chunk (which may itself be refused),
//! the record goes to COPY alone, a statement of its own instead of a
//! refused run and its re-copy. Keys with a NULL are never named (NULLs are
//! distinct).
//!
//! The query runs only once duplicates are known to be frequent (one in 256
//! records or closer, in a committed chunk or in this one so far: the query
//! costs the server some 2.5 µs a record). It sees the rows other workers
//! committed and this chunk's own; a key another worker's open transaction
//! holds is still met by COPY (which waits for that transaction), and that
//! stops once the workers take turns, or load side by side setting aside
//! the records whose keys an earlier chunk still loading has (see
//! [`super::in_flight`]). The records that repeat an earlier
//! one are asked about again once that one is copied (see
//! `Isolator::check_repeats`): most are then held by the table. A value
//! the cast refuses fails the query; the chunk is then isolated without
//! it.

use crate::error::Error;
use crate::format::binary::BinaryEncoder;
use crate::format::FormatOptions;
use crate::sink::postgres::{PgSession, UniqueKeys};
use crate::sink::CopyRefusal;
use crate::sql::{quote_ident, quote_literal};

use super::value_check::{fields_of, split_columns, text_array_literal, text_splitter};

/// The check for one load's unique keys among its COPY columns.
pub(super) struct KeyCheck {
    /// Splits records as COPY does, every column read as text.
    splitter: BinaryEncoder,
    /// The COPY columns some key uses, and their types.
    used: Vec<(usize, String)>,
    /// Each key, in the order the server checks them: its index's name and
    /// its columns, as indexes into `used`.
    keys: Vec<(String, Vec<usize>)>,
    /// Whether a conflict with a row of the table is the server's reason.
    decide: bool,
    /// The table, quoted, and the COPY columns' names.
    relation: String,
    names: Vec<String>,
    /// How the client compares each used column's values, as `used`.
    compared: Vec<Compared>,
    /// Whether chunks may load at once while keys repeat densely (see
    /// [`super::in_flight`]): every key is of columns the client compares
    /// as the server does, and the only constraint that makes one insert
    /// wait for another.
    in_parallel: bool,
}

/// How the client compares a key column's values as the server does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Compared {
    /// As the integers they read as.
    Integer,
    /// Byte for byte (text with a deterministic collation).
    Bytes,
    /// As the 128-bit numbers they write (uuid).
    Uuid,
    /// As the days they name, written `YYYY-MM-DD` (date).
    Date,
    /// Not at all.
    Not,
}

/// A record's value of one key, as the client reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum KeyValue {
    /// A NULL in it: it repeats no other.
    Null,
    /// Its integers, as one number: exact for a key of one column, a hash
    /// of them for several (two keys of one hash are taken for one: a
    /// record set aside that need not be, never one copied that must not).
    Read(u64),
    /// A value the client does not read as the server does.
    Unread,
}

/// What the check found for one record, by its index among those given.
pub(super) enum Repeated {
    /// The table holds its key: rejected as the server would.
    Held(usize, CopyRefusal),
    /// To copy alone.
    Suspect(usize),
}

impl KeyCheck {
    /// `columns`: COPY's, with their types. `None` when no key is made of
    /// COPY columns only.
    pub fn new(
        relation: &str,
        columns: &[(String, String)],
        unique: &UniqueKeys,
        format: &FormatOptions,
    ) -> Option<KeyCheck> {
        let mut used: Vec<(usize, String)> = Vec::new();
        let mut keys = Vec::new();
        for (index, key) in &unique.keys {
            let positions: Option<Vec<usize>> =
                key.iter().map(|name| columns.iter().position(|(column, _)| column == name)).collect();
            // A key with a column the file does not fill holds its default,
            // which the query cannot see.
            let Some(positions) = positions else { continue };
            let mut at_used = Vec::new();
            for p in positions {
                let at = used.iter().position(|(u, _)| *u == p).unwrap_or_else(|| {
                    used.push((p, columns[p].1.clone()));
                    used.len() - 1
                });
                at_used.push(at);
            }
            keys.push((index.clone(), at_used));
        }
        if keys.is_empty() {
            return None;
        }
        let compared: Vec<Compared> = used
            .iter()
            .map(|(at, ty)| match ty.as_str() {
                "smallint" | "integer" | "bigint" => Compared::Integer,
                "uuid" => Compared::Uuid,
                "date" => Compared::Date,
                _ if unique.byte_equal.contains(&columns[*at].0) => Compared::Bytes,
                _ => Compared::Not,
            })
            .collect();
        let in_parallel =
            unique.decide && unique.only_these && keys.len() == unique.keys.len() && !compared.contains(&Compared::Not);
        Some(KeyCheck {
            compared,
            in_parallel,
            splitter: text_splitter(columns, format)?,
            used,
            keys,
            decide: unique.decide,
            relation: relation.to_string(),
            names: columns.iter().map(|(name, _)| name.clone()).collect(),
        })
    }

    /// Whether chunks may load at once while keys repeat densely (see
    /// [`super::in_flight`]).
    pub fn in_parallel(&self) -> bool {
        self.in_parallel
    }

    /// Each key's value in each of `records` (each whole, line end
    /// included), one vector per key, in the server's order of keys.
    pub fn key_values_read(&self, records: &[&[u8]]) -> Vec<Vec<KeyValue>> {
        let mut splitter = self.splitter.clone();
        let (wanted, mut tuple) = (self.used_columns(), Vec::new());
        let mut values: Vec<Vec<KeyValue>> = vec![Vec::with_capacity(records.len()); self.keys.len()];
        for record in records {
            let fields = fields_of(&mut splitter, record, &mut tuple);
            for (place, (_, key)) in self.keys.iter().enumerate() {
                values[place].push(match &fields {
                    Some(fields) => read_key(key.iter().map(|&k| (self.compared[k], fields.get(wanted[k]).copied()))),
                    None => KeyValue::Unread,
                });
            }
        }
        values
    }

    /// The COPY columns the keys use, in the order of `used`.
    fn used_columns(&self) -> Vec<usize> {
        self.used.iter().map(|(at, _)| *at).collect()
    }

    /// How many of `records` (each whole, line end included, as COPY gets
    /// them) repeat a key of an earlier one, comparing the keys' text: to
    /// tell from a load's first records how dense its duplicates are.
    pub fn repeats_within(&self, records: &[&[u8]]) -> usize {
        let values = self.key_values(records);
        let mut later: Vec<usize> = self.keys.iter().flat_map(|(_, key)| later_by_key(&values, key)).collect();
        later.sort_unstable();
        later.dedup();
        later.len()
    }

    /// The key columns' values of `records` as COPY splits them, one
    /// vector per column of `used` (`None`: NULL, or a record the splitter
    /// is unsure of).
    fn key_values(&self, records: &[&[u8]]) -> Vec<Vec<Option<String>>> {
        let mut splitter = self.splitter.clone();
        let (wanted, mut tuple) = (self.used_columns(), Vec::new());
        let mut values: Vec<Vec<Option<String>>> = vec![Vec::with_capacity(records.len()); self.used.len()];
        for record in records {
            let mut fields = split_columns(&mut splitter, record, &mut tuple, &wanted);
            for (k, column) in values.iter_mut().enumerate() {
                column.push(fields.as_mut().and_then(|f| f[k].take()));
            }
        }
        values
    }

    /// The records among `records` (each whole, line end included) whose
    /// key the table or an earlier record holds; `None` when the server
    /// refused the query, which left the transaction to roll back.
    pub fn repeated(&self, session: &PgSession, records: &[&[u8]]) -> Result<Option<Vec<Repeated>>, Error> {
        let values = self.key_values(records);
        let repeats = self.integer_repeats(&values);
        let query = self.query(&values, session.server_version(), repeats.is_none());
        let rows = match session.query_statements(&query)? {
            Ok(rows) => rows,
            Err(_) => return Ok(None),
        };
        // (record from 1, key's place, index, detail), by record, then by
        // key in the server's order, a held key before a repeat: the first
        // row of a record says what the server meets first.
        let mut met: Vec<(usize, usize, Option<String>, Option<String>)> = rows
            .iter()
            .filter_map(|row| {
                let number = |i: usize| row.get(i)?.as_deref()?.parse::<usize>().ok();
                Some((number(0)?, number(1)?, row.get(2).cloned().flatten(), row.get(3).cloned().flatten()))
            })
            .collect();
        met.extend(repeats.into_iter().flatten().map(|(n, place)| (n, place, None, None)));
        met.sort_by_key(|(n, place, index, _)| (*n, *place, index.is_none()));
        let mut found: Vec<Repeated> = Vec::new();
        let mut last = None;
        for (n, _, index, detail) in met {
            if !(1..=records.len()).contains(&n) || last == Some(n) {
                continue;
            }
            last = Some(n);
            found.push(match (index, detail) {
                (Some(index), Some(detail)) if self.decide => Repeated::Held(n - 1, duplicate(&index, detail)),
                _ => Repeated::Suspect(n - 1),
            });
        }
        Ok(Some(found))
    }

    /// The records (numbered from 1) that repeat an earlier one's key,
    /// with the key's place, found on the client when every key column is
    /// an integer and every value reads as one (as the server reads it:
    /// `007`, `+7` and ` 7` are 7); `None` otherwise, for the query to
    /// find them. Why: the query's grouping of a chunk's keys took a
    /// third of its time (bench/README.md).
    fn integer_repeats(&self, values: &[Vec<Option<String>>]) -> Option<Vec<(usize, usize)>> {
        let integer = |(_, ty): &(usize, String)| matches!(ty.as_str(), "smallint" | "integer" | "bigint");
        if !self.used.iter().all(integer) {
            return None;
        }
        // Outer `None`: not a number the client reads; inner: NULL.
        let read = |v: &Option<String>| match v {
            None => Some(None),
            Some(v) => v.trim_ascii().parse::<i64>().ok().map(Some),
        };
        let numbers: Vec<Vec<Option<i64>>> =
            values.iter().map(|column| column.iter().map(read).collect()).collect::<Option<_>>()?;
        let mut repeats = Vec::new();
        for (place, (_, key)) in self.keys.iter().enumerate() {
            repeats.extend(later_by_key(&numbers, key).into_iter().map(|n| (n + 1, place)));
        }
        repeats.sort_unstable();
        Some(repeats)
    }

    /// The query over `values` (one array per used column): for each record
    /// some key repeats, its number (from 1), the key's place in `keys` and,
    /// when the table holds the key, its index's name and the key as the
    /// server describes it; by record, then key. `server_version`: as
    /// `server_version_num`.
    fn query(&self, values: &[Vec<Option<String>>], server_version: i32, with_repeats: bool) -> String {
        let arrays: Vec<String> = values.iter().map(|v| text_array_literal(v)).collect();
        let casts: Vec<String> =
            self.used.iter().enumerate().map(|(k, (_, ty))| format!("v{k}::{ty} AS k{k}")).collect();
        let names: Vec<String> = (0..self.used.len()).map(|k| format!("v{k}")).collect();
        let mut ctes = vec![format!(
            "r AS MATERIALIZED (SELECT n, {} FROM unnest({}) WITH ORDINALITY AS u({}, n))",
            casts.join(", "),
            arrays.join(", "),
            names.join(", ")
        )];
        let mut selects = Vec::new();
        for (place, (index, key)) in self.keys.iter().enumerate() {
            let parts: Vec<String> = key.iter().map(|k| format!("k{k}")).collect();
            let not_null: Vec<String> = parts.iter().map(|p| format!("{p} IS NOT NULL")).collect();
            let name = |k: usize| &self.names[self.used[k].0];
            let matches: Vec<String> = key.iter().map(|&k| format!("t.{} = d.k{k}", quote_ident(name(k)))).collect();
            // Named as the server names them: quoted only where needed.
            let columns: Vec<String> =
                key.iter().map(|&k| format!("quote_ident({})", quote_literal(name(k)))).collect();
            let described: Vec<String> = parts.iter().map(|p| format!("d.{p}::text")).collect();
            // A probe of the key's index per record, whatever the planner
            // would make of a join with the whole table (a hash of it);
            // only for keys between the table's least and greatest first
            // key column where that column's order needs no collation: new
            // ids past the greatest, most of a chunk of a growing table,
            // are not probed (2.5 µs a record; bench/README.md).
            let first = name(key[0]);
            let in_range = match ordered_without_collation(&self.used[key[0]].1) {
                true => format!(
                    " WHERE d.k{k} BETWEEN (SELECT min(t.{c}) FROM {relation} t) AND (SELECT max(t.{c}) FROM \
                     {relation} t)",
                    k = key[0],
                    c = quote_ident(first),
                    relation = self.relation,
                ),
                false => String::new(),
            };
            ctes.push(format!(
                "h{place} AS (SELECT d.n FROM r d, LATERAL (SELECT 1 FROM {relation} t WHERE {matches} \
                 FOR KEY SHARE) l{in_range})",
                relation = self.relation,
                matches = matches.join(" AND "),
            ));
            selects.push(format!(
                "SELECT n, {place} AS place, {index}, format('Key (%s)=(%s) already exists.', \
                 concat_ws(', ', {columns}), concat_ws(', ', {described})) FROM r d WHERE n IN (SELECT n FROM h{place})",
                index = quote_literal(index),
                columns = columns.join(", "),
                described = described.join(", "),
            ));
            if !with_repeats {
                continue;
            }
            let joined: Vec<String> = parts.iter().map(|p| format!("d.{p} = f.{p}")).collect();
            selects.push(format!(
                "SELECT d.n, {place}, NULL, NULL FROM r d JOIN (SELECT {parts}, min(n) AS first FROM r \
                 WHERE {not_null} GROUP BY {parts} HAVING count(*) > 1) f ON {joined} WHERE d.n > f.first",
                parts = parts.join(", "),
                not_null = not_null.join(" AND "),
                joined = joined.join(" AND "),
            ));
        }
        // A chunk's keys fit in memory: no sort or hash spilled to disk (the
        // settings end with the chunk's transaction). The planner's cost of
        // a probe per record (8 a record: 500,000 for a chunk of 63,000)
        // passes JIT's thresholds, and compiling the query with inlining
        // and optimization took 170-220 ms of the server's 300-450: more
        // than running it (PostgreSQL 15, bench/README.md). JIT came with
        // PostgreSQL 11; the setting would fail the query before it.
        let jit_off = if server_version >= 110_000 { " SET LOCAL jit = off;" } else { "" };
        format!(
            "SET LOCAL work_mem = '64MB';{jit_off} WITH {} SELECT * FROM ({}) found ORDER BY 1, 2, 3",
            ctes.join(", "),
            selects.join(" UNION ALL ")
        )
    }
}

/// A key's value from its columns' fields, each with how it compares
/// (`Some(None)`: NULL; `None`: no such field), as the client reads it: the
/// server reads `007`, `+7` and ` 7` as the integer 7, as Rust's parse
/// (after trimming) does; anything else (PostgreSQL 16's `1_000`, a value
/// the server will refuse) is unread. One integer is itself; anything
/// else a hash of its parts.
fn read_key<'f>(parts: impl Iterator<Item = (Compared, Option<Option<&'f [u8]>>)>) -> KeyValue {
    let (mut parts_read, mut integer, mut hashed) = (0, None, Vec::new());
    for (compared, field) in parts {
        let Some(field) = field else { return KeyValue::Unread };
        let Some(bytes) = field else { return KeyValue::Null };
        parts_read += 1;
        match compared {
            Compared::Integer => {
                let text = std::str::from_utf8(bytes.trim_ascii()).ok();
                let Some(number) = text.and_then(|text| text.parse::<i64>().ok()) else { return KeyValue::Unread };
                integer = Some(number);
                hashed.extend(number.to_le_bytes());
            }
            Compared::Bytes => {
                integer = None;
                hashed.extend((bytes.len() as u64).to_le_bytes());
                hashed.extend(bytes);
            }
            Compared::Uuid => {
                let Some(uuid) = read_uuid(bytes) else { return KeyValue::Unread };
                integer = None;
                hashed.extend(uuid.to_le_bytes());
            }
            Compared::Date => {
                let Some(day) = read_iso_date(bytes.trim_ascii()) else { return KeyValue::Unread };
                integer = None;
                hashed.extend(day.to_le_bytes());
            }
            Compared::Not => return KeyValue::Unread,
        }
    }
    match (parts_read, integer) {
        (1, Some(number)) => KeyValue::Read(number as u64),
        _ => KeyValue::Read(xxhash_rust::xxh3::xxh3_64(&hashed)),
    }
}

/// A uuid's 128 bits: 32 hex digits in either case, hyphens anywhere
/// between them, in braces or not. The server takes hyphens only between
/// groups of four digits; a value it refuses takes no key, so reading more
/// here can set a record aside that need not be, never copy one that must
/// not.
fn read_uuid(text: &[u8]) -> Option<u128> {
    let text = match text {
        [b'{', inner @ .., b'}'] => inner,
        _ => text,
    };
    let (mut value, mut digits) = (0u128, 0);
    for &b in text.iter().filter(|&&b| b != b'-') {
        value = value << 4 | u128::from((b as char).to_digit(16)?);
        digits += 1;
    }
    (digits == 32).then_some(value)
}

/// A date written `YYYY-MM-DD`, as one number (`20240131`), which the
/// server reads year first whatever its `DateStyle`. Any other way of
/// writing one (`2024-1-31`, `31/01/2024`, `today`) is unread here; a
/// day that does not exist takes no key (the server refuses it).
fn read_iso_date(text: &[u8]) -> Option<u32> {
    let [y1, y2, y3, y4, b'-', m1, m2, b'-', d1, d2] = *text else { return None };
    [y1, y2, y3, y4, m1, m2, d1, d2]
        .iter()
        .try_fold(0u32, |number, &digit| digit.is_ascii_digit().then(|| number * 10 + u32::from(digit - b'0')))
}

/// The records (by index) whose `key` (its columns' places in
/// `columns`, one vector of values per column) an earlier record has. A
/// key with a NULL (`None`) repeats nothing.
fn later_by_key<T: Ord + Clone>(columns: &[Vec<Option<T>>], key: &[usize]) -> Vec<usize> {
    let records = columns.first().map_or(0, Vec::len);
    match key {
        // One column, the usual key: no allocation per record for integers.
        &[k] => later_records((0..records).filter_map(|n| Some((columns[k][n].clone()?, n))).collect()),
        _ => later_records(
            (0..records)
                .filter_map(|n| Some((key.iter().map(|&k| columns[k][n].clone()).collect::<Option<Vec<T>>>()?, n)))
                .collect(),
        ),
    }
}

/// The records (by index) whose key an earlier record has, of `keyed`
/// (each record's key and index): sorted by key, then record, in each run
/// of one key the records after its first.
fn later_records<K: Ord>(mut keyed: Vec<(K, usize)>) -> Vec<usize> {
    keyed.sort_unstable();
    keyed.windows(2).filter(|pair| pair[0].0 == pair[1].0).map(|pair| pair[1].1).collect()
}

/// Whether values of SQL type `ty` (as `format_type` writes it) compare in
/// the order of the type's default B-tree operator class, without a
/// collation, and have `min` and `max` (uuid has none): the key query's
/// range filter then matches the key's index.
fn ordered_without_collation(ty: &str) -> bool {
    let base = ty.split('(').next().unwrap_or(ty).trim();
    matches!(
        base,
        "smallint"
            | "integer"
            | "bigint"
            | "numeric"
            | "date"
            | "timestamp without time zone"
            | "timestamp with time zone"
            | "timestamp"
    )
}

/// The server's refusal of a row whose key `index` already holds.
fn duplicate(index: &str, detail: String) -> CopyRefusal {
    CopyRefusal {
        sqlstate: Some("23505".into()),
        message: format!("duplicate key value violates unique constraint \"{index}\""),
        detail: Some(detail),
        ..CopyRefusal::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::FormatKind;

    /// One key `index` of `columns`, the table's only constraint, with no
    /// trigger or CHECK.
    fn only_key(index: &str, columns: &[&str]) -> UniqueKeys {
        let columns = columns.iter().map(|c| c.to_string()).collect();
        UniqueKeys { keys: vec![(index.into(), columns)], decide: true, only_these: true, byte_equal: Vec::new() }
    }

    /// The check of `unique` among COPY's `columns` (name, type) of
    /// `public.orders`.
    fn check_of(columns: &[(&str, &str)], unique: &UniqueKeys) -> KeyCheck {
        let columns: Vec<(String, String)> = columns.iter().map(|(c, t)| (c.to_string(), t.to_string())).collect();
        KeyCheck::new("public.orders", &columns, unique, &FormatOptions::new(FormatKind::Tsv)).unwrap()
    }

    fn orders_check() -> KeyCheck {
        check_of(&[("id", "integer"), ("note", "text")], &only_key("orders_pkey", &["id"]))
    }

    #[test]
    fn only_keys_within_the_tables_range_are_probed_where_their_order_needs_no_collation() {
        let values = vec![vec![Some("1".to_string())]];
        let query = orders_check().query(&values, 150_000, true);
        let range = r#"WHERE d.k0 BETWEEN (SELECT min(t."id") FROM public.orders t) AND (SELECT max(t."id") FROM public.orders t)"#;
        assert!(query.contains(range), "{query}");
        let text = check_of(&[("code", "text")], &only_key("codes_pkey", &["code"]));
        assert!(!text.query(&values, 150_000, true).contains("BETWEEN"), "a text key's order is its collation's");
    }

    #[test]
    fn integer_keys_repeated_within_the_records_are_found_on_the_client_as_the_server_reads_them() {
        let check = orders_check();
        let column = |values: &[Option<&str>]| vec![values.iter().map(|v| v.map(str::to_string)).collect()];
        let values = column(&[Some("1"), Some("2"), Some(" 01"), None, Some("+2"), None]);
        assert_eq!(check.integer_repeats(&values), Some(vec![(3, 0), (5, 0)]));
        assert!(!check.query(&values, 150_000, false).contains("HAVING"), "no grouping on the server");
        // A value the client does not read as the server would: the query finds them.
        assert_eq!(check.integer_repeats(&column(&[Some("1"), Some("1_000")])), None);
        let text = check_of(&[("code", "text")], &only_key("codes_pkey", &["code"]));
        assert_eq!(text.integer_repeats(&column(&[Some("a"), Some("a")])), None);
    }

    #[test]
    fn keys_are_read_as_the_server_reads_them_or_left_unread() {
        let check = orders_check();
        assert!(check.in_parallel(), "an integer key, the table's only constraint");
        let records: [&[u8]; 6] = [b"7\ta\n", b" 007\tb\n", b"+7\tc\n", b"\\N\td\n", b"1_000\te\n", b"7\n"];
        let read = check.key_values_read(&records);
        use KeyValue::*;
        assert_eq!(read, vec![vec![Read(7), Read(7), Read(7), Null, Unread, Unread]]);
        let columns = [("a", "bigint"), ("b", "integer")];
        let pair = check_of(&columns, &only_key("ab", &["a", "b"]));
        let read = pair.key_values_read(&[b"1\t2\n", b"01\t2\n", b"2\t1\n", b"1\t\\N\n"]);
        assert_eq!(read[0][0], read[0][1], "one key, written two ways");
        assert_ne!(read[0][0], read[0][2]);
        assert_eq!(read[0][3], Null);
        let not_parallel = |unique: UniqueKeys, columns: &[(&str, &str)]| !check_of(columns, &unique).in_parallel();
        let key = || only_key("ab", &["a", "b"]);
        assert!(not_parallel(UniqueKeys { decide: false, ..key() }, &columns), "a trigger");
        assert!(not_parallel(UniqueKeys { only_these: false, ..key() }, &columns), "an expression");
        let mut other = key();
        other.keys.push(("c".into(), vec!["c".into()]));
        assert!(not_parallel(other, &columns), "a key COPY does not fill");
        let text = [("a", "text"), ("b", "integer")];
        assert!(not_parallel(key(), &text), "a text column of a nondeterministic collation");
        let uuid = check_of(&[("u", "uuid")], &only_key("u_key", &["u"]));
        assert!(uuid.in_parallel());
        let read = uuid.key_values_read(&[
            b"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\n",
            b"{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}\n",
            b"a0eebc999c0b4ef8bb6d6bb9bd380a11\n",
            b"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12\n",
            b"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1\n",
            b"not a uuid\n",
        ]);
        assert_eq!((read[0][0], read[0][1]), (read[0][2], read[0][0]), "one uuid, written three ways");
        assert_ne!(read[0][0], read[0][3]);
        assert_eq!((read[0][4], read[0][5]), (Unread, Unread));
        let dated = check_of(&[("d", "date"), ("n", "integer")], &only_key("d_n", &["d", "n"]));
        assert!(dated.in_parallel());
        let read =
            dated.key_values_read(&[b"2024-01-31\t1\n", b" 2024-01-31\t01\n", b"2024-01-30\t1\n", b"2024-1-31\t1\n"]);
        assert_eq!(read[0][0], read[0][1]);
        assert_ne!(read[0][0], read[0][2]);
        assert_eq!(read[0][3], Unread, "not written YYYY-MM-DD");
        let check = check_of(&text, &UniqueKeys { byte_equal: vec!["a".into()], ..key() });
        assert!(check.in_parallel(), "text compared byte for byte");
        let read = check.key_values_read(&[b"x\t1\n", b"x\t01\n", b"x \t1\n", b"X\t1\n", b"x\t2\n"]);
        assert_eq!(read[0][0], read[0][1]);
        for other in 2..5 {
            assert_ne!(read[0][0], read[0][other], "record {other}");
        }
    }

    #[test]
    fn repeats_within_records_count_records_whose_key_came_before() {
        let check = orders_check();
        let records: [&[u8]; 6] = [b"1\ta\n", b"2\tb\n", b"1\tc\n", b"\\N\td\n", b"\\N\te\n", b"1\tf\n"];
        // NULL keys repeat nothing; the third 1 counts once more.
        assert_eq!(check.repeats_within(&records), 2);
    }

    #[test]
    fn the_query_is_not_compiled_where_the_server_can() {
        let values = vec![vec![Some("1".to_string()), Some("2".to_string())]];
        let check = orders_check();
        let query = check.query(&values, 150_000, true);
        assert!(query.starts_with("SET LOCAL work_mem = '64MB'; SET LOCAL jit = off; WITH "), "{query}");
        let before_jit = check.query(&values, 100_000, true);
        assert!(!before_jit.contains("jit"), "{before_jit}");
        assert!(query.contains(r#"unnest(E'{"1","2"}'::text[])"#), "{query}");
    }
}
