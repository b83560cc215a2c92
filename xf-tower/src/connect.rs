//! The connect links' service: [`ConnectService`], which hosts mount at `/connect` (as
//! [`crate::Mounts`] does) so that a link, `{public base URL}/connect/{token}`, starts the
//! OAuth flow and the provider's callback, `{public base URL}/connect/callback`, ends it.
//!
//! - `GET /{token}` redirects (`303`) to the provider's authorization page, setting a cookie
//!   (`xf_connect_…`, ten minutes, `HttpOnly`, `SameSite=Lax`, `Secure` on an `https` base)
//!   that binds the flow to this browser, or back to the link's `returnUrl` with
//!   `status=error&code=link_expired` when the link expired.
//! - `GET /callback` redirects (`303`) to `returnUrl` with `status=connected&provider=…` and
//!   `channels=ch_…,…` (or `sites=N` for Google), or `status=error&provider=…&code=…`
//!   (`browser_mismatch` when it comes without the opening's cookie: a consent completed in
//!   another browser connects nothing).
//! - A link or a state that cannot be trusted (forged, altered, not a token) is a `400` page:
//!   with no trusted `returnUrl`, there is nowhere to send the user back to.
//!
//! Every answer carries `Cache-Control: no-store` and `Referrer-Policy: no-referrer` (the
//! URLs carry codes and states), and the pages a restrictive `Content-Security-Policy`.

use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use http::{header, HeaderValue, StatusCode};
use xf_core::connect::{BrowserBinding, Callback, ConnectStep, BROWSER_BINDING_PREFIX};
use xf_core::Xf;

use crate::request_id;

/// The connect service. Mount it at `/connect`.
#[derive(Debug, Clone)]
pub struct ConnectService {
    router: Router,
}

