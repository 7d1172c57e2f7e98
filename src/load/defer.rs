//! Index and constraint deferral: drop a table's indexes, keys and
//! foreign-key constraints before the load, build them again after it,
//! several at once.
//!
//! Why: keeping a b-tree up to date row by row costs more than building it
//! once from sorted rows. Measured with a primary key on 10 M rows: 14.1 s
//! loading with it, 5.1 s + 3.6 s loading without it and adding it after.
//!
//! CHECK constraints stay in place: one costs a row little as it loads,
//! adding it again scans the whole table, and each chunk with a row that
//! breaks it loaded twice. 2 M rows into an empty table with a primary key
//! and two CHECKs: 0.91 s with the CHECKs deferred, 0.77 s kept; with one
//! record in 100 breaking a CHECK, 5.5 s deferred (every chunk loaded
//! again), 1.7 s kept, its records found as they load (see
//! `check_constraint`). Steps a job of an earlier version recorded for a
//! CHECK are still built again.
//!
//! Safety rests on the ledger. Each dropped object gets a `sluice.steps` row
//! holding the SQL that builds it again, written in the transaction that
//! drops it (the job's opening transaction). The job is marked finished only
//! once every step is rebuilt, and any later run of the job (the same
//! command, after a crash or a kill) rebuilds what is still pending, so an
//! index is never left dropped; `sluice status` lists pending steps.
//!
//! Keys and constraints refuse rows. After the load, the rows that violate
//! them must still end up as rejects with their file and line, not as a
//! failed rebuild. So while a load defers such an object, every COPY
//! statement runs in a subtransaction that also writes a marker row
//! (`sluice.xacts (job, seq)`), and the marker shares the subtransaction's
//! `xmin` with the rows the COPY wrote. Before building such an object, a
//! query finds the violating rows; through their `xmin` and the markers, the
//! chunks that loaded them. In one transaction those chunks' rows are
//! deleted, the object is built, and the chunks go back to `pending`; they
//! then load again with the object in place, where isolation rejects exactly
//! the violating records, with the server's reason. They load one at a
//! time, in input order, so the first of two duplicates in the input is
//! the one kept (see [`Completion::Violated`]). When
//! there are no violations (the usual case) nothing is loaded twice.
//!
//! Not deferred (they stay in place and work as usual): exclusion
//! constraints and keys WITHOUT OVERLAPS (PostgreSQL 18: a primary key so
//! deferred could not be added again, `gist` having no unique indexes, and
//! stayed dropped); unique indexes on expressions, with a predicate or
//! NULLS NOT DISTINCT; keys another table's foreign key references; the replica
//! identity and clustering indexes; invalid indexes; index partitions and
//! inherited or NOT VALID constraints; foreign keys other than MATCH SIMPLE,
//! with PERIOD (PostgreSQL 18: the query by equal values took rows whose
//! period several referenced rows cover for violating ones, and one bad
//! row in 2,001 had all 39 chunks loaded again, one at a time) or
//! referencing the table itself; a partitioned table's index whose
//! partitions' indexes differ from what building it gives them (another
//! definition, tablespace or a comment). A partitioned table's indexes are
//! built on it, which builds its partitions' (their names are given back
//! afterwards), and its keys added with their index (`USING INDEX` cannot
//! attach one there). Keys and constraints (not plain indexes) also stay
//! when their violating chunks could not be loaded again as they were: from
//! stdin or a pipe, into a table with foreign partitions (whose rows carry
//! no `xmin` of this server's), into a table with an INSERT trigger
//! (which would run twice for those chunks' rows), or into a table with
//! rows on a server whose transaction IDs have wrapped around since some
//! of them were written (see [`holds_xids_the_load_may_take`]).
//!
//! Why our own: dropping and rebuilding is what every field report did by
//! hand; doing it so that a crash cannot lose an index and a duplicate
//! cannot fail the load at the end is sluice's edge.

use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::Instant;

use crossbeam_channel::bounded;

use super::waits::{WaitSampler, Work};
use crate::error::Error;
use crate::ledger::{self, DeferredStep, StepRow};
use crate::report::{count_of, Deferral};
use crate::sink::postgres::{PgSession, PgTarget, TableInfo, ENFORCED};
use crate::sql::{quote_ident, quote_literal};

/// `--defer-indexes`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeferIndexes {
    /// Defer when the table is empty when the load starts (or `--truncate`
    /// empties it): nobody reads it meanwhile, and the rebuild costs only
    /// the new rows.
    #[default]
    Auto,
    Yes,
    No,
}

/// `maintenance_work_mem` for the sessions that build indexes, unless the
/// server's setting is already higher: enough to sort 10 M keys in memory.
pub(super) const BUILD_MEMORY_MB: u64 = 512;

/// What the plan decided, for the summary.
#[derive(Clone, Debug, Default)]
pub struct DeferPlan {
    pub steps: Vec<DeferredStep>,
    /// Why nothing is deferred, when nothing is.
    pub why_not: Option<String>,
    /// A line for each index or constraint that stays in place although
    /// others could be deferred, saying why: each slows the load as it
    /// would without sluice, and the user may not know it is there.
    pub kept: Vec<String>,
    /// How the rows reach the disk, for a target whose rows this server
    /// does not store itself (a view's, a foreign table's); `None`: the
    /// table's own (see [`deferral`]).
    pub table_path: Option<String>,
}

/// What the load does to the table before it starts.
#[derive(Clone, Copy, Debug, Default)]
pub struct TablePlan {
    pub defer: DeferIndexes,
    /// `--truncate`: the table will be empty.
    pub truncate: bool,
    /// `--unlogged`: no WAL for the load, the table set logged after it.
    pub unlogged: bool,
    /// An input is stdin or a pipe: its chunks cannot be read again.
    pub read_once: bool,
}

