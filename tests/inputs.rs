//! Inputs: several files, globs, headers, stdin, gzip, zstd; and identical
//! tables whatever the worker count and chunk size.

use std::io::{Read, Write};

use base64::Engine;
use sluice::encoding::{has_unreadable, InputEncoding, TranscodingReader};

use crate::util::{bzip2_small_blocks, gzip, run_command, server, sluice, sluice_command, sluice_with_stdin, TestDb};

fn rows(from: usize, to: usize) -> String {
    (from..to).map(|i| format!("{i},\"name {i}\nsecond line\",{}\n", i % 10)).collect()
}

/// A header is skipped once per file, not once per chunk (a peer lost one row
/// per batch that way); files are found by a glob that sluice expands.
/// The test server's role is named like the ledger's schema, which then
/// comes first on its search path: once a load has created that schema, an
/// unqualified CREATE TABLE puts tables there. Such a load says so.
#[test]
fn a_table_in_the_ledger_schema_loads_with_a_warning() {
    let db = TestDb::new();
    let file = db.file("a.csv", b"1\n");
    let file = file.to_str().unwrap();
    db.execute("CREATE TABLE first (a int)");
    let run = db.load(&[file, "--table", "first"]);
    run.assert_ok();
    assert!(!run.output().contains("schema of sluice's ledger"), "{}", run.output());
    db.execute("CREATE TABLE second (a int)");
    let schema = "SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = 'second'::regclass";
    assert_eq!(db.scalar(schema), "sluice", "where CREATE TABLE put it");
    let run = db.load(&[file, "--table", "second"]);
    run.assert_ok();
    let said = "sluice.second is in the schema of sluice's ledger; for a role named sluice";
    assert!(run.output().contains(said) && run.output().contains("(--table public.second)"), "{}", run.output());
    assert_eq!(db.count("sluice.second"), 1);
}

/// Each file's header is skipped; hidden files the glob matches (a Mac's
/// `._` copy beside each file) are left out, as a shell's glob leaves them
/// out, and named.
#[test]
fn header_skipped_once_per_file_across_a_glob() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id text, name text, k text)");
    for part in 0..3 {
        let body = format!("id,name,k\n{}", rows(part * 500, part * 500 + 500));
        db.file(&format!("parts/part-{part}.csv"), body.as_bytes());
    }
    db.file("parts/other.txt", b"not matched\n");
    db.file("parts/._part-0.csv", b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X");
    let glob = db.dir.path().join("parts/part-*.csv");
    let run = db.load(&[glob.to_str().unwrap(), "--table", "t", "--header", "--chunk-size", "1KiB", "--workers", "3"]);
    run.assert_ok();
    assert!(!run.stderr.contains("hidden"), "{}", run.stderr);
    db.execute("TRUNCATE t");
    let glob = db.dir.path().join("parts/*part-*.csv");
    let run = db.load(&[glob.to_str().unwrap(), "--table", "t", "--header", "--job", "all"]);
    run.assert_ok();
    let said = "left out 1 hidden file the glob matches, as a shell's glob does (a name in each one's path begins \
                with a dot): ";
    assert!(run.stderr.contains(said) && run.stderr.contains("parts/._part-0.csv; name them"), "{}", run.stderr);
    assert_eq!(db.count("t"), 1500);
    assert_eq!(db.scalar("SELECT count(*) FROM t WHERE id = 'id'"), "0", "no header row was loaded");
    assert_eq!(db.scalar("SELECT count(DISTINCT id) FROM t"), "1500");
}

/// An export's title and notes above its header, skipped by `--skip-lines`
/// in each file of a glob (plain, gzip, CRLF) and in a pipe, as lines: the
/// title's quote opens nothing. The header under them loads its columns by
/// name; a reject keeps its line in the file; the report counts the lines
/// skipped; a later glob of the same files finds them loaded. Without the
/// flag, the summary names it, with the number of lines.
#[test]
fn lines_above_the_header_are_skipped_with_skip_lines() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text, k text)");
    let title = "Export \"sales, 2026-11\nrows as of 2026-11-30\n";
    let file = |part: usize| -> String {
        let rows = (0..400).map(|i| part * 1000 + i);
        let rows = rows.map(|n| if n == 1100 { "n1100,x,k1\n".to_string() } else { format!("n{n},{n},k{}\n", n % 7) });
        format!("{title}name,id,k\n{}", rows.collect::<String>())
    };
    db.file("parts/p-0.csv", file(0).as_bytes());
    db.file("parts/p-1.csv.gz", &gzip(file(1).as_bytes()));
    db.file("parts/p-2.csv", file(2).replace('\n', "\r\n").as_bytes());
    let glob = db.dir.path().join("parts/p-*");
    let report = db.dir.path().join("report.json");
    let args = ["--table", "t", "--header", "--skip-lines", "2", "--chunk-size", "1KiB", "--workers", "3"];
    let run = db.load(&[&[glob.to_str().unwrap()], &args[..], &["--report", report.to_str().unwrap()]].concat());
    assert_eq!(run.code, 1, "one reject: {}", run.output());
    assert!(!run.stderr.contains("ended within"), "{}", run.stderr);
    let want: u64 = (0..3).flat_map(|part| (0..400).map(move |i| part * 1000 + i)).filter(|&n| n != 1100).sum();
    assert_eq!(db.scalar("SELECT count(*) || ' ' || sum(id) FROM t"), format!("1199 {want}"));
    assert_eq!(db.scalar("SELECT count(*) FROM t WHERE name <> 'n' || id OR k <> 'k' || id % 7"), "0");
    let rejected = crate::util::rejected_lines(&db.dir.path().join("t.rejects.jsonl"));
    assert_eq!(rejected.into_iter().collect::<Vec<_>>(), [("p-1.csv.gz".to_string(), 104)], "line 4 + 100");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(report["summary"]["skipped_lines"], 6, "{}", report["summary"]);
    crate::util::assert_accounts(&report);

    let again = db.load(&[&[glob.to_str().unwrap()], &args[..5], &["--chunk-size", "4KiB"]].concat());
    assert_eq!(again.code, 0, "{}", again.output());
    assert!(
        again.stderr.contains("nothing to do: left out") && again.stderr.contains("loaded them into public.t in full"),
        "{}",
        again.stderr
    );
    // Found by its bytes under another name: a file the jobs' first chunks
    // begin past the lines skipped in.
    let renamed = db.dir.path().join("renamed.csv");
    std::fs::copy(db.dir.path().join("parts/p-0.csv"), &renamed).unwrap();
    let again = db.load(&[&[renamed.to_str().unwrap()], &args[..5]].concat());
    assert_eq!(again.code, 0, "{}", again.output());
    assert!(again.stderr.contains("nothing to do: left out"), "{}", again.stderr);
    // A command without the flags finds them too, by name and under another
    // name: the ledger keeps the lines each job skipped (it loaded them
    // again, the title lines and headers rejected, when it looked only as
    // far as this command's own --skip-lines).
    for input in [glob.to_str().unwrap(), renamed.to_str().unwrap()] {
        let again = db.load(&[input, "--table", "t", "--format", "csv"]);
        assert_eq!(again.code, 0, "{}", again.output());
        assert!(again.stderr.contains("nothing to do: left out"), "{}", again.stderr);
    }
    assert_eq!(db.count("t"), 1199);

    db.execute("CREATE TABLE public.piped (LIKE t)");
    let conninfo = db.conninfo();
    let piped =
        ["load", "-", "--db", &conninfo, "--table", "public.piped", "--format", "csv", "--header", "--skip-lines", "2"];
    sluice_with_stdin(&piped, &gzip(file(0).as_bytes())).assert_ok();
    assert_eq!(
        db.scalar("SELECT count(*) || ' ' || sum(id) FROM public.piped"),
        format!("400 {}", (0..400).sum::<u64>())
    );

    db.execute("CREATE TABLE public.unskipped (LIKE t)");
    let first = db.dir.path().join("parts/p-0.csv");
    let run = db.load(&[first.to_str().unwrap(), "--table", "public.unskipped", "--header"]);
    run.assert_refused("holds a quote inside a value written without quotes");
    assert!(run.stderr.contains("If the line is a title above the data, --skip-lines N skips"), "{}", run.stderr);
    let no_quote = db.file("parts/no-quote.csv", file(0).replacen('"', "", 1).as_bytes());
    for (input, flags, says) in [
        (
            &no_quote,
            &["--header"][..],
            "line 3 of {f} names columns of the table and was rejected, as line 2 above it was",
        ),
        (&first, &[], "line 3 of {f} names columns of the table and was rejected, as lines 1 and 2 above it were"),
    ] {
        let first = input;
        db.execute("TRUNCATE public.unskipped");
        let run = db.load(&[&[first.to_str().unwrap(), "--table", "public.unskipped", "--restart"], flags].concat());
        assert_eq!(run.code, 1, "{}", run.output());
        assert!(run.stderr.contains(&says.replace("{f}", first.to_str().unwrap())), "{}", run.stderr);
        assert!(run.stderr.contains("--skip-lines 2 skips the lines above it"), "{}", run.stderr);
    }

    let jsonl = db.file("t.jsonl", b"{\"id\": 1}\n");
    let run = db.load(&[jsonl.to_str().unwrap(), "--table", "t", "--skip-lines", "1"]);
    assert_eq!(run.code, 2, "{}", run.output());
    assert!(run.stderr.contains("--skip-lines applies to csv and tsv"), "{}", run.stderr);
    // A titled export cut in parts: the title is the first part's alone, as
    // the header is, but for a part that repeats the header (as some
    // splitters write it).
    let titled = file(5);
    let lines: Vec<&str> = titled.split_inclusive('\n').collect();
    for (part, range) in [(0, 0..103), (1, 103..253), (2, 253..lines.len())] {
        let header = if part == 2 { lines[2] } else { "" };
        db.file(&format!("split/x-{part}.csv"), [header, &lines[range].concat()].concat().as_bytes());
    }
    db.execute("CREATE TABLE public.split (LIKE t)");
    let split = db.dir.path().join("split/x-*.csv");
    let parts = [split.to_str().unwrap(), "--table", "public.split", "--header=first-file", "--skip-lines", "2"];
    let run = db.load(&[&parts[..], &["--chunk-size", "1KiB"]].concat());
    assert_eq!(run.code, 0, "{}", run.output());
    let ids: u64 = (0..400).map(|i| 5000 + i).sum();
    assert_eq!(db.scalar("SELECT count(*) || ' ' || sum(id) FROM public.split"), format!("400 {ids}"));
    assert!(run.stderr.contains("x-1.csv as a record"), "{}", run.stderr);
    assert!(!run.stderr.contains("ended within"), "{}", run.stderr);
    // A file that ends within the lines skipped is said to.
    db.file("short/a.csv", file(7).as_bytes());
    db.file("short/b.csv", b"Export of nothing\n");
    db.execute("CREATE TABLE public.short (LIKE t)");
    let short = db.dir.path().join("short/*.csv");
    let run = db.load(&[short.to_str().unwrap(), "--table", "public.short", "--skip-lines", "2", "--header"]);
    assert_eq!(run.code, 0, "{}", run.output());
    assert_eq!(db.count("public.short"), 400);
    assert!(
        run.stderr.contains("b.csv ended within the 2 lines --skip-lines skips: nothing of it loaded"),
        "{}",
        run.stderr
    );

    // A file with fewer lines above its header: its first record is taken
    // for one, and refused as not the first file's.
    db.file("fewer/a.csv", file(5).as_bytes());
    db.file("fewer/b.csv", file(6).split_once('\n').unwrap().1.as_bytes());
    let fewer = db.dir.path().join("fewer/*.csv");
    let run = db.load(&[&[fewer.to_str().unwrap()], &args[..5]].concat());
    run.assert_refused(
        "b.csv: its line 3 (n6000,6000,k1), the first after the 2 lines --skip-lines skips, which \
                        --header skips as a header, is not the header of",
    );
    assert_eq!(db.count("t"), 1199);
}

