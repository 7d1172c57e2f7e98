//! One worker: one connection, one batch of chunks per transaction (one
//! chunk, unless small inputs share a batch: see [`super::batch`]).
//!
//! The worker streams a chunk to COPY in small pieces, so it holds one piece
//! of memory whatever the chunk size: as binary tuples when the load plan
//! says so (the server parses less; see [`crate::format::binary`]), else as
//! the input's own bytes, untouched. A chunk the encoder is unsure of goes
//! as text, and a refused one is isolated as text, so the rules for rejects
//! are the server's text rules either way.

use std::borrow::Cow;
use std::fs::File;
use std::os::unix::fs::FileExt;

use std::sync::atomic::Ordering;
use std::sync::PoisonError;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use super::defaults;
use super::in_flight::{Flight, Turn};
use super::isolate::{holds_unreadable, isolate, looks_clean, may_hold_end_of_data_line, BinaryRuns, Isolated, Route};
use super::leading::Ending;
use super::replace::{met_a_key_twice, unexpected_merge_reply, Merged};
use super::retry::Backoff;
use super::{stage, Event, Shared};
use crate::chunk::{Chunk, Runaway, RunawayKind};
use crate::error::Error;
use crate::format::binary::{self, BinaryEncoder, Unsure};
use crate::ledger::{self, ChunkRow, Claim, Claimed};
use crate::rejects::{Reject, RUNAWAY_KEPT};
use crate::report::ChunkRecord;
use crate::sink::postgres::COPY_PIECE;
use crate::sink::postgres::{describe_refusal, PgSession};
use crate::sink::{CopyOutcome, CopyRefusal, CopyWriter};
use crate::source::io_reason;
use stage::Staging;

pub(super) fn run(id: usize, shared: &Shared, queue: Receiver<Vec<Chunk>>, events: Sender<Event>) {
    if !wait_for_turn(id, shared, &queue) {
        return;
    }
    // A worker that starts late (--workers auto) may meet a restarting
    // server: it waits for it as a worker that lost its connection does.
    let mut refused = None;
    let opened = match open_session(shared) {
        Err(e) if e.may_pass() => {
            refused = Some(e.to_string());
            reconnect(shared, &mut Backoff::new(shared.retry_timeout))
        }
        other => other,
    };
    let session = match opened {
        Ok(s) => s,
        Err(e) if shared.any_connected.load(Ordering::SeqCst) || shared.stopping() => {
            // Other workers load: this session is one more than the server
            // allows (max_connections, a role's limit). Failing the load
            // for it would throw their progress away.
            shared.note_refused(e.to_string(), false);
            return;
        }
        Err(e) => {
            let _ = events.send(Event::Failed(e));
            return;
        }
    };
    shared.any_connected.store(true, Ordering::SeqCst);
    let mut committed_any = false;
    let mut worker = Worker {
        shared,
        session,
        reader: RangeReader::default(),
        expect_rejects: false,
        straight: StraightTries::default(),
        encoder: shared.binary.as_ref().map(|plan| plan.encoder.clone()),
        last_binary: false,
        flight: None,
    };
    let mut deferred = Vec::new();
    // The queue first; then the batches another process held, waiting for
    // each: done by then, or its loader died and the lock went with it.
    let mut work: Work = Box::new(queue.clone().into_iter().map(|c| (c, false)));
    'work: loop {
        wait_for_turn(id, shared, &queue);
        // Taken before the batch, so that batches go in input order.
        let mut turn = shared.take_turn();
        let boarding = shared.boarding.lock().unwrap_or_else(PoisonError::into_inner);
        let Some((mut batch, wait)) = next_work(&mut work, &mut deferred) else { break };
        if shared.stopping() {
            break;
        }
        // Boarded in input order too, and then loaded alongside the chunks
        // in flight (see `in_flight`) instead of in this worker's turn, or
        // (once a key repeated) committed after them: a batch in its turn
        // too, since the batches taken before the turns began may still be
        // loading.
        worker.flight = match batch.as_slice() {
            // Staged chunks load side by side and commit in input order,
            // whether or not keys collide (see `stage`); with
            // `--on-conflict-do-update`, batches of small files too, or a
            // key's earlier line stays where a later batch merged first.
            [first, ..] if !wait && shared.replaces() => {
                turn = None;
                Some(shared.in_flight.board_in_order(first.seq))
            }
            [chunk] if !wait && shared.stages().is_some() => {
                turn = None;
                Some(shared.in_flight.board_in_order(chunk.seq))
            }
            [chunk] if turn.is_some() && !wait && shared.keys_in_parallel() => {
                turn = None;
                Some(shared.in_flight.board(chunk.seq))
            }
            [first, ..] if !wait && shared.commit_in_order.load(Ordering::SeqCst) => {
                Some(shared.in_flight.board_in_order(first.seq))
            }
            _ => None,
        };
        drop(boarding);
        rewrite_records(shared, &mut batch);
        let start_s = shared.clock.elapsed().as_secs_f64();
        let batch_id = batch[0].seq;
        let outcomes = match worker.load_with_retries(&batch, wait) {
            Ok(Some(outcomes)) => outcomes,
            Ok(None) => break,
            Err(err) => {
                let _ = events.send(Event::Failed(err));
                break;
            }
        };
        drop(turn);
        if let Some(flight) = worker.flight.take() {
            flight.landed();
        }
        let mut busy = Vec::new();
        for (chunk, outcome) in batch.into_iter().zip(outcomes) {
            let event = match outcome {
                Outcome::Busy => {
                    busy.push(chunk);
                    continue;
                }
                Outcome::Elsewhere => {
                    shared.leading.ended(chunk.seq, || (Ending::LoadedAfter(0), None));
                    Event::Elsewhere
                }
                Outcome::Committed(done, binary) => {
                    committed_any = true;
                    shared.leading.ended(chunk.seq, || {
                        let loaded_any = done.rows + done.suppressed + done.skipped > 0;
                        let first = done.rejects.iter().min_by_key(|r| r.record).cloned();
                        (Ending::of(loaded_any, &done.rejects, chunk.loc.first_record), first)
                    });
                    shared.note_duplicates(&done.rejects, done.skipped, chunk.copied_records());
                    let rejected = done.rejects.len() as u64;
                    // Suppressed records count as the server's progress: a
                    // routing trigger stored them elsewhere.
                    let not_loaded = (rejected, done.skipped);
                    shared.progress.chunk_done(
                        (chunk.source_span, chunk.records),
                        done.rows + done.suppressed,
                        not_loaded,
                    );
                    let by = By { worker: id, binary, batch: batch_id };
                    let record = record(shared, &chunk, &done, by, start_s);
                    Event::Committed(record, done.rejects)
                }
            };
            if events.send(event).is_err() {
                break 'work;
            }
        }
        if !busy.is_empty() {
            deferred.push(busy);
        }
    }
    if let Some(reason) = refused {
        shared.note_refused(reason, committed_any);
    }
}

