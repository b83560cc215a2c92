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

    /// The URL of file `index` of item `id` (`0` for its file, `1`… for a carousel's other
    /// images, in order), valid until `expires_at`.
    pub(crate) fn url(&self, id: &MediaId, index: usize, expires_at: Timestamp) -> String {
        let expires = expires_at.unix_millis().div_euclid(1000);
        let subject = subject(id, index);
        let signature = self.signature(&subject, expires);
        format!("{}/m/{subject}.{expires}.{signature}", self.base_url)
    }

    /// The item and file index a URL's token names, if its signature is right and it has not
    /// expired at `now`.
    pub(crate) fn check(&self, token: &str, now: Timestamp) -> Option<(MediaId, usize)> {
        let mut parts = token.splitn(3, '.');
        let (subject, expires_text, signature) = (parts.next()?, parts.next()?, parts.next()?);
        let expires: i64 = expires_text.parse().ok()?;
        // Only the digits this module writes: `+5`, `05` or `-0` parse to the signed number
        // but would make other URLs of the same file.
        if expires.to_string() != expires_text {
            return None;
        }
        let expected = self.signature(subject, expires);
        let signature_ok: bool =
            subtle::ConstantTimeEq::ct_eq(expected.as_bytes(), signature.as_bytes()).into();
        if !signature_ok || now.unix_millis().div_euclid(1000) > expires {
            return None;
        }
        let (id, index) = match subject.split_once('-') {
            None => (subject, 0),
            Some((id, index)) => (id, index.parse().ok().filter(|n| *n > 0)?),
        };
        Some((MediaId::parse(id).ok()?, index))
    }

    fn signature(&self, id: &str, expires: i64) -> String {
        let digest = keyed_digest(&self.key, &[id.as_bytes(), &expires.to_be_bytes()]);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..24])
    }
}

/// What a URL signs: the item's id, and `-{index}` for a carousel's image after the first (so
/// the first file's URLs are as they were before carousels).
fn subject(id: &MediaId, index: usize) -> String {
    if index == 0 {
        id.to_string()
    } else {
        format!("{id}-{index}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_names_one_file_of_one_item_until_it_expires() {
        let urls = MediaUrls::new([7; 32], "https://xf.example");
        let id = MediaId::new();
        let now = Timestamp::from_datetime(chrono::Utc::now());
        let later = now.plus(chrono::Duration::hours(1));
        for index in [0, 1, 34] {
            let url = urls.url(&id, index, later);
            let token = url.strip_prefix("https://xf.example/m/").unwrap();
            assert_eq!(urls.check(token, now), Some((id.clone(), index)));
            assert_eq!(
                urls.check(token, later.plus(chrono::Duration::seconds(1))),
                None
            );
        }
        // Another index under the same signature is refused, as is an index 0 spelled out.
        let token = urls.url(&id, 1, later);
        let token = token.strip_prefix("https://xf.example/m/").unwrap();
        assert_eq!(urls.check(&token.replacen("-1.", "-2.", 1), now), None);
        let (_, rest) = token.split_once('.').unwrap();
        assert_eq!(urls.check(&format!("{id}-0.{rest}"), now), None);
        assert_eq!(urls.check("garbage", now), None);
        // The expiry only as written: a leading zero or plus sign is another URL.
        let (subject, rest) = token.split_once('.').unwrap();
        let (expires, signature) = rest.split_once('.').unwrap();
        for spelled in [
            format!("0{expires}"),
            format!("+{expires}"),
            format!("00{expires}"),
        ] {
            assert_eq!(
                urls.check(&format!("{subject}.{spelled}.{signature}"), now),
                None
            );
        }
        assert!(urls
            .check(&format!("{subject}.{expires}.{signature}"), now)
            .is_some());
    }

    proptest::proptest! {
        /// Any token (anything a path segment may carry) is read without a panic, and only
        /// the tokens made here name a file.
        #[test]
        fn any_token_is_read_and_only_signed_ones_name_a_file(
            token in "\\PC{0,120}|[a-z0-9_.-]{0,80}",
            index in 0usize..64,
        ) {
            let urls = MediaUrls::new([3; 32], "https://xf.example");
            let now = Timestamp::from_datetime(chrono::Utc::now());
            proptest::prop_assert_eq!(urls.check(&token, now), None);
            let id = MediaId::new();
            let url = urls.url(&id, index, now.plus(chrono::Duration::minutes(5)));
            let signed = url.strip_prefix("https://xf.example/m/").unwrap();
            proptest::prop_assert_eq!(urls.check(signed, now), Some((id, index)));
            // The signed token with anything appended or cut is refused.
            let longer = format!("{signed}{token}");
            if !token.is_empty() {
                proptest::prop_assert_eq!(urls.check(&longer, now), None);
            }
            proptest::prop_assert_eq!(urls.check(&signed[..signed.len() - 1], now), None);
        }
    }
}
