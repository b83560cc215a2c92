//! The admin API's reads: organizations, their keys and their channels, paged, behind the
//! admin token.

use http::Method;
use serde_json::{json, Value};
use xf_core::time::Clock;
use xf_tests::{request, TestApp};

use crate::org;

/// Every page of an admin list, following `meta.nextCursor`.
async fn all_pages(app: &TestApp, path: &str, key: &str, limit: u32) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let url = match &cursor {
            Some(cursor) => format!("{path}?limit={limit}&cursor={cursor}"),
            None => format!("{path}?limit={limit}"),
        };
        let reply = app.admin(Method::GET, &url, None).await;
        let data = reply.expect(200);
        let page = data[key].as_array().expect("a list").clone();
        assert!(page.len() <= limit as usize, "{}", reply.body);
        items.extend(page);
        let meta = &reply.body["meta"];
        assert_eq!(meta["hasMore"], meta["nextCursor"].is_string());
        match meta["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    items
}

pub(crate) async fn admin_lists_and_reads_organizations(app: TestApp) {
    let mut made = Vec::new();
    for name in ["First", "Second", "Third"] {
        made.push(org(&app, name).await);
        app.clock.advance(chrono::Duration::seconds(1));
    }
    let listed = all_pages(&app, "/organizations", "organizations", 2).await;
    let ids: Vec<&str> = listed.iter().map(|o| o["id"].as_str().unwrap()).collect();
    let newest_first: Vec<String> = made.iter().rev().map(|o| o.id.to_string()).collect();
    assert_eq!(ids, newest_first);
    assert_eq!(listed[0]["name"], "Third");
    assert_eq!(listed[0]["plan"], "growth");
    assert!(listed[0]["shopDomain"].is_null());
    assert!(listed[0]["createdAt"].is_string());

    let one = app
        .admin(Method::GET, &format!("/organizations/{}", made[1].id), None)
        .await;
    assert_eq!(one.expect(200)["organization"], listed[1]);
    app.admin(
        Method::GET,
        "/organizations/org_0123456789abcdef0123456789abcdef",
        None,
    )
    .await
    .expect_error(404, "not_found");
    for bad in [
        "?limit=0",
        "?limit=101",
        "?cursor=forged.cursor",
        "?limit=x",
    ] {
        app.admin(Method::GET, &format!("/organizations{bad}"), None)
            .await
            .expect_error(400, "validation_error");
    }
    // A cursor of another list is refused.
    let keys_page = app
        .admin(
            Method::GET,
            &format!("/organizations/{}/api-keys?limit=1", made[0].id),
            None,
        )
        .await;
    let keys_cursor = keys_page.body["meta"]["nextCursor"]
        .as_str()
        .unwrap()
        .to_owned();
    app.admin(
        Method::GET,
        &format!("/organizations?cursor={keys_cursor}"),
        None,
    )
    .await
    .expect_error(400, "validation_error");
}

