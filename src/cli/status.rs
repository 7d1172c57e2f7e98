//! `sluice status`: a job's progress, read from the ledger in the target
//! database, so it works from any host while the load runs anywhere.

use clap::Args;
use sluice::error::exit;
use sluice::ledger;
use sluice::redact::Redactor;
use sluice::report::thousands;
use sluice::Error;

/// Show jobs from the ledger: chunks done, rows, rejects, active hosts.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  sluice status --db postgres://loader@db1/sales\n  sluice status --job nightly --json"
)]
pub struct StatusArgs {
    /// Connection, as for `sluice load`.
    #[arg(long, value_name = "CONN")]
    db: Option<String>,

    /// Only this job (default: every job, newest first).
    #[arg(long, value_name = "NAME")]
    job: Option<String>,

    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: StatusArgs, redactor: &mut Redactor) -> Result<i32, Error> {
    let session = super::guarded_target(args.db.as_deref(), redactor).connect()?;
    let exists = session.query("SELECT to_regclass('sluice.jobs') IS NOT NULL", &[])?;
    if exists.first().and_then(|r| r[0].as_deref()) != Some("t") {
        println!("no sluice jobs in this database");
        return Ok(exit::OK);
    }
    let jobs = ledger::status(&session, args.job.as_deref())?;
    if args.job.is_some() && jobs.is_empty() {
        return Err(Error::Usage(format!("no job named {} in the ledger", args.job.unwrap_or_default())));
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&jobs).unwrap_or_default());
        return Ok(exit::OK);
    }
    println!(
        "{:<32} {:<24} {:<12} {:>13} {:>14} {:>9}  active hosts",
        "job", "table", "state", "chunks", "rows", "rejected"
    );
    for j in &jobs {
        println!(
            "{:<32} {:<24} {:<12} {:>13} {:>14} {:>9}  {}",
            j.job,
            j.table,
            j.state,
            format!("{}/{}", j.chunks_done, j.chunks_known),
            thousands(j.rows),
            thousands(j.rejected),
            if j.active.is_empty() { "-".to_string() } else { j.active.join(", ") }
        );
        if let Some(command) = j.command.as_ref().filter(|_| j.state != "finished") {
            println!("  resume with: {command}");
        }
        if !j.dropped.is_empty() {
            println!(
                "  dropped for the load, not yet built again: {}; run the job's command again to build them",
                j.dropped.join(", ")
            );
        }
    }
    Ok(exit::OK)
}
