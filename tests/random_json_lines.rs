//! Random JSON lines with random options, loaded by sluice and compared
//! with what `psql \copy` loads from the good lines in CSV mode with the
//! quote and delimiter no valid document holds raw (the field reports'
//! trick): every document arrives byte for byte (json) or as the server
//! reads it (jsonb), whatever escapes it holds, and exactly the bad lines
//! are rejected, among them lines holding those two raw bytes.

use std::collections::BTreeSet;

use crate::util::{fuzz_seed, CaseInputs, Rng, TestDb};

/// Cases per run; `FUZZ_SEED=N` explores others.
const CASES: usize = 6;

/// How psql loads a file of one document per line, byte for byte.
const PSQL_OPTIONS: &str = "with (format csv, quote e'\\x01', delimiter e'\\x02')";

#[test]
fn random_json_lines_load_byte_for_byte_and_reject_exactly_the_bad_lines() {
    let mut rng = Rng(fuzz_seed());
    let db = TestDb::new();
    for case in 0..CASES {
        let options = Options::random(&mut rng);
        check_case(&db, &mut rng, case, &options);
    }
}

/// The documents' column and how sluice loads them.
#[derive(Debug)]
struct Options {
    jsonb: bool,
    /// The table has other columns, and `--columns` names the documents'.
    other_columns: bool,
    crlf: bool,
    /// A UTF-8 byte-order mark at each file's start (sluice skips it).
    bom: bool,
    files: usize,
    /// The first file goes through stdin (`-`).
    stdin: bool,
    chunk_size: &'static str,
    workers: &'static str,
    copy_format: &'static str,
}

impl Options {
    fn random(rng: &mut Rng) -> Options {
        Options {
            jsonb: rng.below(2) == 0,
            other_columns: rng.below(2) == 0,
            crlf: rng.below(3) == 0,
            bom: rng.below(4) == 0,
            files: 1 + rng.below(3) as usize,
            stdin: rng.below(4) == 0,
            chunk_size: rng.pick(&["1KiB", "4KiB", "64KiB"]),
            workers: rng.pick(&["1", "2", "3", "auto"]),
            copy_format: rng.pick(&["auto", "text", "binary"]),
        }
    }

    fn table(&self) -> String {
        let doc = if self.jsonb { "doc jsonb" } else { "doc json" };
        match self.other_columns {
            true => format!("id bigserial, {doc}, note text DEFAULT 'default'"),
            false => doc.to_string(),
        }
    }

    fn flags(&self) -> Vec<&'static str> {
        let mut flags = vec!["--format", "jsonl", "--chunk-size", self.chunk_size, "--workers", self.workers];
        flags.extend(["--copy-format", self.copy_format]);
        if self.other_columns {
            flags.extend(["--columns", "doc"]);
        }
        flags
    }
}

/// A random JSON value, nested at most `depth` deeper, with random
/// whitespace between its tokens.
fn value(rng: &mut Rng, depth: u32) -> Vec<u8> {
    let space = |rng: &mut Rng| rng.pick(&["", "", "", " ", "  ", "\t"]).as_bytes().to_vec();
    match rng.below(if depth == 0 { 5 } else { 7 }) {
        0 => rng.pick(&["0", "-0", "12", "-3.5", "1e10", "2.5E-3", "123456789012345678901234567890", "0.1000"]).into(),
        1 => rng.pick(&["true", "false", "null"]).into(),
        2..=4 => string(rng),
        5 => {
            let items: Vec<Vec<u8>> = (0..rng.below(4)).map(|_| value(rng, depth - 1)).collect();
            let mut out = b"[".to_vec();
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend(space(rng));
                out.extend(item);
            }
            out.extend(space(rng));
            out.push(b']');
            out
        }
        _ => object(rng, depth - 1),
    }
}

/// A random object: every document is one, so a document cut short is
/// never valid.
fn object(rng: &mut Rng, depth: u32) -> Vec<u8> {
    let mut out = b"{".to_vec();
    for i in 0..rng.below(4) {
        if i > 0 {
            out.push(b',');
        }
        out.extend(rng.pick(&["", " "]).as_bytes());
        out.extend(string(rng));
        out.extend(rng.pick(&[":", " : "]).as_bytes());
        out.extend(value(rng, depth));
    }
    out.push(b'}');
    out
}

