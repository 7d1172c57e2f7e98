//! Reject isolation: when the server refuses a chunk, reject exactly the bad
//! records and load the rest of the chunk, in one transaction.
//!
//! Why our own: this is what makes a bad record cost only itself. Algorithm:
//!
//! 1. Index the chunk's records with the same scanner that cut it.
//! 2. Reject on the client, without a round trip, every record with a NUL
//!    byte, invalid UTF-8, or bytes its `--encoding` could not read (which
//!    the transcoder marks, see `encoding`), and set aside as suspects the
//!    records whose values the server will probably refuse (see `suspect`).
//!    The others go to the server as one run, each suspect as a run of its
//!    own, so a chunk with scattered bad records costs a few statements.
//!    When there are many suspects, their values go to the server's input
//!    functions in one statement first (see `value_check`); those it
//!    refuses are rejected with its reasons, without a COPY each, and those
//!    it takes whole join the others' run when nothing else about them is
//!    suspect (a field count, a NULL in a NOT NULL column).
//! 3. In the chunk's transaction (opened by the worker's ledger claim), copy
//!    runs of consecutive records, each under a savepoint.
//!    When the server names the failing line (`COPY t, line N`), reject that
//!    record, re-copy the good records before it (the failed COPY rolled them
//!    back) and go on after it. Once the chunk's refusals for a CHECK
//!    come densely, the records still to copy are looked up for the CHECKs
//!    they break in one statement (see `check_constraint`), and the rest
//!    go as one run. When it names no line, or loads fewer rows
//!    than it was sent with a `\.` line among them (COPY's end-of-data
//!    marker, which stops it without an error), split the run in two
//!    (bisection) until the bad record stands alone. Fewer rows without a
//!    `\.` line are rows a BEFORE INSERT trigger suppressed (returned NULL
//!    for): not rejects, the server took them.
//! 4. Leave the transaction open: the worker adds the rejected records to
//!    `sluice.rejects` and the chunk's ledger row, and commits them with the
//!    chunk's good rows.
//!
//! Where the load's plan is binary, runs of [`MIN_BINARY_RUN`] records or
//! more go as binary tuples (the server then names a refused tuple by its
//! number), encoded as they are sent; a run with a record the encoder is
//! unsure of is abandoned there and goes as text, as do shorter runs. Runs
//! count as the plan's tries and fallbacks as chunks do, so a column the
//! encoder cannot read in most records stops binary here too. Why:
//! a file with a bad record every few thousand has one in most chunks, and
//! sending all those chunks as text gave up what binary saves the server
//! (3 M rows of an orders table with a bad id every 1,000 lines: 2.31 s
//! before, 1.75 s after, the server's CPU 3.28 s and 2.15 s; bench/README.md).
//!
//! Every good record is sent at most twice. After an error, runs shrink to
//! about sqrt(2 * overhead / error density) records, the size that minimises
//! re-sent records plus per-statement overhead, so scattered bad records cost
//! a bounded share of the throughput instead of a re-copy of the whole chunk.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::atomic::Ordering::SeqCst;

use super::check_constraint::ConstraintCheck;
use super::in_flight::{ChunkKeys, Flight};
use super::key_check::Repeated;
use super::leading::leading_rejects;
use super::plan::BinaryPlan;
use super::replace::{unexpected_merge_reply, Merged};
use super::stage::Staging;
use super::suspect::{misshapen, only_nulls_where_none_go, suspect, suspect_json};
use super::value_check::{Checked, MIN_SUSPECTS};
use super::{first_records_rejected, Shared, DENSE_KEYS};
use crate::chunk::{locate_server_line, Chunk};
use crate::encoding::{self, Transcoding};
use crate::error::Error;
use crate::error::Position;
use crate::format::binary::{self, BinaryEncoder, Unsure};
use crate::format::scan::{holds_a_bare_return, LineEnd};
use crate::format::{documents, pick};
use crate::format::{FormatKind, RecordScanner};
use crate::rejects::Reject;
use crate::sink::postgres::PgSession;
use crate::sink::postgres::COPY_PIECE;
use crate::sink::{CopyOutcome, CopyRefusal, CopyWriter};

/// Cost of one extra COPY statement, in small records' worth of server time.
/// Measured on PostgreSQL 15: a COPY builds (and at its end drops) a tuple
/// slot per buffered row, up to 1,000, each registered with its resource
/// owner, about 1.6 ms in all, the time of some 3,700 small rows in a long
/// COPY. Sweeping this constant over 100..50,000 on 10 M rows with one bad
/// record in 10,000 put the optimum near 10,000 (bench/README.md).
const STATEMENT_COST: f64 = 10_000.0;
const MIN_RUN: usize = 16;

/// Shortest run sent as binary: suspects go alone and as text, where the
/// server's text input gives its own reason for a value the encoder would
/// not read anyway.
const MIN_BINARY_RUN: usize = MIN_RUN;

/// How isolation sends its longer runs as binary tuples: the load's binary
/// plan (its COPY statement, and its count of tries and fallbacks, which
/// isolation adds to as the fast path does) and the worker's encoder.
pub(super) struct BinaryRuns<'a> {
    pub plan: &'a BinaryPlan,
    pub encoder: &'a mut BinaryEncoder,
}

/// The statements that travel with the next run's COPY: the chunk's
/// transaction is already open (the worker claimed the chunk in it).
const FIRST_RUN: &str = "SAVEPOINT sluice_run";
const AFTER_REFUSAL: &str = "ROLLBACK TO SAVEPOINT sluice_run";

/// What a chunk loaded and rejected (its transaction still open).
pub(super) struct Isolated {
    pub rows: u64,
    /// Of `rows`, those that went as binary tuples.
    pub binary_rows: u64,
    /// Records the server took but did not count (see [`suppressed`]).
    pub suppressed: u64,
    /// Records refused for a key that a row holds, skipped (see
    /// `Shared::skips`).
    pub skipped: u64,
    pub rejects: Vec<Reject>,
    /// COPY statements isolation sent.
    pub copies: u64,
    /// Inserted from a staging table (see [`super::stage`]).
    pub staged: bool,
    /// Of `rows`, those that replaced a row holding their key, or that a
    /// later record replaced (`--on-conflict-do-update`, see
    /// [`super::replace`]).
    pub replaced: u64,
}

impl Isolated {
    /// A chunk the server took whole: `rows` of its `records`.
    pub fn all(records: u64, rows: u64) -> Isolated {
        Isolated {
            rows,
            binary_rows: 0,
            suppressed: suppressed(records, rows),
            skipped: 0,
            rejects: Vec::new(),
            copies: 0,
            staged: false,
            replaced: 0,
        }
    }

    /// A chunk of `records` staged (see [`super::stage`]), of which the
    /// server inserted `inserted` and skipped the others.
    pub fn staged(records: u64, inserted: u64, binary: bool) -> Isolated {
        Isolated {
            rows: inserted,
            binary_rows: if binary { inserted } else { 0 },
            suppressed: 0,
            skipped: records.saturating_sub(inserted),
            rejects: Vec::new(),
            copies: 0,
            staged: true,
            replaced: 0,
        }
    }

    /// A chunk staged whole and merged (see [`super::replace`]).
    pub fn merged(merged: Merged, binary: bool) -> Isolated {
        Isolated {
            rows: merged.rows,
            binary_rows: if binary { merged.rows } else { 0 },
            suppressed: merged.suppressed,
            skipped: 0,
            rejects: Vec::new(),
            copies: 0,
            staged: true,
            replaced: merged.replaced,
        }
    }

    /// A chunk isolated into the staging table (see [`Route::Staged`]),
    /// once the server inserted `inserted` of its rows from there: it
    /// skipped the others for their keys.
    pub fn inserted_from_staging(self, inserted: u64) -> Isolated {
        Isolated {
            rows: inserted,
            binary_rows: if self.mostly_binary() { inserted } else { 0 },
            skipped: self.skipped + self.rows.saturating_sub(inserted),
            staged: true,
            ..self
        }
    }

    /// Whether most of the rows went as binary tuples.
    pub fn mostly_binary(&self) -> bool {
        self.binary_rows * 2 > self.rows
    }
}

/// Records sent without an error but not counted as rows: a BEFORE INSERT
/// row trigger returned NULL for them, having dropped them or stored them
/// elsewhere (inheritance partitioning does); COPY counts only the rows it
/// inserted, as INSERT does.
pub(super) fn suppressed(records: u64, rows: u64) -> u64 {
    records.saturating_sub(rows)
}

/// Whether `bytes` may hold a line of only `\.`, after which the server
/// reads nothing (a quoted CSV value may also match: then isolation, which
/// looks at each record, decides).
pub(super) fn may_hold_end_of_data_line(bytes: &[u8]) -> bool {
    memchr::memmem::find_iter(bytes, b"\\.").any(|at| {
        let starts_line = at == 0 || matches!(bytes[at - 1], b'\n' | b'\r');
        starts_line && matches!(bytes.get(at + 2), None | Some(b'\n' | b'\r'))
    })
}

/// The chunk's records: start offsets and newlines before each, with an end
/// sentinel, so record `i` is `bytes[start[i]..start[i + 1]]`.
struct RecordIndex {
    start: Vec<usize>,
    lines_before: Vec<u64>,
}

