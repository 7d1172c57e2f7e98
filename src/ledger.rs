//! The ledger: which chunks of a job have committed, kept in the target
//! database next to the data.
//!
//! BE ADVISED: exactly-once rests on one rule. A chunk's ledger row turns
//! `done` in the same transaction as the chunk's COPY (and its rejected
//! records), so the row is `done` if and only if the chunk's rows are there.
//! A re-run after kill -9, Ctrl-C, a server restart or a reboot skips exactly
//! the `done` chunks; chunking is deterministic, so the same command cuts the
//! same chunks. For the same reason `synchronous_commit = off` is safe on
//! loading sessions: a commit lost in a crash loses its `done` too, and the
//! chunk is loaded again.
//!
//! Several processes (or hosts) on one job need no coordinator: a worker
//! claims a batch inside the transaction that loads it, with an advisory
//! lock on (the job, the batch's first chunk), then reads which of its
//! chunks the ledger lists. A batch locked by another process is deferred
//! and claimed again, waiting, at the end: it is then `done` (skip it) or
//! its loader died and the lock went with the connection (load it). The
//! primary key settles the rest: two processes that cut a batch another way
//! (one resumed a job the other was loading) may both load a chunk, and the
//! second to record it gets a unique violation, rolls back, and finds it
//! done. A chunk's row is written once, by COPY, when it is done: a glob of
//! 51,790 small files cost the server 1.59 s of CPU for the ledger when each
//! row was inserted `pending` first, locked, then updated, and 0.60 s so.
//! Rows listed `pending` (left by an older sluice, or put back for a
//! reload) are updated, only while not `done`.
//!
//! Plan steps: steps before the copy (TRUNCATE, dropping deferred indexes
//! and constraints) run in the transaction that records the job and sets
//! `steps_done`, so they happen exactly once and never half. Each dropped
//! object gets a row in `sluice.steps` with the SQL that builds it again,
//! written in that same transaction; whoever finishes the job builds the
//! pending ones, each in the transaction that marks it `rebuilt`, and a
//! resumed run completes what a crash left pending, so an index is never
//! left dropped (see `load::defer`). A `--restart` keeps pending steps: the
//! objects they describe are still dropped.
//!
//! Why our own: resume is sluice's edge; no peer composes it with parallel
//! chunks, many files and compressed input.
//!
//! Schema (documented in the README; columns are only ever added):
//! `sluice.jobs (job, target_table, fingerprint, created_at, finished_at,
//! chunking, table_oid, command, input_bytes, emptied_at, input_sizes, stopped_by,
//! skipped_lines, record_limit, table_filenode)` and
//! `sluice.chunks (job, seq, file, byte_offset, byte_len, first_line, state
//! ('pending' or 'done'), rows_loaded, rows_rejected, host, pid, committed_at,
//! content_hash, rows_suppressed, rows_skipped, line_samples, rows_replaced)`,
//! `sluice.steps (job, step, target_table, name, drop_sql, create_sql,
//! violations_sql, state ('dropped' or 'rebuilt'), recorded_at, rebuilt_at)` and
//! `sluice.xacts (job, seq)` (one row per COPY of a deferred load, whose
//! `xmin` names the rows that COPY wrote).
//!
//! `sluice.chunks.job` has no foreign key to `sluice.jobs`: checking one
//! cost the server 20 µs per chunk row, half of what inserting the row
//! costs, and a glob of small files has a row per file. Sluice writes a
//! job's row before its chunks' and deletes its chunks with it. Ledgers
//! made before keep their key, which still holds.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::samples;
use crate::sink::postgres::PgSession;
use crate::sql::{copy_text_value, quote_ident, quote_literal};

/// Creates sluice's schema. Run only when it is missing: the server checks
/// the right to create schemas before it sees one exists, and a loading role
/// may own the schema an administrator made for it without that right.
pub const CREATE_SCHEMA: &str = "CREATE SCHEMA IF NOT EXISTS sluice";

/// The schema of the ledger and the rejects, and its tables: never a load's
/// target.
pub const SCHEMA: &str = "sluice";
pub const TABLES: [&str; 5] = ["jobs", "chunks", "steps", "xacts", "rejects"];

/// Creates sluice's tables when missing, with every column of this version.
pub const CREATE_TABLES: &str =
    "CREATE TABLE IF NOT EXISTS sluice.jobs (job text PRIMARY KEY, target_table text NOT NULL, \
     fingerprint text NOT NULL, steps_done boolean NOT NULL DEFAULT false, \
     created_at timestamptz NOT NULL DEFAULT now(), finished_at timestamptz, chunking text, table_oid bigint, \
     command text, input_bytes bigint, emptied_at timestamptz, input_sizes text, stopped_by text, \
     skipped_lines bigint, record_limit bigint, table_filenode bigint); \
     CREATE TABLE IF NOT EXISTS sluice.chunks (job text NOT NULL, \
     seq bigint NOT NULL, file text NOT NULL, byte_offset bigint NOT NULL, byte_len bigint NOT NULL, \
     first_line bigint NOT NULL, state text NOT NULL, rows_loaded bigint NOT NULL DEFAULT 0, \
     rows_rejected bigint NOT NULL DEFAULT 0, host text NOT NULL, pid integer NOT NULL, \
     committed_at timestamptz, content_hash bigint, rows_suppressed bigint NOT NULL DEFAULT 0, \
     rows_skipped bigint NOT NULL DEFAULT 0, line_samples text, rows_replaced bigint NOT NULL DEFAULT 0, \
     PRIMARY KEY (job, seq)); \
     CREATE TABLE IF NOT EXISTS sluice.steps (job text NOT NULL, step integer NOT NULL, \
     target_table text NOT NULL, name text NOT NULL, drop_sql text NOT NULL, create_sql text NOT NULL, \
     violations_sql text, state text NOT NULL, recorded_at timestamptz NOT NULL DEFAULT now(), \
     rebuilt_at timestamptz, PRIMARY KEY (job, step)); \
     CREATE TABLE IF NOT EXISTS sluice.xacts (job text NOT NULL, seq bigint NOT NULL); \
     CREATE INDEX IF NOT EXISTS xacts_job_seq ON sluice.xacts (job, seq)";

/// When the ledger's schema exists: its owner, the current role, and
/// whether the role may use the schema and do to each ledger table already
/// there what it needs: read rows (`$1`, for `sluice status`), or what
/// loads do as well: add and delete rows, and change those of `jobs`,
/// `chunks` and `steps` (`has_table_privilege` with a list is true when any
/// one is held, hence one call each).
const ACCESS_SQL: &str = "SELECT n.nspowner::regrole::text, current_user::text, \
     pg_catalog.has_schema_privilege(n.oid, 'USAGE') AND NOT EXISTS (SELECT FROM pg_catalog.pg_class c \
       WHERE c.relnamespace = n.oid AND c.relkind = 'r' \
       AND c.relname IN ('jobs', 'chunks', 'steps', 'xacts', 'rejects') \
       AND NOT (pg_catalog.has_table_privilege(c.oid, 'SELECT') AND ($1::bool \
         OR (pg_catalog.has_table_privilege(c.oid, 'INSERT') AND pg_catalog.has_table_privilege(c.oid, 'DELETE') \
           AND (c.relname IN ('xacts', 'rejects') OR pg_catalog.has_table_privilege(c.oid, 'UPDATE')))))) \
     FROM pg_catalog.pg_namespace n WHERE n.nspname = 'sluice'";

/// What a command does with the ledger, which decides the rights it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LedgerUse {
    /// `sluice status`: reads it.
    Read,
    /// `sluice load`: reads and writes it.
    Load,
}

/// The ledger another role made, which this role may not use: the server
/// would say only `permission denied for schema sluice`, at the first
/// query. Read from the catalogs, which any role may read.
pub fn refuse_out_of_reach(control: &PgSession, usage: LedgerUse) -> Result<(), Error> {
    let read_only = if usage == LedgerUse::Read { "true" } else { "false" };
    let rows = control.query(ACCESS_SQL, &[Some(read_only)])?;
    let Some(row) = rows.first() else {
        return Ok(());
    };
    if row[2].as_deref() == Some("t") {
        return Ok(());
    }
    let [owner, role] = [0, 1].map(|i| quote_ident(row[i].as_deref().unwrap_or_default()));
    let rights = match usage {
        LedgerUse::Read => "SELECT",
        LedgerUse::Load => "SELECT, INSERT, UPDATE, DELETE",
    };
    Err(Error::Database(format!(
        "sluice keeps its ledger in schema \"sluice\" of the target database, which role {owner} made, and role \
         {role} may not use it; ask {owner} (or a superuser) to run GRANT USAGE ON SCHEMA sluice TO {role}; GRANT \
         {rights} ON ALL TABLES IN SCHEMA sluice TO {role}, or run sluice as {owner}"
    )))
}

/// Columns added since the first ledger, as (table, column, type): a ledger
/// made by an older sluice gets those it lacks. Only those: ALTER TABLE
/// locks a table whole even when the column is there, and a process
/// altering the ledger while another one loads could deadlock with it.
/// Listed in the order loads lock the tables (jobs, then a chunk's rejects,
/// then its row in chunks).
const ADDED_COLUMNS: [(&str, &str, &str); 17] = [
    ("jobs", "chunking", "text"),
    ("jobs", "table_oid", "bigint"),
    ("jobs", "command", "text"),
    ("jobs", "input_bytes", "bigint"),
    ("jobs", "emptied_at", "timestamptz"),
    ("jobs", "input_sizes", "text"),
    ("jobs", "stopped_by", "text"),
    ("jobs", "skipped_lines", "bigint"),
    ("jobs", "record_limit", "bigint"),
    ("jobs", "table_filenode", "bigint"),
    ("rejects", "seq", "bigint"),
    ("rejects", "raw_length", "bigint"),
    ("chunks", "content_hash", "bigint"),
    ("chunks", "rows_suppressed", "bigint NOT NULL DEFAULT 0"),
    ("chunks", "rows_skipped", "bigint NOT NULL DEFAULT 0"),
    ("chunks", "line_samples", "text"),
    ("chunks", "rows_replaced", "bigint NOT NULL DEFAULT 0"),
];

/// One row per column of [`ADDED_COLUMNS`] missing from an existing ledger
/// table: the `ALTER TABLE` that adds it.
pub fn missing_columns_sql() -> String {
    let values: Vec<String> = ADDED_COLUMNS
        .iter()
        .enumerate()
        .map(|(i, (table, column, ty))| format!("({i}, '{table}', '{column}', '{ty}')"))
        .collect();
    format!(
        "SELECT format('ALTER TABLE sluice.%I ADD COLUMN IF NOT EXISTS %I %s', t, c, ty) \
         FROM (VALUES {}) v(i, t, c, ty) WHERE to_regclass('sluice.' || t) IS NOT NULL \
         AND NOT EXISTS (SELECT FROM pg_catalog.pg_attribute WHERE attrelid = to_regclass('sluice.' || t) \
         AND attname = c) ORDER BY i",
        values.join(", ")
    )
}

