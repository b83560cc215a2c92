//! The OpenAPI document: served, complete, and matching the router.

use http::Method;
use serde_json::{json, Value};
use xf_tests::{request, TestApp};

use crate::org;

/// Every route of the issue, as `METHOD path`.
const EXPECTED: &[&str] = &[
    "GET /health",
    "GET /organization",
    "GET /properties",
    "POST /properties",
    "GET /properties/{propertyId}",
    "GET /properties/{propertyId}/issues",
    "GET /properties/{propertyId}/issues.csv",
    "GET /properties/{propertyId}/scans",
    "GET /properties/{propertyId}/scans/{jobId}/changes",
    "POST /properties/{propertyId}/scans",
    "POST /properties/{propertyId}/crawls",
    "PUT /properties/{propertyId}/schedule",
    "GET /properties/{propertyId}/schedule",
    "DELETE /properties/{propertyId}/schedule",
    "POST /scans/batch",
    "GET /organization/gsc",
    "GET /properties/{propertyId}/gsc",
    "GET /properties/{propertyId}/gsc/overview",
    "GET /properties/{propertyId}/gsc/queries",
    "GET /properties/{propertyId}/gsc/pages",
    "POST /properties/{propertyId}/gsc/sync",
    "GET /jobs",
    "GET /jobs/{jobId}",
    "POST /jobs/{jobId}/cancel",
    "GET /reports",
    "GET /reports/{token}",
    "GET /usage",
    "GET /limits",
    "GET /rate-limits",
    "GET /webhooks",
    "GET /webhooks/{webhookId}",
    "POST /webhooks",
    "PATCH /webhooks/{webhookId}",
    "DELETE /webhooks/{webhookId}",
    "POST /webhooks/{webhookId}/test",
    "POST /webhooks/{webhookId}/rotate-secret",
    "GET /webhooks/{webhookId}/deliveries",
    "POST /media/videos",
    "GET /media/videos",
    "POST /media/images",
    "GET /media/images",
    "GET /media/videos/{id}",
    "GET /media/images/{id}",
    "PATCH /media/videos/{id}",
    "PATCH /media/images/{id}",
    "DELETE /media/videos/{id}",
    "DELETE /media/images/{id}",
    "POST /media/videos/{id}/cancel",
    "POST /media/images/{id}/cancel",
    "DELETE /media/videos/{id}/posts/{platform}",
    "DELETE /media/images/{id}/posts/{platform}",
    "POST /video/upload",
    "GET /channels",
    "GET /media/usage",
    "OPTIONS /media/uploads",
    "POST /media/uploads",
    "HEAD /media/uploads/{uploadId}",
    "PATCH /media/uploads/{uploadId}",
    "DELETE /media/uploads/{uploadId}",
];

async fn openapi_document_matches_the_router(app: TestApp) {
    let reply = app
        .send(request(Method::GET, "/openapi.json", None, None, &[]))
        .await;
    assert_eq!(reply.status, 200);
    let doc = reply.body;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    let paths = doc["paths"].as_object().unwrap();
    let mut expected: Vec<String> = EXPECTED.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(operations(&doc), expected);

    // Each documented operation is routed: with a key it never falls through to the
    // router's 404 or 405, and authenticated operations answer 401 without one.
    let org = org(&app, "Acme").await;
    for operation in EXPECTED {
        let (method, path) = operation.split_once(' ').unwrap();
        let concrete = path
            .replace("{propertyId}", "prop_x")
            .replace("{jobId}", "job_x")
            .replace("{token}", "tok_x")
            .replace("{webhookId}", "wh_x")
            .replace("{id}", "med_x")
            .replace("{platform}", "linkedin")
            .replace("{uploadId}", "upl_x");
        let method: Method = method.parse().unwrap();
        let body = (method == Method::POST).then(|| "{}".to_owned());
        let with_key = app
            .send(request(
                method.clone(),
                &concrete,
                Some(&org.live),
                body.clone(),
                &[],
            ))
            .await;
        assert_ne!(with_key.status, 405, "{operation}");
        assert!(
            with_key.status != 404 || with_key.body["error"]["message"] != "route not found",
            "{operation} is documented but not routed"
        );
        let op = &paths[path][method.as_str().to_lowercase()];
        let responses = op["responses"].as_object().unwrap();
        // tus answers (and HEAD's) carry headers, not bodies.
        let bodiless = |status: &str| {
            matches!(method, Method::HEAD | Method::OPTIONS)
                || status == "204"
                || (path.starts_with("/media/uploads") && status.starts_with('2'))
        };
        for (status, response) in responses {
            assert!(
                response["headers"]["X-Request-Id"].is_object(),
                "{operation} {status}"
            );
            assert!(
                bodiless(status)
                    || response["content"]["application/json"]["schema"].is_object()
                    || (path.ends_with(".csv")
                        && status.starts_with('2')
                        && response["content"]["text/csv"]["schema"].is_object()),
                "{operation} {status}"
            );
        }
        // A replayable operation documents both ways a key can be refused.
        let takes_key = op["parameters"]
            .as_array()
            .is_some_and(|ps| ps.iter().any(|p| p["name"] == "Idempotency-Key"));
        if takes_key {
            for status in ["409", "422"] {
                assert!(responses.contains_key(status), "{operation} lacks {status}");
            }
        }
        if path == "/health" || method == Method::OPTIONS {
            assert_eq!(op["security"], json!([]), "{operation}");
            continue;
        }
        let without = app
            .send(request(method.clone(), &concrete, None, body, &[]))
            .await;
        if method == Method::HEAD {
            assert_eq!(without.status, 401, "{operation}");
        } else {
            without.expect_error(401, "api_key_invalid");
        }
        for status in ["401", "403", "429", "503"] {
            assert!(responses.contains_key(status), "{operation} lacks {status}");
        }
        let success = responses.keys().find(|s| s.starts_with('2')).unwrap();
        assert!(
            responses[success]["headers"]["X-Developer-Api-RateLimit-read-Remaining"].is_object()
        );
        assert!(responses["429"]["headers"]["Retry-After"].is_object());
        assert_eq!(op["security"][0]["bearer"], Value::Array(vec![]));
    }
    // Schemas keep the spec's field names.
    let property = &doc["components"]["schemas"]["Property"]["properties"];
    for field in ["id", "name", "url", "verified", "createdAt"] {
        assert!(property[field].is_object(), "Property.{field}");
    }
}

