//! `sluice bench`: a small matrix of settings on your server and your data.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::Args;
use sluice::bench::{self, Measured};
use sluice::error::exit;
use sluice::format::{FormatKind, FormatOptions};
use sluice::gen::{write_file, Dataset};
use sluice::load::{self, LoadRequest};
use sluice::redact::Redactor;
use sluice::report::thousands;
use sluice::sink::postgres::PgSession;
use sluice::sql::quote_ident;
use sluice::Error;

use super::load::FormatArg;

const AFTER_HELP: &str = "\
Each setting loads the input into a scratch copy of the table (LIKE ... INCLUDING ALL, dropped
at the end), in interleaved rounds; the table quotes medians. Server CPU is shown when the server
runs on this machine.

Examples:
  sluice bench orders.csv --header --table orders --db postgres://loader@db1/sales
  sluice bench --dataset transactions --rows 2M";

/// Measure load settings (workers, chunk size, COPY format) on your own server
/// and data, and say which to use.
#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct BenchArgs {
    /// Input files (as for `sluice load`); or --dataset.
    #[arg(value_name = "FILE", required_unless_present = "dataset")]
    files: Vec<String>,

    /// The table the files are for (its shape is copied; it is not written).
    #[arg(short, long, required_unless_present = "dataset")]
    table: Option<String>,

    /// Generate this dataset instead of reading files (see `sluice gen`).
    #[arg(long, value_parser = super::gen::parse_dataset, conflicts_with = "files")]
    dataset: Option<Dataset>,

    /// Rows of the generated dataset.
    #[arg(long, value_parser = super::parse_count, default_value = "1M")]
    rows: u64,

    /// Connection, as for `sluice load`.
    #[arg(long, value_name = "CONN")]
    db: Option<String>,

    /// Input format; guessed from the file extension when absent.
    #[arg(short, long, value_enum)]
    format: Option<FormatArg>,

    /// Field delimiter (one character).
    #[arg(long, value_parser = sluice::format::parse_char_option, value_name = "CHAR")]
    delimiter: Option<u8>,

    /// Skip the first N lines of each file, before its header or first
    /// record (as for `sluice load`).
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true)]
    skip_lines: u64,

    /// Skip the first record of each file.
    #[arg(long)]
    header: bool,

    /// Each file's first line is a record, even where it names the
    /// table's columns (as for `sluice load`).
    #[arg(long, conflicts_with = "header")]
    no_header: bool,

    /// Rounds over the matrix (the table quotes medians).
    #[arg(long, default_value_t = 3)]
    rounds: usize,

    /// Where every run is written as CSV.
    #[arg(long, default_value = "sluice-bench.csv", value_name = "FILE")]
    csv: PathBuf,
}

pub fn run(args: BenchArgs, redactor: &mut Redactor) -> Result<i32, Error> {
    // A Ctrl-C or TERM ends the run in the clean-up below: a scratch table
    // left behind could hold gigabytes of the user's database.
    let interrupt = super::interrupt_flag();
    let target = super::guarded_target(args.db.as_deref(), redactor);
    let control = target.connect()?;
    let scratch_dir =
        tempfile::tempdir().map_err(|e| Error::Usage(format!("cannot create a temporary folder: {e}")))?;
    let (inputs, source_table) = match args.dataset {
        Some(dataset) => {
            eprintln!("sluice bench: generating {} rows of {}", thousands(args.rows), dataset.name());
            (vec![write_file(dataset, args.rows, scratch_dir.path())?.display().to_string()], None)
        }
        None => (args.files.clone(), args.table.clone()),
    };
    let (quoted, scratch) = create_scratch(&control, source_table.as_deref(), args.dataset)?;
    let outcome = measure(&args, &control, &inputs, &scratch, &scratch_dir, interrupt);
    let dropped = control.execute(&format!("DROP TABLE IF EXISTS {quoted}"));
    let (runs, settings) = match outcome {
        Err(Error::Interrupted { .. }) => {
            eprintln!("sluice bench: interrupted; its scratch table and ledger rows were removed");
            return Ok(exit::INTERRUPTED);
        }
        outcome => outcome?,
    };
    dropped?;
    print_results(&args, &runs, &settings, &inputs, source_table.as_deref());
    bench::write_csv(&args.csv, &runs)
        .map_err(|e| Error::Input { file: args.csv.display().to_string(), message: format!("cannot write: {e}") })?;
    super::print_out(format_args!("every run: {}", args.csv.display()));
    Ok(exit::OK)
}

/// A scratch table shaped like the user's table (or the dataset's), in the
/// same schema: its name quoted for SQL, and as `sluice load` takes it.
fn create_scratch(
    control: &PgSession,
    table: Option<&str>,
    dataset: Option<Dataset>,
) -> Result<(String, String), Error> {
    let name = format!("sluice_bench_{}", std::process::id());
    match (table, dataset) {
        (Some(table), _) => {
            let info = control.resolve_table(table)?;
            let quoted = format!("{}.{}", quote_ident(&info.schema), quote_ident(&name));
            control.execute(&format!("CREATE TABLE {quoted} (LIKE {} INCLUDING ALL)", info.quoted()))?;
            Ok((quoted, format!("{}.{name}", info.schema)))
        }
        (None, Some(dataset)) => {
            control.execute(&dataset.ddl(&name))?;
            Ok((quote_ident(&name), name))
        }
        (None, None) => Err(Error::Usage("sluice bench needs --table with files, or --dataset".into())),
    }
}

