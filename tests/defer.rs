//! Index and constraint deferral: the same rows and rejects as a load with
//! everything in place, every object back afterwards, even after a kill.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::{sluice_command, sluice_with_stdin, Finish, TestDb};

const SCHEMA: &str = "CREATE TABLE kinds (k int PRIMARY KEY); INSERT INTO kinds SELECT generate_series(0, 9); \
     CREATE TABLE {t} (id int PRIMARY KEY, code text UNIQUE, k int REFERENCES kinds, \
       amount int CHECK (amount >= 0), note text); \
     CREATE INDEX ON {t} (note); CREATE UNIQUE INDEX ON {t} (lower(code)) WHERE amount > 10";

/// What the catalog says about a table's indexes and constraints.
fn definitions(db: &TestDb, table: &str) -> String {
    db.scalar(&format!(
        "SELECT (SELECT string_agg(pg_get_indexdef(indexrelid), '; ' ORDER BY pg_get_indexdef(indexrelid)) FROM pg_index \
           WHERE indrelid = '{table}'::regclass) || ' | ' || \
         (SELECT string_agg(conname || ' ' || pg_get_constraintdef(oid), '; ' ORDER BY conname) \
           FROM pg_constraint WHERE conrelid = '{table}'::regclass)"
    ))
}

/// 3,000 rows with duplicate ids and codes, a missing reference and a
/// negative amount at known lines.
fn rows_with_violations() -> (String, Vec<u64>) {
    let mut data = String::new();
    let mut bad_lines = Vec::new();
    for line in 1..=3000u64 {
        let (mut id, mut code, mut k, mut amount) = (line, format!("c{line}"), line % 10, line as i64 % 50);
        match line {
            700 | 2900 => id = 5,               // the id of line 5
            1500 => code = "c1499".to_string(), // the code of line 1499
            2000 => k = 99,                     // no such kind
            2200 => amount = -3,                // refused by the CHECK
            _ => {}
        }
        if [700, 1500, 2000, 2200, 2900].contains(&line) {
            bad_lines.push(line);
        }
        data.push_str(&format!("{id}\t{code}\t{k}\t{amount}\tnote {line}\n"));
    }
    (data, bad_lines)
}

fn rejected_lines(path: &std::path::Path) -> Vec<u64> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut lines: Vec<u64> =
        text.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["line"].as_u64().unwrap()).collect();
    lines.sort_unstable();
    lines
}

/// Loads `file` into `got` (defaults and `got_extra`, with a report) and
/// into `want` (`--defer-indexes no`) with 4 KiB chunks, and asserts the same rows and
/// the same rejected lines, `bad_lines`, in both. Returns `got`'s run,
/// report and rejects file. One worker: with the key in place, which line
/// of a duplicate key is kept depends on which chunk commits first.
fn load_got_and_want(
    db: &TestDb,
    file: &std::path::Path,
    bad_lines: &[u64],
    got_extra: &[&str],
) -> (crate::util::Run, std::path::PathBuf, std::path::PathBuf) {
    let (report, got_rejects, want_rejects) =
        (db.dir.path().join("r.json"), db.dir.path().join("got.rejects"), db.dir.path().join("want.rejects"));
    let common = [file.to_str().unwrap(), "--chunk-size", "4KiB", "--workers", "1"];
    let got = db.load(
        &[
            &common[..],
            &["--table", "got", "--report", report.to_str().unwrap(), "--rejects", got_rejects.to_str().unwrap()],
            got_extra,
        ]
        .concat(),
    );
    assert_eq!(got.code, 1, "rejects mean exit 1: {}", got.output());
    let want = db.load(
        &[&common[..], &["--table", "want", "--defer-indexes", "no", "--rejects", want_rejects.to_str().unwrap()]]
            .concat(),
    );
    assert_eq!(want.code, 1, "{}", want.output());
    // The same rows and the same rejected lines as with everything in place.
    db.assert_same_rows("got", "want");
    assert_eq!(rejected_lines(&got_rejects), bad_lines, "rejected lines with deferral");
    assert_eq!(rejected_lines(&want_rejects), bad_lines, "rejected lines without deferral");
    (got, report, got_rejects)
}

/// `got` and `want` made from [`SCHEMA`] (`kinds` once), `got`'s
/// definitions, and a file of [`rows_with_violations`] with its bad lines.
fn tables_and_rows_with_violations(db: &TestDb) -> (String, std::path::PathBuf, Vec<u64>) {
    db.execute(&SCHEMA.replace("{t}", "got"));
    db.execute(
        &SCHEMA
            .replace("{t}", "want")
            .replace("CREATE TABLE kinds (k int PRIMARY KEY); INSERT INTO kinds SELECT generate_series(0, 9); ", ""),
    );
    let (data, bad_lines) = rows_with_violations();
    (definitions(db, "got"), db.file("t.tsv", data.as_bytes()), bad_lines)
}

/// An INSERT trigger would run twice for the rows of the chunks loaded
/// again after a deferred key refused some of their rows (an audit trigger
/// logged 34,370 rows for 20,000 loaded): with one, keys and constraints
/// stay in place and only the plain index is deferred, and the trigger runs
/// once per loaded row. Disabled, it does not count, and the keys are
/// deferred as without it.
#[test]
fn an_insert_trigger_keeps_keys_in_place_so_it_runs_once_per_row() {
    let db = TestDb::new();
    let (_, file, bad_lines) = tables_and_rows_with_violations(&db);
    db.execute(
        "CREATE TABLE audit (id int); \
         CREATE FUNCTION audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
           INSERT INTO audit VALUES (NEW.id); RETURN NEW; END $$; \
         CREATE TRIGGER audit AFTER INSERT ON got FOR EACH ROW EXECUTE FUNCTION audit()",
    );
    let (got, report_path, _) = load_got_and_want(&db, &file, &bad_lines, &[]);
    assert_eq!(db.count("audit"), db.count("got"), "one audit row per loaded row");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    let deferred = &report["summary"]["deferred"];
    assert_eq!(deferred["objects"], serde_json::json!(["index \"got_note_idx\""]), "{deferred}");
    let kept = "primary key \"got_pkey\" stays in place for the load: the chunks whose rows it refuses after the \
                load would be loaded again, running the table's INSERT trigger audit a second time";
    assert!(got.stderr.contains(kept), "{}", got.stderr);
    db.execute("TRUNCATE got, audit; ALTER TABLE got DISABLE TRIGGER audit");
    let args = [file.to_str().unwrap(), "--table", "got", "--chunk-size", "4KiB", "--restart"];
    let run = db.load(&[&args[..], &["--report", report_path.to_str().unwrap()]].concat());
    assert_eq!(run.code, 1, "{}", run.output());
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    let objects = report["summary"]["deferred"]["objects"].as_array().unwrap().len();
    assert_eq!((objects, db.count("audit")), (4, 0), "a disabled trigger does not keep the keys");
    db.assert_same_rows("got", "want");
}

#[test]
fn deferred_keys_and_constraints_reject_what_they_would_have_refused() {
    let db = TestDb::new();
    let (before, file, bad_lines) = tables_and_rows_with_violations(&db);
    let (got, report, got_rejects) = load_got_and_want(&db, &file, &bad_lines, &[]);
    let reasons = std::fs::read_to_string(&got_rejects).unwrap();
    for needle in [
        "duplicate key value violates unique constraint",
        "violates foreign key constraint",
        "violates check constraint",
    ] {
        assert!(reasons.contains(needle), "{needle}: {reasons}");
    }
    // Every index and constraint is back, as it was.
    assert_eq!(definitions(&db, "got"), before);
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let deferred = &report["summary"]["deferred"];
    let objects: Vec<&str> = deferred["objects"].as_array().unwrap().iter().map(|o| o.as_str().unwrap()).collect();
    assert_eq!(objects.len(), 4, "pkey, unique code, plain index, foreign key: {objects:?}");
    assert!(objects.iter().all(|o| !o.starts_with("check constraint")), "a CHECK stays in place: {objects:?}");
    assert!(objects.iter().all(|o| !o.contains("lower")), "a unique expression index stays: {objects:?}");
    let kept = "index \"got_lower_idx\" stays in place for the load: the rows that break it cannot be found";
    assert!(deferred["kept"][0].as_str().unwrap().starts_with(kept), "{deferred}");
    assert_eq!(deferred["kept"].as_array().unwrap().len(), 1, "{deferred}");
    assert!(got.stderr.contains(kept), "said as a warning: {}", got.stderr);
    assert!(deferred["reloaded_chunks"].as_u64().unwrap() >= 3, "{deferred}");
    assert_eq!(report["summary"]["rows_loaded"], 3000 - bad_lines.len() as u64);
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.steps WHERE state <> 'rebuilt'"), "0");
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.xacts"), "0", "markers are cleaned up");
    assert!(got.output().contains("4 deferred indexes/constraints rebuilt in"), "{}", got.output());
}

/// JSON lines loaded into typed columns are chunked as the shorter text
/// lines they are converted to, and rejected as the documents they were, at
/// the documents' bytes. A chunk loaded again after a deferred key refused
/// one of its rows had its earlier rejects looked for by its own bytes:
/// they stayed, and were written again (a file of 9 rejected records held
/// 11 lines), while other chunks' rejects could go. Each reject is now
/// stored with its chunk's number.
#[test]
fn json_lines_chunks_loaded_again_keep_each_reject_once() {
    let db = TestDb::new();
    db.execute("CREATE TABLE docs (id int PRIMARY KEY, amount int, note text)");
    let (mut data, mut bad_lines) = (String::new(), Vec::new());
    for line in 1..=20_000u64 {
        let (mut id, mut amount) = (line.to_string(), (line % 1000).to_string());
        if line % 1_000 == 0 {
            amount = "\"bad\"".into();
            bad_lines.push(line);
        }
        if line % 4_999 == 0 {
            id = "5".into(); // the id of line 5
            bad_lines.push(line);
        }
        data.push_str(&format!("{{\"id\": {id}, \"amount\": {amount}, \"note\": \"note {line}\"}}\n"));
    }
    bad_lines.sort_unstable();
    let (file, rejects, report) =
        (db.file("docs.jsonl", data.as_bytes()), db.dir.path().join("docs.rejects"), db.dir.path().join("r.json"));
    let [file, rejects_arg, report_arg] = [&file, &rejects, &report].map(|p| p.to_str().unwrap());
    let run =
        db.load(&[file, "--table", "docs", "--chunk-size", "16KiB", "--rejects", rejects_arg, "--report", report_arg]);
    assert_eq!(run.code, 1, "{}", run.output());
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert!(report["summary"]["deferred"]["reloaded_chunks"].as_u64().unwrap() >= 1, "{report}");
    assert_eq!(rejected_lines(&rejects), bad_lines, "each rejected line once");
    assert_eq!(report["summary"]["rejected"], bad_lines.len() as u64);
    assert_eq!(db.count("docs"), 20_000 - bad_lines.len() as u64);
}

