//! Rendering end to end, in real Debian Chromium (`XF_CHROMIUM`, or `chromium` on the path):
//! scans of a single-page app in plain JavaScript with `render` `always`, `auto` and
//! `never` on both stores, the egress rule on the requests a page's scripts make, two
//! organizations' scans kept apart, and a browser killed in the middle of a scan.
//!
//! **The site.** [`Site`] serves fixed answers on loopback and logs every path asked for.
//! [`spa`] is the app: `/`, `/products` and `/about` are empty shells (`<div id="root">`)
//! that `/app.js` fills with a title, a description, an h1, 220 words and the links to the
//! other pages, so those pages are reachable only through links script inserts. `/about`'s
//! script throws once it has built the page; `/spin`, linked from `/about`, never stops
//! running; `/served` is a page served whole whose raw `noindex` an inline script removes;
//! every shell loads `/private/tracker.js`, which robots.txt disallows.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use xf_core::crawl::chromium::ChromiumRenderer;
use xf_core::crawl::crawler::CrawlOptions;
use xf_core::crawl::render::{PageRenderer, Refusal, RenderInput, SessionOptions};
use xf_core::runtime::{WorkerHandle, WorkerOptions};
use xf_core::testing::TestStore;
use xf_tests::TestApp;

// ---------------------------------------------------------------------------------------------
// The fixture site
// ---------------------------------------------------------------------------------------------

/// One answer: content type, body, and how long to wait before it.
#[derive(Debug, Clone)]
struct Answer {
    content_type: &'static str,
    body: String,
    delay: Duration,
}

fn answer(content_type: &'static str, body: impl Into<String>) -> Answer {
    Answer {
        content_type,
        body: body.into(),
        delay: Duration::ZERO,
    }
}

#[derive(Default)]
struct Served {
    answers: BTreeMap<String, Answer>,
    asked: Vec<String>,
}

/// A site on 127.0.0.1 answering fixed paths (404 elsewhere), logging each path asked for.
#[derive(Clone)]
struct Site {
    address: SocketAddr,
    served: Arc<Mutex<Served>>,
}

async fn serve(State(served): State<Arc<Mutex<Served>>>, request: Request) -> Response {
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let found = {
        let mut served = served.lock().unwrap_or_else(PoisonError::into_inner);
        served.asked.push(path.clone());
        served.answers.get(&path).cloned()
    };
    let Some(found) = found else {
        return (http::StatusCode::NOT_FOUND, "not here").into_response();
    };
    if !found.delay.is_zero() {
        tokio::time::sleep(found.delay).await;
    }
    (
        [(http::header::CONTENT_TYPE, found.content_type)],
        found.body,
    )
        .into_response()
}

impl Site {
    async fn start(answers: BTreeMap<String, Answer>) -> Site {
        let served = Arc::new(Mutex::new(Served {
            answers,
            asked: Vec::new(),
        }));
        let router = Router::new()
            .fallback(serve)
            .with_state(Arc::clone(&served));
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("a loopback port");
        let address = listener.local_addr().expect("its address");
        tokio::spawn(async move { axum::serve(listener, router).await });
        Site { address, served }
    }

    /// The property URL: `localhost` (the API wants a host name).
    fn url(&self, path: &str) -> String {
        format!("http://localhost:{}{path}", self.address.port())
    }

    fn asked(&self) -> Vec<String> {
        self.served
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .asked
            .clone()
    }
}

