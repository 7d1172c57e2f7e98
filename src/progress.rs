//! Live counters of a running load.
//!
//! The library never prints: workers bump these atomics and the CLI samples
//! them to draw a bar or write plain lines. Sampling keeps the hot path free of
//! channels and locks (the two locks, for why workers retry and for what
//! blocks them, are taken only when that happens or by the watcher, twice a
//! second).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct Progress {
    started: Instant,
    /// On-disk bytes of all inputs; 0 while unknown (stdin).
    bytes_total: AtomicU64,
    /// On-disk bytes whose chunks have committed.
    bytes_done: AtomicU64,
    rows_done: AtomicU64,
    /// Records of the chunks committed, by this run or earlier ones: the
    /// share done under `--limit`, whose records end the load long before
    /// its inputs' bytes do.
    records_done: AtomicU64,
    /// `--limit`'s records; 0 without it.
    records_cap: AtomicU64,
    rejected: AtomicU64,
    /// Records `--on-conflict-do-nothing` skipped.
    skipped: AtomicU64,
    chunks_done: AtomicU64,
    /// Deferred indexes and constraints being built (0: not building).
    building: AtomicU64,
    /// The table, unlogged for the load (`--unlogged`), is being made
    /// logged again after it.
    relogging: AtomicBool,
    /// The table is being analyzed after the load (`--analyze`).
    analyzing: AtomicBool,
    /// The input changed since the job began and is read again to compare
    /// the chunks it committed, before anything loads.
    checking: AtomicBool,
    /// The check compares the inputs with what earlier, finished jobs
    /// loaded (see `load::loaded_before`), not with this job's chunks.
    checking_earlier_jobs: AtomicBool,
    /// On-disk bytes read so far by that check.
    bytes_checked: AtomicU64,
    /// Sessions retrying: workers retrying a chunk, or the control session
    /// a step before or after the copy (see [`Progress::waiting`]).
    waiting: AtomicU64,
    /// The latest reason a session retries, and when it gives up.
    wait_reason: Mutex<Option<(String, Instant)>>,
    /// What another session holds that a session of the load waits for,
    /// and since when.
    blocked: Mutex<Option<(String, Instant)>>,
    /// Warnings found while the load runs, not yet shown (see
    /// [`Progress::alert`]).
    alerts: Mutex<Vec<String>>,
}

/// One sample of [`Progress`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub elapsed: Duration,
    pub bytes_total: Option<u64>,
    pub bytes_done: u64,
    pub rows_done: u64,
    pub records_done: u64,
    /// The records `--limit` lets the load read.
    pub records_cap: Option<u64>,
    pub rejected: u64,
    pub skipped: u64,
    pub chunks_done: u64,
    /// Deferred indexes and constraints being built after the copy.
    pub building: u64,
    /// The table is being made logged again after the copy (`--unlogged`).
    pub relogging: bool,
    /// The table is being analyzed after the load (`--analyze`).
    pub analyzing: bool,
    /// On-disk bytes read again to check a changed input, while that lasts.
    pub checked: Option<u64>,
    /// That check compares the inputs with what earlier jobs loaded.
    pub checking_earlier_jobs: bool,
    /// Workers waiting for the server, when any are.
    pub waiting: Option<Waiting>,
    /// A lock another session holds that the load waits for, when it does.
    pub blocked: Option<Blocked>,
}

/// A session of the load queued for a lock that another session holds
/// (a TRUNCATE behind someone's open transaction): the server says nothing
/// while it waits, so the progress line does.
#[derive(Clone, Debug, PartialEq)]
pub struct Blocked {
    /// What the session waits for and who holds it.
    pub on: String,
    pub waited: Duration,
}

/// Workers retrying after a failure that may pass (a lost connection, a
/// restarting server, a full disk): without it on the progress line, a
/// load that waits looks like a load that hangs.
#[derive(Clone, Debug, PartialEq)]
pub struct Waiting {
    pub sessions: u64,
    /// Why the latest of them retries.
    pub reason: String,
    /// Until its `--retry-timeout` ends.
    pub gives_up_in: Duration,
}

