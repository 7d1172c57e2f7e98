//! Inputs that begin with what a finished job loaded from a file of another
//! name: a log rotated (`app.log` renamed `app.log.1`, later gzipped as
//! `app.log.2.gz`), or a file moved or copied since.
//!
//! A glob such as `app.log*`, run from cron, finds the rotated file under a
//! name no job loaded: loaded whole, the rows loaded from `app.log` before
//! the rotation load a second time (1,000 of 1,200 rows, not a word).
//! [`super::loaded_before`] asks the ledger by name; this finds, for an
//! input no job loaded under its name, the files of other names whose first
//! chunk it begins with. Their readings are then compared as those of its
//! own name are, so the file is left out, or loads from where the jobs
//! ended (the lines written between the last load and the rotation).
//!
//! Why our own: only sluice's ledger knows which bytes each job committed.
//! The input's first bytes are read once and hashed as the chunker hashed
//! them, at each place where a first chunk of another name ended (past
//! 10 M places for all the inputs, only where lines end: see
//! [`each_hash`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::{copy, sink, BufRead, BufReader, Read};

use xxhash_rust::xxh3::Xxh3;

use crate::error::Error;
use crate::ledger::{chunks_loaded_by_finished_jobs, continuations_loaded_by_finished_jobs, FinishedChunk};
use crate::sink::postgres::{PgSession, TableInfo};
use crate::source::Source;

use super::loaded_before::by_job;

/// The first chunks finished jobs loaded into the table, by where they
/// begin (after a header, or not), then by where they end: built once for
/// all the inputs (a glob of 20,000 new files against as many first chunks
/// took 36 s with one for each input).
pub struct FirstChunks<'a> {
    by_place: BTreeMap<u64, Ending<'a>>,
    /// How many places (begin and end) there are.
    pub places: usize,
}

/// The first chunks that begin at one place, by where they end and their
/// hash: a drop folder's files are of few sizes (20,000 files of 10 short
/// lines, some 1,000 a size, took 2 s to look through by size alone).
#[derive(Default)]
struct Ending<'a> {
    lens: BTreeSet<u64>,
    chunks: HashMap<(u64, u64), Vec<&'a FinishedChunk>>,
}

impl<'a> FirstChunks<'a> {
    pub fn new(chunks: &'a [FinishedChunk]) -> Self {
        let mut by_place: BTreeMap<u64, Ending> = BTreeMap::new();
        for chunk in chunks {
            if let Some(hash) = chunk.content_hash {
                let ending = by_place.entry(chunk.byte_offset).or_default();
                ending.lens.insert(chunk.byte_len);
                ending.chunks.entry((chunk.byte_len, hash)).or_default().push(chunk);
            }
        }
        let places = by_place.values().map(|e| e.lens.len()).sum();
        FirstChunks { by_place, places }
    }

    /// The names of the files whose first chunk `source` begins with, other
    /// than its own: looked for at every place, or (not `everywhere`) only
    /// where a line ends (see [`each_hash`]).
    pub fn begun_with(&self, source: &Source, everywhere: bool) -> Result<HashSet<&'a str>, Error> {
        let mut found = HashSet::new();
        for (&begin, ending) in &self.by_place {
            let (stream, raw) = source.open_stream()?;
            let mut stream = BufReader::with_capacity(64 * 1024, stream);
            let read_error = |e: std::io::Error| source.read_error(&e, raw.get());
            if copy(&mut (&mut stream).take(begin), &mut sink()).map_err(read_error)? != begin {
                continue;
            }
            let mut same = |len, hash| {
                let chunks = ending.chunks.get(&(len, hash)).into_iter().flatten();
                found.extend(chunks.filter(|c| !source.goes_by(&c.file)).map(|c| c.file.as_str()));
            };
            each_hash(&mut stream, (ending.lens.iter().copied(), everywhere), &mut same).map_err(read_error)?;
        }
        Ok(found)
    }
}

