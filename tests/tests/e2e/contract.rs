//! The document and the server agree: one test per kind of disagreement the contract check
//! once found, each asserting the behaviour we chose (docs/contributing.md, "Contract check") and that the
//! OpenAPI document states exactly that.

use http::Method;
use serde_json::{json, Value};
use xf_tests::{request, TestApp};

use crate::{org, property_id, scan};

async fn document(app: &TestApp) -> Value {
    let reply = app
        .send(request(Method::GET, "/openapi.json", None, None, &[]))
        .await;
    assert_eq!(reply.status, 200);
    reply.body
}

/// The schema of parameter `name` of `method path`.
fn parameter<'a>(doc: &'a Value, method: &str, path: &str, name: &str) -> &'a Value {
    doc["paths"][path][method]["parameters"]
        .as_array()
        .unwrap_or_else(|| panic!("{method} {path} has parameters"))
        .iter()
        .find(|p| p["name"] == name)
        .map(|p| &p["schema"])
        .unwrap_or_else(|| panic!("{method} {path} documents {name}"))
}

/// A component schema, following one `$ref` level.
fn schema<'a>(doc: &'a Value, name: &str) -> &'a Value {
    &doc["components"]["schemas"][name]
}

/// Empty values of known query parameters are bad values (400 naming the parameter), and the
/// document says so: each has a pattern, an enum or bounds that "" does not meet.
async fn empty_query_values_are_rejected(app: TestApp) {
    let org = org(&app, "Acme").await;
    let pid = property_id(&app, &org.live, "https://acme.example").await;
    let issues = format!("/properties/{pid}/issues");
    for (path, name) in [
        ("/properties", "cursor"),
        ("/properties", "include"),
        ("/properties", "limit"),
        ("/jobs", "status"),
        ("/jobs", "type"),
        ("/jobs", "propertyId"),
        ("/reports", "cursor"),
        (issues.as_str(), "scanKind"),
        (issues.as_str(), "status"),
    ] {
        let reply = app.get(&format!("{path}?{name}="), &org.live).await;
        reply.expect_error(400, "validation_error");
        assert_eq!(reply.body["error"]["details"][0]["field"], name, "{path}");
    }
    let doc = document(&app).await;
    for (path, name) in [
        ("/properties", "cursor"),
        ("/properties", "include"),
        ("/jobs", "type"),
        ("/jobs", "propertyId"),
    ] {
        // The server checks the very pattern published here (xf_core::params), which no
        // empty string matches: each is `^…+$` or has a `{n}` count.
        let pattern = parameter(&doc, "get", path, name)["pattern"]
            .as_str()
            .unwrap_or_else(|| panic!("{path} {name} has a pattern"));
        assert!(
            pattern.starts_with('^') && pattern.ends_with('$'),
            "{pattern}"
        );
    }
    assert_eq!(
        parameter(&doc, "get", "/jobs", "status")["enum"],
        json!(["pending", "processing", "completed", "failed", "cancelled"])
    );
}

/// Request bodies take no members beyond the documented ones (a typo is a 400, not a silently
/// dropped budget), and every request schema says `additionalProperties: false`.
async fn unknown_body_members_are_rejected(app: TestApp) {
    let org = org(&app, "Acme").await;
    let pid = property_id(&app, &org.live, "https://acme.example").await;
    for (path, body) in [
        (
            "/properties".to_owned(),
            json!({"url": "https://b.example", "owner": "me"}),
        ),
        (format!("/properties/{pid}/scans"), json!({"maxPage": 3})),
        (format!("/properties/{pid}/crawls"), json!({"depth": 2})),
        (
            "/scans/batch".to_owned(),
            json!({"scans": [{"propertyId": pid, "pages": 1}]}),
        ),
        (
            "/scans/batch".to_owned(),
            json!({"scans": [{"propertyId": pid}], "priority": 1}),
        ),
    ] {
        let reply = app.post(&path, &org.live, body.clone()).await;
        reply.expect_error(400, "validation_error");
        assert!(
            reply.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("unknown field"),
            "{path} {body}: {}",
            reply.body
        );
    }
    let jobs = app.get("/jobs", &org.live).await;
    assert_eq!(jobs.expect(200)["jobs"], json!([]));
    let doc = document(&app).await;
    for name in [
        "NewProperty",
        "ScanOptions",
        "BatchScanRequest",
        "BatchScanItem",
    ] {
        assert_eq!(
            schema(&doc, name)["additionalProperties"],
            json!(false),
            "{name}"
        );
    }
}

