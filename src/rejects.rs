//! Rejected records: what was refused, where it was, and why.
//!
//! Why our own: quarantine is sluice's edge. Peers drop whole batches
//! (timescaledb-parallel-copy), abort on the first bad byte (pgloader, COPY)
//! or keep no file at all. Here every refused record is written as one JSON
//! object per line, so a person can read it, a program can parse it, and the
//! fixed records can be fed back to `sluice load`.
//!
//! Format (stable; fields are only ever added):
//!
//! ```text
//! {"file":"orders.csv","line":1851,"byte":9482213,"record":1843,
//!  "reason":"invalid input syntax for type integer: \"12a\"","sqlstate":"22P02",
//!  "column":"qty","raw":"1843,12a,...\n"}
//! ```
//!
//! `line` is the 1-based physical line where the record starts (counting a
//! header), `byte` its offset in the (decompressed) input, `record` its 1-based
//! data record number. `raw` holds the record's bytes, terminator included,
//! when they are valid UTF-8; otherwise `raw_base64` holds them, losslessly.
//! A record past `--max-record-size` is the one exception: `raw` holds its
//! first [`RUNAWAY_KEPT`] bytes and `raw_length` its length.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use base64::Engine;
use serde::Serialize;

use crate::error::Position;
use crate::sql::copy_text_value;

mod reasons;
pub use reasons::{ReasonTally, RejectKind, RejectReasons};

/// One rejected record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Reject {
    pub file: String,
    pub line: u64,
    pub byte: u64,
    pub record: u64,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sqlstate: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub column: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub raw: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub raw_base64: Option<String>,
    /// The record's length when `raw` holds only its beginning.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub raw_length: Option<u64>,
}

/// How much of a record past `--max-record-size` its reject keeps. Why not
/// all: such a record cannot load as it is, and a line of 300 MB took 3 GB
/// of memory on its way to the rejects file and table (hex, escaped, as
/// JSON); its beginning says what it is, its byte offset where it is.
pub const RUNAWAY_KEPT: u64 = 1 << 20;

impl Reject {
    pub fn new(position: Position, reason: String, raw: &[u8]) -> Self {
        let (raw, raw_base64) = match std::str::from_utf8(raw) {
            Ok(text) => (Some(text.to_string()), None),
            Err(_) => (None, Some(base64::engine::general_purpose::STANDARD.encode(raw))),
        };
        Reject {
            file: position.file,
            line: position.line,
            byte: position.byte,
            record: position.record,
            reason,
            sqlstate: None,
            column: None,
            raw,
            raw_base64,
            raw_length: None,
        }
    }

    /// The record's bytes, decoded from whichever field holds them.
    pub fn raw_bytes(&self) -> Vec<u8> {
        match (&self.raw, &self.raw_base64) {
            (Some(text), _) => text.as_bytes().to_vec(),
            (None, Some(b64)) => base64::engine::general_purpose::STANDARD.decode(b64).unwrap_or_default(),
            (None, None) => Vec::new(),
        }
    }
}

/// Which rejects [`write_records`] writes: those whose reason holds
/// `reason` and whose column is `column`, when given.
#[derive(Clone, Debug, Default)]
pub struct RecordFilter {
    pub reason: Option<String>,
    pub column: Option<String>,
}

impl RecordFilter {
    fn takes(&self, reject: &Reject) -> bool {
        self.reason.as_ref().map_or(true, |text| reject.reason.contains(text.as_str()))
            && self.column.as_ref().map_or(true, |column| reject.column.as_ref() == Some(column))
    }
}

