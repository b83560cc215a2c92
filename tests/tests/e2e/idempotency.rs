//! Idempotency keys on the writes that create things.

use std::collections::HashSet;

use http::Method;
use serde_json::json;
use xf_tests::{request, Reply, TestApp};

use crate::org;

/// `POST path` with `body`, the live key `api_key` and `Idempotency-Key: key`.
async fn post_keyed(app: &TestApp, api_key: &str, path: &str, body: String, key: &str) -> Reply {
    app.send(request(
        Method::POST,
        path,
        Some(api_key),
        Some(body),
        &[("idempotency-key", key)],
    ))
    .await
}

async fn concurrent_creates_with_one_key_make_one_property(app: TestApp) {
    let org = org(&app, "Acme").await;
    let body = json!({"url": "https://once.example", "name": "Once"}).to_string();
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let app = app.clone();
            let body = body.clone();
            let key = org.live.clone();
            tokio::spawn(
                async move { post_keyed(&app, &key, "/properties", body, "create-once").await },
            )
        })
        .collect();
    let mut ids = HashSet::new();
    let mut created = 0;
    let mut first = None;
    for task in tasks {
        let reply = task.await.unwrap();
        if let Some(id) = reply.created_property_id() {
            created += 1;
            ids.insert(id);
            first.get_or_insert(reply.body["data"].clone());
        }
    }
    assert!(created >= 1);
    assert_eq!(ids.len(), 1, "every 201 is the same property");
    let list = app.get("/properties", &org.live).await;
    let properties = list.expect(200)["properties"].as_array().unwrap().clone();
    assert_eq!(properties.len(), 1);
    let id = properties[0]["id"].as_str().unwrap();
    assert!(ids.contains(id));

    // A retry after the first finished replays it, with the new request id.
    let replay = app
        .send(request(
            Method::POST,
            "/properties",
            Some(&org.live),
            Some(body.clone()),
            &[
                ("idempotency-key", "create-once"),
                ("x-request-id", "retry-1"),
            ],
        ))
        .await;
    assert_eq!(replay.expect(201)["property"]["id"], id);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    // The kept answer (written with the property, in its transaction) is the one first sent.
    assert_eq!(Some(&replay.body["data"]), first.as_ref());
    assert_eq!(replay.body["meta"]["requestId"], "retry-1");

    // Another body with the same key: 422.
    let other = json!({"url": "https://twice.example"}).to_string();
    post_keyed(&app, &org.live, "/properties", other, "create-once")
        .await
        .expect_error(422, "idempotency_key_reused");
    // Keys are scoped to the organization.
    let elsewhere = crate::org(&app, "Elsewhere").await;
    post_keyed(&app, &elsewhere.live, "/properties", body, "create-once")
        .await
        .expect(201);
}

async fn idempotency_rules(app: TestApp) {
    let org = org(&app, "Acme").await;
    let send = |body: serde_json::Value, key: String| {
        let app = app.clone();
        let live = org.live.clone();
        async move { post_keyed(&app, &live, "/properties", body.to_string(), &key).await }
    };
    send(json!({"url": "https://a.example"}), "k".repeat(129))
        .await
        .expect_error(400, "validation_error");
    send(json!({"url": "https://a.example"}), String::new())
        .await
        .expect_error(400, "validation_error");
    // A validation failure is not kept: the corrected request with the same key runs.
    send(json!({"url": "nope"}), "fix-me".into())
        .await
        .expect_error(400, "validation_error");
    let fixed = send(json!({"url": "https://a.example"}), "fix-me".into()).await;
    fixed.expect(201);
    assert!(fixed.header("idempotent-replayed").is_none());
    // A 409 conflict is a real answer and is kept.
    let conflict = send(json!({"url": "https://a.example"}), "dup".into()).await;
    conflict.expect_error(409, "conflict");
    let again = send(json!({"url": "https://a.example"}), "dup".into()).await;
    again.expect_error(409, "conflict");
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    // Records expire after 24 hours.
    app.clock.advance(chrono::Duration::hours(25));
    let after = send(json!({"url": "https://a.example"}), "fix-me".into()).await;
    after.expect_error(409, "conflict");
    assert!(after.header("idempotent-replayed").is_none());

    // Scans and batches take keys too.
    let pid = crate::property_id(&app, &org.live, "https://scan.example").await;
    for path in [
        format!("/properties/{pid}/scans"),
        format!("/properties/{pid}/crawls"),
    ] {
        let first = post_keyed(&app, &org.live, &path, "{}".into(), &path).await;
        let second = post_keyed(&app, &org.live, &path, "{}".into(), &path).await;
        assert_eq!(first.expect(202), second.expect(202));
        assert_eq!(second.header("idempotent-replayed"), Some("true"));
    }
    let batch = json!({"scans": [{"propertyId": pid}]}).to_string();
    let first = post_keyed(&app, &org.live, "/scans/batch", batch.clone(), "b").await;
    let second = post_keyed(&app, &org.live, "/scans/batch", batch, "b").await;
    assert_eq!(first.expect(202), second.expect(202));
    let jobs = app.get("/jobs", &org.live).await;
    assert_eq!(jobs.expect(200)["jobs"].as_array().unwrap().len(), 3);
}

/// A keyed write is the same request however the API is mounted: sent first to a service
/// without the prefix and again through `Mounts` (whose routes carry `/api/v1`), it replays,
/// so a host that changes how it mounts the API, or instances mounted two ways, lose no retry.
/// (`media::uploads_with_an_idempotency_key_happen_once` does the same for the media API's two
/// base URLs.)
async fn a_retry_replays_however_the_api_is_mounted(app: TestApp) {
    let org = org(&app, "Acme").await;
    let body = json!({"url": "https://mounted.example"}).to_string();
    let first = post_keyed(&app, &org.live, "/properties", body.clone(), "mounted-1").await;
    let id = first.expect(201)["property"]["id"].clone();
    let again = app
        .send_mounted(request(
            Method::POST,
            "/api/v1/properties",
            Some(&org.live),
            Some(body),
            &[("idempotency-key", "mounted-1")],
        ))
        .await;
    assert_eq!(again.expect(201)["property"]["id"], id);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
}

crate::backends!(
    concurrent_creates_with_one_key_make_one_property,
    idempotency_rules,
    a_retry_replays_however_the_api_is_mounted
);
