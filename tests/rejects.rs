//! A bad record costs only itself: every error class is isolated to its
//! record, the rest loads, and `read = loaded + rejected` holds.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use base64::Engine;
use serde_json::Value;

use crate::util::{assert_accounts, fuzz_seed, sluice, Rng, Run, Spoiled, TestDb};

fn read_rejects(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn report(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// What a load with a rejects file and a JSON report produced.
struct Loaded {
    run: Run,
    rejects_path: PathBuf,
    rejects: Vec<Value>,
    report: Value,
}

/// Loads `file` into `table` with a rejects file and a report, plus `extra`.
impl Loaded {
    /// The rejected records' lines, in order.
    fn sorted_lines(&self) -> Vec<u64> {
        let mut lines: Vec<u64> = self.rejects.iter().map(|r| r["line"].as_u64().unwrap()).collect();
        lines.sort_unstable();
        lines
    }
}

fn load_with_rejects(db: &TestDb, file: &Path, table: &str, extra: &[&str]) -> Loaded {
    let rejects_path = db.dir.path().join(format!("{table}.rejects.jsonl"));
    let report_path = db.dir.path().join(format!("{table}.report.json"));
    let _ = std::fs::remove_file(&rejects_path);
    let (file, rejects, report_arg) =
        (file.to_str().unwrap(), rejects_path.to_str().unwrap(), report_path.to_str().unwrap());
    let args = [&[file, "--table", table, "--rejects", rejects, "--report", report_arg][..], extra].concat();
    let run = db.load(&args);
    let report = if report_path.exists() { report(&report_path) } else { Value::Null };
    Loaded { run, rejects: read_rejects(&rejects_path), rejects_path, report }
}

/// The COPY statements a load's isolation took, from its JSON report.
fn isolation_copies(report: &Value) -> u64 {
    report["chunks"].as_array().unwrap().iter().map(|c| c["isolation_copies"].as_u64().unwrap()).sum()
}

/// Asserts that a JSON report's warnings include one containing `warning`.
#[track_caller]
fn assert_reported(report: &Value, warning: &str) {
    let warnings = report["warnings"].as_array().unwrap();
    assert!(warnings.iter().any(|w| w.as_str().unwrap().contains(warning)), "{warnings:?}");
}

/// Records a BEFORE INSERT trigger returns NULL for are taken by the server
/// but not counted as rows (COPY counts like INSERT). They are neither
/// loaded nor rejected: a filter drops them, inheritance partitioning
/// stores them in a child. Errors the trigger raises are rejects.
#[test]
fn records_a_trigger_returns_null_for_are_suppressed_not_rejected() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE events (id int, day date, note text); \
         CREATE TABLE events_old (CHECK (day < '2025-01-01')) INHERITS (events); \
         CREATE TABLE events_new (CHECK (day >= '2025-01-01')) INHERITS (events); \
         CREATE FUNCTION route() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
           IF NEW.id = 777 THEN RAISE EXCEPTION 'id 777 is refused'; END IF; \
           IF NEW.id % 10 = 0 THEN RETURN NEW; END IF; \
           IF NEW.day < '2025-01-01' THEN INSERT INTO events_old VALUES (NEW.*); \
           ELSE INSERT INTO events_new VALUES (NEW.*); END IF; RETURN NULL; END $$; \
         CREATE TRIGGER route BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION route()",
    );
    let mut data = String::new();
    for i in 0..3000 {
        data.push_str(&format!("{i}\t{}-03-01\tnote {i}\n", 2024 + i % 2));
    }
    data.push_str("x\t2024-01-01\tnot a number\n");
    let file = db.file("events.tsv", data.as_bytes());
    for format in ["text", "binary"] {
        db.execute("TRUNCATE events, events_old, events_new");
        let loaded =
            load_with_rejects(&db, &file, "events", &["--chunk-size", "4KiB", "--copy-format", format, "--restart"]);
        assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
        let lines = loaded.sorted_lines();
        assert_eq!(lines, [778, 3001], "{format}: only the trigger's error and the bad number are rejects");
        assert_eq!(db.count("ONLY events"), 300, "{format}: every tenth row stays in the parent");
        assert_eq!(db.count("events_old") + db.count("events_new"), 2699, "{format}");
        let s = &loaded.report["summary"];
        assert_eq!((s["rows_loaded"].as_u64(), s["suppressed"].as_u64()), (Some(300), Some(2699)), "{format}: {s}");
        assert_accounts(&loaded.report);
        assert!(
            loaded.run.stdout.contains(", rejected 2, 2,699 taken by a trigger that returned NULL"),
            "{}",
            loaded.run.stdout
        );
        assert!(!loaded.run.stderr.contains("carriage"), "{}", loaded.run.stderr);
        let binary_chunks = s["copy"]["binary_chunks"].as_u64().unwrap();
        assert_eq!(binary_chunks > 0, format == "binary", "{s}");
    }
}

/// A view with an INSTEAD OF INSERT trigger is a target, as for COPY and
/// INSERT: its trigger writes the rows, and its errors are rejects. It has
/// nothing to defer, nothing to analyze, and --truncate is refused before
/// anything is done.
#[test]
fn a_view_with_an_instead_of_trigger_is_loaded_through_it() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE people (id int PRIMARY KEY, name text); \
         CREATE VIEW people_v AS SELECT id, name FROM people; \
         CREATE FUNCTION people_ins() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
           IF NEW.id = 500 THEN RAISE EXCEPTION 'id 500 is refused'; END IF; \
           INSERT INTO people VALUES (NEW.id, upper(NEW.name)); RETURN NEW; END $$; \
         CREATE TRIGGER people_ins INSTEAD OF INSERT ON people_v FOR EACH ROW EXECUTE FUNCTION people_ins()",
    );
    let mut data: String = (0..2000).map(|i| format!("{i},name {i}\n")).collect();
    data.push_str("7,duplicate\n");
    let file = db.file("people.csv", data.as_bytes());
    for format in ["text", "binary"] {
        db.execute("TRUNCATE people");
        // One worker: of two rows with one key, the first-loaded wins, which
        // is the first in the file only when chunks load in order (with two
        // workers, a busy CI host once loaded the last chunk first).
        // A view has no statistics: --analyze says so, auto says nothing.
        let analyze: &[&str] = if format == "binary" { &["--analyze"] } else { &[] };
        let args =
            [&["--chunk-size", "4KiB", "--copy-format", format, "--restart", "--workers", "1"][..], analyze].concat();
        let loaded = load_with_rejects(&db, &file, "people_v", &args);
        assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
        let told = "not analyzed (--analyze): public.people_v is a view, which has no statistics; analyze the tables";
        assert_eq!(loaded.run.stderr.contains(told), format == "binary", "{}", loaded.run.stderr);
        let lines = loaded.sorted_lines();
        assert_eq!(lines, [501, 2001], "{format}: the trigger's error and the duplicate key");
        assert_eq!(db.count("people"), 1999, "{format}");
        assert_eq!(db.scalar("SELECT name FROM people WHERE id = 7"), "NAME 7", "{format}: the trigger wrote it");
        assert_accounts(&loaded.report);
        let deferred = &loaded.report["summary"]["deferred"];
        assert_eq!(deferred["why_not"], "a view: its INSTEAD OF trigger writes the rows", "{deferred}");
        let path = deferred["table_path"].as_str().unwrap();
        assert!(path.starts_with("a view: its INSTEAD OF trigger writes the rows, so COPY FREEZE"), "{path}");
        let binary_chunks = loaded.report["summary"]["copy"]["binary_chunks"].as_u64().unwrap();
        assert_eq!(binary_chunks > 0, format == "binary", "{format}");
    }
    let run = db.load(&[file.to_str().unwrap(), "--table", "people_v", "--truncate", "--restart"]);
    run.assert_refused("--truncate works on tables, and public.people_v is a view");
    assert_eq!(db.count("people"), 1999, "nothing was truncated");
}

/// A foreign table (postgres_fdw, back to this same server) is a target
/// only with --at-least-once: the server that stores its rows commits them
/// before sluice's ledger row can be, so a crash between the two would load
/// a chunk twice. With the flag, the other side's errors (its key, its
/// CHECK) and a bad number are rejects, nothing is deferred or unlogged,
/// and the loading sessions commit synchronously (a trigger refuses rows
/// otherwise). A partitioned table
/// with a foreign partition is refused and loaded alike.
#[test]
fn foreign_tables_are_loaded_only_with_at_least_once() {
    let db = TestDb::new();
    let server = crate::util::server();
    db.execute(&format!(
        "CREATE EXTENSION postgres_fdw; \
         CREATE SERVER here FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '{}', port '{}', dbname '{}'); \
         CREATE USER MAPPING FOR CURRENT_USER SERVER here OPTIONS (user '{}'); \
         CREATE TABLE people (id int PRIMARY KEY, name text CHECK (name <> 'nobody')); \
         CREATE FOREIGN TABLE people_f (id int, name text) SERVER here OPTIONS (table_name 'people'); \
         CREATE FUNCTION synchronous_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
           IF current_setting('synchronous_commit') <> 'on' THEN RAISE EXCEPTION 'asynchronous commit'; END IF; \
           RETURN NEW; END $$; \
         CREATE TRIGGER synchronous_only BEFORE INSERT ON people_f FOR EACH ROW EXECUTE FUNCTION synchronous_only(); \
         CREATE TABLE events (id int CHECK (id >= 0), day date) PARTITION BY RANGE (day); \
         CREATE TABLE events_old PARTITION OF events FOR VALUES FROM ('2020-01-01') TO ('2025-01-01'); \
         CREATE TABLE events_new_there (id int, day date); \
         CREATE FOREIGN TABLE events_new PARTITION OF events FOR VALUES FROM ('2025-01-01') TO ('2030-01-01') \
           SERVER here OPTIONS (table_name 'events_new_there'); \
         CREATE INDEX ON events (day)",
        server.socket_dir().display(),
        server.port,
        db.name,
        sluice::local_pg::SUPERUSER
    ));
    let mut data: String = (0..3000).map(|i| format!("{i},name {i}\n")).collect();
    data.push_str("7,again\n3001,nobody\nx,not a number\n");
    let file = db.file("people.csv", data.as_bytes());
    let refused = load_with_rejects(&db, &file, "people_f", &["--chunk-size", "4KiB"]);
    assert_eq!(refused.run.code, 2, "{}", refused.run.output());
    let says = "public.people_f is a foreign table (server here): the server that stores";
    assert!(
        refused.run.stderr.contains(says) && refused.run.stderr.contains("--at-least-once"),
        "{}",
        refused.run.stderr
    );
    assert_eq!(db.count("people"), 0);
    let version: i32 = db.scalar("SHOW server_version_num").parse().unwrap();
    for format in ["text", "binary"] {
        db.execute("TRUNCATE people");
        // One worker: the first of two rows with one key is the first loaded.
        let args = ["--chunk-size", "4KiB", "--copy-format", format, "--restart", "--workers", "1", "--at-least-once"];
        let loaded = load_with_rejects(&db, &file, "people_f", &args);
        assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
        let lines = loaded.sorted_lines();
        assert_eq!(lines, [3001, 3002, 3003], "{format}: the other side's key and CHECK, and the bad number");
        assert_eq!(db.count("people"), 3000, "{format}");
        assert_eq!(db.scalar("SELECT name FROM people WHERE id = 7"), "name 7", "{format}");
        assert_accounts(&loaded.report);
        let deferred = &loaded.report["summary"]["deferred"];
        assert_eq!(
            deferred["why_not"],
            "a foreign table: its indexes and constraints are on server here, with its rows"
        );
        assert!(deferred["table_path"].as_str().unwrap().starts_with("a foreign table: server here"), "{deferred}");
        let binary_chunks = loaded.report["summary"]["copy"]["binary_chunks"].as_u64().unwrap();
        assert_eq!(binary_chunks > 0, format == "binary", "{format}");
        let advice = match version >= 160_000 {
            true => "ALTER FOREIGN TABLE public.people_f OPTIONS (ADD batch_size '1000')",
            false => "(COPY uses batch_size from PostgreSQL 16 on)",
        };
        assert!(loaded.run.stderr.contains(advice), "{}", loaded.run.stderr);
    }
    let doctor = crate::util::sluice(&["doctor", "--db", &db.conninfo(), "--table", "events"]).assert_ok().output();
    let says = "public.events foreign tables = public.events_new (server here, postgres_fdw): the server that stores";
    assert!(doctor.contains(says) && doctor.contains("--at-least-once"), "{doctor}");
    let unlogged = db.load(&[file.to_str().unwrap(), "--table", "people_f", "--at-least-once", "--unlogged"]);
    unlogged.assert_refused("--unlogged: public.people_f is a foreign table");
    // Negative ids break the CHECK: 4 in the local partition's years, 4 in
    // the foreign one's (where, as for COPY, the server does not check it).
    let id = |i: i64| if i % 250 == 0 || i % 250 == 5 { -i - 1 } else { i };
    let days: String = (0..1000).map(|i| format!("{},{}-06-01\n", id(i), 2020 + i % 10)).collect();
    let days = db.file("events.csv", days.as_bytes());
    let refused = db.load(&[days.to_str().unwrap(), "--table", "events"]);
    refused.assert_refused("public.events has foreign partitions (public.events_new)");
    assert_eq!(db.count("events"), 0);
    // The CHECK stays in place, as it does into any table: deferred here,
    // the rows that broke it were found by xmin after the load, which a
    // foreign partition's rows do not carry, and deleting their chunk's rows
    // to load it again left those in the foreign one.
    let loaded = load_with_rejects(&db, &days, "events", &["--at-least-once", "--chunk-size", "4KiB"]);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
    let lines = loaded.sorted_lines();
    assert_eq!(lines, [1, 251, 501, 751]);
    assert_eq!((db.count("events_old"), db.count("events_new_there")), (496, 500));
    assert_eq!(db.scalar("SELECT count(DISTINCT id) FROM events_new_there"), "500", "no row twice");
    let deferred = &loaded.report["summary"]["deferred"];
    assert_eq!(deferred["objects"], serde_json::json!(["index \"events_day_idx\""]), "{deferred}");
    assert_eq!(deferred["kept"], serde_json::json!([]), "{deferred}");
}

/// A trigger that stores every row elsewhere leaves the table empty, yet
/// the load is not taken for a wrong option when many records are bad:
/// the server took the good ones.
#[test]
fn a_trigger_taking_every_row_is_not_taken_for_nothing_loading() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE kept (id int); CREATE TABLE parent (id int); \
         CREATE FUNCTION keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
           INSERT INTO kept VALUES (NEW.id); RETURN NULL; END $$; \
         CREATE TRIGGER keep BEFORE INSERT ON parent FOR EACH ROW EXECUTE FUNCTION keep()",
    );
    let data: String = (0..2400).map(|i| if i % 2 == 0 { format!("{i}\n") } else { format!("x{i}\n") }).collect();
    let file = db.file("ids.csv", data.as_bytes());
    let loaded = load_with_rejects(&db, &file, "parent", &["--chunk-size", "4KiB", "--workers", "1"]);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
    assert_eq!(loaded.rejects.len(), 1200);
    assert_eq!((db.count("parent"), db.count("kept")), (0, 1200));
    assert_accounts(&loaded.report);
}

/// One record per error class, between good ones; `(line, sqlstate)` of
/// each bad record (line 1 is the header; "client" for sluice's own checks).
fn corpus() -> (Vec<u8>, Vec<(u64, &'static str)>) {
    let mut data = b"id,name,qty,parent\n".to_vec();
    let mut bad = Vec::new();
    let mut line = 2;
    for i in 0..300u64 {
        let good = format!("{},\"good\n{i}\",{i},1\n", 1000 + i).into_bytes();
        line += 2;
        data.extend_from_slice(&good);
        let id = 100_000 + i;
        let (record, code): (Vec<u8>, &str) = match i % 30 {
            1 => (format!("{id},missing\n").into_bytes(), "22P04"),
            3 => (format!("{id},a,1,1,extra\n").into_bytes(), "22P04"),
            5 => (format!("x{id},a,1,1\n").into_bytes(), "22P02"),
            7 => (format!("{id},much-too-long-name,1,1\n").into_bytes(), "22001"),
            9 => (b",a,1,1\n".to_vec(), "23502"),
            11 => (format!("{id},a,-5,1\n").into_bytes(), "23514"),
            13 => (format!("{},dup,1,1\n", 1000 + i - 2).into_bytes(), "23505"),
            15 => (format!("{id},a,1,999\n").into_bytes(), "23503"),
            17 => ([format!("{id},caf").as_bytes(), b"\xe9,1,1\n"].concat(), "client"),
            19 => (format!("{id},nul\0,1,1\n").into_bytes(), "client"),
            _ => continue,
        };
        bad.push((line, code));
        line += 1;
        data.extend_from_slice(&record);
    }
    (data, bad)
}

fn corpus_table(db: &TestDb, table: &str) {
    db.execute(&format!(
        "CREATE TABLE {table} (id int PRIMARY KEY, name varchar(10), qty int NOT NULL CHECK (qty >= 0),
                               parent int REFERENCES parent)"
    ));
}

/// Every error class is rejected with its line and SQLSTATE; every good
/// record loads; the same for any workers and chunk size.
#[test]
fn each_error_class_costs_only_its_record() {
    let db = TestDb::new();
    let (data, mut bad) = corpus();
    db.execute("CREATE TABLE parent (id int PRIMARY KEY); INSERT INTO parent VALUES (1)");
    let file = db.file("corpus.csv", &data);
    bad.sort();
    let mut reference: Option<Vec<(u64, u64)>> = None;
    for (workers, chunk) in [("1", "1KiB"), ("2", "64KiB"), ("8", "1KiB"), ("2", "64MiB")] {
        let table = format!("t_{workers}_{}", chunk.to_lowercase());
        corpus_table(&db, &table);
        let extra = ["--header", "--workers", workers, "--chunk-size", chunk];
        let Loaded { run, rejects_path, rejects: found, report: r } = load_with_rejects(&db, &file, &table, &extra);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(run.stderr.contains(&format!("see {}", rejects_path.display())), "{}", run.stderr);
        let lines: Vec<(u64, String)> = found
            .iter()
            .map(|r| (r["line"].as_u64().unwrap(), r["sqlstate"].as_str().unwrap_or("client").to_string()))
            .collect();
        let expected: Vec<(u64, String)> = bad.iter().map(|(l, c)| (*l, c.to_string())).collect();
        // In input order, however many workers committed them in whichever order.
        assert_eq!(lines, expected, "workers {workers}, chunk {chunk}");
        assert_eq!(db.count(&table), 300, "every good record loaded");
        assert_accounts(&r);
        assert_eq!(r["summary"]["rejected"], bad.len() as u64);
        for reject in &found {
            let raw = reject["raw"].as_str().map(|s| s.as_bytes().to_vec()).unwrap_or_default();
            let offset = reject["byte"].as_u64().unwrap() as usize;
            if !raw.is_empty() {
                assert_eq!(&data[offset..offset + raw.len()], &raw[..], "raw record at its byte offset");
            }
        }
        let mut ids: Vec<(u64, u64)> =
            found.iter().map(|r| (r["line"].as_u64().unwrap(), r["record"].as_u64().unwrap())).collect();
        ids.sort();
        match &reference {
            None => reference = Some(std::mem::take(&mut ids)),
            Some(first) => assert_eq!(&ids, first, "same rejects whatever the workers and chunk size"),
        }
    }
}

/// Values isolation suspects for their shape (no digit in a date or a
/// number, a day that does not exist, more digits than `numeric(p,s)`
/// holds, a boolean, enum label or uuid the server does not take) are rejected
/// on their lines, and a value it suspects wrongly (an enum label written
/// with an escape) still loads: the guesses only choose statements.
#[test]
fn values_of_the_wrong_shape_are_rejected_and_wrong_guesses_still_load() {
    let db = TestDb::new();
    db.execute(
        "CREATE TYPE mood AS ENUM ('ok', 'tab\there'); \
         CREATE TABLE shapes (id int, d date, n numeric(8,2), yes boolean, m mood, u uuid); CREATE TABLE want (LIKE shapes)",
    );
    let bad = [
        (1, "N/A"),
        (2, ""),
        (3, "maybe"),
        (4, "Sad"),
        (1, "-"),
        (2, "null"),
        (1, "0000-00-00"),
        (2, "1234567"),
        (5, "n/a"),
    ];
    let spoiled = Spoiled::new(2000, (50, 25), &bad, |i| {
        let mood = if i % 7 == 0 { "tab\\there" } else { "ok" };
        let uuid = format!("{{{i:08x}-0000-4000-8000-{:012X}}}", i * 7);
        let mut fields = vec![
            i.to_string(),
            format!("2024-03-{:02}", 1 + i % 28),
            format!("{i}.5"),
            "yes".into(),
            mood.into(),
            uuid,
        ];
        if i % 11 == 0 {
            fields[1] = "infinity".into();
            fields[2] = " NaN ".into();
            fields[3] = "OF".into();
        }
        fields
    });
    let (all, bad_lines) = (&spoiled.all, &spoiled.bad_lines);
    let file = db.file("shapes.tsv", all.as_bytes());
    let Loaded { run, rejects, report, .. } =
        load_with_rejects(&db, &file, "shapes", &["--workers", "2", "--chunk-size", "4KiB"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let lines: Vec<u64> = rejects.iter().map(|r| r["line"].as_u64().unwrap()).collect();
    assert_eq!(&lines, bad_lines);
    assert_accounts(&report);
    let kept = spoiled.kept();
    db.psql_copy("want", &db.file("kept.tsv", kept.as_bytes()), "");
    assert_eq!(db.count("shapes"), 2000 - bad_lines.len() as u64);
    assert_eq!(db.scalar("SELECT count(*) FROM (TABLE shapes EXCEPT ALL TABLE want) d"), "0");
    let escaped = kept.lines().filter(|l| l.contains("\ttab\\there\t")).count();
    assert!(escaped > 250, "{escaped}");
    assert_eq!(db.scalar("SELECT count(*) FROM shapes WHERE m = E'tab\\there'"), escaped.to_string());
}

/// The record named by line, record number and byte offset, mapped from the
/// server's `COPY t, line N` through quoted newlines, in LF, CRLF and CR files;
/// --max-errors stops the load with exit code 5.
#[test]
fn reject_names_file_line_record_and_byte() {
    for eol in ["\n", "\r\n", "\r"] {
        let db = TestDb::new();
        db.execute("CREATE TABLE t (id int, note text)");
        let mut data = format!("id,note{eol}");
        for i in 0..400 {
            data.push_str(&format!("{i},\"two{eol}lines\"{eol}"));
        }
        let byte = data.len();
        data.push_str(&format!("x1,bad{eol}"));
        for i in 0..50 {
            data.push_str(&format!("{i},ok{eol}"));
        }
        let file = db.file("bad.csv", data.as_bytes());
        let rejects = db.dir.path().join("r.jsonl");
        let path = file.to_str().unwrap();
        let common = [path, "--table", "t", "--header", "--chunk-size", "1KiB", "--rejects", rejects.to_str().unwrap()];
        let run = db.load(&common);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert_eq!(db.count("t"), 450);
        let found = read_rejects(&rejects);
        assert_eq!(found.len(), 1);
        let r = &found[0];
        assert_eq!(r["line"], 1 + 400 * 2 + 1, "line ends {eol:?}");
        assert_eq!(r["record"], 401);
        assert_eq!(r["byte"], byte as u64);
        assert_eq!(r["sqlstate"], "22P02");
        assert_eq!(r["column"], "id");
        assert_eq!(r["raw"], format!("x1,bad{eol}"));
        assert_eq!(r["reason"], "invalid input syntax for type integer: \"x1\"");
        // The same reject committed in the database with the chunk.
        let stored = "SELECT count(*) || ' ' || min(line) || ' ' || min(sqlstate) || ' ' || \
                      min(convert_from(raw, 'UTF8')) FROM sluice.rejects WHERE target_table = 'public.t'";
        assert_eq!(db.scalar(stored), format!("1 802 22P02 x1,bad{eol}"));
        db.execute("TRUNCATE t");
        let run = db.load(&[&common[..], &["--max-errors", "0", "--workers", "1", "--restart"]].concat());
        assert_eq!(run.code, 5, "{}", run.stderr);
        let expected = format!(
            "sluice: stopped: 1 record rejected, more than --max-errors 0 allows; the last: {path}: line 802 \
             (record 401, byte {byte}): column \"id\": invalid input syntax for type integer: \"x1\" [22P02]"
        );
        assert_eq!(run.stderr.lines().next().unwrap(), expected);
    }
}

/// A file of nothing but bad records loads nothing, rejects everything,
/// and the counts still add up.
#[test]
fn a_file_of_only_bad_records() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, n int)");
    let data: String = (0..500).map(|i| format!("x{i},{i}\n")).collect();
    let file = db.file("allbad.csv", data.as_bytes());
    let Loaded { run, rejects, report: r, .. } = load_with_rejects(&db, &file, "t", &["--chunk-size", "1KiB"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(db.count("t"), 0);
    assert_eq!(rejects.len(), 500);
    assert_accounts(&r);
    assert_eq!(r["summary"]["rejected"], 500);
}

/// A header line loaded as a record (no `--header`) is rejected like any
/// bad record, and the load says what it looks like and which option skips
/// it: for every file whose first line names columns of the table (in any
/// case, quoted or not) and holds no number or empty field, and for no
/// other rejected first line.
#[test]
fn a_header_loaded_as_a_record_is_named_with_the_option_that_skips_it() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, \"Name\" text, day date)");
    db.file("part-1.csv", b"id,Name,day\n1,a,2024-01-02\n");
    db.file("part-2.csv", b"\"ID\", name ,DAY\n2,b,2024-01-03\n");
    db.file("part-3.csv", b"x,c,2024-01-04\n3,c,2024-01-04\n");
    // A header that names a column another way (customer for "Name").
    db.file("part-4.csv", b"id,customer,day\n4,d,2024-01-05\n");
    let (glob, rejects) = (db.dir.path().join("part-*.csv"), db.dir.path().join("t.rejects.jsonl"));
    let load = |input: &str, extra: &[&str]| {
        let _ = std::fs::remove_file(&rejects);
        db.load(&[&[input, "--table", "t", "--rejects", rejects.to_str().unwrap()][..], extra].concat())
    };
    let run = load(glob.to_str().unwrap(), &[]);
    assert_eq!(run.code, 1, "{}", run.output());
    assert_eq!(db.count("t"), 4);
    let said = "part-1.csv and 2 other files name columns of the table and were rejected: they look like headers; \
                --header skips each file's first line";
    assert!(run.stderr.contains(said), "{}", run.stderr);
    db.execute("TRUNCATE t");
    let first = db.dir.path().join("part-1.csv");
    let run = load(first.to_str().unwrap(), &["--header", "--restart"]);
    assert_eq!((run.code, db.count("t")), (0, 1), "{}", run.output());
    assert!(!run.stderr.contains("header"), "{}", run.stderr);
    let third = db.dir.path().join("part-3.csv");
    let run = load(third.to_str().unwrap(), &["--restart"]);
    assert_eq!(run.code, 1, "{}", run.output());
    assert!(!run.stderr.contains("looks like a header"), "a bad first line names no column: {}", run.stderr);
}

/// Without `--header`, a first line that names every column loaded, each
/// of which takes it as a value (text, a long enough varchar), is refused
/// before anything loads, since it would load as a row without a reject;
/// `--header` skips it and `--no-header` loads it. One that a column
/// refuses is left to the server, which rejects it.
#[test]
fn a_header_that_text_columns_would_take_as_a_row_is_refused() {
    let db = TestDb::new();
    db.execute("CREATE TABLE staging (id text, \"Name\" varchar(10)); CREATE TABLE short (id varchar(1), name text)");
    let file = db.file("head.csv", b"ID,name\n1,a\n");
    let file = file.to_str().unwrap();
    let run = db.load(&[file, "--table", "staging"]);
    let said = "head.csv: its first line (ID,name) names the columns loaded, and each of them takes any text, so it \
                would load as a row: if it is a header, pass --header (it is skipped, and the columns it names load \
                by name); if it is a record, pass --no-header";
    assert_eq!((run.code, db.count("staging")), (2, 0), "{}", run.output());
    assert!(run.stderr.contains(said), "{}", run.stderr);
    let run = db.load(&[file, "--table", "staging", "--header"]);
    assert_eq!((run.code, db.count("staging")), (0, 1), "{}", run.output());
    let run = db.load(&[file, "--table", "staging", "--no-header", "--restart"]);
    assert_eq!((run.code, db.count("staging")), (0, 3), "{}", run.output());
    assert_eq!(db.scalar("SELECT count(*) FROM staging WHERE id = 'ID'"), "1");
    let run = db.load(&[file, "--table", "short"]);
    assert_eq!((run.code, db.count("short")), (1, 1), "{}", run.output());
    assert!(run.stderr.contains("it looks like a header"), "{}", run.stderr);
    // A column named twice: more fields than columns, which the server rejects.
    let twice = db.file("twice.csv", b"id,name,name\n2,b\n");
    let run = db.load(&[twice.to_str().unwrap(), "--table", "staging"]);
    assert_eq!((run.code, db.count("staging")), (1, 4), "{}", run.output());
    let tsv = db.file("head.tsv", b"name\tid\nb\t2\n");
    let tsv = tsv.to_str().unwrap();
    let run = db.load(&[tsv, "--table", "staging", "--columns", "Name,id"]);
    assert!(run.code == 2 && run.stderr.contains("its first line (name\tid) names the columns"), "{}", run.stderr);
}

/// Files that each begin with their header, joined with `cat` (the second
/// with a byte-order mark, its header ending in CR LF), loaded with `--header`: the
/// header met again among the records is rejected, with its line and a
/// reason that says what it is, before COPY sees it. Into text columns it
/// used to load as a row, exit 0; into typed ones it is rejected without
/// isolation. Every other record loads, and the counts add up.
#[test]
fn a_header_repeated_among_the_records_is_rejected_as_one() {
    let db = TestDb::new();
    db.execute("CREATE TABLE staging (id text, name text); CREATE TABLE typed (id int, name text)");
    let joined =
        [&b"id,name\n1,a\n2,b\n"[..], b"\xEF\xBB\xBFid,name\r\n3,c\n", b"id,name\n4,\"d\nid,name\"\n"].concat();
    let file = db.file("joined.csv", &joined);
    for table in ["staging", "typed"] {
        let Loaded { run, rejects, report, .. } = load_with_rejects(&db, &file, table, &["--header"]);
        assert_eq!((run.code, db.count(table)), (1, 4), "{}", run.output());
        let rejected: Vec<(u64, &str)> =
            rejects.iter().map(|r| (r["line"].as_u64().unwrap(), r["raw"].as_str().unwrap())).collect();
        assert_eq!(rejected, [(4, "\u{feff}id,name\r\n"), (6, "id,name\n")], "{}", run.stderr);
        assert!(rejects.iter().all(|r| r["reason"].as_str().unwrap().starts_with("the file's header again")));
        assert_eq!(isolation_copies(&report), 0, "no COPY refused them");
        assert_accounts(&report);
        let said = "2 records were rejected that repeat the header (the first: ";
        assert!(run.stderr.contains(said), "{}", run.stderr);
    }
    assert_eq!(db.scalar("SELECT string_agg(name, ' ' ORDER BY id) FROM staging"), "a b c d\nid,name");
    // In two runs (--limit, then on from the line it stopped at): watched
    // for from that line too.
    db.execute("CREATE TABLE halves (id text, name text)");
    let first = load_with_rejects(&db, &file, "halves", &["--header", "--limit", "2"]);
    assert_eq!((first.run.code, db.count("halves")), (0, 2), "{}", first.run.output());
    let rest = load_with_rejects(&db, &file, "halves", &["--header"]);
    assert!(rest.run.stderr.contains("joined.csv from line 4 (byte 16)"), "{}", rest.run.stderr);
    assert_eq!((rest.run.code, rest.sorted_lines()), (1, vec![4, 6]), "{}", rest.run.output());
    assert_eq!(db.scalar("SELECT string_agg(id, ' ' ORDER BY id) FROM halves"), "1 2 3 4");
}

/// `--header` on a file without one: its first record, skipped, reads as
/// a record (a number and a date where the records under it hold numbers
/// and dates), so the load says so, with the command that loads it alone.
/// A header of labels, or one that names a column (`region,2023,2024`), is
/// a header.
#[test]
fn a_record_that_header_skips_is_said_where_it_reads_as_one() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text, day date); CREATE TABLE yr (region text, y2023 int, y2024 int)");
    let load = |name: &str, content: &[u8], table: &str| {
        let file = db.file(name, content);
        db.load(&[file.to_str().unwrap(), "--table", table, "--header", "--restart"])
    };
    let run = load("nohead.csv", b"\xEF\xBB\xBF1,alice,2024-01-02\r\n2,bob,2024-01-03\r\n3,carol,\r\n", "t");
    assert_eq!((run.code, db.count("t")), (0, 2), "{}", run.output());
    let said = "nohead.csv (1,alice,2024-01-02), which --header skips as its header, reads as a record: under each \
                column that holds numbers, dates or other typed values in the records after it, it holds one too. \
                If the file has no header, that record is not loaded; load it alone, with the same format flags: \
                head -n 1 ";
    assert!(run.stderr.contains(said) && run.stderr.contains("| sluice load - --table public.t"), "{}", run.stderr);
    for (name, content, table) in [
        ("labels.csv", &b"Identifier,Person,When\n1,a,2024-01-02\n"[..], "t"),
        ("names.csv", b"id,name,day\n1,a,2024-01-02\n", "t"),
        ("years.csv", b"region,2023,2024\nnorth,1,2\n", "yr"),
    ] {
        let run = load(name, content, table);
        assert_eq!(run.code, 0, "{}", run.output());
        assert!(!run.stderr.contains("reads as a record"), "{name}: {}", run.stderr);
    }
}

/// A file in `encoding` with lines that it can not read.
struct Unreadable {
    encoding: &'static str,
    file: Vec<u8>,
    /// 1-based lines and their bytes as the rejects file shows them.
    bad: Vec<(u64, Vec<u8>)>,
    /// The reason's start.
    reason: &'static str,
}

/// Shift_JIS with a lead byte 0x82 before a space (malformed: one byte),
/// and UTF-16LE with an unpaired surrogate whose low byte is a line feed
/// (which must not end the line). Good lines hold non-ASCII text.
fn unreadable_files() -> Vec<Unreadable> {
    let (mut sjis, mut utf16) = (Vec::new(), Vec::new());
    let (mut sjis_bad, mut utf16_bad) = (Vec::new(), Vec::new());
    let to_utf16 = |text: &str| text.encode_utf16().flat_map(u16::to_le_bytes).collect::<Vec<u8>>();
    for i in 0..2000u64 {
        let line = i + 1;
        if i % 97 == 5 {
            let (before, after) = (format!("{i},x"), format!(" y,{}.5\n", i % 10));
            let bytes = [before.as_bytes(), b"\x82", after.as_bytes()].concat();
            sjis_bad.push((line, bytes.clone()));
            sjis.extend_from_slice(&bytes);
            utf16.extend([to_utf16(&before), vec![0x0A, 0xD8], to_utf16(&after)].concat());
            utf16_bad.push((line, [before.as_bytes(), &[0x0A, 0xD8], after.as_bytes()].concat()));
        } else {
            sjis.extend([format!("{i},").as_bytes(), b"\x82\xa0", format!("{i},{}.25\n", i % 100).as_bytes()].concat());
            utf16.extend(to_utf16(&format!("{i},\u{3042}{i},{}.25\n", i % 100)));
        }
    }
    vec![
        Unreadable { encoding: "SJIS", file: sjis, bad: sjis_bad, reason: "0x82 is not valid Shift_JIS" },
        Unreadable { encoding: "utf-16le", file: utf16, bad: utf16_bad, reason: "0x0a 0xd8 is not valid UTF-16LE" },
    ]
}