/// `--limit`: a trial load of the first records, cut at a record's end
/// (values here hold line breaks), across the files of a glob in order; a
/// later load of the same files goes on from where it stopped, with or
/// without a limit, and each record loads once.
#[test]
fn a_limited_load_stops_at_a_record_and_the_next_goes_on_from_there() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int PRIMARY KEY, name text, k int)");
    let file = |part: usize| -> String {
        let record = |i: usize| match i % 3 {
            0 => format!("{i},\"name {i}\nsecond line\",{}\n", i % 10),
            _ => format!("{i},n{i},{}\n", i % 10),
        };
        format!("id,name,k\n{}", (part * 1000 + 1..=part * 1000 + 400).map(record).collect::<String>())
    };
    for part in 0..3 {
        db.file(&format!("parts/p-{part}.csv"), file(part).as_bytes());
    }
    let glob = db.dir.path().join("parts/p-*.csv");
    let args = [glob.to_str().unwrap(), "--table", "t", "--header", "--chunk-size", "1KiB", "--workers", "3"];
    let loaded = |db: &TestDb| db.scalar("SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || max(id) FROM t");

    let run = db.load(&[&args[..], &["--limit", "123"]].concat());
    assert_eq!(run.code, 0, "{}", run.output());
    assert_eq!(loaded(&db), "123 123 123");
    let at = 1 + 123 + 123 / 3 + 1;
    assert!(
        run.stderr.contains(&format!(
            "stopped after 123 records, as --limit asks: at {} line {at}, and 2 inputs after it not read",
            db.dir.path().join("parts/p-0.csv").display()
        )),
        "{}",
        run.stderr
    );
    // `sluice status` tells the share read from the whole input.
    let status = crate::util::sluice(&["status", "--db", &db.conninfo()]);
    assert_eq!(status.code, 0, "{}", status.output());
    let read = db.scalar("SELECT sum(byte_len) FROM sluice.chunks").parse::<u64>().unwrap();
    let input: u64 = (0..3).map(|part| file(part).len() as u64).sum();
    let shown = format!("{} of {}", sluice::report::human_bytes(read), sluice::report::human_bytes(input));
    assert!(status.stdout.contains(&shown), "{shown}: {}", status.stdout);
    assert!(status.stdout.contains("  read no more than 123 records (--limit)"), "{}", status.stdout);

    let run = db.load(&[&args[..], &["--limit", "500"]].concat());
    assert_eq!(run.code, 0, "{}", run.output());
    assert!(run.stderr.contains(&format!("from line {at}")), "{}", run.stderr);
    assert_eq!(loaded(&db), "623 623 1223", "the rest of the first file, and 223 of the second");

    let run = db.load(&args);
    assert_eq!(run.code, 0, "{}", run.output());
    assert!(!run.stderr.contains("--limit asks"), "{}", run.stderr);
    assert_eq!(loaded(&db), "1200 1200 2400");

    // A limited job cut short, its file touched since: the chunks it
    // committed are found again as the limit cuts them, and it resumes.
    let db2 = TestDb::new();
    db2.execute("CREATE TABLE t (id int PRIMARY KEY, name text, k int)");
    let one = db2.file("one.csv", file(1).as_bytes());
    let args =
        [one.to_str().unwrap(), "--table", "t", "--header", "--chunk-size", "1KiB", "--workers", "1", "--limit", "300"];
    db2.load(&args).assert_ok();
    let rows_to = |seq: u64| format!("1000 + (SELECT sum(rows_loaded) FROM sluice.chunks WHERE seq <= {seq})");
    db2.execute(&format!("DELETE FROM t WHERE id > {} AND id <= {}", rows_to(0), rows_to(1)));
    db2.execute("UPDATE sluice.chunks SET state = 'pending' WHERE seq = 1; UPDATE sluice.jobs SET finished_at = NULL");
    let mut touch = std::process::Command::new("touch");
    touch.args(["-d", "2001-02-03 04:05:06", one.to_str().unwrap()]);
    assert_eq!(run_command(touch).code, 0);
    let resumed = db2.load(&args);
    assert_eq!(resumed.code, 0, "{}", resumed.output());
    assert!(resumed.stderr.contains("found again, byte for byte"), "{}", resumed.stderr);
    assert_eq!(loaded(&db2), "300 300 1300");

    // Stdin stops being read at the limit.
    db.execute("CREATE TABLE public.piped (LIKE t)");
    let conninfo = db.conninfo();
    let piped =
        ["load", "-", "--db", &conninfo, "--table", "public.piped", "--format", "csv", "--header", "--limit", "7"];
    let big: String = file(0).repeat(200);
    crate::util::sluice_with_stdin(&piped, big.as_bytes()).assert_ok();
    assert_eq!(db.scalar("SELECT string_agg(id::text, ',' ORDER BY id) FROM public.piped"), "1,2,3,4,5,6,7");
}

/// `count` files `many/part-NNNN.tsv` of one record each, and the glob that
/// finds them.
fn one_record_files(db: &TestDb, count: usize, record: impl Fn(usize) -> String) -> std::path::PathBuf {
    for part in 0..count {
        db.file(&format!("many/part-{part:04}.tsv"), record(part).as_bytes());
    }
    db.dir.path().join("many/part-*.tsv")
}

/// A chunk's ledger row is written once, when it is done: a glob of small
/// files has a row per file, and inserting each `pending`, locking it and
/// updating it cost the server two and a half times as much.
#[test]
fn ledger_rows_of_small_files_are_written_once() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int)");
    let glob = one_record_files(&db, 300, |part| format!("{part}\n"));
    db.load(&[glob.to_str().unwrap(), "--table", "t"]).assert_ok();
    assert_eq!(db.count("t"), 300);
    // The loading sessions' counts reach the statistics as they end.
    let counts = "SELECT n_tup_ins || ' ' || n_tup_upd FROM pg_stat_user_tables \
                  WHERE relid = 'sluice.chunks'::regclass";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut seen = db.scalar(counts);
    while !seen.starts_with("300 ") && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
        seen = db.scalar(counts);
    }
    assert_eq!(seen, "300 0", "ledger rows inserted, then updated");
    let done =
        "SELECT count(*) FROM sluice.chunks WHERE state = 'done' AND rows_loaded = 1 AND committed_at IS NOT NULL";
    assert_eq!(db.scalar(done), "300");
}

/// A job is named by its inputs' resolved paths: the same glob written
/// relative to the working directory, through a link, or in full names one
/// job, which the second run finds loaded.
#[test]
fn a_glob_written_three_ways_is_one_job() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, note text)");
    for part in 0..3 {
        db.file(&format!("parts/p-{part}.csv"), format!("{part},a\n").as_bytes());
    }
    std::os::unix::fs::symlink(db.dir.path().join("parts"), db.dir.path().join("link")).unwrap();
    let conninfo = db.conninfo();
    let mut relative = sluice_command();
    relative.current_dir(db.dir.path()).args(["load", "--db", &conninfo, "parts/p-*.csv", "--table", "t"]);
    let first = run_command(relative);
    first.assert_ok();
    assert!(first.output().contains(" 3 chunks in 1 batch, "), "{}", first.output());
    assert_eq!(db.count("t"), 3);
    for glob in ["link/p-*.csv", "parts/p-*.csv"] {
        let again = db.load(&[db.dir.path().join(glob).to_str().unwrap(), "--table", "t"]);
        again.assert_ok();
        assert!(again.output().contains("already finished"), "{glob}: {}", again.output());
    }
    assert_eq!(db.count("t"), 3, "nothing loaded twice");
}

/// COPY reads fields by position. A header that names the table's columns
/// in another order, or leaves some out (an identity, a default), says
/// which field goes where; every file must then have that header.
#[test]
fn a_header_of_column_names_loads_by_name() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY, name text, k text, note text DEFAULT 'none', \
         at timestamptz DEFAULT now())",
    );
    for part in 0..2 {
        let body: String = (0..300).map(|i| format!("{},\"name {i}\nsecond line\"\n", i % 10)).collect();
        db.file(&format!("named/part-{part}.csv"), format!("k,name\n{body}").as_bytes());
    }
    // An empty file sorts first and has no header: the warning names the
    // file whose header it read.
    db.file("named/part-.csv", b"");
    let glob = db.dir.path().join("named/part-*.csv");
    let run = db.load(&[glob.to_str().unwrap(), "--table", "t", "--header", "--chunk-size", "1KiB", "--workers", "2"]);
    run.assert_ok();
    assert!(run.output().contains("part-0.csv names, in its order: k, name"), "{}", run.output());
    assert_eq!(db.count("t"), 600);
    assert_eq!(db.scalar("SELECT count(*) FROM t WHERE name LIKE 'name %' AND k ~ '^[0-9]$' AND note = 'none'"), "600");
    let other = db.file("named/other.csv", b"name,k\nx,1\n");
    let first = db.dir.path().join("named/part-0.csv");
    let run = db.load(&[first.to_str().unwrap(), other.to_str().unwrap(), "--table", "t", "--header", "--restart"]);
    assert_eq!(run.code, 2, "{}", run.output());
    assert!(run.output().contains("other.csv: its header (name,k) is not the header of"), "{}", run.output());
    assert_eq!(db.scalar("SELECT count(*) FROM t WHERE name = 'x'"), "0", "nothing of it loaded by position");
}

/// Every input's header must name the columns the first one's names, also
/// when those are the table's own order (a file whose header had the
/// columns swapped was loaded by position, into the wrong columns), and it
/// is checked before anything loads. Quoting, case as psql reads it and
/// line ends may differ.
#[test]
fn every_header_must_name_the_columns_of_the_first_before_anything_loads() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (a text, b text)");
    let first = db.file("h/first.csv", b"a,b\na1,b1\n");
    let same = db.file("h/same.csv", b"\"a\", B \r\na2,b2\r\n");
    let swapped = db.file("h/swapped.csv", b"b,a\nb3,a3\n");
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let empty = db.file("h/empty.csv", b"");
    let run = db.load(&[&path(&first), &path(&empty), &path(&same), "--table", "t", "--header"]);
    run.assert_ok();
    assert_eq!(db.scalar("SELECT string_agg(a || b, ' ' ORDER BY a) FROM t"), "a1b1 a2b2");
    let run = db.load(&[&path(&first), &path(&swapped), "--table", "t", "--header", "--truncate", "--restart"]);
    assert_eq!(run.code, 2, "{}", run.output());
    assert!(run.output().contains("swapped.csv: its header (b,a) is not the header of"), "{}", run.output());
    assert_eq!(db.count("t"), 2, "refused before the truncate and the first file's load");
}

/// A header that names the columns in another order with one name misspelt
/// is not a list of the table's columns, so it used to load by position,
/// each value into its neighbour's column (all text: nothing refused it).
/// A header that names a column where position would put another is now
/// refused before anything loads; one of labels still loads by position, and
/// a later file may not then name the columns in another order.
#[test]
fn a_header_naming_columns_out_of_place_is_refused() {
    let db = TestDb::new();
    db.execute("CREATE TABLE people (first_name text, last_name text, email text)");
    let misspelt = db.file("people/misspelt.csv", b"last_name,first_name,emial\nSmith,John,j@example.com\n");
    let labels = db.file("people/labels.csv", b"given,family,mail\nJane,Doe,d@example.com\n");
    let swapped = db.file("people/swapped.csv", b"last_name,first_name,email\nRoe,Rick,r@example.com\n");
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let run = db.load(&[&path(&misspelt), "--table", "people", "--header"]);
    assert_eq!(run.code, 2, "{}", run.output());
    assert!(
        run.stderr.contains(
            "misspelt.csv: its header (last_name,first_name,emial) names column \"last_name\" as field 1, but not \
             every field is a column's name, so the fields would load by position, field 1 into column \"first_name\""
        ),
        "{}",
        run.stderr
    );
    assert_eq!(db.count("people"), 0);
    let run = db.load(&[&path(&labels), &path(&swapped), "--table", "people", "--header"]);
    assert_eq!(run.code, 2, "{}", run.output());
    assert!(
        run.stderr.contains("swapped.csv: its header (last_name,first_name,email) is not the header of"),
        "{}",
        run.stderr
    );
    assert_eq!(db.count("people"), 0);
    db.load(&[&path(&labels), "--table", "people", "--header"]).assert_ok();
    db.load(&[&path(&swapped), "--table", "people", "--header"]).assert_ok();
    assert_eq!(
        db.scalar("SELECT string_agg(first_name || ' ' || last_name, ', ' ORDER BY email) FROM people"),
        "Jane Doe, Rick Roe"
    );
}

/// A header that names a column twice (`Email,email`, two spellings of
/// one name) is refused with the `--columns` that loads the first and
/// leaves the second out, which then loads; it was refused as a header
/// with a field that names no column, which each did.
#[test]
fn a_header_naming_a_column_twice_is_refused_with_the_columns_that_load_it() {
    let db = TestDb::new();
    db.execute("CREATE TABLE people (first_name text, email text, backup text)");
    let twice = db.file("twice.csv", b"first_name,Email,email\nJohn,j@example.com,k@example.com\n");
    let file = twice.to_str().unwrap();
    let columns = "--columns first_name,email,-";
    let says = format!(
        "twice.csv: its header (first_name,Email,email) names column \"email\" twice, as fields 2 and 3, and a \
         column loads one field; say which field goes into which column with --columns, in the file's order, a - for \
         a field to leave out ({columns}), or rename one of them in the header"
    );
    db.load(&[file, "--table", "people", "--header"]).assert_refused(&says);
    db.load(&[file, "--table", "people", "--header", "--skip-other-fields"]).assert_refused(&says);
    assert_eq!(db.count("people"), 0);
    db.load(&[file, "--table", "people", "--header", "--columns", "first_name,email,-"]).assert_ok();
    assert_eq!(db.scalar("SELECT email || ' ' || (backup IS NULL) FROM people"), "j@example.com true");
}

/// A spreadsheet's header labels the columns its own way (`Last Name`
/// for last_name) and in its own order: it used to count as labels, so its
/// fields loaded by position, each name into the other's column (all text:
/// nothing refused it). Labels that spell one column's name, case and
/// everything but letters and digits left out, now name that column.
#[test]
fn a_header_of_labels_spelling_the_columns_names_loads_by_name() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE people (first_name text, last_name text, email text, id int GENERATED ALWAYS AS IDENTITY)",
    );
    let file = db.file("people.csv", b"Last Name,E-Mail,FIRST NAME\r\nSmith,j@example.com,John\r\n");
    let run = db.load(&[file.to_str().unwrap(), "--table", "people", "--header"]);
    run.assert_ok();
    let says = "loading the columns the header of";
    assert!(run.output().contains(says) && run.output().contains("in its order: last_name, email, first_name"));
    assert_eq!(
        db.scalar("SELECT concat_ws(' ', first_name, last_name, email, id) FROM people"),
        "John Smith j@example.com 1"
    );
}