/// The optional body of scans and crawls may be absent, empty or `null`: all mean "the plan's
/// limits". The document declares the body optional and nullable.
async fn null_scan_body_means_defaults(app: TestApp) {
    let org = org(&app, "Acme").await;
    let pid = property_id(&app, &org.live, "https://acme.example").await;
    for endpoint in ["scans", "crawls"] {
        for body in [Some("null"), Some(" null "), Some(""), None] {
            let reply = app
                .send(request(
                    Method::POST,
                    &format!("/properties/{pid}/{endpoint}"),
                    Some(&org.live),
                    body.map(str::to_owned),
                    &[],
                ))
                .await;
            let data = reply.expect(202);
            assert_eq!(
                data["effectiveLimits"],
                json!({"maxPages": 1000, "maxDepth": 5}),
                "{endpoint} {body:?}"
            );
        }
        // White space alone is no JSON value, so it is not "no body" either.
        let reply = app
            .send(request(
                Method::POST,
                &format!("/properties/{pid}/{endpoint}"),
                Some(&org.live),
                Some("\n".to_owned()),
                &[],
            ))
            .await;
        reply.expect_error(400, "validation_error");
    }
    let doc = document(&app).await;
    for endpoint in ["scans", "crawls"] {
        let body =
            &doc["paths"][format!("/properties/{{propertyId}}/{endpoint}")]["post"]["requestBody"];
        assert_ne!(body["required"], json!(true), "{endpoint}");
        let schema = body["content"]["application/json"]["schema"].to_string();
        assert!(schema.contains("null"), "{endpoint}: {schema}");
    }
}

/// A batch holds 1 to 25 items: the server refuses 0 and 26, and the document says
/// `minItems: 1, maxItems: 25`.
async fn batch_size_is_bounded_in_both(app: TestApp) {
    let org = org(&app, "Acme").await;
    let pid = property_id(&app, &org.live, "https://acme.example").await;
    let items = |n: usize| -> Vec<Value> { (0..n).map(|_| json!({"propertyId": pid})).collect() };
    for n in [0, 26] {
        app.post("/scans/batch", &org.live, json!({ "scans": items(n) }))
            .await
            .expect_error(400, "validation_error");
    }
    for n in [1, 25] {
        let reply = app
            .post("/scans/batch", &org.live, json!({ "scans": items(n) }))
            .await;
        assert_eq!(reply.expect(202)["results"].as_array().unwrap().len(), n);
    }
    let doc = document(&app).await;
    let scans = &schema(&doc, "BatchScanRequest")["properties"]["scans"];
    assert_eq!(scans["minItems"], 1);
    assert_eq!(scans["maxItems"], xf_core::MAX_BATCH);
}

/// `X-Request-Id`: 1 to 128 visible ASCII characters are echoed; anything else is replaced by
/// a generated id, and the request is served. The document declares a plain string and says
/// so, instead of bounds the server would not enforce.
async fn malformed_request_ids_are_replaced(app: TestApp) {
    let org = org(&app, "Acme").await;
    let long = "a".repeat(129);
    let exactly = "b".repeat(128);
    for (sent, echoed) in [
        (long.as_str(), false),
        ("with space", false),
        ("caf\u{e9}", false),
        (exactly.as_str(), true),
        ("req-1!~", true),
    ] {
        let value = http::HeaderValue::from_bytes(sent.as_bytes()).unwrap();
        let mut built = request(Method::GET, "/organization", Some(&org.live), None, &[]);
        built.headers_mut().insert("x-request-id", value);
        let reply = app.send(built).await;
        let id = reply.header("x-request-id").unwrap().to_owned();
        reply.expect(200);
        assert_eq!(reply.body["meta"]["requestId"], id.as_str());
        if echoed {
            assert_eq!(id, sent);
        } else {
            assert!(id.starts_with("req_") && id != sent, "{sent:?} -> {id}");
        }
    }
    let doc = document(&app).await;
    let header = parameter(&doc, "get", "/organization", "X-Request-Id");
    assert_eq!(header, &json!({"type": "string"}));
}

