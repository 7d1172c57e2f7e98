//! Draws a load's progress on stderr: a bar on a terminal, plain periodic
//! lines otherwise (logs, CI), nothing with `--quiet`.

use std::io::IsTerminal;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sluice::progress::{Progress, Snapshot};
use sluice::redact::Redactor;
use sluice::report::{count_of, deferred_objects, human_bytes, human_count, thousands};

pub struct ProgressView {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<()>,
}

impl ProgressView {
    /// Samples `progress` on a thread of its own until [`finish`]. A line
    /// may quote the server (why a worker retries), so it is redacted.
    pub fn start(progress: Arc<Progress>, plain_interval_secs: f64, redactor: Redactor) -> Self {
        let (stop, stopped) = mpsc::channel();
        let terminal = std::io::stderr().is_terminal();
        let interval = Duration::from_secs_f64(plain_interval_secs.max(0.05));
        let thread = std::thread::spawn(move || {
            if terminal {
                draw_bar(&progress, &stopped, &redactor)
            } else {
                write_lines(&progress, &stopped, interval, &redactor)
            }
        });
        ProgressView { stop, thread }
    }

    pub fn finish(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}

fn draw_bar(progress: &Progress, stopped: &mpsc::Receiver<()>, redactor: &Redactor) {
    let bar = spinner_until_sized(ProgressDrawTarget::stderr_with_hz(5));
    loop {
        let snap = progress.snapshot();
        show_share_done(&bar, &snap);
        bar.set_message(redactor.apply(&describe(&snap)));
        for alert in progress.take_alerts() {
            bar.println(format!("sluice: warning: {}", redactor.apply(&alert)));
        }
        match stopped.recv_timeout(Duration::from_millis(200)) {
            Err(RecvTimeoutError::Timeout) => continue,
            _ => break,
        }
    }
    bar.finish_and_clear();
}

const SPINNER: &str = "{spinner:.cyan} {msg}";
const BAR: &str = "{bar:30.cyan/blue} {msg}";

fn spinner_until_sized(target: ProgressDrawTarget) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, target);
    bar.set_style(ProgressStyle::with_template(SPINNER).expect("valid template"));
    bar
}

/// A bar of the share done once the inputs' size is known (compressed
/// files: on disk) or `--limit` caps the records; until then, and for
/// stdin and pipes, whose size is not, a spinner. The bar started at a
/// length of 0, which indicatif draws full: a load from stdin showed a
/// full bar from start to end.
fn show_share_done(bar: &ProgressBar, snap: &Snapshot) {
    const STEPS: u64 = 1_000;
    match snap.fraction() {
        Some(fraction) => {
            if bar.length().is_none() {
                bar.set_style(ProgressStyle::with_template(BAR).expect("valid template"));
            }
            bar.set_length(STEPS);
            bar.set_position((fraction * STEPS as f64) as u64);
        }
        None => bar.tick(),
    }
}

/// A line every `interval`; a warning (see [`Progress::alert`]) within a
/// fifth of a second. Those still waiting when the load ends are dropped:
/// the summary's warnings say the same, with the final counts.
fn write_lines(progress: &Progress, stopped: &mpsc::Receiver<()>, interval: Duration, redactor: &Redactor) {
    let tick = interval.min(Duration::from_millis(200));
    let mut next_line = std::time::Instant::now() + interval;
    while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(tick) {
        for alert in progress.take_alerts() {
            eprintln!("sluice: warning: {}", redactor.apply(&alert));
        }
        if std::time::Instant::now() >= next_line {
            eprintln!("sluice: {}", redactor.apply(&describe(&progress.snapshot())));
            next_line += interval;
        }
    }
}

/// `123.4 MB / 395.0 MB (31%), 3,120,000 rows, 1.52 M rows/s, 60.1 MB/s, ETA 0:04`
pub fn describe(s: &Snapshot) -> String {
    if let Some(checked) = s.checked {
        return checking_line(checked, s);
    }
    let mut line = human_bytes(s.bytes_done);
    match (s.records_cap, s.bytes_total, s.fraction()) {
        (Some(cap), _, Some(fraction)) => {
            line.push_str(&format!(" ({:.0}%; --limit {})", fraction * 100.0, count_of(cap, "record")))
        }
        (None, Some(total), Some(fraction)) => {
            line.push_str(&format!(" / {} ({:.0}%)", human_bytes(total), fraction * 100.0))
        }
        _ => {}
    }
    line.push_str(&format!(", {} rows", thousands(s.rows_done)));
    let building = (s.building > 0).then(|| format!("building {}", deferred_objects(s.building)));
    let relogging = s.relogging.then(|| "making the table logged again".to_string());
    let analyzing = s.analyzing.then(|| "analyzing the table".to_string());
    let after_the_copy: Vec<String> = building.into_iter().chain(relogging).chain(analyzing).collect();
    // While the indexes are built the copy is over: rates over the time so
    // far fell by the second (from 1 M to 53 k rows/s over a 92 s build).
    if after_the_copy.is_empty() {
        line.push_str(&format!(", {} rows/s, {:.1} MB/s", human_count(s.rows_per_sec()), s.bytes_per_sec() / 1e6));
    }
    if s.rejected > 0 {
        line.push_str(&format!(", {} rejected", thousands(s.rejected)));
    }
    if s.skipped > 0 {
        line.push_str(&format!(", {} skipped", thousands(s.skipped)));
    }
    if let Some(waiting) = &s.waiting {
        line.push_str(&format!(
            ", {} retrying for up to {} more (--retry-timeout): {}",
            count_of(waiting.sessions, "session"),
            minutes_seconds(waiting.gives_up_in),
            waiting.reason
        ));
        return line;
    }
    if let Some(blocked) = &s.blocked {
        line.push_str(&format!(", waiting {} for {}", minutes_seconds(blocked.waited), blocked.on));
        return line;
    }
    if !after_the_copy.is_empty() {
        line.push_str(&format!(", {}", after_the_copy.join(" and ")));
        return line;
    }
    if let Some(eta) = s.eta() {
        line.push_str(&format!(", ETA {}", minutes_seconds(eta)));
    }
    line
}