/// An export of a wider table: more fields than the table has columns,
/// some named in the header as its columns. It used to load by position,
/// every record rejected; a header naming a generated column loaded that
/// field into the next column (an identity here) without a word. Both are
/// refused before anything loads, naming the fields, with the `cut` that
/// leaves them out, and what that command writes loads by the header.
#[test]
fn a_header_with_fields_no_column_takes_is_refused_with_the_cut_that_loads_it() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE orders (id bigint, customer text, total numeric, \
         doubled numeric GENERATED ALWAYS AS (total * 2) STORED, n int GENERATED BY DEFAULT AS IDENTITY)",
    );
    let cut_and_load = |file: &std::path::Path, says: &str, end: &str, format: &str| {
        let before = db.count("orders");
        let run = db.load(&[file.to_str().unwrap(), "--table", "orders", "--header"]);
        run.assert_refused(says);
        assert_eq!(db.count("orders"), before, "nothing loaded");
        let command = run.stderr.split_once("out first (").unwrap().1.split(end).next().unwrap();
        let cut = file.with_extension("cut");
        let shell = format!("{command} > {}", cut.display());
        let done = std::process::Command::new("sh").args(["-c", &shell]).status().unwrap();
        assert!(done.success(), "{shell}");
        db.load(&[cut.to_str().unwrap(), "--table", "orders", "--header", "--format", format]).assert_ok();
    };
    let wide = db.file("wide.csv", b"id,notes,customer,total,region\n1,x,Ann,10.5,EU\n2,y,Bob,3,US\n");
    let says = "wide.csv: its header names columns of the table, but fields 2 (notes), 5 (region) name no column \
                of public.orders; COPY can neither load those fields nor leave them out, so pass --skip-other-fields, \
                which leaves them out on the way, or cut them out first";
    cut_and_load(&wide, says, ", or, where values hold", "csv");
    let tsv = b"id\tcustomer\ttotal\tdoubled\n3\tCy\t1.25\t2.5\n";
    let generated = db.file("generated.tsv.gz", &gzip(tsv));
    let says = "generated.tsv.gz: its header names columns of the table, but field 4 (\"doubled\") names a generated \
                column, which the server computes; COPY can neither load that field nor leave it out, so pass \
                --skip-other-fields, which leaves it out on the way, or cut it out first (zcat ";
    cut_and_load(&generated, says, ")", "tsv");
    // Every line ends with the delimiter: the header's last field is empty,
    // and by position (four fields, five columns) every record was rejected.
    db.execute(
        "CREATE TABLE public.noted (id bigint, customer text, total numeric, note text, at date DEFAULT '2024-01-02')",
    );
    let trailing = db.file("trailing.csv", b"id,customer,total,\n4,Di,2,\n");
    let run = db.load(&[trailing.to_str().unwrap(), "--table", "public.noted", "--header"]);
    run.assert_refused(
        "field 4 (empty: the header ends with the delimiter, as some exports end every line) names no column of \
         public.noted; COPY can neither load that field nor leave it out, so pass --skip-other-fields",
    );
    assert!(run.stderr.contains("or add a column for it to the table"), "{}", run.stderr);
    db.load(&[trailing.to_str().unwrap(), "--table", "public.noted", "--header", "--skip-other-fields"]).assert_ok();
    assert_eq!(
        db.scalar("SELECT concat_ws(' ', id, customer, total, note, at) FROM public.noted"),
        "4 Di 2 2024-01-02"
    );
    assert_eq!(
        db.scalar("SELECT string_agg(concat_ws(' ', id, customer, total, doubled, n), ', ' ORDER BY id) FROM orders"),
        "1 Ann 10.5 21.0 1, 2 Bob 3 6 2, 3 Cy 1.25 2.50 3"
    );
    let run = db.load(&[wide.to_str().unwrap(), "--table", "orders", "--columns", "id,doubled"]);
    assert_eq!(run.code, 2, "{}", run.output());
    let says = "column \"doubled\" of table public.orders is a generated column: the server computes it";
    assert!(run.stderr.contains(says), "{}", run.stderr);
}

/// Fields left out, by a `-` in `--columns` or by `--skip-other-fields`
/// with a header: the other fields load as the server reads them in the
/// whole record (quotes, doubled quotes, CRLF, and line breaks in a field
/// left out), whatever the chunk size, COPY format and workers; a record
/// with another field count and a value the server refuses are rejected
/// at their own lines, and every record is loaded or rejected.
#[test]
fn fields_left_out_by_a_dash_or_by_the_header_leave_the_others_as_written() {
    let db = TestDb::new();
    db.execute("CREATE TABLE orders (id bigint, customer text, total numeric, n int GENERATED BY DEFAULT AS IDENTITY)");
    db.execute("CREATE TABLE wide (id bigint, notes text, customer text, total numeric, region text)");
    let mut rng = crate::util::Rng(crate::util::fuzz_seed() | 1);
    let header = "id,notes,customer,total,region\r\n";
    let (mut good, mut all, mut bad_lines) = (String::from(header), String::from(header), Vec::new());
    let mut line = 2;
    for id in 0..3000 {
        let notes = rng.pick(&["", "plain", "\"a,b\nc\"", "\"two\r\nlines\"", "\"q\"\"\n\"", "\"\""]);
        let customer = rng.pick(&["Ann", "\"B, \"\"o\"\"\"", "", "\"\"", "\"new\nline\""]);
        let region = rng.pick(&["EU", "\"E,U\"", "", "\"x\ny\""]);
        let record = format!("{id},{notes},{customer},{id}.5,{region}\r\n");
        let spoil = rng.below(50);
        let written = match spoil {
            0 => format!("{id},{notes},{customer}\r\n"),
            1 => format!("{id},{notes},{customer},{id}x,{region}\r\n"),
            _ => record.clone(),
        };
        if spoil < 2 {
            bad_lines.push(line);
        } else {
            good.push_str(&record);
        }
        line += written.matches('\n').count();
        all.push_str(&written);
    }
    let oracle = db.file("good.csv", good.as_bytes());
    db.psql_copy("wide", &oracle, "with (format csv, header)");
    let want = "SELECT string_agg(concat_ws('|', id, customer, total), E'\\n' ORDER BY id) FROM";
    let want = db.scalar(&format!("{want} wide"));
    let file = db.file("all.csv", all.as_bytes());
    let rejects = db.dir.path().join("left-out.rejects.jsonl");
    let mut cases = 0;
    for (how, chunk, copy, workers) in [
        ("--columns=id,-,customer,total,-", "1KiB", "binary", "2"),
        ("--columns=id, - ,customer,total,-", "64MiB", "text", "1"),
        ("--skip-other-fields", "1KiB", "text", "3"),
        ("--skip-other-fields", "4KiB", "binary", "2"),
    ] {
        db.execute("TRUNCATE orders");
        let args = [file.to_str().unwrap(), "--table", "orders", "--header", how, "--chunk-size", chunk];
        let rejects_arg = ["--rejects", rejects.to_str().unwrap(), "--copy-format", copy, "--workers", workers];
        let run = db.load(&[&args[..], &rejects_arg, &["--restart"]].concat());
        assert_eq!(run.code, 1, "{how} {chunk} {copy}: {}", run.output());
        assert!(run.stderr.contains("leaving out fields 2,5 of each record"), "{}", run.stderr);
        let got = db.scalar("SELECT string_agg(concat_ws('|', id, customer, total), E'\\n' ORDER BY id) FROM orders");
        assert_eq!(got, want, "{how} {chunk} {copy}");
        let lines: Vec<usize> = crate::util::rejected_lines(&rejects).into_iter().map(|(_, l)| l).collect();
        assert_eq!(lines, bad_lines, "{how} {chunk} {copy}: rejected at their lines");
        let text = std::fs::read_to_string(&rejects).unwrap();
        assert!(text.contains("the record has 3 fields, not 5, so sluice cannot tell which to leave out"), "{text}");
        assert!(text.contains("invalid input syntax for type numeric"), "{text}");
        cases += 1;
    }
    assert_eq!(cases, 4);
    assert!(bad_lines.len() > 20, "the seed spoils enough records: {}", bad_lines.len());
}

/// A semicolon-separated export named `.csv`: its header names the
/// columns only when split at `;`. Refused before anything loads, naming
/// the delimiter, instead of 1,000 rejects first; with that delimiter it
/// loads, a decimal comma and all.
#[test]
fn a_header_that_names_the_columns_at_another_delimiter_is_refused() {
    let db = TestDb::new();
    db.execute("CREATE TABLE prices (id int, name text, price text)");
    let file = db.file("prices.csv", b"id;name;price\n1;apple;2,50\n2;pear;3,10\n");
    let file = file.to_str().unwrap();
    let run = db.load(&[file, "--table", "prices", "--header"]);
    assert_eq!(run.code, 2, "{}", run.output());
    assert!(
        run.stderr.contains(
            "prices.csv: its header (id;name;price) names the table's columns when split at ';'; pass \
             --delimiter ';'"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(db.count("prices"), 0);
    db.load(&[file, "--table", "prices", "--header", "--delimiter", ";"]).assert_ok();
    assert_eq!(db.scalar("SELECT string_agg(price, ' ' ORDER BY id) FROM prices"), "2,50 3,10");
    // A CSV file named .txt is taken for the text format, which would keep
    // its quotes: the advice is the format, not a comma delimiter.
    let file = db.file("more.txt", b"id,name,price\n3,\"plum, red\",1.20\n");
    let file = file.to_str().unwrap();
    let run = db.load(&[file, "--table", "prices", "--header"]);
    assert_eq!(run.code, 2, "{}", run.output());
    assert!(run.stderr.contains("names the table's columns when split at ','; pass --format csv"), "{}", run.stderr);
    db.load(&[file, "--table", "prices", "--header", "--format", "csv"]).assert_ok();
    assert_eq!(db.scalar("SELECT name FROM prices WHERE id = 3"), "plum, red");
}

/// `--columns` naming the header's columns in another order would load
/// each field into another's column: refused before anything loads. The
/// header's own order, or a header of other labels, loads.
#[test]
fn columns_in_another_order_than_the_header_names_them_are_refused() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (a text, b text, c text)");
    let file = db.file("cols.csv", b"b,a\nB1,A1\n");
    let path = file.to_str().unwrap();
    let run = db.load(&[path, "--table", "t", "--header", "--columns", "a,b"]);
    assert_eq!(run.code, 2, "{}", run.output());
    let says = "cols.csv: its header (b,a) names the columns of --columns (a,b) in another order";
    assert!(run.stderr.contains(says), "{}", run.stderr);
    assert_eq!(db.count("t"), 0);
    db.load(&[path, "--table", "t", "--header", "--columns", "b,a"]).assert_ok();
    let labels = db.file("labels.csv", b"x,y\nA2,B2\n");
    db.load(&[labels.to_str().unwrap(), "--table", "t", "--header", "--columns", "a,b"]).assert_ok();
    assert_eq!(db.scalar("SELECT string_agg(a || b, ' ' ORDER BY a) FROM t"), "A1B1 A2B2");
    // A later input's header is read too: the first agrees with --columns
    // and the second would load swapped.
    let in_order = db.file("in_order.csv", b"a,b\nA3,B3\n");
    let run = db.load(&[in_order.to_str().unwrap(), path, "--table", "t", "--header", "--columns", "a,b"]);
    run.assert_refused(says);
    assert_eq!(db.count("t"), 2, "nothing of either file loaded");
}

/// A header is read as the server reads the record: with `--escape '\\'`
/// (or text-format escapes) it names the columns as any other does. It
/// used to count as labels, and its file loaded by position, each field
/// into another's column.
#[test]
fn a_header_with_escapes_names_the_columns() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (a int, b text, c int)");
    let csv = db.file("escaped.csv", b"\"c\",b,\"a\"\n3,\"x \\\" y\",1\n");
    let run = db.load(&[csv.to_str().unwrap(), "--table", "t", "--header", "--escape", "\\"]);
    run.assert_ok();
    let tsv = db.file("escaped.tsv", b"c\tb\\\\\ta\n6\tz\t4\n");
    db.execute("ALTER TABLE t RENAME b TO \"b\\\"");
    db.load(&[tsv.to_str().unwrap(), "--table", "t", "--header"]).assert_ok();
    assert_eq!(
        db.scalar("SELECT string_agg(a || ',' || \"b\\\" || ',' || c, ' ' ORDER BY a) FROM t"),
        "1,x \" y,3 4,z,6"
    );
}

/// Stdin and pipes, plain or compressed, are matched by their header as a
/// file is (it was loaded by position before: the same data piped in went
/// into the wrong columns): the header is read from the head sluice reads
/// ahead. One that does not end within it is refused, not taken in part.
#[test]
fn a_header_piped_in_loads_by_name_as_a_file_does() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (a text, b text)");
    let body: String = (0..2000).map(|i| format!("b{i},\"a{i}\nsecond\"\r\n")).collect();
    let data = format!("b,a\r\n{body}");
    let args = |job: &str| {
        ["load", "-", "--db", &db.conninfo(), "--table", "t", "--format", "csv", "--header", "--job", job]
            .map(String::from)
    };
    for (job, input) in [("plain", data.as_bytes().to_vec()), ("gzip", gzip(data.as_bytes()))] {
        let run = sluice_with_stdin(&args(job).iter().map(String::as_str).collect::<Vec<_>>(), &input);
        run.assert_ok();
        assert!(run.output().contains("the header of - names, in its order: b, a"), "{}", run.output());
    }
    assert_eq!(db.count("t"), 4000);
    assert_eq!(
        db.scalar("SELECT count(*) FROM t WHERE a LIKE 'a%' AND b LIKE 'b%' AND split_part(a, E'\\n', 1) = 'a' || substr(b, 2)"),
        "4000"
    );
    let long = format!("b,{}\n{body}", "x".repeat(1 << 21));
    let run = sluice_with_stdin(&args("long").iter().map(String::as_str).collect::<Vec<_>>(), long.as_bytes());
    run.assert_refused("-: its header does not end within the first");
    assert_eq!(db.count("t"), 4000);
}

