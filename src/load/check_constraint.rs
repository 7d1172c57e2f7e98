//! Finding, in one statement, the records of a refused chunk that break
//! the table's CHECK constraints or hold a NULL in a NOT NULL column, so
//! that isolation does not meet them one COPY at a time.
//!
//! Why our own: a CHECK the server finds part way through a COPY costs that
//! COPY and a re-copy of the records before it, each a round trip. 200,000
//! records with every tenth breaking a CHECK took 40,862 COPYs and 1.7 s,
//! against 0.12 s clean (bench/README.md); over a network each of those
//! round trips costs its latency too.
//!
//! How: once a chunk's CHECK refusals come densely (one in
//! [`super::DENSE_KEYS`] records or closer, or a committed chunk's did),
//! the records still to copy are split as COPY splits them (see
//! [`value_check`](super::value_check)) and sent as text arrays to one
//! query, which casts each value to its column's declared type and
//! collation (a domain's constraints and a number's or time's modifier
//! apply there as COPY applies them) under the column's name, and evaluates each
//! constraint's expression as the server prints it, in the server's order
//! (by name), as the server does: only a false result refuses; before them,
//! in the table's order, a NULL in a NOT NULL column refuses (`null value
//! in column "n" of relation "t" violates not-null constraint`). The
//! records the client suspects only for such a NULL go to the query as
//! soon as there are 8 of them (each went to COPY alone). A record
//! refused is rejected with the server's words: `new row for relation "t"
//! violates check constraint "c"`, and the row it shows (`Failing row
//! contains (...)`, each value cut at 64 bytes) where the session may read
//! every column and the file fills them all (defaults are the server's to
//! compute); in the server's language (see [`wording`](super::wording)).
//! The others go to COPY as one run, which still decides keys,
//! foreign keys and anything the query could not judge. About 0.3 µs a
//! record of the server's time, most of it reading the arrays; a PL/pgSQL
//! function assigning the values to variables took twice as long.
//!
//! Only where nothing else comes between a record and its CHECKs: a plain
//! table (a partition's own constraints are checked on its rows), no
//! BEFORE row trigger of the user's (which may change the row; AFTER
//! triggers run once the row passed its CHECKs), no staging table
//! (`--on-conflict-do-update` checks at its merge), no CHECK that calls a
//! volatile function (called for each record here, and again by COPY),
//! every column a CHECK reads and every NOT NULL one without a default
//! among the file's, at most 100 columns, no column named `sluice_...`
//! (the query's own names) and none of a bit type with a length (a cast
//! pads or cuts a value COPY refuses). A value longer than its `varchar(n)`
//! or `char(n)` column allows is left to COPY (a cast cuts it where COPY
//! refuses it), as is a record with a NULL where none goes (COPY refuses
//! it for that first). A value the cast refuses fails the query, and the
//! chunk is isolated by COPY as before; any other failure stops the
//! checks for the rest of the load.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::Error;
use crate::format::binary::BinaryEncoder;
use crate::format::FormatOptions;
use crate::sink::postgres::{CheckConstraints, PgSession, TableInfo};
use crate::sink::CopyRefusal;
use crate::sql::{quote_ident, quote_literal};

use super::value_check::{fields_of, push_array_element, text_splitter};
use super::wording::Wording;

/// Most COPY columns the query is made for.
const MAX_COLUMNS: usize = 100;

/// How the query's own names begin.
const OWN: &str = "sluice_";

/// Most bytes of records one statement reads (a record longer goes alone):
/// its text, a quoted copy and the server's reading of it each cost
/// about as much again, for each worker, and a chunk may be 16 MiB.
const BATCH_BYTES: usize = 2 << 20;

/// How many bytes of a value the server shows in a failing row.
const SHOWN_BYTES: usize = 64;

/// SQLSTATE of a CHECK violation.
pub(super) const CHECK_VIOLATION: &str = "23514";

