//! One module per resource, each with `fn router()`: the request/response shapes at the top,
//! then one handler per endpoint that parses, calls one [`xf_core::Xf`] method and renders.

pub mod account;
pub mod health;
pub mod jobs;
pub mod properties;
pub mod reports;
pub mod scans;

use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

/// `meta` of a single-object response.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    /// Echo of `X-Request-Id`, or the generated id.
    pub request_id: String,
}

/// `meta` of a paginated list.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageMeta {
    /// Echo of `X-Request-Id`, or the generated id.
    pub request_id: String,
    /// Whether another page exists.
    pub has_more: bool,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// A success body: `{data, meta}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Envelope<T: ToSchema> {
    /// The payload.
    pub data: T,
    /// Request metadata.
    pub meta: Meta,
}

/// A paginated success body: `{data, meta}` with `hasMore` and `nextCursor`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PageEnvelope<T: ToSchema> {
    /// The payload.
    pub data: T,
    /// Request and pagination metadata.
    pub meta: PageMeta,
}

/// `limit` and `cursor`.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // Read by the OpenAPI derive only; `extract::Query` parses the request.
pub struct PageQuery {
    /// Page size, 1 to 100 (default 40).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// `meta.nextCursor` of the previous page. Bound to the list and its filters.
    pub cursor: Option<String>,
}

/// `include`.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // Read by the OpenAPI derive only; `extract::Query` parses the request.
pub struct IncludeQuery {
    /// Comma-separated enrichments: `gsc`, `lastScan`.
    pub include: Option<String>,
}

/// The optional `Idempotency-Key` header of writes that create things.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)] // Read by the OpenAPI derive only; `extract::Query` parses the request.
pub struct IdempotencyHeader {
    /// 1 to 128 characters; retained 24 hours. Same key and request: the first response is
    /// replayed with `Idempotent-Replayed: true`.
    #[param(rename = "Idempotency-Key")]
    pub idempotency_key: Option<String>,
}
