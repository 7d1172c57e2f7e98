//! What a load did, for people (one summary line) and machines (JSON).
//!
//! The JSON report is a stable interface: fields are only ever added. Its
//! per-chunk records are the `file,start,end,rows,time` logs the field reports
//! kept by hand, so users can see where the time went.

use std::path::Path;

use serde::Serialize;

/// One committed chunk.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ChunkRecord {
    pub seq: u64,
    pub file: String,
    pub byte_offset: u64,
    pub byte_len: u64,
    pub first_line: u64,
    pub first_record: u64,
    /// Records the client's scanner counted.
    pub records: u64,
    /// Rows the server reported loading.
    pub rows: u64,
    /// Records rejected.
    pub rejected: u64,
    /// Records a BEFORE INSERT trigger suppressed (returned NULL for): the
    /// server took them but did not count them as rows. `records = rows +
    /// rejected + suppressed + skipped`.
    pub suppressed: u64,
    /// Records refused for a key that a row already held, skipped by
    /// `--on-conflict-do-nothing`.
    pub skipped: u64,
    /// COPY statements isolation sent to find the chunk's bad records (0:
    /// the chunk went in one COPY, or with its batch): what its rejects cost.
    pub isolation_copies: u64,
    pub worker: usize,
    /// Sent as binary COPY (else as the input's text).
    pub binary: bool,
    /// Copied into a temporary table and inserted from there, skipping the
    /// records whose key was held (`--on-conflict-do-nothing` once most
    /// keys were: see `load::stage`).
    pub staged: bool,
    /// Of `rows`, those that replaced the row holding their key, the
    /// table's or an earlier record's (`--on-conflict-do-update`).
    pub replaced: u64,
    /// The first chunk (`seq`) of the batch it was loaded with: small inputs
    /// share one COPY and one transaction (see `load::batch`); a chunk
    /// loaded alone names itself.
    pub batch: u64,
    /// Seconds since the load started.
    pub start_s: f64,
    pub end_s: f64,
}

/// Per-input accounting: `records_read = rows_loaded + rejected +
/// suppressed + skipped + resumed_rows + resumed_rejected +
/// resumed_suppressed + resumed_skipped` on a complete load (the `resumed_`
/// ones were committed by earlier runs of the job; `suppressed` records were
/// taken by the server but not counted, see [`ChunkRecord::suppressed`]);
/// the header is counted apart.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FileSummary {
    pub file: String,
    pub compression: crate::source::Compression,
    /// Bytes after decompression (before transcoding or turning documents
    /// into lines), the header's included.
    pub bytes: u64,
    /// Lines `--skip-lines` skipped before the header or the first record.
    pub skipped_lines: u64,
    pub header_lines: u64,
    pub bom_stripped: bool,
    pub records_read: u64,
    pub rows_loaded: u64,
    pub rejected: u64,
    pub suppressed: u64,
    pub skipped: u64,
    pub resumed_rows: u64,
    pub resumed_rejected: u64,
    pub resumed_suppressed: u64,
    pub resumed_skipped: u64,
    pub chunks: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub table: String,
    pub format: crate::format::FormatKind,
    pub files: usize,
    pub records_read: u64,
    pub rows_loaded: u64,
    pub rejected: u64,
    /// Records a trigger suppressed (see [`ChunkRecord::suppressed`]).
    pub suppressed: u64,
    /// Records skipped (see [`ChunkRecord::skipped`]).
    pub skipped: u64,
    /// With `--on-conflict-do-update`: of this run's rows, those that
    /// replaced a row (see [`ChunkRecord::replaced`]).
    pub replaced: Option<u64>,
    /// Where the rejected records were written, when there were any.
    pub rejects_file: Option<String>,
    /// How many records that file holds: every reject the job has
    /// committed so far, earlier runs' included.
    pub rejects_in_file: u64,
    /// Why the records that file holds were rejected, by kind.
    pub reject_reasons: crate::rejects::RejectReasons,
    /// Chunks, rows, rejects, suppressed and skipped records committed by
    /// earlier runs of the job.
    pub resumed_chunks: u64,
    pub resumed_rows: u64,
    pub resumed_rejected: u64,
    pub resumed_suppressed: u64,
    pub resumed_skipped: u64,
    /// With `--on-conflict-do-update`: of `resumed_rows`, those that
    /// replaced a row.
    pub resumed_replaced: Option<u64>,
    /// The job this load belongs to (the ledger's name for it).
    pub job: String,
    /// Chunks another process of the same job committed first.
    pub chunks_by_others: u64,
    pub skipped_lines: u64,
    pub header_lines: u64,
    /// Bytes after decompression, headers included.
    pub bytes: u64,
    pub wall_seconds: f64,
    pub rows_per_sec: f64,
    pub mb_per_sec: f64,
    pub workers: usize,
    /// `--workers auto`: the count chosen and what each count measured.
    pub workers_chosen: Option<String>,
    pub chunk_size: u64,
    pub chunks: u64,
    /// Transactions the chunks were loaded in: fewer than chunks when small
    /// inputs shared batches.
    pub batches: u64,
    /// Milliseconds since the Unix epoch when the load started.
    pub started_unix_ms: u128,
    /// False when the load stopped on an error before reading everything.
    pub complete: bool,
    /// How the chunks travelled to the server, and why.
    pub copy: CopyPath,
    /// Whether the sessions went through the server's Unix socket.
    pub connection: crate::sink::socket::ConnectionPath,
    /// Indexes and constraints dropped for the load and built after it.
    pub deferred: Deferral,
    /// The table analyzed after the load, or why not (`--analyze`); none
    /// when it was left to autovacuum.
    pub analysis: Option<Analysis>,
    /// What the loading sessions were doing on the server.
    pub server_waits: ServerWaits,
}