/// Every route of the admin API, as `METHOD path`.
const ADMIN: &[&str] = &[
    "GET /organizations",
    "GET /organizations/{orgId}",
    "GET /organizations/{orgId}/api-keys",
    "GET /organizations/{orgId}/channels",
    "POST /organizations",
    "PATCH /organizations/{orgId}",
    "POST /organizations/{orgId}/api-keys",
    "POST /organizations/{orgId}/usage",
    "PUT /organizations/{orgId}/gsc",
    "GET /organizations/{orgId}/gsc/sites",
    "POST /organizations/{orgId}/channels",
    "POST /organizations/{orgId}/connect-links",
    "DELETE /api-keys/{keyId}",
    "PATCH /channels/{channelId}",
    "POST /properties/{propertyId}/verify",
    "PUT /properties/{propertyId}/gsc",
    "POST /issues/{issueId}/fixed",
    "POST /reports",
    "POST /reports/{token}/views",
];

/// The operations of a document's paths, as `METHOD path`, sorted.
fn operations(doc: &Value) -> Vec<String> {
    let mut documented: Vec<String> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .filter(|m| {
                    ["get", "post", "put", "patch", "delete", "head", "options"]
                        .contains(&m.as_str())
                })
                .map(move |m| format!("{} {path}", m.to_uppercase()))
        })
        .collect();
    documented.sort();
    documented
}

/// The admin API serves its own document without the token: every route and only those, each
/// with the admin token's security, the shared errors and the request id; the organization
/// bodies' `plan` lists the host's catalog.
async fn the_admin_document_matches_its_router(app: TestApp) {
    let reply = app
        .send_admin(request(Method::GET, "/openapi.json", None, None, &[]))
        .await;
    assert_eq!(reply.status, 200);
    let doc = reply.body;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    assert_eq!(doc["servers"][0]["url"], "/admin");
    let mut expected: Vec<String> = ADMIN.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(operations(&doc), expected);
    for operation in ADMIN {
        let (method, path) = operation.split_once(' ').unwrap();
        let op = &doc["paths"][path][method.to_lowercase()];
        assert_eq!(op["security"], json!([{"adminToken": []}]), "{operation}");
        for status in ["401", "500", "503"] {
            assert!(
                op["responses"][status].is_object(),
                "{operation} lacks {status}"
            );
        }
        let concrete = path
            .replace("{orgId}", "org_x")
            .replace("{keyId}", "key_x")
            .replace("{channelId}", "ch_x")
            .replace("{propertyId}", "prop_x")
            .replace("{issueId}", "iss_x")
            .replace("{token}", "tok_x");
        let method: Method = method.parse().unwrap();
        let without = app
            .send_admin(request(method.clone(), &concrete, None, None, &[]))
            .await;
        without.expect_error(401, "admin_token_invalid");
        let with = app.admin(method, &concrete, Some(json!({}))).await;
        assert!(
            with.status != 404 || with.body["error"]["message"] != "route not found",
            "{operation} is documented but not routed"
        );
    }
    let plans = &doc["components"]["schemas"]["NewOrganization"]["properties"]["plan"]["enum"];
    for plan in ["free", "starter", "growth", "plus", "pro"] {
        assert!(plans.as_array().unwrap().contains(&json!(plan)), "{plans}");
    }
    // What the admin API answers matches the document.
    let schemas = xf_tests::Schemas::of(&doc);
    let created = app
        .admin(
            Method::POST,
            "/organizations",
            Some(json!({"name": "Documented", "plan": "pro"})),
        )
        .await;
    created.expect(201);
    schemas.check("Envelope_CreatedOrganization", &created.body);
}

