//! Entry names: stored inline up to [`INLINE_NAME`] bytes, out of line beyond.
//!
//! The length is not stored here: it lives in the entry's key word (hash and length in one
//! word, compared before any byte), which also says which half of the union is in use.

use std::mem::ManuallyDrop;

/// Names up to this many bytes live inside the entry; longer ones get a heap allocation.
pub const INLINE_NAME: usize = 32;

/// The bytes of a name; which field is live is decided by the length kept beside it.
pub(crate) union NameBuf {
    inline: [u8; INLINE_NAME],
    heap: ManuallyDrop<Box<[u8]>>,
}

impl NameBuf {
    pub(crate) fn new(name: &[u8]) -> Self {
        if name.len() <= INLINE_NAME {
            let mut inline = [0u8; INLINE_NAME];
            inline[..name.len()].copy_from_slice(name);
            NameBuf { inline }
        } else {
            NameBuf { heap: ManuallyDrop::new(name.into()) }
        }
    }

    /// The name's bytes.
    ///
    /// # Safety
    ///
    /// `len` is the length this buffer was made with.
    #[inline]
    pub(crate) unsafe fn get(&self, len: usize) -> &[u8] {
        if len <= INLINE_NAME {
            // SAFETY: made by `new` with this length: the inline half is live.
            unsafe { &self.inline[..len] }
        } else {
            // SAFETY: made by `new` with this length: the heap half is live.
            unsafe { &self.heap[..] }
        }
    }

    /// Frees an out-of-line name.
    ///
    /// # Safety
    ///
    /// `len` is the length this buffer was made with; called once, from the owner's drop.
    pub(crate) unsafe fn drop_with(&mut self, len: usize) {
        if len > INLINE_NAME {
            // SAFETY: the heap half is live (len > INLINE_NAME) and dropped only here.
            unsafe { ManuallyDrop::drop(&mut self.heap) };
        }
    }
}

/// `a == b`, for names up to [`INLINE_NAME`] bytes read as two overlapping words from each
/// end (4, 8 or 16 bytes wide) rather than by a call to `memcmp`: a lookup compares one name
/// per hit, and for a dozen bytes the call costs more than the compare.
#[inline(always)]
pub(crate) fn same_name(a: &[u8], b: &[u8]) -> bool {
    fn ends<const N: usize>(s: &[u8]) -> Option<(&[u8; N], &[u8; N])> {
        Some((s.first_chunk()?, s.last_chunk()?))
    }
    if a.len() != b.len() {
        return false;
    }
    match a.len() {
        16..=INLINE_NAME => ends::<16>(a) == ends::<16>(b),
        8..16 => ends::<8>(a) == ends::<8>(b),
        4..8 => ends::<4>(a) == ends::<4>(b),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_name_sees_every_differing_byte() {
        for len in 0..=INLINE_NAME + 8 {
            let a: Vec<u8> = (0..len).map(|i| i as u8).collect();
            assert!(same_name(&a, &a.clone()));
            for at in 0..len {
                let mut b = a.clone();
                b[at] ^= 0x40;
                assert!(!same_name(&a, &b), "len {len}, byte {at}");
            }
            assert!(!same_name(&a, &[a.as_slice(), b"x"].concat()));
        }
    }

    #[test]
    fn inline_and_heap_round_trip() {
        for len in [0usize, 1, 31, 32, 33, 255, 4096] {
            let name: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let mut buf = NameBuf::new(&name);
            // SAFETY: same length as made with; dropped once.
            unsafe {
                assert_eq!(buf.get(len), &name[..]);
                buf.drop_with(len);
            }
        }
    }
}