/// SQLSTATE of a NULL in a NOT NULL column.
pub(super) const NOT_NULL_VIOLATION: &str = "23502";

/// The check for one load's CHECK constraints.
pub(super) struct ConstraintCheck {
    /// Splits records as COPY does, every column read as text.
    splitter: BinaryEncoder,
    /// The COPY columns' count: the query's arrays.
    columns: usize,
    /// The query before its arrays of values and after them.
    query: (String, String),
    /// The table's name, as its refusals name it.
    relation: String,
    /// The constraints' names, in the server's order, and each as a
    /// refusal's `constraint` names it (schema and name, quoted).
    names: Vec<String>,
    qualified: Vec<String>,
    /// The COPY columns declared NOT NULL, in the table's order.
    not_null: Vec<String>,
    /// How the refusals are worded.
    wording: Wording,
    /// Whether a NULL's refusal names the relation (PostgreSQL 13 on).
    of_relation: bool,
    /// For the failing row shown: each of the table's columns' place among
    /// COPY's, in the table's order (`None`: not shown).
    shown: Option<Vec<usize>>,
    /// Set once a check failed for something else than a value.
    broken: AtomicBool,
}

impl ConstraintCheck {
    /// `None` where the query cannot judge the table's CHECKs as the
    /// server does (see the module's doc) or there are none.
    pub fn new(
        table: &TableInfo,
        checks: &CheckConstraints,
        copy_columns: &[(String, String)],
        format: &FormatOptions,
    ) -> Option<ConstraintCheck> {
        let copied = |name: &str| copy_columns.iter().position(|(c, _)| c == name);
        let judged = checks.checks.iter().all(|c| {
            !c.volatile && c.columns.as_ref().is_some_and(|columns| columns.iter().all(|n| copied(n).is_some()))
        });
        let not_null_filled = table.not_null.iter().all(|n| copied(n).is_some() || table.defaulted.contains(n));
        let not_null: Vec<String> = table.not_null.iter().filter(|n| copied(n).is_some()).cloned().collect();
        if (checks.checks.is_empty() && not_null.is_empty())
            || !checks.plain
            || !table.before_row_triggers.is_empty()
            || !judged
            || !not_null_filled
            || copy_columns.len() > MAX_COLUMNS
            || copy_columns.iter().any(|(name, _)| name.starts_with(OWN))
        {
            return None;
        }
        let shown: Option<Vec<usize>> = checks
            .columns
            .iter()
            .map(|c| copied(&c.name).filter(|_| !c.generated))
            .collect::<Option<Vec<usize>>>()
            .filter(|places| checks.readable && places.len() == copy_columns.len());
        let query = query(checks, copy_columns, &not_null, shown.is_some())?;
        Some(ConstraintCheck {
            splitter: text_splitter(copy_columns, format)?,
            columns: copy_columns.len(),
            query,
            relation: checks.relation.clone(),
            names: checks.checks.iter().map(|c| c.name.clone()).collect(),
            qualified: checks
                .checks
                .iter()
                .map(|c| format!("{}.{}", quote_ident(&table.schema), quote_ident(&c.name)))
                .collect(),
            wording: Wording::new(&checks.lc_messages),
            of_relation: checks.server_version >= 130_000,
            not_null,
            shown,
            broken: AtomicBool::new(false),
        })
    }

    pub fn usable(&self) -> bool {
        !self.broken.load(Ordering::Relaxed)
    }

    /// Whether the server refused a record for one of the table's CHECKs
    /// (not a domain's, which COPY meets reading the value) or for a NULL
    /// in one of its NOT NULL columns.
    pub fn breaks(&self, refusal: &CopyRefusal) -> bool {
        match refusal.sqlstate.as_deref() {
            Some(CHECK_VIOLATION) => refusal.constraint.as_ref().is_some_and(|c| self.qualified.contains(c)),
            Some(NOT_NULL_VIOLATION) => refusal.column.as_ref().is_some_and(|c| self.not_null.contains(c)),
            _ => false,
        }
    }

