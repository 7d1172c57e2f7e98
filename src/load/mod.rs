//! The main job: cut the inputs into chunks and copy them over N connections.
//!
//! Shape: one feeder thread runs the chunker over every input in order and
//! puts chunks on a bounded queue; `workers` threads, each with its own
//! connection, take chunks and copy each in its own transaction; the calling
//! thread collects what committed. Many more chunks than workers keeps the
//! tail short (the field report that loaded half a billion rows used 2,000
//! chunks for its pool). On the first fatal error the queue stops: chunks in
//! flight finish or roll back, nothing is half loaded.

mod analyze;
mod batch;
mod blockers;
mod check_constraint;
mod defaults;
mod defer;
mod first_look;
pub mod foreign;
mod headers;
mod hints;
mod in_flight;
mod isolate;
mod job;
mod key_check;
mod leading;
mod loaded_before;
mod missing_key;
mod pace;
pub(crate) mod plan;
mod renamed;
mod replace;
mod retry;
mod sequences;
mod sketch;
mod stage;
mod suspect;
mod value_check;
mod waits;
mod wording;
mod worker;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{bounded, unbounded, Sender};

use crate::chunk::{Chunk, Chunker, ChunkerConfig, Preamble};
use crate::encoding::{InputEncoding, Transcoding, Utf16Sign};
use crate::error::Error;
use crate::format::convert::Conversion;
use crate::format::documents;
use crate::format::pick::FieldPicks;
use crate::format::scan::RecordShape;
use crate::format::{FormatKind, FormatOptions};
use crate::ledger::{self, Done, Opened};
use crate::progress::Progress;
use crate::rejects::{Reject, RejectsFile};
use crate::report::{
    count_of, thousands, Analysis, BuiltObject, ChunkRecord, CopyPath, Deferral, FileSummary, LoadReport, Summary,
};
use crate::sink::postgres::{PgSession, PgTarget, TableInfo, READ_ONLY, READ_ONLY_ADVICE};
use crate::sink::socket::ConnectionPath;
use crate::source::{any_read_once, bytes_as_chunked, resolve_inputs, Source, StreamCounts};
use crate::sql::quote_ident;
use batch::Batcher;

pub use analyze::AnalyzeWhen;
pub use defer::DeferIndexes;
pub(crate) use defer::PARALLEL_GIN_BUILDS;
pub use plan::{choose_columns, copy_statement, resolve_kind, CopyFormat};

/// Largest automatic chunk size. Measured on `transactions` 10 M rows with
/// 2 workers (bench/README.md): 4 MiB to 64 MiB are within noise of each
/// other; 16 MiB gives 25 chunks per 400 MB (a short tail) and keeps
/// in-memory chunks of streamed inputs small.
pub const DEFAULT_CHUNK_SIZE: u64 = 16 << 20;

/// `--chunk-size auto`: a 32nd of the input, between 1 MiB and
/// [`DEFAULT_CHUNK_SIZE`], so that a small input still makes many more
/// chunks than workers (a 38 MB file in 16 MiB chunks is 3 chunks for 2
/// workers: one of them idles for a third of the load). It depends on the
/// input alone, not on `--workers`, so a resumed job cuts the same chunks
/// whatever the worker count.
pub const AUTO_CHUNK_SIZE: u64 = 0;

fn auto_chunk_size(total: Option<u64>) -> u64 {
    total.map_or(DEFAULT_CHUNK_SIZE, |t| (t / 32).clamp(1 << 20, DEFAULT_CHUNK_SIZE))
}

/// `--chunk-size auto`'s largest for JSON lines read into columns: their
/// chunks carry their text-format lines and the input lines (for the
/// rejects file) to the workers, so each costs twice its size in memory.
/// 5 M documents (cname, 2 workers): 16 MiB chunks peaked at 219-229 MB of
/// RSS, 4 MiB ones at 69-72 MB, in the same time (3.0-3.2 s).
const DOCUMENTS_CHUNK_SIZE: u64 = 4 << 20;

/// Default `--retry-timeout`, as timescaledb-parallel-copy's.
pub const DEFAULT_RETRY_TIMEOUT: Duration = Duration::from_secs(300);

/// Default `--max-record-size`: a longer record is rejected as a runaway
/// (usually a quote left open), which keeps memory bounded.
pub const DEFAULT_MAX_RECORD_SIZE: u64 = 64 << 20;

/// A Ctrl-C cancelled the ANALYZE after the load (waiting for the table's
/// lock, or the run was stopped while it ran): the job is left unfinished,
/// as a kill would leave it, so that the same command analyzes and finishes
/// it. Finishing it instead would leave a command that says "done" and a
/// table the planner misjudges, with no run left to mend it.
const ANALYZE_INTERRUPTED: &str = "every row is committed, but the table was not analyzed (interrupted): the job is \
     left unfinished, so that running the same command again analyzes the table and finishes it (with --analyze no, \
     it finishes without)";

/// `--workers auto` (the default): start with 2 connections and add one
/// while throughput rises (see `pace`).
pub const AUTO_WORKERS: usize = 0;

/// Most connections `--workers auto` opens.
pub const MAX_AUTO_WORKERS: usize = 16;

/// The local CPU count, at least 2 and at most 8: a fixed count for callers
/// that want one. On a 2-core machine, 2 workers beat 1 by 1.6-1.9x and 4
/// were no faster than 2 (bench/README.md).
pub fn default_workers() -> usize {
    thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 8)
}

/// Everything `sluice load` was asked to do.
#[derive(Clone, Debug)]
pub struct LoadRequest {
    pub inputs: Vec<String>,
    pub table: String,
    pub columns: Option<Vec<String>>,
    /// With `header`: load only the fields whose header names a column.
    pub skip_other_fields: bool,
    /// `--no-header`: each input's first record is data, even where it
    /// reads as a header (see `headers::refuse_a_header_taken_for_a_row`).
    pub no_header: bool,
    /// `None`: guessed from the file names.
    pub format: Option<FormatKind>,
    /// Options for the format; its `kind` is replaced by the resolved one.
    pub options: FormatOptions,
    pub db: Option<String>,
    pub workers: usize,
    pub chunk_size: u64,
    pub truncate: bool,
    /// Where rejected records go; default `<table>.rejects.jsonl`.
    pub rejects: Option<PathBuf>,
    /// Stop once more than this many records were rejected.
    pub max_errors: Option<u64>,
    /// `--on-conflict-do-nothing`: a record refused for a unique key or
    /// exclusion constraint is skipped and counted, not rejected.
    pub on_conflict_do_nothing: bool,
    /// `--on-conflict-do-update`: a record replaces the row that holds its
    /// key (the columns named, or none: the table's key; see [`replace`]).
    pub on_conflict_do_update: Option<Vec<String>>,
    /// Records longer than this are rejected as runaways.
    pub max_record_size: u64,
    /// `--limit N`: the load reads no more than N records (see
    /// [`crate::chunk::ChunkerConfig::record_cap`]).
    pub limit: Option<u64>,
    /// `--job NAME`; default: derived from the command (see `job::name`).
    pub job: Option<String>,
    /// Start the job over even if it has committed chunks.
    pub restart: bool,
    /// `--load-again`: load inputs an earlier job loaded in full (see
    /// [`loaded_before`]).
    pub load_again: bool,
    /// `--keep-tcp`: connect as `db` says even when the server is on this
    /// machine and its Unix socket leads to it (see `sink::socket`).
    pub keep_tcp: bool,
    /// Keep the server's `synchronous_commit` instead of turning it off for
    /// the loading sessions (safe to turn off: see [`crate::ledger`]).
    pub sync_commit: bool,
    /// Set (by Ctrl-C) to stop handing out chunks; in-flight ones finish.
    pub interrupt: Option<Arc<AtomicBool>>,
    /// How long a worker, or a step before or after the copy, keeps
    /// reconnecting after a lost connection or a transient server error
    /// before the load fails (see [`retry`]).
    pub retry_timeout: Duration,
    /// `--copy-format`: binary where every column has an encoder, or forced.
    pub copy_format: CopyFormat,
    /// `--defer-indexes`: drop indexes and constraints for the load.
    pub defer_indexes: DeferIndexes,
    /// `--unlogged`: an empty table is unlogged for the load, logged after.
    pub unlogged: bool,
    /// `--analyze`: when to analyze the table after the load.
    pub analyze: AnalyzeWhen,
    /// `--max-workers`: the most `--workers auto` opens (default: the CPU
    /// count for a server on this machine, else [`MAX_AUTO_WORKERS`]).
    pub max_workers: Option<usize>,
    /// `--at-least-once`: load into foreign tables, whose rows another
    /// server commits, although a crash may load a chunk twice (see
    /// [`foreign`]).
    pub at_least_once: bool,
    /// The command line, without its connection, kept in the ledger by the
    /// run that begins a job: what to run again to resume it (`sluice
    /// status` and a refused retry show it).
    pub command: Option<String>,
}

impl LoadRequest {
    /// A load of `inputs` into `table` with every default: `sluice load
    /// FILE --table T` and nothing else (the demo and `sluice bench` start
    /// from it).
    pub fn new(inputs: Vec<String>, table: &str) -> LoadRequest {
        LoadRequest {
            inputs,
            table: table.to_string(),
            columns: None,
            skip_other_fields: false,
            no_header: false,
            format: None,
            options: FormatOptions::new(FormatKind::Csv),
            db: None,
            workers: AUTO_WORKERS,
            chunk_size: AUTO_CHUNK_SIZE,
            truncate: false,
            rejects: None,
            max_errors: None,
            on_conflict_do_nothing: false,
            on_conflict_do_update: None,
            max_record_size: DEFAULT_MAX_RECORD_SIZE,
            limit: None,
            job: None,
            restart: false,
            load_again: false,
            keep_tcp: false,
            sync_commit: false,
            interrupt: None,
            retry_timeout: DEFAULT_RETRY_TIMEOUT,
            copy_format: CopyFormat::Auto,
            defer_indexes: DeferIndexes::Auto,
            unlogged: false,
            analyze: AnalyzeWhen::Auto,
            max_workers: None,
            at_least_once: false,
            command: None,
        }
    }
}

/// Facts every worker needs, shared read-only.
struct Shared<'a> {
    sources: &'a [Source],
    /// For each input, the load's bytes from its start to the load's end
    /// (see [`bytes_to_load_end`]).
    to_load_end: Vec<Option<u64>>,
    format: &'a FormatOptions,
    table: &'a TableInfo,
    /// The columns COPY fills, with their types.
    copy_columns: Vec<(String, String)>,
    copy_sql: String,
    target: &'a PgTarget,
    /// How `target`'s sessions reach the server.
    connection: ConnectionPath,
    progress: &'a Progress,
    /// Started with the run, so the wall time counts job opening (a
    /// TRUNCATE waiting for a lock, index drops) as the user's wait does.
    clock: Instant,
    stop: AtomicBool,
    /// `--chunk-size`, with `auto` resolved from the inputs' sizes.
    chunk_size: u64,
    max_record_size: u64,
    /// csv: the open-quote check's record shape (see [`crate::chunk`]).
    shape: Option<RecordShape>,
    /// Whether the load's first records were all rejected (see
    /// [`ALL_REJECTED_STOP`]).
    leading: leading::LeadingRejects,
    /// `--max-errors`, and the rejects this run committed so far: a chunk's
    /// isolation stops once they and its own pass it (see
    /// [`Shared::over_max_errors`]).
    max_errors: Option<u64>,
    rejected_committed: AtomicU64,
    /// `--on-conflict-do-nothing` (see [`Shared::skips`]).
    skip_conflicts: bool,
    /// With it, the staged path, where it applies (see [`stage`]).
    staging: Option<stage::Staging>,
    /// The share of its records, per mille, the last committed chunk
    /// skipped (see [`Shared::stages`]).
    held_share: AtomicU64,
    /// A staged chunk's INSERT was refused as it would be for every chunk
    /// (see [`stage::refuses_every_chunk`]): no more chunks are staged.
    staging_refused: AtomicBool,
    job: String,
    /// The inputs' fingerprint, which the job takes when it finishes.
    fingerprint: String,
    /// See [`Inputs::goes_on_from`].
    goes_on_from: Option<(String, String)>,
    /// Chunks committed by earlier runs of the job.
    done: HashMap<u64, Done>,
    interrupt: Option<Arc<AtomicBool>>,
    /// What the loading sessions set `synchronous_commit` to; `None`: the
    /// server's (see [`foreign::synchronous_commit`]).
    synchronous_commit: Option<&'static str>,
    retry_timeout: Duration,
    /// What each COPY column accepts, for guessing bad records (None: jsonl).
    rules: Option<Vec<suspect::ColumnRule>>,
    /// Checks isolation's suspects with the server's input functions.
    value_check: Option<value_check::ValueCheck>,
    /// Finds the records that break the table's CHECKs in one statement
    /// (see [`check_constraint`]).
    constraint_check: Option<check_constraint::ConstraintCheck>,
    /// Set once a committed chunk had a CHECK refusal in [`DENSE_KEYS`]
    /// records or fewer: from then on a chunk's first CHECK refusal makes
    /// isolation look for the others at once.
    checks_dense: AtomicBool,
    /// Finds isolation's repeated keys once duplicates are dense.
    key_check: Option<key_check::KeyCheck>,
    /// Finds the records a foreign key's refusal is about.
    missing_keys: Option<missing_key::MissingKeys>,
    /// Binary COPY, when the plan uses it.
    binary: Option<plan::BinaryPlan>,
    /// Why chunks go as text, when they do.
    text_why: String,
    /// A key or constraint is deferred: each COPY writes a marker (see [`defer`]).
    marked: bool,
    /// In a pass that loads chunks again: only these.
    redo: Option<HashSet<u64>>,
    /// The pass loads with one worker (see [`defer::Completion::Violated`]).
    one_at_a_time: bool,
    /// Said before the load started, for the report.
    early_warnings: Vec<String>,
    /// What the rejects say about the load's options (see [`hints`]).
    notes: hints::RejectNotes,
    /// Chunks loaded a second time by this run (lost or violating rows).
    redone: u64,
    /// `--workers auto`: how many workers may load now.
    pace: Option<pace::Pacer>,
    /// The feeder has queued its last chunk.
    fed_all: AtomicBool,
    /// What the loading sessions wait on, for the report.
    waits: waits::WaitSampler,
    /// Waits for other sessions' locks, from job opening on.
    blockers: &'a blockers::Blockers,
    /// Some worker of this load has connected.
    any_connected: AtomicBool,
    /// Workers whose first connection the server refused: why, and
    /// whether they loaded a chunk once connected later.
    refused: std::sync::Mutex<Vec<(String, bool)>>,
    /// For each foreign key a chunk's COPY was refused for,
    /// the first such refusal: chunks screened for rejects look up its
    /// missing keys before their first COPY (see `isolate`).
    foreign_key_refusals: std::sync::Mutex<Vec<crate::sink::CopyRefusal>>,
    /// Set once a chunk rejected [`KEY_COLLISIONS`] duplicate keys: from
    /// then on workers take turns, one batch at a time (see [`Shared::turn`]),
    /// or, once they are dense too, load side by side where the key check
    /// allows it (see [`Shared::keys_in_parallel`]).
    keys_collide: AtomicBool,
    /// Held by the worker whose turn it is while keys collide, from taking
    /// a batch to committing it, so batches also go in input order. Two sessions
    /// inserting the same key wait for each other's transactions: a worker
    /// whose run is refused rolls its rows back, the other's duplicate takes
    /// the key, the first copies its rows again and waits, and so on into
    /// deadlocks. 2 M rows with 1 % duplicate ids into a table with a key:
    /// 110 s with 2 workers, 37 s taking turns (bench/README.md).
    turn: std::sync::Mutex<()>,
    /// Set once a committed chunk had a duplicate key in [`DENSE_KEYS`] records or
    /// fewer: from then on isolation looks for repeated keys before copying
    /// (see [`key_check`]), which costs the server some 2.5 µs a record and
    /// saves some 1.7 ms a duplicate.
    keys_dense: AtomicBool,
    /// The chunks loading at once while keys collide densely, where the
    /// key check allows it: then instead of taking turns (see [`in_flight`]).
    in_flight: in_flight::InFlight,
    /// The constraints checked at commit (`DEFERRABLE INITIALLY DEFERRED`)
    /// that refused a chunk, with the server's words: the server names no
    /// line then, so from then on each chunk checks those at each row
    /// (`SET CONSTRAINTS ... IMMEDIATE`), and its records that break one
    /// are rejected at their lines like any other.
    checked_at_each_row: worker::AtEachRow,
    /// The table has a unique key or exclusion constraint, or the job
    /// deferred indexes (a key among them is built again before the load
    /// ends, and is in place when the chunks that break it load again):
    /// which of two records sharing a key keeps it depends on the order
    /// they are copied in.
    keyed: bool,
    /// The table has a unique key or exclusion constraint in place while the
    /// workers load (see [`PgSession::holds_unique_keys`]), and more than
    /// one may load.
    keys_in_place: bool,
    /// Set where [`Shared::keys_in_place`] once the load meets a repeated
    /// key (among the first input's first records, or a chunk's rejects):
    /// from then on a batch loaded without taking turns commits after the
    /// batches before it, so that of two loading at once that share a key
    /// the earlier line is kept, as when they take turns (see
    /// [`in_flight::Flight::wait_for_earlier`]). Not from the start: a
    /// chunk that ends first then waits for the one before it, and clean
    /// loads into a table with a key took 9 % longer (2 M rows, medians of
    /// 6 alternated runs: 2.03 s against 1.86).
    commit_in_order: AtomicBool,
    /// Held while a worker takes a batch and boards it (see
    /// [`Shared::commit_in_order`]), so that batches board in input order
    /// (in their turn or not).
    boarding: std::sync::Mutex<()>,
    /// Batches that rolled back to let an earlier one take a key they
    /// shared, and loaded again.
    gave_way: std::sync::atomic::AtomicU64,
}

