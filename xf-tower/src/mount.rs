//! Mounting a service under a path prefix without a framework that does it for the host.
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

use crate::{Body, ResponseFuture};

/// When the request's path is `prefix` (which becomes `/`) or lies below it, takes `prefix`
/// off the path, keeps the query string, remembers the original URI for the request log, and
/// returns true. Otherwise leaves the request untouched and returns false.
///
/// `prefix` is a path without a trailing slash, such as `/api/v1`.
pub fn strip_prefix<B>(request: &mut Request<B>, prefix: &str) -> bool {
    let rest = match request.uri().path().strip_prefix(prefix) {
        Some("") => "/",
        Some(rest) if rest.starts_with('/') => rest,
        _ => return false,
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
        let mounted = StripPrefix::new("/api/v1", XfService::new(xf));
        call(mounted.clone(), "/api/v1/jobs/job_x", "r-strip").await;
        call(mounted, "/elsewhere", "r-outside").await;

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
