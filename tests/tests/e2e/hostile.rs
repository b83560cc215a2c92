//! What an attacker or a careless client tries against the admin API and the signed links,
//! each closed: limit overrides that can be cleared, admin tokens that are long enough and
//! throttled, and signed media links read only in their canonical form.

use http::Method;
use serde_json::json;
use xf_tests::TestApp;

use crate::org;

crate::backends!(a_limit_override_set_to_null_goes_back_to_the_plan);

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