/// With `--workers auto`, waits while the pacer keeps this worker idle;
/// false when the queue ran out meanwhile (nothing left to take).
fn wait_for_turn(id: usize, shared: &Shared, queue: &Receiver<Vec<Chunk>>) -> bool {
    let Some(pace) = &shared.pace else { return true };
    while !pace.allows(id) && !shared.stopping() {
        if shared.fed_all.load(std::sync::atomic::Ordering::SeqCst) && queue.is_empty() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// How long a batch on the board of chunks in flight waits for another
/// session's claim on it to end (see [`Worker::claim`]), asking this often:
/// a dropped session ends once the server notices, within
/// [`CHECK_CLIENT_EVERY`] even while it waits for a lock.
const HELD_CLAIM_PATIENCE: Duration = Duration::from_secs(1);
const HELD_CLAIM_RETRY: Duration = Duration::from_millis(20);

/// A fast path runs under this savepoint, so a refusal keeps the chunk's
/// transaction and its ledger claim.
const SAVEPOINT: &str = "SAVEPOINT sluice_chunk";
const ROLLBACK_TO_SAVEPOINT: &str = "ROLLBACK TO SAVEPOINT sluice_chunk";

/// Batches to load, each with whether to wait for another process's claim.
type Work<'a> = Box<dyn Iterator<Item = (Vec<Chunk>, bool)> + 'a>;

/// Rewrites the batch's records with only the fields that load, their
/// values converted where asked (see [`crate::format::pick`]), once a
/// chunk. Here, not where the chunks are cut: the feeder is one thread for
/// the whole load, and the rewrite costs about as much as cutting.
fn rewrite_records(shared: &Shared, batch: &mut [Chunk]) {
    let Some(picks) = &shared.format.picks else { return };
    for chunk in batch.iter_mut().filter(|chunk| chunk.original.is_none()) {
        crate::format::pick::pick_fields(chunk, shared.format, picks);
    }
}

/// The next batch: from the queue, then the deferred batches (waiting for
/// the lock of the same first chunk that was held).
fn next_work(work: &mut Work<'_>, deferred: &mut Vec<Vec<Chunk>>) -> Option<(Vec<Chunk>, bool)> {
    if let Some(next) = work.next() {
        return Some(next);
    }
    *work = Box::new(std::mem::take(deferred).into_iter().map(|batch| (batch, true)));
    work.next()
}

/// How a chunk copied whole into the staging table ended.
enum Staged {
    Inserted(Isolated),
    /// COPY refused a record (with the server's refusal where it names
    /// the record in the text), or stopped early at a `\.` line.
    CopyRefused(Option<CopyRefusal>),
    /// The INSERT refused a row.
    InsertRefused,
}

/// How a chunk ended.
enum Outcome {
    /// This process committed it (or an earlier attempt of this process did,
    /// just before the connection was lost), as binary COPY or not.
    Committed(Isolated, bool),
    /// Another process committed it first.
    Elsewhere,
    /// Another process is loading it right now.
    Busy,
}

/// A connection ready to load: the COPY statement set and
/// `synchronous_commit` as the load wants it: off unless asked otherwise
/// (safe with the ledger: a commit lost in a crash loses its ledger row
/// too, and the chunk is loaded again), on for foreign tables.
fn open_session(shared: &Shared) -> Result<PgSession, Error> {
    let mut session = shared.target.connect()?;
    shared.waits.watch(session.backend_pid());
    session.set_copy_statement(&shared.copy_sql, shared.table);
    if let Some(setting) = shared.synchronous_commit {
        session.execute(&format!("SET synchronous_commit = {setting}"))?;
    }
    if session.server_version() >= 140_000 {
        session.execute(CHECK_CLIENT_EVERY)?;
    }
    // Mostly held already by the load's first session; a server restart
    // ends that one while the workers reconnect.
    crate::ledger::hold_presence(&session, &shared.job)?;
    Ok(session)
}

/// A loading session whose sluice was killed notices it this soon even
/// while it waits for a lock, and ends, letting go of its chunks' claims and
/// keys (PostgreSQL 14+). Otherwise it notices only when it next reads from
/// the client, which a lock wait can put off for as long as the lock is
/// held, and the run started after the kill finds those chunks held and
/// leaves them for its end (see [`ledger::wait_for_claims_held_elsewhere`]).
const CHECK_CLIENT_EVERY: &str = "SET client_connection_check_interval = '250ms'";

/// Connects again, pausing before each attempt, until the backoff expires.
fn reconnect(shared: &Shared, backoff: &mut Backoff) -> Result<PgSession, Error> {
    loop {
        backoff.sleep(&|| shared.stopping());
        match open_session(shared) {
            Ok(session) => return Ok(session),
            Err(e) if backoff.expired() || shared.stopping() => return Err(e),
            Err(_) => {}
        }
    }
}

/// How often `--on-conflict-do-update`'s chunks try COPY straight into the
/// table (see [`Worker::copy_straight`]): each batch, while the tries are
/// taken or refused early (in the first eighth of their records: a file of
/// changes to held rows is refused at its first record, which costs a
/// round trip); after a refusal later than that, which undid most of a
/// COPY, every second batch, then every fourth, up to every
/// [`StraightTries::MOST_SKIPPED`]th while such refusals go on.
#[derive(Default)]
struct StraightTries {
    /// Batches to go through the staging table before the next try.
    skip: u32,
    /// What `skip` was set to after the last late refusal (0 once a try
    /// was taken).
    backoff: u32,
}

impl StraightTries {
    const MOST_SKIPPED: u32 = 64;

    /// Whether this batch tries (counting it as skipped when not).
    fn worth_a_try(&mut self) -> bool {
        match self.skip {
            0 => true,
            _ => {
                self.skip -= 1;
                false
            }
        }
    }

    fn took(&mut self) {
        self.backoff = 0;
    }

    fn refused(&mut self, early: bool) {
        if !early {
            self.backoff = (self.backoff * 2).clamp(1, Self::MOST_SKIPPED);
            self.skip = self.backoff;
        }
    }
}

/// One worker's connection and reading state.
struct Worker<'s> {
    shared: &'s Shared<'s>,
    session: PgSession,
    reader: RangeReader,
    /// The last chunk had rejects: expect more in the next one.
    expect_rejects: bool,
    /// This worker's binary encoder, when the plan is binary.
    encoder: Option<BinaryEncoder>,
    /// The last chunk committed went as binary.
    last_binary: bool,
    /// The chunk loading, when it loads alongside others (see
    /// [`super::in_flight`]).
    flight: Option<Flight<'s>>,
    /// When `--on-conflict-do-update`'s chunks try COPY straight into the
    /// table (see [`Worker::copy_straight`]).
    straight: StraightTries,
}

impl<'s> Worker<'s> {
    /// Loads a batch; when the connection is lost, the server is restarting
    /// or its failure may pass (a full disk: see [`is_transient`]), reconnects
    /// with backoff until `--retry-timeout`, saying so on the progress line,
    /// then asks the ledger whether the lost attempt committed before trying
    /// again, so a chunk is never loaded twice. `None`: a Ctrl-C came while
    /// the batch waited for the server to come back; it is left for the next
    /// run, as a chunk not yet handed out is (the wait's reason is not the
    /// load's error: the user stopped it).
    ///
    /// [`is_transient`]: crate::sink::postgres::is_transient
    fn load_with_retries(&mut self, batch: &[Chunk], wait: bool) -> Result<Option<Vec<Outcome>>, Error> {
        let shared = self.shared;
        let mut retry = None;
        let all: Vec<&Chunk> = batch.iter().collect();
        let mut outcome = self.load_once(&all, wait);
        loop {
            let err = match outcome {
                Err(err) if err.may_pass() => err,
                other => return other.map(Some),
            };
            let (backoff, waiting) = retry.get_or_insert_with(|| {
                let backoff = Backoff::new(shared.retry_timeout);
                let waiting = shared.progress.waiting(backoff.deadline);
                (backoff, waiting)
            });
            if shared.interrupted() {
                return Ok(None);
            }
            if backoff.expired() || shared.stopping() {
                return Err(err);
            }
            waiting.because(err.to_string());
            self.session = match reconnect(shared, backoff) {
                Ok(session) => session,
                Err(_) if shared.interrupted() => return Ok(None),
                Err(_) => return Err(err),
            };
            // The ledger query may lose the connection too (a server that
            // accepted it while going down): that is one more try.
            outcome = self.load_again(&all, wait);
        }
    }

    /// After a lost connection: the chunks whose lost attempt committed, and
    /// a new attempt at the others.
    fn load_again(&mut self, batch: &[&Chunk], wait: bool) -> Result<Vec<Outcome>, Error> {
        let known = batch.iter().map(|c| self.committed_before(c)).collect::<Result<Vec<_>, _>>()?;
        let rest: Vec<&Chunk> = batch.iter().zip(&known).filter(|(_, k)| k.is_none()).map(|(c, _)| *c).collect();
        let mut loaded = if rest.is_empty() { Vec::new() } else { self.load_once(&rest, wait)? }.into_iter();
        Ok(known
            .into_iter()
            .map(|k| k.map_or_else(|| loaded.next().expect("one per chunk"), |done| Outcome::Committed(done, false)))
            .collect())
    }

    /// Claims the chunks in the ledger, loads those it got, and commits them
    /// with their rejects and their ledger rows, all in one transaction;
    /// again from the start while a commit is refused for a reason that
    /// passes by loading again (see [`Commit`]).
    fn load_once(&mut self, batch: &[&Chunk], wait: bool) -> Result<Vec<Outcome>, Error> {
        loop {
            if let Some(outcomes) = self.load_attempt(batch, wait)? {
                return Ok(outcomes);
            }
            // Rolled back: after a Ctrl-C the batch is left for the next run.
            if self.shared.interrupted() {
                return Err(Error::Transient("the load is stopping".into()));
            }
        }
    }

    /// One attempt of [`Worker::load_once`]: `None` when it rolled back, to
    /// be loaded again.
    fn load_attempt(&mut self, batch: &[&Chunk], wait: bool) -> Result<Option<Vec<Outcome>>, Error> {
        if let Some(flight) = self.flight.as_ref().filter(|f| f.in_order) {
            flight.publish_backend(&self.session);
        }
        let rows: Vec<ChunkRow> = batch.iter().map(|c| ledger_row(self.shared, c, None)).collect();
        let Claimed { claims, at } = self.claim(&rows, wait)?;
        let at_each_row = self.shared.checked_at_each_row.now();
        if let Some(sql) = AtEachRow::set_constraints(&at_each_row) {
            self.session.execute(&sql)?;
        }
        let (mine, listed): (Vec<&Chunk>, Vec<bool>) = batch
            .iter()
            .zip(&claims)
            .filter_map(|(b, c)| match c {
                Claim::Mine { listed } => Some((*b, *listed)),
                _ => None,
            })
            .unzip();
        let (mut dones, mut binary): (Vec<Isolated>, Vec<bool>) = (Vec::new(), Vec::new());
        if !mine.is_empty() {
            let filled = self.fill_defaults(&mine)?;
            let copied: Vec<&Chunk> = mine.iter().zip(&filled).map(|(c, f)| f.as_ref().unwrap_or(c)).collect();
            (dones, binary) = self.copy_all(&copied)?.into_iter().unzip();
            self.expect_rejects = dones.iter().any(|d| !d.rejects.is_empty());
            for (chunk, done) in mine.iter().zip(&mut dones) {
                if let Some(runaway) = chunk.runaway {
                    done.rejects.push(self.reader.runaway_reject(self.shared, chunk, runaway)?);
                }
            }
            match self.commit_chunks(&mine, &listed, &dones, &at, &at_each_row)? {
                Commit::Done => {}
                Commit::Elsewhere => {
                    // Another process recorded one of them first: all roll
                    // back, and the claim taken again (waiting) finds them
                    // done.
                    self.session.execute("ROLLBACK")?;
                    return Ok(Some(
                        claims
                            .iter()
                            .map(|c| if *c == Claim::Done { Outcome::Elsewhere } else { Outcome::Busy })
                            .collect(),
                    ));
                }
                // Rolled back: loaded again, checking every constraint at
                // each row, or once the earlier chunks have taken their keys.
                Commit::Refused => return Ok(None),
                Commit::GaveWay => {
                    if let Some(flight) = &self.flight {
                        flight.wait_for_earlier_to_end(&|| self.shared.interrupted());
                    }
                    return Ok(None);
                }
            }
        }
        let mut sent = dones.into_iter().zip(binary);
        Ok(Some(
            claims
                .iter()
                .map(|claim| match claim {
                    Claim::Mine { .. } => {
                        let (done, binary) = sent.next().expect("one per chunk claimed");
                        Outcome::Committed(done, binary)
                    }
                    Claim::Done => Outcome::Elsewhere,
                    Claim::Busy => Outcome::Busy,
                })
                .collect(),
        ))
    }

    /// Each claimed chunk with the defaults its documents lack computed by
    /// the server in the chunk's transaction (see [`defaults::fill`]);
    /// `None` for a chunk without any.
    fn fill_defaults(&mut self, mine: &[&Chunk]) -> Result<Vec<Option<Chunk>>, Error> {
        let shared = self.shared;
        let Some(columns) = shared.format.documents.as_deref().filter(|d| !d.computed.is_empty()) else {
            return Ok(mine.iter().map(|_| None).collect());
        };
        let fill = |chunk: &&Chunk| {
            let records = self.reader.bytes_of(shared, chunk)?;
            defaults::fill(&self.session, columns, chunk, &records)
        };
        mine.iter().map(fill).collect()
    }

    /// Loads claimed chunks: several in one COPY when they can, else each as
    /// it would alone. With each, whether it went as binary.
    ///
    /// After a batch with rejects, the next one is screened first, as is a
    /// batch holding bytes its input's encoding could not read: the chunks
    /// with a record the client suspects (see [`looks_clean`]) are isolated,
    /// the runs of clean ones between them still go as one COPY each.
    fn copy_all(&mut self, mine: &[&Chunk]) -> Result<Vec<(Isolated, bool)>, Error> {
        // A single chunk is screened where it is copied (`copy_or_isolate`).
        if mine.len() < 2 || !(self.expect_rejects || mine.iter().any(|chunk| holds_unreadable(self.shared, chunk))) {
            return self.copy_split(mine);
        }
        let mut dones = Vec::with_capacity(mine.len());
        let mut from = 0;
        for (at, chunk) in mine.iter().enumerate() {
            let bytes = self.reader.bytes_of(self.shared, chunk)?;
            if !looks_clean(self.shared, chunk, &bytes) {
                dones.extend(self.copy_split(&mine[from..at])?);
                let done = self.isolate_from_batch(chunk, Some(&bytes))?;
                dones.push((done, self.last_binary));
                from = at + 1;
            }
        }
        dones.extend(self.copy_split(&mine[from..])?);
        Ok(dones)
    }

    /// Chunks in one COPY. When the server refuses it, the chunks before the
    /// one its line names go again as one COPY, that chunk is isolated, and
    /// the chunks after it go on as a batch: a record in ten thousand bad in
    /// a glob of small files costs a few statements per batch, not one per
    /// file. Each part is checked by its own COPY, so a wrong guess (CSV
    /// counts quoted line ends as lines) costs statements, never a row.
    fn copy_split(&mut self, mine: &[&Chunk]) -> Result<Vec<(Isolated, bool)>, Error> {
        if mine.len() < 2 {
            return self.copy_each(mine);
        }
        match self.copy_together(mine)? {
            Together::Loaded(dones) => Ok(dones.into_iter().map(|done| (done, self.last_binary)).collect()),
            Together::Refused(Some(bad)) => {
                let mut dones = self.copy_split(&mine[..bad])?;
                let done = self.isolate_from_batch(mine[bad], None)?;
                dones.push((done, self.last_binary));
                dones.extend(self.copy_split(&mine[bad + 1..])?);
                Ok(dones)
            }
            Together::Refused(None) => {
                let (left, right) = mine.split_at(mine.len() / 2);
                let mut dones = self.copy_split(left)?;
                dones.extend(self.copy_split(right)?);
                Ok(dones)
            }
            Together::Uneven => self.copy_each(mine),
        }
    }

    /// A chunk of a batch that the server refused or the client suspects,
    /// by isolation (over `bytes` when read already); with
    /// `--on-conflict-do-update`, through the staging table, whose path
    /// screens and isolates it (into the table it would be rejected for
    /// every key the table holds).
    fn isolate_from_batch(&mut self, chunk: &Chunk, bytes: Option<&[u8]>) -> Result<Isolated, Error> {
        match (self.merging(), bytes) {
            (Some(_), _) => self.copy_or_isolate(chunk),
            (None, Some(bytes)) => self.isolate_bytes(chunk, bytes, None),
            (None, None) => self.isolate(chunk, None),
        }
    }

    /// Each chunk as it would go alone.
    fn copy_each(&mut self, mine: &[&Chunk]) -> Result<Vec<(Isolated, bool)>, Error> {
        mine.iter().map(|chunk| Ok((self.copy_or_isolate(chunk)?, self.last_binary))).collect()
    }

    /// A batch's chunks as one COPY (binary when the plan says so), under a
    /// savepoint, rolled back unless the server took exactly their records.
    fn copy_together(&mut self, mine: &[&Chunk]) -> Result<Together, Error> {
        self.last_binary = false;
        if let Some(staging) = self.merging() {
            return self.merge_together(mine, staging);
        }
        let records: u64 = mine.iter().map(|c| c.copied_records()).sum();
        let (binary, outcome) = self.copy_into(mine, None)?;
        if let CopyOutcome::Loaded(rows) = outcome {
            if rows == records {
                self.last_binary = binary;
                return Ok(Together::Loaded(
                    mine.iter().map(|c| Isolated::all(c.copied_records(), c.copied_records())).collect(),
                ));
            }
        }
        self.session.execute(ROLLBACK_TO_SAVEPOINT)?;
        Ok(match outcome {
            CopyOutcome::Refused(refusal) => {
                Together::Refused(refusal.server_line.filter(|&l| l > 0).and_then(|l| chunk_of_line(mine, l)))
            }
            CopyOutcome::Loaded(_) => Together::Uneven,
        })
    }

    /// `--on-conflict-do-update`'s staging, which every chunk goes through.
    fn merging(&self) -> Option<&'s Staging> {
        self.shared.stages().filter(|s| s.merges())
    }

    /// A batch's chunks staged by one COPY and merged by one statement,
    /// which counts each chunk's rows (see
    /// [`super::replace::Merging::batch`]); under the batch's savepoint,
    /// rolled back unless the counts add up.
    fn merge_together(&mut self, mine: &[&Chunk], staging: &Staging) -> Result<Together, Error> {
        if let Some(dones) = self.copy_straight(mine)? {
            return Ok(Together::Loaded(dones));
        }
        let records: Vec<u64> = mine.iter().map(|c| c.copied_records()).collect();
        let Some(merge) = staging.merging().and_then(|m| m.batch(&records)) else { return Ok(Together::Uneven) };
        let (binary, outcome) = self.copy_into(mine, Some(staging))?;
        let refusal = match outcome {
            CopyOutcome::Loaded(rows) if rows == records.iter().sum::<u64>() => None,
            CopyOutcome::Loaded(_) => Some(Together::Uneven),
            CopyOutcome::Refused(refusal) => {
                Some(Together::Refused(refusal.server_line.filter(|&l| l > 0).and_then(|l| chunk_of_line(mine, l))))
            }
        };
        let merged = match refusal {
            Some(refusal) => Err(refusal),
            // A refusal names no record: halves of the batch go again.
            None => match self.session.query_statements(&merge)? {
                Ok(rows) => Merged::of_batch(&rows, &records)?.ok_or(Together::Uneven),
                Err(_) => Err(Together::Refused(None)),
            },
        };
        let merged = match merged {
            Ok(merged) => merged,
            Err(together) => {
                self.session.execute(ROLLBACK_TO_SAVEPOINT)?;
                return Ok(together);
            }
        };
        self.session.execute(&staging.drop_sql())?;
        self.last_binary = binary;
        Ok(Together::Loaded(merged.into_iter().map(|m| Isolated::merged(m, binary)).collect()))
    }

    /// `--on-conflict-do-update`'s chunks by one COPY straight into the
    /// table, as a load without the flag copies them, when the server takes
    /// every record: then no record's key was held, nor repeated, and the
    /// merge would have inserted each of them. `None`, rolled back to the
    /// savepoint, when it refused one (a held key, most likely): the chunks
    /// then go through the staging table, which merges them.
    ///
    /// Why: a merge inserts a row at a time after staging the rows and
    /// sorting their keys, 3.3 times as long as COPY into an empty table
    /// (3,000 files of 200 lines), and a job that loads with the flag
    /// every night, so that a run again replaces rather than duplicates,
    /// loads its first and largest run into an empty table. A refused try
    /// costs the records before the refusal, so after one late in the
    /// batch this worker tries less and less often (see [`StraightTries`]).
    fn copy_straight(&mut self, mine: &[&Chunk]) -> Result<Option<Vec<Isolated>>, Error> {
        let unreadable = mine.iter().any(|chunk| holds_unreadable(self.shared, chunk));
        if self.expect_rejects || unreadable || !self.straight.worth_a_try() {
            return Ok(None);
        }
        let records: u64 = mine.iter().map(|c| c.copied_records()).sum();
        let (binary, outcome) = self.copy_into(mine, None)?;
        if matches!(outcome, CopyOutcome::Loaded(rows) if rows == records) {
            self.straight.took();
            self.last_binary = binary;
            return Ok(Some(mine.iter().map(|c| Isolated::all(c.copied_records(), c.copied_records())).collect()));
        }
        self.session.execute(ROLLBACK_TO_SAVEPOINT)?;
        // The line of a refusal is the record's number in the COPY (a
        // tuple's, in binary); a count short of the records names none.
        let refused_at = match outcome {
            CopyOutcome::Refused(refusal) => refusal.server_line,
            CopyOutcome::Loaded(_) => None,
        };
        self.straight.refused(refused_at.is_some_and(|line| line.saturating_mul(8) <= records));
        Ok(None)
    }

    /// The fast path (one COPY of the whole chunk, under a savepoint so a
    /// refusal keeps the transaction and its claim); on a refusal, isolation.
    fn copy_or_isolate(&mut self, chunk: &Chunk) -> Result<Isolated, Error> {
        self.last_binary = false;
        if chunk.copy_len() == 0 {
            return Ok(Isolated::all(0, 0));
        }
        if let Some(staging) = self.staging_for(chunk) {
            return self.stage(chunk, staging);
        }
        if self.expect_rejects || holds_unreadable(self.shared, chunk) || self.keys_flight().is_some() {
            // The previous chunk had bad records, or this one has bytes its
            // encoding cannot read: skip the fast paths, which would most
            // likely fail part way after sending the whole chunk. A chunk
            // loading alongside others copies none of its records before
            // it has looked at the keys of those before it.
            return self.isolate(chunk, None);
        }
        match self.copy_binary(&[chunk])? {
            Some(CopyOutcome::Loaded(rows)) => {
                self.last_binary = true;
                return Ok(Isolated::all(chunk.copied_records(), rows));
            }
            Some(CopyOutcome::Refused(refusal)) => {
                // The server's line numbers count binary tuples; isolation
                // finds the bad records in the text itself. A refusal that
                // names no line (a foreign key's, checked at the end) is the
                // whole chunk's as sent, as isolation's first COPY would get
                // it again: it goes on, and spares that COPY.
                self.session.execute(ROLLBACK_TO_SAVEPOINT)?;
                return self.isolate(chunk, Some(refusal).filter(|r| r.server_line.is_none()));
            }
            None => {}
        }
        match self.copy_text_into(&[chunk], None)? {
            CopyOutcome::Loaded(rows)
                if rows < chunk.copied_records()
                    && may_hold_end_of_data_line(&self.reader.bytes_of(self.shared, chunk)?) =>
            {
                // The server stopped early without an error: a `\.` line,
                // which COPY takes for the end of the data. Isolation
                // rejects it and loads the records after it.
                self.session.execute(ROLLBACK_TO_SAVEPOINT)?;
                self.isolate(chunk, None)
            }
            // Fewer rows without a `\.` line: a trigger suppressed some.
            CopyOutcome::Loaded(rows) => Ok(Isolated::all(chunk.copied_records(), rows)),
            CopyOutcome::Refused(refusal) => {
                self.session.execute(ROLLBACK_TO_SAVEPOINT)?;
                self.isolate(chunk, Some(refusal))
            }
        }
    }

    /// The staged path for `chunk` (see [`stage`]), when the load takes it
    /// now and the chunk may: it commits in input order (or is the only
    /// worker's).
    fn staging_for(&self, chunk: &Chunk) -> Option<&'s Staging> {
        // Every chunk of `--on-conflict-do-update`'s: there is no other way.
        if let Some(staging) = self.merging() {
            return Some(staging);
        }
        let in_order = match &self.flight {
            Some(flight) => flight.in_order,
            None => !self.shared.keys_in_place,
        };
        let shared = self.shared;
        shared.stages().filter(|_| in_order && !holds_unreadable(shared, chunk))
    }

    /// The chunk through the staging table: copied there whole, or, after a
    /// record COPY could not read, by isolation (straight away after a chunk
    /// with rejects, unless its records all look clean: a refusal costs the
    /// whole COPY). Any refusal of the INSERT sends the chunk the direct way,
    /// where each record is rejected for the reason it would be there. A
    /// chunk of `--on-conflict-do-update` tries COPY straight into the table
    /// first (see [`Worker::copy_straight`]).
    fn stage(&mut self, chunk: &Chunk, staging: &Staging) -> Result<Isolated, Error> {
        if staging.merges() {
            if let Some(mut done) = self.copy_straight(&[chunk])? {
                return Ok(done.remove(0));
            }
        }
        let shared = self.shared;
        // Read once: after a chunk with rejects, to screen, and for isolation.
        let read = match self.expect_rejects {
            true => Some(self.reader.bytes_of(shared, chunk)?),
            false => None,
        };
        let refusal = match read.as_ref().is_some_and(|bytes| !looks_clean(shared, chunk, bytes)) {
            false => match self.copy_staged(chunk, staging)? {
                Staged::Inserted(done) => return Ok(done),
                Staged::CopyRefused(refusal) => refusal,
                // Isolation merges run by run, and finds the record.
                Staged::InsertRefused if staging.merges() => None,
                Staged::InsertRefused => return self.isolate(chunk, None),
            },
            true => None,
        };
        let bytes = match read {
            Some(bytes) => bytes,
            None => self.reader.bytes_of(shared, chunk)?,
        };
        self.session.execute(&staging.isolation_prelude(&shared.savepoint(SAVEPOINT, &[chunk])))?;
        let runs = binary_runs(shared, self.encoder.as_mut());
        let done = isolate(&mut self.session, shared, chunk, &bytes, refusal, runs, Route::Staged(staging))?;
        if staging.merges() {
            // Every run was merged as it went (see `replace`).
            self.session.execute(&staging.drop_sql())?;
            self.last_binary = done.mostly_binary();
            return Ok(Isolated { staged: true, ..done });
        }
        match self.insert_staged(staging)? {
            Some(inserted) => {
                self.last_binary = done.mostly_binary();
                Ok(done.inserted_from_staging(inserted.rows))
            }
            None => self.isolate_bytes(chunk, &bytes, None),
        }
    }

    /// The chunk copied whole into the staging table and inserted from
    /// there, skipping the records whose key is held; rolled back to the
    /// chunk's savepoint when the server refused a record on the way.
    fn copy_staged(&mut self, chunk: &Chunk, staging: &Staging) -> Result<Staged, Error> {
        let records = chunk.copied_records();
        let (binary, outcome) = self.copy_into(&[chunk], Some(staging))?;
        match outcome {
            CopyOutcome::Loaded(rows) if rows == records => {}
            // Fewer rows than records: a `\.` line, the end of COPY's data.
            CopyOutcome::Loaded(_) => {
                self.session.execute(ROLLBACK_TO_SAVEPOINT)?;
                return Ok(Staged::CopyRefused(None));
            }
            // A binary COPY's line is a tuple's number: isolation finds the
            // record in the text itself.
            CopyOutcome::Refused(refusal) => {
                self.session.execute(ROLLBACK_TO_SAVEPOINT)?;
                return Ok(Staged::CopyRefused(Some(refusal).filter(|_| !binary)));
            }
        }
        let Some(inserted) = self.insert_staged(staging)? else { return Ok(Staged::InsertRefused) };
        self.last_binary = binary;
        Ok(Staged::Inserted(match staging.merges() {
            true => Isolated::merged(inserted, binary),
            false => Isolated::staged(records, inserted.rows, binary),
        }))
    }

    /// The staged rows inserted into the table (or merged, see
    /// [`super::replace`]), and the staging table dropped: how many rows
    /// the server inserted or merged. `None`, rolled back to the chunk's
    /// savepoint, when it refused one.
    fn insert_staged(&mut self, staging: &Staging) -> Result<Option<Merged>, Error> {
        let done = match staging.merges() {
            true => self.merge_whole(staging)?,
            false => {
                self.session.execute_counted(staging.insert_sql())?.map(|rows| Merged { rows, ..Merged::default() })
            }
        };
        match done {
            Ok(merged) => {
                self.session.execute(&staging.drop_sql())?;
                Ok(Some(merged))
            }
            Err(refusal) => {
                if !staging.merges() && stage::refuses_every_chunk(refusal.sqlstate.as_deref()) {
                    self.shared.staging_refused.store(true, Ordering::SeqCst);
                }
                self.session.execute(ROLLBACK_TO_SAVEPOINT)?;
                Ok(None)
            }
        }
    }

    /// `--on-conflict-do-update`'s merge of a chunk staged whole (see
    /// [`super::replace::Merging`]): as it is, and again on each key's
    /// last row where the server met a key twice.
    fn merge_whole(&mut self, staging: &Staging) -> Result<Result<Merged, CopyRefusal>, Error> {
        let (merge, as_staged) = staging.merge_whole_sql().expect("a merging staging table");
        let merged = match self.session.query_statements(merge)? {
            Err(refusal) if as_staged && met_a_key_twice(refusal.sqlstate.as_deref()) => {
                let again = staging.note_keys_repeat().expect("a merging staging table");
                self.session.query_statements(again)?
            }
            merged => merged,
        };
        Ok(match merged {
            Ok(rows) => Ok(Merged::of(&rows).ok_or_else(|| unexpected_merge_reply(&rows))?),
            Err(refusal) => Err(refusal),
        })
    }

    /// Reject isolation over the chunk's text (see [`isolate`]).
    fn isolate(&mut self, chunk: &Chunk, refusal: Option<CopyRefusal>) -> Result<Isolated, Error> {
        let bytes = self.reader.bytes_of(self.shared, chunk)?;
        self.isolate_bytes(chunk, &bytes, refusal)
    }

    /// [`Worker::isolate`] over the chunk's bytes already read; notes
    /// whether most of its rows went as binary.
    fn isolate_bytes(&mut self, chunk: &Chunk, bytes: &[u8], refusal: Option<CopyRefusal>) -> Result<Isolated, Error> {
        let runs = binary_runs(self.shared, self.encoder.as_mut());
        let route = match self.flight.as_ref().filter(|f| !f.in_order) {
            Some(flight) => Route::Alongside(flight),
            None => Route::Table,
        };
        let done = isolate(&mut self.session, self.shared, chunk, bytes, refusal, runs, route)?;
        self.last_binary = done.mostly_binary();
        Ok(done)
    }

    /// The binary fast path, under the savepoint (which the caller rolls
    /// back to after a refusal): `None` when the plan is text or the
    /// encoder was unsure of a record (the chunks then go as text).
    fn copy_binary(&mut self, chunks: &[&Chunk]) -> Result<Option<CopyOutcome>, Error> {
        self.copy_binary_into(chunks, None)
    }

    /// The chunks in one COPY under the savepoint (which the caller rolls
    /// back to after a refusal), into the table or into the staging
    /// table: binary where the plan says so and the encoder was sure of
    /// every record, else as the input's text; with whether it was binary.
    fn copy_into(&mut self, chunks: &[&Chunk], staging: Option<&Staging>) -> Result<(bool, CopyOutcome), Error> {
        Ok(match self.copy_binary_into(chunks, staging)? {
            Some(outcome) => (true, outcome),
            None => (false, self.copy_text_into(chunks, staging)?),
        })
    }

    /// The chunks as the input's text under the savepoint (which the caller
    /// rolls back to after a refusal), into the table or into the staging
    /// table.
    fn copy_text_into(&mut self, chunks: &[&Chunk], staging: Option<&Staging>) -> Result<CopyOutcome, Error> {
        let (shared, reader) = (self.shared, &mut self.reader);
        let savepoint = shared.savepoint(SAVEPOINT, chunks);
        let (prelude, sql) = match staging {
            Some(staging) => (staging.prelude(&savepoint), staging.copy_sql(false).expect("a text COPY")),
            None => (savepoint, shared.copy_sql.as_str()),
        };
        self.session.copy_with(&prelude, sql, &mut |send| reader.feed_all(shared, chunks, send))
    }

    /// [`Worker::copy_binary`] into the table, or into the staging table.
    fn copy_binary_into(&mut self, chunks: &[&Chunk], staging: Option<&Staging>) -> Result<Option<CopyOutcome>, Error> {
        let (shared, reader) = (self.shared, &mut self.reader);
        let (Some(plan), Some(encoder)) = (&shared.binary, self.encoder.as_mut()) else { return Ok(None) };
        if !plan.wanted() {
            return Ok(None);
        }
        let savepoint = shared.savepoint(SAVEPOINT, chunks);
        let (prelude, sql) = match staging {
            Some(staging) => (staging.prelude(&savepoint), staging.copy_sql(true).expect("a binary plan")),
            None => (savepoint, plan.sql.as_str()),
        };
        plan.note_try();
        let mut unsure = None;
        let outcome = self
            .session
            .copy_with(&prelude, sql, &mut |send| reader.feed_binary(shared, chunks, encoder, send, &mut unsure));
        if let Some((index, unsure)) = unsure {
            self.session.execute(ROLLBACK_TO_SAVEPOINT)?;
            let chunk = chunks[index];
            let file = &shared.sources[chunk.loc.source].name;
            let record = chunk.loc.first_record + unsure.record;
            plan.note_fallback(format!("{file} record {record}: {}", unsure.reason));
            return Ok(None);
        }
        outcome.map(Some)
    }

    /// Stores the chunks' rejects, records their ledger rows done (each
    /// `listed` or not, committed `at`) and commits: the good rows, the
    /// rejected records and the ledger rows are durable together.
    /// `at_each_row`: the constraints the transaction checked at each row.
    fn commit_chunks(
        &mut self,
        chunks: &[&Chunk],
        listed: &[bool],
        dones: &[Isolated],
        at: &str,
        at_each_row: &[Option<String>],
    ) -> Result<Commit, Error> {
        let shared = self.shared;
        let table = shared.table.display();
        let rejects: Vec<u8> = chunks
            .iter()
            .zip(dones)
            .flat_map(|(c, d)| crate::rejects::copy_text(&d.rejects, &shared.job, &table, c.seq))
            .collect();
        if !rejects.is_empty() {
            self.session.copy_rows(crate::rejects::COPY_INTO_TABLE, &rejects)?;
        }
        let rows: Vec<(ChunkRow, bool)> =
            chunks.iter().zip(dones).zip(listed).map(|((c, d), l)| (ledger_row(shared, c, Some(d)), *l)).collect();
        if !ledger::record_done(&mut self.session, &rows, at)? {
            return Ok(Commit::Elsewhere);
        }
        if self.gives_way()? {
            self.session.execute("ROLLBACK")?;
            shared.gave_way.fetch_add(1, Ordering::SeqCst);
            return Ok(Commit::GaveWay);
        }
        match self.session.commit()? {
            None => Ok(Commit::Done),
            Some(refusal) if shared.checked_at_each_row.note(&refusal, at_each_row) => Ok(Commit::Refused),
            // The constraint was checked at each row, and something deferred
            // it again: a refusal now is not one a record's line can be
            // found for, and loading again would be refused again.
            Some(refusal) => Err(Error::Server(format!(
                "COMMIT refused: {}, although the chunk's transaction checked that constraint at each row \
                 (SET CONSTRAINTS ... IMMEDIATE): something in it deferred it again (a trigger or function \
                 running SET CONSTRAINTS ... DEFERRED?), so the server named no line. Remove what defers it, \
                 or make the constraint NOT DEFERRABLE, then run the same command again to resume",
                describe_refusal(&refusal)
            ))),
        }
    }

    /// Claims the batch (see [`ledger::claim`]). One on the board of chunks
    /// in flight (committing in input order, or publishing its keys to the
    /// chunks after it) that finds the batch held by another session tries
    /// again for a moment before leaving it for the end of the load, where
    /// the batches after it would have committed first and kept the later
    /// lines of keys it holds. Why: this worker's own session, dropped after
    /// an error to connect again, may still hold the claim until the server
    /// notices, and so may a killed run's sessions (see
    /// [`ledger::wait_for_claims_held_elsewhere`]): in a test that kills and
    /// resumes a load with rare repeated keys on a busy machine, the keys
    /// that kept their later line had their first in chunks that the last
    /// run, not killed, had left for its end. A live process's claim, held
    /// for its whole batch, is still left for the end, after that moment.
    fn claim(&self, rows: &[ChunkRow], wait: bool) -> Result<Claimed, Error> {
        let boarded = !wait && self.flight.is_some();
        let until = Instant::now() + HELD_CLAIM_PATIENCE;
        loop {
            let claimed = ledger::claim(&self.session, rows, wait)?;
            let held = claimed.claims.iter().all(|c| *c == Claim::Busy);
            if !held || !boarded || Instant::now() >= until || self.shared.stopping() {
                return Ok(claimed);
            }
            std::thread::sleep(HELD_CLAIM_RETRY);
        }
    }

    /// The chunk's flight where it publishes its keys (see
    /// [`super::in_flight`]), not where it only commits in input order.
    fn keys_flight(&self) -> Option<&Flight<'_>> {
        self.flight.as_ref().filter(|f| !f.in_order)
    }

    /// For a chunk committing in input order: waits until the chunks before
    /// it have committed, and says whether it must give way to one of them
    /// (see [`Flight::wait_for_earlier`]).
    fn gives_way(&self) -> Result<bool, Error> {
        let Some(flight) = self.flight.as_ref().filter(|f| f.in_order) else { return Ok(false) };
        Ok(flight.wait_for_earlier(&self.session)? == Turn::GiveWay)
    }

    /// The chunk's counts and rejects when this process committed its ledger
    /// row: an attempt whose connection was lost after the server committed.
    fn committed_before(&self, chunk: &Chunk) -> Result<Option<Isolated>, Error> {
        let shared = self.shared;
        let Some(counts) = ledger::committed_rows(&self.session, &shared.job, chunk.seq)? else {
            return Ok(None);
        };
        let (from, to) = (chunk.loc.byte_offset.to_string(), (chunk.loc.byte_offset + chunk.loc.byte_len).to_string());
        let (seq, file) = (chunk.seq.to_string(), shared.sources[chunk.loc.source].name.to_string());
        let params = [Some(shared.job.as_str()), Some(&seq), Some(&file), Some(&from), Some(&to)];
        let rejects = self
            .session
            .query(crate::rejects::SELECT_FOR_CHUNK, &params)?
            .iter()
            .map(|r| Reject::from_row(r))
            .collect();
        let ledger::Committed { rows, suppressed, skipped, replaced } = counts;
        Ok(Some(Isolated { rows, binary_rows: 0, suppressed, skipped, rejects, copies: 0, staged: false, replaced }))
    }
}