/// Chooses what to drop (and whether to unlog the table) before the load.
pub fn plan(session: &PgSession, table: &TableInfo, wanted: TablePlan) -> Result<DeferPlan, Error> {
    let relation = table.quoted();
    if table.is_view {
        // Its trigger writes the rows elsewhere: nothing here to drop, and
        // reading the view to see whether it is empty could cost a scan.
        let why_not = Some("a view: its INSTEAD OF trigger writes the rows".into());
        let table_path = Some(
            "a view: its INSTEAD OF trigger writes the rows, so COPY FREEZE, WAL skipping and --unlogged do not apply"
                .into(),
        );
        return Ok(DeferPlan { why_not, table_path, ..Default::default() });
    }
    if table.is_foreign() {
        return foreign_table_plan(table, wanted);
    }
    if wanted.truncate {
        if let Some(referencing) = tables_referencing(session, &relation, false)? {
            return Err(Error::Usage(format!(
                "--truncate: a foreign key of {referencing} references {0}, and TRUNCATE empties a table that \
                 foreign keys reference only together with the tables they are in; empty them yourself \
                 (TRUNCATE {0}, {referencing}) and load without --truncate, or leave --truncate out",
                table.display(),
            )));
        }
    }
    if wanted.truncate && table.insert_triggers.is_empty() {
        if let Some(children) = inheritance_children(session, &relation)? {
            return Err(Error::Usage(format!(
                "--truncate: {children} inherit from {0}, and TRUNCATE {0} would empty them too, while COPY \
                 loads rows into {0} alone; empty what you mean to yourself (TRUNCATE ONLY {0} keeps their rows, \
                 TRUNCATE {0} empties them too) and load without --truncate",
                table.display(),
            )));
        }
    }
    // A role that may not read the table (COPY needs only INSERT) takes it
    // for one with rows: nothing is deferred on a guess.
    let empty = wanted.truncate || session.table_is_empty(table)? == Some(true);
    let shape = session.query(
        "SELECT relkind::text, relpersistence::text, pg_has_role(current_user, relowner, 'USAGE')::text \
         FROM pg_class WHERE oid = $1::regclass",
        &[Some(&relation)],
    )?;
    let [kind, persistence, owner] = [0, 1, 2].map(|i| shape.first().and_then(|r| r[i].clone()).unwrap_or_default());
    // Dropping an index or altering the table needs its owner's rights;
    // INSERT alone (enough for COPY) is not enough.
    let owned = owner == "true";
    let not_owner = |flag: &str| {
        Error::Usage(format!(
            "{flag} drops and rebuilds parts of {}, which only its owner may do; connect as the owner (or a member \
             of the owner's role), or leave {flag} out",
            table.display()
        ))
    };
    let mut plan = DeferPlan::default();
    if wanted.unlogged && !owned {
        return Err(not_owner("--unlogged"));
    }
    if wanted.defer == DeferIndexes::Yes && !owned {
        return Err(not_owner("--defer-indexes yes"));
    }
    if wanted.unlogged && kind == "p" {
        // ALTER TABLE ... SET UNLOGGED on a partitioned table changes none of
        // its partitions (PostgreSQL 18 refuses it).
        return Err(Error::Usage(format!(
            "--unlogged: {} is partitioned, and its partitions would stay logged; load a partition with \
             --unlogged, or leave it out",
            table.display()
        )));
    }
    if wanted.unlogged && persistence == "p" {
        if !empty {
            return Err(Error::Usage(format!(
                "--unlogged needs an empty table (or --truncate): a server crash empties an unlogged table, \
                 and {} has rows that sluice could not load again",
                table.display()
            )));
        }
        if let Some(referencing) = tables_referencing(session, &relation, true)? {
            return Err(Error::Usage(format!(
                "--unlogged: a foreign key of {referencing} references {}, and a logged table cannot reference an \
                 unlogged one; leave --unlogged out",
                table.display()
            )));
        }
        if let Some(publications) = publications_of(session, table)? {
            return Err(Error::Usage(format!(
                "--unlogged: {} is published ({publications}), and the rows loaded while it is unlogged would never \
                 reach the subscribers (logical replication sends no change of an unlogged table, nor its rewrite \
                 when it is logged again); leave --unlogged out",
                table.display()
            )));
        }
        plan.steps.push(unlogged_step(&relation));
    }
    let why_not = match (wanted.defer, empty, kind.as_str()) {
        (DeferIndexes::No, _, _) => Some("--defer-indexes no"),
        (DeferIndexes::Auto, false, _) => {
            Some("the table has rows (a rebuild would sort them all; --defer-indexes yes to defer anyway)")
        }
        (DeferIndexes::Auto, _, _) if !owned => Some("only the table's owner may drop its indexes"),
        _ => None,
    };
    if let Some(why) = why_not {
        plan.why_not = Some(why.into());
        return Ok(plan);
    }
    let before = plan.steps.len();
    let forced = wanted.defer == DeferIndexes::Yes;
    for (steps, kept) in [index_steps(session, &relation, kind == "p", forced)?, constraint_steps(session, &relation)?]
    {
        plan.steps.extend(steps);
        plan.kept.extend(kept);
    }
    let found = plan.steps.len();
    // The chunks that loaded rows violating a deferred key are deleted by
    // their rows' xmin and loaded again after the load. Stdin and pipes
    // cannot be read again; a foreign partition's rows carry the other
    // server's xmin (deleting them by this one's left them there: a CHECK
    // deferred on a table with a foreign partition loaded 8,037 of its
    // 10,000 rows twice); and a trigger ran for the deleted rows and runs
    // again (an audit trigger logged 34,370 rows for 20,000 loaded). So
    // keys and constraints stay in place there and refuse such rows at once.
    let reason_to_keep = match (wanted.read_once, table.foreign.is_empty(), table.insert_triggers.as_slice()) {
        (true, _, _) => {
            Some("the input is read once, so rows it refuses after the load could not be loaded again".to_string())
        }
        (false, false, _) => Some(
            "rows in foreign partitions cannot be traced to the chunk that loaded them, so rows it refuses after \
             the load could not be loaded again"
                .to_string(),
        ),
        (false, true, []) => None,
        (false, true, triggers) => Some(format!(
            "the chunks whose rows it refuses after the load would be loaded again, running the table's INSERT \
             trigger{} {} a second time for their rows",
            if triggers.len() == 1 { "" } else { "s" },
            triggers.iter().map(|t| crate::sql::display_ident(t)).collect::<Vec<_>>().join(", ")
        )),
    };
    let reason_to_keep = match reason_to_keep {
        None if !empty
            && plan.steps.iter().any(|s| s.violations_sql.is_some())
            && holds_xids_the_load_may_take(session, &relation)? =>
        {
            Some(
                "some of the table's rows were written before the server's transaction IDs last wrapped around, \
                 and the load's transactions may take their IDs again, so rows it refuses after the load could \
                 not be told from them"
                    .to_string(),
            )
        }
        other => other,
    };
    if let Some(why) = &reason_to_keep {
        let (stay, steps) = plan.steps.into_iter().partition(|s| s.violations_sql.is_some());
        plan.steps = steps;
        plan.kept.extend(stay.into_iter().map(|s: DeferredStep| stays(&s.name, why)));
    }
    if plan.steps.len() == before {
        plan.why_not = Some(match reason_to_keep.filter(|_| found > before) {
            None => "no index or constraint that can be deferred".into(),
            Some(why) => format!("keys and constraints stay in place: {why}"),
        });
    }
    Ok(plan)
}

/// A foreign table's indexes, constraints and logging are the business of
/// the server that stores its rows: nothing to defer or unlog here.
fn foreign_table_plan(table: &TableInfo, wanted: TablePlan) -> Result<DeferPlan, Error> {
    let server = table.foreign.first().map_or("", |f| f.server.as_str());
    if wanted.unlogged {
        return Err(Error::Usage(format!(
            "--unlogged: {} is a foreign table, whose rows server {server} stores and logs; leave --unlogged out",
            table.display()
        )));
    }
    Ok(DeferPlan {
        why_not: Some(format!("a foreign table: its indexes and constraints are on server {server}, with its rows")),
        table_path: Some(format!(
            "a foreign table: server {server} stores the rows, so COPY FREEZE, WAL skipping and --unlogged do not \
             apply here"
        )),
        ..Default::default()
    })
}

/// The other tables whose foreign keys reference `relation` (a
/// partitioned table's once, not each partition's), the logged ones only
/// when `logged`; `None` when none does. `SET UNLOGGED` refuses a table
/// logged ones reference, with a message that names the wrong side, and
/// `TRUNCATE` one any references, with a hint at `CASCADE`, which empties
/// them too and is no option of sluice's.
fn tables_referencing(session: &PgSession, relation: &str, logged: bool) -> Result<Option<String>, Error> {
    let rows = session.query(
        "SELECT string_agg(DISTINCT quote_ident(n.nspname) || '.' || quote_ident(c.relname), ', ') \
         FROM pg_constraint f JOIN pg_class c ON c.oid = f.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE f.contype = 'f' AND f.confrelid = $1::regclass AND f.conrelid <> f.confrelid \
           AND f.conparentid = 0 AND (c.relpersistence = 'p' OR NOT $2::bool)",
        &[Some(relation), Some(if logged { "true" } else { "false" })],
    )?;
    Ok(rows.into_iter().next().and_then(|r| r[0].clone()))
}

