//! Statistics: the dentry-state figures into a struct, or as text.

use std::ffi::{c_char, c_int};
use std::fmt::Write;

use crate::args::{self, versioned};
use crate::errors::{CResult, ffi_call};
use crate::handle::{self, udc_cache};

/// A snapshot of a cache's figures. Set `size` before `udc_stats_get`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct udc_stats {
    /// `sizeof(struct udc_stats)`.
    pub size: usize,
    /// Entries in the name table, positive and negative (dentry-state `nr_dentry`).
    pub nr_dentry: u64,
    /// Entries no operation holds (dentry-state `nr_unused`).
    pub nr_unused: u64,
    /// Negative entries (dentry-state `nr_negative`).
    pub nr_negative: u64,
    /// Hash buckets of the name table.
    pub nr_buckets: u64,
    /// Cached inodes.
    pub nr_inodes: u64,
    /// Negative entries evicted by the bounding rules.
    pub negative_evictions: u64,
    /// Lockless walks that met a rename and walked again under the rename lock.
    pub walk_fallbacks: u64,
    /// Calls of the lookup callback.
    pub backend_lookups: u64,
    /// Misses that waited for another thread's callback call of the same name.
    pub coalesced_misses: u64,
    /// `udc_readdir` batches answered from the cache.
    pub readdir_hits: u64,
    /// `udc_readdir` batches that needed the readdir callback.
    pub readdir_misses: u64,
    /// Misses answered "does not exist" by a complete cached listing, without a callback call
    /// or a negative entry.
    pub complete_dir_negatives: u64,
    /// Rename write sections opened (renames, directory unlinks and forgets).
    pub rename_sections: u64,
    /// Inode objects this cache's pool handed out again after their grace period.
    pub inodes_recycled: u64,
    /// Calls of the revalidate callback (or its default), lockless and blocking.
    pub revalidations: u64,
    /// Lockless walks (`udc_walk`, which then answers `UDC_WALK_MISS` there, and `udc_walk_as`
    /// rounds) that stopped for a name whose timeout passed.
    pub fallback_expired: u64,
    /// Lockless walks (`udc_walk`, `udc_walk_as` rounds) that stopped for a negative name whose
    /// directory changed.
    pub fallback_verifier: u64,
    /// Lockless `udc_walk_as` rounds that stopped for a search right not in its directory's
    /// most recent access result.
    pub fallback_access: u64,
    /// Lockless `udc_walk_as` rounds that stopped because the revalidate callback answered
    /// `UDC_REVAL_NEEDS_BLOCK`.
    pub fallback_needs_block: u64,
    /// Access checks answered by the access cache.
    pub access_hits: u64,
    /// Calls of the access callback (or its default): access-cache misses.
    pub access_calls: u64,
    /// Dentries made in a recycled cell of the name table's pool (freed at least a grace
    /// period before) rather than a fresh allocation.
    pub dentries_recycled: u64,
}
versioned!(udc_stats);

impl udc_stats {
    fn of(cache: &udc_cache) -> Self {
        let s = cache.dcache.stats();
        udc_stats {
            size: size_of::<udc_stats>(),
            nr_dentry: s.nr_dentry,
            nr_unused: s.nr_unused,
            nr_negative: s.nr_negative,
            nr_buckets: s.nr_buckets,
            nr_inodes: s.nr_inodes,
            negative_evictions: s.negative_evictions,
            walk_fallbacks: s.walk_fallbacks,
            backend_lookups: s.backend_lookups,
            coalesced_misses: s.coalesced_misses,
            readdir_hits: s.readdir_hits,
            readdir_misses: s.readdir_misses,
            complete_dir_negatives: s.complete_dir_negatives,
            rename_sections: s.rename_sections,
            inodes_recycled: s.inodes_recycled,
            revalidations: s.revalidations,
            fallback_expired: s.fallback_expired,
            fallback_verifier: s.fallback_verifier,
            fallback_access: s.fallback_access,
            fallback_needs_block: s.fallback_needs_block,
            access_hits: s.access_hits,
            access_calls: s.access_calls,
            dentries_recycled: s.dentries_recycled,
        }
    }

