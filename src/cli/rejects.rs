//! `sluice rejects`: a rejects file's records as they were in the input,
//! to fix or to load again with the option they wanted.

use std::io::{BufReader, Write};
use std::path::PathBuf;

use clap::Args;
use sluice::error::exit;
use sluice::rejects::{write_records, RecordFilter};
use sluice::report::count_of;
use sluice::Error;

const AFTER_HELP: &str = "\
Examples:
  sluice rejects orders.rejects.jsonl > rejected.csv
  sluice rejects orders.rejects.jsonl --column price \\
    | sluice load - --table orders --format csv --delimiter ';' --decimal-comma";

/// Write a rejects file's records to standard output as they were in the
/// input (each reject's `raw`), in the file's order.
#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct RejectsArgs {
    /// The rejects file a load wrote (TABLE.rejects.jsonl, or --rejects).
    #[arg(value_name = "FILE")]
    file: PathBuf,

    /// Only the rejects whose reason contains this text.
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,

    /// Only the rejects whose value of this column was refused.
    #[arg(long, value_name = "NAME")]
    column: Option<String>,
}

pub fn run(args: RejectsArgs) -> Result<i32, Error> {
    let name = args.file.display().to_string();
    let file = std::fs::File::open(&args.file)
        .map_err(|e| Error::Input { file: name.clone(), message: format!("cannot open it: {e}") })?;
    let filter = RecordFilter { reason: args.reason, column: args.column };
    let mut out = std::io::stdout().lock();
    let written = write_records(&name, BufReader::new(file), &filter, &mut out)?;
    out.flush().map_err(|e| Error::Input { file: "standard output".into(), message: e.to_string() })?;
    let records = written.records;
    eprintln!("sluice: wrote {records} rejected record{}", if records == 1 { "" } else { "s" });
    // Why they were rejected, as the load's summary said it (on stderr:
    // stdout holds the records).
    for line in sluice::report::reject_lines(&written.reasons.summed_up()) {
        eprintln!("sluice: {}", sluice::redact::printable(&line));
    }
    if let Some((first, length)) = written.cut_short {
        eprintln!(
            "sluice: left out {} past --max-record-size, of which {name} holds only the beginning (the first, \
             {length} bytes long: {first}); load {} from the input with a larger --max-record-size",
            count_of(written.left_out, "record"),
            if written.left_out == 1 { "it" } else { "them" },
        );
    }
    Ok(exit::OK)
}
