//! Batches: the chunks of consecutive small inputs, loaded by one COPY in one
//! transaction.
//!
//! Why: every COPY statement costs the server about 1.6 ms whatever it
//! carries (PostgreSQL 15 and 18 build a tuple slot per buffered row, up to
//! 1,000, each registered with the statement's resource owner; see
//! bench/README.md), and every transaction a few round trips for the ledger.
//! A glob of thousands of small files, one chunk each, paid that per file:
//! 3,854 files of 100 kB loaded in 8.4 s where the same rows in one file took
//! 4.8 s. A batch keeps one ledger row per chunk, which is what a resume, the
//! rejects and the report go by; its chunks only commit together.
//!
//! A chunk joins the batch of the chunk before it when:
//! - it starts another input: the chunks of one input are cut to size
//!   already, and the load's last ones small on purpose (the tail taper);
//!   or the chunk before was cut short by a record that repeats the header
//!   (an export that repeats it every 50 lines was cut into 40,000 chunks
//!   of 2 M lines, and loaded in 7.6 s, one transaction each, against
//!   0.85 s when the server rejected those records);
//! - the chunk before ends at a record's end (a record the end of its input
//!   ends, or a quote left open, would run on into the next input);
//! - neither holds a runaway record but a repeated header (a whole record
//!   of its own), and both end their lines alike (a text COPY takes one
//!   line end);
//! - the batch stays within the chunk size, [`MAX_BYTES`] and [`MAX_CHUNKS`]
//!   ([`MERGED_ONE_BY_ONE`] into a partitioned table with
//!   `--on-conflict-do-update`).
//!
//! The worker copies a batch as one stream; when the server refuses it, the
//! chunks around the one the server's line falls in go on as batches and
//! that one is isolated (see `Worker::copy_split`); when it loads another
//! number of rows (a `\.` line, a trigger), the batch's chunks go one at a
//! time, each as it would alone. With `--on-conflict-do-update` the batch
//! is copied into the staging table and merged by one statement (see
//! `replace::Merging::batch`).

use crate::chunk::{Chunk, RunawayKind};

/// Most chunks in one batch: each has a ledger row, claimed and marked done
/// in the batch's statements. 1,024 rather than 256: a glob of 51,790
/// files of 1.5 kB went in 51 batches instead of 203 and cost the server
/// 2.05 s of CPU instead of 2.28 s (7 rounds), and with a bad record in
/// 10,000 the load took 2.56 s instead of 3.40 s (a refused batch is
/// split at the file the server names, so its cost does not grow with
/// the batch; bench/README.md). Small files' bytes stay bounded by
/// [`MAX_BYTES`].
pub(super) const MAX_CHUNKS: usize = 1024;

/// Most bytes in one batch whatever the chunk size: small files carry their
/// bytes in their chunks (see `KEPT_FILE`), and the workers' queue holds
/// four batches per worker, so this bounds what a glob of small files keeps
/// in memory (8 workers: 128 MiB). A batch is the chunk size otherwise (a
/// quarter of it cost 5,055 files of 3.6 kB 0.10 s more of the server's
/// CPU, 12 %, in 70 batches instead of 20; bench/README.md).
pub(super) const MAX_BYTES: u64 = 4 << 20;

/// Most chunks in one batch of `--on-conflict-do-update` into a partitioned
/// table, which a refusal of COPY straight into the table sends a chunk at
/// a time through the staging table, in the batch's one transaction (see
/// `worker::Worker::merge_together`). Why: each chunk then takes a few
/// savepoints. 3,000 files of 200 lines, half their keys held, medians of
/// 3: 5.3 s in batches of 16, 5.5 s a transaction a file, 5.8 s in batches
/// of 48, 9.8 s in batches of 4 MiB (140 files); with no key held, 0.73 s
/// in batches of 16 against 1.60 s a file at a time (bench/README.md).
pub(super) const MERGED_ONE_BY_ONE: usize = 16;

