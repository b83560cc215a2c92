//! The crawler end to end: real `seo-scan` jobs, queued through the API and run by the
//! background runtime (`spawn_workers`), crawl fixture sites that this test process serves
//! itself on loopback.
//!
//! **The fixture.** A [`Fixture`] is an axum server on `127.0.0.1:0` (one test uses
//! `127.0.0.2` as "another host") whose answers the test sets path by path ([`Resource`]:
//! an HTML page, a status, a redirect, robots.txt, a sitemap, a body cut off mid-stream, with
//! optional headers and a delay), or generates ([`Fixture::generated`]) for sites without
//! end. Every request is logged with its path, user agent and arrival time, and the tests
//! assert on that log: what the crawler asked for, in which order, and when it stopped. The
//! answers can change between two scans (the lifecycle test fixes and breaks pages).
//!
//! **The pages** are small HTML strings built by [`Page`]: clean unless told otherwise (a
//! title of 15 to 60 characters, a description of 70 to 160, `lang`, a viewport, one `h1`,
//! and 220 words of text of their own, so no two pages are duplicates and none is thin).
//! Each defect page departs from that in exactly one way, so the findings a scan must make
//! are known exactly.
//!
//! Properties are `http://localhost:{port}/` (the API wants a host name; the fixture listens
//! on 127.0.0.1), so the apps allow private targets, except where the test is about the SSRF
//! protection.
//!
//! `mixed_content` needs an `https` page, and the fixture is plain `http`: the fetcher builds
//! its own reqwest client with the public web PKI roots and no way to add a test CA, so it
//! cannot trust a loopback TLS server. That check is covered by a direct `checks::analyse`
//! test on a hand-built `CrawlRecord` instead ([`mixed_content_is_found_on_https_pages_only`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::Router;
use bytes::Bytes;
use http::Method;
use serde_json::{json, Value};
use xf_core::crawl::checks::{self, analyse, Check, CrawlRecord, Finding, PageRecord};
use xf_core::crawl::html;
use xf_core::ids::{IssueId, PropertyId};
use xf_core::model::{Issue, IssueStatus, ScanKind};
use xf_core::runtime::{WorkerHandle, WorkerOptions};
use xf_core::store::{IssueFilter, PageRequest};
use xf_core::testing::TestStore;
use xf_core::XfBuilder;
use xf_tests::TestApp;

// ---------------------------------------------------------------------------------------------
// The fixture server
// ---------------------------------------------------------------------------------------------

/// The body of a fixture answer.
#[derive(Debug, Clone)]
enum Content {
    /// Nothing.
    Empty,
    /// A body with this content type.
    Text(&'static str, String),
    /// `text/html`: this much, then the connection breaks (the body stream fails).
    CutOff(String),
}

/// One answer of the fixture.
#[derive(Debug, Clone)]
struct Resource {
    status: u16,
    headers: Vec<(&'static str, String)>,
    content: Content,
    delay: Duration,
    /// The status a `HEAD` gets instead of the resource (a server that refuses `HEAD`).
    head_status: Option<u16>,
}

impl Resource {
    fn new(status: u16, content: Content) -> Self {
        Resource {
            status,
            headers: Vec::new(),
            content,
            delay: Duration::ZERO,
            head_status: None,
        }
    }

    /// `200` with a page.
    fn page(page: &Page) -> Self {
        Self::html(page.render())
    }

    /// `200` with this HTML.
    fn html(html: String) -> Self {
        Self::new(200, Content::Text("text/html; charset=utf-8", html))
    }

    /// A bare status.
    fn status(status: u16) -> Self {
        Self::new(status, Content::Empty)
    }

    /// A redirect to `to`.
    fn redirect(status: u16, to: &str) -> Self {
        Self::status(status).header("location", to)
    }

    /// `200 text/plain`.
    fn text(text: &str) -> Self {
        Self::new(200, Content::Text("text/plain", text.to_owned()))
    }

    /// A sitemap listing `urls`.
    fn sitemap(urls: &[String]) -> Self {
        let mut xml = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
        );
        for url in urls {
            let _ = writeln!(xml, "  <url><loc>{url}</loc></url>");
        }
        xml.push_str("</urlset>\n");
        Self::new(200, Content::Text("application/xml", xml))
    }

    /// `200 text/html` whose body breaks off after `html`.
    fn cut_off(html: String) -> Self {
        Self::new(200, Content::CutOff(html))
    }

    fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_owned()));
        self
    }

    fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    fn refusing_head(mut self, status: u16) -> Self {
        self.head_status = Some(status);
        self
    }

    fn into_response(self) -> Response {
        let mut builder = Response::builder().status(self.status);
        for (name, value) in &self.headers {
            builder = builder.header(*name, value);
        }
        let body = match self.content {
            Content::Empty => Body::empty(),
            Content::Text(content_type, text) => {
                builder = builder.header("content-type", content_type);
                Body::from(text)
            }
            Content::CutOff(html) => {
                builder = builder.header("content-type", "text/html; charset=utf-8");
                let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
                    Ok(Bytes::from(html)),
                    Err(std::io::Error::other("the fixture breaks the connection")),
                ];
                Body::from_stream(futures::stream::iter(chunks))
            }
        };
        builder.body(body).expect("a valid fixture response")
    }
}

/// A request the fixture received.
#[derive(Debug, Clone)]
struct Hit {
    method: String,
    /// Path and query.
    path: String,
    user_agent: String,
    at: Instant,
}

/// Answers for paths no route names.
type Generator = Box<dyn Fn(&str) -> Option<Resource> + Send + Sync>;

/// What a fixture serves, and what it was asked.
struct SiteState {
    routes: Mutex<HashMap<String, Resource>>,
    generator: Option<Generator>,
    log: Mutex<Vec<Hit>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Every request: logged first, then answered from the routes (or the generator), 404 for
/// anything else.
async fn answer(State(site): State<Arc<SiteState>>, request: Request) -> Response {
    let path = request
        .uri()
        .path_and_query()
        .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
    let user_agent = request
        .headers()
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let method = request.method().to_string();
    lock(&site.log).push(Hit {
        method: method.clone(),
        path: path.clone(),
        user_agent,
        at: Instant::now(),
    });
    let routed = lock(&site.routes).get(&path).cloned();
    let resource = routed.or_else(|| site.generator.as_ref().and_then(|generate| generate(&path)));
    match resource {
        Some(Resource {
            head_status: Some(status),
            ..
        }) if method == "HEAD" => Resource::status(status).into_response(),
        Some(resource) => {
            if !resource.delay.is_zero() {
                tokio::time::sleep(resource.delay).await;
            }
            resource.into_response()
        }
        None => Resource::status(404).into_response(),
    }
}

/// A fixture site on loopback. See the module documentation.
#[derive(Clone)]
struct Fixture {
    address: SocketAddr,
    site: Arc<SiteState>,
}

impl Fixture {
    /// An empty site (everything 404) on 127.0.0.1.
    async fn start() -> Fixture {
        Self::serve(Ipv4Addr::LOCALHOST.into(), None).await
    }

    /// A site on 127.0.0.1 that answers with `generate` where no route is set.
    async fn generated(
        generate: impl Fn(&str) -> Option<Resource> + Send + Sync + 'static,
    ) -> Fixture {
        Self::serve(Ipv4Addr::LOCALHOST.into(), Some(Box::new(generate))).await
    }

    async fn serve(ip: IpAddr, generator: Option<Generator>) -> Fixture {
        let site = Arc::new(SiteState {
            routes: Mutex::new(HashMap::new()),
            generator,
            log: Mutex::new(Vec::new()),
        });
        let router = Router::new().fallback(answer).with_state(Arc::clone(&site));
        let listener = tokio::net::TcpListener::bind(SocketAddr::new(ip, 0))
            .await
            .expect("bind the fixture");
        let address = listener.local_addr().expect("the fixture's address");
        tokio::spawn(async move { axum::serve(listener, router).await });
        Fixture { address, site }
    }

    /// `http://localhost:{port}` (no trailing slash).
    fn base(&self) -> String {
        format!("http://localhost:{}", self.address.port())
    }

    /// The absolute address of `path` on this site, as the crawler normalises it.
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base())
    }

    /// The start page: the property's URL.
    fn start_url(&self) -> String {
        self.url("/")
    }

    fn set(&self, path: &str, resource: Resource) {
        lock(&self.site.routes).insert(path.to_owned(), resource);
    }

    /// Serves `page` at `path`, naming itself as canonical unless it says otherwise.
    fn set_page(&self, path: &str, page: &Page) {
        self.set(
            path,
            Resource::page(&page.clone().canonical_at(&self.url(path))),
        );
    }

    /// `robots.txt` with these lines.
    fn set_robots(&self, lines: &str) {
        self.set("/robots.txt", Resource::text(lines));
    }

    /// `/sitemap.xml` listing these paths of the site.
    fn set_sitemap(&self, paths: &[&str]) {
        let urls: Vec<String> = paths.iter().map(|p| self.url(p)).collect();
        self.set("/sitemap.xml", Resource::sitemap(&urls));
    }

    fn hits(&self) -> Vec<Hit> {
        lock(&self.site.log).clone()
    }

    fn paths(&self) -> Vec<String> {
        self.hits().into_iter().map(|hit| hit.path).collect()
    }

    /// The requests for pages: all but robots.txt and sitemaps.
    fn page_paths(&self) -> Vec<String> {
        self.paths()
            .into_iter()
            .filter(|p| p != "/robots.txt" && !p.starts_with("/sitemap"))
            .collect()
    }

    /// Each request as `METHOD path`, sorted.
    fn requests(&self) -> Vec<String> {
        let mut requests: Vec<String> = self
            .hits()
            .into_iter()
            .map(|hit| format!("{} {}", hit.method, hit.path))
            .collect();
        requests.sort();
        requests
    }

    fn clear_log(&self) {
        lock(&self.site.log).clear();
    }
}

// ---------------------------------------------------------------------------------------------
// Pages
// ---------------------------------------------------------------------------------------------

/// An HTML page of the fixture. [`Page::new`] is clean; the other methods add one defect each
/// (or links).
#[derive(Debug, Clone)]
struct Page {
    /// Seeds the page's own title, description, heading and text.
    name: String,
    lang: Option<String>,
    titles: Vec<String>,
    descriptions: Vec<String>,
    viewport: bool,
    /// More markup for the `<head>` (canonicals, hreflang, robots).
    head: String,
    headings: Vec<(u8, String)>,
    /// `<a>` markup.
    links: Vec<String>,
    /// `<img>` markup.
    images: String,
    /// More markup for the end of `<main>`.
    body: String,
    /// The main text, instead of words made from the name.
    text: Option<String>,
    /// `<link rel="canonical">` to this address (see [`Page::canonical_at`]).
    canonical: Option<String>,
    /// Never a canonical link.
    no_canonical: bool,
    words: usize,
    /// Pad the HTML with paragraphs to at least this many bytes.
    at_least_bytes: usize,
}

impl Page {
    /// A clean page whose title, description, heading and 220 words derive from `name`.
    fn new(name: &str) -> Page {
        let title = format!("Crawl fixture: {name}");
        let description = format!(
            "This page ({name}) belongs to the fixture site that the crawl tests scan end to end."
        );
        assert!(
            (checks::limits::TITLE_MIN..=checks::limits::TITLE_MAX)
                .contains(&title.chars().count()),
            "{title}"
        );
        assert!(
            (checks::limits::DESCRIPTION_MIN..=checks::limits::DESCRIPTION_MAX)
                .contains(&description.chars().count()),
            "{description}"
        );
        Page {
            name: name.to_owned(),
            lang: Some("en".to_owned()),
            titles: vec![title],
            descriptions: vec![description],
            viewport: true,
            head: String::new(),
            headings: vec![(1, format!("About {name}"))],
            links: Vec::new(),
            images: String::new(),
            body: String::new(),
            text: None,
            canonical: None,
            no_canonical: false,
            words: 220,
            at_least_bytes: 0,
        }
    }

    fn titles(mut self, titles: &[&str]) -> Page {
        self.titles = titles.iter().map(|t| (*t).to_owned()).collect();
        self
    }

    fn descriptions(mut self, descriptions: &[&str]) -> Page {
        self.descriptions = descriptions.iter().map(|d| (*d).to_owned()).collect();
        self
    }

    fn headings(mut self, headings: &[(u8, &str)]) -> Page {
        self.headings = headings
            .iter()
            .map(|(l, t)| (*l, (*t).to_owned()))
            .collect();
        self
    }

    fn no_lang(mut self) -> Page {
        self.lang = None;
        self
    }

    fn no_viewport(mut self) -> Page {
        self.viewport = false;
        self
    }

    /// Names `url` as the page's canonical address, unless the page has a canonical link of
    /// its own or none at all.
    fn canonical_at(mut self, url: &str) -> Page {
        if !self.no_canonical && !self.head.contains("rel=\"canonical\"") {
            self.canonical.get_or_insert_with(|| url.to_owned());
        }
        self
    }

