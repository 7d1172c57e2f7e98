//! PostgreSQL through libpq: `COPY ... FROM STDIN`, one chunk per transaction.
//!
//! libpq (through the `libpq` crate) rather than a native Rust driver, because
//! `--db` must take whatever psql takes: URLs and key=value strings, every
//! `PG*` variable, `~/.pgpass` and `PGPASSFILE`, service files, `sslmode` up to
//! verify-full. libpq is the reference implementation of all of these; peers
//! that re-implemented them collected years of auth bug reports.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr};
use std::sync::{Arc, Mutex};

use libpq::result::ErrorField;
use libpq::{Connection, Status};

use super::{CopyOutcome, CopyRefusal, Feed};
use crate::error::{Error, MissingTable};
use crate::format::binary::{DateOrder, SessionDates};
use crate::redact::display_conninfo;
use crate::sql::{display_ident, parse_qualified_name, pid_array, quote_ident};

/// Bytes handed to libpq per `PQputCopyData` call: large enough to keep
/// per-call overhead negligible, small enough that libpq's output buffer (which
/// grows to the largest message) stays small per connection and the copy
/// libpq makes of each piece stays in cache: 256 KiB pieces cost 0.3 s more
/// client CPU than 64 KiB on lineitem (1.16 GB of binary COPY), 32 KiB no less.
pub const COPY_PIECE: usize = 64 * 1024;

/// Where to connect: the user's `--db`, or libpq's defaults (PG* variables).
/// Clones share one [`OpenSessions`].
#[derive(Clone, Debug)]
pub struct PgTarget {
    conninfo: String,
    /// The same server, database and role through its Unix socket, when
    /// `sink::socket` found one: sessions go there first.
    socket_conninfo: Option<String>,
    display: String,
    open: OpenSessions,
    notices: ServerNotices,
}

/// The server process ids of the sessions a target has open, so that a
/// watcher can find which of them another session holds up (see
/// `load::blockers`) without every part of the load reporting its own.
#[derive(Clone, Debug, Default)]
struct OpenSessions(Arc<Mutex<Vec<u32>>>);

impl OpenSessions {
    fn add(&self, pid: u32) {
        self.0.lock().unwrap().push(pid);
    }

    fn remove(&self, pid: u32) {
        self.0.lock().unwrap().retain(|&p| p != pid);
    }
}

/// What the server said besides results and errors: warnings (sluice sets
/// `client_min_messages = warning`), such as `terminating connection due to
/// immediate shutdown command` from every session when the server goes
/// down, or a trigger's `RAISE WARNING`. libpq's default prints each on
/// stderr as it comes, over several lines, across the progress line, once
/// per session; sluice keeps each distinct one once, counted, and says them
/// among the summary's warnings.
#[derive(Clone, Debug, Default)]
struct ServerNotices(Arc<Mutex<NoticeLog>>);

/// Distinct notices kept; the rest are only counted (a trigger that warns
/// about every row must not fill memory).
const DISTINCT_NOTICES: usize = 10;

#[derive(Debug, Default)]
struct NoticeLog {
    /// Each distinct notice on one line, with how often it came.
    kept: Vec<(String, u64)>,
    /// Notices beyond the first [`DISTINCT_NOTICES`] distinct ones.
    others: u64,
}

impl NoticeLog {
    fn add(&mut self, notice: String) {
        if let Some((_, times)) = self.kept.iter_mut().find(|(kept, _)| *kept == notice) {
            *times += 1;
        } else if self.kept.len() < DISTINCT_NOTICES {
            self.kept.push((notice, 1));
        } else {
            self.others += 1;
        }
    }

    fn warnings(&self) -> Vec<String> {
        let kept = self.kept.iter().map(|(notice, times)| match times {
            1 => format!("the server said: {notice}"),
            _ => format!("the server said {times} times: {notice}"),
        });
        let others = (self.others > 0).then(|| format!("the server said {} more things, not kept", self.others));
        kept.chain(others).collect()
    }
}

/// libpq's notice processor for sluice's sessions: `arg` is the session's
/// [`ServerNotices`] log, which outlives the connection (see [`PgSession`]).
unsafe extern "C" fn keep_notice(arg: *mut c_void, message: *const c_char) {
    if arg.is_null() || message.is_null() {
        return;
    }
    // SAFETY: `arg` is the `Mutex<NoticeLog>` of an `Arc` the session holds
    // until after its connection is finished; libpq passes a C string.
    let (log, message) = unsafe { (&*(arg as *const Mutex<NoticeLog>), CStr::from_ptr(message)) };
    if let Ok(mut log) = log.lock() {
        log.add(one_line(&message.to_string_lossy()));
    }
}

impl PgTarget {
    pub fn new(db: Option<&str>) -> Self {
        let conninfo = db.unwrap_or("").to_string();
        let display = match db {
            Some(db) if !db.is_empty() => display_conninfo(db),
            _ => defaults_display(),
        };
        PgTarget {
            conninfo,
            socket_conninfo: None,
            display,
            open: OpenSessions::default(),
            notices: ServerNotices::default(),
        }
    }

    /// This target with another connection string, shown as this one.
    pub(super) fn with_conninfo(&self, conninfo: &str) -> PgTarget {
        PgTarget { conninfo: conninfo.to_string(), socket_conninfo: None, ..self.clone() }
    }

    /// Later sessions go through `conninfo` (the server's Unix socket, see
    /// `sink::socket`), and through the connection as given only when it
    /// fails.
    pub(super) fn use_socket(&mut self, conninfo: String) {
        self.socket_conninfo = Some(conninfo);
    }

    /// The connection string as given, with the host, port and hostaddr
    /// replaced by the socket in `dir` for `port`. Every other setting
    /// stays, the password included; `hostaddr=''` also overrides
    /// `PGHOSTADDR`.
    pub(super) fn conninfo_for_socket(&self, dir: &str, port: &str) -> Result<String, Error> {
        use super::socket::conninfo_value;
        let given = self.conninfo.trim();
        let is_string = given.contains('=') || given.starts_with("postgres://") || given.starts_with("postgresql://");
        let mut words = Vec::new();
        if is_string {
            let options = libpq::connection::Info::from(given)
                .map_err(|e| Error::Connect { target: self.display.clone(), message: one_line(&e.to_string()) })?;
            for option in options {
                match (option.keyword.as_str(), option.val) {
                    ("host" | "hostaddr" | "port", _) | (_, None) => {}
                    (keyword, Some(value)) => words.push(format!("{keyword}={}", conninfo_value(&value))),
                }
            }
        } else if !given.is_empty() {
            words.push(format!("dbname={}", conninfo_value(given)));
        }
        words.extend([format!("host={}", conninfo_value(dir)), format!("port={}", conninfo_value(port))]);
        words.push("hostaddr=''".into());
        Ok(words.join(" "))
    }

    /// The server process ids of the sessions open through this target.
    pub fn open_sessions(&self) -> Vec<u32> {
        self.open.0.lock().unwrap().clone()
    }

    /// What the server said on this target's sessions besides results and
    /// errors, as warnings for the summary (see [`ServerNotices`]).
    pub fn server_notices(&self) -> Vec<String> {
        self.notices.0.lock().unwrap().warnings()
    }

    /// The target as shown in messages, without a password.
    pub fn display(&self) -> &str {
        &self.display
    }

    /// Every password libpq would use for this target, so the CLI can mask
    /// them in all output.
    pub fn secrets(&self) -> Vec<String> {
        let mut found = Vec::new();
        if let Ok(options) = libpq::connection::Info::from(&self.conninfo) {
            found.extend(options.into_iter().filter(|o| o.keyword == "password").filter_map(|o| o.val));
        }
        found.extend(std::env::var("PGPASSWORD").ok());
        found
    }

    /// `text` with this target's passwords masked, for what sluice writes
    /// where the CLI's mask does not reach (the ledger).
    pub fn redacted(&self, text: &str) -> String {
        let mut redactor = crate::redact::Redactor::default();
        for secret in self.secrets() {
            redactor.add(&secret);
        }
        redactor.apply(text)
    }

    pub fn connect(&self) -> Result<PgSession, Error> {
        match &self.socket_conninfo {
            Some(socket) => self.connect_to(socket).or_else(|_| self.connect_to(&self.conninfo)),
            None => self.connect_to(&self.conninfo),
        }
    }

    fn connect_to(&self, conninfo: &str) -> Result<PgSession, Error> {
        let mut params = HashMap::new();
        params.insert("dbname", conninfo);
        params.insert("fallback_application_name", "sluice");
        let expand = !conninfo.is_empty();
        if !expand {
            params.remove("dbname");
        }
        let conn = Connection::with_params(&params, expand)
            .map_err(|e| Error::Connect { target: self.display.clone(), message: one_line(&e.to_string()) })?;
        let pid = conn.backend_pid();
        let notices = self.notices.clone();
        // SAFETY: the log stays alive as long as the session, whose
        // connection is finished before its fields after it are dropped.
        unsafe { conn.set_notice_processor(Some(keep_notice), Arc::as_ptr(&notices.0) as *mut c_void) };
        let open = self.open.clone();
        let session = PgSession {
            conn,
            copy_sql: String::new(),
            relname: String::new(),
            pid,
            open,
            waits_on_prepared: Cell::new(false),
            _notices: notices,
        };
        session.set_up()?;
        self.open.add(pid);
        Ok(session)
    }
}

