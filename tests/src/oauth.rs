//! The authorization side of an OAuth 2.0 provider (RFC 6749 §4.1, PKCE RFC 7636), shared by
//! the stand-ins of Google and the platforms: an authorization endpoint that checks the
//! request as the provider documents it and "consents" as the test said (or declines), and
//! the redemption of its codes at the token endpoint, each code once, with its redirect URI
//! and its PKCE verifier checked.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

use axum::response::{IntoResponse, Response};
use base64::Engine;
use http::{header, StatusCode};
use sha2::Digest;

/// How a provider wants PKCE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pkce {
    /// `code_challenge` with `code_challenge_method=S256` must be sent (what xf sends to
    /// providers that support it).
    S256,
    /// The provider has no PKCE: a challenge is an error.
    Unsupported,
}

/// What an authorization request must carry, as the provider documents it.
#[derive(Debug, Clone)]
pub struct Expect<'a> {
    /// The name of the client id parameter (`client_id`, TikTok's `client_key`).
    pub client_param: &'a str,
    /// The client id.
    pub client_id: &'a str,
    /// Scopes that must all be asked for.
    pub scopes: &'a [&'a str],
    /// What separates scopes in `scope` (a space, or a comma).
    pub separator: char,
    /// PKCE.
    pub pkce: Pkce,
    /// Other parameters that must have these values (`access_type=offline`, ...).
    pub fixed: &'a [(&'a str, &'a str)],
    /// The `error` a user who declines comes back with (`access_denied`; LinkedIn's
    /// `user_cancelled_authorize`).
    pub denial: &'a str,
}

/// What the next user at the authorization page does.
#[derive(Debug, Clone)]
enum Decision {
    Consent(String),
    Deny,
}

/// A code handed out, until it is redeemed.
#[derive(Debug, Clone)]
struct Issued {
    client_id: String,
    redirect_uri: String,
    challenge: Option<String>,
    subject: String,
}

/// An authorization server's state: who consents next, and the codes out.
#[derive(Debug, Default)]
pub struct AuthorizationServer {
    decisions: Mutex<VecDeque<Decision>>,
    codes: Mutex<HashMap<String, Issued>>,
    requests: Mutex<Vec<BTreeMap<String, String>>>,
    issued: Mutex<u64>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl AuthorizationServer {
    /// The next user consents, as `subject` (whatever the stand-in knows the account by).
    pub fn consent_as(&self, subject: &str) {
        lock(&self.decisions).push_back(Decision::Consent(subject.to_owned()));
    }

    /// The next user declines.
    pub fn deny_next(&self) {
        lock(&self.decisions).push_back(Decision::Deny);
    }

    /// Every authorization request so far, its query parameters decoded.
    pub fn requests(&self) -> Vec<BTreeMap<String, String>> {
        lock(&self.requests).clone()
    }

    /// The authorization endpoint: a `302` to the redirect URI with `code` and `state` (or
    /// `error=access_denied` when the user declines), or a `400` page for a request that
    /// breaks `expect` (as providers show an error page rather than redirect then).
    pub fn authorize(&self, query: &str, expect: &Expect<'_>) -> Response {
        let params: BTreeMap<String, String> = form_urlencoded::parse(query.as_bytes())
            .map(|(name, value)| (name.into_owned(), value.into_owned()))
            .collect();
        lock(&self.requests).push(params.clone());
        let param = |name: &str| params.get(name).map(String::as_str);
        let problem = if param(expect.client_param) != Some(expect.client_id) {
            Some(format!("{} is not the app's", expect.client_param))
        } else if param("response_type") != Some("code") {
            Some("response_type must be code".to_owned())
        } else if param("redirect_uri").is_none_or(|uri| url::Url::parse(uri).is_err()) {
            Some("redirect_uri must be an absolute URL".to_owned())
        } else if param("state").is_none_or(str::is_empty) {
            Some("state is required".to_owned())
        } else if let Some(missing) = expect.scopes.iter().find(|scope| {
            !param("scope")
                .unwrap_or_default()
                .split(expect.separator)
                .any(|given| given == **scope)
        }) {
            Some(format!(
                "scope must include {missing} (separated by {:?})",
                expect.separator
            ))
        } else if let Some((name, value)) = expect
            .fixed
            .iter()
            .find(|(name, value)| param(name) != Some(value))
        {
            Some(format!("{name} must be {value}"))
        } else {
            match (expect.pkce, param("code_challenge")) {
                (Pkce::S256, None) => Some("code_challenge is required".to_owned()),
                (Pkce::S256, Some(_)) if param("code_challenge_method") != Some("S256") => {
                    Some("code_challenge_method must be S256".to_owned())
                }
                (Pkce::Unsupported, Some(_)) => Some("code_challenge is not supported".to_owned()),
                _ => None,
            }
        };
        if let Some(problem) = problem {
            return (
                StatusCode::BAD_REQUEST,
                format!("Error 400: invalid_request. {problem}"),
            )
                .into_response();
        }
        let redirect_uri = params["redirect_uri"].clone();
        let state = params["state"].clone();
        let mut back = url::Url::parse(&redirect_uri).expect("checked above");
        match lock(&self.decisions).pop_front() {
            None | Some(Decision::Deny) => {
                back.query_pairs_mut()
                    .append_pair("error", expect.denial)
                    .append_pair("error_description", "The user denied the request")
                    .append_pair("state", &state);
            }
            Some(Decision::Consent(subject)) => {
                let code = {
                    let mut issued = lock(&self.issued);
                    *issued += 1;
                    format!("code-{}-{}", *issued, uuid::Uuid::new_v4().simple())
                };
                lock(&self.codes).insert(
                    code.clone(),
                    Issued {
                        client_id: expect.client_id.to_owned(),
                        redirect_uri,
                        challenge: params.get("code_challenge").cloned(),
                        subject,
                    },
                );
                back.query_pairs_mut()
                    .append_pair("code", &code)
                    .append_pair("state", &state);
            }
        }
        (StatusCode::FOUND, [(header::LOCATION, back.to_string())]).into_response()
    }

    /// Redeems a code at the token endpoint (`grant_type=authorization_code`, already
    /// checked, and the client authenticated as `client_id`): the subject who consented, or
    /// the OAuth error `(error, description)`. A code works once.
    pub fn redeem(
        &self,
        form: &BTreeMap<String, String>,
        client_id: &str,
    ) -> Result<String, (&'static str, String)> {
        let field = |name: &str| form.get(name).map(String::as_str).unwrap_or_default();
        let Some(issued) = lock(&self.codes).remove(field("code")) else {
            return Err((
                "invalid_grant",
                "the code is unknown, or was used already".into(),
            ));
        };
        if issued.client_id != client_id {
            return Err((
                "invalid_grant",
                "the code was issued to another client".into(),
            ));
        }
        if field("redirect_uri") != issued.redirect_uri {
            return Err((
                "invalid_grant",
                "redirect_uri differs from the authorization request's".into(),
            ));
        }
        if let Some(challenge) = &issued.challenge {
            let verifier = field("code_verifier");
            let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(sha2::Sha256::digest(verifier.as_bytes()));
            if verifier.len() < 43 || verifier.len() > 128 || &computed != challenge {
                return Err(("invalid_grant", "code_verifier does not match".into()));
            }
        }
        Ok(issued.subject)
    }
}