/// A record its encoding can not read is rejected alone, with its bytes as
/// they were in the file, as text or binary and for any workers and chunk
/// size; the lines around it load. psql stops the whole COPY at such a byte.
/// In a SQL_ASCII database, which checks no encoding, nothing of the bad
/// records loads either.
#[test]
fn unreadable_bytes_reject_their_record_only() {
    let db = TestDb::new();
    let ascii = format!("{}_ascii", db.name);
    db.execute(&format!("CREATE DATABASE {ascii} ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"));
    let ascii_db = crate::util::server().conninfo(&ascii);
    let settings = [("1", "1KiB", "text"), ("2", "4KiB", "binary"), ("8", "1KiB", "auto"), ("2", "64MiB", "binary")];
    for case in unreadable_files() {
        let file = db.file(&format!("{}.csv", case.encoding), &case.file);
        for (k, (workers, chunk, copy_format)) in settings.into_iter().enumerate() {
            let table = format!("t_{}_{k}", case.encoding.replace('-', "_"));
            let create = format!("CREATE TABLE {table} (id int, name text, amount numeric)");
            db.execute(&create);
            let extra = ["--encoding", case.encoding, "--workers", workers, "--chunk-size", chunk];
            let extra = [&extra[..], &["--copy-format", copy_format]].concat();
            let Loaded { run, rejects, report: r, .. } = load_with_rejects(&db, &file, &table, &extra);
            let what = format!("{} workers {workers} chunk {chunk} {copy_format}", case.encoding);
            assert_eq!(run.code, 1, "{what}: {}", run.stderr);
            let found: Vec<(u64, Vec<u8>)> = rejects
                .iter()
                .map(|j| {
                    let reason = j["reason"].as_str().unwrap();
                    assert!(reason.starts_with(case.reason), "{what}: {reason}");
                    let raw = base64::engine::general_purpose::STANDARD.decode(j["raw_base64"].as_str().unwrap());
                    (j["line"].as_u64().unwrap(), raw.unwrap())
                })
                .collect();
            assert_eq!(found, case.bad, "{what}");
            assert_accounts(&r);
            let good = 2000 - case.bad.len() as u64;
            assert_eq!(db.count(&table), good, "{what}");
            let read_right = format!("SELECT count(*) FROM {table} WHERE name = chr(12354) || id");
            assert_eq!(db.scalar(&read_right), good.to_string(), "{what}");
        }
        let conninfo = ascii_db.as_str();
        let session = sluice::sink::postgres::PgTarget::new(Some(conninfo)).connect().unwrap();
        session.execute("DROP TABLE IF EXISTS t; CREATE TABLE t (id int, name text, amount numeric)").unwrap();
        let file = file.to_str().unwrap();
        let args =
            ["load", "--db", conninfo, file, "--table", "t", "--encoding", case.encoding, "--chunk-size", "1KiB"];
        let run = crate::util::sluice(&args);
        assert_eq!(run.code, 1, "{}: {}", case.encoding, run.stderr);
        let loaded = session.query("SELECT count(*)::text FROM t", &[]).unwrap();
        assert_eq!(loaded[0][0].as_deref(), Some((2000 - case.bad.len()).to_string().as_str()), "{}", case.encoding);
    }
}

/// Rejects sent to a pipe (`--rejects >(gzip > r.gz)`, or a named one) all
/// arrive, and the pipe stays a pipe: it is checked by its permissions, not
/// opened before the load (closing it would end its reader's input), and
/// never replaced by a file in input order.
#[test]
fn rejects_go_to_a_pipe() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, n int)");
    let data: String =
        (0..5000).map(|i| if i % 50 == 3 { format!("x{i},{i}\n") } else { format!("{i},{i}\n") }).collect();
    let file = db.file("d.csv", data.as_bytes());
    let fifo = db.dir.path().join("rejects.pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let args = [file.to_str().unwrap(), "--table", "t", "--chunk-size", "1KiB", "--workers", "2"];
    let run = db.load(&[&args[..], &["--rejects", fifo.to_str().unwrap()]].concat());
    assert_eq!(run.code, 1, "{}", run.stderr);
    let got = reader.join().unwrap();
    let mut lines: Vec<u64> =
        got.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["line"].as_u64().unwrap()).collect();
    lines.sort();
    assert_eq!(lines, (0..100).map(|k| 50 * k + 4).collect::<Vec<u64>>());
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "still a pipe");
    assert_eq!(db.count("t"), 4900);
}

/// Rejects fixed by hand and fed back load the rest: the table ends whole.
#[test]
fn fixed_rejects_fed_back_complete_the_table() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text)");
    let data: String =
        (0..1000).map(|i| if i % 97 == 0 { format!("#{i},n{i}\n") } else { format!("{i},n{i}\n") }).collect();
    let file = db.file("d.csv", data.as_bytes());
    let rejects = db.dir.path().join("r.jsonl");
    let run = db.load(&[
        file.to_str().unwrap(),
        "--table",
        "t",
        "--chunk-size",
        "1KiB",
        "--rejects",
        rejects.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1);
    let fixed: String = read_rejects(&rejects).iter().map(|r| r["raw"].as_str().unwrap().replace('#', "")).collect();
    let fixed_file = db.file("fixed.csv", fixed.as_bytes());
    db.load(&[fixed_file.to_str().unwrap(), "--table", "t"]).assert_ok();
    assert_eq!(db.count("t"), 1000);
    assert_eq!(db.scalar("SELECT count(DISTINCT id) FROM t"), "1000");
}

/// Invalid JSON lines are rejected by the server's json parser, one by one.
#[test]
fn invalid_json_lines_are_rejected() {
    let db = TestDb::new();
    db.execute("CREATE TABLE docs (doc jsonb NOT NULL)");
    let data: String = (0..2000)
        .map(|i| if i % 250 == 7 { format!("{{\"n\":{i},}}\n") } else { format!("{{\"n\":{i}}}\n") })
        .collect();
    let file = db.file("d.jsonl", data.as_bytes());
    let rejects = db.dir.path().join("r.jsonl");
    let run = db.load(&[
        file.to_str().unwrap(),
        "--table",
        "docs",
        "--chunk-size",
        "4KiB",
        "--rejects",
        rejects.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(db.count("docs"), 1992);
    let lines: Vec<u64> = read_rejects(&rejects).iter().map(|r| r["line"].as_u64().unwrap()).collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(sorted, (0..8).map(|k| 250 * k + 8).collect::<Vec<u64>>());
}

/// A quote left open near the end of a file would make the rest of the file
/// one record (as PostgreSQL reads it): that line alone is rejected, by
/// sluice, and the lines after it load.
#[test]
fn unterminated_quote_at_end_of_file_rejects_its_line_only() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text)");
    let mut data: String = (0..300).map(|i| format!("{i},n{i}\n")).collect();
    data.push_str("300,\"never closed\n301,x\n302,y\n");
    let file = db.file("open.csv", data.as_bytes());
    let Loaded { run, rejects: found, report: r, .. } = load_with_rejects(&db, &file, "t", &["--chunk-size", "1KiB"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(db.count("t"), 302);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["line"], 301);
    assert!(found[0]["reason"].as_str().unwrap().contains("never closed"), "{}", found[0]);
    assert_eq!(found[0]["raw"], "300,\"never closed\n");
    assert_eq!(db.scalar("SELECT string_agg(name, ' ' ORDER BY id) FROM t WHERE id > 298"), "n299 x y");
    assert_accounts(&r);
}

/// A quote left open inside a line (`12" screen`, a closing quote lost)
/// made PostgreSQL join lines up to the next quote and read every quoted
/// field after it inside out: a 2 M-line CSV loaded 0 rows. Now only that
/// line is rejected, and the rest loads as `psql \copy` loads the file
/// without it: read by range and from a gzip stream, in small chunks, with
/// quoted fields that rightly span lines left whole.
#[test]
fn a_quote_left_open_rejects_its_line_only() {
    let db = TestDb::new();
    db.execute("CREATE TABLE got (id int, body text, n text); CREATE TABLE want (LIKE got)");
    let strays = [(1001, "12\" screen"), (2003, "\"lost close"), (2998, "\"never closed")];
    let (mut data, mut clean, mut stray_lines) = (String::new(), String::new(), Vec::new());
    for i in 0..3000 {
        let body = match (strays.iter().find(|s| s.0 == i), i % 5) {
            (Some((_, stray)), _) => stray.to_string(),
            (None, 0) => format!("\"multi\nline {i}\""),
            (None, 2) => format!("\"a, b, c, d {i}\""),
            _ => format!("plain {i}"),
        };
        let line = format!("{i},{body},{}\n", i * 7);
        if strays.iter().any(|s| s.0 == i) {
            stray_lines.push(1 + data.matches('\n').count() as u64);
        } else {
            clean.push_str(&line);
        }
        data.push_str(&line);
    }
    let plain = db.file("strays.csv", data.as_bytes());
    let packed = db.file("strays.csv.gz", &crate::util::gzip(data.as_bytes()));
    db.psql_copy("want", &db.file("clean.csv", clean.as_bytes()), "with (format csv)");
    for file in [plain, packed] {
        db.execute("TRUNCATE got");
        let extra = ["--chunk-size", "1KiB", "--workers", "2"];
        let Loaded { run, rejects: found, report: r, .. } = load_with_rejects(&db, &file, "got", &extra);
        assert_eq!(run.code, 1, "{}", run.stderr);
        let mut lines: Vec<u64> = found.iter().map(|f| f["line"].as_u64().unwrap()).collect();
        lines.sort();
        assert_eq!(lines, stray_lines, "{found:?}");
        for reject in &found {
            assert!(reject["reason"].as_str().unwrap().contains("a quote opened on this line"), "{reject}");
            assert_eq!(reject["raw"].as_str().unwrap().matches('\n').count(), 1, "{reject}");
        }
        db.assert_same_rows("got", "want");
        assert_eq!(db.count("got"), 2997);
        assert_accounts(&r);
    }
}

/// A line holding only `\.` is COPY's end-of-data marker: the server
/// would stop there without an error and ignore the rest of the chunk. That
/// line is rejected and every record after it loads, in the fast path, in
/// isolation (a chunk with another bad record), and as the last line; a
/// quoted CSV value containing such a line is data.
#[test]
fn end_of_data_lines_are_rejected_and_the_rest_loads() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text)");
    let mut tsv: String = (0..200).map(|i| format!("{i}\tn{i}\n")).collect();
    tsv.insert_str(tsv.find("50\t").unwrap(), "\\.\n");
    tsv.insert_str(tsv.find("150\t").unwrap(), "\\.\r\nnot a number\tx\n");
    tsv.push_str("\\.");
    let file = db.file("eod.tsv", tsv.as_bytes());
    let Loaded { run, rejects: found, report: r, .. } = load_with_rejects(&db, &file, "t", &["--chunk-size", "1KiB"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(db.count("t"), 200);
    let lines: Vec<u64> = found.iter().map(|f| f["line"].as_u64().unwrap()).collect();
    assert_eq!(lines.len(), 4, "{found:?}");
    // The last line, without a newline, the server refuses by itself, in
    // words that depend on its version.
    let reasons = [(51, "end-of-data marker"), (152, "end-of-data marker"), (153, "integer"), (204, "")];
    for (line, reason) in reasons {
        let reject = found.iter().find(|f| f["line"] == line).unwrap_or_else(|| panic!("line {line}: {found:?}"));
        assert!(reject["reason"].as_str().unwrap().contains(reason), "{reject}");
    }
    assert_accounts(&r);
    assert!(r["warnings"].as_array().unwrap().is_empty(), "{}", r["warnings"]);

    db.execute("CREATE TABLE c (id int, name text)");
    let file = db.file("eod.csv", b"id,name\n1,\"a\n\\.\nb\"\n\\.\n3,c\n");
    let Loaded { run, rejects: found, report: r, .. } = load_with_rejects(&db, &file, "c", &["--header"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(db.scalar("SELECT string_agg(name, '|' ORDER BY id) FROM c"), "a\n\\.\nb|c");
    assert_eq!((found.len(), &found[0]["line"]), (1, &serde_json::json!(5)), "{found:?}");
    assert_accounts(&r);
}

/// A wrong option (here the delimiter) rejects every record: without
/// --max-errors the load stops once its first 1,000 were all rejected,
/// says what to check (the delimiter the record splits at into the
/// columns, when one does), and commits nothing; with --max-errors it goes
/// on and rejects every record, as asked.
#[test]
fn only_rejects_stop_the_load_unless_max_errors_is_given() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (a int, b int, c text)");
    let data: String = (0..3_000).map(|i| format!("{i},{},text{i}\n", 2 * i)).collect();
    let file = db.file("commas.tsv", data.as_bytes());
    let Loaded { run, .. } = load_with_rejects(&db, &file, "t", &[]);
    assert_eq!(run.code, 5, "{}", run.stderr);
    assert!(run.stderr.contains("records were all rejected"), "{}", run.stderr);
    let advice = "Its record has 1 field and COPY fills 3 columns (a, b, c): pass --format csv (split at ',' it has \
                  3 fields)";
    assert!(run.stderr.contains(advice), "{}", run.stderr);
    assert!(run.stderr.contains("invalid input syntax for type integer"), "{}", run.stderr);
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.rejects"), "0", "nothing committed");
    // Values the right columns refuse, found by checking the suspects
    // together: the same stop, nothing committed.
    let swapped: String = (0..3_000).map(|i| format!("text{i}\t{i}\t{i}\n")).collect();
    let swapped = db.file("swapped.tsv", swapped.as_bytes());
    let Loaded { run, .. } = load_with_rejects(&db, &swapped, "t", &[]);
    assert_eq!(run.code, 5, "{}", run.stderr);
    assert!(run.stderr.contains("invalid input syntax for type integer: \"text0\""), "{}", run.stderr);
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.rejects"), "0", "nothing committed");
    let Loaded { run, rejects: found, report: r, .. } = load_with_rejects(&db, &file, "t", &["--max-errors", "5000"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(found.len(), 3_000);
    assert_accounts(&r);
    // A file whose records mostly load is not stopped by its bad ones.
    db.execute("CREATE TABLE u (a int, b int, c text)");
    let mixed: String =
        (0..3_000).map(|i| if i % 3 == 0 { format!("{i}\t{i}\tok\n") } else { format!("{i},x\n") }).collect();
    let file = db.file("mixed.tsv", mixed.as_bytes());
    let Loaded { run, rejects: found, .. } = load_with_rejects(&db, &file, "u", &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!((db.count("u"), found.len()), (1_000, 2_000));
    // Nor by 2,000 bad values in one chunk, which the value check rejects
    // before the chunk's good records are copied.
    db.execute("CREATE TABLE w (a int, b int, c text)");
    let tenth: String = (0..20_000)
        .map(|i| if i % 10 == 0 { format!("x{i}\t{i}\tbad\n") } else { format!("{i}\t{i}\tok\n") })
        .collect();
    let file = db.file("tenth.tsv", tenth.as_bytes());
    let Loaded { run, rejects: found, report, .. } = load_with_rejects(&db, &file, "w", &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!((db.count("w"), found.len()), (18_000, 2_000));
    let copies = isolation_copies(&report);
    assert!(copies < 10, "the value check found the bad values: {copies} isolation COPYs");
    // A file of only some columns: the advice names them and --columns.
    db.execute("CREATE TABLE v (id bigint GENERATED ALWAYS AS IDENTITY, name text)");
    let names: String = (0..3_000).map(|i| format!("name {i}\n")).collect();
    let file = db.file("names.tsv", names.as_bytes());
    let Loaded { run, .. } = load_with_rejects(&db, &file, "v", &[]);
    assert_eq!(run.code, 5, "{}", run.stderr);
    let advice = "Its record has 1 field and COPY fills 2 columns (id, name): if the file holds the columns \
                  without a default, pass --columns name (the others get their defaults: id); else check \
                  --delimiter, or name the columns the file holds with --columns, or pass --max-errors";
    assert!(run.stderr.contains(advice), "{}", run.stderr);
    let Loaded { run, .. } = load_with_rejects(&db, &file, "v", &["--columns", "name"]);
    run.assert_ok();
    assert_eq!(db.scalar("SELECT max(id) || ' ' || count(*) FROM v"), "3000 3000");
    // Too few records for the stop: the summary gives the same advice. The
    // defaults are a serial's, a `DEFAULT now()` and a domain's.
    db.execute(
        "CREATE DOMAIN public.flag AS boolean DEFAULT false; \
         CREATE TABLE public.\"Few\" (id serial, \"Name\" text, amount numeric, created timestamptz DEFAULT now(), \
         seen public.flag, total numeric GENERATED ALWAYS AS (amount * 2) STORED)",
    );
    let few = db.file("few.csv", b"a,5\nb,6\nc,7\n");
    let Loaded { run, .. } = load_with_rejects(&db, &few, "public.\"Few\"", &[]);
    assert_eq!((run.code, db.count("public.\"Few\"")), (1, 0), "{}", run.stderr);
    let warning = "all 3 records were rejected, which looks like a wrong option rather than bad data; the first: ";
    let advice = "Its record has 2 fields and COPY fills 5 columns (id, Name, amount, created, seen): if the file \
                  holds the columns without a default, pass --columns Name,amount (the others get their defaults: \
                  id, created, seen); else check --delimiter";
    assert!(run.stderr.contains(warning) && run.stderr.contains(advice), "{}", run.stderr);
    let Loaded { run, .. } = load_with_rejects(&db, &few, "public.\"Few\"", &["--columns", "Name,amount", "--restart"]);
    run.assert_ok();
    let loaded =
        "SELECT string_agg(id || \"Name\" || amount || total || (created IS NOT NULL) || seen, ' ' ORDER BY id) \
                  FROM public.\"Few\"";
    assert_eq!(db.scalar(loaded), "1a510truefalse 2b612truefalse 3c714truefalse");
    // An export of the whole table holds the generated column's values.
    let whole = db.file("whole.csv", b"7,d,8,2024-01-01,t,16\n8,e,9,2024-01-01,f,18\n");
    let Loaded { run, .. } = load_with_rejects(&db, &whole, "public.\"Few\"", &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let advice = "Its record has 6 fields and COPY fills 5 columns (id, Name, amount, created, seen): total is a \
                  generated column of the table, which the server computes and COPY cannot load: if the file holds \
                  it (an export of the whole table), pass --columns id,Name,amount,created,seen,- (a - leaves the \
                  field at its place out); else check --delimiter";
    assert!(run.stderr.contains(advice), "{}", run.stderr);
    let columns = ["--columns", "id,Name,amount,created,seen,-", "--restart"];
    load_with_rejects(&db, &whole, "public.\"Few\"", &columns).run.assert_ok();
    assert_eq!(
        db.scalar("SELECT string_agg(id || \"Name\" || total, ' ' ORDER BY id) FROM public.\"Few\" WHERE id > 3"),
        "7d16 8e18"
    );
    // Generated columns in the middle, the table's columns in order.
    db.execute(
        "CREATE TABLE mid (a int, g int GENERATED ALWAYS AS (a * 2) STORED, dropped int, \
         h int GENERATED ALWAYS AS (a * 3) STORED, b text); ALTER TABLE mid DROP COLUMN dropped",
    );
    let mid = db.file("mid.csv", b"1,2,3,x\n");
    let Loaded { run, .. } = load_with_rejects(&db, &mid, "mid", &[]);
    let advice = "g, h are generated columns of the table, which the server computes and COPY cannot load: if the \
                  file holds them (an export of the whole table), pass --columns a,-,-,b";
    assert!(run.stderr.contains(advice), "{}", run.stderr);
    // Some records loaded: no such warning; none named without a default.
    db.execute("CREATE TABLE public.pair (a text, b text)");
    let mixed = db.file("mixed.csv", b"x,y\nc\n");
    let Loaded { run, .. } = load_with_rejects(&db, &mixed, "pair", &[]);
    assert_eq!((run.code, db.count("pair")), (1, 1), "{}", run.stderr);
    assert!(!run.stderr.contains("were rejected, which looks like"), "{}", run.stderr);
    let only = db.file("only.csv", b"c\n");
    let Loaded { run, .. } = load_with_rejects(&db, &only, "pair", &[]);
    let generic = "the only record was rejected, which looks like a wrong option rather than bad data; the first: ";
    let advice = "Its record has 1 field and COPY fills 2 columns (a, b): check --delimiter, or name the columns \
                  the file holds with --columns (the others get their defaults)";
    assert!(run.stderr.contains(generic) && run.stderr.contains(advice), "{}", run.stderr);
}

/// Values their type refuses for their shape rather than their range: a
/// number where a date goes (a spreadsheet's serial day, a year alone,
/// epoch seconds, a percentage), a lone number for a time of day, an
/// address of too few or too large numbers. The client suspects them, so a
/// chunk with 2,000 costs a check of its suspects, not a COPY each.
#[test]
fn numbers_where_dates_times_or_addresses_go_are_suspects() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, d date, at time, ip inet)");
    let bad = [
        ("d", "45321"),
        ("d", "2024"),
        ("d", "1700000000"),
        ("d", "12 %"),
        ("at", "10"),
        ("at", "5."),
        ("ip", "192.168"),
        ("ip", "256.1.1.1"),
    ];
    let data: String = (0..20_000)
        .map(|i| {
            let mut fields =
                [("d", "20240301"), ("at", "1000.5"), ("ip", "10.0.0.1/8")].map(|(c, v)| (c, v.to_string()));
            if i % 10 == 0 {
                let (column, value) = bad[i / 10 % bad.len()];
                fields.iter_mut().find(|(c, _)| *c == column).unwrap().1 = value.to_string();
            }
            format!("{i}\t{}\t{}\t{}\n", fields[0].1, fields[1].1, fields[2].1)
        })
        .collect();
    let file = db.file("shapes.tsv", data.as_bytes());
    let Loaded { run, rejects: found, report, .. } = load_with_rejects(&db, &file, "t", &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!((db.count("t"), found.len()), (18_000, 2_000));
    assert_accounts(&report);
    let columns: std::collections::BTreeSet<&str> = found.iter().map(|r| r["column"].as_str().unwrap()).collect();
    assert_eq!(columns, ["at", "d", "ip"].into());
    let copies = isolation_copies(&report);
    assert!(copies < 10, "the client suspected the bad values: {copies} isolation COPYs");
}

/// A rejects file or report that could not be written is refused before
/// any row moves, not found out after an hour of loading.
#[test]
fn unwritable_rejects_or_report_path_stops_before_loading() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text)");
    let file = db.file("bad.csv", b"1,a\nx,b\n");
    let file = file.to_str().unwrap();
    let missing = db.dir.path().join("no-such-folder/out.jsonl");
    let folder = db.dir.path().to_str().unwrap();
    for (flag, path) in
        [("--rejects", missing.to_str().unwrap()), ("--report", missing.to_str().unwrap()), ("--report", folder)]
    {
        let run = db.load(&[file, "--table", "t", flag, path]);
        assert_eq!(run.code, 2, "{flag} {path}: {}", run.stderr);
        assert!(run.stderr.contains(&format!("{path}: cannot write")), "{}", run.stderr);
        assert!(run.stderr.contains(&format!("name a writable file with {flag}")), "{}", run.stderr);
        assert_eq!(db.count("t"), 0);
    }
}

/// A quote left open early in a big input would make the rest of the file
/// one record: past --max-record-size it is rejected as one record and the
/// load goes on at the next line, for files read by range and in memory.
#[test]
fn runaway_record_is_rejected_and_the_rest_loads() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text)");
    let mut data: String = (0..100).map(|i| format!("{i},n{i}\n")).collect();
    data.push_str("100,\"never closed\n");
    data.extend((101..2000).map(|i| format!("{i},ok\n")));
    let plain = db.file("runaway.csv", data.as_bytes());
    let packed = db.file("runaway.csv.gz", &crate::util::gzip(data.as_bytes()));
    for file in [plain, packed] {
        db.execute("TRUNCATE t");
        let extra = ["--max-record-size", "1KiB", "--chunk-size", "4KiB"];
        let Loaded { run, rejects: found, report: r, .. } = load_with_rejects(&db, &file, "t", &extra);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0]["line"], 101);
        assert!(found[0]["reason"].as_str().unwrap().contains("--max-record-size"));
        let raw = found[0]["raw"].as_str().unwrap();
        assert!(raw.starts_with("100,\"never closed\n") && raw.ends_with('\n') && raw.len() > 1024, "{raw}");
        let swallowed = raw.lines().count() as u64;
        let stored = format!("SELECT count(*) FROM sluice.rejects WHERE file = '{}'", file.display());
        assert_eq!(db.scalar(&stored), "1", "the runaway reject committed with its chunk");
        assert_eq!(db.count("t"), 2000 - swallowed, "every line after the runaway loads");
        assert_accounts(&r);
        assert_eq!(r["summary"]["records_read"], 2000 - swallowed + 1);
    }
    // A line thousands of times the limit is one reject all the same: it
    // was cut at twice the limit, the scan went on inside the line, and its
    // tail went to the server as a record. Its reject holds its first MiB
    // and its length, and `sluice rejects` leaves it out, saying so.
    let long = format!("7,{}\n", "x".repeat(3 << 20));
    let data: String = [format!("1,a\n{long}"), (8..200).map(|i| format!("{i},ok\n")).collect()].concat();
    let plain = db.file("long.csv", data.as_bytes());
    let packed = db.file("long.csv.gz", &crate::util::gzip(data.as_bytes()));
    for file in [plain, packed] {
        db.execute("TRUNCATE t");
        let extra = ["--max-record-size", "1KiB", "--restart"];
        let Loaded { run, rejects: found, rejects_path, .. } = load_with_rejects(&db, &file, "t", &extra);
        assert_eq!((run.code, found.len(), db.count("t")), (1, 1, 1 + 192), "{}", run.stderr);
        assert_eq!((found[0]["line"].as_u64(), found[0]["raw_length"].as_u64()), (Some(2), Some(long.len() as u64)));
        let raw = found[0]["raw"].as_str().unwrap();
        assert!(raw.starts_with("7,xxx") && raw.len() <= 1 << 20, "{} bytes kept", raw.len());
        let back = crate::util::sluice(&["rejects", rejects_path.to_str().unwrap()]);
        assert_eq!((back.code, back.stdout.as_str()), (0, ""), "{}", back.stderr);
        assert!(back.stderr.contains("left out 1 record past --max-record-size"), "{}", back.stderr);
    }
}

/// A JSON line longer than --max-record-size (a document with a huge
/// array) is one reject, holding its first MiB and its length, and the
/// lines after it load, with their own line and byte: it stopped the load,
/// losing the file.
#[test]
fn a_json_line_past_the_longest_record_is_one_reject_and_the_rest_loads() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text)");
    let long = format!("{{\"id\":7,\"name\":\"{}\"}}\n", "x".repeat(3 << 20));
    let before: String = (0..5000).map(|i| format!("{{\"id\":{i},\"name\":\"n{i}\"}}\n")).collect();
    let after: String = (5001..9000).map(|i| format!("{{\"id\":{i},\"name\":\"n{i}\"}}\n")).collect();
    let bad = "{\"id\":\"not a number\"}\n";
    let data = [before.as_str(), &long, &after, bad].concat();
    let plain = db.file("long.jsonl", data.as_bytes());
    let packed = db.file("long.jsonl.gz", &crate::util::gzip(data.as_bytes()));
    for file in [plain, packed] {
        let extra = ["--max-record-size", "64KiB", "--chunk-size", "64KiB", "--truncate", "--restart"];
        let Loaded { run, rejects: found, rejects_path, report: r } = load_with_rejects(&db, &file, "t", &extra);
        assert_eq!((run.code, found.len(), db.count("t")), (1, 2, 5000 + 3999), "{}", run.stderr);
        assert_eq!(found[0]["line"], 5001);
        assert_eq!(
            (found[0]["byte"].as_u64(), found[0]["raw_length"].as_u64()),
            (Some(before.len() as u64), Some(long.len() as u64))
        );
        let reason = found[0]["reason"].as_str().unwrap();
        assert!(reason.starts_with("the line is longer than --max-record-size (65536 bytes)"), "{reason}");
        let raw = found[0]["raw"].as_str().unwrap();
        assert!(raw.starts_with("{\"id\":7,\"name\":\"xxx") && raw.len() == (1 << 20) + 1, "{} bytes kept", raw.len());
        assert_eq!((found[1]["line"].as_u64(), found[1]["raw"].as_str()), (Some(9001), Some(bad)));
        assert_eq!(found[1]["byte"].as_u64(), Some((data.len() - bad.len()) as u64));
        assert_accounts(&r);
        let back = crate::util::sluice(&["rejects", rejects_path.to_str().unwrap()]);
        assert_eq!((back.code, back.stdout.as_str()), (0, bad), "{}", back.stderr);
        assert!(back.stderr.contains("left out 1 record past --max-record-size"), "{}", back.stderr);
    }
}

/// A line ending in CR LF among lines ending in LF (a file joined from a
/// Windows export and a Unix one), or the other way, loads: the server
/// takes a COPY's line end from its first line and refuses the line, which
/// isolation sends again ending as the others do. They were rejects (the
/// reason said to run dos2unix). A carriage return inside a line is still
/// a reject, which says why, not only the server's words about an
/// "unquoted carriage return", which speak of CSV quoting.
#[test]
fn a_crlf_line_among_lf_lines_loads_and_a_carriage_return_inside_one_is_a_reject() {
    let db = TestDb::new();
    db.execute("CREATE TABLE j (doc json); CREATE TABLE jb (doc jsonb); CREATE TABLE t (id int, note text)");
    let json = db.file("mixed.jsonl", b"{\"a\":1}\n{\"a\":2}\r\n{\"a\":3}\n{\"a\":\r4}\n");
    let tsv = db.file("mixed.tsv", b"1\tone\n2\ttwo\r\n3\tthree\n4\tfo\rur\n");
    let lf_among_crlf = db.file("mixed-crlf.tsv", b"1\tone\r\n2\ttwo\n3\tthree\r\n4\tfo\rur\r\n");
    let csv = db.file("mixed.csv", b"1,one\n2,\"t\r\nwo\"\r\n3,three\n4,fo\rur\n");
    let files = [
        (&json, "j", "JSON-lines", &[][..]),
        (&json, "jb", "JSON-lines", &[]),
        (&tsv, "t", "(text)", &[]),
        (&lf_among_crlf, "t", "(text)", &[]),
        (&csv, "t", "(CSV)", &["--format", "csv"]),
    ];
    for (file, table, says, args) in files {
        for format in ["text", "binary"] {
            let args = [&["--copy-format", format, "--restart", "--truncate"], args].concat();
            let loaded = load_with_rejects(&db, file, table, &args);
            assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
            assert_eq!(loaded.rejects.len(), 1, "{table} {format}: {:?}", loaded.rejects);
            let reject = &loaded.rejects[0];
            assert_eq!(reject["line"], if table == "t" && says == "(CSV)" { 5 } else { 4 }, "{reject}");
            let reason = reject["reason"].as_str().unwrap();
            assert!(reason.contains(" found in data: "), "{reason}");
            assert!(reason.contains(says), "{table} {format}: {reason}");
            assert_eq!(db.count(table), 3, "{table} {format}");
            assert_accounts(&loaded.report);
        }
    }
    let notes = "SELECT string_agg(id || replace(note, E'\\r', '<CR>'), ' ' ORDER BY id) FROM t";
    assert_eq!(db.scalar(notes), "1one 2t<CR>\nwo 3three");
    // Line ends alike: the carriage return inside a line is rejected
    // without sending it again (the run before it, then the one after).
    let alike = db.file("alike.tsv", b"1\tone\n2\ttwo\n3\tfo\rur\n4\tfour\n");
    let loaded = load_with_rejects(&db, &alike, "t", &["--copy-format", "text", "--restart", "--truncate"]);
    assert_eq!((loaded.run.code, loaded.rejects.len(), db.count("t")), (1, 1, 3));
    assert_eq!(isolation_copies(&loaded.report), 2, "{}", loaded.report);
    // A carriage return inside the first line, in a file of line feeds: it
    // was taken for a file of bare carriage returns (the first line loaded
    // cut short, `1 | fo`, and the rest of the file one reject); and at the
    // head of a COPY the server takes it for the line end, whose refusal
    // then names the next line (`2 two` rejected).
    let first_tsv = db.file("first.tsv", b"1\tfo\rur\n2\ttwo\n3\tthree\n");
    let first_csv = db.file("first.csv", b"1,fo\rur\n2,two\n3,three\n");
    for (file, args) in [(&first_tsv, &[][..]), (&first_csv, &["--format", "csv"])] {
        for format in ["text", "binary"] {
            let args = [&["--copy-format", format, "--restart", "--truncate"], args].concat();
            let loaded = load_with_rejects(&db, file, "t", &args);
            assert_eq!((loaded.run.code, loaded.rejects.len()), (1, 1), "{}", loaded.run.output());
            assert_eq!(loaded.rejects[0]["line"], 1, "{}", loaded.rejects[0]);
            assert_eq!(db.scalar("SELECT string_agg(id || note, ' ' ORDER BY id) FROM t"), "2two 3three");
        }
    }
}

