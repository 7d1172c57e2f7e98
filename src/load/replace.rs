//! `--on-conflict-do-update`: a record whose key a row of the table holds
//! replaces that row's loaded columns, and of the records of the load that
//! share a key the last one stays, as pg_bulkload's `ON_DUPLICATE_KEEP =
//! NEW` and MySQL's `REPLACE` do: for the daily export of what changed.
//!
//! Why our own: COPY takes no ON CONFLICT, and psql, pgloader and
//! timescaledb-parallel-copy offer no such load; by hand it is a staging
//! table and `INSERT ... ON CONFLICT (key) DO UPDATE`, one session, and an
//! error (`ON CONFLICT DO UPDATE command cannot affect row a second time`)
//! as soon as the file repeats a key. Here every chunk goes through the
//! staging path of [`super::stage`]:
//!
//! - **Which record stays.** A chunk whose keys are each met once goes
//!   from the staging table as it is; where the server finds a key twice,
//!   the statement keeps each key's last row (`DISTINCT ON (key) ... ORDER
//!   BY key, ctid DESC`, the order COPY wrote them in; isolation's runs
//!   number theirs) before `INSERT ... ON CONFLICT (key) DO UPDATE` (see
//!   [`Merging`]). Chunks commit in input order
//!   (see [`super::in_flight`]): a later chunk's update of a key waits for
//!   the earlier chunk's transaction, and gives way should the earlier one
//!   wait for it. So the row holds the key's last record, however many
//!   workers load. Not across processes sharing one job (`--job` on several
//!   hosts): there the one committed last stays, and a process that saw
//!   another commit chunks meanwhile says so.
//! - **Rejects.** A value COPY cannot read into the staging table is
//!   rejected there, as on the staged path; a refusal of the statement (a
//!   NOT NULL, CHECK or foreign key, another unique key) is isolated by
//!   bisection, each run of records copied and merged under its savepoint,
//!   so the record that breaks it is rejected for the server's reason and
//!   the others stay applied, in input order. A record that a later one of
//!   the same chunk (or run) replaces is not checked against the table's
//!   constraints.
//! - **Counts.** Every record applied counts as loaded; the summary says
//!   how many of them replaced a row (the table's, or an earlier record's):
//!   those the statement updated (`xmax` of the row it returns is set), and
//!   those a later record of the same chunk replaced before it ran.
//! - **Small files.** The chunks of consecutive small files share a batch
//!   (see `load::batch`): one COPY stages them all, and one statement
//!   merges each key's last row and counts each chunk's rows for its ledger
//!   row (see [`Merging::batch`]); a refused batch goes on in parts, as on
//!   the direct path. Into a partitioned table, whose merge cannot tell
//!   which rows it replaced, a batch of a few chunks (see
//!   `load::batch::MERGED_ONE_BY_ONE`) that COPY straight into the table
//!   refused goes a chunk at a time, in its one transaction.
//! - **Keys stay in place.** The arbiter index is what the statement looks
//!   keys up in, so nothing is deferred (`--defer-indexes yes` is refused).

use super::plan::{copy_statement, find_column, BinaryPlan};
use super::stage::{column_list, Staging};
use super::{DeferIndexes, LoadRequest};
use crate::error::Error;
use crate::format::FormatOptions;
use crate::sink::postgres::{ArbiterKey, PgSession, Rows, TableInfo};
use crate::sql::quote_ident;

/// The staging table's column that numbers its rows in input order.
pub(super) const RECORD_NUMBER: &str = "\"sluice record\"";

/// The key the load's records replace rows by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Replacing {
    pub key: Vec<String>,
    /// A column of the key may be NULL: such rows do not conflict, so each
    /// stays a row of its own.
    pub nullable: bool,
    /// A partitioned table, whose rows' `xmax` RETURNING cannot read: the
    /// rows held are counted by looking their keys up first.
    pub partitioned: bool,
}

