//! Where input bytes come from: files, globs, stdin, gzip and zstd.
//!
//! A plain regular file is read by byte range (positioned reads), so any worker
//! can read any chunk without a shared cursor and chunks cost no memory while
//! they wait. Stdin and compressed inputs can only be read once, front to back:
//! the chunker decompresses them on its own thread (off the load path) and
//! hands workers the chunk bytes; bzip2's blocks, the slowest to decode
//! (45 MB/s a core), are decoded by a thread for every core but one (on 3
//! cores and more) and put back in order (see [`bzip2_blocks`]). A pipe
//! named as a file (`<(zcat a.gz)`, a fifo) is read like stdin. Compression
//! is recognised by magic bytes, not by file name, and so are inputs that
//! are not text at all (see [`not_text`]), which are refused before the
//! load.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufRead, BufReader, IsTerminal, Read, Seek};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::encoding::{unmark, Transcoding, TranscodingReader, Utf16Sign};
use crate::error::Error;
use crate::format::documents::{DocumentColumns, DocumentReader, OriginalLines};
use crate::format::json_values::{DocumentLines, JsonValues, NotJson};
use being_written::HoldingItsLastLine;

/// A file this small read through a rewrite is looked at for growth only
/// when it ends inside a line (see `load::note_growth`, which measured it).
const SMALL_FILE: u64 = 64 << 10;

mod being_written;
mod bzip2_blocks;

pub use being_written::Growth;

/// How a source is compressed, from its first bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    #[default]
    None,
    Gzip,
    Zstd,
    /// Wikipedia's and OpenStreetMap's dumps, and pbzip2's output (streams
    /// one after another, read as one).
    Bzip2,
    /// Streams one after another read as one, as with the others.
    Xz,
    /// The frame format of the `lz4` tool.
    Lz4,
}

impl Compression {
    pub fn detect(head: &[u8]) -> Compression {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else if is_bzip2(head) {
            Compression::Bzip2
        } else if head.starts_with(&[0xFD, b'7', b'z', b'X', b'Z', 0]) {
            Compression::Xz
        } else if head.starts_with(&[0x04, 0x22, 0x4D, 0x18]) {
            Compression::Lz4
        } else {
            Compression::None
        }
    }

    /// The tool that writes such data, and checks it (`-t`).
    pub fn tool(self) -> Option<&'static str> {
        match self {
            Compression::None => None,
            Compression::Gzip => Some("gzip"),
            Compression::Zstd => Some("zstd"),
            Compression::Bzip2 => Some("bzip2"),
            Compression::Xz => Some("xz"),
            Compression::Lz4 => Some("lz4"),
        }
    }

    /// `read` decompressed, each format's streams one after another read as
    /// one; `read` itself when not compressed. The one place that knows
    /// each format's decoder: the head looked at before the load and the
    /// chunker's stream both take it.
    fn decoder<'a, R: BufRead + Send + 'a>(self, read: R) -> io::Result<Box<dyn Read + Send + 'a>> {
        Ok(match self {
            Compression::None => Box::new(read),
            Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(read)),
            Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(read)?),
            Compression::Bzip2 => bzip2_blocks::decoder(read)?,
            Compression::Xz => Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(read)),
            Compression::Lz4 => Box::new(Lz4Frames::new(read)),
        })
    }

    /// The command that writes the input's text, for advice.
    pub fn cat_command(self) -> Option<&'static str> {
        match self {
            Compression::None => None,
            Compression::Gzip => Some("zcat"),
            Compression::Zstd => Some("zstdcat"),
            Compression::Bzip2 => Some("bzcat"),
            Compression::Xz => Some("xzcat"),
            Compression::Lz4 => Some("lz4cat"),
        }
    }
}

/// `BZh`, the block size (1 to 9), then a block's magic number or the end
/// of the stream's (an empty file compressed): three letters alone begin
/// many a text file.
fn is_bzip2(head: &[u8]) -> bool {
    let block_or_end = |magic: &[u8]| head.get(4..10) == Some(magic);
    head.len() >= 10
        && head.starts_with(b"BZh")
        && (b'1'..=b'9').contains(&head[3])
        && (block_or_end(b"1AY&SY") || block_or_end(&[0x17, 0x72, 0x45, 0x38, 0x50, 0x90]))
}

/// What a file that is not text is, from its first bytes, and what to do
/// instead; `None` for anything else. Why: loaded as text, an xz file (read
/// since) or a
/// workbook was rejected record by record, and the not-UTF-8 warning then
/// guessed an encoding for bytes no encoding reads. A magic number is not
/// enough (a CSV file may start with `PAR1`): the head must also hold a NUL
/// byte or bytes that are not UTF-8, as no text file does.
fn not_text(head: &[u8], name: &str) -> Option<String> {
    let text = !head.contains(&0) && simdutf8::basic::from_utf8(head).is_ok();
    let starts = |magic: &[u8]| head.starts_with(magic);
    let decompress = |format: &str, tool: &str| {
        let file = if name == "-" { "FILE".to_string() } else { shell_word(name) };
        format!(
            "this is compressed with {format}, which sluice does not read: decompress it into sluice's stdin \
             ({tool} -dc {file} | sluice load - ...)"
        )
    };
    let workbook = |what: &str| format!("this is {what}, not text: save its sheet as CSV and load that");
    let advice = match () {
        _ if text => return None,
        _ if starts(b"LZIP") => decompress("lzip", "lzip"),
        _ if starts(b"PK\x03\x04") && [".xlsx", ".xlsm"].iter().any(|e| name.to_lowercase().ends_with(e)) => {
            workbook("an Excel workbook (a ZIP archive)")
        }
        _ if starts(b"PK\x03\x04") => "this is a ZIP archive: unzip it and load the files inside".to_string(),
        _ if starts(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]) => {
            workbook("an Excel 97-2003 workbook (or another Office document)")
        }
        _ if starts(b"PAR1") => "this is a Parquet file, which sluice does not read: convert it to CSV first".into(),
        _ if starts(&[b'7', b'z', 0xBC, 0xAF, 0x27, 0x1C]) => {
            "this is a 7z archive: extract it and load the files inside".to_string()
        }
        _ if head.get(257..262) == Some(b"ustar") => {
            "this is a tar archive: extract it (tar -xf) and load the files inside".to_string()
        }
        _ => return None,
    };
    Some(advice)
}

/// The largest zstd block and its frame's header: what is read of a zstd
/// file to decompress its start.
const ZSTD_FIRST_BLOCK: usize = (128 << 10) + 32;

/// The same for bzip2: a block holds up to 900 kB, which compress to about
/// as much at worst.
const BZIP2_FIRST_BLOCK: usize = 1 << 20;

/// How much of an input's data is looked at to see what it is.
const LOOK: usize = 1024;

/// The first [`LOOK`] bytes of the data in `head`, decompressed as far as
/// those bytes go (a `.tar.gz` is a tar archive), to see what it is.
fn decompressed_head(compression: Compression, head: &[u8]) -> Vec<u8> {
    // zstd and bzip2 decode a block once they have all of it (up to 128
    // KiB and 900 kB): a file's first kilobyte may give nothing.
    let mut reader = match compression {
        Compression::None => return head[..head.len().min(LOOK)].to_vec(),
        compressed => match compressed.decoder(head) {
            Ok(reader) => reader,
            Err(_) => return Vec::new(),
        },
    };
    let (mut out, mut filled) = (vec![0; LOOK], 0);
    while let Ok(n @ 1..) = reader.read(&mut out[filled..]) {
        filled += n;
        if filled == LOOK {
            break;
        }
    }
    out.truncate(filled);
    out
}

