//! Rate limits and tenant isolation.

use std::sync::Arc;

use http::Method;
use serde_json::json;
use xf_core::testing::Counting;
use xf_tests::{request, TestApp};

use crate::{complete, org, property_id, scan};

async fn read_limits_count_down_and_reset_with_the_hour(app: TestApp) {
    let org = org(&app, "Acme").await;
    let patched = app
        .admin(
            Method::PATCH,
            &format!("/organizations/{}", org.id),
            Some(json!({"limits": {"readPerHour": 3, "writePerHour": 2}})),
        )
        .await;
    assert_eq!(
        patched.expect(200)["organization"]["limits"]["readPerHour"],
        3
    );
    for remaining in ["2", "1", "0"] {
        let reply = app.get("/organization", &org.live).await;
        reply.expect(200);
        assert_eq!(
            reply.header("x-developer-api-ratelimit-read-remaining"),
            Some(remaining)
        );
        assert_eq!(
            reply.header("x-developer-api-ratelimit-write-remaining"),
            Some("2")
        );
    }
    let limited = app.get("/organization", &org.live).await;
    limited.expect_error(429, "rate_limit");
    // 10:20:30 -> 11:00:00.
    assert_eq!(limited.header("retry-after"), Some("2370"));
    // A read over the limit is refused before its handler runs: the missing property is
    // never looked up.
    let missing = app
        .get(
            "/properties/prop_0123456789abcdef0123456789abcdef",
            &org.live,
        )
        .await;
    missing.expect_error(429, "rate_limit");
    assert_eq!(missing.header("retry-after"), Some("2370"));
    assert_eq!(
        limited.header("x-developer-api-ratelimit-read-remaining"),
        Some("0")
    );
    // Health is never counted; writes have their own window.
    app.send(request(Method::GET, "/health", None, None, &[]))
        .await
        .expect(200);
    let write = app
        .post(
            "/properties",
            &org.live,
            json!({"url": "https://a.example"}),
        )
        .await;
    write.expect(201);
    assert_eq!(
        write.header("x-developer-api-ratelimit-write-remaining"),
        Some("1")
    );
    assert_eq!(
        write.header("x-developer-api-ratelimit-read-remaining"),
        Some("0")
    );

    app.clock.advance(chrono::Duration::seconds(2370));
    let again = app.get("/organization", &org.live).await;
    again.expect(200);
    assert_eq!(
        again.header("x-developer-api-ratelimit-read-remaining"),
        Some("2")
    );
}

async fn write_limits_per_key_and_per_organization(app: TestApp) {
    let org = org(&app, "Acme").await;
    app.admin(
        Method::PATCH,
        &format!("/organizations/{}", org.id),
        Some(json!({"limits": {"writePerHour": 2, "orgWriteDaily": 3}})),
    )
    .await
    .expect(200);
    let other_key = app
        .admin(
            Method::POST,
            &format!("/organizations/{}/api-keys", org.id),
            Some(json!({"mode": "live"})),
        )
        .await
        .expect(201)["key"]
        .as_str()
        .unwrap()
        .to_owned();
    app.post(
        "/properties",
        &org.live,
        json!({"url": "https://a.example"}),
    )
    .await
    .expect(201);
    let second = app
        .post(
            "/properties",
            &org.live,
            json!({"url": "https://b.example"}),
        )
        .await;
    second.expect(201);
    assert_eq!(
        second.header("x-developer-api-ratelimit-write-remaining"),
        Some("0")
    );
    let limited = app
        .post(
            "/properties",
            &org.live,
            json!({"url": "https://c.example"}),
        )
        .await;
    limited.expect_error(429, "rate_limit");
    // The other key still has its hourly writes, but the organization has one daily write left.
    let third = app
        .post(
            "/properties",
            &other_key,
            json!({"url": "https://c.example"}),
        )
        .await;
    third.expect(201);
    assert_eq!(
        third.header("x-developer-api-ratelimit-write-remaining"),
        Some("0")
    );
    let daily = app
        .post(
            "/properties",
            &other_key,
            json!({"url": "https://d.example"}),
        )
        .await;
    daily.expect_error(429, "rate_limit");
    // 10:20:30 -> next midnight.
    assert_eq!(
        daily.header("retry-after"),
        Some(&*(13 * 3600 + 39 * 60 + 30).to_string())
    );
    // Rejected requests were not counted and created nothing.
    let list = app.get("/properties", &org.live).await;
    assert_eq!(list.expect(200)["properties"].as_array().unwrap().len(), 3);
    app.clock.advance(chrono::Duration::hours(14));
    app.post(
        "/properties",
        &org.live,
        json!({"url": "https://d.example"}),
    )
    .await
    .expect(201);
}

