//! The two baselines of the request-path comparison (`tests/benches/request_path.sh`): the
//! least a server can do to answer `GET /api/v1/properties/{id}` with a key.
//!
//! - `xf-baseline memory <listen> <id> <property-json>`: a bare axum handler that checks the
//!   `Authorization: Bearer xf_live_…` prefix and answers the same JSON as xf from a
//!   `HashMap`.
//! - `xf-baseline sqlx <listen> <database-url> <id>`: the same, reading the property with one
//!   `SELECT` by primary key through a sqlx pool of PostgreSQL connections (sqlx's default
//!   pool size, as xf's store has).
//!
//! - `xf-baseline contract <listen> <id> <property-json> <api-key>`: the least a server
//!   keeping the API's contract for that request can do, in one process, without a log line:
//!   the key looked up by its SHA-256 digest (no prefix test can tell a revoked or unknown
//!   key), the read counted exactly in the key's hourly window (a `429` with `Retry-After` past
//!   its limit), the remaining reads and writes in the two `X-Developer-Api-RateLimit-…`
//!   headers (writes: the smaller of the key's hourly and the organization's daily remainder),
//!   the `X-Request-Id` echoed or generated, in the header and in `meta.requestId`, and the
//!   property read only when the key's organization owns it. Limits as the script sets xf's:
//!   10^12 each.
//!
//! All answer `{"data": {...}, "meta": {"requestId": "req_…"}}` with a fresh time-ordered
//! request id, 401 without a key and 404 for another id, as xf does. They log nothing.
//!
//! `memory` and `sqlx` also take `POST /api/v1/properties` (`{"url": …}`, the write of the
//! comparison): a new property with a fresh id, kept in the map behind a mutex, or inserted
//! with one `INSERT … RETURNING`; `201 {"data": {"property": …}}`. No rate limit and no
//! idempotency: the least a server can do to create the row. `contract` answers the read
//! alone.
//!
//! Run with: `cargo run --release -p xf-tests --bin xf-baseline -- memory 127.0.0.1:9001
//! prop_… '{"id": …}'` (the script starts them itself).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Value};
use sqlx::postgres::PgPoolOptions;
use sqlx::{PgPool, Row};

/// The allocator xf-server uses, so that the comparison measures the request path alone.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Whether the request carries a live key (the prefix only: no lookup).
fn has_key(headers: &HeaderMap) -> bool {
    headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("Bearer xf_live_"))
}

/// An answer in xf's envelope, with a new request id.
fn answer(status: StatusCode, key: &str, value: Value) -> Response {
    answer_as(&xf_core::ids::new_unordered_id("req"), status, key, value)
}

/// An answer in xf's envelope: `{key: value, "meta": {"requestId": …}}`.
fn answer_as(request_id: &str, status: StatusCode, key: &str, value: Value) -> Response {
    let mut body = json!({"meta": {"requestId": request_id}});
    body[key] = value;
    (status, axum::Json(body)).into_response()
}

/// The envelope xf answers with.
fn envelope(data: Value) -> Response {
    answer(StatusCode::OK, "data", data)
}

/// A refusal in xf's envelope, with a new request id.
fn refused(status: StatusCode, code: &str) -> Response {
    refused_as(&xf_core::ids::new_unordered_id("req"), status, code)
}

/// A refusal in xf's envelope: `{"error": {"code": code, …}, "meta": {"requestId": …}}`.
fn refused_as(request_id: &str, status: StatusCode, code: &str) -> Response {
    answer_as(
        request_id,
        status,
        "error",
        json!({"code": code, "message": code}),
    )
}

async fn from_map(
    State(properties): State<Arc<HashMap<String, Value>>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !has_key(&headers) {
        return refused(StatusCode::UNAUTHORIZED, "api_key_invalid");
    }
    match properties.get(&id) {
        Some(property) => envelope(property.clone()),
        None => refused(StatusCode::NOT_FOUND, "not_found"),
    }
}

/// The id and `url` of a property to create, or the refusal: no key, or no `url` in the
/// body.
fn new_property(
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(String, String), (StatusCode, &'static str)> {
    if !has_key(headers) {
        return Err((StatusCode::UNAUTHORIZED, "api_key_invalid"));
    }
    let url = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|body| body["url"].as_str().map(str::to_owned))
        .ok_or((StatusCode::BAD_REQUEST, "validation_error"))?;
    Ok((xf_core::ids::new_id("prop"), url))
}

fn created(property: Value) -> Response {
    answer(StatusCode::CREATED, "data", json!({"property": property}))
}

fn now_text() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}