/// The staged path of `--on-conflict-do-update`, by the key rows are
/// replaced by (see [`arbiter`]), once the load is known to be one it can
/// do: into a table (not a view or a foreign table, which take no ON
/// CONFLICT), by a role that may stage rows, with the key in place, and
/// statements the server plans. Built once, here, and used by the load.
pub(super) fn prepare(
    control: &PgSession,
    req: &LoadRequest,
    table: &TableInfo,
    columns: Option<&[String]>,
    (format, copy_plan): (&FormatOptions, &Result<BinaryPlan, String>),
    asked: &[String],
) -> Result<Staging, Error> {
    let refused = |why: String| Err(Error::Usage(format!("--on-conflict-do-update: {why}")));
    if table.is_view || table.is_foreign() {
        let what = if table.is_view { "a view" } else { "a foreign table (or has foreign partitions)" };
        return refused(format!("{} is {what}, which takes no INSERT ... ON CONFLICT", table.display()));
    }
    if req.defer_indexes == DeferIndexes::Yes {
        return refused(
            "records replace rows by the table's key, which must stay in place: leave out \
                        --defer-indexes"
                .into(),
        );
    }
    let copy_columns = table.copy_columns(columns);
    let replacing = arbiter(control, table, asked, &copy_columns)?;
    if !control.may_stage_rows_of(table.oid)? {
        return refused(format!(
            "the rows go through a temporary table made like {}, so the role needs to read it (SELECT) and to \
             create temporary tables in the database (TEMPORARY)",
            table.display()
        ));
    }
    let copy_sql = copy_statement(table, columns, format);
    let binary_sql = copy_plan.as_ref().ok().map(|plan| plan.sql.as_str());
    let staging = Staging::replacing(table, &copy_columns, (&copy_sql, binary_sql), &replacing)
        .ok_or_else(|| Error::Usage(format!("--on-conflict-do-update: {} cannot be staged", table.display())))?;
    // Planned once on no rows, so that what the server refuses for every
    // chunk (a key of another operator class, a partitioned table whose
    // key leaves out the partition key) stops the load before it begins.
    control.execute(&staging.isolation_prelude("BEGIN"))?;
    let merging = staging.merging().expect("a merging staging table");
    let mut planned = Ok(Ok(Vec::new()));
    for merge in [&merging.whole, &merging.latest, &merging.run] {
        planned = control.query_statements(merge);
        if !matches!(planned, Ok(Ok(_))) {
            break;
        }
    }
    control.execute("ROLLBACK")?;
    match planned? {
        Ok(_) => Ok(staging),
        Err(refusal) if refusal.sqlstate.as_deref() == Some("42501") => {
            refused(rights_to_replace(control, table, &copy_columns, &replacing.key, &refusal.message)?)
        }
        Err(refusal) => refused(format!(
            "the server refuses the statement that replaces rows by ({}): {}",
            replacing.key.join(", "),
            refusal.message
        )),
    }
}

/// What a role that may insert into the table but not replace its rows
/// (INSERT ... ON CONFLICT DO UPDATE reads the table and updates the
/// columns it sets) is to ask for: the server says only `permission
/// denied for table t`.
fn rights_to_replace(
    control: &PgSession,
    table: &TableInfo,
    copy_columns: &[(String, String)],
    key: &[String],
    message: &str,
) -> Result<String, Error> {
    let set: Vec<String> =
        copy_columns.iter().map(|(name, _)| name).filter(|c| !key.contains(c)).map(|c| quote_ident(c)).collect();
    let set = if set.is_empty() { key.iter().take(1).map(|c| quote_ident(c)).collect() } else { set };
    let role = control.query("SELECT current_user", &[])?;
    let role = role.first().and_then(|r| r[0].clone()).unwrap_or_default();
    Ok(format!(
        "{message}: a record whose key a row holds updates that row, which needs SELECT on {0} and UPDATE on the \
         columns it sets; ask the table's owner to run GRANT SELECT, UPDATE ({1}) ON {0} TO {2}, or load without \
         --on-conflict-do-update",
        table.quoted(),
        set.join(", "),
        quote_ident(&role)
    ))
}