/// `word` as a POSIX shell reads it back: as is when it holds nothing the
/// shell treats specially, else in single quotes.
pub(crate) fn shell_word(word: &str) -> String {
    let plain = !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"_./-+,:@%=".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// One input: a file, a pipe or stdin.
#[derive(Clone, Debug)]
pub struct Source {
    /// The name used in messages and reports: the path as given, or `-`.
    pub name: Arc<str>,
    /// `None` for stdin.
    pub path: Option<PathBuf>,
    /// Stdin or a pipe named as a file, already open and its head read.
    pub pipe: Option<Pipe>,
    pub compression: Compression,
    /// Bytes on disk (of a plain file loaded from `start`, those from
    /// there on); `None` for stdin and pipes.
    pub size: Option<u64>,
    /// Last modification, in nanoseconds since the Unix epoch; `None` for
    /// stdin and pipes. Read with the size, once (see `load::job`).
    pub modified_ns: Option<u128>,
    /// The path with links and `..` resolved, as jobs are named by it; the
    /// name as given where it cannot be resolved (stdin, some pipes).
    /// Resolved once: a glob of many files would otherwise pay for it at
    /// every use.
    pub canonical: Arc<str>,
    /// What the first bytes say of UTF-16, decompressed (see
    /// `load::apply_encoding`).
    pub utf16: Utf16Sign,
    /// Set by the load when `--encoding` names something other than UTF-8.
    pub transcoding: Option<Transcoding>,
    /// Set by the load for JSON that is one array of documents, or
    /// documents written over several lines: each becomes a line (see
    /// [`crate::format::json_values`]); with keys, the documents are the
    /// elements of the array they lead to in each top-level object
    /// (`--documents-at`).
    pub json_values: Option<Arc<[String]>>,
    /// Of the first file a glob matched: the hidden files it left out
    /// (see [`glob_sources`]), for the summary to name.
    pub hidden_left_out: Vec<String>,
    /// Set by the load for JSON lines read into columns: which key goes
    /// where, and the longest line (`--max-record-size`).
    pub documents: Option<(Arc<DocumentColumns>, u64)>,
    /// Set by the load for a file an earlier job loaded the first part of:
    /// the chunker reads it from there (see `load::loaded_before`).
    pub start: Option<Start>,
    /// The byte on disk where reading a file stops: its size when the load
    /// looked, or when its stopped job began (see
    /// `load::job::sizes_the_job_began_with`). A file written on during a
    /// load is read as it was; the rest loads on the next run.
    pub ends_at: Option<u64>,
    /// Set by the load when it loads only some of a command's inputs, and
    /// the job they would name finished on other data (a rotated log's new
    /// file under the name of the file a job loaded): the job they name
    /// then is one of its own, named after that one (see
    /// `load::job::chunk_identity`).
    pub after_job: Option<Arc<str>>,
    /// Set by the load under `--header=first-file` for an input after the
    /// first whose first record is not the first input's header: a part
    /// `split -l` cut, whose first record is data and loads as such.
    pub no_header: bool,
    /// Set by the load from `--skip-lines`: lines the chunker skips before
    /// the header or the first record, and the load's looks at the input's
    /// start (see `load::first_look::start_of`) leave out.
    pub skip_lines: u64,
}

/// Where the load begins to read a file an earlier job loaded the first
/// part of, and what came before: chunks keep their places and numbers in
/// the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Start {
    /// Bytes before it, as the chunker counts them (decompressed).
    pub byte: u64,
    /// Line ends before it.
    pub lines: u64,
    /// Data records before it, header excluded.
    pub records: u64,
    /// The file is read from after its first `lines` lines: JSON lines read
    /// into columns, whose `byte` counts the lines the chunker cuts, made
    /// of the documents, not the file's bytes.
    pub by_lines: bool,
}

/// A source opened for the chunker (see [`Source::open_chunked`]): the
/// bytes it cuts, and how much of the input they took.
pub type ChunkedStream = (Box<dyn Read + Send>, StreamCounts);

/// What was read of a source opened for the chunker.
pub struct StreamCounts {
    /// Bytes read from disk (compressed ones, for a compressed input).
    pub raw: RawCounter,
    /// Bytes of the input decompressed, before any transcoding or turning
    /// of documents into lines: its size for the summary, which the
    /// chunker's offsets, counting the lines it cuts, are not for documents.
    pub input: RawCounter,
    /// The input lines as read, for documents read into columns.
    pub originals: Option<OriginalLines>,
    /// For JSON values, the input line each line made begins at (see
    /// [`DocumentLines`]).
    pub document_lines: Option<DocumentLines>,
    /// For a plain file read through a rewrite, whether it grew while it
    /// was read (see [`being_written`]).
    pub growth: Option<Growth>,
}

/// Stdin or a pipe named on the command line, opened when the inputs are
/// resolved (a pipe closed early would cut its writer off). Its first bytes
/// (up to [`STREAM_HEAD`]) were read then, to recognise compression and to
/// name the data (`load::job`); the reader serves them again first.
#[derive(Clone)]
pub struct Pipe {
    reader: Arc<Mutex<Option<Box<dyn Read + Send>>>>,
    head_hash: u64,
    /// The first bytes, kept to read the header from before the load.
    head: Arc<[u8]>,
}

/// How much of stdin or a pipe is read before the load starts. Enough that
/// two days' exports rarely share it (so they are told apart by their
/// head), little enough to hold in memory.
pub const STREAM_HEAD: usize = 1 << 20;

impl std::fmt::Debug for Pipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pipe")
    }
}

/// Counts bytes read from the underlying file, below any decompressor, so
/// progress can be shown in on-disk bytes for compressed inputs.
#[derive(Clone, Debug, Default)]
pub struct RawCounter(Arc<AtomicU64>);

impl RawCounter {
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

struct Counting<R> {
    inner: R,
    counter: RawCounter,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter.0.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// lz4 frames one after another, read as one stream: lz4_flex's decoder
/// ends a read at each frame's end (a file of two frames loaded its first,
/// then the second's bytes as text). A read that ends a frame took the
/// bytes of its end mark; one at the end of the input takes none.
struct Lz4Frames<R: Read> {
    frames: lz4_flex::frame::FrameDecoder<LastFour<Counting<R>>>,
    taken: RawCounter,
}

impl<R: Read> Lz4Frames<R> {
    fn new(inner: R) -> Self {
        let taken = RawCounter::default();
        let counted = LastFour { inner: Counting { inner, counter: taken.clone() }, last: [0; 4] };
        Lz4Frames { frames: lz4_flex::frame::FrameDecoder::new(counted), taken }
    }
}

impl<R: Read> Read for Lz4Frames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let before = self.taken.get();
            match self.frames.read(buf) {
                Ok(0) if !buf.is_empty() && self.taken.get() != before => continue,
                Ok(0) if !buf.is_empty() && ends_with_a_frame_magic(self.frames.get_ref().last) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "lz4 input ends after a frame's magic number",
                    ))
                }
                Ok(n) => return Ok(n),
                Err(e) => self.skip_a_skippable_frame(e)?,
            }
        }
    }
}

/// Whether the input's last four bytes are a frame's magic number (lz4,
/// legacy lz4 or skippable): a file cut right after one, which lz4_flex
/// reads as the input's end, so its cut went unsaid (a whole frame ends
/// with its end mark or checksum instead).
fn ends_with_a_frame_magic(last: [u8; 4]) -> bool {
    let magic = u32::from_le_bytes(last);
    matches!(magic, 0x184D_2204 | 0x184C_2102 | 0x184D_2A50..=0x184D_2A5F)
}

/// A reader that keeps the last four bytes it read (see
/// [`ends_with_a_frame_magic`]).
struct LastFour<R> {
    inner: R,
    last: [u8; 4],
}