/// The field reports loaded 2,000 pre-split files: a glob of many more
/// files than the open-file limit allows loads, because a worker keeps open
/// only the file it reads.
#[test]
fn a_glob_of_more_files_than_the_open_file_limit() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text)");
    let glob = one_record_files(&db, 600, |part| format!("{part}\tn{part}\n"));
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", "ulimit -n 256 && exec \"$@\"", "sh"]).arg(sluice_command().get_program());
    cmd.args(["load", glob.to_str().unwrap(), "--table", "t", "--db", &db.conninfo(), "--workers", "4"]);
    let run = run_command(cmd);
    run.assert_ok();
    assert_eq!(db.scalar("SELECT count(DISTINCT id) FROM t"), "600");
}

/// Small files share batches: one COPY and one transaction for several
/// files. Each file still loads as it would alone: without a line end after
/// its last record, with a quote left open at its end, with a bad record,
/// with CRLF line ends among LF files; its header skipped. As text and as
/// binary COPY.
#[test]
fn small_files_share_batches_and_load_as_each_file_alone() {
    for copy_format in ["text", "binary"] {
        let db = TestDb::new();
        db.execute("CREATE TABLE got (id int, name text, k numeric); CREATE TABLE want (LIKE got)");
        for part in 0..40 {
            let good = format!("id,name,k\n{}", rows(part * 5, part * 5 + 5));
            let body = match part {
                7 => good.trim_end().to_string(),
                13 => good.replace('\n', "\r\n"),
                21 => format!("{good}998,bad,notanumber\n"),
                30 => format!("{good}999,\"a quote left open\n"),
                _ => good.clone(),
            };
            let file = db.file(&format!("b/part-{part:02}.csv"), body.as_bytes());
            let reference = match part {
                21 | 30 => db.file(&format!("good-{part}.csv"), good.as_bytes()),
                _ => file,
            };
            db.psql_copy("want", &reference, "csv header");
        }
        let glob = db.dir.path().join("b/part-*.csv");
        let (rejects, report) = (db.dir.path().join("r.jsonl"), db.dir.path().join("r.json"));
        let run = db.load(&[
            glob.to_str().unwrap(),
            "--table",
            "got",
            "--header",
            "--copy-format",
            copy_format,
            "--rejects",
            rejects.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ]);
        assert_eq!(run.code, 1, "rejects: exit 1: {}", run.output());
        db.assert_same_rows("got", "want");
        let found: Vec<serde_json::Value> =
            std::fs::read_to_string(&rejects).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let places: Vec<(String, u64)> = found
            .iter()
            .map(|r| (r["file"].as_str().unwrap().rsplit('/').next().unwrap().to_string(), r["line"].as_u64().unwrap()))
            .collect();
        // Committed by two workers in whichever order, written in input order.
        assert_eq!(places, [("part-21.csv".to_string(), 12), ("part-30.csv".to_string(), 12)], "{copy_format}");
        let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        let summary = &report["summary"];
        assert_eq!(summary["chunks"], 40);
        assert!(summary["batches"].as_u64().unwrap() <= 4, "{copy_format}: {summary}");
        assert!(run.output().contains(" 40 chunks in "), "{}", run.output());
        assert_eq!(summary["copy"]["binary_chunks"].as_u64().unwrap() > 0, copy_format == "binary", "{summary}");
        // A batch is one COPY: the first files' rows share one (sub)transaction.
        let xmins = "SELECT count(DISTINCT xmin::text) || ' ' || count(*) FROM got WHERE id < 35";
        assert_eq!(db.scalar(xmins), "1 35", "{copy_format}: files 0-6 loaded by one COPY");
    }
}

/// A bad record in a batch of small files costs a few COPY statements, not
/// one per file: the files before it go again as one COPY, its file is
/// isolated, the files after it go on together; after a batch with rejects
/// the next is screened on the client first. Bad records the client
/// suspects (`x` in an integer column) and ones it cannot (a bad numeric)
/// are all rejected at their file and line, and every other row loads. In
/// CSV the server counts quoted line ends as lines, so the first guess at
/// the bad file is wrong: the result must not change.
#[test]
fn bad_records_in_batches_of_small_files_cost_a_few_statements() {
    let bad = |part: usize| match part {
        10 | 48 => Some("x1"),
        47 | 90 => Some("notanumber"),
        _ => None,
    };
    for format in ["tsv", "csv"] {
        let db = TestDb::new();
        db.execute("CREATE TABLE got (id int, name text, k numeric); CREATE TABLE want (LIKE got)");
        let record = |id: usize, k: &str| match format {
            "tsv" => format!("{id}\tname {id}\t{k}\n"),
            _ => format!("{id},\"name {id}\nline two\",{k}\n"),
        };
        let mut good_rows = String::new();
        for part in 0..120 {
            let mut body = String::new();
            for row in 0..5 {
                let id = part * 5 + row;
                match bad(part).filter(|_| row == 2) {
                    Some("x1") => body.push_str(&record(id, "1").replacen(&id.to_string(), "x1", 1)),
                    Some(value) => body.push_str(&record(id, value)),
                    None => {
                        body.push_str(&record(id, "1"));
                        good_rows.push_str(&record(id, "1"));
                    }
                }
            }
            db.file(&format!("b/part-{part:03}.{format}"), body.as_bytes());
        }
        let reference = db.file(&format!("good.{format}"), good_rows.as_bytes());
        db.psql_copy("want", &reference, if format == "csv" { "csv" } else { "" });
        let glob = db.dir.path().join(format!("b/part-*.{format}"));
        let rejects = db.dir.path().join("r.jsonl");
        let args = ["--table", "got", "--workers", "1", "--chunk-size", "2KiB", "--copy-format", "text"];
        let run = db.load(&[&[glob.to_str().unwrap(), "--rejects", rejects.to_str().unwrap()][..], &args].concat());
        assert_eq!(run.code, 1, "rejects: exit 1: {}", run.output());
        db.assert_same_rows("got", "want");
        let places: Vec<(String, u64)> = std::fs::read_to_string(&rejects)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .map(|r| (r["file"].as_str().unwrap().rsplit('/').next().unwrap().to_string(), r["line"].as_u64().unwrap()))
            .collect();
        let line = if format == "csv" { 5 } else { 3 };
        let want: Vec<(String, u64)> = [10, 47, 48, 90].map(|p| (format!("part-{p:03}.{format}"), line)).to_vec();
        assert_eq!(places, want, "{format}");
        assert!(run.output().contains("120 chunks in "), "{}", run.output());
        if format == "tsv" {
            // Each COPY under a savepoint is a subtransaction of its own:
            // one COPY per file would give about 120 distinct xmins.
            let copies: u64 = db.scalar("SELECT count(DISTINCT xmin::text) FROM got").parse().unwrap();
            assert!(copies <= 30, "{copies} COPY statements for 120 files with 4 bad records");
        }
    }
}

/// The same records through stdin, gzip, zstd, bzip2, xz, lz4 and a plain
/// file give the same table; compression is recognised by magic bytes,
/// whatever the name says. bzip2, xz and lz4 were refused (`bzip2 -dc FILE
/// | sluice load -`), which took a glob of dumps one command a file; lz4's
/// skippable frames stopped the load as damaged input.
#[test]
fn stdin_and_every_compression_load_the_same_table() {
    let db = TestDb::new();
    let data = format!("id,name,k\n{}", rows(0, 4000));
    db.execute("CREATE TABLE plain (id int, name text, k int)");
    let compressed =
        ["from_stdin", "from_gz", "from_zst", "from_stdin_gz", "from_bz2", "from_stdin_bz2", "from_xz", "from_lz4"];
    for t in compressed {
        db.execute(&format!("CREATE TABLE {t} (LIKE plain)"));
    }
    let plain = db.file("data.csv", data.as_bytes());
    let gz = db.file("data.csv.gz", &gzip(data.as_bytes()));
    let zst = db.file("data.csv.zst", &zstd::encode_all(data.as_bytes(), 3).unwrap());
    // Two streams one after the other, as pbzip2 writes them.
    let (head, tail) = data.as_bytes().split_at(data.len() / 2);
    let bz2 = db.file("data.csv.bz2", &[bzip2_small_blocks(head), bzip2_small_blocks(tail)].concat());
    let xz = db.file("data.csv.xz", &[xz_of(head), xz_of(tail)].concat());
    // lz4: a skippable frame (magic number, length, metadata) between them,
    // which stopped the load as damaged input.
    let skippable = [&0x184D_2A53u32.to_le_bytes()[..], &5u32.to_le_bytes(), b"meta\n"].concat();
    let lz4 = db.file("data.csv.lz4", &[lz4_of(head), skippable, lz4_of(tail)].concat());
    let common = ["--header", "--chunk-size", "1KiB", "--workers", "2"];
    let load = |file: &str, table: &str| {
        let mut args = vec![file, "--table", table];
        args.extend_from_slice(&common);
        db.load(&args).assert_ok();
    };
    load(plain.to_str().unwrap(), "plain");
    load(gz.to_str().unwrap(), "from_gz");
    load(zst.to_str().unwrap(), "from_zst");
    load(bz2.to_str().unwrap(), "from_bz2");
    load(xz.to_str().unwrap(), "from_xz");
    load(lz4.to_str().unwrap(), "from_lz4");
    let conninfo = db.conninfo();
    let stdin_args = |table: &'static str| {
        let mut args = vec!["load", "-", "--db", conninfo.as_str(), "--format", "csv", "--table", table];
        args.extend_from_slice(&common);
        args
    };
    sluice_with_stdin(&stdin_args("from_stdin"), data.as_bytes()).assert_ok();
    sluice_with_stdin(&stdin_args("from_stdin_gz"), &gzip(data.as_bytes())).assert_ok();
    sluice_with_stdin(&stdin_args("from_stdin_bz2"), &bzip2_small_blocks(data.as_bytes())).assert_ok();
    assert_eq!(db.count("plain"), 4000);
    for t in compressed {
        db.assert_same_rows("plain", t);
    }
}

/// A bzip2 input of many blocks loads as its text, the second stream's
/// after the first's: on 3 cores and more, its blocks are decoded on
/// several threads and put back in order (their unit tests force threads
/// on any machine).
#[test]
fn a_bzip2_input_of_many_blocks_loads_as_its_text() {
    let db = TestDb::new();
    let data = format!("id,name,k\n{}", rows(0, 60_000));
    db.execute("CREATE TABLE plain (id int, name text, k int)");
    db.execute("CREATE TABLE from_bz2 (LIKE plain)");
    // Blocks of 100 kB, so about twenty.
    let (head, tail) = data.as_bytes().split_at(data.len() / 3);
    let plain = db.file("many.csv", data.as_bytes());
    let bz2 = db.file("many.csv.bz2", &[bzip2_small_blocks(head), bzip2_small_blocks(tail)].concat());
    for (file, table) in [(&plain, "plain"), (&bz2, "from_bz2")] {
        db.load(&[file.to_str().unwrap(), "--table", table, "--header", "--chunk-size", "64KiB"]).assert_ok();
    }
    assert_eq!(db.count("plain"), 60_000);
    db.assert_same_rows("plain", "from_bz2");
}

fn xz_of(bytes: &[u8]) -> Vec<u8> {
    liblzma::encode_all(bytes, 1).unwrap()
}

fn lz4_of(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = lz4_flex::frame::FrameEncoder::new(Vec::new());
    std::io::Write::write_all(&mut encoder, bytes).unwrap();
    encoder.finish().unwrap()
}

/// Inputs whose names say no format (stdin, `.dat`) are loaded in the
/// format their first line shows, saying so: CSV (commas, no tab), the
/// text format (tabs, no comma) or JSON lines; a line that could be either
/// is refused, asking for --format, as every such input was.
#[test]
fn the_format_of_an_input_named_without_one_comes_from_its_first_line() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text)");
    let conninfo = db.conninfo();
    let args = ["load", "-", "--db", conninfo.as_str(), "--table", "t"];
    let inputs: [(&[u8], &str); 3] = [
        (b"1,a b\n2,\"c,d\"\n", "as csv by its first line (commas, no tab)"),
        (b"3\ta;b\n", "as tsv by its first line (tabs, no comma)"),
        (b"{\"id\": 4, \"name\": \"e\"}\n", "as jsonl by its first line (a JSON object)"),
    ];
    for (input, says) in inputs {
        let run = sluice_with_stdin(&args, &gzip(input));
        run.assert_ok();
        assert!(run.stderr.contains(&format!("-: no format in its name; loading it {says}")), "{}", run.stderr);
    }
    let dat = db.file("t.dat", b"5,f\n");
    db.load(&[dat.to_str().unwrap(), "--table", "t"]).assert_ok();
    assert_eq!(db.scalar("SELECT string_agg(id || ':' || name, ' ' ORDER BY id) FROM t"), "1:a b 2:c,d 3:a;b 4:e 5:f");
    let either = sluice_with_stdin(&args, b"6\tg,h\n");
    either.assert_refused("cannot tell the format of - from its name or its first line; pass --format");
}