/// How often a session's setup is sent again when a timeout set on the
/// database or role cancels it.
const SETUP_TRIES: usize = 10;

impl PgSession {
    /// Each session is set up as sluice's ledger and loads expect it,
    /// whatever the database or role sets:
    /// - No timeouts, as pg_dump and pg_restore set none: a role's
    ///   statement_timeout would cancel an index rebuild after the load and
    ///   leave the index dropped, however often the job is run again.
    ///   PostgreSQL 17's transaction_timeout ends the session instead
    ///   (300 ms on the database, on 18: the key's build was cut off every
    ///   time sluice tried again, until its retries ran out); 14's
    ///   idle_session_timeout ended two of a load's waiting sessions.
    /// - Read committed: the ledger's claims and marks are made for it (row
    ///   locks, not snapshots), and under a default of serializable every
    ///   inserted row was checked against the predicate locks (1 M rows, 3
    ///   workers: 2.01 s against 0.85 s, medians of 3).
    /// - Standard strings: a deferred CHECK is built again from the
    ///   server's text of it, whose literals follow the setting of the
    ///   session that read it (with it off for the database, the server
    ///   warned of `'a\\b'` in the query for the CHECK's violating rows).
    /// - No notices: libpq prints them on stderr itself; sluice speaks for
    ///   itself.
    /// - UTF-8: sluice sends every input as UTF-8 (see `encoding`), and a
    ///   session speaks the database's encoding unless told otherwise, so a
    ///   LATIN1 database stored `café` as `cafÃ©`. The server converts UTF-8
    ///   into the database's encoding and refuses a character it cannot
    ///   hold, as psql with `client_encoding` UTF8 does.
    ///
    /// The database's statement_timeout still applies to this very statement:
    /// the server arms it before parsing, and a backend descheduled for longer
    /// on a busy machine is cancelled (3 connections in 400, 1 ms timeout,
    /// while the test suite ran). So a cancelled setup is sent again.
    fn set_up(&self) -> Result<(), Error> {
        const SETUP: &str = "SET statement_timeout = 0; SET lock_timeout = 0; \
                             SET idle_in_transaction_session_timeout = 0; SET client_min_messages = warning; \
                             SET client_encoding = 'UTF8'; SET default_transaction_isolation = 'read committed'; \
                             SET standard_conforming_strings = on";
        let version = self.server_version();
        let setup = [(140000, "idle_session_timeout"), (170000, "transaction_timeout")]
            .iter()
            .filter(|(since, _)| version >= *since)
            .fold(SETUP.to_string(), |sql, (_, timeout)| format!("{sql}; SET {timeout} = 0"));
        for _ in 1..SETUP_TRIES {
            match self.execute_for_state(&setup)? {
                None => return Ok(()),
                Some((state, _)) if state == QUERY_CANCELED => continue,
                Some(_) => break,
            }
        }
        self.execute(&setup)
    }
}

/// SQLSTATE of a statement cancelled by a timeout or by `pg_cancel_backend`.
const QUERY_CANCELED: &str = "57014";

/// SQLSTATE of a row whose key another row has.
const UNIQUE_VIOLATION: &str = "23505";

/// SQLSTATE of a write refused by a read-only transaction: a standby, or
/// `default_transaction_read_only` on the role or database.
pub const READ_ONLY: &str = "25006";
pub const READ_ONLY_ADVICE: &str = "; sluice writes, so connect to the primary, not a standby, with a role or \
     database without default_transaction_read_only";

/// What a relation of `relkind` is, in words, when sluice cannot load into
/// it; `None` for a table (plain, partitioned or foreign) and for a view
/// whose INSTEAD OF INSERT trigger writes the rows (COPY accepts it, as
/// INSERT does).
fn not_a_table(relkind: &str, instead_of_insert: bool) -> Option<&'static str> {
    match relkind {
        "r" | "p" | "f" => None,
        "v" if instead_of_insert => None,
        "v" => Some("a view without an INSTEAD OF INSERT trigger"),
        "m" => Some("a materialized view"),
        "S" => Some("a sequence"),
        "i" | "I" => Some("an index"),
        "c" => Some("a composite type"),
        "t" => Some("a TOAST table"),
        _ => Some("another kind of relation"),
    }
}

/// Text parameters as libpq reads them: C strings.
fn c_strings(params: &[Option<&str>]) -> Vec<Option<Vec<u8>>> {
    params.iter().map(|p| p.map(|v| format!("{v}\0").into_bytes())).collect()
}

/// `postgres://user@host:port/db` built from libpq's defaults (PG* variables),
/// for messages when no `--db` was given.
fn defaults_display() -> String {
    let Ok(defaults) = libpq::connection::Info::defaults() else {
        return "the default server".into();
    };
    let get = |k: &str| defaults.iter().find(|o| o.keyword == k).and_then(|o| o.val.clone()).unwrap_or_default();
    let host = match get("host") {
        h if h.is_empty() => "localhost".to_string(),
        h => h,
    };
    format!("postgres://{}@{}:{}/{}", get("user"), host, get("port"), get("dbname"))
}

/// libpq messages span lines ("connection to server ... failed: FATAL: ...");
/// the CLI prints one line per error.
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A table's columns with their types, a domain's as its base type (with
/// the domain's modifier): COPY reads a domain as its base type, binary
/// included, then checks the domain's constraints, so the column's values
/// are encoded, and judged by `suspect`, as the base type's. The next three
/// columns say whether that type is an enum, its labels (a JSON array), and
/// whether its input and receive functions are the server's own for text
/// (as citext's are); the last whether the column has a default (its own,
/// an identity, or its domain's).
const COLUMNS_AS_BASE_TYPES: &str = "SELECT a.attname, pg_catalog.format_type(base.typ, base.typmod), a.attnotnull, \
       t.typtype = 'e', (SELECT pg_catalog.array_to_json(pg_catalog.array_agg(e.enumlabel ORDER BY e.enumsortorder)) \
         FROM pg_catalog.pg_enum e WHERE e.enumtypid = t.oid), \
       EXISTS (SELECT FROM pg_catalog.pg_proc i JOIN pg_catalog.pg_proc r ON r.oid = t.typreceive \
         JOIN pg_catalog.pg_language l ON l.oid = i.prolang AND l.lanname = 'internal' \
         WHERE i.oid = t.typinput AND i.prosrc = 'textin' AND r.prosrc = 'textrecv' AND r.prolang = i.prolang), \
       a.atthasdef OR a.attidentity <> '' \
         OR EXISTS (SELECT FROM pg_catalog.pg_type d WHERE d.oid = a.atttypid AND d.typdefaultbin IS NOT NULL) \
     FROM pg_catalog.pg_attribute a CROSS JOIN LATERAL (WITH RECURSIVE chain(typ, typmod, depth) AS ( \
       SELECT a.atttypid, a.atttypmod, 0 \
       UNION ALL SELECT t.typbasetype, t.typtypmod, depth + 1 FROM chain JOIN pg_catalog.pg_type t ON t.oid = typ \
       WHERE t.typtype = 'd') \
     SELECT typ, typmod FROM chain ORDER BY depth DESC LIMIT 1) base \
     JOIN pg_catalog.pg_type t ON t.oid = base.typ \
     WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '' \
     ORDER BY a.attnum";

/// A key `INSERT ... ON CONFLICT` can arbitrate by (see
/// [`PgSession::arbiter_keys`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArbiterKey {
    pub primary: bool,
    pub columns: Vec<String>,
    /// A column of it may be NULL: two rows with a NULL in the key do not
    /// conflict (unless the index says `NULLS NOT DISTINCT`).
    pub nullable: bool,
}

/// A table's unique keys (see [`PgSession::unique_keys`]).
#[derive(Clone, Debug, Default)]
pub struct UniqueKeys {
    /// Each key's index name and columns.
    pub keys: Vec<(String, Vec<String>)>,
    /// For each of `keys`, the collation its index compares each column
    /// by (quoted, with its schema) where it is not the column's own
    /// (`CREATE UNIQUE INDEX ON t (email COLLATE case_insensitive)`).
    pub collations: Vec<Vec<Option<String>>>,
    /// Whether a key's conflict is surely the server's reason to refuse.
    pub decide: bool,
    /// Whether it is once the table's CHECKs pass: no BEFORE INSERT row
    /// trigger the user made, on the table or any of its partitions.
    pub decide_after_checks: bool,
    /// Whether `keys` are every constraint that can make one session's
    /// insert wait for another's, comparing values as their columns do:
    /// the table (a plain or partitioned one, without foreign partitions)
    /// and its partitions have no unique index on an expression, partial,
    /// deferred, `NULLS NOT DISTINCT` (the client takes a NULL for no key),
    /// of a collation or operator class other than its columns' own, or a
    /// partition's own, and no exclusion constraint.
    pub only_these: bool,
    /// Whether no trigger of the user's runs on insert (into the table or
    /// its partitions): one may lock what another session's does (a row it
    /// counts the inserts in, say).
    pub untriggered: bool,
    /// The table's columns whose values are equal only when their bytes
    /// are: text, varchar and char(n) with a deterministic collation
    /// (char(n) once the spaces at its end are left out; not citext).
    pub byte_equal: Vec<String>,
    /// Whether the table is partitioned: the server names a partition's
    /// index in its message, not the table's.
    pub partitioned: bool,
}