    fn no_canonical(mut self) -> Page {
        self.no_canonical = true;
        self
    }

    fn body(mut self, markup: &str) -> Page {
        self.body.push_str(markup);
        self
    }

    fn text(mut self, text: &str) -> Page {
        self.text = Some(text.to_owned());
        self
    }

    fn head(mut self, markup: &str) -> Page {
        self.head.push_str(markup);
        self
    }

    fn link(mut self, href: &str) -> Page {
        self.links.push(format!(
            "<a href=\"{href}\">link number {}</a>",
            self.links.len()
        ));
        self
    }

    fn links(self, hrefs: &[&str]) -> Page {
        hrefs.iter().fold(self, |page, href| page.link(href))
    }

    fn nofollow_link(mut self, href: &str) -> Page {
        self.links.push(format!(
            "<a href=\"{href}\" rel=\"nofollow\">a nofollow link</a>"
        ));
        self
    }

    fn image(mut self, src: &str, alt: Option<&str>) -> Page {
        match alt {
            Some(alt) => {
                let _ = write!(self.images, "<img src=\"{src}\" alt=\"{alt}\">");
            }
            None => {
                let _ = write!(self.images, "<img src=\"{src}\">");
            }
        }
        self
    }

    fn words(mut self, words: usize) -> Page {
        self.words = words;
        self
    }

    fn at_least_bytes(mut self, bytes: usize) -> Page {
        self.at_least_bytes = bytes;
        self
    }

    fn render(&self) -> String {
        let seed: String = self
            .name
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect();
        let mut html = String::from("<!doctype html>\n");
        match &self.lang {
            Some(lang) => {
                let _ = write!(html, "<html lang=\"{lang}\">");
            }
            None => html.push_str("<html>"),
        }
        html.push_str("<head><meta charset=\"utf-8\">");
        for title in &self.titles {
            let _ = write!(html, "<title>{title}</title>");
        }
        for description in &self.descriptions {
            let _ = write!(
                html,
                "<meta name=\"description\" content=\"{description}\">"
            );
        }
        if self.viewport {
            html.push_str(
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
            );
        }
        if let Some(canonical) = &self.canonical {
            let _ = write!(html, "<link rel=\"canonical\" href=\"{canonical}\">");
        }
        html.push_str(&self.head);
        html.push_str("</head>\n<body>\n");
        for (level, text) in &self.headings {
            let _ = writeln!(html, "<h{level}>{text}</h{level}>");
        }
        let _ = write!(html, "<nav>{}</nav>\n<main><p>", self.links.join(" "));
        match &self.text {
            Some(text) => html.push_str(text),
            None => {
                for i in 0..self.words {
                    let _ = write!(html, "{seed}{i} ");
                }
            }
        }
        html.push_str("</p>");
        html.push_str(&self.images);
        html.push_str(&self.body);
        html.push_str("</main>\n");
        let mut paragraph = 0;
        while html.len() < self.at_least_bytes {
            let _ = writeln!(
                html,
                "<p>Padding paragraph {paragraph} of {seed}: more words, so that the HTML \
                 document grows past the size the crawler calls large.</p>"
            );
            paragraph += 1;
        }
        html.push_str("</body></html>\n");
        html
    }
}

// ---------------------------------------------------------------------------------------------
// The app and the API
// ---------------------------------------------------------------------------------------------

fn memory_store() -> Arc<dyn TestStore> {
    Arc::new(xf_storage_memory::MemoryStore::new())
}

async fn postgres_store() -> Arc<dyn TestStore> {
    Arc::new(xf_storage_postgres::testing::fresh_database().await)
}

fn allow_private(builder: XfBuilder) -> XfBuilder {
    builder.allow_private_targets(true)
}

/// A test app over `store` whose scans may reach loopback, with its workers running.
fn crawling_app(store: Arc<dyn TestStore>) -> (TestApp, WorkerHandle) {
    let app = TestApp::configured(store, allow_private);
    let workers = app.xf.spawn_workers(WorkerOptions::new());
    (app, workers)
}

/// An organization on `growth` (crawl limits: 1,000 pages, depth 5).
#[derive(Debug)]
struct Owner {
    id: String,
    key: String,
}

async fn organization(app: &TestApp) -> Owner {
    let created = app.organization("Crawl tests", "growth").await;
    Owner {
        id: created.organization.id.to_string(),
        key: created.live_key,
    }
}

/// Lifts the organization's crawl limits.
async fn set_crawl_limits(app: &TestApp, owner: &Owner, max_pages: u32, max_depth: u32) {
    let limits = json!({"limits": {"maxPages": max_pages, "maxDepth": max_depth}});
    app.admin(
        Method::PATCH,
        &format!("/organizations/{}", owner.id),
        Some(limits),
    )
    .await
    .expect(200);
}

/// Creates the property `url`; returns its id.
async fn add_property(app: &TestApp, owner: &Owner, url: &str) -> String {
    let reply = app
        .post("/properties", &owner.key, json!({ "url": url }))
        .await;
    reply.expect(201)["property"]["id"]
        .as_str()
        .expect("a property id")
        .to_owned()
}

/// Queues a scan; returns the job id.
async fn queue_scan(
    app: &TestApp,
    owner: &Owner,
    property: &str,
    max_pages: u32,
    max_depth: u32,
) -> String {
    let reply = app
        .post(
            &format!("/properties/{property}/scans"),
            &owner.key,
            json!({"maxPages": max_pages, "maxDepth": max_depth}),
        )
        .await;
    let data = reply.expect(202);
    assert_eq!(
        data["effectiveLimits"],
        json!({"maxPages": max_pages, "maxDepth": max_depth}),
        "the budget was not clamped"
    );
    data["job"]["id"].as_str().expect("a job id").to_owned()
}

/// `GET /jobs/{id}`'s job.
async fn job(app: &TestApp, owner: &Owner, job: &str) -> Value {
    let reply = app.get(&format!("/jobs/{job}"), &owner.key).await;
    reply.expect(200)["job"].clone()
}

/// Polls the job every 20 ms, for up to 60 s, until it has ended; returns it.
async fn ended(app: &TestApp, owner: &Owner, id: &str) -> Value {
    let began = Instant::now();
    loop {
        let job = job(app, owner, id).await;
        if matches!(
            job["status"].as_str(),
            Some("completed" | "failed" | "cancelled")
        ) {
            return job;
        }
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "the scan did not end within a minute: {job}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits for a job to end and checks that it completed; returns its `result`.
async fn completed(app: &TestApp, owner: &Owner, id: &str) -> Value {
    let job = ended(app, owner, id).await;
    assert_eq!(job["status"], "completed", "{job}");
    assert_eq!(job["progress"], 100, "{job}");
    job["result"].clone()
}

/// Runs one scan to completion; returns its job id and `result`.
async fn scan(
    app: &TestApp,
    owner: &Owner,
    property: &str,
    max_pages: u32,
    max_depth: u32,
) -> (String, Value) {
    let id = queue_scan(app, owner, property, max_pages, max_depth).await;
    let result = completed(app, owner, &id).await;
    (id, result)
}

/// Every issue of the property, from the store (where `subject` is visible).
async fn stored_issues(app: &TestApp, property: &str) -> Vec<Issue> {
    let id = PropertyId::parse(property).expect("a property id");
    let page = PageRequest {
        limit: 10_000,
        after: None,
    };
    app.store
        .list_issues(&id, &IssueFilter::default(), &page)
        .await
        .expect("the property's issues")
}

/// `GET /properties/{id}/issues?limit=100`'s data.
async fn api_issues(app: &TestApp, owner: &Owner, property: &str) -> Value {
    let reply = app
        .get(
            &format!("/properties/{property}/issues?limit=100"),
            &owner.key,
        )
        .await;
    reply.expect(200).clone()
}

/// `(type, subject)`: what identifies an issue across scans.
type Identity = (String, String);

fn identity(check: &Check, subject: &str) -> Identity {
    (check.id.to_owned(), subject.to_owned())
}

/// The issue of `check` about `subject`.
#[track_caller]
fn find<'a>(issues: &'a [Issue], check: &Check, subject: &str) -> &'a Issue {
    let matching: Vec<&Issue> = issues
        .iter()
        .filter(|i| i.issue_type == check.id && i.subject == subject)
        .collect();
    assert_eq!(
        matching.len(),
        1,
        "{} about {subject}: {issues:#?}",
        check.id
    );
    matching[0]
}

/// Compares a site's issues with the expected identities; returns what differs (an empty
/// list when they are equal), and checks each issue's catalogue fields and shape.
fn differences(site: &str, issues: &[Issue], expected: &BTreeSet<Identity>) -> Vec<String> {
    let mut problems = Vec::new();
    let mut actual = BTreeSet::new();
    for issue in issues {
        let key = (issue.issue_type.clone(), issue.subject.clone());
        if !actual.insert(key.clone()) {
            problems.push(format!("{site}: {key:?} recorded twice"));
        }
        let Some(check) = Check::by_id(&issue.issue_type) else {
            problems.push(format!(
                "{site}: {} is no check of the catalogue",
                issue.issue_type
            ));
            continue;
        };
        let page_url_ok = match check.scope {
            ScanKind::Page => issue.url.as_deref() == Some(issue.subject.as_str()),
            ScanKind::Site => issue.url.is_none(),
        };
        if !page_url_ok
            || issue.scan_kind != check.scope
            || issue.title != check.title
            || issue.severity != check.severity
            || issue.how_to_fix != check.fix
            || issue.evidence.is_empty()
        {
            problems.push(format!(
                "{site}: the issue does not match its check: {issue:#?}"
            ));
        }
    }
    for missing in expected.difference(&actual) {
        problems.push(format!("{site}: missing {missing:?}"));
    }
    for extra in actual.difference(expected) {
        let evidence = issues
            .iter()
            .find(|i| i.issue_type == extra.0 && i.subject == extra.1)
            .map_or("", |i| i.evidence.as_str());
        problems.push(format!("{site}: unexpected {extra:?} ({evidence})"));
    }
    problems
}

/// The score the scan of these findings over `pages` pages must have.
fn expected_score(expected: &BTreeSet<Identity>, pages: usize) -> u32 {
    let findings: Vec<Finding> = expected
        .iter()
        .map(|(id, subject)| {
            let check = Check::by_id(id).expect("a check of the catalogue");
            Finding {
                check,
                url: (check.scope == ScanKind::Page).then(|| subject.clone()),
                subject: subject.clone(),
                evidence: String::new(),
            }
        })
        .collect();
    checks::score(&findings, pages)
}

// ---------------------------------------------------------------------------------------------
// 1. Every check of the catalogue
// ---------------------------------------------------------------------------------------------

/// The checks the catalogue test does not trigger: `mixed_content`, which no fixture over
/// plain http on loopback can trigger, is covered by a direct `analyse` test (see the module
/// documentation); `page_not_audited`, which takes a failure of the crawler itself, by
/// [`a_crawler_failure_on_one_page_is_reported_and_loses_nothing`].
/// `tests/render.rs` finds the rendering checks, in real Chromium.
const COVERED_ELSEWHERE: &[&str] = &[
    checks::MIXED_CONTENT.id,
    checks::PAGE_NOT_AUDITED.id,
    checks::CONTENT_REQUIRES_JAVASCRIPT.id,
    checks::RENDERED_DIFFERS.id,
    checks::JAVASCRIPT_ERROR.id,
    checks::RENDER_FAILED.id,
    checks::RENDER_BLOCKED_RESOURCE.id,
];

/// The pages of the main site that the home page links to, in link order. Every one of them
/// but `/private/linked` (disallowed) is fetched.
const MAIN_LINKED: &[&str] = &[
    "/clean",
    "/hub",
    "/missing",
    "/error",
    "/broken-body",
    "/loop-a",
    "/slow",
    "/large",
    "/dup-a",
    "/dup-b",
    "/t-missing",
    "/t-empty",
    "/t-short",
    "/t-long",
    "/t-multi",
    "/d-missing",
    "/d-empty",
    "/d-short",
    "/d-long",
    "/d-multi",
    "/h1-missing",
    "/h1-empty",
    "/h1-multi",
    "/h-order",
    "/c-multi",
    "/c-invalid",
    "/c-other",
    "/c-broken",
    "/c-redirect",
    "/hl-invalid",
    "/hl-noself",
    "/hl-de",
    "/hl-noreturn",
    "/hl-fr",
    "/img-alt",
    "/thin",
    "/no-lang",
    "/no-viewport",
    "/nofollow",
    "/noindex",
    "/canonical-none",
    "/jsonld-bad",
    "/vague",
    "/js-links",
    "/near-a",
    "/near-b",
    "/ext-links",
    "/private/linked",
];

/// Linked from `/hub` (depth 2): both redirect.
const HUB_LINKED: &[&str] = &["/chain", "/moved"];

