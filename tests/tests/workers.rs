//! Job workers as separate processes on one PostgreSQL database (the `xf-test-worker` binary
//! of this crate): every job runs exactly once, a worker killed mid-job loses nothing, and the
//! event of a job completed by a process killed right after is still delivered.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::{PgPool, Row};
use xf_core::ids::OrganizationId;
use xf_core::model::{EventType, JobRecord, JobStatus, JobSubject};
use xf_core::testing::TestStore;
use xf_core::time::{Clock, SystemClock};
use xf_storage_postgres::PgStore;
use xf_tests::TestApp;

/// A worker process and its stdout; killed (SIGKILL) when dropped, so a failing test leaves
/// none behind.
struct Worker(Child, BufReader<ChildStdout>);

impl Worker {
    /// Starts `xf-test-worker` on `url` and waits until its runtime runs.
    fn start(url: &str, lease_ms: u64, concurrency: usize) -> Worker {
        Self::start_with(url, lease_ms, concurrency, "on")
    }

    /// The same, with `XF_TEST_WEBHOOKS` set to `webhooks` (`off`: no deliveries).
    fn start_with(url: &str, lease_ms: u64, concurrency: usize, webhooks: &str) -> Worker {
        let mut child = Command::new(env!("CARGO_BIN_EXE_xf-test-worker"))
            .args([url, &lease_ms.to_string(), &concurrency.to_string()])
            .env("RUST_LOG", "warn")
            .env("XF_TEST_WEBHOOKS", webhooks)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start xf-test-worker");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut first = String::new();
        stdout
            .read_line(&mut first)
            .expect("read the worker's stdout");
        assert_eq!(first.trim(), "ready", "the worker did not start");
        Worker(child, stdout)
    }

    fn pid(&self) -> i32 {
        i32::try_from(self.0.id()).expect("pid fits")
    }

    /// SIGTERM, then waits for a clean exit; returns what the worker printed last (its
    /// shutdown report).
    fn stop(mut self) -> String {
        let status = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status()
            .expect("kill -TERM");
        assert!(status.success());
        let mut last = String::new();
        self.1
            .read_line(&mut last)
            .expect("read the worker's stdout");
        let exit = self.0.wait().expect("wait for the worker");
        assert!(exit.success(), "the worker exited with {exit}");
        last
    }

