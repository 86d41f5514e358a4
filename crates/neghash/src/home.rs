//! Which pool an entry goes back to: a 32-bit number, not a pointer.
//!
//! # Rules
//!
//! - **Why a number.** An entry's last count may be dropped where no table is at hand (its
//!   chain gives the count up in a deferred function, perhaps after the table is gone), so
//!   the entry must say which pool its cell goes back to. A pointer would cost a word per
//!   entry; a [`Home`] costs half of one, and sits beside the 32-bit count of references, so
//!   the two take the word the pointer alone took (a dentry of udcache is 112 bytes, not 120).
//! - **The registry.** A process-wide table maps each number to its pool: [`CHUNKS`] chunks of
//!   [`CHUNK`] slots, each chunk allocated the first time one of its numbers is handed out and
//!   kept for the process's life (8 KiB each), so that a lookup is two loads and takes no lock.
//!   Numbers are handed out and taken back under one mutex ([`register`], [`Registered`]'s
//!   drop); the smallest free number is reused first, so a process that makes and drops
//!   tables keeps using its first chunk. A number's owner points its slot at the pool
//!   ([`Registered::point_at`]) before any entry carries it.
//! - **Orderings.** A chunk is made under the mutex, published with a `Release` store and read with
//!   `Acquire` (pairs with it: its null slots are seen initialised). A slot is written and read
//!   with `Relaxed`: a thread that reads it holds a count of an entry made with that number, and
//!   the entry's making happened after `point_at` (the number was read from the table that
//!   registered it, in the same thread or one the table was handed to) and before the reader's
//!   count (the count's own `Release`/`Acquire` chain), so the store is visible; a number is taken
//!   back only when its pool is dropped, after the last entry that carries it is freed.
//! - **Limits.** At most `CHUNKS × CHUNK` (16,777,216) tables live at once; the next one
//!   panics. Under loom the registry is plain std (it is not part of any modelled protocol:
//!   a model's entries never go back to their pool, see `pooled.rs`).

use std::collections::BTreeSet;
use std::fmt;
use std::ptr::null_mut;
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, Ordering};

/// Slots per chunk.
const CHUNK: usize = 1 << 10;
/// Chunks in the registry.
const CHUNKS: usize = 1 << 14;

type Chunk = [AtomicPtr<()>; CHUNK];

/// Numbers and the pools they stand for (see the module rules).
struct Registry {
    /// The chunks; a null one has not been needed yet.
    chunks: [AtomicPtr<Chunk>; CHUNKS],
    /// The numbers handed out before and given back since (reused smallest first), and the
    /// next number never handed out.
    free: Mutex<(BTreeSet<u32>, u32)>,
}

/// The process's registry.
static REGISTRY: Registry = Registry::new();

/// The number of an entry's pool in the registry (see the module rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Home(u32);

impl Home {
    /// The pool registered under this number (see the module rules: the caller holds a count
    /// of an entry that carries it).
    pub(crate) fn pool(self) -> *const () {
        REGISTRY.pool(self)
    }
}

/// A number handed out for one pool; dropping it takes the number back.
#[derive(Debug)]
pub(crate) struct Registered {
    home: Home,
    registry: &'static Registry,
}

impl Registered {
    /// The number.
    pub(crate) fn home(&self) -> Home {
        self.home
    }

    /// Points the number at `pool`, which the caller keeps alive until it drops `self`; done
    /// before any entry carries the number (see the module rules, Orderings).
    pub(crate) fn point_at(&self, pool: *const ()) {
        self.registry.slot(self.home.0).store(pool.cast_mut(), Ordering::Relaxed);
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut free = self.registry.free.lock().unwrap_or_else(|e| e.into_inner());
        self.registry.slot(self.home.0).store(null_mut(), Ordering::Relaxed);
        free.0.insert(self.home.0);
    }
}

/// A number for a pool, pointed at nothing yet ([`Registered::point_at`] does).
///
/// # Panics
///
/// If `CHUNKS × CHUNK` numbers are handed out already.
pub(crate) fn register() -> Registered {
    REGISTRY.register()
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Registry")
    }
}

