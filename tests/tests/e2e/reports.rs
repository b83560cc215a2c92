//! Shared reports and usage.

use http::Method;
use serde_json::{json, Value};
use xf_tests::TestApp;

use crate::{assert_time, complete, org, property_id, scan};

pub(crate) async fn reports_list_detail_expiry_and_views(app: TestApp) {
    let org = org(&app, "Acme").await;
    let pid = property_id(&app, &org.live, "https://acme.example").await;
    let job = scan(&app, &org.live, &pid).await;
    let unfinished = scan(&app, &org.live, &pid).await;
    complete(&app, &job, 88).await;

    let in_a_day = app.xf.now().plus(chrono::Duration::days(1)).to_string();
    let in_a_week = app.xf.now().plus(chrono::Duration::days(7)).to_string();
    let create = |expires: String| {
        let app = app.clone();
        let (pid, job) = (pid.clone(), job.clone());
        async move {
            app.admin(
                Method::POST,
                "/reports",
                Some(json!({"propertyId": pid, "scanId": job, "expiresAt": expires})),
            )
            .await
        }
    };
    let short = create(in_a_day).await;
    let short = short.expect(201)["report"].clone();
    app.clock.advance(chrono::Duration::seconds(1));
    let long = create(in_a_week).await;
    let long = long.expect(201)["report"].clone();
    let token = long["token"].as_str().unwrap().to_owned();
    assert!(token.len() >= 32);
    assert_eq!(
        long["publicUrl"],
        format!("https://app.example.test/r/{token}").as_str()
    );

    let list = app.get("/reports", &org.live).await;
    let reports = list.expect(200)["reports"].as_array().unwrap().clone();
    assert_eq!(reports.len(), 2);
    assert_eq!(reports[0]["token"], token.as_str());
    let item = reports[0].as_object().unwrap();
    for field in [
        "token",
        "propertyId",
        "propertyName",
        "propertyUrl",
        "scanId",
        "expiresAt",
        "viewCount",
        "createdAt",
        "publicUrl",
    ] {
        assert!(item.contains_key(field), "{field}");
    }
    assert_eq!(reports[0]["propertyUrl"], "https://acme.example/");
    assert_eq!(reports[0]["scanId"], job.as_str());

    let detail = app.get(&format!("/reports/{token}"), &org.live).await;
    let report = &detail.expect(200)["report"];
    assert_eq!(report["score"], 88);
    assert_eq!(report["pagesScanned"], 12);
    assert_time(&report["scannedAt"]);
    assert_eq!(report["expired"], false);

    let viewed = app
        .admin(Method::POST, &format!("/reports/{token}/views"), None)
        .await;
    assert_eq!(viewed.expect(200)["report"]["viewCount"], 1);

    // After a day the short one expires: gone from the list, flagged in detail.
    app.clock.advance(chrono::Duration::days(1));
    let list = app.get("/reports", &org.live).await;
    let reports = list.expect(200)["reports"].as_array().unwrap().clone();
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0]["viewCount"], 1);
    let short_token = short["token"].as_str().unwrap();
    let expired = app.get(&format!("/reports/{short_token}"), &org.live).await;
    assert_eq!(expired.expect(200)["report"]["expired"], true);

    app.get("/reports/unknown-token", &org.live)
        .await
        .expect_error(404, "not_found");
    // The host may only share completed scans, in the future, of that property.
    let bad = [
        json!({"propertyId": pid, "scanId": unfinished, "expiresAt": "2030-01-01T00:00:00Z"}),
        json!({"propertyId": pid, "scanId": job, "expiresAt": "2020-01-01T00:00:00Z"}),
        json!({"propertyId": pid, "scanId": job, "expiresAt": "tomorrow"}),
        json!({"propertyId": pid, "scanId": job}),
    ];
    for body in bad {
        app.admin(Method::POST, "/reports", Some(body))
            .await
            .expect_error(400, "validation_error");
    }
    app.admin(
        Method::POST,
        "/reports",
        Some(json!({"propertyId": pid, "scanId": "job_nope", "expiresAt": "2030-01-01T00:00:00Z"})),
    )
    .await
    .expect_error(404, "not_found");
    app.admin(Method::POST, "/reports/nope/views", None)
        .await
        .expect_error(404, "not_found");
}

