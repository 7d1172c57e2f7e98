//! Exactly once: kills, interrupts, changed inputs and several processes on
//! one job never leave a row duplicated or missing, nor a reject lost.

use std::io::{BufRead, Write};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::util::{sluice_command, sluice_with_stdin, TestDb};

/// `rows` transactions rows; every 997th is bad (its id is not a number).
/// Returns the data, the number of good rows and the sum of their ids.
fn transactions_with_bad(rows: u64) -> (Vec<u8>, u64, u64) {
    let mut data = Vec::new();
    let (mut good, mut sum) = (0, 0);
    for i in 1..=rows {
        if i % 997 == 0 {
            data.extend_from_slice(format!("x{i}\t{}\t{}\tbad-{i}\n", 10_000 + i, i % 500).as_bytes());
        } else {
            data.extend_from_slice(format!("{i}\t{}\t{}\tdescription-{i}\n", 10_000 + i, i % 500).as_bytes());
            good += 1;
            sum += i;
        }
    }
    (data, good, sum)
}

/// The same rows as [`transactions_with_bad`] as JSON lines for the
/// table's columns, keys in turns of order, with a string in a number's
/// place (rejected by the server) or a document cut short (rejected by
/// sluice) in turn on every 997th line.
fn transactions_documents_with_bad(rows: u64) -> (Vec<u8>, u64, u64) {
    let mut data = Vec::new();
    let (mut good, mut sum) = (0, 0);
    for i in 1..=rows {
        let line = match (i % 997, i / 997 % 2, i % 3) {
            (0, 0, _) => format!(r#"{{"tid":"x{i}","mssinceunixepoch":1,"amount":2,"description":"bad"}}"#),
            (0, _, _) => format!(r#"{{"tid":{i},"mssinceunixepoch":1,"descr"#),
            (_, _, 0) => format!(
                r#"{{"description":"d\t{i}","amount":{},"tid":{i},"mssinceunixepoch":{}}}"#,
                i % 500,
                10_000 + i
            ),
            _ => format!(
                r#"{{"tid":{i},"mssinceunixepoch":{},"amount":{},"description":"description-{i}"}}"#,
                10_000 + i,
                i % 500
            ),
        };
        if i % 997 != 0 {
            good += 1;
            sum += i;
        }
        data.extend_from_slice(line.as_bytes());
        data.push(b'\n');
    }
    (data, good, sum)
}

struct Fixture {
    db: TestDb,
    args: Vec<String>,
    good: u64,
    sum: u64,
    bad: u64,
}

fn fixture(rows: u64, extra: &[&str]) -> Fixture {
    fixture_in_files(rows, 1, extra)
}

/// [`fixture`] with the rows split among `files` files, loaded by a glob;
/// with 0, in one file as JSON lines ([`transactions_documents_with_bad`]).
fn fixture_in_files(rows: u64, files: usize, extra: &[&str]) -> Fixture {
    let db = TestDb::new();
    db.execute(&sluice::gen::Dataset::Transactions.ddl("t"));
    let (data, good, sum) = transactions_with_bad(rows);
    let input = match files {
        0 => db.file("t.jsonl", &transactions_documents_with_bad(rows).0),
        1 => db.file("t.tsv", &data),
        _ => {
            let lines: Vec<&[u8]> = data.split_inclusive(|&b| b == b'\n').collect();
            for (i, part) in lines.chunks(lines.len().div_ceil(files)).enumerate() {
                db.file(&format!("parts/t-{i:05}.tsv"), &part.concat());
            }
            db.dir.path().join("parts/t-*.tsv")
        }
    };
    let rejects = db.dir.path().join("t.rejects.jsonl");
    let mut args: Vec<String> = ["load", input.to_str().unwrap(), "--db", &db.conninfo(), "--table", "t"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(["--chunk-size", "256KiB", "--workers", "2", "--quiet", "--rejects"].map(String::from));
    args.push(rejects.display().to_string());
    args.extend(extra.iter().map(|s| s.to_string()));
    Fixture { db, args, good, sum, bad: rows - good }
}

impl Fixture {
    fn spawn(&self) -> Child {
        sluice_command().args(&self.args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap()
    }

    /// Every good row once, loaded by two processes of job `job`.
    fn assert_shared_by_two(&self, job: &str) {
        assert_eq!(self.db.count("t"), self.good);
        assert_eq!(self.db.scalar("SELECT count(DISTINCT tid) FROM t"), self.good.to_string());
        assert_eq!(self.db.scalar("SELECT sum(tid) FROM t"), self.sum.to_string());
        let per_pid = self.db.scalar(&format!("SELECT count(DISTINCT pid) FROM sluice.chunks WHERE job = '{job}'"));
        assert_eq!(per_pid, "2", "both processes loaded chunks");
    }

    /// Runs the load once per moment, killing it that long after its start;
    /// returns how many runs the kill stopped mid-load.
    fn kill_after_each(&self, moments: Vec<Duration>) -> u32 {
        let mut killed = 0;
        for (i, wait) in moments.into_iter().enumerate() {
            let mut child = self.spawn();
            std::thread::sleep(wait);
            let _ = child.kill();
            let status = child.wait().unwrap();
            // Killed mid-load, or the job had already finished (0) or
            // finished with rejects (1) before the signal.
            assert!(matches!(status.code(), None | Some(0 | 1)), "run {i} ended with {status}");
            killed += u32::from(status.code().is_none());
        }
        killed
    }

    /// Kills the load `runs` times at the moments of `seed`, asserting that
    /// at least half the kills landed mid-load, then runs it to its end: the
    /// table and rejects are then exact.
    fn kill_then_resume(&self, runs: usize, seed: u64) {
        let killed = self.kill_after_each(moments(runs, seed));
        assert!(
            killed as usize >= runs / 2,
            "only {killed} of {runs} runs were killed mid-load: the test lost its teeth"
        );
        self.resume();
    }

    /// Runs the load to its end (exit 0, or 1 for rejects): the table and
    /// rejects are then exact.
    fn resume(&self) {
        let out = self.spawn().wait_with_output().unwrap();
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
        self.assert_exact();
    }

    /// The table holds every good row exactly once, and every bad record is
    /// rejected exactly once, in the database and in the file.
    fn assert_exact(&self) {
        let db = &self.db;
        assert_eq!(db.count("t"), self.good, "rows loaded");
        assert_eq!(db.scalar("SELECT count(DISTINCT tid) FROM t"), self.good.to_string(), "no duplicates");
        assert_eq!(db.scalar("SELECT sum(tid) FROM t"), self.sum.to_string(), "checksum");
        let stored = "SELECT count(*) || ' ' || count(DISTINCT (file, byte)) FROM sluice.rejects";
        assert_eq!(db.scalar(stored), format!("{0} {0}", self.bad), "rejects in the database");
        let file = std::fs::read_to_string(db.dir.path().join("t.rejects.jsonl")).unwrap();
        assert_eq!(file.lines().count() as u64, self.bad, "rejects in the file");
    }
}

/// Pseudo-random moments, fixed so a failure replays.
fn moments(n: usize, seed: u64) -> Vec<Duration> {
    let mut rng = sluice::gen::Rng::new(seed);
    (0..n).map(|_| Duration::from_millis(20 + rng.below(300))).collect()
}

/// Kills a load 20 times at pseudo-random moments, then resumes it: every
/// row is there once. A release build loads about twice as fast, so
/// it gets more rows, to keep most kills landing mid-load.
#[test]
fn kill_at_random_moments_then_resume_loads_exactly_once() {
    let f = fixture(if cfg!(debug_assertions) { 2_000_000 } else { 4_000_000 }, &[]);
    f.kill_then_resume(20, 7);
    let again = f.spawn().wait_with_output().unwrap();
    assert_eq!(again.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already finished"));
    f.assert_exact();
}

/// The same for JSON lines into typed columns, whose lines are converted
/// as they are read and whose rejects are taken from the lines as they
/// were: each document is loaded or rejected once however the runs were
/// cut short.
#[test]
fn kill_at_random_moments_of_a_documents_load_then_resume_loads_exactly_once() {
    let f = fixture_in_files(if cfg!(debug_assertions) { 1_000_000 } else { 2_000_000 }, 0, &[]);
    f.kill_then_resume(12, 11);
    let text = "SELECT count(*) FROM t WHERE tid % 3 = 0 AND description = E'd\\t' || tid";
    let reordered = (1..=f.good + f.bad).filter(|i| i % 3 == 0 && i % 997 != 0).count();
    assert_eq!(f.db.scalar(text), reordered.to_string(), "escapes in documents whose keys came in another order");
    let file = std::fs::read_to_string(f.db.dir.path().join("t.rejects.jsonl")).unwrap();
    let cut = file.lines().filter(|l| l.contains("not a JSON document: EOF while parsing")).count() as u64;
    let cut_short = (1..=f.bad).filter(|k| k % 2 == 1).count() as u64;
    assert_eq!(cut, cut_short, "the documents cut short (every other 997th line), rejected by sluice");
}

/// The same across thousands of small files, which share batches (one COPY
/// and one transaction for several files): a kill never leaves part of a
/// batch committed, nor a file loaded twice.
#[test]
fn kill_at_random_moments_across_small_files_then_resume_loads_exactly_once() {
    let f = fixture_in_files(1_000_000, 10_000, &[]);
    f.kill_then_resume(10, 13);
    let per_file = "SELECT count(*) FROM (SELECT file FROM sluice.chunks GROUP BY file HAVING count(*) <> 1) f";
    assert_eq!(f.db.scalar(per_file), "0", "one ledger row per file");
}

/// Ctrl-C, and the TERM that `kill`, systemd and container runtimes send,
/// stop after the chunks in flight with a summary and exit code 3.
#[test]
fn ctrl_c_or_term_stops_cleanly_and_the_same_command_resumes() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let f = fixture(1_500_000, &[]);
        let child = f.spawn();
        std::thread::sleep(Duration::from_millis(400));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if matches!(out.status.code(), Some(0 | 1)) {
            // The load may have finished before the signal arrived.
        } else {
            assert_eq!(out.status.code(), Some(3), "signal {signal}: {stderr}");
            assert!(stderr.contains("run the same command again to resume"), "{stderr}");
            assert!(f.db.count("t") < f.good, "it stopped before the end");
        }
        f.resume();
    }
}

/// The rejects file holds the job's committed rejects after every run, an
/// interrupted one included, and earlier runs' as well (before, a resumed
/// run began the file afresh, and the earlier rejects came back only once
/// the job finished).
#[test]
fn after_each_interrupted_run_the_rejects_file_holds_the_jobs_rejects() {
    let f = fixture(3_000_000, &[]);
    let file = f.db.dir.path().join("t.rejects.jsonl");
    let mut interrupted = 0;
    for wait in [0, 50, 100] {
        let before = committed_rejects(&f.db);
        let child = f.spawn();
        // Once this run committed rejects of its own, so mid-load however
        // slow the machine (a fixed 300 ms once came before any commit).
        let start = Instant::now();
        while committed_rejects(&f.db) <= before {
            assert!(start.elapsed() < Duration::from_secs(60), "no rejects committed in 60 s");
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(wait));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let committed: u64 = f.db.scalar("SELECT count(*) FROM sluice.rejects").parse().unwrap();
        let in_file = std::fs::read_to_string(&file).map_or(0, |text| text.lines().count() as u64);
        assert_eq!(in_file, committed, "after run {}: {stderr}", interrupted + 1);
        if out.status.code() == Some(3) {
            interrupted += 1;
            let said =
                format!("{} records of the committed chunks were rejected", sluice::report::thousands(committed));
            assert!(stderr.contains(&said), "{stderr}");
            assert!(!stderr.contains("before the error"), "an interruption is not an error: {stderr}");
        }
    }
    assert!(interrupted >= 2, "only {interrupted} runs were interrupted mid-load: the test lost its teeth");
    f.resume();
}

/// The rejects the job's committed chunks hold (none before the ledger is).
fn committed_rejects(db: &TestDb) -> u64 {
    match db.scalar("SELECT to_regclass('sluice.rejects') IS NOT NULL").as_str() {
        "t" => db.scalar("SELECT count(*) FROM sluice.rejects").parse().unwrap(),
        _ => 0,
    }
}

/// `child`'s stderr line by line as it comes, and all of it once it ends.
fn stderr_lines(child: &mut Child) -> (mpsc::Receiver<String>, JoinHandle<String>) {
    let (tx, rx) = mpsc::channel();
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in stderr.lines().map_while(Result::ok) {
            all.push_str(&line);
            all.push('\n');
            let _ = tx.send(line);
        }
        all
    });
    (rx, reader)
}

/// Waits up to 30 s for a line that contains every one of `parts`.
fn await_line(lines: &mpsc::Receiver<String>, parts: &[&str]) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Ok(line) = lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        if parts.iter().all(|p| line.contains(p)) {
            return line;
        }
    }
    panic!("no line with {parts:?} in 30 s");
}