impl Default for Progress {
    fn default() -> Self {
        Progress {
            started: Instant::now(),
            bytes_total: AtomicU64::new(0),
            bytes_done: AtomicU64::new(0),
            rows_done: AtomicU64::new(0),
            records_done: AtomicU64::new(0),
            records_cap: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            chunks_done: AtomicU64::new(0),
            building: AtomicU64::new(0),
            relogging: AtomicBool::new(false),
            analyzing: AtomicBool::new(false),
            checking: AtomicBool::new(false),
            checking_earlier_jobs: AtomicBool::new(false),
            bytes_checked: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
            wait_reason: Mutex::new(None),
            blocked: Mutex::new(None),
            alerts: Mutex::new(Vec::new()),
        }
    }
}

impl Progress {
    pub fn set_total(&self, bytes: Option<u64>) {
        self.bytes_total.store(bytes.unwrap_or(0), Relaxed);
    }

    /// More bytes to check or load than [`Progress::set_total`] said.
    pub fn add_to_total(&self, bytes: Option<u64>) {
        self.bytes_total.fetch_add(bytes.unwrap_or(0), Relaxed);
    }

    /// The load stops after `cap` records (`--limit`), wherever its inputs
    /// end.
    pub fn set_records_cap(&self, cap: Option<u64>) {
        self.records_cap.store(cap.unwrap_or(0), Relaxed);
    }

    /// A chunk of `source_bytes` and `records` committed: its `rows`, and
    /// the records it rejected and skipped (`not_loaded`).
    pub fn chunk_done(&self, (source_bytes, records): (u64, u64), rows: u64, not_loaded: (u64, u64)) {
        self.bytes_done.fetch_add(source_bytes, Relaxed);
        self.records_done.fetch_add(records, Relaxed);
        self.rows_done.fetch_add(rows, Relaxed);
        self.rejected.fetch_add(not_loaded.0, Relaxed);
        self.skipped.fetch_add(not_loaded.1, Relaxed);
        self.chunks_done.fetch_add(1, Relaxed);
    }

    /// The copy is done and `objects` deferred indexes and constraints are
    /// being built, and the table made logged again when `relogging` (0 and
    /// false when that is over).
    pub fn set_building(&self, objects: u64, relogging: bool) {
        self.building.store(objects, Relaxed);
        self.relogging.store(relogging, Relaxed);
    }

    /// Whether the table is being analyzed after the load.
    pub fn set_analyzing(&self, analyzing: bool) {
        self.analyzing.store(analyzing, Relaxed);
    }

    /// Whether deferred objects are being built after the copy.
    pub fn is_building(&self) -> bool {
        self.building.load(Relaxed) > 0 || self.relogging.load(Relaxed)
    }

    /// Whether a changed input is being read again (see
    /// [`Progress::chunk_checked`]).
    pub fn set_checking(&self, checking: bool) {
        self.bytes_checked.store(0, Relaxed);
        self.checking.store(checking, Relaxed);
    }

    /// Whether the inputs are being read to compare them with what earlier
    /// jobs loaded (see [`Progress::chunk_checked`]).
    pub fn set_checking_earlier_jobs(&self, checking: bool) {
        self.checking_earlier_jobs.store(checking, Relaxed);
        self.set_checking(checking);
    }

    /// A committed chunk was found again in a changed input.
    pub fn chunk_checked(&self, source_bytes: u64) {
        self.bytes_checked.fetch_add(source_bytes, Relaxed);
    }

    /// A chunk committed by an earlier run: its bytes and records count as
    /// done.
    pub fn chunk_skipped(&self, source_bytes: u64, records: u64) {
        self.bytes_done.fetch_add(source_bytes, Relaxed);
        self.records_done.fetch_add(records, Relaxed);
    }