/// A row breaks a foreign key (to another table) or a CHECK by its own
/// values, whatever the other rows: chunks loaded again for those alone
/// load side by side, not one at a time as for a key, whose first line
/// must be kept (1 M rows with a missing reference every 1,000 lines: 12.1
/// s one at a time, 9.9 s side by side). Every chunk here is loaded again,
/// and most hold a value that makes the CHECK wait 0.2 s, so the chunks
/// overlap in time only when two workers load them.
#[test]
fn chunks_loaded_again_for_a_foreign_key_alone_load_side_by_side() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE dim (id int PRIMARY KEY); INSERT INTO dim SELECT generate_series(1, 99); \
         CREATE FUNCTION slow_ok(a int) RETURNS bool LANGUAGE plpgsql AS $$ BEGIN \
         IF a < 0 THEN PERFORM pg_sleep(0.2); END IF; RETURN true; END $$; \
         CREATE TABLE fact (id int PRIMARY KEY, dim_id int REFERENCES dim, amount int CHECK (slow_ok(amount)))",
    );
    let row = |line: u64| match (line % 100, line % 400) {
        (0, _) => format!("{line},100,1\n"), // no such dim
        (_, 250) => format!("{line},1,-1\n"),
        _ => format!("{line},{},1\n", line % 99 + 1),
    };
    let data: String = (1..=1_800u64).map(row).collect();
    let (file, report) = (db.file("fact.csv", data.as_bytes()), db.dir.path().join("r.json"));
    let args = [file.to_str().unwrap(), "--table", "fact", "--chunk-size", "4KiB", "--workers", "2"];
    let run = db.load(&[&args[..], &["--report", report.to_str().unwrap()]].concat());
    assert_eq!(run.code, 1, "{}", run.output());
    assert_eq!(db.count("fact"), 1_800 - 18);
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(report["summary"]["rejected"], 18);
    let chunks = report["chunks"].as_array().unwrap();
    assert_eq!(report["summary"]["deferred"]["reloaded_chunks"].as_u64(), Some(chunks.len() as u64), "{report}");
    let span =
        |c: &serde_json::Value| (c["worker"].as_u64(), c["start_s"].as_f64().unwrap(), c["end_s"].as_f64().unwrap());
    let overlap = chunks
        .iter()
        .map(span)
        .any(|(w, start, end)| chunks.iter().map(span).any(|(other, s, e)| other != w && s < end && start < e));
    assert!(overlap, "two workers loaded chunks again at once: {chunks:?}");
}

/// `--unlogged` with deferred keys: `SET LOGGED` rewrites every row with a
/// new `xmin`, so the keys and constraints are checked before it, while the
/// rows still name the COPY that loaded them; the violating lines are
/// rejected as with everything in place, and the table ends up logged.
#[test]
fn an_unlogged_load_rejects_what_deferred_keys_would_have_refused() {
    let db = TestDb::new();
    let (before, file, bad_lines) = tables_and_rows_with_violations(&db);
    let (got, report, _) = load_got_and_want(&db, &file, &bad_lines, &["--unlogged"]);
    assert_eq!(definitions(&db, "got"), before);
    assert_eq!(db.scalar("SELECT relpersistence FROM pg_class WHERE relname = 'got'"), "p", "logged again");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(report["summary"]["deferred"]["unlogged"], true, "{}", got.output());
    assert!(report["summary"]["deferred"]["reloaded_chunks"].as_u64().unwrap() >= 3, "{report}");
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.steps WHERE state <> 'rebuilt'"), "0");
}

/// `SET UNLOGGED` fails on a table a logged table's foreign key references,
/// with a message that names the wrong side: sluice refuses it before
/// loading, naming the referencing table, and loads nothing.
#[test]
fn unlogged_is_refused_for_a_table_another_table_references() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE parent (id int PRIMARY KEY, note text); CREATE TABLE kid (parent_id int REFERENCES parent); \
         CREATE TABLE solo (id int PRIMARY KEY, note text)",
    );
    let file = db.file("p.tsv", b"1\ta\n2\tb\n");
    let refused = db.load(&[file.to_str().unwrap(), "--table", "parent", "--unlogged"]);
    assert_eq!(refused.code, 2, "{}", refused.output());
    let said = "--unlogged: a foreign key of public.kid references public.parent";
    assert!(refused.output().contains(said), "{}", refused.output());
    assert_eq!(db.count("parent"), 0);
    assert_eq!(db.scalar("SELECT relpersistence FROM pg_class WHERE relname = 'parent'"), "p");
    // A table nothing references still loads unlogged.
    let loaded = db.load(&[file.to_str().unwrap(), "--table", "solo", "--unlogged"]);
    assert_eq!(loaded.code, 0, "{}", loaded.output());
    assert_eq!(db.count("solo"), 2);
}

/// A published table: rows loaded while it is unlogged would never reach
/// the subscribers (PostgreSQL refuses `SET UNLOGGED` for a table its
/// publication names, with no advice, and allows it for one published
/// with its schema or all tables). sluice refuses `--unlogged` before
/// loading, naming the publications, and loads nothing.
#[test]
fn unlogged_is_refused_for_a_published_table() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE named (id int, note text); CREATE TABLE solo (id int, note text); \
         CREATE SCHEMA feed; CREATE TABLE feed.events (id int, note text); \
         CREATE PUBLICATION \"Named one\" FOR TABLE named",
    );
    let schemas = db.scalar("SELECT current_setting('server_version_num')::int >= 150000") == "t";
    if schemas {
        db.execute("CREATE PUBLICATION whole_feed FOR TABLES IN SCHEMA feed");
    }
    let file = db.file("p.tsv", b"1\ta\n2\tb\n");
    let mut published = vec![("named", "public.named", "\"Named one\"")];
    if schemas {
        published.push(("feed.events", "feed.events", "whole_feed"));
    }
    for (table, shown, publication) in published {
        let refused = db.load(&[file.to_str().unwrap(), "--table", table, "--unlogged"]);
        assert_eq!(refused.code, 2, "{}", refused.output());
        let said = format!("--unlogged: {shown} is published ({publication})");
        assert!(refused.output().contains(&said), "{}", refused.output());
        assert_eq!(db.count(table), 0);
    }
    let loaded = db.load(&[file.to_str().unwrap(), "--table", "solo", "--unlogged"]);
    assert_eq!(loaded.code, 0, "{}", loaded.output());
    assert_eq!(db.count("solo"), 2);
}

/// TRUNCATE refuses a table another table's foreign key references, with a
/// hint at CASCADE (which would empty that table too): sluice refuses
/// --truncate before taking any step, naming the referencing table and
/// what to run instead. A key that references its own table is no bar.
#[test]
fn truncate_is_refused_for_a_table_another_table_references() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE parent (id int PRIMARY KEY, note text); CREATE TABLE kid (parent_id int REFERENCES parent); \
         INSERT INTO parent VALUES (7, 'kept'); INSERT INTO kid VALUES (7); \
         CREATE TABLE tree (id int PRIMARY KEY, up int REFERENCES tree); INSERT INTO tree VALUES (9, NULL)",
    );
    let file = db.file("p.tsv", b"1\ta\n2\tb\n");
    let refused = db.load(&[file.to_str().unwrap(), "--table", "parent", "--truncate"]);
    assert_eq!(refused.code, 2, "{}", refused.output());
    let said = "--truncate: a foreign key of public.kid references public.parent, and TRUNCATE empties";
    assert!(refused.stderr.contains(said) && refused.stderr.contains("(TRUNCATE public.parent, public.kid)"));
    assert_eq!((db.count("parent"), db.count("kid")), (1, 1), "nothing emptied");
    let tree = db.file("t.tsv", b"1\t\\N\n2\t1\n");
    db.load(&[tree.to_str().unwrap(), "--table", "tree", "--truncate"]).assert_ok();
    assert_eq!(db.count("tree"), 2);
}

/// TRUNCATE empties the tables that inherit from a table too, while COPY
/// loads into the table alone: `--truncate` there would have lost the
/// children's rows for good. It is refused, before anything is done, with
/// both commands the user may mean. A table whose INSERT trigger routes
/// rows to its children (inheritance partitioning) is emptied with them.
#[test]
fn truncate_is_refused_for_a_table_others_inherit_from() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE base (id int, note text); CREATE TABLE heir () INHERITS (base); \
         INSERT INTO base VALUES (1, 'own'); INSERT INTO heir VALUES (2, 'heir'); \
         CREATE TABLE routed (id int, note text); CREATE TABLE routed_1 () INHERITS (routed); \
         CREATE FUNCTION route() RETURNS trigger LANGUAGE plpgsql AS \
           $$BEGIN INSERT INTO routed_1 VALUES (NEW.*); RETURN NULL; END$$; \
         CREATE TRIGGER route BEFORE INSERT ON routed FOR EACH ROW EXECUTE FUNCTION route(); \
         INSERT INTO routed VALUES (3, 'old')",
    );
    let file = db.file("b.tsv", b"7\ta\n8\tb\n");
    let refused = db.load(&[file.to_str().unwrap(), "--table", "base", "--truncate"]);
    assert_eq!(refused.code, 2, "{}", refused.output());
    let said = "--truncate: public.heir inherit from public.base, and TRUNCATE public.base would empty them too";
    assert!(refused.stderr.contains(said), "{}", refused.stderr);
    assert!(refused.stderr.contains("TRUNCATE ONLY public.base keeps their rows"), "{}", refused.stderr);
    assert_eq!((db.scalar("SELECT count(*) FROM ONLY base"), db.count("heir")), ("1".into(), 1), "nothing emptied");
    db.load(&[file.to_str().unwrap(), "--table", "routed", "--truncate"]).assert_ok();
    assert_eq!(db.scalar("SELECT string_agg(id::text, ',' ORDER BY id) FROM routed_1"), "7,8");
}

