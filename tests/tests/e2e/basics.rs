//! Health, envelopes, request ids, unknown routes, authentication and plans.

use http::Method;
use serde_json::json;
use xf_core::plans::Entitlement::DeveloperApi;
use xf_tests::{request, TestApp};

use crate::{assert_time, org};

pub(crate) async fn health_is_public_and_shaped(app: TestApp) {
    let reply = app
        .send(request(Method::GET, "/health", None, None, &[]))
        .await;
    let data = reply.expect(200);
    assert_eq!(data["status"], "ok");
    assert_eq!(data["version"], "v1");
    assert_eq!(data["apiVersion"], "1.0.0");
    assert_time(&data["timestamp"]);
    assert!(data["statusPage"].as_str().unwrap().starts_with("https://"));
    assert!(reply
        .header("x-developer-api-ratelimit-read-remaining")
        .is_none());
}

async fn request_ids_are_echoed_or_generated(app: TestApp) {
    let echoed = app
        .send(request(
            Method::GET,
            "/health",
            None,
            None,
            &[("x-request-id", "abc-123")],
        ))
        .await;
    assert_eq!(echoed.header("x-request-id"), Some("abc-123"));
    assert_eq!(echoed.body["meta"]["requestId"], "abc-123");

    let too_long = "x".repeat(129);
    let generated = app
        .send(request(
            Method::GET,
            "/health",
            None,
            None,
            &[("x-request-id", &too_long)],
        ))
        .await;
    let id = generated.header("x-request-id").unwrap().to_owned();
    assert!(id.starts_with("req_"), "{id}");
    assert_eq!(generated.body["meta"]["requestId"], id.as_str());

    // Errors carry it too.
    let error = app
        .send(request(
            Method::GET,
            "/organization",
            None,
            None,
            &[("x-request-id", "err-1")],
        ))
        .await;
    error.expect_error(401, "api_key_invalid");
    assert_eq!(error.body["meta"]["requestId"], "err-1");
    assert_eq!(error.header("x-request-id"), Some("err-1"));

    // Quotes and backslashes are visible characters: echoed as sent, escaped in the JSON of
    // a success and of an error alike.
    let quoted = r#"a"b\c"#;
    for path in ["/health", "/organization"] {
        let reply = app
            .send(request(
                Method::GET,
                path,
                None,
                None,
                &[("x-request-id", quoted)],
            ))
            .await;
        assert_eq!(reply.header("x-request-id"), Some(quoted), "{path}");
        assert_eq!(reply.body["meta"]["requestId"], quoted, "{path}");
    }
}

async fn unknown_paths_and_methods_use_the_envelope(app: TestApp) {
    let org = org(&app, "Acme").await;
    app.get("/nope", &org.live)
        .await
        .expect_error(404, "not_found");
    let wrong = app
        .send(request(
            Method::DELETE,
            "/properties",
            Some(&org.live),
            None,
            &[],
        ))
        .await;
    wrong.expect_error(405, "method_not_allowed");
    let allow = wrong.header("allow").unwrap();
    assert!(allow.contains("GET") && allow.contains("POST"), "{allow}");
    let wrong = app
        .send(request(Method::PUT, "/health", None, None, &[]))
        .await;
    wrong.expect_error(405, "method_not_allowed");
    // The media API answers in its own envelope, below its own paths only.
    let wrong = app
        .send(request(Method::DELETE, "/media/videos", None, None, &[]))
        .await;
    wrong.expect_error(405, "method_not_allowed");
    assert_eq!(wrong.body["success"], false, "{}", wrong.body);
    let allow = wrong.header("allow").unwrap();
    assert!(allow.contains("GET") && allow.contains("POST"), "{allow}");
    for path in ["/media", "/media/nope", "/media/videos/a/b", "/channels/x"] {
        let unknown = app.send(request(Method::GET, path, None, None, &[])).await;
        unknown.expect_error(404, "not_found");
        assert_eq!(unknown.body["success"], false, "{path}: {}", unknown.body);
    }
    for path in ["/video/other", "/mediax", "/channelsx"] {
        let unknown = app.send(request(Method::GET, path, None, None, &[])).await;
        unknown.expect_error(404, "not_found");
        assert!(
            unknown.body.get("success").is_none(),
            "{path}: {}",
            unknown.body
        );
    }
}

