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
use xf_core::model::EventType;
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
        xf_core::webhooks::JobEventData,
        xf_core::media::events::MediaPostEventData,
        xf_core::media::events::MediaEventData,
        xf_core::media::events::ChannelEventData,
        xf_core::model::schedule::ScheduleEventData,
        xf_core::error::FieldError,
        xf_core::media::api::MediaItemView,
        xf_core::media::api::UploadedItem,
        xf_core::media::api::DeletedMedia,
        xf_core::media::api::Pagination,
        xf_core::media::api::ChannelsView,
        xf_core::media::api::MediaUsage,
        xf_core::ids::MediaId,
    )),
    tags(
        (name = "health", description = "Whether the API and its storage answer"),
        (name = "organization", description = "The organization of the key: overview, usage, limits and live rate-limit counters"),
        (name = "properties", description = "Websites, and the issues their scans found"),
        (name = "search-console", description = "Cached Google Search Console data of the properties"),
        (name = "scans", description = "Site scans, run as background jobs"),
        (name = "jobs", description = "Background jobs: status, progress, results, cancellation"),
        (name = "reports", description = "Shared scan reports"),
        (name = "webhooks", description = "Signed deliveries of job, media and channel events (see the document's `webhooks` section for each event's body)"),
        (name = "media", description = "Video and image uploads (also resumable, with tus), per-platform settings and publishing state, connected channels")
    )
)]
struct BaseDoc;

/// The document before the routes add their operations.
pub fn base() -> utoipa::openapi::OpenApi {
    BaseDoc::openapi()
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "xf admin API",
        version = "1.0.0",
        description = "What the specification says happens in the host's web app: organizations and their keys, plans and limit overrides, verified properties, Search Console links, channels and connect links, fixed issues, shared reports, host-measured usage. \
            Authenticated with the host's admin token as a bearer token. Paths are relative to the mount point, `/admin` on the standalone server."
    ),
    servers((url = "/admin")),
    components(schemas(ErrorBody, xf_core::error::FieldError)),
    tags(
        (name = "organizations", description = "Organizations, their plans, limits, keys and host-measured usage"),
        (name = "properties", description = "Verifying properties and marking issues fixed"),
        (name = "search-console", description = "Linking Google accounts and Search Console sites"),
        (name = "channels", description = "Social accounts: connect links, tokens, settings"),
        (name = "reports", description = "Shared scan reports and their views")
    )
)]
struct AdminDoc;

/// The admin API's document before its routes add their operations.
pub fn admin_base() -> utoipa::openapi::OpenApi {
    AdminDoc::openapi()
}

/// The admin API's document, served at `/admin/openapi.json`: the routes' operations with
/// the admin token's security, the shared errors and headers, and the envelope schemas.
/// `plans` are the names of the host's plan catalog, which the organization bodies' `plan`
/// must name.
pub fn finish_admin(doc: utoipa::openapi::OpenApi, plans: &[&str]) -> Result<Value, String> {
    let mut doc = serde_json::to_value(doc)
        .map_err(|error| format!("the admin OpenAPI document does not serialize: {error}"))?;
    for (schema, nullable) in [("NewOrganization", false), ("OrganizationPatch", true)] {
        let plan = doc
            .pointer_mut(&format!("/components/schemas/{schema}/properties/plan"))
            .and_then(Value::as_object_mut)
            .ok_or_else(|| format!("the admin OpenAPI document has no {schema}.plan"))?;
        let mut names: Vec<Value> = plans.iter().map(|p| Value::from(*p)).collect();
        if nullable {
            names.push(Value::Null);
        }
        plan.insert("enum".into(), Value::Array(names));
    }
    add_envelopes(&mut doc)?;
    doc.get_mut("components")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| "the admin OpenAPI document has no components".to_owned())?
        .insert(
            "securitySchemes".into(),
            json!({"adminToken": {"type": "http", "scheme": "bearer", "description": "The host's admin token"}}),
        );
    let paths = doc
        .get_mut("paths")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| "the admin OpenAPI document has no paths".to_owned())?;
    decorate_paths(paths, Api::Admin)?;
    add_links(paths, ADMIN_LINKS)?;
    tidy(&mut doc);
    Ok(doc)
}

