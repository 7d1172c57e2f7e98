//! Input encodings: everything that is not UTF-8 is transcoded to UTF-8 on
//! the client, so the server always parses UTF-8, and a record the encoding
//! cannot read is rejected with a reason that names the fix.
//!
//! The decoders come from `encoding_rs` (the WHATWG Encoding Standard).
//! Decoding is strict: a malformed sequence does not turn into U+FFFD,
//! because a silent replacement is lost data. It is passed on marked (see
//! [`MARK_HIGH`]), and its record is rejected with the bytes as they were.
//!
//! A file must read as it would through `psql` with `client_encoding` set to
//! the same name, and for single-byte encodings WHATWG and PostgreSQL differ
//! (found by `tests/inputs.rs`, which asks the server's `convert_from` for
//! every byte of every code page both know). The differences are written out
//! here, as [`PostgresDifference`]s applied on top of the WHATWG decoder:
//! - WHATWG reads the labels `latin1` / `iso-8859-1` and `latin5` /
//!   `iso-8859-9` as windows-1252 and windows-1254, whose 0x80..0x9F are
//!   printable; PostgreSQL's LATIN1 and LATIN5 are strict ISO-8859, where
//!   they are the C1 controls U+0080..U+009F.
//! - WHATWG decodes the bytes a Windows code page leaves undefined
//!   (windows-1252's 0x81, 0x8D, 0x8F, 0x90 and 0x9D, say) to the C1
//!   control of the same number, and windows-1255's 0xCA to U+05BA;
//!   PostgreSQL's WIN* conversions refuse them ("has no equivalent in
//!   encoding UTF8"), and so does sluice.
//! - WHATWG's koi8-u is KOI8-RU: 0xAE and 0xBE are ў and Ў there, box
//!   drawing (╝, ╬) in PostgreSQL's KOI8U.
//!
//! Multi-byte encodings (Shift_JIS, Big5, GBK, EUC-KR, ...) are WHATWG's
//! without such a check.
//!
//! Names are PostgreSQL's first, for the same reason: WHATWG reads some of
//! PostgreSQL's aliases as other code pages (`unicode` is UTF-16LE there,
//! UTF-8 in PostgreSQL) and knows others not at all (`win`, `tcvn`).

use std::io::{self, Read};

use encoding_rs::{
    Decoder, DecoderResult, Encoding, KOI8_U, UTF_16BE, UTF_16LE, UTF_8, WINDOWS_1252, WINDOWS_1254, WINDOWS_1255,
};

/// How an input is turned into UTF-8: an `encoding_rs` decoder (UTF-16
/// removes its byte-order mark), with PostgreSQL's differences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transcoding {
    encoding: &'static Encoding,
    /// The name was an ISO-8859 one that WHATWG reads as its Windows
    /// superset: 0x80..0x9F are the C1 controls.
    strict_iso: bool,
}

impl Transcoding {
    /// UTF-16, little-endian unless a byte-order mark says otherwise.
    pub const UTF_16: Transcoding = Transcoding { encoding: UTF_16LE, strict_iso: false };

    /// Whether a line feed is its byte 0x0A, and that byte is nothing else
    /// (not so in UTF-16).
    pub fn keeps_ascii(&self) -> bool {
        self.encoding.is_ascii_compatible()
    }

    /// UTF-16 in that byte order (when no mark says otherwise).
    pub fn is_utf16(&self, big_endian: bool) -> bool {
        self.encoding == if big_endian { UTF_16BE } else { UTF_16LE }
    }

    /// A decoder that drops the input's byte-order mark. For UTF-16 the
    /// mark also says which byte comes first, and wins over the name's:
    /// `utf-16` is little-endian, and a big-endian file read so turned into
    /// CJK-looking text (each character's bytes swapped) that no row took.
    fn decoder(&self) -> Decoder {
        match self.encoding == UTF_16LE || self.encoding == UTF_16BE {
            true => self.encoding.new_decoder(),
            false => self.encoding.new_decoder_with_bom_removal(),
        }
    }
}

/// What `--encoding NAME` means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputEncoding {
    Utf8,
    Transcode(Transcoding),
}

