//! Model test: the cache against the reference backends (ordered and hashed cookies) under
//! random adds, removes, announcements, reads of any size, seeks (back to a mark, or to any
//! cookie a read returned), evictions, clears and lookups, through a backend that also
//! misbehaves within its contract: short fills, fills longer than asked, and injected errors
//! (EIO, unknown cookie).
//!
//! Checked after every step: each batch is within `max`, ends the directory if it is empty,
//! holds only entries the directory has (or changed without telling the cache), and its ids
//! rise along the pass (the reference lists in id order at stable positions, so a correct pass
//! never goes back); a read fails exactly when an injected fault fired, with the documented
//! error; the stats add up (hits + misses = successful reads, backend calls = calls made,
//! pages = pages held, within the budget); a lookup on a complete directory agrees with the
//! backend. Every finished pass is checked against the listing guarantee, and one that began
//! at cookie 0 must leave the directory complete if no page was evicted, no change moved the
//! epoch and nothing was cleared since it began (whether the cache served it or the backend
//! did, by whatever path through the pages). At the end every reader finishes its pass, and
//! one more pass from the start over the warm cache, told of every change, with nothing
//! evicted, must leave the directory complete and its lookups right. Run with a tight budget
//! (most passes evict) and a roomy one (many do not). Bounded: a few hundred cases of up to
//! 250 steps each, well under a second. `MODEL_CASES=N` in the environment runs N cases
//! instead.

use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::Mutex;

use proptest::prelude::*;
use udcache_readdir::reference::{CookieStyle, MemDir, PassCheck};
use udcache_readdir::{
    Backend, Config, Cursor, DirCache, Entry, Error, Fill, FillError, Lookup, ReaddirCache,
};

const UNIVERSE: u64 = 40;
const READERS: usize = 3;

/// How the backend misbehaves on its next calls, and how often an injected error fired.
#[derive(Clone, Copy, Debug, Default)]
struct Quirks {
    /// Return at most this many entries per fill (a short, non-final fill).
    short: Option<usize>,
    /// Return twice as many entries as asked.
    long: bool,
    /// Fail the next call with this error.
    fail: Option<FillError>,
    /// Injected errors that fired.
    fired: u64,
}

/// A [`MemDir`] that misbehaves as its [`Quirks`] say.
struct Quirky {
    inner: MemDir,
    quirks: Mutex<Quirks>,
}

impl Backend for Quirky {
    fn fill(&self, cookie: u64, max: usize) -> Result<Fill, FillError> {
        let mut q = self.quirks.lock().unwrap();
        if let Some(e) = q.fail.take() {
            q.fired += 1;
            return Err(e);
        }
        let mut n = max;
        if q.long {
            n = n.saturating_mul(2);
        }
        if let Some(s) = q.short {
            n = n.min(s);
        }
        drop(q);
        self.inner.fill(cookie, n)
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// Toggle id in the backend; announce the new verifier if the flag is set.
    Toggle(u64, bool),
    /// Announce the backend's verifier now (covers every earlier change).
    Announce,
    /// Invalidate without a verifier.
    Invalidate,
    /// Read with a reader's cursor: reader, size (0 stands for `usize::MAX`).
    Read(usize, usize),
    /// Remember where a reader is (`telldir`).
    Mark(usize),
    /// Move a reader back to its mark (`seekdir`), in the same pass.
    SeekToMark(usize),
    /// Seek a reader to the k-th cookie returned so far (0 if none), starting a new pass.
    Seek(usize, usize),
    /// A `DirCache::read` at the k-th cookie returned so far (0 if none), outside any pass.
    RawRead(usize, usize),
    /// A read of the other directory, which shares the budget: evicts pages of ours.
    ReadOther(usize),
    Lookup(u64),
    Short(Option<usize>),
    Long(bool),
    /// Fail the next backend call: with an unknown cookie if set, else with EIO.
    Fail(bool),
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..UNIVERSE, any::<bool>()).prop_map(|(i, a)| Op::Toggle(i, a)),
        1 => Just(Op::Announce),
        1 => Just(Op::Invalidate),
        12 => (0..READERS, 0..8usize).prop_map(|(r, m)| Op::Read(r, m)),
        1 => (0..READERS).prop_map(Op::Mark),
        1 => (0..READERS).prop_map(Op::SeekToMark),
        2 => (0..READERS, any::<usize>()).prop_map(|(r, k)| Op::Seek(r, k)),
        2 => (any::<usize>(), 0..8usize).prop_map(|(k, m)| Op::RawRead(k, m)),
        2 => (1..8usize).prop_map(Op::ReadOther),
        2 => (0..UNIVERSE).prop_map(Op::Lookup),
        1 => proptest::option::of(1..4usize).prop_map(Op::Short),
        1 => any::<bool>().prop_map(Op::Long),
        1 => any::<bool>().prop_map(Op::Fail),
        1 => Just(Op::Clear),
    ]
}

