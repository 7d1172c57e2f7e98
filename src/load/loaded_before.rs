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
//! A file that holds them and more after them (a log written on, loaded
//! again by the same command) is loaded from where they end, as a job of
//! its own ([`Start`]): loaded whole, its first rows would load twice (the
//! command was refused before, as its job had loaded other data). The next
//! time, that job's chunks are read after the first job's, one reading of
//! the file. JSON lines read into columns and transcoded files, whose bytes
//! the chunker counts are not the file's, are read from after the lines
//! loaded ([`Start::by_lines`]). Where the bytes loaded end inside a line
//! (a line being written when they were read), or for a file in UTF-16
//! (whose line feeds are not one byte), such a file is refused, with how to load the rest alone. So is one that
//! begins with the first chunk's bytes and then differs (an export written
//! anew with rows added in the middle). A file whose first chunk differs
//! is other data, loaded as before. So is one of the command's own job
//! (a file of each night's rows under one name: refused as that job's
//! changed input, every night), as a job of its own named after it
//! ([`Found::replaced`]), unless it holds one of the lines sampled from the
//! chunks loaded from its name (an export written anew with a row changed
//! in its first chunk: see [`crate::samples`]).
//!
//! An input no job loaded under its name, or whose readings by name do not
//! hold it, is looked for under other names ([`super::renamed`]): a log
//! rotated (`app.log` renamed `app.log.1`) is found as what the jobs of
//! `app.log` loaded, and loads from where they ended.
//!
//! Why our own: only sluice's ledger knows which bytes each job committed.
//! Not checked when the rows cannot be there twice, or the user asked for
//! them again: `--load-again`, `--truncate`, `--restart`,
//! `--on-conflict-do-nothing`, an empty table, a view (nor with
//! `--unlogged`, refused for a table with rows); nor for stdin and pipes, which cannot be read
//! twice (their job is named by their first bytes, so the same data finds
//! its finished job); nor when the job the command names is in the ledger
//! already, unfinished or finished on inputs of the same sizes and times:
//! the ledger resumes it, or finds it finished (see `ledger::open`). A
//! `--truncate` marks the other jobs into the table emptied
//! (`sluice.jobs.emptied_at`): their files load again. A table emptied
//! outside sluice is told apart only when it is empty. Once a file is
//! loaded into it again, the others are left out still, but a table
//! rewritten since a job finished (its file node changed, as TRUNCATE
//! changes it) is said with them, naming the jobs to forget.

use std::collections::{HashMap, HashSet};
use std::io::{copy, sink, Read};

use crate::error::Error;
use crate::ledger::{chunks_loaded_by_finished_jobs, first_chunks_loaded_by_finished_jobs, FinishedChunk};
use crate::progress::Progress;
use crate::report::{count_of, thousands};
use crate::sink::postgres::{PgSession, TableInfo};
use crate::source::{shell_word, Compression, Source, Start};

use super::LoadRequest;

/// An input earlier jobs loaded all of, or the first part of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedBefore {
    /// Its place among the load's inputs.
    pub input: usize,
    /// The job, or jobs one after the other (`a, then b`), that loaded it.
    pub job: String,
    pub rows: u64,
    /// The records of its chunks: more than `rows` where some were
    /// skipped, rejected or suppressed then.
    pub records: u64,
    pub finished_at: String,
    /// The name of the file it was loaded from, where another (renamed or
    /// copied since).
    pub loaded_as: Option<String>,
    /// The jobs of the reading that finished before the table was
    /// rewritten (see `ledger::FinishedChunk::rewritten_since`): emptied,
    /// perhaps.
    pub rewritten_since: Vec<String>,
}

impl LoadedBefore {
    /// `, from NAME,` where it was loaded from a file of another name.
    fn from(&self) -> String {
        self.loaded_as.as_ref().map(|name| format!(", from {name},")).unwrap_or_default()
    }
}

/// What earlier jobs loaded of the load's inputs.
#[derive(Debug, Default)]
pub struct Found {
    /// Inputs to leave out: loaded in full.
    pub left_out: Vec<LoadedBefore>,
    /// Inputs written on since, to load from where the jobs stopped.
    pub grown: Vec<(LoadedBefore, Start)>,
    /// The command's own job, finished, loaded part of them: it takes their
    /// fingerprint once they are loaded ([`crate::ledger::take_fingerprint`]).
    pub named_job_among: bool,
    /// Inputs the command's own job, finished, loaded other data from: not
    /// its first chunk's bytes (a file written anew each night, a log
    /// rotated). They load as a job of their own, named after it.
    pub replaced: Vec<Replaced>,
    /// No row can load twice (`--on-conflict-do-nothing`, an empty table):
    /// the summary need not say how to replace rows loaded before.
    pub none_twice: bool,
}

/// An input the command's own job, finished, loaded other data from.
#[derive(Debug)]
pub struct Replaced {
    /// That job's reading of the file of its name.
    pub before: LoadedBefore,
    /// The jobs and files whose chunks were compared with it: whether it
    /// holds their rows again is told by their lines (see [`crate::samples`]).
    compared: Vec<(String, String)>,
}

/// How an input compares with what a job committed from a file of its name.
#[derive(Debug, PartialEq, Eq)]
enum Likeness {
    /// The same bytes at every chunk's place, and nothing after the last.
    Same,
    /// The same bytes at every chunk's place, and more after them, from
    /// `rest`; `whole_lines` when those bytes end a line.
    Grown { rest: Start, whole_lines: bool },
    /// The first chunks' bytes, up to `end`, then others.
    Begins { end: u64, rows: u64 },
    /// Not the data that job loaded.
    Other,
}

