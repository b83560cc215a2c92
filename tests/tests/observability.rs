//! xf-server observed as an operator observes it. A real Prometheus (Debian's `prometheus`
//! package; `.ci/test` installs it) scrapes it while a scan crawls a site, its outcome
//! reaches a webhook, and pins are published to the Pinterest stand-in (one after refreshing
//! its token, one on a channel whose grant was revoked); then the test asks Prometheus' HTTP
//! API for each family of xf's metrics and checks that it says what happened: counts exactly,
//! histograms with observations. Meanwhile xf-server exports its spans over OTLP/HTTP
//! (`--otlp-endpoint`) to a collector stand-in, which decodes them with the OpenTelemetry
//! protocol's own message types: each job attempt, delivery attempt and publish step is a
//! span with its ids.
//!
//! xf-server runs in the test's process as its `main` runs it (logging included), on
//! PostgreSQL (so the pool's gauges are there), with `--metrics-listen`: Prometheus scrapes
//! that listener every second.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use prost::Message;

use clap::Parser;
use reqwest::{Client, Method, RequestBuilder};
use serde_json::{json, Value};
use xf_tests::platforms::{PlatformStandIn, Route, PINTEREST_CLIENT_ID, PINTEREST_CLIENT_SECRET};
use xf_tests::receiver::{Answer, Receiver};

const ADMIN_TOKEN: &str = "prometheus-admin-token";
const ACCESS: &str = "pina_access-of-studio";
const REFRESH: &str = "pinr_refresh-of-studio";
const REFRESHED: &str = "pina_refreshed";
const GONE_ACCESS: &str = "pina_access-of-gone";
const GONE_REFRESH: &str = "pinr_revoked";

/// The `prometheus` binary: `XF_PROMETHEUS`, else `prometheus` on the `PATH`.
fn prometheus_binary() -> String {
    std::env::var("XF_PROMETHEUS").unwrap_or_else(|_| "prometheus".to_owned())
}

fn free_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("an address")
}

/// A Prometheus server scraping `target` every second; killed when dropped.
struct Prometheus {
    child: Child,
    base: String,
    dir: PathBuf,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Prometheus {
    async fn start(target: SocketAddr, dir: &Path) -> Prometheus {
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: xf\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let listen = free_port();
        let child = Command::new(prometheus_binary())
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={listen}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run {} ({e}): install Debian's prometheus package (`.ci/test` does)",
                    prometheus_binary()
                )
            });
        let prometheus = Prometheus {
            child,
            base: format!("http://{listen}"),
            dir: dir.to_owned(),
        };
        let client = Client::new();
        for _ in 0..300 {
            let ready = client
                .get(format!("{}/-/ready", prometheus.base))
                .send()
                .await;
            if ready.is_ok_and(|r| r.status().is_success()) {
                return prometheus;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "prometheus did not get ready:\n{}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        );
    }

    /// The series `query` returns now: each one's labels and value.
    async fn query(&self, query: &str) -> Vec<(Value, f64)> {
        let asked = Client::new()
            .get(format!("{}/api/v1/query", self.base))
            .query(&[("query", query)]);
        let answer = json_of(asked).await;
        assert_eq!(answer["status"], "success", "{query}: {answer}");
        answer["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|series| {
                let value = series["value"][1].as_str().unwrap().parse().unwrap();
                (series["metric"].clone(), value)
            })
            .collect()
    }

    /// Waits (20 s at most) until `query` returns one series whose value is `expected`, and
    /// fails with what it returned and what xf-server showed otherwise.
    async fn expect(&self, query: &str, expected: f64, xf: &XfServer) {
        let mut last = Vec::new();
        for _ in 0..200 {
            last = self.query(query).await;
            if last.len() == 1 && last[0].1 == expected {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "{query}: expected {expected}, Prometheus has {last:?}; xf-server's /metrics:\n{}",
            xf.scrape().await
        );
    }

    /// Waits (20 s at most) until `query` returns one series with a value above zero.
    async fn expect_positive(&self, query: &str, xf: &XfServer) {
        let mut last = Vec::new();
        for _ in 0..200 {
            last = self.query(query).await;
            if last.len() == 1 && last[0].1 > 0.0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "{query}: expected a value above zero, Prometheus has {last:?}; xf-server's \
             /metrics:\n{}",
            xf.scrape().await
        );
    }
}

