//! # xf-tower
//!
//! The xf SEO developer API as one tower [`Service`](tower::Service): [`XfService`], an axum `Router` inside,
//! generic over the request body, with `Error = Infallible`. Mount it in any tower-based
//! server, under any prefix (the spec's is `/api/v1`):
//!
//! ```no_run
//! use std::sync::Arc;
//! # async fn run() {
//! let store = Arc::new(xf_storage_memory::MemoryStore::new());
//! let xf = xf_core::Xf::builder(store)
//!     .secret_key(xf_core::Xf::random_secret_key())
//!     .public_base_url("http://127.0.0.1:8080")
//!     .build()
//!     .unwrap();
//! let app = axum::Router::new()
//!     .route("/", axum::routing::get(|| async { "the host's own page" }))
//!     .nest_service("/api/v1", xf_tower::XfService::new(xf));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await.unwrap();
//! axum::serve(listener, app).await.unwrap();
//! # }
//! ```
//!
//! Every response is JSON in the spec's envelopes and carries `X-Request-Id`; authenticated
//! responses also carry the remaining-request headers. Errors of any kind, including unknown
//! paths (404), wrong methods (405 with `Allow`), malformed JSON (400) and bodies over 1 MiB
//! (413), use the error envelope. `GET /openapi.json` serves the OpenAPI 3.1 document.
//!
//! [`AdminService`] serves the host's admin API (organizations, keys, limits, verification,
//! reports, usage) behind a bearer token. [`ReportPageService`], mounted at `/r`, serves the
//! public page of shared reports (`/r/{token}`) as self-contained HTML. [`MediaFileService`],
//! mounted at `/m`, serves the signed, expiring media URLs that platforms pull media from.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod admin;
mod body_rate;
mod connect;
mod csv;
mod envelope;
mod error;
mod extract;
mod idempotency;
mod media_file;
mod metrics;
mod middleware;
mod mount;
mod multipart;
mod openapi;
mod openapi_media;
#[cfg(feature = "otlp")]
#[cfg_attr(docsrs, doc(cfg(feature = "otlp")))]
pub mod otlp;
mod probes;
mod report_page;
mod request_id;
mod routes;
mod signal;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http::Response;
use xf_core::Xf;

pub use admin::{AdminService, MAX_FAILED_LOGINS};
pub use body_rate::BodyTooSlow;
pub use connect::ConnectService;
pub use error::status_of;
pub use media_file::MediaFileService;
pub use metrics::{MetricsService, METRICS_PATH};
pub use mount::{
    strip_prefix, Mounts, StripPrefix, ADMIN_PREFIX, API_PREFIX, CONNECT_PREFIX, MEDIA_FILE_PREFIX,
    REPORT_PREFIX,
};
pub use probes::{ProbeService, LIVENESS_PATH, READINESS_PATH};
pub use report_page::ReportPageService;
pub use request_id::{current_request, is_request_span};
pub use signal::shutdown_signal;

/// The body of every response of this crate's services, and a body type a host can build
/// requests from ([`Body::from_stream`], `Body::from(bytes)`, [`Body::empty`]). It implements
/// [`http_body::Body`], so hosts need no web framework to read or produce it.
pub type Body = axum::body::Body;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The future of [`XfService`], [`AdminService`] and [`StripPrefix`].
pub struct ResponseFuture {
    inner: axum::routing::future::RouteFuture<Infallible>,
}

impl std::fmt::Debug for ResponseFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

impl ResponseFuture {
    fn routed(inner: axum::routing::future::RouteFuture<Infallible>) -> Self {
        Self { inner }
    }
}

impl Future for ResponseFuture {
    type Output = Result<Response<Body>, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.inner).poll(cx)
    }
}

/// The developer API as a tower service. Cheap to clone.
#[derive(Clone, Debug)]
pub struct XfService {
    router: Router,
    openapi: Arc<Result<serde_json::Value, String>>,
}

impl XfService {
    /// The service over `xf`.
    pub fn new(xf: Xf) -> Self {
        Self::at(xf, "")
    }