/// The constraints checked at commit that refused a chunk, each with the
/// server's words (see `Shared::checked_at_each_row`): only those are
/// checked at each row from then on, so that another one deferred, such as
/// a foreign key to rows later in the chunk, still is at commit. `None`
/// where the server named no constraint: every one.
#[derive(Default)]
pub(super) struct AtEachRow(std::sync::Mutex<Vec<(Option<String>, String)>>);

impl AtEachRow {
    fn list(&self) -> std::sync::MutexGuard<'_, Vec<(Option<String>, String)>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The constraints a chunk's transaction checks at each row now.
    fn now(&self) -> Vec<Option<String>> {
        self.list().iter().map(|(constraint, _)| constraint.clone()).collect()
    }

    /// The statement that checks `constraints` at each row.
    fn set_constraints(constraints: &[Option<String>]) -> Option<String> {
        let names: Option<Vec<&str>> = constraints.iter().map(Option::as_deref).collect();
        match names {
            _ if constraints.is_empty() => None,
            Some(names) => Some(format!("SET CONSTRAINTS {} IMMEDIATE", names.join(", "))),
            None => Some("SET CONSTRAINTS ALL IMMEDIATE".into()),
        }
    }

    /// Notes a refusal at commit of a transaction that checked `checked` at
    /// each row; false when it checked the refusing constraint already.
    fn note(&self, refusal: &CopyRefusal, checked: &[Option<String>]) -> bool {
        if checked.contains(&None) || (refusal.constraint.is_some() && checked.contains(&refusal.constraint)) {
            return false;
        }
        let mut list = self.list();
        if !list.iter().any(|(constraint, _)| *constraint == refusal.constraint) {
            list.push((refusal.constraint.clone(), describe_refusal(refusal)));
        }
        true
    }

