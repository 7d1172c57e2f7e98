//! Binary COPY loads exactly what a text COPY of the same file loads: every
//! type with an encoder, escapes, quotes, NULLs, rounding to the column's
//! modifier, and values the encoder is unsure of (those chunks go as text).

use sluice::format::binary::{self, BinaryEncoder};

use crate::util::{fuzz_seed, Rng, Run, Spoiled, TestDb};

const COLUMNS: &str = "i2 smallint, i4 integer, i8 bigint, f4 real, f8 double precision, n numeric, \
     n3 numeric(12,3), d date, ts timestamp, ts3 timestamp(3), b boolean, t text, v varchar(20), c char(5), \
     j json, jb jsonb, u uuid, tz timestamptz, tm time, tm3 time(3), bt bit(3), vb varbit, by bytea, ip inet, \
     ai integer[], an numeric(6,2)[], av varchar(8)[], atz timestamptz[], dr daterange, tr tstzrange, aj jsonb[]";

/// One row's values as text (`None` = NULL). Every `unsure_every`th row
/// holds a value the text input accepts but the encoder does not read.
fn row(rng: &mut Rng, i: u64, unsure_every: u64) -> Vec<Option<String>> {
    let date = |rng: &mut Rng| format!("{:04}-{:02}-{:02}", 1 + rng.below(9999), 1 + rng.below(12), 1 + rng.below(28));
    let fraction = |rng: &mut Rng| match rng.below(10) as usize {
        0 => String::new(),
        n @ 1..=6 => format!(".{:0width$}", rng.below(10u64.pow(n as u32)), width = n),
        // Past microseconds (pandas' nanoseconds), rounded by both readings;
        // never up to a whole second, which the encoder leaves to the server.
        n => format!(".{:06}{:0width$}", rng.below(999_999), rng.below(10u64.pow(n as u32 - 6)), width = n - 6),
    };
    let clock =
        |rng: &mut Rng| format!("{:02}:{:02}:{:02}{}", rng.below(24), rng.below(60), rng.below(60), fraction(rng));
    let time = |rng: &mut Rng| format!("{} {}", date(rng), clock(rng));
    let time_or_date = |rng: &mut Rng| if rng.below(8) == 0 { date(rng) } else { time(rng) };
    let offset = |rng: &mut Rng| rng.pick(&["", "", "Z", "+00", "+02", "-05:30", "+0100", "-1200", "+14:45"]);
    let bits = |rng: &mut Rng, n: u64| (0..n).map(|_| rng.pick(&["0", "1"])).collect::<String>();
    let decimal = |rng: &mut Rng| {
        let sign = rng.pick(&["", "-", "+"]);
        let int = rng.pick(&["0", "7", "12345", "99999999999999999999", "", "000123"]);
        let frac = rng.pick(&["", ".5", ".0001", ".123456789", ".00", "."]);
        let int = if int.is_empty() && frac.len() < 2 { "1" } else { int };
        format!("{sign}{int}{frac}")
    };
    let text = rng.pick(&["plain", "tab\there", "back\\slash", "new\nline", "ünïcödé ✓", "", "  spaced  ", "\\N"]);
    let json = rng.pick(&[r#"{"a": [1, 2.50, "x\u00e9"]}"#, r#"  {"b":null}  "#, "[]", r#""tab\tin string""#, "3"]);
    let mut values = vec![
        Some(((i * 37) % 65536) as i64 - 32768).map(|v| v.to_string()),
        Some((rng.next() as i32).to_string()),
        Some(match rng.below(10) {
            0 => i64::MIN.to_string(),
            1 => i64::MAX.to_string(),
            _ => (rng.next() as i64).to_string(),
        }),
        Some(rng.pick(&["1.5", "-0.1", "3.4028235e38", "0", "123456.789", "1e-30", "7"]).to_string()),
        Some(rng.pick(&["0.1", "-2.5e-300", "1.7976931348623157e308", "42", "3.141592653589793", "-0"]).to_string()),
        Some(decimal(rng)),
        Some(format!("{}{}.{}", rng.pick(&["", "-"]), rng.below(1_000_000), rng.below(100_000))),
        Some(date(rng)),
        Some(time_or_date(rng)),
        Some(time_or_date(rng)),
        Some(rng.pick(&["t", "f", "true", "false", "1", "0"]).to_string()),
        Some(text.to_string()),
        Some(rng.pick(&["short", "trailing   ", "", "exactly twenty chars"]).to_string()),
        Some(rng.pick(&["ab", "abcde", "", "x  "]).to_string()),
        Some(json.to_string()),
        Some(json.to_string()),
        Some(format!(
            "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
            rng.next() as u32,
            rng.below(1 << 16),
            rng.below(4096),
            rng.below(4096),
            rng.next() >> 16
        )),
        Some(format!("{}{}", time(rng).replacen(' ', rng.pick(&[" ", "T"]), 1), offset(rng))),
        Some(clock(rng)),
        Some(clock(rng)),
        Some(bits(rng, 3)),
        Some({
            let n = rng.below(20);
            bits(rng, n)
        }),
        Some(bytea(rng)),
        Some(inet(rng)),
        Some(match rng.below(4) {
            0 => grid(rng, |rng| ((rng.next() as i32) >> rng.below(31)).to_string()),
            _ => array(rng, |rng| ((rng.next() as i32) >> rng.below(31)).to_string()),
        }),
        Some(array(rng, |rng| format!("{}{}.{:03}", rng.pick(&["", "-"]), rng.below(1000), rng.below(1000)))),
        Some(array(rng, |rng| {
            let escaped = [r#""\"q\"""#, r#""a\\b""#, r#""\{\,\}""#];
            rng.pick(
                &[&["a", "\"b c\"", "\"x,y\"", "\"\"", "ünï", "\"NULL\"", "\"{}\"", "12345678"], &escaped[..]].concat(),
            )
            .to_string()
        })),
        Some(array(rng, |rng| format!("\"{}{}\"", time(rng), offset(rng)))),
        Some(date_range(rng, date)),
        Some(time_range(rng, time, offset)),
        Some(array(rng, |rng| {
            rng.pick(&[r#""{\"k\": [1, \"x\\\\y\"]}""#, r#""\"s\"""#, "3", "[]", r#""null""#, "true"]).to_string()
        })),
    ];
    for v in values.iter_mut().skip(1) {
        if rng.below(13) == 0 {
            *v = None;
        }
    }
    if unsure_every > 0 && i % unsure_every == unsure_every - 1 {
        let (column, value) = match (i / unsure_every) % 16 {
            0 => (1, "000000000000000000042"),
            1 => (5, "NaN"),
            2 => (7, "March 3, 2020"),
            3 => (10, "yes"),
            4 => (8, "2020-01-01 24:00:00"),
            5 => (17, "2020-01-01 10:00:00 PST"),
            6 => (18, "24:00:00"),
            7 => (21, "xA"),
            8 => (22, r"\x48 65"),
            9 => (23, "10.1/16"),
            10 => (24, "{ 1, 2 }"),
            11 => (24, "{ {1,2},{3,4}}"),
            12 => (25, "[0:1]={1.5,2}"),
            13 => (26, r#"{"q\"uote",b\\s}"#),
            14 => (28, "[2020-01-01, 2020-02-01)"),
            _ => (16, "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}"),
        };
        values[column] = Some(value.to_string());
    }
    values
}

/// A daterange literal: `empty`, or bounds in order, either one unbounded.
fn date_range(rng: &mut Rng, date: impl Fn(&mut Rng) -> String) -> String {
    let (a, b) = (date(rng), date(rng));
    let (low, high) = if a <= b { (a, b) } else { (b, a) };
    match rng.below(5) {
        0 => "empty".to_string(),
        1 => format!("[{low},{high})"),
        2 => format!("(,{high}]"),
        3 => format!("[{low},)"),
        _ => format!("({low},{high}]"),
    }
}

/// A tstzrange literal, its bounds quoted as the server prints them or
/// written with a `T`, one offset for both (so the lower is not above the upper).
fn time_range(rng: &mut Rng, time: impl Fn(&mut Rng) -> String, offset: impl Fn(&mut Rng) -> &'static str) -> String {
    let (a, b) = (time(rng), time(rng));
    let (low, high) = if a <= b { (a, b) } else { (b, a) };
    let zone = offset(rng);
    match rng.below(3) {
        0 => format!("[\"{low}{zone}\",\"{high}{zone}\")"),
        1 => format!("({},{}{zone}]", low.replacen(' ', "T", 1) + zone, high.replacen(' ', "T", 1)),
        _ => format!("[\"{low}{zone}\",)"),
    }
}

/// An array literal of up to four elements made by `element`, or NULLs
/// (written `NULL` or `null`).
fn array(rng: &mut Rng, element: impl Fn(&mut Rng) -> String) -> String {
    let items: Vec<String> = (0..rng.below(5))
        .map(|_| if rng.below(6) == 0 { rng.pick(&["NULL", "null"]).to_string() } else { element(rng) })
        .collect();
    format!("{{{}}}", items.join(","))
}

/// A two-dimensional array literal of one to three sub-arrays of one
/// to three elements each.
fn grid(rng: &mut Rng, element: impl Fn(&mut Rng) -> String) -> String {
    let width = 1 + rng.below(3);
    let rows: Vec<String> = (0..1 + rng.below(3))
        .map(|_| {
            let items: Vec<String> =
                (0..width).map(|_| if rng.below(6) == 0 { "NULL".into() } else { element(rng) }).collect();
            format!("{{{}}}", items.join(","))
        })
        .collect();
    format!("{{{}}}", rows.join(","))
}

/// bytea in its two text forms: hex (either case) and escaped.
fn bytea(rng: &mut Rng) -> String {
    let bytes: Vec<u8> = (0..rng.below(12)).map(|_| rng.next() as u8).collect();
    match rng.below(4) {
        0 => format!(r"\x{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()),
        1 => format!(r"\x{}", bytes.iter().map(|b| format!("{b:02X}")).collect::<String>()),
        2 => bytes.iter().map(|&b| format!(r"\{b:03o}")).collect::<String>() + r"a\\b",
        _ => rng.pick(&["plain", "", "ünï", "x y"]).to_string(),
    }
}

fn inet(rng: &mut Rng) -> String {
    let octets: Vec<String> = (0..4).map(|_| rng.below(256).to_string()).collect();
    let v4 = octets.join(".");
    match rng.below(4) {
        0 => v4,
        1 => format!("{v4}/{}", rng.below(33)),
        2 => format!("{:x}:db8::{:x}/{}", 0x2000 + rng.below(0x1000), rng.below(0x10000), rng.below(129)),
        _ => rng.pick(&["::1", "::ffff:10.0.0.1", "fe80::1:2:3:4", "::", "2001:DB8:0:0:8:800:200C:417A"]).to_string(),
    }
}

fn tsv(rows: &[Vec<Option<String>>]) -> Vec<u8> {
    let escape = |v: &str| v.replace('\\', "\\\\").replace('\t', "\\t").replace('\n', "\\n");
    let mut out = String::new();
    for row in rows {
        let fields: Vec<String> = row.iter().map(|v| v.as_deref().map_or("\\N".to_string(), escape)).collect();
        out.push_str(&fields.join("\t"));
        out.push('\n');
    }
    out.into_bytes()
}

/// CSV that quotes when it must and sometimes when it need not.
fn csv(rows: &[Vec<Option<String>>]) -> Vec<u8> {
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let fields: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, v)| match v.as_deref() {
                None => String::new(),
                Some(v) if v.is_empty() || v.contains([',', '"', '\n']) || (i + c) % 5 == 0 => {
                    format!("\"{}\"", v.replace('"', "\"\""))
                }
                Some(v) => v.to_string(),
            })
            .collect();
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out.into_bytes()
}

fn rows(count: u64, unsure_every: u64) -> Vec<Vec<Option<String>>> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    (0..count).map(|i| row(&mut rng, i, unsure_every)).collect()
}

/// Rows compared by their text form (json has no equality operator; its
/// text is the input, kept byte for byte).
fn assert_same_text_rows(db: &TestDb, a: &str, b: &str) {
    assert_eq!(db.count(a), db.count(b), "row counts of {a} and {b}");
    let diff = db.scalar(&format!(
        "SELECT count(*) FROM ((SELECT x::text FROM {a} x EXCEPT ALL SELECT y::text FROM {b} y) \
         UNION ALL (SELECT y::text FROM {b} y EXCEPT ALL SELECT x::text FROM {a} x)) d"
    ));
    assert_eq!(diff, "0", "{a} and {b} differ");
}

/// Loads `file` with sluice (binary forced) and with psql, compares, and
/// returns the report's (binary chunks, text chunks).
fn load_both_ways(db: &TestDb, file: &std::path::Path, args: &[&str], psql_options: &str) -> (u64, u64) {
    db.execute(&format!("CREATE TABLE got ({COLUMNS}); CREATE TABLE want (LIKE got)"));
    set_time_zone(db, "UTC");
    let report = file.with_extension("report.json");
    let mut full = vec![file.to_str().unwrap(), "--table", "got", "--copy-format", "binary", "--chunk-size", "4KiB"];
    full.extend_from_slice(&["--report", report.to_str().unwrap()]);
    full.extend_from_slice(args);
    let run = db.load(&full);
    run.assert_ok();
    db.psql_copy("want", file, psql_options);
    assert_same_text_rows(db, "got", "want");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let copy = &report["summary"]["copy"];
    assert_eq!(copy["planned"], "binary");
    (copy["binary_chunks"].as_u64().unwrap(), copy["text_chunks"].as_u64().unwrap())
}

/// Loads `file` into the table `got` with `extra` arguments and a report,
/// and returns the run and the report's `copy` summary (the plan, binary
/// and text chunks).
fn load_into_got(db: &TestDb, file: &std::path::Path, extra: &[&str]) -> (Run, serde_json::Value) {
    let report = file.with_extension("report.json");
    let args = [file.to_str().unwrap(), "--table", "got", "--report", report.to_str().unwrap()];
    let run = db.load(&[&args[..], extra].concat());
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    (run, report["summary"]["copy"].clone())
}

/// The line of each record in a rejects file's text, in its order.
fn rejected_lines(rejects: &str) -> Vec<u64> {
    rejects.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["line"].as_u64().unwrap()).collect()
}

/// The time zone of the database's new sessions (sluice's and psql's).
fn set_time_zone(db: &TestDb, zone: &str) {
    db.execute(&format!(
        "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET TimeZone = %L', current_database(), '{zone}'); END $$"
    ));
}

#[test]
fn binary_tsv_loads_what_text_loads_for_every_encoded_type() {
    let db = TestDb::new();
    let file = db.file("types.tsv", &tsv(&rows(3000, 0)));
    let (binary, text) = load_both_ways(&db, &file, &["--workers", "3"], "");
    assert!(binary > 100, "{binary} binary chunks");
    assert_eq!(text, 0, "every value is in a form the encoder reads");
    // The cases worth having: rounding to the modifier, NULLs, escapes, padding.
    assert_ne!(db.scalar("SELECT count(*) FROM got WHERE n3 IS NULL"), "0");
    assert_ne!(db.scalar("SELECT count(*) FROM got WHERE t LIKE '%' || chr(9) || '%'"), "0");
    assert_eq!(db.scalar("SELECT max(octet_length(c)) FROM got"), "5");
}

#[test]
fn binary_csv_loads_what_text_loads() {
    let db = TestDb::new();
    let file = db.file("types.csv", &csv(&rows(2000, 0)));
    let (binary, text) = load_both_ways(&db, &file, &["--workers", "2"], "with (format csv)");
    assert!(binary > 50 && text == 0, "{binary} binary, {text} text chunks");
}

/// Files from Windows end their lines in CRLF; they load as binary too
/// (before, every chunk went as text), exactly as text COPY loads them.
#[test]
fn crlf_files_load_as_binary_what_text_loads() {
    let db = TestDb::new();
    let crlf = |lines: Vec<u8>| -> Vec<u8> {
        lines.iter().flat_map(|&b| if b == b'\n' { vec![b'\r', b'\n'] } else { vec![b] }).collect()
    };
    for (name, data, psql_options) in
        [("crlf.tsv", crlf(tsv(&rows(1500, 0))), ""), ("crlf.csv", crlf(csv(&rows(1500, 0))), "with (format csv)")]
    {
        db.execute("DROP TABLE IF EXISTS got, want");
        let file = db.file(name, &data);
        let (binary, text) = load_both_ways(&db, &file, &["--workers", "2"], psql_options);
        assert!(binary > 50 && text == 0, "{name}: {binary} binary, {text} text chunks");
    }
}

#[test]
fn chunks_with_values_the_encoder_does_not_read_go_as_text() {
    let db = TestDb::new();
    let file = db.file("unsure.tsv", &tsv(&rows(4000, 150)));
    let (binary, text) = load_both_ways(&db, &file, &["--workers", "2"], "");
    assert!(binary > 0 && text > 0, "{binary} binary, {text} text chunks");
    let case = |n: usize| (0..4000).filter(|i| i % 150 == 149 && (i / 150) % 15 == n).count().to_string();
    assert_eq!(db.scalar("SELECT count(*) FROM got WHERE d = '2020-03-03'"), case(2));
    assert_eq!(db.scalar("SELECT count(*) FROM got WHERE ai = '{{1,2},{3,4}}'"), case(11), "spaced 2-D arrays as text");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file.with_extension("report.json")).unwrap()).unwrap();
    let why = report["summary"]["copy"]["first_fallback"].as_str().unwrap();
    assert!(
        why.ends_with(r#"record 150: a value sluice does not read with certainty as integer: "000000000000000000042""#),
        "{why}"
    );
}

#[test]
fn json_lines_into_json_and_jsonb_in_binary() {
    let db = TestDb::new();
    let mut data = String::new();
    for i in 0..3000 {
        data.push_str(&format!(r#"{{"i": {i}, "s": "tab\there \\ \u00e9", "a": [1.50, null, true]}}"#));
        data.push('\n');
    }
    let file = db.file("docs.jsonl", data.as_bytes());
    let report = file.with_extension("report.json");
    // Lines that end in CRLF load the same documents, as binary too.
    let crlf_file = db.file("docs-crlf.jsonl", data.replace('\n', "\r\n").as_bytes());
    for (ty, file) in [("jsonb", &file), ("json", &file), ("jsonb", &crlf_file), ("json", &crlf_file)] {
        // In public: the test server's role is named like the ledger's
        // schema, which comes first on its search path once it exists.
        db.execute(&format!(
            "DROP TABLE IF EXISTS got, want; CREATE TABLE public.got (doc {ty}); CREATE TABLE public.want (LIKE got)"
        ));
        // A new job each time: the same command into a table created again
        // is refused (its job loaded the table dropped since).
        let job = format!("docs-{ty}-{}", file.display());
        let args = [file.to_str().unwrap(), "--table", "got", "--chunk-size", "8KiB", "--job", &job];
        let run = db.load(&[&args[..], &["--report", report.to_str().unwrap()]].concat());
        run.assert_ok();
        assert!(!run.output().contains("schema of sluice's ledger"), "{}", run.output());
        db.psql_copy("want", file, "with (format csv, quote e'\\x01', delimiter e'\\x02')");
        assert_same_text_rows(&db, "got", "want");
        let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        assert_eq!(report["summary"]["copy"]["planned"], "binary", "auto picks binary for {ty}");
        assert_eq!(report["summary"]["copy"]["text_chunks"], 0, "{ty}");
    }
    assert_eq!(
        db.scalar("SELECT doc::text FROM got WHERE doc->>'i' = '0'"),
        data.lines().next().unwrap(),
        "json keeps its bytes"
    );
}

#[test]
fn a_type_without_an_encoder_means_text_and_says_why() {
    let db = TestDb::new();
    db.execute("CREATE TABLE got (id int, cost money)");
    let file = db.file("cost.csv", b"1,12.34\n");
    let run = db.load(&[file.to_str().unwrap(), "--table", "got"]);
    run.assert_ok();
    assert!(run.output().contains("text COPY (column \"cost\" has type money"), "{}", run.output());
    let forced = db.load(&[file.to_str().unwrap(), "--table", "got", "--copy-format", "binary"]);
    assert_eq!(forced.code, 2, "{}", forced.output());
    assert!(forced.output().contains("--copy-format binary: column \"cost\""), "{}", forced.output());
}

/// Every element type sluice encodes arrays of: the binary array names its
/// element type by OID, and a wrong one would make the server refuse every
/// row, so each is loaded and compared with what psql loads.
#[test]
fn arrays_of_every_encoded_element_type_load_as_text_loads() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE got (i2 smallint[], i4 int[], i8 bigint[], f4 real[], f8 float8[], n numeric(8,3)[], \
         d date[], ts timestamp(3)[], tz timestamptz[], tm time[], b bool[], t text[], v varchar(3)[], \
         c char(2)[], u uuid[], ip inet[], tt timetz[], iv interval[], net cidr[], mac macaddr[], \
         mac8 macaddr8[], jb jsonb[], js json[], by bytea[], grid int[]); CREATE TABLE want (LIKE got)",
    );
    let row = [
        "{1,-2}",
        "{NULL,2147483647}",
        "{-9223372036854775808}",
        "{1.5,NULL}",
        "{0.1,-2.5e-300}",
        "{1.0005,-7}",
        "{2024-02-29,1999-12-31}",
        r#"{"2020-01-01 10:00:00.1234"}"#,
        r#"{"2020-01-01 10:00:00+02",NULL}"#,
        "{23:59:59.999999}",
        "{t,f,NULL}",
        r#"{"a b","x,y",NULL,"NULL",""}"#,
        "{abc,é}",
        "{x,yz}",
        "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
        "{10.1.2.3/8,::1}",
        "{04:05:06.5+02,23:59:59-05:30}",
        r#"{"1 year 2 mons","-1 days +02:00:00",-00:00:01}"#,
        "{10.0.0.0/8,2001:db8::/32}",
        "{08:00:2b:01:02:03,NULL}",
        "{08-00-2B-01-02-03-04-05,08:00:2b:01:02:03}",
        r#"{"{\"k\": [1, \"a\\\\b\"]}",NULL,"\"s\"",3}"#,
        r#"{"{\"k\":  1}",null}"#,
        r#"{"\\x00ff","plain \\\\ text",NULL}"#,
        "{{{1,2},{3,NULL}},{{5,6},{7,8}}}",
    ];
    let line = row.iter().map(|v| format!("\"{}\"", v.replace('"', "\"\""))).collect::<Vec<_>>().join(",");
    let file = db.file("arrays.csv", format!("{line}\n{}\n", ["{}"; 25].join(",")).as_bytes());
    set_time_zone(&db, "UTC");
    let report = file.with_extension("report.json");
    let args =
        [file.to_str().unwrap(), "--table", "got", "--copy-format", "binary", "--report", report.to_str().unwrap()];
    db.load(&args).assert_ok();
    db.psql_copy("want", &file, "with (format csv)");
    assert_same_text_rows(&db, "got", "want");
    let quoting = "SELECT count(*) FROM got WHERE t[2] = 'x,y' AND t[3] IS NULL AND t[4] = 'NULL' AND t[5] = ''";
    assert_eq!(db.scalar(quoting), "1", "a comma kept, NULL a null, \"NULL\" the string");
    assert_eq!(db.scalar("SELECT count(*) FROM got WHERE cardinality(ip) = 0 AND u = '{}'"), "1");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(report["summary"]["copy"]["text_chunks"], 0, "every array encoded: {}", report["summary"]["copy"]);
}

/// Outside UTC the server reads a timestamptz without an offset in the
/// session's zone (daylight saving included): those chunks go as text and
/// load what psql loads; values with their offset go as binary.
#[test]
fn timestamps_without_an_offset_follow_the_session_time_zone() {
    let db = TestDb::new();
    db.execute("CREATE TABLE got (id int, at timestamptz); CREATE TABLE want (LIKE got)");
    set_time_zone(&db, "America/New_York");
    let mut data = String::new();
    for i in 0..2000 {
        let offset = if i < 1000 { "+02:00" } else { "" };
        data.push_str(&format!("{i}\t2021-{:02}-{:02} 0{}:30:00{offset}\n", 1 + i % 12, 1 + i % 28, i % 4));
    }
    let file = db.file("tz.tsv", data.as_bytes());
    let report = file.with_extension("report.json");
    let args = [file.to_str().unwrap(), "--table", "got", "--chunk-size", "4KiB", "--workers", "1"];
    let run = db.load(&[&args[..], &["--report", report.to_str().unwrap()]].concat());
    run.assert_ok();
    assert!(run.output().contains("without an offset (\"2021-"), "the summary says why: {}", run.output());
    db.psql_copy("want", &file, "");
    assert_same_text_rows(&db, "got", "want");
    assert_eq!(
        db.scalar("SELECT count(*) FROM got WHERE id >= 1000 AND extract(hour FROM at AT TIME ZONE 'America/New_York') <> id % 4"),
        "0",
        "read in New York time"
    );
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let copy = &report["summary"]["copy"];
    assert_eq!(copy["planned"], "binary", "{copy}");
    assert!(copy["binary_chunks"].as_u64().unwrap() > 3, "{copy}");
    assert!(copy["text_chunks"].as_u64().unwrap() > 3, "{copy}");
}

/// Dates written day and month first load as binary in the order of the
/// database's DateStyle, as psql loads them: in a day-first database
/// `3/4/2024` is the 3rd of April. So do timestamps with such dates and
/// the times exports write (`1:05:09 PM`, `13:05`).
#[test]
fn dates_day_and_month_first_load_as_binary_in_the_sessions_order() {
    for (style, april_third) in [("ISO, MDY", "4/3/2024"), ("SQL, DMY", "3/4/2024")] {
        let db = TestDb::new();
        db.execute(
            "CREATE TABLE got (id int, d date, price numeric(12,2), at timestamp); CREATE TABLE want (LIKE got)",
        );
        db.execute(&format!(
            "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET DateStyle = %L', current_database(), '{style}'); END $$"
        ));
        let mut data = format!("0,{april_third},1.00,{april_third} 12:30 AM\n");
        for i in 1..3000 {
            let (day, month, year) = (1 + i % 28, 1 + i % 12, 1990 + i % 40);
            let (hour, minute, second) = (i % 24, i % 60, i * 7 % 60);
            let (date, at) = match style {
                "ISO, MDY" => {
                    let meridiem = if hour < 12 { "AM" } else { "PM" };
                    let clock = format!("{}:{minute:02}:{second:02} {meridiem}", (hour + 11) % 12 + 1);
                    (format!("{month}/{day}/{year}"), format!("{month:02}/{day:02}/{year} {clock}"))
                }
                _ => {
                    let date = format!("{day:02}.{month:02}.{:02}", year % 100);
                    (date.clone(), format!("{date} {hour:02}:{minute:02}"))
                }
            };
            data.push_str(&format!("{i},{date},{}.{:02},{at}\n", i * 3, i % 100));
        }
        let file = db.file("dates.csv", data.as_bytes());
        let (run, copy) = load_into_got(&db, &file, &["--chunk-size", "4KiB"]);
        run.assert_ok();
        db.psql_copy("want", &file, "with (format csv)");
        assert_same_text_rows(&db, "got", "want");
        assert_eq!(db.scalar("SELECT to_char(d, 'YYYY-MM-DD') FROM got WHERE id = 0"), "2024-04-03", "{style}");
        assert_eq!(db.scalar("SELECT to_char(at, 'YYYY-MM-DD HH24:MI') FROM got WHERE id = 0"), "2024-04-03 00:30");
        assert_eq!(db.scalar("SELECT count(DISTINCT extract(hour FROM at)) FROM got"), "24", "{style}");
        assert_eq!(copy["planned"], "binary", "{style}: {copy}");
        assert!(copy["binary_chunks"].as_u64().unwrap() > 3 && copy["text_chunks"] == 0, "{style}: {copy}");
    }
}

/// A domain column is encoded as its base type (COPY reads it so, then
/// checks the domain's constraints), with the domain's modifier, through
/// domains of domains: the table loads as binary, what psql loads, and a
/// value the domain's CHECK refuses is a reject naming the domain.
#[test]
fn domains_load_as_binary_as_their_base_types() {
    let db = TestDb::new();
    db.execute(
        "CREATE DOMAIN amount AS numeric(12,2) CHECK (VALUE >= 0); CREATE DOMAIN small_amount AS amount \
         CHECK (VALUE < 1000); CREATE DOMAIN day AS date NOT NULL; CREATE DOMAIN code AS varchar(5); \
         CREATE TABLE got (id int, paid amount, due day, fee small_amount, c code); CREATE TABLE want (LIKE got)",
    );
    let (mut all, mut good) = (String::new(), String::new());
    for i in 0..3000u64 {
        let line = format!(
            "{i},{}.{:03},2024-{:02}-{:02},{}.5,c{}\n",
            i * 7 % 5000,
            i % 1000,
            1 + i % 12,
            1 + i % 28,
            i % 999,
            i % 100
        );
        all.push_str(&line);
        good.push_str(&line);
        if i % 500 == 0 {
            all.push_str(&format!("{i},-{i}.5,2024-01-01,1,neg\n"));
        }
    }
    let rejects = db.dir.path().join("got.rejects.jsonl");
    let file = db.file("domains.csv", all.as_bytes());
    let (run, copy) = load_into_got(&db, &file, &["--chunk-size", "8KiB", "--rejects", rejects.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{}", run.output());
    db.psql_copy("want", &db.file("good.csv", good.as_bytes()), "with (format csv)");
    assert_same_text_rows(&db, "got", "want");
    // Chunks with a reject, and the chunk after each, go through isolation.
    assert_eq!(copy["planned"], "binary", "{copy}");
    assert!(copy["binary_chunks"].as_u64() > Some(0) && copy["first_fallback"].is_null(), "{copy}");
    let rejects = std::fs::read_to_string(rejects).unwrap();
    assert_eq!(rejects.lines().count(), 6, "{rejects}");
    assert!(rejects.lines().all(|r| r.contains(r#"value for domain amount violates check constraint"#)), "{rejects}");
    assert_eq!(db.scalar("SELECT paid FROM got WHERE id = 1"), "7.00", "rounded to the domain's numeric(12,2)");
}

/// An enum column (or a domain over one) does not send the whole table as
/// text: binary COPY takes an enum's label as text COPY does, so a label
/// that is not the type's (another case, a space, one too long for a label)
/// is a reject with the server's reason either way.
#[test]
fn enums_load_as_binary_and_unknown_labels_are_rejects() {
    let db = TestDb::new();
    db.execute(
        "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'très content'); CREATE DOMAIN known_mood AS mood NOT NULL; \
         CREATE TABLE got (id int, m mood, k known_mood, paid numeric(12,2), day date); CREATE TABLE want (LIKE got)",
    );
    let labels = ["sad", "ok", "happy", "très content"];
    let too_long = "x".repeat(64);
    let bad = [(1, "Sad"), (1, "ok "), (1, ""), (1, too_long.as_str())];
    let spoiled = Spoiled::new(3000, (500, 250), &bad, |i| {
        let m = if i % 9 == 0 { "\\N".to_string() } else { labels[i as usize % 4].to_string() };
        let known = labels[(i / 4) as usize % 4].to_string();
        vec![
            i.to_string(),
            m,
            known,
            format!("{}.{:02}", i * 3, i % 100),
            format!("2024-{:02}-{:02}", 1 + i % 12, 1 + i % 28),
        ]
    });
    let (all, bad_lines) = (&spoiled.all, &spoiled.bad_lines);
    let rejects = db.dir.path().join("enums.rejects.jsonl");
    let file = db.file("enums.tsv", all.as_bytes());
    let (run, copy) = load_into_got(&db, &file, &["--chunk-size", "2KiB", "--rejects", rejects.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{}", run.output());
    assert_eq!(copy["planned"], "binary", "{copy}");
    // Chunks with a reject, and the chunk after each, go through isolation.
    assert!(copy["binary_chunks"].as_u64() > Some(40) && copy["first_fallback"].is_null(), "{copy}");
    let rejects = std::fs::read_to_string(rejects).unwrap();
    assert_eq!(&rejected_lines(&rejects), bad_lines, "{rejects}");
    assert!(rejects.lines().all(|r| r.contains("invalid input value for enum mood")), "{rejects}");
    db.psql_copy("want", &db.file("kept.tsv", spoiled.kept().as_bytes()), "");
    assert_same_text_rows(&db, "got", "want");
    assert_eq!(db.count("got") + bad_lines.len() as u64, 3000, "loaded and rejected add up");
}

/// A type whose input is text's own (the server's `textin` and `textrecv`),
/// such as the citext extension's, is encoded as text, so a citext column
/// does not send its table as text.
#[test]
fn citext_loads_as_binary_as_text_does() {
    let db = TestDb::new();
    db.execute(
        "CREATE EXTENSION IF NOT EXISTS citext; \
         CREATE TABLE got (id int, email citext, paid numeric(10,2), day date); CREATE TABLE want (LIKE got)",
    );
    let lines: String = (0..3000u64)
        .map(|i| {
            format!(
                "{i}\tUser.{i}@Example.COM\\tcafé\t{}.{:02}\t2024-{:02}-{:02}\n",
                i * 3,
                i % 100,
                1 + i % 12,
                1 + i % 28
            )
        })
        .collect();
    let file = db.file("emails.tsv", lines.as_bytes());
    let (run, copy) = load_into_got(&db, &file, &["--chunk-size", "8KiB"]);
    run.assert_ok();
    assert_eq!(copy["planned"], "binary", "{copy}");
    assert_eq!(copy["text_chunks"], 0, "{copy}");
    db.psql_copy("want", &file, "");
    assert_same_text_rows(&db, "got", "want");
    assert_eq!(db.scalar("SELECT count(*) FROM got WHERE email = 'USER.7@example.com\tcafé'"), "1", "case-insensitive");
}

/// A value that looks like a number or a date but that the server refuses
/// (a real too small for its type, a double too large, an integer out of
/// range, February 30th, hour 25) is a reject in a binary load, as in a
/// text one: the encoder must not turn it into a value (`1e-46` once loaded
/// as 0 in real).
#[test]
fn values_the_server_refuses_are_rejects_in_binary_too() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE got (id int, r real, f double precision, n int, day date, tm time, t text); \
         CREATE TABLE want (LIKE got)",
    );
    let refused = [
        (1, "1e-46"),
        (1, "7.006492321624085e-46"),
        (1, "3.5e38"),
        (2, "1e309"),
        (3, "2147483648"),
        (4, "2020-02-30"),
        (5, "25:00:00"),
        // Escapes that make bytes which are not UTF-8.
        (6, "\\377x"),
        (6, "caf\\xc3"),
    ];
    let spoiled = Spoiled::new(3000, (400, 7), &refused, |i| {
        let mut fields = vec![i.to_string(), format!("{}.25", i % 97), format!("{i}e-3"), (i * 7).to_string()];
        fields.extend([format!("2024-{:02}-{:02}", 1 + i % 12, 1 + i % 28), format!("{:02}:{:02}:00", i % 24, i % 60)]);
        fields.push(format!("caf\\xc3\\xa9 {i}"));
        fields
    });
    let (all, good, bad_lines) = (&spoiled.all, &spoiled.unspoiled, &spoiled.bad_lines);
    let rejects = db.dir.path().join("refused.rejects.jsonl");
    let file = db.file("refused.tsv", all.as_bytes());
    let args = ["--copy-format", "binary", "--chunk-size", "2KiB", "--rejects", rejects.to_str().unwrap()];
    let (run, copy) = load_into_got(&db, &file, &args);
    assert_eq!(run.code, 1, "{}", run.output());
    let rejects = std::fs::read_to_string(rejects).unwrap();
    assert_eq!(&rejected_lines(&rejects), bad_lines, "{rejects}");
    assert!(rejects.contains("out of range for type real"), "{rejects}");
    assert!(rejects.contains("invalid byte sequence for encoding"), "{rejects}");
    db.psql_copy("want", &db.file("good.tsv", good.as_bytes()), "");
    let dropped = bad_lines.len() as u64;
    assert_eq!(db.count("got") + dropped, db.count("want"));
    let diff = db.scalar("SELECT count(*) FROM (TABLE got EXCEPT ALL TABLE want) d");
    assert_eq!(diff, "0", "every loaded row is a good line's");
    assert!(copy["binary_chunks"].as_u64() > Some(30), "{copy}");
}

/// Isolation sends the runs of records it does not suspect as binary
/// tuples, as their chunk would have gone, so a file with a bad record in
/// most chunks does not load as text. Records the encoder reads but the
/// server refuses (a CHECK, a duplicate key) are found by the number of the
/// tuple the server names, and rejected on their own lines. A run with a
/// value the encoder leaves to the server (an exponent of five digits) is
/// abandoned part way and goes as text.
#[test]
fn isolation_sends_its_runs_as_binary() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE got (id bigint PRIMARY KEY, amount numeric(12,2) CHECK (amount >= 0), day date, note text); \
         CREATE TABLE want (id bigint, amount numeric(12,2), day date, note text)",
    );
    let bad = [(1, "-1.00"), (0, "5"), (0, "x7")];
    let spoiled = Spoiled::new(3000, (250, 100), &bad, |i| {
        let day = format!("2024-{:02}-{:02}", 1 + i % 12, 1 + i % 28);
        let exponent = if i % 500 == 301 { "e00000" } else { "" };
        vec![i.to_string(), format!("{}.{:02}{exponent}", i * 3, i % 100), day, format!("note {i}")]
    });
    let rejects = db.dir.path().join("runs.rejects.jsonl");
    let file = db.file("runs.tsv", spoiled.all.as_bytes());
    // One worker: the first of two rows with one key is the one that loads.
    let args =
        ["--chunk-size", "8KiB", "--workers", "1", "--defer-indexes", "no", "--rejects", rejects.to_str().unwrap()];
    let (run, copy) = load_into_got(&db, &file, &args);
    assert_eq!(run.code, 1, "{}", run.output());
    let rejects = std::fs::read_to_string(rejects).unwrap();
    assert_eq!(rejected_lines(&rejects), spoiled.bad_lines, "{rejects}");
    for reason in ["violates check constraint", "duplicate key value", "invalid input syntax for type bigint"] {
        assert_eq!(rejects.lines().filter(|r| r.contains(reason)).count(), 4, "{reason}: {rejects}");
    }
    assert_eq!(copy["planned"], "binary", "{copy}");
    // Every chunk has a reject or follows one, and goes through isolation:
    // those without a number with an exponent go mostly as binary.
    let report = std::fs::read(file.with_extension("report.json")).unwrap();
    let report: serde_json::Value = serde_json::from_slice(&report).unwrap();
    let with_exponent = |line: u64| (line - 1) % 500 == 301;
    let chunks = report["chunks"].as_array().unwrap();
    for chunk in chunks {
        let first = chunk["first_line"].as_u64().unwrap();
        if !(first..first + chunk["records"].as_u64().unwrap()).any(with_exponent) {
            assert_eq!(chunk["binary"], true, "{chunk}");
        }
    }
    // The run with an exponent went as text (its chunk may still go mostly
    // as binary: a suspect whose key a later record may repeat splits the
    // run, to be copied in input order).
    let first_fallback = copy["first_fallback"].as_str().unwrap_or_default();
    assert!(first_fallback.contains("runs.tsv record 302: ") && first_fallback.contains("903.01"), "{copy}");
    db.psql_copy("want", &db.file("kept.tsv", spoiled.kept().as_bytes()), "");
    assert_same_text_rows(&db, "got", "want");
    assert_eq!(db.scalar("SELECT count(*) FROM got WHERE id % 500 = 301"), "6", "the numbers with an exponent loaded");
}

/// Values at the edges of what each type's text input takes (limits,
/// rounding past microseconds or the scale, leap seconds, hour 24, other
/// spellings, underflow and overflow), each line a chunk of its own, load as
/// binary exactly as as text: the same rows, and the same lines rejected.
/// Whatever the encoder reads must be what the server reads, and whatever
/// the server refuses the encoder must leave to it.
#[test]
fn edge_values_load_as_binary_exactly_as_as_text() {
    let db = TestDb::new();
    let mut binary_chunks = 0;
    for zone in ["UTC", "America/New_York"] {
        set_time_zone(&db, zone);
        for (n, (sql_type, values)) in EDGE_VALUES.iter().enumerate() {
            if zone != "UTC" && !sql_type.starts_with("timestamp") && *sql_type != "tstzrange" {
                continue;
            }
            let file = db.file(&format!("edge{n}.tsv"), (values.join("\n") + "\n").as_bytes());
            let mut loaded = Vec::new();
            for copy in ["binary", "text"] {
                let table = format!("{copy}{n}");
                db.execute(&format!("DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (v {sql_type})"));
                let (report, rejects) = (file.with_extension(format!("{copy}.json")), file.with_extension("rejects"));
                let _ = std::fs::remove_file(&rejects);
                let run = db.load(&[
                    file.to_str().unwrap(),
                    "--table",
                    &table,
                    "--copy-format",
                    copy,
                    "--chunk-size",
                    "1",
                    "--workers",
                    "2",
                    "--restart",
                    "--report",
                    report.to_str().unwrap(),
                    "--rejects",
                    rejects.to_str().unwrap(),
                ]);
                assert!(run.code <= 1, "{sql_type}: {}", run.output());
                let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
                binary_chunks += report["summary"]["copy"]["binary_chunks"].as_u64().unwrap_or(0);
                let mut lines: Vec<u64> = std::fs::read_to_string(&rejects)
                    .unwrap_or_default()
                    .lines()
                    .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["line"].as_u64().unwrap())
                    .collect();
                lines.sort();
                loaded.push((
                    lines,
                    db.scalar(&format!("SELECT string_agg(v::text, ' | ' ORDER BY v::text) FROM {table}")),
                ));
            }
            assert_eq!(loaded[0], loaded[1], "{sql_type} in {zone}: binary (left) and text (right) load differently");
        }
    }
    assert!(binary_chunks > 50, "{binary_chunks} lines went as binary");
}

/// Per type, text values at the edges of its input (as TSV fields).
const EDGE_VALUES: &[(&str, &[&str])] = &[
    (
        "numeric",
        &[
            "0",
            "-0",
            "+1",
            ".5",
            "5.",
            "00012.3400",
            "1e5",
            "NaN",
            "-inf",
            " 1",
            "1 ",
            "0.0000000001",
            "-.0",
            "123456789012345678901234567890.123456789",
            "+.1",
            "-0.000",
        ],
    ),
    (
        "numeric(15,2)",
        &["1.005", "1.015", "-1.005", "99999999999999.995", "9999999999999.994", "0.004", "-0.005", "12.345000"],
    ),
    ("numeric(5,-2)", &["12345", "149", "150", "9999999"]),
    (
        "date",
        &[
            "2020-01-01",
            "2020-02-30",
            "2020-02-29",
            "2019-02-29",
            "0001-01-01",
            "0000-01-01",
            "10000-01-01",
            "2020-1-1",
            "20200101",
            "infinity",
            "epoch",
            "2020-01-01 BC",
            "5874897-12-31",
            "5874898-01-01",
            "2020-13-01",
            "2020-00-10",
            "2020-01-00",
            "2020-01-32",
            "2020-01-01T00:00",
        ],
    ),
    (
        "timestamp",
        &[
            "2020-01-01 00:00:00",
            "2020-01-01T00:00:00",
            "2020-01-01 24:00:00",
            "2020-01-01 23:59:60",
            "2020-01-01 23:59:60.5",
            "2020-01-01 23:59:59.9999995",
            "2020-01-01 00:00:00.1234565",
            "2020-01-01 00:00:00.1234575",
            "2020-01-01 00:00:00.0000005",
            "2020-01-01 00:00:00.123456789",
            "2020-01-01 00:00:00.000000500000000000000001",
            "2020-01-01 00:00:00.0000004999999999999999999",
            "294276-12-31 23:59:59.9999994",
            "2020-01-01 00:00",
            "2020-01-01 0:0:0",
            "2020-01-01",
            "294276-12-31 23:59:59.999999",
            "294277-01-01 00:00:00",
            "2020-01-01 12:60:00",
            "2020-01-01 25:00:00",
            "4714-11-24 00:00:00 BC",
            "2020-01-01 00:00:00.",
            "2020-06-01 00:00:00+02",
            "0001-01-01 00:00:00",
            "10000-01-01 00:00:00",
        ],
    ),
    (
        "timestamptz",
        &[
            "2020-01-01 00:00:00Z",
            "2020-01-01 00:00:00+05",
            "2020-01-01 00:00:00+05:30",
            "2020-01-01 00:00:00+0530",
            "2020-01-01 00:00:00-00",
            "2020-01-01 00:00:00+15:59",
            "2020-01-01 00:00:00+16:00",
            "2020-01-01 00:00:00+5",
            "2020-01-01 00:00:00 UTC",
            "2020-01-01 00:00:00+05:30:15",
            "2020-01-01T00:00:00.5Z",
            "2020-01-01T00:00:00.123456789Z",
            "2020-01-01 00:00:00.1234565+05:30",
            "2020-01-01 23:59:60Z",
            "2020-01-01 24:00:00Z",
            "2020-01-01 00:00:00",
            "2020-01-01Z",
            "2020-01-01 00:00:00+05:3",
            "294276-12-31 23:59:59.999999+00",
            "294276-12-31 23:59:59.999999-01",
            "4714-11-24 00:00:00+01",
            "2020-03-08 02:30:00",
        ],
    ),
    (
        "time",
        &[
            "24:00:00",
            "24:00:01",
            "23:59:60",
            "23:59:60.5",
            "12:00",
            "12:00:00.0000005",
            "23:59:59.9999995",
            "12:00:00.1234565",
            "12:00:00.1234575",
            "23:59:59.99999949",
            "1:2:3",
            "25:00:00",
            "12:60:00",
            "allballs",
        ],
    ),
    (
        "real",
        &[
            "1.5",
            "3.4028235e38",
            "3.4028236e38",
            "1e-46",
            "1e-45",
            "1.17549435e-38",
            "1.0000000596046447753906250000001",
            "1.000000059604644775390625",
            "NaN",
            "-inf",
            " 1.5",
            "0x10",
            "1.5e",
            "-0",
            "7.006492321624085e-46",
            "16777217",
            "0.1",
        ],
    ),
    (
        "double precision",
        &[
            "1e308",
            "1e309",
            "1e-400",
            "4.9e-324",
            "2.4e-324",
            "NaN",
            "-Infinity",
            " 1.5",
            "0x1p3",
            "-0",
            "2.2250738585072011e-308",
            "9007199254740993",
            "1.7976931348623159e308",
        ],
    ),
    ("smallint", &["32767", "32768", "-32768", "-32769", "+5", " 5", "007", "-0", "0x1F", "1_000", "1.0"]),
    ("integer", &["2147483647", "2147483648", "-2147483648", "-2147483649", "0o17", "00000000000000000000000000042"]),
    (
        "bigint",
        &[
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "+0",
            "0000000000000000000001",
        ],
    ),
    ("boolean", &["t", "f", "true", "TRUE", "yes", "on", "1", "0", " t", "tr", "fa", "y", "of", "off", "True "]),
    (
        "uuid",
        &[
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
        ],
    ),
    (
        "bytea",
        &[r"\\x", r"\\x00ff", r"\\xABcd", r"\\x0", r"\\x 00", r"\\x0g", "plain", r"\\001a", r"\\\\", r"\\400", r"\\39"],
    ),
    (
        "inet",
        &[
            "1.2.3.4",
            "1.2.3.4/32",
            "1.2.3.4/33",
            "::1",
            "::ffff:1.2.3.4",
            "1.2.3",
            "1.2.3.4/24",
            "01.02.03.04",
            "1.2.3.4/0",
            "::/0",
            "10/8",
            "::ffff:1.2.3.4/128",
            "1::2:3:4:5:6:7:8",
        ],
    ),
    ("bit(3)", &["101", "10", "1011", "x5", "B101"]),
    ("varbit", &["", "1", "x1F", "X1f"]),
    ("jsonb", &[r#"{"a":1,"a":2}"#, "1.000", "1e400", r#""\\u0000""#, "  {} "]),
    (
        "int4range",
        &[
            "[1,5]",
            "(1,5)",
            "[5,1)",
            "empty",
            "(,)",
            "[,5)",
            "[1,)",
            r#"["1","5"]"#,
            "[1,1)",
            "[1,2147483647]",
            " [1,5)",
            "EMPTY",
            "[1, 5)",
            "[a,5)",
        ],
    ),
    ("int8range", &["[-9223372036854775808,0]", "(0,9223372036854775807]"]),
    ("numrange", &["[1.5,2.25)", "(,0.50]", "[2,1]", "[NaN,1)", "[1e3,)"]),
    (
        "daterange",
        &[
            "[2024-01-01,2024-02-01)",
            "[2024-01-01,2024-01-01)",
            "(2024-01-01,2024-01-02)",
            "[2024-01-01,2024-01-01]",
            "[2024-02-30,)",
            "[,infinity)",
            "[-infinity,2024-01-01]",
        ],
    ),
    ("tsrange", &["[2024-01-01 10:00,2024-01-01 11:00)", r#"["2024-01-01 10:00:00",)"#, "[2024-01-01T10:00:00.5,]"]),
    (
        "tstzrange",
        &[
            r#"["2024-01-01 10:00:00+00","2024-01-02 00:00:00+02")"#,
            "[2024-01-01T10:00:00Z,)",
            r#"("2024-01-01 10:00:00+00","2024-01-01 09:00:00+00")"#,
            r#"["2024-01-01 10:00:00","2024-01-02 10:00:00")"#,
        ],
    ),
];

/// Random values around each type's edges (digit runs with leading zeros,
/// exponents near the float limits, months 0-13, hour 25, second 61, BC,
/// offsets of every shape, strings longer than their type allows, JSON with
/// odd escapes), encoded by the encoder wherever it is sure: those the
/// server's own text input accepts are loaded by one binary COPY a type and
/// must equal its reading of the same text; each one it refuses must be
/// refused as binary too (a COPY of its own). The server is the oracle, so
/// this finds what a list of chosen values misses (it found real's
/// underflow: `1.6e-82` loaded as 0). Modifiers (`numeric(15,2)`,
/// `timestamp(3)`, `character(5)`) are the server's to apply to binary
/// values as to text: the encoder reads the base type. The server reads the
/// text by assignment, as COPY's input does (an explicit cast would cut a
/// string too long for `character(5)` where COPY refuses it).
#[test]
fn the_encoder_reads_random_values_as_the_server_does() {
    let db = TestDb::new();
    set_time_zone(&db, "UTC");
    let mut rng = Rng(fuzz_seed());
    for &(sql_type, generate) in FUZZED {
        encode_random_values_as_the_server_reads_them(&db, &mut rng, sql_type, generate);
    }
}

/// Under `IntervalStyle = sql_standard` the server reads some intervals
/// otherwise (`-1 2:00:00` is minus a day and two hours): the encoder
/// leaves those to it, and reads the rest as it does.
#[test]
fn intervals_read_alike_in_the_sql_standard_style() {
    let db = TestDb::new();
    db.execute(
        "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET IntervalStyle = sql_standard', current_database()); END $$",
    );
    let mut rng = Rng(fuzz_seed());
    encode_random_values_as_the_server_reads_them(&db, &mut rng, "interval", fuzzed_interval);
}

/// Dates with day and month first (`12/31/2024`, `31.12.24`), as US and
/// European exports write them, are read in the order of the session's
/// DateStyle, as the server reads them, whichever that is; with year first
/// (`YMD`) they are the server's alone. So are timestamps with such dates
/// and the times of day exports write (`1:45 PM`, `13:45`).
#[test]
fn dates_and_timestamps_read_in_the_sessions_order_as_the_server_reads_them() {
    let mut rng = Rng(fuzz_seed());
    for style in ["ISO, MDY", "ISO, DMY", "SQL, DMY", "German", "Postgres, YMD"] {
        let db = TestDb::new();
        db.execute(&format!(
            "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET DateStyle = %L', current_database(), '{style}'); END $$"
        ));
        encode_random_values_as_the_server_reads_them(&db, &mut rng, "date", fuzzed_ordered_date);
        if !style.ends_with("YMD") {
            // Under YMD the encoder leaves them all to the server.
            encode_random_values_as_the_server_reads_them(&db, &mut rng, "date", fuzzed_named_month_date);
        }
        // A timestamp in a date column keeps its date.
        encode_random_values_as_the_server_reads_them(&db, &mut rng, "date", fuzzed_exported_timestamp);
        encode_random_values_as_the_server_reads_them(
            &db,
            &mut rng,
            "timestamp without time zone",
            fuzzed_exported_timestamp,
        );
        encode_random_values_as_the_server_reads_them(
            &db,
            &mut rng,
            "timestamp with time zone",
            fuzzed_exported_timestamp,
        );
    }
}

/// One type of the test above: 2,000 values from `generate`.
fn encode_random_values_as_the_server_reads_them(db: &TestDb, rng: &mut Rng, sql_type: &str, generate: Generator) {
    let options = sluice::format::FormatOptions::new(sluice::format::FormatKind::Tsv);
    let line = |n: usize, value: &str| {
        let escaped = value.replace('\\', "\\\\").replace('\t', "\\t").replace('\n', "\\n").replace('\r', "\\r");
        format!("{n}\t{escaped}\n")
    };
    {
        let values: Vec<String> = (0..2000)
            .map(|_| {
                let value = generate(rng);
                with_spaces_around(rng, value)
            })
            .collect();
        db.execute(&format!(
            "DROP TABLE IF EXISTS raw, got; CREATE TABLE raw (n int, v text); CREATE TABLE got (n int, v {sql_type}); \
             CREATE OR REPLACE FUNCTION server_reads(t text) RETURNS text LANGUAGE plpgsql AS \
             $$ DECLARE v {sql_type}; BEGIN v := t; RETURN v::text; EXCEPTION WHEN others THEN RETURN 'refused'; END $$"
        ));
        let mut session = db.session();
        let text: String = values.iter().enumerate().map(|(n, v)| line(n, v)).collect();
        session.copy_rows("COPY raw FROM STDIN", text.as_bytes()).unwrap();
        let readings = session.query("SELECT server_reads(v) FROM raw ORDER BY n", &[]).unwrap();
        let columns = [("n".to_string(), "integer".to_string()), ("v".to_string(), sql_type.to_string())];
        let mut encoder = BinaryEncoder::new(&columns, &options).unwrap().bare_timestamps_are_utc();
        let date_style = session.query("SELECT current_setting('DateStyle')", &[]).unwrap()[0][0].clone().unwrap();
        if let Some(order) = binary::DateOrder::of_date_style(&date_style) {
            encoder = encoder.dates_in_order(order);
        }
        let (mut accepted, mut refused) = (binary::HEADER.to_vec(), Vec::new());
        for (n, value) in values.iter().enumerate() {
            let mut row = Vec::new();
            encoder.begin_chunk();
            if encoder.encode(line(n, value).as_bytes(), true, &mut row).is_err() {
                continue;
            }
            match readings[n][0].as_deref() {
                Some("refused") => refused.push((value, row)),
                _ => accepted.extend_from_slice(&row),
            }
        }
        accepted.extend_from_slice(binary::TRAILER);
        if let Err(e) = session.copy_rows("COPY got FROM STDIN WITH (FORMAT binary)", &accepted) {
            panic!("{sql_type}: the server refused a value the encoder read: {e}");
        }
        let loaded = db.count("got");
        assert!(loaded > values.len() as u64 / 20, "{sql_type}: only {loaded} of {} values loaded", values.len());
        eprintln!(
            "{sql_type}: {loaded} of {} values encoded and loaded, {} encoded and refused",
            values.len(),
            refused.len()
        );
        let differ = session
            .query(
                "SELECT raw.v, server_reads(raw.v), got.v::text FROM got JOIN raw USING (n) \
                 WHERE server_reads(raw.v) IS DISTINCT FROM got.v::text LIMIT 5",
                &[],
            )
            .unwrap();
        assert!(differ.is_empty(), "{sql_type}: (text, the server's reading, binary's): {differ:?}");
        for (value, row) in refused {
            let alone = [binary::HEADER, &row, binary::TRAILER].concat();
            let copied = session.copy_rows("COPY got FROM STDIN WITH (FORMAT binary)", &alone);
            assert!(copied.is_err(), "{sql_type}: {value:?} loaded as binary, which the server refuses as text");
        }
    }
}

type Generator = fn(&mut Rng) -> String;

/// Per type, a generator of values around its edges.
/// One value in ten with white space at either end (as hand-written CSV
/// and fixed-width reports have it), of the kinds the server's `isspace`
/// takes and, NBSP, one it does not.
fn with_spaces_around(rng: &mut Rng, value: String) -> String {
    if rng.below(10) != 0 {
        return value;
    }
    let mut space = || rng.pick(&["", " ", "  ", "\t", "\n", "\r", "\x0b", "\x0c", " \t", "\u{a0}"]);
    format!("{}{value}{}", space(), space())
}

const FUZZED: &[(&str, Generator)] = &[
    ("numeric", |rng| {
        let exponent = rng.below(10) == 0;
        fuzzed_number(rng, exponent)
    }),
    ("real", fuzzed_float),
    ("double precision", fuzzed_float),
    ("smallint", |rng| fuzzed_integer(rng, 6)),
    ("integer", |rng| fuzzed_integer(rng, 11)),
    ("bigint", |rng| fuzzed_integer(rng, 21)),
    ("date", fuzzed_date),
    ("time without time zone", fuzzed_clock),
    ("time without time zone", fuzzed_exported_time),
    ("timestamp without time zone", |rng| fuzzed_timestamp(rng, false)),
    ("timestamp with time zone", |rng| fuzzed_timestamp(rng, true)),
    ("inet", fuzzed_inet),
    ("cidr", fuzzed_cidr),
    ("macaddr", fuzzed_mac),
    ("macaddr8", fuzzed_mac),
    ("uuid", fuzzed_uuid),
    ("bytea", fuzzed_bytea),
    ("boolean", |rng| {
        let words =
            ["t", "f", "true", "false", "1", "0", "yes", "no", "on", "off", "tr", "y", "n", "of", "ye", "o", "2"];
        let word = rng.pick(&words);
        let word = match rng.below(4) {
            0 => word.to_uppercase(),
            1 => word[..1].to_uppercase() + &word[1..],
            _ => word.to_string(),
        };
        format!("{}{word}{}", rng.pick(&["", "", " "]), rng.pick(&["", "", " "]))
    }),
    // Modifiers: the server applies them to binary values as to text.
    ("numeric(15,2)", |rng| shortened(rng, false, 20)),
    ("numeric(6,4)", |rng| shortened(rng, true, 10)),
    ("timestamp(3) without time zone", |rng| fuzzed_timestamp(rng, false)),
    ("timestamp(0) with time zone", |rng| fuzzed_timestamp(rng, true)),
    ("time(2) without time zone", fuzzed_clock),
    ("time with time zone", fuzzed_clock_with_offset),
    ("time(0) with time zone", fuzzed_clock_with_offset),
    ("interval", fuzzed_interval),
    ("interval(2)", fuzzed_interval),
    ("text", fuzzed_text),
    ("character(5)", fuzzed_text),
    ("character varying(5)", fuzzed_text),
    ("bit(5)", fuzzed_bits),
    ("bit varying(8)", fuzzed_bits),
    ("json", |rng| fuzzed_json(rng, 0)),
    ("jsonb", |rng| fuzzed_json(rng, 0)),
    ("int4range", |rng| fuzzed_range(rng, |rng| fuzzed_integer(rng, 11))),
    ("int8range", |rng| fuzzed_range(rng, |rng| fuzzed_integer(rng, 21))),
    ("numrange", |rng| fuzzed_range(rng, |rng| shortened(rng, true, 12))),
    ("daterange", |rng| fuzzed_range(rng, fuzzed_date)),
    ("tsrange", |rng| fuzzed_range(rng, |rng| fuzzed_timestamp(rng, false))),
    ("tstzrange", |rng| fuzzed_range(rng, |rng| fuzzed_timestamp(rng, true))),
    ("integer[]", |rng| fuzzed_array(rng, |rng| fuzzed_integer(rng, 11))),
    ("numeric(6,2)[]", |rng| fuzzed_array(rng, |rng| shortened(rng, true, 8))),
    ("text[]", |rng| fuzzed_array(rng, fuzzed_text)),
    ("jsonb[]", |rng| fuzzed_array(rng, |rng| fuzzed_json(rng, 0))),
    ("bytea[]", |rng| fuzzed_array(rng, fuzzed_bytea)),
];

/// An array literal of fuzzed elements: one to three dimensions of one to
/// three elements each, now and then a sub-array longer than its
/// neighbours, a space after a comma, explicit bounds or none at all.
fn fuzzed_array(rng: &mut Rng, element: Generator) -> String {
    let sizes: Vec<u64> = (0..1 + rng.below(3)).map(|_| 1 + rng.below(3)).collect();
    let literal = nested_items(rng, element, &sizes);
    match rng.below(25) {
        0 => "{}".to_string(),
        1 => format!("[1:{}]={literal}", sizes[0]),
        2 => literal.replacen('{', "{{}", 1),
        _ => literal,
    }
}

fn nested_items(rng: &mut Rng, element: Generator, sizes: &[u64]) -> String {
    let Some((&size, inner)) = sizes.split_first() else { return array_item(rng, element) };
    let size = size + u64::from(rng.below(30) == 0);
    let items: Vec<String> = (0..size).map(|_| nested_items(rng, element, inner)).collect();
    format!("{{{}}}", items.join(rng.pick(&[",", ",", ",", ",", ",", ",", ",", ", "])))
}

/// One element: plain where it may be, else quoted with its quotes and
/// backslashes escaped; now and then quoted or escaped where it need not
/// be, or NULL in some spelling.
fn array_item(rng: &mut Rng, element: Generator) -> String {
    if rng.below(12) == 0 {
        return rng.pick(&["NULL", "null", "\"NULL\"", "Null"]).to_string();
    }
    let value = element(rng);
    let special = |b: u8| b" \t\n\r\x0b\x0c{}\",\\".contains(&b);
    let plain = !value.is_empty() && !value.eq_ignore_ascii_case("null") && !value.bytes().any(special);
    if plain && rng.below(4) != 0 {
        return value;
    }
    let mut quoted = String::from('"');
    for c in value.chars() {
        if c == '"' || c == '\\' || rng.below(20) == 0 {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted + "\""
}

/// A range literal of fuzzed bounds: brackets of either kind, each bound
/// unbounded, plain, quoted or after a space (or both the same), and now
/// and then `empty` in some spelling.
fn fuzzed_range(rng: &mut Rng, bound: Generator) -> String {
    if rng.below(10) == 0 {
        return rng.pick(&["empty", "EMPTY", " empty", "Empty"]).to_string();
    }
    let side = |rng: &mut Rng| match rng.below(12) {
        0 => String::new(),
        1 => format!("\"{}\"", bound(rng)),
        2 => format!(" {}", bound(rng)),
        _ => bound(rng),
    };
    // Half the time both bounds alike: one value the encoder reads makes
    // a range it reads, and `[x,x)` is empty.
    let lower = side(rng);
    let upper = if rng.below(2) == 0 { lower.clone() } else { side(rng) };
    let open = rng.pick(&["[", "(", "[", "[", "(", " ["]);
    format!("{open}{lower},{upper}{}", rng.pick(&["]", ")", ")", "]", ")", ") "]))
}

/// A number of at most `most` characters, so that many fit a modifier.
fn shortened(rng: &mut Rng, exponent: bool, most: u64) -> String {
    let exponent = exponent && rng.below(5) == 0;
    let number = fuzzed_number(rng, exponent);
    number.chars().take(1 + rng.below(most) as usize).collect()
}

/// Up to 8 characters: multibyte ones, spaces (which `character(n)` may
/// cut off at its end), quotes and backslashes.
fn fuzzed_text(rng: &mut Rng) -> String {
    (0..rng.below(9)).map(|_| rng.pick(&["a", "Z", " ", " ", "é", "日", "😀", "\\", "'", "\"", "0"])).collect()
}

/// Bit strings as `bit`'s text input takes them (and some it does not):
/// binary digits, or `x` and hex digits, optionally after a `b`.
fn fuzzed_bits(rng: &mut Rng) -> String {
    let (prefix, digits): (&str, &[&str]) = match rng.below(4) {
        0 => (rng.pick(&["x", "X"]), &["0", "f", "A", "9", "g"]),
        1 => (rng.pick(&["b", "B", ""]), &["0", "1", "0", "1", "2", " "]),
        _ => ("", &["0", "1"]),
    };
    // Lengths that fit bit(5) and bit varying(8) often.
    let count = match rng.below(4) {
        0 | 1 => 5,
        2 => 2,
        _ => rng.below(11),
    };
    let digits: String = (0..count).map(|_| rng.pick(digits)).collect();
    format!("{prefix}{digits}")
}

/// A JSON document up to 3 levels deep, with duplicate keys, escapes (NUL,
/// surrogate pairs and lone surrogates among them), numbers of every shape,
/// and now and then a syntax error.
fn fuzzed_json(rng: &mut Rng, depth: u32) -> String {
    let space = |rng: &mut Rng| rng.pick(&["", "", " "]).to_string();
    let string = |rng: &mut Rng| {
        let pieces = ["a", "é", "\\n", "\\\"", "\\\\", "\\u00e9", "\\u0000", "\\ud83d\\ude00", "\\ud800", "\\/", " "];
        let body: String = (0..rng.below(4)).map(|_| rng.pick(&pieces)).collect();
        format!("\"{body}\"")
    };
    let document = match if depth < 3 { rng.below(6) } else { 5 } {
        0 => {
            let members: Vec<String> = (0..rng.below(4))
                .map(|_| {
                    format!("{}:{}{}", rng.pick(&["\"a\"", "\"b\"", "\"a\""]), space(rng), fuzzed_json(rng, depth + 1))
                })
                .collect();
            format!("{{{}}}", members.join(rng.pick(&[",", ", ", ",", ",,"])))
        }
        1 => {
            let items: Vec<String> = (0..rng.below(4)).map(|_| fuzzed_json(rng, depth + 1)).collect();
            format!("[{}]", items.join(","))
        }
        2 => rng.pick(&["null", "true", "false", "nul", "True"]).to_string(),
        3 => fuzzed_number(rng, true).chars().take(12).collect(),
        _ => string(rng),
    };
    format!("{}{document}{}", space(rng), space(rng))
}

/// Up to `most` digits, zeros more often than other digits.
fn fuzzed_digits(rng: &mut Rng, most: u64) -> String {
    (0..rng.below(most + 1))
        .map(|_| if rng.below(10) < 3 { '0' } else { (b'0' + rng.below(10) as u8) as char })
        .collect()
}

fn fuzzed_number(rng: &mut Rng, exponent: bool) -> String {
    let mut s = rng.pick(&["", "", "-", "+"]).to_string() + &fuzzed_digits(rng, 22);
    if rng.below(10) < 6 {
        s = s + "." + &fuzzed_digits(rng, 22);
    }
    if exponent && rng.below(10) < 4 {
        let magnitude = match rng.below(3) {
            0 => rng.below(400),
            1 => 30 + rng.below(20),
            _ => 300 + rng.below(30),
        };
        s = format!("{s}{}{}{magnitude}", rng.pick(&["e", "E"]), rng.pick(&["", "-", "+"]));
    }
    if rng.below(30) == 0 {
        s = format!("{}{s}{}", rng.pick(&[" ", ""]), rng.pick(&[" ", "x", "_1", ""]));
    }
    s
}

/// A number, or one time in eight a word the server's float input may read.
fn fuzzed_float(rng: &mut Rng) -> String {
    if rng.below(8) > 0 {
        return fuzzed_number(rng, true);
    }
    let word = rng.pick(&["NaN", "nan", "Infinity", "inf", "INF", "infinit", "nan(1)", "Infinityy", "in"]);
    rng.pick(&["", "", "-", "+", " "]).to_string() + word
}

fn fuzzed_integer(rng: &mut Rng, most: u64) -> String {
    rng.pick(&["", "", "-", "+"]).to_string() + &fuzzed_digits(rng, most)
}

/// `width` digits at least, zero-padded.
fn padded(value: u64, width: usize) -> String {
    format!("{value:0width$}")
}

fn fuzzed_date(rng: &mut Rng) -> String {
    let year = match rng.below(4) {
        0 => rng.below(3001),
        1 => rng.below(100_000),
        2 => 5_874_890 + rng.below(10),
        _ => 4_700 + rng.below(21),
    };
    let width = |rng: &mut Rng| [1, 2, 2, 2][rng.below(4) as usize];
    let year = padded(year, [1, 2, 4, 4, 4, 5][rng.below(6) as usize]);
    let (month, day) = (padded(rng.below(14), width(rng)), padded(rng.below(33), width(rng)));
    let separator = rng.pick(&["-", "-", "-", "/", "."]);
    let other = if rng.below(10) == 0 { rng.pick(&["-", "/", "."]) } else { separator };
    format!("{year}{separator}{month}{other}{day}{}", if rng.below(20) == 0 { " BC" } else { "" })
}

/// A date with day and month first, or now and then year first: fields of
/// one to three digits (months and days up to 33), years of one to five,
/// separators alike or not, and what may follow a date.
fn fuzzed_ordered_date(rng: &mut Rng) -> String {
    if rng.below(3) == 0 {
        return fuzzed_date(rng);
    }
    if rng.below(6) == 0 {
        // Digits alone: `YYYYMMDD` as warehouses export it, and near misses.
        let (month, day) = (rng.below(14), rng.below(33));
        let year = padded(rng.below(10_000), [2, 3, 4, 4, 4, 5][rng.below(6) as usize]);
        return format!("{year}{}{}", padded(month, 2), padded(day, 2));
    }
    let small = |rng: &mut Rng| {
        let value = if rng.below(4) == 0 { rng.below(34) } else { 1 + rng.below(12) };
        padded(value, [1, 2, 2, 2, 3][rng.below(5) as usize])
    };
    let year = match rng.below(3) {
        0 => rng.below(100),
        _ => rng.below(10_000),
    };
    let year = padded(year, [1, 2, 2, 3, 4, 4, 4, 4, 4, 5][rng.below(10) as usize]);
    let separator = rng.pick(&["/", "/", "/", "-", ".", " "]);
    let other = if rng.below(10) == 0 { rng.pick(&["/", "-", ".", ""]) } else { separator };
    let (first, second) = (small(rng), small(rng));
    let after = rng.pick(&["", "", "", "", "", "", "", "", " BC", " ", "AD", " 00:00"]);
    format!("{first}{separator}{second}{other}{year}{after}")
}

/// A date with the month's name, as Oracle writes them (`13-MAR-24`), and
/// near misses: days 0-33 of one to three digits, names and abbreviations
/// in any case and words that only start so, years of one to five digits,
/// separators mixed, the month first, and what may follow.
fn fuzzed_named_month_date(rng: &mut Rng) -> String {
    let day = padded(rng.below(34), [1, 2, 2, 2, 3][rng.below(5) as usize]);
    let name = rng.pick(&[
        "jan",
        "feb",
        "mar",
        "apr",
        "may",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "january",
        "february",
        "march",
        "april",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "ma",
        "marc",
        "septem",
        "octo",
        "junee",
        "today",
    ]);
    let name = match rng.below(3) {
        0 => name.to_uppercase(),
        1 => name[..1].to_uppercase() + &name[1..],
        _ => name.to_string(),
    };
    let year = padded(rng.below(10_000), [1, 2, 2, 2, 3, 4, 4, 4, 5][rng.below(9) as usize]);
    let separator = rng.pick(&["-", "-", "-", "/", ".", " "]);
    let other = if rng.below(10) == 0 { rng.pick(&["/", "-", ".", ""]) } else { separator };
    let after = rng.pick(&["", "", "", "", "", "", " BC", " ", "AD", " 00:00"]);
    match rng.below(10) {
        0 => format!("{name}{separator}{day}{other}{year}{after}"),
        _ => format!("{day}{separator}{name}{other}{year}{after}"),
    }
}

/// A timestamp as exports write it: a date (ISO, day and month first, or
/// one of [`fuzzed_ordered_date`]'s or [`fuzzed_named_month_date`]'s), then a time of day with hours and minutes of one or two digits, seconds
/// or not, on a 24- or 12-hour clock (`AM`, `pm`, `p.m.`, and words that
/// only start so), an offset or not, and what may follow.
fn fuzzed_exported_timestamp(rng: &mut Rng) -> String {
    // Half the dates well formed, so that the times are read in every
    // DateStyle.
    let (year, month, day) = (1 + rng.below(9999), 1 + rng.below(12), 1 + rng.below(31));
    let date = match rng.below(5) {
        0 => fuzzed_ordered_date(rng),
        4 => fuzzed_named_month_date(rng),
        1 => format!("{}-{}-{}", padded(year, 4), padded(month, 2), padded(day, 2)),
        _ => format!("{month}/{day}/{}", padded(year % 100, 2)),
    };
    if rng.below(8) == 0 {
        return date;
    }
    let clock = fuzzed_exported_clock(rng);
    let offset = if rng.below(3) == 0 { fuzzed_offset(rng) } else { String::new() };
    let odd = |rng: &mut Rng| rng.below(8) == 0;
    let space = if odd(rng) { rng.pick(&["T", "  "]) } else { " " };
    let after = if odd(rng) { rng.pick(&[" BC", " "]) } else { "" };
    format!("{date}{space}{clock}{offset}{after}")
}

/// A time of day as exports write it (see [`fuzzed_exported_clock`]), an
/// offset (which the server drops) or not, and what may follow.
fn fuzzed_exported_time(rng: &mut Rng) -> String {
    let clock = fuzzed_exported_clock(rng);
    let offset = if rng.below(6) == 0 { fuzzed_offset(rng) } else { String::new() };
    let after = if rng.below(8) == 0 { rng.pick(&[" BC", " ", "x"]) } else { "" };
    format!("{clock}{offset}{after}")
}

/// Hours and minutes of one or two digits, seconds or not, on a 24- or
/// 12-hour clock (`AM`, `pm`, `p.m.`, and words that only start so).
fn fuzzed_exported_clock(rng: &mut Rng) -> String {
    let odd = |rng: &mut Rng| rng.below(8) == 0;
    let (most, width) = (if odd(rng) { 26 } else { 24 }, if odd(rng) { 3 } else { 1 + rng.below(2) as usize });
    let hours = padded(rng.below(most), width);
    let (most, width) = (if odd(rng) { 62 } else { 60 }, if odd(rng) { 1 } else { 2 });
    let minutes = padded(rng.below(most), width);
    let mut clock = format!("{hours}:{minutes}");
    if rng.below(2) == 0 {
        clock = clock + ":" + &padded(rng.below(62), 2);
        if rng.below(4) == 0 {
            clock = clock + "." + &fuzzed_digits(rng, 8);
        }
    } else if odd(rng) {
        clock = clock + "." + &fuzzed_digits(rng, 3);
    }
    let meridiem = match odd(rng) {
        true => rng.pick(&[" p.m.", " PMT", "  PM", " Pm", "pm"]),
        false => rng.pick(&["", "", " AM", " PM", " am"]),
    };
    clock + meridiem
}

fn fuzzed_clock(rng: &mut Rng) -> String {
    let mut s = format!("{}:{}", padded(rng.below(26), [1, 2, 2, 2][rng.below(4) as usize]), padded(rng.below(62), 2));
    if rng.below(10) < 9 {
        s = s + ":" + &padded(rng.below(62), 2);
    }
    if rng.below(10) < 6 {
        s = s + "." + &fuzzed_digits(rng, 9);
    }
    s
}

fn fuzzed_clock_with_offset(rng: &mut Rng) -> String {
    fuzzed_clock(rng) + &fuzzed_offset(rng)
}

/// Intervals mostly as the server prints them, with signs on some parts,
/// other units and spellings, hours past a day, out-of-range minutes and
/// seconds, long fractions, and stray spaces.
fn fuzzed_interval(rng: &mut Rng) -> String {
    let mut parts: Vec<String> = Vec::new();
    let units: &[&[&str]] = &[&["year", "years", "yrs"], &["mon", "mons", "months", "Mons"], &["day", "days", "weeks"]];
    for spellings in units {
        if rng.below(2) == 0 {
            let sign = rng.pick(&["", "", "-", "+"]);
            let digits = fuzzed_digits(rng, 7);
            let number = if digits.is_empty() { "1".to_string() } else { digits };
            let fraction = if rng.below(15) == 0 { ".5" } else { "" };
            parts.push(format!("{sign}{number}{fraction} {}", rng.pick(spellings)));
        }
    }
    if rng.below(4) < 3 {
        let most = [24, 100, 1_000_000, 10_000_000][rng.below(4) as usize];
        let hours = padded(rng.below(most), 1 + rng.below(2) as usize);
        let sign = rng.pick(&["", "", "-", "+"]);
        let mut clock = format!("{sign}{hours}:{}:{}", padded(rng.below(61), 2), padded(rng.below(61), 2));
        if rng.below(3) == 0 {
            clock = clock + "." + &fuzzed_digits(rng, 8);
        }
        parts.push(clock);
    }
    if rng.below(10) == 0 {
        parts.reverse();
    }
    if rng.below(20) == 0 {
        parts.push("ago".to_string());
    }
    parts.join(rng.pick(&[" ", " ", " ", " ", "  "]))
}

/// An offset from UTC of every shape, up to 17:61 (the server takes 15:59).
fn fuzzed_offset(rng: &mut Rng) -> String {
    let (hours, minutes) = (padded(rng.below(18), 2), padded(rng.below(62), 2));
    let amount = match rng.below(5) {
        0 => String::new(),
        1 => hours,
        2 => format!("{hours}:{minutes}"),
        3 => format!("{hours}{minutes}"),
        _ => rng.below(10).to_string(),
    };
    if rng.below(6) == 0 {
        return rng.pick(&[" UTC", "UTC", " utc", " GMT", "  UTC", " UT", " EST", "UTC+1"]).to_string();
    }
    // A space before the offset, as SQL Server's datetimeoffset and git
    // write it, or two.
    let space = if rng.below(6) == 0 { rng.pick(&[" ", " ", "  "]) } else { "" };
    format!("{space}{}{amount}", rng.pick(&["", "Z", "z", "+", "-", "+", "-"]))
}

fn fuzzed_timestamp(rng: &mut Rng, offset: bool) -> String {
    let year = match rng.below(3) {
        0 => rng.below(3001),
        1 => 294_270 + rng.below(11),
        _ => 4_700 + rng.below(21),
    };
    let day = format!("{}-{}-{}", padded(year, 4), padded(1 + rng.below(12), 2), padded(1 + rng.below(31), 2));
    let mut s = format!("{day}{}{}", rng.pick(&[" ", "T"]), fuzzed_clock(rng));
    if offset {
        s += &fuzzed_offset(rng);
    }
    if rng.below(20) == 0 {
        s.push_str(" BC");
    }
    s
}

/// Networks with their host bits clear (or not), and any inet spelling.
fn fuzzed_cidr(rng: &mut Rng) -> String {
    if rng.below(3) == 0 {
        return fuzzed_inet(rng);
    }
    let bits = rng.below(34);
    let address: u32 = (rng.below(1 << 32) as u32)
        & if rng.below(4) == 0 { u32::MAX } else { u32::MAX.checked_shl(32 - bits.min(32) as u32).unwrap_or(0) };
    format!("{}/{bits}", std::net::Ipv4Addr::from(address))
}

fn fuzzed_inet(rng: &mut Rng) -> String {
    let mut s = if rng.below(2) == 0 {
        let parts: Vec<String> =
            (0..3 + rng.below(3)).map(|_| padded(rng.below(300), 1 + rng.below(3) as usize)).collect();
        parts.join(".")
    } else {
        let groups: Vec<String> = (0..rng.below(9))
            .map(|_| format!("{:x}", rng.below(0x20000)).chars().take(rng.below(6) as usize).collect())
            .collect();
        let mut s = groups.join(":");
        if rng.below(3) == 0 {
            s.insert_str(s.len().min(rng.below(8) as usize), "::");
        }
        if rng.below(5) == 0 {
            s.push_str(":10.0.0.1");
        }
        s
    };
    if rng.below(2) == 0 {
        s = format!("{s}/{}", rng.below(135));
    }
    s
}

/// MAC addresses of 6 or 8 bytes (sometimes 5, 7 or 9), two hex digits
/// each or not, separated as the server prints them or in its other
/// spellings (dots, none, mixed), with a stray sign, space or letter.
fn fuzzed_mac(rng: &mut Rng) -> String {
    let bytes = [6, 6, 6, 8, 8, 5, 7, 9][rng.below(8) as usize];
    let separator = rng.pick(&[":", ":", "-", ".", ""]);
    let mut s = String::new();
    for i in 0..bytes {
        if i > 0 {
            s.push_str(if rng.below(20) == 0 { rng.pick(&[":", "-", " "]) } else { separator });
        }
        let digits = if rng.below(25) == 0 { [1, 3][rng.below(2) as usize] } else { 2 };
        s.extend((0..digits).map(|_| char::from_digit(rng.below(16) as u32, 16).unwrap()));
    }
    if rng.below(10) == 0 {
        let at = rng.below(s.len() as u64) as usize;
        s.replace_range(at..at + 1, rng.pick(&["+", "g", " "]));
    }
    if rng.below(4) == 0 {
        s.to_uppercase()
    } else {
        s
    }
}

fn fuzzed_uuid(rng: &mut Rng) -> String {
    let mut hex: String = (0..31 + rng.below(3)).map(|_| char::from_digit(rng.below(16) as u32, 16).unwrap()).collect();
    // The usual hyphens, most of the time; else a hyphen or none after any
    // group of four, as the server reads them, or at the end.
    let places: &[usize] = if rng.below(4) > 0 { &[20, 16, 12, 8] } else { &[32, 28, 24, 20, 16, 12, 8, 4] };
    for &at in places {
        if rng.below(8) != 0 && at <= hex.len() {
            hex.insert(at, '-');
        }
    }
    if rng.below(10) == 0 {
        // A sign or a hyphen where a digit goes (Rust's own number parsers
        // take a sign).
        let at = rng.below(hex.len() as u64) as usize;
        hex.replace_range(at..at + 1, rng.pick(&["+", "-"]));
    }
    match rng.below(6) {
        0 => hex.to_uppercase(),
        1 => format!("{{{hex}}}"),
        _ => hex,
    }
}

/// bytea's text forms, unescaped: `\x` and hex digits (sometimes odd,
/// spaced or not hex), or the escape form with octal and doubled backslashes.
fn fuzzed_bytea(rng: &mut Rng) -> String {
    if rng.below(2) == 0 {
        let digits: String = (0..rng.below(12)).map(|_| rng.pick(&["a", "F", "0", "9", "7", " ", "g"])).collect();
        return format!(r"\x{digits}");
    }
    (0..rng.below(6))
        .map(|_| match rng.below(4) {
            0 => format!(r"\{}{}{}", rng.below(5), rng.below(9), rng.below(8)),
            1 => r"\\".to_string(),
            2 => r"\".to_string(),
            _ => rng.pick(&["a", "é", " "]).to_string(),
        })
        .collect()
}

/// A CSV dialect: delimiter, quote, escape and NULL string.
struct Dialect {
    delimiter: char,
    quote: char,
    escape: char,
    null: &'static str,
}

const DIALECTS: &[Dialect] = &[
    Dialect { delimiter: ',', quote: '"', escape: '"', null: "" },
    Dialect { delimiter: ';', quote: '\'', escape: '\\', null: "NULL" },
    Dialect { delimiter: '\t', quote: '"', escape: '\\', null: "\\N" },
];

impl Dialect {
    /// COPY's options for it, as SQL.
    fn copy_options(&self) -> String {
        let literal = |c: &str| format!("E'{}'", c.replace('\\', "\\\\").replace('\'', "\\'").replace('\t', "\\t"));
        format!(
            "FORMAT csv, DELIMITER {}, QUOTE {}, ESCAPE {}, NULL {}",
            literal(&self.delimiter.to_string()),
            literal(&self.quote.to_string()),
            literal(&self.escape.to_string()),
            literal(self.null)
        )
    }

    /// A number field: mostly a number, bare or quoted; else any field.
    fn number(&self, rng: &mut Rng, pool: &[&str]) -> String {
        let number = format!("{}{}", rng.pick(&["", "", "", "-", "-", " "]), rng.below(100_000));
        match rng.below(8) {
            0..=3 => number,
            4 => format!("{q}{number}{q}", q = self.quote),
            _ => self.field(rng, pool, false),
        }
    }

    /// A field around CSV's edges: unquoted or quoted, empty (NULL) or
    /// quoted empty (a string), the NULL string bare or quoted, escaped
    /// quotes, delimiters and line ends inside quotes, `\.` at a line's
    /// start, quotes in the middle of a bare field, text after the closing
    /// quote, and unless `valid`, now and then a quote left open.
    fn field(&self, rng: &mut Rng, pool: &[&str], valid: bool) -> String {
        let (q, e, d) = (self.quote.to_string(), self.escape.to_string(), self.delimiter.to_string());
        // A valid field's pieces never leave a quote open: no quote of their
        // own, and no escape at their end, where it would take the next
        // piece's quote (escaped quotes come as pairs).
        let safe = |p: &&str| !valid || !(p.contains(self.quote) || p.ends_with(self.escape));
        let kept: Vec<&str> = pool.iter().copied().filter(safe).collect();
        let pool = &kept[..];
        let bare = |rng: &mut Rng| -> String { (0..1 + rng.below(3)).map(|_| rng.pick(pool)).collect() };
        match rng.below(16) {
            0 => String::new(),
            1 => self.null.to_string(),
            2 => format!("{q}{}{q}", self.null),
            3 => format!("{q}{q}"),
            4..=9 => bare(rng),
            10 => {
                // A quote inside an unquoted field begins a quoted part.
                let (a, b) = (bare(rng), bare(rng));
                format!("{a}{q}{b}{}", if !valid && rng.below(3) == 0 { "" } else { &q })
            }
            _ => {
                let (escaped_quote, escaped_escape) = (format!("{e}{q}"), format!("{e}{e}"));
                let mut inside = vec![escaped_quote.as_str(), &escaped_escape, &d, "\n", "\r\n", "\n\\.\n", " "];
                if !valid {
                    inside.push(&e);
                }
                let body: String = (0..rng.below(5))
                    .map(|_| if rng.below(2) == 0 { rng.pick(pool).to_string() } else { rng.pick(&inside).to_string() })
                    .collect();
                let after = match rng.below(10) {
                    0 if valid => rng.pick(&[" ", "x"]),
                    0 => rng.pick(&[" ", "x", &q]),
                    _ => "",
                };
                format!("{q}{body}{q}{after}")
            }
        }
    }
}

/// Random CSV records in three dialects (see [`Dialect::field`]), checked
/// against the server's own CSV reading by [`encoded_as_the_server_reads`].
/// The binary path splits CSV fields on the client, where the text path
/// leaves them to the server.
#[test]
fn the_encoder_reads_random_csv_as_the_server_does() {
    let db = TestDb::new();
    let mut rng = Rng(fuzz_seed() ^ 0x5EED_C5F0);
    let text_pool = ["a", "é", " ", "1", "x y", "\\", "'", "\"", "NULL", "N"];
    let number_pool = ["1", "25", "0", "-3", " 2", "1 ", ".5", "x"];
    // The second dialect's records end in CR LF.
    for (dialect, eol) in DIALECTS.iter().zip(["\n", "\r\n", "\n"]) {
        let options = sluice::format::FormatOptions {
            delimiter: Some(dialect.delimiter as u8),
            quote: Some(dialect.quote as u8),
            escape: Some(dialect.escape as u8),
            null: Some(dialect.null.to_string()),
            ..sluice::format::FormatOptions::new(sluice::format::FormatKind::Csv)
        };
        let records = (0..2000).map(|n| {
            let fields = [
                n.to_string(),
                dialect.field(&mut rng, &text_pool, false),
                dialect.number(&mut rng, &number_pool),
                dialect.field(&mut rng, &text_pool, false),
                dialect.number(&mut rng, &number_pool),
            ];
            fields.join(&dialect.delimiter.to_string()) + eol
        });
        encoded_as_the_server_reads(&db, &options, &dialect.copy_options(), records);
    }
}

/// Random text-format (TSV) records: every backslash escape, valid or
/// not (octal, hex, `\N`, a backslash before any character or at the
/// end), escaped bytes that make UTF-8 or do not, in two dialects (tab
/// with `\N`; `|` with an empty NULL, as TPC-H files come), checked as
/// [`encoded_as_the_server_reads`] does. lineitem loads this way by default.
#[test]
fn the_encoder_reads_random_tsv_as_the_server_does() {
    let db = TestDb::new();
    let mut rng = Rng(fuzz_seed() ^ 0x7AB5);
    let text_pool = [
        "a",
        "é",
        " ",
        "1",
        "\\\\",
        "\\N",
        "\\n",
        "\\t",
        "\\r",
        "\\b",
        "\\f",
        "\\v",
        "\\x41",
        "\\x4",
        "\\x",
        "\\xg",
        "\\101",
        "\\1",
        "\\18",
        "\\9",
        "\\.",
        "\\q",
        "\\xc3\\xa9",
        "\\xff",
        "\\377",
        "\\303\\251",
        "\\x00",
        "N",
    ];
    let number_pool = ["1", "25", "0", "-3", " 2", ".5", "\\061", "\\x32", "\\N", "\\-1", "x"];
    for (delimiter, null, eol) in [("\t", "\\N", "\n"), ("|", "", "\r\n")] {
        let options = sluice::format::FormatOptions {
            delimiter: Some(delimiter.as_bytes()[0]),
            null: Some(null.to_string()),
            ..sluice::format::FormatOptions::new(sluice::format::FormatKind::Tsv)
        };
        let field = |rng: &mut Rng, pool: &[&str]| -> String {
            match rng.below(10) {
                0 => null.to_string(),
                1 => String::new(),
                2..=5 if pool.len() < 15 => format!("{}{}", rng.pick(&["", "", "-"]), rng.below(100_000)),
                _ => {
                    let text: String = (0..rng.below(4)).map(|_| rng.pick(pool)).collect();
                    // Now and then a backslash at the field's very end.
                    if rng.below(20) == 0 {
                        text + "\\"
                    } else {
                        text
                    }
                }
            }
        };
        let records = (0..2000).map(|n| {
            let fields = [
                n.to_string(),
                field(&mut rng, &text_pool),
                field(&mut rng, &number_pool),
                field(&mut rng, &text_pool),
                field(&mut rng, &number_pool),
            ];
            fields.join(delimiter) + eol
        });
        let copy_options =
            format!("DELIMITER E'{}', NULL E'{}'", delimiter.replace('\t', "\\t"), null.replace('\\', "\\\\"));
        encoded_as_the_server_reads(&db, &options, &copy_options, records);
    }
}

/// Gives `records` to the encoder one by one as a chunk's records, and each
/// to the server's own reading (a text COPY of its own, with
/// `copy_options`) into `(n int, a text, b numeric, c text, d int)`: every
/// record the encoder reads must be one record, loaded as binary with the
/// values the server reads, or refused as binary where the server refuses
/// its text (an escape that makes invalid UTF-8 is the server's to judge).
fn encoded_as_the_server_reads(
    db: &TestDb,
    options: &sluice::format::FormatOptions,
    copy_options: &str,
    records: impl Iterator<Item = String>,
) {
    let columns: Vec<(String, String)> =
        [("n", "integer"), ("a", "text"), ("b", "numeric"), ("c", "text"), ("d", "integer")]
            .iter()
            .map(|(name, sql_type)| (name.to_string(), sql_type.to_string()))
            .collect();
    db.execute(
        "DROP TABLE IF EXISTS want, got; CREATE TABLE want (n int, a text, b numeric, c text, d int); \
         CREATE TABLE got (LIKE want)",
    );
    let mut encoder = BinaryEncoder::new(&columns, options).unwrap();
    encoder.begin_chunk();
    let copy_text = format!("COPY want FROM STDIN WITH ({copy_options})");
    let mut session = db.session();
    let (mut binary, mut encoded, mut taken, mut all) = (binary::HEADER.to_vec(), 0, 0, 0);
    let mut refused = Vec::new();
    for record in records {
        all += 1;
        let server_took = session.copy_rows(&copy_text, record.as_bytes()).is_ok();
        taken += u32::from(server_took);
        let mut row = Vec::new();
        match encoder.encode(record.as_bytes(), true, &mut row) {
            Ok(done) => {
                assert_eq!(done.records, 1, "{copy_options}: {record:?} read as {} records", done.records);
                match server_took {
                    true => binary.extend_from_slice(&row),
                    false => refused.push((record, row)),
                }
                encoded += 1;
            }
            // A chunk goes as text from its first unsure record on; the
            // next records begin a chunk of their own here.
            Err(_) => encoder.begin_chunk(),
        }
    }
    binary.extend_from_slice(binary::TRAILER);
    session.copy_rows("COPY got FROM STDIN WITH (FORMAT binary)", &binary).unwrap();
    eprintln!("{copy_options}: {taken} of {all} records taken by the server, {encoded} encoded");
    assert!(encoded > all / 5, "{copy_options}: only {encoded} of {all} records encoded");
    let differ = db.scalar(
        "SELECT count(*) FROM got g LEFT JOIN want w USING (n) \
         WHERE w.n IS NULL OR (g.a, g.b, g.c, g.d) IS DISTINCT FROM (w.a, w.b, w.c, w.d)",
    );
    let example = db.scalar(
        "SELECT coalesce(min(format('%s: %L %L %L %L / %L %L %L %L', n, g.a, g.b, g.c, g.d, w.a, w.b, w.c, w.d)), '') \
         FROM got g LEFT JOIN want w USING (n) WHERE (g.a, g.b, g.c, g.d) IS DISTINCT FROM (w.a, w.b, w.c, w.d)",
    );
    assert_eq!(differ, "0", "{copy_options}: binary / text, first: {example}");
    for (record, row) in refused {
        let alone = [binary::HEADER, &row, binary::TRAILER].concat();
        let copied = session.copy_rows("COPY got FROM STDIN WITH (FORMAT binary)", &alone);
        assert!(copied.is_err(), "{copy_options}: {record:?} loaded as binary, which the server refuses as text");
    }
}

/// Random CSV files in each dialect and with each line end (LF, CR LF, a
/// bare CR), every record valid but around the format's edges (see
/// [`Dialect::field`]), cut into 1 KiB chunks: sluice
/// loads, as text and as binary, what one COPY of the whole file loads. The
/// chunk scanner decides where records end, quote-aware, on the client; the
/// server is the judge.
#[test]
fn random_csv_files_load_in_small_chunks_as_one_copy_loads_them() {
    let db = TestDb::new();
    let mut rng = Rng(fuzz_seed() ^ 0xF11E);
    let pool = ["a", "é", " ", "1", "x y", "\\", "'", "\"", "NULL", "N", "\\."];
    let line_ends = ["\n", "\r\n", "\r"];
    for (i, (dialect, eol)) in DIALECTS.iter().flat_map(|d| line_ends.map(|eol| (d, eol))).enumerate() {
        let delimiter = dialect.delimiter.to_string();
        let records: String = (0..3000)
            .map(|n| {
                let fields: Vec<String> = std::iter::once(n.to_string())
                    .chain((0..3).map(|_| dialect.field(&mut rng, &pool, true)))
                    .collect();
                fields.join(&delimiter) + eol
            })
            .collect();
        let (quote, escape) = (dialect.quote.to_string(), dialect.escape.to_string());
        let flags = ["--format", "csv", "--delimiter", &delimiter, "--quote", &quote, "--escape", &escape];
        let file = db.file(&format!("random-{i}.csv"), records.as_bytes());
        loads_as_one_copy(&db, &file, &dialect.copy_options(), &[&flags[..], &["--null", dialect.null]].concat());
    }
}

/// Random valid text-format (TSV) files with LF and CR LF line ends: escapes
/// of every kind that make valid UTF-8, and a backslash before a real
/// newline (a newline in the data, which joins two lines into one record),
/// cut into 1 KiB chunks:
/// sluice loads, as text and as binary, what one COPY of the whole file
/// loads.
#[test]
fn random_tsv_files_load_in_small_chunks_as_one_copy_loads_them() {
    let db = TestDb::new();
    let mut rng = Rng(fuzz_seed() ^ 0x7F11E);
    let pool = [
        "a", "é", " ", "1", "\\\\", "\\N", "\\n", "\\t", "\\x41", "\\x4", "\\101", "\\b", "\\q", "\\\n", "\\\n", "N",
        "|",
    ];
    let dialects = [("\t", "\\N", "\n"), ("\t", "\\N", "\r\n"), ("|", "", "\n"), ("|", "", "\r\n")];
    for (i, (delimiter, null, eol)) in dialects.into_iter().enumerate() {
        let records: String = (0..3000)
            .map(|n| {
                let fields: Vec<String> = std::iter::once(n.to_string())
                    .chain((0..3).map(|_| match rng.below(8) {
                        0 => null.to_string(),
                        _ => (0..rng.below(5)).map(|_| rng.pick(&pool)).filter(|p| *p != delimiter).collect(),
                    }))
                    .collect();
                fields.join(delimiter) + eol
            })
            .collect();
        let file = db.file(&format!("random-{i}.tsv"), records.as_bytes());
        let copy_options =
            format!("DELIMITER E'{}', NULL E'{}'", delimiter.replace('\t', "\\t"), null.replace('\\', "\\\\"));
        loads_as_one_copy(&db, &file, &copy_options, &["--format", "tsv", "--delimiter", delimiter, "--null", null]);
    }
}

/// Random CSV and TSV files written in single-byte encodings (characters
/// of each code page's upper half among quotes, escapes, delimiters and
/// quoted newlines), cut into 1 KiB chunks and loaded with `--encoding`: sluice
/// loads, as text and as binary, what one COPY with `ENCODING` (the
/// server's own conversion) loads from the same bytes.
#[test]
fn random_files_in_single_byte_encodings_load_as_one_copy_with_that_encoding() {
    let db = TestDb::new();
    let mut rng = Rng(fuzz_seed() ^ 0xE7C0);
    let pages: [(&str, &encoding_rs::Encoding, &[&str]); 3] = [
        ("WIN1252", encoding_rs::WINDOWS_1252, &["é", "€", "…", "ß", "Ÿ"]),
        // Written with windows-1252's encoder: € is 0x80, which LATIN1 reads
        // as the control U+0080.
        ("LATIN1", encoding_rs::WINDOWS_1252, &["é", "ß", "ÿ", "\u{a0}", "€", "\u{81}"]),
        ("KOI8R", encoding_rs::KOI8_R, &["ж", "Я", "ё", "ъ", "═"]),
    ];
    for (i, (page, encoder, letters)) in pages.into_iter().enumerate() {
        let pool: Vec<&str> =
            ["a", " ", "1", "\\", "\\N", "'", "\"", "x y"].into_iter().chain(letters.iter().copied()).collect();
        let dialect = &DIALECTS[i % DIALECTS.len()];
        let delimiter = dialect.delimiter.to_string();
        let csv: String = (0..3000)
            .map(|n| {
                let fields = (0..3).map(|_| dialect.field(&mut rng, &pool, true));
                std::iter::once(n.to_string()).chain(fields).collect::<Vec<_>>().join(&delimiter) + "\n"
            })
            .collect();
        let tsv: String = (0..3000)
            .map(|n| {
                // A lone backslash would escape what follows it.
                let piece = |rng: &mut Rng| -> &str { Some(rng.pick(&pool)).filter(|p| *p != "\\").unwrap_or("\\\\") };
                let fields = (0..3).map(|_| (0..rng.below(4)).map(|_| piece(&mut rng)).collect::<String>());
                std::iter::once(n.to_string()).chain(fields).collect::<Vec<_>>().join("\t") + "\n"
            })
            .collect();
        let [quote, escape] = [dialect.quote, dialect.escape].map(|c| c.to_string());
        let csv_flags = ["--delimiter", &delimiter, "--quote", &quote, "--escape", &escape, "--null", dialect.null];
        let encoded = format!("ENCODING '{page}'");
        for (kind, text, copy_options, flags) in [
            ("csv", csv, format!("{}, {encoded}", dialect.copy_options()), &csv_flags[..]),
            ("tsv", tsv, encoded.clone(), &[][..]),
        ] {
            let (bytes, _, unmappable) = encoder.encode(&text);
            assert!(!unmappable, "{page}: the pool has a character the code page lacks");
            let file = db.file(&format!("random-{page}.{kind}"), &bytes);
            let flags = [&["--format", kind, "--encoding", page][..], flags].concat();
            loads_as_one_copy(&db, &file, &copy_options, &flags);
            let high = db.scalar("SELECT count(*) FROM got WHERE a || b || c ~ '[^\\x01-\\x7f]'");
            assert!(high.parse::<u32>().unwrap() > 1000, "{page} {kind}: only {high} rows with a non-ASCII character");
        }
    }
}

/// Loads `file` into `(n int, a text, b text, c text)` by one COPY with
/// `copy_options`, and by sluice with `flags` in 1 KiB chunks by 2 workers,
/// as text and as binary: the three tables must hold the same rows.
fn loads_as_one_copy(db: &TestDb, file: &std::path::Path, copy_options: &str, flags: &[&str]) {
    db.execute(
        "DROP TABLE IF EXISTS want, got, got_binary; CREATE TABLE want (n int, a text, b text, c text); \
         CREATE TABLE got (LIKE want); CREATE TABLE got_binary (LIKE want)",
    );
    let records = std::fs::read(file).unwrap();
    db.session().copy_rows(&format!("COPY want FROM STDIN WITH ({copy_options})"), &records).unwrap();
    assert_eq!(db.count("want"), 3000);
    for (table, copy_format) in [("got", "text"), ("got_binary", "binary")] {
        let common = [file.to_str().unwrap(), "--table", table, "--chunk-size", "1KiB", "--workers", "2"];
        let run = db.load(&[&common[..], flags, &["--copy-format", copy_format]].concat());
        run.assert_ok();
        db.assert_same_rows("want", table);
    }
}