/// True when the ledger and rejects tables exist with every column this
/// version writes (and the rejects' index, where the role may add it).
pub fn schema_is_current_sql() -> String {
    format!(
        "SELECT to_regclass('sluice.rejects') IS NOT NULL AND to_regclass('sluice.xacts') IS NOT NULL \
         AND {} AND NOT EXISTS ({})",
        crate::rejects::HAS_INDEX_SQL,
        missing_columns_sql()
    )
}

/// A committed chunk's counts, as the ledger recorded them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Done {
    pub rows: u64,
    pub rejected: u64,
    /// Records the server took without counting them as rows: a BEFORE
    /// INSERT trigger returned NULL (it dropped them, or stored them
    /// elsewhere, as inheritance partitioning does).
    pub suppressed: u64,
    /// Records skipped for a key a row held (`--on-conflict-do-nothing`).
    pub skipped: u64,
    /// Of `rows`, those that replaced a row holding their key
    /// (`--on-conflict-do-update`).
    pub replaced: u64,
    /// Where the chunk lay in its input, to tell whether a resumed load
    /// cuts the same chunk (stdin cannot be checked any other way).
    pub byte_offset: u64,
    pub byte_len: u64,
    /// The chunk's content hash (`None` in rows of older versions, which
    /// hashed only inputs read as a stream).
    pub content_hash: Option<u64>,
}

/// The state of a job when a load starts.
#[derive(Debug)]
pub enum Opened {
    /// New, or restarted: nothing committed yet.
    Fresh,
    /// Some chunks committed by earlier runs (or other processes).
    Resumed(HashMap<u64, Done>),
    /// The inputs' sizes or modification times changed since the job began
    /// (a file copied or touched again), nothing else did, and every
    /// committed chunk has a content hash: the load checks each against the
    /// chunk it cuts now, whether or not the job had finished.
    Changed(HashMap<u64, Done>),
    /// Every chunk committed and the job marked finished.
    Finished { rows: u64, finished_at: String },
    /// The job had finished on other data than its inputs hold now, and
    /// this run empties the table (`--truncate`): started over, as with
    /// `--restart`. Why: a nightly `--truncate` load of a file written
    /// anew under the same name was refused every night after the first
    /// (its first chunk held other bytes), and nothing the job committed
    /// can be loaded twice into an emptied table.
    ///
    /// Or the job had finished and another job's `--truncate` emptied the
    /// table since (`emptied`): its rows are gone, and "already finished"
    /// left them out for good.
    StartedOver { rows: u64, finished_at: String, emptied: bool },
}

/// FNV-1a, 64 bits: job names must be the same on every machine and sluice
/// version, which std's hasher does not promise.
pub fn stable_hash(parts: &[&str]) -> String {
    format!("{:016x}", fnv1a(parts))
}

/// FNV-1a over the parts, each followed by a NUL.
fn fnv1a(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.as_bytes().iter().chain([0u8].iter()) {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

/// What a load asks of its job.
pub struct JobSpec<'a> {
    pub job: &'a str,
    /// The target table, as `schema.name`.
    pub table: &'a str,
    /// Its OID: a table dropped and created again under the same name has
    /// another, and none of the rows the job committed.
    pub table_oid: u32,
    /// Inputs, options, sizes and modification times (`load::job::chunking_and_fingerprint`).
    pub fingerprint: &'a str,
    /// The part of the fingerprint that decides the chunks (`load::job::chunking_and_fingerprint`).
    pub chunking: &'a str,
    /// Every input can be read again (no stdin or pipe), so inputs whose
    /// sizes or times changed can be checked before loading ([`Opened::Changed`]).
    pub rereadable: bool,
    pub restart: bool,
    /// The command line that began the job (`LoadRequest::command`).
    pub command: Option<&'a str>,
    /// The lines `--skip-lines` skips above each file's first record: where
    /// a later load, with other flags, finds the job's first chunks (see
    /// [`FinishedChunk::skipped_lines`]).
    pub skipped_lines: u64,
    /// `--limit`'s records: `sluice status` says the job read no more.
    pub record_limit: Option<u64>,
    /// The bytes the chunks of the whole input cover, when known before the
    /// load (plain files, read as they are): what `sluice status` measures
    /// the done chunks against.
    pub input_bytes: Option<u64>,
    /// The files' sizes as the job begins, a JSON array in the order of the
    /// inputs (see [`input_sizes_begun_with`]); kept while the job is resumed.
    pub input_sizes: &'a str,
    /// Steps before the copy (such as TRUNCATE), run once per job.
    pub first_steps: &'a [String],
    /// The first steps empty the table (`--truncate`): what other
    /// unfinished jobs dropped from it and never built again becomes this
    /// job's to build (see [`adopt_steps_dropped_elsewhere`]).
    pub empties_table: bool,
    /// Chooses the indexes and constraints to drop now and build after the
    /// copy; called only by the process that runs the job's first steps,
    /// under the job's lock, after them (so it sees the truncated table and
    /// no other process is dropping what it reads in the catalog).
    pub plan_deferred: &'a dyn Fn() -> Result<Vec<DeferredStep>, Error>,
}

/// An index or constraint dropped for the load, and how to build it again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeferredStep {
    /// As the user knows it: `index "t_a_idx"`, `primary key "t_pkey"`.
    pub name: String,
    pub drop_sql: String,
    pub create_sql: String,
    /// For keys and constraints that refuse rows: a query for the `xmin` of
    /// the rows that would violate it.
    pub violations_sql: Option<String>,
}

/// A step of a job as the ledger has it.
#[derive(Clone, Debug)]
pub struct StepRow {
    pub step: u32,
    pub deferred: DeferredStep,
    pub rebuilt: bool,
}

/// Opens a job: a new or restarted job runs its first steps in the
/// transaction that records it, so they happen exactly once.
pub fn open(session: &PgSession, spec: &JobSpec<'_>) -> Result<Opened, Error> {
    session.transaction(|| open_in_transaction(session, spec))
}

fn open_in_transaction(session: &PgSession, spec: &JobSpec<'_>) -> Result<Opened, Error> {
    let JobSpec {
        job,
        table,
        table_oid,
        fingerprint,
        chunking,
        rereadable,
        restart,
        command,
        skipped_lines,
        record_limit,
        input_bytes,
        input_sizes,
        first_steps,
        empties_table,
        plan_deferred,
    } = *spec;
    let oid = table_oid.to_string();
    let input_bytes = input_bytes.map(|n| n.to_string());
    let skipped_lines = skipped_lines.to_string();
    let record_limit = record_limit.map(|n| n.to_string());
    // Create-if-missing, then lock: concurrent processes starting the same
    // job queue up here, and only the first runs the job's first steps.
    session.query(
        "INSERT INTO sluice.jobs (job, target_table, fingerprint, chunking, table_oid, command, input_bytes, \
         input_sizes, skipped_lines, record_limit) \
         VALUES ($1, $2, $3, $4, $5::bigint, $6, $7::bigint, $8, $9::bigint, $10::bigint) \
         ON CONFLICT (job) DO NOTHING RETURNING 1",
        &[
            Some(job),
            Some(table),
            Some(fingerprint),
            Some(chunking),
            Some(&oid),
            command,
            input_bytes.as_deref(),
            Some(input_sizes),
            Some(&skipped_lines),
            record_limit.as_deref(),
        ],
    )?;
    let found = session.query(
        "SELECT fingerprint, target_table, coalesce(date_trunc('second', finished_at)::text, ''), steps_done, \
         coalesce(chunking, ''), coalesce(table_oid::text, ''), coalesce(command, ''), \
         coalesce(emptied_at > finished_at, false) \
         FROM sluice.jobs WHERE job = $1 FOR UPDATE",
        &[Some(job)],
    )?;
    let row = found.first().ok_or_else(|| Error::Server(format!("job {job} vanished from sluice.jobs")))?;
    // This run may stop for another reason, or not at all.
    session
        .query("UPDATE sluice.jobs SET stopped_by = NULL WHERE job = $1 AND stopped_by IS NOT NULL", &[Some(job)])?;
    let [old_fingerprint, old_table, finished_at, steps_done, old_chunking, old_oid, old_command, emptied] =
        [0, 1, 2, 3, 4, 5, 6, 7].map(|i| row[i].clone().unwrap_or_default());
    let emptied = !restart && emptied == "t" && old_table == table;
    let started_over = emptied
        || (!restart
            && empties_table
            && !finished_at.is_empty()
            && old_table == table
            && (old_fingerprint != fingerprint || (!old_oid.is_empty() && old_oid != oid)));
    let before = match started_over {
        true => Some(done_chunks(session, job)?.values().map(|d| d.rows).sum::<u64>()),
        false => None,
    };
    let restart = restart || started_over;
    if !restart && old_table == table && !old_oid.is_empty() && old_oid != oid {
        return Err(Error::Usage(format!(
            "job {job} loaded into an earlier table named {table}, dropped since: the table of that name now holds \
             none of the rows the job committed. Run with --restart to load every record into it, or name a new \
             job with --job"
        )));
    }
    let same = old_table == table && old_fingerprint == fingerprint;
    // Only sizes or times changed, and every committed chunk can be checked
    // by its bytes: the same data copied or touched again resumes.
    let changed = !restart
        && rereadable
        && !same
        && old_table == table
        && old_chunking == chunking
        && done_chunks(session, job)?.values().all(|d| d.content_hash.is_some());
    if restart {
        session.query("DELETE FROM sluice.chunks WHERE job = $1 RETURNING 1", &[Some(job)])?;
        session.query("DELETE FROM sluice.rejects WHERE job = $1 RETURNING 1", &[Some(job)])?;
        session.query("DELETE FROM sluice.xacts WHERE job = $1 RETURNING 1", &[Some(job)])?;
        // A step still pending for a table dropped since (another OID under
        // the same name) has nothing left to build: run on the table of
        // that name now, it would add an index its owner did not define (or,
        // an `--unlogged` step after a server restart, empty it).
        let replaced = !old_oid.is_empty() && old_oid != oid && old_table == table;
        let states = if replaced { "" } else { " AND state = 'rebuilt'" };
        session.query(&format!("DELETE FROM sluice.steps WHERE job = $1{states} RETURNING 1"), &[Some(job)])?;
        session.query(
            "UPDATE sluice.jobs SET target_table = $2, fingerprint = $3, chunking = $4, finished_at = NULL, \
             steps_done = false, created_at = now(), table_oid = $5::bigint, command = $6, emptied_at = NULL, \
             input_sizes = $7 WHERE job = $1 RETURNING 1",
            &[Some(job), Some(table), Some(fingerprint), Some(chunking), Some(&oid), command, Some(input_sizes)],
        )?;
    } else if !same && !changed {
        return Err(Error::Usage(format!(
            "job {job} was started with other input or options (the table, format options, chunk size or \
             sluice's chunking rule differ, or a file changed size or modification time and an older sluice \
             committed its chunks without a content hash); run with --restart to start it over, or name a new \
             job with --job{}",
            match old_command.as_str() {
                "" => String::new(),
                began => format!(". It began as: {began}"),
            }
        )));
    } else if old_oid.is_empty() {
        // Begun by a sluice that did not record the table: from now on.
        session.query(
            "UPDATE sluice.jobs SET table_oid = $2::bigint WHERE job = $1 RETURNING 1",
            &[Some(job), Some(&oid)],
        )?;
    }
    // A job begun by a sluice that did not record it, or whose files were
    // copied or touched (their size may differ now): from now on.
    session.query(
        "UPDATE sluice.jobs SET input_bytes = $2::bigint WHERE job = $1 AND input_bytes IS DISTINCT FROM $2::bigint \
         RETURNING 1",
        &[Some(job), input_bytes.as_deref()],
    )?;
    if restart || steps_done != "t" {
        // Planned first: the plan may refuse the load (a --truncate that
        // foreign keys would make fail) before any step is taken.
        let deferred = plan_deferred()?;
        for step in first_steps {
            session.execute(step).map_err(|e| match e {
                Error::Server(message) => Error::Server(format!("{step}: {message}")),
                other => other,
            })?;
        }
        if empties_table {
            adopt_steps_dropped_elsewhere(session, job, table, &oid)?;
            forget_what_others_committed(session, job, table, &oid)?;
            mark_others_emptied(session, job, table, &oid)?;
        }
        record_deferred(session, job, table, &deferred)?;
        session.query("UPDATE sluice.jobs SET steps_done = true WHERE job = $1 RETURNING 1", &[Some(job)])?;
    }
    let done = done_chunks(session, job)?;
    if let Some(rows) = before {
        return Ok(Opened::StartedOver { rows, finished_at, emptied });
    }
    if changed {
        return Ok(Opened::Changed(done));
    }
    if !restart && !finished_at.is_empty() {
        let rows = done.values().map(|d| d.rows).sum();
        return Ok(Opened::Finished { rows, finished_at });
    }
    Ok(if done.is_empty() { Opened::Fresh } else { Opened::Resumed(done) })
}

