//! `sluice load`: the main job.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, ValueEnum};
use sluice::error::exit;
use sluice::format::convert::UnixTimes;
use sluice::format::{parse_char_option, FormatKind, FormatOptions};
use sluice::load::{self, AnalyzeWhen, CopyFormat, DeferIndexes, Failed, LoadRequest};
use sluice::progress::Progress;
use sluice::redact::Redactor;
use sluice::report::{count_of, thousands, LoadReport};
use sluice::Error;

use super::progress_view::ProgressView;

const AFTER_HELP: &str = "\
Exit codes:
  0  every record was loaded (or skipped by --on-conflict-do-nothing), or nothing was left to load
  1  finished; some records were rejected (see the rejects file)
  3  interrupted (Ctrl-C); run the same command again to resume
  2  bad usage, unreadable input, unknown table or column (nothing loaded)
  4  could not connect, authenticate or run a statement on the server
  5  stopped: more than --max-errors records were rejected (or, without it, the first 1,000 all were)

Examples:
  sluice load orders.csv --header --table orders --db postgres://loader@db1/sales
  sluice load 'data/part-*.tsv.gz' --table events --workers 4
  sluice load big.csv --table t --job nightly   # on several hosts at once
  sluice load week.csv --header --table orders --on-conflict-do-nothing   # some rows loaded before
  zcat dump.jsonl.gz | sluice load - --format jsonl --table docs --report run.json";

