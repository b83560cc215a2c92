//! The crawler on a real site: PostgreSQL's manual, as Debian's `postgresql-doc-15` installs it
//! (`.ci/test` installs the package; `XF_CORPUS_DIR` points at another copy), served on
//! loopback and scanned through the API and the runtime, as a user's scan runs.
//!
//! What must hold on real HTML: the scan completes, no page is lost (every page fetched is
//! audited, none fails in the crawler), the page budget is exact, external links are checked
//! within their budgets and never crawled (the test's [`OfflineWeb`] answers for the rest of
//! the web, which tests may not reach), and the findings per check equal the committed
//! expectation file, `tests/corpus/postgresql-doc-15.json`. So a change in what the checks
//! find on real pages shows in review, not by chance.
//!
//! When the findings change on purpose (a new or corrected check) or the corpus changes (a
//! new PostgreSQL release in Debian, named by the file's `corpus`), run the test with
//! `XF_UPDATE_EXPECTATIONS=1` to rewrite the file, read a sample of the new findings, and
//! commit the file with the change that explains it. `XF_CORPUS_SAMPLE=check_id,…` (with
//! `--nocapture`) prints some findings of those checks to read.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use xf_core::crawl::checks;
use xf_core::ids::PropertyId;
use xf_core::runtime::WorkerOptions;
use xf_core::store::{IssueFilter, PageRequest};
use xf_tests::corpus::{corpus_dir, corpus_title, OfflineWeb, StaticSite};
use xf_tests::TestApp;

const EXPECTATIONS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/corpus/postgresql-doc-15.json");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgresql_manual_is_scanned_whole_and_as_expected() {
    let dir = corpus_dir();
    assert!(
        dir.join("index.html").is_file(),
        "no corpus at {}: install Debian's postgresql-doc-15 (`.ci/test` does) or set \
         XF_CORPUS_DIR",
        dir.display()
    );
    let site = StaticSite::serve(&dir).await.expect("serve the corpus");
    let web = Arc::new(OfflineWeb::default());
    let app = TestApp::configured(Arc::new(xf_storage_memory::MemoryStore::new()), {
        let web = Arc::clone(&web);
        move |builder| builder.allow_private_targets(true).page_fetcher(web)
    });
    let workers = app.xf.spawn_workers(WorkerOptions::new());
    let (key, property) = app.crawlable_property(&site.url("/"), 5_000).await;
    let scan = |max_pages| app.scan_to_end(&key, &property, max_pages, Duration::from_secs(300));

    // The whole site.
    let job = scan(5_000).await;
    assert_eq!(job["status"], "completed", "{job}");
    let result = &job["result"];
    let scanned = result["pagesScanned"].as_u64().expect("pagesScanned");
    // Every request but robots.txt and /sitemap.xml (both absent) was a page, and every
    // page fetched was audited.
    assert_eq!(site.requests() - 2, scanned, "{result}");
    let issues = app
        .store
        .list_issues(
            &PropertyId::parse(&property).expect("a property id"),
            &IssueFilter::default(),
            &PageRequest {
                limit: 100_000,
                after: None,
            },
        )
        .await
        .expect("the issues");
    assert_eq!(result["issuesCount"].as_u64(), Some(issues.len() as u64));
    // `XF_CORPUS_SAMPLE=check_id,…` prints some findings of those checks, for reading them.
    for check in std::env::var("XF_CORPUS_SAMPLE")
        .unwrap_or_default()
        .split(',')
    {
        for issue in issues.iter().filter(|i| i.issue_type == check).take(25) {
            println!("{check} | {} | {}", issue.subject, issue.evidence);
        }
    }
    let mut findings: BTreeMap<String, u64> = BTreeMap::new();
    for issue in &issues {
        *findings.entry(issue.issue_type.clone()).or_default() += 1;
    }
    assert!(
        !findings.contains_key(checks::PAGE_NOT_AUDITED.id),
        "pages the crawler failed on: {:#?}",
        issues
            .iter()
            .filter(|i| i.issue_type == checks::PAGE_NOT_AUDITED.id)
            .collect::<Vec<_>>()
    );

    // External links: checked within the budgets, each once, and nothing else of the web.
    let elsewhere = web.elsewhere();
    let mut per_host: HashMap<String, usize> = HashMap::new();
    for address in &elsewhere {
        let host = url::Url::parse(address)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        *per_host.entry(host).or_default() += 1;
    }
    assert!(!elsewhere.is_empty(), "the manual links to other sites");
    assert!(
        elsewhere.len() <= 200,
        "{} external checks",
        elsewhere.len()
    );
    assert!(per_host.values().all(|count| *count <= 20), "{per_host:?}");
    let mut distinct = elsewhere.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        elsewhere.len(),
        "an external link was checked twice"
    );

    let actual = json!({
        "corpus": corpus_title(&dir),
        "pagesScanned": scanned,
        "findings": findings,
    });
    if std::env::var_os("XF_UPDATE_EXPECTATIONS").is_some() {
        let text = serde_json::to_string_pretty(&actual).expect("JSON") + "\n";
        std::fs::write(EXPECTATIONS, text).expect("write the expectation file");
    }
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(EXPECTATIONS).expect("tests/corpus/postgresql-doc-15.json"),
    )
    .expect("the expectation file is JSON");
    assert_eq!(
        actual,
        expected,
        "the scan of the corpus differs from tests/corpus/postgresql-doc-15.json; if the \
         change is meant, run with XF_UPDATE_EXPECTATIONS=1, review the findings and commit \
         the file:\n{}",
        serde_json::to_string_pretty(&actual).unwrap_or_default()
    );

    // The budget is exact on real pages too.
    let before = site.requests();
    let job = scan(250).await;
    assert_eq!(job["status"], "completed", "{job}");
    assert_eq!(job["result"]["pagesScanned"], 250, "{job}");
    assert_eq!(site.requests() - before - 2, 250);
    workers.shutdown(Duration::from_secs(5)).await;
}