    /// The service with its routes at `prefix` (such as `/api/v1`; `""` for none): requests
    /// reach it with the prefix still on their path.
    pub(crate) fn at(xf: Xf, prefix: &'static str) -> Self {
        // Each handler authenticates and counts its request with the `Authed` extractor it
        // takes (`WebhooksAuthed` for webhooks, which either API's organizations manage),
        // rather than under a route layer: one boxed level and its clone less a request.
        let routes = [
            routes::health::router,
            routes::account::router,
            routes::properties::router,
            routes::gsc::router,
            routes::scans::router,
            routes::schedules::router,
            routes::jobs::router,
            routes::reports::router,
            routes::webhooks::router,
        ]
        .into_iter()
        .fold(
            routes::Routes::new(prefix, openapi::base()),
            |routes, add| add(routes),
        );
        let openapi_path = routes.at("/openapi.json");
        let (router, doc) = routes.split();
        let (media, media_doc) = routes::media::router(prefix);
        let openapi = openapi::finish(doc, media_doc);
        // Serialized once: the document never changes while the service lives.
        let served = openapi
            .as_ref()
            .map(|doc| Bytes::from(doc.to_string()))
            .map_err(Clone::clone);
        let limits = xf.request_limits();
        let metrics = xf.metrics().requests();
        let router = router
            .merge(media)
            .route(
                &openapi_path,
                get(move || {
                    let served = served.clone();
                    async move { openapi::respond(served) }
                }),
            )
            .method_not_allowed_fallback(middleware::method_not_allowed)
            .fallback(middleware::not_found)
            .with_state(xf);
        Self {
            router: router.layer(request_id::Layer {
                prefix,
                ..common_layer(request_id::Service::Api, Some(metrics), Some(limits))
            }),
            openapi: Arc::new(openapi),
        }
    }

    /// The OpenAPI 3.1 document this service serves at `/openapi.json`; `None` only if it
    /// could not be built, which is a bug (logged, and `/openapi.json` answers 500).
    pub fn openapi(&self) -> Option<&serde_json::Value> {
        self.openapi.as_ref().as_ref().ok()
    }

    /// The axum `Router` inside, to merge or layer it as a host sees fit.
    pub fn into_router(self) -> Router {
        self.router
    }
}

/// The media API alone, for the specification's alternative base URL (its paths without the
/// `/api/v1` prefix): its routes and its envelope, `404` in it below `/media/` and
/// `/channels/`, and the API's plain `404` for every other path. [`XfService`] serves the
/// same routes under its own mount. Cheap to clone.
#[derive(Clone, Debug)]
pub struct MediaService {
    router: Router,
}

impl MediaService {
    /// The service over `xf`.
    pub fn new(xf: Xf) -> Self {
        let limits = xf.request_limits();
        let metrics = xf.metrics().requests();
        let router = routes::media::router("")
            .0
            .fallback(middleware::not_found)
            .with_state(xf);
        Self {
            router: with_common_layers(
                router,
                request_id::Service::Api,
                Some(metrics),
                Some(limits),
            ),
        }
    }

    /// The axum `Router` inside.
    pub fn into_router(self) -> Router {
        self.router
    }
}

router_service!(MediaService);

/// A service that answers every request with the API's `404 not_found` envelope (request id
/// included), for a host's paths outside the mounted services:
/// `Router::new().nest_service("/api/v1", api).fallback_service(xf_tower::not_found_service())`.
pub fn not_found_service() -> Router {
    with_common_layers(
        Router::new().fallback(middleware::not_found),
        request_id::Service::None,
        None,
        None,
    )
}

/// The layer every service of the APIs shares (see [`request_id::Layer`]): request ids and
/// the request log; a panic becomes a `500` envelope (and a log line with the request id)
/// instead of a dropped connection. Requests are recorded in `metrics`, if given, and their
/// bodies read under `body_limits`, if given.
fn with_common_layers(
    router: Router,
    service: request_id::Service,
    metrics: Option<xf_core::metrics::RequestRecorder>,
    body_limits: Option<xf_core::RequestLimits>,
) -> Router {
    router.layer(common_layer(service, metrics, body_limits))
}

/// The layer of [`with_common_layers`], for routes without a prefix.
fn common_layer(
    service: request_id::Service,
    metrics: Option<xf_core::metrics::RequestRecorder>,
    body_limits: Option<xf_core::RequestLimits>,
) -> request_id::Layer {
    request_id::Layer {
        service,
        prefix: "",
        panic: Some(middleware::panic_response),
        metrics,
        body_limits,
    }
}

