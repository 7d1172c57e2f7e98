//! bzip2 decoded on several cores, its blocks in parallel, where the
//! machine has cores to spare (see [`decoder`]).
//!
//! Why: bzip2 decodes at about 45 MB/s a core, so a bzip2 input was loaded
//! at the speed of the one thread decompressing it, whatever the machine
//! (100 MB of CSV: 2.0 s from bzip2 on 2 cores, 0.65 s as it is). Every
//! block of a bzip2 stream stands alone: it begins with a 48-bit magic
//! number at any bit (not byte) offset, and carries the CRC of its data, so
//! found by its magic it can be decoded apart from the others, as `lbzip2`
//! does. Why our own: of the crates that do this, `parallel_bzip2_decoder`
//! maps a whole file into memory (no pipes, no stdin), and `lbzip2` brings
//! a decoder of its own; here the decoding stays with the `bzip2` crate,
//! which is given each block as a stream of its own (the stream header,
//! the block, the end-of-stream mark and a CRC).
//!
//! A block's data may hold the magic number by chance (about once in 2^48
//! bits: once in 35 TB). The block cut there fails to decode, and is joined
//! with the pieces after it and decoded again. Each stream's own CRC, the
//! fold of its blocks' CRCs, is checked at its end, as the one-thread
//! decoder checks it: a block lost or found twice would show there.

use std::collections::VecDeque;
use std::io::{self, BufRead, Read};
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};

/// A block's magic number: the digits of pi.
const BLOCK_MAGIC: u64 = 0x3141_5926_5359;
/// The end of a stream's: the digits of the square root of pi.
const END_MAGIC: u64 = 0x1772_4538_5090;
const MAGIC_BITS: u64 = 48;
/// A magic number, then a 32-bit CRC: the block's data's, or, at a stream's
/// end, the fold of its blocks' CRCs.
const CRC_AT: u64 = MAGIC_BITS;
/// How many times a block that fails to decode is joined with the piece
/// after it: a magic number found by chance in its data cut it there.
const JOINS: usize = 2;

/// Decompressed bzip2 streams, one after another, read as one; their
/// blocks decoded by a pool of threads, up to [`AHEAD_PER_THREAD`] blocks
/// a thread ahead of the reader (one at first: a look at an input's first
/// line decodes one block), so memory stays bounded (a block holds up to
/// 900 kB, and is handed over in parts of [`PART`]).
pub(super) struct Bzip2Blocks<R: BufRead> {
    input: R,
    /// Compressed bytes from the current piece's first on, and the bits
    /// of them scanned for magic numbers.
    window: Vec<u8>,
    scanned_bytes: usize,
    /// Where the piece being read began (bits into `window`), and what.
    piece: Option<(u64, Marker)>,
    /// The block size digit of the stream being read (`BZh9`).
    level: u8,
    input_ended: bool,
    pieces: VecDeque<Awaited>,
    /// The block whose parts are being read.
    block: Option<Reading>,
    blocks_begun: usize,
    decoded: Vec<u8>,
    served: usize,
    /// The stream's CRC so far, folded from its blocks'.
    stream_crc: u32,
    pool: Pool,
}

/// What begins a piece of the compressed input: a block, or a stream's end
/// (with its CRC, then the next stream's header, if any).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Marker {
    Block,
    End,
}

/// A piece of the input as it was cut, from a magic number to the next.
struct Piece {
    bits: Arc<Bits>,
    /// Bits into its first byte of the input it began: a stream's end is
    /// padded to a byte of the input.
    shift: u64,
    level: u8,
    /// The input ends with it.
    last: bool,
}

/// A piece in input order, with its block's decoding (`None` for a
/// stream's end).
struct Awaited {
    piece: Piece,
    decoding: Option<Decoding>,
}

/// A block taken from the pieces, and whether a part of it was read.
struct Reading {
    piece: Piece,
    decoding: Decoding,
    begun: bool,
}

/// A block's decoded bytes come in parts of at most this many: a block of
/// long runs of one byte decodes to up to 46 MB, which would otherwise be
/// held whole for each block read ahead. Most blocks are one part.
const PART: usize = 4 << 20;

/// A part of a block's decoded bytes, and whether it is the block's last.
type Part = io::Result<(Vec<u8>, bool)>;

