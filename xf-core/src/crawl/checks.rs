//! The issue catalogue, and the analysis that turns a crawl into findings.
//!
//! Every check has a stable id (the issue's `type`), a title, a severity, a scope (`page`: about
//! one URL; `site`: about the site as a whole, as docs/crawler.md lists: robots.txt, sitemaps,
//! duplicates across pages, broken internal links, redirect loops), a description and how to
//! fix it. [`CATALOGUE`] is the one list; docs/crawler.md's table is generated from it
//! ([`catalogue_markdown`]) and a test fails when the two differ.
//!
//! [`analyse`] is pure: it reads a [`CrawlRecord`] (what the crawler fetched and saw) and
//! returns [`Finding`]s, each naming its check, the page (for page checks), a `subject` that
//! identifies the finding across scans (the page's URL, or what a site finding is about) and a
//! short evidence string.

use std::collections::{BTreeMap, BTreeSet};

use url::Url;

use super::html::{PageFacts, Sampled};
use super::urls;
use super::{FastMap, FastSet};
use crate::model::{ScanKind, Severity};

/// One check of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check {
    /// Stable id: the issue's `type`.
    pub id: &'static str,
    /// Short title.
    pub title: &'static str,
    /// How serious a finding is.
    pub severity: Severity,
    /// `page` or `site`.
    pub scope: ScanKind,
    /// What the check finds, and why it matters.
    pub description: &'static str,
    /// How to fix a finding.
    pub fix: &'static str,
}

/// Thresholds of the checks.
pub mod limits {
    /// A title shorter than this (characters) is too short.
    pub const TITLE_MIN: usize = 15;
    /// A title longer than this (characters) is cut off in results.
    pub const TITLE_MAX: usize = 60;
    /// A meta description shorter than this (characters) is too short.
    pub const DESCRIPTION_MIN: usize = 70;
    /// A meta description longer than this (characters) is cut off in results.
    pub const DESCRIPTION_MAX: usize = 160;
    /// Fewer words of visible text than this is thin content.
    pub const THIN_WORDS: u32 = 200;
    /// Pages more clicks than this from the start page are too deep.
    pub const MAX_DEPTH: u32 = 3;
    /// A response slower than this (milliseconds, to the last byte) is slow.
    pub const SLOW_MS: u64 = 1_000;
    /// An HTML document larger than this (bytes) is too large.
    pub const LARGE_PAGE_BYTES: u64 = 1024 * 1024;
    /// More redirects than this before the final page make a chain.
    pub const REDIRECT_CHAIN: usize = 1;
}

use ScanKind::{Page, Site};
use Severity::{Critical, High, Low, Medium};

macro_rules! catalogue {
    ($($name:ident = $id:literal, $title:literal, $severity:ident, $scope:ident, $description:literal, $fix:literal;)+) => {
        $(
            #[doc = concat!("`", $id, "`: ", $title, ".")]
            pub const $name: Check = Check {
                id: $id,
                title: $title,
                severity: $severity,
                scope: $scope,
                description: $description,
                fix: $fix,
            };
        )+
        /// Every check, in the order of the documentation.
        pub const CATALOGUE: &[Check] = &[$($name),+];
    };
}

