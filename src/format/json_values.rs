//! JSON that is not JSON lines: one array of documents (`[{...},{...}]`,
//! what `JSON.stringify`, pandas' `to_json(orient="records")` and most
//! `.json` exports write, on one line or pretty-printed), or documents
//! pretty-printed one after another (`jq .`). Each document becomes one
//! line as it is read ([`JsonValues`]), before the chunker sees it, so
//! everything after (chunking, documents into columns, isolation, resume)
//! works on JSON lines.
//!
//! With `--documents-at data`, the documents are the elements of the array
//! at that key of each top-level object (`{"count": 2, "data": [...]}`, as
//! API responses and GeoJSON hold them): every other byte of the object
//! becomes a space ([`Wrapper`]).
//!
//! Why our own: the fix the peers' users reach for, `jq -c '.[]'`, holds the
//! whole array in memory (7 times the size of a 523 MB array) and writes a
//! second copy of it; psql, pgloader and timescaledb-parallel-copy read
//! lines only. This reader looks at each byte once and keeps nothing but
//! the brackets open in the document it is in.
//!
//! Each input byte becomes one output byte, so a document's offset in the
//! lines is its offset in the file (a reject's `byte` is where it begins):
//! the brackets around the array, the commas and the whitespace between
//! documents become spaces, but for the last byte before a document, which
//! becomes the line feed that ends the one before (or the array's closing
//! bracket, after its last document); what follows the last document is
//! left out. A line break inside a document (which JSON allows only
//! between tokens) becomes a space. The lines are the documents, so a
//! reject's `record` is the document's number (`jq '.[N-1]'` shows it);
//! its `line` is the input's line where the document begins, which the
//! reader notes for each line it makes ([`DocumentLines`]), since the
//! chunker counts the lines made.
//!
//! What cannot be read as documents stops the load, naming the file's line
//! and byte: a bracket that closes another kind, a line break inside a
//! string (a quote left out, after which every string is read inside out),
//! an input that ends inside a document or the array, and anything but a
//! comma or the array's end after a document. What is inside a document is
//! the server's (or the conversion's) to judge: a bad value rejects its
//! document alone. Two commas in a row leave an empty line, rejected as
//! one.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::sync::{Arc, Mutex};

use serde::de::IgnoredAny;

use super::documents::BOM;

/// How much input the reader takes at a time.
const READ_SIZE: usize = 1 << 20;

/// The bytes of a document, outside its strings and in them, that the
/// reader looks at: the others pass as they are. Tables, not memchr: most
/// runs between them are a few bytes long (keys, short values), where
/// memchr's set-up costs more than it saves (5 M `sluice gen cname`
/// documents as one array, 523 MB: 1.38 s with tables, 1.71 s with memchr3).
const OUTSIDE_STRINGS: [bool; 256] = byte_set(b"\"{}[]\n\r");
const IN_STRINGS: [bool; 256] = byte_set(b"\"\\\n\r");

const fn byte_set(bytes: &[u8]) -> [bool; 256] {
    let mut table = [false; 256];
    let mut i = 0;
    while i < bytes.len() {
        table[bytes[i] as usize] = true;
        i += 1;
    }
    table
}

/// Whether `head`, the start of a JSON input, is one array of documents or
/// JSON documents written over several lines, rather than JSON lines: its
/// first line holds nothing but an opening `[` or `{`, or its first value
/// ends past its first line, or it is an array whose first element is an
/// object (or an empty one), on a line with nothing after it (or too long for the head, or
/// not JSON: read as values, the place it breaks at is named). An array on
/// each of several lines (batches of documents, or arrays loaded whole into
/// a json column) is JSON lines.
pub fn are_json_values(head: &[u8]) -> bool {
    let head = head.strip_prefix(BOM).unwrap_or(head);
    let Some(start) = head.iter().position(|b| !b.is_ascii_whitespace()) else { return false };
    let body = &head[start..];
    let first_line = body.split(|&b| b == b'\n').next().unwrap_or_default();
    if first_line.iter().all(|b| b"[{".contains(b) || b.is_ascii_whitespace()) {
        return true;
    }
    if first_value_spans_lines(body) {
        return true;
    }
    let after_bracket = body.strip_prefix(b"[").map(<[u8]>::trim_ascii_start);
    if !after_bracket.is_some_and(|after| after.starts_with(b"{") || after.starts_with(b"]")) {
        return false;
    }
    let mut values = serde_json::Deserializer::from_slice(body).into_iter::<IgnoredAny>();
    match values.next() {
        Some(Ok(_)) => body[values.byte_offset()..].trim_ascii().is_empty(),
        _ => true,
    }
}

