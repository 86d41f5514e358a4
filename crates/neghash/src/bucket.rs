//! [`BucketLock`]: the proof that the caller holds one bucket's lock (see `table.rs`, Rules).

use udcache_rculist::HListWriter;

use crate::links::ChainAdapter;

/// Proof that the caller holds one bucket's lock, with the chain writer it grants.
pub(crate) struct BucketLock<'t, V: Send + Sync + 'static> {
    pub(crate) chain: HListWriter<'t, ChainAdapter<V>>,
    index: usize,
}

impl<'t, V: Send + Sync + 'static> BucketLock<'t, V> {
    /// The lock of bucket `index`, held through `chain`, the writer of that bucket's chain.
    pub(crate) fn new(chain: HListWriter<'t, ChainAdapter<V>>, index: usize) -> Self {
        BucketLock { chain, index }
    }

    /// The bucket's index.
    pub(crate) fn index(&self) -> usize {
        self.index
    }
}