/// The loading sessions (or those building deferred indexes) as
/// `pg_stat_activity` showed them, sampled while they worked (see
/// `load::waits`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ServerWaits {
    /// Session observations: one per watched session active at each look.
    pub samples: u64,
    /// `CPU` or `wait_event_type:wait_event`, largest share first.
    pub events: Vec<ServerWait>,
    /// What the largest wait means and what would help, when it is known.
    pub hint: Option<String>,
}

/// One wait event's part of the samples.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ServerWait {
    pub event: String,
    pub samples: u64,
    /// Of all samples, 0 to 1.
    pub share: f64,
}

impl ServerWaits {
    /// `server sessions (1,204 samples): 70% CPU, 19% Lock:extend, 7%
    /// IO:DataFileExtend, 4% other` (`sessions`: who was sampled), or
    /// nothing without samples.
    pub fn describe(&self, sessions: &str) -> Option<String> {
        const SHOWN: usize = 4;
        if self.samples == 0 {
            return None;
        }
        let percent = |share: f64| format!("{:.0}%", 100.0 * share);
        let mut parts: Vec<String> =
            self.events.iter().take(SHOWN).map(|w| format!("{} {}", percent(w.share), w.event)).collect();
        let rest: f64 = self.events.iter().skip(SHOWN).map(|w| w.share).sum();
        if rest > 0.0 {
            parts.push(format!("{} other", percent(rest)));
        }
        Some(format!("{sessions} ({}): {}", count_of(self.samples, "sample"), parts.join(", ")))
    }
}

/// What `--defer-indexes` did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Deferral {
    /// Every object the job deferred (`primary key "t_pkey"`, ...).
    pub objects: Vec<String>,
    /// Why nothing was deferred, when nothing was.
    pub why_not: Option<String>,
    /// Indexes and constraints left in place, each with why.
    pub kept: Vec<String>,
    /// Objects this process built, with seconds each (they run in parallel).
    pub built: Vec<BuiltObject>,
    /// Wall time of the rebuild.
    pub rebuild_seconds: f64,
    /// Chunks loaded again because their rows violated a key or constraint.
    pub reloaded_chunks: u64,
    /// How rows reached the table: `logged` or `unlogged for the load`, and why.
    pub table_path: String,
    /// `--unlogged`: the table was unlogged for the load.
    pub unlogged: bool,
    /// What the sessions building the indexes and constraints were doing.
    pub rebuild_waits: ServerWaits,
    /// Objects the job dropped and had not built again when the load
    /// stopped (an error, a Ctrl-C): the same command builds them.
    pub still_dropped: Vec<String>,
    /// The table was still unlogged (`--unlogged`) when the load stopped.
    pub still_unlogged: bool,
}

impl Deferral {
    /// What a load that stopped early (an error, a Ctrl-C) leaves to be put
    /// back, one line each; the same command puts it back. Said on stderr,
    /// since a user who gives up on the load would otherwise keep a table
    /// without its keys, or one that a crash empties.
    pub fn left_undone(&self) -> Vec<String> {
        let mut lines = Vec::new();
        match self.still_dropped.as_slice() {
            [] => {}
            [one] => lines.push(format!("{one} stays dropped until the same command runs again and builds it")),
            [rest @ .., last] => lines.push(format!(
                "{} and {last} stay dropped until the same command runs again and builds them",
                rest.join(", ")
            )),
        }
        if self.still_unlogged {
            lines.push(
                "the table stays unlogged until the same command runs again: a server crash meanwhile empties it"
                    .into(),
            );
        }
        lines
    }
}