/// Whether the first value of `body` is an array or object that ends past
/// its first line: pretty-printed, with more than its opening bracket on
/// that line (`{"id": 1,` and the rest below). A first line cut short
/// (`{"a":1` and then the next document) is a bad line, not this.
fn first_value_spans_lines(body: &[u8]) -> bool {
    let Some(first_line) = memchr::memchr(b'\n', body) else { return false };
    let mut values = serde_json::Deserializer::from_slice(body).into_iter::<IgnoredAny>();
    (body.starts_with(b"[") || body.starts_with(b"{"))
        && matches!(values.next(), Some(Ok(_)))
        && values.byte_offset() > first_line
}

/// The keys that lead to an array of objects in `head`'s one document (the
/// first whose first element is an object, looked for three objects deep),
/// joined by dots as `--documents-at` takes them: `data` in
/// `{"count": 2, "data": [{...}, {...}]}`. `None` when `head` (as lines made
/// of documents) holds more than one document, where an array in each is
/// part of its row (an order's items).
pub fn documents_array_in(head: &[u8]) -> Option<String> {
    let head = head.strip_prefix(BOM).unwrap_or(head).trim_ascii_start();
    let mut lines = head.split(|&b| b == b'\n');
    let first = lines.next()?;
    if !first.starts_with(b"{") || lines.any(|line| !line.trim_ascii().is_empty()) {
        return None;
    }
    // The key of each object open, and whether its value is being read.
    let mut keys: Vec<Option<String>> = Vec::new();
    let mut arrays = 0;
    let (mut i, mut key_next) = (0, false);
    while i < first.len() {
        match first[i] {
            b'"' => {
                let end = string_end(&first[i..])?;
                if key_next && arrays == 0 {
                    *keys.last_mut()? = Some(String::from_utf8_lossy(&first[i + 1..i + end - 1]).into_owned());
                }
                i += end;
                continue;
            }
            b'{' if arrays == 0 && keys.len() < 3 => {
                keys.push(None);
                key_next = true;
            }
            b'[' if arrays == 0 && keys.last().is_some_and(Option::is_some) => {
                if first[i + 1..].trim_ascii_start().starts_with(b"{") {
                    let path: Vec<&str> = keys.iter().flatten().map(String::as_str).collect();
                    return Some(path.join("."));
                }
                arrays += 1;
            }
            b'{' | b'[' => arrays += 1,
            b'}' | b']' if arrays > 0 => arrays -= 1,
            b'}' => drop(keys.pop()),
            b',' if arrays == 0 => key_next = true,
            b':' if arrays == 0 => key_next = false,
            _ => {}
        }
        i += 1;
    }
    None
}

/// How long the string at the start of `text` is, quotes included.
fn string_end(text: &[u8]) -> Option<usize> {
    let mut escaped = false;
    for (i, &b) in text.iter().enumerate().skip(1) {
        match b {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b'"' => return Some(i + 1),
            _ => {}
        }
    }
    None
}

/// The lines [`JsonValues`] makes of `head`, the start of an input, up to
/// where it breaks or is cut.
pub fn lines_of(head: &[u8]) -> Vec<u8> {
    let mut lines = Vec::new();
    let _ = JsonValues::new(head, Arc::from([])).read_to_end(&mut lines);
    lines
}

/// Turns JSON values into JSON lines, byte for byte (see the module docs).
pub struct JsonValues<R> {
    inner: R,
    input: Vec<u8>,
    output: Vec<u8>,
    /// How much of `output` was read.
    given: usize,
    state: State,
    /// The closing brackets the document waits for, innermost last.
    open: Vec<u8>,
    in_string: bool,
    escaped: bool,
    /// The document is a number, `true` or the like: what follows ends it.
    bare: bool,
    /// Bytes read that become spaces once a document's byte follows (none
    /// are written at the end).
    spaces: u64,
    /// The last of `spaces` is the line feed that ends the document before.
    line_to_end: bool,
    /// Where the reader is in the input.
    at: Place,
    after_cr: bool,
    /// Where the document and the array being read began, for errors.
    document_began: Place,
    array_began: Place,
    /// What stopped the reading, given once the output in hand is read.
    failed: Option<io::Error>,
    done: bool,
    /// `--documents-at`: the keys that lead, in each top-level object, to
    /// the array of the documents; empty for the documents themselves.
    path: Arc<[String]>,
    /// The top-level object being read, with `path`.
    wrapper: Option<Wrapper>,
    /// Where to note the input line of each line made, and those of the
    /// block being read (see [`DocumentLines`]).
    lines: Option<DocumentLines>,
    made: Vec<u64>,
}

/// The input line each line [`JsonValues`] makes begins at: where its
/// document begins (for an empty place, `[1,,2]`, its second comma). The
/// chunker counts the lines made, one a document, so a reject's line in
/// the file comes from here: the feeder takes each chunk's lines as it
/// cuts the chunk. Noted a block of input at a time, so it holds the lines
/// of the blocks read ahead of the chunker and no more.
#[derive(Clone, Debug, Default)]
pub struct DocumentLines(Arc<Mutex<NotedLines>>);