/// Writes the records of a rejects file (`name`, read from `input`) to
/// `out` as they were in the input, one after another, in the file's
/// order: fixed, or loaded with the option they wanted (`--decimal-comma`,
/// `--encoding`), they go back to `sluice load -` with the first load's
/// format flags. A record without its line end (a file's last) gets one.
/// Returns how many were written. Streams: memory stays that of one line.
pub fn write_records(
    name: &str,
    input: impl std::io::BufRead,
    filter: &RecordFilter,
    out: &mut impl Write,
) -> Result<Written, crate::Error> {
    let mut written = Written::default();
    for (index, line) in input.lines().enumerate() {
        let not_read = |e: String| crate::Error::Input {
            file: name.to_string(),
            message: format!("line {}: {e}; is it a rejects file sluice wrote?", index + 1),
        };
        let line = line.map_err(|e| not_read(e.to_string()))?;
        if line.trim().is_empty() {
            continue;
        }
        let reject: Reject = serde_json::from_str(&line).map_err(|e| not_read(e.to_string()))?;
        if !filter.takes(&reject) {
            continue;
        }
        if let Some(length) = reject.raw_length {
            written.cut_short.get_or_insert_with(|| (reject.to_string(), length));
            written.left_out += 1;
            continue;
        }
        let record = reject.raw_bytes();
        let wrote = out.write_all(&record).and_then(|()| match record.last() {
            Some(b'\n' | b'\r') | None => Ok(()),
            Some(_) => out.write_all(b"\n"),
        });
        wrote.map_err(|e| crate::Error::Input { file: "standard output".into(), message: e.to_string() })?;
        written.records += 1;
        written.reasons.add(&reject);
    }
    Ok(written)
}

/// What [`write_records`] wrote, and what it left out.
#[derive(Debug, Default, PartialEq)]
pub struct Written {
    pub records: u64,
    /// Records past `--max-record-size`, of which the file holds only the
    /// beginning: written, they would load as rows cut short.
    pub left_out: u64,
    /// The first of them, and its length.
    pub cut_short: Option<(String, u64)>,
    /// Why the records written were rejected, by kind.
    pub reasons: ReasonTally,
}

impl std::fmt::Display for Reject {
    /// `orders.csv: line 1851 (record 1843, byte 9482213): column "qty":
    /// invalid input syntax for type integer: "12a" [22P02]`
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: line {} (record {}, byte {}): ", self.file, self.line, self.record, self.byte)?;
        if let Some(column) = &self.column {
            write!(f, "column \"{column}\": ")?;
        }
        write!(f, "{}", self.reason)?;
        if let Some(code) = &self.sqlstate {
            write!(f, " [{code}]")?;
        }
        Ok(())
    }
}

/// The table that keeps rejected records in the target database, created
/// when missing. Rows are tagged with the job that rejected them.
/// In the schema `ledger::CREATE_SCHEMA` makes. The index serves every read
/// (a job's rejects, or those of one chunk): the table keeps the rejects of
/// every job ever loaded into the database, and without it each read scanned
/// them all (a job's 4 rejects among 400,000 of other jobs: 288 ms, against
/// 2.5 ms by the index). On `job` alone: it costs each reject 2.7 µs of the
/// server's time, against 5 µs for `(job, file, byte)`, which would spare
/// only the sort of one job's rejects.
pub const CREATE_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS sluice.rejects (job text NOT NULL, target_table text NOT NULL, \
     file text NOT NULL, line bigint NOT NULL, byte bigint NOT NULL, record bigint NOT NULL, \
     reason text NOT NULL, sqlstate text, column_name text, raw bytea NOT NULL, \
     rejected_at timestamptz NOT NULL DEFAULT now(), seq bigint, raw_length bigint); \
     CREATE INDEX IF NOT EXISTS rejects_job ON sluice.rejects (job)";

/// Whether the rejects table has its index, or the current role could not
/// add it (it does not own the table: an administrator made it).
pub const HAS_INDEX_SQL: &str = "(to_regclass('sluice.rejects_job') IS NOT NULL OR NOT pg_has_role(\
     (SELECT relowner FROM pg_catalog.pg_class WHERE oid = to_regclass('sluice.rejects')), 'USAGE'))";

pub const COPY_INTO_TABLE: &str = "COPY sluice.rejects (job, target_table, file, line, byte, record, reason, \
     sqlstate, column_name, raw, seq, raw_length) FROM STDIN";

