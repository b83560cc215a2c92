//! Scheduled scans through the service (beyond the spec): setting, reading and deleting a
//! schedule, its errors, and the scheduler over simulated weeks with two instances.

use std::sync::Arc;

use http::Method;
use serde_json::{json, Value};
use xf_core::api::ScheduleTick;
use xf_core::model::{EventType, JobStatus, SEO_SCAN};
use xf_core::store::{JobFilter, PageRequest};
use xf_core::time::Timestamp;
use xf_core::Xf;
use xf_tests::{request, TestApp};

use crate::{backends, org, property};

backends!(
    a_schedule_is_set_read_and_deleted,
    a_weekly_schedule_queues_one_scan_per_slot_across_two_instances,
    a_busy_slot_is_skipped_and_a_spent_quota_is_sent,
);

fn at(text: &str) -> Timestamp {
    Timestamp::parse_rfc3339(text).expect("a time")
}

async fn put(app: &TestApp, key: &str, pid: &str, body: Value) -> xf_tests::Reply {
    app.send(request(
        Method::PUT,
        &format!("/properties/{pid}/schedule"),
        Some(key),
        Some(body.to_string()),
        &[],
    ))
    .await
}

async fn delete(app: &TestApp, key: &str, pid: &str) -> xf_tests::Reply {
    app.send(request(
        Method::DELETE,
        &format!("/properties/{pid}/schedule"),
        Some(key),
        None,
        &[],
    ))
    .await
}

