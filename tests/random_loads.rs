//! Random files with random options, loaded by sluice and compared with
//! what `psql \copy` loads from their good records: every part of a load at
//! once (format options, headers (in the first file only, too), lines of
//! title above them (`--skip-lines`), the first records only (`--limit`),
//! some columns
//! in any order named by the header or `--columns`, defaults, line ends,
//! encodings, several files,
//! stdin, gzip, bzip2, chunk sizes, workers, binary and text plans, a table with a
//! key, an index, a CHECK and triggers, isolation of bad records, the key's
//! merge of `--on-conflict-do-update`), where the
//! other tests take one at a time. Its first runs
//! found two bugs where parts meet that every test of one part passed: a
//! header read without its `--escape` loaded by position, into the wrong
//! columns, and a record of the wrong width whose quoted field held a line
//! end was rejected as two, blaming a quote.

use std::collections::BTreeSet;

use crate::util::{fuzz_seed, CaseInputs, Rng, TestDb};

/// Every column has a default, for files that leave it out.
const COLUMNS: &str = "id int, amount numeric(12,2) DEFAULT 1.5, day date DEFAULT '2000-01-02', \
     at timestamp DEFAULT '2000-01-02 03:04:05', note text DEFAULT 'default note', flag boolean DEFAULT true, \
     big bigint DEFAULT 7";
const NAMES: [&str; 7] = ["id", "amount", "day", "at", "note", "flag", "big"];

/// A CHECK that refuses a value only the server knows to be bad
/// (isolation must find it from the server's error alone), a primary key
/// and a secondary index.
const CONSTRAINTS: &str = "ALTER TABLE {t} ADD CHECK (big IS DISTINCT FROM 4242); \
    ALTER TABLE {t} ADD PRIMARY KEY (id); CREATE INDEX ON {t} (big)";

/// A trigger that refuses a value and rewrites a column. With it, keys and
/// constraints stay in place; without it the key is deferred on the empty
/// table, and its violations are found after the load.
const TRIGGER: &str = "CREATE TRIGGER {t}_note BEFORE INSERT ON {t} FOR EACH ROW EXECUTE FUNCTION note_check()";
const NOTE_CHECK: &str = "CREATE FUNCTION note_check() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
    IF NEW.note = 'refuse me' THEN RAISE EXCEPTION 'note refused'; END IF; \
    NEW.note := upper(NEW.note); RETURN NEW; END $$";

/// Cases per run; `FUZZ_SEED=N` explores others.
const CASES: usize = 6;

#[test]
fn random_files_load_what_psql_loads_and_reject_exactly_the_bad_records() {
    let mut rng = Rng(fuzz_seed());
    let db = TestDb::new();
    // The dates and timestamps written month first read so.
    db.execute(
        "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET DateStyle = ''ISO, MDY''', current_database()); END $$",
    );
    db.execute(NOTE_CHECK);
    for case in 0..CASES {
        let options = Options::random(&mut rng);
        check_case(&db, &mut rng, case, &options);
    }
}

/// A file format and how sluice loads it.
#[derive(Debug)]
struct Options {
    csv: bool,
    delimiter: char,
    quote: char,
    escape: char,
    null: &'static str,
    header: bool,
    /// `--header=first-file`: the files after the first begin with the
    /// header or not, at random (the parts `split -l` cuts).
    header_in_first_file: bool,
    /// The file's columns, as indexes into [`NAMES`]: all or some (always
    /// `id`, the key), in the table's order or another, named by the
    /// header (sluice loads by name) or by `--columns`.
    order: Vec<usize>,
    /// `--columns` names the file's columns (it must when they are not all
    /// the table's in its order and no header names them).
    columns_flag: bool,
    /// The table has [`CONSTRAINTS`].
    constraints: bool,
    /// The table has [`TRIGGER`].
    trigger: bool,
    /// csv: `--force-null` and `--force-not-null` columns.
    force_null: Vec<&'static str>,
    force_not_null: Vec<&'static str>,
    crlf: bool,
    /// `--encoding` and PostgreSQL's name for it (`None`: UTF-8).
    encoding: Option<(&'static str, &'static str)>,
    /// A UTF-8 byte-order mark before the header (sluice skips it).
    bom: bool,
    /// `--skip-lines`: lines of title above each file's header or first
    /// record, of random text (quotes, escapes, delimiters).
    lines_above: u64,
    /// `--limit`: only the first records of the files, in order, load.
    limit: Option<usize>,
    files: usize,
    /// The first file goes through stdin (`-`).
    stdin: bool,
    chunk_size: &'static str,
    workers: &'static str,
    copy_format: &'static str,
    /// `--on-conflict-do-update` into the table with its key (each id is
    /// new: it loads what a plain load does, every chunk merged from a
    /// staging table).
    replace: bool,
}

