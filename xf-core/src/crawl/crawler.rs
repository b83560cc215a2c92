//! The crawl itself: robots.txt, sitemaps, the site breadth first, then the external links.
//!
//! The crawl goes level by level (all pages at depth `d`, then all at `d + 1`), so a page's
//! depth is exactly its clicks from the start page, and the result does not depend on which
//! answer came first. Within a level, up to [`CrawlOptions::concurrency`] requests run at once
//! (one, spaced by the delay, when robots.txt sets a `Crawl-delay`). Redirects of every kind
//! (3xx with `Location`, a `Refresh` header, a `<meta http-equiv="refresh">`) are followed hop
//! by hop; a `429` waits out its `Retry-After` and is tried again. Only pages in the
//! property's [`Scope`] are fetched (its site, or the part under its URL's path); sitemap pages
//! no link reached are fetched last, within the same page budget, for the sitemap checks.
//! Last, the distinct links to other sites are checked, within budgets per scan and per host,
//! with one `HEAD` (or `GET` where `HEAD` answers an error) each: never crawled. Links to
//! the property's own site outside a URL-prefix scope are not requested at all.
//!
//! Nothing is lost: a page whose reading fails in the crawler itself (a panic) is kept with
//! [`PageRecord::crawler_failure`], logged with its address, and reported; it still counts
//! against the page budget, so no more than [`CrawlOptions::max_pages`] pages are fetched.

use std::collections::BTreeSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use url::Url;

use super::checks::{
    CrawlRecord, ExternalCheck, LinkOutcome, PageRecord, Redirect, RedirectKind, RenderRecord,
    ResolvedLinks, RobotsOutcome, SitemapOutcome,
};
use super::fetch::{Answer, FetchError, PageFetcher};
use super::headers::{is_html, parse_refresh, robots_tag_noindex};
use super::html::{PageFacts, PageScanner};
use super::render::{renders, PageRenderer, RenderInput, RenderSession, SessionOptions};
use super::robots::Robots;
use super::sitemap::{parse_sitemap, Sitemap};
use super::urls::{self, Scope};
use super::{FastMap, FastSet};
use crate::model::RenderMode;

/// The crawler's product token in robots.txt and its user agent.
pub const AGENT_TOKEN: &str = "xf-seo-bot";

/// How a crawl behaves.
#[derive(Debug, Clone)]
pub struct CrawlOptions {
    /// The most pages fetched (redirects and errors count; robots.txt and sitemaps do not).
    pub max_pages: u32,
    /// The deepest level followed, in clicks from the start page.
    pub max_depth: u32,
    /// Requests at once.
    pub concurrency: usize,
    /// The most bytes of a body read (more is not read; the page is reported as large).
    pub body_limit: usize,
    /// The most redirects followed from one address.
    pub max_redirects: usize,
    /// The most sitemap files read (indexes included).
    pub max_sitemaps: usize,
    /// The longest `Crawl-delay` honoured (a longer one is cut to this).
    pub max_crawl_delay: Duration,
    /// The longest `Retry-After` waited for, and how often a `429` is tried again.
    pub max_retry_after: Duration,
    /// Tries of an address answering `429` (the first included).
    pub tries_on_429: u32,
    /// The most distinct external links checked in one scan (the first ones found, in crawl
    /// order); 0 checks none.
    pub external_links: usize,
    /// The most external links checked on one host in one scan. A host's links are checked
    /// one after the other, never two at once.
    pub external_links_per_host: usize,
    /// The longest a page may take to render, from opening it to reading its DOM.
    pub render_timeout: Duration,
    /// The most bytes a rendered page's own requests may receive.
    pub render_bytes: u64,
}

impl Default for CrawlOptions {
    fn default() -> Self {
        CrawlOptions {
            max_pages: 100,
            max_depth: 5,
            concurrency: 4,
            body_limit: 2 * 1024 * 1024,
            max_redirects: 10,
            max_sitemaps: 10,
            max_crawl_delay: Duration::from_secs(10),
            max_retry_after: Duration::from_secs(30),
            tries_on_429: 3,
            external_links: 200,
            external_links_per_host: 20,
            render_timeout: Duration::from_secs(20),
            render_bytes: 16 * 1024 * 1024,
        }
    }
}

