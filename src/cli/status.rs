//! `sluice status`: a job's progress, read from the ledger in the target
//! database, so it works from any host while the load runs anywhere.

use clap::Args;
use sluice::error::exit;
use sluice::ledger;
use sluice::redact::Redactor;
use sluice::report::{count_of, human_bytes, thousands};
use sluice::Error;

/// Show jobs from the ledger: chunks done, rows, rejects, active hosts.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  sluice status --db postgres://loader@db1/sales\n  sluice status --job nightly --json\n  \
                  sluice status --table orders --all"
)]
pub struct StatusArgs {
    /// Connection, as for `sluice load`.
    #[arg(long, value_name = "CONN")]
    db: Option<String>,

    /// Only this job (default: every job, newest first).
    #[arg(long, value_name = "NAME")]
    job: Option<String>,

    /// Only the jobs that load into this table (as `sluice load -t` names
    /// it).
    #[arg(long, short = 't', value_name = "TABLE")]
    table: Option<String>,

    /// Every finished job. By default the table lists every job not
    /// finished and the newest finished ones (JSON: every job).
    #[arg(long)]
    all: bool,

    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: StatusArgs, redactor: &mut Redactor) -> Result<i32, Error> {
    let Some(session) = super::ledger_session(args.db.as_deref(), redactor, ledger::LedgerUse::Read)? else {
        println!("no sluice jobs in this database");
        return Ok(exit::OK);
    };
    let table = args.table.as_deref().map(|name| table_as_the_ledger_names_it(&session, name));
    let mut jobs = ledger::status(&session, args.job.as_deref(), table.as_deref())?;
    if args.job.is_some() && jobs.is_empty() {
        return Err(Error::Usage(format!("no job named {} in the ledger", args.job.unwrap_or_default())));
    }
    if let (Some(table), true) = (&table, jobs.is_empty()) {
        return Err(Error::Usage(format!("no job in the ledger loaded into {table}")));
    }
    if args.job.is_some() {
        // One job asked for: what its rejects were, while it runs too.
        for job in jobs.iter_mut().filter(|j| j.rejected > 0) {
            job.reject_reasons = Some(sluice::rejects::reasons_of_job(&session, &job.job)?);
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&jobs).unwrap_or_default());
        return Ok(exit::OK);
    }
    let (jobs, finished_left_out) = match args.all || args.job.is_some() {
        true => (jobs, 0),
        false => newest_finished(jobs),
    };
    println!(
        "{:<32} {:<24} {:<12} {:>20} {:>11} {:>14} {:>9}  active hosts",
        "job", "table", "state", "input done", "chunks done", "rows", "rejected"
    );
    for j in &jobs {
        println!(
            "{:<32} {:<24} {:<12} {:>20} {:>11} {:>14} {:>9}  {}",
            j.job,
            j.table,
            state_shown(j),
            input_done(j),
            thousands(j.chunks_done),
            thousands(j.rows),
            thousands(j.rejected),
            if j.active.is_empty() { "-".to_string() } else { j.active.join(", ") }
        );
        if j.skipped > 0 {
            println!("  skipped {} (--on-conflict-do-nothing)", count_of(j.skipped, "duplicate key"));
        }
        if let Some(limit) = j.record_limit.filter(|_| j.state != "in progress") {
            println!(
                "  read no more than {} (--limit); a load of the same files without it goes on from there",
                count_of(limit, "record")
            );
        }
        if j.replaced > 0 {
            let replacing = "replacing the row with their key (--on-conflict-do-update)";
            println!("  {} of the rows {replacing}", thousands(j.replaced));
        }
        let in_progress = j.state == "in progress";
        if j.rewritten_since && j.state == "finished" {
            println!(
                "  the table was rewritten since this job finished (by TRUNCATE, VACUUM FULL, CLUSTER or ALTER \
                 TABLE): if a TRUNCATE emptied it, its rows are gone"
            );
        }
        if j.state == "emptied" {
            println!(
                "  another job's --truncate emptied the table after this job finished, and its rows with it; \
                 its command loads them again"
            );
        }
        if in_progress && every_chunk_done(j) {
            println!(
                "  every chunk is loaded; the job finishes once the indexes it dropped are built again \
                 and its rejects file is written"
            );
        }
        let stopped = in_progress && !j.running;
        // The first records' stop says "stopped: ..." of itself.
        let reason = j.stopped_by.as_deref().filter(|_| stopped).map(|r| r.strip_prefix("stopped: ").unwrap_or(r));
        match (j.command.as_ref().filter(|_| stopped), reason) {
            (Some(command), Some(reason)) => {
                println!("  its last run stopped: {reason}");
                println!("  once the cause is dealt with, resume with: {command}");
                if j.rows == 0 {
                    println!("  or, loaded since another way, drop it from the ledger: sluice forget {}", j.job);
                }
            }
            (None, Some(reason)) => println!("  its last run stopped: {reason}"),
            (Some(command), None) => println!("  resume with: {command}"),
            (None, None) => {}
        }
        if let Some(reasons) = &j.reject_reasons {
            println!("  rejected, by reason:");
            for line in sluice::report::reject_lines(reasons) {
                println!("  {line}");
            }
        }
        if !j.dropped.is_empty() {
            println!("  {}", dropped_line(j));
        }
    }
    if finished_left_out > 0 {
        println!(
            "... and {} older finished {}, not listed (--all lists them; --table T, one table's jobs)",
            thousands(finished_left_out as u64),
            if finished_left_out == 1 { "job" } else { "jobs" }
        );
    }
    Ok(exit::OK)
}

