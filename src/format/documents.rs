//! JSON lines into typed columns: each document's keys name the columns its
//! values go to.
//!
//! Each line is turned into one line of PostgreSQL's text format as it is
//! read ([`DocumentReader`]), before the chunker sees it, so everything
//! after (chunking, binary encoding, suspects, isolation, resume) works on
//! ordinary text-format records, one per input line: line and record
//! numbers stay those of the input. A string value goes as its text, a
//! number or `true`/`false` as written, an object or array as its JSON, a
//! `null` as NULL, a missing key as its column's default
//! ([`DocumentColumns::missing`]); a json or jsonb column gets every
//! value as JSON (a string with its quotes), and an array column a JSON
//! array as an array literal (see [`array_literal`]). A line that is not a JSON
//! object, has a key twice, a key no loaded column has (unless the columns
//! were named with `--columns`, which leaves other keys out), or a value
//! with `\u0000` (text cannot hold it), or that is longer than
//! `--max-record-size` ([`CutLine`]), is passed on as a marked line
//! ([`DOC_MARK`], then the reason), which isolation rejects on the client.
//! The input lines are kept for the chunker ([`OriginalLines`]), so the
//! rejects file shows each rejected document as it was in the input.
//!
//! Why our own: this is the edge the peers lack (a document per row into
//! one column is all psql, pgloader and timescaledb-parallel-copy do; DuckDB
//! types JSON but writes to PostgreSQL on one stream). The parsing itself is
//! serde_json's, borrowing each value's text (`RawValue`), so a document
//! costs one pass and no tree.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Read};
use std::sync::{Arc, Mutex};

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::convert::Conversion;
use crate::rejects::RUNAWAY_KEPT;

/// The first byte of a line that stands for a document that could not be
/// read, followed by the reason. UTF-8 never has it, so no converted
/// record can start with it.
pub const DOC_MARK: u8 = 0xFD;

/// The UTF-8 byte order mark some writers put first.
pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The field written for a missing key whose column's default changes
/// (`now()`, a sequence): the worker replaces each with a value
/// the server computes for it, in the chunk's transaction, before anything
/// else reads the chunk (see `load::defaults`). No value is ever written
/// so: the conversion writes a value's backslash as `\\`.
pub const DEFAULT_MARK: &[u8] = b"\\D";

/// How much input the reader takes at a time.
const READ_SIZE: usize = 1 << 20;

/// Which key goes to which loaded column.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DocumentColumns {
    /// The COPY's columns, in order.
    pub columns: Vec<String>,
    /// Each column's key in the documents.
    pub keys: Vec<String>,
    /// How each column takes its key's values.
    pub kinds: Vec<ColumnKind>,
    /// Keys no loaded column has are left out (the columns were named, or
    /// `--skip-other-fields`), instead of rejecting the document.
    pub other_keys_left_out: bool,
    /// The first documents' keys that name no column, left out by
    /// `--skip-other-fields`, with the line of each one's first document:
    /// said when the load starts.
    pub keys_left_out: Vec<(String, u64)>,
    /// No input holds a document to take the keys from (an export of no
    /// rows): the columns are the table's, and nothing is said of them.
    pub no_documents: bool,
    /// The table's columns that no key of the first documents named, when
    /// the columns were taken from those keys: a later document's key that
    /// names one is rejected with the `--columns` that loads it.
    pub unloaded: Vec<String>,
    /// What each column gets from a document without its key, as a field
    /// of the text format: `\N`, the column's default when it is a
    /// constant, or [`DEFAULT_MARK`] (see `load::defaults`). Why not always NULL: documents
    /// written before a field existed leave it out, and the table's
    /// `NOT NULL DEFAULT 'new'` would otherwise reject each of them.
    pub missing: Vec<Vec<u8>>,
    /// The columns whose missing keys are [`DEFAULT_MARK`]s, with the SQL
    /// that computes one of their values.
    pub computed: Vec<ComputedDefault>,
    /// How each column's values are converted (see
    /// [`super::convert`]), or none: strings by any conversion, numbers
    /// as Unix times only (a JSON number's point is a decimal point).
    pub conversions: Vec<Option<Conversion>>,
}

/// A column whose default the server computes in each chunk's
/// transaction, for documents without its key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComputedDefault {
    /// The column's index in [`DocumentColumns::columns`].
    pub column: usize,
    /// An expression giving one value of the default (`now()`,
    /// `nextval('t_id_seq'::regclass)`).
    pub expression: String,
    /// Whether its value changes from row to row (a sequence), not only
    /// from transaction to transaction (`now()`), which is computed once.
    pub per_row: bool,
}

impl DocumentColumns {
    /// `(column, key, kind)` for each loaded column.
    pub fn new(pairs: Vec<(String, String, ColumnKind)>, other_keys_left_out: bool) -> DocumentColumns {
        let mut columns = DocumentColumns { other_keys_left_out, ..DocumentColumns::default() };
        for (column, key, kind) in pairs {
            columns.columns.push(column);
            columns.keys.push(key);
            columns.kinds.push(kind);
            columns.missing.push(b"\\N".to_vec());
        }
        columns
    }

