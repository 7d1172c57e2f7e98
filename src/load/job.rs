//! Which job a load belongs to, and whether its input is still the same.
//!
//! The default job name is derived from everything that decides the chunks
//! and where they go (table, inputs, format options, chunk size as given:
//! `auto` is resolved from the inputs' sizes), so running the same command
//! again resumes the same job, even with an input that changed since. The
//! fingerprint adds the inputs' sizes and modification times: it tells
//! whether anything changed since the job began, also for a job named with
//! `--job`.
//!
//! Stdin and pipes have no size or time, and `-` names every day's data
//! alike: their default job name also depends on their first bytes
//! (`source::STREAM_HEAD`). Other data piped in is then a job of its own, as
//! another file would be (`zcat day-2.gz | sluice load -` loads day 2), while
//! the same data again resumes its job, or finds it loaded. Data that starts
//! like an earlier job's and then differs is refused when its chunks are
//! checked against that job's (`load::not_the_input_of`).
//!
//! The table a job loads into must still hold what the job committed: one
//! dropped and created again under the same name is told by its OID (the
//! ledger's `table_oid`), one emptied since by [`refuse_an_emptied_table`].

use std::collections::HashSet;
use std::io::Read;

use super::LoadRequest;
use crate::error::Error;
use crate::format::convert::UnixTimes;
use crate::format::{FormatKind, FormatOptions};
use crate::ledger::{stable_hash, DroppedElsewhere, Opened};
use crate::report::count_of;
use crate::sink::postgres::{PgSession, TableInfo};
use crate::source::Source;

/// `--job NAME`, or `<table>-<hash of what decides the chunks>`.
pub fn name(req: &LoadRequest, table: &TableInfo, format: &FormatOptions, sources: &[Source]) -> String {
    match &req.job {
        Some(job) => job.clone(),
        None => {
            let mut identity = chunk_identity(req, table, format, sources);
            identity.extend(sources.iter().filter_map(Source::head_hash).map(|h| format!("head {h:016x}")));
            // A job of its own: a load that rejected duplicate keys, run
            // again with the flag, goes over every record (those it loaded
            // are then skipped), not only the chunks it had not committed.
            if req.on_conflict_do_nothing {
                identity.push("on conflict do nothing".into());
            }
            if let Some(key) = &req.on_conflict_do_update {
                identity.push(format!("on conflict do update {key:?}"));
            }
            format!("{}-{}", table.name, &stable_hash(&refs(&identity))[..12])
        }
    }
}

