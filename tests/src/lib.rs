//! Shared harness of the end-to-end tests: an [`xf_tower::XfService`] and admin service over a
//! store, a manual clock, and helpers that send requests through the service with `oneshot`
//! (no sockets) and decode the JSON envelope.

pub mod answers;
pub mod bench;
pub mod corpus;
pub mod google;
pub mod logs;
pub mod media;
pub mod oauth;
pub mod platforms;
pub mod proxy;
pub mod receiver;
pub mod server;

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::Value;
use tower::ServiceExt;
use xf_core::store::Store;
use xf_core::testing::TestStore;
use xf_core::time::{ManualClock, Timestamp};
use xf_core::{CreatedOrganization, NewOrganization, Xf};

/// The secret key of test apps: 32 bytes, the least the builder accepts.
pub const TEST_SECRET: &[u8; 32] = b"end-to-end test secret, 32 bytes";

/// The admin token of test apps.
pub const ADMIN_TOKEN: &str = "test-admin-token";

/// A service under test.
#[derive(Debug, Clone)]
pub struct TestApp {
    /// The facade (for seeding through use cases).
    pub xf: Xf,
    /// The store (for seeding records the API cannot create, and dumps).
    pub store: Arc<dyn TestStore>,
    /// The injected clock.
    pub clock: ManualClock,
    service: xf_tower::XfService,
    admin: xf_tower::AdminService,
    recorder: Option<Recorder>,
}

/// Which of xf's services answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Service {
    /// The developer and media APIs (`XfService`).
    Api,
    /// The admin API (`AdminService`).
    Admin,
}

/// An answer a recording test app got: what was asked and the decoded JSON body.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The service asked.
    pub service: Service,
    /// The request's method.
    pub method: Method,
    /// The request's path, without the query.
    pub path: String,
    /// The response's status.
    pub status: StatusCode,
    /// The response's `Content-Type`.
    pub content_type: Option<String>,
    /// The body as JSON (`Value::Null` when empty or not JSON).
    pub body: Value,
}

/// Where recording test apps put their answers ([`TestApp::recording`]).
pub type Recorder = Arc<std::sync::Mutex<Vec<Answer>>>;

/// A decoded response.
#[derive(Debug)]
pub struct Reply {
    /// Status.
    pub status: StatusCode,
    /// Headers.
    pub headers: HeaderMap,
    /// The body as JSON (`Value::Null` when empty or not JSON).
    pub body: Value,
}

impl Reply {
    /// What a create under a key that others race for got: the property's id for a `201`,
    /// `None` for the `409 idempotency_key_in_use` of a request that came while another held
    /// the key. Anything else fails the test.
    pub fn created_property_id(&self) -> Option<String> {
        match self.status.as_u16() {
            201 => Some(
                self.body["data"]["property"]["id"]
                    .as_str()
                    .expect("a created property's id")
                    .to_owned(),
            ),
            409 => {
                self.expect_error(409, "idempotency_key_in_use");
                None
            }
            other => panic!("unexpected {other}: {}", self.body),
        }
    }

    /// A header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// `error.code` of an error envelope.
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }

    /// Asserts the status and, for errors, that the body is the error envelope with `code`.
    #[track_caller]
    pub fn expect_error(&self, status: u16, code: &str) {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.body);
        assert_eq!(self.code(), code, "body: {}", self.body);
        assert!(self.body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
        assert!(
            self.body["meta"]["requestId"].as_str().is_some(),
            "body: {}",
            self.body
        );
    }

    /// Asserts the status of a success and returns `data`.
    #[track_caller]
    pub fn expect(&self, status: u16) -> &Value {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.body);
        assert!(
            self.body["meta"]["requestId"].as_str().is_some(),
            "body: {}",
            self.body
        );
        &self.body["data"]
    }
}

/// The start of the test clock: mid-month, mid-day, so windows are easy to reason about.
pub fn start_time() -> Timestamp {
    Timestamp::parse_rfc3339("2026-11-16T10:20:30.000Z").expect("valid time")
}