    /// Why a document with `key`, which no loaded column takes, is
    /// rejected, and what loads it: when it names one of the table's
    /// [`Self::unloaded`] columns (as a header's field does, case and all
    /// but letters and digits aside), the first documents had no such key,
    /// and `--columns` naming it too loads it.
    fn unloaded_key(&self, key: &str) -> String {
        let wanted = crate::sql::folded_name(key);
        let loaded = self.keys.join(", ");
        let names_it = |column: &&String| !wanted.is_empty() && crate::sql::folded_name(column) == wanted;
        let Some(column) = self.unloaded.iter().find(names_it) else {
            return format!(
                "the document has the key \"{key}\", which is not one of the loaded columns ({loaded}); to leave \
                 such keys out, pass --skip-other-fields (or name the columns to load with --columns)"
            );
        };
        let as_named = self.columns.iter().zip(&self.keys).all(|(c, k)| c == k) && column == key;
        let columns = match as_named {
            true => format!("--columns {},{key}", self.keys.join(",")),
            false => "--columns, each loaded from the key of its name".to_string(),
        };
        format!(
            "the document has the key \"{key}\", which names column \"{column}\" of the table, but the documents \
             at the start of the input have no such key, so the loaded columns are theirs ({loaded}); to load it, \
             name the columns with {columns} (or leave such keys out with --skip-other-fields)"
        )
    }

    /// Makes a document without the key of column `index` load a value of
    /// `expression`, computed by the server in the chunk's transaction, for
    /// that document when `per_row` ([`DEFAULT_MARK`] until then).
    pub fn compute(&mut self, index: usize, expression: String, per_row: bool) {
        self.missing[index] = DEFAULT_MARK.to_vec();
        self.computed.push(ComputedDefault { column: index, expression, per_row });
    }

    /// Makes a document without the key of column `index` load `text`
    /// into it (as the column's input reads it), not NULL.
    pub fn set_missing(&mut self, index: usize, text: &str) {
        let mut field = Vec::with_capacity(text.len());
        escape_text(text.as_bytes(), &mut field);
        self.missing[index] = field;
    }

    /// The column of `key`, looked for first at `likely` (documents
    /// mostly have their keys in one order): a few comparisons, where a
    /// hash map's hashing took 7 % of the conversion.
    fn position(&self, key: &str, likely: usize) -> Option<usize> {
        match self.keys.get(likely) {
            Some(k) if k == key => Some(likely),
            _ => self.keys.iter().position(|k| k == key),
        }
    }
}

/// How a column takes its key's values, from the column's type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColumnKind {
    /// A string as its text, anything else as written.
    #[default]
    Plain,
    /// smallint, integer or bigint: as [`ColumnKind::Plain`], but a number
    /// written with a fraction of zeros (`3.0`) as the integer it is.
    /// Why: JSON has one number type, and writers such as pandas write an
    /// integer column that has a missing value as floats, which the
    /// server's integer input refuses.
    Integer,
    /// json or jsonb: every value as JSON.
    Json,
    /// An array: a JSON array as an array literal, nested arrays as its
    /// dimensions.
    Array,
    /// An array of smallint, integer or bigint: as [`ColumnKind::Array`],
    /// each whole number as in [`ColumnKind::Integer`].
    IntegerArray,
    /// An array of json or jsonb: a JSON array as an array literal whose
    /// elements are each one JSON value (nested arrays included: a column
    /// of JSON arrays is likelier than a two-dimensional array of JSON).
    JsonArray,
}

impl ColumnKind {
    fn is_array(self) -> bool {
        matches!(self, ColumnKind::Array | ColumnKind::IntegerArray | ColumnKind::JsonArray)
    }

    /// The kind of a column of SQL type `ty` (as `format_type` writes it:
    /// `integer[]`, `jsonb[]`).
    pub fn of_type(ty: &str) -> ColumnKind {
        let json = |t: &str| t == "json" || t == "jsonb";
        let integer = |t: &str| matches!(t, "smallint" | "integer" | "bigint");
        match ty.strip_suffix("[]") {
            Some(element) if json(element) => ColumnKind::JsonArray,
            Some(element) if integer(element) => ColumnKind::IntegerArray,
            Some(_) => ColumnKind::Array,
            None if json(ty) => ColumnKind::Json,
            None if integer(ty) => ColumnKind::Integer,
            None => ColumnKind::Plain,
        }
    }
}

/// Where a document's values are while it is read: for each loaded
/// column, its value's byte range in the line. Kept by the reader so that
/// nothing is allocated per line.
#[derive(Debug, Default)]
pub struct Workspace {
    values: Vec<Option<(usize, usize)>>,
    /// An array literal, before it is escaped for the text format.
    literal: Vec<u8>,
}

