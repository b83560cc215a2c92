//! Pages per second of a scan of a real site, against a bare crawler of the same pages in the
//! same run: PostgreSQL's manual (Debian's `postgresql-doc-15`, or `XF_CORPUS_DIR`) served on
//! loopback from memory by a small hyper server on threads of its own.
//!
//! - **xf**: a scan queued through the API and run by the job runtime on the memory store,
//!   from the request to the completed job (robots.txt, the sitemap guess, the crawl at four
//!   requests at once, the analysis with every check, the issues written). External link
//!   checks are off (`external_links: 0`), as the bare crawler checks none.
//! - **bare**: reqwest and lol_html, breadth first from the same start at four requests at
//!   once, reading every page whole and following its same-host `<a href>` links: the least a
//!   crawler of those pages does.
//!
//! The two alternate, run after run; each reports pages per second, and the ratio of the
//! medians is xf's speed as a share of the bare crawler's. The process runs on mimalloc, as
//! xf-server does. To show where a scan's time goes, each run also reads the scan's phases
//! from xf's `xf_scan_phase_duration_seconds` (the crawl, the analysis, the store writing the
//! findings) and times xf's crawler alone (`Crawler::crawl`, no API, runtime or store). Not a
//! test: it asserts nothing about speed.
//!
//! Run with: `cargo bench -p xf-tests --bench corpus` (`XF_BENCH_RUNS`, default 5;
//! `XF_BENCH_CRAWLER_ONLY=1` runs xf's crawler alone, `XF_BENCH_RUNS` times, for a profiler;
//! `XF_BENCH_BARE_ONLY=1` the bare crawler alone, to profile the two in the same way).
//! `XF_BENCH_SMOKE=1` makes one small run that checks the benchmark works (`xf_tests::bench`).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};
use xf_tests::bench::{median, runs};

use url::Url;
use xf_core::crawl::checks::analyse;
use xf_core::crawl::crawler::{CrawlOptions, Crawler};
use xf_core::crawl::fetch::HttpFetcher;
use xf_core::runtime::WorkerOptions;
use xf_tests::corpus::{corpus_dir, StaticSite};
use xf_tests::TestApp;

/// The allocator xf-server runs with, for both crawlers: the process as it runs in
/// production.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Requests at once, for both crawlers (xf's default).
const CONCURRENCY: usize = 4;

/// How long the phases of a scan took, in seconds: the crawl, the analysis, the store.
type Phases = [f64; 3];

/// One scan by xf; returns the pages it audited, how long it took, and its phases.
async fn xf_scan(start: &str) -> (u64, Duration, Phases) {
    let options = CrawlOptions {
        external_links: 0,
        ..CrawlOptions::default()
    };
    let app = TestApp::configured(Arc::new(xf_storage_memory::MemoryStore::new()), |builder| {
        builder.allow_private_targets(true).crawl_options(options)
    });
    let (key, property) = app.crawlable_property(start, 10_000).await;
    let workers = app.xf.spawn_workers(WorkerOptions::new());
    let began = Instant::now();
    // Polled every millisecond (the timer's resolution): the poll adds at most that to the
    // time of the scan.
    let every = Duration::from_millis(1);
    let job = app
        .scan_to_end_polling(&key, &property, 10_000, Duration::from_secs(600), every)
        .await;
    assert_eq!(job["status"], "completed", "{job}");
    let result = &job["result"];
    let elapsed = began.elapsed();
    workers.shutdown(Duration::from_secs(5)).await;
    // The app is the scan's own, and the scan completed in one attempt (the site is on
    // loopback): each phase's sum is this scan's time in it.
    let metrics = app.xf.metrics().encode();
    let phase = |name: &str| {
        let series = format!("xf_scan_phase_duration_seconds_sum{{phase=\"{name}\"}} ");
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(&series)?.parse().ok())
            .unwrap_or_else(|| panic!("no {series}in the scan's metrics"))
    };
    let phases = [phase("crawl"), phase("analysis"), phase("store")];
    (
        result["pagesScanned"].as_u64().unwrap_or(0),
        elapsed,
        phases,
    )
}

/// xf's crawler and analysis alone, without the API, the runtime and the store: returns the
/// pages and the crawl's time.
async fn xf_crawl_and_analysis(start: &str) -> (u64, Duration) {
    let fetcher = Arc::new(HttpFetcher::new(
        "xf-seo-bot/bench",
        Duration::from_secs(10),
        true,
    ));
    let crawler = Crawler::new(
        fetcher,
        CrawlOptions {
            external_links: 0,
            max_pages: 10_000,
            max_depth: 100,
            ..CrawlOptions::default()
        },
    );
    let start = Url::parse(start).expect("the start");
    let began = Instant::now();
    let record = crawler.crawl(&start, &|_| {}).await.expect("a crawl");
    let crawled = began.elapsed();
    assert!(!analyse(&record).is_empty());
    (record.pages.len() as u64, crawled)
}

mod bare;

