//! Mounting: every surface of xf at once ([`Mounts`]), or one service under a path prefix
//! without a framework that does it for the host.
//!
//! axum's `nest_service` strips the prefix itself. A plain hyper server, or a warp filter
//! that hands requests over, uses [`strip_prefix`] to route and [`StripPrefix`] to wrap a
//! service, so that the API sees the paths it documents (`/properties`, not
//! `/api/v1/properties`) while the request log still shows the path as the client sent it.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::OriginalUri;
use http::uri::PathAndQuery;
use http::{Request, Response, Uri};
use tower::Service;

use axum::Router;
use bytes::Bytes;
use xf_core::Xf;

use crate::request_id::below;
use crate::{
    AdminService, Body, BoxError, ConnectService, MediaFileService, MediaService, MetricsService,
    ProbeService, ReportPageService, ResponseFuture, XfService,
};

/// When the request's path is `prefix` (which becomes `/`) or lies below it, takes `prefix`
/// off the path, keeps the query string, remembers the original URI for the request log, and
/// returns true. Otherwise leaves the request untouched and returns false.
///
/// `prefix` is a path without a trailing slash, such as `/api/v1`.
pub fn strip_prefix<B>(request: &mut Request<B>, prefix: &str) -> bool {
    let Some(rest) = below(request.uri().path(), prefix) else {
        return false;
    };
    let path_and_query = match request.uri().query() {
        Some(query) => format!("{rest}?{query}"),
        None => rest.to_owned(),
    };
    let Ok(path_and_query) = PathAndQuery::try_from(path_and_query) else {
        return false;
    };
    let mut parts = request.uri().clone().into_parts();
    parts.path_and_query = Some(path_and_query);
    let Ok(uri) = Uri::from_parts(parts) else {
        return false;
    };
    let original = std::mem::replace(request.uri_mut(), uri);
    // An outer router that stripped a prefix before us already recorded the first URI.
    if request.extensions().get::<OriginalUri>().is_none() {
        request.extensions_mut().insert(OriginalUri(original));
    }
    true
}

/// A service mounted under a prefix: requests below it reach `inner` with the prefix
/// stripped; any other path is answered `404 not_found` in the API's error envelope.
///
/// ```
/// # fn mount(xf: xf_core::Xf) {
/// let api = xf_tower::StripPrefix::new("/api/v1", xf_tower::XfService::new(xf));
/// // `api` is a tower service over `http::Request<B>`; give it to hyper with
/// // `hyper_util::service::TowerToHyperService::new(api)`.
/// # let _ = api;
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct StripPrefix<S> {
    prefix: Arc<str>,
    inner: S,
    outside: axum::Router,
}

impl<S> StripPrefix<S> {
    /// Mounts `inner` under `prefix` (such as `/api/v1`; a trailing slash is ignored).
    pub fn new(prefix: &str, inner: S) -> Self {
        Self {
            prefix: Arc::from(prefix.trim_end_matches('/')),
            inner,
            outside: crate::not_found_service(),
        }
    }
}

impl<S, B> Service<Request<B>> for StripPrefix<S>
where
    S: Service<Request<B>, Response = Response<Body>, Error = Infallible, Future = ResponseFuture>,
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<crate::BoxError>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        if strip_prefix(&mut request, &self.prefix) {
            self.inner.call(request)
        } else {
            ResponseFuture::routed(self.outside.call(request))
        }
    }
}

/// Where [`Mounts`] serves the API (both APIs, as the specification addresses them).
pub const API_PREFIX: &str = "/api/v1";
/// Where [`Mounts::admin`] serves the admin API.
pub const ADMIN_PREFIX: &str = "/admin";
/// Where the public report pages are: a report's `publicUrl` is
/// `{public_base_url}/r/{token}`.
pub const REPORT_PREFIX: &str = "/r";
/// Where the signed media URLs that platforms pull from are: `{public_base_url}/m/{token}`.
pub const MEDIA_FILE_PREFIX: &str = "/m";
/// Where connect links start and providers call back: `{public_base_url}/connect/…`.
pub const CONNECT_PREFIX: &str = xf_core::connect::CONNECT_PREFIX;