/// Appends `line` (without its line end) as a text-format record with its
/// newline, or returns why it cannot be loaded (nothing appended).
pub fn convert_line(
    line: &[u8],
    columns: &DocumentColumns,
    work: &mut Workspace,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Err("an empty line, not a JSON document".into());
    }
    // Checked once here (SIMD), so serde_json reads the line as a `str`
    // and does not check each string again.
    let line = simdutf8::compat::from_utf8(line).map_err(|e| {
        format!(
            "invalid UTF-8 at byte {} of the document; is the file in another encoding (--encoding)?",
            e.valid_up_to()
        )
    })?;
    work.values.clear();
    work.values.resize(columns.columns.len(), None);
    let mut problem = None;
    let mut de = serde_json::Deserializer::from_str(line);
    let slots = Slots { columns, line, values: &mut work.values, problem: &mut problem };
    let read = slots.deserialize(&mut de).and_then(|_| de.end());
    if let Some(problem) = problem {
        return Err(problem);
    }
    read.map_err(|e| not_a_document(&e))?;
    let start = out.len();
    for (i, value) in work.values.iter().enumerate() {
        if i > 0 {
            out.push(b'\t');
        }
        let kind = columns.kinds[i];
        let written = match value.map(|(from, to)| &line[from..to]) {
            None => {
                out.extend_from_slice(&columns.missing[i]);
                Ok(())
            }
            Some("null") => {
                out.extend_from_slice(b"\\N");
                Ok(())
            }
            Some(raw) if raw.starts_with('[') && kind.is_array() => {
                work.literal.clear();
                let read = array_literal(raw, kind, &columns.keys[i], &mut work.literal);
                read.map(|()| escape_text(&work.literal, out))
            }
            // JSON as written: inside strings, escapes stay escapes, and
            // between values there may be tabs.
            Some(raw) if kind == ColumnKind::Json || raw.starts_with(['{', '[']) => {
                escape_text(raw.as_bytes(), out);
                Ok(())
            }
            Some(raw) if raw.starts_with('"') => string_text(raw, &columns.keys[i]).and_then(|text| {
                let converted = match columns.conversions.get(i).copied().flatten() {
                    Some(conversion) => converted(conversion, text.as_bytes(), &columns.keys[i], &mut work.literal)?,
                    None => false,
                };
                match (converted, text) {
                    (true, _) => out.extend_from_slice(&work.literal),
                    (false, Cow::Borrowed(text)) => out.extend_from_slice(text.as_bytes()),
                    (false, Cow::Owned(text)) => escape_text(text.as_bytes(), out),
                }
                Ok(())
            }),
            // A number, true or false: nothing to escape.
            Some(raw) => {
                let raw = if kind == ColumnKind::Integer { whole_number(raw) } else { raw };
                let time = columns.conversions.get(i).copied().flatten().filter(|c| c.converts_numbers());
                let converted = time.map(|time| converted(time, raw.as_bytes(), &columns.keys[i], &mut work.literal));
                match converted {
                    Some(Err(why)) => Err(why),
                    Some(Ok(true)) => {
                        out.extend_from_slice(&work.literal);
                        Ok(())
                    }
                    _ => {
                        out.extend_from_slice(raw.as_bytes());
                        Ok(())
                    }
                }
            }
        };
        if let Err(reason) = written {
            out.truncate(start);
            return Err(reason);
        }
    }
    out.push(b'\n');
    Ok(())
}

/// Whether `conversion` rewrote `value` (into `into`, emptied first, as
/// the text format writes it), or why the value of `key` fits it not.
fn converted(conversion: Conversion, value: &[u8], key: &str, into: &mut Vec<u8>) -> Result<bool, String> {
    into.clear();
    conversion.apply(value, into).map_err(|why| format!("key \"{key}\": {why}"))
}

/// The values of `keys` in the documents `head` holds whole, each with its
/// key's index, as written (a string without its quotes): for the checks
/// before the load (see [`super::convert::wrong_unit`]).
pub fn values_in(head: &[u8], keys: &[&str]) -> Vec<(usize, Vec<u8>)> {
    let documents = head
        .split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice::<std::collections::HashMap<String, Box<RawValue>>>(line).ok());
    let mut values = Vec::new();
    for mut document in documents {
        for (i, key) in keys.iter().enumerate() {
            let Some(raw) = document.remove(*key) else { continue };
            let raw = raw.get();
            values
                .push((i, raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')).unwrap_or(raw).as_bytes().to_vec()));
        }
    }
    values
}

/// The text-format record a document (`line`, its line end included or
/// not) becomes, or `None` when it cannot be loaded.
pub fn text_record(line: &[u8], columns: &DocumentColumns) -> Option<Vec<u8>> {
    let line = super::without_line_end(line);
    let mut record = Vec::with_capacity(line.len() + 1);
    convert_line(line, columns, &mut Workspace::default(), &mut record).ok()?;
    Some(record)
}

/// A JSON string's text. Without a backslash it is its text as written,
/// which JSON keeps free of control characters, so nothing is decoded (nor,
/// for the text format, escaped).
fn string_text<'r>(raw: &'r str, key: &str) -> Result<Cow<'r, str>, String> {
    let inner = &raw[1..raw.len() - 1];
    if memchr::memchr(b'\\', inner.as_bytes()).is_none() {
        return Ok(Cow::Borrowed(inner));
    }
    let text = serde_json::from_str::<String>(raw).map_err(|e| not_a_document(&e))?;
    if text.contains('\0') {
        return Err(format!("the value of key \"{key}\" holds \\u0000, which PostgreSQL cannot store in text"));
    }
    Ok(Cow::Owned(text))
}

/// A JSON number whose fraction is all zeros without it (`-3.00` is
/// `-3`); any other value as it is.
fn whole_number(raw: &str) -> &str {
    match raw.split_once('.') {
        Some((whole, fraction)) if !fraction.is_empty() && fraction.bytes().all(|b| b == b'0') => whole,
        _ => raw,
    }
}

/// A JSON array (`raw`) as a PostgreSQL array literal, into `out`:
/// `[1,null,"a \"b\"",[2]]` is `{1,NULL,"a \"b\"",{2}}`. Strings are
/// quoted, so `"NULL"` and `"a,b"` stay strings; a nested array is a
/// dimension (the server refuses sub-arrays of unequal lengths); an object
/// is its JSON, quoted; a whole number into integers as in
/// [`ColumnKind::Integer`]. Into json or jsonb elements each element but
/// `null` is its JSON, quoted. Why not leave the array as JSON: `[1,2]` is
/// no array literal, so every row with an array was rejected.
fn array_literal(raw: &str, kind: ColumnKind, key: &str, out: &mut Vec<u8>) -> Result<(), String> {
    let elements: Vec<&RawValue> = serde_json::from_str(raw).map_err(|e| not_a_document(&e))?;
    out.push(b'{');
    for (n, element) in elements.iter().map(|e| e.get()).enumerate() {
        if n > 0 {
            out.push(b',');
        }
        match element.as_bytes()[0] {
            _ if element == "null" => out.extend_from_slice(b"NULL"),
            _ if kind == ColumnKind::JsonArray => quoted_element(element, out),
            b'[' => array_literal(element, kind, key, out)?,
            b'"' => quoted_element(&string_text(element, key)?, out),
            b'{' => quoted_element(element, out),
            _ if kind == ColumnKind::IntegerArray => out.extend_from_slice(whole_number(element).as_bytes()),
            _ => out.extend_from_slice(element.as_bytes()),
        }
    }
    out.push(b'}');
    Ok(())
}

