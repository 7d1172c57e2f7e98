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
//! constraint`, the key's index and value, in the server's language: see
//! [`wording`](super::wording)), and that row is locked against
//! deletion or a change of key (`FOR KEY SHARE`) until the chunk commits,
//! so the server would refuse the record too (with `--on-conflict-do-nothing`
//! the record is skipped instead, and nothing locked: see
//! [`KeyCheck::skipping`]). That needs the conflict to be
//! the first thing the server refuses the record for: the table has no
//! BEFORE INSERT row trigger of the user's (which may change the row; an
//! AFTER trigger runs once the row is in its indexes), and no CHECK
//! constraint (checked first) or only CHECKs the CHECK query judges, which
//! isolation then asks about the held records (see
//! [`KeyCheck::deciding_after_checks`]); records with a NULL where none goes are suspects
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
use crate::format::binary::{
    time_value, type_modifiers, without_modifier, BinaryEncoder, Codec, DateOrder, SessionDates,
};
use crate::format::FormatOptions;
use crate::sink::postgres::{PgSession, UniqueKeys};
use crate::sink::CopyRefusal;
use crate::sql::{parse_qualified_name, quote_ident, quote_literal};

use super::value_check::{fields_of, split_columns, text_array_literal, text_splitter};
use super::wording::Wording;

/// The check for one load's unique keys among its COPY columns.
pub(super) struct KeyCheck {
    /// Splits records as COPY does, every column read as text.
    splitter: BinaryEncoder,
    /// The COPY columns some key uses, and their types.
    used: Vec<(usize, String)>,
    /// Each key, in the order the server checks them: its index's name and
    /// its columns, as indexes into `used`.
    keys: Vec<(String, Vec<usize>)>,
    /// For each of `keys`, each column's ` COLLATE ...` where its index
    /// compares it by a collation other than the column's own, or "".
    collate: Vec<Vec<String>>,
    /// Whether a conflict with a row of the table is the server's reason.
    decide: bool,
    /// Whether it is once the record passes the table's CHECKs, which
    /// isolation then looks up for the records found held (see
    /// [`KeyCheck::deciding_after_checks`]).
    after_checks: bool,
    /// Whether the records found held are skipped, not rejected: their rows
    /// are not locked and their message is not written (see
    /// [`KeyCheck::skipping`]).
    skipping: bool,
    /// Whether the table is partitioned (see [`KeyCheck::index_named`]).
    partitioned: bool,
    /// The table, quoted, and the COPY columns' names.
    relation: String,
    names: Vec<String>,
    /// How the client compares each used column's values, as `used`.
    compared: Vec<Compared>,
    /// Which of day and month the sessions read first (see [`Compared::Time`]).
    date_order: Option<DateOrder>,
    /// Whether chunks may load at once while keys repeat densely (see
    /// [`super::in_flight`]): every key is of columns the client compares
    /// as the server does, and the only constraint that makes one insert
    /// wait for another.
    in_parallel: bool,
    /// How a held record's refusal is worded: in the server's language.
    wording: Wording,
}

/// How the client compares a key column's values as the server does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Compared {
    /// As the integers they read as.
    Integer,
    /// Byte for byte (text and varchar with a deterministic collation),
    /// cut to the column's length in characters where it has one: the
    /// server cuts the spaces past it (`'ab  '` is `'ab'` in varchar(2)).
    Bytes { chars: Option<usize> },
    /// Byte for byte without the spaces at the end, which char(n) ignores
    /// (with a deterministic collation).
    Padded,
    /// As the 128-bit numbers they write (uuid).
    Uuid,
    /// As the decimal numbers they write (`1.50` is `01.5`), where none
    /// has more fraction digits than the column keeps (`scale`), which
    /// the server would round away.
    Decimal { scale: Option<usize> },
    /// As the day or instant the binary encoder reads them as (`codec`:
    /// date, timestamp or timestamptz), rounded to the `digits` of a
    /// second the column keeps, as the server rounds them.
    Time { codec: Codec, digits: u32 },
    /// Not at all.
    Not,
}

