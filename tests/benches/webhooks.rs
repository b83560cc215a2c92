//! Webhook deliveries per second, outbox to receiver: events of completed jobs are waiting
//! when the runtime starts; the figure is the time until every one of them was fanned out,
//! claimed, signed, posted to a local receiver (a real HTTP server on a loopback port, in
//! this process) and recorded in the delivery log. Not a test: it asserts nothing about speed
//! and reports figures to quote.
//!
//! On PostgreSQL each run alternates with its anchor, the least a durable delivery loop can do
//! in plain SQL and HTTP: as many messages waiting in a table of four columns (one partial
//! index), two loops each claiming 32 with one `UPDATE … FOR UPDATE SKIP LOCKED`, posting them
//! at once to the same receiver with one reqwest client, and recording them with one statement
//! that marks them delivered and writes their log rows (64 in flight, as the runtime's
//! default `webhook_concurrency`). The anchor does not sign (an HMAC of a message costs about a
//! microsecond) and has no fan-out, retries or leases to keep. The ratio of the two is the
//! figure that compares across machines: both follow the disk's flush rate.
//!
//! Run with: `cargo bench -p xf-tests --bench webhooks` (PostgreSQL as for the tests:
//! `DATABASE_URL`, or 127.0.0.1:5432). `XF_BENCH_RUNS` (default 5) sets the runs per store
//! (and of the anchor) and `XF_BENCH_EVENTS` (default 10000) the events per run; medians are
//! reported, and the ratio of each PostgreSQL run to the anchor's run beside it.
//! `XF_BENCH_SMOKE=1` makes one small run that checks the benchmark works (`xf_tests::bench`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use xf_tests::bench::{organization, report, report_anchor, runs, size};

use serde_json::json;
use xf_core::model::{JobRecord, JobSubject};
use xf_core::runtime::WorkerOptions;
use xf_core::store::{AttemptOutcome, ClaimRequest, Finish, Store};
use xf_core::time::{Clock, SystemClock};
use xf_core::Xf;
use xf_tests::receiver::Receiver;

/// Completes `count` jobs of `org` through the store (claims and finishes in batches), so
/// their events wait in the outbox.
async fn completed_jobs(store: &Arc<dyn Store>, org: &xf_core::ids::OrganizationId, count: usize) {
    let subject = JobSubject {
        property_id: xf_core::ids::PropertyId::new(),
        property_name: "bench.example".to_owned(),
        tenant_label: "Bench".to_owned(),
        shop_domain: None,
    };
    let now = SystemClock.now();
    let mut left = count;
    while left > 0 {
        let n = left.min(500);
        let jobs: Vec<JobRecord> = (0..n)
            .map(|_| JobRecord::new(org.clone(), "bench-hook", json!({}), subject.clone(), now))
            .collect();
        store.insert_jobs(&jobs).await.expect("insert jobs");
        let claimed = store
            .claim_jobs(&ClaimRequest {
                job_types: vec!["bench-hook".to_owned()],
                limit: n,
                now,
                lease_expires_at: now.plus(chrono::Duration::minutes(10)),
            })
            .await
            .expect("claim");
        let finishes: Vec<Finish> = claimed
            .into_iter()
            .map(|c| Finish {
                attempt: c.attempt,
                outcome: AttemptOutcome::Completed(json!({"score": 90})),
            })
            .collect();
        store.finish_jobs(&finishes, now).await.expect("finish");
        left -= n;
    }
}

