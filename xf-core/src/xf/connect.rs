//! Connect links (see [`crate::connect`]): making them, and the two steps of the flow the
//! connect service serves.

use std::sync::Arc;

use super::media::ChannelGrant;
use super::{Admin, Xf};
use subtle::ConstantTimeEq;

use crate::connect::{
    self, Account, Authorize, BrowserBinding, Callback, ConnectFailure, ConnectLink, ConnectStep,
    Connector, Grant, LinkClaims, NewConnectLink, Provider, StateClaims, BROWSER_BINDING_PREFIX,
    CALLBACK_PATH, CONNECT_PREFIX, LINK_LIFETIME, STATE_LIFETIME,
};
use crate::error::{Error, Result};
use crate::ids::{ChannelId, Id, OrganizationId};
use crate::time::Timestamp;

impl Xf {
    /// The redirect URI to register with every provider: `{base}/connect/callback`.
    pub fn connect_redirect_uri(&self) -> String {
        format!("{}{CALLBACK_PATH}", self.config().public_base_url)
    }

    /// `GET /connect/{token}`: the provider's authorization page for a link, with a fresh
    /// state; back to `returnUrl` when the link expired; a refusal when it is not one.
    pub fn connect_open(&self, token: &str) -> ConnectStep {
        let Some(link) = self.inner.connect_tokens.open_link(token) else {
            return ConnectStep::Refused(
                "This connect link is not valid. Ask for a new one where you found it.".into(),
            );
        };
        let now = self.now();
        if unix_seconds(now) > link.exp {
            return back_with_error(&link, "link_expired");
        }
        let Some(connector) = self.connector(link.provider) else {
            return back_with_error(&link, "provider_not_configured");
        };
        let verifier = connect::random_token(32);
        let id = connect::random_token(16);
        let binding = BrowserBinding {
            name: format!("{BROWSER_BINDING_PREFIX}{id}"),
            value: connect::random_token(32),
            max_age: STATE_LIFETIME,
        };
        let state = self.inner.connect_tokens.seal_state(&StateClaims {
            id,
            verifier: verifier.clone(),
            browser: binding.value.clone(),
            exp: unix_seconds(now.plus(chrono_duration(STATE_LIFETIME))),
            link,
        });
        let url = connector.authorize_url(&Authorize {
            redirect_uri: &self.connect_redirect_uri(),
            state: &state,
            code_challenge: &connect::code_challenge(&verifier),
        });
        ConnectStep::Consent { url, binding }
    }

    /// `GET /connect/callback`: checks the state (sealed, unexpired, unused), exchanges the
    /// code, stores the accounts the grant reaches, and sends the user back to `returnUrl`
    /// with the outcome. A state that cannot be trusted is refused with no redirect.
    pub async fn connect_callback(&self, callback: Callback) -> ConnectStep {
        let Some(state) = callback
            .state
            .as_deref()
            .and_then(|state| self.inner.connect_tokens.open_state(state))
        else {
            return ConnectStep::Refused(
                "This answer from the provider cannot be trusted: its state is missing, altered \
                 or not ours. Start again from the connect link."
                    .into(),
            );
        };
        let now = self.now();
        let link = &state.link;
        if unix_seconds(now) > state.exp {
            return back_with_error(link, "state_expired");
        }
        // The browser that completes the consent must be the one that opened the link: a
        // consent URL sent to someone else connects nothing. Checked before the claim, so
        // a stranger's attempt does not use up the state.
        let name = format!("{BROWSER_BINDING_PREFIX}{}", state.id);
        let bound = callback.bindings.iter().any(|(given, value)| {
            *given == name && bool::from(value.as_bytes().ct_eq(state.browser.as_bytes()))
        });
        if !bound {
            return back_with_error(link, "browser_mismatch");
        }
        let expires_at = Timestamp::from_unix_millis(state.exp.saturating_mul(1000))
            .unwrap_or_else(|| now.plus(chrono_duration(STATE_LIFETIME)));
        match self
            .store()
            .claim_connect_state(&state.id, expires_at, now)
            .await
        {
            Ok(true) => {}
            Ok(false) => return back_with_error(link, "state_used"),
            Err(error) => {
                tracing::warn!(%error, "connect: the state could not be claimed");
                return back_with_error(link, "unavailable");
            }
        }
        match self.finish_connect(&state, callback).await {
            Ok(outcome) => ConnectStep::Redirect(with_query(&link.return_url, &outcome)),
            Err(failure) => {
                tracing::info!(provider = %link.provider, organization = %link.org, %failure, "connect failed");
                back_with_error(link, failure.code())
            }
        }
    }

