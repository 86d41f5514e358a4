//! [`Config`]: how a table is sized and how hard it bounds negative entries.

use crate::hashing::KeyHash;

/// How a [`NegHash`](crate::NegHash) is sized and how hard it bounds negative entries.
#[derive(Clone, Debug)]
pub struct Config {
    pub(crate) buckets: usize,
    pub(crate) rule1: bool,
    pub(crate) admission: bool,
    pub(crate) negative_cap: Option<usize>,
    pub(crate) negative_share: Option<f64>,
    pub(crate) key_hash: KeyHash,
}

impl Config {
    /// A table for about `entries` entries: a power of two with at most one entry per bucket
    /// on average (at least 16 buckets). Both rules on, a cap of 6 negatives per bucket.
    ///
    /// One entry per bucket rather than more: a lookup hit visits on average half the other
    /// entries of its chain before its own, and each is a cache miss in a table larger than the
    /// cache (8 bytes of bucket head per entry buy that visit back).
    pub fn for_entries(entries: usize) -> Self {
        Config::with_buckets(entries.max(16))
    }

    /// A table with exactly `buckets` buckets (rounded up to a power of two; past the largest
    /// power of two, that one, which no machine can allocate: see [`NegHash::try_new`](crate::NegHash::try_new)).
    pub fn with_buckets(buckets: usize) -> Self {
        let largest = 1 << (usize::BITS - 1);
        Config {
            buckets: buckets.max(1).checked_next_power_of_two().unwrap_or(largest),
            rule1: true,
            admission: true,
            negative_cap: Some(6),
            negative_share: None,
            key_hash: KeyHash::SipHash13,
        }
    }

    /// Rule 1, the run rule proposed for Linux's dentry cache: when a
    /// negative entry becomes unused, it and the two unreferenced, settled negatives that
    /// follow it in its chain are kept, and the third that follows is evicted: at most three
    /// in a row. On by default.
    pub fn with_rule1(mut self, on: bool) -> Self {
        self.rule1 = on;
        self
    }

    /// Scan resistance (see [`crate::trim`]): admission — a first-time negative that
    /// would lengthen a full run is evicted itself rather than an older entry — and ghosts — a
    /// negative re-created soon after its eviction is protected as a refault. On by default;
    /// off gives the run rule exactly as proposed for Linux.
    pub fn with_admission(mut self, on: bool) -> Self {
        self.admission = on;
        self
    }

    /// Whether admission is on.
    pub fn admission(&self) -> bool {
        self.admission
    }

    /// Rule 2: at most `cap` negative entries per bucket, whatever their referenced bits (the
    /// victim is chosen by second chance among the bucket's settled negatives). `None` turns it
    /// off. Default `Some(6)`. A cap of 0 counts as 1: the negative a lookup just remembered
    /// is kept until the bucket's next one evicts it.
    pub fn with_negative_cap(mut self, cap: Option<usize>) -> Self {
        self.negative_cap = cap.map(|c| c.max(1));
        self
    }

    /// A global cap: negatives may make up at most this share of all entries; beyond it, each
    /// negative release evicts an unused negative: the oldest on one of the LRU's shards
    /// (shards go by bucket, and evictions take them in turn, so the order is only roughly
    /// the oldest first). Default off.
    ///
    /// # Panics
    ///
    /// If the share is not a number from 0 to 1.
    ///
    /// ```should_panic
    /// use udcache_neghash::Config;
    /// let _ = Config::for_entries(16).with_negative_share(Some(f64::NAN));
    /// ```
    pub fn with_negative_share(mut self, share: Option<f64>) -> Self {
        if let Some(share) = share {
            assert!((0.0..=1.0).contains(&share), "udcache_neghash: a negative share of {share}");
        }
        self.negative_share = share;
        self
    }

    /// The hash function (see [`KeyHash`]). Default [`KeyHash::SipHash13`]: choose
    /// [`KeyHash::FoldedMultiply`] only for keys no adversary chooses.
    pub fn with_key_hash(mut self, kind: KeyHash) -> Self {
        self.key_hash = kind;
        self
    }

    /// The hash function.
    pub fn key_hash(&self) -> KeyHash {
        self.key_hash
    }

    /// Buckets.
    pub fn buckets(&self) -> usize {
        self.buckets
    }

    /// The per-bucket cap of rule 2, if on.
    pub fn cap(&self) -> Option<usize> {
        self.negative_cap
    }

    /// Whether rule 1 is on.
    pub fn rule1(&self) -> bool {
        self.rule1
    }
}