impl RecordIndex {
    fn build(shared: &Shared, line_end: LineEnd, bytes: &[u8]) -> RecordIndex {
        let mut scanner = RecordScanner::new(shared.format.dialect(), line_end);
        let (mut start, mut lines_before) = (vec![0], vec![0]);
        let (mut pos, mut lines) = (0, 0);
        while pos < bytes.len() {
            let step = scanner.scan(&bytes[pos..], true);
            pos += step.consumed;
            lines += step.newlines;
            start.push(pos);
            lines_before.push(lines);
        }
        RecordIndex { start, lines_before }
    }

    fn len(&self) -> usize {
        self.start.len() - 1
    }

    fn bytes<'a>(&self, chunk: &'a [u8], from: usize, to: usize) -> &'a [u8] {
        &chunk[self.start[from]..self.start[to]]
    }
}

/// What the client makes of a record before the server sees it.
enum Verdict {
    /// The server would refuse its bytes whatever the table: the reason.
    Refused(String),
    /// The server will probably refuse its values (see `suspect`).
    Suspect,
    Clean,
}

/// What an input's records may hold in place of what could not be read.
#[derive(Clone, Copy)]
struct Marks {
    /// The input's encoding, when it is not UTF-8: its records hold marks
    /// where it could not be read (see [`encoding::unmark`]).
    transcoding: Option<Transcoding>,
    /// JSON lines read into columns, or records with fields left out: a
    /// document or record that could not be rewritten is a marked line (see
    /// [`documents::DOC_MARK`]).
    documents: bool,
}

impl Marks {
    fn of(shared: &Shared, chunk: &Chunk) -> Marks {
        let source = &shared.sources[chunk.loc.source];
        let rewritten = source.documents.is_some() || shared.format.picks.is_some();
        Marks { transcoding: source.transcoding, documents: rewritten }
    }
}

/// `plain`: whether the chunk's bytes are [`plain_bytes`], which spares
/// the record's.
fn verdict(shared: &Shared, marks: Marks, plain: bool, raw: &[u8]) -> Verdict {
    if let Some(reason) = (!plain).then(|| refused_bytes(marks, raw)).flatten() {
        return Verdict::Refused(reason);
    }
    let suspected = match &shared.rules {
        _ if end_of_data_line(raw) => true,
        Some(rules) => suspect(raw, rules, shared.format),
        None => suspect_json(raw),
    };
    if suspected {
        Verdict::Suspect
    } else {
        Verdict::Clean
    }
}

/// Whether `bytes` hold nothing [`refused_bytes`] refuses: checked once for
/// a chunk (in one SIMD pass, where each record's short one falls back to
/// scalar code), so that its records need not be one by one.
fn plain_bytes(marks: Marks, bytes: &[u8]) -> bool {
    !(marks.transcoding.is_some() && encoding::has_unreadable(bytes))
        && memchr::memchr(0, bytes).is_none()
        && simdutf8::basic::from_utf8(bytes).is_ok()
}

/// Why the server would refuse a record's bytes whatever the table, or
/// why the client refused it (a document it could not read).
fn refused_bytes(marks: Marks, raw: &[u8]) -> Option<String> {
    if let Some(reason) = marks.documents.then(|| documents::marked_reason(raw)).flatten() {
        return Some(reason);
    }
    if let Some(t) = marks.transcoding {
        if let Some((_, first_run)) = encoding::unmark(raw) {
            return Some(encoding::unreadable_reason(&first_run, t));
        }
    }
    if memchr::memchr(0, raw).is_some() {
        return Some("the record contains a NUL byte (0x00), which PostgreSQL cannot store in text".to_string());
    }
    let invalid = simdutf8::compat::from_utf8(raw).err()?;
    Some(format!(
        "invalid UTF-8 at byte {} of the record; is the file in another encoding (--encoding)?",
        invalid.valid_up_to()
    ))
}

/// Whether a chunk holds a record its input's encoding could not read: it
/// goes to isolation without a COPY of the whole, which a SQL_ASCII
/// database would take, marks and all.
pub(super) fn holds_unreadable(shared: &Shared, chunk: &Chunk) -> bool {
    let marks = Marks::of(shared, chunk);
    let Some(data) = chunk.data.as_deref() else { return false };
    (marks.transcoding.is_some() && encoding::has_unreadable(data))
        || (marks.documents && memchr::memchr(documents::DOC_MARK, data).is_some())
}

/// Whether every record of a chunk looks clean to the client: a worker
/// that met bad records in its last batch screens the next one's chunks,
/// so the clean ones still share a COPY and only the others are isolated.
pub(super) fn looks_clean(shared: &Shared, chunk: &Chunk, bytes: &[u8]) -> bool {
    let mut scanner = RecordScanner::new(shared.format.dialect(), chunk.line_end);
    let marks = Marks::of(shared, chunk);
    let plain = plain_bytes(marks, bytes);
    let mut pos = 0;
    while pos < bytes.len() {
        let end = pos + scanner.scan(&bytes[pos..], true).consumed;
        if !matches!(verdict(shared, marks, plain, &bytes[pos..end]), Verdict::Clean) {
            return false;
        }
        pos = end;
    }
    true
}

struct Isolator<'a> {
    shared: &'a Shared<'a>,
    chunk: &'a Chunk,
    bytes: &'a [u8],
    index: RecordIndex,
    rejects: Vec<Reject>,
    rows: u64,
    binary_rows: u64,
    suppressed: u64,
    skipped: u64,
    /// Records tried and errors met so far, for the run size.
    seen: usize,
    errors: usize,
    copies: u64,
    /// The chunk's line ends are mixed (LF and CR LF): each text run's
    /// records are sent ending as its first one does (see
    /// [`Isolator::line_ends_made_alike`]).
    line_ends_mixed: bool,
    /// Refusals for a duplicate key so far, and whether the chunk's
    /// records were looked up for repeated keys (see [`key_check`](super::key_check)).
    key_refusals: usize,
    keys_checked: bool,
    /// Refusals for one of the table's CHECKs or NOT NULL columns so far,
    /// and whether the chunk's records were looked up for them (see
    /// [`check_constraint`](super::check_constraint)).
    check_refusals: usize,
    constraints_checked: bool,
    /// Set where the lookup left refusals it could not word yet (see
    /// [`ConstraintCheck::words_known`]), to the wordings it knew: it runs
    /// again once COPY has worded one more.
    unworded_at: Option<usize>,
    /// Records the key check set aside for repeating an earlier record's
    /// key (sorted), and whether they were looked up again.
    repeats: Vec<usize>,
    repeats_checked: bool,
    /// The foreign keys whose missing keys were looked up (see
    /// [`Isolator::reject_missing_keys`]).
    missing_looked_up: Vec<String>,
    /// Where the chunk's input lines start, for documents read into
    /// columns (found at the first reject).
    original_starts: Option<Vec<usize>>,
    /// The chunk in flight, when it loads alongside others (see
    /// [`in_flight`](super::in_flight)), and the earlier chunks whose keys
    /// some of its records may share: those wait among the repeats until
    /// these have ended.
    flight: Option<&'a Flight<'a>>,
    waits_for: Vec<u64>,
    /// Copying into the staging table (see [`Route::Staged`]).
    staging: Option<&'a Staging>,
    /// See [`Isolated::replaced`].
    replaced: u64,
}

/// Where isolation copies a chunk's records.
#[derive(Clone, Copy)]
pub(super) enum Route<'a> {
    /// Into the table, alone or committing in input order.
    Table,
    /// Into the table, alongside chunks loading at once whose keys its
    /// records may share (see [`Isolator::set_aside_keys_in_flight`]).
    Alongside(&'a Flight<'a>),
    /// Into the staging table, from which the worker inserts the rows (see
    /// [`super::stage`]): only values COPY cannot read are refused there,
    /// and the keys are the INSERT's to arbitrate, so no key is looked up.
    Staged(&'a Staging),
}

/// Records to copy in one COPY, in input order; not always contiguous.
type Run = Vec<usize>;

/// Refusals by record, where a record has one.
type ByRecord = Vec<Option<CopyRefusal>>;

/// What the next COPY runs first after a refused one, and after a loaded
/// one.
#[derive(Clone, Copy)]
struct Savepoints<'p> {
    after_refusal: &'p str,
    after_loaded: &'p str,
}

/// Duplicate-key refusals in a chunk before its other records are looked
/// up for repeated keys.
const MIN_DUPLICATES: usize = 8;

/// What the value check made of a suspect.
#[derive(Clone, Copy)]
enum Fate {
    Rejected,
    /// Its values are the types' and its shape COPY's: it joins the clean run.
    Cleared,
    StillSuspect,
}