    /// Each constraint that refused a chunk, with the server's words.
    pub fn refused(&self) -> Vec<(Option<String>, String)> {
        self.list().clone()
    }
}

/// How a chunk transaction's commit ended.
enum Commit {
    Done,
    /// Another process recorded one of the chunks first (nothing committed).
    Elsewhere,
    /// A constraint checked at commit refused a row (nothing committed):
    /// see `Shared::checked_at_each_row`.
    Refused,
    /// An earlier chunk in flight waited for this one's transaction, which
    /// rolled back to let it take their shared key (see
    /// [`Flight::wait_for_earlier`]).
    GaveWay,
}

/// How a batch's COPY ended.
enum Together {
    /// The server took every record: each chunk's outcome.
    Loaded(Vec<Isolated>),
    /// The server refused a record (rolled back): the chunk its line falls
    /// in, when it named a line within the batch.
    Refused(Option<usize>),
    /// The server took another number of rows without an error (rolled
    /// back): a `\.` line or a trigger's suppressed rows, found chunk by
    /// chunk.
    Uneven,
}

/// The chunk of a batch that holds the server's `COPY t, line N`, counting
/// a line per record: exact for text and binary COPY, where the server
/// counts records (and tuples); in CSV it also counts quoted line ends, so
/// the guess may fall after the bad chunk. `None` past the batch's records.
/// What isolation sends its longer runs as binary with: the plan and this
/// worker's encoder, unless the plan is text.
fn binary_runs<'a>(shared: &'a Shared, encoder: Option<&'a mut BinaryEncoder>) -> Option<BinaryRuns<'a>> {
    Some(BinaryRuns { plan: shared.binary.as_ref()?, encoder: encoder? })
}