/// `PUT` sets a schedule whose next slot is the first after now; `GET` reads it; a second
/// `PUT` replaces it; `DELETE` removes it. Bad input is a 400 naming the field; a test key's
/// writes store nothing.
pub(crate) async fn a_schedule_is_set_read_and_deleted(app: TestApp) {
    app.clock.set(at("2027-03-24T12:00:00.000Z"));
    let org = org(&app, "Schedules").await;
    let created = property(&app, &org.live, "https://acme.example").await;
    let pid = created["id"].as_str().unwrap().to_owned();
    let path = format!("/properties/{pid}/schedule");
    app.get(&path, &org.live)
        .await
        .expect_error(404, "not_found");

    let doc = app
        .send(request(Method::GET, "/openapi.json", None, None, &[]))
        .await
        .body;
    let schemas = xf_tests::Schemas::of(&doc);
    let weekly = json!({"frequency": "weekly", "time": "06:30", "timezone": "Europe/Berlin",
                        "dayOfWeek": "monday", "maxPages": 20});
    let reply = put(&app, &org.live, &pid, weekly.clone()).await;
    schemas.check("Envelope_ScheduleData", &reply.body);
    let schedule = reply.expect(200)["schedule"].clone();
    for accepted in [
        &weekly,
        &json!({"frequency": "daily", "time": "00:00", "timezone": "UTC", "dayOfWeek": null}),
        &json!({"frequency": "monthly", "time": "23:59", "timezone": "America/New_York", "dayOfMonth": 31, "maxDepth": 3}),
        &json!({"frequency": "monthly", "time": "23:59", "timezone": "UTC", "dayOfMonth": 1.0}),
    ] {
        assert!(schemas.accepts("ScheduleRequest", accepted), "{accepted}");
    }
    assert_eq!(
        schedule,
        json!({
            "propertyId": pid, "frequency": "weekly", "time": "06:30",
            "timezone": "Europe/Berlin", "dayOfWeek": "monday", "dayOfMonth": null,
            "maxPages": 20, "maxDepth": null,
            // Monday 2027-03-29 06:30 CEST (the clocks went forward on the 28th).
            "nextRunAt": "2027-03-29T04:30:00.000Z",
            "createdAt": "2027-03-24T12:00:00.000Z", "updatedAt": "2027-03-24T12:00:00.000Z",
            "runs": [],
        })
    );
    assert_eq!(
        app.get(&path, &org.live).await.expect(200)["schedule"],
        schedule
    );

    // `1.0` is an integer to JSON Schema, and so to the endpoint.
    let float_day =
        json!({"frequency": "monthly", "time": "23:00", "timezone": "UTC", "dayOfMonth": 1.0});
    assert_eq!(
        put(&app, &org.test, &pid, float_day).await.expect(200)["schedule"]["dayOfMonth"],
        1
    );
    app.clock.advance(chrono::Duration::hours(1));
    let monthly =
        json!({"frequency": "monthly", "time": "23:00", "timezone": "UTC", "dayOfMonth": 31});
    let replaced = put(&app, &org.live, &pid, monthly).await.expect(200)["schedule"].clone();
    assert_eq!(replaced["nextRunAt"], "2027-03-31T23:00:00.000Z");
    assert_eq!(replaced["createdAt"], "2027-03-24T12:00:00.000Z");
    assert_eq!(replaced["updatedAt"], "2027-03-24T13:00:00.000Z");

    for (body, field) in [
        (
            json!({"frequency": "weekly", "time": "06:30", "timezone": "Europe/Berlin"}),
            "dayOfWeek",
        ),
        (
            json!({"frequency": "daily", "time": "6:30", "timezone": "UTC"}),
            "time",
        ),
        (
            json!({"frequency": "daily", "time": "24:00", "timezone": "UTC"}),
            "time",
        ),
        (
            json!({"frequency": "daily", "time": "06:30", "timezone": "Europe/Atlantis"}),
            "timezone",
        ),
        (
            json!({"frequency": "daily", "time": "06:30", "timezone": "UTC", "dayOfMonth": 3}),
            "dayOfMonth",
        ),
        (
            json!({"frequency": "monthly", "time": "06:30", "timezone": "UTC", "dayOfMonth": 0}),
            "dayOfMonth",
        ),
        (
            json!({"frequency": "monthly", "time": "06:30", "timezone": "UTC", "dayOfMonth": 32}),
            "dayOfMonth",
        ),
        (
            json!({"frequency": "hourly", "time": "06:30", "timezone": "UTC"}),
            "frequency",
        ),
        (
            json!({"frequency": "daily", "time": "06:30", "timezone": "UTC", "maxPages": 0}),
            "maxPages",
        ),
        (
            json!({"frequency": "daily", "time": "06:30", "timezone": "UTC", "cron": "* * *"}),
            "cron",
        ),
        (json!({"frequency": "daily", "timezone": "UTC"}), "time"),
    ] {
        // The document says so too: none of these is a ScheduleRequest.
        assert!(!schemas.accepts("ScheduleRequest", &body), "{body}");
        let reply = put(&app, &org.live, &pid, body.clone()).await;
        reply.expect_error(400, "validation_error");
        let named = reply.body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(named.contains(field), "{body}: {named}");
    }
    // Nothing refused changed the schedule.
    assert_eq!(
        app.get(&path, &org.live).await.expect(200)["schedule"],
        replaced
    );

    // A test key gets the schedule as it would be; nothing is stored or deleted.
    let mocked = put(&app, &org.test, &pid, weekly).await.expect(200)["schedule"].clone();
    assert_eq!(mocked["frequency"], "weekly");
    assert_eq!(
        app.get(&path, &org.live).await.expect(200)["schedule"],
        replaced
    );
    delete(&app, &org.test, &pid).await.expect(200);
    app.get(&path, &org.live).await.expect(200);

    let deleted = delete(&app, &org.live, &pid).await;
    assert_eq!(
        deleted.expect(200),
        &json!({"propertyId": pid, "deleted": true})
    );
    app.get(&path, &org.live)
        .await
        .expect_error(404, "not_found");
    delete(&app, &org.live, &pid)
        .await
        .expect_error(404, "not_found");

    let stranger = crate::org(&app, "Stranger").await;
    put(
        &app,
        &stranger.live,
        &pid,
        json!({"frequency": "daily", "time": "06:30", "timezone": "UTC"}),
    )
    .await
    .expect_error(404, "not_found");
    app.get("/properties/prop_nope/schedule", &org.live)
        .await
        .expect_error(404, "not_found");
}

/// A second facade over the same store and clock: another instance.
fn second_instance(app: &TestApp) -> Xf {
    let store: Arc<dyn xf_core::store::Store> = app.store.clone();
    Xf::builder(store)
        .public_base_url("https://app.example.test")
        .clock(Arc::new(app.clock.clone()))
        .secret_key(xf_tests::TEST_SECRET.to_vec())
        .build()
        .expect("a complete configuration")
}