/// A reader's place in a pass, for a `seekdir` back to it.
#[derive(Clone, Copy)]
struct Mark {
    /// [`PassCheck::mark`].
    returned: usize,
    cookie: u64,
    /// The id the pass had reached.
    last: Option<u64>,
}

/// The counts of what takes pages from a directory or makes them stale.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Upsets {
    /// Pages of the directory evicted.
    evictions: u64,
    /// [`Stats::invalidations`](udcache_readdir::Stats::invalidations).
    invalidations: u64,
    /// Clears of the directory.
    clears: u64,
}

struct Reader {
    cursor: Cursor<Quirky>,
    pass: PassCheck,
    /// The id the pass returned last, or resumed after.
    last: Option<u64>,
    mark: Option<Mark>,
    /// For a pass that began at cookie 0: the upsets when it began.
    from_start: Option<Upsets>,
}

impl Reader {
    /// Starts `pass` at `cookie`, the one after id `after` (the start if `None`), with
    /// `upsets` counted so far.
    fn restart(&mut self, cookie: u64, after: Option<u64>, pass: PassCheck, upsets: Upsets) {
        self.cursor.seek(cookie);
        self.pass = pass;
        self.last = after;
        self.mark = None;
        self.from_start = (cookie == 0).then_some(upsets);
    }
}

struct World {
    cache: ReaddirCache,
    budget: usize,
    dir: DirCache<Quirky>,
    other: DirCache<MemDir>,
    other_at: u64,
    /// Pages of the other directory dropped by clearing it.
    other_cleared: u64,
    readers: Vec<Reader>,
    /// Ids changed but not yet announced to the cache.
    pending: BTreeSet<u64>,
    /// Every cookie a read returned, with the id of its entry.
    issued: Vec<(u64, u64)>,
    /// Reads of either directory that succeeded.
    reads_ok: u64,
    passes: usize,
    /// Clears of the directory.
    clears: u64,
}

fn size(m: usize) -> usize {
    if m == 0 { usize::MAX } else { m }
}

