//! Each format, cut into 1 KiB chunks so that quoted newlines, CRLF and
//! escapes straddle chunk boundaries, loads exactly what `psql \copy` loads.

use crate::util::TestDb;

/// CSV with every PostgreSQL rule in play: quoted delimiters and newlines,
/// doubled quotes, CRLF line ends (also inside quotes), unquoted empty =
/// NULL, `""` = empty string.
fn tricky_csv(records: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..records {
        let text = match i % 7 {
            0 => format!("\"multi\r\nline {i}\""),
            1 => format!("\"has, comma {i}\""),
            2 => format!("\"say \"\"hi\"\" {i}\""),
            3 => String::new(),
            4 => "\"\"".to_string(),
            5 => format!("\"two\nnewlines\n{i}\""),
            _ => format!("plain {i}"),
        };
        let other = if i % 3 == 0 { String::new() } else { format!("{}", i * 7) };
        out.extend_from_slice(format!("{i},{text},{other}\r\n").as_bytes());
    }
    out
}

#[test]
fn csv_with_quoted_newlines_and_crlf_matches_psql_copy() {
    let db = TestDb::new();
    db.execute("CREATE TABLE got (id int, body text, n text); CREATE TABLE want (LIKE got)");
    let file = db.file("tricky.csv", &tricky_csv(3000));
    db.assert_loads_like_psql(&file, &["--chunk-size", "1KiB", "--workers", "3"], "with (format csv)");
    assert_eq!(db.count("got"), 3000);
    assert_ne!(db.scalar("SELECT count(*) FROM got WHERE body IS NULL"), "0", "unquoted empty is NULL");
    assert_ne!(db.scalar("SELECT count(*) FROM got WHERE body = ''"), "0", "\"\" is an empty string");
    assert_ne!(db.scalar("SELECT count(*) FROM got WHERE body LIKE '%' || chr(13) || chr(10) || '%'"), "0");
}

#[test]
fn csv_with_custom_quote_escape_delimiter_and_null_matches_psql_copy() {
    let db = TestDb::new();
    db.execute("CREATE TABLE got (id int, body text, n text); CREATE TABLE want (LIKE got)");
    let mut data = Vec::new();
    for i in 0..2000 {
        let body = match i % 4 {
            0 => format!("'it\\'s\n{i}'"),
            1 => format!("'semi;colon {i}'"),
            2 => "NIL".to_string(),
            _ => format!("x\\y{i}"),
        };
        data.extend_from_slice(format!("{i};{body};{}\n", i % 5).as_bytes());
    }
    let file = db.file("custom.csv", &data);
    let args = ["--chunk-size", "1KiB", "--delimiter", ";", "--quote", "'", "--escape", "\\"];
    let psql = "with (format csv, delimiter ';', quote '''', escape '\\', null 'NIL')";
    db.assert_loads_like_psql(&file, &[&args[..], &["--null", "NIL"]].concat(), psql);
    assert_eq!(db.count("got"), 2000);
}

/// PostgreSQL's text format: backslash escapes, `\N`, and a backslash before
/// a newline, which is data (not a record end).
#[test]
fn tsv_backslash_escapes_match_psql_copy() {
    let db = TestDb::new();
    db.execute("CREATE TABLE got (id int, body text, n int); CREATE TABLE want (LIKE got)");
    let mut data = Vec::new();
    for i in 0..3000 {
        let body = match i % 5 {
            0 => format!("escaped\\\nnewline {i}"),
            1 => format!("tab\\there\\\\ and backslash {i}"),
            2 => "\\N".to_string(),
            3 => format!("caf\u{e9} \\x41 {i}"),
            _ => format!("plain {i}"),
        };
        let n = if i % 4 == 0 { "\\N".to_string() } else { i.to_string() };
        data.extend_from_slice(format!("{i}\t{body}\t{n}\n").as_bytes());
    }
    let file = db.file("escapes.tsv", &data);
    db.assert_loads_like_psql(&file, &["--chunk-size", "1KiB", "--workers", "4"], "");
    assert_eq!(db.count("got"), 3000);
    assert_eq!(db.scalar("SELECT count(*) FROM got WHERE body LIKE '%' || chr(10) || '%'"), "600");
}

/// A TSV whose backslashes are data (Windows paths) loads as the server
/// reads it, mangled, but a warning before the load names the first such
/// line and the option that keeps them; as CSV with a tab delimiter the
/// paths arrive whole. What PostgreSQL itself writes draws no warning.
#[test]
fn backslashes_the_text_format_drops_are_named_before_the_load() {
    let db = TestDb::new();
    db.execute("CREATE TABLE src (id int, body text, n int); CREATE TABLE got (LIKE src)");
    db.execute(
        "INSERT INTO src SELECT i, 'C:\\data\\' || i || E'\\t\\n\\r\\b\\f\\v\\\\' || chr(1) || '.', \
         CASE WHEN i % 3 = 0 THEN NULL ELSE i END FROM generate_series(1, 500) i",
    );
    let exported = db.dir.path().join("exported.tsv");
    let copy_out = format!("\\copy src to '{}'", exported.display());
    let out = std::process::Command::new("psql").args(["-X", "-q", "-d", &db.conninfo(), "-c", &copy_out]).output();
    assert!(out.unwrap().status.success());
    let run = db.load(&[exported.to_str().unwrap(), "--table", "got"]);
    run.assert_ok();
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    db.assert_same_rows("src", "got");

    let mut data = b"id\tbody\tn\n".to_vec();
    for i in 0..400 {
        let body = if i == 7 || i == 300 { format!("D:\\Users\\u{i}") } else { format!("plain {i}") };
        data.extend_from_slice(format!("{i}\t{body}\t{i}\n").as_bytes());
    }
    let file = db.file("paths.tsv", &data);
    db.execute("TRUNCATE got");
    let run = db.load(&[file.to_str().unwrap(), "--table", "got", "--header"]);
    run.assert_ok();
    let warning = "paths.tsv: line 9 has `\\U`, a backslash before a byte that PostgreSQL's text format";
    assert!(run.stderr.contains(warning), "{}", run.stderr);
    assert!(
        run.stderr.contains("(`\\U` loads as `U`; 4 in its first")
            && run.stderr.contains("--format csv --delimiter tab")
    );
    assert_eq!(db.scalar("SELECT body FROM got WHERE id = 7"), "D:Usersu7", "what the server reads");
    db.execute("TRUNCATE got");
    let csv = ["--format", "csv", "--delimiter", "tab", "--restart"];
    db.load(&[&[file.to_str().unwrap(), "--table", "got", "--header"][..], &csv].concat()).assert_ok();
    assert_eq!(db.scalar("SELECT body FROM got WHERE id = 300"), "D:\\Users\\u300");

    // In a glob, a later file's backslashes are seen too.
    let clean: Vec<u8> = (0..400).flat_map(|i| format!("{i}\tplain {i}\t{i}\n").into_bytes()).collect();
    db.file("parts/a.tsv", &clean);
    db.file("parts/b.tsv", &data[b"id\tbody\tn\n".len()..]);
    let glob = db.dir.path().join("parts/*.tsv");
    db.execute("TRUNCATE got");
    let run = db.load(&[glob.to_str().unwrap(), "--table", "got"]);
    run.assert_ok();
    assert!(run.stderr.contains("b.tsv: line 8 has `\\U`, a backslash"), "{}", run.stderr);
}