/// The inputs earlier jobs loaded in full into `table`, and those they
/// loaded the first part of, or a refusal for one that holds part of what a
/// job loaded and cannot load from there (see the module docs). `job` is
/// the command's job, with its fingerprint (`None` for `--job`: a job named
/// on purpose is resumed or found finished by the ledger alone).
pub fn find(
    control: &PgSession,
    (req, job, progress): (&LoadRequest, (&str, Option<&str>), &Progress),
    table: &TableInfo,
    sources: &[Source],
) -> Result<Found, Error> {
    // `--unlogged` is refused for a table that holds rows, with its reason.
    let starts_over = req.truncate || req.restart || req.unlogged;
    let rereadable: Vec<(usize, &Source)> = sources.iter().enumerate().filter(|(_, s)| s.can_be_read_again()).collect();
    if starts_over || table.is_view || rereadable.is_empty() {
        return Ok(Found::default());
    }
    // An empty table first: a glob of 20,000 files into a new table took
    // 0.35 s instead of 0.31 s (medians of 3), the names sent to the ledger.
    if req.load_again || req.on_conflict_do_nothing || control.table_is_empty(table)? == Some(true) {
        return replaced_only(control, (req, job, progress), table, &rereadable);
    }
    // Named as given, or as the path they lead to (a run by cron with
    // absolute paths, one by hand in the folder).
    let names: Vec<&str> = rereadable.iter().flat_map(|(_, s)| [&*s.name, &*s.canonical]).collect();
    let chunks = chunks_loaded_by_finished_jobs(control, (&table.display(), table.oid), job, &names)?;
    let compared = of_their_names(&rereadable, &chunks);
    progress.set_checking_earlier_jobs(true);
    progress.set_total(compared.iter().map(|(_, s, _)| s.size).sum());
    let found = compare_all(&compared, (req, job.0, progress), table);
    let found = match found {
        Ok((found, None)) => renamed_too(control, (req, job, progress), table, (&rereadable, found)),
        other => other,
    };
    let found = match found {
        Ok((found, None)) => not_held_again(control, (req, progress), (table, sources), found).map(|f| (f, None)),
        other => other,
    };
    progress.set_checking_earlier_jobs(false);
    let (found, refused) = found?;
    // The command's own job alone, its files touched or changed since: the
    // ledger finds it finished once each chunk is found again (and it takes
    // their new fingerprint), or refuses other data, as it did before.
    let own_job_alone = found.grown.is_empty() && found.left_out.iter().all(|l| l.job == job.0);
    match refused {
        Some((_, by_own_job)) if own_job_alone && by_own_job => Ok(Found::default()),
        Some((refusal, _)) => Err(refusal),
        None if own_job_alone && found.replaced.is_empty() => Ok(Found::default()),
        None => Ok(found),
    }
}

/// Where the rows of the inputs may be there again on purpose
/// (`--load-again`, `--on-conflict-do-nothing`) or are not (an empty
/// table): only the inputs the command's own job, finished, loaded other
/// data from, which it would refuse as its changed inputs (a file written
/// anew each night, loaded by the same command each night).
fn replaced_only(
    control: &PgSession,
    (req, job, progress): (&LoadRequest, (&str, Option<&str>), &Progress),
    table: &TableInfo,
    inputs: &[(usize, &Source)],
) -> Result<Found, Error> {
    let Some(fingerprint) = job.1 else { return Ok(Found::default()) };
    if !crate::ledger::finished_on_other_inputs(control, job.0, fingerprint)? {
        return Ok(Found::default());
    }
    let names: Vec<&str> = inputs.iter().flat_map(|(_, s)| [&*s.name, &*s.canonical]).collect();
    let mut chunks = chunks_loaded_by_finished_jobs(control, (&table.display(), table.oid), job, &names)?;
    chunks.retain(|c| c.job == job.0);
    let compared = of_their_names(inputs, &chunks);
    progress.set_checking_earlier_jobs(true);
    progress.set_total(compared.iter().map(|(_, s, _)| s.size).sum());
    let found = compare_all(&compared, (req, job.0, progress), table);
    progress.set_checking_earlier_jobs(false);
    // The others are the ledger's to resume, or to find finished or changed.
    // Without either flag, the table is empty.
    let none_twice = req.on_conflict_do_nothing || !req.load_again;
    Ok(Found { replaced: found?.0.replaced, none_twice, ..Found::default() })
}

