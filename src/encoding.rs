//! Input encodings: everything that is not UTF-8 is transcoded to UTF-8 on
//! the client, so the server always parses UTF-8 and a file in the wrong
//! encoding fails with a message that names the fix.
//!
//! The decoders come from `encoding_rs` (the WHATWG Encoding Standard), with
//! one exception written out here: WHATWG maps the labels `latin1` and
//! `iso-8859-1` to windows-1252, but PostgreSQL's LATIN1 is strict
//! ISO-8859-1, and the two differ in 0x80..0x9F. Decoding is strict: a
//! malformed sequence stops the input with its byte offset instead of
//! turning into U+FFFD, because a silent replacement is lost data.

use std::io::{self, Read};

use encoding_rs::{Decoder, DecoderResult, Encoding, UTF_8};

/// How an input is turned into UTF-8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transcoding {
    /// ISO-8859-1: byte n is U+00nn.
    Latin1,
    /// Any encoding `encoding_rs` knows; UTF-16 removes its byte-order mark.
    Whatwg(&'static Encoding),
}

/// What `--encoding NAME` means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputEncoding {
    Utf8,
    Transcode(Transcoding),
}

impl InputEncoding {
    pub fn from_name(name: &str) -> Result<InputEncoding, String> {
        let lower = name.trim().to_ascii_lowercase().replace('_', "-");
        match lower.as_str() {
            "utf-8" | "utf8" | "unicode-1-1-utf-8" => return Ok(InputEncoding::Utf8),
            "latin1" | "latin-1" | "iso-8859-1" | "iso8859-1" | "l1" => {
                return Ok(InputEncoding::Transcode(Transcoding::Latin1))
            }
            // PostgreSQL's names for the Windows code pages.
            _ if lower.starts_with("win") && !lower.starts_with("windows") => {
                if let Some(enc) = Encoding::for_label(format!("windows-{}", &lower[3..]).as_bytes()) {
                    return Ok(InputEncoding::Transcode(Transcoding::Whatwg(enc)));
                }
            }
            _ => {}
        }
        match Encoding::for_label(lower.as_bytes()) {
            Some(enc) if enc == UTF_8 => Ok(InputEncoding::Utf8),
            Some(enc) => Ok(InputEncoding::Transcode(Transcoding::Whatwg(enc))),
            None => Err(format!(
                "unknown encoding '{name}'; use a name such as utf-8, latin1, windows-1252, utf-16, utf-16le, \
                 koi8-r or shift_jis"
            )),
        }
    }
}

/// Reads `inner` in some encoding and yields UTF-8.
pub struct TranscodingReader<R> {
    inner: R,
    transcoding: Transcoding,
    decoder: Option<Decoder>,
    input: Vec<u8>,
    in_pos: usize,
    in_len: usize,
    eof: bool,
    /// Source bytes consumed before `input[in_pos]`, for error messages.
    consumed: u64,
}

impl<R: Read> TranscodingReader<R> {
    pub fn new(inner: R, transcoding: Transcoding) -> Self {
        let decoder = match transcoding {
            Transcoding::Latin1 => None,
            Transcoding::Whatwg(enc) => Some(enc.new_decoder_with_bom_removal()),
        };
        TranscodingReader {
            inner,
            transcoding,
            decoder,
            input: vec![0; 64 << 10],
            in_pos: 0,
            in_len: 0,
            eof: false,
            consumed: 0,
        }
    }

    fn refill(&mut self) -> io::Result<()> {
        if self.in_pos < self.in_len || self.eof {
            return Ok(());
        }
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
}

impl<R: Read> Read for TranscodingReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        // At least 4 bytes of room, so any one character fits.
        if out.len() < 4 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "buffer too small to transcode into"));
        }
        loop {
            self.refill()?;
            let src = &self.input[self.in_pos..self.in_len];
            let (read, written) = match (&mut self.decoder, self.transcoding) {
                (None, _) => latin1_to_utf8(src, out),
                (Some(decoder), _) => {
                    let (result, read, written) = decoder.decode_to_utf8_without_replacement(src, out, self.eof);
                    if let DecoderResult::Malformed(bad, _) = result {
                        let at = self.consumed + (self.in_pos + read) as u64 - u64::from(bad);
                        let name = decoder.encoding().name();
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("byte {at}: not valid {name}; check --encoding"),
                        ));
                    }
                    (read, written)
                }
            };
            self.in_pos += read;
            self.consumed += read as u64;
            if written > 0 || (self.eof && self.in_pos == self.in_len) {
                return Ok(written);
            }
        }
    }
}