/// Load files into a table, in parallel chunks, one transaction per chunk.
#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct LoadArgs {
    /// Input files, globs (quoted, expanded by sluice) or - for stdin; gzip,
    /// zstd, bzip2, xz and lz4 are recognised by their first bytes.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<String>,

    /// Target table, as `name` (found in the search path) or `schema.name`,
    /// taken as written; else read as in SQL, like psql: `"My Schema"."T"`,
    /// bare letters in lower case.
    #[arg(short, long)]
    table: String,

    /// Connection: a postgres:// URL or key=value string, as psql takes.
    /// Without it, the PG* environment variables, ~/.pgpass (or PGPASSFILE)
    /// and service files apply, as for psql.
    #[arg(long, value_name = "CONN")]
    db: Option<String>,

    /// Input format; guessed from the file extension when absent, else
    /// from the first line (stdin, `.dat`). jsonl also reads one JSON array
    /// of documents, or documents pretty-printed, a row a document.
    #[arg(short, long, value_enum)]
    format: Option<FormatArg>,

    /// Field delimiter (one character; `\t` for tab). Default: `,` for csv,
    /// tab for tsv.
    #[arg(long, value_parser = parse_char_option, value_name = "CHAR")]
    delimiter: Option<u8>,

    /// csv quote character (default `"`).
    #[arg(long, value_parser = parse_char_option, value_name = "CHAR")]
    quote: Option<u8>,

    /// csv escape character (default: the quote character).
    #[arg(long, value_parser = parse_char_option, value_name = "CHAR")]
    escape: Option<u8>,

    /// The string that means NULL (csv: unquoted empty; tsv: `\N`).
    #[arg(long, value_name = "STRING")]
    null: Option<String>,

    /// csv: columns whose quoted NULL string is NULL too (COPY's
    /// FORCE_NULL: `""` loads as NULL), comma-separated, or `*` for all.
    #[arg(long, value_delimiter = ',', value_name = "A,B|*")]
    force_null: Vec<String>,

    /// csv: columns whose unquoted NULL string is a value (COPY's
    /// FORCE_NOT_NULL: an empty field loads as an empty string, not NULL),
    /// comma-separated, or `*` for all.
    #[arg(long, value_delimiter = ',', value_name = "A,B|*")]
    force_not_null: Vec<String>,

    /// Skip the first N lines of each file, before its header or first
    /// record: the title, notes or `sep=;` line some exports write above
    /// the data (with --header=first-file: of the first file only). Lines,
    /// not records: a quote in them opens nothing. Rejects still count
    /// lines from the file's first. csv and tsv.
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true)]
    skip_lines: u64,

    /// Skip the first record of each file (not of each chunk). When it
    /// names table columns in another order or only some of them, and
    /// --columns is not given, those columns are loaded, by name.
    /// `--header=first-file`: only the first file surely begins with the
    /// header (files cut with `split -l`): a later file's first record is
    /// skipped where it repeats that header, and loaded where it does not.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "each-file", value_name = "WHICH")]
    header: Option<HeaderArg>,

    /// Each file's first line is a record, not a header. Needed only where
    /// it names every column loaded and each takes any text (a staging
    /// table of text columns): sluice refuses to load such a line as a row
    /// without --header or this.
    #[arg(long, conflicts_with = "header")]
    no_header: bool,

    /// Target columns, comma-separated, in file order (as written, else as
    /// in SQL: `"Total"` or `total`); a - leaves the field at its place out
    /// (`id,-,name`). For jsonl: the columns each loaded from the key of its
    /// name, or one column that receives the documents whole (when the
    /// documents have no key of its name).
    #[arg(long, value_delimiter = ',', value_name = "A,B,C")]
    columns: Option<Vec<String>>,

    /// With --header: load only the fields whose header names a column of
    /// the table, by name, and leave the others out (an export of a wider
    /// table). For JSON lines: load the keys that name a column, and leave
    /// out the others, in every document. With --columns, a - leaves out
    /// the field at its place instead: --columns id,-,name.
    #[arg(long)]
    skip_other_fields: bool,

    /// Number columns' values are written with a decimal comma and dots or
    /// spaces between thousands (1.234,5), as spreadsheets in much of
    /// Europe export them: sluice converts them. A value with a dot
    /// elsewhere (2.5) is rejected.
    #[arg(long)]
    decimal_comma: bool,

    /// Number columns' values are written with a decimal point and this
    /// mark between thousands (`,` for 1,234.5; `'` for 1'234.5; or a
    /// space, `_`), as spreadsheets in the US, the UK, India and
    /// Switzerland export formatted numbers: sluice removes it. A value
    /// with the mark elsewhere (1,5) is rejected.
    #[arg(long, value_parser = sluice::format::convert::thousands_mark, value_name = "CHAR", conflicts_with = "decimal_comma")]
    thousands: Option<u8>,

    /// Number columns' values may be amounts with this currency sign
    /// before or after them ($1,234.50, -$5, 1.234,50 €), negative ones
    /// also in parentheses ($(5.00), (5.00)), as spreadsheets save
    /// currency-formatted cells: sluice removes the sign. Give the marks
    /// with --thousands or --decimal-comma. A value with another sign is
    /// rejected
    #[arg(long, value_parser = sluice::format::currency::Currency::parse, value_name = "SIGN")]
    currency: Option<sluice::format::currency::Currency>,

    /// Number columns' values may be percentages with a % after them
    /// (12.5%, as spreadsheets save percentage cells): sluice loads each
    /// as the hundredth it stands for, exactly (12.5% as 0.125)
    #[arg(long)]
    percent: bool,

    /// Number columns' values may have their minus after the digits
    /// (1.234,50-, 5.00-), as SAP's exports and COBOL reports write
    /// negative numbers: sluice puts it in front. Give the marks with
    /// --thousands or --decimal-comma
    #[arg(long)]
    trailing_minus: bool,

    /// Integer columns' values may have a fraction of zeros (3.0, 12.00),
    /// as pandas writes an integer column that has a missing value (as
    /// floats) and spreadsheets write formatted numbers: sluice loads the
    /// integer. Another fraction (2.5) is still rejected
    #[arg(long)]
    zero_fractions: bool,

    /// JSON whose documents are the elements of an array under a key of
    /// each top-level object, as API responses and GeoJSON hold them
    /// ({"data": [{...}, ...]}: data; {"hits": {"hits": [...]}}: hits.hits;
    /// features), as jq '.data[]' reads them. The rest of the object is
    /// left out
    #[arg(long, value_name = "KEY[.KEY]")]
    documents_at: Option<String>,

    /// Numbers in date and timestamp columns are Unix times in this unit
    /// (s, ms, us, ns), as time.time(), Date.now() and pandas' to_json
    /// write them: sluice converts them to UTC dates and times. Values
    /// written as dates load as they are. auto: each column's unit is the
    /// one its first records' numbers read in by their digit counts (10
    /// digits for seconds, 13 for milliseconds, ...).
    #[arg(long, value_parser = UnixTimes::parse, value_name = "UNIT|auto")]
    unix_times: Option<UnixTimes>,

    /// Encoding of the input, transcoded to UTF-8 by sluice: latin1
    /// (strict ISO-8859-1), windows-1252, utf-16 (byte-order mark),
    /// utf-16le, utf-16be, koi8-r, shift_jis, ... Default: UTF-8.
    #[arg(long, value_name = "NAME")]
    encoding: Option<String>,

    /// Connections loading at once, or auto: start with 2 and add one while
    /// throughput rises by 8 % or more, step back when it does not (the
    /// summary says what each count measured).
    #[arg(short, long, value_parser = parse_workers, default_value = "auto", value_name = "N|auto")]
    workers: usize,

    /// The most connections --workers auto opens. Default: the CPU count
    /// when the server runs on this machine (more streams than cores were
    /// slower in every measurement), else 16.
    #[arg(long, value_name = "N")]
    max_workers: Option<usize>,

    /// Target chunk size; chunks end at the next record boundary. auto: a
    /// 32nd of the input, between 1 MiB and 16 MiB (16 MiB for stdin).
    #[arg(long, value_parser = parse_chunk_size, default_value = "auto", value_name = "SIZE")]
    chunk_size: u64,

    /// Empty the table before loading.
    #[arg(long)]
    truncate: bool,

    /// Where rejected records go, as JSON lines (default:
    /// TABLE.rejects.jsonl, created only when a record is rejected).
    #[arg(long, value_name = "FILE")]
    rejects: Option<PathBuf>,

    /// Stop once more than N records were rejected. Default: no limit, but
    /// stop once the first 1,000 were all rejected (a wrong option).
    #[arg(long, value_name = "N")]
    max_errors: Option<u64>,

    /// A record whose unique key (or exclusion constraint) a row of the
    /// table already holds, or an earlier record of the load, is skipped
    /// and counted instead of rejected, as INSERT ... ON CONFLICT DO NOTHING
    /// does: for exports that overlap what is loaded. The row already there
    /// stays as it is; skipped records are written nowhere
    #[arg(long)]
    on_conflict_do_nothing: bool,

    /// A record whose key a row of the table already holds replaces that
    /// row's loaded columns, as INSERT ... ON CONFLICT (key) DO UPDATE does,
    /// and of the records sharing a key the last one stays: for exports of
    /// what changed. The key: the table's primary key (or its only unique
    /// key), or the unique key on the columns given (=A,B)
    #[arg(
        long,
        value_name = "A,B",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "",
        conflicts_with = "on_conflict_do_nothing"
    )]
    on_conflict_do_update: Option<String>,

    /// A record longer than this (usually a quote left open) is rejected;
    /// loading goes on at the next line.
    #[arg(long, value_parser = super::parse_byte_size, default_value = "64MiB", value_name = "SIZE")]
    max_record_size: u64,

    /// Read no more than N records (across the inputs, in their order;
    /// headers and lines skipped aside), then stop: a trial load of a big
    /// file's first records, cut at a record's end (`head -n` cuts inside
    /// values that hold line breaks). A later load of the same files loads
    /// on from where this one stopped.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    limit: Option<u64>,

    /// Job name in the ledger. Default: derived from the table, inputs,
    /// format options and chunk size, so the same command resumes the same
    /// job. Give the same name to several processes or hosts to share a load.
    #[arg(long, value_name = "NAME")]
    job: Option<String>,

    /// Start the job over: forget its committed chunks (already loaded rows
    /// stay in the table unless --truncate is given too).
    #[arg(long)]
    restart: bool,

    /// Load input files that an earlier job loaded into the table in full
    /// (same name, same bytes), which are left out by default: their rows
    /// are there. Also loads whole a file that holds what such a job
    /// loaded and more (a log written on), which by default loads from
    /// where that job ended.
    #[arg(long)]
    load_again: bool,

    /// Connect over TCP exactly as --db says. By default, when the server is
    /// on this machine and also listens on a Unix socket that leads to the
    /// same server, database and role, the loading sessions go through the
    /// socket (less CPU for the kernel: lineitem loaded 5-9 % faster)
    #[arg(long)]
    keep_tcp: bool,

    /// Keep the server's synchronous_commit for the loading sessions instead
    /// of turning it off (turning it off is safe: the ledger redoes any chunk
    /// whose commit a crash lost).
    #[arg(long)]
    synchronous_commit: bool,

    /// How long to keep reconnecting after a lost connection, a server
    /// restart or another transient error before giving up (e.g. 30s, 5m).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5m", value_name = "DURATION")]
    retry_timeout: std::time::Duration,

    /// How chunks travel: binary (the server parses less; chunks whose values
    /// sluice cannot read with certainty go as text), text (the input's bytes
    /// as they are), or auto: binary when every column's type has an encoder.
    #[arg(long, value_enum, default_value = "auto", value_name = "FORMAT")]
    copy_format: CopyFormatArg,

    /// Drop the table's indexes, keys and foreign-key constraints for the
    /// load and build them again after it, several at once (CHECK
    /// constraints stay: cheap, checked per row). auto: when
    /// the table is empty (or --truncate). Rows that violate a key or
    /// constraint still end up as rejects; a crash never leaves an index
    /// dropped (the same command builds it). `--defer-indexes` alone: yes.
    #[arg(long, value_enum, default_value = "auto", num_args = 0..=1, default_missing_value = "yes", value_name = "WHEN")]
    defer_indexes: WhenArg,

    /// Run ANALYZE on the table after the load, so that the planner counts
    /// the new rows (PostgreSQL's advice after a bulk load). auto: where
    /// autovacuum never will (it is off, off for the table, or the table is
    /// partitioned), once the load's rows are a tenth or more of the
    /// table's; elsewhere autovacuum does it within a minute or so. The
    /// summary says how long it took. `--analyze` alone: yes.
    #[arg(long, value_enum, default_value = "auto", num_args = 0..=1, default_missing_value = "yes", value_name = "WHEN")]
    analyze: WhenArg,

    /// Make the (empty) table UNLOGGED for the load and LOGGED again after
    /// it: no WAL for the rows. A server crash meanwhile empties an unlogged
    /// table; sluice then loads every chunk again on the next run. Not for a
    /// table others write to during the load, nor one replicas must see, nor a
    /// partitioned table (its partitions would stay logged).
    #[arg(long)]
    unlogged: bool,

    /// Load into a foreign table (or a partitioned table with foreign
    /// partitions). Its rows are committed by the server that stores them,
    /// just before sluice records the chunk here: a crash between the two
    /// commits loads that chunk twice on resume. Without this flag such a
    /// table is refused.
    #[arg(long)]
    at_least_once: bool,

    /// Write a JSON report (summary, per-file counts, one record per chunk).
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,

    /// Print no progress and no summary; errors still go to stderr.
    #[arg(short, long)]
    quiet: bool,

    /// Seconds between progress lines when stderr is not a terminal.
    #[arg(long, default_value_t = 5.0, value_name = "SECS")]
    progress_interval: f64,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(super) enum FormatArg {
    Csv,
    #[value(alias = "text")]
    Tsv,
    #[value(alias = "ndjson")]
    Jsonl,
}

