//! Hashes of a few lines of each chunk, kept in the ledger: whether a file
//! written anew holds rows loaded before.
//!
//! A file of one name loaded each night (`daily.csv`, each night's rows)
//! holds other data each night, from its first byte: it loads as a job of
//! its own. A full export written anew with a row changed in its first
//! chunk holds other bytes from there too, but the rows loaded before are
//! in it again, and loaded whole they would be there twice. The chunks'
//! hashes cannot tell the two apart: every byte after the change moved.
//! The hashes of some of their lines can: a chunk's first line, and the
//! first that begins after each `spacing` bytes (at most some 64 a
//! chunk). One of those lines in the new file means that rows loaded
//! before are there again.
//!
//! Why our own: the lines are chosen as the chunker streams the bytes past
//! (no chunk is held for it), and compared with the ledger's; no crate
//! does either.

use std::io::{self, Read};

use memchr::memchr;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

/// About how many lines of a chunk are sampled.
const PER_CHUNK: u64 = 64;

/// The fewest bytes between two sampled lines.
const MIN_SPACING: u64 = 4096;

/// The bytes between sampled lines, for chunks of `target` bytes.
pub fn spacing(target: u64) -> u64 {
    (target / PER_CHUNK).max(MIN_SPACING)
}

/// Takes the samples of one chunk from its bytes as they pass.
pub struct LineSampler {
    spacing: u64,
    /// Bytes of the chunk taken.
    taken: u64,
    /// Where the next sampled line may begin, at the earliest.
    next_at: u64,
    /// The sampled line being hashed (it began in bytes taken before), and
    /// where it began.
    line: Option<(Xxh3, u64)>,
    /// The last byte taken ended a line (so at the chunk's start).
    at_line_start: bool,
    samples: Vec<u64>,
}

impl LineSampler {
    pub fn new(spacing: u64) -> LineSampler {
        LineSampler { spacing, taken: 0, next_at: 0, line: None, at_line_start: true, samples: Vec::new() }
    }

    /// The chunk's next bytes.
    pub fn take(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let used = match self.line.take() {
                Some((mut line, began)) => match memchr(b'\n', bytes) {
                    Some(end) => {
                        line.update(&bytes[..end]);
                        self.sampled(line.digest(), began, self.taken + end as u64);
                        end + 1
                    }
                    None => {
                        line.update(bytes);
                        self.line = Some((line, began));
                        bytes.len()
                    }
                },
                None if self.taken < self.next_at => bytes.len().min((self.next_at - self.taken) as usize),
                None if self.at_line_start => match memchr(b'\n', bytes) {
                    Some(end) => {
                        self.sampled(xxh3_64(&bytes[..end]), self.taken, self.taken + end as u64);
                        end + 1
                    }
                    None => {
                        let mut line = Xxh3::new();
                        line.update(bytes);
                        self.line = Some((line, self.taken));
                        bytes.len()
                    }
                },
                None => memchr(b'\n', bytes).map_or(bytes.len(), |end| end + 1),
            };
            self.at_line_start = bytes[used - 1] == b'\n';
            self.taken += used as u64;
            bytes = &bytes[used..];
        }
    }

    /// A sampled line, from `began` to the line end at `end`: an empty one
    /// tells nothing (the next line is sampled instead).
    fn sampled(&mut self, hash: u64, began: u64, end: u64) {
        if end > began {
            self.samples.push(hash);
            self.next_at = began + self.spacing;
        }
    }

    /// The samples; a line the chunk ends inside (the input's last, with
    /// no line end) is none.
    pub fn finish(self) -> Vec<u64> {
        self.samples
    }
}

/// The samples as the ledger keeps them: 16 hex digits each.
pub fn to_text(samples: &[u64]) -> String {
    samples.iter().map(|s| format!("{s:016x}")).collect()
}

/// The samples of [`to_text`]; `None` for text that is not such.
pub fn from_text(text: &str) -> Option<Vec<u64>> {
    let bytes = text.as_bytes();
    if bytes.len() % 16 != 0 {
        return None;
    }
    bytes.chunks(16).map(|hex| u64::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()).collect()
}

