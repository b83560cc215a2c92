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
);

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
    assert_eq!(reply.header("allow"), Some("PATCH"));
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
