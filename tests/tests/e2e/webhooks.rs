//! The webhook endpoints through the tower service, on both backends: shapes, validation and
//! the SSRF guard at registration, the cap, tenant isolation, test keys, and test deliveries
//! to a real receiver verified with the `standardwebhooks` crate (an independent
//! implementation of the scheme), including the two signatures of a rotation's overlap.

use std::time::Duration;

use http::Method;
use serde_json::{json, Value};
use xf_tests::receiver::{Answer, Receiver};
use xf_tests::{request, Reply, TestApp};

use crate::{assert_time, org};

/// The fields of a webhook, as the API serves them.
const WEBHOOK_FIELDS: [&str; 10] = [
    "createdAt",
    "enabled",
    "events",
    "id",
    "lastDeliveryAt",
    "lastDeliveryStatus",
    "name",
    "secretPrefix",
    "updatedAt",
    "url",
];

/// The fields of a delivery log row.
const DELIVERY_FIELDS: [&str; 7] = [
    "createdAt",
    "durationMs",
    "event",
    "id",
    "statusCode",
    "success",
    "webhookId",
];

#[track_caller]
fn assert_fields(value: &Value, expected: &[&str]) {
    let mut fields: Vec<&str> = value
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {value}"))
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort_unstable();
    assert_eq!(fields, expected, "{value}");
}

/// The same app and store, allowed to reach loopback receivers over plain http.
fn private(app: &TestApp) -> TestApp {
    app.clone().reconfigured(|b| b.allow_private_targets(true))
}

async fn send(app: &TestApp, method: Method, path: &str, key: &str, body: Option<Value>) -> Reply {
    app.send(request(
        method,
        path,
        Some(key),
        body.map(|b| b.to_string()),
        &[],
    ))
    .await
}

/// Registers a webhook and returns `data` (`webhook` and `secret`).
async fn create(app: &TestApp, key: &str, body: Value) -> Value {
    app.post("/webhooks", key, body).await.expect(201).clone()
}

/// Registers a webhook and returns its id.
async fn created_id(app: &TestApp, key: &str, body: Value) -> String {
    create(app, key, body).await["webhook"]["id"]
        .as_str()
        .expect("a webhook id")
        .to_owned()
}

/// A verifier of the `standardwebhooks` crate for `secret`.
fn verifier(secret: &Value) -> standardwebhooks::Webhook {
    standardwebhooks::Webhook::new(secret.as_str().expect("a secret")).expect("a valid secret")
}

