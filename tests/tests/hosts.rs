//! The host apps of `examples/` and the standalone server, each started on a real socket and
//! called over HTTP/1.1: the host's own route, the mounted API (health, an authenticated
//! endpoint with and without a key, a JSON body, a query string, unknown paths), and for
//! `xf-server` its admin API, its flags and its PostgreSQL store.

use std::future::Future;
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use clap::Parser;
use http::header::{AUTHORIZATION, CONTENT_TYPE, HOST};
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use sqlx::Executor;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use xf_core::{CreatedOrganization, Xf};
use xf_server::{Config, StartError, StoreConfig};
use xf_storage_memory::MemoryStore;
use xf_tower::Mounts;

const DEMO_LIVE_KEY: &str = "xf_live_hostsTestLiveKey0123456789abcdefABCDEF";
const DEMO_TEST_KEY: &str = "xf_test_hostsTestTestKey0123456789abcdefABCDEF";
const ADMIN_TOKEN: &str = "hosts-test-admin-token";
const SECRET_KEY: &str = "a secret of at least thirty-two bytes, for tests";

/// A response as the client saw it.
#[derive(Debug)]
struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    text: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|error| panic!("not JSON ({error}): {:?}", self.text))
    }

    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_else(|| panic!("no {name} header in {:?}", self.headers))
    }

    /// Asserts a success envelope with `status`, and returns `data`.
    #[track_caller]
    fn data(&self, status: u16) -> Value {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.text);
        let body = self.json();
        assert_eq!(
            body["meta"]["requestId"].as_str(),
            Some(self.header("x-request-id")),
            "body: {body}"
        );
        body["data"].clone()
    }

    /// Asserts an error envelope with `status` and `code`.
    #[track_caller]
    fn error(&self, status: u16, code: &str) {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.text);
        assert!(
            self.headers[CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("application/json"),
            "content type of {:?}",
            self.headers
        );
        let body = self.json();
        assert_eq!(body["error"]["code"], code, "body: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "body: {body}"
        );
        assert_eq!(
            body["meta"]["requestId"].as_str(),
            Some(self.header("x-request-id")),
            "body: {body}"
        );
    }
}

/// A request on a fresh HTTP/1.1 connection to `address`, with a JSON body when given.
async fn send(
    address: SocketAddr,
    method: Method,
    path: &str,
    bearer: Option<&str>,
    body: Option<Value>,
    extra_headers: &[(&str, &str)],
) -> Reply {
    let authorization = bearer.map(|token| format!("Bearer {token}"));
    let mut headers: Vec<(&str, &str)> = extra_headers.to_vec();
    if let Some(value) = &authorization {
        headers.push((AUTHORIZATION.as_str(), value));
    }
    let bytes = match &body {
        Some(json) => {
            headers.push((CONTENT_TYPE.as_str(), "application/json"));
            json.to_string().into_bytes()
        }
        None => Vec::new(),
    };
    send_bytes(address, method, path, &headers, bytes)
        .await
        .reply
}

async fn get(address: SocketAddr, path: &str, bearer: Option<&str>) -> Reply {
    send(address, Method::GET, path, bearer, None, &[]).await
}

/// How a test stops a host: a future to hand it as its shutdown signal.
type Shutdown = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