async fn other_organizations_ids_are_not_found(app: TestApp) {
    let owner = org(&app, "Owner").await;
    let intruder = org(&app, "Intruder").await;
    let pid = property_id(&app, &owner.live, "https://owner.example").await;
    let job = scan(&app, &owner.live, &pid).await;
    let pending = scan(&app, &owner.live, &pid).await;
    complete(&app, &job, 80).await;
    let report = app
        .admin(
            Method::POST,
            "/reports",
            Some(json!({"propertyId": pid, "scanId": job, "expiresAt": "2030-01-01T00:00:00Z"})),
        )
        .await;
    let token = report.expect(201)["report"]["token"]
        .as_str()
        .unwrap()
        .to_owned();

    for key in [&intruder.live, &intruder.test] {
        for path in [
            format!("/properties/{pid}"),
            format!("/properties/{pid}/issues"),
            format!("/jobs/{job}"),
            format!("/reports/{token}"),
        ] {
            app.get(&path, key).await.expect_error(404, "not_found");
        }
        for path in [
            format!("/properties/{pid}/scans"),
            format!("/properties/{pid}/crawls"),
            format!("/jobs/{pending}/cancel"),
        ] {
            app.post(&path, key, json!({}))
                .await
                .expect_error(404, "not_found");
        }
        let batch = app
            .post("/scans/batch", key, json!({"scans": [{"propertyId": pid}]}))
            .await;
        assert_eq!(
            batch.expect(202)["results"][0]["error"]["code"],
            "not_found"
        );
        for path in ["/properties", "/jobs", "/reports"] {
            let list = app.get(path, key).await;
            let data = list.expect(200);
            let items = data.as_object().unwrap().values().next().unwrap();
            assert_eq!(items, &json!([]), "{path}");
        }
        let jobs = app.get(&format!("/jobs?propertyId={pid}"), key).await;
        assert_eq!(jobs.expect(200)["jobs"], json!([]));
    }
    // The owner's job was not cancelled by any of it.
    let detail = app.get(&format!("/jobs/{pending}"), &owner.live).await;
    assert_eq!(detail.expect(200)["job"]["status"], "pending");
}

/// A store that breaks its contract on the rate count (a count short, or an exceeded bucket
/// that does not exist) gets the request a `500 internal_error` in the envelope: it is not let
/// through, and no `Retry-After` is made up.
async fn a_store_misreporting_the_rate_count_answers_500(app: TestApp) {
    let counting = Arc::new(Counting::new(app.store.clone()));
    let app = TestApp::over(counting.clone());
    let org = org(&app, "Misreported").await;
    let id = property_id(&app, &org.live, "https://misreported.example").await;
    let path = format!("/properties/{id}");
    app.get(&path, &org.live).await.expect(200);

    counting.misreport_rate_limits(|mut outcome| {
        outcome.counts.pop();
        outcome
    });
    let short = app.get(&path, &org.live).await;
    short.expect_error(500, "internal_error");

    counting.misreport_rate_limits(|mut outcome| {
        outcome.exceeded = vec![7];
        outcome
    });
    let unknown = app.get(&path, &org.live).await;
    unknown.expect_error(500, "internal_error");
    assert_eq!(unknown.header("retry-after"), None);
}

