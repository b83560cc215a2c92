//! The public report page (`/r/{token}`, [`xf_tower::ReportPageService`]) on both stores: a
//! real scan of a hostile fixture site served on loopback, shared as a report and opened;
//! view counting (GET yes, HEAD no), expiry, unknown tokens, safe headers, escaping; and the
//! page rendered by headless Chromium at phone and desktop widths, not blank and without
//! console errors.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::json;
use tower::ServiceExt;
use xf_core::runtime::WorkerOptions;
use xf_core::testing::TestStore;
use xf_core::NewReport;
use xf_tests::TestApp;

/// A page of the hostile site.
fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
         <meta name=\"viewport\" content=\"width=device-width\"></head><body>{body}</body></html>"
    )
}

/// The hostile title: markup, quotes and an ampersand, as a crawled site might have; over
/// 60 characters, so that the scan reports it (`title_too_long`) with the title as evidence.
const HOSTILE_TITLE: &str = "&lt;script&gt;alert(&quot;title&quot;)&lt;/script&gt; &amp; \"quoted\" 'single' and a tail long enough";
/// The same as the crawler reads it (entities decoded).
const HOSTILE_TITLE_TEXT: &str = "<script>alert(\"title\")</script>";

/// Serves the hostile site on a loopback port: a start page with the hostile title and a
/// link whose target carries markup, and a page without a title. While `legacy` holds, the
/// start page also links to an old page with more problems (a site getting better between
/// scans, for the report's trend).
async fn hostile_site(legacy: Arc<AtomicBool>) -> SocketAddr {
    let start = move || {
        let old = if legacy.load(Ordering::SeqCst) {
            "<a href=\"/legacy\">Legacy</a> "
        } else {
            ""
        };
        page(
            HOSTILE_TITLE,
            &format!(
                "<h1>Home</h1><p>Welcome.</p>\
                 <a href=\"/about\">About</a> {old}\
                 <a href=\"/x&quot;&gt;&lt;img src=x onerror=alert(1)&gt;\">broken</a>"
            ),
        )
    };
    let about = "<!doctype html><html><head></head><body><p>No title here.</p></body></html>";
    let legacy_page = "<!doctype html><html><head></head><body><p>Old.</p>\
        <img src=\"/old.png\"><a href=\"/gone\">gone</a></body></html>";
    let app = axum::Router::new()
        .route(
            "/",
            axum::routing::get(move || {
                let start = start();
                async move { axum::response::Html(start) }
            }),
        )
        .route(
            "/legacy",
            axum::routing::get(move || async move { axum::response::Html(legacy_page) }),
        )
        .route(
            "/about",
            axum::routing::get(move || async move { axum::response::Html(about) }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// An app that may crawl loopback, a completed real scan of the hostile site, and a report
/// of it expiring in 7 days: the app and the report's token.
async fn shared_scan(store: Arc<dyn TestStore>) -> (TestApp, String, String) {
    shared_scans(store, 1).await
}

/// The same after `scans` scans a day apart (the site fixes its legacy page after the first
/// of several), the report showing the last.
async fn shared_scans(store: Arc<dyn TestStore>, scans: usize) -> (TestApp, String, String) {
    let legacy = Arc::new(AtomicBool::new(scans > 1));
    let site = hostile_site(Arc::clone(&legacy)).await;
    let app = TestApp::configured(store, |b| b.allow_private_targets(true));
    let owner = app.organization("Owner", "growth").await;
    let created = app
        .post(
            "/properties",
            &owner.live_key,
            json!({"url": format!("http://localhost:{}/", site.port()), "name": "<b>Acme</b> & \"Co\""}),
        )
        .await;
    let property_id = created.expect(201)["property"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let workers = app
        .xf
        .spawn_workers(WorkerOptions::new().poll_interval(Duration::from_millis(50)));
    let mut job_id = String::new();
    for scan in 0..scans {
        if scan > 0 {
            app.clock.advance(chrono::Duration::days(1));
            legacy.store(false, Ordering::SeqCst);
        }
        let queued = app
            .post(
                &format!("/properties/{property_id}/scans"),
                &owner.live_key,
                json!({}),
            )
            .await;
        job_id = queued.expect(202)["job"]["id"].as_str().unwrap().to_owned();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let job = app.get(&format!("/jobs/{job_id}"), &owner.live_key).await;
            let status = job.expect(200)["job"]["status"]
                .as_str()
                .unwrap()
                .to_owned();
            if status == "completed" {
                break;
            }
            assert!(
                status != "failed" && Instant::now() < deadline,
                "{}",
                job.body
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    workers.shutdown(Duration::from_secs(5)).await;
    let report = app
        .xf
        .admin()
        .create_report(NewReport {
            property_id,
            scan_id: job_id,
            expires_at: app.xf.now().plus(chrono::Duration::days(7)),
        })
        .await
        .unwrap();
    (app, report.token, owner.live_key)
}

/// An answer of the page service.
struct Page {
    status: StatusCode,
    headers: http::HeaderMap,
    body: String,
}

impl Page {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// Asserts the safety headers every answer carries.
    #[track_caller]
    fn assert_safe_headers(&self) {
        assert_eq!(self.header("content-type"), "text/html; charset=utf-8");
        let policy = self.header("content-security-policy");
        assert!(
            policy.starts_with("default-src 'none'; style-src 'sha256-"),
            "{policy}"
        );
        assert!(!policy.contains("unsafe"), "{policy}");
        assert_eq!(self.header("x-content-type-options"), "nosniff");
        assert_eq!(self.header("referrer-policy"), "no-referrer");
        assert_eq!(self.header("x-frame-options"), "DENY");
        assert_eq!(self.header("cache-control"), "no-store");
        assert!(self.header("x-request-id").starts_with("req_"));
    }
}

async fn open(app: &TestApp, method: Method, path: &str) -> Page {
    let service = xf_tower::ReportPageService::new(app.xf.clone());
    let request = Request::builder()
        .method(method)
        .uri(path)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = service.oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    Page {
        status: parts.status,
        headers: parts.headers,
        body: String::from_utf8(body.to_vec()).expect("UTF-8 HTML"),
    }
}

async fn view_count(app: &TestApp, key: &str, token: &str) -> u64 {
    let report = app.get(&format!("/reports/{token}"), key).await;
    report.expect(200)["report"]["viewCount"].as_u64().unwrap()
}

async fn the_page_shows_the_audit_escaped_and_counts_views(store: Arc<dyn TestStore>) {
    let (app, token, key) = shared_scan(store).await;
    let path = format!("/{token}");

    let page = open(&app, Method::GET, &path).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    page.assert_safe_headers();
    let html = &page.body;
    assert!(html.starts_with("<!DOCTYPE html>") || html.starts_with("<!doctype html>"));
    // What came from the site (or the customer) is there, escaped, and never as markup.
    assert!(
        html.contains("&lt;b&gt;Acme&lt;/b&gt; &amp; &quot;Co&quot;"),
        "{html}"
    );
    assert!(!html.contains("<b>Acme"));
    assert!(!html.contains(HOSTILE_TITLE_TEXT));
    assert!(
        html.contains("&lt;script&gt;alert(&quot;title&quot;)&lt;/script&gt;"),
        "{html}"
    );
    assert!(!html.contains("<script"));
    assert!(!html.contains("<img"));
    assert!(
        html.contains("onerror=alert(1)"),
        "the broken link's URL is listed"
    );
    assert!(!html.contains(" style="));
    // The audit: findings by check, with how to fix them.
    assert!(html.contains("title_missing"), "{html}");
    assert!(html.contains("broken_internal_link") || html.contains("Broken internal link"));
    assert_eq!(view_count(&app, &key, &token).await, 1);

    // HEAD: the same answer without a body, and no view.
    let head = open(&app, Method::HEAD, &path).await;
    assert_eq!(head.status, StatusCode::OK);
    head.assert_safe_headers();
    assert!(head.body.is_empty());
    assert_eq!(view_count(&app, &key, &token).await, 1);
    open(&app, Method::GET, &path).await;
    assert_eq!(view_count(&app, &key, &token).await, 2);

    // Other methods.
    let post = open(&app, Method::POST, &path).await;
    assert_eq!(post.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(post.header("allow"), "GET, HEAD");
    post.assert_safe_headers();
    assert_eq!(view_count(&app, &key, &token).await, 2);

    // Expired: a page that says so, 410, not cached, no view counted.
    app.clock.advance(chrono::Duration::days(7));
    let expired = open(&app, Method::GET, &path).await;
    assert_eq!(expired.status, StatusCode::GONE);
    expired.assert_safe_headers();
    assert!(expired.body.contains("expired"), "{}", expired.body);
    assert!(expired.body.contains("&lt;b&gt;Acme"));
    assert!(
        !expired.body.contains("title_missing"),
        "an expired page shows no audit"
    );
    assert_eq!(view_count(&app, &key, &token).await, 2);
}

async fn unknown_tokens_and_paths_are_a_plain_404(store: Arc<dyn TestStore>) {
    let app = TestApp::over(store);
    for path in [
        "/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "/short",
        "/%00",
        "/%ZZ",
        "/",
        "/a/b",
    ] {
        let page = open(&app, Method::GET, path).await;
        assert_eq!(page.status, StatusCode::NOT_FOUND, "{path}");
        page.assert_safe_headers();
        assert!(page.body.contains("not found"), "{path}: {}", page.body);
    }
}

macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(std::sync::Arc::new(xf_storage_memory::MemoryStore::new())).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(std::sync::Arc::new(xf_storage_postgres::testing::fresh_database().await)).await
                }
            )*
        }
    };
}

on_both_stores!(
    the_page_shows_the_audit_escaped_and_counts_views,
    unknown_tokens_and_paths_are_a_plain_404,
);

// -------------------------------------------------------------------------------------------
// Headless Chromium
// -------------------------------------------------------------------------------------------

/// Debian's Chromium (`.ci/run` installs it where it is missing), or `XF_CHROMIUM`.
fn chromium() -> String {
    std::env::var("XF_CHROMIUM").unwrap_or_else(|_| "chromium".to_owned())
}

/// Renders `url` at `width`×`height` into `png`; the console messages the page logged.
fn render(url: &str, width: u32, height: u32, png: &Path) -> Vec<String> {
    let output = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            &format!("--window-size={width},{height}"),
            &format!("--screenshot={}", png.display()),
            url,
        ])
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} ({e}): install Debian's chromium package (`.ci/run` does) \
                 or set XF_CHROMIUM",
                chromium()
            )
        });
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|line| line.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect()
}