pub(super) fn isolate(
    session: &mut PgSession,
    shared: &Shared,
    chunk: &Chunk,
    bytes: &[u8],
    refusal: Option<CopyRefusal>,
    mut binary: Option<BinaryRuns<'_>>,
    route: Route<'_>,
) -> Result<Isolated, Error> {
    let mut iso = Isolator::new(shared, chunk, bytes, route);
    let looks_up_keys = iso.staging.is_none();
    iso.note_refusal(refusal.as_ref());
    let (mut clean, mut suspects) = iso.sort_records();
    let first_run = shared.savepoint(FIRST_RUN, &[chunk]);
    let after_refusal = shared.savepoint(AFTER_REFUSAL, &[chunk]);
    // Each run is copied under the savepoint `sluice_run`; the savepoint
    // bookkeeping travels in the same round trip as the next COPY.
    let after_loaded = shared.savepoint("RELEASE SAVEPOINT sluice_run; SAVEPOINT sluice_run", &[chunk]);
    let savepoints = Savepoints { after_refusal: &after_refusal, after_loaded: &after_loaded };
    let mut prelude = iso.check_suspects(session, &mut clean, &mut suspects, &first_run, &after_refusal)?;
    prelude = iso.check_null_suspects(session, &mut suspects, prelude, &after_refusal)?;
    // Suspects for their values; the key checks set others aside.
    let doubted = suspects.clone();
    iso.set_aside_keys_in_flight(session, &mut clean, &mut suspects)?;
    if looks_up_keys && shared.keys_dense.load(SeqCst) {
        prelude = iso.check_keys(session, &mut clean, &mut suspects, prelude, savepoints)?;
    }
    if refusal.is_none() {
        prelude = iso.reject_known_missing_keys(session, (&mut clean, &mut suspects), prelude, &after_refusal)?;
    }
    // The checks may have rejected the chunk's first records: the same stop
    // as after a COPY.
    iso.stop_if_the_rejects_stop_the_load()?;
    let mut runs: Vec<Run> = match refusal {
        // The fast path's refusal applies to the whole chunk as it was sent:
        // not once a record was taken out of it (rejected or skipped).
        Some(refusal) if suspects.is_empty() && iso.rejects.is_empty() && iso.skipped == 0 => {
            let at = iso.refused_at(&iso.stream(&clean), &refusal);
            match iso.reject_missing_keys(session, &clean, (at, &refusal), &mut prelude, &after_refusal, false)? {
                Some(rest) => vec![rest],
                None => iso.split_at_refusal(clean, at, refusal),
            }
        }
        // Suspects go last, one by one; the rest first, as one run. Into a
        // table with a key, those suspected for their values that the server
        // takes go in input order among the rest, so that of two records
        // sharing a key the first keeps it (copied after the chunk's other
        // records, such a suspect lost its key to a later line). Those the
        // key checks set aside repeat an earlier record's key: last.
        _ if iso.shared.keyed || iso.staging.is_some() => {
            let (tried, last): (Run, Run) = suspects.iter().partition(|i| doubted.binary_search(i).is_ok());
            let (in_order, after) = iso.probe(session, &tried, prelude, &after_refusal)?;
            prelude = after;
            last.iter().rev().map(|&i| vec![i]).chain(in_input_order(&clean, &in_order)).collect()
        }
        _ => suspects.iter().rev().map(|&i| vec![i]).chain([clean]).collect(),
    };
    let mut refused_last = prelude == after_refusal;
    loop {
        if looks_up_keys && iso.shared.key_check.is_some() {
            prelude = iso.check_repeats(session, &mut runs, prelude, savepoints)?;
            refused_last = prelude == after_refusal;
        }
        if iso.checks_dense() {
            prelude = iso.check_pending_constraints(session, &mut runs, &suspects, prelude, &after_refusal)?;
            refused_last = prelude == after_refusal;
            iso.stop_if_the_rejects_stop_the_load()?;
        }
        let Some(run) = runs.pop() else { break };
        if run.is_empty() {
            continue;
        }
        let mut unsure = None;
        let as_binary = match binary.as_mut().filter(|b| run.len() >= MIN_BINARY_RUN && b.plan.wanted()) {
            Some(b) => {
                b.plan.note_try();
                iso.copies += 1;
                let sql = iso.staging.and_then(|staging| staging.copy_sql(true)).unwrap_or(&b.plan.sql);
                match session.copy_with(prelude, sql, &mut |send| iso.send_binary(&run, b.encoder, send, &mut unsure)) {
                    Ok(outcome) => Some(outcome),
                    // The encoder was unsure of a record: the COPY was
                    // abandoned (what it sent is rolled back) and the run
                    // goes as text.
                    Err(_) if unsure.is_some() => {
                        b.plan.note_fallback(iso.unsure_at(unsure.take().expect("just checked")));
                        prelude = &after_refusal;
                        None
                    }
                    Err(e) => return Err(e),
                }
            }
            None => None,
        };
        let went_binary = as_binary.is_some();
        iso.copies += u64::from(!went_binary);
        let stream = if went_binary { Cow::Borrowed(&[][..]) } else { iso.stream(&run) };
        let outcome = match as_binary {
            Some(outcome) => outcome,
            None => iso.copy_text(session, prelude, &stream)?,
        };
        let outcome = iso.stopped_early_as_refused(&run, outcome);
        let (outcome, replaced) = merge_run(session, iso.staging, outcome)?;
        refused_last = matches!(outcome, CopyOutcome::Refused(_));
        prelude = match outcome {
            CopyOutcome::Loaded(rows) => {
                iso.rows += rows;
                iso.replaced += replaced;
                iso.binary_rows += if went_binary { rows } else { 0 };
                iso.suppressed += suppressed(run.len() as u64, rows);
                iso.seen += run.len();
                &after_loaded
            }
            CopyOutcome::Refused(r) => {
                // A binary COPY's line is the tuple's number; a text one's is
                // located in the stream just sent, not built a second time.
                let at = match went_binary {
                    true => r.server_line.map(|line| line.saturating_sub(1) as usize),
                    false => iso.refused_at(&stream, &r),
                };
                drop(stream);
                iso.note_refusal(Some(&r));
                let mut next: &str = &after_refusal;
                match iso.reject_missing_keys(session, &run, (at, &r), &mut next, &after_refusal, false)? {
                    Some(rest) => runs.push(rest),
                    None => runs.extend(iso.split_at_refusal(run, at, r)),
                }
                next
            }
        };
        if looks_up_keys && iso.duplicates_dense() {
            prelude = iso.check_pending_keys(session, &mut runs, &suspects, prelude, savepoints)?;
            refused_last = prelude == after_refusal;
        }
        iso.stop_if_the_rejects_stop_the_load()?;
    }
    // Leave the transaction open and usable: the worker stores the rejects
    // in it and commits.
    if refused_last {
        session.execute(AFTER_REFUSAL)?;
    }
    Ok(Isolated {
        rows: iso.rows,
        binary_rows: iso.binary_rows,
        suppressed: iso.suppressed,
        skipped: iso.skipped,
        rejects: iso.rejects,
        copies: iso.copies,
        staged: false,
        replaced: iso.replaced,
    })
}

/// Whether record `i` goes to COPY alone: a suspect, or one that repeats
/// an earlier record's key (both sorted).
fn goes_alone(i: usize, suspects: &[usize], repeats: &[usize]) -> bool {
    suspects.binary_search(&i).is_ok() || repeats.binary_search(&i).is_ok()
}

/// With `--on-conflict-do-update`, a run copied into the staging table
/// merged into the table at once, under the run's savepoint (see
/// [`super::replace`]): so the runs apply in input order, and a refusal of
/// the merge, which names no line, is the run's, split in two until the
/// record that breaks it stands alone. Returns how many rows it replaced.
fn merge_run(
    session: &PgSession,
    staging: Option<&Staging>,
    outcome: CopyOutcome,
) -> Result<(CopyOutcome, u64), Error> {
    let (Some(merging), CopyOutcome::Loaded(_)) = (staging.and_then(Staging::merging), &outcome) else {
        return Ok((outcome, 0));
    };
    match session.query_statements(&merging.run)? {
        Ok(rows) => {
            let merged = Merged::of(&rows).ok_or_else(|| unexpected_merge_reply(&rows))?;
            Ok((CopyOutcome::Loaded(merged.rows), merged.replaced))
        }
        Err(refusal) => Ok((CopyOutcome::Refused(CopyRefusal { server_line: None, ..refusal }), 0)),
    }
}

/// The clean records in runs between the suspects, each suspect a run of
/// its own, all in input order (the last run first, as isolation pops them).
fn in_input_order(clean: &[usize], suspects: &[usize]) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    let mut clean = clean.iter().copied().peekable();
    for &suspect in suspects {
        let before: Run = std::iter::from_fn(|| clean.next_if(|&i| i < suspect)).collect();
        runs.extend([before, vec![suspect]].into_iter().filter(|run| !run.is_empty()));
    }
    runs.push(clean.collect());
    runs.reverse();
    runs
}

/// A run the server loaded only part of, without an error: it read a line
/// holding only `\.` as the end of the data (text format; CSV before
/// PostgreSQL 18) and ignored the rest. Like a refusal that names no line,
/// the run is rolled back and halved until that line stands alone.
fn stopped_early() -> CopyRefusal {
    CopyRefusal {
        message: "a line holding only \\. is COPY's end-of-data marker, after which the server reads nothing; \
                  rejected so that the records after it load"
            .into(),
        ..CopyRefusal::default()
    }
}

/// A record that is a `\.` line, which the server may take for the end of
/// the data: sent alone, so only it is lost if it is.
fn end_of_data_line(raw: &[u8]) -> bool {
    matches!(raw, b"\\." | b"\\.\n" | b"\\.\r\n" | b"\\.\r")
}