/// A table's CHECK constraints, as [`PgSession::check_constraints`] reads
/// them for `load::check_constraint`.
#[derive(Clone, Debug, Default)]
pub struct CheckConstraints {
    /// The table's name as the server's message names it (unquoted).
    pub relation: String,
    /// A plain table (not partitioned, a view or foreign): the server
    /// checks its constraints alone on the rows COPY inserts.
    pub plain: bool,
    /// The session may read every column, so a refusal shows the row.
    pub readable: bool,
    /// Every column in order (generated ones too): its name, its declared
    /// type (a domain as itself, with the modifier), its collation where it
    /// is not its type's (quoted, with its schema), and whether it is
    /// generated.
    pub columns: Vec<DeclaredColumn>,
    /// The enforced CHECK constraints, in the order the server checks them
    /// (by name, byte by byte).
    pub checks: Vec<CheckConstraint>,
    /// The server's version number, which its messages' words follow.
    pub server_version: i32,
    /// The session's `lc_messages`: the language of the server's messages.
    pub lc_messages: String,
}

/// A column as declared (see [`CheckConstraints::columns`]).
#[derive(Clone, Debug, Default)]
pub struct DeclaredColumn {
    pub name: String,
    pub declared_type: String,
    pub collation: Option<String>,
    pub generated: bool,
}

/// One CHECK constraint (see [`CheckConstraints::checks`]).
#[derive(Clone, Debug, Default)]
pub struct CheckConstraint {
    pub name: String,
    /// Its expression as the server prints it (`(n > 0)`).
    pub expression: String,
    /// The columns it reads (`None`: the catalog's answer was unreadable).
    pub columns: Option<Vec<String>>,
    /// It calls a volatile function, whose every call may answer another
    /// way or change something.
    pub volatile: bool,
}

/// A resolved target table.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TableInfo {
    /// The table's OID: which table of that name a job loaded into.
    pub oid: u32,
    pub schema: String,
    pub name: String,
    /// All columns in order, with their SQL types.
    pub columns: Vec<(String, String)>,
    /// The columns declared NOT NULL.
    pub not_null: Vec<String>,
    /// The columns with a default (`DEFAULT now()`, a serial's sequence,
    /// an identity, their domain's): what a file that holds only the
    /// others leaves out (see `hints::field_count_advice`).
    pub defaulted: Vec<String>,
    /// The generated columns (`GENERATED ALWAYS AS (...) STORED`), which
    /// are not among `columns`: the server computes them and COPY cannot
    /// fill them, so a header or `--columns` naming one is refused by name
    /// instead of loading its field into another column.
    pub generated: Vec<String>,
    /// Where each of `generated` stands among all the table's columns (0
    /// first): the field an export of the whole table holds it in.
    #[serde(skip)]
    pub generated_places: Vec<usize>,
    /// The columns whose type (or domain's base type) is an enum, with its
    /// labels: binary COPY takes an enum's label as its text, as text COPY
    /// does, and isolation suspects a value that is none of them.
    pub enums: Vec<(String, Vec<String>)>,
    /// The columns of a type whose input is text's own (the server's
    /// `textin` and `textrecv`, as citext's is): encoded as text.
    pub text_like: Vec<String>,
    /// A view whose INSTEAD OF INSERT trigger takes the rows: it cannot be
    /// truncated, and has no indexes of its own.
    pub is_view: bool,
    /// The foreign tables COPY may write rows to: the table itself, or the
    /// foreign partitions of a partitioned table at any depth.
    pub foreign: Vec<ForeignTable>,
    /// The user's triggers that run when rows are inserted into the table
    /// or its partitions (see `load::defer`: a chunk loaded twice runs them
    /// twice).
    pub insert_triggers: Vec<String>,
    /// Those of `insert_triggers` that run for each row before it is
    /// inserted: they may change the row or drop it before the server
    /// checks its constraints and keys, so the client cannot judge a
    /// record by its fields (AFTER triggers run once the row passed them).
    pub before_row_triggers: Vec<String>,
    /// The session's TimeZone setting: the server reads a timestamptz
    /// written without an offset in it (sluice's sessions all connect alike).
    pub session_time_zone: String,
    /// The session's DateStyle (`ISO, MDY`): the order in which the server
    /// reads a date's day and month.
    pub session_date_style: String,
}

impl TableInfo {
    /// The columns COPY fills, in order, with their types: those named (by
    /// `--columns`), or all of them.
    pub fn copy_columns(&self, named: Option<&[String]>) -> Vec<(String, String)> {
        match named {
            Some(names) => names.iter().filter_map(|n| self.columns.iter().find(|(c, _)| c == n).cloned()).collect(),
            None => self.columns.clone(),
        }
    }

    /// How the load's sessions read dates and times that leave something
    /// unsaid: their DateStyle's order of day and month, and whether their
    /// TimeZone is UTC.
    pub fn session_dates(&self) -> SessionDates {
        SessionDates {
            order: DateOrder::of_date_style(&self.session_date_style),
            bare_is_utc: is_utc(&self.session_time_zone),
        }
    }

    /// [`copy_columns`](Self::copy_columns) for the binary encoder: an
    /// enum's type is given as `anyenum` (PostgreSQL's name for any enum) and
    /// a text-like type's as `text`, since the encoder knows built-in types
    /// by name and these types' names are the user's or an extension's.
    pub fn encoded_columns(&self, named: Option<&[String]>) -> Vec<(String, String)> {
        let mut columns = self.copy_columns(named);
        for (name, sql_type) in &mut columns {
            if self.enums.iter().any(|(column, _)| column == name) {
                *sql_type = "anyenum".into();
            } else if self.text_like.contains(name) {
                *sql_type = "text".into();
            }
        }
        columns
    }

    /// `"schema"."name"`.
    pub fn quoted(&self) -> String {
        format!("{}.{}", quote_ident(&self.schema), quote_ident(&self.name))
    }

    pub fn display(&self) -> String {
        format!("{}.{}", display_ident(&self.schema), display_ident(&self.name))
    }

    /// The table is itself a foreign table (not one with foreign partitions).
    pub fn is_foreign(&self) -> bool {
        self.foreign.iter().any(|f| f.oid == self.oid)
    }
}

/// A foreign table that rows of a load go to, and how they get there.
///
/// Why sluice looks: the server that stores a foreign table's rows commits
/// them just before this server commits the chunk's ledger row, so a crash
/// between the two commits loads that chunk again on resume (see
/// `load::foreign`). And postgres_fdw sends COPY's rows one
/// INSERT at a time unless `batch_size` is set, which COPY honours from
/// PostgreSQL 16 on (see `load::foreign`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ForeignTable {
    pub oid: u32,
    /// `schema.name`, as messages show tables.
    pub display: String,
    /// The foreign server's name and its wrapper's (`postgres_fdw`).
    pub server: String,
    pub wrapper: String,
    /// The `batch_size` option, the table's or else its server's.
    pub batch_size: Option<String>,
}

/// The table `$1` (an OID) and its partitions at any depth, as `tree`:
/// where COPY into it may write rows (children of a plain table by
/// inheritance get none).
pub const PARTITION_TREE: &str = "WITH RECURSIVE tree(oid) AS (SELECT $1::int8::oid UNION ALL \
     SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN tree ON i.inhparent = tree.oid \
     JOIN pg_catalog.pg_class p ON p.oid = i.inhparent AND p.relkind = 'p') ";

/// The foreign tables in [`PARTITION_TREE`].
const FOREIGN_TABLES: &str = "SELECT n.nspname, c.relname, s.srvname, w.fdwname, c.oid::int8, coalesce( \
       (SELECT option_value FROM pg_catalog.pg_options_to_table(f.ftoptions) WHERE option_name = 'batch_size'), \
       (SELECT option_value FROM pg_catalog.pg_options_to_table(s.srvoptions) WHERE option_name = 'batch_size')) \
     FROM tree JOIN pg_catalog.pg_foreign_table f ON f.ftrelid = tree.oid \
     JOIN pg_catalog.pg_class c ON c.oid = f.ftrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
     JOIN pg_catalog.pg_foreign_server s ON s.oid = f.ftserver \
     JOIN pg_catalog.pg_foreign_data_wrapper w ON w.oid = s.srvfdw ORDER BY 1, 2";

/// The triggers that run when rows are inserted, in [`PARTITION_TREE`]:
/// enabled (in a session of the default replication role), the user's
/// (not the internal ones of foreign keys), row or statement level; and
/// whether one of that name runs before each row is inserted. Trigger
/// type bits: ROW 1, BEFORE 2, INSERT 4.
const INSERT_TRIGGERS: &str = "SELECT t.tgname, pg_catalog.bool_or(t.tgtype & 3 = 3)::text FROM tree \
     JOIN pg_catalog.pg_trigger t ON t.tgrelid = tree.oid \
     WHERE NOT t.tgisinternal AND t.tgenabled IN ('O', 'A') AND t.tgtype & 4 <> 0 GROUP BY 1 ORDER BY 1";