/// Everything that decides the chunks and where they go: a job resumed (or
/// shared by several processes) with any of it different would cut other
/// chunks under the same numbers.
fn chunk_identity(req: &LoadRequest, table: &TableInfo, format: &FormatOptions, sources: &[Source]) -> Vec<String> {
    let mut parts = vec![
        table.display(),
        format!("{:?}", req.columns),
        format.kind.name().to_string(),
        format!("{:?}{:?}{:?}{:?}{}", format.delimiter, format.quote, format.escape, format.null, format.header),
        format!("{:?}", req.options.encoding),
        req.chunk_size.to_string(),
        req.max_record_size.to_string(),
    ];
    // Only when given, so that jobs begun before these flags keep their names.
    if format.header_in_first_file_only {
        parts.push("header in the first file only".into());
    }
    if format.skip_lines > 0 {
        parts.push(format!("skip lines {}", format.skip_lines));
    }
    if let Some(limit) = req.limit {
        parts.push(format!("limit {limit}"));
    }
    if !format.force_null.is_empty() || !format.force_not_null.is_empty() {
        parts.push(format!("force null {:?} not null {:?}", format.force_null, format.force_not_null));
    }
    if let Some(picks) = format.picks.as_ref().filter(|picks| picks.leave_some_out()) {
        parts.push(format!("fields left out {:?}", picks.left_out()));
    }
    if format.decimal_comma || format.unix_times.is_some() {
        // A unit as `Some(Milliseconds)`, as jobs begun before `auto` have it.
        let unix_times = match format.unix_times {
            Some(UnixTimes::Unit(unit)) => format!("{:?}", Some(unit)),
            Some(UnixTimes::Auto) => "Some(Auto)".into(),
            None => "None".into(),
        };
        parts.push(format!("decimal comma {} unix times {unix_times}", format.decimal_comma));
    }
    if let Some(mark) = format.thousands {
        parts.push(format!("thousands {:?}", mark as char));
    }
    if let Some(currency) = format.currency {
        parts.push(format!("currency {currency:?}"));
    }
    if format.percent {
        parts.push("percent".into());
    }
    if format.trailing_minus {
        parts.push("trailing minus".into());
    }
    if format.zero_fractions {
        parts.push("zero fractions".into());
    }
    if let Some(path) = &format.documents_at {
        parts.push(format!("documents at {path:?}"));
    }
    if let Some(documents) = &format.documents {
        parts.push(format!("documents {:?} {:?} {}", documents.columns, documents.keys, documents.other_keys_left_out));
    }
    parts.extend(sources.iter().map(|source| source.canonical.to_string()));
    // Only for a file loaded from where earlier jobs ended, so that other
    // jobs keep their names: such a job is one of its own.
    let starts =
        sources.iter().filter_map(|s| s.start.map(|start| format!("{} from byte {}", s.canonical, start.byte)));
    parts.extend(starts);
    if let Some(job) = sources.iter().find_map(|s| s.after_job.as_deref()) {
        parts.push(format!("after job {job}"));
    }
    parts
}

/// The job's chunking and its fingerprint, from one list of parts.
///
/// The chunking is the chunk identity plus the chunking rule and the
/// open-quote check's `shape` (it depends on the table's columns): what a
/// resumed job must share with the job that began, whatever its inputs hold
/// now. The fingerprint adds the inputs' sizes and modification times
/// (stdin and pipes have neither): a job whose fingerprint changed for its
/// sizes or times alone resumes only after each chunk it committed is found
/// again in the input, byte for byte (`ledger::Opened::Changed`); any other
/// change is refused.
pub fn chunking_and_fingerprint(
    req: &LoadRequest,
    table: &TableInfo,
    format: &FormatOptions,
    sources: &[Source],
    shape: Option<crate::format::scan::RecordShape>,
) -> (String, String) {
    let mut parts = chunk_identity(req, table, format, sources);
    parts.push(crate::chunk::CUT_RULE.to_string());
    if format.header && format.kind != FormatKind::Jsonl {
        parts.push(crate::chunk::HEADER_REPEATS_RULE.to_string());
    }
    parts.extend(shape.map(|shape| format!("{} fields", shape.fields)));
    let chunking = stable_hash(&refs(&parts));
    for s in sources.iter() {
        let (size, modified) = match s.can_be_read_again() {
            true => (s.size.unwrap_or(0), s.modified_ns.unwrap_or(0)),
            false => (0, 0),
        };
        parts.push(format!("{size}:{modified}"));
    }
    (chunking, stable_hash(&refs(&parts)))
}

/// The files' sizes on disk, in the order of the inputs (`null` for a
/// pipe), as the ledger keeps them for the job (`sluice.jobs.input_sizes`):
/// where a resumed job stops reading a file written on since
/// ([`sizes_the_job_began_with`]). By place, not by path: the job's name
/// holds its inputs' paths in order, so a job resumed has the same list,
/// and a glob of 20,000 files took 0.45 s instead of 0.42 s with the paths
/// (medians of 9).
pub fn input_sizes(sources: &[Source]) -> String {
    serde_json::to_string(&sources.iter().map(|s| s.ends_at).collect::<Vec<Option<u64>>>()).unwrap_or_default()
}

