//! `sluice forget`: deletes a job from the ledger (see
//! [`sluice::ledger::forget`]), for a job stopped for good.

use clap::Args;
use sluice::error::exit;
use sluice::ledger;
use sluice::redact::Redactor;
use sluice::report::count_of;
use sluice::Error;

/// Delete a job from the ledger: one stopped for good (the load done again
/// with other options, under another name), or an old finished one. The
/// rows it committed stay in the table.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  sluice forget orders-3f2a9c1b7d4e\n  sluice forget nightly --db postgres://loader@db1/sales"
)]
pub struct ForgetArgs {
    /// The job, as `sluice status` names it.
    #[arg(value_name = "JOB")]
    job: String,

    /// Connection, as for `sluice load`.
    #[arg(long, value_name = "CONN")]
    db: Option<String>,

    /// Forget an unfinished job that committed rows: they stay in the
    /// table, and its command, run again, would load them a second time.
    #[arg(long)]
    rows_stay: bool,
}

pub fn run(args: ForgetArgs, redactor: &mut Redactor) -> Result<i32, Error> {
    let Some(session) = super::ledger_session(args.db.as_deref(), redactor, ledger::LedgerUse::Load)? else {
        return Err(Error::Usage("no sluice jobs in this database".into()));
    };
    let gone = ledger::forget(&session, &args.job, args.rows_stay)?;
    let rows = count_of(gone.rows, "row");
    match (gone.finished, gone.rows) {
        (_, 0) => println!("forgot job {}, which had committed no row into {}", args.job, gone.table),
        (true, _) => println!(
            "forgot job {} ({rows} into {}, which stay): a load of its files no longer leaves them out as loaded",
            args.job, gone.table
        ),
        (false, _) => println!(
            "forgot job {} ({rows} into {}, which stay): its command, run again, would load them a second time",
            args.job, gone.table
        ),
    }
    Ok(exit::OK)
}