/// The publications that publish `table`, when any does: by name, for
/// all tables or for its schema (PostgreSQL itself refuses `SET UNLOGGED`
/// only for the first).
fn publications_of(session: &PgSession, table: &TableInfo) -> Result<Option<String>, Error> {
    let rows = session.query(
        "SELECT string_agg(DISTINCT quote_ident(pubname), ', ') FROM pg_catalog.pg_publication_tables \
         WHERE schemaname = $1 AND tablename = $2",
        &[Some(&table.schema), Some(&table.name)],
    )?;
    Ok(rows.into_iter().next().and_then(|r| r[0].clone()))
}

/// The tables that inherit from `relation` (not its partitions), when
/// any does. `TRUNCATE` empties them too, while COPY loads into `relation`
/// alone (a table whose INSERT trigger routes rows to its children, as
/// inheritance partitioning does, is not asked: they hold what it loads).
fn inheritance_children(session: &PgSession, relation: &str) -> Result<Option<String>, Error> {
    let rows = session.query(
        "SELECT string_agg(quote_ident(n.nspname) || '.' || quote_ident(c.relname), ', ' ORDER BY n.nspname, \
         c.relname) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
         JOIN pg_namespace n ON n.oid = c.relnamespace WHERE i.inhparent = $1::regclass AND NOT c.relispartition",
        &[Some(relation)],
    )?;
    Ok(rows.into_iter().next().and_then(|r| r[0].clone()))
}

/// Whether `relation` holds rows whose `xmin` the load's transactions may
/// be given again. The chunks whose rows a deferred key refuses are found,
/// and their rows deleted, by `xmin`: a 32-bit transaction ID, which the
/// server hands out again after 2^32 transactions. Rows that old keep
/// their `xmin` (frozen), so on a server past a wraparound they can share
/// one with a chunk's COPY: measured, 4 of 300 such rows were deleted with
/// the chunks they shared IDs with. Those rows are the ones whose `xmin`
/// lies ahead of the next ID (`age` of zero or less). Only a server past a
/// wraparound can have them, so only there is the table read.
fn holds_xids_the_load_may_take(session: &PgSession, relation: &str) -> Result<bool, Error> {
    let rows = session.query(
        &format!(
            "SELECT CASE WHEN txid_snapshot_xmax(txid_current_snapshot()) < 4294967296 THEN false \
             ELSE EXISTS (SELECT FROM {relation} WHERE age(xmin) <= 0) END"
        ),
        &[],
    )?;
    Ok(rows.first().and_then(|r| r[0].as_deref()) == Some("t"))
}

const SET_LOGGED: &str = " SET LOGGED";

/// The name of the `--unlogged` step in the ledger and the report.
pub const UNLOGGED_STEP: &str = "unlogged table";

/// `--unlogged` as a step: unlogged now, logged again after the load (a
/// rewrite of the table, without WAL under `wal_level = minimal`).
fn unlogged_step(relation: &str) -> DeferredStep {
    DeferredStep {
        name: UNLOGGED_STEP.into(),
        drop_sql: format!("ALTER TABLE {relation} SET UNLOGGED"),
        create_sql: format!("ALTER TABLE {relation}{SET_LOGGED}"),
        violations_sql: None,
    }
}

pub fn is_unlogged_step(step: &StepRow) -> bool {
    step.deferred.create_sql.ends_with(SET_LOGGED)
}

/// A server crash empties an unlogged table, whatever the ledger says. So
/// when the server started after the job unlogged its table (a crash, or a
/// restart sluice cannot tell from one), the table is emptied (it was empty
/// before the load: every row in it is the job's) and every chunk goes back
/// to pending. Returns whether it did.
pub fn recover_unlogged(control: &PgSession, job: &str, relation: &str) -> Result<bool, Error> {
    control.transaction(|| reset_if_restarted(control, job, relation)).map(|reset| reset.is_some())
}

/// [`recover_unlogged`] in the caller's transaction: the chunks reopened.
fn reset_if_restarted(control: &PgSession, job: &str, relation: &str) -> Result<Option<Vec<u64>>, Error> {
    control.query("SELECT 1 FROM sluice.jobs WHERE job = $1 FOR NO KEY UPDATE", &[Some(job)])?;
    let restarted = control.query(
        &format!(
            "SELECT 1 FROM sluice.steps WHERE job = $1 AND state = 'dropped' AND create_sql LIKE '%{SET_LOGGED}' \
             AND recorded_at < pg_postmaster_start_time()"
        ),
        &[Some(job)],
    )?;
    if restarted.is_empty() {
        return Ok(None);
    }
    control.execute(&format!("TRUNCATE {relation}"))?;
    let all: Vec<u64> = control
        .query("SELECT seq FROM sluice.chunks WHERE job = $1", &[Some(job)])?
        .iter()
        .filter_map(|r| r[0].as_deref()?.parse().ok())
        .collect();
    reopen_chunks(control, job, relation, &all)?;
    control.query(
        &format!(
            "UPDATE sluice.steps SET recorded_at = now() WHERE job = $1 AND state = 'dropped' \
             AND create_sql LIKE '%{SET_LOGGED}' RETURNING 1"
        ),
        &[Some(job)],
    )?;
    Ok(Some(all))
}

const USING_INDEX: &str = " USING INDEX ";

/// A key's step builds its index under a SHARE lock, then attaches the key
/// under an ACCESS EXCLUSIVE one. Two such steps at once would deadlock (each
/// waits for the other's SHARE lock), so they take turns; plain index builds
/// and the other constraints (which lock once, up front) run beside them.
fn attaches_a_key(step: &StepRow) -> bool {
    step.deferred.create_sql.contains(USING_INDEX)
}

/// PostgreSQL 18 builds a GIN index with several processes; before, one
/// process builds it, while two loading sessions each keep it up to date.
pub(crate) const PARALLEL_GIN_BUILDS: i32 = 180000;

/// Why a GIN index stays in place before PostgreSQL 18, measured:
/// `--defer-indexes no` against `auto`, 5 M JSON documents (cname) into a
/// jsonb column with a GIN index, 2 cores.
const GIN_KEPT: &str = "a GIN index, which PostgreSQL before 18 builds with one process: building it after the load \
     took longer than keeping it up to date during the load (5 M JSON documents on 2 cores, PostgreSQL 15: 125 s \
     against 74 s, medians of 3; on 18, which builds it with several processes, 58 s against 70 s); \
     --defer-indexes yes defers it anyway";

