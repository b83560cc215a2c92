//! The public page of shared reports: [`ReportPageService`], the third tower service, which
//! hosts mount at `/r` (as `xf-server` does) so that a report's `publicUrl`,
//! `{public base URL}/r/{token}`, opens the audit.
//!
//! - `GET /{token}` is the audit of the report's scan as one self-contained HTML page (inline
//!   CSS, no scripts, fonts, images or trackers), counted as one view; `HEAD` answers the same
//!   headers and counts nothing.
//! - An expired report is `410 Gone` with a page that says so; an unknown or malformed token,
//!   and any other path, is a plain `404` page. Another method is `405` with `Allow`.
//! - Every answer carries a `Content-Security-Policy` that allows nothing but the page's own
//!   stylesheet (by its hash), `X-Content-Type-Options: nosniff`, `Referrer-Policy:
//!   no-referrer`, `X-Frame-Options: DENY`, `Cache-Control: no-store` (a cached page would
//!   count no view, and an expired one must not linger) and `X-Robots-Tag: noindex`.
//! - Every value that came from a crawled site is escaped (see `render`).

mod render;

use std::sync::LazyLock;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use base64::Engine;
use http::{header, HeaderValue, Method, StatusCode};
use sha2::{Digest, Sha256};
use xf_core::{Error, ReportPage, Xf};

use crate::request_id;

/// The policy: nothing may load or run but the page's one stylesheet, named by its hash.
static CONTENT_SECURITY_POLICY: LazyLock<HeaderValue> = LazyLock::new(|| {
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(render::STYLE));
    let policy = format!(
        "default-src 'none'; style-src 'sha256-{hash}'; img-src 'none'; base-uri 'none'; \
         form-action 'none'; frame-ancestors 'none'"
    );
    HeaderValue::from_str(&policy).expect("base64 is a valid header value")
});

/// The public report page service. Mount it at `/r`.
#[derive(Debug, Clone)]
pub struct ReportPageService {
    router: Router,
}

impl ReportPageService {
    /// The page service over `xf`.
    pub fn new(xf: Xf) -> Self {
        let metrics = Some(xf.metrics().requests());
        let router = Router::new()
            .route("/{token}", get(page).fallback(method_not_allowed))
            .fallback(not_found)
            .with_state(xf)
            .layer(tower_http::catch_panic::CatchPanicLayer::custom(panicked))
            .layer(axum::middleware::from_fn(safe_headers))
            .layer(request_id::Layer {
                service: request_id::Service::Report,
                prefix: "",
                // Inside the security headers, so a panic's answer has them too.
                panic: None,
                metrics,
                body_limits: None,
            });
        Self { router }
    }

    /// The axum `Router` inside.
    pub fn into_router(self) -> Router {
        self.router
    }
}

crate::router_service!(ReportPageService);

/// `GET` and `HEAD /{token}`.
async fn page(
    State(xf): State<Xf>,
    method: Method,
    token: Result<Path<String>, PathRejection>,
) -> Response {
    let Ok(Path(token)) = token else {
        return not_found().await;
    };
    match xf.report_page(&token, method == Method::GET).await {
        Ok(ReportPage::Live(audit)) => html(StatusCode::OK, render::audit_page(&audit)),
        Ok(ReportPage::Expired {
            property_name,
            expired_at,
        }) => html(
            StatusCode::GONE,
            render::expired_page(&property_name, expired_at),
        ),
        Err(Error::NotFound(_)) => not_found().await,
        Err(error @ Error::Unavailable { .. }) => {
            tracing::warn!(%error, "report page: storage unavailable");
            let mut response = html(
                StatusCode::SERVICE_UNAVAILABLE,
                render::message_page(
                    "Temporarily unavailable",
                    "This report cannot be shown right now. Please try again in a moment.",
                ),
            );
            let retry = error.retry_after_secs().unwrap_or(5).to_string();
            if let Ok(value) = HeaderValue::from_str(&retry) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
            response
        }
        Err(error) => {
            tracing::error!(%error, "report page failed");
            internal_error()
        }
    }
}

/// An HTML answer.
fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

/// The page of unknown tokens and paths.
async fn not_found() -> Response {
    html(StatusCode::NOT_FOUND, render::not_found_page())
}

/// Any method but `GET` and `HEAD`.
async fn method_not_allowed() -> Response {
    let mut response = html(
        StatusCode::METHOD_NOT_ALLOWED,
        render::message_page(
            "Method not allowed",
            "Report pages can only be viewed (GET or HEAD).",
        ),
    );
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
    response
}

fn internal_error() -> Response {
    html(
        StatusCode::INTERNAL_SERVER_ERROR,
        render::message_page(
            "Something went wrong",
            "This report cannot be shown because of an error on our side.",
        ),
    )
}

/// A panic in the handler: logged, answered with a plain error page.
fn panicked(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("report page handler panicked");
    internal_error()
}

/// The security and caching headers of every answer.
async fn safe_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        CONTENT_SECURITY_POLICY.clone(),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        "x-robots-tag",
        HeaderValue::from_static("noindex, nofollow"),
    );
    response
}