fn chunk_of_line(chunks: &[&Chunk], server_line: u64) -> Option<usize> {
    let mut lines = 0;
    chunks.iter().position(|chunk| {
        lines += chunk.copied_records();
        lines >= server_line
    })
}

/// The chunk's ledger row, with its counts once it is `done`.
fn ledger_row<'a>(shared: &'a Shared, chunk: &'a Chunk, done: Option<&Isolated>) -> ChunkRow<'a> {
    ChunkRow {
        job: &shared.job,
        seq: chunk.seq,
        file: &shared.sources[chunk.loc.source].name,
        byte_offset: chunk.loc.byte_offset,
        byte_len: chunk.loc.byte_len,
        first_line: chunk.loc.first_line,
        content_hash: chunk.content_hash,
        line_samples: &chunk.line_samples,
        rows: done.map_or(0, |d| d.rows),
        rejected: done.map_or(0, |d| d.rejects.len() as u64),
        suppressed: done.map_or(0, |d| d.suppressed),
        skipped: done.map_or(0, |d| d.skipped),
        replaced: done.map_or(0, |d| d.replaced),
    }
}

/// How a chunk was loaded, for its record.
struct By {
    worker: usize,
    /// It went as binary.
    binary: bool,
    /// The first chunk of its batch.
    batch: u64,
}