/// A chunk's suspects checked together by the server's input functions
/// (`value_check`) are rejected exactly as copying each alone rejects them:
/// the same lines, reasons, SQLSTATEs and columns, and the same rows
/// loaded, for a bad value of every kind in columns of many types, two bad
/// values in one record (the first column is named), and errors only COPY
/// can find (a domain's CHECK, NOT NULL, a field too many); in fewer than
/// half the COPY statements.
#[test]
fn suspects_checked_together_are_rejected_as_copying_each_alone_rejects_them() {
    let db = TestDb::new();
    let columns = "id int, small smallint, big bigint, n numeric(6,2), r real, d date, ts timestamptz, b boolean, \
                   u uuid, j jsonb, m mood, v varchar(5), c char(3), a int[], bits bit(4), ip inet, iv interval, \
                   p positive, nn int NOT NULL, filler text";
    db.execute(&format!(
        "CREATE TYPE mood AS ENUM ('ok', 'sad'); CREATE DOMAIN positive AS int CHECK (VALUE > 0); \
         CREATE SCHEMA together; CREATE SCHEMA alone; CREATE TABLE together.t ({columns}); \
         CREATE TABLE alone.t (LIKE together.t)"
    ));
    let bad = [
        (1, "40000"),
        (2, "1e3"),
        (3, "12345.678"),
        (4, "1e40"),
        (5, "2023-02-30"),
        (6, "2024-13-01 00:00"),
        (7, "maybe"),
        (8, "not-a-uuid"),
        (9, "{\"a\":"),
        (10, "happy"),
        (11, "toolong"),
        (12, "abcd"),
        (13, "{1,x}"),
        (14, "101"),
        (15, "300.1.1.1"),
        (16, "5 fortnights"),
        (17, "-3"),
        (18, "\\N"),
        (0, ""),
        (3, "1,234.50"),
        (5, "31/12/2024"),
        (6, "2024-03-01 25:00+02"),
        (15, "N/A"),
        (13, "N/A"),
        (9, "{\"a\": 1,}"),
        (2, "x\t1\t1.5\t1\t2024-01-01\t2024-01-01\tt\t0\t{}\tok\ta\tabc\t{}\t1010\t::1\t1 day\t1\t1\textra"),
    ];
    let filler = "f".repeat(400);
    let spoiled = Spoiled::new(1500, (6, 2), &bad, |i| {
        let fields = [
            i.to_string(),
            (i % 30000).to_string(),
            (i * 1_000_003).to_string(),
            format!("{}.25", i % 9999),
            // A float in hex, which the server reads and the client
            // suspects: a wrong guess the check clears.
            if i % 10 == 3 { "0x1p-1" } else { "1.5" }.into(),
            format!("2024-03-{:02}", 1 + i % 28),
            "2024-03-01 12:00+02".into(),
            "yes".into(),
            format!("{i:08x}-0000-4000-8000-{:012x}", i * 7),
            format!("{{\"i\": {i}}}"),
            if i % 2 == 0 { "ok" } else { "sad" }.into(),
            "abc".into(),
            "xy".into(),
            format!("{{{i},2}}"),
            "1010".into(),
            "10.0.0.1".into(),
            format!("{} hours", i % 48),
            (1 + i).to_string(),
            i.to_string(),
            filler.clone(),
        ];
        fields.to_vec()
    });
    // Two bad values in one record: COPY names the first column.
    let all = spoiled
        .all
        .replacen("\n2\t40000\t2000006\t", "\n2\t40000\tx\t", 1)
        .replace("\n14\t14\t14000042\t", "\n14\t99999\tx\t");
    let file = db.file("together.tsv", all.as_bytes());
    let together = load_with_rejects(&db, &file, "together.t", &["--workers", "2", "--chunk-size", "1MiB"]);
    // Chunks of 1 KiB hold at most two records: never enough suspects for
    // a check, so each goes to COPY alone.
    let alone = load_with_rejects(&db, &file, "alone.t", &["--workers", "2", "--chunk-size", "1KiB"]);
    for loaded in [&together, &alone] {
        assert_eq!(loaded.run.code, 1, "{}", loaded.run.stderr);
        assert_accounts(&loaded.report);
    }
    let described = |loaded: &Loaded| -> Vec<String> {
        let fields = ["line", "reason", "sqlstate", "column"];
        loaded.rejects.iter().map(|r| fields.map(|f| r[f].to_string()).join(" | ")).collect()
    };
    let (checked, each) = (described(&together), described(&alone));
    let differ = checked.iter().zip(&each).find(|(a, b)| a != b);
    assert_eq!(differ, None, "the same rejects, for the same reasons");
    assert_eq!(checked.len(), each.len());
    let lines: Vec<u64> = together.rejects.iter().map(|r| r["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, spoiled.bad_lines);
    assert!(checked.iter().any(|r| r.contains("\"small\"") && r.starts_with("3 |")), "line 3 names small");
    db.assert_same_rows("together.t", "alone.t");
    let copies = |loaded: &Loaded| -> u64 { isolation_copies(&loaded.report) };
    let (checked, each) = (copies(&together), copies(&alone));
    // Values the client does not suspect (an interval, an address or an
    // array the client reads as one, a domain's CHECK) and errors only COPY
    // finds (NOT NULL, a field too many) still cost their statements. The
    // 150 hex floats would add one each if the suspects the check passes
    // were not copied with the clean records.
    assert!(checked * 4 < each, "isolation's COPY statements: {checked} with the check, {each} without");
}

/// Many duplicate keys in a table that already holds rows (so its key is
/// not deferred), loaded by two workers: once a chunk rejected 16 of them
/// the workers load side by side, each chunk copying last the records
/// whose keys an earlier chunk still loading has (with a key the client
/// reads as the server does: an integer, a uuid, text, varchar or char(n),
/// a timestamp or a numeric, the later lines written otherwise than the
/// first), or take turns (an inet key, which the client does not read),
/// and the summary says which; isolation rejects those the table holds in
/// the server's words without copying them; every key is loaded once, from
/// its first line, and every other record with it rejected once. A few
/// duplicates leave the workers in parallel, their chunks committing in
/// input order, so there too the first line of each key is kept.
#[test]
fn many_duplicate_keys_make_the_workers_load_side_by_side_or_take_turns() {
    let db = TestDb::new();
    // Each duplicate repeats the key of a line about a chunk back: often
    // one still loading.
    let tables = [
        ("many", 7u64, "int"),
        ("few", 2000, "int"),
        ("texts", 7, "varchar"),
        ("uuids", 7, "uuid"),
        ("codes", 7, "char(12)"),
        ("stamps", 7, "timestamp(0)"),
        ("amounts", 7, "numeric(12,2)"),
        ("addresses", 7, "inet"),
    ];
    for (table, every, key) in tables {
        // A key as its first line writes it, as a later line does, and as
        // the server prints it.
        let key_of = |n: u64| -> [String; 3] {
            let time = format!("{:02}:{:02}:{:02}", n / 3600, n / 60 % 60, n % 60);
            match key {
                "uuid" => [(); 3].map(|_| format!("00000000-0000-0000-0000-{n:012x}")),
                "char(12)" => [n.to_string(), format!("{n}   "), format!("{n:<12}")],
                "timestamp(0)" => {
                    [format!("2024-01-01 {time}"), format!("2024-01-01T{time}.4"), format!("2024-01-01 {time}")]
                }
                "numeric(12,2)" => [format!("{n}.00"), format!("0{n}.0"), format!("{n}.00")],
                "inet" => [(); 3].map(|_| format!("10.0.{}.{}", n / 256, n % 256)),
                _ => [(); 3].map(|_| n.to_string()),
            }
        };
        db.execute(&format!(
            "CREATE TABLE {table} (id {key} PRIMARY KEY, note text); INSERT INTO {table} VALUES ('{}', 'old')",
            key_of(0)[0]
        ));
        let mut data = String::new();
        let mut duplicates = 0;
        for line in 1..=20_000u64 {
            let repeated = line % every == 0 && line > 500;
            duplicates += u64::from(repeated);
            let id = if repeated { key_of(line - 500)[1].clone() } else { key_of(line)[0].clone() };
            data.push_str(&format!("{id}\tline {line}\n"));
        }
        let file = db.file(&format!("{table}.tsv"), data.as_bytes());
        let loaded = load_with_rejects(&db, &file, table, &["--workers", "2", "--chunk-size", "8KiB"]);
        assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
        assert_accounts(&loaded.report);
        assert_eq!(loaded.rejects.len() as u64, duplicates, "each duplicate rejected once");
        let other = loaded.rejects.iter().find(|r| r["sqlstate"] != "23505");
        assert!(other.is_none(), "only duplicate keys: {other:?}");
        assert_eq!(db.count(table), 20_001 - duplicates, "every key once");
        // A few duplicates leave the workers in parallel, committing in
        // input order (see `Shared::commit_in_order`).
        let number = match key {
            "uuid" => "('x' || right(id::text, 12))::bit(48)::bigint",
            "timestamp(0)" => "extract(epoch FROM id - '2024-01-01')::int",
            "numeric(12,2)" => "id::int",
            "inet" => "(id - '10.0.0.0')",
            _ => "id",
        };
        let later = format!("SELECT count(*) FROM {table} WHERE note <> 'line ' || {number} AND note <> 'old'");
        assert_eq!(db.scalar(&later), "0", "{table}: rows from a key's later line");
        let output = loaded.run.output();
        let (side_by_side, took_turns) =
            (output.contains("workers loaded side by side"), output.contains("workers took turns"));
        let expected = (!["few", "addresses"].contains(&table), table == "addresses");
        assert_eq!((side_by_side, took_turns), expected, "{table}: {output}");
        for reject in &loaded.rejects {
            let line: u64 = reject["line"].as_u64().unwrap();
            let repeated = line % every == 0 && line > 500;
            let id = &key_of(if repeated { line - 500 } else { line })[2];
            let reason = format!(
                "duplicate key value violates unique constraint \"{table}_pkey\" (Key (id)=({id}) already exists.)"
            );
            assert_eq!(reject["reason"], reason.as_str(), "the server's words");
        }
        // Once duplicates are dense, isolation finds those the table holds
        // with one query per chunk and rejects them without a COPY.
        let copies = isolation_copies(&loaded.report);
        if table != "few" {
            assert!(copies * 2 < duplicates, "{table}: {copies} COPY statements for {duplicates} duplicates");
        }
    }
}

/// A unique index that compares its column by a collation of its own (a
/// case-insensitive one here, over a column of the default collation),
/// and many duplicates that differ in case. Into a table holding rows, the
/// workers take turns, since the client cannot tell them for one key
/// (loading side by side, an earlier chunk waited for a later one's row,
/// and the later line won), and isolation finds them in one query per
/// chunk as the index compares them, not COPY by COPY (74 s for 20,000
/// lines before, 0.4 s now). Into an empty table, where the index is
/// dropped for the load, the rows that break it are found by it too, so
/// it is built again (it failed to, all 20,000 rows loaded).
#[test]
fn a_key_of_its_own_collation_is_looked_up_by_it_whether_in_place_or_deferred() {
    let db = TestDb::new();
    db.execute("CREATE COLLATION anycase (provider = icu, locale = 'und-u-ks-level2', deterministic = false)");
    let mut data = String::new();
    let mut duplicates = 0;
    for line in 1..=20_000u64 {
        let repeated = line % 7 == 0 && line > 500;
        duplicates += u64::from(repeated);
        let name = if repeated { format!("KEY{}", line - 500) } else { format!("key{line}") };
        data.push_str(&format!("{name}\tline {line}\n"));
    }
    let file = db.file("names.tsv", data.as_bytes());
    // Made before any load makes sluice's schema, which "$user" in the
    // search path would name first for the role sluice.
    let tables = [("names", 1), ("empty", 0)];
    for (table, held) in tables {
        db.execute(&format!(
            "CREATE TABLE public.{table} (name text, note text); \
             CREATE UNIQUE INDEX {table}_key ON public.{table} (name COLLATE anycase); \
             INSERT INTO public.{table} SELECT 'key0', 'old' FROM generate_series(1, {held})"
        ));
    }
    for (table, held) in tables {
        let loaded = load_with_rejects(&db, &file, table, &["--workers", "2", "--chunk-size", "8KiB"]);
        assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
        assert_accounts(&loaded.report);
        assert_eq!(loaded.rejects.len() as u64, duplicates, "{table}: each duplicate rejected once");
        assert_eq!(db.count(table), 20_000 + held - duplicates, "{table}: every key once");
        let index = db.scalar(&format!("SELECT indexdef FROM pg_indexes WHERE indexname = '{table}_key'"));
        assert!(index.ends_with("(name COLLATE anycase)"), "{table}: the index is back: {index}");
        for reject in &loaded.rejects {
            let name = reject["raw"].as_str().unwrap().split('\t').next().unwrap();
            let reason = format!(
                "duplicate key value violates unique constraint \"{table}_key\" (Key (name)=({name}) already exists.)"
            );
            assert_eq!(reject["reason"], reason.as_str(), "{table}: the server's words");
        }
        if held == 0 {
            let later = db.scalar("SELECT count(*) FROM empty WHERE note <> 'line ' || substr(name, 4)");
            assert_eq!(later, "0", "the deferred key keeps each key's first line");
            continue;
        }
        let output = loaded.run.output();
        assert!(output.contains("workers took turns") && !output.contains("side by side"), "{output}");
        let copies = isolation_copies(&loaded.report);
        assert!(copies * 2 < duplicates, "{copies} COPY statements for {duplicates} duplicates");
    }
}

/// A unique key of `NULLS NOT DISTINCT` (PostgreSQL 15+), where a NULL
/// repeats a NULL: the client takes a NULL for no key, so the workers take
/// turns instead of loading side by side, and the NULLs after the first
/// are rejected like any duplicate.
#[test]
fn a_key_whose_nulls_repeat_each_other_makes_the_workers_take_turns() {
    let db = TestDb::new();
    if db.scalar("SELECT current_setting('server_version_num')::int >= 150000") != "t" {
        return;
    }
    db.execute(
        "CREATE TABLE public.n (id int, note text, UNIQUE NULLS NOT DISTINCT (id)); INSERT INTO public.n VALUES (0, 'old')",
    );
    // Every 7th line after the 500th repeats an id, every 50th is NULL.
    let (data, repeats) = keyed_lines(20_000, |line| if line > 500 && line % 7 == 0 { line - 500 } else { line });
    let data: String = data
        .lines()
        .enumerate()
        .map(
            |(n, l)| {
                if (n + 1) % 50 == 0 {
                    format!("\\N\t{}\n", l.split('\t').nth(1).unwrap())
                } else {
                    format!("{l}\n")
                }
            },
        )
        .collect();
    let nulls = 20_000 / 50;
    let file = db.file("n.tsv", data.as_bytes());
    let loaded = load_with_rejects(&db, &file, "public.n", &["--workers", "2", "--chunk-size", "8KiB"]);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
    assert_accounts(&loaded.report);
    assert_eq!(db.scalar("SELECT count(*) FROM public.n WHERE id IS NULL"), "1", "one NULL");
    let output = loaded.run.output();
    assert!(output.contains("workers took turns") && !output.contains("side by side"), "{output}");
    // Lines that are multiples of both 7 and 50 were NULL, not a repeat.
    let both = (501..=20_000u64).filter(|l| l % 7 == 0 && l % 50 == 0).count() as u64;
    assert_eq!(loaded.rejects.len() as u64, repeats - both + nulls - 1, "each repeat and every NULL but one");
}

/// Many duplicate keys in a partitioned table: each is rejected in the
/// server's words, which name the index of the row's partition (at any
/// depth), not the table's, whether the key query or COPY found it; and a
/// CHECK of one partition's own, which the server checks before the keys,
/// is the reason for the records that break it and repeat a key. The
/// workers load side by side, keeping each key's first line, unless a
/// partition has a CHECK or a unique index of its own: then they take
/// turns.
#[test]
fn duplicate_keys_in_a_partitioned_table_are_named_by_their_partitions_index() {
    let db = TestDb::new();
    let tables = ["parts", "checked", "own"];
    for table in tables {
        db.execute(&format!(
            "CREATE TABLE public.{table} (id int PRIMARY KEY, note text) PARTITION BY RANGE (id); \
             CREATE TABLE public.{table}_low PARTITION OF public.{table} FOR VALUES FROM (MINVALUE) TO (10000) \
               PARTITION BY RANGE (id); \
             CREATE TABLE public.{table}_low_a PARTITION OF public.{table}_low FOR VALUES FROM (MINVALUE) TO (5000); \
             CREATE TABLE public.{table}_low_b PARTITION OF public.{table}_low FOR VALUES FROM (5000) TO (10000); \
             CREATE TABLE public.{table}_high PARTITION OF public.{table} FOR VALUES FROM (10000) TO (MAXVALUE); \
             INSERT INTO public.{table} VALUES (0, 'old')"
        ));
    }
    db.execute(
        "ALTER TABLE public.checked_low_a ADD CONSTRAINT not_bad CHECK (note <> 'bad'); \
         CREATE UNIQUE INDEX own_high_id_note ON public.own_high (id, note)",
    );
    let mut data = String::new();
    for line in 1..=20_000u64 {
        let repeated = line % 7 == 0 && line > 500;
        let id = if repeated { line - 500 } else { line };
        let note = if repeated && line % 11 == 0 { "bad".to_string() } else { format!("line {line}") };
        data.push_str(&format!("{id}\t{note}\n"));
    }
    let file = db.file("parts.tsv", data.as_bytes());
    for table in tables {
        let loaded =
            load_with_rejects(&db, &file, &format!("public.{table}"), &["--workers", "2", "--chunk-size", "8KiB"]);
        assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
        assert_accounts(&loaded.report);
        let mut checks = 0;
        for reject in &loaded.rejects {
            let raw = reject["raw"].as_str().unwrap().trim_end();
            let (id, note) = raw.split_once('\t').unwrap();
            let number: u64 = id.parse().unwrap();
            let partition = match number {
                0..5000 => "low_a",
                5000..10000 => "low_b",
                _ => "high",
            };
            let reason = match (table, partition, note) {
                ("checked", "low_a", "bad") => {
                    checks += 1;
                    format!(
                        "new row for relation \"checked_low_a\" violates check constraint \"not_bad\" \
                         (Failing row contains ({id}, bad).)"
                    )
                }
                _ => format!(
                    "duplicate key value violates unique constraint \"{table}_{partition}_pkey\" \
                     (Key (id)=({id}) already exists.)"
                ),
            };
            assert_eq!(reject["reason"], reason.as_str(), "{table}: the server's words for {raw}");
        }
        assert_eq!(checks > 0, table == "checked", "{table}: {checks} records break the partition's CHECK");
        // The key query found most of them, where it decides.
        let copies = isolation_copies(&loaded.report);
        if table != "checked" {
            assert!(copies * 2 < loaded.rejects.len() as u64, "{table}: {copies} COPY statements");
        }
        let output = loaded.run.output();
        let (side_by_side, took_turns) =
            (output.contains("workers loaded side by side"), output.contains("workers took turns"));
        assert_eq!((side_by_side, took_turns), (table == "parts", table != "parts"), "{table}: {output}");
        let later = format!("SELECT count(*) FROM public.{table} WHERE note NOT IN ('line ' || id, 'old', 'bad')");
        assert_eq!(db.scalar(&later), "0", "{table}: rows from a key's later line");
    }
}

/// Constraints checked at commit (`DEFERRABLE INITIALLY DEFERRED`) on
/// tables that hold rows, so that they stay in place: a chunk whose rows
/// break one is refused at its COMMIT, where the server names no line (the
/// whole load stopped there, nothing loaded). The chunk is loaded again
/// checking every constraint at each row, as are the chunks after it, so
/// each record that breaks one is rejected at its line in the server's
/// words, every other one loads, and the summary says what happened.
#[test]
fn constraints_checked_at_commit_are_checked_at_each_row_once_one_refuses_a_chunk() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE public.parent (id int PRIMARY KEY); INSERT INTO public.parent SELECT generate_series(1, 1000); \
         CREATE TABLE public.child (id int PRIMARY KEY, \
           parent_id int REFERENCES public.parent DEFERRABLE INITIALLY DEFERRED); \
         INSERT INTO public.child VALUES (0, 1); \
         CREATE TABLE public.once (id int, note text, CONSTRAINT once_key UNIQUE (id) DEFERRABLE INITIALLY DEFERRED); \
         INSERT INTO public.once VALUES (0, 'old')",
    );
    let mut children = String::new();
    let mut dangling = Vec::new();
    for line in 1..=20_000u64 {
        let parent = if line % 997 == 0 { 5000 + line } else { line % 1000 + 1 };
        if parent > 1000 {
            dangling.push(line);
        }
        children.push_str(&format!("{line}\t{parent}\n"));
    }
    let (once, repeats) = keyed_lines(20_000, |line| if line % 1500 == 0 { line - 700 } else { line });
    let repeated: Vec<u64> = (1..=20_000u64).filter(|l| l % 1500 == 0).collect();
    assert_eq!(repeated.len() as u64, repeats);
    for (table, data, bad, state) in [("child", children, dangling, "23503"), ("once", once, repeated, "23505")] {
        let file = db.file(&format!("{table}.tsv"), data.as_bytes());
        let loaded =
            load_with_rejects(&db, &file, &format!("public.{table}"), &["--workers", "2", "--chunk-size", "8KiB"]);
        assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
        assert_accounts(&loaded.report);
        // A key's later line: its chunk commits after the earlier one, the
        // file's first records repeating keys (see `Shared::commit_in_order`).
        let lines = loaded.sorted_lines();
        assert_eq!(lines, bad, "{table}: the records that break the constraint, at their lines");
        for reject in &loaded.rejects {
            assert_eq!(reject["sqlstate"], state, "{reject}");
        }
        assert_eq!(db.count(&format!("public.{table}")), 20_001 - bad.len() as u64, "{table}: every other row");
        let output = loaded.run.output();
        assert!(
            output.contains("a constraint checked at commit (DEFERRABLE INITIALLY DEFERRED) refused a chunk"),
            "{output}"
        );
    }
}

/// Only the constraint that refused a chunk at commit is checked at each
/// row from then on: another one deferred, here a foreign key to the next
/// line, still is at commit, so its forward references load (before, every
/// constraint was made immediate, and each was rejected).
#[test]
fn only_the_constraint_that_refused_a_commit_is_checked_at_each_row() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE public.tree (id int PRIMARY KEY, code int, parent int, \
           CONSTRAINT tree_key UNIQUE (code) DEFERRABLE INITIALLY DEFERRED, \
           CONSTRAINT tree_parent FOREIGN KEY (parent) REFERENCES public.tree (id) DEFERRABLE INITIALLY DEFERRED); \
         INSERT INTO public.tree VALUES (0, 0, 0)",
    );
    // Lines of 32 bytes, 256 to a chunk of 8 KiB: an odd line refers to the
    // next odd one in its chunk, past an even one, which may be a repeat:
    // every 1,500th line repeats the code of the line 700 before it, and
    // is rejected, so a reference across it crosses two COPY statements.
    let repeats = |line: u64| line % 1500 == 0;
    let code = |line: u64| if repeats(line) { line - 700 } else { line };
    let same_chunk = |a: u64, b: u64| (a - 1) / 256 == (b - 1) / 256 && b <= 20_000;
    let parent = |line: u64| if line % 2 == 1 && same_chunk(line, line + 2) { line + 2 } else { line - 1 };
    let data: String = (1..=20_000u64).map(|l| format!("{l:010}\t{:010}\t{:09}\n", code(l), parent(l))).collect();
    let file = db.file("tree.tsv", data.as_bytes());
    let loaded = load_with_rejects(&db, &file, "public.tree", &["--workers", "2", "--chunk-size", "8KiB"]);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
    assert_accounts(&loaded.report);
    let lines = loaded.sorted_lines();
    assert_eq!(lines, (1..=20_000u64).filter(|&l| repeats(l)).collect::<Vec<_>>(), "only the repeated codes");
    assert!(loaded.rejects.iter().all(|r| r["sqlstate"] == "23505"), "{:?}", loaded.rejects);
    assert_eq!(db.count("public.tree"), 20_001 - lines.len() as u64);
    assert_reported(&loaded.report, "each chunk checked constraint \"public\".\"tree_key\" at each row");
}

/// A chunk that checked every constraint at each row and is still refused
/// at commit (here a trigger defers them again) stops the load with the
/// server's words and what to do, instead of loading the chunk again and
/// again; the chunks committed before stay, and once the trigger is gone
/// the same command resumes, every record loaded or rejected once.
#[test]
fn a_commit_refused_although_checked_at_each_row_stops_the_load_which_resumes_once_fixed() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE public.stubborn (id int, note text, \
           CONSTRAINT stubborn_key UNIQUE (id) DEFERRABLE INITIALLY DEFERRED); \
         INSERT INTO public.stubborn VALUES (0, 'old'); \
         CREATE FUNCTION public.defer_again() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
           SET CONSTRAINTS ALL DEFERRED; RETURN NEW; END $$; \
         CREATE TRIGGER defer_again BEFORE INSERT ON public.stubborn \
           FOR EACH ROW EXECUTE FUNCTION public.defer_again()",
    );
    let (data, repeats) = keyed_lines(20_000, |line| if line % 1500 == 0 { line - 700 } else { line });
    let file = db.file("stubborn.tsv", data.as_bytes());
    let args = ["--workers", "2", "--chunk-size", "8KiB"];
    let stopped = load_with_rejects(&db, &file, "public.stubborn", &args);
    let output = stopped.run.output();
    assert_eq!(stopped.run.code, 4, "{output}");
    assert!(output.contains("sluice: COMMIT refused: duplicate key value violates unique constraint \"stubborn_key\""));
    assert!(output.contains("something in it deferred it again"), "{output}");
    let committed = db.count("public.stubborn") - 1;
    assert!(committed < 20_000 - repeats, "the load stopped at the first repeat: {committed} rows");

    db.execute("DROP TRIGGER defer_again ON public.stubborn");
    let resumed = load_with_rejects(&db, &file, "public.stubborn", &args);
    assert_eq!(resumed.run.code, 1, "{}", resumed.run.output());
    assert_accounts(&resumed.report);
    assert_eq!(resumed.report["summary"]["records_read"], 20_000);
    assert_eq!(db.count("public.stubborn"), 20_001 - repeats, "each key once");
    let rejects = db.scalar("SELECT count(*) FROM sluice.rejects WHERE target_table = 'public.stubborn'");
    assert_eq!(rejects, repeats.to_string(), "each repeat rejected once, over both runs");
}

/// Of two chunks loading at once that share a key, the earlier one keeps
/// it even where the later one copies it first: once the load has met a
/// repeated key (here among its first records, or in a chunk's rejects
/// after a clean first MiB), chunks commit in input order, and one that an
/// earlier chunk waits for on the server rolls back and loads again after
/// it. A trigger sleeps before the earlier chunk's line of the key, so the
/// later chunk copies it first every time; before, the later line was kept.
#[test]
fn of_two_chunks_loading_at_once_the_earlier_keeps_a_key_they_share() {
    let db = TestDb::new();
    // Lines of 32 bytes: 256 to a chunk of 8 KiB (or 257 where a chunk
    // ends past the record at its size), so each case's key and its repeat
    // are in neighbouring chunks.
    let line = |id: u64, line: u64| format!("{id:010}\tline {line:015}\n");
    let note = |line: u64| format!("line {line:015}");
    // (table, lines, the sleeping line, the key's first line, its repeat,
    // a repeat within one chunk after the first MiB)
    let cases =
        [("head", 2_000u64, 100u64, 200u64, 300u64, None), ("later", 60_000, 51_260, 51_300, 51_520, Some(40_001))];
    for (table, lines, sleeping, first, repeat, early) in cases {
        db.execute(&format!(
            "CREATE TABLE public.{table} (id int PRIMARY KEY, note text); INSERT INTO public.{table} VALUES (0, 'old'); \
             CREATE FUNCTION public.{table}_slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
               IF NEW.note = '{}' THEN PERFORM pg_sleep(1.5); END IF; RETURN NEW; END $$; \
             CREATE TRIGGER slow BEFORE INSERT ON public.{table} FOR EACH ROW EXECUTE FUNCTION public.{table}_slow()",
            note(sleeping)
        ));
        let id_of = |l: u64| match l {
            _ if l == repeat => first,
            _ if Some(l) == early => l - 1,
            _ => l,
        };
        let data: String = (1..=lines).map(|l| line(id_of(l), l)).collect();
        let file = db.file(&format!("{table}.tsv"), data.as_bytes());
        let loaded =
            load_with_rejects(&db, &file, &format!("public.{table}"), &["--workers", "2", "--chunk-size", "8KiB"]);
        assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
        assert_accounts(&loaded.report);
        let rejected = loaded.sorted_lines();
        let expected: Vec<u64> = early.into_iter().chain([repeat]).collect();
        assert_eq!(rejected, expected, "{table}: the key's later lines");
        assert!(loaded.rejects.iter().all(|r| r["sqlstate"] == "23505"), "{:?}", loaded.rejects);
        assert_eq!(db.scalar(&format!("SELECT note FROM public.{table} WHERE id = {first}")), note(first), "{table}");
        assert_reported(
            &loaded.report,
            "1 chunk loading alongside an earlier one held a lock that the earlier one waited for",
        );
    }
}

/// `lines` records `{id}\tline {line}` with the id `id_of` gives each
/// line, and how many repeat an id (line `id`, or 0: the table's own row).
fn keyed_lines(lines: u64, id_of: impl Fn(u64) -> u64) -> (String, u64) {
    let mut data = String::new();
    let mut duplicates = 0;
    for line in 1..=lines {
        let id = id_of(line);
        duplicates += u64::from(id != line);
        data.push_str(&format!("{id}\tline {line}\n"));
    }
    (data, duplicates)
}

/// The rows of `table` (made by [`keyed_lines`] over its row `(0, 'old')`)
/// that came from their key's first line.
fn first_lines_kept(db: &TestDb, table: &str) -> u64 {
    let kept =
        db.scalar(&format!("SELECT count(*) FROM {table} WHERE note = 'line ' || id OR (id = 0 AND note = 'old')"));
    kept.parse().unwrap()
}

/// A chunk that first meets dense duplicate keys looks the rest of its
/// records up in one query once it has met a few, and the records that
/// repeat an earlier one of the chunk are looked up again once that one is
/// copied: a chunk of 20,000 records with a repeat in every 20 costs a
/// handful of COPY statements, not one per duplicate, and the first line of
/// each key is the one kept.
#[test]
fn a_chunk_full_of_repeated_keys_is_looked_up_not_copied_line_by_line() {
    let db = TestDb::new();
    db.execute("CREATE TABLE r (id int PRIMARY KEY, note text); INSERT INTO r VALUES (0, 'old')");
    // Every 20th line after the 100th repeats the key of a line 61 back,
    // every 1,000th the table's own row.
    let (data, duplicates) = keyed_lines(20_000, |line| match line {
        _ if line % 1000 == 0 => 0,
        _ if line > 100 && line % 20 == 0 => line - 61,
        _ => line,
    });
    let file = db.file("r.tsv", data.as_bytes());
    let loaded = load_with_rejects(&db, &file, "r", &["--workers", "1", "--chunk-size", "64MiB"]);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
    assert_accounts(&loaded.report);
    assert_eq!(loaded.rejects.len() as u64, duplicates, "each duplicate rejected once");
    for reject in &loaded.rejects {
        assert_eq!(reject["sqlstate"], "23505", "{reject}");
        let raw = reject["raw"].as_str().unwrap();
        let (id, line) = raw.trim_end().split_once("\tline ").unwrap();
        assert_ne!(id, line, "the first line of a key is kept: {raw}");
        let reason =
            format!("duplicate key value violates unique constraint \"r_pkey\" (Key (id)=({id}) already exists.)");
        assert_eq!(reject["reason"], reason.as_str(), "the server's words");
    }
    assert_eq!(first_lines_kept(&db, "r"), 20_001 - duplicates, "every key from its first line");
    let copies = loaded.report["chunks"][0]["isolation_copies"].as_u64().unwrap();
    assert!(copies <= 20, "{copies} COPY statements for {duplicates} duplicates in one chunk");
}

/// A file whose first records already repeat keys densely loads as one
/// does once a chunk showed it: workers load side by side from the first
/// chunk, each setting aside the records whose keys an earlier chunk still
/// loading has, and isolation looks the keys up first, so the first chunk costs a few
/// COPY statements, not one per duplicate it meets before it knows, and
/// the first line of every key is kept, whichever worker is faster.
#[test]
fn duplicates_dense_in_the_first_records_are_looked_up_from_the_first_chunk() {
    let db = TestDb::new();
    db.execute("CREATE TABLE f (id int PRIMARY KEY, note text); INSERT INTO f VALUES (0, 'old')");
    let (data, duplicates) = keyed_lines(30_000, |line| if line > 20 && line % 10 == 0 { line - 7 } else { line });
    let file = db.file("f.tsv", data.as_bytes());
    let loaded = load_with_rejects(&db, &file, "f", &["--workers", "2", "--chunk-size", "64KiB"]);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
    assert_accounts(&loaded.report);
    assert_eq!(loaded.rejects.len() as u64, duplicates, "each duplicate rejected once");
    assert!(loaded.run.output().contains("workers loaded side by side"), "{}", loaded.run.output());
    assert_eq!(first_lines_kept(&db, "f"), 30_001 - duplicates, "every key from its first line");
    let first = &loaded.report["chunks"][0];
    let copies = first["isolation_copies"].as_u64().unwrap();
    assert!(copies <= 4, "{copies} COPY statements for the first chunk's {} duplicates", first["rejected"]);
}

/// The key check probes only keys between the table's least and greatest
/// first key column (new keys past them cannot be held): with a composite
/// key led by a date and a uuid key, keys the table held before the load
/// and keys the file repeats are each rejected once, at their lines, and
/// every other record loads.
#[test]
fn keys_held_before_the_load_and_repeated_in_the_file_are_found_by_range() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE k (d date, n int, u uuid UNIQUE, note text, PRIMARY KEY (d, n)); \
         INSERT INTO k SELECT date '2024-01-01' + i % 50, i, \
           ('00000000-0000-0000-0000-' || lpad(to_hex(i), 12, '0'))::uuid, 'old' FROM generate_series(1, 500) i",
    );
    let uuid = |x: u64| format!("00000000-0000-0000-0000-{x:012x}");
    let mut data = String::new();
    let mut bad_lines = Vec::new();
    for line in 1..=6_000u64 {
        let (d, n, u) = match line {
            // The primary key of a row the table held.
            _ if line % 10 == 0 => (format!("2024-01-{:02}", (line / 10) % 50 % 31 + 1), 0, uuid(1_000_000 + line)),
            // The uuid of a row the table held, or of an earlier line.
            _ if line % 13 == 0 => (format!("2024-06-{:02}", line % 28 + 1), 10_000 + line, uuid(line % 500 + 1)),
            _ if line % 17 == 0 && line > 100 => {
                (format!("2024-07-{:02}", line % 28 + 1), 10_000 + line, uuid(100_000 + line - 50))
            }
            _ => (format!("2024-05-{:02}", line % 28 + 1), 10_000 + line, uuid(100_000 + line)),
        };
        let n = if n == 0 {
            // A (d, n) the table holds: n = i with d = 2024-01-01 + i % 50.
            let day: u64 = d[8..].parse().unwrap();
            (day - 1) + 50 * (line % 9 + 1)
        } else {
            n
        };
        data.push_str(&format!("{d}\t{n}\t{u}\tline {line}\n"));
        // Lines that took none of the branches above have their own uuid.
        let plain = |l: u64| l % 10 != 0 && l % 13 != 0 && !(l % 17 == 0 && l > 100);
        let repeats_earlier = line % 17 == 0 && line > 100 && line % 10 != 0 && line % 13 != 0 && plain(line - 50);
        if line % 10 == 0 || line % 13 == 0 || repeats_earlier {
            bad_lines.push(line);
        }
    }
    let file = db.file("k.tsv", data.as_bytes());
    let loaded = load_with_rejects(&db, &file, "k", &["--workers", "2", "--chunk-size", "32KiB"]);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
    assert_accounts(&loaded.report);
    let mut rejected: Vec<u64> = loaded.rejects.iter().map(|r| r["line"].as_u64().unwrap()).collect();
    rejected.sort();
    assert_eq!(rejected, bad_lines, "exactly the duplicates, each once");
    assert!(loaded.rejects.iter().all(|r| r["sqlstate"] == "23505"), "only duplicate keys");
    assert_eq!(db.count("k"), 500 + 6_000 - bad_lines.len() as u64);
    // Found by the key check, not by a COPY each.
    let copies = isolation_copies(&loaded.report);
    assert!(copies * 4 < bad_lines.len() as u64, "{copies} COPY statements for {} duplicates", bad_lines.len());
}

