//! How a cache is sized and behaves: [`Config`].

use std::num::NonZeroUsize;
use std::sync::Arc;

use udcache_neghash::KeyHash;

use crate::clock::{Clock, CoarseClock};
use crate::fs::Filesystem;
use crate::valid::Timeouts;

/// What `unlink` (and the source of a `rename`) leaves behind, like Linux's
/// `fs.dentry-negative` sysctl.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnlinkPolicy {
    /// The dentry turns negative: the next lookup of the name is answered "does not exist"
    /// without asking the filesystem (`fs.dentry-negative = 0`, Linux's default).
    #[default]
    Negative,
    /// The dentry is dropped: the next lookup misses (`fs.dentry-negative = 1`).
    Drop,
}

/// How a [`Dcache`](crate::Dcache) is sized and behaves.
#[derive(Clone, Debug)]
pub struct Config {
    pub(crate) names: udcache_neghash::Config,
    pub(crate) inodes: udcache_neghash::Config,
    pub(crate) unlink: UnlinkPolicy,
    pub(crate) readdir_pages: NonZeroUsize,
    pub(crate) page_entries: NonZeroUsize,
    pub(crate) timeouts: Timeouts,
    pub(crate) clock: SharedClock,
    pub(crate) fs: Option<SharedFs>,
}

/// The configured filesystem (a newtype only so that `Config` can be `Debug`).
#[derive(Clone)]
pub(crate) struct SharedFs(pub(crate) Arc<dyn Filesystem>);

impl std::fmt::Debug for SharedFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Filesystem")
    }
}

/// The configured clock (a newtype only so that `Config` can be `Debug`).
#[derive(Clone)]
pub(crate) struct SharedClock(pub(crate) Arc<dyn Clock>);

impl std::fmt::Debug for SharedClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Clock({:?})", self.0.now())
    }
}

/// The inode table's configuration: it holds no negatives, so it keeps no ghost slots; it is
/// keyed by inode numbers, which the filesystem assigns, so it hashes them with the folded
/// multiply (a SipHash fewer on every lookup by number: see `udcache_neghash::hashing`).
fn inode_table(config: udcache_neghash::Config) -> udcache_neghash::Config {
    config.with_admission(false).with_key_hash(KeyHash::FoldedMultiply)
}

impl Config {
    /// A cache for about `entries` dentries (and as many inodes), negative cap per bucket 6.
    ///
    /// The name table gets two buckets per entry (the next power of two of `2 × entries`), the
    /// inode table one: a walk step that hits reads on average a quarter of another dentry
    /// before its own instead of half of one — on a tree larger than the CPU's caches, each a
    /// miss on the walk's chain of dependent loads — for 8 more bytes of bucket head per
    /// entry. The negative cap being per bucket, unused negatives are then bounded by 12 per
    /// expected entry (and by the run rule); [`with_buckets`](Self::with_buckets) sets both
    /// tables' bucket counts exactly, [`with_negative_cap`](Self::with_negative_cap) the cap.
    pub fn for_entries(entries: usize) -> Self {
        Config {
            names: udcache_neghash::Config::for_entries(entries.saturating_mul(2)),
            inodes: inode_table(udcache_neghash::Config::for_entries(entries)),
            unlink: UnlinkPolicy::Negative,
            readdir_pages: NonZeroUsize::new(4096).expect("non-zero"),
            page_entries: NonZeroUsize::new(128).expect("non-zero"),
            timeouts: Timeouts::FOREVER,
            clock: SharedClock(Arc::new(CoarseClock)),
            fs: None,
        }
    }

    /// The filesystem the cache asks on a miss, a stale name, an access check it has no
    /// answer for, and a directory listing it lacks: the one backend of every call that asks
    /// ([`Dcache::resolve`](crate::Dcache::resolve), [`Dcache::resolve_path`](crate::Dcache::resolve_path), [`Dcache::access`](crate::Dcache::access),
    /// [`Dcache::readdir`](crate::Dcache::readdir)). A cache without one (the default) is a pure cache: those calls
    /// answer what is cached and [`Error::NoFilesystem`](crate::Error::NoFilesystem) where they would have to ask.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use udcache::{Config, Dcache, Errno, Filesystem, InodeSpec, Resolved, ROOT_INO};
    /// struct Empty;
    /// impl Filesystem for Empty {
    ///     fn lookup(&self, _: u64, _: &[u8]) -> Result<Option<InodeSpec>, Errno> { Ok(None) }
    /// }
    /// let cache = Dcache::new(Config::for_entries(64).with_filesystem(Arc::new(Empty)));
    /// assert_eq!(cache.resolve(ROOT_INO, b"x"), Ok(Resolved::Negative));
    /// ```
    pub fn with_filesystem(mut self, fs: Arc<dyn Filesystem>) -> Self {
        self.fs = Some(SharedFs(fs));
        self
    }

    /// How long dentries and access results are trusted without asking the filesystem
    /// (default [`Timeouts::FOREVER`]).
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// The clock those timeouts and attribute expiries ([`Dcache::setattr`](crate::Dcache::setattr)) run on (default
    /// [`CoarseClock`]; a
    /// [`ManualClock`](crate::ManualClock) for simulated time).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = SharedClock(clock);
        self
    }

    /// Exactly `buckets` buckets (rounded up to a power of two) in the name table, and as
    /// many in the inode table.
    pub fn with_buckets(mut self, buckets: usize) -> Self {
        let cap = self.names.cap();
        self.names = udcache_neghash::Config::with_buckets(buckets).with_negative_cap(cap);
        self.inodes = inode_table(udcache_neghash::Config::with_buckets(buckets));
        self
    }

    /// At most `cap` unused negative dentries per bucket (`None`: no cap, only the run rule).
    pub fn with_negative_cap(mut self, cap: Option<usize>) -> Self {
        self.names = self.names.with_negative_cap(cap);
        self
    }

    /// Directory listings: at most `budget_pages` pages cached over all directories, each
    /// the answer of one filesystem readdir call asked for `page_entries` entries (defaults
    /// 4096 and 128). Zeros are taken as 1.
    pub fn with_readdir(mut self, budget_pages: usize, page_entries: usize) -> Self {
        self.readdir_pages = NonZeroUsize::new(budget_pages).unwrap_or(NonZeroUsize::MIN);
        self.page_entries = NonZeroUsize::new(page_entries).unwrap_or(NonZeroUsize::MIN);
        self
    }

    /// What unlink leaves behind.
    pub fn with_unlink_policy(mut self, policy: UnlinkPolicy) -> Self {
        self.unlink = policy;
        self
    }
}