/// Duplicate-key rejects in one chunk that make workers take turns: a
/// duplicate now and then costs a parallel load little.
const KEY_COLLISIONS: usize = 16;
pub(super) const DENSE_KEYS: u64 = 256;

impl Shared<'_> {
    /// The stop for `--max-errors` when a chunk being isolated has found
    /// `found` rejects, `last` the latest: once they and the rejects
    /// committed pass it. Why not only as chunks commit: every chunk in
    /// flight isolated to its end first, so `--max-errors 100` on a file
    /// whose every tenth record broke a CHECK committed all 200,000
    /// records' chunks, 20,000 of them rejected, in 1.7 s, and then said
    /// it stopped.
    fn over_max_errors(&self, found: u64, last: Option<&Reject>) -> Option<Error> {
        let max = self.max_errors?;
        let (rejected, last) = (self.rejected_committed.load(Ordering::SeqCst) + found, last?);
        (rejected > max).then(|| Error::TooManyRejects { max, rejected, last: last.to_string() })
    }

    /// True once the load should hand out no more chunks.
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || self.interrupted()
    }

    fn interrupted(&self) -> bool {
        interrupted(self.interrupt.as_deref())
    }

    /// Connections loading now: the fixed count, or the pacer's level.
    fn workers(&self, req: &LoadRequest) -> usize {
        let idle = self.refused.lock().map_or(0, |r| r.iter().filter(|(_, loaded)| !loaded).count());
        self.pace.as_ref().map_or(req.workers.max(1).saturating_sub(idle).max(1), pace::Pacer::level)
    }

    /// Whether a record the server refused with `sqlstate` is skipped
    /// rather than rejected: with `--on-conflict-do-nothing`, a unique key
    /// or exclusion constraint that a row already there (or an earlier
    /// record) holds, as `INSERT ... ON CONFLICT DO NOTHING` skips it. COPY
    /// takes no ON CONFLICT, so the refusals are found as any duplicate key
    /// is (see [`key_check`]), dense ones by a query; once most records are
    /// held, chunks go through that statement from a staging table instead
    /// (see [`stage`]), which costs every row a second write.
    fn skips(&self, sqlstate: Option<&str>) -> bool {
        self.skip_conflicts && is_key_conflict(sqlstate)
    }

    /// Notes a committed chunk's rejects and `skipped` records (see
    /// [`Shared::skips`]) among its `records`: enough duplicate keys make
    /// the workers take turns from now on, dense ones make isolation look
    /// for them first, and any (or a conflict of an exclusion constraint)
    /// make chunks commit in input order; dense CHECK violations make
    /// isolation look for the others at a chunk's first.
    fn note_duplicates(&self, rejects: &[crate::rejects::Reject], skipped: u64, records: u64) {
        if self.skip_conflicts && records > 0 {
            self.held_share.store(skipped * 1000 / records, Ordering::SeqCst);
        }
        let duplicates = rejects.iter().filter(|r| r.sqlstate.as_deref() == Some("23505")).count() + skipped as usize;
        // Not in the pass that loads again, one at a time, the chunks whose
        // rows broke a deferred key: no worker waits for another there, and
        // the warning's advice (defer the keys) was taken.
        if duplicates >= KEY_COLLISIONS && !self.one_at_a_time {
            self.keys_collide.store(true, Ordering::SeqCst);
        }
        if duplicates > 0 && duplicates as u64 * DENSE_KEYS >= records {
            self.keys_dense.store(true, Ordering::SeqCst);
        }
        let constraints = [check_constraint::CHECK_VIOLATION, check_constraint::NOT_NULL_VIOLATION];
        let checks = rejects.iter().filter(|r| r.sqlstate.as_deref().is_some_and(|s| constraints.contains(&s))).count();
        if checks > 0 && checks as u64 * DENSE_KEYS >= records {
            self.checks_dense.store(true, Ordering::SeqCst);
        }
        let conflicts = rejects.iter().filter(|r| r.sqlstate.as_deref() == Some("23P01")).count();
        if duplicates + conflicts > 0 && self.keys_in_place {
            self.commit_in_order.store(true, Ordering::SeqCst);
        }
    }

    /// `--on-conflict-do-update` (see [`replace`]).
    fn replaces(&self) -> bool {
        self.staging.as_ref().is_some_and(stage::Staging::merges)
    }

    /// The staged path (see [`stage`]) for the next chunks: the last
    /// committed chunk skipped a third of its records or more (with
    /// `--on-conflict-do-update`, always).
    fn stages(&self) -> Option<&stage::Staging> {
        if self.replaces() {
            return self.staging.as_ref();
        }
        let mostly_held = self.held_share.load(Ordering::SeqCst) >= stage::MOSTLY_HELD;
        self.staging.as_ref().filter(|_| mostly_held && !self.staging_refused.load(Ordering::SeqCst))
    }

    /// While keys collide, waits for this worker's turn, held until the
    /// guard is dropped; otherwise `None` at once.
    fn take_turn(&self) -> Option<std::sync::MutexGuard<'_, ()>> {
        match self.keys_collide.load(Ordering::SeqCst) {
            true => Some(self.turn.lock().unwrap_or_else(std::sync::PoisonError::into_inner)),
            false => None,
        }
    }

    /// Whether a chunk taken now loads alongside the chunks in flight,
    /// instead of in its turn: keys collide densely, and the key check
    /// sees every constraint that makes one insert wait for another (see
    /// [`in_flight`]).
    fn keys_in_parallel(&self) -> bool {
        self.keys_collide.load(Ordering::SeqCst)
            && self.keys_dense.load(Ordering::SeqCst)
            && !self.one_at_a_time
            && self.key_check.as_ref().is_some_and(key_check::KeyCheck::in_parallel)
    }

    /// A worker's first connection was refused (`reason`); `loaded`: it
    /// connected later and committed a chunk.
    fn note_refused(&self, reason: String, loaded: bool) {
        if let Ok(mut refused) = self.refused.lock() {
            refused.push((reason, loaded));
        }
    }

    /// The statements that open a COPY's subtransaction: with a key or
    /// constraint deferred, they also write the markers of the chunks it
    /// loads, which share the rows' `xmin` (see [`defer`]; rows that break
    /// the key send every chunk of their COPY back to be loaded again).
    fn savepoint(&self, statements: &str, chunks: &[&Chunk]) -> String {
        match self.marked {
            true => {
                let seqs: Vec<u64> = chunks.iter().map(|c| c.seq).collect();
                format!("{statements}; {}", ledger::xact_marker_sql(&self.job, &seqs))
            }
            false => statements.to_string(),
        }
    }
}

/// What a worker or the feeder tells the collector.
enum Event {
    Committed(ChunkRecord, Vec<Reject>),
    /// Another process committed this chunk first.
    Elsewhere,
    Failed(Error),
}

/// A load that stopped on an error, with the report of what committed
/// before it when the copy had started (those rows stay loaded).
#[derive(Debug)]
pub struct Failed {
    pub error: Error,
    pub partial: Option<Box<LoadReport>>,
    /// When it stopped after the job opened but before the copy (a changed
    /// input refused, a Ctrl-C during its check): what the job leaves to be
    /// put back (see [`Deferral::left_undone`]); with a partial report, its
    /// deferral says it.
    pub left_undone: Vec<String>,
}

impl From<Error> for Failed {
    fn from(error: Error) -> Self {
        Failed { error, partial: None, left_undone: Vec::new() }
    }
}

/// `--truncate` and `--unlogged` act on a table; a view's INSTEAD OF
/// trigger writes its rows to tables sluice does not know.
fn refuse_table_flags_on_a_view(req: &LoadRequest, table: &TableInfo) -> Result<(), Error> {
    let asked = [(req.truncate, "--truncate"), (req.unlogged, "--unlogged")];
    match asked.iter().find(|(on, _)| *on) {
        Some((_, flag)) if table.is_view => Err(Error::Usage(format!(
            "{flag} works on tables, and {} is a view (its INSTEAD OF trigger writes the rows): apply it to the \
             tables the trigger writes to, or leave {flag} out",
            table.display()
        ))),
        _ => Ok(()),
    }
}

/// COPY FROM refuses a table whose row-level security applies to the
/// role (`COPY FROM not supported with row-level security`), at the first
/// chunk: by then `--truncate` would have emptied the table. Said before
/// anything is done, with the ways out.
fn refuse_row_level_security(control: &PgSession, table: &TableInfo) -> Result<(), Error> {
    let active = control.query(
        "SELECT current_user::text FROM (SELECT) one WHERE pg_catalog.row_security_active($1::regclass)",
        &[Some(&table.quoted())],
    )?;
    match active.first().and_then(|r| r[0].clone()) {
        Some(role) => Err(Error::Target(format!(
            "{} has row-level security that applies to role {}, and COPY (which sluice loads with) refuses such \
             a table; load as a role it does not apply to (a superuser, a role with BYPASSRLS, or the owner unless \
             the table forces it), or have the owner run ALTER TABLE {} DISABLE ROW LEVEL SECURITY for the load",
            table.display(),
            quote_ident(&role),
            table.quoted()
        ))),
        None => Ok(()),
    }
}

/// sluice's own tables are never a target. A role named `sluice` finds
/// them first for a bare name (its search path starts with `"$user"`, the
/// ledger's schema), so `--table jobs` would load into the ledger.
fn refuse_the_ledger(req: &LoadRequest, table: &TableInfo) -> Result<(), Error> {
    match table.schema == ledger::SCHEMA && ledger::TABLES.contains(&table.name.as_str()) {
        true => Err(Error::Target(format!(
            "--table {}: that is {}, one of sluice's own tables (ledger and rejects), not a table to load into; \
             name the table with its schema, such as --table public.{}",
            req.table,
            table.display(),
            crate::sql::display_ident(&table.name)
        ))),
        false => Ok(()),
    }
}

/// A warning for a table in the ledger's schema. A role named like that
/// schema finds it first on the default search path (`"$user", public`), so
/// its unqualified `CREATE TABLE` puts tables there once a load created it,
/// and other roles do not find them in `public`.
fn in_the_ledger_schema(table: &TableInfo) -> Option<String> {
    (table.schema == ledger::SCHEMA).then(|| {
        format!(
            "{} is in the schema of sluice's ledger; for a role named {}, \"$user\" in the search path is \
             that schema, and an unqualified CREATE TABLE puts tables there. If you meant another table, name \
             it with its schema (--table public.{})",
            table.display(),
            ledger::SCHEMA,
            crate::sql::display_ident(&table.name)
        )
    })
}

/// Runs a load to the end, or to its first fatal error.
pub fn run(req: &LoadRequest, progress: &Progress) -> Result<LoadReport, Failed> {
    let started = (Instant::now(), SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis()));
    let mut sources = resolve_inputs(&req.inputs)?;
    for (index, source) in sources.iter_mut().enumerate() {
        // The parts `split -l` cut: the title is the first part's, as the
        // header is.
        let first_part_only = req.options.header_in_first_file_only && index > 0;
        source.skip_lines = if first_part_only { 0 } else { req.options.skip_lines };
    }
    let mut format = req.options.clone();
    // Before the format is told by the first line: read as UTF-16, that
    // line is its text, where its bytes were taken for commas (a JSON
    // document piped in was loaded as CSV, split at its commas).
    apply_encoding(&mut sources, format.encoding.take())?;
    format.kind = resolve_kind(req.format, &sources)?;
    format.validate().map_err(Error::Usage)?;
    if format.kind == FormatKind::Jsonl {
        read_json_values(&mut sources, format.documents_at.as_deref());
    }
    let mut target = PgTarget::new(req.db.as_deref());
    let control = target.connect()?;
    let connection = crate::sink::socket::prefer_local_socket(&mut target, &control, req.keep_tcp);
    let target = target;
    let blockers = blockers::Blockers::default();
    let (watching, watch_done) = bounded::<()>(0);
    thread::scope(|scope| {
        scope.spawn(|| blockers.run(&target, progress, req.interrupt.as_deref(), watch_done));
        let connected = Connected { target: &target, connection, control, blockers: &blockers, started };
        let outcome = run_connected(req, progress, (sources, format), connected);
        drop(watching);
        outcome.map_err(|failed| match failed.partial {
            None if made_by_ctrl_c(&failed.error, req.interrupt.as_deref(), &blockers) => {
                Failed { error: Error::Interrupted { chunks: 0, rows: 0 }, ..failed }
            }
            _ => failed,
        })
    })
}

/// Whether a Ctrl-C came (`interrupt` is its flag, when the caller set one).
pub(super) fn interrupted(interrupt: Option<&AtomicBool>) -> bool {
    interrupt.is_some_and(|i| i.load(Ordering::SeqCst))
}

/// Whether a Ctrl-C made `error`: it cancelled a statement waiting for a
/// lock (the lock watch cancels only on a Ctrl-C), or it ended a wait for
/// the server (see [`retry`]).
fn made_by_ctrl_c(error: &Error, interrupt: Option<&AtomicBool>, blockers: &blockers::Blockers) -> bool {
    interrupted(interrupt) && (error.may_pass() || blockers.cancelled_any())
}

/// A load that reached its server, with a watch on what holds it up.
struct Connected<'a> {
    target: &'a PgTarget,
    /// Whether the sessions go through the server's Unix socket.
    connection: ConnectionPath,
    control: PgSession,
    blockers: &'a blockers::Blockers,
    /// When the run began, as an instant and in Unix milliseconds.
    started: (Instant, u128),
}

