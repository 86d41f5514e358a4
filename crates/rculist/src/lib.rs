//! # udcache-rculist — intrusive lists that readers walk without locks
//!
//! ## The problem
//!
//! A cache of named objects keeps every object on several lists at once: a hash chain
//! (lookups), its group's list (walks of a directory's children, invalidation) and an LRU
//! (reclaim). Lookups dominate, and many threads make them at once: if a lookup takes a lock,
//! the lock's cache line bounces between cores and adding threads makes every lookup slower.
//! A group's list may also hold many members that most walkers do not want (negative entries
//! among a directory's children), and walkers should not have to step over them.
//!
//! ## The mechanism
//!
//! What the kernel's rculist, hlist and hlist_bl give C, with the contract in the types:
//!
//! - **Intrusive links.** A node embeds one [`Link`] or [`HLink`] per list it can sit on, and
//!   one line of [`adapter!`] per link maps the node to the link and back.
//! - **Owning pointers.** Each list holds one owning reference to each of its nodes, of the
//!   adapter's pointer type ([`Adapter::Pointer`], a [`NodePtr`]): an `Arc` by default (one
//!   strong count per list), or any type that keeps the [`NodePtr`] contract, for example a
//!   counted handle to a pooled object (`adapter!(A = Node { link: Link }, pointer = Ptr)`).
//!   See [`pointer`](mod@pointer).
//! - **Readers** pin a crossbeam-epoch [`Guard`](epoch::Guard) and walk with [`List::iter`],
//!   [`HList::iter`]/[`HListBl::find`] etc. They take no lock and store nothing: one Acquire load
//!   per step. What they get is bound to the guard's lifetime.
//! - **Writers** are serialised by a lock and prove it by holding a writer value
//!   ([`ListWriter`], [`HListWriter`], [`SplitWriter`]); every operation that changes a list is a
//!   method of it. Writers publish a node with a Release store of the pointer to it, having set
//!   its own `next` first. Removal unlinks the node from its neighbours and leaves its `next`,
//!   so a reader standing on it walks on.
//! - **Freeing.** A removal hands back [`Unlinked`], which owns the list's reference; dropping it
//!   defers the release past every reader pinned at that moment (crossbeam-epoch's `defer`).
//!   Safe code cannot free (or recycle) a node while a reader may stand on it, nor reach it
//!   afterwards. A reader that wants to keep a node gets a reference of its own
//!   ([`HListBl::find_owned`], [`Unlinked::to_ptr`]).
//!
//! ## The lists
//!
//! - [`List`]: doubly linked, head/tail, null-terminated (why not circular: see [`list`]). All
//!   writer operations: `push_front`, `push_back`, `insert_after`, `insert_before`, `remove`,
//!   `replace`, `move_to_front`, `move_to_back`, `move_to`, `splice_back`, `pop_*`, and a cursor
//!   with `remove_current`.
//! - [`HList`]: a hash chain with a one-word head; [`HListBl`]: the same head word also carries
//!   the writer lock in bit 0, so a locked bucket costs one word. The head word's top bits
//!   are tag bits ([`head::TAG_BITS`] of them): a filter the user keeps over its nodes (say,
//!   one bit per node picked by its key's hash), so a lookup of an absent key can often
//!   answer from the head alone ([`HListBl::find_tagged`]; see [`head`]).
//! - [`BareList`]: doubly linked like [`List`], for lists only lock holders touch (an LRU):
//!   no lockless readers, so removals hand the reference back at once, and a [`BareLink`] is
//!   two words (no owner id; removing a node is `unsafe`: the caller vouches for its list).
//!   `push_back`, `pop_front`, `remove`.
//! - [`SplitList`]: one list in two parts under one lock, walked first part then second (for
//!   example a directory's children, positive entries first: see [`split`]).
//!
//! ## What readers may assume
//!
//! Stated per operation in [`list`], [`hlist`] and [`split`]. In short: a node on the list for
//! the whole walk is seen exactly once; an inserted or removed node at most once; a removed node
//! is never freed under a reader; a node moved within a list may be seen twice
//! (`move_to_back`) or missed (`move_to_front`), and a reader standing on it follows it. Moves
//! bump a sequence count that [`Iter::valid`] checks, as the kernel validates sibling walks.
//! These statements are what `tests/stress.rs` and the loom models in `tests/loom_*.rs` assert.
//!
//! ## Costs
//!
//! - A reader step is one Acquire load (a plain load on x86) and a constant offset, as in a
//!   non-concurrent intrusive list; starting a walk checks the guard's collector once.
//! - A [`Link`] is three words (`next`, `prev`, and the owner id that lets writer operations
//!   refuse a node that is not on their list); a [`BareLink`] two; an [`HLink`] one; heads one ([`HList`],
//!   [`HListBl`]) or three ([`List`]: head, tail, id; plus its lock byte and move count).
//! - Nodes live wherever the adapter's [`NodePtr`] puts them, and cost what it costs. By
//!   default that is an `Arc`: 16 bytes of header. With tiny payloads this doubles the
//!   footprint of a node against intrusive-collections' `Box` nodes, which shows when a list
//!   outgrows L1 (see `benches/rculist.rs`); with nodes of a few cache lines the walks cost
//!   the same. A pool handle (say, to an object in a `udcache-gp` pool) trades the allocator
//!   for the pool's reuse after a grace period; the lists are the same code
//!   either way, and readers never touch the pointer's count.
//!
//! ## Example
//!
//! One node type on a hash chain and an LRU at once:
//!
//! ```
//! use std::sync::Arc;
//! use udcache_rculist::{HLink, HListBl, Link, List, adapter, epoch};
//!
//! struct Entry { key: u64, hash: HLink, lru: Link }
//! adapter!(HashAdapter = Entry { hash: HLink });
//! adapter!(LruAdapter = Entry { lru: Link });
//!
//! let bucket = HListBl::<HashAdapter>::new();
//! let lru = List::<LruAdapter>::new();
//! let e = Arc::new(Entry { key: 42, hash: HLink::new(), lru: Link::new() });
//! bucket.lock().push_front(e.clone()).unwrap();
//! lru.lock().push_back(e.clone()).unwrap();
//!
//! // A lockless lookup.
//! let guard = epoch::pin();
//! let hit = bucket.find(&guard, |x| x.key == 42).unwrap();
//! assert_eq!(hit.key, 42);
//!
//! // Evict: off both lists; the memory stays valid for `hit` until `guard` is dropped.
//! lru.lock().remove(&e).unwrap().retire(&guard);
//! bucket.lock().remove(&e).unwrap().retire(&guard);
//! assert_eq!(hit.key, 42);
//! assert!(bucket.find(&guard, |x| x.key == 42).is_none());
//! ```