/// ISO-8859-1 to UTF-8: returns (bytes read, bytes written).
fn latin1_to_utf8(src: &[u8], out: &mut [u8]) -> (usize, usize) {
    let (mut read, mut written) = (0, 0);
    for &b in src {
        if b < 0x80 {
            if written + 1 > out.len() {
                break;
            }
            out[written] = b;
            written += 1;
        } else {
            if written + 2 > out.len() {
                break;
            }
            out[written] = 0xC0 | (b >> 6);
            out[written + 1] = 0x80 | (b & 0x3F);
            written += 2;
        }
        read += 1;
    }
    (read, written)
}

/// A UTF-16 byte-order mark, or a first kilobyte that is mostly NUL bytes
/// at every other position: the file is very likely UTF-16.
pub fn looks_like_utf16(head: &[u8]) -> bool {
    if head.starts_with(&[0xFF, 0xFE]) || head.starts_with(&[0xFE, 0xFF]) {
        return true;
    }
    let pairs = head.len() / 2;
    let nul_in_one_lane = |lane: usize| head.chunks_exact(2).filter(|p| p[lane] == 0).count();
    pairs >= 8 && (nul_in_one_lane(0) * 10 >= pairs * 9 || nul_in_one_lane(1) * 10 >= pairs * 9)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcode(bytes: &[u8], name: &str) -> io::Result<String> {
        let InputEncoding::Transcode(t) = InputEncoding::from_name(name).unwrap() else { panic!("{name} is utf-8") };
        let mut out = String::new();
        TranscodingReader::new(bytes, t).read_to_string(&mut out)?;
        Ok(out)
    }

    #[test]
    fn latin1_is_strict_iso_8859_1_not_windows_1252() {
        assert_eq!(transcode(b"caf\xe9 \x80", "LATIN1").unwrap(), "caf\u{e9} \u{80}");
        assert_eq!(transcode(b"caf\xe9 \x80", "windows-1252").unwrap(), "caf\u{e9} \u{20ac}");
        assert_eq!(transcode(b"\x80", "WIN1252").unwrap(), "\u{20ac}");
    }

    #[test]
    fn utf16_with_bom_and_explicit_endianness() {
        let text = "id,name\n1,caf\u{e9}\n";
        let le: Vec<u8> = [0xFF, 0xFE].into_iter().chain(text.encode_utf16().flat_map(u16::to_le_bytes)).collect();
        assert_eq!(transcode(&le, "utf-16").unwrap(), text);
        let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert_eq!(transcode(&be, "utf-16be").unwrap(), text);
        assert!(looks_like_utf16(&le));
        assert!(looks_like_utf16(&be));
        assert!(!looks_like_utf16(text.as_bytes()));
    }

    #[test]
    fn malformed_input_is_an_error_with_its_offset() {
        // An unpaired high surrogate in UTF-16LE at byte 4.
        let bad = [b'a', 0, b'b', 0, 0x00, 0xD8, b'c', 0];
        let err = transcode(&bad, "utf-16le").unwrap_err();
        assert!(err.to_string().starts_with("byte 4: not valid UTF-16LE"), "{err}");
    }

    #[test]
    fn names() {
        assert_eq!(InputEncoding::from_name("UTF8"), Ok(InputEncoding::Utf8));
        assert!(InputEncoding::from_name("klingon").is_err());
        assert!(matches!(InputEncoding::from_name("koi8-r"), Ok(InputEncoding::Transcode(_))));
    }
}