/// The rejects of chunk `seq` as rows of PostgreSQL's text COPY format for
/// [`COPY_INTO_TABLE`]. The chunk's number is stored with them because
/// their `byte` is not always within the chunk's bytes: JSON lines loaded
/// into typed columns are chunked as the shorter lines they are converted
/// to, and rejected as the documents they were.
pub fn copy_text(rejects: &[Reject], job: &str, table: &str, seq: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for r in rejects {
        let raw = hex(&r.raw_bytes());
        let fields = [
            Some(job.to_string()),
            Some(table.to_string()),
            Some(r.file.clone()),
            Some(r.line.to_string()),
            Some(r.byte.to_string()),
            Some(r.record.to_string()),
            Some(r.reason.clone()),
            r.sqlstate.clone(),
            r.column.clone(),
            Some(format!("\\x{raw}")),
            Some(seq.to_string()),
            r.raw_length.map(|length| length.to_string()),
        ];
        let line: Vec<String> =
            fields.iter().map(|f| f.as_deref().map_or("\\N".to_string(), copy_text_value)).collect();
        out.extend_from_slice(line.join("\t").as_bytes());
        out.push(b'\n');
    }
    out
}

/// Lower-case hex digits of `bytes`, two a byte, for bytea's `\x` input.
/// Written a byte at a time: a `format!` per byte allocated a string each,
/// a twelfth of sluice's CPU on a file with 143,000 rejects.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(2 * bytes.len());
    for &b in bytes {
        text.push(DIGITS[usize::from(b >> 4)] as char);
        text.push(DIGITS[usize::from(b & 15)] as char);
    }
    text
}

/// The columns [`Reject::from_row`] reads, in its order: one list for every
/// query that reads rejects back.
macro_rules! read_back {
    () => {
        "SELECT file, line, byte, record, reason, sqlstate, column_name, encode(raw, 'hex'), raw_length \
         FROM sluice.rejects"
    };
}

/// Every reject `job` committed, in input order (by file name, byte by
/// byte as [`RejectsFile`] compares them, then position), for writing the file.
pub fn select_for_job(job: &str) -> String {
    format!("{} WHERE job = {} ORDER BY file COLLATE \"C\", byte", read_back!(), crate::sql::quote_literal(job))
}

/// What a job's rejects were, by kind (see [`ReasonTally`]), read from
/// the rejects it committed without their records' bytes: for `sluice
/// status --job`, while it runs too.
pub fn reasons_of_job(session: &crate::sink::postgres::PgSession, job: &str) -> Result<RejectReasons, crate::Error> {
    let select = format!(
        "SELECT file, line, byte, record, reason, sqlstate, column_name FROM sluice.rejects WHERE job = {}",
        crate::sql::quote_literal(job)
    );
    let mut tally = ReasonTally::default();
    session.each_row(&select, |row| {
        tally.add(&Reject::from_row(row));
        Ok(())
    })?;
    Ok(tally.summed_up())
}

/// The rejects a job committed for chunk `$2`: stored with its number, or,
/// by an older sluice, within its byte range `$4..$5` of file `$3`.
pub const SELECT_FOR_CHUNK: &str = concat!(
    read_back!(),
    " WHERE job = $1 AND (seq = $2::bigint OR seq IS NULL AND file = $3 AND byte >= $4::bigint \
     AND byte < $5::bigint) ORDER BY byte"
);

impl Reject {
    /// A reject from a row of [`select_for_job`] or [`SELECT_FOR_CHUNK`].
    pub fn from_row(row: &[Option<String>]) -> Reject {
        let text = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        let num = |i: usize| text(i).parse().unwrap_or(0);
        let hex = row.get(7).and_then(|v| v.as_deref()).unwrap_or_default();
        // Borrowed and read once: a reject may hold a record of many MB.
        let raw: Vec<u8> = hex
            .as_bytes()
            .chunks_exact(2)
            .filter_map(|pair| std::str::from_utf8(pair).ok().and_then(|p| u8::from_str_radix(p, 16).ok()))
            .collect();
        let position = Position { file: text(0), line: num(1), byte: num(2), record: num(3) };
        let mut reject = Reject::new(position, text(4), &raw);
        reject.sqlstate = row.get(5).cloned().flatten();
        reject.column = row.get(6).cloned().flatten();
        reject.raw_length = row.get(8).and_then(|v| v.as_deref()?.parse().ok());
        reject
    }
}