/// The report's record of a chunk.
fn record(shared: &Shared, chunk: &Chunk, done: &Isolated, by: By, start_s: f64) -> ChunkRecord {
    ChunkRecord {
        seq: chunk.seq,
        file: shared.sources[chunk.loc.source].name.to_string(),
        byte_offset: chunk.loc.byte_offset,
        byte_len: chunk.loc.byte_len,
        first_line: chunk.loc.line_of(0, 0),
        first_record: chunk.loc.first_record,
        records: chunk.records,
        rows: done.rows,
        rejected: done.rejects.len() as u64,
        suppressed: done.suppressed,
        skipped: done.skipped,
        isolation_copies: done.copies,
        worker: by.worker,
        binary: by.binary,
        staged: done.staged,
        replaced: done.replaced,
        batch: by.batch,
        start_s,
        end_s: shared.clock.elapsed().as_secs_f64(),
    }
}

/// Reads positioned chunks by range, keeping the input of its last chunk
/// open: chunks come in input order, so one open file per worker is enough,
/// and a glob of thousands of files stays far below the open-file limit
/// (1,024 by default; a file kept open per input failed at file 1,015).
#[derive(Default)]
struct RangeReader {
    file: Option<(usize, File)>,
    buf: Vec<u8>,
    /// Binary tuples waiting to be sent.
    out: Vec<u8>,
}

