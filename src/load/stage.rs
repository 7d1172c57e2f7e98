//! `--on-conflict-do-nothing` where most records' keys are held already:
//! the chunk is copied into a temporary table and inserted from there by
//! `INSERT ... ON CONFLICT DO NOTHING`, as psql users do by hand.
//!
//! Why: on the direct path each record whose key the table holds costs
//! the server a probe in the key query with its message and a check of its
//! values, some 4.5 µs, where the INSERT's probe of its arbiter index costs
//! some 1.3 µs. With 90 % of an export held, sluice was slower than psql's
//! staging table (0.59-0.71×; bench/README.md). Where few keys are held, the
//! direct path is faster (no second write of every row), so a chunk is
//! staged only once a committed chunk skipped a third of its records or
//! more ([`MOSTLY_HELD`]), and the chunks go back to the direct path when
//! one skips fewer.
//!
//! What stays as it was:
//! - **Rejects.** A value COPY cannot read into the staging table's types
//!   is rejected by isolation into the staging table, which copies the
//!   chunk's other records around it in input order (see
//!   `isolate::Route::Staged`); the INSERT then goes as for a clean chunk.
//!   Any refusal of the INSERT (a CHECK, NOT NULL or foreign key it meets,
//!   a key it cannot arbitrate, such as a deferrable one) rolls the chunk
//!   back to its savepoint, and it is isolated as on the direct path, so
//!   every record is rejected or skipped for the reason it would have been
//!   there. Why not every refusal the direct way: with a bad value every
//!   50,000 lines of an export 90 % held, every chunk held one, none was
//!   staged, and the load took 5.01 s against 1.93 s without them; now 2.21 s
//!   (bench/README.md).
//! - **Which line keeps a key.** The INSERT reads the staging table in the
//!   order COPY wrote it (a sequential scan of a temporary table is never
//!   synchronized with another scan nor parallel), so of two records of a
//!   chunk sharing a key the first is kept; chunks commit in input order,
//!   and a later one gives way when an earlier one waits for its
//!   transaction (see [`super::in_flight::Flight::wait_for_earlier`]).
//! - **Counts.** A record the INSERT did not insert was skipped: the
//!   staged path is not taken for a table with a trigger of the user's,
//!   which might suppress a row (it would be counted as skipped).
//!
//! The table is created in the chunk's transaction after its savepoint and
//! dropped after the INSERT: a rollback drops it too, and no session keeps
//! one (a pooler in transaction mode would hand it to another client). It
//! is made by `CREATE TEMPORARY TABLE ... AS SELECT` of the COPY columns,
//! so it has their types, domains included; a role that may not read the
//! table or create temporary tables does not stage (see
//! `PgSession::may_stage_rows_of`).

use std::sync::atomic::{AtomicBool, Ordering};

use super::replace::{Merging, Replacing};
use crate::sink::postgres::TableInfo;
use crate::sql::quote_ident;

/// The staging table, in the `pg_temp` schema of the session.
const STAGED: &str = "pg_temp.sluice_staged";

/// A committed chunk that skipped at least this share (per mille) of its
/// records makes the next chunks staged: with held lines spread through 2 M
/// lines into a table of 2 M rows, staging every chunk and none cross near
/// 30 % (bench/README.md).
pub(super) const MOSTLY_HELD: u64 = 333;

/// Whether the staged INSERT's refusal (its SQLSTATE) would come again for
/// every chunk: anything but a record's value breaking a constraint, and a
/// key conflict (a key ON CONFLICT does not arbitrate: a deferrable one;
/// PostgreSQL refuses even to plan the INSERT for it, 42809). The load
/// then stages no more chunks.
pub(super) fn refuses_every_chunk(sqlstate: Option<&str>) -> bool {
    super::is_key_conflict(sqlstate) || !sqlstate.is_some_and(|s| s.starts_with("23"))
}

/// The statements of the staged path for one load.
pub(super) struct Staging {
    /// Creates the staging table, with the COPY columns' types.
    create: String,
    /// The load's COPY statements (text; binary when the plan has one),
    /// into the staging table.
    copy_text: String,
    copy_binary: Option<String>,
    /// Inserts the staged rows into the table, skipping held keys (or
    /// replacing the rows that hold them: see [`super::replace`]).
    insert: String,
    /// `--on-conflict-do-update`'s statements (see [`Merging`]),
    /// which every chunk and every run of isolation goes through.
    merging: Option<Merging>,
    /// A chunk met a key twice: the next ones merge each key's last row
    /// at once (see [`Merging::latest`]).
    keys_repeat: AtomicBool,
}