enum Decoding {
    /// Decoded on the reader's thread, a part at a time, as it is read.
    Here(BlockDecoder),
    /// Decoded by a thread of the pool, which sends one part ahead.
    Pending(Receiver<Part>),
    /// Failed before any decoding: an error of the input, in its place.
    Failed(Option<io::Error>),
}

impl Decoding {
    fn next_part(&mut self) -> Part {
        let next = match self {
            Decoding::Here(decoder) => decoder.next_part(),
            Decoding::Pending(parts) => parts.recv().ok(),
            Decoding::Failed(error) => error.take().map(Err),
        };
        next.unwrap_or_else(|| Err(io::Error::other("a bzip2 block's decoding thread stopped")))
    }
}

/// Blocks decoded at once for each decoding thread: one decoding while the
/// next waits.
const AHEAD_PER_THREAD: usize = 2;

/// Compressed bytes scanned at a time.
const READ_AT_ONCE: usize = 64 << 10;

impl<R: BufRead> Bzip2Blocks<R> {
    /// Decoding on `threads` threads; on the reader's alone for one.
    fn with_threads(mut input: R, threads: usize) -> io::Result<Self> {
        let mut header = [0; 4];
        input.read_exact(&mut header).map_err(|_| cut_short())?;
        let level = stream_level(&header).ok_or_else(|| damaged("bz2 header missing"))?;
        Ok(Bzip2Blocks {
            input,
            window: Vec::new(),
            scanned_bytes: 0,
            piece: None,
            level,
            input_ended: false,
            pieces: VecDeque::new(),
            block: None,
            blocks_begun: 0,
            decoded: Vec::new(),
            served: 0,
            stream_crc: 0,
            pool: Pool { threads, jobs: None },
        })
    }

    /// Reads and scans input until `pieces` holds enough to keep the
    /// threads busy, or the input has ended.
    fn read_ahead(&mut self) -> io::Result<()> {
        let ahead = (self.blocks_begun + 1).min(self.pool.threads * AHEAD_PER_THREAD);
        while self.pieces.len() < ahead && !self.input_ended {
            let buffered = self.input.fill_buf()?;
            if buffered.is_empty() {
                self.input_ended = true;
                self.end_the_last_piece();
                break;
            }
            // A block compresses to about 100 kB: a reader's whole buffer
            // (1 MiB) would set ten decoding at once.
            let taken = buffered.len().min(READ_AT_ONCE);
            self.window.extend_from_slice(&buffered[..taken]);
            self.input.consume(taken);
            self.scan();
            self.drop_what_was_cut();
        }
        Ok(())
    }

    /// Cuts the window at each magic number found in bytes not scanned yet
    /// (the whole number must be there: the last 6 bytes wait).
    fn scan(&mut self) {
        while self.scanned_bytes + 7 <= self.window.len() {
            let at = self.scanned_bytes;
            self.scanned_bytes += 1;
            if !MAGIC_NEXT_TWO_BYTES.may_follow([self.window[at + 1], self.window[at + 2]]) {
                continue;
            }
            for shift in 0..8 {
                let bit = at as u64 * 8 + shift;
                let marker = match read_bits(&self.window, bit, MAGIC_BITS as u32) {
                    BLOCK_MAGIC => Marker::Block,
                    END_MAGIC => Marker::End,
                    _ => continue,
                };
                self.cut_at(bit, Some(marker));
            }
        }
    }

    /// Ends the piece being read at `bit`, and starts one there (none at
    /// the input's end).
    fn cut_at(&mut self, bit: u64, next: Option<Marker>) {
        if let Some((start, marker)) = self.piece {
            let bits = Arc::new(Bits::cut(&self.window, start, bit));
            let decoding = (marker == Marker::Block).then(|| self.pool.decode(self.level, &bits));
            let piece = Piece { bits, shift: start % 8, level: self.level, last: next.is_none() };
            if marker == Marker::End {
                self.level = piece.after_the_end().and_then(|h| stream_level(&h)).unwrap_or(self.level);
            }
            self.pieces.push_back(Awaited { piece, decoding });
        } else if bit != 0 {
            self.pieces.push_back(failed(damaged("no bzip2 block after the stream header")));
        }
        self.piece = next.map(|marker| (bit, marker));
    }