/// Which files begin with a header record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum HeaderArg {
    EachFile,
    FirstFile,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum CopyFormatArg {
    Auto,
    Text,
    Binary,
}

/// A count of at least 1, or `auto` (the pacer decides).
fn parse_workers(text: &str) -> Result<usize, String> {
    match text {
        "auto" => Ok(load::AUTO_WORKERS),
        _ => match text.parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(format!("invalid worker count '{text}': a number from 1, or auto")),
        },
    }
}

/// A byte size, or `auto` (0: chosen from the input's size).
fn parse_chunk_size(text: &str) -> Result<u64, String> {
    match text {
        "auto" => Ok(load::AUTO_CHUNK_SIZE),
        _ => super::parse_byte_size(text),
    }
}

/// `auto`, `yes` or `no`: when a step after the copy runs
/// (`--defer-indexes`, `--analyze`).
#[derive(Clone, Copy, Debug, ValueEnum)]
enum WhenArg {
    Auto,
    Yes,
    No,
}

impl From<WhenArg> for DeferIndexes {
    fn from(w: WhenArg) -> Self {
        match w {
            WhenArg::Auto => DeferIndexes::Auto,
            WhenArg::Yes => DeferIndexes::Yes,
            WhenArg::No => DeferIndexes::No,
        }
    }
}

