//! Scans, crawls and batches.

use http::Method;
use serde_json::{json, Value};
use xf_tests::{request, TestApp};

use crate::{assert_time, org, property_id};

pub(crate) async fn scan_and_crawl_queue_pending_jobs(app: TestApp) {
    let org = org(&app, "Acme").await;
    let pid = property_id(&app, &org.live, "https://acme.example").await;

    let scan = app
        .post(
            &format!("/properties/{pid}/scans"),
            &org.live,
            json!({"maxPages": 50, "maxDepth": 2}),
        )
        .await;
    let data = scan.expect(202);
    let job = data["job"].as_object().unwrap();
    assert!(job["id"].as_str().unwrap().starts_with("job_"));
    assert_eq!(job["status"], "pending");
    assert_eq!(job["type"], "seo-scan");
    assert_eq!(job["propertyId"], pid.as_str());
    assert_time(&job["createdAt"]);
    assert!(!job.contains_key("progress"), "scans do not show progress");
    assert_eq!(data["crawlTier"], "advanced");
    assert_eq!(
        data["effectiveLimits"],
        json!({"maxPages": 50, "maxDepth": 2})
    );
    assert!(data["message"].as_str().unwrap().contains("queued"));
    assert!(!data["message"].as_str().unwrap().contains("clamped"));

    // No body: the plan's limits. Over the plan: clamped, and the message says so.
    let crawl = app
        .send(request(
            Method::POST,
            &format!("/properties/{pid}/crawls"),
            Some(&org.live),
            None,
            &[],
        ))
        .await;
    let data = crawl.expect(202);
    assert_eq!(data["job"]["progress"], 0);
    assert_eq!(
        data["effectiveLimits"],
        json!({"maxPages": 1000, "maxDepth": 5})
    );
    let clamped = app
        .post(
            &format!("/properties/{pid}/crawls"),
            &org.live,
            json!({"maxPages": 1_000_000_000, "maxDepth": 99}),
        )
        .await;
    let data = clamped.expect(202);
    assert_eq!(
        data["effectiveLimits"],
        json!({"maxPages": 1000, "maxDepth": 5})
    );
    assert!(data["message"].as_str().unwrap().contains("clamped"));

    let jobs = app.get("/jobs", &org.live).await;
    assert_eq!(jobs.expect(200)["jobs"].as_array().unwrap().len(), 3);
    let overview = app.get("/organization", &org.live).await;
    assert_eq!(overview.expect(200)["totals"]["activeJobs"], 3);
}

async fn scan_rejects_bad_input(app: TestApp) {
    let org = org(&app, "Acme").await;
    let pid = property_id(&app, &org.live, "https://acme.example").await;
    let path = format!("/properties/{pid}/scans");
    for (body, field) in [
        (json!({"maxPages": 0}), "maxPages"),
        (json!({"maxDepth": -3}), "maxDepth"),
        (json!({"maxPages": "ten"}), "maxPages"),
        (json!({"maxPages": 2.5}), "maxPages"),
        (json!([]), "body"),
    ] {
        let reply = app.post(&path, &org.live, body.clone()).await;
        reply.expect_error(400, "validation_error");
        assert_eq!(reply.body["error"]["details"][0]["field"], field, "{body}");
    }
    app.post("/properties/prop_missing/scans", &org.live, json!({}))
        .await
        .expect_error(404, "not_found");
    app.post("/properties/prop_missing/crawls", &org.live, json!({}))
        .await
        .expect_error(404, "not_found");
    let jobs = app.get("/jobs", &org.live).await;
    assert_eq!(jobs.expect(200)["jobs"], json!([]));
}

