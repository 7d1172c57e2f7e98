//! Binary encoding speed: how long the client takes to turn TPC-H lineitem
//! text into binary COPY tuples, in ns per record.
//!
//! Why it is kept: on lineitem the encoder is about two thirds of sluice's
//! CPU, and sluice shares 2 cores with the server, so every nanosecond per
//! record here is taken from the load (issue 2 asks for sluice's CPU to be at
//! most 10 % of the server's). Run with `cargo bench --bench encoding`
//! (lineitem-shaped rows made here, deterministic) or
//! `cargo bench --bench encoding -- FILE.psv` (a real `tpchgen-cli` file; the
//! first 1 M lines are used), or `-- FILE.tsv` (`sluice gen transactions`:
//! four short columns, tab-separated), or `-- FILE.csv` (lineitem as CSV,
//! its fields quoted or not). It asserts the record count, so an
//! encoder that gives up early cannot look fast.

use std::io::{BufRead, BufReader};
use std::time::Instant;

use sluice::format::binary::{BinaryEncoder, DateOrder};
use sluice::format::{FormatKind, FormatOptions};
use sluice::sink::postgres::COPY_PIECE;

const ROWS: usize = 1_000_000;

/// lineitem's columns as `format_type` prints them.
const COLUMNS: [(&str, &str); 16] = [
    ("l_orderkey", "bigint"),
    ("l_partkey", "bigint"),
    ("l_suppkey", "bigint"),
    ("l_linenumber", "integer"),
    ("l_quantity", "numeric(15,2)"),
    ("l_extendedprice", "numeric(15,2)"),
    ("l_discount", "numeric(15,2)"),
    ("l_tax", "numeric(15,2)"),
    ("l_returnflag", "character(1)"),
    ("l_linestatus", "character(1)"),
    ("l_shipdate", "date"),
    ("l_commitdate", "date"),
    ("l_receiptdate", "date"),
    ("l_shipinstruct", "character(25)"),
    ("l_shipmode", "character(10)"),
    ("l_comment", "character varying(44)"),
];

/// `sluice gen transactions`' columns.
const TRANSACTIONS: [(&str, &str); 4] =
    [("tid", "integer"), ("mssinceunixepoch", "integer"), ("amount", "bigint"), ("description", "text")];

fn main() {
    let path = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let data = match &path {
        Some(path) => first_lines(path, ROWS),
        None => lineitem_like(ROWS),
    };
    let (name, shape, kind, delimiter) = match path {
        Some(path) if path.ends_with(".tsv") => ("transactions", &TRANSACTIONS[..], FormatKind::Tsv, b'\t'),
        Some(path) if path.ends_with(".csv") => ("lineitem", &COLUMNS[..], FormatKind::Csv, b','),
        _ => ("lineitem", &COLUMNS[..], FormatKind::Tsv, b'|'),
    };
    let columns: Vec<(String, String)> = shape.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
    let options = FormatOptions { delimiter: Some(delimiter), ..FormatOptions::new(kind) };
    // As for a session in the default DateStyle (`ISO, MDY`).
    let mut encoder = BinaryEncoder::new(&columns, &options).unwrap().dates_in_order(DateOrder::MonthFirst);
    let mut best = f64::MAX;
    let mut out_bytes = 0;
    for _ in 0..7 {
        let start = Instant::now();
        out_bytes = encode_in_pieces(&mut encoder, &data);
        best = best.min(start.elapsed().as_secs_f64());
    }
    println!(
        "{name} {:>7.1} MB  {:>6.1} ns/record  {:>5.2} GB/s in  {:.1} MB out",
        data.len() as f64 / 1e6,
        best * 1e9 / ROWS as f64,
        data.len() as f64 / best / 1e9,
        out_bytes as f64 / 1e6
    );
}

/// Encodes `data` as a worker does: one chunk, taken in pieces of the size
/// sluice sends, the output sent (here: counted and cleared) after each, so
/// it stays in the cache. Encoding all of it into one buffer instead
/// measures the memory's write bandwidth as much as the encoder. Returns
/// the bytes of output.
fn encode_in_pieces(encoder: &mut BinaryEncoder, data: &[u8]) -> usize {
    encoder.begin_chunk();
    let mut out = Vec::with_capacity(4 * COPY_PIECE);
    let (mut consumed, mut records, mut out_bytes) = (0, 0, 0);
    while consumed < data.len() {
        let end = (consumed + COPY_PIECE).min(data.len());
        let done = encoder.encode(&data[consumed..end], end == data.len(), &mut out).unwrap();
        assert!(done.consumed > 0, "a record longer than a piece");
        consumed += done.consumed;
        records += done.records;
        out_bytes += out.len();
        out.clear();
    }
    assert_eq!(records as usize, ROWS, "every record encoded");
    out_bytes
}

fn first_lines(path: &str, rows: usize) -> Vec<u8> {
    let mut reader = BufReader::new(std::fs::File::open(path).expect("the file to encode"));
    let mut data = Vec::new();
    for _ in 0..rows {
        assert!(reader.read_until(b'\n', &mut data).unwrap() > 0, "{path} has fewer than {rows} lines");
    }
    data
}

/// Rows with lineitem's shapes: key sizes, two-decimal prices, ISO dates,
/// padded words and a comment of 10 to 43 bytes.
fn lineitem_like(rows: usize) -> Vec<u8> {
    const WORDS: [&str; 8] = ["furiously", "slyly", "carefully", "final", "bold", "ideas", "accounts", "regular"];
    const INSTRUCT: [&str; 4] = ["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"];
    const MODES: [&str; 7] = ["TRUCK", "MAIL", "REG AIR", "AIR", "FOB", "RAIL", "SHIP"];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: u64| {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    let mut data = Vec::with_capacity(rows * 130);
    for row in 0..rows as u64 {
        let date = |d: u64| format!("{}-{:02}-{:02}", 1992 + d / 365, 1 + d % 365 / 31 % 12, 1 + d % 28);
        let ship = next(2400);
        let mut comment = String::new();
        while comment.len() < 10 + next(30) as usize {
            comment.push_str(WORDS[next(8) as usize]);
            comment.push(' ');
        }
        let line = format!(
            "{}|{}|{}|{}|{}|{}.{:02}|0.{:02}|0.{:02}|{}|{}|{}|{}|{}|{}|{}|{}\n",
            row / 4 + 1,
            next(200_000) + 1,
            next(10_000) + 1,
            row % 4 + 1,
            next(50) + 1,
            next(100_000),
            next(100),
            next(11),
            next(9),
            ["N", "R", "A"][next(3) as usize],
            ["O", "F"][next(2) as usize],
            date(ship),
            date(ship + next(60)),
            date(ship + next(30)),
            INSTRUCT[next(4) as usize],
            MODES[next(7) as usize],
            comment.trim_end()
        );
        data.extend_from_slice(line.as_bytes());
    }
    data
}