fn run_connected(
    req: &LoadRequest,
    progress: &Progress,
    (mut sources, format): (Vec<Source>, FormatOptions),
    Connected { target, connection, control, blockers, started: (clock, started_unix_ms) }: Connected,
) -> Result<LoadReport, Failed> {
    let mut control = Some(control);
    let reconnecting = reconnecting(target, req, progress);
    let Prepared {
        table,
        columns,
        format,
        copy_plan,
        shape,
        job,
        early_warnings,
        mut deferral,
        auto_ceiling,
        server_is_local,
        mut rejects,
        unique_keys,
        check_constraints,
        keys_in_place,
        stageable,
        replacing,
        kept_sources,
        goes_on_from,
    } = reconnecting.run(&mut control, |control| prepare(req, progress, control, &sources, &format))?;
    if let Some(kept) = kept_sources {
        sources = kept;
    }
    // The job's closing, after the copy, reuses this session when the
    // server is on this machine. Across a network it is not used again: a
    // firewall may drop a session idle for the whole copy without a word,
    // and a statement on it would hang instead of failing. It is kept,
    // unused, to the end: its presence lock says the job runs (see
    // `ledger::presence_key`) between the sessions that load and build.
    let _presence = match server_is_local {
        true => None,
        false => control.take(),
    };
    for source in &mut sources {
        source.documents = format.documents.clone().map(|columns| (columns, req.max_record_size));
    }
    let OpenedJob { job, done, steps, fingerprint, inputs_changed, .. } = job;
    let before_copy = |error: Error| Failed { error, partial: None, left_undone: deferral.left_undone() };
    progress.set_total(sources.iter().map(|s| s.size).sum::<Option<u64>>());
    progress.set_records_cap(req.limit);
    let copy_columns = table.copy_columns(columns.as_deref());
    let copy_sql = copy_statement(&table, columns.as_deref(), &format);
    let binary_sql = copy_plan.as_ref().ok().map(|plan| plan.sql.as_str());
    let staging = replacing
        .or_else(|| stageable.then(|| stage::Staging::new(&table, &copy_columns, (&copy_sql, binary_sql))).flatten());
    let constraint_check = check_constraint::ConstraintCheck::new(&table, &check_constraints, &copy_columns, &format);
    let mut shared = Shared {
        sources: &sources,
        to_load_end: bytes_to_load_end(&sources),
        format: &format,
        table: &table,
        copy_columns: copy_columns.clone(),
        copy_sql,
        target,
        connection,
        progress,
        clock,
        stop: AtomicBool::new(false),
        chunk_size: match req.chunk_size {
            AUTO_CHUNK_SIZE if format.documents.is_some() => {
                auto_chunk_size(sources.iter().map(|s| s.size).sum()).min(DOCUMENTS_CHUNK_SIZE)
            }
            AUTO_CHUNK_SIZE => auto_chunk_size(sources.iter().map(|s| s.size).sum()),
            asked => asked,
        },
        max_record_size: req.max_record_size,
        shape,
        leading: leading::LeadingRejects::new(req.max_errors.is_none() && nothing_done(&done)),
        max_errors: req.max_errors,
        rejected_committed: AtomicU64::new(0),
        skip_conflicts: req.on_conflict_do_nothing,
        staging,
        held_share: AtomicU64::new(0),
        staging_refused: AtomicBool::new(false),
        job,
        fingerprint,
        goes_on_from,
        done,
        interrupt: req.interrupt.clone(),
        synchronous_commit: foreign::synchronous_commit(&table, req.sync_commit),
        retry_timeout: req.retry_timeout,
        rules: suspect::rules(&table, columns.as_deref(), &format),
        value_check: value_check::ValueCheck::new(&copy_columns, &table.text_like, &format),
        key_check: key_check::KeyCheck::new(
            &table.quoted(),
            &copy_columns,
            &unique_keys,
            &format,
            table.session_dates(),
        )
        .map(|check| check.worded_in(&check_constraints.lc_messages))
        .map(|check| if req.on_conflict_do_nothing { check.skipping() } else { check })
        .map(|check| {
            match !unique_keys.decide && unique_keys.decide_after_checks && constraint_check.is_some() {
                true => check.deciding_after_checks(),
                false => check,
            }
        }),
        missing_keys: missing_key::MissingKeys::new(&table, &copy_columns, &format),
        constraint_check,
        checks_dense: AtomicBool::new(false),
        text_why: copy_plan.as_ref().err().cloned().unwrap_or_default(),
        binary: copy_plan.ok(),
        marked: steps.iter().any(|s| !s.rebuilt && s.deferred.violations_sql.is_some()),
        redo: None,
        one_at_a_time: false,
        early_warnings,
        notes: Default::default(),
        redone: 0,
        pace: (req.workers == AUTO_WORKERS).then(|| pace::Pacer::new(auto_ceiling)),
        fed_all: AtomicBool::new(false),
        waits: waits::WaitSampler::default(),
        blockers,
        any_connected: AtomicBool::new(false),
        refused: std::sync::Mutex::default(),
        foreign_key_refusals: std::sync::Mutex::default(),
        keys_collide: AtomicBool::new(false),
        keys_dense: AtomicBool::new(false),
        checked_at_each_row: worker::AtEachRow::default(),
        keyed: !unique_keys.keys.is_empty() || !unique_keys.only_these || !steps.is_empty(),
        keys_in_place: keys_in_place && req.workers != 1,
        commit_in_order: AtomicBool::new(false),
        boarding: std::sync::Mutex::default(),
        gave_way: Default::default(),
        turn: std::sync::Mutex::default(),
        in_flight: in_flight::InFlight::default(),
    };
    if inputs_changed && !shared.done.is_empty() {
        check_committed_chunks(&shared, req).map_err(before_copy)?;
        shared.early_warnings.push(format!(
            "the input changed size or modification time since job {} began; each of the {} it committed was \
             found again, byte for byte, before loading",
            shared.job,
            count_of(shared.done.len() as u64, "chunk")
        ));
    }
    // Where the keys are in place: not where the job deferred them, but
    // also where it deferred only other objects (from stdin, which cannot
    // be read twice, keys stay): such a load's chunks committed in any
    // order, and of two lines sharing a key the later was kept on some runs.
    let keys_kept = !defer::a_key_is_dropped(&steps);
    if let Some(repeats) = keys_kept.then(|| repeats_in_the_head(&shared)).flatten() {
        if repeats.dense() {
            shared.keys_collide.store(true, Ordering::SeqCst);
            shared.keys_dense.store(true, Ordering::SeqCst);
        }
        if repeats.repeated > 0 && shared.keys_in_place {
            shared.commit_in_order.store(true, Ordering::SeqCst);
        }
    }
    let mut outcome = run_pipeline(&shared, req, &mut rejects);
    outcome = complete_job(&mut shared, req, &mut rejects, outcome, &mut deferral, !steps.is_empty(), &mut control);
    conclude(&shared, req, outcome, &mut rejects, started_unix_ms, deferral, &mut control)
}

/// How often the first input's first records repeat their keys: as
/// densely as a chunk must to make the workers take turns and isolation ask
/// for repeated keys first (see [`Shared::note_duplicates`]), the load then
/// starts so; at all, its chunks commit in input order from the start (see
/// [`Shared::commit_in_order`]). Why: until a chunk committed to show it,
/// the first chunks loaded in parallel, waiting for each other's keys; 2 M
/// rows with 1 % duplicate ids spent 3.8 of 10.4 s on their first three
/// chunks (bench/README.md). Only where the keys are in place (not deferred) and
/// the records are COPY's as written (not documents, no fields left out).
fn repeats_in_the_head(shared: &Shared) -> Option<HeadRepeats> {
    let check = shared.key_check.as_ref()?;
    if shared.format.documents.is_some() || shared.format.picks.is_some() {
        return None;
    }
    let (_, head) = first_look::first_head(shared.sources);
    let records = crate::format::head_records(&head, shared.format);
    Some(HeadRepeats { repeated: check.repeats_within(&records), records: records.len() })
}

/// How many of the first input's first records repeat a key of an earlier
/// one (see [`repeats_in_the_head`]).
struct HeadRepeats {
    repeated: usize,
    records: usize,
}

impl HeadRepeats {
    /// As densely as a chunk's rejects must to make the workers take turns
    /// and isolation look for repeated keys first.
    fn dense(&self) -> bool {
        self.repeated >= KEY_COLLISIONS && self.repeated as u64 * DENSE_KEYS >= self.records as u64
    }
}

/// Waits out a server that went away for `--retry-timeout` (see [`retry`]).
fn reconnecting<'a>(target: &'a PgTarget, req: &'a LoadRequest, progress: &'a Progress) -> retry::Reconnecting<'a> {
    retry::Reconnecting { target, timeout: req.retry_timeout, progress, interrupt: req.interrupt.as_deref() }
}

/// What the job's opening found and decided, for the copy.
struct Prepared {
    table: TableInfo,
    columns: Option<Vec<String>>,
    /// The format, its forced columns named as the table names them.
    format: FormatOptions,
    copy_plan: Result<plan::BinaryPlan, String>,
    shape: Option<RecordShape>,
    job: OpenedJob,
    early_warnings: Vec<String>,
    deferral: Deferral,
    auto_ceiling: usize,
    /// Whether the server runs on this machine.
    server_is_local: bool,
    /// Holding the job's rejects so far, earlier runs' included.
    rejects: RejectsFile,
    /// The table's unique keys, read before any was deferred.
    unique_keys: crate::sink::postgres::UniqueKeys,
    check_constraints: crate::sink::postgres::CheckConstraints,
    /// The table has a unique key in place for the load (see
    /// [`Shared::commit_in_order`]).
    keys_in_place: bool,
    /// `--on-conflict-do-nothing` may take the staged path (see [`stage`]):
    /// a key is in place, and the role may stage rows (see
    /// [`PgSession::may_stage_rows_of`]).
    stageable: bool,
    /// `--on-conflict-do-update`'s staged path, planned by the server
    /// (see [`replace::prepare`]).
    replacing: Option<stage::Staging>,
    /// The inputs to load when earlier jobs loaded some in full (see
    /// [`loaded_before`]); `None`: all of them.
    kept_sources: Option<Vec<Source>>,
    /// See [`Inputs::goes_on_from`].
    goes_on_from: Option<(String, String)>,
}

/// Everything before the copy, on the control session: the table and
/// columns, the copy format, the job opened (its first steps taken), and
/// the rejects earlier runs committed written out. It can run again from
/// its start as the same command run again would (see [`retry`]).
fn prepare(
    req: &LoadRequest,
    progress: &Progress,
    control: &PgSession,
    sources: &[Source],
    format: &FormatOptions,
) -> Result<Prepared, Failed> {
    if format.kind != FormatKind::Jsonl {
        headers::refuse_a_separator_line(sources)?;
    }
    let table = resolve_or_sketch(control, req, sources, format)?;
    let unique_keys = control.unique_keys(table.oid)?;
    let check_constraints = control.check_constraints(table.oid)?;
    let nothing_to_skip = req.on_conflict_do_nothing && !control.holds_unique_keys(table.oid)?;
    refuse_the_ledger(req, &table)?;
    refuse_table_flags_on_a_view(req, &table)?;
    foreign::refuse_without_consent(req.at_least_once, &table)?;
    refuse_row_level_security(control, &table)?;
    let rejects_path = req.rejects.clone().unwrap_or_else(|| PathBuf::from(format!("{}.rejects.jsonl", table.name)));
    crate::report::ensure_writable_or_stream(&rejects_path, "rejects", "--rejects")?;
    let (given, mut picks) =
        plan::fields_left_out(req.columns.as_deref(), (format.kind, format.header), req.skip_other_fields)?;
    let arrays_read = (format.kind == FormatKind::Jsonl).then(|| arrays_of_rows(sources, &table, req)).flatten();
    let sources = arrays_read.as_deref().unwrap_or(sources);
    // The first input's head, read once for the documents' keys and the
    // advice for a document that holds the rows (`--documents-at`).
    let jsonl_head = (format.kind == FormatKind::Jsonl).then(|| first_look::first_head(sources));
    let one_document = jsonl_head.as_ref().and_then(|(name, head)| documents_at_advice((name, head), format));
    let documents = match &jsonl_head {
        Some(head) => match documents_into_columns(req, head, &table, format, sources)
            .map_err(|e| documents_at_advised(e, one_document.as_deref()))?
        {
            Some(mut columns) => {
                defaults::apply(control, &table, &mut columns)?;
                let conversions = plan::conversions(&table.copy_columns(Some(&columns.columns)), format);
                columns.conversions = conversions.into_iter().map(|c| c.map(|(conversion, _)| conversion)).collect();
                Some(format.reading_documents(columns))
            }
            None => None,
        },
        None => None,
    };
    let format = documents.as_ref().unwrap_or(format);
    let (header_columns, without_header) = match given {
        Some(_) => (None, Vec::new()),
        None if req.skip_other_fields && format.documents.is_none() && format.kind != FormatKind::Jsonl => {
            let (names, kept, without) = headers::fields_the_headers_name(sources, format, req, &table)?;
            picks = Some(kept);
            (Some(names), without)
        }
        None => headers::names_in_headers(sources, format, req, &table)?,
    };
    let header_columns = header_columns.filter(|(_, names)| !plan::in_table_order(&table, names));
    let columns = match (&header_columns, &format.documents) {
        (Some((_, names)), _) => Some(names.clone()),
        (None, Some(documents)) => Some(documents.columns.clone()),
        (None, None) => choose_columns(&table, given.as_deref(), format.kind)?,
    };
    if picks.is_none() {
        headers::refuse_a_header_taken_for_a_row(sources, format, req, &table, columns.as_deref())?;
    }
    if let Some(given) = columns.as_deref().filter(|_| given.is_some()) {
        headers::refuse_columns_a_header_reorders(sources, format, req, &table, given)?;
    }
    let without_header = match given {
        Some(_) => headers::first_records_that_are_not_the_header(sources, format, req, &table)?,
        None => without_header,
    };
    let marked = (!without_header.is_empty()).then(|| headers::marked_without_header(sources, &without_header));
    let sources = marked.as_deref().unwrap_or(sources);
    plan::refuse_required_left_out(control, &table, columns.as_deref())?;
    plan::refuse_without_rights(control, &table, columns.as_deref(), req.truncate)?;
    let conversions = match format.documents {
        None => plan::conversions(&table.copy_columns(columns.as_deref()), format),
        Some(_) => Vec::new(),
    };
    if !conversions.is_empty() {
        picks = Some(picks.unwrap_or_else(|| FieldPicks::all(conversions.len())).converting(conversions));
    }
    let format =
        &FormatOptions { picks: picks.map(Arc::new), ..plan::resolve_forced(&table, columns.as_deref(), format)? };
    let (format, unconverted) = first_look::settle_time_units(sources, format)?;
    let format = &format;
    let copy_plan = plan::choose_copy_format(req.copy_format, &table, columns.as_deref(), format)?;
    let replacing = match &req.on_conflict_do_update {
        Some(asked) => Some(replace::prepare(control, req, &table, columns.as_deref(), (format, &copy_plan), asked)?),
        None => None,
    };
    let fields = format.picks.as_ref().map_or_else(|| table.copy_columns(columns.as_deref()).len(), |p| p.fields());
    let shape = format.record_shape(fields);
    let all_sources = sources;
    ensure_tables(control)?;
    let Inputs { kept: kept_sources, said: mut left_out, mut goes_on_from } =
        inputs_to_load(control, (req, progress), (&table, format, shape), sources)?;
    let kept_sources = match job::sizes_the_job_began_with(
        control,
        req,
        (&table, format),
        kept_sources.as_deref().unwrap_or(sources),
    )? {
        Some((capped, said)) => {
            left_out.extend(said);
            // The rest of the files is still to load.
            goes_on_from = None;
            Some(capped)
        }
        None => kept_sources,
    };
    let sources = kept_sources.as_deref().unwrap_or(sources);
    let wanted = defer::TablePlan {
        // The key must stay for ON CONFLICT (see `replace`).
        defer: if replacing.is_some() { DeferIndexes::No } else { req.defer_indexes },
        truncate: req.truncate,
        unlogged: req.unlogged,
        read_once: any_read_once(sources),
    };
    let mut job = open_job(control, req, &table, format, sources, wanted, shape)?;
    let mut early_warnings: Vec<String> = in_the_ledger_schema(&table).into_iter().collect();
    early_warnings.extend(left_out);
    early_warnings.extend(plan::format_by_content_said(req.format, all_sources));
    early_warnings.extend(encoding_by_mark_said(req.options.encoding.as_deref(), all_sources));
    early_warnings.extend(hidden_left_out_said(all_sources));
    early_warnings.extend(json_values_said(all_sources, format));
    early_warnings.extend(record_taken_for_the_header(control, all_sources, format, &table));
    // Loaded whole, such a document is one row.
    early_warnings.extend(
        one_document
            .filter(|_| format.documents.is_none())
            .map(|advice| format!("{advice} (loaded whole, it is one row)")),
    );
    early_warnings.extend(foreign::batch_advice(&table, control.server_version()));
    early_warnings.extend(job.others.said(&table));
    early_warnings.extend(job.started_over.clone());
    // Not for a job that dropped the table's keys itself: it builds them
    // again before it ends.
    if nothing_to_skip && job.steps.is_empty() {
        early_warnings.push(format!(
            "--on-conflict-do-nothing: {} has no unique key or exclusion constraint, so no record conflicts with \
             another and none is skipped",
            table.display()
        ));
    }
    // Documents become text-format lines on the client, escaped as needed.
    early_warnings.extend(first_look::odd_escapes_warning(sources, format).filter(|_| format.documents.is_none()));
    early_warnings.extend(documents_said(req, &table, format));
    early_warnings.extend(fields_said(format, &unconverted, header_columns.as_ref()));
    let mut defer_plan = std::mem::take(&mut job.defer_plan);
    if replacing.is_some() && defer_plan.steps.is_empty() {
        defer_plan.why_not = Some("--on-conflict-do-update: the key stays in place for ON CONFLICT".into());
    }
    if let Some(why) =
        defer_plan.why_not.as_ref().filter(|_| req.defer_indexes == DeferIndexes::Yes && job.steps.is_empty())
    {
        early_warnings.push(format!("--defer-indexes: nothing was deferred: {why}"));
    }
    early_warnings.extend(defer_plan.kept.iter().cloned());
    let deferral = defer::deferral(&job.steps, defer_plan);
    let before_copy = |error: Error| Failed { error, partial: None, left_undone: deferral.left_undone() };
    if defer::recover_unlogged(control, &job.job, &table.quoted()).map_err(before_copy)? {
        early_warnings.push(format!(
            "{} was unlogged for job {} and the server restarted meanwhile (a crash empties unlogged \
             tables): it was emptied and every chunk is loaded again",
            table.display(),
            job.job
        ));
        job.done.clear();
    }
    let server_is_local = control.server_is_local().map_err(before_copy)?;
    let keys_in_place = control.holds_unique_keys(table.oid).map_err(before_copy)?;
    let stageable =
        req.on_conflict_do_nothing && keys_in_place && control.may_stage_rows_of(table.oid).map_err(before_copy)?;
    let auto_ceiling = auto_ceiling(server_is_local, req);
    // The file holds the job's rejects so far at every moment, earlier runs'
    // included (it is rewritten in input order when the job finishes).
    let mut rejects = RejectsFile::new(&rejects_path);
    if nothing_done(&job.done) {
        rejects = rejects.keeping_other_loads(sources.iter().map(|s| s.name.to_string()).collect());
    }
    if job.done.values().any(|chunk| chunk.rejected > 0) {
        write_committed_rejects(control, &job.job, &mut rejects).map_err(before_copy)?;
    }
    Ok(Prepared {
        table,
        columns,
        format: format.clone(),
        copy_plan,
        shape,
        job,
        early_warnings,
        deferral,
        auto_ceiling,
        server_is_local,
        rejects,
        unique_keys,
        check_constraints,
        keys_in_place,
        stageable,
        replacing,
        kept_sources: kept_sources.or(marked).or(arrays_read),
        goes_on_from,
    })
}

