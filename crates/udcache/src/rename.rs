//! The rename sequence: how a lockless path walk knows no directory moved under it.
//!
//! # Rules
//!
//! - One mutex (the *rename lock*) and one sequence count `seq` per cache. `seq` is odd while a
//!   writer is inside a write section and grows by 2 per section; only the holder of the rename
//!   lock opens a section (`WriteSection`: the lock held, as a type).
//! - **What opens a section**: every operation that can change which inode a *directory* step of
//!   a path resolves to — `rename` (always), `resolve`'s move of a directory renamed behind the
//!   cache (`writers/splice.rs`), `unlink` and `invalidate` of a directory, and `forget` that drops a
//!   directory's names. `unlink` and `invalidate` decide from a lockless look whether the
//!   name is a directory, then check under the name lock that it still holds that inode, and
//!   start again if not (`drop_below` asserts that a section is open). Changes to leaves
//!   (add, unlink or forget of a non-directory, add of any name) open none: a walk reads each
//!   leaf with a single atomic lookup, which is a state at one instant by itself. The last
//!   `forget` of a non-directory takes the rename lock without a section: the names it drops
//!   must not be moved by a rename meanwhile.
//! - **Lock order**: the "Lock order" table in the repository's `ARCHITECTURE.md`. A move
//!   holds the inode stripes of the inodes it names anew, so `add` cannot name a moving
//!   directory twice.
//! - **What a lockless walker may observe**: any mixture of states while a section is open; it
//!   notices by reading `seq` before (`read_begin`, refusing an odd value) and after
//!   (`read_valid`), and then walks again holding the rename lock (the fallback, counted in
//!   stats), when no section can open. A walk that validates saw no section open or close
//!   during it, so every directory it passed through held its name for the whole walk, and its
//!   result is what the path named at the instant of its last step.
//! - Orderings are those of a fence-based seqlock (see `attr.rs`): the writer stores the
//!   odd value, then a Release fence, then its changes; the reader loads `seq` with Acquire,
//!   walks, then an Acquire fence and a Relaxed reload. If the walk read any change a section
//!   made, the fences synchronise and the reload sees the section. `mod loom_models` checks
//!   each of the four with the count alone (the cache's own models pin epochs, whose fences
//!   would hide a weakened one).

use crate::sync::{AtomicU64, Mutex, MutexGuard, Ordering, fence, lock};

/// The rename lock and sequence count.
pub(crate) struct RenameSeq {
    lock: Mutex<()>,
    seq: AtomicU64,
}

/// An open write section: the rename lock held and `seq` odd until drop.
pub(crate) struct WriteSection<'a> {
    _lock: MutexGuard<'a, ()>,
    seq: &'a AtomicU64,
    odd: u64,
}

/// What a writer holds across an operation that may or may not need a write section.
pub(crate) enum RenameHold<'a> {
    /// The rename lock, no section: writers are excluded, walkers are not disturbed.
    Locked {
        /// Held until drop.
        _lock: MutexGuard<'a, ()>,
    },
    /// An open write section.
    Section {
        /// Closed at drop.
        _section: WriteSection<'a>,
    },
}

impl RenameSeq {
    pub(crate) fn new() -> Self {
        RenameSeq { lock: Mutex::new(()), seq: AtomicU64::new(0) }
    }

    /// The current even value, or `None` if a section is open (the walker falls back).
    pub(crate) fn read_begin(&self) -> Option<u64> {
        // Acquire: pairs with the Release store closing the last section, so this walk sees
        // every change that section made.
        let s = self.seq.load(Ordering::Acquire);
        (s & 1 == 0).then_some(s)
    }

    /// Whether no section opened since `read_begin` returned `s`.
    pub(crate) fn read_valid(&self, s: u64) -> bool {
        // Acquire fence: pairs with the Release fence of a section whose changes this walk
        // read, making that section's odd store visible to the load below.
        fence(Ordering::Acquire);
        self.seq.load(Ordering::Relaxed) == s
    }

