//! Statistics, printable like `/proc/sys/fs/dentry-state`.

use std::fmt;

use crate::sync::{AtomicU64, Ordering};

/// Event counters of the composed cache (the table counts live in neghash).
pub(crate) struct Events {
    pub(crate) walk_fallbacks: AtomicU64,
    pub(crate) backend_lookups: AtomicU64,
    pub(crate) coalesced_misses: AtomicU64,
    pub(crate) complete_dir_negatives: AtomicU64,
}

impl Events {
    pub(crate) fn new() -> Self {
        Events {
            walk_fallbacks: AtomicU64::new(0),
            backend_lookups: AtomicU64::new(0),
            coalesced_misses: AtomicU64::new(0),
            complete_dir_negatives: AtomicU64::new(0),
        }
    }

    pub(crate) fn bump(c: &AtomicU64) {
        // Relaxed: statistics; nothing is ordered by them.
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn get(c: &AtomicU64) -> u64 {
        // Relaxed: statistics.
        c.load(Ordering::Relaxed)
    }
}

/// A snapshot of a [`Dcache`](crate::Dcache)'s figures.
///
/// `Display` prints one `name value` line per field, the first four being the
/// `/proc/sys/fs/dentry-state` fields; [`Stats::dentry_state`] gives the kernel's one-line form.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Dentries in the table, positive and negative.
    pub nr_dentry: u64,
    /// Dentries no operation holds (all but those in the middle of a write).
    pub nr_unused: u64,
    /// Negative dentries.
    pub nr_negative: u64,
    /// Hash buckets of the name table.
    pub nr_buckets: u64,
    /// Cached inodes.
    pub nr_inodes: u64,
    /// Negative dentries evicted by the bounding rules (run rule, per-bucket cap, share).
    pub negative_evictions: u64,
    /// Lockless walks that saw a rename and walked again under the rename lock.
    pub walk_fallbacks: u64,
    /// Rename write sections opened (renames, directory unlinks and forgets).
    pub rename_sections: u64,
    /// Calls made to the filesystem's lookup by [`Dcache::resolve`](crate::Dcache::resolve).
    pub backend_lookups: u64,
    /// Misses that waited for another thread's call of the same name instead of calling.
    pub coalesced_misses: u64,
    /// Misses answered "does not exist" by a complete cached listing, with no filesystem call
    /// and no negative dentry.
    pub complete_dir_negatives: u64,
    /// Inode objects the `udcache-gp` pool handed out again after their grace period (the
    /// pool is shared by every cache of the process: a process-wide figure).
    pub inodes_recycled: u64,
    /// Directory reads served wholly from cached listings.
    pub readdir_hits: u64,
    /// Directory reads that called the filesystem's readdir.
    pub readdir_misses: u64,
}

impl Stats {
    /// The six numbers of Linux's `/proc/sys/fs/dentry-state`: `nr_dentry nr_unused age_limit
    /// want_pages nr_negative dummy`. There is no age limit or page wish here: those print 0.
    pub fn dentry_state(&self) -> String {
        format!("{}\t{}\t0\t0\t{}\t0", self.nr_dentry, self.nr_unused, self.nr_negative)
    }

    /// Average entries per bucket.
    pub fn per_bucket(&self) -> f64 {
        self.nr_dentry as f64 / self.nr_buckets.max(1) as f64
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "nr_dentry {}", self.nr_dentry)?;
        writeln!(f, "nr_unused {}", self.nr_unused)?;
        writeln!(f, "nr_negative {}", self.nr_negative)?;
        writeln!(f, "nr_buckets {} (average {:.2})", self.nr_buckets, self.per_bucket())?;
        writeln!(f, "nr_inodes {}", self.nr_inodes)?;
        writeln!(f, "negative_evictions {}", self.negative_evictions)?;
        writeln!(f, "walk_fallbacks {}", self.walk_fallbacks)?;
        writeln!(f, "rename_sections {}", self.rename_sections)?;
        writeln!(f, "backend_lookups {}", self.backend_lookups)?;
        writeln!(f, "coalesced_misses {}", self.coalesced_misses)?;
        writeln!(f, "complete_dir_negatives {}", self.complete_dir_negatives)?;
        writeln!(f, "inodes_recycled {}", self.inodes_recycled)?;
        writeln!(f, "readdir_hits {}", self.readdir_hits)?;
        write!(f, "readdir_misses {}", self.readdir_misses)
    }
}
