//! JSON that is not JSON lines: one array of documents (`[{...},{...}]`,
//! what `JSON.stringify`, pandas' `to_json(orient="records")` and most
//! `.json` exports write, on one line or pretty-printed), or documents
//! pretty-printed one after another (`jq .`). Each document becomes one
//! line as it is read ([`JsonValues`]), before the chunker sees it, so
//! everything after (chunking, documents into columns, isolation, resume)
//! works on JSON lines.
//!
//! Why our own: the fix the peers' users reach for, `jq -c '.[]'`, holds the
//! whole array in memory (some 10 times the file's size) and writes a
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
//! reject's `line` and `record` are the document's number (`jq '.[N-1]'`
//! shows it).
//!
//! What cannot be read as documents stops the load, naming the file's line
//! and byte: a bracket that closes another kind, a line break inside a
//! string (a quote left out, after which every string is read inside out),
//! an input that ends inside a document or the array, and anything but a
//! comma or the array's end after a document. What is inside a document is
//! the server's (or the conversion's) to judge: a bad value rejects its
//! document alone. Two commas in a row leave an empty line, rejected as
//! one.

use std::io::{self, Read};

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
    pub fn new(inner: R) -> Self {
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
        if let Err(message) = result {
            self.done = true;
            self.failed = Some(not_json(io::ErrorKind::InvalidData)(message));
        }
        Ok(())
    }

    /// A block of input: runs of a string's plain bytes at memchr speed
    /// (most of a document's bytes), each other byte by itself.
    fn take_all(&mut self, bytes: &[u8]) -> Result<(), String> {
        let mut i = 0;
        while i < bytes.len() {
            if self.in_string && !self.escaped {
                let rest = &bytes[i..];
                let run = rest.iter().position(|&b| IN_STRINGS[b as usize]).unwrap_or(rest.len());
                if run > 0 {
                    self.copy_run(&rest[..run]);
                    i += run;
                    continue;
                }
            } else if matches!(self.state, State::Document { .. }) && !self.in_string && !self.bare {
                let rest = &bytes[i..];
                let run = rest.iter().position(|&b| OUTSIDE_STRINGS[b as usize]).unwrap_or(rest.len());
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
                    self.state = State::Between;
                    self.spaces += 1;
                    Ok(())
                }
                // An empty place (`[1,,2]`): an empty line, rejected as one.
                b',' if self.line_to_end => {
                    self.end_the_line_before();
                    self.spaces = 1;
                    self.line_to_end = true;
                    Ok(())
                }
                b',' => {
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
                    self.state = State::Between;
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
        match JsonValues::new(input.as_bytes()).read_to_end(&mut out) {
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
            JsonValues::new(ByteByByte(input.as_bytes())).read_to_end(&mut out).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), lines(input).unwrap());
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