/// A deferred key finds the chunks whose rows it refuses, and deletes
/// their rows, by `xmin`, which a server hands out again after 2^32
/// transactions: rows frozen before that keep theirs. On such a server,
/// rows already in the table that new transactions may share IDs with
/// keep keys in place. Before, 2 of these 300 old rows were deleted with
/// the 2 chunks that shared their IDs.
#[test]
fn rows_older_than_a_wraparound_keep_keys_in_place() {
    use sluice::local_pg::{LocalOptions, LocalPostgres};
    use sluice::sink::postgres::PgTarget;
    let settings = vec![("autovacuum".to_string(), "off".to_string()), ("fsync".to_string(), "off".to_string())];
    let mut server = LocalPostgres::start(&LocalOptions { settings, ..LocalOptions::default() }).unwrap();
    let conninfo = server.conninfo("postgres");
    let session = || PgTarget::new(Some(&conninfo)).connect().unwrap();
    let scalar = |sql: &str| session().query(sql, &[]).unwrap()[0][0].clone().unwrap_or_default();
    let old = session();
    old.execute("CREATE TABLE t (id int PRIMARY KEY, v text)").unwrap();
    for id in 1_000_001..=1_000_300 {
        old.execute(&format!("INSERT INTO t VALUES ({id}, 'old')")).unwrap();
    }
    old.execute("VACUUM FREEZE t").unwrap();
    drop(old);
    let first_old_xid: u32 = scalar("SELECT min(xmin::text::bigint) FROM t").parse().unwrap();
    server.set_next_transaction_id(1, first_old_xid).unwrap();
    assert_eq!(scalar("SELECT count(*) FROM t WHERE age(xmin) <= 0"), "300", "the old rows' IDs lie ahead");
    let mut data: String = (1..=20_000).map(|id| format!("{id}\tnew\n")).collect();
    data.push_str("77\tagain\n");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.tsv");
    std::fs::write(&file, data).unwrap();
    let run = crate::util::run_command({
        let mut cmd = sluice_command();
        cmd.args(["load", file.to_str().unwrap(), "--db", &conninfo, "--table", "t"]);
        cmd.args(["--defer-indexes", "yes", "--chunk-size", "4KiB", "--workers", "2"]);
        cmd.arg("--rejects").arg(dir.path().join("t.rejects"));
        cmd
    });
    assert_eq!(run.code, 1, "the repeated id is rejected: {}", run.output());
    assert!(run.stderr.contains("primary key \"t_pkey\" stays in place for the load: some of the table's rows were written before the server's transaction IDs last wrapped around"), "{}", run.stderr);
    assert_eq!(scalar("SELECT count(*) FILTER (WHERE v = 'old') || ' ' || count(*) FROM t"), "300 20300");
    assert!(run.stderr.contains("rejected 1 record"), "{}", run.stderr);
}

/// A job's steps still pending for a table dropped since (as a crash
/// between an index's drop and its build leaves them) built nothing that
/// is still there: `--restart` into the table created again under that
/// name forgets them, where it built the old table's index on the new one.
#[test]
fn steps_pending_for_a_dropped_table_are_not_run_on_the_new_one() {
    let db = TestDb::new();
    db.execute("CREATE TABLE public.t (id int, v text); CREATE INDEX t_v ON public.t (v)");
    let data: String = (0..5000).map(|i| format!("{i}\tv{i}\n")).collect();
    let file = db.file("t.tsv", data.as_bytes());
    let load =
        |extra: &[&str]| db.load(&[&[file.to_str().unwrap(), "--table", "public.t", "--job", "j"], extra].concat());
    let first = load(&[]);
    first.assert_ok();
    assert!(first.output().contains("1 deferred index/constraint rebuilt"), "{}", first.output());
    db.execute(
        "DROP INDEX public.t_v; UPDATE sluice.steps SET state = 'dropped', rebuilt_at = NULL WHERE job = 'j'; \
         UPDATE sluice.jobs SET finished_at = NULL WHERE job = 'j'; \
         DROP TABLE public.t; CREATE TABLE public.t (id int, v text)",
    );
    load(&["--restart"]).assert_ok();
    assert_eq!(db.count("public.t"), 5000);
    let indexes = "SELECT count(*) FROM pg_index WHERE indrelid = 'public.t'::regclass";
    assert_eq!(db.scalar(indexes), "0", "the old table's index is not built on the new one");
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.steps WHERE job = 'j'"), "0");
}

/// A load that defers only a plain index, its keys in place (an insert
/// trigger keeps them, as stdin does), keeps the first line of a repeated
/// key however the workers are timed: its first records' repeats make the
/// chunks commit in input order from the start. That was checked only where
/// nothing was deferred, and `stdin_defers_plain_indexes_only_...` kept the
/// later line on 2 runs of 30 on a busy machine. Here the first line's
/// insert waits half a second, so the later chunk commits first unless it
/// waits.
#[test]
fn a_load_deferring_only_plain_indexes_keeps_each_keys_first_line() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE k (id int PRIMARY KEY, note text); CREATE INDEX ON k (note); \
         CREATE FUNCTION slow_first() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
         IF NEW.note = 'note 5' THEN PERFORM pg_sleep(0.5); END IF; RETURN NEW; END $$; \
         CREATE TRIGGER slow_first BEFORE INSERT ON k FOR EACH ROW EXECUTE FUNCTION slow_first()",
    );
    let data: String = (1..=2_000)
        .map(|line| if line == 1_500 { "5\tlater\n".to_string() } else { format!("{line}\tnote {line}\n") })
        .collect();
    let file = db.file("k.tsv", data.as_bytes());
    let rejects = db.dir.path().join("k.rejects");
    let args = ["--table", "k", "--chunk-size", "4KiB", "--workers", "2", "--defer-indexes", "yes"];
    let run = db.load(&[&[file.to_str().unwrap(), "--rejects", rejects.to_str().unwrap()][..], &args].concat());
    assert_eq!(run.code, 1, "{}", run.output());
    assert_eq!(db.scalar("SELECT note FROM k WHERE id = 5"), "note 5", "the first line keeps the key");
    assert_eq!(rejected_lines(&rejects), [1_500]);
}

/// Stdin cannot be read again to reload the chunks whose rows a deferred
/// key refuses after the load: keys and constraints stay in place, plain
/// indexes are still deferred, and every violating line is rejected.
#[test]
fn stdin_defers_plain_indexes_only_and_rejects_violations() {
    let db = TestDb::new();
    db.execute(&SCHEMA.replace("{t}", "got"));
    let before = definitions(&db, "got");
    let (data, bad_lines) = rows_with_violations();
    let (report, rejects) = (db.dir.path().join("r.json"), db.dir.path().join("got.rejects"));
    let conninfo = db.conninfo();
    let args = [
        "load",
        "-",
        "--db",
        &conninfo,
        "--format",
        "tsv",
        "--table",
        "got",
        "--chunk-size",
        "4KiB",
        "--defer-indexes",
        "yes",
        "--report",
        report.to_str().unwrap(),
        "--rejects",
        rejects.to_str().unwrap(),
    ];
    let run = sluice_with_stdin(&args, data.as_bytes());
    assert_eq!(run.code, 1, "rejects mean exit 1: {}", run.output());
    assert_eq!(rejected_lines(&rejects), bad_lines);
    assert_eq!(db.count("got"), 3000 - bad_lines.len() as u64);
    assert_eq!(definitions(&db, "got"), before);
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let deferred = &report["summary"]["deferred"];
    assert_eq!(deferred["objects"], serde_json::json!(["index \"got_note_idx\""]), "{deferred}");
    let read_once = "primary key \"got_pkey\" stays in place for the load: the input is read once";
    assert!(run.stderr.contains(read_once), "{}", run.stderr);
    assert_eq!(deferred["reloaded_chunks"], 0, "{deferred}");
}

#[test]
fn auto_defers_into_an_empty_table_only() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int PRIMARY KEY, v int); CREATE INDEX ON t (v)");
    let first = db.file("a.csv", b"1,1\n2,2\n");
    let second = db.file("b.csv", b"3,3\n");
    let run = db.load(&[first.to_str().unwrap(), "--table", "t"]);
    run.assert_ok();
    assert!(run.output().contains("2 deferred indexes/constraints"), "{}", run.output());
    let run = db.load(&[second.to_str().unwrap(), "--table", "t"]);
    run.assert_ok();
    assert!(!run.output().contains("deferred"), "the table has rows: {}", run.output());
    assert_eq!(db.count("t"), 3);
    assert_eq!(db.scalar("SELECT count(*) FROM pg_index WHERE indrelid = 't'::regclass"), "2");
}

/// A partitioned table's indexes, key and constraints are deferred too: the
/// same rows and rejects as with everything in place, and every definition
/// back as it was, the partitions' indexes with their names (one renamed by
/// hand) and an index on one partition only left alone.
#[test]
fn a_partitioned_table_defers_its_indexes_and_gets_them_back() {
    let db = TestDb::new();
    let schema = "CREATE TABLE IF NOT EXISTS kinds (k int PRIMARY KEY); \
         INSERT INTO kinds SELECT generate_series(0, 9) ON CONFLICT DO NOTHING; \
         CREATE TABLE {t} (id int, code text, k int REFERENCES kinds, amount int CHECK (amount >= 0), note text, \
           PRIMARY KEY (id) INCLUDE (code) WITH (fillfactor = 90)) PARTITION BY RANGE (id); \
         CREATE TABLE {t}_low PARTITION OF {t} FOR VALUES FROM (MINVALUE) TO (1500); \
         CREATE TABLE {t}_high PARTITION OF {t} FOR VALUES FROM (1500) TO (MAXVALUE); \
         CREATE INDEX ON {t} (note); ALTER INDEX {t}_high_note_idx RENAME TO {t}_high_notes; \
         CREATE INDEX {t}_low_only ON {t}_low (amount); \
         COMMENT ON CONSTRAINT {t}_pkey ON {t} IS 'the key'; COMMENT ON INDEX {t}_note_idx IS 'notes'; \
         CREATE INDEX {t}_amount ON {t} (amount); COMMENT ON INDEX {t}_high_amount_idx IS 'its own'";
    db.execute(&schema.replace("{t}", "got"));
    db.execute(&schema.replace("{t}", "want"));
    let tables = ["got", "got_low", "got_high"];
    let before: Vec<String> = tables.iter().map(|t| definitions(&db, t)).collect();
    let (data, bad_lines) = rows_with_violations();
    // The repeated code of line 1500 is no violation here: no unique code.
    let bad_lines: Vec<u64> = bad_lines.into_iter().filter(|&l| l != 1500).collect();
    let file = db.file("t.tsv", data.as_bytes());
    let (_, report, _) = load_got_and_want(&db, &file, &bad_lines, &[]);
    let after: Vec<String> = tables.iter().map(|t| definitions(&db, t)).collect();
    assert_eq!(after, before, "every definition back, with the partitions' index names");
    let comments = "SELECT obj_description(oid, 'pg_constraint') FROM pg_constraint WHERE conname = 'got_pkey' \
         UNION ALL SELECT obj_description('got_note_idx'::regclass, 'pg_class')";
    assert_eq!(db.scalar(&format!("SELECT string_agg(c, ', ') FROM ({comments}) x(c)")), "the key, notes");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let objects = report["summary"]["deferred"]["objects"].as_array().unwrap().len();
    assert_eq!(objects, 3, "primary key, index, foreign key: {}", report["summary"]["deferred"]);
    // An index whose partition index has a comment of its own stays, said so.
    let kept = "index \"got_amount\" stays in place for the load: its indexes on the partitions differ";
    assert!(report["summary"]["deferred"]["kept"][0].as_str().unwrap().starts_with(kept), "{report}");
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.steps WHERE state <> 'rebuilt'"), "0");
    // SET UNLOGGED would change none of its partitions: refused up front.
    let unlogged = db.load(&[file.to_str().unwrap(), "--table", "want", "--truncate", "--unlogged", "--restart"]);
    assert_eq!(unlogged.code, 2, "{}", unlogged.output());
    assert!(unlogged.output().contains("partitioned, and its partitions would stay logged"), "{}", unlogged.output());
    assert_eq!(db.count("want"), 3000 - bad_lines.len() as u64, "nothing truncated");
}