impl RangeReader {
    /// Sends the chunks' bytes through `send`, one after the other; stops
    /// early when `send` says the server has already refused them.
    fn feed_all(&mut self, shared: &Shared, chunks: &[&Chunk], send: &mut CopyWriter<'_>) -> Result<(), Error> {
        for chunk in chunks {
            if !self.feed(shared, chunk, send)? {
                break;
            }
        }
        Ok(())
    }

    /// Sends one chunk's bytes; false when `send` refused them.
    fn feed(&mut self, shared: &Shared, chunk: &Chunk, send: &mut CopyWriter<'_>) -> Result<bool, Error> {
        if let Some(data) = &chunk.data {
            return Ok(send(&data[..chunk.copy_len() as usize]));
        }
        let mut buf = std::mem::take(&mut self.buf);
        buf.resize(COPY_PIECE, 0);
        let (mut at, end) = (0, chunk.copy_len());
        let result = loop {
            let want = (end - at).min(COPY_PIECE as u64) as usize;
            if want == 0 {
                break Ok(true);
            }
            if let Err(e) = self.read_into(shared, chunk, at, &mut buf[..want]) {
                break Err(e);
            }
            if !send(&buf[..want]) {
                break Ok(false);
            }
            at += want as u64;
        };
        self.buf = buf;
        result
    }

