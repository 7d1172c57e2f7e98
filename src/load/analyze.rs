//! The planner's statistics after a load (`--analyze`). Why: rows a bulk
//! load adds are not in the table's statistics until ANALYZE samples them,
//! and until then the planner guesses how many rows a condition keeps
//! (PostgreSQL's "Populating a Database" ends with "Run ANALYZE
//! afterwards"). Autovacuum analyzes a table once a tenth of its rows
//! changed, within a minute or so, so by default sluice does it only where
//! autovacuum never will: when it is off (a field report turned it off for
//! its loads and found its DELETEs 10 times slower afterwards; the
//! benchmark's bulk-load settings turn it off too), off for the table, or
//! for a partitioned table (autovacuum analyzes the partitions, never the
//! table itself). It runs in the transaction that marks the job finished
//! (see `finish_job`): a kill meanwhile leaves the job unfinished, and the
//! run that finishes it analyzes the table; a refusal (a lock held
//! elsewhere) is rolled back to a savepoint, and the job still finishes.

use std::time::Instant;

use crate::error::Error;
use crate::report::Analysis;
use crate::sink::postgres::{PgSession, TableInfo};

/// `--analyze`: when to analyze the table after the load.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AnalyzeWhen {
    /// Where autovacuum never will (off, off for the table, `track_counts`
    /// off, a partitioned table), once the job's rows are a tenth or more of
    /// the table's.
    #[default]
    Auto,
    Yes,
    No,
}

/// How long ANALYZE waits for the table's lock: a session holding it
/// (a VACUUM, CREATE INDEX CONCURRENTLY) would otherwise hold sluice at its
/// very end. Autovacuum working on the table gives way within
/// `deadlock_timeout` (a second, by default).
const LOCK_WAIT: &str = "10s";

/// Share of the table's rows the job must have loaded for `auto`: the
/// default `autovacuum_analyze_scale_factor`, below which autovacuum
/// itself would not analyze.
const SHARE_OF_THE_TABLE: f64 = 0.1;

/// What the server says of the table for [`decide`].
struct TableState {
    /// The table's rows as the catalog last counted them (0 when never).
    rows: f64,
    /// Why autovacuum never analyzes it, if it never does.
    never_by_autovacuum: Option<&'static str>,
    /// This role may analyze it (owns it or the database, or is a superuser;
    /// from PostgreSQL 17 also the MAINTAIN privilege).
    may_analyze: bool,
}

/// Analyzes `table`, in the transaction that marks the job finished, after
/// a load whose job loaded `job_rows` rows, when `when` says so; the
/// report's account of it, or `None` where `auto` left it to autovacuum (or
/// nothing was loaded). Whatever the server refused is rolled back to a
/// savepoint, so the transaction goes on; an error is a lost session.
pub fn after_load(
    session: &PgSession,
    table: &TableInfo,
    when: AnalyzeWhen,
    job_rows: u64,
) -> Result<Option<Analysis>, Error> {
    const SAVEPOINT: &str = "sluice_analyze";
    if when == AnalyzeWhen::No {
        return Ok(None);
    }
    session.execute(&format!("SAVEPOINT {SAVEPOINT}"))?;
    let analysis = analyzed_or_why_not(session, table, when, job_rows);
    match analysis.as_ref().is_some_and(|a| a.done) {
        true => session.execute(&format!("RELEASE SAVEPOINT {SAVEPOINT}"))?,
        false => session.execute(&format!("ROLLBACK TO SAVEPOINT {SAVEPOINT}"))?,
    }
    Ok(analysis)
}

/// See [`after_load`]: the analysis, or why there was none.
fn analyzed_or_why_not(session: &PgSession, table: &TableInfo, when: AnalyzeWhen, job_rows: u64) -> Option<Analysis> {
    if table.is_view && when == AnalyzeWhen::Auto {
        return None;
    }
    if table.is_view {
        return Some(Analysis::not_done(format!(
            "not analyzed (--analyze): {} is a view, which has no statistics; analyze the tables its trigger writes",
            table.display()
        )));
    }
    let state = match table_state(session, table) {
        Ok(state) => state,
        Err(e) => return Some(Analysis::not_done(format!("not analyzed: the table's state could not be read ({e})"))),
    };
    let why = decide(when, job_rows, &state, !table.foreign.is_empty())?;
    if !state.may_analyze {
        return Some(Analysis::not_done(format!(
            "not analyzed ({why}): this role neither owns {} nor may analyze it; until its owner runs ANALYZE {} \
             the planner guesses the new rows' counts",
            table.display(),
            table.quoted()
        )));
    }
    let started = Instant::now();
    Some(match analyze(session, table) {
        Ok(None) => Analysis { done: true, seconds: started.elapsed().as_secs_f64(), why },
        Ok(Some((state, _))) if state == "55P03" => Analysis::not_done(format!(
            "not analyzed ({why}): another session held the table for {LOCK_WAIT}; run ANALYZE {} once nothing else \
             holds it",
            table.quoted()
        )),
        Ok(Some((_, refusal))) => {
            Analysis::not_done(format!("not analyzed ({why}): {refusal}; run ANALYZE {}", table.quoted()))
        }
        Err(e) => Analysis::not_done(format!("not analyzed ({why}): {e}; run ANALYZE {}", table.quoted())),
    })
}

