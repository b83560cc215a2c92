//! Webhook deliveries by the background runtime, to real receivers on loopback ports: job
//! outcomes reach the webhooks that subscribe to them, signed (checked with the
//! `standardwebhooks` crate); the retry schedule, `Retry-After`, and the 30-day purge with the
//! injected clock; `410 Gone`, time-outs, redirects and private addresses at connect time; and,
//! on PostgreSQL, two instances delivering each event once and the event of a job whose
//! process was killed right after completing it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use xf_core::ids::{JobId, PropertyId};
use xf_core::model::{JobRecord, JobStatus, JobSubject};
use xf_core::runtime::{WorkerHandle, WorkerOptions};
use xf_core::store::{AttemptOutcome, ClaimRequest, Finish};
use xf_core::testing::TestStore;
use xf_core::time::Timestamp;
use xf_core::webhooks::schedule::RETRY_DELAYS;
use xf_tests::receiver::{Answer, Receiver};
use xf_tests::TestApp;

/// An organization with a property, in an app allowed to reach loopback receivers.
struct World {
    app: TestApp,
    key: String,
    subject: JobSubject,
    organization: xf_core::ids::OrganizationId,
}

async fn world(store: Arc<dyn TestStore>, name: &str) -> World {
    let app = TestApp::configured(store, |b| b.allow_private_targets(true));
    // Signatures carry the injected clock's time; the verifier compares it with the real one.
    app.clock.set(Timestamp::from_datetime(chrono::Utc::now()));
    let created = app.organization(name, "growth").await;
    let property = app
        .post(
            "/properties",
            &created.live_key,
            json!({"url": format!("https://{}.example", name.to_lowercase())}),
        )
        .await;
    let property_id = property.expect(201)["property"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    World {
        subject: JobSubject {
            property_id: PropertyId::parse(&property_id).unwrap(),
            property_name: name.to_owned(),
            tenant_label: name.to_owned(),
            shop_domain: None,
        },
        organization: created.organization.id,
        key: created.live_key,
        app,
    }
}

impl World {
    /// Registers a webhook; its id and secret.
    async fn webhook(&self, body: Value) -> (String, String) {
        let created = self.app.post("/webhooks", &self.key, body).await;
        let data = created.expect(201);
        (
            data["webhook"]["id"].as_str().unwrap().to_owned(),
            data["secret"].as_str().unwrap().to_owned(),
        )
    }

    /// A job of a type of its own brought to `status` through the store, as a worker or a
    /// cancel would: the store writes its event.
    async fn finished_job(&self, status: JobStatus) -> JobId {
        let job_type = format!("hook-test-{}", uuid_like());
        let now = self.app.xf.now();
        let job = JobRecord::new(
            self.organization.clone(),
            job_type.clone(),
            json!({}),
            self.subject.clone(),
            now,
        );
        let store = &self.app.store;
        store.insert_jobs(std::slice::from_ref(&job)).await.unwrap();
        if status == JobStatus::Cancelled {
            store.cancel_job(&job.id, now).await.unwrap();
            return job.id;
        }
        let claimed = store
            .claim_jobs(&ClaimRequest {
                job_types: vec![job_type],
                limit: 1,
                now,
                lease_expires_at: now.plus(chrono::Duration::minutes(5)),
            })
            .await
            .unwrap();
        let outcome = match status {
            JobStatus::Completed => {
                AttemptOutcome::Completed(json!({"score": 91, "pagesScanned": 3, "issuesCount": 1}))
            }
            _ => AttemptOutcome::Failed("the site was down".to_owned()),
        };
        let finish = Finish {
            attempt: claimed[0].attempt.clone(),
            outcome,
        };
        let reached = store.finish_jobs(&[finish], now).await.unwrap();
        assert_eq!(reached, vec![Some(status)]);
        job.id
    }

    /// The runtime of this app, delivering, polling every 50 ms.
    fn deliver(&self) -> WorkerHandle {
        runtime(&self.app)
    }

    async fn log(&self, webhook: &str) -> Vec<Value> {
        let reply = self
            .app
            .get(
                &format!("/webhooks/{webhook}/deliveries?limit=100"),
                &self.key,
            )
            .await;
        reply.expect(200)["deliveries"].as_array().unwrap().clone()
    }

    /// Every row of the log, page by page.
    async fn full_log(&self, webhook: &str) -> Vec<Value> {
        let mut rows = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let path = match &cursor {
                None => format!("/webhooks/{webhook}/deliveries?limit=100"),
                Some(c) => format!("/webhooks/{webhook}/deliveries?limit=100&cursor={c}"),
            };
            let reply = self.app.get(&path, &self.key).await;
            rows.extend(reply.expect(200)["deliveries"].as_array().unwrap().clone());
            match reply.body["meta"]["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return rows,
            }
        }
    }

    async fn webhook_state(&self, webhook: &str) -> Value {
        let reply = self.app.get("/webhooks", &self.key).await;
        reply.expect(200)["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["id"] == webhook)
            .cloned()
            .expect("the webhook is listed")
    }
}

fn runtime(app: &TestApp) -> WorkerHandle {
    app.xf.spawn_workers(
        WorkerOptions::new()
            .poll_interval(Duration::from_millis(50))
            .purge_interval(Duration::from_millis(100)),
    )
}

fn uuid_like() -> String {
    xf_core::ids::new_id("t")
        .trim_start_matches("t_")
        .to_owned()
}

/// Waits until the receiver got `n` requests and the log holds their `n` attempts (so the
/// next step of the last one is decided before a test moves the clock).
async fn attempts(world: &World, receiver: &Receiver, webhook: &str, n: usize) {
    receiver.wait_for(n, Duration::from_secs(10)).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while world.log(webhook).await.len() < n {
        assert!(Instant::now() < deadline, "{n} attempts were recorded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits `wait` of real time and asserts the receiver got no more than `count` requests.
async fn nothing_more(receiver: &Receiver, count: usize, wait: Duration) {
    tokio::time::sleep(wait).await;
    assert_eq!(receiver.count(), count, "no attempt was due");
}

async fn job_outcomes_reach_the_webhooks_that_subscribe(store: Arc<dyn TestStore>) {
    let world = world(Arc::clone(&store), "Outcomes").await;
    let all = Receiver::start(Answer::Status(200)).await;
    let failures = Receiver::start(Answer::Status(200)).await;
    let disabled = Receiver::start(Answer::Status(200)).await;
    let elsewhere = Receiver::start(Answer::Status(200)).await;
    let (all_id, all_secret) = world.webhook(json!({"name": "all", "url": all.url})).await;
    world
        .webhook(json!({"name": "failures", "url": failures.url, "events": ["job.failed"]}))
        .await;
    world
        .webhook(json!({"name": "off", "url": disabled.url, "enabled": false}))
        .await;
    let other = xf_tests::TestApp::configured(store, |b| b.allow_private_targets(true));
    let stranger = other.organization("Stranger", "growth").await;
    other
        .post(
            "/webhooks",
            &stranger.live_key,
            json!({"name": "theirs", "url": elsewhere.url}),
        )
        .await
        .expect(201);

    let completed = world.finished_job(JobStatus::Completed).await;
    let failed = world.finished_job(JobStatus::Failed).await;
    let cancelled = world.finished_job(JobStatus::Cancelled).await;
    let workers = world.deliver();

    let received = all.wait_for(3, Duration::from_secs(10)).await;
    let verifier = standardwebhooks::Webhook::new(&all_secret).unwrap();
    let mut seen = Vec::new();
    for message in &received {
        verifier
            .verify(&message.body, &message.headers)
            .expect("signed with the webhook's secret");
        let body = message.json();
        assert_eq!(body["id"], message.header("webhook-id"));
        assert_eq!(body.get("test"), None, "only test deliveries carry `test`");
        let job_id = body["data"]["job"]["id"].as_str().unwrap().to_owned();
        let shown = world.app.get(&format!("/jobs/{job_id}"), &world.key).await;
        assert_eq!(
            body["data"]["job"],
            shown.expect(200)["job"],
            "the job as GET /jobs/{{id}} shows it"
        );
        seen.push((body["type"].as_str().unwrap().to_owned(), job_id));
    }
    seen.sort();
    assert_eq!(
        seen,
        vec![
            ("job.cancelled".to_owned(), cancelled.to_string()),
            ("job.completed".to_owned(), completed.to_string()),
            ("job.failed".to_owned(), failed.to_string()),
        ]
    );
    let only_failure = failures.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(only_failure[0].json()["type"], "job.failed");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(all.count(), 3, "each event once");
    assert_eq!(failures.count(), 1);
    assert_eq!(disabled.count(), 0, "a disabled webhook gets nothing");
    assert_eq!(
        elsewhere.count(),
        0,
        "another organization's webhook gets nothing"
    );

    let log = world.log(&all_id).await;
    assert_eq!(log.len(), 3);
    assert!(log
        .iter()
        .all(|row| row["statusCode"] == 200 && row["success"] == true));
    let state = world.webhook_state(&all_id).await;
    assert_eq!(state["lastDeliveryStatus"], 200);
    assert!(state["lastDeliveryAt"].is_string());
    workers.shutdown(Duration::from_secs(5)).await;
}

async fn failed_deliveries_follow_the_retry_schedule(store: Arc<dyn TestStore>) {
    let world = world(store, "Retries").await;
    let receiver = Receiver::start(Answer::Status(500)).await;
    let (id, _) = world
        .webhook(json!({"name": "flaky", "url": receiver.url}))
        .await;
    world.finished_job(JobStatus::Completed).await;
    let workers = world.deliver();
    attempts(&world, &receiver, &id, 1).await;
    let quiet = Duration::from_millis(400);
    // Each wait is the schedule's with ±20% jitter: never due before 80% of it, always
    // due after 120%.
    for (retry, delay) in RETRY_DELAYS.iter().enumerate() {
        let attempts = retry + 1;
        let early = delay.mul_f64(0.8) - Duration::from_secs(1);
        world
            .app
            .clock
            .advance(chrono::Duration::from_std(early).unwrap());
        nothing_more(&receiver, attempts, quiet).await;
        let late = delay.mul_f64(1.2) + Duration::from_secs(1) - early;
        world
            .app
            .clock
            .advance(chrono::Duration::from_std(late).unwrap());
        self::attempts(&world, &receiver, &id, attempts + 1).await;
        let received = receiver.received();
        // Every attempt carries the same webhook-id, for receivers to deduplicate on.
        assert_eq!(
            received[attempts].header("webhook-id"),
            received[0].header("webhook-id")
        );
    }
    // Eight attempts in all; then none, however long.
    world.app.clock.advance(chrono::Duration::days(3));
    nothing_more(&receiver, 8, quiet).await;
    let log = world.log(&id).await;
    assert_eq!(log.len(), 8);
    assert!(log
        .iter()
        .all(|r| r["statusCode"] == 500 && r["success"] == false));
    assert_eq!(world.webhook_state(&id).await["enabled"], true);
    workers.shutdown(Duration::from_secs(5)).await;
}

async fn retry_after_is_honoured(store: Arc<dyn TestStore>) {
    let world = world(store, "Patience").await;
    let receiver = Receiver::start(Answer::RetryAfter(429, "3600".to_owned())).await;
    let (id, _) = world
        .webhook(json!({"name": "busy", "url": receiver.url}))
        .await;
    world.finished_job(JobStatus::Failed).await;
    let workers = world.deliver();
    attempts(&world, &receiver, &id, 1).await;
    receiver.answer(Answer::Status(200));
    // The schedule alone would retry after about 5 s; the receiver asked for an hour.
    world.app.clock.advance(chrono::Duration::seconds(60));
    nothing_more(&receiver, 1, Duration::from_millis(400)).await;
    world.app.clock.advance(chrono::Duration::seconds(3541));
    attempts(&world, &receiver, &id, 2).await;
    world.app.clock.advance(chrono::Duration::days(2));
    nothing_more(&receiver, 2, Duration::from_millis(400)).await;
    workers.shutdown(Duration::from_secs(5)).await;
}

async fn gone_disables_the_webhook(store: Arc<dyn TestStore>) {
    let world = world(store, "Gone").await;
    let receiver = Receiver::start(Answer::Status(410)).await;
    let (id, _) = world
        .webhook(json!({"name": "gone", "url": receiver.url}))
        .await;
    world.finished_job(JobStatus::Completed).await;
    let workers = world.deliver();
    attempts(&world, &receiver, &id, 1).await;
    let state = world.webhook_state(&id).await;
    assert_eq!(state["enabled"], false);
    assert_eq!(state["lastDeliveryStatus"], 410);
    // No retry, and later events go nowhere.
    world.finished_job(JobStatus::Failed).await;
    world.app.clock.advance(chrono::Duration::days(2));
    nothing_more(&receiver, 1, Duration::from_millis(500)).await;
    let log = world.log(&id).await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["statusCode"], 410);
    workers.shutdown(Duration::from_secs(5)).await;
}

async fn redirects_are_attempts_that_failed(store: Arc<dyn TestStore>) {
    let world = world(store, "Redirected").await;
    let target = Receiver::start(Answer::Status(200)).await;
    let receiver = Receiver::start(Answer::Redirect(307, target.url.clone())).await;
    let (id, _) = world
        .webhook(json!({"name": "moved", "url": receiver.url}))
        .await;
    world.finished_job(JobStatus::Completed).await;
    let workers = world.deliver();
    attempts(&world, &receiver, &id, 1).await;
    world.app.clock.advance(chrono::Duration::seconds(7));
    attempts(&world, &receiver, &id, 2).await;
    assert_eq!(target.count(), 0, "the redirect was never followed");
    let log = world.log(&id).await;
    assert!(log
        .iter()
        .all(|r| r["statusCode"] == 307 && r["success"] == false));
    workers.shutdown(Duration::from_secs(5)).await;
}

async fn private_targets_are_refused_when_connecting(store: Arc<dyn TestStore>) {
    // Registered by an instance that allows private targets (as a misconfigured or
    // development instance might), delivered by one that does not: the delivery connects
    // nowhere private, whether the URL holds an IP literal or a name resolving to loopback.
    let world = world(Arc::clone(&store), "Guarded").await;
    let receiver = Receiver::start(Answer::Status(200)).await;
    let port = receiver.addr.port();
    let (literal, _) = world
        .webhook(json!({"name": "literal", "url": format!("http://127.0.0.1:{port}/a")}))
        .await;
    let (named, _) = world
        .webhook(json!({"name": "named", "url": format!("http://localhost:{port}/b")}))
        .await;
    world.finished_job(JobStatus::Completed).await;
    let strict = TestApp::over(store);
    strict.clock.set(world.app.xf.now());
    let workers = runtime(&strict);
    let deadline = Instant::now() + Duration::from_secs(10);
    while world.log(&literal).await.is_empty() || world.log(&named).await.is_empty() {
        assert!(Instant::now() < deadline, "both attempts were made");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for id in [&literal, &named] {
        let log = world.log(id).await;
        assert_eq!(log[0]["statusCode"], 0, "no connection, no status");
        assert_eq!(log[0]["success"], false);
    }
    assert_eq!(receiver.count(), 0, "nothing reached the loopback receiver");
    workers.shutdown(Duration::from_secs(5)).await;
}

async fn the_log_is_purged_after_30_days(store: Arc<dyn TestStore>) {
    let world = world(store, "Purged").await;
    let receiver = Receiver::start(Answer::Status(200)).await;
    let (id, _) = world
        .webhook(json!({"name": "old", "url": receiver.url}))
        .await;
    let test = format!("/webhooks/{id}/test");
    world
        .app
        .post(&test, &world.key, json!({}))
        .await
        .expect(200);
    world.app.clock.advance(chrono::Duration::days(2));
    world
        .app
        .post(&test, &world.key, json!({}))
        .await
        .expect(200);
    assert_eq!(world.log(&id).await.len(), 2);
    // 30 days and a minute after the first row, 28 days after the second.
    world
        .app
        .clock
        .advance(chrono::Duration::days(28) + chrono::Duration::minutes(1));
    let workers = world.deliver();
    let deadline = Instant::now() + Duration::from_secs(10);
    while world.log(&id).await.len() != 1 {
        assert!(Instant::now() < deadline, "the purge ran");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    workers.shutdown(Duration::from_secs(5)).await;
    let left = world.log(&id).await;
    assert_eq!(
        Timestamp::parse_rfc3339(left[0]["createdAt"].as_str().unwrap()).unwrap(),
        world
            .app
            .xf
            .now()
            .plus(-chrono::Duration::days(28) - chrono::Duration::minutes(1))
    );
}

macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(Arc::new(xf_storage_memory::MemoryStore::new())).await
                }
            )*
            use std::sync::Arc;
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(Arc::new(xf_storage_postgres::testing::fresh_database().await)).await
                }
            )*
            use std::sync::Arc;
        }
    };
}