impl<'a> Isolator<'a> {
    /// An isolator of `chunk`'s records, none tried yet, loading by `route`.
    fn new(shared: &'a Shared<'a>, chunk: &'a Chunk, bytes: &'a [u8], route: Route<'a>) -> Isolator<'a> {
        let index = RecordIndex::build(shared, chunk.line_end, bytes);
        Isolator {
            shared,
            chunk,
            bytes,
            index,
            rejects: Vec::new(),
            rows: 0,
            binary_rows: 0,
            suppressed: 0,
            skipped: 0,
            seen: 0,
            errors: 0,
            copies: 0,
            line_ends_mixed: false,
            key_refusals: 0,
            keys_checked: false,
            check_refusals: 0,
            constraints_checked: false,
            unworded_at: None,
            repeats: Vec::new(),
            repeats_checked: false,
            missing_looked_up: Vec::new(),
            original_starts: None,
            flight: match route {
                Route::Alongside(flight) => Some(flight),
                _ => None,
            },
            waits_for: Vec::new(),
            staging: match route {
                Route::Staged(staging) => Some(staging),
                _ => None,
            },
            replaced: 0,
        }
    }

    /// Checks the suspects' values in one statement when there are enough
    /// of them (see [`value_check`](super::value_check)): rejects those the
    /// check refuses, moves to `clean` those whose values it took and whose
    /// shape is right (a field count and NULLs COPY takes), and keeps the
    /// others as suspects. Returns what the next COPY runs first: nothing
    /// after a check that ran (its savepoint stands), the rollback to it
    /// after one that failed, and the first run's savepoint when none ran.
    fn check_suspects<'p>(
        &mut self,
        session: &PgSession,
        clean: &mut Run,
        suspects: &mut Run,
        first_run: &'p str,
        after_refusal: &'p str,
    ) -> Result<&'p str, Error> {
        let Some(check) = self.shared.value_check.as_ref().filter(|c| c.usable() && suspects.len() >= MIN_SUSPECTS)
        else {
            return Ok(first_run);
        };
        let records: Vec<&[u8]> = suspects.iter().map(|&i| self.record(i)).collect();
        let (refused, passed) = match check.check(session, first_run, &records)? {
            Checked::Ran { refused, passed } => (refused, passed),
            Checked::Failed => return Ok(after_refusal),
            Checked::Skipped => return Ok(first_run),
        };
        let mut fate = vec![Fate::StillSuspect; suspects.len()];
        for (k, refusal) in refused {
            fate[k] = Fate::Rejected;
            self.reject(suspects[k], refusal);
        }
        for k in passed {
            if !self.misshapen(records[k]) {
                fate[k] = Fate::Cleared;
            }
        }
        let mut fates = fate.into_iter();
        suspects.retain(|&i| match fates.next() {
            Some(Fate::Cleared) => {
                clean.push(i);
                false
            }
            Some(Fate::Rejected) => false,
            _ => true,
        });
        // Two sorted runs, merged in one pass: the clean run goes in input
        // order.
        clean.sort();
        Ok("")
    }

    /// Where the key check names held records only once they pass the
    /// table's CHECKs (see
    /// [`KeyCheck::deciding_after_checks`](super::key_check::KeyCheck::deciding_after_checks)):
    /// the CHECK that each of `held` (indexes among `records`) without a
    /// value refused (`values`) breaks, looked up in one statement (see
    /// [`check_constraint`](super::check_constraint)), by record, and
    /// those (sorted) that break one the query cannot word yet: they go to
    /// COPY alone, which words it. `None` when the statement failed: the
    /// held records are then suspects, each for COPY alone. Runs `prelude`
    /// first, and returns the next COPY's, as
    /// [`Isolator::check_held_values`] does.
    fn check_held_constraints<'p>(
        &self,
        session: &PgSession,
        (held, records): (&[usize], &[&[u8]]),
        values: &ByRecord,
        prelude: &'p str,
        savepoints: Savepoints<'p>,
    ) -> Result<(Option<ByRecord>, Run, &'p str), Error> {
        let mut by_record = vec![None; records.len()];
        let needed = self.shared.key_check.as_ref().is_some_and(|k| k.after_checks());
        let asked: Vec<usize> = held.iter().copied().filter(|&k| needed && values[k].is_none()).collect();
        let Some(check) = self.shared.constraint_check.as_ref().filter(|_| !asked.is_empty()) else {
            return Ok((Some(by_record), Vec::new(), prelude));
        };
        if !check.usable() {
            return Ok((None, Vec::new(), prelude));
        }
        if !prelude.is_empty() {
            session.execute(prelude)?;
        }
        let asked_records: Vec<&[u8]> = asked.iter().map(|&k| records[k]).collect();
        let Some(refused) = check.refused(session, &asked_records)? else {
            return Ok((None, Vec::new(), savepoints.after_refusal));
        };
        let mut unworded = Vec::new();
        for (i, refusal) in refused {
            match refusal {
                Some(refusal) => by_record[asked[i]] = Some(refusal),
                None => unworded.push(asked[i]),
            }
        }
        unworded.sort_unstable();
        Ok((Some(by_record), unworded, ""))
    }

    /// Once duplicate keys are known to be dense (see
    /// [`key_check`](super::key_check)), rejects the records of
    /// `candidates` whose key the table holds and moves to `suspects`
    /// (sorted) those that repeat an earlier record's, noting them in
    /// `repeats`: alone, each costs one short COPY instead of a refused run
    /// and its re-copy. Takes and returns the next COPY's prelude (see
    /// [`Isolator::check_suspects`]).
    ///
    /// The query runs under the savepoint `sluice_run`, which is then
    /// released and set again: the rows it locked stay locked until the
    /// chunk commits, whatever later COPYs the server refuses (a rollback
    /// to the savepoint would unlock them, and a row deleted meanwhile
    /// would make a rejected record one the server takes).
    fn check_keys<'p>(
        &mut self,
        session: &PgSession,
        candidates: &mut Run,
        suspects: &mut Run,
        prelude: &'p str,
        savepoints: Savepoints<'p>,
    ) -> Result<&'p str, Error> {
        self.keys_checked = true;
        let clean = candidates;
        let Some(check) = self.shared.key_check.as_ref().filter(|_| clean.len() > 1) else { return Ok(prelude) };
        if !prelude.is_empty() {
            // The first run's savepoint, or the rollback to it after a
            // refusal or a failed value check.
            session.execute(prelude)?;
        }
        let records: Vec<&[u8]> = clean.iter().map(|&i| self.record(i)).collect();
        let Some(repeated) = check.repeated(session, &records)? else { return Ok(savepoints.after_refusal) };
        if repeated.is_empty() {
            return Ok("");
        }
        let held: Vec<usize> = repeated
            .iter()
            .filter_map(|found| if let Repeated::Held(k, _) = found { Some(*k) } else { None })
            .collect();
        let (mut value_refusals, prelude) = self.check_held_values(session, &held, &records, savepoints)?;
        let (mut check_refusals, unworded, prelude) =
            self.check_held_constraints(session, (&held, &records), &value_refusals, prelude, savepoints)?;
        let mut taken = vec![false; clean.len()];
        for found in repeated {
            let found = match (found, &mut check_refusals) {
                (Repeated::Held(k, _), None) if value_refusals[k].is_none() => Repeated::Suspect(k),
                (Repeated::Held(k, _), Some(_)) if unworded.binary_search(&k).is_ok() => Repeated::Suspect(k),
                (found, _) => found,
            };
            match found {
                Repeated::Held(k, refusal) => {
                    taken[k] = true;
                    let broken = check_refusals.as_mut().and_then(|by_record| by_record[k].take());
                    self.reject(clean[k], value_refusals[k].take().or(broken).unwrap_or(refusal));
                }
                Repeated::Suspect(k) => {
                    taken[k] = true;
                    suspects.push(clean[k]);
                    self.repeats.push(clean[k]);
                }
            }
        }
        let mut taken = taken.into_iter();
        clean.retain(|_| !taken.next().unwrap_or(false));
        suspects.sort();
        self.repeats.sort();
        Ok(prelude)
    }

    /// The value check (see [`value_check`](super::value_check)) over the
    /// records of `records` whose key the table holds (`held`, their
    /// indexes), which the key check is about to reject as duplicates: COPY
    /// reads every value before it meets the key, so for a record with a
    /// value the server refuses, that value is the reason (returned by
    /// index among `records`). Sets the savepoint `sluice_run` again after
    /// the key check, which keeps its locks, and returns the next COPY's
    /// prelude: nothing, or the rollback to that savepoint after a check
    /// that failed. Why a statement of its own: the suspects' value check
    /// only sees records the client suspected, and a value the client reads
    /// as plausible (`300.1.1.1` for an inet) gave the duplicate key as the
    /// reason.
    fn check_held_values<'p>(
        &self,
        session: &PgSession,
        held: &[usize],
        records: &[&[u8]],
        savepoints: Savepoints<'p>,
    ) -> Result<(ByRecord, &'p str), Error> {
        let check = self.shared.value_check.as_ref().filter(|c| c.usable() && !held.is_empty());
        let checked = match check {
            Some(check) => {
                let held_records: Vec<&[u8]> = held.iter().map(|&k| records[k]).collect();
                let (savepoint, rollback) = (savepoints.after_loaded, savepoints.after_refusal);
                check.check_expecting_pass(session, (savepoint, rollback), &held_records)?
            }
            None => Checked::Skipped,
        };
        let mut by_record = vec![None; records.len()];
        let prelude = match checked {
            Checked::Ran { refused, .. } => {
                for (i, refusal) in refused {
                    by_record[held[i]] = Some(refusal);
                }
                ""
            }
            Checked::Failed => savepoints.after_refusal,
            Checked::Skipped => {
                session.execute(savepoints.after_loaded)?;
                ""
            }
        };
        Ok((by_record, prelude))
    }

    /// Once the runs before them are copied, looks up again the records set
    /// aside for repeating an earlier record's key (see
    /// [`Isolator::check_keys`]): the earlier record is in the table now,
    /// unless the server refused it, so most of them are rejected without a
    /// COPY of their own. Why: those repeats were a COPY each, most of what
    /// the first chunks cost (one of 63,000 records with 1 % duplicates: 617
    /// COPY statements; bench/README.md). Once per chunk, when the next run
    /// is one of them.
    fn check_repeats<'p>(
        &mut self,
        session: &PgSession,
        runs: &mut Vec<Run>,
        prelude: &'p str,
        savepoints: Savepoints<'p>,
    ) -> Result<&'p str, Error> {
        let is_repeat = |run: &Run, repeats: &[usize]| run.len() == 1 && repeats.binary_search(&run[0]).is_ok();
        if self.repeats_checked || !runs.last().is_some_and(|run| is_repeat(run, &self.repeats)) {
            return Ok(prelude);
        }
        self.repeats_checked = true;
        let prelude = self.wait_for_earlier_chunks(session, prelude)?;
        // In the order they go (runs are taken from the end).
        let mut candidates: Run =
            runs.iter().rev().filter(|run| is_repeat(run, &self.repeats)).map(|run| run[0]).collect();
        let before = candidates.clone();
        let mut again = Vec::new();
        let prelude = self.check_keys(session, &mut candidates, &mut again, prelude, savepoints)?;
        candidates.extend(again);
        candidates.sort();
        // Those neither still a candidate nor again a repeat were rejected.
        let rejected: Vec<usize> = before.into_iter().filter(|i| candidates.binary_search(i).is_err()).collect();
        runs.retain(|run| !(run.len() == 1 && rejected.binary_search(&run[0]).is_ok()));
        Ok(prelude)
    }

    /// For a chunk loading alongside others (see
    /// [`in_flight`](super::in_flight)): publishes the keys of its records
    /// still to copy (`clean` and `suspects`), and sets aside, among the
    /// repeats, those whose keys an earlier chunk in flight may have, to be
    /// looked up once it has ended. Stops when the load does.
    fn set_aside_keys_in_flight(
        &mut self,
        session: &PgSession,
        clean: &mut Run,
        suspects: &mut Run,
    ) -> Result<(), Error> {
        let (Some(flight), Some(check)) = (self.flight, self.shared.key_check.as_ref()) else { return Ok(()) };
        let mut all: Run = clean.iter().chain(suspects.iter()).copied().collect();
        all.sort_unstable();
        let records: Vec<&[u8]> = all.iter().map(|&i| self.record(i)).collect();
        let values = check.key_values_read(&records);
        flight.publish(ChunkKeys::of(&values), session);
        let shared = self.shared;
        let stop = || shared.stopping();
        let Some(mut earlier) = flight.earlier(&stop) else {
            return Err(Error::Transient("the load is stopping".into()));
        };
        // A chunk whose keys were not read (it commits in input order: a
        // staged chunk, or one taken before the workers read keys) may share
        // any: rather than set every record aside, wait for it to end.
        let unread: Vec<u64> = earlier.iter().filter(|(_, keys)| keys.unread()).map(|(seq, _)| *seq).collect();
        if !unread.is_empty() {
            flight.wait_for(&unread, session, &stop)?;
            earlier.retain(|(seq, _)| unread.binary_search(seq).is_err());
        }
        let mut aside = Vec::new();
        for (n, &i) in all.iter().enumerate() {
            let record = || values.iter().map(|key| key[n]);
            let sharing: Vec<u64> =
                earlier.iter().filter(|(_, keys)| keys.may_share(record())).map(|(seq, _)| *seq).collect();
            if !sharing.is_empty() {
                aside.push(i);
                self.waits_for.extend(sharing);
            }
        }
        self.waits_for.sort_unstable();
        self.waits_for.dedup();
        clean.retain(|i| aside.binary_search(i).is_err());
        suspects.retain(|i| aside.binary_search(i).is_err());
        suspects.extend(&aside);
        suspects.sort_unstable();
        self.repeats.extend(aside);
        self.repeats.sort_unstable();
        Ok(())
    }

    /// Before the repeats are looked up again: waits for the earlier chunks
    /// in flight whose keys some of them may share (see
    /// [`Isolator::set_aside_keys_in_flight`]) to end, so that the key
    /// query sees the keys they took. Runs `prelude` first (the wait looks
    /// at the server's locks in this session), and returns the next one.
    fn wait_for_earlier_chunks<'p>(&mut self, session: &PgSession, prelude: &'p str) -> Result<&'p str, Error> {
        let Some(flight) = self.flight.filter(|_| !self.waits_for.is_empty()) else { return Ok(prelude) };
        if !prelude.is_empty() {
            session.execute(prelude)?;
        }
        let shared = self.shared;
        flight.wait_for(&std::mem::take(&mut self.waits_for), session, &|| shared.stopping())?;
        Ok("")
    }

    /// Counts a refusal for a duplicate key or one of the table's CHECKs.
    fn note_refusal(&mut self, refusal: Option<&CopyRefusal>) {
        self.key_refusals += usize::from(refusal.is_some_and(|r| r.sqlstate.as_deref() == Some("23505")));
        let check = self.shared.constraint_check.as_ref();
        self.check_refusals += usize::from(refusal.is_some_and(|r| check.is_some_and(|c| c.breaks(r))));
        if let (Some(refusal), Some(check)) = (refusal, check) {
            check.learn_wording(refusal);
        }
        if let (Some(refusal), Some(keys)) = (refusal, self.shared.key_check.as_ref()) {
            keys.learn_wording(refusal);
        }
    }

    /// Whether the records still to copy are worth looking up for CHECKs
    /// and NOT NULL columns they break (see
    /// [`check_constraint`](super::check_constraint)): this chunk's such
    /// refusals have come one in [`DENSE_KEYS`] records or closer,
    /// [`MIN_DUPLICATES`] of them at least, or one came and a committed
    /// chunk's were dense (suspects only for a NULL were looked up at the
    /// start, see [`Isolator::check_null_suspects`]). Once a chunk, and
    /// again where a lookup left refusals unworded and COPY has worded one
    /// more since; not into the staging table, whose rows meet the
    /// constraints later.
    fn checks_dense(&self) -> bool {
        let Some(check) = self.shared.constraint_check.as_ref().filter(|c| c.usable()) else { return false };
        if self.staging.is_some() || self.check_refusals == 0 {
            return false;
        }
        if self.unworded_at.is_some_and(|known| check.words_known() > known) {
            return true;
        }
        let dense_here = self.check_refusals >= MIN_DUPLICATES
            && self.check_refusals as u64 * DENSE_KEYS >= (self.seen + self.check_refusals) as u64;
        !self.constraints_checked && (dense_here || self.shared.checks_dense.load(SeqCst))
    }

    /// Rejects the records still to copy (but those that go alone, except
    /// suspects only for a NULL where none goes) that break one of the
    /// table's CHECKs or NOT NULL columns, all found by one statement, and
    /// joins the runs left between those that go alone: each went to COPY
    /// as a run refused at its first such record and a re-copy of those
    /// before it. Runs `prelude` first and returns the next COPY's:
    /// nothing after a check that ran (the savepoint stands), the rollback
    /// to it after one that failed.
    fn check_pending_constraints<'p>(
        &mut self,
        session: &PgSession,
        runs: &mut Vec<Run>,
        suspects: &[usize],
        prelude: &'p str,
        after_refusal: &'p str,
    ) -> Result<&'p str, Error> {
        self.constraints_checked = true;
        let Some(check) = self.shared.constraint_check.as_ref() else { return Ok(prelude) };
        let asked = |i: &usize| !goes_alone(*i, suspects, &self.repeats) || self.only_nulls_misplaced(*i);
        // Runs are taken from the end: the records in the order they go.
        let pending: Run = runs.iter().rev().flatten().copied().filter(asked).collect();
        if pending.len() < 2 {
            return Ok(prelude);
        }
        let Some(broken) = self.reject_what_the_query_refuses(session, check, &pending, prelude)? else {
            return Ok(after_refusal);
        };
        let mut going: Vec<Run> = Vec::new();
        for run in runs.drain(..).rev() {
            let run: Run = run.into_iter().filter(|i| broken.binary_search(i).is_err()).collect();
            let alone = |run: &Run| run.len() == 1 && goes_alone(run[0], suspects, &self.repeats);
            match going.last_mut() {
                _ if run.is_empty() => {}
                Some(last) if !alone(last) && !alone(&run) => last.extend(run),
                _ => going.push(run),
            }
        }
        going.reverse();
        *runs = going;
        Ok("")
    }

    /// Whether this chunk's duplicate keys, unchecked so far, have come one
    /// in [`DENSE_KEYS`] records or closer, [`MIN_DUPLICATES`] of them at
    /// least: the rest of the chunk is then worth one query. Why not only
    /// from the next chunk on: the chunk that first meets them may be long
    /// (one of 63,000 records with 1 % duplicates took 10.8 s, a COPY per
    /// duplicate, while the other worker loaded four; bench/README.md).
    fn duplicates_dense(&self) -> bool {
        !self.keys_checked
            && self.shared.key_check.is_some()
            && self.key_refusals >= MIN_DUPLICATES
            && self.key_refusals as u64 * DENSE_KEYS >= (self.seen + self.key_refusals) as u64
    }

    /// Runs the key check (see [`Isolator::check_keys`]) over the records
    /// still to copy but the chunk's `suspects` (sorted): they then go as
    /// one run, and the suspects alone after it, as at the start of
    /// isolation.
    fn check_pending_keys<'p>(
        &mut self,
        session: &PgSession,
        runs: &mut Vec<Run>,
        suspects: &[usize],
        prelude: &'p str,
        savepoints: Savepoints<'p>,
    ) -> Result<&'p str, Error> {
        // Runs are taken from the end: the records in the order they go.
        let pending: Run = runs.drain(..).rev().flatten().collect();
        let (mut clean, mut suspects): (Run, Run) =
            pending.into_iter().partition(|i| suspects.binary_search(i).is_err());
        suspects.sort();
        let prelude = self.check_keys(session, &mut clean, &mut suspects, prelude, savepoints)?;
        runs.extend(suspects.iter().rev().map(|&i| vec![i]));
        runs.push(clean);
        Ok(prelude)
    }

    /// Rejects the suspects that hold a NULL where none goes, and nothing
    /// else the client finds wrong, all found by the CHECK query (see
    /// [`check_constraint`](super::check_constraint)) when there are
    /// [`MIN_SUSPECTS`] of them or more: each went to COPY alone (200,000
    /// records with every tenth missing a NOT NULL value took 20,002 COPYs).
    /// Takes and returns the next COPY's prelude, as
    /// [`Isolator::check_suspects`] does.
    fn check_null_suspects<'p>(
        &mut self,
        session: &PgSession,
        suspects: &mut Run,
        prelude: &'p str,
        after_refusal: &'p str,
    ) -> Result<&'p str, Error> {
        let Some(check) = self.shared.constraint_check.as_ref().filter(|c| c.usable() && self.staging.is_none()) else {
            return Ok(prelude);
        };
        let nulls: Run = suspects.iter().copied().filter(|&i| self.only_nulls_misplaced(i)).collect();
        if nulls.len() < MIN_SUSPECTS {
            return Ok(prelude);
        }
        let Some(rejected) = self.reject_what_the_query_refuses(session, check, &nulls, prelude)? else {
            return Ok(after_refusal);
        };
        suspects.retain(|i| rejected.binary_search(i).is_err());
        Ok("")
    }

    /// Runs `prelude`, then the CHECK query (see
    /// [`check_constraint`](super::check_constraint)) over the records
    /// `asked`, and rejects those it refuses, in input order, stopping at
    /// the one past `--max-errors` (the stop names it, not the chunk's
    /// last). Returns the records rejected, sorted; `None` when the query
    /// failed, which leaves the transaction to roll back to its savepoint.
    fn reject_what_the_query_refuses(
        &mut self,
        session: &PgSession,
        check: &ConstraintCheck,
        asked: &[usize],
        prelude: &str,
    ) -> Result<Option<Run>, Error> {
        if !prelude.is_empty() {
            session.execute(prelude)?;
        }
        let records: Vec<&[u8]> = asked.iter().map(|&i| self.record(i)).collect();
        let known = check.words_known();
        let Some(refused) = check.refused(session, &records)? else { return Ok(None) };
        self.unworded_at = refused.iter().any(|(_, refusal)| refusal.is_none()).then_some(known);
        let mut rejected: Run = Vec::with_capacity(refused.len());
        for (k, refusal) in refused {
            // Not worded yet: left to COPY, which words it.
            let Some(refusal) = refusal else { continue };
            rejected.push(asked[k]);
            self.reject(asked[k], refusal);
            if self.shared.over_max_errors(self.rejects.len() as u64, self.rejects.last()).is_some() {
                break;
            }
        }
        rejected.sort_unstable();
        Ok(Some(rejected))
    }

    /// Whether a NULL in a NOT NULL column is all the client finds wrong
    /// with record `i` (see [`only_nulls_where_none_go`]).
    fn only_nulls_misplaced(&self, i: usize) -> bool {
        let rules = self.shared.rules.as_ref();
        rules.is_some_and(|rules| only_nulls_where_none_go(self.record(i), rules, self.shared.format))
    }

    /// Whether COPY refuses `record` whatever its values: a field too many
    /// or too few, a NULL in a NOT NULL column, a `\.` line.
    fn misshapen(&self, record: &[u8]) -> bool {
        end_of_data_line(record) || self.shared.rules.as_ref().is_some_and(|r| misshapen(record, r, self.shared.format))
    }

    fn record(&self, i: usize) -> &'a [u8] {
        self.index.bytes(self.bytes, i, i + 1)
    }

    /// The load stops before isolating the rest of the chunk (which is not
    /// committed) when its rejects, with those committed, pass
    /// `--max-errors` (see `Shared::over_max_errors`), or when the load's
    /// first records are all rejected, this chunk's first ones among them.
    /// Whatever else the chunk loads: it would not change that.
    fn stop_if_the_rejects_stop_the_load(&self) -> Result<(), Error> {
        if let Some(error) = self.shared.over_max_errors(self.rejects.len() as u64, self.rejects.last()) {
            return Err(error);
        }
        let Some(wanting) = self.shared.leading.wanting(self.chunk.seq) else { return Ok(()) };
        if (self.rejects.len() as u64) < wanting {
            return Ok(());
        }
        let leading = leading_rejects(&self.rejects, self.chunk.loc.first_record);
        let Some(first) = self.rejects.iter().min_by_key(|r| r.record) else { return Ok(()) };
        match self.shared.leading.reached_with(self.chunk.seq, leading, first) {
            Some(reached) => Err(first_records_rejected(self.shared, reached)),
            None => Ok(()),
        }
    }

    /// A text COPY of `stream` after `prelude`, into the table or into the
    /// staging table.
    fn copy_text(&self, session: &mut PgSession, prelude: &str, stream: &[u8]) -> Result<CopyOutcome, Error> {
        let mut feed = |send: &mut CopyWriter<'_>| {
            send(stream);
            Ok(())
        };
        match self.staging.and_then(|staging| staging.copy_sql(false)) {
            Some(sql) => session.copy_with(prelude, sql, &mut feed),
            None => session.copy_after(prelude, &mut feed),
        }
    }

    /// Copies each of `suspects` alone, each rolled back: those the server
    /// refuses are rejected, as they would be after the chunk's other
    /// records; those it takes are returned, to go in input order. Why:
    /// most suspects are refused, and copied before the others they cost
    /// what they cost after them. Placed in input order untried, each split
    /// the others' run in two, and looking up which suspects' keys a later
    /// record repeats read every record's key (a bad id every 10,000 lines
    /// into a table with its key: 1.49 s before, 1.92 s so, 1.38 s probed
    /// against 1.36 s; bench/README.md).
    fn probe<'p>(
        &mut self,
        session: &mut PgSession,
        suspects: &[usize],
        mut prelude: &'p str,
        after_refusal: &'p str,
    ) -> Result<(Run, &'p str), Error> {
        let mut taken = Vec::new();
        for &i in suspects {
            self.copies += 1;
            let outcome = self.copy_text(session, prelude, &self.stream(&[i]))?;
            match self.stopped_early_as_refused(&[i], outcome) {
                CopyOutcome::Loaded(_) => taken.push(i),
                CopyOutcome::Refused(r) => {
                    self.note_refusal(Some(&r));
                    self.split_at_refusal(vec![i], None, r);
                }
            }
            // Taken or not, the next statement rolls it back.
            prelude = after_refusal;
            self.stop_if_the_rejects_stop_the_load()?;
        }
        Ok((taken, prelude))
    }

    /// `outcome` of copying `run`, as a refusal where the server loaded
    /// fewer rows because of a `\.` line (see [`stopped_early`]).
    fn stopped_early_as_refused(&self, run: &[usize], outcome: CopyOutcome) -> CopyOutcome {
        match outcome {
            CopyOutcome::Loaded(rows) if (rows as usize) < run.len() && self.holds_end_of_data_line(run) => {
                CopyOutcome::Refused(stopped_early())
            }
            other => other,
        }
    }

    fn holds_end_of_data_line(&self, run: &[usize]) -> bool {
        run.iter().any(|&i| end_of_data_line(self.record(i)))
    }

    /// Rejects records the server would refuse for their bytes alone (NUL,
    /// invalid UTF-8) and sorts the others into clean ones and suspects.
    fn sort_records(&mut self) -> (Run, Run) {
        let (mut clean, mut suspects) = (Vec::new(), Vec::new());
        let marks = Marks::of(self.shared, self.chunk);
        let plain = plain_bytes(marks, self.bytes);
        for i in 0..self.index.len() {
            match verdict(self.shared, marks, plain, self.record(i)) {
                Verdict::Refused(reason) => {
                    let column = pick::refused_column(&reason).map(str::to_string);
                    self.reject(i, CopyRefusal { message: reason, column, ..CopyRefusal::default() })
                }
                Verdict::Suspect => suspects.push(i),
                Verdict::Clean => clean.push(i),
            }
        }
        (clean, suspects)
    }

    /// Sends a run as binary tuples, a piece at a time, each stretch of
    /// consecutive records encoded where it lies in the chunk (nothing
    /// gathered: a worker holds one piece). Fails when the encoder is unsure
    /// of a record, which abandons the COPY, with `unsure` set to that
    /// record (its index in the chunk) and why.
    fn send_binary(
        &self,
        run: &[usize],
        encoder: &mut BinaryEncoder,
        send: &mut CopyWriter<'_>,
        unsure: &mut Option<Unsure>,
    ) -> Result<(), Error> {
        let mut give_up = |record: usize, reason: String| {
            *unsure = Some(Unsure { record: record as u64, reason });
            Err(Error::Usage("the binary encoder was unsure of a record; the run goes as text".into()))
        };
        let mut out = Vec::with_capacity(2 * COPY_PIECE);
        out.extend_from_slice(binary::HEADER);
        encoder.begin_chunk();
        for stretch in run.chunk_by(|a, b| *b == a + 1) {
            let (mut from, end) = (stretch[0], stretch[stretch.len() - 1] + 1);
            while from < end {
                // The records from `from` that fit in a piece (at least one).
                let limit = self.index.start[from] + COPY_PIECE;
                let to = from + self.index.start[from + 1..=end].partition_point(|&s| s <= limit).max(1);
                let bytes = self.index.bytes(self.bytes, from, to);
                let done = match encoder.encode(bytes, true, &mut out) {
                    Ok(done) => done,
                    Err(u) => return give_up(from + u.record as usize, u.reason),
                };
                if done.consumed != bytes.len() || done.records != (to - from) as u64 {
                    return give_up(from + done.records as usize, "a record the encoder did not finish".into());
                }
                if out.len() >= COPY_PIECE {
                    if !send(&out) {
                        return Ok(());
                    }
                    out.clear();
                }
                from = to;
            }
        }
        out.extend_from_slice(binary::TRAILER);
        send(&out);
        Ok(())
    }

    /// Where a binary run was abandoned, as the plan's first fallback says it.
    fn unsure_at(&self, unsure: Unsure) -> String {
        let loc = &self.chunk.loc;
        let record = loc.first_record + unsure.record;
        format!("{} record {record}: {}", self.shared.sources[loc.source].name, unsure.reason)
    }

    /// The bytes COPY gets for a run: a slice when its records are
    /// contiguous, a copy otherwise.
    fn stream(&self, run: &[usize]) -> Cow<'_, [u8]> {
        if self.line_ends_mixed {
            return Cow::Owned(self.ending_alike(run));
        }
        let (first, last) = (run[0], run[run.len() - 1]);
        if last - first + 1 == run.len() {
            return Cow::Borrowed(self.index.bytes(self.bytes, first, last + 1));
        }
        let mut out = Vec::new();
        for &i in run {
            out.extend_from_slice(self.record(i));
        }
        Cow::Owned(out)
    }

    /// Whether the run's first record holds a carriage return not followed
    /// by a line feed (outside quotes and escapes), with records after it:
    /// refused, it goes alone, and the others after it. Why: the server
    /// takes a COPY's line end from its first line end, so at a run's head
    /// that carriage return became the line end, and the server's refusal
    /// named a line of the next record (a good one rejected).
    fn begins_with_a_bare_return(&self, run: &[usize]) -> bool {
        run.len() > 1
            && self.chunk.line_end == LineEnd::Lf
            && holds_a_bare_return(self.shared.format.dialect(), self.record(run[0]))
    }

    /// The run's records, each ending as the first one does (LF or CR LF).
    /// Its last record may have no line end at all (the input's last).
    fn ending_alike(&self, run: &[usize]) -> Vec<u8> {
        let line_end: &[u8] = if self.record(run[0]).ends_with(b"\r\n") { b"\r\n" } else { b"\n" };
        let mut out = Vec::new();
        for &i in run {
            let record = self.record(i);
            match record.strip_suffix(b"\r\n").or_else(|| record.strip_suffix(b"\n")) {
                Some(body) => {
                    out.extend_from_slice(body);
                    out.extend_from_slice(line_end);
                }
                None => out.extend_from_slice(record),
            }
        }
        out
    }

    /// Whether the server refused the run's record `at` for its line end
    /// (CR LF where the run's first line ends in LF, or the other way) in a
    /// chunk not yet known for mixed line ends: from then on each run goes
    /// with its records ending alike, and the record is tried again. Why:
    /// the server takes a COPY's line end from its first line, and a file
    /// joined from a Windows export and a Unix one (or a CSV edited in
    /// Notepad) had each line ending otherwise rejected, though a line end
    /// is all that differed: a carriage return outside quotes (or
    /// unescaped) is no value in either format. Once a chunk: another such
    /// refusal is a carriage return inside the line, rejected. Only for a
    /// record that ends otherwise than the run's first: one with a carriage
    /// return inside, tried again at the head of a run, had the server take
    /// that carriage return for the run's line end and blame the next
    /// record (a good one rejected).
    fn line_ends_made_alike(&mut self, run: &[usize], at: usize, r: &CopyRefusal) -> bool {
        let crlf = |i: usize| self.record(i).ends_with(b"\r\n");
        let ended_otherwise = self.chunk.line_end == LineEnd::Lf
            && !self.line_ends_mixed
            && line_end_advice(&r.message, self.shared.format.kind).is_some()
            && crlf(run[0]) != crlf(run[at])
            && self.record(run[at]).ends_with(b"\n");
        self.line_ends_mixed |= ended_otherwise;
        ended_otherwise
    }

    /// The index in its run of the record the server refused, when it named
    /// the line (`stream` is the run's bytes as they were sent).
    fn refused_at(&self, stream: &[u8], r: &CopyRefusal) -> Option<usize> {
        let line = r.server_line?;
        Some(locate_server_line(self.shared.format.dialect(), self.chunk.line_end, stream, line).index as usize)
    }

    /// The runs still to copy after the server refused `run` at record
    /// `at` of the run (`None`: no line named), last first.
    fn split_at_refusal(&mut self, run: Run, at: Option<usize>, r: CopyRefusal) -> Vec<Run> {
        self.errors += 1;
        if self.begins_with_a_bare_return(&run) {
            // The server's line counted that carriage return as a line end.
            return vec![run[1..].to_vec(), run[..1].to_vec()];
        }
        let Some(at) = at else {
            if run.len() == 1 {
                self.reject(run[0], r);
                return Vec::new();
            }
            let referring = self.referring_to_missing_key(&run, &r);
            if !referring.is_empty() {
                let rest: Run = run.iter().copied().filter(|i| referring.binary_search(i).is_err()).collect();
                for &i in &referring {
                    self.reject(i, r.clone());
                }
                return self.runs_after(&rest);
            }
            let (first, second) = run.split_at(run.len() / 2);
            return vec![second.to_vec(), first.to_vec()];
        };
        let at = at.min(run.len() - 1);
        self.seen += at;
        let tried_again = self.line_ends_made_alike(&run, at, &r);
        let after = if tried_again { at } else { at + 1 };
        if !tried_again {
            self.reject(run[at], r);
        }
        let mut runs = self.runs_after(&run[after..]);
        runs.push(run[..at].to_vec());
        runs
    }

    /// After a foreign key's refusal of `run` that names no line: rejects
    /// the run's records that refer to keys the referenced table does not
    /// hold, all looked up in one query (see
    /// [`MissingKeys::look_up`](super::missing_key::MissingKeys::look_up)),
    /// and returns the rest, to copy whole. Runs the next COPY's
    /// `prelude` first, and leaves in it what the COPY after needs:
    /// nothing, or the rollback to the savepoint after a lookup that
    /// failed. Once a chunk for each foreign key: a refusal for the same
    /// key after it (a referenced row deleted meanwhile) is isolated as before, as
    /// is one the lookup cannot explain (`None`: the caller splits the
    /// run). Why: the rejects of one refusal say nothing of the other
    /// missing keys of the run, and each cost a COPY of what was left.
    /// `screening`: another run's refusal, for records not copied yet (see
    /// [`Isolator::reject_known_missing_keys`]).
    fn reject_missing_keys<'p>(
        &mut self,
        session: &PgSession,
        run: &Run,
        (at, r): (Option<usize>, &CopyRefusal),
        prelude: &mut &'p str,
        after_refusal: &'p str,
        screening: bool,
    ) -> Result<Option<Run>, Error> {
        let Some(keys) = self.shared.missing_keys.as_ref().filter(|_| at.is_none() && run.len() > 1) else {
            return Ok(None);
        };
        let Some(key) = keys.foreign_key_of(r).filter(|_| self.staging.is_none()) else { return Ok(None) };
        if self.missing_looked_up.iter().any(|k| k == key) {
            return Ok(None);
        }
        self.missing_looked_up.push(key.to_string());
        if !prelude.is_empty() {
            session.execute(prelude)?;
        }
        *prelude = after_refusal;
        let records = run.iter().map(|&i| (i, self.record(i)));
        let Some(missing) = keys.look_up(session, r, records)?.filter(|m| !m.is_empty()) else { return Ok(None) };
        *prelude = "";
        // Not copied yet (a chunk's look-up before its first COPY): a CHECK
        // or NOT NULL column refuses a record at its insert, before the
        // foreign key is checked at the statement's end.
        let missing = match screening {
            true => self.checked_before_foreign_keys(session, missing, prelude, after_refusal)?,
            false => missing,
        };
        self.errors += 1;
        self.seen += run.len();
        let rejected: HashSet<usize> = missing.iter().map(|(i, _)| *i).collect();
        let rest = run.iter().copied().filter(|i| !rejected.contains(i)).collect();
        for (i, refusal) in missing {
            self.reject(i, refusal);
        }
        let mut known = self.shared.foreign_key_refusals.lock().unwrap_or_else(|e| e.into_inner());
        if !known.iter().any(|k| keys.foreign_key_of(k) == Some(key)) {
            known.push(r.clone());
        }
        Ok(Some(rest))
    }

    /// Of the records a foreign key's look-up found `missing` (not copied
    /// yet), those that break a CHECK or a NOT NULL column get that refusal
    /// instead (the CHECK query's, see
    /// [`check_constraint`](super::check_constraint)), or are left to COPY
    /// where it cannot word it yet. Leaves the foreign key's reasons as
    /// they are where the query does not run, or fails (`prelude` then
    /// rolls back to the savepoint).
    fn checked_before_foreign_keys<'p>(
        &mut self,
        session: &PgSession,
        missing: Vec<(usize, CopyRefusal)>,
        prelude: &mut &'p str,
        after_refusal: &'p str,
    ) -> Result<Vec<(usize, CopyRefusal)>, Error> {
        let Some(check) = self.shared.constraint_check.as_ref().filter(|c| c.usable()) else { return Ok(missing) };
        let records: Vec<&[u8]> = missing.iter().map(|(i, _)| self.record(*i)).collect();
        let Some(refused) = check.refused(session, &records)? else {
            *prelude = after_refusal;
            return Ok(missing);
        };
        let mut missing: Vec<Option<(usize, CopyRefusal)>> = missing.into_iter().map(Some).collect();
        for (k, refusal) in refused {
            missing[k] = match (missing[k].take(), refusal) {
                (Some((i, _)), Some(refusal)) => Some((i, refusal)),
                // Not worded yet: COPY is to refuse it.
                _ => None,
            };
        }
        Ok(missing.into_iter().flatten().collect())
    }

    /// Before the first COPY of a chunk screened for rejects (its worker's
    /// last chunk had some): the missing keys of each foreign key an
    /// earlier chunk's refusal named, looked up at once (see
    /// [`Isolator::reject_missing_keys`]), their records rejected and taken
    /// out of `clean` and `suspects`. Why: where missing references are
    /// spread through the input, nearly every chunk's first COPY was
    /// refused for them, a chunk's work done for nothing. Takes and returns
    /// the next COPY's prelude.
    fn reject_known_missing_keys<'p>(
        &mut self,
        session: &PgSession,
        (clean, suspects): (&mut Run, &mut Run),
        mut prelude: &'p str,
        after_refusal: &'p str,
    ) -> Result<&'p str, Error> {
        let known = self.shared.foreign_key_refusals.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for refusal in known {
            // Not the records the key check set aside: the server may refuse
            // one for its key first, at its insert (a foreign key is checked
            // at the statement's end).
            let mut all: Run = clean.iter().chain(suspects.iter()).copied().collect();
            all.retain(|i| self.repeats.binary_search(i).is_err());
            all.sort_unstable();
            if let Some(rest) =
                self.reject_missing_keys(session, &all, (None, &refusal), &mut prelude, after_refusal, true)?
            {
                let kept: HashSet<usize> = rest.into_iter().collect();
                let rejected: HashSet<usize> = all.into_iter().filter(|i| !kept.contains(i)).collect();
                clean.retain(|i| !rejected.contains(i));
                suspects.retain(|i| !rejected.contains(i));
            }
        }
        Ok(prelude)
    }

    /// The records of `run` (in its order) that refer to the key a foreign
    /// key's refusal `r` names missing (see [`super::missing_key`]).
    fn referring_to_missing_key(&self, run: &[usize], r: &CopyRefusal) -> Vec<usize> {
        let Some(keys) = &self.shared.missing_keys else { return Vec::new() };
        keys.referring(r, run.iter().map(|&i| (i, self.record(i))))
    }

    /// `records` cut into runs of the size that suits the error density
    /// seen so far, last first.
    fn runs_after(&self, records: &[usize]) -> Vec<Run> {
        let per_error = (self.seen.max(1) as f64 / self.errors.max(1) as f64).max(1.0);
        let size = ((2.0 * STATEMENT_COST * per_error).sqrt() as usize).max(MIN_RUN);
        records.chunks(size).rev().map(<[usize]>::to_vec).collect()
    }

    /// Rejects record `i` for `r`, or skips it when `r` is a conflict
    /// `--on-conflict-do-nothing` skips.
    fn reject(&mut self, i: usize, r: CopyRefusal) {
        if self.shared.skips(r.sqlstate.as_deref()) {
            self.skipped += 1;
            return;
        }
        let loc = &self.chunk.loc;
        let file = &self.shared.sources[loc.source].name;
        let position = loc.position(file, i as u64, self.index.lines_before[i], self.index.start[i] as u64);
        let advice = line_end_advice(&r.message, self.shared.format.kind).unwrap_or_default();
        let mut reason = r.message;
        if let Some(detail) = r.detail {
            reason.push_str(&format!(" ({detail})"));
        }
        reason.push_str(advice);
        let (first_line, lines_before) = (loc.first_line, self.index.lines_before[i]);
        let line_of_document = loc.line_of(i as u64, lines_before);
        let (raw, at) = self.as_in_input(i);
        let position = match at {
            Some((byte, Some(lines))) => Position { byte, line: first_line + lines, ..position },
            Some((byte, None)) => Position { byte, line: line_of_document, ..position },
            None => position,
        };
        let mut reject = Reject::new(position, reason, &raw);
        reject.sqlstate = r.sqlstate;
        reject.column = r.column;
        reject.raw_length = self.cut_line_length(i);
        self.rejects.push(reject);
    }
}