impl InputEncoding {
    /// A PostgreSQL encoding name or alias (`WIN1252`, `LATIN9`, `KOI8U`,
    /// `UNICODE`, ...), read as PostgreSQL reads it, or else a WHATWG label
    /// (`windows-1252`, `utf-16le`, `shift_jis`, ...). PostgreSQL's meaning
    /// wins where the two differ: `unicode` is UTF-8 there and UTF-16LE in
    /// WHATWG, and a file must load as `psql` with that `client_encoding`
    /// loads it.
    pub fn from_name(name: &str) -> Result<InputEncoding, String> {
        let lower = name.trim().to_ascii_lowercase();
        let postgres: String = lower.chars().filter(char::is_ascii_alphanumeric).collect();
        let label = match POSTGRES_NAMES.iter().find(|(pg, _)| *pg == postgres) {
            Some((_, label)) => label.to_string(),
            None if NOT_TRANSCODED.contains(&postgres.as_str()) => {
                return Err(format!(
                    "sluice does not transcode PostgreSQL's encoding '{name}'; convert the file to UTF-8 \
                     (iconv) and load it without --encoding"
                ))
            }
            None => lower,
        };
        let encoding =
            Encoding::for_label(label.as_bytes()).or_else(|| Encoding::for_label(label.replace('_', "-").as_bytes()));
        match encoding {
            Some(enc) if enc == UTF_8 => Ok(InputEncoding::Utf8),
            Some(encoding) => {
                let strict_iso = (encoding == WINDOWS_1252 || encoding == WINDOWS_1254) && names_iso_8859(&label);
                Ok(InputEncoding::Transcode(Transcoding { encoding, strict_iso }))
            }
            None => Err(format!(
                "unknown encoding '{name}'; use a name such as utf-8, latin1, windows-1252, utf-16, utf-16le, \
                 koi8-r or shift_jis"
            )),
        }
    }
}

/// The encoding that records which are not UTF-8 are most likely in,
/// guessed from `sample` (their bytes) by `chardetng`, Firefox's detector
/// from the author of `encoding_rs`; with `first` (one of them) read in it.
/// `None` when the guess cannot read `first` either, or when more than 2 %
/// of `sample` are control characters, which text in no encoding holds but
/// compressed or binary data does (chardetng guesses for any bytes). Only a
/// guess: the warning that gives it shows the record as it would read, for
/// the user to judge before loading again.
pub fn likely_encoding(sample: &[u8], first: &[u8]) -> Option<(&'static str, String)> {
    let controls = sample.iter().filter(|&&b| (b < 0x20 && !b"\t\n\r\x0c".contains(&b)) || b == 0x7f).count();
    if controls * 50 > sample.len() {
        return None;
    }
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
    detector.feed(sample, true);
    let guess = detector.guess(None, chardetng::Utf8Detection::Deny);
    let text = guess.decode_without_bom_handling_and_without_replacement(first)?;
    Some((guess.name(), text.into_owned()))
}