pub(crate) async fn webhook_lifecycle_and_shapes(app: TestApp) {
    let owner = org(&app, "Hooks").await;
    let created = create(
        &app,
        &owner.live,
        json!({"name": "  Outcomes ", "url": "https://hooks.example.com/xf"}),
    )
    .await;
    assert_fields(&created, &["secret", "webhook"]);
    let webhook = &created["webhook"];
    assert_fields(webhook, &WEBHOOK_FIELDS);
    let secret = created["secret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_"), "{secret}");
    assert_eq!(webhook["secretPrefix"], secret[..12]);
    assert_eq!(webhook["name"], "Outcomes");
    assert_eq!(webhook["url"], "https://hooks.example.com/xf");
    assert_eq!(
        webhook["events"],
        json!([
            "job.completed",
            "job.failed",
            "job.cancelled",
            "scan.schedule.failed"
        ])
    );
    assert_eq!(webhook["enabled"], true);
    assert_eq!(webhook["lastDeliveryAt"], Value::Null);
    assert_eq!(webhook["lastDeliveryStatus"], Value::Null);
    assert_time(&webhook["createdAt"]);
    assert_eq!(webhook["createdAt"], webhook["updatedAt"]);
    let id = webhook["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("wh_"));

    // Webhook writes are writes for the rate limits; reads are reads.
    let write_left = |reply: &Reply| {
        reply
            .header("X-Developer-Api-RateLimit-write-Remaining")
            .and_then(|v| v.parse::<u64>().ok())
            .expect("the write counter")
    };
    let second = app
        .post(
            "/webhooks",
            &owner.live,
            json!({"name": "second", "url": "https://second.example.com/"}),
        )
        .await;
    let third = app
        .post(
            "/webhooks",
            &owner.live,
            json!({"name": "third", "url": "https://third.example.com/"}),
        )
        .await;
    assert_eq!(write_left(&third), write_left(&second) - 1);
    for reply in [&second, &third] {
        let other = &reply.expect(201)["webhook"]["id"];
        send(
            &app,
            Method::DELETE,
            &format!("/webhooks/{}", other.as_str().unwrap()),
            &owner.live,
            None,
        )
        .await
        .expect(200);
    }

    let listed = app.get("/webhooks", &owner.live).await;
    assert!(listed
        .header("X-Developer-Api-RateLimit-read-Remaining")
        .is_some());
    let list = listed.expect(200)["webhooks"].as_array().unwrap().clone();
    assert_eq!(list, vec![webhook.clone()], "the secret is never listed");
    assert!(!listed.body.to_string().contains(secret));

    app.clock.advance(chrono::Duration::seconds(5));
    let patched = send(
        &app,
        Method::PATCH,
        &format!("/webhooks/{id}"),
        &owner.live,
        Some(json!({"events": ["job.failed", "job.failed"], "enabled": false})),
    )
    .await;
    let patched = patched.expect(200)["webhook"].clone();
    assert_eq!(patched["events"], json!(["job.failed"]));
    assert_eq!(patched["enabled"], false);
    assert_eq!(patched["name"], "Outcomes", "fields left out are kept");
    assert_eq!(patched["createdAt"], webhook["createdAt"]);
    assert_ne!(patched["updatedAt"], webhook["updatedAt"]);

    let renamed = send(
        &app,
        Method::PATCH,
        &format!("/webhooks/{id}"),
        &owner.live,
        Some(json!({"name": "Renamed", "url": "https://other.example.com/in"})),
    )
    .await;
    let renamed = renamed.expect(200)["webhook"].clone();
    assert_eq!(renamed["name"], "Renamed");
    // Read back alone: the webhook as the change left it, never its secret.
    let read = app.get(&format!("/webhooks/{id}"), &owner.live).await;
    let read = read.expect(200);
    assert_fields(read, &["webhook"]);
    assert_eq!(read["webhook"], renamed);
    app.get("/webhooks/wh_00000000000000000000000000000000", &owner.live)
        .await
        .expect_error(404, "not_found");
    assert_eq!(renamed["url"], "https://other.example.com/in");
    assert_eq!(renamed["events"], json!(["job.failed"]));

    let rotated = app
        .post(
            &format!("/webhooks/{id}/rotate-secret"),
            &owner.live,
            json!({}),
        )
        .await;
    let rotated = rotated.expect(200).clone();
    assert_fields(&rotated, &["secret", "webhook"]);
    let new_secret = rotated["secret"].as_str().unwrap();
    assert_ne!(new_secret, secret);
    assert_eq!(rotated["webhook"]["secretPrefix"], new_secret[..12]);

    let deleted = send(
        &app,
        Method::DELETE,
        &format!("/webhooks/{id}"),
        &owner.live,
        None,
    )
    .await;
    assert_eq!(deleted.expect(200), &json!({"id": id, "deleted": true}));
    for (method, path) in [
        (Method::PATCH, format!("/webhooks/{id}")),
        (Method::DELETE, format!("/webhooks/{id}")),
        (Method::POST, format!("/webhooks/{id}/test")),
        (Method::POST, format!("/webhooks/{id}/rotate-secret")),
        (Method::GET, format!("/webhooks/{id}/deliveries")),
    ] {
        send(&app, method, &path, &owner.live, Some(json!({})))
            .await
            .expect_error(404, "not_found");
    }
    assert_eq!(
        app.get("/webhooks", &owner.live).await.expect(200)["webhooks"],
        json!([])
    );
}

