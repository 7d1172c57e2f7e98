//! Where the server's time went: what the loading sessions were doing,
//! sampled from `pg_stat_activity` while the chunks load, and what the
//! sessions building deferred indexes were doing while they build.
//!
//! Why: a load slower than it should be is usually waiting on something the
//! client cannot see. On this project's benchmark (PostgreSQL 15, 2 cores)
//! two COPY sessions spent 19-25 % of their time queued on the table's
//! extension lock (PostgreSQL 15 and older grow a table one page at a time
//! under one lock): sluice loaded `transactions` 1.5-1.6x as fast as one psql
//! `\copy` there, and 1.8-1.9x on PostgreSQL 18. Other loads wait on WAL
//! flushes, on a lock another session holds, or on sluice itself
//! (`Client:ClientRead`). `pg_stat_activity` shows each session's current
//! wait to the role that owns it, no superuser needed; one more connection
//! asking 20 times a second costs the server 0.3 % of a core.
//!
//! While the chunks load, the same connection also wakes the server's WAL
//! writer after each sample, with an empty transaction that commits
//! asynchronously (PostgreSQL documents that such a commit wakes it before
//! its `wal_writer_delay`, 200 ms by default). Why: a chunk's COPY writes
//! WAL faster than that (about 170 MB/s here) into buffers of at most
//! 16 MB unless `wal_buffers` is raised, and only the chunks' own commits,
//! a 16 MiB chunk apart, woke the writer; in between the loading sessions
//! wrote WAL themselves, queued on its lock (`LWLock:WALWrite`, 2-9 % of
//! their samples). Woken every 50 ms it keeps up: medians of 5 interleaved
//! loads, `transactions` 2.85 → 2.52 s, lineitem 5.21 → 5.01 s, `cname`
//! 4.10 → 3.70 s, and no WAL waits left (bench/README.md). 4 MiB chunks,
//! whose commits wake it about as often, gained less on `transactions`
//! (2.61 s) and cost the server a COPY per chunk.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError};

use super::defer::BUILD_MEMORY_MB;
use super::retry::keep_watching;
use crate::doctor::EXTENSION_LOCK_MEASURED;
use crate::error::Error;
use crate::report::{thousands, ChunkRecord, ServerWait, ServerWaits};
use crate::sink::postgres::{PgSession, PgTarget};
use crate::sql::pid_array;

/// Time between samples: 20 a second, each 0.15 ms of the server's time
/// once prepared (0.5 ms unprepared: 2 % of a core at this rate, measured
/// with pgbench).
const PERIOD: Duration = Duration::from_millis(50);

/// The empty transaction that wakes the WAL writer: it takes a transaction
/// ID, so its commit is written, and commits asynchronously.
fn wal_writer_nudge(server_version: i32) -> &'static str {
    match server_version >= 130000 {
        true => "SELECT pg_current_xact_id()",
        false => "SELECT txid_current()",
    }
}

/// Time between attempts to connect again after the sampler's session was
/// lost: the workers' reconnects, which the load waits on, come first.
const RECONNECT_PAUSE: Duration = Duration::from_secs(1);

/// What each sample asks: the watched sessions that run a statement, what
/// each waits on, and, for a lock, whether only watched sessions hold it
/// (`true`: the load's sessions waited for each other). From PostgreSQL 13
/// on, also the parallel workers that help them (an index build's,
/// usually). `pg_blocking_pids` takes the lock manager's locks, so it is
/// asked only of a session queued for a lock (not to grow the table, which
/// the sessions do in turn), where the load already waits.
const SAMPLE: &str = "sluice_waits";
macro_rules! sample_columns {
    () => {
        "SELECT coalesce(wait_event_type || ':' || wait_event, $2), \
         CASE WHEN wait_event_type = 'Lock' AND wait_event NOT IN ('extend', 'page') THEN \
         (SELECT b.pids <> '{}' AND b.pids <@ $1::int[] FROM pg_blocking_pids(pid) AS b(pids))::text END \
         FROM pg_stat_activity "
    };
}
const SAMPLE_SQL: &str = concat!(sample_columns!(), "WHERE pid = ANY($1::int[]) AND state = 'active'");
const SAMPLE_WITH_HELPERS_SQL: &str =
    concat!(sample_columns!(), "WHERE (pid = ANY($1::int[]) OR leader_pid = ANY($1::int[])) AND state = 'active'");

/// What the watched sessions do, which decides what their waits mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// COPY, chunk after chunk.
    Loading,
    /// CREATE INDEX and ADD CONSTRAINT after the load.
    IndexBuilds,
}