/// Sends `child` a Ctrl-C and waits up to `limit` for it to end (then kills
/// it): its exit code (`None` when killed), all its stderr, and the time
/// it took to end.
fn ctrl_c(mut child: Child, stderr: JoinHandle<String>, limit: Duration) -> (Option<i32>, String, Duration) {
    let interrupted = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    while child.try_wait().unwrap().is_none() && interrupted.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = interrupted.elapsed();
    let _ = child.kill();
    let status = child.wait().unwrap();
    (status.code(), stderr.join().unwrap(), took)
}

/// Another session's open transaction holds up `--truncate` (a TRUNCATE
/// waits for every transaction that read the table). The progress line says
/// who holds the lock while sluice waits; a Ctrl-C cancels the wait at once
/// (before, it waited for the lock and then emptied the table), and once
/// the transaction ends a load goes on and reports the wait.
#[test]
fn a_lock_held_elsewhere_is_named_while_waiting_and_ctrl_c_cancels_the_wait() {
    let TruncateHeldUp { f, holder, held, child, stderr } = truncate_held_up();
    ctrl_c_cancels_the_wait(&f, child, stderr);

    let mut child = f.spawn();
    let (lines, stderr) = stderr_lines(&mut child);
    await_line(&lines, &[&held]);
    std::thread::sleep(Duration::from_millis(1200));
    holder.execute("COMMIT").unwrap();
    let status = child.wait().unwrap();
    let stderr = stderr.join().unwrap();
    assert!(matches!(status.code(), Some(0 | 1)), "{stderr}");
    let waited = stderr.lines().find(|l| l.contains("warning: waited") && l.contains(&held)).expect(&stderr);
    let seconds: f64 = waited.split("waited ").nth(1).and_then(|s| s.split(' ').next()).unwrap().parse().unwrap();
    assert!(seconds >= 1.2, "{waited}");
    f.assert_exact();
}

/// The lock watch's own session ends (a server restart, an administrator's
/// pg_terminate_backend): the watch connects again, so a Ctrl-C still
/// cancels the wait. Before, the watch ended with its session, and the
/// Ctrl-C waited for the lock.
#[test]
fn the_lock_watch_connects_again_when_its_session_ends() {
    // The holder stays bound: its lock lasts as long as its session.
    let TruncateHeldUp { f, holder: _holder, child, stderr, .. } = truncate_held_up();
    let watch = "SELECT coalesce(max(pid), 0) FROM pg_stat_activity WHERE query LIKE '%pg_blocking_pids%' \
                 AND pid <> pg_backend_pid()";
    let first = f.db.scalar(watch);
    assert_ne!(first, "0", "the watch's session is seen");
    assert_eq!(f.db.scalar(&format!("SELECT pg_terminate_backend({first})")), "t");
    let second = wait_for(|q| f.db.scalar(q), watch, |pid| pid != "0" && pid != first);
    assert!(second != "0" && second != first, "the watch connected again: {second}");
    ctrl_c_cancels_the_wait(&f, child, stderr);
}