    /// The input ends a stream, or is cut short.
    fn end_the_last_piece(&mut self) {
        match self.piece {
            Some((_, Marker::End)) => self.cut_at(self.window.len() as u64 * 8, None),
            _ => self.pieces.push_back(failed(cut_short())),
        }
    }

    /// Drops the bytes before the piece being read: they were copied out.
    fn drop_what_was_cut(&mut self) {
        let keep_from = match self.piece {
            Some((start, _)) => (start / 8) as usize,
            None => self.scanned_bytes,
        };
        if keep_from == 0 {
            return;
        }
        self.window.drain(..keep_from);
        self.scanned_bytes -= keep_from;
        if let Some((start, _)) = &mut self.piece {
            *start -= keep_from as u64 * 8;
        }
    }

    /// The next piece in input order, read ahead as needed.
    fn next_piece(&mut self) -> io::Result<Option<Awaited>> {
        self.read_ahead()?;
        Ok(self.pieces.pop_front())
    }

    /// Puts the next part of a block's decoded bytes in `decoded`, past
    /// the streams' ends: false at the input's end.
    fn decode_next(&mut self) -> io::Result<bool> {
        loop {
            if let Some(mut block) = self.block.take() {
                let (decoded, last) = match block.decoding.next_part() {
                    Err(error) if !block.begun => self.join_and_decode(&block.piece, error)?,
                    part => part?,
                };
                (self.decoded, self.served) = (decoded, 0);
                match last {
                    true => self.stream_crc = self.stream_crc.rotate_left(1) ^ block_crc(&block.piece.bits),
                    false => self.block = Some(Reading { begun: true, ..block }),
                }
                return Ok(true);
            }
            let Some(Awaited { piece, decoding }) = self.next_piece()? else { return Ok(false) };
            match decoding {
                Some(decoding) => {
                    self.blocks_begun += 1;
                    self.block = Some(Reading { piece, decoding, begun: false });
                }
                None => self.end_stream(&piece)?,
            }
        }
    }

    /// A block that failed to decode, joined with the pieces after it
    /// until it decodes: a magic number in its data had cut it.
    fn join_and_decode(&mut self, block: &Piece, error: io::Error) -> io::Result<(Vec<u8>, bool)> {
        let mut joined = Bits::clone(&block.bits);
        for _ in 0..JOINS {
            let Some(next) = self.next_piece()? else { break };
            joined.append(&next.piece.bits.bytes, 0, next.piece.bits.len);
            if let Ok(decoded) = decode_whole(block.level, &joined) {
                return Ok((decoded, true));
            }
        }
        Err(error)
    }

    /// Checks a stream's end: its CRC against its blocks', and that what
    /// follows is another stream or nothing.
    fn end_stream(&mut self, end: &Piece) -> io::Result<()> {
        let stored = read_bits(&end.bits.bytes, CRC_AT, 32) as u32;
        if stored != self.stream_crc {
            return Err(damaged("the stream's CRC does not match its blocks'"));
        }
        self.stream_crc = 0;
        match (end.after_the_end(), end.last) {
            (Some(nothing), true) if nothing.is_empty() => Ok(()),
            (Some(header), false) if stream_level(&header).is_some() => Ok(()),
            _ => Err(damaged("bz2 header missing")),
        }
    }
}

impl<R: BufRead> Read for Bzip2Blocks<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.served == self.decoded.len() {
            if buf.is_empty() || !self.decode_next()? {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.decoded.len() - self.served);
        buf[..n].copy_from_slice(&self.decoded[self.served..self.served + n]);
        self.served += n;
        Ok(n)
    }
}

/// An error read in its place, after the pieces before it.
fn failed(error: io::Error) -> Awaited {
    let piece = Piece { bits: Arc::new(Bits::default()), shift: 0, level: b'9', last: true };
    Awaited { piece, decoding: Some(Decoding::Failed(Some(error))) }
}

fn cut_short() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "decompression not finished but EOF reached")
}

