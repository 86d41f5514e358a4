//! # udcache-neghash — a concurrent hash table whose negative entries stay bounded
//!
//! ## The problem
//!
//! A filesystem cache remembers misses as *negative entries*, so the next lookup of a missing
//! name is answered without asking the filesystem. They are cheap to create and, unbounded,
//! take all memory: a process that looks up random names, or creates and deletes temporary
//! files, can fill most of a machine's memory with them in an hour. Bounding them per hash
//! bucket (at most three unreferenced negatives in a row, as Linux's dentry cache was
//! proposed to) holds a flood of single-use misses to about three entries per bucket — but
//! that bound is defeated by touching each name twice (the second touch sets the referenced
//! bit that protects it), and it must not evict the negatives real workloads reuse (compiler
//! include paths: every `-I` directory misses most headers, every compile).
//!
//! ## The mechanism
//!
//! - Entries keyed by `(parent id, name bytes)` sit on intrusive hash chains
//!   ([`udcache_rculist::HListBl`]: one word per bucket, the writer lock in its low bit).
//! - **Lookups** are lock-free under a crossbeam-epoch guard: SipHash-1-3 of the name with
//!   per-table random keys (std's `RandomState`: no one can compute colliding names offline;
//!   a table whose keys its owner assigns may choose a cheaper keyed folded multiply instead:
//!   [`KeyHash`]) and the parent mixed in by keyed multiplies — a path walk hashes each name
//!   before it knows the parent ([`NegHash::name_hash`]) — then the bucket's head word, whose
//!   tag bits answer most misses alone, then a chain walk comparing hash and length as one
//!   word before the parent and the bytes. A hit writes nothing shared
//!   except the referenced bit, and only when it is clear.
//! - **Inserts and removals** lock one bucket. Entries come from the table's `udcache-gp`
//!   pool; a removed entry goes back to it once no reader can see it (its chain lets go of it a
//!   grace period after the removal), and the pool reuses the cell after its own grace
//!   period, so a flood of short-lived negatives recycles a bounded set of cells
//!   ([`Stats::recycled`]); [`NegHash::shrink`] gives parked cells back to the allocator.
//! - **Rule 1** (the run rule): when a negative entry becomes unused, clear its referenced
//!   bit; in a run of negative, settled, unreferenced entries, keep three and evict the next.
//! - **Rule 2** (beyond it): at most `cap` negatives per bucket whatever their bits, evicting
//!   by second chance; optionally a global share of negatives. Positive and held entries are
//!   never evicted by either rule. Details and victim choice: [`trim`].
//! - An **LRU** of unused entries, negatives apart, with second chance; [`NegHash::shrink`]
//!   evicts up to `n`, negatives first: the memory-pressure hook.
//! - [`Stats`]: entries, unused, negative, buckets (as `/proc/sys/fs/dentry-state`), and
//!   evictions by rule; striped relaxed counters that never serialise threads.
//!
//! ## Example
//!
//! ```
//! use udcache_neghash::{Config, NegHash, Polarity, epoch};
//!
//! let table: NegHash<u64> = NegHash::new(Config::for_entries(1024));
//! let dir = 1;
//! // A miss, remembered: a negative entry, filed unused (nothing holds it).
//! assert!(table.insert_unused(dir, b"missing.h", Polarity::Negative, 0).is_ok());
//! // A positive entry for an existing file, carrying its inode number.
//! drop(table.insert(dir, b"present.h", Polarity::Positive, 42).inserted().unwrap());
//!
//! let guard = epoch::pin();
//! assert!(table.lookup(&guard, dir, b"missing.h").unwrap().is_negative());
//! assert_eq!(*table.lookup(&guard, dir, b"present.h").unwrap().value(), 42);
//! assert!(table.lookup(&guard, dir, b"other.h").is_none());
//!
//! let s = table.stats();
//! assert_eq!((s.entries, s.negative, s.unused), (2, 1, 2));
//! ```
//!
//! A flood of unique misses stays bounded:
//!
//! ```
//! use udcache_neghash::{Config, NegHash, Polarity};
//!
//! let table: NegHash<()> = NegHash::new(Config::with_buckets(64));
//! for i in 0..10_000u32 {
//!     drop(table.insert(1, format!("{i:08x}").as_bytes(), Polarity::Negative, ()).inserted().unwrap());
//! }
//! assert!(table.stats().per_bucket() <= 3.0);
//! ```

mod bucket;
mod config;
mod entry;
pub mod hashing;
mod home;
mod links;
mod lru;
mod name;
mod pooled;
mod siphash;
mod stats;
mod store;
mod sync;
mod table;
pub mod trim;

pub use config::Config;
pub use entry::{Entry, Polarity};
pub use hashing::{KeyHash, NameHash};
pub use name::INLINE_NAME;
pub use stats::Stats;
#[doc(hidden)]
pub use table::Shape;
pub use table::{Held, Insertion, NegHash, Shrunk};
pub use udcache_rculist::epoch;

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