/// A stopped job whose files were written on since (a log loaded as it
/// grows, the load killed) resumes on the bytes they held when it began:
/// read to their new ends, they were cut into other chunks than the ones
/// it committed, and the job was refused (its advice, `--restart`, loaded
/// those chunks' rows a second time). The rest loads on the next run, from
/// where the job ended (see `loaded_before`). Only for a plain file whose
/// byte before that size ends a line: one copied again in full after a
/// copy cut short (in a line, or in a compressed stream) is read to its
/// new end, as before. Not for `--restart`, which begins the job again on
/// the files as they are.
pub fn sizes_the_job_began_with(
    control: &PgSession,
    req: &LoadRequest,
    (table, format): (&TableInfo, &FormatOptions),
    sources: &[Source],
) -> Result<Option<Capped>, Error> {
    if req.restart || !sources.iter().any(Source::can_be_read_again) {
        return Ok(None);
    }
    let job = name(req, table, format, sources);
    let Some(began) = crate::ledger::input_sizes_begun_with(control, &job)? else { return Ok(None) };
    let mut said = Vec::new();
    let mut capped = sources.to_vec();
    for (source, then) in capped.iter_mut().zip(began) {
        let (Some(then), Some(now)) = (then, source.ends_at) else { continue };
        if then < now && ends_a_line_at(source, then)? {
            said.push(format!(
                "{} was written on since job {job} began ({} then, {} more now): the job loads the bytes it began \
                 with, and the rest loads when this command runs again",
                source.name,
                crate::report::human_bytes(then),
                crate::report::human_bytes(now - then)
            ));
            *source = source.clone().ending_at(then);
        }
    }
    Ok((!said.is_empty()).then_some((capped, said)))
}

/// The inputs, some read to a smaller size, and what the summary says of
/// them.
type Capped = (Vec<Source>, Vec<String>);

/// Whether the byte of a plain file before `end` ends a line.
fn ends_a_line_at(source: &Source, end: u64) -> Result<bool, Error> {
    use std::os::unix::fs::FileExt;
    let (Some(path), crate::source::Compression::None, Some(before)) =
        (&source.path, source.compression, end.checked_sub(1))
    else {
        return Ok(false);
    };
    let mut byte = [0u8];
    let read = std::fs::File::open(path).and_then(|file| file.read_exact_at(&mut byte, before));
    read.map_err(|e| source.read_error(&e, 0))?;
    Ok(byte[0] == b'\n' || byte[0] == b'\r')
}

/// Rows that earlier runs of the job committed into the table.
pub fn rows_committed_before(opened: &Opened) -> u64 {
    match opened {
        Opened::Fresh | Opened::StartedOver { .. } => 0,
        Opened::Resumed(done) | Opened::Changed(done) => done.values().map(|d| d.rows).sum(),
        Opened::Finished { rows, .. } => *rows,
    }
}

/// A job resumed into a table emptied since (TRUNCATE, DELETE) would load
/// only what its earlier runs did not, and a finished one would load
/// nothing: the rows those runs committed are gone, so sluice refuses. Not
/// checked where the role may not see every row (see
/// [`PgSession::table_is_empty`]) or where rows go elsewhere (a view).
pub fn refuse_an_emptied_table(control: &PgSession, job: &str, table: &TableInfo, rows: u64) -> Result<(), Error> {
    if rows == 0 || table.is_view || control.table_is_empty(table)? != Some(true) {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "job {job} committed {} into {} in earlier runs, but the table is empty now (truncated or emptied since), \
         so resuming would leave those rows out. Run with --restart to load every record again, or name a new job \
         with --job",
        count_of(rows, "row"),
        table.display()
    )))
}