/// Adds the error envelopes to the component schemas, and the enums of the codes and check
/// ids clients switch on (`ErrorBody.code`, `Issue.type`).
fn add_envelopes(doc: &mut Value) -> Result<(), String> {
    let schemas = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| "the OpenAPI document has no components.schemas".to_owned())?;
    // Clients switch on the code: the document lists every one (docs/api-behaviour.md says
    // how to treat one added later).
    let code = schemas
        .get_mut("ErrorBody")
        .and_then(|body| body.pointer_mut("/properties/code"))
        .and_then(Value::as_object_mut)
        .ok_or_else(|| "the OpenAPI document has no ErrorBody.code".to_owned())?;
    let codes: Vec<&str> = (xf_core::error::ERROR_CODES.iter())
        .chain(&crate::error::REFUSAL_CODES)
        .copied()
        .collect();
    code.insert("enum".into(), json!(codes));
    #[cfg(feature = "crawler")]
    if let Some(issue_type) = schemas
        .get_mut("Issue")
        .and_then(|issue| issue.pointer_mut("/properties/type"))
        .and_then(Value::as_object_mut)
    {
        let ids: Vec<&str> = xf_core::crawl::checks::CATALOGUE
            .iter()
            .map(|check| check.id)
            .collect();
        issue_type.insert("enum".into(), json!(ids));
    }
    // The envelopes' `meta`, the developer API's `Meta` component (every envelope's, so a
    // generated client has one class of it).
    let meta = json!({"$ref": "#/components/schemas/Meta"});
    schemas.insert(
        "MediaErrorEnvelope".into(),
        json!({
            "type": "object",
            "required": ["success", "error", "meta"],
            "properties": {
                "success": {"type": "boolean", "const": false},
                "error": {"$ref": "#/components/schemas/ErrorBody"},
                "meta": meta
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
                "meta": meta
            }
        }),
    );
    Ok(())
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
        Err(cause) => ApiError::from(Error::internal(cause)).into_response(),
    }
}

/// Adds the media API's operations (`media`, from its routes) to the developer API's (`doc`),
/// with the shared headers, error responses, links, security scheme and envelope schemas.
/// An `Err` is a bug in the document's construction, with what went wrong.
pub fn finish(
    mut doc: utoipa::openapi::OpenApi,
    mut media: utoipa::openapi::OpenApi,
) -> Result<Value, String> {
    // The media API's component schemas join the document's; its paths are decorated as its
    // own below.
    if let Some(components) = media.components.take() {
        let schemas = &mut doc.components.get_or_insert_with(Default::default).schemas;
        for (name, schema) in components.schemas {
            schemas.entry(name).or_insert(schema);
        }
    }
    let Value::Object(mut media) = serde_json::to_value(media.paths)
        .map_err(|error| format!("the media API's paths do not serialize: {error}"))?
    else {
        return Err("the media API's paths are not an object".to_owned());
    };
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
                xf_core::media::settings::json_schema(
                    platform,
                    xf_core::media::settings::SettingsSchema::Stored,
                ),
            );
        }
    }
    #[cfg(feature = "crawler")]
    name_the_catalogue(&mut doc);
    schedule_request_by_frequency(&mut doc)?;
    add_envelopes(&mut doc)?;
    doc.get_mut("components")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| missing("components"))?
        .insert(
            "securitySchemes".into(),
            json!({
                "bearer": {"type": "http", "scheme": "bearer", "description": "xf_live_… or xf_test_… API key"},
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key", "description": "The media API (and /webhooks) also take the key in X-API-Key"},
                "webhookSignature": {"type": "apiKey", "in": "header", "name": "webhook-signature", "description": "Deliveries are signed as Standard Webhooks v1: verify `webhook-signature` against `webhook-id`, `webhook-timestamp` and the raw body with the webhook's secret"}
            }),
        );
    let paths = doc
        .get_mut("paths")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| missing("paths"))?;
    // Each path is decorated as its own API's.
    decorate_paths(paths, Api::Developer)?;
    decorate_paths(&mut media, Api::Media)?;
    paths.extend(media);
    add_links(paths, LINKS)?;
    doc.as_object_mut()
        .ok_or_else(|| missing("root object"))?
        .insert("webhooks".into(), webhooks_section()?);
    let events = events_schemas()?;
    doc.pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| missing("components.schemas"))?
        .extend(events);
    completed_job_schemas(&mut doc)?;
    tidy(&mut doc);
    Ok(doc)
}