fn damaged(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// `BZh` and the block size digit, 1 to 9.
fn stream_level(header: &[u8]) -> Option<u8> {
    match header {
        [b'B', b'Z', b'h', level @ b'1'..=b'9'] => Some(*level),
        _ => None,
    }
}

impl Piece {
    /// The input's bytes after a stream's end mark and CRC (and the
    /// padding to the byte's end): the next stream's header, or nothing.
    /// `None` where the piece does not end a byte of the input.
    fn after_the_end(&self) -> Option<Vec<u8>> {
        let from = (self.shift + CRC_AT + 32).div_ceil(8) * 8 - self.shift;
        let rest = self.bits.len.checked_sub(from)?;
        (rest % 8 == 0).then(|| (0..rest / 8).map(|i| read_bits(&self.bits.bytes, from + i * 8, 8) as u8).collect())
    }
}

/// The values of a magic number's second and third bytes, whatever its
/// shift, as bits of a table of 65,536: most bytes are passed over with one
/// look-up (with the second byte alone, one in 16 went on to be read at
/// eight shifts: 3 % of the decoding's CPU).
struct NextTwoBytes([u64; 1024]);

impl NextTwoBytes {
    fn may_follow(&self, two: [u8; 2]) -> bool {
        let pair = usize::from(u16::from_be_bytes(two));
        self.0[pair / 64] >> (pair % 64) & 1 == 1
    }
}

static MAGIC_NEXT_TWO_BYTES: NextTwoBytes = {
    let mut table = [0u64; 1024];
    let mut shift = 0;
    while shift < 8 {
        // The magic number begins `shift` bits into a byte: the next two
        // bytes hold its bits 8 - shift to 24 - shift.
        let mut magic = 0;
        while magic < 2 {
            let number = if magic == 0 { BLOCK_MAGIC } else { END_MAGIC };
            let pair = ((number >> (24 + shift)) & 0xFFFF) as usize;
            table[pair / 64] |= 1 << (pair % 64);
            magic += 1;
        }
        shift += 1;
    }
    NextTwoBytes(table)
};

/// `count` bits (at most 56) of `bytes` from bit `at`, first bit highest;
/// bits past the end read as zeros.
fn read_bits(bytes: &[u8], at: u64, count: u32) -> u64 {
    let first = (at / 8) as usize;
    let word = (0..8).fold(0u64, |word, i| (word << 8) | u64::from(*bytes.get(first + i).unwrap_or(&0)));
    (word << (at % 8)) >> (64 - count)
}

/// Bits one after another, first bit highest, as bzip2 writes them.
#[derive(Clone, Debug, Default)]
struct Bits {
    bytes: Vec<u8>,
    len: u64,
}

impl Bits {
    /// Bits `from..to` of `bytes`, moved to begin a byte.
    fn cut(bytes: &[u8], from: u64, to: u64) -> Bits {
        let mut bits = Bits { bytes: Vec::with_capacity(((to - from) / 8 + 1) as usize), len: 0 };
        bits.append(bytes, from, to - from);
        bits
    }

    /// Appends `count` bits of `bytes` from bit `from`.
    fn append(&mut self, bytes: &[u8], from: u64, count: u64) {
        let whole = if self.len % 8 == 0 { count / 8 } else { 0 };
        let first = (from / 8) as usize;
        match from % 8 {
            0 => self.bytes.extend_from_slice(&bytes[first..first + whole as usize]),
            shift => self.bytes.extend(
                bytes[first..=first + whole as usize]
                    .windows(2)
                    .map(|pair| (pair[0] << shift) | (pair[1] >> (8 - shift))),
            ),
        }
        self.len += whole * 8;
        let mut at = from + whole * 8;
        let end = from + count;
        while at < end {
            let take = (end - at).min(32) as u32;
            self.push(read_bits(bytes, at, take), take);
            at += u64::from(take);
        }
    }

    /// Appends the low `count` bits of `value`.
    fn push(&mut self, value: u64, mut count: u32) {
        while count > 0 {
            let used = (self.len % 8) as u32;
            if used == 0 {
                self.bytes.push(0);
            }
            let take = (8 - used).min(count);
            let chunk = ((value >> (count - take)) & ((1 << take) - 1)) as u8;
            *self.bytes.last_mut().expect("a byte was pushed") |= chunk << (8 - used - take);
            self.len += u64::from(take);
            count -= take;
        }
    }
}

/// The CRC of a block's data, after its magic number.
fn block_crc(block: &Bits) -> u32 {
    read_bits(&block.bytes, CRC_AT, 32) as u32
}

/// A block decoded as a stream of its own (a header of `level`, the block,
/// an end mark and the stream's CRC, which for one block is the block's),
/// a part of at most [`PART`] at a time. A block's CRC is checked at its
/// end: a block of one part is whole and checked when it is delivered.
struct BlockDecoder {
    stream: Vec<u8>,
    decoder: bzip2::Decompress,
    capacity: usize,
    ended: bool,
}

impl BlockDecoder {
    fn new(level: u8, block: &Bits) -> BlockDecoder {
        let mut stream = Bits { bytes: Vec::with_capacity(block.bytes.len() + 16), len: 0 };
        stream.append(&[b'B', b'Z', b'h', level], 0, 32);
        stream.append(&block.bytes, 0, block.len);
        stream.push(END_MAGIC, MAGIC_BITS as u32);
        stream.push(u64::from(block_crc(block)), 32);
        let capacity = usize::from(level - b'0') * 100_000 + (1 << 12);
        BlockDecoder { stream: stream.bytes, decoder: bzip2::Decompress::new(false), capacity, ended: false }
    }

    /// The next part, and whether it is the last; `None` after the last
    /// or an error.
    fn next_part(&mut self) -> Option<Part> {
        if self.ended {
            return None;
        }
        let mut part = Vec::with_capacity(self.capacity);
        let last = loop {
            let consumed = self.decoder.total_in() as usize;
            match self.decoder.decompress_vec(&self.stream[consumed..], &mut part) {
                Err(error) => break Err(damaged(&error.to_string())),
                Ok(bzip2::Status::StreamEnd) => break Ok(true),
                Ok(_) if part.len() < part.capacity() => break Err(cut_short()),
                Ok(_) if part.len() >= PART => break Ok(false),
                Ok(_) => part.reserve_exact(part.len().min(PART - part.len())),
            }
        };
        self.ended = !matches!(last, Ok(false));
        Some(last.map(|last| (part, last)))
    }
}

/// A block's decoded bytes, all of them.
fn decode_whole(level: u8, block: &Bits) -> io::Result<Vec<u8>> {
    let mut decoder = BlockDecoder::new(level, block);
    let mut whole = Vec::new();
    while let Some(part) = decoder.next_part() {
        whole.extend_from_slice(&part?.0);
    }
    Ok(whole)
}

/// bzip2 decoded by blocks on a thread for every core but one, which the
/// reader (the chunker's thread), the loading connections and often the
/// server take. With one, as on 2 cores, the `bzip2` crate's own decoder
/// reads on the reader's thread: there the server's sessions take the
/// other core, two decoding threads loaded 1 M rows 4 % slower (2.11 s
/// against 2.03 s, medians of 5) for 0.7 s more CPU, and blocks cut out
/// and decoded on the reader's thread 4 % slower too (2.09 s against
/// 2.01 s, 2.02 s of CPU against 1.94 s).
pub(super) fn decoder<'a, R: BufRead + Send + 'a>(input: R) -> io::Result<Box<dyn Read + Send + 'a>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).saturating_sub(1).min(16);
    Ok(match threads {
        0 | 1 => Box::new(bzip2::bufread::MultiBzDecoder::new(input)),
        threads => Box::new(Bzip2Blocks::with_threads(input, threads)?),
    })
}