/// A user who may insert but does not own the table loads it as psql would:
/// auto keeps the indexes (dropping them needs the owner), and asking for
/// deferral or an unlogged load says who may.
#[test]
fn a_user_who_may_only_insert_loads_with_indexes_kept() {
    let db = TestDb::new();
    let role = format!("{}_inserter", db.name);
    db.execute("CREATE TABLE t (id int PRIMARY KEY, v int); CREATE INDEX ON t (v)");
    db.execute(&format!(
        "CREATE ROLE {role} LOGIN; GRANT SELECT, INSERT ON t TO {role}; GRANT CREATE ON DATABASE {0} TO {role}",
        db.name
    ));
    let file = db.file("a.csv", b"1,1\n2,2\n");
    let as_inserter = |extra: &[&str]| {
        let conninfo = format!("{} user={role}", db.conninfo());
        let mut cmd = sluice_command();
        cmd.args([&["load", file.to_str().unwrap(), "--db", &conninfo, "--table", "t"][..], extra].concat());
        crate::util::run_command(cmd)
    };
    as_inserter(&[]).assert_ok();
    assert_eq!(db.count("t"), 2);
    assert_eq!(db.scalar("SELECT count(*) FROM pg_index WHERE indrelid = 't'::regclass"), "2");
    for flag in ["--defer-indexes", "--unlogged"] {
        let run = as_inserter(&[flag, "--restart"]);
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(run.stderr.contains("which only its owner may do; connect as the owner"), "{}", run.stderr);
    }
    // Emptying the table needs TRUNCATE, which the role is told to ask for
    // before anything is done (the first step was refused by the server).
    let run = as_inserter(&["--truncate", "--restart"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("may not empty public.t (--truncate)"), "{}", run.stderr);
    assert_eq!(db.count("t"), 2);
}

/// A statement_timeout set for the database or role does not cancel
/// sluice's statements: an index rebuild cancelled after the load would
/// leave its index dropped however often the job ran again. Nor do
/// PostgreSQL 14's idle_session_timeout and 17's transaction_timeout end
/// its sessions.
#[test]
fn a_statement_timeout_does_not_leave_indexes_dropped() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int PRIMARY KEY, v text); CREATE INDEX ON t (v)");
    let data: String = (0..200_000).map(|i| format!("{i},value {}\n", i * 7919 % 200_000)).collect();
    let file = db.file("a.csv", data.as_bytes());
    let version: u32 = db.scalar("SHOW server_version_num").parse().unwrap();
    let ended = "SELECT sessions_fatal FROM pg_stat_database WHERE datname = current_database()";
    let ended_before = (version >= 140000).then(|| db.scalar(ended));
    db.execute(&format!("ALTER DATABASE {} SET statement_timeout = '1ms'", db.name));
    // Long enough that the harness's own statements finish in time.
    for (since, timeout) in [(170000, "transaction_timeout = '50ms'"), (140000, "idle_session_timeout = '30ms'")] {
        if version >= since {
            db.execute(&format!("ALTER DATABASE {} SET {timeout}", db.name));
        }
    }
    let run = db.load(&[file.to_str().unwrap(), "--table", "t", "--defer-indexes", "yes", "--retry-timeout", "5s"]);
    db.execute(&format!("ALTER DATABASE {} RESET ALL", db.name));
    run.assert_ok();
    if let Some(before) = ended_before {
        assert_eq!(db.scalar(ended), before, "no session of sluice's was ended by a timeout");
    }
    assert!(run.output().contains("2 deferred indexes/constraints rebuilt"), "{}", run.output());
    assert_eq!(db.count("t"), 200_000);
    assert_eq!(db.scalar("SELECT count(*) FROM pg_index WHERE indrelid = 't'::regclass"), "2");
}

/// PostgreSQL 18's NOT ENFORCED constraints check nothing during a load:
/// no warning (nor the doctor) names them as slowing it (one did, as NOT
/// VALID), and they are not dropped and added again. Only on 18 and later.
#[test]
fn not_enforced_constraints_are_left_alone() {
    let db = TestDb::new();
    if db.scalar("SHOW server_version_num").parse::<u32>().unwrap() < 180000 {
        return;
    }
    db.execute(
        "CREATE TABLE kinds (k int PRIMARY KEY); CREATE TABLE t (id int PRIMARY KEY, \
           amount int CONSTRAINT pos CHECK (amount >= 0) NOT ENFORCED, \
           k int CONSTRAINT kind REFERENCES kinds NOT ENFORCED)",
    );
    let oids = "SELECT string_agg(conname || ' ' || oid, ', ' ORDER BY conname) FROM pg_constraint \
                WHERE conrelid = 't'::regclass AND conname IN ('pos', 'kind')";
    let before = db.scalar(oids);
    let file = db.file("t.tsv", b"1\t-5\t7\n2\t3\t\\N\n");
    let run = db.load(&[file.to_str().unwrap(), "--table", "t"]);
    run.assert_ok();
    assert!(!run.stderr.contains("stays in place"), "{}", run.stderr);
    assert!(run.output().contains("1 deferred index/constraint rebuilt"), "{}", run.output());
    assert_eq!(db.scalar(oids), before, "neither dropped nor added again");
    assert_eq!(db.count("t"), 2);
    let doctor = crate::util::sluice(&["doctor", "--db", &db.conninfo(), "--table", "t"]);
    assert!(doctor.stdout.contains("public.t foreign keys = 0"), "{}", doctor.output());
    assert!(doctor.stdout.contains("public.t CHECK constraints = 0"), "{}", doctor.output());
}

/// PostgreSQL 18's keys WITHOUT OVERLAPS are exclusion constraints on a
/// GiST index: deferred as a key, the primary key could not be added again
/// (`gist` has no unique indexes) and stayed dropped, and an overlapping
/// row stayed loaded. They stay in place, and overlapping rows are
/// rejects; so do foreign keys with PERIOD. Only on 18 and later.
#[test]
fn keys_without_overlaps_stay_in_place() {
    let db = TestDb::new();
    if db.scalar("SHOW server_version_num").parse::<u32>().unwrap() < 180000 {
        return;
    }
    db.execute(
        "CREATE TABLE t (room int4range, during daterange, note text, PRIMARY KEY (room, during WITHOUT OVERLAPS))",
    );
    let mut data: String = (0..2000).map(|i| format!("[{i},{}]\t[2020-01-01,2021-01-01)\tfirst\n", i + 1)).collect();
    data.push_str("[7,8]\t[2020-06-01,2020-07-01)\toverlaps line 8\n");
    data.push_str("[7,8]\t[2021-01-01,2022-01-01)\tafter it\n");
    let file = db.file("t.tsv", data.as_bytes());
    let rejects = db.dir.path().join("t.rejects");
    let load = |file: &std::path::Path, table: &str| {
        db.load(&[
            file.to_str().unwrap(),
            "--table",
            table,
            "--chunk-size",
            "4KiB",
            "--rejects",
            rejects.to_str().unwrap(),
        ])
    };
    let run = load(&file, "t");
    assert_eq!(run.code, 1, "{}", run.output());
    assert!(
        run.stderr.contains("primary key \"t_pkey\" stays in place for the load: WITHOUT OVERLAPS"),
        "{}",
        run.stderr
    );
    assert_eq!(crate::util::rejected_lines(&rejects).into_iter().map(|(_, line)| line).collect::<Vec<_>>(), [2001]);
    assert_eq!(db.count("t"), 2001);
    let key = "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 't_pkey'";
    assert_eq!(db.scalar(key), "PRIMARY KEY (room, during WITHOUT OVERLAPS)");
    // A foreign key with PERIOD: deferred, the query after the load took
    // every row whose period two referenced rows cover for a violating one,
    // and loaded every chunk again, one at a time.
    db.execute(
        "CREATE TABLE public.booked (id int, room int4range, during daterange, \
           FOREIGN KEY (room, PERIOD during) REFERENCES t (room, PERIOD during)); \
         INSERT INTO t SELECT room, '[2021-01-01,2022-01-01)' FROM t WHERE note = 'first' AND room <> '[7,8]'",
    );
    let mut data: String = (0..2000).map(|i| format!("{i}\t[{i},{}]\t[2020-12-01,2021-02-01)\n", i + 1)).collect();
    data.push_str("9999\t[5000,5001]\t[2020-12-01,2021-02-01)\n");
    let file = db.file("booked.tsv", data.as_bytes());
    let run = load(&file, "booked");
    assert_eq!(run.code, 1, "{}", run.output());
    assert!(run.stderr.contains("stays in place for the load: PERIOD"), "{}", run.stderr);
    assert!(!run.output().contains("reloaded"), "{}", run.output());
    assert_eq!(db.count("booked"), 2000);
}

/// Keys come back as they were: covering columns, storage parameters,
/// deferrability and comments survive the index-then-constraint rebuild.
#[test]
fn keys_come_back_with_their_options() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE t (id int, u int, v int, CONSTRAINT t_key PRIMARY KEY (id) INCLUDE (v) WITH (fillfactor = 70), \
           CONSTRAINT t_u UNIQUE (u) DEFERRABLE INITIALLY DEFERRED, CONSTRAINT t_v UNIQUE (v, u) DEFERRABLE, \
           CONSTRAINT t_c CHECK (v >= 0)); CREATE INDEX t_plain ON t (v); \
         COMMENT ON CONSTRAINT t_key ON t IS 'the key'; COMMENT ON INDEX t_key IS 'its index, don''t drop'; \
         COMMENT ON INDEX t_plain IS 'plain'; COMMENT ON CONSTRAINT t_c ON t IS 'checked'",
    );
    let comments = "SELECT (SELECT string_agg(coalesce(obj_description(indexrelid, 'pg_class'), '-'), ' / ' \
                      ORDER BY indexrelid::regclass::text) FROM pg_index WHERE indrelid = 't'::regclass) || ' | ' || \
                    (SELECT string_agg(coalesce(obj_description(oid, 'pg_constraint'), '-'), ' / ' \
                      ORDER BY conname) FROM pg_constraint WHERE conrelid = 't'::regclass)";
    let (before, noted) = (definitions(&db, "t"), db.scalar(comments));
    assert!(noted.contains("don't drop"), "{noted}");
    let rows: String = (0..500).map(|i| format!("{i}\t{i}\t{i}\n")).collect();
    let run = db.load(&[db.file("t.tsv", rows.as_bytes()).to_str().unwrap(), "--table", "t"]);
    run.assert_ok();
    assert!(run.output().contains("4 deferred indexes/constraints"), "{}", run.output());
    assert_eq!(definitions(&db, "t"), before);
    assert_eq!(db.scalar(comments), noted);
    assert_eq!(db.count("t"), 500);
}