on_both_stores!(
    job_outcomes_reach_the_webhooks_that_subscribe,
    failed_deliveries_follow_the_retry_schedule,
    retry_after_is_honoured,
    gone_disables_the_webhook,
    redirects_are_attempts_that_failed,
    private_targets_are_refused_when_connecting,
    the_log_is_purged_after_30_days,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_hangs_is_given_up_after_15_seconds() {
    let world = world(Arc::new(xf_storage_memory::MemoryStore::new()), "Slow").await;
    let receiver = Receiver::start(Answer::Hang(Duration::from_secs(30))).await;
    let (id, _) = world
        .webhook(json!({"name": "slow", "url": receiver.url}))
        .await;
    world.finished_job(JobStatus::Completed).await;
    let started = Instant::now();
    let workers = world.deliver();
    let deadline = Instant::now() + Duration::from_secs(25);
    let log = loop {
        let log = world.log(&id).await;
        if !log.is_empty() {
            break log;
        }
        assert!(Instant::now() < deadline, "the attempt ended");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(15) && took < Duration::from_secs(25),
        "{took:?}"
    );
    assert_eq!(log[0]["statusCode"], 0);
    assert!(log[0]["durationMs"].as_u64().unwrap() >= 15_000);
    workers.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_one_database_deliver_each_event_once() {
    let store: Arc<dyn TestStore> = Arc::new(xf_storage_postgres::testing::fresh_database().await);
    let world = world(Arc::clone(&store), "Twice").await;
    let receiver = Receiver::start(Answer::Status(200)).await;
    let (id, _) = world
        .webhook(json!({"name": "once", "url": receiver.url}))
        .await;
    const EVENTS: usize = 300;
    for _ in 0..EVENTS {
        world.finished_job(JobStatus::Completed).await;
    }
    let second = TestApp::configured(Arc::clone(&store), |b| b.allow_private_targets(true));
    second.clock.set(world.app.xf.now());
    let first_workers = world.deliver();
    let second_workers = runtime(&second);
    let received = receiver.wait_for(EVENTS, Duration::from_secs(60)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut ids: Vec<String> = receiver
        .received()
        .iter()
        .map(|m| m.header("webhook-id").to_owned())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), EVENTS, "every event arrived");
    assert_eq!(receiver.count(), EVENTS, "and each once");
    assert_eq!(received.len(), EVENTS);
    first_workers.shutdown(Duration::from_secs(5)).await;
    second_workers.shutdown(Duration::from_secs(5)).await;
    assert_eq!(
        world.full_log(&id).await.len(),
        EVENTS,
        "one log row per attempt"
    );
}
