//! Connect links: xf runs the OAuth 2.0 authorization-code flow (RFC 6749 §4.1, with PKCE,
//! RFC 7636, where the provider supports it) that connects an organization's Google account
//! or social channels, so a host hands its user one link instead of writing six OAuth
//! integrations.
//!
//! 1. The host asks for a link (`POST /admin/organizations/{orgId}/connect-links`,
//!    [`Admin::create_connect_link`](crate::Admin::create_connect_link)): `{base}/connect/{token}`,
//!    whose token seals the organization, the provider, the channel to reconnect (if any) and
//!    the `returnUrl`, for an hour.
//! 2. Opening it redirects to the provider's authorization endpoint with the scopes xf needs,
//!    `redirect_uri = {base}/connect/callback`, a PKCE challenge, and a `state` that seals the
//!    link, the PKCE verifier, a random id and ten minutes of life. The state is single-use:
//!    its id is claimed in the store when the callback arrives.
//! 3. The callback exchanges the code for tokens, asks the provider which accounts the grant
//!    reaches ([`Connector::accounts`]), stores them (channels, or the organization's Google
//!    link), and redirects to `returnUrl` with `status=connected` or `status=error&code=…`.
//!
//! Nothing about a provider's endpoints is here: each provider is a [`Connector`], made by
//! the platform clients (`media::platforms`, feature `publishing`) and the Search Console
//! client (`gsc`, feature `gsc`), or given by the host.

#[cfg(any(feature = "gsc", feature = "publishing"))]
pub(crate) mod oauth;
mod tokens;

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::model::media::Platform;

pub(crate) use tokens::{random_token, LinkClaims, StateClaims, TokenCodec, MAX_RETURN_URL};

/// How long a connect link can be opened.
pub const LINK_LIFETIME: Duration = Duration::from_secs(60 * 60);
/// How long the user has to consent at the provider before the callback is refused.
pub const STATE_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// Where the connect service is mounted: links are `{base}/connect/{token}`.
pub const CONNECT_PREFIX: &str = "/connect";
/// The redirect URI to register with every provider, under the public base URL.
pub const CALLBACK_PATH: &str = "/connect/callback";

/// Whose account a link connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Provider {
    /// Google, for Search Console (the organization's Google link).
    Google,
    /// A YouTube channel.
    Youtube,
    /// Instagram professional accounts.
    Instagram,
    /// A TikTok account.
    Tiktok,
    /// A LinkedIn member and the organizations it administers.
    Linkedin,
    /// A Pinterest account.
    Pinterest,
}

impl Provider {
    /// Every provider.
    pub const ALL: [Provider; 6] = [
        Provider::Google,
        Provider::Youtube,
        Provider::Instagram,
        Provider::Tiktok,
        Provider::Linkedin,
        Provider::Pinterest,
    ];

    /// Its name in the API (`google`, `youtube`, ...).
    pub fn as_str(self) -> &'static str {
        match self.platform() {
            Some(platform) => platform.as_str(),
            None => "google",
        }
    }

    /// The provider named `name`.
    pub fn parse(name: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// The platform whose channels it connects; `None` for Google (Search Console).
    pub fn platform(self) -> Option<Platform> {
        match self {
            Provider::Google => None,
            Provider::Youtube => Some(Platform::Youtube),
            Provider::Instagram => Some(Platform::Instagram),
            Provider::Tiktok => Some(Platform::Tiktok),
            Provider::Linkedin => Some(Platform::Linkedin),
            Provider::Pinterest => Some(Platform::Pinterest),
        }
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the authorization request carries besides the provider's own settings.
#[derive(Debug, Clone)]
pub struct Authorize<'a> {
    /// `{base}/connect/callback`.
    pub redirect_uri: &'a str,
    /// The sealed state.
    pub state: &'a str,
    /// The PKCE `code_challenge` (S256) of the state's verifier.
    pub code_challenge: &'a str,
}

/// The tokens a code was exchanged for.
#[derive(Clone, PartialEq, Eq)]
pub struct Grant {
    /// The access token.
    pub access_token: String,
    /// The refresh token, if the provider issued one.
    pub refresh_token: Option<String>,
    /// How long the access token lives, if the provider said.
    pub expires_in: Option<Duration>,
    /// The provider's id of the user who consented, when the token answer names it (TikTok's
    /// `open_id`).
    pub subject: Option<String>,
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("expires_in", &self.expires_in)
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

/// An account a grant reaches: one channel to store (or, for Google, the account itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// The platform's id of the account (what a channel's `accountId` is).
    pub account_id: String,
    /// Its display name.
    pub name: String,
    /// Its picture, if any.
    pub thumbnail: Option<String>,
    /// A token of the account's own, where the provider issues one per account (a Facebook
    /// page's token); `None` uses the grant's.
    pub access_token: Option<String>,
    /// The board its pins go on when an upload names none (Pinterest: its first board).
    pub default_board: Option<String>,
}

/// Why a connect flow ended without an account stored: the `code` sent to `returnUrl`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectFailure {
    /// The user declined at the provider (`error=access_denied`).
    #[error("access_denied: the user declined to grant access")]
    Denied,
    /// The provider answered the authorization with another error.
    #[error("authorization_failed: {0}")]
    Authorization(String),
    /// The token endpoint refused the code.
    #[error("token_exchange_failed: {0}")]
    Exchange(String),
    /// The grant reaches no account xf can use (no channel, no professional account, no
    /// Search Console site, or not the channel being reconnected).
    #[error("no_account: {0}")]
    NoAccount(String),
    /// The provider did not answer, or not as documented.
    #[error("provider_unavailable: {0}")]
    Unavailable(String),
}

