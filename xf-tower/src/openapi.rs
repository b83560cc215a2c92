//! The OpenAPI 3.1 document, served at `GET /openapi.json`.
//!
//! Operations come from the `#[utoipa::path]` of each handler, registered together with its
//! route by `utoipa_axum`, so a route cannot exist undocumented. What every operation shares
//! (the request-id and rate-limit headers, the errors every authenticated endpoint can
//! answer) is added here once instead of on each handler.

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{json, Map, Value};
use utoipa::OpenApi;
use xf_core::Error;

use crate::envelope::ErrorBody;
use crate::error::ApiError;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "xf SEO developer API",
        version = "1.0.0",
        description = "Properties, scans and jobs, issues, shared reports, usage, limits, live rate-limit counters and webhooks. \
            Paths are relative to the mount point, `/api/v1` on the standalone server."
    ),
    servers((url = "/api/v1")),
    components(schemas(
        ErrorBody,
        xf_core::error::FieldError,
        xf_core::media::api::MediaItemView,
        xf_core::media::api::UploadedItem,
        xf_core::media::api::Pagination,
        xf_core::media::api::ChannelsView,
        xf_core::ids::MediaId,
    )),
    tags(
        (name = "health"), (name = "organization"), (name = "properties"),
        (name = "search-console"), (name = "scans"), (name = "jobs"), (name = "reports"), (name = "webhooks"),
        (name = "media")
    )
)]
struct BaseDoc;

/// The document before the routes add their operations.
pub fn base() -> utoipa::openapi::OpenApi {
    BaseDoc::openapi()
}

const READ_HEADER: &str = xf_core::api::READ_REMAINING_HEADER;
const WRITE_HEADER: &str = xf_core::api::WRITE_REMAINING_HEADER;

fn header(description: &str, schema: Value) -> Value {
    json!({"description": description, "schema": schema})
}

fn error_response(envelope: &str, description: &str, retry_after: bool) -> Map<String, Value> {
    let mut headers = Map::new();
    headers.insert(
        "X-Request-Id".into(),
        header(
            "Echo of the request's X-Request-Id, or a generated id",
            json!({"type": "string"}),
        ),
    );
    if retry_after {
        headers.insert(
            "Retry-After".into(),
            header(
                "Whole seconds to wait before retrying",
                json!({"type": "integer"}),
            ),
        );
    }
    let mut response = Map::new();
    response.insert("description".into(), description.into());
    response.insert("headers".into(), Value::Object(headers));
    response.insert(
        "content".into(),
        json!({"application/json": {"schema": {"$ref": format!("#/components/schemas/{envelope}")}}}),
    );
    response
}