catalogue! {
    HTTP_4XX = "http_4xx", "Page answers with a client error", High, Page,
        "A page of the site answered with a 4xx status, so visitors and search engines get an error instead of content.",
        "Restore the page, or redirect its address (301) to the closest live page and update links to it.";
    HTTP_5XX = "http_5xx", "Page answers with a server error", Critical, Page,
        "A page answered with a 5xx status: the server failed. Search engines drop pages that keep failing.",
        "Look at the server's logs for the failing request and fix the error.";
    UNREACHABLE = "unreachable", "Page could not be fetched", High, Page,
        "The request for the page failed (connection refused or reset, timeout, or an invalid response).",
        "Check that the server answers this address within a few seconds.";
    REDIRECT_CHAIN = "redirect_chain", "Redirect chain", Medium, Page,
        "Reaching the page takes more than one redirect, which wastes crawl budget and slows visitors down.",
        "Redirect the first address straight to the final one, and link to the final address.";
    REDIRECT_LOOP = "redirect_loop", "Redirect loop", High, Site,
        "Following the redirects of an address comes back to an address already seen: the page can never load.",
        "Break the loop so that the redirects end at a page that answers 200.";
    TITLE_MISSING = "title_missing", "Missing title", High, Page,
        "The page has no <title> element; search engines make one up for their results.",
        "Add a <title> that says what the page is about.";
    TITLE_EMPTY = "title_empty", "Empty title", High, Page,
        "The page's <title> element is empty.",
        "Write a title that says what the page is about.";
    TITLE_TOO_SHORT = "title_too_short", "Title too short", Low, Page,
        "The title has fewer than 15 characters, too few to describe the page.",
        "Write a more descriptive title (about 30 to 60 characters).";
    TITLE_TOO_LONG = "title_too_long", "Title too long", Low, Page,
        "The title has more than 60 characters and is likely cut off in search results.",
        "Shorten the title to 60 characters or fewer, most important words first.";
    TITLE_MULTIPLE = "title_multiple", "Several titles", Medium, Page,
        "The page has more than one <title> element; search engines pick one.",
        "Keep a single <title> in the <head>.";
    DESCRIPTION_MISSING = "meta_description_missing", "Missing meta description", Medium, Page,
        "The page has no meta description; search engines take a snippet of their choice.",
        "Add a <meta name=\"description\"> that summarises the page.";
    DESCRIPTION_EMPTY = "meta_description_empty", "Empty meta description", Medium, Page,
        "The page's meta description is empty.",
        "Write a description of about 70 to 160 characters.";
    DESCRIPTION_TOO_SHORT = "meta_description_too_short", "Meta description too short", Low, Page,
        "The meta description has fewer than 70 characters.",
        "Describe the page in about 70 to 160 characters.";
    DESCRIPTION_TOO_LONG = "meta_description_too_long", "Meta description too long", Low, Page,
        "The meta description has more than 160 characters and is likely cut off.",
        "Shorten the description to 160 characters or fewer.";
    DESCRIPTION_MULTIPLE = "meta_description_multiple", "Several meta descriptions", Medium, Page,
        "The page has more than one meta description.",
        "Keep a single <meta name=\"description\">.";
    H1_MISSING = "h1_missing", "Missing h1", Medium, Page,
        "The page has no <h1> heading.",
        "Give the page one <h1> that states its topic.";
    H1_EMPTY = "h1_empty", "Empty h1", Medium, Page,
        "The page's <h1> has no text.",
        "Put the page's topic in its <h1>.";
    H1_MULTIPLE = "h1_multiple", "Several h1 headings", Low, Page,
        "The page has more than one <h1>, which blurs its main topic.",
        "Keep one <h1> and use <h2> to <h6> for sections.";
    HEADING_ORDER = "heading_order", "Heading levels skipped", Low, Page,
        "A heading jumps more than one level down (an <h2> followed by an <h4>), which breaks the outline.",
        "Use heading levels in order without skipping.";
    CANONICAL_MULTIPLE = "canonical_multiple", "Several canonical links", High, Page,
        "The page declares more than one rel=canonical; search engines ignore them all.",
        "Keep a single <link rel=\"canonical\">.";
    CANONICAL_INVALID = "canonical_invalid", "Invalid canonical link", High, Page,
        "The canonical link is empty or not an http(s) address.",
        "Point rel=canonical to the absolute address of the preferred page.";
    CANONICAL_OTHER_HOST = "canonical_other_host", "Canonical link to another host", Medium, Page,
        "The canonical link points to another host, handing the page's ranking to it.",
        "Make sure the other host is really the preferred copy; otherwise point the canonical to this site.";
    CANONICAL_BROKEN = "canonical_broken", "Canonical link to an error", High, Page,
        "The canonical link points to a page of the site that answers with an error.",
        "Point the canonical to a page that answers 200.";
    CANONICAL_REDIRECT = "canonical_redirect", "Canonical link to a redirect", Medium, Page,
        "The canonical link points to an address that redirects.",
        "Point the canonical to the final address.";
    HREFLANG_INVALID = "hreflang_invalid", "Invalid hreflang", Medium, Page,
        "An hreflang value is not a language code (optionally with a region) nor x-default.",
        "Use codes such as en, en-GB or x-default.";
    HREFLANG_NO_SELF = "hreflang_no_self_reference", "hreflang without self-reference", Low, Page,
        "The page lists language alternates but not itself.",
        "Add an hreflang link for the page's own language pointing to its own address.";
    HREFLANG_NO_RETURN = "hreflang_no_return_link", "hreflang without return link", Medium, Page,
        "An alternate the page lists does not list the page back, so search engines ignore the pair.",
        "Make every alternate link back to this page with its own hreflang.";
    IMAGE_ALT_MISSING = "image_alt_missing", "Images without alt text", Low, Page,
        "Images on the page have no alt attribute, which screen readers and image search need.",
        "Describe each image in an alt attribute (alt=\"\" for decorative images).";
    THIN_CONTENT = "thin_content", "Thin content", Medium, Page,
        "The page has fewer than 200 words of visible text.",
        "Add useful content, or keep the page out of the index if it has none to offer.";
    PAGE_TOO_DEEP = "page_too_deep", "Page deep in the site", Low, Page,
        "The page is more than three clicks from the start page, so it is crawled less and seems less important.",
        "Link to it from higher up: the home page, a category or the navigation.";
    MIXED_CONTENT = "mixed_content", "Mixed content", High, Page,
        "An https page loads resources over plain http, which browsers block or flag as insecure.",
        "Load every resource over https.";
    SLOW_RESPONSE = "slow_response", "Slow response", Medium, Page,
        "The page took more than a second to download.",
        "Speed up the server (caching, lighter pages, a CDN).";
    LARGE_PAGE = "large_page", "Very large HTML", Low, Page,
        "The HTML is larger than 1 MiB; the crawler reads at most 2 MiB of it.",
        "Trim inline scripts, styles and markup; paginate long lists.";
    LANG_MISSING = "html_lang_missing", "Missing language", Low, Page,
        "The <html> element has no lang attribute.",
        "Declare the page's language, e.g. <html lang=\"en\">.";
    VIEWPORT_MISSING = "viewport_missing", "Missing viewport", Medium, Page,
        "The page has no meta viewport, so phones render it as a zoomed-out desktop page.",
        "Add <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">.";
    LINKS_TO_REDIRECTS = "internal_link_to_redirect", "Links to redirects", Low, Page,
        "The page links to addresses of the site that redirect.",
        "Link to the final addresses directly.";
    NOFOLLOW_INTERNAL = "nofollow_internal_links", "Nofollow internal links", Low, Page,
        "The page marks links to its own site as nofollow, which keeps search engines from them.",
        "Remove rel=nofollow from internal links.";
    NOINDEX_LINKED = "noindex_page", "Page excluded from the index", Low, Page,
        "The page asks search engines not to index it (meta robots or X-Robots-Tag noindex) although the site links to it.",
        "Remove noindex if the page should be found; otherwise stop linking to it prominently.";
    ROBOTS_MISSING = "robots_txt_missing", "No robots.txt", Low, Site,
        "The site has no robots.txt.",
        "Publish a robots.txt, at least naming the sitemap.";
    ROBOTS_UNREACHABLE = "robots_txt_unreachable", "robots.txt unreachable", High, Site,
        "robots.txt answered with a server error (or redirected too often); search engines then stop crawling the site.",
        "Make robots.txt answer 200 (or 404 if there is none).";
    START_BLOCKED = "start_blocked_by_robots", "Start page blocked by robots.txt", Critical, Site,
        "robots.txt disallows the site's start page, so search engines cannot crawl the site.",
        "Allow the start page (and the pages that should be found) in robots.txt.";
    SITEMAP_MISSING = "sitemap_missing", "No sitemap", Medium, Site,
        "Neither robots.txt nor /sitemap.xml leads to a sitemap.",
        "Publish a sitemap and name it in robots.txt.";
    SITEMAP_INVALID = "sitemap_invalid", "Invalid sitemap", High, Site,
        "A sitemap could not be read as a sitemap (broken XML, wrong root element, or broken gzip).",
        "Serve a valid sitemap per sitemaps.org.";
    SITEMAP_NOT_INDEXABLE = "sitemap_url_not_indexable", "Non-indexable page in the sitemap", Medium, Site,
        "The sitemap lists an address that answers with an error, redirects, is noindex or names another canonical.",
        "List only the final, indexable addresses of pages in the sitemap.";
    SITEMAP_BLOCKED = "sitemap_url_blocked", "Sitemap page blocked by robots.txt", Medium, Site,
        "The sitemap lists an address that robots.txt disallows: the two contradict each other.",
        "Remove the address from the sitemap, or allow it in robots.txt.";
    ORPHAN_PAGE = "orphan_page", "Orphan page", Medium, Site,
        "A page in the sitemap that no crawled page links to.",
        "Link to the page from related pages or the navigation, or drop it from the sitemap.";
    BROKEN_LINK = "broken_internal_link", "Broken internal link", High, Site,
        "Pages of the site link to an address of the site that answers with an error.",
        "Fix or remove the links, or redirect the address to a live page.";
    DUPLICATE_TITLE = "duplicate_title", "Duplicate titles", Medium, Site,
        "Several pages share the same title, so search engines cannot tell them apart.",
        "Give every page a title of its own.";
    DUPLICATE_DESCRIPTION = "duplicate_meta_description", "Duplicate meta descriptions", Low, Site,
        "Several pages share the same meta description.",
        "Give every page a description of its own.";
    DUPLICATE_CONTENT = "duplicate_content", "Duplicate content", Medium, Site,
        "Several pages have the same visible text.",
        "Merge the copies, or point their rel=canonical to the preferred one.";
    NEAR_DUPLICATE_CONTENT = "near_duplicate_content", "Near-duplicate content", Low, Site,
        "Several pages have nearly the same main text (outside navigation, headers, footers and asides): the SimHashes of their three-word shingles differ in at most 5 of 64 bits (a cosine similarity of about 0.97 between their shingle counts). Pages with fewer than 50 words of main text are not compared.",
        "Merge the pages, make each one say something of its own, or point their rel=canonical to the preferred one.";
    CANONICAL_MISSING = "canonical_missing", "Missing canonical link", Low, Page,
        "The indexable page declares no rel=canonical, so search engines guess which of its addresses (with parameters, with or without www) is the one to show.",
        "Add <link rel=\"canonical\" href=\"...\"> with the page's preferred absolute address.";
    STRUCTURED_DATA_INVALID = "structured_data_invalid", "Invalid structured data", Medium, Page,
        "A JSON-LD block (<script type=\"application/ld+json\">) does not parse as JSON, or an item lacks @context or @type, so search engines ignore it.",
        "Fix the JSON and give every item its @context (https://schema.org) and @type; check it with a structured-data validator.";
    LINK_TEXT_VAGUE = "link_text_not_descriptive", "Links without descriptive text", Low, Page,
        "Links whose text says nothing of where they lead (\"click here\", \"read more\", \"here\") or that have no text nor label at all: search engines and screen readers learn nothing from them.",
        "Write link text that names the target (\"pricing plans\" rather than \"click here\"); give image and icon links an alt text or aria-label.";
    LINK_NOT_CRAWLABLE = "link_not_crawlable", "Links search engines cannot follow", Medium, Page,
        "Anchors meant as links have no href (only an onclick handler) or a javascript: href; search engines follow only <a href> with an address.",
        "Give each such link an <a href> to a real address, and keep the script as an enhancement.";
    PAGE_NOT_AUDITED = "page_not_audited", "Page could not be audited", Low, Page,
        "The page was fetched, but the crawler failed while reading it, so none of its checks ran this time. The failure is logged with the page's address; the page's earlier issues keep their state.",
        "Scan again. If the page keeps failing, report it with the scan's job id.";
    ROBOTS_INVALID = "robots_txt_invalid", "robots.txt lines that do not parse", Medium, Site,
        "Lines of robots.txt are not read as their author meant: not `key: value`, a misspelt or unknown key, a rule before any user-agent, a path that starts with neither / nor *, a crawl-delay that is no number, or a sitemap that is no absolute URL.",
        "Correct the lines named in the evidence; keys other crawlers read (host, clean-param) are not counted.";
    SITEMAP_OTHER_HOST = "sitemap_other_host", "Sitemap on another host", Low, Site,
        "robots.txt names a sitemap on another host. Google accepts it (cross-site submission through robots.txt), other search engines may not; its addresses on this site were used.",
        "Host the sitemap on the site itself, or make sure every search engine that matters accepts it.";
    BROKEN_EXTERNAL_LINK = "broken_external_link", "Broken external link", Medium, Site,
        "Pages of the site link to an address on another site that answers with an error (4xx other than 401, 403, 407 and 429, or 5xx), cannot be reached (DNS, connection, TLS), or redirects more than five times. Each is checked once per scan with HEAD (GET where HEAD is refused), within a budget per scan and per host.",
        "Update the links to the page's new address, or remove them.";
    CONTENT_REQUIRES_JAVASCRIPT = "content_requires_javascript", "Content only visible with JavaScript", Medium, Page,
        "The page's links or text appear only after its scripts run (at least half of the rendered page's links, or at least 50 words and half of its text). Google renders such pages later than it reads HTML, and other search engines, social previews and AI crawlers may not render them at all.",
        "Render the content on the server (server-side rendering or pre-rendering), or at least put the links in the HTML as <a href>.";
    RENDERED_DIFFERS = "rendered_differs", "Raw and rendered page differ", High, Page,
        "Script changes or removes the title, meta description, canonical or h1 the server sent, or changes the robots meta. A raw noindex that script removes keeps the page out of Google, which does not render pages whose HTML says noindex.",
        "Send the final title, description, canonical, robots directives and h1 in the HTML, and let script leave them as they are.";
    JAVASCRIPT_ERROR = "javascript_error", "JavaScript error on load", Medium, Page,
        "A script threw an exception that nothing caught while the page loaded, so what the script builds may be missing for visitors and search engines.",
        "Open the page with the browser's console and fix the error the evidence names.";
    RENDER_FAILED = "render_failed", "Page could not be rendered", Low, Page,
        "Rendering the page in the browser timed out or the browser crashed, so the page was audited as its HTML reads.",
        "Check that the page loads within the render time limit; scan again if the failure was passing.";
    RENDER_BLOCKED_RESOURCE = "render_blocked_resource", "Resource blocked by robots.txt", Medium, Site,
        "robots.txt disallows a script, stylesheet or data address that pages load, so Google's renderer does not load it either and may see a different page than visitors do.",
        "Allow the resource in robots.txt (Allow: /assets/), or stop loading it from a disallowed path.";
}

