//! The OpenAPI 3.1 document, served at `GET /openapi.json`.
//!
//! Operations come from the `#[utoipa::path]` of each handler, registered together with its
//! route by `utoipa_axum`, so a route cannot exist undocumented. What every operation shares
//! (the request-id and rate-limit headers, the errors every authenticated endpoint can
//! answer) is added here once instead of on each handler.

use serde_json::{json, Map, Value};
use utoipa::OpenApi;

use crate::error::ErrorBody;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "xf SEO developer API",
        version = "1.0.0",
        description = "Properties, scans and jobs, issues, shared reports, usage, limits and live rate-limit counters. \
            Paths are relative to the mount point, `/api/v1` on the standalone server."
    ),
    servers((url = "/api/v1")),
    components(schemas(ErrorBody, xf_core::error::FieldError)),
    tags(
        (name = "health"), (name = "organization"), (name = "properties"),
        (name = "scans"), (name = "jobs"), (name = "reports")
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

fn error_response(description: &str, retry_after: bool) -> Value {
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
    json!({
        "description": description,
        "headers": headers,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}
    })
}

/// Adds the shared headers, error responses, security scheme and envelope schemas.
pub fn finish(doc: utoipa::openapi::OpenApi) -> Value {
    let mut doc = serde_json::to_value(doc).unwrap_or_else(|_| json!({}));
    let schemas = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut);
    if let Some(schemas) = schemas {
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
    if let Some(components) = doc.get_mut("components").and_then(Value::as_object_mut) {
        components.insert(
            "securitySchemes".into(),
            json!({"bearer": {"type": "http", "scheme": "bearer", "description": "xf_live_… or xf_test_… API key"}}),
        );
    }
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return doc;
    };
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for (method, operation) in item.iter_mut() {
            let authenticated = path != "/health";
            let has_body = operation.get("requestBody").is_some();
            decorate(operation, method, authenticated, has_body);
        }
    }
    doc
}

fn decorate(operation: &mut Value, method: &str, authenticated: bool, has_body: bool) {
    let Some(operation) = operation.as_object_mut() else {
        return;
    };
    if authenticated {
        operation.insert("security".into(), json!([{"bearer": []}]));
    } else {
        operation.insert("security".into(), json!([]));
    }
    let mut parameters = operation
        .remove("parameters")
        .and_then(|p| p.as_array().cloned())
        .unwrap_or_default();
    parameters.push(json!({
        "name": "X-Request-Id", "in": "header", "required": false,
        "description": "1 to 128 visible ASCII characters, echoed in the response",
        "schema": {"type": "string", "maxLength": 128}
    }));
    operation.insert("parameters".into(), Value::Array(parameters));

    let responses = operation
        .entry("responses")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    let Some(responses) = responses else { return };
    let mut shared: Vec<(&str, Value)> = vec![("500", error_response("`internal_error`", false))];
    if authenticated {
        shared.extend([
            (
                "400",
                error_response(
                    "`validation_error`: bad input, bad cursor, limit out of range",
                    false,
                ),
            ),
            (
                "401",
                error_response("`api_key_invalid`: missing, invalid or revoked key", false),
            ),
            (
                "403",
                error_response("`plan_required`: the plan lacks the developer API", false),
            ),
            (
                "429",
                error_response("`rate_limit` (or `quota_exceeded` for scans)", true),
            ),
            (
                "503",
                error_response("`unavailable`: storage is unreachable", true),
            ),
        ]);
    }
    if has_body {
        shared.push((
            "413",
            error_response("`payload_too_large`: body over 1 MiB", false),
        ));
    }
    for (status, response) in shared {
        responses.entry(status).or_insert(response);
    }
    for (status, response) in responses.iter_mut() {
        let Some(response) = response.as_object_mut() else {
            continue;
        };
        if !status.starts_with('2') && response.get("content").is_none() {
            let description = response
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            *response = error_response(&description, false)
                .as_object()
                .cloned()
                .unwrap_or_default();
        }
        let headers = response
            .entry("headers")
            .or_insert_with(|| json!({}))
            .as_object_mut();
        let Some(headers) = headers else { continue };
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
        if status == "201" && method == "post" {
            headers.insert(
                "Idempotent-Replayed".into(),
                header("`true` when this is a replay of an earlier request with the same Idempotency-Key", json!({"type": "string"})),
            );
        }
    }
}