async fn bad_webhooks_are_refused_naming_the_field(app: TestApp) {
    let owner = org(&app, "Strict").await;
    let good = json!({"name": "ok", "url": "https://hooks.example.com/"});
    let with = |field: &str, value: Value| {
        let mut body = good.clone();
        body[field] = value;
        body
    };
    let cases = [
        (json!({"url": "https://hooks.example.com/"}), "name"),
        (json!({"name": "x"}), "url"),
        (with("name", json!("   ")), "name"),
        (with("name", json!("a\u{7}b")), "name"),
        (with("name", json!("n".repeat(201))), "name"),
        (with("events", json!([])), "events"),
        (with("events", json!(["job.started"])), "events[0]"),
        (with("events", json!("job.failed")), "events"),
        (with("enabled", json!("yes")), "enabled"),
        (with("url", json!("http://hooks.example.com/")), "url"),
        (with("url", json!("ftp://hooks.example.com/")), "url"),
        (with("url", json!("hooks.example.com")), "url"),
        (
            with("url", json!("https://user:pw@hooks.example.com/")),
            "url",
        ),
        (
            with(
                "url",
                json!(format!("https://a.example/{}", "p".repeat(2048))),
            ),
            "url",
        ),
        (with("surprise", json!(1)), "surprise"),
    ];
    for (body, field) in cases {
        let reply = app.post("/webhooks", &owner.live, body.clone()).await;
        reply.expect_error(400, "validation_error");
        assert_eq!(
            reply.body["error"]["details"][0]["field"], field,
            "{body}: {}",
            reply.body
        );
    }
    // The SSRF guard: addresses that are, or names that resolve to, anything but the public
    // internet.
    for url in [
        "https://127.0.0.1/",
        "https://127.1.2.3:8443/hook",
        "https://10.0.0.7/",
        "https://172.16.5.4/",
        "https://192.168.1.1/",
        "https://169.254.169.254/latest/meta-data/",
        "https://100.64.0.1/",
        "https://0.0.0.0/",
        "https://[::1]/",
        "https://[fe80::1]/",
        "https://[fd00:ec2::254]/",
        "https://[::ffff:127.0.0.1]/",
        "https://[::ffff:169.254.169.254]/",
        "https://localhost/",
        "https://localhost:9000/hook",
    ] {
        let reply = app
            .post("/webhooks", &owner.live, with("url", json!(url)))
            .await;
        reply.expect_error(400, "validation_error");
        assert_eq!(reply.body["error"]["details"][0]["field"], "url", "{url}");
    }
    // Malformed JSON, and the wrong body type.
    let raw = app
        .send(request(
            Method::POST,
            "/webhooks",
            Some(&owner.live),
            Some("{\"name\": ".to_owned()),
            &[],
        ))
        .await;
    raw.expect_error(400, "validation_error");
    app.post("/webhooks", &owner.live, json!([good]))
        .await
        .expect_error(400, "validation_error");
    // Nothing was registered on the way.
    assert_eq!(
        app.get("/webhooks", &owner.live).await.expect(200)["webhooks"],
        json!([])
    );

    // A PATCH with a bad value changes nothing.
    let id = created_id(&app, &owner.live, good.clone()).await;
    for body in [
        json!({"url": "https://10.1.1.1/"}),
        json!({"events": []}),
        json!({"name": ""}),
        json!({"enabled": 1}),
    ] {
        send(
            &app,
            Method::PATCH,
            &format!("/webhooks/{id}"),
            &owner.live,
            Some(body),
        )
        .await
        .expect_error(400, "validation_error");
    }
    send(
        &app,
        Method::PATCH,
        &format!("/webhooks/{id}"),
        &owner.live,
        None,
    )
    .await
    .expect_error(400, "validation_error");
    let listed = app.get("/webhooks", &owner.live).await;
    let kept = &listed.expect(200)["webhooks"][0];
    assert_eq!(kept["url"], "https://hooks.example.com/");
    assert_eq!(kept["name"], "ok");
    assert_eq!(kept["enabled"], true);
    // Bad ids name nothing.
    send(
        &app,
        Method::PATCH,
        "/webhooks/wh_nope",
        &owner.live,
        Some(json!({})),
    )
    .await
    .expect_error(404, "not_found");
    app.get("/webhooks/not-an-id/deliveries", &owner.live)
        .await
        .expect_error(404, "not_found");
    for query in ["limit=0", "limit=101", "limit=x", "cursor=forged"] {
        app.get(&format!("/webhooks/{id}/deliveries?{query}"), &owner.live)
            .await
            .expect_error(400, "validation_error");
    }
}