/// The inputs earlier jobs loaded from files of their names, with the
/// readings of each.
fn of_their_names<'a, 's>(
    inputs: &[(usize, &'s Source)],
    chunks: &'a [FinishedChunk],
) -> Vec<(usize, &'s Source, Vec<Vec<&'a FinishedChunk>>)> {
    let mut by_file: HashMap<&str, Vec<&FinishedChunk>> = HashMap::new();
    for chunk in chunks {
        by_file.entry(chunk.file.as_str()).or_default().push(chunk);
    }
    let of_source = |source: &Source| {
        let [named, led_to] = [&*source.name, &*source.canonical].map(|n| by_file.get(n).map(Vec::as_slice));
        let chunks = named.unwrap_or_default().iter().chain(led_to.filter(|_| named.is_none()).unwrap_or_default());
        readings_from_start(chunks.copied())
    };
    inputs.iter().map(|&(i, s)| (i, s, of_source(s))).filter(|(_, _, jobs)| !jobs.is_empty()).collect()
}

/// `found`, and what earlier jobs loaded of the other inputs under other
/// names (see [`super::renamed`]): each such input is compared with the
/// readings that begin with a first chunk it begins with, and with those of
/// its own name that went on from them (a rotated log, loaded from where
/// the jobs ended: its continuation is recorded under its new name).
fn renamed_too(
    control: &PgSession,
    (req, job, progress): (&LoadRequest, (&str, Option<&str>), &Progress),
    table: &TableInfo,
    (inputs, mut found): (&[(usize, &Source)], Found),
) -> Result<(Found, Option<(Error, bool)>), Error> {
    let placed: HashSet<usize> =
        found.left_out.iter().map(|l| l.input).chain(found.grown.iter().map(|g| g.0.input)).collect();
    let unplaced: Vec<(usize, &Source)> = inputs.iter().copied().filter(|(i, _)| !placed.contains(i)).collect();
    if unplaced.is_empty() {
        return Ok((found, None));
    }
    // A file read as it is begins with no chunk longer than it (a new file
    // in a folder of 20,000 loaded ones: 0.35 s instead of 0.39 s, medians
    // of 9). Not so for one decompressed, transcoded, or read as documents.
    let as_it_is = |s: &Source| s.compression == Compression::None && !s.is_rewritten();
    let sizes: Option<Vec<u64>> = unplaced.iter().map(|(_, s)| s.size.filter(|_| as_it_is(s))).collect();
    let within = sizes.and_then(|sizes| sizes.into_iter().max());
    let first_chunks = first_chunks_loaded_by_finished_jobs(control, (&table.display(), table.oid), job, within)?;
    if first_chunks.is_empty() {
        return Ok((found, None));
    }
    let first_chunks = super::renamed::FirstChunks::new(&first_chunks);
    // At every place, to find what a load cut inside a line being written
    // (a log rotated after): but for some 10 M places (0.5 s), past which
    // only where lines end (see `renamed::each_hash`).
    let everywhere = unplaced.len().saturating_mul(first_chunks.places) <= 10_000_000;
    let mut begun = Vec::new();
    for &(input, source) in &unplaced {
        let heads = first_chunks.begun_with(source, everywhere)?;
        if !heads.is_empty() {
            begun.push((input, source, heads.into_iter().chain(source.names()).collect::<Vec<&str>>()));
        }
    }
    let names = begun.iter().flat_map(|(_, _, names)| names.iter().copied());
    let loaded = super::renamed::LoadedAs::fetch(control, (table, job), names.collect())?;
    let index = loaded.by_file();
    let compared: Vec<(usize, &Source, Vec<Vec<&FinishedChunk>>)> = begun
        .iter()
        .map(|(input, source, names)| {
            (*input, *source, readings_from_start(index.of(names.iter().copied()).into_iter()))
        })
        .collect();
    progress.add_to_total(compared.iter().map(|(_, s, _)| s.size).sum());
    let (renamed, refused) = compare_all(&compared, (req, job.0, progress), table)?;
    found.left_out.extend(renamed.left_out);
    found.grown.extend(renamed.grown);
    found.named_job_among |= renamed.named_job_among;
    let placed_now: HashSet<usize> =
        found.left_out.iter().map(|l| l.input).chain(found.grown.iter().map(|g| g.0.input)).collect();
    found.replaced.retain(|r| !placed_now.contains(&r.before.input));
    Ok((found, refused))
}

/// Each input against the files of its name earlier jobs loaded, newest
/// job first: the first that holds the same bytes leaves it out, or loads
/// it from where they end. A file that begins with a job's bytes and then
/// differs is refused, with whether that job is only the command's own.
/// One that holds none, of which the command's own job loaded a file, was
/// replaced.
fn compare_all(
    compared: &[(usize, &Source, Vec<Vec<&FinishedChunk>>)],
    (req, named, progress): (&LoadRequest, &str, &Progress),
    table: &TableInfo,
) -> Result<(Found, Option<(Error, bool)>), Error> {
    let mut found = Found::default();
    for &(input, source, ref readings) in compared {
        // The reading that holds the input's first bytes, then differs,
        // furthest: another may hold the input (a job that went on from
        // another reading ending at the same byte, see [`readings`]), or
        // all of it that this one held, and more.
        let (mut replaced, mut begun): (_, Option<(&Vec<&FinishedChunk>, u64, u64)>) = (None, None);
        for loaded in readings {
            let likeness = compare(source, loaded, (req, progress))?;
            if likeness != Likeness::Other && loaded.iter().any(|c| c.job == named) {
                found.named_job_among = true;
            }
            let before = || LoadedBefore {
                input,
                job: jobs_of(loaded),
                rows: loaded.iter().map(|c| c.rows).sum(),
                records: loaded.iter().map(|c| c.records).sum(),
                finished_at: loaded.last().map(|c| c.finished_at.clone()).unwrap_or_default(),
                loaded_as: Some(&loaded[0].file).filter(|f| !source.goes_by(f)).cloned(),
                rewritten_since: jobs_before_a_rewrite(loaded),
            };
            match likeness {
                Likeness::Same => found.left_out.push(before()),
                Likeness::Grown { rest, .. } if begun.is_some_and(|(_, end, _)| rest.byte < end) => continue,
                Likeness::Grown { rest, whole_lines: true } if loads_from_a_line(source) => {
                    let by_lines = source.documents.is_some() || source.transcoding.is_some();
                    found.grown.push((before(), Start { by_lines, ..rest }))
                }
                Likeness::Grown { rest, whole_lines } => {
                    return Err(grown(source, table, &before(), (rest, whole_lines), req.options.header))
                }
                Likeness::Begins { end, rows } => {
                    if !begun.is_some_and(|(_, furthest, _)| end <= furthest) {
                        begun = Some((loaded, end, rows));
                    }
                    continue;
                }
                Likeness::Other => {
                    if replaced.is_none() && loaded.iter().any(|c| c.job == named) {
                        replaced = Some(before());
                    }
                    continue;
                }
            }
            (replaced, begun) = (None, None);
            break;
        }
        if let Some((loaded, end, rows)) = begun {
            let by_own_job = loaded.iter().all(|c| c.job == named);
            return Ok((found, Some((begins(source, table, loaded[0], end, rows), by_own_job))));
        }
        if let Some(before) = replaced {
            let mut compared: Vec<(String, String)> =
                readings.iter().flatten().map(|c| (c.job.clone(), c.file.clone())).collect();
            compared.sort();
            compared.dedup();
            found.replaced.push(Replaced { before, compared });
        }
    }
    Ok((found, None))
}

/// `found`, but for the inputs replaced (see [`Found::replaced`]) that
/// hold a line sampled from the chunks they were compared with: refused, as
/// an export written anew with rows changed in its first chunk, whose rows
/// loaded before would load again. Those of whose chunks a line was not
/// sampled (an older sluice's) are left to the ledger, which refuses them
/// as changed, as it did.
fn not_held_again(
    control: &PgSession,
    (req, progress): (&LoadRequest, &Progress),
    (table, sources): (&TableInfo, &[Source]),
    mut found: Found,
) -> Result<Found, Error> {
    let mut replaced = Vec::new();
    for r in std::mem::take(&mut found.replaced) {
        let Some(samples) = crate::ledger::line_samples(control, &r.compared)? else { continue };
        let source = &sources[r.before.input];
        let (stream, raw) = source.open_stream()?;
        progress.add_to_total(source.size);
        let (mut read, counter) = (0, raw.clone());
        let stop = move || {
            progress.chunk_checked(counter.get() - read);
            read = counter.get();
            super::interrupted(req.interrupt.as_deref())
        };
        match crate::samples::first_line_found(stream, |hash| samples.contains_key(&hash), stop) {
            Ok(None) => replaced.push(r),
            Ok(Some((line, hash))) => return Err(held_again(source, table, &r.before, (line, &samples[&hash]))),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                return Err(Error::Interrupted { chunks: 0, rows: 0 })
            }
            Err(e) => return Err(source.read_error(&e, raw.get())),
        }
    }
    found.replaced = replaced;
    Ok(found)
}

/// The readings of `chunks` (see [`readings`]) that begin at the file's
/// first line, or its second (after a header), past the lines their first
/// job's `--skip-lines` skipped, whatever this load's: a file loaded with
/// `--skip-lines 2`, then by a command without it, is found loaded (it
/// loaded again, its title lines rejected). One that begins later went
/// on from a reading of the file under another name (renamed since), found
/// as such (see [`super::renamed::LoadedAs`]): alone, the bytes before it
/// would go unchecked.
fn readings_from_start<'a>(chunks: impl Iterator<Item = &'a FinishedChunk>) -> Vec<Vec<&'a FinishedChunk>> {
    readings(by_job(chunks)).into_iter().filter(|r| r[0].first_line <= r[0].skipped_lines.saturating_add(2)).collect()
}