/// True for a constraint `con` the server enforces: all but PostgreSQL
/// 18's `NOT ENFORCED` ones, which check nothing during a load. Read
/// through `to_jsonb`, which has `conenforced` only where the server does.
pub const ENFORCED: &str = "coalesce(to_jsonb(con) ->> 'conenforced', 'true') = 'true'";

/// A query's rows, each value as text (`None`: NULL).
pub type Rows = Vec<Vec<Option<String>>>;

/// One open connection.
pub struct PgSession {
    conn: Connection,
    copy_sql: String,
    /// The relation name as the server prints it in `COPY name, line N`.
    relname: String,
    pid: u32,
    open: OpenSessions,
    /// [`PgSession::waits_on`]'s statement is prepared here.
    waits_on_prepared: Cell<bool>,
    /// Where `conn`'s notices go; declared after `conn`, so it is dropped
    /// after the connection is finished.
    _notices: ServerNotices,
}

impl Drop for PgSession {
    fn drop(&mut self) {
        self.open.remove(self.pid);
    }
}

impl PgSession {
    /// Runs a statement that returns nothing.
    pub fn execute(&self, sql: &str) -> Result<(), Error> {
        let result = self.conn.exec(sql);
        match result.status() {
            Status::CommandOk | Status::TuplesOk => Ok(()),
            _ => Err(self.failure(&result)),
        }
    }

    /// Commits; a refusal for the rows (an integrity violation: a
    /// constraint checked at commit) comes back as `Some`, anything else
    /// as the error.
    pub fn commit(&self) -> Result<Option<CopyRefusal>, Error> {
        let result = self.conn.exec("COMMIT");
        match result.status() {
            Status::CommandOk => Ok(None),
            _ => match self.refused(&result)? {
                r if r.sqlstate.as_deref().is_some_and(|s| s.starts_with("23")) => Ok(Some(r)),
                _ => Err(self.failure(&result)),
            },
        }
    }

    /// Runs statements; a refusal comes back as `Some((sqlstate, message))`
    /// for the caller to judge by its SQLSTATE, a lost connection as an error.
    /// The message carries the server's DETAIL and HINT: a key that could not
    /// be built is named by its DETAIL alone (`Key (id)=(7) is duplicated.`).
    pub fn execute_for_state(&self, sql: &str) -> Result<Option<(String, String)>, Error> {
        let result = self.conn.exec(sql);
        match result.status() {
            Status::CommandOk | Status::TuplesOk => Ok(None),
            _ => {
                let r = self.refused(&result)?;
                let state = r.sqlstate.clone().unwrap_or_default();
                Ok(Some((state, describe_refusal(&CopyRefusal { sqlstate: None, ..r }))))
            }
        }
    }

    /// Runs a statement that changes rows and returns how many it changed
    /// (an INSERT's count); a refusal comes back as `Ok(Err(..))` for the
    /// caller to judge, a lost connection as an error.
    pub fn execute_counted(&self, sql: &str) -> Result<Result<u64, CopyRefusal>, Error> {
        let result = self.conn.exec(sql);
        match result.status() {
            Status::CommandOk => match result.cmd_tuples() {
                Ok(count) => Ok(Ok(count as u64)),
                Err(_) => Err(Error::Server(format!("the server gave no row count for: {sql}"))),
            },
            _ => self.refused(&result).map(Err),
        }
    }

    /// A failed statement's refusal, for the caller to judge; a lost
    /// connection or a failure that may pass as the error (see
    /// [`PgSession::retryable`]).
    fn refused(&self, result: &libpq::PQResult) -> Result<CopyRefusal, Error> {
        let r = refusal(result, &self.relname);
        match self.retryable(&r) {
            Some(error) => Err(error),
            None => Ok(r),
        }
    }

    /// Runs statements (one round trip) and returns the last one's rows as
    /// text; a refusal comes back as `Ok(Err(..))` for the caller to judge,
    /// a lost connection as an error.
    pub fn query_statements(&self, sql: &str) -> Result<Result<Rows, CopyRefusal>, Error> {
        let result = self.conn.exec(sql);
        if result.status() == Status::TuplesOk {
            return self.rows(result).map(Ok);
        }
        self.refused(&result).map(Err)
    }

    /// The order of day and month the session's DateStyle reads dates in
    /// (`None` for year first, or when the server does not say).
    pub fn date_order(&self) -> Option<DateOrder> {
        let rows = self.query("SELECT pg_catalog.current_setting('DateStyle')", &[]).ok()?;
        let date_style = rows.first()?.first()?.clone()?;
        DateOrder::of_date_style(&date_style)
    }

    /// Runs a query with text parameters; returns rows of text values.
    pub fn query(&self, sql: &str, params: &[Option<&str>]) -> Result<Rows, Error> {
        let owned = c_strings(params);
        let values: Vec<Option<&[u8]>> = owned.iter().map(Option::as_deref).collect();
        self.rows(self.conn.exec_params(sql, &[], &values, &[], libpq::Format::Text))
    }

    /// [`PgSession::query`], with a refusal coming back as `Ok(Err(..))`
    /// for the caller to judge (the transaction then rolls back), a lost
    /// connection as an error.
    pub fn query_or_refusal(&self, sql: &str, params: &[Option<&str>]) -> Result<Result<Rows, CopyRefusal>, Error> {
        let owned = c_strings(params);
        let values: Vec<Option<&[u8]>> = owned.iter().map(Option::as_deref).collect();
        let result = self.conn.exec_params(sql, &[], &values, &[], libpq::Format::Text);
        if result.status() == Status::TuplesOk {
            return self.rows(result).map(Ok);
        }
        self.refused(&result).map(Err)
    }

    /// Prepares `sql` as the statement `name`, for a query asked so often
    /// that parsing and planning it each time would show on the server.
    pub fn prepare(&self, name: &str, sql: &str) -> Result<(), Error> {
        let result = self.conn.prepare(Some(name), sql, &[]);
        match result.status() {
            Status::CommandOk => Ok(()),
            _ => Err(self.failure(&result)),
        }
    }

    /// Runs the prepared statement `name` (see [`PgSession::query`]).
    pub fn query_prepared(&self, name: &str, params: &[Option<&str>]) -> Result<Rows, Error> {
        let owned = c_strings(params);
        let values: Vec<Option<&[u8]>> = owned.iter().map(Option::as_deref).collect();
        self.rows(self.conn.exec_prepared(Some(name), &values, &[], libpq::Format::Text))
    }

    /// A query's rows as text (none for a statement that returns none), or
    /// its error. Why a statement without rows passes: it was taken for a
    /// lost connection (an error with no message), and retried for minutes.
    fn rows(&self, result: libpq::PQResult) -> Result<Rows, Error> {
        match result.status() {
            Status::TuplesOk => {}
            Status::CommandOk => return Ok(Vec::new()),
            _ => return Err(self.failure(&result)),
        }
        let rows = (0..result.ntuples())
            .map(|r| {
                (0..result.nfields())
                    .map(|c| result.value(r, c).map(|v| String::from_utf8_lossy(v).into_owned()))
                    .collect()
            })
            .collect();
        Ok(rows)
    }

    /// Finds `name` (or `schema.name`) the way the user meant it: the exact
    /// name in the search path first, then split at the first dot, then read
    /// as psql reads a name in SQL (quotes kept, bare letters folded to lower
    /// case).
    /// The table (or view) whose name is closest to `name`'s, within two
    /// edits, in any schema but the system's and sluice's: `-t ordres` for
    /// `orders`, `-t order` for `orders`, `-t Sales` for a table created as
    /// `"Sales"`. Named as psql shows it, with its schema.
    fn table_named_near(&self, name: &str) -> Result<Option<String>, Error> {
        let typed = parse_qualified_name(name).and_then(|parts| parts.last().cloned()).unwrap_or(name.to_string());
        let rows = self.query(
            "SELECT n.nspname, c.relname FROM pg_catalog.pg_class c \
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relkind IN ('r', 'p', 'v', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'sluice') \
             AND n.nspname NOT LIKE 'pg\\_%' LIMIT 100000",
            &[],
        )?;
        let distance = |table: &str| strsim::damerau_levenshtein(&table.to_lowercase(), &typed.to_lowercase());
        let closest = rows
            .iter()
            .filter_map(|r| Some((r[0].as_deref()?, r[1].as_deref()?)))
            .map(|(schema, table)| (distance(table), schema, table))
            .filter(|&(d, _, table)| d <= 2 && d < table.chars().count())
            .min();
        Ok(closest.map(|(_, schema, table)| format!("{}.{}", display_ident(schema), display_ident(table))))
    }