impl Options {
    fn random(rng: &mut Rng) -> Options {
        let csv = rng.below(2) == 0;
        let delimiter = match csv {
            true => rng.pick(&[",", ",", ";", "|", "\t"]),
            false => rng.pick(&["\t", "\t", "|", ","]),
        };
        let quote = if csv && rng.below(4) == 0 { '\'' } else { '"' };
        let escape = if csv && rng.below(4) == 0 { '\\' } else { quote };
        let null = match csv {
            true => rng.pick(&["", "", "NULL", "\\N"]),
            false => rng.pick(&["\\N", "\\N", "NULL"]),
        };
        let header = rng.below(2) == 0;
        let mut order: Vec<usize> = (0..NAMES.len()).collect();
        if rng.below(3) == 0 {
            order.retain(|&i| i == 0 || rng.below(2) == 0);
            if order.len() == 1 {
                order.push(1 + rng.below(NAMES.len() as u64 - 1) as usize);
            }
        }
        if rng.below(3) == 0 {
            for i in (1..order.len()).rev() {
                order.swap(i, rng.below(i as u64 + 1) as usize);
            }
        }
        let every_column_in_order = order.iter().copied().eq(0..NAMES.len());
        let columns_flag = (!header && !every_column_in_order) || rng.below(4) == 0;
        let present: Vec<&'static str> = order.iter().map(|&i| NAMES[i]).collect();
        let some = |rng: &mut Rng, names: &[&'static str]| -> Vec<&'static str> {
            names.iter().copied().filter(|name| csv && present.contains(name) && rng.below(3) == 0).collect()
        };
        let encoding = match rng.below(5) {
            0 => Some(("latin1", "LATIN1")),
            1 => Some(("windows-1252", "WIN1252")),
            _ => None,
        };
        Options {
            encoding,
            bom: header && encoding.is_none() && rng.below(4) == 0,
            lines_above: 0,
            limit: None,
            stdin: rng.below(4) == 0,
            csv,
            delimiter: delimiter.chars().next().unwrap(),
            quote,
            escape,
            null,
            header,
            header_in_first_file: false,
            order,
            columns_flag,
            constraints: rng.below(2) == 0,
            force_null: some(rng, &["note", "amount", "day"]),
            force_not_null: some(rng, &["note"]),
            crlf: rng.below(3) == 0,
            files: 1 + rng.below(3) as usize,
            chunk_size: rng.pick(&["1KiB", "4KiB", "16KiB", "1MiB"]),
            workers: rng.pick(&["1", "2", "3", "auto"]),
            copy_format: rng.pick(&["auto", "auto", "text", "binary"]),
            trigger: rng.below(2) == 0,
            replace: false,
        }
        .with_header_in_first_file(rng)
        .replacing_sometimes(rng)
        .with_lines_above_sometimes(rng)
        .with_a_limit_sometimes(rng)
    }

    /// Some loads of the files' first records only (`--limit`), ending in
    /// any file.
    fn with_a_limit_sometimes(self, rng: &mut Rng) -> Options {
        let limit = (rng.below(5) == 0).then(|| 1 + rng.below(self.files as u64 * 600) as usize);
        Options { limit, ..self }
    }

    /// Some loads of files with lines of title above the data, which
    /// `--skip-lines` skips (with `--header=first-file`, above the first
    /// file's alone).
    fn with_lines_above_sometimes(self, rng: &mut Rng) -> Options {
        let lines_above = match rng.below(4) {
            0 => 1 + rng.below(3),
            _ => 0,
        };
        Options { lines_above, ..self }
    }

    /// Some loads into the table with its key by `--on-conflict-do-update`.
    fn replacing_sometimes(self, rng: &mut Rng) -> Options {
        let replace = self.constraints && rng.below(3) == 0;
        Options { replace, ..self }
    }

    /// Some loads of several files with a header under `--header=first-file`.
    fn with_header_in_first_file(self, rng: &mut Rng) -> Options {
        let header_in_first_file = self.header && self.files > 1 && rng.below(3) == 0;
        Options { header_in_first_file, ..self }
    }

    /// sluice's flags for these options.
    fn flags(&self) -> Vec<String> {
        let mut flags = vec!["--format".to_string(), if self.csv { "csv" } else { "tsv" }.to_string()];
        flags.extend(["--delimiter".to_string(), self.delimiter.to_string(), "--null".into(), self.null.into()]);
        if self.csv {
            flags.extend(["--quote".to_string(), self.quote.to_string(), "--escape".into(), self.escape.to_string()]);
        }
        if let Some(limit) = self.limit {
            flags.extend(["--limit".to_string(), limit.to_string()]);
        }
        if self.lines_above > 0 {
            flags.extend(["--skip-lines".to_string(), self.lines_above.to_string()]);
        }
        match (self.header, self.header_in_first_file) {
            (true, true) => flags.push("--header=first-file".into()),
            (true, false) => flags.push("--header".into()),
            _ => {}
        }
        if self.columns_flag {
            flags.extend(["--columns".to_string(), self.names().join(",")]);
        }
        for (flag, columns) in [("--force-null", &self.force_null), ("--force-not-null", &self.force_not_null)] {
            if !columns.is_empty() {
                flags.extend([flag.to_string(), columns.join(",")]);
            }
        }
        flags.extend(["--chunk-size".into(), self.chunk_size.into(), "--workers".into(), self.workers.into()]);
        flags.extend(["--copy-format".to_string(), self.copy_format.to_string()]);
        if let Some((name, _)) = self.encoding {
            flags.extend(["--encoding".to_string(), name.to_string()]);
        }
        if self.replace {
            flags.push("--on-conflict-do-update".into());
        }
        flags
    }

    /// The file's column names, in its order.
    fn names(&self) -> Vec<&'static str> {
        self.order.iter().map(|&i| NAMES[i]).collect()
    }