/// The target table; for one that does not exist, the error carries a
/// `CREATE TABLE` sketched from the first input (see [`sketch`]).
fn resolve_or_sketch(
    control: &PgSession,
    req: &LoadRequest,
    sources: &[Source],
    format: &FormatOptions,
) -> Result<TableInfo, Error> {
    control.resolve_table(&req.table).map_err(|e| match e {
        Error::NoSuchTable(mut missing) => {
            let (input, head) = first_look::first_head(sources);
            let order = control.date_order();
            let across = first_look::across(sources, &input);
            let columns = req.columns.as_deref();
            let across = (&across.0[..], across.1);
            missing.sketch = sketch::create_table(&req.table, format, columns, (&input, &head), order, across);
            if let Some(advice) = documents_at_advice((&input, &head), format) {
                // A sketch ends with its statement's semicolon.
                missing.sketch =
                    Some(missing.sketch.take().map_or(advice.clone(), |sketch| format!("{sketch} {advice}")));
            }
            Error::NoSuchTable(missing)
        }
        other => other,
    })
}

/// Which keys of the JSON documents load into which columns, and which
/// are left out, said at the start when `--columns` did not say it.
fn documents_said(req: &LoadRequest, table: &TableInfo, format: &FormatOptions) -> Vec<String> {
    let Some(documents) = format.documents.as_ref().filter(|d| req.columns.is_none() && !d.no_documents) else {
        return Vec::new();
    };
    let each = documents.columns.iter().zip(&documents.keys);
    let pairs: Vec<String> =
        each.map(|(column, key)| if column == key { key.clone() } else { format!("{key} as {column}") }).collect();
    let mut said = vec![format!(
        "loading each JSON document's keys into the columns of the same names, as the first documents have them: {}",
        pairs.join(", ")
    )];
    if !documents.keys_left_out.is_empty() {
        let keys: Vec<String> =
            documents.keys_left_out.iter().map(|(key, line)| format!("\"{key}\" (from line {line})")).collect();
        said.push(format!(
            "leaving out the documents' keys that name no column of {}, as --skip-other-fields asks: {}",
            table.display(),
            keys.join(", ")
        ));
    }
    said
}

/// How the records' fields are read, said at the start: the values
/// converted (and those not), the fields left out, and the columns a
/// header names in another order.
fn fields_said(
    format: &FormatOptions,
    unconverted: &[String],
    header_columns: Option<&(Arc<str>, Vec<String>)>,
) -> Vec<String> {
    let converted: Vec<(Conversion, String)> = match (&format.picks, &format.documents) {
        (Some(picks), _) => picks.conversions().cloned().collect(),
        (None, Some(documents)) => (documents.conversions.iter().zip(&documents.columns))
            .filter_map(|(c, name)| c.map(|c| (c, name.clone())))
            .collect(),
        (None, None) => Vec::new(),
    };
    let mut said = plan::conversions_said(&converted, unconverted, format);
    if let Some(picks) = format.picks.as_ref().filter(|picks| picks.leave_some_out()) {
        let left_out = picks.left_out();
        let fields = if left_out.len() == 1 { "field" } else { "fields" };
        said.push(format!("leaving out {fields} {} of each record, as asked", headers::field_list(&left_out)));
    }
    if let Some((source, names)) = header_columns {
        said.push(format!("loading the columns the header of {source} names, in its order: {}", names.join(", ")));
    }
    said
}

/// The inputs this run loads (`None`: all of them, as given), and what the
/// summary says of the others: those earlier jobs loaded in full are left
/// out (refused when none is left), those they loaded the first part of
/// load from where it ends (see [`loaded_before`]), and of the rest, an
/// unfinished job's inputs are resumed first (see
/// [`job::unfinished_job_to_resume_first`]).
fn inputs_to_load(
    control: &PgSession,
    (req, progress): (&LoadRequest, &Progress),
    (table, format, shape): (&TableInfo, &FormatOptions, Option<RecordShape>),
    sources: &[Source],
) -> Result<Inputs, Error> {
    let named = job::name(req, table, format, sources);
    let (_, fingerprint) = job::chunking_and_fingerprint(req, table, format, sources, shape);
    let job = (named.as_str(), req.job.is_none().then_some(fingerprint.as_str()));
    let found = loaded_before::find(control, (req, job, progress), table, &as_chunked(sources, format, req))?;
    let mut said = loaded_before::said(&found.left_out, sources, table, req.on_conflict_do_update.is_some());
    said.extend(found.grown.iter().map(|(before, start)| loaded_before::grown_said(before, *start, sources, table)));
    said.extend(
        found.replaced.iter().map(|r| loaded_before::replaced_said(&r.before, sources, table, found.none_twice)),
    );
    let left_out: HashSet<usize> = found.left_out.iter().map(|l| l.input).collect();
    let start_of = |i: usize| found.grown.iter().find(|(before, _)| before.input == i).map(|(_, start)| *start);
    let kept: Vec<Source> = (sources.iter().enumerate())
        .filter(|(i, _)| !left_out.contains(i))
        .map(|(i, s)| match start_of(i) {
            Some(start) => s.clone().starting_at(start),
            None => s.clone(),
        })
        .collect();
    let mut goes_on_from = found.named_job_among.then(|| (named.clone(), fingerprint.clone()));
    if kept.is_empty() {
        if let Some((named, fingerprint)) = &goes_on_from {
            crate::ledger::take_fingerprint(control, named, fingerprint)?;
        }
        return Err(Error::NothingNew(said.join("; ")));
    }
    let first = match job::unfinished_job_to_resume_first(control, req, (table, format), &kept)? {
        None => job::renamed_job_to_resume_first(control, req, (table, format), &kept)?,
        first => first,
    };
    let kept = match first {
        Some((inputs, resuming)) => {
            said.push(resuming);
            // This run loads another job's inputs, not the rest of these.
            goes_on_from = None;
            Some(inputs)
        }
        None if found.left_out.is_empty() && found.grown.is_empty() && found.replaced.is_empty() => None,
        None => Some(named_after_a_finished_job(control, req, (table, format, shape), kept)?),
    };
    Ok(Inputs { kept, said, goes_on_from })
}

/// `kept`, some of the command's inputs (or all, written anew since its
/// job loaded them: a file of each night's rows under one name), named
/// after the job they would name when it finished on other inputs, or
/// after the one named after it, and so on: a glob `app.log*` run after a
/// rotation left out `app.log.1`, and loaded the new `app.log` as the job
/// that had loaded the old one, which refused it as changed (`pass
/// --restart`), at each run. So was a log loaded hourly from where its
/// jobs ended, whose new file reached the same byte as the old one had
/// (fixed-width lines): the same job as that one's. Loaded before decided
/// that those inputs are not what that job loaded (see [`loaded_before`]).
fn named_after_a_finished_job(
    control: &PgSession,
    req: &LoadRequest,
    (table, format, shape): (&TableInfo, &FormatOptions, Option<RecordShape>),
    mut kept: Vec<Source>,
) -> Result<Vec<Source>, Error> {
    // One step a file written anew: the job named after the one that
    // loaded the first has finished on the second when the third comes. A
    // job named with --job keeps its name.
    while req.job.is_none() {
        let named = job::name(req, table, format, &kept);
        let (_, fingerprint) = job::chunking_and_fingerprint(req, table, format, &kept, shape);
        if !crate::ledger::finished_on_other_inputs(control, &named, &fingerprint)? {
            break;
        }
        kept = kept.into_iter().map(|s| s.after_job(&named)).collect();
    }
    Ok(kept)
}

/// The inputs a run loads, and why (see [`inputs_to_load`]).
struct Inputs {
    /// `None`: all of them, as given.
    kept: Option<Vec<Source>>,
    /// What the summary says of the others.
    said: Vec<String>,
    /// The command's own finished job, which the inputs go on from, and the
    /// fingerprint it takes when they are loaded (see [`ledger::finish`]).
    goes_on_from: Option<(String, String)>,
}

/// The inputs as the chunker reads them: JSON lines read into columns are
/// cut as the lines made of them, whose bytes the ledger's chunks hold.
fn as_chunked(sources: &[Source], format: &FormatOptions, req: &LoadRequest) -> Vec<Source> {
    let documents = format.documents.clone().map(|columns| (columns, req.max_record_size));
    sources.iter().map(|s| Source { documents: documents.clone(), ..s.clone() }).collect()
}

/// For JSON lines whose keys go into columns: which key goes where, from
/// `--columns` or the first documents (see [`plan::document_columns`]);
/// `None` for documents loaded whole into one column.
fn documents_into_columns(
    req: &LoadRequest,
    (name, head): &(Arc<str>, Vec<u8>),
    table: &TableInfo,
    format: &FormatOptions,
    sources: &[Source],
) -> Result<Option<documents::DocumentColumns>, Error> {
    if plan::whole_documents(table, req.columns.as_deref(), || head) {
        return Ok(None);
    }
    if format.header {
        return Err(Error::Usage(
            "--header: JSON lines have no header line; the columns come from the documents' keys, or from --columns"
                .into(),
        ));
    }
    // Read only when --columns names a key the head's documents lack.
    let across = || first_look::across(sources, name).0;
    let given = (req.columns.as_deref(), req.skip_other_fields);
    plan::document_columns(table, given, (name, head), across).map(Some)
}

/// The most workers `--workers auto` may use: `--max-workers`, else the
/// CPU count for a server on this machine (see `pace`), else
/// [`MAX_AUTO_WORKERS`].
fn auto_ceiling(server_is_local: bool, req: &LoadRequest) -> usize {
    match (req.max_workers, server_is_local) {
        (Some(max), _) => max.max(1),
        (None, true) => default_workers().min(MAX_AUTO_WORKERS),
        (None, false) => MAX_AUTO_WORKERS,
    }
}

/// Whether every column of `table` has a binary encoder (`--copy-format
/// binary` would be accepted).
pub fn binary_possible(table: &TableInfo, format: &FormatOptions) -> bool {
    matches!(plan::choose_copy_format(CopyFormat::Binary, table, None, format), Ok(Ok(_)))
}

/// After the copy: loads again any chunk the ledger does not hold as
/// committed (a server crash undoes the last asynchronous commits: the
/// workers saw them succeed, the ledger lost them with their rows), then
/// builds the deferred indexes and constraints, loading again the chunks
/// whose rows violated a key or constraint (see [`defer`]), until all is
/// committed and built.
fn complete_job(
    shared: &mut Shared,
    req: &LoadRequest,
    rejects: &mut RejectsFile,
    mut outcome: PipelineResult,
    deferral: &mut Deferral,
    deferred: bool,
    control: &mut Option<PgSession>,
) -> PipelineResult {
    let mut rebuilt = defer::Rebuilt::default();
    let rebuild_waits = waits::WaitSampler::default();
    let (mut passes, mut lost) = (0, 0);
    while outcome.2.is_none() && !shared.interrupted() {
        let total: u64 = outcome.1.iter().map(|s| s.chunks).sum();
        let relation = shared.table.quoted();
        // Chunks reloaded because they went missing, apart from those a
        // restart emptied from an unlogged table or another process reopened.
        let mut missing_now = 0;
        let completion = reconnecting(shared.target, req, shared.progress).run(control, |control| {
            ledger::hold_presence(control, &shared.job)?;
            let missing = ledger::missing_chunks(control, &shared.job, total)?;
            missing_now = missing.len() as u64;
            if !missing.is_empty() || !deferred {
                return Ok(match missing.is_empty() {
                    true => defer::Completion::Complete,
                    false => defer::Completion::Reload(missing),
                });
            }
            // Not under --limit: `sluice status` shows the share of the
            // whole input its records took.
            if req.limit.is_none() {
                ledger::record_every_chunk_loaded(control, &shared.job)?;
            }
            let pending: Vec<_> = ledger::steps(control, &shared.job)?.into_iter().filter(|s| !s.rebuilt).collect();
            let objects = pending.iter().filter(|s| !defer::is_unlogged_step(s)).count();
            shared.progress.set_building(objects as u64, pending.len() > objects);
            let (job, sessions) = ((shared.job.as_str(), relation.as_str()), shared.workers(req));
            let completion = defer::complete(control, shared.target, job, sessions, &mut rebuilt, &rebuild_waits);
            shared.progress.set_building(0, false);
            completion
        });
        let (chunks, one_at_a_time) = match completion {
            Ok(defer::Completion::Complete) => {
                (deferral.still_dropped, deferral.still_unlogged) = (Vec::new(), false);
                break;
            }
            Ok(defer::Completion::Reload(chunks)) => {
                lost += missing_now;
                (chunks, false)
            }
            Ok(defer::Completion::Violated { chunks, in_order }) => (chunks, in_order),
            Err(e) => {
                outcome.2 = Some(e);
                break;
            }
        };
        if passes == 5 {
            outcome.2 = Some(Error::Database(format!(
                "job {}: chunks kept being reopened (lost by server crashes, or violating deferred keys); \
                 run the same command again to finish",
                shared.job
            )));
        } else if any_read_once(shared.sources) {
            outcome.2 = Some(Error::Database(format!(
                "job {}: {} must be loaded again (lost by a server crash, or reopened by another run of the \
                 job), and stdin or a pipe cannot be read twice; run the same command again with the same data \
                 to load them",
                shared.job,
                count_of(chunks.len() as u64, "chunk")
            )));
        } else {
            passes += 1;
            shared.redone += chunks.len() as u64;
            shared.redo = Some(chunks.into_iter().collect());
            shared.one_at_a_time = one_at_a_time;
            // The first pass loaded rows: a pass that loads chunks again never stops so.
            shared.leading = leading::LeadingRejects::new(false);
            let again = run_pipeline(shared, req, rejects);
            outcome = merge_reload(shared, outcome, again);
            (shared.redo, shared.one_at_a_time) = (None, false);
        }
    }
    if lost > 0 {
        shared.early_warnings.push(lost_chunks_said(lost));
    }
    if rebuilt.restarted {
        shared.early_warnings.push(format!(
            "{} was unlogged for the load and the server restarted meanwhile (a crash empties unlogged tables): \
             it was emptied and every chunk loaded again",
            shared.table.display()
        ));
    }
    let built_now = |name: &str| rebuilt.built.iter().any(|(built, _)| built == name);
    deferral.still_dropped.retain(|name| !built_now(name));
    deferral.still_unlogged &= !built_now(defer::UNLOGGED_STEP);
    deferral.built = rebuilt.built.into_iter().map(|(name, seconds)| BuiltObject { name, seconds }).collect();
    deferral.rebuild_seconds = rebuilt.seconds;
    deferral.reloaded_chunks = rebuilt.reloaded.len() as u64;
    deferral.rebuild_waits = rebuild_waits.summary(waits::Work::IndexBuilds);
    outcome
}

/// What the summary says when chunks the job had committed were missing
/// from the ledger at the copy's end, their rows gone with them, and were
/// loaded again: before, it read like any other load's.
fn lost_chunks_said(chunks: u64) -> String {
    format!(
        "{} the job had committed {} missing from the ledger at the end of the copy, their rows gone with them, \
         and {} loaded again: another load emptied the table meanwhile (--truncate), or the server lost the last \
         commits in a crash",
        count_of(chunks, "chunk"),
        if chunks == 1 { "was" } else { "were" },
        if chunks == 1 { "was" } else { "were" },
    )
}