#[derive(Debug, Default)]
struct NotedLines {
    lines: VecDeque<u64>,
    /// Lines made that the load lets go of (documents an earlier job loaded).
    to_drop: u64,
}

impl DocumentLines {
    /// For a reader whose first `documents` lines are let go of.
    pub fn dropping(documents: u64) -> DocumentLines {
        let lines = DocumentLines::default();
        lines.held().to_drop = documents;
        lines
    }

    /// The input lines of the next `count` lines made, fewer where fewer
    /// were noted.
    pub fn take(&self, count: u64) -> Arc<[u64]> {
        let mut held = self.held();
        let dropped = held.to_drop.min(held.lines.len() as u64);
        held.lines.drain(..dropped as usize);
        held.to_drop -= dropped;
        let count = count.min(held.lines.len() as u64) as usize;
        held.lines.drain(..count).collect()
    }

    fn note(&self, made: &mut Vec<u64>) {
        self.held().lines.extend(made.drain(..));
    }

    fn held(&self) -> std::sync::MutexGuard<'_, NotedLines> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A top-level object, of which only the array at the path is loaded:
/// every other byte of it becomes a space.
#[derive(Debug)]
struct Wrapper {
    began: Place,
    /// The objects entered along the path: the key looked for is `path[level]`.
    level: usize,
    step: Wrap,
    /// The array at the path was read.
    found: bool,
    /// The key being read (no longer than a key of the path and one byte).
    key: Vec<u8>,
    in_string: bool,
    escaped: bool,
    /// How deep in a value passed over.
    depth: usize,
}

/// Where a [`Wrapper`]'s reader is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wrap {
    Key,
    InKey,
    Colon {
        on_path: bool,
    },
    Value {
        on_path: bool,
    },
    /// A value passed over: a string or container, or a number or the like.
    Passing,
    PassingBare,
    AfterValue,
}

/// A line and byte of the input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Place {
    line: u64,
    byte: u64,
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {} (byte {})", self.line, self.byte)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Outside any document and array.
    Between,
    /// In an array, where a document comes next.
    InArray,
    /// In a document; `in_array` tells what ends it.
    Document { in_array: bool },
    /// After a document in an array: a comma or the array's end comes next.
    AfterInArray,
    /// After a document outside any array: whitespace comes next.
    AfterAlone,
    /// In a top-level object that holds the documents' array (see [`Wrapper`]).
    Wrapper,
}

/// Why the input cannot be read as documents, as the error a read returns:
/// [`crate::source::Source::read_error`] tells it from a decompressor's.
#[derive(Debug)]
pub struct NotJson(pub String);

impl std::fmt::Display for NotJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotJson {}

impl<R: Read> JsonValues<R> {
    /// Reads `inner`'s documents: its top-level values and their arrays'
    /// elements, or with a `path`, the elements of the array it leads to
    /// in each top-level object.
    pub fn new(inner: R, path: Arc<[String]>) -> Self {
        JsonValues {
            inner,
            input: vec![0; READ_SIZE],
            output: Vec::with_capacity(READ_SIZE),
            given: 0,
            state: State::Between,
            open: Vec::new(),
            in_string: false,
            escaped: false,
            bare: false,
            spaces: 0,
            line_to_end: false,
            at: Place { line: 1, byte: 0 },
            after_cr: false,
            document_began: Place::default(),
            array_began: Place::default(),
            failed: None,
            done: false,
            path,
            wrapper: None,
            lines: None,
            made: Vec::new(),
        }
    }

    /// Notes the input line of each line made in `lines`.
    pub fn noting_lines(self, lines: Option<DocumentLines>) -> Self {
        JsonValues { lines, ..self }
    }

    /// A line made begins here.
    fn note_line(&mut self) {
        if self.lines.is_some() {
            self.made.push(self.at.line);
        }
    }

    /// Reads the next block of input into `output`.
    fn fill(&mut self) -> io::Result<()> {
        self.output.clear();
        self.given = 0;
        let read = self.inner.read(&mut self.input)?;
        if read == 0 {
            self.done = true;
            return self.ended().map_err(not_json(io::ErrorKind::UnexpectedEof));
        }
        self.output.reserve(read + self.spaces as usize);
        let input = std::mem::take(&mut self.input);
        let mut bytes = &input[..read];
        if self.at.byte == 0 && bytes.starts_with(BOM) {
            // Passed on: the chunker leaves it out.
            self.output.extend_from_slice(BOM);
            self.at.byte = BOM.len() as u64;
            bytes = &bytes[BOM.len()..];
        }
        let result = self.take_all(bytes);
        self.input = input;
        if let Some(lines) = &self.lines {
            lines.note(&mut self.made);
        }
        if let Err(message) = result {
            self.done = true;
            self.failed = Some(not_json(io::ErrorKind::InvalidData)(message));
        }
        Ok(())
    }