/// The wait sampler's own session ends (a restart, pg_terminate_backend)
/// while the load waits for a lock: it connects again and keeps sampling,
/// so the report's "where the time went" covers the rest of the load.
/// Before, it stopped for good, and the report counted only the waits
/// before the loss.
#[test]
fn the_wait_sampler_connects_again_when_its_session_ends() {
    let mut f = fixture(1_000_000, &[]);
    let report = f.db.dir.path().join("waits.json");
    f.args.extend(["--report".to_string(), report.display().to_string()]);
    let child = f.spawn();
    // A worker's statement is `[SAVEPOINT ...;] COPY "public"."t" ...`.
    let copying = "SELECT count(*) > 0 FROM pg_stat_activity WHERE query LIKE '%COPY \"%' AND pid <> pg_backend_pid()";
    wait_for(|q| f.db.scalar(q), copying, |s| s == "t");
    let holder = f.db.session();
    let asked = Instant::now();
    holder.execute("BEGIN; LOCK TABLE t IN EXCLUSIVE MODE").unwrap();
    let waiting = format!("{copying} AND wait_event_type = 'Lock'");
    let activity = "SELECT string_agg(state || ' ' || coalesce(wait_event, '-') || ' ' || left(query, 30), '; ') \
                    FROM pg_stat_activity WHERE pid <> pg_backend_pid()";
    let waits = wait_for(|q| f.db.scalar(q), &waiting, |s| s == "t");
    assert_eq!(waits, "t", "a worker waits for the lock: {}", f.db.scalar(activity));
    // Its last statement is a sample or the WAL writer's wake-up.
    let sampler = "SELECT coalesce(max(pid), 0) FROM pg_stat_activity \
                   WHERE (query LIKE '%leader_pid%' OR query LIKE '%pg_current_xact_id%') AND pid <> pg_backend_pid()";
    let first = f.db.scalar(sampler);
    assert_ne!(first, "0", "the sampler's session is seen");
    assert_eq!(f.db.scalar(&format!("SELECT pg_terminate_backend({first})")), "t");
    // The most lock samples the first session can have taken: one a worker
    // each 50 ms, from when the lock was asked for.
    let before = asked.elapsed();
    let most_before = 2 * (before.as_millis() as u64 / 50 + 1);
    let second = wait_for(|q| f.db.scalar(q), sampler, |pid| pid != "0" && pid != first);
    assert!(second != "0" && second != first, "the sampler connected again: {second}");
    // Long enough for the new session to count more than the first could,
    // on a slow machine too.
    std::thread::sleep(Duration::from_secs(3).max(before * 3));
    holder.execute("ROLLBACK").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    f.assert_exact();
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let waits = &json["summary"]["server_waits"];
    let events = waits["events"].as_array().unwrap();
    let lock = events.iter().find(|e| e["event"] == "Lock:relation").expect("a Lock:relation sample");
    let samples = lock["samples"].as_u64().unwrap();
    assert!(samples > most_before + 10, "{samples} lock samples, {most_before} possible before the loss: {waits}");
}

/// A `--truncate` load of 5 rows' table, held up by another session's
/// open transaction that read it, once the progress line names the holder.
struct TruncateHeldUp {
    f: Fixture,
    holder: sluice::sink::postgres::PgSession,
    /// How the progress line names the holder.
    held: String,
    child: Child,
    stderr: JoinHandle<String>,
}

fn truncate_held_up() -> TruncateHeldUp {
    let mut f = fixture(30_000, &["--truncate", "--progress-interval", "0.2"]);
    f.args.retain(|a| a != "--quiet");
    f.db.execute("INSERT INTO t SELECT -i, i, 0, 'there before' FROM generate_series(1, 5) AS i");
    let holder = f.db.session();
    holder.execute("BEGIN; SELECT count(*) FROM t").unwrap();
    let held = format!("for a lock on t held by pid {} (role ", holder.backend_pid());
    let mut child = f.spawn();
    let (lines, stderr) = stderr_lines(&mut child);
    await_line(&lines, &["waiting 0:", &held, "idle in transaction)"]);
    TruncateHeldUp { f, holder, held, child, stderr }
}

/// A Ctrl-C ends the held-up load at once, and its TRUNCATE emptied nothing.
fn ctrl_c_cancels_the_wait(f: &Fixture, child: Child, stderr: JoinHandle<String>) {
    let (code, stderr, took) = ctrl_c(child, stderr, Duration::from_secs(5));
    assert!(took < Duration::from_secs(5), "the wait was not cancelled: {stderr}");
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("interrupted after committing 0 chunks"), "{stderr}");
    assert_eq!(f.db.count("t"), 5, "the cancelled TRUNCATE emptied nothing");
}

/// A Ctrl-C while the deferred indexes are built again cancels the builds
/// (before, the load waited for them to finish, then exited 3 all the same)
/// and says what stays dropped; the same command builds it.
#[test]
fn ctrl_c_while_indexes_build_cancels_them_and_the_same_command_builds_them() {
    let mut f = fixture(3_000, &["--defer-indexes", "yes", "--progress-interval", "0.2"]);
    f.args.retain(|a| a != "--quiet");
    let slow = |seconds: &str| {
        format!(
            "CREATE OR REPLACE FUNCTION slow(integer) RETURNS integer IMMUTABLE LANGUAGE plpgsql AS \
             'BEGIN PERFORM pg_sleep({seconds}); RETURN $1; END'"
        )
    };
    // 2,997 good rows at 5 ms each: a build of 15 s.
    f.db.execute(&slow("0.005"));
    f.db.execute("CREATE INDEX t_slow ON t (slow(tid))");
    let index_exists = "SELECT count(*) FROM pg_indexes WHERE indexname = 't_slow'";
    // With a header line, which no chunk holds.
    let input = f.db.dir.path().join("t.tsv");
    let data = std::fs::read(&input).unwrap();
    std::fs::write(&input, [b"tid\tmssinceunixepoch\tamount\tdescription\n".as_slice(), &data].concat()).unwrap();
    f.args.push("--header".into());

    let mut child = f.spawn();
    let (lines, stderr) = stderr_lines(&mut child);
    await_line(&lines, &["building 1 deferred index/constraint"]);
    let (code, stderr, took) = ctrl_c(child, stderr, Duration::from_secs(5));
    assert!(took < Duration::from_secs(5), "the build was not cancelled: {stderr}");
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("interrupted after committing"), "{stderr}");
    let dropped = r#"index "t_slow" stays dropped until the same command runs again"#;
    assert!(stderr.contains(dropped), "{stderr}");
    assert_eq!(f.db.scalar(index_exists), "0", "the cancelled build rolled back");
    assert_eq!(f.db.count("t"), f.good, "the rows stay loaded");
    let status = sluice_command().args(["status", "--db", &f.db.conninfo()]).output().unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("every chunk is loaded; the job finishes once the indexes"), "{status}");
    assert!(status.contains("all of "), "{status}");

    f.db.execute(&slow("0"));
    let out = f.spawn().wait_with_output().unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("stays dropped"));
    assert_eq!(f.db.scalar(index_exists), "1", "built by the second run");
    f.assert_exact();
}

/// Makes table `t` fail as a full disk does (SQLSTATE 53100) for the rows
/// whose `tid` is past `tid`, until the trigger `full_disk` is dropped.
fn fill_the_disk_past(db: &TestDb, tid: u64) {
    db.execute(&format!(
        "CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
         IF NEW.tid > {tid} THEN RAISE EXCEPTION 'could not extend file: No space left on device' \
         USING ERRCODE = 'disk_full', HINT = 'Check free disk space.'; END IF; RETURN NEW; END $$; \
         CREATE TRIGGER full_disk BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION full_disk()"
    ));
}