/// PostgreSQL's encoding names and aliases (`pg_encname_tbl`) as PostgreSQL
/// compares them (lower case, letters and digits only), with the WHATWG
/// label of the same code page. A name missing here is looked up as a WHATWG
/// label; `tests/inputs.rs` asks the server what each name means.
const POSTGRES_NAMES: &[(&str, &str)] = &[
    ("unicode", "utf-8"),
    ("utf8", "utf-8"),
    ("sqlascii", "utf-8"),
    ("alt", "ibm866"),
    ("win866", "ibm866"),
    ("windows866", "ibm866"),
    ("win874", "windows-874"),
    ("windows874", "windows-874"),
    ("win", "windows-1251"),
    ("abc", "windows-1258"),
    ("win1250", "windows-1250"),
    ("win1251", "windows-1251"),
    ("win1252", "windows-1252"),
    ("win1253", "windows-1253"),
    ("win1254", "windows-1254"),
    ("win1255", "windows-1255"),
    ("win1256", "windows-1256"),
    ("win1257", "windows-1257"),
    ("win1258", "windows-1258"),
    ("windows1250", "windows-1250"),
    ("windows1251", "windows-1251"),
    ("windows1252", "windows-1252"),
    ("windows1253", "windows-1253"),
    ("windows1254", "windows-1254"),
    ("windows1255", "windows-1255"),
    ("windows1256", "windows-1256"),
    ("windows1257", "windows-1257"),
    ("windows1258", "windows-1258"),
    ("tcvn", "windows-1258"),
    ("tcvn5712", "windows-1258"),
    ("vscii", "windows-1258"),
    ("koi8", "koi8-r"),
    ("koi8r", "koi8-r"),
    ("koi8u", "koi8-u"),
    ("latin1", "iso-8859-1"),
    ("latin2", "iso-8859-2"),
    ("latin3", "iso-8859-3"),
    ("latin4", "iso-8859-4"),
    ("latin5", "iso-8859-9"),
    ("latin6", "iso-8859-10"),
    ("latin7", "iso-8859-13"),
    ("latin8", "iso-8859-14"),
    ("latin9", "iso-8859-15"),
    ("latin10", "iso-8859-16"),
    ("iso88591", "iso-8859-1"),
    ("iso88592", "iso-8859-2"),
    ("iso88593", "iso-8859-3"),
    ("iso88594", "iso-8859-4"),
    ("iso88595", "iso-8859-5"),
    ("iso88596", "iso-8859-6"),
    ("iso88597", "iso-8859-7"),
    ("iso88598", "iso-8859-8"),
    ("iso88599", "iso-8859-9"),
    ("iso885910", "iso-8859-10"),
    ("iso885913", "iso-8859-13"),
    ("iso885914", "iso-8859-14"),
    ("iso885915", "iso-8859-15"),
    ("iso885916", "iso-8859-16"),
    ("sjis", "shift_jis"),
    ("shiftjis", "shift_jis"),
    ("mskanji", "shift_jis"),
    ("win932", "shift_jis"),
    ("windows932", "shift_jis"),
    ("eucjp", "euc-jp"),
    ("euckr", "euc-kr"),
    ("uhc", "euc-kr"),
    ("win949", "euc-kr"),
    ("windows949", "euc-kr"),
    ("gbk", "gbk"),
    ("win936", "gbk"),
    ("windows936", "gbk"),
    ("gb18030", "gb18030"),
    ("big5", "big5"),
    ("win950", "big5"),
    ("windows950", "big5"),
];

/// PostgreSQL's encodings that WHATWG has no decoder for, or one that reads
/// them as another code page: refused rather than read wrong.
const NOT_TRANSCODED: &[&str] = &["euccn", "euctw", "eucjis2004", "shiftjis2004", "johab", "muleinternal"];

/// Whether a label WHATWG gives windows-1252 or windows-1254 names the
/// ISO-8859 code page (latin1, iso-8859-9, ...) rather than the Windows one
/// (or ASCII, which WHATWG also reads as windows-1252).
fn names_iso_8859(label: &str) -> bool {
    label.contains("8859")
        || label.contains("latin")
        || matches!(label, "l1" | "l5" | "cp819" | "ibm819" | "iso-ir-100" | "iso-ir-148")
}

/// Where PostgreSQL reads a byte otherwise than WHATWG (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PostgresDifference {
    Same,
    /// The code page leaves the byte undefined: PostgreSQL refuses it.
    Undefined,
    /// PostgreSQL reads the byte as this character.
    Reads(char),
}

/// Each byte's difference, or `None` where there is none.
fn postgres_differences(t: Transcoding) -> Option<Box<[PostgresDifference; 256]>> {
    let mut table = Box::new([PostgresDifference::Same; 256]);
    if t.strict_iso {
        for byte in 0x80..=0x9Fu8 {
            table[byte as usize] = PostgresDifference::Reads(char::from(byte));
        }
    } else if t.encoding.name().starts_with("windows-") && t.encoding.is_single_byte() {
        for byte in 0x80..=0x9Fu8 {
            let single = [byte];
            let decoded = t.encoding.decode_without_bom_handling_and_without_replacement(&single);
            if decoded.is_some_and(|text| text.chars().eq([char::from(byte)])) {
                table[byte as usize] = PostgresDifference::Undefined;
            }
        }
        if t.encoding == WINDOWS_1255 {
            table[0xCA] = PostgresDifference::Undefined;
        }
    } else if t.encoding == KOI8_U {
        table[0xAE] = PostgresDifference::Reads('\u{255D}');
        table[0xBE] = PostgresDifference::Reads('\u{256C}');
    }
    table.iter().any(|&d| d != PostgresDifference::Same).then_some(table)
}

