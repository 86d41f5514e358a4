//! Recycling inodes: counted references to inodes that live in a `udcache-gp` pool.
//!
//! # Rules
//!
//! - Every inode object comes from its cache's [`GpPool`] and goes back to it when its last
//!   [`InodeRef`] is dropped. The pool parks it with a
//!   grace-period cookie and hands it out again — re-initialised for another file, perhaps
//!   under the same inode number — only once every reader pinned at the free has unpinned
//!   (2022's "require an RCU grace period before inode recycle", without the stall: the pool
//!   allocates fresh while the oldest cookie is pending).
//! - So a lockless reader holding `&Inode` under an epoch guard keeps seeing the file it
//!   found, whole, until it unpins; a count may be dropped at once, with no `defer`.
//! - Counts: one per positive dentry slot, one for the inode table's entry, and temporaries
//!   held by writers. Increments are `Relaxed` (a count is only copied from a live one); the
//!   decrement is `Release` and the last one is followed by an `Acquire` fence, so every use
//!   through any count happens before the free (the `Arc` argument).
//! - Lifetime: a cache gives back every count it holds when it is dropped (its tables' slots
//!   are emptied at once, not when their entries are freed), then drops its pool, which frees
//!   the parked inodes (after their grace periods). Under loom the pool is leaked instead: a
//!   model's deferred functions may run after the model.
//! - The pool never drops a parked inode's contents before reuse (it re-initialises in place,
//!   with the pool's hook, owning it exclusively), so memory under a late reader always holds
//!   a valid `Inode`. A recycled inode's heavy parts (alias list, directory state) are let go
//!   at that re-initialisation.

use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use udcache_gp::{GpPool, PoolBox, PoolConfig};

use super::Inode;
use crate::fs::InodeSpec;
use crate::sync::{Ordering, fence};

/// The pool an inode returns to, as each inode stores it.
#[derive(Clone, Copy)]
pub(crate) struct Pool(NonNull<GpPool<Inode>>);

// SAFETY: a shared pointer to a pool, which is `Sync`; the pool outlives every inode it made
// (a cache drops its pool only after every count is given back: see `Dcache`'s drop).
unsafe impl Send for Pool {}
// SAFETY: as above.
unsafe impl Sync for Pool {}

impl Deref for Pool {
    type Target = GpPool<Inode>;
    fn deref(&self) -> &GpPool<Inode> {
        // SAFETY: the pool outlives its inodes (see the `Send` impl).
        unsafe { self.0.as_ref() }
    }
}

/// A cache's pool of inodes. Each inode remembers it (to free itself into), so it is boxed
/// (its address stable) and told its own address before the first allocation.
pub(crate) fn new_pool() -> Box<GpPool<Inode>> {
    let me: Arc<OnceLock<Pool>> = Arc::new(OnceLock::new());
    let mine = me.clone();
    // Under loom a model frees a handful of inodes: ask for a grace period at every free so
    // that reuse happens within the model.
    let config = PoolConfig::default().with_request_every(if cfg!(loom) { 1 } else { 64 });
    let pool = Box::new(GpPool::with_config(
        config,
        move || Inode::blank(*mine.get().expect("set before the first alloc")),
        Inode::recycle,
    ));
    assert!(me.set(Pool(NonNull::from(&*pool))).is_ok(), "set once");
    pool
}

/// One counted reference to a pooled inode (what `Arc<Inode>` would be).
pub(crate) struct InodeRef(NonNull<Inode>);

// SAFETY: an `InodeRef` is a shared reference with a count; `Inode` is `Sync` (all its
// mutable state is atomic or behind locks), and the count is atomic.
unsafe impl Send for InodeRef {}
// SAFETY: as above.
unsafe impl Sync for InodeRef {}

impl InodeRef {
    /// A new inode from `pool` with one count.
    pub(crate) fn new(pool: &GpPool<Inode>, spec: InodeSpec, parent: u64, lookups: u64) -> Self {
        let mut b = pool.alloc();
        b.init(spec, parent, lookups);
        InodeRef(PoolBox::into_raw(b))
    }