/// Indexes, primary keys and unique constraints that can be dropped and
/// built again, and a line for each of the others saying why it stays
/// (`forced`: `--defer-indexes yes`, which defers what only costs time).
fn index_steps(
    session: &PgSession,
    relation: &str,
    partitioned: bool,
    forced: bool,
) -> Result<(Vec<DeferredStep>, Vec<String>), Error> {
    const INDEXES: &str = "SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname), c.relname, \
        pg_get_indexdef(i.indexrelid), coalesce(con.contype::text, ''), coalesce(con.conname, ''), \
        i.indisunique, \
        i.indexprs IS NULL AND i.indpred IS NULL AND pg_get_indexdef(i.indexrelid) NOT LIKE '%NULLS NOT DISTINCT%', \
        CASE WHEN i.indisreplident THEN 'it is the table''s replica identity' \
          WHEN i.indisclustered THEN 'the table is clustered on it' \
          WHEN NOT i.indisvalid OR NOT i.indisready THEN 'it is not valid (a CREATE INDEX CONCURRENTLY that failed)' \
          WHEN i.indisexclusion AND con.contype IN ('p', 'u') \
            THEN 'WITHOUT OVERLAPS: the rows that break it cannot be found by a query after the load' \
          WHEN EXISTS (SELECT 1 FROM pg_constraint f WHERE f.contype = 'f' AND f.conindid = i.indexrelid) \
            THEN 'a foreign key references it' \
          WHEN EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = i.indexrelid) \
            THEN 'it is part of the partitioned table''s index (a load into the partitioned table defers it)' \
          ELSE '' END, \
        array_to_string(ARRAY(SELECT quote_ident(a.attname) FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(num, o) \
          JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.num \
          WHERE k.o <= i.indnkeyatts ORDER BY k.o), ', '), \
        coalesce(con.condeferrable, false), coalesce(con.condeferred, false), \
        coalesce((SELECT quote_literal(t.spcname) FROM pg_tablespace t WHERE t.oid = c.reltablespace), ''''''), \
        coalesce(quote_literal(obj_description(i.indexrelid, 'pg_class')), ''), \
        coalesce(quote_literal(obj_description(con.oid, 'pg_constraint')), ''), \
        array_to_string(ARRAY(SELECT quote_ident(a.attname) FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(num, o) \
          JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.num \
          WHERE k.o > i.indnkeyatts ORDER BY k.o), ', '), \
        array_to_string(ARRAY(SELECT quote_ident(split_part(o, '=', 1)) || '=' || \
          quote_literal(substr(o, strpos(o, '=') + 1)) FROM unnest(c.reloptions) o), ', '), \
        quote_ident(n.nspname) || '.' || quote_ident(coalesce(con.conname, c.relname)), quote_ident(c.relname), \
        array_to_string(ARRAY(SELECT quote_ident(a.attname) || CASE WHEN k.coll <> a.attcollation \
          THEN ' COLLATE ' || quote_ident(cn.nspname) || '.' || quote_ident(co.collname) ELSE '' END \
          FROM unnest(i.indkey::int2[], i.indcollation::oid[]) WITH ORDINALITY k(num, coll, o) \
          JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.num \
          LEFT JOIN pg_collation co ON co.oid = k.coll LEFT JOIN pg_namespace cn ON cn.oid = co.collnamespace \
          WHERE k.o <= i.indnkeyatts ORDER BY k.o), ', '), \
        (SELECT amname FROM pg_am WHERE oid = c.relam) \
        FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
        LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid AND con.conrelid = i.indrelid \
          AND con.contype IN ('p', 'u', 'x') \
        WHERE i.indrelid = $1::regclass ORDER BY c.relname";
    let (mut steps, mut kept) = (Vec::new(), Vec::new());
    for row in session.query(INDEXES, &[Some(relation)])? {
        let [qualified, name, indexdef, contype, conname, unique, plain, why_kept, columns, deferrable, deferred, space] =
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11].map(|i| row[i].clone().unwrap_or_default());
        let [index_comment, key_comment, included, options, built_as, quoted_name, compared, method] =
            [12, 13, 14, 15, 16, 17, 18, 19].map(|i| row[i].clone().unwrap_or_default());
        let (unique, plain) = (unique == "t", plain == "t");
        let mut keep = |why: &str| kept.push(kept_object(&contype, &conname, &name, why));
        if !why_kept.is_empty() {
            keep(&why_kept);
            continue;
        }
        if method == "gin" && !forced && session.server_version() < PARALLEL_GIN_BUILDS {
            keep(GIN_KEPT);
            continue;
        }
        if contype == "x" || (unique && !plain) {
            keep("the rows that break it cannot be found by a query after the load");
            continue;
        }
        let partitions = match partitioned {
            true => match partition_indexes(session, &qualified, &indexdef)? {
                Some(partitions) => Some(partitions),
                None => {
                    keep(
                        "its indexes on the partitions differ from what building it again would give them (a \
                         definition, tablespace or comment of their own)",
                    );
                    continue;
                }
            },
            false => None,
        };
        // A partitioned table's index is given `ON ONLY` the table; built so,
        // it would have no partition indexes.
        let indexdef = match partitioned {
            true => {
                let only = format!("CREATE {}INDEX {quoted_name} ON ONLY ", if unique { "UNIQUE " } else { "" });
                let Some(rest) = indexdef.strip_prefix(&only) else {
                    keep("its definition is not one sluice can build on the partitions");
                    continue;
                };
                format!("{}{rest}", &only[..only.len() - "ONLY ".len()])
            }
            false => indexdef,
        };
        let violations = unique.then(|| duplicates_sql(relation, &compared, contype == "p"));
        // The catalog's definition leaves the tablespace out (as pg_dump's
        // does: it sets default_tablespace). Set for every build, '' meaning
        // the database's default: a role's own default must not move it.
        let indexdef = format!(
            "SELECT set_config('default_tablespace', {space}, true); {indexdef}{}",
            comment_sql(&format!("INDEX {qualified}"), &index_comment)
        );
        let renames = partitions.map(|p| rename_partition_indexes_sql(&built_as, &p)).unwrap_or_default();
        let key = |create_sql| DeferredStep {
            name: format!("{}\"{conname}\"", if contype == "p" { PRIMARY_KEY } else { UNIQUE_CONSTRAINT }),
            drop_sql: format!("ALTER TABLE {relation} DROP CONSTRAINT {}", quote_ident(&conname)),
            create_sql,
            violations_sql: violations.clone(),
        };
        steps.push(match contype.as_str() {
            // A key cannot be attached to a partitioned table `USING INDEX`:
            // it is added with its index, which then spans the partitions.
            "p" | "u" if partitioned => key(format!(
                "SELECT set_config('default_tablespace', {space}, true); {}{}{renames}",
                add_key_sql(
                    relation,
                    (&contype, &conname),
                    (&columns, &included, &options),
                    (deferrable == "t", deferred == "t")
                ),
                comment_sql(&format!("CONSTRAINT {} ON {relation}", quote_ident(&conname)), &key_comment)
                    + &comment_sql(&format!("INDEX {built_as}"), &index_comment)
            )),
            "p" | "u" => key(format!(
                "{indexdef}; {}",
                attach_key_sql(
                    relation,
                    (&contype, &conname, &name),
                    (deferrable == "t", deferred == "t"),
                    &key_comment
                )
            )),
            _ => DeferredStep {
                name: format!("{}\"{name}\"", if unique { UNIQUE_INDEX } else { "index " }),
                drop_sql: format!("DROP INDEX {qualified}"),
                create_sql: format!("{indexdef}{renames}"),
                violations_sql: violations,
            },
        });
    }
    Ok((steps, kept))
}