pub(crate) async fn admin_lists_keys_with_prefix_and_last_use(app: TestApp) {
    // Every request asks the store, so the last-use write is seen at once.
    let app = app.reconfigured(|builder| builder.key_cache_ttl(std::time::Duration::ZERO));
    let acme = org(&app, "Acme").await;
    let other = org(&app, "Other").await;
    app.clock.advance(chrono::Duration::seconds(5));
    let path = format!("/organizations/{}/api-keys", acme.id);
    let extra = app
        .admin(Method::POST, &path, Some(json!({"mode": "live"})))
        .await
        .expect(201)
        .clone();
    app.admin(
        Method::DELETE,
        &format!("/api-keys/{}", extra["id"].as_str().unwrap()),
        None,
    )
    .await
    .expect(200);

    let used_at = app.clock.now();
    app.get("/organization", &acme.live).await.expect(200);
    // Within the minute, a second use writes nothing; another organization's use is its own.
    app.clock.advance(chrono::Duration::seconds(30));
    app.get("/organization", &acme.live).await.expect(200);
    app.get("/organization", &other.live).await.expect(200);

    let reply = app.admin(Method::GET, &path, None).await;
    let keys = reply.expect(200)["apiKeys"].as_array().unwrap().clone();
    assert_eq!(keys.len(), 3, "{}", reply.body);
    assert!(!reply.body.to_string().contains(&acme.live[12..]));
    // Newest first: the revoked extra key, then the two first keys (made together).
    assert_eq!(keys[0]["id"], extra["id"]);
    assert!(keys[0]["revokedAt"].is_string());
    assert!(keys[0]["lastUsedAt"].is_null());
    assert_eq!(keys[0]["prefix"], extra["key"].as_str().unwrap()[..12]);
    let live = keys
        .iter()
        .find(|k| k["mode"] == "live" && k["revokedAt"].is_null());
    let live = live.expect("the first live key");
    assert_eq!(live["prefix"], acme.live[..12]);
    assert_eq!(live["organizationId"], acme.id.to_string());
    assert_eq!(live["lastUsedAt"], json!(used_at));
    assert!(live.get("keyHash").is_none() && live.get("key").is_none());
    let test = keys.iter().find(|k| k["mode"] == "test").unwrap();
    assert_eq!(test["prefix"], acme.test[..12]);
    assert!(test["lastUsedAt"].is_null());

    // A minute on, a use is written again.
    app.clock.advance(chrono::Duration::seconds(31));
    app.get("/organization", &acme.live).await.expect(200);
    let paged = all_pages(&app, &path, "apiKeys", 1).await;
    assert_eq!(paged.len(), 3);
    let live = paged.iter().find(|k| k["id"] == live["id"]).unwrap();
    assert_eq!(live["lastUsedAt"], json!(app.clock.now()));

    let others = app
        .admin(
            Method::GET,
            &format!("/organizations/{}/api-keys", other.id),
            None,
        )
        .await;
    let others = others.expect(200)["apiKeys"].as_array().unwrap().clone();
    assert_eq!(others.len(), 2);
    assert!(others
        .iter()
        .all(|k| k["organizationId"] == other.id.to_string()));
    app.admin(
        Method::GET,
        "/organizations/org_0123456789abcdef0123456789abcdef/api-keys",
        None,
    )
    .await
    .expect_error(404, "not_found");
}

pub(crate) async fn admin_lists_channels(app: TestApp) {
    let media = app.organization("Media", "plus").await;
    let org_id = media.organization.id.to_string();
    let mut connected = Vec::new();
    for (platform, account) in [
        ("youtube", "UC1"),
        ("pinterest", "pin-1"),
        ("youtube", "UC2"),
    ] {
        let reply = app
            .admin(
                Method::POST,
                &format!("/organizations/{org_id}/channels"),
                Some(json!({
                    "platform": platform,
                    "accountId": account,
                    "displayName": format!("{account} name"),
                    "accessToken": format!("secret-token-of-{account}"),
                })),
            )
            .await;
        connected.push(reply.expect(201)["channel"].clone());
        app.clock.advance(chrono::Duration::seconds(1));
    }
    let path = format!("/organizations/{org_id}/channels");
    let listed = all_pages(&app, &path, "channels", 2).await;
    connected.reverse();
    assert_eq!(listed, connected);
    assert_eq!(listed[1]["platform"], "pinterest");
    assert!(listed.iter().all(|c| c["disconnected"].is_null()));
    let whole = app.admin(Method::GET, &path, None).await;
    assert!(!whole.body.to_string().contains("secret-token-of"));

    let empty = org(&app, "No channels").await;
    let none = app
        .admin(
            Method::GET,
            &format!("/organizations/{}/channels", empty.id),
            None,
        )
        .await;
    assert_eq!(none.expect(200)["channels"], json!([]));
    assert_eq!(none.body["meta"]["hasMore"], false);
    app.admin(
        Method::GET,
        "/organizations/org_0123456789abcdef0123456789abcdef/channels",
        None,
    )
    .await
    .expect_error(404, "not_found");
}

async fn admin_reads_require_the_token(app: TestApp) {
    let acme = org(&app, "Acme").await;
    for path in [
        "/organizations".to_owned(),
        format!("/organizations/{}", acme.id),
        format!("/organizations/{}/api-keys", acme.id),
        format!("/organizations/{}/channels", acme.id),
    ] {
        for token in [None, Some("wrong"), Some(acme.live.as_str())] {
            app.send_admin(request(Method::GET, &path, token, None, &[]))
                .await
                .expect_error(401, "admin_token_invalid");
        }
        // The customer's API has no such reads.
        app.get(&path, &acme.live)
            .await
            .expect_error(404, "not_found");
    }
}

crate::backends!(
    admin_lists_and_reads_organizations,
    admin_lists_keys_with_prefix_and_last_use,
    admin_lists_channels,
    admin_reads_require_the_token,
);