async fn scan_quota_is_enforced_monthly(app: TestApp) {
    let org = org(&app, "Acme").await;
    app.admin(
        Method::PATCH,
        &format!("/organizations/{}", org.id),
        Some(json!({"limits": {"scansPerMonth": 2}})),
    )
    .await
    .expect(200);
    let pid = property_id(&app, &org.live, "https://acme.example").await;
    let path = format!("/properties/{pid}/scans");
    app.post(&path, &org.live, json!({})).await.expect(202);
    app.post(&path, &org.live, json!({})).await.expect(202);
    let over = app.post(&path, &org.live, json!({})).await;
    over.expect_error(429, "quota_exceeded");
    let retry: u64 = over.header("retry-after").unwrap().parse().unwrap();
    // From 2026-11-16T10:20:30Z to 2026-12-01T00:00:00Z.
    assert_eq!(retry, 14 * 86_400 + 13 * 3600 + 39 * 60 + 30);
    let usage = app.get("/usage", &org.live).await;
    assert_eq!(usage.expect(200)["usage"]["counters"]["scans"], 2);
    // A new month renews the quota.
    app.clock
        .set(xf_core::time::Timestamp::parse_rfc3339("2026-12-01T00:00:01Z").unwrap());
    app.post(&path, &org.live, json!({})).await.expect(202);
}

pub(crate) async fn batch_items_succeed_or_fail_separately(app: TestApp) {
    let org = org(&app, "Acme").await;
    let a = property_id(&app, &org.live, "https://a.example").await;
    let b = property_id(&app, &org.live, "https://b.example").await;
    let reply = app
        .post(
            "/scans/batch",
            &org.live,
            json!({"scans": [
                {"propertyId": a, "maxPages": 10},
                {"propertyId": format!("prop_{}", "0".repeat(32))},
                {"propertyId": format!("prop_{}", "f".repeat(32))},
                {"propertyId": b},
            ]}),
        )
        .await;
    let results = reply.expect(202)["results"].as_array().unwrap().clone();
    assert_eq!(results.len(), 4);
    assert_eq!(results[0]["propertyId"], a.as_str());
    assert_eq!(results[0]["job"]["status"], "pending");
    assert_eq!(results[0]["job"]["type"], "seo-scan");
    assert_eq!(results[0]["job"]["tenantType"], "organization");
    assert_eq!(results[0]["job"]["tenantLabel"], "Acme");
    assert_eq!(results[0]["error"], Value::Null);
    assert_eq!(results[1]["job"], Value::Null);
    assert_eq!(results[1]["error"]["code"], "not_found");
    assert!(results[1]["error"]["message"].as_str().is_some());
    assert_eq!(results[2]["error"]["code"], "not_found");
    assert_eq!(results[3]["job"]["propertyId"], b.as_str());
    let jobs = app.get("/jobs", &org.live).await;
    assert_eq!(jobs.expect(200)["jobs"].as_array().unwrap().len(), 2);

    let too_many: Vec<Value> = (0..26).map(|_| json!({"propertyId": a})).collect();
    for body in [
        json!({"scans": []}),
        json!({"scans": too_many}),
        json!({}),
        json!({"scans": [{"maxPages": 3}]}),
        json!({"scans": "all"}),
    ] {
        app.post("/scans/batch", &org.live, body)
            .await
            .expect_error(400, "validation_error");
    }
    // An item that breaks the request's schema (a budget below 1, an id of another form) is
    // bad input: the whole batch is refused, naming the item, and nothing is queued.
    for (item, field) in [
        (json!({"propertyId": b, "maxDepth": 0}), "scans[1].maxDepth"),
        (
            json!({"propertyId": "not an id at all"}),
            "scans[1].propertyId",
        ),
        (json!({"propertyId": "prop_missing"}), "scans[1].propertyId"),
    ] {
        let reply = app
            .post(
                "/scans/batch",
                &org.live,
                json!({"scans": [{"propertyId": a}, item]}),
            )
            .await;
        reply.expect_error(400, "validation_error");
        assert_eq!(reply.body["error"]["details"][0]["field"], field);
    }
    let jobs = app.get("/jobs", &org.live).await;
    assert_eq!(jobs.expect(200)["jobs"].as_array().unwrap().len(), 2);
}

crate::backends!(
    scan_and_crawl_queue_pending_jobs,
    scan_rejects_bad_input,
    scan_quota_is_enforced_monthly,
    batch_items_succeed_or_fail_separately,
);