/// How many distinct colours a PNG has, and its size.
fn colours(png: &Path) -> (usize, u32, u32) {
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(png).expect("the screenshot exists"),
    ));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut pixels = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut pixels).expect("a frame");
    let channels = info.color_type.samples();
    let mut seen = std::collections::HashSet::new();
    for pixel in pixels[..info.buffer_size()].chunks(channels) {
        seen.insert(pixel.to_vec());
    }
    (seen.len(), info.width, info.height)
}

/// Where the screenshots go: `target/report-page/` (the README's are copies).
fn screenshot_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/report-page");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_renders_the_page_at_phone_and_desktop_widths() {
    let (app, token, _) = shared_scans(Arc::new(xf_storage_memory::MemoryStore::new()), 3).await;
    // The page service on a real socket, mounted at /r as a host would.
    let router =
        axum::Router::new().nest_service("/r", xf_tower::ReportPageService::new(app.xf.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    let url = format!("http://{addr}/r/{token}");
    let dir = screenshot_dir();

    // The console check is real: a page with a blocked inline script is caught.
    let control = dir.join("control.html");
    std::fs::write(
        &control,
        "<!doctype html><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\">\
         <p>control</p><script>console.log('blocked')</script>",
    )
    .unwrap();
    let control_png = dir.join("control.png");
    let caught = tokio::task::spawn_blocking(move || {
        render(
            &format!("file://{}", control.display()),
            400,
            300,
            &control_png,
        )
    })
    .await
    .unwrap();
    assert!(
        !caught.is_empty(),
        "a CSP violation shows as a console message"
    );

    for (name, width, height) in [("phone", 390, 844), ("desktop", 1280, 900)] {
        let png = dir.join(format!("report-{name}.png"));
        let _ = std::fs::remove_file(&png);
        let (url, target) = (url.clone(), png.clone());
        let console = tokio::task::spawn_blocking(move || render(&url, width, height, &target))
            .await
            .unwrap();
        assert_eq!(console, Vec::<String>::new(), "{name}: console messages");
        let (distinct, w, h) = colours(&png);
        assert_eq!((w, h), (width, height), "{name}");
        assert!(
            distinct > 50,
            "{name}: the screenshot has {distinct} colours: blank"
        );
    }
    // The trend as the browser built it: the chart of the three scans, the site better after
    // the first (its legacy page gone), and what the last scan changed.
    let dom_url = url.clone();
    let dom = tokio::task::spawn_blocking(move || {
        let output = Command::new(chromium())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--dump-dom",
                &dom_url,
            ])
            .output()
            .expect("run chromium");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    })
    .await
    .unwrap();
    let label_start = dom
        .find("aria-label=\"Score of the last 3 scans, oldest first: ")
        .unwrap_or_else(|| panic!("no trend chart in the DOM: {dom}"));
    let label = &dom[label_start..];
    let label = &label[..label[12..].find('"').unwrap() + 13];
    let scores: Vec<u32> = label
        .trim_end_matches('"')
        .rsplit(": ")
        .next()
        .unwrap()
        .split(", ")
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(scores.len(), 3, "{label}");
    assert!(scores[0] < scores[1], "the site got better: {scores:?}");
    assert_eq!(scores[1], scores[2], "{scores:?}");
    assert_eq!(dom.matches("class=\"trend-point").count(), 3);
    assert!(dom.contains("<polyline class=\"trend-line\""), "{dom}");
    assert!(dom.contains("Since the previous scan"));
    // The chart sits in the first screenful of the desktop screenshot, above the findings.
    assert!(dom.find("trend-title").unwrap() < dom.find("findings-title").unwrap_or(usize::MAX));
    // Three GETs by the browser, three views.
    let report = app.xf.store().get_report(&token).await.unwrap().unwrap();
    assert_eq!(report.view_count, 3);
}
