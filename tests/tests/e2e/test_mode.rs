//! Test keys: writes return deterministic mocks and change nothing.

use serde_json::json;
use xf_tests::TestApp;

use crate::{org, property_id, scan};

async fn test_key_writes_are_deterministic_and_change_nothing(app: TestApp) {
    let org = org(&app, "Acme").await;
    let pid = property_id(&app, &org.live, "https://real.example").await;
    let pending = scan(&app, &org.live, &pid).await;
    // What a test key may change is its own `lastUsedAt` (the admin API's key list shows it),
    // nothing else: the dumps are compared without the keys' last use.
    let dump = || async {
        let mut dump = app.store.dump().await.unwrap();
        for key in &mut dump.api_keys {
            key.last_used_at = None;
        }
        dump
    };
    let before = dump().await;
    let usage_before = app.get("/usage", &org.live).await.expect(200)["usage"]["counters"].clone();

    let writes = [
        (
            "/properties".to_owned(),
            json!({"url": "https://mock.example", "name": "Mock"}),
            201,
        ),
        (
            format!("/properties/{pid}/scans"),
            json!({"maxPages": 5}),
            202,
        ),
        (format!("/properties/{pid}/crawls"), json!({}), 202),
        (
            "/scans/batch".to_owned(),
            json!({"scans": [{"propertyId": pid}, {"propertyId": format!("prop_{}", "0".repeat(32))}]}),
            202,
        ),
        (format!("/jobs/{pending}/cancel"), json!({}), 200),
    ];
    for (path, body, status) in &writes {
        let first = app.post(path, &org.test, body.clone()).await;
        app.clock.advance(chrono::Duration::minutes(5));
        let second = app.post(path, &org.test, body.clone()).await;
        assert_eq!(first.expect(*status), second.expect(*status), "{path}");
        assert!(second.header("idempotent-replayed").is_none());
    }
    let created = app
        .post(
            "/properties",
            &org.test,
            json!({"url": "https://mock.example", "name": "Mock"}),
        )
        .await;
    let property = &created.expect(201)["property"];
    assert!(property["id"].as_str().unwrap().starts_with("prop_"));
    // Timestamps are fixed at the start of the current UTC day.
    assert_eq!(property["createdAt"], "2026-11-16T00:00:00.000Z");
    let cancelled = app
        .post(&format!("/jobs/{pending}/cancel"), &org.test, json!({}))
        .await;
    assert_eq!(cancelled.expect(200)["job"]["status"], "cancelled");

    // Different requests get different ids; validation and lookups still apply.
    let other = app
        .post(
            "/properties",
            &org.test,
            json!({"url": "https://other.example"}),
        )
        .await;
    assert_ne!(other.expect(201)["property"]["id"], property["id"]);
    app.post(
        "/properties",
        &org.test,
        json!({"url": "https://real.example"}),
    )
    .await
    .expect_error(409, "conflict");
    app.post("/properties", &org.test, json!({"url": "bad"}))
        .await
        .expect_error(400, "validation_error");
    app.post("/properties/prop_nope/scans", &org.test, json!({}))
        .await
        .expect_error(404, "not_found");

    assert_eq!(dump().await, before, "test keys changed the store");
    let usage_after = app.get("/usage", &org.live).await.expect(200)["usage"]["counters"].clone();
    assert_eq!(usage_before, usage_after);
    // Reads with a test key see the real data.
    let list = app.get("/properties", &org.test).await;
    let properties = list.expect(200)["properties"].as_array().unwrap().clone();
    assert_eq!(properties.len(), 1);
    assert_eq!(properties[0]["id"], pid.as_str());
}

crate::backends!(test_key_writes_are_deterministic_and_change_nothing);