/// Implements tower's `Service` for a type that wraps an axum `Router` in a field `router`:
/// generic over the request body, always ready, `Error = Infallible`.
macro_rules! router_service {
    ($service:ty) => {
        impl<B> tower::Service<http::Request<B>> for $service
        where
            B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
            B::Error: Into<tower::BoxError>,
        {
            type Response = http::Response<$crate::Body>;
            type Error = std::convert::Infallible;
            type Future = $crate::ResponseFuture;

            fn poll_ready(
                &mut self,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<Result<(), Self::Error>> {
                std::task::Poll::Ready(Ok(()))
            }

            fn call(&mut self, request: http::Request<B>) -> Self::Future {
                $crate::ResponseFuture::routed(tower::Service::call(&mut self.router, request))
            }
        }
    };
}
pub(crate) use router_service;

router_service!(XfService);

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    use super::*;

    #[tokio::test]
    async fn a_panicking_handler_answers_500_without_its_detail() {
        let router =
            Router::new().route("/boom", get(|| async { panic!("secret detail") as &str }));
        let response = with_common_layers(router, request_id::Service::Api, None, None)
            .oneshot(http::Request::get("/boom").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), 500);
        let id = response.headers()["x-request-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["code"], "internal_error");
        assert_eq!(body["meta"]["requestId"], id.as_str());
        assert!(!body.to_string().contains("secret detail"));
    }

    /// A panic in the call of the service the layer wraps, before it has a future, is
    /// answered like one in the future: inside the request's scope, so the envelope's
    /// `requestId` is the request's own.
    #[tokio::test]
    async fn a_panicking_call_answers_500_with_the_request_s_id() {
        #[derive(Clone)]
        struct PanicsWhenCalled;
        impl tower::Service<http::Request<Body>> for PanicsWhenCalled {
            type Response = axum::response::Response;
            type Error = std::convert::Infallible;
            type Future = std::future::Ready<Result<Self::Response, Self::Error>>;
            fn poll_ready(
                &mut self,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<Result<(), Self::Error>> {
                std::task::Poll::Ready(Ok(()))
            }
            fn call(&mut self, _: http::Request<Body>) -> Self::Future {
                panic!("secret detail")
            }
        }
        // The layer straight around the service: an axum route defers its service's call to
        // the first poll.
        let layer = common_layer(request_id::Service::Api, None, None);
        let response = tower::Layer::layer(&layer, PanicsWhenCalled)
            .oneshot(
                http::Request::get("/boom")
                    .header("x-request-id", "call-panic-1")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(response.status(), 500);
        assert_eq!(response.headers()["x-request-id"], "call-panic-1");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["code"], "internal_error");
        assert_eq!(body["meta"]["requestId"], "call-panic-1");
        assert!(!body.to_string().contains("secret detail"));
    }

    async fn answer(
        router: &Router,
        method: http::Method,
        path: &str,
    ) -> (u16, serde_json::Value, Option<String>) {
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .body(Body::empty())
            .unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let allow = response
            .headers()
            .get("allow")
            .map(|v| v.to_str().unwrap().to_owned());
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, serde_json::from_slice(&body).unwrap(), allow)
    }

    #[tokio::test]
    async fn the_media_service_answers_in_its_envelope_below_its_paths() {
        let xf = Xf::builder(Arc::new(xf_storage_memory::MemoryStore::new()))
            .secret_key(Xf::random_secret_key())
            .public_base_url("http://127.0.0.1:1")
            .build()
            .unwrap();
        let media = MediaService::new(xf).into_router();
        let (status, body, allow) = answer(&media, http::Method::PUT, "/channels").await;
        assert_eq!((status, &body["success"]), (405, &serde_json::json!(false)));
        assert_eq!(body["error"]["code"], "method_not_allowed");
        assert_eq!(allow.as_deref(), Some("GET,HEAD"));
        let (status, body, _) = answer(&media, http::Method::GET, "/media/unknown").await;
        assert_eq!((status, &body["success"]), (404, &serde_json::json!(false)));
        let (status, body, _) = answer(&media, http::Method::GET, "/channels").await;
        assert_eq!(
            (status, &body["error"]["code"]),
            (401, &serde_json::json!("api_key_invalid"))
        );
        assert_eq!(body["success"], false);
        // Elsewhere it is not the media API: the API's plain 404.
        let (status, body, _) = answer(&media, http::Method::GET, "/properties").await;
        assert_eq!(
            (status, &body["error"]["code"]),
            (404, &serde_json::json!("not_found"))
        );
        assert!(body.get("success").is_none(), "{body}");
    }

    /// What a handler sees of its request: whether it runs in the `request` span, and what
    /// `current_request` says.
    async fn context_seen(router: &Router) -> String {
        let request = http::Request::get("/context")
            .header("x-request-id", "ctx-1")
            .body(Body::empty())
            .unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(body.to_vec()).unwrap()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_request_s_context_is_there_with_or_without_its_span() {
        use tracing_subscriber::layer::SubscriberExt;

        let router = with_common_layers(
            Router::new().route(
                "/context",
                get(|| async {
                    let in_span = tracing::Span::current()
                        .metadata()
                        .is_some_and(is_request_span);
                    let current = current_request(|id, service| format!("{id} {service}"));
                    format!("{in_span} {}", current.unwrap_or_default())
                }),
            ),
            request_id::Service::Api,
            None,
            None,
        );
        let all = tracing_subscriber::registry();
        let guard = tracing::subscriber::set_default(all);
        assert_eq!(context_seen(&router).await, "true ctx-1 api");
        drop(guard);
        let without_span = tracing_subscriber::registry().with(
            tracing_subscriber::filter::filter_fn(|metadata| !is_request_span(metadata)),
        );
        let _guard = tracing::subscriber::set_default(without_span);
        assert_eq!(context_seen(&router).await, "false ctx-1 api");
        // Outside a request there is none.
        assert_eq!(current_request(|id, _| id.to_owned()), None);
    }
}