/// `index "name" stays in place for the load: why`, naming a key or an
/// exclusion constraint (`contype` non-empty) by the constraint's name.
fn kept_object(contype: &str, conname: &str, index: &str, why: &str) -> String {
    let object = match contype {
        "p" => format!("primary key \"{conname}\""),
        "u" => format!("unique constraint \"{conname}\""),
        "x" => format!("exclusion constraint \"{conname}\""),
        _ => format!("index \"{index}\""),
    };
    stays(&object, why)
}

/// The line that says why `object` is not deferred.
fn stays(object: &str, why: &str) -> String {
    format!("{object} stays in place for the load: {why}")
}

/// The indexes of a partitioned table's index `index` (defined as
/// `indexdef`) on its partitions, at every level, as (partition, index
/// name) pairs of literals; `None` when one differs from what building the
/// index on the partitioned table gives it (another definition, tablespace
/// or a comment), which a rebuild would not bring back.
fn partition_indexes(session: &PgSession, index: &str, indexdef: &str) -> Result<Option<Vec<(String, String)>>, Error> {
    const PARTITION_INDEXES: &str = "WITH RECURSIVE tree(idx) AS (SELECT $1::regclass::oid UNION ALL \
        SELECT h.inhrelid FROM pg_inherits h JOIN tree t ON h.inhparent = t.idx) \
        SELECT quote_literal(quote_ident(tn.nspname) || '.' || quote_ident(tc.relname)), quote_literal(c.relname), \
          pg_get_indexdef(t.idx), \
          (c.reltablespace = p.reltablespace AND obj_description(t.idx, 'pg_class') IS NULL)::text \
        FROM tree t JOIN pg_index x ON x.indexrelid = t.idx JOIN pg_class c ON c.oid = t.idx \
          JOIN pg_class tc ON tc.oid = x.indrelid JOIN pg_namespace tn ON tn.oid = tc.relnamespace \
          JOIN pg_class p ON p.oid = $1::regclass WHERE t.idx <> $1::regclass::oid";
    // Past the names: ` USING method (columns) ...`, the same for all.
    let body = |def: &str| def.find(" USING ").map(|at| def[at..].to_string());
    let mut partitions = Vec::new();
    for row in session.query(PARTITION_INDEXES, &[Some(index)])? {
        let [table, name, def, alike] = [0, 1, 2, 3].map(|i| row[i].clone().unwrap_or_default());
        if alike != "true" || body(&def).is_none() || body(&def) != body(indexdef) {
            return Ok(None);
        }
        partitions.push((table, name));
    }
    Ok(Some(partitions))
}

/// After a partitioned table's index `index` (qualified) is built: its
/// partitions' indexes given back the names they had (`partitions`, from
/// [`partition_indexes`]), where the server chose others; each first to a
/// name of its own (`sluice_OID`), so that two never need the same name.
fn rename_partition_indexes_sql(index: &str, partitions: &[(String, String)]) -> String {
    if partitions.is_empty() {
        return String::new();
    }
    let wanted: Vec<String> = partitions.iter().map(|(table, name)| format!("({table}, {name})")).collect();
    let index = quote_literal(index);
    let renamed = |to: &str| {
        format!(
            "FOR r IN WITH RECURSIVE tree(idx) AS (SELECT {index}::regclass::oid UNION ALL SELECT h.inhrelid \
             FROM pg_inherits h JOIN tree t ON h.inhparent = t.idx) SELECT t.idx::regclass AS idx, w.name, t.idx AS oid \
             FROM tree t JOIN pg_index x ON x.indexrelid = t.idx JOIN pg_class c ON c.oid = t.idx \
             JOIN (VALUES {}) w(tbl, name) ON to_regclass(w.tbl) = x.indrelid WHERE c.relname <> w.name \
             LOOP EXECUTE format('ALTER INDEX %s RENAME TO %I', r.idx, {to}); END LOOP; ",
            wanted.join(", ")
        )
    };
    format!("; DO $sluice$ DECLARE r record; BEGIN {}{}END $sluice$", renamed("'sluice_' || r.oid"), renamed("r.name"))
}

/// `ALTER TABLE ... ADD CONSTRAINT` of a key with its index's covering
/// columns and storage parameters (which `pg_get_constraintdef` leaves out).
fn add_key_sql(
    relation: &str,
    (contype, conname): (&str, &str),
    (columns, included, options): (&str, &str, &str),
    (deferrable, deferred): (bool, bool),
) -> String {
    let kind = if contype == "p" { "PRIMARY KEY" } else { "UNIQUE" };
    let include = if included.is_empty() { String::new() } else { format!(" INCLUDE ({included})") };
    let with = if options.is_empty() { String::new() } else { format!(" WITH ({options})") };
    format!(
        "ALTER TABLE {relation} ADD CONSTRAINT {} {kind} ({columns}){include}{with}{}",
        quote_ident(conname),
        key_timing(deferrable, deferred)
    )
}

/// Foreign-key constraints that can be dropped and added again, and a line
/// for each of the others saying why it stays (CHECK constraints stay,
/// unsaid: see the module's doc).
///
/// Constraints the server does not enforce ([`ENFORCED`]) are neither
/// deferred nor named as kept (they were named as NOT VALID ones, which
/// slow the load).
fn constraint_steps(session: &PgSession, relation: &str) -> Result<(Vec<DeferredStep>, Vec<String>), Error> {
    const CONSTRAINTS: &str = "SELECT con.conname, pg_get_constraintdef(con.oid), \
        coalesce(con.confrelid::regclass::text, ''), \
        array_to_string(ARRAY(SELECT quote_ident(a.attname) FROM unnest(con.conkey) WITH ORDINALITY k(num, o) \
          JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.num ORDER BY k.o), ','), \
        array_to_string(ARRAY(SELECT quote_ident(a.attname) FROM unnest(con.confkey) WITH ORDINALITY k(num, o) \
          JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.num ORDER BY k.o), ','), \
        coalesce(quote_literal(obj_description(con.oid, 'pg_constraint')), ''), \
        CASE WHEN NOT con.conislocal OR con.coninhcount > 0 THEN 'inherited from the table''s parent' \
          WHEN NOT con.convalidated THEN 'NOT VALID, which adding it again would not keep' \
          WHEN con.confrelid = con.conrelid THEN 'it refers to the table itself' \
          WHEN con.confmatchtype <> 's' THEN 'MATCH FULL' \
          WHEN to_jsonb(con) ->> 'conperiod' = 'true' \
            THEN 'PERIOD: a row''s period may be covered by several referenced rows, which the query after \
                  the load does not look for' ELSE '' END \
        FROM pg_constraint con WHERE con.conrelid = $1::regclass AND con.contype = 'f' \
          AND {ENFORCED} ORDER BY con.conname";
    let (mut steps, mut kept) = (Vec::new(), Vec::new());
    for row in session.query(&CONSTRAINTS.replace("{ENFORCED}", ENFORCED), &[Some(relation)])? {
        let [conname, condef, referenced, columns, referenced_columns, comment, why_kept] =
            [0, 1, 2, 3, 4, 5, 6].map(|i| row[i].clone().unwrap_or_default());
        let object = format!("{FOREIGN_KEY}\"{conname}\"");
        if !why_kept.is_empty() {
            kept.push(stays(&object, &why_kept));
            continue;
        }
        let violations = missing_references_sql(relation, &columns, &referenced, &referenced_columns);
        steps.push(DeferredStep {
            name: object,
            drop_sql: format!("ALTER TABLE {relation} DROP CONSTRAINT {}", quote_ident(&conname)),
            create_sql: format!(
                "ALTER TABLE {relation} ADD CONSTRAINT {} {condef}{}",
                quote_ident(&conname),
                comment_sql(&format!("CONSTRAINT {} ON {relation}", quote_ident(&conname)), &comment)
            ),
            violations_sql: Some(violations),
        });
    }
    Ok((steps, kept))
}