/// The unfinished jobs into table `$2` (the one of OID `$3`) other than
/// job `$1`.
const OTHER_UNFINISHED_JOBS: &str = "SELECT job FROM sluice.jobs WHERE target_table = $2 \
     AND coalesce(table_oid, $3::bigint) = $3::bigint AND finished_at IS NULL AND job <> $1";

/// The steps of [`OTHER_UNFINISHED_JOBS`] still dropped: the objects are
/// not there to check the rows loaded meanwhile, and only their job builds
/// them again.
fn dropped_elsewhere_sql() -> String {
    format!(
        "FROM sluice.steps s JOIN sluice.jobs j ON j.job = s.job WHERE s.state = 'dropped' \
         AND s.target_table = $2 AND j.job IN ({OTHER_UNFINISHED_JOBS})"
    )
}

/// Indexes, constraints (or an unlogged table) that another unfinished job
/// dropped for its load and has not built again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DroppedElsewhere {
    pub job: String,
    /// As the user knows them: `primary key "t_pkey"`, in the order dropped.
    pub names: Vec<String>,
    /// The command that began that job, when recorded.
    pub command: Option<String>,
}

/// What other unfinished jobs into `table` dropped and have not built again.
pub fn dropped_elsewhere(
    session: &PgSession,
    job: &str,
    table: &str,
    oid: u32,
) -> Result<Vec<DroppedElsewhere>, Error> {
    let rows = session.query(
        &format!(
            "SELECT j.job, string_agg(s.name, E'\\n' ORDER BY s.step), min(j.command) {} \
             GROUP BY j.job ORDER BY min(j.created_at), j.job",
            dropped_elsewhere_sql()
        ),
        &[Some(job), Some(table), Some(&oid.to_string())],
    )?;
    Ok(rows
        .into_iter()
        .map(|r| DroppedElsewhere {
            job: r[0].clone().unwrap_or_default(),
            names: r[1].as_deref().unwrap_or_default().lines().map(str::to_string).collect(),
            command: r[2].clone(),
        })
        .collect())
}

/// The other jobs that committed rows into the job's table while its step
/// `step` was dropped, with how many (the first 5, in the order they
/// began), for a build those rows may have made fail: they went in
/// unchecked by it.
pub fn loaded_while_dropped(session: &PgSession, job: &str, step: u32) -> Result<Vec<(String, u64)>, Error> {
    let rows = session.query(
        "SELECT c.job, sum(c.rows_loaded)::text FROM sluice.jobs mine \
         JOIN sluice.steps s ON s.job = mine.job AND s.step = $2::integer \
         JOIN sluice.jobs j ON j.target_table = mine.target_table AND j.job <> mine.job \
           AND coalesce(j.table_oid, mine.table_oid, 0) = coalesce(mine.table_oid, 0) \
         JOIN sluice.chunks c ON c.job = j.job AND c.state = 'done' AND c.committed_at >= s.recorded_at \
         WHERE mine.job = $1 GROUP BY c.job ORDER BY min(c.committed_at), c.job LIMIT 5",
        &[Some(job), Some(&step.to_string())],
    )?;
    Ok(jobs_and_rows(rows))
}

/// `(job, rows)` pairs from a query's two columns.
fn jobs_and_rows(rows: Vec<Vec<Option<String>>>) -> Vec<(String, u64)> {
    let rows = rows.into_iter();
    rows.map(|r| (r[0].clone().unwrap_or_default(), r[1].as_deref().and_then(|n| n.parse().ok()).unwrap_or(0)))
        .collect()
}

/// After `--truncate` emptied the table, in the job's opening transaction:
/// what other unfinished jobs dropped from it and never built again becomes
/// this job's, to build after its load like its own. Their rows are gone,
/// so nobody else would: a crashed job's primary key stayed dropped after a
/// load with `--truncate` that said it loaded every row. Numbered after the
/// job's own steps so far, in the order they were dropped, and recorded
/// now: an unlogged table taken over is emptied by a server restart from
/// now on, not before (see `load::defer::recover_unlogged`).
fn adopt_steps_dropped_elsewhere(session: &PgSession, job: &str, table: &str, oid: &str) -> Result<(), Error> {
    session.query(
        &format!(
            "WITH theirs AS (DELETE FROM sluice.steps t USING (SELECT s.job, s.step {}) d \
               WHERE t.job = d.job AND t.step = d.step RETURNING t.*), \
             mine AS (SELECT coalesce(max(step), 0) AS last FROM sluice.steps WHERE job = $1) \
             INSERT INTO sluice.steps (job, step, target_table, name, drop_sql, create_sql, violations_sql, state) \
             SELECT $1, mine.last + row_number() OVER (ORDER BY t.recorded_at, t.job, t.step), $2, t.name, \
               t.drop_sql, t.create_sql, t.violations_sql, 'dropped' FROM theirs t, mine RETURNING 1",
            dropped_elsewhere_sql()
        ),
        &[Some(job), Some(table), Some(oid)],
    )?;
    Ok(())
}

/// The other unfinished jobs into `table` with rows committed, and how many.
pub fn others_with_rows(session: &PgSession, job: &str, table: &str, oid: u32) -> Result<Vec<(String, u64)>, Error> {
    let rows = session.query(
        &format!(
            "SELECT j.job, sum(c.rows_loaded)::text FROM sluice.jobs j JOIN sluice.chunks c ON c.job = j.job \
             WHERE c.state = 'done' AND j.job IN ({OTHER_UNFINISHED_JOBS}) GROUP BY j.job \
             ORDER BY min(j.created_at), j.job"
        ),
        &[Some(job), Some(table), Some(&oid.to_string())],
    )?;
    Ok(jobs_and_rows(rows))
}

/// After `--truncate` emptied the table, in the job's opening transaction:
/// the other unfinished jobs into it no longer have the rows their ledger
/// says they committed. Their chunks, rejects and markers are forgotten, so
/// that each starts over when run again: resumed, one loaded only the
/// chunks after those, the rest of its input missing from the table
/// without a word (or, into a table the truncating load left empty, it was
/// refused, asking for --restart). Its first steps stay done: run again, it
/// does not empty the table a second time.
fn forget_what_others_committed(session: &PgSession, job: &str, table: &str, oid: &str) -> Result<(), Error> {
    session.query(
        &format!(
            "WITH others AS ({OTHER_UNFINISHED_JOBS}), \
             chunks AS (DELETE FROM sluice.chunks WHERE job IN (SELECT job FROM others) RETURNING 1), \
             rejects AS (DELETE FROM sluice.rejects WHERE job IN (SELECT job FROM others) RETURNING 1) \
             DELETE FROM sluice.xacts WHERE job IN (SELECT job FROM others) RETURNING 1"
        ),
        &[Some(job), Some(table), Some(oid)],
    )?;
    Ok(())
}

/// Records that the other jobs into the table lost the rows they committed
/// so far: the files they loaded are no longer loaded (see
/// [`chunks_loaded_by_finished_jobs`]).
fn mark_others_emptied(session: &PgSession, job: &str, table: &str, oid: &str) -> Result<(), Error> {
    session.query(
        "UPDATE sluice.jobs SET emptied_at = now() WHERE target_table = $2 \
         AND coalesce(table_oid, $3::bigint) = $3::bigint AND job <> $1 RETURNING 1",
        &[Some(job), Some(table), Some(oid)],
    )?;
    Ok(())
}

/// Drops each deferred object and records how to build it again, in the
/// job's opening transaction.
fn record_deferred(session: &PgSession, job: &str, table: &str, deferred: &[DeferredStep]) -> Result<(), Error> {
    let next = session.query("SELECT coalesce(max(step), 0) FROM sluice.steps WHERE job = $1", &[Some(job)])?;
    let first: u32 = next.first().and_then(|r| r[0].as_deref()).and_then(|v| v.parse().ok()).unwrap_or(0);
    for (i, step) in deferred.iter().enumerate() {
        session.execute(&step.drop_sql)?;
        let number = (first + 1 + i as u32).to_string();
        session.query(
            "INSERT INTO sluice.steps (job, step, target_table, name, drop_sql, create_sql, violations_sql, state) \
             VALUES ($1, $2::integer, $3, $4, $5, $6, $7, 'dropped') RETURNING 1",
            &[
                Some(job),
                Some(&number),
                Some(table),
                Some(&step.name),
                Some(&step.drop_sql),
                Some(&step.create_sql),
                step.violations_sql.as_deref(),
            ],
        )?;
    }
    Ok(())
}

/// The job's deferred objects, in the order they were dropped.
pub fn steps(session: &PgSession, job: &str) -> Result<Vec<StepRow>, Error> {
    let rows = session.query(
        "SELECT step, name, drop_sql, create_sql, violations_sql, state FROM sluice.steps WHERE job = $1 ORDER BY step",
        &[Some(job)],
    )?;
    let text = |r: &[Option<String>], i: usize| r[i].clone().unwrap_or_default();
    Ok(rows
        .iter()
        .map(|r| StepRow {
            step: text(r, 0).parse().unwrap_or(0),
            deferred: DeferredStep {
                name: text(r, 1),
                drop_sql: text(r, 2),
                create_sql: text(r, 3),
                violations_sql: r[4].clone(),
            },
            rebuilt: text(r, 5) == "rebuilt",
        })
        .collect())
}