/// How many finished jobs the table lists by default: a nightly cron load
/// leaves a job a night, and after a year `sluice status` printed 365
/// lines to find the one that stopped.
const FINISHED_SHOWN: usize = 20;

/// Every job not finished, and the [`FINISHED_SHOWN`] newest finished
/// (jobs come newest first), with how many finished were left out.
fn newest_finished(jobs: Vec<ledger::JobStatus>) -> (Vec<ledger::JobStatus>, usize) {
    let mut finished = 0;
    let (mut shown, mut left_out) = (Vec::new(), 0);
    for job in jobs {
        let done = job.state != "in progress";
        finished += usize::from(done);
        match done && finished > FINISHED_SHOWN {
            true => left_out += 1,
            false => shown.push(job),
        }
    }
    (shown, left_out)
}

/// The table as the ledger names its jobs' targets (`public.orders`): the
/// table `name` finds as `sluice load -t` finds it, or (a table dropped
/// since) the name as given.
fn table_as_the_ledger_names_it(session: &sluice::sink::postgres::PgSession, name: &str) -> String {
    session.resolve_table(name).map_or_else(|_| name.to_string(), |table| table.display())
}

/// `finished` (`emptied`: another job's `--truncate` took its rows since),
/// or for a job in progress whether a process runs it now
/// (`running`; `finishing` once every chunk is committed, while it builds
/// deferred indexes again or analyzes the table: `running` read as rows
/// still loading) or none does (`stopped`: interrupted, crashed, or
/// failed), which is when its command has to be run again.
fn state_shown(job: &ledger::JobStatus) -> &str {
    match (job.state.as_str(), job.running) {
        ("finished", _) => "finished",
        ("emptied", _) => "emptied",
        (_, true) if every_chunk_done(job) => "finishing",
        (_, true) => "running",
        (_, false) => "stopped",
    }
}

/// How much of the input the done chunks cover: `31% of 395.0 MB`, or the
/// bytes alone when the input's size was not known before the load (stdin,
/// pipes, compressed or transcoded input). Chunks are recorded as they
/// commit, so their count says nothing of the chunks to come. A job given
/// `--limit` reads only the share of its input the records take
/// (`61.0 MB of 101.8 MB`): a trial load of 600,000 records showed
/// `all of 101.8 MB` once finished.
fn input_done(job: &ledger::JobStatus) -> String {
    if job.record_limit.is_some() {
        return match job.input_bytes {
            Some(total) if total > 0 => format!("{} of {}", human_bytes(job.bytes_done), human_bytes(total)),
            _ => human_bytes(job.bytes_done),
        };
    }
    match job.input_bytes {
        Some(total) if job.state != "in progress" || every_chunk_done(job) => format!("all of {}", human_bytes(total)),
        Some(total) if total > 0 => {
            // Below the total (see above), so at most 99 %.
            let percent = 100 * job.bytes_done / total;
            format!("{percent}% of {}", human_bytes(total))
        }
        _ => human_bytes(job.bytes_done),
    }
}