/// The rows whose key the key check found are locked until the chunk
/// commits, also after a later COPY of the chunk is refused and rolled back
/// to its savepoint: another session cannot delete them meanwhile, which
/// would turn a record rejected as a duplicate into one the server takes.
#[test]
fn rows_a_duplicate_was_rejected_for_stay_locked_until_the_chunk_commits() {
    let db = TestDb::new();
    db.execute(
        "CREATE DOMAIN positive AS int CHECK (VALUE > 0); \
         CREATE TABLE k (id int PRIMARY KEY, v positive); \
         INSERT INTO k SELECT g, 1 FROM generate_series(1, 100) g",
    );
    // The first chunk (1 KiB) repeats the table's keys: from then on
    // duplicates are known to be dense. The second repeats some more, then
    // has a value only the server refuses (a rollback to the run's
    // savepoint) and a key another session is inserting (a wait).
    let line = |i: u32| match i % 2 {
        0 => format!("{}\t1\n", i / 2 % 100 + 1),
        _ => format!("{}\t1\n", 1000 + i),
    };
    let mut data: String = (0..240).map(line).collect();
    data.push_str("2000\t-5\n500\t1\n");
    assert!(data.len() < 2048, "two chunks");
    let file = db.file("k.tsv", data.as_bytes());
    let inserting = db.session();
    inserting.execute("BEGIN; INSERT INTO k VALUES (500, 7)").unwrap();
    std::thread::scope(|scope| {
        let load = scope.spawn(|| load_with_rejects(&db, &file, "k", &["--workers", "1", "--chunk-size", "1KiB"]));
        let watcher = db.session();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        // In this test's database: the tests share one server, and another
        // test's wait would end this one's too early.
        let waiting = "SELECT count(*) FROM pg_locks JOIN pg_stat_activity USING (pid) \
                       WHERE locktype = 'transactionid' AND NOT granted AND datname = current_database()";
        while watcher.query(waiting, &[]).unwrap()[0][0].as_deref() == Some("0") {
            assert!(std::time::Instant::now() < deadline, "the load never waited for the other insert");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let deleting = watcher.execute("BEGIN; SELECT id FROM k WHERE id <= 100 FOR UPDATE NOWAIT");
        let _ = watcher.execute("ROLLBACK");
        inserting.execute("ROLLBACK").unwrap();
        let loaded = load.join().unwrap();
        assert!(deleting.is_err(), "rows the rejected records' keys are in could be deleted mid-chunk");
        assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
        assert_accounts(&loaded.report);
        assert_eq!(loaded.rejects.len(), 121, "{}", loaded.run.output());
        let domain = loaded.rejects.iter().filter(|r| r["sqlstate"] == "23514").count();
        assert_eq!(domain, 1, "the value only the server refuses");
        assert_eq!(
            db.scalar("SELECT v FROM k WHERE id = 500"),
            "1",
            "the file's row, once the other insert rolled back"
        );
    });
}

/// A record whose key the table holds and whose other value the server
/// refuses is rejected for the value, as COPY reads every value before it
/// meets the key, also once duplicates are dense and the key check rejects
/// the others without a COPY. `300.1.1.1` is an inet the client suspects;
/// `5 parsecs` an interval it does not, which the check of the held records'
/// values finds only when its one statement for them all fails and it
/// checks them one by one.
#[test]
fn a_held_key_with_a_bad_value_is_rejected_for_the_value() {
    held_keys_with_bad_values("inet", "10.0.0.1", "300.1.1.1", "22P02", "type inet: \"300.1.1.1\"");
    held_keys_with_bad_values("interval", "5 days", "5 parsecs", "22007", "type interval: \"5 parsecs\"");
}

/// One in three of 3,000 records repeats a key of the 1,000 rows the
/// table holds, each with `good` in its `v` column of `sql_type`, but one
/// in ten of those after line 2,000 with `bad`: rejected with `sqlstate`
/// for it.
fn held_keys_with_bad_values(sql_type: &str, good: &str, bad: &str, sqlstate: &str, says: &str) {
    let db = TestDb::new();
    db.execute(&format!(
        "CREATE TABLE h (id int PRIMARY KEY, v {sql_type}); \
         INSERT INTO h SELECT g, '{good}' FROM generate_series(1, 1000) g"
    ));
    let (mut data, mut held, mut bad_lines) = (String::new(), 0, Vec::new());
    for line in 1..=3000u32 {
        let (id, value) = match line % 3 {
            0 if line > 2000 && line % 30 == 0 => (line / 3 % 1000 + 1, bad),
            0 => (line / 3 % 1000 + 1, good),
            _ => (10_000 + line, good),
        };
        held += u32::from(line % 3 == 0);
        if value == bad {
            bad_lines.push(u64::from(line));
        }
        data.push_str(&format!("{id}\t{value}\n"));
    }
    let file = db.file("h.tsv", data.as_bytes());
    let loaded = load_with_rejects(&db, &file, "h", &["--workers", "1", "--chunk-size", "4KiB"]);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
    assert_accounts(&loaded.report);
    assert_eq!(loaded.rejects.len() as u32, held, "every held key rejected once");
    let for_the_value: Vec<u64> =
        loaded.rejects.iter().filter(|r| r["sqlstate"] == sqlstate).map(|r| r["line"].as_u64().unwrap()).collect();
    assert_eq!(for_the_value, bad_lines, "rejected for the {sql_type}");
    for reject in loaded.rejects.iter().filter(|r| r["sqlstate"] == sqlstate) {
        assert!(reject["reason"].as_str().unwrap().contains(says), "{reject}");
        assert_eq!(reject["column"], "v", "{reject}");
    }
    // The key check did reject the others without a COPY each.
    let copies = isolation_copies(&loaded.report);
    assert!(copies * 2 < u64::from(held), "{copies} COPY statements for {held} duplicates");
    assert_eq!(db.count("h"), 1000 + 2000);
}

/// A file whose dates are written day first, loaded month first (the
/// server's default DateStyle): its dates up to the 12th load with day and
/// month swapped and the others are rejected, where psql's COPY would stop
/// at the first. The summary says so and names the setting that reads them
/// as written; with it, every date loads right. A date that exists in
/// neither order is no sign of the other order.
#[test]
fn dates_written_day_first_loaded_month_first_are_named_with_the_setting_that_reads_them() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, d date)");
    let data: String = (0..400).map(|i| format!("{i},{:02}/{:02}/2024\n", i % 28 + 1, i % 12 + 1)).collect();
    let file = db.file("dmy.csv", data.as_bytes());
    let Loaded { run, rejects: found, report: r, .. } = load_with_rejects(&db, &file, "t", &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let day_after_12th = (0..400).filter(|i| i % 28 + 1 > 12).count();
    assert_eq!(found.len(), day_after_12th);
    let warning = format!(
        "{day_after_12th} dates were rejected that exist only when read day first (DateStyle ISO, MDY reads month \
         first), the first \"13/01/2024\" ("
    );
    assert!(run.stderr.contains(&warning), "{}", run.stderr);
    assert!(run.stderr.contains("dmy.csv line 13, column d): the input's dates look day first"), "{}", run.stderr);
    assert!(run.stderr.contains("PGDATESTYLE='ISO, DMY'"), "{}", run.stderr);
    assert_reported(&r, &warning);
    // With the setting the warning gives: every date as written.
    let day_first = format!("{} options='-c datestyle=ISO,DMY'", db.conninfo());
    let file = file.to_str().unwrap();
    sluice(&["load", "--db", &day_first, file, "--table", "t", "--truncate", "--restart"]).assert_ok();
    assert_eq!(db.scalar("SELECT count(*) FROM t WHERE extract(day FROM d) = id % 28 + 1"), "400");
    // On a long load the first such date is shown as soon as its chunk
    // commits, while the load goes on, not only in the summary's warnings.
    let long: String = (0..1_000_000)
        .map(|i| {
            if i < 400 {
                format!("{i},{:02}/{:02}/2024\n", i % 28 + 1, i % 12 + 1)
            } else {
                format!("{i},2024-03-01\n")
            }
        })
        .collect();
    let long = db.file("long.csv", long.as_bytes());
    let flags = ["--truncate", "--restart", "--workers", "1", "--chunk-size", "64KiB", "--progress-interval", "0.05"];
    let Loaded { run, .. } = load_with_rejects(&db, &long, "t", &flags);
    let alert = "sluice: warning: so far, 224 dates were rejected that exist only when read day first (DateStyle \
                 ISO, MDY reads month first), the first \"13/01/2024\" (";
    let advice = "long.csv line 13, column d): the input's dates look day first, so the rows loaded may hold day \
                  and month swapped (those with a day up to the 12th). Delete the rows this load committed and load \
                  again with --restart and PGDATESTYLE='ISO, DMY' (or options='-c datestyle=ISO,DMY' in --db). The load goes on \
                  committing rows: stop it (Ctrl-C) to load again as this says";
    let (alerted, summary) = (run.stderr.find(alert), run.stderr.find("sluice: warning: 224 dates were rejected"));
    assert!(alerted.is_some() && alerted < summary, "{}", run.stderr);
    assert!(run.stderr.contains(advice), "{}", run.stderr);
    assert_eq!(run.stderr.matches("so far,").count(), 1, "once: {}", run.stderr);
    // A day that exists in neither order: rejected, and no such warning.
    let bad = db.file("bad.csv", b"1,02/30/2024\n2,01/05/2024\n");
    let Loaded { run, rejects: found, .. } = load_with_rejects(&db, &bad, "t", &["--truncate", "--restart"]);
    assert_eq!((run.code, found.len()), (1, 1), "{}", run.stderr);
    assert!(!run.stderr.contains("look day first"), "{}", run.stderr);
}

/// In the text format NULL is `\N` and an empty field an empty string,
/// which a number or a date refuses: a TSV whose NULLs are written as
/// nothing has those records rejected. The summary names `--null ''`, with
/// which they load as NULLs; a refused value that is not empty, or an
/// empty one in a text column, is no such sign.
#[test]
fn empty_fields_a_typed_column_refuses_are_named_with_the_null_option() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, amount numeric, d date, name text)");
    let data: String = (0..300)
        .map(|i| match i % 3 {
            0 => format!("{i}\t\t2024-01-01\t\n"),
            1 => format!("{i}\t1.5\t\tx\n"),
            _ => format!("{i}\t2\t2024-01-02\ty\n"),
        })
        .collect();
    let file = db.file("empty.tsv", data.as_bytes());
    let Loaded { run, rejects: found, report: r, .. } = load_with_rejects(&db, &file, "t", &[]);
    assert_eq!((run.code, found.len()), (1, 200), "{}", run.stderr);
    let warning = "200 records were rejected for an empty field its column's type does not take (the first: ";
    assert!(run.stderr.contains(warning), "{}", run.stderr);
    assert!(run.stderr.contains("empty.tsv line 1, column amount). In the text format NULL is \\N"), "{}", run.stderr);
    assert!(run.stderr.contains("If empty fields mean NULL, pass --null ''"), "{}", run.stderr);
    assert_reported(&r, warning);
    let Loaded { run, rejects: found, .. } =
        load_with_rejects(&db, &file, "t", &["--null", "", "--truncate", "--restart"]);
    assert_eq!((run.code, found.len()), (0, 0), "{}", run.stderr);
    assert_eq!(db.scalar("SELECT count(*) FILTER (WHERE amount IS NULL) || ' ' || count(d) FROM t"), "100 200");
    let other = db.file("other.tsv", b"1\tx\t2024-01-01\ta\n");
    let Loaded { run, rejects: found, .. } = load_with_rejects(&db, &other, "t", &[]);
    assert_eq!((run.code, found.len()), (1, 1), "{}", run.stderr);
    assert!(!run.stderr.contains("--null ''"), "{}", run.stderr);
}

/// A spreadsheet's export with decimal commas (`2,50`, `1.234,00`), which
/// the server refuses for a number: the summary counts those records and
/// says why (its reason only says "invalid input syntax"); a number the
/// server refuses for another cause is no such sign.
#[test]
fn numbers_with_a_decimal_comma_are_named_as_such() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text, price numeric(10,2))");
    let file = db.file("euro.csv", b"id;name;price\r\n1;apple;2,50\r\n2;pear;1.234,00\r\n3;plum;3\r\n4;fig;n/a\r\n");
    let Loaded { run, rejects: found, report: r, rejects_path } =
        load_with_rejects(&db, &file, "t", &["--header", "--delimiter", ";"]);
    assert_eq!((run.code, found.len(), db.count("t")), (1, 3, 1), "{}", run.stderr);
    let warning = "2 numbers were rejected for a decimal comma (the first: \"2,50\", ";
    assert!(run.stderr.contains(warning), "{}", run.stderr);
    assert!(run.stderr.contains("euro.csv line 2, column price): PostgreSQL reads numbers with a decimal point only"));
    assert!(run.stderr.contains("to load only the rejected records, pipe `sluice rejects` of the rejects file"));
    assert_reported(&r, warning);
    // As the warning says: the rejected records alone, with the flag. The
    // value that is no number at all is rejected again.
    let records = sluice(&["rejects", rejects_path.to_str().unwrap(), "--column", "price"]);
    assert_eq!(records.stdout, "1;apple;2,50\r\n2;pear;1.234,00\r\n4;fig;n/a\r\n", "{}", records.stderr);
    assert!(records.stderr.contains("wrote 3 rejected records"), "{}", records.stderr);
    // With why they were rejected, as the load's summary counted them.
    let kinds: Vec<&str> = records.stderr.lines().filter_map(|l| l.strip_prefix("sluice:   ")).collect();
    assert_eq!(kinds.len(), 1, "{}", records.stderr);
    assert!(kinds[0].starts_with("3 records, column \"price\": invalid input syntax for type numeric: \"2,50\""));
    assert!(kinds[0].contains("(the first: ") && kinds[0].ends_with("euro.csv line 2)"), "{kinds:?}");
    let only = sluice(&["rejects", rejects_path.to_str().unwrap(), "--reason", "\"1.234,00\""]);
    assert_eq!(only.stdout, "2;pear;1.234,00\r\n", "{}", only.stderr);
    let db_arg = db.conninfo();
    let args = ["load", "--db", &db_arg, "-", "--table", "t", "--format", "csv", "--delimiter", ";", "--decimal-comma"];
    let again = crate::util::sluice_with_stdin(&args[..], records.stdout.as_bytes());
    assert_eq!(again.code, 1, "{}", again.stderr);
    assert_eq!(db.scalar("SELECT string_agg(price::text, ' ' ORDER BY id) FROM t"), "2.50 1234.00 3.00");
    // Every record with one: the stop says it, before any summary would.
    let all: String = (0..1_200).map(|i| format!("{i};n{i};{i},50\n")).collect();
    let all = db.file("all.csv", all.as_bytes());
    let Loaded { run, .. } = load_with_rejects(&db, &all, "t", &["--delimiter", ";"]);
    assert_eq!(run.code, 5, "{}", run.stderr);
    let advice = "\"0,50\" has a decimal comma, which PostgreSQL does not read: pass --decimal-comma";
    assert!(run.stderr.contains(advice), "{}", run.stderr);
    let other = db.file("other.csv", b"5;kiwi;n/a\r\n");
    let Loaded { run, .. } = load_with_rejects(&db, &other, "t", &["--delimiter", ";"]);
    assert!(!run.stderr.contains("decimal comma"), "{}", run.stderr);
}

/// A formatted export with commas between thousands (`"1,234.50"`, as US
/// spreadsheets write them; `12,34,567` as Indian ones group them): without
/// `--thousands` the summary counts those numbers and names the flag; a
/// lone `1,234`, which a decimal comma reads too, names both flags unless
/// another number told which. With the flag, in text and binary COPY, each
/// value loads as the server reads it with its commas removed, and a comma
/// elsewhere (`1,5`) is rejected at its line with its column named.
#[test]
fn numbers_with_commas_between_thousands_are_named_and_load_with_thousands() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, price numeric(20,4), qty bigint, f float8, price_text text)");
    let file = db.file("us.csv", b"id,price\n1,\"1,234.50\"\n2,\"12,34,567.5\"\n3,7\n4,\"-1,000\"\n");
    let Loaded { run, rejects: found, report: r, rejects_path } =
        load_with_rejects(&db, &file, "t", &["--header", "--truncate"]);
    assert_eq!((run.code, found.len(), db.count("t")), (1, 3, 1), "{}", run.stderr);
    let warning = "2 numbers were rejected for marks between thousands (the first: \"1,234.50\", ";
    assert!(run.stderr.contains(warning), "{}", run.stderr);
    let fix = "us.csv line 2, column price): PostgreSQL reads numbers without them; pass --thousands ',', which \
               removes the commas between thousands";
    assert!(run.stderr.contains(fix), "{}", run.stderr);
    assert_reported(&r, warning);
    assert!(!run.stderr.contains("decimal comma") && !run.stderr.contains("either"), "{}", run.stderr);
    // Another job: the file is left out as loaded, not the job found finished.
    let run = db.load(&[file.to_str().unwrap(), "--table", "t", "--header", "--thousands", ","]);
    assert!(run.stderr.contains("loaded it into public.t in full"), "{}", run.stderr);
    // As the warning says: the rejected records alone, with the flag.
    let records = sluice(&["rejects", rejects_path.to_str().unwrap()]);
    let db_arg = db.conninfo();
    let args = ["load", "--db", &db_arg, "-", "--table", "t", "--format", "csv", "--columns", "id,price"];
    let again = crate::util::sluice_with_stdin(&[&args[..], &["--thousands", ","]].concat(), records.stdout.as_bytes());
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stderr.contains("reading the numbers of id, price with commas between thousands, as asked"));
    assert_eq!(
        db.scalar("SELECT string_agg(price::text, ' ' ORDER BY id) FROM t"),
        "1234.5000 1234567.5000 7.0000 -1000.0000"
    );
    // `1,234` alone reads either way; beside `2,5` it is a decimal comma.
    let either = db.file("either.csv", b"id,price\n1,\"1,234\"\n2,\"-12,500\"\n");
    let Loaded { run, report: r, .. } = load_with_rejects(&db, &either, "t", &["--header"]);
    let warning = "2 numbers were rejected for a comma (the first: \"1,234\", ";
    let fix = "either.csv line 2, column price) that stands either between thousands or before a fraction, and \
               PostgreSQL reads neither: as the file writes its numbers, pass --thousands ',' (1,234 is 1234) or \
               --decimal-comma (1,234 is 1.234)";
    assert!(run.stderr.contains(warning) && run.stderr.contains(fix), "{}", run.stderr);
    assert_reported(&r, fix);
    let told = db.file("told.csv", b"id,price\n1,\"1,234\"\n2,\"2,5\"\n");
    let Loaded { run, .. } = load_with_rejects(&db, &told, "t", &["--header"]);
    assert!(run.stderr.contains("1 number was rejected for a decimal comma (the first: \"2,5\""), "{}", run.stderr);
    assert!(!run.stderr.contains("either"), "{}", run.stderr);
    // Every record with one: the stop says it. Apostrophes, as Swiss exports write them.
    let all: String = (0..1_200).map(|i| format!("{i}\t{i}'000.5\n")).collect();
    let all = db.file("all.tsv", all.as_bytes());
    let Loaded { run, .. } = load_with_rejects(&db, &all, "t", &["--columns", "id,price"]);
    assert_eq!(run.code, 5, "{}", run.stderr);
    let advice = "\"0'000.5\" has marks between thousands, which PostgreSQL does not read: pass --thousands \"'\", \
                  which removes the apostrophes between thousands (1'234.5)";
    assert!(run.stderr.contains(advice), "{}", run.stderr);
    let all: String = (0..1_200).map(|i| format!("{i},\"{},500\"\n", i % 1_000)).collect();
    let all = db.file("either_all.csv", all.as_bytes());
    let Loaded { run, .. } = load_with_rejects(&db, &all, "t", &["--columns", "id,price"]);
    assert_eq!(run.code, 5, "{}", run.stderr);
    let advice = "\"0,500\" has a comma that stands either between thousands or before a fraction";
    assert!(run.stderr.contains(advice), "{}", run.stderr);
    // Random numbers grouped the Western or the Indian way, some misplaced.
    let mut rng = Rng(fuzz_seed() ^ 0x7_4005);
    let (mut data, mut bad_lines) = ("id,price,qty,f,price_text\n".to_string(), Vec::new());
    for id in 0..3_000u64 {
        let width = 1 + rng.below(11) as u32;
        let digits = rng.below(10u64.pow(width)).to_string();
        let mut groups = vec![&digits[digits.len().saturating_sub(3)..]];
        let mut rest = &digits[..digits.len().saturating_sub(3)];
        let width = if rng.below(2) == 0 { 3 } else { 2 };
        while !rest.is_empty() {
            groups.insert(0, &rest[rest.len().saturating_sub(width)..]);
            rest = &rest[..rest.len().saturating_sub(width)];
        }
        let fraction = if rng.below(2) == 0 { String::new() } else { format!(".{}", rng.below(10_000)) };
        let mut price = format!("{}{}{fraction}", rng.pick(&["", "-", "+"]), groups.join(","));
        if id % 997 == 5 {
            price = format!("{},{}", 1 + rng.below(99), 1 + rng.below(99));
            bad_lines.push(id + 2);
        }
        let qty = rng.pick(&["1,234,567", "-12"]);
        data.push_str(&format!("{id},\"{price}\",\"{qty}\",\"{price}\",\"{price}\"\n"));
    }
    let random = db.file("random.csv", data.as_bytes());
    for copy_format in ["text", "binary"] {
        let flags = ["--header", "--truncate", "--restart", "--thousands", ",", "--chunk-size", "16KiB"];
        let Loaded { run, rejects: found, .. } =
            load_with_rejects(&db, &random, "t", &[&flags[..], &["--copy-format", copy_format]].concat());
        assert_eq!(run.code, 1, "{copy_format}: {}", run.stderr);
        let copied =
            if copy_format == "binary" { "10 chunks, binary COPY\n" } else { "text COPY (--copy-format text)" };
        assert!(run.stdout.contains(copied), "{copy_format}: {}", run.stdout);
        let rejected: Vec<u64> = found.iter().map(|r| r["line"].as_u64().unwrap()).collect();
        assert_eq!(rejected, bad_lines, "{copy_format}: {}", run.stderr);
        let reason = found[0]["reason"].as_str().unwrap().replace('\'', "\"");
        assert!(reason.starts_with("column \"price\": \""), "{reason}");
        assert!(reason.contains("is no number as --thousands reads them"), "{reason}");
        assert_eq!(db.count("t") as usize, 3_000 - bad_lines.len(), "{copy_format}");
        let wrong = db.scalar(
            "SELECT count(*) || coalesce(' ' || (array_agg(t::text))[1], '') FROM t \
             WHERE price IS DISTINCT FROM replace(price_text, ',', '')::numeric(20,4) \
             OR f IS DISTINCT FROM replace(price_text, ',', '')::float8 OR qty NOT IN (1234567, -12)",
        );
        assert_eq!(wrong, "0", "{copy_format}");
    }
    // A JSON string in a number column is converted; a JSON number is one already.
    let docs = db.file("docs.jsonl", b"{\"id\": 1, \"price\": \"1,234.5\", \"qty\": 12}\n");
    let Loaded { run, .. } = load_with_rejects(&db, &docs, "t", &["--truncate", "--thousands", ","]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(db.scalar("SELECT price || ' ' || qty FROM t"), "1234.5000 12");
}

