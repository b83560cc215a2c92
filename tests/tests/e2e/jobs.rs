//! Jobs: list, filters, detail, cancel.

use serde_json::{json, Value};
use xf_tests::TestApp;

use crate::{assert_time, complete, org, property_id, scan};

pub(crate) async fn jobs_list_filter_and_detail(app: TestApp) {
    let org = org(&app, "Acme").await;
    let a = property_id(&app, &org.live, "https://a.example").await;
    let b = property_id(&app, &org.live, "https://b.example").await;
    let first = scan(&app, &org.live, &a).await;
    app.clock.advance(chrono::Duration::seconds(1));
    let second = scan(&app, &org.live, &b).await;
    complete(&app, &first, 91).await;

    let all = app.get("/jobs", &org.live).await;
    let jobs = all.expect(200)["jobs"].as_array().unwrap().clone();
    assert_eq!(
        jobs.iter()
            .map(|j| j["id"].as_str().unwrap())
            .collect::<Vec<_>>(),
        [second.as_str(), first.as_str()]
    );
    let pending = jobs[0].as_object().unwrap();
    for field in [
        "id",
        "type",
        "status",
        "progress",
        "propertyId",
        "propertyName",
        "tenantType",
        "tenantLabel",
        "shopDomain",
        "createdAt",
        "startedAt",
        "completedAt",
        "error",
    ] {
        assert!(pending.contains_key(field), "{field}");
    }
    assert!(!pending.contains_key("result"));
    assert_eq!(jobs[0]["propertyName"], "b.example");
    assert_eq!(jobs[0]["shopDomain"], Value::Null);
    assert_eq!(all.body["meta"]["hasMore"], false);

    let completed = app.get("/jobs?status=completed", &org.live).await;
    assert_eq!(completed.expect(200)["jobs"].as_array().unwrap().len(), 1);
    let by_property = app.get(&format!("/jobs?propertyId={b}"), &org.live).await;
    assert_eq!(by_property.expect(200)["jobs"][0]["id"], second.as_str());
    let by_type = app.get("/jobs?type=seo-scan&limit=1", &org.live).await;
    assert_eq!(by_type.expect(200)["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(by_type.body["meta"]["hasMore"], true);
    let none = app.get("/jobs?type=other", &org.live).await;
    assert_eq!(none.expect(200)["jobs"], json!([]));
    app.get("/jobs?status=done", &org.live)
        .await
        .expect_error(400, "validation_error");

    let detail = app.get(&format!("/jobs/{first}"), &org.live).await;
    let job = &detail.expect(200)["job"];
    assert_eq!(job["status"], "completed");
    assert_eq!(job["progress"], 100);
    assert_eq!(
        job["result"],
        json!({"score": 91, "pagesScanned": 12, "issuesCount": 3})
    );
    assert_time(&job["startedAt"]);
    assert_time(&job["completedAt"]);
    app.get("/jobs/job_missing", &org.live)
        .await
        .expect_error(404, "not_found");
}

pub(crate) async fn cancel_pending_and_processing_only(app: TestApp) {
    let org = org(&app, "Acme").await;
    let pid = property_id(&app, &org.live, "https://a.example").await;
    let pending = scan(&app, &org.live, &pid).await;
    let running = scan(&app, &org.live, &pid).await;
    let done = scan(&app, &org.live, &pid).await;
    complete(&app, &done, 70).await;
    let attempt = crate::start(&app, &running).await;
    let lease = app.xf.now().plus(chrono::Duration::minutes(5));
    let state = app
        .store
        .heartbeat(&attempt, Some(40), lease)
        .await
        .unwrap();
    assert_eq!(state, xf_core::store::AttemptState::Running);

    let reply = app
        .post(&format!("/jobs/{pending}/cancel"), &org.live, json!({}))
        .await;
    let data = reply.expect(200);
    assert_eq!(data["job"]["status"], "cancelled");
    assert_time(&data["job"]["completedAt"]);
    assert!(data["message"].as_str().unwrap().contains("cancelled"));

    let reply = app
        .post(&format!("/jobs/{running}/cancel"), &org.live, json!({}))
        .await;
    let data = reply.expect(200);
    assert_eq!(data["job"]["status"], "cancelled");
    assert_eq!(data["job"]["progress"], 40);

    for id in [&pending, &done] {
        app.post(&format!("/jobs/{id}/cancel"), &org.live, json!({}))
            .await
            .expect_error(400, "job_not_cancellable");
    }
    app.post("/jobs/job_missing/cancel", &org.live, json!({}))
        .await
        .expect_error(404, "not_found");
    let detail = app.get(&format!("/jobs/{running}"), &org.live).await;
    assert_eq!(detail.expect(200)["job"]["status"], "cancelled");
    // The running attempt learns of the cancel, and cannot finish the job afterwards.
    let state = app
        .store
        .heartbeat(&attempt, Some(50), lease)
        .await
        .unwrap();
    assert_eq!(state, xf_core::store::AttemptState::Cancelled);
    let finish = xf_core::store::Finish {
        attempt,
        outcome: xf_core::store::AttemptOutcome::Failed("late".into()),
    };
    let finished = app
        .store
        .finish_jobs(&[finish], app.xf.now())
        .await
        .unwrap();
    assert_eq!(finished, vec![None]);
    let detail = app.get(&format!("/jobs/{running}"), &org.live).await;
    assert_eq!(detail.expect(200)["job"]["progress"], 40, "progress kept");
}

crate::backends!(
    jobs_list_filter_and_detail,
    cancel_pending_and_processing_only
);
