//! Inputs an earlier, finished job loaded in full into the same table.
//!
//! A folder that files are dropped in, loaded by a glob each hour: the glob
//! finds one file more each time, so the command names a new job, and every
//! file loaded again (3 files of 300,000 rows each, the third new: 1.5 M
//! rows in the table, 600,000 of them twice, and not a word). psql, pgloader
//! and timescaledb-parallel-copy load such files again too; Snowflake's
//! `COPY INTO` leaves out the files its load history holds, unless `FORCE`.
//! So does sluice, from its ledger: a file whose name (as given, or the
//! path it leads to) a finished job's chunks name, and which holds those
//! chunks' bytes at their places and nothing after them, is left out, and
//! the summary says so (`--load-again` loads it anyway).
//!
//! A file that holds them and more after them (a log written on) is
//! refused: loaded whole, its first rows would load twice; the message says
//! how to load the rest alone. So is one that begins with the first chunk's
//! bytes and then differs (an export written anew with rows added in the
//! middle). A file whose first chunk differs is other data, loaded as
//! before.
//!
//! Why our own: only sluice's ledger knows which bytes each job committed.
//! Not checked when the rows cannot be there twice, or the user asked for
//! them again: `--load-again`, `--truncate`, `--restart`,
//! `--on-conflict-do-nothing`, an empty table, a view (nor with
//! `--unlogged`, refused for a table with rows); nor for stdin and pipes, which cannot be read
//! twice (their job is named by their first bytes, so the same data finds
//! its finished job); nor when the job the command names is in the ledger
//! already: the ledger finds it finished, or resumes it (see
//! `ledger::open`). A `--truncate` marks the other jobs into the table
//! emptied (`sluice.jobs.emptied_at`): their files load again. A table
//! emptied outside sluice is told apart only when it is empty.

use std::collections::HashMap;
use std::io::{copy, sink, Read};

use crate::error::Error;
use crate::ledger::{chunks_loaded_by_finished_jobs, FinishedChunk};
use crate::progress::Progress;
use crate::report::{count_of, thousands};
use crate::sink::postgres::{PgSession, TableInfo};
use crate::source::{shell_word, Compression, Source};

use super::LoadRequest;

/// An input left out: an earlier job loaded all of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedBefore {
    /// Its place among the load's inputs.
    pub input: usize,
    pub job: String,
    pub rows: u64,
    pub finished_at: String,
}

/// How an input compares with what a job committed from a file of its name.
#[derive(Debug, PartialEq, Eq)]
enum Likeness {
    /// The same bytes at every chunk's place, and nothing after the last.
    Same,
    /// The same bytes at every chunk's place, and more after `end`.
    Grown { end: u64 },
    /// The first chunks' bytes, up to `end`, then others.
    Begins { end: u64, rows: u64 },
    /// Not the data that job loaded.
    Other,
}

/// The inputs earlier jobs loaded in full into `table`, or a refusal for
/// one that holds part of what a job loaded (see the module docs).
pub fn find(
    control: &PgSession,
    (req, job, progress): (&LoadRequest, &str, &Progress),
    table: &TableInfo,
    sources: &[Source],
) -> Result<Vec<LoadedBefore>, Error> {
    // `--unlogged` is refused for a table that holds rows, with its reason.
    let asked_again = req.load_again || req.truncate || req.restart || req.on_conflict_do_nothing || req.unlogged;
    let rereadable: Vec<(usize, &Source)> = sources.iter().enumerate().filter(|(_, s)| s.can_be_read_again()).collect();
    // An empty table first: a glob of 20,000 files into a new table took
    // 0.35 s instead of 0.31 s (medians of 3), the names sent to the ledger.
    if asked_again || table.is_view || rereadable.is_empty() || control.table_is_empty(table)? == Some(true) {
        return Ok(Vec::new());
    }
    // Named as given, or as the path they lead to (a run by cron with
    // absolute paths, one by hand in the folder).
    let names: Vec<&str> = rereadable.iter().flat_map(|(_, s)| [&*s.name, &*s.canonical]).collect();
    let chunks = chunks_loaded_by_finished_jobs(control, (&table.display(), table.oid), job, &names)?;
    if chunks.is_empty() {
        return Ok(Vec::new());
    }
    let mut by_file: HashMap<&str, Vec<&FinishedChunk>> = HashMap::new();
    for chunk in &chunks {
        by_file.entry(chunk.file.as_str()).or_default().push(chunk);
    }
    let of_source = |source: &Source| {
        let [named, led_to] = [&*source.name, &*source.canonical].map(|n| by_file.get(n).map(Vec::as_slice));
        let chunks = named.unwrap_or_default().iter().chain(led_to.filter(|_| named.is_none()).unwrap_or_default());
        by_job(chunks.copied())
    };
    let compared: Vec<(usize, &Source, Vec<Vec<&FinishedChunk>>)> =
        rereadable.into_iter().map(|(i, s)| (i, s, of_source(s))).filter(|(_, _, jobs)| !jobs.is_empty()).collect();
    progress.set_total(compared.iter().map(|(_, s, _)| s.size).sum());
    progress.set_checking_earlier_jobs(true);
    let found = compare_all(&compared, (req, progress), table);
    progress.set_checking_earlier_jobs(false);
    found
}