    /// A block of input: runs of a document's bytes that pass as they are
    /// (most of them) copied at once, each other byte taken by itself.
    fn take_all(&mut self, bytes: &[u8]) -> Result<(), String> {
        let mut i = 0;
        while i < bytes.len() {
            let in_document = matches!(self.state, State::Document { .. }) && !self.bare;
            let looked_at = match (self.in_string, self.escaped) {
                (true, false) => Some(&IN_STRINGS),
                (false, _) if in_document => Some(&OUTSIDE_STRINGS),
                _ => None,
            };
            if let Some(looked_at) = looked_at {
                let rest = &bytes[i..];
                let run = rest.iter().position(|&b| looked_at[b as usize]).unwrap_or(rest.len());
                if run > 0 {
                    self.copy_run(&rest[..run]);
                    i += run;
                    continue;
                }
            }
            self.take(bytes[i])?;
            i += 1;
        }
        Ok(())
    }

    /// Bytes that pass as they are, none a line break.
    fn copy_run(&mut self, run: &[u8]) {
        self.output.extend_from_slice(run);
        self.at.byte += run.len() as u64;
        self.after_cr = false;
    }

    /// One input byte.
    #[inline]
    fn take(&mut self, b: u8) -> Result<(), String> {
        self.dispatch(b)?;
        let line_break = b == b'\n' || b == b'\r';
        if line_break && !(b == b'\n' && self.after_cr) {
            self.at.line += 1;
        }
        self.after_cr = b == b'\r';
        self.at.byte += 1;
        Ok(())
    }

    fn dispatch(&mut self, b: u8) -> Result<(), String> {
        match self.state {
            State::Document { in_array } => self.in_document(b, in_array),
            State::Wrapper => {
                self.spaces += 1;
                self.in_wrapper(b)
            }
            State::AfterAlone if b.is_ascii_whitespace() => {
                self.spaces += 1;
                self.line_to_end = true;
                self.state = State::Between;
                Ok(())
            }
            State::AfterAlone => {
                Err(self.stray(b, "right after a document (each must be followed by a line break or space)"))
            }
            _ if b.is_ascii_whitespace() => {
                self.spaces += 1;
                Ok(())
            }
            State::Between if !self.path.is_empty() => match b {
                b'{' => {
                    self.spaces += 1;
                    self.wrapper = Some(Wrapper {
                        began: self.at,
                        level: 0,
                        step: Wrap::Key,
                        found: false,
                        key: Vec::new(),
                        in_string: false,
                        escaped: false,
                        depth: 0,
                    });
                    self.state = State::Wrapper;
                    Ok(())
                }
                _ => Err(self.stray(b, &format!("where an object with {} belongs", self.path_named(self.path.len())))),
            },
            State::Between => match b {
                b'[' => {
                    self.array_began = self.at;
                    self.state = State::InArray;
                    self.spaces += 1;
                    Ok(())
                }
                b']' | b'}' | b',' | b':' => Err(self.stray(b, "outside any document")),
                _ => self.begin(b, false),
            },
            State::InArray => match b {
                b']' => {
                    self.end_the_line_before();
                    self.spaces += 1;
                    self.array_closed();
                    Ok(())
                }
                // An empty place (`[1,,2]`): an empty line, rejected as one.
                b',' if self.line_to_end => {
                    self.end_the_line_before();
                    self.note_line();
                    self.spaces = 1;
                    self.line_to_end = true;
                    Ok(())
                }
                // An empty place first in the array: an empty line too.
                b',' => {
                    self.note_line();
                    self.end_line();
                    Ok(())
                }
                b'}' | b':' => Err(self.stray(b, "where a document begins")),
                _ => self.begin(b, true),
            },
            State::AfterInArray => match b {
                b',' => {
                    self.spaces += 1;
                    self.line_to_end = true;
                    self.state = State::InArray;
                    Ok(())
                }
                b']' => {
                    self.end_line();
                    self.array_closed();
                    Ok(())
                }
                _ => Err(self.stray(b, "after a document, where a comma or the array's ] belongs")),
            },
        }
    }

    /// The first byte of a document.
    fn begin(&mut self, b: u8, in_array: bool) -> Result<(), String> {
        self.end_the_line_before();
        self.write_spaces();
        self.document_began = self.at;
        self.note_line();
        self.bare = !matches!(b, b'{' | b'[' | b'"');
        self.state = State::Document { in_array };
        self.in_document(b, in_array)
    }