impl Staging {
    /// The staged path for a load into `table` (with a key in place) of
    /// `columns` (the COPY columns) by `copy_sql` (and `binary_sql`);
    /// `None` where it does not apply: the table has a trigger of the
    /// user's, or is a view or foreign.
    pub fn new(
        table: &TableInfo,
        columns: &[(String, String)],
        (copy_sql, binary_sql): (&str, Option<&str>),
    ) -> Option<Staging> {
        if !table.insert_triggers.is_empty() || table.is_view || table.is_foreign() {
            return None;
        }
        let list = column_list(columns);
        let relation = table.quoted();
        Some(Staging {
            create: format!("CREATE TEMPORARY TABLE {STAGED} AS SELECT {list} FROM {relation} WITH NO DATA"),
            copy_text: into_staged(table, copy_sql, None)?,
            copy_binary: match binary_sql {
                Some(sql) => Some(into_staged(table, sql, None)?),
                None => None,
            },
            insert: format!(
                "INSERT INTO {relation} ({list}) OVERRIDING SYSTEM VALUE SELECT {list} FROM {STAGED} \
                 ON CONFLICT DO NOTHING"
            ),
            merging: None,
            keys_repeat: AtomicBool::new(false),
        })
    }

    /// The staged path of `--on-conflict-do-update` (see
    /// [`super::replace`]): isolation's staging table numbers its rows, so
    /// COPY names its columns. A table's triggers run as for any INSERT
    /// and UPDATE; `None` for a view or a foreign table, which take no ON
    /// CONFLICT.
    pub fn replacing(
        table: &TableInfo,
        columns: &[(String, String)],
        (copy_sql, binary_sql): (&str, Option<&str>),
        replacing: &Replacing,
    ) -> Option<Staging> {
        if table.is_view || table.is_foreign() {
            return None;
        }
        let list = column_list(columns);
        let relation = table.quoted();
        let merging = Merging::new(&relation, columns, STAGED, replacing);
        Some(Staging {
            create: format!("CREATE TEMPORARY TABLE {STAGED} AS SELECT {list} FROM {relation} WITH NO DATA"),
            copy_text: into_staged(table, copy_sql, Some(&list))?,
            copy_binary: match binary_sql {
                Some(sql) => Some(into_staged(table, sql, Some(&list))?),
                None => None,
            },
            insert: merging.whole.clone(),
            merging: Some(merging),
            keys_repeat: AtomicBool::new(false),
        })
    }

    /// Whether this is `--on-conflict-do-update`'s (see [`Staging::merging`]).
    pub fn merges(&self) -> bool {
        self.merging.is_some()
    }

    /// `--on-conflict-do-update`'s statements.
    pub fn merging(&self) -> Option<&Merging> {
        self.merging.as_ref()
    }

    /// The merge for a chunk copied whole (see [`Merging`]): as staged
    /// (`true`: run [`Staging::note_keys_repeat`]'s merge should the server
    /// meet a key twice), until a chunk met a key twice.
    pub fn merge_whole_sql(&self) -> Option<(&str, bool)> {
        let merging = self.merging.as_ref()?;
        Some(match self.keys_repeat.load(Ordering::SeqCst) {
            true => (&merging.latest, false),
            false => (&merging.whole, true),
        })
    }

    /// Notes that a chunk met a key twice (the next ones merge each key's
    /// last row at once); returns the merge to run again.
    pub fn note_keys_repeat(&self) -> Option<&str> {
        self.keys_repeat.store(true, Ordering::SeqCst);
        self.merging.as_ref().map(|m| m.again.as_str())
    }

    /// `prelude` (the chunk's savepoint) with the staging table's creation.
    pub fn prelude(&self, prelude: &str) -> String {
        format!("{prelude}; {}", self.create)
    }

    /// [`Staging::prelude`] for isolation, whose runs are merged one by one
    /// by their rows' numbers (see [`Merging`]).
    pub fn isolation_prelude(&self, prelude: &str) -> String {
        match &self.merging {
            Some(merging) => format!("{prelude}; {}; {}", self.create, merging.numbered),
            None => self.prelude(prelude),
        }
    }