async fn keys_must_be_valid_unrevoked_and_entitled(app: TestApp) {
    let org = org(&app, "Acme").await;
    app.send(request(Method::GET, "/organization", None, None, &[]))
        .await
        .expect_error(401, "api_key_invalid");
    for bad in ["xf_live_unknown", "garbage", ""] {
        app.get("/organization", bad)
            .await
            .expect_error(401, "api_key_invalid");
    }
    // A good key in the media API's header is told where this API reads it.
    let wrong_header = app
        .send(request(
            Method::GET,
            "/organization",
            None,
            None,
            &[("x-api-key", org.live.as_str())],
        ))
        .await;
    wrong_header.expect_error(401, "api_key_invalid");
    let message = wrong_header.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("Authorization: Bearer"), "{message}");
    let basic = app
        .send(request(
            Method::GET,
            "/organization",
            None,
            None,
            &[("authorization", &format!("Basic {}", org.live))],
        ))
        .await;
    basic.expect_error(401, "api_key_invalid");
    // A live key's secret with the test prefix is not the same key.
    let swapped = org.live.replacen("xf_live_", "xf_test_", 1);
    app.get("/organization", &swapped)
        .await
        .expect_error(401, "api_key_invalid");

    let created = app
        .admin(
            Method::POST,
            &format!("/organizations/{}/api-keys", org.id),
            Some(json!({"mode": "live"})),
        )
        .await;
    let data = created.expect(201);
    let key = data["key"].as_str().unwrap().to_owned();
    let key_id = data["id"].as_str().unwrap().to_owned();
    assert!(key.starts_with("xf_live_") && key_id.starts_with("key_"));
    // What a request finds without asking the store: answers for no key and malformed keys,
    // nothing for a key never looked up, the caller once it has been.
    let cached = |key: Option<&str>| {
        app.xf.authenticate_cached(key, DeveloperApi).map(|answer| {
            answer
                .map(|caller| caller.key_id.to_string())
                .map_err(|error| error.code())
        })
    };
    assert_eq!(cached(None), Some(Err("api_key_invalid")));
    assert_eq!(cached(Some("garbage")), Some(Err("api_key_invalid")));
    assert_eq!(cached(Some(&key)), None);
    app.get("/organization", &key).await.expect(200);
    assert_eq!(cached(Some(&key)), Some(Ok(key_id.clone())));
    let revoked = app
        .admin(Method::DELETE, &format!("/api-keys/{key_id}"), None)
        .await;
    assert_eq!(revoked.expect(200)["revoked"], true);
    // The revoking instance forgets the lookup at once; the next request finds it revoked.
    assert_eq!(cached(Some(&key)), None);
    app.get("/organization", &key)
        .await
        .expect_error(401, "api_key_invalid");
    assert_eq!(cached(Some(&key)), Some(Err("api_key_invalid")));

    for plan in ["free", "plus", "pro"] {
        let other = app.organization(&format!("On {plan}"), plan).await;
        app.get("/organization", &other.live_key)
            .await
            .expect_error(403, "plan_required");
    }
    let starter = app.organization("Starter", "starter").await;
    app.get("/organization", &starter.live_key)
        .await
        .expect(200);
}

pub(crate) async fn organization_overview(app: TestApp) {
    let org = org(&app, "Acme Inc").await;
    crate::property(&app, &org.live, "https://acme.example").await;
    let data = app
        .get("/organization", &org.live)
        .await
        .expect(200)
        .clone();
    assert_eq!(data["organization"]["id"], org.id.as_str());
    assert_eq!(data["organization"]["name"], "Acme Inc");
    assert_eq!(data["organization"]["plan"], "growth");
    assert_eq!(data["usage"]["plan"], "growth");
    assert_eq!(data["usage"]["periodLabel"], "November 2026");
    assert_eq!(data["totals"]["properties"], 1);
    assert_eq!(data["totals"]["activeJobs"], 0);
}

