//! The HTTP side of connecting, shared by the providers' connectors: the authorization URL,
//! the authorization-code grant (RFC 6749 §4.1.3) and identity reads, each answer bounded.

use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::{ConnectFailure, Grant};
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

/// How the app proves itself at the token endpoint.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ClientAuth<'a> {
    /// `client_id` and `client_secret` in the form (Google, LinkedIn).
    Body {
        id_name: &'a str,
        id: &'a str,
        secret: &'a str,
    },
}

/// The authorization-code grant at `token_url`: `form` plus the client's credentials.
pub(crate) async fn exchange_code(
    client: &reqwest::Client,
    token_url: &str,
    auth: ClientAuth<'_>,
    form: &[(&str, &str)],
) -> Result<Grant, ConnectFailure> {
    let mut fields: Vec<(&str, &str)> = form.to_vec();
    let request = client.post(token_url);
    match auth {
        ClientAuth::Body {
            id_name,
            id,
            secret,
        } => {
            fields.push((id_name, id));
            fields.push(("client_secret", secret));
        }
    }
    let answer = send(request.form(&fields)).await?;
    token_answer(&answer)
}

/// A token endpoint's answer (RFC 6749 §5.1 and §5.2) as a grant or the failure it is.
pub(crate) fn token_answer(answer: &Answer) -> Result<Grant, ConnectFailure> {
    #[derive(Deserialize)]
    struct TokenAnswer {
        access_token: Option<String>,
        refresh_token: Option<String>,
        expires_in: Option<u64>,
        open_id: Option<String>,
        error: Option<String>,
        error_description: Option<String>,
        message: Option<String>,
    }
    let parsed: Option<TokenAnswer> = serde_json::from_slice(&answer.body).ok();
    match parsed {
        Some(TokenAnswer {
            access_token: Some(access_token),
            refresh_token,
            expires_in,
            open_id,
            error: None,
            ..
        }) if answer.is_success() && !access_token.is_empty() => Ok(Grant {
            access_token,
            refresh_token: refresh_token.filter(|t| !t.trim().is_empty()),
            expires_in: expires_in.map(std::time::Duration::from_secs),
            subject: open_id,
        }),
        Some(refused) if answer.status < 500 => {
            let code = refused
                .error
                .unwrap_or_else(|| format!("HTTP {}", answer.status));
            Err(ConnectFailure::Exchange(
                match refused.error_description.or(refused.message) {
                    Some(description) => format!("{code}: {description}"),
                    None => code,
                },
            ))
        }
        _ => Err(ConnectFailure::Unavailable(format!(
            "the token endpoint answered HTTP {} without a token",
            answer.status
        ))),
    }
}

/// `GET url` with the bearer `token`, as JSON.
pub(crate) async fn get_json<T: DeserializeOwned>(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    what: &str,
) -> Result<T, ConnectFailure> {
    let answer = send(client.get(url).bearer_auth(token)).await?;
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

async fn send(request: reqwest::RequestBuilder) -> Result<Answer, ConnectFailure> {
    exchange(request, MAX_ANSWER_BYTES)
        .await
        .map_err(|error| ConnectFailure::Unavailable(error.to_string()))
}

/// Google's authorization URL (for YouTube and Search Console alike): offline access with
/// consent asked every time (a refresh token is only issued on consent), PKCE `S256` named
/// (Google's default method is `plain`).
pub(crate) fn google_authorize_url(
    endpoint: &str,
    client_id: &str,
    scopes: &str,
    request: &super::Authorize<'_>,
) -> String {
    authorize_url(
        endpoint,
        &[
            ("client_id", client_id),
            ("redirect_uri", request.redirect_uri),
            ("response_type", "code"),
            ("scope", scopes),
            ("access_type", "offline"),
            ("prompt", "consent"),
            ("state", request.state),
            ("code_challenge", request.code_challenge),
            ("code_challenge_method", "S256"),
        ],
    )
}

/// Google's authorization-code grant: the client's credentials in the form, with the PKCE
/// verifier.
pub(crate) async fn google_exchange(
    client: &reqwest::Client,
    token_url: &str,
    client_id: &str,
    client_secret: &str,
    code: &str,
    redirect_uri: &str,
    verifier: &str,
) -> Result<Grant, ConnectFailure> {
    exchange_code(
        client,
        token_url,
        ClientAuth::Body {
            id_name: "client_id",
            id: client_id,
            secret: client_secret,
        },
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
        ],
    )
    .await
}