/// Marks a step rebuilt (in the transaction that built it).
pub fn mark_rebuilt(session: &PgSession, job: &str, step: u32) -> Result<(), Error> {
    session.query(
        "UPDATE sluice.steps SET state = 'rebuilt', rebuilt_at = now() WHERE job = $1 AND step = $2::integer \
         RETURNING 1",
        &[Some(job), Some(&step.to_string())],
    )?;
    Ok(())
}

/// The markers a deferred load writes in each COPY's subtransaction, one
/// per chunk the COPY loads: they share the `xmin` of the rows that COPY
/// writes (see `load::defer`).
pub fn xact_marker_sql(job: &str, seqs: &[u64]) -> String {
    let job = quote_literal(job);
    let values: Vec<String> = seqs.iter().map(|seq| format!("({job}, {seq})")).collect();
    format!("INSERT INTO sluice.xacts (job, seq) VALUES {}", values.join(", "))
}

pub fn done_chunks(session: &PgSession, job: &str) -> Result<HashMap<u64, Done>, Error> {
    let rows = session.query(
        "SELECT seq, rows_loaded, rows_rejected, byte_offset, byte_len, content_hash, rows_suppressed, \
         rows_skipped, rows_replaced FROM sluice.chunks WHERE job = $1 AND state = 'done'",
        &[Some(job)],
    )?;
    let num = |v: &Option<String>| v.as_deref().and_then(|s| s.parse().ok()).unwrap_or(0);
    let done = |r: &Vec<Option<String>>| Done {
        rows: num(&r[1]),
        rejected: num(&r[2]),
        byte_offset: num(&r[3]),
        byte_len: num(&r[4]),
        content_hash: r[5].as_deref().and_then(|s| s.parse::<i64>().ok()).map(|h| h as u64),
        suppressed: num(&r[6]),
        skipped: num(&r[7]),
        replaced: num(&r[8]),
    };
    Ok(rows.iter().map(|r| (num(&r[0]), done(r))).collect())
}

/// An unfinished job into a table, with the first chunk it committed rows
/// from: what tells whether another job's input holds the same data.
#[derive(Clone, Debug)]
pub struct UnfinishedJob {
    pub job: String,
    /// Rows its chunks committed.
    pub rows: u64,
    pub file: String,
    pub byte_offset: u64,
    pub byte_len: u64,
    pub content_hash: u64,
    /// The command that began it, when a sluice that records it did.
    pub command: Option<String>,
}

/// The other jobs into `table` (by name and, where recorded, OID) that are
/// unfinished and committed rows, when `job` is not in the ledger yet.
pub fn unfinished_jobs_into(
    session: &PgSession,
    table: &str,
    table_oid: u32,
    job: &str,
) -> Result<Vec<UnfinishedJob>, Error> {
    let rows = session.query(
        "SELECT j.job, (SELECT sum(rows_loaded) FROM sluice.chunks WHERE job = j.job AND state = 'done'), \
         c.file, c.byte_offset, c.byte_len, c.content_hash, j.command FROM sluice.jobs j CROSS JOIN LATERAL \
         (SELECT file, byte_offset, byte_len, content_hash FROM sluice.chunks WHERE job = j.job AND state = 'done' \
         AND rows_loaded > 0 AND content_hash IS NOT NULL ORDER BY byte_offset, seq LIMIT 1) c \
         WHERE j.target_table = $1 AND coalesce(j.table_oid, $3::bigint) = $3::bigint AND j.finished_at IS NULL \
         AND j.job <> $2 AND NOT EXISTS (SELECT FROM sluice.jobs WHERE job = $2) ORDER BY j.created_at",
        &[Some(table), Some(job), Some(&table_oid.to_string())],
    )?;
    let num = |v: &Option<String>| v.as_deref().and_then(|s| s.parse::<i64>().ok()).unwrap_or(0);
    Ok(rows
        .iter()
        .map(|r| UnfinishedJob {
            job: r[0].clone().unwrap_or_default(),
            rows: num(&r[1]) as u64,
            file: r[2].clone().unwrap_or_default(),
            byte_offset: num(&r[3]) as u64,
            byte_len: num(&r[4]) as u64,
            content_hash: num(&r[5]) as u64,
            command: r[6].clone(),
        })
        .collect())
}

/// A chunk a finished job committed, whose rows are still in its table as
/// far as sluice knows (no job emptied the table since).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FinishedChunk {
    pub job: String,
    pub file: String,
    pub byte_offset: u64,
    pub byte_len: u64,
    /// `None` where an older sluice committed the chunk: the file's
    /// chunks of that job are not returned.
    pub content_hash: Option<u64>,
    pub rows: u64,
    /// The records it held: rows loaded, rejected, suppressed and skipped.
    pub records: u64,
    /// 1-based line of its first byte.
    pub first_line: u64,
    /// The table's storage was replaced since its job finished (see
    /// [`FINISHED_CHUNK`]).
    pub rewritten_since: bool,
    /// The lines its job's `--skip-lines` skipped above each file's first
    /// record (0 for a job of an older sluice): a reading of a file begins
    /// at its first record when its first chunk begins by line 2 past them.
    pub skipped_lines: u64,
    pub finished_at: String,
}

/// When `job` is not in the ledger yet (or finished, and another job
/// emptied the table since, or finished on inputs of another size or time
/// than `fingerprint` says, when given: a file written on since, or
/// touched): the chunks finished jobs into `table` (by name and, where
/// recorded, OID) committed from the files named `files`, newest job
/// first, each job's by file and place. Chunks committed before
/// a `--truncate` of another job emptied the table are not, nor are files
/// of which a chunk has no content hash (an older sluice's), which cannot
/// be compared.
pub fn chunks_loaded_by_finished_jobs(
    session: &PgSession,
    table: (&str, u32),
    job: (&str, Option<&str>),
    files: &[&str],
) -> Result<Vec<FinishedChunk>, Error> {
    let sql = format!(
        "SELECT {FINISHED_CHUNK} AND $3::jsonb ? c.file ORDER BY j.finished_at DESC, c.job, c.file, c.byte_offset"
    );
    finished_chunks(session, &sql, table, job, Some(&json_keys(files)))
}

/// As [`chunks_loaded_by_finished_jobs`], but only the chunks that begin at
/// a file's first or second line (after a header), or as much further as
/// their job's `--skip-lines` skipped, of any file, and end by
/// byte `within` (the size of the largest file they are looked for in,
/// where known): what a file renamed since (a log rotated) would begin with
/// (see `load::loaded_before`). In no order: 20,000 files' took 60 ms
/// sorted and picked one a job and file, 25 ms not.
pub fn first_chunks_loaded_by_finished_jobs(
    session: &PgSession,
    table: (&str, u32),
    job: (&str, Option<&str>),
    within: Option<u64>,
) -> Result<Vec<FinishedChunk>, Error> {
    let sql = format!(
        "SELECT {FINISHED_CHUNK} AND c.first_line <= coalesce(j.skipped_lines, 0) + 2 \
         AND c.byte_offset + c.byte_len <= coalesce($3::bigint, c.byte_offset + c.byte_len)"
    );
    finished_chunks(session, &sql, table, job, within.map(|w| w.to_string()).as_deref())
}

/// As [`first_chunks_loaded_by_finished_jobs`], but those that begin at one
/// of `offsets`, of any file: the jobs that loaded a renamed file from
/// where the jobs of its old name ended.
pub fn continuations_loaded_by_finished_jobs(
    session: &PgSession,
    table: (&str, u32),
    job: (&str, Option<&str>),
    offsets: &[u64],
) -> Result<Vec<FinishedChunk>, Error> {
    let sql = format!(
        "SELECT * FROM (SELECT DISTINCT ON (c.job, c.file) {FINISHED_CHUNK} \
         ORDER BY c.job, c.file, c.byte_offset) first WHERE $3::jsonb ? byte_offset::text"
    );
    let offsets: Vec<String> = offsets.iter().map(u64::to_string).collect();
    let keys = json_keys(&offsets.iter().map(String::as_str).collect::<Vec<_>>());
    finished_chunks(session, &sql, table, job, Some(&keys))
}

/// A JSON object whose keys are `keys` (names, or offsets): `?` finds a key
/// by a binary search. `file IN (SELECT jsonb_array_elements_text(...))`
/// was planned as a nested loop: 17 s for 20,000 files.
fn json_keys(keys: &[&str]) -> String {
    let keys: serde_json::Map<String, serde_json::Value> =
        keys.iter().map(|k| (k.to_string(), serde_json::Value::Bool(true))).collect();
    serde_json::Value::Object(keys).to_string()
}

/// The columns of a [`FinishedChunk`], and the conditions the queries
/// share (`$1`..`$5`: the table, its OID, what each query picks by, the
/// job and its fingerprint).
///
/// Whether the table was rewritten since the job finished: its file node
/// then (`sluice.jobs.table_filenode`) is not its file node now. TRUNCATE
/// gives a table a new one, and so do VACUUM FULL, CLUSTER and a column's
/// type changed, which keep the rows: a sign, not a proof, that the rows
/// a job loaded went with a TRUNCATE outside sluice, which the ledger
/// cannot see (a `--truncate` of sluice's own marks the jobs it emptied).
/// The table's file node now is read once, in a subquery, not for each of
/// the chunks (20,000 files' at a time).
const FINISHED_CHUNK: &str = "c.job, c.file, c.byte_offset, c.byte_len, c.content_hash, c.rows_loaded, \
     date_trunc('second', j.finished_at)::text AS finished_at, \
     c.rows_loaded + c.rows_rejected + c.rows_suppressed + c.rows_skipped, c.first_line, \
     coalesce(j.skipped_lines, 0), \
     coalesce(j.table_filenode <> (SELECT pg_catalog.pg_relation_filenode($2::bigint::oid::regclass)), false) \
     FROM sluice.jobs j JOIN sluice.chunks c ON c.job = j.job \
     WHERE j.target_table = $1 AND coalesce(j.table_oid, $2::bigint) = $2::bigint \
     AND j.finished_at IS NOT NULL AND c.state = 'done' \
     AND NOT EXISTS (SELECT FROM sluice.jobs WHERE job = $4 AND NOT coalesce(emptied_at > finished_at, false) \
       AND (finished_at IS NULL OR coalesce(fingerprint = $5, true))) \
     AND (j.emptied_at IS NULL OR c.committed_at > j.emptied_at)";