/// Runs every pending scan of `org` to completion, as a worker would.
async fn finish_pending_scans(app: &TestApp, org: &xf_core::ids::OrganizationId) -> usize {
    let filter = JobFilter {
        status: Some(JobStatus::Pending),
        job_type: Some(SEO_SCAN.to_owned()),
        ..JobFilter::default()
    };
    let page = PageRequest {
        limit: 100,
        after: None,
    };
    let pending = app.store.list_jobs(org, &filter, &page).await.unwrap();
    for job in &pending {
        crate::complete(app, job.id.as_str(), 90).await;
    }
    pending.len()
}

/// Over eight simulated weeks (crossing the night Berlin's clocks go forward), a weekly
/// schedule queues exactly one scan per slot, at the slot's local time, while two instances
/// run the scheduler at the same moments.
async fn a_weekly_schedule_queues_one_scan_per_slot_across_two_instances(app: TestApp) {
    app.clock.set(at("2027-02-28T12:00:00.000Z"));
    let org = org(&app, "Weekly").await;
    let created = property(&app, &org.live, "https://acme.example").await;
    let pid = created["id"].as_str().unwrap().to_owned();
    let body = json!({"frequency": "weekly", "time": "06:30", "timezone": "Europe/Berlin",
                      "dayOfWeek": "monday"});
    put(&app, &org.live, &pid, body).await.expect(200);
    let (one, two) = (app.xf.clone(), second_instance(&app));

    let mut total = ScheduleTick::default();
    let mut finished = 0;
    let end = at("2027-04-25T12:00:00.000Z");
    while app.xf.now() < end {
        app.clock.advance(chrono::Duration::hours(3));
        let (a, b) = tokio::join!(one.run_due_schedules(), two.run_due_schedules());
        for tick in [a.unwrap(), b.unwrap()] {
            total.queued += tick.queued;
            total.skipped_busy += tick.skipped_busy;
            total.quota_exceeded += tick.quota_exceeded;
            total.lost += tick.lost;
        }
        finished += finish_pending_scans(&app, &org.id).await;
    }
    assert_eq!(
        (total.queued, total.skipped_busy, total.quota_exceeded),
        (8, 0, 0)
    );
    assert_eq!(finished, 8);

    // The record: eight Mondays at 06:30 Berlin time, CET then CEST.
    let schedule = app
        .get(&format!("/properties/{pid}/schedule"), &org.live)
        .await
        .expect(200)["schedule"]
        .clone();
    let mut slots: Vec<String> = schedule["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| {
            assert_eq!(run["outcome"], "queued", "{run}");
            run["slot"].as_str().unwrap().to_owned()
        })
        .collect();
    slots.reverse();
    assert_eq!(
        slots,
        [
            "2027-03-01T05:30:00.000Z",
            "2027-03-08T05:30:00.000Z",
            "2027-03-15T05:30:00.000Z",
            "2027-03-22T05:30:00.000Z",
            "2027-03-29T04:30:00.000Z",
            "2027-04-05T04:30:00.000Z",
            "2027-04-12T04:30:00.000Z",
            "2027-04-19T04:30:00.000Z",
        ]
    );
    assert_eq!(schedule["nextRunAt"], "2027-04-26T04:30:00.000Z");
    // Each slot's scan is in the history, completed.
    let history = app
        .get(&format!("/properties/{pid}/scans?limit=100"), &org.live)
        .await;
    let scans = history.expect(200)["scans"].as_array().unwrap().clone();
    assert_eq!(scans.len(), 8);
    assert!(scans.iter().all(|scan| scan["status"] == "completed"));
    let usage = app.get("/usage", &org.live).await;
    let counted = usage.expect(200)["usage"]["counters"]["scans"].clone();
    // 2027-04 holds the last three.
    assert_eq!(counted, 3);
}