/// The name of the component schema of the body of a delivery of `event`.
fn event_schema_name(event: EventType) -> String {
    let mut name = String::new();
    for part in event.as_str().split('.') {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            name.push(first.to_ascii_uppercase());
            name.extend(chars);
        }
    }
    name + "Event"
}

/// The issue list's `type` filter accepts the catalogue's check ids only: its pattern names
/// them, so that what the document allows is exactly what the list accepts.
#[cfg(feature = "crawler")]
fn name_the_catalogue(doc: &mut Value) {
    let ids: Vec<&str> = xf_core::crawl::checks::CATALOGUE
        .iter()
        .map(|check| check.id)
        .collect();
    let one = format!("({})", ids.join("|"));
    let pattern = format!("^{one}(,{one})*$");
    for path in [
        "/properties/{propertyId}/issues",
        "/properties/{propertyId}/issues.csv",
    ] {
        let parameters = doc
            .pointer_mut(&format!(
                "/paths/{}/get/parameters",
                path.replace('/', "~1")
            ))
            .and_then(Value::as_array_mut);
        for parameter in parameters.into_iter().flatten() {
            if parameter["name"] == "type" {
                parameter["schema"]["pattern"] = Value::from(pattern.clone());
            }
        }
    }
}

/// A schedule's day belongs to its frequency, and its zone is one of the database's: the body
/// of `PUT .../schedule` is one of three shapes (daily, weekly with `dayOfWeek`, monthly with
/// `dayOfMonth`), each with `timezone` a pattern naming the zones, so that what the document
/// allows is exactly what the endpoint accepts.
fn schedule_request_by_frequency(doc: &mut Value) -> Result<(), String> {
    let schema = doc
        .pointer_mut("/components/schemas/ScheduleRequest")
        .ok_or_else(|| "the OpenAPI document has no ScheduleRequest".to_owned())?;
    let mut common = schema["properties"]
        .as_object()
        .cloned()
        .ok_or_else(|| "ScheduleRequest has no properties".to_owned())?;
    for day in ["frequency", "dayOfWeek", "dayOfMonth"] {
        common.remove(day);
    }
    // A pattern rather than an enum: client generators make an enum a type of its own, and
    // some names (`Etc/GMT+0`, `Etc/GMT-0`, `Etc/GMT0`) collide once turned into identifiers.
    let zones: Vec<String> = xf_core::model::schedule::timezone_names()
        .map(|name| name.replace('+', "\\+").replace('.', "\\."))
        .collect();
    common["timezone"]["pattern"] = Value::from(format!("^({})$", zones.join("|")));
    let branch = |frequency: &str, day: Option<(&str, Value)>, not: &[&str]| {
        let mut properties = common.clone();
        properties.insert(
            "frequency".into(),
            json!({"type": "string", "const": frequency}),
        );
        let mut required = vec!["frequency", "time", "timezone"];
        if let Some((name, day_schema)) = day {
            properties.insert(name.into(), day_schema);
            required.push(name);
        }
        for other in not {
            properties.insert(
                (*other).into(),
                json!({"type": "null", "description": "Only for the other frequencies"}),
            );
        }
        json!({
            "type": "object",
            "title": format!("{frequency} schedule"),
            "additionalProperties": false,
            "required": required,
            "properties": properties,
        })
    };
    let weekday =
        json!({"$ref": "#/components/schemas/Weekday", "description": "The day of the week"});
    let day_of_month = json!({"type": "integer", "minimum": 1, "maximum": 31,
        "description": "The day of the month, 1 to 31 (the month's last day when it is shorter)"});
    let shapes = json!([
        branch("daily", None, &["dayOfWeek", "dayOfMonth"]),
        branch("weekly", Some(("dayOfWeek", weekday)), &["dayOfMonth"]),
        branch(
            "monthly",
            Some(("dayOfMonth", day_of_month)),
            &["dayOfWeek"]
        ),
    ]);
    *schema = json!({
        "description": schema["description"].clone(),
        "examples": schema["examples"].clone(),
        "oneOf": shapes,
    });
    Ok(())
}