/// The first pass's results with the reloaded chunks' records replaced by
/// the second pass's. A reloaded chunk that an earlier run had committed no
/// longer counts as resumed.
fn merge_reload(shared: &Shared, first: PipelineResult, again: PipelineResult) -> PipelineResult {
    let (mut records, mut scans, failure, elsewhere) = first;
    let redo = shared.redo.as_ref().expect("a reload pass has chunks to redo");
    records.retain(|r| !redo.contains(&r.seq));
    for record in &again.0 {
        let Some(done) = shared.done.get(&record.seq) else { continue };
        let source = shared.sources.iter().position(|s| *s.name == *record.file);
        if let Some(scan) = source.and_then(|i| scans.get_mut(i)) {
            scan.resumed_chunks -= 1;
            scan.resumed_rows -= done.rows;
            scan.resumed_rejected -= done.rejected;
            scan.resumed_suppressed -= done.suppressed;
            scan.resumed_skipped -= done.skipped;
            scan.resumed_replaced -= done.replaced;
        }
    }
    records.extend(again.0);
    records.sort_by_key(|r| r.seq);
    (records, scans, failure.or(again.2), elsewhere + again.3)
}

/// A job as the load found it.
struct OpenedJob {
    job: String,
    /// Chunks committed by earlier runs.
    done: HashMap<u64, Done>,
    defer_plan: defer::DeferPlan,
    fingerprint: String,
    /// Sizes or times changed since the job began ([`Opened::Changed`]).
    inputs_changed: bool,
    /// What the job dropped or unlogged, as the ledger has it.
    steps: Vec<ledger::StepRow>,
    /// What this job did to other unfinished jobs into the table, or found.
    others: job::OtherJobs,
    /// What the summary says when the job started over ([`Opened::StartedOver`]).
    started_over: Option<String>,
}

/// How long a load waits at its start for the claims of its job that other
/// sessions hold (see [`ledger::wait_for_claims_held_elsewhere`]).
const CLAIMS_HELD_PATIENCE: Duration = Duration::from_secs(5);

/// How long `--restart` waits for the sessions of its job that a process
/// which just ended left to end (see [`job::refuse_to_restart_a_running_job`]):
/// a killed load's end within a quarter of a second, others' at once.
const SESSIONS_ENDING_PATIENCE: Duration = Duration::from_secs(2);

/// Opens the job (the ledger made by [`prepare`]): its name and the
/// chunks earlier runs committed. A finished job ends the load here.
fn open_job(
    control: &PgSession,
    req: &LoadRequest,
    table: &TableInfo,
    format: &FormatOptions,
    sources: &[Source],
    wanted: defer::TablePlan,
    shape: Option<RecordShape>,
) -> Result<OpenedJob, Failed> {
    let job = job::name(req, table, format, sources);
    job::refuse_to_restart_a_running_job(control, req, &job, SESSIONS_ENDING_PATIENCE)?;
    ledger::hold_presence(control, &job)?;
    ledger::wait_for_claims_held_elsewhere(control, &job, CLAIMS_HELD_PATIENCE)?;
    job::refuse_the_data_of_an_unfinished_job(control, req, &job, table, sources)?;
    // Planned by the process that runs the job's first steps, under its lock.
    let planned = std::cell::RefCell::new(None);
    let plan_deferred = || -> Result<Vec<ledger::DeferredStep>, Error> {
        let plan = defer::plan(control, table, wanted)?;
        let steps = plan.steps.clone();
        *planned.borrow_mut() = Some(plan);
        Ok(steps)
    };
    let first_steps: Vec<String> = req.truncate.then(|| format!("TRUNCATE {}", table.quoted())).into_iter().collect();
    let target_table = table.display();
    let dropped_elsewhere = || ledger::dropped_elsewhere(control, &job, &target_table, table.oid);
    let (dropped_before, rows_before) = match req.truncate {
        true => (dropped_elsewhere()?, ledger::others_with_rows(control, &job, &target_table, table.oid)?),
        false => Default::default(),
    };
    let emptied_while_running = ledger::running_now(control, rows_before.iter().map(|(other, _)| other.as_str()))?;
    let (chunking, fingerprint) = job::chunking_and_fingerprint(req, table, format, sources, shape);
    let spec = ledger::JobSpec {
        job: &job,
        table: &target_table,
        table_oid: table.oid,
        fingerprint: &fingerprint,
        chunking: &chunking,
        rereadable: !any_read_once(sources),
        restart: req.restart,
        command: req.command.as_deref(),
        skipped_lines: format.skip_lines,
        record_limit: req.limit,
        input_bytes: bytes_as_chunked(sources),
        input_sizes: &job::input_sizes(sources),
        first_steps: &first_steps,
        empties_table: req.truncate,
        plan_deferred: &plan_deferred,
    };
    let opened = ledger::open(control, &spec)?;
    let still_dropped = dropped_elsewhere()?;
    let running = ledger::running_now(control, still_dropped.iter().map(|d| d.job.as_str()))?;
    let adopted = dropped_before.into_iter().filter(|d| !still_dropped.iter().any(|s| s.job == d.job)).collect();
    let (emptied_while_running, started_over) =
        rows_before.into_iter().partition(|(other, _)| emptied_while_running.contains(other));
    let others = job::OtherJobs { adopted, still_dropped, running, started_over, emptied_while_running };
    // An unlogged table emptied by a crash is reloaded whole (see
    // `defer::recover_unlogged`), not refused.
    let steps = ledger::steps(control, &job)?;
    let unlogged_now = steps.iter().any(|s| defer::is_unlogged_step(s) && !s.rebuilt);
    if !unlogged_now {
        job::refuse_an_emptied_table(control, &job, table, job::rows_committed_before(&opened))?;
    }
    let defer_plan = planned.into_inner().unwrap_or_default();
    let mut started_over = None;
    let (done, inputs_changed) = match opened {
        Opened::Fresh => (HashMap::new(), false),
        Opened::StartedOver { rows, finished_at, emptied } => {
            let why = match emptied {
                true => ", and another job's --truncate emptied the table since:",
                false => " on other data than its inputs hold now; as --truncate emptied the table,",
            };
            started_over = Some(format!(
                "job {job} had finished ({} at {finished_at}){why} it started over",
                count_of(rows, "row")
            ));
            (HashMap::new(), false)
        }
        Opened::Resumed(done) => (done, false),
        Opened::Changed(done) => (done, true),
        // Whether stdin or a pipe holds the same data again can only be
        // told by reading it: such a finished job is resumed, and its chunks
        // are checked against the ledger as they are cut.
        Opened::Finished { .. } if any_read_once(sources) => (ledger::done_chunks(control, &job)?, false),
        Opened::Finished { rows, finished_at } => {
            let went_on = loaded_before::went_on_after(control, table, &job, sources)?;
            let rewritten = match ledger::rewritten_since_finished(control, &job)? {
                true => format!(
                    ". But {} was rewritten since (by TRUNCATE, VACUUM FULL, CLUSTER or ALTER TABLE): if a \
                     TRUNCATE emptied it, the job's rows are gone, and --restart loads them again",
                    table.display()
                ),
                false => String::new(),
            };
            let finished = crate::error::FinishedJob { job, rows, finished_at, went_on, rewritten };
            return Err(Error::AlreadyLoaded(Box::new(finished)).into());
        }
    };
    Ok(OpenedJob { job, done, defer_plan, steps, fingerprint, inputs_changed, others, started_over })
}

/// Before a job whose inputs changed size or time loads anything: finds
/// each chunk earlier runs committed in the inputs as they are now (same
/// place, same bytes), reading them up to the last such chunk. Checked only
/// as the load cuts its chunks, other data would be refused after the
/// chunks before the first difference had loaded. The read can take minutes
/// for a large input: the progress line shows it, and a Ctrl-C stops it.
fn check_committed_chunks(shared: &Shared, req: &LoadRequest) -> Result<(), Error> {
    shared.progress.set_checking(true);
    let checked = compare_committed_chunks(shared, req);
    shared.progress.set_checking(false);
    checked
}

fn compare_committed_chunks(shared: &Shared, req: &LoadRequest) -> Result<(), Error> {
    let Some(&last) = shared.done.keys().max() else { return Ok(()) };
    let (mut seq, mut block, mut left) = (0, Vec::new(), req.limit);
    for (index, source) in shared.sources.iter().enumerate() {
        if left == Some(0) {
            break;
        }
        let (mut chunker, opened) = chunker_for(shared, req, (index, source, left), seq, false, block)?;
        while let Some(chunk) = chunker.next_chunk().map_err(|e| source.read_error(&e, opened.raw.get()))? {
            let read = without_a_line_being_written(&mut chunker, chunk, source, &mut InputScan::default())?;
            let Some(chunk) = read else { continue };
            if let Some(done) = shared.done.get(&chunk.seq).filter(|done| !is_the_chunk_done(done, &chunk)) {
                return Err(not_the_input_of(&shared.job, source, &chunk, done));
            }
            if chunk.seq >= last {
                return Ok(());
            }
            if shared.interrupted() {
                return Err(Error::Interrupted { chunks: 0, rows: 0 });
            }
            shared.progress.chunk_checked(chunk.source_span);
        }
        seq = chunker.next_seq();
        left = left.map(|left| left.saturating_sub(chunker.totals().0));
        block = chunker.into_block();
    }
    Ok(())
}

/// After the pipeline: an interrupted load says so, a complete one marks
/// its job finished, and either way the report accounts for what committed.
fn conclude(
    shared: &Shared,
    req: &LoadRequest,
    (mut records, scans, mut failure, elsewhere): PipelineResult,
    rejects: &mut RejectsFile,
    started_unix_ms: u128,
    deferral: Deferral,
    control: &mut Option<PgSession>,
) -> Result<LoadReport, Failed> {
    let mut warnings = shared.early_warnings.clone();
    if !shared.done.is_empty() {
        warnings.push(format!(
            "resumed job {}: {} committed by earlier runs",
            shared.job,
            count_of(shared.done.len() as u64, "chunk")
        ));
    }
    warnings.extend(refused_warning(shared));
    warnings.extend(ended_in_skipped_lines(shared, &scans));
    warnings.extend(stopped_at_the_limit(shared, req, &scans));
    // Not of the files after the one --limit stopped in: none of their
    // records was read.
    let read = stopped_in(&scans).map_or(shared.sources.len(), |(index, _)| index + 1);
    warnings.extend(headers::without_header_said(&shared.sources[..read]));
    match &failure {
        // The stop's message gives the advice; the chunks the hints counted
        // go back to pending.
        Some(Error::NothingLoads { .. }) => {
            warnings.extend(reopen_what_loaded_nothing(shared, req, control, &mut records, rejects))
        }
        _ => {
            warnings.extend(all_rejected_warning(shared));
            warnings.extend(hints::warnings(shared))
        }
    }
    warnings.extend(shared.blockers.warnings());
    warnings.extend(contention_warnings(shared, req));
    let interrupted_here = match &failure {
        None => shared.interrupted(),
        Some(e) => made_by_ctrl_c(e, shared.interrupt.as_deref(), shared.blockers),
    };
    let interrupted = |records: &[ChunkRecord]| Error::Interrupted {
        chunks: records.len() as u64,
        rows: records.iter().map(|r| r.rows).sum(),
    };
    if interrupted_here {
        failure = Some(interrupted(&records));
    }
    let mut analysis = None;
    if failure.is_none() {
        let (said, closed) = close_job(shared, req, (&records, &scans, elsewhere), rejects, started_unix_ms, control);
        warnings.extend(said);
        match closed {
            Ok(done) => analysis = done,
            Err(Error::Interrupted { .. }) => {
                warnings.push(ANALYZE_INTERRUPTED.to_string());
                failure = Some(interrupted(&records));
            }
            Err(e) => failure = Some(e),
        }
    }
    warnings.extend(analysis.as_ref().filter(|a| !a.done).map(|a| a.why.clone()));
    let mut report = build_report(shared, req, records, scans, started_unix_ms, failure.is_none());
    report.summary.deferred = deferral;
    report.summary.analysis = analysis;
    warnings.extend(shared.target.server_notices());
    report.warnings.splice(0..0, warnings);
    report.summary.job = shared.job.clone();
    report.summary.chunks_by_others = elsewhere;
    report.warnings.extend(shared_while_replacing(shared, control.as_ref(), started_unix_ms));
    if let Some((kept, of)) = rejects.kept_aside() {
        report.warnings.push(format!(
            "{} held the rejects of another load (of {of}): it was moved to {}, so that this load's did not replace \
             them",
            rejects.path().display(),
            kept.display()
        ));
    }
    if rejects.written() > 0 {
        report.summary.rejects_file = Some(rejects.path().display().to_string());
        report.summary.rejects_in_file = rejects.written();
        report.summary.reject_reasons = rejects.reasons().summed_up();
    }
    let stopped_by = failure.as_ref().filter(|e| !matches!(e, Error::Interrupted { .. }));
    if let (Some(error), Some(session)) = (stopped_by, control.as_ref()) {
        // Best effort: the error may be the session's own end. A Ctrl-C is
        // no cause to fix: the command resumes the job as it is.
        let _ = ledger::record_stop(session, &shared.job, &shared.target.redacted(&error.to_string()));
    }
    match failure {
        Some(error) => Err(Failed { error, partial: Some(Box::new(report)), left_undone: Vec::new() }),
        None => Ok(report),
    }
}

/// The job's end, once its chunks are loaded: each sequence moved past the
/// values the load gave its column, then the job marked finished (see
/// [`finish_job`]), in that order, so that a run that stops between the two
/// does the first again. What it said, and the analysis or what stopped it.
fn close_job(
    shared: &Shared,
    req: &LoadRequest,
    (records, scans, elsewhere): (&[ChunkRecord], &[InputScan], u64),
    rejects: &mut RejectsFile,
    started_unix_ms: u128,
    control: &mut Option<PgSession>,
) -> (Vec<String>, Result<Option<Analysis>, Error>) {
    let rewrite = !shared.done.is_empty() || shared.redone > 0 || elsewhere > 0;
    let total = scans.iter().map(|s| s.chunks).sum();
    let catch_up = |control: &PgSession| sequences::catch_up(control, shared.table, &shared.copy_columns);
    let mut said = Vec::new();
    let job_rows = records.iter().map(|r| r.rows).chain(shared.done.values().map(|d| d.rows)).sum();
    let finish = |control: &PgSession| finish_job(control, shared, rejects, (rewrite, total), (req.analyze, job_rows));
    let closed = reconnecting(shared.target, req, shared.progress)
        .run(control, catch_up)
        .map(|caught_up| said.extend(caught_up))
        .and_then(|()| reconnecting(shared.target, req, shared.progress).run(control, finish));
    said.extend(left_by_an_earlier_load(rejects, started_unix_ms).filter(|_| !rewrite));
    (said, closed)
}

/// What sessions loading side by side did to each other: keys repeated
/// across chunks, chunks that gave way to an earlier load's lock, and
/// deferred constraints checked at each row after one refused a chunk.
fn contention_warnings(shared: &Shared, req: &LoadRequest) -> Vec<String> {
    let mut said = Vec::new();
    // Not with --on-conflict-do-nothing: keys the table holds are expected.
    if shared.keys_collide.load(Ordering::SeqCst)
        && shared.workers(req) > 1
        && !shared.skip_conflicts
        && !shared.replaces()
    {
        let how = match shared.keys_in_parallel() {
            true => {
                "workers loaded side by side, each chunk copying last the records whose keys an earlier chunk \
                 still loading had (sessions inserting the same key wait for each other's transactions)"
            }
            false => "workers took turns (sessions inserting the same key wait for each other's transactions)",
        };
        said.push(format!(
            "many records repeat a key: once a chunk (or the first records) had {KEY_COLLISIONS} duplicates, {how}; \
             removing the duplicates before the load, or loading into an empty table (keys deferred), is faster"
        ));
    }
    let gave_way = shared.gave_way.load(Ordering::SeqCst);
    if gave_way > 0 {
        said.push(format!(
            "{} loading alongside an earlier one held a lock that the earlier one waited for (a key both copy, \
             or a lock their rows take, as a trigger's): {} back and loaded again after it, so that each key's {} \
             line is the one kept",
            count_of(gave_way, "chunk"),
            if gave_way == 1 { "it rolled" } else { "each rolled" },
            if shared.replaces() { "last" } else { "first" }
        ));
    }
    for (constraint, refusal) in shared.checked_at_each_row.refused() {
        let (which, it) = match &constraint {
            Some(name) => (format!("constraint {name}"), "it"),
            None => ("every constraint".to_string(), "one"),
        };
        let rejected = match shared.skip_conflicts {
            true => "rejected (or skipped, for a key) at their lines",
            false => "rejected at their lines",
        };
        said.push(format!(
            "a constraint checked at commit (DEFERRABLE INITIALLY DEFERRED) refused a chunk, where the server names \
             no line ({refusal}): from then on each chunk checked {which} at each row (SET CONSTRAINTS ... \
             IMMEDIATE), so the records that break {it} were {rejected} (a row referring to one later in its chunk \
             may have been too)"
        ));
    }
    said
}