/// The key `--on-conflict-do-update` replaces rows by: the one `asked`
/// names (its columns, in any order), else the primary key, else the
/// table's only unique key. Its columns must be among `copy_columns`.
pub(super) fn arbiter(
    control: &PgSession,
    table: &TableInfo,
    asked: &[String],
    copy_columns: &[(String, String)],
) -> Result<Replacing, Error> {
    let asked = asked.iter().map(|given| find_column(table, given)).collect::<Result<Vec<_>, _>>()?;
    let key = choose(&control.arbiter_keys(table.oid)?, &asked, &table.display())?;
    let missing: Vec<&str> =
        key.columns.iter().filter(|k| !copy_columns.iter().any(|(c, _)| c == *k)).map(String::as_str).collect();
    if !missing.is_empty() {
        let loaded: Vec<&str> = copy_columns.iter().map(|(c, _)| c.as_str()).collect();
        return Err(Error::Usage(format!(
            "--on-conflict-do-update: the key ({}) of {} is not among the columns loaded ({}): a record would \
             replace no row; load the key's columns too, or load without --on-conflict-do-update",
            key.columns.join(", "),
            table.display(),
            loaded.join(", ")
        )));
    }
    const PARTITIONED: &str = "SELECT relkind = 'p' FROM pg_catalog.pg_class WHERE oid = $1::int8::oid";
    let partitioned = control.query(PARTITIONED, &[Some(&table.oid.to_string())])?;
    let partitioned = partitioned.first().and_then(|r| r.first()?.as_deref()) == Some("t");
    Ok(Replacing { key: key.columns, nullable: key.nullable, partitioned })
}

/// The key among `keys` (see [`arbiter`]).
fn choose(keys: &[ArbiterKey], asked: &[String], table: &str) -> Result<ArbiterKey, Error> {
    let listed = || {
        let each = |k: &ArbiterKey| {
            let primary = if k.primary { " (primary key)" } else { "" };
            format!("({}){primary}", k.columns.join(", "))
        };
        keys.iter().map(each).collect::<Vec<_>>().join(", ")
    };
    if !asked.is_empty() {
        let same = |k: &&ArbiterKey| k.columns.len() == asked.len() && asked.iter().all(|a| k.columns.contains(a));
        return match keys.iter().find(same) {
            Some(key) => Ok(ArbiterKey { columns: asked.to_vec(), ..key.clone() }),
            None if keys.is_empty() => Err(no_key(table)),
            None => Err(Error::Usage(format!(
                "--on-conflict-do-update={}: no unique key of {table} is on exactly these columns; its keys: {}",
                asked.join(","),
                listed()
            ))),
        };
    }
    match keys {
        [] => Err(no_key(table)),
        [only] => Ok(only.clone()),
        [first, ..] if first.primary => Ok(first.clone()),
        [first, ..] => Err(Error::Usage(format!(
            "--on-conflict-do-update: {table} has no primary key and several unique keys: {}; name the one whose \
             value tells which row a record replaces, as --on-conflict-do-update={}",
            listed(),
            first.columns.join(",")
        ))),
    }
}

fn no_key(table: &str) -> Error {
    Error::Usage(format!(
        "--on-conflict-do-update: {table} has no primary key or unique index on its columns (without WHERE, \
         not deferrable) to tell which row a record replaces: add one (ALTER TABLE {table} ADD PRIMARY KEY \
         (...)), or load without --on-conflict-do-update"
    ))
}

/// The savepoint a whole chunk's merge runs under, so that after meeting
/// a key twice it runs again on each key's last row, the staged rows kept.
const MERGE_SAVEPOINT: &str = "sluice_merge";

/// The statements that move the staged rows into the table, each
/// returning one row of counts (see [`Merged::of`]).
///
/// Why three: most chunks of an export of changes hold each key once, and
/// then the rows go as they are (on 500,000 staged rows, 3.0-3.2 s against
/// 3.6-3.7 s with `DISTINCT ON`, whose sort is the difference). The server
/// refuses that statement where a key repeats (`cannot affect row a second
/// time`, 21000): it runs again on each key's last row, the last by `ctid`,
/// which is the order COPY wrote them in (one COPY into a table made in
/// this transaction, from which nothing was deleted: it appends). A run of
/// isolation may follow rolled-back runs, whose space the server may
/// reuse, so there the rows carry a number (a `bigserial`, which cost that
/// COPY 0.6 s against 0.35 s) and each run is deleted as it is merged.
pub(super) struct Merging {
    /// Numbers the staging table's rows, for isolation.
    pub numbered: String,
    /// A whole chunk, as staged, under [`MERGE_SAVEPOINT`].
    pub whole: String,
    /// A whole chunk, each key's last row.
    pub latest: String,
    /// [`Merging::latest`] after [`Merging::whole`] met a key twice.
    pub again: String,
    /// An isolation run, each key's last row, the staging table emptied.
    pub run: String,
    /// Several chunks staged by one COPY (see [`Merging::batch`]), split
    /// where the chunks' bounds go; `None` for a partitioned table, whose
    /// rows' `xmax` RETURNING cannot read.
    batch: Option<(String, String)>,
}