    /// `psql \copy`'s options for a file of these options without a header.
    fn psql_options(&self) -> String {
        let literal = |c: &str| format!("E'{}'", c.replace('\\', "\\\\").replace('\'', "\\'").replace('\t', "\\t"));
        let mut options = vec![
            format!("format {}", if self.csv { "csv" } else { "text" }),
            format!("delimiter {}", literal(&self.delimiter.to_string())),
            format!("null {}", literal(self.null)),
        ];
        if self.csv {
            options.push(format!("quote {}", literal(&self.quote.to_string())));
            options.push(format!("escape {}", literal(&self.escape.to_string())));
        }
        for (option, columns) in [("force_null", &self.force_null), ("force_not_null", &self.force_not_null)] {
            if !columns.is_empty() {
                options.push(format!("{option} ({})", columns.join(", ")));
            }
        }
        if let Some((_, postgres_name)) = self.encoding {
            options.push(format!("encoding '{postgres_name}'"));
        }
        format!("with ({})", options.join(", "))
    }

    /// The file's bytes for `text`: UTF-8, or one byte a character in a
    /// single-byte encoding (the notes hold only characters it has).
    fn bytes(&self, text: &str) -> Vec<u8> {
        match self.encoding {
            None => text.as_bytes().to_vec(),
            Some(_) => text.chars().map(|c| u8::try_from(u32::from(c)).expect("a Latin-1 character")).collect(),
        }
    }

    /// One field as the file writes it.
    fn field(&self, rng: &mut Rng, value: Option<&str>) -> String {
        let Some(value) = value else { return self.null.to_string() };
        if !self.csv {
            return self.escaped(value);
        }
        let needs_quotes = value.is_empty()
            || value == self.null
            || value.contains([self.delimiter, self.quote, self.escape, '\r', '\n']);
        if !needs_quotes && rng.below(5) > 0 {
            return value.to_string();
        }
        let mut quoted = String::from(self.quote);
        for c in value.chars() {
            if c == self.quote || c == self.escape {
                quoted.push(self.escape);
            }
            quoted.push(c);
        }
        quoted.push(self.quote);
        quoted
    }