impl<R: Read> Read for LastFour<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        for &byte in &buf[n.saturating_sub(4)..n] {
            self.last = [self.last[1], self.last[2], self.last[3], byte];
        }
        Ok(n)
    }
}

impl<R: Read> Lz4Frames<R> {
    /// Passes over a skippable frame (metadata some writers add, such as
    /// pzstd's and lz4's own tools), of which lz4_flex reads the size and
    /// stops with an error; any other error is the input's.
    fn skip_a_skippable_frame(&mut self, error: io::Error) -> io::Result<()> {
        let skippable = error.get_ref().and_then(|e| e.downcast_ref::<lz4_flex::frame::Error>());
        let Some(&lz4_flex::frame::Error::SkippableFrame(len)) = skippable else {
            return Err(error);
        };
        let skipped = io::copy(&mut self.frames.get_mut().take(u64::from(len)), &mut io::sink())?;
        match skipped == u64::from(len) {
            true => Ok(()),
            false => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "lz4 input ends inside a skippable frame")),
        }
    }
}

impl Source {
    /// True when workers read this source's chunks by byte range.
    pub fn is_positioned(&self) -> bool {
        self.can_be_read_again() && self.is_read_as_is()
    }

    /// Whether the chunker sees the bytes as they are on disk: not
    /// decompressed, transcoded or turned from documents into lines.
    fn is_read_as_is(&self) -> bool {
        self.compression == Compression::None && !self.is_rewritten()
    }

    /// Whether the chunker's bytes are other than the input's (compression
    /// aside): transcoded, or documents turned into lines.
    pub fn is_rewritten(&self) -> bool {
        self.transcoding.is_some() || self.json_values.is_some() || self.documents.is_some()
    }

    /// A record's bytes as the rejects file shows them: a transcoded
    /// input's unreadable bytes as they were in the file (see
    /// [`crate::encoding::unmark`]).
    pub fn as_in_input<'a>(&self, record: &'a [u8]) -> Cow<'a, [u8]> {
        match self.transcoding.and_then(|_| unmark(record)) {
            Some((original, _)) => Cow::Owned(original),
            None => Cow::Borrowed(record),
        }
    }

    /// This file, to be read from `start` on (see [`Start`]): a plain file's
    /// size is then the bytes from there.
    pub fn starting_at(self, start: Start) -> Source {
        Source { start: Some(start), ..self }.sized()
    }

    /// This file, read where it is, under the name `file` it had when a job
    /// began (as given then), which led to `canonical`: renamed since.
    pub fn named_as(self, file: &str, canonical: &str) -> Source {
        Source { name: file.into(), canonical: canonical.into(), ..self }
    }

    /// The paths `file`, a name this file had as given to an earlier run,
    /// may have led to: the same name in this file's folder (renamed
    /// there, as logrotate does), and the name itself from the folder this
    /// run began in (an absolute one, or a run from the same folder).
    pub fn paths_it_had(&self, file: &str) -> Vec<String> {
        let in_its_folder = Path::new(file).file_name().map(|n| Path::new(&*self.canonical).with_file_name(n));
        let from_here = std::env::current_dir().ok().map(|here| here.join(file));
        let mut paths: Vec<String> = [in_its_folder, from_here].into_iter().flatten().map(|p| resolved(&p)).collect();
        paths.dedup();
        paths
    }

    /// This input, loaded as a job named after `job` (see [`Self::after_job`]).
    pub fn after_job(self, job: &str) -> Source {
        Source { after_job: Some(job.into()), ..self }
    }

    /// This file, read up to `end` on disk (see [`Self::ends_at`]).
    pub fn ending_at(self, end: u64) -> Source {
        Source { ends_at: Some(end), ..self }.sized()
    }

    /// Its size from its start to its end, on disk.
    fn sized(self) -> Source {
        let start = match (self.compression, self.start) {
            (Compression::None, Some(start)) if !start.by_lines => start.byte,
            _ => 0,
        };
        let size = self.ends_at.map(|end| end.saturating_sub(start)).or(self.size);
        Source { size, ..self }
    }

    /// Whether `file` (as the ledger names a file) is this input, by its
    /// name as given or the path it leads to.
    pub fn goes_by(&self, file: &str) -> bool {
        file == &*self.name || file == &*self.canonical
    }

    /// Its name as given and the path it leads to, as the ledger names it.
    pub fn names(&self) -> [&str; 2] {
        [&self.name, &self.canonical]
    }

    /// A plain file's size on disk now, where it has grown past the end
    /// this load reads it to (something writes it still), and whether it
    /// was written since the load looked at it (its time changed), not
    /// before, as a stopped job's files are read to the sizes it began with.
    pub fn grown(&self) -> Option<(u64, bool)> {
        let (Some(path), true, Some(end)) = (&self.path, self.is_positioned(), self.ends_at) else { return None };
        let meta = std::fs::metadata(path).ok()?;
        (meta.len() > end).then(|| (meta.len(), modified_ns(&meta) != self.modified_ns))
    }

    /// A plain file, opened at `byte`.
    pub fn file_at(&self, byte: u64) -> Result<File, Error> {
        let path = self.path.as_ref().ok_or_else(|| self.input_error("a pipe can be read only once"))?;
        open_file_at(path, byte)
    }

    /// A file can be read again (to reload chunks); stdin and pipes cannot.
    pub fn can_be_read_again(&self) -> bool {
        self.path.is_some() && self.pipe.is_none()
    }

    /// For stdin and pipes, a hash of their first bytes (see [`Pipe`]).
    pub fn head_hash(&self) -> Option<u64> {
        self.pipe.as_ref().map(|p| p.head_hash)
    }

    /// Opens the source for one front-to-back pass, decompressing if needed,
    /// from its first byte (whatever its [`Start`]).
    pub fn open_stream(&self) -> Result<(Box<dyn Read + Send>, RawCounter), Error> {
        let (stream, counts) = self.opened(false, None)?;
        Ok((stream, counts.raw))
    }

    /// The bytes the chunker cuts: from [`Self::start`] on, and for
    /// documents read into columns, when `keep_lines`, the input lines as
    /// they are read (see [`OriginalLines`]).
    pub fn open_chunked(&self, keep_lines: bool) -> Result<ChunkedStream, Error> {
        self.opened(keep_lines, self.start)
    }

    /// From `from`: a plain file is opened at its byte; of a compressed one,
    /// or one read by lines, the bytes or lines before it are read (after
    /// decompressing) and let go.
    fn opened(&self, keep_lines: bool, from: Option<Start>) -> Result<ChunkedStream, Error> {
        let (seek_to, skip) = match (from, self.compression) {
            (None, _) => (0, None),
            (Some(start), _) if start.by_lines => (0, Some(Skip::Lines(start.lines))),
            // Read from the start, so that the reader counts the file's lines
            // (see `DocumentLines`); its lines before are let go of.
            (Some(start), _) if self.json_values.is_some() => (0, Some(Skip::Bytes(start.byte))),
            (Some(start), Compression::None) => (start.byte, None),
            (Some(start), _) => (0, Some(Skip::Bytes(start.byte))),
        };
        // Stdin is a pipe too (see `stdin_source`): a source is a file or a pipe.
        let mut growth = None;
        let raw: Box<dyn Read + Send> = match (&self.path, &self.pipe) {
            (Some(path), None) => {
                let file = open_file_at(path, seek_to)?;
                match self.ends_at {
                    Some(end) if self.reads_lines_through_a_rewrite() => {
                        let lines_before = if seek_to > 0 { from.map_or(0, |s| s.lines) } else { 0 };
                        let file = file.take(end.saturating_sub(seek_to));
                        let reader = HoldingItsLastLine::new(file, path.clone(), (end, SMALL_FILE), lines_before);
                        growth = Some(reader.growth());
                        Box::new(reader)
                    }
                    Some(end) => Box::new(file.take(end.saturating_sub(seek_to))),
                    None => Box::new(file),
                }
            }
            (_, pipe) => {
                let taken = pipe.as_ref().and_then(|p| p.reader.lock().ok()).and_then(|mut p| p.take());
                Box::new(taken.ok_or_else(|| self.input_error("a pipe can be read only once"))?)
            }
        };
        let originals = (keep_lines && self.documents.is_some()).then(OriginalLines::default);
        let document_lines = self.json_values.as_ref().map(|_| DocumentLines::dropping(from.map_or(0, |s| s.lines)));
        let input = RawCounter::default();
        let kept = Kept { originals: originals.clone(), document_lines: document_lines.clone() };
        let (stream, raw) = self.decoded(raw, kept, (Some(input.clone()), skip))?;
        Ok((stream, StreamCounts { raw, input, originals, document_lines, growth }))
    }

    /// A plain file whose lines are rewritten before the chunker cuts them
    /// (documents into columns, a transcoding that keeps ASCII's bytes), so
    /// that a line still being written at its end is looked for below the
    /// rewrite. JSON values span lines: a document cut short fails there.
    fn reads_lines_through_a_rewrite(&self) -> bool {
        self.compression == Compression::None
            && self.json_values.is_none()
            && (self.documents.is_some() || self.transcoding.is_some())
            && self.line_feeds_are_bytes()
    }

    /// Whether each of its line feeds is one byte 0x0A, as it is read from
    /// disk: UTF-8, or an encoding that keeps ASCII's bytes (not UTF-16).
    pub fn line_feeds_are_bytes(&self) -> bool {
        self.transcoding.map_or(true, |t| t.keeps_ascii())
    }

    /// The start of the source, to read its header before the load: a file
    /// from its start, a pipe's head (the bytes read when it was opened;
    /// `true` when that is all of it). A compressed head cut short ends
    /// there rather than failing.
    pub fn open_start(&self) -> Result<(Box<dyn Read + Send>, RawCounter, bool), Error> {
        let Some(pipe) = &self.pipe else {
            let (stream, counter) = self.open_stream()?;
            return Ok((stream, counter, true));
        };
        let head = Box::new(io::Cursor::new(pipe.head.clone()));
        let (stream, counter) = self.decoded(head, Kept::default(), (None, None))?;
        Ok((Box::new(EndsAtCut(stream)), counter, pipe.head.len() < STREAM_HEAD))
    }

    /// `raw` decompressed, transcoded and turned from documents into lines
    /// as the source needs (keeping what [`Kept`] asks for, and counting
    /// the decompressed bytes after those `skip` lets go in `input`). JSON
    /// values are skipped once made into lines: their lines are the
    /// documents, which the chunker counts, and the reader counts the
    /// file's lines from its start.
    fn decoded(
        &self,
        raw: Box<dyn Read + Send>,
        kept: Kept,
        (input, skip): (Option<RawCounter>, Option<Skip>),
    ) -> Result<(Box<dyn Read + Send>, RawCounter), Error> {
        let counter = RawCounter::default();
        let counted = Counting { inner: raw, counter: counter.clone() };
        // A plain input is read straight into the chunker's block: a buffer in
        // between copied every byte once more, out of cache (chunk.rs, BLOCK).
        let buffered = |counted| BufReader::with_capacity(1 << 20, counted);
        let stream: Box<dyn Read + Send> = match self.compression {
            Compression::None => Box::new(counted),
            compressed => compressed.decoder(buffered(counted)).map_err(|e| self.input_error(&e.to_string()))?,
        };
        let (skip_first, skip_made) = match self.json_values {
            Some(_) => (None, skip),
            None => (skip, None),
        };
        let stream = Skipping::over(stream, skip_first, kept.clone(), None);
        let stream: Box<dyn Read + Send> = match &input {
            Some(counter) => Box::new(Counting { inner: stream, counter: counter.clone() }),
            None => stream,
        };
        let stream = match self.transcoding {
            Some(t) => Box::new(TranscodingReader::new(stream, t)),
            None => stream,
        };
        let stream: Box<dyn Read + Send> = match &self.json_values {
            Some(path) => Box::new(JsonValues::new(stream, path.clone()).noting_lines(kept.document_lines.clone())),
            None => stream,
        };
        let stream = Skipping::over(stream, skip_made, kept.clone(), input);
        let stream = match &self.documents {
            Some((columns, max_line)) => {
                Box::new(DocumentReader::new(stream, columns.clone(), *max_line, kept.originals))
            }
            None => stream,
        };
        Ok((stream, counter))
    }

    /// An error about this input, worded for the user.
    pub fn input_error(&self, message: &str) -> Error {
        Error::Input { file: self.name.to_string(), message: message.to_string() }
    }

    /// Why this input could not be read to its end, `raw_bytes_read` bytes
    /// into the file. A decompressor's own words ("incomplete deflate
    /// stream") do not say that the file is cut short or damaged, nor how to
    /// check it.
    pub fn read_error(&self, err: &io::Error, raw_bytes_read: u64) -> Error {
        let reason = io_reason(err);
        if err.get_ref().is_some_and(|e| e.is::<NotJson>()) {
            return self.input_error(&reason);
        }
        let Some(tool) = self.compression.tool() else { return self.input_error(&reason) };
        let check = match (&self.path, self.can_be_read_again()) {
            (Some(path), true) => format!("`{tool} -t {}` checks the file", path.display()),
            _ => format!("`{tool} -t` checks the data piped in"),
        };
        self.input_error(&format!(
            "the {tool} data is cut short or damaged ({reason}), {} bytes in; {check}; copy it again if that fails",
            crate::report::thousands(raw_bytes_read)
        ))
    }
}