/// An array element in double quotes, its quotes and backslashes escaped.
fn quoted_element(text: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in text.as_bytes() {
        if b == b'"' || b == b'\\' {
            out.push(b'\\');
        }
        out.push(b);
    }
    out.push(b'"');
}

/// serde_json's reason, with the column in the line (a document is one
/// line, so "line 1" says nothing).
fn not_a_document(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let reason = text.rfind(" at line ").map_or(text.as_str(), |at| &text[..at]);
    format!("not a JSON document: {reason} at column {}", e.column())
}

/// `bytes` as a text-format field: backslash, tab, newline and carriage
/// return escaped.
pub fn escape_text(bytes: &[u8], out: &mut Vec<u8>) {
    let mut rest = bytes;
    while let Some(at) = rest.iter().position(|b| matches!(b, b'\\' | b'\t' | b'\n' | b'\r')) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(match rest[at] {
            b'\\' => b"\\\\",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            _ => b"\\r",
        });
        rest = &rest[at + 1..];
    }
    out.extend_from_slice(rest);
}

/// Reads one document's object into the loaded columns' slots.
struct Slots<'c> {
    columns: &'c DocumentColumns,
    /// The line, to tell where in it each value is.
    line: &'c str,
    values: &'c mut Vec<Option<(usize, usize)>>,
    /// Why the document is refused, when it is for its keys (serde's own
    /// error would add a position to our reason).
    problem: &'c mut Option<String>,
}

impl<'de> DeserializeSeed<'de> for Slots<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Slots<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut next = 0;
        while let Some(Key(key)) = map.next_key()? {
            match self.columns.position(&key, next) {
                Some(i) if self.values[i].is_some() => {
                    *self.problem = Some(format!("the document has the key \"{key}\" twice"));
                    return Err(de::Error::custom("key twice"));
                }
                Some(i) => {
                    let raw: &RawValue = map.next_value()?;
                    let from = raw.get().as_ptr() as usize - self.line.as_ptr() as usize;
                    self.values[i] = Some((from, from + raw.get().len()));
                    next = i + 1;
                }
                None if self.columns.other_keys_left_out => {
                    map.next_value::<IgnoredAny>()?;
                }
                None => {
                    *self.problem = Some(self.columns.unloaded_key(&key));
                    return Err(de::Error::custom("unknown key"));
                }
            }
        }
        Ok(())
    }
}

/// An object key, borrowed from the line unless it has escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// The keys of the documents in `head` (whole lines only), in the order
/// they first appear, each with the 1-based line it first appears on.
/// Lines that are not JSON objects are passed over: they will be rejected.
pub fn keys_in(head: &[u8]) -> Vec<(String, u64)> {
    let head = head.strip_prefix(BOM).unwrap_or(head);
    let mut keys: Vec<(String, u64)> = Vec::new();
    for (n, line) in head.split(|&b| b == b'\n').enumerate() {
        let Ok(found) = serde_json::from_slice::<KeyList>(line) else { continue };
        for key in found.0 {
            if !keys.iter().any(|(k, _)| *k == key) {
                keys.push((key, n as u64 + 1));
            }
        }
    }
    keys
}

/// Whether the first line of `head` that holds anything is a JSON array
/// whose first element is an object: an array of documents on one line,
/// perhaps. Not an array of other values (`[1, 2]`): as the first line of
/// JSON lines, a bad line, which read as values made a document cut short
/// on a later line swallow the rest of the input and stop the load.
pub fn arrays_in(head: &[u8]) -> bool {
    let head = head.strip_prefix(BOM).unwrap_or(head);
    let mut lines = head.split(|&b| b == b'\n').map(<[u8]>::trim_ascii).filter(|l| !l.is_empty());
    lines.next().is_some_and(|line| {
        let first = line.strip_prefix(b"[").map(<[u8]>::trim_ascii_start);
        first.is_some_and(|first| first.starts_with(b"{")) && serde_json::from_slice::<IgnoredAny>(line).is_ok()
    })
}

/// An object's keys in their order, its values skipped.
struct KeyList(Vec<String>);

impl<'de> de::Deserialize<'de> for KeyList {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor;
        impl<'de> Visitor<'de> for ListVisitor {
            type Value = KeyList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<KeyList, A::Error> {
                let mut keys = Vec::new();
                while let Some(Key(key)) = map.next_key()? {
                    map.next_value::<IgnoredAny>()?;
                    keys.push(key.into_owned());
                }
                Ok(KeyList(keys))
            }
        }
        deserializer.deserialize_map(ListVisitor)
    }
}

/// The input lines converted so far and not yet given to a chunk, shared
/// by the reader (which adds them) and the feeder (which takes each
/// chunk's). Holds what the chunker has read ahead: a block or so.
#[derive(Clone, Debug, Default)]
pub struct OriginalLines(Arc<Mutex<Pending>>);

#[derive(Debug, Default)]
struct Pending {
    bytes: Vec<u8>,
    /// Input offset of `bytes[0]`.
    offset: u64,
    /// The lines cut short (see [`OriginalText::cut`]) in `bytes`.
    cut: Vec<(usize, u64)>,
}