/// In the sitemaps, linked from nowhere: fetched after the crawl for the sitemap checks
/// (`/via-other-host` is listed by the sitemap on the other host only).
const SITEMAP_ONLY: &[&str] = &["/orphan", "/sitemap-noindex", "/old", "/via-other-host"];

/// About 1,000 words of main text for the near-duplicate pages, each page changing one.
fn near_duplicate_text(changed: &str) -> String {
    let mut text = String::new();
    for i in 0..1_000 {
        let word = if i == 500 {
            changed.to_owned()
        } else {
            format!("shared{}", i * 37 % 211 + i)
        };
        text.push_str(&word);
        text.push(' ');
    }
    text
}

/// An address on loopback where nothing listens: a link to it cannot be reached.
fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = listener.local_addr().expect("its address").port();
    drop(listener);
    format!("http://127.0.0.1:{port}/")
}

/// The main site: robots.txt (found, with a misspelt line) with a disallowed directory and
/// three sitemaps, one valid, one not, and one on another host (`other`, which also answers
/// the site's external links); a clean home page linking to one page per page check, a clean
/// page, and the redirects, errors and sitemap entries of the site checks. Returns the
/// expected findings and how many pages the scan fetches.
fn main_site(site: &Fixture, other: &Fixture) -> (BTreeSet<Identity>, usize) {
    let url = |path: &str| site.url(path);
    site.set_robots(&format!(
        "User-agent: *\nDisallow: /private/\nDisalow: /typo\n\nSitemap: {}\nSitemap: {}\nSitemap: {}\n",
        url("/sitemap.xml"),
        url("/sitemap-broken.xml"),
        other.url("/sitemap.xml"),
    ));
    // The other host's sitemap: its address on the site is used, its own is not.
    other.set(
        "/sitemap.xml",
        Resource::sitemap(&[url("/via-other-host"), url("/clean"), other.url("/own")]),
    );
    site.set_page("/via-other-host", &Page::new("via other host"));
    site.set_sitemap(&[
        "/",
        "/clean",
        "/orphan",
        "/sitemap-noindex",
        "/old",
        "/private/secret",
    ]);
    // Neither XML nor a list of URLs.
    site.set(
        "/sitemap-broken.xml",
        Resource::text(&format!("Our pages:\n{}\n", url("/clean"))),
    );

    site.set_page("/", &Page::new("home").links(MAIN_LINKED));
    site.set_page("/clean", &Page::new("clean"));
    site.set_page("/hub", &Page::new("hub").links(HUB_LINKED));
    // /missing: no route, 404.
    site.set("/error", Resource::status(500));
    site.set(
        "/broken-body",
        Resource::cut_off(Page::new("broken body").render()),
    );
    site.set("/loop-a", Resource::redirect(302, "/loop-b"));
    site.set("/loop-b", Resource::redirect(302, "/loop-a"));
    site.set(
        "/slow",
        Resource::page(&Page::new("slow").canonical_at(&url("/slow")))
            .delayed(Duration::from_millis(checks::limits::SLOW_MS + 150)),
    );
    let large_bytes = usize::try_from(checks::limits::LARGE_PAGE_BYTES).unwrap() + 64 * 1024;
    site.set_page("/large", &Page::new("large").at_least_bytes(large_bytes));
    // Two identical pages: the same title, description and text.
    site.set_page("/dup-a", &Page::new("duplicate"));
    site.set_page("/dup-b", &Page::new("duplicate"));

    site.set_page("/t-missing", &Page::new("t-missing").titles(&[]));
    site.set_page("/t-empty", &Page::new("t-empty").titles(&[""]));
    site.set_page("/t-short", &Page::new("t-short").titles(&["Too short"]));
    site.set_page(
        "/t-long",
        &Page::new("t-long")
            .titles(&["A title that goes on and on, far past the sixty characters results show"]),
    );
    site.set_page(
        "/t-multi",
        &Page::new("t-multi").titles(&["Crawl fixture: t-multi", "A second title element"]),
    );
    site.set_page("/d-missing", &Page::new("d-missing").descriptions(&[]));
    site.set_page("/d-empty", &Page::new("d-empty").descriptions(&[""]));
    site.set_page(
        "/d-short",
        &Page::new("d-short").descriptions(&["Far too short."]),
    );
    let long = "A description that says far more than a search result can show: it goes on about \
                the page, its subject, its history, its authors and much else besides, until \
                it is cut off.";
    site.set_page("/d-long", &Page::new("d-long").descriptions(&[long]));
    site.set_page(
        "/d-multi",
        &Page::new("d-multi").descriptions(&[
            "This page (d-multi) has two meta descriptions, which is one more than it should have.",
            "The second description of the page, which search engines may pick instead.",
        ]),
    );
    site.set_page(
        "/h1-missing",
        &Page::new("h1-missing").headings(&[(2, "A section")]),
    );
    site.set_page("/h1-empty", &Page::new("h1-empty").headings(&[(1, "")]));
    site.set_page(
        "/h1-multi",
        &Page::new("h1-multi").headings(&[(1, "First main heading"), (1, "Second main heading")]),
    );
    site.set_page(
        "/h-order",
        &Page::new("h-order").headings(&[(1, "Main"), (2, "Section"), (4, "Skipped")]),
    );
    site.set_page(
        "/c-multi",
        &Page::new("c-multi").head(&format!(
            "<link rel=\"canonical\" href=\"{}\"><link rel=\"canonical\" href=\"/c-multi\">",
            url("/c-multi")
        )),
    );
    site.set_page(
        "/c-invalid",
        &Page::new("c-invalid").head("<link rel=\"canonical\" href=\"\">"),
    );
    site.set_page(
        "/c-other",
        &Page::new("c-other")
            .head("<link rel=\"canonical\" href=\"https://other.example/c-other\">"),
    );
    site.set_page(
        "/c-broken",
        &Page::new("c-broken").head("<link rel=\"canonical\" href=\"/missing\">"),
    );
    site.set_page(
        "/c-redirect",
        &Page::new("c-redirect").head("<link rel=\"canonical\" href=\"/moved\">"),
    );
    let alternate = |lang: &str, href: &str| {
        format!("<link rel=\"alternate\" hreflang=\"{lang}\" href=\"{href}\">")
    };
    site.set_page(
        "/hl-invalid",
        &Page::new("hl-invalid").head(&alternate("en_GB", "/hl-invalid")),
    );
    // No self reference; /hl-de links back.
    site.set_page(
        "/hl-noself",
        &Page::new("hl-noself").head(&alternate("de", "/hl-de")),
    );
    site.set_page(
        "/hl-de",
        &Page::new("hl-de").head(&(alternate("de", "/hl-de") + &alternate("en", "/hl-noself"))),
    );
    // /hl-fr does not link back.
    site.set_page(
        "/hl-noreturn",
        &Page::new("hl-noreturn")
            .head(&(alternate("en", "/hl-noreturn") + &alternate("fr", "/hl-fr"))),
    );
    site.set_page(
        "/hl-fr",
        &Page::new("hl-fr").head(&alternate("fr", "/hl-fr")),
    );
    site.set_page(
        "/img-alt",
        &Page::new("img-alt")
            .image("/img/a.png", None)
            .image("/img/b.png", Some("A described image")),
    );
    site.set_page("/thin", &Page::new("thin").words(20));
    site.set_page("/no-lang", &Page::new("no-lang").no_lang());
    site.set_page("/no-viewport", &Page::new("no-viewport").no_viewport());
    site.set_page("/nofollow", &Page::new("nofollow").nofollow_link("/clean"));
    site.set_page(
        "/noindex",
        &Page::new("noindex").head("<meta name=\"robots\" content=\"noindex\">"),
    );
    site.set_page(
        "/canonical-none",
        &Page::new("canonical-none").no_canonical(),
    );
    site.set_page(
        "/jsonld-bad",
        &Page::new("jsonld-bad").head(
            "<script type=\"application/ld+json\">{\"@type\": \"Organization\", \"name\": \"Acme\"}</script>",
        ),
    );
    site.set_page(
        "/vague",
        &Page::new("vague").body(
            "<a href=\"/clean\">Click here</a> <a href=\"/hub\"><img src=\"/i.png\" alt=\"\"></a>",
        ),
    );
    site.set_page(
        "/js-links",
        &Page::new("js-links").body(
            "<a onclick=\"location='/clean'\">The clean page</a> \
             <a href=\"javascript:void(0)\">The menu</a>",
        ),
    );
    site.set_page(
        "/near-a",
        &Page::new("near-a").text(&near_duplicate_text("apples")),
    );
    site.set_page(
        "/near-b",
        &Page::new("near-b").text(&near_duplicate_text("oranges")),
    );
    let closed = closed_port_url();
    site.set_page(
        "/ext-links",
        &Page::new("ext-links").links(&[
            &other.url("/gone"),
            &other.url("/fine"),
            &other.url("/head-refused"),
            &closed,
        ]),
    );
    other.set_page("/fine", &Page::new("fine elsewhere"));
    other.set(
        "/head-refused",
        Resource::page(&Page::new("no head")).refusing_head(405),
    );
    site.set_page("/private/linked", &Page::new("private linked"));
    site.set_page("/private/secret", &Page::new("private secret"));

    // Redirects, all ending at one clean page that is never fetched as a page of its own.
    site.set("/chain", Resource::redirect(301, "/chain-2"));
    site.set("/chain-2", Resource::redirect(302, "/target"));
    site.set("/moved", Resource::redirect(301, "/target"));
    site.set("/old", Resource::redirect(308, "/target"));
    site.set_page("/target", &Page::new("target"));

    site.set_page("/orphan", &Page::new("orphan"));
    site.set(
        "/sitemap-noindex",
        Resource::page(&Page::new("sitemap noindex")).header("x-robots-tag", "noindex"),
    );

    let page = |check: &Check, path: &str| identity(check, &url(path));
    let expected: BTreeSet<Identity> = [
        page(&checks::HTTP_4XX, "/missing"),
        page(&checks::HTTP_5XX, "/error"),
        page(&checks::UNREACHABLE, "/broken-body"),
        page(&checks::REDIRECT_CHAIN, "/chain"),
        page(&checks::TITLE_MISSING, "/t-missing"),
        page(&checks::TITLE_EMPTY, "/t-empty"),
        page(&checks::TITLE_TOO_SHORT, "/t-short"),
        page(&checks::TITLE_TOO_LONG, "/t-long"),
        page(&checks::TITLE_MULTIPLE, "/t-multi"),
        page(&checks::DESCRIPTION_MISSING, "/d-missing"),
        page(&checks::DESCRIPTION_EMPTY, "/d-empty"),
        page(&checks::DESCRIPTION_TOO_SHORT, "/d-short"),
        page(&checks::DESCRIPTION_TOO_LONG, "/d-long"),
        page(&checks::DESCRIPTION_MULTIPLE, "/d-multi"),
        page(&checks::H1_MISSING, "/h1-missing"),
        page(&checks::H1_EMPTY, "/h1-empty"),
        page(&checks::H1_MULTIPLE, "/h1-multi"),
        page(&checks::HEADING_ORDER, "/h-order"),
        page(&checks::CANONICAL_MULTIPLE, "/c-multi"),
        page(&checks::CANONICAL_INVALID, "/c-invalid"),
        page(&checks::CANONICAL_OTHER_HOST, "/c-other"),
        page(&checks::CANONICAL_BROKEN, "/c-broken"),
        page(&checks::CANONICAL_REDIRECT, "/c-redirect"),
        page(&checks::HREFLANG_INVALID, "/hl-invalid"),
        page(&checks::HREFLANG_NO_SELF, "/hl-noself"),
        page(&checks::HREFLANG_NO_RETURN, "/hl-noreturn"),
        page(&checks::IMAGE_ALT_MISSING, "/img-alt"),
        page(&checks::THIN_CONTENT, "/thin"),
        page(&checks::SLOW_RESPONSE, "/slow"),
        page(&checks::LARGE_PAGE, "/large"),
        page(&checks::LANG_MISSING, "/no-lang"),
        page(&checks::VIEWPORT_MISSING, "/no-viewport"),
        page(&checks::LINKS_TO_REDIRECTS, "/hub"),
        page(&checks::NOFOLLOW_INTERNAL, "/nofollow"),
        page(&checks::NOINDEX_LINKED, "/noindex"),
        page(&checks::CANONICAL_MISSING, "/canonical-none"),
        page(&checks::STRUCTURED_DATA_INVALID, "/jsonld-bad"),
        page(&checks::LINK_TEXT_VAGUE, "/vague"),
        page(&checks::LINK_NOT_CRAWLABLE, "/js-links"),
        identity(&checks::ROBOTS_INVALID, "robots.txt"),
        identity(&checks::SITEMAP_OTHER_HOST, &other.url("/sitemap.xml")),
        page(&checks::ORPHAN_PAGE, "/via-other-host"),
        identity(&checks::BROKEN_EXTERNAL_LINK, &other.url("/gone")),
        identity(&checks::BROKEN_EXTERNAL_LINK, &closed),
        identity(
            &checks::NEAR_DUPLICATE_CONTENT,
            &format!("near-duplicate: {}", url("/near-a")),
        ),
        // Site checks: their subject is the address or text they are about.
        page(&checks::REDIRECT_LOOP, "/loop-a"),
        page(&checks::BROKEN_LINK, "/missing"),
        page(&checks::BROKEN_LINK, "/error"),
        page(&checks::BROKEN_LINK, "/broken-body"),
        page(&checks::BROKEN_LINK, "/loop-a"),
        page(&checks::SITEMAP_INVALID, "/sitemap-broken.xml"),
        page(&checks::SITEMAP_NOT_INDEXABLE, "/sitemap-noindex"),
        page(&checks::SITEMAP_NOT_INDEXABLE, "/old"),
        page(&checks::SITEMAP_BLOCKED, "/private/secret"),
        page(&checks::ORPHAN_PAGE, "/orphan"),
        identity(&checks::DUPLICATE_TITLE, "title: Crawl fixture: duplicate"),
        identity(
            &checks::DUPLICATE_DESCRIPTION,
            "description: This page (duplicate) belongs to the fixture site that the crawl \
             tests scan end to end.",
        ),
        identity(
            &checks::DUPLICATE_CONTENT,
            &format!("content: {}", url("/dup-a")),
        ),
    ]
    .into_iter()
    .collect();
    // Plus /target, crawled as itself once redirects led to it.
    let pages = 1 + (MAIN_LINKED.len() - 1) + HUB_LINKED.len() + SITEMAP_ONLY.len() + 1;
    (expected, pages)
}

