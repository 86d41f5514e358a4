//! Statistics, printable like `/proc/sys/fs/dentry-state`.

use std::fmt;

use crate::sync::{AtomicU64, Ordering};
use crate::valid::Reason;

/// What the composed cache counts (the table counts live in neghash).
#[derive(Clone, Copy)]
pub(crate) enum Event {
    WalkFallback,
    BackendLookup,
    CoalescedMiss,
    CoalescedSleep,
    /// Not a count: nanoseconds, added per wait.
    CoalescedWaitNs,
    CompleteDirNegative,
    Revalidation,
    AccessCall,
    AccessHit,
    PathRewalk,
    /// The four fallbacks, in `Reason` order.
    Fallback(Reason),
}

/// How many kinds of event there are.
const EVENTS: usize = 14;
const _: () = assert!(10 + Reason::NeedsBlock as usize == EVENTS - 1, "one counter per reason");

impl Event {
    /// Where the event's counter sits in a stripe.
    fn index(self) -> usize {
        match self {
            Event::WalkFallback => 0,
            Event::BackendLookup => 1,
            Event::CoalescedMiss => 2,
            Event::CoalescedSleep => 3,
            Event::CoalescedWaitNs => 4,
            Event::CompleteDirNegative => 5,
            Event::Revalidation => 6,
            Event::AccessCall => 7,
            Event::AccessHit => 8,
            Event::PathRewalk => 9,
            Event::Fallback(why) => 10 + why as usize,
        }
    }
}

/// Stripes: more than the threads that usually share a cache.
const STRIPES: usize = 16;

/// One thread's counters, alone on their cache lines.
#[repr(align(128))]
struct Stripe([AtomicU64; EVENTS]);

/// The event counters, striped: each thread adds to its own stripe, so counting (also on the
/// lockless paths: access hits, revalidations) writes no line another thread writes.
pub(crate) struct Events(Box<[Stripe]>);

impl Events {
    pub(crate) fn new() -> Self {
        Events((0..STRIPES).map(|_| Stripe(std::array::from_fn(|_| AtomicU64::new(0)))).collect())
    }

    /// Counts `n` events of kind `e`.
    pub(crate) fn add(&self, e: Event, n: u64) {
        // Relaxed: statistics; nothing is ordered by them.
        self.0[stripe()].0[e.index()].fetch_add(n, Ordering::Relaxed);
    }

    /// Counts one event of kind `e`.
    pub(crate) fn bump(&self, e: Event) {
        self.add(e, 1);
    }

    /// The events of kind `e` so far.
    pub(crate) fn get(&self, e: Event) -> u64 {
        // Relaxed: statistics.
        self.0.iter().map(|s| s.0[e.index()].load(Ordering::Relaxed)).sum()
    }
}

/// This thread's stripe: threads take stripes round robin at their first count.
fn stripe() -> usize {
    // std's atomic even under loom: a stripe index orders nothing.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    thread_local! {
        static STRIPE: usize = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % STRIPES;
    }
    STRIPE.with(|s| *s)
}

/// A snapshot of a [`Dcache`](crate::Dcache)'s figures (more may be added).
///
/// `Display` prints one `name value` line per field, the first four being the
/// `/proc/sys/fs/dentry-state` fields; [`Stats::dentry_state`] gives the kernel's one-line form.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
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
    /// Of those, the ones whose call outlasted the waiter's spin, so that it slept on the call
    /// and was woken (see `fetch.rs`).
    pub coalesced_sleeps: u64,
    /// The time those misses spent waiting, spinning or asleep, all together, in nanoseconds.
    pub coalesced_wait_ns: u64,
    /// Misses answered "does not exist" by a complete cached listing, with no filesystem call
    /// and no negative dentry (only where negatives never time out: see `listing.rs`).
    pub complete_dir_negatives: u64,
    /// Inode objects this cache's `udcache-gp` pool handed out again after their grace period.
    pub inodes_recycled: u64,
    /// Dentries made in a recycled cell of the name table's `udcache-gp` pool (one freed at
    /// least a grace period before) rather than a fresh allocation.
    pub dentries_recycled: u64,
    /// Directory reads served wholly from cached listings.
    pub readdir_hits: u64,
    /// Directory reads that called the filesystem's readdir.
    pub readdir_misses: u64,
    /// Calls of [`Filesystem::revalidate`](crate::Filesystem::revalidate), lockless and
    /// blocking.
    pub revalidations: u64,
    /// Walks that left the lockless mode for an expired dentry ([`Reason::Expired`]).
    pub fallback_expired: u64,
    /// Walks that left the lockless mode for a negative dentry whose directory changed
    /// ([`Reason::Verifier`]).
    pub fallback_verifier: u64,
    /// Walks that left the lockless mode for an access check the most recent result could not
    /// answer ([`Reason::AccessMiss`]).
    pub fallback_access: u64,
    /// Walks that left the lockless mode because the filesystem could not revalidate without
    /// blocking ([`Reason::NeedsBlock`]).
    pub fallback_needs_block: u64,
    /// Access checks answered by the access cache (lockless or locked).
    pub access_hits: u64,
    /// Calls of [`Filesystem::access`](crate::Filesystem::access) (access-cache misses).
    pub access_calls: u64,
    /// Walks [`Dcache::resolve_path`](crate::Dcache::resolve_path) did again after its first
    /// (one after each round of blocking work or looked-up miss); a resolution that the first
    /// lockless walk answers counts none, so it writes no counter.
    pub path_rewalks: u64,
}

impl Stats {
    /// The six numbers of Linux's `/proc/sys/fs/dentry-state`: `nr_dentry nr_unused age_limit
    /// want_pages nr_negative dummy`. There is no age limit or page wish here: those print 0.
    pub fn dentry_state(&self) -> String {
        format!("{}\t{}\t0\t0\t{}\t0", self.nr_dentry, self.nr_unused, self.nr_negative)
    }

    /// Walks that left the lockless mode for a revalidation or an access check, all reasons
    /// (rename fallbacks are [`Stats::walk_fallbacks`]).
    pub fn reval_fallbacks(&self) -> u64 {
        self.fallback_expired
            + self.fallback_verifier
            + self.fallback_access
            + self.fallback_needs_block
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
        writeln!(f, "coalesced_sleeps {}", self.coalesced_sleeps)?;
        writeln!(f, "coalesced_wait_ns {}", self.coalesced_wait_ns)?;
        writeln!(f, "complete_dir_negatives {}", self.complete_dir_negatives)?;
        writeln!(f, "inodes_recycled {}", self.inodes_recycled)?;
        writeln!(f, "dentries_recycled {}", self.dentries_recycled)?;
        writeln!(f, "readdir_hits {}", self.readdir_hits)?;
        writeln!(f, "readdir_misses {}", self.readdir_misses)?;
        writeln!(f, "revalidations {}", self.revalidations)?;
        writeln!(f, "fallback_expired {}", self.fallback_expired)?;
        writeln!(f, "fallback_verifier {}", self.fallback_verifier)?;
        writeln!(f, "fallback_access {}", self.fallback_access)?;
        writeln!(f, "fallback_needs_block {}", self.fallback_needs_block)?;
        writeln!(f, "access_hits {}", self.access_hits)?;
        writeln!(f, "access_calls {}", self.access_calls)?;
        write!(f, "path_rewalks {}", self.path_rewalks)
    }
}