/// The first byte of `src` that PostgreSQL reads otherwise than WHATWG.
/// Every such byte is above 0x7F, so ASCII is passed over eight bytes at a
/// time. Transcoding 260 MB of mostly-ASCII windows-1252 in memory:
/// 0.90 GB/s with a byte-by-byte look-up, 1.56 GB/s with this, 1.82 GB/s
/// for KOI8-R, which needs no table.
fn first_different(src: &[u8], differences: &[PostgresDifference; 256]) -> Option<usize> {
    let differs = |&b: &u8| differences[b as usize] != PostgresDifference::Same;
    let words = src.chunks_exact(8);
    let tail = src.len() - words.remainder().len();
    for (w, word) in words.enumerate() {
        if u64::from_ne_bytes(word.try_into().unwrap()) & 0x8080_8080_8080_8080 != 0 {
            if let Some(i) = word.iter().position(differs) {
                return Some(8 * w + i);
            }
        }
    }
    src[tail..].iter().position(differs).map(|i| tail + i)
}

/// A byte the input's encoding cannot read is passed on marked, so that its
/// record is rejected and the rest of the input loads: psql stops the whole
/// COPY at it, so one bad line costs the file (the seeds' 20 GB JSON
/// report). The mark is two bytes: 0xFE or 0xFF, which UTF-8 never has, so
/// no text can pass for a mark; then the byte with its high bit set, so it
/// can never be a delimiter, quote or line end and the record keeps its
/// shape. A chunk with a mark goes straight to reject isolation
/// (`load::isolate`), which refuses the marked records on the client, and
/// the rejects file gets them back as they were in the input ([`unmark`]).
const MARK_HIGH: u8 = 0xFF;
/// Marks an ASCII byte, which follows it with its high bit set (a half of an
/// unpaired UTF-16 surrogate can be a line feed).
const MARK_ASCII: u8 = 0xFE;

/// The mark for one unreadable byte.
fn mark(byte: u8) -> [u8; 2] {
    match byte {
        0x80.. => [MARK_HIGH, byte],
        _ => [MARK_ASCII, byte | 0x80],
    }
}

/// Whether transcoded `bytes` hold a byte the input's encoding could not read.
pub fn has_unreadable(bytes: &[u8]) -> bool {
    memchr::memchr2(MARK_ASCII, MARK_HIGH, bytes).is_some()
}

/// Transcoded `record` with its unreadable bytes as they were in the input,
/// and the first run of them; `None` when it has none.
pub fn unmark(record: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let first = memchr::memchr2(MARK_ASCII, MARK_HIGH, record)?;
    let (mut original, mut first_run) = (record[..first].to_vec(), Vec::new());
    let mut at = first;
    while at < record.len() {
        let byte = match (record[at], record.get(at + 1)) {
            (MARK_HIGH, Some(&b)) => b,
            (MARK_ASCII, Some(&b)) => b & 0x7F,
            (other, _) => {
                original.push(other);
                at += 1;
                continue;
            }
        };
        if at == first + 2 * first_run.len() {
            first_run.push(byte);
        }
        original.push(byte);
        at += 2;
    }
    Some((original, first_run))
}

/// Why a transcoded record with unreadable bytes is rejected.
pub fn unreadable_reason(first_run: &[u8], transcoding: Transcoding) -> String {
    let (bytes, name) = (hex(first_run), transcoding.encoding.name());
    format!("{bytes} is not valid {name}; is the file in another encoding? (--encoding)")
}

/// Reads `inner` in some encoding and yields UTF-8, with each byte it cannot
/// read marked (see [`MARK_HIGH`]).
pub struct TranscodingReader<R> {
    inner: R,
    decoder: Decoder,
    differences: Option<Box<[PostgresDifference; 256]>>,
    input: Vec<u8>,
    in_pos: usize,
    in_len: usize,
    eof: bool,
    /// The decoder has taken the end of the input: it may not be called again.
    finished: bool,
    /// The last bytes of earlier reads: a malformed sequence may begin there.
    earlier: Vec<u8>,
    /// Output not yet handed out: marks, or UTF-8 made for a read whose
    /// buffer was too small for it (at most one character's).
    pending: Vec<u8>,
    pending_at: usize,
}

/// Bytes kept from earlier reads: more than a malformed sequence and the
/// bytes the decoder read past it (at most 6 with ISO-2022-JP).
const EARLIER: usize = 8;

impl<R: Read> TranscodingReader<R> {
    pub fn new(inner: R, transcoding: Transcoding) -> Self {
        TranscodingReader {
            inner,
            decoder: transcoding.decoder(),
            differences: postgres_differences(transcoding),
            input: vec![0; 64 << 10],
            in_pos: 0,
            in_len: 0,
            eof: false,
            finished: false,
            earlier: Vec::new(),
            pending: Vec::new(),
            pending_at: 0,
        }
    }