/// Numbers outside declared bounds, unknown `include` values and ids of the wrong form: the
/// server refuses exactly what the document excludes.
async fn bounds_includes_and_ids_agree(app: TestApp) {
    let org = org(&app, "Acme").await;
    let pid = property_id(&app, &org.live, "https://acme.example").await;
    let doc = document(&app).await;
    let limit = parameter(&doc, "get", "/jobs", "limit");
    assert_eq!(
        (limit["minimum"].clone(), limit["maximum"].clone()),
        (json!(1), json!(100))
    );
    for bad in ["0", "101", "-1", "1.5", "ten", "99999999999999999999999"] {
        app.get(&format!("/jobs?limit={bad}"), &org.live)
            .await
            .expect_error(400, "validation_error");
    }
    for good in ["1", "100"] {
        app.get(&format!("/jobs?limit={good}"), &org.live)
            .await
            .expect(200);
    }
    // `maxPages` may be null (the plan's limit) or an integer within the bounds.
    let budget = &schema(&doc, "ScanOptions")["properties"]["maxPages"]["oneOf"][1];
    assert_eq!(budget["minimum"], 1);
    assert_eq!(budget["maximum"], xf_core::params::CrawlBudget::MAX);
    for bad in [json!(0), json!(1_000_000_001u64), json!(2.5), json!("5")] {
        app.post(
            &format!("/properties/{pid}/scans"),
            &org.live,
            json!({ "maxPages": bad }),
        )
        .await
        .expect_error(400, "validation_error");
    }
    // `5.0` is an integer to JSON Schema, so it is one to the server too.
    app.post(
        &format!("/properties/{pid}/scans"),
        &org.live,
        json!({"maxPages": 5.0}),
    )
    .await
    .expect(202);

    let include = parameter(&doc, "get", "/properties", "include");
    assert_eq!(include["pattern"], "^(gsc|lastScan)(,(gsc|lastScan))*$");
    for bad in ["owner", "gsc,", "gsc,,lastScan", "GSC", "%20gsc"] {
        app.get(&format!("/properties/{pid}?include={bad}"), &org.live)
            .await
            .expect_error(400, "validation_error");
    }
    app.get(
        &format!("/properties/{pid}?include=lastScan,gsc"),
        &org.live,
    )
    .await
    .expect(200);

    // Path ids have a documented form; one of another form names nothing: 404, and no store
    // ever sees it (a NUL included).
    let id = parameter(&doc, "get", "/properties/{propertyId}", "propertyId");
    assert_eq!(id["pattern"], "^prop_[0-9a-f]{32}$");
    let job = parameter(&doc, "get", "/jobs/{jobId}", "jobId");
    assert_eq!(job["pattern"], "^job_[0-9a-f]{32}$");
    for path in [
        "/properties/nope",
        "/properties/%00",
        "/properties/prop_XYZ/issues",
        "/jobs/job_1",
        "/reports/short",
    ] {
        app.get(path, &org.live)
            .await
            .expect_error(404, "not_found");
    }
    // A well-formed filter id that names nothing is an empty list; a malformed one a 400.
    let missing = format!("prop_{}", "0".repeat(32));
    let reply = app
        .get(&format!("/jobs?propertyId={missing}"), &org.live)
        .await;
    assert_eq!(reply.expect(200)["jobs"], json!([]));
    app.get("/jobs?propertyId=acme", &org.live)
        .await
        .expect_error(400, "validation_error");
    let job_id = scan(&app, &org.live, &pid).await;
    app.get(&format!("/jobs/{job_id}"), &org.live)
        .await
        .expect(200);
}

/// A parameter sent twice is ambiguous: a 400 naming it, not a silent pick.
async fn repeated_parameters_are_rejected(app: TestApp) {
    let org = org(&app, "Acme").await;
    let reply = app.get("/jobs?limit=5&limit=6", &org.live).await;
    reply.expect_error(400, "validation_error");
    assert!(reply.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("limit"));
    // Unknown parameters are ignored, as docs/api-behaviour.md says, even when repeated.
    app.get("/jobs?utm=1&utm=2", &org.live).await.expect(200);
}

crate::backends!(
    empty_query_values_are_rejected,
    unknown_body_members_are_rejected,
    null_scan_body_means_defaults,
    batch_size_is_bounded_in_both,
    malformed_request_ids_are_replaced,
    bounds_includes_and_ids_agree,
    repeated_parameters_are_rejected,
);