    /// Takes the words of COPY's `refusal` for a constraint (or NOT NULL
    /// column) the query judges (see [`Wording`]).
    pub fn learn_wording(&self, refusal: &CopyRefusal) {
        let at =
            |names: &[String], name: &Option<String>| name.as_ref().and_then(|n| names.iter().position(|q| q == n));
        let broken = match refusal.sqlstate.as_deref() {
            Some(CHECK_VIOLATION) => at(&self.qualified, &refusal.constraint).map(Broken::Check),
            Some(NOT_NULL_VIOLATION) => at(&self.not_null, &refusal.column).map(Broken::Null),
            _ => None,
        };
        let Some((what, english)) = broken.and_then(|b| Some((self.what(b)?, self.english_message(b)?))) else {
            return;
        };
        self.wording.learn(&what, &english, refusal);
    }

    /// How many refusals' words are known (see [`Wording::known`]).
    pub fn words_known(&self) -> usize {
        self.wording.known()
    }

    /// The `records` (each whole, line end included) that break a CHECK,
    /// by index, with the server's refusal (`None` for one the query cannot
    /// word yet, see [`Wording`]: COPY is to word it); `None`
    /// when the statement failed (the transaction must then roll back to
    /// its savepoint). A record the splitter is unsure of is left to COPY.
    pub fn refused(&self, session: &PgSession, records: &[&[u8]]) -> Result<Option<Refusals>, Error> {
        let mut refused = Vec::new();
        let mut first = 0;
        while first < records.len() {
            let mut end = first;
            let mut bytes = 0;
            while end < records.len() && (end == first || bytes + records[end].len() <= BATCH_BYTES) {
                bytes += records[end].len();
                end += 1;
            }
            let Some(found) = self.refused_in(session, &records[first..end])? else { return Ok(None) };
            refused.extend(found.into_iter().map(|(k, refusal)| (first + k, refusal)));
            first = end;
        }
        Ok(Some(refused))
    }

    /// [`ConstraintCheck::refused`] for one statement's records.
    fn refused_in(&self, session: &PgSession, records: &[&[u8]]) -> Result<Option<Refusals>, Error> {
        let (arrays, sent) = self.arrays_of(records);
        if sent.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let (before, after) = &self.query;
        match session.query_statements(&format!("{before}{arrays}{after}"))? {
            Ok(rows) => Ok(Some(rows.iter().filter_map(|row| self.refusal(row, &sent)).collect())),
            // A value the column's type refuses (class 22), or its domain's
            // constraint (class 23): this chunk's data fails this check
            // only.
            Err(r) if r.sqlstate.as_deref().is_some_and(|s| s.starts_with("22") || s.starts_with("23")) => Ok(None),
            Err(_) => {
                self.broken.store(true, Ordering::Relaxed);
                Ok(None)
            }
        }
    }

    /// The COPY columns' values of the `records` the splitter is sure of, as
    /// `text[]` literals for [`query`], and those records' indexes. Written
    /// straight from the split fields: a string for each value, and a list
    /// of them for each record, were a third of the client's time.
    fn arrays_of(&self, records: &[&[u8]]) -> (String, Vec<usize>) {
        let mut splitter = self.splitter.clone();
        let mut tuple = Vec::new();
        let mut arrays = vec![String::from("{"); self.columns];
        let mut sent = Vec::new();
        for (index, record) in records.iter().enumerate() {
            let Some(fields) = fields_of(&mut splitter, record, &mut tuple) else { continue };
            let texts: Option<Vec<Option<&str>>> =
                fields.iter().map(|field| field.map(std::str::from_utf8).transpose().ok()).collect();
            let Some(texts) = texts.filter(|texts| texts.len() == self.columns) else { continue };
            for (array, text) in arrays.iter_mut().zip(texts) {
                if !sent.is_empty() {
                    array.push(',');
                }
                push_array_element(array, text);
            }
            sent.push(index);
        }
        let literals: Vec<String> =
            arrays.into_iter().map(|array| format!("{}::text[]", quote_literal(&format!("{array}}}")))).collect();
        (literals.join(", "), sent)
    }