    /// Takes the rename lock without opening a section (the walk fallback, and writers that
    /// must exclude renames but change no directory name).
    pub(crate) fn lock(&self) -> MutexGuard<'_, ()> {
        lock(&self.lock)
    }

    /// Takes the rename lock and opens a section.
    pub(crate) fn write(&self) -> WriteSection<'_> {
        let guard = lock(&self.lock);
        // Relaxed: only the lock holder writes `seq`; the mutex orders us after the last one.
        let odd = self.seq.load(Ordering::Relaxed) + 1;
        debug_assert!(odd & 1 == 1, "a section opened inside a section");
        self.seq.store(odd, Ordering::Relaxed);
        // Release fence: orders the odd store before every change of the section; pairs with
        // the Acquire fence of `read_valid` (a walk that read a change of this section then
        // sees the odd count, or a later one).
        fence(Ordering::Release);
        WriteSection { _lock: guard, seq: &self.seq, odd }
    }

    /// A section if `section`, else only the lock.
    pub(crate) fn hold(&self, section: bool) -> RenameHold<'_> {
        if section {
            RenameHold::Section { _section: self.write() }
        } else {
            RenameHold::Locked { _lock: self.lock() }
        }
    }

    /// Whether a section is open now (by any thread).
    pub(crate) fn section_open(&self) -> bool {
        // Relaxed: the caller asks about a section it holds itself, whose odd store it made.
        self.seq.load(Ordering::Relaxed) & 1 == 1
    }

    /// Sections opened so far.
    pub(crate) fn sections(&self) -> u64 {
        // Relaxed: a statistic.
        self.seq.load(Ordering::Relaxed).div_ceil(2)
    }
}

impl Drop for WriteSection<'_> {
    fn drop(&mut self) {
        // Release: pairs with the Acquire of `read_begin`; publishes the section's changes.
        self.seq.store(self.odd + 1, Ordering::Release);
    }
}

/// A loom model of the sequence count alone, its data two plain atomics: in the models of
/// `tests/loom_*.rs` walks and writers also pin epochs and take locks, which hide a weakened
/// ordering here. Each of the four orderings of the rules (the odd store's Release fence, the
/// closing Release store, `read_begin`'s Acquire, `read_valid`'s Acquire fence) weakened by
/// one step makes it fail. Run with `RUSTFLAGS="--cfg loom --cfg crossbeam_loom"
/// cargo test --release -p udcache --lib -- loom_`.
#[cfg(all(test, loom))]
mod loom_models {
    use loom::sync::Arc;

    use super::RenameSeq;
    use crate::sync::{AtomicU64, Ordering};

    /// A directory's place: `(at_a, at_b)`, 1 where it is. A section moves it from `a` to
    /// `b`, setting `b` before clearing `a`, so between the stores it is in both places.
    struct Place {
        seq: RenameSeq,
        at_a: AtomicU64,
        at_b: AtomicU64,
    }

    impl Place {
        fn new() -> Arc<Self> {
            Arc::new(Place {
                seq: RenameSeq::new(),
                at_a: AtomicU64::new(1),
                at_b: AtomicU64::new(0),
            })
        }

        /// The move, inside one section.
        fn move_to_b(&self) {
            let _section = self.seq.write();
            // Relaxed: the section's fences order these (what the model checks).
            self.at_b.store(1, Ordering::Relaxed);
            self.at_a.store(0, Ordering::Relaxed);
        }

        /// A walker's view of the place, if it validates.
        fn read(&self) -> Option<(u64, u64)> {
            let s = self.seq.read_begin()?;
            // Relaxed: the walker's loads; the sequence count validates them.
            let a = self.at_a.load(Ordering::Relaxed);
            let b = self.at_b.load(Ordering::Relaxed);
            self.seq.read_valid(s).then_some((a, b))
        }
    }

    /// A walker that validates saw the directory in exactly one place: before the move or
    /// after it, never in both or neither. The walker runs on a thread of its own: on the
    /// model's main thread, loom never ran it after the whole section (so a Relaxed closing
    /// store passed).
    #[test]
    fn loom_validated_walks_see_one_place() {
        loom::model(|| {
            let place = Place::new();
            let writer = {
                let place = place.clone();
                loom::thread::spawn(move || place.move_to_b())
            };
            let reader = loom::thread::spawn(move || place.read());
            if let Some((a, b)) = reader.join().unwrap() {
                assert!((a, b) == (1, 0) || (a, b) == (0, 1), "a mixture validated: {a} {b}");
            }
            writer.join().unwrap();
        });
    }
}
