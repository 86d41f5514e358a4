//! # udcache — a userspace directory-entry cache
//!
//! **Status: the core.** What exists and what does not yet is listed under
//! [Status](#status) below; nothing listed as missing is stubbed.
//!
//! ## The problem
//!
//! A userspace filesystem (FUSE, a network client, a build system's virtual tree) answers the
//! same name lookups over and over: `make -j` runs hundreds of compiles, each looking up the
//! same headers through the same fifty `-I` directories, almost all of them misses. Linux's
//! NFS client (see the README's References) measured `make -j 40` of such a load running at
//! *half* the speed of `make -j 5` on 40 cores, because every step that took a lock or a
//! reference forced the path walk out of its lockless mode; once the common checks were made
//! lockless, `make -j 40` became about 3x faster than `make -j 5`. A userspace cache guarded by
//! one mutex (libfuse's high-level node table) has the same ceiling. And remembered misses
//! must stay bounded: Linux's dcache has seen negative entries fill 197 GB of a 256 GB
//! machine in half an hour.
//!
//! ## The mechanism
//!
//! - **Dentries** are entries of a [`udcache_neghash`] table keyed by `(parent inode, name)`:
//!   lookups take no lock and write nothing shared on a hit except a referenced bit, once;
//!   negative dentries (remembered misses) are bounded per bucket by that crate's rules.
//!   A positive dentry's value is a pointer to its [`Inode`], swapped atomically by writers and
//!   released through the epoch (see `dentry.rs`), so a reader under a guard never sees freed
//!   memory. Each dentry has a sequence count (neghash's per-entry count, in its state word:
//!   no extra byte) under which writers change its inode and validity word together, so a
//!   lockless reader takes both as one snapshot.
//! - **Inodes** live in a `udcache-gp` pool (recycled only after a grace period) and carry
//!   the number, type and a word of the filesystem's own, a FUSE lookup count
//!   ([`Dcache::forget`]), `..` for directories, and cached attributes that readers copy as one
//!   consistent snapshot without locks (a sequence count of atomic words: see `attr.rs` for
//!   why not the `seqlock` crate).
//! - **Path walk** ([`Dcache::walk`]) resolves `a/b/c` under one epoch guard, one lockless
//!   lookup per component, validated as a whole by a global *rename sequence*: every
//!   operation that can change what a directory name leads to (rename, unlink or forget of a
//!   directory) runs inside a write section that makes the sequence odd. A walk that saw the
//!   sequence move walks again holding the rename lock — the ECHILD fallback of Linux's RCU-walk, counted
//!   in [`Stats::walk_fallbacks`]. Leaf changes (create, unlink of a file) need no section:
//!   the last step is one atomic lookup.
//! - **Writers** lock a stripe of names (or two, in order, for rename), an inode stripe for
//!   lookup counts, and the rename lock, in the order of the "Lock order" table in the
//!   repository's `ARCHITECTURE.md`.
//! - **Misses** ([`Dcache::resolve`]) call a [`Filesystem`] with no lock and no guard held, and
//!   concurrent misses of one name wait for a single call.
//! - **Revalidation**: every dentry carries, beside its inode pointer, one word packing its expiry (a 32-bit tick of a [`Clock`]) and its
//!   parent directory's verifier generation when it was filled; a negative dentry is trusted
//!   only while that generation is current ([`Dcache::dir_changed`] bumps it — a store, and
//!   nothing when a reported verifier did not move). Walks check both with loads and compares;
//!   a walk of [`Dcache::resolve_path`] offers a stale dentry to [`Filesystem::revalidate`]
//!   without blocking and leaves the lockless mode only if the filesystem must block (counted
//!   by [`Reason`]); the blocking path ([`Dcache::resolve_path`], [`Dcache::resolve`])
//!   asks with no lock held and refreshes or drops the dentry (see `reval.rs`).
//!   [`Dcache::resolve_path`] runs the whole resolution: lockless walks, the blocking work
//!   they leave, and lookups of misses, against the filesystem the cache was given
//!   ([`Config::with_filesystem`]).
//! - **Access cache**: per inode, permission results per [`Cred`] with an expiry, at most
//!   [`ACCESS_PER_INODE`]; a walk checks search permission on each directory by
//!   looking only at the most recent result, lock-free;
//!   anything else goes to the locked list and then [`Filesystem::access`]. A change of mode,
//!   owner or group ([`Dcache::setattr`]) or [`Dcache::acl_changed`] forgets them all.
//!
//! ## Guarantees
//!
//! - [`Dcache::lookup`] and [`Dcache::walk`] never block (except a walk's fallback) and return
//!   what the name or path denoted at one instant during the call.
//! - A walk trusts only dentries that are fresh or that the filesystem revalidated; a negative
//!   filled before a [`Dcache::dir_changed`] returned is never trusted after it, concurrent
//!   reports of one directory's verifier are linearizable (see `listing.rs`), and an access
//!   result filled before a revocation returned is never used after it (loom models and a
//!   stress test check both: `tests/loom_reval.rs`, `tests/reval_stress.rs`).
//! - Bad input (an invalid name, an unknown inode, a forget of more than was looked up) is an
//!   [`Error`] and changes nothing.
//! - Negative dentries stay bounded (about three per bucket under a flood of unique misses).
//!
//! ## Example
//!
//! ```
//! use udcache::{Config, Dcache, FileType, InodeSpec, Lookup, ROOT_INO, Walk, epoch};
//!
//! let cache = Dcache::new(Config::for_entries(1024));
//! let src = InodeSpec { ino: 2, kind: FileType::Directory, fs_data: 0 };
//! let main_c = InodeSpec { ino: 3, kind: FileType::Regular, fs_data: 0xfeed };
//! cache.add(ROOT_INO, b"src", src).unwrap();
//! cache.add(2, b"main.c", main_c).unwrap();
//! cache.add_negative(2, b"config.h").unwrap(); // a remembered miss
//!
//! let guard = epoch::pin();
//! match cache.walk(&guard, ROOT_INO, "src/main.c").unwrap() {
//!     Walk::Found(inode) => assert_eq!(inode.fs_data(), 0xfeed),
//!     other => panic!("{other:?}"),
//! }
//! assert!(matches!(cache.lookup(&guard, 2, b"config.h"), Ok(Lookup::Negative)));
//! assert!(matches!(cache.lookup(&guard, 2, b"util.c"), Ok(Lookup::Miss)));
//! drop(guard);
//!
//! cache.unlink(2, b"main.c").unwrap(); // now negative
//! cache.forget(3, 1).unwrap(); // the kernel forgot it: the inode leaves the cache
//! let s = cache.stats();
//! assert_eq!((s.nr_dentry, s.nr_negative, s.nr_inodes), (3, 2, 2));
//! println!("{}", s.dentry_state()); // like /proc/sys/fs/dentry-state
//! ```
//!
//! ## Status
//!
//! Exists: [`Dcache`] with [`Config`] (entries or buckets, negative cap, [`UnlinkPolicy`], readdir
//! budget); [`Inode`] (number, type, filesystem data, FUSE lookup count, `..`, lock-free attribute
//! snapshots with expiry); [`Dcache::lookup`] (and [`Dcache::peek`], which marks nothing used),
//! [`Dcache::walk`] (rename sequence validation, locked fallback), [`Dcache::resolve`] with a
//! [`Filesystem`] and coalesced misses; [`Dcache::add`] (with instantiation),
//! [`Dcache::add_negative`], [`Dcache::unlink`], [`Dcache::rename`] (replace, no-replace,
//! exchange), [`Dcache::invalidate`] of a subtree, [`Dcache::forget`], [`Dcache::shrink`]
//! (negatives first, then positives, least recently used first per LRU shard); positive children
//! kept apart from negatives ([`Dcache::children`], [`Dcache::walk_tree`] with [`Visit`] continue /
//! skip / skip-siblings / quit); listings through per-directory `udcache-readdir` caches
//! ([`Dcache::readdir`]) whose complete listings answer misses without negative dentries (where
//! negatives never time out); [`Stats`] printable like `dentry-state`. Tests: every operation and
//! refusal (`tests/ops.rs`, `tests/tree.rs`), coalescing with real threads, a rename storm with an
//! oracle (`tests/storm.rs`), writers against writers with a consistency check of slots, aliases
//! and children maps (`tests/writers.rs`), loom models of a walk against a rename, `getattr`
//! against `setattr`, a lookup against unlink and reuse of its inode number, a walk against the
//! invalidation of its directory (`tests/loom_invalidate.rs`), and walks against `shrink` of their
//! path and the last `forget` of their directory, with its number reused for another file
//! (`tests/loom_reclaim.rs`), and walks against an exchange and an instantiation, and two misses of
//! one name making one filesystem call (`tests/loom_writers.rs`).
//!
//! Revalidation and the access cache: [`Timeouts`] and a [`Clock`] in
//! [`Config`]; per-dentry validity ([`Dcache::set_entry_timeout`]); [`Dcache::dir_changed`]
//! with verifiers; [`Dcache::resolve_path`] (the answers its blocking steps got serve the
//! rest of that resolution: see `unblocked.rs`) with
//! [`Filesystem::revalidate`] and [`Filesystem::access`] (defaults: block, then compare a
//! fresh lookup; grant everything); [`Dcache::may_access`], [`Dcache::access`],
//! [`Dcache::acl_changed`]; fallbacks by reason, revalidations and access hits in [`Stats`].
//! Tests: `tests/reval.rs` (one behaviour each), `tests/reval_stress.rs`,
//! `tests/loom_reval.rs`. Limits: the clock saturates after 2.28 years (timed entries are then
//! revalidated at every use) and generations are 32 bits (see `valid.rs`); the validity word
//! costs 8 bytes per dentry.
//!
//! Inodes come from a `udcache-gp` pool and are recycled for other files only after a grace
//! period ([`Stats::inodes_recycled`]); the loom model checks that a reader holding one keeps
//! seeing its own file. Dentries come from the name table's own `udcache-gp` pool
//! (`udcache-neghash` keeps its entries there): a dentry's cell goes back to the pool once no
//! reader can see it — its hash chain lets go of it a grace period after the unhash — and is
//! reused for another name after the pool's own grace period ([`Stats::dentries_recycled`]);
//! [`Dcache::shrink`] gives parked cells back to the allocator.
//!
//! Layout rules for the lookup path: the pools make dentries side by side in blocks of their
//! own (up to 2 MiB, on huge pages: see `udcache_gp`), so a walk needs few TLB entries; the
//! name table has two buckets per entry and each chain puts its older positives first, so a
//! step reads few other dentries before its own; a walk's answer carries the leaf's number
//! from its dentry ([`Named`]), so no step loads an inode; the next component is hashed while
//! the current step waits on memory, by a SipHash-1-3 that reads the name a word at a time,
//! compiled into the step with the chain search and the name compare. A step reads the first
//! 70 bytes of its 112-byte dentry (from the chain link to the end of a 14-byte name), which
//! span two cache lines. Measured figures are in the repository's `BENCHMARKS.md`.
//! A dentry's sequence count covers its inode and validity word, not its place in the tree: a
//! rename makes a new dentry, and walks are validated by the global rename sequence, which is
//! coarser than the kernel's per-dentry check (any rename sends overlapping walks to the
//! fallback).