/// A pipe named as a file (a fifo, process substitution, /dev/stdin) is
/// read like stdin: compression is recognised, and the same bytes through
/// the same pipe again are recognised as loaded.
#[test]
fn a_pipe_named_as_a_file_is_read_like_stdin() {
    let db = TestDb::new();
    db.execute("CREATE TABLE want (id int, name text, k int); CREATE TABLE got (LIKE want)");
    db.execute("CREATE TABLE through_stdin (LIKE want)");
    let data = rows(0, 4000);
    let plain = db.file("data.csv", data.as_bytes());
    db.load(&[plain.to_str().unwrap(), "--table", "want"]).assert_ok();
    let fifo = db.dir.path().join("fifo.csv");
    run_command({
        let mut mkfifo = std::process::Command::new("mkfifo");
        mkfifo.arg(&fifo);
        mkfifo
    });
    let write_once = |bytes: Vec<u8>| {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::OpenOptions::new().write(true).open(fifo)?.write_all(&bytes))
    };
    let args = [fifo.to_str().unwrap(), "--table", "got", "--chunk-size", "1KiB", "--workers", "2"];
    let writer = write_once(gzip(data.as_bytes()));
    db.load(&args).assert_ok();
    writer.join().unwrap().unwrap();
    db.assert_same_rows("want", "got");
    let writer = write_once(gzip(data.as_bytes()));
    let again = db.load(&args);
    writer.join().unwrap().unwrap();
    again.assert_ok();
    assert!(again.stderr.contains("committed by earlier runs"), "{}", again.stderr);
    assert_eq!(db.count("got"), 4000, "the same data again is not loaded twice");

    let conninfo = db.conninfo();
    let args = ["load", "/dev/stdin", "--db", &conninfo, "--format", "csv", "--table", "through_stdin"];
    sluice_with_stdin(&args, &zstd::encode_all(data.as_bytes(), 3).unwrap()).assert_ok();
    db.assert_same_rows("want", "through_stdin");
}

/// A compressed file cut short says so, names how to check it, and keeps
/// the chunks committed before the cut.
#[test]
fn compressed_input_cut_short_says_so() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text, k int)");
    let data = rows(0, 20_000);
    let packed = gzip(data.as_bytes());
    let zst = zstd::encode_all(data.as_bytes(), 3).unwrap();
    // Blocks of 100 kB: the first ones decompress before the cut.
    let bz2 = [
        bzip2_small_blocks(&data.as_bytes()[..data.len() / 2]),
        bzip2_small_blocks(&data.as_bytes()[data.len() / 2..]),
    ]
    .concat();
    let xz = xz_of(data.as_bytes());
    let lz4 = lz4_of(data.as_bytes());
    let files = [
        ("cut.csv.gz", &packed, "gzip"),
        ("cut.csv.zst", &zst, "zstd"),
        ("cut.csv.bz2", &bz2, "bzip2"),
        ("cut.csv.xz", &xz, "xz"),
        ("cut.csv.lz4", &lz4, "lz4"),
    ];
    for (name, bytes, tool) in files {
        let file = db.file(name, &bytes[..bytes.len() * 3 / 4]);
        let file = file.to_str().unwrap();
        // Each a job of its own: both hold the same data.
        let run = db.load(&[file, "--table", "t", "--chunk-size", "4KiB", "--workers", "1", "--job", tool]);
        assert_eq!(run.code, 2, "{}", run.stderr);
        let expected = format!("{file}: the {tool} data is cut short or damaged (");
        assert!(run.stderr.contains(&expected), "{}", run.stderr);
        assert!(run.stderr.contains(&format!("`{tool} -t {file}` checks the file")), "{}", run.stderr);
        assert!(run.stderr.contains("were committed before the error and stay loaded"), "{}", run.stderr);
    }
    // Cut right after the second lz4 frame's magic number, which lz4_flex
    // reads as the input's end: the first frame's rows loaded, exit 0.
    let (head, tail) = data.as_bytes().split_at(data.len() / 2);
    let magic = db.file("magic.csv.lz4", &[lz4_of(head), lz4_of(tail)[..4].to_vec()].concat());
    let run = db.load(&[magic.to_str().unwrap(), "--table", "t", "--job", "lz4-magic"]);
    assert_eq!(run.code, 2, "{}", run.output());
    assert!(
        run.stderr.contains("cut short or damaged (lz4 input ends after a frame's magic number)"),
        "{}",
        run.stderr
    );
    let loaded: u64 = db.count("t");
    assert!(loaded > 0 && loaded < 100_000, "{loaded}");
}

/// Workers 1, 2, 8 and chunk sizes 1 KiB to 64 MiB all give the table
/// `psql \copy` gives.
#[test]
fn identical_table_for_any_workers_and_chunk_size() {
    let db = TestDb::new();
    let file = db.generated(sluice::gen::Dataset::StoreSales, "want", 30_000, 9, "sales.csv");
    let data = std::fs::read(&file).unwrap();
    assert!(data.windows(2).any(|w| w == b"\n\"" || w == b"t\n"), "data has quoted newlines");
    db.psql_copy("want", &file, "with (format csv)");
    for workers in ["1", "2", "8"] {
        for chunk in ["1KiB", "64KiB", "1MiB", "64MiB"] {
            let table = format!("got_{workers}_{}", chunk.to_lowercase());
            db.execute(&format!("CREATE TABLE {table} (LIKE want)"));
            db.load(&[file.to_str().unwrap(), "--table", &table, "--workers", workers, "--chunk-size", chunk])
                .assert_ok();
            db.assert_same_rows(&table, "want");
        }
    }
}

/// `--workers auto` loads exactly, never uses more workers than allowed,
/// and says what it measured.
#[test]
fn workers_auto_loads_exactly_and_reports_its_choice() {
    let db = TestDb::new();
    let file = db.generated(sluice::gen::Dataset::Transactions, "t", 2_500_000, 3, "t.tsv");
    let report = db.dir.path().join("r.json");
    let args = ["--table", "t", "--workers", "auto", "--max-workers", "4", "--chunk-size", "512KiB"];
    db.load(&[&[file.to_str().unwrap()][..], &args, &["--report", report.to_str().unwrap()]].concat()).assert_ok();
    assert_eq!(db.count("t"), 2_500_000);
    assert_eq!(db.scalar("SELECT count(DISTINCT tid) FROM t"), "2500000");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let chosen = report["summary"]["workers_chosen"].as_str().unwrap().to_string();
    assert!(chosen.starts_with("auto: "), "{chosen}");
    let used: std::collections::BTreeSet<u64> =
        report["chunks"].as_array().unwrap().iter().map(|c| c["worker"].as_u64().unwrap()).collect();
    assert!(used.iter().all(|&w| w < 4), "{used:?}");
    assert!(used.contains(&0) && used.contains(&1), "starts with 2 workers: {used:?}");
    if chosen.contains(", 3 ") {
        assert!(used.contains(&2), "level 3 was measured, so a third worker loaded: {used:?} {chosen}");
    }
}

/// A UTF-8 byte-order mark at the start of a file is not data.
#[test]
fn utf8_bom_is_stripped() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (doc jsonb NOT NULL)");
    let file = db.file("bom.jsonl", b"\xEF\xBB\xBF{\"a\":1}\n{\"a\":2}\n");
    db.load(&[file.to_str().unwrap(), "--table", "t"]).assert_ok();
    assert_eq!(db.scalar("SELECT sum((doc->>'a')::int) FROM t"), "3");
}

/// The same command twice loads once (the ledger knows the job finished);
/// --restart loads again (appending), --restart --truncate replaces.
#[test]
fn rerun_is_idempotent_restart_appends_truncate_replaces() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text, k int)");
    let file = db.file("d.csv", rows(0, 100).as_bytes());
    let path = file.to_str().unwrap();
    db.load(&[path, "--table", "t"]).assert_ok();
    let again = db.load(&[path, "--table", "t"]);
    again.assert_ok();
    assert!(again.stderr.contains("already finished"), "{}", again.stderr);
    assert_eq!(db.count("t"), 100);
    db.load(&[path, "--table", "t", "--restart"]).assert_ok();
    assert_eq!(db.count("t"), 200);
    db.load(&[path, "--table", "t", "--restart", "--truncate"]).assert_ok();
    assert_eq!(db.count("t"), 100);
}

/// A nightly `--truncate` load of a file written anew under the same name:
/// the finished job starts over, saying so (it was refused: its first
/// chunk held other bytes); the same data again is still loaded once, and
/// new data without `--truncate` loads as a job of its own, beside the
/// rows loaded before.
#[test]
fn a_finished_truncating_job_whose_file_was_written_anew_starts_over() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text, k int)");
    let file = db.file("nightly.csv", rows(0, 100).as_bytes());
    let path = file.to_str().unwrap();
    db.load(&[path, "--table", "t", "--truncate"]).assert_ok();
    db.file("nightly.csv", rows(100, 350).as_bytes());
    let next = db.load(&[path, "--table", "t", "--truncate"]);
    next.assert_ok();
    assert!(next.stderr.contains("had finished (100 rows at "), "{}", next.stderr);
    assert!(next.stderr.contains("as --truncate emptied the table, it started over"), "{}", next.stderr);
    assert_eq!(db.scalar("SELECT count(*) || ' ' || min(id) FROM t"), "250 100");
    let again = db.load(&[path, "--table", "t", "--truncate"]);
    assert!(again.stderr.contains("already finished"), "{}", again.stderr);
    db.file("nightly.csv", rows(350, 400).as_bytes());
    let added = db.load(&[path, "--table", "t"]);
    added.assert_ok();
    assert!(added.stderr.contains("as a job of its own"), "{}", added.stderr);
    assert_eq!(db.scalar("SELECT count(*) || ' ' || count(DISTINCT id) FROM t"), "300 300");
}

/// Latin-1 is strict ISO-8859-1 (0x80 is U+0080), windows-1252 maps 0x80
/// to the euro sign; both arrive as the right Unicode text.
#[test]
fn single_byte_encodings_are_transcoded() {
    let db = TestDb::new();
    db.execute("CREATE TABLE l1 (id int, name text); CREATE TABLE w (LIKE l1)");
    let data: Vec<u8> = (0..300).flat_map(|i| [format!("{i},caf").as_bytes(), b"\xe9 \x80\n"].concat()).collect();
    let file = db.file("latin.csv", &data);
    let path = file.to_str().unwrap();
    db.load(&[path, "--table", "l1", "--encoding", "latin1", "--chunk-size", "1KiB"]).assert_ok();
    db.load(&[path, "--table", "w", "--encoding", "WIN1252", "--chunk-size", "1KiB"]).assert_ok();
    assert_eq!(db.scalar("SELECT count(*) FROM l1 WHERE name = 'caf' || chr(233) || ' ' || chr(128)"), "300");
    assert_eq!(db.scalar("SELECT count(*) FROM w WHERE name = 'caf' || chr(233) || ' ' || chr(8364)"), "300");
}

/// A file in another encoding loaded without --encoding: its records with
/// bytes that are not UTF-8 are rejected, and the summary names the
/// encoding their bytes look like (a guess), with the first as it reads in
/// it; loaded again with that --encoding, every record loads as written.
#[test]
fn records_rejected_as_not_utf8_are_named_with_the_encoding_they_look_like() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text)");
    let cases = [
        ("western.csv", "windows-1252", &["café crème", "Müller", "tea", "São Paulo"][..]),
        ("cyrillic.csv", "windows-1251", &["привет мир", "улица Ленина", "tea", "Москва"][..]),
    ];
    for (name, encoding, words) in cases {
        let encoder = encoding_rs::Encoding::for_label(encoding.as_bytes()).unwrap();
        let lines: Vec<String> = (0..400).map(|i| format!("{i},{} {i}\n", words[i % words.len()])).collect();
        let bytes: Vec<u8> = lines.iter().flat_map(|line| encoder.encode(line).0.into_owned()).collect();
        let file = db.file(name, &bytes);
        let path = file.to_str().unwrap();
        let run = db.load(&[path, "--table", "t", "--truncate"]);
        assert_eq!(run.code, 1, "{}", run.output());
        let warning = format!(
            "300 records were rejected as not UTF-8; their bytes look like {encoding} (a guess), in which the first \
             ({path} line 1) reads \"0,{} 0\". If it reads right, load them with --encoding {encoding}",
            words[0]
        );
        assert!(run.stderr.contains(&warning), "{}", run.stderr);
        db.load(&[path, "--table", "t", "--truncate", "--restart", "--encoding", encoding]).assert_ok();
        let loaded = db.scalar("SELECT string_agg(name, '|' ORDER BY id) FROM t");
        assert_eq!(loaded, lines.iter().map(|l| l.split_once(',').unwrap().1.trim_end()).collect::<Vec<_>>().join("|"));
    }
}