/// A full disk (SQLSTATE 53100, raised here by a trigger for the rows past
/// 60,000) may pass when someone frees space: sluice retries until
/// `--retry-timeout`, says on the progress line what it waits for, then
/// stops with the server's reason, keeping every chunk that committed. Once
/// the disk has room (the trigger dropped), the same command loads the rest.
#[test]
fn a_full_disk_is_retried_until_the_timeout_then_the_same_command_resumes() {
    let mut f = fixture(200_000, &["--retry-timeout", "2s", "--progress-interval", "0.3"]);
    f.args.retain(|a| a != "--quiet");
    fill_the_disk_past(&f.db, 60_000);
    let started = std::time::Instant::now();
    let mut child = f.spawn();
    while child.try_wait().unwrap().is_none() && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(started.elapsed() < Duration::from_secs(60), "still retrying after a minute: {stderr}");
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("retrying") && stderr.contains("No space left on device") && stderr.contains("[53100]"),
        "{stderr}"
    );
    assert!(stderr.contains("run the same command again to resume"), "{stderr}");
    resume_once_the_disk_has_room(&f);
}

/// After a full disk (past row 60,000) stopped the load: the chunks before
/// it stay, once each, and the same command loads the rest once the disk
/// has room (the trigger dropped).
fn resume_once_the_disk_has_room(f: &Fixture) {
    let loaded = f.db.count("t");
    assert!(loaded > 0 && loaded < 60_000, "{loaded} rows: the chunks before the full disk");
    assert_eq!(f.db.scalar("SELECT count(DISTINCT tid) FROM t"), loaded.to_string());
    f.db.execute("DROP TRIGGER full_disk ON t");
    f.resume();
}

/// A Ctrl-C while workers wait for the server (here a full disk) stops the
/// load as any Ctrl-C does: at once, with exit code 3, not with the
/// server's error at the end of --retry-timeout (or of a 5 s pause, as
/// before). The same command resumes once the cause is gone.
#[test]
fn ctrl_c_while_retrying_is_an_interrupt_and_the_same_command_resumes() {
    let mut f = fixture(200_000, &["--retry-timeout", "60s", "--progress-interval", "0.2"]);
    f.args.retain(|a| a != "--quiet");
    fill_the_disk_past(&f.db, 60_000);
    let mut child = f.spawn();
    let (lines, stderr) = stderr_lines(&mut child);
    await_line(&lines, &["retrying for up to", "No space left on device"]);
    std::thread::sleep(Duration::from_millis(1500));
    let (code, stderr, took) = ctrl_c(child, stderr, Duration::from_secs(20));
    assert!(took < Duration::from_secs(3), "{took:?} after the Ctrl-C: {stderr}");
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("interrupted after committing"), "{stderr}");
    resume_once_the_disk_has_room(&f);
}

/// The rows a job committed must still be in its table. A table dropped and
/// created again under the same name after the job finished, or emptied in
/// the middle of a job, would have the job skip records whose rows are gone:
/// both are refused, naming --restart, which then loads every record once.
#[test]
fn a_table_dropped_or_emptied_since_is_refused_and_restart_loads_everything() {
    let f = fixture(20_000, &[]);
    assert!(matches!(f.spawn().wait().unwrap().code(), Some(0 | 1)));
    // In public, where it was: the test's role is named like sluice's schema,
    // which comes first in the search path once the ledger made it.
    let ddl = sluice::gen::Dataset::Transactions.ddl("t");
    f.db.execute(&format!("SET search_path = public; DROP TABLE t; {ddl}"));
    f.assert_refused_until_restart("dropped since");

    let f = fixture(200_000, &["--retry-timeout", "0s"]);
    fill_the_disk_past(&f.db, 100_000);
    let out = f.spawn().wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(f.db.count("t") > 0, "some chunks committed before the error");
    f.db.execute("DROP TRIGGER full_disk ON t; TRUNCATE t");
    f.assert_refused_until_restart("the table is empty now");
}

/// A file that grew since its job finished is refused (its last chunk is
/// not the one the job committed); `--restart --truncate` starts over.
#[test]
fn changed_input_is_refused_and_restart_starts_over() {
    let f = fixture(20_000, &[]);
    assert!(matches!(f.spawn().wait().unwrap().code(), Some(0 | 1)));
    let file = f.db.dir.path().join("t.tsv");
    let mut data = std::fs::read(&file).unwrap();
    data.extend_from_slice(b"20001\t30001\t1\tdescription-20001\n");
    std::fs::write(&file, &data).unwrap();
    let out = f.spawn().wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not the input job") && stderr.contains("--restart"), "{stderr}");
    assert_eq!(f.db.count("t"), f.good);
    let mut restart = f.spawn_with(&["--restart", "--truncate"]);
    assert!(matches!(restart.wait().unwrap().code(), Some(0 | 1)));
    assert_eq!(f.db.count("t"), f.good + 1);
    assert_eq!(f.db.scalar("SELECT count(DISTINCT tid) FROM t"), (f.good + 1).to_string());
    assert_eq!(f.db.scalar("SELECT count(*) FROM sluice.rejects"), f.bad.to_string(), "old rejects forgotten");
}

/// `touch -d stamp path`.
fn set_modified(path: &str, stamp: &str) {
    let mut touch = std::process::Command::new("touch");
    touch.args(["-d", stamp, path]);
    assert_eq!(crate::util::run_command(touch).code, 0, "touch {path}");
}

/// TSV lines `id<TAB>note 0042` for table `t (id int, note text)`.
fn notes(ids: std::ops::Range<u32>) -> Vec<u8> {
    ids.flat_map(|i| format!("{i}\tnote {i:04}\n").into_bytes()).collect()
}

/// A load refused before its copy starts (here: the input changed since
/// the job's first run) says what that run left dropped, as a load stopped
/// during its copy does: a user who gives up then would keep a table
/// without its index, told only by `sluice status`.
#[test]
fn a_load_refused_before_its_copy_names_what_stays_dropped() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, note text); CREATE INDEX t_note ON t (note)");
    let mut data = notes(0..2000);
    data.extend_from_slice(b"x\tbad\n");
    let file = db.file("t.tsv", &data);
    let path = file.to_str().unwrap();
    let args = [path, "--table", "t", "--chunk-size", "1KiB", "--workers", "1", "--defer-indexes", "yes"];
    let args = [&args[..], &["--max-errors", "0"]].concat();
    let dropped = r#"index "t_note" stays dropped until the same command runs again and builds it"#;
    let stopped = db.load(&args);
    assert_eq!(stopped.code, 5, "{}", stopped.stderr);
    assert!(stopped.stderr.contains(dropped), "{}", stopped.stderr);
    let mut other = data.clone();
    let at = memchr::memmem::find(&other, b"note 0001").unwrap();
    other[at..at + 4].copy_from_slice(b"NOTE");
    std::fs::write(&file, &other).unwrap();
    set_modified(path, "2001-02-03 04:05:06");
    let refused = db.load(&args);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("held other data"), "{}", refused.stderr);
    assert!(refused.stderr.contains(dropped), "{}", refused.stderr);
    assert_eq!(db.scalar("SELECT count(*) FROM pg_indexes WHERE indexname = 't_note'"), "0");
}

