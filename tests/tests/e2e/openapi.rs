//! The OpenAPI document: served, complete, and matching the router.

use http::Method;
use serde_json::Value;
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
    "POST /properties/{propertyId}/scans",
    "POST /properties/{propertyId}/crawls",
    "POST /scans/batch",
    "GET /jobs",
    "GET /jobs/{jobId}",
    "POST /jobs/{jobId}/cancel",
    "GET /reports",
    "GET /reports/{token}",
    "GET /usage",
    "GET /limits",
    "GET /rate-limits",
    "GET /webhooks",
    "POST /webhooks",
    "PATCH /webhooks/{webhookId}",
    "DELETE /webhooks/{webhookId}",
    "POST /webhooks/{webhookId}/test",
    "POST /webhooks/{webhookId}/rotate-secret",
    "GET /webhooks/{webhookId}/deliveries",
];

async fn openapi_document_matches_the_router(app: TestApp) {
    let reply = app
        .send(request(Method::GET, "/openapi.json", None, None, &[]))
        .await;
    assert_eq!(reply.status, 200);
    let doc = reply.body;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    let paths = doc["paths"].as_object().unwrap();
    let mut documented: Vec<String> = paths
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .filter(|m| ["get", "post", "put", "patch", "delete"].contains(&m.as_str()))
                .map(move |m| format!("{} {path}", m.to_uppercase()))
        })
        .collect();
    documented.sort();
    let mut expected: Vec<String> = EXPECTED.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(documented, expected);

    // Each documented operation is routed: with a key it never falls through to the
    // router's 404 or 405, and authenticated operations answer 401 without one.
    let org = org(&app, "Acme").await;
    for operation in EXPECTED {
        let (method, path) = operation.split_once(' ').unwrap();
        let concrete = path
            .replace("{propertyId}", "prop_x")
            .replace("{jobId}", "job_x")
            .replace("{token}", "tok_x")
            .replace("{webhookId}", "wh_x");
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
        for (status, response) in responses {
            assert!(
                response["headers"]["X-Request-Id"].is_object(),
                "{operation} {status}"
            );
            assert!(
                response["content"]["application/json"]["schema"].is_object(),
                "{operation} {status}"
            );
        }
        if path == "/health" {
            continue;
        }
        let without = app.send(request(method, &concrete, None, body, &[])).await;
        without.expect_error(401, "api_key_invalid");
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

crate::backends!(openapi_document_matches_the_router);