impl TestApp {
    /// A test app over `store`.
    pub fn over(store: Arc<dyn TestStore>) -> Self {
        Self::configured(store, |builder| builder)
    }

    /// A test app over `store` whose facade builder `configure` adjusts (a page fetcher,
    /// private targets for crawls of loopback sites, ...).
    pub fn configured(
        store: Arc<dyn TestStore>,
        configure: impl FnOnce(xf_core::XfBuilder) -> xf_core::XfBuilder,
    ) -> Self {
        let clock = ManualClock::new(start_time());
        let facade_store: Arc<dyn Store> = store.clone();
        // The clock comes before `configure`, which may wrap it (see the runtime tests).
        let builder = Xf::builder(facade_store)
            .public_base_url("https://app.example.test")
            .clock(Arc::new(clock.clone()));
        let xf = configure(builder)
            .secret_key(TEST_SECRET.to_vec())
            .status_page_url("https://status.example.test")
            .build()
            .expect("a complete configuration");
        Self {
            service: xf_tower::XfService::new(xf.clone()),
            admin: xf_tower::AdminService::new(xf.clone(), ADMIN_TOKEN),
            xf,
            store,
            clock,
            recorder: None,
        }
    }

    /// The same app, putting every answer of [`send`](Self::send) and
    /// [`send_admin`](Self::send_admin) (and so of the helpers over them) into `recorder`;
    /// apps made from it with [`reconfigured`](Self::reconfigured) record too.
    pub fn recording(mut self, recorder: &Recorder) -> Self {
        self.recorder = Some(recorder.clone());
        self
    }

    fn record(&self, service: Service, method: Method, path: String, reply: &Reply) {
        if let Some(recorder) = &self.recorder {
            let answer = Answer {
                service,
                method,
                path,
                status: reply.status,
                content_type: reply.header("content-type").map(str::to_owned),
                body: reply.body.clone(),
            };
            recorder
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(answer);
        }
    }

    /// A test app over this app's store (and a new clock at [`start_time`]), its facade
    /// builder adjusted by `configure`.
    pub fn reconfigured(
        self,
        configure: impl FnOnce(xf_core::XfBuilder) -> xf_core::XfBuilder,
    ) -> Self {
        let recorder = self.recorder.clone();
        let mut app = Self::configured(self.store, configure);
        app.recorder = recorder;
        app
    }

    /// A test app over a fresh in-memory store.
    pub async fn memory() -> Self {
        Self::over(Arc::new(xf_storage_memory::MemoryStore::new()))
    }

    /// A test app over a new, migrated PostgreSQL database (see
    /// `xf_storage_postgres::testing::fresh_database` for how the server is found).
    pub async fn postgres() -> Self {
        Self::over(Arc::new(
            xf_storage_postgres::testing::fresh_database().await,
        ))
    }

    /// Creates an organization on `plan` through the admin use case.
    pub async fn organization(&self, name: &str, plan: &str) -> CreatedOrganization {
        self.xf
            .admin()
            .create_organization(NewOrganization {
                name: name.to_owned(),
                plan: plan.to_owned(),
                shop_domain: None,
            })
            .await
            .expect("organization created")
    }

    /// Sends a request through the developer API service.
    pub async fn send(&self, request: Request<Full<Bytes>>) -> Reply {
        let (method, path) = (request.method().clone(), request.uri().path().to_owned());
        let response = self
            .service
            .clone()
            .oneshot(request)
            .await
            .unwrap_or_else(|never| match never {});
        let reply = decode(response).await;
        self.record(Service::Api, method, path, &reply);
        reply
    }

    /// Sends a request through `xf_tower::Mounts` over the same facade: its path with the
    /// API's `/api/v1` (the routes `Mounts` serves the API from carry it).
    pub async fn send_mounted(&self, request: Request<Full<Bytes>>) -> Reply {
        let response = xf_tower::Mounts::new(self.xf.clone())
            .oneshot(request)
            .await
            .unwrap_or_else(|never| match never {});
        decode(response).await
    }