/// A read over its limit is refused before its handler runs: a flood of them reaches the
/// rate counters (and, once the key cache's second is up, the key lookup) and nothing else of
/// the store.
async fn a_flood_of_over_limit_reads_reads_nothing_else(app: TestApp) {
    let counting = Arc::new(Counting::new(app.store.clone()));
    let app = TestApp::over(counting.clone());
    let org = org(&app, "Flood").await;
    let id = property_id(&app, &org.live, "https://flood.example").await;
    app.admin(
        Method::PATCH,
        &format!("/organizations/{}", org.id),
        Some(json!({"limits": {"readPerHour": 1}})),
    )
    .await
    .expect(200);
    app.get(&format!("/properties/{id}"), &org.live)
        .await
        .expect(200);

    counting.reset();
    let paths = [
        format!("/properties/{id}"),
        "/properties".to_owned(),
        "/organization".to_owned(),
        format!("/properties/{id}/issues"),
        "/jobs".to_owned(),
        "/usage".to_owned(),
    ];
    let floods = 50;
    for _ in 0..floods {
        for path in &paths {
            app.get(path, &org.live)
                .await
                .expect_error(429, "rate_limit");
        }
    }
    let calls = counting.calls();
    let counted = (floods * paths.len()) as u64;
    assert_eq!(calls.get("hit_rate_limits"), Some(&counted), "{calls:?}");
    let others: Vec<_> = calls
        .keys()
        .filter(|method| !["hit_rate_limits", "find_api_key"].contains(method))
        .collect();
    assert!(others.is_empty(), "over-limit reads reached {others:?}");
}

/// Every answer to a request whose key was counted carries the remaining-request headers, a
/// handler's error too; an answer refusing the key itself (401, 403) carries none. The key is
/// checked before anything else a handler reads: a request without one is a 401 whatever else
/// is wrong with it.
async fn every_answer_after_the_count_carries_the_remaining_headers(app: TestApp) {
    let org = org(&app, "Acme").await;
    let read = "x-developer-api-ratelimit-read-remaining";
    let write = "x-developer-api-ratelimit-write-remaining";
    let missing = "/properties/prop_0123456789abcdef0123456789abcdef";
    let answers = [
        (app.get(missing, &org.live).await, 404),
        (app.get("/properties/prop_x", &org.live).await, 404),
        (app.get("/properties?limit=abc", &org.live).await, 400),
        (app.get("/jobs/job_x", &org.live).await, 404),
        (app.get("/webhooks/wh_x/deliveries", &org.live).await, 404),
        (
            app.post("/properties", &org.live, json!({"url": 5})).await,
            400,
        ),
    ];
    for (answer, status) in &answers {
        assert_eq!(answer.status, *status, "{:?}", answer.body);
        assert!(answer.header(read).is_some(), "{status}: {:?}", answer.body);
        assert!(
            answer.header(write).is_some(),
            "{status}: {:?}",
            answer.body
        );
    }
    // Each was counted: reads down by one each, the write's window by one.
    let [first, .., last] = &answers;
    let reads_left =
        |answer: &xf_tests::Reply| -> u64 { answer.header(read).unwrap().parse().unwrap() };
    assert_eq!(reads_left(&first.0) - reads_left(&answers[4].0), 4);
    let writes_left =
        |answer: &xf_tests::Reply| -> u64 { answer.header(write).unwrap().parse().unwrap() };
    assert_eq!(writes_left(&first.0) - writes_left(&last.0), 1);

    // Refused before the count: no headers. Without a key, a bad id or query is never looked
    // at.
    for path in ["/properties/prop_x", "/properties?limit=abc", "/webhooks"] {
        let refused = app.send(request(Method::GET, path, None, None, &[])).await;
        assert_eq!(refused.header(read), None, "{path}");
        refused.expect_error(401, "api_key_invalid");
    }
    let free = app.organization("Free", "free").await;
    let refused = app.get("/properties/prop_x", &free.live_key).await;
    assert_eq!(refused.header(read), None);
    refused.expect_error(403, "plan_required");
}

crate::backends!(
    a_flood_of_over_limit_reads_reads_nothing_else,
    every_answer_after_the_count_carries_the_remaining_headers,
    a_store_misreporting_the_rate_count_answers_500,
    read_limits_count_down_and_reset_with_the_hour,
    write_limits_per_key_and_per_organization,
    other_organizations_ids_are_not_found,
);
