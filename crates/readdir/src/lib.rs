//! # udcache-readdir — a readdir cache indexed by cookie
//!
//! ## The problem
//!
//! A directory listing is read in calls of a few dozen entries (`getdents`), each resuming at
//! the *cookie* the previous one ended at: an opaque 64-bit position (FUSE `off`, NFS cookie),
//! not an index, and not necessarily ordered (ext4 hands out hashes). A cache of pages searched
//! from cookie 0 on every call costs O(n) per call, O(n²) per listing. Worse, if a change to
//! the directory drops the cache mid-listing, the reader has to refill every page up to its
//! position before it progresses: on a large directory being modified, the backend calls of a
//! listing multiply, and a reader whose refill outlasts the attribute timeout never finishes.
//! A page-index cursor per open directory is no cure: a page index is a guess, and when the
//! directory shrinks the cursor overshoots.
//!
//! ## The algorithm
//!
//! - **Pages and an exact index.** Each backend call ([`Backend::fill`]) becomes a page, cut
//!   where the cached pages already go on so that no two hold the same stretch. An index maps
//!   every cookie — the one the page was filled at and each entry's — to the position of the
//!   entry after it. Resuming anywhere the cache has been is one hash lookup.
//! - **Fills only for gaps, coalesced.** A cookie at the end of a page, or not in the index, is
//!   filled from the backend at exactly that cookie, with no lock held; readers wanting the same
//!   cookie meanwhile wait for that one call.
//! - **Verifiers, lazily.** Each page records the epoch and the verifier it was filled under.
//!   A change (announced with [`DirCache::set_verifier`], or seen in a fill's verifier) moves
//!   the epoch: every page is stale at once, in O(1); a stale page is dropped when a reader
//!   reaches it or the LRU takes it. The reader that reached it refills *from its own cookie* —
//!   never from 0 — so a listing finishes however often the directory changes.
//! - **Completeness.** When fresh pages chain from cookie 0 to the end, the directory is
//!   complete and [`DirCache::lookup`] answers present or absent from a name index: the dentry
//!   cache needs no negative entries for it (Ceph's `I_COMPLETE`). Any change clears it.
//! - **One budget.** All directories of a [`ReaddirCache`] share a page budget, evicted least
//!   recently used ([`Stats`] counts hits, misses, backend calls, invalidations, evictions).
//!
//! ## The guarantee
//!
//! Given a backend whose cookies are stable positions (resuming at a cookie continues after
//! where its entry is or was) and changes announced to the cache after they are made, in one
//! listing pass: **an entry present for the whole pass appears exactly once; an entry absent for
//! the whole pass never appears; an entry added or removed during the pass appears at most
//! once.** The cache adds no duplicates and hides no entries however pages are evicted, dropped
//! or refilled: every entry returned comes from a page filled under the verifier current when
//! it is read, or from the reader's own fill (see `dir.rs` for the locking rules).
//! `reference::PassCheck` (with the `testing` feature) checks exactly this.
//!
//! ## Trouble, handled
//!
//! - **A loop**: a fill that returns the cookie it was asked at, cookie 0, the same cookie
//!   twice, or nothing without reaching the end is rejected ([`Error::Loop`], `ELOOP`) and not
//!   kept. A loop across calls (`a -> b -> a`) is caught by a [`Cursor`], which runs Brent's
//!   cycle detection over the cookies of its pass: the listing stops with `ELOOP`, never spins.
//! - **A cookie the index does not hold** — evicted, dropped as stale, issued before a change
//!   by a backend whose new listing no longer has it, or never issued by this cache — is read
//!   from the backend at that cookie, and the page kept. This is the "uncached read" of the NFS
//!   client, except that the exact index can keep a page that starts anywhere. If the backend
//!   cannot resume there either, the read fails with [`Error::BadCookie`] (`EINVAL`).
//! - **A change while a fill runs**: if the fill did not see the announced verifier, its
//!   entries go to the reader that asked (they are a true picture of the directory during its
//!   pass) but are not kept ([`Stats::uncached`]).
//! - **A page evicted under a reader**: its cookie is no longer indexed, so the next call
//!   refills from the reader's cookie. Never a wrong answer, only a backend call.
//!
//! ## Example
//!
//! A backend is one method ([`Backend::fill`]); here, a directory in memory whose cookies are
//! positions and whose verifier is a generation number that every change moves.
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::sync::Mutex;
//! use udcache_readdir::{Backend, Config, DType, Entry, Fill, FillError, ReaddirCache, Verifier};
//!
//! /// Names by cookie, and the generation.
//! struct MemDir(Mutex<(BTreeMap<u64, String>, u64)>);
//!
//! impl MemDir {
//!     /// Removes the entry at `cookie`; returns the new verifier.
//!     fn remove(&self, cookie: u64) -> Verifier {
//!         let mut dir = self.0.lock().unwrap();
//!         dir.0.remove(&cookie);
//!         dir.1 += 1;
//!         Verifier::new(dir.1)
//!     }
//! }
//!
//! impl Backend for MemDir {
//!     fn fill(&self, cookie: u64, max: usize) -> Result<Fill, FillError> {
//!         let dir = self.0.lock().unwrap();
//!         let mut after = dir.0.range(cookie + 1..);
//!         let entries: Vec<Entry> = after
//!             .by_ref()
//!             .take(max)
//!             .map(|(&c, name)| Entry::new(name, 1000 + c, DType::REG, c))
//!             .collect();
//!         Ok(Fill { entries, eof: after.next().is_none(), verifier: Verifier::new(dir.1) })
//!     }
//! }
//!
//! let names = (1..=100).map(|c| (c, format!("file{c}"))).collect();
//! let cache = ReaddirCache::with_config(Config::default().with_page_entries(16));
//! let dir = cache.dir(MemDir(Mutex::new((names, 1))));
//! let mut pass = dir.cursor();
//! let first = pass.read(10).unwrap(); // one backend call fills 16 entries
//! assert_eq!(first.len(), 10);
//! // The directory changes mid-listing and the cache is told: every page goes stale.
//! let v = dir.backend().remove(50);
//! dir.set_verifier(v);
//! // The pass continues from its own cookie; it does not start over.
//! let mut rest = 0;
//! loop {
//!     let batch = pass.read(10).unwrap();
//!     if batch.is_empty() {
//!         break;
//!     }
//!     rest += batch.len();
//! }
//! assert_eq!(10 + rest, 99);
//! let s = cache.stats();
//! assert_eq!(s.invalidations, 1);
//! assert_eq!(s.backend_calls, 1 + 6); // one fill before the change, 89 entries after: 6 more
//! ```
//!
//! ## Test doubles
//!
//! With the cargo feature `testing` (off by default), the module `reference` has an in-memory
//! backend with ordered or hashed cookies and a checker of the listing guarantee, for tests,
//! benchmarks and fuzzing.
//!
//! ## Modules
//!
//! `listing.rs` holds the index and its rules, `dir.rs` the per-directory lock and fills,
//! `budget.rs` the shared LRU, `cursor.rs` a pass with loop detection, and `reference` (with
//! the `testing` feature) the model backends and the guarantee checker.

mod backend;
mod budget;
mod config;
mod cursor;
mod dir;
mod entry;
mod error;
mod listing;
#[cfg(feature = "testing")]
pub mod reference;
mod sync;

pub use backend::{Backend, Fill, FillError};
pub use budget::Stats;
pub use config::Config;
pub use cursor::Cursor;
pub use dir::{DirCache, ReaddirCache};
pub use entry::{Batch, DType, Entry, Lookup, Verifier};
pub use error::Error;

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