/// `1 deferred index/constraint`, `3 deferred indexes/constraints`.
pub fn deferred_objects(n: u64) -> String {
    match n {
        1 => "1 deferred index/constraint".into(),
        n => format!("{n} deferred indexes/constraints"),
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct BuiltObject {
    pub name: String,
    pub seconds: f64,
}

impl Deferral {
    /// `, 3 deferred indexes/constraints rebuilt in 4.10 s`, or nothing.
    fn describe(&self) -> String {
        let unlogged = match self.unlogged {
            true => ", unlogged for the load",
            false => "",
        };
        unlogged.to_string()
            + &match self.objects.len() {
                0 => String::new(),
                n => format!(
                    ", {} rebuilt in {:.2} s{}",
                    deferred_objects(n as u64),
                    self.rebuild_seconds,
                    match self.reloaded_chunks {
                        0 => String::new(),
                        c => format!(" ({c} chunk{} reloaded for violating rows)", plural(c)),
                    }
                ),
            }
    }
}

/// What `--analyze` did after the load (see `load::analyze`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Analysis {
    /// The table was analyzed.
    pub done: bool,
    pub seconds: f64,
    /// Why it was analyzed; or why not, and what to run.
    pub why: String,
}

impl Analysis {
    pub fn not_done(why: String) -> Analysis {
        Analysis { done: false, seconds: 0.0, why }
    }

    /// `, analyzed in 0.31 s (autovacuum is off)`, or nothing.
    fn describe(analysis: Option<&Analysis>) -> String {
        match analysis.filter(|a| a.done) {
            Some(a) => format!(", analyzed in {:.2} s ({})", a.seconds, a.why),
            None => String::new(),
        }
    }
}

/// Binary or text COPY: what the plan chose, why, and what happened.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CopyPath {
    /// `binary` or `text`.
    pub planned: String,
    /// Why this plan; for text, what prevents binary.
    pub why: String,
    pub binary_chunks: u64,
    pub text_chunks: u64,
    /// Why the first chunk that fell back from binary to text did.
    pub first_fallback: Option<String>,
    /// Chunks inserted from a staging table (see [`ChunkRecord::staged`]).
    pub staged_chunks: u64,
    /// Every chunk was merged by key from a staging table
    /// (`--on-conflict-do-update`).
    pub merged: bool,
}

