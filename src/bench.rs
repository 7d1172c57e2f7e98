//! `sluice bench`: a small matrix of load settings on the user's own server
//! and data, to answer the field reports' three questions for their machine:
//! is the load fast, is one transaction a problem, do parallel sessions help;
//! and, when the server runs on this machine, a fourth: whether the cores are
//! what holds the load back, so that nobody tunes settings that cannot help.
//!
//! Each setting loads the same input into a scratch copy of the table
//! (`LIKE ... INCLUDING ALL`, emptied before every run), in interleaved
//! rounds so that a slow moment of the machine hits every setting alike; the
//! report quotes medians. Server CPU is read from `/proc` when the server
//! runs on this machine (the postmaster's reaped children plus its live
//! ones), and said to be unknown otherwise.

use std::path::Path;
use std::time::Instant;

use crate::error::Error;
use crate::load::{self, CopyFormat, DeferIndexes, LoadRequest};
use crate::progress::Progress;
use crate::sink::postgres::PgSession;

/// One point of the matrix.
#[derive(Clone, Debug)]
pub struct Setting {
    pub label: String,
    pub workers: usize,
    pub chunk_size: u64,
    pub copy_format: CopyFormat,
    pub defer: DeferIndexes,
}

/// One load of one setting.
#[derive(Clone, Debug)]
pub struct Measured {
    pub label: String,
    pub round: usize,
    pub wall_s: f64,
    pub rows: u64,
    pub bytes: u64,
    pub client_cpu_s: f64,
    pub server_cpu_s: Option<f64>,
    /// The workers `auto` settled on.
    pub workers: usize,
}

/// The matrix: one connection in one transaction (what `psql \copy` does),
/// one connection in chunks, 2 and 4 connections, `auto`, smaller and larger
/// chunks, each COPY format, and indexes kept during the load when the table
/// has some (deferred is the default into the empty scratch table).
pub fn settings(input_bytes: u64, binary_possible: bool, has_indexes: bool) -> Vec<Setting> {
    let auto = load::AUTO_CHUNK_SIZE;
    let mut out = vec![
        setting("1 worker, one transaction", 1, input_bytes.max(1), CopyFormat::Auto),
        setting("1 worker", 1, auto, CopyFormat::Auto),
        setting("2 workers", 2, auto, CopyFormat::Auto),
        setting("4 workers", 4, auto, CopyFormat::Auto),
        setting("workers auto", load::AUTO_WORKERS, auto, CopyFormat::Auto),
        setting("2 workers, 1 MiB chunks", 2, 1 << 20, CopyFormat::Auto),
        setting("2 workers, 64 MiB chunks", 2, 64 << 20, CopyFormat::Auto),
        setting("2 workers, text COPY", 2, auto, CopyFormat::Text),
    ];
    if binary_possible {
        out.push(setting("2 workers, binary COPY", 2, auto, CopyFormat::Binary));
    }
    if has_indexes {
        let kept = setting("2 workers, indexes kept", 2, auto, CopyFormat::Auto);
        out.push(Setting { defer: DeferIndexes::No, ..kept });
    }
    out
}

fn setting(label: &str, workers: usize, chunk_size: u64, copy_format: CopyFormat) -> Setting {
    Setting { label: label.into(), workers, chunk_size, copy_format, defer: DeferIndexes::Auto }
}

/// Loads `base` (its table being the scratch table) with every setting,
/// `rounds` times, interleaved.
pub fn run_matrix(
    control: &PgSession,
    base: &LoadRequest,
    settings: &[Setting],
    rounds: usize,
    mut on_run: impl FnMut(&Measured),
) -> Result<Vec<Measured>, Error> {
    let server = ServerCpu::find(control)?;
    let mut out = Vec::new();
    let measured = measure_each(control, base, settings, rounds, &server, &mut on_run, &mut out);
    // The ledger rows of every run, also after an error or an interrupt.
    control.execute(&format!(
        "DELETE FROM sluice.rejects WHERE job LIKE 'sluice-bench-{0}-%'; \
         DELETE FROM sluice.chunks WHERE job LIKE 'sluice-bench-{0}-%'; \
         DELETE FROM sluice.jobs WHERE job LIKE 'sluice-bench-{0}-%'",
        std::process::id()
    ))?;
    measured.map(|()| out)
}

