//! Signing secrets: making them, keeping them sealed at rest, and signing with them by the
//! Standard Webhooks v1 scheme.
//!
//! A secret is `whsec_` and the base64 of 24 random bytes; those bytes are the HMAC-SHA256
//! key. A delivery is signed over `"{webhook-id}.{webhook-timestamp}.{body}"`, and the
//! `webhook-signature` header lists one `v1,<base64 signature>` per signing secret, separated
//! by spaces: the current secret's, and during a rotation's overlap the previous one's.
//!
//! At rest a secret is sealed with XChaCha20-Poly1305 under a key derived from the host's
//! secret, with the webhook's id as associated data, so a sealed value copied to another
//! webhook's row does not open.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

use crate::ids::WebhookId;
pub use crate::secret::SealError;
use crate::secret::Sealer;

/// The prefix of every signing secret.
pub const SECRET_PREFIX: &str = "whsec_";
/// Random bytes in a secret.
pub const SECRET_BYTES: usize = 24;
/// Characters of a secret shown as `secretPrefix`.
pub const SHOWN_PREFIX_LEN: usize = 12;

/// A signing secret in the clear: `whsec_…`. Shown once, to the caller that made it.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningSecret(String);

impl std::fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningSecret({}…)", self.prefix())
    }
}

impl SigningSecret {
    /// A new random secret.
    pub fn generate() -> Self {
        let mut bytes = [0u8; SECRET_BYTES];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        Self::from_bytes(&bytes)
    }

    /// The secret made of these bytes (test-mode responses derive theirs).
    pub fn from_bytes(bytes: &[u8; SECRET_BYTES]) -> Self {
        SigningSecret(format!("{SECRET_PREFIX}{}", STANDARD.encode(bytes)))
    }

    /// The secret as the API shows it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its `secretPrefix`.
    pub fn prefix(&self) -> String {
        self.0.chars().take(SHOWN_PREFIX_LEN).collect()
    }

    /// The HMAC key: the bytes after `whsec_`.
    fn key(&self) -> Option<Vec<u8>> {
        STANDARD.decode(self.0.strip_prefix(SECRET_PREFIX)?).ok()
    }
}

/// The `webhook-signature` header of a message: one `v1,<signature>` per secret, in order.
/// A secret that is not `whsec_` and base64 (which [`SecretBox::open`] never returns) is
/// skipped.
pub fn signature_header(
    secrets: &[SigningSecret],
    message_id: &str,
    timestamp: i64,
    body: &[u8],
) -> String {
    let signatures: Vec<String> = secrets
        .iter()
        .filter_map(|secret| {
            let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&secret.key()?).ok()?;
            mac.update(message_id.as_bytes());
            mac.update(b".");
            mac.update(timestamp.to_string().as_bytes());
            mac.update(b".");
            mac.update(body);
            Some(format!(
                "v1,{}",
                STANDARD.encode(mac.finalize().into_bytes())
            ))
        })
        .collect();
    signatures.join(" ")
}

/// Seals and opens signing secrets with a key derived from the host's secret.
#[derive(Clone, Debug)]
pub struct SecretBox {
    sealer: Sealer,
}

impl SecretBox {
    /// The box of a host secret.
    pub fn new(host_secret: &[u8]) -> Self {
        SecretBox {
            sealer: Sealer::new(host_secret, b"xf/webhook-secrets/v1"),
        }
    }

    /// `secret` sealed for webhook `id`: `v1.` and the base64 of a random nonce and the
    /// XChaCha20-Poly1305 ciphertext, bound to `id` (the crate's `Sealer::seal`).
    pub fn seal(&self, id: &WebhookId, secret: &SigningSecret) -> String {
        self.sealer.seal(id.as_str(), secret.as_str())
    }

    /// The secret `sealed` holds for webhook `id`.
    pub fn open(&self, id: &WebhookId, sealed: &str) -> Result<SigningSecret, SealError> {
        let secret = SigningSecret(self.sealer.open(id.as_str(), sealed)?);
        secret.key().ok_or(SealError)?;
        Ok(secret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_have_the_documented_form() {
        let secret = SigningSecret::generate();
        assert!(secret.as_str().starts_with("whsec_"));
        assert_eq!(secret.key().unwrap().len(), SECRET_BYTES);
        assert_eq!(secret.prefix().len(), 12);
        assert!(secret.as_str().starts_with(&secret.prefix()));
        assert_ne!(secret, SigningSecret::generate());
        assert!(!format!("{secret:?}").contains(secret.as_str()));
    }

    #[test]
    fn sealed_secrets_open_only_for_their_webhook_and_host() {
        let webhook = WebhookId::new();
        let secret = SigningSecret::generate();
        let sealer = SecretBox::new(&[7u8; 32]);
        let sealed = sealer.seal(&webhook, &secret);
        assert!(!sealed.contains(secret.as_str()));
        assert_ne!(sealed, sealer.seal(&webhook, &secret), "nonces are random");
        assert_eq!(sealer.open(&webhook, &sealed), Ok(secret));
        assert_eq!(sealer.open(&WebhookId::new(), &sealed), Err(SealError));
        assert_eq!(
            SecretBox::new(&[8u8; 32]).open(&webhook, &sealed),
            Err(SealError)
        );
        // A sealed value that is not a signing secret does not open as one.
        let not_a_secret = Sealer::new(&[7u8; 32], b"xf/webhook-secrets/v1");
        let sealed = not_a_secret.seal(webhook.as_str(), "plain");
        assert_eq!(sealer.open(&webhook, &sealed), Err(SealError));
    }

    #[test]
    fn signatures_follow_the_standard_webhooks_example() {
        // The example of the Standard Webhooks specification.
        let secret = SigningSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_owned());
        let body = br#"{"test": 2432232314}"#;
        let header = signature_header(
            std::slice::from_ref(&secret),
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            body,
        );
        assert_eq!(header, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        let other = SigningSecret::generate();
        let both = signature_header(&[secret, other], "msg_p5jXN8AQM9LWM0D4loKWxJek", 1, body);
        assert_eq!(both.split(' ').count(), 2);
    }
}