#![doc = ""]
#![doc = "## The crate README"]
#![doc = ""]
#![doc = include_str!("../README.md")]

/// The public `insert_after` / `insert_before` pair of a writer, over its private
/// `insert_beside(anchor, node, after)`.
macro_rules! insert_beside_api {
    ($what:literal) => {
        #[doc = concat!("Inserts `node` right after `anchor`. `Err(Refused)` if `anchor` is not on this ", $what, " or `node` is on a ", $what, " already.")]
        pub fn insert_after(
            &mut self,
            anchor: &A::Value,
            node: A::Pointer,
        ) -> Result<(), Refused<A::Pointer>> {
            self.insert_beside(anchor, node, true)
        }

        #[doc = concat!("Inserts `node` right before `anchor`. `Err(Refused)` if `anchor` is not on this ", $what, " or `node` is on a ", $what, " already.")]
        pub fn insert_before(
            &mut self,
            anchor: &A::Value,
            node: A::Pointer,
        ) -> Result<(), Refused<A::Pointer>> {
            self.insert_beside(anchor, node, false)
        }
    };
}

mod adapter;
pub mod bare;
pub mod head;
pub mod hlist;
pub mod list;
mod lock;
pub mod pointer;
mod retire;
mod seq;
pub mod split;
mod sync;
mod walk;

pub use crossbeam_epoch as epoch;

pub use adapter::Adapter;
pub use bare::{BareLink, BareList, BareWriter};
pub use hlist::{HCursorMut, HIter, HLink, HList, HListBl, HListWriter};
pub use list::{CursorMut, End, Iter, Link, List, ListWriter};
pub use pointer::NodePtr;
pub use retire::{Refused, Unlinked};
pub use split::{SplitIter, SplitList, SplitWriter};

/// A fresh list id for [`Link`] owner words (0 means "on no list").
///
/// Not a modelled atomic under loom: ids only need to be distinct.
fn next_list_id() -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