/// A random JSON string: escapes of every kind, and raw non-ASCII text.
fn string(rng: &mut Rng) -> Vec<u8> {
    let parts = [
        "plain",
        "two words",
        "\\\\",
        "\\\"",
        "\\t",
        "\\n",
        "\\r",
        "\\/",
        "\\b\\f",
        "\\u00e9",
        "\\u65e5",
        "\\ud83d\\ude00",
        "é",
        "日本",
        ",",
        "'",
        "\\\\N",
        "\\\\.",
        "NULL",
        "",
    ];
    let mut out = b"\"".to_vec();
    for _ in 0..rng.below(4) {
        out.extend(rng.pick(&parts).as_bytes());
    }
    out.push(b'"');
    out
}

/// One line: a document, or now and then a line the server refuses (as
/// json, or only as jsonb), and whether it is bad.
fn line(rng: &mut Rng, options: &Options) -> (Vec<u8>, bool) {
    let mut doc = object(rng, 3);
    if doc.len() == 2 {
        doc = b"{\"k\":1}".to_vec();
    }
    if rng.below(30) != 0 {
        return (doc, false);
    }
    let inside_a_string = |doc: &[u8], raw: &[u8]| {
        let mut spoiled = b"{\"raw\":\"a".to_vec();
        spoiled.extend(raw);
        spoiled.extend(b"b\",\"rest\":");
        spoiled.extend(doc);
        spoiled.push(b'}');
        spoiled
    };
    let bad = match rng.below(if options.jsonb { 11 } else { 9 }) {
        0 => doc[..doc.len() - 1].to_vec(),
        1 => inside_a_string(&doc, b"\x01"),
        2 => inside_a_string(&doc, b"\x02"),
        3 => inside_a_string(&doc, b"\t"),
        4 => inside_a_string(&doc, b"\xff"),
        5 => Vec::new(),
        6 => b"   ".to_vec(),
        7 => b"\\.".to_vec(),
        8 => [doc.as_slice(), b" trailing"].concat(),
        9 => inside_a_string(&doc, b"\\u0000"),
        _ => inside_a_string(&doc, b"\\ud800"),
    };
    (bad, true)
}

/// Writes the case's files, loads them with sluice, loads their good lines
/// with psql, and compares the documents, the rejects and the counts.
fn check_case(db: &TestDb, rng: &mut Rng, case: usize, options: &Options) {
    let context = format!("case {case} (FUZZ_SEED={}): {options:?}", fuzz_seed());
    let table = options.table();
    db.execute(&format!("DROP TABLE IF EXISTS got, want; CREATE TABLE got ({table}); CREATE TABLE want ({table})"));
    let end: &[u8] = if options.crlf { b"\r\n" } else { b"\n" };
    let (mut inputs, mut good, mut bad_lines) = (CaseInputs::default(), Vec::new(), BTreeSet::new());
    let mut lines = 0;
    for file in 0..options.files {
        let through_stdin = options.stdin && file == 0;
        let name = match through_stdin {
            true => "-".to_string(),
            false => format!("docs{case}-{file}.jsonl"),
        };
        let mut bytes = if options.bom { "\u{feff}".as_bytes().to_vec() } else { Vec::new() };
        for number in 1..=100 + rng.below(600) as usize {
            lines += 1;
            let (line, bad) = line(rng, options);
            if bad {
                bad_lines.insert((name.clone(), number));
            } else {
                good.extend(&line);
                good.extend(end);
            }
            bytes.extend(line);
            bytes.extend(end);
        }
        inputs.add(db, rng, &name, bytes);
    }
    let flags: Vec<String> = options.flags().into_iter().map(String::from).collect();
    let rejected = inputs.load(db, &format!("docs{case}.rejects.jsonl"), &flags, !bad_lines.is_empty(), &context);
    let good_file = db.file(&format!("docs{case}-good"), &good);
    db.psql_copy("want (doc)", &good_file, PSQL_OPTIONS);
    let differ = db.scalar(
        "SELECT count(*) FROM ((SELECT doc::text FROM got EXCEPT ALL SELECT doc::text FROM want) \
         UNION ALL (SELECT doc::text FROM want EXCEPT ALL SELECT doc::text FROM got)) d",
    );
    assert_eq!(differ, "0", "{context}: sluice's documents differ from psql's load of the good lines");
    assert_eq!(db.count("got") + bad_lines.len() as u64, lines as u64, "{context}");
    assert_eq!(rejected, bad_lines, "{context}: the rejects are not the bad lines");
}