/// Every single-byte encoding PostgreSQL knows, named as PostgreSQL names
/// it, decodes as the server's own conversion does: each byte 0x80..0xFF
/// that `convert_from` reads loads as the text it gives, and a byte it
/// refuses (windows-1252's 0x81, say, which WHATWG would turn into a C1
/// control) rejects its line, with the byte named and the line's bytes as
/// they were in the file, and the lines around it load. The first and the
/// last refused byte of each are tried.
#[test]
fn single_byte_encodings_decode_as_the_server_does() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE w (id int, v text);
         CREATE FUNCTION server_decodes(n int, enc text) RETURNS text LANGUAGE plpgsql AS
           $$ BEGIN RETURN convert_from(set_byte('\\x00'::bytea, 0, n), enc);
              EXCEPTION WHEN others THEN RETURN NULL; END $$",
    );
    let line = |n: u32| [format!("{n},a").into_bytes(), vec![n as u8], b"b\n".to_vec()].concat();
    let windows = ["WIN866", "WIN874", "WIN1250", "WIN1251", "WIN1252", "WIN1253", "WIN1254", "WIN1255", "WIN1256"];
    let others = ["WIN1257", "WIN1258", "KOI8R", "KOI8U", "ISO_8859_5", "ISO_8859_6", "ISO_8859_7", "ISO_8859_8"];
    let latin = ["LATIN1", "LATIN2", "LATIN3", "LATIN4", "LATIN5", "LATIN6", "LATIN7", "LATIN8", "LATIN9", "LATIN10"];
    for page in windows.iter().chain(&others).chain(&latin) {
        let refused = db.scalar(&format!(
            "SELECT string_agg(n::text, ',') FROM generate_series(128, 255) n WHERE server_decodes(n, '{page}') IS NULL"
        ));
        let undefined: Vec<u32> = refused.split(',').filter(|n| !n.is_empty()).map(|n| n.parse().unwrap()).collect();
        let defined: Vec<u32> = (0x80..=0xFF).filter(|n| !undefined.contains(n)).collect();
        let file = db.file(&format!("{page}.csv"), &defined.iter().flat_map(|&n| line(n)).collect::<Vec<u8>>());
        db.execute("TRUNCATE w");
        db.load(&[file.to_str().unwrap(), "--table", "w", "--encoding", page]).assert_ok();
        let differing =
            format!("SELECT count(*) FROM w WHERE v IS DISTINCT FROM 'a' || server_decodes(id, '{page}') || 'b'");
        assert_eq!(db.scalar(&differing), "0", "{page}");
        assert_eq!(db.count("w"), defined.len() as u64, "{page}");
        // Every refused byte, through the transcoder alone (a load each
        // would take a second per code page).
        let InputEncoding::Transcode(transcoding) = InputEncoding::from_name(page).unwrap() else { panic!("{page}") };
        for &n in &undefined {
            let mut out = Vec::new();
            TranscodingReader::new([n as u8].as_slice(), transcoding).read_to_end(&mut out).unwrap();
            assert!(has_unreadable(&out), "{page} byte {n:#x}: the server refuses it, sluice read {out:?}");
        }
        for &n in undefined.first().iter().chain(undefined.last().iter()) {
            let name = format!("{page}-{n}.csv");
            let file = db.file(&name, &[b"1,ok\n".as_slice(), &line(*n), b"2,ok\n"].concat());
            let rejects = db.dir.path().join(format!("{name}.rejects"));
            let rejects_arg = rejects.to_str().unwrap();
            db.execute("TRUNCATE w");
            let args =
                [file.to_str().unwrap(), "--table", "w", "--encoding", page, "--rejects", rejects_arg, "--restart"];
            let run = db.load(&args);
            assert_eq!(run.code, 1, "{page} byte {n:#x}: {}", run.stderr);
            assert_eq!(db.scalar("SELECT string_agg(id::text, ',' ORDER BY id) FROM w"), "1,2", "{page} byte {n:#x}");
            let reject: serde_json::Value = serde_json::from_slice(&std::fs::read(&rejects).unwrap()).unwrap();
            assert_eq!((reject["file"].as_str(), reject["line"].as_u64()), (file.to_str(), Some(2)), "{reject}");
            let reason = reject["reason"].as_str().unwrap();
            assert!(reason.starts_with(&format!("0x{n:02x} is not valid")), "{page}: {reason}");
            let raw = base64::engine::general_purpose::STANDARD.decode(reject["raw_base64"].as_str().unwrap());
            assert_eq!(raw.unwrap(), line(*n), "{page} byte {n:#x}: the line as it was in the file");
        }
    }
}

/// Every name PostgreSQL knows for an encoding (`pg_encname_tbl`, written as
/// users write them) means in sluice what the server's canonical name for
/// it means: `UNICODE` is UTF-8 (WHATWG reads it as UTF-16LE), `WIN` is
/// WIN1251, `MS_KANJI` and `WIN932` are SJIS. Names sluice does not
/// transcode are refused under every alias.
#[test]
fn postgres_encoding_aliases_mean_what_the_server_says() {
    let db = TestDb::new();
    let aliases = [
        "abc",
        "alt",
        "big5",
        "euccn",
        "eucjis2004",
        "eucjp",
        "euckr",
        "euctw",
        "gb18030",
        "gbk",
        "iso88591",
        "iso885910",
        "iso885913",
        "iso885914",
        "iso885915",
        "iso885916",
        "iso88592",
        "iso88593",
        "iso88594",
        "iso88595",
        "iso88596",
        "iso88597",
        "iso88598",
        "iso88599",
        "johab",
        "koi8",
        "koi8r",
        "koi8u",
        "latin1",
        "latin10",
        "latin2",
        "latin3",
        "latin4",
        "latin5",
        "latin6",
        "latin7",
        "latin8",
        "latin9",
        "mskanji",
        "muleinternal",
        "shiftjis",
        "shiftjis2004",
        "sjis",
        "sqlascii",
        "tcvn",
        "tcvn5712",
        "uhc",
        "unicode",
        "utf8",
        "vscii",
        "win",
        "win1250",
        "win1251",
        "win1252",
        "win1253",
        "win1254",
        "win1255",
        "win1256",
        "win1257",
        "win1258",
        "win866",
        "win874",
        "win932",
        "win936",
        "win949",
        "win950",
        "windows1250",
        "windows1251",
        "windows1252",
        "windows1253",
        "windows1254",
        "windows1255",
        "windows1256",
        "windows1257",
        "windows1258",
        "windows866",
        "windows874",
        "windows932",
        "windows936",
        "windows949",
        "windows950",
        // As users write them.
        "UTF-8",
        "Unicode",
        "ISO-8859-1",
        "iso_8859_15",
        "MS_KANJI",
        "Shift_JIS",
        "TCVN-5712",
        "WIN",
        "SQL_ASCII",
    ];
    let mut known = 0;
    for alias in aliases {
        let canonical = db.scalar(&format!("SELECT pg_encoding_to_char(pg_char_to_encoding('{alias}'))"));
        if canonical.is_empty() {
            continue; // not a name this server version knows
        }
        known += 1;
        let (ours, theirs) = (InputEncoding::from_name(alias), InputEncoding::from_name(&canonical));
        match (&ours, &theirs) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{alias} is {canonical} to the server"),
            (Err(_), Err(e)) => assert!(e.contains("does not transcode"), "{canonical}: {e}"),
            _ => panic!("{alias} is {canonical} to the server; sluice: {ours:?} against {theirs:?}"),
        }
    }
    assert!(known > 80, "the server knew only {known} of the names");
}

/// A UTF-16 file that begins with a byte-order mark (as Windows PowerShell
/// writes them) loads without --encoding, gzipped too, in the byte order its mark says
/// (big-endian too, even under `--encoding utf-16`, whose default order is
/// little-endian: before, such a file loaded nothing), quoted newlines across
/// 1 KiB chunks included, exactly like its UTF-8 twin. One without a mark,
/// which only looks like UTF-16, fails with a message that names the flag
/// for its byte order, as does one read in the other order (before, with
/// --header, all of it was one header line: nothing loaded, exit 0). JSON
/// lines piped in as UTF-16 are told JSON by their text (their bytes were
/// taken for CSV, each document split at its commas into the columns).
#[test]
fn utf16_is_read_in_the_order_its_mark_says_and_named_where_it_has_none() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE u8 (id int, name text, k int); CREATE TABLE u16 (LIKE u8); CREATE TABLE u16be (LIKE u8); \
         CREATE TABLE unmarked (LIKE u8); CREATE TABLE u16gz (LIKE u8); \
         CREATE TABLE piped (id int, name text)",
    );
    let text = format!("id,name,k\n{}", rows(0, 2000).replace("name", "n\u{e9}m\u{1F600}"));
    let le: Vec<u8> = [0xFF, 0xFE].into_iter().chain(text.encode_utf16().flat_map(u16::to_le_bytes)).collect();
    let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
    let plain = db.file("u8.csv", text.as_bytes());
    db.load(&[plain.to_str().unwrap(), "--table", "u8", "--header"]).assert_ok();
    let load = |file: &std::path::Path, table: &str, extra: &[&str]| {
        db.load(&[&[file.to_str().unwrap(), "--table", table, "--header", "--chunk-size", "1KiB"][..], extra].concat())
    };

    let wide = db.file("u16.csv", &le);
    let run = load(&wide, "u16", &[]);
    run.assert_ok();
    let said = "u16.csv: read as UTF-16, as the byte-order mark it begins with says";
    assert!(run.stderr.contains(said), "{}", run.stderr);
    db.assert_same_rows("u8", "u16");
    assert_eq!(db.count("u16"), 2000);
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gzip, &le).unwrap();
    let gzipped = db.file("u16.csv.gz", &gzip.finish().unwrap());
    let run = load(&gzipped, "u16gz", &[]);
    run.assert_ok();
    assert!(run.stderr.contains("u16.csv.gz: read as UTF-16"), "{}", run.stderr);
    db.assert_same_rows("u8", "u16gz");

    let marked_be = db.file("u16be.csv", &[&[0xFE, 0xFF][..], &be].concat());
    let run = load(&marked_be, "u16be", &["--encoding", "utf-16"]);
    run.assert_ok();
    assert!(!run.stderr.contains("byte-order mark"), "--encoding named it: {}", run.stderr);
    db.assert_same_rows("u8", "u16be");

    let unmarked = db.file("unmarked.csv", &be);
    let run = load(&unmarked, "unmarked", &[]);
    assert_eq!(run.code, 2);
    let said = "unmarked.csv: this looks like UTF-16 (NUL bytes at every other position), but no byte-order mark says \
                so: load it with --encoding utf-16be";
    assert!(run.stderr.contains(said), "{}", run.stderr);
    for other in ["utf-16", "utf-16le"] {
        let run = load(&unmarked, "unmarked", &["--encoding", other]);
        assert_eq!(run.code, 2, "{}", run.stderr);
        let said = "unmarked.csv: its NUL bytes come first in each pair, as in big-endian UTF-16, and no byte-order \
                    mark says otherwise: load it with --encoding utf-16be";
        assert!(run.stderr.contains(said), "{}", run.stderr);
    }
    assert_eq!(db.count("unmarked"), 0);
    load(&unmarked, "unmarked", &["--encoding", "utf-16be"]).assert_ok();
    db.assert_same_rows("u8", "unmarked");

    let documents = "{\"id\": 1, \"name\": \"a, b\"}\r\n{\"id\": 2, \"name\": \"c\"}\r\n";
    let piped: Vec<u8> = [0xFF, 0xFE].into_iter().chain(documents.encode_utf16().flat_map(u16::to_le_bytes)).collect();
    let run = crate::util::sluice_with_stdin(&["load", "-", "--table", "piped", "--db", &db.conninfo()], &piped);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("loading it as jsonl by its first line (a JSON object)"), "{}", run.stderr);
    assert_eq!(db.scalar("SELECT string_agg(id || ':' || name, ' ' ORDER BY id) FROM piped"), "1:a, b 2:c");
}

/// A file that is not text (compressed with a tool sluice does not read, a
/// workbook, an archive, Parquet) is refused before anything loads, saying
/// what it is and what to do, where it was rejected record by record with a
/// guessed encoding before. A text file that starts with such a magic number
/// still loads.
#[test]
fn files_that_are_not_text_are_refused_with_what_they_are() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (a text, b text)");
    // Bytes as compressed data looks: every value, NUL and controls included.
    let noise: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let cases: [(&str, &[u8], &str); 4] = [
        (
            "data.csv.lz",
            b"LZIP\x01",
            "compressed with lzip, which sluice does not read: \
          decompress it into sluice's stdin (lzip -dc",
        ),
        ("Book 1.xlsx", b"PK\x03\x04", "an Excel workbook (a ZIP archive), not text: save its sheet as CSV"),
        ("old.xls", &[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1], "an Excel 97-2003 workbook"),
        ("part-0.parquet", b"PAR1", "a Parquet file, which sluice does not read: convert it to CSV first"),
    ];
    for (name, magic, advice) in cases {
        let file = db.file(name, &[magic, &noise[..]].concat());
        let run = db.load(&[file.to_str().unwrap(), "--table", "t", "--format", "csv"]);
        assert_eq!(run.code, 2, "{name}: {}", run.output());
        assert!(run.stderr.contains(&format!("{}: this is ", file.display())), "{name}: {}", run.stderr);
        assert!(run.stderr.contains(advice), "{name}: {}", run.stderr);
        assert!(!run.output().contains("--encoding"), "no encoding guessed: {}", run.output());
    }
    let mut tar = vec![0; 512];
    tar[..8].copy_from_slice(b"data.csv");
    tar[257..263].copy_from_slice(b"ustar\0");
    let tar = [&tar[..], b"1,2\n", &[0; 1024]].concat();
    // An archive of a large CSV file: zstd's first block is compressed
    // to far more than a kilobyte, and gives nothing until it is all read.
    let mut header = vec![0; 512];
    header[..8].copy_from_slice(b"data.csv");
    header[257..263].copy_from_slice(b"ustar\0");
    let mut rng = crate::util::Rng(7);
    let csv: String = (0..10_000).map(|_| format!("{},{}\n", rng.next() % 100_000, rng.next() % 1000)).collect();
    let zstd_tar = zstd::encode_all(&[&header[..], csv.as_bytes()].concat()[..], 3).unwrap();
    assert!(zstd_tar.len() > 20_000, "the first block is large: {}", zstd_tar.len());
    // So does bzip2's, by blocks of up to 900 kB.
    let bzip2_tar = bzip2_small_blocks(&[&header[..], csv.as_bytes()].concat());
    assert!(bzip2_tar.len() > 20_000, "the first block is large: {}", bzip2_tar.len());
    let cases = [
        ("data.tar", tar.clone()),
        ("data.tar.gz", gzip(&tar)),
        ("data.tar.zst", zstd_tar),
        ("data.tar.bz2", bzip2_tar),
        ("data.tar.xz", xz_of(&[&header[..], csv.as_bytes()].concat())),
    ];
    for (name, bytes) in cases {
        let file = db.file(name, &bytes);
        let run = db.load(&[file.to_str().unwrap(), "--table", "t", "--format", "csv"]);
        assert_eq!(run.code, 2, "{name}: {}", run.output());
        assert!(run.stderr.contains("this is a tar archive: extract it (tar -xf)"), "{name}: {}", run.stderr);
    }
    let quoted = db.file("it's here.csv.lz", &[&b"LZIP\x01"[..], &noise[..]].concat());
    let run = db.load(&[quoted.to_str().unwrap(), "--table", "t", "--format", "csv"]);
    assert!(
        run.stderr.contains("(lzip -dc '") && run.stderr.contains("it'\\''s here.csv.lz' | sluice load - ...)"),
        "{}",
        run.stderr
    );
    let piped = [&b"LZIP\x01"[..], &noise[..]].concat();
    let run = sluice_with_stdin(&["load", "-", "--db", &db.conninfo(), "--table", "t", "--format", "csv"], &piped);
    assert_eq!(run.code, 2, "{}", run.output());
    assert!(
        run.stderr.contains("-: this is compressed with lzip") && run.stderr.contains("lzip -dc FILE |"),
        "{}",
        run.stderr
    );
    assert_eq!(db.count("t"), 0);
    // Text that starts with a magic number is text.
    let text = db.file("par.csv", b"PAR1,x\nPK,y\n");
    db.load(&[text.to_str().unwrap(), "--table", "t", "--format", "csv"]).assert_ok();
    assert_eq!(db.count("t"), 2);
}