    pub fn resolve_table(&self, name: &str) -> Result<TableInfo, Error> {
        const FIND: &str = "SELECT c.oid::int8, n.nspname, c.relname, c.relkind::text \
             FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relname = $2 \
             AND (($1::text IS NULL AND pg_catalog.pg_table_is_visible(c.oid)) OR n.nspname = $1)";
        let as_written = Some((None, name.to_string()));
        let split = name.split_once('.').map(|(schema, table)| (Some(schema.to_string()), table.to_string()));
        let as_sql = match parse_qualified_name(name).as_deref() {
            Some([table]) => Some((None, table.clone())),
            Some([schema, table]) => Some((Some(schema.clone()), table.clone())),
            _ => None,
        };
        let mut rows = Vec::new();
        for (schema, table) in [as_written, split, as_sql].into_iter().flatten() {
            rows = self.query(FIND, &[schema.as_deref(), Some(&table)])?;
            if !rows.is_empty() {
                break;
            }
        }
        let Some(row) = rows.into_iter().next() else {
            let path = self.query("SELECT pg_catalog.array_to_string(pg_catalog.current_schemas(false), ', ')", &[])?;
            let path = path.first().and_then(|r| r[0].clone()).unwrap_or_default();
            let near = self.table_named_near(name)?;
            let missing = MissingTable { name: name.to_string(), searched: path, near, sketch: None };
            return Err(Error::NoSuchTable(Box::new(missing)));
        };
        let [oid, schema, table, kind] = [&row[0], &row[1], &row[2], &row[3]].map(|v| v.clone().unwrap_or_default());
        // Trigger type bits: ROW 1, INSERT 4, INSTEAD 64.
        let instead_of_insert = kind == "v"
            && !self
                .query(
                    "SELECT 1 FROM pg_catalog.pg_trigger WHERE tgrelid = $1::int8::oid AND tgtype & 69 = 69 \
                     AND tgenabled <> 'D'",
                    &[Some(&oid)],
                )?
                .is_empty();
        if let Some(what) = not_a_table(&kind, instead_of_insert) {
            return Err(Error::Target(format!(
                "\"{schema}\".\"{table}\" is {what}; sluice loads only into tables (and views with such a \
                 trigger): name the table it reads from"
            )));
        }
        let rows = self.query(COLUMNS_AS_BASE_TYPES, &[Some(&oid)])?;
        let text = |r: &Vec<Option<String>>, i: usize| r[i].clone().unwrap_or_default();
        let columns = rows.iter().map(|r| (text(r, 0), text(r, 1))).collect();
        let not_null = rows.iter().filter(|r| text(r, 2) == "t").map(|r| text(r, 0)).collect();
        let enums = rows
            .iter()
            .filter(|r| text(r, 3) == "t")
            .map(|r| (text(r, 0), serde_json::from_str(&text(r, 4)).unwrap_or_default()))
            .collect();
        let text_like = rows.iter().filter(|r| text(r, 5) == "t").map(|r| text(r, 0)).collect();
        let defaulted = rows.iter().filter(|r| text(r, 6) == "t").map(|r| text(r, 0)).collect();
        let generated = self.query(
            "SELECT attname, place FROM (SELECT attname, attgenerated, \
             pg_catalog.row_number() OVER (ORDER BY attnum) - 1 AS place FROM pg_catalog.pg_attribute \
             WHERE attrelid = $1::int8::oid AND attnum > 0 AND NOT attisdropped) a \
             WHERE attgenerated <> '' ORDER BY place",
            &[Some(&oid)],
        )?;
        let generated_places = generated.iter().filter_map(|r| r[1].as_deref()?.parse().ok()).collect();
        let generated = generated.into_iter().filter_map(|r| r.into_iter().next().flatten()).collect();
        let settings =
            self.query("SELECT pg_catalog.current_setting('TimeZone'), pg_catalog.current_setting('DateStyle')", &[])?;
        let setting = |i: usize| settings.first().and_then(|r| r[i].clone()).unwrap_or_default();
        let (session_time_zone, session_date_style) = (setting(0), setting(1));
        let is_view = kind == "v";
        let foreign = self.foreign_tables(&oid)?;
        let triggers = self.query(&format!("{PARTITION_TREE}{INSERT_TRIGGERS}"), &[Some(&oid)])?;
        let named = |row: &Vec<Option<String>>| row.first().cloned().flatten();
        let before_row = |row: &&Vec<Option<String>>| row.get(1).and_then(Option::as_deref) == Some("true");
        let insert_triggers = triggers.iter().filter_map(named).collect();
        let before_row_triggers = triggers.iter().filter(before_row).filter_map(named).collect();
        let oid = oid.parse().map_err(|_| Error::Server(format!("the server gave {table} the OID \"{oid}\"")))?;
        Ok(TableInfo {
            oid,
            schema,
            name: table,
            columns,
            not_null,
            defaulted,
            generated,
            generated_places,
            enums,
            text_like,
            is_view,
            foreign,
            insert_triggers,
            before_row_triggers,
            session_time_zone,
            session_date_style,
        })
    }

    /// The foreign tables COPY into the table `oid` may write to.
    fn foreign_tables(&self, oid: &str) -> Result<Vec<ForeignTable>, Error> {
        let rows = self.query(&format!("{PARTITION_TREE}{FOREIGN_TABLES}"), &[Some(oid)])?;
        let text = |r: &Vec<Option<String>>, i: usize| r[i].clone().unwrap_or_default();
        Ok(rows
            .iter()
            .map(|r| ForeignTable {
                display: format!("{}.{}", display_ident(&text(r, 0)), display_ident(&text(r, 1))),
                server: text(r, 2),
                wrapper: text(r, 3),
                oid: text(r, 4).parse().unwrap_or_default(),
                batch_size: r[5].clone(),
            })
            .collect())
    }

    /// The unique keys of the table `oid` (valid unique indexes on plain
    /// columns, without a predicate), in the order the server checks them
    /// (its index list is sorted by OID), and whether a key's conflict is
    /// surely the first thing the server refuses a row for: no trigger the
    /// user made (which may change the row) and no CHECK constraint (checked
    /// before the keys), on the table or any of its partitions.
    pub fn unique_keys(&self, oid: u32) -> Result<UniqueKeys, Error> {
        const KEYS: &str = "SELECT c.relname, array_to_json(ARRAY(SELECT a.attname FROM unnest(i.indkey::int2[]) \
            WITH ORDINALITY k(num, o) JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.num \
            WHERE k.o <= i.indnkeyatts ORDER BY k.o))::text, \
            array_to_json(ARRAY(SELECT CASE WHEN k.coll <> a.attcollation \
            THEN quote_ident(n.nspname) || '.' || quote_ident(co.collname) END \
            FROM unnest(i.indkey::int2[], i.indcollation::oid[]) WITH ORDINALITY k(num, coll, o) \
            JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.num \
            LEFT JOIN pg_catalog.pg_collation co ON co.oid = k.coll \
            LEFT JOIN pg_catalog.pg_namespace n ON n.oid = co.collnamespace \
            WHERE k.o <= i.indnkeyatts ORDER BY k.o))::text FROM pg_catalog.pg_index i \
            JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid \
            WHERE i.indrelid = $1::int8::oid AND i.indisunique AND i.indisvalid AND i.indexprs IS NULL \
            AND i.indpred IS NULL ORDER BY i.indexrelid";
        // The table's partitions too: a BEFORE INSERT row trigger or a
        // CHECK of a partition's own comes before the keys for its rows (an
        // AFTER trigger runs once the row is in its indexes). Then whether
        // no trigger of the user's runs on insert at all.
        const FIRST: &str =
            "SELECT NOT EXISTS (SELECT 1 FROM tree JOIN pg_catalog.pg_trigger t ON t.tgrelid = tree.oid \
            WHERE NOT t.tgisinternal AND t.tgenabled IN ('O', 'A') AND t.tgtype & 7 = 7), \
            NOT EXISTS (SELECT 1 FROM tree JOIN pg_catalog.pg_constraint c \
            ON c.conrelid = tree.oid WHERE c.contype = 'c'), \
            NOT EXISTS (SELECT 1 FROM tree JOIN pg_catalog.pg_trigger t ON t.tgrelid = tree.oid \
            WHERE NOT t.tgisinternal AND t.tgenabled IN ('O', 'A') AND t.tgtype & 4 <> 0)";
        let oid = oid.to_string();
        let rows = self.query(KEYS, &[Some(&oid)])?;
        let json = |r: &Vec<Option<String>>, i: usize| r.get(i)?.as_deref().map(str::to_string);
        let (mut keys, mut collations) = (Vec::new(), Vec::new());
        for row in &rows {
            let (Some(index), Some(columns), Some(collated)) = (json(row, 0), json(row, 1), json(row, 2)) else {
                continue;
            };
            let (Ok(columns), Ok(collated)) = (serde_json::from_str(&columns), serde_json::from_str(&collated)) else {
                continue;
            };
            keys.push((index, columns));
            collations.push(collated);
        }
        // Over the partitions too: a partition's unique index of its own
        // (not part of one of the table's) is a key the client does not
        // know. A key's index compares its columns as the columns do: with
        // their own collation (not `COLLATE` one of its own,
        // case-insensitive say) and their type's default operator class.
        const ONLY_THESE: &str = "SELECT c.relkind IN ('r', 'p') AND NOT EXISTS (SELECT 1 FROM tree \
            JOIN pg_catalog.pg_index i ON i.indrelid = tree.oid \
            WHERE i.indisexclusion OR (i.indisunique AND (i.indexprs IS NOT NULL \
            OR i.indpred IS NOT NULL OR NOT i.indimmediate OR NOT i.indisvalid \
            OR pg_catalog.pg_get_indexdef(i.indexrelid) LIKE '%NULLS NOT DISTINCT%' \
            OR (tree.oid <> c.oid \
              AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits h WHERE h.inhrelid = i.indexrelid))))) \
            AND NOT EXISTS (SELECT 1 FROM tree JOIN pg_catalog.pg_index i ON i.indrelid = tree.oid, \
            unnest(i.indkey::int2[], i.indcollation::oid[], i.indclass::oid[]) AS k(num, coll, opclass) \
            JOIN pg_catalog.pg_attribute a ON a.attnum = k.num JOIN pg_catalog.pg_opclass o ON o.oid = k.opclass \
            WHERE a.attrelid = i.indrelid AND i.indisunique AND (k.coll <> a.attcollation OR NOT o.opcdefault)) \
            AND NOT EXISTS (SELECT 1 FROM tree JOIN pg_catalog.pg_class f ON f.oid = tree.oid WHERE f.relkind = 'f') \
            , c.relkind = 'p' FROM pg_catalog.pg_class c WHERE c.oid = $1::int8::oid";
        let is_true = |rows: Vec<Vec<Option<String>>>| rows.first().and_then(|r| r.first()?.as_deref()) == Some("t");
        let first = self.query(&format!("{PARTITION_TREE}{FIRST}"), &[Some(&oid)])?;
        let first_is = |i: usize| first.first().and_then(|r| r.get(i)?.as_deref()) == Some("t");
        let (decide_after_checks, decide, untriggered) = (first_is(0), first_is(0) && first_is(1), first_is(2));
        let kind = self.query(&format!("{PARTITION_TREE}{ONLY_THESE}"), &[Some(&oid)])?;
        let partitioned = kind.first().and_then(|r| r.get(1)?.as_deref()) == Some("t");
        let only_these = is_true(kind);
        // Every collation was deterministic before PostgreSQL 12.
        let deterministic = if self.server_version() >= 120_000 { " AND c.collisdeterministic" } else { "" };
        let byte_equal = format!(
            "SELECT a.attname FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_collation c ON c.oid = a.attcollation \
             WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped \
             AND a.atttypid IN ('pg_catalog.text'::pg_catalog.regtype, 'pg_catalog.varchar'::pg_catalog.regtype, \
             'pg_catalog.bpchar'::pg_catalog.regtype){deterministic}"
        );
        let byte_equal =
            self.query(&byte_equal, &[Some(&oid)])?.into_iter().filter_map(|r| r.first()?.clone()).collect();
        Ok(UniqueKeys {
            keys,
            collations,
            decide,
            decide_after_checks,
            only_these,
            untriggered,
            byte_equal,
            partitioned,
        })
    }

