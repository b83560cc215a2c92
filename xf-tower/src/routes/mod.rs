//! One module per resource, each with a `fn router` that adds its routes to [`Routes`] (the
//! media API's makes its own router and document, at a prefix): the request/response shapes
//! at the top, then one handler per endpoint, with its `#[utoipa::path]`, that parses, calls
//! one [`xf_core::Xf`] method and renders.

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

use axum::routing::MethodRouter;
use axum::Router;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::UtoipaMethodRouter;
use xf_core::Xf;

/// The developer API's routes, registered at a path prefix, and their OpenAPI document, whose
/// paths stay as the specification writes them (the prefix is its server URL).
///
/// [`Mounts`](crate::Mounts) serves the API from routes that carry its `/api/v1` prefix
/// rather than stripping the prefix off each request, which makes and parses a new URI for
/// each (about a fortieth of a memory-store `GET`). [`XfService`](crate::XfService), which a
/// host nests where it likes, has them without a prefix.
pub struct Routes {
    prefix: &'static str,
    router: Router<Xf>,
    doc: utoipa::openapi::OpenApi,
}

impl Routes {
    /// No routes yet; those added go at `prefix` (`""` for none) and into `doc`.
    pub fn new(prefix: &'static str, doc: utoipa::openapi::OpenApi) -> Self {
        Routes {
            prefix,
            router: Router::new(),
            doc,
        }
    }

    /// The handlers of a `utoipa_axum::routes!`, at each of their paths, with the document
    /// gaining their operations and schemas.
    pub fn routes(mut self, (schemas, paths, handlers): UtoipaMethodRouter<Xf>) -> Self {
        for path in paths.paths.keys() {
            let at = self.at(if path.is_empty() { "/" } else { path });
            self.router = self.router.route(&at, handlers.clone());
        }
        self.doc.paths.merge(paths);
        let components = self.doc.components.get_or_insert_with(Default::default);
        // A schema of a name already there is kept as it was, as `OpenApi::merge` does.
        for (name, schema) in schemas {
            components.schemas.entry(name).or_insert(schema);
        }
        self
    }

    /// A route outside the document.
    pub fn route(mut self, path: &str, handlers: MethodRouter<Xf>) -> Self {
        let at = self.at(path);
        self.router = self.router.route(&at, handlers);
        self
    }

    /// `path` below the prefix.
    pub fn at(&self, path: &str) -> String {
        format!("{}{path}", self.prefix)
    }

    /// Applies `f` to the routes so far, as [`Router`]'s own methods do (a layer, a fallback
    /// for methods a route does not take).
    pub fn map(mut self, f: impl FnOnce(Router<Xf>) -> Router<Xf>) -> Self {
        self.router = f(self.router);
        self
    }

    /// The router and the document.
    pub fn split(self) -> (Router<Xf>, utoipa::openapi::OpenApi) {
        (self.router, self.doc)
    }
}

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
    #[schema(required = true)]
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
