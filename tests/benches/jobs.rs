//! No-op jobs per second through the whole lifecycle on PostgreSQL: queued (in batches of
//! 500), claimed, run, completed with their outbox event. Two shapes: one job per claim, and
//! batched claims. Not a test: it asserts nothing about speed and reports figures to quote.
//!
//! Each shape is measured beside its anchor, in alternating runs on the same database server:
//! the least a durable queue can do in plain SQL (a table of four columns with one partial
//! index; a claim is one `UPDATE … FOR UPDATE SKIP LOCKED`, a completion one statement that
//! also writes the job's event row, both committed durably), driven by as many loops as the
//! shape has claims in flight. The ratio of the two is the figure that compares across
//! machines: both follow the disk's flush rate.
//!
//! Run with: `cargo bench -p xf-tests --bench jobs` (PostgreSQL as for the tests:
//! `DATABASE_URL`, or 127.0.0.1:5432). `XF_BENCH_RUNS` (default 5) sets the runs of each
//! (xf and anchor alternating) and `XF_BENCH_JOBS` (default 20000) the jobs per run; medians
//! are reported, and the ratio of each pair.
//! `XF_BENCH_SMOKE=1` makes one small run that checks the benchmark works (`xf_tests::bench`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use xf_tests::bench::{organization, report, report_anchor, runs, size};

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

/// One shape of the runtime, and of its anchor.
struct Shape {
    name: &'static str,
    concurrency: usize,
    claim_batch: usize,
    /// The anchor's claiming loops: the claims in flight of the runtime's shape.
    raw_loops: usize,
}

const SHAPES: [Shape; 2] = [
    Shape {
        name: "one job per claim (16 slots)",
        concurrency: 16,
        claim_batch: 1,
        raw_loops: 16,
    },
    Shape {
        name: "batched claims (256 slots, up to 256 per claim)",
        concurrency: 256,
        claim_batch: 256,
        // One loop claims while the other completes what it claimed.
        raw_loops: 2,
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

/// The anchor's schema: a job is its id, status, attempts and result; the partial index
/// serves the claim.
const RAW_SCHEMA: &str = "\
    CREATE TABLE raw_jobs (id bigserial PRIMARY KEY, status text NOT NULL DEFAULT 'pending', \
        attempts integer NOT NULL DEFAULT 0, result jsonb); \
    CREATE INDEX raw_jobs_pending ON raw_jobs (id) WHERE status = 'pending'; \
    CREATE TABLE raw_events (id bigserial PRIMARY KEY, job_id bigint NOT NULL, payload jsonb NOT NULL)";

/// One run of the anchor: a fresh database, `jobs` rows queued 500 at a time while
/// `shape.raw_loops` loops claim up to `shape.claim_batch` each and complete them; returns
/// jobs per second.
async fn run_raw(shape: &Shape, jobs: usize) -> f64 {
    let store = xf_storage_postgres::testing::fresh_database().await;
    let pool = store.pool().clone();
    sqlx::raw_sql(RAW_SCHEMA)
        .execute(&pool)
        .await
        .expect("anchor schema");
    let done = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let loops: Vec<_> = (0..shape.raw_loops)
        .map(|_| {
            let pool = pool.clone();
            let done = Arc::clone(&done);
            let batch = i64::try_from(shape.claim_batch).expect("a small batch");
            tokio::spawn(async move {
                while done.load(Ordering::Relaxed) < jobs {
                    let claimed: Vec<i64> = sqlx::query_scalar(
                        "UPDATE raw_jobs SET status = 'processing', attempts = attempts + 1 \
                         WHERE id IN (SELECT id FROM raw_jobs WHERE status = 'pending' \
                         ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED) RETURNING id",
                    )
                    .bind(batch)
                    .fetch_all(&pool)
                    .await
                    .expect("claim");
                    if claimed.is_empty() {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        continue;
                    }
                    let completed = sqlx::query(
                        "WITH finished AS (UPDATE raw_jobs SET status = 'completed', \
                         result = 'null' WHERE id = ANY($1) RETURNING id) \
                         INSERT INTO raw_events (job_id, payload) \
                         SELECT id, '{\"type\":\"job.completed\"}' FROM finished",
                    )
                    .bind(&claimed)
                    .execute(&pool)
                    .await
                    .expect("complete")
                    .rows_affected();
                    done.fetch_add(
                        usize::try_from(completed).expect("a count"),
                        Ordering::Relaxed,
                    );
                }
            })
        })
        .collect();
    let mut queued = 0;
    while queued < jobs {
        let chunk = (jobs - queued).min(500);
        sqlx::query("INSERT INTO raw_jobs (result) SELECT NULL FROM generate_series(1, $1)")
            .bind(i32::try_from(chunk).expect("a small chunk"))
            .execute(&pool)
            .await
            .expect("queue");
        queued += chunk;
    }
    for task in loops {
        task.await.expect("a claiming loop");
    }
    let elapsed = start.elapsed();
    let (completed, events): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM raw_jobs WHERE status = 'completed'), \
                (SELECT count(*) FROM raw_events)",
    )
    .fetch_one(&pool)
    .await
    .expect("count");
    assert_eq!(completed as usize, jobs, "every anchor job completed");
    assert_eq!(events as usize, jobs, "one anchor event per job");
    pool.close().await;
    jobs as f64 / elapsed.as_secs_f64()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs = runs();
    let jobs = size("XF_BENCH_JOBS", 20_000, 200).max(1);
    println!("{jobs} no-op jobs per run, {runs} alternating runs of each, PostgreSQL");
    for shape in &SHAPES {
        let mut figures = Vec::with_capacity(runs);
        let mut anchors = Vec::with_capacity(runs);
        for _ in 0..runs {
            figures.push(run(shape, jobs).await);
            anchors.push(run_raw(shape, jobs).await);
        }
        println!("{}", shape.name);
        report("xf runtime", &figures, "jobs/s");
        report_anchor(&figures, &anchors, "jobs/s");
    }
}