/// Makes the key `(contype, conname, index)` out of its index, built just
/// before, and comments it. The index first, then the key on it: `ADD
/// CONSTRAINT ... PRIMARY KEY (...)` would build the index under an ACCESS
/// EXCLUSIVE lock, waiting for (and blocking) the other builds; CREATE INDEX
/// takes a SHARE lock, which they share. Measured on transactions with two
/// other indexes: the three builds 9.9 s -> 9.0 s (median of 3).
fn attach_key_sql(
    relation: &str,
    (contype, conname, index): (&str, &str, &str),
    (deferrable, deferred): (bool, bool),
    comment: &str,
) -> String {
    let kind = if contype == "p" { "PRIMARY KEY" } else { "UNIQUE" };
    let timing = key_timing(deferrable, deferred);
    let conname = quote_ident(conname);
    format!(
        "ALTER TABLE {relation} ADD CONSTRAINT {conname} {kind}{USING_INDEX}{}{timing}{}",
        quote_ident(index),
        comment_sql(&format!("CONSTRAINT {conname} ON {relation}"), comment)
    )
}

/// A key's `DEFERRABLE` clause.
fn key_timing(deferrable: bool, deferred: bool) -> &'static str {
    match (deferrable, deferred) {
        (false, _) => "",
        (true, false) => " DEFERRABLE",
        (true, true) => " DEFERRABLE INITIALLY DEFERRED",
    }
}

/// `; COMMENT ON {object} IS {literal}` for a comment the drop takes with
/// it; empty when there is none.
fn comment_sql(object: &str, literal: &str) -> String {
    match literal.is_empty() {
        true => String::new(),
        false => format!("; COMMENT ON {object} IS {literal}"),
    }
}

/// The `xmin` of rows sharing a key with another row (and, for a primary
/// key, of rows with a NULL in it). `columns` are quoted, comma-separated,
/// each with the `COLLATE` its index compares it by where that is not the
/// column's own (a case-insensitive one: `Ann` and `ann` are one key).
///
/// The rows with a NULL come from a query of their own (`UNION ALL`), not
/// by `OR` beside the `IN`: the `OR` kept the server from joining the
/// duplicated keys, and where their hash table would not fit in
/// `work_mem` it scanned the whole list for each row (1 M rows with 10,000
/// repeated ids: stopped after 10 minutes, against 2.2 s joined).
fn duplicates_sql(relation: &str, columns: &str, primary: bool) -> String {
    let cols: Vec<&str> = columns.split(", ").collect();
    let not_null = cols.iter().map(|c| format!("{c} IS NOT NULL")).collect::<Vec<_>>().join(" AND ");
    let mut sql = format!(
        "SELECT xmin FROM {relation} WHERE ({columns}) IN \
         (SELECT {columns} FROM {relation} WHERE {not_null} GROUP BY {columns} HAVING count(*) > 1)"
    );
    if primary {
        sql.push_str(&format!(" UNION ALL SELECT xmin FROM {relation} WHERE NOT ({not_null})"));
    }
    sql
}

/// The `xmin` of rows whose foreign key (MATCH SIMPLE: no NULL in it) has no
/// referenced row.
fn missing_references_sql(relation: &str, columns: &str, referenced: &str, referenced_columns: &str) -> String {
    let pairs: Vec<(&str, &str)> = columns.split(',').zip(referenced_columns.split(',')).collect();
    let not_null = pairs.iter().map(|(c, _)| format!("t.{c} IS NOT NULL")).collect::<Vec<_>>().join(" AND ");
    let matches = pairs.iter().map(|(c, r)| format!("r.{r} = t.{c}")).collect::<Vec<_>>().join(" AND ");
    format!(
        "SELECT t.xmin FROM {relation} t WHERE {not_null} AND NOT EXISTS (SELECT 1 FROM {referenced} r WHERE {matches})"
    )
}

/// The report's account of what the job deferred (from the ledger: a
/// resumed job reports what its first run dropped) and why, before the
/// rebuild fills in its times.
pub fn deferral(steps: &[StepRow], plan: DeferPlan) -> Deferral {
    let unlogged = steps.iter().any(is_unlogged_step);
    Deferral {
        objects: steps.iter().filter(|s| !is_unlogged_step(s)).map(|s| s.deferred.name.clone()).collect(),
        still_dropped: steps
            .iter()
            .filter(|s| !s.rebuilt && !is_unlogged_step(s))
            .map(|s| s.deferred.name.clone())
            .collect(),
        still_unlogged: steps.iter().any(|s| !s.rebuilt && is_unlogged_step(s)),
        why_not: plan.why_not.filter(|_| steps.is_empty()),
        kept: plan.kept,
        unlogged,
        table_path: match (plan.table_path, unlogged) {
            (Some(elsewhere), _) => elsewhere,
            (None, true) => "unlogged for the load, logged after (--unlogged): no WAL for the rows".into(),
            (None, false) => "logged: each chunk commits on its own, so COPY FREEZE and WAL skipping (which need \
                              the transaction that created or truncated the table) do not apply; --unlogged skips \
                              WAL for an empty table"
                .into(),
        },
        ..Deferral::default()
    }
}

/// How the rebuild went, for the report.
#[derive(Clone, Debug, Default)]
pub struct Rebuilt {
    /// Each step built by this process, with its seconds.
    pub built: Vec<(String, f64)>,
    /// Wall time of the rebuild.
    pub seconds: f64,
    /// Chunks that loaded rows violating a key or constraint.
    pub reloaded: Vec<u64>,
    /// The server restarted while the table was unlogged: all was reloaded.
    pub restarted: bool,
}

/// What finishing the deferred steps found.
pub enum Completion {
    /// Every step is rebuilt: the job can be marked finished.
    Complete,
    /// These chunks were reopened: load them again, then complete again.
    Reload(Vec<u64>),
    /// These chunks loaded rows that break a key or constraint, now built
    /// and in place: load them again, one at a time, in input order. In
    /// parallel, two workers copying duplicates of each other's keys wait
    /// for each other's transactions (a worker whose run is refused rolls
    /// back its rows, the other's duplicate takes the key, then the first
    /// copies its rows again and waits): 2 M rows with 1 % duplicate keys
    /// took 119 s with deadlocks, against 1.8 s clean (bench/README.md). One
    /// at a time, the first of two duplicates in the file is the one kept.
    /// `in_order` false: only CHECK constraints and foreign keys found
    /// violating rows, which a row breaks by its own values whatever the
    /// others (a foreign key to the table itself is never deferred), so the
    /// chunks load again side by side: 1 M rows with a missing reference
    /// every 1,000 lines had every chunk loaded again one at a time.
    Violated { chunks: Vec<u64>, in_order: bool },
}