    fn refill(&mut self) -> io::Result<()> {
        if self.in_pos < self.in_len || self.eof {
            return Ok(());
        }
        let read = &self.input[self.in_len.saturating_sub(EARLIER)..self.in_len];
        self.earlier.extend_from_slice(read);
        self.earlier.drain(..self.earlier.len().saturating_sub(EARLIER));
        self.in_pos = 0;
        self.in_len = loop {
            match self.inner.read(&mut self.input) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        self.eof = self.in_len == 0;
        Ok(())
    }

    /// The byte at `input[in_pos]`, where PostgreSQL reads otherwise than
    /// the decoder: its UTF-8 in `out`, or a mark where PostgreSQL refuses it.
    fn different_byte(&mut self, difference: PostgresDifference, out: &mut [u8]) -> usize {
        let byte = self.input[self.in_pos];
        self.in_pos += 1;
        match difference {
            PostgresDifference::Reads(c) => c.encode_utf8(out).len(),
            _ => {
                self.pending.extend_from_slice(&mark(byte));
                0
            }
        }
    }

    /// Marks the malformed sequence of `bad` bytes that ends `after` bytes
    /// before the decoder stopped, `read` bytes past `input[in_pos]`; it may
    /// have begun in an earlier read.
    fn mark_malformed(&mut self, bad: usize, read: usize, after: usize) {
        let stop = self.in_pos + read;
        let here = &self.input[stop.saturating_sub(EARLIER)..stop];
        let recent: Vec<u8> = self.earlier.iter().chain(here).copied().collect();
        let end = recent.len().saturating_sub(after);
        for &byte in &recent[end.saturating_sub(bad)..end] {
            self.pending.extend_from_slice(&mark(byte));
        }
    }
}

impl<R: Read> Read for TranscodingReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.pending_at < self.pending.len() {
                let n = out.len().min(self.pending.len() - self.pending_at);
                out[..n].copy_from_slice(&self.pending[self.pending_at..self.pending_at + n]);
                self.pending_at += n;
                return Ok(n);
            }
            self.pending.clear();
            self.pending_at = 0;
            if out.len() >= 4 {
                let n = self.transcode(out)?;
                if n > 0 || self.pending.is_empty() {
                    return Ok(n);
                }
            } else {
                let mut small = [0; 4];
                let n = self.transcode(&mut small)?;
                self.pending.splice(0..0, small[..n].iter().copied());
                if self.pending.is_empty() {
                    return Ok(0);
                }
            }
        }
    }
}

impl<R: Read> TranscodingReader<R> {
    /// Decodes into `out`, which has room for any one character (4 bytes),
    /// and marks what it cannot read into `pending`. Returns how much it
    /// wrote to `out`: 0 only at the end of the input or with a mark made.
    fn transcode(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while !self.finished {
            self.refill()?;
            let mut src = &self.input[self.in_pos..self.in_len];
            if let Some(differences) = &self.differences {
                match first_different(src, differences) {
                    Some(0) => {
                        let written = self.different_byte(differences[src[0] as usize], out);
                        return Ok(written);
                    }
                    Some(first) => src = &src[..first],
                    None => {}
                }
            }
            let last = self.eof && self.in_pos + src.len() == self.in_len;
            let (result, read, written) = self.decoder.decode_to_utf8_without_replacement(src, out, last);
            match result {
                DecoderResult::Malformed(bad, after) => self.mark_malformed(usize::from(bad), read, usize::from(after)),
                DecoderResult::InputEmpty => self.finished = last,
                DecoderResult::OutputFull => {}
            }
            self.in_pos += read;
            if written > 0 || !self.pending.is_empty() {
                return Ok(written);
            }
        }
        Ok(0)
    }
}

/// `0x00 0xd8`: bytes as the server's messages show them.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("0x{b:02x}")).collect::<Vec<_>>().join(" ")
}

/// What a file's first bytes say of UTF-16.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Utf16Sign {
    #[default]
    None,
    /// A byte-order mark (not UTF-32's, which begins as UTF-16
    /// little-endian's does): the file is UTF-16, in the order the mark
    /// says, as surely as a file says it. Windows PowerShell's `Out-File`
    /// and `>` write such files.
    Mark,
    /// No mark, but a first kilobyte that is mostly NUL bytes at every
    /// other position: very likely UTF-16 of mostly Latin text, big-endian
    /// where the NUL comes first in each pair.
    Nuls { big_endian: bool },
}