/// The label of an active session that waits for nothing: it runs, or waits
/// for a CPU (on a machine with fewer cores than busy processes).
const ON_CPU: &str = "CPU";

/// The loading sessions' backend process ids and what was seen of them.
#[derive(Default)]
pub struct WaitSampler {
    pids: Mutex<Vec<u32>>,
    seen: Mutex<BTreeMap<String, u64>>,
    /// Of `seen`'s lock waits, those on the watched sessions alone.
    on_each_other: Mutex<BTreeMap<String, u64>>,
    server_version: Mutex<i32>,
}

impl WaitSampler {
    /// A loading session to watch.
    pub fn watch(&self, pid: u32) {
        self.pids.lock().unwrap().push(pid);
    }

    /// Samples over a connection of its own until `done` is dropped, which
    /// wakes it at once (the load's end does not wait for a period).
    /// Without a connection (the server's connection limit, say) there is
    /// simply no sample: the load does not depend on it. After a restart it
    /// connects again, as the workers do, and samples their new sessions.
    /// While `work` is loading, it also wakes the WAL writer after each
    /// sample (see the module's doc).
    pub fn run(&self, target: &PgTarget, done: Receiver<()>, work: Work) {
        keep_watching(target, &done, (Duration::ZERO, RECONNECT_PAUSE), |session| {
            self.sample_until(session, &done, work)
        });
    }

    /// Samples every [`PERIOD`] until `done`; true when the session was
    /// lost (or failed in another way that may pass).
    fn sample_until(&self, session: &PgSession, done: &Receiver<()>, work: Work) -> bool {
        let version = session.server_version();
        // Best effort: where the nudge fails (a server in recovery refuses
        // transaction IDs), the load goes on without it.
        let mut nudge = (work == Work::Loading && session.execute("SET synchronous_commit = off").is_ok())
            .then(|| wal_writer_nudge(version));
        let sql = match version >= 130000 {
            true => SAMPLE_WITH_HELPERS_SQL,
            false => SAMPLE_SQL,
        };
        if let Err(e) = session.prepare(SAMPLE, sql) {
            return e.may_pass();
        }
        *self.server_version.lock().unwrap() = version;
        while let Err(RecvTimeoutError::Timeout) = done.recv_timeout(PERIOD) {
            if let Err(e) = self.sample(session) {
                return e.may_pass();
            }
            if let Some(sql) = nudge {
                nudge = session.execute(sql).ok().map(|()| sql);
            }
        }
        false
    }

    /// One look at the watched sessions that are running a statement.
    fn sample(&self, session: &PgSession) -> Result<(), Error> {
        let pids = pid_array(&self.pids.lock().unwrap());
        let rows = session.query_prepared(SAMPLE, &[Some(&pids), Some(ON_CPU)])?;
        let mut seen = self.seen.lock().unwrap();
        let mut on_each_other = self.on_each_other.lock().unwrap();
        for row in rows {
            let Some(Some(event)) = row.first() else { continue };
            if row.get(1).is_some_and(|ours| ours.as_deref() == Some("true")) {
                *on_each_other.entry(event.clone()).or_default() += 1;
            }
            *seen.entry(event.clone()).or_default() += 1;
        }
        Ok(())
    }

    /// The shares of all samples so far, largest first, with the hint for
    /// the largest wait that has one for this `work`.
    pub fn summary(&self, work: Work) -> ServerWaits {
        let seen = self.seen.lock().unwrap();
        let samples: u64 = seen.values().sum();
        let mut events: Vec<ServerWait> = seen
            .iter()
            .map(|(event, &n)| ServerWait { event: event.clone(), samples: n, share: n as f64 / samples as f64 })
            .collect();
        events.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.event.cmp(&b.event)));
        let server_version_num = *self.server_version.lock().unwrap();
        let on_each_other = self.on_each_other.lock().unwrap();
        let mostly_on_each_other = |w: &ServerWait| 2 * on_each_other.get(&w.event).copied().unwrap_or(0) > w.samples;
        let hint = events.iter().filter(|w| w.share >= HINT_SHARE).find_map(|w| match work {
            Work::Loading if mostly_on_each_other(w) => each_others_lock_hint(&w.event),
            Work::Loading => hint(&w.event, server_version_num),
            Work::IndexBuilds => build_hint(&w.event).or_else(|| hint(&w.event, server_version_num)),
        });
        ServerWaits { samples, events, hint }
    }
}