/// The chunks `sql` picks, with `third` as `$3` (see [`FINISHED_CHUNK`]),
/// but a file's of a job of which a chunk has no content hash.
fn finished_chunks(
    session: &PgSession,
    sql: &str,
    (table, table_oid): (&str, u32),
    (job, fingerprint): (&str, Option<&str>),
    third: Option<&str>,
) -> Result<Vec<FinishedChunk>, Error> {
    let rows = session.query(sql, &[Some(table), Some(&table_oid.to_string()), third, Some(job), fingerprint])?;
    let num = |v: &Option<String>| v.as_deref().and_then(|s| s.parse::<i64>().ok());
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let chunks: Vec<FinishedChunk> = rows
        .iter()
        .map(|r| FinishedChunk {
            job: text(&r[0]),
            file: text(&r[1]),
            byte_offset: num(&r[2]).unwrap_or(0) as u64,
            byte_len: num(&r[3]).unwrap_or(0) as u64,
            content_hash: num(&r[4]).map(|h| h as u64),
            rows: num(&r[5]).unwrap_or(0) as u64,
            finished_at: text(&r[6]),
            records: num(&r[7]).unwrap_or(0) as u64,
            first_line: num(&r[8]).unwrap_or(1) as u64,
            skipped_lines: num(&r[9]).unwrap_or(0) as u64,
            rewritten_since: r[10].as_deref() == Some("t"),
        })
        .collect();
    let unhashed: HashSet<(&str, &str)> =
        chunks.iter().filter(|c| c.content_hash.is_none()).map(|c| (c.job.as_str(), c.file.as_str())).collect();
    let comparable = |c: &FinishedChunk| !unhashed.contains(&(c.job.as_str(), c.file.as_str()));
    Ok(chunks.iter().filter(|c| comparable(c)).cloned().collect())
}

/// Whether the table of finished `job` was rewritten since it finished
/// (see [`FINISHED_CHUNK`]); false for a job an older sluice finished.
pub fn rewritten_since_finished(session: &PgSession, job: &str) -> Result<bool, Error> {
    let rows = session.query(
        "SELECT coalesce(table_filenode <> pg_catalog.pg_relation_filenode(table_oid::oid::regclass), false) \
         FROM sluice.jobs WHERE job = $1",
        &[Some(job)],
    )?;
    Ok(rows.first().and_then(|r| r[0].as_deref()) == Some("t"))
}

/// For an unfinished job: the sizes its files had when it began, in the
/// order of its inputs (as `load::job::input_sizes` wrote them); `None` for
/// a finished job, one not in the ledger, or one an older sluice began.
pub fn input_sizes_begun_with(session: &PgSession, job: &str) -> Result<Option<Vec<Option<u64>>>, Error> {
    let rows =
        session.query("SELECT input_sizes FROM sluice.jobs WHERE job = $1 AND finished_at IS NULL", &[Some(job)])?;
    let sizes = rows.first().and_then(|r| r[0].as_deref()).and_then(|json| serde_json::from_str(json).ok());
    Ok(sizes)
}

/// The line samples (see [`crate::samples`]) of the chunks `loaded`, as
/// (job, file), committed, each with the job of its chunk; `None` when one
/// has none (an older sluice's).
pub fn line_samples(session: &PgSession, loaded: &[(String, String)]) -> Result<Option<HashMap<u64, String>>, Error> {
    let keys: Vec<serde_json::Value> =
        loaded.iter().map(|(job, file)| serde_json::json!({"job": job, "file": file})).collect();
    let rows = session.query(
        "SELECT c.line_samples, c.job FROM sluice.chunks c JOIN jsonb_to_recordset($1::jsonb) k (job text, file text) \
         ON c.job = k.job AND c.file = k.file WHERE c.state = 'done'",
        &[Some(&serde_json::Value::Array(keys).to_string())],
    )?;
    let mut samples = HashMap::new();
    for row in rows {
        let job = row[1].clone().unwrap_or_default();
        match row[0].as_deref().and_then(crate::samples::from_text) {
            Some(some) => samples.extend(some.into_iter().map(|hash| (hash, job.clone()))),
            None => return Ok(None),
        }
    }
    Ok(Some(samples))
}

/// Whether job `job` finished on inputs of another size or time than
/// `fingerprint` says.
pub fn finished_on_other_inputs(session: &PgSession, job: &str, fingerprint: &str) -> Result<bool, Error> {
    let rows = session.query(
        "SELECT EXISTS (SELECT FROM sluice.jobs WHERE job = $1 AND finished_at IS NOT NULL AND fingerprint <> $2)",
        &[Some(job), Some(fingerprint)],
    )?;
    Ok(rows.first().and_then(|r| r[0].as_deref()) == Some("t"))
}

/// Whether the ledger holds job `job`.
pub fn exists(session: &PgSession, job: &str) -> Result<bool, Error> {
    let rows = session.query("SELECT EXISTS (SELECT FROM sluice.jobs WHERE job = $1)", &[Some(job)])?;
    Ok(rows.first().and_then(|r| r[0].as_deref()) == Some("t"))
}

/// The unfinished jobs into `table` (by name and, where recorded, OID)
/// that committed a chunk, with when each began, in nanoseconds since the
/// Unix epoch, oldest first.
pub fn unfinished_jobs_begun(session: &PgSession, table: &str, table_oid: u32) -> Result<Vec<(String, u128)>, Error> {
    let rows = session.query(
        "SELECT j.job, (extract(epoch FROM j.created_at) * 1000000)::bigint FROM sluice.jobs j \
         WHERE j.target_table = $1 AND coalesce(j.table_oid, $2::bigint) = $2::bigint AND j.finished_at IS NULL \
         AND EXISTS (SELECT FROM sluice.chunks c WHERE c.job = j.job AND c.state = 'done') ORDER BY j.created_at",
        &[Some(table), Some(&table_oid.to_string())],
    )?;
    let micros = |v: &Option<String>| v.as_deref().and_then(|s| s.parse::<u128>().ok()).unwrap_or(0);
    Ok(rows.iter().map(|r| (r[0].clone().unwrap_or_default(), micros(&r[1]) * 1000)).collect())
}

/// The files whose chunks the job committed, in the order it read them.
pub fn files_read(session: &PgSession, job: &str) -> Result<Vec<String>, Error> {
    let rows = session.query(
        "SELECT file FROM sluice.chunks WHERE job = $1 AND state = 'done' GROUP BY file ORDER BY min(seq)",
        &[Some(job)],
    )?;
    Ok(rows.into_iter().filter_map(|r| r[0].clone()).collect())
}

/// The rows a chunk loaded, those a trigger suppressed, the records it
/// skipped and the rows it replaced, when this process committed its ledger
/// row (not another process sharing the job, which counts them itself).
pub fn committed_rows(session: &PgSession, job: &str, seq: u64) -> Result<Option<Committed>, Error> {
    let rows = session.query(
        "SELECT rows_loaded, rows_suppressed, rows_skipped, rows_replaced FROM sluice.chunks WHERE job = $1 \
         AND seq = $2::bigint AND state = 'done' AND host = $3 AND pid = $4::integer",
        &[Some(job), Some(&seq.to_string()), Some(host_name()), Some(&std::process::id().to_string())],
    )?;
    let num = |r: &Vec<Option<String>>, i: usize| r[i].as_deref().and_then(|v| v.parse().ok());
    Ok(rows.first().and_then(|r| {
        Some(Committed { rows: num(r, 0)?, suppressed: num(r, 1)?, skipped: num(r, 2)?, replaced: num(r, 3)? })
    }))
}

/// A chunk's counts as its ledger row has them (see [`committed_rows`]).
pub struct Committed {
    pub rows: u64,
    pub suppressed: u64,
    pub skipped: u64,
    pub replaced: u64,
}

/// Puts `chunks` back to pending, with their stored rejects and markers
/// deleted, in the caller's transaction (which deletes their rows too).
pub fn reopen_chunks(session: &PgSession, job: &str, chunks: &[u64]) -> Result<(), Error> {
    let list = seq_array(chunks);
    for sql in [
        "DELETE FROM sluice.rejects r USING sluice.chunks c WHERE c.job = $1 AND c.seq = ANY($2::bigint[]) \
         AND r.job = c.job AND (r.seq = c.seq OR r.seq IS NULL AND r.file = c.file AND r.byte >= c.byte_offset \
         AND r.byte < c.byte_offset + c.byte_len) RETURNING 1",
        "DELETE FROM sluice.xacts WHERE job = $1 AND seq = ANY($2::bigint[]) RETURNING 1",
        "UPDATE sluice.chunks SET state = 'pending', rows_loaded = 0, rows_rejected = 0, rows_suppressed = 0, \
         rows_skipped = 0, rows_replaced = 0, committed_at = NULL WHERE job = $1 AND seq = ANY($2::bigint[]) \
         RETURNING 1",
    ] {
        session.query(sql, &[Some(job), Some(&list)])?;
    }
    Ok(())
}

/// Of `chunks`, puts back to pending those committed with every record
/// rejected (none loaded, suppressed or skipped), as [`reopen_chunks`]
/// does, and returns them. Why: a load that stops because its first
/// records were all rejected (a wrong option or column type) says that it
/// committed nothing; a chunk another worker had committed meanwhile, all
/// rejected for the same cause, kept its rejects as final, and the same
/// command run again once the cause was fixed resumed past it, its records
/// still rejected. Nothing of such a chunk is in the table, so loading it
/// again duplicates nothing.
pub fn reopen_chunks_that_loaded_nothing(session: &PgSession, job: &str, chunks: &[u64]) -> Result<Vec<u64>, Error> {
    session.transaction(|| {
        let rows = session.query(
            "SELECT seq FROM sluice.chunks WHERE job = $1 AND seq = ANY($2::bigint[]) AND state = 'done' \
             AND rows_loaded = 0 AND rows_suppressed = 0 AND rows_skipped = 0 ORDER BY seq FOR UPDATE",
            &[Some(job), Some(&seq_array(chunks))],
        )?;
        let reopened: Vec<u64> = rows.iter().filter_map(|r| r[0].as_deref()?.parse().ok()).collect();
        if !reopened.is_empty() {
            reopen_chunks(session, job, &reopened)?;
        }
        Ok(reopened)
    })
}

/// `{1,2,3}`: chunk numbers as a bigint[] parameter.
pub fn seq_array(chunks: &[u64]) -> String {
    format!("{{{}}}", chunks.iter().map(u64::to_string).collect::<Vec<_>>().join(","))
}

/// The chunks among `0..total` that the ledger does not hold as committed.
pub fn missing_chunks(session: &PgSession, job: &str, total: u64) -> Result<Vec<u64>, Error> {
    let rows = session.query(
        "SELECT s FROM generate_series(0, $2::bigint - 1) s WHERE NOT EXISTS \
         (SELECT 1 FROM sluice.chunks c WHERE c.job = $1 AND c.seq = s AND c.state = 'done') ORDER BY s",
        &[Some(job), Some(&total.to_string())],
    )?;
    Ok(rows.iter().filter_map(|r| r[0].as_deref()?.parse().ok()).collect())
}

/// Records that every chunk of the job is committed: its input's size
/// becomes the bytes its chunks hold, so that `sluice status` says every
/// chunk is loaded while the deferred indexes are built (the file sizes it
/// held count header lines, which no chunk holds, and never showed it).
pub fn record_every_chunk_loaded(session: &PgSession, job: &str) -> Result<(), Error> {
    session.query(
        "UPDATE sluice.jobs j SET input_bytes = c.bytes FROM (SELECT sum(byte_len) AS bytes FROM sluice.chunks \
         WHERE job = $1 AND state = 'done') c WHERE j.job = $1 AND j.input_bytes IS DISTINCT FROM c.bytes RETURNING 1",
        &[Some(job)],
    )?;
    Ok(())
}