fn measure(
    args: &BenchArgs,
    control: &PgSession,
    inputs: &[String],
    scratch: &str,
    dir: &tempfile::TempDir,
    interrupt: Arc<AtomicBool>,
) -> Result<(Vec<Measured>, Vec<bench::Setting>), Error> {
    let mut options = FormatOptions::new(args.format.map_or(FormatKind::Csv, Into::into));
    options.delimiter = args.delimiter;
    options.header = args.header;
    options.skip_lines = args.skip_lines;
    let base = LoadRequest {
        format: args.format.map(Into::into),
        options: options.clone(),
        db: args.db.clone(),
        rejects: Some(dir.path().join("rejects.jsonl")),
        restart: true,
        no_header: args.no_header,
        interrupt: Some(interrupt),
        ..LoadRequest::new(inputs.to_vec(), scratch)
    };
    let info = control.resolve_table(scratch)?;
    let sources = sluice::source::resolve_inputs(inputs)?;
    if let Some(once) = sources.iter().find(|s| !s.can_be_read_again()) {
        return Err(Error::Usage(format!(
            "bench loads its input once per setting and round, and {} can be read only once: save it to a file \
             and name the file",
            match &*once.name {
                "-" => "stdin",
                name => name,
            }
        )));
    }
    options.kind = load::resolve_kind(base.format, &sources)?;
    let bytes: u64 = inputs.iter().filter_map(|i| std::fs::metadata(i).ok()).map(|m| m.len()).sum();
    let indexes =
        control.query("SELECT count(*) FROM pg_index WHERE indrelid = $1::regclass", &[Some(&info.quoted())])?;
    let has_indexes = indexes.first().and_then(|r| r[0].as_deref()).is_some_and(|n| n != "0");
    let settings = bench::settings(bytes, load::binary_possible(&info, &options), has_indexes);
    let runs = bench::run_matrix(control, &base, &settings, args.rounds, |m| {
        eprintln!("sluice bench: round {} {:<28} {:7.2} s", m.round + 1, m.label, m.wall_s);
    })?;
    Ok((runs, settings))
}

fn print_results(
    args: &BenchArgs,
    runs: &[Measured],
    settings: &[bench::Setting],
    inputs: &[String],
    table: Option<&str>,
) {
    let rows = bench::medians(runs, settings);
    let Some(base) = rows.first() else { return };
    super::print_out(format_args!(
        "\n{:<28} {:>9} {:>11} {:>8} {:>10} {:>12} {:>12}",
        "setting", "wall s", "rows/s", "MB/s", "x 1 txn", "server CPU s", "sluice CPU s"
    ));
    for r in &rows {
        let server = r.server_cpu_s.map_or("unknown".to_string(), |s| format!("{s:.1}"));
        let label = match r.label.as_str() {
            "workers auto" => format!("workers auto (chose {})", r.workers),
            other => other.to_string(),
        };
        super::print_out(format_args!(
            "{label:<28} {:>9.2} {:>11} {:>8.1} {:>9.2}x {server:>12} {:>12.2}",
            r.wall_s,
            thousands(r.rows_per_s as u64),
            r.mb_per_s,
            base.wall_s / r.wall_s,
            r.client_cpu_s
        ));
    }
    super::print_out(format_args!("(medians of {} rounds)\n", args.rounds));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for answer in bench::answers(&rows, cores) {
        super::print_out(answer);
    }
    if let Some(best) = rows.iter().min_by(|a, b| a.wall_s.total_cmp(&b.wall_s)) {
        let flags = bench::recommended_flags(best, settings);
        let input = match args.dataset {
            Some(d) => format!("<your {} file>", d.name()),
            None => inputs.join(" "),
        };
        let table = table.unwrap_or("<table>");
        let flags: String = input_flags(args)
            .into_iter()
            .chain((!flags.is_empty()).then_some(flags))
            .map(|f| format!(" {f}"))
            .collect();
        super::print_out(format_args!("\nUse: sluice load {input} --table {table}{flags}"));
    }
}

/// The flags that read the files as the bench read them, for the command
/// it recommends.
fn input_flags(args: &BenchArgs) -> Vec<String> {
    let mut flags = Vec::new();
    if let Some(format) = args.format {
        flags.push(format!("--format {}", FormatKind::from(format).name()));
    }
    if let Some(delimiter) = args.delimiter {
        flags.push(format!("--delimiter '{}'", sluice::format::delimiter_text(delimiter)));
    }
    if args.skip_lines > 0 {
        flags.push(format!("--skip-lines {}", args.skip_lines));
    }
    if args.header {
        flags.push("--header".into());
    }
    if args.no_header {
        flags.push("--no-header".into());
    }
    flags
}
