//! Random JSON lines with random options, loaded by sluice and compared
//! with what `psql \copy` loads from the good lines in CSV mode with the
//! quote and delimiter no valid document holds raw (the field reports'
//! trick): every document arrives byte for byte (json) or as the server
//! reads it (jsonb), whatever escapes it holds, and exactly the bad lines
//! are rejected, among them lines holding those two raw bytes. Documents
//! whose keys name typed columns load as the server takes the good ones
//! apart.

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

/// A case's inputs: the good lines (each with its line end), the bad
/// lines' (file, number) and how many lines there are in all.
struct CaseFiles {
    inputs: CaseInputs,
    good: Vec<u8>,
    bad_lines: BTreeSet<(String, usize)>,
    lines: usize,
}

/// Writes the case's files (`{prefix}-N.jsonl`, the first through stdin
/// when the options say so), each of 100 to 699 lines made by `line`,
/// which says whether its line is bad.
fn case_files(
    db: &TestDb,
    rng: &mut Rng,
    options: &Options,
    prefix: &str,
    mut line: impl FnMut(&mut Rng) -> (Vec<u8>, bool),
) -> CaseFiles {
    let end: &[u8] = if options.crlf { b"\r\n" } else { b"\n" };
    let mut case = CaseFiles { inputs: CaseInputs::default(), good: Vec::new(), bad_lines: BTreeSet::new(), lines: 0 };
    for file in 0..options.files {
        let name = match options.stdin && file == 0 {
            true => "-".to_string(),
            false => format!("{prefix}-{file}.jsonl"),
        };
        let mut bytes = if options.bom { "\u{feff}".as_bytes().to_vec() } else { Vec::new() };
        for number in 1..=100 + rng.below(600) as usize {
            case.lines += 1;
            let (line, bad) = line(rng);
            if bad {
                case.bad_lines.insert((name.clone(), number));
            } else {
                case.good.extend(&line);
                case.good.extend(end);
            }
            bytes.extend(line);
            bytes.extend(end);
        }
        case.inputs.add(db, rng, &name, bytes);
    }
    case
}