/// Amounts saved from currency-formatted cells (`$1,234.50`, `($5.00)`,
/// `1.234,50 €`): named with the flags that read them (the marks of a
/// later amount's number when the first had none), loaded with them
/// exactly (random amounts, each way a sign and a minus stand, text and
/// binary COPY, JSON strings), another currency's sign rejected, the stop
/// advised, and the table sketched with number columns.
#[test]
fn amounts_with_a_currency_sign_are_named_and_load_with_currency() {
    let db = TestDb::new();
    db.execute("CREATE TABLE public.m (id int, price numeric(20,4), refund numeric, f float8, want text)");
    let file = db.file("us.csv", b"id,price,refund\n1,$12.00,($5.00)\n2,\"$1,234.50\",-$3.25\n3,7,$ -\n");
    let Loaded { run, rejects: found, report: r, .. } = load_with_rejects(&db, &file, "m", &["--header"]);
    assert_eq!((run.code, found.len(), db.count("m")), (1, 3, 0), "{}", run.stderr);
    let warning = "3 numbers were rejected for a currency sign (the first: \"$12.00\", ";
    let fix = "us.csv line 2, column price): PostgreSQL reads numbers without one; pass --currency '$' --thousands \
               ',', which removes the sign (and reads amounts in parentheses as negative) in number columns";
    assert!(run.stderr.contains(warning) && run.stderr.contains(fix), "{}", run.stderr);
    assert_reported(&r, fix);
    let flags = ["--header", "--load-again", "--currency", "$", "--thousands", ","];
    let Loaded { run, .. } = load_with_rejects(&db, &file, "m", &flags);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run
        .stderr
        .contains("reading the numbers of id, price, refund as amounts in $ with commas between thousands"));
    let loaded = db.scalar("SELECT string_agg(price || '/' || refund, ' ' ORDER BY id) FROM m");
    assert_eq!(loaded, "12.0000/-5.00 1234.5000/-3.25 7.0000/0");
    // Random amounts, the sign and a minus where spreadsheets put them.
    let mut rng = Rng(fuzz_seed() ^ 0xC_0113);
    let (mut data, mut bad_lines) = ("id,price,refund,f,want\n".to_string(), Vec::new());
    for id in 0..3_000u64 {
        let width = 1 + rng.below(10) as u32;
        let digits = rng.below(10u64.pow(width)).to_string();
        let mut grouped = String::new();
        for (at, digit) in digits.chars().enumerate() {
            if at > 0 && (digits.len() - at) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(digit);
        }
        let cents = format!(".{:02}", rng.below(100));
        let (number, plain) = (format!("{grouped}{cents}"), format!("{digits}{cents}"));
        let ways = ["$N", "-$N", "($N)", "$(N)", "$ N", "$-N", "N", "(N)", "- $N"];
        let way = rng.pick(&ways);
        let negative = way.contains('-') || way.contains('(');
        let mut price = way.replace('N', &number);
        if id % 997 == 5 {
            price = format!("€{number}");
            bad_lines.push(id + 2);
        } else if id % 991 == 7 {
            price = format!("$1,{}", rng.below(100));
            bad_lines.push(id + 2);
        }
        let want = format!("{}{plain}", if negative { "-" } else { "" });
        data.push_str(&format!("{id},\"{price}\",\"{price}\",\"{price}\",{want}\n"));
    }
    let random = db.file("amounts.csv", data.as_bytes());
    for copy_format in ["text", "binary"] {
        let flags =
            ["--header", "--truncate", "--restart", "--currency", "$", "--thousands", ",", "--chunk-size", "16KiB"];
        let Loaded { run, rejects: found, .. } =
            load_with_rejects(&db, &random, "m", &[&flags[..], &["--copy-format", copy_format]].concat());
        assert_eq!(run.code, 1, "{copy_format}: {}", run.stderr);
        assert!(run.stdout.contains(&format!("{copy_format} COPY")), "{copy_format}: {}", run.stdout);
        let rejected: Vec<u64> = found.iter().map(|r| r["line"].as_u64().unwrap()).collect();
        assert_eq!(rejected, bad_lines, "{copy_format}: {}", run.stderr);
        for reject in &found {
            let reason = reject["reason"].as_str().unwrap().replace('\'', "\"");
            let why = if reason.contains("\"€") { "reads them: its sign is not \"$\"" } else { "\"1," };
            assert!(reason.contains("is no amount as --currency \"$\" reads them") && reason.contains(why), "{reason}");
        }
        assert_eq!(db.count("m") as usize, 3_000 - bad_lines.len(), "{copy_format}");
        let wrong = db.scalar(
            "SELECT count(*) || coalesce(' ' || (array_agg(m::text))[1], '') FROM m \
             WHERE price IS DISTINCT FROM want::numeric(20,4) OR refund IS DISTINCT FROM want::numeric \
             OR f IS DISTINCT FROM want::float8",
        );
        assert_eq!(wrong, "0", "{copy_format}");
    }
    // Euros in JSON strings; a JSON number is one already.
    let docs = db.file("docs.jsonl", "{\"id\": 1, \"price\": \"1.234,50\u{a0}€\", \"refund\": 2.5}\n".as_bytes());
    let Loaded { run, .. } = load_with_rejects(&db, &docs, "m", &["--truncate", "--currency", "€", "--decimal-comma"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(db.scalar("SELECT price || ' ' || refund FROM m"), "1234.5000 2.5");
    // Every record with one: the stop says it.
    let all: String = (0..1_200).map(|i| format!("{i}\t€{i},5\n")).collect();
    let all = db.file("all.tsv", all.as_bytes());
    let Loaded { run, .. } = load_with_rejects(&db, &all, "m", &["--columns", "id,price"]);
    assert_eq!(run.code, 5, "{}", run.stderr);
    let advice = "\"€0,5\" is an amount with a currency sign, which PostgreSQL does not read as a number: pass \
                  --currency '€' --decimal-comma, which removes the sign";
    assert!(run.stderr.contains(advice), "{}", run.stderr);
    // A table that does not exist yet: sketched with the amounts as numbers.
    let run = db.load(&[file.to_str().unwrap(), "--table", "fresh", "--header", "--currency", "$", "--thousands", ","]);
    assert!(run.stderr.contains("(\"id\" bigint, \"price\" numeric, \"refund\" numeric);"), "{}", run.stderr);
    let run = db.load(&[file.to_str().unwrap(), "--table", "fresh", "--header"]);
    let note = "(\"id\" bigint, \"price\" text, \"refund\" text); Columns \"price\", \"refund\" are text here, but \
                hold numbers as --currency '$' --thousands ',' reads them (\"$12.00\"): with those flags, they load as \
                numeric.";
    assert!(run.stderr.contains(note), "{}", run.stderr);
    let run = db.load(&[file.to_str().unwrap(), "--table", "m", "--currency", "1$"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("\"1$\" is no currency sign sluice reads"), "{}", run.stderr);
}

/// Percentages as spreadsheets save percentage cells (`12.5%`): named
/// with `--percent` (and the marks their numbers need), loaded with it as
/// the hundredths they stand for, exactly (numeric and float, text and
/// binary COPY), and the stop advised when every first record has one.
#[test]
fn percentages_are_named_and_load_as_hundredths() {
    let db = TestDb::new();
    db.execute("CREATE TABLE public.p (id int, share numeric, f float8, want text)");
    let mut rng = Rng(fuzz_seed() ^ 0x9E4C);
    let mut data = String::from("id,share,f,want\n");
    for id in 0..2_000u64 {
        let width = 1 + rng.below(4) as u32;
        let whole = rng.below(10u64.pow(width));
        let fraction = rng.pick(&["", ".5", ".125", ".07", ".999"]);
        let sign = rng.pick(&["", "-"]);
        let space = rng.pick(&["", " ", "\u{a0}"]);
        let share = format!("{sign}{whole}{fraction}{space}%");
        data.push_str(&format!("{id},\"{share}\",\"{share}\",{sign}{whole}{fraction}\n"));
    }
    let file = db.file("shares.csv", data.as_bytes());
    let Loaded { run, .. } = load_with_rejects(&db, &file, "p", &["--header", "--max-errors", "10000"]);
    assert_eq!((run.code, db.count("p")), (1, 0), "{}", run.stderr);
    let warning = "2,000 numbers were rejected for a percent sign (the first: ";
    let fix = "PostgreSQL reads numbers without one; pass --percent, which reads 12.5% as 0.125 in number columns";
    assert!(run.stderr.contains(warning) && run.stderr.contains(fix), "{}", run.stderr);
    for copy_format in ["text", "binary"] {
        let flags = ["--header", "--load-again", "--truncate", "--restart", "--percent", "--chunk-size", "16KiB"];
        let Loaded { run, .. } =
            load_with_rejects(&db, &file, "p", &[&flags[..], &["--copy-format", copy_format]].concat());
        assert_eq!(run.code, 0, "{copy_format}: {}", run.stderr);
        assert!(run.stdout.contains(&format!("{copy_format} COPY")), "{copy_format}: {}", run.stdout);
        let wrong = db.scalar(
            "SELECT count(*) || coalesce(' ' || (array_agg(p::text))[1], '') FROM p \
             WHERE share IS DISTINCT FROM want::numeric / 100 OR f IS DISTINCT FROM (want || 'e-2')::float8",
        );
        assert_eq!((db.count("p"), wrong), (2_000, "0".to_string()), "{copy_format}");
    }
    // Every record with one, in a decimal comma: the stop names both flags.
    let all: String = (0..1_200).map(|i| format!("{i};{i},5 %\n")).collect();
    let all = db.file("all.csv", all.as_bytes());
    let Loaded { run, .. } = load_with_rejects(&db, &all, "p", &["--columns", "id,share", "--delimiter", ";"]);
    assert_eq!(run.code, 5, "{}", run.stderr);
    let advice =
        "\"0,5 %\" is a percentage, which PostgreSQL does not read as a number: pass --decimal-comma --percent";
    assert!(run.stderr.contains(advice), "{}", run.stderr);
}

/// Negative numbers with their minus after the digits (`1.234,50-`), as
/// SAP's exports write them: named with `--trailing-minus` (and the marks
/// their numbers need), loaded with it (text and binary COPY), a part
/// number with a minus at its end left as it is in its text column, and
/// the sketch of a missing table names the flags.
#[test]
fn minuses_after_the_digits_are_named_and_load_negative() {
    let db = TestDb::new();
    db.execute("CREATE TABLE public.sap (material text, amount numeric, f float8, want text)");
    let mut rng = Rng(fuzz_seed() ^ 0x5A9);
    let mut data = String::from("Material;Amount;F;Want\n");
    for _ in 0..2_000u64 {
        let digits = 1 + rng.below(7) as u32;
        let whole = rng.below(10u64.pow(digits));
        let cents = rng.below(100);
        let grouped = whole
            .to_string()
            .as_bytes()
            .rchunks(3)
            .rev()
            .map(|g| std::str::from_utf8(g).unwrap())
            .collect::<Vec<_>>()
            .join(".");
        let (minus, sign) = if rng.below(2) == 0 { ("-", "-") } else { ("", "") };
        let amount = format!("{grouped},{cents:02}{minus}");
        data.push_str(&format!("M-{whole}-;{amount};{amount};{sign}{whole}.{cents:02}\n"));
    }
    let file = db.file("sap.csv", data.as_bytes());
    let flags = ["--header", "--delimiter", ";", "--max-errors", "10000"];
    let missing = db.load(&[file.to_str().unwrap(), "--table", "missing", "--delimiter", ";", "--header"]);
    let sketched = "numbers as --decimal-comma --trailing-minus reads them";
    assert!(missing.stderr.contains(sketched), "{}", missing.stderr);
    // No flag: the server refuses every number; the warning names both flags.
    let Loaded { run, .. } = load_with_rejects(&db, &file, "sap", &flags);
    assert_eq!((run.code, db.count("sap")), (1, 0), "{}", run.stderr);
    let warning = "rejected for a minus after the digits (the first: ";
    let fix = "PostgreSQL reads a minus only before them; pass --decimal-comma --trailing-minus, which reads 5.00- \
               as -5.00 in number columns";
    assert!(run.stderr.contains(warning) && run.stderr.contains(fix), "{}", run.stderr);
    // --decimal-comma alone: refused on the client, with the flag named.
    let again = ["--load-again", "--truncate", "--restart"];
    let Loaded { run, rejects, .. } =
        load_with_rejects(&db, &file, "sap", &[&flags[..], &again[..], &["--decimal-comma"]].concat());
    assert_eq!(run.code, 1, "{}", run.stderr);
    let minuses = data.lines().filter(|l| l.ends_with(|c: char| c.is_ascii_digit()) && l.contains(";-")).count();
    assert!(minuses > 900, "{minuses} of 2,000");
    assert_eq!(db.count("sap"), 2_000 - minuses as u64, "the rows without a minus loaded");
    let reason = "with its minus after the digits, it reads with --trailing-minus";
    assert!(rejects.iter().all(|r| r["reason"].as_str().unwrap().ends_with(reason)), "{rejects:?}");
    for copy_format in ["text", "binary"] {
        let both = ["--decimal-comma", "--trailing-minus", "--copy-format", copy_format];
        let Loaded { run, .. } = load_with_rejects(&db, &file, "sap", &[&flags[..], &again[..], &both[..]].concat());
        assert_eq!(run.code, 0, "{copy_format}: {}", run.stderr);
        let wrong = db.scalar(
            "SELECT count(*) || coalesce(' ' || (array_agg(sap::text))[1], '') FROM sap \
             WHERE amount IS DISTINCT FROM want::numeric OR f IS DISTINCT FROM want::float8 \
             OR material NOT LIKE 'M-%-'",
        );
        assert_eq!((db.count("sap"), wrong), (2_000, "0".to_string()), "{copy_format}");
    }
}

/// Integers written with a fraction of zeros (`3.0`), as pandas writes an
/// integer column that has a missing value: named with `--zero-fractions`
/// (and the marks their numbers need), loaded with it as the integers they
/// are (text and binary COPY), while another fraction is still rejected and
/// a numeric column keeps its fraction.
#[test]
fn integers_with_a_fraction_of_zeros_are_named_and_load_whole() {
    let db = TestDb::new();
    db.execute("CREATE TABLE public.frame (id bigint, qty int, small smallint, price numeric, want int)");
    let mut rng = Rng(fuzz_seed() ^ 0x0F0);
    let mut data = String::from("id,qty,small,price,want\n");
    for i in 0..3_000u64 {
        let want = rng.below(100_000) as i64 - 50_000;
        let zeros = "0".repeat(1 + rng.below(3) as usize);
        let (qty, want) =
            if i % 7 == 0 { (String::new(), String::new()) } else { (format!("{want}.{zeros}"), want.to_string()) };
        data.push_str(&format!("{i}.0,{qty},\"{}.0\",{}.50,{want}\n", i % 100, i % 10));
    }
    data.push_str("3000.0,2.5,1.0,1.0,\n");
    let file = db.file("frame.csv", data.as_bytes());
    let flags = ["--header", "--max-errors", "10000"];
    // No flag: every record is rejected; the warning names the flag.
    let Loaded { run, .. } = load_with_rejects(&db, &file, "frame", &flags);
    assert_eq!((run.code, db.count("frame")), (1, 0), "{}", run.stderr);
    let warning = "3,001 integers were rejected for a fraction of zeros (the first: \"0.0\", ";
    let fix = "PostgreSQL reads no fraction in an integer; pass --zero-fractions, which reads 3.0 as 3 in integer \
               columns. No row loaded: run the same command again with it";
    assert!(run.stderr.contains(warning) && run.stderr.contains(fix), "{}", run.stderr);
    let again = ["--load-again", "--truncate", "--restart"];
    for copy_format in ["text", "binary"] {
        let given = ["--zero-fractions", "--copy-format", copy_format];
        let Loaded { run, rejects, .. } =
            load_with_rejects(&db, &file, "frame", &[&flags[..], &again[..], &given[..]].concat());
        assert_eq!((run.code, rejects.len()), (1, 1), "{copy_format}: {}", run.stderr);
        assert_eq!(rejects[0]["line"], 3_002, "2.5 is no integer: {rejects:?}");
        let said = "loading values with a fraction of zeros (3.0) in id, qty, small, want as the integers they are";
        assert!(run.stderr.contains(said), "{}", run.stderr);
        let wrong = db.scalar(
            "SELECT count(*) || coalesce(' ' || (array_agg(frame::text))[1], '') FROM frame \
             WHERE qty IS DISTINCT FROM want OR small <> id % 100 OR price <> id % 10 + 0.5",
        );
        assert_eq!((db.count("frame"), wrong), (3_000, "0".to_string()), "{copy_format}");
    }
    // With --decimal-comma, as a spreadsheet formats a count: `1.234,00`.
    db.execute("CREATE TABLE public.counts (n int, share numeric)");
    let counts = db.file("counts.csv", b"\"1.234,00\";\"0,50\"\n\"-7,0\";\"1,00\"\n");
    let both = ["--delimiter", ";", "--decimal-comma", "--zero-fractions"];
    let Loaded { run, .. } = load_with_rejects(&db, &counts, "counts", &both);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(db.scalar("SELECT string_agg(n || ':' || share, ' ' ORDER BY n) FROM counts"), "-7:1.00 1234:0.50");
    // Counts formatted with commas between thousands: named with the flag.
    db.execute("CREATE TABLE tally (n int, label text)");
    let counts = db.file("tally.csv", b"\"1,234\",a\n7,b\n\"12,000\",c\n");
    let Loaded { run, .. } = load_with_rejects(&db, &counts, "tally", &[]);
    assert_eq!((run.code, db.count("tally")), (1, 1), "{}", run.stderr);
    let warning = "2 integers were rejected for how they are written (the first: \"1,234\", ";
    let fix = "PostgreSQL reads an integer as digits alone; pass --thousands ',', which read it as the integer it is \
               in integer columns. The other rows loaded as they should";
    assert!(run.stderr.contains(warning) && run.stderr.contains(fix), "{}", run.stderr);
    let Loaded { run, .. } = load_with_rejects(&db, &counts, "tally", &["--thousands", ",", "--truncate"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(db.scalar("SELECT string_agg(n::text, ' ' ORDER BY n) FROM tally"), "7 1234 12000");
}

/// JSON documents into typed columns give the same warnings for the values
/// in them: dates written day first and numbers with a decimal comma (the
/// rejects hold the documents, so their values are read from the records
/// made of them); the text format's signs (an empty string, a word for
/// NULL) name options documents do not take, so they are not given.
#[test]
fn json_documents_dates_day_first_and_decimal_commas_are_named() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, d date, price numeric, n int)");
    let data: String = (0..400)
        .map(|i| {
            let price = if i % 100 == 7 { format!("\"{i},50\"") } else { format!("{i}.5") };
            let n = if i == 3 {
                "\"\""
            } else if i == 5 {
                "\"NULL\""
            } else {
                "1"
            };
            format!("{{\"id\":{i},\"d\":\"{:02}/{:02}/2024\",\"price\":{price},\"n\":{n}}}\n", i % 28 + 1, i % 12 + 1)
        })
        .collect();
    let file = db.file("dmy.jsonl", data.as_bytes());
    let Loaded { run, report: r, .. } = load_with_rejects(&db, &file, "t", &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let day_after_12th = (0..400).filter(|i| i % 28 + 1 > 12).count();
    let dates = format!("{day_after_12th} dates were rejected that exist only when read day first");
    assert!(run.stderr.contains(&dates), "{}", run.stderr);
    assert!(run.stderr.contains("dmy.jsonl line 13, column d): the input's dates look day first"), "{}", run.stderr);
    let commas = "numbers were rejected for a decimal comma (the first: \"7,50\", ";
    assert!(run.stderr.contains(commas) && run.stderr.contains("dmy.jsonl line 8, column price)"), "{}", run.stderr);
    assert_reported(&r, &dates);
    assert!(!run.stderr.contains("--null"), "{}", run.stderr);
}

/// Numbers where a date or time goes, which read as Unix times (pandas'
/// `to_json` writes times as milliseconds since 1970): the summary counts
/// them with the unit and the time of the first, and says how to load them;
/// a load where every record has one stops with that advice. Numbers that
/// are no Unix time in a likely range are no such sign.
#[test]
fn unix_times_where_dates_go_are_named_with_their_unit() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, at timestamptz, day date)");
    let data: String = (0..100)
        .map(|i| match i % 10 {
            3 => format!("{i},{},2024-01-01\n", 1_704_067_200 + i),
            7 => format!("{i},2024-01-01 10:00:00+00,45321\n"),
            _ => format!("{i},2024-01-01 10:00:00+00,2024-01-0{}\n", 1 + i % 9),
        })
        .collect();
    let file = db.file("times.csv", data.as_bytes());
    let Loaded { run, rejects: found, report: r, .. } = load_with_rejects(&db, &file, "t", &[]);
    assert_eq!((run.code, found.len()), (1, 20), "{}", run.stderr);
    let warning = "10 values were rejected that look like Unix times in seconds (the first: \"1704067203\" = \
                   2024-01-01T00:00:03Z, ";
    assert!(run.stderr.contains(warning), "{}", run.stderr);
    assert!(run.stderr.contains("times.csv line 4, column at): PostgreSQL does not read a number"), "{}", run.stderr);
    assert!(run.stderr.contains("pass --unix-times s, which reads numbers"), "{}", run.stderr);
    assert_reported(&r, warning);
    let warned = |value: &str| run.stderr.lines().any(|l| l.starts_with("sluice: warning") && l.contains(value));
    assert!(!warned("\"45321\""), "a serial day is no Unix time: {}", run.stderr);
    let docs: String =
        (0..1_200).map(|i| format!("{{\"id\":{i},\"at\":{}}}\n", 1_704_067_200_000u64 + i * 1_000)).collect();
    let docs = db.file("pandas.jsonl", docs.as_bytes());
    let Loaded { run, .. } = load_with_rejects(&db, &docs, "t", &["--truncate"]);
    assert_eq!(run.code, 5, "{}", run.stderr);
    let advice = "\"1704067200000\" looks like a Unix time in milliseconds (2024-01-01T00:00:00Z), which PostgreSQL \
                  does not read as a date or time: pass --unix-times ms, which reads numbers in date and timestamp \
                  columns as Unix times in UTC";
    assert!(run.stderr.contains(advice), "{}", run.stderr);
    // Another unit, which the numbers contradict, is refused before anything loads.
    let Loaded { run, .. } = load_with_rejects(&db, &docs, "t", &["--truncate", "--unix-times", "s"]);
    let refused = "pandas.jsonl: --unix-times s: the first records' numbers in column \"at\" read as Unix times in \
                   milliseconds, not seconds (1704067200000 is 2024-01-01 00:00:00 UTC in milliseconds but past the \
                   year 9999 in seconds); pass --unix-times ms";
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains(refused), "{}", run.stderr);
    // As the advice says: every document loads.
    let Loaded { run, rejects: found, .. } = load_with_rejects(&db, &docs, "t", &["--truncate", "--unix-times", "ms"]);
    assert_eq!((run.code, found.len(), db.count("t")), (0, 0, 1_200), "{}", run.stderr);
    let last = db.scalar("SELECT at AT TIME ZONE 'UTC' FROM t WHERE id = 1199");
    assert_eq!(last, "2024-01-01 00:19:59");
}

/// Random numbers with decimal commas and Unix times, in csv and tsv, as
/// text and binary COPY: `--decimal-comma` and `--unix-times` load what
/// the server's own conversions of the same values (loaded into text
/// columns beside them) give, and reject exactly the values that fit
/// neither way, at their lines, with the column named.
#[test]
fn decimal_commas_and_unix_times_load_as_the_servers_conversions_of_them() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE t (id int, price numeric(20,4), qty bigint, f float8, at timestamptz, ts timestamp(3), \
         day date, price_text text, at_text text)",
    );
    let mut rng = Rng(fuzz_seed() ^ 0xdec1);
    let mut bad_lines = Vec::new();
    let mut lines = Vec::new();
    for id in 0..3_000u64 {
        let digits = 1 + rng.below(9) as u32;
        let whole = rng.below(10u64.pow(digits));
        let grouped = match rng.below(3) {
            0 => whole.to_string(),
            separator => {
                let digits = whole.to_string();
                let first = (digits.len() - 1) % 3 + 1;
                let mut text = digits[..first].to_string();
                for group in digits.as_bytes()[first..].chunks(3) {
                    text.push(if separator == 1 { '.' } else { ' ' });
                    text.push_str(std::str::from_utf8(group).unwrap());
                }
                text
            }
        };
        let sign = rng.pick(&["", "-", "+"]);
        let fraction = match rng.below(2) {
            0 => String::new(),
            _ => format!(",{}", rng.below(10_000)),
        };
        let mut price = format!("{sign}{grouped}{fraction}");
        let millis = rng.below(7_000_000_000_000) as i64 - 2_000_000_000_000;
        let mut at = match rng.below(4) {
            0 => format!("{millis}.{}", rng.below(1000)),
            _ => millis.to_string(),
        };
        if id % 97 == 5 {
            price = format!("{}.{}", rng.below(100), 1 + rng.below(99));
            bad_lines.push(lines.len() + 2);
        } else if id % 89 == 7 {
            at = "400000000000000".into();
            bad_lines.push(lines.len() + 2);
        }
        let qty = if rng.below(2) == 0 { "1.234.567" } else { "-12" };
        let fields = [&id.to_string(), &price, qty, &price, &at, &at, &at, &price, &at];
        lines.push(fields.map(|f| f.to_string()));
    }
    let check = |name: &str, delimiter: &str, quoted: bool, copy_format: &str| {
        let mut data = ["id", "price", "qty", "f", "at", "ts", "day", "price_text", "at_text"].join(delimiter) + "\n";
        for line in &lines {
            let fields: Vec<String> =
                line.iter().map(|f| if quoted { format!("\"{f}\"") } else { f.clone() }).collect();
            data.push_str(&fields.join(delimiter));
            data.push('\n');
        }
        let file = db.file(name, data.as_bytes());
        let flags = ["--header", "--delimiter", delimiter, "--truncate", "--decimal-comma", "--unix-times", "ms"];
        let Loaded { run, rejects: found, .. } =
            load_with_rejects(&db, &file, "t", &[&flags[..], &["--copy-format", copy_format]].concat());
        let context = format!("{name} {copy_format}: {}", run.stderr);
        assert_eq!(run.code, 1, "{context}");
        let rejected: Vec<usize> = found.iter().map(|r| r["line"].as_u64().unwrap() as usize).collect();
        assert_eq!(rejected, bad_lines, "{context}");
        for reject in &found {
            // CSV's quote stands as an apostrophe in reasons made on the client.
            let reason = reject["reason"].as_str().unwrap().replace('\'', "\"");
            assert!(reason.starts_with("column \"price\": \"") || reason.starts_with("column \"at\": \""), "{reason}");
        }
        assert_eq!(db.count("t") as usize, lines.len() - bad_lines.len(), "{context}");
        let wrong = db.scalar(
            "SELECT count(*) || coalesce(' ' || (array_agg(t::text))[1], '') FROM t WHERE price IS DISTINCT FROM \
               replace(replace(replace(price_text, '.', ''), ' ', ''), ',', '.')::numeric(20,4) \
             OR f IS DISTINCT FROM replace(replace(replace(price_text, '.', ''), ' ', ''), ',', '.')::float8 \
             OR qty NOT IN (1234567, -12) \
             OR at IS DISTINCT FROM 'epoch'::timestamptz + (at_text::numeric * 1000)::int8 * interval '1 microsecond' \
             OR ts IS DISTINCT FROM (at AT TIME ZONE 'UTC')::timestamp(3) \
             OR day IS DISTINCT FROM (at AT TIME ZONE 'UTC')::date",
        );
        assert_eq!(wrong, "0", "{context}");
        assert!(run.stderr.contains("reading the numbers of id, price, qty, f with a decimal comma"), "{context}");
        assert!(run.stderr.contains("reading numbers in at, ts, day as Unix times in milliseconds"), "{context}");
    };
    let seconds = db.file("seconds.csv", b"id,at\n1,1706702400\n2,1706702401\n3,2024-01-31\n4,\"1706702402\"\n");
    let run =
        db.load(&[seconds.to_str().unwrap(), "--table", "t", "--columns", "id,at", "--header", "--unix-times", "ms"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("column \"at\" read as Unix times in seconds, not milliseconds (1706702400 is"));
    check("plain.csv", ";", false, "binary");
    check("quoted.csv", ",", true, "text");
    check("quoted-binary.csv", ",", true, "binary");
    check("plain.tsv", "\t", false, "text");
}

/// Empty lines between records and at the end (hand-edited files, files
/// put together with `cat`) are rejected as COPY rejects them, each at its
/// line, and the summary says that they are empty lines, holding no
/// values; into a table of one column they are rows, as COPY loads them.
#[test]
fn empty_lines_are_rejected_at_their_lines_and_named_as_such() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text, v numeric); CREATE TABLE one (v text)");
    let file = db.file("blank.csv", b"id,name,v\n1,a,1.5\n\n2,b,2\n\n3,\"\n\n\",3\n\n");
    let Loaded { run, rejects: found, report: r, .. } = load_with_rejects(&db, &file, "t", &["--header"]);
    assert_eq!((run.code, db.count("t")), (1, 3), "{}", run.stderr);
    let lines: Vec<u64> = found.iter().map(|r| r["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, [3, 5, 9], "the quoted field's empty lines are a value");
    let warning = "blank.csv line 3): they hold no values, so no data is missing from the table for them";
    assert!(run.stderr.contains("3 records were rejected that are empty lines (the first: "), "{}", run.stderr);
    assert!(run.stderr.contains(warning), "{}", run.stderr);
    assert_reported(&r, warning);
    assert_eq!(db.scalar("SELECT name FROM t WHERE id = 3"), "\n\n");
    let Loaded { run, rejects: found, .. } = load_with_rejects(&db, &file, "one", &["--header", "--delimiter", "|"]);
    assert_eq!((run.code, found.len(), db.count("one")), (0, 0, 6), "{}", run.stderr);
    assert_eq!(db.scalar("SELECT count(*) FROM one WHERE v IS NULL"), "3", "an empty line is a NULL, as COPY reads it");
    assert!(!run.stderr.contains("empty lines"), "{}", run.stderr);
    let crlf = db.file("crlf.csv", b"id,name,v\r\n1,a,1.5\r\n\r\n");
    let Loaded { run, rejects: found, .. } = load_with_rejects(&db, &crlf, "t", &["--header", "--truncate"]);
    assert_eq!((run.code, found.len(), db.count("t")), (1, 1, 1), "{}", run.stderr);
    assert!(run.stderr.contains("1 record was rejected that is an empty line (the first: "), "{}", run.stderr);
    assert!(run.stderr.contains("crlf.csv line 3): it holds no values, so no data is missing from the table for it"));
}

/// A query's result saved by psql (`-A -F,`, which keeps the footer) ends
/// with its row count, `(2 rows)`: the record is rejected as COPY rejects
/// it, and the summary says that it is psql's count, not data, and how to
/// save without it; sqlcmd's count after an empty line is named as its own.
/// In a one-column text table the footer is a value and loads.
#[test]
fn a_clients_row_count_under_a_saved_result_is_rejected_and_named_as_such() {
    let db = TestDb::new();
    db.execute("CREATE TABLE src (id int, name text); INSERT INTO src VALUES (1, 'a'), (2, 'b')");
    db.execute("CREATE TABLE t (id int, name text); CREATE TABLE one (v text)");
    let out = std::process::Command::new("psql")
        .args(["-X", "-A", "-F", ",", "-d", &db.conninfo(), "-c", "SELECT * FROM src ORDER BY id"])
        .output()
        .expect("run psql");
    assert!(out.stdout.ends_with(b"\n(2 rows)\n"), "{}", String::from_utf8_lossy(&out.stdout));
    let file = db.file("saved.csv", &out.stdout);
    let Loaded { run, rejects: found, report: r, .. } = load_with_rejects(&db, &file, "t", &["--header"]);
    assert_eq!((run.code, found.len(), db.count("t")), (1, 1, 2), "{}", run.stderr);
    assert_eq!(found[0]["line"], 4);
    db.assert_same_rows("src", "t");
    let warning = "1 record was rejected that is the row count psql prints under a query's result (the first: \
                   \"(2 rows)\", ";
    assert!(run.stderr.contains(warning), "{}", run.stderr);
    assert!(run.stderr.contains("saved.csv line 4): it counts the rows above, so no data is missing from the table"));
    assert!(run.stderr.contains("`psql --csv` (or `-P footer=off`"), "{}", run.stderr);
    assert_reported(&r, warning);
    let sqlcmd = db.file("sqlcmd.csv", b"id,name\r\n3,c\r\n\r\n(1 rows affected)\r\n");
    let Loaded { run, rejects: found, .. } = load_with_rejects(&db, &sqlcmd, "t", &["--header"]);
    assert_eq!((run.code, found.len(), db.count("t")), (1, 2, 3), "{}", run.stderr);
    assert!(run.stderr.contains("that is an empty line (the first: "), "{}", run.stderr);
    assert!(run.stderr.contains("sqlcmd.csv line 3): it holds no values"), "{}", run.stderr);
    assert!(run
        .stderr
        .contains("the row count sqlcmd prints under a query's result (the first: \"(1 rows affected)\""));
    assert!(run.stderr.contains("`SET NOCOUNT ON;` before the query saves the result without it"), "{}", run.stderr);
    assert!(!run.stderr.contains("psql --csv"), "{}", run.stderr);
    let Loaded { run, rejects: found, .. } = load_with_rejects(&db, &file, "one", &["--header", "--delimiter", "|"]);
    assert_eq!((run.code, found.len(), db.count("one")), (0, 0, 3), "{}", run.stderr);
    assert!(!run.stderr.contains("row count"), "{}", run.stderr);
}

/// The lines of a JSON array's elements, one per line, without its
/// brackets: each but the last ends with a comma and is rejected (into
/// columns by sluice's reading, into a jsonb column by the server's); the
/// summary says they are whole documents, and its advice (the rejects
/// through `sed 's/,$//'`) loads them.
#[test]
fn json_lines_with_a_comma_after_each_document_are_named_as_an_array_without_brackets() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text); CREATE TABLE docs (doc jsonb)");
    let file = db.file(
        "cut.jsonl",
        b"{\"id\": 1, \"name\": \"a\"},\n{\"id\": 2, \"name\": \"b\"}, \r\n{\"id\": 3}\n{\"id\": 4},x\n",
    );
    for table in ["t", "docs"] {
        let Loaded { run, rejects: found, rejects_path, report: r, .. } = load_with_rejects(&db, &file, table, &[]);
        assert_eq!((run.code, found.len(), db.count(table)), (1, 3, 1), "{}", run.stderr);
        let warning = "2 records were rejected that are a JSON document and a comma after it (the first: ";
        assert!(run.stderr.contains(warning), "{}", run.stderr);
        assert!(run.stderr.contains("each loads without its comma. Pipe `sluice rejects` of the rejects file through"));
        assert_reported(&r, warning);
        let back = sluice(&["rejects", rejects_path.to_str().unwrap()]);
        let fixed: String =
            back.stdout.lines().map(|line| format!("{}\n", line.trim_end().trim_end_matches(','))).collect();
        let args = ["load", "-", "--format", "jsonl", "--table", table, "--db", &db.conninfo()];
        let again = crate::util::sluice_with_stdin(&args, fixed.as_bytes());
        assert_eq!(again.code, 1, "only the record with more after its comma is rejected again: {}", again.stderr);
        assert_eq!(db.count(table), 3);
    }
}

/// A value with a terminal's escape sequence is rejected with it written
/// out (`\u{1b}[2J`) in what sluice prints, where it cleared the user's
/// screen; the rejects file keeps it as it was. The end-of-file mark old
/// DOS tools write after the last line (Ctrl-Z) is rejected and named as
/// such, where its reason read `invalid input syntax for type integer: ""`.
#[test]
fn control_characters_reach_no_terminal_and_a_dos_end_of_file_mark_is_named() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text)");
    let file = db.file("dos.csv", b"id,name\r\n1,a\r\n\x1b[2J\x1b[31m2,b\r\n3,c\r\n\x1a");
    let Loaded { run, rejects: found, .. } = load_with_rejects(&db, &file, "t", &["--header"]);
    assert_eq!((run.code, found.len(), db.count("t")), (1, 2, 2), "{}", run.stderr);
    assert!(!run.stderr.contains('\u{1b}') && !run.stdout.contains('\u{1b}'), "{}", run.stderr);
    assert!(run.stderr.contains(r#"invalid input syntax for type integer: "\u{1b}[2J\u{1b}[31m2""#), "{}", run.stderr);
    assert_eq!(found[0]["raw"], "\u{1b}[2J\u{1b}[31m2,b\r\n", "kept as it was");
    let mark = "1 record was rejected that is the end-of-file mark DOS-era tools write after a file's last line \
                (Ctrl-Z, 0x1A; the first: ";
    assert!(run.stderr.contains(mark), "{}", run.stderr);
    assert!(run.stderr.contains("dos.csv line 5): it holds no values, so no data is missing"), "{}", run.stderr);
}

/// Two exports joined with `cat`, each with its header (and, from Windows,
/// a UTF-8 byte-order mark before it): the second header is rejected as
/// COPY rejects it, and the summary says that it repeats the header, not
/// data, and to load the files themselves. A bad record whose values name
/// columns only in part is no header.
#[test]
fn a_header_repeated_among_the_data_is_rejected_and_named_as_such() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text, kind text)");
    let part = |rows: &str| [&b"\xef\xbb\xbfid,Name,\"kind\"\r\n"[..], rows.as_bytes()].concat();
    let joined = [part("1,a,x\r\n2,b,y\r\n"), part("3,c,x\r\nname,kind,id2\r\n"), part("4,d,y\r\n")].concat();
    let file = db.file("joined.csv", &joined);
    let Loaded { run, rejects: found, report: r, .. } = load_with_rejects(&db, &file, "t", &["--header"]);
    assert_eq!((run.code, found.len(), db.count("t")), (1, 3, 4), "{}", run.stderr);
    let warning = "2 records were rejected that repeat the header (the first: ";
    assert!(run.stderr.contains(warning), "{}", run.stderr);
    let (at, of) = (found.iter().map(|f| f["line"].as_u64().unwrap()).collect::<Vec<_>>(), "joined.csv line");
    assert_eq!(at, [4, 6, 7], "the second header, the bad record, the third header");
    assert!(run.stderr.contains(&format!("{of} 4): ")) || run.stderr.contains(&format!("{of} 7): ")));
    assert!(run.stderr.contains("they name the table's columns and no values, so no data is missing"));
    assert!(run.stderr.contains("load the files themselves instead (several names or a glob"), "{}", run.stderr);
    assert_reported(&r, warning);
    let clean = db.file("clean.csv", b"id,name,kind\n5,e,x\n6,f,y\n");
    let Loaded { run, .. } = load_with_rejects(&db, &clean, "t", &["--header"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("repeat"), "{}", run.stderr);
}

/// `--unix-times auto`: each time column's unit is the one its first
/// records' numbers read in (seconds in one, milliseconds in another), and
/// the values load exactly as the server's own conversion of them; a
/// column whose numbers tell none takes the unit the others agree on; a
/// column with no number in the first records loads as written, its later
/// numbers rejected with their likely unit; numbers that tell two units,
/// or none where the columns disagree, stop the load before anything loads.
#[test]
fn unix_times_auto_tells_each_columns_unit_by_its_first_records() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, at timestamptz, day date, gone timestamptz, at_text text, day_text text)");
    let mut rng = Rng(fuzz_seed() ^ 0xa070);
    let (mut data, mut numbers_in_gone) = (String::from("id,at,day,gone,at_text,day_text\n"), Vec::new());
    for id in 0..40_000u64 {
        let at = (631_152_000_000 + rng.below(3_400_000_000_000)).to_string();
        let day = match id % 7 {
            3 => "2024-02-29".to_string(),
            _ => (631_152_000 + rng.below(3_400_000_000)).to_string(),
        };
        // Past the first MiB (about 15,700 records), some gone-times are numbers.
        let gone = match id {
            30_000.. if id % 1_000 == 0 => {
                numbers_in_gone.push(id as usize + 2);
                "1706702400".to_string()
            }
            _ if id % 2 == 0 => "2024-01-31 12:00:00+00".to_string(),
            _ => String::new(),
        };
        data.push_str(&format!("{id},{at},{day},{gone},{at},{day}\n"));
    }
    let file = db.file("auto.csv", data.as_bytes());
    let Loaded { run, rejects: found, .. } =
        load_with_rejects(&db, &file, "t", &["--header", "--unix-times", "auto", "--truncate"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    for said in [
        "reading numbers in at as Unix times in milliseconds (UTC), as their first records' numbers read",
        "reading numbers in day as Unix times in seconds (UTC), as their first records' numbers read",
        "the first records of column \"gone\" hold no number to tell its unit by, so its values load as written",
        "look like Unix times in seconds",
    ] {
        assert!(run.stderr.contains(said), "{said}: {}", run.stderr);
    }
    let rejected: Vec<usize> = found.iter().map(|r| r["line"].as_u64().unwrap() as usize).collect();
    assert_eq!(rejected, numbers_in_gone);
    assert_eq!(db.count("t"), 40_000 - numbers_in_gone.len() as u64);
    let wrong = db.scalar(
        "SELECT count(*) FROM t WHERE at IS DISTINCT FROM 'epoch'::timestamptz + at_text::int8 * interval '1 ms' \
         OR day IS DISTINCT FROM CASE WHEN day_text LIKE '%-%' THEN day_text::date \
            ELSE ('epoch'::timestamptz + day_text::int8 * interval '1 s') AT TIME ZONE 'UTC' END::date",
    );
    assert_eq!(wrong, "0");

    // Birthdays before 1990 tell no unit; the other column's milliseconds do.
    let docs = db.file(
        "born.jsonl",
        b"{\"id\":1,\"at\":1706702400123,\"gone\":-152582400000}\n{\"id\":2,\"at\":\"1706702400124\",\"gone\":315532800000}\n",
    );
    let Loaded { run, .. } = load_with_rejects(&db, &docs, "t", &["--unix-times", "auto", "--truncate"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("reading numbers in at, gone as Unix times in milliseconds"), "{}", run.stderr);
    let gone = db.scalar("SELECT string_agg((gone AT TIME ZONE 'UTC')::text, ' ' ORDER BY id) FROM t");
    assert_eq!(gone, "1965-03-02 00:00:00 1980-01-01 00:00:00");

    // Two units in one column, and numbers that tell none where the others disagree.
    for (name, data, refused) in [
        (
            "two.csv",
            "id,at\n1,1706702400123\n2,1706702400\n",
            "column \"at\" read as Unix times in two units (1706702400123 in milliseconds, 1706702400 in seconds); \
             say which with --unix-times ms or s",
        ),
        (
            "none.csv",
            "id,at,day,gone\n1,1706702400123,1706702400,86400\n",
            "no number in the first records of column \"gone\" reads as a Unix time from 1990 to 2100 (10 digits \
             in seconds, 13 in milliseconds, 16 in microseconds, 19 in nanoseconds), and the other columns' are in \
             different units; say which unit with --unix-times s, ms, us or ns",
        ),
    ] {
        let file = db.file(name, data.as_bytes());
        let columns = data.lines().next().unwrap();
        let Loaded { run, .. } = load_with_rejects(
            &db,
            &file,
            "t",
            &["--header", "--columns", columns, "--unix-times", "auto", "--truncate"],
        );
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(run.stderr.contains(&format!("{name}: --unix-times auto: ")), "{}", run.stderr);
        assert!(run.stderr.contains(refused), "{}", run.stderr);
    }
    assert_eq!(db.count("t"), 2, "nothing loaded by the refused loads");
}

/// Records that end with the delimiter (TPC-H's dbgen writes them so) have
/// one field more than the table's columns, an empty one: every record is
/// rejected, and the stop says so and how to leave it out, not to check
/// the delimiter, which is right; loaded as it says, every row loads.
#[test]
fn records_ending_with_the_delimiter_are_named_in_the_stop() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (a int, b text, c text)");
    let data: String = (0..3_000).map(|i| format!("{i}|b{i}|c{i}|\n")).collect();
    let file = db.file("trailing.tbl", data.as_bytes());
    let Loaded { run, .. } = load_with_rejects(&db, &file, "t", &["--format", "csv", "--delimiter", "|"]);
    assert_eq!(run.code, 5, "{}", run.stderr);
    let advice = "Its record has 4 fields and COPY fills 3 columns (a, b, c): each record ends with the delimiter, \
                  which COPY reads as one more, empty field: pass --columns a,b,c,- (a - leaves the field at its \
                  place out), or remove it from every line (sed 's/|$//')";
    assert!(run.stderr.contains(advice), "{}", run.stderr);
    assert_eq!(db.count("t"), 0);
    let path = file.to_str().unwrap();
    db.load(&[path, "-t", "t", "--format", "csv", "--delimiter", "|", "--columns", "a,b,c,-"]).assert_ok();
    assert_eq!(db.scalar("SELECT count(*) || ' ' || max(c) FROM t WHERE c = 'c' || a"), "3000 c999");
}

/// An export that writes NULL as a word (`NULL`, as SQL Server's do): a
/// number column refuses it, a text column takes it as a string. The
/// summary names `--null` with the word; with it both columns get NULLs.
#[test]
fn words_for_null_a_typed_column_refuses_are_named_with_the_null_option() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, amount numeric, note text)");
    let data: String =
        (0..100).map(|i| if i % 4 == 0 { format!("{i},NULL,NULL\n") } else { format!("{i},{i}.5,n\n") }).collect();
    let file = db.file("nulls.csv", data.as_bytes());
    let Loaded { run, rejects: found, .. } = load_with_rejects(&db, &file, "t", &[]);
    assert_eq!((run.code, found.len()), (1, 25), "{}", run.stderr);
    let warning = "25 values were rejected for a word for NULL its column's type does not take (the first: \"NULL\", ";
    assert!(run.stderr.contains(warning), "{}", run.stderr);
    assert!(
        run.stderr.contains("nulls.csv line 1, column amount). If it means NULL, pass --null 'NULL'"),
        "{}",
        run.stderr
    );
    let Loaded { run, .. } = load_with_rejects(&db, &file, "t", &["--null", "NULL", "--truncate", "--restart"]);
    run.assert_ok();
    assert_eq!(db.scalar("SELECT count(*) FROM t WHERE amount IS NULL AND note IS NULL"), "25");
}

