//! The platforms' clients over HTTPS, each following the platform's documented flow, with
//! base URLs a host (or a test) can point elsewhere. See each module for the flow.

pub mod instagram;
pub mod linkedin;
pub mod pinterest;
pub mod tiktok;
pub mod youtube;

use std::time::Duration;

use super::inspect::RangeRead;
use super::publish::{PublishError, TokenGrant};
use crate::net::token::{refusal_message, TokenReply};
use crate::net::{exchange, Answer, ExchangeError};

/// A host's app registration on a platform: what refreshes its channels' tokens.
#[derive(Clone, PartialEq, Eq)]
pub struct OAuthApp {
    /// The client id (TikTok's client key).
    pub client_id: String,
    /// The client secret (never shown by `Debug`).
    pub client_secret: String,
}

impl OAuthApp {
    /// The app of this id and secret.
    pub fn new(client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        OAuthApp {
            client_id: client_id.into(),
            client_secret: client_secret.into(),
        }
    }
}

impl OAuthApp {
    /// The standard refresh-token grant (RFC 6749, section 6) at `token_url`, the app's
    /// credentials in the form body: how Google (YouTube) and LinkedIn refresh.
    pub(crate) async fn refresh_in_body(
        &self,
        client: &reqwest::Client,
        token_url: &str,
        refresh_token: &str,
    ) -> Result<TokenGrant, PublishError> {
        let request = client.post(token_url).form(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", self.client_id.as_str()),
            ("client_secret", self.client_secret.as_str()),
        ]);
        token_grant(&send(request).await?)
    }
}

impl std::fmt::Debug for OAuthApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthApp")
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .finish()
    }
}

/// Longest wait for one answer, by default (uploads of a chunk included).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Answers are read up to this size.
const MAX_ANSWER_BYTES: usize = 4 << 20;

/// Sends a request and reads the answer; no answer is [`PublishError::Unavailable`].
pub(crate) async fn send(request: reqwest::RequestBuilder) -> Result<Answer, PublishError> {
    exchange(request, MAX_ANSWER_BYTES)
        .await
        .map_err(|error| match error {
            ExchangeError::Unreachable(why) => {
                PublishError::Unavailable(format!("the platform did not answer: {why}"))
            }
            too_large => PublishError::Unavailable(too_large.to_string()),
        })
}

/// `len` bytes of the media from `offset` (fewer only at its end).
pub(crate) async fn read(
    file: &dyn RangeRead,
    offset: u64,
    len: u64,
) -> Result<Vec<u8>, PublishError> {
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    file.read_at(offset, len)
        .await
        .map_err(|e| PublishError::Unavailable(format!("reading the media file: {e}")))
}

/// The JSON of an answer, or [`PublishError::Unavailable`] naming what was expected.
pub(crate) fn json<T: serde::de::DeserializeOwned>(
    answer: &Answer,
    what: &str,
) -> Result<T, PublishError> {
    serde_json::from_slice(&answer.body).map_err(|e| {
        PublishError::Unavailable(format!(
            "{what} answered HTTP {} with an unexpected body: {e}",
            answer.status
        ))
    })
}

/// A refresh-token grant's answer: a fresh token, or the error it is.
/// `invalid_grant` (revoked or expired) disconnects the channel.
pub(crate) fn token_grant(answer: &Answer) -> Result<TokenGrant, PublishError> {
    let (code, description) = match TokenReply::read(answer.status, &answer.body) {
        TokenReply::Granted {
            access_token,
            refresh_token,
            expires_in,
            ..
        } => {
            return Ok(TokenGrant {
                access_token,
                expires_in,
                refresh_token,
            })
        }
        TokenReply::Unreadable => {
            return Err(PublishError::Unavailable(
                "the token endpoint's answer has no access_token".into(),
            ))
        }
        TokenReply::Refused { code, description } => (code, description),
    };
    let message = refusal_message(&code, description.as_deref());
    // A refusal answered with a success status is judged as a 400.
    let status = if answer.is_success() {
        400
    } else {
        answer.status
    };
    Err(match (status, code.as_str()) {
        (_, "invalid_grant") => PublishError::Disconnected(message),
        (429, _) => PublishError::RateLimited {
            message,
            retry_after: answer.retry_after,
        },
        (400..=499, _) => PublishError::rejected("token_refresh_refused", message),
        _ => PublishError::Unavailable(message),
    })
}

/// The usual mapping of a failed call by status: 401 a token to refresh, 429 a rate limit,
/// 5xx an outage, another 4xx a refusal with the platform's `code` and `message`.
pub(crate) fn by_status(answer: &Answer, code: String, message: String) -> PublishError {
    match answer.status {
        401 => PublishError::Unauthorized(message),
        429 => PublishError::RateLimited {
            message: format!("{code}: {message}"),
            retry_after: answer.retry_after,
        },
        400..=499 => PublishError::Rejected { code, message },
        _ => PublishError::Unavailable(format!("HTTP {}: {message}", answer.status)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: serde_json::Value) -> Answer {
        Answer {
            status,
            retry_after: None,
            headers: reqwest::header::HeaderMap::new(),
            body: body.to_string().into_bytes(),
        }
    }

    #[test]
    fn a_token_answer_with_an_error_is_one_whatever_its_status() {
        let revoked = serde_json::json!({"error": "invalid_grant", "error_description": "revoked", "log_id": "x"});
        for status in [200, 400] {
            assert!(matches!(
                token_grant(&answer(status, revoked.clone())),
                Err(PublishError::Disconnected(_))
            ));
        }
        let fresh = token_grant(&answer(
            200,
            serde_json::json!({"access_token": "a", "expires_in": 60, "refresh_token": "r"}),
        ))
        .unwrap();
        assert_eq!(fresh.access_token, "a");
        assert_eq!(fresh.refresh_token.as_deref(), Some("r"));
        assert!(matches!(
            token_grant(&answer(200, serde_json::json!({}))),
            Err(PublishError::Unavailable(_))
        ));
    }
}
