//! The head word of a hash chain: the first link, the [`HListBl`](crate::HListBl) lock bit,
//! the chain's tag bits and its length while it is short.
//!
//! # Layout
//!
//! ```text
//!  63        52 51    48 47                                   3  2   1     0
//! +------------+--------+--------------------------------------+---+------+------+
//! |    tags    | length |       address of the first link      | 0 | WIDE | LOCK |
//! +------------+--------+--------------------------------------+---+------+------+
//! ```
//!
//! - Links are word-aligned, so an address leaves bits 0..2 free: bit 0 is the lock, bit 1
//!   says the word is **wide**.
//! - User-space addresses on x86-64 and AArch64 fit in 48 bits unless a program maps memory
//!   above that on purpose. A link that needs the high bits makes the word wide: the
//!   address takes all of bits 3..63, and there are neither tags nor length from then on
//!   (a later narrow address could not know them). Readers treat the tags of a wide word as
//!   all ones ("anything may be on this chain") and its length as unknown. 32-bit targets
//!   have no room for either, so every word there is wide.
//!
//! # The length
//!
//! The number of members, kept by every writer operation that links or unlinks one, up to
//! [`SHORT`]` - 1`; [`SHORT`] means "that many or more", and a removal from such a chain
//! counts the members again (the writer holds the lock, and a long chain is the rare case).
//! It lets a writer skip walks that only matter for long chains
//! ([`HListWriter::short_len`](crate::HListWriter::short_len)).
//!
//! # Tag bits
//!
//! [`TAG_BITS`] bits that the chain's user gives meaning to: a filter over the members, kept
//! by writers under the chain's lock. The user gives each node a set of tags (typically one
//! bit picked by a few bits of the node's key hash, so that a key's bit is known before any
//! member is read). The rules:
//!
//! - A writer calls [`HListWriter::add_tags`](crate::HListWriter::add_tags) with a node's
//!   tags *before* inserting it.
//! - After removals it may call [`HListWriter::set_tags`](crate::HListWriter::set_tags) with
//!   the union of the tags of the members left (or leave the bits: stale bits only cost a
//!   walk). Clearing a bit that a member still carries hides that member from tagged finds.
//! - A reader asking [`find_tagged`](crate::HListBl::find_tagged) for nodes carrying one of
//!   `bits` gets `None` without touching a member if the head has none of them. Bits above
//!   [`TAG_BITS`] are never kept, so a filter that names one cannot rule a chain out.
//! - Plain walks ([`iter`](crate::HListBl::iter), [`find`](crate::HListBl::find)) ignore the
//!   tags.
//!
//! With one bit per node out of 12, a chain of three members leaves at least 9 bits clear:
//! most lookups of an absent key end at the head load.
//!
//! # Ordering
//!
//! Every head store is a Release store of the whole word and every reader's head load an
//! Acquire load (see [`hlist`](crate::hlist)). Tags added before an insert are in the word
//! that publishes the node, and in every later word until a writer clears them; so a reader
//! whose load returns a word linking the node also sees its tags, and a reader that sees
//! them clear read a word older than the node: its miss is ordered before the insert.
//! Tags recomputed after a removal are stored after the unlinking store, so a reader that
//! sees the bit gone sees the node gone too. The length is read by writers only.

use crate::HLink;
use crate::lock::BIT_LOCK;

/// How many tag bits a head word has: [`HListWriter::add_tags`] and
/// [`HListWriter::set_tags`] keep the low `TAG_BITS` of their argument.
///
/// [`HListWriter::add_tags`]: crate::HListWriter::add_tags
/// [`HListWriter::set_tags`]: crate::HListWriter::set_tags
pub const TAG_BITS: u32 = 12;
/// The length field saturates here: a chain of `SHORT` or more members.
pub const SHORT: usize = 15;

/// Bit 1: the address uses the high bits; the word has no tags and no length.
const WIDE: usize = 2;
/// The bits that are neither address, length nor tags.
const FLAGS: usize = BIT_LOCK | WIDE;
/// Where the length starts; the tags follow it.
const LENGTH_SHIFT: u32 = 48;
const TAG_SHIFT: u32 = LENGTH_SHIFT + 4;
/// Every tag bit: the tags of a wide word, and the mask of a narrow one.
pub(crate) const ALL: u16 = (1 << TAG_BITS) - 1;

/// A head word taken apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Parts {
    /// The first link (null: empty).
    pub(crate) first: *const HLink,
    /// The tag bits: all ones when the word is wide.
    pub(crate) tags: u16,
    /// The length, `None` when the word is wide.
    pub(crate) len: Option<usize>,
}

/// Whether `address` fits under the length and the tags.
fn narrow(address: usize) -> bool {
    usize::BITS == 64 && (address as u64) >> LENGTH_SHIFT == 0
}

/// The head word holding `parts` and `lock` (0 or the lock bit); wide, losing the tags
/// and the length, if the address needs the high bits.
pub(crate) fn compose(parts: Parts, lock: usize) -> usize {
    let address = parts.first.expose_provenance();
    debug_assert_eq!(address & FLAGS, 0, "links are word-aligned");
    match parts.len {
        Some(len) if narrow(address) => {
            let high = (u64::from(parts.tags & ALL) << TAG_SHIFT)
                | ((len.min(SHORT) as u64) << LENGTH_SHIFT);
            address | high as usize | lock
        }
        _ => address | WIDE | lock,
    }
}

/// Takes a head word apart.
pub(crate) fn parts_of(word: usize) -> Parts {
    if word & WIDE != 0 {
        let first = std::ptr::with_exposed_provenance(word & !FLAGS);
        return Parts { first, tags: ALL, len: None };
    }
    let word = word as u64;
    let address = (word & ((1 << LENGTH_SHIFT) - 1)) as usize & !FLAGS;
    Parts {
        first: std::ptr::with_exposed_provenance(address),
        tags: (word >> TAG_SHIFT) as u16,
        len: Some((word >> LENGTH_SHIFT) as usize & SHORT),
    }
}

/// The first link of a head word.
pub(crate) fn first_of(word: usize) -> *const HLink {
    parts_of(word).first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_words_round_trip_their_parts() {
        let link = Box::new(HLink::new());
        let first: *const HLink = &*link;
        assert!(narrow(first.addr()), "a heap address below 2^48");
        for (tags, len, lock) in [(0, 0, 0), (0x801, 3, BIT_LOCK), (ALL, SHORT, 0)] {
            let parts = Parts { first, tags, len: Some(len) };
            let word = compose(parts, lock);
            assert_eq!((parts_of(word), word & BIT_LOCK), (parts, lock));
        }
        // Bits past the tags' width and lengths past SHORT are clipped.
        let clipped = parts_of(compose(Parts { first, tags: 0xf001, len: Some(40) }, 0));
        assert_eq!((clipped.tags, clipped.len), (0x001, Some(SHORT)));
        let empty = Parts { first: std::ptr::null(), tags: 7, len: Some(0) };
        assert_eq!(parts_of(compose(empty, BIT_LOCK)), empty);
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_high_address_makes_the_word_wide() {
        let high: *const HLink = std::ptr::without_provenance(0x00ff_0000_0000_1000);
        let word = compose(Parts { first: high, tags: 0x0004, len: Some(2) }, BIT_LOCK);
        let wide = Parts { first: high, tags: ALL, len: None };
        assert_eq!(parts_of(word), wide, "no room: anything may be there, length unknown");
        assert_eq!(word & BIT_LOCK, BIT_LOCK);
    }
}