async fn an_organization_has_at_most_ten_webhooks(app: TestApp) {
    let owner = org(&app, "Many").await;
    for n in 0..10 {
        create(
            &app,
            &owner.live,
            json!({"name": format!("hook {n}"), "url": format!("https://h{n}.example.com/")}),
        )
        .await;
    }
    let body = json!({"name": "one more", "url": "https://more.example.com/"});
    app.post("/webhooks", &owner.live, body.clone())
        .await
        .expect_error(409, "conflict");
    app.post("/webhooks", &owner.test, body)
        .await
        .expect_error(409, "conflict");
    let listed = app.get("/webhooks", &owner.live).await;
    let names: Vec<&str> = listed.expect(200)["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (0..10).rev().map(|n| format!("hook {n}")).collect();
    assert_eq!(names, expected, "newest first");
}

async fn webhooks_are_invisible_to_other_organizations(app: TestApp) {
    let app = private(&app);
    let receiver = Receiver::start(Answer::Status(200)).await;
    let owner = org(&app, "Owner").await;
    let other = org(&app, "Other").await;
    let id = created_id(
        &app,
        &owner.live,
        json!({"name": "mine", "url": receiver.url}),
    )
    .await;
    assert_eq!(
        app.get("/webhooks", &other.live).await.expect(200)["webhooks"],
        json!([])
    );
    for (method, path, body) in [
        (
            Method::PATCH,
            format!("/webhooks/{id}"),
            json!({"name": "theirs"}),
        ),
        (Method::GET, format!("/webhooks/{id}"), json!({})),
        (Method::DELETE, format!("/webhooks/{id}"), json!({})),
        (Method::POST, format!("/webhooks/{id}/test"), json!({})),
        (
            Method::POST,
            format!("/webhooks/{id}/rotate-secret"),
            json!({}),
        ),
        (Method::GET, format!("/webhooks/{id}/deliveries"), json!({})),
    ] {
        for key in [&other.live, &other.test] {
            send(&app, method.clone(), &path, key, Some(body.clone()))
                .await
                .expect_error(404, "not_found");
        }
    }
    assert_eq!(
        receiver.count(),
        0,
        "nothing was sent for the other organization"
    );
    let listed = app.get("/webhooks", &owner.live).await;
    assert_eq!(listed.expect(200)["webhooks"][0]["name"], "mine");
}

async fn test_keys_get_mocks_and_change_nothing(app: TestApp) {
    let app = private(&app);
    let receiver = Receiver::start(Answer::Status(200)).await;
    let owner = org(&app, "Sandbox").await;
    let body = json!({"name": "sandbox", "url": receiver.url});
    let first = create(&app, &owner.test, body.clone()).await;
    let again = create(&app, &owner.test, body.clone()).await;
    assert_eq!(first, again, "the same request, the same mock");
    assert_fields(&first["webhook"], &WEBHOOK_FIELDS);
    assert!(first["secret"].as_str().unwrap().starts_with("whsec_"));
    assert_eq!(
        app.get("/webhooks", &owner.test).await.expect(200)["webhooks"],
        json!([]),
        "nothing was stored"
    );

    let real = create(&app, &owner.live, body).await["webhook"].clone();
    let id = real["id"].as_str().unwrap();
    let patched = send(
        &app,
        Method::PATCH,
        &format!("/webhooks/{id}"),
        &owner.test,
        Some(json!({"enabled": false})),
    )
    .await;
    assert_eq!(patched.expect(200)["webhook"]["enabled"], false);
    let tested = app
        .post(&format!("/webhooks/{id}/test"), &owner.test, json!({}))
        .await;
    let delivery = &tested.expect(200)["delivery"];
    assert_fields(delivery, &DELIVERY_FIELDS);
    assert_eq!(delivery["success"], true);
    let rotated = app
        .post(
            &format!("/webhooks/{id}/rotate-secret"),
            &owner.test,
            json!({}),
        )
        .await;
    assert_ne!(
        rotated.expect(200)["webhook"]["secretPrefix"],
        real["secretPrefix"]
    );
    send(
        &app,
        Method::DELETE,
        &format!("/webhooks/{id}"),
        &owner.test,
        None,
    )
    .await
    .expect(200);

    let listed = app.get("/webhooks", &owner.live).await;
    assert_eq!(listed.expect(200)["webhooks"], json!([real]), "unchanged");
    let log = app
        .get(&format!("/webhooks/{id}/deliveries"), &owner.live)
        .await;
    assert_eq!(log.expect(200)["deliveries"], json!([]));
    assert_eq!(receiver.count(), 0, "a test key sends nothing");
}

pub(crate) async fn test_deliveries_are_signed_sent_and_logged(app: TestApp) {
    let app = private(&app);
    let receiver = Receiver::start(Answer::Status(204)).await;
    let owner = org(&app, "Signed").await;
    let created = create(
        &app,
        &owner.live,
        json!({"name": "signed", "url": receiver.url}),
    )
    .await;
    let id = created["webhook"]["id"].as_str().unwrap().to_owned();
    let verify = verifier(&created["secret"]);
    // The signature's timestamp must be near the verifier's (real) clock.
    app.clock
        .set(xf_core::time::Timestamp::from_datetime(chrono::Utc::now()));

    let reply = app
        .post(&format!("/webhooks/{id}/test"), &owner.live, Value::Null)
        .await;
    let delivery = reply.expect(200)["delivery"].clone();
    assert_fields(&delivery, &DELIVERY_FIELDS);
    assert_eq!(delivery["webhookId"], id.as_str());
    assert_eq!(delivery["event"], "job.completed");
    assert_eq!(delivery["statusCode"], 204);
    assert_eq!(delivery["success"], true);
    assert!(delivery["durationMs"].as_u64().is_some());
    assert!(delivery["id"].as_str().unwrap().starts_with("whd_"));

    let received = receiver.wait_for(1, Duration::from_secs(5)).await;
    let message = &received[0];
    verify
        .verify(&message.body, &message.headers)
        .expect("the standardwebhooks crate accepts the signature");
    assert_eq!(message.header("content-type"), "application/json");
    assert!(message.header("webhook-signature").starts_with("v1,"));
    assert_eq!(message.header("webhook-signature").split(' ').count(), 1);
    let body = message.json();
    assert_eq!(body["id"], message.header("webhook-id"));
    assert!(body["id"].as_str().unwrap().starts_with("evt_"));
    assert_eq!(body["type"], "job.completed");
    assert_eq!(body["test"], true);
    assert_time(&body["createdAt"]);
    let job = &body["data"]["job"];
    assert_eq!(job["status"], "completed");
    assert_eq!(job["type"], "seo-scan");
    assert_eq!(job["tenantLabel"], "Signed");
    assert_eq!(job["result"]["score"], 87);

    let failed = app
        .post(
            &format!("/webhooks/{id}/test"),
            &owner.live,
            json!({"event": "job.failed"}),
        )
        .await;
    assert_eq!(failed.expect(200)["delivery"]["event"], "job.failed");
    let received = receiver.wait_for(2, Duration::from_secs(5)).await;
    let body = received[1].json();
    assert_eq!(body["type"], "job.failed");
    assert_eq!(body["data"]["job"]["status"], "failed");
    assert!(body["data"]["job"]["error"].is_string());
    assert_ne!(body["id"], received[0].json()["id"]);
    app.post(
        &format!("/webhooks/{id}/test"),
        &owner.live,
        json!({"event": "job.started"}),
    )
    .await
    .expect_error(400, "validation_error");

    // Test deliveries are no jobs and use no quota.
    let usage = app.get("/usage", &owner.live).await;
    let usage = usage.expect(200);
    assert_eq!(usage["usage"]["counters"]["scans"], 0);
    assert_eq!(usage["activity"]["totals"]["jobs"], 0);
    assert_eq!(
        app.get("/jobs", &owner.live).await.expect(200)["jobs"],
        json!([])
    );

    // The log shows both attempts, newest first, and the webhook its last one.
    let log = app
        .get(&format!("/webhooks/{id}/deliveries"), &owner.live)
        .await;
    let log = log.expect(200)["deliveries"].as_array().unwrap().clone();
    assert_eq!(log.len(), 2);
    assert_eq!(log[0]["event"], "job.failed");
    assert_eq!(log[1], delivery);
    let webhook = app.get("/webhooks", &owner.live).await.expect(200)["webhooks"][0].clone();
    assert_eq!(webhook["lastDeliveryStatus"], 204);
    assert_time(&webhook["lastDeliveryAt"]);

    // A receiver that fails is an unsuccessful attempt, logged like the others; a test
    // delivery is never retried and never disables the webhook.
    for (answer, status) in [
        (Answer::Status(500), 500),
        (Answer::Status(410), 410),
        (
            Answer::Redirect(302, "http://169.254.169.254/".to_owned()),
            302,
        ),
    ] {
        receiver.answer(answer);
        let reply = app
            .post(&format!("/webhooks/{id}/test"), &owner.live, json!({}))
            .await;
        let delivery = &reply.expect(200)["delivery"];
        assert_eq!(delivery["statusCode"], status);
        assert_eq!(delivery["success"], false);
    }
    let webhook = app.get("/webhooks", &owner.live).await.expect(200)["webhooks"][0].clone();
    assert_eq!(webhook["enabled"], true);
    assert_eq!(webhook["lastDeliveryStatus"], 302);
    assert_eq!(receiver.count(), 5, "the redirect was not followed");
}

async fn unreachable_receivers_are_logged_with_status_zero(app: TestApp) {
    let app = private(&app);
    let owner = org(&app, "Unreachable").await;
    // A port nobody listens on: bound, then closed.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let id = created_id(
        &app,
        &owner.live,
        json!({"name": "gone", "url": format!("http://127.0.0.1:{closed}/hook")}),
    )
    .await;
    let reply = app
        .post(&format!("/webhooks/{id}/test"), &owner.live, json!({}))
        .await;
    let delivery = &reply.expect(200)["delivery"];
    assert_eq!(delivery["statusCode"], 0);
    assert_eq!(delivery["success"], false);
    let webhook = app.get("/webhooks", &owner.live).await.expect(200)["webhooks"][0].clone();
    assert_eq!(webhook["lastDeliveryStatus"], 0);
}