    /// The CHECK constraints of the table `oid` and what is needed to
    /// evaluate them as the server does (see [`CheckConstraints`]).
    /// PostgreSQL 18's `NOT ENFORCED` ones are left out: the server does
    /// not check them.
    pub fn check_constraints(&self, oid: u32) -> Result<CheckConstraints, Error> {
        const TABLE: &str = "SELECT c.relname, c.relkind = 'r', pg_catalog.has_table_privilege(c.oid, 'SELECT'), \
            pg_catalog.current_setting('lc_messages') FROM pg_catalog.pg_class c WHERE c.oid = $1::int8::oid";
        const COLUMNS: &str = "SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), \
            CASE WHEN a.attcollation <> t.typcollation \
              THEN pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(co.collname) END, \
            a.attgenerated <> '' \
            FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid \
            LEFT JOIN pg_catalog.pg_collation co ON co.oid = a.attcollation \
            LEFT JOIN pg_catalog.pg_namespace n ON n.oid = co.collnamespace \
            WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum";
        let enforced = if self.server_version() >= 180_000 { " AND c.conenforced" } else { "" };
        let checks = format!(
            "SELECT c.conname, pg_catalog.pg_get_expr(c.conbin, c.conrelid), \
             pg_catalog.array_to_json(ARRAY(SELECT a.attname FROM unnest(c.conkey) AS k(num) \
               JOIN pg_catalog.pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.num))::text, \
             EXISTS (SELECT FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_proc p ON p.oid = d.refobjid \
               WHERE d.classid = 'pg_catalog.pg_constraint'::pg_catalog.regclass AND d.objid = c.oid \
               AND d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND p.provolatile = 'v') \
             FROM pg_catalog.pg_constraint c WHERE c.conrelid = $1::int8::oid AND c.contype = 'c'{enforced} \
             ORDER BY c.conname COLLATE \"C\""
        );
        let oid = oid.to_string();
        let text = |r: &Vec<Option<String>>, i: usize| r.get(i).cloned().flatten().unwrap_or_default();
        let is_true = |r: &Vec<Option<String>>, i: usize| r.get(i).and_then(|v| v.as_deref()) == Some("t");
        let table = self.query(TABLE, &[Some(&oid)])?;
        let Some(table) = table.first() else { return Ok(CheckConstraints::default()) };
        let columns = self.query(COLUMNS, &[Some(&oid)])?;
        let checks = self.query(&checks, &[Some(&oid)])?;
        Ok(CheckConstraints {
            server_version: self.server_version(),
            lc_messages: text(table, 3),
            relation: text(table, 0),
            plain: is_true(table, 1),
            readable: is_true(table, 2),
            columns: columns
                .iter()
                .map(|r| DeclaredColumn {
                    name: text(r, 0),
                    declared_type: text(r, 1),
                    collation: r.get(2).cloned().flatten(),
                    generated: is_true(r, 3),
                })
                .collect(),
            checks: checks
                .iter()
                .map(|r| CheckConstraint {
                    name: text(r, 0),
                    expression: text(r, 1),
                    columns: serde_json::from_str(&text(r, 2)).ok(),
                    volatile: is_true(r, 3),
                })
                .collect(),
        })
    }

    /// The keys of the table `oid` that `INSERT ... ON CONFLICT (columns)`
    /// can take as its arbiter: unique indexes on columns, without a
    /// predicate, checked at once (the server refuses a deferrable one);
    /// the primary key first.
    pub fn arbiter_keys(&self, oid: u32) -> Result<Vec<ArbiterKey>, Error> {
        const KEYS: &str = "SELECT i.indisprimary, array_to_json(ARRAY(SELECT a.attname \
            FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(num, o) \
            JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.num \
            WHERE k.o <= i.indnkeyatts ORDER BY k.o))::text, \
            EXISTS (SELECT 1 FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(num, o) \
            JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.num \
            WHERE k.o <= i.indnkeyatts AND NOT a.attnotnull) \
            FROM pg_catalog.pg_index i WHERE i.indrelid = $1::int8::oid AND i.indisunique AND i.indisvalid \
            AND i.indimmediate AND i.indexprs IS NULL AND i.indpred IS NULL \
            ORDER BY i.indisprimary DESC, i.indexrelid";
        let rows = self.query(KEYS, &[Some(&oid.to_string())])?;
        Ok(rows
            .iter()
            .filter_map(|row| {
                let columns = serde_json::from_str(row.get(1)?.as_deref()?).ok()?;
                let is_true = |i: usize| row.get(i).and_then(|v| v.as_deref()) == Some("t");
                Some(ArbiterKey { primary: is_true(0), columns, nullable: is_true(2) })
            })
            .collect())
    }

    /// Whether the table `oid` or one of its partitions has a unique index
    /// or an exclusion constraint, valid or being built: one session's
    /// insert may then wait for another's transaction, and which of two
    /// rows sharing a key is kept depends on which commits first. Asked
    /// after the job deferred what it defers.
    pub fn holds_unique_keys(&self, oid: u32) -> Result<bool, Error> {
        const ANY_KEY: &str = "SELECT EXISTS (SELECT 1 FROM tree JOIN pg_catalog.pg_index i \
            ON i.indrelid = tree.oid WHERE i.indisunique OR i.indisexclusion)";
        let rows = self.query(&format!("{PARTITION_TREE}{ANY_KEY}"), &[Some(&oid.to_string())])?;
        Ok(rows.first().and_then(|r| r.first()?.as_deref()) == Some("t"))
    }

    /// Whether this session's role may copy the table `oid`'s rows through
    /// a temporary table made like it: it may create temporary tables in
    /// its database (the `TEMPORARY` privilege, which PUBLIC has by
    /// default) and read the table (its columns' types are taken by a
    /// `SELECT`; COPY needs only INSERT).
    pub fn may_stage_rows_of(&self, oid: u32) -> Result<bool, Error> {
        const MAY: &str = "SELECT has_database_privilege(current_database(), 'TEMPORARY') \
            AND has_table_privilege($1::int8::oid, 'SELECT')";
        let rows = self.query(MAY, &[Some(&oid.to_string())])?;
        Ok(rows.first().and_then(|r| r.first()?.as_deref()) == Some("t"))
    }

