//! API keys: generation, hashing, and the shape a key must have.
//!
//! A key is its mode's prefix and 40 random base62 characters (about 238 bits). Only its
//! SHA-256 hash is stored; lookup is by hash, and the stored hash is compared again in
//! constant time so that no comparison leaks how much of a guess matched.

use rand::distributions::{Alphanumeric, DistString};
use rand::rngs::OsRng;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::model::KeyMode;

/// Random characters after the prefix of generated keys.
const KEY_BODY_LEN: usize = 40;
/// The fewest letters or digits after the prefix a host-chosen key may have.
pub const MIN_KEY_BODY_LEN: usize = 32;

/// A new random key of `mode`.
pub fn generate_key(mode: KeyMode) -> String {
    let body = Alphanumeric.sample_string(&mut OsRng, KEY_BODY_LEN);
    format!("{}{body}", mode.key_prefix())
}

/// Characters of a key kept in clear, to tell keys apart: the mode's prefix and four of the
/// random body (about 24 bits, too few to help a guess).
pub const SHOWN_PREFIX_LEN: usize = 12;

/// The first [`SHOWN_PREFIX_LEN`] characters of a key, as stored and shown.
pub fn shown_prefix(key: &str) -> String {
    key.chars().take(SHOWN_PREFIX_LEN).collect()
}

/// The lower-case hex SHA-256 of a key, as stored.
pub fn hash_key(key: &str) -> String {
    hex::encode(digest_key(key))
}

/// The SHA-256 digest of a key, of which [`hash_key`] is the hex.
pub fn digest_key(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// Whether two stored hashes are equal, in time independent of where they differ.
pub fn hashes_match(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

/// The mode a key's prefix claims, if it has one.
pub fn mode_of(key: &str) -> Option<KeyMode> {
    [KeyMode::Live, KeyMode::Test]
        .into_iter()
        .find(|mode| key.starts_with(mode.key_prefix()))
}

/// Whether `key` is acceptable as a host-chosen key of `mode` (the demo keys): the prefix and
/// at least 32 ASCII letters or digits, nothing else.
pub fn is_well_formed(key: &str, mode: KeyMode) -> bool {
    key.strip_prefix(mode.key_prefix()).is_some_and(|body| {
        body.len() >= MIN_KEY_BODY_LEN && body.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_are_well_formed_and_distinct() {
        let a = generate_key(KeyMode::Live);
        let b = generate_key(KeyMode::Live);
        assert!(is_well_formed(&a, KeyMode::Live));
        assert!(!is_well_formed(&a, KeyMode::Test));
        assert_ne!(a, b);
        assert_eq!(mode_of(&generate_key(KeyMode::Test)), Some(KeyMode::Test));
    }

    #[test]
    fn host_keys_need_32_alphanumerics() {
        assert!(is_well_formed(
            &format!("xf_live_{}", "a".repeat(32)),
            KeyMode::Live
        ));
        assert!(!is_well_formed(
            &format!("xf_live_{}", "a".repeat(31)),
            KeyMode::Live
        ));
        assert!(!is_well_formed(
            &format!("xf_live_{}-", "a".repeat(32)),
            KeyMode::Live
        ));
    }

    #[test]
    fn hashes_compare() {
        let h = hash_key("xf_live_x");
        assert_eq!(h.len(), 64);
        assert!(hashes_match(&h, &hash_key("xf_live_x")));
        assert!(!hashes_match(&h, &hash_key("xf_live_y")));
    }
}
