//! `sluice gen`: deterministic synthetic data shaped like the field reports.
//!
//! The same dataset, row count and seed always give the same bytes, on every
//! machine and sluice version: benchmarks compare runs and tests compare
//! tables. That is why the random generator is a fixed SplitMix64 written out
//! here rather than a crate whose streams may change between versions.

mod datasets;

use std::io::{self, Write};

/// The datasets, each after one seed report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dataset {
    /// 000: tid, ms since epoch, amount, description (TSV).
    Transactions,
    /// 001: DNS cname records as JSON lines.
    Cname,
    /// 002: the 16-column store_sales_fact (CSV, some quoted fields).
    StoreSales,
    /// 004: the 29-column flight search extract with NULLs (TSV).
    Flights,
    /// 003: 1 kB rows (TSV).
    KbRows,
}

impl Dataset {
    pub const ALL: [Dataset; 5] =
        [Dataset::Transactions, Dataset::Cname, Dataset::StoreSales, Dataset::Flights, Dataset::KbRows];

    pub fn name(self) -> &'static str {
        match self {
            Dataset::Transactions => "transactions",
            Dataset::Cname => "cname",
            Dataset::StoreSales => "store_sales",
            Dataset::Flights => "flights",
            Dataset::KbRows => "kb_rows",
        }
    }

    pub fn from_name(name: &str) -> Option<Dataset> {
        Dataset::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The file extension that makes `sluice load` guess the right format.
    pub fn extension(self) -> &'static str {
        match self {
            Dataset::Cname => "jsonl",
            Dataset::StoreSales => "csv",
            _ => "tsv",
        }
    }

    /// `CREATE TABLE` for the dataset, with every identifier quoted; the
    /// table named as `sluice load -t` reads it (`public.tx` was one name,
    /// `"public.tx"`, which `load -t public.tx` then found before the
    /// table `tx`).
    pub fn ddl(self, table: &str) -> String {
        let columns = datasets::columns(self);
        let body: Vec<String> =
            columns.iter().map(|(name, ty)| format!("    {} {ty}", crate::sql::quote_ident(name))).collect();
        format!("CREATE TABLE {} (\n{}\n);", crate::sql::quote_qualified_name(table), body.join(",\n"))
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and fixed forever.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5851_F42D_4C95_7F2D)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), by multiply-shift.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// True with probability 1/n.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

/// Writes `rows` rows of `dataset` (seed 1) to a new file at `path`, named
/// `dataset.extension` in `dir` (what the demo and `sluice bench` load).
pub fn write_file(dataset: Dataset, rows: u64, dir: &std::path::Path) -> Result<std::path::PathBuf, crate::Error> {
    let path = dir.join(format!("{}.{}", dataset.name(), dataset.extension()));
    let io_error = |e: io::Error| crate::Error::Input { file: path.display().to_string(), message: e.to_string() };
    let mut out = io::BufWriter::new(std::fs::File::create(&path).map_err(io_error)?);
    generate(dataset, rows, 1, &mut out).and_then(|_| out.flush()).map_err(io_error)?;
    Ok(path)
}

/// Writes `rows` rows of `dataset` to `out`, buffered in large blocks.
pub fn generate(dataset: Dataset, rows: u64, seed: u64, out: &mut dyn Write) -> io::Result<()> {
    let mut rng = Rng::new(seed.wrapping_mul(31).wrapping_add(dataset as u64));
    let mut buf = Vec::with_capacity(1 << 20);
    for i in 1..=rows {
        datasets::write_row(dataset, i, &mut rng, &mut buf);
        if buf.len() >= (1 << 20) - 4096 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gen(d: Dataset, rows: u64, seed: u64) -> Vec<u8> {
        let mut out = Vec::new();
        generate(d, rows, seed, &mut out).unwrap();
        out
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        for d in Dataset::ALL {
            assert_eq!(gen(d, 200, 7), gen(d, 200, 7), "{}", d.name());
            assert_ne!(gen(d, 200, 7), gen(d, 200, 8), "{}", d.name());
        }
    }

    #[test]
    fn transactions_look_like_the_seed() {
        let text = String::from_utf8(gen(Dataset::Transactions, 3, 1)).unwrap();
        let first: Vec<&str> = text.lines().next().unwrap().split('\t').collect();
        assert_eq!(first[0], "1");
        assert_eq!(first[1], "10001");
        assert!(first[2].parse::<u32>().unwrap() < 500);
        assert_eq!(first[3], "description-1");
    }

    #[test]
    fn cname_lines_are_json_objects() {
        let text = String::from_utf8(gen(Dataset::Cname, 2000, 3)).unwrap();
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["type"], "cname");
        }
    }

    #[test]
    fn column_counts_match_ddl() {
        let csv = String::from_utf8(gen(Dataset::Flights, 50, 1)).unwrap();
        for line in csv.lines() {
            assert_eq!(line.split('\t').count(), 29);
        }
        assert!(Dataset::Flights.ddl("extract").contains("\"home_flight_sector_3_flight_code_id\" integer"));
    }

    #[test]
    fn the_ddl_names_the_table_as_load_reads_it() {
        assert!(Dataset::Transactions.ddl("public.tx").starts_with("CREATE TABLE \"public\".\"tx\" ("));
        assert!(Dataset::Transactions
            .ddl("\"My Schema\".\"Q1.t\"")
            .starts_with("CREATE TABLE \"My Schema\".\"Q1.t\" ("));
        assert!(Dataset::Transactions.ddl("a\"b").starts_with("CREATE TABLE \"a\"\"b\" ("), "no name SQL reads");
    }
}
