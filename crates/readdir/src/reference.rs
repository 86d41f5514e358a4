//! Reference backends and the listing-guarantee checker, for tests, benchmarks and fuzzing.
//!
//! [`MemDir`] is an in-memory directory over a fixed universe of names `n0`, `n1`, ... (id `i`
//! is named `n{i}`), listed in id order, with two cookie styles:
//!
//! - [`CookieStyle::Ordered`]: the cookie of id `i` is `i + 1`, increasing along the listing
//!   (like an offset into a linear directory);
//! - [`CookieStyle::Hashed`]: the cookie is a bijective hash of the id, with no relation to the
//!   listing order (an opaque cookie; ext4-style hash cookies are just as unordered).
//!
//! Either way a cookie names a position that survives changes: resuming at the cookie of a
//! removed entry continues after where it was. Every change that alters the contents moves the
//! verifier (a generation number). Cookies outside the universe are unknown to it.
//!
//! [`PassCheck`] checks one listing pass against the guarantee of the crate docs.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Backend, DType, Entry, Fill, FillError, Verifier};

/// How a [`MemDir`] numbers positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CookieStyle {
    /// Cookie `id + 1`: increasing along the listing.
    Ordered,
    /// A bijective hash of the id: unordered.
    Hashed,
}

/// An odd multiplier and its inverse modulo 2^64: `x * K * K_INV == x`.
const K: u64 = 0x9E37_79B9_7F4A_7C15;
const K_INV: u64 = inverse(K);

const fn inverse(k: u64) -> u64 {
    // Newton's iteration doubles the correct low bits each step: 3 -> 6 -> ... -> 96 >= 64.
    let mut x = k;
    let mut i = 0;
    while i < 5 {
        x = x.wrapping_mul(2u64.wrapping_sub(k.wrapping_mul(x)));
        i += 1;
    }
    x
}

struct MemState {
    present: BTreeSet<u64>,
    generation: u64,
}

/// An in-memory directory backend; see the module docs.
///
/// ```
/// use udcache_readdir::{reference::{CookieStyle, MemDir}, Backend, Verifier};
/// let d = MemDir::with_entries(CookieStyle::Ordered, 10, [1, 3, 5]);
/// let f = d.fill(0, 2).unwrap();
/// assert_eq!(f.entries.iter().map(|e| e.cookie).collect::<Vec<_>>(), [2, 4]);
/// assert!(!f.eof);
/// assert_eq!(d.remove(3), Some(Verifier::new(2)));
/// assert_eq!(d.fill(4, 2).unwrap().entries[0].cookie, 6); // resumes after the removed entry
/// ```
pub struct MemDir {
    style: CookieStyle,
    universe: u64,
    state: Mutex<MemState>,
    calls: AtomicU64,
}

impl MemDir {
    /// An empty directory whose names are `n0` .. `n{universe - 1}`.
    pub fn new(style: CookieStyle, universe: u64) -> Self {
        MemDir {
            style,
            universe,
            state: Mutex::new(MemState { present: BTreeSet::new(), generation: 1 }),
            calls: AtomicU64::new(0),
        }
    }