/// The threads that decode blocks, started with the first block; with one,
/// blocks are decoded on the reader's thread.
struct Pool {
    threads: usize,
    jobs: Option<Sender<Job>>,
}

type Job = (u8, Arc<Bits>, Sender<Part>);

impl Pool {
    fn decode(&mut self, level: u8, block: &Arc<Bits>) -> Decoding {
        if self.threads == 1 {
            return Decoding::Here(BlockDecoder::new(level, block));
        }
        let jobs = self.jobs.get_or_insert_with(|| start_threads(self.threads));
        let (parts, received) = crossbeam_channel::bounded(1);
        match jobs.send((level, Arc::clone(block), parts)) {
            Ok(()) => Decoding::Pending(received),
            Err(_) => Decoding::Here(BlockDecoder::new(level, block)),
        }
    }
}

/// The decoding threads: they end when the reader is dropped. Where none
/// could start, sending fails, and blocks are decoded on the reader's.
fn start_threads(threads: usize) -> Sender<Job> {
    let (jobs, queue) = crossbeam_channel::unbounded::<Job>();
    for _ in 0..threads {
        let queue = queue.clone();
        let _ = std::thread::Builder::new().name("bzip2 blocks".into()).spawn(move || {
            for (level, block, parts) in queue {
                let mut decoder = BlockDecoder::new(level, &block);
                while let Some(part) = decoder.next_part() {
                    if parts.send(part).is_err() {
                        break;
                    }
                }
            }
        });
    }
    jobs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compressed(data: &[u8], level: u32) -> Vec<u8> {
        let mut encoder = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level));
        std::io::Write::write_all(&mut encoder, data).unwrap();
        encoder.finish().unwrap()
    }

    /// Lines that compress to several blocks at level 1 (100 kB each).
    fn lines(count: usize, seed: u64) -> Vec<u8> {
        let mut state = seed;
        let mut out = Vec::new();
        for i in 0..count {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            out.extend_from_slice(format!("{i},{},{:x}\n", state >> 40, state).as_bytes());
        }
        out
    }

    /// Reads ahead as though `pieces` blocks had been read.
    fn read_ahead_at_least(reader: &mut Bzip2Blocks<io::BufReader<&[u8]>>, pieces: usize) {
        reader.blocks_begun = pieces;
        reader.read_ahead().unwrap();
        reader.blocks_begun = 0;
        assert!(reader.pieces.len() >= pieces.min(reader.pool.threads * AHEAD_PER_THREAD));
    }

    fn read_all(input: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        Bzip2Blocks::with_threads(io::BufReader::with_capacity(4096, input), 3)?.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn blocks_decoded_apart_give_the_data_back_in_order() {
        let data = lines(60_000, 7);
        let input = compressed(&data, 1);
        let mut scanning = Bzip2Blocks::with_threads(io::BufReader::new(&input[..]), 3).unwrap();
        let mut shifts = Vec::new();
        while !scanning.input_ended {
            scanning.read_ahead().unwrap();
            shifts.extend(scanning.pieces.drain(..).map(|awaited| awaited.piece.shift));
        }
        assert!(shifts.len() > 10, "{} pieces", shifts.len());
        assert!(shifts.iter().filter(|&&shift| shift != 0).count() > 5, "blocks begin at any bit: {shifts:?}");
        assert_eq!(read_all(&input).unwrap(), data);
        // A look at the first line decodes the first block, and reads no
        // further than the next one's start.
        let mut looking = Bzip2Blocks::with_threads(io::BufReader::new(&input[..]), 3).unwrap();
        looking.read_exact(&mut [0; 10]).unwrap();
        assert_eq!((looking.blocks_begun, looking.pieces.len()), (1, 0));
    }

    #[test]
    fn streams_one_after_another_read_as_one() {
        let (a, b) = (lines(30_000, 1), lines(20_000, 2));
        let input = [compressed(&a, 1), compressed(b"", 9), compressed(&b, 9), compressed(b"", 1)].concat();
        assert_eq!(read_all(&input).unwrap(), [a, b].concat());
    }

    #[test]
    fn a_cut_or_damaged_input_is_an_error_after_the_data_before_it() {
        let data = lines(60_000, 3);
        let input = compressed(&data, 1);
        let cut = read_all(&input[..input.len() - 100]).unwrap_err();
        assert_eq!(cut.kind(), io::ErrorKind::UnexpectedEof);
        let mut damaged = input.clone();
        damaged[input.len() / 2] ^= 0x10;
        assert_eq!(read_all(&damaged).unwrap_err().kind(), io::ErrorKind::InvalidData);
        let trailing = [&input[..], b"garbage\n"].concat();
        assert!(read_all(&trailing).unwrap_err().to_string().contains("header missing"));
        // What came before the damage is read before the error.
        let mut reader = Bzip2Blocks::with_threads(io::BufReader::new(&damaged[..]), 3).unwrap();
        let mut first = vec![0; 1000];
        reader.read_exact(&mut first).unwrap();
        assert_eq!(first, data[..1000]);
    }

    #[test]
    fn a_magic_number_in_a_blocks_data_only_costs_a_second_decoding() {
        let data = lines(60_000, 5);
        let input = compressed(&data, 1);
        // The second block cut in two where a magic number is put in its
        // place: as if its data held one.
        let mut reader = Bzip2Blocks::with_threads(io::BufReader::new(&input[..]), 3).unwrap();
        read_ahead_at_least(&mut reader, 3);
        let second = reader.pieces.remove(1).unwrap().piece;
        let middle = second.bits.len / 2;
        let head = Bits::cut(&second.bits.bytes, 0, middle);
        let tail = Bits::cut(&second.bits.bytes, middle, second.bits.len);
        let as_pieces = |bits: Bits| Awaited {
            decoding: Some(Decoding::Here(BlockDecoder::new(b'1', &bits))),
            piece: Piece { bits: Arc::new(bits), shift: 0, level: b'1', last: false },
        };
        assert!(decode_whole(b'1', &head).is_err());
        reader.pieces.insert(1, as_pieces(tail));
        reader.pieces.insert(1, as_pieces(head));
        let mut out = Vec::new();
        reader.read_to_end(&mut out).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn a_block_of_long_runs_comes_in_parts() {
        let data = [vec![b'a'; 3 * PART], lines(1000, 4), vec![b'\n'; PART / 2]].concat();
        let input = compressed(&data, 9);
        let mut reader = Bzip2Blocks::with_threads(io::BufReader::new(&input[..]), 3).unwrap();
        read_ahead_at_least(&mut reader, 1);
        let first = &reader.pieces[0].piece;
        let mut decoder = BlockDecoder::new(first.level, &first.bits);
        let parts: Vec<_> = std::iter::from_fn(|| decoder.next_part()).map(Result::unwrap).collect();
        assert!(parts.len() >= 3 && parts.iter().all(|(part, _)| part.len() <= PART), "{} parts", parts.len());
        assert_eq!(parts.iter().filter(|(_, last)| *last).count(), 1);
        assert_eq!(read_all(&input).unwrap(), data);
    }

    #[test]
    fn a_block_left_out_shows_in_its_streams_crc() {
        let input = compressed(&lines(60_000, 9), 1);
        let mut reader = Bzip2Blocks::with_threads(io::BufReader::new(&input[..]), 3).unwrap();
        read_ahead_at_least(&mut reader, 3);
        reader.pieces.remove(1);
        let error = reader.read_to_end(&mut Vec::new()).unwrap_err();
        assert!(error.to_string().contains("CRC does not match"), "{error}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        /// Any streams, of any level, read through any buffer size, on
        /// the reader's thread or a pool's, give their data back.
        #[test]
        fn any_streams_read_back(
            streams in proptest::collection::vec((0usize..12_000, 1u32..=9, 0u64..1000), 1..4),
            buffer in 1usize..70_000,
            threads in 1usize..4,
        ) {
            let data: Vec<Vec<u8>> = streams.iter().map(|&(count, _, seed)| lines(count, seed)).collect();
            let input: Vec<u8> = streams.iter().zip(&data).flat_map(|(&(_, level, _), d)| compressed(d, level)).collect();
            let mut out = Vec::new();
            Bzip2Blocks::with_threads(io::BufReader::with_capacity(buffer, &input[..]), threads).unwrap().read_to_end(&mut out).unwrap();
            proptest::prop_assert_eq!(out, data.concat());
        }
    }

    #[test]
    fn bits_cut_at_any_offset_are_the_same_bits() {
        let bytes: Vec<u8> = (0..64u32).map(|i| (i * 37 + 11) as u8).collect();
        for from in 0..20 {
            for count in [0, 1, 7, 8, 9, 63, 200] {
                let cut = Bits::cut(&bytes, from, from + count);
                assert_eq!(cut.len, count);
                for bit in 0..count {
                    assert_eq!(read_bits(&cut.bytes, bit, 1), read_bits(&bytes, from + bit, 1), "{from} {count} {bit}");
                }
                let mut joined = cut.clone();
                joined.append(&bytes, 3, 13);
                assert_eq!(read_bits(&joined.bytes, count, 13), read_bits(&bytes, 3, 13));
            }
        }
    }
}