/// The developer API's document has an OpenAPI 3.1 `webhooks` section: every event, signed,
/// with its body's schema and an example that the schema accepts.
async fn the_webhooks_section_describes_every_event(app: TestApp) {
    let doc = app
        .send(request(Method::GET, "/openapi.json", None, None, &[]))
        .await
        .body;
    let schemas = xf_tests::Schemas::of(&doc);
    let section = doc["webhooks"].as_object().expect("a webhooks section");
    let mut names: Vec<&str> = section.keys().map(String::as_str).collect();
    names.sort_unstable();
    let mut all: Vec<&str> = xf_core::model::EventType::ALL
        .iter()
        .map(|e| e.as_str())
        .collect();
    all.sort_unstable();
    assert_eq!(names, all);
    for (event, item) in section {
        let post = &item["post"];
        assert_eq!(
            post["security"],
            json!([{"webhookSignature": []}]),
            "{event}"
        );
        let headers: Vec<&str> = post["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            headers,
            ["webhook-id", "webhook-timestamp", "webhook-signature"]
        );
        let content = &post["requestBody"]["content"]["application/json"];
        let target = content["schema"]["$ref"].as_str().unwrap();
        let name = target.rsplit('/').next().unwrap();
        assert_eq!(content["example"]["type"], event.as_str());
        schemas.check(name, &content["example"]);
        // A body of another event's type is refused.
        let mut wrong = content["example"].clone();
        wrong["type"] = json!("job.completed");
        if event != "job.completed" {
            let root = json!({"$ref": target, "components": doc["components"]});
            let validator = jsonschema::validator_for(&root).unwrap();
            assert!(!validator.is_valid(&wrong), "{event}");
        }
        // One union of every body, told apart by `type`.
        schemas.check("WebhookEvent", &content["example"]);
        let mapping = &doc["components"]["schemas"]["WebhookEvent"]["discriminator"]["mapping"];
        assert_eq!(mapping[event.as_str()], target, "{event}");
    }
    // A completed job always has its result.
    let completed = &section["job.completed"]["post"]["requestBody"]["content"]["application/json"];
    let mut without_result = completed["example"].clone();
    assert!(without_result["data"]["job"]["result"].is_object());
    without_result["data"]["job"]
        .as_object_mut()
        .unwrap()
        .remove("result");
    assert!(!schemas.accepts("JobCompletedEvent", &without_result));
    assert!(!schemas.accepts("WebhookEvent", &without_result));
    let failed = &section["job.failed"]["post"]["requestBody"]["content"]["application/json"];
    assert!(failed["example"]["data"]["job"].get("result").is_none());
    // Every other component is referred to (redocly's unused-components rule is off for
    // this one).
    let text = doc.to_string();
    let unused: Vec<&String> = doc["components"]["schemas"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|name| !text.contains(&format!("\"#/components/schemas/{name}\"")))
        .collect();
    assert_eq!(unused, ["WebhookEvent"]);
}

/// Each upload form lists as its own fields exactly the flat fields its platforms' settings
/// name (`x-flat-field` in each platform's nested schema, from the table the server reads
/// forms with): none missing, none the server would refuse as unknown.
async fn the_upload_forms_list_exactly_the_flat_settings(app: TestApp) {
    let doc = app
        .send(request(Method::GET, "/openapi.json", None, None, &[]))
        .await
        .body;
    let common = [
        "file",
        "fileId",
        "title",
        "description",
        "platforms",
        "scheduledAt",
        "isDraft",
        "thumbnail",
    ];
    for path in ["/media/videos", "/media/images", "/video/upload"] {
        let schema = &doc["paths"][path]["post"]["requestBody"]["content"]["multipart/form-data"]
            ["schema"]["properties"];
        let fields = schema.as_object().expect("the form's fields");
        let mut flat_in_form: Vec<&str> = Vec::new();
        let mut flat_of_settings: Vec<&str> = Vec::new();
        for (name, field) in fields {
            if xf_core::media::Platform::parse(name).is_some() {
                let nested = field["contentSchema"]["properties"]
                    .as_object()
                    .expect("a platform's nested settings");
                for setting in nested.values() {
                    let flat = setting["x-flat-field"].as_str().expect("an x-flat-field");
                    flat_of_settings.push(flat);
                }
            } else if !common.contains(&name.as_str()) {
                flat_in_form.push(name);
            }
        }
        flat_in_form.sort_unstable();
        flat_of_settings.sort_unstable();
        assert!(!flat_of_settings.is_empty(), "{path}");
        assert_eq!(flat_in_form, flat_of_settings, "{path}");
    }
}

crate::backends!(
    openapi_document_matches_the_router,
    the_admin_document_matches_its_router,
    the_webhooks_section_describes_every_event,
    the_upload_forms_list_exactly_the_flat_settings,
);