/// Each input against the files of its name earlier jobs loaded, newest
/// job first: the first that holds the same bytes leaves it out.
fn compare_all(
    compared: &[(usize, &Source, Vec<Vec<&FinishedChunk>>)],
    (req, progress): (&LoadRequest, &Progress),
    table: &TableInfo,
) -> Result<Vec<LoadedBefore>, Error> {
    let mut found = Vec::new();
    for &(input, source, ref jobs) in compared {
        for loaded in jobs {
            match compare(source, loaded, (req, progress))? {
                Likeness::Same => {
                    let rows = loaded.iter().map(|c| c.rows).sum();
                    let (job, finished_at) = (loaded[0].job.clone(), loaded[0].finished_at.clone());
                    found.push(LoadedBefore { input, job, rows, finished_at });
                    break;
                }
                Likeness::Grown { end } => return Err(grown(source, table, loaded, end, req.options.header)),
                Likeness::Begins { end, rows } => return Err(begins(source, table, loaded[0], end, rows)),
                Likeness::Other => {}
            }
        }
    }
    Ok(found)
}

/// The chunks of one file, split by job (they come newest job first, each
/// job's in order).
fn by_job<'a>(chunks: impl Iterator<Item = &'a FinishedChunk>) -> Vec<Vec<&'a FinishedChunk>> {
    let mut jobs: Vec<Vec<&FinishedChunk>> = Vec::new();
    for chunk in chunks {
        match jobs.last_mut() {
            Some(last) if last[0].job == chunk.job => last.push(chunk),
            _ => jobs.push(vec![chunk]),
        }
    }
    jobs
}

/// Reads `source` once, up to the first difference: each chunk's bytes are
/// hashed as the chunker hashed them. Chunks that leave a gap between them
/// (not one job's whole reading of the file) compare as other data.
fn compare(
    source: &Source,
    chunks: &[&FinishedChunk],
    (req, progress): (&LoadRequest, &Progress),
) -> Result<Likeness, Error> {
    let contiguous = chunks.windows(2).all(|w| w[0].byte_offset + w[0].byte_len == w[1].byte_offset);
    if !contiguous {
        return Ok(Likeness::Other);
    }
    let (mut stream, raw) = source.open_stream()?;
    let read_error = |e: std::io::Error| source.read_error(&e, raw.get());
    let first = chunks[0].byte_offset;
    if copy(&mut (&mut stream).take(first), &mut sink()).map_err(read_error)? != first {
        return Ok(Likeness::Other);
    }
    let (mut rows, mut read) = (0, raw.get());
    for (i, chunk) in chunks.iter().enumerate() {
        if req.interrupt.as_ref().is_some_and(|stop| stop.load(std::sync::atomic::Ordering::SeqCst)) {
            return Err(Error::Interrupted { chunks: 0, rows: 0 });
        }
        let hash = super::job::hash_of_next(&mut stream, chunk.byte_len).map_err(read_error)?;
        progress.chunk_checked(raw.get() - read);
        read = raw.get();
        if hash.is_none() || hash != chunk.content_hash {
            return Ok(match i {
                0 => Likeness::Other,
                _ => Likeness::Begins { end: chunk.byte_offset, rows },
            });
        }
        rows += chunk.rows;
    }
    let end = chunks.last().map_or(first, |c| c.byte_offset + c.byte_len);
    let more = stream.read(&mut [0u8; 1]).map_err(read_error)? > 0;
    Ok(if more { Likeness::Grown { end } } else { Likeness::Same })
}