impl Check {
    /// The check with this id.
    pub fn by_id(id: &str) -> Option<&'static Check> {
        CATALOGUE.iter().find(|check| check.id == id)
    }
}

/// The catalogue as a Markdown table (docs/crawler.md's, generated from the code).
pub fn catalogue_markdown() -> String {
    let mut table = String::from(
        "| id | title | severity | scope | what it finds | how to fix |\n|---|---|---|---|---|---|\n",
    );
    for check in CATALOGUE {
        let escape = |text: &str| text.replace('|', "\\|");
        table.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            check.id,
            escape(check.title),
            check.severity.as_str(),
            check.scope.as_str(),
            escape(check.description),
            escape(check.fix),
        ));
    }
    table
}

/// A page's links resolved and normalised, not yet in the crawl's address table: each
/// address, whether it is `nofollow`, and whether it is in the crawl's scope.
#[derive(Debug, Default)]
pub struct ResolvedLinks(Vec<(String, bool, bool)>);

impl ResolvedLinks {
    /// Takes the raw links of a page's facts and resolves them against `<base href>` or its
    /// final address ([`urls::resolve`]), links to itself left out. Pure and per page, so it
    /// can run anywhere.
    pub fn of(page: &mut PageRecord, scope: &urls::Scope) -> ResolvedLinks {
        let base = page.link_base_of();
        let (Some(facts), Some(base)) = (page.facts.as_mut(), base) else {
            return ResolvedLinks::default();
        };
        let links = std::mem::take(&mut facts.links);
        let resolved = links
            .into_iter()
            .filter_map(|link| {
                let target = urls::resolve(&base, &link.href)?;
                if target.as_str() == page.url {
                    return None;
                }
                let inside = scope.contains(&target);
                Some((String::from(target), link.nofollow, inside))
            })
            .collect();
        ResolvedLinks(resolved)
    }
}

/// A link from a crawled page to an address of the site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InternalLink {
    /// The address, as an index into [`CrawlRecord::address`].
    pub target: u32,
    /// `rel="nofollow"` (or `ugc`/`sponsored`).
    pub nofollow: bool,
}

/// How a redirect was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RedirectKind {
    /// A 3xx status with `Location`.
    Http,
    /// A `Refresh` header on a 2xx answer.
    RefreshHeader,
    /// A `<meta http-equiv="refresh">` in a 2xx HTML page.
    MetaRefresh,
}

/// One redirect followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The status of the answer that redirected.
    pub status: u16,
    /// How.
    pub kind: RedirectKind,
    /// The address it led to (normalised).
    pub to: String,
}

impl std::fmt::Display for Redirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            RedirectKind::Http => write!(f, "{} {}", self.status, self.to),
            RedirectKind::RefreshHeader => write!(f, "Refresh header {}", self.to),
            RedirectKind::MetaRefresh => write!(f, "meta refresh {}", self.to),
        }
    }
}

/// What checking an external link gave.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkOutcome {
    /// The final status, after redirects.
    Answered(u16),
    /// No answer.
    Failed(super::fetch::FetchError),
    /// More than five redirects.
    TooManyRedirects,
}

impl LinkOutcome {
    /// Why the link is broken, if it is: an error status other than those that mean "not for
    /// robots" or "not now" (401, 403, 407, 429), no answer for a reason that is not passing
    /// (a time-out is inconclusive; an address scans may not reach was not checked), or
    /// endless redirects.
    pub fn broken(&self) -> Option<String> {
        match self {
            LinkOutcome::Answered(status)
                if (400..600).contains(status) && !matches!(status, 401 | 403 | 407 | 429) =>
            {
                Some(format!("answers {status}"))
            }
            LinkOutcome::Answered(_) => None,
            LinkOutcome::Failed(super::fetch::FetchError::Network(why)) => {
                Some(format!("cannot be reached ({})", clip(why, 120)))
            }
            LinkOutcome::Failed(_) => None,
            LinkOutcome::TooManyRedirects => Some("redirects more than five times".to_owned()),
        }
    }
}

/// An external link checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalCheck {
    /// Its address, by [`CrawlRecord::address`].
    pub target: u32,
    /// What came of it.
    pub outcome: LinkOutcome,
}

/// A fetched address and what came of it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PageRecord {
    /// The normalised address that was requested.
    pub url: String,
    /// Clicks from the start page: 0 for the start page, and for pages only a sitemap led to,
    /// which no click reaches (they are orphans, not deep pages).
    pub depth: u32,
    /// The redirects followed, in order.
    pub redirects: Vec<Redirect>,
    /// The redirects came back to an address already seen.
    pub redirect_loop: bool,
    /// The final status; `None` when the request failed (see `error`).
    pub status: Option<u16>,
    /// Why the request failed.
    pub error: Option<String>,
    /// What kind of failure `error` is (`timeout`, `network`, `body`, …), for the metrics.
    pub error_kind: Option<&'static str>,
    /// The final address (after redirects).
    pub final_url: String,
    /// Milliseconds from the first request to the last byte.
    pub elapsed_ms: u64,
    /// Bytes of the body (all of it, even past the crawler's cap).
    pub body_bytes: u64,
    /// An `X-Robots-Tag: noindex` header.
    pub header_noindex: bool,
    /// The HTML's facts; `None` for non-HTML responses and errors. Once the page is added to
    /// its [`CrawlRecord`], its links are in `internal_links` and `facts.links` is empty.
    pub facts: Option<PageFacts>,
    /// The page's links to addresses in the scope (see [`CrawlRecord::add_page`]).
    pub internal_links: Vec<InternalLink>,
    /// The page's links to `http(s)` addresses outside the scope, each once, by
    /// [`CrawlRecord::address`].
    pub external_links: Vec<u32>,
    /// The crawler failed on this page (a panic, with its message): nothing of it was read.
    pub crawler_failure: Option<String>,
    /// What rendering the page found, for the pages the scan rendered.
    pub render: Option<RenderRecord>,
}