    /// A byte of a document, or the first after a number or the like.
    fn in_document(&mut self, b: u8, in_array: bool) -> Result<(), String> {
        if self.in_string {
            match b {
                _ if self.escaped => self.escaped = false,
                b'\\' => self.escaped = true,
                b'"' => self.in_string = false,
                b'\n' | b'\r' => {
                    return Err(format!(
                        "{}: a line break inside a string, which JSON writes as \\n: a quote left out before it?",
                        self.at
                    ))
                }
                _ => {}
            }
            self.output.push(b);
            if !self.in_string && self.open.is_empty() {
                self.document_ended(in_array);
            }
            return Ok(());
        }
        if self.bare && self.open.is_empty() && (b.is_ascii_whitespace() || matches!(b, b',' | b']' | b'}')) {
            self.document_ended(in_array);
            return self.dispatch(b);
        }
        match b {
            b'"' => self.in_string = true,
            b'{' => self.open.push(b'}'),
            b'[' => self.open.push(b']'),
            b'}' | b']' => match self.open.pop() {
                Some(closer) if closer == b => {}
                wanted => {
                    let needs = wanted.map_or("nothing more".to_string(), |c| format!("a {}", c as char));
                    return Err(format!(
                        "{}: a {} where the document begun at {} needs {needs}",
                        self.at, b as char, self.document_began
                    ));
                }
            },
            // Whitespace between tokens.
            b'\n' | b'\r' => {
                self.output.push(b' ');
                return Ok(());
            }
            _ => {}
        }
        self.output.push(b);
        if self.open.is_empty() && !self.in_string && !self.bare {
            self.document_ended(in_array);
        }
        Ok(())
    }

    /// After the array's `]`: outside everything, or in its top-level object.
    fn array_closed(&mut self) {
        self.state = match &mut self.wrapper {
            Some(wrapper) => {
                wrapper.step = Wrap::AfterValue;
                State::Wrapper
            }
            None => State::Between,
        };
    }

    /// A byte of a top-level object that holds the documents' array, which
    /// becomes a space: its keys are read to find the path's.
    fn in_wrapper(&mut self, b: u8) -> Result<(), String> {
        let at = self.at;
        let path = self.path.clone();
        let Some(w) = self.wrapper.as_mut() else { return Ok(()) };
        if w.in_string {
            match b {
                _ if w.escaped => w.escaped = false,
                b'\\' => w.escaped = true,
                b'"' => w.in_string = false,
                b'\n' | b'\r' => return Err(format!("{at}: a line break inside a string, which JSON writes as \\n")),
                _ => {}
            }
            match w.step {
                // Kept no longer than the key looked for and one byte.
                Wrap::InKey if (w.in_string || w.escaped) && w.key.len() <= path[w.level].len() => w.key.push(b),
                Wrap::InKey if w.in_string || w.escaped => {}
                Wrap::InKey => {
                    let on_path = w.key == path[w.level].as_bytes();
                    w.step = Wrap::Colon { on_path };
                }
                Wrap::Passing if !w.in_string && w.depth == 0 => w.step = Wrap::AfterValue,
                _ => {}
            }
            return Ok(());
        }
        if b.is_ascii_whitespace() && w.step != Wrap::PassingBare {
            return Ok(());
        }
        match (w.step, b) {
            (Wrap::Key, b'"') => {
                w.key.clear();
                w.in_string = true;
                w.step = Wrap::InKey;
            }
            (Wrap::Colon { on_path }, b':') => w.step = Wrap::Value { on_path },
            (Wrap::Value { on_path: true }, b'[') if w.level + 1 == path.len() => {
                w.found = true;
                self.array_began = at;
                self.state = State::InArray;
            }
            (Wrap::Value { on_path: true }, b'{') if w.level + 1 < path.len() => {
                w.level += 1;
                w.step = Wrap::Key;
            }
            (Wrap::Value { on_path: true }, _) => {
                let kind = if w.level + 1 == path.len() { "an array" } else { "an object" };
                return Err(format!("{at}: {} is not {kind}", self.path_named(self.wrapper_level() + 1)));
            }
            (Wrap::Value { on_path: false }, b'"') => {
                w.in_string = true;
                w.step = Wrap::Passing;
            }
            (Wrap::Value { on_path: false }, b'{' | b'[') => {
                w.depth = 1;
                w.step = Wrap::Passing;
            }
            (Wrap::Value { on_path: false }, _) => w.step = Wrap::PassingBare,
            (Wrap::Passing, b'"') => w.in_string = true,
            (Wrap::Passing, b'{' | b'[') => w.depth += 1,
            (Wrap::Passing, b'}' | b']') => {
                w.depth -= 1;
                if w.depth == 0 {
                    w.step = Wrap::AfterValue;
                }
            }
            (Wrap::Passing, _) => {}
            (Wrap::PassingBare | Wrap::AfterValue, b',') => w.step = Wrap::Key,
            (Wrap::PassingBare | Wrap::AfterValue | Wrap::Key, b'}') => return self.object_closed(),
            (Wrap::PassingBare, _) => {}
            _ => return Err(self.stray(b, "in the object that holds the documents' array")),
        }
        Ok(())
    }