/// A CSV writer that quotes every field writes NULL as `""`, which COPY
/// reads as an empty string: a number column refuses it. The summary names
/// --force-null, with which those fields load as NULLs.
#[test]
fn quoted_empty_fields_a_typed_column_refuses_are_named_with_force_null() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, amount numeric, note text)");
    let data: String = (0..100)
        .map(|i| if i % 5 == 0 { format!("\"{i}\",\"\",\"\"\n") } else { format!("\"{i}\",\"{i}.5\",\"n\"\n") })
        .collect();
    let file = db.file("quoted.csv", data.as_bytes());
    let Loaded { run, rejects: found, .. } = load_with_rejects(&db, &file, "t", &[]);
    assert_eq!((run.code, found.len()), (1, 20), "{}", run.stderr);
    let warning = "20 records were rejected for a quoted empty field its column's type does not take (the first: ";
    assert!(run.stderr.contains(warning), "{}", run.stderr);
    assert!(run.stderr.contains("quoted.csv line 1, column amount). In CSV \"\" is an empty string"), "{}", run.stderr);
    assert!(run.stderr.contains("pass --force-null '*'"), "{}", run.stderr);
    let Loaded { run, .. } = load_with_rejects(&db, &file, "t", &["--force-null", "*", "--truncate", "--restart"]);
    run.assert_ok();
    assert_eq!(db.scalar("SELECT count(*) FROM t WHERE amount IS NULL AND note IS NULL"), "20");
    // Naming only the text column leaves the number column's refused.
    let Loaded { run, .. } = load_with_rejects(&db, &file, "t", &["--force-null", "note", "--truncate", "--restart"]);
    assert!(run.stderr.contains(warning), "amount is not named: {}", run.stderr);
}

/// An export that overlaps what the table holds, loaded with
/// `--on-conflict-do-nothing` (as timescaledb-parallel-copy's flag and
/// `INSERT ... ON CONFLICT DO NOTHING`): the records whose key a row holds,
/// or an earlier record of the file, are skipped and counted, the rows
/// already there keep their values, and only the records bad for another
/// reason are rejected; with `--max-errors 0` the skipped ones are no
/// errors. Into an empty table (the key deferred and built after the load)
/// the file's repeats are skipped the same way, each key from its first
/// line.
#[test]
fn an_export_that_overlaps_the_table_loads_its_new_keys_and_skips_the_others_on_conflict() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE r (id int PRIMARY KEY, note text); \
         INSERT INTO r SELECT g, 'old' FROM generate_series(1, 10000) g",
    );
    // Lines 1-20,000 hold ids 5,001-25,000; every 50th line after the
    // 10,000th repeats the id of the line 7 back; line 15,000 is bad.
    let (mut data, mut repeats) = (String::new(), 0);
    for line in 1..=20_000u64 {
        let id = match line {
            15_000 => "x".to_string(),
            _ if line > 10_000 && line % 50 == 0 => {
                repeats += 1;
                (line - 7 + 5_000).to_string()
            }
            _ => (line + 5_000).to_string(),
        };
        data.push_str(&format!("{id}\tline {line}\n"));
    }
    let file = db.file("r.tsv", data.as_bytes());
    let args = ["--on-conflict-do-nothing", "--workers", "2", "--chunk-size", "64KiB"];
    let loaded = load_with_rejects(&db, &file, "r", &args);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
    assert_accounts(&loaded.report);
    assert_eq!(loaded.sorted_lines(), [15_000], "only the bad value is rejected");
    let summary = &loaded.report["summary"];
    let held = 5_000;
    assert_eq!(summary["skipped"], held + repeats, "{summary}");
    assert_eq!(summary["rows_loaded"], 20_000 - 1 - held - repeats, "{summary}");
    assert_eq!(held + repeats, 5_199);
    assert!(loaded.run.stdout.contains("skipped 5,199 duplicate keys"), "{}", loaded.run.stdout);
    assert_eq!(db.scalar("SELECT count(*) FILTER (WHERE note = 'old') || ' ' || count(*) FROM r"), "10000 24800");
    let later = "SELECT count(*) FROM r WHERE note <> 'old' AND note <> 'line ' || (id - 5000)";
    assert_eq!(db.scalar(later), "0", "each new key from its first line");
    let skipped = db.scalar("SELECT sum(rows_skipped) FROM sluice.chunks");
    assert_eq!(skipped, (held + repeats).to_string(), "the ledger counts them");
    let status = sluice(&["status", "--db", &db.conninfo(), "--json"]);
    let jobs: Value = serde_json::from_str(&status.assert_ok().stdout).unwrap();
    assert_eq!(jobs[0]["skipped"], held + repeats, "{jobs}");
    let status = sluice(&["status", "--db", &db.conninfo()]);
    assert!(status.stdout.contains("  skipped 5,199 duplicate keys (--on-conflict-do-nothing)"), "{}", status.stdout);
    // The same file again, without its bad line: nothing new, no error.
    let again = db.file("again.tsv", data.replace("x\tline 15000\n", "").as_bytes());
    let loaded = load_with_rejects(&db, &again, "r", &[&args[..], &["--max-errors", "0"]].concat());
    loaded.run.assert_ok();
    assert_accounts(&loaded.report);
    assert_eq!(loaded.report["summary"]["skipped"], 19_999);
    assert!(!loaded.rejects_path.exists(), "no rejects file");
    // Into an empty table: the key is deferred, then the chunks whose rows
    // break it are loaded again with it, their repeats skipped.
    db.execute("CREATE TABLE e (id int PRIMARY KEY, note text)");
    let loaded = load_with_rejects(&db, &again, "e", &args);
    loaded.run.assert_ok();
    assert_accounts(&loaded.report);
    assert!(loaded.run.stdout.contains("1 deferred index/constraint rebuilt"), "{}", loaded.run.stdout);
    assert_eq!(loaded.report["summary"]["skipped"], repeats);
    assert_eq!(db.count("e"), 19_999 - repeats);
    assert_eq!(db.scalar("SELECT count(*) FROM e WHERE note <> 'line ' || (id - 5000)"), "0", "first lines kept");
}

/// An export of what changed, loaded with `--on-conflict-do-update` (as
/// pg_bulkload's `ON_DUPLICATE_KEEP = NEW`): each record replaces the row
/// that holds its key, of the records sharing a key the last one stays,
/// whatever chunk and worker loaded each, and only the records bad for
/// another reason are rejected: a value the column cannot take, and one
/// a CHECK refuses (found by bisection, the statement's refusal naming no
/// line). The summary says how many replaced a row. The key must stay in
/// place, and be loaded; a table without one is refused.
#[test]
fn an_export_of_changes_replaces_the_rows_with_its_keys_and_each_keys_last_record_stays() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE r (id int PRIMARY KEY, note text, amount int CHECK (amount >= 0)); \
         INSERT INTO r SELECT g, 'old', 0 FROM generate_series(1, 10000) g",
    );
    // Lines 1-20,000 hold ids 5,001-25,000; every 50th line after the
    // 10,000th repeats the id of the line 7 back (or, every 150th, 3,000
    // back: another chunk); line 15,000 has a bad id, line 12,345 a
    // negative amount.
    let (mut data, mut model, mut replaced) = (String::new(), std::collections::BTreeMap::new(), 0);
    for id in 1..=10_000u64 {
        model.insert(id, ("old".to_string(), 0));
    }
    for line in 1..=20_000u64 {
        let id = match line {
            _ if line > 10_000 && line % 150 == 0 => line - 3_000 + 5_000,
            _ if line > 10_000 && line % 50 == 0 => line - 7 + 5_000,
            _ => line + 5_000,
        };
        let amount = if line == 12_345 { -1 } else { line as i64 };
        match line {
            15_000 => data.push_str(&format!("x\tline {line}\t{amount}\n")),
            _ => data.push_str(&format!("{id}\tline {line}\t{amount}\n")),
        }
        if line != 15_000 && line != 12_345 {
            replaced += u64::from(model.insert(id, (format!("line {line}"), amount)).is_some());
        }
    }
    let file = db.file("r.tsv", data.as_bytes());
    let args = ["--on-conflict-do-update", "--workers", "2", "--chunk-size", "64KiB"];
    let loaded = load_with_rejects(&db, &file, "r", &args);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
    assert_accounts(&loaded.report);
    assert_eq!(loaded.sorted_lines(), [12_345, 15_000], "{:?}", loaded.rejects);
    let check = loaded.rejects.iter().find(|r| r["line"] == 12_345).unwrap();
    assert_eq!(check["sqlstate"], "23514", "{check}");
    let summary = &loaded.report["summary"];
    assert_eq!(summary["rows_loaded"], 19_998, "{summary}");
    // The 5,000 ids the table held, and the repeats of an earlier line's.
    assert!(replaced > 5_100, "{replaced}");
    assert_eq!(summary["replaced"], replaced, "{summary}");
    let said =
        format!("loaded 19,998 rows, {} of them replacing the row with their key", sluice::report::thousands(replaced));
    assert!(loaded.run.stdout.contains(&said), "{}", loaded.run.stdout);
    assert!(loaded.run.stdout.contains("merged by key"), "{}", loaded.run.stdout);
    assert!(!loaded.run.stderr.contains("another process"), "one process: {}", loaded.run.stderr);
    let rows = "SELECT string_agg(id || ':' || note || ':' || amount, ',' ORDER BY id) FROM r";
    let expected: Vec<String> = model.iter().map(|(id, (note, amount))| format!("{id}:{note}:{amount}")).collect();
    assert_eq!(db.scalar(rows), expected.join(","), "each key's last record");
    // Refused before anything loads: a table without a key, a key left out.
    db.execute("CREATE TABLE public.nokey (id int, note text, amount int)");
    let refused = load_with_rejects(&db, &file, "nokey", &args);
    assert_eq!(refused.run.code, 2);
    assert!(refused.run.stderr.contains("public.nokey has no primary key or unique index"), "{}", refused.run.stderr);
    db.execute("CREATE TABLE public.numbered (id serial PRIMARY KEY, note text, amount int)");
    let left_out = load_with_rejects(&db, &file, "numbered", &[&args[..], &["--columns=-,note,amount"]].concat());
    assert_eq!(left_out.run.code, 2);
    let said = "the key (id) of public.numbered is not among the columns loaded (note, amount)";
    assert!(left_out.run.stderr.contains(said), "{}", left_out.run.stderr);
    assert_eq!(db.scalar(rows), expected.join(","), "nothing changed");
}

/// With `--on-conflict-do-nothing`, once a chunk skipped most of its
/// records, the next chunks are staged: copied into a temporary table and
/// inserted from there with `ON CONFLICT DO NOTHING`, faster where most keys
/// are held (see `load::stage`). Every record ends as on the direct path,
/// which a model of the file, read line by line, says: a value the column
/// cannot take (its chunk staged still), or one a CHECK refuses (key held or
/// not), rejected at its line; every held key's row untouched; every new key from its first line,
/// whether its repeat is in the same chunk or in one loading at once.
#[test]
fn an_export_mostly_held_by_the_table_is_staged_and_ends_as_on_the_direct_path() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE h (id int PRIMARY KEY, amount int CHECK (amount >= 0), note text); \
         INSERT INTO h SELECT g, 0, 'old' FROM generate_series(1, 40000) g",
    );
    // Three lines in four repeat a held id; the fourth is a new id, but one
    // in a hundred of those repeats the new id 4 lines back, and one in 250
    // that of 3,500 lines back (in the chunk before, which may be loading).
    let id_of = |line: u64| match line {
        _ if line % 4 != 0 => line,
        20_020 => 100_000 + 20_008,
        _ if line % 400 == 0 => 100_000 + line - 4,
        _ if line % 1_000 == 4 && line > 3_500 => 100_000 + line - 3_500,
        _ => 100_000 + line,
    };
    let amount_of = |line: u64| match line {
        20_001 | 30_004 => "x".to_string(),
        30_002 | 30_008 | 35_001 => "-1".to_string(),
        // Spaces, which the server reads around an integer: its new key,
        // repeated 12 lines on, is the first line's.
        20_008 => " 3 ".to_string(),
        _ => (line % 7).to_string(),
    };
    let data: String =
        (1..=40_000u64).map(|line| format!("{}\t{}\tline {line}\n", id_of(line), amount_of(line))).collect();
    // What the file leaves, read line by line: records skipped, lines
    // rejected, and each new key with its first line (`check`: amounts
    // below 0 are refused).
    let model = |check: bool| {
        let (mut held, mut first_lines) = (HashSet::new(), Vec::new());
        let (mut skipped, mut rejected) = (0u64, Vec::new());
        held.extend(1..=40_000u64);
        for line in 1..=40_000u64 {
            let id = id_of(line);
            match amount_of(line).trim().parse::<i64>() {
                Ok(a) if (a >= 0 || !check) && !held.insert(id) => skipped += 1,
                Ok(a) if a >= 0 || !check => first_lines.push(format!("{id}:line {line}")),
                _ => rejected.push(line),
            }
        }
        first_lines.sort();
        (skipped, rejected, first_lines)
    };
    let (skipped, rejected, first_lines) = model(true);
    let file = db.file("h.tsv", data.as_bytes());
    let args = ["--on-conflict-do-nothing", "--workers", "2", "--chunk-size", "64KiB"];
    let loaded = load_with_rejects(&db, &file, "h", &args);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
    assert_accounts(&loaded.report);
    assert_eq!(loaded.sorted_lines(), rejected, "the bad values and those the CHECK refuses");
    let summary = &loaded.report["summary"];
    assert_eq!(summary["skipped"], skipped, "{summary}");
    assert_eq!(summary["rows_loaded"], first_lines.len(), "{summary}");
    let chunks = loaded.report["chunks"].as_array().unwrap();
    let staged = chunks.iter().filter(|c| c["staged"] == true).count();
    assert!(staged >= chunks.len() / 2, "{staged} of {} chunks staged", chunks.len());
    assert_eq!(summary["copy"]["staged_chunks"], staged);
    let says = format!("{staged} chunks staged (most of their keys held");
    assert!(loaded.run.stdout.contains(&says), "{}", loaded.run.stdout);
    // A value COPY cannot read is rejected on the staged path too (isolated
    // into the temporary table); a row the CHECK refuses sends its chunk the
    // direct way, where the constraint is met at each record.
    let holding = |line: u64| {
        let lines = |c: &&Value| {
            c["first_line"].as_u64().unwrap()..c["first_line"].as_u64().unwrap() + c["records"].as_u64().unwrap()
        };
        chunks.iter().find(|c| lines(c).contains(&line)).unwrap()
    };
    assert_eq!((holding(20_001)["staged"].clone(), holding(20_001)["rejected"].clone()), (true.into(), 1.into()));
    for line in [30_002, 30_008, 35_001] {
        assert_eq!(holding(line)["staged"], false, "{}", holding(line));
    }
    let new_rows = "SELECT string_agg(id || ':' || note, ',' ORDER BY id::text || ':' || note) FROM h WHERE id > 40000";
    assert_eq!(db.scalar(new_rows), first_lines.join(","), "each new key from its first line");
    assert_eq!(db.scalar("SELECT count(*) FROM h WHERE id <= 40000 AND note = 'old' AND amount = 0"), "40000");
    let ledger = "SELECT sum(rows_skipped) || ' ' || sum(rows_loaded) FROM sluice.chunks";
    assert_eq!(db.scalar(ledger), format!("{skipped} {}", first_lines.len()), "the ledger counts them");
    // One worker stages too, without the CHECK (where a chunk may load
    // beside others it publishes its keys, and did not stage).
    db.execute("DELETE FROM h WHERE id > 40000; ALTER TABLE h DROP CONSTRAINT h_amount_check");
    let (skipped, rejected, first_lines) = model(false);
    let one = ["--on-conflict-do-nothing", "--workers", "1", "--chunk-size", "64KiB", "--restart"];
    let loaded = load_with_rejects(&db, &file, "h", &one);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
    assert_eq!(loaded.sorted_lines(), rejected, "the bad values alone");
    assert_eq!(loaded.report["summary"]["skipped"], skipped);
    let staged = loaded.report["summary"]["copy"]["staged_chunks"].as_u64().unwrap();
    assert!(staged as usize >= chunks.len() / 2, "{staged} of {} chunks staged by one worker", chunks.len());
    assert_eq!(db.scalar(new_rows), first_lines.join(","), "each new key from its first line, one worker");
}

/// A staged chunk with a value COPY cannot read is isolated into the
/// temporary table in input order: a record the client suspects (copied
/// alone; here a date with its month as a word, which the server reads) keeps its new key
/// against a later line of the chunk, as on the direct path. Copied after
/// the chunk's other records, it was skipped for its own key.
#[test]
fn a_staged_chunk_with_a_bad_value_keeps_each_new_key_from_its_first_line() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE s (id int PRIMARY KEY, day date, note text); \
         INSERT INTO s SELECT g, '2024-01-01', 'old' FROM generate_series(1, 30000) g",
    );
    let data: String = (1..=30_000u64)
        .map(|line| match line {
            20_000 => format!("{line}\tx\tbad\n"),
            20_001 => "100000\t5 Jan 2024\tfirst\n".to_string(),
            20_002 => "100000\t2024-01-02\tsecond\n".to_string(),
            _ => format!("{line}\t2024-01-01\tline {line}\n"),
        })
        .collect();
    let file = db.file("s.tsv", data.as_bytes());
    let args = ["--on-conflict-do-nothing", "--workers", "2", "--chunk-size", "64KiB"];
    let loaded = load_with_rejects(&db, &file, "s", &args);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
    assert_accounts(&loaded.report);
    assert_eq!(loaded.sorted_lines(), [20_000]);
    assert_eq!(loaded.report["summary"]["skipped"], 29_998);
    let chunk = loaded.report["chunks"].as_array().unwrap().iter().find(|c| c["rejected"] == 1).unwrap();
    assert_eq!(chunk["staged"], true, "{chunk}");
    assert_eq!(db.scalar("SELECT note || ' ' || (day = '2024-01-05') FROM s WHERE id = 100000"), "first true");
    assert_eq!(db.count("s"), 30_001);
    // The direct path, into an empty table, rejects the later line.
    db.execute("CREATE TABLE d (id int PRIMARY KEY, day date, note text)");
    let loaded = load_with_rejects(&db, &file, "d", &["--workers", "2", "--chunk-size", "64KiB"]);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
    assert_eq!(loaded.sorted_lines(), [20_000, 20_002]);
    assert_eq!(db.scalar("SELECT note FROM d WHERE id = 100000"), "first");
    // A key on an expression, whose values the client does not read.
    db.execute("CREATE TABLE x (id text, day date, note text); CREATE UNIQUE INDEX ON x (lower(id))");
    let loaded = load_with_rejects(&db, &file, "x", &["--workers", "2", "--chunk-size", "64KiB"]);
    assert_eq!(loaded.sorted_lines(), [20_000, 20_002], "{}", loaded.run.output());
    assert_eq!(db.scalar("SELECT note FROM x WHERE id = '100000'"), "first");
}

/// A file whose rows the table holds already, loaded again under another
/// name (another job), in other bytes (a copy of the same bytes is left
/// out), stops at the first 1,000 duplicates as a wrong option does, but
/// says the data looks loaded and how to load only its new keys, not to
/// check --delimiter and --header; and with that flag it skips them all.
#[test]
fn a_file_loaded_again_under_another_name_is_said_to_look_loaded() {
    let db = TestDb::new();
    db.execute("CREATE TABLE k (id int PRIMARY KEY, note text)");
    let data: String = (1..=3_000).map(|i| format!("{i}\tnote {i}\n")).collect();
    let first = db.file("day-1.tsv", data.as_bytes());
    load_with_rejects(&db, &first, "k", &[]).run.assert_ok();
    let same = load_with_rejects(&db, &db.file("copy-of-day-1.tsv", data.as_bytes()), "k", &[]);
    same.run.assert_ok();
    let said = format!("nothing to do: left out {}", db.dir.path().join("copy-of-day-1.tsv").display());
    assert!(same.run.stderr.contains(&said), "{}", same.run.stderr);
    let reversed: String = (1..=3_000).rev().map(|i| format!("{i}\tnote {i}\n")).collect();
    let copy = db.file("day-1-sorted-the-other-way.tsv", reversed.as_bytes());
    let loaded = load_with_rejects(&db, &copy, "k", &[]);
    assert_eq!(loaded.run.code, 5, "{}", loaded.run.output());
    let says = [
        "records were all rejected, as if this data were loaded already",
        "Key (id)=(3000) already exists.",
        "To load only the records whose keys are new, pass --on-conflict-do-nothing",
    ];
    for phrase in says {
        assert!(loaded.run.stderr.contains(phrase), "{phrase}: {}", loaded.run.stderr);
    }
    assert!(!loaded.run.stderr.contains("wrong option"), "{}", loaded.run.stderr);
    // Rejected one by one past the stop, they are said to be skippable.
    let loaded = load_with_rejects(&db, &copy, "k", &["--max-errors", "5000"]);
    assert_eq!((loaded.run.code, loaded.rejects.len()), (1, 3_000), "{}", loaded.run.output());
    let hint = "3,000 records were rejected for a key that a row already held (the first: ";
    assert_reported(&loaded.report, hint);
    assert_reported(&loaded.report, "--on-conflict-do-nothing skips such records instead");
    let loaded = load_with_rejects(&db, &copy, "k", &["--on-conflict-do-nothing"]);
    loaded.run.assert_ok();
    assert_eq!(loaded.report["summary"]["skipped"], 3_000);
    assert_eq!(db.count("k"), 3_000);
    // Into a table without a key, the flag has nothing to skip, and says so.
    db.execute("CREATE TABLE n (id int, note text)");
    let loaded = load_with_rejects(&db, &copy, "n", &["--on-conflict-do-nothing"]);
    loaded.run.assert_ok();
    assert_reported(&loaded.report, "n has no unique key or exclusion constraint, so no record conflicts");
}

/// The stop for a load whose first 1,000 records are all rejected is
/// decided in input order, not by which worker commits first. CI saw a
/// file whose first 1,000 records repeated held keys, and whose others were
/// new, load on most runs and stop on one: the stop asked whether a row
/// had loaded yet, and the second chunk's commit raced the first's
/// isolation. Here those 1,000 span two chunks (the first rejected whole,
/// then 345 of the second's): the file stops on every run, and loads on
/// every run once its first record is new.
#[test]
fn the_stop_for_the_first_records_depends_on_the_input_not_on_timing() {
    let db = TestDb::new();
    db.execute("CREATE TABLE k (id int PRIMARY KEY, note text)");
    let note = "n".repeat(90);
    let data: String = (1..=20_000).map(|i| format!("{i}\t{note} {i}\n")).collect();
    let file = db.file("export.tsv", data.as_bytes());
    let args = ["--chunk-size", "64KiB", "--workers", "3", "--restart"];
    db.execute("INSERT INTO k SELECT g, 'held' FROM generate_series(1, 1000) g");
    for round in 0..3 {
        let loaded = load_with_rejects(&db, &file, "k", &args);
        assert_eq!(loaded.run.code, 5, "round {round}: {}", loaded.run.output());
        let says = "the first 1,000 records were all rejected, as if this data were loaded already; the first: ";
        assert!(loaded.run.stderr.contains(says), "round {round}: {}", loaded.run.stderr);
        assert!(loaded.run.stderr.contains("Key (id)=(1) already exists."), "{}", loaded.run.stderr);
        db.execute("DELETE FROM k WHERE id > 1000");
    }
    db.execute("DELETE FROM k WHERE id = 1");
    for round in 0..3 {
        let loaded = load_with_rejects(&db, &file, "k", &args);
        assert_eq!(loaded.run.code, 1, "round {round}: {}", loaded.run.output());
        assert_eq!((loaded.rejects.len(), db.count("k")), (999, 20_000), "round {round}");
        assert_accounts(&loaded.report);
        db.execute("DELETE FROM k WHERE id > 1000 OR id = 1");
    }
    // A wrong delimiter in chunks of fewer than 1,000 records: they add up
    // to the stop, and no row loads.
    db.execute("CREATE TABLE w (a int, b text)");
    let commas: String = (0..20_000).map(|i| format!("{i},{note}\n")).collect();
    let commas = db.file("commas.tsv", commas.as_bytes());
    let loaded = load_with_rejects(&db, &commas, "w", &args);
    assert_eq!(loaded.run.code, 5, "{}", loaded.run.output());
    assert!(
        loaded.run.stderr.contains("records were all rejected, which looks like a wrong option"),
        "{}",
        loaded.run.stderr
    );
    assert_eq!(db.count("w"), 0);
    // A field too many, in one chunk, into a table with a key: isolation
    // tries each record alone first (suspects whose values pass the value
    // check), and stops at the 1,000th, not at the chunk's end.
    db.execute("CREATE TABLE public.wk (a int PRIMARY KEY, b text)");
    let extra: String = (0..5_000).map(|i| format!("{i}\tb\textra\n")).collect();
    let extra = db.file("extra.tsv", extra.as_bytes());
    let loaded = load_with_rejects(&db, &extra, "public.wk", &["--chunk-size", "16MiB"]);
    assert_eq!(loaded.run.code, 5, "{}", loaded.run.output());
    assert!(loaded.run.stderr.contains("the first 1,000 records were all rejected"), "{}", loaded.run.stderr);
    assert!(loaded.run.stderr.contains("extra data after last expected column"), "{}", loaded.run.stderr);
    assert_eq!(db.count("public.wk"), 0);
}

/// The stop for a load's first records says that nothing was committed,
/// and to run the same command again once the cause is fixed. A later
/// chunk, all rejected for the same cause, used to commit while the first
/// was still being isolated: the same command after the fix resumed past
/// it, and its records stayed rejected (17,240 of a 1 M-line JSON file
/// whose Unix times went into a timestamptz column). Here the first chunk's
/// first record waits a second in a trigger that then refuses it, so the
/// next chunks, of dates written day first only, commit first. Their rejects are
/// put back with them, and the live warning that rows go on loading is not
/// shown.
#[test]
fn a_chunk_all_rejected_before_the_first_records_stop_loads_once_the_cause_is_fixed() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE u (id int, d date); \
         CREATE FUNCTION slow_first() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
         IF NEW.id = 0 THEN PERFORM pg_sleep(1); RAISE EXCEPTION 'first record held back'; END IF; \
         RETURN NEW; END $$; \
         CREATE TRIGGER slow_first BEFORE INSERT ON u FOR EACH ROW EXECUTE FUNCTION slow_first()",
    );
    let data: String = (1..6_000).map(|i| format!("{i},{}/{:02}/2024\n", 13 + i % 16, 1 + i % 12)).collect();
    let data = format!("0,2024-01-01\n{data}");
    let file = db.file("times.csv", data.as_bytes());
    let args = ["--chunk-size", "32KiB", "--workers", "2"];
    let loaded = load_with_rejects(&db, &file, "u", &args);
    assert_eq!(loaded.run.code, 5, "{}", loaded.run.output());
    let says = "records were all rejected, which looks like a wrong option rather than bad data; the first: ";
    assert!(loaded.run.stderr.contains(says), "{}", loaded.run.stderr);
    assert!(loaded.run.stderr.contains("first record held back"), "{}", loaded.run.stderr);
    assert!(!loaded.run.stderr.contains("so far,"), "no live warning: {}", loaded.run.stderr);
    assert!(loaded.run.stderr.contains("0 rows in 0 chunks were committed"), "{}", loaded.run.stderr);
    let committed = "SELECT count(*) FILTER (WHERE state = 'done') || ' ' || (count(*) > 0) FROM sluice.chunks";
    assert_eq!(db.scalar(committed), "0 true", "the later chunks, put back to pending");
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.rejects"), "0");
    assert!(!loaded.rejects_path.exists(), "no rejects stay");
    // The cause fixed, the same command loads every record.
    db.execute("DROP TRIGGER slow_first ON u; ALTER TABLE u ALTER d TYPE text");
    let loaded = load_with_rejects(&db, &file, "u", &args);
    assert_eq!(loaded.run.code, 0, "{}", loaded.run.output());
    assert_eq!((db.count("u"), loaded.rejects.len()), (6_000, 0));
    assert_accounts(&loaded.report);
}

/// A table referring to another of keys 1 to 99, with a row already (its
/// keys stay in place).
const DIM_AND_FACT: &str = "CREATE TABLE dim (id int PRIMARY KEY); INSERT INTO dim SELECT generate_series(1, 99); \
     CREATE TABLE fact (id int PRIMARY KEY, dim_id int REFERENCES dim); INSERT INTO fact VALUES (0, 1)";

/// Lines 1 to 20,000, each its number and `rest(number)`.
fn numbered_lines(rest: impl Fn(u64) -> String) -> String {
    (1..=20_000u64).map(|line| format!("{line},{}\n", rest(line))).collect()
}

/// A foreign key is checked at the end of a COPY, so its refusal names no
/// line: isolation halved the run until the record stood alone, some 16
/// COPY statements a bad record. The refusal names the missing key, and
/// the records that refer to it are rejected together, as is a value
/// written otherwise than the server writes it (`0100`).
#[test]
fn records_a_foreign_key_refuses_are_found_by_the_key_it_names() {
    let db = TestDb::new();
    db.execute(DIM_AND_FACT);
    let dim = |line: u64| match line {
        7_777 => "0100".to_string(),
        l if l % 500 == 0 => "100".into(),
        l if l % 2_999 == 0 => "200".into(),
        l => (l % 99 + 1).to_string(),
    };
    let data = numbered_lines(dim);
    let want: Vec<u64> = (1..=20_000).filter(|&l| l == 7_777 || l % 500 == 0 || l % 2_999 == 0).collect();
    let loaded = load_with_rejects(&db, &db.file("fact.csv", data.as_bytes()), "fact", &[]);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
    assert_eq!(loaded.sorted_lines(), want);
    assert!(loaded.rejects.iter().all(|r| r["sqlstate"] == "23503"), "{:?}", loaded.rejects[0]);
    assert_eq!(db.count("fact"), 1 + 20_000 - want.len() as u64);
    assert_accounts(&loaded.report);
    let copies = isolation_copies(&loaded.report);
    // Halving each: 854 statements.
    assert!(copies < 300, "{copies} COPY statements for {} rejects", want.len());
}

/// Records each referring to a missing key of its own: one refusal names
/// one key, so the rest of the run went again for each. All the run's
/// missing keys are looked up in one query: each reject names its own key
/// as the server writes it (`0100` as 100). A chunk costs the refused COPY
/// and the copy of the rest; one after a chunk with rejects, whose records
/// are looked up before its first COPY, the copy alone (it was refused
/// first, a chunk's work for nothing). Into a table whose key refers to the
/// table itself, the records of a run may refer to each other: there no
/// lookup, each record found by halving, and none rejected that loads.
#[test]
fn missing_keys_of_their_own_are_looked_up_at_once() {
    let db = TestDb::new();
    db.execute(DIM_AND_FACT);
    let dim = |line: u64| match line {
        7_777 => "0100".to_string(),
        l if l % 100 == 0 => (100_000 + l).to_string(),
        l => (l % 99 + 1).to_string(),
    };
    let data = numbered_lines(dim);
    let want: Vec<u64> = (1..=20_000).filter(|&l| l == 7_777 || l % 100 == 0).collect();
    let file = db.file("fact.csv", data.as_bytes());
    let loaded = load_with_rejects(&db, &file, "fact", &["--chunk-size", "16KiB"]);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
    assert_eq!(loaded.sorted_lines(), want);
    for reject in &loaded.rejects {
        let line = reject["line"].as_u64().unwrap();
        let key = if line == 7_777 { 100 } else { 100_000 + line };
        let reason = reject["reason"].as_str().unwrap();
        assert!(reason.contains(&format!("(Key (dim_id)=({key}) is not present in table \"dim\".)")), "{reason}");
    }
    assert_eq!(db.count("fact"), 1 + 20_000 - want.len() as u64);
    assert_accounts(&loaded.report);
    let chunks = loaded.report["chunks"].as_array().unwrap();
    let copies: u64 = chunks.iter().map(|c| c["isolation_copies"].as_u64().unwrap()).sum();
    assert!(chunks.len() > 8 && copies <= chunks.len() as u64, "{copies} COPY statements for {} chunks", chunks.len());
    // Each node refers to an earlier one, some to none there is (and those
    // referring to a rejected one are rejected in turn).
    db.execute("CREATE TABLE node (id int PRIMARY KEY, parent int REFERENCES node); INSERT INTO node VALUES (0, NULL)");
    let parent = |line: u64| if line % 250 == 0 { 1_000_000 + line } else { line / 2 };
    let data: String = (1..=5_000u64).map(|line| format!("{line},{}\n", parent(line))).collect();
    let mut want: Vec<u64> = Vec::new();
    for line in 1..=5_000u64 {
        if line % 250 == 0 || want.binary_search(&parent(line)).is_ok() {
            want.push(line);
        }
    }
    let loaded = load_with_rejects(&db, &db.file("node.csv", data.as_bytes()), "node", &[]);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
    assert_eq!(loaded.sorted_lines(), want);
}

/// A foreign key of two columns: its missing keys are looked up at once
/// too, each reject naming its own (each such record was found by halving
/// the run until it stood alone), and a record with a NULL in the key,
/// which refers to nothing, loads.
#[test]
fn missing_keys_of_two_columns_are_looked_up_at_once() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE pair (a int, b text, PRIMARY KEY (a, b)); \
         INSERT INTO pair SELECT g, 'k' || g FROM generate_series(1, 99) g; \
         CREATE TABLE ref2 (id int PRIMARY KEY, a int, b text, FOREIGN KEY (a, b) REFERENCES pair); \
         INSERT INTO ref2 VALUES (0, 1, 'k1')",
    );
    let key = |line: u64| match line {
        l if l % 100 == 0 => format!("{l},k{l}"),
        l if l % 77 == 0 => "5,".to_string(),
        l => format!("{},k{}", l % 99 + 1, l % 99 + 1),
    };
    let data = numbered_lines(key);
    let want: Vec<u64> = (1..=20_000).filter(|l| l % 100 == 0).collect();
    let loaded = load_with_rejects(&db, &db.file("ref2.csv", data.as_bytes()), "ref2", &["--chunk-size", "16KiB"]);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
    assert_eq!(loaded.sorted_lines(), want);
    for reject in &loaded.rejects {
        let line = reject["line"].as_u64().unwrap();
        let reason = reject["reason"].as_str().unwrap();
        assert!(
            reason.contains(&format!("(Key (a, b)=({line}, k{line}) is not present in table \"pair\".)")),
            "{reason}"
        );
    }
    assert_eq!(db.count("ref2"), 1 + 20_000 - want.len() as u64);
    let chunks = loaded.report["chunks"].as_array().unwrap();
    let copies: u64 = chunks.iter().map(|c| c["isolation_copies"].as_u64().unwrap()).sum();
    assert!(chunks.len() > 8 && copies <= chunks.len() as u64, "{copies} COPY statements for {} chunks", chunks.len());
    // Into a partitioned table, whose partitions hold copies of the key.
    db.execute(
        "CREATE TABLE parted (id int, a int, b text, FOREIGN KEY (a, b) REFERENCES pair) PARTITION BY RANGE (id); \
         CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (10000); \
         CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (10000) TO (20001); \
         INSERT INTO parted VALUES (0, 1, 'k1')",
    );
    let loaded = load_with_rejects(&db, &db.file("parted.csv", data.as_bytes()), "parted", &[]);
    assert_eq!((loaded.run.code, loaded.sorted_lines()), (1, want), "{}", loaded.run.output());
    let reason = loaded.rejects[0]["reason"].as_str().unwrap();
    assert!(reason.ends_with("(Key (a, b)=(100, k100) is not present in table \"pair\".)"), "{reason}");
}

