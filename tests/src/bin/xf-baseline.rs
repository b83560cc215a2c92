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
//! Both answer `{"data": {...}, "meta": {"requestId": "req_…"}}` with a fresh time-ordered
//! request id, 401 without a key and 404 for another id, as xf does. They log nothing.
//!
//! Both also take `POST /api/v1/properties` (`{"url": …}`, the write of the comparison):
//! a new property with a fresh id, kept in the map behind a mutex, or inserted with one
//! `INSERT … RETURNING`; `201 {"data": {"property": …}}`. No rate limit and no idempotency:
//! the least a server can do to create the row.
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

/// An answer in xf's envelope: `{key: value, "meta": {"requestId": …}}`.
fn answer(status: StatusCode, key: &str, value: Value) -> Response {
    let request_id = xf_core::ids::new_unordered_id("req");
    let mut body = json!({"meta": {"requestId": request_id}});
    body[key] = value;
    (status, axum::Json(body)).into_response()
}

/// The envelope xf answers with.
fn envelope(data: Value) -> Response {
    answer(StatusCode::OK, "data", data)
}

fn refused(status: StatusCode, code: &str) -> Response {
    answer(status, "error", json!({"code": code, "message": code}))
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

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: xf-baseline memory <listen> <id> <property-json> | sqlx <listen> <database-url> <id>";
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
