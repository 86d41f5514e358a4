//! The rename sequence: how a lockless path walk knows no directory moved under it.
//!
//! # Rules
//!
//! - One mutex (the *rename lock*) and one sequence count `seq` per cache. `seq` is odd while a
//!   writer is inside a write section and grows by 2 per section; only the holder of the rename
//!   lock opens a section (`WriteSection`: the lock held, as a type).
//! - **What opens a section**: every operation that can change which inode a *directory* step of
//!   a path resolves to — `rename` (always), `resolve`'s move of a directory renamed behind the
//!   cache (`splice.rs`), `unlink` and `invalidate` of a directory, and `forget` that drops a
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

use udcache_neghash::epoch::Guard;

use crate::UnlinkPolicy;
use crate::cache::{Lookup, MovingLock};
use crate::dentry::{DentryWrites, NameLock};
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

/// Whether [`Dcache::rename`](crate::Dcache::rename) may replace an existing target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RenameMode {
    /// A positive target is replaced (its inode loses that name), like `rename(2)`.
    #[default]
    Replace,
    /// A positive target is [`Error::Exists`](crate::Error::Exists) (`RENAME_NOREPLACE`).
    NoReplace,
    /// Both names must be positive; they swap inodes atomically (`RENAME_EXCHANGE`). A missing
    /// target is [`Error::NotFound`](crate::Error::NotFound).
    Exchange,
}

/// Renames.
impl crate::Dcache {
    /// Moves the name `old_name` in `old_parent` to `new_name` in `new_parent` (or, with
    /// [`RenameMode::Exchange`], swaps the two names' inodes), inside one rename section: a
    /// lockless walk that overlaps it falls back and walks again, so no walk sees a state
    /// between its steps. The old name is left as the [`UnlinkPolicy`]
    /// says; a replaced target's inode stays cached (until `forget`). Renaming a name onto
    /// itself, or onto another name of the same inode, does nothing (with
    /// [`RenameMode::NoReplace`] it is [`Error::Exists`](crate::Error::Exists), as `renameat2`
    /// says: the target is positive). Both directories' listings are marked changed.
    ///
    /// Not checked (the filesystem's job, as in FUSE): that a directory is not moved into its
    /// own subtree, and that a directory replaces only an empty directory.
    ///
    /// Errors, changing nothing: a bad name; `new_parent` not a cached directory; no positive
    /// source ([`Error::NotFound`](crate::Error::NotFound)); a positive target with
    /// [`RenameMode::NoReplace`]; no positive target with [`RenameMode::Exchange`]. A
    /// filesystem that did make the change then calls
    /// [`invalidate`](crate::Dcache::invalidate) on both names: a dentry may have been shrunk
    /// away while a listing still answers for its name.
    ///
    /// ```
    /// use udcache::{Config, Dcache, FileType, InodeSpec, RenameMode, ROOT_INO, Walk, epoch};
    /// let cache = Dcache::new(Config::for_entries(64));
    /// let dir = InodeSpec { ino: 2, kind: FileType::Directory, fs_data: 0 };
    /// let file = InodeSpec { ino: 3, kind: FileType::Regular, fs_data: 0 };
    /// cache.add(ROOT_INO, b"d", dir).unwrap();
    /// cache.add(ROOT_INO, b"f", file).unwrap();
    /// cache.rename(ROOT_INO, b"f", 2, b"g", RenameMode::NoReplace).unwrap();
    /// let guard = epoch::pin();
    /// assert!(matches!(cache.walk(&guard, ROOT_INO, "d/g"), Ok(Walk::Found(i)) if i.ino() == 3));
    /// assert!(matches!(cache.walk(&guard, ROOT_INO, "f"), Ok(Walk::Negative { .. })));
    /// cache.rename(ROOT_INO, b"d", 2, b"g", RenameMode::Exchange).unwrap(); // d <-> d/g
    /// assert!(matches!(cache.walk(&guard, ROOT_INO, "d"), Ok(Walk::Found(i)) if i.ino() == 3));
    /// ```
    pub fn rename(
        &self,
        old_parent: u64,
        old_name: &[u8],
        new_parent: u64,
        new_name: &[u8],
        mode: RenameMode,
    ) -> Result<(), crate::Error> {
        crate::validate_name(old_name)?;
        crate::validate_name(new_name)?;
        self.check_dir(new_parent)?;
        let guard = udcache_neghash::epoch::pin();
        let (from, to) = ((old_parent, old_name), (new_parent, new_name));
        // Checked before the section (a refused rename disturbs no walker), and again inside.
        if !self.rename_allowed(&guard, from, to, mode)? {
            return Ok(());
        }
        let section = self.write_section();
        // Again inside: the last forget of a directory opens a section, so `new_parent` stays
        // cached until this one closes.
        self.check_dir(new_parent)?;
        let (names, _moving) = self.lock_move(&guard, from, to, mode);
        if !self.rename_allowed(&guard, from, to, mode)? {
            return Ok(());
        }
        if mode == RenameMode::Exchange {
            self.exchange(from, to, &names);
        } else {
            self.move_name(from, to, self.unlink_policy(), None, &guard, &names);
        }
        // The listings are told before the name locks go: once unlocked, the new name's
        // dentry may be evicted, and a complete listing not yet told would answer it "absent".
        crate::listing::changed(self, old_parent, None);
        crate::listing::changed(self, new_parent, None);
        drop((names, section));
        Ok(())
    }