/// Every HTTP surface of xf over one [`Xf`], as one tower service a host mounts at its root:
///
/// | path | service |
/// |---|---|
/// | `/api/v1/…` | [`XfService`]: the developer API and the media API |
/// | `/r/…` | [`ReportPageService`]: the public report pages that `publicUrl` links to |
/// | `/m/…` | [`MediaFileService`]: the signed media URLs platforms pull from |
/// | `/connect/…` | [`ConnectService`]: connect links and the providers' OAuth callback |
/// | `/admin/…` | [`AdminService`], with [`Mounts::admin`] |
/// | `/livez`, `/readyz` | [`ProbeService`]: liveness and readiness probes for orchestrators |
/// | `/metrics` | [`MetricsService`], with [`Mounts::metrics`] |
/// | anything else | [`MediaService`]: the media API without the prefix (its alternative base URL), and the API's JSON `404` |
///
/// The links xf makes (`publicUrl`, media URLs) start with the `public_base_url` given to
/// [`Xf::builder`], so mount this where that URL points. Each prefix is one string test per
/// request. The API's routes are made with `/api/v1` on, so its requests go to them as sent;
/// the other services see their paths without the prefix. The request log shows the path as
/// sent, and the metrics each route without its mount prefix.
///
/// ```no_run
/// # async fn run(xf: xf_core::Xf) {
/// let app = axum::Router::new()
///     .route("/", axum::routing::get(|| async { "the host's own page" }))
///     .fallback_service(xf_tower::Mounts::new(xf).admin("an admin token"));
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await.unwrap();
/// axum::serve(listener, app).await.unwrap();
/// # }
/// ```
///
/// It needs no server to be tried: every surface answers through the one service.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use tower::ServiceExt;
///
/// let xf = xf_core::Xf::builder(Arc::new(xf_storage_memory::MemoryStore::new()))
///     .secret_key(xf_core::Xf::random_secret_key())
///     .public_base_url("https://app.example.com")
///     .build()
///     .unwrap();
/// let mounts = xf_tower::Mounts::new(xf);
/// for (path, status) in [
///     ("/api/v1/health", 200),
///     ("/api/v1/properties", 401), // a key is needed
///     ("/readyz", 200),
///     ("/r/no-such-report", 404),
/// ] {
///     let request = http::Request::get(path)
///         .body(xf_tower::Body::empty())
///         .unwrap();
///     let response = mounts.clone().oneshot(request).await.unwrap();
///     assert_eq!(response.status(), status, "{path}");
/// }
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Mounts {
    xf: Xf,
    /// The API, its routes at [`API_PREFIX`]: the prefix is not stripped off each request.
    api: Router,
    /// The other services, under the prefix stripped off their requests.
    mounts: Arc<[(&'static str, Router)]>,
    probes: Router,
    /// `GET /metrics`, with [`Mounts::metrics`].
    metrics: Option<Router>,
    root: Router,
}

impl Mounts {
    /// The API, the report pages, the signed media files and the unprefixed media API over
    /// `xf`; no admin API.
    pub fn new(xf: Xf) -> Self {
        let mounts: Vec<(&'static str, Router)> = vec![
            (
                REPORT_PREFIX,
                ReportPageService::new(xf.clone()).into_router(),
            ),
            (
                MEDIA_FILE_PREFIX,
                MediaFileService::new(xf.clone()).into_router(),
            ),
            (
                CONNECT_PREFIX,
                ConnectService::new(xf.clone()).into_router(),
            ),
        ];
        Mounts {
            api: XfService::at(xf.clone(), API_PREFIX).into_router(),
            root: MediaService::new(xf.clone()).into_router(),
            probes: ProbeService::new(xf.clone()).into_router(),
            metrics: None,
            mounts: mounts.into(),
            xf,
        }
    }

    /// The facade the services were made over: start its runtime with
    /// [`Xf::spawn_workers`].
    pub fn xf(&self) -> &Xf {
        &self.xf
    }

    /// Also `GET /metrics` ([`MetricsService`]): every metric family in the Prometheus text
    /// format, without a key. Mount it only where the scraper, not the public, reaches it, or
    /// serve a [`MetricsService`] on a listener of its own instead.
    pub fn metrics(self) -> Self {
        Mounts {
            metrics: Some(MetricsService::new(self.xf.clone()).into_router()),
            ..self
        }
    }

    /// Also the admin API at `/admin`, behind the bearer `token`.
    pub fn admin(self, token: impl Into<String>) -> Self {
        let admin = AdminService::new(self.xf.clone(), token.into()).into_router();
        let mut mounts = self.mounts.to_vec();
        mounts.push((ADMIN_PREFIX, admin));
        Mounts {
            mounts: mounts.into(),
            ..self
        }
    }
}

impl<B> Service<Request<B>> for Mounts
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Routers are always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> ResponseFuture {
        let mut request = request.map(Body::new);
        if ProbeService::serves(request.uri().path()) {
            return ResponseFuture::routed(self.probes.clone().call(request));
        }
        if let Some(metrics) = &self.metrics {
            if request.uri().path() == crate::METRICS_PATH {
                return ResponseFuture::routed(metrics.clone().call(request));
            }
        }
        if below(request.uri().path(), API_PREFIX).is_some() {
            return ResponseFuture::routed(self.api.clone().call(request));
        }
        for (prefix, router) in self.mounts.iter() {
            if strip_prefix(&mut request, prefix) {
                return ResponseFuture::routed(router.clone().call(request));
            }
        }
        ResponseFuture::routed(self.root.clone().call(request))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use axum::Router;
    use http::Request;
    use tower::ServiceExt;
    use tracing_subscriber::fmt::MakeWriter;

    use super::*;
    use crate::{AdminService, XfService};

    #[test]
    fn strips_only_its_prefix() {
        let strip = |uri: &str| {
            let mut request = Request::get(uri).body(()).unwrap();
            let stripped = strip_prefix(&mut request, "/api/v1");
            let original = request
                .extensions()
                .get::<OriginalUri>()
                .map(|o| o.0.to_string());
            (stripped, request.uri().to_string(), original)
        };
        assert_eq!(
            strip("/api/v1"),
            (true, "/".to_owned(), Some("/api/v1".to_owned()))
        );
        assert_eq!(strip("/api/v1/").1, "/");
        assert_eq!(
            strip("/api/v1/jobs?status=pending&limit=5").1,
            "/jobs?status=pending&limit=5"
        );
        assert_eq!(
            strip("/api/v10/jobs"),
            (false, "/api/v10/jobs".to_owned(), None)
        );
        assert_eq!(strip("/other"), (false, "/other".to_owned(), None));
    }

    /// Log lines written while the test runs, as text.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl MakeWriter<'_> for Captured {
        type Writer = Captured;
        fn make_writer(&self) -> Captured {
            self.clone()
        }
    }

    impl Captured {
        fn line_with(&self, needle: &str) -> String {
            let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
            text.lines()
                .find(|line| line.contains(needle))
                .unwrap_or_else(|| panic!("no log line with {needle:?} in:\n{text}"))
                .to_owned()
        }
    }

    fn xf() -> xf_core::Xf {
        xf_core::Xf::builder(Arc::new(xf_storage_memory::MemoryStore::new()))
            .secret_key(xf_core::Xf::random_secret_key())
            .public_base_url("http://127.0.0.1")
            .build()
            .unwrap()
    }

    async fn call<S>(service: S, uri: &str, request_id: &str)
    where
        S: tower::Service<Request<Body>, Response = http::Response<Body>, Error = Infallible>,
    {
        let request = Request::get(uri)
            .header("x-request-id", request_id)
            .body(Body::empty())
            .unwrap();
        service.oneshot(request).await.unwrap();
    }

    /// One line per request, with the path as the client sent it (mount prefix included),
    /// the service that answered, the route template, method, status, latency and request id:
    /// whether axum nested the services or `StripPrefix` mounted them.
    #[tokio::test(flavor = "current_thread")]
    async fn the_request_log_shows_the_path_as_sent() {
        let captured = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(captured.clone())
            .with_ansi(false)
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        let xf = xf();
        let nested = Router::new()
            .nest_service("/api/v1", XfService::new(xf.clone()))
            .nest_service("/admin", AdminService::new(xf.clone(), "token"))
            .fallback_service(crate::not_found_service());
        call(nested.clone(), "/api/v1/nope", "r-api").await;
        call(nested.clone(), "/admin/nope", "r-admin").await;
        call(nested.clone(), "/nope", "r-none").await;
        call(nested, "/api/v1/properties/prop_x?include=gsc", "r-route").await;
        let mounted = StripPrefix::new("/api/v1", XfService::new(xf.clone()));
        call(mounted.clone(), "/api/v1/jobs/job_x", "r-strip").await;
        call(mounted, "/elsewhere", "r-outside").await;
        // `Mounts` routes the API with its prefix on: nothing stripped, the same line.
        let mounts = Mounts::new(xf);
        call(mounts.clone(), "/api/v1/jobs/job_x?limit=1", "m-route").await;
        call(mounts.clone(), "/api/v1", "m-bare-prefix").await;
        call(mounts.clone(), "/api/v1/", "m-slash").await;
        call(mounts.clone(), "/r/nope", "m-report").await;
        call(mounts, "/api/v10/jobs", "m-outside").await;

        for (id, service, path, route, status) in [
            ("r-api", "api", "/api/v1/nope", "-", 404),
            ("r-admin", "admin", "/admin/nope", "-", 404),
            ("r-none", "none", "/nope", "-", 404),
            (
                "r-route",
                "api",
                "/api/v1/properties/prop_x",
                "/api/v1/properties/{propertyId}",
                401,
            ),
            (
                "r-strip",
                "api",
                "/api/v1/jobs/job_x",
                "/api/v1/jobs/{jobId}",
                401,
            ),
            ("r-outside", "none", "/elsewhere", "-", 404),
            (
                "m-route",
                "api",
                "/api/v1/jobs/job_x",
                "/api/v1/jobs/{jobId}",
                401,
            ),
            ("m-bare-prefix", "api", "/api/v1", "-", 404),
            ("m-slash", "api", "/api/v1/", "-", 404),
            ("m-report", "report", "/r/nope", "/r/{token}", 404),
            // Not below `/api/v1`: the media API without the prefix answers it.
            ("m-outside", "api", "/api/v10/jobs", "-", 404),
        ] {
            let line = captured.line_with(&format!("request_id={id} "));
            for field in [
                format!("service={service}"),
                format!("path={path} "),
                format!("route={route} "),
                format!("status={status} "),
                "method=GET".to_owned(),
                "latency_ms=".to_owned(),
            ] {
                assert!(line.contains(&field), "{field:?} missing from: {line}");
            }
        }
    }
}