impl Merging {
    pub fn new(relation: &str, columns: &[(String, String)], staged: &str, replacing: &Replacing) -> Merging {
        let list = column_list(columns);
        let key: Vec<String> = replacing.key.iter().map(|k| quote_ident(k)).collect();
        let merge = merge_into(relation, columns, &key, replacing.partitioned);
        let last_of_each = |from: &str, order: &str| {
            let distinct = distinct_keys(&key, replacing.nullable, order);
            format!("latest AS (SELECT DISTINCT ON ({distinct}) {list} FROM {from} ORDER BY {distinct}, {order} DESC)")
        };
        let latest = format!("WITH {}, {}", last_of_each(staged, "ctid"), merge(staged, "latest"));
        let batch = (!replacing.partitioned).then(|| batch_merge(relation, columns, staged, &key, replacing.nullable));
        Merging {
            numbered: format!("ALTER TABLE {staged} ADD COLUMN {RECORD_NUMBER} bigserial"),
            whole: format!("SAVEPOINT {MERGE_SAVEPOINT}; WITH {}", merge(staged, staged)),
            again: format!("ROLLBACK TO SAVEPOINT {MERGE_SAVEPOINT}; {latest}"),
            latest,
            run: format!(
                "WITH moved AS (DELETE FROM {staged} RETURNING *), {}, {}",
                last_of_each("moved", RECORD_NUMBER),
                merge("moved", "latest")
            ),
            batch,
        }
    }

    /// Whether a batch's chunks merge by one statement ([`Merging::batch`]);
    /// else a batch COPY straight into the table refuses merges a chunk at
    /// a time, and holds a few chunks (`load::batch::MERGED_ONE_BY_ONE`).
    pub fn batches(&self) -> bool {
        self.batch.is_some()
    }

    /// The merge of a batch's chunks staged by one COPY, `records` a chunk:
    /// each key's last row, and a row of counts per chunk with a record
    /// applied (its index, then as [`Merged::of`] reads them), each also
    /// with every row the statement merged, which [`Merged::of_batch`]
    /// checks their sum against.
    ///
    /// Why its own: the chunks of a glob of small files share a batch (see
    /// `load::batch`), whose ledger rows keep each chunk's counts. A row the
    /// merge returns says whether it replaced one, but not which record it
    /// came from: it is found again by its key among the keys' last rows,
    /// numbered in the order COPY wrote them, and counted in the chunk that
    /// number falls in (the records a later one replaced count as such in
    /// their own chunk). A key the join does not find again (one with a
    /// NULL, which conflicts with none; one a trigger changed) makes the
    /// sums differ, and the batch goes a chunk at a time.
    pub fn batch(&self, records: &[u64]) -> Option<String> {
        let (head, tail) = self.batch.as_ref()?;
        let mut first = 1;
        let bounds: Vec<String> = records
            .iter()
            .map(|count| {
                let bound = first;
                first += count;
                bound.to_string()
            })
            .collect();
        Some(format!("{head}'{{{}}}'::bigint[]{tail}", bounds.join(",")))
    }
}

/// What tells each key's last row: the key's columns, and with a column
/// that may be NULL, the row's `order` where it holds one, since such rows
/// conflict with none and each stays.
fn distinct_keys(key: &[String], nullable: bool, order: &str) -> String {
    let mut distinct = key.to_vec();
    if nullable {
        let any_null = key.iter().map(|k| format!("{k} IS NULL")).collect::<Vec<_>>().join(" OR ");
        distinct.push(format!("CASE WHEN {any_null} THEN {order} END"));
    }
    distinct.join(", ")
}

