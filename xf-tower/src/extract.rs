//! Request parsing: the authenticated caller, query parameters, and JSON bodies. Every
//! failure is a core [`Error`] (400 or 413 in the error envelope), never axum's plain-text
//! rejections.

use axum::extract::{FromRequest, FromRequestParts, Request};
use bytes::Bytes;
use http::request::Parts;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde::de::DeserializeOwned;
use utoipa::IntoParams;
use xf_core::error::FieldError;
use xf_core::ids::{
    ApiKeyId, ChannelId, Id, IssueId, JobId, MediaId, OrganizationId, PropertyId, UploadId,
    WebhookId,
};
use xf_core::params::IdempotencyKey;
use xf_core::plans::Entitlement;
use xf_core::{Error, Fingerprint};

use crate::error::ApiError;
use crate::Body;

/// Largest JSON request body: 1 MiB.
pub const MAX_JSON_BODY: usize = 1024 * 1024;

/// An extractor of the caller whose key `$key` finds and whose plan includes `$entitlement`,
/// counted against its rate limits ([`admit`](crate::middleware::admit)); its errors are
/// answered in `$rejection`'s envelope.
macro_rules! authed {
    ($(#[$doc:meta])* $name:ident, $key:expr, $entitlement:expr, $rejection:ident) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name(pub xf_core::Caller);

        impl<S: Send + Sync> axum::extract::FromRequestParts<S> for $name
        where
            xf_core::Xf: axum::extract::FromRef<S>,
        {
            type Rejection = $rejection;

            async fn from_request_parts(
                parts: &mut http::request::Parts,
                state: &S,
            ) -> Result<Self, Self::Rejection> {
                let xf = <xf_core::Xf as axum::extract::FromRef<S>>::from_ref(state);
                crate::middleware::admit(&xf, parts, $key, $entitlement)
                    .await
                    .map($name)
                    .map_err(<$rejection>::from)
            }
        }
    };
}
pub(crate) use authed;

authed!(
    /// The developer API's caller: the key of `Authorization: Bearer`, whose plan includes the
    /// developer API, counted against its rate limits ([`admit`](crate::middleware::admit)).
    /// Every handler of the developer API takes it, as its first argument after the state:
    /// nothing else of the request is read before the key is known and counted, and the
    /// answer, whatever it is, carries the remaining-request headers (a `401`, `403` or `503`
    /// of the key's own check does not).
    Authed,
    bearer,
    Entitlement::DeveloperApi,
    ApiError
);

authed!(
    /// [`Authed`] for `/webhooks`: the plan needs either API (a media-only organization
    /// receives media events), and the key may also come in the media API's `X-API-Key`.
    WebhooksAuthed,
    api_key,
    Entitlement::EitherApi,
    ApiError
);

/// The one path parameter of a route, parsed once, here: into the id the route names
/// (`PathParam<PropertyId>`), or kept as text (`PathParam`, a report's token). A parameter
/// that is not valid percent-encoded UTF-8 is a 400 in the envelope rather than axum's
/// plain-text rejection; an id of the wrong form, or text with a control character (a NUL,
/// say), names nothing and is a 404 before the core sees it.
#[derive(Debug)]
pub struct PathParam<T = String>(pub T);

/// What a path segment may be parsed into.
pub trait FromSegment: Sized {
    /// The value `segment` names; `Err` when it names nothing.
    fn from_segment(segment: String) -> Result<Self, Error>;
}

impl FromSegment for String {
    fn from_segment(segment: String) -> Result<Self, Error> {
        if segment.chars().any(char::is_control) {
            return Err(Error::NotFound("resource"));
        }
        Ok(segment)
    }
}

/// A platform's name (`youtube`, ...); another name is a 404.
impl FromSegment for xf_core::media::Platform {
    fn from_segment(segment: String) -> Result<Self, Error> {
        xf_core::media::Platform::parse(&segment).ok_or(Error::NotFound("platform"))
    }
}

/// Every id type is a segment: one of the wrong form is its kind's 404.
macro_rules! id_segments {
    ($($id:ty),* $(,)?) => {$(
        impl FromSegment for $id {
            fn from_segment(segment: String) -> Result<Self, Error> {
                <$id>::parse(&segment).map_err(|_| Error::NotFound(<$id as Id>::RESOURCE))
            }
        }
    )*};
}

id_segments!(
    OrganizationId,
    ApiKeyId,
    PropertyId,
    JobId,
    IssueId,
    WebhookId,
    MediaId,
    UploadId,
    ChannelId,
);

impl<T: FromSegment> PathParam<T> {
    /// The segment of `parts`, parsed; the error as the core's.
    pub async fn read<S: Send + Sync>(parts: &mut Parts, state: &S) -> Result<Self, Error> {
        let axum::extract::Path(value) =
            axum::extract::Path::<String>::from_request_parts(parts, state)
                .await
                .map_err(|rejection| Error::invalid("path", rejection.body_text()))?;
        T::from_segment(value).map(PathParam)
    }
}

impl<S: Send + Sync, T: FromSegment> FromRequestParts<S> for PathParam<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Self::read(parts, state).await.map_err(ApiError::from)
    }
}

