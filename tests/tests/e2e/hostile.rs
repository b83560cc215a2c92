//! What an attacker or a careless client tries against the admin API and the signed links,
//! each closed: limit overrides that can be cleared, admin tokens that are long enough and
//! throttled, and signed media links read only in their canonical form.

use http::Method;
use serde_json::json;
use xf_tests::TestApp;

use crate::org;

crate::backends!(
    a_limit_override_set_to_null_goes_back_to_the_plan,
    the_admin_api_tells_its_methods_only_to_the_token_holder,
    wrong_admin_tokens_lock_out_their_address_for_a_minute,
);

/// An admin request from `address` with `token`.
fn from(address: &str, token: Option<&str>) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    let mut request = xf_tests::request(
        Method::PUT,
        "/organizations/org_00000000000000000000000000000000",
        token,
        None,
        &[],
    );
    let peer: std::net::SocketAddr = format!("{address}:40000").parse().unwrap();
    request
        .extensions_mut()
        .insert(axum::extract::ConnectInfo(peer));
    request
}

/// `MAX_FAILED_LOGINS` wrong admin tokens from one address lock it out for the rest of the
/// minute: its requests with a token are `429 rate_limit` with `Retry-After`, the right token
/// included (it is not looked at), while another address with the right token is served. A
/// minute later the address is served again.
async fn wrong_admin_tokens_lock_out_their_address_for_a_minute(app: TestApp) {
    let right = Some(xf_tests::ADMIN_TOKEN);
    for n in 0..xf_tower::MAX_FAILED_LOGINS {
        let guess = format!("guess-number-{n:04}-of-many");
        let reply = app.send_admin(from("127.0.0.2", Some(&guess))).await;
        reply.expect_error(401, "admin_token_invalid");
    }
    let locked = app.send_admin(from("127.0.0.2", right)).await;
    locked.expect_error(429, "rate_limit");
    // A request without a token guesses nothing: it is told so, as ever.
    let bare = app.send_admin(from("127.0.0.2", None)).await;
    bare.expect_error(401, "admin_token_invalid");
    let retry: u64 = locked.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    // Past the token: the path takes GET and PATCH only.
    let other = app.send_admin(from("127.0.0.3", right)).await;
    other.expect_error(405, "method_not_allowed");

    app.clock.advance(chrono::Duration::seconds(61));
    let again = app.send_admin(from("127.0.0.2", right)).await;
    again.expect_error(405, "method_not_allowed");
}

/// A known admin path with another method is a `401` without the token (no `Allow` telling
/// its methods), and `405` with `Allow` with it.
async fn the_admin_api_tells_its_methods_only_to_the_token_holder(app: TestApp) {
    let org = org(&app, "Acme").await;
    let path = format!("/organizations/{}", org.id);
    for token in [None, Some("wrong-token-of-any-length")] {
        let reply = app
            .send_admin(xf_tests::request(Method::PUT, &path, token, None, &[]))
            .await;
        reply.expect_error(401, "admin_token_invalid");
        assert_eq!(reply.header("allow"), None, "{token:?}");
    }
    let reply = app
        .send_admin(xf_tests::request(
            Method::PUT,
            &path,
            Some(xf_tests::ADMIN_TOKEN),
            None,
            &[],
        ))
        .await;
    reply.expect_error(405, "method_not_allowed");
    assert_eq!(reply.header("allow"), Some("GET,HEAD,PATCH"));
}

/// `null` in `limits` clears that override (the plan's value applies again); a field left out
/// keeps its own.
async fn a_limit_override_set_to_null_goes_back_to_the_plan(app: TestApp) {
    let org = org(&app, "Acme").await;
    let path = format!("/organizations/{}", org.id);
    let set = json!({"limits": {"readPerHour": 7, "maxPages": 30}});
    app.admin(Method::PATCH, &path, Some(set)).await.expect(200);
    let limits = app.get("/limits", &org.live).await;
    assert_eq!(
        limits.expect(200)["developerApi"]["readPerHour"],
        7,
        "{}",
        limits.body
    );

    let cleared = json!({"limits": {"readPerHour": null}});
    let reply = app.admin(Method::PATCH, &path, Some(cleared)).await;
    let organization = &reply.expect(200)["organization"];
    assert_eq!(
        organization["limits"]["readPerHour"],
        json!(null),
        "{organization}"
    );
    assert_eq!(organization["limits"]["maxPages"], 30, "{organization}");
    let stored = app.store.get_organization(&org.id).await.unwrap().unwrap();
    assert_eq!(stored.limits.read_per_hour, None);
    assert_eq!(stored.limits.max_pages, Some(30));
    let plan = xf_core::plans::PlanCatalog::default();
    let growth = plan.get("growth").expect("the growth plan");
    let limits = app.get("/limits", &org.live).await;
    assert_eq!(
        limits.expect(200)["developerApi"]["readPerHour"],
        growth.limits.read_per_hour,
        "{}",
        limits.body
    );
}