    /// Sends a request and gives back the response as it is, its body unread (to read a
    /// streamed body frame by frame).
    pub async fn send_raw(&self, request: Request<Full<Bytes>>) -> http::Response<xf_tower::Body> {
        self.service
            .clone()
            .oneshot(request)
            .await
            .unwrap_or_else(|never| match never {})
    }

    /// Sends a request through the admin service.
    pub async fn send_admin(&self, request: Request<Full<Bytes>>) -> Reply {
        let (method, path) = (request.method().clone(), request.uri().path().to_owned());
        let response = self
            .admin
            .clone()
            .oneshot(request)
            .await
            .unwrap_or_else(|never| match never {});
        let reply = decode(response).await;
        self.record(Service::Admin, method, path, &reply);
        reply
    }

    /// `GET path` with `key`.
    pub async fn get(&self, path: &str, key: &str) -> Reply {
        self.send(request(Method::GET, path, Some(key), None, &[]))
            .await
    }

    /// `POST path` with `key` and a JSON body.
    pub async fn post(&self, path: &str, key: &str, body: Value) -> Reply {
        self.send(request(
            Method::POST,
            path,
            Some(key),
            Some(body.to_string()),
            &[],
        ))
        .await
    }

    /// An admin request with the admin token.
    pub async fn admin(&self, method: Method, path: &str, body: Option<Value>) -> Reply {
        self.send_admin(request(
            method,
            path,
            Some(ADMIN_TOKEN),
            body.map(|b| b.to_string()),
            &[],
        ))
        .await
    }

    /// A `growth` organization whose crawl limits are lifted to `max_pages` pages and 100
    /// levels, and its property `url`: returns the organization's live key and the
    /// property's id.
    pub async fn crawlable_property(&self, url: &str, max_pages: u32) -> (String, String) {
        let owner = self.organization("Crawled", "growth").await;
        let limits = serde_json::json!({"limits": {"maxPages": max_pages, "maxDepth": 100}});
        self.admin(
            Method::PATCH,
            &format!("/organizations/{}", owner.organization.id),
            Some(limits),
        )
        .await
        .expect(200);
        let created = self
            .post(
                "/properties",
                &owner.live_key,
                serde_json::json!({"url": url}),
            )
            .await;
        let property = created.expect(201)["property"]["id"]
            .as_str()
            .expect("a property id")
            .to_owned();
        (owner.live_key, property)
    }

    /// Queues a scan of `property` (`max_pages`, depth 100) and polls it until it ends, for
    /// up to `patience`; returns the job.
    pub async fn scan_to_end(
        &self,
        key: &str,
        property: &str,
        max_pages: u32,
        patience: std::time::Duration,
    ) -> Value {
        let every = std::time::Duration::from_millis(5);
        self.scan_to_end_polling(key, property, max_pages, patience, every)
            .await
    }

    /// [`TestApp::scan_to_end`], polling the job `every` so often (a benchmark polls often,
    /// so that the poll adds little to what it times).
    pub async fn scan_to_end_polling(
        &self,
        key: &str,
        property: &str,
        max_pages: u32,
        patience: std::time::Duration,
        every: std::time::Duration,
    ) -> Value {
        let queued = self
            .post(
                &format!("/properties/{property}/scans"),
                key,
                serde_json::json!({"maxPages": max_pages, "maxDepth": 100}),
            )
            .await;
        let id = queued.expect(202)["job"]["id"]
            .as_str()
            .expect("a job id")
            .to_owned();
        let began = std::time::Instant::now();
        loop {
            let job = self.get(&format!("/jobs/{id}"), key).await.expect(200)["job"].clone();
            if matches!(
                job["status"].as_str(),
                Some("completed" | "failed" | "cancelled")
            ) {
                return job;
            }
            assert!(
                began.elapsed() < patience,
                "the scan did not end within {patience:?}: {job}"
            );
            tokio::time::sleep(every).await;
        }
    }
}