    /// A row of [`query`]'s as the refusal of the record it numbers among
    /// those `sent` (`None`: not worded yet).
    fn refusal(&self, row: &[Option<String>], sent: &[usize]) -> Option<(usize, Option<CopyRefusal>)> {
        let n: usize = row.first()?.as_deref()?.parse().ok()?;
        let at: i64 = row.get(1)?.as_deref()?.parse().ok()?;
        let record = *sent.get(n.checked_sub(1)?)?;
        let failing = self.shown.as_ref().map(|places| {
            let values: Vec<String> = places.iter().map(|&p| shown_value(row.get(p + 2).cloned().flatten())).collect();
            format!("({})", values.join(", "))
        });
        // A CHECK's place, or minus a NOT NULL column's place plus one.
        let broken = match usize::try_from(at) {
            Ok(at) => Broken::Check(at),
            Err(_) => Broken::Null(usize::try_from(-at - 1).ok()?),
        };
        let refusal = match broken {
            Broken::Check(at) => CopyRefusal {
                sqlstate: Some(CHECK_VIOLATION.into()),
                constraint: Some(self.qualified.get(at)?.clone()),
                ..CopyRefusal::default()
            },
            Broken::Null(at) => CopyRefusal {
                sqlstate: Some(NOT_NULL_VIOLATION.into()),
                column: Some(self.not_null.get(at)?.clone()),
                ..CopyRefusal::default()
            },
        };
        let worded = self.words(broken, failing).map(|(message, detail)| CopyRefusal { message, detail, ..refusal });
        Some((record, worded))
    }

    /// The message and detail of a refusal for `broken`, showing the row
    /// `failing` (`None`: not shown), as the server words them; `None`
    /// where they are not known yet.
    fn words(&self, broken: Broken, failing: Option<String>) -> Option<(String, Option<String>)> {
        let english = || {
            Some((self.english_message(broken)?, failing.as_ref().map(|row| format!("Failing row contains {row}."))))
        };
        self.wording.words(&self.what(broken)?, failing.as_deref(), english)
    }

    /// What a refusal for `broken` is for, as [`Wording`] keeps its words.
    fn what(&self, broken: Broken) -> Option<String> {
        match broken {
            Broken::Check(at) => self.qualified.get(at).cloned(),
            Broken::Null(at) => self.not_null.get(at).map(|column| format!("NOT NULL {column}")),
        }
    }

    /// The server's message for `broken` in English.
    fn english_message(&self, broken: Broken) -> Option<String> {
        let relation = &self.relation;
        Some(match broken {
            Broken::Check(at) => {
                let name = self.names.get(at)?;
                format!("new row for relation \"{relation}\" violates check constraint \"{name}\"")
            }
            Broken::Null(at) => {
                let column = self.not_null.get(at)?;
                let of = if self.of_relation { format!(" of relation \"{relation}\"") } else { String::new() };
                format!("null value in column \"{column}\"{of} violates not-null constraint")
            }
        })
    }
}

/// The records a query refused, by index among those asked about, each
/// with the server's refusal, or `None` where it is not worded yet (see
/// [`ConstraintCheck::refused`]).
pub(super) type Refusals = Vec<(usize, Option<CopyRefusal>)>;

/// What a record breaks: a CHECK or a NOT NULL column, by its place.
#[derive(Clone, Copy)]
enum Broken {
    Check(usize),
    Null(usize),
}

/// A value as the server shows it in a failing row: `null`, or its text
/// cut at [`SHOWN_BYTES`] bytes (on a character's boundary) with `...`.
fn shown_value(value: Option<String>) -> String {
    let Some(mut value) = value else { return "null".into() };
    if value.len() > SHOWN_BYTES {
        let mut end = SHOWN_BYTES;
        while !value.is_char_boundary(end) {
            end -= 1;
        }
        value.truncate(end);
        value.push_str("...");
    }
    value
}