    pub fn snapshot(&self) -> Snapshot {
        let total = self.bytes_total.load(Relaxed);
        let cap = self.records_cap.load(Relaxed);
        Snapshot {
            elapsed: self.started.elapsed(),
            bytes_total: (total > 0).then_some(total),
            bytes_done: self.bytes_done.load(Relaxed),
            rows_done: self.rows_done.load(Relaxed),
            records_done: self.records_done.load(Relaxed),
            records_cap: (cap > 0).then_some(cap),
            rejected: self.rejected.load(Relaxed),
            skipped: self.skipped.load(Relaxed),
            chunks_done: self.chunks_done.load(Relaxed),
            building: self.building.load(Relaxed),
            relogging: self.relogging.load(Relaxed),
            analyzing: self.analyzing.load(Relaxed),
            checked: self.checking.load(Relaxed).then(|| self.bytes_checked.load(Relaxed)),
            checking_earlier_jobs: self.checking_earlier_jobs.load(Relaxed),
            waiting: self.waiting_now(),
            blocked: self
                .blocked
                .lock()
                .ok()
                .and_then(|b| b.clone())
                .map(|(on, since)| Blocked { on, waited: since.elapsed() }),
        }
    }

    /// A session of the load waits, since `since`, for what `on` says; or
    /// (`None`) none does.
    pub fn set_blocked(&self, blocked: Option<(String, Instant)>) {
        if let Ok(mut now) = self.blocked.lock() {
            *now = blocked;
        }
    }

    /// A warning to show while the load runs, once, because waiting for
    /// the summary would let the load go on doing what the warning is about
    /// (committing rows that may hold wrong data).
    pub fn alert(&self, warning: String) {
        if let Ok(mut alerts) = self.alerts.lock() {
            alerts.push(warning);
        }
    }

    /// The warnings not shown yet; each is taken once.
    pub fn take_alerts(&self) -> Vec<String> {
        self.alerts.lock().map(|mut alerts| std::mem::take(&mut *alerts)).unwrap_or_default()
    }

    /// A session starts retrying, until `deadline`; it stops when the guard
    /// is dropped.
    pub fn waiting(&self, deadline: Instant) -> WaitGuard<'_> {
        self.waiting.fetch_add(1, Relaxed);
        WaitGuard { progress: self, deadline }
    }

    fn waiting_now(&self) -> Option<Waiting> {
        let sessions = self.waiting.load(Relaxed);
        let reason = self.wait_reason.lock().ok()?.clone();
        match (sessions, reason) {
            (0, _) | (_, None) => None,
            (sessions, Some((reason, deadline))) => {
                Some(Waiting { sessions, reason, gives_up_in: deadline.saturating_duration_since(Instant::now()) })
            }
        }
    }
}

/// One worker's retries, shown while it lives (see [`Progress::waiting`]).
pub struct WaitGuard<'p> {
    progress: &'p Progress,
    deadline: Instant,
}

impl WaitGuard<'_> {
    /// Why the worker retries now.
    pub fn because(&self, reason: String) {
        if let Ok(mut latest) = self.progress.wait_reason.lock() {
            *latest = Some((reason, self.deadline));
        }
    }
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        if self.progress.waiting.fetch_sub(1, Relaxed) == 1 {
            if let Ok(mut latest) = self.progress.wait_reason.lock() {
                *latest = None;
            }
        }
    }
}

impl Snapshot {
    /// The share of the load done: of the inputs' bytes, or of `--limit`'s
    /// records when more of those are done (the cap comes first), so that
    /// a trial load of a big file's first records does not show 1 %, then
    /// end.
    pub fn fraction(&self) -> Option<f64> {
        let of_bytes = self.bytes_total.map(|t| self.bytes_done as f64 / t as f64);
        let of_records = self.records_cap.map(|cap| self.records_done as f64 / cap as f64);
        let fraction = match (of_bytes, of_records) {
            (Some(bytes), Some(records)) => bytes.max(records),
            (bytes, records) => bytes.or(records)?,
        };
        Some(fraction.min(1.0))
    }