/// The first line of `stream` (counted from 1) whose hash `sampled` knows,
/// with that hash, reading it once, line by line, with memory bounded by
/// the buffer whatever the lines' length; `stop` is asked between buffers.
pub fn first_line_found(
    mut stream: impl Read,
    sampled: impl Fn(u64) -> bool,
    mut stop: impl FnMut() -> bool,
) -> io::Result<Option<(u64, u64)>> {
    let mut buffer = vec![0u8; 1 << 20];
    let (mut line, mut number, mut partial) = (Xxh3::new(), 1u64, false);
    loop {
        if stop() {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted"));
        }
        let read = match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let mut rest = &buffer[..read];
        while let Some(end) = memchr(b'\n', rest) {
            let hash = match partial {
                true => {
                    line.update(&rest[..end]);
                    std::mem::replace(&mut line, Xxh3::new()).digest()
                }
                false => xxh3_64(&rest[..end]),
            };
            if (end > 0 || partial) && sampled(hash) {
                return Ok(Some((number, hash)));
            }
            (number, partial) = (number + 1, false);
            rest = &rest[end + 1..];
        }
        if !rest.is_empty() {
            line.update(rest);
            partial = true;
        }
    }
    let last = line.digest();
    Ok(Some((number, last)).filter(|_| partial && sampled(last)))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn sampled(chunk: &[u8], spacing: u64, step: usize) -> Vec<u64> {
        let mut sampler = LineSampler::new(spacing);
        chunk.chunks(step).for_each(|bytes| sampler.take(bytes));
        sampler.finish()
    }

    /// The samples are the same however the chunk's bytes come (one line
    /// hashed in pieces or whole), and they are the hashes of the lines
    /// found again in the file.
    #[test]
    fn the_lines_sampled_are_the_first_and_one_after_each_spacing() {
        let lines: Vec<String> = (0..100).map(|i| format!("{i},name {i}")).collect();
        let chunk = lines.iter().map(|l| format!("{l}\n")).collect::<String>().into_bytes();
        let whole = sampled(&chunk, 100, chunk.len());
        for step in [1, 3, 7, 64] {
            assert_eq!(sampled(&chunk, 100, step), whole, "{step} bytes at a time");
        }
        let hashes: Vec<u64> = lines.iter().map(|l| xxh3_64(l.as_bytes())).collect();
        assert_eq!(whole[0], hashes[0]);
        assert!(whole.iter().all(|s| hashes.contains(s)));
        assert!((8..=13).contains(&whole.len()), "{} bytes, one sample each 100: {}", chunk.len(), whole.len());
        let mut streamed = Xxh3::new();
        streamed.update(lines[7].as_bytes());
        assert_eq!(streamed.digest(), hashes[7], "streamed and one-shot hashes agree");
    }

    #[test]
    fn empty_lines_and_an_unended_last_line_are_not_sampled() {
        assert_eq!(sampled(b"\n\nab\n", 4096, 1), vec![xxh3_64(b"ab")]);
        assert_eq!(sampled(b"ab", 4096, 1), Vec::<u64>::new());
    }

    #[test]
    fn samples_go_to_text_and_back() {
        let samples = vec![0, u64::MAX, 0x0123_4567_89ab_cdef];
        assert_eq!(from_text(&to_text(&samples)), Some(samples));
        assert_eq!(from_text("abc"), None);
        assert_eq!(from_text(""), Some(vec![]));
    }

    #[test]
    fn the_first_line_found_is_numbered_from_one() {
        let samples: HashSet<u64> = [xxh3_64(b"b,2"), xxh3_64(b"last")].into_iter().collect();
        let (sampled, never) = (|h| samples.contains(&h), || false);
        let line = |bytes: &[u8]| first_line_found(bytes, sampled, never).unwrap().map(|(line, _)| line);
        assert_eq!(first_line_found(&b"a,1\n\nb,2\nc\n"[..], sampled, never).unwrap(), Some((3, xxh3_64(b"b,2"))));
        assert_eq!(line(b"a\nlast"), Some(2));
        assert_eq!(line(b"a\nc\n"), None);
        let long = [vec![b'x'; 3 << 20], b"\nb,2\n".to_vec()].concat();
        assert_eq!(line(&long), Some(2), "a line longer than the buffer");
    }
}