impl From<WhenArg> for AnalyzeWhen {
    fn from(w: WhenArg) -> Self {
        match w {
            WhenArg::Auto => AnalyzeWhen::Auto,
            WhenArg::Yes => AnalyzeWhen::Yes,
            WhenArg::No => AnalyzeWhen::No,
        }
    }
}

impl From<CopyFormatArg> for CopyFormat {
    fn from(f: CopyFormatArg) -> Self {
        match f {
            CopyFormatArg::Auto => CopyFormat::Auto,
            CopyFormatArg::Text => CopyFormat::Text,
            CopyFormatArg::Binary => CopyFormat::Binary,
        }
    }
}

impl From<FormatArg> for FormatKind {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Csv => FormatKind::Csv,
            FormatArg::Tsv => FormatKind::Tsv,
            FormatArg::Jsonl => FormatKind::Jsonl,
        }
    }
}

impl LoadArgs {
    fn request(&self) -> LoadRequest {
        let mut options = FormatOptions::new(self.format.map_or(FormatKind::Csv, Into::into));
        options.delimiter = self.delimiter;
        options.quote = self.quote;
        options.escape = self.escape;
        options.null = self.null.clone();
        options.header = self.header.is_some();
        options.skip_lines = self.skip_lines;
        options.header_in_first_file_only = self.header == Some(HeaderArg::FirstFile);
        options.encoding = self.encoding.clone();
        options.force_null = self.force_null.clone();
        options.force_not_null = self.force_not_null.clone();
        options.decimal_comma = self.decimal_comma;
        options.thousands = self.thousands;
        options.currency = self.currency;
        options.percent = self.percent;
        options.trailing_minus = self.trailing_minus;
        options.zero_fractions = self.zero_fractions;
        options.unix_times = self.unix_times;
        options.documents_at = self.documents_at.as_ref().map(|path| path.split('.').map(String::from).collect());
        LoadRequest {
            inputs: self.files.clone(),
            table: self.table.clone(),
            columns: self.columns.clone(),
            skip_other_fields: self.skip_other_fields,
            no_header: self.no_header,
            format: self.format.map(Into::into),
            options,
            db: self.db.clone(),
            workers: self.workers,
            chunk_size: self.chunk_size,
            truncate: self.truncate,
            rejects: self.rejects.clone(),
            max_errors: self.max_errors,
            on_conflict_do_nothing: self.on_conflict_do_nothing,
            on_conflict_do_update: self
                .on_conflict_do_update
                .as_ref()
                .map(|key| key.split(',').map(str::trim).filter(|c| !c.is_empty()).map(String::from).collect()),
            max_record_size: self.max_record_size,
            limit: self.limit,
            job: self.job.clone(),
            restart: self.restart,
            load_again: self.load_again,
            keep_tcp: self.keep_tcp,
            sync_commit: self.synchronous_commit,
            interrupt: None,
            retry_timeout: self.retry_timeout,
            copy_format: self.copy_format.into(),
            defer_indexes: self.defer_indexes.into(),
            analyze: self.analyze.into(),
            unlogged: self.unlogged,
            at_least_once: self.at_least_once,
            max_workers: self.max_workers,
            command: command_line(),
        }
    }
}