/// Site B: no robots.txt (404), no sitemap, and a page four clicks deep.
fn site_without_robots_or_sitemap(site: &Fixture) -> BTreeSet<Identity> {
    site.set_page("/", &Page::new("b home").link("/b1"));
    site.set_page("/b1", &Page::new("b one").link("/b2"));
    site.set_page("/b2", &Page::new("b two").link("/b3"));
    site.set_page("/b3", &Page::new("b three").link("/b4"));
    site.set_page("/b4", &Page::new("b four"));
    [
        identity(&checks::ROBOTS_MISSING, "robots.txt"),
        identity(&checks::SITEMAP_MISSING, "sitemap"),
        identity(&checks::PAGE_TOO_DEEP, &site.url("/b4")),
    ]
    .into_iter()
    .collect()
}

/// Site C: robots.txt disallows everything; an (empty) sitemap exists.
fn site_blocking_its_start(site: &Fixture) -> BTreeSet<Identity> {
    site.set_robots("User-agent: *\nDisallow: /\n");
    site.set_sitemap(&[]);
    site.set_page("/", &Page::new("c home"));
    [identity(&checks::START_BLOCKED, &site.start_url())]
        .into_iter()
        .collect()
}

/// Site D: robots.txt answers 503; an (empty) sitemap exists.
fn site_with_failing_robots(site: &Fixture) -> BTreeSet<Identity> {
    site.set("/robots.txt", Resource::status(503));
    site.set_sitemap(&[]);
    site.set_page("/", &Page::new("d home"));
    // robots.txt could not be read: that, and only that, is the finding. The start page is
    // not "blocked by robots.txt" (no robots.txt said so); the crawler rightly fetches no page
    // (Google's reading of a 5xx), but `start_blocked_by_robots` would repeat the same cause
    // as a critical finding whose evidence ("robots.txt disallows ...") and fix ("allow the
    // start page in robots.txt") are wrong.
    [identity(&checks::ROBOTS_UNREACHABLE, "robots.txt")]
        .into_iter()
        .collect()
}

async fn every_check_of_the_catalogue(store: Arc<dyn TestStore>) {
    let (app, workers) = crawling_app(store);
    let owner = organization(&app).await;
    let (main, b, c, d, other) = tokio::join!(
        Fixture::start(),
        Fixture::start(),
        Fixture::start(),
        Fixture::start(),
        Fixture::start()
    );
    let (main_expected, main_pages) = main_site(&main, &other);
    // Each site, its expected findings, and how many pages its scan fetches.
    let sites = [
        ("main site", &main, main_expected.clone(), main_pages),
        ("site B", &b, site_without_robots_or_sitemap(&b), 5),
        ("site C", &c, site_blocking_its_start(&c), 0),
        ("site D", &d, site_with_failing_robots(&d), 0),
    ];

    let mut properties = Vec::new();
    for (_, site, _, _) in &sites {
        let property = add_property(&app, &owner, &site.start_url()).await;
        let job = queue_scan(&app, &owner, &property, 200, 5).await;
        properties.push((property, job));
    }
    let mut results = Vec::new();
    for (_, job) in &properties {
        results.push(completed(&app, &owner, job).await);
    }

    let mut problems = Vec::new();
    let mut seen_checks = BTreeSet::new();
    for ((name, site, expected, pages), ((property, _), result)) in
        sites.iter().zip(properties.iter().zip(&results))
    {
        let issues = stored_issues(&app, property).await;
        seen_checks.extend(issues.iter().map(|i| i.issue_type.clone()));
        problems.extend(differences(name, &issues, expected));
        // Every request names the crawler, and robots.txt comes first.
        let hits = site.hits();
        if hits.first().map(|h| h.path.as_str()) != Some("/robots.txt") {
            problems.push(format!(
                "{name}: robots.txt was not the first request: {:?}",
                site.paths()
            ));
        }
        if let Some(hit) = hits.iter().find(|h| !h.user_agent.contains("xf-seo-bot")) {
            problems.push(format!(
                "{name}: a request without the crawler's user agent: {hit:?}"
            ));
        }
        // The scan's pages are kept, with their statuses, for Search Console's crawl
        // correlation.
        let property_id = <xf_core::ids::PropertyId as xf_core::ids::Id>::parse_str(property)
            .expect("a property id");
        let recorded = app.store.latest_scan_pages(&property_id).await.unwrap();
        let recorded_pages = recorded.as_ref().map_or(0, |r| r.pages.len());
        if recorded_pages != *pages
            || recorded
                .iter()
                .flat_map(|r| &r.pages)
                .any(|p| !p.url.starts_with(&site.url("")))
        {
            problems.push(format!(
                "{name}: {recorded_pages} scan pages recorded for {pages} fetched: {recorded:?}"
            ));
        }
        // The job's result: one count per finding, and the score of exactly the expected
        // findings.
        let issues_count = result["issuesCount"].as_u64();
        if issues_count != Some(issues.len() as u64) {
            problems.push(format!("{name}: {result} for {} issues", issues.len()));
        }
        let score = expected_score(expected, *pages);
        let wanted = json!({"score": score, "pagesScanned": pages, "issuesCount": expected.len(), "pagesRendered": 0});
        if *result != wanted {
            problems.push(format!(
                "{name}: the job's result is {result}, not {wanted}"
            ));
        }
    }
    // `problems` is asserted at the end, so that a difference in one site's findings does
    // not hide the checks below.

    // The main site in detail: its clean page has no issue, and what was (not) requested.
    let main_issues = stored_issues(&app, &properties[0].0).await;
    let clean = main.url("/clean");
    assert!(
        main_issues
            .iter()
            .all(|i| i.subject != clean && i.url.as_deref() != Some(clean.as_str())),
        "the clean page has issues: {main_issues:#?}"
    );
    let requested = main.paths();
    assert!(
        !requested.iter().any(|p| p.starts_with("/private/")),
        "a disallowed page was requested: {requested:?}"
    );
    // Redirects are followed hop by hop: /chain, /moved and /old each end at /target; the
    // loop is left as soon as it comes back to /loop-a.
    let count = |path: &str| requested.iter().filter(|p| *p == path).count();
    let twice: Vec<&String> = requested
        .iter()
        .filter(|p| *p != "/target" && count(p) > 1)
        .collect();
    assert!(twice.is_empty(), "requested more than once: {twice:?}");
    assert_eq!(
        [
            count("/target"),
            count("/chain-2"),
            count("/loop-a"),
            count("/loop-b")
        ],
        // Three redirects end at /target, and /target is then crawled as itself (its
        // content is checked there, not on the addresses that redirect to it).
        [4, 1, 1, 1],
        "{requested:?}"
    );
    // Sites C and D: no page was requested.
    for site in [&c, &d] {
        assert_eq!(site.paths(), ["/robots.txt", "/sitemap.xml"]);
    }
    // The other host: its sitemap read, each linked address checked once (HEAD, then GET
    // where HEAD answered an error), nothing crawled: no robots.txt, no page of its own.
    assert_eq!(
        other.requests(),
        [
            "GET /gone",
            "GET /head-refused",
            "GET /sitemap.xml",
            "HEAD /fine",
            "HEAD /gone",
            "HEAD /head-refused",
        ]
    );
    for result in &results {
        let score = result["score"].as_u64().expect("a score");
        assert!(score < 100, "every site has findings: {result}");
    }

    // Every check of the catalogue was found on one of the sites, except those only a
    // direct `analyse` test can trigger.
    let unseen: Vec<&str> = checks::CATALOGUE
        .iter()
        .map(|c| c.id)
        .filter(|id| !seen_checks.contains(*id) && !COVERED_ELSEWHERE.contains(id))
        .collect();
    assert!(
        unseen.is_empty(),
        "checks not found by any scan: {unseen:?}"
    );

    // The API shows the same issues, in its own shape.
    let data = api_issues(&app, &owner, &properties[0].0).await;
    let listed = data["issues"].as_array().expect("issues");
    assert_eq!(listed.len(), main_expected.len());
    assert_eq!(
        data["summary"],
        json!({"open": main_expected.len(), "resolved": 0, "fixed": 0, "total": main_expected.len()})
    );
    let api_pairs: BTreeSet<(String, Option<String>)> = listed
        .iter()
        .map(|i| {
            (
                i["type"].as_str().unwrap_or_default().to_owned(),
                i["url"].as_str().map(str::to_owned),
            )
        })
        .collect();
    let stored_pairs: BTreeSet<(String, Option<String>)> = main_issues
        .iter()
        .map(|i| (i.issue_type.clone(), i.url.clone()))
        .collect();
    assert_eq!(api_pairs, stored_pairs);
    let item = listed
        .iter()
        .find(|i| i["type"] == checks::SLOW_RESPONSE.id)
        .expect("the slow page's issue");
    xf_tests::assert_issue_item_shape(item);
    assert_eq!(item["title"], checks::SLOW_RESPONSE.title);
    assert_eq!(item["severity"], "medium");
    assert_eq!(item["scanKind"], "page");
    assert_eq!(item["url"], main.url("/slow"));
    assert!(
        item["evidence"]
            .as_str()
            .is_some_and(|e| e.ends_with(" ms")),
        "{item}"
    );
    assert_eq!(item["howToFix"], checks::SLOW_RESPONSE.fix);
    assert_eq!(item["status"], "open");
    assert_eq!(item["jobId"], properties[0].1.as_str());
    assert_eq!(item["createdAt"], xf_tests::start_time().to_string());
    assert_eq!(item["lastSeenAt"], item["createdAt"]);
    assert_eq!(item["resolvedAt"], Value::Null);
    assert_eq!(item["fixedAt"], Value::Null);
    let site_item = listed
        .iter()
        .find(|i| i["type"] == checks::SITEMAP_BLOCKED.id)
        .expect("the blocked sitemap entry's issue");
    assert_eq!(site_item["scanKind"], "site");
    assert_eq!(site_item["url"], Value::Null);
    assert!(site_item["evidence"]
        .as_str()
        .is_some_and(|e| e.contains(&main.url("/private/secret"))));

    workers.shutdown(Duration::from_secs(5)).await;
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_check_of_the_catalogue_on_memory() {
    every_check_of_the_catalogue(memory_store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_check_of_the_catalogue_on_postgres() {
    every_check_of_the_catalogue(postgres_store().await).await;
}

/// The record of `url` having answered 200 with `html`, without redirects, quickly.
fn page_record(url: &str, html: &str) -> PageRecord {
    PageRecord {
        url: url.to_owned(),
        final_url: url.to_owned(),
        status: Some(200),
        elapsed_ms: 20,
        body_bytes: html.len() as u64,
        facts: Some(html::scan(html.as_bytes())),
        ..PageRecord::default()
    }
}

/// `mixed_content` needs an https page, which the loopback fixture cannot serve to the real
/// fetcher (see the module documentation): `analyse` on a hand-built crawl instead.
#[test]
fn mixed_content_is_found_on_https_pages_only() {
    let mixed = Page::new("secure")
        .head("<link rel=\"stylesheet\" href=\"http://cdn.example/site.css\">")
        .image("http://cdn.example/photo.png", Some("A photo"))
        .image("/local.png", Some("A local image"))
        .canonical_at("/")
        .render();
    let secure = Page::new("secure")
        .head("<link rel=\"stylesheet\" href=\"https://cdn.example/site.css\">")
        .image("//cdn.example/photo.png", Some("A photo"))
        .image("/local.png", Some("A local image"))
        .canonical_at("/")
        .render();
    // A crawl of that one page, with robots.txt and a sitemap read.
    let crawl = |url: &str, html: &str| {
        let mut crawl = CrawlRecord::new(url);
        crawl.sitemaps.read = 1;
        crawl.add_page(page_record(url, html));
        crawl
    };

    let findings = analyse(&crawl("https://shop.example/", &mixed));
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0].check, &checks::MIXED_CONTENT);
    assert_eq!(findings[0].url.as_deref(), Some("https://shop.example/"));
    assert_eq!(findings[0].subject, "https://shop.example/");
    assert_eq!(
        findings[0].evidence,
        "loads http://cdn.example/site.css, http://cdn.example/photo.png"
    );
    // Everything over https (or protocol-relative, or relative): nothing to report.
    assert_eq!(analyse(&crawl("https://shop.example/", &secure)), []);
    // The same page over http is not mixed content: the whole page is insecure.
    assert_eq!(analyse(&crawl("http://shop.example/", &mixed)), []);
}

// ---------------------------------------------------------------------------------------------
// 2. Limits, robots, depth and host
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_crawl_keeps_to_robots_txt_its_budgets_and_its_host() {
    let (app, workers) = crawling_app(memory_store());
    let owner = organization(&app).await;
    let site = Fixture::start().await;
    let elsewhere = Fixture::serve(Ipv4Addr::new(127, 0, 0, 2).into(), None).await;
    let other_host = format!("http://127.0.0.2:{}", elsewhere.address.port());
    elsewhere.set_page("/", &Page::new("elsewhere"));

    site.set_robots(&format!(
        "User-agent: *\nDisallow: /private\n\nSitemap: {}\n",
        site.url("/sitemap.xml")
    ));
    site.set_sitemap(&["/", "/w1"]);
    site.set_page(
        "/",
        &Page::new("home").links(&[
            "/w1",
            "/w2",
            "/w3",
            "/private/a",
            "/private-b",
            "/d1",
            &format!("{other_host}/"),
            &format!("{other_host}/page"),
        ]),
    );
    for name in ["w1", "w2", "w3"] {
        site.set_page(&format!("/{name}"), &Page::new(name).link("/"));
    }
    for depth in 1..=5 {
        site.set_page(
            &format!("/d{depth}"),
            &Page::new(&format!("d{depth}")).link(&format!("/d{}", depth + 1)),
        );
    }
    site.set_page("/private/a", &Page::new("private a"));
    site.set_page("/private-b", &Page::new("private b"));
    let property = add_property(&app, &owner, &site.start_url()).await;

    // Depth 2: /d2 is fetched (two clicks), /d3 is not.
    let (_, result) = scan(&app, &owner, &property, 100, 2).await;
    let hits = site.hits();
    assert_eq!(hits[0].path, "/robots.txt", "{:?}", site.paths());
    for hit in &hits {
        assert!(hit.user_agent.contains("xf-seo-bot"), "{hit:?}");
    }
    let pages = site.page_paths();
    let fetched: BTreeSet<&str> = pages.iter().map(String::as_str).collect();
    assert_eq!(
        pages.len(),
        fetched.len(),
        "a page was fetched twice: {pages:?}"
    );
    assert_eq!(
        fetched,
        BTreeSet::from(["/", "/w1", "/w2", "/w3", "/d1", "/d2"]),
        "pages within depth 2, none disallowed"
    );
    assert_eq!(result["pagesScanned"], 6, "{result}");

    // A budget of 3 pages: the home page and its first two links, in link order (fetched at
    // once, so they arrive in either order).
    site.clear_log();
    let (_, result) = scan(&app, &owner, &property, 3, 5).await;
    assert_eq!(site.paths()[0], "/robots.txt");
    let pages = site.page_paths();
    assert_eq!(pages.len(), 3, "{pages:?}");
    assert_eq!(
        pages.iter().map(String::as_str).collect::<BTreeSet<_>>(),
        BTreeSet::from(["/", "/w1", "/w2"])
    );
    assert_eq!(result["pagesScanned"], 3, "{result}");

    // The other host's pages were checked as links in each scan (HEAD, and GET where HEAD
    // answered 404), never crawled.
    assert_eq!(
        elsewhere.requests(),
        [
            "GET /page",
            "GET /page",
            "HEAD /",
            "HEAD /",
            "HEAD /page",
            "HEAD /page"
        ],
    );
    workers.shutdown(Duration::from_secs(5)).await;
}

/// Another port of the start page's host is another site (another origin: RFC 9309 scopes
/// robots.txt to scheme, host and port), so links to it are not followed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_port_of_the_host_is_another_site() {
    let (app, workers) = crawling_app(memory_store());
    let owner = organization(&app).await;
    let site = Fixture::start().await;
    let other_port = Fixture::start().await;
    // Its own robots.txt forbids everything, which a crawler treating it as part of the
    // site would never even read.
    other_port.set_robots("User-agent: *\nDisallow: /\n");
    other_port.set_page("/", &Page::new("other port"));
    other_port.set_page("/admin", &Page::new("other port admin"));
    site.set_robots("User-agent: *\nAllow: /\n");
    site.set_sitemap(&["/"]);
    site.set_page(
        "/",
        &Page::new("home").links(&[&other_port.url("/"), &other_port.url("/admin")]),
    );
    let property = add_property(&app, &owner, &site.start_url()).await;

    let (_, result) = scan(&app, &owner, &property, 50, 3).await;
    // Its pages are checked as links, never crawled (not even its robots.txt is read).
    assert_eq!(
        other_port.requests(),
        ["HEAD /", "HEAD /admin"],
        "the crawl of {} requested from {}",
        site.start_url(),
        other_port.base()
    );
    assert_eq!(site.page_paths(), ["/"]);
    assert_eq!(result["pagesScanned"], 1, "{result}");
    workers.shutdown(Duration::from_secs(5)).await;
}

