//! The head word of a hash chain: the first link, the [`HListBl`](crate::HListBl) lock bit, and
//! a 16-bit summary of the chain's members.
//!
//! # Layout
//!
//! ```text
//!  63          48 47                                   3  2   1     0
//! +--------------+--------------------------------------+---+------+------+
//! |   summary    |       address of the first link      | 0 | WIDE | LOCK |
//! +--------------+--------------------------------------+---+------+------+
//! ```
//!
//! - Links are word-aligned, so an address leaves bits 0..2 free: bit 0 is the lock, bit 1
//!   says the word is **wide**.
//! - User-space addresses on x86-64 and AArch64 fit in 48 bits unless a program maps memory
//!   above that on purpose. A link that needs the high bits makes the word wide: the
//!   address takes all of bits 3..63 and there is no summary. Readers then treat the summary
//!   as all ones: "anything may be on this chain". 32-bit targets have no room for it at
//!   all, so every word there is wide.
//!
//! # What the summary means
//!
//! The summary is the chain user's filter, kept by writers under the chain's lock:
//! [`HListWriter::add_summary`](crate::HListWriter::add_summary) before inserting a node, and
//! [`HListWriter::set_summary`](crate::HListWriter::set_summary) to recompute it after
//! removals. A reader asking [`find_summarised`](crate::HListBl::find_summarised) for a node
//! whose bits are clear in the summary gets `None` without touching a member. Plain walks
//! ([`iter`](crate::HListBl::iter), [`find`](crate::HListBl::find)) ignore it.
//!
//! # Ordering
//!
//! Every head store is a Release store of the whole word and every reader's head load an
//! Acquire load (see [`hlist`](crate::hlist)). Bits added before an insert are in the word
//! that publishes the node, and in every later word until a writer clears them; so a reader
//! whose load returns a word linking the node also sees its bits, and a reader that sees
//! them clear read a word older than the node: its miss is ordered before the insert.
//! A summary recomputed after a removal is stored after the unlinking store, so a reader
//! that sees the bit gone sees the node gone too.

use crate::HLink;
use crate::lock::BIT_LOCK;

/// Bit 1: the address uses the high bits; the word has no summary.
const WIDE: usize = 2;
/// Where the summary starts.
const SUMMARY_SHIFT: u32 = 48;
/// The bits that are neither address nor summary.
const FLAGS: usize = BIT_LOCK | WIDE;

/// Whether `address` fits under the summary.
fn narrow(address: usize) -> bool {
    usize::BITS == 64 && (address as u64) >> SUMMARY_SHIFT == 0
}

/// The head word linking `first`, with `summary` (dropped if the word must be wide) and
/// `lock` (0 or the lock bit).
pub(crate) fn compose(first: *const HLink, summary: u16, lock: usize) -> usize {
    let address = first.expose_provenance();
    debug_assert_eq!(address & FLAGS, 0, "links are word-aligned");
    if narrow(address) {
        address | ((u64::from(summary) << SUMMARY_SHIFT) as usize) | lock
    } else {
        address | WIDE | lock
    }
}

/// The first link of a head word.
pub(crate) fn first_of(word: usize) -> *const HLink {
    let address = if word & WIDE != 0 {
        word & !FLAGS
    } else {
        ((word as u64) & ((1 << SUMMARY_SHIFT) - 1)) as usize & !FLAGS
    };
    std::ptr::with_exposed_provenance(address)
}

/// The summary of a head word: all ones when it is wide.
pub(crate) fn summary_of(word: usize) -> u16 {
    if word & WIDE != 0 { u16::MAX } else { ((word as u64) >> SUMMARY_SHIFT) as u16 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_words_round_trip_their_parts() {
        let link = Box::new(HLink::new());
        let p: *const HLink = &*link;
        for (summary, lock) in [(0, 0), (0x8001, BIT_LOCK), (u16::MAX, 0)] {
            let word = compose(p, summary, lock);
            assert_eq!(first_of(word), p);
            assert_eq!(word & BIT_LOCK, lock);
            if narrow(p.addr()) {
                assert_eq!(summary_of(word), summary);
            }
        }
        assert!(first_of(compose(std::ptr::null(), 7, BIT_LOCK)).is_null());
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_high_address_makes_the_word_wide() {
        let high: *const HLink = std::ptr::without_provenance(0x00ff_0000_0000_1000);
        let word = compose(high, 0x0004, BIT_LOCK);
        assert_eq!(first_of(word), high);
        assert_eq!(summary_of(word), u16::MAX, "no room for a summary: anything may be there");
        assert_eq!(word & BIT_LOCK, BIT_LOCK);
    }
}
