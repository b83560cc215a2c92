//! The `seo-scan` job handler: crawls the property, analyses the crawl, and records the
//! findings with their lifecycle together with the job's completion (`{score, pagesScanned,
//! issuesCount}`), in one transaction.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use serde_json::{json, Value};
use url::Url;

use super::checks::{analyse, not_audited, score, Finding};
use super::crawler::{reached, CrawlOptions, Crawler};
use super::fetch::{FetchError, PageFetcher};
use super::render::PageRenderer;
use crate::metrics::Metrics;
use crate::runtime::{JobContext, JobError, JobHandler};
use crate::store::{FetchedPage, NewFinding, ScanFindings, Store};

/// Runs `seo-scan` jobs. [`crate::Xf::spawn_workers`] registers it unless the host gives a
/// handler of its own for the type.
#[derive(Debug, Clone)]
pub struct ScanHandler {
    store: Arc<dyn Store>,
    fetcher: Arc<dyn PageFetcher>,
    clock: Arc<dyn crate::time::Clock>,
    options: CrawlOptions,
    metrics: Metrics,
    renderer: Option<Arc<dyn PageRenderer>>,
}

impl ScanHandler {
    /// A handler crawling through `fetcher` with `options` (the job's budgets replace
    /// `max_pages` and `max_depth`).
    pub fn new(
        store: Arc<dyn Store>,
        fetcher: Arc<dyn PageFetcher>,
        clock: Arc<dyn crate::time::Clock>,
        options: CrawlOptions,
        metrics: Metrics,
    ) -> Self {
        ScanHandler {
            store,
            fetcher,
            clock,
            options,
            metrics,
            renderer: None,
        }
    }

    /// The same handler, rendering the pages each job's `render` picks through `renderer`.
    pub fn renderer(mut self, renderer: Arc<dyn PageRenderer>) -> Self {
        self.renderer = Some(renderer);
        self
    }
}

impl From<Finding> for NewFinding {
    fn from(finding: Finding) -> Self {
        NewFinding {
            issue_type: finding.check.id.to_owned(),
            title: finding.check.title.to_owned(),
            severity: finding.check.severity,
            scan_kind: finding.check.scope,
            url: finding.url,
            subject: finding.subject,
            evidence: finding.evidence,
            how_to_fix: finding.check.fix.to_owned(),
        }
    }
}

/// The store failed under the scan: xf's own failure, not the site's (the job shows words
/// for the customer, the log the cause, and a scan that fails so is not counted).
fn store_failure(error: crate::StoreError) -> JobError {
    JobError::Internal(crate::error::While::new("the store failed", error).into())
}

#[async_trait]
impl JobHandler for ScanHandler {
    /// One piece: the job's steps (payload, crawl, analysis, result, the one transaction
    /// that records it) in the order they run, each reading what the one before made.
    async fn run(&self, job: JobContext) -> Result<Value, JobError> {
        let record = job.job();
        let budget = record.scan_payload().ok_or_else(|| {
            JobError::Fail("the scan's payload is not {maxPages, maxDepth}".into())
        })?;
        let property_id = record
            .property_id()
            .ok_or_else(|| JobError::Fail("a scan job must name its property".into()))?;
        let property = self
            .store
            .get_property(property_id)
            .await
            .map_err(store_failure)?
            .ok_or_else(|| JobError::Fail("the property no longer exists".into()))?;
        let start = Url::parse(&property.url)
            .map_err(|e| JobError::Fail(format!("the property's URL does not parse: {e}")))?;
        let mut crawler = Crawler::new(
            Arc::clone(&self.fetcher),
            CrawlOptions {
                max_pages: budget.max_pages,
                max_depth: budget.max_depth,
                ..self.options.clone()
            },
        );
        if let Some(renderer) = &self.renderer {
            crawler = crawler
                .rendering(Arc::clone(renderer), budget.render)
                .metrics(self.metrics.clone());
        }
        let began = Instant::now();
        let crawled = crawler.crawl(&start, &|p| job.set_progress(p)).await;
        self.metrics.scan_phase("crawl", began.elapsed());
        if let Err(error) = &crawled {
            self.metrics.crawl_fetch_failed(error.kind());
        }
        let crawl = match crawled {
            Ok(crawl) => crawl,
            Err(forbidden @ FetchError::Forbidden(_)) => {
                return Err(JobError::Fail(format!(
                    "the site cannot be scanned: {forbidden}"
                )))
            }
            // No answer at all (DNS, connection, timeout): perhaps a passing outage, so the
            // scan is tried again after a backoff, and fails with this error once its
            // attempts are used up.
            Err(other) => {
                return Err(JobError::Retry(format!(
                    "the site could not be reached: {other}"
                )))
            }
        };
        let mut rendered = 0_u64;
        for page in &crawl.pages {
            if page.status.is_some() {
                self.metrics.crawl_page_fetched(page.body_bytes);
            }
            if let Some(render) = &page.render {
                match render.failure_kind {
                    Some(kind) => self.metrics.render_failed(kind),
                    None => rendered += 1,
                }
            }
            if let Some(kind) = page.failure_kind() {
                self.metrics.crawl_fetch_failed(kind);
            }
        }
        let began = Instant::now();
        let findings = analyse(&crawl);
        self.metrics.scan_phase("analysis", began.elapsed());
        // Pages whose checks did not run are fetched but not audited: they are not counted,
        // and what was found on them before keeps its state.
        let not_audited = not_audited(&findings);
        let audited = crawl
            .pages
            .iter()
            .filter(|page| !not_audited.contains(page.url.as_str()))
            .count();
        let score = score(&findings, audited);
        let result = json!({
            "score": score,
            "pagesScanned": audited,
            "issuesCount": findings.len(),
            "pagesRendered": rendered,
        });
        let mut reached = reached(&crawl);
        reached.retain(|address| !not_audited.contains(address.as_str()));
        drop(not_audited);
        let scan = ScanFindings {
            organization_id: record.organization_id.clone(),
            property_id: property.id.clone(),
            job_id: record.id.clone(),
            now: self.clock.now(),
            score,
            pages_scanned: audited as u64,
            findings: findings.into_iter().map(NewFinding::from).collect(),
            reached,
            pages: fetched_pages(&crawl),
        };
        // Findings and completion in one transaction: a scan cancelled meanwhile records
        // nothing (and then there is nothing left for the runtime to write either).
        let began = Instant::now();
        self.store
            .complete_scan(scan, job.attempt(), &result)
            .await
            .map_err(store_failure)?;
        self.metrics.scan_phase("store", began.elapsed());
        job.settle();
        self.metrics.scan_finished(audited as u64);
        Ok(result)
    }
}

/// The pages of a crawl, each address once (the first fetch of it).
fn fetched_pages(crawl: &crate::crawl::checks::CrawlRecord) -> Vec<FetchedPage> {
    let mut seen = super::FastSet::default();
    crawl
        .pages
        .iter()
        .filter(|page| seen.insert(page.url.as_str()))
        .map(|page| FetchedPage {
            url: page.url.clone(),
            status_code: page.status,
        })
        .collect()
}
