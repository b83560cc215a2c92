//! The HTTP side of connecting, shared by the providers' connectors: the authorization URL,
//! the authorization-code grant (RFC 6749 §4.1.3) and identity reads, each answer bounded.

#[cfg(feature = "publishing")]
use serde::de::DeserializeOwned;

use super::{ConnectFailure, Grant};
use crate::net::token::{refusal_message, TokenReply};
use crate::net::{exchange, Answer};

/// Google's authorization endpoint (YouTube and Search Console).
pub(crate) const GOOGLE_AUTHORIZE_URL: &str = "https://accounts.google.com/o/oauth2/v2/auth";

/// Answers are read up to this size (a page of YouTube channels or Pinterest boards is far
/// smaller).
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// `endpoint` with `params` added to its query (kept when it has one).
pub(crate) fn authorize_url(endpoint: &str, params: &[(&str, &str)]) -> String {
    match url::Url::parse(endpoint) {
        Ok(mut url) => {
            url.query_pairs_mut().extend_pairs(params);
            url.to_string()
        }
        // A configured endpoint that is not a URL: what the browser gets shows it.
        Err(_) => endpoint.to_owned(),
    }
}

/// A provider's authorization-code flow as its documentation has it: where its pages are,
/// how the app is named and authenticated, which scopes, and whether PKCE is used.
#[derive(Debug, Clone)]
pub(crate) struct CodeFlow<'a> {
    /// The authorization page.
    pub authorize_url: &'a str,
    /// The token endpoint.
    pub token_url: std::borrow::Cow<'a, str>,
    /// The name of the client id parameter: `client_id`, or TikTok's `client_key`.
    pub client_param: &'a str,
    /// The app's id.
    pub client_id: &'a str,
    /// The app's secret.
    pub client_secret: &'a str,
    /// The app authenticates with HTTP Basic at the token endpoint (Pinterest), rather than
    /// with its credentials in the form.
    pub basic_auth: bool,
    /// The token endpoint is a `GET` with the parameters in the query (Meta's), rather than a
    /// form `POST`.
    pub token_in_query: bool,
    /// The scopes, joined as the provider wants them.
    pub scopes: &'a str,
    /// PKCE `S256`: the challenge in the authorization request, the verifier at the token
    /// endpoint (Google; the others document none for web apps).
    pub pkce: bool,
    /// More parameters of the authorization request.
    pub extra: &'a [(&'a str, &'a str)],
}

impl CodeFlow<'_> {
    /// The authorization page's URL for `request`.
    pub(crate) fn authorize_url(&self, request: &super::Authorize<'_>) -> String {
        let mut params = vec![
            (self.client_param, self.client_id),
            ("redirect_uri", request.redirect_uri),
            ("response_type", "code"),
            ("scope", self.scopes),
            ("state", request.state),
        ];
        if self.pkce {
            params.push(("code_challenge", request.code_challenge));
            // Google's default method is `plain`: the method is always named.
            params.push(("code_challenge_method", "S256"));
        }
        params.extend_from_slice(self.extra);
        authorize_url(self.authorize_url, &params)
    }

    /// The authorization-code grant (RFC 6749 §4.1.3) at the token endpoint.
    pub(crate) async fn exchange(
        &self,
        client: &reqwest::Client,
        code: &str,
        redirect_uri: &str,
        verifier: &str,
    ) -> Result<Grant, ConnectFailure> {
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
        ];
        if self.pkce {
            form.push(("code_verifier", verifier));
        }
        if !self.basic_auth {
            form.push((self.client_param, self.client_id));
            form.push(("client_secret", self.client_secret));
        }
        let request = if self.token_in_query {
            client.get(self.token_url.as_ref()).query(&form)
        } else {
            client.post(self.token_url.as_ref()).form(&form)
        };
        let request = if self.basic_auth {
            request.basic_auth(self.client_id, Some(self.client_secret))
        } else {
            request
        };
        token_answer(&send(request).await?)
    }
}

/// The [`Connector`](super::Connector) of a client type with a `client: reqwest::Client`
/// field, a `fn flow(&self) -> CodeFlow<'_>` and an
/// `async fn connect_accounts(&self, &Grant) -> Result<Vec<Account>, ConnectFailure>`.
macro_rules! code_flow_connector {
    ($client:ty, $provider:expr) => {
        #[async_trait::async_trait]
        impl $crate::connect::Connector for $client {
            fn provider(&self) -> $crate::connect::Provider {
                $provider
            }

            fn authorize_url(&self, request: &$crate::connect::Authorize<'_>) -> String {
                self.flow().authorize_url(request)
            }

            async fn exchange(
                &self,
                code: &str,
                redirect_uri: &str,
                verifier: &str,
            ) -> Result<$crate::connect::Grant, $crate::connect::ConnectFailure> {
                self.flow()
                    .exchange(&self.client, code, redirect_uri, verifier)
                    .await
            }

            async fn accounts(
                &self,
                grant: &$crate::connect::Grant,
            ) -> Result<Vec<$crate::connect::Account>, $crate::connect::ConnectFailure> {
                self.connect_accounts(grant).await
            }
        }
    };
}
pub(crate) use code_flow_connector;

