//! Text a client sends with a NUL in it: a JSON field at any depth, a query parameter, an
//! admin field. Each is a `400 validation_error` naming the field, never a 500, and nothing
//! is stored (a client's own text is not rewritten; see `xf_core::text`).

use http::Method;
use serde_json::{json, Value};
use xf_tests::{request, TestApp};

use crate::{org, property_id};

crate::backends!(nul_in_any_client_field_is_a_400_naming_it);

/// The one field a 400 names.
#[track_caller]
fn named(reply: &xf_tests::Reply) -> String {
    reply.expect_error(400, "validation_error");
    let details = reply.body["error"]["details"].as_array().expect("details");
    assert_eq!(details.len(), 1, "{}", reply.body);
    details[0]["field"].as_str().expect("a field").to_owned()
}

async fn nul_in_any_client_field_is_a_400_naming_it(app: TestApp) {
    let org = org(&app, "Acme").await;
    let pid = property_id(&app, &org.live, "https://acme.example").await;
    let bodies: [(&str, Value, &str); 6] = [
        (
            "/properties",
            json!({"url": "https://a.example", "name": "a\u{0}b"}),
            "name",
        ),
        (
            "/properties",
            json!({"url": "https://a\u{0}.example"}),
            "url",
        ),
        (
            "/webhooks",
            json!({"url": "https://hooks.example/x", "name": "\u{0}"}),
            "name",
        ),
        (
            "/webhooks",
            json!({"url": "https://hooks.example/\u{0}"}),
            "url",
        ),
        (
            "/scans/batch",
            json!({"items": [{"propertyId": pid}, {"propertyId": "prop_\u{0}"}]}),
            "items[1].propertyId",
        ),
        (
            "/properties",
            json!({"url": "https://b.example", "extra": {"deep": ["\u{0}"]}}),
            "extra.deep[0]",
        ),
    ];
    for (path, body, field) in bodies {
        let reply = app
            .send(request(
                Method::POST,
                path,
                Some(&org.live),
                Some(body.to_string()),
                &[],
            ))
            .await;
        assert_eq!(named(&reply), field, "{path} {body}");
    }
    // A lone surrogate is no text at all: the body is not JSON.
    let lone = r#"{"url": "https://c.example", "name": "\ud800"}"#;
    let reply = app
        .send(request(
            Method::POST,
            "/properties",
            Some(&org.live),
            Some(lone.to_owned()),
            &[],
        ))
        .await;
    assert_eq!(named(&reply), "body", "{}", reply.body);
    let properties = app.get("/properties", &org.live).await;
    assert_eq!(
        properties.expect(200)["properties"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let webhooks = app.get("/webhooks", &org.live).await;
    assert_eq!(
        webhooks.expect(200)["webhooks"].as_array().unwrap().len(),
        0
    );

    for (query, field) in [
        (
            format!("/properties/{pid}/issues?url=https%3A%2F%2Facme.example%2F%00"),
            "url",
        ),
        (format!("/properties/{pid}/issues?type=title%00"), "type"),
        ("/jobs?cursor=%00".to_owned(), "cursor"),
        ("/properties?limit=1&na%00me=x".to_owned(), "na\u{FFFD}me"),
    ] {
        let reply = app.get(&query, &org.live).await;
        assert_eq!(named(&reply), field, "{query}");
    }

    let admin_cases: [(Method, String, Value, &str); 5] = [
        (
            Method::POST,
            "/organizations".to_owned(),
            json!({"name": "a\u{0}", "plan": "growth"}),
            "name",
        ),
        (
            Method::POST,
            "/organizations".to_owned(),
            json!({"name": "Shop", "plan": "growth", "shopDomain": "a\u{0}.example"}),
            "shopDomain",
        ),
        (
            Method::POST,
            format!("/organizations/{}/channels", org.id),
            json!({"platform": "tiktok", "accountId": "t1", "displayName": "\u{0}",
                   "accessToken": "token"}),
            "displayName",
        ),
        (
            Method::POST,
            format!("/organizations/{}/channels", org.id),
            json!({"platform": "tiktok", "accountId": "t1", "displayName": "T",
                   "thumbnail": "https://cdn.example/\u{0}.png", "accessToken": "token"}),
            "thumbnail",
        ),
        (
            Method::PUT,
            format!("/organizations/{}/gsc", org.id),
            json!({"refreshToken": "1//token", "accountEmail": "a\u{0}@example.com"}),
            "accountEmail",
        ),
    ];
    for (method, path, body, field) in admin_cases {
        let reply = app.admin(method.clone(), &path, Some(body.clone())).await;
        assert_eq!(named(&reply), field, "{method} {path} {body}");
    }
    let found = app.store.get_organization(&org.id).await.unwrap();
    assert_eq!(found.expect("the organization").name, "Acme");
    let gsc = app.store.get_gsc_account(&org.id).await.unwrap();
    assert_eq!(gsc, None, "no account was linked");
}