/// What the batch's merge may sort and hash in memory (`work_mem`, raised
/// for its transaction only): a batch's rows hold 4 MiB of input at most
/// (`load::batch::MAX_BYTES`), which its sorts took 7 MB for.
const BATCH_WORK_MEM: &str = "32MB";

/// [`Merging::batch`]'s statement, split where the bounds go.
fn batch_merge(
    relation: &str,
    columns: &[(String, String)],
    staged: &str,
    key: &[String],
    nullable: bool,
) -> (String, String) {
    let (list, number) = (column_list(columns), RECORD_NUMBER);
    let distinct = distinct_keys(key, nullable, number);
    let returned: Vec<String> = key.iter().map(|k| format!("t.{k}")).collect();
    let same_key: Vec<String> = key.iter().map(|k| format!("m.{k} = l.{k}")).collect();
    // The rows numbered as a sequential scan reads them, the order COPY
    // wrote them in (see `stage`; sorting by `ctid` cost 4 % more); the
    // sorts and the hash get the memory a batch's rows take (at the
    // default 4 MB they spilled to disk: 10 % of a batch's time).
    let head = format!(
        "SELECT set_config('work_mem', '{BATCH_WORK_MEM}', true) \
         WHERE pg_size_bytes(current_setting('work_mem')) < pg_size_bytes('{BATCH_WORK_MEM}'); \
         WITH numbered AS (SELECT {list}, row_number() OVER () AS {number} FROM {staged}), \
         latest AS (SELECT DISTINCT ON ({distinct}) {list}, {number} FROM numbered \
         ORDER BY {distinct}, {number} DESC), \
         merged AS ({} RETURNING {}, t.xmax <> 0 AS \"sluice held\") \
         SELECT width_bucket(l.{number}, ",
        upsert(relation, columns, key, "latest"),
        returned.join(", ")
    );
    let tail = format!(
        ") - 1, count(*), count(m.\"sluice held\"), count(*) FILTER (WHERE m.\"sluice held\"), \
         (SELECT count(*) FROM merged) FROM latest l LEFT JOIN merged m ON {} GROUP BY 1",
        same_key.join(" AND ")
    );
    (head, tail)
}

/// Whether the server refused [`Merging::whole`] for a key it met twice.
pub(super) fn met_a_key_twice(sqlstate: Option<&str>) -> bool {
    sqlstate == Some("21000")
}

/// The tail of a merge: the rows of `from` inserted into `relation` or
/// replacing the row that holds their key, then the counts of `staged`'s
/// rows, of `from`'s, of the rows inserted or updated, and of the updated.
fn merge_into<'a>(
    relation: &'a str,
    columns: &'a [(String, String)],
    key: &'a [String],
    partitioned: bool,
) -> impl Fn(&str, &str) -> String + 'a {
    move |staged: &str, from: &str| {
        // An updated row's `xmax` is set (the row lock the update took), an
        // inserted one's is not; a partitioned table's RETURNING cannot read
        // it. The lookup sees the rows committed before the statement
        // began: a key an earlier chunk still loading inserted counts as new.
        let (returning, held) = match partitioned {
            false => ("RETURNING t.xmax <> 0 AS held".to_string(), "count(*) FILTER (WHERE held)".to_string()),
            true => {
                let same = key.iter().map(|k| format!("h.{k} = l.{k}")).collect::<Vec<_>>().join(" AND ");
                let held =
                    format!("(SELECT count(*) FROM {from} l WHERE EXISTS (SELECT FROM {relation} h WHERE {same}))");
                ("RETURNING 1".to_string(), held)
            }
        };
        format!(
            "merged AS ({} {returning}) \
             SELECT (SELECT count(*) FROM {staged}), (SELECT count(*) FROM {from}), count(*), {held} FROM merged",
            upsert(relation, columns, key, from)
        )
    }
}