    /// The text of `udc_stats_format`.
    fn text(&self) -> String {
        let mut t = format!(
            "{}\t{}\t0\t0\t{}\t{}\n",
            self.nr_dentry, self.nr_unused, self.nr_negative, self.nr_buckets
        );
        let fields = [
            ("nr_dentry", self.nr_dentry),
            ("nr_unused", self.nr_unused),
            ("nr_negative", self.nr_negative),
            ("nr_buckets", self.nr_buckets),
            ("nr_inodes", self.nr_inodes),
            ("negative_evictions", self.negative_evictions),
            ("walk_fallbacks", self.walk_fallbacks),
            ("backend_lookups", self.backend_lookups),
            ("coalesced_misses", self.coalesced_misses),
            ("readdir_hits", self.readdir_hits),
            ("readdir_misses", self.readdir_misses),
            ("complete_dir_negatives", self.complete_dir_negatives),
            ("rename_sections", self.rename_sections),
            ("inodes_recycled", self.inodes_recycled),
            ("revalidations", self.revalidations),
            ("fallback_expired", self.fallback_expired),
            ("fallback_verifier", self.fallback_verifier),
            ("fallback_access", self.fallback_access),
            ("fallback_needs_block", self.fallback_needs_block),
            ("access_hits", self.access_hits),
            ("access_calls", self.access_calls),
            ("dentries_recycled", self.dentries_recycled),
        ];
        for (name, value) in fields {
            let _ = writeln!(t, "{name} {value}");
        }
        t
    }
}

/// Copies the cache's figures into `*out`.
///
/// Returns 0, or `-EINVAL` (NULL `out`, or `out->size` smaller than this library's
/// `sizeof(struct udc_stats)`), `-EBADF`.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `out`
/// must be NULL or point to a writable `udc_stats` whose `size` is set.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_stats_get(cache: *const udc_cache, out: *mut udc_stats) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: no other thread destroys the handle during the call (the caller's contract).
        let cache = unsafe { handle::get(cache) }?;
        // SAFETY: NULL or a writable udc_stats (the caller's contract).
        let out = unsafe { args::output(out) }?;
        out.check_size()?;
        out.write(udc_stats::of(cache));
        Ok(0)
    })
}

/// Writes the figures as text into `buf` (at most `len` bytes, NUL-terminated, truncated if
/// need be). The first line is `/proc/sys/fs/dentry-state`'s six numbers, tab-separated
/// (`nr_dentry nr_unused 0 0 nr_negative nr_buckets`: the sixth field, which Linux leaves 0,
/// is the bucket count); then one `name value` line per `udc_stats` field.
///
/// Returns the length of the whole text without the NUL (as `snprintf`: a value >= `len`
/// means it was truncated; `buf` may be NULL when `len` is 0), or `-EINVAL` (`buf` NULL with
/// `len > 0`; `len` over `PTRDIFF_MAX`), `-EBADF`.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `buf`
/// must be NULL or point to `len` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_stats_format(
    cache: *const udc_cache,
    buf: *mut c_char,
    len: usize,
) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: no other thread destroys the handle during the call (the caller's contract).
        let cache = unsafe { handle::get(cache) }?;
        let text = udc_stats::of(cache).text();
        if len > 0 {
            // SAFETY: `len` writable bytes at `buf` (the caller's contract); NULL is refused.
            let buf = unsafe { args::bytes_out(buf, len) }?;
            let n = text.len().min(len - 1);
            for (dst, &src) in buf.iter_mut().zip(&text.as_bytes()[..n]) {
                dst.write(src);
            }
            buf[n].write(0);
        }
        Ok(c_int::try_from(text.len()).unwrap_or(c_int::MAX))
    })
}