/// Indexes and keys in another tablespace come back in it (the catalog's
/// index definition leaves the tablespace out).
#[test]
fn deferred_indexes_come_back_in_their_tablespace() {
    let db = TestDb::new();
    let space = db.tablespace();
    db.execute(&format!(
        "CREATE TABLE t (id int, v int, CONSTRAINT t_key PRIMARY KEY (id) USING INDEX TABLESPACE {space}); \
         CREATE INDEX t_v ON t (v) TABLESPACE {space} WHERE v > 10; CREATE INDEX t_v2 ON t (v, id)"
    ));
    let placed = "SELECT string_agg(indexname || ':' || coalesce(tablespace, '-'), ' ' ORDER BY indexname) \
                  FROM pg_indexes WHERE tablename = 't'";
    let before = db.scalar(placed);
    assert_eq!(before, format!("t_key:{space} t_v:{space} t_v2:-"));
    let rows: String = (0..300).map(|i| format!("{i}\t{i}\n")).collect();
    let run = db.load(&[db.file("t.tsv", rows.as_bytes()).to_str().unwrap(), "--table", "t"]);
    run.assert_ok();
    assert!(run.output().contains("3 deferred indexes/constraints"), "{}", run.output());
    assert_eq!(db.scalar(placed), before);
    db.execute("DROP TABLE t");
    db.execute(&format!("DROP TABLESPACE {space}"));
}

/// Two sessions build two indexes at once. Each index calls a function that
/// sleeps per row, so the builds take the same time on any machine: in turn
/// they would take their sum, at once about the longer one.
#[test]
fn deferred_indexes_are_built_at_the_same_time() {
    let db = TestDb::new();
    db.execute(
        "CREATE FUNCTION slow(v int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS \
           'BEGIN PERFORM pg_sleep(0.004); RETURN v; END'; \
         CREATE TABLE t (a int, b int); CREATE INDEX ON t (slow(a)); CREATE INDEX ON t (slow(b))",
    );
    let rows: String = (0..200).map(|i| format!("{i}\t{i}\n")).collect();
    let file = db.file("t.tsv", rows.as_bytes());
    let report = db.dir.path().join("r.json");
    let run =
        db.load(&[file.to_str().unwrap(), "--table", "t", "--workers", "2", "--report", report.to_str().unwrap()]);
    run.assert_ok();
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let deferred = &report["summary"]["deferred"];
    let builds: Vec<f64> =
        deferred["built"].as_array().unwrap().iter().map(|b| b["seconds"].as_f64().unwrap()).collect();
    assert_eq!(builds.len(), 2, "{deferred}");
    assert!(builds.iter().all(|&s| s >= 0.7), "each build sleeps 200 x 4 ms: {deferred}");
    let total = deferred["rebuild_seconds"].as_f64().unwrap();
    assert!(total < 0.75 * builds.iter().sum::<f64>(), "the builds took turns: {deferred}");
    assert_eq!(db.scalar("SELECT count(*) FROM pg_index WHERE indrelid = 't'::regclass"), "2");
}

/// Killed after the drop, before the rebuild: the indexes are recorded as
/// pending, and the same command loads the rest and builds them.
#[test]
fn a_kill_between_drop_and_rebuild_is_completed_by_the_same_command() {
    kill_between_drop_and_rebuild(false);
}

/// The same for a partitioned table: its partitions' indexes come back too,
/// with their names.
#[test]
fn a_kill_between_drop_and_rebuild_of_a_partitioned_table_is_completed() {
    kill_between_drop_and_rebuild(true);
}

/// Table `t` of `sluice gen transactions` with a primary key and an index,
/// partitioned in two at `tid` 500,000 (one partition's index renamed by
/// hand) or not; returns the tables whose definitions must come back.
fn transactions_table(db: &TestDb, partitioned: bool) -> &'static [&'static str] {
    let ddl = sluice::gen::Dataset::Transactions.ddl("t");
    match partitioned {
        true => db.execute(&format!(
            "{} PARTITION BY RANGE (tid); CREATE TABLE t_low PARTITION OF t FOR VALUES FROM (MINVALUE) TO (500000); \
             CREATE TABLE t_high PARTITION OF t FOR VALUES FROM (500000) TO (MAXVALUE)",
            ddl.trim_end().trim_end_matches(';')
        )),
        false => db.execute(&ddl),
    }
    db.execute("ALTER TABLE t ADD PRIMARY KEY (tid); CREATE INDEX ON t (amount)");
    match partitioned {
        true => {
            db.execute("ALTER INDEX t_high_amount_idx RENAME TO high_amounts");
            &["t", "t_low", "t_high"]
        }
        false => &["t"],
    }
}

/// The definitions of `tables`' indexes and constraints.
fn all_definitions(db: &TestDb, tables: &[&str]) -> Vec<String> {
    tables.iter().map(|t| definitions(db, t)).collect()
}