    /// A text-format value with its backslashes, delimiter and line ends
    /// escaped; one equal to the NULL string escapes its first letter.
    fn escaped(&self, value: &str) -> String {
        let mut out = String::new();
        for c in value.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c == self.delimiter => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            }
        }
        if out == self.null {
            out.insert(0, '\\');
        }
        out
    }
}

/// A record of the file: its fields as written, and whether the server
/// refuses it.
struct Record {
    text: String,
    bad: bool,
}

/// One record's values, good or, now and then, one the server refuses.
fn record(rng: &mut Rng, options: &Options, id: usize) -> Record {
    let wide = if options.encoding.is_some() { "ß" } else { "日本" };
    let note_parts =
        ["plain", "two words", ",", ";", "|", "\t", "\"", "'", "\\", "\n", "\r\n", "é", wide, "NULL", "\\N", ""];
    let note: String = (0..rng.below(4)).map(|_| rng.pick(&note_parts)).collect();
    let nullable = |rng: &mut Rng, value: String| if rng.below(12) == 0 { None } else { Some(value) };
    let (year, month, day) = (1900 + rng.below(200), 1 + rng.below(12), 1 + rng.below(28));
    let day_text = match rng.below(4) {
        0 => format!("{month}/{day}/{year}"),
        1 => format!("{year}-{month}-{day}"),
        _ => format!("{year:04}-{month:02}-{day:02}"),
    };
    let (hour, minute, second) = (rng.below(24), rng.below(60), rng.below(60));
    let at = match rng.below(3) {
        0 => format!("{month}/{day}/{year} {}:{minute:02} {}", (hour + 11) % 12 + 1, ["AM", "PM"][hour as usize / 12]),
        _ => format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02}"),
    };
    let amount = format!("{}{}.{:02}", rng.pick(&["", "-"]), rng.below(1_000_000), rng.below(100));
    let flag = rng.pick(&["t", "f", "true", "false", "yes", "no"]).to_string();
    let big = (rng.next() as i64 / 3).to_string();
    let mut values = vec![Some(id.to_string())];
    for value in [amount, day_text, at, note, flag, big] {
        values.push(nullable(rng, value));
    }
    let bad = rng.below(40) == 0;
    let spoil = match bad {
        true => {
            let ways: Vec<u64> = (0..14).filter(|&way| spoilable(options, way)).collect();
            ways[rng.below(ways.len() as u64) as usize]
        }
        false => u64::MAX,
    };
    match spoil {
        0 => values[6] = Some("99999999999999999999".into()),
        1 => values[2] = Some("2023-02-29".into()),
        2 => values[1] = Some("12.3.4".into()),
        3 => values[5] = Some("maybe".into()),
        4 => values[4] = Some("nul \0 byte".into()),
        7 => values[6] = Some("4242".into()),
        8 => values[4] = Some("refuse me".into()),
        9 => values[1] = Some(rng.pick(&["1,234.50", "$5", "12,5"]).to_string()),
        10 => values[2] = Some(format!("{}/{month}/{year}", 13 + rng.below(19))),
        11 => values[3] = Some(format!("{year:04}-{month:02}-{day:02} {}:{minute:02}", 25 + rng.below(9))),
        // A spreadsheet's serial day, a year alone; epoch milliseconds.
        12 => values[2] = Some(rng.pick(&["45321", "2024", "12 %"]).to_string()),
        13 => values[3] = Some((1_600_000_000_000 + rng.below(100_000_000_000)).to_string()),
        _ => {}
    }
    let mut values: Vec<Option<String>> = options.order.iter().map(|&i| values[i].clone()).collect();
    match spoil {
        5 => values.truncate(values.len() - 1),
        6 => values.push(Some("extra".into())),
        _ => {}
    }
    let fields: Vec<String> = values.iter().map(|v| options.field(rng, v.as_deref())).collect();
    Record { text: fields.join(&options.delimiter.to_string()), bad }
}

