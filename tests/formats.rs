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