/// `GET /openapi.json`: the document serialized once, or a logged `500` if it could not be
/// built.
pub fn respond(served: Result<Bytes, String>) -> Response {
    match served {
        Ok(body) => ([(http::header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(cause) => ApiError(Error::Internal(cause)).into_response(),
    }
}

/// Adds the shared headers, error responses, links, security scheme and envelope schemas.
/// An `Err` is a bug in the document's construction, with what went wrong.
pub fn finish(doc: utoipa::openapi::OpenApi) -> Result<Value, String> {
    let mut doc = serde_json::to_value(doc)
        .map_err(|error| format!("the OpenAPI document does not serialize: {error}"))?;
    let missing = |what: &str| format!("the OpenAPI document has no {what}");
    {
        let schemas = doc
            .pointer_mut("/components/schemas")
            .and_then(Value::as_object_mut)
            .ok_or_else(|| missing("components.schemas"))?;
        // Each platform's settings, made from the tables the upload forms are checked with.
        for platform in xf_core::media::Platform::ALL {
            schemas.insert(
                xf_core::media::settings::schema_name(platform).into(),
                xf_core::media::settings::json_schema(platform),
            );
        }
        schemas.insert(
            "MediaErrorEnvelope".into(),
            json!({
                "type": "object",
                "required": ["success", "error", "meta"],
                "properties": {
                    "success": {"type": "boolean", "const": false},
                    "error": {"$ref": "#/components/schemas/ErrorBody"},
                    "meta": {"type": "object", "required": ["requestId"], "properties": {"requestId": {"type": "string"}}}
                }
            }),
        );
        schemas.insert(
            "ErrorEnvelope".into(),
            json!({
                "type": "object",
                "required": ["error", "meta"],
                "properties": {
                    "error": {"$ref": "#/components/schemas/ErrorBody"},
                    "meta": {"type": "object", "required": ["requestId"], "properties": {"requestId": {"type": "string"}}}
                }
            }),
        );
    }
    doc.get_mut("components")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| missing("components"))?
        .insert(
            "securitySchemes".into(),
            json!({
                "bearer": {"type": "http", "scheme": "bearer", "description": "xf_live_… or xf_test_… API key"},
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key", "description": "The media API also takes the key in X-API-Key"}
            }),
        );
    let paths = doc
        .get_mut("paths")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| missing("paths"))?;
    // Each path is decorated as its own API's: the developer API's come from the routes'
    // annotations, the media API's from `openapi_media`.
    decorate_paths(paths, Api::Developer)?;
    let mut media = crate::openapi_media::paths();
    decorate_paths(&mut media, Api::Media)?;
    paths.extend(media);
    add_links(paths)?;
    Ok(doc)
}

/// Decorates every operation of `paths` as `api`'s; `/health` and `OPTIONS` are open.
fn decorate_paths(paths: &mut serde_json::Map<String, Value>, api: Api) -> Result<(), String> {
    for (path, item) in paths.iter_mut() {
        let item = item
            .as_object_mut()
            .ok_or_else(|| format!("the path item {path} is not an object"))?;
        for (method, operation) in item.iter_mut() {
            let api = match (path.as_str(), method.as_str()) {
                ("/health", _) | (_, "options") => Api::Open,
                _ => api,
            };
            decorate(operation, method, api)?;
        }
    }
    Ok(())
}

/// Links from one response to operations that take one of its values as a parameter.
struct LinkGroup {
    /// The responses linked from: `(path, method)`, each at `status`.
    from: &'static [(&'static str, &'static str)],
    status: &'static str,
    /// The parameter the targets take, and the runtime expression that fills it.
    parameter: &'static str,
    expression: &'static str,
    /// `(link name, operationId)` of each target.
    to: &'static [(&'static str, &'static str)],
}

/// The links of the stateful phase of the contract check, and of any client that follows
/// them: from a created property to its detail, issues, scans, crawls, jobs and Search Console
/// data and sync; from a queued
/// scan or crawl to its job and its cancellation; from a created webhook to its changes,
/// deletion, test delivery, secret rotation and log.
const LINKS: &[LinkGroup] = &[
    LinkGroup {
        from: &[("/properties", "post")],
        status: "201",
        parameter: "propertyId",
        expression: "$response.body#/data/property/id",
        to: &[
            ("GetProperty", "get_property"),
            ("ListIssues", "list_issues"),
            ("QueueScan", "queue_scan"),
            ("QueueCrawl", "queue_crawl"),
            ("ListPropertyJobs", "list_jobs"),
            ("GetPropertyGsc", "get_property_gsc"),
            ("GetGscOverview", "get_gsc_overview"),
            ("ListGscQueries", "list_gsc_queries"),
            ("ListGscPages", "list_gsc_pages"),
            ("SyncGsc", "sync_gsc"),
        ],
    },
    LinkGroup {
        from: &[
            ("/properties/{propertyId}/scans", "post"),
            ("/properties/{propertyId}/crawls", "post"),
        ],
        status: "202",
        parameter: "jobId",
        expression: "$response.body#/data/job/id",
        to: &[("GetJob", "get_job"), ("CancelJob", "cancel_job")],
    },
    LinkGroup {
        from: &[("/webhooks", "post")],
        status: "201",
        parameter: "webhookId",
        expression: "$response.body#/data/webhook/id",
        to: &[
            ("UpdateWebhook", "update_webhook"),
            ("DeleteWebhook", "delete_webhook"),
            ("TestWebhook", "test_webhook"),
            ("RotateWebhookSecret", "rotate_secret"),
            ("ListDeliveries", "list_deliveries"),
        ],
    },
];

fn add_links(paths: &mut Map<String, Value>) -> Result<(), String> {
    for group in LINKS {
        let status = group.status;
        for (path, method) in group.from {
            let response = paths
                .get_mut(*path)
                .and_then(|item| item.get_mut(*method))
                .and_then(|operation| operation.pointer_mut(&format!("/responses/{status}")))
                .and_then(Value::as_object_mut)
                .ok_or_else(|| format!("no {status} response of {method} {path} to link from"))?;
            let links = object_entry(response, "links")?;
            for (name, operation_id) in group.to {
                links.insert(
                    (*name).to_owned(),
                    json!({"operationId": operation_id, "parameters": {group.parameter: group.expression}}),
                );
            }
        }
    }
    Ok(())
}

/// The object under `key`, created empty when absent; an `Err` when it is something else.
fn object_entry<'a>(
    object: &'a mut Map<String, Value>,
    key: &str,
) -> Result<&'a mut Map<String, Value>, String> {
    object
        .entry(key)
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| format!("`{key}` in the OpenAPI document is not an object"))
}

/// Which API an operation belongs to, for its security and error envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    /// Needs no key (`GET /health`, tus's `OPTIONS`).
    Open,
    /// The developer API: bearer keys, `{error, meta}`.
    Developer,
    /// The media API: `X-API-Key` or bearer, `{success: false, error, meta}`.
    Media,
}