/// `waits` with the hint for `Client:ClientRead` telling of isolation when
/// setting rejects apart took most of the load: the chunks that isolated
/// records took at least half of the chunks' time, in
/// [`ISOLATION_TOLD`] COPYs or more. Why: 200,000 records of which every
/// tenth broke a CHECK constraint loaded in 1.7 s against 0.12 s without
/// them, 36-68 % `Client:ClientRead`, and the hint blamed reading,
/// decompressing or encoding on the client, where the time went to the
/// 40,862 small COPYs that set the rejects apart, a round trip each.
pub(super) fn isolation_told(mut waits: ServerWaits, chunks: &[ChunkRecord]) -> ServerWaits {
    let client_read = waits.hint.as_deref().is_some_and(|hint| hint.starts_with("Client:ClientRead"));
    let copies: u64 = chunks.iter().map(|c| c.isolation_copies).sum();
    let time = |isolating: bool| -> f64 {
        chunks.iter().filter(|c| (c.isolation_copies > 0) == isolating).map(|c| c.end_s - c.start_s).sum()
    };
    if client_read && copies >= ISOLATION_TOLD && time(true) >= time(false) {
        let rejected: u64 = chunks.iter().map(|c| c.rejected).sum();
        waits.hint = Some(format!(
            "Client:ClientRead: the server waited for sluice between the {} small COPYs that set apart the {} \
             rejected {} (at least one round trip for each, in chunks that took {:.0} % of the chunks' time): \
             dense rejects cost that, and the input without them (or a table that takes them) loads faster",
            thousands(copies),
            thousands(rejected),
            if rejected == 1 { "record" } else { "records" },
            100.0 * time(true) / (time(true) + time(false)).max(1e-9)
        ));
    }
    waits
}

/// Isolation COPYs from which [`isolation_told`] tells of them.
const ISOLATION_TOLD: u64 = 1_000;

/// What a slow disk did to this project's benchmark (bench/README.md).
const SLOW_DISK_MEASURED: &str = "with the server's writes throttled to 100 MB/s, 10 M rows loaded at \
     1.0-1.1x psql \\copy, against 1.6x unthrottled, and no other load path was faster";

/// A wait that takes at least this share of the samples gets a hint.
const HINT_SHARE: f64 = 0.10;

/// What a wait means for a bulk load and what would help, for the waits
/// loads meet most; `None` for running and for waits with no simple cause.
fn hint(event: &str, server_version_num: i32) -> Option<String> {
    Some(match event {
        "Lock:extend" if server_version_num < 160000 => format!(
            "Lock:extend: the sessions queued to grow the table, which PostgreSQL 15 and older do one page at a \
             time under one lock (for COPY, also writing out the page whose buffer it reuses); \
             PostgreSQL 16 and later grow it many pages at a time ({EXTENSION_LOCK_MEASURED})"
        ),
        "Lock:extend" => "Lock:extend: the sessions queued to grow the table; fewer workers may load as fast".into(),
        "Client:ClientRead" => "Client:ClientRead: the server waited for sluice to send; the client's side \
             (reading, decompressing, converting values, binary encoding) is the limit, or the network"
            .into(),
        // PostgreSQL 17 renamed WALSync to WalSync and WALWrite to WalWrite.
        "IO:WALSync" | "IO:WalSync" | "IO:WALWrite" | "IO:WalWrite" | "LWLock:WALWrite" => format!(
            "{event}: the sessions waited for WAL to reach the disk, so the disk's write speed is the limit \
             ({SLOW_DISK_MEASURED}); a faster disk, or WAL on a disk of its own, would help"
        ),
        "IO:WALInitSync" | "IO:WalInitSync" | "IO:WALInitWrite" | "IO:WalInitWrite" => format!(
            "{event}: the server created and zero-filled new WAL files instead of recycling old ones (a new \
             cluster's first loads, or min_wal_size below what a load writes: raise it to keep the files)"
        ),
        "LWLock:WALInsert" => {
            "LWLock:WALInsert: the sessions queued to write WAL; fewer workers may load as fast".into()
        }
        "IO:DataFileRead" => "IO:DataFileRead: the sessions read table or index pages from disk; indexes larger \
             than shared_buffers slow every row (see --defer-indexes)"
            .into(),
        "Lock:relation" | "Lock:transactionid" | "Lock:tuple" => {
            format!("{event}: another session held a lock the load needed")
        }
        "Lock:advisory" => "Lock:advisory: another session held an advisory lock that the load's rows take (a \
             trigger on the table calling pg_advisory_xact_lock, say)"
            .into(),
        // PostgreSQL 17 lets extensions name their waits (postgres_fdw's
        // are Extension:PostgresFdwGetResult and the like).
        _ if event.starts_with("Extension:") => format!(
            "{event}: the sessions waited in an extension; for a foreign table, that is its data wrapper waiting \
             for the server that stores the rows (postgres_fdw: see the warning about batch_size, if any)"
        ),
        _ => return None,
    })
}

