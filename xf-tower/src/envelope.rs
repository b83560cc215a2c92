//! Response envelopes, written by serde.
//!
//! - The developer API's: `{data, meta}` and `{error, meta}`; a list's `meta` also carries
//!   `hasMore` and `nextCursor`.
//! - The media API's: `{success: true, data, message?, meta}` and
//!   `{success: false, error, meta}`.
//!
//! `meta` always carries the request id. An answer kept by idempotency is its envelope
//! without `meta` (an *object*, as JSON text); replayed, it gets the new request's `meta`, its
//! own members copied as they were written ([`RawValue`]).
//!
//! This module knows envelopes, not errors: `error.rs` maps an `Error` to a status and an
//! [`ErrorBody`] and hands them here, never the other way round.

use std::borrow::Cow;
use std::collections::BTreeMap;

use axum::body::Body;
use axum::response::Response;
use http::{header, HeaderValue, StatusCode};
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use xf_core::api::Page;
use xf_core::error::FieldError;

use crate::request_id;

/// Which API's envelope an answer is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Api {
    /// `{data, meta}`, `{error, meta}`: the developer, admin and open endpoints.
    Developer,
    /// `{success, data | error, meta}`: the media API.
    Media,
}

/// `error` of the error envelopes.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody<'a> {
    /// Machine-readable code, e.g. `validation_error`.
    pub code: &'a str,
    /// For people.
    pub message: Cow<'a, str>,
    /// Per-field problems of a validation error.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub details: Option<&'a [FieldError]>,
}

#[derive(Serialize)]
struct Meta<'a> {
    #[serde(rename = "requestId")]
    request_id: &'a str,
}

#[derive(Serialize)]
struct PageMeta<'a> {
    #[serde(rename = "requestId")]
    request_id: &'a str,
    #[serde(rename = "hasMore")]
    has_more: bool,
    #[serde(rename = "nextCursor")]
    next_cursor: Option<&'a str>,
}

/// Every envelope: the members it has (`None`s are left out), `meta` last. Without `meta`,
/// it is the object idempotency keeps.
#[derive(Serialize)]
struct Envelope<'a, T, M> {
    #[serde(skip_serializing_if = "Option::is_none")]
    success: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorBody<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    meta: Option<M>,
}

type Members<'a, T> = Envelope<'a, T, Meta<'a>>;

impl<T> Default for Envelope<'_, T, Meta<'_>> {
    fn default() -> Self {
        Envelope {
            success: None,
            data: None,
            message: None,
            error: None,
            meta: None,
        }
    }
}

/// The developer API's success envelope around `data`.
fn data_members<T>(data: &T) -> Members<'_, T> {
    Members {
        data: Some(data),
        ..Members::default()
    }
}

/// The media API's success envelope around `data`, with `message` if given.
fn media_members<'a, T>(data: &'a T, message: Option<&'a str>) -> Members<'a, T> {
    Members {
        success: Some(true),
        data: Some(data),
        message,
        ..Members::default()
    }
}

fn error_members<'a>(api: Api, body: &'a ErrorBody<'a>) -> Members<'a, ()> {
    Members {
        success: (api == Api::Media).then_some(false),
        error: Some(body),
        ..Members::default()
    }
}

/// Serializes `members` with the current request's `meta` into a response of `status`.
fn respond<T: Serialize>(status: StatusCode, members: Members<'_, T>) -> Response {
    // Sized for a typical resource, so that its serialization does not grow the buffer.
    write(status, 1024, |request_id, out| {
        let meta = Some(Meta { request_id });
        serde_json::to_writer(out, &Envelope { meta, ..members })
    })
}

/// A JSON response of `status`: what `body` writes, given the current request's id, into a
/// buffer of `capacity` bytes to start with; a logged `500` if it does not serialize.
fn write(
    status: StatusCode,
    capacity: usize,
    body: impl FnOnce(&str, &mut Vec<u8>) -> serde_json::Result<()>,
) -> Response {
    let mut bytes = Vec::with_capacity(capacity);
    let written = request_id::with_current(|request_id| body(request_id, &mut bytes));
    match written {
        Ok(()) => json_response(status, bytes),
        Err(error) => not_serialized(&error),
    }
}