/// The schema of `data` of `event`'s deliveries. (`EventType` may grow: an event without
/// its schema here fails to build the document, which every test of it would see.)
fn event_data_schema(event: EventType) -> Result<&'static str, String> {
    Ok(match event {
        EventType::JobCompleted | EventType::JobFailed | EventType::JobCancelled => "JobEventData",
        EventType::MediaPostPublished
        | EventType::MediaPostFailed
        | EventType::MediaPostDeleted => "MediaPostEventData",
        EventType::MediaCompleted | EventType::MediaFailed => "MediaEventData",
        EventType::ChannelDisconnected => "ChannelEventData",
        EventType::ScanScheduleFailed => "ScheduleEventData",
        _ => return Err(format!("no data schema for {} events", event.as_str())),
    })
}

/// What each event announces, for the `webhooks` section (an event without one fails the
/// document, as in [`event_data_schema`]).
fn event_summary(event: EventType) -> Result<&'static str, String> {
    Ok(match event {
        EventType::JobCompleted => "A job completed (for scans, with its result)",
        EventType::JobFailed => "A job failed for good (its attempts ran out)",
        EventType::JobCancelled => "A job was cancelled",
        EventType::MediaPostPublished => {
            "A post (a media item on one account of one platform) is live"
        }
        EventType::MediaPostFailed => {
            "A post failed for good, with the platform's (or xf's) code and message"
        }
        EventType::MediaPostDeleted => {
            "A published post was deleted from its platform (DELETE /media/{videos|images}/{id}/posts/{platform})"
        }
        EventType::MediaCompleted => "Every post of a media item finished and none failed",
        EventType::MediaFailed => "Every post of a media item finished and at least one failed",
        EventType::ChannelDisconnected => {
            "A channel's grant was revoked: it must be connected again"
        }
        EventType::ScanScheduleFailed => {
            "A slot of a property's scan schedule queued no scan: the organization's scansPerMonth is spent"
        }
        _ => return Err(format!("no summary for {} events", event.as_str())),
    })
}

/// The body schema of each event's deliveries, `WebhookEvent` (any of them, told apart by
/// `type`), and `CompletedJobEventData` (a `job.completed`'s `data`, whose job always has its
/// `result`; made from `JobEventData` and `Job` as `job`'s schemas are, by
/// [`completed_job_schemas`]).
fn events_schemas() -> Result<Map<String, Value>, String> {
    let mut schemas = EventType::ALL
        .into_iter()
        .map(|event| {
            let data = event_data_schema(event)?;
            let schema = json!({
                "type": "object",
                "description": format!("The body of a `{}` delivery", event.as_str()),
                "required": ["id", "type", "createdAt", "data"],
                "properties": {
                    "id": {"type": "string", "pattern": "^evt_[0-9a-f]{32}$", "description": "The event's id, also sent as `webhook-id`: the same for every attempt, to deduplicate on"},
                    "type": {"type": "string", "const": event.as_str()},
                    "createdAt": {"$ref": "#/components/schemas/Timestamp", "description": "When it happened"},
                    "test": {"type": "boolean", "const": true, "description": "Present only on test deliveries"},
                    "data": {"$ref": format!("#/components/schemas/{data}")},
                },
            });
            Ok((event_schema_name(event), schema))
        })
        .collect::<Result<Map<String, Value>, String>>()?;
    let mapping: Map<String, Value> = EventType::ALL
        .into_iter()
        .map(|event| {
            let target = format!("#/components/schemas/{}", event_schema_name(event));
            (event.as_str().to_owned(), Value::String(target))
        })
        .collect();
    let branches: Vec<Value> = mapping
        .values()
        .map(|target| json!({"$ref": target}))
        .collect();
    schemas.insert(
        WEBHOOK_EVENT.into(),
        json!({
            "description": "The body of any delivery, told apart by `type`",
            "oneOf": branches,
            "discriminator": {"propertyName": "type", "mapping": mapping},
        }),
    );
    Ok(schemas)
}

