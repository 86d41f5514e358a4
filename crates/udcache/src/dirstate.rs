//! A directory's own state: its positive children and its listing cache (rules in
//! `writers/tree.rs` and `listing.rs`).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use udcache_readdir::{Backend, DirCache, Fill, FillError};

use crate::fs::{Filesystem, InodeSpec};
use crate::sync::{AtomicBool, AtomicU64, Mutex, Ordering, lock};

/// A directory's own state.
pub(crate) struct DirState {
    pub(crate) children: Mutex<HashMap<Box<[u8]>, InodeSpec>>,
    pub(crate) had_negatives: AtomicBool,
    /// The filesystem's last reported verifier (change attribute), if any (`Dcache::dir_changed`).
    pub(crate) verifier: AtomicU64,
    pub(crate) has_verifier: AtomicBool,
    /// Held by a report that changes the directory, from its second look at the record to its
    /// new record: reports take effect one at a time (see `listing.rs`).
    pub(crate) reports: Mutex<()>,
    /// Its cookie-indexed listing, made on the first readdir (see `listing.rs`).
    pub(crate) listing: OnceLock<Listing>,
}

impl Default for DirState {
    fn default() -> Self {
        DirState {
            children: Mutex::new(HashMap::new()),
            had_negatives: AtomicBool::new(false),
            verifier: AtomicU64::new(0),
            has_verifier: AtomicBool::new(false),
            reports: Mutex::new(()),
            listing: OnceLock::new(),
        }
    }
}

impl DirState {
    pub(crate) fn snapshot(&self) -> Vec<Child> {
        lock(&self.children)
            .iter()
            .map(|(name, &inode)| Child { name: name.to_vec(), inode })
            .collect()
    }

    /// Notes that a negative child was made.
    pub(crate) fn note_negative(&self) {
        // Relaxed: a hint read under the rename lock by `invalidate`/`forget`; a negative made
        // concurrently with them is a later event they need not cover.
        if !self.had_negatives.load(Ordering::Relaxed) {
            self.had_negatives.store(true, Ordering::Relaxed);
        }
    }
}

/// A positive child of a directory, as [`Dcache::children`](crate::Dcache::children) reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Child {
    /// Its name in the directory.
    pub name: Vec<u8>,
    /// The inode it names.
    pub inode: InodeSpec,
}

/// One directory's listing cache.
pub(crate) type Listing = DirCache<Lister>;

/// The backend of one directory's listing: the filesystem's readdir of that directory.
pub(crate) struct Lister {
    pub(crate) fs: Arc<dyn Filesystem>,
    pub(crate) dir: u64,
}

impl Backend for Lister {
    fn fill(&self, cookie: u64, max: usize) -> Result<Fill, FillError> {
        self.fs.readdir(self.dir, cookie, max)
    }
}