/// Whether the done chunks cover the whole input, as far as the ledger
/// knows its size: the files' sizes, until the load records the bytes its
/// chunks hold once every one is committed (a header line is in no chunk).
/// What the job dropped for the load and has not built again; who builds
/// it: the running load, at its end (running the command again then would
/// only join it), or the command run again.
fn dropped_line(job: &ledger::JobStatus) -> String {
    let dropped = job.dropped.join(", ");
    match (job.running, every_chunk_done(job)) {
        (true, true) => format!("still to build again, by the running load: {dropped}"),
        (true, false) => format!("dropped for the load, built again at its end: {dropped}"),
        (false, _) => {
            format!("dropped for the load, not yet built again: {dropped}; run the job's command again to build them")
        }
    }
}

fn every_chunk_done(job: &ledger::JobStatus) -> bool {
    job.input_bytes.is_some_and(|total| total > 0 && job.bytes_done >= total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(state: &str, bytes_done: u64, input_bytes: Option<u64>) -> ledger::JobStatus {
        ledger::JobStatus {
            job: "j".into(),
            table: "public.t".into(),
            state: state.into(),
            running: false,
            chunks_done: 3,
            chunks_known: 3,
            bytes_done,
            input_bytes,
            record_limit: None,
            rewritten_since: false,
            rows: 0,
            rejected: 0,
            skipped: 0,
            replaced: 0,
            active: vec![],
            dropped: vec![],
            command: None,
            stopped_by: None,
            reject_reasons: None,
        }
    }

    #[test]
    fn what_the_job_dropped_is_built_by_the_running_load_or_the_command_run_again() {
        let dropped = |running, bytes_done| {
            let j = ledger::JobStatus {
                running,
                dropped: vec!["index \"i\"".into()],
                ..job("in progress", bytes_done, Some(9))
            };
            dropped_line(&j)
        };
        assert_eq!(dropped(true, 4), "dropped for the load, built again at its end: index \"i\"");
        assert_eq!(dropped(true, 9), "still to build again, by the running load: index \"i\"");
        let stopped =
            "dropped for the load, not yet built again: index \"i\"; run the job's command again to build them";
        assert_eq!((dropped(false, 4), dropped(false, 9)), (stopped.into(), stopped.into()));
    }

    #[test]
    fn input_done_is_a_share_of_a_known_size() {
        assert_eq!(input_done(&job("in progress", 123_400_000, Some(395_000_000))), "31% of 395.0 MB");
        assert_eq!(input_done(&job("in progress", 394_000_000, Some(395_000_000))), "99% of 395.0 MB");
        // Every chunk done but the job not finished (indexes still to build):
        // all of the input, and the state says the rest.
        assert_eq!(input_done(&job("in progress", 395_000_000, Some(395_000_000))), "all of 395.0 MB");
        assert!(every_chunk_done(&job("in progress", 395_000_000, Some(395_000_000))));
        assert!(!every_chunk_done(&job("in progress", 394_999_999, Some(395_000_000))));
        assert!(!every_chunk_done(&job("in progress", 0, Some(0))));
        // A header line is in no chunk.
        assert_eq!(input_done(&job("finished", 394_999_990, Some(395_000_000))), "all of 395.0 MB");
        assert_eq!(input_done(&job("in progress", 2_500_000, None)), "2.5 MB");
        assert_eq!(input_done(&job("in progress", 0, Some(0))), "0 B");
        let limited = |state, input_bytes| ledger::JobStatus {
            record_limit: Some(600_000),
            ..job(state, 61_000_000, input_bytes)
        };
        assert_eq!(input_done(&limited("finished", Some(101_800_000))), "61.0 MB of 101.8 MB");
        assert_eq!(input_done(&limited("in progress", Some(101_800_000))), "61.0 MB of 101.8 MB");
        assert_eq!(input_done(&limited("finished", None)), "61.0 MB");
    }
}