pub(crate) async fn a_rotation_signs_with_both_secrets_for_24_hours(app: TestApp) {
    let app = private(&app);
    let receiver = Receiver::start(Answer::Status(200)).await;
    let owner = org(&app, "Rotating").await;
    // The verifier checks timestamps against the real clock (±5 minutes). So the rotation
    // happens 24 h 1 min "ago" by the injected clock (its overlap ends a minute ago), which
    // then moves to just before and just after that end, both within minutes of the real
    // now.
    let real_now = chrono::Utc::now();
    let at = |offset: chrono::Duration| xf_core::time::Timestamp::from_datetime(real_now + offset);
    app.clock.set(at(-chrono::Duration::minutes(24 * 60 + 2)));
    let created = create(
        &app,
        &owner.live,
        json!({"name": "rotating", "url": receiver.url}),
    )
    .await;
    let id = created["webhook"]["id"].as_str().unwrap().to_owned();
    let old = verifier(&created["secret"]);
    app.clock.set(at(-chrono::Duration::minutes(24 * 60 + 1)));
    let rotated = app
        .post(
            &format!("/webhooks/{id}/rotate-secret"),
            &owner.live,
            json!({}),
        )
        .await;
    let new = verifier(&rotated.expect(200)["secret"]);

    // A minute before the overlap ends: two signatures, each secret verifies.
    app.clock.set(at(-chrono::Duration::minutes(2)));
    app.post(&format!("/webhooks/{id}/test"), &owner.live, json!({}))
        .await
        .expect(200);
    let during = receiver.wait_for(1, Duration::from_secs(5)).await[0].clone();
    assert_eq!(during.header("webhook-signature").split(' ').count(), 2);
    old.verify(&during.body, &during.headers)
        .expect("the old secret still verifies");
    new.verify(&during.body, &during.headers)
        .expect("the new secret verifies");

    // A minute after it: only the new secret signs.
    app.clock.set(at(chrono::Duration::minutes(0)));
    app.post(&format!("/webhooks/{id}/test"), &owner.live, json!({}))
        .await
        .expect(200);
    let after = receiver.wait_for(2, Duration::from_secs(5)).await[1].clone();
    assert_eq!(after.header("webhook-signature").split(' ').count(), 1);
    new.verify(&after.body, &after.headers)
        .expect("the new secret verifies");
    assert!(matches!(
        old.verify(&after.body, &after.headers),
        Err(standardwebhooks::WebhookError::InvalidSignature)
    ));
}