/// A span as the collector stand-in received it: its name and its attributes as text.
#[derive(Debug, Clone)]
struct ExportedSpan {
    name: String,
    attributes: BTreeMap<String, String>,
    service: Option<String>,
}

/// An OTLP/HTTP collector stand-in: `POST /v1/traces` with a protobuf
/// `ExportTraceServiceRequest`, decoded; anything that does not decode fails the test.
#[derive(Clone, Default)]
struct Collector {
    spans: Arc<Mutex<Vec<ExportedSpan>>>,
    refused: Arc<Mutex<Vec<String>>>,
}

impl Collector {
    async fn start(&self) -> String {
        let collector = self.clone();
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |headers: axum::http::HeaderMap, body: bytes::Bytes| {
                let collector = collector.clone();
                async move {
                    let content_type = headers
                        .get("content-type")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    match ExportTraceServiceRequest::decode(body) {
                        Ok(request) if content_type == "application/x-protobuf" => {
                            collector.keep(request);
                            axum::http::StatusCode::OK
                        }
                        Ok(_) => collector.refuse(format!("content type {content_type:?}")),
                        Err(error) => collector.refuse(error.to_string()),
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }

    fn keep(&self, request: ExportTraceServiceRequest) {
        let text = |value: &Option<opentelemetry_proto::tonic::common::v1::AnyValue>| match value
            .as_ref()
            .and_then(|v| v.value.as_ref())
        {
            Some(AnyValue::StringValue(s)) => s.clone(),
            Some(AnyValue::IntValue(n)) => n.to_string(),
            Some(AnyValue::BoolValue(b)) => b.to_string(),
            Some(AnyValue::DoubleValue(d)) => d.to_string(),
            other => format!("{other:?}"),
        };
        let mut spans = self.spans.lock().unwrap();
        for resource in request.resource_spans {
            let service = resource.resource.as_ref().and_then(|r| {
                r.attributes
                    .iter()
                    .find(|kv| kv.key == "service.name")
                    .map(|kv| text(&kv.value))
            });
            for scope in resource.scope_spans {
                for span in scope.spans {
                    spans.push(ExportedSpan {
                        name: span.name,
                        attributes: span
                            .attributes
                            .iter()
                            .map(|kv| (kv.key.clone(), text(&kv.value)))
                            .collect(),
                        service: service.clone(),
                    });
                }
            }
        }
    }

    fn refuse(&self, why: String) -> axum::http::StatusCode {
        self.refused.lock().unwrap().push(why);
        axum::http::StatusCode::BAD_REQUEST
    }

    fn named(&self, name: &str) -> Vec<ExportedSpan> {
        let spans = self.spans.lock().unwrap();
        spans.iter().filter(|s| s.name == name).cloned().collect()
    }
}

/// xf-server, run as its `main` runs it, in a task of the test's runtime.
struct XfServer {
    base: String,
    metrics: SocketAddr,
    client: Client,
    task: tokio::task::JoinHandle<Result<(), xf_server::StartError>>,
}

impl Drop for XfServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl XfServer {
    fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.base))
            .timeout(Duration::from_secs(20))
    }