/// Marks the job finished once the rejects file is complete and in input
/// order: written in full, its runs put in order (workers commit chunks in
/// the order they finish them) and, when earlier runs or other processes
/// committed part of the job or chunks were loaded again, rewritten from the
/// database instead (to a name of this process, then renamed) so it holds
/// the whole job's rejects, exactly as committed. In that order, a kill at
/// any moment leaves either an unfinished job (the next run redoes the file)
/// or a complete file. A pipe or a terminal gets the rejects as they come.
/// The table is analyzed (`--analyze`) in the transaction that marks the
/// job finished, by the process that marks it first (the others would wait
/// for its lock to analyze it again): a kill meanwhile leaves the job
/// unfinished, and the run that finishes it analyzes the table.
fn finish_job(
    control: &PgSession,
    shared: &Shared,
    rejects: &mut RejectsFile,
    (rewrite, total): (bool, u64),
    (analyze_when, job_rows): (AnalyzeWhen, u64),
) -> Result<Option<Analysis>, Error> {
    rejects.flush().map_err(|e| rejects_file_error(rejects, &e))?;
    let rewrite = rejects.replaceable()
        && (rewrite || !rejects.put_in_input_order().map_err(|e| rejects_file_error(rejects, &e))?);
    if rewrite {
        rewrite_rejects_from_ledger(control, &shared.job, rejects)?;
    }
    let goes_on_from = shared.goes_on_from.as_ref().map(|(job, fingerprint)| (job.as_str(), fingerprint.as_str()));
    let analyze = || {
        shared.progress.set_analyzing(true);
        let analysis = analyze::after_load(control, shared.table, analyze_when, job_rows);
        shared.progress.set_analyzing(false);
        match analysis {
            // Rolls the mark back: the run that finishes the job analyzes.
            Ok(Some(analysis)) if !analysis.done && shared.interrupted() => {
                Err(Error::Interrupted { chunks: 0, rows: 0 })
            }
            analysis => analysis,
        }
    };
    Ok(ledger::finish(control, &shared.job, total, (&shared.fingerprint, goes_on_from), analyze)?.flatten())
}

/// For a job done in one run that rejected nothing: a file at the rejects
/// path written before the run began, which the user might take for this
/// load's rejects (the default path is the table's, whatever the input).
/// Said, not removed: it may be the only copy of another load's rejects.
fn left_by_an_earlier_load(rejects: &RejectsFile, started_unix_ms: u128) -> Option<String> {
    let path = rejects.path();
    let modified = std::fs::symlink_metadata(path).ok().filter(|m| m.is_file() && rejects.written() == 0)?.modified();
    let before = modified.ok()?.duration_since(UNIX_EPOCH).ok()?.as_millis() < started_unix_ms;
    before.then(|| {
        format!(
            "{} holds rejects of an earlier load (this one rejected nothing); it was left as it was",
            path.display()
        )
    })
}

/// Replaces the rejects file with the job's committed rejects (to a name of
/// this process, then renamed); removes it when there are none.
fn rewrite_rejects_from_ledger(control: &PgSession, job: &str, rejects: &mut RejectsFile) -> Result<(), Error> {
    let mut file = RejectsFile::new(&crate::rejects::partial_path(rejects.path())).kept_by(rejects);
    write_committed_rejects(control, job, &mut file)?;
    file.move_to(rejects.path()).map_err(|e| rejects_file_error(&file, &e))?;
    *rejects = file;
    Ok(())
}

/// After the stop for a load's first records (see [`leading`]), which says
/// that nothing was committed: the chunks committed meanwhile with every
/// record rejected, by this run or an earlier one, go back to pending (see
/// [`ledger::reopen_chunks_that_loaded_nothing`]) and out of the report,
/// and the rejects file this run wrote is written again from the ledger,
/// holding only what stays rejected (none: no file). The same command run
/// once the cause is fixed then loads their records. A warning when the
/// ledger could not be reached.
fn reopen_what_loaded_nothing(
    shared: &Shared,
    req: &LoadRequest,
    control: &mut Option<PgSession>,
    records: &mut Vec<ChunkRecord>,
    rejects: &mut RejectsFile,
) -> Option<String> {
    let this_run = records.iter().map(|r| (r.seq, r.rows + r.suppressed + r.skipped));
    let earlier = shared.done.iter().map(|(seq, d)| (*seq, d.rows + d.suppressed + d.skipped));
    let candidates: Vec<u64> = this_run.chain(earlier).filter(|&(_, took)| took == 0).map(|(seq, _)| seq).collect();
    if candidates.is_empty() {
        return None;
    }
    let rewrite = rejects.written() > 0 && rejects.replaceable();
    let reopen = |control: &PgSession| {
        let reopened = ledger::reopen_chunks_that_loaded_nothing(control, &shared.job, &candidates)?;
        if rewrite && !reopened.is_empty() {
            rewrite_rejects_from_ledger(control, &shared.job, rejects)?;
        }
        Ok::<_, Error>(reopened)
    };
    match reconnecting(shared.target, req, shared.progress).run(control, reopen) {
        Ok(reopened) => {
            records.retain(|r| !reopened.contains(&r.seq));
            None
        }
        Err(e) => Some(format!(
            "the chunks whose records were all rejected stay committed, their records rejected ({e}); once the \
             cause is fixed, load them from the rejects file (`sluice rejects {} | sluice load - ...`) with the \
             same options",
            rejects.path().display()
        )),
    }
}

/// Writes every reject `job` committed into `file`, in input order (one
/// run), a page at a time (see [`PgSession::each_row`]).
fn write_committed_rejects(control: &PgSession, job: &str, file: &mut RejectsFile) -> Result<(), Error> {
    control.each_row(&crate::rejects::select_for_job(job), |row| {
        file.write(&Reject::from_row(row)).map_err(|e| rejects_file_error(file, &e))
    })
}

/// Creates sluice's ledger and rejects tables when they are missing; a user
/// who may not create them can still load once they exist.
fn ensure_tables(control: &PgSession) -> Result<(), Error> {
    ledger::refuse_out_of_reach(control, ledger::LedgerUse::Load)?;
    for _ in 0..3 {
        if control.query(&ledger::schema_is_current_sql(), &[])?.first().and_then(|r| r[0].as_deref()) == Some("t") {
            return Ok(());
        }
        let has_schema = control.query("SELECT to_regnamespace('sluice') IS NOT NULL", &[])?;
        let mut ddl = match has_schema.first().and_then(|r| r[0].as_deref()) {
            Some("t") => vec![],
            _ => vec![ledger::CREATE_SCHEMA.to_string()],
        };
        ddl.extend([ledger::CREATE_TABLES.to_string(), crate::rejects::CREATE_TABLE.to_string()]);
        ddl.extend(control.query(&ledger::missing_columns_sql(), &[])?.into_iter().filter_map(|r| r[0].clone()));
        match control.execute_for_state(&ddl.join("; "))? {
            None => return Ok(()),
            // Another sluice created them at the same moment (or, adding
            // columns, deadlocked with one loading): check again.
            Some((state, _)) if ["23505", "42P06", "42P07", "40P01"].contains(&state.as_str()) => continue,
            Some((state, message)) if state == READ_ONLY => {
                return Err(Error::Server(format!("{message} [{state}]{READ_ONLY_ADVICE}")))
            }
            Some((state, message)) => return Err(cannot_create_the_ledger(control, &state, &message)),
        }
    }
    Err(Error::Server("the sluice tables kept changing while being created".into()))
}

/// What to ask of an administrator: a schema the loading role owns is all
/// it needs (it creates the tables in it on its next load).
fn cannot_create_the_ledger(control: &PgSession, state: &str, message: &str) -> Error {
    let who = control.query("SELECT current_user::text, current_database()::text", &[]).ok();
    let row = who.as_ref().and_then(|rows| rows.first());
    let [role, database] = [0, 1].map(|i| row.and_then(|r| r[i].clone()).unwrap_or_default());
    Error::Database(format!(
        "sluice keeps its ledger in schema \"sluice\" of the target database and cannot create it ({message} \
         [{state}]); ask someone who may to run CREATE SCHEMA sluice AUTHORIZATION {} in database {}, then load \
         again",
        quote_ident(&role),
        quote_ident(&database)
    ))
}

/// Reads every input as JSON values (see [`crate::format::json_values`])
/// when the first one is an array of documents or documents written over
/// several lines (read line by line, every line of it would be rejected),
/// or when `--documents-at` names the keys that lead to the documents.
fn read_json_values(sources: &mut [Source], documents_at: Option<&[String]>) {
    let values = match documents_at {
        Some(path) => Some(Arc::from(path)),
        None => {
            let (_, head) = first_look::first_head(sources);
            crate::format::json_values::are_json_values(&head).then(|| Arc::from([]))
        }
    };
    if let Some(path) = values {
        sources.iter_mut().for_each(|source| source.json_values = Some(Arc::clone(&path)));
    }
}

/// The inputs read as JSON values (see [`read_json_values`]) when each of
/// the first input's lines is an array of documents (batches, as some logs
/// write them) whose keys name the table's columns: their elements are the
/// rows, where each array would be one document for a json column.
fn arrays_of_rows(sources: &[Source], table: &TableInfo, req: &LoadRequest) -> Option<Vec<Source>> {
    if sources.first()?.json_values.is_some() {
        return None;
    }
    let (_, head) = first_look::first_head(sources);
    if !documents::arrays_in(&head) {
        return None;
    }
    let lines = crate::format::json_values::lines_of(&head);
    if plan::whole_documents(table, req.columns.as_deref(), || &lines) {
        return None;
    }
    Some(sources.iter().map(|s| Source { json_values: Some(Arc::from([])), ..s.clone() }).collect())
}

/// `error`, about the keys of the documents, with `--documents-at` advised
/// when the first input is one document that holds an array of objects (an
/// API response, GeoJSON): its keys are the wrapper's.
fn documents_at_advised(error: Error, advice: Option<&str>) -> Error {
    let Some(advice) = advice else { return error };
    match error {
        Error::Usage(message) => Error::Usage(format!("{message}. {advice}")),
        Error::Target(message) => Error::Target(format!("{message}. {advice}")),
        other => other,
    }
}

/// What `--documents-at` would load, when the first input (`name`, whose
/// start is `head`) is one JSON document holding an array of objects (an
/// API response, GeoJSON) and the flag is not given.
fn documents_at_advice((name, head): (&str, &[u8]), format: &FormatOptions) -> Option<String> {
    if format.kind != FormatKind::Jsonl || format.documents_at.is_some() {
        return None;
    }
    let path = crate::format::json_values::documents_array_in(head)?;
    Some(format!(
        "{name} holds one JSON document, whose \"{path}\" is an array of objects: to load each of them as a row, \
         pass --documents-at {path}"
    ))
}

/// What the load says when it reads JSON values: how rejects name a
/// document (its line where it begins, its record its number).
fn json_values_said(sources: &[Source], format: &FormatOptions) -> Option<String> {
    let first = sources.iter().find(|s| s.json_values.is_some())?;
    if let Some(path) = &format.documents_at {
        return Some(format!(
            "{}: reading each element of the array at \"{}\" of each top-level object as a row (the rest of the \
             object is left out): a reject's record is the document's number, its line and byte where it begins \
             in the file",
            first.name,
            path.join(".")
        ));
    }
    Some(format!(
        "{}: not JSON lines; reading each document of its JSON arrays (or each document written over several \
         lines) as a row: a reject's record is the document's number (jq '.[N-1]' shows the Nth of an array), \
         its line and byte where it begins in the file",
        first.name
    ))
}

/// Sets every input's transcoding from `--encoding`. Without it, an input
/// that begins with UTF-16's byte-order mark is read as UTF-16 (the mark
/// says which byte comes first), and one that only looks like UTF-16 (NUL
/// bytes at every other position) is refused with the flag that loads it.
fn apply_encoding(sources: &mut [Source], name: Option<String>) -> Result<(), Error> {
    let encoding = match &name {
        Some(name) => InputEncoding::from_name(name).map_err(Error::Usage)?,
        None => InputEncoding::Utf8,
    };
    for source in sources.iter_mut() {
        match (encoding, source.utf16) {
            // Read so, each character's two bytes would be swapped: CJK-looking
            // text without a line end, all of it one record (or one header).
            (InputEncoding::Transcode(t), Utf16Sign::Nuls { big_endian }) if t.is_utf16(!big_endian) => {
                return Err(source.input_error(&format!(
                    "its NUL bytes come {} in each pair, as in {}-endian UTF-16, and no byte-order mark says \
                     otherwise: load it with --encoding {}",
                    if big_endian { "first" } else { "second" },
                    if big_endian { "big" } else { "little" },
                    Utf16Sign::encoding_name(big_endian)
                )))
            }
            (InputEncoding::Transcode(t), _) => source.transcoding = Some(t),
            (InputEncoding::Utf8, Utf16Sign::Mark) if name.is_none() => source.transcoding = Some(Transcoding::UTF_16),
            (InputEncoding::Utf8, Utf16Sign::Nuls { big_endian }) if name.is_none() => {
                return Err(source.input_error(&format!(
                    "this looks like UTF-16 (NUL bytes at every other position), but no byte-order mark says so: \
                     load it with --encoding {}",
                    Utf16Sign::encoding_name(big_endian)
                )))
            }
            (InputEncoding::Utf8, _) => {}
        }
    }
    Ok(())
}

/// The warning for inputs read as UTF-16 by their byte-order mark (see
/// [`apply_encoding`]).
fn encoding_by_mark_said(given: Option<&str>, sources: &[Source]) -> Option<String> {
    let marked: Vec<&Source> = sources.iter().filter(|s| s.utf16 == Utf16Sign::Mark && given.is_none()).collect();
    let first = marked.first()?;
    let which = match marked.len() {
        1 => first.name.to_string(),
        n => format!("{n} files (the first: {})", first.name),
    };
    Some(format!("{which}: read as UTF-16, as the byte-order mark it begins with says; --encoding reads it otherwise"))
}

/// What the feeder learned about one input.
#[derive(Clone, Debug, Default)]
struct InputScan {
    preamble: Preamble,
    records: u64,
    /// `--limit`'s cap was reached in this input: the line after the last
    /// record read.
    stopped_at_line: Option<u64>,
    bytes: u64,
    chunks: u64,
    resumed_chunks: u64,
    resumed_rows: u64,
    resumed_rejected: u64,
    resumed_suppressed: u64,
    resumed_skipped: u64,
    resumed_replaced: u64,
    /// A plain file found grown past the end the load read it to (see
    /// [`note_growth`]).
    grown: Option<Grown>,
}

/// A plain file written on while it loaded: a log still being written, an
/// export still being copied in.
#[derive(Clone, Debug)]
struct Grown {
    /// Its size on disk when the load looked at it (where it reads it
    /// to), and once it read its end.
    then: u64,
    now: u64,
    /// The line the load read its end inside, left for the next run.
    line_left: Option<u64>,
}

/// Committed chunks, what the feeder saw, the first error, and the chunks
/// another process committed first.
type PipelineResult = (Vec<ChunkRecord>, Vec<InputScan>, Option<Error>, u64);

fn run_pipeline(shared: &Shared, req: &LoadRequest, rejects: &mut RejectsFile) -> PipelineResult {
    let workers = match shared.one_at_a_time {
        true => 1,
        false => shared.pace.as_ref().map_or(req.workers.max(1), pace::Pacer::max),
    };
    shared.fed_all.store(false, Ordering::SeqCst);
    let streamed = shared.sources.iter().any(|s| !s.is_positioned());
    // Streamed chunks hold their bytes: hand each batch straight to a free
    // worker (a rendezvous queue), so memory stays at about (workers + 2)
    // chunks: one batch being copied per worker, one being cut, and a batch
    // of small ones being gathered (a chunk, 4 MiB at most). Positioned
    // chunks are just locations, or a small file's bytes (see `KEPT_FILE`).
    let capacity = if streamed { 0 } else { workers * 4 };
    let (chunk_tx, chunk_rx) = bounded::<Vec<Chunk>>(capacity);
    let (event_tx, event_rx) = unbounded::<Event>();
    let (sampling, sampler_done) = bounded::<()>(0);
    thread::scope(|scope| {
        scope.spawn(move || shared.waits.run(shared.target, sampler_done, waits::Work::Loading));
        let feeder_events = event_tx.clone();
        let feeder = scope.spawn(move || {
            let scans = feed(shared, req, chunk_tx, feeder_events);
            shared.fed_all.store(true, Ordering::SeqCst);
            scans
        });
        for id in 0..workers {
            let (rx, tx) = (chunk_rx.clone(), event_tx.clone());
            scope.spawn(move || worker::run(id, shared, rx, tx));
        }
        drop((chunk_rx, event_tx));
        let mut records = Vec::new();
        let mut failure = None;
        let mut rejected = 0u64;
        let mut elsewhere = 0u64;
        for event in event_rx {
            let error = match event {
                Event::Committed(record, chunk_rejects) => {
                    if let Some(pace) = &shared.pace {
                        pace.committed(record.byte_len);
                    }
                    records.push(record);
                    rejected += chunk_rejects.len() as u64;
                    shared.rejected_committed.store(rejected, Ordering::SeqCst);
                    hints::note(shared, &chunk_rejects);
                    record_rejects(rejects, &chunk_rejects).err().or_else(|| {
                        over_limit(req, rejected, &chunk_rejects)
                            .or_else(|| shared.leading.reached().map(|first| first_records_rejected(shared, first)))
                    })
                }
                Event::Elsewhere => {
                    elsewhere += 1;
                    shared.leading.reached().map(|first| first_records_rejected(shared, first))
                }
                Event::Failed(err) => Some(err),
            };
            if let Some(err) = error {
                shared.stop.store(true, Ordering::SeqCst);
                failure.get_or_insert(err);
            }
        }
        drop(sampling);
        if let Err(e) = rejects.flush() {
            failure.get_or_insert(rejects_file_error(rejects, &e));
        }
        let scans = feeder.join().unwrap_or_default();
        records.sort_by_key(|r| r.seq);
        (records, scans, failure, elsewhere)
    })
}

