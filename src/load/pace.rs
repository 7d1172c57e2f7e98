//! `--workers auto`: how many connections load at once, found by measuring.
//!
//! Why our own: the best count depends on the server, not the client (the
//! field reports found 2, 6 and 8, and 12 slower than 8), and only a load
//! in progress can tell. The pacer starts with 2 workers and, after a
//! warm-up window, every window of committed chunks compares throughput
//! (source bytes committed per second) with the level below: while a worker
//! more brings at least [`GAIN`] more, it adds one; when it brings less, it
//! goes back one level and stays there. Workers above the level finish
//! their chunk and wait. Windows are at least [`WINDOW`] long and
//! [`CHUNKS_PER_WORKER`] chunks per worker, so one slow chunk does not
//! decide; a load shorter than a few windows keeps 2 workers.
//!
//! A server on the same machine shares its CPUs with sluice: there the
//! pacer goes no higher than the CPU count. Every measurement here and in
//! the field reports had more streams than server cores slower (4 against
//! 2 on 2 cores; 12 against 8 on 8), and probing costs a window at the
//! slower level.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What one more worker must add to be kept: noise between windows on
/// these machines reaches 5 %.
const GAIN: f64 = 1.08;
const WINDOW: Duration = Duration::from_millis(1500);
const CHUNKS_PER_WORKER: u64 = 3;
const START: usize = 2;

/// Shared by the workers (who read the level) and the collector (who
/// reports commits and moves the level).
pub struct Pacer {
    level: AtomicUsize,
    max: usize,
    state: Mutex<State>,
}

struct State {
    window_start: Instant,
    window_bytes: u64,
    window_chunks: u64,
    /// Throughput measured at each level, bytes per second.
    measured: Vec<(usize, f64)>,
    settled: bool,
    /// The first window (connections opening, caches warming) is not measured.
    warmed_up: bool,
}

impl Pacer {
    pub fn new(max: usize) -> Pacer {
        let state = State {
            window_start: Instant::now(),
            window_bytes: 0,
            window_chunks: 0,
            measured: Vec::new(),
            settled: max <= START,
            warmed_up: false,
        };
        Pacer { level: AtomicUsize::new(START.min(max)), max, state: Mutex::new(state) }
    }

    /// Whether worker `id` (from 0) may take a chunk now.
    pub fn allows(&self, id: usize) -> bool {
        id < self.level.load(Ordering::SeqCst)
    }

    /// The most workers it may ask for.
    pub fn max(&self) -> usize {
        self.max
    }

    pub fn level(&self) -> usize {
        self.level.load(Ordering::SeqCst)
    }

    /// A chunk of `bytes` source bytes committed.
    pub fn committed(&self, bytes: u64) {
        let mut state = self.state.lock().unwrap();
        if state.settled {
            return;
        }
        state.window_bytes += bytes;
        state.window_chunks += 1;
        let level = self.level();
        let elapsed = state.window_start.elapsed();
        if elapsed < WINDOW || state.window_chunks < CHUNKS_PER_WORKER * level as u64 {
            return;
        }
        let rate = state.window_bytes as f64 / elapsed.as_secs_f64();
        state.window_start = Instant::now();
        state.window_bytes = 0;
        state.window_chunks = 0;
        if !std::mem::replace(&mut state.warmed_up, true) {
            return;
        }
        state.measured.push((level, rate));
        let below = state.measured.iter().rev().find(|(l, _)| *l == level - 1).map(|m| m.1);
        let next = match below {
            Some(b) if rate < b * GAIN => {
                state.settled = true;
                level - 1
            }
            _ if level < self.max => level + 1,
            _ => {
                state.settled = true;
                level
            }
        };
        self.level.store(next, Ordering::SeqCst);
    }

    /// `auto: 2, 3 +12 %, 4 +13 %; kept 3`: each level measured, with its
    /// throughput against the first, and the level kept.
    pub fn describe(&self) -> String {
        let state = self.state.lock().unwrap();
        if self.max <= START {
            return format!("auto: the server shares this machine's {} CPUs", self.max);
        }
        let Some(&(_, first)) = state.measured.first() else {
            return format!("auto: kept {}, the load was too short to measure more", self.level());
        };
        let levels: Vec<String> = state
            .measured
            .iter()
            .enumerate()
            .map(|(i, (level, rate))| match i {
                0 => level.to_string(),
                _ => format!("{level} {:+.0} %", 100.0 * (rate / first - 1.0)),
            })
            .collect();
        let last = state.measured.last().map_or(START, |m| m.0);
        match (state.settled, self.level()) {
            (false, level) if level != last => {
                format!("auto: {}; the load ended while trying {level}", levels.join(", "))
            }
            (_, level) => format!("auto: {}; kept {level}", levels.join(", ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds a window at the current level with the given rate.
    fn window(p: &Pacer, rate: f64) {
        p.state.lock().unwrap().warmed_up = true;
        let mut state = p.state.lock().unwrap();
        state.window_start = Instant::now() - WINDOW;
        state.window_bytes = (rate * WINDOW.as_secs_f64()) as u64;
        state.window_chunks = 100;
        drop(state);
        p.committed(0);
    }

    #[test]
    fn climbs_while_a_worker_more_pays_and_steps_back_when_it_does_not() {
        let p = Pacer::new(8);
        assert_eq!(p.level(), 2);
        window(&p, 100.0);
        assert_eq!(p.level(), 3, "no level below measured yet: try one more");
        window(&p, 140.0);
        assert_eq!(p.level(), 4, "3 workers gained 40 % over 2: try 4");
        window(&p, 150.0);
        assert_eq!(p.level(), 3, "4 workers gained under 8 %: back to 3");
        window(&p, 500.0);
        assert_eq!(p.level(), 3, "settled");
        assert!(p.allows(2) && !p.allows(3));
        assert_eq!(p.describe(), "auto: 2, 3 +40 %, 4 +50 %; kept 3");
    }

    #[test]
    fn stops_at_the_maximum_and_waits_for_a_full_window() {
        let p = Pacer::new(3);
        p.committed(1 << 30);
        assert_eq!(p.level(), 2, "one chunk is not a window");
        window(&p, 100.0);
        assert_eq!(p.level(), 3);
        assert_eq!(p.describe(), "auto: 2; the load ended while trying 3");
        window(&p, 300.0);
        assert_eq!(p.level(), 3);
        window(&p, 400.0);
        assert_eq!(p.level(), 3, "the maximum");
        let local = Pacer::new(2);
        window(&local, 100.0);
        assert_eq!(local.level(), 2);
        assert!(local.describe().contains("shares this machine's 2 CPUs"));
    }

    #[test]
    fn the_first_window_is_a_warm_up() {
        let p = Pacer::new(8);
        let mut state = p.state.lock().unwrap();
        state.window_start = Instant::now() - WINDOW;
        state.window_chunks = 100;
        drop(state);
        p.committed(0);
        assert_eq!(p.level(), 2, "not measured");
        assert!(p.state.lock().unwrap().measured.is_empty());
    }
}
