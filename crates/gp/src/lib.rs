//! # udcache-gp — grace-period cookies, and a pool that reuses objects only after them
//!
//! ## The problem
//!
//! A lockless reader (a path walk under RCU, or here under a crossbeam-epoch guard) may still be
//! looking at an object after a writer unlinked and freed it. If the allocator hands that
//! memory to a new owner at once, the reader sees the object change identity under it — an
//! inode turning into another file's inode. Stamping each freed object with a grace-period
//! cookie and waiting, at reuse, until that grace period has passed makes reuse safe, but the
//! wait is a stall on the allocation path: a create/unlink loop that reuses objects in small
//! batches runs at a fraction of its speed, and only large batches share one stall among many
//! objects.
//!
//! ## The mechanism
//!
//! - **Cookies** ([`get_state`], [`start_poll`], [`poll`], [`cond_synchronize`],
//!   [`synchronize`]): the kernel's polled grace-period API, in userspace, on top of
//!   crossbeam-epoch. A cookie completes once every reader pinned when it was taken has
//!   unpinned; checking is a load and a compare. See [`cookie`] for how a cookie maps onto
//!   crossbeam's epoch advancement and why the orderings make it sound.
//! - **[`GpPool`]**: `free` parks an object under its cookie; `alloc` hands out the oldest
//!   parked object whose cookie completed, and otherwise allocates a fresh one instead of
//!   waiting. The pool grows to free rate × grace-period latency and stops there: no stalls,
//!   unless a hard cap on objects is set and reached. Fresh objects are made in runs (a
//!   page's worth by default, side by side in blocks of the pool's own, up to 2 MiB on huge
//!   pages), the rest kept as spares for the next allocations, so that objects allocated in
//!   a burst share pages rather than interleave with the program's other allocations.
//!
//! ## Guarantees
//!
//! An object freed while a reader that could have seen it is still pinned is never handed out
//! again (nor its memory released) before that reader unpins. Proven by a loom model
//! (`tests/loom_pool.rs`) and a stress test with a negative control (`tests/stress.rs`).
//!
//! ## Read-side guards
//!
//! Every udcache crate reads under crossbeam-epoch guards; this crate re-exports what callers
//! need ([`pin`], [`Guard`], [`is_pinned`]), so one pin covers a whole path walk.
//!
//! ## Example
//!
//! ```
//! use std::sync::atomic::{AtomicPtr, Ordering};
//! use udcache_gp::{GpPool, PoolBox, pin};
//!
//! #[derive(Default)]
//! struct Inode { ino: u64, generation: u64 }
//!
//! let pool = GpPool::new(Inode::default, |i: &mut Inode| i.generation += 1);
//! let mut inode = pool.alloc();
//! inode.ino = 42;
//! let published = AtomicPtr::new(PoolBox::into_raw(inode).as_ptr());
//!
//! // A lockless reader.
//! let guard = pin();
//! let seen = published.load(Ordering::Acquire);
//!
//! // A writer unpublishes and frees; the reader is still pinned, so the object stays parked.
//! let old = published.swap(std::ptr::null_mut(), Ordering::AcqRel);
//! unsafe { pool.free_raw(std::ptr::NonNull::new(old).unwrap()) };
//! let other = pool.alloc(); // a fresh object: the freed one's grace period is still running
//! assert_eq!(unsafe { (*seen).generation }, 0);
//! assert_eq!(unsafe { (*seen).ino }, 42);
//! drop(guard);
//! # drop(other);
//! ```

pub mod cookie;
mod pool;
mod sync;

pub use cookie::{GpCookie, cond_synchronize, get_state, poll, start_poll, synchronize};
pub use crossbeam_epoch::{Guard, is_pinned, pin};
pub use pool::{GpPool, MAX_SHARDS, PoolBox, PoolConfig, PoolStats, Reuse};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