/// What rendering a page found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RenderRecord {
    /// The facts of the HTML the server sent, when the page rendered (its
    /// [`PageRecord::facts`] are then the rendered page's).
    pub raw: Option<Box<PageFacts>>,
    /// Why rendering failed (the page's facts are then the raw page's).
    pub failure: Option<String>,
    /// What kind of failure `failure` is (`timeout`, `crash`, …), for the metrics.
    pub failure_kind: Option<&'static str>,
    /// Uncaught exceptions during load.
    pub exceptions: Vec<String>,
    /// Requests the renderer refused.
    pub refused: Vec<super::render::RefusedRequest>,
    /// Loading was cut short by the page's time or byte limit.
    pub cut_short: bool,
}

impl RenderRecord {
    /// Whether the page rendered.
    pub fn rendered(&self) -> bool {
        self.raw.is_some()
    }
}

impl PageRecord {
    /// Why fetching the page failed, as a metric label: the request's failure, a redirect
    /// loop, a server error (`status_5xx`), a client error (`status_4xx`) or the crawler's
    /// own failure (`crawler`); `None` for a page that was read.
    pub fn failure_kind(&self) -> Option<&'static str> {
        if self.crawler_failure.is_some() {
            return Some("crawler");
        }
        if self.error_kind.is_some() {
            return self.error_kind;
        }
        if self.redirect_loop {
            return Some("redirect_loop");
        }
        match self.status {
            Some(500..) => Some("status_5xx"),
            Some(400..=499) => Some("status_4xx"),
            _ => None,
        }
    }

    /// Answered 2xx after any redirects.
    pub fn is_ok(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s)) && !self.redirect_loop
    }

    /// Answered with an error (4xx, 5xx, or no answer).
    pub fn is_error(&self) -> bool {
        self.redirect_loop || self.error.is_some() || self.status.is_some_and(|s| s >= 400)
    }

    /// Whether the page was read through: it answered, its body came whole and was read to
    /// its end (not cut at the body limit, nor given up by the parser), and the crawler did
    /// not fail on it. Only then are its earlier issues known to be gone when no check finds
    /// them again.
    pub fn was_read(&self) -> bool {
        self.error.is_none()
            && self.crawler_failure.is_none()
            && !self.facts.as_ref().is_some_and(|facts| facts.truncated)
    }

    /// `X-Robots-Tag` or the robots meta says `noindex`: the rendered page's, or the raw
    /// page's, since Google does not render a page whose HTML says `noindex` (whatever its
    /// script would do).
    fn noindex(&self) -> bool {
        let says_noindex = |facts: &PageFacts| {
            facts
                .robots_directives
                .iter()
                .any(|d| d == "noindex" || d == "none")
        };
        self.header_noindex
            || self.facts.as_ref().is_some_and(says_noindex)
            || self
                .render
                .as_ref()
                .and_then(|render| render.raw.as_deref())
                .is_some_and(says_noindex)
    }

    /// The address relative links resolve against: `<base href>` or the final address.
    fn link_base_of(&self) -> Option<Url> {
        let page = Url::parse(&self.final_url).ok()?;
        match self.facts.as_ref().and_then(|f| f.base_href.as_deref()) {
            Some(base) => page.join(base).ok().or(Some(page)),
            None => Some(page),
        }
    }
}

/// What fetching robots.txt gave.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum RobotsOutcome {
    /// A robots.txt was read.
    #[default]
    Found,
    /// It answered 4xx: there is none.
    Missing,
    /// It answered 5xx or failed.
    Unreachable,
}

/// What fetching the sitemaps gave.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SitemapOutcome {
    /// Sitemap files read successfully.
    pub read: u32,
    /// Sitemap files that could not be read: address and why.
    pub invalid: Vec<(String, String)>,
    /// The page addresses they list (normalised, in the scope only).
    pub urls: BTreeSet<String>,
    /// Sitemaps robots.txt names on another host, each once.
    pub other_hosts: Vec<String>,
    /// The sitemap files that answered (with any status), each once.
    pub fetched: Vec<String>,
}

/// Everything a crawl saw, for [`analyse`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CrawlRecord {
    /// The start page (normalised).
    pub start_url: String,
    /// robots.txt.
    pub robots: RobotsOutcome,
    /// Its lines that do not parse (see [`Robots::problems`](super::robots::Robots::problems)).
    pub robots_problems: Vec<String>,
    /// How many there are.
    pub robots_problem_count: u32,
    /// robots.txt disallows the start page.
    pub start_blocked: bool,
    /// The sitemaps.
    pub sitemaps: SitemapOutcome,
    /// Addresses the crawl found but robots.txt disallowed.
    pub disallowed: BTreeSet<String>,
    /// Every fetched address, in crawl order (see [`CrawlRecord::add_page`]).
    pub pages: Vec<PageRecord>,
    /// The external links checked.
    pub external_checks: Vec<ExternalCheck>,
    /// The site's addresses that pages link to, by [`InternalLink::target`]. Each address is
    /// kept once, however many pages link to it: a site of 10,000 pages with 60 links each
    /// holds 600,000 links, which as strings would take more memory than the rest of the
    /// crawl together.
    addresses: Vec<String>,
    address_ids: FastMap<String, u32>,
    /// What the crawl may fetch, from `start_url`.
    scope: Option<urls::Scope>,
}

impl CrawlRecord {
    /// The record of a crawl starting at `start_url` (normalised), with nothing seen yet.
    pub fn new(start_url: impl Into<String>) -> Self {
        let start_url = start_url.into();
        let scope = Url::parse(&start_url)
            .ok()
            .map(|start| urls::Scope::of(&start));
        CrawlRecord {
            start_url,
            scope,
            ..CrawlRecord::default()
        }
    }

    /// Adds a fetched page, after [`CrawlRecord::link`].
    pub fn add_page(&mut self, mut page: PageRecord) {
        self.link(&mut page);
        self.pages.push(page);
    }

    /// Turns a page's links into [`InternalLink`]s (to the scope) and external link ids
    /// (elsewhere, each once), resolved against `<base href>` or its final address and
    /// normalised, links to itself left out, and drops the raw links of its facts. Done as
    /// soon as a page is fetched, so a crawl never holds more than a few pages' worth of link
    /// text. Doing it twice changes nothing. It is [`ResolvedLinks::of`] (which a crawler
    /// runs beside the fetch, off the crawl's own task) then [`CrawlRecord::add_links`].
    pub fn link(&mut self, page: &mut PageRecord) {
        let Some(scope) = self.scope.clone().or_else(|| {
            Url::parse(&self.start_url)
                .ok()
                .map(|s| urls::Scope::of(&s))
        }) else {
            return;
        };
        let links = ResolvedLinks::of(page, &scope);
        self.add_links(page, links);
    }

    /// Gives a page the links [`ResolvedLinks::of`] resolved, as ids of the crawl's address
    /// table.
    pub fn add_links(&mut self, page: &mut PageRecord, links: ResolvedLinks) {
        let mut external = FastSet::default();
        for (address, nofollow, inside) in links.0 {
            let target = self.intern(address);
            if inside {
                page.internal_links.push(InternalLink { target, nofollow });
            } else if external.insert(target) {
                page.external_links.push(target);
            }
        }
        page.internal_links.shrink_to_fit();
        page.external_links.shrink_to_fit();
    }

    /// The address of an [`InternalLink`].
    pub fn address(&self, id: u32) -> &str {
        self.addresses.get(id as usize).map_or("", String::as_str)
    }

    fn intern(&mut self, address: String) -> u32 {
        if let Some(id) = self.address_ids.get(&address) {
            return *id;
        }
        let id = u32::try_from(self.addresses.len()).unwrap_or(u32::MAX);
        self.addresses.push(address.clone());
        self.address_ids.insert(address, id);
        id
    }
}

/// A problem the analysis found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The check.
    pub check: &'static Check,
    /// The page, for page checks.
    pub url: Option<String>,
    /// What identifies the finding across scans: the page for page checks, the address or
    /// the text a site finding is about otherwise.
    pub subject: String,
    /// What was found, briefly.
    pub evidence: String,
}

/// Evidence texts are kept short: at most this many characters.
const EVIDENCE_MAX: usize = 300;

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut clipped: String = text.chars().take(max.saturating_sub(1)).collect();
        clipped.push('…');
        clipped
    }
}

/// "a, b and 3 more".
fn list(items: &[String], show: usize) -> String {
    let shown: Vec<&str> = items.iter().take(show).map(String::as_str).collect();
    let mut text = shown.join(", ");
    if items.len() > show {
        text.push_str(&format!(" and {} more", items.len() - show));
    }
    text
}