impl CopyPath {
    /// `binary COPY`, `binary COPY (2 chunks as text, the first for a.csv
    /// record 7: why)`, `text COPY (why)`.
    fn describe(&self) -> String {
        let format = match (self.planned.as_str(), self.text_chunks) {
            ("binary", 0) => "binary COPY".into(),
            ("binary", n) => match &self.first_fallback {
                Some(why) => format!("binary COPY ({n} chunk{} as text, the first for {why})", plural(n)),
                None => format!("binary COPY ({n} chunk{} as text)", plural(n)),
            },
            _ => format!("text COPY ({})", self.why),
        };
        let chunks = self.binary_chunks + self.text_chunks;
        const MERGED: &str = "merged by key from a temporary table (INSERT ... ON CONFLICT DO UPDATE)";
        match self.staged_chunks {
            n if self.merged && n == chunks => format!("{format}, {MERGED}"),
            0 if self.merged => format!("{format}, straight into the table: no record's key was held or repeated"),
            n if self.merged => format!(
                "{format}, {n} chunk{} of {chunks} {MERGED}, the others straight into the table (no key held)",
                plural(n)
            ),
            0 => format,
            n => format!(
                "{format}, {n} chunk{} staged (most of their keys held: inserted from a temporary table, ON CONFLICT DO NOTHING)",
                plural(n)
            ),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct LoadReport {
    pub summary: Summary,
    pub per_file: Vec<FileSummary>,
    pub chunks: Vec<ChunkRecord>,
    /// Things the user should know that did not stop the load.
    pub warnings: Vec<String>,
}

impl Summary {
    /// ` in 72 batches` when small inputs shared batches, else nothing.
    fn batches_part(&self) -> String {
        match self.batches {
            n if n >= self.chunks => String::new(),
            1 => " in 1 batch".to_string(),
            n => format!(" in {} batches", thousands(n)),
        }
    }
}

impl LoadReport {
    /// `loaded 10,000,000 rows (395.0 MB, 1 file) into public.t in 3.12 s:
    /// 3.21 M rows/s, 126.6 MB/s, 2 workers, 24 chunks`
    pub fn summary_line(&self) -> String {
        let s = &self.summary;
        let replaced = match s.replaced {
            Some(n) if n > 0 => format!(", {} of them replacing the row with their key", thousands(n)),
            _ => String::new(),
        };
        let mut not_loaded = match s.rejected {
            0 => String::new(),
            n => format!(", rejected {}", thousands(n)),
        };
        if s.suppressed > 0 {
            not_loaded.push_str(&format!(", {} taken by a trigger that returned NULL", thousands(s.suppressed)));
        }
        if s.skipped > 0 {
            let keys = if s.skipped == 1 { "key" } else { "keys" };
            not_loaded.push_str(&format!(", skipped {} duplicate {keys}", thousands(s.skipped)));
        }
        format!(
            "loaded {} row{}{replaced}{not_loaded} ({}, {} file{}) into {} in {:.2} s: {} rows/s, {:.1} MB/s, {} worker{}, {} chunk{}, {}{}{}",
            thousands(s.rows_loaded),
            plural(s.rows_loaded),
            human_bytes(s.bytes),
            s.files,
            plural(s.files as u64),
            s.table,
            s.wall_seconds,
            human_count(s.rows_per_sec),
            s.mb_per_sec,
            s.workers,
            plural(s.workers as u64).to_string()
                + &s.workers_chosen.as_ref().map(|c| format!(" ({c})")).unwrap_or_default(),
            s.chunks,
            plural(s.chunks).to_string() + &s.batches_part(),
            s.copy.describe() + &s.connection.describe(),
            s.deferred.describe(),
            Analysis::describe(s.analysis.as_ref()),
        )
    }

    /// Where the server's time went: what the loading sessions, then the
    /// sessions that built the deferred indexes, were doing, each with the
    /// hint for its largest wait (indented), when there were samples.
    pub fn wait_lines(&self) -> Vec<String> {
        let s = &self.summary;
        [("server sessions", &s.server_waits), ("index builds", &s.deferred.rebuild_waits)]
            .into_iter()
            .flat_map(|(sessions, waits)| {
                waits.describe(sessions).into_iter().chain(waits.hint.iter().map(|h| format!("  {h}")))
            })
            .collect()
    }

    /// Why records were rejected: a line for each of the commonest kinds
    /// (indented, most records first), with the first record of each, and
    /// one for the rest. Empty when nothing was rejected.
    pub fn reject_lines(&self) -> Vec<String> {
        reject_lines(&self.summary.reject_reasons)
    }

    /// Writes the JSON report to `path` and the chart next to it
    /// (`path` with the extension `.html`).
    pub fn write_json(&self, path: &Path) -> std::io::Result<()> {
        let file = std::fs::File::create(path)?;
        serde_json::to_writer_pretty(std::io::BufWriter::new(file), self)?;
        std::fs::write(path.with_extension("html"), crate::chart::html(self))
    }
}

/// Fails unless sluice can write `what` (the report, rejects) at `path`,
/// the file `flag` names. Checked before a load starts, so that an
/// hour-long load does not end unable to write its report or rejects.
pub fn ensure_writable(path: &Path, what: &str, flag: &str) -> Result<(), crate::error::Error> {
    can_write(path).map_err(|e| cannot_write(path, what, flag, &e))
}

fn cannot_write(path: &Path, what: &str, flag: &str, e: &std::io::Error) -> crate::error::Error {
    crate::error::Error::Input {
        file: path.display().to_string(),
        message: format!("cannot write {what} there: {e}; name a writable file with {flag}"),
    }
}

/// As [`ensure_writable`], and a pipe, terminal or device that may be
/// written is taken too (`--rejects /dev/stderr`, `--rejects >(gzip >
/// r.gz)`): checked by its permissions, not by opening it, because closing
/// the only writer of a named pipe would end its reader's input.
pub fn ensure_writable_or_stream(path: &Path, what: &str, flag: &str) -> Result<(), crate::error::Error> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() && !meta.is_dir() => {
            may_write(path).map_err(|e| cannot_write(path, what, flag, &e))
        }
        _ => ensure_writable(path, what, flag),
    }
}

/// Whether this process may write `path`, by its permissions (access(2)).
fn may_write(path: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: `name` is a NUL-terminated string that outlives the call.
    match unsafe { libc::access(name.as_ptr(), libc::W_OK) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Whether a file can be written at `path`: its folder exists and takes new
/// files, and a file already there may be replaced.
fn can_write(path: &Path) -> std::io::Result<()> {
    if path.is_dir() {
        return Err(std::io::Error::other("it is a folder"));
    }
    if path.exists() {
        std::fs::OpenOptions::new().append(true).open(path)?;
    }
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !folder.is_dir() {
        return Err(std::io::Error::other(format!("there is no folder {}", folder.display())));
    }
    let refused = |e: std::io::Error| {
        let kind = std::io::Error::from(e.kind());
        std::io::Error::new(e.kind(), format!("{kind} when creating a file in {}", folder.display()))
    };
    tempfile::Builder::new().prefix(".sluice-check-").tempfile_in(folder).map(drop).map_err(refused)
}

/// `s` unless `n` is 1.
pub fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// See [`LoadReport::reject_lines`]; also for `sluice status --job`.
pub fn reject_lines(reasons: &crate::rejects::RejectReasons) -> Vec<String> {
    const SHOWN: usize = 5;
    let mut lines: Vec<String> = reasons.kinds.iter().take(SHOWN).map(reject_kind_line).collect();
    let rest = &reasons.kinds[reasons.kinds.len().min(SHOWN)..];
    let rest_records = rest.iter().map(|k| k.records).sum::<u64>() + reasons.other_records;
    if rest_records > 0 {
        let reasons = match (rest.len(), reasons.other_records) {
            (1, 0) => "another reason".to_string(),
            (n, 0) => format!("{n} other reasons"),
            _ => "other reasons".to_string(),
        };
        lines.push(format!("  {} for {reasons}: see the rejects file", count_of(rest_records, "record")));
    }
    lines
}

/// `  3 records, column "d": invalid input syntax for type date: "x"
/// (the first: orders.csv line 8)`.
fn reject_kind_line(kind: &crate::rejects::RejectKind) -> String {
    let column = match &kind.column {
        Some(column) if !kind.reason.starts_with("column ") => format!(", column {}", crate::sql::quote_ident(column)),
        _ => String::new(),
    };
    let first = if kind.records == 1 { "" } else { "the first: " };
    format!(
        "  {}{column}: {} ({first}{} line {})",
        count_of(kind.records, "record"),
        kind.reason,
        kind.file,
        thousands(kind.line)
    )
}

/// `1 record`, `12,345 records`.
pub fn count_of(n: u64, noun: &str) -> String {
    format!("{} {noun}{}", thousands(n), plural(n))
}

/// `12345678` → `12,345,678`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Decimal units, as rates are quoted: `395.0 MB`.
pub fn human_bytes(n: u64) -> String {
    let n = n as f64;
    match n {
        n if n >= 1e9 => format!("{:.2} GB", n / 1e9),
        n if n >= 1e6 => format!("{:.1} MB", n / 1e6),
        n if n >= 1e3 => format!("{:.1} kB", n / 1e3),
        n => format!("{n} B"),
    }
}

/// `3210000.0` → `3.21 M`.
pub fn human_count(n: f64) -> String {
    match n {
        n if n >= 1e6 => format!("{:.2} M", n / 1e6),
        n if n >= 1e3 => format!("{:.1} k", n / 1e3),
        n => format!("{n:.0}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_numbers() {
        assert_eq!(thousands(12345678), "12,345,678");
        assert_eq!(thousands(999), "999");
        assert_eq!(human_bytes(395_000_000), "395.0 MB");
        assert_eq!(human_count(3_210_000.0), "3.21 M");
    }

    #[test]
    fn a_stopped_load_names_what_stays_dropped_and_unlogged() {
        let mut deferral = Deferral::default();
        assert!(deferral.left_undone().is_empty());
        deferral.still_dropped = vec![r#"index "a""#.into()];
        assert_eq!(
            deferral.left_undone(),
            [r#"index "a" stays dropped until the same command runs again and builds it"#]
        );
        deferral.still_dropped.extend([r#"primary key "t_pkey""#.into(), r#"foreign key "f""#.into()]);
        deferral.still_unlogged = true;
        let lines = deferral.left_undone();
        assert!(
            lines[0].starts_with(r#"index "a", primary key "t_pkey" and foreign key "f" stay dropped"#),
            "{lines:?}"
        );
        assert!(lines[1].starts_with("the table stays unlogged"), "{lines:?}");
    }
}