/// What a lock wait means when the load's own sessions held the lock:
/// they took turns, so more of them did not load faster. Measured: an
/// update of 80,000 records in 64 KiB chunks whose keys the chunks share,
/// 0.67 s with 4 workers (50 % `Lock:transactionid`) against 0.29 s with
/// one; with a trigger that takes one of 50 advisory locks per row, 7.0 s
/// (97 % `Lock:advisory`, and deadlocks between the sessions) against
/// 0.36 s.
fn each_others_lock_hint(event: &str) -> Option<String> {
    let why = match event {
        "Lock:advisory" => {
            "took turns at advisory locks that the rows take (a trigger on the table calling \
             pg_advisory_xact_lock, say)"
        }
        "Lock:transactionid" | "Lock:tuple" => {
            "waited for each other's rows: chunks loading at once held records \
             with the same key, and each waited for the other to end"
        }
        _ if event.starts_with("Lock:") => "waited for each other's locks",
        _ => return None,
    };
    Some(format!("{event}: the load's sessions {why}; fewer workers (--workers 1) may load as fast"))
}

/// What a wait means while indexes build, where it differs from a load.
fn build_hint(event: &str) -> Option<String> {
    Some(match event {
        "IO:BufFileWrite" | "IO:BufFileRead" => format!(
            "{event}: the builds' sorts spilled to temporary files; a larger maintenance_work_mem (sluice \
             raises it to {BUILD_MEMORY_MB} MB for these sessions when it is lower) keeps them in memory"
        ),
        "IO:DataFileRead" => "IO:DataFileRead: the builds read the table from disk: it is larger than \
             shared_buffers and the operating system's cache hold"
            .into(),
        // Measured on the benchmark with parallel maintenance workers off:
        // 14-17 % of the samples, the key waiting on sluice's other builder.
        "Lock:relation" => "Lock:relation: a build waited for the table: a key attaches only once the other \
             sessions' builds end (the server's parallel maintenance workers, max_parallel_maintenance_workers, \
             keep the cores busy meanwhile), or another session held a lock on it"
            .into(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_reads_are_told_of_isolation_when_isolating_chunks_took_most_of_the_time() {
        let chunk = |copies: u64, seconds: f64| ChunkRecord {
            isolation_copies: copies,
            rejected: copies / 2,
            end_s: seconds,
            ..ChunkRecord::default()
        };
        let waits = || ServerWaits { hint: hint("Client:ClientRead", 150000), ..ServerWaits::default() };
        let told = |chunks: &[ChunkRecord]| isolation_told(waits(), chunks).hint.unwrap();
        let dense = told(&[chunk(1_200, 1.0), chunk(0, 0.5), chunk(800, 1.0)]);
        assert!(dense.contains("between the 2,000 small COPYs that set apart the 1,000 rejected records"), "{dense}");
        assert!(dense.contains("chunks that took 80 % of the chunks' time"), "{dense}");
        assert_eq!(told(&[chunk(999, 1.0)]), waits().hint.unwrap(), "too few copies to matter");
        assert_eq!(told(&[chunk(2_000, 1.0), chunk(0, 1.5)]), waits().hint.unwrap(), "most time in clean chunks");
        let other = ServerWaits { hint: hint("Lock:extend", 150000), ..ServerWaits::default() };
        assert_eq!(isolation_told(other.clone(), &[chunk(2_000, 1.0)]).hint, other.hint, "another wait's hint stays");
    }

    fn sampler(seen: &[(&str, u64)], version: i32) -> WaitSampler {
        let s = WaitSampler::default();
        *s.seen.lock().unwrap() = seen.iter().map(|&(e, n)| (e.to_string(), n)).collect();
        *s.server_version.lock().unwrap() = version;
        s
    }

    #[test]
    fn shares_add_up_largest_first() {
        let waits = sampler(&[("IO:DataFileExtend", 7), (ON_CPU, 70), ("Lock:extend", 19), ("IO:WALSync", 4)], 150013)
            .summary(Work::Loading);
        assert_eq!(waits.samples, 100);
        let order: Vec<&str> = waits.events.iter().map(|w| w.event.as_str()).collect();
        assert_eq!(order, [ON_CPU, "Lock:extend", "IO:DataFileExtend", "IO:WALSync"]);
        assert!((waits.events.iter().map(|w| w.share).sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(waits.hint.as_deref().is_some_and(|h| h.starts_with("Lock:extend") && h.contains("PostgreSQL 16")));
    }

    #[test]
    fn hints_depend_on_the_server_and_on_the_share() {
        let newer = sampler(&[(ON_CPU, 80), ("Lock:extend", 20)], 180006).summary(Work::Loading);
        assert!(newer.hint.is_some_and(|h| h.contains("fewer workers") && !h.contains("PostgreSQL 16")));
        let small = sampler(&[(ON_CPU, 95), ("Lock:extend", 5)], 150013).summary(Work::Loading);
        assert_eq!(small.hint, None, "a 5 % wait is not worth a hint");
        for (event, says) in [("LWLock:WALWrite", "write speed"), ("IO:WalInitSync", "min_wal_size")] {
            let waits = sampler(&[(ON_CPU, 60), (event, 40)], 170000).summary(Work::Loading);
            assert!(waits.hint.as_deref().is_some_and(|h| h.starts_with(event) && h.contains(says)), "{event}");
        }
        for event in ["Extension:Extension", "Extension:PostgresFdwGetResult"] {
            let waits = sampler(&[(ON_CPU, 10), (event, 90)], 180006).summary(Work::Loading);
            assert!(waits.hint.as_deref().is_some_and(|h| h.starts_with(event) && h.contains("foreign table")));
        }
        let unknown = sampler(&[(ON_CPU, 50), ("IPC:SomethingNew", 50)], 150013).summary(Work::Loading);
        assert_eq!(unknown.hint, None);
        assert_eq!(sampler(&[], 150013).summary(Work::Loading).samples, 0);
    }

    #[test]
    fn lock_waits_mostly_on_the_loads_own_sessions_suggest_fewer_workers() {
        let waits = |event: &str, on_each_other: u64| {
            let s = sampler(&[(ON_CPU, 40), (event, 60)], 150013);
            s.on_each_other.lock().unwrap().insert(event.to_string(), on_each_other);
            s.summary(Work::Loading).hint.unwrap()
        };
        for event in ["Lock:advisory", "Lock:transactionid", "Lock:tuple"] {
            let ours = waits(event, 31);
            assert!(
                ours.starts_with(&format!("{event}: the load's sessions")) && ours.contains("--workers 1"),
                "{ours}"
            );
            let others = waits(event, 30);
            assert!(others.starts_with(&format!("{event}: another session held")), "half is not most: {others}");
        }
        assert!(waits("Lock:advisory", 0).contains("pg_advisory_xact_lock"));
        let builds = sampler(&[(ON_CPU, 40), ("Lock:relation", 60)], 150013);
        builds.on_each_other.lock().unwrap().insert("Lock:relation".into(), 60);
        let hint = builds.summary(Work::IndexBuilds).hint.unwrap();
        assert!(hint.contains("a key attaches"), "builds wait on each other by design: {hint}");
    }

    #[test]
    fn index_builds_get_hints_of_their_own() {
        let spilled = [(ON_CPU, 60), ("IO:BufFileWrite", 40)];
        let builds = sampler(&spilled, 150013).summary(Work::IndexBuilds);
        assert!(builds.hint.is_some_and(|h| h.starts_with("IO:BufFileWrite") && h.contains("maintenance_work_mem")));
        assert_eq!(sampler(&spilled, 150013).summary(Work::Loading).hint, None, "a load does not sort");
        let reading = [(ON_CPU, 60), ("IO:DataFileRead", 40)];
        let builds = sampler(&reading, 150013).summary(Work::IndexBuilds).hint.unwrap();
        let load = sampler(&reading, 150013).summary(Work::Loading).hint.unwrap();
        assert!(builds.contains("read the table") && load.contains("--defer-indexes"), "{builds} / {load}");
        let locked = sampler(&[(ON_CPU, 80), ("Lock:relation", 20)], 150013).summary(Work::IndexBuilds);
        assert!(locked.hint.is_some_and(|h| h.contains("a key attaches") && h.contains("parallel maintenance")));
        let wal = sampler(&[(ON_CPU, 60), ("LWLock:WALWrite", 40)], 150013).summary(Work::IndexBuilds);
        assert!(wal.hint.is_some_and(|h| h.contains("write speed")), "the rest is shared with loads");
    }
}