impl Utf16Sign {
    /// What `head`, a file's first bytes, says.
    pub fn of(head: &[u8]) -> Utf16Sign {
        if head.starts_with(&[0xFE, 0xFF])
            || (head.starts_with(&[0xFF, 0xFE]) && !head.starts_with(&[0xFF, 0xFE, 0, 0]))
        {
            return Utf16Sign::Mark;
        }
        let head = &head[..head.len().min(1024)];
        let pairs = head.len() / 2;
        let nul_in_lane = |lane: usize| head.chunks_exact(2).filter(|p| p[lane] == 0).count() * 10 >= pairs * 9;
        match (pairs >= 8, nul_in_lane(0), nul_in_lane(1)) {
            (true, true, false) => Utf16Sign::Nuls { big_endian: true },
            (true, false, true) => Utf16Sign::Nuls { big_endian: false },
            _ => Utf16Sign::None,
        }
    }

    /// The `--encoding` that reads a file without a mark.
    pub fn encoding_name(big_endian: bool) -> &'static str {
        if big_endian {
            "utf-16be"
        } else {
            "utf-16le"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcoding(name: &str) -> Transcoding {
        let InputEncoding::Transcode(t) = InputEncoding::from_name(name).unwrap() else { panic!("{name} is utf-8") };
        t
    }

    /// The UTF-8 made of `bytes`, or the output with marks in it.
    fn transcode(bytes: &[u8], name: &str) -> Result<String, Vec<u8>> {
        let mut out = Vec::new();
        TranscodingReader::new(bytes, transcoding(name)).read_to_end(&mut out).unwrap();
        String::from_utf8(out.clone()).map_err(|_| out)
    }

    /// `input` read `per_read` bytes at a time, decoded into a buffer of
    /// `out_len` bytes.
    fn transcode_in_pieces(input: &[u8], name: &str, per_read: usize, out_len: usize) -> Vec<u8> {
        let trickle = crate::test_support::Trickle { data: input, piece: per_read };
        let mut reader = TranscodingReader::new(trickle, transcoding(name));
        let (mut all, mut buf) = (Vec::new(), vec![0; out_len]);
        loop {
            match reader.read(&mut buf).unwrap() {
                0 => return all,
                n => all.extend_from_slice(&buf[..n]),
            }
        }
    }

    #[test]
    fn no_encoding_is_guessed_for_bytes_full_of_control_characters() {
        let latin = "Caf\u{e9} cr\u{e8}me, na\u{ef}ve fa\u{e7}ade;\t12\r\n".repeat(20);
        let (bytes, _, _) = encoding_rs::WINDOWS_1252.encode(&latin);
        assert_eq!(likely_encoding(&bytes, &bytes).map(|(name, _)| name), Some("windows-1252"));
        // xz output, say: a control character in every few bytes.
        let noise: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 | 0x80).collect();
        let mut binary = noise.clone();
        binary.iter_mut().step_by(25).for_each(|b| *b = 0x01);
        assert_eq!(likely_encoding(&binary, &binary), None);
        assert!(likely_encoding(&noise, &noise).is_some(), "high bytes alone may be text");
    }

    #[test]
    fn latin1_is_strict_iso_8859_1_not_windows_1252() {
        assert_eq!(transcode(b"caf\xe9 \x80", "LATIN1").unwrap(), "caf\u{e9} \u{80}");
        assert_eq!(transcode(b"caf\xe9 \x80", "windows-1252").unwrap(), "caf\u{e9} \u{20ac}");
        assert_eq!(transcode(b"\x80", "WIN1252").unwrap(), "\u{20ac}");
    }