/// 220 words of their own for the page `seed`: no two pages share a shingle.
fn words(seed: &str) -> String {
    (0..220)
        .map(|i| format!("{seed}{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The shell every script-built page is served as.
fn shell() -> String {
    concat!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        "<script src=\"/private/tracker.js\"></script>",
        "</head><body><div id=\"root\"></div><script src=\"/app.js\"></script></body></html>"
    )
    .to_owned()
}

/// The app: builds each route's page into `#root`.
const APP: &str = r#"(function () {
  var routes = {
    "/": { title: "Home of the rendered shop", h1: "Rendered shop", seed: "home", links: ["/products", "/about"] },
    "/products": { title: "Products of the rendered shop", h1: "Products", seed: "products", links: ["/", "/served"] },
    "/about": { title: "About the rendered shop", h1: "About us", seed: "about", links: ["/", "/spin"], fails: true }
  };
  var path = location.pathname;
  var route = routes[path];
  if (!route) { return; }
  document.title = route.title;
  var meta = document.createElement("meta");
  meta.name = "description";
  meta.content = route.title + ": everything this page holds, described in words enough for a snippet.";
  document.head.appendChild(meta);
  var canonical = document.createElement("link");
  canonical.rel = "canonical";
  canonical.href = path;
  document.head.appendChild(canonical);
  var root = document.getElementById("root");
  var h1 = document.createElement("h1");
  h1.textContent = route.h1;
  root.appendChild(h1);
  var text = [];
  for (var i = 0; i < 220; i++) { text.push(route.seed + i); }
  var p = document.createElement("p");
  p.textContent = text.join(" ");
  root.appendChild(p);
  var links = route.links.slice();
  // A cookie another scan left would show here: the two organizations' test looks for /leak.
  if (path === "/" && document.cookie.indexOf("visited=") >= 0) { links.push("/leak"); }
  document.cookie = "visited=1; path=/";
  links.forEach(function (href) {
    var a = document.createElement("a");
    a.href = href;
    a.textContent = "Go to the page " + href;
    root.appendChild(a);
  });
  if (route.fails) { throw new Error("the about widget failed"); }
})();
"#;

/// The single-page app of the module documentation.
fn spa() -> BTreeMap<String, Answer> {
    let html = "text/html; charset=utf-8";
    let mut answers = BTreeMap::new();
    answers.insert(
        "/robots.txt".to_owned(),
        answer("text/plain", "User-agent: *\nDisallow: /private/\n"),
    );
    for path in ["/", "/products", "/about"] {
        answers.insert(path.to_owned(), answer(html, shell()));
    }
    answers.insert("/app.js".to_owned(), answer("application/javascript", APP));
    answers.insert(
        "/private/tracker.js".to_owned(),
        answer("application/javascript", "window.tracked = true;"),
    );
    answers.insert(
        "/spin".to_owned(),
        answer(
            html,
            "<!DOCTYPE html><html lang=\"en\"><head><title>Spinning forever and ever</title></head>\
             <body><div id=\"root\"></div><script>for (;;) {}</script></body></html>",
        ),
    );
    answers.insert(
        "/served".to_owned(),
        answer(
            html,
            format!(
                "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
                 <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
                 <title>A page the server sends whole</title>\
                 <meta name=\"description\" content=\"This page arrives complete from the server, with its text and links, and a robots meta that script removes.\">\
                 <meta name=\"robots\" content=\"noindex\"><link rel=\"canonical\" href=\"/served\">\
                 </head><body><h1>Served whole</h1><p>{}</p><a href=\"/\">Back to the shop's home</a>\
                 <script>document.querySelector('meta[name=robots]').remove();</script></body></html>",
                words("served")
            ),
        ),
    );
    answers
}

// ---------------------------------------------------------------------------------------------
// Apps
// ---------------------------------------------------------------------------------------------

fn chromium() -> String {
    std::env::var("XF_CHROMIUM").unwrap_or_else(|_| "chromium".to_owned())
}

/// A renderer of its own for each test, allowed onto loopback (the fixture).
fn renderer() -> ChromiumRenderer {
    ChromiumRenderer::launch(chromium())
        .concurrency(4)
        .allow_private_targets(true)
        .build()
}

/// Rendering's time limit in these tests: `/spin` costs it once per scan.
const RENDER_TIMEOUT: Duration = Duration::from_secs(4);

/// An app over `store` that may crawl loopback, rendering through `renderer` if given, with
/// its workers running.
fn app(store: Arc<dyn TestStore>, renderer: Option<&ChromiumRenderer>) -> (TestApp, WorkerHandle) {
    let renderer = renderer.cloned();
    let app = TestApp::configured(store, move |builder| {
        let builder = builder
            .allow_private_targets(true)
            .crawl_options(CrawlOptions {
                render_timeout: RENDER_TIMEOUT,
                ..CrawlOptions::default()
            });
        match renderer {
            Some(renderer) => builder.renderer(Arc::new(renderer)),
            None => builder,
        }
    });
    let workers = app.xf.spawn_workers(WorkerOptions::new());
    (app, workers)
}

fn memory() -> Arc<dyn TestStore> {
    Arc::new(xf_storage_memory::MemoryStore::new())
}