/// The query over the COPY columns' values, before their arrays and after:
/// the records some CHECK refuses (numbered from 1, in order), the
/// constraint's place, and, with `show`, each value's text as its type's
/// output function writes it. `None` where a column's declared type is
/// unknown, or a cast would not read a value as COPY does.
fn query(
    checks: &CheckConstraints,
    copy_columns: &[(String, String)],
    not_null: &[String],
    show: bool,
) -> Option<(String, String)> {
    let (mut casts, mut fits, mut shown) = (Vec::new(), Vec::new(), Vec::new());
    for (k, (name, base_type)) in copy_columns.iter().enumerate() {
        let declared = checks.columns.iter().find(|c| &c.name == name)?;
        let collation = declared.collation.as_ref().map(|c| format!(" COLLATE {c}")).unwrap_or_default();
        let (value, column) = (format!("u.{OWN}v{}", k + 1), quote_ident(name));
        casts.push(format!("(CAST({value} AS {}){collation}) AS {column}", declared.declared_type));
        if let Some(length) = longest(base_type)? {
            fits.push(format!("pg_catalog.char_length({value}) <= {length}"));
        }
        shown.push(format!(", CASE WHEN {column} IS NULL THEN NULL ELSE pg_catalog.format('%s', {column}) END"));
    }
    // Every value is cast, as COPY reads every field, even where no CHECK
    // reads it and no row is shown (the planner leaves out the columns a
    // query does not use): a domain's refusal comes first.
    let names: Vec<String> = copy_columns.iter().map(|(name, _)| quote_ident(name)).collect();
    let filled = vec![format!("pg_catalog.num_nulls({}) >= 0", names.join(", "))];
    // The server checks NOT NULL columns first, in the table's order, then
    // the CHECKs.
    let nulls = not_null.iter().enumerate().map(|(k, n)| format!(" WHEN {} IS NULL THEN -{}", quote_ident(n), k + 1));
    let checked =
        checks.checks.iter().enumerate().map(|(at, c)| format!(" WHEN ({}) IS FALSE THEN {at}", c.expression));
    let broken: String = nulls.chain(checked).collect();
    let values: Vec<String> = (1..=copy_columns.len()).map(|k| format!("{OWN}v{k}")).collect();
    let filter = |conditions: Vec<String>| match conditions.is_empty() {
        true => String::new(),
        false => format!(" WHERE {}", conditions.join(" AND ")),
    };
    let shown = if show { shown.concat() } else { String::new() };
    let before = format!(
        "SELECT {OWN}ord, {OWN}broken{shown} FROM (SELECT r.*, CASE{broken} END AS {OWN}broken \
         FROM (SELECT u.{OWN}ord, {} FROM unnest(",
        casts.join(", ")
    );
    let after = format!(
        ") WITH ORDINALITY AS u({}, {OWN}ord){}) AS r{}) AS c WHERE {OWN}broken IS NOT NULL ORDER BY {OWN}ord",
        values.join(", "),
        filter(fits),
        filter(filled)
    );
    Some((before, after))
}