impl Registry {
    const fn new() -> Self {
        Registry {
            chunks: [const { AtomicPtr::new(null_mut()) }; CHUNKS],
            free: Mutex::new((BTreeSet::new(), 0)),
        }
    }

    fn register(&'static self) -> Registered {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let n = match free.0.pop_first() {
            Some(n) => n,
            None => {
                assert!((free.1 as usize) < CHUNKS * CHUNK, "more than 16,777,216 tables at once");
                free.1 += 1;
                free.1 - 1
            }
        };
        // The number's chunk, made now (under the lock, so by one thread) if it is its first:
        // a lookup only ever reads the chunks of numbers handed out.
        let chunk = &self.chunks[n as usize / CHUNK];
        // Relaxed: chunks are stored only under this lock, which orders this load after them.
        if chunk.load(Ordering::Relaxed).is_null() {
            let fresh = Box::into_raw(Box::new([const { AtomicPtr::new(null_mut()) }; CHUNK]));
            // Release: pairs with the Acquire in `slot` (the fresh chunk's slots are
            // initialised before a thread that reads the pointer reads them).
            chunk.store(fresh, Ordering::Release);
        }
        Registered { home: Home(n), registry: self }
    }

    fn pool(&self, home: Home) -> *const () {
        let p = self.slot(home.0).load(Ordering::Relaxed);
        debug_assert!(!p.is_null(), "a number with no pool");
        p
    }

    /// The slot of number `n`, a number handed out (so its chunk exists).
    fn slot(&self, n: u32) -> &AtomicPtr<()> {
        let (c, i) = (n as usize / CHUNK, n as usize % CHUNK);
        // Acquire: pairs with the Release store in `register` (the chunk's slots are
        // initialised).
        let chunk = self.chunks[c].load(Ordering::Acquire);
        assert!(!chunk.is_null(), "a number never handed out");
        // SAFETY: a non-null chunk pointer came from `Box::into_raw` and is never freed (a
        // registry's chunks live as long as it, and registries are `'static`).
        let chunk = unsafe { &*chunk };
        &chunk[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A registry of the calling test's own, in a static (not leaked: Miri would report it).
    macro_rules! registry {
        () => {{
            static R: Registry = Registry::new();
            &R
        }};
    }

    #[test]
    fn numbers_map_to_their_pools_and_the_smallest_free_is_reused_first() {
        let r = registry!();
        let (a, b, c) = (1u64, 2u64, 3u64);
        let pa = (&raw const a).cast::<()>();
        let pb = (&raw const b).cast::<()>();
        let pc = (&raw const c).cast::<()>();
        let reg = |p| {
            let got = r.register();
            got.point_at(p);
            got
        };
        let (ra, rb, rc) = (reg(pa), reg(pb), reg(pc));
        assert_eq!([ra.home, rb.home, rc.home], [Home(0), Home(1), Home(2)]);
        assert_eq!([r.pool(ra.home), r.pool(rb.home), r.pool(rc.home)], [pa, pb, pc]);
        drop(rc);
        drop(ra);
        let rd = reg(pc);
        assert_eq!(rd.home, Home(0), "the smallest free number");
        assert_eq!(r.pool(Home(0)), pc);
        let re = reg(pa);
        assert_eq!(re.home, Home(2));
        assert_eq!(r.register().home, Home(3), "a new number once none is free");
        drop((rb, rd, re));
    }

    #[test]
    fn numbers_past_a_chunk_get_a_new_chunk() {
        let r = registry!();
        let x = 0u8;
        let px = (&raw const x).cast::<()>();
        let held: Vec<Registered> = (0..CHUNK + 1).map(|_| r.register()).collect();
        held.iter().for_each(|h| h.point_at(px));
        assert!(held.iter().all(|h| r.pool(h.home) == px));
        assert_eq!(held[CHUNK].home, Home(CHUNK as u32));
        assert!(!r.chunks[1].load(Ordering::Relaxed).is_null());
        assert!(r.chunks[2].load(Ordering::Relaxed).is_null());
    }
}
