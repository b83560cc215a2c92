//! Pages per second of a whole scan, and the memory it takes: a generated site of 10,000
//! pages (about 14 KB and 60 links each) served on loopback by a child process (this binary
//! again, with `XF_BENCH_SERVE` set), scanned through the API and the job runtime on the
//! memory store. Not a test: it asserts nothing about speed and reports figures to quote.
//!
//! Run with: `cargo bench -p xf-tests --bench crawl`. `XF_BENCH_RUNS` (default 5) sets the
//! runs and `XF_BENCH_PAGES` (default 10000) the site's size; the median is reported. Each run
//! is a fresh process (this binary again, with `XF_BENCH_ONE` set), so no run inherits memory
//! an earlier one left with the allocator. Memory is that process's peak resident set during
//! the scan (reset first through `/proc/self/clear_refs`) minus its resident set before it:
//! the crawler, the analysis, the store and the runtime, without the site's server.
//! `XF_BENCH_SMOKE=1` makes one small run that checks the benchmark works (`xf_tests::bench`).

use std::fmt::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};
use xf_tests::bench::{median, runs, size};

use axum::extract::{Path, State};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use axum::Router;
use xf_core::runtime::WorkerOptions;
use xf_tests::TestApp;

/// Links on each page.
const LINKS: usize = 60;

/// Page `n` of a site of `pages`: a unique title, description and heading, about 14 KB of
/// text, and 60 links spread over the site (the next page among them, so every page is
/// reachable).
fn page(n: usize, pages: usize) -> String {
    let mut html = String::with_capacity(15_000);
    let _ = write!(
        html,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Generated page number {n} of the benchmark</title>\
         <meta name=\"description\" content=\"Page {n} of a generated site that the crawl benchmark reads; it has text, headings and sixty links.\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         </head><body><h1>Page {n}</h1><nav>"
    );
    for k in 0..LINKS {
        let target = if k == 0 {
            (n + 1) % pages
        } else {
            (n * 7919 + k * k * 104_729 + k) % pages
        };
        let _ = write!(html, "<a href=\"/p/{target}\">Page {target}</a> ");
    }
    html.push_str("</nav><main>");
    let mut paragraph = 0;
    while html.len() < 14_000 {
        let _ = write!(
            html,
            "<h2>Section {paragraph}</h2><p>Paragraph {paragraph} of page {n}: generated words \
             that give the page enough text to read like an article, so the crawler parses a \
             realistic amount of markup and text for every page it fetches here.</p>"
        );
        paragraph += 1;
    }
    html.push_str("</main></body></html>");
    html
}

/// Serves the site on 127.0.0.1 (in the child process); returns its address.
async fn serve(pages: usize) -> std::net::SocketAddr {
    let router = Router::new()
        .route(
            "/",
            get(|State(pages): State<usize>| async move { Html(page(0, pages)) }),
        )
        .route(
            "/p/{n}",
            get(
                |State(pages): State<usize>, Path(n): Path<usize>| async move {
                    if n < pages {
                        Html(page(n, pages)).into_response()
                    } else {
                        http::StatusCode::NOT_FOUND.into_response()
                    }
                },
            ),
        )
        .with_state(pages);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    address
}

/// A field of `/proc/self/status` in KiB.
fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|line| line.starts_with(field))
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|value| value.parse().ok())
        .unwrap_or(0)
}

struct Figures {
    pages_per_second: f64,
    pages: u64,
    peak_mib_above_baseline: f64,
}

/// Starts the site's server as a child process; returns it and its port.
fn spawn_site(pages: usize) -> (std::process::Child, u16) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(std::env::current_exe().expect("this binary"))
        .env("XF_BENCH_SERVE", pages.to_string())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start the site");
    let stdout = child.stdout.take().expect("piped");
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("the site's port");
    (child, line.trim().parse().expect("a port"))
}

async fn run(pages: usize) -> Figures {
    let (mut site_process, port) = spawn_site(pages);
    let app = TestApp::configured(Arc::new(xf_storage_memory::MemoryStore::new()), |builder| {
        builder.allow_private_targets(true)
    });
    let (key, property) = app
        .crawlable_property(&format!("http://localhost:{port}/"), pages as u32)
        .await;
    let workers = app.xf.spawn_workers(WorkerOptions::new());

    // Peak resident set from here on.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let baseline = status_kib("VmRSS:");
    let started = Instant::now();
    let job = app
        .scan_to_end(&key, &property, pages as u32, Duration::from_secs(600))
        .await;
    assert_eq!(job["status"], "completed", "{job}");
    let result = &job["result"];
    let elapsed = started.elapsed();
    let peak = status_kib("VmHWM:");
    workers.shutdown(Duration::from_secs(5)).await;
    let _ = site_process.kill();
    let _ = site_process.wait();
    let scanned = result["pagesScanned"].as_u64().unwrap_or(0);
    Figures {
        pages_per_second: scanned as f64 / elapsed.as_secs_f64(),
        pages: scanned,
        peak_mib_above_baseline: peak.saturating_sub(baseline) as f64 / 1024.0,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if let Some(pages) = std::env::var("XF_BENCH_SERVE")
        .ok()
        .and_then(|p| p.parse().ok())
    {
        let address = serve(pages).await;
        println!("{}", address.port());
        return std::future::pending().await;
    }
    let runs = runs();
    let pages = size("XF_BENCH_PAGES", 10_000, 200).max(2);
    if std::env::var_os("XF_BENCH_ONE").is_some() {
        let figures = run(pages).await;
        println!(
            "{} {} {}",
            figures.pages, figures.pages_per_second, figures.peak_mib_above_baseline
        );
        return;
    }
    println!(
        "a generated site of {pages} pages (~14 KB, {LINKS} links each), memory store, {runs} runs"
    );
    let mut speeds = Vec::new();
    let mut memory = Vec::new();
    for _ in 0..runs {
        let output = std::process::Command::new(std::env::current_exe().expect("this binary"))
            .env("XF_BENCH_ONE", "1")
            .output()
            .expect("a run");
        let line = String::from_utf8_lossy(&output.stdout);
        let fields: Vec<f64> = line
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        let [scanned, pages_per_second, peak] = fields[..] else {
            panic!("a run printed {line:?}");
        };
        println!(
            "  {scanned} pages in the scan, {pages_per_second:.0} pages/s, peak {peak:.1} MiB above baseline"
        );
        speeds.push(pages_per_second);
        memory.push(peak);
    }
    println!(
        "median: {:.0} pages/s, peak {:.1} MiB above baseline",
        median(speeds),
        median(memory)
    );
}
