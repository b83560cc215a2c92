//! One module per resource, each with `fn router()`: the request/response shapes at the top,
//! then one handler per endpoint that parses, calls one [`xf_core::Xf`] method and renders.

pub mod account;
pub mod gsc;
pub mod health;
pub mod jobs;
pub mod media;
pub mod properties;
pub mod reports;
pub mod scans;
pub mod schedules;
mod upload_form;
pub mod uploads;
pub mod webhooks;

use serde::Serialize;
use utoipa::ToSchema;

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

pub use crate::extract::IdempotencyHeader;