/// Groups chunks, in input order, into batches.
pub(super) struct Batcher {
    budget: u64,
    /// [`MAX_CHUNKS`], or fewer (see [`Batcher::at_most`]).
    most_chunks: usize,
    open: Vec<Chunk>,
    bytes: u64,
}

impl Batcher {
    pub(super) fn new(chunk_size: u64) -> Batcher {
        Batcher { budget: chunk_size.min(MAX_BYTES), most_chunks: MAX_CHUNKS, open: Vec::new(), bytes: 0 }
    }

    /// This batcher with at most `chunks` chunks a batch.
    pub(super) fn at_most(mut self, chunks: usize) -> Batcher {
        self.most_chunks = chunks;
        self
    }

    /// Adds the next chunk; returns the batches that are complete. A chunk
    /// nothing can follow is returned at once, not held back.
    pub(super) fn push(&mut self, chunk: Chunk) -> Vec<Vec<Chunk>> {
        let mut complete = Vec::new();
        if !self.open.last().is_some_and(|last| self.may_take(last, &chunk)) {
            complete.extend(self.finish());
        }
        self.bytes += chunk.copy_len();
        self.open.push(chunk);
        if !self.may_grow() {
            complete.extend(self.finish());
        }
        complete
    }

    /// The batch still open, if any.
    pub(super) fn finish(&mut self) -> Option<Vec<Chunk>> {
        self.bytes = 0;
        (!self.open.is_empty()).then(|| std::mem::take(&mut self.open))
    }

    fn may_take(&self, last: &Chunk, next: &Chunk) -> bool {
        (next.loc.source != last.loc.source || cut_at_a_header(last))
            && runs_no_further(next)
            && next.line_end == last.line_end
            && self.bytes + next.copy_len() <= self.budget
    }

    /// Whether a chunk may still follow the open batch's last one.
    fn may_grow(&self) -> bool {
        let Some(last) = self.open.last() else { return true };
        !last.unterminated && runs_no_further(last) && self.open.len() < self.most_chunks && self.bytes < self.budget
    }
}

/// Whether `chunk` ends at a record that repeats its input's header.
fn cut_at_a_header(chunk: &Chunk) -> bool {
    chunk.runaway.is_some_and(|r| r.kind == RunawayKind::RepeatedHeader)
}