/// The component schema of any delivery's body, which no operation refers to: kept by
/// [`tidy`].
const WEBHOOK_EVENT: &str = "WebhookEvent";

/// `CompletedJob` (`Job` with `result` required) and `CompletedJobEventData` (`JobEventData`
/// whose `job` is one), from the document's own `Job` and `JobEventData`.
fn completed_job_schemas(doc: &mut Value) -> Result<(), String> {
    let schemas = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| "the OpenAPI document has no components.schemas".to_owned())?;
    let mut job = schemas
        .get("Job")
        .cloned()
        .ok_or_else(|| "the OpenAPI document has no Job".to_owned())?;
    job["required"]
        .as_array_mut()
        .ok_or_else(|| "Job has no required list".to_owned())?
        .push("result".into());
    job["description"] = "A completed job: a `Job` that always has its `result`".into();
    let mut data = schemas
        .get("JobEventData")
        .cloned()
        .ok_or_else(|| "the OpenAPI document has no JobEventData".to_owned())?;
    let job_property = data
        .pointer_mut("/properties/job")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| "JobEventData has no job".to_owned())?;
    job_property.insert("$ref".into(), "#/components/schemas/CompletedJob".into());
    schemas.insert("CompletedJob".into(), job);
    schemas.insert("CompletedJobEventData".into(), data);
    if let Some(completed) = schemas.get_mut(&event_schema_name(EventType::JobCompleted)) {
        completed["properties"]["data"] =
            json!({"$ref": "#/components/schemas/CompletedJobEventData"});
    }
    Ok(())
}

/// The OpenAPI 3.1 `webhooks` section: what a receiver gets for each event, signed as
/// Standard Webhooks v1, with an example body.
fn webhooks_section() -> Result<Value, String> {
    let example_time =
        xf_core::time::Timestamp::parse_rfc3339(xf_core::webhooks::samples::EXAMPLE_TIME);
    let header = |name: &str, description: &str, schema: Value| json!({"name": name, "in": "header", "required": true, "description": description, "schema": schema});
    let parameters = json!([
        header("webhook-id", "The event's id (`evt_…`), the same for every attempt", json!({"type": "string"})),
        header("webhook-timestamp", "The attempt's time, in Unix seconds", json!({"type": "string", "pattern": "^[0-9]+$"})),
        header("webhook-signature", "`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` under the secret (two, space-separated, during a rotation's overlap)", json!({"type": "string"})),
    ]);
    let mut section = Map::new();
    for event in EventType::ALL {
        let mut media = json!({"schema": {"$ref": format!("#/components/schemas/{}", event_schema_name(event))}});
        if let Some(at) = example_time {
            media["example"] = xf_core::webhooks::samples::sample_body(event, at);
        }
        let operation = json!({
            "operationId": format!("event_{}", event.as_str().replace('.', "_")),
            "summary": event_summary(event)?,
            "tags": ["webhooks"],
            "security": [{"webhookSignature": []}],
            "parameters": parameters,
            "requestBody": {"required": true, "content": {"application/json": media}},
            "responses": {
                "200": {"description": "Any 2xx acknowledges the delivery"},
                "410": {"description": "Gone: disables the webhook"},
                "default": {"description": "Anything else (or no answer within 15 s) is retried: after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h, honouring Retry-After"},
            },
        });
        section.insert(event.as_str().to_owned(), json!({"post": operation}));
    }
    Ok(Value::Object(section))
}

/// Makes the document what linters and client generators expect: a `oneOf` of one schema
/// (utoipa's way of giving a referenced schema its own description) becomes that schema,
/// and component schemas nothing refers to (the inner types of generic envelopes, which
/// utoipa inlines) are dropped.
fn tidy(doc: &mut Value) {
    flatten_single_one_of(doc);
    loop {
        let mut used = std::collections::BTreeSet::new();
        used.insert(format!("#/components/schemas/{WEBHOOK_EVENT}"));
        collect_refs(doc, &mut used);
        let Some(schemas) = doc
            .pointer_mut("/components/schemas")
            .and_then(Value::as_object_mut)
        else {
            return;
        };
        let before = schemas.len();
        schemas.retain(|name, _| used.contains(&format!("#/components/schemas/{name}")));
        if schemas.len() == before {
            return;
        }
    }
}