/// JSON documents arrive byte for byte: backslashes, `\t` and `\u` escapes
/// inside strings survive (the text format would unescape them).
#[test]
fn jsonl_documents_arrive_byte_identical() {
    let db = TestDb::new();
    db.execute("CREATE TABLE docs (id bigserial, doc json); CREATE TABLE bdocs (doc jsonb NOT NULL)");
    let mut lines = Vec::new();
    for i in 0..2000 {
        lines.push(match i % 4 {
            0 => format!(r#"{{"n":{i},"path":"C:\\Fun\\input.json","tab":"a\tb"}}"#),
            1 => format!(r#"{{"n":{i},"name":"caf\u00e9 \"quoted\"","nested":{{"a":[1,2,{{"b":null}}]}}}}"#),
            2 => format!(r#"  {{ "n" : {i} , "spaced" : true }}"#),
            _ => format!(r#"{{"n":{i},"unicode":"日本語","slash":"\/"}}"#),
        });
    }
    let file = db.file("docs.jsonl", (lines.join("\n") + "\n").as_bytes());
    let path = file.to_str().unwrap();
    db.load(&[path, "--table", "docs", "--columns", "doc", "--chunk-size", "1KiB", "--workers", "3"]).assert_ok();
    let got = db.session().query("SELECT doc::text FROM docs", &[]).unwrap();
    let mut got: Vec<String> = got.into_iter().map(|r| r[0].clone().unwrap()).collect();
    got.sort();
    lines.sort();
    assert_eq!(got, lines, "json column keeps each document byte for byte");
    // Into the table's single jsonb column, found without --columns.
    db.load(&[path, "--table", "bdocs", "--chunk-size", "1KiB"]).assert_ok();
    assert_eq!(db.count("bdocs"), 2000);
    assert_eq!(db.scalar("SELECT doc->>'path' FROM bdocs WHERE doc->>'n' = '0'"), r"C:\Fun\input.json");
}

/// An empty line holds no document: it is rejected with its line number,
/// not loaded as a NULL row no record asked for, on the binary and the text
/// path alike.
#[test]
fn jsonl_empty_lines_are_rejected_not_loaded_as_null() {
    let db = TestDb::new();
    db.execute("CREATE TABLE docs (doc jsonb)");
    let file = db.file("docs.jsonl", b"{\"a\":1}\n\n{\"b\":2}\n{\"c\":3}\n\n");
    let path = file.to_str().unwrap();
    for copy_format in ["binary", "text"] {
        let rejects = db.dir.path().join(format!("{copy_format}.rejects.jsonl"));
        let rejects = rejects.to_str().unwrap();
        let run = db.load(&[path, "--table", "docs", "--copy-format", copy_format, "--rejects", rejects, "--restart"]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert_eq!(db.scalar("SELECT count(*) FILTER (WHERE doc IS NULL) || '/' || count(*) FROM docs"), "0/3");
        let lines: Vec<String> = std::fs::read_to_string(rejects).unwrap().lines().map(String::from).collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].contains("\"line\":2,") && lines[1].contains("\"line\":5,"), "{lines:?}");
        db.execute("TRUNCATE docs");
    }
}

/// JSON lines into a table of typed columns: each key's value goes to the
/// column of its name, as PostgreSQL's own `->>` reads it (the oracle: the
/// same documents loaded whole into jsonb, then cast), on the binary and the
/// text path. Documents that cannot load are rejected with their line and
/// the document as it was in the file: not JSON, a key that is no column
/// (past the first MiB, whose keys chose the columns), a value the column's
/// type refuses.
#[test]
fn jsonl_keys_load_into_the_columns_of_their_names() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE got (id bigint, name text, price numeric, ok boolean, d date, tags jsonb, note text); \
         CREATE TABLE staged (doc jsonb); CREATE TABLE want (LIKE got)",
    );
    let mut lines = Vec::new();
    let mut bad = std::collections::BTreeMap::new();
    for i in 0..20_000u32 {
        let line = match i % 6 {
            0 => format!(r#"{{"id":{i},"name":"tab\there \\ \"q\" caf\u00e9\nline","price":{i}.25,"ok":true}}"#),
            1 => {
                format!(r#"{{"ok":false,"id":{i},"d":"2024-02-{:02}","tags":{{"a":[1,"x\ty"],"b":null}}}}"#, i % 28 + 1)
            }
            2 => format!(r#"  {{ "name" : null , "id" : {i} , "price" : 1e{} , "note" : "" }}"#, i % 5),
            3 => format!(r#"{{"id":{i},"tags":"just a string","note":"\\N"}}"#),
            4 => format!(r#"{{"id":{i},"name":"{}","d":null}}"#, "é".repeat(i as usize % 40)),
            // A whole number written as a decimal (pandas, for an integer
            // column with a missing value).
            _ => format!(r#"{{"id":{i}.00}}"#),
        };
        let line = match i {
            5 => r#"{"id":5,"name":"cut"#.to_string(),
            7 => r#"{"id":"seven"}"#.to_string(),
            19_990 => format!(r#"{{"id":{i},"surprise":1}}"#),
            _ => line,
        };
        if [5, 7, 19_990].contains(&i) {
            bad.insert(i as usize + 1, line.clone());
        }
        lines.push(line);
    }
    let file = db.file("docs.jsonl", (lines.join("\n") + "\n").as_bytes());
    let path = file.to_str().unwrap();
    let good: Vec<&str> =
        lines.iter().enumerate().filter(|(n, _)| !bad.contains_key(&(n + 1))).map(|(_, l)| l.as_str()).collect();
    let staged = db.file("good.jsonl", (good.join("\n") + "\n").as_bytes());
    db.load(&[staged.to_str().unwrap(), "--table", "staged"]).assert_ok();
    db.execute(
        "INSERT INTO want SELECT (doc->>'id')::numeric::bigint, doc->>'name', (doc->>'price')::numeric, (doc->>'ok')::boolean, \
         (doc->>'d')::date, CASE WHEN doc->'tags' = 'null' THEN NULL ELSE doc->'tags' END, doc->>'note' FROM staged",
    );
    for copy_format in ["binary", "text"] {
        let rejects = db.dir.path().join(format!("{copy_format}.rejects.jsonl"));
        let args = ["--table", "got", "--chunk-size", "64KiB", "--workers", "3", "--copy-format", copy_format];
        let run =
            db.load(&[&[path, "--truncate", "--restart", "--rejects", rejects.to_str().unwrap()], &args[..]].concat());
        assert_eq!(run.code, 1, "{}", run.output());
        assert!(run.output().contains("keys into the columns of the same names, as the first documents have them: id, name, price, ok, d, tags, note"), "{}", run.output());
        db.assert_same_rows("got", "want");
        let (rejected, reasons) = rejected_documents(&rejects, &bad, "each bad document, as it was in the file");
        assert!(reasons[0].starts_with("not a JSON document: EOF while parsing a string"), "{reasons:?}");
        assert!(reasons[1].contains("bigint"), "{reasons:?}");
        assert!(reasons[2].contains("the key \"surprise\", which is not one of the loaded columns"), "{reasons:?}");
        let byte = lines[..19_990].iter().map(|l| l.len() as u64 + 1).sum::<u64>();
        assert!(byte > 1 << 20, "past the first MiB, whose keys choose the columns");
        assert_eq!(rejected[2]["byte"].as_u64(), Some(byte), "the offset in the file");
    }
}

/// The rejects file's records and their reasons, once it is asserted that
/// they are the `bad` documents (line number and line), each as it was in
/// the file.
fn rejected_documents(
    rejects: &std::path::Path,
    bad: &std::collections::BTreeMap<usize, String>,
    context: &str,
) -> (Vec<serde_json::Value>, Vec<String>) {
    let rejected: Vec<serde_json::Value> =
        std::fs::read_to_string(rejects).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let got: Vec<(usize, String)> = rejected
        .iter()
        .map(|r| (r["line"].as_u64().unwrap() as usize, r["raw"].as_str().unwrap().to_string()))
        .collect();
    let want: Vec<(usize, String)> = bad.iter().map(|(n, l)| (*n, format!("{l}\n"))).collect();
    assert_eq!(got, want, "{context}");
    let reasons = rejected.iter().map(|r| r["reason"].as_str().unwrap().to_string()).collect();
    (rejected, reasons)
}

/// JSON arrays load into array columns as their elements: strings that
/// look like NULL, or hold quotes, backslashes, commas, braces, tabs or
/// newlines, stay those strings; nested arrays are dimensions; whole
/// numbers written as decimals go to integers as integers; a jsonb[]
/// column takes each element as JSON. The oracle is the server: the same
/// documents loaded whole into jsonb and taken apart with
/// `jsonb_array_elements`. Ragged dimensions and a string that is no array
/// literal are rejected by the server, `\u0000` by sluice.
#[test]
fn jsonl_arrays_load_into_array_columns() {
    use serde_json::{json, Value};
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE got (id int, nums bigint[], words text[], grid numeric[], docs jsonb[]); \
         CREATE TABLE staged (doc jsonb); CREATE TABLE want (LIKE got)",
    );
    let mut rng = crate::util::Rng(crate::util::fuzz_seed() ^ 0xA77A);
    let pieces = ["a", "NULL", "", " ", "\"", "\\", ",", "{", "}", "é", "\t", "\n", "x y", "null", "\\N"];
    let mut lines = Vec::new();
    let mut bad = std::collections::BTreeMap::new();
    for id in 0..6_000u64 {
        let mut doc = serde_json::Map::new();
        doc.insert("id".into(), json!(id));
        let n = rng.below(5) as usize;
        let nums = (0..n)
            .map(|_| match rng.below(6) {
                0 => Value::Null,
                // A whole number written as a decimal: `412.0`.
                1 => json!((rng.next() % 1000) as f64),
                _ => json!(rng.next() as i64 >> 2),
            })
            .collect();
        put(&mut doc, &mut rng, "nums", Value::Array(nums));
        let words = (0..rng.below(5))
            .map(|_| match rng.below(7) {
                0 => Value::Null,
                _ => json!((0..rng.below(4)).map(|_| rng.pick(&pieces)).collect::<String>()),
            })
            .collect();
        put(&mut doc, &mut rng, "words", Value::Array(words));
        let (rows, cols) = (rng.below(3), 1 + rng.below(3));
        let grid = (0..rows)
            .map(|_| {
                (0..cols)
                    .map(|_| json!(format!("{}.{}", rng.below(1000), rng.below(100)).parse::<f64>().unwrap()))
                    .collect()
            })
            .collect();
        put(&mut doc, &mut rng, "grid", Value::Array(grid));
        let docs = (0..rng.below(4))
            .map(|_| match rng.below(5) {
                0 => Value::Null,
                1 => json!(rng.pick(&pieces)),
                2 => json!([rng.below(9), {"k": rng.pick(&pieces)}]),
                3 => json!(rng.below(1000)),
                _ => json!({"k": rng.pick(&pieces), "n": null}),
            })
            .collect();
        put(&mut doc, &mut rng, "docs", Value::Array(docs));
        let line = match id {
            100 => r#"{"id":100,"grid":[[1,2],[3]]}"#.to_string(),
            200 => r#"{"id":200,"nums":"not an array"}"#.to_string(),
            300 => r#"{"id":300,"words":["ok","nul \u0000 here"]}"#.to_string(),
            _ => Value::Object(doc).to_string(),
        };
        if [100, 200, 300].contains(&id) {
            bad.insert(id as usize + 1, line.clone());
        }
        lines.push(line);
    }
    let file = db.file("docs.jsonl", (lines.join("\n") + "\n").as_bytes());
    let good: Vec<&str> =
        lines.iter().enumerate().filter(|(n, _)| !bad.contains_key(&(n + 1))).map(|(_, l)| l.as_str()).collect();
    let staged = db.file("good.jsonl", (good.join("\n") + "\n").as_bytes());
    db.load(&[staged.to_str().unwrap(), "--table", "staged"]).assert_ok();
    let elements = |key: &str, ty: &str| {
        format!(
            "CASE WHEN jsonb_typeof(doc->'{key}') = 'array' THEN ARRAY(SELECT e::{ty} FROM \
             jsonb_array_elements_text(doc->'{key}') WITH ORDINALITY AS x(e, n) ORDER BY n) END"
        )
    };
    db.execute(&format!(
        "INSERT INTO want SELECT (doc->>'id')::int, {}, {}, \
         CASE WHEN jsonb_typeof(doc->'grid') = 'array' THEN ARRAY(SELECT ARRAY(SELECT v::numeric FROM \
           jsonb_array_elements_text(r) WITH ORDINALITY AS y(v, m) ORDER BY m) \
           FROM jsonb_array_elements(doc->'grid') WITH ORDINALITY AS x(r, n) ORDER BY n) END, \
         CASE WHEN jsonb_typeof(doc->'docs') = 'array' THEN ARRAY(SELECT CASE WHEN e = 'null' THEN NULL ELSE e END \
           FROM jsonb_array_elements(doc->'docs') WITH ORDINALITY AS x(e, n) ORDER BY n) END \
         FROM staged",
        elements("nums", "numeric::bigint"),
        elements("words", "text")
    ));
    let count = |sql: &str| db.scalar(&format!("SELECT count(*) FROM want WHERE {sql}")).parse::<u64>().unwrap();
    assert!(count("array_ndims(grid) = 2") > 100 && count("'NULL' = ANY(words)") > 100, "the cases occur");
    let path = file.to_str().unwrap();
    for copy_format in ["binary", "text"] {
        let rejects = db.dir.path().join(format!("{copy_format}.rejects.jsonl"));
        let report = db.dir.path().join(format!("{copy_format}.report.json"));
        let args = ["--table", "got", "--chunk-size", "16KiB", "--workers", "3", "--copy-format", copy_format];
        let outputs = ["--rejects", rejects.to_str().unwrap(), "--report", report.to_str().unwrap()];
        let run = db.load(&[&[path, "--truncate", "--restart"], &outputs[..], &args[..]].concat());
        assert_eq!(run.code, 1, "{}", run.output());
        db.assert_same_rows("got", "want");
        let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        let chunks = |kind: &str| report["summary"]["copy"][kind].as_u64().unwrap_or(0);
        if copy_format == "binary" {
            // Only the chunks of the ragged grid and the string go as text.
            assert!(chunks("binary_chunks") > 20 && chunks("text_chunks") <= 2, "{}", report["summary"]["copy"]);
        }
        let (_, reasons) = rejected_documents(&rejects, &bad, copy_format);
        assert!(reasons[0].contains("sub-arrays with matching dimensions"), "{reasons:?}");
        assert!(reasons[1].contains("malformed array literal"), "{reasons:?}");
        assert!(reasons[2].contains("key \"words\" holds \\u0000"), "{reasons:?}");
    }
}

/// A document without a key loads its column's default, not NULL, on every
/// server and in binary too: a constant one, and one computed per row
/// (`now()`, an identity, `current_user`), each document its own value. A
/// `null` stays NULL, and a value `\D` (the mark of a default to compute)
/// stays a value.
#[test]
fn jsonl_documents_without_a_key_load_the_columns_default() {
    use serde_json::{json, Value};
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE got (id bigint, status text NOT NULL DEFAULT 'new', qty bigint DEFAULT 0, \
           price numeric(6,2) DEFAULT 2, tags text[] DEFAULT '{}', meta jsonb DEFAULT '{\"v\": 1}', \
           code int DEFAULT 1 + 2, note text, made timestamptz DEFAULT now(), \
           n bigint GENERATED BY DEFAULT AS IDENTITY (START 1000000), who text DEFAULT current_user); \
         CREATE TABLE staged (doc jsonb); \
         CREATE TABLE want (id bigint, status text, qty bigint, price numeric(6,2), tags text[], meta jsonb, \
           code int, note text)",
    );
    let mut rng = crate::util::Rng(crate::util::fuzz_seed() ^ 0xDEF0);
    let mut lines = Vec::new();
    for id in 0..4_000u64 {
        let mut doc = serde_json::Map::new();
        doc.insert("id".into(), json!(id));
        // The first half has every key, so its chunks can go binary; in
        // the third quarter only "who" may be missing (of a text column,
        // which would take the field's unescaped text, "D", as a value).
        let mut key = |doc: &mut serde_json::Map<String, Value>, key: &str, value: Value| match id < 2_000
            || (id < 3_000 && key != "who")
        {
            true => drop(doc.insert(key.into(), value)),
            false => put(doc, &mut rng, key, value),
        };
        key(&mut doc, "qty", json!(id * 3));
        key(&mut doc, "price", json!(id % 9000));
        key(&mut doc, "tags", json!(["a", "\\D", "b"]));
        key(&mut doc, "meta", json!({"id": id}));
        key(&mut doc, "code", json!(7));
        key(&mut doc, "note", json!(["\\D", "x\\D", "\\N", "plain"][id as usize % 4]));
        key(&mut doc, "made", json!("2024-01-02T03:04:05Z"));
        key(&mut doc, "who", json!("someone"));
        // Never null: an identity column is NOT NULL.
        for (key, value) in [("status", json!("open")), ("n", json!(id))] {
            if id < 3_000 || rng.below(4) > 0 {
                doc.insert(key.into(), value);
            }
        }
        lines.push(Value::Object(doc).to_string());
    }
    // Refused by the server, in chunks that ask for defaults: isolated.
    let bad: Vec<String> = (3_000..4_000).step_by(97).map(|id| format!(r#"{{"id":{id},"qty":"nope"}}"#)).collect();
    let all: Vec<&String> = lines.iter().chain(&bad).collect();
    let file = db.file("docs.jsonl", (all.iter().map(|l| l.as_str()).collect::<Vec<_>>().join("\n") + "\n").as_bytes());
    let staged = db.file("staged.jsonl", (lines.join("\n") + "\n").as_bytes());
    db.load(&[staged.to_str().unwrap(), "--table", "staged"]).assert_ok();
    let or = |key: &str, ty: &str, default: &str| {
        format!("CASE WHEN doc ? '{key}' THEN (doc->>'{key}')::{ty} ELSE {default} END")
    };
    db.execute(&format!(
        "INSERT INTO want SELECT (doc->>'id')::bigint, {}, {}, {}, \
           CASE WHEN jsonb_typeof(doc->'tags') = 'array' THEN ARRAY(SELECT e FROM \
             jsonb_array_elements_text(doc->'tags') WITH ORDINALITY AS x(e, o) ORDER BY o) \
             WHEN doc ? 'tags' THEN NULL ELSE '{{}}' END, \
           CASE WHEN doc ? 'meta' THEN NULLIF(doc->'meta', 'null') ELSE '{{\"v\": 1}}' END, {}, doc->>'note' \
         FROM staged",
        or("status", "text", "'new'"),
        or("qty", "bigint", "0"),
        or("price", "numeric(6,2)", "2"),
        or("code", "int", "3"),
    ));
    let missing = |key: &str| db.scalar(&format!("SELECT count(*) FROM staged WHERE NOT doc ? '{key}'"));
    assert!(["qty", "tags", "meta", "made", "n", "status"].iter().all(|k| missing(k).parse::<u64>().unwrap() > 100));
    let path = file.to_str().unwrap();
    for copy_format in ["binary", "text"] {
        let report = db.dir.path().join(format!("{copy_format}.report.json"));
        let args = ["--table", "got", "--chunk-size", "16KiB", "--copy-format", copy_format, "--truncate", "--restart"];
        let rejects = db.dir.path().join(format!("{copy_format}.rejects.jsonl"));
        let outputs = [path, "--report", report.to_str().unwrap(), "--rejects", rejects.to_str().unwrap()];
        let run = db.load(&[&outputs[..], &args[..]].concat());
        assert_eq!(run.code, 1, "{}", run.output());
        assert_eq!(db.count("got"), 4_000);
        let reasons = std::fs::read_to_string(&rejects).unwrap();
        let refused =
            reasons.lines().filter(|r| r.contains("invalid input syntax for type bigint: \\\"nope\\\"")).count();
        assert_eq!((refused, reasons.lines().count()), (bad.len(), bad.len()), "{reasons}");
        db.execute(
            "DROP TABLE IF EXISTS got_values; CREATE TABLE got_values AS \
             SELECT id, status, qty, price, tags, meta, code, note FROM got",
        );
        db.assert_same_rows("got_values", "want");
        let wrong = |column: &str, default: &str, given: &str| {
            db.scalar(&format!(
                "SELECT count(*) FROM got JOIN staged ON id = (doc->>'id')::bigint \
                 WHERE CASE WHEN doc ? '{column}' THEN {column} IS DISTINCT FROM {given} ELSE NOT ({default}) END"
            ))
        };
        let (made, n, who) =
            ("made BETWEEN now() - interval '1 hour' AND clock_timestamp()", "n >= 1000000", "who = current_user");
        assert_eq!(wrong("who", who, "doc->>'who'"), "0", "who, {copy_format}");
        assert_eq!(wrong("made", made, "(doc->>'made')::timestamptz"), "0", "made, {copy_format}");
        assert_eq!(wrong("n", n, "(doc->>'n')::bigint"), "0", "n, {copy_format}");
        assert_eq!(db.scalar("SELECT count(DISTINCT n) = count(n) FROM got"), "t");
        // `now()` is the chunk transaction's, as COPY's own defaults get it:
        // one value in a chunk, and the chunks' differ.
        let made_missing = "FROM got JOIN staged ON id = (doc->>'id')::bigint WHERE NOT doc ? 'made'";
        let times = db.scalar(&format!("SELECT count(DISTINCT made) {made_missing}"));
        let times: u64 = times.parse().unwrap();
        assert!(times > 3 && times < missing("made").parse::<u64>().unwrap() / 4, "{times} times");
        assert!(!run.stderr.contains("loads NULL"), "{}", run.stderr);
        let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        let chunks = |kind: &str| report["summary"]["copy"][kind].as_u64().unwrap_or(0);
        if copy_format == "binary" {
            // Defaults are values by the time a chunk is encoded: the chunks
            // go binary, those that hold the refused documents as well.
            assert!(chunks("binary_chunks") > 20 && chunks("text_chunks") == 0, "{}", report["summary"]["copy"]);
        }
    }
}

/// The values of a per-row default are the server's, computed in the
/// chunk's transaction: a sequence that runs out stops the load with a
/// message naming the column, what was committed stays, and once the
/// sequence has room the same command loads the rest, each document once.
/// A document the server refuses among documents with computed defaults is
/// rejected alone, the others of its chunk keeping their values.
#[test]
fn a_per_row_default_the_server_cannot_compute_stops_the_load_and_it_resumes() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE numbered (id int, n int GENERATED BY DEFAULT AS IDENTITY (MAXVALUE 300), \
         made timestamptz DEFAULT clock_timestamp())",
    );
    let mut lines: Vec<String> = (0..1_000)
        .map(|id| match id % 4 {
            0 => format!(r#"{{"id":{id},"n":{},"made":null}}"#, 100_000 + id),
            _ => format!(r#"{{"id":{id}}}"#),
        })
        .collect();
    lines.insert(40, r#"{"id":-1,"n":"99999999999999999999"}"#.to_string());
    let file = db.file("numbered.jsonl", (lines.join("\n") + "\n").as_bytes());
    let rejects = db.dir.path().join("numbered.rejects.jsonl");
    let args = [
        file.to_str().unwrap(),
        "--table",
        "numbered",
        "--chunk-size",
        "1KiB",
        // One session: which chunk runs the sequence out is then known.
        "--workers",
        "1",
        "--rejects",
        rejects.to_str().unwrap(),
    ];
    let run = db.load(&args);
    assert_ne!(run.code, 0, "{}", run.output());
    let said = run.stderr.lines().find(|l| l.contains("reached maximum value")).unwrap_or_default();
    assert!(said.contains("column \"n\"'s default") && said.contains("run the same command again"), "{}", run.stderr);
    let first = db.count("numbered");
    assert!(first > 0 && first < 1_000, "{first} rows before the sequence ran out");
    db.execute("ALTER TABLE numbered ALTER COLUMN n SET MAXVALUE 100000");
    let run = db.load(&args);
    assert_eq!(run.code, 1, "one reject: {}", run.output());
    assert_eq!(db.count("numbered"), 1_000);
    assert_eq!(db.scalar("SELECT count(DISTINCT id) FROM numbered"), "1000");
    let given = "id % 4 = 0 AND n = 100000 + id AND made IS NULL";
    let computed = "id % 4 <> 0 AND n BETWEEN 1 AND 100000 AND made IS NOT NULL";
    assert_eq!(db.scalar(&format!("SELECT count(*) FROM numbered WHERE ({given}) OR ({computed})")), "1000");
    assert_eq!(db.scalar("SELECT count(DISTINCT n) FROM numbered"), "1000");
    // clock_timestamp(), computed for each document: many more times than
    // the chunks, several documents within a microsecond.
    let chunks = db.scalar("SELECT count(*) FROM sluice.chunks").parse::<u64>().unwrap();
    let times = db.scalar("SELECT count(DISTINCT made) FROM numbered").parse::<u64>().unwrap();
    assert!(times > 2 * chunks, "{times} times in {chunks} chunks");
    let reasons = std::fs::read_to_string(&rejects).unwrap();
    assert_eq!(reasons.lines().count(), 1, "{reasons}");
    assert!(reasons.contains("out of range for type integer") && reasons.contains(r#"\"id\":-1"#), "{reasons}");
}

/// Puts `key` into `doc` mostly with `value`, now and then as `null` or
/// not at all.
fn put(
    doc: &mut serde_json::Map<String, serde_json::Value>,
    rng: &mut crate::util::Rng,
    key: &str,
    value: serde_json::Value,
) {
    match rng.below(8) {
        0 => {}
        1 => drop(doc.insert(key.into(), serde_json::Value::Null)),
        _ => drop(doc.insert(key.into(), value)),
    }
}

/// JSON that is not JSON lines loads each document as a row: an array of
/// documents, pretty-printed or on one line, and documents pretty-printed
/// one after another (read line by line, each of their lines was a
/// reject, and they were refused, with `jq -c` to run first). A reject
/// names its document by number and by the byte where it begins. An array
/// on each of several lines stays a document of its own for a jsonb column.
#[test]
fn json_arrays_and_pretty_printed_documents_load_a_row_a_document() {
    let db = TestDb::new();
    db.execute("CREATE TABLE docs (doc jsonb); CREATE TABLE typed (id int, name text)");
    let mut docs: Vec<serde_json::Value> = (0..3_000).map(|i| serde_json::json!({"id": i, "name": "n"})).collect();
    docs[1_234]["id"] = serde_json::json!("bad");
    let pretty_array = serde_json::to_string_pretty(&docs).unwrap();
    let array = db.file("array.json", pretty_array.as_bytes());
    let one_line = db.file("one_line.json", (serde_json::to_string(&docs).unwrap() + "\n").as_bytes());
    let pretty: String = docs.iter().map(|d| serde_json::to_string_pretty(d).unwrap() + "\n").collect();
    let pretty = db.file("pretty.jsonl", pretty.as_bytes());
    let gzipped = db.file("array.json.gz", &crate::util::gzip(pretty_array.as_bytes()));
    for file in [&array, &one_line, &pretty, &gzipped] {
        let path = file.to_str().unwrap();
        let rejects = db.dir.path().join("typed.rejects.jsonl");
        let _ = std::fs::remove_file(&rejects);
        db.execute("TRUNCATE docs, typed");
        // The documents are the same in each file, which a load leaves out once loaded.
        let run = db.load(&[path, "--table", "typed", "--rejects", rejects.to_str().unwrap(), "--load-again"]);
        assert_eq!(run.code, 1, "{}", run.output());
        assert!(run.stderr.contains("not JSON lines; reading each document"), "{}", run.stderr);
        assert_eq!(
            db.scalar("SELECT count(*) || ' ' || sum(id) FROM typed"),
            format!("2999 {}", 2_999 * 3_000 / 2 - 1_234)
        );
        let reject: serde_json::Value =
            serde_json::from_str(std::fs::read_to_string(&rejects).unwrap().trim()).unwrap();
        let bytes = if file == &gzipped { pretty_array.as_bytes().to_vec() } else { std::fs::read(file).unwrap() };
        let byte = reject["byte"].as_u64().unwrap() as usize;
        let line_of_byte = bytes[..byte].iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        assert!(file == &one_line || line_of_byte > 4_000, "a document of several lines: {line_of_byte}");
        assert_eq!((reject["record"].as_u64(), reject["line"].as_u64()), (Some(1_235), Some(line_of_byte)), "{reject}");
        if file != &gzipped {
            let at = &bytes[byte..];
            assert!(at.starts_with(b"{"), "{reject}");
            let doc = serde_json::Deserializer::from_slice(at).into_iter::<serde_json::Value>().next();
            assert_eq!(doc.unwrap().unwrap(), docs[1_234], "the byte of the rejected document");
        }
        db.load(&[path, "--table", "docs", "--load-again"]).assert_ok();
        assert_eq!(db.scalar("SELECT count(*) FROM docs WHERE doc ? 'name'"), "3000");
    }
    let batches = db.file("batches.json", b"[{\"id\":1},{\"id\":2}]\n[{\"id\":3}]\n");
    db.execute("TRUNCATE docs");
    db.load(&[batches.to_str().unwrap(), "--table", "docs"]).assert_ok();
    assert_eq!(db.scalar("SELECT string_agg(jsonb_array_length(doc)::text, ' ') FROM docs"), "2 1");
    // Into typed columns, each element is a row (they were refused, with
    // `jq -c '.[]'` to run first), and a reject names the line its array is
    // on (it named the third line of the file's two).
    db.execute("TRUNCATE typed");
    let batches = db.file("typed_batches.json", b"[{\"id\":1},{\"id\":2}]\n[{\"id\":3}]\n[{\"id\":\"x\"}]\n");
    let rejects = db.dir.path().join("typed.rejects.jsonl");
    let run = db.load(&[batches.to_str().unwrap(), "--table", "typed", "--rejects", rejects.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{}", run.output());
    assert!(run.stderr.contains("reading each document of its JSON arrays"), "{}", run.stderr);
    assert_eq!(db.scalar("SELECT string_agg(id::text, ',' ORDER BY id) FROM typed"), "1,2,3");
    let reject: serde_json::Value = serde_json::from_str(std::fs::read_to_string(&rejects).unwrap().trim()).unwrap();
    assert_eq!((reject["record"].as_u64(), reject["line"].as_u64()), (Some(4), Some(3)), "{reject}");
    // Documents written on since a job loaded them: not loaded a second time.
    db.execute("TRUNCATE docs");
    let log = db.file("log.json", b"{\n \"a\": 1\n}\n{\n \"a\": 2\n}\n");
    db.load(&[log.to_str().unwrap(), "--table", "docs"]).assert_ok();
    let log = db.file("log.json", b"{\n \"a\": 1\n}\n{\n \"a\": 2\n}\n{\n \"a\": 3\n}\n");
    let run = db.load(&[log.to_str().unwrap(), "--table", "docs"]);
    run.assert_refused("sluice reads JSON written over several lines only from its start");
    assert_eq!(db.count("docs"), 2);
    // An array written after another since: what follows loads.
    let arrays = db.file("arrays.json", b"[\n {\"a\": 3}\n]\n");
    db.load(&[arrays.to_str().unwrap(), "--table", "docs"]).assert_ok();
    // (jsonb refuses the \u0000 of the last document, on the file's line 7.)
    let arrays =
        db.file("arrays.json", b"[\n {\"a\": 3}\n]\n[\n {\"a\": 4},\n {\"a\": 5},\n {\"a\": \"\\u0000\"}\n]\n");
    let rejects = db.dir.path().join("docs.rejects.jsonl");
    let run = db.load(&[arrays.to_str().unwrap(), "--table", "docs", "--rejects", rejects.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{}", run.output());
    assert!(run.stderr.contains("arrays.json from its document 2 (byte 13)"), "{}", run.stderr);
    assert_eq!(db.scalar("SELECT string_agg(doc->>'a', ',' ORDER BY doc->>'a') FROM docs"), "1,2,3,4,5");
    let reject: serde_json::Value = serde_json::from_str(std::fs::read_to_string(&rejects).unwrap().trim()).unwrap();
    assert_eq!((reject["record"].as_u64(), reject["line"].as_u64()), (Some(4), Some(7)), "{reject}");
    // The same into typed columns, with a bad value in what was written on:
    // it stopped at the array's first line (`a ] outside any document`),
    // which the job's one document had been taken for.
    db.execute("TRUNCATE typed");
    let arrays = db.file("typed_arrays.json", b"[\n {\"id\": 3}\n]\n");
    db.load(&[arrays.to_str().unwrap(), "--table", "typed"]).assert_ok();
    let arrays = db.file("typed_arrays.json", b"[\n {\"id\": 3}\n]\n[\n {\"id\": 4},\n {\"id\": \"x\"}\n]\n");
    let run = db.load(&[arrays.to_str().unwrap(), "--table", "typed", "--rejects", rejects.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{}", run.output());
    assert!(run.stderr.contains("typed_arrays.json from its document 2:"), "{}", run.stderr);
    assert_eq!(db.scalar("SELECT string_agg(id::text, ',' ORDER BY id) FROM typed"), "3,4");
    let reject: serde_json::Value = serde_json::from_str(std::fs::read_to_string(&rejects).unwrap().trim()).unwrap();
    assert_eq!((reject["record"].as_u64(), reject["line"].as_u64()), (Some(3), Some(6)), "{reject}");
    // An export of no rows loads none (it was refused: no key to take the
    // columns from), and says nothing of keys.
    for (name, text) in [("none.json", "[]\n"), ("none.jsonl", "")] {
        let run = db.load(&[db.file(name, text.as_bytes()).to_str().unwrap(), "--table", "typed"]);
        assert!(run.assert_ok().stdout.starts_with("loaded 0 rows"), "{}", run.output());
        assert!(!run.stderr.contains("keys into the columns"), "{}", run.stderr);
    }
}

/// `--documents-at KEY[.KEY]` loads the elements of the array the keys lead
/// to in each top-level object (an API response, pages of them one after
/// another, GeoJSON's features, a search engine's hits.hits), and leaves the
/// rest of the object out. Without it, such a file is one document: loaded
/// whole into jsonb with a warning, refused for typed columns, each saying
/// which flag loads its objects.
#[test]
fn documents_under_a_key_of_each_object_load_with_documents_at() {
    let db = TestDb::new();
    db.execute("CREATE TABLE docs (doc jsonb); CREATE TABLE typed (id int, name text)");
    let page = |first: i64| {
        let data: Vec<serde_json::Value> =
            (first..first + 1_000).map(|i| serde_json::json!({"id": i, "name": format!("n{i}")})).collect();
        serde_json::json!({"page": first / 1_000, "meta": {"data": [{"id": -1}]}, "data": data})
    };
    let one = db.file("one.json", serde_json::to_string(&page(0)).unwrap().as_bytes());
    let pages = (0..3).map(|p| serde_json::to_string_pretty(&page(p * 1_000)).unwrap() + "\n").collect::<String>();
    let pages = db.file("pages.json", pages.as_bytes());
    let run = db.load(&[one.to_str().unwrap(), "--table", "typed"]);
    run.assert_refused("one.json holds one JSON document, whose \"data\" is an array of objects: to load each of them as a row, pass --documents-at data");
    let run = db.load(&[one.to_str().unwrap(), "--table", "docs"]);
    assert!(
        run.assert_ok().stderr.contains("pass --documents-at data (loaded whole, it is one row)"),
        "{}",
        run.stderr
    );
    let run = db.load(&[one.to_str().unwrap(), "--table", "not_yet"]);
    run.assert_refused("Or, for each document whole: CREATE TABLE \"not_yet\" (\"doc\" jsonb); ");
    assert!(run.stderr.trim_end().ends_with("one.json holds one JSON document, whose \"data\" is an array of objects: to load each of them as a row, pass --documents-at data"), "{}", run.stderr);
    assert_eq!(db.count("docs"), 1);
    for (file, rows) in [(&one, 1_000), (&pages, 3_000)] {
        db.execute("TRUNCATE docs, typed");
        let path = file.to_str().unwrap();
        let run = db.load(&[path, "--table", "typed", "--documents-at", "data", "--load-again"]);
        assert!(run.assert_ok().stderr.contains("reading each element of the array at \"data\""), "{}", run.stderr);
        assert_eq!(
            db.scalar("SELECT count(*) || ' ' || sum(id) || ' ' || min(id) FROM typed"),
            format!("{rows} {} 0", rows * (rows - 1) / 2)
        );
        db.load(&[path, "--table", "docs", "--documents-at", "data", "--load-again"]).assert_ok();
        assert_eq!(db.scalar("SELECT count(*) FROM docs WHERE doc ? 'name' AND NOT doc ? 'page'"), rows.to_string());
    }
    let hits = br#"{"took": 3, "hits": {"total": {"value": 2}, "hits": [{"_id": "a"}, {"_id": "b"}]}}"#;
    let hits = db.file("hits.json", hits);
    db.execute("TRUNCATE docs");
    db.load(&[hits.to_str().unwrap(), "--table", "docs", "--documents-at", "hits.hits"]).assert_ok();
    assert_eq!(db.scalar("SELECT string_agg(doc->>'_id', ',' ORDER BY doc->>'_id') FROM docs"), "a,b");
    let refused = |args: &[&str], says: &str| {
        let run = db.load(args);
        assert_eq!(run.code, 2, "{}", run.output());
        assert!(run.stderr.contains(says), "{}", run.stderr);
    };
    let path = hits.to_str().unwrap();
    refused(
        &[path, "--table", "docs", "--documents-at", "hits", "--restart"],
        "not JSON documents: line 1 (byte 20): \"hits\" is not an array",
    );
    refused(
        &[path, "--table", "docs", "--documents-at", "data", "--restart"],
        "the object begun at line 1 (byte 0) holds no \"data\"",
    );
    let array = db.file("array.json", b"[{\"id\": 1}]");
    refused(
        &[array.to_str().unwrap(), "--table", "docs", "--documents-at", "data"],
        "line 1 (byte 0): a [ where an object with \"data\" belongs",
    );
    let csv = db.file("a.csv", b"1,a\n");
    refused(&[csv.to_str().unwrap(), "--table", "typed", "--documents-at", "data"], "--documents-at applies to JSON");
    assert_eq!(db.count("docs"), 2);
}

/// What cannot be read as JSON documents stops the load with the file's
/// line and byte and what is wrong there: a bracket that closes another
/// kind, a line break inside a string (a quote left out), an array cut
/// short (a copy that ended early: without the check, the documents before
/// the cut loaded without a word).
#[test]
fn a_json_array_that_breaks_is_refused_at_its_line_and_byte() {
    let db = TestDb::new();
    db.execute("CREATE TABLE typed (id int, name text)");
    for (text, says) in [
        (
            "[\n {\"id\":1,\"name\":\"a\"},\n {\"id\":2,\"name\":[\"b\"}\n]\n",
            "line 3 (byte 44): a } where the document begun at line 3 (byte 25) needs a ]",
        ),
        (
            "[\n {\"id\":1,\"name\":\"a\"},\n {\"id\":2,\"name\":\"b}\n]\n",
            "line 3 (byte 43): a line break inside a string",
        ),
        (
            "[\n {\"id\":1,\"name\":\"a\"},\n {\"id\":2,\"name\":\"b\"}\n",
            "the input ends inside the JSON array begun at line 1 (byte 0), before its closing ]: cut short?",
        ),
        (
            "[\n {\"id\":1,\"name\":\"a\"},\n {\"id\":2,",
            "the input ends inside the document begun at line 3 (byte 25): cut short?",
        ),
    ] {
        let file = db.file("broken.json", text.as_bytes());
        let run = db.load(&[file.to_str().unwrap(), "--table", "typed", "--restart"]);
        assert_eq!(run.code, 2, "{}", run.output());
        assert!(run.stderr.contains(&format!("broken.json: not JSON documents: {says}")), "{}", run.stderr);
    }
    assert_eq!(db.count("typed"), 0);
}

/// `--columns` picks keys (the others are left out) and is checked against
/// the first documents; keys that are not columns, and `--header`, stop the
/// load before anything loads, saying what to do.
#[test]
fn jsonl_keys_that_name_no_column_are_refused_up_front() {
    let db = TestDb::new();
    db.execute("CREATE TABLE got (id int, name text, extra text)");
    let file = db.file("docs.jsonl", b"{\"id\":1,\"name\":\"a\",\"other\":{\"x\":1}}\n{\"name\":\"b\",\"id\":2}\n");
    let path = file.to_str().unwrap();
    let run = db.load(&[path, "--table", "got"]);
    run.assert_refused("docs.jsonl line 1) is not a column of table public.got");
    assert!(run.stderr.contains("--columns"), "{}", run.stderr);
    let run = db.load(&[path, "--table", "got", "--columns", "id,nmae"]);
    assert_eq!(run.code, 2, "{}", run.output());
    let run = db.load(&[path, "--table", "got", "--columns", "id,extra"]);
    run.assert_refused("--columns names \"extra\", but no document in the first ");
    assert!(run.stderr.contains("(they have: id, name, other)"), "{}", run.stderr);
    let run = db.load(&[path, "--table", "got", "--header"]);
    assert_eq!((run.code, run.stderr.contains("JSON lines have no header line")), (2, true), "{}", run.stderr);
    assert_eq!(db.count("got"), 0);
    db.load(&[path, "--table", "got", "--columns", "name,id"]).assert_ok();
    assert_eq!(db.scalar("SELECT string_agg(id || name || coalesce(extra, '-'), ' ' ORDER BY id) FROM got"), "1a- 2b-");
}

/// `--skip-other-fields` on JSON lines loads the keys that name a column
/// and leaves out the others, those the first documents have and those
/// found later alike, and says which it left out.
#[test]
fn jsonl_skip_other_fields_leaves_out_the_keys_that_name_no_column() {
    let db = TestDb::new();
    db.execute("CREATE TABLE got (id int, name text)");
    let mut docs =
        String::from("{\"id\":1,\"name\":\"a\",\"other\":{\"x\":1}}\n{\"name\":\"b\",\"id\":2,\"more\":3}\n");
    // Past the first documents sluice reads for the keys.
    docs.push_str(&"{\"id\":3,\"name\":\"c\"}\n".repeat(20_000));
    docs.push_str("{\"id\":4,\"later\":[1],\"name\":\"d\"}\n");
    let file = db.file("docs.jsonl", docs.as_bytes());
    let path = file.to_str().unwrap();
    let run = db.load(&[path, "--table", "got"]);
    run.assert_refused("Pass --skip-other-fields to leave out the keys that name no column");
    let run = db.load(&[path, "--table", "got", "--skip-other-fields"]);
    run.assert_ok();
    let said = "leaving out the documents' keys that name no column of public.got, as --skip-other-fields asks: \
                \"other\" (from line 1), \"more\" (from line 2)";
    assert!(run.stderr.contains(said), "{}", run.stderr);
    assert_eq!(db.count("got"), 20_003);
    assert_eq!(db.scalar("SELECT string_agg(DISTINCT id || name, ' ') FROM got"), "1a 2b 3c 4d");
    // A CSV's fields are named by its header only.
    let csv = db.file("got.csv", b"id,name\n5,e\n");
    let run = db.load(&[csv.to_str().unwrap(), "--table", "got", "--skip-other-fields"]);
    run.assert_refused("--skip-other-fields reads the fields to load from the header: pass --header too");
}

/// A key that only documents further in have, naming a column of the
/// table the first documents' keys leave out, is rejected with the
/// `--columns` that loads it (it said `not one of the loaded columns`, as
/// for a key that names none), and that command loads every document.
#[test]
fn a_later_documents_key_that_names_a_column_is_rejected_with_the_columns_that_load_it() {
    let db = TestDb::new();
    db.execute("CREATE TABLE sparse (id int, a text, \"B\" text)");
    let pad = "x".repeat(500);
    let docs: String = (0..3_000)
        .map(|i| match i < 2_500 {
            true => format!("{{\"id\":{i},\"a\":\"{pad}\"}}\n"),
            false => format!("{{\"id\":{i},\"a\":\"{pad}\",\"B\":\"late\"}}\n"),
        })
        .collect();
    let file = db.file("sparse.jsonl", docs.as_bytes());
    let rejects = db.dir.path().join("sparse.rejects.jsonl");
    let run = db.load(&[file.to_str().unwrap(), "--table", "sparse", "--rejects", rejects.to_str().unwrap()]);
    assert_eq!((run.code, db.count("sparse")), (1, 2_500), "{}", run.output());
    let first = std::fs::read_to_string(&rejects).unwrap().lines().next().unwrap().to_string();
    let reason =
        "the document has the key \\\"B\\\", which names column \\\"B\\\" of the table, but the documents at the \
                  start of the input have no such key, so the loaded columns are theirs (id, a); to load it, name the \
                  columns with --columns id,a,B (or leave such keys out with --skip-other-fields)";
    assert!(first.contains(reason), "{first}");
    let args = ["--table", "sparse", "--columns", "id,a,B", "--truncate", "--load-again"];
    db.load(&[&[file.to_str().unwrap()][..], &args[..]].concat()).assert_ok();
    assert_eq!(db.scalar("SELECT count(*) || ' ' || count(\"B\") FROM sparse"), "3000 500");
}

/// JSON from an API names its keys in camelCase (`orderId`), tables name
/// columns in snake_case (`order_id`): such a key used to stop the load as
/// "not a column". A key that spells one column's name and no other's, case
/// and everything but letters and digits left out, names that column, and
/// the load says so before it starts.
#[test]
fn jsonl_keys_spelt_another_way_name_their_columns() {
    let db = TestDb::new();
    db.execute("CREATE TABLE orders (order_id bigint, customer_name text, \"Total\" numeric)");
    let file = db.file("orders.jsonl", b"{\"orderId\":7,\"Customer-Name\":\"Ann\",\"total\":1.5}\n{\"orderId\":8}\n");
    let run = db.load(&[file.to_str().unwrap(), "--table", "orders"]);
    run.assert_ok();
    let says = "as the first documents have them: orderId as order_id, Customer-Name as customer_name, total as Total";
    assert!(run.output().contains(says), "{}", run.output());
    let loaded =
        "SELECT string_agg(concat_ws(' ', order_id, customer_name, \"Total\"), ', ' ORDER BY order_id) FROM orders";
    assert_eq!(db.scalar(loaded), "7 Ann 1.5, 8");
    // Two spellings of one column: refused, naming both keys and their lines;
    // --columns loads the key that spells the column and leaves out the other.
    let both = db.file("both.jsonl", b"{\"order_id\":9,\"total\":1}\n{\"orderId\":10}\n");
    let run = db.load(&[both.to_str().unwrap(), "--table", "orders"]);
    let says = "both.jsonl line 1) and \"orderId\" (line 2) both name column \"order_id\"";
    run.assert_refused(says);
    assert_eq!(db.count("orders"), 2);
    db.load(&[both.to_str().unwrap(), "--table", "orders", "--columns", "order_id"]).assert_ok();
    assert_eq!(db.scalar("SELECT count(*) FROM orders WHERE order_id IS NULL"), "1");
    let run = db.load(&[both.to_str().unwrap(), "--table", "orders", "--columns", "order_id,order_id"]);
    run.assert_refused("--columns names column \"order_id\" twice");
    // A table of one column that a key names: the key's value, not the
    // document whole (which the bigint column rejected, every line).
    db.execute("CREATE TABLE ids (id bigint)");
    let ids = db.file("ids.jsonl", b"{\"id\":1}\n{\"id\":2.0}\n");
    db.load(&[ids.to_str().unwrap(), "--table", "ids"]).assert_ok();
    assert_eq!(db.scalar("SELECT string_agg(id::text, ' ' ORDER BY id) FROM ids"), "1 2");
}

/// The generated store_sales CSV (quoted fields, rare quoted newlines).
#[test]
fn generated_store_sales_matches_psql_copy() {
    let db = TestDb::new();
    let file = db.generated(sluice::gen::Dataset::StoreSales, "got", 20_000, 5, "store_sales.csv");
    db.execute("CREATE TABLE want (LIKE got)");
    db.load(&[file.to_str().unwrap(), "--table", "got", "--chunk-size", "1KiB"]).assert_ok();
    db.psql_copy("want", &file, "with (format csv)");
    db.assert_same_rows("got", "want");
    assert_eq!(db.count("got"), 20_000);
}

/// Files whose lines end in a bare carriage return (classic Mac, Excel for
/// Mac's "CSV (Macintosh)") are cut at carriage returns, as the server reads
/// them: each format loads in many small chunks exactly as psql loads it,
/// quoted or escaped line ends of either kind included, and the report has
/// no warning.
#[test]
fn carriage_return_files_load_in_chunks_like_psql() {
    let csv: String = (0..3000)
        .map(|i| match i % 3 {
            0 => format!("{i},\"two\rlines {i}\",\"a quoted\nnewline\"\r"),
            1 => format!("{i},\"has, comma\",\r"),
            _ => format!("{i},plain {i},\"\"\r"),
        })
        .collect();
    let tsv: String = (0..3000).map(|i| format!("{i}\tescaped\\\rreturn {i}\t\\N\r")).collect();
    let jsonl: String = (0..3000).map(|i| format!("{{\"id\": {i}, \"s\": \"a\\rb\"}}\r")).collect();
    let jsonl_psql = "with (format csv, quote e'\\x01', delimiter e'\\x02')";
    let cases = [
        ("mac.csv", "id int, body text, n text", csv, "with (format csv)"),
        ("mac.tsv", "id int, body text, n text", tsv, ""),
        ("mac.jsonl", "doc jsonb", jsonl, jsonl_psql),
    ];
    for (name, columns, data, psql_options) in cases {
        let db = TestDb::new();
        db.execute(&format!("CREATE TABLE got ({columns}); CREATE TABLE want (LIKE got)"));
        let file = db.file(name, data.as_bytes());
        let report_path = db.dir.path().join("report.json");
        let report = report_path.to_str().unwrap();
        let args = ["--chunk-size", "1KiB", "--workers", "3", "--report", report];
        db.assert_loads_like_psql(&file, &args, psql_options);
        assert_eq!(db.count("got"), 3000, "{name}");
        let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
        assert!(r["chunks"].as_array().unwrap().len() > 20, "{name}: cut into chunks at carriage returns");
        assert!(r["warnings"].as_array().unwrap().is_empty(), "{name}: {}", r["warnings"]);
    }
}

/// csv fields for the forcing test: each column's value is, by turns
/// ([`forcible_case`]), the NULL string unquoted and quoted, an empty field
/// quoted, a quoted value and a plain one; text columns now and then hold a
/// doubled quote or a quoted newline (which takes the binary encoder's
/// exact splitter).
fn forcible_csv(records: usize, null: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..records {
        let pick = |column: usize, value: String| match forcible_case(i, column) {
            Some(0) => null.to_string(),
            Some(1) => format!("\"{null}\""),
            Some(2) => "\"\"".to_string(),
            Some(3) => format!("\"{value}\""),
            _ => value,
        };
        let text = |column: usize| match (i + column) % 11 {
            0 => format!("\"say \"\"hi\"\" {i}\""),
            1 => format!("\"two\nlines {i}\""),
            _ => pick(column, format!("text {i}")),
        };
        // A quoted empty field is no number or date: a plain value there.
        let typed = |column: usize, value: String| match forcible_case(i, column) {
            Some(2) => value,
            _ => pick(column, value),
        };
        let (n, d) = (typed(4, format!("{}", i * 7)), typed(5, format!("2024-01-{:02}", 1 + i % 28)));
        out.extend_from_slice(format!("{i},{},{},{},{n},{d}\n", text(1), text(2), text(3)).as_bytes());
    }
    out
}

/// Which of [`forcible_csv`]'s shapes record `i` has in column `column`
/// (1 to 3 text, 4 a number, 5 a date); `None` for a plain value.
fn forcible_case(i: usize, column: usize) -> Option<usize> {
    let case = (i + 3 * column) % 9;
    let text_override = (1..=3).contains(&column) && (i + column) % 11 < 2;
    (case < 4 && !text_override).then_some(case)
}

/// `--force-null` and `--force-not-null` load what COPY's FORCE_NULL and
/// FORCE_NOT_NULL load, in binary (clean lines and the exact splitter) and
/// in text, with the default NULL string and another, `*` and a column in
/// both included; a column not loaded, or the flags with tsv, are refused
/// before the load.
#[test]
fn forced_null_columns_load_as_psql_loads_them() {
    // The NULL string, the flags, psql's options, and a column forced null
    // (its quoted NULL string is NULL) and one forced not null alone (its
    // unquoted NULL string is a value), as indexes in the table.
    let cases = [
        (
            "",
            ["--force-null", "a,n,d,c", "--force-not-null", "b,c"],
            "force_null (a, n, d, c), force_not_null (b, c)",
            1,
            2,
        ),
        (
            "NULL",
            ["--force-null", "*", "--force-not-null", "A"],
            "force_null (id, a, b, c, n, d), force_not_null (a)",
            2,
            1,
        ),
    ];
    let columns = ["id", "a", "b", "c", "n", "d"];
    for (null, flags, psql_flags, forced_null, forced_not_null) in cases {
        for copy_format in ["binary", "text"] {
            let db = TestDb::new();
            db.execute(
                "CREATE TABLE got (id int, a text, b text, c text, n int, d date); CREATE TABLE want (LIKE got)",
            );
            let records = 2000;
            let file = db.file("forced.csv", &forcible_csv(records, null));
            let report_path = db.dir.path().join("report.json");
            let mut args = vec!["--chunk-size", "1KiB", "--workers", "2", "--null", null, "--copy-format", copy_format];
            args.extend(["--report", report_path.to_str().unwrap()]);
            args.extend(flags);
            db.assert_loads_like_psql(&file, &args, &format!("with (format csv, null '{null}', {psql_flags})"));
            let what = format!("{null:?} {copy_format}");
            assert_eq!(db.count("got"), records as u64, "{what}");
            let copy = &serde_json::from_slice::<serde_json::Value>(&std::fs::read(&report_path).unwrap()).unwrap()
                ["summary"]["copy"];
            let chunks = (copy["binary_chunks"].as_u64().unwrap(), copy["text_chunks"].as_u64().unwrap());
            match copy_format {
                "binary" => assert!(chunks.0 > 0 && chunks.1 == 0, "{what}: every chunk in binary: {copy}"),
                _ => assert_eq!(chunks.0, 0, "{what}: {copy}"),
            }
            // The flags changed what loaded: the quoted NULL string is NULL
            // in the column forced null, the unquoted one a value in the
            // column forced not null.
            let (quoted, unquoted): (Vec<usize>, Vec<usize>) = (
                (0..records).filter(|&i| forcible_case(i, forced_null) == Some(1)).collect(),
                (0..records).filter(|&i| forcible_case(i, forced_not_null) == Some(0)).collect(),
            );
            assert!(quoted.len() > 100 && unquoted.len() > 100, "{what}");
            let list = |ids: &[usize]| ids.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
            let count = |condition: String| db.scalar(&format!("SELECT count(*) FROM got WHERE {condition}"));
            let null_column = columns[forced_null];
            assert_eq!(count(format!("id IN ({}) AND {null_column} IS NULL", list(&quoted))), quoted.len().to_string());
            let value_column = columns[forced_not_null];
            let as_value = format!("id IN ({}) AND {value_column} = '{null}'", list(&unquoted));
            assert_eq!(count(as_value), unquoted.len().to_string(), "{what}");
        }
    }
    let db = TestDb::new();
    db.execute("CREATE TABLE got (id int, a text)");
    let file = db.file("two.csv", b"1,x\n");
    let run = db.load(&[file.to_str().unwrap(), "--table", "got", "--columns", "id", "--force-null", "a"]);
    run.assert_refused("--force-null: column \"a\" is not among the columns loaded (id)");
    let tsv = db.file("two.tsv", b"1\tx\n");
    let run = db.load(&[tsv.to_str().unwrap(), "--table", "got", "--force-not-null", "a"]);
    run.assert_refused("apply to csv only");
}
