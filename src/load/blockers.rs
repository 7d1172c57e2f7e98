//! Who holds the load up: a session of sluice's queued for a lock that
//! another session holds.
//!
//! Why: a TRUNCATE (`--truncate`) or an index drop (deferral) waits for
//! every open transaction that has read the table, and a COPY waits behind
//! an ALTER TABLE or a LOCK TABLE. The server says nothing while it waits
//! and sluice sets no lock_timeout (see `PgTarget::connect`), so the load
//! looked hung: `0 B, 0 rows, 0 rows/s` for as long as someone's psql stayed
//! idle in transaction, and a Ctrl-C waited for the lock too, then let the
//! TRUNCATE run. A connection of its own asks twice a second which of the
//! load's open sessions wait for a lock (`pg_stat_activity`, visible to
//! the role for its own sessions) and, only for those, who holds it
//! (`pg_blocking_pids`, which takes the lock manager's locks, so it is not
//! asked otherwise). The progress line names the holder while it lasts,
//! the report afterwards, and a Ctrl-C cancels the waiting statements
//! (`pg_cancel_backend` on the role's own sessions), which roll back.
//! The same connection cancels the index builds after the copy on a
//! Ctrl-C: they are statements of their own sessions too.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};

use super::retry::keep_watching;
use crate::error::Error;
use crate::progress::Progress;
use crate::report::count_of;
use crate::sink::postgres::{PgSession, PgTarget, Rows};
use crate::sql::pid_array;

/// Time between looks.
const PERIOD: Duration = Duration::from_millis(500);

/// The watch connects this long after the load did: a short load never
/// opens it, and under a connection limit the workers, which connect at
/// once, get their connections first.
const FIRST_LOOK: Duration = Duration::from_secs(1);

/// A wait shorter than this in all does not make the report.
const WORTH_REPORTING: Duration = Duration::from_secs(1);

/// The load's sessions ($1) that wait for a lock, with what they wait for
/// and who holds it, the load's own sessions too (see [`Wait::holders`]).
/// Waits to grow the table (`extend`, `page`) are the load's own sessions
/// taking turns (see `waits`).
const BLOCKED: &str = "sluice_blocked";
const BLOCKED_SQL: &str = "SELECT w.pid::text, w.wait_event, \
    extract(epoch FROM clock_timestamp() - w.query_start)::float8::text, coalesce((SELECT l.relation::regclass::text \
    FROM pg_locks l WHERE l.pid = w.pid AND NOT l.granted AND l.relation IS NOT NULL LIMIT 1), ''), \
    b.pid::text, coalesce(a.usename::text, ''), coalesce(a.application_name, ''), coalesce(a.state, '') \
    FROM pg_stat_activity w CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS b(pid) \
    LEFT JOIN pg_stat_activity a ON a.pid = b.pid \
    WHERE w.pid = ANY($1::int[]) AND w.wait_event_type = 'Lock' AND w.wait_event NOT IN ('extend', 'page') \
    ORDER BY w.pid, b.pid";

/// What was seen: the longest each wait lasted, and whether a Ctrl-C
/// cancelled one.
#[derive(Default)]
pub struct Blockers {
    waited: Mutex<BTreeMap<String, Duration>>,
    cancelled: AtomicBool,
}

impl Blockers {
    /// Watches `target`'s open sessions over a connection of its own until
    /// `done` is dropped. Without a connection there is no watch: the load
    /// does not depend on it. A server restart ends the watch's session with
    /// the load's: it connects again, a second apart as it first waited (the
    /// workers' reconnects come first), for as long as the load lasts; it
    /// does not keep asking a server that refused its first connection (a
    /// connection limit the workers fill) or its query.
    pub fn run(&self, target: &PgTarget, progress: &Progress, interrupt: Option<&AtomicBool>, done: Receiver<()>) {
        keep_watching(target, &done, (FIRST_LOOK, FIRST_LOOK), |session| {
            let lost = self.watch(session, target, (progress, interrupt), &done);
            progress.set_blocked(None);
            lost
        });
    }

    /// Looks every [`PERIOD`] until `done`; true when the session was lost
    /// (or failed in another way that may pass), false when the load ended
    /// or the server refused the look.
    fn watch(
        &self,
        session: &PgSession,
        target: &PgTarget,
        (progress, interrupt): (&Progress, Option<&AtomicBool>),
        done: &Receiver<()>,
    ) -> bool {
        if let Err(e) = session.prepare(BLOCKED, BLOCKED_SQL) {
            return e.may_pass();
        }
        let me = session.backend_pid();
        while let Err(RecvTimeoutError::Timeout) = done.recv_timeout(PERIOD) {
            let ours: Vec<u32> = target.open_sessions().into_iter().filter(|&pid| pid != me).collect();
            let waits = match blocked_sessions(session, &ours) {
                Ok(waits) => waits,
                Err(e) => return e.may_pass(),
            };
            let on_others = || waits.iter().filter(|w| !w.holders.is_empty());
            let mut waited = self.waited.lock().unwrap();
            for wait in on_others() {
                let longest = waited.entry(wait.describe()).or_default();
                *longest = wait.waited.max(*longest);
            }
            drop(waited);
            let now = Instant::now();
            let shown = on_others().next().map(|w| (w.describe(), now.checked_sub(w.waited).unwrap_or(now)));
            progress.set_blocked(shown);
            if interrupt.is_some_and(|i| i.load(Ordering::SeqCst)) {
                let stop = to_stop_on_interrupt(&waits, &ours, progress.is_building());
                if !stop.is_empty() {
                    self.cancel(session, &stop);
                }
            }
        }
        false
    }