/// Crawls sites through a [`PageFetcher`], rendering pages through a [`PageRenderer`] where
/// it has one.
#[derive(Debug, Clone)]
pub struct Crawler {
    fetcher: Arc<dyn PageFetcher>,
    options: CrawlOptions,
    renderer: Option<(Arc<dyn PageRenderer>, RenderMode)>,
    /// The crawl's own rendering session while it crawls, or why it could not be opened.
    session: Option<Result<Arc<dyn RenderSession>, String>>,
    metrics: Option<crate::metrics::Metrics>,
}

/// A page to fetch and where it was found.
#[derive(Debug, Clone)]
struct Target {
    url: Url,
    depth: u32,
}

/// The text of a panic's payload.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    super::panic_message(payload).unwrap_or_else(|| "a panic without a message".to_owned())
}

/// The record of a page the crawler failed on, logged.
fn failed_page(target: &Target, why: String) -> PageRecord {
    tracing::error!(
        url = %target.url,
        failure = %why,
        "the crawler failed on a page; it is reported as page_not_audited"
    );
    PageRecord {
        url: target.url.to_string(),
        final_url: target.url.to_string(),
        depth: target.depth,
        crawler_failure: Some(why),
        ..PageRecord::default()
    }
}

/// Where a refresh (header or meta) on the page at `current` leads, if it leads elsewhere.
fn refresh_target(current: &Url, value: &str) -> Option<Url> {
    let refresh = parse_refresh(value)?;
    let to = urls::resolve(current, refresh.url.as_deref()?)?;
    (to != *current).then_some(to)
}

impl Crawler {
    /// A crawler over `fetcher`.
    pub fn new(fetcher: Arc<dyn PageFetcher>, options: CrawlOptions) -> Self {
        Crawler {
            fetcher,
            options,
            renderer: None,
            session: None,
            metrics: None,
        }
    }