/// Builds a request; `key` goes into `Authorization: Bearer`, `headers` are added as given.
pub fn request(
    method: Method,
    path: &str,
    key: Option<&str>,
    body: Option<String>,
    headers: &[(&str, &str)],
) -> Request<Full<Bytes>> {
    let mut builder = Request::builder().method(method).uri(path);
    if let Some(key) = key {
        builder = builder.header("authorization", format!("Bearer {key}"));
    }
    if body.is_some() {
        builder = builder.header("content-type", "application/json");
    }
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .expect("valid request")
}

async fn decode(response: http::Response<xf_tower::Body>) -> Reply {
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.expect("body").to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Reply {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}

/// The fields of an issue item, as the API serves them.
pub const ISSUE_ITEM_FIELDS: [&str; 15] = [
    "id",
    "propertyId",
    "jobId",
    "type",
    "title",
    "severity",
    "scanKind",
    "url",
    "evidence",
    "howToFix",
    "status",
    "createdAt",
    "lastSeenAt",
    "resolvedAt",
    "fixedAt",
];

/// Asserts that `item` is an issue item: exactly [`ISSUE_ITEM_FIELDS`].
#[track_caller]
pub fn assert_issue_item_shape(item: &Value) {
    let object = item.as_object().expect("an issue item is an object");
    let mut fields: Vec<&str> = object.keys().map(String::as_str).collect();
    fields.sort_unstable();
    let mut expected = ISSUE_ITEM_FIELDS.to_vec();
    expected.sort_unstable();
    assert_eq!(fields, expected, "{item}");
}

/// Checks values against the component schemas of an OpenAPI document (as JSON Schema 2020-12,
/// which OpenAPI 3.1's schemas are), so a test can hold what the API sends to what its
/// document says.
#[derive(Debug)]
pub struct Schemas {
    components: Value,
    webhooks: Value,
}

impl Schemas {
    /// The schemas of `document`.
    pub fn of(document: &Value) -> Self {
        Schemas {
            components: document["components"].clone(),
            webhooks: document["webhooks"].clone(),
        }
    }

    /// Panics unless `body` is valid against the schema the document's `webhooks` section
    /// names for the body of its event (`body.type`).
    #[track_caller]
    pub fn check_webhook(&self, body: &Value) {
        let event = body["type"].as_str().expect("a delivery names its event");
        let target = self.webhooks[event]["post"]["requestBody"]["content"]["application/json"]
            ["schema"]["$ref"]
            .as_str()
            .unwrap_or_else(|| panic!("the document's webhooks section has no {event}"));
        let name = target.rsplit('/').next().unwrap_or(target);
        self.check(name, body);
    }

    /// Whether `value` is valid against the component schema `name`.
    pub fn accepts(&self, name: &str, value: &Value) -> bool {
        self.problems(name, value).is_empty()
    }

    /// Panics, naming every problem, unless `value` is valid against the component schema
    /// `name`.
    #[track_caller]
    pub fn check(&self, name: &str, value: &Value) {
        let problems = self.problems(name, value);
        assert!(
            problems.is_empty(),
            "not a valid {name}: {problems:#?}\n{value:#}"
        );
    }

    /// What makes `value` invalid against the component schema `name`.
    #[track_caller]
    fn problems(&self, name: &str, value: &Value) -> Vec<String> {
        assert!(
            self.components["schemas"][name].is_object(),
            "the document has no schema {name}"
        );
        let root = serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$ref": format!("#/components/schemas/{name}"),
            "components": self.components,
        });
        let validator = jsonschema::validator_for(&root)
            .unwrap_or_else(|error| panic!("the schema {name} does not compile: {error}"));
        validator
            .iter_errors(value)
            .map(|error| format!("{} at {}", error, error.instance_path()))
            .collect()
    }
}
