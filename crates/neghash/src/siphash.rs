//! SipHash (Aumasson and Bernstein, 2012) over a byte string, read a word at a time.
//!
//! std's SipHash-1-3 (`RandomState`'s hasher) is the same function, but its `Hasher::write`
//! assembles a message's last partial word byte by byte. Here the message is one slice known
//! in full, so its last partial word is read with at most two loads from the slice's ends
//! (overlapping when they meet): fewer steps than std's for a short name (figures in
//! `BENCHMARKS.md`).
//!
//! The rounds and constants are the paper's; `C` compression and `D` finalisation rounds
//! (1 and 3 for the table, as in std).

/// SipHash-`C`-`D` of `message` under the 128-bit key `(k0, k1)`.
///
/// Always inlined: called, the key and the state go through the stack, and the call stands
/// between a walk's steps where the hash should overlap the previous step's wait on memory
/// (inlined together with [`HListBl::find_tagged`](udcache_rculist::HListBl::find_tagged):
/// see `BENCHMARKS.md` for what that is worth).
#[inline(always)]
pub(crate) fn siphash<const C: usize, const D: usize>([k0, k1]: [u64; 2], message: &[u8]) -> u64 {
    let mut v = State([
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ]);
    let mut words = message.chunks_exact(8);
    for word in &mut words {
        v.absorb::<C>(u64::from_le_bytes(word.try_into().expect("8 bytes")));
    }
    // The last word: the bytes past the whole words, and the length's low byte on top.
    v.absorb::<C>(tail(message) | (message.len() as u64) << 56);
    v.0[2] ^= 0xff;
    v.rounds::<D>();
    v.0.iter().fold(0, |h, w| h ^ w)
}

/// The four words of SipHash's state.
struct State([u64; 4]);

impl State {
    /// Takes in one 8-byte word of the message.
    #[inline(always)]
    fn absorb<const C: usize>(&mut self, m: u64) {
        self.0[3] ^= m;
        self.rounds::<C>();
        self.0[0] ^= m;
    }

    #[inline(always)]
    fn rounds<const N: usize>(&mut self) {
        let [v0, v1, v2, v3] = &mut self.0;
        for _ in 0..N {
            *v0 = v0.wrapping_add(*v1);
            *v1 = v1.rotate_left(13) ^ *v0;
            *v0 = v0.rotate_left(32);
            *v2 = v2.wrapping_add(*v3);
            *v3 = v3.rotate_left(16) ^ *v2;
            *v0 = v0.wrapping_add(*v3);
            *v3 = v3.rotate_left(21) ^ *v0;
            *v2 = v2.wrapping_add(*v1);
            *v1 = v1.rotate_left(17) ^ *v2;
            *v2 = v2.rotate_left(32);
        }
    }
}

/// The `len % 8` bytes after `message`'s whole words, little-endian in the low bytes of a
/// word: one load of the slice's last 8 bytes shifted down, or for a message shorter than a
/// word, two loads of 4 or 2 bytes from its two ends (overlapping when they meet).
#[inline(always)]
fn tail(message: &[u8]) -> u64 {
    let len = message.len();
    let rest = len % 8;
    let le = |at: usize, n: usize| {
        let mut word = [0u8; 8];
        word[..n].copy_from_slice(&message[at..at + n]);
        u64::from_le_bytes(word)
    };
    match rest {
        0 => 0,
        _ if len >= 8 => le(len - 8, 8) >> (8 * (8 - rest)),
        4.. => le(0, 4) | le(rest - 4, 4) << (8 * (rest - 4)),
        2.. => le(0, 2) | le(rest - 2, 2) << (8 * (rest - 2)),
        _ => le(0, 1),
    }
}

#[cfg(test)]
mod tests {
    use std::hash::Hasher;

    use super::*;

    /// Messages of every length up to 70 bytes (the tail takes each of its paths at several
    /// offsets), bytes that differ from position to position.
    fn messages() -> impl Iterator<Item = Vec<u8>> {
        (0..=70u8).map(|len| (0..len).map(|i| i.wrapping_mul(37) ^ 0xa5).collect())
    }

    #[test]
    fn keyed_2_4_is_std_siphasher() {
        // std's `SipHasher` is SipHash-2-4 with a key, stable (deprecated for `HashMap`
        // use, not removed): the key schedule and every tail path against it.
        for keys in [[0, 0], [0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908], [u64::MAX, 1]] {
            for m in messages() {
                #[allow(deprecated)]
                let mut std = std::hash::SipHasher::new_with_keys(keys[0], keys[1]);
                std.write(&m);
                assert_eq!(siphash::<2, 4>(keys, &m), std.finish(), "{keys:?} {}", m.len());
            }
        }
    }

    #[test]
    fn paper_vector() {
        // The SipHash paper's worked example: key 00..0f, message 00..0e (15 bytes).
        let keys = [0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908];
        let m: Vec<u8> = (0..15).collect();
        assert_eq!(siphash::<2, 4>(keys, &m), 0xa129_ca61_49be_45e5);
    }

    #[test]
    fn unkeyed_1_3_is_std_default_hasher() {
        // `DefaultHasher::new()` is SipHash-1-3 under the zero key: the table's round counts.
        for m in messages() {
            let mut std = std::hash::DefaultHasher::new();
            std.write(&m);
            assert_eq!(siphash::<1, 3>([0, 0], &m), std.finish(), "{}", m.len());
        }
    }
}