    /// A Ctrl-C came: the statements of `pids` are cancelled (and roll
    /// back), as psql's Ctrl-C would, rather than run to their end. A
    /// session between statements ignores a cancel.
    fn cancel(&self, session: &PgSession, pids: &[u32]) {
        // Said before the cancel: the statement's error may reach the load
        // before the query that cancels it returns here.
        self.cancelled.store(true, Ordering::SeqCst);
        for pid in pids {
            let _ = session.query("SELECT pg_cancel_backend($1::int)", &[Some(&pid.to_string())]);
        }
    }

    /// Whether a Ctrl-C cancelled a statement of the load: the error that
    /// follows is the interrupt's, not the server's.
    pub fn cancelled_any(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// `waited 5.5 s for a lock on t held by pid 4242 (...)`, for each wait
    /// that lasted long enough to matter.
    pub fn warnings(&self) -> Vec<String> {
        let waited = self.waited.lock().unwrap();
        let mut long: Vec<(&String, &Duration)> = waited.iter().filter(|(_, d)| **d >= WORTH_REPORTING).collect();
        long.sort_by(|a, b| b.1.cmp(a.1));
        long.into_iter().map(|(on, d)| format!("waited {:.1} s for {on}", d.as_secs_f64())).collect()
    }
}

/// The sessions whose statements a Ctrl-C cancels: those waiting for a
/// lock, which would otherwise run whenever it comes, whoever holds it (a
/// session of the load that waits for this one to commit first holds it
/// for good where the give-way missed the wait, and the first Ctrl-C did
/// not end such a load); and, while deferred objects are built after the
/// copy, every session of the load. A build
/// runs for minutes, where a chunk in flight takes seconds; a cancelled
/// build rolls back, its object stays recorded as dropped, and the same
/// command builds it.
fn to_stop_on_interrupt(waits: &[Wait], ours: &[u32], building: bool) -> Vec<u32> {
    match building {
        true => ours.to_vec(),
        false => waits.iter().map(|w| w.waiter).collect(),
    }
}

/// One session of the load waiting, and who holds what it waits for.
#[derive(Debug, PartialEq)]
struct Wait {
    waiter: u32,
    /// The wait event: `relation`, `transactionid`, `tuple`, `advisory`...
    event: String,
    /// Since its statement began, which is when a statement queued for a
    /// lock began to wait.
    waited: Duration,
    /// The relation it waits for, when it is one.
    relation: String,
    /// The holders that are not the load's sessions: what the progress line
    /// and the report name. Empty for a wait on the load's own sessions,
    /// which only a Ctrl-C acts on.
    holders: Vec<Holder>,
}

#[derive(Debug, PartialEq)]
struct Holder {
    /// 0 for a prepared transaction.
    pid: u32,
    role: String,
    application: String,
    /// `idle in transaction`, `active`...; empty when the role may not see it.
    state: String,
}

/// The load's sessions that wait for another's lock, each with the
/// holders that are not the load's (see [`waits_of`]); the session's
/// failure when the question failed, or an error when a row was not what
/// the query returns (either ends the watch unless it may pass).
fn blocked_sessions(session: &PgSession, ours: &[u32]) -> Result<Vec<Wait>, Error> {
    waits_of(session.query_prepared(BLOCKED, &[Some(&pid_array(ours))])?, ours)
}

/// [`BLOCKED_SQL`]'s rows as waits, the holders among `ours` left out.
fn waits_of(rows: Rows, ours: &[u32]) -> Result<Vec<Wait>, Error> {
    let mut waits: Vec<Wait> = Vec::new();
    for row in rows {
        let text: Vec<String> = row.into_iter().map(Option::unwrap_or_default).collect();
        let unexpected = || Error::Server("the lock watch's query returned a row of another shape".into());
        let [waiter, event, seconds, relation, pid, role, application, state] =
            <[String; 8]>::try_from(text).map_err(|_| unexpected())?;
        let holder = Holder { pid: pid.parse().map_err(|_| unexpected())?, role, application, state };
        let waiter = waiter.parse().map_err(|_| unexpected())?;
        if !matches!(waits.last(), Some(last) if last.waiter == waiter) {
            let waited = Duration::from_secs_f64(seconds.parse::<f64>().unwrap_or(0.0).max(0.0));
            waits.push(Wait { waiter, event, waited, relation, holders: Vec::new() });
        }
        if !ours.contains(&holder.pid) {
            waits.last_mut().expect("pushed above").holders.push(holder);
        }
    }
    Ok(waits)
}

impl Wait {
    /// `a lock on public.t held by pid 4242 (role alice, application psql,
    /// idle in transaction)`.
    fn describe(&self) -> String {
        let what = match (self.relation.as_str(), self.event.as_str()) {
            ("", "transactionid" | "tuple") => "a row lock".to_string(),
            ("", "advisory") => "an advisory lock".to_string(),
            ("", event) => format!("a lock ({event})"),
            (relation, _) => format!("a lock on {relation}"),
        };
        let mut line = format!("{what} held by {}", self.holders[0].describe());
        if self.holders.len() > 1 {
            line.push_str(&format!(" and by {}", count_of(self.holders.len() as u64 - 1, "other session")));
        }
        line
    }
}

impl Holder {
    fn describe(&self) -> String {
        if self.pid == 0 {
            return "a prepared transaction (see pg_prepared_xacts)".into();
        }
        let known = [("role ", &self.role), ("application ", &self.application), ("", &self.state)];
        let about: Vec<String> = known.iter().filter(|(_, v)| !v.is_empty()).map(|(k, v)| format!("{k}{v}")).collect();
        match about.is_empty() {
            true => format!("pid {}", self.pid),
            false => format!("pid {} ({})", self.pid, about.join(", ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(pid: u32, role: &str, application: &str, state: &str) -> Holder {
        Holder { pid, role: role.into(), application: application.into(), state: state.into() }
    }

    #[test]
    fn a_ctrl_c_cancels_the_waiting_sessions_and_while_building_every_session() {
        let wait = Wait {
            waiter: 7,
            event: "relation".into(),
            waited: Duration::ZERO,
            relation: "public.t".into(),
            holders: vec![holder(4242, "", "", "")],
        };
        let ours = [7, 8, 9];
        assert_eq!(to_stop_on_interrupt(&[wait], &ours, false), vec![7]);
        assert_eq!(to_stop_on_interrupt(&[], &ours, false), Vec::<u32>::new(), "a COPY in flight commits");
        assert_eq!(to_stop_on_interrupt(&[], &ours, true), vec![7, 8, 9]);
    }

    #[test]
    fn a_wait_on_the_loads_own_sessions_is_not_named_but_a_ctrl_c_cancels_it() {
        let row = |waiter: &str, holder: &str| {
            [waiter, "advisory", "2.5", "", holder, "sluice", "sluice", "idle in transaction"]
                .map(|v| Some(v.to_string()))
                .to_vec()
        };
        let ours = [7, 8, 9];
        let waits = waits_of(vec![row("7", "8"), row("9", "8"), row("9", "4242")], &ours).unwrap();
        assert_eq!(waits.len(), 2);
        assert!(waits[0].holders.is_empty(), "only the load's own session holds it");
        assert_eq!(waits[1].holders.iter().map(|h| h.pid).collect::<Vec<_>>(), [4242]);
        assert_eq!(to_stop_on_interrupt(&waits, &ours, false), vec![7, 9]);
    }

    #[test]
    fn a_wait_names_the_lock_and_its_holders_with_what_is_known_of_them() {
        let mut wait = Wait {
            waiter: 7,
            event: "relation".into(),
            waited: Duration::ZERO,
            relation: "public.t".into(),
            holders: vec![holder(4242, "alice", "psql", "idle in transaction")],
        };
        assert_eq!(
            wait.describe(),
            "a lock on public.t held by pid 4242 (role alice, application psql, idle in transaction)"
        );
        wait.holders.push(holder(0, "", "", ""));
        wait.holders.push(holder(99, "", "", ""));
        assert_eq!(
            wait.describe(),
            "a lock on public.t held by pid 4242 (role alice, application psql, idle in transaction) and by 2 other sessions"
        );
        let row = Wait {
            event: "transactionid".into(),
            relation: String::new(),
            holders: vec![holder(0, "", "", "")],
            ..wait
        };
        assert_eq!(row.describe(), "a row lock held by a prepared transaction (see pg_prepared_xacts)");
        let other = Wait { event: "object".into(), holders: vec![holder(5, "bob", "", "")], ..row };
        assert_eq!(other.describe(), "a lock (object) held by pid 5 (role bob)");
    }

    #[test]
    fn only_waits_of_a_second_or_more_are_reported_longest_first() {
        let blockers = Blockers::default();
        let mut waited = blockers.waited.lock().unwrap();
        waited.insert("a lock on a held by pid 1".into(), Duration::from_millis(900));
        waited.insert("a lock on b held by pid 2".into(), Duration::from_millis(1500));
        waited.insert("a lock on c held by pid 3".into(), Duration::from_secs(75));
        drop(waited);
        assert_eq!(
            blockers.warnings(),
            ["waited 75.0 s for a lock on c held by pid 3", "waited 1.5 s for a lock on b held by pid 2"]
        );
    }
}
