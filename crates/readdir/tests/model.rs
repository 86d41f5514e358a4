//! Model test: the cache against the reference backends (ordered and hashed cookies) under
//! random adds, removes, announcements, reads, seeks, evictions and lookups. Every finished pass
//! is checked against the listing guarantee; every lookup on a complete directory against the
//! backend.

use std::collections::BTreeSet;
use std::num::NonZeroUsize;

use proptest::prelude::*;
use udcache_readdir::reference::{CookieStyle, MemDir, PassCheck};
use udcache_readdir::{Cursor, DirCache, Lookup, ReaddirCache};

const UNIVERSE: u64 = 40;
const READERS: usize = 2;

#[derive(Clone, Debug)]
enum Op {
    /// Toggle id in the backend; announce the new verifier if the flag is set.
    Toggle(u64, bool),
    /// Announce the backend's verifier now (covers every earlier change).
    Announce,
    /// Invalidate without a verifier.
    Invalidate,
    Read(usize, usize),
    Mark(usize),
    SeekToMark(usize),
    /// A read of the other directory, which shares the budget: evicts pages of ours.
    ReadOther(usize),
    Lookup(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..UNIVERSE, any::<bool>()).prop_map(|(i, a)| Op::Toggle(i, a)),
        1 => Just(Op::Announce),
        1 => Just(Op::Invalidate),
        8 => (0..READERS, 1..8usize).prop_map(|(r, m)| Op::Read(r, m)),
        1 => (0..READERS).prop_map(Op::Mark),
        1 => (0..READERS).prop_map(Op::SeekToMark),
        2 => (1..8usize).prop_map(Op::ReadOther),
        2 => (0..UNIVERSE).prop_map(Op::Lookup),
    ]
}

struct Reader {
    cursor: Cursor<MemDir>,
    pass: PassCheck,
    mark: Option<(usize, u64)>,
}

struct World {
    dir: DirCache<MemDir>,
    other: DirCache<MemDir>,
    other_at: u64,
    readers: Vec<Reader>,
    /// Ids changed but not yet announced to the cache.
    pending: BTreeSet<u64>,
    passes: usize,
}

impl World {
    fn new_pass(dir: &DirCache<MemDir>, pending: &BTreeSet<u64>) -> PassCheck {
        let mut p = PassCheck::new(UNIVERSE, dir.backend().ids());
        for &id in pending {
            p.changed(id);
        }
        p
    }

    fn step(&mut self, op: Op) -> Result<(), TestCaseError> {
        match op {
            Op::Toggle(id, announce) => {
                let b = self.dir.backend();
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
                self.dir.set_verifier(self.dir.backend().verifier());
                self.pending.clear();
            }
            Op::Invalidate => {
                self.dir.invalidate();
                self.pending.clear();
            }
            Op::Read(r, max) => self.read(r, max)?,
            Op::Mark(r) => {
                let rd = &mut self.readers[r];
                rd.mark = Some((rd.pass.mark(), rd.cursor.tell()));
            }
            Op::SeekToMark(r) => {
                let rd = &mut self.readers[r];
                if let Some((mark, cookie)) = rd.mark {
                    rd.cursor.seek(cookie);
                    rd.pass.rewind(mark);
                }
            }
            Op::ReadOther(max) => {
                let b = self.other.read(self.other_at, max).unwrap();
                self.other_at = match b.entries.last() {
                    _ if b.eof => 0,
                    Some(e) => e.cookie,
                    None => 0,
                };
            }
            Op::Lookup(id) => {
                let got = self.dir.lookup(MemDir::name(id).as_bytes());
                if self.dir.is_complete() && self.pending.is_empty() {
                    let present = self.dir.backend().contains(id);
                    prop_assert!(
                        matches!(
                            (&got, present),
                            (Lookup::Present(_), true) | (Lookup::Absent, false)
                        ),
                        "lookup n{id}: {got:?}, backend has it: {present}"
                    );
                } else if !self.dir.is_complete() {
                    prop_assert_eq!(got, Lookup::Unknown);
                }
            }
        }
        Ok(())
    }

    fn read(&mut self, r: usize, max: usize) -> Result<(), TestCaseError> {
        let rd = &mut self.readers[r];
        let entries = rd.cursor.read(max).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        prop_assert!(entries.len() <= max);
        for e in &entries {
            rd.pass.saw(&e.name);
        }
        if rd.cursor.is_eof() {
            let v = rd.pass.verdict();
            prop_assert!(v.ok(), "pass of reader {r} broke the guarantee: {v:?}");
            self.passes += 1;
            rd.cursor.seek(0);
            rd.mark = None;
            rd.pass = World::new_pass(&self.dir, &self.pending);
        }
        Ok(())
    }

    /// Finishes every reader's pass (no changes meanwhile): it must end, and keep the guarantee.
    fn finish(&mut self) -> Result<(), TestCaseError> {
        for r in 0..READERS {
            let before = self.passes;
            for _ in 0..(UNIVERSE * 4 + 8) {
                self.read(r, 3)?;
                if self.passes > before {
                    break;
                }
            }
            prop_assert!(self.passes > before, "reader {r} did not finish its pass");
        }
        Ok(())
    }
}

fn run(
    style: CookieStyle,
    initial: Vec<bool>,
    budget: usize,
    page: usize,
    ops: Vec<Op>,
) -> Result<(), TestCaseError> {
    let cache =
        ReaddirCache::new(NonZeroUsize::new(budget).unwrap(), NonZeroUsize::new(page).unwrap());
    let ids = (0..UNIVERSE).filter(|&i| initial[i as usize]);
    let dir = cache.dir(MemDir::with_entries(style, UNIVERSE, ids));
    let other_style =
        if style == CookieStyle::Ordered { CookieStyle::Hashed } else { CookieStyle::Ordered };
    let other = cache.dir(MemDir::with_entries(other_style, UNIVERSE, 0..UNIVERSE));
    let pending = BTreeSet::new();
    let readers = (0..READERS)
        .map(|_| Reader { cursor: dir.cursor(), pass: World::new_pass(&dir, &pending), mark: None })
        .collect();
    let mut w = World { dir, other, other_at: 0, readers, pending, passes: 0 };
    for op in ops {
        w.step(op)?;
    }
    w.finish()?;
    let s = cache.stats();
    prop_assert_eq!(s.backend_calls, w.dir.backend().calls() + w.other.backend().calls());
    // The budget's count is the pages the directories really hold, and within the budget.
    prop_assert_eq!(s.pages, w.dir.cached_pages() + w.other.cached_pages());
    prop_assert!(s.pages <= budget);
    // After a full pass with no change pending, the directory is complete if its pages fit.
    if w.pending.is_empty() && w.dir.backend().len() < page {
        prop_assert!(w.dir.is_complete() || s.evictions > 0 || s.uncached > 0);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Ordered and hashed cookies alike (about half the cases each).
    #[test]
    fn every_pass_keeps_the_guarantee(
        hashed in any::<bool>(),
        initial in proptest::collection::vec(any::<bool>(), UNIVERSE as usize),
        budget in 1..6usize,
        page in 1..6usize,
        ops in proptest::collection::vec(op(), 1..200),
    ) {
        let style = if hashed { CookieStyle::Hashed } else { CookieStyle::Ordered };
        run(style, initial, budget, page, ops)?;
    }
}