/// The jobs whose chunks one reading of a file joins, one after the other
/// (a log loaded each hour as it grows: the first, how many more, the last).
fn jobs_of(reading: &[&FinishedChunk]) -> String {
    let mut jobs: Vec<&str> = Vec::new();
    for chunk in reading {
        if jobs.last() != Some(&chunk.job.as_str()) {
            jobs.push(&chunk.job);
        }
    }
    match jobs.as_slice() {
        [.., last] if jobs.len() > 3 => {
            format!("{}, then {} more, the last {last}", jobs[0], thousands(jobs.len() as u64 - 2))
        }
        _ => jobs.join(", then "),
    }
}

/// The chunks of one file (or a file and those it had other names as),
/// split by job and file (they come newest job first, each job's by file
/// and in order).
pub(super) fn by_job<'a>(chunks: impl Iterator<Item = &'a FinishedChunk>) -> Vec<Vec<&'a FinishedChunk>> {
    let mut jobs: Vec<Vec<&FinishedChunk>> = Vec::new();
    for chunk in chunks {
        match jobs.last_mut() {
            Some(last) if last[0].job == chunk.job && last[0].file == chunk.file => last.push(chunk),
            _ => jobs.push(vec![chunk]),
        }
    }
    jobs
}

/// One reading of the file from its start each: a job's chunks, and after
/// them those of the jobs that loaded the file from where they ended (see
/// [`Start`]), newest first. A job that begins where another ends is such a
/// job, and no reading of its own: read alone, the bytes before it would go
/// unchecked.
///
/// Jobs are joined by where they begin and end, which the ledger keeps, not
/// by which went on from which. Where two readings end at the same byte (a
/// log rotated, whose new file grew to the very size of the old one: lines
/// of one width), a job that begins there went on from one of them, and
/// both take it: each also stands without it, after the readings with it
/// ([`compare_all`] takes the first that holds the input). Each way on is
/// a reading, up to [`MOST_WAYS`] from one job; past that, the newest way
/// alone, as before: the old file was refused as written anew past its
/// first bytes.
pub(super) fn readings(jobs: Vec<Vec<&FinishedChunk>>) -> Vec<Vec<&FinishedChunk>> {
    let joins = Joins::of(&jobs);
    let mut readings = Vec::new();
    for head in (0..jobs.len()).filter(|&j| !joins.ending_at.contains_key(&jobs[j][0].byte_offset)) {
        let ways = joins.every_way_on(head).unwrap_or_else(|| vec![joins.newest_way_on(head)]);
        readings.extend(ways.iter().map(|way| way.iter().flat_map(|&j| jobs[j].iter().copied()).collect()));
    }
    readings
}