/// This command as the user can run it again, in the directory it ran in
/// (a job's inputs are their full paths), quoted for a shell, without its
/// connection: `--db` may hold a password, and the same environment gives
/// the same server.
fn command_line() -> Option<String> {
    let mut words = vec!["sluice".to_string()];
    let mut args = std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--db" => {
                args.next();
            }
            db if db.starts_with("--db=") => {}
            _ => words.push(arg),
        }
    }
    let command = shlex::try_join(words.iter().map(String::as_str)).ok()?;
    let dir = std::env::current_dir().ok()?;
    let dir = shlex::try_quote(&dir.to_string_lossy()).ok()?.into_owned();
    Some(format!("cd {dir} && {command}"))
}

pub fn run(args: LoadArgs, redactor: &mut Redactor) -> Result<i32, Error> {
    super::guarded_target(args.db.as_deref(), redactor);
    if let Some(path) = &args.report {
        sluice::report::ensure_writable(path, "the report", "--report")?;
    }
    let mut request = args.request();
    request.interrupt = Some(super::interrupt_flag());
    let progress = Arc::new(Progress::default());
    let view = (!args.quiet).then(|| ProgressView::start(progress.clone(), args.progress_interval, redactor.clone()));
    let outcome = load::run(&request, &progress);
    if let Some(view) = view {
        view.finish();
    }
    let report = match outcome {
        Ok(report) => report,
        Err(Failed { error, partial: None, left_undone }) if !left_undone.is_empty() => {
            eprintln!("sluice: {}", redactor.apply(&error.to_string()));
            for line in left_undone {
                eprintln!("sluice: {line}");
            }
            return Ok(error.exit_code());
        }
        Err(Failed { error, partial: None, .. }) => return Err(error),
        Err(Failed { error, partial: Some(partial), .. }) => {
            // The error first, then what may explain it (what the server
            // said, a lock waited for), then what stays loaded.
            eprintln!("sluice: {}", redactor.apply(&error.to_string()));
            if !args.quiet {
                for warning in &partial.warnings {
                    eprintln!("sluice: warning: {}", redactor.apply(warning));
                }
            }
            write_report(&args, &partial)?;
            let s = &partial.summary;
            if !matches!(error, Error::Interrupted { .. }) {
                // An interruption's own message already says what stays.
                eprintln!(
                    "sluice: {} in {} {} committed before the error and stay{} loaded; once the cause is fixed, \
                     run the same command again to resume",
                    count_of(s.rows_loaded, "row"),
                    count_of(s.chunks, "chunk"),
                    if s.rows_loaded == 1 { "was" } else { "were" },
                    if s.rows_loaded == 1 { "s" } else { "" },
                );
            }
            if let Some(file) = &s.rejects_file {
                eprintln!(
                    "sluice: {} of the committed chunks were rejected; see {file}",
                    count_of(s.rejects_in_file, "record")
                );
                print_reject_lines(&args, &partial, redactor);
            }
            for line in s.deferred.left_undone() {
                eprintln!("sluice: {line}");
            }
            return Ok(error.exit_code());
        }
    };
    write_report(&args, &report)?;
    if !args.quiet {
        for warning in &report.warnings {
            eprintln!("sluice: warning: {}", redactor.apply(warning));
        }
        print_summary(&report);
    }
    if let Some(file) = &report.summary.rejects_file {
        // The file holds the whole job's rejects, earlier runs' included.
        let s = &report.summary;
        let rejected = count_of(s.rejected + s.resumed_rejected, "record");
        let earlier = match s.resumed_rejected {
            0 => String::new(),
            n => format!(" ({} by earlier runs of the job)", thousands(n)),
        };
        eprintln!("sluice: rejected {rejected}{earlier}; see {file} (one JSON object per record, with the reason)");
        print_reject_lines(&args, &report, redactor);
        return Ok(exit::REJECTS);
    }
    Ok(exit::OK)
}

/// Why records were rejected (see [`LoadReport::reject_lines`]), after the
/// line that names the rejects file; not with --quiet.
fn print_reject_lines(args: &LoadArgs, report: &LoadReport, redactor: &Redactor) {
    if args.quiet {
        return;
    }
    for line in report.reject_lines() {
        eprintln!("sluice: {}", redactor.apply(&line));
    }
}

/// The summary line, then where the server's time went (see
/// [`LoadReport::wait_lines`]).
pub fn print_summary(report: &LoadReport) {
    super::print_out(report.summary_line());
    for line in report.wait_lines() {
        super::print_out(line);
    }
}

fn write_report(args: &LoadArgs, report: &LoadReport) -> Result<(), Error> {
    let Some(path) = &args.report else {
        return Ok(());
    };
    report.write_json(path).map_err(|e| Error::Input {
        file: path.display().to_string(),
        message: format!("cannot write the report: {e}"),
    })
}