/// A load cut short, then run again by a command that differs (another
/// chunk size; the file moved or compressed) is another job, which would
/// load again the rows the first one committed. It is refused before
/// anything loads, naming the unfinished job; `--job` loads it anyway, and
/// the first command resumes its job.
#[test]
fn the_data_of_an_unfinished_job_is_refused_under_another_command() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, note text)");
    let data = notes(0..3000);
    let file = db.file("t.tsv", &data);
    let path = file.to_str().unwrap();
    let args = |path: &str, chunk: &str| {
        [path, "--table", "t", "--format", "tsv", "--chunk-size", chunk, "--workers", "1"].map(String::from)
    };
    let load = |args: &[String]| db.load(&args.iter().map(String::as_str).collect::<Vec<_>>());
    load(&args(path, "1KiB")).assert_ok();
    // Cut short, as a crash leaves it: chunk 10 on lost.
    db.execute("DELETE FROM t WHERE id >= (SELECT first_line - 1 FROM sluice.chunks WHERE seq = 10)");
    db.execute("UPDATE sluice.chunks SET state = 'pending', rows_loaded = 0 WHERE seq >= 10");
    db.execute("UPDATE sluice.jobs SET finished_at = NULL");
    let kept = db.count("t");
    assert!((500..1000).contains(&kept), "{kept}");
    let moved = db.dir.path().join("moved.tsv");
    std::fs::rename(&file, &moved).unwrap();
    let gz = db.file("t.tsv.gz", &crate::util::gzip(&data));
    for again in [args(&moved.to_string_lossy(), "1KiB"), args(&gz.to_string_lossy(), "1KiB")] {
        let refused = load(&again);
        assert_eq!(refused.code, 2, "{again:?}: {}", refused.stderr);
        assert!(refused.stderr.contains(": job t-") && refused.stderr.contains("is unfinished"), "{}", refused.stderr);
        assert!(refused.stderr.contains("would load those rows again"), "{}", refused.stderr);
    }
    std::fs::rename(&moved, &file).unwrap();
    let refused = load(&args(path, "2KiB"));
    assert_eq!(refused.code, 2, "another chunk size: {}", refused.stderr);
    // It names the command that resumes the job: the first one, in its
    // directory, without the connection.
    let resume = "Resume that job with the command that began it (cd ";
    assert!(refused.stderr.contains(resume), "{}", refused.stderr);
    let first = format!(" && sluice load {path} --table t --format tsv --chunk-size 1KiB --workers 1");
    assert!(refused.stderr.contains(&first), "{}", refused.stderr);
    assert!(!refused.stderr.contains(&db.conninfo()) && !refused.stderr.contains("--db"), "{}", refused.stderr);
    let status = crate::util::sluice(&["status", "--db", &db.conninfo()]);
    assert!(status.stdout.contains("  resume with: cd "), "{}", status.stdout);
    assert_eq!(db.count("t"), kept, "nothing loaded by the refused runs");
    // Named a job of its own: loaded, twice over as asked.
    let own = [&args(path, "2KiB")[..], &["--job".to_string(), "again".to_string()]].concat();
    load(&own).assert_ok();
    assert_eq!(db.count("t"), kept + 3000);
    // The first command resumes its job and loads the rest once.
    load(&args(path, "1KiB")).assert_ok();
    assert_eq!(db.count("t"), 6000);
    assert_eq!(db.scalar("SELECT count(*) FROM (SELECT id FROM t GROUP BY id HAVING count(*) = 2) d"), "3000");
}

/// A file copied or touched after a partial load has a new modification
/// time but the same bytes: the job resumes once every committed chunk is
/// found again, byte for byte, and loads the rest exactly once. Other bytes
/// under the same name are refused before anything more loads, even when
/// the first difference lies past chunks still to load.
#[test]
fn a_touched_input_resumes_and_other_bytes_are_refused_before_loading() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, note text)");
    let mut data = notes(0..2000);
    data.extend_from_slice(b"x\tbad\n");
    data.extend(notes(2000..2100));
    let file = db.file("t.tsv", &data);
    let path = file.to_str().unwrap();
    let args = [path, "--table", "t", "--chunk-size", "1KiB", "--workers", "1"];
    let touch = |stamp: &str| set_modified(path, stamp);
    assert_eq!(db.load(&args).code, 1, "one reject");
    // A partial load, as a crash leaves it: chunk 0 and the chunks from
    // id 1000 on lost (their rows and rejects gone, the ledger says
    // pending), the chunks between kept.
    let first_id = |seq: &str| format!("(SELECT first_line - 1 FROM sluice.chunks WHERE seq = {seq})");
    let lost_from = "(SELECT max(seq) FROM sluice.chunks WHERE first_line - 1 <= 1000)";
    db.execute(&format!("DELETE FROM t WHERE id < {} OR id >= {}", first_id("1"), first_id(lost_from)));
    db.execute(&format!("UPDATE sluice.chunks SET state = 'pending' WHERE seq = 0 OR seq >= {lost_from}"));
    db.execute("DELETE FROM sluice.rejects; UPDATE sluice.jobs SET finished_at = NULL");
    assert!((800..1000).contains(&db.count("t")), "{} rows kept", db.count("t"));
    let kept = db.count("t");
    // Other bytes in chunk 1 (same length): refused, chunk 0 not loaded.
    let mut other = data.clone();
    let at = memchr::memmem::find(&other, b"note 0100").unwrap();
    other[at..at + 4].copy_from_slice(b"NOTE");
    std::fs::write(&file, &other).unwrap();
    touch("2001-02-03 04:05:06");
    let refused = db.load(&args);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("not the input job") && refused.stderr.contains("held other data"));
    assert_eq!(db.count("t"), kept, "nothing loaded before the difference was found");
    // The same bytes again, touched: resumed, and every row there once.
    std::fs::write(&file, &data).unwrap();
    touch("2002-03-04 05:06:07");
    let resumed = db.load(&args);
    assert_eq!(resumed.code, 1, "{}", resumed.stderr);
    assert!(resumed.stderr.contains("found again, byte for byte"), "{}", resumed.stderr);
    assert_eq!(db.count("t"), 2100);
    assert_eq!(db.scalar("SELECT count(DISTINCT id) FROM t"), "2100");
    // Finished and touched again: each chunk is found again, nothing loads.
    touch("2003-04-05 06:07:08");
    let again = db.load(&args);
    assert_eq!(again.code, 1, "the job's reject is still in its rejects file: {}", again.stderr);
    assert!(again.stderr.contains("rejected 1 record (1 by earlier runs of the job)"), "{}", again.stderr);
    assert_eq!(db.count("t"), 2100);
    assert!(db.load(&args).stderr.contains("already finished"), "the job took the new fingerprint");
    // With stdin among the inputs the file is not read ahead (stdin could
    // not be read again after it): a touched file is refused outright.
    db.execute("CREATE TABLE u (LIKE t)");
    let conninfo = db.conninfo();
    let rejects = db.dir.path().join("u.rejects.jsonl");
    let with_stdin = ["load", path, "-", "--db", &conninfo, "--table", "u", "--format", "tsv", "--quiet", "--rejects"];
    let with_stdin = [&with_stdin[..], &[rejects.to_str().unwrap()]].concat();
    let more = b"5000\tfrom stdin\n";
    assert_eq!(crate::util::sluice_with_stdin(&with_stdin, more).code, 1);
    touch("2004-05-06 07:08:09");
    let refused = crate::util::sluice_with_stdin(&with_stdin, more);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("was started with other input"), "{}", refused.stderr);
    let began = ". It began as: cd ";
    let command = format!(" && sluice load {path} - --table u --format tsv --quiet --rejects ");
    assert!(refused.stderr.contains(began) && refused.stderr.contains(&command), "{}", refused.stderr);
    assert!(!refused.stderr.contains(&conninfo), "{}", refused.stderr);
    assert_eq!(db.count("u"), 2101);
}

/// A touched input is read again up to the last chunk the job committed
/// before anything loads: for a large input that takes minutes, so the
/// progress line says so, and a Ctrl-C stops it (before, it read on to the
/// end first). Gzip makes the read last: seconds in a debug build, a fifth
/// of one in a release build, which still shows the line.
#[test]
fn the_check_of_a_touched_input_shows_on_the_progress_line_and_ctrl_c_stops_it() {
    let mut f = fixture(3_000_000, &["--progress-interval", "0.01"]);
    let mut gzip = std::process::Command::new("gzip");
    gzip.args(["-1", &f.args[1]]);
    assert_eq!(crate::util::run_command(gzip).code, 0);
    f.args[1].push_str(".gz");
    assert!(matches!(f.spawn().wait().unwrap().code(), Some(0 | 1)));
    f.args.retain(|a| a != "--quiet");
    let file = f.args[1].clone();
    set_modified(&file, "2001-02-03 04:05:06");
    let mut child = f.spawn();
    let (lines, stderr) = stderr_lines(&mut child);
    await_line(&lines, &["checking the changed input against the chunks committed before: ", " MB read again"]);
    let (code, stderr, took) = ctrl_c(child, stderr, Duration::from_secs(30));
    assert!(took < Duration::from_millis(1500), "the check went on after the Ctrl-C: {took:?} {stderr}");
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("interrupted after committing 0 chunks"), "{stderr}");
    f.assert_exact();
}