    #[test]
    fn windows_code_pages_mark_their_undefined_bytes_as_postgresql_refuses_them() {
        // windows-1252 leaves 0x81, 0x8D, 0x8F, 0x90 and 0x9D undefined;
        // PostgreSQL's WIN1252 refuses them (checked against its
        // convert_from in tests/inputs.rs).
        for byte in [0x81u8, 0x8D, 0x8F, 0x90, 0x9D] {
            let input = [b'a', b'b', byte, b'c'];
            let out = transcode(&input, "windows-1252").unwrap_err();
            assert_eq!(out, [b"ab".as_slice(), &[MARK_HIGH, byte], b"c"].concat());
            assert!(has_unreadable(&out));
            assert_eq!(unmark(&out), Some((input.to_vec(), vec![byte])));
            let reason = unreadable_reason(&[byte], transcoding("WIN1252"));
            assert!(reason.starts_with(&format!("0x{byte:02x} is not valid windows-1252")), "{reason}");
        }
        // Undefined in windows-1250 too, where 0x8A is defined (Š).
        assert!(transcode(b"\x81", "WIN1250").is_err());
        assert_eq!(transcode(b"\x8a", "WIN1250").unwrap(), "\u{160}");
        // Past the first read's buffer.
        let mut long = b"123456789\n".repeat(10_000);
        long.push(0x90);
        let out = transcode(&long, "windows-1252").unwrap_err();
        assert_eq!(unmark(&out).unwrap().0, long);
        // ISO-8859-2's 0x80..0x9F are real C1 controls, as in PostgreSQL's LATIN2.
        assert_eq!(transcode(b"\x81", "iso-8859-2").unwrap(), "\u{81}");
        assert_eq!(postgres_differences(transcoding("KOI8R")), None);
    }

    #[test]
    fn iso_names_are_strict_where_whatwg_reads_the_windows_superset() {
        assert_eq!(transcode(b"\x80\xdd", "LATIN5").unwrap(), "\u{80}\u{130}");
        assert_eq!(transcode(b"\x80\xdd", "iso-8859-9").unwrap(), "\u{80}\u{130}");
        assert_eq!(transcode(b"\x80\xdd", "WIN1254").unwrap(), "\u{20ac}\u{130}");
        assert_eq!(transcode(b"\x80", "us-ascii").unwrap(), "\u{20ac}", "WHATWG's ascii is windows-1252");
        assert_eq!(transcode(b"\xa4", "LATIN9").unwrap(), "\u{20ac}");
    }

    #[test]
    fn koi8_u_is_postgresql_s_not_koi8_ru() {
        assert_eq!(transcode(b"\xae\xbe\xa4", "KOI8U").unwrap(), "\u{255d}\u{256c}\u{454}");
        assert_eq!(transcode(b"\xae", "koi8-r").unwrap(), "\u{255d}");
    }

    #[test]
    fn utf16_with_bom_and_explicit_endianness() {
        let text = "id,name\n1,caf\u{e9}\n";
        let le: Vec<u8> = [0xFF, 0xFE].into_iter().chain(text.encode_utf16().flat_map(u16::to_le_bytes)).collect();
        assert_eq!(transcode(&le, "utf-16").unwrap(), text);
        let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert_eq!(transcode(&be, "utf-16be").unwrap(), text);
        // The mark says the order, whatever the name's.
        let marked_be = [&[0xFE, 0xFF][..], &be].concat();
        assert_eq!(transcode(&marked_be, "utf-16").unwrap(), text);
        assert_eq!(transcode(&marked_be, "utf-16le").unwrap(), text);
        assert_eq!(transcode(&le, "utf-16be").unwrap(), text);
        assert_eq!(Utf16Sign::of(&le), Utf16Sign::Mark);
        assert_eq!(Utf16Sign::of(&[0xFE, 0xFF, 0, b'a']), Utf16Sign::Mark);
        assert_eq!(Utf16Sign::of(&be), Utf16Sign::Nuls { big_endian: true });
        assert_eq!(Utf16Sign::of(&le[2..]), Utf16Sign::Nuls { big_endian: false });
        assert_eq!(Utf16Sign::of(text.as_bytes()), Utf16Sign::None);
        assert_eq!(Utf16Sign::of(&be[..14]), Utf16Sign::None, "too few pairs to tell");
        let utf32 =
            [&[0xFF, 0xFE, 0, 0][..], &"ab".repeat(20).chars().flat_map(|c| [c as u8, 0, 0, 0]).collect::<Vec<_>>()]
                .concat();
        assert_ne!(Utf16Sign::of(&utf32), Utf16Sign::Mark, "UTF-32's mark");
        assert_eq!(Utf16Sign::of(&[0xEF, 0xBB, 0xBF, b'a']), Utf16Sign::None, "UTF-8's mark");
        assert!(transcoding("utf-16be").is_utf16(true) && Transcoding::UTF_16.is_utf16(false));
        assert!(!transcoding("utf-16le").is_utf16(true) && !transcoding("latin1").is_utf16(false));
    }