/// The most readings [`readings`] takes from one job: a log rotated daily
/// at one size, loaded hourly, might join each hour's job to every day's.
const MOST_WAYS: usize = 64;

/// Where jobs begin and end, to join them (see [`readings`]).
struct Joins {
    ends: Vec<u64>,
    /// Jobs by where they begin, newest first: a log loaded each hour for a
    /// year is some 9,000 jobs, which a search of the list for each would
    /// take 9,000 times.
    beginning_at: HashMap<u64, Vec<usize>>,
    /// How many jobs end at each byte.
    ending_at: HashMap<u64, usize>,
}

impl Joins {
    fn of(jobs: &[Vec<&FinishedChunk>]) -> Joins {
        let ends: Vec<u64> = jobs.iter().map(|job| job.last().map_or(0, |c| c.byte_offset + c.byte_len)).collect();
        let mut beginning_at: HashMap<u64, Vec<usize>> = HashMap::new();
        let mut ending_at: HashMap<u64, usize> = HashMap::new();
        for (i, job) in jobs.iter().enumerate() {
            beginning_at.entry(job[0].byte_offset).or_default().push(i);
            *ending_at.entry(ends[i]).or_default() += 1;
        }
        Joins { ends, beginning_at, ending_at }
    }

    /// The jobs that begin where job `j` ends.
    fn after(&self, j: usize) -> &[usize] {
        self.beginning_at.get(&self.ends[j]).map_or(&[], Vec::as_slice)
    }

    /// Every way on from job `head` (jobs, one after the other), each way
    /// before the ways it is the start of where another job ends where it
    /// does; `None` past [`MOST_WAYS`]. Walked with a stack of its own, not
    /// by recursion: a year of hourly loads is 9,000 jobs deep.
    fn every_way_on(&self, head: usize) -> Option<Vec<Vec<usize>>> {
        let (mut ways, mut way, mut on_way) = (Vec::new(), vec![head], HashSet::from([head]));
        // For each job of the way, how many of the jobs after it were tried.
        let mut tried = vec![0];
        while let Some(&last) = way.last() {
            let after = self.after(last);
            let at = tried.last_mut().expect("one count a job");
            while *at < after.len() && on_way.contains(&after[*at]) {
                *at += 1;
            }
            if let Some(&next) = after.get(*at) {
                *at += 1;
                way.push(next);
                on_way.insert(next);
                tried.push(0);
                continue;
            }
            let went_on = after.iter().any(|j| !on_way.contains(j));
            if !went_on || self.ending_at[&self.ends[last]] > 1 {
                ways.push(way.clone());
                if ways.len() > MOST_WAYS {
                    return None;
                }
            }
            way.pop();
            on_way.remove(&last);
            tried.pop();
        }
        Some(ways)
    }

    /// The way on from job `head` through the newest job at each join.
    fn newest_way_on(&self, head: usize) -> Vec<usize> {
        let (mut way, mut on_way) = (vec![head], HashSet::from([head]));
        while let Some(&next) = self.after(*way.last().expect("the head")).iter().find(|j| !on_way.contains(*j)) {
            way.push(next);
            on_way.insert(next);
        }
        way
    }
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
    let mut last = LineEnds::default();
    for (i, chunk) in chunks.iter().enumerate() {
        if super::interrupted(req.interrupt.as_deref()) {
            return Err(Error::Interrupted { chunks: 0, rows: 0 });
        }
        let hash = match i + 1 == chunks.len() {
            true => super::job::hash_of_next(&mut last.counting(&mut stream), chunk.byte_len),
            false => super::job::hash_of_next(&mut stream, chunk.byte_len),
        }
        .map_err(read_error)?;
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
    if !more {
        return Ok(Likeness::Same);
    }
    let records = chunks.iter().map(|c| c.records).sum();
    let lines_before_last = chunks.last().map_or(0, |c| c.first_line - 1);
    let lines = lines_before_last + last.ended().unwrap_or(last.lf);
    let rest = Start { byte: end, lines, records, by_lines: false };
    Ok(Likeness::Grown { rest, whole_lines: last.ended().is_some() })
}

/// The line ends of the bytes read through it (see
/// [`LineEnds::counting`]), and the last byte.
#[derive(Debug, Default)]
struct LineEnds {
    lf: u64,
    cr: u64,
    last: Option<u8>,
}

impl LineEnds {
    fn counting<'a>(&'a mut self, inner: impl Read + 'a) -> impl Read + 'a {
        Tally { inner, ends: self }
    }

