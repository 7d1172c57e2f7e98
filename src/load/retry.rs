//! Waiting out a server that went away: a restart, a crash and its
//! recovery, a failover. `--retry-timeout` covers the whole load, not only
//! the copy: the job's opening before it and the index builds and the
//! job's closing after it are steps that can run again from their start (a
//! step is what a second run of the same command would redo), so a lost
//! connection there reconnects and runs the step again, as a worker does
//! for its chunk (see `worker`).
//!
//! The first connection is not retried: a wrong address or a server that is
//! down fails at once, as psql does.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};

use super::{interrupted, Failed};
use crate::error::Error;
use crate::progress::Progress;
use crate::sink::postgres::{PgSession, PgTarget};

/// The pauses between attempts to reach the server again: from 0.1 s,
/// doubling to 5 s, until `--retry-timeout` after the first failure. One
/// backoff spans a chunk's attempts, so a server that accepts connections
/// but fails every COPY (a full disk) is not asked ten times a second, and
/// is given up on at the deadline.
pub(super) struct Backoff {
    pub(super) deadline: Instant,
    pause: Duration,
}

impl Backoff {
    pub(super) fn new(timeout: Duration) -> Backoff {
        Backoff { deadline: Instant::now() + timeout, pause: Duration::from_millis(100) }
    }

    pub(super) fn expired(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Sleeps the next pause, never past the deadline, and no longer once
    /// `stopping` says so (a Ctrl-C is answered within 0.1 s, not 5).
    pub(super) fn sleep(&mut self, stopping: &dyn Fn() -> bool) {
        let until = (Instant::now() + self.pause).min(self.deadline);
        while !stopping() && Instant::now() < until {
            std::thread::sleep(until.saturating_duration_since(Instant::now()).min(Duration::from_millis(100)));
        }
        self.pause = (self.pause * 2).min(Duration::from_secs(5));
    }
}

/// A failure a step may end with, and whether running the step again on a
/// new connection may mend it.
pub(super) trait StepFailure: From<Error> + std::fmt::Display {
    fn may_pass(&self) -> bool;
}

impl StepFailure for Error {
    fn may_pass(&self) -> bool {
        Error::may_pass(self)
    }
}

impl StepFailure for Failed {
    /// Only before the copy: a failure with a partial report ends a load
    /// that has loaded, and its own steps retried what they could.
    fn may_pass(&self) -> bool {
        self.partial.is_none() && self.error.may_pass()
    }
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

/// What a step needs to wait for the server: where it is, how long to
/// wait, where to say so, and the Ctrl-C that ends the wait.
pub(super) struct Reconnecting<'a> {
    pub target: &'a PgTarget,
    pub timeout: Duration,
    pub progress: &'a Progress,
    pub interrupt: Option<&'a AtomicBool>,
}

impl Reconnecting<'_> {
    /// Runs `step` on the session `kept` holds (a new connection when it
    /// holds none); when it fails in a way that may pass, connects again,
    /// pausing, and runs it again from its start, until the timeout or a
    /// Ctrl-C, saying why on the progress line meanwhile. The step's last
    /// failure is returned when it gives up. After a step that succeeded,
    /// `kept` holds its session, for the next step: the job's closing reuses
    /// the session that opened it instead of connecting again after the copy
    /// (two connections cost a load 15-25 ms at its end).
    pub fn run<T, F: StepFailure>(
        &self,
        kept: &mut Option<PgSession>,
        mut step: impl FnMut(&PgSession) -> Result<T, F>,
    ) -> Result<T, F> {
        let mut retry = None;
        loop {
            let outcome = match kept.take() {
                Some(s) => step(&s).map(|done| (done, s)),
                None => self.target.connect().map_err(F::from).and_then(|s| step(&s).map(|done| (done, s))),
            };
            let failure = match outcome {
                Ok((done, session)) => {
                    *kept = Some(session);
                    return Ok(done);
                }
                Err(failure) if failure.may_pass() => failure,
                Err(failure) => return Err(failure),
            };
            let (backoff, waiting) = retry.get_or_insert_with(|| {
                let backoff = Backoff::new(self.timeout);
                let waiting = self.progress.waiting(backoff.deadline);
                (backoff, waiting)
            });
            if backoff.expired() || interrupted(self.interrupt) {
                return Err(failure);
            }
            waiting.because(failure.to_string());
            backoff.sleep(&|| interrupted(self.interrupt));
        }
    }
}

/// Runs a side watch (the wait sampler, the lock watch) on a connection of
/// its own, first after `first` and then after `pause` each time its session
/// was lost, until `done` is dropped. `watch` returns whether its session was
/// lost (a restart, a `pg_terminate_backend`): the watch must outlive a
/// restart that the workers wait out, or the report and the Ctrl-C lose it
/// for the rest of the load. A server that refused the first connection (a
/// connection limit the workers fill) is not asked again: the load does not
/// depend on the watch.
pub(super) fn keep_watching(
    target: &PgTarget,
    done: &Receiver<()>,
    (first, pause): (Duration, Duration),
    mut watch: impl FnMut(&PgSession) -> bool,
) {
    let mut connected_once = false;
    let mut wait = first;
    while let Err(RecvTimeoutError::Timeout) = done.recv_timeout(wait) {
        let lost = match target.connect() {
            Ok(session) => {
                connected_once = true;
                watch(&session)
            }
            Err(_) => connected_once,
        };
        if !lost {
            return;
        }
        wait = pause;
    }
}