/// "3 links: a, b, c and 2 more" from a page's [`Sampled`] facts.
fn sampled<T>(sample: &Sampled<T>, show: impl Fn(&T) -> String, what: &str) -> String {
    let shown: Vec<String> = sample.examples.iter().take(3).map(show).collect();
    let mut text = format!("{} {what}: {}", sample.total, shown.join(", "));
    let more = sample
        .total
        .saturating_sub(u32::try_from(shown.len()).unwrap_or(0));
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text
}

struct Findings(Vec<Finding>);

impl Findings {
    fn page(&mut self, check: &'static Check, page: &PageRecord, evidence: String) {
        self.0.push(Finding {
            check,
            url: Some(page.url.clone()),
            subject: page.url.clone(),
            evidence: clip(&evidence, EVIDENCE_MAX),
        });
    }

    fn site(&mut self, check: &'static Check, subject: String, evidence: String) {
        self.0.push(Finding {
            check,
            url: None,
            subject: clip(&subject, 500),
            evidence: clip(&evidence, EVIDENCE_MAX),
        });
    }
}

/// Whether `code` looks like a language code with an optional script or region, or is
/// `x-default` (BCP 47's common shapes: `en`, `en-GB`, `zh-Hant`, `es-419`).
fn valid_hreflang(code: &str) -> bool {
    if code.eq_ignore_ascii_case("x-default") {
        return true;
    }
    let mut parts = code.split('-');
    let language = parts.next().unwrap_or_default();
    if !(2..=3).contains(&language.len()) || !language.chars().all(|c| c.is_ascii_alphabetic()) {
        return false;
    }
    parts.all(|part| {
        matches!(part.len(), 2 | 4) && part.chars().all(|c| c.is_ascii_alphabetic())
            || part.len() == 3 && part.chars().all(|c| c.is_ascii_digit())
    })
}

/// The findings of a crawl.
pub fn analyse(crawl: &CrawlRecord) -> Vec<Finding> {
    let mut out = Findings(Vec::new());
    let by_url: FastMap<&str, &PageRecord> =
        crawl.pages.iter().map(|p| (p.url.as_str(), p)).collect();

    // Internal links: target → the pages linking to it (followed or not), by index, so
    // that a large site's hundreds of thousands of links take no strings.
    let mut inlinks = Inlinks {
        by_target: vec![Vec::new(); crawl.addresses.len()],
    };
    for (index, page) in crawl.pages.iter().enumerate() {
        let source = u32::try_from(index).unwrap_or(u32::MAX);
        for link in &page.internal_links {
            let Some(sources) = inlinks.by_target.get_mut(link.target as usize) else {
                continue;
            };
            if sources.last() != Some(&source) {
                sources.push(source);
            }
        }
    }

    site_checks(crawl, &by_url, &inlinks, &mut out);
    external_link_checks(crawl, &mut out);
    blocked_resource_checks(crawl, &mut out);
    for page in &crawl.pages {
        // A check that fails on one page costs that page's findings, not the scan's: the page
        // is reported as not audited (and its earlier issues keep their state).
        let before = out.0.len();
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            page_checks(crawl, page, &by_url, &inlinks, &mut out);
            render_checks(page, &mut out);
        }));
        if let Err(payload) = checked {
            out.0.truncate(before);
            let why = super::panic_message(&*payload).unwrap_or_default();
            tracing::error!(url = %page.url, failure = %why, "a check failed on a page");
            out.page(
                &PAGE_NOT_AUDITED,
                page,
                format!("the checks failed on the page: {why}"),
            );
        }
    }
    duplicate_checks(crawl, &mut out);
    near_duplicate_checks(crawl, &mut out);
    // One finding per check and subject, as the store keeps them (two could meet where a
    // long subject is clipped, or a site names the same thing twice).
    let mut seen = FastSet::default();
    let first: Vec<bool> = out
        .0
        .iter()
        .map(|finding| seen.insert((finding.check.id, finding.subject.as_str())))
        .collect();
    drop(seen);
    let mut first = first.into_iter();
    out.0.retain(|_| first.next().unwrap_or(true));
    out.0
}

/// The addresses of the pages with a [`PAGE_NOT_AUDITED`] finding: what they had before is
/// not known to be gone.
pub fn not_audited(findings: &[Finding]) -> BTreeSet<&str> {
    findings
        .iter()
        .filter(|finding| finding.check.id == PAGE_NOT_AUDITED.id)
        .map(|finding| finding.subject.as_str())
        .collect()
}

/// The pages linking to each address of the site: by address id, the page indexes, in crawl
/// order (none for an address no page links to).
#[derive(Debug)]
struct Inlinks {
    by_target: Vec<Vec<u32>>,
}

impl Inlinks {
    /// Whether any crawled page links to `address`.
    fn any(&self, crawl: &CrawlRecord, address: &str) -> bool {
        crawl
            .address_ids
            .get(address)
            .and_then(|id| self.by_target.get(*id as usize))
            .is_some_and(|sources| !sources.is_empty())
    }

    /// The addresses of the pages in `sources`.
    fn pages(crawl: &CrawlRecord, sources: &[u32]) -> Vec<String> {
        sources
            .iter()
            .filter_map(|i| crawl.pages.get(*i as usize))
            .map(|p| p.url.clone())
            .collect()
    }
}

/// One piece: the catalogue's site-wide checks, one block per check in the catalogue's order,
/// over one finished crawl.
fn site_checks(
    crawl: &CrawlRecord,
    by_url: &FastMap<&str, &PageRecord>,
    inlinks: &Inlinks,
    out: &mut Findings,
) {
    match crawl.robots {
        RobotsOutcome::Found => {}
        RobotsOutcome::Missing => out.site(
            &ROBOTS_MISSING,
            "robots.txt".into(),
            "/robots.txt answered 404".into(),
        ),
        RobotsOutcome::Unreachable => out.site(
            &ROBOTS_UNREACHABLE,
            "robots.txt".into(),
            "/robots.txt answered with a server error or no answer".into(),
        ),
    }
    if crawl.start_blocked {
        out.site(
            &START_BLOCKED,
            crawl.start_url.clone(),
            format!("robots.txt disallows {}", crawl.start_url),
        );
    }
    if !crawl.robots_problems.is_empty() {
        let shown: Vec<&str> = crawl
            .robots_problems
            .iter()
            .take(3)
            .map(String::as_str)
            .collect();
        let mut evidence = shown.join(", ");
        let more = crawl
            .robots_problem_count
            .saturating_sub(u32::try_from(shown.len()).unwrap_or(u32::MAX));
        if more > 0 {
            evidence.push_str(&format!(" and {more} more"));
        }
        out.site(&ROBOTS_INVALID, "robots.txt".into(), evidence);
    }
    if crawl.sitemaps.read == 0 && crawl.sitemaps.invalid.is_empty() {
        out.site(
            &SITEMAP_MISSING,
            "sitemap".into(),
            "robots.txt names no sitemap, and /sitemap.xml answered 4xx".into(),
        );
    }
    for address in &crawl.sitemaps.other_hosts {
        out.site(
            &SITEMAP_OTHER_HOST,
            address.clone(),
            format!("robots.txt names {address}"),
        );
    }
    for (address, why) in &crawl.sitemaps.invalid {
        out.site(
            &SITEMAP_INVALID,
            address.clone(),
            format!("{address}: {why}"),
        );
    }
    for listed in &crawl.sitemaps.urls {
        if crawl.disallowed.contains(listed) {
            out.site(
                &SITEMAP_BLOCKED,
                listed.clone(),
                format!("{listed} is in the sitemap and disallowed by robots.txt"),
            );
            continue;
        }
        let Some(page) = by_url.get(listed.as_str()) else {
            continue;
        };
        let reason = if page.redirect_loop || !page.redirects.is_empty() {
            Some(format!("redirects to {}", page.final_url))
        } else if let Some(status) = page.status.filter(|s| *s >= 300) {
            Some(format!("answers {status}"))
        } else if page.error.is_some() {
            Some("could not be fetched".to_owned())
        } else if page.noindex() {
            Some("is noindex".to_owned())
        } else {
            page.facts
                .as_ref()
                .and_then(|f| f.canonicals.first())
                .and_then(|c| Url::parse(&page.final_url).ok()?.join(c).ok())
                .filter(|canonical| canonical.as_str() != page.final_url)
                .map(|canonical| format!("names {canonical} as canonical"))
        };
        if let Some(reason) = reason {
            out.site(
                &SITEMAP_NOT_INDEXABLE,
                listed.clone(),
                format!("{listed} {reason}"),
            );
        } else if page.is_ok() && page.url != crawl.start_url && !inlinks.any(crawl, listed) {
            out.site(
                &ORPHAN_PAGE,
                listed.clone(),
                format!("{listed} is in the sitemap; no crawled page links to it"),
            );
        }
    }
    let mut broken: Vec<(&str, &Vec<u32>)> = inlinks
        .by_target
        .iter()
        .zip(0..)
        .filter(|(sources, _)| !sources.is_empty())
        .map(|(sources, target)| (crawl.address(target), sources))
        .collect();
    broken.sort_unstable();
    for (target, sources) in broken {
        let Some(page) = by_url.get(target) else {
            continue;
        };
        if page.is_error() {
            let status = match (page.redirect_loop, page.status) {
                (true, _) => "a redirect loop".to_owned(),
                (false, Some(status)) => format!("answers {status}"),
                (false, None) => "could not be fetched".to_owned(),
            };
            let sources = Inlinks::pages(crawl, sources);
            out.site(
                &BROKEN_LINK,
                target.to_owned(),
                format!("{target} {status}; linked from {}", list(&sources, 3)),
            );
        }
    }
    for page in crawl.pages.iter().filter(|p| p.redirect_loop) {
        let hops: Vec<String> = page.redirects.iter().map(|r| r.to.clone()).collect();
        out.site(
            &REDIRECT_LOOP,
            page.url.clone(),
            format!("{} → {}", page.url, list(&hops, 5)),
        );
    }
}

