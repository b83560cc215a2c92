//! Reading what an OAuth 2.0 token endpoint answers (RFC 6749 §5.1 and §5.2), once for every
//! client xf has: the code exchanges of connect links, and the refreshes of the platforms'
//! channels and of Google accounts. Each caller maps a refusal to its own errors.

use std::time::Duration;

use serde::Deserialize;

/// A token endpoint's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TokenReply {
    /// A token: a 2xx with a non-empty `access_token` and no `error`.
    Granted {
        /// The access token.
        access_token: String,
        /// A refresh token, when one was issued (an empty one is none).
        refresh_token: Option<String>,
        /// How long the access token lives, when the endpoint said.
        expires_in: Option<Duration>,
        /// The account it is for, when the endpoint names one (TikTok's `open_id`).
        subject: Option<String>,
    },
    /// A refusal: RFC 6749's `error` (or the `type` of Meta's error object; `HTTP <status>`
    /// when the body names none), with its description when one was given
    /// (`error_description`, a `message`, or Meta's error object's). An `error` is a refusal
    /// whatever the status: TikTok has been seen answering one with a `200`.
    Refused {
        /// The error code.
        code: String,
        /// What the endpoint said about it.
        description: Option<String>,
    },
    /// Neither: a body that is not the endpoint's JSON, or a success without a token.
    Unreadable,
}

impl TokenReply {
    /// Reads an answer of `status` with `body`.
    pub(crate) fn read(status: u16, body: &[u8]) -> TokenReply {
        #[derive(Deserialize)]
        struct Raw {
            access_token: Option<String>,
            refresh_token: Option<String>,
            expires_in: Option<u64>,
            open_id: Option<String>,
            /// RFC 6749's code, or Meta's `{"message", "type", "code"}`.
            error: Option<serde_json::Value>,
            error_description: Option<String>,
            message: Option<String>,
        }
        let success = (200..300).contains(&status);
        let Ok(raw) = serde_json::from_slice::<Raw>(body) else {
            return if success {
                TokenReply::Unreadable
            } else {
                TokenReply::Refused {
                    code: format!("HTTP {status}"),
                    description: None,
                }
            };
        };
        match raw.error {
            None if success => match raw.access_token {
                Some(access_token) if !access_token.is_empty() => TokenReply::Granted {
                    access_token,
                    refresh_token: raw.refresh_token.filter(|t| !t.trim().is_empty()),
                    expires_in: raw.expires_in.map(Duration::from_secs),
                    subject: raw.open_id,
                },
                _ => TokenReply::Unreadable,
            },
            error => {
                let (code, meta_message) = match error {
                    Some(serde_json::Value::String(code)) if !code.is_empty() => (code, None),
                    Some(serde_json::Value::Object(object)) => (
                        object
                            .get("type")
                            .and_then(|t| t.as_str())
                            .unwrap_or("error")
                            .to_owned(),
                        object
                            .get("message")
                            .and_then(|m| m.as_str())
                            .map(str::to_owned),
                    ),
                    _ => (format!("HTTP {status}"), None),
                };
                TokenReply::Refused {
                    code,
                    description: raw.error_description.or(raw.message).or(meta_message),
                }
            }
        }
    }
}

/// A refusal as one line: `code: description`, or the code alone.
pub(crate) fn refusal_message(code: &str, description: Option<&str>) -> String {
    match description {
        Some(description) => format!("{code}: {description}"),
        None => code.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn answers_read_as_the_providers_write_them() {
        assert_eq!(
            TokenReply::read(
                200,
                br#"{"access_token":"a","refresh_token":" ","expires_in":60,"open_id":"o"}"#
            ),
            TokenReply::Granted {
                access_token: "a".into(),
                refresh_token: None,
                expires_in: Some(Duration::from_secs(60)),
                subject: Some("o".into()),
            }
        );
        let refused = |code: &str, description: Option<&str>| TokenReply::Refused {
            code: code.into(),
            description: description.map(str::to_owned),
        };
        for (status, body, expected) in [
            (
                400,
                r#"{"error":"invalid_grant","error_description":"revoked"}"#,
                refused("invalid_grant", Some("revoked")),
            ),
            (
                400,
                r#"{"error":{"message":"Invalid code","type":"OAuthException","code":100}}"#,
                refused("OAuthException", Some("Invalid code")),
            ),
            (
                200,
                r#"{"error":"invalid_request","message":"no"}"#,
                refused("invalid_request", Some("no")),
            ),
            (503, "<html>busy</html>", refused("HTTP 503", None)),
            (401, r#"{"error":""}"#, refused("HTTP 401", None)),
            (200, r#"{"access_token":""}"#, TokenReply::Unreadable),
            (200, "not json", TokenReply::Unreadable),
        ] {
            assert_eq!(
                TokenReply::read(status, body.as_bytes()),
                expected,
                "{body}"
            );
        }
    }

    proptest! {
        /// Whatever an endpoint sends, reading it answers, and a grant has a token.
        #[test]
        fn any_answer_is_read(status in 100u16..600, body in proptest::collection::vec(any::<u8>(), 0..256)) {
            if let TokenReply::Granted { access_token, .. } = TokenReply::read(status, &body) {
                prop_assert!(!access_token.is_empty());
                prop_assert!((200..300).contains(&status));
            }
        }

        /// A JSON answer with an `error` of any shape is never a grant.
        #[test]
        fn an_error_is_never_a_grant(status in 100u16..600, error in "\\PC{0,20}", token in "\\PC{0,20}") {
            let body = serde_json::json!({"access_token": token, "error": error}).to_string();
            let refused = matches!(
                TokenReply::read(status, body.as_bytes()),
                TokenReply::Refused { .. }
            );
            prop_assert!(refused);
        }
    }
}