/// Whether `chunk` holds no runaway record, or only a repeated header,
/// which is a whole record.
fn runs_no_further(chunk: &Chunk) -> bool {
    chunk.runaway.is_none() || cut_at_a_header(chunk)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::{Location, Runaway};
    use crate::format::scan::LineEnd;

    fn chunk(seq: u64, source: usize, len: u64) -> Chunk {
        Chunk {
            seq,
            loc: Location {
                source,
                byte_offset: 0,
                byte_len: len,
                first_line: 1,
                first_record: 1,
                document_lines: None,
            },
            records: 1,
            source_span: len,
            data: None,
            original: None,
            content_hash: None,
            line_samples: Vec::new(),
            runaway: None,
            line_end: LineEnd::Lf,
            unterminated: false,
        }
    }

    /// The batches' chunk numbers, pushing `chunks` in order.
    fn batches(chunk_size: u64, chunks: Vec<Chunk>) -> Vec<Vec<u64>> {
        batches_of(Batcher::new(chunk_size), chunks)
    }

    fn batches_of(mut batcher: Batcher, chunks: Vec<Chunk>) -> Vec<Vec<u64>> {
        let mut out: Vec<Vec<Chunk>> = Vec::new();
        for c in chunks {
            out.extend(batcher.push(c));
        }
        out.extend(batcher.finish());
        out.iter().map(|b| b.iter().map(|c| c.seq).collect()).collect()
    }

    #[test]
    fn small_inputs_share_a_batch_up_to_the_chunk_size() {
        let files = (0..10).map(|i| chunk(i, i as usize, 100)).collect();
        assert_eq!(batches(400, files), [vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![8, 9]]);
    }

    #[test]
    fn a_batch_holds_at_most_max_bytes_whatever_the_chunk_size() {
        let files = (0..5).map(|i| chunk(i, i as usize, MAX_BYTES / 2)).collect();
        assert_eq!(batches(1 << 30, files), [vec![0, 1], vec![2, 3], vec![4]]);
    }

    #[test]
    fn chunks_of_one_input_stay_apart() {
        let one_file = (0..4).map(|i| chunk(i, 0, 100)).collect();
        assert_eq!(batches(1 << 20, one_file), [[0], [1], [2], [3]]);
        // The last chunk of one input and the first of the next may share.
        let two = vec![chunk(0, 0, 100), chunk(1, 0, 100), chunk(2, 1, 100), chunk(3, 1, 100)];
        assert_eq!(batches(1 << 20, two), [vec![0], vec![1, 2], vec![3]]);
    }

    #[test]
    fn nothing_follows_an_unterminated_or_runaway_chunk_or_another_line_end() {
        let mut open = chunk(1, 1, 100);
        open.unterminated = true;
        let mut runaway = chunk(3, 3, 100);
        runaway.runaway = Some(Runaway { offset: 10, lines_before: 1, kind: RunawayKind::TooLong });
        let mut cr = chunk(5, 5, 100);
        cr.line_end = LineEnd::Cr;
        let chunks = vec![chunk(0, 0, 100), open, chunk(2, 2, 100), runaway, chunk(4, 4, 100), cr, chunk(6, 6, 100)];
        assert_eq!(batches(1 << 20, chunks), [vec![0, 1], vec![2], vec![3], vec![4], vec![5], vec![6]]);
    }

    /// Chunks cut short by a repeated header go on in one batch with the
    /// chunks after them, of their input or the next; the last of a run
    /// of them too, its header no more copied than the others'.
    #[test]
    fn chunks_cut_at_a_repeated_header_share_a_batch() {
        let at_header = |seq, source| {
            let mut chunk = chunk(seq, source, 100);
            chunk.runaway = Some(Runaway { offset: 90, lines_before: 9, kind: RunawayKind::RepeatedHeader });
            chunk
        };
        let chunks = vec![chunk(0, 0, 100), at_header(1, 0), at_header(2, 0), chunk(3, 0, 100), chunk(4, 0, 100)];
        assert_eq!(batches(1 << 20, chunks), [vec![0], vec![1, 2, 3], vec![4]]);
        let across = vec![at_header(0, 0), at_header(1, 1), chunk(2, 2, 100)];
        assert_eq!(batches(1 << 20, across), [vec![0, 1, 2]]);
    }

    #[test]
    fn a_chunk_too_big_to_share_is_handed_out_at_once() {
        let mut batcher = Batcher::new(400);
        assert!(batcher.push(chunk(0, 0, 100)).is_empty(), "a small chunk waits for company");
        let out = batcher.push(chunk(1, 1, 500));
        let seqs: Vec<Vec<u64>> = out.iter().map(|b| b.iter().map(|c| c.seq).collect()).collect();
        assert_eq!(seqs, [vec![0], vec![1]], "the big one goes alone, right away");
        assert!(batcher.finish().is_none());
    }

    #[test]
    fn a_batch_holds_at_most_max_chunks() {
        let files = (0..MAX_CHUNKS as u64 + 1).map(|i| chunk(i, i as usize, 1)).collect();
        let sizes: Vec<usize> = batches(1 << 30, files).iter().map(Vec::len).collect();
        assert_eq!(sizes, [MAX_CHUNKS, 1]);
        let files = (0..MERGED_ONE_BY_ONE as u64 + 4).map(|i| chunk(i, i as usize, 1)).collect();
        let batcher = Batcher::new(1 << 30).at_most(MERGED_ONE_BY_ONE);
        let sizes: Vec<usize> = batches_of(batcher, files).iter().map(Vec::len).collect();
        assert_eq!(sizes, [MERGED_ONE_BY_ONE, 4]);
    }
}