/// The rows of `from` inserted into `relation` (as `t`), or replacing the
/// loaded columns of the row that holds their `key`.
fn upsert(relation: &str, columns: &[(String, String)], key: &[String], from: &str) -> String {
    let list = column_list(columns);
    let mut updates: Vec<String> = columns
        .iter()
        .map(|(name, _)| quote_ident(name))
        .filter(|c| !key.contains(c))
        .map(|c| format!("{c} = EXCLUDED.{c}"))
        .collect();
    if updates.is_empty() {
        // Only key columns: the row is its key; updated to itself, so the
        // count of replaced rows holds.
        updates.push(format!("{0} = EXCLUDED.{0}", key[0]));
    }
    format!(
        "INSERT INTO {relation} AS t ({list}) OVERRIDING SYSTEM VALUE SELECT {list} FROM {from} \
         ON CONFLICT ({}) DO UPDATE SET {}",
        key.join(", "),
        updates.join(", ")
    )
}

/// What one merge did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Merged {
    /// Records applied: inserted, replacing a row, or replaced by a later
    /// record of the same statement.
    pub rows: u64,
    /// Records a BEFORE trigger returned NULL for.
    pub suppressed: u64,
    /// Of `rows`, those that replaced a row or were replaced.
    pub replaced: u64,
}

impl Merged {
    /// From the counts each statement of [`Merging`] returns: the staged
    /// rows, the keys' last ones, the rows inserted or updated, and the
    /// updated ones.
    pub fn of(rows: &Rows) -> Option<Merged> {
        Some(Merged::of_counts(&counts(rows.first()?)?))
    }

    fn of_counts(counts: &[u64]) -> Merged {
        let (staged, latest, merged, held) = (counts[0], counts[1], counts[2], counts[3]);
        let suppressed = latest.saturating_sub(merged);
        let rows = staged.saturating_sub(suppressed);
        Merged { rows, suppressed, replaced: staged.saturating_sub(latest) + held }
    }

    /// Each chunk's, from [`Merging::batch`]'s counts, `records` a chunk
    /// (all staged: the COPY took as many rows): `Ok(None)` when they do
    /// not add up (a row merged that no chunk's count holds), and the batch
    /// goes a chunk at a time; `Err` for a reply without counts.
    pub fn of_batch(rows: &Rows, records: &[u64]) -> Result<Option<Vec<Merged>>, Error> {
        let mut merged: Vec<Merged> = records.iter().map(|&r| Merged::of_counts(&[r, 0, 0, 0])).collect();
        let (mut counted, mut all) = (0, 0);
        for row in rows {
            let counts = counts(row).ok_or_else(|| unexpected_merge_reply(rows))?;
            let part = usize::try_from(counts[0]).ok().filter(|&p| p < records.len() && counts[1] <= records[p]);
            let part = part.ok_or_else(|| unexpected_merge_reply(rows))?;
            merged[part] = Merged::of_counts(&[records[part], counts[1], counts[2], counts[3]]);
            (counted, all) = (counted + counts[2], counts[4]);
        }
        Ok((counted == all).then_some(merged))
    }
}

/// A row of counts, each a whole number.
fn counts(row: &[Option<String>]) -> Option<Vec<u64>> {
    row.iter().map(|value| value.as_deref()?.parse::<u64>().ok()).collect()
}

