//! Chunking speed: how fast the scanner cuts each dataset, in GB/s.
//!
//! The chunker runs ahead of the workers on the same 2 cores as the server,
//! so every cycle it spends is taken from the load. Run with
//! `cargo bench --bench chunking`; it asserts the record counts, so a broken
//! scanner cannot look fast. `store_sales checked` is the same CSV with the
//! open-quote check on (its quoted fields that span lines are counted).

use std::time::Instant;

use sluice::chunk::{Chunker, ChunkerConfig};
use sluice::format::scan::RecordShape;
use sluice::format::Dialect;
use sluice::gen::{generate, Dataset};

fn main() {
    let csv = Dialect::Csv { quote: b'"', escape: b'"' };
    let sales = Some(RecordShape { delimiter: b',', fields: 16 });
    let cases = [
        (Dataset::Transactions, Dialect::Text, 4_000_000, None),
        (Dataset::Flights, Dialect::Text, 1_000_000, None),
        (Dataset::StoreSales, csv, 1_500_000, None),
        (Dataset::StoreSales, csv, 1_500_000, sales),
        (Dataset::Cname, Dialect::Lines, 1_000_000, None),
    ];
    for (dataset, dialect, rows, shape) in cases {
        let mut data = Vec::new();
        generate(dataset, rows, 1, &mut data).unwrap();
        let mut best = f64::MAX;
        for _ in 0..5 {
            let (target, max_record) = (16 << 20, 64 << 20);
            let cfg = ChunkerConfig {
                dialect,
                target,
                skip_lines: 0,
                header: false,
                keep_bytes: false,
                max_record,
                shape,
                record_cap: None,
            };
            let start = Instant::now();
            let mut chunker = Chunker::new(&data[..], cfg, 0, 0);
            let mut records = 0;
            while let Some(chunk) = chunker.next_chunk().unwrap() {
                records += chunk.records;
            }
            best = best.min(start.elapsed().as_secs_f64());
            assert_eq!(records, rows, "{}", dataset.name());
        }
        println!(
            "{:21} {:>7.1} MB  {:>6.2} GB/s  ({:.1} ns/record)",
            format!("{}{}", dataset.name(), if shape.is_some() { " checked" } else { "" }),
            data.len() as f64 / 1e6,
            data.len() as f64 / best / 1e9,
            best * 1e9 / rows as f64
        );
    }
}
