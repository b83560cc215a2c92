//! Webhook deliveries per second, outbox to receiver: events of completed jobs are waiting
//! when the runtime starts; the figure is the time until every one of them was fanned out,
//! claimed, signed, posted to a local receiver (a real HTTP server on a loopback port, in
//! this process) and recorded in the delivery log. Not a test: it asserts nothing about speed
//! and reports figures to quote.
//!
//! Run with: `cargo bench -p xf-tests --bench webhooks` (PostgreSQL as for the tests:
//! `DATABASE_URL`, or 127.0.0.1:5432). `XF_BENCH_RUNS` (default 5) sets the runs per store
//! and `XF_BENCH_EVENTS` (default 10000) the events per run; the median is reported.
//! `XF_BENCH_SMOKE=1` makes one small run that checks the benchmark works (`xf_tests::bench`).

use std::sync::Arc;
use std::time::{Duration, Instant};
use xf_tests::bench::{median, organization, runs, size};

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

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs = runs();
    let events = size("XF_BENCH_EVENTS", 10_000, 100).max(1);
    println!("{events} events per run, {runs} runs per store, one local receiver");
    for name in ["memory", "postgres"] {
        let mut figures = Vec::with_capacity(runs);
        for _ in 0..runs {
            let store: Arc<dyn Store> = match name {
                "memory" => Arc::new(xf_storage_memory::MemoryStore::new()),
                _ => Arc::new(xf_storage_postgres::testing::fresh_database().await),
            };
            figures.push(run(store, events).await);
        }
        let shown: Vec<String> = figures.iter().map(|f| format!("{f:.0}")).collect();
        println!(
            "{name:<10} median {:>8.0} deliveries/s   (runs: {})",
            median(figures),
            shown.join(", ")
        );
    }
}