/// Marks the job finished when all its `total` chunks are committed, with
/// a synchronous commit: WAL is flushed in order, so once this commit is
/// durable, so are the chunks' asynchronous commits it counted. The job
/// takes the `fingerprint` of the inputs it was checked against (they may
/// have been copied or touched since it began: [`Opened::Changed`]).
///
/// `goes_on_from`: the finished job, with the fingerprint of its inputs now,
/// whose files this job loaded from where it ended (see
/// `load::loaded_before`): it takes that fingerprint too, so that its
/// command, run again with nothing new, finds it finished without reading
/// them again.
///
/// `once_marked` runs in the same transaction, and only in the call that
/// marked the job first: of several processes sharing the job, the one that
/// does what is done once at its end (`--analyze`). A kill before the
/// commit leaves the job unfinished, so the run that finishes it does that
/// again. Its outcome, if it ran.
pub fn finish<T>(
    session: &PgSession,
    job: &str,
    total: u64,
    (fingerprint, goes_on_from): (&str, Option<(&str, &str)>),
    once_marked: impl FnOnce() -> Result<T, Error>,
) -> Result<Option<T>, Error> {
    let (marked, done_once) = session.transaction(|| {
        session.execute("SET LOCAL synchronous_commit = on")?;
        // The row locked first: another process marking it meanwhile is
        // waited for, and its mark then seen.
        let unmarked = "SELECT finished_at IS NULL FROM sluice.jobs WHERE job = $1 FOR UPDATE";
        let first = session.query(unmarked, &[Some(job)])?.first().is_some_and(|row| row[0].as_deref() == Some("t"));
        let marked = session.query(
            "UPDATE sluice.jobs SET finished_at = now(), fingerprint = $3, \
             table_filenode = pg_catalog.pg_relation_filenode(table_oid::oid::regclass) WHERE job = $1 AND (SELECT count(*) \
             FROM sluice.chunks WHERE job = $1 AND state = 'done') = $2::bigint RETURNING 1",
            &[Some(job), Some(&total.to_string()), Some(fingerprint)],
        )?;
        if let Some((earlier, its_fingerprint)) = goes_on_from.filter(|_| !marked.is_empty()) {
            take_fingerprint(session, earlier, its_fingerprint)?;
        }
        let done_once = match first && !marked.is_empty() {
            true => Some(once_marked()?),
            false => None,
        };
        Ok((marked, done_once))
    })?;
    match marked.is_empty() {
        false => Ok(done_once),
        true => Err(Error::Database(format!(
            "job {job}: some chunks are no longer committed (a server crash undid them); run the same command \
             again to load them"
        ))),
    }
}

/// A finished job takes `fingerprint`: its inputs, as they are now, hold
/// what it loaded and what jobs that went on from where it ended loaded.
pub fn take_fingerprint(session: &PgSession, job: &str, fingerprint: &str) -> Result<(), Error> {
    session.query(
        "UPDATE sluice.jobs SET fingerprint = $2 WHERE job = $1 AND finished_at IS NOT NULL RETURNING 1",
        &[Some(job), Some(fingerprint)],
    )?;
    Ok(())
}

/// What a chunk's ledger row records.
#[derive(Clone, Copy)]
pub struct ChunkRow<'a> {
    pub job: &'a str,
    pub seq: u64,
    pub file: &'a str,
    pub byte_offset: u64,
    pub byte_len: u64,
    pub first_line: u64,
    pub content_hash: Option<u64>,
    /// See [`crate::samples`].
    pub line_samples: &'a [u64],
    pub rows: u64,
    pub rejected: u64,
    pub suppressed: u64,
    pub skipped: u64,
    /// Of `rows`, those that replaced a row holding their key
    /// (`--on-conflict-do-update`).
    pub replaced: u64,
}

/// What a claim found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// Claimed by this transaction and not done: load it. `listed`: the
    /// ledger has its row already, `pending` (see the module docs).
    Mine { listed: bool },
    /// Already done (by an earlier run or another process): skip it.
    Done,
    /// Claimed by another process right now: try again later.
    Busy,
}

impl Claim {
    pub fn is_mine(&self) -> bool {
        matches!(self, Claim::Mine { .. })
    }
}

/// A claim's outcome for each row, and the claiming transaction's time,
/// which its rows record as `committed_at` (the server's clock, as `now()`
/// in that transaction would give it).
pub struct Claimed {
    pub claims: Vec<Claim>,
    pub at: String,
}

impl ChunkRow<'_> {
    /// The content hash as a bigint array element: the hash's bits, or
    /// NULL. `done` writes it again: a pending row left by an interrupted
    /// run of other data may hold another chunk's hash.
    fn hash_element(&self) -> String {
        self.content_hash.map_or("NULL".to_string(), |h| (h as i64).to_string())
    }
}

/// A bigint array literal from the rows, one element each.
fn bigint_array<'a>(rows: &[ChunkRow<'a>], element: impl Fn(&ChunkRow<'a>) -> String) -> String {
    let elements: Vec<String> = rows.iter().map(element).collect();
    format!("'{{{}}}'::bigint[]", elements.join(","))
}

/// A text array literal from the rows, one element each (of characters
/// that need no escape in it, quoted: an element may be empty).
fn text_array<'a>(rows: &[ChunkRow<'a>], element: impl Fn(&ChunkRow<'a>) -> String) -> String {
    let elements: Vec<String> = rows.iter().map(|r| format!("\"{}\"", element(r))).collect();
    format!("'{{{}}}'::text[]", elements.join(","))
}

/// The rows' `seq` range, which every statement on a batch's rows names:
/// an index range scan whatever the planner believes of the ledger's size
/// (a fresh ledger's statistics say "empty", and the planner then reads
/// every row of the job, for every batch).
fn seq_range(rows: &[ChunkRow<'_>]) -> String {
    let (first, last) = seq_bounds(rows);
    format!("BETWEEN {first} AND {last}")
}

/// The rows' smallest and largest `seq` (0 and 0 for none).
fn seq_bounds(rows: &[ChunkRow<'_>]) -> (u64, u64) {
    let seqs = rows.iter().map(|r| r.seq);
    (seqs.clone().min().unwrap_or(0), seqs.max().unwrap_or(0))
}

/// Marks the claimed rows that were listed `pending` done with their
/// counts, in the chunks' transaction, unless another process did first;
/// returns a row per row marked. Arrays rather than a VALUES list: the
/// server parses one literal per column instead of one per value.
pub fn done_sql(rows: &[ChunkRow<'_>]) -> String {
    format!(
        "UPDATE sluice.chunks c SET state = 'done', rows_loaded = v.rows, rows_rejected = v.rejected, \
         rows_suppressed = v.suppressed, rows_skipped = v.skipped, content_hash = v.hash, \
         line_samples = v.samples, rows_replaced = v.replaced, host = {}, pid = {}, committed_at = now() \
         FROM unnest({}, {}, {}, {}, {}, {}, {}, {}) v (seq, rows, rejected, suppressed, skipped, hash, samples, \
         replaced) \
         WHERE c.job = {} AND c.seq = v.seq AND c.seq {} AND c.state <> 'done' RETURNING c.seq",
        quote_literal(host_name()),
        std::process::id(),
        bigint_array(rows, |r| r.seq.to_string()),
        bigint_array(rows, |r| r.rows.to_string()),
        bigint_array(rows, |r| r.rejected.to_string()),
        bigint_array(rows, |r| r.suppressed.to_string()),
        bigint_array(rows, |r| r.skipped.to_string()),
        bigint_array(rows, ChunkRow::hash_element),
        text_array(rows, |r| samples::to_text(r.line_samples)),
        bigint_array(rows, |r| r.replaced.to_string()),
        quote_literal(rows.first().map_or("", |r| r.job)),
        seq_range(rows),
    )
}

/// Adds the rows of claimed chunks the ledger did not list, `done`.
pub const COPY_DONE: &str = "COPY sluice.chunks (job, seq, file, byte_offset, byte_len, first_line, content_hash, \
     state, rows_loaded, rows_rejected, rows_suppressed, rows_skipped, host, pid, committed_at, line_samples, \
     rows_replaced) FROM STDIN";

/// The rows as [`COPY_DONE`] takes them, committed `at`.
pub fn done_copy_text(rows: &[ChunkRow<'_>], at: &str) -> Vec<u8> {
    let (host, pid, at) = (copy_text_value(host_name()), std::process::id(), copy_text_value(at));
    let mut out = String::new();
    for r in rows {
        let hash = r.content_hash.map_or("\\N".to_string(), |h| (h as i64).to_string());
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{hash}\tdone\t{}\t{}\t{}\t{}\t{host}\t{pid}\t{at}\t{}\t{}\n",
            copy_text_value(r.job),
            r.seq,
            copy_text_value(r.file),
            r.byte_offset,
            r.byte_len,
            r.first_line,
            r.rows,
            r.rejected,
            r.suppressed,
            r.skipped,
            samples::to_text(r.line_samples),
            r.replaced,
        ));
    }
    out.into_bytes()
}

/// The advisory lock that claims a batch: the job's hash and the batch's
/// first chunk, as the two 32-bit keys (a collision with another job or
/// application only makes a claim wait or defer; the ledger rows decide).
pub fn lock_keys(job: &str, first_seq: u64) -> (i32, i32) {
    (fnv1a(&[job]) as i32, first_seq as i32)
}

/// Waits, for at most `patience`, until the claims of `job` that other
/// sessions hold now are released. Why: a run killed a moment ago leaves
/// sessions that hold their claims until they find their client gone, and
/// a batch found held is left for the end of the load, so the batches after
/// it commit first (where keys repeat, keeping their later lines: 8-11 rows
/// in a test that kills and resumes such a load 10 times on a busy
/// machine). A live process's claims are released as its batches commit;
/// one still held after `patience` is left for the end as before.
pub fn wait_for_claims_held_elsewhere(session: &PgSession, job: &str, patience: Duration) -> Result<(), Error> {
    let (job_key, _) = lock_keys(job, 0);
    let sql = format!(
        "SELECT pid::text, objid::text FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND granted \
         AND classid = {}::oid AND pid <> pg_backend_pid() \
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        job_key as u32
    );
    let held =
        || -> Result<HashSet<Vec<Option<String>>>, Error> { Ok(session.query(&sql, &[])?.into_iter().collect()) };
    let at_start = held()?;
    let until = Instant::now() + patience;
    while !at_start.is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
        if held()?.is_disjoint(&at_start) {
            break;
        }
    }
    Ok(())
}

/// Takes the batch's advisory lock for this transaction, or says it is
/// held (with `wait`, waits for it), with the transaction's time.
pub fn lock_sql(job: &str, first_seq: u64, wait: bool) -> String {
    let (job_key, seq_key) = lock_keys(job, first_seq);
    match wait {
        true => format!("SELECT true, now() FROM pg_advisory_xact_lock({job_key}, {seq_key})"),
        false => format!("SELECT pg_try_advisory_xact_lock({job_key}, {seq_key}), now()"),
    }
}

/// The advisory lock a running job's sessions hold, shared, for as long as
/// they are connected: whether a job runs now, on any host, is whether a
/// session holds it, which the server ends with the session. Why: the
/// ledger says only what a job committed; a job with nothing committed in
/// the last minute may be loading a slow chunk or have been killed, and a
/// load that empties the table, restarts the job or finds its keys dropped
/// must tell which. One 64-bit key (`objsubid` 1 in `pg_locks`), apart from
/// the two 32-bit keys of batch claims (`objsubid` 2); a collision with
/// another job only makes a stopped job look running.
pub fn presence_key(job: &str) -> i64 {
    fnv1a(&["running", job]) as i64
}

/// How many of `job`'s chunks another process (another pid, or another
/// host) committed since `since_unix_ms`: processes sharing the job now.
pub fn committed_by_others_since(session: &PgSession, job: &str, since_unix_ms: u128) -> Result<u64, Error> {
    let rows = session.query(
        "SELECT count(*) FROM sluice.chunks WHERE job = $1 AND state = 'done' \
         AND committed_at >= to_timestamp($2::float8 / 1000) AND (host <> $3 OR pid <> $4::int)",
        &[Some(job), Some(&since_unix_ms.to_string()), Some(host_name()), Some(&std::process::id().to_string())],
    )?;
    Ok(rows.first().and_then(|r| r.first()?.as_deref()?.parse().ok()).unwrap_or(0))
}

/// Marks this session as one of `job`'s while it lasts (see
/// [`presence_key`]). Taken again on the same session, it only counts up.
pub fn hold_presence(session: &PgSession, job: &str) -> Result<(), Error> {
    session.query(&format!("SELECT 1 FROM pg_advisory_lock_shared({})", presence_key(job)), &[])?;
    Ok(())
}

/// The jobs, of those named, that run now in other sessions than this one
/// (see [`presence_key`]).
pub fn running_now<'j>(session: &PgSession, jobs: impl IntoIterator<Item = &'j str>) -> Result<HashSet<String>, Error> {
    Ok(running_sessions(session, jobs)?.into_keys().collect())
}