fn measure_each(
    control: &PgSession,
    base: &LoadRequest,
    settings: &[Setting],
    rounds: usize,
    server: &Option<ServerCpu>,
    on_run: &mut impl FnMut(&Measured),
    out: &mut Vec<Measured>,
) -> Result<(), Error> {
    let interrupted = || base.interrupt.as_ref().is_some_and(|i| i.load(std::sync::atomic::Ordering::SeqCst));
    for round in 0..rounds {
        for (i, s) in settings.iter().enumerate() {
            if interrupted() {
                return Err(Error::Interrupted { chunks: 0, rows: 0 });
            }
            control.execute(&format!("TRUNCATE {}", control.resolve_table(&base.table)?.quoted()))?;
            // Flushes the previous run's dirty pages; needs a privilege many
            // users lack, and the matrix stands without it.
            let _ = control.execute_for_state("CHECKPOINT");
            let req = LoadRequest {
                workers: s.workers,
                chunk_size: s.chunk_size,
                copy_format: s.copy_format,
                defer_indexes: s.defer,
                // The scratch table's statistics serve nobody, and would
                // add the same seconds to every setting.
                analyze: load::AnalyzeWhen::No,
                job: Some(format!("sluice-bench-{}-{i}", std::process::id())),
                restart: true,
                ..base.clone()
            };
            let (cpu_before, server_before) = (client_cpu_seconds(), server.as_ref().map(ServerCpu::seconds));
            let started = Instant::now();
            let report = load::run(&req, &Progress::default()).map_err(|f| f.error)?;
            let wall_s = started.elapsed().as_secs_f64();
            let measured = Measured {
                label: s.label.clone(),
                round,
                wall_s,
                rows: report.summary.rows_loaded,
                bytes: report.summary.bytes,
                client_cpu_s: client_cpu_seconds() - cpu_before,
                server_cpu_s: server.as_ref().zip(server_before).map(|(s, before)| s.seconds() - before),
                workers: report.summary.workers,
            };
            on_run(&measured);
            out.push(measured);
        }
    }
    Ok(())
}

/// Medians per setting, in the matrix's order.
pub struct Row {
    pub label: String,
    pub wall_s: f64,
    pub rows_per_s: f64,
    pub mb_per_s: f64,
    pub server_cpu_s: Option<f64>,
    pub client_cpu_s: f64,
    pub workers: usize,
}