    /// Whether one of the `waiting` sessions waits on the server for one of
    /// the `holding` ones: for a transaction of theirs (a key or row it
    /// wrote), directly or through other sessions queued the same way. A
    /// session that waits for a row's writer holds the row's tuple lock, and
    /// the next session to wait for that row queues for the tuple lock, not
    /// for the writer: asked only for direct waits on a transaction, a chunk
    /// committing in input order missed an earlier chunk queued so behind a
    /// later one, which waited for this chunk's transaction, and the load
    /// hung (1 run in 40 of 120 small files sharing keys, 4 workers, on a
    /// busy machine). Every kind of lock is followed but three held for a
    /// moment: a session queued to grow the table (PostgreSQL 15 and older
    /// do it under one lock, `extend`) waits for the others too, and would
    /// make every load look stuck (`page` and `frozenid` are alike). Only
    /// transactions, tuples and speculative insertions were followed, and
    /// a load hung for good where an earlier chunk waited on a later one
    /// otherwise: for an advisory lock a trigger took (a row's key), or
    /// for the table, queued behind someone's `ALTER TABLE` or `LOCK TABLE`
    /// that waits for the later chunk's transaction. Lock modes are not
    /// compared: for the few a load takes, a holder of the lock a session
    /// is queued for blocks it or the request queued before it (an
    /// `ALTER TABLE` waits for each writer's lock). Prepared once: asked every
    /// 10 ms by a chunk waiting to commit in input order, parsing and
    /// planning it took 0.55 ms a time, against 0.25 ms prepared.
    pub fn waits_on(&self, waiting: &[u32], holding: &[u32]) -> Result<bool, Error> {
        const WAITS_ON: &str = "WITH RECURSIVE locks AS (SELECT locktype, database, relation, page, tuple, \
            transactionid, classid, objid, objsubid, pid, granted FROM pg_catalog.pg_locks \
            WHERE locktype NOT IN ('extend', 'page', 'frozenid')), \
            waits(pid, holder) AS (SELECT DISTINCT w.pid, h.pid FROM locks w JOIN locks h \
            ON h.granted AND h.pid <> w.pid AND h.locktype = w.locktype \
            AND h.database IS NOT DISTINCT FROM w.database AND h.relation IS NOT DISTINCT FROM w.relation \
            AND h.page IS NOT DISTINCT FROM w.page AND h.tuple IS NOT DISTINCT FROM w.tuple \
            AND h.transactionid IS NOT DISTINCT FROM w.transactionid AND h.classid IS NOT DISTINCT FROM w.classid \
            AND h.objid IS NOT DISTINCT FROM w.objid AND h.objsubid IS NOT DISTINCT FROM w.objsubid \
            WHERE NOT w.granted), \
            reached(pid) AS (SELECT holder FROM waits WHERE pid = ANY($1::int[]) \
            UNION SELECT waits.holder FROM reached JOIN waits ON waits.pid = reached.pid) \
            SELECT EXISTS (SELECT 1 FROM reached WHERE pid = ANY($2::int[]))";
        const NAME: &str = "sluice_waits_on";
        if !self.waits_on_prepared.get() {
            self.prepare(NAME, WAITS_ON)?;
            self.waits_on_prepared.set(true);
        }
        let rows = self.query_prepared(NAME, &[Some(&pid_array(waiting)), Some(&pid_array(holding))])?;
        Ok(rows.first().and_then(|r| r.first()?.as_deref()) == Some("t"))
    }

    /// Prepares this session to copy with `sql` (a `COPY ... FROM STDIN`)
    /// into `table`.
    pub fn set_copy_statement(&mut self, sql: &str, table: &TableInfo) {
        self.copy_sql = sql.to_string();
        self.relname = table.name.clone();
    }

    fn finish_copy(&self) -> Result<CopyOutcome, Error> {
        let mut outcome = None;
        while let Some(result) = self.conn.result() {
            let this = match result.status() {
                Status::CommandOk => CopyOutcome::Loaded(result.cmd_tuples().unwrap_or(0) as u64),
                Status::FatalError => self.classify_refusal(refusal(&result, &self.relname))?,
                other => return Err(Error::Database(format!("unexpected reply to COPY: {other:?}"))),
            };
            outcome.get_or_insert(this);
        }
        outcome.ok_or_else(|| Error::Transient(self.connection_trouble()))
    }

    /// A refusal is about a record when the server names its line, or when
    /// its SQLSTATE is a data exception (22) or integrity violation (23).
    /// Anything else (a lost connection, a shutdown, missing privileges) is
    /// the database's trouble, not the record's.
    fn classify_refusal(&self, r: CopyRefusal) -> Result<CopyOutcome, Error> {
        if let Some(error) = self.retryable(&r) {
            return Err(error);
        }
        let state = r.sqlstate.as_deref().unwrap_or("");
        if r.server_line.is_some() || state.starts_with("22") || state.starts_with("23") {
            return Ok(CopyOutcome::Refused(r));
        }
        Err(Error::Server(format!("COPY refused: {}", describe_refusal(&r))))
    }

    /// A failed statement as an error: see [`PgSession::retryable`].
    fn failure(&self, result: &libpq::PQResult) -> Error {
        let r = refusal(result, &self.relname);
        self.retryable(&r).unwrap_or_else(|| {
            let advice = match r.sqlstate.as_deref() {
                Some(READ_ONLY) => READ_ONLY_ADVICE,
                _ => "",
            };
            Error::Server(describe_refusal(&r) + advice)
        })
    }

    /// The one rule for what is worth retrying: a lost connection (or a
    /// failure without a message or without a SQLSTATE, which the server
    /// always sends: libpq's own, such as "server closed the connection
    /// unexpectedly" after a crash), a transient SQLSTATE and a cancelled
    /// statement are [`Error::Transient`]; anything else is the statement's
    /// own failure. A session sets no timeout (see [`PgSession::set_up`]),
    /// so a statement is cancelled by someone: by sluice on a Ctrl-C (see
    /// `load::blockers`), when the error is the interrupt's. It was the
    /// statement's: a merge cancelled so was halved and merged again, its
    /// halves waiting for the same lock, and a COPY cancelled at a line
    /// would have rejected that line.
    fn retryable(&self, r: &CopyRefusal) -> Option<Error> {
        let bad = self.conn.status() == libpq::connection::Status::Bad;
        if bad || r.message.is_empty() || r.sqlstate.is_none() {
            return Some(Error::Transient(self.connection_trouble()));
        }
        let transient = r.sqlstate.as_deref().is_some_and(|state| is_transient(state) || state == QUERY_CANCELED);
        transient.then(|| Error::Transient(describe_refusal(r)))
    }

    fn connection_trouble(&self) -> String {
        let msg = self.conn.error_message().unwrap_or("the connection was lost");
        format!("lost the connection to the server: {}", one_line(msg))
    }
}

impl PgSession {
    /// Runs `body` in a transaction: committed when it succeeds, rolled
    /// back when it fails.
    pub fn transaction<T>(&self, body: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
        self.execute("BEGIN")?;
        let outcome = body();
        self.execute(if outcome.is_ok() { "COMMIT" } else { "ROLLBACK" })?;
        outcome
    }