/// [`running_now`], with the server processes (pids) of the sessions that
/// hold each job's presence lock, for a message to name. A finished job
/// runs nowhere, whatever the locks say: behind a connection pooler in
/// transaction mode, a session's lock stays on its server connection after
/// the load has ended (a reload with `--restart` was refused as running).
/// An unfinished job's lingering lock cannot be told from a running one's:
/// the pids let `pg_stat_activity` tell.
pub fn running_sessions<'j>(
    session: &PgSession,
    jobs: impl IntoIterator<Item = &'j str>,
) -> Result<HashMap<String, Vec<String>>, Error> {
    let jobs: Vec<&str> = jobs.into_iter().collect();
    if jobs.is_empty() {
        return Ok(HashMap::new());
    }
    let mut held = presences_held(session)?;
    let holding: HashMap<&str, Vec<String>> =
        jobs.into_iter().filter_map(|job| Some((job, held.remove(&presence_key(job))?))).collect();
    if holding.is_empty() {
        return Ok(HashMap::new());
    }
    let listed: Vec<String> = holding.keys().map(|job| quote_literal(job)).collect();
    let unfinished = session.query(
        &format!("SELECT job FROM sluice.jobs WHERE finished_at IS NULL AND job IN ({})", listed.join(", ")),
        &[],
    )?;
    let unfinished: HashSet<String> = unfinished.into_iter().filter_map(|r| r[0].clone()).collect();
    Ok(holding
        .into_iter()
        .filter(|(job, _)| unfinished.contains(*job))
        .map(|(job, pids)| (job.to_string(), pids))
        .collect())
}

/// Every presence lock other sessions hold in this database, with their
/// server pids (see [`presence_key`]).
fn presences_held(session: &PgSession) -> Result<HashMap<i64, Vec<String>>, Error> {
    let rows = session.query(
        "SELECT ((classid::bigint << 32) | objid::bigint)::text, pid::text FROM pg_locks \
         WHERE locktype = 'advisory' AND objsubid = 1 AND granted AND pid <> pg_backend_pid() \
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY pid",
        &[],
    )?;
    let mut held: HashMap<i64, Vec<String>> = HashMap::new();
    for row in rows {
        if let (Some(key), Some(pid)) = (row[0].as_deref().and_then(|k| k.parse().ok()), row[1].clone()) {
            held.entry(key).or_default().push(pid);
        }
    }
    Ok(held)
}

