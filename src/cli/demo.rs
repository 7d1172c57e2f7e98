//! `sluice demo`: the main job end to end on a throwaway local PostgreSQL.

use std::sync::Arc;

use clap::Args;
use sluice::error::exit;
use sluice::gen::{write_file, Dataset};
use sluice::load::{self, LoadRequest};
use sluice::local_pg::{LocalOptions, LocalPostgres};
use sluice::progress::Progress;
use sluice::redact::Redactor;
use sluice::sink::postgres::PgTarget;
use sluice::Error;

use super::progress_view::ProgressView;

/// Start a throwaway PostgreSQL, generate data, load it, show the summary,
/// stop the server and delete everything.
#[derive(Args, Debug)]
#[command(after_help = "Example:\n  sluice demo --dataset cname --rows 2M")]
pub struct DemoArgs {
    /// Dataset to generate and load (see `sluice gen --help`).
    #[arg(long, value_parser = super::gen::parse_dataset, default_value = "transactions")]
    dataset: Dataset,

    /// Rows to generate.
    #[arg(long, value_parser = super::parse_count, default_value = "2M")]
    rows: u64,

    /// Connections loading at once (default: auto, as for `sluice load`).
    #[arg(short, long)]
    workers: Option<usize>,

    /// Target chunk size.
    #[arg(long, value_parser = super::parse_byte_size, default_value = "16MiB")]
    chunk_size: u64,
}

/// Settings of the throwaway server: the bulk-load profile of the benchmark
/// (durability does not matter for a cluster deleted at the end).
fn demo_settings() -> Vec<(String, String)> {
    [("shared_buffers", "512MB"), ("max_wal_size", "8GB"), ("checkpoint_timeout", "30min"), ("autovacuum", "off")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub fn run(args: DemoArgs, _redactor: &mut Redactor) -> Result<i32, Error> {
    // Installed first: a Ctrl-C or TERM at any step then ends in the clean-up
    // below (the server stopped, its files and the data removed), not in a
    // server left running.
    let interrupt = super::interrupt_flag();
    eprintln!("sluice demo: starting a throwaway PostgreSQL server");
    let server = LocalPostgres::start(&LocalOptions { settings: demo_settings(), ..LocalOptions::default() })?;
    let conninfo = server.conninfo("postgres");
    let table = args.dataset.name();
    let session = PgTarget::new(Some(&conninfo)).connect()?;
    session.execute(&args.dataset.ddl(table))?;
    drop(session);
    let dir = tempfile::tempdir().map_err(|e| Error::Usage(format!("creating a temporary folder: {e}")))?;
    eprintln!("sluice demo: generating {} rows of {table} into {}", args.rows, dir.path().display());
    let path = write_file(args.dataset, args.rows, dir.path())?;
    eprintln!("sluice demo: sluice load {} --table {table}", path.display());
    let request = LoadRequest {
        db: Some(conninfo),
        workers: args.workers.unwrap_or(load::AUTO_WORKERS),
        chunk_size: args.chunk_size,
        interrupt: Some(interrupt),
        ..LoadRequest::new(vec![path.display().to_string()], table)
    };
    let progress = Arc::new(Progress::default());
    let view = ProgressView::start(progress.clone(), 1.0, Default::default());
    let outcome = load::run(&request, &progress);
    view.finish();
    let code = match outcome {
        Ok(report) => {
            super::load::print_summary(&report);
            exit::OK
        }
        Err(failed) if matches!(failed.error, Error::Interrupted { .. }) => exit::INTERRUPTED,
        Err(failed) => return Err(failed.error),
    };
    eprintln!("sluice demo: stopping the server and removing its files");
    server.stop();
    Ok(code)
}