/// `--chunk-size auto` is resolved from the input's size; the job is still
/// the command's: a file that grew since is refused like any changed file,
/// not loaded again as a new job beside the rows it already gave.
#[test]
fn changed_input_with_auto_chunk_size_is_the_same_job() {
    let db = TestDb::new();
    let file = db.generated(sluice::gen::Dataset::Transactions, "t", 1_000_000, 7, "t.tsv");
    let size = std::fs::metadata(&file).unwrap().len();
    assert!(size > 33 << 20, "auto chunks grow with the input from 32 MiB on: {size}");
    let args = [file.to_str().unwrap(), "--table", "t", "--quiet"];
    db.load(&args).assert_ok();
    let more = sluice::gen::Dataset::Transactions;
    let mut extra = Vec::new();
    sluice::gen::generate(more, 50_000, 8, &mut extra).unwrap();
    std::fs::OpenOptions::new().append(true).open(&file).unwrap().write_all(&extra).unwrap();
    let again = db.load(&args);
    assert_eq!(again.code, 2, "{}", again.output());
    assert!(again.stderr.contains("not the input job"), "{}", again.stderr);
    assert_eq!(db.count("t"), 1_000_000);
}

impl Fixture {
    fn spawn_with(&self, extra: &[&str]) -> Child {
        sluice_command().args(&self.args).args(extra).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap()
    }

    /// The same command is refused (exit 2) for the reason `says`, naming
    /// --restart, and loads nothing; --restart then loads every record once.
    fn assert_refused_until_restart(&self, says: &str) {
        let out = self.spawn().wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says) && stderr.contains("--restart"), "{stderr}");
        assert_eq!(self.db.count("t"), 0);
        assert!(matches!(self.spawn_with(&["--restart"]).wait().unwrap().code(), Some(0 | 1)));
        self.assert_exact();
    }
}

/// Two processes share one job; one is killed mid-way; the other finishes
/// the job; nothing is loaded twice.
#[test]
fn two_processes_on_one_job_one_killed() {
    let f = fixture(400_000, &["--job", "shared"]);
    let mut a = f.spawn();
    let b = f.spawn();
    std::thread::sleep(Duration::from_millis(300));
    let _ = a.kill();
    let _ = a.wait();
    let out = b.wait_with_output().unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    // Rejects of chunks the killed process committed are in the database;
    // the file of the surviving process is rewritten only on resume, so
    // check the database here and let one more run complete the file.
    let done = f.spawn().wait_with_output().unwrap();
    assert!(matches!(done.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&done.stderr));
    assert_eq!(f.db.count("t"), f.good);
    assert_eq!(f.db.scalar("SELECT count(DISTINCT tid) FROM t"), f.good.to_string());
    assert_eq!(f.db.scalar("SELECT sum(tid) FROM t"), f.sum.to_string());
    assert_eq!(f.db.scalar("SELECT count(*) FROM sluice.rejects"), f.bad.to_string());
}

/// The server restarts in the middle of a load (its sessions are terminated,
/// as by an administrator): sluice reconnects within --retry-timeout and the
/// table ends exact.
#[test]
fn server_restart_mid_load_is_survived() {
    restart_mid_load(false, Moment::InTheCopy);
}

/// A crash (immediate shutdown, then crash recovery) undoes the last
/// asynchronous commits after the workers saw them succeed: the load must
/// notice from the ledger and load those chunks again.
#[test]
fn server_crash_mid_load_loses_nothing() {
    restart_mid_load(true, Moment::InTheCopy);
}

/// A crash while the job opens (its TRUNCATE waits for a lock the test
/// holds): the opening runs again once the server is back, as the same
/// command run again would, and the load ends exact. It failed the load
/// before (seen in CI, where a slow machine had not begun copying 0.5 s in).
#[test]
fn server_crash_while_the_job_opens_is_survived() {
    restart_mid_load(true, Moment::WhileOpening);
}

/// A crash while the deferred primary key is built again (it waits for a
/// lock the test holds): the chunks the crash undid load again, the key is
/// built, and the load ends exact.
#[test]
fn server_crash_while_the_key_is_built_again_is_survived() {
    restart_mid_load(true, Moment::WhileBuilding);
}

/// When the test stops the server: half a second into the copy, or while a
/// statement of the job's opening or of the index builds after the copy
/// waits for a lock the test holds (the crash ends the test's session and
/// its lock with it).
#[derive(Clone, Copy, PartialEq)]
enum Moment {
    InTheCopy,
    WhileOpening,
    WhileBuilding,
}