/// Writes a committed chunk's rejects to the file.
fn record_rejects(file: &mut RejectsFile, rejects: &[Reject]) -> Result<(), Error> {
    file.write_all(rejects).map_err(|e| rejects_file_error(file, &e))
}

fn rejects_file_error(file: &RejectsFile, e: &std::io::Error) -> Error {
    Error::Input { file: file.path().display().to_string(), message: format!("cannot write rejects: {e}") }
}

/// The error that stops the load once more than `--max-errors` records
/// were rejected.
fn over_limit(req: &LoadRequest, rejected: u64, latest: &[Reject]) -> Option<Error> {
    let max = req.max_errors?;
    let last = latest.last()?;
    (rejected > max).then(|| Error::TooManyRejects { max, rejected, last: last.to_string() })
}

/// Records rejected first, in input order, after which a load without
/// `--max-errors` stops: a wrong delimiter or column list rejects every
/// record, and isolating each of them one by one would take hours on a big
/// file and copy it whole into the rejects file (a 300,000-line file with
/// the wrong delimiter took 20 s to reject; psql stops at its first line).
pub const ALL_REJECTED_STOP: u64 = 1_000;

/// Whether the job's earlier runs loaded nothing (a load resumed after
/// rows loaded never stops for its first rejects).
fn nothing_done(done: &HashMap<u64, Done>) -> bool {
    done.values().all(|d| d.rows + d.suppressed + d.skipped == 0)
}

/// The error that stops a load without `--max-errors` whose first
/// `rejected` records (at least [`ALL_REJECTED_STOP`]) were all rejected,
/// `first` the first of them. Decided in input order (see [`leading`]): by
/// isolation between its COPY statements, so that the stop does not wait
/// for whole chunks of rejects, or as chunks commit.
fn first_records_rejected(shared: &Shared, (rejected, first): leading::Reached) -> Error {
    if is_key_conflict(first.sqlstate.as_deref()) {
        return Error::NothingLoads {
            rejected,
            seems: LOADED_ALREADY,
            first: first.to_string(),
            advice: LOAD_ONLY_NEW_KEYS.into(),
        };
    }
    if hints::no_partition_takes(&first) {
        return Error::NothingLoads {
            rejected,
            seems: "as no partition of the table takes their keys",
            first: first.to_string(),
            advice: "Create the partitions they need (or a DEFAULT partition)".into(),
        };
    }
    if is_missing_right(first.sqlstate.as_deref()) {
        return Error::NothingLoads {
            rejected,
            seems: "for a right the role lacks, not for their values",
            first: first.to_string(),
            advice: format!("{MISSING_RIGHT}, then run the same command again"),
        };
    }
    Error::NothingLoads {
        rejected,
        seems: "which looks like a wrong option rather than bad data",
        first: first.to_string(),
        advice: hints::field_count_advice(shared, &first)
            .or_else(|| hints::first_reject_advice(shared, &first))
            .unwrap_or_else(|| "Check --format, --delimiter, --header, --columns and the table".into()),
    }
}

/// A load whose every record was rejected, too few for the stop (see
/// [`first_records_rejected`]), where the first has another number of
/// fields than COPY fills columns: the stop's advice, which a file of a few
/// hundred lines did not get (a file without the table's identity key
/// loaded its first field into the key, and the summary said only that
/// every record was rejected).
fn all_rejected_warning(shared: &Shared) -> Option<String> {
    let (rejected, first) = shared.leading.all_rejected()?;
    let all = match rejected {
        1 => "the only record was rejected".to_string(),
        n => format!("all {} records were rejected", thousands(n)),
    };
    if is_missing_right(first.sqlstate.as_deref()) {
        return Some(format!(
            "{all} for a right the role lacks, not for their values; the first: {first}. {MISSING_RIGHT}, then \
             load the rejected records again: pipe `sluice rejects` of the rejects file to `sluice load -` with the \
             same options"
        ));
    }
    let advice = hints::field_count_advice(shared, &first)?;
    Some(format!("{all}, which looks like a wrong option rather than bad data; the first: {first}. {advice}"))
}

/// Whether `sqlstate` is a missing privilege's (`permission denied for
/// table backing`): where COPY names a line, a trigger or a default of the
/// table used an object the role may not, and every record is refused.
fn is_missing_right(sqlstate: Option<&str>) -> bool {
    sqlstate == Some("42501")
}

/// What to do about records refused for a missing right.
const MISSING_RIGHT: &str = "A trigger of the table (or a default, or a view's INSTEAD OF trigger) uses an object \
                             the role may not: ask its owner for the right the reason names (GRANT INSERT ON \
                             TABLE ..., GRANT USAGE ON SEQUENCE ..., GRANT EXECUTE ON FUNCTION ...)";

/// Whether `sqlstate` is a unique key's or an exclusion constraint's
/// conflict: what ON CONFLICT DO NOTHING would skip.
fn is_key_conflict(sqlstate: Option<&str>) -> bool {
    matches!(sqlstate, Some("23505" | "23P01"))
}

/// Why a load whose first reject is a key the table holds stopped: it said
/// "a wrong option" before, and to check --delimiter and --header, for a
/// file loaded a second time under another name.
const LOADED_ALREADY: &str = "as if this data were loaded already";

/// With `--on-conflict-do-update`, a warning where another process
/// committed chunks of the job during this run: the chunks commit in input
/// order within a process, not across processes (see [`replace`]).
fn shared_while_replacing(shared: &Shared, control: Option<&PgSession>, started_unix_ms: u128) -> Option<String> {
    let control = control.filter(|_| shared.replaces())?;
    let others = ledger::committed_by_others_since(control, &shared.job, started_unix_ms).ok()?;
    let were = if others == 1 { "was" } else { "were" };
    (others > 0).then(|| {
        format!(
            "{} of job {} {were} committed by another process meanwhile: with --on-conflict-do-update, of two \
             records sharing a key in chunks of different processes the one committed last stays, which may be \
             the earlier line; from one process, the last line always stays",
            count_of(others, "chunk"),
            shared.job
        )
    })
}

/// What to do then.
const LOAD_ONLY_NEW_KEYS: &str = "`sluice status` lists the jobs that loaded into the table. To load only the \
     records whose keys are new, pass --on-conflict-do-nothing (or, to replace the rows that hold their keys, \
     --on-conflict-do-update); to load every record again, empty the table first (--truncate)";

/// The feeder thread: chunks every input in order onto the queue.
/// Whether the source's chunks carry their bytes to the workers: those of
/// stdin, pipes, compressed and transcoded inputs (which cannot be read by
/// range) and of small files (see [`KEPT_FILE`]).
fn carries_its_bytes(source: &Source) -> bool {
    !source.is_positioned() || source.size.is_some_and(|size| size <= KEPT_FILE)
}

/// The largest plain file whose chunk carries its bytes to the worker, as a
/// stream's do: the worker then does not open and read the file again. A
/// glob of 51,790 files of 1.5 kB spent a fifth of sluice's CPU opening
/// files (three times each: to sniff, to chunk, to load); such chunks share
/// batches, which hold 4 MiB at most (`batch::MAX_BYTES`).
const KEPT_FILE: u64 = 64 << 10;

fn feed(shared: &Shared, req: &LoadRequest, queue: Sender<Vec<Chunk>>, events: Sender<Event>) -> Vec<InputScan> {
    let mut scans = Vec::new();
    let mut seq = 0;
    // With `--on-conflict-do-update` into a partitioned table a batch that
    // COPY straight into the table refuses is merged a chunk at a time (its
    // batch's merge could not count each chunk's rows): a few chunks.
    let one_by_one = shared.staging.as_ref().and_then(|s| s.merging()).is_some_and(|m| !m.batches());
    let batcher = match one_by_one {
        true => Batcher::new(shared.chunk_size).at_most(batch::MERGED_ONE_BY_ONE),
        false => Batcher::new(shared.chunk_size),
    };
    let mut out = Handout { queue, batcher, block: Vec::new() };
    let mut left = req.limit;
    for (index, source) in shared.sources.iter().enumerate() {
        if left == Some(0) {
            break;
        }
        match feed_one(shared, req, (index, source, left), &mut out, &mut seq) {
            Ok(scan) => {
                left = left.map(|left| left.saturating_sub(scan.records));
                scans.push(scan)
            }
            Err(err) => {
                let _ = events.send(Event::Failed(err));
                break;
            }
        }
        if shared.stopping() {
            break;
        }
    }
    if let Some(last) = out.batcher.finish().filter(|_| !shared.stopping()) {
        let _ = out.queue.send(last);
    }
    scans
}

/// Where the feeder's chunks go: gathered into batches (see [`batch`]), then
/// onto the workers' queue.
struct Handout {
    queue: Sender<Vec<Chunk>>,
    batcher: Batcher,
    /// The last input's read block, for the next input's chunker.
    block: Vec<u8>,
}

impl Handout {
    /// False once the load stops or the workers are gone.
    fn give(&mut self, shared: &Shared, chunk: Chunk) -> bool {
        self.batcher.push(chunk).into_iter().all(|batch| !shared.stopping() && self.queue.send(batch).is_ok())
    }
}

fn feed_one(
    shared: &Shared,
    req: &LoadRequest,
    (index, source, record_cap): (usize, &Source, Option<u64>),
    out: &mut Handout,
    seq: &mut u64,
) -> Result<InputScan, Error> {
    let block = std::mem::take(&mut out.block);
    // Records rewritten with some of their fields go from memory.
    let keep_bytes = carries_its_bytes(source) || shared.format.picks.is_some();
    let (mut chunker, opened) = chunker_for(shared, req, (index, source, record_cap), *seq, keep_bytes, block)?;
    let mut scan = InputScan::default();
    loop {
        let chunk = match chunker.next_chunk() {
            Ok(Some(chunk)) => chunk,
            Ok(None) if chunker.reached_its_cap() => {
                scan.stopped_at_line = Some(source.start.map_or(0, |s| s.lines) + chunker.totals().1 + 1);
                break;
            }
            Ok(None) if scan.grown.is_some() => break,
            Ok(None) => {
                // Read to its end: all of it, header and all, as it was.
                scan.bytes = opened.input.get();
                scan.grown = grown_under_a_rewrite(source, &opened);
                note_growth(source, &mut scan);
                break;
            }
            Err(err) => return Err(source.read_error(&err, opened.raw.get())),
        };
        let Some(mut chunk) = without_a_line_being_written(&mut chunker, chunk, source, &mut scan)? else { continue };
        if let Some(originals) = &opened.originals {
            chunk.original = Some(Arc::new(originals.take(chunk.records)));
        }
        if let Some(lines) = &opened.document_lines {
            chunk.loc.document_lines = Some(lines.take(chunk.records));
        }
        scan.chunks += 1;
        scan.bytes = chunk.loc.byte_offset + chunk.loc.byte_len - source.start.map_or(0, |s| s.byte);
        if let Some(redo) = &shared.redo {
            // A pass that loads reopened chunks again: only those.
            if redo.contains(&chunk.seq) && !out.give(shared, chunk) {
                break;
            }
            continue;
        }
        if let Some(done) = shared.done.get(&chunk.seq) {
            // Committed by an earlier run: skip it without reading it again,
            // once sure it is the same chunk.
            if !is_the_chunk_done(done, &chunk) {
                return Err(not_the_input_of(&shared.job, source, &chunk, done));
            }
            scan.resumed_rows += done.rows;
            scan.resumed_rejected += done.rejected;
            scan.resumed_suppressed += done.suppressed;
            scan.resumed_skipped += done.skipped;
            scan.resumed_replaced += done.replaced;
            scan.resumed_chunks += 1;
            shared.progress.chunk_skipped(chunk.source_span, chunk.records);
            continue;
        }
        shared.leading.handed_out(chunk.seq);
        if !out.give(shared, chunk) {
            break;
        }
    }
    scan.preamble = chunker.preamble();
    scan.records = chunker.totals().0;
    *seq = chunker.next_seq();
    out.block = chunker.into_block();
    Ok(scan)
}

/// The last chunk of a file that grew while it was read, without the line
/// it ends inside (no line end after it): a line still being written
/// (`200000,partial` of `200000,partial_rest`). Loaded as it stood, its row
/// was cut short, exit 0; the next run loads it whole, from where this one
/// ended (see [`loaded_before`]). `None` when that line was all the chunk
/// held; other chunks, and files that did not grow, pass as they are.
fn without_a_line_being_written(
    chunker: &mut Chunker<Box<dyn std::io::Read + Send>>,
    chunk: Chunk,
    source: &Source,
    scan: &mut InputScan,
) -> Result<Option<Chunk>, Error> {
    if !chunk.unterminated || chunk.runaway.is_some() {
        return Ok(Some(chunk));
    }
    let Some((now, _)) = source.grown() else { return Ok(Some(chunk)) };
    let Some((byte, line)) = chunker.cut_record_start() else { return Ok(Some(chunk)) };
    let file = source.file_at(chunk.loc.byte_offset)?;
    let kept = chunker.without_its_cut_record(chunk, file).map_err(|e| source.read_error(&e, 0))?;
    let then = source.ends_at.unwrap_or_default();
    scan.grown = Some(Grown { then, now, line_left: Some(line) });
    scan.bytes = byte - source.start.map_or(0, |s| s.byte);
    Ok(kept)
}

/// The hidden files the command's globs matched and left out, as a shell's
/// glob does (see `source::glob_sources`): the first 5 named.
fn hidden_left_out_said(sources: &[Source]) -> Option<String> {
    const NAMED: usize = 5;
    let hidden: Vec<&str> = sources.iter().flat_map(|s| s.hidden_left_out.iter().map(String::as_str)).collect();
    let more = match hidden.len().saturating_sub(NAMED) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    (!hidden.is_empty()).then(|| {
        format!(
            "left out {} the glob matches, as a shell's glob does (a name in each one's path begins with a dot): \
             {}{more}; name them, or begin the pattern's name with a dot ('.*.csv'), to load them",
            count_of(hidden.len() as u64, "hidden file"),
            hidden[..hidden.len().min(NAMED)].join(", ")
        )
    })
}

/// What the reader of a file read through a rewrite found at its end (see
/// [`crate::source::Growth`]).
fn grown_under_a_rewrite(source: &Source, opened: &StreamCounts) -> Option<Grown> {
    let found = opened.growth.as_ref()?.lock().ok()?.take()?;
    Some(Grown { then: source.ends_at.unwrap_or_default(), now: found.now, line_left: found.line_left })
}

/// What the summary says of a file that grew while it loaded.
fn written_while_loading(source: &Source, grown: &Grown) -> String {
    let sizes = format!(
        "{} when the load began, {} more now",
        crate::report::human_bytes(grown.then),
        crate::report::human_bytes(grown.now.saturating_sub(grown.then))
    );
    match grown.line_left {
        Some(line) => format!(
            "{} grew while it loaded ({sizes}): its line {} had no line end yet (it was still being written), so \
             it is left for the next run instead of loading cut short: run this command again, once the file is \
             complete, to load it and the lines after it",
            source.name,
            thousands(line)
        ),
        None => format!(
            "{} grew while it loaded ({sizes}): the lines it held when the load began are loaded; run this command \
             again to load the rest",
            source.name
        ),
    }
}

/// A plain file read to its end that has grown since the load looked at it.
/// Not looked for in a file small enough to go to the workers whole (see
/// [`KEPT_FILE`]): a glob of 20,000 files of 60 bytes took 0.34 s with a
/// look at each, 0.31 s without (medians of 4), and a file that small is
/// read in one go, moments after the load looked at it. A line being
/// written is looked for whatever the size.
fn note_growth(source: &Source, scan: &mut InputScan) {
    if scan.grown.is_some() || carries_its_bytes(source) {
        return;
    }
    if let Some((now, true)) = source.grown() {
        scan.grown = Some(Grown { then: source.ends_at.unwrap_or_default(), now, line_left: None });
    }
}