    /// An object on the path closed: the one it is in is read on, or the
    /// top-level one ended, which must have held the array.
    fn object_closed(&mut self) -> Result<(), String> {
        let Some(w) = self.wrapper.as_mut() else { return Ok(()) };
        if w.level > 0 {
            w.level -= 1;
            w.step = Wrap::AfterValue;
            return Ok(());
        }
        let (began, found) = (w.began, w.found);
        self.wrapper = None;
        self.state = State::Between;
        match found {
            true => Ok(()),
            false => Err(format!("the object begun at {began} holds no {}", self.path_named(self.path.len()))),
        }
    }

    fn wrapper_level(&self) -> usize {
        self.wrapper.as_ref().map_or(0, |w| w.level)
    }

    /// The first `keys` keys of the path, as `--documents-at` names them.
    fn path_named(&self, keys: usize) -> String {
        format!("\"{}\"", self.path[..keys].join("."))
    }

    fn document_ended(&mut self, in_array: bool) {
        self.state = if in_array { State::AfterInArray } else { State::AfterAlone };
    }

    /// Ends the document's line here: the spaces held, then a line feed.
    fn end_line(&mut self) {
        self.write_spaces();
        self.output.push(b'\n');
    }

    /// Ends the line of the document before, at the last byte held, so
    /// that the next line begins with the next document's first byte.
    fn end_the_line_before(&mut self) {
        if std::mem::take(&mut self.line_to_end) {
            self.spaces -= 1;
            self.end_line();
        }
    }

    fn write_spaces(&mut self) {
        let spaces = std::mem::take(&mut self.spaces) as usize;
        self.output.resize(self.output.len() + spaces, b' ');
    }

    /// The input's end: where it must not be, why.
    fn ended(&self) -> Result<(), String> {
        let bare_ended = self.bare && self.open.is_empty() && !self.in_string;
        match self.state {
            State::Between | State::AfterAlone => Ok(()),
            State::Wrapper => Err(format!(
                "the input ends inside the object begun at {}: cut short?",
                self.wrapper.as_ref().map_or(Place::default(), |w| w.began)
            )),
            State::Document { in_array: false } if bare_ended => Ok(()),
            State::Document { .. } if !bare_ended => {
                Err(format!("the input ends inside the document begun at {}: cut short?", self.document_began))
            }
            _ => Err(format!(
                "the input ends inside the JSON array begun at {}, before its closing ]: cut short?",
                self.array_began
            )),
        }
    }

    fn stray(&self, b: u8, place: &str) -> String {
        format!("{}: a {} {place}", self.at, b as char)
    }
}

/// A reason the input is not JSON, as a read error of `kind` (a cut input
/// is `UnexpectedEof`, which the head read before the load takes as its end).
fn not_json(kind: io::ErrorKind) -> impl Fn(String) -> io::Error {
    move |message| io::Error::new(kind, NotJson(format!("not JSON documents: {message}")))
}

