//! [`Config`]: how large a [`ReaddirCache`](crate::ReaddirCache) is and how much each backend
//! call asks for.

/// How a [`ReaddirCache`](crate::ReaddirCache) is sized; built with the `with_*` methods from
/// [`Config::default`].
///
/// ```
/// use udcache_readdir::{Config, ReaddirCache};
/// let config = Config::default().with_budget_pages(1024).with_page_entries(64);
/// assert_eq!((config.budget_pages(), config.page_entries()), (1024, 64));
/// let cache = ReaddirCache::with_config(config);
/// assert_eq!(cache.stats().budget_pages, 1024);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    budget_pages: usize,
    page_entries: usize,
}

impl Default for Config {
    /// 4096 pages of 128 entries.
    fn default() -> Self {
        Config { budget_pages: 4096, page_entries: 128 }
    }
}

impl Config {
    /// At most `pages` cached pages over all the cache's directories (at least 1; default
    /// 4096). Past it, the least recently used page is evicted.
    pub fn with_budget_pages(mut self, pages: usize) -> Self {
        self.budget_pages = pages.max(1);
        self
    }

    /// How many entries each backend call asks for (at least 1; default 128). Each call's
    /// answer becomes one page.
    pub fn with_page_entries(mut self, entries: usize) -> Self {
        self.page_entries = entries.max(1);
        self
    }

    /// The page budget.
    pub fn budget_pages(&self) -> usize {
        self.budget_pages
    }

    /// Entries asked for per backend call.
    pub fn page_entries(&self) -> usize {
        self.page_entries
    }
}