/// A task serving one of the host apps on a free port, over a memory store with the demo
/// organization, all of xf mounted with the admin API; aborted when dropped.
struct Host {
    address: SocketAddr,
    xf: Xf,
    demo: CreatedOrganization,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Drop for Host {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Host {
    /// Fires the host's shutdown signal and waits for it to stop: its server and its runtime.
    async fn shut_down(mut self) {
        if let Some(stop) = self.stop.take() {
            stop.send(()).expect("host still running");
        }
        self.finished().await;
    }

    /// Waits (10 s at most) for the host's task to end on its own.
    async fn finished(&mut self) {
        tokio::time::timeout(Duration::from_secs(10), &mut self.task)
            .await
            .expect("the host stops after its shutdown signal")
            .expect("the host's task ends without a panic");
        assert!(
            TcpStream::connect(self.address).await.is_err(),
            "the host no longer accepts connections"
        );
    }
}

/// Starts a host with `serve` (the example's own function), which a test stops with
/// [`Host::shut_down`]; when `signal` is set, the host stops on SIGTERM instead
/// (`xf_tower::shutdown_signal`).
async fn start_host<F, Fut>(serve: F, signal: bool) -> Host
where
    F: FnOnce(TcpListener, Mounts, Shutdown) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let xf = Xf::builder(Arc::new(MemoryStore::new()))
        .secret_key(xf_tests::TEST_SECRET.to_vec())
        .public_base_url("http://127.0.0.1")
        // The whole-host check crawls a loopback site and delivers to a loopback receiver.
        .allow_private_targets(true)
        .build()
        .expect("a complete configuration");
    let demo = xf
        .ensure_demo_organization(None, None)
        .await
        .expect("demo organization");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("local address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let shutdown: Shutdown = if signal {
        Box::pin(xf_tower::shutdown_signal())
    } else {
        Box::pin(async move {
            let _ = stopped.await;
        })
    };
    let serving = serve(
        listener,
        Mounts::new(xf.clone()).admin(ADMIN_TOKEN).metrics(),
        shutdown,
    );
    let task = tokio::spawn(serving);
    Host {
        address,
        xf,
        demo,
        stop: (!signal).then_some(stop),
        task,
    }
}

async fn axum_host(listener: TcpListener, xf: Mounts, shutdown: Shutdown) {
    axum_host::serve(listener, xf, shutdown)
        .await
        .expect("the axum host serves without an I/O error");
}

async fn hyper_host(listener: TcpListener, xf: Mounts, shutdown: Shutdown) {
    hyper_host::serve(listener, xf, shutdown).await;
}

async fn warp_host(listener: TcpListener, xf: Mounts, shutdown: Shutdown) {
    warp_host::serve(listener, xf, shutdown).await;
}

/// What every host must do: its own route next to the mounted API, which sees the path
/// without the prefix, the query string, the headers and the body.
async fn check_host(host: &Host) {
    let address = host.address;

    let home = get(address, "/", None).await;
    assert_eq!(home.status, StatusCode::OK);
    assert_eq!(home.text, "hello from the host");

    let health = get(address, "/api/v1/health", None).await;
    let data = health.data(200);
    assert_eq!(data["status"], "ok");
    assert_eq!(data["version"], "v1");
    assert!(health.json()["meta"]["requestId"]
        .as_str()
        .unwrap()
        .starts_with("req_"));

    let echoed = send(
        address,
        Method::GET,
        "/api/v1/health?unknown=ignored",
        None,
        None,
        &[("x-request-id", "host-check-1")],
    )
    .await;
    echoed.data(200);
    assert_eq!(echoed.header("x-request-id"), "host-check-1");

    let live = host.demo.live_key.as_str();
    let organization = get(address, "/api/v1/organization", Some(live)).await;
    let data = organization.data(200);
    assert_eq!(data["organization"]["name"], "Demo organization");
    assert_eq!(
        data["organization"]["id"],
        host.demo.organization.id.as_str()
    );
    assert_eq!(data["organization"]["plan"], "growth");
    assert!(organization
        .header("x-developer-api-ratelimit-read-remaining")
        .parse::<u64>()
        .is_ok());

    get(address, "/api/v1/organization", None)
        .await
        .error(401, "api_key_invalid");
    get(address, "/api/v1/organization", Some("xf_live_not_a_key"))
        .await
        .error(401, "api_key_invalid");

    let created = send(
        address,
        Method::POST,
        "/api/v1/properties",
        Some(live),
        Some(json!({ "url": "https://Example.com/shop", "name": "Shop" })),
        &[("idempotency-key", "host-check-property")],
    )
    .await;
    let property = created.data(201)["property"].clone();
    assert_eq!(property["url"], "https://example.com/shop");
    assert_eq!(property["name"], "Shop");

    let listed = get(address, "/api/v1/properties?limit=1", Some(live)).await;
    let data = listed.data(200);
    assert_eq!(data["properties"][0]["id"], property["id"]);
    assert_eq!(listed.json()["meta"]["hasMore"], false);
    get(address, "/api/v1/properties?limit=0", Some(live))
        .await
        .error(400, "validation_error");

    get(address, "/api/v1/no-such-endpoint", Some(live))
        .await
        .error(404, "not_found");
}

/// What a host that mounts all of xf ([`xf_tower::Mounts`]) and runs its background runtime
/// must do, as xf-server does: the admin API answers under `/admin`; a scan of a site runs to
/// its end on the host's runtime, and its outcome reaches a webhook, signed; the scan's report
/// page opens under `/r`; a signed media URL under `/m` serves an uploaded file, a `Range`
/// of it too; the media API answers without the prefix; the probes answer; and the host
/// stops gracefully on its shutdown signal.
async fn check_whole_host(host: Host) {
    check_host(&host).await;
    let address = host.address;
    let site_dir =
        std::env::temp_dir().join(format!("xf-host-site-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&site_dir).unwrap();
    std::fs::write(
        site_dir.join("index.html"),
        "<!doctype html><html lang=\"en\"><head><title>Host fixture</title></head>\
         <body><h1>Host fixture</h1><a href=\"/about.html\">About</a></body></html>",
    )
    .unwrap();
    std::fs::write(
        site_dir.join("about.html"),
        "<!doctype html><html lang=\"en\"><head><title>About</title></head><body><h1>About</h1></body></html>",
    )
    .unwrap();
    let site = xf_tests::corpus::StaticSite::serve(&site_dir)
        .await
        .unwrap();
    let live = host.demo.live_key.as_str();

    // The admin API.
    send(
        address,
        Method::POST,
        "/admin/organizations",
        Some("not-the-token"),
        Some(json!({"name": "Nobody", "plan": "pro"})),
        &[],
    )
    .await
    .error(401, "admin_token_invalid");
    let studio = send(
        address,
        Method::POST,
        "/admin/organizations",
        Some(ADMIN_TOKEN),
        Some(json!({"name": "Studio", "plan": "pro"})),
        &[],
    )
    .await
    .data(201);
    let studio_key = studio["liveKey"].as_str().unwrap().to_owned();

    // A webhook for the scan's outcome.
    let receiver =
        xf_tests::receiver::Receiver::start(xf_tests::receiver::Answer::Status(204)).await;
    let hook = send(
        address,
        Method::POST,
        "/api/v1/webhooks",
        Some(live),
        Some(json!({"name": "Outcomes", "url": receiver.url, "events": ["job.completed"]})),
        &[],
    )
    .await
    .data(201);
    let secret = hook["secret"].as_str().unwrap().to_owned();

    let created = send(
        address,
        Method::POST,
        "/api/v1/properties",
        Some(live),
        Some(json!({ "url": site.url("/") })),
        &[],
    )
    .await;
    let property_id = created.data(201)["property"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let queued = send(
        address,
        Method::POST,
        &format!("/api/v1/properties/{property_id}/scans"),
        Some(live),
        Some(json!({})),
        &[],
    )
    .await;
    let job_id = queued.data(202)["job"]["id"].as_str().unwrap().to_owned();
    // The host's runtime runs the scan: no worker of the test's own.
    let mut job = Value::Null;
    for _ in 0..400 {
        job = get(address, &format!("/api/v1/jobs/{job_id}"), Some(live))
            .await
            .data(200)["job"]
            .clone();
        if job["status"] == "completed" || job["status"] == "failed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(job["status"], "completed", "{job}");
    assert!(site.requests() >= 2, "the crawler fetched the site");

    let delivered = receiver.wait_for(1, Duration::from_secs(10)).await;
    let message = delivered.first().expect("the job's outcome was delivered");
    standardwebhooks::Webhook::new(&secret)
        .unwrap()
        .verify(&message.body, &message.headers)
        .expect("signed with the webhook's secret");
    let event = message.json();
    assert_eq!(event["type"], "job.completed");
    assert_eq!(event["data"]["job"]["id"], job_id.as_str());

    let report = host
        .xf
        .admin()
        .create_report(xf_core::NewReport {
            property_id: property_id.clone(),
            scan_id: job_id,
            expires_at: host.xf.now().plus(chrono::Duration::days(1)),
        })
        .await
        .expect("a report of the completed scan");
    let page = get(address, &format!("/r/{}", report.token), None).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.text.contains("Host fixture"), "{}", page.text);
    assert_eq!(page.header("content-type"), "text/html; charset=utf-8");

    // An upload, and its file through a signed media URL, whole and a range of it.
    let png = xf_tests::media::image("png", 40, 30);
    let (content_type, body) = xf_tests::media::multipart(&[], Some(("pic.png", &png)));
    let uploaded = send_bytes(
        address,
        Method::POST,
        "/api/v1/media/images",
        &[("x-api-key", &studio_key), ("content-type", &content_type)],
        body,
    )
    .await;
    assert_eq!(uploaded.status, StatusCode::CREATED, "{}", uploaded.text);
    let media_id = uploaded.json()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let url = host.xf.media_file_url(
        &xf_core::ids::MediaId::parse(&media_id).expect("a media id"),
        0,
        host.xf.now().plus(chrono::Duration::hours(1)),
    );
    let path = url
        .strip_prefix("http://127.0.0.1")
        .expect("under the base URL");
    let whole = send_bytes(address, Method::GET, path, &[], Vec::new()).await;
    assert_eq!(whole.status, StatusCode::OK);
    assert_eq!(whole.bytes, png);
    let range = send_bytes(
        address,
        Method::GET,
        path,
        &[("range", "bytes=8-23")],
        Vec::new(),
    )
    .await;
    assert_eq!(range.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        range.reply.header("content-range"),
        format!("bytes 8-23/{}", png.len())
    );
    assert_eq!(range.bytes, png[8..24]);
    let forged = get(address, "/m/med_00000000000000000000000000000000.1.x", None).await;
    assert_eq!(forged.status, StatusCode::NOT_FOUND);

    let unprefixed = get(address, "/channels", None).await;
    unprefixed.error(401, "api_key_invalid");
    assert_eq!(unprefixed.json()["success"], false);

    // The operator's scrape: what the host served, by route template.
    let metrics = get(address, "/metrics", None).await;
    assert_eq!(metrics.status, StatusCode::OK);
    assert!(metrics
        .header("content-type")
        .starts_with("text/plain; version=0.0.4"));
    let health_requests = r#"xf_http_request_duration_seconds_count{service="api",route="/health",method="GET",status="2xx"}"#;
    assert!(metrics.text.contains(health_requests), "{}", metrics.text);
    assert!(
        metrics.text.contains(r#"route="/jobs/{jobId}""#),
        "{}",
        metrics.text
    );

    let live_probe = get(address, "/livez", None).await;
    assert_eq!(live_probe.status, StatusCode::OK);
    assert_eq!(live_probe.json()["status"], "alive");
    let ready = get(address, "/readyz", None).await;
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.text);
    assert_eq!(
        ready.json(),
        json!({"status": "ready", "checks": {"store": "ok", "migrations": "ok", "runtime": "running"}})
    );

    host.shut_down().await;
    std::fs::remove_dir_all(site_dir).unwrap();
}

/// A response whose body is kept as bytes too.
struct BytesReply {
    status: StatusCode,
    reply: Reply,
    bytes: Vec<u8>,
}

/// A request with a body of raw bytes on a fresh HTTP/1.1 connection.
async fn send_bytes(
    address: SocketAddr,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> BytesReply {
    let stream = TcpStream::connect(address).await.expect("connect");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("HTTP/1.1 handshake");
    tokio::spawn(connection);
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header(HOST, address.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = sender
        .send_request(
            request
                .body(Full::new(Bytes::from(body)))
                .expect("valid request"),
        )
        .await
        .expect("response");
    let (parts, body) = response.into_parts();
    let bytes = body
        .collect()
        .await
        .expect("response body")
        .to_bytes()
        .to_vec();
    BytesReply {
        status: parts.status,
        reply: Reply {
            status: parts.status,
            headers: parts.headers,
            text: String::from_utf8_lossy(&bytes).into_owned(),
        },
        bytes,
    }
}

impl std::ops::Deref for BytesReply {
    type Target = Reply;
    fn deref(&self) -> &Reply {
        &self.reply
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn axum_host_serves_all_of_xf_and_runs_its_jobs() {
    check_whole_host(start_host(axum_host, false).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hyper_host_serves_all_of_xf_and_runs_its_jobs() {
    check_whole_host(start_host(hyper_host, false).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warp_host_serves_all_of_xf_and_runs_its_jobs() {
    check_whole_host(start_host(warp_host, false).await).await;
}

/// SIGTERM, as a container runtime sends it, stops each host: its server stops accepting
/// and its runtime stops (the host's `serve` returns). The three hosts take their turns in
/// one test, since the signal goes to the whole test process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_each_host_gracefully() {
    async fn terminated(mut host: Host) {
        // A request answered: the server, and so its shutdown signal, is running.
        let ready = get(host.address, "/readyz", None).await;
        assert_eq!(ready.status, StatusCode::OK, "{}", ready.text);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let killed = std::process::Command::new("kill")
            .args(["-TERM", &std::process::id().to_string()])
            .status()
            .expect("kill runs");
        assert!(killed.success());
        host.finished().await;
    }
    terminated(start_host(axum_host, true).await).await;
    terminated(start_host(hyper_host, true).await).await;
    terminated(start_host(warp_host, true).await).await;
}

fn config(args: &[&str]) -> Config {
    Config::try_parse_from(std::iter::once("xf-server").chain(args.iter().copied()))
        .expect("valid flags")
}

/// The flags of a demo server on a free port with fixed keys and the admin API, then `extra`
/// (and a scratch `--media-dir` unless `extra` names one).
fn demo_config(extra: &[&str]) -> Config {
    let mut args = vec![
        "--listen",
        "127.0.0.1:0",
        "--demo",
        "--demo-live-key",
        DEMO_LIVE_KEY,
        "--demo-test-key",
        DEMO_TEST_KEY,
        "--admin-token",
        ADMIN_TOKEN,
    ];
    args.extend_from_slice(extra);
    // Uploads go to a scratch directory, not the working directory.
    let scratch = std::env::temp_dir()
        .join("xf-server-tests-media")
        .to_str()
        .expect("a UTF-8 path")
        .to_owned();
    if !extra.contains(&"--media-dir") {
        args.extend(["--media-dir", &scratch]);
    }
    config(&args)
}

/// A running `xf-server` app and the means to stop it.
struct Server {
    address: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    task: JoinHandle<std::io::Result<()>>,
}

async fn start_server(app: xf_server::App) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("local address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(xf_server::serve(listener, app.service, async move {
        let _ = stopped.await;
    }));
    Server {
        address,
        stop,
        task,
    }
}

impl Server {
    /// Triggers the graceful shutdown and waits for the server to finish.
    async fn shut_down(self) {
        self.stop.send(()).expect("server still running");
        tokio::time::timeout(Duration::from_secs(10), self.task)
            .await
            .expect("the server stops after the shutdown signal")
            .expect("server task")
            .expect("server ended without an I/O error");
    }
}

#[tokio::test]
async fn xf_server_serves_the_api_and_the_admin_api() {
    let config = demo_config(&[]);
    assert_eq!(config.store, StoreConfig::Memory);
    let app = xf_server::build_app(&config).await.expect("app");
    let demo = app
        .demo
        .clone()
        .expect("--demo creates the demo organization");
    assert_eq!(demo.live_key, DEMO_LIVE_KEY);
    assert_eq!(demo.test_key, DEMO_TEST_KEY);
    assert_eq!(demo.organization.plan, "growth");
    let media = app
        .media_demo
        .clone()
        .expect("--demo creates the media demo organization");
    assert_eq!(media.organization.plan, "pro");
    let banner = xf_server::demo_banner(&demo, Some(&media), "127.0.0.1:8080".parse().unwrap());
    for shown in [
        demo.organization.id.as_str(),
        DEMO_LIVE_KEY,
        DEMO_TEST_KEY,
        media.organization.id.as_str(),
        media.live_key.as_str(),
        media.test_key.as_str(),
    ] {
        assert!(banner.contains(shown), "{shown} not in {banner}");
    }

    let server = start_server(app).await;
    let address = server.address;

    let health = get(address, "/api/v1/health", None).await;
    assert_eq!(health.data(200)["status"], "ok");

    let organization = get(address, "/api/v1/organization", Some(DEMO_LIVE_KEY)).await;
    let data = organization.data(200);
    assert_eq!(data["organization"]["id"], demo.organization.id.as_str());
    assert_eq!(data["organization"]["name"], "Demo organization");
    // The media demo's key opens the media API.
    let channels = get(address, "/api/v1/channels", Some(&media.live_key)).await;
    assert!(channels.data(200)["youtube"].is_array());
    let with_test_key = get(address, "/api/v1/organization", Some(DEMO_TEST_KEY)).await;
    assert_eq!(
        with_test_key.data(200)["organization"]["id"],
        demo.organization.id.as_str()
    );

    // The public report pages are mounted at /r: an unknown token is their HTML 404.
    let page = get(address, "/r/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", None).await;
    assert_eq!(page.status, StatusCode::NOT_FOUND);
    assert_eq!(page.header("content-type"), "text/html; charset=utf-8");
    assert!(page.text.contains("Report not found"));
    assert!(page
        .header("content-security-policy")
        .starts_with("default-src 'none'"));

    let new_org = json!({ "name": "Acme", "plan": "starter" });
    let created = send(
        address,
        Method::POST,
        "/admin/organizations",
        Some(ADMIN_TOKEN),
        Some(new_org.clone()),
        &[],
    )
    .await;
    let data = created.data(201);
    assert_eq!(data["organization"]["name"], "Acme");
    assert_eq!(data["organization"]["plan"], "starter");
    let acme_key = data["liveKey"].as_str().expect("liveKey").to_owned();
    assert!(acme_key.starts_with("xf_live_"));
    assert!(data["testKey"].as_str().unwrap().starts_with("xf_test_"));
    let acme = get(address, "/api/v1/organization", Some(&acme_key)).await;
    assert_eq!(acme.data(200)["organization"]["name"], "Acme");

    // No token, a wrong one, and an API key (which is not an admin token).
    for bearer in [None, Some("not-the-admin-token"), Some(DEMO_LIVE_KEY)] {
        send(
            address,
            Method::POST,
            "/admin/organizations",
            bearer,
            Some(new_org.clone()),
            &[],
        )
        .await
        .error(401, "admin_token_invalid");
    }

    get(address, "/api/v1/no-such-endpoint", None)
        .await
        .error(404, "not_found");
    let outside = send(
        address,
        Method::GET,
        "/no-such-page",
        None,
        None,
        &[("x-request-id", "outside-1")],
    )
    .await;
    outside.error(404, "not_found");
    assert_eq!(outside.header("x-request-id"), "outside-1");
    get(address, "/", None).await.error(404, "not_found");

    server.shut_down().await;
    assert!(
        TcpStream::connect(address).await.is_err(),
        "the listener is closed after the shutdown"
    );
}

#[tokio::test]
async fn xf_server_without_an_admin_token_serves_no_admin_api() {
    let mut config = config(&["--listen", "127.0.0.1:0"]);
    // Set explicitly: clap falls back to XF_ADMIN_TOKEN and XF_DEMO from the environment.
    config.admin_token = None;
    config.demo = false;
    let app = xf_server::build_app(&config).await.expect("app");
    assert!(app.demo.is_none(), "no demo organization without --demo");
    let server = start_server(app).await;
    send(
        server.address,
        Method::POST,
        "/admin/organizations",
        Some(ADMIN_TOKEN),
        Some(json!({ "name": "Acme", "plan": "starter" })),
        &[],
    )
    .await
    .error(404, "not_found");
    server.shut_down().await;
}

#[tokio::test]
async fn xf_server_refuses_unsafe_configurations() {
    let start = |args: &[&str]| {
        let config = config(args);
        async move { xf_server::build_app(&config).await.map(|_| ()) }
    };
    assert!(matches!(
        start(&["--store", "postgres://xf@127.0.0.1:1/xf"]).await,
        Err(StartError::SecretKeyRequired)
    ));
    assert!(matches!(
        start(&["--secret-key", "too short"]).await,
        Err(StartError::Config(xf_core::BuildError::SecretKeyTooShort))
    ));
    for short in [" ", "x", "fifteen-chars-1"] {
        assert!(matches!(
            start(&["--admin-token", short]).await,
            Err(StartError::ShortAdminToken)
        ));
    }
    // A workers-only process on a memory store would run jobs nobody else can see.
    assert!(matches!(
        start(&["--role", "workers"]).await,
        Err(StartError::WorkersNeedSharedStore)
    ));
    match start(&["--demo", "--demo-live-key", "xf_live_short"]).await {
        Err(StartError::Demo(error)) => {
            assert_eq!(error.code(), "validation_error");
            assert!(error.to_string().contains("XF_DEMO_LIVE_KEY"), "{error}");
        }
        other => panic!("expected a demo key error, got {other:?}"),
    }
    match start(&["--demo", "--demo-test-key", DEMO_LIVE_KEY]).await {
        Err(StartError::Demo(error)) => assert_eq!(error.code(), "validation_error"),
        other => panic!("a live key is no test key, got {other:?}"),
    }

    let rejected = Config::try_parse_from(["xf-server", "--store", "mysql://xf@db/xf"])
        .expect_err("only memory and PostgreSQL stores exist");
    assert!(rejected.to_string().contains("postgres://"), "{rejected}");
    assert!(Config::try_parse_from(["xf-server", "--store", "postgresql://db/xf"]).is_ok());
    assert!(Config::try_parse_from(["xf-server", "--log-format", "xml"]).is_err());
    assert!(Config::try_parse_from(["xf-server", "--role", "cron"]).is_err());
    assert!(Config::try_parse_from(["xf-server", "--workers", "0"]).is_err());
    let workers = Config::try_parse_from(["xf-server", "--role", "workers", "--workers", "3"])
        .expect("a workers-only configuration");
    assert_eq!(workers.role, xf_server::Role::Workers);
    assert!(!workers.role.serves_api() && workers.role.runs_jobs());
    assert_eq!(workers.workers, 3);
}

#[test]
fn xf_server_config_debug_hides_secrets() {
    let config = config(&[
        "--store",
        "postgres://xf:db-password@db.internal/xf",
        "--secret-key",
        SECRET_KEY,
        "--admin-token",
        ADMIN_TOKEN,
        "--demo-live-key",
        DEMO_LIVE_KEY,
    ]);
    let shown = format!("{config:?}");
    for secret in ["db-password", SECRET_KEY, ADMIN_TOKEN, DEMO_LIVE_KEY] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
    assert!(shown.contains("db.internal"), "{shown}");
}

/// A new, empty database on the test server, named so that the PostgreSQL test support's
/// clean-up drops it if this test dies before dropping it itself.
async fn empty_database() -> (String, String) {
    let server = xf_storage_postgres::testing::server_url();
    let name = format!(
        "{}{}_xf_server_{}",
        xf_storage_postgres::testing::DATABASE_PREFIX,
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
        std::process::id()
    );
    let admin = connect_admin(&server).await;
    admin
        .execute(format!("CREATE DATABASE \"{name}\"").as_str())
        .await
        .expect("create database");
    admin.close().await;
    let mut url = url::Url::parse(&server).expect("DATABASE_URL is a URL");
    url.set_path(&format!("/{name}"));
    (url.to_string(), name)
}

/// A pool on the server's database, or on `postgres` when that one does not exist.
async fn connect_admin(server: &str) -> sqlx::PgPool {
    let options = sqlx::postgres::PgConnectOptions::from_str(server)
        .unwrap_or_else(|error| panic!("{server:?} is not a PostgreSQL URL: {error}"));
    match sqlx::PgPool::connect_with(options.clone()).await {
        Ok(pool) => pool,
        Err(_) => sqlx::PgPool::connect_with(options.database("postgres"))
            .await
            .unwrap_or_else(|error| panic!("no PostgreSQL server at {server}: {error}")),
    }
}

async fn drop_database(name: &str) {
    let admin = connect_admin(&xf_storage_postgres::testing::server_url()).await;
    admin
        .execute(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)").as_str())
        .await
        .expect("drop database");
    admin.close().await;
}

#[tokio::test]
async fn xf_server_on_postgres_migrates_and_reuses_the_demo_organization() {
    let (url, name) = empty_database().await;
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--store",
        url.as_str(),
        "--secret-key",
        SECRET_KEY,
        "--demo",
        "--demo-live-key",
        DEMO_LIVE_KEY,
        "--demo-test-key",
        DEMO_TEST_KEY,
    ];

    let first = xf_server::build_app(&config(&args))
        .await
        .expect("first start");
    let first_demo = first.demo.clone().expect("demo");
    let server = start_server(first).await;
    let created = send(
        server.address,
        Method::POST,
        "/api/v1/properties",
        Some(DEMO_LIVE_KEY),
        Some(json!({ "url": "https://example.org" })),
        &[],
    )
    .await;
    let property_id = created.data(201)["property"]["id"].clone();
    server.shut_down().await;

    // A restart over the same database: migrations are skipped, the demo organization, its
    // fixed keys and its data are still there.
    let second = xf_server::build_app(&config(&args)).await.expect("restart");
    let second_demo = second.demo.clone().expect("demo");
    assert_eq!(second_demo.organization.id, first_demo.organization.id);
    let server = start_server(second).await;
    let listed = get(server.address, "/api/v1/properties", Some(DEMO_LIVE_KEY)).await;
    let data = listed.data(200);
    assert_eq!(data["properties"].as_array().map(Vec::len), Some(1));
    assert_eq!(data["properties"][0]["id"], property_id);
    server.shut_down().await;

    drop_database(&name).await;
}

/// `--google-*` flags connect the server's syncs to Google's endpoints at the given URLs (a
/// stand-in here); without them a sync is `gsc_not_configured`.
#[tokio::test]
async fn xf_server_syncs_search_console_through_the_configured_google() {
    use xf_tests::google::{Day, GoogleStandIn, Row, SiteData, CLIENT_ID, CLIENT_SECRET};
    let google = GoogleStandIn::start().await;
    let (token_url, api_base_url) = (google.token_url(), google.api_base_url());
    let config = demo_config(&[
        "--google-client-id",
        CLIENT_ID,
        "--google-client-secret",
        CLIENT_SECRET,
        "--google-token-url",
        &token_url,
        "--google-api-base-url",
        &api_base_url,
    ]);
    let app = xf_server::build_app(&config).await.expect("app");
    let demo = app.demo.clone().expect("demo organization");
    let server = start_server(app).await;
    let address = server.address;

    let created = send(
        address,
        Method::POST,
        "/api/v1/properties",
        Some(DEMO_LIVE_KEY),
        Some(json!({"url": "https://acme.example"})),
        &[],
    )
    .await;
    let id = created.data(201)["property"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let site = "sc-domain:acme.example";
    let today = chrono::Utc::now().date_naive();
    google.grant("1//server-token", &[site]);
    google.set_site(
        site,
        SiteData {
            days: vec![Day {
                date: today - chrono::Duration::days(3),
                clicks: 7,
                impressions: 70,
                position: 2.5,
            }],
            queries: vec![Row {
                key: "acme".into(),
                clicks: 7,
                impressions: 70,
                position: 2.5,
            }],
            pages: Vec::new(),
        },
    );
    for (path, body) in [
        (
            format!("/admin/organizations/{}/gsc", demo.organization.id),
            json!({"refreshToken": "1//server-token"}),
        ),
        (
            format!("/admin/properties/{id}/gsc"),
            json!({"siteUrl": site}),
        ),
    ] {
        send(
            address,
            Method::PUT,
            &path,
            Some(ADMIN_TOKEN),
            Some(body),
            &[],
        )
        .await
        .data(200);
    }
    let synced = send(
        address,
        Method::POST,
        &format!("/api/v1/properties/{id}/gsc/sync"),
        Some(DEMO_LIVE_KEY),
        None,
        &[],
    )
    .await;
    assert_eq!(synced.data(202)["synced"], true);
    let overview = get(
        address,
        &format!("/api/v1/properties/{id}/gsc/overview"),
        Some(DEMO_LIVE_KEY),
    )
    .await;
    let overview = overview.data(200);
    assert_eq!(overview["totals"]["clicks"], 7);
    assert_eq!(
        overview["endDate"],
        (today - chrono::Duration::days(3)).to_string()
    );
    assert_eq!(google.token_requests().len(), 1);
    server.shut_down().await;

    // Without the flags, nothing is configured.
    let bare = config_without_google().await;
    let server = start_server(bare).await;
    let summary = get(
        server.address,
        "/api/v1/organization/gsc",
        Some(DEMO_LIVE_KEY),
    )
    .await;
    assert_eq!(summary.data(200)["configured"], false);
    server.shut_down().await;
}

async fn config_without_google() -> xf_server::App {
    let config = demo_config(&[]);
    assert_eq!(config.google_token_url, xf_core::gsc::GOOGLE_TOKEN_URL);
    xf_server::build_app(&config).await.expect("app")
}

/// xf-server serves the media API under `/api/v1` and, as the spec's alternative base URL,
/// without the prefix; uploads land in `--media-dir`.
#[tokio::test]
async fn xf_server_serves_the_media_api_with_and_without_the_prefix() {
    let media_dir = std::env::temp_dir().join(format!(
        "xf-server-media-{}",
        chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default()
    ));
    let dir = media_dir.to_str().expect("a UTF-8 path").to_owned();
    let app = xf_server::build_app(&demo_config(&["--media-dir", &dir]))
        .await
        .expect("app");
    let server = start_server(app).await;
    let address = server.address;
    let created = send(
        address,
        Method::POST,
        "/admin/organizations",
        Some(ADMIN_TOKEN),
        Some(json!({"name": "Studio", "plan": "pro"})),
        &[],
    )
    .await;
    let key = created.data(201)["liveKey"].as_str().unwrap().to_owned();
    let png = xf_tests::media::image("png", 20, 10);
    for path in ["/api/v1/media/images", "/media/images"] {
        let (content_type, body) = xf_tests::media::multipart(&[], Some(("pic.png", &png)));
        let stream = TcpStream::connect(address).await.expect("connect");
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("HTTP/1.1 handshake");
        tokio::spawn(connection);
        let request = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(HOST, address.to_string())
            .header("x-api-key", &key)
            .header(CONTENT_TYPE, content_type)
            .body(Full::new(Bytes::from(body)))
            .expect("a request");
        let response = sender.send_request(request).await.expect("response");
        assert_eq!(response.status(), StatusCode::CREATED, "{path}");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let reply: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(reply["success"], true);
        let id = reply["data"][0]["id"].as_str().unwrap();
        for read in [
            format!("/api/v1/media/images/{id}"),
            format!("/media/images/{id}"),
        ] {
            let shown = send(
                address,
                Method::GET,
                &read,
                None,
                None,
                &[("x-api-key", &key)],
            )
            .await;
            assert_eq!(shown.status, StatusCode::OK, "{read}");
            assert!(shown.text.contains("\"width\":20"), "{}", shown.text);
        }
    }
    let channels = send(
        address,
        Method::GET,
        "/channels",
        None,
        None,
        &[("x-api-key", &key)],
    )
    .await;
    assert_eq!(channels.status, StatusCode::OK);
    let unknown = send(
        address,
        Method::GET,
        "/media/nope",
        None,
        None,
        &[("x-api-key", &key)],
    )
    .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert!(
        unknown.text.contains("\"success\":false"),
        "{}",
        unknown.text
    );
    server.shut_down().await;
    let stored = std::fs::read_dir(media_dir.join("media"))
        .expect("the uploads' directory")
        .count();
    assert_eq!(stored, 1, "one organization's directory");
    std::fs::remove_dir_all(media_dir).unwrap();
}

/// xf-server publishes with the platforms' clients its flags configure, and serves the
/// signed media URLs under `/m` (a bad token is a 404).
#[tokio::test]
async fn xf_server_publishes_through_the_configured_platforms() {
    use xf_tests::platforms::{PlatformStandIn, YOUTUBE_CLIENT_ID, YOUTUBE_CLIENT_SECRET};
    let platforms = PlatformStandIn::start().await;
    platforms.grant("ya29.server", None);
    let youtube = platforms.youtube_config();
    let config = demo_config(&[
        "--youtube-client-id",
        YOUTUBE_CLIENT_ID,
        "--youtube-client-secret",
        YOUTUBE_CLIENT_SECRET,
        "--youtube-token-url",
        &youtube.token_url,
        "--youtube-upload-base-url",
        &youtube.upload_base_url,
    ]);
    assert!(!format!("{config:?}").contains(YOUTUBE_CLIENT_SECRET));
    let app = xf_server::build_app(&config).await.expect("app");
    let workers = app.xf.spawn_workers(
        xf_core::runtime::WorkerOptions::new().poll_interval(Duration::from_millis(20)),
    );
    let server = start_server(app).await;
    let base = format!("http://{}", server.address);
    let client = reqwest::Client::new();
    let created = json_body(
        client
            .post(format!("{base}/admin/organizations"))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", "application/json")
            .body(json!({"name": "Studio", "plan": "pro"}).to_string())
            .send()
            .await
            .unwrap(),
    )
    .await;
    let org = created["data"]["organization"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let key = created["data"]["liveKey"].as_str().unwrap().to_owned();
    let connected = client
        .post(format!("{base}/admin/organizations/{org}/channels"))
        .bearer_auth(ADMIN_TOKEN)
        .header("content-type", "application/json")
        .body(
            json!({"platform": "youtube", "channelId": "UC-server", "title": "Studio",
            "accessToken": "ya29.server"})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(connected.status(), 201);
    let clip = xf_tests::media::video("mp4", 640, 360, 4, false, 0);
    let (content_type, body) = xf_tests::media::multipart(
        &[("platforms", r#"["youtube"]"#)],
        Some(("clip.mp4", &clip)),
    );
    let uploaded = json_body(
        client
            .post(format!("{base}/api/v1/media/videos"))
            .header("x-api-key", &key)
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap(),
    )
    .await;
    let id = uploaded["data"][0]["id"].as_str().unwrap().to_owned();
    let mut shown = Value::Null;
    for _ in 0..250 {
        shown = json_body(
            client
                .get(format!("{base}/media/videos/{id}"))
                .header("x-api-key", &key)
                .send()
                .await
                .unwrap(),
        )
        .await;
        if shown["data"]["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    assert_eq!(shown["data"]["youtube"]["status"], "published", "{shown}");
    assert_eq!(platforms.videos().len(), 1);
    let refused = client
        .get(format!("{base}/m/med_x.1.bad"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 404);
    workers.shutdown(Duration::from_secs(5)).await;
    server.shut_down().await;
}

/// The JSON body of a response.
async fn json_body(response: reqwest::Response) -> Value {
    serde_json::from_slice(&response.bytes().await.expect("a body")).expect("a JSON body")
}

/// Readiness follows PostgreSQL, for an API process (the probes on its listener) and a
/// workers-only process (the probes on `--health-listen`): `200` while the database answers,
/// `503` while it cannot be reached (a proxy between them cut), `200` again once it is back.
/// Meanwhile the spec's `GET /health` keeps its shape and says `degraded`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_follows_postgres_for_api_and_worker_processes() {
    let (url, name) = empty_database().await;
    let mut proxied = url::Url::parse(&url).expect("a URL");
    let target = tokio::net::lookup_host((
        proxied.host_str().expect("a host").to_owned(),
        proxied.port().unwrap_or(5432),
    ))
    .await
    .expect("the database's address")
    .next()
    .expect("an address");
    let proxy = xf_tests::proxy::Proxy::start(target).await;
    proxied.set_host(Some("127.0.0.1")).unwrap();
    proxied.set_port(Some(proxy.address().port())).unwrap();
    let args = |role: &'static str| {
        config(&[
            "--listen",
            "127.0.0.1:0",
            "--store",
            proxied.as_str(),
            "--secret-key",
            SECRET_KEY,
            "--role",
            role,
        ])
    };

    let api = start_server(xf_server::build_app(&args("api")).await.expect("api")).await;
    let workers_config = args("workers");
    let workers_app = xf_server::build_app(&workers_config)
        .await
        .expect("workers");
    let health = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let health_address = health.local_addr().expect("local address");
    let (stop_workers, workers_stopped) = tokio::sync::oneshot::channel::<()>();
    let workers = tokio::spawn(async move {
        xf_server::run_workers(
            &workers_app.xf,
            xf_server::worker_options(&workers_config),
            Duration::from_secs(5),
            Some(health),
            async move {
                let _ = workers_stopped.await;
            },
        )
        .await
    });

    let probes = [(api.address, "not_started"), (health_address, "running")];
    for (address, runtime) in probes {
        let ready = readiness_within(address, StatusCode::OK, Duration::from_secs(10)).await;
        assert_eq!(
            ready["checks"],
            json!({"store": "ok", "migrations": "ok", "runtime": runtime})
        );
        let live = get(address, "/livez", None).await;
        assert_eq!(live.status, StatusCode::OK);
    }

    proxy.cut();
    for (address, _) in probes {
        let unready = readiness_within(
            address,
            StatusCode::SERVICE_UNAVAILABLE,
            Duration::from_secs(20),
        )
        .await;
        assert_eq!(unready["status"], "not_ready");
        assert_eq!(unready["checks"]["store"], "unreachable");
        assert_eq!(unready["checks"]["migrations"], "unknown");
        let live = get(address, "/livez", None).await;
        assert_eq!(
            live.status,
            StatusCode::OK,
            "liveness does not ask the store"
        );
    }
    let health = get(api.address, "/api/v1/health", None).await;
    assert_eq!(health.data(200)["status"], "degraded");

    proxy.restore();
    for (address, _) in probes {
        let ready = readiness_within(address, StatusCode::OK, Duration::from_secs(30)).await;
        assert_eq!(ready["status"], "ready");
    }

    stop_workers.send(()).expect("workers still running");
    tokio::time::timeout(Duration::from_secs(15), workers)
        .await
        .expect("the workers stop")
        .expect("the workers' task")
        .expect("the probes served without an I/O error");
    api.shut_down().await;
    drop(proxy);
    drop_database(&name).await;
}

/// Asks `GET /readyz` of `address` until it answers `status` (within `limit`); its body.
async fn readiness_within(address: SocketAddr, status: StatusCode, limit: Duration) -> Value {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let reply = get(address, "/readyz", None).await;
        if reply.status == status {
            assert_eq!(reply.header("cache-control"), "no-store");
            return reply.json();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "readiness of {address} still {} after {limit:?}: {}",
            reply.status,
            reply.text
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
