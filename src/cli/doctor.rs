//! `sluice doctor`: server settings and table shape, with advice.

use clap::Args;
use sluice::doctor;
use sluice::error::exit;
use sluice::load::default_workers;
use sluice::redact::Redactor;
use sluice::Error;

/// Read the server settings and the target table and say what would make a
/// bulk load faster or safer, with the numbers behind it. No superuser needed.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  sluice doctor --db postgres://loader@db1/sales --table orders\n  sluice doctor --json"
)]
pub struct DoctorArgs {
    /// Connection, as for `sluice load`.
    #[arg(long, value_name = "CONN")]
    db: Option<String>,

    /// The table you load into (optional).
    #[arg(short, long)]
    table: Option<String>,

    /// The number of workers you plan to use (default: as `sluice load`).
    #[arg(short, long, value_name = "N")]
    workers: Option<usize>,

    /// Print JSON instead of lines.
    #[arg(long)]
    json: bool,
}

pub fn run(args: DoctorArgs, redactor: &mut Redactor) -> Result<i32, Error> {
    let session = super::guarded_target(args.db.as_deref(), redactor).connect()?;
    let table = args.table.as_deref().map(|t| session.resolve_table(t)).transpose()?;
    let findings = doctor::examine(&session, table.as_ref(), args.workers.unwrap_or_else(default_workers))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&findings).unwrap_or_default());
        return Ok(exit::OK);
    }
    for f in &findings {
        let mark = match f.level {
            "warning" => "!!",
            "advice" => "->",
            _ => "ok",
        };
        let advice = if f.advice.is_empty() { String::new() } else { format!(": {}", f.advice) };
        println!("{mark} {} = {}{advice}", f.topic, f.value);
    }
    Ok(exit::OK)
}