/// `checking the changed input against the chunks committed before: 1.2 GB
/// / 9.9 GB read again`: the long read before a changed input resumes, or
/// before files earlier jobs loaded are left out.
fn checking_line(checked: u64, s: &Snapshot) -> String {
    let what = match s.checking_earlier_jobs {
        true => "checking the inputs against the files earlier jobs loaded",
        false => "checking the changed input against the chunks committed before",
    };
    let mut line = format!("{what}: {}", human_bytes(checked));
    if let Some(total) = s.bytes_total {
        line.push_str(&format!(" / {}", human_bytes(total)));
    }
    line.push_str(" read again");
    line
}

/// `4:07`: whole minutes and seconds.
fn minutes_seconds(d: Duration) -> String {
    let secs = d.as_secs();
    format!("{}:{:02}", secs / 60, secs % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(bytes_total: Option<u64>, bytes_done: u64) -> Snapshot {
        Snapshot { elapsed: Duration::from_secs(1), bytes_total, bytes_done, ..Snapshot::default() }
    }

    #[test]
    fn a_limited_load_shows_its_share_of_the_records_and_their_eta() {
        let mut snap = snapshot(Some(20_000_000_000), 40_000_000);
        (snap.records_done, snap.rows_done, snap.elapsed) = (250_000, 250_000, Duration::from_secs(10));
        assert!(describe(&snap).starts_with("40.0 MB / 20.00 GB (0%), "), "{}", describe(&snap));
        snap.records_cap = Some(1_000_000);
        assert!(
            describe(&snap).starts_with("40.0 MB (25%; --limit 1,000,000 records), 250,000 rows, "),
            "{}",
            describe(&snap)
        );
        assert!(describe(&snap).ends_with(", ETA 0:30"), "{}", describe(&snap));
    }

    #[test]
    fn skipped_records_are_told_apart_from_rows_and_rejects() {
        let mut snap = snapshot(Some(10_000), 5_000);
        (snap.rows_done, snap.rejected, snap.skipped) = (800, 3, 1_200);
        assert!(describe(&snap).contains(" 800 rows, "), "{}", describe(&snap));
        assert!(describe(&snap).contains(", 3 rejected, 1,200 skipped"), "{}", describe(&snap));
        snap.skipped = 0;
        assert!(!describe(&snap).contains("skipped"), "{}", describe(&snap));
    }

    #[test]
    fn a_check_says_what_it_compares_the_input_with() {
        let mut snap = snapshot(Some(10_000), 0);
        snap.checked = Some(2_000_000);
        assert!(describe(&snap).starts_with("checking the changed input against the chunks committed before: 2.0 MB"));
        snap.checking_earlier_jobs = true;
        assert!(describe(&snap).starts_with("checking the inputs against the files earlier jobs loaded: 2.0 MB"));
    }

    #[test]
    fn no_rates_while_the_indexes_are_built() {
        let mut snap = snapshot(Some(10_000), 10_000);
        snap.rows_done = 500;
        assert!(describe(&snap).contains("500 rows, 500 rows/s, 0.0 MB/s"), "{}", describe(&snap));
        snap.building = 2;
        assert!(
            describe(&snap).ends_with("(100%), 500 rows, building 2 deferred indexes/constraints"),
            "{}",
            describe(&snap)
        );
        // `--unlogged`'s step is not one of the indexes and constraints.
        snap.relogging = true;
        let both = "500 rows, building 2 deferred indexes/constraints and making the table logged again";
        assert!(describe(&snap).ends_with(both), "{}", describe(&snap));
        snap.building = 0;
        assert!(describe(&snap).ends_with("500 rows, making the table logged again"), "{}", describe(&snap));
        snap.relogging = false;
        snap.analyzing = true;
        assert!(describe(&snap).ends_with("(100%), 500 rows, analyzing the table"), "{}", describe(&snap));
    }

    #[test]
    fn the_bar_shows_a_share_done_only_of_a_known_size() {
        let bar = spinner_until_sized(ProgressDrawTarget::hidden());
        show_share_done(&bar, &snapshot(None, 4096));
        // indicatif draws a length of 0 as a full bar.
        assert_eq!(bar.length(), None, "no size, no share");
        show_share_done(&bar, &snapshot(Some(10_000), 2_500));
        assert_eq!((bar.length(), bar.position()), (Some(1_000), 250));
        let limited = Snapshot { records_done: 600, records_cap: Some(1_000), ..snapshot(None, 4096) };
        show_share_done(&bar, &limited);
        assert_eq!(bar.position(), 600, "stdin under --limit: a share of the records");
    }
}
