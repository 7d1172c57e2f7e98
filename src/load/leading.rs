//! The stop of a load whose first records are all rejected (see
//! [`super::ALL_REJECTED_STOP`]), decided in input order.
//!
//! Why in input order: the stop used to ask whether any row had loaded
//! yet, which depends on which worker commits first. A file whose first
//! 1,000 records repeated keys the table held, and whose others were new,
//! stopped on one run and loaded on the next: the first chunk's isolation
//! raced the second chunk's commit. Counted in input order, the outcome
//! depends on the data alone: the first records of the input are rejected
//! or not whatever the timing.
//!
//! Chunks end in any order, so each chunk handed out waits in line until
//! the chunks before it have ended. The line is short: the first chunk to
//! load a record decides, and from then on nothing is kept.

use std::collections::VecDeque;
use std::sync::Mutex;

use super::ALL_REJECTED_STOP;
use crate::rejects::Reject;

/// How a committed chunk began, for the stop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Ending {
    /// Every one of its records was rejected: this many.
    AllRejected(u64),
    /// This many of its first records were rejected, then one loaded (or
    /// was skipped or suppressed: the server took it).
    LoadedAfter(u64),
}

impl Ending {
    /// How a chunk of records numbered from `first_record` ended, with
    /// `rejects` (in any order) and whether any of its records loaded.
    pub fn of(loaded_any: bool, rejects: &[Reject], first_record: u64) -> Ending {
        match loaded_any {
            false => Ending::AllRejected(rejects.len() as u64),
            true => Ending::LoadedAfter(leading_rejects(rejects, first_record)),
        }
    }
}

/// How many of a chunk's records, from its first, were rejected one after
/// the other.
pub(super) fn leading_rejects(rejects: &[Reject], first_record: u64) -> u64 {
    let mut positions: Vec<u64> = rejects.iter().map(|r| r.record.saturating_sub(first_record)).collect();
    positions.sort_unstable();
    positions.dedup();
    positions.iter().enumerate().take_while(|&(i, &at)| i as u64 == at).count() as u64
}

/// The first rejects of the input: how many, and the first of them.
pub(super) type Reached = (u64, Reject);

/// A chunk handed out and not yet counted.
struct Waiting {
    seq: u64,
    /// How it ended, and its first reject, once it has.
    ended: Option<(Ending, Option<Reject>)>,
}

#[derive(Default)]
struct Line {
    /// In input order.
    waiting: VecDeque<Waiting>,
    /// Records rejected before the chunks waiting, each chunk rejected whole.
    counted: u64,
    /// The first of them.
    first: Option<Reject>,
    /// Decided: `Some(true)` the load stops, `Some(false)` it never does.
    stops: Option<bool>,
}

impl Line {
    /// Whether chunk `seq` is the first still waiting, and the stop undecided.
    fn is_next(&self, seq: u64) -> bool {
        self.stops.is_none() && self.waiting.front().is_some_and(|chunk| chunk.seq == seq)
    }
}

/// Whether the load's first [`ALL_REJECTED_STOP`] records, in input order,
/// were all rejected.
pub(super) struct LeadingRejects {
    line: Mutex<Line>,
}

impl LeadingRejects {
    /// `watching` false: the load never stops so (`--max-errors` was
    /// given, or rows loaded before).
    pub fn new(watching: bool) -> LeadingRejects {
        let line = Line { stops: (!watching).then_some(false), ..Line::default() };
        LeadingRejects { line: Mutex::new(line) }
    }

    fn line(&self) -> std::sync::MutexGuard<'_, Line> {
        self.line.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Chunk `seq` goes to the workers: the next in input order.
    pub fn handed_out(&self, seq: u64) {
        let mut line = self.line();
        if line.stops.is_none() {
            line.waiting.push_back(Waiting { seq, ended: None });
        }
    }

    /// Chunk `seq` was committed (by this process or another), ending as
    /// `how` says, with its first reject in input order: asked only while
    /// the stop is undecided (it sorts the chunk's rejects).
    pub fn ended(&self, seq: u64, how: impl FnOnce() -> (Ending, Option<Reject>)) {
        let mut line = self.line();
        if line.stops.is_some() {
            return;
        }
        if let Some(chunk) = line.waiting.iter_mut().find(|chunk| chunk.seq == seq) {
            chunk.ended = Some(how());
        }
        while line.stops.is_none() {
            if !line.waiting.front().is_some_and(|chunk| chunk.ended.is_some()) {
                break;
            }
            let Some(Waiting { ended: Some((ending, first)), .. }) = line.waiting.pop_front() else { break };
            line.first = line.first.take().or(first);
            line.counted += match ending {
                Ending::AllRejected(n) | Ending::LoadedAfter(n) => n,
            };
            if line.counted >= ALL_REJECTED_STOP {
                line.stops = Some(true);
            } else if matches!(ending, Ending::LoadedAfter(_)) {
                line.stops = Some(false);
            }
        }
        if line.stops.is_some() {
            line.waiting.clear();
        }
    }

    /// Whether the load may yet stop so: its first chunks have all been
    /// rejected so far, or have yet to end.
    pub fn undecided(&self) -> bool {
        self.line().stops.is_none()
    }