/// Whether a record of these options can be bad in the way numbered
/// `way` in [`record`]: the column it spoils is in the file (ways 5 and 6,
/// a field too few or too many, spoil none), way 7 needs [`CONSTRAINTS`]
/// and way 8 [`TRIGGER`].
fn spoilable(options: &Options, way: u64) -> bool {
    let column = [
        Some(6),
        Some(2),
        Some(1),
        Some(5),
        Some(4),
        None,
        None,
        Some(6),
        Some(4),
        Some(1),
        Some(2),
        Some(3),
        Some(2),
        Some(3),
    ][way as usize];
    column.map_or(true, |column| options.order.contains(&column))
        && (way != 7 || options.constraints)
        && (way != 8 || options.trigger)
}

/// Writes the case's files, loads them with sluice, loads their good
/// records with psql, and compares the tables, the rejects and the counts.
fn check_case(db: &TestDb, rng: &mut Rng, case: usize, options: &Options) {
    let context = format!("case {case} (FUZZ_SEED={}): {options:?}", fuzz_seed());
    db.execute(&format!(
        "DROP TABLE IF EXISTS got, want; CREATE TABLE got ({COLUMNS}); CREATE TABLE want (LIKE got INCLUDING DEFAULTS)"
    ));
    for (wanted, sql) in [(options.constraints, CONSTRAINTS), (options.trigger, TRIGGER)] {
        for table in ["got", "want"].iter().filter(|_| wanted) {
            db.execute(&sql.replace("{t}", table));
        }
    }
    let end = if options.crlf { "\r\n" } else { "\n" };
    let (mut inputs, mut good, mut bad_lines) = (CaseInputs::default(), String::new(), BTreeSet::new());
    let (mut id, mut records) = (0, 0);
    for file in 0..options.files {
        let mut text = String::new();
        let mut line = 1;
        let through_stdin = options.stdin && file == 0;
        let name = match through_stdin {
            true => "-".to_string(),
            false => format!("case{case}-{file}.{}", if options.csv { "csv" } else { "tsv" }),
        };
        let header = options.header && (file == 0 || !options.header_in_first_file || rng.below(2) == 0);
        if options.bom && header {
            text.push('\u{feff}');
        }
        let titled = file == 0 || !options.header_in_first_file;
        for _ in 0..options.lines_above * u64::from(titled) {
            text.push_str(&title_line(rng, options.delimiter));
            text.push_str(end);
            line += 1;
        }
        if header {
            text.push_str(&options.names().join(&options.delimiter.to_string()));
            text.push_str(end);
            line += 1;
        }
        for _ in 0..200 + rng.below(800) {
            id += 1;
            records += 1;
            let record = record(rng, options, id);
            let written = record.text.replace('\n', end).replace("\r\r\n", "\r\n");
            if options.limit.is_some_and(|limit| records > limit) {
                // Past the limit: not read.
            } else if record.bad {
                bad_lines.insert((name.clone(), line));
            } else {
                good.push_str(&written);
                good.push_str(end);
            }
            line += written.matches('\n').count() + 1;
            text.push_str(&written);
            text.push_str(end);
        }
        inputs.add(db, rng, &name, options.bytes(&text));
    }
    let rejected =
        inputs.load(db, &format!("case{case}.rejects.jsonl"), &options.flags(), !bad_lines.is_empty(), &context);
    let good_file = db.file(&format!("case{case}-good"), &options.bytes(&good));
    db.psql_copy(&format!("want ({})", options.names().join(", ")), &good_file, &options.psql_options());
    let differ = db.scalar(
        "SELECT count(*) FROM ((SELECT x::text FROM got x EXCEPT ALL SELECT y::text FROM want y) \
         UNION ALL (SELECT y::text FROM want y EXCEPT ALL SELECT x::text FROM got x)) d",
    );
    assert_eq!(differ, "0", "{context}: sluice's table differs from psql's load of the good records");
    let read = options.limit.map_or(records, |limit| records.min(limit));
    assert_eq!(db.count("got") + bad_lines.len() as u64, read as u64, "{context}");
    assert_eq!(rejected, bad_lines, "{context}: the rejects are not the bad records");
}

/// A line of title or notes above the data: what a record cannot be
/// (quotes left open, escapes before the line end, the delimiter), or
/// nothing.
fn title_line(rng: &mut Rng, delimiter: char) -> String {
    let delimiter = delimiter.to_string();
    let parts = ["Export", " ", "\"", "'", "\\", &delimiter, "2026-11-30", "N/A", "\\N", "é"];
    (0..rng.below(8)).map(|_| rng.pick(&parts)).collect()
}