    /// Calls `each` with every row of `select`, read through a cursor a
    /// thousand at a time: a job may hold millions of rejects, and
    /// sluice's memory stays bounded.
    pub fn each_row(
        &self,
        select: &str,
        mut each: impl FnMut(&[Option<String>]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        const PAGE: usize = 1_000;
        self.transaction(|| {
            self.execute(&format!("DECLARE each_row NO SCROLL CURSOR FOR {select}"))?;
            loop {
                let rows = self.query(&format!("FETCH {PAGE} FROM each_row"), &[])?;
                rows.iter().try_for_each(|row| each(row))?;
                if rows.len() < PAGE {
                    return Ok(());
                }
            }
        })
    }

    /// Whether the table holds no row, when this role can tell: `None` when
    /// it may not read the table (COPY needs only INSERT) or row security
    /// may hide rows from it.
    pub fn table_is_empty(&self, table: &TableInfo) -> Result<Option<bool>, Error> {
        let oid = table.oid.to_string();
        let sees_all = self.query(
            "SELECT pg_catalog.has_table_privilege(oid, 'SELECT') AND NOT relrowsecurity FROM pg_catalog.pg_class \
             WHERE oid = $1::int8::oid",
            &[Some(&oid)],
        )?;
        if sees_all.first().and_then(|r| r[0].as_deref()) != Some("t") {
            return Ok(None);
        }
        let empty = self.query(&format!("SELECT NOT EXISTS (SELECT FROM {})", table.quoted()), &[])?;
        Ok(Some(empty.first().and_then(|r| r[0].as_deref()) == Some("t")))
    }

    /// The server's version as `server_version_num` (150013 for 15.13).
    pub fn server_version(&self) -> i32 {
        self.conn.server_version()
    }

    /// The process id of the server session, as `pg_stat_activity` shows it.
    pub fn backend_pid(&self) -> u32 {
        self.pid
    }

    /// Whether the server runs on this machine: a Unix socket, a loopback
    /// address, or the same address at both ends.
    pub fn server_is_local(&self) -> Result<bool, Error> {
        let rows = self.query(
            "SELECT inet_server_addr() IS NULL OR host(inet_server_addr()) IN ('127.0.0.1', '::1') \
             OR inet_server_addr() << '127.0.0.0/8'::inet OR inet_server_addr() = inet_client_addr()",
            &[],
        )?;
        Ok(rows.first().and_then(|r| r[0].as_deref()) == Some("t"))
    }

    /// Runs `prelude` (statements such as `SAVEPOINT s`) and the COPY in one
    /// round trip, then copies what `feed` produces. Reject isolation copies
    /// many short runs, so each saved round trip counts.
    pub fn copy_after(&mut self, prelude: &str, feed: &mut Feed<'_>) -> Result<CopyOutcome, Error> {
        let copy_sql = self.copy_sql.clone();
        self.copy_with(prelude, &copy_sql, feed)
    }

    /// [`PgSession::copy_after`] with another COPY statement into the same
    /// table (the binary one).
    pub fn copy_with(&mut self, prelude: &str, copy_sql: &str, feed: &mut Feed<'_>) -> Result<CopyOutcome, Error> {
        let statement = match prelude {
            "" => copy_sql.to_string(),
            _ => format!("{prelude}; {copy_sql}"),
        };
        self.copy_statement(&statement, feed)
    }

    /// Copies `rows` with another COPY statement (sluice's own tables); a
    /// refusal is an error here, not a reject.
    pub fn copy_rows(&mut self, statement: &str, rows: &[u8]) -> Result<(), Error> {
        match self.copy_statement(statement, &mut |send| {
            send(rows);
            Ok(())
        })? {
            CopyOutcome::Loaded(_) => Ok(()),
            CopyOutcome::Refused(r) => Err(Error::Server(describe_refusal(&r))),
        }
    }

    /// Like [`PgSession::copy_rows`], but false when a row's key is taken
    /// (a unique violation: another session wrote it first).
    pub fn copy_rows_unless_taken(&mut self, statement: &str, rows: &[u8]) -> Result<bool, Error> {
        match self.copy_statement(statement, &mut |send| {
            send(rows);
            Ok(())
        })? {
            CopyOutcome::Loaded(_) => Ok(true),
            CopyOutcome::Refused(r) if r.sqlstate.as_deref() == Some(UNIQUE_VIOLATION) => Ok(false),
            CopyOutcome::Refused(r) => Err(Error::Server(describe_refusal(&r))),
        }
    }

    fn copy_statement(&mut self, statement: &str, feed: &mut Feed<'_>) -> Result<CopyOutcome, Error> {
        let start = self.conn.exec(statement);
        match start.status() {
            Status::CopyIn => {}
            _ => {
                return Err(match self.failure(&start) {
                    Error::Server(message) => Error::Server(format!("COPY refused: {message}")),
                    other => other,
                })
            }
        }
        // `put_copy_data` fails once the server has reported an error (libpq
        // leaves the COPY state); stop sending then and read the error.
        let conn = &self.conn;
        let mut sent_ok = true;
        let fed = feed(&mut |bytes: &[u8]| {
            sent_ok = bytes.chunks(COPY_PIECE).all(|piece| conn.put_copy_data(piece).is_ok());
            sent_ok
        });
        if let Err(input_error) = fed {
            let _ = self.conn.put_copy_end(Some("sluice: input read failed"));
            let _ = self.finish_copy();
            return Err(input_error);
        }
        if sent_ok {
            let _ = self.conn.put_copy_end(None);
        }
        self.finish_copy()
    }
}

/// The fields of a server error, typed: SQLSTATE and the COPY context line
/// are read from their fields, never matched in message text.
fn refusal(result: &libpq::PQResult, relname: &str) -> CopyRefusal {
    let field = |f: ErrorField| result.error_field(f).ok().flatten().map(str::to_string);
    let context = field(ErrorField::Context).unwrap_or_default();
    // Or the staging table's (`load::stage`), named in its own context.
    let (server_line, context_column) = match parse_copy_context(&context, relname) {
        (None, None) => parse_copy_context(&context, "sluice_staged"),
        found => found,
    };
    CopyRefusal {
        sqlstate: field(ErrorField::Sqlstate),
        message: field(ErrorField::MessagePrimary).unwrap_or_else(|| server_message(result)),
        detail: field(ErrorField::MessageDetail),
        hint: field(ErrorField::MessageHint),
        server_line,
        column: field(ErrorField::ColumnName).or(context_column),
        constraint: field(ErrorField::ConstraintName).map(|name| match field(ErrorField::SchemaName) {
            Some(schema) => format!("{}.{}", quote_ident(&schema), quote_ident(&name)),
            None => quote_ident(&name),
        }),
    }
}

/// Reads `COPY t, line N[, column c: "..."]` from the context. The context
/// is the server's fixed format, not a message meant for people; its COPY
/// line is found by the relation name (errors raised in triggers put their
/// own lines first), so no name or value can fool it.
pub fn parse_copy_context(context: &str, relname: &str) -> (Option<u64>, Option<String>) {
    let prefix = format!("COPY {relname}, line ");
    let Some(rest) = context.lines().find_map(|l| l.strip_prefix(&prefix)) else {
        return (None, None);
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let line = digits.parse().ok();
    let column = rest[digits.len()..]
        .strip_prefix(", column ")
        .and_then(|c| c.split_once(':').map(|(name, _)| name.to_string()).or(Some(c.to_string())));
    (line, column)
}

/// Failures that pass: the server shutting down or starting up, too many
/// connections, a full disk, serialization failures and deadlocks, lost
/// connections (class 08). Chosen by SQLSTATE, never by message text.
pub fn is_transient(sqlstate: &str) -> bool {
    matches!(sqlstate, "57P01" | "57P02" | "57P03" | "53300" | "53100" | "40001" | "40P01")
        || sqlstate.starts_with("08")
}

/// `permission denied for table t [42501]`, with DETAIL and HINT.
pub fn describe_refusal(r: &CopyRefusal) -> String {
    let mut text = r.message.clone();
    if let Some(detail) = &r.detail {
        text.push_str(&format!(" ({detail})"));
    }
    if let Some(hint) = &r.hint {
        text.push_str(&format!("; {hint}"));
    }
    if let Some(code) = &r.sqlstate {
        text.push_str(&format!(" [{code}]"));
    }
    text
}

fn server_message(result: &libpq::PQResult) -> String {
    let primary = result.error_field(ErrorField::MessagePrimary).ok().flatten();
    match primary {
        Some(msg) => msg.to_string(),
        None => one_line(&result.error_message().ok().flatten().unwrap_or_default()),
    }
}

/// Whether a TimeZone setting names UTC (or one of tzdata's aliases of
/// it, which never had another offset). Other zones, even those at +00:00
/// today, had other offsets once or in summer.
fn is_utc(time_zone: &str) -> bool {
    const ALIASES: [&str; 9] = ["utc", "uct", "gmt", "gmt0", "gmt+0", "gmt-0", "greenwich", "universal", "zulu"];
    let zone = time_zone.to_ascii_lowercase();
    ALIASES.contains(&zone.strip_prefix("etc/").unwrap_or(&zone))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_and_its_aliases_only() {
        for zone in ["UTC", "Etc/UTC", "utc", "GMT", "Etc/GMT-0", "Zulu", "Etc/Universal"] {
            assert!(is_utc(zone), "{zone}");
        }
        for zone in ["Europe/London", "Africa/Abidjan", "Etc/GMT+1", "America/New_York", ""] {
            assert!(!is_utc(zone), "{zone}");
        }
    }

    #[test]
    fn a_socket_connection_keeps_every_setting_but_the_address() {
        let socket = |given: &str| PgTarget::new(Some(given)).conninfo_for_socket("/run/pg sock", "5433").unwrap();
        let tail = "host='/run/pg sock' port='5433' hostaddr=''";
        assert_eq!(
            socket("postgres://u:p%27w@127.0.0.1:5432/sales?sslmode=require&application_name=x"),
            format!(r"user='u' password='p\'w' dbname='sales' application_name='x' sslmode='require' {tail}")
        );
        assert_eq!(
            socket("host=127.0.0.1,127.0.0.2 hostaddr=127.0.0.1 port=5432 dbname=d options='-c a=b'"),
            format!("dbname='d' options='-c a=b' {tail}")
        );
        assert_eq!(socket("sales"), format!("dbname='sales' {tail}"), "a bare name is a database");
        assert_eq!(socket(""), tail, "PG* variables fill in the rest");
    }

    #[test]
    fn notices_are_kept_once_each_and_counted() {
        let mut log = NoticeLog::default();
        for i in 0..30 {
            log.add("WARNING: odd".into());
            log.add(format!("WARNING: row {i}"));
        }
        let warnings = log.warnings();
        assert_eq!(warnings.len(), DISTINCT_NOTICES + 1);
        assert_eq!(warnings[0], "the server said 30 times: WARNING: odd");
        assert_eq!(warnings[1], "the server said: WARNING: row 0");
        assert_eq!(warnings[DISTINCT_NOTICES], "the server said 21 more things, not kept");
        assert!(NoticeLog::default().warnings().is_empty());
    }

    #[test]
    fn parses_copy_context() {
        let parse = |c| parse_copy_context(c, "t");
        assert_eq!(parse("COPY t, line 12, column qty: \"12a\""), (Some(12), Some("qty".into())));
        assert_eq!(parse("COPY t, line 3"), (Some(3), None));
        assert_eq!(parse("COPY t, line 7: \"a,b\""), (Some(7), None));
        assert_eq!(parse("SQL statement"), (None, None));
        assert_eq!(parse_copy_context("COPY x, line 5, line 9", "x, line 5"), (Some(9), None));
    }
}