async fn create_in_map(
    State(properties): State<Arc<Mutex<HashMap<String, Value>>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (id, url) = match new_property(&headers, &body) {
        Ok(new) => new,
        Err((status, code)) => return refused(status, code),
    };
    let property =
        json!({"id": id, "name": url, "url": url, "verified": false, "createdAt": now_text()});
    properties
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(id, property.clone());
    created(property)
}

async fn create_in_database(
    State(pool): State<PgPool>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (id, url) = match new_property(&headers, &body) {
        Ok(new) => new,
        Err((status, code)) => return refused(status, code),
    };
    let inserted = sqlx::query(
        "INSERT INTO properties (id, organization_id, name, url, verified, created_at) \
         VALUES ($1, 'org_baseline', $2, $2, false, now()) RETURNING created_at",
    )
    .bind(&id)
    .bind(&url)
    .fetch_one(&pool)
    .await;
    match inserted {
        Ok(row) => {
            let created_at: DateTime<Utc> = row.get("created_at");
            created(json!({
                "id": id, "name": url, "url": url, "verified": false,
                "createdAt": created_at.to_rfc3339_opts(SecondsFormat::Millis, true),
            }))
        }
        Err(_) => refused(StatusCode::CONFLICT, "conflict"),
    }
}

async fn from_database(
    State(pool): State<PgPool>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !has_key(&headers) {
        return refused(StatusCode::UNAUTHORIZED, "api_key_invalid");
    }
    let row =
        sqlx::query("SELECT id, name, url, verified, created_at FROM properties WHERE id = $1")
            .bind(&id)
            .fetch_optional(&pool)
            .await;
    match row {
        Ok(Some(row)) => {
            let created_at: DateTime<Utc> = row.get("created_at");
            envelope(json!({
                "id": row.get::<String, _>("id"),
                "name": row.get::<String, _>("name"),
                "url": row.get::<String, _>("url"),
                "verified": row.get::<bool, _>("verified"),
                "createdAt": created_at.to_rfc3339_opts(SecondsFormat::Millis, true),
            }))
        }
        Ok(None) => refused(StatusCode::NOT_FOUND, "not_found"),
        Err(_) => refused(StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
    }
}

/// The `contract` baseline: a read that keeps the API's contract, at the least it costs.
mod contract {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    use std::time::{SystemTime, UNIX_EPOCH};

    use axum::extract::{Path, State};
    use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
    use axum::response::Response;
    use serde_json::Value;
    use sha2::{Digest, Sha256};

    use super::{answer_as, refused_as};

    const HOUR: u64 = 3_600;
    const DAY: u64 = 86_400;
    /// The limits the script gives xf's demo organization.
    const LIMIT: u64 = 1_000_000_000_000;

    /// A fixed window's count.
    #[derive(Default)]
    struct Window {
        /// Its start, in seconds since the epoch.
        start: u64,
        count: u64,
    }

    impl Window {
        /// The count of the window of `length` seconds that holds `now`, started anew when
        /// `now` has left the one counted so far.
        fn at(&mut self, now: u64, length: u64) -> &mut u64 {
            let start = now - now % length;
            if self.start != start {
                *self = Window { start, count: 0 };
            }
            &mut self.count
        }
    }

    struct Key {
        organization: String,
        read_per_hour: u64,
        write_per_hour: u64,
        /// The key's hourly read and write windows, locked before its organization's.
        windows: Mutex<(Window, Window)>,
    }

    struct Organization {
        write_daily: u64,
        writes: Mutex<Window>,
    }

    pub struct Api {
        /// Keys by the SHA-256 digest of their secret.
        keys: HashMap<[u8; 32], Key>,
        organizations: HashMap<String, Organization>,
        /// Properties by id, with the id of the organization that owns them.
        properties: HashMap<String, (String, Value)>,
    }

    impl Api {
        /// One organization, with the key `secret` and the property `id`.
        pub fn new(secret: &str, id: String, property: Value) -> Arc<Api> {
            let organization = "org_baseline".to_owned();
            let key = Key {
                organization: organization.clone(),
                read_per_hour: LIMIT,
                write_per_hour: LIMIT,
                windows: Mutex::default(),
            };
            let limits = Organization {
                write_daily: LIMIT,
                writes: Mutex::default(),
            };
            Arc::new(Api {
                keys: HashMap::from([(Sha256::digest(secret.as_bytes()).into(), key)]),
                properties: HashMap::from([(id, (organization.clone(), property))]),
                organizations: HashMap::from([(organization, limits)]),
            })
        }
    }

    /// The request's `X-Request-Id` when it is one (1 to 128 visible ASCII characters), or a
    /// new one.
    fn request_id(headers: &HeaderMap) -> HeaderValue {
        let visible = |id: &&HeaderValue| {
            (1..=128).contains(&id.len()) && id.as_bytes().iter().all(u8::is_ascii_graphic)
        };
        match headers.get("x-request-id").filter(visible) {
            Some(id) => id.clone(),
            None => HeaderValue::try_from(xf_core::ids::new_unordered_id("req"))
                .expect("a new id is visible ASCII"),
        }
    }

    /// `GET /api/v1/properties/{id}`.
    pub async fn read(
        State(api): State<Arc<Api>>,
        Path(id): Path<String>,
        headers: HeaderMap,
    ) -> Response {
        let request_id = request_id(&headers);
        let text = request_id
            .to_str()
            .expect("visible ASCII (see `request_id`) is text");
        let mut response = answer_for(&api, &id, &headers, text);
        response.headers_mut().insert("x-request-id", request_id);
        response
    }

    fn answer_for(api: &Api, id: &str, headers: &HeaderMap, request_id: &str) -> Response {
        let key = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .and_then(|secret| {
                let digest: [u8; 32] = Sha256::digest(secret.as_bytes()).into();
                api.keys.get(&digest)
            });
        let Some(key) = key else {
            return refused_as(request_id, StatusCode::UNAUTHORIZED, "api_key_invalid");
        };
        let Some(organization) = api.organizations.get(&key.organization) else {
            return refused_as(request_id, StatusCode::UNAUTHORIZED, "api_key_invalid");
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let (reads_left, writes_left) = {
            let mut windows = key.windows.lock().unwrap_or_else(|p| p.into_inner());
            let (reads, writes) = &mut *windows;
            let reads = reads.at(now, HOUR);
            if *reads >= key.read_per_hour {
                let mut response =
                    refused_as(request_id, StatusCode::TOO_MANY_REQUESTS, "rate_limit");
                let wait = HOUR - now % HOUR;
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, wait.into());
                return response;
            }
            *reads += 1;
            let key_writes = *writes.at(now, HOUR);
            let org_writes = *organization
                .writes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .at(now, DAY);
            let writes_left = (key.write_per_hour.saturating_sub(key_writes))
                .min(organization.write_daily.saturating_sub(org_writes));
            (key.read_per_hour - *reads, writes_left)
        };
        let mut response = match api.properties.get(id) {
            Some((owner, property)) if *owner == key.organization => {
                answer_as(request_id, StatusCode::OK, "data", property.clone())
            }
            _ => refused_as(request_id, StatusCode::NOT_FOUND, "not_found"),
        };
        let headers = response.headers_mut();
        headers.insert(
            "x-developer-api-ratelimit-read-remaining",
            reads_left.into(),
        );
        headers.insert(
            "x-developer-api-ratelimit-write-remaining",
            writes_left.into(),
        );
        response
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: xf-baseline memory <listen> <id> <property-json> \
        | sqlx <listen> <database-url> <id> | contract <listen> <id> <property-json> <api-key>";
    let (mode, listen) = match args.as_slice() {
        [mode, listen, ..] => (mode.as_str(), listen.as_str()),
        _ => panic!("{usage}"),
    };
    let router = match (mode, &args[2..]) {
        ("memory", [id, property]) => {
            let property: Value = serde_json::from_str(property).expect("the property's JSON");
            let properties = Arc::new(HashMap::from([(id.clone(), property)]));
            let created = Arc::new(Mutex::new(HashMap::new()));
            Router::new()
                .route("/api/v1/properties/{id}", get(from_map))
                .with_state(properties)
                .route(
                    "/api/v1/properties",
                    post(create_in_map).with_state(created),
                )
        }
        ("contract", [id, property, key]) => {
            let property: Value = serde_json::from_str(property).expect("the property's JSON");
            Router::new()
                .route("/api/v1/properties/{id}", get(contract::read))
                .with_state(contract::Api::new(key, id.clone(), property))
        }
        ("sqlx", [url, _id]) => {
            let pool = PgPoolOptions::new()
                .connect(url)
                .await
                .expect("the database");
            Router::new()
                .route("/api/v1/properties/{id}", get(from_database))
                .route("/api/v1/properties", post(create_in_database))
                .with_state(pool)
        }
        _ => panic!("{usage}"),
    };
    let listener = tokio::net::TcpListener::bind(listen).await.expect("bind");
    println!("ready");
    axum::serve(listener, router).await.expect("serve");
}