/// Where a rewritten record was in the input: its offset, and the line
/// ends before it in the chunk (`None`: one record to a line, as in the
/// chunk).
type InInput = (u64, Option<u64>);

impl Isolator<'_> {
    /// Record `i` as the rejects file shows it, and, where the chunk's
    /// records were rewritten, its offset in the input and the line ends
    /// before it in the chunk (`None`: one record to a line, as in the
    /// chunk: documents read into columns).
    fn as_in_input(&mut self, i: usize) -> (Cow<'_, [u8]>, Option<InInput>) {
        if let Some(original) = &self.chunk.original {
            if let Some((record, byte, lines_before)) = original.record(i) {
                let record = self.shared.sources[self.chunk.loc.source].as_in_input(record);
                return (record, Some((byte, Some(lines_before))));
            }
            let starts = self.original_starts.get_or_insert_with(|| original.line_starts());
            if let Some((line, byte)) = original.line(starts, i) {
                return (Cow::Borrowed(line), Some((byte, None)));
            }
        }
        (self.shared.sources[self.chunk.loc.source].as_in_input(self.record(i)), None)
    }

    /// The length in the input of record `i` when it is a document line
    /// longer than `--max-record-size`, of which the chunk kept only the
    /// start (see [`crate::format::documents::OriginalText::cut`]).
    fn cut_line_length(&mut self, i: usize) -> Option<u64> {
        let original = self.chunk.original.as_ref().filter(|original| !original.cut.is_empty())?;
        let starts = self.original_starts.get_or_insert_with(|| original.line_starts());
        original.cut_line_length(starts, i)
    }
}