/// A chunk's records as they were in the input, and where they start in it:
/// its lines, for documents read into columns; its records, for records
/// rewritten with some of their fields (see [`super::pick`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OriginalText {
    pub offset: u64,
    /// Documents: each line with a line feed at its end (the input's last
    /// line gets one if it had none). Rewritten records: the chunk's bytes.
    pub bytes: Vec<u8>,
    /// Rewritten records: where each starts in `bytes` and the line ends
    /// before it, then the end. Empty for documents, one to a line.
    pub records: Vec<(usize, u64)>,
    /// Documents: the lines longer than `--max-record-size`, which `bytes`
    /// holds only the first [`RUNAWAY_KEPT`] bytes of (and a line feed):
    /// where each starts in `bytes`, and how many of its bytes were left out.
    pub cut: Vec<(usize, u64)>,
}

impl OriginalLines {
    /// The input's lines before `offset` are not read (a file loaded from
    /// where earlier jobs ended): the lines it holds start there.
    pub fn begin_at(&self, offset: u64) {
        let mut pending = self.0.lock().unwrap_or_else(|e| e.into_inner());
        pending.offset = offset;
    }

    fn push(&self, lines: &[u8], skipped: u64) {
        let mut pending = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if pending.bytes.is_empty() {
            pending.offset += skipped;
        }
        pending.bytes.extend_from_slice(lines);
    }

    /// Adds a line cut short: its first bytes (`kept`, a line feed added)
    /// and how many more it had.
    fn push_cut(&self, kept: &[u8], left_out: u64) {
        let mut pending = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let at = pending.bytes.len();
        pending.cut.push((at, left_out));
        pending.bytes.extend_from_slice(kept);
        pending.bytes.push(b'\n');
    }

    /// The next `lines` lines.
    pub fn take(&self, lines: u64) -> OriginalText {
        let mut pending = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let end = match lines {
            0 => 0,
            n => {
                memchr::memchr_iter(b'\n', &pending.bytes).nth(n as usize - 1).map_or(pending.bytes.len(), |at| at + 1)
            }
        };
        let offset = pending.offset;
        let taken = pending.cut.iter().take_while(|(at, _)| *at < end).count();
        let cut: Vec<(usize, u64)> = pending.cut.drain(..taken).collect();
        pending.offset += end as u64 + cut.iter().map(|(_, left_out)| left_out).sum::<u64>();
        for (at, _) in &mut pending.cut {
            *at -= end;
        }
        OriginalText { offset, bytes: pending.bytes.drain(..end).collect(), records: Vec::new(), cut }
    }
}

impl OriginalText {
    /// Rewritten record `index` (from 0) as it was in the input, its offset
    /// there and the line ends in the chunk before it; `None` for documents.
    pub fn record(&self, index: usize) -> Option<(&[u8], u64, u64)> {
        let (&(start, lines), &(end, _)) = (self.records.get(index)?, self.records.get(index + 1)?);
        Some((&self.bytes[start..end], self.offset + start as u64, lines))
    }

    /// Line `index` (from 0) and its offset in the input.
    pub fn line(&self, starts: &[usize], index: usize) -> Option<(&[u8], u64)> {
        let (start, end) = (*starts.get(index)?, *starts.get(index + 1)?);
        let before: u64 = self.cut.iter().filter(|(at, _)| *at < start).map(|(_, left_out)| left_out).sum();
        Some((&self.bytes[start..end], self.offset + start as u64 + before))
    }

    /// The length in the input of line `index` when it was cut short.
    pub fn cut_line_length(&self, starts: &[usize], index: usize) -> Option<u64> {
        let (start, end) = (*starts.get(index)?, *starts.get(index + 1)?);
        let (_, left_out) = self.cut.iter().find(|(at, _)| *at == start)?;
        Some((end - start) as u64 + left_out)
    }

    /// Where each line starts, and the end.
    pub fn line_starts(&self) -> Vec<usize> {
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', &self.bytes).map(|at| at + 1));
        if self.bytes.last().is_some_and(|&b| b != b'\n') {
            starts.push(self.bytes.len());
        }
        starts
    }
}

/// Turns JSON lines into text-format lines as it is read (see the module
/// doc).
pub struct DocumentReader<R> {
    inner: R,
    columns: Arc<DocumentColumns>,
    /// Input not yet converted (an incomplete last line).
    input: Vec<u8>,
    out: Vec<u8>,
    out_at: usize,
    ended: bool,
    started: bool,
    originals: Option<OriginalLines>,
    /// The longest line taken, `--max-record-size`.
    max_line: u64,
    /// A line longer than `max_line` being read past (see [`CutLine`]).
    cutting: Option<CutLine>,
    work: Workspace,
}

/// A line longer than `--max-record-size`: rejected, its first
/// [`RUNAWAY_KEPT`] bytes kept for the rejects file, the rest read past to
/// its end. Why not stop the load, as it did: one such line (a document
/// with a huge array) lost the whole file, as in the field report where one
/// bad line rejected a file of a million; and memory stays bounded however
/// long it is.
struct CutLine {
    kept: Vec<u8>,
    /// Its bytes so far, its line end included.
    length: u64,
}

impl<R: Read> DocumentReader<R> {
    pub fn new(inner: R, columns: Arc<DocumentColumns>, max_line: u64, originals: Option<OriginalLines>) -> Self {
        DocumentReader {
            inner,
            columns,
            input: Vec::new(),
            out: Vec::new(),
            out_at: 0,
            ended: false,
            started: false,
            originals,
            max_line,
            cutting: None,
            work: Workspace::default(),
        }
    }

