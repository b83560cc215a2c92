//! Keys derived from the host's one secret, so each purpose (cursors, test-mode ids, sealed
//! secrets) has its own, and the [`Sealer`] of secrets kept at rest.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

/// A 32-byte key for `purpose`, derived from `secret` with HMAC-SHA256.
pub fn derive_key(secret: &[u8], purpose: &[u8]) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(purpose);
    mac.finalize().into_bytes().into()
}

/// HMAC-SHA256 of `parts` (each length-prefixed, so no two part lists collide) under `key`.
pub fn keyed_digest(key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    for part in parts {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// Seals small secrets at rest (webhook signing secrets, Google refresh tokens) with
/// XChaCha20-Poly1305 under a key derived from the host's secret for one purpose. The
/// associated data binds a sealed value to its owner (a webhook's or organization's id), so a
/// value copied to another row does not open.
#[derive(Clone)]
pub struct Sealer {
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(<key redacted>)")
    }
}

/// A sealed value that does not open: the host's secret changed, or the row was altered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a sealed secret cannot be opened with this host's secret key")]
pub struct SealError;

/// The tag of sealed values, so a later scheme can be told apart.
const SEALED_TAG: &str = "v1.";
const NONCE_LEN: usize = 24;

impl Sealer {
    /// The sealer of `purpose` under the host's secret.
    pub fn new(host_secret: &[u8], purpose: &[u8]) -> Self {
        let key = derive_key(host_secret, purpose);
        Sealer {
            cipher: XChaCha20Poly1305::new(&key.into()),
        }
    }

    /// `plain` sealed for `owner`: `v1.` and the base64 of a random nonce and the ciphertext.
    pub fn seal(&self, owner: &str, plain: &str) -> String {
        let sealed = self.seal_bytes(owner.as_bytes(), plain.as_bytes());
        format!("{SEALED_TAG}{}", STANDARD.encode(sealed))
    }

    /// The text `sealed` holds for `owner`.
    pub fn open(&self, owner: &str, sealed: &str) -> Result<String, SealError> {
        let bytes = sealed
            .strip_prefix(SEALED_TAG)
            .and_then(|body| STANDARD.decode(body).ok())
            .ok_or(SealError)?;
        let plain = self.open_bytes(owner.as_bytes(), &bytes)?;
        String::from_utf8(plain).map_err(|_| SealError)
    }

    /// `plain` sealed with `aad` as associated data: a random nonce, then the ciphertext.
    pub(crate) fn seal_bytes(&self, aad: &[u8], plain: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let payload = Payload { msg: plain, aad };
        let sealed = self
            .cipher
            .encrypt(XNonce::from_slice(&nonce), payload)
            .expect("XChaCha20-Poly1305 seals any message shorter than 256 GiB");
        let mut bytes = nonce.to_vec();
        bytes.extend_from_slice(&sealed);
        bytes
    }

    /// What [`Sealer::seal_bytes`] sealed with `aad`.
    pub(crate) fn open_bytes(&self, aad: &[u8], sealed: &[u8]) -> Result<Vec<u8>, SealError> {
        if sealed.len() <= NONCE_LEN {
            return Err(SealError);
        }
        let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
        let payload = Payload {
            msg: ciphertext,
            aad,
        };
        self.cipher
            .decrypt(XNonce::from_slice(nonce), payload)
            .map_err(|_| SealError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_only_for_their_owner_purpose_and_host() {
        let sealer = Sealer::new(&[7u8; 32], b"xf/test/v1");
        let sealed = sealer.seal("org_a", "1//refresh-token");
        assert!(!sealed.contains("refresh"));
        assert_ne!(
            sealed,
            sealer.seal("org_a", "1//refresh-token"),
            "nonces are random"
        );
        assert_eq!(
            sealer.open("org_a", &sealed).as_deref(),
            Ok("1//refresh-token")
        );
        assert_eq!(sealer.open("org_b", &sealed), Err(SealError));
        let other_purpose = Sealer::new(&[7u8; 32], b"xf/other/v1");
        assert_eq!(other_purpose.open("org_a", &sealed), Err(SealError));
        let other_host = Sealer::new(&[8u8; 32], b"xf/test/v1");
        assert_eq!(other_host.open("org_a", &sealed), Err(SealError));
        let mut tampered = sealed.clone().into_bytes();
        let last = tampered.len() - 3;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        assert_eq!(sealer.open("org_a", &tampered), Err(SealError));
        assert_eq!(sealer.open("org_a", "v1.AAAA"), Err(SealError));
        assert_eq!(sealer.open("org_a", "plain"), Err(SealError));
    }
}