impl ConnectService {
    /// The service over `xf`.
    pub fn new(xf: Xf) -> Self {
        let metrics = Some(xf.metrics().requests());
        let router = Router::new()
            .route("/callback", get(callback))
            .route("/{token}", get(open))
            .fallback(not_found)
            .with_state(xf)
            .layer(request_id::Layer {
                service: request_id::Service::Connect,
                prefix: "",
                panic: Some(crate::middleware::panic_response),
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

crate::router_service!(ConnectService);

async fn open(State(xf): State<Xf>, Path(token): Path<String>) -> Response {
    let secure = xf.config().public_base_url.starts_with("https://");
    match xf.connect_open(&token) {
        ConnectStep::Consent { url, binding } => {
            let mut response = answer(ConnectStep::Redirect(url));
            if let Ok(cookie) = HeaderValue::try_from(binding_cookie(&binding, secure)) {
                response.headers_mut().append(header::SET_COOKIE, cookie);
            }
            response
        }
        step => answer(step),
    }
}

/// The cookie that keeps `binding` in the browser until the callback. No `Path`: its default,
/// the link's directory, is where the callback is, however the service is mounted. `Lax`: the
/// provider's redirect to the callback is a top-level `GET`, which carries it.
fn binding_cookie(binding: &BrowserBinding, secure: bool) -> String {
    format!(
        "{}={}; Max-Age={}; HttpOnly; SameSite=Lax{}",
        binding.name,
        binding.value,
        binding.max_age.as_secs(),
        if secure { "; Secure" } else { "" }
    )
}

async fn callback(
    State(xf): State<Xf>,
    RawQuery(query): RawQuery,
    headers: http::HeaderMap,
) -> Response {
    let mut callback = parse_callback(query.as_deref().unwrap_or(""));
    callback.bindings = bindings(&headers);
    answer(xf.connect_callback(callback).await)
}

/// The browser bindings among the request's cookies (at most 16: a browser keeps one per
/// flow it started, each for ten minutes).
fn bindings(headers: &http::HeaderMap) -> Vec<(String, String)> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|cookies| cookies.split(';'))
        .filter_map(|cookie| cookie.trim().split_once('='))
        .filter(|(name, _)| name.starts_with(BROWSER_BINDING_PREFIX))
        .take(16)
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

/// The callback's parameters; the first of each name counts, unknown ones are ignored.
fn parse_callback(query: &str) -> Callback {
    let mut callback = Callback::default();
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        let slot = match name.as_ref() {
            "code" => &mut callback.code,
            "state" => &mut callback.state,
            "error" => &mut callback.error,
            "error_description" => &mut callback.error_description,
            _ => continue,
        };
        if slot.is_none() {
            *slot = Some(value.into_owned());
        }
    }
    callback
}

fn answer(step: ConnectStep) -> Response {
    let mut response = match step {
        ConnectStep::Redirect(location) | ConnectStep::Consent { url: location, .. } => {
            match HeaderValue::try_from(location) {
                Ok(location) => {
                    (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response()
                }
                Err(_) => page(
                    StatusCode::BAD_REQUEST,
                    "The address to continue at is not valid.",
                ),
            }
        }
        ConnectStep::Refused(message) => page(StatusCode::BAD_REQUEST, &message),
    };
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

async fn not_found() -> Response {
    let mut response = answer(ConnectStep::Refused(
        "There is nothing here. Connect links are made by the application you came from.".into(),
    ));
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}

/// A small page saying `message`.
fn page(status: StatusCode, message: &str) -> Response {
    let markup = maud::html! {
        (maud::DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "Connecting an account" }
            }
            body {
                h1 { "Connecting an account" }
                p { (message) }
            }
        }
    };
    let mut response = (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        )],
        markup.into_string(),
    )
        .into_response();
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callback_takes_the_first_of_each_parameter_and_ignores_the_rest() {
        let callback = parse_callback(
            "code=abc%2F1&state=s1&state=s2&scopes=user.info.basic&error_description=x+y",
        );
        assert_eq!(callback.code.as_deref(), Some("abc/1"));
        assert_eq!(callback.state.as_deref(), Some("s1"));
        assert_eq!(callback.error, None);
        assert_eq!(callback.error_description.as_deref(), Some("x y"));
        let empty = parse_callback("");
        assert!(empty.code.is_none() && empty.state.is_none());
    }

    #[test]
    fn bindings_are_the_cookies_of_their_prefix_at_most_sixteen() {
        let mut headers = http::HeaderMap::new();
        let many: Vec<String> = (0..20).map(|n| format!("xf_connect_{n}=v{n}")).collect();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("theme=dark; {}; x=y", many.join("; "))).unwrap(),
        );
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("xf_connect_z=last"),
        );
        let found = bindings(&headers);
        assert_eq!(found.len(), 16);
        assert_eq!(found[0], ("xf_connect_0".to_owned(), "v0".to_owned()));
        assert!(found
            .iter()
            .all(|(name, _)| name.starts_with(BROWSER_BINDING_PREFIX)));
    }

    proptest::proptest! {
        /// Any bytes a `Cookie` header may carry read as bindings without a panic, each of the
        /// binding prefix, at most sixteen.
        #[test]
        fn any_cookie_header_reads_as_bindings(value in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let mut headers = http::HeaderMap::new();
            if let Ok(value) = HeaderValue::from_bytes(&value) {
                headers.insert(header::COOKIE, value);
            }
            let found = bindings(&headers);
            proptest::prop_assert!(found.len() <= 16);
            proptest::prop_assert!(found.iter().all(|(name, _)| name.starts_with(BROWSER_BINDING_PREFIX)));
        }

        /// Any query string reads as a callback without a panic.
        #[test]
        fn any_query_reads_as_a_callback(query in ".{0,400}") {
            let callback = parse_callback(&query);
            for value in [&callback.code, &callback.state, &callback.error, &callback.error_description] {
                proptest::prop_assert!(value.as_ref().is_none_or(|v| v.len() <= query.len()));
            }
        }
    }
}