/// A random value of one kind, as an export writes it.
type ValueOf = fn(&mut Rng) -> String;

/// The `CREATE TABLE` a missing table's refusal gives, for random columns
/// of each kind it guesses (values written as exports write them: signs,
/// spaces, case, empty fields), makes a table its file loads into with no
/// record rejected, each column of the kind its values were drawn from.
#[test]
fn the_create_table_a_missing_table_suggests_loads_every_sampled_record() {
    let mut rng = Rng(fuzz_seed() ^ 0x5ce7c4);
    let kinds: [(&str, ValueOf); 10] = [
        ("bigint", |r| format!("{}{}", r.pick(&["", "-", "+", " "]), r.below(1 << 40))),
        ("numeric", |r| format!("{}{}.{}", r.pick(&["", "-"]), r.below(100_000), r.below(100))),
        ("boolean", |r| r.pick(&["true", "FALSE", "t", "f", "yes", "No"]).to_string()),
        ("date", |r| format!("20{:02}-{:02}-{:02}", r.below(50), r.below(12) + 1, r.below(28) + 1)),
        ("timestamp without time zone", |r| {
            format!(
                "2024-0{}-1{} {:02}:{:02}:{:02}",
                r.below(9) + 1,
                r.below(10),
                r.below(24),
                r.below(60),
                r.below(60)
            )
        }),
        ("timestamp with time zone", |r| {
            format!("2024-03-0{}T1{}:00:00{}", r.below(9) + 1, r.below(10), r.pick(&["Z", "+02:00", "-0530"]))
        }),
        ("time without time zone", |r| format!("{}:{:02}:{:02}", r.below(24), r.below(60), r.below(60))),
        ("uuid", |r| {
            format!(
                "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
                r.next() as u32,
                r.below(1 << 16),
                r.below(4096),
                r.below(4096),
                r.below(1 << 48)
            )
        }),
        ("text", |r| r.pick(&["plain", "two words", "007", "\"a, b\"", "\"1,5\"", "N/A", "2024-13-01"]).to_string()),
        ("text", |r| format!("{}x", r.below(10))),
    ];
    for case in 0..4 {
        let db = TestDb::new();
        let columns: Vec<usize> = (0..1 + rng.below(8)).map(|_| rng.below(kinds.len() as u64) as usize).collect();
        let header: Vec<String> = (0..columns.len()).map(|i| format!("Col {i}")).collect();
        let mut csv = header.join(",") + "\n";
        for _ in 0..300 {
            let fields: Vec<String> = columns
                .iter()
                .map(|&k| if rng.below(10) == 0 { String::new() } else { (kinds[k].1)(&mut rng) })
                .collect();
            csv.push_str(&(fields.join(",") + "\n"));
        }
        let file = db.file("random.csv", csv.as_bytes());
        let context = format!("case {case} (FUZZ_SEED={}):\n{}", fuzz_seed(), &csv[..csv.len().min(400)]);
        let run = db.load(&[file.to_str().unwrap(), "--table", "suggested", "--header"]);
        let create = run.stderr.split_once("fit this table: ").expect(&context).1.lines().next().unwrap();
        db.execute(create);
        let loaded = db.load(&[file.to_str().unwrap(), "--table", "suggested", "--header"]);
        let rejects = std::fs::read_to_string(db.dir.path().join("suggested.rejects.jsonl")).unwrap_or_default();
        assert_eq!(loaded.code, 0, "{create}\n{}\n{rejects}\n{context}", loaded.output());
        assert_eq!(db.count("suggested"), 300, "{context}");
        for (i, &k) in columns.iter().enumerate() {
            let ty = db.scalar(&format!(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute \
                 WHERE attrelid = 'suggested'::regclass AND attname = 'col_{i}'"
            ));
            let values = db.scalar(&format!("SELECT count(col_{i}) FROM suggested"));
            let want = if values == "0" { "text" } else { kinds[k].0 };
            assert_eq!(ty, want, "column {i}: {create}\n{context}");
        }
    }
}
