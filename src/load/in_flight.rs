//! The chunks loading at once while keys repeat densely, with their keys:
//! so that the workers load in parallel instead of taking turns; and the
//! order in which chunks commit where keys repeat rarely.
//!
//! Why our own: taking turns (one chunk at a time, from its key query to
//! its commit) keeps each key's first line, since two sessions inserting
//! one key wait for each other, and the later line would sometimes win;
//! but it leaves one of the server's cores idle (2 M rows with 1 % repeated
//! ids: 4.7 s, against 2.0 s without them; bench/README.md). Two chunks
//! loading at once conflict only where they share a key. So each chunk
//! publishes its keys as soon as its worker has read them; a later chunk
//! copies first its records whose keys no earlier chunk in flight has,
//! alongside it, and sets the others aside (as it does the records that
//! repeat an earlier one of its own) until those chunks have committed:
//! the key query then finds the keys they took, and rejects the later
//! lines at once.
//!
//! Only where every unique index of the table is a key of COPY's columns
//! that the client compares as the server does (integers, read as the
//! server reads them; uuids, as their 128 bits; numeric, as the decimal it
//! writes; dates and timestamps, as the binary encoder reads them; text,
//! varchar and char(n) with a deterministic collation, byte for byte; a
//! value written otherwise counts as any key), with no trigger or CHECK
//! constraint, on the table or its partitions, and no unique index the
//! client does not know or compares otherwise (see `UniqueKeys::only_these`
//! and [`super::key_check::KeyCheck::in_parallel`]): the
//! server then has no other reason to make an earlier chunk wait for a
//! later one, which waits for it here. Should it do so anyway, the later
//! chunk sees it (a transaction lock in `pg_locks`) and is loaded again
//! from its start.
//!
//! Where keys repeat rarely (the workers neither take turns nor read keys)
//! the same board puts chunks in input order at commit, once the load has
//! met a repeated key (see `Shared::commit_in_order`): a chunk waits for
//! the chunks before it to commit, and gives way when one of them waits on
//! the server for its transaction, as [`Flight::wait_for_earlier`] says.
//! A chunk that publishes its keys waits for an earlier one in input order
//! (whose keys are not read: a staged chunk, see [`super::stage`]) to end
//! before copying, rather than set every record aside for it: set aside,
//! its records went one COPY each (32,128 for one chunk: 4.2 s of a 6 s
//! load, when the chunks went back from staged to direct).

use std::collections::{BTreeMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::key_check::KeyValue;
use crate::error::Error;
use crate::sink::postgres::PgSession;

/// The chunks in flight, by their place in the input.
#[derive(Default)]
pub(super) struct InFlight {
    chunks: Mutex<BTreeMap<u64, Published>>,
    changed: Condvar,
}

/// What a chunk in flight has published: nothing until its worker has read
/// its keys.
#[derive(Clone, Default)]
struct Published {
    keys: Option<Arc<ChunkKeys>>,
    /// Its session's backend, which a later chunk watches while it waits.
    backend: u32,
    /// Its worker gave it up uncommitted (the load failed or was stopped):
    /// a later chunk that shares its keys must not commit, or a key's later
    /// line would be in the table when it is loaded again.
    abandoned: bool,
}

/// One chunk's keys: for each of the table's keys, the values its records
/// have (see [`KeyValue::Read`]).
pub(super) struct ChunkKeys {
    read: Vec<HashSet<u64, BuildHasherDefault<KeyHasher>>>,
    /// Some record's key was not read on the client: the chunk may hold
    /// any key.
    some_unread: bool,
}

/// A hash of a key's value (already a number, or a hash of several): a
/// multiplication, where SipHash cost a chunk's check more than its sets'
/// lookups (one of 63,000 records a chunk, each looked up in every
/// earlier chunk's set).
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl ChunkKeys {
    /// The keys of records whose values of each key are `values` (one
    /// vector per key).
    pub fn of(values: &[Vec<KeyValue>]) -> ChunkKeys {
        let mut some_unread = false;
        let read = values
            .iter()
            .map(|key| {
                let mut set = HashSet::with_capacity_and_hasher(key.len(), Default::default());
                for value in key {
                    match value {
                        KeyValue::Read(v) => {
                            set.insert(*v);
                        }
                        KeyValue::Unread => some_unread = true,
                        KeyValue::Null => {}
                    }
                }
                set
            })
            .collect();
        ChunkKeys { read, some_unread }
    }

    /// The keys of a chunk whose keys are not read (one loading in input
    /// order, see [`InFlight::board_in_order`]): it may hold any key.
    fn any() -> ChunkKeys {
        ChunkKeys { read: Vec::new(), some_unread: true }
    }

    /// Whether the keys were not read at all (see [`ChunkKeys::any`]).
    pub fn unread(&self) -> bool {
        self.read.is_empty() && self.some_unread
    }

    /// Whether the record whose values of each key are `record` may share
    /// a key with this chunk.
    pub fn may_share(&self, record: impl Iterator<Item = KeyValue>) -> bool {
        self.some_unread
            || record.zip(&self.read).any(|(value, set)| match value {
                KeyValue::Read(v) => set.contains(&v),
                KeyValue::Unread => true,
                KeyValue::Null => false,
            })
    }
}

impl InFlight {
    /// Puts the chunk `seq` in flight, until the returned guard is dropped.
    /// Called in input order (under the turn's lock): a chunk looks only at
    /// those boarded before it.
    pub fn board(&self, seq: u64) -> Flight<'_> {
        self.lock().insert(seq, Published::default());
        Flight { board: self, seq, in_order: false }
    }

    /// Puts the chunk (or batch) `seq` in flight to commit in input order
    /// (see [`Flight::wait_for_earlier`]), until the returned guard is
    /// dropped: where the table has a unique key in place and the workers
    /// load without looking at each other's keys. Its keys are not read, so
    /// a chunk loading alongside it by [`Flight::earlier`] takes it to hold
    /// any.
    pub fn board_in_order(&self, seq: u64) -> Flight<'_> {
        let unread = Published { keys: Some(Arc::new(ChunkKeys::any())), ..Published::default() };
        self.lock().insert(seq, unread);
        Flight { board: self, seq, in_order: true }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, Published>> {
        self.chunks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What `look` finds in the chunks in flight, once it finds something,
    /// waiting at most `every`: `None` after that, for the caller to look
    /// at the load's stop and try again.
    fn wait_until<R>(&self, every: Duration, look: impl Fn(&BTreeMap<u64, Published>) -> Option<R>) -> Option<R> {
        let chunks = self.lock();
        let (chunks, _) = self
            .changed
            .wait_timeout_while(chunks, every, |c| look(c).is_none())
            .unwrap_or_else(PoisonError::into_inner);
        look(&chunks)
    }
}

/// A chunk in flight (see [`InFlight::board`]).
pub(super) struct Flight<'a> {
    board: &'a InFlight,
    seq: u64,
    /// It commits after the chunks before it (see
    /// [`InFlight::board_in_order`]).
    pub in_order: bool,
}

