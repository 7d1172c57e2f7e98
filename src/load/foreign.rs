//! Foreign tables as targets: a foreign table, or a partitioned table with
//! foreign partitions, whose rows another server stores.
//!
//! Why they need consent: exactly once rests on a chunk's rows and its
//! ledger row committing in one transaction (see [`crate::ledger`]). The
//! rows of a foreign table are committed by the server that stores them,
//! which its wrapper asks to commit just before this server commits the
//! ledger row: a crash of either server, or of the connection between them,
//! after the first commit and before the second loads that chunk again when
//! the job resumes. Measured with a postgres_fdw table on the same
//! PostgreSQL 18 server, stopped with `-m immediate` at a random moment of
//! a load of 1 M rows in 64 KiB chunks and started again: 29 of 35 resumed
//! loads ended with a chunk (1,782 rows) or two twice. So sluice refuses
//! such a table unless `--at-least-once` says the user accepts that a
//! crash may load a chunk twice, and then keeps its loading sessions'
//! commits synchronous (see [`synchronous_commit`]).
//!
//! And why they are slow: postgres_fdw sends the rows COPY gives a foreign
//! table one INSERT at a time unless the table or its server sets
//! `batch_size`, which COPY uses from PostgreSQL 16 on (measured on 18,
//! 200,000 rows of `transactions` through a loopback server, medians of 5:
//! sluice 2.37 s one at a time, 0.44 s with `batch_size` 1000; psql `\copy`
//! 13.35 s and 0.54 s). sluice does not set it: the foreign table and its
//! server are the user's, and the option would outlast the load. It says so
//! before the load, and `sluice doctor --table` does too.

use crate::error::Error;
use crate::sink::postgres::{ForeignTable, TableInfo};

/// What a load through a foreign table risks, for messages.
pub const RISK: &str = "the server that stores a foreign table's rows commits each chunk's rows just before \
     sluice records the chunk here, so a crash between the two commits would load that chunk twice on resume";

/// What the loading sessions set `synchronous_commit` to (`None`: the
/// server's setting, `--synchronous-commit`). Off is safe for a table of
/// this server, whose rows a lost commit takes with its ledger row; for a
/// foreign table it widens the window in which the other server has
/// committed and this one has not: the last fraction of a second of
/// asynchronous commits. In the crash test above, 3 of 28 loads with
/// synchronous commits ended with a chunk twice (29 of 35 without): what
/// is left is the instant between the two servers' commits.
pub fn synchronous_commit(table: &TableInfo, keep_the_servers: bool) -> Option<&'static str> {
    match (table.foreign.is_empty(), keep_the_servers) {
        (false, _) => Some("on"),
        (true, true) => None,
        (true, false) => Some("off"),
    }
}

/// Refuses a target with foreign tables among the tables its rows go to,
/// unless the user gave `--at-least-once`.
pub fn refuse_without_consent(at_least_once: bool, table: &TableInfo) -> Result<(), Error> {
    let Some(first) = table.foreign.first().filter(|_| !at_least_once) else {
        return Ok(());
    };
    let what = match table.is_foreign() {
        true => format!("{} is a foreign table (server {})", table.display(), first.server),
        false => format!("{} has foreign partitions ({})", table.display(), names(&table.foreign)),
    };
    Err(Error::Usage(format!(
        "{what}: {RISK}; load the table on its own server (exactly once), or pass --at-least-once to load anyway"
    )))
}

/// Advice for foreign tables whose rows postgres_fdw sends one at a time;
/// `None` when there are none.
pub fn batch_advice(table: &TableInfo, server_version_num: i32) -> Option<String> {
    let batches = server_version_num >= 160_000;
    let slow: Vec<&ForeignTable> = table.foreign.iter().filter(|f| one_at_a_time(f, batches)).collect();
    let first = slow.first()?;
    Some(match batches {
        true => format!(
            "postgres_fdw sends the rows of {} to their server one INSERT at a time: batch_size is not set; \
             ALTER FOREIGN TABLE {} OPTIONS (ADD batch_size '1000') (or set it on the server) made a load \
             5x as fast here",
            names(slow.iter().copied()),
            first.display
        ),
        false => format!(
            "postgres_fdw sends the rows of {} to their server one INSERT at a time (COPY uses batch_size \
             from PostgreSQL 16 on); loading the table on its own server is faster",
            names(slow.iter().copied())
        ),
    })
}

/// Whether COPY sends this table's rows one INSERT at a time: a
/// postgres_fdw table before PostgreSQL 16 (`batches` false), or one
/// without a `batch_size` above 1.
fn one_at_a_time(table: &ForeignTable, batches: bool) -> bool {
    let unbatched = table.batch_size.as_deref().map_or(true, |b| b.trim().parse::<u32>().is_ok_and(|n| n <= 1));
    table.wrapper == "postgres_fdw" && (!batches || unbatched)
}

fn names<'a>(tables: impl IntoIterator<Item = &'a ForeignTable>) -> String {
    tables.into_iter().map(|f| f.display.as_str()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn foreign(wrapper: &str, batch_size: Option<&str>) -> ForeignTable {
        ForeignTable {
            oid: 1,
            display: "public.f".into(),
            server: "there".into(),
            wrapper: wrapper.into(),
            batch_size: batch_size.map(String::from),
        }
    }

    #[test]
    fn postgres_fdw_batches_copy_from_16_when_batch_size_is_set() {
        assert!(one_at_a_time(&foreign("postgres_fdw", None), true));
        assert!(one_at_a_time(&foreign("postgres_fdw", Some("1")), true));
        assert!(!one_at_a_time(&foreign("postgres_fdw", Some("100")), true));
        assert!(one_at_a_time(&foreign("postgres_fdw", Some("100")), false), "COPY ignores it before 16");
        assert!(!one_at_a_time(&foreign("file_fdw", None), true), "another wrapper: sluice does not know");
    }
}