    /// Converts the next complete lines into `out`; false at the end.
    fn refill(&mut self) -> io::Result<bool> {
        self.out.clear();
        self.out_at = 0;
        while self.out.is_empty() {
            if self.ended && self.input.is_empty() {
                return Ok(false);
            }
            if !self.ended {
                let had = self.input.len();
                self.input.resize(had + READ_SIZE, 0);
                let n = read_some(&mut self.inner, &mut self.input[had..])?;
                self.input.truncate(had + n);
                self.ended = n == 0;
            }
            self.convert_lines()?;
        }
        Ok(true)
    }

    fn convert_lines(&mut self) -> io::Result<()> {
        let mut skipped = 0;
        if !self.started && (self.input.len() >= BOM.len() || self.ended) {
            self.started = true;
            if self.input.starts_with(BOM) {
                // Passed on for the chunker to strip (and report).
                self.out.extend_from_slice(BOM);
                self.input.drain(..BOM.len());
                skipped = BOM.len() as u64;
            }
        }
        if !self.started {
            return Ok(());
        }
        let mut from = self.read_past_cut_line();
        let mut consumed = from;
        while self.cutting.is_none() {
            let line_end = memchr::memchr(b'\n', &self.input[consumed..]).map(|at| consumed + at);
            if line_end.unwrap_or(self.input.len()) - consumed > self.max_line as usize {
                // Complete or not: read past it.
                self.keep_originals(from..consumed, &mut skipped);
                self.input.drain(..consumed);
                self.cutting = Some(CutLine { kept: Vec::new(), length: 0 });
                from = self.read_past_cut_line();
                consumed = from;
                continue;
            }
            let Some(end) = line_end else { break };
            self.convert_or_mark(consumed, end);
            consumed = end + 1;
        }
        if self.cutting.is_some() {
            return Ok(());
        }
        if self.ended && consumed < self.input.len() {
            self.convert_or_mark(consumed, self.input.len());
            // The input's last line, given a line end (see `OriginalText`).
            self.input.push(b'\n');
            consumed = self.input.len();
        }
        self.keep_originals(from..consumed, &mut skipped);
        self.input.drain(..consumed);
        Ok(())
    }

    /// Keeps `input[lines]` for the chunker (see [`OriginalLines`]); the
    /// bytes `skipped` before them (a BOM) count once.
    fn keep_originals(&self, lines: std::ops::Range<usize>, skipped: &mut u64) {
        if let Some(originals) = &self.originals {
            originals.push(&self.input[lines], std::mem::take(skipped));
        }
    }

    /// Reads on to the end of a line cut short, from the input's start, if
    /// one is being read: at its end (or the input's), passes on its mark
    /// and returns where the input after it starts; else returns 0 (all
    /// input consumed while still inside it, or no such line).
    fn read_past_cut_line(&mut self) -> usize {
        let Some(cut) = &mut self.cutting else { return 0 };
        let (end, ends) = match memchr::memchr(b'\n', &self.input) {
            Some(at) => (at + 1, true),
            None => (self.input.len(), self.ended),
        };
        cut.length += end as u64;
        let room = (RUNAWAY_KEPT as usize).saturating_sub(cut.kept.len());
        let line = &self.input[..end];
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        cut.kept.extend_from_slice(&line[..line.len().min(room)]);
        if !ends {
            self.input.clear();
            return 0;
        }
        let CutLine { kept, length } = self.cutting.take().expect("a line being cut");
        self.out.push(DOC_MARK);
        self.out.extend_from_slice(
            format!(
                "the line is longer than --max-record-size ({} bytes): {length} bytes, of which the rejects file \
                 holds the first {}; it can load only with a larger --max-record-size",
                self.max_line,
                kept.len()
            )
            .as_bytes(),
        );
        self.out.push(b'\n');
        if let Some(originals) = &self.originals {
            originals.push_cut(&kept, length.saturating_sub(kept.len() as u64 + 1));
        }
        end
    }

    /// Converts the line at `input[from..to]` (its line end at `to`), or
    /// passes on a marked line saying why not.
    fn convert_or_mark(&mut self, from: usize, to: usize) {
        let line = &self.input[from..to];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Err(reason) = convert_line(line, &self.columns, &mut self.work, &mut self.out) {
            self.out.push(DOC_MARK);
            self.out.extend(reason.bytes().map(|b| if b.is_ascii_control() { b' ' } else { b }));
            self.out.push(b'\n');
        }
    }
}

fn read_some(inner: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match inner.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

impl<R: Read> Read for DocumentReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.out_at == self.out.len() && !self.refill()? {
            return Ok(0);
        }
        let n = buf.len().min(self.out.len() - self.out_at);
        buf[..n].copy_from_slice(&self.out[self.out_at..self.out_at + n]);
        self.out_at += n;
        Ok(n)
    }
}

