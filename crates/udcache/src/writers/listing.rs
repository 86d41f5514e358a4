//! What writers tell directory listings (the rules are in `listing.rs`).

use udcache_neghash::epoch;
use udcache_readdir::Verifier;

use crate::cache::Dcache;
use crate::inode::Inode;

/// What writers tell directory listings.
impl Dcache {
    /// Whether `dir` has a listing that may answer for a name without a dentry, now (listed,
    /// or absent from a complete listing) or once a fill running now completes, or a page it
    /// holds lists the name. [`Dcache::invalidate`] takes it back where no dentry is. A listing
    /// whose reads all failed holds nothing: it is not one.
    pub(crate) fn has_listing(&self, dir: u64) -> bool {
        let guard = epoch::pin();
        let listing = self.dir_state(&guard, dir).and_then(|d| d.listing.get());
        listing.is_some_and(|l| !l.is_empty())
    }

    /// A positive dentry `name` filed in `dir`: a creation if the complete listing lacked it,
    /// or, for an incomplete listing, if the caller `asserted` the name (an `add`, not a
    /// lookup's answer).
    pub(crate) fn note_added(&self, dir: u64, name: &[u8], asserted: bool) {
        use udcache_readdir::Lookup::{Absent, Present, Unknown};
        if let Some(l) = self.dir_state(&epoch::pin(), dir).and_then(|d| d.listing.get()) {
            let created = match l.lookup(name) {
                Absent => true,
                Unknown => asserted,
                Present(_) => false,
            };
            if created {
                l.invalidate();
            }
        }
    }
}

/// Marks `dir`'s listing changed (if it has one).
pub(crate) fn changed(cache: &Dcache, dir: u64, verifier: Option<u64>) {
    if let Some(l) = cache.dir_state(&epoch::pin(), dir).and_then(|d| d.listing.get()) {
        match verifier {
            Some(v) => l.set_verifier(Verifier::new(v)),
            None => l.invalidate(),
        }
    }
}

/// Drops `dir`'s cached pages (it left the cache or was invalidated).
pub(crate) fn forget(dir: &Inode) {
    if let Some(l) = dir.dir().and_then(|d| d.listing.get()) {
        l.clear();
    }
}