/// What a chunk waiting to commit after the chunks before it found (see
/// [`Flight::wait_for_earlier`]).
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Turn {
    /// They have committed: this one may.
    Commit,
    /// One of them waits on the server for this chunk's transaction (or a
    /// later chunk's), directly or queued behind another session: this one
    /// must roll back and load again, so that the earlier one takes the key
    /// they share.
    GiveWay,
}

/// How often a chunk waiting for earlier ones looks at the load's stop and
/// at whether one of them waits for it.
const LOOK_EVERY: Duration = Duration::from_millis(200);

/// How often a chunk waiting to commit in input order looks: an earlier
/// chunk that waits for it waits until it looks (a query of some 0.2 ms).
const LOOK_IN_ORDER_EVERY: Duration = Duration::from_millis(10);

impl Flight<'_> {
    /// Publishes this chunk's keys, read by the worker of `session`.
    pub fn publish(&self, keys: ChunkKeys, session: &PgSession) {
        self.publish_as(Arc::new(keys), session);
    }

    /// Publishes the backend loading a chunk that commits in input order,
    /// at each attempt (a lost connection's attempt has another).
    pub fn publish_backend(&self, session: &PgSession) {
        self.publish_as(Arc::new(ChunkKeys::any()), session);
    }

    fn publish_as(&self, keys: Arc<ChunkKeys>, session: &PgSession) {
        let mut chunks = self.board.lock();
        if let Some(published) = chunks.get_mut(&self.seq) {
            *published = Published { keys: Some(keys), backend: session.backend_pid(), abandoned: false };
        }
        drop(chunks);
        self.board.changed.notify_all();
    }

    /// The keys of the chunks before this one still in flight, by their
    /// place, once each has published them: `None` when `stop` came first,
    /// or one was abandoned.
    pub fn earlier(&self, stop: &dyn Fn() -> bool) -> Option<Vec<(u64, Arc<ChunkKeys>)>> {
        // Outer `None`: not all published yet; inner: one was abandoned.
        let published = |chunks: &BTreeMap<u64, Published>| {
            let mut earlier = Vec::new();
            for (seq, published) in chunks.range(..self.seq) {
                match (&published.keys, published.abandoned) {
                    (_, true) => return Some(None),
                    (Some(keys), false) => earlier.push((*seq, keys.clone())),
                    (None, false) => return None,
                }
            }
            Some(Some(earlier))
        };
        loop {
            if let Some(earlier) = self.board.wait_until(LOOK_EVERY, published) {
                return earlier;
            }
            if stop() {
                return None;
            }
        }
    }

    /// Waits until the chunks `seqs` have landed (see [`Flight::landed`]), in
    /// `session` (inside this chunk's transaction, set to run a
    /// statement). An error that may pass, for the chunk to be loaded again
    /// from its start, when one of them waits for this chunk's session (a
    /// constraint the key check does not see), was abandoned, or the load
    /// stops.
    pub fn wait_for(&self, seqs: &[u64], session: &PgSession, stop: &dyn Fn() -> bool) -> Result<(), Error> {
        // Whether one of them was abandoned, once none is still loading.
        let ended = |chunks: &BTreeMap<u64, Published>| {
            let each = seqs.iter().map(|seq| chunks.get(seq).map_or(Some(false), |p| p.abandoned.then_some(true)));
            each.collect::<Option<Vec<bool>>>().map(|abandoned| abandoned.contains(&true))
        };
        let sessions = |chunks: &BTreeMap<u64, Published>| Sessions {
            waiting: seqs.iter().filter_map(|seq| Some(chunks.get(seq)?.backend)).collect(),
            holding: vec![session.backend_pid()],
        };
        match self.wait_while_loading(session, stop, LOOK_EVERY, ended, &sessions)? {
            Turn::Commit => Ok(()),
            Turn::GiveWay => Err(Error::Transient(
                "an earlier chunk's session waits for this one's, which waited for it: loading it again".into(),
            )),
        }
    }

    /// Waits, before this chunk commits, until every chunk boarded before
    /// it has committed, so that of two chunks loading at once that share
    /// a key, the earlier keeps it whichever copied it first. Should one of
    /// them wait on the server for this chunk's transaction or a later
    /// one's (it copies a key they copied first), this one gives way
    /// (rolls back, and loads again once that key is taken): taking turns
    /// at the server's locks, not waiting for each other. Not ended by the
    /// load's stop: the chunks in flight then commit, and a worker that
    /// gives one up marks it abandoned, which ends the wait.
    pub fn wait_for_earlier(&self, session: &PgSession) -> Result<Turn, Error> {
        let seq = self.seq;
        let ended = |chunks: &BTreeMap<u64, Published>| {
            let mut earlier = chunks.range(..seq).map(|(_, p)| p.abandoned);
            earlier.all(|abandoned| abandoned).then(|| chunks.range(..seq).next().is_some())
        };
        let backends = |chunks: std::collections::btree_map::Range<'_, u64, Published>| {
            chunks.map(|(_, p)| p.backend).filter(|&b| b != 0).collect()
        };
        let sessions = |chunks: &BTreeMap<u64, Published>| Sessions {
            waiting: backends(chunks.range(..seq)),
            holding: backends(chunks.range(seq..)),
        };
        self.wait_while_loading(session, &|| false, LOOK_IN_ORDER_EVERY, ended, &sessions)
    }

    /// After this chunk gave way (see [`Flight::wait_for_earlier`]): waits
    /// until every chunk boarded before it has committed or been abandoned,
    /// or the load stops, so that the one it gave way to takes their shared
    /// key before this one copies it again. Loaded again at once, it could
    /// copy the key first once more while that chunk's session had yet to
    /// run, and give way again (seen on a busy machine: two give-ways for
    /// one key). This chunk holds no lock of the server meanwhile, and the
    /// chunks before it wait for none of its, so they end.
    pub fn wait_for_earlier_to_end(&self, stop: &dyn Fn() -> bool) {
        let seq = self.seq;
        let ended = |chunks: &BTreeMap<u64, Published>| chunks.range(..seq).all(|(_, p)| p.abandoned).then_some(());
        while self.board.wait_until(LOOK_IN_ORDER_EVERY, ended).is_none() && !stop() {}
    }

    /// Waits until `ended` finds the chunks waited for ended (`Some(true)`:
    /// one was abandoned, an error that may pass), looking every `every`
    /// at the load's stop and at whether one of the sessions loading them
    /// waits on the server for a transaction of the others, directly or
    /// queued behind another session (see [`Sessions`] and
    /// [`PgSession::waits_on`]): [`Turn::GiveWay`] then.
    fn wait_while_loading(
        &self,
        session: &PgSession,
        stop: &dyn Fn() -> bool,
        every: Duration,
        ended: impl Fn(&BTreeMap<u64, Published>) -> Option<bool>,
        sessions: &dyn Fn(&BTreeMap<u64, Published>) -> Sessions,
    ) -> Result<Turn, Error> {
        loop {
            match self.board.wait_until(every, &ended) {
                Some(false) => return Ok(Turn::Commit),
                Some(true) => return Err(Error::Transient("an earlier chunk in flight did not commit".into())),
                None => {}
            }
            if stop() {
                return Err(Error::Transient("the load is stopping".into()));
            }
            let Sessions { waiting, holding } = sessions(&self.board.lock());
            if !waiting.is_empty() && session.waits_on(&waiting, &holding)? {
                return Ok(Turn::GiveWay);
            }
        }
    }
}

