//! A worker process for the multi-process tests of `tests/workers.rs`: the background runtime
//! of xf over a PostgreSQL database, with test handlers that record every run in a table of
//! the same database.
//!
//! Run with: `cargo run -p xf-tests --bin xf-test-worker -- <database-url> [lease-ms]
//! [concurrency]`. It prints `ready` once the runtime is started, runs until SIGTERM or
//! SIGINT, then shuts the runtime down with a 5-second grace. With `XF_TEST_WEBHOOKS=off` it
//! makes no webhook deliveries (a process that dies before it gets to them).
//!
//! Handlers:
//!
//! - `test-record`: inserts `(job_id, attempt, pid, 'run')` into `test_runs`.
//! - `test-slow`: inserts a `start` row, sleeps `payload.ms` milliseconds in 100 ms steps
//!   (reporting progress), then inserts a `finish` row.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};
use sqlx::PgPool;
use xf_core::runtime::{JobContext, JobError, JobHandler, WorkerOptions};
use xf_core::Xf;
use xf_storage_postgres::PgStore;

/// The table the handlers record runs in.
const CREATE_RUNS: &str = "CREATE TABLE IF NOT EXISTS test_runs ( \
     job_id text NOT NULL, attempt integer NOT NULL, pid integer NOT NULL, \
     event text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())";

/// Records one row of a run.
async fn record(pool: &PgPool, job: &JobContext, event: &str) -> Result<(), JobError> {
    sqlx::query("INSERT INTO test_runs (job_id, attempt, pid, event) VALUES ($1, $2, $3, $4)")
        .bind(job.job().id.as_str())
        .bind(i32::try_from(job.job().attempts).unwrap_or(i32::MAX))
        .bind(i32::try_from(std::process::id()).unwrap_or(i32::MAX))
        .bind(event)
        .execute(pool)
        .await
        .map_err(|error| JobError::Retry(error.to_string()))?;
    Ok(())
}

/// `test-record`.
#[derive(Debug)]
struct Record(PgPool);

#[async_trait]
impl JobHandler for Record {
    async fn run(&self, job: JobContext) -> Result<Value, JobError> {
        record(&self.0, &job, "run").await?;
        Ok(json!({ "pid": std::process::id() }))
    }
}

/// `test-slow`.
#[derive(Debug)]
struct Slow(PgPool);

#[async_trait]
impl JobHandler for Slow {
    async fn run(&self, job: JobContext) -> Result<Value, JobError> {
        record(&self.0, &job, "start").await?;
        let total = job.payload()["ms"].as_u64().unwrap_or(1_000);
        let steps = total.div_ceil(100).max(1);
        for step in 0..steps {
            tokio::time::sleep(Duration::from_millis(100)).await;
            job.set_progress(u8::try_from((step + 1) * 100 / steps).unwrap_or(100));
        }
        record(&self.0, &job, "finish").await?;
        Ok(json!({ "pid": std::process::id() }))
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .expect("usage: xf-test-worker <database-url> [lease-ms] [concurrency]");
    let lease_ms: u64 = args.next().map_or(30_000, |a| a.parse().expect("lease-ms"));
    let concurrency: usize = args.next().map_or(8, |a| a.parse().expect("concurrency"));

    let store = PgStore::connect(&url).expect("database URL");
    store.migrate().await.expect("migrations");
    let pool = store.pool().clone();
    sqlx::query(CREATE_RUNS)
        .execute(&pool)
        .await
        .expect("test_runs table");
    let xf = Xf::builder(Arc::new(store))
        .secret_key(Xf::random_secret_key())
        .public_base_url("http://worker.invalid")
        .build()
        .expect("configuration");
    let lease = Duration::from_millis(lease_ms);
    let webhooks = match std::env::var("XF_TEST_WEBHOOKS").as_deref() {
        Ok("off") => 0,
        _ => 64,
    };
    let workers = xf.spawn_workers(
        WorkerOptions::new()
            .handler("test-record", Record(pool.clone()))
            .handler("test-slow", Slow(pool))
            .concurrency(concurrency)
            .claim_batch(concurrency)
            .lease(lease)
            .heartbeat_interval(lease / 3)
            .rescue_interval(Duration::from_millis(200).min(lease / 3))
            .poll_interval(Duration::from_millis(200))
            .webhook_concurrency(webhooks),
    );
    println!("ready");

    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = terminate.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    let report = workers.shutdown(Duration::from_secs(5)).await;
    println!("stopped {report:?}");
}