/// The refusal for a file that holds what a job loaded and more after it.
fn grown(source: &Source, table: &TableInfo, loaded: &[&FinishedChunk], end: u64, header: bool) -> Error {
    let rows: u64 = loaded.iter().map(|c| c.rows).sum();
    let path = shell_word(&source.name);
    let rest = match source.compression {
        Compression::None => format!("tail -c +{} {path}", end + 1),
        Compression::Gzip => format!("zcat {path} | tail -c +{}", end + 1),
        Compression::Zstd => format!("zstdcat {path} | tail -c +{}", end + 1),
    };
    let header = if header { ", without --header" } else { "" };
    source.input_error(&format!(
        "job {} loaded its first {} bytes into {} ({}, finished at {}), and it holds them still, with more after \
         them (written on since?): loaded whole, those rows would load a second time. Load the rest alone, `{rest} \
         | sluice load - ...` with this command's other options{header}, and leave this file out of this command \
         from then on; or pass --load-again to load it whole",
        loaded[0].job,
        thousands(end),
        table.display(),
        count_of(rows, "row"),
        loaded[0].finished_at
    ))
}

/// The refusal for a file that begins with what a job loaded from a file
/// of its name, then differs.
fn begins(source: &Source, table: &TableInfo, loaded: &FinishedChunk, end: u64, rows: u64) -> Error {
    source.input_error(&format!(
        "its first {} bytes are those job {} loaded from a file of this name into {} ({} of them, finished at \
         {}), and the rest differs (the file was written anew, with rows added or changed past them): loaded \
         whole, those rows would load a second time. Pass --truncate to replace the table's rows with this \
         input's, --on-conflict-do-nothing to skip the records whose key a row holds, or --load-again to load it \
         whole anyway",
        thousands(end),
        loaded.job,
        table.display(),
        count_of(rows, "row"),
        loaded.finished_at
    ))
}

/// What the summary says of the inputs left out, one sentence a job.
pub fn said(found: &[LoadedBefore], sources: &[Source], table: &TableInfo) -> Vec<String> {
    let mut jobs: Vec<&str> = Vec::new();
    for job in found.iter().map(|f| f.job.as_str()) {
        if !jobs.contains(&job) {
            jobs.push(job);
        }
    }
    jobs.iter()
        .map(|job| {
            let of_job: Vec<&LoadedBefore> = found.iter().filter(|f| f.job == *job).collect();
            let names = super::job::names_listed(of_job.iter().map(|f| &*sources[f.input].name));
            let (it, them, hold) = match of_job.len() {
                1 => ("it", "it", "holds"),
                _ => ("they", "them", "hold"),
            };
            format!(
                "left out {names}: job {job} loaded {them} into {} in full ({}, finished at {}), and {it} {hold} \
                 the same bytes now; pass --load-again to load {them} a second time",
                table.display(),
                count_of(of_job.iter().map(|f| f.rows).sum(), "row"),
                of_job[0].finished_at,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(job: &str, offset: u64) -> FinishedChunk {
        FinishedChunk {
            job: job.into(),
            file: "a.csv".into(),
            byte_offset: offset,
            byte_len: 10,
            content_hash: Some(0),
            rows: 1,
            finished_at: String::new(),
        }
    }

    #[test]
    fn chunks_are_split_by_job_in_their_order() {
        let chunks = [chunk("b", 0), chunk("b", 10), chunk("a", 0)];
        let jobs = by_job(chunks.iter());
        let offsets: Vec<Vec<(&str, u64)>> =
            jobs.iter().map(|j| j.iter().map(|c| (c.job.as_str(), c.byte_offset)).collect()).collect();
        assert_eq!(offsets, vec![vec![("b", 0), ("b", 10)], vec![("a", 0)]]);
    }
}