/// The backends of the chunks a chunk waits for (`waiting`), and of those
/// whose transactions it gives way to when one of the first waits for one
/// (`holding`: its own, and for [`Flight::wait_for_earlier`] the later
/// chunks', one of which may wait for this one).
struct Sessions {
    waiting: Vec<u32>,
    holding: Vec<u32>,
}

impl Flight<'_> {
    /// The chunk is no longer loading here: committed (by this process or
    /// another), or left to another process that holds it.
    pub fn landed(self) {
        self.board.lock().remove(&self.seq);
        self.board.changed.notify_all();
        std::mem::forget(self);
    }
}

/// A flight dropped without landing was abandoned: its entry stays, marked
/// so (see [`Published::abandoned`]).
impl Drop for Flight<'_> {
    fn drop(&mut self) {
        if let Some(published) = self.board.lock().get_mut(&self.seq) {
            published.abandoned = true;
        }
        self.board.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_may_share_a_key_read_in_a_chunk_or_one_not_read() {
        let keys = ChunkKeys::of(&[vec![KeyValue::Read(1), KeyValue::Null, KeyValue::Read(7)]]);
        assert!(keys.may_share([KeyValue::Read(7)].into_iter()));
        assert!(!keys.may_share([KeyValue::Read(2)].into_iter()));
        assert!(!keys.may_share([KeyValue::Null].into_iter()), "NULLs repeat nothing");
        assert!(keys.may_share([KeyValue::Unread].into_iter()));
        let unread = ChunkKeys::of(&[vec![KeyValue::Read(1), KeyValue::Unread]]);
        assert!(unread.may_share([KeyValue::Read(2)].into_iter()), "a chunk with an unread key may hold any");
        let two = ChunkKeys::of(&[vec![KeyValue::Read(1)], vec![KeyValue::Read(9)]]);
        assert!(two.may_share([KeyValue::Read(5), KeyValue::Read(9)].into_iter()), "the second key");
    }

    #[test]
    fn a_chunk_sees_the_keys_of_those_boarded_before_it_once_published_and_waits_for_their_end() {
        let board = InFlight::default();
        let first = board.board(3);
        let second = board.board(4);
        let never = || false;
        std::thread::scope(|s| {
            let earlier = s.spawn(|| second.earlier(&never));
            std::thread::sleep(Duration::from_millis(50));
            assert!(!earlier.is_finished(), "the earlier chunk has not published its keys");
            {
                let mut chunks = board.lock();
                chunks.get_mut(&3).unwrap().keys = Some(Arc::new(ChunkKeys::of(&[vec![KeyValue::Read(5)]])));
            }
            board.changed.notify_all();
            let seen = earlier.join().unwrap().unwrap();
            assert_eq!(seen.len(), 1);
            assert_eq!(seen[0].0, 3);
        });
        assert_eq!(first.earlier(&never).unwrap().len(), 0, "nothing before the first");
        let ended = |chunks: &BTreeMap<u64, Published>| (!chunks.contains_key(&3)).then_some(());
        assert!(board.wait_until(Duration::from_millis(10), ended).is_none());
        first.landed();
        assert!(board.wait_until(Duration::from_millis(10), ended).is_some());
        assert_eq!(second.earlier(&|| true).unwrap().len(), 0, "a landed chunk is not waited for");
        // One given up uncommitted stops those after it.
        let third = board.board(5);
        drop(second);
        assert!(third.earlier(&never).is_none(), "an abandoned chunk before it");
    }

    #[test]
    fn a_chunk_that_gave_way_loads_again_once_those_before_it_end_or_the_load_stops() {
        let board = InFlight::default();
        let (first, second) = (board.board_in_order(3), board.board_in_order(4));
        let third = board.board_in_order(5);
        std::thread::scope(|s| {
            let again = s.spawn(|| third.wait_for_earlier_to_end(&|| false));
            std::thread::sleep(Duration::from_millis(50));
            assert!(!again.is_finished(), "two chunks before it still loading");
            first.landed();
            std::thread::sleep(Duration::from_millis(50));
            assert!(!again.is_finished(), "one chunk before it still loading");
            drop(second);
            again.join().unwrap();
        });
        let fourth = board.board_in_order(6);
        let stopping = std::time::Instant::now();
        fourth.wait_for_earlier_to_end(&|| true);
        assert!(stopping.elapsed() < Duration::from_secs(1), "the load's stop ends the wait");
        let waits = fourth.board.lock().range(..6).filter(|(_, p)| !p.abandoned).count();
        assert_eq!(waits, 1, "the third chunk is still in flight: the stop ended the wait");
    }
}
