//! Signed URLs of media files (`{base}/m/{id}.{expires}.{signature}`), which platforms that
//! pull media (Instagram, Pinterest, TikTok's pull mode) fetch.

use base64::Engine;

use crate::ids::MediaId;
use crate::secret::keyed_digest;
use crate::time::Timestamp;

/// Makes and checks signed media URLs under the host's public base URL.
#[derive(Clone)]
pub(crate) struct MediaUrls {
    key: [u8; 32],
    base_url: String,
}

impl std::fmt::Debug for MediaUrls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaUrls")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl MediaUrls {
    /// URLs signed with `key`, under `base_url` (no trailing slash).
    pub(crate) fn new(key: [u8; 32], base_url: &str) -> Self {
        MediaUrls {
            key,
            base_url: base_url.to_owned(),
        }
    }

    /// The URL of item `id`'s file, valid until `expires_at`.
    pub(crate) fn url(&self, id: &MediaId, expires_at: Timestamp) -> String {
        let expires = expires_at.unix_millis().div_euclid(1000);
        let signature = self.signature(id.as_str(), expires);
        format!("{}/m/{id}.{expires}.{signature}", self.base_url)
    }

    /// The item a URL's token names, if its signature is right and it has not expired at
    /// `now`.
    pub(crate) fn check(&self, token: &str, now: Timestamp) -> Option<MediaId> {
        let mut parts = token.splitn(3, '.');
        let (id, expires, signature) = (parts.next()?, parts.next()?, parts.next()?);
        let expires: i64 = expires.parse().ok()?;
        let expected = self.signature(id, expires);
        let signature_ok: bool =
            subtle::ConstantTimeEq::ct_eq(expected.as_bytes(), signature.as_bytes()).into();
        if !signature_ok || now.unix_millis().div_euclid(1000) > expires {
            return None;
        }
        MediaId::parse(id).ok()
    }

    fn signature(&self, id: &str, expires: i64) -> String {
        let digest = keyed_digest(&self.key, &[id.as_bytes(), &expires.to_be_bytes()]);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..24])
    }
}