/// stdin from a terminal (a forgotten pipe) is refused at once with what to
/// do instead, rather than waiting for typed data. `script` (util-linux)
/// gives sluice a terminal.
#[test]
fn stdin_from_a_terminal_is_refused() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int)");
    let command = format!("'{}' load - --table t --db '{}'", env!("CARGO_BIN_EXE_sluice"), db.conninfo());
    let mut script = std::process::Command::new("script");
    script.args(["-qec", &command, "/dev/null"]);
    let run = run_command(script);
    assert_eq!(run.code, 2, "{}", run.output());
    assert!(run.output().contains("-: stdin is a terminal, not data: pipe the data in"), "{}", run.output());
}

/// A database whose encoding is not UTF-8 gets the file's characters, not
/// its UTF-8 bytes read as that encoding: sluice's sessions speak UTF-8 (a
/// LATIN1 database stored `café` as `cafÃ©`), and a character the database
/// cannot hold is a reject that says so. A Latin-1 file loads the same.
#[test]
fn a_latin1_database_stores_the_files_characters() {
    let db = TestDb::new();
    let name = format!("{}_latin1", db.name);
    db.execute(&format!("CREATE DATABASE {name} ENCODING 'LATIN1' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'"));
    let conninfo = server().conninfo(&name);
    let session = sluice::sink::postgres::PgTarget::new(Some(&conninfo)).connect().unwrap();
    session.execute("CREATE TABLE t (id int, s text)").unwrap();
    let utf8 = db.file("words.tsv", "1\tcafé\n2\t日本\n3\tnaïve\n".as_bytes());
    let latin1 = db.file("latin1.tsv", b"4\tcaf\xe9\n");
    let rejects = db.dir.path().join("latin1.rejects.jsonl");
    let (utf8, latin1, rejects_arg) = (utf8.to_str().unwrap(), latin1.to_str().unwrap(), rejects.to_str().unwrap());
    let run = sluice(&["load", utf8, "--table", "t", "--db", &conninfo, "--rejects", rejects_arg]);
    assert_eq!(run.code, 1, "{}", run.output());
    sluice(&["load", latin1, "--table", "t", "--db", &conninfo, "--encoding", "latin1"]).assert_ok();
    let rows = session.query("SELECT id, s, octet_length(convert_to(s, 'LATIN1')) FROM t ORDER BY id", &[]).unwrap();
    let rows: Vec<String> =
        rows.iter().map(|r| r.iter().map(|v| v.clone().unwrap()).collect::<Vec<_>>().join(" ")).collect();
    assert_eq!(rows, ["1 café 4", "3 naïve 5", "4 café 4"]);
    let reject = std::fs::read_to_string(&rejects).unwrap();
    assert!(reject.contains("\"line\":2,") && reject.contains("has no equivalent in encoding"), "{reject}");
    // Ten suspects holding a character LATIN1 lacks: the value check's
    // statement fails as a whole, and isolation copies each alone instead.
    let mixed: String =
        (1..=30).map(|i| if i % 3 == 0 { format!("x日{i}\tbad\n") } else { format!("{i}\tok\n") }).collect();
    let mixed = db.file("mixed.tsv", mixed.as_bytes());
    let run = sluice(&["load", mixed.to_str().unwrap(), "--table", "t", "--db", &conninfo, "--rejects", rejects_arg]);
    assert_eq!(run.code, 1, "{}", run.output());
    assert_eq!(session.query("SELECT count(*) FROM t WHERE s = 'ok'", &[]).unwrap()[0][0].as_deref(), Some("20"));
    let lines: Vec<u64> = std::fs::read_to_string(&rejects)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, (1..=10).map(|i| 3 * i).collect::<Vec<u64>>());
}

/// A CSV header with a quote inside a value written without quotes
/// (`Size 5"`) opens a quoted value, as COPY reads it: the header ran on to
/// the line where another quote closed it, or to the end of the file, and
/// every line in between was skipped with it. Such a file loaded 0 rows
/// and exited 0. It is refused before anything loads, saying how to load
/// it; a header whose line break is inside a value quoted from its start
/// (a spreadsheet's two-line label) still loads.
#[test]
fn a_header_with_a_stray_quote_that_would_swallow_lines_is_refused() {
    let db = TestDb::new();
    db.execute("CREATE TABLE sizes (id int, size int, name text)");
    let never = db.file("never.csv", b"id,Size 5\",name\n1,2,a\n2,3,b\n");
    let later = db.file("later.csv", b"id,Size 5\",name\n1,2,a\n2,3,b\"\n3,4,c\n");
    for (file, runs) in [(&never, "runs to the end of the input"), (&later, "runs on to line 3")] {
        let run = db.load(&[file.to_str().unwrap(), "--table", "sizes", "--header"]);
        assert_eq!(run.code, 2, "{}", run.output());
        let said = format!(
            "its header's field 2 (in id,Size 5\",name) holds a quote inside a value written without \
                            quotes, which CSV reads as opening a quoted value: the header {runs}"
        );
        assert!(run.stderr.contains(&said), "{}", run.stderr);
        assert_eq!(db.count("sizes"), 0);
    }
    // The way out it names: the header line is rejected as a record.
    let run = db.load(&[never.to_str().unwrap(), "--table", "sizes", "--columns", "id,size,name"]);
    assert_eq!(run.code, 1, "{}", run.output());
    assert_eq!(db.scalar("SELECT string_agg(name, ',' ORDER BY id) FROM sizes"), "a,b");
    let label = db.file("label.csv", b"id,\"Size\n(cm)\",name\n7,8,c\n");
    db.load(&[label.to_str().unwrap(), "--table", "sizes", "--header"]).assert_ok();
    assert_eq!(db.scalar("SELECT size FROM sizes WHERE id = 7"), "8");
}

/// A file named twice, by a glob and its own name, or through a link,
/// loaded its rows twice without a word. It is refused before anything
/// loads, naming both names.
#[test]
fn a_file_named_twice_is_refused() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, v text)");
    let file = db.file("parts/a.csv", b"1,a\n2,b\n");
    let glob = format!("{}/*.csv", file.parent().unwrap().display());
    let link = db.dir.path().join("link.csv");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    for (first, second) in [(glob.as_str(), file.to_str().unwrap()), (file.to_str().unwrap(), link.to_str().unwrap())] {
        let run = db.load(&[first, second, "--table", "t"]);
        run.assert_refused(": named twice");
        assert_eq!(db.count("t"), 0);
    }
    let run = db.load(&[file.to_str().unwrap(), link.to_str().unwrap(), "--table", "t"]);
    assert!(run.stderr.contains(&format!("link.csv: named twice (also as {})", file.display())), "{}", run.stderr);
    db.load(&[&glob, "--table", "t"]).assert_ok();
    assert_eq!(db.count("t"), 2);
}

/// A file cut from a larger one keeps the header in its first part only
/// (`split -l`). With a first header of labels (not the columns' names),
/// `--header` skipped the first record of every other part as its header,
/// one row lost per file, exit 0. A later file's first line that is not
/// the first header (as fields, whatever their quoting, case and spaces)
/// is now refused before anything loads; the same labels still load.
#[test]
fn a_later_file_whose_first_line_is_not_the_first_files_labels_is_refused() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, size int, name text)");
    let first = db.file("parts/p1.csv", b"Identifier,Dimension,Label\n1,2,a\n2,3,b\n");
    let cut = db.file("parts/p2.csv", b"3,4,c\n4,5,d\n");
    let run = db.load(&[first.to_str().unwrap(), cut.to_str().unwrap(), "--table", "t", "--header"]);
    assert_eq!(run.code, 2, "{}", run.output());
    let said = "p2.csv: its first line (3,4,c), which --header skips as a header, is not the header of ";
    assert!(run.stderr.contains(said), "{}", run.stderr);
    assert_eq!(db.count("t"), 0);
    // After a header of the columns' names too.
    let named = db.file("parts/p0.csv", b"id,size,name\n0,1,z\n");
    let run = db.load(&[named.to_str().unwrap(), cut.to_str().unwrap(), "--table", "t", "--header"]);
    run.assert_refused(said);
    let same = db.file("parts/p3.csv", b"\"identifier\", Dimension ,LABEL\n5,6,e\n");
    db.load(&[first.to_str().unwrap(), same.to_str().unwrap(), "--table", "t", "--header"]).assert_ok();
    assert_eq!(db.scalar("SELECT string_agg(name, ',' ORDER BY id) FROM t"), "a,b,e");
}

/// The parts `split -l` cuts an export into: the first begins with the
/// header, the others with records. `--header=first-file` loads a later
/// part's first line as a record, and skips it where it repeats the
/// header; said at the start, per file. With `--columns`, `--header`
/// skipped each part's first record without a word (3 rows of 10,000 lost
/// in 4 parts, exit 0): such parts are now refused as they are without it.
#[test]
fn the_parts_split_cuts_load_every_record_with_header_first_file() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text, amount numeric)");
    db.file("parts/p0.csv", b"id,name,amount\n1,a,1.5\n2,b,2.5\n");
    db.file("parts/p1.csv", b"3,c,3.5\n4,d,4.5\n");
    db.file("parts/p2.csv", b"\"ID\", Name ,AMOUNT\n5,e,5.5\n");
    db.file("parts/p3.csv", b"bad,f,6.5\n7,g,7.5\n");
    let glob = db.dir.path().join("parts/*.csv").display().to_string();
    let columns = ["--columns", "id,name,amount"];
    let refused = "p1.csv: its first line (3,c,3.5), which --header skips as a header, is not the header of ";
    for extra in [&[][..], &columns[..]] {
        let run = db.load(&[&[glob.as_str(), "--table", "t", "--header"][..], extra].concat());
        run.assert_refused(refused);
        assert!(run.stderr.contains("Pass --header=first-file"), "{}", run.stderr);
        assert_eq!(db.count("t"), 0);
    }
    let run = db.load(&[&glob, "--table", "t", "--header=first-file"]);
    assert_eq!(run.code, 1, "one record rejected: {}", run.output());
    let said = run.stderr.lines().find(|l| l.contains("loading the first lines of")).unwrap_or_default();
    assert!(said.contains("p1.csv, ") && said.contains("p3.csv as records, as --header=first-file asks"), "{said}");
    assert!(!said.contains("p2.csv"), "p2.csv repeats the header: {said}");
    assert_eq!(db.scalar("SELECT string_agg(id::text, ',' ORDER BY id) FROM t"), "1,2,3,4,5,7");
    let rejected: Vec<_> = crate::util::rejected_lines(&db.dir.path().join("t.rejects.jsonl")).into_iter().collect();
    assert_eq!(rejected, [("p3.csv".to_string(), 1)], "the rejected record is line 1 of its part");
    // A part more: the others are left out, and only it is named.
    db.file("parts/p4.csv", b"8,h,8.5\n");
    let run = db.load(&[&glob, "--table", "t", "--header=first-file"]);
    run.assert_ok();
    let said = run.stderr.lines().find(|l| l.contains("loading the first line")).unwrap_or_default();
    assert!(said.contains("p4.csv as a record") && !said.contains("p1.csv"), "{}", run.stderr);
    assert_eq!(db.scalar("SELECT string_agg(id::text, ',' ORDER BY id) FROM t"), "1,2,3,4,5,7,8");
    // The same with --columns, and with a field left out by name; the flag
    // ahead of a file name takes no value from it.
    db.execute("TRUNCATE t");
    let run = db.load(&[&[&glob, "--table", "t", "--restart", "--header=first-file"][..], &columns[..]].concat());
    assert_eq!(run.code, 1, "{}", run.output());
    assert_eq!(db.count("t"), 7);
    db.execute("CREATE TABLE narrow (id int, amount numeric)");
    let run = db.load(&["--header=first-file", &glob, "--table", "narrow", "--skip-other-fields"]);
    assert_eq!(run.code, 1, "{}", run.output());
    assert_eq!(
        db.scalar("SELECT string_agg(id || ':' || amount, ',' ORDER BY id) FROM narrow"),
        "1:1.5,2:2.5,3:3.5,4:4.5,5:5.5,7:7.5,8:8.5"
    );
    // The parts out of their order: the header in the second file.
    db.file("swapped/a.csv", b"3,c,3.5\n");
    db.file("swapped/b.csv", b"id,name,amount\n1,a,1.5\n");
    let swapped = db.dir.path().join("swapped/*.csv").display().to_string();
    for extra in [&[][..], &columns[..]] {
        let run = db.load(&[&[&*swapped, "--table", "t", "--header=first-file"][..], extra].concat());
        run.assert_refused("b.csv: its first line (id,name,amount) names the table's columns, but the first file, ");
        assert!(run.stderr.contains("a.csv, begins with 3,c,3.5, which --header=first-file skips"), "{}", run.stderr);
    }
    assert_eq!(db.count("t"), 7);
    db.execute("CREATE TABLE each_file (id int, name text, amount numeric)");
    let first = db.dir.path().join("parts/p0.csv").display().to_string();
    db.load(&["--header", &first, "--table", "each_file"]).assert_ok();
    assert_eq!(db.count("each_file"), 2, "--header takes no value from the file name after it");
}