/// Two path segments, each parsed as [`PathParam`] parses one (the first's 404 first).
#[derive(Debug)]
pub struct PathParams<A, B>(pub A, pub B);

impl<S: Send + Sync, A: FromSegment, B: FromSegment> FromRequestParts<S> for PathParams<A, B> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let axum::extract::Path((first, second)) =
            axum::extract::Path::<(String, String)>::from_request_parts(parts, state)
                .await
                .map_err(|rejection| {
                    ApiError::from(Error::invalid("path", rejection.body_text()))
                })?;
        let first = A::from_segment(first).map_err(ApiError::from)?;
        let second = B::from_segment(second).map_err(ApiError::from)?;
        Ok(PathParams(first, second))
    }
}

/// Query parameters parsed into `T`, whose `IntoParams` derive documents the same fields: the
/// struct is the one statement of the parameters' names and rules. Unknown parameters are
/// ignored; a known one with a bad value (an empty one included) is a 400 naming it, and so
/// is a parameter sent twice.
#[derive(Debug)]
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let raw = parts.uri.query().unwrap_or("");
        let pairs = form_urlencoded::parse(raw.as_bytes());
        // A NUL (`%00`) in a parameter names nothing a client means; a store could not
        // compare it either.
        if raw.contains("%00") {
            if let Some((name, _)) = pairs
                .clone()
                .find(|(n, v)| n.contains('\0') || v.contains('\0'))
            {
                return Err(ApiError::from(Error::invalid(
                    xf_core::text::without_nul(&name).into_owned(),
                    "must not contain a NUL character",
                )));
            }
        }
        let deserializer = serde_urlencoded::Deserializer::new(pairs);
        serde_path_to_error::deserialize(deserializer)
            .map(Query)
            .map_err(|error| {
                let field = error.path().to_string();
                let field = if field == "." {
                    "query".to_owned()
                } else {
                    field
                };
                let message = error.into_inner().to_string();
                ApiError::from(Error::invalid_fields(vec![FieldError { field, message }]))
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
        Err(error) => match crate::body_rate::body_error(&*error) {
            xf_core::BodyError::TooSlow(message) => Err(Error::RequestTimeout(message)),
            xf_core::BodyError::Broken(_) => Err(Error::invalid("body", "could not be read")),
        },
    }
}

/// Parses a JSON body into `T`, naming the offending field on failure. A string holding
/// U+0000 is refused wherever it is, naming its field: a client's text is never rewritten,
/// and PostgreSQL could not keep it.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    // serde would also read a struct from a JSON array; the API only takes objects.
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        None => return Err(Error::invalid("body", "a JSON object is required")),
        Some(b'{') => {}
        Some(_) => return Err(Error::invalid("body", "must be a JSON object")),
    }
    // JSON writes U+0000 only as this escape, so a body without it holds none (one with an
    // escaped backslash before `u0000` takes the strict read and passes it).
    if bytes.windows(6).any(|window| window == b"\\u0000") {
        if let Err(refused @ xf_core::json::StrictJsonError::Field { .. }) =
            xf_core::json::parse_strict(bytes)
        {
            return Err(refused.into_error("body", false));
        }
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

/// The body of a write (at most 1 MiB) and the request's fingerprint (method, path and body,
/// hashed; test-mode responses derive their ids from it).
#[derive(Debug)]
pub struct Sent {
    /// Method, path and body, hashed.
    pub fingerprint: Fingerprint,
    /// The raw body.
    pub body: Bytes,
}

impl Sent {
    /// The body as `T`.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, Error> {
        parse_json(&self.body)
    }

    /// The body as a JSON object read strictly ([`xf_core::json`]): a key given twice, at any
    /// depth, is a 400 naming it, as U+0000 is.
    pub fn strict_json(&self) -> Result<serde_json::Value, Error> {
        match xf_core::json::parse_strict(&self.body) {
            Ok(value @ serde_json::Value::Object(_)) => Ok(value),
            Ok(_) => Err(Error::invalid("body", "must be a JSON object")),
            Err(refused) => Err(refused.into_error("body", false)),
        }
    }

    /// The body as `T`, or `T::default()` when there is no body: none at all, or JSON `null`.
    /// White space alone is not JSON, so it is a 400 like any other malformed body.
    pub fn json_or_default<T: DeserializeOwned + Default>(&self) -> Result<T, Error> {
        if self.body.is_empty() || self.body.trim_ascii() == b"null" {
            Ok(T::default())
        } else {
            parse_json(&self.body)
        }
    }

    async fn read(parts: &Parts, body: Body) -> Result<Self, Error> {
        let body = read_body(body, MAX_JSON_BODY).await?;
        let path = crate::request_id::service_path(parts.uri.path());
        let fingerprint = Fingerprint::of(parts.method.as_str(), path, &body);
        Ok(Sent { fingerprint, body })
    }
}

impl<S: Send + Sync> FromRequest<S> for Sent {
    type Rejection = ApiError;