fn kill_between_drop_and_rebuild(partitioned: bool) {
    let db = TestDb::new();
    let tables = transactions_table(&db, partitioned);
    let definitions_now = || all_definitions(&db, tables);
    let before = definitions_now();
    let rows = 1_000_000u64;
    let data: String = (1..=rows).map(|i| format!("{i}\t{}\t{}\tdescription-{i}\n", 10_000 + i, i % 500)).collect();
    let file = db.file("t.tsv", data.as_bytes());
    let conn = db.conninfo();
    let args = [
        "load",
        file.to_str().unwrap(),
        "--db",
        &conn,
        "--table",
        "t",
        "--chunk-size",
        "64KiB",
        "--workers",
        "2",
        "--quiet",
    ];
    let mut child = sluice_command().args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let committed = || db.session().query("SELECT 1 FROM sluice.chunks WHERE state = 'done' LIMIT 1", &[]);
    while !committed().is_ok_and(|rows| !rows.is_empty()) {
        assert!(Instant::now() < deadline, "no chunk committed in 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    let status = child.finish().status;
    assert!(status.code().is_none(), "the load finished before the kill: the test lost its teeth");
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.steps WHERE state = 'dropped'"), "2", "both pending");
    assert_eq!(db.scalar("SELECT count(*) FROM pg_index WHERE indrelid = 't'::regclass"), "0", "dropped");
    let status = sluice_command().args(["status", "--db", &conn]).output().unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("not yet built again: index \"t_amount_idx\", primary key \"t_pkey\""), "{status}");
    assert!(!status.contains("every chunk is loaded"), "killed after the first chunk: {status}");

    // The same command (with progress lines, to see the build announced).
    let loud = &args[..args.len() - 1];
    assert_eq!(args[args.len() - 1], "--quiet");
    let again = sluice_command().args(loud).args(["--progress-interval", "0.02"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    assert!(stderr.contains("building 2 deferred indexes/constraints"), "{stderr}");
    assert_eq!(definitions_now(), before, "indexes built again");
    assert_eq!(db.count("t"), rows);
    assert_eq!(db.scalar("SELECT count(DISTINCT tid) FROM t"), rows.to_string(), "each row once");
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.steps WHERE state = 'dropped'"), "0");
}

/// `--unlogged`: the table is logged again afterwards; a server crash
/// during the load (which empties an unlogged table) costs a reload, not
/// rows; a table with rows is refused.
#[test]
fn unlogged_load_survives_a_server_crash() {
    unlogged_load_and_a_crash(false);
}

/// The same when sluice died too (a reboot): the same command finds the
/// table emptied by the crash and loads every chunk again.
#[test]
fn unlogged_load_survives_a_crash_of_server_and_loader() {
    unlogged_load_and_a_crash(true);
}

fn unlogged_load_and_a_crash(loader_dies: bool) {
    use sluice::local_pg::{LocalOptions, LocalPostgres};
    use sluice::sink::postgres::PgTarget;
    let settings = vec![("fsync".to_string(), "off".to_string())];
    let mut server = LocalPostgres::start(&LocalOptions { settings, ..LocalOptions::default() }).unwrap();
    let conninfo = server.conninfo("postgres");
    let query = |sql: &str| -> Option<String> {
        let session = PgTarget::new(Some(&conninfo)).connect().ok()?;
        session.query(sql, &[]).ok()?.first()?.first()?.clone()
    };
    let setup = format!("{}; ALTER TABLE t ADD PRIMARY KEY (tid)", sluice::gen::Dataset::Transactions.ddl("t"));
    PgTarget::new(Some(&conninfo)).connect().unwrap().execute(&setup).unwrap();
    let rows = 1_500_000u64;
    let data: String = (1..=rows).map(|i| format!("{i}\t{}\t{}\tdescription-{i}\n", 10_000 + i, i % 500)).collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.tsv");
    std::fs::write(&file, data).unwrap();
    let args = ["load", file.to_str().unwrap(), "--db", &conninfo, "--table", "t", "--chunk-size", "256KiB"];
    let child = sluice_command()
        .args(args)
        .args(["--unlogged", "--retry-timeout", "60s", "--workers", "2", "--progress-interval", "100"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let committed = || query("SELECT count(*) FROM sluice.chunks WHERE state = 'done'").unwrap_or_default();
    while matches!(committed().as_str(), "" | "0") {
        assert!(Instant::now() < deadline, "no chunk committed in 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(query("SELECT relpersistence::text FROM pg_class WHERE relname = 't'").as_deref(), Some("u"));
    let mut child = child;
    if loader_dies {
        child.kill().unwrap();
        child.wait().unwrap();
        // The ledger's commits are asynchronous: made durable, the job has
        // rows that the crash takes from the unlogged table.
        query("CHECKPOINT");
        assert_ne!(query("SELECT sum(rows_loaded) FROM sluice.chunks WHERE state = 'done'").as_deref(), Some("0"));
    }
    server.crash_and_restart().unwrap();
    if loader_dies {
        child = sluice_command()
            .args(args)
            .args(["--unlogged"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    }
    let out = child.finish();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(stderr.contains("restarted meanwhile"), "{stderr}");
    assert_eq!(query("SELECT count(*) FROM t"), Some(rows.to_string()), "every row once: {stderr}");
    assert_eq!(query("SELECT count(DISTINCT tid) FROM t"), Some(rows.to_string()));
    assert_eq!(query("SELECT relpersistence::text FROM pg_class WHERE relname = 't'").as_deref(), Some("p"));
    assert_eq!(query("SELECT count(*) FROM pg_index WHERE indrelid = 't'::regclass").as_deref(), Some("1"));
    let same = sluice_command().args(args).args(["--unlogged"]).output().unwrap();
    assert!(same.status.success(), "the finished job, run again: {}", String::from_utf8_lossy(&same.stderr));
    assert!(String::from_utf8_lossy(&same.stderr).contains("already"), "{}", String::from_utf8_lossy(&same.stderr));
    let again = sluice_command().args(args).args(["--job", "second", "--unlogged"]).output().unwrap();
    assert_eq!(again.status.code(), Some(2), "{}", String::from_utf8_lossy(&again.stderr));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--unlogged needs an empty table"));
    server.stop();
}

/// `transactions` with a primary key on `tid` and an index on `amount`;
/// `rows` lines where every `every`-th repeats the id of the line `back`
/// lines before it; the `sluice load` arguments (with `extra`).
struct Keyed {
    db: TestDb,
    tables: &'static [&'static str],
    before: Vec<String>,
    rejects: std::path::PathBuf,
    args: Vec<String>,
    rows: u64,
    dups: u64,
}

fn keyed(rows: u64, every: u64, back: u64, extra: &[&str]) -> Keyed {
    keyed_in_files(1, rows, every, back, extra)
}

/// [`keyed`] with the lines split among `files` files, loaded by a glob.
fn keyed_in_files(files: u64, rows: u64, every: u64, back: u64, extra: &[&str]) -> Keyed {
    keyed_table(false, files, rows, every, back, extra)
}

/// [`keyed_in_files`] into a plain or a partitioned table.
fn keyed_table(partitioned: bool, files: u64, rows: u64, every: u64, back: u64, extra: &[&str]) -> Keyed {
    let db = TestDb::new();
    let tables = transactions_table(&db, partitioned);
    let before = all_definitions(&db, tables);
    let id = |i: u64| if i % every == 0 { i - back } else { i };
    let line = |i: u64| format!("{}\t{}\t{}\td-{i}\n", id(i), 10_000 + i, i % 500);
    let input = match files {
        1 => db.file("t.tsv", (1..=rows).map(line).collect::<String>().as_bytes()),
        _ => {
            let per_file = rows.div_ceil(files);
            for f in 0..files {
                let lines: String = (f * per_file + 1..=((f + 1) * per_file).min(rows)).map(line).collect();
                db.file(&format!("parts/t-{f:04}.tsv"), lines.as_bytes());
            }
            db.dir.path().join("parts/t-*.tsv")
        }
    };
    let rejects = db.dir.path().join("t.rejects.jsonl");
    let mut args: Vec<String> = ["load", input.to_str().unwrap(), "--db", &db.conninfo(), "--table", "t", "--quiet"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(["--rejects".to_string(), rejects.display().to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    Keyed { db, tables, before, rejects, args, rows, dups: rows / every }
}

impl Keyed {
    /// Runs the load `runs` times, killing each 30 ms plus up to `spread_ms`
    /// (pseudo-random from `seed`) after its start; returns how many runs
    /// the kill stopped.
    fn kill_at_random(&self, runs: usize, seed: u64, spread_ms: u64) -> u32 {
        let mut rng = sluice::gen::Rng::new(seed);
        let mut killed = 0;
        for i in 0..runs {
            let mut child = sluice_command().args(&self.args).stderr(Stdio::piped()).spawn().unwrap();
            std::thread::sleep(Duration::from_millis(30 + rng.below(spread_ms)));
            let _ = child.kill();
            let out = child.finish();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(matches!(out.status.code(), None | Some(0 | 1)), "run {i}: {stderr}");
            killed += u32::from(out.status.code().is_none());
        }
        killed
    }

    /// Every row once, every duplicate rejected once (database and file),
    /// the key and index back, nothing left dropped.
    fn assert_exact(&self) {
        let (db, dups) = (&self.db, self.dups);
        assert_eq!(db.count("t"), self.rows - dups);
        assert_eq!(db.scalar("SELECT count(DISTINCT tid) FROM t"), (self.rows - dups).to_string());
        let stored =
            "SELECT count(*) || ' ' || count(DISTINCT (file, byte)) || ' ' || string_agg(DISTINCT sqlstate, ',') \
             FROM sluice.rejects";
        assert_eq!(db.scalar(stored), format!("{dups} {dups} 23505"), "duplicate keys, each rejected once");
        let file_lines = std::fs::read_to_string(&self.rejects).unwrap().lines().count() as u64;
        assert_eq!(file_lines, dups, "the rejects file holds the whole job's");
        assert_eq!(all_definitions(db, self.tables), self.before);
        assert_eq!(db.scalar("SELECT count(*) FROM sluice.steps WHERE state = 'dropped'"), "0");
        assert_eq!(db.scalar("SELECT count(*) FROM sluice.xacts"), "0");
    }
}

/// Two processes on one job with a deferred primary key and duplicate ids:
/// one drops, both load, the key is built once, and every duplicate ends up
/// rejected exactly once.
#[test]
fn two_processes_share_a_deferred_load() {
    let k = keyed(300_000, 50_000, 1_000, &["--job", "pair", "--chunk-size", "64KiB"]);
    let spawn = || sluice_command().args(&k.args).stderr(Stdio::piped()).spawn().unwrap();
    let (a, b) = (spawn(), spawn());
    for out in [a.finish(), b.finish()] {
        assert_eq!(out.status.code(), Some(1), "rejects: exit 1: {}", String::from_utf8_lossy(&out.stderr));
    }
    k.assert_exact();
    assert_eq!(k.db.scalar("SELECT count(*) FROM sluice.steps WHERE job = 'pair' AND state = 'rebuilt'"), "2");
}

/// Killed at random moments (while loading, building the key, or loading
/// violating chunks again), the same command always ends with every row
/// once, every duplicate rejected once, and the key and index in place.
#[test]
fn kills_at_random_moments_of_a_deferred_load_with_duplicates() {
    let k = keyed(600_000, 20_000, 7_000, &["--chunk-size", "128KiB"]);
    let killed = k.kill_at_random(12, 11, 500);
    assert!(killed >= 6, "only {killed} of 12 runs were killed: the test lost its teeth");
    let last = sluice_command().args(&k.args).output().unwrap();
    assert!(matches!(last.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&last.stderr));
    k.assert_exact();
}

/// The same into a partitioned table: the key is added on the table,
/// which builds its partitions' indexes, and their names come back.
#[test]
fn kills_at_random_moments_of_a_deferred_load_into_partitions() {
    let k = keyed_table(true, 1, 600_000, 20_000, 7_000, &["--chunk-size", "128KiB"]);
    let killed = k.kill_at_random(12, 13, 500);
    assert!(killed >= 6, "only {killed} of 12 runs were killed: the test lost its teeth");
    let last = sluice_command().args(&k.args).output().unwrap();
    assert!(matches!(last.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&last.stderr));
    k.assert_exact();
}

/// Small files share batches, whose COPY writes one marker per chunk: a
/// duplicate key sends every chunk of its batch back to be loaded again,
/// and is rejected once, whether the load is killed or not.
#[test]
fn a_deferred_key_over_batches_of_small_files_rejects_each_duplicate_once() {
    let k = keyed_in_files(400, 200_000, 5_000, 1_200, &[]);
    let report = k.db.dir.path().join("r.json");
    let out = sluice_command().args(&k.args).args(["--report", report.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "rejects: exit 1: {}", String::from_utf8_lossy(&out.stderr));
    k.assert_exact();
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let (chunks, batches) = (&report["summary"]["chunks"], &report["summary"]["batches"]);
    assert!(batches.as_u64().unwrap() < chunks.as_u64().unwrap(), "{chunks} chunks in {batches} batches");

    let k = keyed_in_files(400, 200_000, 5_000, 1_200, &[]);
    let killed = k.kill_at_random(8, 5, 400);
    assert!(killed >= 4, "only {killed} of 8 runs were killed: the test lost its teeth");
    let last = sluice_command().args(&k.args).output().unwrap();
    assert!(matches!(last.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&last.stderr));
    k.assert_exact();
}

/// The report says what the sessions building the deferred indexes did,
/// apart from the load's: here an index whose expression sleeps 1 ms a row,
/// so its build spends most of its time in `pg_sleep`, and the load none.
#[test]
fn report_names_what_the_index_builds_waited_on() {
    let db = TestDb::new();
    db.execute(
        "CREATE FUNCTION slow_id(x int) RETURNS int IMMUTABLE LANGUAGE plpgsql \
           AS 'BEGIN PERFORM pg_sleep(0.001); RETURN x; END'; \
         CREATE TABLE t (id int, v int); CREATE INDEX t_slow ON t (slow_id(id))",
    );
    let data: String = (1..=1000).map(|i| format!("{i}\t{}\n", i * 7)).collect();
    let file = db.file("t.tsv", data.as_bytes());
    let report = db.dir.path().join("r.json");
    let run = db.load(&[file.to_str().unwrap(), "--table", "t", "--report", report.to_str().unwrap()]);
    run.assert_ok();
    assert_eq!(db.scalar("SELECT count(*) FROM t WHERE slow_id(id) = id"), "1000");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let sleeps = |waits: &serde_json::Value| {
        let events = waits["events"].as_array().unwrap();
        events.iter().find(|e| e["event"] == "Timeout:PgSleep").map_or(0, |e| e["samples"].as_u64().unwrap())
    };
    let builds = &json["summary"]["deferred"]["rebuild_waits"];
    assert!(sleeps(builds) >= 10, "the build slept 1 s or more, sampled 20 times a second: {builds}");
    assert!(sleeps(builds) * 2 > builds["samples"].as_u64().unwrap(), "mostly asleep: {builds}");
    assert_eq!(sleeps(&json["summary"]["server_waits"]), 0, "the load's sessions built nothing");
    assert!(run.stdout.contains("index builds ("), "{}", run.stdout);
    let page = std::fs::read_to_string(report.with_extension("html")).unwrap();
    assert!(page.contains("<p>index builds ("), "the chart's page says it too");
}

/// Many duplicate keys, each of a line 250 before it (in the same chunk or
/// the one before), loaded by two workers: the chunks that broke the key
/// load again one at a time, in file order, so the first line of each key
/// is kept and the later one rejected. In parallel, a worker whose run was
/// refused rolled back its rows, the other worker's duplicate took the key,
/// and the first line was rejected instead (and the two waited for each
/// other, into deadlocks).
#[test]
fn a_deferred_key_keeps_the_first_line_of_each_key_in_the_file() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int PRIMARY KEY, note text)");
    let mut data = String::new();
    let mut later_lines = Vec::new();
    for line in 1..=20_000u64 {
        let id = match line % 7 == 0 && line > 1000 {
            true => {
                later_lines.push(line);
                line - 250
            }
            false => line,
        };
        data.push_str(&format!("{id}\tline {line}\n"));
    }
    let file = db.file("t.tsv", data.as_bytes());
    let rejects = db.dir.path().join("r.jsonl");
    let run = db.load(&[
        file.to_str().unwrap(),
        "--table",
        "t",
        "--workers",
        "2",
        "--chunk-size",
        "8KiB",
        "--rejects",
        rejects.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{}", run.output());
    assert!(run.output().contains("reloaded for violating rows"), "the key was deferred: {}", run.output());
    // Each reloaded chunk has dozens of duplicates, but no worker waited for
    // another, and the advice to defer the keys would be taken already.
    assert!(!run.output().contains("many records repeat a key"), "{}", run.output());
    let rejected = rejected_lines(&rejects);
    let first_kept = rejected.iter().find(|line| !later_lines.contains(line));
    assert_eq!(first_kept, None, "a key's first line was rejected");
    assert_eq!(rejected, later_lines, "the later line of each key is rejected");
    assert_eq!(db.scalar("SELECT count(*) FROM t WHERE note <> 'line ' || id"), "0", "each id's first line is kept");
    assert_eq!(db.count("t"), 20_000 - later_lines.len() as u64);
}

/// `id\tv{id}` lines for the ids `from..to`.
fn keyed_rows(from: u32, to: u32) -> String {
    (from..to).map(|i| format!("{i}\tv{i}\n")).collect()
}

/// An empty table `t` keyed by `id`, `a.tsv` with ids below 50,000 and
/// `b.tsv.gz` with the ids from 50,000 to `to`, cut in half: a load of both
/// stops at the damaged file with the key dropped. Also the whole gzip
/// data, to mend the file with.
fn a_key_and_a_damaged_gzip_file(to: u32) -> (TestDb, std::path::PathBuf, std::path::PathBuf, Vec<u8>) {
    use std::io::Write;
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int PRIMARY KEY, v text)");
    let good = db.file("a.tsv", keyed_rows(0, 50_000).as_bytes());
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gzip.write_all(keyed_rows(50_000, to).as_bytes()).unwrap();
    let gzip = gzip.finish().unwrap();
    let cut = db.file("b.tsv.gz", &gzip[..gzip.len() / 2]);
    (db, good, cut, gzip)
}

/// A job that stopped with the table's primary key dropped (its input cut
/// short: a damaged gzip file) leaves the key to be built when it resumes.
/// Another job loading into the table meanwhile says so. With `--truncate`,
/// which empties that job's rows, the load takes the key over and builds it
/// again: before, the key stayed dropped after a load that said it loaded
/// every row, and the duplicate in its input went in unrejected.
#[test]
fn a_key_another_stopped_job_dropped_is_said_and_built_again_by_a_load_that_truncates() {
    let (db, good, cut, gzip) = a_key_and_a_damaged_gzip_file(400_000);
    let stopped = db.load(&[good.to_str().unwrap(), cut.to_str().unwrap(), "--table", "t", "--chunk-size", "64KiB"]);
    assert_eq!(stopped.code, 2, "{}", stopped.output());
    assert!(stopped.output().contains("primary key \"t_pkey\" stays dropped"), "{}", stopped.output());
    let keys = "SELECT count(*) FROM pg_constraint WHERE conrelid = 't'::regclass AND contype = 'p'";
    assert_eq!(db.scalar(keys), "0");
    let loaded_before = db.count("t");
    assert!(loaded_before >= 50_000, "{loaded_before}");

    let more = db.file("c.tsv", keyed_rows(500_000, 500_100).as_bytes());
    let alongside = db.load(&[more.to_str().unwrap(), "--table", "t"]);
    alongside.assert_ok();
    let said = "primary key \"t_pkey\" of public.t is dropped by job ";
    assert!(alongside.output().contains(said), "{}", alongside.output());
    assert!(alongside.output().contains("that job is stopped: resume it with the command that began it (cd "));
    assert_eq!(db.scalar(keys), "0", "still that job's to build");

    // A repeated key in the truncating load's input: the key taken over
    // rejects it, as the load's own deferred key would. Its ids start at 1:
    // were the stopped job's first 1,000 records all held when it runs
    // again, it would stop for them, as a file loaded again does.
    let again = db.file("d.tsv", format!("{}7\tagain\n", keyed_rows(1, 1001)).as_bytes());
    let truncating = db.load(&[again.to_str().unwrap(), "--table", "t", "--truncate"]);
    assert_eq!(truncating.code, 1, "{}", truncating.output());
    let taken = "primary key \"t_pkey\" of public.t, dropped by job ";
    assert!(truncating.output().contains(taken), "{}", truncating.output());
    assert!(truncating.output().contains("is built again after this load"), "{}", truncating.output());
    assert!(truncating.output().contains("rejected 1 (") || truncating.output().contains("rejected 1 record"));
    assert_eq!(db.scalar(keys), "1");
    assert_eq!(db.count("t"), 1000);
    assert_eq!(db.scalar("SELECT v FROM t WHERE id = 7"), "v7", "the first line of the key is kept");
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.steps WHERE state = 'dropped'"), "0");
    let status = crate::util::sluice(&["status", "--db", &db.conninfo()]);
    assert!(!status.stdout.contains("not yet built again"), "{}", status.stdout);

    // The stopped job's rows are gone: it starts over when run again (with
    // its file mended), instead of loading only the chunks after those it
    // had committed. Its ids from 1 to 1000 are the truncating load's now.
    let over = format!(
        "had committed {} rows into public.t, which --truncate emptied: it starts over if run again",
        sluice::report::thousands(loaded_before)
    );
    assert!(truncating.output().contains(&over), "{over}: {}", truncating.output());
    std::fs::write(&cut, &gzip).unwrap();
    let again = db.load(&[good.to_str().unwrap(), cut.to_str().unwrap(), "--table", "t", "--chunk-size", "64KiB"]);
    assert_eq!(again.code, 1, "{}", again.output());
    assert!(again.output().contains("loaded 399,000 rows, rejected 1,000 "), "{}", again.output());
    assert_eq!(db.count("t"), 400_000);
}

/// A key another job's rows violate, loaded while it was dropped (unchecked,
/// as that load's warning said), cannot be built when the job that dropped
/// it resumes: the message gives the server's DETAIL (which key value) and
/// names the job that loaded meanwhile, with its rows, instead of leaving
/// the user to search. With the repeat deleted, the same command builds it.
#[test]
fn a_key_that_another_jobs_rows_violate_names_the_value_and_that_job() {
    let (db, good, cut, gzip) = a_key_and_a_damaged_gzip_file(100_000);
    let first = [good.to_str().unwrap(), cut.to_str().unwrap(), "--table", "t", "--job", "first"];
    let stopped = db.load(&first);
    assert_eq!(stopped.code, 2, "{}", stopped.output());
    let keys = "SELECT count(*) FROM pg_constraint WHERE conrelid = 't'::regclass AND contype = 'p'";
    assert_eq!(db.scalar(keys), "0");

    // Its 7 repeats one of the stopped job's keys too: that job reopens the
    // chunk that loaded its own 7 before the build fails on 500007.
    let more = db.file("c.tsv", format!("{}500007\tagain\n7\tother\n", keyed_rows(500_000, 500_100)).as_bytes());
    let unchecked = db.load(&[more.to_str().unwrap(), "--table", "t", "--job", "unchecked"]);
    unchecked.assert_ok();
    assert!(unchecked.output().contains("go in unchecked by it"), "{}", unchecked.output());

    std::fs::write(&cut, &gzip).unwrap();
    let resumed = db.load(&first);
    assert_eq!(resumed.code, 4, "{}", resumed.output());
    let detail = "could not create unique index \"t_pkey\" (Key (id)=(500007) is duplicated.) [23505]";
    assert!(resumed.output().contains(detail), "{}", resumed.output());
    let named = "while it was dropped, job unchecked loaded 102 rows into the table, unchecked by it";
    assert!(resumed.output().contains(named), "{}", resumed.output());
    assert_eq!(db.scalar(keys), "0");

    db.execute("DELETE FROM t WHERE v = 'again'");
    let built = db.load(&first);
    assert_eq!(built.code, 1, "{}", built.output());
    assert_eq!(db.scalar(keys), "1");
    assert_eq!(db.scalar("SELECT v FROM t WHERE id = 7"), "other", "the row loaded while the key was dropped stays");
    assert_eq!(db.count("t"), 100_100);
}

/// Before PostgreSQL 18 one process builds a GIN index, while the loading
/// sessions each keep it up to date: deferring it made a load of 5 M JSON
/// documents 1.7 times slower (bench/README.md). `auto` keeps it in place
/// there, says why, and still defers the rest; 18 defers it;
/// `--defer-indexes yes` defers it everywhere.
#[test]
fn a_gin_index_stays_in_place_before_postgresql_18_unless_asked() {
    let db = TestDb::new();
    db.execute("CREATE TABLE docs (id int PRIMARY KEY, doc jsonb); CREATE INDEX docs_doc ON docs USING gin (doc)");
    let data: String = (0..2000).map(|i| format!("{i}\t{{\"k\": {i}, \"tag\": \"t{}\"}}\n", i % 7)).collect();
    let file = db.file("docs.tsv", data.as_bytes());
    let version: u32 = db.scalar("SHOW server_version_num").parse().unwrap();
    let kept =
        "index \"docs_doc\" stays in place for the load: a GIN index, which PostgreSQL before 18 builds with one";
    for (mode, gin_deferred) in [("auto", version >= 180000), ("yes", true)] {
        db.execute("TRUNCATE docs");
        let run = db.load(&[file.to_str().unwrap(), "--table", "docs", "--defer-indexes", mode, "--restart"]);
        run.assert_ok();
        assert_eq!(run.output().contains(kept), !gin_deferred, "{mode}: {}", run.output());
        let deferred = if gin_deferred { "2 deferred indexes/constraints" } else { "1 deferred index/constraint" };
        assert!(run.output().contains(deferred), "{mode}: {}", run.output());
        assert_eq!(db.count("docs"), 2000);
        let found = "SELECT count(*) FROM docs WHERE doc @> '{\"tag\": \"t3\"}'";
        assert_eq!(db.scalar(found), "286");
        assert_eq!(db.scalar("SELECT count(*) FROM pg_index WHERE indrelid = 'docs'::regclass"), "2");
    }
    let doctor = crate::util::sluice(&["doctor", "--db", &db.conninfo(), "--table", "docs"]);
    let said = "GIN (docs_doc) stays in place with auto before PostgreSQL 18";
    assert_eq!(doctor.stdout.contains(said), version < 180000, "{}", doctor.stdout);
}

/// The warning that says a sequence was moved past the loaded values.
fn moved(run: &crate::util::Run, column: &str, highest: u32) -> bool {
    run.stderr.contains(&format!("{column} was loaded with values up to {highest}, which its sequence"))
}

#[test]
fn sequences_of_identity_and_serial_columns_move_past_the_values_loaded() {
    let db = TestDb::new();
    // An identity key (deferred, then read through its index) and a serial
    // column with no index, into an empty table.
    db.execute(
        "CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, n bigserial, \"Seq'd\" serial, note text)",
    );
    let rows: String = (1..=3000).map(|i| format!("{},{},{i},r{i}\n", i * 2, i + 10)).collect();
    let file = db.file("t.csv", rows.as_bytes());
    let path = file.to_str().unwrap();
    let run = db.load(&[path, "-t", "t", "--columns", "id,n,Seq'd,note", "--chunk-size", "16KiB"]);
    run.assert_ok();
    assert!(moved(&run, "\"id\"", 6000) && moved(&run, "\"n\"", 3010), "{}", run.stderr);
    assert!(run.stderr.contains("\"Seq'd\" was loaded with values up to 3000"), "{}", run.stderr);
    assert!(run.stderr.contains("it now gives 6001 next"), "{}", run.stderr);
    db.execute("INSERT INTO t (note) VALUES ('inserted')");
    assert_eq!(db.scalar("SELECT id || ',' || n || ',' || \"Seq'd\" FROM t WHERE note = 'inserted'"), "6001,3011,3001");
    let says_nothing = |name: &str, data: &[u8], columns: &str| {
        let run = db.load(&[db.file(name, data).to_str().unwrap(), "-t", "t", "--columns", columns]);
        run.assert_ok();
        assert!(!run.stderr.contains("sequence"), "{}", run.stderr);
    };
    // Values below where the sequences are: left as they are, and no word.
    says_nothing("low.csv", b"1,1,1,low\n", "id,n,Seq'd,note");
    db.execute("INSERT INTO t (note) VALUES ('after')");
    assert_eq!(db.scalar("SELECT id || ',' || n FROM t WHERE note = 'after'"), "6002,3012");
    // A load that leaves the columns to their sequences says nothing.
    says_nothing("notes.csv", b"x\ny\n", "note");
    assert_eq!(db.scalar("SELECT max(id) FROM t"), "6004");
    // A partitioned table without an index: its partitions are small.
    db.execute(
        "CREATE TABLE p (id bigserial, part int) PARTITION BY LIST (part); \
         CREATE TABLE p1 PARTITION OF p FOR VALUES IN (1); CREATE TABLE p2 PARTITION OF p FOR VALUES IN (2)",
    );
    let rows: String = (1..=500).map(|i| format!("{i},{}\n", i % 2 + 1)).collect();
    let parts = db.file("p.csv", rows.as_bytes());
    let run = db.load(&[parts.to_str().unwrap(), "-t", "p"]);
    assert!(moved(&run, "\"id\"", 500), "{}", run.stderr);
    assert_eq!(db.scalar("SELECT nextval('p_id_seq')"), "501");
}

/// After a load the table is analyzed where autovacuum never will (off for
/// the table; a partitioned table, whose own statistics autovacuum never
/// gathers), once the load's rows are a tenth or more of the table's;
/// `--analyze` always, `--analyze no` never, and never where autovacuum
/// will. The statistics then count the new rows; the summary and the
/// report say how long it took and why. A lock another session holds
/// makes it give up after a wait, with the statement to run: the load
/// itself succeeded.
#[test]
fn the_table_is_analyzed_after_a_load_where_autovacuum_never_will() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE quiet (id int, kind text) WITH (autovacuum_enabled = FAL); CREATE TABLE busy (id int, kind \
         text); CREATE TABLE parts (id int, kind text) PARTITION BY RANGE (id); \
         CREATE TABLE parts_a PARTITION OF parts FOR VALUES FROM (0) TO (15000); \
         CREATE TABLE parts_b PARTITION OF parts FOR VALUES FROM (15000) TO (MAXVALUE)",
    );
    let rows = |name: &str, ids: std::ops::Range<u64>| {
        let text: String = ids.map(|i| format!("{i},{}\n", ["a", "b", "c"][i as usize % 3])).collect();
        db.file(name, text.as_bytes()).to_str().unwrap().to_string()
    };
    let (first, few, more, last) = (
        rows("first.csv", 0..10_000),
        rows("few.csv", 10_000..10_500),
        rows("more.csv", 10_500..11_000),
        rows("last.csv", 11_000..30_000),
    );
    let report = db.dir.path().join("r.json");
    let load = |file: &str, table: &str, extra: &[&str]| {
        let run = db.load(&[&[file, "--table", table, "--report", report.to_str().unwrap()][..], extra].concat());
        assert_eq!(run.code, 0, "{}", run.stderr);
        let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        (run, report["summary"]["analysis"].clone())
    };
    let stats = |table: &str| db.scalar(&format!("SELECT count(*) FROM pg_stats WHERE tablename = '{table}'"));
    let reltuples =
        |table: &str| db.scalar(&format!("SELECT reltuples::bigint FROM pg_class WHERE relname = '{table}'"));

    let (run, analysis) = load(&first, "quiet", &[]);
    assert!(run.stdout.contains(" s (autovacuum is off for the table)\n"), "{}", run.stdout);
    assert!(run.stdout.contains(", analyzed in "), "{}", run.stdout);
    assert_eq!(
        (analysis["done"].as_bool(), analysis["why"].as_str()),
        (Some(true), Some("autovacuum is off for the table"))
    );
    assert!(analysis["seconds"].as_f64().unwrap() > 0.0);
    assert_eq!((stats("quiet"), reltuples("quiet")), ("2".into(), "10000".into()), "both columns, every row");
    // 500 rows more are a twentieth of the table: left for later.
    let (run, analysis) = load(&few, "quiet", &[]);
    assert!(!run.stdout.contains("analyzed"), "{}", run.stdout);
    assert_eq!((analysis, reltuples("quiet")), (serde_json::Value::Null, "10000".into()));
    let (run, _) = load(&more, "quiet", &["--analyze"]);
    assert!(run.stdout.contains(" s (--analyze)\n"), "{}", run.stdout);
    assert_eq!(reltuples("quiet"), "11000");

    // Autovacuum analyzes this one itself.
    let (run, analysis) = load(&first, "busy", &[]);
    assert!(!run.stdout.contains("analyzed"), "{}", run.stdout);
    assert_eq!(analysis, serde_json::Value::Null);

    let (run, _) = load(&first, "parts", &["--analyze", "no"]);
    assert!(!run.stdout.contains("analyzed"), "{}", run.stdout);
    assert_eq!(stats("parts"), "0");
    let (run, _) = load(&last, "parts", &[]);
    let why = "(a partitioned table: autovacuum analyzes only its partitions)";
    assert!(run.stdout.contains(why), "{}", run.stdout);
    assert_eq!(db.scalar("SELECT count(*) FROM pg_stats WHERE tablename = 'parts' AND inherited"), "2");
    assert_eq!(
        db.scalar("SELECT sum(reltuples)::bigint FROM pg_class WHERE relname IN ('parts_a', 'parts_b')"),
        "29000"
    );

    // A session holding the table's lock: the load waits 10 s, then says so.
    let holder = db.session();
    holder.execute("BEGIN; LOCK TABLE quiet IN SHARE UPDATE EXCLUSIVE MODE").unwrap();
    let (run, analysis) = load(&last, "quiet", &[]);
    let said = "not analyzed (autovacuum is off for the table): another session held the table for 10s; run ANALYZE \
                \"public\".\"quiet\" once nothing else holds it";
    assert!(run.stderr.contains(said), "{}", run.stderr);
    assert!(!run.stdout.contains("analyzed in"), "{}", run.stdout);
    assert_eq!(analysis["done"].as_bool(), Some(false));
    assert_eq!((db.count("quiet"), reltuples("quiet")), (30_000, "11000".into()));
    holder.execute("ROLLBACK").unwrap();
}

/// A Ctrl-C, then a kill, while ANALYZE waits for the table (another
/// session holds it): the job is marked finished in ANALYZE's transaction,
/// so each leaves it unfinished (the Ctrl-C with exit 3 and a word on
/// why), and the same command run again finishes it and analyzes the
/// table, loading nothing twice. Were the job marked first, the run again
/// would find it finished and leave the table unanalyzed for good.
#[test]
fn a_kill_while_analyzing_leaves_the_job_for_the_run_that_analyzes() {
    let db = TestDb::new();
    db.execute("CREATE TABLE quiet (id int, kind text) WITH (autovacuum_enabled = off)");
    let data: String = (0..5_000).map(|i| format!("{i},k{}\n", i % 7)).collect();
    let file = db.file("q.csv", data.as_bytes());
    let conn = db.conninfo();
    let report = db.dir.path().join("r.json");
    let args =
        ["load", file.to_str().unwrap(), "--db", &conn, "--table", "quiet", "--report", report.to_str().unwrap()];
    let holder = db.session();
    let waiting = "SELECT 1 FROM pg_locks WHERE relation = 'quiet'::regclass AND NOT granted";
    let start_waiting_for_the_table = || {
        holder.execute("BEGIN; LOCK TABLE quiet IN SHARE UPDATE EXCLUSIVE MODE").unwrap();
        let child = sluice_command().args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while db.session().query(waiting, &[]).unwrap().is_empty() {
            assert!(Instant::now() < deadline, "sluice never waited for the table in 60 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        child
    };
    let child = start_waiting_for_the_table();
    // SAFETY: kill(2) on our own child, which has not been reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let stopped = child.finish();
    holder.execute("ROLLBACK").unwrap();
    let stderr = String::from_utf8_lossy(&stopped.stderr);
    assert_eq!(stopped.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("not analyzed (interrupted): the job is left unfinished"), "{stderr}");
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.jobs WHERE finished_at IS NULL"), "1");

    let mut child = start_waiting_for_the_table();
    child.kill().unwrap();
    assert!(child.finish().status.code().is_none(), "the load ended before the kill: the test lost its teeth");
    holder.execute("ROLLBACK").unwrap();
    assert_eq!(db.count("quiet"), 5_000, "the chunks were committed before the finish");
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.jobs WHERE finished_at IS NULL"), "1");

    let again = sluice_command().args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    assert!(stdout.contains(", analyzed in ") && stdout.contains("(autovacuum is off for the table)"), "{stdout}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(report["summary"]["analysis"]["done"].as_bool(), Some(true), "{report}");
    assert_eq!(db.count("quiet"), 5_000, "nothing loaded twice");
    assert_eq!(db.scalar("SELECT reltuples::bigint FROM pg_class WHERE relname = 'quiet'"), "5000");
    assert_eq!(db.scalar("SELECT count(*) FROM pg_stats WHERE tablename = 'quiet'"), "2");
}