/// A stream whose unexpected end (compressed data cut short) is its end.
struct EndsAtCut<R>(R);

impl<R: Read> Read for EndsAtCut<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.0.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
            other => other,
        }
    }
}

fn open_file(path: &Path) -> Result<File, Error> {
    File::open(path).map_err(|e| Error::Input { file: path.display().to_string(), message: io_reason(&e) })
}

fn open_file_at(path: &Path, offset: u64) -> Result<File, Error> {
    let mut file = open_file(path)?;
    if offset > 0 {
        file.seek(io::SeekFrom::Start(offset))
            .map_err(|e| Error::Input { file: path.display().to_string(), message: io_reason(&e) })?;
    }
    Ok(file)
}

/// What [`Skipping`] lets go of.
#[derive(Clone, Copy, Debug)]
enum Skip {
    Bytes(u64),
    Lines(u64),
}

/// What a stream opened for the chunker keeps beside its bytes, for the
/// rejects file: the input lines of documents read into columns, and the
/// input line each line made of JSON values begins at.
#[derive(Clone, Default)]
struct Kept {
    originals: Option<OriginalLines>,
    document_lines: Option<DocumentLines>,
}

/// Lets go of the first bytes or lines of `inner` at the first read: a
/// compressed file, or one read by lines, loaded from a [`Start`] is read
/// from its beginning.
struct Skipping<R> {
    inner: R,
    /// Until the first read.
    skip: Option<Skip>,
    /// What was read past the last line let go, served first.
    kept: io::Cursor<Vec<u8>>,
    /// What the stream keeps beside its bytes, which starts where the bytes
    /// let go end: told where that is.
    told: Kept,
    /// Counted what it lets go of as it was made (JSON values, byte for
    /// byte the input's): the count takes it back.
    counted: Option<RawCounter>,
}