/// A name next to `path` for a file that replaces it once complete, of
/// this process alone.
pub fn partial_path(path: &Path) -> PathBuf {
    let mut partial = path.as_os_str().to_owned();
    partial.push(format!(".partial-{}", std::process::id()));
    PathBuf::from(partial)
}

/// When the rejects file at `path` holds the rejects of a load of other
/// inputs (its first reject names a file none of `inputs` is), moves it
/// aside, to a name with its modification time, and returns that name
/// and the file it names. Why: the default path is the table's, whatever
/// the input, so loading a second file into the table replaced the first
/// one's rejects without a word. A file of this load's inputs is the same
/// job's, or a load of it again: replaced, as before.
fn keep_another_loads(path: &Path, inputs: &[String]) -> Option<(PathBuf, String)> {
    let meta = std::fs::symlink_metadata(path).ok().filter(|m| m.is_file() && m.len() > 0)?;
    let mut first = String::new();
    BufReader::new(File::open(path).ok()?).take(RUNAWAY_KEPT * 8).read_line(&mut first).ok()?;
    let reject: serde_json::Value = serde_json::from_str(&first).ok()?;
    let file = reject.get("file")?.as_str()?;
    if inputs.iter().any(|input| input == file) {
        return None;
    }
    let stamp = humantime::format_rfc3339_seconds(meta.modified().ok()?).to_string().replace(':', "-");
    let name = path.file_name()?.to_string_lossy();
    let kept_name = match name.strip_suffix(".jsonl") {
        Some(stem) => format!("{stem}.{stamp}.jsonl"),
        None => format!("{name}.{stamp}"),
    };
    let kept = path.with_file_name(kept_name);
    (!kept.exists() && std::fs::rename(path, &kept).is_ok()).then(|| (kept, file.to_string()))
}

/// Appends rejects to a JSON-lines file, created on the first reject.
///
/// Workers commit chunks in the order they finish them, so a load with
/// rejects in several chunks writes them out of input order. The file keeps
/// where each run of rejects in input order lies, so that a finished job's
/// file can be put in order by copying its runs in their order: each byte
/// moved once, with memory for one entry per chunk with rejects, not per
/// reject, and nothing asked of the server.
#[derive(Debug)]
pub struct RejectsFile {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    written: u64,
    /// The bytes written so far.
    bytes: u64,
    /// One per chunk: chunks hold disjoint ranges of the input, so their
    /// runs can be sorted as wholes.
    runs: Vec<Run>,
    /// The next reject starts a run (it is a new chunk's).
    new_run: bool,
    /// Whether each run came after the one before it in input order.
    in_order: bool,
    /// One reject's JSON line, reused.
    line: Vec<u8>,
    /// The load's inputs, when a file at the path that holds another
    /// load's rejects is to be moved aside before the first reject (see
    /// [`keep_another_loads`]).
    keep_others: Option<Vec<String>>,
    /// Where such a file was moved, and the input its first reject names.
    kept: Option<(PathBuf, String)>,
    /// The records written, counted by why they were rejected.
    reasons: ReasonTally,
}

/// Rejects in input order, one after another in the file.
#[derive(Debug)]
struct Run {
    first: (String, u64),
    last: (String, u64),
    start: u64,
    len: u64,
}

/// Where a reject comes in input order: by file name (its bytes, as
/// [`select_for_job`] sorts them), then byte.
fn input_order(reject: &Reject) -> (&str, u64) {
    (reject.file.as_str(), reject.byte)
}

impl RejectsFile {
    pub fn new(path: &Path) -> Self {
        RejectsFile {
            path: path.to_path_buf(),
            out: None,
            written: 0,
            bytes: 0,
            runs: Vec::new(),
            new_run: true,
            in_order: true,
            line: Vec::new(),
            keep_others: None,
            kept: None,
            reasons: ReasonTally::default(),
        }
    }

    /// Moves aside a file at the path that holds the rejects of a load of
    /// other inputs than `inputs` before writing the first reject (see
    /// [`keep_another_loads`]): a load that rejects nothing leaves it.
    pub fn keeping_other_loads(mut self, inputs: Vec<String>) -> Self {
        self.keep_others = Some(inputs);
        self
    }

    /// Where another load's rejects were moved, and the input they are of.
    pub fn kept_aside(&self) -> Option<&(PathBuf, String)> {
        self.kept.as_ref()
    }