    /// Whether two references name the same inode object.
    pub(crate) fn ptr_eq(a: &InodeRef, b: &InodeRef) -> bool {
        a.0 == b.0
    }

    /// Gives up the count as a raw pointer (for a slot); [`InodeRef::from_raw`] takes it back.
    pub(crate) fn into_raw(this: InodeRef) -> *mut Inode {
        let p = this.0.as_ptr();
        std::mem::forget(this);
        p
    }

    /// Takes back a count given up by [`InodeRef::into_raw`].
    ///
    /// # Safety
    ///
    /// `p` came from `into_raw` and its count is taken back at most once.
    pub(crate) unsafe fn from_raw(p: *mut Inode) -> Self {
        // SAFETY: `into_raw` pointers are never null (the caller's contract).
        InodeRef(unsafe { NonNull::new_unchecked(p) })
    }

    /// A new count on the inode behind `p`, unless its last count is already gone (it is on its
    /// way back to the pool): "increment if not zero".
    ///
    /// Takes the slot's raw pointer, not `&Inode`: the reference made here may be the inode's
    /// last, whose drop hands the pointer back to the pool, which re-initialises the object
    /// through it. A pointer derived from a shared reference only allows reads (outside the
    /// inode's atomics and locks), so it must carry the provenance of the pool's.
    ///
    /// # Safety
    ///
    /// `p` came from [`InodeRef::into_raw`] and was loaded from a slot that held its count,
    /// under an epoch guard the caller still holds (which keeps the memory from being
    /// re-initialised meanwhile).
    pub(crate) unsafe fn try_clone(p: NonNull<Inode>) -> Option<Self> {
        // SAFETY: a pooled inode, not re-initialised while the caller's guard is pinned.
        let inode = unsafe { p.as_ref() };
        let mut n = inode.count().load(Ordering::Relaxed);
        loop {
            if n == 0 {
                return None;
            }
            // Relaxed: as `clone` (a count copied from a live one; the found pointer is valid
            // under the caller's guard).
            match inode.count().compare_exchange_weak(
                n,
                n + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(InodeRef(p)),
                Err(now) => n = now,
            }
        }
    }

    /// A new count on the inode behind `p`.
    ///
    /// # Safety
    ///
    /// `p` came from `into_raw` and that count is still held (so the inode is alive) for the
    /// duration of the call.
    pub(crate) unsafe fn clone_raw(p: *mut Inode) -> Self {
        // SAFETY: the caller holds a count on `p`, so it is a live pooled inode.
        let inode = unsafe { &*p };
        inode.count().fetch_add(1, Ordering::Relaxed);
        // SAFETY: the count just taken is the new reference's.
        unsafe { Self::from_raw(p) }
    }
}

impl Deref for InodeRef {
    type Target = Inode;
    fn deref(&self) -> &Inode {
        // SAFETY: this reference holds a count, so the inode is not back in its pool.
        unsafe { self.0.as_ref() }
    }
}

impl Clone for InodeRef {
    fn clone(&self) -> Self {
        // Relaxed: copied from a live count (see the module rules).
        self.count().fetch_add(1, Ordering::Relaxed);
        InodeRef(self.0)
    }
}

impl Drop for InodeRef {
    fn drop(&mut self) {
        // Release: this count's uses happen before the free; pairs with the Acquire fence of
        // whoever drops the last count.
        if self.count().fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        let pool = self.pool();
        let pool: &GpPool<Inode> = &pool;
        // SAFETY: the last count is gone and every path to the inode (slots, the inode table)
        // held a count, so it is unpublished; it came from this pool's `into_raw` (`new`) and
        // is freed once. Readers still pinned keep seeing it until its grace period ends.
        unsafe { pool.free_raw(self.0) };
    }
}