    /// Inside a rename section: the name locks of `from` and `to` and the inode stripes of
    /// the inodes whose names the rename moves (the source's, and with
    /// [`RenameMode::Exchange`] the target's), read again under the name locks until they
    /// are the ones locked (`add` of a file or of a nameless directory changes a name without
    /// the rename lock).
    fn lock_move(
        &self,
        guard: &Guard,
        from: (u64, &[u8]),
        to: (u64, &[u8]),
        mode: RenameMode,
    ) -> (NameLock<'_>, Option<MovingLock<'_>>) {
        let moving = |g: &Guard| {
            let ino = |(p, n): (u64, &[u8])| match self.step(g, p, n) {
                Lookup::Hit(i) => Some(i.ino()),
                _ => None,
            };
            (ino(from), if mode == RenameMode::Exchange { ino(to) } else { None })
        };
        loop {
            let seen = moving(guard);
            // Nothing positive to move: the caller's check refuses the rename.
            let inodes = seen.0.map(|a| self.lock_moving(a, seen.1));
            let names = self.lock_names(from, Some(to));
            if moving(guard) == seen {
                return (names, inodes);
            }
        }
    }

    /// The move of a rename (and of `resolve`'s splice): `from` (positive) leaves, as `left`
    /// says, and `to` names its inode, filed as an answer asked under generation `asked` of
    /// `to.0` (`None`: asserted now; see `Dcache::word`).
    pub(crate) fn move_name(
        &self,
        from: (u64, &[u8]),
        to: (u64, &[u8]),
        left: UnlinkPolicy,
        asked: Option<u32>,
        guard: &Guard,
        names: &NameLock,
    ) {
        // Positive under the name lock (checked by the caller): held, it cannot go.
        let source = self.dentry(from.0, from.1).expect("a positive source, checked");
        let inode = self.detach(&source, names, left);
        drop(source);
        self.name_unlinked(from, &inode, names);
        let valid = self.validity(to.0, false, asked);
        let (target, replaced) =
            self.put(to, &inode, valid, guard, names, true).expect("replace never refuses");
        if let Some(replaced) = replaced {
            self.name_unlinked(to, &replaced, names);
        }
        self.name_linked(to, &inode, names);
        drop(target);
        if inode.kind() == crate::FileType::Directory {
            inode.set_parent(to.0);
        }
    }

    /// The swap of an exchange: both positive (checked by the caller), each takes the other's
    /// inode in one slot store.
    fn exchange(&self, a: (u64, &[u8]), b: (u64, &[u8]), names: &NameLock) {
        let da = self.dentry(a.0, a.1).expect("a positive source, checked");
        let db = self.dentry(b.0, b.1).expect("a positive target, checked");
        let ia = da.value().load_arc(names).expect("positive, checked");
        let ib = db.value().load_arc(names).expect("positive, checked");
        self.name_unlinked(a, &ia, names);
        self.name_unlinked(b, &ib, names);
        drop(da.put_inode(ib.clone(), self.validity(a.0, false, None), names));
        drop(db.put_inode(ia.clone(), self.validity(b.0, false, None), names));
        self.name_linked(a, &ib, names);
        self.name_linked(b, &ia, names);
        for (inode, parent) in [(&ia, b.0), (&ib, a.0)] {
            if inode.kind() == crate::FileType::Directory {
                inode.set_parent(parent);
            }
        }
    }

    /// Whether the rename `from` → `to` has something to do (`Ok(false)`: the target is the
    /// source's inode already), or why it is refused.
    fn rename_allowed(
        &self,
        guard: &Guard,
        from: (u64, &[u8]),
        to: (u64, &[u8]),
        mode: RenameMode,
    ) -> Result<bool, crate::Error> {
        use crate::Error;
        let Lookup::Hit(moving) = self.step(guard, from.0, from.1) else {
            return Err(Error::NotFound);
        };
        match self.step(guard, to.0, to.1) {
            // Even the source's own inode: `renameat2(RENAME_NOREPLACE)` checks the target
            // before it looks at what the target is.
            Lookup::Hit(_) if mode == RenameMode::NoReplace => Err(Error::Exists),
            Lookup::Hit(target) if std::ptr::eq(target, moving) => Ok(false),
            Lookup::Hit(_) => Ok(true),
            _ if mode == RenameMode::Exchange => Err(Error::NotFound),
            _ => Ok(true),
        }
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