/// Whether the rows a deferred step finds violating depend on the order
/// rows load in: a key's do (the first of two duplicates is kept); a CHECK
/// constraint's or a foreign key's do not.
fn violations_depend_on_order(step: &StepRow) -> bool {
    let name = step.deferred.name.as_str();
    !(name.starts_with(CHECK_CONSTRAINT) || name.starts_with(FOREIGN_KEY))
}

/// Whether `steps` hold a unique key or index dropped and not yet built
/// again: its duplicates are then found after the load, not as it runs.
pub fn a_key_is_dropped(steps: &[StepRow]) -> bool {
    let keys = [PRIMARY_KEY, UNIQUE_CONSTRAINT, UNIQUE_INDEX];
    steps.iter().any(|s| !s.rebuilt && keys.iter().any(|key| s.deferred.name.starts_with(key)))
}

/// How deferred steps' names begin, by kind: the ledger keeps the name,
/// which is how a later run tells a step's kind (a CHECK's, from a job of
/// an earlier version).
const PRIMARY_KEY: &str = "primary key ";
const UNIQUE_CONSTRAINT: &str = "unique constraint ";
const UNIQUE_INDEX: &str = "unique index ";
const CHECK_CONSTRAINT: &str = "check constraint ";
const FOREIGN_KEY: &str = "foreign key ";

/// Builds the job's pending steps, `sessions` at a time, watched by
/// `waits`; keys and constraints first check for violating rows and, when
/// there are some, reopen the chunks that loaded them (see the module doc).
/// Runs under a lock on the job, so two processes finishing one job take
/// turns.
pub fn complete(
    control: &PgSession,
    target: &PgTarget,
    (job, relation): (&str, &str),
    sessions: usize,
    rebuilt: &mut Rebuilt,
    waits: &WaitSampler,
) -> Result<Completion, Error> {
    control.transaction(|| {
        if let Some(all) = reset_if_restarted(control, job, relation)? {
            rebuilt.restarted = true;
            return Ok(Completion::Reload(all));
        }
        let open = control.query("SELECT seq FROM sluice.chunks WHERE job = $1 AND state <> 'done'", &[Some(job)])?;
        if !open.is_empty() {
            // Another process reopened chunks: load them first.
            return Ok(Completion::Reload(open.iter().filter_map(|r| r[0].as_deref()?.parse().ok()).collect()));
        }
        let (logged, pending): (Vec<StepRow>, Vec<StepRow>) =
            ledger::steps(control, job)?.into_iter().filter(|s| !s.rebuilt).partition(is_unlogged_step);
        let started = Instant::now();
        // `SET LOGGED` writes every row again with its own `xmin`, which
        // hides the COPY that loaded it: the keys and constraints that may
        // find violating rows are built before it (their indexes are then
        // built twice, as the rewrite rebuilds them), the plain indexes
        // after it, once, into the logged table, not waiting for its lock.
        let (checked_first, pending): (Vec<StepRow>, Vec<StepRow>) = match logged.is_empty() {
            true => (Vec::new(), pending),
            false => pending.into_iter().partition(|s| s.deferred.violations_sql.is_some()),
        };
        let mut violated = build_in_parallel(target, job, &checked_first, sessions, rebuilt, waits)?;
        if violated.is_empty() {
            build_in_parallel(target, job, &logged, 1, rebuilt, waits)?;
            violated = build_in_parallel(target, job, &pending, sessions, rebuilt, waits)?;
        }
        if violated.is_empty() {
            // Every key is in place: the markers have served.
            control.query("DELETE FROM sluice.xacts WHERE job = $1 RETURNING 1", &[Some(job)])?;
            rebuilt.seconds += started.elapsed().as_secs_f64();
            return Ok(Completion::Complete);
        }
        let mut chunks: Vec<u64> = violated.iter().flat_map(|(_, seqs)| seqs.iter().copied()).collect();
        chunks.sort_unstable();
        chunks.dedup();
        reopen_chunks(control, job, relation, &chunks)?;
        for (step, _) in &violated {
            // In a savepoint, so that a refusal leaves the transaction able
            // to say which other jobs loaded meanwhile (it then rolls back).
            control.execute("SAVEPOINT sluice_build")?;
            if let Some((state, message)) = build_one(control, job, step, rebuilt)? {
                control.execute("ROLLBACK TO SAVEPOINT sluice_build")?;
                return Err(could_not_build(control, job, step, &state, &message));
            }
        }
        rebuilt.seconds += started.elapsed().as_secs_f64();
        rebuilt.reloaded.extend(&chunks);
        let in_order = violated.iter().any(|(step, _)| violations_depend_on_order(step));
        Ok(Completion::Violated { chunks, in_order })
    })
}

/// Builds steps over `sessions` connections, which `waits` samples while
/// they build; returns the steps that found violating rows, with the chunks
/// that loaded them (nothing built for those).
fn build_in_parallel(
    target: &PgTarget,
    job: &str,
    pending: &[StepRow],
    sessions: usize,
    rebuilt: &mut Rebuilt,
    waits: &WaitSampler,
) -> Result<Vec<(StepRow, Vec<u64>)>, Error> {
    if pending.is_empty() {
        return Ok(Vec::new());
    }
    let queue = Mutex::new(pending.iter().rev().cloned().collect::<Vec<_>>());
    let results: BuildResults = Mutex::new((Vec::new(), Vec::new(), None));
    let one_key_at_a_time = Mutex::new(());
    let (sampling, sampler_done) = bounded::<()>(0);
    thread::scope(|scope| {
        scope.spawn(move || waits.run(target, sampler_done, Work::IndexBuilds));
        let builders: Vec<_> = (0..sessions.clamp(1, pending.len()))
            .map(|_| scope.spawn(|| build_from_queue(target, job, (&queue, &one_key_at_a_time), &results, waits)))
            .collect();
        for builder in builders {
            let _ = builder.join();
        }
        drop(sampling);
    });
    let (built, violated, error) = results.into_inner().unwrap();
    rebuilt.built.extend(built);
    match error {
        Some(e) => Err(e),
        None => Ok(violated),
    }
}

/// What the builders found: the objects built with their seconds, the
/// steps with violating rows and their chunks, the first error.
type BuildResults = Mutex<(Vec<(String, f64)>, Vec<(StepRow, Vec<u64>)>, Option<Error>)>;

/// One builder: a session of its own takes steps from the queue until it
/// is empty; on an error it empties the queue, so the others stop too.
fn build_from_queue(
    target: &PgTarget,
    job: &str,
    (queue, one_key_at_a_time): (&Mutex<Vec<StepRow>>, &Mutex<()>),
    results: &BuildResults,
    waits: &WaitSampler,
) {
    let outcome = target.connect().and_then(|session| {
        waits.watch(session.backend_pid());
        while let Some((step, _turn)) = next_step(queue, one_key_at_a_time) {
            let mut mine = Rebuilt::default();
            let found = build_checked(&session, job, &step, &mut mine)?;
            let mut results = results.lock().unwrap();
            results.0.extend(mine.built);
            if let Some(chunks) = found {
                results.1.push((step, chunks));
            }
        }
        Ok(())
    });
    if let Err(e) = outcome {
        queue.lock().unwrap().clear();
        results.lock().unwrap().2.get_or_insert(e);
    }
}