    /// Before the file is first written or replaced: see
    /// [`keeping_other_loads`](Self::keeping_other_loads).
    pub fn move_other_loads_aside(&mut self) {
        if let Some(inputs) = self.keep_others.take() {
            self.kept = keep_another_loads(&self.path, &inputs);
        }
    }

    /// Takes over what `earlier`, the file this one replaces, moved aside
    /// (moving it now if it was still to be).
    pub fn kept_by(mut self, earlier: &mut RejectsFile) -> Self {
        earlier.move_other_loads_aside();
        self.kept = earlier.kept.take();
        self
    }

    /// Whether the file may be replaced by one in input order: a plain file.
    /// Not a pipe, a terminal or a link (`--rejects /dev/stderr`, a link
    /// whatever stderr is, must stay a link): those get the rejects as they
    /// come.
    pub fn replaceable(&self) -> bool {
        std::fs::symlink_metadata(&self.path).map_or(true, |m| m.is_file())
    }

    /// Whether the rejects were written in input order.
    pub fn in_input_order(&self) -> bool {
        self.in_order
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn written(&self) -> u64 {
        self.written
    }

    /// Why the records written were rejected, by kind.
    pub fn reasons(&self) -> &ReasonTally {
        &self.reasons
    }

    /// Writes one chunk's rejects, in input order.
    pub fn write_all(&mut self, rejects: &[Reject]) -> std::io::Result<()> {
        let mut sorted: Vec<&Reject> = rejects.iter().collect();
        sorted.sort_by(|a, b| input_order(a).cmp(&input_order(b)));
        self.new_run = true;
        sorted.into_iter().try_for_each(|reject| self.write(reject))
    }

    pub fn write(&mut self, reject: &Reject) -> std::io::Result<()> {
        if self.out.is_none() {
            self.move_other_loads_aside();
            self.out = Some(BufWriter::new(File::create(&self.path)?));
        }
        let out = self.out.as_mut().expect("opened above");
        self.line.clear();
        serde_json::to_writer(&mut self.line, reject)?;
        self.line.push(b'\n');
        out.write_all(&self.line)?;
        self.written += 1;
        self.reasons.add(reject);
        self.add_to_runs(input_order(reject), self.line.len() as u64);
        Ok(())
    }

    /// Counts the `len` bytes just written, of the reject at `key`, in the
    /// current run, or in a new one when it starts a chunk or comes before
    /// the run's last reject.
    fn add_to_runs(&mut self, key: (&str, u64), len: u64) {
        let after_last = self.runs.last().map(|run| (run.last.0.as_str(), run.last.1) <= key);
        match self.runs.last_mut() {
            Some(run) if !self.new_run && after_last == Some(true) => {
                if run.last.0 != key.0 {
                    run.last.0 = key.0.to_string();
                }
                run.last.1 = key.1;
                run.len += len;
            }
            _ => {
                self.in_order &= after_last != Some(false);
                let key = (key.0.to_string(), key.1);
                self.runs.push(Run { first: key.clone(), last: key, start: self.bytes, len });
            }
        }
        self.new_run = false;
        self.bytes += len;
    }

    /// Puts the file in input order by copying its runs, in their order, to
    /// a new file that then replaces it. Returns false, leaving the file as
    /// it is, when runs overlap (a batch of small files whose names, in
    /// bytes, sort around another chunk's file): then the caller asks the
    /// database. Only for a [replaceable](Self::replaceable) file.
    pub fn put_in_input_order(&mut self) -> std::io::Result<bool> {
        self.flush()?;
        if self.in_input_order() {
            return Ok(true);
        }
        let mut order: Vec<&Run> = self.runs.iter().collect();
        order.sort_by(|a, b| a.first.cmp(&b.first));
        if order.windows(2).any(|pair| pair[0].last > pair[1].first) {
            return Ok(false);
        }
        let partial = partial_path(&self.path);
        let mut from = File::open(&self.path)?;
        let mut to = BufWriter::new(File::create(&partial)?);
        for run in &order {
            from.seek(SeekFrom::Start(run.start))?;
            std::io::copy(&mut (&mut from).take(run.len), &mut to)?;
        }
        to.into_inner().map_err(|e| e.into_error())?.sync_data()?;
        std::fs::rename(&partial, &self.path)?;
        let whole =
            Run { first: order[0].first.clone(), last: order[order.len() - 1].last.clone(), start: 0, len: self.bytes };
        (self.runs, self.in_order) = (vec![whole], true);
        self.out = Some(BufWriter::new(std::fs::OpenOptions::new().append(true).open(&self.path)?));
        Ok(true)
    }

    /// Closes the file and renames it to `to` (replacing what is there);
    /// with nothing written, removes `to` instead.
    pub fn move_to(&mut self, to: &Path) -> std::io::Result<()> {
        self.flush()?;
        self.out = None;
        match self.written {
            0 => match std::fs::remove_file(to) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            },
            _ => std::fs::rename(&self.path, to)?,
        }
        self.path = to.to_path_buf();
        Ok(())
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        match self.out.as_mut() {
            Some(out) => out.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_back_as_they_were_with_a_line_end_each() {
        let at = |line| Position { file: "a.csv".into(), line, byte: 0, record: line };
        let mut latin = Reject::new(at(2), "bad byte".into(), b"2,caf\xe9\r\n");
        latin.column = Some("name".into());
        let mut runaway = Reject::new(at(4), "too long".into(), b"4,begins");
        runaway.raw_length = Some(9_000_000);
        let rejects = [
            Reject::new(at(1), "x".into(), b"1,\"a\nb\"\n"),
            latin,
            Reject::new(at(3), "x".into(), b"3,last"),
            runaway,
        ];
        let mut file = Vec::new();
        for reject in &rejects {
            file.extend(serde_json::to_vec(reject).unwrap());
            file.push(b'\n');
        }
        let mut out = Vec::new();
        let written = write_records("r", &file[..], &RecordFilter::default(), &mut out).unwrap();
        assert_eq!((written.records, written.left_out), (3, 1), "the record cut short is left out");
        assert_eq!(
            written.cut_short.map(|(first, length)| (first.contains("line 4"), length)),
            Some((true, 9_000_000))
        );
        assert_eq!(out, b"1,\"a\nb\"\n2,caf\xe9\r\n3,last\n");
        let name = RecordFilter { column: Some("name".into()), ..RecordFilter::default() };
        out.clear();
        assert_eq!(write_records("r", &file[..], &name, &mut out).unwrap().records, 1);
        assert_eq!(out, b"2,caf\xe9\r\n");
        let refused = write_records("r", &b"{\"file\":1}\n"[..], &RecordFilter::default(), &mut out).unwrap_err();
        assert!(refused.to_string().contains("line 1: invalid type"), "{refused}");
    }

    #[test]
    fn copy_text_escapes_values_and_hex_encodes_raw() {
        let p = Position { file: "a\tb.csv".into(), line: 3, record: 2, byte: 10 };
        let r = Reject::new(p, "bad\\value\n".into(), b"x\ty\n");
        let text = String::from_utf8(copy_text(&[r], "L1", "public.t", 7)).unwrap();
        assert_eq!(text, "L1\tpublic.t\ta\\tb.csv\t3\t10\t2\tbad\\\\value\\n\t\\N\t\\N\t\\\\x7809790a\t7\t\\N\n");
    }

    #[test]
    fn raw_is_text_when_utf8_and_base64_otherwise() {
        let p = Position { file: "f".into(), line: 3, record: 2, byte: 10 };
        let ok = Reject::new(p.clone(), "r".into(), b"a,b\n");
        assert_eq!(ok.raw.as_deref(), Some("a,b\n"));
        let json = serde_json::to_string(&ok).unwrap();
        assert_eq!(json, r#"{"file":"f","line":3,"byte":10,"record":2,"reason":"r","raw":"a,b\n"}"#);
        let bad = Reject::new(p, "r".into(), b"\xff\xfe,x\n");
        assert_eq!(bad.raw, None);
        assert_eq!(bad.raw_bytes(), b"\xff\xfe,x\n");
    }

    /// A reject read back from the ledger (raw as `encode(raw, 'hex')`)
    /// keeps every byte, however long: an open quote can make a record of
    /// many MB, and reading one back used to copy its hex text per byte.
    #[test]
    fn from_row_decodes_long_raw_records() {
        let raw: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let hex = hex(&raw);
        assert_eq!(hex[..8], *"00010203", "{}", &hex[..8]);
        assert_eq!(hex[2 * 250..2 * 252], *"fa00");
        let row: Vec<Option<String>> =
            ["f.csv", "7", "100", "6", "why", "22P04", "", &hex].iter().map(|v| Some(v.to_string())).collect();
        let reject = Reject::from_row(&row);
        assert_eq!((reject.line, reject.byte, reject.record), (7, 100, 6));
        assert_eq!(reject.sqlstate.as_deref(), Some("22P04"));
        assert_eq!(reject.raw_bytes(), raw);
    }

    fn at(file: &str, byte: u64) -> Reject {
        Reject::new(Position { file: file.into(), line: 1, record: 1, byte }, "r".into(), b"x\n")
    }

    fn places(path: &Path) -> Vec<(String, u64)> {
        let text = std::fs::read_to_string(path).unwrap();
        let read = |line: &str| serde_json::from_str::<serde_json::Value>(line).unwrap();
        text.lines().map(read).map(|r| (r["file"].as_str().unwrap().to_string(), r["byte"].as_u64().unwrap())).collect()
    }

    /// Chunks committed out of order (each chunk's rejects given in any
    /// order) end in input order: by file name, byte by byte, then offset,
    /// what the database's `ORDER BY file COLLATE "C", byte` gives.
    #[test]
    fn rejects_committed_out_of_order_are_put_in_input_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let mut file = RejectsFile::new(&path);
        let chunks = [
            vec![at("b.csv", 50), at("b.csv", 7)],
            vec![at("a.csv", 300), at("a.csv", 200)],
            vec![at("B.csv", 1)],
            vec![at("a.csv", 10), at("a.csv", 99)],
            vec![at("b.csv", 60)],
        ];
        file.write_all(&chunks[0]).unwrap();
        assert!(file.in_input_order(), "one chunk's rejects are sorted");
        for chunk in &chunks[1..] {
            file.write_all(chunk).unwrap();
        }
        assert!(!file.in_input_order());
        assert!(file.put_in_input_order().unwrap());
        let mut want: Vec<(String, u64)> = chunks.iter().flatten().map(|r| (r.file.clone(), r.byte)).collect();
        want.sort();
        assert_eq!(places(&path), want);
        assert_eq!(want[0].0, "B.csv", "bytes, not a locale's order");
        // Rejects written after go after them.
        file.write(&at("c.csv", 0)).unwrap();
        file.flush().unwrap();
        assert_eq!(places(&path).len(), want.len() + 1);
        assert!(file.in_input_order());
        assert!(!dir.path().read_dir().unwrap().any(|e| e.unwrap().file_name().to_string_lossy().contains("partial")));
    }

    /// Runs that overlap cannot be put in order by copying them: the file is
    /// left as it is, and the caller asks the database.
    #[test]
    fn overlapping_runs_are_left_to_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let mut file = RejectsFile::new(&path);
        for reject in [at("a.csv", 10), at("a.csv", 30), at("a.csv", 20), at("a.csv", 40)] {
            file.write(&reject).unwrap();
        }
        assert!(!file.put_in_input_order().unwrap());
        let bytes: Vec<u64> = places(&path).into_iter().map(|(_, byte)| byte).collect();
        assert_eq!(bytes, [10, 30, 20, 40]);
    }

    /// Only a plain file is replaced by one in input order: a link (as
    /// `/dev/stderr` is, to whatever stderr is) or a pipe stays as it is.
    #[test]
    fn only_a_plain_file_is_replaceable() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("r.jsonl");
        assert!(RejectsFile::new(&plain).replaceable(), "not there yet: created plain");
        std::fs::write(&plain, "").unwrap();
        assert!(RejectsFile::new(&plain).replaceable());
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&plain, &link).unwrap();
        assert!(!RejectsFile::new(&link).replaceable());
        assert!(!RejectsFile::new(Path::new("/dev/null")).replaceable());
    }
}