impl Compared {
    /// How values of type `ty` (as `format_type` writes it) compare:
    /// `byte_equal` for a text type whose collation is deterministic, and
    /// `bare_is_utc` for a session that reads a timestamptz without an
    /// offset as UTC (another zone's summer hour makes two writings one).
    fn of_type(ty: &str, byte_equal: bool, bare_is_utc: bool) -> Compared {
        let modifier = type_modifiers(ty);
        let first = modifier.first().and_then(|&n| usize::try_from(n).ok());
        let digits = first.map_or(6, |d| d.min(6) as u32);
        match without_modifier(ty).as_str() {
            "smallint" | "integer" | "bigint" => Compared::Integer,
            "uuid" => Compared::Uuid,
            "numeric" => match modifier[..] {
                [] => Compared::Decimal { scale: None },
                [_] => Compared::Decimal { scale: Some(0) },
                [_, scale] => usize::try_from(scale).map_or(Compared::Not, |s| Compared::Decimal { scale: Some(s) }),
                _ => Compared::Not,
            },
            "date" => Compared::Time { codec: Codec::Date, digits },
            "timestamp without time zone" => Compared::Time { codec: Codec::Timestamp, digits },
            "timestamp with time zone" => {
                let codec = if bare_is_utc { Codec::TimestampTzUtc } else { Codec::TimestampTz };
                Compared::Time { codec, digits }
            }
            "text" if byte_equal => Compared::Bytes { chars: None },
            "character varying" if byte_equal => Compared::Bytes { chars: first },
            "character" if byte_equal => Compared::Padded,
            _ => Compared::Not,
        }
    }
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
        dates: SessionDates,
    ) -> Option<KeyCheck> {
        let mut used: Vec<(usize, String)> = Vec::new();
        let (mut keys, mut collate) = (Vec::new(), Vec::new());
        for (place, (index, key)) in unique.keys.iter().enumerate() {
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
            let collated = unique.collations.get(place);
            let by = |part: usize| collated.and_then(|c| c.get(part)?.as_ref()).map(|c| format!(" COLLATE {c}"));
            collate.push((0..at_used.len()).map(|part| by(part).unwrap_or_default()).collect());
            keys.push((index.clone(), at_used));
        }
        if keys.is_empty() {
            return None;
        }
        let compared: Vec<Compared> = used
            .iter()
            .map(|(at, ty)| Compared::of_type(ty, unique.byte_equal.contains(&columns[*at].0), dates.bare_is_utc))
            .collect();
        let in_parallel = unique.decide
            && unique.only_these
            && unique.untriggered
            && keys.len() == unique.keys.len()
            && !compared.contains(&Compared::Not);
        Some(KeyCheck {
            compared,
            date_order: dates.order,
            in_parallel,
            splitter: text_splitter(columns, format)?,
            used,
            keys,
            collate,
            decide: unique.decide,
            after_checks: false,
            skipping: false,
            partitioned: unique.partitioned,
            relation: relation.to_string(),
            names: columns.iter().map(|(name, _)| name.clone()).collect(),
            wording: Wording::new(""),
        })
    }

    /// The check for `--on-conflict-do-nothing`, whose records found held
    /// are skipped: it locks no row, and writes no message for them (a
    /// skipped record's is counted, never shown; writing it took a fifth of
    /// the query, 160 ms against 125 for 62,500 held records). A rejected record's row is locked so
    /// that its reason still holds when the chunk commits; a skipped one's
    /// key is as `INSERT ... ON CONFLICT DO NOTHING` finds it, at its
    /// moment, which locks nothing either. Locking every row an export
    /// repeats wrote each of them again (10 % of such a load's time).
    pub fn skipping(self) -> KeyCheck {
        KeyCheck { skipping: true, ..self }
    }

    /// The check for a table whose CHECKs are all that may refuse a held
    /// record first (no BEFORE INSERT row trigger of the user's): the held
    /// records are named as such, and isolation rejects for its key only
    /// those whose values pass the CHECKs (see [`super::check_constraint`]).
    /// Why: with any CHECK on the table, each held record went to COPY
    /// alone; 200,000 records of which a third were held took 4.3 s against
    /// 0.5 s into the same table without its CHECK (bench/README.md).
    pub fn deciding_after_checks(self) -> KeyCheck {
        KeyCheck { decide: true, after_checks: true, ..self }
    }

    /// See [`KeyCheck::deciding_after_checks`].
    pub fn after_checks(&self) -> bool {
        self.after_checks
    }

    /// The check for a server writing its messages under `lc_messages`
    /// (see [`Wording`]).
    pub fn worded_in(self, lc_messages: &str) -> KeyCheck {
        KeyCheck { wording: Wording::new(lc_messages), ..self }
    }

    /// Takes the words of COPY's `refusal` for a duplicate key (see
    /// [`Wording`]).
    pub fn learn_wording(&self, refusal: &CopyRefusal) {
        if refusal.sqlstate.as_deref() != Some(UNIQUE_VIOLATION) {
            return;
        }
        let index = refusal.constraint.as_deref().and_then(parse_qualified_name).and_then(|mut parts| parts.pop());
        if let Some(index) = index {
            self.wording.learn(&index, &duplicate(&index, None).message, refusal);
        }
    }

    /// The refusal of a record whose key `index` holds (`detail` in
    /// English, from the query), in the server's words; `None` where they
    /// are not known yet (COPY is to word it). With
    /// [`KeyCheck::skipping`] it is never shown, and English does.
    fn held_refusal(&self, index: &str, detail: String) -> Option<CopyRefusal> {
        if self.skipping {
            return Some(duplicate(index, Some(detail)));
        }
        let inner = detail.strip_prefix("Key ").and_then(|d| d.strip_suffix(" already exists.")).map(str::to_string);
        let english = || {
            let refusal = duplicate(index, Some(detail));
            Some((refusal.message, refusal.detail))
        };
        let (message, detail) = self.wording.words(index, inner.as_deref(), english)?;
        Some(CopyRefusal { message, detail, ..duplicate(index, None) })
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
                    Some(fields) => read_key(
                        key.iter().map(|&k| (self.compared[k], fields.get(wanted[k]).copied())),
                        self.date_order,
                    ),
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
    /// them) repeat a key of an earlier one, comparing the keys' text or,
    /// where the client reads them, their values (`7` and `7   ` in
    /// char(n)): to tell from a load's first records how dense its
    /// duplicates are.
    pub fn repeats_within(&self, records: &[&[u8]]) -> usize {
        let values = self.key_values(records);
        let mut later: Vec<usize> = self.keys.iter().flat_map(|(_, key)| later_by_key(&values, key)).collect();
        for read in self.key_values_read(records) {
            let keyed = read.iter().enumerate().filter_map(|(n, key)| match key {
                KeyValue::Read(value) => Some((*value, n)),
                _ => None,
            });
            later.extend(later_records(keyed.collect()));
        }
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
                (Some(index), Some(detail)) if self.decide => match self.held_refusal(&index, detail) {
                    Some(refusal) => Repeated::Held(n - 1, refusal),
                    None => Repeated::Suspect(n - 1),
                },
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

    /// The key `index` (at `place`, of the used columns `key`): the records
    /// whose key a row of the table holds, with the index's name and the
    /// key as the server's message describes them, each row locked against
    /// a change of key until the chunk commits (CTEs added to `ctes`);
    /// when skipping, neither locked nor described.
    fn held_sql(
        &self,
        place: usize,
        index: &str,
        key: &[usize],
        server_version: i32,
        ctes: &mut Vec<String>,
    ) -> String {
        let collate = &self.collate[place];
        let name = |k: usize| &self.names[self.used[k].0];
        // Compared as the key's index compares them.
        let matches: Vec<String> =
            key.iter().zip(collate).map(|(&k, c)| format!("t.{} = d.k{k}{c}", quote_ident(name(k)))).collect();
        // Named as the server names them: quoted only where needed.
        let columns: Vec<String> = key.iter().map(|&k| format!("quote_ident({})", quote_literal(name(k)))).collect();
        // Each value by its type's output, as the server's message writes
        // it (`::text` gives an inet its mask and takes char(n)'s padding
        // away).
        let described: Vec<String> = key.iter().map(|k| format!("d.k{k}")).collect();
        // A probe of the key's index per record, whatever the planner would
        // make of a join with the whole table (a hash of it); only for keys
        // between the table's least and greatest first key column where
        // that column's order needs no collation: new ids past the
        // greatest, most of a chunk of a growing table, are not probed
        // (2.5 µs a record; bench/README.md).
        let in_range = match ordered_without_collation(&self.used[key[0]].1) {
            true => format!(
                " WHERE d.k{k} BETWEEN (SELECT min(t.{c}) FROM {relation} t) AND (SELECT max(t.{c}) FROM {relation} t)",
                k = key[0],
                c = quote_ident(name(key[0])),
                relation = self.relation,
            ),
            false => String::new(),
        };
        ctes.push(format!(
            "h{place} AS (SELECT d.n, l.part FROM r d, LATERAL (SELECT t.tableoid AS part FROM {relation} t \
             WHERE {matches}{lock}) l{in_range})",
            relation = self.relation,
            matches = matches.join(" AND "),
            lock = if self.skipping { "" } else { " FOR KEY SHARE" },
        ));
        if self.skipping {
            return format!(
                "SELECT d.n, {place} AS place, {}, '' FROM r d JOIN h{place} h ON h.n = d.n",
                quote_literal(index)
            );
        }
        let named = self.index_named(index, place, server_version, ctes);
        format!(
            "SELECT d.n, {place} AS place, {named}, format('Key (%s)=(%s) already exists.', \
             concat_ws(', ', {columns}), concat_ws(', ', {described})) FROM r d JOIN h{place} h ON h.n = d.n",
            columns = columns.join(", "),
            described = described.join(", "),
        )
    }

    /// The key at `place` (of the used columns `key`): the records whose
    /// key an earlier record has, compared as its index compares them.
    fn repeats_sql(&self, place: usize, key: &[usize]) -> String {
        let parts: Vec<String> = key.iter().map(|k| format!("k{k}")).collect();
        let compared: Vec<String> = parts.iter().zip(&self.collate[place]).map(|(p, c)| format!("{p}{c}")).collect();
        let not_null: Vec<String> = parts.iter().map(|p| format!("{p} IS NOT NULL")).collect();
        let joined: Vec<String> = compared.iter().zip(&parts).map(|(c, p)| format!("d.{c} = f.{p}")).collect();
        let grouped: Vec<String> = compared.iter().zip(&parts).map(|(c, p)| format!("{c} AS {p}")).collect();
        format!(
            "SELECT d.n, {place}, NULL, NULL FROM r d JOIN (SELECT {grouped}, min(n) AS first FROM r \
             WHERE {not_null} GROUP BY {compared} HAVING count(*) > 1) f ON {joined} WHERE d.n > f.first",
            grouped = grouped.join(", "),
            compared = compared.join(", "),
            not_null = not_null.join(" AND "),
            joined = joined.join(" AND "),
        )
    }

    /// The name of the key `index` (at `place`) for a record the row
    /// `h.part` holds, as the server's message names it: in a partitioned
    /// table, that of the row's partition's index that is part of it,
    /// found once per partition met (in a CTE added to `ctes`). Before
    /// PostgreSQL 12 (no `pg_partition_ancestors`), the table's.
    fn index_named(&self, index: &str, place: usize, server_version: i32, ctes: &mut Vec<String>) -> String {
        let index = quote_literal(index);
        if !self.partitioned || server_version < 120_000 {
            return index;
        }
        ctes.push(format!(
            "p{place} AS (SELECT q.part, c.relname FROM (SELECT DISTINCT part FROM h{place}) q \
             JOIN pg_catalog.pg_index i ON i.indrelid = q.part JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid \
             WHERE (SELECT x.oid FROM pg_catalog.pg_class x WHERE x.relname = {index} AND x.relnamespace = \
             (SELECT relnamespace FROM pg_catalog.pg_class WHERE oid = {relation}::regclass)) \
             IN (SELECT relid FROM pg_catalog.pg_partition_ancestors(i.indexrelid)))",
            relation = quote_literal(&self.relation),
        ));
        format!("coalesce((SELECT p.relname FROM p{place} p WHERE p.part = h.part), {index})")
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
            selects.push(self.held_sql(place, index, key, server_version, &mut ctes));
            if with_repeats {
                selects.push(self.repeats_sql(place, key));
            }
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
/// else a hash of its parts. `order`: the sessions' order of day and month.
fn read_key<'f>(
    parts: impl Iterator<Item = (Compared, Option<Option<&'f [u8]>>)>,
    order: Option<DateOrder>,
) -> KeyValue {
    let (mut parts_read, mut integer, mut hashed) = (0, None, Vec::new());
    for (compared, field) in parts {
        let Some(field) = field else { return KeyValue::Unread };
        let Some(bytes) = field else { return KeyValue::Null };
        parts_read += 1;
        integer = None;
        let read = match compared {
            Compared::Integer => {
                let text = std::str::from_utf8(bytes.trim_ascii()).ok();
                text.and_then(|text| text.parse::<i64>().ok()).map(|number| {
                    integer = Some(number);
                    hashed.extend(number.to_le_bytes());
                })
            }
            Compared::Bytes { chars } => {
                hash_text(&mut hashed, within_chars(bytes, chars));
                Some(())
            }
            Compared::Padded => {
                hash_text(&mut hashed, without_trailing_spaces(bytes));
                Some(())
            }
            Compared::Uuid => read_uuid(bytes).map(|uuid| hashed.extend(uuid.to_le_bytes())),
            Compared::Decimal { scale } => read_decimal(bytes.trim_ascii(), scale, &mut hashed),
            Compared::Time { codec, digits } => {
                time_value(codec, bytes, order).map(|value| hashed.extend(rounded(value, codec, digits).to_le_bytes()))
            }
            Compared::Not => None,
        };
        if read.is_none() {
            return KeyValue::Unread;
        }
    }
    match (parts_read, integer) {
        (1, Some(number)) => KeyValue::Read(number as u64),
        _ => KeyValue::Read(xxhash_rust::xxh3::xxh3_64(&hashed)),
    }
}

/// Adds a text value to a key's hash, after its length (so that two parts
/// cannot run into each other).
fn hash_text(hashed: &mut Vec<u8>, text: &[u8]) {
    hashed.extend((text.len() as u64).to_le_bytes());
    hashed.extend(text);
}

/// `text` cut to its first `chars` characters (UTF-8), as varchar(n)
/// cuts a value whose characters past n are spaces (it refuses any other).
fn within_chars(text: &[u8], chars: Option<usize>) -> &[u8] {
    let Some(chars) = chars.filter(|&n| text.len() > n) else { return text };
    let starts = text.iter().enumerate().filter(|(_, &b)| b & 0xc0 != 0x80).map(|(at, _)| at);
    match starts.clone().nth(chars) {
        Some(end) => &text[..end],
        None => text,
    }
}

/// `text` without the spaces at its end, which char(n) ignores.
fn without_trailing_spaces(text: &[u8]) -> &[u8] {
    let end = text.iter().rposition(|&b| b != b' ').map_or(0, |at| at + 1);
    &text[..end]
}

/// Adds a decimal number's value to a key's hash: its sign, then its
/// digits without the zeros before or after them that do not change it
/// (`-01.50` is `-1.5`; `-0` is `0`), or `NaN` (equal to itself in an
/// index). `None` for anything else the server reads (an exponent,
/// `Infinity`, PostgreSQL 16's `1_000` and `0x1F`) and for a value with
/// more fraction digits than the column's `scale`, which the server
/// rounds.
fn read_decimal(text: &[u8], scale: Option<usize>, hashed: &mut Vec<u8>) -> Option<()> {
    if text.eq_ignore_ascii_case(b"NaN") {
        hashed.extend(b"NaN\0");
        return Some(());
    }
    let (negative, unsigned) = match text {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, text),
    };
    let (whole, fraction) = match unsigned.iter().position(|&b| b == b'.') {
        Some(point) => (&unsigned[..point], &unsigned[point + 1..]),
        None => (unsigned, &b""[..]),
    };
    let digits = |part: &[u8]| part.iter().all(u8::is_ascii_digit);
    if whole.len() + fraction.len() == 0 || !digits(whole) || !digits(fraction) {
        return None;
    }
    let whole = &whole[whole.iter().position(|&b| b != b'0').unwrap_or(whole.len())..];
    let fraction = &fraction[..fraction.iter().rposition(|&b| b != b'0').map_or(0, |at| at + 1)];
    if scale.is_some_and(|scale| fraction.len() > scale) {
        return None;
    }
    let zero = whole.is_empty() && fraction.is_empty();
    hashed.push(if negative && !zero { b'-' } else { b'+' });
    hash_text(hashed, whole);
    hash_text(hashed, fraction);
    Some(())
}

/// A timestamp's microseconds from 2000-01-01 rounded to `digits` of a
/// second, as the server rounds a value for timestamp(0) to (5): halves
/// away from 2000-01-01 (`AdjustTimestampForTypmod`). Dates are days, and
/// stay as they are.
fn rounded(value: i64, codec: Codec, digits: u32) -> i64 {
    if codec == Codec::Date || digits >= 6 || value == i64::MIN || value == i64::MAX {
        return value;
    }
    let scale = 10i64.pow(6 - digits);
    match value >= 0 {
        true => (value + scale / 2) / scale * scale,
        false => -((-value + scale / 2) / scale * scale),
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

/// SQLSTATE of a duplicate key.
const UNIQUE_VIOLATION: &str = "23505";

/// The server's refusal, in English, of a row whose key `index` already
/// holds.
fn duplicate(index: &str, detail: Option<String>) -> CopyRefusal {
    CopyRefusal {
        sqlstate: Some(UNIQUE_VIOLATION.into()),
        message: format!("duplicate key value violates unique constraint \"{index}\""),
        detail,
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
        UniqueKeys {
            keys: vec![(index.into(), columns)],
            decide: true,
            only_these: true,
            untriggered: true,
            ..UniqueKeys::default()
        }
    }

    /// The check of `unique` among COPY's `columns` (name, type) of
    /// `public.orders`.
    fn check_of(columns: &[(&str, &str)], unique: &UniqueKeys) -> KeyCheck {
        check_reading(columns, unique, SessionDates::default())
    }

    /// [`check_of`] in sessions that read dates and times as `dates` says.
    fn check_reading(columns: &[(&str, &str)], unique: &UniqueKeys, dates: SessionDates) -> KeyCheck {
        let columns: Vec<(String, String)> = columns.iter().map(|(c, t)| (c.to_string(), t.to_string())).collect();
        KeyCheck::new("public.orders", &columns, unique, &FormatOptions::new(FormatKind::Tsv), dates).unwrap()
    }

    /// Each of `values`' key in a table keyed by one column of type `ty`
    /// (of a deterministic collation), read in sessions as `dates` says.
    fn keys_read(ty: &str, dates: SessionDates, values: &[&str]) -> Vec<KeyValue> {
        let unique = UniqueKeys { byte_equal: vec!["k".into()], ..only_key("k_key", &["k"]) };
        let check = check_reading(&[("k", ty)], &unique, dates);
        assert!(check.in_parallel(), "{ty}");
        let records: Vec<String> = values.iter().map(|v| format!("{v}\n")).collect();
        let records: Vec<&[u8]> = records.iter().map(|r| r.as_bytes()).collect();
        check.key_values_read(&records).remove(0)
    }

    /// Asserts that `values` read as one key in a column of type `ty`, and
    /// `others` as other keys, each its own.
    fn assert_one_key(ty: &str, dates: SessionDates, values: &[&str], others: &[&str]) {
        let all: Vec<&str> = values.iter().chain(others).copied().collect();
        let read = keys_read(ty, dates, &all);
        assert!(matches!(read[0], KeyValue::Read(_)), "{ty} {}: {:?}", all[0], read[0]);
        for (value, key) in all.iter().zip(&read).skip(1) {
            let one = values.contains(value);
            assert_eq!(
                *key == read[0],
                one,
                "{ty}: {value} and {} are {}one key",
                all[0],
                if one { "" } else { "not " }
            );
        }
        let mut keys: Vec<String> = read[values.len()..].iter().map(|k| format!("{k:?}")).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), others.len(), "{ty}: each of {others:?} its own key");
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
        assert!(not_parallel(UniqueKeys { decide: false, ..key() }, &columns), "a BEFORE trigger or a CHECK");
        assert!(not_parallel(UniqueKeys { only_these: false, ..key() }, &columns), "an expression");
        assert!(not_parallel(UniqueKeys { untriggered: false, ..key() }, &columns), "an AFTER trigger");
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
            dated.key_values_read(&[b"2024-01-31\t1\n", b" 2024-01-31\t01\n", b"2024-01-30\t1\n", b"today\t1\n"]);
        assert_eq!(read[0][0], read[0][1]);
        assert_ne!(read[0][0], read[0][2]);
        assert_eq!(read[0][3], Unread, "a day the session's date tells");
        let check = check_of(&text, &UniqueKeys { byte_equal: vec!["a".into()], ..key() });
        assert!(check.in_parallel(), "text compared byte for byte");
        let read = check.key_values_read(&[b"x\t1\n", b"x\t01\n", b"x \t1\n", b"X\t1\n", b"x\t2\n"]);
        assert_eq!(read[0][0], read[0][1]);
        for other in 2..5 {
            assert_ne!(read[0][0], read[0][other], "record {other}");
        }
    }

    #[test]
    fn numbers_times_and_padded_text_are_read_as_the_server_reads_them() {
        let utc = SessionDates { order: None, bare_is_utc: true };
        let elsewhere = SessionDates { order: Some(DateOrder::DayFirst), bare_is_utc: false };
        let numeric = ["1.50", "01.5", " 1.5", "+1.500"];
        assert_one_key("numeric", utc, &numeric, &["15", "-1.5", "0.15", "1.51", "NaN"]);
        assert_one_key("numeric(12,2)", utc, &["-0", "0.00", "0", ".0", "-0."], &["0.01", "-0.01", "10"]);
        assert_one_key("numeric", utc, &["NaN", "nan"], &["0"]);
        let stamps =
            ["2024-01-31 12:00:00", "2024-01-31T12:00:00.000", "2024-01-31 12:00", "2024-01-31 12:00:00.000000"];
        assert_one_key(
            "timestamp without time zone",
            utc,
            &stamps,
            &["2024-01-31 12:00:00.000001", "2024-01-30 12:00"],
        );
        // Rounded as the server rounds: halves away from 2000-01-01.
        let second = ["2024-01-31 12:00:00", "2024-01-31 11:59:59.5", "2024-01-31 12:00:00.4"];
        assert_one_key("timestamp(0) without time zone", utc, &second, &["2024-01-31 12:00:00.5"]);
        assert_one_key("timestamp(0) without time zone", utc, &["1999-12-31 23:59:59.5", "1999-12-31 23:59:59"], &[]);
        assert_one_key(
            "timestamp(3) without time zone",
            utc,
            &["2024-01-31 12:00:00.1234", "2024-01-31 12:00:00.123"],
            &[],
        );
        let instant =
            ["2024-01-31 12:00:00+00", "2024-01-31 13:00:00+01", "2024-01-31T12:00:00Z", "2024-01-31 12:00:00"];
        assert_one_key("timestamp with time zone", utc, &instant, &["2024-01-31 12:00:00+01"]);
        assert_one_key("timestamp with time zone", elsewhere, &instant[..3], &["2024-01-31 12:00:00+01"]);
        let bare = keys_read("timestamp with time zone", elsewhere, &["2024-01-31 12:00:00"]);
        assert_eq!(bare, [KeyValue::Unread], "a time without an offset is the session zone's, in summer or not");
        assert_one_key("date", elsewhere, &["2024-01-31", "31/01/2024", "2024-1-31", "20240131"], &["01/31/2024x"]);
        assert_one_key("character varying(3)", utc, &["abc", "abc  "], &["ab", "ab ", "abd"]);
        assert_one_key("character varying(2)", utc, &["\u{e9}a", "\u{e9}a   "], &["\u{e9}"]);
        assert_one_key("character(4)", utc, &["ab", "ab  ", "ab      "], &[" ab", "abc"]);
        let values = ["1e3", "Infinity", "1.505", "1_000"];
        let unread = keys_read("numeric(12,2)", utc, &values);
        assert_eq!(unread, [KeyValue::Unread; 4], "an exponent, infinity, a value rounded, {values:?}");
        for ty in ["inet", "numeric(2,-3)", "time without time zone"] {
            let check = check_reading(&[("k", ty)], &only_key("k_key", &["k"]), utc);
            assert!(!check.in_parallel(), "{ty} takes turns");
        }
    }

    #[test]
    fn repeats_within_records_count_records_whose_key_came_before() {
        let check = orders_check();
        let records: [&[u8]; 6] = [b"1\ta\n", b"2\tb\n", b"1\tc\n", b"\\N\td\n", b"\\N\te\n", b"1\tf\n"];
        // NULL keys repeat nothing; the third 1 counts once more.
        assert_eq!(check.repeats_within(&records), 2);
        let padded = UniqueKeys { byte_equal: vec!["code".into()], ..only_key("codes_pkey", &["code"]) };
        let codes = check_of(&[("code", "character(4)")], &padded);
        assert_eq!(codes.repeats_within(&[b"ab\n", b"ab  \n", b"ab\n", b" ab\n"]), 2, "as char(4) reads them");
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