impl ConnectFailure {
    /// The code sent to `returnUrl`.
    pub fn code(&self) -> &'static str {
        match self {
            ConnectFailure::Denied => "access_denied",
            ConnectFailure::Authorization(_) => "authorization_failed",
            ConnectFailure::Exchange(_) => "token_exchange_failed",
            ConnectFailure::NoAccount(_) => "no_account",
            ConnectFailure::Unavailable(_) => "provider_unavailable",
        }
    }
}

/// One provider's OAuth flow: its authorization URL, its token exchange, and how it finds
/// the accounts a grant reaches.
#[async_trait]
pub trait Connector: Send + Sync + std::fmt::Debug {
    /// The provider it connects.
    fn provider(&self) -> Provider;

    /// The URL of the provider's authorization endpoint for this request: client id,
    /// redirect URI, scopes, state and PKCE challenge.
    fn authorize_url(&self, request: &Authorize<'_>) -> String;

    /// Exchanges the authorization `code` (with the PKCE `verifier`) for tokens.
    async fn exchange(
        &self,
        code: &str,
        redirect_uri: &str,
        verifier: &str,
    ) -> Result<Grant, ConnectFailure>;

    /// The accounts `grant` reaches, through the provider's identity endpoints.
    async fn accounts(&self, grant: &Grant) -> Result<Vec<Account>, ConnectFailure>;
}

/// The PKCE `code_challenge` of `verifier` (method `S256`, RFC 7636 §4.2).
pub fn code_challenge(verifier: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    let digest = sha2::Sha256::digest(verifier.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
}

/// What a connect link is asked with (`POST /admin/organizations/{orgId}/connect-links`).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewConnectLink {
    /// `google`, `youtube`, `instagram`, `tiktok`, `linkedin` or `pinterest`.
    #[cfg_attr(feature = "openapi", schema(value_type = Provider))]
    pub provider: String,
    /// Where the user is sent back, with `status=connected` or `status=error&code=…`: an
    /// absolute `http(s)` URL on a host the host application allows (by default the public
    /// base URL's).
    pub return_url: String,
    /// A channel of the organization to reconnect (same id, new tokens).
    pub channel_id: Option<String>,
}

/// A connect link.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ConnectLink {
    /// The link to hand the user: `{base}/connect/{token}`.
    pub url: String,
    /// The provider it connects.
    pub provider: Provider,
    /// Until when it can be opened.
    pub expires_at: crate::time::Timestamp,
}

/// What the provider sends back to the callback.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Callback {
    /// The authorization code, on success.
    pub code: Option<String>,
    /// The state xf sent.
    pub state: Option<String>,
    /// The error, when the user declined or the request failed.
    pub error: Option<String>,
    /// The error's description.
    pub error_description: Option<String>,
    /// The browser's bindings ([`ConnectStep::Consent`]'s `binding`) it brought back: each
    /// name with its value (for a web host, its cookies whose names start with
    /// [`BROWSER_BINDING_PREFIX`]).
    #[serde(skip)]
    pub bindings: Vec<(String, String)>,
}

/// What the names of browser bindings start with (see [`ConnectStep::Consent`]).
pub const BROWSER_BINDING_PREFIX: &str = "xf_connect_";

/// A value the browser that opened a link must keep (as a cookie, for a web host) and bring
/// back to the callback: a state completed in another browser (a consent URL forwarded or
/// phished) then connects nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserBinding {
    /// Its name: [`BROWSER_BINDING_PREFIX`] and the state's id, so that flows started at once
    /// in one browser each keep their own.
    pub name: String,
    /// The random value the state carries sealed.
    pub value: String,
    /// How long the browser must keep it: the state's lifetime.
    pub max_age: Duration,
}

/// Where the connect service sends the browser.
///
/// Not `#[non_exhaustive]`: the edge that is given one matches on it, and a variant
/// added must stop one that does not handle it from compiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectStep {
    /// A redirect (`303`) to this URL: `returnUrl`, with the outcome.
    Redirect(String),
    /// A redirect (`303`) to the provider's authorization page, telling the browser to keep
    /// `binding` until the callback.
    Consent {
        /// The provider's authorization page.
        url: String,
        /// What the browser must bring back to the callback.
        binding: BrowserBinding,
    },
    /// A `400` page with this message: the link or state cannot be trusted, so there is no
    /// `returnUrl` to go back to.
    Refused(String),
}