    async fn from_request(request: Request, _: &S) -> Result<Self, Self::Rejection> {
        let (parts, body) = request.into_parts();
        Ok(Sent::read(&parts, body).await?)
    }
}

/// A write that accepts an `Idempotency-Key`: the key, and what [`Sent`] reads (reachable
/// through `Deref`: `write.fingerprint`, `write.json()`).
#[derive(Debug)]
pub struct Write {
    /// `Idempotency-Key`, if sent.
    pub idempotency: IdempotencyHeader,
    /// The body and the fingerprint.
    pub sent: Sent,
}

impl std::ops::Deref for Write {
    type Target = Sent;

    fn deref(&self) -> &Sent {
        &self.sent
    }
}

impl<S: Send + Sync> FromRequest<S> for Write {
    type Rejection = ApiError;

    async fn from_request(request: Request, _: &S) -> Result<Self, Self::Rejection> {
        let (parts, body) = request.into_parts();
        let idempotency_key = idempotency_key(&parts.headers)?;
        Ok(Write {
            idempotency: IdempotencyHeader { idempotency_key },
            sent: Sent::read(&parts, body).await?,
        })
    }
}

/// The request's `Idempotency-Key`, if it sends one (a malformed one is a 400).
pub fn idempotency_key(headers: &http::HeaderMap) -> Result<Option<IdempotencyKey>, Error> {
    headers
        .get("idempotency-key")
        .map(|value| {
            value
                .to_str()
                .ok()
                .and_then(|text| IdempotencyKey::parse(text).ok())
                .ok_or_else(|| {
                    Error::invalid(
                        "Idempotency-Key",
                        format!("must be {}", IdempotencyKey::EXPECTS),
                    )
                })
        })
        .transpose()
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
    // `to_str` leaves visible ASCII, spaces and tabs only, so ASCII trimming is all there is.
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let value = value.trim_ascii();
    let scheme = value.get(..6)?;
    let token = value.strip_prefix(scheme)?.strip_prefix(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim_ascii())
}

/// The key of a media API (or `/webhooks`) request: `X-API-Key`, else `Authorization:
/// Bearer`.
pub fn api_key(headers: &http::HeaderMap) -> Option<&str> {
    headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .or_else(|| bearer(headers))
}

/// The optional `Idempotency-Key` header of writes that create things, as the
/// [`Write`] extractor reads it and the document states it.
#[derive(Debug, Default, IntoParams)]
#[into_params(parameter_in = Header)]
pub struct IdempotencyHeader {
    /// Retained 24 hours. The same key with the same request replays the first response with
    /// `Idempotent-Replayed: true`; with another request it is a 422.
    #[param(rename = "Idempotency-Key", inline, nullable = false)]
    pub idempotency_key: Option<IdempotencyKey>,
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn headers_with(authorization: &[u8]) -> Option<http::HeaderMap> {
        let value = http::HeaderValue::from_bytes(authorization).ok()?;
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::AUTHORIZATION, value);
        Some(headers)
    }

    fn bearer_of(authorization: &str) -> Option<String> {
        bearer(&headers_with(authorization.as_bytes()).unwrap()).map(str::to_owned)
    }

    #[test]
    fn a_bearer_token_is_read_in_any_case_with_spaces_around() {
        assert_eq!(bearer_of("Bearer xf_live_a").as_deref(), Some("xf_live_a"));
        assert_eq!(bearer_of("bearer xf_live_a").as_deref(), Some("xf_live_a"));
        assert_eq!(
            bearer_of("  BEARER   xf_live_a \t").as_deref(),
            Some("xf_live_a")
        );
        assert_eq!(bearer_of("Bearer a b").as_deref(), Some("a b"));
        for refused in [
            "",
            "Bearer",
            "Bearer   ",
            "Bearerxf_live_a",
            "Basic xf_live_a",
            "Bearer\txf",
        ] {
            assert_eq!(bearer_of(refused), None, "{refused:?}");
        }
        assert_eq!(bearer(&headers_with(b"Bearer caf\xc3\xa9").unwrap()), None);
        assert_eq!(bearer(&http::HeaderMap::new()), None);
    }

    proptest! {
        /// Any header value reads as what `Bearer <token>` means: the scheme in any case, one
        /// space, the token without the spaces and tabs around it; nothing else has a token.
        #[test]
        fn any_authorization_reads_as_its_bearer_token_or_none(
            value in proptest::collection::vec(
                prop_oneof![
                    Just(b' '), Just(b'\t'), Just(b'b'), Just(b'B'), Just(b'r'), Just(b'e'),
                    Just(b'a'), Just(b'R'), Just(b'E'), Just(b'A'), any::<u8>()
                ],
                0..40,
            ),
        ) {
            let Some(headers) = headers_with(&value) else { return Ok(()) };
            // The former reading, as the model: Unicode trimming and a `char` search.
            let expected = headers[http::header::AUTHORIZATION].to_str().ok().and_then(|text| {
                let (scheme, token) = text.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            });
            prop_assert_eq!(bearer(&headers), expected);
        }
    }
}