    /// The COPY into the staging table: binary or text.
    pub fn copy_sql(&self, binary: bool) -> Option<&str> {
        match binary {
            true => self.copy_binary.as_deref(),
            false => Some(&self.copy_text),
        }
    }

    pub fn insert_sql(&self) -> &str {
        &self.insert
    }

    pub fn drop_sql(&self) -> String {
        format!("DROP TABLE {STAGED}")
    }
}

/// The COPY columns' names, quoted, joined by commas.
pub(super) fn column_list(columns: &[(String, String)]) -> String {
    columns.iter().map(|(name, _)| quote_ident(name)).collect::<Vec<_>>().join(", ")
}

/// The load's COPY statement `sql` into `table`, into the staging table
/// instead; naming `list`, the columns, where `sql` names none.
fn into_staged(table: &TableInfo, sql: &str, list: Option<&str>) -> Option<String> {
    let rest = sql.strip_prefix(&format!("COPY {}", table.quoted()))?;
    match list {
        Some(list) if rest.starts_with(" FROM ") => Some(format!("COPY {STAGED} ({list}){rest}")),
        _ => Some(format!("COPY {STAGED}{rest}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{FormatKind, FormatOptions};
    use crate::load::plan::copy_statement;

    fn table(triggers: &[&str]) -> TableInfo {
        TableInfo {
            schema: "S x".into(),
            name: "T \"q\"".into(),
            insert_triggers: triggers.iter().map(|t| t.to_string()).collect(),
            ..crate::load::plan::tests::table(&[("id", "integer"), ("Na me", "text")])
        }
    }

    #[test]
    fn the_staged_statements_copy_as_the_load_does_and_insert_every_column_quoted() {
        let t = table(&[]);
        let copy = copy_statement(&t, None, &FormatOptions::new(FormatKind::Csv));
        let binary = "COPY \"S x\".\"T \"\"q\"\"\" (\"id\", \"Na me\") FROM STDIN WITH (FORMAT binary)";
        let staging = Staging::new(&t, &t.columns, (&copy, Some(binary))).expect("no trigger");
        let text = staging.copy_sql(false).unwrap();
        assert_eq!(text, copy.replace("COPY \"S x\".\"T \"\"q\"\"\"", "COPY pg_temp.sluice_staged"));
        assert!(text.starts_with("COPY pg_temp.sluice_staged FROM STDIN WITH (FORMAT csv"), "{text}");
        assert_eq!(
            staging.copy_sql(true),
            Some("COPY pg_temp.sluice_staged (\"id\", \"Na me\") FROM STDIN WITH (FORMAT binary)")
        );
        assert_eq!(
            staging.insert_sql(),
            "INSERT INTO \"S x\".\"T \"\"q\"\"\" (\"id\", \"Na me\") OVERRIDING SYSTEM VALUE SELECT \"id\", \"Na me\" \
             FROM pg_temp.sluice_staged ON CONFLICT DO NOTHING"
        );
        assert_eq!(
            staging.prelude("SAVEPOINT s"),
            "SAVEPOINT s; CREATE TEMPORARY TABLE pg_temp.sluice_staged AS SELECT \"id\", \"Na me\" \
             FROM \"S x\".\"T \"\"q\"\"\" WITH NO DATA"
        );
        let without_binary = Staging::new(&t, &t.columns, (&copy, None)).unwrap();
        assert_eq!(without_binary.copy_sql(true), None);
    }

    #[test]
    fn a_table_with_a_trigger_of_the_users_or_a_view_is_not_staged() {
        let t = table(&["route"]);
        let copy = copy_statement(&t, None, &FormatOptions::new(FormatKind::Tsv));
        assert!(Staging::new(&t, &t.columns, (&copy, None)).is_none(), "a trigger may suppress a row");
        let view = TableInfo { is_view: true, ..table(&[]) };
        assert!(Staging::new(&view, &view.columns, (&copy, None)).is_none());
    }

    #[test]
    fn only_a_records_constraint_leaves_the_staged_path_to_the_next_chunks() {
        for per_record in ["23514", "23502", "23503"] {
            assert!(!refuses_every_chunk(Some(per_record)), "{per_record}");
        }
        for every_chunk in ["23505", "23P01", "42809", "42501"] {
            assert!(refuses_every_chunk(Some(every_chunk)), "{every_chunk}");
        }
    }
}