    pub fn rows_per_sec(&self) -> f64 {
        self.rows_done as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    pub fn bytes_per_sec(&self) -> f64 {
        self.bytes_done as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Time left at the average rate so far; `None` until something is done,
    /// when the total is unknown, or beyond what a `Duration` holds (one
    /// record of a `--limit` of 10^19 from stdin).
    pub fn eta(&self) -> Option<Duration> {
        let fraction = self.fraction().filter(|&f| f > 0.0)?;
        Duration::try_from_secs_f64(self.elapsed.as_secs_f64() * (1.0 - fraction) / fraction).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eta_follows_average_rate() {
        let s = Snapshot {
            elapsed: Duration::from_secs(10),
            bytes_total: Some(400),
            bytes_done: 100,
            rows_done: 50,
            records_done: 50,
            chunks_done: 1,
            ..Snapshot::default()
        };
        assert_eq!(s.fraction(), Some(0.25));
        assert_eq!(s.eta(), Some(Duration::from_secs(30)));
        assert_eq!(Snapshot { bytes_total: None, ..s }.eta(), None);
    }

    #[test]
    fn under_a_limit_the_share_done_is_of_records_when_they_end_first() {
        let base = Snapshot {
            elapsed: Duration::from_secs(10),
            bytes_total: Some(1_000_000),
            bytes_done: 10_000,
            records_done: 250,
            records_cap: Some(1_000),
            ..Snapshot::default()
        };
        assert_eq!(base.fraction(), Some(0.25));
        assert_eq!(base.eta(), Some(Duration::from_secs(30)));
        let inputs_end_first = Snapshot { bytes_done: 500_000, ..base.clone() };
        assert_eq!(inputs_end_first.fraction(), Some(0.5), "the inputs hold fewer records than the cap");
        let from_stdin = Snapshot { bytes_total: None, ..base.clone() };
        assert_eq!(from_stdin.fraction(), Some(0.25));
        let chunk_past_the_cap = Snapshot { records_done: 1_200, ..base };
        assert_eq!(chunk_past_the_cap.fraction(), Some(1.0));
        assert_eq!(chunk_past_the_cap.eta(), Some(Duration::ZERO));
        let cap_beyond_any_eta =
            Snapshot { bytes_total: None, records_done: 1, records_cap: Some(u64::MAX), ..chunk_past_the_cap };
        assert_eq!(cap_beyond_any_eta.eta(), None, "no panic");
    }

    #[test]
    fn records_of_chunks_committed_and_resumed_count_toward_the_limit() {
        let progress = Progress::default();
        progress.set_total(Some(1_000));
        progress.set_records_cap(Some(100));
        progress.chunk_skipped(100, 30);
        progress.chunk_done((50, 20), 18, (2, 0));
        let snap = progress.snapshot();
        assert_eq!((snap.records_done, snap.records_cap, snap.rows_done), (50, Some(100), 18));
        assert_eq!(snap.fraction(), Some(0.5));
        progress.set_records_cap(None);
        assert_eq!(progress.snapshot().fraction(), Some(0.15));
    }

    #[test]
    fn waiting_shows_while_a_worker_retries_with_the_latest_reason() {
        let progress = Progress::default();
        let soon = Instant::now() + Duration::from_secs(60);
        let first = progress.waiting(soon);
        assert_eq!(progress.snapshot().waiting, None, "no reason yet");
        first.because("disk full".into());
        let second = progress.waiting(soon + Duration::from_secs(60));
        second.because("connection lost".into());
        let waiting = progress.snapshot().waiting.unwrap();
        assert_eq!((waiting.sessions, waiting.reason.as_str()), (2, "connection lost"));
        assert!(waiting.gives_up_in > Duration::from_secs(60), "{waiting:?}");
        drop(second);
        assert_eq!(progress.snapshot().waiting.map(|w| w.sessions), Some(1));
        drop(first);
        assert_eq!(progress.snapshot().waiting, None);
        let _again = progress.waiting(soon);
        assert_eq!(progress.snapshot().waiting, None, "the old reason went with the last worker");
    }
}