async fn postgres() -> Arc<dyn TestStore> {
    Arc::new(xf_storage_postgres::testing::fresh_database().await)
}

/// Queues a scan of `property` with `body` and waits for it to complete; returns the job.
async fn scan(app: &TestApp, key: &str, property: &str, body: Value) -> Value {
    let queued = app
        .post(&format!("/properties/{property}/scans"), key, body.clone())
        .await;
    let data = queued.expect(202);
    let id = data["job"]["id"].as_str().expect("a job id").to_owned();
    let began = Instant::now();
    loop {
        let job = app.get(&format!("/jobs/{id}"), key).await.expect(200)["job"].clone();
        if matches!(
            job["status"].as_str(),
            Some("completed" | "failed" | "cancelled")
        ) {
            assert_eq!(job["status"], "completed", "{body}: {job}");
            return job;
        }
        assert!(
            began.elapsed() < Duration::from_secs(120),
            "the scan did not end within two minutes: {job}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `(type, subject)` of every open issue of the property, from the API.
async fn findings(app: &TestApp, key: &str, property: &str) -> BTreeSet<(String, String)> {
    let mut found = BTreeSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path = format!("/properties/{property}/issues?limit=100&status=open");
        if let Some(cursor) = &cursor {
            path.push_str(&format!("&cursor={cursor}"));
        }
        let reply = app.get(&path, key).await;
        for issue in reply.expect(200)["issues"].as_array().expect("issues") {
            let subject = issue["url"]
                .as_str()
                .or_else(|| issue["evidence"].as_str())
                .unwrap_or_default()
                .to_owned();
            found.insert((
                issue["type"].as_str().unwrap_or_default().to_owned(),
                subject,
            ));
        }
        match reply.body["meta"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return found,
        }
    }
}

/// The pages of the property with a finding of `check`.
fn pages_with(found: &BTreeSet<(String, String)>, check: &str) -> BTreeSet<String> {
    found
        .iter()
        .filter(|(kind, _)| kind == check)
        .map(|(_, subject)| subject.clone())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Scans of the app
// ---------------------------------------------------------------------------------------------

async fn the_app_scanned_in_each_mode(store: Arc<dyn TestStore>, plain: Arc<dyn TestStore>) {
    let site = Site::start(spa()).await;
    let renderer = renderer();
    let (app, _workers) = app(store, Some(&renderer));
    let (plain_app, _plain_workers) = self::app(plain, None);
    let page = |path: &str| site.url(path);
    let shells: BTreeSet<String> = ["/", "/products", "/about"].map(page).into();

    // Today's scan, by an app without a renderer, and `never` by one with it.
    let (plain_key, plain_property) = plain_app.crawlable_property(&site.url("/"), 50).await;
    let today = scan(&plain_app, &plain_key, &plain_property, json!({})).await;
    assert_eq!(today["result"]["pagesRendered"], 0, "{today}");
    let today = findings(&plain_app, &plain_key, &plain_property).await;
    let (key, property) = app.crawlable_property(&site.url("/"), 50).await;
    let never = scan(&app, &key, &property, json!({"render": "never"})).await;
    assert_eq!(never["result"]["pagesRendered"], 0, "{never}");
    assert_eq!(
        findings(&app, &key, &property).await,
        today,
        "never is today's scan"
    );
    assert!(
        pages_with(&today, "title_missing").contains(&page("/")),
        "{today:?}"
    );
    assert!(
        pages_with(&today, "h1_missing").contains(&page("/")),
        "{today:?}"
    );

    // `always`: every HTML page rendered.
    let queued = app
        .post(
            &format!("/properties/{property}/scans"),
            &key,
            json!({"render": "always"}),
        )
        .await;
    assert_eq!(queued.expect(202)["render"], "always");
    let always = scan(&app, &key, &property, json!({"render": "always"})).await;
    let found = findings(&app, &key, &property).await;
    check_rendered(&site, &found, &shells, true);
    // The shells, /served, and /spin (which failed) were rendered; /spin is not counted.
    assert_eq!(always["result"]["pagesRendered"], 4, "{always}");

    // `auto`, the default with a renderer: the shells and /spin, not /served.
    let default = app
        .post(&format!("/properties/{property}/scans"), &key, json!({}))
        .await;
    assert_eq!(default.expect(202)["render"], "auto");
    let auto = scan(&app, &key, &property, json!({"render": "auto"})).await;
    let found = findings(&app, &key, &property).await;
    check_rendered(&site, &found, &shells, false);
    assert_eq!(auto["result"]["pagesRendered"], 3, "{auto}");
    drop(app);
    drop(renderer);
}

/// What a rendered scan of the app finds: `always` renders `/served` too.
fn check_rendered(
    site: &Site,
    found: &BTreeSet<(String, String)>,
    shells: &BTreeSet<String>,
    always: bool,
) {
    let page = |path: &str| site.url(path);
    for check in [
        "title_missing",
        "h1_missing",
        "thin_content",
        "meta_description_missing",
    ] {
        let on_shells: BTreeSet<_> = pages_with(found, check)
            .intersection(shells)
            .cloned()
            .collect();
        assert!(
            on_shells.is_empty(),
            "{check} on a rendered shell: {on_shells:?}"
        );
    }
    assert_eq!(
        &pages_with(found, "content_requires_javascript"),
        shells,
        "{found:?}"
    );
    assert_eq!(
        pages_with(found, "javascript_error"),
        [page("/about")].into()
    );
    assert_eq!(pages_with(found, "render_failed"), [page("/spin")].into());
    let blocked: BTreeSet<(String, String)> = found
        .iter()
        .filter(|(kind, _)| kind == "render_blocked_resource")
        .cloned()
        .collect();
    assert_eq!(blocked.len(), 1, "{found:?}");
    assert!(
        blocked
            .iter()
            .all(|(_, evidence)| evidence.contains("/private/tracker.js")),
        "{blocked:?}"
    );
    let differs = pages_with(found, "rendered_differs");
    if always {
        assert_eq!(differs, [page("/served")].into(), "{found:?}");
    } else {
        assert!(differs.is_empty(), "{found:?}");
    }
    // Google keeps a page whose raw HTML says noindex out, whatever script does after.
    assert!(
        pages_with(found, "noindex_page").contains(&page("/served")),
        "{found:?}"
    );
    // The pages only script links to were crawled.
    let asked = site.asked();
    for path in ["/products", "/about", "/served", "/spin"] {
        assert!(
            asked.iter().any(|p| p == path),
            "{path} was not crawled: {asked:?}"
        );
    }
    // robots.txt kept the renderer from the tracker.
    assert!(
        !asked.iter().any(|p| p == "/private/tracker.js"),
        "{asked:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_scanned_in_each_mode_on_memory() {
    the_app_scanned_in_each_mode(memory(), memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_scanned_in_each_mode_on_postgres() {
    the_app_scanned_in_each_mode(postgres().await, postgres().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn render_without_a_renderer_is_a_validation_error() {
    let (app, _workers) = app(memory(), None);
    let (key, property) = app.crawlable_property("https://example.com/", 10).await;
    for mode in ["auto", "always"] {
        let reply = app
            .post(
                &format!("/properties/{property}/scans"),
                &key,
                json!({"render": mode}),
            )
            .await;
        reply.expect_error(400, "validation_error");
        assert!(reply.body.to_string().contains("render"), "{}", reply.body);
        let crawl = app
            .post(
                &format!("/properties/{property}/crawls"),
                &key,
                json!({"render": mode}),
            )
            .await;
        crawl.expect_error(400, "validation_error");
    }
    let never = app
        .post(
            &format!("/properties/{property}/scans"),
            &key,
            json!({"render": "never"}),
        )
        .await;
    assert_eq!(never.expect(202)["render"], "never");
    let unknown = app
        .post(
            &format!("/properties/{property}/scans"),
            &key,
            json!({"render": "sometimes"}),
        )
        .await;
    unknown.expect_error(400, "validation_error");
    let batch = app
        .post(
            "/scans/batch",
            &key,
            json!({"scans": [{"propertyId": property, "render": "always"}]}),
        )
        .await;
    let item = &batch.expect(202)["results"][0];
    assert_eq!(item["error"]["code"], "validation_error", "{item}");
}

// ---------------------------------------------------------------------------------------------
// Egress and isolation
// ---------------------------------------------------------------------------------------------

fn allow_all() -> SessionOptions {
    SessionOptions {
        robots: Arc::new(|_| true),
        page_timeout: Duration::from_secs(10),
        page_bytes: 16 * 1024 * 1024,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_gets_nothing_from_private_addresses() {
    let mut answers = BTreeMap::new();
    answers.insert(
        "/secret.js".to_owned(),
        answer("application/javascript", "window.secret = 1;"),
    );
    answers.insert(
        "/data".to_owned(),
        answer("application/json", "{\"secret\": true}"),
    );
    answers.insert("/pixel".to_owned(), answer("image/gif", "GIF89a"));
    let internal = Site::start(answers).await;
    let port = internal.address.port();
    // The page itself is the crawler's answer (the browser never fetches it); what its
    // scripts ask for is judged.
    let html = format!(
        "<!DOCTYPE html><html><head><title>Public page</title>\
         <script src=\"http://127.0.0.1:{port}/secret.js\"></script></head><body>\
         <img src=\"http://localhost:{port}/pixel\"><iframe src=\"http://127.0.0.1:{port}/data\"></iframe>\
         <h1 id=\"out\">waiting</h1><script>\
         fetch('http://127.0.0.1:{port}/data').then(r => r.text()).then(t => {{ document.getElementById('out').textContent = 'leaked ' + t; }})\
         .catch(e => {{ document.getElementById('out').textContent = 'refused'; }});\
         </script></body></html>"
    );
    let input = RenderInput {
        // On loopback too, so that Chromium's own rule on public pages asking for local
        // addresses (Local Network Access) is not what keeps the requests out.
        url: url::Url::parse(&format!("http://localhost:{port}/page")).expect("a URL"),
        status: 200,
        content_type: Some("text/html".into()),
        body: html.into_bytes(),
    };
    let guarded = ChromiumRenderer::launch(chromium()).build();
    let session = guarded.open(allow_all()).await.expect("a session");
    let rendered = session
        .render(input.clone())
        .await
        .expect("the page rendered");
    session.close().await;
    assert!(
        rendered.html.contains("<h1 id=\"out\">refused</h1>"),
        "{}",
        rendered.html
    );
    assert_eq!(
        internal.asked(),
        Vec::<String>::new(),
        "the internal server was reached"
    );
    let refused: BTreeSet<&str> = rendered
        .refused
        .iter()
        .filter(|r| r.why == Refusal::Egress)
        .map(|r| r.resource_type.as_str())
        .collect();
    // The script, the image, the frame and the script's fetch (which DevTools calls XHR).
    for kind in ["Script", "Image", "Document", "XHR"] {
        assert!(
            refused.contains(kind),
            "{kind} not refused: {:?}",
            rendered.refused
        );
    }

    // The same page where private targets are allowed reaches the server: the rule, not
    // the page, kept it out above.
    let open = ChromiumRenderer::launch(chromium())
        .allow_private_targets(true)
        .build();
    let session = open.open(allow_all()).await.expect("a session");
    let rendered = session.render(input).await.expect("the page rendered");
    session.close().await;
    assert!(
        rendered.refused.iter().all(|r| r.why != Refusal::Egress),
        "{:?}",
        rendered.refused
    );
    let asked = internal.asked();
    for path in ["/secret.js", "/data", "/pixel"] {
        assert!(asked.iter().any(|p| p == path), "{path}: {asked:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_organizations_scans_share_no_cookies() {
    let site = Site::start(spa()).await;
    let renderer = renderer();
    let (app, _workers) = app(memory(), Some(&renderer));
    let (first_key, first) = app.crawlable_property(&site.url("/"), 3).await;
    let (second_key, second) = app.crawlable_property(&site.url("/"), 3).await;
    let body = json!({"render": "always", "maxPages": 3});
    let (a, b) = tokio::join!(
        scan(&app, &first_key, &first, body.clone()),
        scan(&app, &second_key, &second, body.clone())
    );
    scan(&app, &second_key, &second, body).await;
    assert!(a["result"]["pagesRendered"].as_u64() > Some(0), "{a}");
    assert!(b["result"]["pagesRendered"].as_u64() > Some(0), "{b}");
    // Each scan's home page set the cookie; none found another scan's.
    let asked = site.asked();
    assert!(!asked.iter().any(|p| p == "/leak"), "{asked:?}");
}

// ---------------------------------------------------------------------------------------------
// A browser killed under a scan
// ---------------------------------------------------------------------------------------------

/// The processes whose command line names `needle` (zombies have none), and the zombies
/// among this process's children.
fn processes_naming(needle: &str) -> (Vec<u32>, Vec<u32>) {
    let me = std::process::id().to_string();
    let mut naming = Vec::new();
    let mut zombies = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(needle) {
            naming.push(pid);
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // pid (comm) state ppid …
        let after = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .unwrap_or_default();
        let fields: Vec<&str> = after.split_whitespace().collect();
        if fields.first() == Some(&"Z") && fields.get(1) == Some(&me.as_str()) {
            zombies.push(pid);
        }
    }
    (naming, zombies)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_killed_mid_scan_is_replaced_and_no_page_is_lost() {
    // Twelve shells whose script waits 300 ms for its data, so that pages are in flight
    // when the browser dies.
    let html = "text/html; charset=utf-8";
    let mut answers = BTreeMap::new();
    answers.insert(
        "/robots.txt".to_owned(),
        answer("text/plain", "User-agent: *\n"),
    );
    let links: String = (1..12)
        .map(|i| format!("<a href=\"/p{i}\">page {i}</a>"))
        .collect();
    answers.insert(
        "/".to_owned(),
        answer(html, format!("<html lang=en><title>Home page of the slow site</title><body><h1>Home</h1>{links}</body></html>")),
    );
    for i in 1..12 {
        answers.insert(format!("/p{i}"), answer(html,
            "<!DOCTYPE html><html lang=\"en\"><body><div id=\"root\"></div><script>\
             fetch('/data').then(r => r.text()).then(t => { document.getElementById('root').textContent = t; });\
             </script></body></html>"));
    }
    answers.insert(
        "/data".to_owned(),
        Answer {
            delay: Duration::from_millis(300),
            ..answer("text/plain", "the data of the page")
        },
    );
    let site = Site::start(answers).await;
    let profiles = std::env::temp_dir().join(format!("xf-render-test-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&profiles).expect("a profiles directory");
    let renderer = ChromiumRenderer::launch(chromium())
        .concurrency(4)
        .allow_private_targets(true)
        .profiles(&profiles)
        .build();
    let (app, workers) = app(memory(), Some(&renderer));
    let (key, property) = app.crawlable_property(&site.url("/"), 20).await;
    let queued = app
        .post(
            &format!("/properties/{property}/scans"),
            &key,
            json!({"render": "always"}),
        )
        .await;
    let id = queued.expect(202)["job"]["id"]
        .as_str()
        .expect("a job id")
        .to_owned();

    // Once the first page's script asks for its data, kill the browser (and its children).
    let began = Instant::now();
    while !site.asked().iter().any(|p| p == "/data") {
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "no page asked for its data"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pids = renderer.browser_pids();
    assert_eq!(pids.len(), 1, "one browser runs");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pids[0].to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());

    let job = loop {
        let job = app.get(&format!("/jobs/{id}"), &key).await.expect(200)["job"].clone();
        if matches!(
            job["status"].as_str(),
            Some("completed" | "failed" | "cancelled")
        ) {
            break job;
        }
        assert!(began.elapsed() < Duration::from_secs(120), "{job}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(job["status"], "completed", "{job}");
    assert_eq!(job["result"]["pagesScanned"], 12, "{job}");
    let found = findings(&app, &key, &property).await;
    let failed = pages_with(&found, "render_failed");
    let rendered = job["result"]["pagesRendered"].as_u64().unwrap_or_default();
    // Every page either rendered (again, in the new browser) or is recorded as failed.
    assert_eq!(rendered + failed.len() as u64, 12, "{job} {failed:?}");
    assert!(
        rendered >= 11,
        "pages in flight render again in the new browser: {job} {failed:?}"
    );
    let replaced = renderer.browser_pids();
    assert_eq!(replaced.len(), 1);
    assert_ne!(replaced, pids, "a new browser runs");

    // Nothing of either browser outlives the renderer.
    workers.shutdown(Duration::from_secs(5)).await;
    drop(app);
    drop(renderer);
    let began = Instant::now();
    loop {
        let (running, zombies) = processes_naming(&profiles.to_string_lossy());
        if running.is_empty() && zombies.is_empty() {
            break;
        }
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "browser processes outlived the renderer: running {running:?}, zombies {zombies:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let left: Vec<_> = std::fs::read_dir(&profiles)
        .expect("the directory")
        .collect();
    assert!(left.is_empty(), "profiles left behind: {left:?}");
    let _ = std::fs::remove_dir(&profiles);
}