    /// The line ends read, when the last byte ended a line: `\n` ends
    /// lines (`\r\n` too), `\r` alone those of a file of bare carriage
    /// returns.
    fn ended(&self) -> Option<u64> {
        match self.last {
            Some(b'\n') => Some(self.lf),
            Some(b'\r') => Some(self.cr),
            _ => None,
        }
    }
}

struct Tally<'a, R> {
    inner: R,
    ends: &'a mut LineEnds,
}

impl<R: Read> Read for Tally<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let read = &buf[..n];
        self.ends.lf += memchr::memchr_iter(b'\n', read).count() as u64;
        self.ends.cr += memchr::memchr_iter(b'\r', read).count() as u64;
        if let Some(&last) = read.last() {
            self.ends.last = Some(last);
        }
        Ok(n)
    }
}

/// Whether a file grown since a job loaded it can be loaded from the line
/// after those loaded: not one transcoded from UTF-16, whose lines are
/// skipped before they are transcoded, by line feeds of one byte; nor JSON
/// values transcoded, whose place is told in the transcoded bytes.
fn loads_from_a_line(source: &Source) -> bool {
    source.line_feeds_are_bytes() && (source.transcoding.is_none() || source.json_values.is_none())
}

/// The refusal for a file that holds what a job loaded and more after it,
/// where the load cannot begin (see the module docs): how to load the rest
/// alone. The chunker's bytes are the file's unless it is transcoded or
/// read as documents: the rest is then told by its lines, as it is when
/// the bytes loaded end inside a line (whose rest is no row of its own).
/// Its lines are skipped before they are transcoded, by their line feeds,
/// which in UTF-16 are two bytes: such a file is loaded only whole.
fn grown(
    source: &Source,
    table: &TableInfo,
    loaded: &LoadedBefore,
    (rest, whole_lines): (Start, bool),
    header: bool,
) -> Error {
    let path = shell_word(&source.name);
    let rewritten = source.documents.is_some() || source.transcoding.is_some();
    let then = loaded.loaded_as.as_ref().map(|name| format!("named {name} then, ")).unwrap_or_default();
    let loaded_from = |what: &str| {
        format!(
            "{then}job {} loaded {} from its first {what}, into {} (finished at {}), and it holds them still, with \
             more after them (written on since?): loaded whole, those rows would load a second time",
            loaded.job,
            count_of(loaded.rows, "row"),
            table.display(),
            loaded.finished_at,
        )
    };
    if source.json_values.is_some() {
        return source.input_error(&format!(
            "{}, and sluice reads JSON written over several lines only from its start. Load the documents after \
             those alone, from a file of their own, and leave this file out of this command from then on; or \
             pass --load-again to load it whole",
            loaded_from("documents")
        ));
    }
    let (what, why, tail) = match (whole_lines, rewritten) {
        (false, _) => (
            format!("{} bytes, which end inside line {}", thousands(rest.byte), thousands(rest.lines + 1)),
            "that line was read as it stood then (being written?), so its row was loaded cut short or rejected: \
             see to it yourself",
            format!("tail -n +{}", rest.lines + 2),
        ),
        (true, true) => (
            count_of(rest.lines, "line"),
            "sluice loads a file in UTF-16 (or another encoding whose line ends are not ASCII's) only from its \
             start",
            format!("tail -n +{}", rest.lines + 1),
        ),
        (true, false) => (format!("{} bytes", thousands(rest.byte)), "", format!("tail -c +{}", rest.byte + 1)),
    };
    let rest_of = match source.compression.cat_command() {
        None => format!("{tail} {path}"),
        Some(cat) => format!("{cat} {path} | {tail}"),
    };
    let why = if why.is_empty() { String::new() } else { format!(", and {why}") };
    let header = if header { ", without --header" } else { "" };
    source.input_error(&format!(
        "{}{why}. Load the rest alone, `{rest_of} | sluice load - ...` with this command's other options{header}, \
         and leave this file out of this command from then on; or pass --load-again to load it whole",
        loaded_from(&what)
    ))
}