/// An input's chunker, and what it read of the input.
type InputChunker = (Chunker<Box<dyn std::io::Read + Send>>, StreamCounts);

/// Cuts input `index` of the load from its start, numbering chunks from
/// `first_seq`; `keep_bytes` for workers that cannot read it by range.
fn chunker_for(
    shared: &Shared,
    req: &LoadRequest,
    (index, source, record_cap): (usize, &Source, Option<u64>),
    first_seq: u64,
    keep_bytes: bool,
    block: Vec<u8>,
) -> Result<InputChunker, Error> {
    let cfg = chunker_config((shared.format, source), req, shared.chunk_size.max(1), keep_bytes, shared.shape);
    let cfg = ChunkerConfig { header: cfg.header && !source.no_header, record_cap, ..cfg };
    // The input lines are kept only for chunks that carry their bytes to
    // the workers (and so to the rejects file): checking chunks drops them.
    let (stream, counts) = source.open_chunked(keep_bytes)?;
    // Read from the input's start, for a load of it from a line: the
    // chunker watches for that header among the records it cuts, as it
    // does from the start (see `chunk::HeaderRepeats`).
    let header_above = match source.start {
        Some(_) if cfg.header => Some(headers::preamble_of(source, cfg.clone())?.0),
        _ => None,
    };
    let chunker =
        Chunker::on_block(stream, cfg, index, first_seq, block).opening_the_load(index == 0).starting_at(source.start);
    let chunker = match header_above {
        Some(preamble) => chunker.under_the_header(preamble),
        None => chunker,
    };
    let chunker = if source.is_positioned() {
        chunker.with_total_size(source.size).tapered(shared.to_load_end[index])
    } else {
        chunker.with_raw_counter(counts.raw.clone(), source.size)
    };
    Ok((chunker, counts))
}

/// How `source` is cut: chunks of `target` bytes, by the format's rules,
/// past the lines skipped above its data (its own: with
/// `--header=first-file`, the first file's alone).
fn chunker_config(
    (format, source): (&FormatOptions, &Source),
    req: &LoadRequest,
    target: u64,
    keep_bytes: bool,
    shape: Option<RecordShape>,
) -> ChunkerConfig {
    ChunkerConfig {
        dialect: format.dialect(),
        target,
        skip_lines: source.skip_lines,
        header: format.header,
        record_cap: None,
        keep_bytes,
        max_record: req.max_record_size,
        shape,
    }
}

/// The first input's first record, which `--header` skips, where it reads
/// as a record (see [`sketch::a_record_taken_for_the_header`]) and names no
/// column (`region,2023,2024` is a header), with how to load it: a file
/// without a header loses it.
fn record_taken_for_the_header(
    control: &PgSession,
    sources: &[Source],
    format: &FormatOptions,
    table: &TableInfo,
) -> Option<String> {
    if !format.header {
        return None;
    }
    let (name, head) = first_look::first_head(sources);
    let record = sketch::a_record_taken_for_the_header(format, &head, control.date_order())
        .filter(|record| !plan::names_a_column(table, record.as_bytes(), format))?;
    let record: String = record.chars().take(100).collect();
    Some(format!(
        "the first line of {name} ({record}), which --header skips as its header, reads as a record: under each \
         column that holds numbers, dates or other typed values in the records after it, it holds one too. If \
         the file has no header, that record is not loaded; load it alone, with the same format flags: \
         head -n 1 {name} | sluice load - --table {}",
        table.display()
    ))
}

/// Where `--limit` stopped the load: the input and line it would go on
/// from, which a later load of the same files does (see
/// [`loaded_before`]).
fn stopped_at_the_limit(shared: &Shared, req: &LoadRequest, scans: &[InputScan]) -> Option<String> {
    let (index, line) = stopped_in(scans)?;
    let later = match shared.sources.len() - index - 1 {
        0 => String::new(),
        n => format!(", and {} after it not read", count_of(n as u64, "input")),
    };
    let source = &shared.sources[index];
    // JSON values are counted in documents, their lines made one a document.
    let line_or_document = if source.json_values.is_some() { "document" } else { "line" };
    Some(format!(
        "stopped after {}, as --limit asks: at {} {line_or_document} {}{later}. A load of the same files without \
         --limit (or with another) goes on from there",
        count_of(req.limit.unwrap_or_default(), "record"),
        source.name,
        thousands(line)
    ))
}

/// The input `--limit` stopped in, and the line it stopped at.
fn stopped_in(scans: &[InputScan]) -> Option<(usize, u64)> {
    scans.iter().enumerate().find_map(|(index, scan)| Some((index, scan.stopped_at_line?)))
}

/// Inputs that ended within the lines `--skip-lines` skips, so that
/// nothing of them loaded: a glob's short file, or a count too large, would
/// otherwise pass without a word. Not for an input read from where an
/// earlier job ended, whose start is not read.
fn ended_in_skipped_lines(shared: &Shared, scans: &[InputScan]) -> Option<String> {
    let skip = shared.format.skip_lines;
    let ended = |(source, scan): &(&Source, &InputScan)| {
        source.start.is_none() && scan.preamble.skipped_lines < source.skip_lines
    };
    let short: Vec<&str> = shared.sources.iter().zip(scans).filter(ended).map(|(source, _)| &*source.name).collect();
    let first = short.first()?;
    let others = match short.len() {
        1 => String::new(),
        n => format!(" and {}", count_of(n as u64 - 1, "other input")),
    };
    Some(format!(
        "{first}{others} ended within the {} --skip-lines skips: nothing of {} loaded",
        count_of(skip, "line"),
        if short.len() == 1 { "it" } else { "them" }
    ))
}

/// Workers whose connection the server refused at first: its
/// `max_connections` or the role's connection limit allows fewer sessions
/// than `--workers` asked for. The load went on with the others (workers
/// that never connected are not counted in the summary).
fn refused_warning(shared: &Shared) -> Option<String> {
    let refused = shared.refused.lock().map(|r| r.clone()).unwrap_or_default();
    let (first, _) = refused.first()?;
    let late = refused.iter().filter(|(_, loaded)| *loaded).count();
    Some(format!(
        "the server refused {} of the load's connections at first ({first}); {} never loaded and {late} joined \
         later. When the server allows fewer connections than --workers (max_connections, a role's connection \
         limit), lower --workers or raise that limit",
        refused.len(),
        refused.len() - late
    ))
}

/// Whether `chunk` is the one an earlier run committed as `done`: the same
/// byte range and the same content (a ledger row of an older sluice, which
/// hashed only streamed inputs, may have no hash: its range alone decides).
fn is_the_chunk_done(done: &Done, chunk: &Chunk) -> bool {
    let same_range = (done.byte_offset, done.byte_len) == (chunk.loc.byte_offset, chunk.loc.byte_len);
    same_range && done.content_hash.map_or(true, |before| chunk.content_hash == Some(before))
}

/// A resumed job's input cut into another chunk than the one an earlier run
/// committed under the same number: the input changed.
fn not_the_input_of(job: &str, source: &Source, chunk: &Chunk, done: &Done) -> Error {
    let range = |offset: u64, len: u64| format!("bytes {offset}..{}", offset + len);
    let (before, now) = (range(done.byte_offset, done.byte_len), range(chunk.loc.byte_offset, chunk.loc.byte_len));
    let difference = if before == now {
        format!("its chunk {} ({now}) held other data", chunk.seq)
    } else {
        format!("its chunk {} held {before}, this input's holds {now}", chunk.seq)
    };
    let same = if source.can_be_read_again() { "The same data" } else { "Piping the same data" };
    source.input_error(&format!(
        "not the input job {job} loaded before: {difference}. {same} resumes the job; to load this data, pass \
         --restart (it loads again from the start; what the job committed stays) or name a new job with --job NAME"
    ))
}

/// For each input, the load's bytes from its start to the load's end, when
/// it and every later input is a plain file (sizes known up front): where
/// the chunker can taper the load's tail. Summed from the end once: a glob
/// of 100,000 files would take 5 billion additions input by input.
fn bytes_to_load_end(sources: &[Source]) -> Vec<Option<u64>> {
    let mut to_end = vec![None; sources.len()];
    let mut sum = Some(0);
    for (index, source) in sources.iter().enumerate().rev() {
        sum = sum.zip(source.size.filter(|_| source.is_positioned())).map(|(a, b)| a + b);
        to_end[index] = sum;
    }
    to_end
}

/// Per-input accounting from what the feeder saw; loaded and rejected rows
/// are added from the committed chunks.
fn file_summaries(sources: &[Source], scans: &[InputScan]) -> Vec<FileSummary> {
    let scans = scans.iter().cloned().chain(std::iter::repeat(InputScan::default()));
    sources
        .iter()
        .zip(scans)
        .map(|(source, scan)| FileSummary {
            file: source.name.to_string(),
            compression: source.compression,
            bytes: scan.bytes,
            skipped_lines: scan.preamble.skipped_lines,
            header_lines: scan.preamble.header_lines,
            bom_stripped: scan.preamble.bom,
            records_read: scan.records,
            rows_loaded: 0,
            rejected: 0,
            suppressed: 0,
            skipped: 0,
            resumed_rows: scan.resumed_rows,
            resumed_rejected: scan.resumed_rejected,
            resumed_suppressed: scan.resumed_suppressed,
            resumed_skipped: scan.resumed_skipped,
            chunks: scan.chunks,
        })
        .collect()
}

fn build_report(
    shared: &Shared,
    req: &LoadRequest,
    chunks: Vec<ChunkRecord>,
    scans: Vec<InputScan>,
    started_unix_ms: u128,
    complete: bool,
) -> LoadReport {
    let wall = shared.clock.elapsed().as_secs_f64();
    let mut per_file = file_summaries(shared.sources, &scans);
    let grown = shared.sources.iter().zip(&scans).filter_map(|(source, scan)| Some((source, scan.grown.as_ref()?)));
    let mut warnings: Vec<String> = grown.map(|(source, grown)| written_while_loading(source, grown)).collect();
    // By name, not by search: a glob of 50,000 files took 7 s here.
    let mut index_of: HashMap<String, usize> = HashMap::new();
    for (i, f) in per_file.iter().enumerate().rev() {
        index_of.insert(f.file.clone(), i);
    }
    for c in &chunks {
        if let Some(f) = index_of.get(&c.file).map(|&i| &mut per_file[i]) {
            f.rows_loaded += c.rows;
            f.rejected += c.rejected;
            f.suppressed += c.suppressed;
            f.skipped += c.skipped;
        }
        if c.rows + c.rejected + c.suppressed + c.skipped != c.records {
            warnings.push(format!(
                "{}: line {}: the server loaded {} and rejected {} from a chunk in which sluice counted {}; are \
                 line ends mixed (bare carriage returns among line feeds)? The server takes a chunk's line-end \
                 style from the chunk's first line end, sluice from the file's: make them alike (`dos2unix`)",
                c.file,
                c.first_line,
                count_of(c.rows, "row"),
                thousands(c.rejected),
                count_of(c.records, "record")
            ));
        }
    }
    let rows: u64 = chunks.iter().map(|c| c.rows).sum();
    let suppressed: u64 = per_file.iter().map(|f| f.suppressed).sum();
    let bytes: u64 = per_file.iter().map(|f| f.bytes).sum();
    let summary = Summary {
        table: shared.table.display(),
        format: shared.format.shown_kind(),
        files: shared.sources.len(),
        records_read: per_file.iter().map(|f| f.records_read).sum(),
        rows_loaded: rows,
        rejected: per_file.iter().map(|f| f.rejected).sum(),
        suppressed,
        skipped: per_file.iter().map(|f| f.skipped).sum(),
        replaced: shared.replaces().then(|| chunks.iter().map(|c| c.replaced).sum()),
        rejects_file: None,
        rejects_in_file: 0,
        reject_reasons: Default::default(),
        resumed_chunks: scans.iter().map(|s| s.resumed_chunks).sum(),
        resumed_rows: per_file.iter().map(|f| f.resumed_rows).sum(),
        resumed_rejected: per_file.iter().map(|f| f.resumed_rejected).sum(),
        resumed_suppressed: per_file.iter().map(|f| f.resumed_suppressed).sum(),
        resumed_skipped: per_file.iter().map(|f| f.resumed_skipped).sum(),
        resumed_replaced: shared.replaces().then(|| scans.iter().map(|s| s.resumed_replaced).sum()),
        job: String::new(),
        chunks_by_others: 0,
        skipped_lines: per_file.iter().map(|f| f.skipped_lines).sum(),
        header_lines: per_file.iter().map(|f| f.header_lines).sum(),
        bytes,
        wall_seconds: wall,
        // Suppressed records cost the server a row's work (a routing
        // trigger stores them elsewhere).
        rows_per_sec: (rows + suppressed) as f64 / wall.max(1e-9),
        mb_per_sec: bytes as f64 * share_read_now(&per_file) / 1e6 / wall.max(1e-9),
        workers: shared.workers(req),
        workers_chosen: shared.pace.as_ref().map(pace::Pacer::describe),
        chunk_size: shared.chunk_size,
        chunks: chunks.len() as u64,
        batches: chunks.iter().map(|c| c.batch).collect::<HashSet<_>>().len() as u64,
        started_unix_ms,
        complete,
        copy: copy_path(shared, &chunks),
        connection: shared.connection.clone(),
        deferred: Deferral::default(),
        analysis: None,
        server_waits: waits::isolation_told(shared.waits.summary(waits::Work::Loading), &chunks),
    };
    LoadReport { summary, per_file, chunks, warnings }
}

/// The share of the inputs' records this run loaded (or rejected), not
/// earlier runs of the job: a resumed run reads its inputs whole but loads
/// only the rest, and its MB/s is of that rest, as its rows/s is. Counted
/// in records, which the summary has for every input (a document's line
/// and the line it becomes differ in bytes). Before, a run that loaded the
/// last 1 MB of 167.8 MB in 16 s said 10.5 MB/s.
fn share_read_now(per_file: &[FileSummary]) -> f64 {
    let all: u64 = per_file.iter().map(|f| f.records_read).sum();
    let earlier: u64 =
        per_file.iter().map(|f| f.resumed_rows + f.resumed_rejected + f.resumed_suppressed + f.resumed_skipped).sum();
    match all {
        0 => 1.0,
        all => all.saturating_sub(earlier) as f64 / all as f64,
    }
}

/// What the plan chose for COPY's format and what each chunk used.
fn copy_path(shared: &Shared, chunks: &[ChunkRecord]) -> CopyPath {
    let binary_chunks = chunks.iter().filter(|c| c.binary).count() as u64;
    let text_chunks = chunks.len() as u64 - binary_chunks;
    let staged_chunks = chunks.iter().filter(|c| c.staged).count() as u64;
    match &shared.binary {
        Some(plan) => CopyPath {
            planned: "binary".into(),
            why: "every column has a binary encoder: the server parses less".into(),
            binary_chunks,
            text_chunks,
            first_fallback: plan.first_fallback(),
            staged_chunks,
            merged: shared.replaces(),
        },
        None => CopyPath {
            planned: "text".into(),
            why: shared.text_why.clone(),
            binary_chunks,
            text_chunks,
            first_fallback: None,
            staged_chunks,
            merged: shared.replaces(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Compression;

    fn file(size: u64, compression: Compression) -> Source {
        Source {
            name: "f".into(),
            path: Some("f".into()),
            pipe: None,
            compression,
            size: Some(size),
            modified_ns: None,
            canonical: "f".into(),
            utf16: Utf16Sign::None,
            transcoding: None,
            json_values: None,
            documents: None,
            hidden_left_out: Vec::new(),
            start: None,
            ends_at: None,
            after_job: None,
            no_header: false,
            skip_lines: 0,
        }
    }

    #[test]
    fn small_files_and_streams_carry_their_bytes_to_the_workers() {
        assert!(carries_its_bytes(&file(1500, Compression::None)));
        assert!(carries_its_bytes(&file(KEPT_FILE, Compression::None)));
        assert!(!carries_its_bytes(&file(KEPT_FILE + 1, Compression::None)), "read by range");
        assert!(carries_its_bytes(&file(1 << 30, Compression::Zstd)));
    }

    #[test]
    fn only_a_load_that_ends_in_plain_files_is_tapered() {
        let plain = [file(10, Compression::None), file(20, Compression::None)];
        assert_eq!(bytes_to_load_end(&plain), [Some(30), Some(20)]);
        let ends_compressed = [file(10, Compression::None), file(20, Compression::Gzip)];
        assert_eq!(bytes_to_load_end(&ends_compressed), [None, None]);
        let starts_compressed = [file(10, Compression::Gzip), file(20, Compression::None)];
        assert_eq!(bytes_to_load_end(&starts_compressed), [None, Some(20)]);
    }
}