pub(crate) async fn the_delivery_log_pages_newest_first(app: TestApp) {
    let app = private(&app);
    let receiver = Receiver::start(Answer::Status(200)).await;
    let owner = org(&app, "Paging").await;
    let id = created_id(
        &app,
        &owner.live,
        json!({"name": "paging", "url": receiver.url}),
    )
    .await;
    for _ in 0..27 {
        app.clock.advance(chrono::Duration::seconds(1));
        app.post(&format!("/webhooks/{id}/test"), &owner.live, json!({}))
            .await
            .expect(200);
    }
    let first = app
        .get(&format!("/webhooks/{id}/deliveries"), &owner.live)
        .await;
    let page = first.expect(200)["deliveries"].as_array().unwrap().clone();
    assert_eq!(page.len(), 25, "25 by default");
    assert_eq!(first.body["meta"]["hasMore"], true);
    let cursor = first.body["meta"]["nextCursor"].as_str().unwrap();
    let second = app
        .get(
            &format!("/webhooks/{id}/deliveries?limit=25&cursor={cursor}"),
            &owner.live,
        )
        .await;
    let rest = second.expect(200)["deliveries"].as_array().unwrap().clone();
    assert_eq!(rest.len(), 2);
    assert_eq!(second.body["meta"]["nextCursor"], Value::Null);
    let mut times: Vec<&str> = page
        .iter()
        .chain(rest.iter())
        .map(|d| d["createdAt"].as_str().unwrap())
        .collect();
    let newest_first = times.clone();
    times.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(newest_first, times);
    let small = app
        .get(&format!("/webhooks/{id}/deliveries?limit=3"), &owner.live)
        .await;
    assert_eq!(small.expect(200)["deliveries"].as_array().unwrap().len(), 3);
}