impl<'a> Skipping<Box<dyn Read + Send + 'a>> {
    /// `inner`, letting go of what `skip` says, if anything.
    fn over(
        inner: Box<dyn Read + Send + 'a>,
        skip: Option<Skip>,
        told: Kept,
        counted: Option<RawCounter>,
    ) -> Box<dyn Read + Send + 'a> {
        match skip {
            None => inner,
            skip => Box::new(Skipping { inner, skip, kept: io::Cursor::default(), told, counted }),
        }
    }
}

impl<R: Read> Skipping<R> {
    /// Takes the `let_go` bytes back from the count of the input read,
    /// where they were counted as they were made (JSON values, byte for
    /// byte the input's).
    fn take_back(&self, let_go: u64) {
        if let Some(counted) = &self.counted {
            counted.0.fetch_sub(let_go, Ordering::Relaxed);
        }
    }

    fn let_go(&mut self, skip: Skip) -> io::Result<()> {
        let short = |what: String| io::Error::new(io::ErrorKind::UnexpectedEof, format!("it ends {what}"));
        match skip {
            Skip::Bytes(left) => {
                let skipped = io::copy(&mut (&mut self.inner).take(left), &mut io::sink())?;
                if skipped < left {
                    return Err(short(format!("{} bytes before the byte the load begins at", left - skipped)));
                }
                self.take_back(left);
            }
            Skip::Lines(mut left) => {
                let (mut block, mut read) = (vec![0u8; 64 << 10], 0);
                while left > 0 {
                    let n = self.inner.read(&mut block)?;
                    if n == 0 {
                        return Err(short(format!("{left} lines before the line the load begins at")));
                    }
                    read += n as u64;
                    for end in memchr::memchr_iter(b'\n', &block[..n]) {
                        left -= 1;
                        if left == 0 {
                            self.kept = io::Cursor::new(block[end + 1..n].to_vec());
                            break;
                        }
                    }
                }
                let let_go = read - self.kept.get_ref().len() as u64;
                if let Some(originals) = &self.told.originals {
                    originals.begin_at(let_go);
                }
                self.take_back(let_go);
            }
        }
        Ok(())
    }
}

impl<R: Read> Read for Skipping<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(skip) = self.skip.take() {
            self.let_go(skip)?;
        }
        match self.kept.read(buf)? {
            0 => self.inner.read(buf),
            n => Ok(n),
        }
    }
}

/// The OS reason without Rust's "(os error 2)" suffix.
pub fn io_reason(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Whether any of `sources` is stdin or a pipe, whose chunks cannot be read
/// a second time (to reload them, or to load them in another run).
pub fn any_read_once(sources: &[Source]) -> bool {
    sources.iter().any(|s| !s.can_be_read_again())
}

/// The bytes the chunks of `sources` cover, when known before reading
/// them: plain files read as they are. Chunks of compressed or transcoded
/// input count the bytes they decompress or transcode to.
pub fn bytes_as_chunked(sources: &[Source]) -> Option<u64> {
    sources.iter().map(|s| s.size.filter(|_| s.pipe.is_none() && s.is_read_as_is())).sum()
}

/// Expands the command line's inputs: `-` is stdin, arguments with glob
/// characters are expanded by sluice (sorted, so chunking is deterministic),
/// other arguments must name readable files or pipes. An argument that
/// names a file as it is written is that file, glob characters or not: the
/// shell expands a glob into the names it matches, and `b[1].csv` taken
/// for a pattern loaded `b1.csv` instead, exit 0 (`sales[2024].csv`: no
/// file matches this pattern).
pub fn resolve_inputs(args: &[String]) -> Result<Vec<Source>, Error> {
    let mut sources = Vec::new();
    let mut stdin_seen = false;
    for arg in args {
        if arg == "-" {
            if stdin_seen {
                return Err(Error::Usage("stdin (-) can be given only once".into()));
            }
            stdin_seen = true;
            sources.push(stdin_source()?);
        } else if let Some(refusal) = url_refused(arg) {
            return Err(refusal);
        } else if arg.contains(['*', '?', '[']) && std::fs::symlink_metadata(arg).is_err() {
            sources.extend(glob_sources(arg)?);
        } else {
            sources.push(file_source(Path::new(arg))?);
        }
    }
    if sources.is_empty() {
        return Err(Error::Usage("no input: name one or more files, a glob, or - for stdin".into()));
    }
    refuse_a_file_named_twice(&sources)?;
    Ok(sources)
}

/// The refusal of an argument that is a URL (`https://...`, `s3://...`) and
/// names no file, with the command that streams it into sluice's stdin:
/// it was "No such file or directory" (or, with a query string, a glob
/// that matched nothing). sluice reads no URL itself: a download is read
/// once, front to back, as stdin is, so piping it in loses nothing, and
/// the tool that fetches it knows its credentials. A password or query
/// string in the URL is not repeated (a signed URL's token is a secret).
fn url_refused(arg: &str) -> Option<Error> {
    let (scheme, rest) = arg.split_once("://")?;
    let is_scheme = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c));
    if !is_scheme || Path::new(arg).exists() {
        return None;
    }
    let url = Url::of(scheme, rest);
    let refused = |message: String| Some(Error::Input { file: url.shown.clone(), message });
    if url.path.contains(['*', '[']) {
        return refused(
            "a URL with wildcards, not files: sluice reads files and stdin; download the files first (`aws s3 cp \
             --recursive` with --exclude and --include, `gcloud storage cp`), then load them with a glob"
                .into(),
        );
    }
    let given = if url.secret { "URL".to_string() } else { shell_word(arg) };
    let Some(fetch) = fetch_command(scheme, &given) else {
        return refused(
            "a URL, not a file: sluice reads files and stdin; download it first, or stream it into `sluice load -`"
                .into(),
        );
    };
    let format = crate::format::FormatKind::guess(Path::new(&url.path)).map(|f| format!(" --format {}", f.name()));
    let note = if url.secret { " (URL: the one you gave, in full)" } else { "" };
    refused(format!(
        "a URL, not a file: sluice reads files and stdin. Stream it in, `{fetch} | sluice load -{} ...` with this \
         command's other options{note}, or download it first (a compressed download is recognised by its first \
         bytes)",
        format.unwrap_or_default()
    ))
}

/// A URL as messages show it, and its path.
struct Url {
    /// Without its password or query string.
    shown: String,
    path: String,
    /// It had a password or a query string (a signed URL's token).
    secret: bool,
}

impl Url {
    /// The URL `scheme://rest`.
    fn of(scheme: &str, rest: &str) -> Url {
        let (before_query, query) = rest.split_once(['?', '#']).map_or((rest, false), |(path, _)| (path, true));
        let (authority, path) = before_query.split_at(before_query.find('/').unwrap_or(before_query.len()));
        let (authority, password) = match authority.rsplit_once('@').map(|(user, host)| (user.split_once(':'), host)) {
            Some((Some((name, _)), host)) => (format!("{name}@{host}"), true),
            _ => (authority.to_string(), false),
        };
        let shown = format!("{scheme}://{authority}{path}{}", if query { "?..." } else { "" });
        Url { shown, path: path.to_string(), secret: query || password }
    }
}

/// The command that writes the file at a URL of `scheme` to its standard
/// output, `url` as given to it.
fn fetch_command(scheme: &str, url: &str) -> Option<String> {
    Some(match scheme.to_ascii_lowercase().as_str() {
        "http" | "https" | "ftp" | "ftps" => format!("curl -fsSL {url}"),
        "s3" => format!("aws s3 cp {url} -"),
        "gs" => format!("gcloud storage cat {url}"),
        "hdfs" => format!("hdfs dfs -cat {url}"),
        _ => return None,
    })
}

