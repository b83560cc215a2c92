//! CPU time of reading a page, without the network: every HTML page of the corpus (Debian's
//! `postgresql-doc-15`, or `XF_CORPUS_DIR`) held in memory and read by xf's page scanner
//! (`xf_core::crawl::html::scan`, every fact the checks need) and by lol_html with the one
//! `a[href]` selector the bare crawler of the `corpus` benchmark uses, round after round.
//! Reports microseconds per page (medians of the rounds) and their ratio.
//!
//! Run with: `cargo bench -p xf-tests --bench page_reader` (`XF_BENCH_RUNS`, default 5).
//! `XF_BENCH_SMOKE=1` reads a few pages once, to check the benchmark works.

use std::time::Instant;

use xf_tests::bench::{median, runs, smoke};
use xf_tests::corpus::corpus_dir;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod bare;

fn main() {
    let dir = corpus_dir();
    let mut pages: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .expect("the corpus")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "html"))
        .filter_map(|path| std::fs::read(path).ok())
        .collect();
    if smoke() {
        pages.truncate(5);
    }
    assert!(!pages.is_empty(), "no pages in {}", dir.display());
    let bytes: usize = pages.iter().map(Vec::len).sum();
    let runs = runs();
    println!(
        "{} pages ({:.1} MB) from {}; {runs} rounds of each, alternating",
        pages.len(),
        bytes as f64 / 1e6,
        dir.display()
    );
    let per_page = |began: Instant| began.elapsed().as_secs_f64() * 1e6 / pages.len() as f64;
    let (mut xf, mut bare) = (Vec::new(), Vec::new());
    for round in 1..=runs {
        let began = Instant::now();
        let words: u64 = pages
            .iter()
            .map(|page| u64::from(xf_core::crawl::html::scan(page).word_count))
            .sum();
        xf.push(per_page(began));
        let began = Instant::now();
        let links: usize = pages.iter().map(|page| bare::hrefs(page).len()).sum();
        bare.push(per_page(began));
        assert!(words > 0 && links > 0);
        println!(
            "  round {round}: xf {:.1} µs/page, bare {:.1} µs/page",
            xf[round - 1],
            bare[round - 1]
        );
    }
    let (xf, bare) = (median(xf), median(bare));
    println!("median: xf {xf:.1} µs/page, bare {bare:.1} µs/page: xf takes {:.2}x the bare reader's time", xf / bare);
}