    /// The provider's answer turned into stored accounts; the query pairs of the outcome.
    async fn finish_connect(
        &self,
        state: &StateClaims,
        callback: Callback,
    ) -> Result<Vec<(&'static str, String)>, ConnectFailure> {
        let link = &state.link;
        if let Some(error) = callback.error.as_deref() {
            return Err(match error {
                "access_denied" | "user_cancelled_login" | "user_cancelled_authorize" => {
                    ConnectFailure::Denied
                }
                other => ConnectFailure::Authorization(match &callback.error_description {
                    Some(description) => format!("{other}: {description}"),
                    None => other.to_owned(),
                }),
            });
        }
        let code = callback
            .code
            .as_deref()
            .filter(|code| !code.is_empty())
            .ok_or_else(|| ConnectFailure::Authorization("no authorization code".into()))?;
        let connector = self
            .connector(link.provider)
            .ok_or_else(|| ConnectFailure::Unavailable("the provider is not configured".into()))?;
        let grant = connector
            .exchange(code, &self.connect_redirect_uri(), &state.verifier)
            .await?;
        let accounts = connector.accounts(&grant).await?;
        let mut outcome = vec![
            ("status", "connected".to_owned()),
            ("provider", link.provider.as_str().to_owned()),
        ];
        let Some(platform) = link.provider.platform() else {
            // Google: the grant's refresh token is the organization's link; the sites it reads
            // were listed as its accounts.
            if accounts.is_empty() {
                return Err(ConnectFailure::NoAccount(
                    "the Google account has no Search Console site".into(),
                ));
            }
            let refresh_token = grant.refresh_token.as_deref().ok_or_else(|| {
                ConnectFailure::Exchange("Google returned no refresh token".into())
            })?;
            self.save_gsc_account(&link.org, refresh_token, None)
                .await
                .map_err(stored)?;
            outcome.push(("sites", accounts.len().to_string()));
            return Ok(outcome);
        };
        let accounts = match &link.channel {
            None => accounts,
            Some(channel_id) => {
                let channel = self
                    .organization_channel(&link.org, channel_id)
                    .await
                    .map_err(stored)?
                    .ok_or_else(|| {
                        ConnectFailure::NoAccount("the channel to reconnect is gone".into())
                    })?;
                let reconnected: Vec<Account> = accounts
                    .into_iter()
                    .filter(|account| account.account_id == channel.account_id)
                    .collect();
                if reconnected.is_empty() {
                    return Err(ConnectFailure::NoAccount(format!(
                        "the account that consented does not reach {} ({})",
                        channel.name, channel.account_id
                    )));
                }
                reconnected
            }
        };
        if accounts.is_empty() {
            return Err(ConnectFailure::NoAccount(format!(
                "the {} account reaches nothing xf can publish to",
                platform.as_str()
            )));
        }
        let expires_at = grant
            .expires_in
            .map(|lifetime| self.now().plus(chrono_duration(lifetime)));
        let mut channels = Vec::with_capacity(accounts.len());
        for account in accounts {
            let saved = self
                .save_channel(
                    &link.org,
                    platform,
                    channel_grant(account, &grant, expires_at),
                )
                .await
                .map_err(stored)?;
            channels.push(saved.id.to_string());
        }
        outcome.push(("channels", channels.join(",")));
        Ok(outcome)
    }

    /// The connector of `provider`, if the host configured one.
    fn connector(&self, provider: Provider) -> Option<&Arc<dyn Connector>> {
        self.inner.connectors.get(&provider)
    }

    /// `url` if it is an absolute `http(s)` URL on an allowed host.
    fn trusted_return_url(&self, url: &str) -> Result<String> {
        let invalid = |why: &str| Error::invalid("returnUrl", why.to_owned());
        let max = crate::connect::MAX_RETURN_URL;
        if url.trim().len() > max {
            return Err(invalid(&format!("must be at most {max} characters")));
        }
        let parsed = url::Url::parse(url.trim())
            .map_err(|_| invalid("must be an absolute http or https URL"))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.cannot_be_a_base() {
            return Err(invalid("must be an absolute http or https URL"));
        }
        let host = parsed.host_str().unwrap_or_default().to_ascii_lowercase();
        if !self.inner.connect_return_hosts.contains(&host) {
            return Err(invalid(&format!(
                "must be on a host this server sends users back to ({}); {host} is not one",
                self.inner.connect_return_hosts.join(", ")
            )));
        }
        let url = parsed.to_string();
        // Counted as the state carries it, in JSON (a `\` in a query is two characters there).
        let sealed_length = serde_json::to_string(&url).map_or(usize::MAX, |json| json.len() - 2);
        if sealed_length > max {
            return Err(invalid(&format!(
                "must be at most {max} characters once encoded"
            )));
        }
        Ok(url)
    }