impl<R: Read> Read for JsonValues<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.given == self.output.len() {
            if let Some(e) = self.failed.take() {
                return Err(e);
            }
            if self.done {
                return Ok(0);
            }
            self.fill()?;
        }
        let n = buf.len().min(self.output.len() - self.given);
        buf[..n].copy_from_slice(&self.output[self.given..self.given + n]);
        self.given += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &str) -> Result<String, String> {
        let mut out = Vec::new();
        match JsonValues::new(input.as_bytes(), Arc::from([])).read_to_end(&mut out) {
            Ok(_) => Ok(String::from_utf8(out).unwrap()),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn each_document_of_an_array_becomes_a_line_of_its_bytes() {
        assert_eq!(lines(r#"[{"a":1},{"a":[2,"x]"]}]"#).unwrap(), " {\"a\":1}\n{\"a\":[2,\"x]\"]}\n");
        let pretty = "[\n  {\n    \"a\": \"b,c\"\n  },\n  {\"a\": 2}\n]\n";
        let out = lines(pretty).unwrap();
        assert_eq!(out, "    {     \"a\": \"b,c\"   }   \n{\"a\": 2} \n", "each line begins with its document");
        assert_eq!(out.len(), pretty.len() - 1, "one byte for one, but for the line break at the end");
        assert_eq!(lines("\u{feff}[{\"a\":1}]").unwrap(), "\u{feff} {\"a\":1}\n", "the byte-order mark passed on");
    }

    /// Hands out one byte a read, as a pipe may.
    struct ByteByByte<'a>(&'a [u8]);

    impl Read for ByteByByte<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let Some((&first, rest)) = self.0.split_first() else { return Ok(0) };
            buf[0] = first;
            self.0 = rest;
            Ok(1)
        }
    }

    #[test]
    fn the_lines_do_not_depend_on_how_the_input_is_read() {
        for input in ["[\n  {\"a\": 1},\n\n  {\"a\": \"x\\\"\"}\n]\n", "{\n \"a\": 1\n}\n\n{\"b\":[1,2]}", "[1,,2,]"] {
            let mut out = Vec::new();
            JsonValues::new(ByteByByte(input.as_bytes()), Arc::from([])).read_to_end(&mut out).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), lines(input).unwrap());
        }
    }

    fn lines_at(input: &str, path: &[&str]) -> Result<String, String> {
        let path: Arc<[String]> = path.iter().map(|key| key.to_string()).collect();
        let mut out = Vec::new();
        let read = JsonValues::new(ByteByByte(input.as_bytes()), path.clone()).read_to_end(&mut out);
        let mut whole = Vec::new();
        JsonValues::new(input.as_bytes(), path).read_to_end(&mut whole).map_err(|e| e.to_string())?;
        read.map_err(|e| e.to_string())?;
        assert_eq!(out, whole, "read a byte at a time");
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn the_documents_at_a_path_become_lines_and_the_rest_spaces() {
        let input = r#"{"a\"}":{"data":[{"x":0}]},"n":[1,{"}":"]"}],"data": [{"x":1}, {"x":"]"}], "z":true}"#;
        let out = lines_at(input, &["data"]).unwrap();
        let first = input.find(r#"{"x":1}"#).unwrap();
        assert_eq!(out, format!("{}{{\"x\":1}} \n{{\"x\":\"]\"}}\n", " ".repeat(first)), "{out}");
        let pages = "{\"hits\": {\"hits\": [{\"i\": 1}]}}\n{\"hits\": {\"total\": 0, \"hits\": []}}\n{\"hits\": {\"hits\": [{\"i\": 2}]}}";
        let out = lines_at(pages, &["hits", "hits"]).unwrap();
        assert_eq!(out.split_whitespace().collect::<Vec<_>>(), ["{\"i\":", "1}", "{\"i\":", "2}"]);
        for (input, says) in [
            ("{\"data\": {\"x\": 1}}", "line 1 (byte 9): \"data\" is not an array"),
            ("{\"x\": [{}]}", "the object begun at line 1 (byte 0) holds no \"data\""),
            ("{\"data\": [{\"x\": 1}", "ends inside the JSON array begun at line 1 (byte 9)"),
            ("{\"data\": [], \"n\": 1", "ends inside the object begun at line 1 (byte 0)"),
        ] {
            let error = lines_at(input, &["data"]).unwrap_err();
            assert!(error.contains(says), "{input}: {error}");
        }
    }

    #[test]
    fn documents_written_one_after_another_each_become_a_line() {
        assert_eq!(lines("{\n \"a\": 1\n}\n{\n \"a\": 2\n}\n").unwrap(), "{  \"a\": 1 }\n{  \"a\": 2 }");
        assert_eq!(lines("{\"a\":1}\r\n{\"a\":2}").unwrap(), "{\"a\":1} \n{\"a\":2}");
        assert_eq!(lines("[1, \"s\", null, true]").unwrap(), " 1 \n\"s\" \nnull \ntrue\n");
        assert_eq!(lines("[] [{\"a\":1}]\n[\n]").unwrap(), "    {\"a\":1}\n");
        assert_eq!(lines("[{\"a\":1},,{\"a\":2},]").unwrap(), " {\"a\":1}\n\n{\"a\":2}\n", "an empty place, rejected");
        assert_eq!(lines(r#"["a\"]\\", "\\"]"#).unwrap(), " \"a\\\"]\\\\\" \n\"\\\\\"\n");
    }

    /// The lines made, and the input line each begins at as noted.
    fn noted(input: &str, by_bytes: bool) -> (Vec<String>, Vec<u64>) {
        let noted = DocumentLines::default();
        let mut out = Vec::new();
        let path: Arc<[String]> = match input.contains("\"data\"") {
            true => Arc::from(["data".to_string()]),
            false => Arc::from([]),
        };
        let read = match by_bytes {
            true => JsonValues::new(ByteByByte(input.as_bytes()), path)
                .noting_lines(Some(noted.clone()))
                .read_to_end(&mut out),
            false => JsonValues::new(input.as_bytes(), path).noting_lines(Some(noted.clone())).read_to_end(&mut out),
        };
        read.unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut made: Vec<String> = text.split('\n').map(str::to_string).collect();
        if made.last().is_some_and(String::is_empty) {
            made.pop();
        }
        (made, noted.take(u64::MAX).to_vec())
    }

    #[test]
    fn each_line_made_is_noted_with_the_input_line_its_document_begins_at() {
        let cases: [(&str, &[u64]); 9] = [
            ("[\n  {\n    \"a\": 1\n  },\n  {\"a\": 2}\n]\n", &[2, 5]),
            ("[{\"a\":1},{\"a\":2}]\n[{\"a\":3}]\n", &[1, 1, 2]),
            ("{\n \"a\": 1\n}\r\n{\n \"a\": 2\n}\n", &[1, 4]),
            ("[1,\n,2,]", &[1, 2, 2]),
            ("[,\n1]", &[1, 2]),
            ("[1][,2]", &[1, 1, 1]),
            ("\r\r[\r{\"a\":1}]", &[4]),
            ("[] [{\"a\":1}]\n[\n]", &[1]),
            ("{\"n\": 1,\n \"data\": [\n  {\"a\": 1},\n  {\"a\": 2}\n]}\n{\"data\": [{\"a\": 3}]}", &[3, 4, 6]),
        ];
        for (input, lines) in cases {
            for by_bytes in [false, true] {
                let (made, noted) = noted(input, by_bytes);
                assert_eq!(noted, lines, "{input:?}: {made:?}");
                assert_eq!(made.len(), noted.len(), "a line noted for each made: {input:?}");
            }
        }
        let lines = DocumentLines::dropping(1);
        lines.note(&mut vec![1, 2, 3]);
        assert_eq!((&*lines.take(1), &*lines.take(5), &*lines.take(1)), (&[2][..], &[3][..], &[][..]));
    }

    #[test]
    fn what_cannot_be_read_as_documents_is_named_by_line_and_byte() {
        let broken = |input: &str| lines(input).unwrap_err();
        assert!(broken("[\n{\"a\":[1}\n]")
            .contains("line 2 (byte 9): a } where the document begun at line 2 (byte 2) needs a ]"));
        assert!(broken("[{\"a\":\"b\n}]").contains("line 1 (byte 8): a line break inside a string"));
        assert!(broken("[{\"a\":1},\n{\"a\":").contains("ends inside the document begun at line 2 (byte 10)"));
        assert!(broken("[{\"a\":1},\n").contains("ends inside the JSON array begun at line 1 (byte 0)"));
        assert!(broken("[{\"a\":1} {\"a\":2}]").contains("a { after a document, where a comma"));
        assert!(broken("{\"a\":1}{\"a\":2}").contains("a { right after a document"));
        assert!(broken("{\"a\":1},\n{\"a\":2}").contains("line 1 (byte 7): a , right after"));
        assert!(broken("\r\n\r\n}").contains("line 3 (byte 4): a } outside any document"));
    }

    #[test]
    fn the_keys_that_lead_to_an_array_of_documents_are_found() {
        let found = |head: &str| documents_array_in(head.as_bytes());
        assert_eq!(found(r#"{"count": 2, "data": [{"a": 1}, {"a": 2}]}"#).as_deref(), Some("data"));
        assert_eq!(found(r#"{"took":3,"hits":{"total":{"v":2},"hits":[ {"_id":"a"}"#).as_deref(), Some("hits.hits"));
        assert_eq!(
            found(r#"{"t":"x]","crs":{"p":[1,{"x":[{}]}]},"features":[{"type":"F"}]}"#).as_deref(),
            Some("features")
        );
        assert_eq!(found("{\"tags\": [\"a\"], \"n\": 1}"), None, "no array of objects");
        assert_eq!(found("{\"items\": [{\"a\": 1}]}\n{\"items\": [{\"a\": 2}]}\n"), None, "a row's own array");
        assert_eq!(found("[{\"a\": [{\"b\": 1}]}]"), None, "not an object");
    }

    #[test]
    fn an_array_of_documents_is_told_from_json_lines() {
        assert!(are_json_values(b"[{\"a\":1},{\"a\":2}]\n"));
        assert!(are_json_values(b" [ {\"a\":1},{\"a\":"), "too long for the head");
        assert!(are_json_values(b"[\n  1,\n  2\n]\n"), "pretty-printed, whatever it holds");
        assert!(are_json_values(b"{\n  \"a\": 1\n}\n"));
        assert!(!are_json_values(b"[{\"a\":1}]\n[{\"a\":2}]\n"), "an array a line");
        assert!(!are_json_values(b"[1,2]\n"), "an array of numbers: a document");
        assert!(are_json_values(b"[]\n") && are_json_values(b"[ ]") && !are_json_values(b"[]\n[]\n"), "no documents");
        assert!(!are_json_values(b"{\"a\":1}\n{\"a\":2}\n"));
        assert!(are_json_values(b"[\n {\"a\":1},\n {\"a\":[1}\n]"), "broken further on: read, and the break named");
        assert!(are_json_values(b"[{\"a\":1},{\"a\":[1}]\n"));
        assert!(are_json_values(b"{\n  \"a\": [1}\n}\n"));
        assert!(are_json_values(b"\xEF\xBB\xBF\n{\n  \"a\": 1\n}\n{\n"));
        assert!(are_json_values(b"[\r\n  {\"a\": 1},\r\n  {\"a\": "), "the head ends inside it");
        assert!(are_json_values(b"{\"a\": 1,\n \"b\": 2}\n{\"a\": 3,\n \"b\": 4}\n"), "more than a bracket first");
        assert!(!are_json_values(b"{\"a\":1}\r\n{\"a\":2}\r\n"));
        assert!(!are_json_values(b"{\"a\":1\n{\"a\":2}\n"), "a line cut short");
        assert!(!are_json_values(b"{\"a\":1}") && !are_json_values(b"a,b\n1,2\n") && !are_json_values(b""));
    }
}