/// The reason a marked line (see [`DOC_MARK`]) carries.
pub fn marked_reason(record: &[u8]) -> Option<String> {
    let rest = record.strip_prefix(&[DOC_MARK])?;
    let rest = rest.strip_suffix(b"\n").unwrap_or(rest);
    Some(String::from_utf8_lossy(rest).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::Trickle;

    fn columns(left_out: bool) -> DocumentColumns {
        let pair = |c: &str, kind| (c.to_string(), c.to_string(), kind);
        let pairs = vec![pair("id", ColumnKind::Plain), pair("name", ColumnKind::Plain), pair("doc", ColumnKind::Json)];
        DocumentColumns::new(pairs, left_out)
    }

    fn converted(line: &str, left_out: bool) -> Result<String, String> {
        converted_into(line, &columns(left_out))
    }

    fn converted_into(line: &str, columns: &DocumentColumns) -> Result<String, String> {
        let mut out = Vec::new();
        let mut work = Workspace::default();
        convert_line(line.as_bytes(), columns, &mut work, &mut out).map(|()| String::from_utf8(out).unwrap())
    }

    #[test]
    fn arrays_go_to_array_columns_as_array_literals() {
        let kinds = [("a", "integer[]"), ("j", "jsonb[]"), ("t", "text")];
        let pairs = kinds.iter().map(|(c, ty)| (c.to_string(), c.to_string(), ColumnKind::of_type(ty))).collect();
        let columns = DocumentColumns::new(pairs, false);
        let convert = |line: &str| converted_into(line, &columns);
        let fields = [
            r#"{1,NULL,"NULL","a,\\"b\\\\c\td","{\\"k\\":1}",{}}"#,
            r#"{"{\\"k\\":\\"v\\"}","\\"s\\"","[1]",NULL,"2"}"#,
            "[1]",
        ];
        assert_eq!(
            convert(
                r#"{"a":[1, null, "NULL", "a,\"b\\c\td", {"k":1}, []],"j":[{"k":"v"}, "s", [1], null, 2],"t":[1]}"#
            ),
            Ok(fields.join("\t") + "\n")
        );
        assert_eq!(convert(r#"{"a":[[1,2],[3,4]]}"#).unwrap(), "{{1,2},{3,4}}\t\\N\t\\N\n", "dimensions");
        assert_eq!(convert(r#"{"a":"{5,6}"}"#).unwrap(), "{5,6}\t\\N\t\\N\n", "a string as its text");
        let reason = convert(r#"{"a":[["x\u0000"]]}"#).unwrap_err();
        assert!(reason.contains("key \"a\" holds \\u0000"), "{reason}");
    }

    #[test]
    fn converted_columns_take_strings_by_any_conversion_and_numbers_as_unix_times_only() {
        use crate::format::convert::{TimeColumn, TimeUnit};
        let pair = |c: &str| (c.to_string(), c.to_string(), ColumnKind::Plain);
        let mut columns = DocumentColumns::new(vec![pair("price"), pair("at")], false);
        let time = Conversion::UnixTime { unit: TimeUnit::Milliseconds, into: TimeColumn::TimestampTz };
        columns.conversions = vec![Some(Conversion::DECIMAL_COMMA), Some(time)];
        let line = r#"{"price":"1.234,5","at":1706702400123}"#;
        assert_eq!(converted_into(line, &columns).unwrap(), "1234.5\t2024-01-31 12:00:00.123+00\n");
        // A JSON number's point is a decimal point; a date stays a date.
        let line = r#"{"price":2.5,"at":"2024-01-31"}"#;
        assert_eq!(converted_into(line, &columns).unwrap(), "2.5\t2024-01-31\n");
        assert_eq!(
            converted_into(r#"{"price":null,"at":"17067024001\u0032\u0033"}"#, &columns).unwrap(),
            "\\N\t2024-01-31 12:00:00.123+00\n"
        );
        let refused = converted_into(r#"{"price":"2.5","at":1}"#, &columns).unwrap_err();
        assert!(refused.starts_with("key \"price\": \"2.5\" is no number as --decimal-comma reads them"), "{refused}");
    }

    #[test]
    fn whole_numbers_written_as_decimals_go_to_integer_columns_as_integers() {
        let whole = DocumentColumns::new(vec![("n".into(), "n".into(), ColumnKind::of_type("bigint"))], false);
        let convert = |line: &str| converted_into(line, &whole);
        assert_eq!(convert(r#"{"n":-3.00}"#), Ok("-3\n".into()), "a whole number written as a decimal");
        for kept in ["3.5", "3.0e2", "1e3", "true", "30"] {
            assert_eq!(convert(&format!(r#"{{"n":{kept}}}"#)), Ok(format!("{kept}\n")), "as written");
        }
        let whole = DocumentColumns::new(vec![("n".into(), "n".into(), ColumnKind::of_type("smallint[]"))], false);
        assert_eq!(converted_into(r#"{"n":[[1.0,-2.00],[3.5,4]]}"#, &whole), Ok("{{1,-2},{3.5,4}}\n".into()));
    }

    #[test]
    fn values_go_to_their_keys_columns_as_the_text_format_writes_them() {
        assert_eq!(
            converted(r#"{"name":"a\tb\\c\nd","id":7,"doc":{"k":[1,"x"]}}"#, false).unwrap(),
            "7\ta\\tb\\\\c\\nd\t{\"k\":[1,\"x\"]}\n"
        );
        assert_eq!(
            converted(r#"{"id":null,"doc":"s"}"#, false).unwrap(),
            "\\N\t\\N\t\"s\"\n",
            "null and missing: NULL"
        );
        assert_eq!(converted(r#"{"id":1.5e3,"name":true}"#, false).unwrap(), "1.5e3\ttrue\t\\N\n");
        assert_eq!(converted(r#"{"name":"\u00e9\\N"}"#, false).unwrap(), "\\N\té\\\\N\t\\N\n", "not the NULL string");
        assert_eq!(converted(r#"{"doc":"a\tb"}"#, false).unwrap(), "\\N\t\\N\t\"a\\\\tb\"\n", "JSON as written");
    }

    #[test]
    fn a_missing_key_loads_its_columns_default_and_null_loads_null() {
        let mut with_default = columns(false);
        with_default.set_missing(1, "new\tone\\");
        let convert = |line: &str| converted_into(line, &with_default);
        assert_eq!(convert(r#"{"id":1}"#).unwrap(), "1\tnew\\tone\\\\\t\\N\n", "missing: the default, escaped");
        assert_eq!(convert(r#"{"id":1,"name":null}"#).unwrap(), "1\t\\N\t\\N\n", "null: NULL");
        assert_eq!(convert(r#"{"name":"x"}"#).unwrap(), "\\N\tx\t\\N\n", "no default: NULL");
    }

    #[test]
    fn documents_that_cannot_be_loaded_say_why() {
        let reason = |line: &str| converted(line, false).unwrap_err();
        assert!(reason(r#"{"id":1,"extra":2}"#).contains("key \"extra\", which is not one of the loaded columns"));
        assert_eq!(converted(r#"{"id":1,"extra":{"x":2}}"#, true).unwrap(), "1\t\\N\t\\N\n", "named columns: left out");
        assert!(reason(r#"{"id":1,"id":2}"#).contains("key \"id\" twice"));
        assert!(reason(r#"{"name":"a\u0000"}"#).contains("\\u0000"));
        assert_eq!(reason(r#"{"id":1"#), "not a JSON document: EOF while parsing an object at column 7");
        assert!(reason("[1,2]").starts_with("not a JSON document: invalid type: sequence, expected an object"));
        assert!(reason(r#"{"id":1} x"#).contains("trailing characters at column 10"));
        assert_eq!(reason("  "), "an empty line, not a JSON document");
    }

    /// What the reader gives for `data` read `piece` bytes at a time, with
    /// a longest line of 1,000 bytes, and the originals it kept.
    fn read_in_pieces(data: &str, piece: usize) -> (Vec<u8>, OriginalLines) {
        let originals = OriginalLines::default();
        let mut reader = DocumentReader::new(
            Trickle { data: data.as_bytes(), piece },
            Arc::new(columns(false)),
            1000,
            Some(originals.clone()),
        );
        let mut out = Vec::new();
        reader.read_to_end(&mut out).unwrap();
        (out, originals)
    }

    #[test]
    fn the_reader_gives_a_line_per_line_and_keeps_the_originals() {
        let input = "\u{feff}{\"id\":1}\r\nnot json\n\n{\"id\":2,\"name\":\"x\"}";
        for piece in [1, 3, 1 << 20] {
            let (out, originals) = read_in_pieces(input, piece);
            let lines: Vec<&[u8]> = out.split(|&b| b == b'\n').collect();
            assert_eq!(lines[0], b"\xEF\xBB\xBF1\t\\N\t\\N");
            assert_eq!(marked_reason(lines[1]).unwrap(), "not a JSON document: expected ident at column 2");
            assert_eq!(marked_reason(lines[2]).unwrap(), "an empty line, not a JSON document");
            assert_eq!(lines[3..], [b"2\tx\t\\N".as_slice(), b""]);
            let first = originals.take(2);
            assert_eq!((first.offset, first.bytes.as_slice()), (3, b"{\"id\":1}\r\nnot json\n".as_slice()));
            let rest = originals.take(2);
            assert_eq!((rest.offset, rest.bytes.as_slice()), (22, b"\n{\"id\":2,\"name\":\"x\"}\n".as_slice()));
            let starts = rest.line_starts();
            assert_eq!(rest.line(&starts, 1), Some((b"{\"id\":2,\"name\":\"x\"}\n".as_slice(), 23)));
        }
    }

    /// A line longer than the longest record is one marked line, read
    /// past however it arrives; the lines after it keep their offsets.
    #[test]
    fn a_line_past_the_longest_record_is_marked_and_read_past() {
        let long = format!("{{\"name\":\"{}\"}}\n", "x".repeat(5000));
        for (piece, tail) in [(100, "{\"id\":2}\n"), (7000, "{\"id\":2}"), (100, ""), (3, "{\"id\":2}\n")] {
            let (out, originals) = read_in_pieces(&format!("{{\"id\":1}}\n{long}{tail}"), piece);
            let lines: Vec<&[u8]> = out.split(|&b| b == b'\n').collect();
            assert_eq!(lines[0], b"1\t\\N\t\\N");
            let reason = marked_reason(lines[1]).unwrap();
            assert_eq!(
                reason,
                "the line is longer than --max-record-size (1000 bytes): 5012 bytes, of which the rejects file holds \
                 the first 5011; it can load only with a larger --max-record-size"
            );
            let text = originals.take(if tail.is_empty() { 2 } else { 3 });
            let starts = text.line_starts();
            assert_eq!(text.line(&starts, 1), Some((long.as_bytes(), 9)));
            assert_eq!(text.cut_line_length(&starts, 1), Some(5012));
            assert_eq!(text.cut_line_length(&starts, 0), None);
            if !tail.is_empty() {
                assert_eq!(lines[2], b"2\t\\N\t\\N", "piece {piece}");
                assert_eq!(text.line(&starts, 2).map(|(_, at)| at), Some(9 + 5012));
            }
        }
    }

    #[test]
    fn a_line_holding_an_array_is_told() {
        assert!(arrays_in(b"\n[{\"a\":1},{\"a\":2}]\n[]\n") && !arrays_in(b"{\"a\":[1]}\n") && !arrays_in(b"[1,\n"));
        assert!(!arrays_in(b"[1, 2]\n{\"a\":1}\n") && !arrays_in(b"[]\n{\"a\":1}\n"), "no documents in the array");
    }

    #[test]
    fn keys_are_listed_in_the_order_they_first_appear() {
        let head = b"{\"b\":1,\"a\":{\"x\":1}}\nbad\n{\"c\":2,\"a\":3}\n{\"d\":";
        assert_eq!(keys_in(head), [("b".to_string(), 1), ("a".to_string(), 1), ("c".to_string(), 3)]);
    }
}