/// A slot that finds the property's scan still pending is skipped (recorded, nothing queued);
/// a slot that finds `scansPerMonth` spent queues nothing, is recorded, and its
/// `scan.schedule.failed` event goes to the outbox once, not at every pass.
async fn a_busy_slot_is_skipped_and_a_spent_quota_is_sent(app: TestApp) {
    app.clock.set(at("2027-05-01T00:00:00.000Z"));
    let org = org(&app, "Busy").await;
    app.admin(
        Method::PATCH,
        &format!("/organizations/{}", org.id),
        Some(json!({"limits": {"scansPerMonth": 1}})),
    )
    .await
    .expect(200);
    let created = property(&app, &org.live, "https://acme.example").await;
    let pid = created["id"].as_str().unwrap().to_owned();
    put(
        &app,
        &org.live,
        &pid,
        json!({"frequency": "daily", "time": "08:00", "timezone": "UTC"}),
    )
    .await
    .expect(200);
    let pass = || async { app.xf.run_due_schedules().await.unwrap() };

    // Day 1: queued (the month's one scan), and left pending.
    app.clock.set(at("2027-05-01T08:00:00.000Z"));
    assert_eq!(pass().await.queued, 1);
    // Passes before the next slot find nothing due.
    app.clock.advance(chrono::Duration::hours(12));
    assert_eq!(pass().await, ScheduleTick::default());
    // Day 2: the scan is still pending: skipped.
    app.clock.set(at("2027-05-02T08:00:00.000Z"));
    assert_eq!(pass().await.skipped_busy, 1);
    // Day 3: the scan finished, but the month's quota is spent.
    finish_pending_scans(&app, &org.id).await;
    app.clock.set(at("2027-05-03T08:00:05.000Z"));
    assert_eq!(pass().await.quota_exceeded, 1);
    for _ in 0..5 {
        app.clock.advance(chrono::Duration::minutes(1));
        assert_eq!(pass().await, ScheduleTick::default());
    }
    let runs = app
        .get(&format!("/properties/{pid}/schedule"), &org.live)
        .await
        .expect(200)["schedule"]["runs"]
        .clone();
    let outcomes: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["quota_exceeded", "skipped_busy", "queued"]);
    assert_eq!(
        runs[2]["jobId"].as_str().map(|id| id.starts_with("job_")),
        Some(true)
    );
    assert_eq!(runs[0]["jobId"], Value::Null);
    let events = app.store.list_events(None, 100_000).await.unwrap();
    let failed: Vec<_> = events
        .iter()
        .filter(|e| e.organization_id == org.id && e.event_type == EventType::ScanScheduleFailed)
        .collect();
    assert_eq!(failed.len(), 1);
    let xf_core::model::EventSubject::Snapshot(data) = &failed[0].subject else {
        panic!("a schedule event carries its data");
    };
    assert_eq!(data["schedule"]["propertyId"], pid.as_str());
    assert_eq!(data["schedule"]["slot"], "2027-05-03T08:00:00.000Z");
    assert_eq!(data["schedule"]["code"], "quota_exceeded");
    // Its body is the document's.
    let doc = app
        .send(request(Method::GET, "/openapi.json", None, None, &[]))
        .await
        .body;
    xf_tests::Schemas::of(&doc).check("ScheduleEventData", data);
}

/// The runtime a host starts runs the scheduler: a due slot is claimed without anyone
/// calling the pass by hand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_claims_due_slots_on_its_own() {
    let app = TestApp::memory().await;
    app.clock.set(at("2027-06-01T07:59:00.000Z"));
    let org = org(&app, "Runtime").await;
    let created = property(&app, &org.live, "https://acme.example").await;
    let pid = created["id"].as_str().unwrap().to_owned();
    put(
        &app,
        &org.live,
        &pid,
        json!({"frequency": "daily", "time": "08:00", "timezone": "UTC"}),
    )
    .await
    .expect(200);
    let workers = app.xf.spawn_workers(
        xf_core::runtime::WorkerOptions::new()
            .without_jobs()
            .schedule_interval(std::time::Duration::from_millis(20)),
    );
    app.clock.set(at("2027-06-01T08:00:00.000Z"));
    let path = format!("/properties/{pid}/scans");
    let mut scans = Vec::new();
    for _ in 0..250 {
        scans = app.get(&path, &org.live).await.expect(200)["scans"]
            .as_array()
            .unwrap()
            .clone();
        if !scans.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    workers.shutdown(std::time::Duration::from_secs(1)).await;
    assert_eq!(scans.len(), 1, "the runtime queued the slot's scan");
    assert_eq!(scans[0]["status"], "pending");
}