/// Writes the case's files, loads them with sluice, loads their good lines
/// with psql, and compares the documents, the rejects and the counts.
fn check_case(db: &TestDb, rng: &mut Rng, case: usize, options: &Options) {
    let context = format!("case {case} (FUZZ_SEED={}): {options:?}", fuzz_seed());
    let table = options.table();
    db.execute(&format!("DROP TABLE IF EXISTS got, want; CREATE TABLE got ({table}); CREATE TABLE want ({table})"));
    let CaseFiles { inputs, good, bad_lines, lines } =
        case_files(db, rng, options, &format!("docs{case}"), |rng| line(rng, options));
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

/// The typed columns' table, and the same values as the server takes
/// them apart from the good documents loaded whole as json (which keeps
/// each value's text as written).
/// `e` and `f` have defaults that change, which documents without their
/// keys get: per row (`random()`, though its value here is always the
/// same) and per transaction (`current_user`).
const TYPED_TABLE: &str =
    "a text, b jsonb, c bigint, d text[], e text DEFAULT 'x' || (random() >= 0)::text, f text DEFAULT current_user";
const TYPED_ORACLE: &str = "SELECT \
    CASE json_typeof(doc->'a') WHEN 'string' THEN doc->>'a' WHEN 'null' THEN NULL ELSE (doc->'a')::text END, \
    CASE WHEN json_typeof(doc->'b') <> 'null' THEN (doc->'b')::jsonb END, \
    (doc->>'c')::numeric::bigint, \
    CASE WHEN json_typeof(doc->'d') = 'array' THEN ARRAY(SELECT e FROM json_array_elements_text(doc->'d') \
      WITH ORDINALITY AS x(e, n) ORDER BY n) END, \
    CASE WHEN doc->'e' IS NULL THEN 'xtrue' ELSE doc->>'e' END, \
    CASE WHEN doc->'f' IS NULL THEN current_user ELSE doc->>'f' END \
    FROM staged";

/// Random documents whose keys name typed columns (any JSON into text and
/// jsonb, whole numbers into bigint, flat arrays into text[]), keys in any
/// order or missing, with random options, and bad lines sluice or the
/// server refuses: each loads as the server takes the good documents apart.
#[test]
fn random_json_lines_load_into_typed_columns_as_the_server_takes_them_apart() {
    let mut rng = Rng(fuzz_seed() ^ 0x7E9ED);
    let db = TestDb::new();
    for case in 0..CASES {
        let options = Options::random(&mut rng);
        let named = rng.below(2) == 0;
        let context = format!("typed case {case} (FUZZ_SEED={}), --columns {named}: {options:?}", fuzz_seed());
        db.execute(&format!(
            "DROP TABLE IF EXISTS got, want, staged; CREATE TABLE got ({TYPED_TABLE}); CREATE TABLE want (LIKE got); \
             CREATE TABLE staged (doc json)"
        ));
        let prefix = format!("typed{case}");
        let CaseFiles { inputs, good, bad_lines, lines } =
            case_files(&db, &mut rng, &options, &prefix, |rng| typed_line(rng, named));
        let mut flags: Vec<String> = ["--format", "jsonl", "--chunk-size", options.chunk_size, "--workers"]
            .iter()
            .chain(&[options.workers, "--copy-format", options.copy_format])
            .map(|s| s.to_string())
            .collect();
        if named {
            flags.extend(["--columns".to_string(), "d,c,b,a,f,e".to_string()]);
        }
        let rejected = inputs.load(&db, &format!("typed{case}.rejects.jsonl"), &flags, !bad_lines.is_empty(), &context);
        db.psql_copy("staged", &db.file(&format!("typed{case}-good"), &good), PSQL_OPTIONS);
        db.execute(&format!("INSERT INTO want {TYPED_ORACLE}"));
        let differ = db.scalar(
            "SELECT count(*) FROM ((TABLE got EXCEPT ALL TABLE want) UNION ALL (TABLE want EXCEPT ALL TABLE got)) d",
        );
        assert_eq!(differ, "0", "{context}: sluice's rows differ from the server's reading of the good documents");
        assert_eq!(db.count("got") + bad_lines.len() as u64, lines as u64, "{context}");
        assert_eq!(rejected, bad_lines, "{context}: the rejects are not the bad lines");
    }
}

/// One document for the typed columns, keys in random order, each now
/// and then missing or `null` (and, when the columns are named, a key no
/// column has, which is left out); or now and then a bad line.
fn typed_line(rng: &mut Rng, named: bool) -> (Vec<u8>, bool) {
    let whole = |rng: &mut Rng| {
        let n = (rng.next() as i64 >> rng.below(63)).to_string();
        match rng.below(4) {
            0 => format!("{n}.0"),
            1 => format!("{n}.000"),
            _ => n,
        }
    };
    let flat = |rng: &mut Rng| {
        let items: Vec<Vec<u8>> = (0..rng.below(4))
            .map(|_| match rng.below(5) {
                0 => rng.pick(&["null", "12", "-0", "1e10", "true"]).as_bytes().to_vec(),
                1 => object(rng, 1),
                _ => string(rng),
            })
            .collect();
        [b"[".as_slice(), &items.join(rng.pick(&[",", ", "]).as_bytes()), b"]"].concat()
    };
    let mut fields: Vec<(&str, Vec<u8>)> =
        vec![("a", value(rng, 2)), ("b", value(rng, 2)), ("c", whole(rng).into_bytes()), ("d", flat(rng))];
    fields.extend([("e", string(rng)), ("f", string(rng))]);
    if named && rng.below(3) == 0 {
        fields.push(("left out", value(rng, 1)));
    }
    let bad = rng.below(25) == 0;
    let kind = rng.below(11);
    if bad {
        match kind {
            0 => fields[2].1 = b"\"seven\"".to_vec(),
            1 => fields[3].1 = b"[[\"x\"],[\"y\",\"z\"]]".to_vec(),
            2 => fields[0].1 = b"\"nul \\u0000 here\"".to_vec(),
            3 => fields[0].1 = b"\"raw \x01 control\"".to_vec(),
            4 => fields[0].1 = b"\"not \xff UTF-8\"".to_vec(),
            5 => fields.push(("b", b"2".to_vec())),
            _ => {}
        }
    }
    for i in (1..fields.len()).rev() {
        fields.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut kept = Vec::new();
    for (key, value) in fields {
        let value = match rng.below(10) {
            _ if bad || key == "left out" => value,
            0 => continue,
            1 => b"null".to_vec(),
            _ => value,
        };
        kept.push([format!("\"{key}\"{}", rng.pick(&[":", " : "])).into_bytes(), value].concat());
    }
    let doc = [b"{".as_slice(), &kept.join(rng.pick(&[",", " , "]).as_bytes()), b"}"].concat();
    if !bad {
        return (doc, false);
    }
    let line = match kind {
        6 => doc[..doc.len() - 1].to_vec(),
        7 => Vec::new(),
        8 => b" \t ".to_vec(),
        9 => b"\\.".to_vec(),
        10 => b"[1, 2]".to_vec(),
        _ => doc,
    };
    (line, true)
}
