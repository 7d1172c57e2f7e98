//! A plain file read through a rewrite (documents into columns, a
//! transcoding) that grows while it loads: its last line may be one still
//! being written (`{"id":1001,"name":"par` of `{"id":1001,"name":"partial"}`).
//! Read to the size the load looked at, such a line became a reject (a
//! JSON document cut short) or a row cut short, and the next run, finding
//! the line whole, refused the file as not the one the job loaded. A file
//! read as it is on disk has its chunker find that line (see
//! `load::without_a_line_being_written`); a rewrite's chunker sees other
//! bytes, so this reader, under the rewrite, holds back the bytes after the
//! last line end until it knows whether they end the file: at the size
//! looked at, a file grown since has them left out, for the next run to
//! load from that line. Ours, not a crate's: it is the load's own account
//! of where a file ends.

use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What the reader found at the end it read to: the file's size then, and
/// the line it left out (`None`: the file ended in a line end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrownWhileRead {
    pub now: u64,
    pub line_left: Option<u64>,
}

/// Where the reader says what it found, once it read its end.
pub type Growth = Arc<Mutex<Option<GrownWhileRead>>>;

/// Most bytes of one line held back. A longer line goes on as it comes
/// (its end, were it cut, loads as a file without a final line end does),
/// so that memory stays bounded on a file without line ends.
const MOST_HELD: usize = 1 << 20;

/// How much is read from the file at a time.
const READ: usize = 64 << 10;

/// Reads `inner` (a plain file, up to `looked_at`, its size when the load
/// looked at it), passing on whole lines only until its end.
pub struct HoldingItsLastLine<R> {
    inner: R,
    path: PathBuf,
    looked_at: u64,
    /// Only a file larger than this is looked at for growth after a line
    /// end; one ending inside a line always is (see `load::note_growth`).
    looked_at_when_over: u64,
    /// Bytes read and not passed on: those up to `ready` end in a line end.
    pending: Vec<u8>,
    at: usize,
    ready: usize,
    /// Line ends passed on, after those before the first byte read.
    lines: u64,
    /// Some of the line being read went on already (it was too long).
    line_let_go: bool,
    ended: bool,
    growth: Growth,
}

impl<R: Read> HoldingItsLastLine<R> {
    /// `lines_before`: the line ends before the byte `inner` starts at.
    pub fn new(inner: R, path: PathBuf, (looked_at, looked_at_when_over): (u64, u64), lines_before: u64) -> Self {
        HoldingItsLastLine {
            inner,
            path,
            looked_at,
            looked_at_when_over,
            pending: Vec::new(),
            at: 0,
            ready: 0,
            lines: lines_before,
            line_let_go: false,
            ended: false,
            growth: Growth::default(),
        }
    }

    /// Where it says what it found at the file's end.
    pub fn growth(&self) -> Growth {
        self.growth.clone()
    }

    /// Reads more into `pending`; what of it may go on.
    fn fill(&mut self) -> io::Result<()> {
        self.pending.drain(..self.at);
        self.at = 0;
        let held = self.pending.len();
        self.pending.resize(held + READ, 0);
        let read = loop {
            match self.inner.read(&mut self.pending[held..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                read => break read,
            }
        };
        let read = read.inspect_err(|_| self.pending.truncate(held))?;
        self.pending.truncate(held + read);
        if read == 0 {
            self.end();
            return Ok(());
        }
        self.ready = match memchr::memrchr(b'\n', &self.pending[held..]) {
            Some(i) => {
                self.line_let_go = false;
                held + i + 1
            }
            None if self.pending.len() >= MOST_HELD => {
                self.line_let_go = true;
                self.pending.len()
            }
            None => 0,
        };
        Ok(())
    }

    /// At the end it reads to: what is held goes on, unless the file grew
    /// since the load looked at it and it is a line without its end.
    fn end(&mut self) {
        self.ended = true;
        let unended = !self.pending.is_empty();
        self.ready = self.pending.len();
        if !unended && self.looked_at <= self.looked_at_when_over {
            return;
        }
        let Some(now) = std::fs::metadata(&self.path).ok().map(|m| m.len()).filter(|&len| len > self.looked_at) else {
            return;
        };
        let line_left = (unended && !self.line_let_go).then_some(self.lines + 1);
        if line_left.is_some() {
            self.pending.clear();
            self.ready = 0;
        }
        *self.growth.lock().unwrap_or_else(|e| e.into_inner()) = Some(GrownWhileRead { now, line_left });
    }
}

impl<R: Read> Read for HoldingItsLastLine<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.ready {
            if self.ended || buf.is_empty() {
                return Ok(0);
            }
            self.fill()?;
        }
        let n = buf.len().min(self.ready - self.at);
        let passed = &self.pending[self.at..self.at + n];
        self.lines += memchr::memchr_iter(b'\n', passed).count() as u64;
        buf[..n].copy_from_slice(passed);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `file` through the reader, as a load that looked at it when
    /// it held `looked_at` bytes, in reads of `step`; lines before: 10.
    fn read_after_writing(file: &[u8], looked_at: usize, step: usize) -> (Vec<u8>, Option<GrownWhileRead>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, file).unwrap();
        let inner = std::fs::File::open(&path).unwrap().take(looked_at as u64);
        let mut reader = HoldingItsLastLine::new(inner, path, (looked_at as u64, 0), 10);
        let mut out = Vec::new();
        let mut buf = vec![0; step];
        loop {
            let n = reader.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        let growth = *reader.growth().lock().unwrap();
        (out, growth)
    }

    #[test]
    fn a_line_without_its_end_in_a_file_grown_since_is_left_out_and_named() {
        let file = b"a,1\nb,2\nc,par";
        for step in [1, 3, 64 << 10] {
            // Not grown: all of it, as a file without a final line end.
            assert_eq!(read_after_writing(file, file.len(), step), (file.to_vec(), None));
            let grown = [&file[..], b"tial\nd,4\n"].concat();
            let (read, growth) = read_after_writing(&grown, file.len(), step);
            assert_eq!(read, b"a,1\nb,2\n", "step {step}");
            assert_eq!(growth, Some(GrownWhileRead { now: grown.len() as u64, line_left: Some(13) }));
            // Grown after a line end: all of it, and the growth said.
            let (read, growth) = read_after_writing(&grown, 8, step);
            assert_eq!(read, b"a,1\nb,2\n");
            assert_eq!(growth, Some(GrownWhileRead { now: grown.len() as u64, line_left: None }));
        }
    }

    #[test]
    fn a_line_longer_than_what_it_holds_goes_on_as_it_comes() {
        let long = [vec![b'x'; MOST_HELD + 10], b"\nshort".to_vec()].concat();
        let grown = [&long[..], b"er\n"].concat();
        let (read, growth) = read_after_writing(&grown, long.len(), 1 << 16);
        assert_eq!(read, &long[..MOST_HELD + 11], "the long line whole, the short one left out");
        assert_eq!(growth.unwrap().line_left, Some(12));
        let unended = vec![b'x'; MOST_HELD + 10];
        let (read, growth) = read_after_writing(&[&unended[..], b"more"].concat(), unended.len(), 1 << 16);
        assert_eq!(read, unended, "too long to hold: it went on");
        assert_eq!(growth.unwrap().line_left, None);
    }
}
