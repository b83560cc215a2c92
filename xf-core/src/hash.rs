//! A fast hash for keys that xf makes itself: [`TrustedHasher`].

use std::hash::{BuildHasherDefault, Hasher};

/// Builds [`TrustedHasher`]s: `HashMap<K, V, TrustedHash>`.
pub type TrustedHash = BuildHasherDefault<TrustedHasher>;

/// A multiply-and-rotate hash taking eight bytes a step (the scheme of rustc's `FxHasher`),
/// for maps whose keys no client chooses: rate-limit counter names built from the ids xf
/// issued, metric labels from route templates and fixed names. A hash resistant to chosen
/// collisions (std's SipHash) would only cost time on every request: it was a tenth of the
/// rate-limit check, and most of recording a request's metrics.
#[derive(Debug, Default, Clone, Copy)]
pub struct TrustedHasher(u64);

impl TrustedHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

fn le_u32(bytes: &[u8]) -> u32 {
    u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

fn le_u16(bytes: &[u8]) -> u16 {
    u16::from_le_bytes([bytes[0], bytes[1]])
}

impl Hasher for TrustedHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for chunk in &mut words {
            let mut word = [0; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        // The last one to seven bytes in one word, read as two overlapping halves (no copy
        // through a buffer): its first and last four bytes, two, or the byte.
        let rest = words.remainder();
        let word = match rest.len() {
            0 => return,
            4.. => (u64::from(le_u32(rest)) << 32) | u64::from(le_u32(&rest[rest.len() - 4..])),
            2.. => (u64::from(le_u16(rest)) << 16) | u64::from(le_u16(&rest[rest.len() - 2..])),
            _ => u64::from(rest[0]),
        };
        // Then the length, which tells apart tails whose halves overlap alike (the word has
        // no bit to spare for it).
        self.add(word);
        self.add(rest.len() as u64);
    }

    fn write_u8(&mut self, byte: u8) {
        self.add(u64::from(byte));
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        // The last multiply leaves its entropy in the high bits; the map places keys by the
        // low ones.
        self.0.rotate_left(26)
    }
}

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasher, Hash};

    use super::*;

    fn hash(value: impl Hash) -> u64 {
        TrustedHash::default().hash_one(value)
    }

    #[test]
    fn short_tails_hash_apart() {
        // Every string of one to seven bytes of two letters, and the same after a full word:
        // the tail's overlapping halves and its length keep them all apart.
        let mut strings = Vec::new();
        for len in 1..=7u32 {
            for bits in 0..(1u32 << len) {
                let tail: String = (0..len)
                    .map(|i| if bits >> i & 1 == 1 { 'b' } else { 'a' })
                    .collect();
                strings.push(format!("key:key_{tail}"));
                strings.push(tail);
            }
        }
        let hashes: std::collections::HashSet<u64> = strings.iter().map(hash).collect();
        assert_eq!(hashes.len(), strings.len());
    }

    #[test]
    fn equal_keys_hash_equal_and_near_keys_apart() {
        assert_eq!(hash("key:key_1:read"), hash("key:key_1:read"));
        let names = [
            "key:key_1:read",
            "key:key_1:write",
            "key:key_2:read",
            "org:o:write",
        ];
        let hashes: std::collections::BTreeSet<u64> = names.iter().map(hash).collect();
        assert_eq!(hashes.len(), names.len());
        assert_ne!(hash(("api", "GET")), hash(("api", "PUT")));
        // A template and a longer one apart. (Keys that differ only by trailing NUL bytes
        // collide, as the last word is padded with zeros: the map's equality tells them
        // apart, and xf makes no such keys.)
        assert_ne!(hash("/jobs"), hash("/jobs/{jobId}"));
        assert_ne!(hash("/jobs/{jobId}"), hash("/jobs/{jobId}/cancel"));
    }
}