/// `--restart` of a job that another process is loading now is refused:
/// the rows that process committed stay in the table, and its job would
/// begin again under it, loading them a second time, while it loads the
/// rest. Another process on the same job without `--restart` only shares
/// the work. A process that ended a moment ago may still hold its sessions
/// (the server ends them as it notices, a killed load's within a quarter
/// of a second: see `worker::CHECK_CLIENT_EVERY`), so the refusal waits
/// for them up to `patience`.
pub fn refuse_to_restart_a_running_job(
    control: &PgSession,
    req: &LoadRequest,
    job: &str,
    patience: std::time::Duration,
) -> Result<(), Error> {
    if !req.restart {
        return Ok(());
    }
    let until = std::time::Instant::now() + patience;
    let holders = loop {
        let holders = crate::ledger::running_sessions(control, [job])?.remove(job).unwrap_or_default();
        if holders.is_empty() {
            return Ok(());
        }
        if std::time::Instant::now() >= until {
            break holders;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Err(Error::Usage(format!(
        "job {job} is running now in another process (its server sessions: pid {}): --restart would load again \
         what it has committed, which stays in the table. Stop that load (Ctrl-C) or wait for it to end, then run \
         with --restart; or, to share its work, run this command without --restart. (Behind a connection pooler \
         in transaction mode, a load's sessions outlive it on the server: if no sluice runs the job, \
         pg_stat_activity shows those sessions idle, and pg_terminate_backend ends them)",
        holders.join(", ")
    )))
}

/// A new job under the default name whose input holds what another,
/// unfinished job into the same table committed is refused: it would load
/// those rows a second time. That is the same data loaded by a command that
/// differs (another `--chunk-size`, the file moved, renamed or
/// decompressed), most often a retry after a crash; the job it should
/// resume is named. Told by one chunk of the other job, its first with
/// rows, found at the same place with the same bytes (a read of the input up
/// to that chunk's end). Not checked for `--job` (a job named on purpose),
/// `--truncate`, an empty table, or stdin and pipes (their job is named by
/// their first bytes, so the same data resumes it).
pub fn refuse_the_data_of_an_unfinished_job(
    control: &PgSession,
    req: &LoadRequest,
    job: &str,
    table: &TableInfo,
    sources: &[Source],
) -> Result<(), Error> {
    if req.job.is_some() || req.truncate {
        return Ok(());
    }
    let unfinished = crate::ledger::unfinished_jobs_into(control, &table.display(), table.oid, job)?;
    // A view's emptiness is its query's, which may be costly and says
    // nothing of the tables it writes to.
    if unfinished.is_empty() || (!table.is_view && control.table_is_empty(table)? == Some(true)) {
        return Ok(());
    }
    for other in &unfinished {
        for source in sources.iter().filter(|s| s.can_be_read_again()) {
            if holds_the_chunk_of(source, other)? {
                let resume = match &other.command {
                    // Renamed since (a log rotated): the command that began
                    // the job finds other files under its names now.
                    command if !source.goes_by(&other.file) => {
                        let command = command.as_ref().map(|c| format!(" ({c})")).unwrap_or_default();
                        format!(
                            "That job read this file as {} (renamed, moved or compressed since?): put it back as it \
                             was then (any file now of that name set aside meanwhile), and the command that began \
                             it{command} resumes it; then, with the files as they are now, the same command loads \
                             the rest",
                            other.file
                        )
                    }
                    Some(command) if req.command.as_ref() == Some(command) => {
                        this_command_finds_other_inputs(control, &other.job, sources)?
                    }
                    Some(command) => format!("Resume that job with the command that began it ({command})"),
                    None => "Resume that job by running the command that began it again, with the same inputs, \
                             paths and --chunk-size (sluice status lists it)"
                        .to_string(),
                };
                return Err(source.input_error(&format!(
                    "job {} into {} is unfinished, and this input holds what it committed ({} from {}, bytes \
                     {}..{}, found here at the same place): as a new job it would load those rows again. {resume}; \
                     or empty the table first with --truncate (which builds again what that job dropped); or, to \
                     load this input as well, name it a job of its own with --job NAME",
                    other.job,
                    table.display(),
                    count_of(other.rows, "row"),
                    other.file,
                    other.byte_offset,
                    other.byte_offset + other.byte_len
                )));
            }
        }
    }
    Ok(())
}

/// The inputs of an unfinished job into the table that are some of this
/// command's, with what the summary says: a glob that found files more
/// since the job began (a folder files are dropped in, loaded by cron: a
/// run killed, and a file came before the next). As one new job, the
/// inputs were refused (the unfinished job's rows would load again), and
/// so was every later run, until someone took the new files away. Now the
/// unfinished job is resumed alone, and the files that came after it wait
/// for the next run. Its inputs are told by its name: the command's inputs
/// older than the job must name it as the command would have then (a file
/// touched since, or written on, is no longer one of them: such a job is
/// refused as before, naming the command that began it). Not for `--job`, `--restart`,
/// `--truncate`, or when the command names a job already in the ledger.
pub fn unfinished_job_to_resume_first(
    control: &PgSession,
    req: &LoadRequest,
    (table, format): (&TableInfo, &FormatOptions),
    sources: &[Source],
) -> Result<Option<(Vec<Source>, String)>, Error> {
    if req.job.is_some() || req.restart || req.truncate || sources.iter().any(|s| !s.can_be_read_again()) {
        return Ok(None);
    }
    let named = name(req, table, format, sources);
    let unfinished = crate::ledger::unfinished_jobs_begun(control, &table.display(), table.oid)?;
    if unfinished.is_empty() || crate::ledger::exists(control, &named)? {
        return Ok(None);
    }
    for (job, began_ns) in &unfinished {
        let inputs: Vec<Source> =
            sources.iter().filter(|s| s.modified_ns.is_some_and(|m| m <= *began_ns)).cloned().collect();
        if !inputs.is_empty() && inputs.len() < sources.len() && name(req, table, format, &inputs) == *job {
            let came_after: Vec<&str> =
                sources.iter().filter(|s| !inputs.iter().any(|i| i.name == s.name)).map(|s| &*s.name).collect();
            let said = format!(
                "resuming job {job} first, which has not finished: it loads {}; {} came after it began, and {} \
                 when this command runs again",
                names_listed(inputs.iter().map(|s| &*s.name)),
                names_listed(came_after.iter().copied()),
                if came_after.len() == 1 { "loads" } else { "load" },
            );
            return Ok(Some((inputs, said)));
        }
    }
    Ok(None)
}

/// An unfinished job into the table that loaded one file, which one of the
/// command's inputs is under another name now: a log loaded by `app.log*`,
/// the load killed, and the log rotated before the next run (`app.log`
/// renamed `app.log.1`). The job was refused, since the renamed file holds
/// what it committed, and it would resume only by its command finding the
/// file under its old name again. Now it resumes alone on that input,
/// recorded under the name it began with (so the jobs that go on from
/// where it ends find it), and the command's other inputs wait for the
/// next run. Told by its name: the input under that name, loaded from
/// where it begins now, names that job; by the input's size, no smaller
/// than the job's one file when it began; and by its first chunk with rows,
/// found in the input at its place. Not for `--job`, `--restart` or
/// `--truncate`.
pub fn renamed_job_to_resume_first(
    control: &PgSession,
    req: &LoadRequest,
    (table, format): (&TableInfo, &FormatOptions),
    sources: &[Source],
) -> Result<Option<(Vec<Source>, String)>, Error> {
    if req.job.is_some() || req.restart || req.truncate {
        return Ok(None);
    }
    let named = name(req, table, format, sources);
    for other in crate::ledger::unfinished_jobs_into(control, &table.display(), table.oid, &named)? {
        // One file, and inputs of the bytes it began with at least: as
        // many chunks of the same size (auto: a 32nd of them) are cut
        // again, not those of a file compressed since.
        let sizes = crate::ledger::input_sizes_begun_with(control, &other.job)?;
        let Some(&[Some(began)]) = sizes.as_deref() else { continue };
        let began = Some(began);
        let candidates = sources.iter().filter(|s| s.can_be_read_again() && s.ends_at >= began);
        for source in candidates.filter(|s| !s.goes_by(&other.file)) {
            let mut as_then =
                source.paths_it_had(&other.file).into_iter().map(|path| source.clone().named_as(&other.file, &path));
            let Some(as_then) = as_then.find(|s| name(req, table, format, std::slice::from_ref(s)) == other.job) else {
                continue;
            };
            if !holds_the_chunk_of(&as_then, &other)? {
                continue;
            }
            let inputs = vec![as_then];
            let others: Vec<&str> = sources.iter().filter(|s| s.name != source.name).map(|s| &*s.name).collect();
            let rest = match others.len() {
                0 => String::new(),
                n => format!(
                    "; {} {} when this command runs again",
                    names_listed(others.into_iter()),
                    if n == 1 { "loads" } else { "load" }
                ),
            };
            let said = format!(
                "resuming job {} first, which has not finished: it loads {} (renamed since) as {}, the name it \
                 began with, which its chunks and rejects keep{rest}",
                other.job, source.name, other.file
            );
            return Ok(Some((inputs, said)));
        }
    }
    Ok(None)
}

/// Up to 5 names, and how many more.
pub(super) fn names_listed<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    let more = names.len().saturating_sub(5);
    let shown = names[..names.len().min(5)].join(", ");
    if more > 0 {
        format!("{shown} and {more} more")
    } else {
        shown
    }
}

/// What to do when the job began with this very command, which now finds
/// other inputs (a glob matches a file more or fewer): telling the user to
/// resume it with the command they just ran went round in circles. Names
/// the files it read that the command no longer finds, and those it finds
/// now that the job did not read (up to 5 of each).
fn this_command_finds_other_inputs(control: &PgSession, job: &str, sources: &[Source]) -> Result<String, Error> {
    let read = crate::ledger::files_read(control, job)?;
    let now: Vec<String> = sources.iter().map(|s| s.name.to_string()).collect();
    let listed = |files: Vec<&String>| names_listed(files.into_iter().map(String::as_str));
    let gone: Vec<&String> = read.iter().filter(|f| !now.contains(f)).collect();
    let new: Vec<&String> = now.iter().filter(|f| !read.contains(f)).collect();
    let mut differences = Vec::new();
    if !gone.is_empty() {
        differences.push(format!("it read {}, which this command does not find now", listed(gone)));
    }
    if !new.is_empty() {
        differences.push(format!("this command finds {}, which it did not read", listed(new)));
    }
    let differences = match differences.is_empty() {
        true => "its inputs or the options it was given differ".to_string(),
        false => differences.join("; "),
    };
    Ok(format!(
        "That job began with this same command, which now finds other inputs ({differences}): put its inputs \
         back as they were and run the command again to resume it"
    ))
}

/// Whether `source` holds the bytes of `other`'s chunk at the same place.
fn holds_the_chunk_of(source: &Source, other: &crate::ledger::UnfinishedJob) -> Result<bool, Error> {
    let (mut stream, raw) = source.open_stream()?;
    let read_error = |e: std::io::Error| source.read_error(&e, raw.get());
    let skipped =
        std::io::copy(&mut (&mut stream).take(other.byte_offset), &mut std::io::sink()).map_err(read_error)?;
    let same = hash_of_next(&mut stream, other.byte_len).map_err(read_error)? == Some(other.content_hash);
    Ok(skipped == other.byte_offset && same)
}

/// The XXH3 of the next `len` bytes of `stream`, as the chunker hashes a
/// chunk; `None` when it ends before them.
pub(super) fn hash_of_next(stream: &mut impl Read, len: u64) -> std::io::Result<Option<u64>> {
    let mut hash = xxhash_rust::xxh3::Xxh3::new();
    let hashed = std::io::copy(&mut stream.take(len), &mut hash)?;
    Ok((hashed == len).then(|| hash.digest()))
}

/// What a load did to the other unfinished jobs into its table, or found
/// of them.
#[derive(Debug, Default)]
pub struct OtherJobs {
    /// What they dropped and this job took over (`--truncate`).
    pub adopted: Vec<DroppedElsewhere>,
    /// What they dropped and still have to build again.
    pub still_dropped: Vec<DroppedElsewhere>,
    /// Those of them running now.
    pub running: HashSet<String>,
    /// Those, stopped, whose rows `--truncate` emptied, with how many: they
    /// start over when run again.
    pub started_over: Vec<(String, u64)>,
    /// Those, running, whose rows `--truncate` emptied: each finds the
    /// chunks it committed gone from the ledger at its end, and loads them
    /// again (see `load::complete_job`).
    pub emptied_while_running: Vec<(String, u64)>,
}

impl OtherJobs {
    /// The summary's warnings about them.
    pub fn said(&self, table: &TableInfo) -> Vec<String> {
        let started_over = self.started_over.iter().map(|(job, rows)| {
            format!(
                "job {job} had committed {} into {}, which --truncate emptied: it starts over if run again",
                count_of(*rows, "row"),
                table.display()
            )
        });
        let emptied = self.emptied_while_running.iter().map(|(job, rows)| {
            format!(
                "job {job}, running now, had committed {} into {}, which --truncate emptied: it loads them again \
                 before it finishes (reading stdin or a pipe, it asks to be run again with the same data)",
                count_of(*rows, "row"),
                table.display()
            )
        });
        let dropped = dropped_elsewhere_said(&table.display(), &self.adopted, &self.still_dropped, &self.running);
        started_over.chain(emptied).chain(dropped).collect()
    }
}

/// What the summary says of the objects other unfinished jobs dropped from
/// the table: those this job took over (`--truncate`) are built again after
/// its load; rows loaded while another job's are still dropped go in
/// unchecked by them, and only that job builds them again (a running job
/// at its end, a stopped one when resumed).
fn dropped_elsewhere_said(
    table: &str,
    adopted: &[DroppedElsewhere],
    still: &[DroppedElsewhere],
    running: &HashSet<String>,
) -> Vec<String> {
    let names = |d: &DroppedElsewhere| d.names.join(", ");
    let verbs = |d: &DroppedElsewhere| if d.names.len() == 1 { ["is", "it"] } else { ["are", "them"] };
    let taken = adopted.iter().map(|d| {
        format!(
            "{} of {table}, dropped by job {} (unfinished; --truncate emptied its rows), {} built again after this load",
            names(d),
            d.job,
            verbs(d)[0]
        )
    });
    let theirs = still.iter().map(|d| {
        let [is, it] = verbs(d);
        let what_then = match running.contains(&d.job) {
            true => format!("that job is running now, and builds {it} again when it finishes"),
            false => format!(
                "that job is stopped: resume it with the command that began it ({}), which builds {it} again; or \
                 load with --truncate, which empties the table and builds {it} again after the load",
                d.command.as_deref().unwrap_or("sluice status lists it")
            ),
        };
        format!(
            "{} of {table} {is} dropped by job {}, which has not built {it} again: the rows loaded now go in \
             unchecked by {it}; {what_then}",
            names(d),
            d.job
        )
    });
    taken.chain(theirs).collect()
}

fn refs(parts: &[String]) -> Vec<&str> {
    parts.iter().map(String::as_str).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_jobs_dropped_key_is_said_with_what_comes_next_whether_it_runs_or_not() {
        let dropped = |job: &str| DroppedElsewhere {
            job: job.into(),
            names: vec!["primary key \"t_pkey\"".into()],
            command: Some(format!("sluice load {job}.csv --table t")),
        };
        let running: HashSet<String> = ["a".to_string()].into();
        let said = dropped_elsewhere_said("public.t", &[dropped("c")], &[dropped("a"), dropped("b")], &running);
        assert_eq!(said.len(), 3);
        assert!(
            said[0].starts_with("primary key \"t_pkey\" of public.t, dropped by job c (unfinished;"),
            "{}",
            said[0]
        );
        assert!(said[1].starts_with("primary key \"t_pkey\" of public.t is dropped by job a,"), "{}", said[1]);
        assert!(said[1].ends_with("; that job is running now, and builds it again when it finishes"), "{}", said[1]);
        let stopped = "; that job is stopped: resume it with the command that began it (sluice load b.csv --table t)";
        assert!(said[2].contains(stopped), "{}", said[2]);
    }
}
