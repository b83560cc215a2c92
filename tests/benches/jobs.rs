//! No-op jobs per second through the whole lifecycle on PostgreSQL: queued (in batches of
//! 500), claimed, run, completed with their outbox event. Two shapes: one job per claim, and
//! batched claims. Not a test: it asserts nothing about speed and reports figures to quote.
//!
//! Run with: `cargo bench -p xf-tests --bench jobs` (PostgreSQL as for the tests:
//! `DATABASE_URL`, or 127.0.0.1:5432). `XF_BENCH_RUNS` (default 5) sets the runs per figure
//! and `XF_BENCH_JOBS` (default 20000) the jobs per run; the median is reported.
//! `XF_BENCH_SMOKE=1` makes one small run that checks the benchmark works (`xf_tests::bench`).

use std::sync::Arc;
use std::time::{Duration, Instant};
use xf_tests::bench::{median, organization, runs, size};

use async_trait::async_trait;
use serde_json::{json, Value};
use xf_core::model::{JobRecord, JobSubject};
use xf_core::runtime::{JobContext, JobError, JobHandler, WorkerOptions};
use xf_core::store::Store;
use xf_core::time::{Clock, SystemClock};
use xf_core::Xf;

/// Does nothing: the figure is the engine's cost alone.
#[derive(Debug)]
struct NoOp;

#[async_trait]
impl JobHandler for NoOp {
    async fn run(&self, _job: JobContext) -> Result<Value, JobError> {
        Ok(Value::Null)
    }
}

/// One shape of the runtime.
struct Shape {
    name: &'static str,
    concurrency: usize,
    claim_batch: usize,
}

const SHAPES: [Shape; 2] = [
    Shape {
        name: "one job per claim (16 slots)",
        concurrency: 16,
        claim_batch: 1,
    },
    Shape {
        name: "batched claims (256 slots, up to 256 per claim)",
        concurrency: 256,
        claim_batch: 256,
    },
];

/// One run: a fresh database, `jobs` no-op jobs; returns jobs per second.
async fn run(shape: &Shape, jobs: usize) -> f64 {
    let store = xf_storage_postgres::testing::fresh_database().await;
    let pool = store.pool().clone();
    let store: Arc<dyn Store> = Arc::new(store);
    let xf = Xf::builder(Arc::clone(&store))
        .secret_key(Xf::random_secret_key())
        .public_base_url("http://bench.invalid")
        .build()
        .expect("configuration");
    let org = organization(&xf, "growth").await;
    let subject = JobSubject {
        property_id: xf_core::ids::PropertyId::new(),
        property_name: "bench.example".to_owned(),
        tenant_label: "Bench".to_owned(),
        shop_domain: None,
    };
    let now = SystemClock.now();
    let batch: Vec<JobRecord> = (0..jobs)
        .map(|_| {
            JobRecord::new(
                org.organization.id.clone(),
                "bench-noop",
                json!({}),
                subject.clone(),
                now,
            )
        })
        .collect();

    let workers = xf.spawn_workers(
        WorkerOptions::new()
            .handler("bench-noop", NoOp)
            .concurrency(shape.concurrency)
            .claim_batch(shape.claim_batch),
    );
    let start = Instant::now();
    for chunk in batch.chunks(500) {
        store.insert_jobs(chunk).await.expect("insert jobs");
    }
    // Done when no job is pending or processing (a probe of one index, cheap enough not to
    // weigh on the figure).
    loop {
        let active: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM jobs WHERE status IN ('pending', 'processing'))",
        )
        .fetch_one(&pool)
        .await
        .expect("probe");
        if !active {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = start.elapsed();
    workers.shutdown(Duration::from_secs(5)).await;
    let (completed, events): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM jobs WHERE status = 'completed'), \
                (SELECT count(*) FROM events WHERE event_type = 'job.completed')",
    )
    .fetch_one(&pool)
    .await
    .expect("count");
    assert_eq!(completed as usize, jobs, "every job completed");
    assert_eq!(events as usize, jobs, "one event per job");
    pool.close().await;
    jobs as f64 / elapsed.as_secs_f64()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs = runs();
    let jobs = size("XF_BENCH_JOBS", 20_000, 200).max(1);
    println!("{jobs} no-op jobs per run, {runs} runs per shape, PostgreSQL");
    for shape in &SHAPES {
        let mut figures = Vec::with_capacity(runs);
        for _ in 0..runs {
            figures.push(run(shape, jobs).await);
        }
        let shown: Vec<String> = figures.iter().map(|f| format!("{f:.0}")).collect();
        println!(
            "{:<50} median {:>8.0} jobs/s   (runs: {})",
            shape.name,
            median(figures),
            shown.join(", ")
        );
    }
}