/// One piece: the catalogue's page checks, one block per check in the catalogue's order
/// (docs/crawler.md's table is checked against it), over one parsed page.
fn page_checks(
    crawl: &CrawlRecord,
    page: &PageRecord,
    by_url: &FastMap<&str, &PageRecord>,
    inlinks: &Inlinks,
    out: &mut Findings,
) {
    if let Some(failure) = &page.crawler_failure {
        return out.page(
            &PAGE_NOT_AUDITED,
            page,
            format!("the crawler failed reading the page: {failure}"),
        );
    }
    if page.redirect_loop {
        return;
    }
    match (page.status, &page.error) {
        (_, Some(error)) => return out.page(&UNREACHABLE, page, error.clone()),
        (Some(status), _) if status >= 500 => {
            return out.page(&HTTP_5XX, page, format!("answered {status}"));
        }
        (Some(status), _) if status >= 400 => {
            return out.page(&HTTP_4XX, page, format!("answered {status}"));
        }
        _ => {}
    }
    if page.redirects.len() > limits::REDIRECT_CHAIN {
        let hops: Vec<String> = page.redirects.iter().map(Redirect::to_string).collect();
        out.page(
            &REDIRECT_CHAIN,
            page,
            format!("{} redirects: {}", page.redirects.len(), hops.join(" → ")),
        );
    }
    if page.elapsed_ms > limits::SLOW_MS {
        out.page(&SLOW_RESPONSE, page, format!("{} ms", page.elapsed_ms));
    }
    if page.depth > limits::MAX_DEPTH {
        out.page(
            &PAGE_TOO_DEEP,
            page,
            format!("{} clicks from the start page", page.depth),
        );
    }
    let Some(facts) = &page.facts else {
        return;
    };
    // A redirected address has no content of its own: the page it leads to is crawled as
    // itself and checked there.
    if !page.is_ok() || !page.redirects.is_empty() {
        return;
    }
    if page.body_bytes > limits::LARGE_PAGE_BYTES || facts.truncated {
        out.page(
            &LARGE_PAGE,
            page,
            format!("{} bytes of HTML", page.body_bytes),
        );
    }
    title_checks(page, facts, out);
    description_checks(page, facts, out);
    heading_checks(page, facts, out);
    if page.noindex() && inlinks.any(crawl, &page.url) {
        out.page(
            &NOINDEX_LINKED,
            page,
            "noindex, yet linked from the site".into(),
        );
    }
    let page_url = Url::parse(&page.final_url).ok();
    if let Some(page_url) = &page_url {
        canonical_checks(page, facts, page_url, by_url, out);
        hreflang_checks(page, facts, page_url, by_url, out);
        if page_url.scheme() == "https" {
            let insecure: Vec<String> = facts
                .subresources
                .iter()
                .filter_map(|src| page_url.join(src).ok())
                .filter(|src| src.scheme() == "http")
                .map(|src| src.to_string())
                .collect();
            if !insecure.is_empty() {
                out.page(
                    &MIXED_CONTENT,
                    page,
                    format!("loads {}", list(&insecure, 3)),
                );
            }
        }
    }
    if facts.canonicals.is_empty() && !page.noindex() {
        out.page(
            &CANONICAL_MISSING,
            page,
            "no <link rel=\"canonical\">".into(),
        );
    }
    if !facts.structured_data_problems.is_empty() {
        out.page(
            &STRUCTURED_DATA_INVALID,
            page,
            sampled(&facts.structured_data_problems, |p| p.clone(), "JSON-LD"),
        );
    }
    if !facts.vague_links.is_empty() {
        out.page(
            &LINK_TEXT_VAGUE,
            page,
            sampled(
                &facts.vague_links,
                |link| match link.text.as_str() {
                    "" => format!("(no text) → {}", link.href),
                    text => format!("\"{text}\" → {}", link.href),
                },
                "links",
            ),
        );
    }
    if !facts.uncrawlable_links.is_empty() {
        out.page(
            &LINK_NOT_CRAWLABLE,
            page,
            sampled(&facts.uncrawlable_links, |a| a.clone(), "anchors"),
        );
    }
    if !facts.images_without_alt.is_empty() {
        out.page(
            &IMAGE_ALT_MISSING,
            page,
            format!(
                "{} of {} images: {}",
                facts.images_without_alt.len(),
                facts.images,
                list(&facts.images_without_alt, 3)
            ),
        );
    }
    if facts.word_count < limits::THIN_WORDS {
        out.page(&THIN_CONTENT, page, format!("{} words", facts.word_count));
    }
    if facts.lang.as_deref().is_none_or(|lang| lang.is_empty()) {
        out.page(&LANG_MISSING, page, "<html> has no lang".into());
    }
    if !facts.has_viewport {
        out.page(
            &VIEWPORT_MISSING,
            page,
            "no <meta name=\"viewport\">".into(),
        );
    }
    {
        let mut to_redirects = Vec::new();
        let mut nofollow = Vec::new();
        for link in &page.internal_links {
            let target = crawl.address(link.target);
            if link.nofollow && !nofollow.iter().any(|t| t == target) {
                nofollow.push(target.to_owned());
            }
            if by_url
                .get(target)
                .is_some_and(|t| !t.redirects.is_empty() && !t.redirect_loop)
                && !to_redirects.iter().any(|t| t == target)
            {
                to_redirects.push(target.to_owned());
            }
        }
        if !to_redirects.is_empty() {
            out.page(
                &LINKS_TO_REDIRECTS,
                page,
                format!("links to {}", list(&to_redirects, 3)),
            );
        }
        if !nofollow.is_empty() {
            out.page(
                &NOFOLLOW_INTERNAL,
                page,
                format!("nofollow on {}", list(&nofollow, 3)),
            );
        }
    }
}

/// The rendering checks of one page the scan rendered.
fn render_checks(page: &PageRecord, out: &mut Findings) {
    let Some(render) = &page.render else {
        return;
    };
    if let Some(failure) = &render.failure {
        out.page(&RENDER_FAILED, page, failure.clone());
    }
    if let (Some(raw), Some(rendered)) = (&render.raw, &page.facts) {
        if let Some(evidence) = super::render::requires_javascript(raw, rendered) {
            out.page(&CONTENT_REQUIRES_JAVASCRIPT, page, evidence);
        }
        let differences = super::render::differences(raw, rendered);
        if !differences.is_empty() {
            out.page(&RENDERED_DIFFERS, page, differences.join("; "));
        }
    }
    if !render.exceptions.is_empty() {
        let shown: Vec<String> = render.exceptions.iter().take(3).cloned().collect();
        let mut evidence = shown.join(" | ");
        if render.exceptions.len() > shown.len() {
            evidence.push_str(&format!(
                " and {} more",
                render.exceptions.len() - shown.len()
            ));
        }
        out.page(&JAVASCRIPT_ERROR, page, evidence);
    }
}