fn flatten_single_one_of(value: &mut Value) {
    match value {
        Value::Object(object) => {
            let single = object
                .get("oneOf")
                .and_then(Value::as_array)
                .is_some_and(|branches| branches.len() == 1);
            if single {
                if let Some(Value::Array(mut branches)) = object.remove("oneOf") {
                    if let Some(Value::Object(branch)) = branches.pop() {
                        for (key, inner) in branch {
                            // The outer description (the field's) wins over the type's.
                            object.entry(key).or_insert(inner);
                        }
                    }
                }
            }
            object.values_mut().for_each(flatten_single_one_of);
        }
        Value::Array(items) => items.iter_mut().for_each(flatten_single_one_of),
        _ => {}
    }
}

/// Every `$ref` in `value`, except those inside the component schemas that nothing else
/// refers to: the references of a schema count once the schema itself is used, which the
/// loop in [`tidy`] reaches by pruning until nothing changes.
fn collect_refs(value: &Value, used: &mut std::collections::BTreeSet<String>) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(target)) = object.get("$ref") {
                used.insert(target.clone());
            }
            object.values().for_each(|v| collect_refs(v, used));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, used)),
        _ => {}
    }
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
                (webhooks, _) if webhooks.starts_with("/webhooks") => Api::Webhooks,
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

/// The admin API's links, for its contract check's stateful phase and for clients: from a
/// created organization to the operations on it, from a created key to its revocation, and
/// from a connected channel to its changes.
const ADMIN_LINKS: &[LinkGroup] = &[
    LinkGroup {
        from: &[("/organizations", "post")],
        status: "201",
        parameter: "orgId",
        expression: "$response.body#/data/organization/id",
        to: &[
            ("UpdateOrganization", "update_organization"),
            ("CreateApiKey", "create_api_key"),
            ("RecordUsage", "record_usage"),
            ("LinkOrganizationGsc", "link_organization_gsc"),
            ("ListGscSites", "list_gsc_sites"),
            ("ConnectChannel", "connect_channel"),
            ("CreateConnectLink", "create_connect_link"),
        ],
    },
    LinkGroup {
        from: &[("/organizations/{orgId}/api-keys", "post")],
        status: "201",
        parameter: "keyId",
        expression: "$response.body#/data/id",
        to: &[("RevokeApiKey", "revoke_api_key")],
    },
    LinkGroup {
        from: &[("/organizations/{orgId}/channels", "post")],
        status: "201",
        parameter: "channelId",
        expression: "$response.body#/data/channel/id",
        to: &[("UpdateChannel", "update_channel")],
    },
];

fn add_links(paths: &mut Map<String, Value>, links: &[LinkGroup]) -> Result<(), String> {
    for group in links {
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
    /// `/webhooks`: either API's plan, `X-API-Key` or bearer, the developer API's envelope.
    Webhooks,
    /// The admin API: the host's admin token, `{error, meta}`, no plans or rate limits.
    Admin,
}

/// One piece: the steps edit one operation object in order (parameters, security, envelopes,
/// errors, headers, examples), each seeing what the step before it left; split, every part
/// would take and give back the whole operation.
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
            Api::Media | Api::Webhooks => json!([{"bearer": []}, {"apiKey": []}]),
            Api::Admin => json!([{"adminToken": []}]),
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
    if api == Api::Admin {
        shared.extend([
            (
                "400",
                error_response(envelope, "`validation_error`: bad input", false),
            ),
            (
                "401",
                error_response(
                    envelope,
                    "`admin_token_invalid`: missing or wrong admin token",
                    false,
                ),
            ),
            (
                "503",
                error_response(envelope, "`unavailable`: storage is unreachable", true),
            ),
        ]);
    } else if authenticated {
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
                    match api {
                        Api::Media => "`plan_required`: the plan lacks the media API",
                        Api::Webhooks => "`plan_required`: the plan has neither API",
                        _ => "`plan_required`: the plan lacks the developer API",
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
        let counted = authenticated && api != Api::Admin;
        if counted && !matches!(status.as_str(), "401" | "403" | "500" | "503") {
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