    async fn admin(&self, method: Method, path: &str, body: Value) -> Value {
        let answer = self
            .request(method, &format!("/admin{path}"))
            .bearer_auth(ADMIN_TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = answer.status();
        let body: Value = answer.json().await.unwrap();
        assert!(status.is_success(), "{path}: {status} {body}");
        body["data"].clone()
    }

    async fn scrape(&self) -> String {
        self.client
            .get(format!("http://{}/metrics", self.metrics))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }
}

/// An organization on `plan` with `limits`, and its live key.
async fn organization(xf: &XfServer, name: &str, plan: &str, limits: Value) -> (String, String) {
    let created = xf
        .admin(
            Method::POST,
            "/organizations",
            json!({"name": name, "plan": plan}),
        )
        .await;
    let id = created["organization"]["id"].as_str().unwrap().to_owned();
    if limits != Value::Null {
        xf.admin(
            Method::PATCH,
            &format!("/organizations/{id}"),
            json!({ "limits": limits }),
        )
        .await;
    }
    (id, created["liveKey"].as_str().unwrap().to_owned())
}

/// Connects a Pinterest channel to `org` whose token expires in `minutes`.
async fn connect_pinterest(
    xf: &XfServer,
    org: &str,
    account: &str,
    tokens: (&str, &str),
    minutes: i64,
) {
    let expires = chrono::Utc::now() + chrono::Duration::minutes(minutes);
    xf.admin(
        Method::POST,
        &format!("/organizations/{org}/channels"),
        json!({
            "platform": "pinterest", "accountId": account, "displayName": account,
            "accessToken": tokens.0, "refreshToken": tokens.1, "expiresAt": expires,
        }),
    )
    .await;
}

/// Uploads `image` for Pinterest with the organization's key; the item's id.
async fn pin_image(xf: &XfServer, key: &str, image: &[u8]) -> String {
    let (content_type, body) = xf_tests::media::multipart(
        &[
            ("platforms", r#"["pinterest"]"#),
            ("pinterestBoardId", "board-9"),
        ],
        Some(("look.jpg", image)),
    );
    let answer = xf
        .request(Method::POST, "/api/v1/media/images")
        .header("x-api-key", key)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = answer.status();
    let body: Value = answer.json().await.unwrap();
    assert_eq!(status, 201, "{body}");
    body["data"][0]["id"].as_str().unwrap().to_owned()
}

/// The JSON body of the answer to `request`.
async fn json_of(request: RequestBuilder) -> Value {
    request.send().await.unwrap().json().await.unwrap()
}

/// Reads the image until its status is `status` (20 s at most).
async fn wait_for_image(xf: &XfServer, key: &str, id: &str, status: &str) {
    let mut shown = Value::Null;
    for _ in 0..400 {
        let path = format!("/api/v1/media/images/{id}");
        shown = json_of(xf.request(Method::GET, &path).header("x-api-key", key)).await;
        if shown["data"]["status"] == status {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the image never became {status}: {shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_sees_the_metrics_and_traces_of_what_xf_server_did() {
    let dir = std::env::temp_dir().join(format!("xf-prometheus-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).unwrap();

    // The world xf-server talks to: a site, a webhook receiver, Pinterest.
    let site_dir = dir.join("site");
    std::fs::create_dir_all(&site_dir).unwrap();
    let index = "<!doctype html><html lang=\"en\"><head><title>Metrics fixture</title></head>\
                 <body><h1>Metrics</h1><a href=\"/about.html\">About</a> \
                 <a href=\"/missing.html\">Gone</a></body></html>";
    let about = "<!doctype html><html lang=\"en\"><head><title>About the fixture</title></head>\
                 <body><h1>About</h1><a href=\"/\">Home</a></body></html>";
    std::fs::write(site_dir.join("index.html"), index).unwrap();
    std::fs::write(site_dir.join("about.html"), about).unwrap();
    let site = xf_tests::corpus::StaticSite::serve(&site_dir)
        .await
        .unwrap();
    let receiver = Receiver::start(Answer::Status(204)).await;
    let platforms = PlatformStandIn::start().await;
    let pinterest = platforms.pinterest_config();

    // xf-server on a database of its own.
    let store = xf_storage_postgres::testing::fresh_database().await;
    let database = store
        .pool()
        .connect_options()
        .get_database()
        .unwrap()
        .to_owned();
    store.pool().close().await;
    let server_url = xf_storage_postgres::testing::server_url();
    let database_url = format!("{}/{database}", server_url.rsplit_once('/').unwrap().0);
    let (listen, metrics) = (free_port(), free_port());
    let base = format!("http://{listen}");
    let media_dir = dir.join("media");
    let args = [
        "xf-server",
        "--listen",
        &listen.to_string(),
        "--metrics-listen",
        &metrics.to_string(),
        "--public-base-url",
        &base,
        "--store",
        &database_url,
        "--secret-key",
        "a-secret-key-of-the-prometheus-test-0123456789",
        "--admin-token",
        ADMIN_TOKEN,
        "--allow-private-targets",
        "--media-dir",
        media_dir.to_str().unwrap(),
        "--pinterest-client-id",
        PINTEREST_CLIENT_ID,
        "--pinterest-client-secret",
        PINTEREST_CLIENT_SECRET,
        "--pinterest-api-base-url",
        &pinterest.api_base_url,
    ]
    .map(str::to_owned);
    let collector = Collector::default();
    let otlp_url = collector.start().await;
    let config = xf_server::Config::try_parse_from(args).expect("valid flags");
    let xf = XfServer {
        base,
        metrics,
        client: Client::new(),
        task: tokio::spawn(xf_server::run(config)),
    };
    for _ in 0..300 {
        let ready = xf.request(Method::GET, "/readyz").send().await;
        if ready.is_ok_and(|r| r.status().is_success()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // `/metrics` is on its own listener, not on the API's.
    let on_api = xf.request(Method::GET, "/metrics").send().await.unwrap();
    assert_eq!(on_api.status(), 404);
    let prometheus = Prometheus::start(metrics, &dir.join("prometheus")).await;
    // The spans: exported as xf-server's `main` sets its logging up, with --otlp-endpoint.
    let log = xf_server::init_logging(xf_server::LogFormat::Text, Some(&otlp_url))
        .expect("logging with OTLP export");

    // The developer API's organizations (`growth`) and the media API's (`pro`).
    let (_, key) = organization(&xf, "Agency", "growth", Value::Null).await;
    let (_, limited_key) = organization(&xf, "Limited", "growth", json!({"readPerHour": 2})).await;
    let (studio, studio_key) = organization(&xf, "Studio", "pro", Value::Null).await;
    let (gone, gone_key) = organization(&xf, "Gone", "pro", Value::Null).await;

    // Requests: a property created once and replayed once by its Idempotency-Key; three
    // reads on a limit of two.
    let mut property_id = String::new();
    for _ in 0..2 {
        let answer = xf
            .request(Method::POST, "/api/v1/properties")
            .bearer_auth(&key)
            .header("idempotency-key", "site-once")
            .json(&json!({ "url": site.url("/") }))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 201);
        let body: Value = answer.json().await.unwrap();
        property_id = body["data"]["property"]["id"].as_str().unwrap().to_owned();
    }
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let answer = xf
            .request(Method::GET, "/api/v1/properties")
            .bearer_auth(&limited_key)
            .send()
            .await
            .unwrap();
        statuses.push(answer.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 429]);

    // A scan whose outcome goes to a webhook.
    let hook = xf
        .request(Method::POST, "/api/v1/webhooks")
        .bearer_auth(&key)
        .json(&json!({"name": "Outcomes", "url": receiver.url, "events": ["job.completed"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(hook.status(), 201);
    let scans = format!("/api/v1/properties/{property_id}/scans");
    let queued = json_of(
        xf.request(Method::POST, &scans)
            .bearer_auth(&key)
            .json(&json!({})),
    )
    .await;
    let job_id = queued["data"]["job"]["id"].as_str().unwrap().to_owned();
    let mut job = Value::Null;
    for _ in 0..400 {
        let path = format!("/api/v1/jobs/{job_id}");
        job =
            json_of(xf.request(Method::GET, &path).bearer_auth(&key)).await["data"]["job"].clone();
        if job["status"] == "completed" || job["status"] == "failed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(job["status"], "completed", "{job}");
    let pages_scanned = job["result"]["pagesScanned"].as_f64().unwrap();
    receiver.wait_for(1, Duration::from_secs(20)).await;

    // Publishing: a pin whose expiring token is refreshed first, held at Pinterest while
    // the job runs; and a pin on a channel whose grant was revoked.
    platforms.grant(ACCESS, Some((REFRESH, REFRESHED)));
    connect_pinterest(&xf, &studio, "pin-studio", (ACCESS, REFRESH), 1).await;
    connect_pinterest(&xf, &gone, "pin-gone", (GONE_ACCESS, GONE_REFRESH), 60).await;
    let held = platforms.hold(Route::PinterestPin, false);
    let look = xf_tests::media::image("jpg", 1000, 1500);
    let other_look = xf_tests::media::image("jpg", 800, 1200);
    let pinned = pin_image(&xf, &studio_key, &look).await;
    held.arrived().await;
    prometheus
        .expect(r#"xf_jobs{type="media-publish",state="running"}"#, 1.0, &xf)
        .await;
    held.release();
    wait_for_image(&xf, &studio_key, &pinned, "completed").await;
    let refused = pin_image(&xf, &gone_key, &other_look).await;
    wait_for_image(&xf, &gone_key, &refused, "failed").await;

    // An open resumable upload, 1,000 bytes into its 5,000.
    let created = xf
        .request(Method::POST, "/api/v1/media/uploads")
        .header("x-api-key", &studio_key)
        .header("tus-resumable", "1.0.0")
        .header("upload-length", "5000")
        .header("upload-metadata", "filename bGF1bmNoLm1wNA==")
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let location = created.headers()["location"].to_str().unwrap().to_owned();
    let path = location
        .strip_prefix(&xf.base)
        .unwrap_or(&location)
        .to_owned();
    let patched = xf
        .request(Method::PATCH, &path)
        .header("x-api-key", &studio_key)
        .header("tus-resumable", "1.0.0")
        .header("upload-offset", "0")
        .header("content-type", "application/offset+octet-stream")
        .body(vec![7u8; 1000])
        .send()
        .await
        .unwrap();
    assert_eq!(patched.status(), 204);

    // What Prometheus scraped: each series and the value it must reach.
    let requests = "xf_http_request_duration_seconds_count";
    let api = r#"service="api",route="/properties""#;
    let runs = "xf_job_run_duration_seconds_count";
    let attempts = r#"xf_publish_attempts_total{platform="pinterest""#;
    let exact: Vec<(String, f64)> = vec![
        // Requests: the property created and replayed, three reads on a limit of two.
        (
            format!(r#"{requests}{{{api},method="POST",status="2xx"}}"#),
            2.0,
        ),
        (
            format!(r#"{requests}{{{api},method="GET",status="2xx"}}"#),
            2.0,
        ),
        (
            format!(r#"{requests}{{{api},method="GET",status="4xx"}}"#),
            1.0,
        ),
        (
            format!(
                r#"{requests}{{service="admin",route="/organizations",method="POST",status="2xx"}}"#
            ),
            4.0,
        ),
        (r#"xf_rate_limit_refusals_total{kind="read"}"#.into(), 1.0),
        ("xf_idempotency_replays_total".into(), 1.0),
        // Jobs: what ran, and nothing left running or waiting.
        (
            format!(r#"{runs}{{type="seo-scan",outcome="completed"}}"#),
            1.0,
        ),
        (
            format!(r#"{runs}{{type="media-publish",outcome="completed"}}"#),
            1.0,
        ),
        (
            format!(r#"{runs}{{type="media-publish",outcome="failed"}}"#),
            1.0,
        ),
        ("sum(xf_jobs) or vector(0)".into(), 0.0),
        // Webhooks: the scan's outcome, delivered at once.
        (
            r#"xf_webhook_delivery_duration_seconds_count{outcome="delivered",status="2xx"}"#
                .into(),
            1.0,
        ),
        ("xf_webhook_messages_waiting".into(), 0.0),
        // The crawl: the two pages and the missing one; the bytes of the two.
        ("xf_crawl_pages_total".into(), 3.0),
        (
            "xf_crawl_bytes_total".into(),
            (index.len() + about.len()) as f64,
        ),
        (
            r#"xf_crawl_fetch_errors_total{kind="status_4xx"}"#.into(),
            1.0,
        ),
        ("xf_crawl_pages_per_scan_count".into(), 1.0),
        ("xf_crawl_pages_per_scan_sum".into(), pages_scanned),
        // Each phase of the one scan, timed once.
        (
            r#"xf_scan_phase_duration_seconds_count{phase="crawl"}"#.into(),
            1.0,
        ),
        (
            r#"xf_scan_phase_duration_seconds_count{phase="analysis"}"#.into(),
            1.0,
        ),
        (
            r#"xf_scan_phase_duration_seconds_count{phase="store"}"#.into(),
            1.0,
        ),
        // Publishing: the pin after a refresh, and the one on the revoked grant.
        (
            format!(r#"{attempts},outcome="published",error="none"}}"#),
            1.0,
        ),
        (
            format!(r#"{attempts},outcome="failed",error="channel_disconnected"}}"#),
            1.0,
        ),
        (
            r#"xf_token_refreshes_total{platform="pinterest",outcome="refreshed"}"#.into(),
            1.0,
        ),
        (
            r#"xf_token_refreshes_total{platform="pinterest",outcome="failed"}"#.into(),
            1.0,
        ),
        (
            r#"xf_channel_disconnections_total{platform="pinterest"}"#.into(),
            1.0,
        ),
        // Uploads: the two images, and the open resumable upload's first 1,000 bytes.
        (
            r#"xf_upload_bytes_total{kind="multipart"}"#.into(),
            (look.len() + other_look.len()) as f64,
        ),
        (r#"xf_upload_bytes_total{kind="resumable"}"#.into(), 1000.0),
        ("xf_tus_uploads_open".into(), 1.0),
        // The store: up, its default pool, no failed statement.
        ("xf_store_up".into(), 1.0),
        ("xf_store_pool_max_connections".into(), 10.0),
        ("xf_store_statement_errors_total".into(), 0.0),
    ];
    for (query, expected) in &exact {
        prometheus.expect(query, *expected, &xf).await;
    }
    // Histograms with observations, and gauges that only need to be there.
    for query in [
        r#"xf_http_request_duration_seconds_bucket{route="/properties",method="POST",le="+Inf"}"#,
        r#"xf_job_run_duration_seconds_sum{type="seo-scan"}"#,
        r#"xf_webhook_delivery_duration_seconds_bucket{outcome="delivered",le="+Inf"}"#,
        "xf_store_pool_connections",
    ] {
        prometheus.expect_positive(query, &xf).await;
    }
    let idle = prometheus.query("xf_store_pool_idle_connections").await;
    assert_eq!(idle.len(), 1, "{idle:?}");
    // Nothing rescued, no blob store failure: no series at all.
    assert!(prometheus.query("xf_job_rescues_total").await.is_empty());
    assert!(prometheus.query("xf_blob_errors_total").await.is_empty());

    drop(prometheus);
    drop(xf);

    // The spans: dropping the log's writer sends the last batch.
    tokio::task::block_in_place(|| drop(log));
    assert_eq!(*collector.refused.lock().unwrap(), Vec::<String>::new());
    let jobs = collector.named("job_attempt");
    let scan = jobs
        .iter()
        .find(|span| span.attributes.get("job_id") == Some(&job_id))
        .unwrap_or_else(|| panic!("no job_attempt span of {job_id} in {jobs:?}"));
    assert_eq!(scan.attributes["job_type"], "seo-scan");
    assert_eq!(scan.attributes["attempt"], "1");
    assert!(
        scan.attributes["organization_id"].starts_with("org_"),
        "{scan:?}"
    );
    assert_eq!(scan.service.as_deref(), Some("xf-server"));
    let publishing: Vec<_> = jobs
        .iter()
        .filter(|span| span.attributes.get("job_type").map(String::as_str) == Some("media-publish"))
        .collect();
    let organizations: std::collections::BTreeSet<&str> = publishing
        .iter()
        .map(|span| span.attributes["organization_id"].as_str())
        .collect();
    assert_eq!(
        organizations,
        [studio.as_str(), gone.as_str()].into(),
        "{publishing:?}"
    );
    let deliveries = collector.named("webhook_delivery");
    assert_eq!(deliveries.len(), 1, "{deliveries:?}");
    let delivery = &deliveries[0];
    assert!(
        delivery.attributes["webhook_id"].starts_with("wh_"),
        "{delivery:?}"
    );
    assert!(
        delivery.attributes["event_id"].starts_with("evt_"),
        "{delivery:?}"
    );
    assert_eq!(delivery.attributes["attempt"], "1");
    let steps = collector.named("publish_step");
    let stages: std::collections::BTreeSet<(&str, &str)> = steps
        .iter()
        .map(|span| {
            (
                span.attributes["media_id"].as_str(),
                span.attributes["stage"].as_str(),
            )
        })
        .collect();
    for stage in ["New", "Started", "Ready"] {
        assert!(
            stages.contains(&(pinned.as_str(), stage)),
            "{stage} of {pinned} in {steps:?}"
        );
    }
    assert!(steps
        .iter()
        .all(|span| span.attributes["platform"] == "pinterest"));
    let _ = std::fs::remove_dir_all(&dir);
}
