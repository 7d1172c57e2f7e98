//! `sluice gen`: deterministic synthetic data shaped like the field reports.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use clap::Args;
use sluice::error::exit;
use sluice::gen::{generate, Dataset};
use sluice::Error;

const AFTER_HELP: &str = "\
Datasets:
  transactions  tid, ms since epoch, amount, description (TSV), after seed 000
  cname         DNS cname records, JSON lines, after seed 001
  store_sales   16-column store_sales_fact (CSV, quoted fields), after seed 002
  flights       29-column flight search extract with NULLs (TSV), after seed 004
  kb_rows       1 kB rows (TSV), after seed 003

Examples:
  sluice gen transactions --rows 10M -o transactions.tsv
  sluice gen cname --ddl | psql";

/// Write deterministic synthetic data (same dataset, rows and seed: same bytes).
#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct GenArgs {
    /// transactions, cname, store_sales, flights or kb_rows.
    #[arg(value_parser = parse_dataset)]
    dataset: Dataset,

    /// Rows to write (k, M and G suffixes are decimal).
    #[arg(long, value_parser = super::parse_count, default_value = "1M")]
    rows: u64,

    /// Seed of the random values.
    #[arg(long, default_value_t = 1)]
    seed: u64,

    /// Output file (default: stdout).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,

    /// Print the matching CREATE TABLE instead of data.
    #[arg(long)]
    ddl: bool,

    /// Table name used by --ddl (default: the dataset's name).
    #[arg(long, value_name = "NAME")]
    table: Option<String>,
}

pub fn parse_dataset(name: &str) -> Result<Dataset, String> {
    Dataset::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Dataset::ALL.iter().map(|d| d.name()).collect();
        format!("unknown dataset '{name}'; choose one of {}", names.join(", "))
    })
}

pub fn run(args: GenArgs) -> Result<i32, Error> {
    let target = args.output.as_ref().map_or("stdout".to_string(), |p| p.display().to_string());
    let write_error = |e: io::Error| Error::Input { file: target.clone(), message: e.to_string() };
    let mut out: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(BufWriter::new(File::create(path).map_err(write_error)?)),
        None => Box::new(io::stdout().lock()),
    };
    if args.ddl {
        let table = args.table.as_deref().unwrap_or(args.dataset.name());
        writeln!(out, "{}", args.dataset.ddl(table)).map_err(write_error)?;
        return Ok(exit::OK);
    }
    match generate(args.dataset, args.rows, args.seed, &mut out) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(exit::OK),
        Err(e) => Err(write_error(e)),
        Ok(()) => Ok(exit::OK),
    }
}
