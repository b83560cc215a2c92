//! Opaque, prefixed, time-ordered identifiers (`prop_0193…`).

use uuid::Uuid;

/// Organization ids.
pub const ORGANIZATION: &str = "org";
/// Property ids.
pub const PROPERTY: &str = "prop";
/// Job ids.
pub const JOB: &str = "job";
/// Issue ids.
pub const ISSUE: &str = "iss";
/// API key ids.
pub const API_KEY: &str = "key";

/// A new id: the type prefix and a UUIDv7 body in lower-case hex, so ids sort by creation time.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", Uuid::now_v7().simple())
}

/// An id with the given prefix whose body is the first 16 bytes of `digest`.
///
/// Test-mode responses use it: the same request always yields the same id.
pub fn derived_id(prefix: &str, digest: &[u8]) -> String {
    let mut bytes = [0u8; 16];
    let len = digest.len().min(16);
    bytes[..len].copy_from_slice(&digest[..len]);
    format!("{prefix}_{}", Uuid::from_bytes(bytes).simple())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_prefixed_and_ordered() {
        let first = new_id(PROPERTY);
        let second = new_id(PROPERTY);
        assert!(first.starts_with("prop_"));
        assert_eq!(first.len(), "prop_".len() + 32);
        assert!(first < second);
    }
}