    /// The same crawler, recording its renders into `metrics`.
    pub fn metrics(mut self, metrics: crate::metrics::Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// The same crawler, rendering the pages `mode` picks through `renderer` (each crawl in a
    /// session of its own).
    pub fn rendering(mut self, renderer: Arc<dyn PageRenderer>, mode: RenderMode) -> Self {
        self.renderer = (mode != RenderMode::Never).then_some((renderer, mode));
        self
    }

    /// Crawls the property at `start`, reporting progress (0 to 99) as pages are fetched.
    /// Fails when the site cannot be reached at all: its host is an address scans may not
    /// reach ([`FetchError::Forbidden`], and then nothing was requested from it), or
    /// robots.txt, the first request, got no HTTP answer (DNS, connection, timeout). A
    /// robots.txt that answers with a server error ends the crawl there, as it stops search
    /// engines.
    ///
    /// With a renderer, the crawl has its own rendering session, closed when it ends.
    pub async fn crawl(
        &self,
        start: &Url,
        progress: &(dyn Fn(u8) + Send + Sync),
    ) -> Result<CrawlRecord, FetchError> {
        let scope = Scope::of(start);
        let mut record = CrawlRecord::new(start.to_string());
        let robots = self.robots(start, &mut record).await?;
        record.robots_problems = robots.problems().to_vec();
        record.robots_problem_count = robots.problem_count();
        record.sitemaps = self.sitemaps(&scope, &robots).await;
        if record.robots == RobotsOutcome::Unreachable {
            return Ok(record);
        }
        let robots = Arc::new(robots);
        let Some((renderer, _)) = &self.renderer else {
            self.crawl_site(start, &scope, &robots, &mut record, progress)
                .await;
            return Ok(record);
        };
        // The session's requests to the site follow its robots.txt, as the crawl's own do.
        let rules = Arc::clone(&robots);
        let site = scope.clone();
        let options = SessionOptions {
            robots: Arc::new(move |url: &Url| {
                !site.same_site(url) || rules.is_allowed(AGENT_TOKEN, &urls::robots_path(url))
            }),
            page_timeout: self.options.render_timeout,
            page_bytes: self.options.render_bytes,
        };
        let mut crawler = self.clone();
        let opened = renderer.open(options).await.map_err(|error| {
            tracing::warn!(%error, "no rendering session: the pages to render are render_failed");
            error.to_string()
        });
        crawler.session = Some(opened);
        crawler
            .crawl_site(start, &scope, &robots, &mut record, progress)
            .await;
        if let Some(Ok(session)) = &crawler.session {
            session.close().await;
        }
        Ok(record)
    }

    /// The crawl past robots.txt: sitemaps, the site level by level, the sitemap pages no link
    /// led to, and the external links.
    ///
    /// One piece: the frontier, the fetches in flight and the bounds (pages, depth) are one
    /// piece of state that every step reads and moves.
    async fn crawl_site(
        &self,
        start: &Url,
        scope: &Scope,
        robots: &Robots,
        record: &mut CrawlRecord,
        progress: &(dyn Fn(u8) + Send + Sync),
    ) {
        let delay = robots
            .crawl_delay(AGENT_TOKEN)
            .map(|d| d.min(self.options.max_crawl_delay));
        let allowed = |url: &Url| robots.is_allowed(AGENT_TOKEN, &urls::robots_path(url));
        let blocked: Vec<String> = record
            .sitemaps
            .urls
            .iter()
            .filter(|u| Url::parse(u).is_ok_and(|u| !allowed(&u)))
            .cloned()
            .collect();
        record.disallowed.extend(blocked);
        if !allowed(start) {
            record.start_blocked = true;
            return;
        }
        let budget = self.options.max_pages as usize;
        let mut seen: FastSet<String> = FastSet::from_iter([start.to_string()]);
        // Addresses of the crawl's table already looked at as links to follow: each is
        // parsed and queued once, however many pages link to it.
        let mut followed: FastSet<u32> = FastSet::default();
        let mut level = vec![Target {
            url: start.clone(),
            depth: 0,
        }];
        while !level.is_empty() && record.pages.len() < budget {
            let mut fetchable = Vec::new();
            for target in level {
                if allowed(&target.url) {
                    fetchable.push(target);
                } else {
                    record.disallowed.insert(target.url.to_string());
                }
            }
            fetchable.truncate(budget - record.pages.len());
            let first_new = record.pages.len();
            self.fetch_all(scope, fetchable, delay, record, progress)
                .await;
            let mut next = Vec::new();
            for page in &record.pages[first_new..] {
                // A redirect inside the scope: the page it leads to is crawled as itself, at
                // the same depth (its links are followed there).
                if !page.redirects.is_empty() && !page.redirect_loop {
                    if let Ok(final_url) = Url::parse(&page.final_url) {
                        if scope.contains(&final_url) && seen.insert(page.final_url.clone()) {
                            next.push(Target {
                                url: final_url,
                                depth: page.depth,
                            });
                        }
                    }
                    continue;
                }
                if page.depth >= self.options.max_depth {
                    continue;
                }
                for link in links_to_follow(scope, page) {
                    // The queue holds no more than the budget can still fetch.
                    if next.len() >= budget.saturating_sub(record.pages.len()) {
                        break;
                    }
                    if !followed.insert(link) {
                        continue;
                    }
                    let address = record.address(link);
                    if seen.contains(address) {
                        continue;
                    }
                    if let Ok(url) = Url::parse(address) {
                        seen.insert(address.to_owned());
                        next.push(Target {
                            url,
                            depth: page.depth + 1,
                        });
                    }
                }
            }
            level = next;
        }
        // Sitemap pages no link led to: fetched for the sitemap checks, links not followed.
        let unlinked: Vec<Target> = record
            .sitemaps
            .urls
            .iter()
            .filter(|u| !seen.contains(*u) && !record.disallowed.contains(*u))
            .filter_map(|u| Url::parse(u).ok())
            .map(|url| Target { url, depth: 0 })
            .take(budget.saturating_sub(record.pages.len()))
            .collect();
        self.fetch_all(scope, unlinked, delay, record, progress)
            .await;
        self.check_external_links(scope, record).await;
    }

    /// Fetches `targets`, `concurrency` at a time (or one at a time, `delay` apart), and adds
    /// their records to `record` in the order given: one record per target, whatever
    /// happens to it.
    async fn fetch_all(
        &self,
        scope: &Scope,
        targets: Vec<Target>,
        delay: Option<Duration>,
        record: &mut CrawlRecord,
        progress: &(dyn Fn(u8) + Send + Sync),
    ) {
        let total = self.options.max_pages.max(1) as usize;
        let done_before = record.pages.len();
        let mut results: Vec<Option<PageRecord>> = vec![None; targets.len()];
        let concurrency = if delay.is_some() {
            1
        } else {
            self.options.concurrency.max(1)
        };
        let mut tasks = tokio::task::JoinSet::new();
        let mut running: FastMap<tokio::task::Id, (usize, Target)> = FastMap::default();
        let mut queue = targets.into_iter().enumerate();
        let mut done = 0;
        loop {
            while tasks.len() < concurrency {
                let Some((index, target)) = queue.next() else {
                    break;
                };
                let crawler = self.clone();
                let scope = scope.clone();
                let pause = delay.filter(|_| index > 0 || done_before > 0);
                let fetched = target.clone();
                let task = tasks.spawn(async move {
                    if let Some(pause) = pause {
                        tokio::time::sleep(pause).await;
                    }
                    let mut page = crawler.fetch_page(&scope, fetched).await;
                    // Resolved here, beside the other fetches, not on the crawl's own task.
                    let links = ResolvedLinks::of(&mut page, &scope);
                    (page, links)
                });
                running.insert(task.id(), (index, target));
            }
            let Some(joined) = tasks.join_next_with_id().await else {
                break;
            };
            let (id, outcome) = match joined {
                Ok((id, page)) => (id, Ok(page)),
                Err(error) => (error.id(), Err(error)),
            };
            let Some((index, target)) = running.remove(&id) else {
                continue;
            };
            let (mut page, links) = match outcome {
                Ok(fetched) => fetched,
                Err(error) if error.is_panic() => (
                    failed_page(&target, panic_text(&*error.into_panic())),
                    ResolvedLinks::default(),
                ),
                Err(error) => (
                    failed_page(&target, error.to_string()),
                    ResolvedLinks::default(),
                ),
            };
            let linked =
                std::panic::catch_unwind(AssertUnwindSafe(|| record.add_links(&mut page, links)));
            if let Err(payload) = linked {
                page = failed_page(&target, panic_text(&*payload));
            }
            results[index] = Some(page);
            done += 1;
            let fraction = (done_before + done) * 100 / total;
            progress(u8::try_from(fraction.min(99)).unwrap_or(99));
        }
        record.pages.extend(results.into_iter().flatten());
    }

    /// One `GET`, tried again after a `429` as its `Retry-After` says.
    async fn get(&self, url: &Url) -> Result<Answer, FetchError> {
        let mut tries = 0;
        loop {
            tries += 1;
            let answer = self.fetcher.get(url).await?;
            if answer.status != 429 || tries >= self.options.tries_on_429 {
                return Ok(answer);
            }
            let wait = answer
                .retry_after
                .unwrap_or(Duration::from_secs(1))
                .min(self.options.max_retry_after);
            tokio::time::sleep(wait).await;
        }
    }

    /// Fetches one address, following its redirects (HTTP, `Refresh` header, meta refresh)
    /// within the scope.
    async fn fetch_page(&self, scope: &Scope, target: Target) -> PageRecord {
        let began = Instant::now();
        let mut page = PageRecord {
            url: target.url.to_string(),
            depth: target.depth,
            final_url: target.url.to_string(),
            ..PageRecord::default()
        };
        let mut current = target.url;
        let mut visited = vec![current.to_string()];
        loop {
            let answer = match self.get(&current).await {
                Ok(answer) => answer,
                Err(error) => {
                    page.error_kind = Some(error.kind());
                    page.error = Some(error.to_string());
                    break;
                }
            };
            let status = answer.status;
            page.status = Some(status);
            page.header_noindex = answer.robots_tag.as_deref().is_some_and(robots_tag_noindex);
            let mut next = None;
            if (300..400).contains(&status) {
                next = answer
                    .location
                    .as_deref()
                    .and_then(|l| urls::resolve(&current, l))
                    .map(|to| (RedirectKind::Http, to));
            } else if (200..300).contains(&status) {
                next = answer
                    .refresh
                    .as_deref()
                    .and_then(|value| refresh_target(&current, value))
                    .map(|to| (RedirectKind::RefreshHeader, to));
                if next.is_none() && is_html(answer.content_type.as_deref()) {
                    let content_type = answer.content_type.clone();
                    let (mut facts, bytes, error, body) = self.read_html(answer).await;
                    next = facts
                        .meta_refresh
                        .as_deref()
                        .filter(|_| error.is_none())
                        .and_then(|value| refresh_target(&current, value))
                        .map(|to| (RedirectKind::MetaRefresh, to));
                    if next.is_none() {
                        if error.is_none() {
                            let input = RenderInput {
                                url: current.clone(),
                                status,
                                content_type,
                                body,
                            };
                            page.render = self.render(input, &mut facts).await;
                        }
                        page.facts = Some(facts);
                        page.body_bytes = bytes;
                        page.error_kind = error.as_ref().map(|_| "body");
                        page.error = error;
                    }
                }
            }
            let Some((kind, next)) = next else {
                break;
            };
            page.redirects.push(Redirect {
                status,
                kind,
                to: next.to_string(),
            });
            page.final_url = next.to_string();
            if visited.contains(&next.to_string()) {
                page.redirect_loop = true;
                break;
            }
            if page.redirects.len() > self.options.max_redirects {
                page.error_kind = Some("too_many_redirects");
                page.error = Some(format!(
                    "more than {} redirects",
                    self.options.max_redirects
                ));
                break;
            }
            if !scope.contains(&next) {
                // Leaves the scope: the crawl stops at the redirect.
                break;
            }
            visited.push(next.to_string());
            current = next;
        }
        page.elapsed_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
        page
    }

    /// Renders the page `mode` picks, when the crawl renders: on success, `facts` become the
    /// rendered page's and the record keeps the raw ones.
    async fn render(&self, input: RenderInput, facts: &mut PageFacts) -> Option<RenderRecord> {
        let session = self.session.as_ref()?;
        let (_, mode) = self.renderer.as_ref()?;
        if facts.truncated || !renders(*mode, facts) {
            return None;
        }
        let session = match session {
            Ok(session) => session,
            Err(why) => {
                return Some(RenderRecord {
                    failure: Some(format!("no browser could render the page: {why}")),
                    failure_kind: Some("unavailable"),
                    ..RenderRecord::default()
                })
            }
        };
        let url = input.url.clone();
        let timer = self
            .metrics
            .as_ref()
            .map(crate::metrics::Metrics::render_started);
        let rendered = session.render(input).await;
        drop(timer);
        match rendered {
            Ok(rendered) => {
                let mut scanner = PageScanner::new();
                let html = rendered.html.as_bytes();
                scanner.write(&html[..html.len().min(self.options.body_limit)]);
                let raw = std::mem::replace(facts, scanner.finish());
                Some(RenderRecord {
                    raw: Some(Box::new(raw)),
                    failure: None,
                    failure_kind: None,
                    exceptions: rendered.exceptions,
                    refused: rendered.refused,
                    cut_short: rendered.cut_short,
                })
            }
            Err(error) => {
                tracing::info!(%url, %error, "a page could not be rendered");
                Some(RenderRecord {
                    failure: Some(error.to_string()),
                    failure_kind: Some(error.kind()),
                    ..RenderRecord::default()
                })
            }
        }
    }

    /// Streams an HTML body through the scanner, up to the body limit; keeps the bytes read
    /// when the crawl renders pages.
    async fn read_html(&self, mut answer: Answer) -> (PageFacts, u64, Option<String>, Vec<u8>) {
        let mut scanner = PageScanner::new();
        let mut read: usize = 0;
        let mut error = None;
        let keep = self.renderer.is_some();
        let mut body = Vec::new();
        loop {
            match answer.body.next_chunk().await {
                Ok(Some(chunk)) => {
                    let room = self.options.body_limit.saturating_sub(read);
                    let take = chunk.len().min(room);
                    scanner.write(&chunk[..take]);
                    if keep {
                        body.extend_from_slice(&chunk[..take]);
                    }
                    read += chunk.len();
                    if take < chunk.len() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(failure) => {
                    error = Some(failure.to_string());
                    break;
                }
            }
        }
        let mut facts = scanner.finish();
        if read > self.options.body_limit {
            facts.truncated = true;
        }
        (facts, read as u64, error, body)
    }

    /// Reads robots.txt (following redirects within the site, as Google does). The first
    /// request of a crawl: a host scans may not reach fails it here.
    async fn robots(&self, start: &Url, record: &mut CrawlRecord) -> Result<Robots, FetchError> {
        let Some(address) = urls::origin_url(start, "/robots.txt") else {
            return Ok(Robots::allow_all());
        };
        let (status, body) = self.fetch_small(address, 1024 * 1024).await?;
        Ok(match status {
            Some(status) if (200..300).contains(&status) => {
                record.robots = RobotsOutcome::Found;
                Robots::parse(&body)
            }
            Some(status) if (400..500).contains(&status) => {
                record.robots = RobotsOutcome::Missing;
                Robots::allow_all()
            }
            _ => {
                record.robots = RobotsOutcome::Unreachable;
                Robots::disallow_all()
            }
        })
    }

    /// Fetches a small resource (robots.txt, a sitemap) with up to five redirects within its
    /// own site; returns its final status (`None` after too many redirects) and body (up to
    /// `limit` bytes).
    async fn fetch_small(
        &self,
        mut address: Url,
        limit: usize,
    ) -> Result<(Option<u16>, Vec<u8>), FetchError> {
        let home = address.clone();
        for _ in 0..=5 {
            let mut answer = self.get(&address).await?;
            if (300..400).contains(&answer.status) {
                match answer
                    .location
                    .as_deref()
                    .and_then(|l| urls::resolve(&address, l))
                {
                    Some(next) if urls::same_site(&home, &next) => {
                        address = next;
                        continue;
                    }
                    _ => return Ok((Some(answer.status), Vec::new())),
                }
            }
            let mut body = Vec::new();
            while let Ok(Some(chunk)) = answer.body.next_chunk().await {
                body.extend_from_slice(&chunk);
                if body.len() > limit {
                    body.truncate(limit);
                    break;
                }
            }
            return Ok((Some(answer.status), body));
        }
        Ok((None, Vec::new()))
    }

    /// Reads the sitemaps robots.txt names (on the property's site or, as robots.txt may
    /// name them, on another host), or `/sitemap.xml`, and the sitemaps their indexes name,
    /// up to [`CrawlOptions::max_sitemaps`] files. The page addresses kept are those in the
    /// scope.
    async fn sitemaps(&self, scope: &Scope, robots: &Robots) -> SitemapOutcome {
        let mut outcome = SitemapOutcome::default();
        let mut queue: Vec<Url> = Vec::new();
        for declared in robots.sitemaps() {
            // A relative or broken address is a robots.txt problem, reported as such.
            let Ok(address) = Url::parse(declared) else {
                continue;
            };
            if !matches!(address.scheme(), "http" | "https") {
                continue;
            }
            if queue.contains(&address) {
                continue;
            }
            if !scope.same_site(&address) {
                outcome.other_hosts.push(address.to_string());
            }
            queue.push(address);
        }
        let declared = !queue.is_empty();
        if !declared {
            queue.extend(urls::origin_url(scope.start(), "/sitemap.xml"));
        }
        let mut read_files: BTreeSet<String> = BTreeSet::new();
        let mut index = 0;
        while index < queue.len() && read_files.len() < self.options.max_sitemaps {
            let address = queue[index].clone();
            index += 1;
            if !read_files.insert(address.to_string()) {
                continue;
            }
            let limit = super::sitemap::MAX_BYTES;
            let (status, body) = self
                .fetch_small(address.clone(), limit)
                .await
                .unwrap_or((None, Vec::new()));
            if status.is_some() {
                outcome.fetched.push(address.to_string());
            }
            match status {
                Some(status) if (200..300).contains(&status) => match parse_sitemap(&body) {
                    Ok(Sitemap::UrlSet(entries)) => {
                        outcome.read += 1;
                        for entry in entries {
                            if let Some(url) = urls::resolve(&address, &entry.loc) {
                                if scope.contains(&url) {
                                    outcome.urls.insert(url.to_string());
                                }
                            }
                        }
                    }
                    Ok(Sitemap::Index(children)) => {
                        outcome.read += 1;
                        // An index names sitemaps on its own host (sitemaps.org).
                        queue.extend(
                            children
                                .iter()
                                .filter_map(|c| urls::resolve(&address, c))
                                .filter(|c| urls::same_site(&address, c)),
                        );
                    }
                    Err(error) => outcome
                        .invalid
                        .push((address.to_string(), error.to_string())),
                },
                // `/sitemap.xml` guessed and absent: there is no sitemap.
                Some(status) if (400..500).contains(&status) && !declared => {}
                Some(status) => outcome
                    .invalid
                    .push((address.to_string(), format!("answered {status}"))),
                None => outcome
                    .invalid
                    .push((address.to_string(), "could not be fetched".to_owned())),
            }
        }
        outcome
    }

    /// Checks the distinct links out of the scope that the crawled pages hold, within the
    /// budgets, each host's links one after the other and up to `concurrency` hosts at once.
    async fn check_external_links(&self, scope: &Scope, record: &mut CrawlRecord) {
        let mut chosen: Vec<(u32, Url)> = Vec::new();
        let mut per_host: FastMap<String, usize> = FastMap::default();
        let mut considered: FastSet<u32> = FastSet::default();
        let mut over_budget = 0_u32;
        for page in &record.pages {
            for &target in &page.external_links {
                if !considered.insert(target) {
                    continue;
                }
                // Addresses of the property's own site outside a URL-prefix scope belong to
                // the site's other properties: never requested.
                let Ok(url) = Url::parse(record.address(target)) else {
                    continue;
                };
                if scope.same_site(&url) {
                    continue;
                }
                let host = url.host_str().unwrap_or_default().to_owned();
                let on_host = per_host.entry(host).or_default();
                if chosen.len() < self.options.external_links
                    && *on_host < self.options.external_links_per_host
                {
                    *on_host += 1;
                    chosen.push((target, url));
                } else {
                    over_budget = over_budget.saturating_add(1);
                }
            }
        }
        if over_budget > 0 {
            tracing::debug!(
                over_budget,
                "external links past the scan's budgets were not checked"
            );
        }
        let mut by_host: Vec<Vec<(u32, Url)>> = Vec::new();
        let mut host_index: FastMap<String, usize> = FastMap::default();
        for (target, url) in chosen {
            let host = url.host_str().unwrap_or_default().to_owned();
            let index = *host_index.entry(host).or_insert_with(|| {
                by_host.push(Vec::new());
                by_host.len() - 1
            });
            by_host[index].push((target, url));
        }
        let mut tasks = tokio::task::JoinSet::new();
        let mut hosts = by_host.into_iter();
        let mut checks = Vec::new();
        loop {
            while tasks.len() < self.options.concurrency.max(1) {
                let Some(links) = hosts.next() else {
                    break;
                };
                let crawler = self.clone();
                let scope = scope.clone();
                tasks.spawn(async move {
                    let mut outcomes = Vec::new();
                    for (target, url) in links {
                        outcomes.push(ExternalCheck {
                            target,
                            outcome: crawler.check_link(&scope, &url).await,
                        });
                    }
                    outcomes
                });
            }
            match tasks.join_next().await {
                Some(Ok(outcomes)) => checks.extend(outcomes),
                Some(Err(error)) => {
                    tracing::error!(%error, "checking a host's external links failed");
                }
                None => break,
            }
        }
        checks.sort_by_key(|check| check.target);
        record.external_checks = checks;
    }

    /// Whether an external link answers: `HEAD`, then `GET` (its body unread) when `HEAD`
    /// answers with an error, which some servers give to `HEAD` alone; redirects followed up
    /// to five hops, but not back into the property's own site (whose pages the crawl decides
    /// about): such a redirect is the link's answer.
    async fn check_link(&self, scope: &Scope, url: &Url) -> LinkOutcome {
        let mut current = url.clone();
        for _ in 0..=5 {
            let answer = match self.fetcher.head(&current).await {
                Ok(answer) if answer.status >= 400 => match self.fetcher.get(&current).await {
                    Ok(answer) => answer,
                    Err(error) => return LinkOutcome::Failed(error),
                },
                Ok(answer) => answer,
                Err(error) => return LinkOutcome::Failed(error),
            };
            let next = (300..400)
                .contains(&answer.status)
                .then(|| {
                    answer
                        .location
                        .as_deref()
                        .and_then(|l| urls::resolve(&current, l))
                })
                .flatten();
            match next {
                Some(next) if !scope.same_site(&next) => current = next,
                _ => return LinkOutcome::Answered(answer.status),
            }
        }
        LinkOutcome::TooManyRedirects
    }
}

/// The links of a page to follow, as ids of the crawl's address table: from a fetched HTML
/// page that answered 2xx in the scope, unless it says `nofollow` for robots.
fn links_to_follow(scope: &Scope, page: &PageRecord) -> Vec<u32> {
    let Some(facts) = &page.facts else {
        return Vec::new();
    };
    if !page.is_ok()
        || facts
            .robots_directives
            .iter()
            .any(|d| d == "nofollow" || d == "none")
    {
        return Vec::new();
    }
    if !Url::parse(&page.final_url).is_ok_and(|final_url| scope.contains(&final_url)) {
        return Vec::new();
    }
    page.internal_links.iter().map(|link| link.target).collect()
}

/// Every address a crawl reached and audited: the pages it fetched and read through (see
/// [`PageRecord::was_read`]), the addresses robots.txt disallowed, the sitemap files that
/// answered, and the external links checked with a conclusive outcome. Issues about other
/// addresses keep their state: a page that gave no answer, broke off, was cut at the body
/// limit or that the crawler failed on, a sitemap entry or a redirect's target left unfetched
/// by the budget, or an external link that timed out is not known to be fixed.
pub fn reached(record: &CrawlRecord) -> Vec<String> {
    let mut reached: BTreeSet<String> = BTreeSet::new();
    reached.extend(record.disallowed.iter().cloned());
    reached.extend(record.sitemaps.fetched.iter().cloned());
    for page in record.pages.iter().filter(|page| page.was_read()) {
        reached.insert(page.url.clone());
    }
    for check in &record.external_checks {
        let conclusive = !matches!(
            check.outcome,
            LinkOutcome::Failed(FetchError::Timeout | FetchError::Forbidden(_))
        );
        if conclusive {
            reached.insert(record.address(check.target).to_owned());
        }
    }
    reached.into_iter().collect()
}