/// The next step for a free session, and for a key its turn. While a key
/// builds, a step that is not a key comes first: another key would only
/// wait. The queue's lock is let go before waiting for a turn (and is not
/// held by the caller's loop: the builds would take turns).
fn next_step<'a>(
    queue: &Mutex<Vec<StepRow>>,
    one_key_at_a_time: &'a Mutex<()>,
) -> Option<(StepRow, Option<MutexGuard<'a, ()>>)> {
    let (step, turn) = {
        let mut queue = queue.lock().unwrap();
        let turn = one_key_at_a_time.try_lock().ok();
        let last = queue.len().checked_sub(1)?;
        let at = match turn {
            Some(_) => last,
            None => queue.iter().rposition(|s| !attaches_a_key(s)).unwrap_or(last),
        };
        (queue.remove(at), turn)
    };
    let turn = match attaches_a_key(&step) {
        true => Some(turn.unwrap_or_else(|| one_key_at_a_time.lock().unwrap())),
        false => None,
    };
    Some((step, turn))
}

/// In its own transaction: skips a step another process built, returns the
/// chunks that loaded violating rows when there are some, else builds it.
fn build_checked(
    session: &PgSession,
    job: &str,
    step: &StepRow,
    rebuilt: &mut Rebuilt,
) -> Result<Option<Vec<u64>>, Error> {
    session.execute("BEGIN")?;
    let outcome = (|| {
        let state = session.query(
            "SELECT state FROM sluice.steps WHERE job = $1 AND step = $2::integer FOR UPDATE",
            &[Some(job), Some(&step.step.to_string())],
        )?;
        if state.first().and_then(|r| r[0].as_deref()) != Some("dropped") {
            return Ok(None);
        }
        // Optimistic: building is the cheapest check that nothing violates
        // the key (a query for duplicates costs a sort of its own).
        session.execute("SAVEPOINT sluice_build")?;
        let Some((state, message)) = build_one(session, job, step, rebuilt)? else { return Ok(None) };
        session.execute("ROLLBACK TO SAVEPOINT sluice_build")?;
        if let (true, Some(violations)) = (VIOLATIONS.contains(&state.as_str()), &step.deferred.violations_sql) {
            let chunks = violating_chunks(session, job, violations)?;
            if !chunks.is_empty() {
                return Ok(Some(chunks));
            }
        }
        Err(could_not_build(session, job, step, &state, &message))
    })();
    let end = match &outcome {
        Ok(None) => "COMMIT",
        _ => "ROLLBACK",
    };
    session.execute(end)?;
    outcome
}

/// SQLSTATEs of a key or constraint that existing rows violate: unique,
/// not-null, check and foreign-key violations.
const VIOLATIONS: [&str; 4] = ["23505", "23502", "23514", "23503"];

/// Builds one step with more memory for the sort and marks it rebuilt;
/// the server's refusal (SQLSTATE and message) when it refused.
fn build_one(
    session: &PgSession,
    job: &str,
    step: &StepRow,
    rebuilt: &mut Rebuilt,
) -> Result<Option<(String, String)>, Error> {
    let started = Instant::now();
    session.execute(&format!(
        "SELECT set_config('maintenance_work_mem', greatest(pg_size_bytes(current_setting('maintenance_work_mem')), \
         {BUILD_MEMORY_MB} * 1024 * 1024) / 1024 || 'kB', true)"
    ))?;
    if let Some(refusal) = session.execute_for_state(&step.deferred.create_sql)? {
        return Ok(Some(refusal));
    }
    ledger::mark_rebuilt(session, job, step.step)?;
    rebuilt.built.push((step.deferred.name.clone(), started.elapsed().as_secs_f64()));
    Ok(None)
}

/// A build the server refused for rows this job did not load (they were in
/// the table before, or came from elsewhere meanwhile: other jobs that
/// loaded while it was dropped are named), or for another reason (`state`,
/// such as a cancel or a full disk). The other jobs are left unnamed when
/// they cannot be read: the message is about the build.
fn could_not_build(session: &PgSession, job: &str, step: &StepRow, state: &str, message: &str) -> Error {
    let fix = match VIOLATIONS.contains(&state) {
        true => {
            let others = ledger::loaded_while_dropped(session, job, step.step).unwrap_or_default();
            let others: Vec<String> =
                others.iter().map(|(other, rows)| format!("job {other} loaded {}", count_of(*rows, "row"))).collect();
            let meanwhile = match others.is_empty() {
                true => String::new(),
                false => format!("; while it was dropped, {} into the table, unchecked by it", others.join(", ")),
            };
            format!("fix the rows that violate it (those this job loaded were checked{meanwhile}) and run")
        }
        false => "once the cause is fixed, run".to_string(),
    };
    Error::Database(format!(
        "could not build {} again after the load: {message} [{state}]; it stays dropped and recorded in the \
         ledger (sluice.steps); {fix} the same command again to build it",
        step.deferred.name
    ))
}

/// The chunks whose COPY wrote rows that `violations` (a query for `xmin`)
/// returns. `xid` has no ordering and, on older servers, no hashing: compare
/// as bigint.
fn violating_chunks(session: &PgSession, job: &str, violations: &str) -> Result<Vec<u64>, Error> {
    let sql = format!(
        "SELECT DISTINCT x.seq FROM sluice.xacts x \
         JOIN (SELECT DISTINCT v.xmin::text::bigint AS xid FROM ({violations}) v) v ON v.xid = x.xmin::text::bigint \
         WHERE x.job = $1 ORDER BY 1"
    );
    let rows = session.query(&sql, &[Some(job)])?;
    Ok(rows.iter().filter_map(|r| r[0].as_deref()?.parse().ok()).collect())
}

/// Deletes the rows `chunks` loaded (found through their markers' `xmin`)
/// and reopens them in the ledger, in the caller's transaction.
fn reopen_chunks(control: &PgSession, job: &str, relation: &str, chunks: &[u64]) -> Result<(), Error> {
    control.query(
        &format!(
            "DELETE FROM {relation} t USING sluice.xacts x WHERE x.job = $1 AND x.seq = ANY($2::bigint[]) \
             AND t.xmin::text::bigint = x.xmin::text::bigint RETURNING 1"
        ),
        &[Some(job), Some(&ledger::seq_array(chunks))],
    )?;
    ledger::reopen_chunks(control, job, chunks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_query_groups_the_key_and_a_primary_key_refuses_nulls() {
        let sql = duplicates_sql("\"public\".\"t\"", "\"a\", \"b\"", true);
        assert!(sql.contains("GROUP BY \"a\", \"b\" HAVING count(*) > 1"), "{sql}");
        assert!(sql.contains("WHERE \"a\" IS NOT NULL AND \"b\" IS NOT NULL"), "{sql}");
        let nulls = " UNION ALL SELECT xmin FROM \"public\".\"t\" WHERE NOT (\"a\" IS NOT NULL AND \"b\" IS NOT NULL)";
        assert!(sql.ends_with(nulls), "{sql}");
        assert!(!sql.contains(" OR "), "an OR beside the IN keeps the server from joining: {sql}");
        assert!(!duplicates_sql("t", "\"a\"", false).contains("UNION"));
    }

    #[test]
    fn missing_references_pairs_columns_in_order() {
        let sql = missing_references_sql("t", "\"x\",\"y\"", "\"p\"", "\"a\",\"b\"");
        assert!(sql.contains("r.\"a\" = t.\"x\" AND r.\"b\" = t.\"y\""), "{sql}");
        assert!(sql.contains("t.\"x\" IS NOT NULL AND t.\"y\" IS NOT NULL"), "{sql}");
    }
}