/// Google's flow (YouTube and Search Console alike) for `scopes`: offline access with consent
/// asked every time (Google issues a refresh token only on consent), and PKCE.
pub(crate) fn google_flow<'a>(
    authorize_url: &'a str,
    token_url: &'a str,
    client_id: &'a str,
    client_secret: &'a str,
    scopes: &'a str,
) -> CodeFlow<'a> {
    CodeFlow {
        authorize_url,
        token_url: token_url.into(),
        client_param: "client_id",
        client_id,
        client_secret,
        basic_auth: false,
        token_in_query: false,
        scopes,
        pkce: true,
        extra: &[("access_type", "offline"), ("prompt", "consent")],
    }
}

/// A token endpoint's answer (RFC 6749 §5.1 and §5.2) as a grant or the failure it is.
pub(crate) fn token_answer(answer: &Answer) -> Result<Grant, ConnectFailure> {
    match TokenReply::read(answer.status, &answer.body) {
        TokenReply::Granted {
            access_token,
            refresh_token,
            expires_in,
            subject,
        } => Ok(Grant {
            access_token,
            refresh_token,
            expires_in,
            subject,
        }),
        TokenReply::Refused { code, description } if answer.status < 500 => Err(
            ConnectFailure::Exchange(refusal_message(&code, description.as_deref())),
        ),
        _ => Err(ConnectFailure::Unavailable(format!(
            "the token endpoint answered HTTP {} without a token",
            answer.status
        ))),
    }
}

/// The JSON of a successful answer.
#[cfg(feature = "publishing")]
pub(crate) fn json_answer<T: DeserializeOwned>(
    answer: &Answer,
    what: &str,
) -> Result<T, ConnectFailure> {
    if !answer.is_success() {
        return Err(ConnectFailure::Unavailable(format!(
            "{what} answered HTTP {}",
            answer.status
        )));
    }
    serde_json::from_slice(&answer.body).map_err(|error| {
        ConnectFailure::Unavailable(format!("{what} answered an unexpected body: {error}"))
    })
}

/// `GET url` with the bearer `token`, as JSON.
#[cfg(feature = "publishing")]
pub(crate) async fn get_json<T: DeserializeOwned>(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    what: &str,
) -> Result<T, ConnectFailure> {
    get_json_with(client.get(url), token, what).await
}

/// [`get_json`] of a request with headers of its own.
#[cfg(feature = "publishing")]
pub(crate) async fn get_json_with<T: DeserializeOwned>(
    request: reqwest::RequestBuilder,
    token: &str,
    what: &str,
) -> Result<T, ConnectFailure> {
    json_answer(&send(request.bearer_auth(token)).await?, what)
}

/// Sends `request` and reads its answer (bounded).
pub(crate) async fn send(request: reqwest::RequestBuilder) -> Result<Answer, ConnectFailure> {
    exchange(request, MAX_ANSWER_BYTES)
        .await
        .map_err(|error| ConnectFailure::Unavailable(error.to_string()))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn answer(status: u16, body: Vec<u8>) -> Answer {
        Answer {
            status,
            retry_after: None,
            headers: reqwest::header::HeaderMap::new(),
            body,
        }
    }

    #[test]
    fn token_answers_read_as_the_providers_write_them() {
        let granted = token_answer(&answer(
            200,
            br#"{"access_token":"a","refresh_token":"r","expires_in":60,"open_id":"o"}"#.to_vec(),
        ))
        .unwrap();
        assert_eq!(granted.access_token, "a");
        assert_eq!(granted.refresh_token.as_deref(), Some("r"));
        assert_eq!(granted.subject.as_deref(), Some("o"));
        // RFC 6749's error, Meta's error object, and an error answered with 200.
        for (status, body, expected) in [
            (
                400,
                r#"{"error":"invalid_grant","error_description":"bad code"}"#,
                "invalid_grant: bad code",
            ),
            (
                400,
                r#"{"error":{"message":"Invalid code","type":"OAuthException","code":100}}"#,
                "OAuthException: Invalid code",
            ),
            (
                200,
                r#"{"error":"invalid_request","error_description":"no"}"#,
                "invalid_request: no",
            ),
        ] {
            assert_eq!(
                token_answer(&answer(status, body.as_bytes().to_vec())),
                Err(ConnectFailure::Exchange(expected.to_owned())),
                "{body}"
            );
        }
        assert!(matches!(
            token_answer(&answer(502, b"<html>".to_vec())),
            Err(ConnectFailure::Unavailable(_))
        ));
    }

    proptest! {
        /// Any answer of a token endpoint is read without a panic, and is a grant only with a
        /// non-empty access token and no error.
        #[test]
        fn token_answers_are_total(status in 100u16..600, body in proptest::collection::vec(any::<u8>(), 0..512)) {
            if let Ok(grant) = token_answer(&answer(status, body)) {
                prop_assert!(!grant.access_token.is_empty());
                prop_assert!((200..300).contains(&status));
            }
        }
    }
}