/// The case count: `MODEL_CASES` from the environment, or 400.
fn cases() -> u32 {
    std::env::var("MODEL_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(400)
}

impl World {
    fn backend(&self) -> &MemDir {
        &self.dir.backend().inner
    }

    fn quirks(&self) -> std::sync::MutexGuard<'_, Quirks> {
        self.dir.backend().quirks.lock().unwrap()
    }

    fn fired(&self) -> u64 {
        self.quirks().fired
    }

    fn upsets(&self) -> Upsets {
        let s = self.cache.stats();
        // The other directory never changes and is read by this thread alone: it keeps every
        // fill, so what it lost to eviction is what it filled less what it holds or cleared.
        let other = self.other.backend().calls() - self.other.cached_pages() as u64;
        let evictions = s.evictions - (other - self.other_cleared);
        Upsets { evictions, invalidations: s.invalidations, clears: self.clears }
    }

    /// A pass over the ids after `after` (all of them if `None`), as the directory is now.
    fn new_pass(dir: &DirCache<Quirky>, pending: &BTreeSet<u64>, after: Option<u64>) -> PassCheck {
        let ids = dir.backend().inner.ids().into_iter();
        let mut p = PassCheck::new(UNIVERSE, ids.filter(|&i| after.is_none_or(|a| i > a)));
        for &id in pending {
            p.changed(id);
        }
        p
    }

    /// The k-th cookie returned so far and the id it follows, or the start if none was.
    fn issued(&self, k: usize) -> (u64, Option<u64>) {
        match self.issued.len() {
            0 => (0, None),
            n => {
                let (cookie, id) = self.issued[k % n];
                (cookie, Some(id))
            }
        }
    }

    /// Checks the outcome of a read at `cookie` during which `fired` injected errors had
    /// fired before: it fails exactly when one fired during it, with the documented error.
    fn check_outcome<T>(
        &mut self,
        result: Result<T, Error>,
        fired: u64,
        cookie: u64,
    ) -> Result<Option<T>, TestCaseError> {
        let injected = self.fired() > fired;
        match result {
            Ok(t) => {
                prop_assert!(!injected, "an injected error at {} was not reported", cookie);
                self.reads_ok += 1;
                Ok(Some(t))
            }
            Err(e) => {
                prop_assert!(injected, "unexpected error {:?} at {}", e, cookie);
                prop_assert!(
                    e == Error::Backend(libc::EIO) || e == Error::BadCookie { cookie },
                    "error {:?} at {}",
                    e,
                    cookie
                );
                Ok(None)
            }
        }
    }

    /// Checks a batch of a read asked for `max` entries after id `after`; records its cookies.
    /// Returns the id of its last entry (`after` if it has none).
    fn check_batch(
        &mut self,
        entries: &[Entry],
        eof: bool,
        max: usize,
        after: Option<u64>,
    ) -> Result<Option<u64>, TestCaseError> {
        prop_assert!(entries.len() <= max);
        prop_assert!(!entries.is_empty() || eof, "empty, not at the end");
        let mut last = after;
        for e in entries {
            let id = MemDir::id_of(&e.name).expect("a reference name");
            prop_assert!(last.is_none_or(|l| id > l), "n{} after {:?}: went back", id, last);
            prop_assert!(
                self.backend().contains(id) || self.pending.contains(&id),
                "n{} is not there",
                id
            );
            last = Some(id);
            self.issued.push((e.cookie, id));
        }
        Ok(last)
    }

    fn step(&mut self, op: Op) -> Result<(), TestCaseError> {
        match op {
            Op::Toggle(id, announce) => {
                let b = self.backend();
                let v = if b.contains(id) { b.remove(id) } else { b.insert(id) }.unwrap();
                for r in &mut self.readers {
                    r.pass.changed(id);
                }
                if announce {
                    self.dir.set_verifier(v);
                    self.pending.clear();
                } else {
                    self.pending.insert(id);
                }
            }
            Op::Announce => {
                self.dir.set_verifier(self.backend().verifier());
                self.pending.clear();
            }
            Op::Invalidate => {
                self.dir.invalidate();
                self.pending.clear();
            }
            Op::Read(r, m) => self.read(r, size(m))?,
            Op::Mark(r) => {
                let rd = &mut self.readers[r];
                let (returned, cookie) = (rd.pass.mark(), rd.cursor.tell());
                rd.mark = Some(Mark { returned, cookie, last: rd.last });
            }
            Op::SeekToMark(r) => {
                let rd = &mut self.readers[r];
                if let Some(m) = rd.mark {
                    rd.cursor.seek(m.cookie);
                    rd.pass.rewind(m.returned);
                    rd.last = m.last;
                }
            }
            Op::Seek(r, k) => {
                let (cookie, after) = self.issued(k);
                let (pass, upsets) =
                    (World::new_pass(&self.dir, &self.pending, after), self.upsets());
                self.readers[r].restart(cookie, after, pass, upsets);
            }
            Op::RawRead(k, m) => {
                let (cookie, after) = self.issued(k);
                let (max, fired) = (size(m), self.fired());
                let result = self.dir.read(cookie, max);
                if let Some(b) = self.check_outcome(result, fired, cookie)? {
                    self.check_batch(&b.entries, b.eof, max, after)?;
                }
            }
            Op::ReadOther(max) => {
                let b = self.other.read(self.other_at, max).unwrap();
                self.reads_ok += 1;
                self.other_at = match b.entries.last() {
                    _ if b.eof => 0,
                    Some(e) => e.cookie,
                    None => 0,
                };
            }
            Op::Lookup(id) => self.check_lookup(id, self.pending.is_empty())?,
            Op::Short(s) => self.quirks().short = s,
            Op::Long(l) => self.quirks().long = l,
            Op::Fail(unknown) => {
                let e = if unknown { FillError::UnknownCookie } else { FillError::Io(libc::EIO) };
                self.quirks().fail = Some(e);
            }
            Op::Clear => {
                self.dir.clear();
                self.clears += 1;
            }
        }
        self.check_stats()
    }

    /// Looks `id` up: on a complete directory the answer must agree with the backend if
    /// `current` (the cache knows every change), else it must be unknown.
    fn check_lookup(&self, id: u64, current: bool) -> Result<(), TestCaseError> {
        let got = self.dir.lookup(MemDir::name(id).as_bytes());
        if !self.dir.is_complete() {
            prop_assert_eq!(got, Lookup::Unknown);
        } else if current {
            let present = self.backend().contains(id);
            prop_assert!(
                matches!((&got, present), (Lookup::Present(_), true) | (Lookup::Absent, false)),
                "lookup n{id}: {got:?}, backend has it: {present}"
            );
        }
        Ok(())
    }

    fn check_stats(&self) -> Result<(), TestCaseError> {
        let s = self.cache.stats();
        prop_assert_eq!(s.hits + s.misses, self.reads_ok, "{:?}", s);
        let calls = self.backend().calls() + self.fired() + self.other.backend().calls();
        prop_assert_eq!(s.backend_calls, calls, "{:?}", s);
        // The budget's count is the pages the directories really hold, and within the budget.
        prop_assert_eq!(s.pages, self.dir.cached_pages() + self.other.cached_pages(), "{:?}", s);
        prop_assert!(s.pages <= self.budget, "{:?}", s);
        // One thread: no read ever finds another's fill running.
        prop_assert_eq!((s.waits, s.coalesced), (0, 0), "{:?}", s);
        Ok(())
    }

    fn read(&mut self, r: usize, max: usize) -> Result<(), TestCaseError> {
        let (fired, at) = (self.fired(), self.readers[r].cursor.tell());
        let result = self.readers[r].cursor.read(max);
        let Some(entries) = self.check_outcome(result, fired, at)? else { return Ok(()) };
        let (eof, after) = (self.readers[r].cursor.is_eof(), self.readers[r].last);
        let last = self.check_batch(&entries, eof, max, after)?;
        let upsets = self.upsets();
        let rd = &mut self.readers[r];
        rd.last = last;
        for e in &entries {
            rd.pass.saw(&e.name);
        }
        if eof {
            let v = rd.pass.verdict();
            prop_assert!(v.ok(), "pass of reader {r} broke the guarantee: {v:?}");
            // Its reads went from cookie 0 to the end through fresh pages of one epoch (the
            // cache's, or its own fills), and none of those pages has gone since.
            if rd.from_start == Some(upsets) {
                prop_assert!(
                    self.dir.is_complete(),
                    "a pass of reader {r} from 0 left it incomplete: {:?}",
                    self.cache.stats()
                );
            }
            self.passes += 1;
            rd.restart(0, None, World::new_pass(&self.dir, &self.pending, None), upsets);
        }
        Ok(())
    }

    /// Reads on with reader `r` (no changes or faults meanwhile) until its pass ends.
    fn finish_pass(&mut self, r: usize) -> Result<(), TestCaseError> {
        let before = self.passes;
        for _ in 0..(UNIVERSE * 4 + 8) {
            self.read(r, 3)?;
            if self.passes > before {
                return Ok(());
            }
        }
        prop_assert!(false, "reader {} did not finish its pass", r);
        Ok(())
    }

    /// Finishes every reader's pass with no changes or faults meanwhile (short fills are no
    /// fault: they stay): each must end and keep the guarantee. Then, with every change
    /// announced and the other directory cleared, one more pass from the start over whatever
    /// pages this one holds: unless it evicted a page, it leaves the directory complete, and
    /// every lookup agrees with the backend.
    fn finish(&mut self) -> Result<(), TestCaseError> {
        {
            let mut q = self.quirks();
            *q = Quirks { short: q.short, fired: q.fired, ..Quirks::default() };
        }
        for r in 0..READERS {
            self.finish_pass(r)?;
        }
        // Not cleared: the pass may take any path the warm pages offer, and must leave the
        // chain from cookie 0 whole all the same.
        self.dir.set_verifier(self.backend().verifier());
        self.pending.clear();
        self.other_cleared += self.other.cached_pages() as u64;
        self.other.clear();
        let (pass, upsets) = (World::new_pass(&self.dir, &self.pending, None), self.upsets());
        self.readers[0].restart(0, None, pass, upsets);
        self.finish_pass(0)?;
        if self.upsets() == upsets {
            prop_assert!(self.dir.is_complete(), "{:?}", self.cache.stats());
            for id in 0..UNIVERSE {
                self.check_lookup(id, true)?;
            }
        }
        self.check_stats()
    }
}