    /// Sends the chunks as one stream of binary tuples: reads each piece by
    /// piece, encodes the whole records of what has been read, and carries a
    /// partial record over to the next piece. When the encoder is unsure of
    /// a record, stops with `unsure` set to the chunk's index and the record
    /// (and an error, so the COPY is abandoned).
    fn feed_binary(
        &mut self,
        shared: &Shared,
        chunks: &[&Chunk],
        encoder: &mut BinaryEncoder,
        send: &mut CopyWriter<'_>,
        unsure: &mut Option<(usize, Unsure)>,
    ) -> Result<(), Error> {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        out.extend_from_slice(binary::HEADER);
        // `pending[..have]` holds the bytes read and not yet encoded (a
        // record cut by the piece's end). The buffer only grows, so it is
        // zeroed once, not before every read (zeroing 64 KiB a piece was
        // 0.5 % of sluice's CPU on a binary lineitem load, perf).
        let mut pending = std::mem::take(&mut self.buf);
        let mut result = Ok(());
        'chunks: for (index, chunk) in chunks.iter().enumerate() {
            encoder.begin_chunk();
            let (mut read, end, mut have) = (0, chunk.copy_len(), 0);
            let mut records = 0;
            loop {
                let want = (end - read).min(COPY_PIECE as u64) as usize;
                if pending.len() < have + want {
                    pending.resize(have + want, 0);
                }
                if let Err(e) = self.read_into(shared, chunk, read, &mut pending[have..have + want]) {
                    result = Err(e);
                    break 'chunks;
                }
                read += want as u64;
                have += want;
                match encoder.encode(&pending[..have], read == end, &mut out) {
                    Ok(done) => {
                        pending.copy_within(done.consumed..have, 0);
                        have -= done.consumed;
                        records += done.records;
                    }
                    Err(u) => {
                        *unsure = Some((index, Unsure { record: records + u.record, reason: u.reason }));
                        result = Err(Error::Usage("binary encoding stopped; the chunks go as text".into()));
                        break 'chunks;
                    }
                }
                if read == end && index + 1 == chunks.len() {
                    out.extend_from_slice(binary::TRAILER);
                }
                if !send(&out) {
                    break 'chunks;
                }
                out.clear();
                if read == end {
                    break;
                }
            }
        }
        (self.out, self.buf) = (out, pending);
        result
    }

    /// Fills `into` with the chunk's bytes from offset `from`.
    fn read_into(&mut self, shared: &Shared, chunk: &Chunk, from: u64, into: &mut [u8]) -> Result<(), Error> {
        if let Some(data) = &chunk.data {
            into.copy_from_slice(&data[from as usize..from as usize + into.len()]);
            return Ok(());
        }
        let source = &shared.sources[chunk.loc.source];
        let at = chunk.loc.byte_offset + from;
        open_cached(&mut self.file, shared, chunk.loc.source)?.read_exact_at(into, at).map_err(|e| {
            source.input_error(&format!(
                "reading bytes {at}..{}: {} (did the file change during the load?)",
                at + into.len() as u64,
                io_reason(&e)
            ))
        })
    }

    /// The chunk's bytes that go to COPY, for isolating refused records.
    /// Borrowed when the chunk carries its bytes (a stream's, a small file's).
    fn bytes_of<'c>(&mut self, shared: &Shared, chunk: &'c Chunk) -> Result<Cow<'c, [u8]>, Error> {
        match &chunk.data {
            Some(data) => Ok(Cow::Borrowed(&data[..chunk.copy_len() as usize])),
            None => Ok(Cow::Owned(self.range(shared, chunk, 0, chunk.copy_len())?)),
        }
    }

    /// Bytes `from..to` of the chunk.
    fn range(&mut self, shared: &Shared, chunk: &Chunk, from: u64, to: u64) -> Result<Vec<u8>, Error> {
        let mut bytes = vec![0; (to - from) as usize];
        self.read_into(shared, chunk, from, &mut bytes)?;
        Ok(bytes)
    }

    /// The reject for a record the chunker cut off: one that outgrew
    /// `--max-record-size`, or a line with a quote left open.
    fn runaway_reject(&mut self, shared: &Shared, chunk: &Chunk, runaway: Runaway) -> Result<Reject, Error> {
        let kept = (chunk.data_len() - runaway.offset).min(RUNAWAY_KEPT);
        let raw = self.range(shared, chunk, runaway.offset, runaway.offset + kept)?;
        let file = &shared.sources[chunk.loc.source].name;
        // The runaway is the chunk's last record, after the rewritten ones
        // where fields are left out (see `format::pick`).
        let offset = chunk.original.as_ref().and_then(|o| o.records.last()).map_or(runaway.offset, |r| r.0 as u64);
        let position = chunk.loc.position(file, chunk.records - 1, runaway.lines_before, offset);
        let reason = match runaway.kind {
            RunawayKind::TooLong => format!(
                "the record runs past --max-record-size ({} bytes) without ending{}; sluice went on at the next line",
                shared.max_record_size,
                // Only CSV quotes a line end; a text-format or JSON line is a record.
                if shared.format.kind == crate::format::FormatKind::Csv && shared.format.documents.is_none() {
                    " (is a quote left open?)"
                } else {
                    ""
                }
            ),
            RunawayKind::OpenQuote { closed: false, .. } => {
                "a quote opened on this line is never closed (the input ends inside it); only this line is \
                 rejected, sluice read the lines after it as records"
                    .to_string()
            }
            RunawayKind::RepeatedHeader => "the file's header again, among its records (files that each begin \
                                             with it, joined with cat): not data, so it does not load as a row"
                .to_string(),
            RunawayKind::OpenQuote { fields, expected, lines, .. } => format!(
                "a quote opened on this line is not closed on it: read on, its record would span {} lines with \
                 {} fields for {expected} columns. Only this line is rejected; sluice read the lines after it as \
                 records (a value with a quote in it must be quoted, its quote doubled)",
                lines + 1,
                if fields > expected { format!("more than {expected}") } else { format!("only {fields}") },
            ),
        };
        let mut reject = Reject::new(position, reason, &shared.sources[chunk.loc.source].as_in_input(&raw));
        // Its length in the input: the chunk's input bytes from its start.
        let length = chunk.loc.byte_len.saturating_sub(offset);
        if matches!(runaway.kind, RunawayKind::TooLong) && length > kept {
            reject.reason.push_str(&format!(
                " (a record of {length} bytes: the rejects file holds its first {kept}; it can load only with a \
                 larger --max-record-size)"
            ));
            reject.raw_length = Some(length);
        }
        Ok(reject)
    }
}

fn open_cached<'a>(cached: &'a mut Option<(usize, File)>, shared: &Shared, index: usize) -> Result<&'a File, Error> {
    if !matches!(cached, Some((open, _)) if *open == index) {
        let source = &shared.sources[index];
        let path = source.path.as_ref().expect("positioned sources have paths");
        let file = File::open(path).map_err(|e| source.input_error(&io_reason(&e)))?;
        *cached = Some((index, file));
    }
    Ok(&cached.as_ref().expect("opened above").1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_constraints_that_refused_are_checked_at_each_row_and_each_once() {
        let named = |name: &str| CopyRefusal { constraint: Some(name.into()), ..CopyRefusal::default() };
        let at_each_row = AtEachRow::default();
        assert_eq!(AtEachRow::set_constraints(&at_each_row.now()), None, "none refused yet");
        assert!(at_each_row.note(&named("\"s\".\"key\""), &[]), "loaded again");
        assert!(at_each_row.note(&named("\"s\".\"fk\""), &[]), "another one");
        assert!(at_each_row.note(&named("\"s\".\"key\""), &[]), "a transaction begun before the first note");
        let now = at_each_row.now();
        assert_eq!(AtEachRow::set_constraints(&now).unwrap(), "SET CONSTRAINTS \"s\".\"key\", \"s\".\"fk\" IMMEDIATE");
        assert!(!at_each_row.note(&named("\"s\".\"fk\""), &now), "refused again though checked at each row");
        assert!(at_each_row.note(&CopyRefusal::default(), &now), "a refusal that names no constraint");
        let now = at_each_row.now();
        assert_eq!(AtEachRow::set_constraints(&now).unwrap(), "SET CONSTRAINTS ALL IMMEDIATE");
        assert!(!at_each_row.note(&named("\"s\".\"other\""), &now), "every constraint was checked at each row");
        assert_eq!(at_each_row.refused().len(), 3);
    }
}