fn decorate(operation: &mut Value, method: &str, api: Api) -> Result<(), String> {
    let operation = operation
        .as_object_mut()
        .ok_or_else(|| format!("an operation of {method} is not an object"))?;
    let has_body = operation.contains_key("requestBody");
    let authenticated = api != Api::Open;
    let envelope = match api {
        Api::Media => "MediaErrorEnvelope",
        _ => "ErrorEnvelope",
    };
    operation.insert(
        "security".into(),
        match api {
            Api::Developer => json!([{"bearer": []}]),
            Api::Media => json!([{"bearer": []}, {"apiKey": []}]),
            Api::Open => json!([]),
        },
    );
    let mut parameters = operation
        .remove("parameters")
        .and_then(|p| p.as_array().cloned())
        .unwrap_or_default();
    let idempotent = parameters
        .iter()
        .any(|p| p["name"] == "Idempotency-Key" && p["in"] == "header");
    parameters.push(json!({
        "name": "X-Request-Id", "in": "header", "required": false,
        "description": "Echoed in `meta.requestId` and the response header when it is 1 to 128 visible \
            ASCII characters; any other value is replaced by a generated id, never refused.",
        "schema": {"type": "string"}
    }));
    operation.insert("parameters".into(), Value::Array(parameters));

    let responses = object_entry(operation, "responses")?;
    let mut shared: Vec<(&str, Map<String, Value>)> =
        vec![("500", error_response(envelope, "`internal_error`", false))];
    if authenticated {
        shared.extend([
            (
                "400",
                error_response(
                    envelope,
                    "`validation_error`: bad input, bad cursor, limit out of range",
                    false,
                ),
            ),
            (
                "401",
                error_response(
                    envelope,
                    "`api_key_invalid`: missing, invalid or revoked key",
                    false,
                ),
            ),
            (
                "403",
                error_response(
                    envelope,
                    if api == Api::Media {
                        "`plan_required`: the plan lacks the media API"
                    } else {
                        "`plan_required`: the plan lacks the developer API"
                    },
                    false,
                ),
            ),
            (
                "429",
                error_response(
                    envelope,
                    "`rate_limit` (or `quota_exceeded` for scans)",
                    true,
                ),
            ),
            (
                "503",
                error_response(envelope, "`unavailable`: storage is unreachable", true),
            ),
        ]);
    }
    // Every operation that takes an Idempotency-Key can refuse it in these two ways; an
    // operation's own 409 (`POST /properties`: a URL registered already) names both causes.
    if idempotent {
        shared.extend([
            (
                "409",
                error_response(
                    envelope,
                    "`idempotency_key_in_use`: the first request with this Idempotency-Key is still running",
                    false,
                ),
            ),
            (
                "422",
                error_response(
                    envelope,
                    "`idempotency_key_reused`: this Idempotency-Key was used with another request",
                    false,
                ),
            ),
        ]);
    }
    if has_body {
        shared.push((
            "408",
            error_response(
                envelope,
                "`request_timeout`: the body arrived slower than the minimum rate; nothing was kept",
                false,
            ),
        ));
    }
    if has_body && api != Api::Media {
        shared.push((
            "413",
            error_response(envelope, "`payload_too_large`: body over 1 MiB", false),
        ));
    }
    for (status, response) in shared {
        responses.entry(status).or_insert(Value::Object(response));
    }
    for (status, response) in responses.iter_mut() {
        let response = response
            .as_object_mut()
            .ok_or_else(|| format!("the {status} response of {method} is not an object"))?;
        if !status.starts_with('2') && !response.contains_key("content") {
            // A handler's own error statuses name only their code; the envelope is shared.
            let description = response
                .get("description")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("the {status} response of {method} has no description"))?;
            // 429 and 503 always carry Retry-After.
            let retry_after = matches!(status.as_str(), "429" | "503");
            *response = error_response(envelope, description, retry_after);
        }
        let headers = object_entry(response, "headers")?;
        headers.entry("X-Request-Id").or_insert_with(|| {
            header(
                "Echo of the request's X-Request-Id, or a generated id",
                json!({"type": "string"}),
            )
        });
        if authenticated && !matches!(status.as_str(), "401" | "403" | "500" | "503") {
            headers.insert(
                READ_HEADER.into(),
                header(
                    "Reads left for this key this hour",
                    json!({"type": "integer"}),
                ),
            );
            headers.insert(
                WRITE_HEADER.into(),
                header("Writes left: the smaller of this key's hourly and the organization's daily remainder", json!({"type": "integer"})),
            );
        }
        if idempotent && status.starts_with('2') {
            headers.insert(
                "Idempotent-Replayed".into(),
                header("`true` when this is a replay of an earlier request with the same Idempotency-Key", json!({"type": "string"})),
            );
        }
    }
    Ok(())
}