/// The rows (of one job) the ledger lists in the range of the given rows'
/// seqs, with their state; the caller picks its own. A batch's chunks are
/// usually consecutive, and then the range alone is the cheapest question:
/// naming the 256 seqs of a batch of small files, `seq IN (...)`, cost the
/// server 1.4 ms a batch to parse, plan and probe one by one, the range
/// 0.45 ms (a glob of 51,790 files: 0.29 s against 0.09 s). Only a batch
/// that leaves most of its range to others (a resumed job whose chunks
/// are done here and there) names its seqs, as one array.
pub fn listed_sql(rows: &[ChunkRow<'_>]) -> String {
    let (first, last) = seq_bounds(rows);
    let only_these = match last - first + 1 > 2 * rows.len() as u64 {
        true => format!(" AND seq = ANY({})", bigint_array(rows, |r| r.seq.to_string())),
        false => String::new(),
    };
    format!(
        "SELECT seq, state FROM sluice.chunks WHERE job = {} AND seq BETWEEN {first} AND {last}{only_these}",
        quote_literal(rows.first().map_or("", |r| r.job)),
    )
}

/// Claims a batch of one job: opens the chunks' transaction, takes the
/// batch's lock, and reads which chunks are done or listed. The
/// transaction stays open when any claim is `Mine`.
pub fn claim(session: &PgSession, rows: &[ChunkRow<'_>], wait: bool) -> Result<Claimed, Error> {
    let Some(first) = rows.first() else {
        return Ok(Claimed { claims: Vec::new(), at: String::new() });
    };
    session.execute("BEGIN")?;
    let lock = session.query(&lock_sql(first.job, first.seq, wait), &[])?;
    let (locked, at) = match lock.first() {
        Some(row) => (row[0].as_deref() == Some("t"), row[1].clone().unwrap_or_default()),
        None => (false, String::new()),
    };
    if !locked {
        session.execute("ROLLBACK")?;
        return Ok(Claimed { claims: vec![Claim::Busy; rows.len()], at });
    }
    let found = session.query(&listed_sql(rows), &[])?;
    let states: HashMap<u64, Option<String>> =
        found.into_iter().filter_map(|r| Some((r[0].as_deref()?.parse().ok()?, r[1].clone()))).collect();
    let claims: Vec<Claim> = rows
        .iter()
        .map(|r| match states.get(&r.seq) {
            None => Claim::Mine { listed: false },
            Some(Some(state)) if state == "done" => Claim::Done,
            Some(_) => Claim::Mine { listed: true },
        })
        .collect();
    if !claims.iter().any(Claim::is_mine) {
        session.execute("ROLLBACK")?;
    }
    Ok(Claimed { claims, at })
}

/// Records claimed chunks done in their transaction: updates the rows
/// listed `pending`, adds the others. False when another process recorded
/// one of them first (the caller rolls back: they are done elsewhere).
pub fn record_done(session: &mut PgSession, rows: &[(ChunkRow<'_>, bool)], at: &str) -> Result<bool, Error> {
    let pick = |want: bool| -> Vec<ChunkRow> { rows.iter().filter(|(_, l)| *l == want).map(|(r, _)| *r).collect() };
    let (listed, new) = (pick(true), pick(false));
    if !listed.is_empty() && session.query(&done_sql(&listed), &[])?.len() != listed.len() {
        return Ok(false);
    }
    Ok(new.is_empty() || session.copy_rows_unless_taken(COPY_DONE, &done_copy_text(&new, at))?)
}

/// Whether the database holds a ledger: `sluice status` and `sluice forget`
/// say there are no jobs instead of the server's `relation does not exist`.
pub fn is_there(session: &PgSession) -> Result<bool, Error> {
    let found = session.query("SELECT to_regclass('sluice.jobs') IS NOT NULL", &[])?;
    Ok(found.first().and_then(|r| r[0].as_deref()) == Some("t"))
}

/// What `sluice forget` deleted: the job's table, whether it had finished,
/// and the rows it had committed (which stay in the table).
#[derive(Debug, PartialEq, Eq)]
pub struct Forgotten {
    pub table: String,
    pub finished: bool,
    pub rows: u64,
}

/// Deletes `job` from the ledger (its chunks, rejects, steps and markers),
/// in one transaction. Why: a job stopped for good (the first records all
/// rejected, then loaded with other options under another name) stayed
/// `stopped` in `sluice status`, its command offered, forever. Refused for
/// a job that runs now, one whose dropped indexes or constraints are not
/// built again (their statements are in its steps), and, unless
/// `rows_stay`, an unfinished one that committed rows: forgotten, its
/// command would start over and load them a second time.
pub fn forget(session: &PgSession, job: &str, rows_stay: bool) -> Result<Forgotten, Error> {
    session.transaction(|| {
        let found = session.query(
            "SELECT target_table, finished_at IS NOT NULL, (SELECT coalesce(sum(rows_loaded), 0) \
               FROM sluice.chunks c WHERE c.job = j.job AND c.state = 'done'), \
             (SELECT coalesce(string_agg(name, '; ' ORDER BY step), '') FROM sluice.steps s \
               WHERE s.job = j.job AND s.state = 'dropped') \
             FROM sluice.jobs j WHERE job = $1 FOR UPDATE",
            &[Some(job)],
        )?;
        let row = found.first().ok_or_else(|| Error::Usage(format!("no job named {job} in the ledger")))?;
        let text = |i: usize| row[i].clone().unwrap_or_default();
        let forgotten = Forgotten { table: text(0), finished: text(1) == "t", rows: text(2).parse().unwrap_or(0) };
        if !running_now(session, [job])?.is_empty() {
            return Err(Error::Usage(format!("job {job} is running now; stop it (Ctrl-C) before forgetting it")));
        }
        if !text(3).is_empty() {
            return Err(Error::Usage(format!(
                "job {job} dropped {} of {} for its load and has not built them again; run its command (`sluice \
                 status --job {job}` shows it) to finish the job, which builds them, before forgetting it",
                text(3),
                forgotten.table
            )));
        }
        if !forgotten.finished && forgotten.rows > 0 && !rows_stay {
            return Err(Error::Usage(format!(
                "job {job} committed {} into {} and has not finished: forgotten, its command would start over and \
                 load them a second time. Resume it with its command, or pass --rows-stay to forget it all the same \
                 (its rows stay in the table)",
                crate::report::count_of(forgotten.rows, "row"),
                forgotten.table
            )));
        }
        for table in ["rejects", "chunks", "xacts", "steps", "jobs"] {
            session.query(&format!("DELETE FROM sluice.{table} WHERE job = $1 RETURNING 1"), &[Some(job)])?;
        }
        Ok(forgotten)
    })
}

/// A job as `sluice status` shows it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct JobStatus {
    pub job: String,
    pub table: String,
    /// `finished`, `emptied` (finished, and another job's `--truncate`
    /// emptied the table since), or `in progress` (running, interrupted or
    /// crashed).
    pub state: String,
    /// A process runs the job now, on any host (see [`presence_key`]).
    pub running: bool,
    pub chunks_done: u64,
    /// Chunks the ledger lists: done, or pending (written ahead by an older
    /// sluice, or put back to load again). Chunks are recorded as they
    /// commit, so this is no count of the chunks to come: `bytes_done` of
    /// `input_bytes` is the job's progress.
    pub chunks_known: u64,
    /// Input bytes of the done chunks.
    pub bytes_done: u64,
    /// The bytes the whole input's chunks cover, when known before the load
    /// (plain files); `None` for stdin, pipes, compressed or transcoded input,
    /// and jobs begun by a sluice that did not record it.
    pub input_bytes: Option<u64>,
    /// `--limit`'s records, when the job was given it: it reads no more,
    /// and finishes short of its input's end.
    pub record_limit: Option<u64>,
    /// The table was rewritten since the job finished (see
    /// [`FINISHED_CHUNK`]): a TRUNCATE outside sluice may have taken its
    /// rows, which the ledger cannot see.
    pub rewritten_since: bool,
    pub rows: u64,
    pub rejected: u64,
    /// Records `--on-conflict-do-nothing` skipped.
    pub skipped: u64,
    /// Rows that replaced a row holding their key (`--on-conflict-do-update`).
    pub replaced: u64,
    /// Hosts (and processes) that committed a chunk in the last minute,
    /// but not the processes of this host that have stopped since.
    pub active: Vec<String>,
    /// Indexes and constraints dropped for the job and not yet built again.
    pub dropped: Vec<String>,
    /// The command that began it (what resumes it), when recorded.
    pub command: Option<String>,
    /// The error that stopped its last run, when that run could say so (not
    /// after a kill or a crash).
    pub stopped_by: Option<String>,
    /// What its rejects were, by kind: read for `sluice status --job`
    /// alone (every reject of the job is read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reject_reasons: Option<crate::rejects::RejectReasons>,
}

/// Records why a job's run stopped, for `sluice status`: its command alone
/// runs into the same stop, when the cause is in the options or the table
/// (the first records all rejected, too many rejects), and a job left
/// stopped looked like one that a crash had left to resume.
pub fn record_stop(session: &PgSession, job: &str, reason: &str) -> Result<(), Error> {
    session.query("UPDATE sluice.jobs SET stopped_by = $2 WHERE job = $1", &[Some(job), Some(reason)])?;
    Ok(())
}

/// Every job, or the one named, or those of one table (as jobs name it:
/// `public.orders`), newest first.
///
/// The columns added since the first ledger are read through `to_jsonb`,
/// NULL where missing: `sluice status` reads a ledger an older sluice made
/// before any load of this version adds them (it may not alter it), and a
/// column named outright stopped it with `column j.stopped_by does not
/// exist`.
pub fn status(session: &PgSession, job: Option<&str>, table: Option<&str>) -> Result<Vec<JobStatus>, Error> {
    let rows = session.query(
        "SELECT j.job, j.target_table, CASE WHEN j.finished_at IS NULL THEN 'in progress' \
           WHEN min(to_jsonb(j)->>'emptied_at')::timestamptz > j.finished_at THEN 'emptied' ELSE 'finished' END, \
           count(c.seq) FILTER (WHERE c.state = 'done'), count(c.seq), \
           coalesce(sum(c.rows_loaded), 0), coalesce(sum(c.rows_rejected), 0), \
           coalesce(string_agg(DISTINCT c.host || ' (pid ' || c.pid || ')', ', ') \
             FILTER (WHERE c.committed_at > now() - interval '1 minute'), ''), \
           (SELECT coalesce(string_agg(s.name, '; ' ORDER BY s.step), '') FROM sluice.steps s \
             WHERE s.job = j.job AND s.state = 'dropped'), min(to_jsonb(j)->>'command'), \
           coalesce(sum(c.byte_len) FILTER (WHERE c.state = 'done'), 0), min(to_jsonb(j)->>'input_bytes'), \
           coalesce(sum((to_jsonb(c)->>'rows_skipped')::bigint), 0), min(to_jsonb(j)->>'stopped_by'), \
           coalesce(sum((to_jsonb(c)->>'rows_replaced')::bigint), 0), min(to_jsonb(j)->>'record_limit'), \
           coalesce(min(to_jsonb(j)->>'table_filenode')::bigint \
             <> pg_catalog.pg_relation_filenode(min(to_jsonb(j)->>'table_oid')::oid::regclass), false) \
         FROM sluice.jobs j LEFT JOIN sluice.chunks c ON c.job = j.job \
         WHERE ($1::text IS NULL OR j.job = $1) AND ($2::text IS NULL OR j.target_table = $2) \
         GROUP BY j.job ORDER BY max(j.created_at) DESC",
        &[job, table],
    )?;
    let text = |r: &Vec<Option<String>>, i: usize| r[i].clone().unwrap_or_default();
    let num = |r: &Vec<Option<String>>, i: usize| text(r, i).parse().unwrap_or(0);
    let running = running_now(session, rows.iter().filter_map(|r| r[0].as_deref()))?;
    Ok(rows
        .iter()
        .map(|r| JobStatus {
            job: text(r, 0),
            table: text(r, 1),
            state: text(r, 2),
            running: running.contains(&text(r, 0)),
            chunks_done: num(r, 3),
            chunks_known: num(r, 4),
            rows: num(r, 5),
            rejected: num(r, 6),
            skipped: num(r, 12),
            replaced: num(r, 14),
            active: text(r, 7).split(", ").filter(|s| !s.is_empty() && still_running(s)).map(str::to_string).collect(),
            dropped: text(r, 8).split("; ").filter(|s| !s.is_empty()).map(str::to_string).collect(),
            command: r[9].clone(),
            bytes_done: num(r, 10),
            input_bytes: r[11].as_deref().and_then(|n| n.parse().ok()),
            record_limit: r[15].as_deref().and_then(|n| n.parse().ok()),
            rewritten_since: r[16].as_deref() == Some("t"),
            stopped_by: r[13].clone(),
            reject_reasons: None,
        })
        .collect())
}

/// False for a process of this host (`host (pid N)`, as `status` lists
/// them) that no longer runs: `sluice status` on the loading machine tells
/// a stopped load at once, not a minute after its last commit. Processes of
/// other hosts cannot be seen from here and count as running.
fn still_running(entry: &str) -> bool {
    let Some((host, pid)) = entry.strip_suffix(')').and_then(|e| e.rsplit_once(" (pid ")) else {
        return true;
    };
    let procfs = std::path::Path::new("/proc");
    host != host_name() || !procfs.join("self").exists() || procfs.join(pid).exists()
}

/// This machine's name, for the ledger's `host` column (read once: every
/// chunk's row names it).
pub fn host_name() -> &'static str {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_process_of_this_host_is_not_running() {
        let me = format!("{} (pid {})", host_name(), std::process::id());
        assert!(still_running(&me));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let stopped = child.id();
        child.wait().unwrap();
        assert!(!still_running(&format!("{} (pid {stopped})", host_name())));
        assert!(still_running(&format!("{}-elsewhere (pid {stopped})", host_name())), "another host's");
    }

    #[test]
    fn stable_hash_is_fixed_and_separates_parts() {
        assert_eq!(stable_hash(&["a"]), stable_hash(&["a"]));
        assert_ne!(stable_hash(&["ab", "c"]), stable_hash(&["a", "bc"]));
        // FNV-1a of "a" and its NUL separator, computed independently.
        assert_eq!(stable_hash(&["a"]), "089be207b544f1e4");
    }

    #[test]
    fn chunk_row_quotes_its_literals() {
        let row = ChunkRow {
            job: "j'1",
            seq: 3,
            file: "a.csv",
            byte_offset: 0,
            byte_len: 9,
            first_line: 1,
            content_hash: Some(u64::MAX),
            line_samples: &[1, u64::MAX],
            rows: 2,
            rejected: 1,
            suppressed: 4,
            skipped: 5,
            replaced: 6,
        };
        let next = ChunkRow { seq: 4, file: "b'\\\"\t{}.csv", content_hash: None, line_samples: &[], ..row };
        let rows = [row, next];
        let copy = String::from_utf8(done_copy_text(&rows, "2026-11-22 10:00:00+00")).unwrap();
        let (host, pid) = (host_name(), std::process::id());
        let end = format!("\tdone\t2\t1\t4\t5\t{host}\t{pid}\t2026-11-22 10:00:00+00\t");
        let samples = "0000000000000001ffffffffffffffff";
        assert_eq!(
            copy,
            format!("j'1\t3\ta.csv\t0\t9\t1\t-1{end}{samples}\t6\nj'1\t4\tb'\\\\\"\\t{{}}.csv\t0\t9\t1\t\\N{end}\t6\n")
        );
        assert_eq!(
            listed_sql(&rows),
            "SELECT seq, state FROM sluice.chunks WHERE job = E'j''1' AND seq BETWEEN 3 AND 4"
        );
        let far = ChunkRow { seq: 9, ..row };
        assert_eq!(
            listed_sql(&[row, far]),
            "SELECT seq, state FROM sluice.chunks WHERE job = E'j''1' AND seq BETWEEN 3 AND 9 AND seq = ANY('{3,9}'::bigint[])"
        );
        let done = done_sql(&rows);
        let arrays = "'{3,4}'::bigint[], '{2,2}'::bigint[], '{1,1}'::bigint[], '{4,4}'::bigint[], '{5,5}'::bigint[]";
        let unnest = format!(
            "FROM unnest({arrays}, '{{-1,NULL}}'::bigint[], '{{\"{samples}\",\"\"}}'::text[], '{{6,6}}'::bigint[]) v "
        );
        assert!(done.contains(&unnest), "{done}");
        assert!(done.ends_with("WHERE c.job = E'j''1' AND c.seq = v.seq AND c.seq BETWEEN 3 AND 4 AND c.state <> 'done' RETURNING c.seq"), "{done}");
    }

    #[test]
    fn a_batch_is_claimed_by_one_lock_per_job_and_first_chunk() {
        let (job, seq) = lock_keys("nightly", 7);
        assert_eq!(seq, 7);
        assert_eq!(lock_keys("nightly", 7), (job, seq), "the same in every process");
        assert_ne!(lock_keys("weekly", 7).0, job);
        assert_eq!(lock_sql("nightly", 7, false), format!("SELECT pg_try_advisory_xact_lock({job}, 7), now()"));
        assert_eq!(lock_sql("nightly", 7, true), format!("SELECT true, now() FROM pg_advisory_xact_lock({job}, 7)"));
    }
}
