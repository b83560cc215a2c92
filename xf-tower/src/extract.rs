//! Request parsing: the authenticated caller, query parameters, and JSON bodies. Every
//! failure is a core [`Error`] (400 or 413 in the error envelope), never axum's plain-text
//! rejections.

use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts, Request};
use bytes::Bytes;
use http::request::Parts;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde::de::DeserializeOwned;
use xf_core::api::PageParams;
use xf_core::error::FieldError;
use xf_core::{Caller, Error, Fingerprint};

use crate::error::ApiError;

/// Largest JSON request body: 1 MiB.
pub const MAX_JSON_BODY: usize = 1024 * 1024;

/// The authenticated caller, put in the request's extensions by the auth middleware.
#[derive(Debug)]
pub struct Authed(pub Caller);

impl<S: Send + Sync> FromRequestParts<S> for Authed {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .remove::<Caller>()
            .map(Authed)
            .ok_or_else(|| ApiError(Error::Internal("route is missing the auth layer".into())))
    }
}

/// The one path parameter of a route (an id or a token). A parameter that is not valid
/// percent-encoded UTF-8 is a 400 in the envelope rather than axum's plain-text rejection.
#[derive(Debug)]
pub struct PathParam(pub String);

impl<S: Send + Sync> FromRequestParts<S> for PathParam {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<String>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(value)| PathParam(value))
            .map_err(|rejection| ApiError(Error::invalid("path", rejection.body_text())))
    }
}

/// Query parameters by name (the first occurrence wins; unknown ones are ignored).
#[derive(Debug, Default)]
pub struct Query(Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for Query {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let raw = parts.uri.query().unwrap_or("");
        serde_urlencoded::from_str(raw).map(Query).map_err(|_| {
            ApiError(Error::invalid(
                "query",
                "is not a valid URL-encoded query string",
            ))
        })
    }
}

impl Query {
    /// The value of `name`, if sent.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The value of `name` as an owned string.
    pub fn string(&self, name: &str) -> Option<String> {
        self.get(name).map(str::to_owned)
    }

    /// The integer value of `name`; a value that is not an integer is a 400.
    pub fn integer(&self, name: &str) -> Result<Option<i64>, Error> {
        self.get(name)
            .map(|value| {
                value
                    .trim()
                    .parse::<i64>()
                    .map_err(|_| Error::invalid(name, "must be an integer"))
            })
            .transpose()
    }

    /// `limit` and `cursor`.
    pub fn page(&self) -> Result<PageParams, Error> {
        Ok(PageParams {
            limit: self.integer("limit")?,
            cursor: self.string("cursor"),
        })
    }
}

/// Reads a body of at most `limit` bytes.
pub async fn read_body(body: Body, limit: usize) -> Result<Bytes, Error> {
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.downcast_ref::<LengthLimitError>().is_some() => {
            Err(Error::PayloadTooLarge {
                limit_bytes: limit as u64,
            })
        }
        Err(_) => Err(Error::invalid("body", "could not be read")),
    }
}

/// Parses a JSON body into `T`, naming the offending field on failure.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    // serde would also read a struct from a JSON array; the API only takes objects.
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        None => return Err(Error::invalid("body", "a JSON object is required")),
        Some(b'{') => {}
        Some(_) => return Err(Error::invalid("body", "must be a JSON object")),
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        let message = inner.to_string();
        if inner.is_syntax() || inner.is_eof() {
            return Error::invalid("body", format!("is not valid JSON ({message})"));
        }
        let field = match message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next())
        {
            Some(missing) if path == "." => missing.to_owned(),
            Some(missing) => format!("{path}.{missing}"),
            None if path == "." => "body".to_owned(),
            None => path,
        };
        // serde's position suffix means nothing to a client that sent a compact body.
        let message = message
            .split(" at line ")
            .next()
            .unwrap_or(&message)
            .to_owned();
        Error::invalid_fields(vec![FieldError { field, message }])
    })?;
    deserializer
        .end()
        .map_err(|_| Error::invalid("body", "has trailing characters after the JSON value"))?;
    Ok(value)
}

/// A write request: its idempotency key, its fingerprint and its body (at most 1 MiB).
#[derive(Debug)]
pub struct Write {
    /// `Idempotency-Key`, if sent.
    pub idempotency_key: Option<String>,
    /// Method, path and body, hashed.
    pub fingerprint: Fingerprint,
    /// The raw body.
    pub body: Bytes,
}

impl Write {
    /// The body as `T`.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, Error> {
        parse_json(&self.body)
    }

    /// The body as `T`, or `T::default()` when the body is empty.
    pub fn json_or_default<T: DeserializeOwned + Default>(&self) -> Result<T, Error> {
        if self.body.iter().all(u8::is_ascii_whitespace) {
            Ok(T::default())
        } else {
            parse_json(&self.body)
        }
    }
}

impl<S: Send + Sync> FromRequest<S> for Write {
    type Rejection = ApiError;

    async fn from_request(request: Request, _: &S) -> Result<Self, Self::Rejection> {
        let (parts, body) = request.into_parts();
        let idempotency_key = match parts.headers.get("idempotency-key") {
            None => None,
            Some(value) => Some(
                value
                    .to_str()
                    .map_err(|_| Error::invalid("Idempotency-Key", "must be visible ASCII"))?
                    .to_owned(),
            ),
        };
        let body = read_body(body, MAX_JSON_BODY).await?;
        let fingerprint = Fingerprint::of(parts.method.as_str(), parts.uri.path(), &body);
        Ok(Write {
            idempotency_key,
            fingerprint,
            body,
        })
    }
}

/// A JSON body of at most 1 MiB parsed into `T` (for the admin API).
#[derive(Debug)]
pub struct Json<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, _: &S) -> Result<Self, Self::Rejection> {
        let body = read_body(request.into_body(), MAX_JSON_BODY).await?;
        Ok(Json(parse_json(&body)?))
    }
}

/// The token of `Authorization: Bearer <token>`, if well formed.
pub fn bearer(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}