/// The most characters a value of `base_type` (a COPY column's, a domain's
/// as its base type, with its modifier) may have for a cast to read it as
/// COPY does (`Some(None)`: any). A longer one COPY refuses (unless only
/// spaces are past it), where a cast cuts it. `None` for a bit string with a
/// length, which a cast pads or cuts, and an array of any of these.
fn longest(base_type: &str) -> Option<Option<usize>> {
    let limited = ["character varying(", "character(", "bit(", "bit varying("];
    let Some(prefix) = limited.iter().find(|p| base_type.starts_with(*p)) else {
        return (!limited.iter().any(|p| base_type.contains(*p))).then_some(None);
    };
    let length = base_type.strip_prefix(prefix)?.strip_suffix(')')?;
    match prefix.starts_with("bit") {
        true => None,
        false => length.parse().ok().map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::FormatKind;
    use crate::load::plan::tests::table;
    use crate::sink::postgres::{CheckConstraint, DeclaredColumn};

    /// `"T x" (id int NOT NULL, "Note" text COLLATE "C", n int)` with
    /// CHECKs `a` (on `n`) and `b` (on `Note` and `n`).
    fn checked() -> (TableInfo, CheckConstraints) {
        let mut t = table(&[("id", "integer"), ("Note", "text"), ("n", "integer")]);
        t.not_null = vec!["id".into()];
        let column = |name: &str, declared_type: &str, collation: Option<&str>| DeclaredColumn {
            name: name.into(),
            declared_type: declared_type.into(),
            collation: collation.map(str::to_string),
            generated: false,
        };
        let check = |name: &str, expression: &str, columns: &[&str]| CheckConstraint {
            name: name.into(),
            expression: expression.into(),
            columns: Some(columns.iter().map(|c| c.to_string()).collect()),
            volatile: false,
        };
        let checks = CheckConstraints {
            relation: "T x".into(),
            plain: true,
            readable: true,
            columns: vec![
                column("id", "integer", None),
                column("Note", "text", Some("pg_catalog.\"C\"")),
                column("n", "positive", None),
            ],
            checks: vec![
                check("a", "(n > 0)", &["n"]),
                check("b", "((\"Note\" < 'x'::text) OR (n < 5))", &["Note", "n"]),
            ],
            server_version: 150_000,
            lc_messages: "C".into(),
        };
        (t, checks)
    }

    #[test]
    fn the_query_casts_columns_as_declared_and_tests_each_check_in_order() {
        let (t, checks) = checked();
        let csv = FormatOptions::new(FormatKind::Csv);
        let check = ConstraintCheck::new(&t, &checks, &t.columns, &csv).expect("a check");
        let (before, after) = &check.query;
        let casts = "CAST(u.sluice_v1 AS integer)) AS \"id\", (CAST(u.sluice_v2 AS text) COLLATE pg_catalog.\"C\") \
                     AS \"Note\", (CAST(u.sluice_v3 AS positive)) AS \"n\" FROM unnest(";
        assert!(before.ends_with(casts), "{before}");
        let cases = "CASE WHEN \"id\" IS NULL THEN -1 WHEN ((n > 0)) IS FALSE THEN 0 \
                     WHEN (((\"Note\" < 'x'::text) OR (n < 5))) IS FALSE THEN 1 END";
        assert!(before.contains(cases), "{before}");
        assert!(before.contains("pg_catalog.format('%s', \"Note\")"), "the row is shown: {before}");
        let filled = "WHERE pg_catalog.num_nulls(\"id\", \"Note\", \"n\") >= 0) AS c";
        assert!(after.contains(filled), "every value cast: {after}");
        assert!(!after.contains("char_length"), "{after}");
        assert_eq!(check.shown, Some(vec![0, 1, 2]));
        // `--columns n,id,Note`: the row is shown in the table's order.
        let reordered: Vec<(String, String)> = [2, 0, 1].iter().map(|&i| t.columns[i].clone()).collect();
        let check = ConstraintCheck::new(&t, &checks, &reordered, &csv).expect("a check");
        assert_eq!(check.shown, Some(vec![1, 2, 0]));
        let row: Vec<Option<String>> =
            ["3", "1", "-1", "7", "long"].iter().map(|v| Some(v.to_string())).collect::<Vec<_>>();
        let (record, refusal) = check.refusal(&row, &[10, 11, 12]).unwrap();
        let refusal = refusal.expect("worded in English");
        assert_eq!(record, 12);
        assert_eq!(refusal.message, "new row for relation \"T x\" violates check constraint \"b\"");
        assert_eq!(refusal.detail.as_deref(), Some("Failing row contains (7, long, -1)."));
        assert_eq!(refusal.constraint.as_deref(), Some("\"public\".\"b\""));
        assert!(check.breaks(&refusal));
        assert!(!check.breaks(&CopyRefusal { constraint: Some("\"public\".\"c\"".into()), ..refusal }));
        // -1: the first NOT NULL column, `id`.
        let row: Vec<Option<String>> = vec![Some("1".into()), Some("-1".into()), Some("3".into()), None, None];
        let refusal = check.refusal(&row, &[10]).unwrap().1.expect("worded");
        let message = "null value in column \"id\" of relation \"T x\" violates not-null constraint";
        assert_eq!((refusal.message.as_str(), refusal.sqlstate.as_deref()), (message, Some("23502")));
        assert_eq!(refusal.detail.as_deref(), Some("Failing row contains (null, null, 3)."));
        assert_eq!(refusal.column.as_deref(), Some("id"));
        assert!(check.breaks(&refusal));
        let twelve = CheckConstraints { server_version: 120_000, ..checks.clone() };
        let check = ConstraintCheck::new(&t, &twelve, &reordered, &csv).expect("a check");
        let refusal = check.refusal(&row, &[10]).unwrap().1.expect("worded");
        assert_eq!(refusal.message, "null value in column \"id\" violates not-null constraint");
        // NOT NULL columns alone make a check.
        let unchecked = CheckConstraints { checks: Vec::new(), ..checks.clone() };
        assert!(ConstraintCheck::new(&t, &unchecked, &t.columns, &csv).is_some());
        let nullable = TableInfo { not_null: Vec::new(), ..t.clone() };
        assert!(ConstraintCheck::new(&nullable, &unchecked, &t.columns, &csv).is_none());
    }

    #[test]
    fn no_check_where_something_else_may_answer_first() {
        let (t, checks) = checked();
        let csv = FormatOptions::new(FormatKind::Csv);
        let none = |t: &TableInfo, checks: &CheckConstraints, columns: &[(String, String)]| {
            ConstraintCheck::new(t, checks, columns, &csv).is_none()
        };
        assert!(!none(&t, &checks, &t.columns));
        let triggered =
            TableInfo { insert_triggers: vec!["stamp".into()], before_row_triggers: vec!["stamp".into()], ..t.clone() };
        assert!(none(&triggered, &checks, &t.columns), "a BEFORE trigger may change the row");
        let audited = TableInfo { insert_triggers: vec!["audit".into()], ..t.clone() };
        assert!(!none(&audited, &checks, &t.columns), "an AFTER trigger runs once the row passed its CHECKs");
        assert!(none(&t, &CheckConstraints { plain: false, ..checks.clone() }, &t.columns), "partitioned");
        // `n` left to its default: the CHECKs read it.
        let without_n = &t.columns[..2];
        assert!(none(&t, &checks, without_n));
        // `id` NOT NULL without a default, left out: every row is refused for it.
        let without_id = &t.columns[1..];
        assert!(none(&t, &checks, without_id));
        let defaulted = TableInfo { defaulted: vec!["id".into()], ..t.clone() };
        let check = ConstraintCheck::new(&defaulted, &checks, without_id, &csv).expect("id has a default");
        assert_eq!(check.shown, None, "the default is the server's to show");
        assert!(!check.query.0.contains("\"id\" IS NULL THEN"), "{}", check.query.0);
        let unread = CheckConstraints {
            checks: vec![CheckConstraint { columns: None, ..checks.checks[0].clone() }],
            ..checks.clone()
        };
        assert!(none(&t, &unread, &t.columns));
        let volatile = CheckConstraints {
            checks: vec![CheckConstraint { volatile: true, ..checks.checks[0].clone() }],
            ..checks.clone()
        };
        assert!(none(&t, &volatile, &t.columns), "a volatile function's calls");
        let unreadable =
            ConstraintCheck::new(&t, &CheckConstraints { readable: false, ..checks.clone() }, &t.columns, &csv);
        assert_eq!(unreadable.unwrap().shown, None, "without SELECT the server shows no row");
        let own = table(&[("id", "integer"), ("sluice_ord", "integer"), ("n", "integer")]);
        assert!(none(&own, &checks, &own.columns), "a column named as the query's own");
        let mut bits = t.clone();
        bits.columns[1].1 = "bit(3)".into();
        assert!(none(&bits, &checks, &bits.columns), "a cast pads a bit string");
        let mut long = t.clone();
        long.columns[1].1 = "character varying(20)".into();
        let check = ConstraintCheck::new(&long, &checks, &long.columns, &csv).expect("varchar");
        assert!(check.query.1.contains("WHERE pg_catalog.char_length(u.sluice_v2) <= 20)"), "{}", check.query.1);
    }

    #[test]
    fn in_another_language_refusals_are_worded_once_copy_worded_their_constraint() {
        let (t, checks) = checked();
        let german = CheckConstraints { lc_messages: "de_DE.UTF-8".into(), ..checks };
        let check = ConstraintCheck::new(&t, &german, &t.columns, &FormatOptions::new(FormatKind::Csv)).unwrap();
        let row: Vec<Option<String>> = ["1", "1", "7", "x", "-1"].iter().map(|v| Some(v.to_string())).collect();
        assert!(check.refusal(&row, &[4]).unwrap().1.is_none(), "not met yet");
        let copys = CopyRefusal {
            sqlstate: Some(CHECK_VIOLATION.into()),
            message: "neue Zeile für Relation »T x« verletzt Check-Constraint »b«".into(),
            detail: Some("Fehlgeschlagene Zeile enthält (2, y, -5).".into()),
            constraint: Some("\"public\".\"b\"".into()),
            ..CopyRefusal::default()
        };
        check.learn_wording(&copys);
        assert_eq!(check.words_known(), 2, "the message and the row's words");
        let refusal = check.refusal(&row, &[4]).unwrap().1.expect("worded");
        assert_eq!(refusal.message, copys.message);
        assert_eq!(refusal.detail.as_deref(), Some("Fehlgeschlagene Zeile enthält (7, x, -1)."));
        assert_eq!(refusal.constraint, copys.constraint);
        // Another constraint's refusal teaches nothing about `b`'s.
        let null_row: Vec<Option<String>> = vec![Some("1".into()), Some("-1".into()), None, None, None];
        assert!(check.refusal(&null_row, &[4]).unwrap().1.is_none(), "NOT NULL not met yet");
    }

    #[test]
    fn lengths_a_cast_would_cut_are_read_from_the_columns_types() {
        assert_eq!(longest("integer"), Some(None));
        assert_eq!(longest("character varying"), Some(None));
        assert_eq!(longest("character varying(12)"), Some(Some(12)));
        assert_eq!(longest("character(3)"), Some(Some(3)));
        assert_eq!(longest("bit(3)"), None);
        assert_eq!(longest("bit varying(8)"), None);
        assert_eq!(longest("character varying(12)[]"), None);
        assert_eq!(longest("numeric(5,2)"), Some(None));
    }

    #[test]
    fn values_are_shown_cut_as_the_server_cuts_them() {
        assert_eq!(shown_value(None), "null");
        assert_eq!(shown_value(Some("x".into())), "x");
        assert_eq!(shown_value(Some("a".repeat(64))), "a".repeat(64));
        assert_eq!(shown_value(Some("a".repeat(65))), format!("{}...", "a".repeat(64)));
        // Two bytes a character: the 33rd would end at byte 66.
        assert_eq!(shown_value(Some("é".repeat(40))), format!("{}...", "é".repeat(32)));
        assert_eq!(shown_value(Some(format!("a{}", "é".repeat(40)))), format!("a{}...", "é".repeat(31)));
    }
}