/// The chunks finished jobs loaded from the files the inputs begin with
/// and those of their own names, and from files of any name that went on
/// from where those ended: a log renamed twice (`app.log`, then
/// `app.log.1`, loaded from where the jobs of `app.log` ended, then
/// `app.log.2.gz`). Asked for all the inputs at once: asked for each, a
/// glob of 100 files copied since took 6.9 s (two queries each).
pub struct LoadedAs {
    chunks: Vec<FinishedChunk>,
    /// The first chunks of the jobs' files that began where a reading ended.
    went_on: Vec<FinishedChunk>,
}

impl LoadedAs {
    pub fn fetch(
        control: &PgSession,
        (table, job): (&TableInfo, (&str, Option<&str>)),
        names: HashSet<&str>,
    ) -> Result<Self, Error> {
        let table = (&*table.display(), table.oid);
        let mut names: HashSet<String> = names.into_iter().map(str::to_string).collect();
        let (mut chunks, mut went_on, mut asked, mut ends_asked) =
            (Vec::new(), Vec::new(), HashSet::new(), HashSet::new());
        // Each round adds the names of files that went on from a reading;
        // a file renamed each day for a year is some 365 rounds at most.
        loop {
            let new: Vec<&str> = names.iter().map(String::as_str).filter(|n| !asked.contains(*n)).collect();
            if new.is_empty() {
                return Ok(LoadedAs { chunks, went_on });
            }
            chunks.extend(chunks_loaded_by_finished_jobs(control, table, job, &new)?);
            asked.extend(new.into_iter().map(str::to_string));
            let ends: Vec<u64> = ends_of(chunks.iter()).into_iter().filter(|e| ends_asked.insert(*e)).collect();
            if ends.is_empty() {
                continue;
            }
            let more = continuations_loaded_by_finished_jobs(control, table, job, &ends)?;
            names.extend(more.iter().map(|c| c.file.clone()));
            went_on.extend(more);
        }
    }

    pub fn by_file(&self) -> ByFile<'_> {
        let mut chunks: HashMap<&str, Vec<&FinishedChunk>> = HashMap::new();
        for chunk in &self.chunks {
            chunks.entry(&chunk.file).or_default().push(chunk);
        }
        ByFile { chunks, went_on: &self.went_on }
    }
}

/// [`LoadedAs`] by file.
pub struct ByFile<'a> {
    chunks: HashMap<&'a str, Vec<&'a FinishedChunk>>,
    went_on: &'a [FinishedChunk],
}

impl<'a> ByFile<'a> {
    /// The chunks of the files `names`, and of those that went on from
    /// where their readings ended, newest job first, each job's by file
    /// and in order (as the ledger gives them).
    pub fn of(&self, names: impl Iterator<Item = &'a str>) -> Vec<&'a FinishedChunk> {
        let mut names: HashSet<&str> = names.collect();
        loop {
            let mut chunks: Vec<&FinishedChunk> =
                names.iter().flat_map(|n| self.chunks.get(n)).flatten().copied().collect();
            chunks.sort_by(|a, b| {
                (&b.finished_at, &a.job, &a.file, a.byte_offset).cmp(&(&a.finished_at, &b.job, &b.file, b.byte_offset))
            });
            let ends: HashSet<u64> = ends_of(chunks.iter().copied()).into_iter().collect();
            let more: Vec<&str> = self
                .went_on
                .iter()
                .filter(|c| ends.contains(&c.byte_offset) && !names.contains(c.file.as_str()))
                .map(|c| c.file.as_str())
                .collect();
            if more.is_empty() {
                return chunks;
            }
            names.extend(more);
        }
    }
}

/// Where each job's chunks of each file end: a job that went on from one
/// may be of a file not asked for yet, whose reading (once it is) a job
/// went on from too.
fn ends_of<'a>(chunks: impl Iterator<Item = &'a FinishedChunk>) -> Vec<u64> {
    by_job(chunks).iter().filter_map(|r| r.last().map(|c| c.byte_offset + c.byte_len)).collect()
}