    /// A directory holding `ids` (each below `universe`), at verifier 1.
    pub fn with_entries(
        style: CookieStyle,
        universe: u64,
        ids: impl IntoIterator<Item = u64>,
    ) -> Self {
        let d = MemDir::new(style, universe);
        let mut st = d.lock();
        st.present = ids.into_iter().filter(|&i| i < universe).collect();
        drop(st);
        d
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The name of id `id`.
    pub fn name(id: u64) -> String {
        format!("n{id}")
    }

    /// The id named `name`, if it is a name of this scheme.
    pub fn id_of(name: &[u8]) -> Option<u64> {
        std::str::from_utf8(name.strip_prefix(b"n")?).ok()?.parse().ok()
    }

    /// The cookie after id `id`.
    pub fn cookie(&self, id: u64) -> u64 {
        match self.style {
            CookieStyle::Ordered => id + 1,
            CookieStyle::Hashed => (id + 1).wrapping_mul(K),
        }
    }

    fn id_at(&self, cookie: u64) -> Option<u64> {
        let id = match self.style {
            CookieStyle::Ordered => cookie.wrapping_sub(1),
            CookieStyle::Hashed => cookie.wrapping_mul(K_INV).wrapping_sub(1),
        };
        (id < self.universe).then_some(id)
    }

    fn edit(&self, f: impl FnOnce(&mut BTreeSet<u64>) -> bool) -> Option<Verifier> {
        let mut st = self.lock();
        if !f(&mut st.present) {
            return None;
        }
        st.generation += 1;
        Some(Verifier::new(st.generation))
    }

    /// Adds id `id`; returns the new verifier, or `None` if it was there (or out of range).
    pub fn insert(&self, id: u64) -> Option<Verifier> {
        self.edit(|p| id < self.universe && p.insert(id))
    }

    /// Removes id `id`; returns the new verifier, or `None` if it was absent.
    pub fn remove(&self, id: u64) -> Option<Verifier> {
        self.edit(|p| p.remove(&id))
    }

    /// Whether id `id` is present.
    pub fn contains(&self, id: u64) -> bool {
        self.lock().present.contains(&id)
    }

    /// The ids present now.
    pub fn ids(&self) -> Vec<u64> {
        self.lock().present.iter().copied().collect()
    }

    /// How many entries are present.
    pub fn len(&self) -> usize {
        self.lock().present.len()
    }

    /// Whether the directory is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The verifier now.
    pub fn verifier(&self) -> Verifier {
        Verifier::new(self.lock().generation)
    }

    /// The size of the name universe.
    pub fn universe(&self) -> u64 {
        self.universe
    }

    /// Backend calls served so far.
    pub fn calls(&self) -> u64 {
        // Relaxed: a statistic read after the calls it counts have returned to the reader.
        self.calls.load(Ordering::Relaxed)
    }
}

impl Backend for MemDir {
    fn fill(&self, cookie: u64, max: usize) -> Result<Fill, FillError> {
        // Relaxed: a statistic (see `calls`).
        self.calls.fetch_add(1, Ordering::Relaxed);
        let from = match cookie {
            0 => Bound::Unbounded,
            c => Bound::Excluded(self.id_at(c).ok_or(FillError::UnknownCookie)?),
        };
        let st = self.lock();
        let mut ids = st.present.range((from, Bound::Unbounded));
        let entries: Vec<Entry> = ids
            .by_ref()
            .take(max)
            .map(|&id| Entry::new(MemDir::name(id), id + 1000, DType::REG, self.cookie(id)))
            .collect();
        let eof = ids.next().is_none();
        Ok(Fill { entries, eof, verifier: Verifier::new(st.generation) })
    }
}

/// Checks one listing pass over a [`MemDir`] against the guarantee: an entry present for the
/// whole pass appears exactly once; one absent for the whole pass never appears; one added or
/// removed during the pass appears at most once.
///
/// Record the ids present at the start ([`PassCheck::new`]), every id changed during the pass
/// ([`PassCheck::changed`]; also ids whose change was not yet announced to the cache when the
/// pass began), and every entry returned ([`PassCheck::saw`]). A `seekdir` back to a
/// [`PassCheck::mark`] forgets what was returned after it ([`PassCheck::rewind`]).
///
/// ```
/// use udcache_readdir::reference::PassCheck;
/// let mut p = PassCheck::new(8, [1, 2, 3]);
/// p.changed(3);
/// p.saw(b"n1");
/// p.saw(b"n2");
/// p.saw(b"n2");
/// let v = p.verdict();
/// assert_eq!((v.missing, v.duplicated, v.phantom, v.changed_repeated), (0, 1, 0, 0));
/// ```
#[derive(Clone, Debug)]
pub struct PassCheck {
    at_start: Vec<bool>,
    changed: Vec<bool>,
    returned: Vec<u64>,
    foreign: usize,
}

/// What a pass got wrong; all zero for a correct pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Entries present for the whole pass that did not appear.
    pub missing: usize,
    /// Entries present for the whole pass that appeared more than once.
    pub duplicated: usize,
    /// Entries absent for the whole pass that appeared (or names not of the scheme).
    pub phantom: usize,
    /// Entries changed during the pass that appeared more than once.
    pub changed_repeated: usize,
}

impl Verdict {
    /// Whether the pass kept the guarantee.
    pub fn ok(&self) -> bool {
        *self == Verdict::default()
    }
}

impl PassCheck {
    /// A pass over a universe of `universe` ids, `present` at its start.
    ///
    /// # Panics
    ///
    /// If an id in `present` is not below `universe` (a test-harness bug, not an input).
    pub fn new(universe: u64, present: impl IntoIterator<Item = u64>) -> Self {
        let n = usize::try_from(universe).expect("universe fits memory");
        let mut at_start = vec![false; n];
        for id in present {
            at_start[id as usize] = true;
        }
        PassCheck { at_start, changed: vec![false; n], returned: Vec::new(), foreign: 0 }
    }

    /// Id `id` was added or removed during the pass.
    pub fn changed(&mut self, id: u64) {
        if let Some(c) = self.changed.get_mut(id as usize) {
            *c = true;
        }
    }

    /// The pass returned an entry named `name`.
    pub fn saw(&mut self, name: &[u8]) {
        match MemDir::id_of(name).filter(|&id| (id as usize) < self.at_start.len()) {
            Some(id) => self.returned.push(id),
            None => self.foreign += 1,
        }
    }

    /// The position now, for [`PassCheck::rewind`] (`telldir`).
    pub fn mark(&self) -> usize {
        self.returned.len()
    }

    /// Forgets what was returned after `mark` (`seekdir` back to it).
    pub fn rewind(&mut self, mark: usize) {
        self.returned.truncate(mark);
    }

    /// How many entries were returned.
    pub fn returned(&self) -> usize {
        self.returned.len() + self.foreign
    }

    /// The verdict on the pass.
    pub fn verdict(&self) -> Verdict {
        let mut count = vec![0u32; self.at_start.len()];
        for &id in &self.returned {
            count[id as usize] += 1;
        }
        let mut v = Verdict { phantom: self.foreign, ..Verdict::default() };
        for (id, &n) in count.iter().enumerate() {
            match (self.changed[id], self.at_start[id], n) {
                (true, _, n) if n > 1 => v.changed_repeated += 1,
                (true, _, _) => {}
                (false, true, 0) => v.missing += 1,
                (false, true, n) if n > 1 => v.duplicated += 1,
                (false, false, n) if n > 0 => v.phantom += 1,
                _ => {}
            }
        }
        v
    }
}