/// The object (envelope without `meta`) of `members`.
fn object<T: Serialize>(members: Members<'_, T>) -> Result<String, serde_json::Error> {
    serde_json::to_string(&members)
}

/// A `{data, meta}` response.
pub fn data<T: Serialize>(status: StatusCode, data: &T) -> Response {
    respond(status, data_members(data))
}

/// A media `{success: true, data, meta}` response.
pub fn media_data<T: Serialize>(status: StatusCode, data: &T) -> Response {
    respond(status, media_members(data, None))
}

/// A write's answer: its `data`, serialized once, and (media API) its `message`. The response
/// and the object idempotency keeps are both written from it, copying `data` as it is.
#[derive(Debug)]
pub struct Answer {
    data: Box<RawValue>,
    message: Option<&'static str>,
}

impl Answer {
    /// The answer whose `data` is `data`.
    pub fn of<T: Serialize>(data: &T) -> Result<Self, serde_json::Error> {
        Ok(Answer {
            data: serde_json::value::to_raw_value(data)?,
            message: None,
        })
    }

    /// With the media API's `message` (`"video uploaded"`).
    pub fn with_message(self, message: &'static str) -> Self {
        Answer {
            message: Some(message),
            ..self
        }
    }

    fn members(&self, api: Api) -> Members<'_, Box<RawValue>> {
        match api {
            Api::Developer => data_members(&self.data),
            Api::Media => media_members(&self.data, self.message),
        }
    }
}

/// `answer` as a response of `status` in `api`'s envelope.
pub fn answer(api: Api, status: StatusCode, answer: &Answer) -> Response {
    respond(status, answer.members(api))
}

/// `answer` in `api`'s envelope without `meta`: the object idempotency keeps.
pub fn answer_object(api: Api, answer: &Answer) -> Result<String, serde_json::Error> {
    object(answer.members(api))
}

/// An error response in `api`'s envelope.
pub fn error(api: Api, status: StatusCode, body: &ErrorBody<'_>) -> Response {
    respond(status, error_members(api, body))
}

/// The error envelope without `meta`, the object idempotency keeps.
pub fn error_object(api: Api, body: &ErrorBody<'_>) -> String {
    object(error_members(api, body)).unwrap_or_else(|cause| {
        // Strings and a slice of them always serialize; if that ever changes, say so.
        tracing::error!(%cause, code = body.code, "an error envelope does not serialize");
        object(error_members(api, &INTERNAL)).unwrap_or_default()
    })
}

/// A `200` list: `{data: {<key>: [...]}, meta: {requestId, hasMore, nextCursor}}`.
pub fn page<T: Serialize>(key: &str, page: &Page<T>) -> Response {
    page_of(
        &BTreeMap::from([(key, &page.items)]),
        page.next_cursor.as_deref(),
    )
}

/// A `200` list whose `data` is more than the items (a summary beside them, say).
pub fn page_of<T: Serialize>(data: &T, next_cursor: Option<&str>) -> Response {
    write(StatusCode::OK, 4096, |request_id, out| {
        let meta = Some(PageMeta {
            request_id,
            has_more: next_cursor.is_some(),
            next_cursor,
        });
        let envelope = Envelope {
            data: Some(data),
            success: None,
            message: None,
            error: None,
            meta,
        };
        serde_json::to_writer(out, &envelope)
    })
}

/// A kept object (see [`answer_object`], [`error_object`]) as a response with the current
/// request's `meta`. Anything but an object is a broken invariant, answered `500`.
pub fn render(status: StatusCode, object: &str) -> Response {
    let Ok(members) = serde_json::from_str::<KeptMembers<'_>>(object) else {
        let start: String = object.chars().take(40).collect();
        tracing::error!(start, "a kept response body is not a JSON object");
        return internal();
    };
    write(status, object.len() + 64, |request_id, out| {
        let meta = Meta { request_id };
        serde_json::to_writer(out, &KeptWithMeta { members, meta })
    })
}

/// The members of a kept object, in their order, their values as written.
struct KeptMembers<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for KeptMembers<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Visit<'a> {
            type Value = KeptMembers<'a>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<Cow<'a, str>, &'a RawValue>()? {
                    members.push(member);
                }
                Ok(KeptMembers(members))
            }
        }
        deserializer.deserialize_map(Visit(std::marker::PhantomData))
    }
}