/// A file named twice (`'data/*.csv' data/extra.csv`, `a.csv ./a.csv`, a
/// link and its target) would load its rows twice, as `cat` would print
/// them twice; that is never what a load is for, and the duplicates would
/// go in without a word (or as rejects, under a key).
fn refuse_a_file_named_twice(sources: &[Source]) -> Result<(), Error> {
    let mut seen: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    for source in sources.iter().filter(|s| s.path.is_some() && s.pipe.is_none()) {
        if let Some(first) = seen.insert(&source.canonical, &source.name) {
            let also = match *first == *source.name {
                true => String::new(),
                false => format!(" (also as {first})"),
            };
            return Err(source.input_error(&format!(
                "named twice{also}, so its rows would load twice; name each file once (a glob and a file it \
                 matches name that file twice)"
            )));
        }
    }
    Ok(())
}

/// The files a glob matches, sorted. Folders, fifos and sockets it matches
/// are not inputs, nor are hidden files (a name beginning with a dot),
/// unless the pattern's own name begins with one: a shell's glob leaves
/// them out, and `'data/*.csv'` took the `._sales.csv` a Mac writes beside
/// each file it copies to a shared drive (its NUL bytes rejected), and
/// `'data/*'` the `.sales.csv.Xy12Ab` rsync writes a file into before it
/// renames it (a file cut short). Those left out are named.
fn glob_sources(pattern: &str) -> Result<Vec<Source>, Error> {
    let names_with_a_dot: Vec<glob::Pattern> = pattern
        .split('/')
        .filter(|name| name.starts_with('.'))
        .filter_map(|name| glob::Pattern::new(name).ok())
        .collect();
    let (mut paths, mut hidden): (Vec<PathBuf>, Vec<PathBuf>) = glob::glob(pattern)
        .map_err(|e| Error::Usage(format!("bad glob pattern '{pattern}': {e}")))?
        .filter_map(Result::ok)
        .partition(|path| !hidden_from_a_shell(path, &names_with_a_dot));
    paths.sort();
    hidden.retain(|path| path.is_file());
    hidden.sort();
    let hidden: Vec<String> = hidden.iter().map(|p| p.display().to_string()).collect();
    let mut sources = matched_files(&paths)?;
    let Some(first) = sources.first_mut() else {
        let message = match hidden.is_empty() {
            true => "no file matches this pattern".to_string(),
            false => format!(
                "no file matches this pattern but hidden ones, which a shell's glob leaves out too ({}): name \
                 them, or begin the pattern's name with a dot ('.*.csv')",
                hidden.join(", ")
            ),
        };
        return Err(Error::Input { file: pattern.into(), message });
    };
    first.hidden_left_out = hidden;
    Ok(sources)
}

/// Whether a shell's glob leaves `path` out: a name in it begins with a dot
/// and no name of the pattern that begins with one (`names_with_a_dot`)
/// matches it. Told after the walk: glob's own `require_literal_leading_dot`
/// finds nothing for a pattern whose name begins with a dot (its PR 189),
/// and its paths drop the pattern's `./`, which `Pattern` then does not
/// match.
fn hidden_from_a_shell(path: &Path, names_with_a_dot: &[glob::Pattern]) -> bool {
    path.components().any(|part| {
        let name = part.as_os_str().to_string_lossy();
        name.starts_with('.') && name != "." && name != ".." && !names_with_a_dot.iter().any(|p| p.matches(&name))
    })
}

/// The regular files among `paths`, in their order, read by several threads
/// at once: each file is opened to sniff its compression, which on a glob of
/// many small files was most of the time before the load began, while the
/// cores had nothing else to do. 24,763 files of 1.5 kB (1 M rows), 2
/// cores, medians of 5 alternated: the load 0.83 s before, 0.67 s after
/// (`cat | psql \copy` 0.56 s).
fn matched_files(paths: &[PathBuf]) -> Result<Vec<Source>, Error> {
    // Fewer files than this take less time to read than a thread to start.
    const FEWEST_PER_THREAD: usize = 256;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    let per_thread = paths.len().div_ceil(threads).max(FEWEST_PER_THREAD);
    if paths.len() <= per_thread {
        return files_among(paths);
    }
    let parts: Vec<Result<Vec<Source>, Error>> = std::thread::scope(|scope| {
        let reading: Vec<_> = paths.chunks(per_thread).map(|part| scope.spawn(move || files_among(part))).collect();
        reading.into_iter().map(|t| t.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    });
    let mut sources = Vec::with_capacity(paths.len());
    for part in parts {
        sources.extend(part?);
    }
    Ok(sources)
}

/// [`matched_files`] for one thread's share of the paths.
fn files_among(paths: &[PathBuf]) -> Result<Vec<Source>, Error> {
    let mut folders = ResolvedFolders::default();
    let mut sources = Vec::with_capacity(paths.len());
    for path in paths {
        let Ok(own) = std::fs::symlink_metadata(path) else { continue };
        let is_link = own.file_type().is_symlink();
        let meta = if is_link { std::fs::metadata(path) } else { Ok(own) };
        if meta.as_ref().is_ok_and(std::fs::Metadata::is_file) {
            let canonical = folders.canonical(path, is_link);
            sources.push(file_source_with(path, meta.expect("checked"), canonical)?);
        }
    }
    Ok(sources)
}

/// A glob's folders, each resolved once: resolving every file's path again
/// (the folder's links, the working directory) took a sixth of the start of
/// a glob of 50,000 files.
#[derive(Default)]
struct ResolvedFolders(std::collections::HashMap<PathBuf, Option<PathBuf>>);

impl ResolvedFolders {
    /// The file's resolved path: its resolved folder and its name, unless
    /// the file itself is a link.
    fn canonical(&mut self, path: &Path, is_link: bool) -> Arc<str> {
        let name = path.display().to_string();
        let (Some(parent), Some(file_name), false) = (path.parent(), path.file_name(), is_link) else {
            return canonical_name(path, &name);
        };
        let folder = self.0.entry(parent.to_path_buf()).or_insert_with(|| {
            let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
            std::fs::canonicalize(parent).ok()
        });
        match folder {
            Some(folder) => folder.join(file_name).display().to_string().into(),
            None => canonical_name(path, &name),
        }
    }
}

fn file_source(path: &Path) -> Result<Source, Error> {
    let name = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| Error::Input { file: name.clone(), message: io_reason(&e) })?;
    if meta.is_dir() {
        let message = "a folder, not a file; name its files, or a glob such as 'folder/*.csv'";
        return Err(Error::Input { file: name, message: message.into() });
    }
    if !meta.is_file() {
        return pipe_source(path);
    }
    file_source_with(path, meta, canonical_name(path, &name))
}

/// A regular file, its metadata and resolved path already read.
fn file_source_with(path: &Path, meta: std::fs::Metadata, canonical: Arc<str>) -> Result<Source, Error> {
    let name = path.display().to_string();
    let mut head = [0u8; LOOK];
    let mut file = open_file(path)?;
    let n =
        read_up_to(&mut file, &mut head).map_err(|e| Error::Input { file: name.clone(), message: io_reason(&e) })?;
    let compression = Compression::detect(&head[..n]);
    let mut sniffed = decompressed_head(compression, &head[..n]);
    // zstd gives nothing of a block before all of it is read, and the first
    // block (up to 128 KiB) of an archive of a large CSV is compressed to far
    // more than a kilobyte, so more is read; only for a name that says tar,
    // since decoding a whole block cost 0.19 ms a file (a glob of 800 zstd
    // files: 0.26 s of CPU before, 0.41 s with it for every file). So does
    // bzip2, whose blocks are larger (a `.tar.bz2` loaded as text: the tar
    // header and padding rejected with the first and last records).
    let (tar_names, first_block): (&[&str], usize) = match compression {
        Compression::Zstd => (&[".tar.zst", ".tar.zstd", ".tzst"], ZSTD_FIRST_BLOCK),
        Compression::Bzip2 => (&[".tar.bz2", ".tbz2", ".tbz", ".tb2"], BZIP2_FIRST_BLOCK),
        _ => (&[], 0),
    };
    let named_tar = tar_names.iter().any(|e| name.to_lowercase().ends_with(e));
    if named_tar && n == head.len() && sniffed.len() < LOOK {
        let mut more = head.to_vec();
        let read = (&mut file).take(first_block as u64).read_to_end(&mut more);
        read.map_err(|e| Error::Input { file: name.clone(), message: io_reason(&e) })?;
        sniffed = decompressed_head(compression, &more);
    }
    if let Some(advice) = not_text(&sniffed, &name) {
        return Err(Error::Input { file: name, message: advice });
    }
    Ok(Source {
        canonical,
        name: name.into(),
        path: Some(path.to_path_buf()),
        pipe: None,
        compression,
        size: Some(meta.len()),
        ends_at: Some(meta.len()),
        modified_ns: modified_ns(&meta),
        utf16: Utf16Sign::of(&sniffed),
        transcoding: None,
        json_values: None,
        documents: None,
        hidden_left_out: Vec::new(),
        start: None,
        after_job: None,
        no_header: false,
        skip_lines: 0,
    })
}

