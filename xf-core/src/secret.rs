//! Keys derived from the host's one secret, so each purpose (cursors, test-mode ids) has its own.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// A 32-byte key for `purpose`, derived from `secret` with HMAC-SHA256.
pub fn derive_key(secret: &[u8], purpose: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(purpose);
    mac.finalize().into_bytes().into()
}

/// HMAC-SHA256 of `parts` (each length-prefixed, so no two part lists collide) under `key`.
pub fn keyed_digest(key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    for part in parts {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}