/// Which events an organization may receive follows its plan: a developer-API plan gets the
/// job events and may not subscribe to media events (nor have one sent as a test), a
/// media-API plan the media events (its key also read from `X-API-Key`), and a plan with
/// neither API may not manage webhooks at all.
async fn the_plan_decides_which_events_a_webhook_may_receive(app: TestApp) {
    let seo = org(&app, "SEO only").await;
    let refused = app
        .post(
            "/webhooks",
            &seo.live,
            json!({"name": "media", "url": "https://hooks.example.com/m", "events": ["job.failed", "media.post.published"]}),
        )
        .await;
    refused.expect_error(400, "validation_error");
    assert_eq!(refused.body["error"]["details"][0]["field"], "events");
    let message = refused.body["error"]["details"][0]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.contains("media.post.published") && message.contains("growth"),
        "{message}"
    );
    let id = created_id(
        &app,
        &seo.live,
        json!({"name": "jobs", "url": "https://hooks.example.com/j"}),
    )
    .await;
    let patched = app
        .send(request(
            Method::PATCH,
            &format!("/webhooks/{id}"),
            Some(&seo.live),
            Some(json!({"events": ["channel.disconnected"]}).to_string()),
            &[],
        ))
        .await;
    patched.expect_error(400, "validation_error");
    let tested = app
        .post(
            &format!("/webhooks/{id}/test"),
            &seo.live,
            json!({"event": "media.completed"}),
        )
        .await;
    tested.expect_error(400, "validation_error");

    let media = app.organization("Media only", "pro").await;
    let created = app
        .send(request(
            Method::POST,
            "/webhooks",
            None,
            Some(json!({"name": "media", "url": "https://hooks.example.com/m"}).to_string()),
            &[("X-API-Key", media.live_key.as_str())],
        ))
        .await;
    assert_eq!(
        created.expect(201)["webhook"]["events"],
        json!(crate::MEDIA_EVENTS)
    );
    let listed = app.get("/webhooks", &media.live_key).await;
    assert_eq!(listed.expect(200)["webhooks"].as_array().unwrap().len(), 1);

    let neither = app.organization("Free", "free").await;
    let reply = app.get("/webhooks", &neither.live_key).await;
    reply.expect_error(403, "plan_required");
    let message = reply.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("developerApi or mediaApi"), "{message}");
}