/// Why to analyze, or `None` to leave it: under `auto`, only a table
/// autovacuum never analyzes, and only when the job loaded a tenth or more
/// of its rows; a foreign table only when asked (its server stores the
/// rows, and ANALYZE samples them over the network).
fn decide(when: AnalyzeWhen, job_rows: u64, state: &TableState, foreign: bool) -> Option<String> {
    match when {
        AnalyzeWhen::No => None,
        AnalyzeWhen::Yes => Some("--analyze".into()),
        AnalyzeWhen::Auto if foreign || job_rows == 0 => None,
        AnalyzeWhen::Auto => {
            let why = state.never_by_autovacuum?;
            (job_rows as f64 >= SHARE_OF_THE_TABLE * state.rows).then(|| why.to_string())
        }
    }
}

/// Reads what [`decide`] needs. A partitioned table's rows are its
/// partitions' (its own count is never kept). Autovacuum works from the
/// counts `track_counts` keeps: without them it never starts. The table's
/// `autovacuum_enabled` is kept as written: `off`, `NO`, `0`, or any
/// beginning of `false` (as PostgreSQL reads a boolean).
fn table_state(session: &PgSession, table: &TableInfo) -> Result<TableState, Error> {
    let maintain = match session.server_version() >= 170_000 {
        true => " OR pg_catalog.has_table_privilege(c.oid, 'MAINTAIN')",
        false => "",
    };
    let rows = session.query(
        &format!(
            "SELECT c.relkind = 'p', \
             CASE WHEN c.relkind = 'p' THEN (SELECT coalesce(sum(greatest(p.reltuples, 0)), 0) \
               FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class p ON p.oid = i.inhrelid \
               WHERE i.inhparent = c.oid) ELSE greatest(c.reltuples, 0) END, \
             pg_catalog.current_setting('autovacuum') = 'on', \
             pg_catalog.current_setting('track_counts') = 'on', \
             EXISTS (SELECT FROM pg_catalog.unnest(c.reloptions) o \
               WHERE pg_catalog.lower(o) ~ '^autovacuum_enabled=(f|fa|fal|fals|false|n|no|of|off|0)$'), \
             pg_catalog.pg_has_role(c.relowner, 'USAGE') \
               OR pg_catalog.pg_has_role((SELECT datdba FROM pg_catalog.pg_database \
                 WHERE datname = pg_catalog.current_database()), 'USAGE') \
               OR (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user){maintain} \
             FROM pg_catalog.pg_class c WHERE c.oid = $1::int8::oid"
        ),
        &[Some(&table.oid.to_string())],
    )?;
    let row = rows.first().ok_or_else(|| Error::Database(format!("{} is gone", table.display())))?;
    let yes = |i: usize| row[i].as_deref() == Some("t");
    let never_by_autovacuum = match (yes(0), yes(2), yes(3), yes(4)) {
        (true, ..) => Some("a partitioned table: autovacuum analyzes only its partitions"),
        (_, false, ..) => Some("autovacuum is off"),
        (_, _, false, _) => Some("track_counts is off, so autovacuum does nothing"),
        (.., true) => Some("autovacuum is off for the table"),
        _ => None,
    };
    let rows = row[1].as_deref().and_then(|r| r.parse().ok()).unwrap_or(0.0);
    Ok(TableState { rows, never_by_autovacuum, may_analyze: yes(5) })
}

/// Runs ANALYZE, waiting no more than [`LOCK_WAIT`] for the table's lock;
/// the server's refusal (SQLSTATE and message), if it refused.
fn analyze(session: &PgSession, table: &TableInfo) -> Result<Option<(String, String)>, Error> {
    session.execute(&format!("SET LOCAL lock_timeout = '{LOCK_WAIT}'"))?;
    session.execute_for_state(&format!("ANALYZE {}", table.quoted()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(rows: f64, never: Option<&'static str>) -> TableState {
        TableState { rows, never_by_autovacuum: never, may_analyze: true }
    }

    #[test]
    fn auto_analyzes_only_what_autovacuum_never_will_and_only_after_a_tenth_of_its_rows() {
        let off = Some("autovacuum is off");
        assert_eq!(decide(AnalyzeWhen::Auto, 1_000, &state(0.0, off), false).as_deref(), off);
        assert_eq!(decide(AnalyzeWhen::Auto, 1_000, &state(10_000.0, off), false).as_deref(), off);
        assert_eq!(decide(AnalyzeWhen::Auto, 999, &state(10_000.0, off), false), None, "below a tenth");
        assert_eq!(decide(AnalyzeWhen::Auto, 1_000, &state(0.0, None), false), None, "autovacuum will");
        assert_eq!(decide(AnalyzeWhen::Auto, 0, &state(0.0, off), false), None, "nothing loaded");
        assert_eq!(decide(AnalyzeWhen::Auto, 1_000, &state(0.0, off), true), None, "a foreign table");
        assert_eq!(decide(AnalyzeWhen::Yes, 0, &state(1e9, None), true).as_deref(), Some("--analyze"));
        assert_eq!(decide(AnalyzeWhen::No, 1_000, &state(0.0, off), false), None);
    }
}