/// The refusal for a file that begins with what a job loaded from a file
/// of its name, then differs.
fn begins(source: &Source, table: &TableInfo, loaded: &FinishedChunk, end: u64, rows: u64) -> Error {
    let file = match source.goes_by(&loaded.file) {
        true => "a file of this name".to_string(),
        false => format!("{} (renamed or copied since?)", loaded.file),
    };
    source.input_error(&format!(
        "its first {} bytes are those job {} loaded from {file} into {} ({} of them, finished at \
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

/// What the summary says of an input loaded from where earlier jobs ended.
/// (The byte only where it is the file's: not for JSON lines read into
/// columns, see [`Start::by_lines`].)
pub fn grown_said(before: &LoadedBefore, start: Start, sources: &[Source], table: &TableInfo) -> String {
    let source = &sources[before.input];
    let byte = match start.by_lines {
        true => String::new(),
        false => format!(" (byte {})", thousands(start.byte)),
    };
    // JSON values are counted in documents, their lines made one a document.
    let line = if source.json_values.is_some() { "its document" } else { "line" };
    format!(
        "loading {} from {line} {}{byte}: job {} loaded the {} before it{} into {} (finished at {}), and the file \
         holds them still; pass --load-again to load it whole{}",
        source.name,
        thousands(start.lines + 1),
        before.job,
        count_of(before.rows, "row"),
        before.from(),
        table.display(),
        before.finished_at,
        rewritten_since(&before.rewritten_since, table),
    )
}

/// The jobs of a reading that finished before the table was rewritten.
fn jobs_before_a_rewrite(reading: &[&FinishedChunk]) -> Vec<String> {
    let mut jobs: Vec<String> = reading.iter().filter(|c| c.rewritten_since).map(|c| c.job.clone()).collect();
    jobs.dedup();
    jobs
}

/// What a load that leaves out rows earlier `jobs` loaded says when the
/// table was rewritten since: emptied outside sluice (`TRUNCATE` in psql),
/// those rows are gone, and the user is the one who knows. Forgotten, the
/// jobs no longer leave their files out, and the others' stay out
/// (`--load-again` would load every file again).
fn rewritten_since<'a>(jobs: impl IntoIterator<Item = &'a String>, table: &TableInfo) -> String {
    let mut seen = HashSet::new();
    // Each once, in order: the files of one reading name its jobs again.
    let jobs: Vec<&str> = jobs.into_iter().map(String::as_str).filter(|job| seen.insert(*job)).collect();
    let Some(first) = jobs.first() else { return String::new() };
    let (which, forget) = match jobs.len() {
        1 => (format!("job {first}"), format!("sluice forget {first}")),
        _ => {
            ("those jobs".to_string(), jobs.iter().map(|j| format!("sluice forget {j}")).collect::<Vec<_>>().join("; "))
        }
    };
    format!(
        ". But {} was rewritten since {which} finished (by TRUNCATE, VACUUM FULL, CLUSTER or ALTER TABLE): if a \
         TRUNCATE emptied it, those rows are gone, and after `{forget}` the files load again",
        table.display()
    )
}

/// The refusal for an input whose first bytes are not those its job
/// loaded, whose line `line` is one job `by` loaded from a file of its name.
fn held_again(source: &Source, table: &TableInfo, loaded: &LoadedBefore, (line, by): (u64, &str)) -> Error {
    let whose = match loaded.job.starts_with(by) {
        true => "that job".to_string(),
        false => format!("job {by}"),
    };
    source.input_error(&format!(
        "its first bytes are not those job {} loaded from a file of this name into {} ({}, finished at {}), but \
         its line {} is one {whose} loaded (an export written anew, with rows changed or added before it?): \
         loaded whole, the rows loaded before would load a second time. Pass --truncate to replace the table's \
         rows with this input's, --on-conflict-do-nothing to skip the records whose key a row holds, or \
         --load-again to load it whole anyway",
        loaded.job,
        table.display(),
        count_of(loaded.rows, "row"),
        loaded.finished_at,
        thousands(line),
    ))
}

/// What the summary says of an input the command's own job loaded other
/// data from (see [`Found::replaced`]). An export written anew whose
/// changes took exactly the lines sampled holds the rows loaded before
/// unseen: the way to load it in their place is named.
pub fn replaced_said(before: &LoadedBefore, sources: &[Source], table: &TableInfo, none_twice: bool) -> String {
    let instead = match none_twice {
        true => "",
        false => ". If it holds those rows again (an export written anew in full), --truncate loads it in their place",
    };
    format!(
        "loading {} whole, as a job of its own: its first bytes are not those job {} loaded from a file of this \
         name into {} ({}, finished at {}), so it holds other data (written anew, or a log rotated?){instead}",
        sources[before.input].name,
        before.job,
        table.display(),
        count_of(before.rows, "row"),
        before.finished_at,
    )
}

/// The most inputs whose later jobs [`went_on_after`] counts: logs written
/// on are a few files a command.
const WENT_ON_INPUTS: usize = 64;

/// What the jobs that loaded the files of finished job `job` from where it
/// ended (a log written on, loaded by the same command each hour) added to
/// its rows: `, and 200 more by 1 job that went on from where it ended`,
/// or nothing. Its own count alone said 1,000 rows of a file whose 1,200
/// were loaded. Not asked for more than [`WENT_ON_INPUTS`] inputs: the
/// ledger's chunks of 20,000 files took the same command with nothing new
/// from 0.38 s to 0.51 s (medians of 5), for a word in its message.
pub fn went_on_after(control: &PgSession, table: &TableInfo, job: &str, sources: &[Source]) -> Result<String, Error> {
    let names: Vec<&str> =
        sources.iter().filter(|s| s.can_be_read_again()).flat_map(|s| [&*s.name, &*s.canonical]).collect();
    if names.is_empty() || sources.len() > WENT_ON_INPUTS {
        return Ok(String::new());
    }
    // No job is named "": the chunks of every finished job.
    let chunks = chunks_loaded_by_finished_jobs(control, (&table.display(), table.oid), ("", None), &names)?;
    let (mut rows, mut jobs) = (0, HashSet::new());
    for reading in readings(by_job(chunks.iter())).iter().filter(|r| r[0].job == job) {
        for chunk in reading.iter().filter(|c| c.job != job) {
            rows += chunk.rows;
            jobs.insert(chunk.job.as_str());
        }
    }
    Ok(match jobs.len() {
        0 => String::new(),
        n => {
            format!(", and {} more by {} that went on from where it ended", thousands(rows), count_of(n as u64, "job"))
        }
    })
}

/// What the summary says of the inputs left out, one sentence a job.
pub fn said(found: &[LoadedBefore], sources: &[Source], table: &TableInfo, replacing: bool) -> Vec<String> {
    let mut jobs: Vec<(&str, Vec<&LoadedBefore>)> = Vec::new();
    let mut place: HashMap<&str, usize> = HashMap::new();
    for before in found {
        let at = *place.entry(&before.job).or_insert_with(|| {
            jobs.push((&before.job, Vec::new()));
            jobs.len() - 1
        });
        jobs[at].1.push(before);
    }
    jobs.iter()
        .map(|(job, of_job)| {
            let names = super::job::names_listed(of_job.iter().map(|f| &*sources[f.input].name));
            let (it, them, hold) = match of_job.len() {
                1 => ("it", "it", "holds"),
                _ => ("they", "them", "hold"),
            };
            let (rows, records) = of_job.iter().fold((0, 0), |(rows, records), f| (rows + f.rows, records + f.records));
            // A job that kept some records out (--on-conflict-do-nothing):
            // its rows are not all the file's, which a replacing load
            // would make them.
            let some_kept_out = rows < records;
            let kept_out = match some_kept_out {
                true => format!(" of {} (the others skipped or rejected then)", count_of(records, "record")),
                false => String::new(),
            };
            let again = match replacing && some_kept_out {
                true => ", which with --on-conflict-do-update replaces the rows their records' keys hold",
                false => "",
            };
            format!(
                "left out {names}: job {job} loaded {them}{} into {} in full ({}{kept_out}, finished at {}), and {it} \
                 {hold} the same bytes now; pass --load-again to load {them} a second time{again}{}",
                from_other_names(of_job),
                table.display(),
                count_of(rows, "row"),
                of_job[0].finished_at,
                rewritten_since(of_job.iter().flat_map(|f| &f.rewritten_since), table),
            )
        })
        .collect()
}

/// `, from NAME,` for one input loaded from a file of another name (renamed
/// or copied since), or how many of several were, and one such name.
fn from_other_names(of_job: &[&LoadedBefore]) -> String {
    let other: Vec<&str> = of_job.iter().filter_map(|f| f.loaded_as.as_deref()).collect();
    match (of_job, other.as_slice()) {
        (_, []) => String::new(),
        ([one], _) => one.from(),
        (_, [first, ..]) => {
            format!(", {} of them from files of other names (such as {first}),", thousands(other.len() as u64))
        }
    }
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
            records: 1,
            first_line: 1,
            skipped_lines: 0,
            rewritten_since: false,
            finished_at: String::new(),
        }
    }

    /// A log loaded as it grew: each job from where the one before ended,
    /// one reading of the file; a job that loaded it whole again is one of
    /// its own.
    #[test]
    fn jobs_that_went_on_from_where_another_ended_join_its_reading() {
        let chunks = [chunk("c", 20), chunk("b", 10), chunk("d", 0), chunk("d", 10), chunk("a", 0)];
        let found = readings(by_job(chunks.iter()));
        let jobs: Vec<String> = found.iter().map(|r| jobs_of(r)).collect();
        // d and b end at the same byte: c went on from one of them, so
        // each stands without it too, after the reading with it.
        assert_eq!(jobs, ["d, then c", "d", "a, then b, then c", "a, then b"]);
        let unique_ends = [chunk("b", 10), chunk("b", 20), chunk("a", 0)];
        assert_eq!(readings(by_job(unique_ends.iter())).len(), 1, "one job ends where b begins: no shorter reading");
        let many: Vec<FinishedChunk> = (0..6).map(|i| chunk(&format!("j{i}"), i * 10)).collect();
        assert_eq!(jobs_of(&many.iter().collect::<Vec<_>>()), "j0, then 4 more, the last j5");
        // A year of hourly loads, newest first, as the ledger gives them.
        let year: Vec<FinishedChunk> = (0..9_000).rev().map(|i| chunk(&format!("h{i}"), i * 10)).collect();
        let found = readings(by_job(year.iter()));
        assert_eq!(found.len(), 1);
        assert_eq!(jobs_of(&found[0]), "h0, then 8,998 more, the last h8999");
    }

    #[test]
    fn line_ends_are_counted_in_the_style_of_the_last_byte() {
        let count = |bytes: &[u8]| {
            let mut ends = LineEnds::default();
            std::io::copy(&mut ends.counting(bytes), &mut std::io::sink()).unwrap();
            ends.ended()
        };
        assert_eq!(count(b"a\r\nb\r\n"), Some(2));
        assert_eq!(count(b"a\rb\rc\r"), Some(3));
        assert_eq!(count(b"a\nb"), None, "the bytes end inside a line");
    }

    #[test]
    fn chunks_are_split_by_job_in_their_order() {
        let chunks = [chunk("b", 0), chunk("b", 10), chunk("a", 0)];
        let jobs = by_job(chunks.iter());
        let offsets: Vec<Vec<(&str, u64)>> =
            jobs.iter().map(|j| j.iter().map(|c| (c.job.as_str(), c.byte_offset)).collect()).collect();
        assert_eq!(offsets, vec![vec![("b", 0), ("b", 10)], vec![("a", 0)]]);
    }

    /// Several files of a reading by jobs a, then b: each job to forget is
    /// named once.
    #[test]
    fn the_jobs_to_forget_after_a_rewrite_are_each_named_once() {
        let table = super::super::plan::tests::table(&[("id", "int4")]);
        let jobs: Vec<String> = ["a", "b", "a", "b"].map(String::from).to_vec();
        let said = rewritten_since(&jobs, &table);
        assert!(said.ends_with("after `sluice forget a; sluice forget b` the files load again"), "{said}");
        assert_eq!(rewritten_since(&jobs[..1], &table).matches("job a finished").count(), 1);
        assert_eq!(rewritten_since(&[], &table), "");
    }
}