/// Stdin from a terminal is refused: sluice would wait for a megabyte of
/// typing (and psql users expect a prompt that sluice does not give).
fn stdin_source() -> Result<Source, Error> {
    if io::stdin().is_terminal() {
        let message = "stdin is a terminal, not data: pipe the data in (`zcat data.csv.gz | sluice load - ...`) \
                       or name the file";
        return Err(Error::Input { file: "-".into(), message: message.into() });
    }
    streamed_source("-", None, Box::new(io::stdin()))
}

/// A pipe (process substitution, a fifo, /dev/stdin) is read like stdin.
fn pipe_source(path: &Path) -> Result<Source, Error> {
    streamed_source(&path.display().to_string(), Some(path), Box::new(open_file(path)?))
}

/// Reads the head of stdin or a pipe (see [`Pipe`]) and keeps it in front
/// of the rest for the load.
fn streamed_source(name: &str, path: Option<&Path>, mut reader: Box<dyn Read + Send>) -> Result<Source, Error> {
    let mut head = vec![0; STREAM_HEAD];
    let n =
        read_up_to(&mut reader, &mut head).map_err(|e| Error::Input { file: name.into(), message: io_reason(&e) })?;
    head.truncate(n);
    let compression = Compression::detect(&head);
    let sniffed = decompressed_head(compression, &head);
    if let Some(advice) = not_text(&sniffed, name) {
        return Err(Error::Input { file: name.into(), message: advice });
    }
    let utf16 = Utf16Sign::of(&sniffed);
    let head_hash = xxhash_rust::xxh3::xxh3_64(&head);
    let head: Arc<[u8]> = head.into();
    let reader: Box<dyn Read + Send> = Box::new(io::Cursor::new(head.clone()).chain(reader));
    Ok(Source {
        name: name.into(),
        path: path.map(Path::to_path_buf),
        pipe: Some(Pipe { reader: Arc::new(Mutex::new(Some(reader))), head_hash, head }),
        compression,
        size: None,
        modified_ns: None,
        canonical: path.map_or_else(|| name.into(), |p| canonical_name(p, name)),
        utf16,
        transcoding: None,
        json_values: None,
        documents: None,
        hidden_left_out: Vec::new(),
        start: None,
        ends_at: None,
        after_job: None,
        no_header: false,
        skip_lines: 0,
    })
}

/// `path` with its folder resolved, as inputs are named
/// ([`ResolvedFolders`]), where the folder is there; else as it is.
fn resolved(path: &Path) -> String {
    let folder = path.parent().and_then(|parent| std::fs::canonicalize(parent).ok());
    match (folder, path.file_name()) {
        (Some(folder), Some(name)) => folder.join(name).display().to_string(),
        _ => path.display().to_string(),
    }
}

/// When a file was last written, as the ledger keeps it.
fn modified_ns(meta: &std::fs::Metadata) -> Option<u128> {
    meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map(|d| d.as_nanos())
}