/// The scripts, stylesheets and data addresses robots.txt kept the renderer from, each once,
/// with the pages that load them.
fn blocked_resource_checks(crawl: &CrawlRecord, out: &mut Findings) {
    let mut blocked: std::collections::BTreeMap<&str, (&str, Vec<String>)> = Default::default();
    for page in &crawl.pages {
        let Some(render) = &page.render else {
            continue;
        };
        for refused in &render.refused {
            if refused.why != super::render::Refusal::Robots || !refused.shapes_rendering() {
                continue;
            }
            let entry = blocked
                .entry(refused.url.as_str())
                .or_insert_with(|| (refused.resource_type.as_str(), Vec::new()));
            if !entry.1.contains(&page.url) {
                entry.1.push(page.url.clone());
            }
        }
    }
    for (address, (kind, pages)) in blocked {
        out.site(
            &RENDER_BLOCKED_RESOURCE,
            address.to_owned(),
            format!(
                "{kind} {address} is disallowed by robots.txt; loaded by {}",
                list(&pages, 3)
            ),
        );
    }
}

fn title_checks(page: &PageRecord, facts: &PageFacts, out: &mut Findings) {
    match facts.titles.as_slice() {
        [] => out.page(&TITLE_MISSING, page, "no <title>".into()),
        [title, ..] => {
            if facts.titles.len() > 1 {
                out.page(
                    &TITLE_MULTIPLE,
                    page,
                    format!("{} titles", facts.titles.len()),
                );
            }
            let length = title.chars().count();
            if length == 0 {
                out.page(&TITLE_EMPTY, page, "<title></title>".into());
            } else if length < limits::TITLE_MIN {
                out.page(
                    &TITLE_TOO_SHORT,
                    page,
                    format!("{length} characters: \"{title}\""),
                );
            } else if length > limits::TITLE_MAX {
                out.page(
                    &TITLE_TOO_LONG,
                    page,
                    format!("{length} characters: \"{title}\""),
                );
            }
        }
    }
}

fn description_checks(page: &PageRecord, facts: &PageFacts, out: &mut Findings) {
    match facts.meta_descriptions.as_slice() {
        [] => out.page(&DESCRIPTION_MISSING, page, "no meta description".into()),
        [description, ..] => {
            if facts.meta_descriptions.len() > 1 {
                out.page(
                    &DESCRIPTION_MULTIPLE,
                    page,
                    format!("{} meta descriptions", facts.meta_descriptions.len()),
                );
            }
            let length = description.chars().count();
            if length == 0 {
                out.page(&DESCRIPTION_EMPTY, page, "content=\"\"".into());
            } else if length < limits::DESCRIPTION_MIN {
                out.page(&DESCRIPTION_TOO_SHORT, page, format!("{length} characters"));
            } else if length > limits::DESCRIPTION_MAX {
                out.page(&DESCRIPTION_TOO_LONG, page, format!("{length} characters"));
            }
        }
    }
}

fn heading_checks(page: &PageRecord, facts: &PageFacts, out: &mut Findings) {
    match facts.h1s.as_slice() {
        [] => out.page(&H1_MISSING, page, "no <h1>".into()),
        h1s => {
            if h1s.len() > 1 {
                out.page(&H1_MULTIPLE, page, format!("{} <h1> headings", h1s.len()));
            }
            if h1s.iter().any(String::is_empty) {
                out.page(&H1_EMPTY, page, "<h1> without text".into());
            }
        }
    }
    if let Some(pair) = facts
        .heading_levels
        .windows(2)
        .find(|pair| pair[1] > pair[0] + 1)
    {
        out.page(
            &HEADING_ORDER,
            page,
            format!("<h{}> followed by <h{}>", pair[0], pair[1]),
        );
    }
}

fn canonical_checks(
    page: &PageRecord,
    facts: &PageFacts,
    page_url: &Url,
    by_url: &FastMap<&str, &PageRecord>,
    out: &mut Findings,
) {
    if facts.canonicals.len() > 1 {
        out.page(
            &CANONICAL_MULTIPLE,
            page,
            format!(
                "{} canonical links: {}",
                facts.canonicals.len(),
                list(&facts.canonicals, 3)
            ),
        );
        return;
    }
    let Some(canonical) = facts.canonicals.first() else {
        return;
    };
    let Some(target) = urls::resolve(page_url, canonical).filter(|_| !canonical.is_empty()) else {
        return out.page(&CANONICAL_INVALID, page, format!("href=\"{canonical}\""));
    };
    if !urls::same_site(page_url, &target) {
        return out.page(
            &CANONICAL_OTHER_HOST,
            page,
            format!("canonical is {target}"),
        );
    }
    if let Some(linked) = by_url.get(target.as_str()) {
        if linked.is_error() {
            out.page(
                &CANONICAL_BROKEN,
                page,
                format!("canonical {target} answers with an error"),
            );
        } else if !linked.redirects.is_empty() {
            out.page(
                &CANONICAL_REDIRECT,
                page,
                format!("canonical {target} redirects to {}", linked.final_url),
            );
        }
    }
}

fn hreflang_checks(
    page: &PageRecord,
    facts: &PageFacts,
    page_url: &Url,
    by_url: &FastMap<&str, &PageRecord>,
    out: &mut Findings,
) {
    if facts.hreflangs.is_empty() {
        return;
    }
    let invalid: Vec<String> = facts
        .hreflangs
        .iter()
        .filter(|(code, _)| !valid_hreflang(code))
        .map(|(code, _)| format!("\"{code}\""))
        .collect();
    if !invalid.is_empty() {
        out.page(
            &HREFLANG_INVALID,
            page,
            format!("hreflang {}", list(&invalid, 3)),
        );
    }
    let alternates: Vec<Url> = facts
        .hreflangs
        .iter()
        .filter_map(|(_, href)| urls::resolve(page_url, href))
        .collect();
    if !alternates.iter().any(|a| a == page_url) {
        out.page(
            &HREFLANG_NO_SELF,
            page,
            "no hreflang link to the page itself".into(),
        );
    }
    let missing: Vec<String> = alternates
        .iter()
        .filter(|a| *a != page_url)
        .filter_map(|alternate| {
            let other = by_url.get(alternate.as_str())?;
            let other_facts = other.facts.as_ref()?;
            let other_url = Url::parse(&other.final_url).ok()?;
            let links_back = other_facts
                .hreflangs
                .iter()
                .filter_map(|(_, href)| urls::resolve(&other_url, href))
                .any(|back| &back == page_url);
            (!links_back).then(|| alternate.to_string())
        })
        .collect();
    if !missing.is_empty() {
        out.page(
            &HREFLANG_NO_RETURN,
            page,
            format!("{} does not link back", list(&missing, 3)),
        );
    }
}

fn duplicate_checks(crawl: &CrawlRecord, out: &mut Findings) {
    let indexable = || {
        crawl
            .pages
            .iter()
            .filter(|p| p.is_ok() && p.redirects.is_empty() && !p.noindex())
            .filter_map(|p| p.facts.as_ref().map(|f| (p, f)))
    };
    let mut titles: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut descriptions: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut texts: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for (page, facts) in indexable() {
        if let Some(title) = facts.titles.first().filter(|t| !t.is_empty()) {
            titles.entry(title).or_default().push(page.url.clone());
        }
        if let Some(description) = facts.meta_descriptions.first().filter(|d| !d.is_empty()) {
            descriptions
                .entry(description)
                .or_default()
                .push(page.url.clone());
        }
        if facts.word_count > 0 {
            texts
                .entry(facts.text_fingerprint)
                .or_default()
                .push(page.url.clone());
        }
    }
    for (title, pages) in titles.into_iter().filter(|(_, p)| p.len() > 1) {
        out.site(
            &DUPLICATE_TITLE,
            format!("title: {title}"),
            format!("\"{title}\" on {}", list(&pages, 5)),
        );
    }
    for (description, pages) in descriptions.into_iter().filter(|(_, p)| p.len() > 1) {
        out.site(
            &DUPLICATE_DESCRIPTION,
            format!("description: {description}"),
            format!("the same description on {}", list(&pages, 5)),
        );
    }
    for (_, mut pages) in texts.into_iter().filter(|(_, p)| p.len() > 1) {
        // The first copy in address order names the group: stable across scans, whatever
        // order the crawl found the copies in.
        pages.sort_unstable();
        out.site(
            &DUPLICATE_CONTENT,
            format!("content: {}", pages[0]),
            format!("the same text on {}", list(&pages, 5)),
        );
    }
}