/// Records no partition takes are rejected one by one with the same words;
/// one warning counts them, with the first one's key and what to do.
#[test]
fn records_no_partition_takes_are_counted_in_one_warning() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE pt (id int, d date) PARTITION BY RANGE (d); \
         CREATE TABLE pt_2024 PARTITION OF pt FOR VALUES FROM ('2024-01-01') TO ('2025-01-01')",
    );
    let day = |i: u32| match i % 40 {
        d @ 0..=30 => format!("2024-12-{:02}", d + 1),
        d => format!("2025-01-{:02}", d - 30),
    };
    let data: String = (0..400).map(|i| format!("{i},{}\n", day(i))).collect();
    let loaded = load_with_rejects(&db, &db.file("pt.csv", data.as_bytes()), "pt", &["--max-errors", "1000"]);
    assert_eq!((loaded.run.code, db.count("pt"), loaded.rejects.len()), (1, 310, 90), "{}", loaded.run.output());
    let warning = "90 records were rejected because no partition of public.pt takes their key (the first: ";
    assert_reported(&loaded.report, warning);
    assert!(
        loaded.run.stderr.contains(": (d) = (2025-01-01)): create the partitions they need"),
        "{}",
        loaded.run.stderr
    );
    // The first 1,000 records: the stop says so.
    let data: String = (0..1_000).map(|i| format!("{i},2025-02-01\n")).collect();
    let loaded = load_with_rejects(&db, &db.file("feb.csv", data.as_bytes()), "pt", &[]);
    assert_eq!(loaded.run.code, 5, "{}", loaded.run.output());
    let says = "the first 1,000 records were all rejected, as no partition of the table takes their keys; the first: ";
    assert!(loaded.run.stderr.contains(says), "{}", loaded.run.stderr);
    assert!(loaded.run.stderr.contains("Create the partitions they need (or a DEFAULT"), "{}", loaded.run.stderr);
    // `sluice status` says why the job stopped, where it said "resume with"
    // alone, as after a crash (the command runs into the same stop).
    let status = || crate::util::sluice(&["status", "--db", &db.conninfo()]).stdout;
    let why = "  its last run stopped: the first 1,000 records were all rejected, as no partition of the table takes";
    let shown = status();
    assert!(shown.contains(why), "{shown}");
    assert!(shown.contains("  once the cause is dealt with, resume with: cd "), "{shown}");
    db.execute("CREATE TABLE pt_2025 PARTITION OF pt FOR VALUES FROM ('2025-01-01') TO ('2026-01-01')");
    let again = load_with_rejects(&db, &db.file("feb.csv", data.as_bytes()), "pt", &[]);
    assert_eq!((again.run.code, db.count("pt")), (0, 1_310), "{}", again.run.output());
    let cleared = "SELECT count(*) FROM sluice.jobs WHERE stopped_by IS NOT NULL OR finished_at IS NULL";
    assert_eq!(db.scalar(cleared), "0");
    assert!(!status().contains("its last run stopped"));
}

/// The rejects file's default path is the table's: a load that rejects
/// nothing leaves an earlier load's file there, which the user might take
/// for this one's. It says so, and leaves the file as it was.
#[test]
fn a_load_that_rejects_nothing_names_an_earlier_loads_rejects_file() {
    let db = TestDb::new();
    db.execute("CREATE TABLE e (id int)");
    let (earlier, clean) = (db.file("earlier.csv", b"1\nx\n"), db.file("clean.csv", b"2\n3\n"));
    let loaded = load_with_rejects(&db, &earlier, "e", &[]);
    assert_eq!((loaded.run.code, loaded.rejects.len()), (1, 1), "{}", loaded.run.output());
    let before = std::fs::read(&loaded.rejects_path).unwrap();
    let args = [clean.to_str().unwrap(), "--table", "e", "--rejects", loaded.rejects_path.to_str().unwrap()];
    let run = db.load(&args);
    assert_eq!(run.code, 0, "{}", run.output());
    let says =
        format!("{} holds rejects of an earlier load (this one rejected nothing)", loaded.rejects_path.display());
    assert!(run.stderr.contains(&says), "{}", run.stderr);
    assert_eq!(std::fs::read(&loaded.rejects_path).unwrap(), before, "left as it was");
    std::fs::remove_file(&loaded.rejects_path).unwrap();
    let run = db.load(&[&args[..], &["--restart"]].concat());
    assert_eq!(run.code, 0, "{}", run.output());
    assert!(!run.stderr.contains("holds rejects of an earlier load"), "no file, no word: {}", run.stderr);
}

/// A load of another file into the same table, which rejects records,
/// moves aside the rejects file an earlier load of another input wrote at
/// the same (default) path, instead of replacing it without a word; a
/// load of the same input again replaces it.
#[test]
fn a_load_with_rejects_moves_aside_another_loads_rejects_file() {
    let db = TestDb::new();
    db.execute("CREATE TABLE e (id int)");
    let (earlier, other) = (db.file("earlier.csv", b"1\nx\n"), db.file("other.csv", b"2\ny\n"));
    let first = load_with_rejects(&db, &earlier, "e", &[]);
    let before = std::fs::read(&first.rejects_path).unwrap();
    let args = [other.to_str().unwrap(), "--table", "e", "--rejects", first.rejects_path.to_str().unwrap()];
    let run = db.load(&args);
    assert_eq!(run.code, 1, "{}", run.output());
    let says = format!(
        "{} held the rejects of another load (of {}): it was moved to ",
        first.rejects_path.display(),
        earlier.display()
    );
    let at = run.stderr.find(&says).unwrap_or_else(|| panic!("{}", run.stderr)) + says.len();
    let kept = run.stderr[at..].split(", so that").next().unwrap();
    assert!(kept.ends_with("Z.jsonl"), "{kept}");
    assert_eq!(std::fs::read(kept).unwrap(), before, "kept as it was");
    let now = std::fs::read_to_string(&first.rejects_path).unwrap();
    assert!(now.lines().count() == 1 && now.contains("other.csv"), "{now}");
    let again = db.load(&[&args[..], &["--restart"]].concat());
    assert_eq!(again.code, 1, "{}", again.output());
    assert!(!again.stderr.contains("held the rejects of another load"), "{}", again.stderr);
}

/// With `--on-conflict-do-nothing`, a unique key checked at commit
/// (`DEFERRABLE INITIALLY DEFERRED`) refuses the first chunk at its
/// COMMIT; from then on it is checked at each row, and the records it
/// refuses are skipped. A record whose key is held and whose value a CHECK
/// refuses is rejected for the CHECK, as the INSERT would refuse it.
#[test]
fn a_key_checked_at_commit_skips_its_duplicates_at_each_row_on_conflict() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE d (id int, note text, CONSTRAINT u UNIQUE (id) DEFERRABLE INITIALLY DEFERRED, \
         CONSTRAINT c CHECK (note <> 'bad')); INSERT INTO d SELECT g, 'old' FROM generate_series(1, 1000) g",
    );
    let data: String =
        (501..=3_000).map(|i| format!("{i}\t{}\n", if i == 700 || i == 2_000 { "bad" } else { "new" })).collect();
    let file = db.file("d.tsv", data.as_bytes());
    let loaded = load_with_rejects(&db, &file, "d", &["--on-conflict-do-nothing"]);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
    assert_accounts(&loaded.report);
    assert_eq!(loaded.sorted_lines(), [200, 1_500], "the CHECK's two records, held key or not");
    assert!(loaded.rejects.iter().all(|r| r["sqlstate"] == "23514"), "{:?}", loaded.rejects);
    assert_eq!(loaded.report["summary"]["skipped"], 499, "ids 501-1000 but 700");
    assert_eq!(db.scalar("SELECT count(*) || ' ' || count(DISTINCT id) FROM d"), "2999 2999");
    assert_reported(&loaded.report, "were rejected (or skipped, for a key) at their lines");
    // A file every key of which is held, in many chunks, into such a key
    // alone: a chunk the key query skipped whole after COPY refused it (the
    // key checked at each row by then) made isolation panic. The staged
    // path is tried, refused (ON CONFLICT does not take a deferrable key),
    // and given up.
    db.execute(
        "CREATE TABLE e (id int, note text, CONSTRAINT v UNIQUE (id) DEFERRABLE INITIALLY DEFERRED); \
         INSERT INTO e SELECT g, 'old' FROM generate_series(1, 30000) g",
    );
    let every: String = (1..=30_000).map(|i| format!("{i}\tagain\n")).collect();
    let again = db.file("again.tsv", every.as_bytes());
    let loaded = load_with_rejects(&db, &again, "e", &["--on-conflict-do-nothing", "--chunk-size", "16KiB"]);
    loaded.run.assert_ok();
    assert_accounts(&loaded.report);
    assert_eq!(loaded.report["summary"]["skipped"], 30_000);
    assert_eq!(db.scalar("SELECT count(*) FILTER (WHERE note = 'old') || ' ' || count(*) FROM e"), "30000 30000");
}

/// Columns that leave out one a row must be given (NOT NULL, no default)
/// are refused before anything loads, naming it: every row would be
/// refused, and the stop after the first 1,000 blamed no option. Defaults,
/// a domain's default and identities are given; an insert trigger may give
/// it too.
#[test]
fn columns_that_leave_out_a_required_one_are_refused_up_front() {
    let db = TestDb::new();
    db.execute(
        "CREATE DOMAIN pos AS int DEFAULT 1 NOT NULL; \
         CREATE TABLE t (a int, b text NOT NULL, c int NOT NULL DEFAULT 0, \
           d int GENERATED BY DEFAULT AS IDENTITY, e pos, \"Big\" int NOT NULL)",
    );
    let file = db.file("t.csv", b"1,x,7\n2,y,8\n");
    let path = file.to_str().unwrap();
    let run = db.load(&[path, "-t", "t", "--columns", "a,c,d"]);
    run.assert_refused(
        "columns b, \"Big\" of public.t are NOT NULL without a default, and the columns loaded (a, c, d) \
                        leave them out: every row would be refused",
    );
    assert_eq!(db.count("t"), 0);
    db.load(&[path, "-t", "t", "--columns", "a,b,Big"]).assert_ok();
    assert_eq!(
        db.scalar("SELECT string_agg(concat_ws(' ', a, b, c, d, e, \"Big\"), ', ' ORDER BY a) FROM t"),
        "1 x 0 1 1 7, 2 y 0 2 1 8"
    );
    // A trigger that fills it.
    db.execute(
        "CREATE FUNCTION fill() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN NEW.b := coalesce(NEW.b, 'filled'); \
         RETURN NEW; END$$; CREATE TRIGGER fill BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION fill()",
    );
    db.load(&[path, "-t", "t", "--columns", "a,-,Big", "--load-again"]).assert_ok();
    assert_eq!(db.scalar("SELECT count(*) FROM t WHERE b = 'filled'"), "2");
}

/// Asserts that `table`'s rows (`id`, `v`) are `model`'s, in id order.
fn assert_holds(db: &TestDb, table: &str, model: &std::collections::BTreeMap<u64, String>) {
    let rows = db.scalar(&format!("SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM {table}"));
    let expected: Vec<String> = model.iter().map(|(id, v)| format!("{id}:{v}")).collect();
    assert_eq!(rows, expected.join(","), "{table}");
}

/// `--on-conflict-do-update` into a partitioned table, whose merge cannot
/// count a batch's rows file by file: small files share batches of 16 all
/// the same. A batch that COPY straight into the table takes goes so; one
/// it refuses goes a file at a time in its transaction, each file straight
/// when it can, else merged (its held keys counted by a lookup, RETURNING
/// reading no `xmax` there). Each file's counts are its own, a key a later
/// file repeats keeps that file's line, and a bad value is rejected at its
/// line.
#[test]
fn small_files_of_changes_into_a_partitioned_table_share_small_batches() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE pt (id int PRIMARY KEY, v text, n int) PARTITION BY RANGE (id); \
         CREATE TABLE pt_low PARTITION OF pt FOR VALUES FROM (MINVALUE) TO (50000); \
         CREATE TABLE pt_high PARTITION OF pt FOR VALUES FROM (50000) TO (MAXVALUE); \
         INSERT INTO pt SELECT g, 'old', 0 FROM generate_series(1, 2000) g",
    );
    let mut model: std::collections::BTreeMap<u64, String> = (1..=2000).map(|id| (id, "old".to_string())).collect();
    let (bad, mut expected_replaced) = ((59u64, 3u64), Vec::new());
    for f in 0..60u64 {
        let mut data = String::new();
        let mut replaced = 0;
        for line in 1..=40u64 {
            let id = match (f, line) {
                (31, 5) => 100_000 + 30 * 40 + 7,
                _ if f < 30 => f * 80 + line * 2,
                _ => 100_000 + f * 40 + line,
            };
            let n = if (f, line) == bad { "x".to_string() } else { line.to_string() };
            data.push_str(&format!("{id}\tf{f} l{line}\t{n}\n"));
            if (f, line) != bad {
                replaced += u64::from(model.insert(id, format!("f{f} l{line}")).is_some());
            }
        }
        expected_replaced.push(replaced);
        db.file(&format!("pchanges/p_{f:02}.tsv"), data.as_bytes());
    }
    let glob = db.dir.path().join("pchanges/p_*.tsv");
    let args = ["--on-conflict-do-update", "--chunk-size", "16KiB", "--workers", "1"];
    let loaded = load_with_rejects(&db, &glob, "pt", &args);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.stderr);
    let lines: Vec<(String, u64)> = loaded
        .rejects
        .iter()
        .map(|r| (r["file"].as_str().unwrap().rsplit('/').next().unwrap().to_string(), r["line"].as_u64().unwrap()))
        .collect();
    assert_eq!(lines, vec![("p_59.tsv".to_string(), 3)]);
    let summary = &loaded.report["summary"];
    assert_eq!(summary["batches"], 4, "{summary}");
    let chunks = loaded.report["chunks"].as_array().unwrap();
    let replaced: Vec<u64> = chunks.iter().map(|c| c["replaced"].as_u64().unwrap()).collect();
    assert_eq!(replaced, expected_replaced);
    assert_eq!(summary["replaced"], expected_replaced.iter().sum::<u64>(), "{summary}");
    assert_eq!(summary["rows_loaded"], 60 * 40 - 1, "{summary}");
    // Files 0-24 hold held keys, 31 repeats a key of 30, 59 holds the bad
    // value. The batch of 32-47 goes straight whole; those of 0-15 and
    // 16-31 are refused at their first record, and each file of them tries
    // alone; that of 48-59 is refused late (file 59), so the worker skips
    // the try for the next file (48) before each file tries alone.
    let straight: Vec<u64> =
        chunks.iter().filter(|c| c["staged"] == false).map(|c| c["seq"].as_u64().unwrap()).collect();
    let expected: Vec<u64> = (25..60).filter(|f| ![31, 48, 59].contains(f)).collect();
    assert_eq!(straight, expected);
    assert_holds(&db, "pt", &model);
}

/// `--on-conflict-do-update` into a table that holds none of the keys (the
/// first run of a job that loads with the flag every night): the chunks go
/// straight into the table by COPY, as without the flag, and the summary
/// says so. In a file of changes, a chunk with a held key, a key repeated
/// in it, or a record a trigger suppresses (COPY's count would not add up)
/// is refused that way and merged; after a refusal the worker skips the
/// try for 1, 2, 4, ... chunks (modelled here, one worker, chunk by chunk),
/// and every key keeps its last line, with the counts a merge gives.
#[test]
fn changes_no_row_holds_go_straight_into_the_table_and_the_others_are_merged() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE s (id int PRIMARY KEY, v text); \
         CREATE FUNCTION skip_marked() RETURNS trigger LANGUAGE plpgsql AS \
         $$BEGIN IF NEW.v = 'skip' THEN RETURN NULL; END IF; RETURN NEW; END$$; \
         CREATE TRIGGER skip_marked BEFORE INSERT ON s FOR EACH ROW EXECUTE FUNCTION skip_marked()",
    );
    for f in 0..60u64 {
        let data: String = (1..=40).map(|line| format!("{}\tf{f} l{line}\n", f * 100 + line)).collect();
        db.file(&format!("new/n_{f:02}.tsv"), data.as_bytes());
    }
    let glob = db.dir.path().join("new/n_*.tsv");
    let first = load_with_rejects(&db, &glob, "s", &["--on-conflict-do-update", "--chunk-size", "16KiB"]);
    first.run.assert_ok();
    let summary = &first.report["summary"];
    assert_eq!((summary["rows_loaded"].as_u64(), summary["replaced"].as_u64()), (Some(2400), Some(0)), "{summary}");
    assert_eq!(summary["copy"]["staged_chunks"], 0, "{summary}");
    assert!(summary["batches"].as_u64().unwrap() >= 2, "{summary}");
    let said = "straight into the table: no record's key was held or repeated";
    assert!(first.run.stdout.contains(said), "{}", first.run.stdout);
    // One file of changes: runs of 1,000 lines of held ids between runs
    // of new ones, a new id repeated 14 lines on, a record suppressed.
    let mut model: std::collections::BTreeMap<u64, String> =
        (0..60u64).flat_map(|f| (1..=40).map(move |l| (f * 100 + l, format!("f{f} l{l}")))).collect();
    let lines: Vec<(u64, String)> = (0..9_000u64)
        .map(|i| {
            let id = match i {
                2_717 => 100_000 + 2_703,
                _ if (i / 1_000) % 3 == 1 => (i * 7) % 60 * 100 + 1 + i % 40,
                _ => 100_000 + i,
            };
            (id, if i == 5_555 { "skip".to_string() } else { format!("c{i}") })
        })
        .collect();
    let data: String = lines.iter().map(|(id, v)| format!("{id}\t{v}\n")).collect();
    let changes = db.file("changes.tsv", data.as_bytes());
    let args = ["--on-conflict-do-update", "--chunk-size", "4KiB", "--workers", "1"];
    let second = load_with_rejects(&db, &changes, "s", &args);
    second.run.assert_ok();
    // Each chunk in turn: straight when no key of it is held or repeated
    // and no record suppressed, unless the worker skips the try: it does
    // after a try refused late (past the chunk's first eighth, or with no
    // line: the suppressed record), for 1, 2, 4, ... chunks.
    let (mut skip, mut backoff, mut replaced) = (0u32, 0u32, 0u64);
    let chunks = second.report["chunks"].as_array().unwrap();
    assert!(chunks.len() >= 20, "{}", chunks.len());
    let mut tried = Vec::new();
    for chunk in chunks {
        let from = chunk["first_line"].as_u64().unwrap() as usize - 1;
        let mine = &lines[from..from + chunk["records"].as_u64().unwrap() as usize];
        let mut ids = std::collections::HashSet::new();
        let refused_at = mine.iter().position(|(id, _)| model.contains_key(id) || !ids.insert(*id));
        let suppressed = mine.iter().any(|(_, v)| v == "skip");
        let straight = match (skip, refused_at, suppressed) {
            (0, None, false) => {
                backoff = 0;
                true
            }
            (0, Some(at), _) if (at + 1) * 8 <= mine.len() => false,
            (0, _, _) => {
                backoff = (backoff * 2).clamp(1, 64);
                skip = backoff;
                false
            }
            _ => {
                skip -= 1;
                false
            }
        };
        tried.push((from + 1, refused_at, straight));
        assert_eq!(chunk["staged"], !straight, "chunk at line {}: {chunk}, tries: {tried:?}", from + 1);
        let mut chunk_replaced = 0;
        for (id, v) in mine.iter().filter(|(_, v)| v != "skip") {
            chunk_replaced += u64::from(model.insert(*id, v.clone()).is_some());
        }
        assert_eq!(chunk["replaced"], chunk_replaced, "{chunk}");
        replaced += chunk_replaced;
    }
    let staged = chunks.iter().filter(|c| c["staged"] == true).count();
    assert!(staged > 1 && staged < chunks.len() - 1, "{staged} of {}", chunks.len());
    let summary = &second.report["summary"];
    assert_eq!(summary["replaced"], replaced, "{summary}");
    assert_eq!(summary["suppressed"], 1, "{summary}");
    let said = format!("{staged} chunks of {} merged by key from a temporary table", chunks.len());
    assert!(second.run.stdout.contains(&said), "{}", second.run.stdout);
    assert!(second.run.stdout.contains("the others straight into the table (no key held)"));
    assert_holds(&db, "s", &model);
}

/// A glob of small files of changes (a folder a change-data export drops a
/// file an hour into) with `--on-conflict-do-update`: their chunks share
/// batches, each staged by one COPY and merged by one statement, as the
/// chunks of small files do on the other paths (it took a transaction a
/// file, 2.2 times as long). Each chunk's counts are still its own: a file
/// of held keys replaced them all, a file of new keys none. A key repeated
/// by a later file keeps that file's record, a record a trigger suppresses
/// is counted so, and bad values (refused by the COPY, at a line) and a
/// value a CHECK refuses (by the merge, at none) are rejected at their
/// lines while the files around them go on in batches, staged (a file of
/// held keys sent the direct way would have every record rejected for
/// its key), also where a batch after one with rejects is screened. A
/// unique key with a NULL, whose rows the batch's counts cannot find again
/// by their key, sends its batch a file at a time, and loads as well.
#[test]
fn small_files_of_changes_share_batches_and_each_chunk_counts_its_own_replaced_rows() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE b (id int PRIMARY KEY, note text, amount int CHECK (amount >= 0)); \
         INSERT INTO b SELECT g, 'old', 0 FROM generate_series(1, 3000) g; \
         CREATE FUNCTION skip_marked() RETURNS trigger LANGUAGE plpgsql AS \
         $$BEGIN IF NEW.note = 'skip' THEN RETURN NULL; END IF; RETURN NEW; END$$; \
         CREATE TRIGGER skip_marked BEFORE INSERT ON b FOR EACH ROW EXECUTE FUNCTION skip_marked()",
    );
    // File f holds the ids the table holds when f is even, new ones when
    // odd; file 10's line 5 repeats file 9's line 7, file 21's line 3 its
    // line 1.
    let id_of = |f: u64, line: u64| match (f, line) {
        (10, 5) => 100_000 + 9 * 50 + 7,
        (21, 3) => 100_000 + 21 * 50 + 1,
        _ if f % 2 == 0 => f * 50 + line,
        _ => 100_000 + f * 50 + line,
    };
    let (bad, suppressed) = ([(30, 4), (31, 4), (45, 10), (50, 6)], (33, 2));
    let mut model = std::collections::BTreeMap::new();
    model.extend((1..=3000u64).map(|id| (id, ("old".to_string(), 0))));
    let mut replaced = 0;
    for f in 0..60u64 {
        let mut data = String::new();
        for line in 1..=50u64 {
            let (note, amount) = match (f, line) {
                (45, 10) => ("negative".to_string(), "-1".to_string()),
                (33, 2) => ("skip".to_string(), "1".to_string()),
                _ if bad.contains(&(f, line)) => ("bad".to_string(), "x".to_string()),
                _ => (format!("f{f} l{line}"), (f * 100 + line).to_string()),
            };
            data.push_str(&format!("{}\t{note}\t{amount}\n", id_of(f, line)));
            if !bad.contains(&(f, line)) && (f, line) != suppressed {
                replaced += u64::from(model.insert(id_of(f, line), (note, amount.parse().unwrap())).is_some());
            }
        }
        db.file(&format!("changes/c_{f:02}.tsv"), data.as_bytes());
    }
    let glob = db.dir.path().join("changes/c_*.tsv");
    let rows = "SELECT string_agg(id || ':' || note || ':' || amount, ',' ORDER BY id) FROM b";
    let expected: Vec<String> = model.iter().map(|(id, (note, amount))| format!("{id}:{note}:{amount}")).collect();
    // Then the same files again, one worker: every key is held by then.
    let again = ["--load-again", "--job", "again", "--workers", "1"];
    for (run, extra) in [(1, &["--workers", "2"][..]), (2, &again[..])] {
        let args = [&["--on-conflict-do-update", "--chunk-size", "16KiB"][..], extra].concat();
        let loaded = load_with_rejects(&db, &glob, "b", &args);
        assert_eq!(loaded.run.code, 1, "{}", loaded.run.output());
        assert_accounts(&loaded.report);
        let file_of = |v: &Value| v["file"].as_str().unwrap().rsplit("c_").next().unwrap()[..2].parse::<u64>().unwrap();
        let lines: Vec<(u64, u64)> = loaded.rejects.iter().map(|r| (file_of(r), r["line"].as_u64().unwrap())).collect();
        assert_eq!(lines, bad, "run {run}: {:?}", loaded.rejects);
        let summary = &loaded.report["summary"];
        let applied = 3000 - bad.len() as u64 - 1;
        let replaced = if run == 1 { replaced } else { applied };
        assert_eq!(summary["rows_loaded"], applied, "{summary}");
        assert_eq!(
            (summary["suppressed"].clone(), summary["replaced"].clone()),
            (1.into(), replaced.into()),
            "{summary}"
        );
        let batches = summary["batches"].as_u64().unwrap();
        assert!((3..20).contains(&batches), "run {run}: 60 files in {batches} batches: {summary}");
        assert_eq!(db.scalar(rows), expected.join(","), "run {run}: each key's last record");
        // Each file's chunk: its rows, and of them the held keys' (a key
        // repeated from another file counts in either, by where the
        // batches were cut).
        for chunk in loaded.report["chunks"].as_array().unwrap() {
            let f = file_of(chunk);
            let lost = bad.iter().filter(|r| r.0 == f).count() as u64 + u64::from(suppressed.0 == f);
            assert_eq!(chunk["rows"], 50 - lost, "{chunk}");
            assert_eq!(chunk["suppressed"], u64::from(suppressed.0 == f), "{chunk}");
            let own = match f {
                _ if run == 2 => 50 - lost,
                9 | 10 => continue,
                21 => 1,
                _ if f % 2 == 0 => 50 - lost,
                _ => 0,
            };
            assert_eq!(chunk["replaced"], own, "run {run}: {chunk}");
        }
    }
    let ledger = "SELECT string_agg(s::text, ' ' ORDER BY s) FROM \
                  (SELECT sum(rows_replaced) s FROM sluice.chunks GROUP BY job) j";
    assert_eq!(db.scalar(ledger), format!("{replaced} 2995"), "the ledger counts each run's");
    // A unique key that may be NULL: rows with a NULL keep a row each.
    db.execute("CREATE TABLE public.n (code text UNIQUE, v int); INSERT INTO public.n VALUES ('a', 0)");
    for f in 0..4 {
        let data = format!("a\t{f}\n\\N\t{f}\nc{f}\t{f}\n");
        db.file(&format!("nulls/n_{f}.tsv"), data.as_bytes());
    }
    let glob = db.dir.path().join("nulls/n_*.tsv");
    let loaded = load_with_rejects(&db, &glob, "n", &["--on-conflict-do-update"]);
    loaded.run.assert_ok();
    assert_accounts(&loaded.report);
    let summary = &loaded.report["summary"];
    assert_eq!(summary["rows_loaded"], 12, "none counted as suppressed: {summary}");
    assert_eq!((summary["replaced"].clone(), summary["suppressed"].clone()), (4.into(), 0.into()), "{summary}");
    let rows = "SELECT string_agg(coalesce(code, '-') || v, ',' ORDER BY code, v) FROM public.n";
    assert_eq!(db.scalar(rows), "a3,c00,c11,c22,c33,-0,-1,-2,-3");
}

/// Keys every small file of a glob repeats (a status that changes every
/// hour), loaded with `--on-conflict-do-update` by four workers: the
/// batches commit in input order, so each key keeps the last file's line.
/// The batches of several files used to commit as they ended: a later
/// batch that merged first left its lines to an earlier one (3 loads in 6
/// of 500 files each kept the values of file 485 or 493).
#[test]
fn keys_every_small_file_repeats_keep_the_last_files_line_whichever_worker_merged_first() {
    let db = TestDb::new();
    db.execute("CREATE TABLE hot (id int PRIMARY KEY, v text)");
    let files: u64 = 120;
    for f in 0..files {
        let hot = (0..20).map(|k| format!("{k}\tfile {f}\n"));
        let own = (0..40).map(|i| format!("{}\tfile {f}\n", 1000 + f * 40 + i));
        db.file(&format!("hot/h_{f:03}.tsv"), hot.chain(own).collect::<String>().as_bytes());
    }
    let glob = db.dir.path().join("hot/h_*.tsv");
    // Five rounds: the old order left stale lines in 2 runs of 3 rounds in 3.
    for round in 0..5 {
        let args = ["--on-conflict-do-update", "--workers", "4", "--chunk-size", "4KiB", "--restart"];
        let loaded = load_with_rejects(&db, &glob, "hot", &args);
        loaded.run.assert_ok();
        let summary = &loaded.report["summary"];
        assert!(summary["batches"].as_u64().unwrap() >= 10, "{summary}");
        assert_eq!(summary["rows_loaded"], files * 60, "{summary}");
        // Each hot key's first line inserted, each later one replacing it.
        assert_eq!(summary["replaced"], 20 * (files - 1), "{summary}");
        let last = format!("file {}", files - 1);
        let stale = format!("SELECT count(*) FROM hot WHERE id < 20 AND v <> '{last}'");
        assert_eq!(db.scalar(&stale), "0", "round {round}: each hot key's last line");
        assert_eq!(db.count("hot"), 20 + files * 40);
        db.execute("TRUNCATE hot");
    }
}

/// A trigger that takes an advisory lock by key (to serialise changes to
/// an account) makes an earlier batch wait on the server for a later one,
/// which waits for the earlier one to commit first: the later one gives
/// way. The give-way followed only waits on rows, and such a load hung for
/// good (2 runs in 2 of 40 files, 4 workers); a Ctrl-C did not end it.
#[test]
fn a_trigger_that_takes_an_advisory_lock_by_key_does_not_hang_a_load_replacing_rows() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE public.acct (id int PRIMARY KEY, v text); \
         CREATE FUNCTION public.acct_lock() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN PERFORM pg_advisory_xact_lock(NEW.id % 50); RETURN NEW; END $$; \
         CREATE TRIGGER acct_lock BEFORE INSERT OR UPDATE ON public.acct \
         FOR EACH ROW EXECUTE FUNCTION public.acct_lock()",
    );
    let mut last = std::collections::BTreeMap::new();
    let mut rng = Rng(5);
    for f in 0..40u64 {
        let lines: Vec<(u64, String)> = (0..2000u64).map(|i| (rng.below(100_000), format!("{f}.{i}"))).collect();
        let text: String = lines.iter().map(|(id, v)| format!("{id}\t{v}\n")).collect();
        db.file(&format!("acct/part{f:03}.tsv"), text.as_bytes());
        last.extend(lines);
    }
    let glob = db.dir.path().join("acct/part*.tsv");
    let args = ["--on-conflict-do-update", "--workers", "4", "--chunk-size", "256KiB"];
    let loaded = load_with_rejects(&db, &glob, "acct", &args);
    loaded.run.assert_ok();
    assert_eq!(loaded.report["summary"]["rows_loaded"], 40 * 2000, "{}", loaded.report["summary"]);
    let kept: String = last.iter().map(|(id, v)| format!("{id}\t{v}\n")).collect();
    assert_eq!(
        db.scalar("SELECT string_agg(id || E'\\t' || v || E'\\n', '' ORDER BY id) FROM public.acct"),
        kept,
        "each key's last line"
    );
    // The batches took turns at the trigger's locks: the report says so,
    // rather than blame another session, and names the cure.
    let hint = loaded.report["summary"]["server_waits"]["hint"].as_str().unwrap_or_default().to_string();
    assert!(
        hint.starts_with("Lock:advisory: the load's sessions took turns") && hint.contains("--workers 1"),
        "{hint}"
    );
    assert!(loaded.run.stdout.contains(&hint), "{}", loaded.run.stdout);
}

/// The summary says what the rejects were, by kind, with the first record
/// of each, so that a user need not read the file to learn that 40,000
/// rejects were two mistakes; after a resumed run, for the whole job, as
/// the file holds it.
#[test]
fn the_summary_counts_the_rejects_by_kind_with_the_first_of_each() {
    let db = TestDb::new();
    db.execute("CREATE TABLE sales (id int PRIMARY KEY, day date, price numeric(5,2))");
    let mut data = String::new();
    for i in 1..=60_000u32 {
        let day = if i % 100 == 7 { format!("{}/01/2024", 13 + i % 17) } else { "2024-01-05".to_string() };
        let price = if i % 1000 == 500 { "1234.5" } else { "12.5" };
        data.push_str(&format!("{i},{day},{price}\n"));
    }
    data.push_str("60000,2024-01-05,1\n");
    let file = db.file("sales.csv", data.as_bytes());
    let first =
        load_with_rejects(&db, &file, "sales", &["--chunk-size", "64KiB", "--workers", "2", "--max-errors", "100"]);
    assert_eq!(first.run.code, 5, "{}", first.run.stderr);
    let loaded = load_with_rejects(&db, &file, "sales", &["--chunk-size", "64KiB", "--workers", "2"]);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.stderr);
    assert!(loaded.report["summary"]["resumed_chunks"].as_u64().unwrap() > 0, "{}", loaded.run.stderr);
    let count = |column: Option<&str>| loaded.rejects.iter().filter(|r| r["column"].as_str() == column).count();
    let (days, prices) = (count(Some("day")), count(Some("price")));
    assert_eq!((days, prices, loaded.rejects.len()), (600, 60, 661), "{}", loaded.run.stderr);
    let days_line = format!(
        "sluice:   600 records, column \"day\": date/time field value out of range: \"20/01/2024\" (the first: {} line 7)",
        file.display()
    );
    let prices_line = "sluice:   60 records, column \"price\": numeric field overflow (A field with precision 5";
    let key_line = format!("sluice:   1 record: duplicate key value violates unique constraint \"sales_pkey\" (Key (id)=(60000) already exists.) ({} line 60,001)", file.display());
    let stderr = &loaded.run.stderr;
    let at = |line: &str| stderr.find(line).unwrap_or_else(|| panic!("no {line:?} in {stderr}"));
    assert!(at(&days_line) < at(prices_line) && at(prices_line) < at(&key_line), "{stderr}");
    let kinds = loaded.report["summary"]["reject_reasons"]["kinds"].as_array().unwrap();
    let records: Vec<u64> = kinds.iter().map(|k| k["records"].as_u64().unwrap()).collect();
    assert_eq!(records, [600, 60, 1]);
    assert_eq!((kinds[1]["line"].as_u64(), kinds[1]["sqlstate"].as_str()), (Some(500), Some("22003")));
    // `sluice status --job` says the same, read from the ledger.
    let job = loaded.report["summary"]["job"].as_str().unwrap();
    let status = sluice(&["status", "--db", &db.conninfo(), "--job", job]).stdout;
    let from_ledger = |line: &str| format!("  {}", line.strip_prefix("sluice: ").unwrap());
    let at = |line: &str| status.find(&from_ledger(line)).unwrap_or_else(|| panic!("no {line:?} in {status}"));
    assert!(at(&days_line) < at(prices_line) && at(prices_line) < at(&key_line), "{status}");
    let json = sluice(&["status", "--db", &db.conninfo(), "--job", job, "--json"]).stdout;
    let json: Value = serde_json::from_str(&json).unwrap();
    let kinds = json[0]["reject_reasons"]["kinds"].as_array().unwrap();
    let records: Vec<u64> = kinds.iter().map(|k| k["records"].as_u64().unwrap()).collect();
    assert_eq!(records, [600, 60, 1], "{json}");
}

