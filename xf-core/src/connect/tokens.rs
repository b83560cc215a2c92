//! The connect link's token and the OAuth `state`: small JSON claims sealed with the host's
//! [`Sealer`] under a key of their own (so nobody can read the PKCE verifier in a state, or
//! forge or alter either), in URL-safe base64.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rand::RngCore;
use serde::{de::DeserializeOwned, Deserialize, Serialize};

use super::Provider;
use crate::ids::{ChannelId, OrganizationId};
use crate::secret::Sealer;

/// What a connect link says: who connects what, and where the user goes back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LinkClaims {
    /// The organization the accounts are stored for.
    pub org: OrganizationId,
    /// The provider.
    pub provider: Provider,
    /// The channel to reconnect, if any.
    pub channel: Option<ChannelId>,
    /// Where the user goes back.
    pub return_url: String,
    /// Unix seconds after which the link no longer opens.
    pub exp: i64,
}

/// What an OAuth `state` says: its link, the PKCE verifier, and its own id and lifetime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StateClaims {
    /// Random: claimed in the store on the callback, so the state works once.
    pub id: String,
    /// The link it was made from.
    pub link: LinkClaims,
    /// The PKCE `code_verifier`.
    pub verifier: String,
    /// The value of the browser binding the opening set: the callback must bring it back.
    pub browser: String,
    /// Unix seconds after which the callback is refused.
    pub exp: i64,
}

/// Seals and opens link tokens and states.
#[derive(Clone, Debug)]
pub(crate) struct TokenCodec {
    sealer: Sealer,
}

/// Tokens longer than this are not opened (a state is about 500 characters).
const MAX_TOKEN_LEN: usize = 4096;

/// The longest `returnUrl` a link takes, counted as JSON writes it (where a `\` or a `"` is two
/// characters): the state made from the link, which carries it, then stays within
/// [`MAX_TOKEN_LEN`] (a test checks), so a user sent through consent is never stranded at the
/// callback by a state too long to open.
pub(crate) const MAX_RETURN_URL: usize = 2048;
/// Associated data: a link's token does not open as a state, nor the reverse.
const LINK: &[u8] = b"connect-link";
const STATE: &[u8] = b"connect-state";

impl TokenCodec {
    /// The codec under the host's secret.
    pub(crate) fn new(host_secret: &[u8]) -> Self {
        TokenCodec {
            sealer: Sealer::new(host_secret, b"xf/connect/v1"),
        }
    }

    pub(crate) fn seal_link(&self, claims: &LinkClaims) -> String {
        self.seal(LINK, claims)
    }

    pub(crate) fn open_link(&self, token: &str) -> Option<LinkClaims> {
        self.open(LINK, token)
    }

    pub(crate) fn seal_state(&self, claims: &StateClaims) -> String {
        self.seal(STATE, claims)
    }

    pub(crate) fn open_state(&self, token: &str) -> Option<StateClaims> {
        self.open(STATE, token)
    }

    fn seal<T: Serialize>(&self, kind: &[u8], claims: &T) -> String {
        let plain = serde_json::to_vec(claims).expect("claims serialize");
        URL_SAFE_NO_PAD.encode(self.sealer.seal_bytes(kind, &plain))
    }

    fn open<T: DeserializeOwned>(&self, kind: &[u8], token: &str) -> Option<T> {
        if token.len() > MAX_TOKEN_LEN {
            return None;
        }
        let bytes = URL_SAFE_NO_PAD.decode(token).ok()?;
        let plain = self.sealer.open_bytes(kind, &bytes).ok()?;
        serde_json::from_slice(&plain).ok()
    }
}

/// A random URL-safe string of `bytes` random bytes (a state id, a PKCE verifier).
pub(crate) fn random_token(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    rand::rngs::OsRng.fill_bytes(&mut buffer);
    URL_SAFE_NO_PAD.encode(buffer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link() -> LinkClaims {
        LinkClaims {
            org: OrganizationId::new(),
            provider: Provider::Youtube,
            channel: None,
            return_url: "https://app.example.com/channels".into(),
            exp: 1_900_000_000,
        }
    }

    #[test]
    fn a_state_with_the_longest_return_url_opens() {
        let codec = TokenCodec::new(&[7u8; 32]);
        let mut link = link();
        link.provider = Provider::Instagram;
        link.channel = Some(ChannelId::new());
        // Every character one JSON writes as two (a URL may keep `\` in its query): the worst
        // case of the limit, which counts the URL as JSON writes it.
        link.return_url = "\\".repeat(MAX_RETURN_URL / 2);
        assert_eq!(
            serde_json::to_string(&link.return_url).unwrap().len(),
            MAX_RETURN_URL + 2
        );
        let state = StateClaims {
            id: random_token(16),
            link,
            verifier: random_token(32),
            browser: random_token(32),
            exp: i64::MAX,
        };
        let sealed = codec.seal_state(&state);
        assert!(sealed.len() <= MAX_TOKEN_LEN, "{} characters", sealed.len());
        assert_eq!(codec.open_state(&sealed), Some(state));
    }

    #[test]
    fn tokens_open_only_as_what_they_were_sealed_as_and_with_the_same_secret() {
        let codec = TokenCodec::new(&[7u8; 32]);
        let link = link();
        let token = codec.seal_link(&link);
        assert!(token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_eq!(codec.open_link(&token), Some(link.clone()));
        assert_eq!(codec.open_state(&token), None, "a link is not a state");
        assert_eq!(TokenCodec::new(&[8u8; 32]).open_link(&token), None);
        let state = StateClaims {
            id: random_token(16),
            link,
            verifier: random_token(32),
            browser: random_token(32),
            exp: 1_900_000_000,
        };
        let sealed = codec.seal_state(&state);
        assert!(!sealed.contains(&state.verifier));
        assert_eq!(codec.open_state(&sealed), Some(state));
        // Any change to a sealed token makes it not open.
        let mut altered = sealed.into_bytes();
        let middle = altered.len() / 2;
        altered[middle] = if altered[middle] == b'A' { b'B' } else { b'A' };
        assert_eq!(
            codec.open_state(std::str::from_utf8(&altered).unwrap()),
            None
        );
        for junk in ["", "x", "!!!", &"A".repeat(5000)] {
            assert_eq!(codec.open_state(junk), None, "{junk:?}");
        }
    }

    proptest::proptest! {
        /// Whatever comes back as a token or a state, opening it ends: `None` unless it is one
        /// this codec sealed.
        #[test]
        fn any_text_opens_as_nothing(text in ".{0,600}", bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600)) {
            let codec = TokenCodec::new(&[9u8; 32]);
            proptest::prop_assert!(codec.open_link(&text).is_none());
            proptest::prop_assert!(codec.open_state(&text).is_none());
            let encoded = URL_SAFE_NO_PAD.encode(&bytes);
            proptest::prop_assert!(codec.open_state(&encoded).is_none());
        }
    }
}