pub(crate) async fn admin_api_requires_its_token(app: TestApp) {
    let no_token = app
        .send_admin(request(
            Method::POST,
            "/organizations",
            None,
            Some(json!({"name": "X", "plan": "growth"}).to_string()),
            &[],
        ))
        .await;
    no_token.expect_error(401, "admin_token_invalid");
    let wrong = app
        .send_admin(request(
            Method::POST,
            "/organizations",
            Some("wrong"),
            Some(json!({"name": "X", "plan": "growth"}).to_string()),
            &[],
        ))
        .await;
    wrong.expect_error(401, "admin_token_invalid");
    let created = app
        .admin(
            Method::POST,
            "/organizations",
            Some(json!({"name": "X", "plan": "growth", "shopDomain": "x.myshop.example"})),
        )
        .await;
    let data = created.expect(201);
    assert!(data["organization"]["id"]
        .as_str()
        .unwrap()
        .starts_with("org_"));
    assert_eq!(data["organization"]["shopDomain"], "x.myshop.example");
    assert!(data["liveKey"].as_str().unwrap().starts_with("xf_live_"));
    assert!(data["testKey"].as_str().unwrap().starts_with("xf_test_"));
    app.admin(
        Method::POST,
        "/organizations",
        Some(json!({"name": "X", "plan": "gold"})),
    )
    .await
    .expect_error(400, "validation_error");
    app.admin(
        Method::POST,
        "/organizations",
        Some(json!({"name": "", "plan": "growth"})),
    )
    .await
    .expect_error(400, "validation_error");
    app.admin(
        Method::PATCH,
        "/organizations/org_missing",
        Some(json!({"plan": "starter"})),
    )
    .await
    .expect_error(404, "not_found");
    app.admin(
        Method::PATCH,
        &format!(
            "/organizations/{}",
            data["organization"]["id"].as_str().unwrap()
        ),
        Some(json!({"limits": {"readPerHour": -1}})),
    )
    .await
    .expect_error(400, "validation_error");
    let org_path = format!(
        "/organizations/{}",
        data["organization"]["id"].as_str().unwrap()
    );
    // Beyond the documented maximum, an array for the object, a fraction: refused. An integer
    // written as JSON Schema allows (`5.0`) is an integer.
    for limits in [
        json!({"scansPerMonth": 1_000_000_000_001_u64}),
        json!([null, null]),
        json!({"maxPages": 2.5}),
    ] {
        let refused = app
            .admin(Method::PATCH, &org_path, Some(json!({ "limits": limits })))
            .await;
        refused.expect_error(400, "validation_error");
    }
    let patched = app
        .admin(
            Method::PATCH,
            &org_path,
            Some(json!({"limits": {"maxPages": 500.0}})),
        )
        .await;
    assert_eq!(
        patched.expect(200)["organization"]["limits"]["maxPages"],
        500
    );
    app.admin(Method::GET, "/nowhere", None)
        .await
        .expect_error(404, "not_found");
}

async fn max_active_keys_is_enforced(app: TestApp) {
    let org = org(&app, "Acme").await;
    app.admin(
        Method::PATCH,
        &format!("/organizations/{}", org.id),
        Some(json!({"limits": {"maxActiveKeys": 3}})),
    )
    .await
    .expect(200);
    let path = format!("/organizations/{}/api-keys", org.id);
    app.admin(Method::POST, &path, Some(json!({"mode": "test"})))
        .await
        .expect(201);
    app.admin(Method::POST, &path, Some(json!({"mode": "live"})))
        .await
        .expect_error(409, "conflict");
    app.admin(Method::POST, &path, Some(json!({"mode": "sandbox"})))
        .await
        .expect_error(400, "validation_error");
}

async fn malformed_paths_are_answered_in_the_envelope(app: TestApp) {
    let org = org(&app, "Acme").await;
    for path in ["/jobs/%FF", "/properties/%C3%28/issues", "/reports/%E2%82"] {
        app.get(path, &org.live)
            .await
            .expect_error(400, "validation_error");
    }
    app.post("/jobs/%FF/cancel", &org.live, json!({}))
        .await
        .expect_error(400, "validation_error");
}

crate::backends!(
    health_is_public_and_shaped,
    request_ids_are_echoed_or_generated,
    unknown_paths_and_methods_use_the_envelope,
    keys_must_be_valid_unrevoked_and_entitled,
    organization_overview,
    admin_api_requires_its_token,
    max_active_keys_is_enforced,
    malformed_paths_are_answered_in_the_envelope,
);