/// JSON lines whose first line is an array of numbers (a bad line) and
/// whose later line is a document cut short: each is rejected alone. The
/// first line made sluice read the input as JSON values, where the cut
/// document swallowed the lines after it and the load stopped (exit 2).
#[test]
fn a_first_line_that_is_an_array_of_numbers_is_a_bad_line_of_json_lines() {
    let db = TestDb::new();
    db.execute("CREATE TABLE docs (id int, name text)");
    let mut data = String::from("[1, 2]\n");
    for i in 2..=200 {
        match i {
            100 => data.push_str("{\"id\": 100, \"name\": \"cut\"\n"),
            _ => data.push_str(&format!("{{\"id\": {i}, \"name\": \"n{i}\"}}\n")),
        }
    }
    let file = db.file("docs.jsonl", data.as_bytes());
    let Loaded { run, rejects, .. } = load_with_rejects(&db, &file, "docs", &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let lines: Vec<u64> = rejects.iter().map(|r| r["line"].as_u64().unwrap()).collect();
    assert_eq!((lines, db.count("docs")), (vec![1, 100], 198), "{}", run.stderr);
}

/// Dense rejects (every tenth record refused by a trigger) cost a
/// small COPY or two each, and the server waits for sluice between them:
/// the report's hint for `Client:ClientRead` says so, instead of blaming
/// reading or encoding on the client.
#[test]
fn the_hint_for_waits_between_isolating_copies_tells_of_the_rejects() {
    let db = TestDb::new();
    // A trigger's refusal, which no statement finds ahead of COPY (a
    // CHECK's is: see the test after this one).
    db.execute(
        "CREATE TABLE checked (id int PRIMARY KEY, n int); \
         CREATE FUNCTION positive() RETURNS trigger LANGUAGE plpgsql AS \
         $$BEGIN IF NEW.n <= 0 THEN RAISE EXCEPTION 'n must be positive'; END IF; RETURN NEW; END$$; \
         CREATE TRIGGER positive BEFORE INSERT ON checked FOR EACH ROW EXECUTE FUNCTION positive()",
    );
    let data: String = (0..40_000).map(|i| format!("{i},{}\n", if i % 10 == 0 { -1 } else { i })).collect();
    let file = db.file("checked.csv", data.as_bytes());
    let Loaded { run, report, .. } = load_with_rejects(&db, &file, "checked", &[]);
    assert_eq!((run.code, db.count("checked")), (1, 36_000), "{}", run.stderr);
    let copies = isolation_copies(&report);
    assert!(copies >= 4_000, "{copies}");
    let waits = &report["summary"]["server_waits"];
    let client_read = waits["events"].as_array().unwrap().iter().any(|e| e["event"] == "Client:ClientRead");
    // Which wait leads depends on the samples (CPU, mostly, or the waits).
    if client_read && waits["hint"].as_str().is_some_and(|h| h.starts_with("Client:ClientRead")) {
        let told = "small COPYs that set apart the 4,000 rejected records";
        assert!(waits["hint"].as_str().unwrap().contains(told), "{waits}");
        assert!(run.stdout.contains(told), "{}", run.stdout);
    } else {
        assert!(!run.stdout.contains("small COPYs"), "{}", run.stdout);
    }
}

/// The server's reason for a record of
/// [`dense_check_violations_are_rejected_in_one_statement_with_the_servers_words`]'s
/// table, `None` when it takes it: the first constraint broken in the
/// server's order (by name, byte by byte), and the row as the server shows
/// it (`null`, `t`/`f`, values cut at 64 bytes). A CHECK whose value is
/// NULL (`n` NULL) passes.
fn check_refusal(id: u64, n: Option<i64>, s: Option<&str>, b: bool) -> Option<String> {
    let broken =
        [("Aa", n.is_some_and(|n| n >= 100) && s.is_some()), ("b_chk", id % 7 == 3), ("zz", n.is_some_and(|n| n <= 0))];
    let (name, _) = broken.iter().find(|(_, broken)| *broken)?;
    let shown = match s {
        None => "null".to_string(),
        Some(s) if s.len() > 64 => format!("{}...", s.chars().take(32).collect::<String>()),
        Some(s) => s.to_string(),
    };
    let b = if b { "t" } else { "f" };
    let n = n.map_or("null".to_string(), |n| n.to_string());
    Some(format!(
        "new row for relation \"checked\" violates check constraint \"{name}\" \
         (Failing row contains ({id}, {n}, {shown}, {b}).)"
    ))
}

/// Dense CHECK violations are found by one statement a chunk, not two
/// COPYs a reject (200,000 records with every tenth breaking one: 40,862
/// COPYs, 1.7 s), and each is rejected with the server's words: the
/// records COPY refused before the rejects came densely and those the
/// statement found alike.
#[test]
fn dense_check_violations_are_rejected_in_one_statement_with_the_servers_words() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE checked (id int PRIMARY KEY, n int, s text, b bool, CONSTRAINT zz CHECK (n > 0), \
         CONSTRAINT \"Aa\" CHECK (n < 100 OR s IS NULL), CONSTRAINT b_chk CHECK (id % 7 <> 3))",
    );
    let long = "é".repeat(40);
    let (mut data, mut expected) = (String::new(), std::collections::BTreeMap::new());
    for id in 1..=20_000u64 {
        let n: Option<i64> = match id % 10 {
            0 => Some(-(id as i64)),
            5 => Some(150),
            7 => None,
            _ => Some((id % 99) as i64 + 1),
        };
        let s = match id % 4 {
            0 => None,
            1 => Some(long.clone()),
            _ => Some(format!("s,{id}")),
        };
        let field = s.as_ref().map(|s| format!("\"{s}\"")).unwrap_or_default();
        let n_field = n.map(|n| n.to_string()).unwrap_or_default();
        data.push_str(&format!("{id},{n_field},{field},{}\n", id % 2 == 0));
        if let Some(reason) = check_refusal(id, n, s.as_deref(), id % 2 == 0) {
            expected.insert(id, reason);
        }
    }
    let file = db.file("checked.csv", data.as_bytes());
    let Loaded { run, rejects, report, .. } = load_with_rejects(&db, &file, "checked", &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_accounts(&report);
    let found: std::collections::BTreeMap<u64, String> =
        rejects.iter().map(|r| (r["line"].as_u64().unwrap(), r["reason"].as_str().unwrap().to_string())).collect();
    assert_eq!(found.len(), expected.len());
    for (line, reason) in &expected {
        assert_eq!(found.get(line), Some(reason), "line {line}");
    }
    assert_eq!(db.count("checked"), 20_000 - expected.len() as u64);
    let copies = isolation_copies(&report);
    assert!(copies < 60, "{copies} COPYs for {} rejects (15 when written)", expected.len());
}

/// Where the statement cannot judge a chunk's records (a value its domain
/// refuses fails it), COPY isolates the chunk as before, and each record
/// keeps the reason COPY gives first: the domain's, read with the value,
/// before the table's CHECK. Where the file leaves a column to its default,
/// the row is not shown (the server's default is its to compute).
#[test]
fn check_violations_keep_their_reasons_where_the_statement_cannot_judge() {
    let db = TestDb::new();
    db.execute(
        "CREATE DOMAIN small AS int CHECK (VALUE < 1000); \
         CREATE TABLE checked (id serial, d small, n int CHECK (n > 0))",
    );
    let data: String = (1..=10_000u64)
        .map(|i| format!("{},{}\n", if i % 700 == 0 { 5000 } else { i % 999 }, if i % 10 == 0 { -1 } else { 1 }))
        .collect();
    let file = db.file("checked.csv", data.as_bytes());
    let Loaded { run, rejects, report, .. } = load_with_rejects(&db, &file, "checked", &["--columns", "d,n"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_accounts(&report);
    let domain = "value for domain small violates check constraint \"small_check\"";
    let table = "new row for relation \"checked\" violates check constraint \"checked_n_check\"";
    for reject in &rejects {
        let (line, reason) = (reject["line"].as_u64().unwrap(), reject["reason"].as_str().unwrap());
        let want = if line % 700 == 0 { domain } else { table };
        assert!(reason.starts_with(want), "line {line}: {reason}");
    }
    let lines: Vec<u64> = rejects.iter().map(|r| r["line"].as_u64().unwrap()).collect();
    let expected: Vec<u64> = (1..=10_000).filter(|i| i % 10 == 0 || i % 700 == 0).collect();
    let mut sorted = lines.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, expected);
    assert_eq!(db.count("checked"), 10_000 - expected.len() as u64);
}

/// A chunk of more than 2 MiB is looked up for CHECK violations by several
/// statements, each naming records of its own part: the rejects are those
/// lines, wherever they fall.
#[test]
fn check_violations_of_a_long_chunk_are_found_part_by_part() {
    let db = TestDb::new();
    db.execute("CREATE TABLE checked (id int, n int CHECK (n > 0), note text)");
    // Chunks grow to 2 MiB and past it within 15 MB.
    let pad = "x".repeat(140);
    let data: String = (1..=100_000u64).map(|i| format!("{i},{},{pad}\n", if i % 10 == 7 { -1 } else { 1 })).collect();
    let file = db.file("checked.csv", data.as_bytes());
    let loaded = load_with_rejects(&db, &file, "checked", &["--chunk-size", "16MiB", "--workers", "2"]);
    assert_eq!(loaded.run.code, 1, "{}", loaded.run.stderr);
    let expected: Vec<u64> = (1..=100_000).filter(|i| i % 10 == 7).collect();
    let lines = loaded.sorted_lines();
    let differs = lines.iter().zip(&expected).position(|(a, b)| a != b);
    assert!(lines == expected, "{} rejects, first other than expected at {differs:?}", lines.len());
    assert_eq!(db.count("checked"), 90_000);
    let chunks = loaded.report["chunks"].as_array().unwrap();
    let long = chunks.iter().filter(|c| c["byte_len"].as_u64().unwrap() > 2 << 20).count();
    assert!(long > 0, "{chunks:?}");
    let copies: u64 = chunks.iter().map(|c| c["isolation_copies"].as_u64().unwrap()).sum();
    assert!(copies < 100, "{copies}");
}

/// Records whose key the table holds, into a table with a CHECK: the key
/// query names them held, and those whose values pass the CHECK are
/// rejected for the key (skipped with `--on-conflict-do-nothing`) without a
/// COPY each; those that break it are rejected for the CHECK, which the
/// server checks first. Each held record went to COPY alone before (4.3 s
/// against 0.5 s without the CHECK, 200,000 records a third held).
#[test]
fn held_keys_into_a_table_with_a_check_are_found_by_the_key_query() {
    let db = TestDb::new();
    // Every third record's key is held.
    let id = |i: u64| if i % 3 == 0 { i / 3 } else { 10_000 + i };
    let data: String = (1..=9_000u64).map(|i| format!("{},{}\n", id(i), if i % 5 == 0 { -1 } else { 2 })).collect();
    let file = db.file("checked.csv", data.as_bytes());
    for skipping in [false, true] {
        db.execute(
            "DROP TABLE IF EXISTS checked; CREATE TABLE checked (id int PRIMARY KEY, n int CHECK (n > 0)); \
             INSERT INTO checked SELECT g, 1 FROM generate_series(1, 3000) g",
        );
        let extra: &[&str] = if skipping { &["--on-conflict-do-nothing", "--restart"] } else { &["--restart"] };
        let Loaded { run, rejects, report, .. } = load_with_rejects(&db, &file, "checked", extra);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert_accounts(&report);
        let check = "new row for relation \"checked\" violates check constraint \"checked_n_check\"";
        let key = "duplicate key value violates unique constraint \"checked_pkey\"";
        let mut lines = Vec::new();
        for reject in &rejects {
            let (line, reason) = (reject["line"].as_u64().unwrap(), reject["reason"].as_str().unwrap());
            let want = if line % 5 == 0 { check } else { key };
            assert!(reason.starts_with(want), "line {line}: {reason}");
            lines.push(line);
        }
        lines.sort_unstable();
        let expected: Vec<u64> = (1..=9_000).filter(|i| i % 5 == 0 || (!skipping && i % 3 == 0)).collect();
        assert_eq!(lines, expected, "skipping: {skipping}");
        let skipped = if skipping { 2_400 } else { 0 };
        assert_eq!(report["summary"]["skipped"], skipped);
        assert_eq!(db.count("checked"), 3_000 + 4_800);
        let copies = isolation_copies(&report);
        assert!(copies < 200, "skipping: {skipping}: {copies} COPYs");
    }
}

/// An AFTER INSERT trigger (an audit log) runs once a row passed its CHECKs
/// and keys, so the CHECK query and the key query still judge the records:
/// held keys and broken CHECKs are found without a COPY each (with any
/// trigger, 9,000 records took some 5,000 COPYs). A BEFORE trigger may
/// change the row: there COPY judges, and the rows it mends load while
/// the others are refused.
#[test]
fn an_after_trigger_leaves_checks_and_keys_to_the_queries() {
    let db = TestDb::new();
    let id = |i: u64| if i % 3 == 0 { i / 3 } else { 10_000 + i };
    let n = |i: u64| match (i % 7, i % 5) {
        (0, _) => -2,
        (_, 0) => -1,
        _ => 2,
    };
    let data: String = (1..=9_000u64).map(|i| format!("{},{}\n", id(i), n(i))).collect();
    let file = db.file("audited.csv", data.as_bytes());
    db.execute(
        "CREATE TABLE audit_log (id int); \
         CREATE FUNCTION log_it() RETURNS trigger LANGUAGE plpgsql AS \
         $$BEGIN INSERT INTO audit_log VALUES (NEW.id); RETURN NULL; END$$; \
         CREATE FUNCTION mend() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN IF NEW.n = -1 THEN NEW.n := 1; END IF; RETURN NEW; END$$",
    );
    for mending in [false, true] {
        db.execute(
            "DROP TABLE IF EXISTS audited; TRUNCATE audit_log; \
             CREATE TABLE audited (id int PRIMARY KEY, n int CHECK (n > 0)); \
             INSERT INTO audited SELECT g, 1 FROM generate_series(1, 3000) g; \
             CREATE TRIGGER log_it AFTER INSERT ON audited FOR EACH ROW EXECUTE FUNCTION log_it()",
        );
        if mending {
            db.execute("CREATE TRIGGER mend BEFORE INSERT ON audited FOR EACH ROW EXECUTE FUNCTION mend()");
        }
        let Loaded { run, rejects, report, .. } = load_with_rejects(&db, &file, "audited", &["--restart"]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert_accounts(&report);
        let check = "new row for relation \"audited\" violates check constraint \"audited_n_check\"";
        let key = "duplicate key value violates unique constraint \"audited_pkey\"";
        let mut lines = Vec::new();
        for reject in &rejects {
            let (line, reason) = (reject["line"].as_u64().unwrap(), reject["reason"].as_str().unwrap());
            let want = if n(line) == -2 || (n(line) == -1 && !mending) { check } else { key };
            assert!(reason.starts_with(want), "mending: {mending}: line {line}: {reason}");
            lines.push(line);
        }
        lines.sort_unstable();
        let expected: Vec<u64> =
            (1..=9_000).filter(|&i| i % 3 == 0 || n(i) == -2 || (!mending && n(i) == -1)).collect();
        assert_eq!(lines, expected, "mending: {mending}");
        let loaded = 9_000 - expected.len() as u64;
        assert_eq!(db.count("audited"), 3_000 + loaded);
        assert_eq!(db.count("audit_log"), loaded, "the trigger ran once for each row loaded");
        if !mending {
            let copies = isolation_copies(&report);
            assert!(copies < 200, "{copies} COPYs");
        }
    }
}

/// A BEFORE INSERT trigger that drops some rows (returns NULL) keeps the
/// key query from judging: a record whose key the table holds is not
/// refused where the trigger drops it, and COPY finds the others.
#[test]
fn a_before_trigger_keeps_the_key_query_from_judging() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE dropped (id int PRIMARY KEY, n int); \
         INSERT INTO dropped SELECT g, 1 FROM generate_series(1, 2000) g; \
         CREATE FUNCTION drop_zero() RETURNS trigger LANGUAGE plpgsql AS \
         $$BEGIN IF NEW.n = 0 THEN RETURN NULL; END IF; RETURN NEW; END$$; \
         CREATE TRIGGER drop_zero BEFORE INSERT ON dropped FOR EACH ROW EXECUTE FUNCTION drop_zero()",
    );
    // Every third record's key is held; every sixth is dropped.
    let id = |i: u64| if i % 3 == 0 { i / 3 } else { 10_000 + i };
    let data: String = (1..=6_000u64).map(|i| format!("{},{}\n", id(i), u64::from(i % 6 != 0))).collect();
    let file = db.file("dropped.csv", data.as_bytes());
    let Loaded { run, rejects, report, .. } = load_with_rejects(&db, &file, "dropped", &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_accounts(&report);
    let mut lines: Vec<u64> = rejects.iter().map(|r| r["line"].as_u64().unwrap()).collect();
    lines.sort_unstable();
    let expected: Vec<u64> = (1..=6_000).filter(|i| i % 3 == 0 && i % 6 != 0).collect();
    let wrong = lines.iter().zip(&expected).find(|(got, want)| got != want);
    assert!(lines == expected, "{} rejects, {} expected; the first wrong: {wrong:?}", lines.len(), expected.len());
    assert_eq!(report["summary"]["suppressed"], 1_000, "{}", report["summary"]);
    assert_eq!(db.count("dropped"), 2_000 + 4_000);
}

/// Loads `file` (with `args`) into `looked_up.t` and `copied.t`, each made
/// by `ddl` (`{s}` for its schema) with `{s}.dim` holding ids 1 to 100, the
/// second with a BEFORE trigger doing nothing, which leaves every record to
/// COPY; asserts each reject's reason is the same in both, and returns
/// them by line.
fn reasons_as_copy_gives_them(db: &TestDb, ddl: &str, file: &Path, args: &[&str]) -> Vec<(u64, String)> {
    db.execute(
        "CREATE FUNCTION keep() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$; \
         CREATE SCHEMA looked_up; CREATE SCHEMA copied",
    );
    let mut reasons = Vec::new();
    for schema in ["looked_up", "copied"] {
        db.execute(&format!(
            "CREATE TABLE {schema}.dim (id int PRIMARY KEY); INSERT INTO {schema}.dim SELECT generate_series(1, 100); {}",
            ddl.replace("{s}", schema)
        ));
        if schema == "copied" {
            db.execute("CREATE TRIGGER keep BEFORE INSERT ON copied.t FOR EACH ROW EXECUTE FUNCTION keep()");
        }
        let Loaded { run, rejects, report, .. } = load_with_rejects(db, file, &format!("{schema}.t"), args);
        assert_eq!(run.code, 1, "{}", run.output());
        assert_accounts(&report);
        let mut by_line: Vec<(u64, String)> =
            rejects.iter().map(|r| (r["line"].as_u64().unwrap(), r["reason"].as_str().unwrap().to_string())).collect();
        by_line.sort();
        reasons.push(by_line);
    }
    assert_eq!(reasons[0].len(), reasons[1].len());
    for ((line, looked_up), (_, copied)) in reasons[0].iter().zip(&reasons[1]) {
        assert_eq!(looked_up, copied, "line {line}");
    }
    reasons.swap_remove(0)
}

/// Records whose key the table holds, where the key check cannot tell
/// the reason (a CHECK reads a column the file leaves to its default), go
/// to COPY alone, and a chunk's look-up of the foreign key's missing keys
/// leaves them to it: the server refuses such a record for its key first,
/// at its insert (a foreign key is checked at the statement's end). Each
/// reject reads as in a load that leaves every record to COPY; before, 30
/// of these 6,000 were rejected for the foreign key.
#[test]
fn held_keys_keep_their_reason_before_a_missing_foreign_key() {
    let db = TestDb::new();
    // Every third record's key is held; every 50th refers to a missing row.
    let data: String = (1..=6_000u64)
        .map(|i| {
            format!(
                "{},2,{}\n",
                if i % 3 == 0 { i / 3 } else { 10_000 + i },
                if i % 50 == 11 { 5_000 + i } else { i % 100 + 1 }
            )
        })
        .collect();
    let file = db.file("t.csv", data.as_bytes());
    let ddl = "CREATE TABLE {s}.t (id int PRIMARY KEY, n int, d int REFERENCES {s}.dim, \
               z int DEFAULT 0 CHECK (z >= 0)); INSERT INTO {s}.t SELECT g, 1, 1 FROM generate_series(1, 2000) g";
    let args = ["--columns", "id,n,d", "--workers", "1", "--chunk-size", "16KiB"];
    let reasons = reasons_as_copy_gives_them(&db, ddl, &file, &args);
    let held_and_missing = reasons.iter().filter(|(line, _)| line % 3 == 0 && line % 50 == 11);
    assert!(held_and_missing.clone().count() > 30);
    for (line, reason) in held_and_missing {
        assert!(reason.starts_with("duplicate key value"), "line {line}: {reason}");
    }
}

/// A record that breaks a CHECK and refers to a missing row is refused for
/// the CHECK (at its insert), also where a chunk looks up the foreign key's
/// missing keys before its first COPY: the CHECK query is asked about the
/// records it finds. Before, 13 of these 6,000 were rejected for the
/// foreign key.
#[test]
fn checks_keep_their_reason_before_a_missing_foreign_key() {
    let db = TestDb::new();
    // Every seventh record breaks the CHECK; every 50th refers to a missing row.
    let data: String = (1..=6_000u64)
        .map(|i| {
            format!("{i},{},{}\n", if i % 7 == 0 { -1 } else { 2 }, if i % 50 == 7 { 5_000 + i } else { i % 100 + 1 })
        })
        .collect();
    let file = db.file("t.csv", data.as_bytes());
    let ddl = "CREATE TABLE {s}.t (id int PRIMARY KEY, n int CHECK (n > 0), d int REFERENCES {s}.dim)";
    let reasons = reasons_as_copy_gives_them(&db, ddl, &file, &["--workers", "1", "--chunk-size", "16KiB"]);
    let both = reasons.iter().filter(|(line, _)| line % 7 == 0 && line % 50 == 7);
    assert!(both.clone().count() > 10);
    for (line, reason) in both {
        assert!(reason.starts_with("new row for relation \"t\" violates check constraint"), "line {line}: {reason}");
    }
}

/// On a server writing its messages in German (`lc_messages`), the CHECK,
/// NOT NULL, key and foreign key lookups word their rejects as COPY does:
/// each reject reads as in the same load into a table whose BEFORE trigger
/// (doing nothing) leaves every record to COPY, and the lookups still spare
/// the COPYs (before, such a server had no lookup for CHECKs, and the key
/// lookup wrote English, and a missing foreign key's detail was left out).
#[test]
fn rejects_are_worded_in_the_servers_language() {
    use sluice::local_pg::{LocalOptions, LocalPostgres};
    // A German locale of our own: the machine may have none.
    let locales = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("localedef")
        .args(["-i", "de_DE", "-f", "UTF-8"])
        .arg(locales.path().join("de_DE.UTF-8"))
        .status()
        .expect("localedef (Debian package libc-bin; its locale sources are in package locales)");
    assert!(made.success(), "localedef -i de_DE -f UTF-8 failed: is Debian's package locales installed?");
    // Readable by the server's user (not root's, when the tests run as root).
    let readable = std::process::Command::new("chmod").arg("-R").arg("a+rX").arg(locales.path()).status().unwrap();
    assert!(readable.success());
    let settings = vec![("lc_messages".to_string(), "de_DE.UTF-8".to_string()), ("fsync".into(), "off".into())];
    let environment = vec![("LOCPATH".to_string(), locales.path().display().to_string())];
    let server = LocalPostgres::start(&LocalOptions { settings, environment, ..LocalOptions::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Every third record's key is held, every tenth breaks a CHECK and
    // every tenth (another) has no n; from line 3,000 on, every 25th
    // breaks the other CHECK, which COPY has not met when the lookup first
    // runs (it runs again once COPY has worded it).
    let id = |i: u64| if i % 3 == 0 { i / 3 } else { 10_000 + i };
    let n = |i: u64| match i % 10 {
        _ if i > 3_000 && i % 25 == 7 => "5000",
        0 => "-1",
        5 => "",
        _ => "2",
    };
    // Every 50th refers to a row `dim` does not hold.
    let d = |i: u64| if i % 50 == 11 { 5_000 + i } else { i % 100 + 1 };
    let data: String = (1..=6_000u64).map(|i| format!("{},{},{}\n", id(i), n(i), d(i))).collect();
    let file = dir.path().join("t.csv");
    std::fs::write(&file, data).unwrap();
    let mut worded = Vec::new();
    // In one chunk, and in chunks of 16 KiB: a chunk after the first looks
    // up another's refusals, with words COPY gave the other.
    for (database, chunk_size) in [("copied", "1MiB"), ("looked_up", "1MiB"), ("in_chunks", "16KiB")] {
        let admin = sluice::sink::postgres::PgTarget::new(Some(&server.conninfo("postgres"))).connect().unwrap();
        admin.execute(&format!("CREATE DATABASE {database}")).unwrap();
        let conninfo = server.conninfo(database);
        let session = sluice::sink::postgres::PgTarget::new(Some(&conninfo)).connect().unwrap();
        session
            .execute(
                "CREATE TABLE dim (id int PRIMARY KEY); INSERT INTO dim SELECT generate_series(1, 100); \
                 CREATE TABLE t (id int PRIMARY KEY, n int NOT NULL CHECK (n > 0) CHECK (n < 1000), \
                 d int REFERENCES dim); \
                 INSERT INTO t SELECT g, 1, 1 FROM generate_series(1, 2000) g",
            )
            .unwrap();
        if database == "copied" {
            session
                .execute(
                    "CREATE FUNCTION keep() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$; \
                     CREATE TRIGGER keep BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION keep()",
                )
                .unwrap();
        }
        let (rejects, report) =
            (dir.path().join(format!("{database}.jsonl")), dir.path().join(format!("{database}.json")));
        let run = crate::util::run_command({
            let mut cmd = crate::util::sluice_command();
            cmd.args(["load", file.to_str().unwrap(), "--db", &conninfo, "--table", "t"]);
            cmd.arg("--rejects").arg(&rejects).arg("--report").arg(&report);
            cmd.args(["--workers", "1", "--chunk-size", chunk_size]);
            cmd
        });
        assert_eq!(run.code, 1, "{}", run.output());
        let report = self::report(&report);
        assert_accounts(&report);
        let copies = isolation_copies(&report);
        if database == "looked_up" {
            assert!(copies < 100, "{copies} COPYs");
        }
        let mut reasons: Vec<(u64, String)> = read_rejects(&rejects)
            .iter()
            .map(|r| (r["line"].as_u64().unwrap(), r["reason"].as_str().unwrap().to_string()))
            .collect();
        reasons.sort();
        worded.push(reasons);
    }
    let expected: Vec<u64> = (1..=6_000).filter(|&i| i % 3 == 0 || n(i) != "2" || d(i) > 100).collect();
    let (copied, looked_up) = worded.split_first().unwrap();
    for reasons in looked_up {
        assert_eq!(reasons.iter().map(|(line, _)| *line).collect::<Vec<_>>(), expected);
        for ((line, looked_up), (_, copied)) in reasons.iter().zip(copied) {
            assert_eq!(looked_up, copied, "line {line}");
        }
        let german = |words: &str| reasons.iter().filter(|(_, reason)| reason.contains(words)).count();
        assert!(german("verletzt Check-Constraint") > 100, "{:?}", &reasons[..3]);
        assert!(german("Schlüssel »(id)=(") > 100, "{:?}", &reasons[..3]);
        assert!(german("(Schlüssel (d)=(") > 50, "{:?}", &reasons[..3]);
    }
    server.stop();
}

/// Records with a NULL in a NOT NULL column, and nothing else the client
/// finds wrong, are rejected by the CHECK query with the server's words (the
/// first such column in the table's order, before any CHECK), not copied
/// alone each (200,000 records with every tenth missing one: 20,002 COPYs).
/// A record whose other value is bad keeps that value's reason.
#[test]
fn nulls_where_none_go_are_rejected_by_one_query_with_the_servers_words() {
    let db = TestDb::new();
    db.execute("CREATE TABLE filled (id int PRIMARY KEY, n int NOT NULL, s text NOT NULL, b int CHECK (b > 0))");
    let of = match db.scalar("SHOW server_version_num").parse::<u32>().unwrap() >= 130_000 {
        true => " of relation \"filled\"",
        false => "",
    };
    let (mut data, mut expected) = (String::new(), Vec::new());
    for id in 1..=20_000u64 {
        let (n, s, b) = match id % 10 {
            0 => ("", "x", "1"),
            3 => ("5", "", "-1"),
            6 => ("", "", "-1"),
            9 if id % 1_000 == 999 => ("", "x", "oops"),
            _ => ("5", "x", "1"),
        };
        data.push_str(&format!("{id},{n},{s},{b}\n"));
        let shown = |v: &str| if v.is_empty() { "null".to_string() } else { v.to_string() };
        let row = format!("(Failing row contains ({id}, {}, {}, {}).)", shown(n), shown(s), shown(b));
        let reason = match (n, s, b) {
            (_, _, "oops") => "invalid input syntax for type integer: \"oops\"".to_string(),
            ("", _, _) => format!("null value in column \"n\"{of} violates not-null constraint {row}"),
            (_, "", _) => format!("null value in column \"s\"{of} violates not-null constraint {row}"),
            _ => continue,
        };
        expected.push((id, reason));
    }
    let file = db.file("filled.csv", data.as_bytes());
    let Loaded { run, rejects, report, .. } = load_with_rejects(&db, &file, "filled", &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_accounts(&report);
    let mut found: Vec<(u64, String)> =
        rejects.iter().map(|r| (r["line"].as_u64().unwrap(), r["reason"].as_str().unwrap().to_string())).collect();
    found.sort();
    assert_eq!(found.len(), expected.len());
    for (found, expected) in found.iter().zip(&expected) {
        assert!(found.0 == expected.0 && found.1.starts_with(&expected.1), "{found:?} against {expected:?}");
    }
    assert_eq!(db.count("filled"), 20_000 - expected.len() as u64);
    let copies = isolation_copies(&report);
    assert!(copies < 100, "{copies} COPYs for {} rejects", expected.len());
}

/// A value longer than its `varchar(n)` column allows keeps COPY's reason
/// among dense CHECK violations: a cast would cut it to one that breaks the
/// CHECK. The client suspects it and copies it alone; the statement also
/// leaves such values to COPY.
#[test]
fn values_too_long_for_their_column_keep_copys_reason_among_dense_check_violations() {
    let db = TestDb::new();
    db.execute("CREATE TABLE checked (id int, code varchar(5) CHECK (code <> 'abcde'))");
    let code = |i: u64| match (i % 10, i % 300) {
        (_, 0) => "abcdefgh",
        (0, _) => "abcde",
        _ => "ok",
    };
    let data: String = (1..=6_000u64).map(|i| format!("{i},{}\n", code(i))).collect();
    let file = db.file("checked.csv", data.as_bytes());
    let Loaded { run, rejects, report, .. } = load_with_rejects(&db, &file, "checked", &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_accounts(&report);
    assert_eq!((rejects.len(), db.count("checked")), (600, 5_400));
    for reject in &rejects {
        let (line, reason) = (reject["line"].as_u64().unwrap(), reject["reason"].as_str().unwrap());
        let want = match line % 300 {
            0 => "value too long for type character varying(5)",
            _ => "new row for relation \"checked\" violates check constraint \"checked_code_check\"",
        };
        assert!(reason.starts_with(want), "line {line}: {reason}");
    }
    let copies = isolation_copies(&report);
    assert!(copies < 200, "the others found by the statement: {copies}");
}

/// A CHECK that calls a volatile function is left to COPY: the statement
/// would call it for each record, and COPY again for those it loads (a
/// function that counts or logs its calls, or answers at random).
#[test]
fn a_check_calling_a_volatile_function_is_left_to_copy() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE calls (n int); \
         CREATE FUNCTION counted(n int) RETURNS boolean VOLATILE LANGUAGE plpgsql AS \
         $$BEGIN INSERT INTO calls VALUES (n); RETURN n > 0; END$$; \
         CREATE TABLE checked (id int, n int CHECK (counted(n)))",
    );
    let data: String = (1..=4_000).map(|i| format!("{i},{}\n", if i % 10 == 0 { -1 } else { i })).collect();
    let file = db.file("checked.csv", data.as_bytes());
    let Loaded { run, rejects, report, .. } = load_with_rejects(&db, &file, "checked", &[]);
    assert_eq!((run.code, rejects.len(), db.count("checked")), (1, 400, 3_600), "{}", run.stderr);
    let copies = isolation_copies(&report);
    assert!(copies >= 400, "one COPY or more a reject: {copies}");
}

/// `--max-errors` stops the load while chunks are still setting their
/// rejects apart, once those and the rejects committed pass it: every
/// chunk in flight used to isolate to its end and commit, so a limit of
/// 100 on a file whose every tenth record breaks a CHECK loaded the whole
/// file and rejected 4,000. The same command without it then resumes.
#[test]
fn max_errors_stops_chunks_isolating_dense_rejects_before_they_commit() {
    let db = TestDb::new();
    db.execute("CREATE TABLE checked (id int PRIMARY KEY, n int CHECK (n > 0))");
    let data: String = (0..40_000).map(|i| format!("{i},{}\n", if i % 10 == 0 { -1 } else { i })).collect();
    let file = db.file("checked.csv", data.as_bytes());
    let Loaded { run, rejects, .. } = load_with_rejects(&db, &file, "checked", &["--max-errors", "100"]);
    assert_eq!(run.code, 5, "{}", run.stderr);
    let said = run.stderr.split("stopped: ").nth(1).and_then(|s| s.split(' ').next()).unwrap_or_default();
    let said: u64 = said.replace(',', "").parse().unwrap_or_else(|_| panic!("{}", run.stderr));
    assert!(said > 100 && said < 1_000, "{}", run.stderr);
    assert!(run.stderr.contains("more than --max-errors 100 allows"), "{}", run.stderr);
    assert!(rejects.len() < 1_000 && db.count("checked") < 10_000, "{} rejects: {}", rejects.len(), run.stderr);
    let Loaded { run, rejects, .. } = load_with_rejects(&db, &file, "checked", &[]);
    assert_eq!((run.code, rejects.len(), db.count("checked")), (1, 4_000, 36_000), "{}", run.stderr);
}