fn restart_mid_load(crash: bool, moment: Moment) {
    use sluice::local_pg::{LocalOptions, LocalPostgres};
    use sluice::sink::postgres::PgTarget;
    let settings = vec![("fsync".to_string(), "off".to_string())];
    let mut server = LocalPostgres::start(&LocalOptions { settings, ..LocalOptions::default() }).unwrap();
    let conninfo = server.conninfo("postgres");
    let connect = || PgTarget::new(Some(&conninfo)).connect().unwrap();
    let query = |sql: &str| -> String { connect().query(sql, &[]).unwrap()[0][0].clone().unwrap_or_default() };
    let setup = connect();
    setup.execute(&sluice::gen::Dataset::Transactions.ddl("t")).unwrap();
    let rows = if moment == Moment::InTheCopy { 1_500_000 } else { 300_000 };
    let dir = tempfile::tempdir().unwrap();
    let (data, good, sum) = transactions_with_bad(rows);
    let file = dir.path().join("t.tsv");
    std::fs::write(&file, &data).unwrap();
    let rejects = dir.path().join("r.jsonl");
    let mut command = sluice_command();
    command.args(["load", file.to_str().unwrap(), "--db", &conninfo, "--table", "t", "--chunk-size", "256KiB"]);
    command.args(["--retry-timeout", "60s", "--quiet", "--rejects", rejects.to_str().unwrap()]);
    let holder = connect();
    match moment {
        Moment::InTheCopy => {}
        Moment::WhileOpening => {
            // Rows that --truncate must empty, and a lock that holds it up.
            setup.execute("INSERT INTO t (tid) SELECT 10000000 + g FROM generate_series(1, 5) g").unwrap();
            holder.execute("BEGIN; LOCK TABLE t IN ACCESS SHARE MODE").unwrap();
            command.arg("--truncate");
        }
        Moment::WhileBuilding => setup.execute("ALTER TABLE t ADD PRIMARY KEY (tid)").unwrap(),
    }
    let child = command.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let waits_for = |statement: &str| {
        let waiting = format!(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE '%{statement}%' \
             AND pid <> pg_backend_pid()"
        );
        assert_eq!(wait_for(query, &waiting, |n| n != "0"), "1", "a {statement} waits for the test's lock");
    };
    // The count at the crash (reading the table would wait for the locks).
    let mut loaded_before = None;
    match moment {
        Moment::InTheCopy => {
            std::thread::sleep(Duration::from_millis(500));
            loaded_before = Some(query("SELECT count(*) FROM t"));
        }
        Moment::WhileOpening => waits_for("TRUNCATE"),
        Moment::WhileBuilding => {
            // The copy began (the key is dropped): a lock that lets COPY in
            // and keeps the key's build out.
            let copied = wait_for(query, "SELECT count(*) > 0 FROM t", |began| began == "t");
            assert_eq!(copied, "t", "the copy began");
            holder.execute("BEGIN; LOCK TABLE t IN ROW EXCLUSIVE MODE").unwrap();
            waits_for("PRIMARY KEY");
        }
    }
    match crash {
        true => server.crash_and_restart().unwrap(),
        false => server.restart().unwrap(),
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{stderr}");
    // What the server said to each session as it went down is the
    // summary's (not printed with --quiet), not libpq's to print.
    assert!(!stderr.contains("WARNING") && !stderr.contains("FATAL"), "{stderr}");
    assert_ne!(loaded_before, Some(good.to_string()), "the restart came before the end of the load");
    assert_eq!(query("SELECT count(*) FROM t"), good.to_string());
    assert_eq!(query("SELECT count(DISTINCT tid) FROM t"), good.to_string());
    assert_eq!(query("SELECT sum(tid) FROM t"), sum.to_string());
    let bad = rows - good;
    assert_eq!(query("SELECT count(*) || ' ' || count(DISTINCT byte) FROM sluice.rejects"), format!("{bad} {bad}"));
    assert_eq!(query("SELECT count(*) FROM sluice.jobs WHERE finished_at IS NOT NULL"), "1");
    if moment == Moment::WhileBuilding {
        let key = "SELECT count(*) FROM pg_constraint WHERE conrelid = 't'::regclass AND contype = 'p'";
        assert_eq!(query(key), "1", "the primary key is back");
    }
    server.stop();
}

/// Two processes on one job share the chunks through the ledger's claims
/// (no coordinator): both load some, none is loaded twice.
#[test]
fn two_processes_share_the_chunks() {
    let f = fixture(400_000, &["--job", "pair"]);
    let (a, b) = (f.spawn(), f.spawn());
    for out in [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()] {
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    }
    f.assert_shared_by_two("pair");
    let ledger = "SELECT sum(rows_loaded) || ' ' || sum(rows_rejected) FROM sluice.chunks WHERE state = 'done'";
    assert_eq!(f.db.scalar(ledger), format!("{} {}", f.good, f.bad));
}

/// Two processes on one job of small files: a batch may find some of its
/// chunks claimed by the other process (skipped, then waited for), and each
/// process counts only the rows it committed.
#[test]
fn two_processes_share_batches_of_small_files() {
    let f = fixture_in_files(300_000, 3_000, &["--job", "pair"]);
    let reports: Vec<_> = ["a", "b"].iter().map(|n| f.db.dir.path().join(format!("{n}.json"))).collect();
    let spawn = |report: &std::path::Path| f.spawn_with(&["--report", report.to_str().unwrap()]);
    let (a, b) = (spawn(&reports[0]), spawn(&reports[1]));
    for out in [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()] {
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    }
    f.assert_shared_by_two("pair");
    let summaries: Vec<serde_json::Value> =
        reports.iter().map(|r| serde_json::from_slice(&std::fs::read(r).unwrap()).unwrap()).collect();
    let loaded: u64 = summaries.iter().map(|s| s["summary"]["rows_loaded"].as_u64().unwrap()).sum();
    assert_eq!(loaded, f.good, "the two summaries' rows add up to the table's");
    for s in &summaries {
        let (chunks, batches) = (s["summary"]["chunks"].as_u64().unwrap(), s["summary"]["batches"].as_u64().unwrap());
        assert!(batches < chunks, "{chunks} chunks in {batches} batches");
    }
}

/// `sluice status` reads jobs from the ledger: name, state, chunks, rows,
/// how much of the input is done, and the processes loading them, while
/// they run and not after.
#[test]
fn status_shows_jobs_from_the_ledger() {
    let f = fixture(50_000, &["--job", "watched"]);
    // Each COPY takes a fifth of a second longer: the load runs long enough
    // to be watched.
    f.db.execute(
        "CREATE FUNCTION pause() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN PERFORM pg_sleep(0.2); RETURN NULL; END$$; \
         CREATE TRIGGER pause AFTER INSERT ON t FOR EACH STATEMENT EXECUTE FUNCTION pause()",
    );
    let status = || {
        let run = crate::util::sluice(&["status", "--db", &f.db.conninfo(), "--job", "watched", "--json"]);
        // Before the load made its ledger: no jobs, or not this one yet.
        serde_json::from_str::<serde_json::Value>(&run.stdout).map_or(serde_json::Value::Null, |jobs| jobs[0].clone())
    };
    let mut child = f.spawn();
    let pid = format!("(pid {})", child.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let running = loop {
        let job = status();
        if job["active"].to_string().contains(&pid) {
            break job;
        }
        assert!(child.try_wait().unwrap().is_none(), "the load ended before status showed it running");
        assert!(std::time::Instant::now() < deadline, "status never showed the running load");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let size = std::fs::metadata(f.db.dir.path().join("t.tsv")).unwrap().len();
    assert_eq!(running["state"], "in progress");
    assert_eq!(running["input_bytes"], size, "the input's size, known before the load");
    let done = running["bytes_done"].as_u64().unwrap();
    assert!(done > 0 && done < size, "{running}");
    assert!(matches!(child.wait().unwrap().code(), Some(0 | 1)));
    let job = &status();
    assert_eq!(job["job"], "watched");
    assert_eq!(job["bytes_done"], size, "every byte of the input is in a done chunk");
    assert_eq!(job["state"], "finished");
    assert_eq!(job["rows"], f.good);
    assert_eq!(job["rejected"], f.bad);
    assert_eq!(job["chunks_done"], job["chunks_known"]);
    assert_eq!(job["active"], serde_json::json!([]), "the load's process has stopped");
    let table = crate::util::sluice(&["status", "--db", &f.db.conninfo()]);
    let line = table.stdout.lines().find(|l| l.starts_with("watched ")).unwrap_or_default().to_string();
    assert!(line.contains("finished") && line.contains("all of "), "{}", table.stdout);
    let missing = crate::util::sluice(&["status", "--db", &f.db.conninfo(), "--job", "nope"]);
    assert_eq!(missing.code, 2);
}

/// stdin has no size or modification time to compare. Its default job is
/// named by its first bytes as well: another day's data piped in is a job of
/// its own and loads, as another file would; the same data again finds its
/// job and loads nothing more. Data that starts like an earlier job's and
/// then differs (a growing export) is checked chunk by chunk against that
/// job and refused with a way out, never skipped as if it were loaded.
#[test]
fn stdin_with_other_data_is_a_new_job_and_never_skipped() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text)");
    let conninfo = db.conninfo();
    let args = ["load", "-", "--db", conninfo.as_str(), "--format", "csv", "--table", "t", "--chunk-size", "1KiB"];
    let day = |from: u64, to: u64| -> Vec<u8> { (from..to).flat_map(|i| format!("{i},n{i}\n").into_bytes()).collect() };
    sluice_with_stdin(&args, &day(0, 500)).assert_ok();
    let again = sluice_with_stdin(&args, &day(0, 500));
    again.assert_ok();
    assert!(again.stderr.contains("chunks committed by earlier runs"), "{}", again.stderr);
    assert_eq!(db.count("t"), 500);
    sluice_with_stdin(&args, &day(500, 900)).assert_ok();
    assert_eq!(db.count("t"), 900);
    assert_eq!(db.scalar("SELECT count(DISTINCT id) FROM t"), "900");
    let export = [&args[..8], &["--chunk-size", "256KiB"]].concat();
    let (first, grown) = (day(10_000, 110_000), day(10_000, 120_000));
    assert!(first.len() > sluice::source::STREAM_HEAD, "the grown export starts like the first one");
    sluice_with_stdin(&export, &first).assert_ok();
    let other = sluice_with_stdin(&export, &grown);
    assert_eq!(other.code, 2, "{}", other.stderr);
    assert!(other.stderr.contains("not the input job"), "{}", other.stderr);
    assert!(other.stderr.contains("--restart") && other.stderr.contains("--job NAME"), "{}", other.stderr);
    assert_eq!(db.count("t"), 100_900);
    // A ledger made before content hashes, suppressed counts and chunking
    // hashes gets the columns on the next load, and its rejects their index.
    db.execute("ALTER TABLE sluice.chunks DROP COLUMN content_hash, DROP COLUMN rows_suppressed");
    db.execute("DROP INDEX sluice.rejects_job");
    db.execute("ALTER TABLE sluice.jobs DROP COLUMN chunking, DROP COLUMN command, DROP COLUMN input_bytes");
    // Other records of the very same lengths cut the same byte ranges: the
    // chunks' content hashes tell them apart.
    let same_lengths = [&args[..], &["--job", "fixed-width"]].concat();
    sluice_with_stdin(&same_lengths, &day(1000, 1400)).assert_ok();
    let hashed = "SELECT count(content_hash) FROM sluice.chunks WHERE job = 'fixed-width'";
    assert_eq!(db.scalar(hashed), "5");
    let recorded = "SELECT count(*) FROM sluice.jobs WHERE job = 'fixed-width' AND command LIKE '% --job fixed-width%'";
    assert_eq!(db.scalar(recorded), "1", "the command, recorded once the column is back");
    let unsized_input = "SELECT count(*) FROM sluice.jobs WHERE job = 'fixed-width' AND input_bytes IS NULL";
    assert_eq!(db.scalar(unsized_input), "1", "stdin's size is not known before the load");
    assert_eq!(db.scalar("SELECT to_regclass('sluice.rejects_job') IS NOT NULL"), "t");
    let other = sluice_with_stdin(&same_lengths, &day(2000, 2400));
    assert_eq!(other.code, 2, "{}", other.stderr);
    assert!(
        other.stderr.contains("its chunk 0 (bytes 0..1") && other.stderr.contains("held other data"),
        "{}",
        other.stderr
    );
    assert_eq!(db.count("t"), 101_300);
}

/// Streamed inputs resume too: a gzip file, and stdin piped again from the
/// start (chunking is deterministic, so committed chunks are skipped).
#[test]
fn gzip_and_stdin_inputs_resume_exactly() {
    let f = fixture(600_000, &[]);
    let plain = std::fs::read(f.db.dir.path().join("t.tsv")).unwrap();
    let packed = f.db.file("t.tsv.gz", &crate::util::gzip(&plain));
    for input in ["gzip", "stdin"] {
        if input == "stdin" {
            f.db.execute("TRUNCATE t; TRUNCATE sluice.jobs CASCADE; TRUNCATE sluice.rejects");
        }
        let mut args = f.args.clone();
        args[1] = if input == "gzip" { packed.display().to_string() } else { "-".to_string() };
        if input == "stdin" {
            args.extend(["--format".to_string(), "tsv".to_string()]);
        }
        let run = |kill_after: Option<Duration>| {
            let mut child = sluice_command()
                .args(&args)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            let data = if input == "stdin" { plain.clone() } else { Vec::new() };
            let writer = std::thread::spawn(move || {
                let _ = std::io::Write::write_all(&mut stdin, &data);
            });
            if let Some(wait) = kill_after {
                std::thread::sleep(wait);
                let _ = child.kill();
            }
            let out = child.wait_with_output().unwrap();
            let _ = writer.join();
            out
        };
        for wait in moments(5, 11) {
            run(Some(wait));
        }
        let out = run(None);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{input}: {}", String::from_utf8_lossy(&out.stderr));
        f.assert_exact();
    }
}

/// Three processes on one job, one killed mid-way: the other two finish
/// the job between them, its chunks included, and nothing is loaded twice.
#[test]
fn three_processes_on_one_job_one_killed() {
    let f = fixture(600_000, &["--job", "trio"]);
    let mut doomed = f.spawn();
    let (b, c) = (f.spawn(), f.spawn());
    std::thread::sleep(Duration::from_millis(400));
    let _ = doomed.kill();
    let _ = doomed.wait();
    for out in [b.wait_with_output().unwrap(), c.wait_with_output().unwrap()] {
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(f.db.count("t"), f.good);
    assert_eq!(f.db.scalar("SELECT count(DISTINCT tid) FROM t"), f.good.to_string());
    assert_eq!(f.db.scalar("SELECT sum(tid) FROM t"), f.sum.to_string());
    assert_eq!(f.db.scalar("SELECT count(*) FROM sluice.rejects"), f.bad.to_string());
    let pending = f.db.scalar("SELECT count(*) FROM sluice.chunks WHERE job = 'trio' AND state <> 'done'");
    assert_eq!(pending, "0", "no chunk left behind by the killed process");
}

/// Polls `sql` (through `scalar`) until it returns `want`, for up to 30 s.
fn wait_for(scalar: impl Fn(&str) -> String, sql: &str, want: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = scalar(sql);
    while !want(&seen) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        seen = scalar(sql);
    }
    seen
}

/// Loads a line into a table of its own, so the ledger exists.
fn create_ledger(db: &TestDb) {
    db.execute("CREATE TABLE warm (id int)");
    let warm = db.file("warm.tsv", b"1\n");
    db.load(&[warm.to_str().unwrap(), "--table", "warm"]).assert_ok();
}

/// A batch whose lock another process holds is left to it, and claimed
/// again, waiting, once the rest is loaded: its loader died, so it is
/// loaded now, once.
#[test]
fn a_batch_another_process_holds_is_loaded_after_it() {
    let f = fixture(60_000, &["--job", "held"]);
    create_ledger(&f.db);
    let (job_key, first) = sluice::ledger::lock_keys("held", 0);
    let holder = f.db.session();
    holder.execute(&format!("SELECT pg_advisory_lock({job_key}, {first})")).unwrap();
    let child = f.spawn();
    let done = "SELECT count(*) FROM sluice.chunks WHERE job = 'held' AND state = 'done'";
    let seen = wait_for(|q| f.db.scalar(q), done, |n| n.parse::<u64>().unwrap_or(0) >= 3);
    assert!(seen.parse::<u64>().unwrap() >= 3, "the other chunks load meanwhile: {seen}");
    std::thread::sleep(Duration::from_millis(300));
    let first_done = "SELECT count(*) FROM sluice.chunks WHERE job = 'held' AND seq = 0";
    assert_eq!(f.db.scalar(first_done), "0", "chunk 0 is left to the lock's holder");
    drop(holder);
    let out = child.wait_with_output().unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(f.db.scalar(first_done), "1");
    f.assert_exact();
}

/// Another process that records a chunk done while sluice loads it wins:
/// sluice's transaction rolls back (the ledger's key refuses its row), and
/// the claim taken again finds the chunk done. Nothing is loaded twice.
#[test]
fn a_chunk_another_process_records_first_is_not_loaded_twice() {
    let db = TestDb::new();
    create_ledger(&db);
    db.execute("CREATE TABLE t (id int)");
    for part in 0..50 {
        db.file(&format!("many/part-{part:04}.tsv"), format!("{part}\n").as_bytes());
    }
    let glob = db.dir.path().join("many/part-*.tsv");
    let first = db.dir.path().join("many/part-0000.tsv");
    let rival = db.session();
    rival
        .execute(&format!(
            "BEGIN; INSERT INTO t VALUES (0); INSERT INTO sluice.chunks (job, seq, file, byte_offset, byte_len, \
             first_line, state, rows_loaded, host, pid, committed_at) VALUES ('race', 0, '{}', 0, 2, 1, 'done', 1, \
             'rival', 1, now())",
            first.display()
        ))
        .unwrap();
    let args = [glob.to_str().unwrap(), "--table", "t", "--job", "race", "--workers", "1", "--quiet"];
    let mut load = sluice_command();
    load.args(["load", "--db", &db.conninfo()]).args(args).stdout(Stdio::null()).stderr(Stdio::piped());
    let child = load.spawn().unwrap();
    let waiting =
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()";
    assert_eq!(wait_for(|q| db.scalar(q), waiting, |n| n == "1"), "1", "sluice waits for the rival's row");
    rival.execute("COMMIT").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(db.scalar("SELECT count(*) || ' ' || count(DISTINCT id) FROM t"), "50 50");
    let ledger = "SELECT count(*) || ' ' || count(*) FILTER (WHERE host = 'rival') FROM sluice.chunks \
                  WHERE job = 'race' AND state = 'done'";
    assert_eq!(db.scalar(ledger), "50 1");
}

/// A named job resumed with another record limit would cut other chunks under
/// the same numbers: refused, like changed input.
#[test]
fn named_job_refuses_other_options() {
    let f = fixture(20_000, &["--job", "fixed"]);
    let first = f.spawn().wait_with_output().unwrap();
    assert!(matches!(first.status.code(), Some(0 | 1)));
    let out = f.spawn_with(&["--max-record-size", "32MiB"]).wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("format options, chunk size or sluice's chunking rule differ"), "{stderr}");
}