/// A table that does not exist: the refusal gives a `CREATE TABLE` the
/// first records fit (it said "create it first" alone), and that statement,
/// run as it is, makes a table the whole file loads into, row for row as
/// `psql \copy` loads it; for JSON lines, every document, none rejected.
#[test]
fn a_missing_table_is_refused_with_a_create_table_its_file_loads_into() {
    let db = TestDb::new();
    let mut csv = String::from("Order ID,Customer Name,Total $,Paid,Ordered At,Zip,Key,Day\n");
    for i in 0..3000u32 {
        let total = if i % 7 == 0 { String::new() } else { format!("{}.{:02}", i * 3, i % 100) };
        let paid = ["true", "false", ""][i as usize % 3];
        let at = if i % 2 == 0 {
            format!("2024-01-02 10:{:02}:00", i % 60)
        } else {
            format!("2024-01-03T0{}:00:00Z", i % 10)
        };
        let key = format!("{:08x}-0000-4000-8000-{:012x}", i, i * 7);
        csv.push_str(&format!(
            "{i},\"Name, {i}\",{total},{paid},{at},0{:04},{key},2024-02-{:02}\n",
            i % 9999,
            i % 28 + 1
        ));
    }
    let file = db.file("orders.csv", csv.as_bytes());
    let path = file.to_str().unwrap();
    let run = db.load(&[path, "--table", "fresh", "--header"]);
    run.assert_refused("table \"fresh\" does not exist (searched schemas: public)");
    let statement = |stderr: &str| stderr.split_once("fit this table: ").unwrap().1.lines().next().unwrap().to_string();
    let create = statement(&run.stderr);
    let want =
        "CREATE TABLE \"fresh\" (\"order_id\" bigint, \"customer_name\" text, \"total\" numeric, \"paid\" boolean, \
                \"ordered_at\" timestamptz, \"zip\" text, \"key\" uuid, \"day\" date);";
    assert_eq!(create, want);
    assert!(run.stderr.contains("The first 1,000 records of "), "{}", run.stderr);
    db.execute(&create);
    db.load(&[path, "--table", "fresh", "--header"]).assert_ok();
    db.execute("CREATE TABLE want (LIKE fresh)");
    db.psql_copy("want", &file, "with (format csv, header)");
    db.assert_same_rows("fresh", "want");
    assert_eq!(db.count("fresh"), 3000);
    // JSON lines: keys in the order the documents first have them.
    let docs: String = (0..500)
        .map(|i| {
            format!(
                "{{\"id\":{i},\"tags\":[\"a\",{i}],\"score\":{i}.5,\"seen\":\"2024-03-0{}\",\"ok\":{}}}\n",
                i % 9 + 1,
                i % 2 == 0
            )
        })
        .collect();
    let docs = db.file("docs.jsonl", docs.as_bytes());
    let run = db.load(&[docs.to_str().unwrap(), "--table", "fresh_docs"]);
    let create = statement(&run.stderr).split_once(" Or, for each document whole: ").unwrap().0.to_string();
    let want = "CREATE TABLE \"fresh_docs\" (\"id\" bigint, \"tags\" jsonb, \"score\" numeric, \"seen\" date, \"ok\" boolean);";
    assert_eq!(create, want);
    db.execute(&create);
    db.load(&[docs.to_str().unwrap(), "--table", "fresh_docs"]).assert_ok();
    assert_eq!(db.scalar("SELECT count(*) FROM fresh_docs WHERE tags->>1 = id::text AND ok = (id % 2 = 0)"), "500");
    // Or each document whole, into one jsonb column.
    let run = db.load(&[docs.to_str().unwrap(), "--table", "whole_docs"]);
    let whole = statement(&run.stderr).split_once(" Or, for each document whole: ").unwrap().1.to_string();
    assert_eq!(whole, "CREATE TABLE \"whole_docs\" (\"doc\" jsonb);");
    db.execute(&whole);
    db.load(&[docs.to_str().unwrap(), "--table", "whole_docs"]).assert_ok();
    assert_eq!(db.scalar("SELECT count(*) FROM whole_docs WHERE doc ? 'tags'"), "500");
}

/// The sketch reads records from across a plain file too, not only its
/// first 1,000: an export whose later records hold decimals and other
/// postcodes is sketched with the types that load all of it (the table so
/// made loads every record); a compressed file, which cannot be read
/// anywhere but from its start, by its first records, as it says.
#[test]
fn the_sketch_of_a_big_file_fits_records_from_across_it() {
    let db = TestDb::new();
    let mut csv = String::from("id,amount,zip,note\n");
    for i in 0..60_000u64 {
        let amount = if i < 45_000 { format!("{}", i % 997) } else { format!("{}.{:02}", i % 997, i % 100) };
        let zip = if i < 30_000 { format!("{}", 10_000 + i % 89_999) } else { "K1A 0B1".to_string() };
        csv.push_str(&format!("{i},{amount},{zip},\"line {i},\nof two\"\n"));
    }
    assert!(csv.len() > 2 << 20, "{} bytes: past the head and a block", csv.len());
    let file = db.file("export.csv", csv.as_bytes());
    let run = db.load(&[file.to_str().unwrap(), "--table", "fresh", "--header"]);
    let sketch = run.stderr.split_once("The first 1,000 records of ").expect(&run.stderr).1;
    let (read, create) = sketch.split_once(" fit this table: ").unwrap();
    let create = create.lines().next().unwrap();
    let across: u64 = read.split(" and ").nth(1).unwrap().split(' ').next().unwrap().replace(',', "").parse().unwrap();
    assert!(across >= 1_000, "{read}");
    let want = "CREATE TABLE \"fresh\" (\"id\" bigint, \"amount\" numeric, \"zip\" text, \"note\" text);";
    assert_eq!(create, want);
    db.execute(create);
    let loaded = db.load(&[file.to_str().unwrap(), "--table", "fresh", "--header"]);
    loaded.assert_ok();
    assert_eq!(
        db.scalar("SELECT count(*) || ' ' || count(*) FILTER (WHERE zip = 'K1A 0B1') FROM fresh"),
        "60000 30000"
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, csv.as_bytes()).unwrap();
    let packed = db.file("export.csv.gz", &gz.finish().unwrap());
    let run = db.load(&[packed.to_str().unwrap(), "--table", "packed", "--header"]);
    let first_only = "The first 1,000 records of ";
    assert!(run.stderr.contains(first_only) && run.stderr.contains(".gz fit this table"), "{}", run.stderr);
    assert!(run.stderr.contains("\"amount\" bigint, \"zip\" bigint"), "{}", run.stderr);
    // A glob of months: the later files' starts (after their headers) too.
    for month in 1..=12u64 {
        let amount = |i: u64| if month < 12 { format!("{i}") } else { format!("{i}.5") };
        let rows: String = (0..100).map(|i| format!("{i},{},2024-{month:02}-01\n", amount(i))).collect();
        db.file(&format!("months/m{month:02}.csv"), format!("id,amount,day\n{rows}").as_bytes());
    }
    let glob = db.dir.path().join("months/m*.csv");
    let run = db.load(&[glob.to_str().unwrap(), "--table", "monthly", "--header"]);
    let want = "and 800 from across the inputs fit this table: CREATE TABLE \"monthly\" (\"id\" bigint, \"amount\" \
                numeric, \"day\" date);";
    assert!(run.stderr.contains(want), "{}", run.stderr);
}

/// A spreadsheet's export, as Excel saves a US sheet: dates month first
/// with times, amounts with a dollar sign and commas, negative ones in
/// parentheses. The sketch reads the dates as the session's DateStyle does
/// (a timestamp where it is month first; where it is day first, a note
/// with the setting that reads them), and names the amounts' column with
/// the flags that read it; the table so made loads every value exactly.
#[test]
fn a_spreadsheets_dates_and_amounts_are_sketched_as_the_session_and_flags_read_them() {
    let db = TestDb::new();
    let mut csv = String::from("Order ID,Ordered,Amount\n");
    for i in 0..500u32 {
        let amount = format!("${},{:03}.{:02}", i + 1, i % 1000, i % 100);
        let amount = if i % 5 == 0 { format!("({amount})") } else { amount };
        csv.push_str(&format!("{i},{}/{}/2024 {}:05,\"{amount}\"\n", i % 12 + 1, i % 28 + 1, i % 24));
    }
    let file = db.file("sheet.csv", csv.as_bytes());
    let path = file.to_str().unwrap();
    let run = db.load(&[path, "--table", "sheet", "--header"]);
    let sketch = run.stderr.split_once("fit this table: ").expect(&run.stderr).1.lines().next().unwrap().to_string();
    let (create, note) = sketch.split_once("; ").unwrap();
    assert_eq!(create, "CREATE TABLE \"sheet\" (\"order_id\" bigint, \"ordered\" timestamp, \"amount\" text)");
    let want = "Column \"amount\" is text here, but holds numbers as --currency '$' --thousands ',' reads them \
                (\"($1,000.00)\"): with those flags, it loads as numeric.";
    assert_eq!(note, want);
    let day_first = format!("{} options='-c datestyle=ISO,DMY'", db.conninfo());
    let run = sluice(&["load", "--db", &day_first, path, "--table", "sheet", "--header"]);
    let want = "Column \"ordered\" is text here, but holds dates month first (\"1/13/2024 12:05\"): with \
                PGDATESTYLE='ISO, MDY' (or options='-c datestyle=ISO,MDY' in --db), it loads as timestamp.";
    assert!(run.stderr.contains(want), "{}", run.stderr);
    db.execute(&create.replace("\"amount\" text", "\"amount\" numeric"));
    db.load(&[path, "--table", "sheet", "--header", "--currency", "$", "--thousands", ","]).assert_ok();
    let wrong = "SELECT count(*) FROM sheet WHERE ordered <> make_timestamp(2024, (order_id % 12 + 1)::int, \
                 (order_id % 28 + 1)::int, (order_id % 24)::int, 5, 0) OR amount <> (CASE WHEN order_id % 5 = 0 THEN -1 ELSE 1 END) * ((order_id + 1) * \
                 1000 + order_id % 1000 + (order_id % 100) / 100.0)";
    assert_eq!((db.count("sheet"), db.scalar(wrong)), (500, "0".to_string()));
}

/// Excel's `sep=;` line before the header (some exports write it, for
/// Excel to split the fields): taken for the header, it named no column and
/// every record was rejected at the comma. Refused before anything loads,
/// with the flags that skip it and read the fields at its delimiter, which
/// load the file.
#[test]
fn an_excel_separator_line_is_refused_with_the_flags_that_skip_it() {
    let db = TestDb::new();
    db.execute("CREATE TABLE t (id int, name text, amount numeric)");
    let file = db.file("export.csv.gz", &gzip(b"\xEF\xBB\xBFsep=;\r\nid;name;amount\r\n1;a;1.5\r\n2;b,c;2\r\n"));
    let run = db.load(&[file.to_str().unwrap(), "--table", "t", "--header"]);
    let says = "export.csv.gz: its first line, sep=;, is a note for Excel of the file's delimiter, not a header or a \
                record: load it with --skip-lines 1 --delimiter ';'";
    run.assert_refused(says);
    assert_eq!(db.count("t"), 0);
    db.load(&[file.to_str().unwrap(), "--table", "t", "--header", "--skip-lines", "1", "--delimiter", ";"]).assert_ok();
    assert_eq!(
        db.scalar("SELECT string_agg(concat_ws(' ', id, name, amount), ', ' ORDER BY id) FROM t"),
        "1 a 1.5, 2 b,c 2"
    );
    // A first line that only begins so is data.
    let other = db.file("other.csv", b"sep=;x,y,1\n");
    let run = db.load(&[other.to_str().unwrap(), "--table", "t"]);
    assert_eq!(run.code, 1, "{}", run.output());
}