    #[test]
    fn malformed_sequences_are_marked_and_keep_the_record_s_shape() {
        // An unpaired high surrogate in UTF-16LE; its low byte is a line feed,
        // which the mark keeps from ending the line.
        let bad = [b'a', 0, b'b', 0, b'\n', 0xD8, b'c', 0, b'\n', 0];
        let out = transcode(&bad, "utf-16le").unwrap_err();
        assert_eq!(out, [b"ab".as_slice(), &mark(b'\n'), &mark(0xD8), b"c\n"].concat());
        assert_eq!(memchr::memchr_iter(b'\n', &out).count(), 1);
        assert_eq!(unmark(&out), Some((b"ab\n\xd8c\n".to_vec(), vec![b'\n', 0xD8])));
        let reason = unreadable_reason(&[b'\n', 0xD8], transcoding("utf-16le"));
        assert!(reason.starts_with("0x0a 0xd8 is not valid UTF-16LE"), "{reason}");
        // A malformed byte followed by more: only the bad byte is marked.
        let out = transcode(b"ab\x82 cd\x82", "shift_jis").unwrap_err();
        assert_eq!(out, [b"ab".as_slice(), &mark(0x82), b" cd", &mark(0x82)].concat());
        assert_eq!(unmark(&out).unwrap().1, [0x82]);
        // An input that ends inside a sequence.
        assert_eq!(transcode(&[b'a', 0, b'b'], "utf-16le").unwrap_err(), [b"a".as_slice(), &mark(b'b')].concat());
        // Output that is not a transcoder's has no marks to take back.
        assert_eq!(unmark("caf\u{e9}".as_bytes()), None);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]
        /// However the input arrives and however small the reads, the output
        /// is what one read of the whole makes; a malformed sequence split
        /// across reads is marked whole.
        #[test]
        fn reads_of_any_size_transcode_alike(
            picks in proptest::collection::vec(0usize..12, 0..200),
            per_read in 1usize..9,
            out_len in 1usize..9,
            name in proptest::sample::select(vec!["windows-1252", "utf-16le", "shift_jis", "gb18030"]),
        ) {
            let alphabet = [b'a', b'\n', 0, 0x81, 0x82, 0x8D, 0xA0, 0xD8, 0xDC, 0xE9, 0xFF, 0x30];
            let input: Vec<u8> = picks.iter().map(|&i| alphabet[i]).collect();
            let whole = transcode(&input, name).map_or_else(|marked| marked, String::into_bytes);
            proptest::prop_assert_eq!(transcode_in_pieces(&input, name, per_read, out_len), whole.clone());
            if name == "windows-1252" {
                // Single bytes: the marked bytes are the undefined ones.
                let original = unmark(&whole).map_or(whole.clone(), |(original, _)| original);
                let ascii_or_marked = input.iter().all(|&b| b < 0x80 || [0x81, 0x8D].contains(&b));
                proptest::prop_assert!(!ascii_or_marked || original == input);
            }
        }
    }

    #[test]
    fn names() {
        assert_eq!(InputEncoding::from_name("UTF8"), Ok(InputEncoding::Utf8));
        assert!(InputEncoding::from_name("klingon").is_err());
        assert!(matches!(InputEncoding::from_name("koi8-r"), Ok(InputEncoding::Transcode(_))));
        let transcoding = |name| match InputEncoding::from_name(name) {
            Ok(InputEncoding::Transcode(t)) => (t.encoding.name(), t.strict_iso),
            other => panic!("{name}: {other:?}"),
        };
        // PostgreSQL's meaning first, then WHATWG's labels.
        assert_eq!(InputEncoding::from_name("Unicode"), Ok(InputEncoding::Utf8));
        assert_eq!(InputEncoding::from_name("SQL_ASCII"), Ok(InputEncoding::Utf8));
        assert_eq!(transcoding("WIN"), ("windows-1251", false));
        assert_eq!(transcoding("TCVN"), ("windows-1258", false));
        assert_eq!(transcoding("MS_KANJI"), ("Shift_JIS", false));
        assert_eq!(transcoding("ks_c_5601-1987"), ("EUC-KR", false));
        assert_eq!(transcoding("ISO_8859_1"), ("windows-1252", true));
        assert_eq!(transcoding("cp1252"), ("windows-1252", false));
        assert_eq!(transcoding("utf_16le"), ("UTF-16LE", false));
        let refused = InputEncoding::from_name("EUC_TW").unwrap_err();
        assert!(refused.contains("does not transcode PostgreSQL's encoding 'EUC_TW'"), "{refused}");
    }
}