pub(crate) async fn usage_limits_and_rate_limit_counters(app: TestApp) {
    let org = org(&app, "Acme").await;
    let pid = property_id(&app, &org.live, "https://acme.example").await;
    let done = scan(&app, &org.live, &pid).await;
    scan(&app, &org.live, &pid).await;
    complete(&app, &done, 50).await;
    app.admin(
        Method::POST,
        &format!("/organizations/{}/usage", org.id),
        Some(json!({"aiInputTokens": 1200, "imagesOptimized": 3})),
    )
    .await
    .expect(200);
    let recorded = app
        .admin(
            Method::POST,
            &format!("/organizations/{}/usage", org.id),
            Some(json!({"aiInputTokens": 800, "redirectsCreated": 2})),
        )
        .await;
    assert_eq!(recorded.expect(200)["usage"]["aiInputTokens"], 2000);
    app.admin(
        Method::POST,
        &format!("/organizations/{}/usage", org.id),
        Some(json!({"aiInputTokens": -5})),
    )
    .await
    .expect_error(400, "validation_error");
    app.admin(
        Method::POST,
        "/organizations/org_nope/usage",
        Some(json!({})),
    )
    .await
    .expect_error(404, "not_found");

    let usage = app.get("/usage", &org.live).await;
    let data = usage.expect(200);
    assert_eq!(data["usage"]["period"], "2026-11");
    assert_eq!(data["usage"]["plan"], "growth");
    assert_eq!(
        data["usage"]["counters"],
        json!({"scans": 2, "aiInputTokens": 2000, "aiOutputTokens": 0, "redirectsCreated": 2, "imagesOptimized": 3,
               "mediaUploads": 0, "mediaBytes": 0, "postsPublished": 0, "postsDeleted": 0})
    );
    assert_eq!(
        data["usage"]["limits"],
        json!({"scansPerMonth": 1000, "aiCreditsPerMonth": 10000})
    );
    assert_eq!(data["activity"]["period"], "2026-11");
    assert_eq!(
        data["activity"]["totals"],
        json!({"jobs": 2, "completed": 1, "failed": 0})
    );
    assert_eq!(
        data["activity"]["byType"],
        json!({"seo-scan": {"total": 2, "completed": 1, "failed": 0}})
    );
    assert_eq!(
        data["crawlLimits"],
        json!({"maxPages": 1000, "maxDepth": 5})
    );

    let limits = app.get("/limits", &org.live).await;
    let data = limits.expect(200);
    assert_eq!(data["plan"], "growth");
    assert_eq!(
        data["period"],
        json!({"start": "2026-11-01", "end": "2026-11-30"})
    );
    assert_eq!(
        data["developerApi"],
        json!({"readPerHour": 5000, "writePerHour": 500, "orgWriteDaily": 5000, "maxActiveKeys": 10,
               "rateLimitHeaders": {"read": "X-Developer-Api-RateLimit-read-Remaining", "write": "X-Developer-Api-RateLimit-write-Remaining"}})
    );

    let counters = app.get("/rate-limits", &org.live).await;
    let data = counters.expect(200).clone();
    // Reads so far: /usage, /limits, /rate-limits. Writes: 1 property + 2 scans.
    assert_eq!(data["read"]["limit"], 5000);
    assert_eq!(data["read"]["remaining"], 4997);
    assert_eq!(data["read"]["resetAt"], "2026-11-16T11:00:00.000Z");
    assert_eq!(data["write"]["remaining"], 497);
    assert_eq!(data["orgWriteDaily"]["remaining"], 4997);
    assert_eq!(data["orgWriteDaily"]["resetAt"], "2026-11-17T00:00:00.000Z");
    assert_eq!(
        counters.header("x-developer-api-ratelimit-read-remaining"),
        Some("4997")
    );
    assert_eq!(
        counters.header("x-developer-api-ratelimit-write-remaining"),
        Some("497")
    );
    assert_ne!(data["read"]["remaining"], Value::Null);
}

crate::backends!(
    reports_list_detail_expiry_and_views,
    usage_limits_and_rate_limit_counters
);