// ---------------------------------------------------------------------------------------------
// 3. Sites without end, redirect loops, slow pages
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_site_that_links_forever_ends_at_max_pages() {
    let (app, workers) = crawling_app(memory_store());
    let owner = organization(&app).await;
    set_crawl_limits(&app, &owner, 1_000, 100).await;
    // Page n links to n + 1 and n + 2, forever.
    let site = Fixture::generated(|path| {
        let n: u64 = match path {
            "/" => 0,
            _ => path.strip_prefix('/')?.parse().ok()?,
        };
        let page = Page::new(&format!("forever {n}"))
            .links(&[&format!("/{}", n + 1), &format!("/{}", n + 2)]);
        Some(Resource::page(&page))
    })
    .await;
    let property = add_property(&app, &owner, &site.start_url()).await;

    let (_, result) = scan(&app, &owner, &property, 30, 100).await;
    assert_eq!(result["pagesScanned"], 30, "{result}");
    // Breadth first: each level holds two new pages, so the first 30 are /0 to /29.
    let mut pages = site.page_paths();
    pages.sort_by_key(|p| p.trim_start_matches('/').parse::<u64>().unwrap_or(0));
    let expected: Vec<String> = std::iter::once("/".to_owned())
        .chain((1..30).map(|n| format!("/{n}")))
        .collect();
    assert_eq!(pages, expected);
    workers.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_loop_and_a_slow_page_do_not_stall_the_crawl() {
    let (app, workers) = crawling_app(memory_store());
    let owner = organization(&app).await;
    let site = Fixture::start().await;
    site.set_robots("User-agent: *\nAllow: /\n");
    site.set_sitemap(&["/"]);
    site.set_page(
        "/",
        &Page::new("home").links(&["/loop-a", "/slow", "/after"]),
    );
    site.set("/loop-a", Resource::redirect(301, "/loop-b"));
    site.set("/loop-b", Resource::redirect(302, "/loop-c"));
    site.set("/loop-c", Resource::redirect(307, "/loop-a"));
    site.set(
        "/slow",
        Resource::page(
            &Page::new("slow")
                .link("/after-slow")
                .canonical_at(&site.url("/slow")),
        )
        .delayed(Duration::from_millis(checks::limits::SLOW_MS + 150)),
    );
    site.set_page("/after", &Page::new("after").link("/after-2"));
    site.set_page("/after-2", &Page::new("after two"));
    site.set_page("/after-slow", &Page::new("after slow"));
    let property = add_property(&app, &owner, &site.start_url()).await;

    let began = Instant::now();
    let (_, result) = scan(&app, &owner, &property, 100, 5).await;
    assert!(
        began.elapsed() < Duration::from_secs(30),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(result["pagesScanned"], 6, "{result}");
    let mut pages = site.page_paths();
    pages.sort();
    assert_eq!(
        pages,
        [
            "/",
            "/after",
            "/after-2",
            "/after-slow",
            "/loop-a",
            "/loop-b",
            "/loop-c",
            "/slow"
        ],
        "each hop of the loop once, and the pages behind the slow one"
    );

    let issues = stored_issues(&app, &property).await;
    let loop_a = site.url("/loop-a");
    let expected: BTreeSet<Identity> = [
        identity(&checks::REDIRECT_LOOP, &loop_a),
        identity(&checks::BROKEN_LINK, &loop_a),
        identity(&checks::SLOW_RESPONSE, &site.url("/slow")),
    ]
    .into_iter()
    .collect();
    let problems = differences("loop site", &issues, &expected);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let looped = find(&issues, &checks::REDIRECT_LOOP, &loop_a);
    assert!(
        looped.evidence.contains(&site.url("/loop-c")),
        "{}",
        looped.evidence
    );
    workers.shutdown(Duration::from_secs(5)).await;
}

// ---------------------------------------------------------------------------------------------
// 4. The issue lifecycle over two scans
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_scan_resolves_opens_reopens_and_keeps_issues() {
    let (app, workers) = crawling_app(memory_store());
    let owner = organization(&app).await;
    let site = Fixture::start().await;
    // No sitemap at first.
    site.set_robots("User-agent: *\nAllow: /\n");
    site.set_page(
        "/",
        &Page::new("home").links(&["/a", "/b", "/c", "/d", "/far"]),
    );
    site.set_page("/a", &Page::new("a").words(40));
    site.set_page("/b", &Page::new("b").titles(&[]));
    site.set_page("/c", &Page::new("c").headings(&[(2, "No main heading")]));
    site.set_page("/d", &Page::new("d"));
    site.set_page("/far", &Page::new("far").image("/far.png", None));
    let property = add_property(&app, &owner, &site.start_url()).await;
    let url = |path: &str| site.url(path);

    let t1 = xf_tests::start_time();
    let (first_job, result) = scan(&app, &owner, &property, 50, 5).await;
    assert_eq!(result["pagesScanned"], 6, "{result}");
    assert_eq!(result["issuesCount"], 5, "{result}");
    let first = stored_issues(&app, &property).await;
    let expected: BTreeSet<Identity> = [
        identity(&checks::THIN_CONTENT, &url("/a")),
        identity(&checks::TITLE_MISSING, &url("/b")),
        identity(&checks::H1_MISSING, &url("/c")),
        identity(&checks::IMAGE_ALT_MISSING, &url("/far")),
        identity(&checks::SITEMAP_MISSING, "sitemap"),
    ]
    .into_iter()
    .collect();
    let problems = differences("first scan", &first, &expected);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(first
        .iter()
        .all(|i| i.status == IssueStatus::Open && i.created_at == t1 && i.last_seen_at == t1));

    // The host marks the missing h1 fixed (it is not).
    app.clock.advance(chrono::Duration::minutes(1));
    let h1 = find(&first, &checks::H1_MISSING, &url("/c")).clone();
    let fixed = app
        .admin(Method::POST, &format!("/issues/{}/fixed", h1.id), None)
        .await;
    assert_eq!(fixed.expect(200)["issue"]["status"], "fixed");
    let data = api_issues(&app, &owner, &property).await;
    assert_eq!(
        data["summary"],
        json!({"open": 4, "resolved": 0, "fixed": 1, "total": 5})
    );

    // The site changes: /a gets its text, /d loses its viewport, a sitemap appears, and /far
    // is no longer linked nor listed (the next scan does not reach it).
    site.set_page("/a", &Page::new("a"));
    site.set_page("/d", &Page::new("d").no_viewport());
    site.set_sitemap(&["/", "/a", "/b", "/c", "/d"]);
    site.set_page("/", &Page::new("home").links(&["/a", "/b", "/c", "/d"]));
    app.clock.advance(chrono::Duration::minutes(5));
    let t2 = t1.plus(chrono::Duration::minutes(6));
    site.clear_log();

    let (second_job, result) = scan(&app, &owner, &property, 50, 5).await;
    assert_eq!(result["pagesScanned"], 5, "{result}");
    assert_eq!(result["issuesCount"], 3, "{result}");
    assert!(!site.paths().contains(&"/far".to_owned()));
    let second = stored_issues(&app, &property).await;
    assert_eq!(second.len(), 6, "{second:#?}");
    let same = |before: &Issue| -> Issue {
        second
            .iter()
            .find(|i| i.id == before.id)
            .unwrap_or_else(|| panic!("{} is gone", before.id))
            .clone()
    };

    // A fixed problem: resolved when the second scan no longer found it.
    let thin_before = find(&first, &checks::THIN_CONTENT, &url("/a"));
    let thin = same(thin_before);
    assert_eq!(thin.status, IssueStatus::Resolved);
    assert_eq!(thin.resolved_at, Some(t2));
    assert_eq!((thin.created_at, thin.last_seen_at), (t1, t1));
    assert_eq!(thin.job_id.as_str(), first_job);
    // A site issue about no address is always reached: resolved too.
    let no_sitemap = same(find(&first, &checks::SITEMAP_MISSING, "sitemap"));
    assert_eq!(no_sitemap.status, IssueStatus::Resolved);
    assert_eq!(no_sitemap.resolved_at, Some(t2));

    // A new problem: a new open issue.
    let viewport = find(&second, &checks::VIEWPORT_MISSING, &url("/d"));
    assert!(first.iter().all(|i| i.id != viewport.id));
    assert_eq!(viewport.status, IssueStatus::Open);
    assert_eq!((viewport.created_at, viewport.last_seen_at), (t2, t2));
    assert_eq!(viewport.job_id.as_str(), second_job);

    // A problem still there: the same issue, seen again.
    let title = same(find(&first, &checks::TITLE_MISSING, &url("/b")));
    assert_eq!(title.status, IssueStatus::Open);
    assert_eq!((title.created_at, title.last_seen_at), (t1, t2));
    assert_eq!(title.job_id.as_str(), second_job);
    assert_eq!((title.resolved_at, title.fixed_at), (None, None));

    // Marked fixed by the host, found again: open again.
    let reopened = same(&h1);
    assert_eq!(reopened.status, IssueStatus::Open);
    assert_eq!((reopened.fixed_at, reopened.resolved_at), (None, None));
    assert_eq!((reopened.created_at, reopened.last_seen_at), (t1, t2));

    // On a page the second scan did not reach: exactly as it was.
    let far_before = find(&first, &checks::IMAGE_ALT_MISSING, &url("/far"));
    assert_eq!(&same(far_before), far_before);

    // The API's view of it.
    let data = api_issues(&app, &owner, &property).await;
    assert_eq!(
        data["summary"],
        json!({"open": 4, "resolved": 2, "fixed": 0, "total": 6})
    );
    let listed: BTreeMap<String, Value> = data["issues"]
        .as_array()
        .expect("issues")
        .iter()
        .map(|i| (i["id"].as_str().unwrap_or_default().to_owned(), i.clone()))
        .collect();
    assert_eq!(listed.len(), 6);
    let view = |id: &IssueId| listed[id.as_str()].clone();
    let thin_view = view(&thin.id);
    assert_eq!(thin_view["status"], "resolved");
    assert_eq!(thin_view["resolvedAt"], t2.to_string());
    let reopened_view = view(&reopened.id);
    assert_eq!(reopened_view["status"], "open");
    assert_eq!(reopened_view["fixedAt"], Value::Null);
    assert_eq!(reopened_view["lastSeenAt"], t2.to_string());
    let viewport_view = view(&viewport.id);
    assert_eq!(viewport_view["createdAt"], t2.to_string());
    let far_view = view(&far_before.id);
    assert_eq!(far_view["status"], "open");
    assert_eq!(far_view["lastSeenAt"], t1.to_string());
    assert_eq!(far_view["jobId"], first_job.as_str());

    // The history names both scans, newest first, with what each changed.
    let history = app
        .get(&format!("/properties/{property}/scans"), &owner.key)
        .await;
    let scans = history.expect(200)["scans"]
        .as_array()
        .expect("scans")
        .clone();
    let summary = |scan: &Value| {
        json!({
            "jobId": scan["jobId"], "status": scan["status"], "score": scan["score"].is_u64(),
            "pagesScanned": scan["pagesScanned"], "issuesCount": scan["issuesCount"],
            "changes": scan["changes"], "completedAt": scan["completedAt"],
        })
    };
    assert_eq!(
        scans.iter().map(summary).collect::<Vec<_>>(),
        vec![
            json!({"jobId": second_job, "status": "completed", "score": true,
                   "pagesScanned": 5, "issuesCount": 3, "completedAt": t2.to_string(),
                   "changes": {"opened": 1, "resolved": 2, "reopened": 1}}),
            json!({"jobId": first_job, "status": "completed", "score": true,
                   "pagesScanned": 6, "issuesCount": 5, "completedAt": t1.to_string(),
                   "changes": {"opened": 5, "resolved": 0, "reopened": 0}}),
        ]
    );
    // Findings by severity add up to the scan's count.
    for scan in &scans {
        let by_severity = scan["bySeverity"].as_object().expect("bySeverity");
        let total: u64 = by_severity.values().filter_map(Value::as_u64).sum();
        assert_eq!(Some(total), scan["issuesCount"].as_u64(), "{scan}");
    }

    // The comparison of the two scans follows the lifecycle above, issue by issue.
    let (app_ref, key) = (&app, owner.key.as_str());
    let changes_of = |job: &str, query: &str| {
        let path = format!("/properties/{property}/scans/{job}/changes{query}");
        async move { app_ref.get(&path, key).await }
    };
    let comparison = changes_of(&second_job, "").await.expect(200).clone();
    assert_eq!(comparison["scan"]["jobId"], second_job.as_str());
    assert_eq!(comparison["against"]["jobId"], first_job.as_str());
    assert_eq!(
        comparison["totals"],
        json!({"opened": 1, "resolved": 2, "reopened": 1})
    );
    let changed: BTreeMap<String, String> = comparison["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            (
                c["issue"]["id"].as_str().unwrap_or_default().to_owned(),
                c["change"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let expected_changes: BTreeMap<String, String> = [
        (&viewport.id, "opened"),
        (&thin.id, "resolved"),
        (&no_sitemap.id, "resolved"),
        (&reopened.id, "reopened"),
    ]
    .into_iter()
    .map(|(id, change)| (id.to_string(), change.to_owned()))
    .collect();
    assert_eq!(changed, expected_changes);
    let delta = |check: &Check| {
        comparison["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .find(|c| c["type"] == check.id)
            .cloned()
            .unwrap_or_else(|| panic!("no delta for {}", check.id))
    };
    let row = |before: u64, after: u64, opened: u64, resolved: u64, reopened: u64| {
        json!({"before": before, "after": after, "delta": after as i64 - before as i64,
               "opened": opened, "resolved": resolved, "reopened": reopened})
    };
    for (check, expected) in [
        (&checks::THIN_CONTENT, row(1, 0, 0, 1, 0)),
        (&checks::TITLE_MISSING, row(1, 1, 0, 0, 0)),
        (&checks::H1_MISSING, row(1, 1, 0, 0, 1)),
        (&checks::VIEWPORT_MISSING, row(0, 1, 1, 0, 0)),
        (&checks::SITEMAP_MISSING, row(1, 0, 0, 1, 0)),
        // Not reached by the second scan: no finding, and no change either.
        (&checks::IMAGE_ALT_MISSING, row(1, 0, 0, 0, 0)),
    ] {
        let mut got = delta(check);
        got.as_object_mut().expect("delta").remove("type");
        assert_eq!(got, expected, "{}", check.id);
    }
    // The same comparison, asked for explicitly, a page of two at a time.
    let page_one = changes_of(&second_job, &format!("?against={first_job}&limit=2")).await;
    assert_eq!(page_one.body["meta"]["hasMore"], true);
    let cursor = page_one.body["meta"]["nextCursor"]
        .as_str()
        .expect("cursor")
        .to_owned();
    let page_two = changes_of(
        &second_job,
        &format!("?against={first_job}&limit=2&cursor={cursor}"),
    )
    .await;
    assert_eq!(page_two.body["meta"]["hasMore"], false);
    let paged: BTreeMap<String, String> = [&page_one, &page_two]
        .iter()
        .flat_map(|reply| {
            reply.expect(200)["changes"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|c| {
            (
                c["issue"]["id"].as_str().unwrap_or_default().to_owned(),
                c["change"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(paged, expected_changes);
    assert_eq!(page_two.expect(200)["totals"], comparison["totals"]);
    // A cursor is bound to its comparison.
    changes_of(&second_job, &format!("?cursor={cursor}&limit=2"))
        .await
        .expect(200);
    changes_of(&first_job, &format!("?cursor={cursor}"))
        .await
        .expect_error(400, "validation_error");
    // The first scan compares with nothing: everything it found opened.
    let first_comparison = changes_of(&first_job, "").await.expect(200).clone();
    assert_eq!(first_comparison["against"], Value::Null);
    assert_eq!(
        first_comparison["totals"],
        json!({"opened": 5, "resolved": 0, "reopened": 0})
    );
    // `against` must be an earlier completed scan of the property.
    changes_of(&first_job, &format!("?against={second_job}"))
        .await
        .expect_error(400, "validation_error");
    changes_of(&second_job, &format!("?against={second_job}"))
        .await
        .expect_error(400, "validation_error");
    changes_of(&second_job, "?against=job_nope")
        .await
        .expect_error(400, "validation_error");
    changes_of("job_nope", "")
        .await
        .expect_error(404, "not_found");
    workers.shutdown(Duration::from_secs(5)).await;
}

/// A group of duplicate pages is named by its first address, in address order, so that its
/// issue stays the same when the crawl meets the copies in another order (checks.rs: "The
/// first copy (in address order) names the group, stable across scans").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_content_keeps_its_issue_when_the_crawl_order_changes() {
    let (app, workers) = crawling_app(memory_store());
    let owner = organization(&app).await;
    let site = Fixture::start().await;
    site.set_robots("User-agent: *\nAllow: /\n");
    site.set_sitemap(&["/"]);
    site.set_page("/copy-a", &Page::new("copy"));
    site.set_page("/copy-b", &Page::new("copy"));
    // First /copy-b one click from home and /copy-a two; then the other way round.
    site.set_page("/", &Page::new("home").links(&["/copy-b", "/hub"]));
    site.set_page("/hub", &Page::new("hub").link("/copy-a"));
    let property = add_property(&app, &owner, &site.start_url()).await;
    scan(&app, &owner, &property, 50, 5).await;
    site.set_page("/", &Page::new("home").links(&["/copy-a", "/hub"]));
    site.set_page("/hub", &Page::new("hub").link("/copy-b"));
    app.clock.advance(chrono::Duration::minutes(5));
    scan(&app, &owner, &property, 50, 5).await;

    let issues = stored_issues(&app, &property).await;
    let duplicates: Vec<(&str, IssueStatus)> = issues
        .iter()
        .filter(|i| i.issue_type == checks::DUPLICATE_CONTENT.id)
        .map(|i| (i.subject.as_str(), i.status))
        .collect();
    let named = format!("content: {}", site.url("/copy-a"));
    assert_eq!(
        duplicates,
        [(named.as_str(), IssueStatus::Open)],
        "one issue for the one group of copies, named by /copy-a, open in both scans"
    );
    workers.shutdown(Duration::from_secs(5)).await;
}

/// `PageRecord::depth`: a page only a sitemap led to has no click depth (0): no click reaches
/// it, so it is an orphan, not a deep page, however deep the rest of the site goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitemap_only_pages_are_orphans_not_deep_pages() {
    let (app, workers) = crawling_app(memory_store());
    let owner = organization(&app).await;
    let site = Fixture::start().await;
    site.set_robots("User-agent: *\nAllow: /\n");
    site.set_sitemap(&["/", "/orphan"]);
    site.set_page("/", &Page::new("home").link("/l1"));
    site.set_page("/l1", &Page::new("l1").link("/l2"));
    site.set_page("/l2", &Page::new("l2").link("/l3"));
    site.set_page("/l3", &Page::new("l3").link("/l4"));
    site.set_page("/l4", &Page::new("l4"));
    site.set_page("/orphan", &Page::new("orphan"));
    let property = add_property(&app, &owner, &site.start_url()).await;
    scan(&app, &owner, &property, 50, 5).await;

    let issues = stored_issues(&app, &property).await;
    let expected: BTreeSet<Identity> = [
        identity(&checks::PAGE_TOO_DEEP, &site.url("/l4")),
        identity(&checks::ORPHAN_PAGE, &site.url("/orphan")),
    ]
    .into_iter()
    .collect();
    let problems = differences("deep site", &issues, &expected);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    workers.shutdown(Duration::from_secs(5)).await;
}

// ---------------------------------------------------------------------------------------------
// 5. SSRF
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_of_a_private_address_fails_without_a_request_unless_allowed() {
    let site = Fixture::start().await;
    site.set_robots("User-agent: *\nAllow: /\n");
    site.set_sitemap(&["/"]);
    site.set_page("/", &Page::new("home"));

    // The default builder: private targets are refused.
    let app = TestApp::over(memory_store());
    let workers = app.xf.spawn_workers(WorkerOptions::new());
    let owner = organization(&app).await;
    let property = add_property(&app, &owner, &site.start_url()).await;
    let id = queue_scan(&app, &owner, &property, 10, 2).await;
    let job = ended(&app, &owner, &id).await;
    assert_eq!(job["status"], "failed", "{job}");
    let error = job["error"].as_str().expect("an error");
    assert!(
        error.contains("localhost") && error.contains("private or reserved address"),
        "{error}"
    );
    assert_eq!(job["result"], Value::Null, "{job}");
    assert!(site.hits().is_empty(), "{:?}", site.paths());
    assert!(stored_issues(&app, &property).await.is_empty());
    workers.shutdown(Duration::from_secs(5)).await;

    // Allowed: the same scan completes.
    let (app, workers) = crawling_app(memory_store());
    let allowed = organization(&app).await;
    let property = add_property(&app, &allowed, &site.start_url()).await;
    let (_, result) = scan(&app, &allowed, &property, 10, 2).await;
    assert_eq!(
        result,
        json!({"score": 100, "pagesScanned": 1, "issuesCount": 0, "pagesRendered": 0})
    );
    assert_eq!(site.paths(), ["/robots.txt", "/sitemap.xml", "/"]);
    workers.shutdown(Duration::from_secs(5)).await;
}

// ---------------------------------------------------------------------------------------------
// 6. Cancelling a crawl
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_crawl_stops_its_requests_within_a_second() {
    let (app, workers) = crawling_app(memory_store());
    let owner = organization(&app).await;
    // Every page takes 300 ms and links to 20 more.
    let site = Fixture::generated(|path| {
        let n: u64 = match path {
            "/" => 0,
            _ => path.strip_prefix("/p/")?.parse().ok()?,
        };
        let links: Vec<String> = (1..=20).map(|k| format!("/p/{}", n * 20 + k)).collect();
        let links: Vec<&str> = links.iter().map(String::as_str).collect();
        let page = Page::new(&format!("slow {n}")).links(&links);
        Some(Resource::page(&page).delayed(Duration::from_millis(300)))
    })
    .await;
    let property = add_property(&app, &owner, &site.start_url()).await;
    let id = queue_scan(&app, &owner, &property, 200, 5).await;

    // Running, with some pages fetched and its progress recorded.
    let began = Instant::now();
    loop {
        let job = job(&app, &owner, &id).await;
        if job["progress"].as_u64().unwrap_or(0) > 0 && !site.page_paths().is_empty() {
            assert_eq!(job["status"], "processing", "{job}");
            break;
        }
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "the scan made no progress: {job}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let reply = app
        .send(xf_tests::request(
            Method::POST,
            &format!("/jobs/{id}/cancel"),
            Some(&owner.key),
            None,
            &[],
        ))
        .await;
    let cancelled_at = Instant::now();
    let cancelled = reply.expect(200)["job"].clone();
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let kept = cancelled["progress"].as_u64().expect("progress");
    assert!(kept > 0, "{cancelled}");

    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let last = site.hits().last().map(|hit| hit.at).expect("requests");
    assert!(
        last < cancelled_at + Duration::from_secs(1),
        "a request {:?} after the cancel",
        last.duration_since(cancelled_at)
    );
    let page_requests = site.page_paths().len();
    assert!(page_requests < 200, "{page_requests} pages requested");

    let after = job(&app, &owner, &id).await;
    assert_eq!(after["status"], "cancelled", "{after}");
    assert_eq!(after["progress"].as_u64(), Some(kept), "{after}");
    assert_eq!(after["result"], Value::Null, "{after}");
    assert!(stored_issues(&app, &property).await.is_empty());
    workers.shutdown(Duration::from_secs(5)).await;
}

// ---------------------------------------------------------------------------------------------
// 7. Real-world input: white space, failures, redirects of every kind, sitemaps as published,
//    URL-prefix properties
// ---------------------------------------------------------------------------------------------

/// A page whose text ends a run with a multi-byte white space (U+00A0, written as the raw
/// character) is scanned whole: one page audited, its real findings, and a second scan keeps
/// them open.
async fn a_page_with_non_breaking_spaces_is_scanned_whole(store: Arc<dyn TestStore>) {
    let (app, workers) = crawling_app(store);
    let owner = organization(&app).await;
    let site = Fixture::start().await;
    site.set("/", Resource::html("<p>Price: 100\u{a0}EUR</p>".to_owned()));
    let property = add_property(&app, &owner, &site.start_url()).await;
    let home = site.start_url();
    let expected: BTreeSet<Identity> = [
        identity(&checks::ROBOTS_MISSING, "robots.txt"),
        identity(&checks::SITEMAP_MISSING, "sitemap"),
        identity(&checks::TITLE_MISSING, &home),
        identity(&checks::DESCRIPTION_MISSING, &home),
        identity(&checks::H1_MISSING, &home),
        identity(&checks::THIN_CONTENT, &home),
        identity(&checks::LANG_MISSING, &home),
        identity(&checks::VIEWPORT_MISSING, &home),
        identity(&checks::CANONICAL_MISSING, &home),
    ]
    .into_iter()
    .collect();

    for round in 1..=2 {
        let (_, result) = scan(&app, &owner, &property, 10, 2).await;
        let wanted = json!({
            "score": expected_score(&expected, 1),
            "pagesScanned": 1,
            "issuesCount": expected.len(),
            "pagesRendered": 0,
        });
        assert_eq!(result, wanted, "scan {round}");
        let issues = stored_issues(&app, &property).await;
        let problems = differences("the NBSP page", &issues, &expected);
        assert!(problems.is_empty(), "scan {round}: {}", problems.join("\n"));
        let data = api_issues(&app, &owner, &property).await;
        assert_eq!(
            data["summary"],
            json!({"open": expected.len(), "resolved": 0, "fixed": 0, "total": expected.len()}),
            "scan {round}"
        );
        app.clock.advance(chrono::Duration::minutes(5));
    }
    assert_eq!(site.page_paths(), ["/", "/"]);
    workers.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_with_non_breaking_spaces_is_scanned_whole_on_memory() {
    a_page_with_non_breaking_spaces_is_scanned_whole(memory_store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_with_non_breaking_spaces_is_scanned_whole_on_postgres() {
    a_page_with_non_breaking_spaces_is_scanned_whole(postgres_store().await).await;
}

/// The real HTTP fetcher, whose answers for `path` have a body that panics when read once
/// `armed`: a failure of the crawler's own code on one page.
#[derive(Debug)]
struct PanicsReading {
    inner: xf_core::crawl::fetch::HttpFetcher,
    path: &'static str,
    armed: std::sync::atomic::AtomicBool,
}

struct PanickingBody;

#[async_trait::async_trait]
impl xf_core::crawl::fetch::BodyStream for PanickingBody {
    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, xf_core::crawl::fetch::FetchError> {
        panic!("the test fetcher fails reading this body")
    }
}

#[async_trait::async_trait]
impl xf_core::crawl::fetch::PageFetcher for PanicsReading {
    async fn get(
        &self,
        url: &url::Url,
    ) -> Result<xf_core::crawl::fetch::Answer, xf_core::crawl::fetch::FetchError> {
        let mut answer = self.inner.get(url).await?;
        if url.path() == self.path && self.armed.load(std::sync::atomic::Ordering::SeqCst) {
            answer.body = Box::new(PanickingBody);
        }
        Ok(answer)
    }
}

/// A panic while reading one page costs that page, and only it: the scan completes, the page
/// is reported as not audited (and not counted in `pagesScanned`), its earlier issues keep
/// their state, and the page budget still holds exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawler_failure_on_one_page_is_reported_and_loses_nothing() {
    let fetcher = Arc::new(PanicsReading {
        inner: xf_core::crawl::fetch::HttpFetcher::new(
            "xf-seo-bot/test",
            Duration::from_secs(10),
            true,
        ),
        path: "/boom",
        armed: std::sync::atomic::AtomicBool::new(false),
    });
    let app = TestApp::configured(memory_store(), {
        let fetcher = Arc::clone(&fetcher);
        move |builder| builder.allow_private_targets(true).page_fetcher(fetcher)
    });
    let workers = app.xf.spawn_workers(WorkerOptions::new());
    let owner = organization(&app).await;
    let site = Fixture::start().await;
    site.set_robots("User-agent: *\nAllow: /\n");
    site.set_sitemap(&["/"]);
    site.set_page("/", &Page::new("home").links(&["/a", "/boom", "/b", "/c"]));
    site.set_page("/a", &Page::new("a"));
    site.set_page("/boom", &Page::new("boom").titles(&[]));
    site.set_page("/b", &Page::new("b"));
    site.set_page("/c", &Page::new("c"));
    let property = add_property(&app, &owner, &site.start_url()).await;
    let boom = site.url("/boom");

    // A budget of three pages: the home page, /a and /boom.
    let (_, result) = scan(&app, &owner, &property, 3, 3).await;
    assert_eq!(result["pagesScanned"], 3, "{result}");
    let before = find(
        &stored_issues(&app, &property).await,
        &checks::TITLE_MISSING,
        &boom,
    )
    .clone();

    fetcher
        .armed
        .store(true, std::sync::atomic::Ordering::SeqCst);
    site.clear_log();
    app.clock.advance(chrono::Duration::minutes(5));
    let (job, result) = scan(&app, &owner, &property, 3, 3).await;
    assert_eq!(result["pagesScanned"], 2, "{result}");
    let mut pages = site.page_paths();
    pages.sort();
    assert_eq!(
        pages,
        ["/", "/a", "/boom"],
        "exactly the budget, /boom included"
    );

    let issues = stored_issues(&app, &property).await;
    let failed = find(&issues, &checks::PAGE_NOT_AUDITED, &boom);
    assert_eq!(failed.status, IssueStatus::Open);
    assert_eq!(failed.job_id.as_str(), job);
    assert!(
        failed
            .evidence
            .contains("the test fetcher fails reading this body"),
        "{}",
        failed.evidence
    );
    // What was found on /boom before is not known to be gone: kept as it was.
    assert_eq!(find(&issues, &checks::TITLE_MISSING, &boom), &before);
    assert_eq!(result["issuesCount"], 1, "{result}");
    workers.shutdown(Duration::from_secs(5)).await;
}

/// A meta refresh (any delay, any case, `url=` quoted or not) and a `Refresh` header are
/// redirects: followed, part of chains and loops, counted by `internal_link_to_redirect`, and
/// the stub pages get no content findings. A refresh inside `<noscript>`, or one without an
/// address, is no redirect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meta_refreshes_and_refresh_headers_are_redirects() {
    let (app, workers) = crawling_app(memory_store());
    let owner = organization(&app).await;
    let site = Fixture::start().await;
    site.set_robots("User-agent: *\nAllow: /\n");
    site.set_sitemap(&["/"]);
    let stub = |content: &str| {
        Resource::html(format!(
            "<html><head><meta http-equiv=\"refresh\" content=\"{content}\"></head><body></body></html>"
        ))
    };
    site.set_page(
        "/",
        &Page::new("home").links(&[
            "/meta-stub",
            "/header-stub",
            "/slow-refresh",
            "/noscript-refresh",
            "/self-refresh",
            "/http-then-meta",
            "/m-loop-a",
        ]),
    );
    site.set("/meta-stub", stub("0; url=/target"));
    site.set(
        "/header-stub",
        Resource::status(200).header("refresh", "0;url=/target"),
    );
    site.set(
        "/slow-refresh",
        Resource::html(
            "<META HTTP-EQUIV=REFRESH CONTENT=\"5; URL='/target-2'\"><p>Moved.</p>".to_owned(),
        ),
    );
    site.set_page(
        "/noscript-refresh",
        &Page::new("noscript refresh")
            .head("<noscript><meta http-equiv=\"refresh\" content=\"0; url=/nojs\"></noscript>"),
    );
    site.set_page(
        "/self-refresh",
        &Page::new("self refresh").head("<meta http-equiv=\"refresh\" content=\"300\">"),
    );
    site.set("/http-then-meta", Resource::redirect(301, "/meta-stub"));
    site.set("/m-loop-a", stub("0;url=/m-loop-b"));
    site.set("/m-loop-b", stub("1, '/m-loop-a'"));
    site.set_page("/target", &Page::new("target"));
    site.set_page("/target-2", &Page::new("target two"));
    let property = add_property(&app, &owner, &site.start_url()).await;

    let (_, result) = scan(&app, &owner, &property, 50, 3).await;
    // The home page, its seven links, and the two targets crawled as themselves.
    assert_eq!(result["pagesScanned"], 10, "{result}");
    let issues = stored_issues(&app, &property).await;
    let url = |path: &str| site.url(path);
    let expected: BTreeSet<Identity> = [
        identity(&checks::LINKS_TO_REDIRECTS, &url("/")),
        identity(&checks::REDIRECT_CHAIN, &url("/http-then-meta")),
        identity(&checks::REDIRECT_LOOP, &url("/m-loop-a")),
        identity(&checks::BROKEN_LINK, &url("/m-loop-a")),
    ]
    .into_iter()
    .collect();
    let problems = differences("refresh site", &issues, &expected);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let chain = find(&issues, &checks::REDIRECT_CHAIN, &url("/http-then-meta"));
    assert!(
        chain.evidence.contains("301") && chain.evidence.contains("meta refresh"),
        "{}",
        chain.evidence
    );
    let linked = find(&issues, &checks::LINKS_TO_REDIRECTS, &url("/"));
    for stub in ["/meta-stub", "/header-stub", "/slow-refresh"] {
        assert!(linked.evidence.contains(&url(stub)), "{}", linked.evidence);
    }
    let requested = site.paths();
    assert!(!requested.contains(&"/nojs".to_owned()), "{requested:?}");
    for path in ["/target", "/target-2", "/m-loop-b"] {
        assert!(
            requested.contains(&path.to_owned()),
            "{path}: {requested:?}"
        );
    }
    workers.shutdown(Duration::from_secs(5)).await;
}

/// A text sitemap (one URL a line) named by robots.txt is read like an XML one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_sitemaps_are_read() {
    let (app, workers) = crawling_app(memory_store());
    let owner = organization(&app).await;
    let site = Fixture::start().await;
    site.set_robots(&format!(
        "User-agent: *\nAllow: /\nSitemap: {}\n",
        site.url("/sitemap.txt")
    ));
    site.set(
        "/sitemap.txt",
        Resource::text(&format!(
            "{}\r\n\r\n{}\n{}\n",
            site.url("/"),
            site.url("/linked"),
            site.url("/listed-only")
        )),
    );
    site.set_page("/", &Page::new("home").link("/linked"));
    site.set_page("/linked", &Page::new("linked"));
    site.set_page("/listed-only", &Page::new("listed only"));
    let property = add_property(&app, &owner, &site.start_url()).await;

    let (_, result) = scan(&app, &owner, &property, 50, 3).await;
    assert_eq!(result["pagesScanned"], 3, "{result}");
    let issues = stored_issues(&app, &property).await;
    let expected: BTreeSet<Identity> = [identity(&checks::ORPHAN_PAGE, &site.url("/listed-only"))]
        .into_iter()
        .collect();
    let problems = differences("text sitemap site", &issues, &expected);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_eq!(
        site.paths(),
        [
            "/robots.txt",
            "/sitemap.txt",
            "/",
            "/linked",
            "/listed-only"
        ]
    );
    workers.shutdown(Duration::from_secs(5)).await;
}

/// A property whose URL has a path is a URL-prefix property: the crawl starts there, fetches
/// only what is under the prefix (robots.txt and the sitemap aside), treats links out of it
/// as leaving the property without requesting them, and counts depth from the property's
/// URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_prefix_property_is_crawled_under_its_prefix_only() {
    let (app, workers) = crawling_app(memory_store());
    let owner = organization(&app).await;
    let site = Fixture::start().await;
    site.set_robots(&format!(
        "User-agent: *\nAllow: /\nSitemap: {}\n",
        site.url("/sitemap.xml")
    ));
    site.set_sitemap(&["/book/", "/book/ch3", "/blog/post"]);
    site.set_page(
        "/book/",
        &Page::new("book").links(&["/book/ch1", "/book/ch2", "/book/moved", "/other", "/blog/"]),
    );
    site.set_page(
        "/book/ch1",
        &Page::new("chapter one").link("/book/ch1/deep"),
    );
    site.set_page("/book/ch1/deep", &Page::new("deep"));
    site.set_page("/book/ch2", &Page::new("chapter two").link("/"));
    site.set_page("/book/ch3", &Page::new("chapter three"));
    site.set("/book/moved", Resource::redirect(301, "/elsewhere/"));
    for path in ["/", "/other", "/blog/", "/blog/post", "/elsewhere/"] {
        site.set_page(path, &Page::new(path));
    }
    let property = add_property(&app, &owner, &site.url("/book/")).await;

    let (_, result) = scan(&app, &owner, &property, 100, 5).await;
    assert_eq!(result["pagesScanned"], 6, "{result}");
    let mut pages = site.page_paths();
    pages.sort();
    assert_eq!(
        pages,
        [
            "/book/",
            "/book/ch1",
            "/book/ch1/deep",
            "/book/ch2",
            "/book/ch3",
            "/book/moved"
        ]
    );
    assert_eq!(site.paths()[..2], ["/robots.txt", "/sitemap.xml"]);
    let issues = stored_issues(&app, &property).await;
    let expected: BTreeSet<Identity> = [
        identity(&checks::ORPHAN_PAGE, &site.url("/book/ch3")),
        identity(&checks::LINKS_TO_REDIRECTS, &site.url("/book/")),
    ]
    .into_iter()
    .collect();
    let problems = differences("book", &issues, &expected);
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    // Depth counts from the property's URL: /book/ch1/deep is two clicks away.
    let (_, result) = scan(&app, &owner, &property, 100, 1).await;
    assert_eq!(result["pagesScanned"], 5, "{result}");
    workers.shutdown(Duration::from_secs(5)).await;
}

/// What a scan did not read through keeps its issues: a sitemap page the budget left
/// unfetched; what it did check again resolves: an external link that answers again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issues_resolve_only_where_the_scan_looked_again() {
    let (app, workers) = crawling_app(memory_store());
    let owner = organization(&app).await;
    let site = Fixture::start().await;
    let other = Fixture::start().await;
    site.set_robots("User-agent: *\nAllow: /\n");
    site.set_sitemap(&["/", "/listed"]);
    site.set_page("/", &Page::new("home").link(&other.url("/moving")));
    site.set_page("/listed", &Page::new("listed").titles(&[]));
    let property = add_property(&app, &owner, &site.start_url()).await;

    scan(&app, &owner, &property, 10, 2).await;
    let first = stored_issues(&app, &property).await;
    let untitled = find(&first, &checks::TITLE_MISSING, &site.url("/listed")).clone();
    let broken = find(&first, &checks::BROKEN_EXTERNAL_LINK, &other.url("/moving")).clone();

    // The link answers now; a budget of one page leaves /listed unfetched.
    other.set_page("/moving", &Page::new("moving"));
    app.clock.advance(chrono::Duration::minutes(5));
    let (_, result) = scan(&app, &owner, &property, 1, 2).await;
    assert_eq!(result["pagesScanned"], 1, "{result}");
    let listed = site.page_paths().iter().filter(|p| *p == "/listed").count();
    assert_eq!(listed, 1, "fetched by the first scan only");
    let second = stored_issues(&app, &property).await;
    assert_eq!(
        find(&second, &checks::TITLE_MISSING, &site.url("/listed")),
        &untitled
    );
    let checked = find(
        &second,
        &checks::BROKEN_EXTERNAL_LINK,
        &other.url("/moving"),
    );
    assert_eq!(checked.id, broken.id);
    assert_eq!(checked.status, IssueStatus::Resolved);
    workers.shutdown(Duration::from_secs(5)).await;
}

/// A site whose pages, robots.txt and sitemap carry raw NUL bytes (user-generated content
/// can put one anywhere): every NUL is read as U+FFFD, as HTML parsers read it, the scan
/// completes on both stores, and its findings are stored and readable, through the list and
/// the export, with no NUL left in them.
async fn a_site_with_nul_bytes_is_scanned_whole(store: Arc<dyn TestStore>) {
    let (app, workers) = crawling_app(store);
    let owner = organization(&app).await;
    let site = Fixture::start().await;
    site.set(
        "/robots.txt",
        Resource::text(&format!(
            "User-agent: *\nDisallow: /pri\0vate\nNot\0a rule\nSitemap: {}\n",
            site.url("/sitemap.xml")
        )),
    );
    site.set(
        "/sitemap.xml",
        Resource::sitemap(&[site.start_url(), site.url("/list\0ed")]),
    );
    site.set(
        "/",
        Resource::html(
            "<html><head><title>Ho\0me</title>\
             <meta name=\"description\" content=\"De\0scription\">\
             <link rel=\"canonical\" href=\"/can\0on\"></head>\
             <body><h1>He\0llo</h1><p>Wo\0rds</p>\
             <a href=\"javascript:\0void(0)\">script</a>\
             <a href=\"/pa\0ge\">a page</a></body></html>"
                .to_owned(),
        ),
    );
    let property = add_property(&app, &owner, &site.start_url()).await;
    let (_, result) = scan(&app, &owner, &property, 10, 2).await;
    assert!(result["issuesCount"].as_u64().unwrap() > 0, "{result}");

    let issues = stored_issues(&app, &property).await;
    for issue in &issues {
        for text in [&issue.title, &issue.evidence, &issue.subject] {
            assert!(!text.contains('\0'), "a NUL was stored: {issue:?}");
        }
        assert!(!issue.url.as_deref().unwrap_or("").contains('\0'));
    }
    let home = site.start_url();
    let title = find(&issues, &checks::TITLE_TOO_SHORT, &home);
    assert!(title.evidence.contains("Ho\u{FFFD}me"), "{title:?}");
    let robots = find(&issues, &checks::ROBOTS_INVALID, "robots.txt");
    assert!(robots.evidence.contains("Not\u{FFFD}a rule"), "{robots:?}");

    let data = api_issues(&app, &owner, &property).await;
    assert_eq!(
        data["summary"]["open"].as_u64(),
        Some(issues.len() as u64),
        "{data}"
    );
    let export = app
        .send_raw(xf_tests::request(
            Method::GET,
            &format!("/properties/{property}/issues.csv"),
            Some(&owner.key),
            None,
            &[],
        ))
        .await;
    assert_eq!(export.status(), 200);
    let export = http_body_util::BodyExt::collect(export.into_body())
        .await
        .expect("the export")
        .to_bytes();
    let export = String::from_utf8(export.to_vec()).expect("UTF-8");
    assert!(export.contains("Ho\u{FFFD}me"), "{export}");
    workers.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_site_with_nul_bytes_is_scanned_whole_on_memory() {
    a_site_with_nul_bytes_is_scanned_whole(memory_store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_site_with_nul_bytes_is_scanned_whole_on_postgres() {
    a_site_with_nul_bytes_is_scanned_whole(postgres_store().await).await;
}

/// A scan whose store fails under it (its issues table renamed away, so the findings cannot
/// be written: a failure of xf's own, not the site's) is tried again, fails once its attempts
/// are used up, and is not counted against `scansPerMonth`; the job says so in words a
/// customer can act on, never the database's text, which the log has at ERROR with the job's
/// id. Once the store is whole again a scan completes and is counted. (One runtime thread, so
/// the workers' log goes to this test's subscriber.)
#[tokio::test(flavor = "current_thread")]
async fn a_scan_failing_on_an_error_of_xfs_own_is_not_counted_and_says_so() {
    let captured = xf_tests::logs::Captured::default();
    let _log = tracing::subscriber::set_default(captured.subscriber(tracing::Level::ERROR));

    let database = xf_storage_postgres::testing::fresh_database().await;
    let pool = database.pool().clone();
    let app = TestApp::configured(Arc::new(database), allow_private);
    let options = WorkerOptions::new().retry_backoff(Duration::from_millis(1));
    let workers = app.xf.spawn_workers(options);
    let owner = organization(&app).await;
    let site = Fixture::start().await;
    site.set("/", Resource::page(&Page::new("Home")));
    let property = add_property(&app, &owner, &site.start_url()).await;
    let usage = || async {
        let reply = app.get("/usage", &owner.key).await;
        reply.expect(200)["usage"]["counters"]["scans"]
            .as_u64()
            .expect("a scan count")
    };

    sqlx::query("ALTER TABLE issues RENAME TO issues_away")
        .execute(&pool)
        .await
        .unwrap();
    let id = queue_scan(&app, &owner, &property, 10, 2).await;
    assert_eq!(usage().await, 1, "counted when queued");
    let began = Instant::now();
    let failed = loop {
        // The retries are due a moment after each attempt, on the test's clock.
        app.clock.advance(chrono::Duration::seconds(1));
        let job = job(&app, &owner, &id).await;
        if job["status"] == "failed" {
            break job;
        }
        assert!(began.elapsed() < Duration::from_secs(60), "{job}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        failed["error"],
        xf_core::runtime::INTERNAL_FAILURE,
        "{failed}"
    );
    assert_eq!(
        usage().await,
        0,
        "a scan that failed on xf's own error is given back"
    );
    let log = captured.text();
    let line = log
        .lines()
        .find(|line| line.contains("ERROR") && line.contains(&id))
        .unwrap_or_else(|| panic!("no ERROR line names the job: {log}"));
    assert!(line.contains("issues"), "the cause is in the log: {line}");

    sqlx::query("ALTER TABLE issues_away RENAME TO issues")
        .execute(&pool)
        .await
        .unwrap();
    scan(&app, &owner, &property, 10, 2).await;
    assert_eq!(usage().await, 1);
    workers.shutdown(Duration::from_secs(5)).await;
}