    /// The organization's channel `id`, if it has one.
    async fn organization_channel(
        &self,
        organization_id: &OrganizationId,
        id: &ChannelId,
    ) -> Result<Option<crate::media::Channel>> {
        Ok(self
            .store()
            .list_channels(organization_id)
            .await?
            .into_iter()
            .find(|c| &c.id == id))
    }

    /// The organization's channel `id`, which must be one of `provider`'s.
    async fn channel_to_reconnect(
        &self,
        organization_id: &OrganizationId,
        provider: Provider,
        id: &str,
    ) -> Result<ChannelId> {
        let Some(platform) = provider.platform() else {
            return Err(Error::invalid(
                "channelId",
                "reconnects a channel; the Google link is connected again without one",
            ));
        };
        let id = ChannelId::parse(id).map_err(|_| Error::NotFound(ChannelId::RESOURCE))?;
        let channel = self
            .organization_channel(organization_id, &id)
            .await?
            .ok_or(Error::NotFound(ChannelId::RESOURCE))?;
        if channel.platform != platform {
            return Err(Error::invalid(
                "channelId",
                format!(
                    "is a {} channel, not a {provider} one",
                    channel.platform.as_str()
                ),
            ));
        }
        Ok(channel.id)
    }
}

impl Admin<'_> {
    /// `POST /admin/organizations/{orgId}/connect-links`: a link that connects the
    /// organization's account at `provider` (or reconnects `channelId`), valid for an hour.
    pub async fn create_connect_link(
        &self,
        organization_id: &OrganizationId,
        input: NewConnectLink,
    ) -> Result<ConnectLink> {
        let provider = Provider::parse(input.provider.trim()).ok_or_else(|| {
            Error::invalid(
                "provider",
                "must be one of google, youtube, instagram, tiktok, linkedin, pinterest",
            )
        })?;
        if self.xf.connector(provider).is_none() {
            return Err(Error::invalid(
                "provider",
                format!("no {provider} app is configured on this server"),
            ));
        }
        let return_url = self.xf.trusted_return_url(&input.return_url)?;
        if self
            .xf
            .store()
            .get_organization(organization_id)
            .await?
            .is_none()
        {
            return Err(Error::NotFound("organization"));
        }
        let channel = match input.channel_id.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(id) => Some(
                self.xf
                    .channel_to_reconnect(organization_id, provider, id)
                    .await?,
            ),
        };
        let expires_at = self.xf.now().plus(chrono_duration(LINK_LIFETIME));
        let token = self.xf.inner.connect_tokens.seal_link(&LinkClaims {
            org: organization_id.clone(),
            provider,
            channel,
            return_url,
            exp: unix_seconds(expires_at),
        });
        Ok(ConnectLink {
            url: format!(
                "{}{CONNECT_PREFIX}/{token}",
                self.xf.config().public_base_url
            ),
            provider,
            expires_at,
        })
    }
}

/// What a channel of `account` is stored with.
fn channel_grant(account: Account, grant: &Grant, expires_at: Option<Timestamp>) -> ChannelGrant {
    let own_token = account.access_token.is_some();
    ChannelGrant {
        access_token: account
            .access_token
            .unwrap_or_else(|| grant.access_token.clone()),
        // An account token of its own (a page's) is not refreshed with the user's grant.
        refresh_token: grant.refresh_token.clone().filter(|_| !own_token),
        expires_at: expires_at.filter(|_| !own_token),
        account_id: account.account_id,
        name: account.name,
        thumbnail: account.thumbnail,
        default_board: account.default_board,
    }
}

/// A store failure while storing what was connected.
fn stored(error: Error) -> ConnectFailure {
    tracing::warn!(%error, "connect: storing the accounts failed");
    ConnectFailure::Unavailable("the accounts could not be stored; try again".into())
}

/// Back to the link's `returnUrl` with `status=error&code=…`.
fn back_with_error(link: &LinkClaims, code: &str) -> ConnectStep {
    ConnectStep::Redirect(with_query(
        &link.return_url,
        &[
            ("status", "error".to_owned()),
            ("provider", link.provider.as_str().to_owned()),
            ("code", code.to_owned()),
        ],
    ))
}

/// `url` with `pairs` added to its query.
fn with_query(url: &str, pairs: &[(&'static str, String)]) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            parsed.query_pairs_mut().extend_pairs(pairs);
            parsed.to_string()
        }
        // Return URLs are checked when the link is made: this is not reached.
        Err(_) => url.to_owned(),
    }
}

fn unix_seconds(at: Timestamp) -> i64 {
    at.unix_millis().div_euclid(1000)
}

fn chrono_duration(duration: std::time::Duration) -> chrono::Duration {
    chrono::Duration::from_std(duration).unwrap_or(chrono::Duration::MAX)
}