    /// Whether the stop is reached: the first records' count and the first.
    pub fn reached(&self) -> Option<Reached> {
        let line = self.line();
        match (line.stops, &line.first) {
            (Some(true), Some(first)) => Some((line.counted, first.clone())),
            _ => None,
        }
    }

    /// Every record handed out so far rejected, too few to stop the load:
    /// how many, and the first; for the summary of a load that ended so.
    pub fn all_rejected(&self) -> Option<Reached> {
        let line = self.line();
        match (line.stops, &line.first) {
            (None, Some(first)) if line.waiting.is_empty() => Some((line.counted, first.clone())),
            _ => None,
        }
    }

    /// For chunk `seq`, not yet committed, whose isolation rejected
    /// `leading` of its first records one after the other (the first of them
    /// `first`): whether that reaches the stop, the chunks before it having
    /// all been rejected whole. Not while one of those has yet to end: the
    /// chunk's commit decides then.
    pub fn reached_with(&self, seq: u64, leading: u64, first: &Reject) -> Option<Reached> {
        let line = self.line();
        if !line.is_next(seq) {
            return None;
        }
        let count = line.counted + leading;
        (count >= ALL_REJECTED_STOP).then(|| (count, line.first.clone().unwrap_or_else(|| first.clone())))
    }

    /// How many more rejects chunk `seq` needs before [`Self::reached_with`]
    /// may say yes; `None` when it never will for this chunk.
    pub fn wanting(&self, seq: u64) -> Option<u64> {
        let line = self.line();
        if !line.is_next(seq) {
            return None;
        }
        Some(ALL_REJECTED_STOP.saturating_sub(line.counted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Position;

    fn reject(record: u64) -> Reject {
        let at = Position { file: "f".into(), line: record + 1, record, byte: 0 };
        Reject::new(at, "bad".into(), b"x")
    }

    fn rejects(records: std::ops::Range<u64>) -> Vec<Reject> {
        records.map(reject).collect()
    }

    #[test]
    fn leading_rejects_count_from_the_chunks_first_record_in_any_order() {
        let mut some = rejects(100..105);
        some.reverse();
        some.push(reject(107));
        assert_eq!(leading_rejects(&some, 100), 5);
        assert_eq!(leading_rejects(&some, 99), 0);
        assert_eq!(leading_rejects(&[], 0), 0);
    }

    /// The same chunks, ended in every order, reach the same verdict.
    fn verdict(endings: &[Ending], order: &[usize]) -> Option<u64> {
        let leading = LeadingRejects::new(true);
        (0..endings.len() as u64).for_each(|seq| leading.handed_out(seq));
        for &i in order {
            leading.ended(i as u64, || (endings[i], Some(reject(600 * i as u64))));
        }
        leading.reached().map(|(count, first)| {
            assert_eq!(first.record, 0, "the input's first reject");
            count
        })
    }

    #[test]
    fn the_verdict_depends_on_input_order_not_on_the_order_chunks_end() {
        use Ending::*;
        let stop = [AllRejected(600), LoadedAfter(400), LoadedAfter(0)];
        let go = [AllRejected(600), LoadedAfter(399), AllRejected(2000)];
        let orders: [&[usize]; 4] = [&[0, 1, 2], &[2, 1, 0], &[1, 0, 2], &[2, 0, 1]];
        for order in orders {
            assert_eq!(verdict(&stop, order), Some(1000), "{order:?}");
            assert_eq!(verdict(&go, order), None, "{order:?}");
        }
        assert_eq!(verdict(&[AllRejected(500), AllRejected(500)], &[1, 0]), Some(1000));
        assert_eq!(verdict(&[AllRejected(500), AllRejected(499)], &[1, 0]), None);
    }

    #[test]
    fn isolation_decides_only_for_the_first_chunk_still_waiting() {
        let leading = LeadingRejects::new(true);
        (0..3).for_each(|seq| leading.handed_out(seq));
        let first = reject(0);
        assert_eq!(leading.wanting(1), None, "chunk 0 has not ended");
        assert!(leading.reached_with(1, 5000, &reject(600)).is_none());
        assert_eq!(leading.wanting(0), Some(1000));
        assert!(leading.reached_with(0, 999, &first).is_none());
        leading.ended(0, || (Ending::AllRejected(600), Some(first.clone())));
        assert_eq!(leading.wanting(1), Some(400));
        let (count, said) = leading.reached_with(1, 400, &reject(600)).expect("600 and 400");
        assert_eq!((count, said.record), (1000, 0));
        leading.ended(1, || (Ending::LoadedAfter(10), None));
        assert!(leading.reached().is_none());
        assert_eq!(leading.wanting(2), None, "decided: never");
    }

    #[test]
    fn a_load_not_watching_never_stops() {
        let leading = LeadingRejects::new(false);
        leading.handed_out(0);
        assert_eq!(leading.wanting(0), None);
        leading.ended(0, || (Ending::AllRejected(5000), Some(reject(0))));
        assert!(leading.reached().is_none());
    }
}