/// One run over `store`; deliveries per second, and a closure telling how many log rows
/// exist.
async fn run(store: Arc<dyn Store>, events: usize) -> f64 {
    let receiver = Receiver::counting().await;
    let xf = Xf::builder(Arc::clone(&store))
        .secret_key(Xf::random_secret_key())
        .public_base_url("http://bench.invalid")
        .allow_private_targets(true)
        .build()
        .expect("configuration");
    let org = organization(&xf, "growth").await;
    let caller = xf
        .authenticate(
            Some(&org.live_key),
            xf_core::plans::Entitlement::DeveloperApi,
        )
        .await
        .expect("the new key authenticates");
    let fingerprint = xf_core::Fingerprint::of("POST", "/webhooks", b"bench");
    let created = xf
        .create_webhook(
            &caller,
            &fingerprint,
            serde_json::from_value(json!({"name": "bench", "url": receiver.url}))
                .expect("a webhook body"),
        )
        .await
        .expect("webhook");
    completed_jobs(&store, &org.organization.id, events).await;

    let start = Instant::now();
    let workers = xf.spawn_workers(WorkerOptions::new().poll_interval(Duration::from_millis(20)));
    while receiver.count() < events {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Recorded too: the webhook's last delivery is set by the last write of a batch; wait
    // until the log holds every attempt.
    loop {
        let webhook = store
            .get_webhook(&created.webhook.id)
            .await
            .expect("read")
            .expect("webhook");
        let logged = count_log(&store, &webhook.id).await;
        if logged >= events {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = start.elapsed();
    workers.shutdown(Duration::from_secs(5)).await;
    assert_eq!(receiver.count(), events, "each event delivered once");
    events as f64 / elapsed.as_secs_f64()
}

/// Rows in the webhook's delivery log, paged through.
async fn count_log(store: &Arc<dyn Store>, webhook: &xf_core::ids::WebhookId) -> usize {
    let mut count = 0;
    let mut after = None;
    loop {
        let page = store
            .list_deliveries(
                webhook,
                &xf_core::store::PageRequest {
                    limit: 10_000,
                    after: after.clone(),
                },
            )
            .await
            .expect("list");
        count += page.len();
        match page.last() {
            Some(last) if page.len() == 10_000 => {
                after = Some(xf_core::store::After {
                    created_at: last.created_at,
                    id: last.id.as_str().to_owned(),
                })
            }
            _ => return count,
        }
    }
}

/// The anchor's schema: a message is its id, payload, status and attempts; its log rows the
/// answer's status.
const RAW_SCHEMA: &str = "\
    CREATE TABLE raw_messages (id bigserial PRIMARY KEY, payload text NOT NULL, \
        status text NOT NULL DEFAULT 'pending', attempts integer NOT NULL DEFAULT 0); \
    CREATE INDEX raw_messages_pending ON raw_messages (id) WHERE status = 'pending'; \
    CREATE TABLE raw_log (id bigserial PRIMARY KEY, message_id bigint NOT NULL, \
        status_code integer NOT NULL, took_ms integer NOT NULL)";

/// Messages each anchor loop claims at once.
const RAW_CLAIM: i64 = 32;

/// One run of the anchor: `events` messages waiting, delivered by two loops; deliveries per
/// second.
async fn run_raw(events: usize) -> f64 {
    let receiver = Receiver::counting().await;
    let store = xf_storage_postgres::testing::fresh_database().await;
    let pool = store.pool().clone();
    sqlx::raw_sql(RAW_SCHEMA)
        .execute(&pool)
        .await
        .expect("anchor schema");
    // A message of the size of a job's: its id, type and the job's view.
    let payload = json!({
        "type": "job.completed",
        "timestamp": "2026-11-28T12:00:00.000Z",
        "data": {"job": {
            "jobId": "job_01a2245de38d71b8b68a25a014a0d5d4", "type": "site_scan",
            "status": "completed", "propertyId": "prop_01a2245de38d71b8b68a25a014a0d5d4",
            "propertyName": "bench.example", "tenantLabel": "Bench", "progress": 100,
            "result": {"score": 90}, "createdAt": "2026-11-28T12:00:00.000Z",
            "startedAt": "2026-11-28T12:00:00.000Z", "completedAt": "2026-11-28T12:00:01.000Z",
        }},
    })
    .to_string();
    sqlx::query("INSERT INTO raw_messages (payload) SELECT $1 FROM generate_series(1, $2)")
        .bind(&payload)
        .bind(i32::try_from(events).expect("a small count"))
        .execute(&pool)
        .await
        .expect("messages");
    let client = reqwest::Client::new();
    let done = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let loops: Vec<_> = (0..2)
        .map(|_| {
            let (pool, client, done) = (pool.clone(), client.clone(), Arc::clone(&done));
            let url = receiver.url.clone();
            tokio::spawn(async move {
                while done.load(Ordering::Relaxed) < events {
                    let claimed: Vec<(i64, String)> = sqlx::query_as(
                        "UPDATE raw_messages SET status = 'sending', attempts = attempts + 1 \
                         WHERE id IN (SELECT id FROM raw_messages WHERE status = 'pending' \
                         ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED) RETURNING id, payload",
                    )
                    .bind(RAW_CLAIM)
                    .fetch_all(&pool)
                    .await
                    .expect("claim");
                    if claimed.is_empty() {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        continue;
                    }
                    let sent = futures::future::join_all(claimed.into_iter().map(|(id, body)| {
                        let request = client
                            .post(&url)
                            .header("content-type", "application/json")
                            .body(body)
                            .timeout(Duration::from_secs(15));
                        async move {
                            let started = Instant::now();
                            let status =
                                request.send().await.expect("the receiver answers").status();
                            let took =
                                i32::try_from(started.elapsed().as_millis()).unwrap_or(i32::MAX);
                            (id, i32::from(status.as_u16()), took)
                        }
                    }))
                    .await;
                    let ids: Vec<i64> = sent.iter().map(|s| s.0).collect();
                    let statuses: Vec<i32> = sent.iter().map(|s| s.1).collect();
                    let took: Vec<i32> = sent.iter().map(|s| s.2).collect();
                    let recorded = sqlx::query(
                        "WITH sent AS (SELECT * FROM unnest($1::bigint[], $2::integer[], \
                         $3::integer[]) AS s (id, status_code, took_ms)), \
                         marked AS (UPDATE raw_messages m SET status = 'delivered' FROM sent \
                         WHERE m.id = sent.id) \
                         INSERT INTO raw_log (message_id, status_code, took_ms) \
                         SELECT id, status_code, took_ms FROM sent",
                    )
                    .bind(&ids)
                    .bind(&statuses)
                    .bind(&took)
                    .execute(&pool)
                    .await
                    .expect("record")
                    .rows_affected();
                    done.fetch_add(
                        usize::try_from(recorded).expect("a count"),
                        Ordering::Relaxed,
                    );
                }
            })
        })
        .collect();
    for task in loops {
        task.await.expect("a delivery loop");
    }
    let elapsed = start.elapsed();
    let delivered: i64 =
        sqlx::query_scalar("SELECT count(*) FROM raw_messages WHERE status = 'delivered'")
            .fetch_one(&pool)
            .await
            .expect("count");
    assert_eq!(delivered as usize, events, "every anchor message delivered");
    assert_eq!(
        receiver.count(),
        events,
        "each anchor message received once"
    );
    pool.close().await;
    events as f64 / elapsed.as_secs_f64()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs = runs();
    let events = size("XF_BENCH_EVENTS", 10_000, 100).max(1);
    println!("{events} events per run, {runs} runs per store, one local receiver");
    for name in ["memory", "postgres"] {
        let mut figures = Vec::with_capacity(runs);
        let mut anchors = Vec::with_capacity(runs);
        for _ in 0..runs {
            let store: Arc<dyn Store> = match name {
                "memory" => Arc::new(xf_storage_memory::MemoryStore::new()),
                _ => Arc::new(xf_storage_postgres::testing::fresh_database().await),
            };
            figures.push(run(store, events).await);
            if name == "postgres" {
                anchors.push(run_raw(events).await);
            }
        }
        report(name, &figures, "deliveries/s");
        if !anchors.is_empty() {
            report_anchor(&figures, &anchors, "deliveries/s");
        }
    }
}