crate::backends!(
    the_plan_decides_which_events_a_webhook_may_receive,
    webhook_lifecycle_and_shapes,
    bad_webhooks_are_refused_naming_the_field,
    an_organization_has_at_most_ten_webhooks,
    webhooks_are_invisible_to_other_organizations,
    test_keys_get_mocks_and_change_nothing,
    test_deliveries_are_signed_sent_and_logged,
    unreachable_receivers_are_logged_with_status_zero,
    a_rotation_signs_with_both_secrets_for_24_hours,
    the_delivery_log_pages_newest_first,
    concurrent_rotations_hand_out_only_secrets_that_sign,
);

/// Ten rotations of one webhook's secret at once: a caller whose rotation lost to another is
/// a `409 conflict` saying so, never handed a secret that signs nothing; the secret that signs
/// is one a `200` handed out.
async fn concurrent_rotations_hand_out_only_secrets_that_sign(app: TestApp) {
    let owner = org(&app, "Rotations").await;
    let created = create(
        &app,
        &owner.live,
        json!({"name": "Rotated", "url": "https://hooks.example.com/xf"}),
    )
    .await;
    let id = created["webhook"]["id"].as_str().unwrap().to_owned();
    let path = format!("/webhooks/{id}/rotate-secret");
    let replies =
        futures::future::join_all((0..10).map(|_| app.post(&path, &owner.live, json!({})))).await;
    let mut handed_out = Vec::new();
    for reply in &replies {
        match reply.status.as_u16() {
            200 => handed_out.push(reply.body["data"]["secret"].as_str().unwrap().to_owned()),
            _ => {
                reply.expect_error(409, "conflict");
                let message = reply.body["error"]["message"].as_str().unwrap();
                assert!(message.contains("rotate again"), "{message}");
            }
        }
    }
    assert!(!handed_out.is_empty(), "one rotation applies");
    // The secret that signs now is one a caller was handed (the store's conformance suite
    // holds that of rotations of one secret exactly one applies).
    let listed = app.get("/webhooks", &owner.live).await;
    let prefix = listed.expect(200)["webhooks"][0]["secretPrefix"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        handed_out.iter().any(|secret| secret.starts_with(&prefix)),
        "{prefix} {handed_out:?}"
    );
}