// Layered: each module imports only from those above it in this list.
mod access;
mod attr;
mod cache;
mod clock;
mod config;
mod dentry;
mod dirstate;
mod error;
mod fetch;
mod fs;
mod inflight;
mod inode;
mod listing;
mod name;
mod permit;
mod rename;
mod reval;
mod seq;
mod stats;
mod sync;
mod unblocked;
mod valid;
mod walk;
mod writers;

pub use access::{ACCESS_PER_INODE, AccessStamp, Cred, Mask, Permission};
pub use attr::Attr;
pub use cache::{Dcache, Lookup, ROOT_INO};
pub use clock::{Clock, CoarseClock, ManualClock};
pub use config::{Config, UnlinkPolicy};
pub use dentry::Named;
pub use dirstate::Child;
pub use error::{Errno, Error, InvalidName};
pub use fs::{Cached, FileType, Filesystem, InodeSpec, Resolved, Revalidate, defaults};
pub use inode::Inode;
pub use name::{NAME_MAX, validate_name};
pub use reval::{Checked, OnMiss, PathEnd};
pub use stats::Stats;
pub use udcache_neghash::epoch;
pub use udcache_readdir as readdir;
pub use unblocked::Unblocked;
pub use valid::{Reason, Timeouts};
pub use walk::{Blocked, Walk};
pub use writers::{RenameMode, Visit};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