/// What the server's line-end refusals mean for a file that sluice cut
/// into chunks. The server takes a COPY's line end (LF or CR LF) from its
/// first line; a line ending otherwise is sent again ending alike (see
/// [`Isolator::line_ends_made_alike`]), so what is refused is a carriage
/// return (or line feed) inside a line, with a message "found in data"
/// whose hint speaks of CSV quoting, even for JSON lines, which sluice
/// sends as CSV; or a bare CR line end among LF ones (classic Mac).
fn line_end_advice(message: &str, kind: FormatKind) -> Option<&'static str> {
    let about_line_ends = ["carriage return found in data", "newline found in data"];
    if !about_line_ends.iter().any(|m| message.ends_with(m)) {
        return None;
    }
    Some(match kind {
        FormatKind::Jsonl => {
            ": a JSON-lines line holds a carriage return other than before its line feed, which JSON allows only \
             escaped (\\r) inside a string; or the file's line ends mix bare carriage returns (classic Mac) with \
             line feeds: make them alike (dos2unix)"
        }
        _ => {
            ": a carriage return or line feed inside a field that is not quoted (CSV) or escaped as \\r, \\n \
             (text) is no value: quote or escape it; or the file's line ends mix bare carriage returns (classic \
             Mac) with line feeds: make them alike (dos2unix)"
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_into_the_staging_table_pop_in_input_order() {
        let popped = |clean: &[usize], suspects: &[usize]| {
            let mut runs = in_input_order(clean, suspects);
            std::iter::from_fn(|| runs.pop()).filter(|run| !run.is_empty()).collect::<Vec<_>>()
        };
        assert_eq!(popped(&[0, 1, 3, 4, 7], &[2, 5, 6]), [vec![0, 1], vec![2], vec![3, 4], vec![5], vec![6], vec![7]]);
        assert_eq!(popped(&[1, 2], &[0, 3]), [vec![0], vec![1, 2], vec![3]]);
        assert_eq!(popped(&[0, 1, 2], &[]), [vec![0, 1, 2]]);
        assert_eq!(popped(&[], &[4, 9]), [vec![4], vec![9]]);
    }

    #[test]
    fn end_of_data_lines_are_found_whatever_the_line_ends() {
        for eol in ["\n", "\r\n", "\r"] {
            let chunk = format!("1,a{eol}\\.{eol}2,b{eol}");
            assert!(may_hold_end_of_data_line(chunk.as_bytes()), "{eol:?}");
            assert!(may_hold_end_of_data_line(format!("\\.{eol}2,b{eol}").as_bytes()), "{eol:?}");
            assert!(may_hold_end_of_data_line(format!("1,a{eol}\\.").as_bytes()), "{eol:?}");
            assert!(end_of_data_line(format!("\\.{eol}").as_bytes()), "{eol:?}");
            assert!(!may_hold_end_of_data_line(format!("1,a\\.{eol}2,\\.b{eol}").as_bytes()), "{eol:?}");
        }
    }
}