    /// SIGKILL: the process dies mid-whatever, as in a crash.
    fn kill(mut self) {
        self.0.kill().expect("SIGKILL");
        self.0.wait().expect("reap the worker");
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A fresh database: its store, its URL for the worker processes, and a pool for assertions.
async fn database() -> (PgStore, String, PgPool) {
    let store = xf_storage_postgres::testing::fresh_database().await;
    let name = store
        .pool()
        .connect_options()
        .get_database()
        .expect("a named database")
        .to_owned();
    let mut url = url::Url::parse(&xf_storage_postgres::testing::server_url()).expect("URL");
    url.set_path(&name);
    // `test_runs` is the worker binary's: it creates it before it says it is ready.
    let pool = store.pool().clone();
    (store, url.to_string(), pool)
}

/// `count` pending jobs of `job_type` for a new organization's property.
async fn jobs(
    store: Arc<dyn TestStore>,
    job_type: &str,
    count: usize,
    payload: serde_json::Value,
) -> Vec<JobRecord> {
    let app = TestApp::over(Arc::clone(&store));
    let org = app.organization("Workers", "growth").await;
    let created = app
        .post(
            "/properties",
            &org.live_key,
            json!({"url": "https://workers.example"}),
        )
        .await;
    let property_id = created.expect(201)["property"]["id"]
        .as_str()
        .expect("property id")
        .to_owned();
    let subject = JobSubject {
        property_id: xf_core::ids::PropertyId::parse(&property_id).expect("property id"),
        property_name: "workers.example".to_owned(),
        tenant_label: "Workers".to_owned(),
        shop_domain: None,
    };
    let org_id: OrganizationId = org.organization.id.clone();
    // Due now by the real clock, which the worker processes use.
    let now = SystemClock.now();
    (0..count)
        .map(|_| {
            JobRecord::new(
                org_id.clone(),
                job_type,
                payload.clone(),
                subject.clone(),
                now,
            )
        })
        .collect()
}

/// Polls `condition` every 100 ms until it holds, for at most `limit`.
async fn eventually<F, Fut>(limit: Duration, what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !condition().await {
        assert!(start.elapsed() < limit, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn count(pool: &PgPool, sql: &str) -> i64 {
    sqlx::query(sql)
        .fetch_one(pool)
        .await
        .expect("count")
        .get::<i64, _>(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_worker_processes_run_5000_jobs_exactly_once() {
    let (store, url, pool) = database().await;
    let store: Arc<dyn TestStore> = Arc::new(store);
    let first = Worker::start(&url, 30_000, 8);
    let second = Worker::start(&url, 30_000, 8);
    let batch = jobs(Arc::clone(&store), "test-record", 5_000, json!({})).await;
    for chunk in batch.chunks(500) {
        store.insert_jobs(chunk).await.expect("insert jobs");
    }

    eventually(
        Duration::from_secs(180),
        "all 5,000 jobs completed",
        || async {
            count(
                &pool,
                "SELECT count(*) FROM jobs WHERE status = 'completed'",
            )
            .await
                == 5_000
        },
    )
    .await;

    // Each job ran once: one run row per job, each in its first attempt.
    assert_eq!(count(&pool, "SELECT count(*) FROM test_runs").await, 5_000);
    assert_eq!(
        count(&pool, "SELECT count(DISTINCT job_id) FROM test_runs").await,
        5_000
    );
    assert_eq!(
        count(&pool, "SELECT count(*) FROM jobs WHERE attempts <> 1").await,
        0
    );
    // Both processes took part, and nothing was left behind.
    let pids: HashSet<i32> = sqlx::query("SELECT DISTINCT pid FROM test_runs")
        .fetch_all(&pool)
        .await
        .unwrap()
        .iter()
        .map(|row| row.get::<i32, _>(0))
        .collect();
    assert_eq!(pids, HashSet::from([first.pid(), second.pid()]));
    assert_eq!(
        count(
            &pool,
            "SELECT count(*) FROM jobs WHERE status <> 'completed'"
        )
        .await,
        0
    );
    // One `job.completed` event per job, and no other.
    assert_eq!(
        count(
            &pool,
            "SELECT count(DISTINCT job_id) FROM events WHERE event_type = 'job.completed'"
        )
        .await,
        5_000
    );
    assert_eq!(count(&pool, "SELECT count(*) FROM events").await, 5_000);
    for worker in [first, second] {
        let report = worker.stop();
        assert!(report.contains("released: 0"), "{report}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_job_is_taken_up_after_its_lease_and_completes_once() {
    let (store, url, pool) = database().await;
    let store: Arc<dyn TestStore> = Arc::new(store);
    let lease_ms = 1_500;
    let doomed = Worker::start(&url, lease_ms, 2);
    let job = jobs(Arc::clone(&store), "test-slow", 1, json!({"ms": 2_000}))
        .await
        .remove(0);
    store.insert_jobs(std::slice::from_ref(&job)).await.unwrap();
    eventually(Duration::from_secs(30), "the job started", || async {
        count(
            &pool,
            "SELECT count(*) FROM test_runs WHERE event = 'start'",
        )
        .await
            == 1
    })
    .await;
    let doomed_pid = doomed.pid();
    doomed.kill();
    let running = store.get_job(&job.id).await.unwrap().expect("job");
    assert_eq!(
        running.status,
        JobStatus::Processing,
        "the dead worker's lease still holds"
    );

    let survivor = Worker::start(&url, lease_ms, 2);
    eventually(Duration::from_secs(60), "the job completed", || async {
        store.get_job(&job.id).await.unwrap().expect("job").status == JobStatus::Completed
    })
    .await;

    let done = store.get_job(&job.id).await.unwrap().expect("job");
    assert_eq!(done.attempts, 2, "the second attempt completed it");
    assert_eq!(done.progress, 100);
    assert_eq!(done.result, Some(json!({"pid": survivor.pid()})));
    let runs: Vec<(String, i32, i32)> =
        sqlx::query("SELECT event, attempt, pid FROM test_runs ORDER BY at")
            .fetch_all(&pool)
            .await
            .unwrap()
            .iter()
            .map(|row| (row.get(0), row.get(1), row.get(2)))
            .collect();
    assert_eq!(
        runs,
        vec![
            ("start".to_owned(), 1, doomed_pid),
            ("start".to_owned(), 2, survivor.pid()),
            ("finish".to_owned(), 2, survivor.pid()),
        ],
        "the killed attempt never finished; the second ran once to the end"
    );
    let events = store.job_events(&job.id).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event_type, EventType::JobCompleted);
    assert_eq!(
        count(
            &pool,
            "SELECT count(*) FROM jobs WHERE status = 'processing'"
        )
        .await,
        0
    );
    survivor.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_of_a_job_completed_by_a_killed_process_is_still_delivered() {
    let (store, url, _pool) = database().await;
    let store: Arc<dyn TestStore> = Arc::new(store);
    let receiver =
        xf_tests::receiver::Receiver::start(xf_tests::receiver::Answer::Status(200)).await;
    let app = TestApp::configured(Arc::clone(&store), |b| b.allow_private_targets(true));
    app.clock.set(SystemClock.now());
    let owner = app.organization("Doomed", "growth").await;
    app.post(
        "/webhooks",
        &owner.live_key,
        json!({"name": "outcomes", "url": receiver.url}),
    )
    .await
    .expect(201);
    let property = app
        .post(
            "/properties",
            &owner.live_key,
            json!({"url": "https://doomed.example"}),
        )
        .await;
    let property_id = property.expect(201)["property"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let job = JobRecord::new(
        owner.organization.id.clone(),
        "test-record",
        json!({}),
        JobSubject {
            property_id: xf_core::ids::PropertyId::parse(&property_id).unwrap(),
            property_name: "doomed.example".to_owned(),
            tenant_label: "Doomed".to_owned(),
            shop_domain: None,
        },
        SystemClock.now(),
    );
    // A worker that completes the job and dies before it delivers anything.
    let doomed = Worker::start_with(&url, 30_000, 2, "off");
    store.insert_jobs(std::slice::from_ref(&job)).await.unwrap();
    eventually(Duration::from_secs(30), "the job completed", || async {
        store.get_job(&job.id).await.unwrap().expect("job").status == JobStatus::Completed
    })
    .await;
    doomed.kill();
    assert_eq!(receiver.count(), 0);

    // Any other instance delivers the event from the outbox.
    let workers = app.xf.spawn_workers(
        xf_core::runtime::WorkerOptions::new().poll_interval(Duration::from_millis(50)),
    );
    let received = receiver.wait_for(1, Duration::from_secs(30)).await;
    let body = received[0].json();
    assert_eq!(body["type"], "job.completed");
    assert_eq!(body["data"]["job"]["id"], job.id.as_str());
    let events = store.job_events(&job.id).await.unwrap();
    assert_eq!(body["id"], events[0].id.as_str());
    workers.shutdown(Duration::from_secs(5)).await;
    assert_eq!(receiver.count(), 1);
}