/// The XXH3 of the first `len` bytes of `stream` for each of `lens`
/// (ascending), as far as the stream reaches, given to `hashed`: one read.
/// Not `everywhere`: only where those bytes end a line, or the stream, as
/// a chunk does but the last one a load read of a file being written (cut
/// inside a line). The other places are most of them: a glob of 20,000 new
/// files against as many first chunks of other sizes is 400 M places, and
/// each hash took some 50 ns.
fn each_hash(
    stream: &mut impl BufRead,
    (lens, everywhere): (impl Iterator<Item = u64>, bool),
    hashed: &mut impl FnMut(u64, u64),
) -> std::io::Result<()> {
    let (mut hash, mut read, mut last) = (Xxh3::new(), 0u64, None);
    for len in lens {
        while read < len {
            let buf = stream.fill_buf()?;
            if buf.is_empty() {
                return Ok(());
            }
            let n = buf.len().min((len - read) as usize);
            hash.update(&buf[..n]);
            last = buf[..n].last().copied();
            stream.consume(n);
            read += n as u64;
        }
        if everywhere || matches!(last, Some(b'\n' | b'\r')) || stream.fill_buf()?.is_empty() {
            hashed(len, hash.digest());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(job: &str, file: &str, offset: u64) -> FinishedChunk {
        FinishedChunk {
            job: job.into(),
            file: file.into(),
            byte_offset: offset,
            byte_len: 10,
            content_hash: Some(0),
            rows: 1,
            records: 1,
            first_line: offset / 10 + 1,
            skipped_lines: 0,
            rewritten_since: false,
            finished_at: job.into(),
        }
    }

    /// `app.log` loaded by job a, then renamed `app.log.1` and loaded from
    /// where a ended by job b, which loaded the new `app.log` too; then
    /// renamed `app.log.2.gz`, read as one reading of the two names.
    #[test]
    fn the_files_that_went_on_from_where_a_reading_ended_join_it() {
        let went_on = chunk("b", "app.log.1", 10);
        let chunks = vec![chunk("b", "app.log", 0), chunk("a", "app.log", 0), went_on.clone(), chunk("c", "x", 25)];
        let loaded = LoadedAs { chunks, went_on: vec![went_on, chunk("c", "x", 25)] };
        let of = loaded.by_file().of(["app.log", "app.log.2.gz"].into_iter());
        let chunks: Vec<(&str, &str, u64)> = of.iter().map(|c| (&*c.job, &*c.file, c.byte_offset)).collect();
        assert_eq!(chunks, [("b", "app.log", 0), ("b", "app.log.1", 10), ("a", "app.log", 0)], "newest job first");
        let readings = super::super::loaded_before::readings(by_job(of.into_iter()));
        let jobs: Vec<Vec<(&str, &str)>> =
            readings.iter().map(|r| r.iter().map(|c| (&*c.job, &*c.file)).collect()).collect();
        assert!(jobs.contains(&vec![("a", "app.log"), ("b", "app.log.1")]), "{jobs:?}");
    }

    #[test]
    fn each_hash_is_of_the_bytes_up_to_a_line_end_as_far_as_the_stream_reaches() {
        let bytes = b"1,a\n2,b\r\n3,c\n4,d";
        let whole = |n: u64| xxhash_rust::xxh3::xxh3_64(&bytes[..n as usize]);
        let mut hashes = Vec::new();
        let lens = [2, 4, 9, 12, 13, 15, 16, 17];
        each_hash(&mut &bytes[..], (lens.into_iter(), false), &mut |len, hash| hashes.push((len, hash))).unwrap();
        let expected: Vec<(u64, u64)> = [4, 9, 13, 16].into_iter().map(|n| (n, whole(n))).collect();
        assert_eq!(hashes, expected, "none inside a line, and none past the end, but one at the end");
        hashes.clear();
        each_hash(&mut &bytes[..], (lens.into_iter(), true), &mut |len, hash| hashes.push((len, hash))).unwrap();
        let expected: Vec<(u64, u64)> = lens[..7].iter().map(|&n| (n, whole(n))).collect();
        assert_eq!(hashes, expected, "everywhere: inside lines too, but not past the end");
    }
}