fn run(
    hashed: bool,
    initial: Vec<bool>,
    budget: usize,
    page: usize,
    ops: Vec<Op>,
) -> Result<(), TestCaseError> {
    let style = if hashed { CookieStyle::Hashed } else { CookieStyle::Ordered };
    let cache = ReaddirCache::with_config(
        Config::default().with_budget_pages(budget).with_page_entries(page),
    );
    let ids = (0..UNIVERSE).filter(|&i| initial[i as usize]);
    let inner = MemDir::with_entries(style, UNIVERSE, ids);
    let dir = cache.dir(Quirky { inner, quirks: Mutex::new(Quirks::default()) });
    let other_style =
        if style == CookieStyle::Ordered { CookieStyle::Hashed } else { CookieStyle::Ordered };
    let other = cache.dir(MemDir::with_entries(other_style, UNIVERSE, 0..UNIVERSE));
    let pending = BTreeSet::new();
    let readers = (0..READERS)
        .map(|_| Reader {
            cursor: dir.cursor(),
            pass: World::new_pass(&dir, &pending, None),
            last: None,
            mark: None,
            from_start: Some(Upsets::default()),
        })
        .collect();
    let mut w = World {
        cache,
        budget,
        dir,
        other,
        other_at: 0,
        other_cleared: 0,
        readers,
        pending,
        issued: Vec::new(),
        reads_ok: 0,
        passes: 0,
        clears: 0,
    };
    for op in ops {
        w.step(op)?;
    }
    w.finish()
}

/// A case with a budget drawn from `budget`: whether cookies are hashed, which ids the
/// directory holds at first, the budget, the page size and the steps.
fn case(budget: Range<usize>) -> impl Strategy<Value = (bool, Vec<bool>, usize, usize, Vec<Op>)> {
    (
        any::<bool>(),
        proptest::collection::vec(any::<bool>(), UNIVERSE as usize),
        budget,
        1..6usize,
        proptest::collection::vec(op(), 1..250),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// Ordered and hashed cookies alike (about half the cases each).
    #[test]
    fn every_pass_keeps_the_guarantee((hashed, initial, budget, page, ops) in case(1..6)) {
        run(hashed, initial, budget, page, ops)?;
    }

    /// The same with a budget that often holds the whole directory, so that many passes meet
    /// no eviction of its pages (and others evict now and then): each of those that began at
    /// cookie 0 must leave the directory complete, whatever path the warm pages gave it.
    #[test]
    fn passes_over_a_roomy_cache_leave_it_complete(
        (hashed, initial, budget, page, ops) in case(4..12),
    ) {
        run(hashed, initial, budget, page, ops)?;
    }
}