/// A kept object's members, then `meta`.
struct KeptWithMeta<'a> {
    members: KeptMembers<'a>,
    meta: Meta<'a>,
}

impl Serialize for KeptWithMeta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.members.0.len() + 1))?;
        for (name, value) in &self.members.0 {
            map.serialize_entry(name, value)?;
        }
        map.serialize_entry("meta", &self.meta)?;
        map.end()
    }
}

/// What a `500` says.
const INTERNAL: ErrorBody<'static> = ErrorBody {
    code: "internal_error",
    message: Cow::Borrowed("internal error"),
    details: None,
};

/// A `500 internal_error` in the developer envelope: what is left when a body cannot be
/// written (a bug, logged where it is found).
fn internal() -> Response {
    error(Api::Developer, StatusCode::INTERNAL_SERVER_ERROR, &INTERNAL)
}

fn not_serialized(error: &serde_json::Error) -> Response {
    tracing::error!(%error, "a response body does not serialize");
    internal()
}

fn json_response(status: StatusCode, body: impl Into<Body>) -> Response {
    let mut response = Response::new(body.into());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(response: Response) -> serde_json::Value {
        let bytes = http_body_util::BodyExt::collect(response.into_body())
            .await
            .unwrap()
            .to_bytes();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn a_kept_object_is_replayed_member_for_member_with_meta() {
        let answer = Answer::of(&serde_json::json!({"id": "med_1", "n": 1.50}))
            .unwrap()
            .with_message("done");
        let kept = answer_object(Api::Media, &answer).unwrap();
        assert_eq!(
            kept,
            r#"{"success":true,"data":{"id":"med_1","n":1.5},"message":"done"}"#
        );
        let replayed = render(StatusCode::CREATED, &kept);
        assert_eq!(replayed.status(), StatusCode::CREATED);
        let replayed = body(replayed).await;
        assert_eq!(replayed["success"], true);
        assert_eq!(replayed["data"]["id"], "med_1");
        assert_eq!(replayed["message"], "done");
        assert!(replayed["meta"]["requestId"].is_string());
    }

    #[tokio::test]
    async fn an_answer_is_the_same_fresh_and_kept() {
        let answer = Answer::of(&serde_json::json!({"property": {"id": "prop_1"}})).unwrap();
        let fresh = body(self::answer(Api::Developer, StatusCode::CREATED, &answer)).await;
        let kept = answer_object(Api::Developer, &answer).unwrap();
        assert_eq!(kept, r#"{"data":{"property":{"id":"prop_1"}}}"#);
        let replayed = body(render(StatusCode::CREATED, &kept)).await;
        assert_eq!(fresh["data"], replayed["data"]);
        assert!(fresh.get("success").is_none());
    }

    #[tokio::test]
    async fn a_kept_body_that_is_not_an_object_is_a_500() {
        for broken in ["[1,2]", "\"text\"", "{\"data\":", ""] {
            let response = render(StatusCode::OK, broken);
            assert_eq!(response.status(), 500, "{broken:?}");
            assert_eq!(body(response).await["error"]["code"], "internal_error");
        }
    }

    #[test]
    fn errors_are_in_each_api_s_envelope() {
        let body = ErrorBody {
            code: "not_found",
            message: "no \"such\" thing".into(),
            details: None,
        };
        assert_eq!(
            error_object(Api::Developer, &body),
            r#"{"error":{"code":"not_found","message":"no \"such\" thing"}}"#
        );
        assert_eq!(
            error_object(Api::Media, &body),
            r#"{"success":false,"error":{"code":"not_found","message":"no \"such\" thing"}}"#
        );
    }

    #[tokio::test]
    async fn a_list_says_whether_there_is_more() {
        let page = Page {
            items: vec![1, 2],
            next_cursor: Some("c2".to_owned()),
        };
        let answer = body(self::page("jobs", &page)).await;
        assert_eq!(answer["data"]["jobs"], serde_json::json!([1, 2]));
        assert_eq!(answer["meta"]["hasMore"], true);
        assert_eq!(answer["meta"]["nextCursor"], "c2");
        let last = Page::<u8> {
            items: vec![],
            next_cursor: None,
        };
        let answer = body(self::page("jobs", &last)).await;
        assert_eq!(answer["meta"]["hasMore"], false);
        assert!(answer["meta"]["nextCursor"].is_null());
    }
}