fn canonical_name(path: &Path, name: &str) -> Arc<str> {
    std::fs::canonicalize(path).map_or_else(|_| name.into(), |p| p.display().to_string().into())
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_refused_with_the_command_that_streams_it_in() {
        let refusal = |arg: &str| url_refused(arg).map(|e| e.to_string());
        let said = refusal("https://example.com/exports/orders.csv.gz").unwrap();
        assert!(said.starts_with("https://example.com/exports/orders.csv.gz: a URL, not a file"), "{said}");
        assert!(
            said.contains("`curl -fsSL https://example.com/exports/orders.csv.gz | sluice load - --format csv ...`")
        );
        let said = refusal("s3://bucket/day=1/part-0.jsonl").unwrap();
        assert!(said.contains("`aws s3 cp s3://bucket/day=1/part-0.jsonl - | sluice load - --format jsonl ...`"));
        let said = refusal("https://me:pw9876@host/f.tsv?X-Amz-Signature=abcdef").unwrap();
        assert!(!said.contains("pw9876") && !said.contains("abcdef"), "{said}");
        assert!(said.starts_with("https://me@host/f.tsv?...: ") && said.contains("`curl -fsSL URL |"), "{said}");
        let said = refusal("s3://me:pw9876@bucket/part-*.csv").unwrap();
        assert!(said.contains("wildcards") && !said.contains("pw9876"), "{said}");
        assert!(refusal("abfss://c@acct.dfs.core.windows.net/x.csv").unwrap().contains("download it first"));
        assert_eq!(refusal("data/orders.csv"), None);
        assert_eq!(refusal("1://x"), None, "not a scheme");
    }

    #[test]
    fn detects_compression_by_magic_bytes() {
        assert_eq!(Compression::detect(&[0x1f, 0x8b, 8, 0]), Compression::Gzip);
        assert_eq!(Compression::detect(&[0x28, 0xb5, 0x2f, 0xfd]), Compression::Zstd);
        assert_eq!(Compression::detect(b"a,b"), Compression::None);
        assert_eq!(Compression::detect(b"BZh91AY&SY\x01"), Compression::Bzip2);
        let empty_stream = [&b"BZh9"[..], &[0x17, 0x72, 0x45, 0x38, 0x50, 0x90, 0, 0, 0, 0]].concat();
        assert_eq!(Compression::detect(&empty_stream), Compression::Bzip2, "an empty file compressed");
        assert_eq!(Compression::detect(b"BZh9 is a label,2\n"), Compression::None, "text that begins alike");
        assert_eq!(Compression::detect(&[0xFD, b'7', b'z', b'X', b'Z', 0, 0, 4]), Compression::Xz);
    }

    #[test]
    fn missing_file_and_empty_glob_are_input_errors() {
        let err = resolve_inputs(&["/nonexistent/x.csv".into()]).unwrap_err();
        assert_eq!(err.to_string(), "/nonexistent/x.csv: No such file or directory");
        let err = resolve_inputs(&["/nonexistent/*.csv".into()]).unwrap_err();
        assert!(err.to_string().contains("no file matches"), "{err}");
    }

    /// A glob takes the files it matches, sorted, and not the folders; each
    /// file's size, time and resolved path are read with it.
    #[test]
    fn a_glob_takes_its_files_sorted_and_skips_folders() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("c.csv")).unwrap();
        std::fs::write(dir.path().join("b.csv"), "2\n").unwrap();
        std::fs::write(dir.path().join("a.csv"), "1\n").unwrap();
        std::fs::write(dir.path().join("e.txt"), "5\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("e.txt"), dir.path().join("d.csv")).unwrap();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("link")).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let pattern = format!("{}/sub/../link/*.csv", dir.path().display());
        let sources = resolve_inputs(&[pattern]).unwrap();
        let names: Vec<&str> = sources.iter().map(|s| s.name.rsplit('/').next().unwrap()).collect();
        assert_eq!(names, ["a.csv", "b.csv", "d.csv"]);
        for source in &sources {
            let canonical = std::fs::canonicalize(source.path.as_ref().unwrap()).unwrap();
            assert_eq!(&*source.canonical, canonical.display().to_string());
        }
        assert!(sources[2].canonical.ends_with("/e.txt"), "a link resolves to its file: {}", sources[2].canonical);
        assert!(!sources[0].canonical.contains("link"), "{}", sources[0].canonical);
        // A link to a file the glob takes too names that file twice.
        std::os::unix::fs::symlink(dir.path().join("a.csv"), dir.path().join("f.csv")).unwrap();
        let twice = resolve_inputs(&[format!("{}/*.csv", dir.path().display())]).unwrap_err().to_string();
        assert!(twice.contains("f.csv: named twice (also as "), "{twice}");
        assert_eq!(sources[1].size, Some(2));
        let modified = std::fs::metadata(dir.path().join("b.csv")).unwrap().modified().unwrap();
        let since_epoch = modified.duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        assert_eq!(sources[1].modified_ns, Some(since_epoch));
        let only_folders = format!("{}/c.*", dir.path().display());
        let err = resolve_inputs(&[only_folders]).unwrap_err();
        assert!(err.to_string().contains("no file matches"), "{err}");
    }

    /// A glob leaves out hidden files (a name in the path begins with a
    /// dot) and names them, unless the pattern's name begins with a dot.
    #[test]
    fn a_glob_leaves_out_hidden_files_as_a_shell_does() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git/x")).unwrap();
        for name in ["a.csv", "._a.csv", ".b.csv", ".git/x/c.csv"] {
            std::fs::write(dir.path().join(name), name).unwrap();
        }
        let globbed = |pattern: &str| {
            let pattern = format!("{}/{pattern}", dir.path().display());
            let sources = resolve_inputs(&[pattern]).unwrap();
            let name = |path: &str| path.rsplit_once(&*dir.path().display().to_string()).unwrap().1.to_string();
            let names: Vec<String> = sources.iter().map(|s| name(&s.name)).collect();
            (names, sources[0].hidden_left_out.iter().map(|h| name(h)).collect::<Vec<_>>())
        };
        assert_eq!(globbed("*.csv"), (vec!["/a.csv".into()], vec!["/._a.csv".into(), "/.b.csv".into()]));
        assert_eq!(globbed(".*.csv"), (vec!["/._a.csv".into(), "/.b.csv".into()], vec![]));
        assert_eq!(globbed("**/*.csv").1, ["/._a.csv", "/.b.csv", "/.git/x/c.csv"]);
        assert_eq!(globbed(".git/*/*.csv"), (vec!["/.git/x/c.csv".into()], vec![]));
        std::fs::remove_file(dir.path().join("a.csv")).unwrap();
        let err = resolve_inputs(&[format!("{}/*.csv", dir.path().display())]).unwrap_err().to_string();
        assert!(err.contains("no file matches this pattern but hidden ones"), "{err}");
    }

    /// A name with glob characters that names a file as written is that
    /// file; one that names none is a pattern.
    #[test]
    fn a_file_named_with_glob_characters_is_that_file() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b[1].csv", "b1.csv", "sales[2024].csv", "what?.csv", "whatX.csv"] {
            std::fs::write(dir.path().join(name), name).unwrap();
        }
        let named = |name: &str| {
            let sources = resolve_inputs(&[format!("{}/{name}", dir.path().display())]).unwrap();
            sources.iter().map(|s| s.name.rsplit('/').next().unwrap().to_string()).collect::<Vec<_>>()
        };
        assert_eq!(named("b[1].csv"), ["b[1].csv"]);
        assert_eq!(named("sales[2024].csv"), ["sales[2024].csv"]);
        assert_eq!(named("what?.csv"), ["what?.csv"]);
        assert_eq!(named("b[0-9].csv"), ["b1.csv"], "no such file: a pattern");
        assert_eq!(named("what?.*"), ["what?.csv", "whatX.csv"]);
    }

    /// A file is read as it was when the load looked at it, though written
    /// on since; from a [`Start`], a plain file is read from that byte and a
    /// compressed one from that byte of its decompressed data.
    #[test]
    fn a_file_is_read_to_its_size_when_resolved_and_from_its_start() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let (plain, zipped) = (dir.path().join("a.csv"), dir.path().join("a.csv.gz"));
        std::fs::write(&plain, "1\n2\n3\n").unwrap();
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(b"1\n2\n3\n").unwrap();
        std::fs::write(&zipped, encoder.finish().unwrap()).unwrap();
        let names = [plain.display().to_string(), zipped.display().to_string()];
        let sources = resolve_inputs(&names).unwrap();
        std::fs::OpenOptions::new().append(true).open(&plain).unwrap().write_all(b"4\n").unwrap();
        let read = |source: &Source| {
            let (mut stream, _) = source.open_chunked(false).unwrap();
            let mut text = String::new();
            stream.read_to_string(&mut text).unwrap();
            text
        };
        assert_eq!(read(&sources[0]), "1\n2\n3\n");
        let start = Start { byte: 2, lines: 1, records: 1, by_lines: false };
        let from_start: Vec<Source> = sources.iter().map(|s| s.clone().starting_at(start)).collect();
        assert_eq!(read(&from_start[0]), "2\n3\n");
        assert_eq!(from_start[0].size, Some(4), "a plain file's size counts from its start");
        assert_eq!(read(&from_start[1]), "2\n3\n");
        assert_eq!(read(&from_start[0].clone().ending_at(8)), "2\n3\n4\n");
        // By lines (JSON lines read into columns: `byte` is not the file's).
        let by_lines = Start { byte: 1000, lines: 2, records: 2, by_lines: true };
        for source in &sources {
            let from_line = source.clone().starting_at(by_lines);
            assert_eq!(read(&from_line), "3\n", "{}", source.name);
            assert_eq!(from_line.size, source.size, "read from the start, the file's size is its progress");
        }
        let past_the_end = Start { lines: 5, ..by_lines };
        let (mut stream, _) = sources[0].clone().starting_at(past_the_end).open_chunked(false).unwrap();
        let error = stream.read_to_end(&mut Vec::new()).unwrap_err().to_string();
        assert_eq!(error, "it ends 2 lines before the line the load begins at");
    }

    /// Enough files for several threads to read them: the same order, each
    /// file with its own compression and size, the folders among them left
    /// out.
    #[test]
    fn a_glob_of_many_files_is_read_in_order_by_several_threads() {
        let dir = tempfile::tempdir().unwrap();
        let mut want = Vec::new();
        for i in 0..2_000 {
            let name = format!("f{i:05}.csv");
            if i % 97 == 0 {
                std::fs::create_dir(dir.path().join(&name)).unwrap();
                continue;
            }
            let (content, compression) = match i % 7 {
                0 => (vec![0x1f, 0x8b, 8, 0], Compression::Gzip),
                _ => (format!("{i}\n").into_bytes(), Compression::None),
            };
            std::fs::write(dir.path().join(&name), &content).unwrap();
            want.push((name, compression, content.len() as u64));
        }
        let sources = resolve_inputs(&[format!("{}/f*.csv", dir.path().display())]).unwrap();
        let got: Vec<(String, Compression, u64)> = sources
            .iter()
            .map(|s| (s.name.rsplit('/').next().unwrap().to_string(), s.compression, s.size.unwrap()))
            .collect();
        assert_eq!(got, want);
    }
}