pub fn medians(runs: &[Measured], settings: &[Setting]) -> Vec<Row> {
    settings
        .iter()
        .filter_map(|s| {
            let mine: Vec<&Measured> = runs.iter().filter(|r| r.label == s.label).collect();
            let first = mine.first()?;
            let wall = median(mine.iter().map(|r| r.wall_s));
            let server: Vec<f64> = mine.iter().filter_map(|r| r.server_cpu_s).collect();
            Some(Row {
                label: s.label.clone(),
                wall_s: wall,
                rows_per_s: first.rows as f64 / wall,
                mb_per_s: first.bytes as f64 / 1e6 / wall,
                server_cpu_s: (!server.is_empty()).then(|| median(server.into_iter())),
                client_cpu_s: median(mine.iter().map(|r| r.client_cpu_s)),
                workers: median(mine.iter().map(|r| r.workers as f64)).round() as usize,
            })
        })
        .collect()
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The three questions, answered from the medians (`rows` in matrix order,
/// the first being one worker in one transaction), and whether the `cores`
/// are the limit when the server's CPU time is known.
pub fn answers(rows: &[Row], cores: usize) -> Vec<String> {
    let find = |label: &str| rows.iter().find(|r| r.label == label);
    let (Some(single), Some(chunked), Some(best)) =
        (find("1 worker, one transaction"), find("1 worker"), rows.iter().min_by(|a, b| a.wall_s.total_cmp(&b.wall_s)))
    else {
        return Vec::new();
    };
    let mut out = vec![format!(
        "Is the load fast? The best setting, {}, loads {:.2} M rows/s ({:.0} MB/s): {:.2}x one connection \
         in one transaction, which is what psql \\copy does.",
        best.label,
        best.rows_per_s / 1e6,
        best.mb_per_s,
        single.wall_s / best.wall_s
    )];
    out.push(format!(
        "Is one transaction a problem? One connection in chunks took {:.2}x the time of one transaction \
         ({}); chunks cost little and make the load resumable, a bad row costs only itself.",
        chunked.wall_s / single.wall_s,
        if chunked.wall_s <= single.wall_s * 1.05 { "about the same" } else { "slower" }
    ));
    if let Some(two) = find("2 workers") {
        let four =
            find("4 workers").map_or(String::new(), |f| format!(", 4 connections {:.2}x", chunked.wall_s / f.wall_s));
        out.push(format!(
            "Do parallel sessions help? 2 connections load {:.2}x as fast as one{four}.",
            chunked.wall_s / two.wall_s
        ));
    }
    out.extend(machine_answer(best, single, cores));
    out
}

/// Share of the cores' time a load must use for them to count as the limit:
/// on this project's benchmark (2 cores) loads bound by CPU kept them 90-93 %
/// busy, one held back by the table's extension lock 86-88 %.
const CORES_THE_LIMIT: f64 = 0.9;

/// How busy the best setting kept the machine (server and sluice on
/// `cores`), and the fastest its CPU seconds allow; `None` when the
/// server's CPU time is unknown (it runs elsewhere).
fn machine_answer(best: &Row, single: &Row, cores: usize) -> Option<String> {
    let server = best.server_cpu_s?;
    let cpu = server + best.client_cpu_s;
    let cores_f = cores.max(1) as f64;
    let busy = cpu / (cores_f * best.wall_s);
    let shortest = cpu / cores_f;
    let verdict = match busy >= CORES_THE_LIMIT {
        true => "the cores are the limit: other settings will not make it much faster, less CPU per row would \
                 (binary COPY where it is offered, fewer indexes during the load)"
            .to_string(),
        false => format!(
            "the cores were idle {:.0} % of the time: the summary of `sluice load` says what the server's \
             sessions waited on",
            100.0 * (1.0 - busy)
        ),
    };
    Some(format!(
        "Is the machine the limit? The best setting kept {:.0} % of this machine's {cores} cores busy (the server \
         {:.1} s of CPU, sluice {:.1} s); with every core busy all the time it would take {:.2} s, {:.2}x one \
         transaction; {verdict}.",
        100.0 * busy,
        server,
        best.client_cpu_s,
        shortest,
        single.wall_s / shortest
    ))
}

/// The `sluice load` flags of the best setting (those that differ from the
/// defaults).
pub fn recommended_flags(best: &Row, settings: &[Setting]) -> String {
    let Some(s) = settings.iter().find(|s| s.label == best.label) else { return String::new() };
    let mut flags = Vec::new();
    if s.workers != load::AUTO_WORKERS {
        flags.push(format!("--workers {}", s.workers));
    }
    if s.chunk_size != load::AUTO_CHUNK_SIZE {
        flags.push(format!("--chunk-size {}", human_size(s.chunk_size)));
    }
    match s.copy_format {
        CopyFormat::Text => flags.push("--copy-format text".into()),
        CopyFormat::Binary => flags.push("--copy-format binary".into()),
        CopyFormat::Auto => {}
    }
    if s.defer == DeferIndexes::No {
        flags.push("--defer-indexes no".into());
    }
    flags.join(" ")
}

fn human_size(bytes: u64) -> String {
    match bytes {
        b if b % (1 << 20) == 0 => format!("{}MiB", b >> 20),
        b if b % (1 << 10) == 0 => format!("{}KiB", b >> 10),
        b => b.to_string(),
    }
}

/// Every run, as CSV.
pub fn write_csv(path: &Path, runs: &[Measured]) -> std::io::Result<()> {
    let mut text = String::from("setting,round,wall_s,rows,bytes,client_cpu_s,server_cpu_s,workers\n");
    for r in runs {
        let server = r.server_cpu_s.map_or(String::new(), |s| format!("{s:.3}"));
        text.push_str(&format!(
            "\"{}\",{},{:.4},{},{},{:.3},{server},{}\n",
            r.label, r.round, r.wall_s, r.rows, r.bytes, r.client_cpu_s, r.workers
        ));
    }
    std::fs::write(path, text)
}

/// This process's CPU seconds (user + system, every thread).
fn client_cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct we pass; RUSAGE_SELF is valid.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// The server's CPU time, read from `/proc` when it runs on this machine.
struct ServerCpu {
    postmaster: i32,
    tick: f64,
}

impl ServerCpu {
    fn find(control: &PgSession) -> Result<Option<ServerCpu>, Error> {
        if !control.server_is_local()? {
            return Ok(None);
        }
        let pid = control.query("SELECT pg_backend_pid()", &[])?;
        let Some(backend) = pid.first().and_then(|r| r[0].as_deref()).and_then(|p| p.parse::<i32>().ok()) else {
            return Ok(None);
        };
        // SAFETY: sysconf has no preconditions.
        let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        Ok(proc_stat(backend).map(|s| ServerCpu { postmaster: s.parent, tick }))
    }

    /// The postmaster's own and reaped children's time plus its live
    /// children's.
    fn seconds(&self) -> f64 {
        let mut ticks = 0;
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
            let Some(stat) = proc_stat(pid) else { continue };
            if pid == self.postmaster {
                ticks += stat.own + stat.reaped;
            } else if stat.parent == self.postmaster {
                ticks += stat.own;
            }
        }
        ticks as f64 / self.tick
    }
}

struct ProcStat {
    parent: i32,
    own: u64,
    reaped: u64,
}

fn proc_stat(pid: i32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields follow the last ')'.
    let fields: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
    let num = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    Some(ProcStat { parent: fields.get(1)?.parse().ok()?, own: num(11) + num(12), reaped: num(13) + num(14) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(label: &str, wall_s: f64) -> Row {
        Row {
            label: label.into(),
            wall_s,
            rows_per_s: 1e6 / wall_s,
            mb_per_s: 40.0 / wall_s,
            server_cpu_s: None,
            client_cpu_s: 0.1,
            workers: 2,
        }
    }

    #[test]
    fn answers_compare_with_one_transaction_and_one_connection() {
        let rows = vec![row("1 worker, one transaction", 5.0), row("1 worker", 5.1), row("2 workers", 3.0)];
        let text = answers(&rows, 2).join("\n");
        assert!(text.contains("The best setting, 2 workers, loads 0.33 M rows/s"), "{text}");
        assert!(text.contains("1.67x one connection in one transaction"), "{text}");
        assert!(text.contains("took 1.02x the time of one transaction (about the same)"), "{text}");
        assert!(text.contains("2 connections load 1.70x as fast as one."), "{text}");
        assert!(!text.contains("Is the machine the limit?"), "the server's CPU is unknown: {text}");
    }

    #[test]
    fn the_machine_is_the_limit_when_its_cores_are_busy() {
        let with_cpu = |label: &str, wall_s: f64, server: f64| Row { server_cpu_s: Some(server), ..row(label, wall_s) };
        // 2 workers: 5.5 + 0.1 CPU seconds in 3 s on 2 cores, 93 % busy.
        let rows = |two_workers_server_cpu| {
            let (single, chunked) = (with_cpu("1 worker, one transaction", 5.0, 4.9), with_cpu("1 worker", 5.1, 4.9));
            vec![single, chunked, with_cpu("2 workers", 3.0, two_workers_server_cpu)]
        };
        let busy = rows(5.5);
        let text = answers(&busy, 2).join("\n");
        assert!(text.contains("kept 93 % of this machine's 2 cores busy"), "{text}");
        assert!(text.contains("it would take 2.80 s, 1.79x one transaction; the cores are the limit"), "{text}");
        let idle = rows(4.1);
        let text = answers(&idle, 2).join("\n");
        assert!(text.contains("kept 70 % of") && text.contains("the cores were idle 30 % of the time"), "{text}");
    }

    #[test]
    fn recommended_flags_name_only_what_differs_from_the_defaults() {
        let s = settings(100 << 20, true, true);
        assert_eq!(recommended_flags(&row("2 workers, 1 MiB chunks", 1.0), &s), "--workers 2 --chunk-size 1MiB");
        assert_eq!(recommended_flags(&row("workers auto", 1.0), &s), "");
        assert_eq!(recommended_flags(&row("2 workers, binary COPY", 1.0), &s), "--workers 2 --copy-format binary");
        assert_eq!(recommended_flags(&row("2 workers, indexes kept", 1.0), &s), "--workers 2 --defer-indexes no");
        assert!(!settings(1, false, false).iter().any(|s| s.copy_format == CopyFormat::Binary));
        assert!(!settings(1, false, false).iter().any(|s| s.defer == DeferIndexes::No));
    }

    #[test]
    fn medians_take_the_middle_run() {
        let s = settings(1, false, false);
        let run = |round, wall_s| Measured {
            label: "1 worker".into(),
            round,
            wall_s,
            rows: 100,
            bytes: 1000,
            client_cpu_s: 0.0,
            server_cpu_s: Some(wall_s),
            workers: 1,
        };
        let rows = medians(&[run(0, 3.0), run(1, 1.0), run(2, 2.0)], &s);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].wall_s, 2.0);
        assert_eq!(rows[0].server_cpu_s, Some(2.0));
        assert_eq!(rows[0].rows_per_s, 50.0);
    }
}
