//! Response envelopes: `{data, meta}` for successes, `{error, meta}` for errors, where `meta`
//! always carries the request id.
//!
//! Bodies are built as "the object without `meta`" first, so that idempotency can keep exactly
//! that and replay it later with the new request's id.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{header, HeaderValue, StatusCode};
use serde::Serialize;
use serde_json::Value;
use xf_core::api::Page;
use xf_core::Error;

use crate::error::ApiError;
use crate::request_id;

/// `{"data": <data>}` as JSON text.
pub fn data_object<T: Serialize>(data: &T) -> Result<String, Error> {
    #[derive(Serialize)]
    struct Wrapper<'a, T> {
        data: &'a T,
    }
    serde_json::to_string(&Wrapper { data }).map_err(|e| Error::Internal(e.to_string()))
}

/// Appends `meta` (the request id, plus `extra` fields) to a non-empty JSON object without
/// it; `None` if `object` is not an object's text.
fn with_meta(object: &str, extra: &str) -> Option<String> {
    let open = object.strip_suffix('}').filter(|open| {
        // `{}` has no member to put a comma after; every object here has `data` or `error`.
        open.starts_with('{') && open.len() > 1
    })?;
    // An echoed id may hold quotes or backslashes: written as a JSON string.
    let request_id = request_id::with_current(|id| Value::from(id));
    Some(format!(
        r#"{open},"meta":{{"requestId":{request_id}{extra}}}}}"#
    ))
}

/// A JSON response from an object without `meta`: one this crate serialized, or one kept by
/// an idempotency record. Anything else is a broken invariant, answered `500`.
pub fn render(status: StatusCode, object: &str) -> Response {
    match with_meta(object, "") {
        Some(body) => json_response(status, body),
        None => broken(object),
    }
}

fn broken(object: &str) -> Response {
    let start: String = object.chars().take(40).collect();
    ApiError(Error::Internal(format!(
        "a response body is not a JSON object: {start:?}"
    )))
    .into_response()
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

/// A `{data, meta}` response, serialized in one pass.
pub fn data<T: Serialize>(status: StatusCode, data: &T) -> Response {
    #[derive(Serialize)]
    struct Envelope<'a, T> {
        data: &'a T,
        meta: Meta<'a>,
    }
    #[derive(Serialize)]
    struct Meta<'a> {
        #[serde(rename = "requestId")]
        request_id: &'a str,
    }
    // Sized for a typical resource, so that its serialization does not grow the buffer.
    let mut body = Vec::with_capacity(1024);
    let written = request_id::with_current(|request_id| {
        serde_json::to_writer(
            &mut body,
            &Envelope {
                data,
                meta: Meta { request_id },
            },
        )
    });
    match written {
        Ok(()) => json_response(status, body),
        Err(error) => ApiError(Error::Internal(error.to_string())).into_response(),
    }
}

/// A `200` list: `{data: {<key>: [...]}, meta: {requestId, hasMore, nextCursor}}`.
pub fn page<T: Serialize>(key: &str, page: &Page<T>) -> Response {
    let items = match serde_json::to_string(&page.items) {
        Ok(items) => items,
        Err(error) => return ApiError(Error::Internal(error.to_string())).into_response(),
    };
    let key = Value::from(key);
    page_with(&format!("{{{key}:{items}}}"), page.next_cursor.as_deref())
}

/// A `200` list whose `data` object is already serialized.
pub fn page_with(data_json: &str, next_cursor: Option<&str>) -> Response {
    let extra = format!(
        r#","hasMore":{},"nextCursor":{}"#,
        next_cursor.is_some(),
        Value::from(next_cursor)
    );
    let object = format!(r#"{{"data":{data_json}}}"#);
    match with_meta(&object, &extra) {
        Some(body) => json_response(StatusCode::OK, body),
        None => broken(&object),
    }
}