/// Broken external links: one finding per address, naming the pages that link to it.
fn external_link_checks(crawl: &CrawlRecord, out: &mut Findings) {
    let broken: FastMap<u32, String> = crawl
        .external_checks
        .iter()
        .filter_map(|check| Some((check.target, check.outcome.broken()?)))
        .collect();
    if broken.is_empty() {
        return;
    }
    let mut sources: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for page in &crawl.pages {
        for target in &page.external_links {
            if broken.contains_key(target) {
                sources
                    .entry(crawl.address(*target))
                    .or_default()
                    .push(page.url.clone());
            }
        }
    }
    for (target, linking) in sources {
        let id = crawl.address_ids.get(target).copied().unwrap_or(u32::MAX);
        let why = broken.get(&id).map_or("", String::as_str);
        out.site(
            &BROKEN_EXTERNAL_LINK,
            target.to_owned(),
            format!("{target} {why}; linked from {}", list(&linking, 3)),
        );
    }
}

/// SimHash distance (bits that differ, of 64) within which two pages are near-duplicates:
/// a cosine similarity of about 0.97 between their shingle counts (two texts whose shingle
/// vectors have cosine similarity `c` differ in `64 × arccos(c) / π` bits on average).
pub const NEAR_DUPLICATE_BITS: u32 = 5;

/// The fewest words of main text a page needs to be compared for near-duplicates.
pub const NEAR_DUPLICATE_MIN_WORDS: u32 = 50;

/// Groups of indexable pages whose main texts are nearly the same (SimHashes within
/// [`NEAR_DUPLICATE_BITS`]) without being the same (those are `duplicate_content`). The 64
/// bits are cut into `NEAR_DUPLICATE_BITS + 1` bands: two values that differ in no more bits
/// than that agree on at least one band, so only pages sharing a band are compared.
fn near_duplicate_checks(crawl: &CrawlRecord, out: &mut Findings) {
    let pages: Vec<(&PageRecord, &PageFacts)> = crawl
        .pages
        .iter()
        .filter(|p| p.is_ok() && p.redirects.is_empty() && !p.noindex())
        .filter_map(|p| p.facts.as_ref().map(|f| (p, f)))
        .filter(|(_, f)| f.content_words >= NEAR_DUPLICATE_MIN_WORDS)
        .collect();
    let mut parent: Vec<usize> = (0..pages.len()).collect();
    fn root(parent: &mut [usize], mut at: usize) -> usize {
        while parent[at] != at {
            parent[at] = parent[parent[at]];
            at = parent[at];
        }
        at
    }
    let bands = NEAR_DUPLICATE_BITS + 1;
    for band in 0..bands {
        let (from, to) = (band * 64 / bands, (band + 1) * 64 / bands);
        let mask = (1_u64 << (to - from)) - 1;
        let mut buckets: FastMap<u64, Vec<usize>> = FastMap::default();
        for (index, (_, facts)) in pages.iter().enumerate() {
            let key = facts.content_simhash >> from & mask;
            buckets.entry(key).or_default().push(index);
        }
        for members in buckets.values().filter(|m| m.len() > 1) {
            for (i, &a) in members.iter().enumerate() {
                for &b in &members[i + 1..] {
                    let (fa, fb) = (pages[a].1, pages[b].1);
                    let distance = (fa.content_simhash ^ fb.content_simhash).count_ones();
                    if distance <= NEAR_DUPLICATE_BITS && fa.text_fingerprint != fb.text_fingerprint
                    {
                        let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
                        parent[ra.max(rb)] = ra.min(rb);
                    }
                }
            }
        }
    }
    let mut groups: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (index, (page, _)) in pages.iter().enumerate() {
        let group = root(&mut parent, index);
        groups.entry(group).or_default().push(page.url.clone());
    }
    let mut named: Vec<Vec<String>> = groups
        .into_values()
        .map(|mut members| {
            members.sort_unstable();
            members.dedup();
            members
        })
        .filter(|members| members.len() > 1)
        .collect();
    named.sort_unstable();
    for members in named {
        // The first copy in address order names the group, stable across scans.
        out.site(
            &NEAR_DUPLICATE_CONTENT,
            format!("near-duplicate: {}", members[0]),
            format!("nearly the same text on {}", list(&members, 5)),
        );
    }
}

/// The weight of one check's findings in the score, by severity.
pub fn severity_weight(severity: Severity) -> f64 {
    match severity {
        Critical => 25.0,
        High => 10.0,
        Medium => 4.0,
        Low => 1.5,
    }
}

/// The score of a crawl, 0 to 100.
///
/// `score = 100 − Σ weight(check) × (0.5 + 0.5 × share)`, summed over the checks that found
/// something, where `weight` is 25 for a critical check, 10 for high, 4 for medium and 1.5 for
/// low, and `share` is the fraction of the scanned pages a page check found on (1 for site
/// checks). So a problem counts half its weight for being there at all, and the other half in
/// proportion to how much of the site it touches; the result is rounded and kept within 0 to
/// 100. A site with no findings scores 100.
pub fn score(findings: &[Finding], pages_scanned: usize) -> u32 {
    let mut per_check: BTreeMap<&str, (Severity, ScanKind, BTreeSet<&str>)> = BTreeMap::new();
    for finding in findings {
        let entry = per_check.entry(finding.check.id).or_insert((
            finding.check.severity,
            finding.check.scope,
            BTreeSet::new(),
        ));
        entry.2.insert(finding.subject.as_str());
    }
    let pages = pages_scanned.max(1) as f64;
    let penalty: f64 = per_check
        .values()
        .map(|(severity, scope, subjects)| {
            let share = match scope {
                ScanKind::Site => 1.0,
                ScanKind::Page => (subjects.len() as f64 / pages).min(1.0),
            };
            severity_weight(*severity) * (0.5 + 0.5 * share)
        })
        .sum();
    (100.0 - penalty).round().clamp(0.0, 100.0) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogue_has_unique_ids_and_complete_entries() {
        assert!(CATALOGUE.len() >= 35, "{} checks", CATALOGUE.len());
        let ids: BTreeSet<&str> = CATALOGUE.iter().map(|c| c.id).collect();
        assert_eq!(ids.len(), CATALOGUE.len(), "ids are unique");
        for check in CATALOGUE {
            assert!(crate::params::JobTypeName::parse(&check.id.replace('_', "-")).is_ok());
            assert!(
                !check.title.is_empty() && !check.description.is_empty() && !check.fix.is_empty()
            );
            assert_eq!(Check::by_id(check.id), Some(check));
        }
    }

    #[test]
    fn hreflang_codes() {
        for good in [
            "en",
            "en-GB",
            "zh-Hant",
            "es-419",
            "x-default",
            "EN-gb",
            "sr-Latn-RS",
        ] {
            assert!(valid_hreflang(good), "{good}");
        }
        for bad in ["english", "e", "en_GB", "en-", "12", "en-GBR1"] {
            assert!(!valid_hreflang(bad), "{bad}");
        }
    }

    fn finding(check: &'static Check, subject: &str) -> Finding {
        Finding {
            check,
            url: None,
            subject: subject.to_owned(),
            evidence: String::new(),
        }
    }

    #[test]
    fn the_score_weighs_severity_and_share() {
        assert_eq!(score(&[], 10), 100);
        // A critical site finding: 25.
        assert_eq!(score(&[finding(&START_BLOCKED, "x")], 10), 75);
        // A high page finding on 1 page of 10: 10 × 0.55 = 5.5 → 94.5 → 95 (rounded half up).
        assert_eq!(score(&[finding(&HTTP_4XX, "a")], 10), 95);
        // On every page: 10.
        let all: Vec<Finding> = (0..10)
            .map(|i| finding(&HTTP_4XX, &i.to_string()))
            .collect();
        assert_eq!(score(&all, 10), 90);
        // Repeated subjects count once.
        assert_eq!(
            score(&[finding(&HTTP_4XX, "a"), finding(&HTTP_4XX, "a")], 10),
            95
        );
        // Never below zero.
        let everything: Vec<Finding> = CATALOGUE.iter().map(|c| finding(c, "x")).collect();
        assert_eq!(score(&everything, 1), 0);
    }
}
