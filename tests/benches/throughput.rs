//! Requests per second through the service on each backend, and the PostgreSQL-to-memory
//! ratio. Not a test: it asserts nothing about speed and reports figures to quote.
//!
//! Run with: `cargo bench -p xf-tests --bench throughput` (PostgreSQL as for the tests:
//! `DATABASE_URL`, or 127.0.0.1:5432). `XF_BENCH_RUNS` (default 5) sets the runs per figure,
//! `XF_BENCH_READS` and `XF_BENCH_WRITES` (4000, 1000) the requests per run; the median is
//! reported. `XF_BENCH_SMOKE=1` makes one small run (see `xf_tests::bench`).

use std::sync::Arc;
use std::time::Instant;
use xf_tests::bench::{median, runs, size};

use http::Method;
use serde_json::json;
use tokio::task::JoinSet;
use xf_tests::{request, TestApp};

/// Requests in flight at once.
const CONCURRENCY: usize = 16;
/// Requests per run: reads and writes (`XF_BENCH_READS`, `XF_BENCH_WRITES`).
fn sizes() -> (usize, usize) {
    (
        size("XF_BENCH_READS", 4_000, 100),
        size("XF_BENCH_WRITES", 1_000, 50),
    )
}

struct Figures {
    get_rps: f64,
    post_rps: f64,
}

async fn prepare(app: &TestApp) -> (String, String) {
    let org = app.organization("Bench", "growth").await;
    let unlimited = json!({"limits": {"readPerHour": 1_000_000_000u64, "writePerHour": 1_000_000_000u64, "orgWriteDaily": 1_000_000_000u64}});
    app.admin(
        Method::PATCH,
        &format!("/organizations/{}", org.organization.id),
        Some(unlimited),
    )
    .await
    .expect(200);
    let created = app
        .post(
            "/properties",
            &org.live_key,
            json!({"url": "https://bench.example"}),
        )
        .await;
    let id = created.expect(201)["property"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    (org.live_key, id)
}

/// Sends `total` requests, `CONCURRENCY` at a time; returns requests per second.
async fn drive(
    app: &TestApp,
    total: usize,
    make: impl Fn(usize) -> http::Request<http_body_util::Full<bytes::Bytes>> + Send + Sync + 'static,
) -> f64 {
    let make = Arc::new(make);
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for worker in 0..CONCURRENCY {
        let (app, make) = (app.clone(), Arc::clone(&make));
        tasks.spawn(async move {
            let mut i = worker;
            while i < total {
                let reply = app.send(make(i)).await;
                assert!(
                    reply.status.is_success(),
                    "{}: {}",
                    reply.status,
                    reply.body
                );
                i += CONCURRENCY;
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    total as f64 / started.elapsed().as_secs_f64()
}

async fn measure(app: TestApp, runs: usize, label: &str) -> Figures {
    let (key, id) = prepare(&app).await;
    let path = format!("/properties/{id}");
    let (reads, writes) = sizes();
    // One warm-up run of each, not counted.
    let mut gets = Vec::new();
    let mut posts = Vec::new();
    for run in 0..=runs {
        let (get_path, get_key) = (path.clone(), key.clone());
        let get = drive(&app, reads, move |_| {
            request(Method::GET, &get_path, Some(&get_key), None, &[])
        })
        .await;
        let post_key = key.clone();
        let post = drive(&app, writes, move |i| {
            let body = json!({"url": format!("https://r{run}-{i}.bench.example")}).to_string();
            request(
                Method::POST,
                "/properties",
                Some(&post_key),
                Some(body),
                &[],
            )
        })
        .await;
        if run > 0 {
            println!("{label:>10} run {run}: GET {get:>8.0} req/s   POST {post:>8.0} req/s");
            gets.push(get);
            posts.push(post);
        }
    }
    Figures {
        get_rps: median(gets),
        post_rps: median(posts),
    }
}

fn main() {
    let runs = runs();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (reads, writes) = sizes();
        println!("{CONCURRENCY} requests in flight; {reads} GETs and {writes} POSTs per run; median of {runs} runs");
        let memory = measure(TestApp::memory().await, runs, "memory").await;
        let postgres = measure(TestApp::postgres().await, runs, "postgres").await;
        println!();
        println!("{:<28}{:>12}{:>12}{:>10}", "median req/s", "memory", "postgres", "pg/mem");
        for (name, mem, pg) in [
            ("GET /properties/{id}", memory.get_rps, postgres.get_rps),
            ("POST /properties", memory.post_rps, postgres.post_rps),
        ] {
            println!("{name:<28}{mem:>12.0}{pg:>12.0}{:>10.3}", pg / mem);
        }
    });
}