/// The error for a reply to a merge of [`Merging`] without its counts.
pub(super) fn unexpected_merge_reply(rows: &Rows) -> Error {
    Error::Server(format!("the statement that replaces rows returned no counts but {rows:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(primary: bool, columns: &[&str]) -> ArbiterKey {
        ArbiterKey { primary, columns: columns.iter().map(|c| c.to_string()).collect(), nullable: !primary }
    }

    fn asked(columns: &[&str]) -> Vec<String> {
        columns.iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn the_primary_key_or_the_only_key_or_the_one_named_arbitrates() {
        let pk = key(true, &["id"]);
        let email = key(false, &["email"]);
        let pair = key(false, &["region", "code"]);
        assert_eq!(choose(&[pk.clone(), email.clone()], &[], "t").unwrap(), pk);
        assert_eq!(choose(std::slice::from_ref(&email), &[], "t").unwrap(), email);
        assert_eq!(choose(&[pk.clone(), email.clone()], &asked(&["email"]), "t").unwrap(), email);
        let named = choose(&[email.clone(), pair.clone()], &asked(&["code", "region"]), "t").unwrap();
        assert_eq!(named.columns, ["code", "region"], "in the order named");
        let several = choose(&[email.clone(), pair.clone()], &[], "t").unwrap_err().to_string();
        assert!(several.contains("several unique keys: (email), (region, code)"), "{several}");
        assert!(several.contains("--on-conflict-do-update=email"), "{several}");
        let none = choose(&[], &[], "public.t").unwrap_err().to_string();
        assert!(none.contains("public.t has no primary key or unique index"), "{none}");
        let other = choose(&[pk, pair], &asked(&["region"]), "t").unwrap_err().to_string();
        assert!(
            other.contains("no unique key of t is on exactly these columns; its keys: (id) (primary key)"),
            "{other}"
        );
    }

    #[test]
    fn the_merges_keep_each_keys_last_row_and_replace_the_other_columns() {
        let columns = [("id".to_string(), "int".to_string()), ("Na me".to_string(), "text".to_string())];
        let by_id = Replacing { key: vec!["id".into()], nullable: false, partitioned: false };
        let m = Merging::new("\"s\".\"t\"", &columns, "pg_temp.x", &by_id);
        let merged = "merged AS (INSERT INTO \"s\".\"t\" AS t (\"id\", \"Na me\") OVERRIDING SYSTEM VALUE SELECT \
                      \"id\", \"Na me\" FROM";
        let upsert = "ON CONFLICT (\"id\") DO UPDATE SET \"Na me\" = EXCLUDED.\"Na me\" RETURNING t.xmax <> 0 AS held)";
        assert_eq!(
            m.whole,
            format!(
                "SAVEPOINT sluice_merge; WITH {merged} pg_temp.x {upsert} SELECT (SELECT count(*) FROM pg_temp.x), \
                 (SELECT count(*) FROM pg_temp.x), count(*), count(*) FILTER (WHERE held) FROM merged"
            )
        );
        let latest = "WITH latest AS (SELECT DISTINCT ON (\"id\") \"id\", \"Na me\" FROM pg_temp.x \
                      ORDER BY \"id\", ctid DESC), ";
        assert!(m.latest.starts_with(latest), "{}", m.latest);
        assert!(m.latest.contains(&format!("{merged} latest {upsert} SELECT (SELECT count(*) FROM pg_temp.x)")));
        assert_eq!(m.again, format!("ROLLBACK TO SAVEPOINT sluice_merge; {}", m.latest));
        let run = "WITH moved AS (DELETE FROM pg_temp.x RETURNING *), latest AS (SELECT DISTINCT ON (\"id\") \
                   \"id\", \"Na me\" FROM moved ORDER BY \"id\", \"sluice record\" DESC), ";
        assert!(m.run.starts_with(run), "{}", m.run);
        assert!(m.run.ends_with("SELECT (SELECT count(*) FROM moved), (SELECT count(*) FROM latest), count(*), count(*) FILTER (WHERE held) FROM merged"), "{}", m.run);
        assert_eq!(m.numbered, "ALTER TABLE pg_temp.x ADD COLUMN \"sluice record\" bigserial");
        let partitioned = Merging::new("t", &columns, "s", &Replacing { partitioned: true, ..by_id });
        let looked_up = "(SELECT count(*) FROM s l WHERE EXISTS (SELECT FROM t h WHERE h.\"id\" = l.\"id\"))";
        assert!(partitioned.whole.ends_with(&format!("count(*), {looked_up} FROM merged")), "{}", partitioned.whole);
        assert!(!partitioned.run.contains("xmax"), "{}", partitioned.run);
        let nullable = Replacing { key: vec!["id".into(), "Na me".into()], nullable: true, partitioned: false };
        let m = Merging::new("t", &columns, "s", &nullable);
        let distinct = |order: &str| {
            format!("DISTINCT ON (\"id\", \"Na me\", CASE WHEN \"id\" IS NULL OR \"Na me\" IS NULL THEN {order} END)")
        };
        assert!(m.latest.contains(&distinct("ctid")), "{}", m.latest);
        assert!(m.run.contains(&distinct("\"sluice record\"")), "{}", m.run);
        assert!(m.whole.contains("DO UPDATE SET \"id\" = EXCLUDED.\"id\" RETURNING"), "only key columns: {}", m.whole);
    }

    #[test]
    fn a_batch_merges_each_keys_last_row_and_counts_by_chunk() {
        let columns = [("id".to_string(), "int".to_string()), ("v".to_string(), "text".to_string())];
        let by_id = Replacing { key: vec!["id".into()], nullable: false, partitioned: false };
        let m = Merging::new("t", &columns, "s", &by_id);
        let sql = m.batch(&[3, 0, 2]).expect("a plain table batches");
        let numbered = "WITH numbered AS (SELECT \"id\", \"v\", row_number() OVER () AS \"sluice record\" FROM s)";
        assert!(sql.starts_with("SELECT set_config('work_mem', '32MB', true) WHERE"), "{sql}");
        assert!(sql.contains(numbered), "{sql}");
        assert!(sql.contains("ORDER BY \"id\", \"sluice record\" DESC)"), "the last of each key: {sql}");
        assert!(sql.contains("RETURNING t.\"id\", t.xmax <> 0 AS \"sluice held\")"), "{sql}");
        // Chunk 1 holds rows 1-3, chunk 2 none, chunk 3 rows 4-5.
        assert!(sql.contains("SELECT width_bucket(l.\"sluice record\", '{1,4,4}'::bigint[]) - 1, count(*)"), "{sql}");
        assert!(sql.ends_with("FROM latest l LEFT JOIN merged m ON m.\"id\" = l.\"id\" GROUP BY 1"), "{sql}");
        assert!(m.batches());
        let partitioned = Merging::new("t", &columns, "s", &Replacing { partitioned: true, ..by_id });
        assert!(!partitioned.batches() && partitioned.batch(&[1]).is_none(), "no xmax to read");
    }

    #[test]
    fn a_batchs_counts_go_to_their_chunks_when_they_add_up() {
        let rows = |parts: &[[&str; 5]]| -> Rows {
            parts.iter().map(|p| p.iter().map(|s| Some(s.to_string())).collect()).collect()
        };
        // Chunk 0: 2 keys' last rows of its 3, both merged, 1 held; chunk 2:
        // both of its 2 last, one suppressed; chunk 3: its record replaced
        // by a later one. 3 rows merged in all.
        let counts = rows(&[["0", "2", "2", "1", "3"], ["2", "2", "1", "0", "3"]]);
        let merged = Merged::of_batch(&counts, &[3, 0, 2, 1]).unwrap().expect("they add up");
        assert_eq!(merged[0], Merged { rows: 3, suppressed: 0, replaced: 2 });
        assert_eq!(merged[1], Merged::default());
        assert_eq!(merged[2], Merged { rows: 1, suppressed: 1, replaced: 0 });
        assert_eq!(merged[3], Merged { rows: 1, suppressed: 0, replaced: 1 });
        // A row merged that no chunk counted (its key had a NULL).
        let lost = rows(&[["0", "2", "2", "1", "4"], ["2", "2", "1", "0", "4"]]);
        assert_eq!(Merged::of_batch(&lost, &[3, 0, 2, 1]).unwrap(), None);
        assert!(Merged::of_batch(&rows(&[["5", "1", "1", "1", "1"]]), &[3]).is_err(), "no such chunk");
        assert!(Merged::of_batch(&rows(&[["0", "4", "4", "1", "4"]]), &[3]).is_err(), "more keys than records");
    }

    #[test]
    fn the_counts_say_what_was_applied_and_replaced() {
        let row = |v: [&str; 4]| vec![v.iter().map(|s| Some(s.to_string())).collect::<Vec<_>>()];
        // 10 staged, 8 keys, all 8 merged, 3 of them held: 2 replaced by a
        // later record, 3 rows replaced.
        assert_eq!(Merged::of(&row(["10", "8", "8", "3"])), Some(Merged { rows: 10, suppressed: 0, replaced: 5 }));
        // A trigger suppressed one of the 8.
        assert_eq!(Merged::of(&row(["10", "8", "7", "3"])), Some(Merged { rows: 9, suppressed: 1, replaced: 5 }));
        assert_eq!(Merged::of(&Vec::new()), None);
    }
}