/// The links of a page, resolved against its address, without their fragments.
fn links(base: &Url, body: &[u8]) -> Vec<Url> {
    bare::hrefs(body)
        .iter()
        .filter_map(|href| base.join(href).ok())
        .map(|mut url| {
            url.set_fragment(None);
            url
        })
        .collect()
}

/// One bare breadth-first crawl; returns the pages it read and how long it took.
async fn bare_crawl(start: &str) -> (u64, Duration) {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client");
    let start = Url::parse(start).expect("the start");
    let began = Instant::now();
    let mut seen: HashSet<Url> = HashSet::from([start.clone()]);
    let mut level = vec![start.clone()];
    let mut pages = 0_u64;
    while !level.is_empty() {
        let mut next = Vec::new();
        let mut tasks = tokio::task::JoinSet::new();
        let mut queue = level.into_iter();
        loop {
            while tasks.len() < CONCURRENCY {
                let Some(url) = queue.next() else { break };
                let client = client.clone();
                tasks.spawn(async move {
                    let response = client.get(url.as_str()).send().await.ok()?;
                    let html = response
                        .headers()
                        .get(http::header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok())
                        .is_some_and(|v| v.starts_with("text/html"));
                    let body = response.bytes().await.ok()?;
                    Some(if html { links(&url, &body) } else { Vec::new() })
                });
            }
            let Some(joined) = tasks.join_next().await else {
                break;
            };
            pages += 1;
            for link in joined.ok().flatten().unwrap_or_default() {
                if link.host_str() == start.host_str()
                    && link.port() == start.port()
                    && seen.insert(link.clone())
                {
                    next.push(link);
                }
            }
        }
        level = next;
    }
    (pages, began.elapsed())
}

fn main() {
    let runs = runs();
    let dir = corpus_dir();
    // The site on a runtime and threads of its own.
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("the site's runtime");
        runtime.block_on(async move {
            let site = StaticSite::serve(&dir).await.expect("serve the corpus");
            sender.send(site).expect("hand the site over");
            std::future::pending::<()>().await;
        });
    });
    let site = receiver.recv().expect("the site");
    let start = site.url("/");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("the crawlers' runtime");
    let bare_only = std::env::var_os("XF_BENCH_BARE_ONLY").is_some();
    if bare_only || std::env::var_os("XF_BENCH_CRAWLER_ONLY").is_some() {
        // For a profiler: one crawler alone (xf's, then its analysis untimed; or the bare
        // one), `runs` times.
        for _ in 0..runs {
            let (pages, crawl) = if bare_only {
                runtime.block_on(bare_crawl(&start))
            } else {
                runtime.block_on(xf_crawl_and_analysis(&start))
            };
            println!("{pages} pages in {:.3} s", crawl.as_secs_f64());
        }
        return;
    }
    println!(
        "{} served on loopback; {runs} runs of each, alternating",
        corpus_dir().display()
    );
    let (mut xf_speeds, mut bare_speeds) = (Vec::new(), Vec::new());
    let (mut crawl_speeds, mut scan_times) = (Vec::new(), Vec::new());
    let mut phases: [Vec<f64>; 3] = Default::default();
    for run in 1..=runs {
        let (xf_pages, xf_time, xf_phases) = runtime.block_on(xf_scan(&start));
        let (bare_pages, bare_time) = runtime.block_on(bare_crawl(&start));
        let (crawled_pages, crawl_time) = runtime.block_on(xf_crawl_and_analysis(&start));
        crawl_speeds.push(crawled_pages as f64 / crawl_time.as_secs_f64());
        scan_times.push(xf_time.as_secs_f64());
        for (times, took) in phases.iter_mut().zip(xf_phases) {
            times.push(took);
        }
        let (xf_speed, bare_speed) = (
            xf_pages as f64 / xf_time.as_secs_f64(),
            bare_pages as f64 / bare_time.as_secs_f64(),
        );
        println!(
            "  run {run}: xf {xf_pages} pages in {:.2} s, {xf_speed:.0} pages/s; \
             bare {bare_pages} pages in {:.2} s, {bare_speed:.0} pages/s",
            xf_time.as_secs_f64(),
            bare_time.as_secs_f64()
        );
        xf_speeds.push(xf_speed);
        bare_speeds.push(bare_speed);
    }
    let (xf, bare) = (median(xf_speeds), median(bare_speeds));
    println!(
        "median: xf {xf:.0} pages/s, bare {bare:.0} pages/s: xf at {:.2}x the bare crawl",
        xf / bare
    );
    let crawl = median(crawl_speeds);
    let [crawling, analysis, store] = phases.map(|times| median(times) * 1000.0);
    println!(
        "where it goes (medians): a scan {:.1} ms: its crawl {crawling:.1} ms, the analysis \
         {analysis:.1} ms, the store {store:.1} ms; xf's crawler alone {crawl:.0} pages/s \
         ({:.2}x the bare crawl)",
        median(scan_times) * 1000.0,
        crawl / bare,
    );
}
