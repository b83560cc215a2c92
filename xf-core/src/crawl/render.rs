//! Rendering: the page as a browser shows it, after its scripts ran.
//!
//! The seam is [`PageRenderer`]: a scan opens one [`RenderSession`] (in Chromium, one browser
//! context, so cookies and storage never cross scans), renders pages through it, and closes
//! it. The crawler gives the renderer the answer it already read through its own egress
//! guard, which the browser is handed as the document: the site is not asked twice, and the
//! raw and the rendered page are the same answer. What the page then loads (scripts,
//! stylesheets, XHR, images, frames) goes through the renderer's egress rule and the site's
//! robots.txt.
//!
//! The decisions are pure and live here: which pages `auto` renders ([`needs_rendering`]),
//! what differs between the raw and the rendered page ([`differences`]), and what only
//! rendering shows ([`requires_javascript`]). The browser lives in [`super::chromium`]
//! (feature `render`).

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use url::Url;

use super::html::PageFacts;
use crate::model::RenderMode;
use crate::text::excerpt;

/// A page to render: the answer the crawler read (its final address after redirects).
#[derive(Debug, Clone)]
pub struct RenderInput {
    /// The page's address.
    pub url: Url,
    /// Its status (2xx).
    pub status: u16,
    /// Its `Content-Type`.
    pub content_type: Option<String>,
    /// Its body, up to the crawler's body limit.
    pub body: Vec<u8>,
}

/// Why the renderer did not load something the page asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Refusal {
    /// The site's robots.txt disallows it for crawlers (as Google's renderer would not load
    /// it either).
    Robots,
    /// It is, or resolves to, an address scans may not reach (private, loopback, link-local,
    /// metadata), or uses a scheme other than `http`, `https`, `data` and `blob`.
    Egress,
    /// A navigation of the page's own frame to another document (a script redirect): the
    /// page audited is the one the crawler fetched.
    Navigation,
    /// The page's byte budget was spent.
    Budget,
}

impl Refusal {
    /// `robots`, `egress`, `navigation` or `budget`.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Robots => "robots",
            Refusal::Egress => "egress",
            Refusal::Navigation => "navigation",
            Refusal::Budget => "budget",
        }
    }
}

/// A request of the page that the renderer refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedRequest {
    /// The address asked for.
    pub url: String,
    /// What the browser would have used it as, as DevTools names it (`Script`,
    /// `Stylesheet`, `XHR`, `Fetch`, `Image`, `Document`, …).
    pub resource_type: String,
    /// Why it was refused.
    pub why: Refusal,
}

impl RefusedRequest {
    /// Whether the page needs it to render: a script, a stylesheet, or data it fetches.
    pub fn shapes_rendering(&self) -> bool {
        matches!(
            self.resource_type.as_str(),
            "Script" | "Stylesheet" | "XHR" | "Fetch"
        )
    }
}

/// A rendered page.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// The document's HTML after load and network quiet (serialised DOM, up to the page's
    /// byte limit).
    pub html: String,
    /// Uncaught exceptions during load, each its message (the first few).
    pub exceptions: Vec<String>,
    /// Requests refused, the first few of each kind.
    pub refused: Vec<RefusedRequest>,
    /// Requests the page made (the document included).
    pub requests: u32,
    /// Bytes the page's requests received.
    pub bytes: u64,
    /// The page's time or byte limit ended loading before the network was quiet: the DOM is
    /// what had been built by then.
    pub cut_short: bool,
}

/// Why a page could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RenderError {
    /// The page did not finish within its time limit.
    #[error("rendering took longer than {0:?}")]
    Timeout(Duration),
    /// The browser (or the page's process) crashed or its connection closed.
    #[error("the browser crashed: {0}")]
    Crashed(String),
    /// No browser could be started or reached.
    #[error("no browser is available: {0}")]
    Unavailable(String),
    /// The browser refused a command.
    #[error("the browser failed: {0}")]
    Browser(String),
}

impl RenderError {
    /// The failure as a metric label: `timeout`, `crash`, `unavailable` or `browser`.
    pub fn kind(&self) -> &'static str {
        match self {
            RenderError::Timeout(_) => "timeout",
            RenderError::Crashed(_) => "crash",
            RenderError::Unavailable(_) => "unavailable",
            RenderError::Browser(_) => "browser",
        }
    }
}

/// Whether robots.txt lets crawlers fetch an address of the site (the crawl's own rules).
pub type RobotsRule = Arc<dyn Fn(&Url) -> bool + Send + Sync>;

/// What a scan's session renders under.
#[derive(Clone)]
pub struct SessionOptions {
    /// robots.txt of the scanned site, for the page's requests to that site.
    pub robots: RobotsRule,
    /// The longest a page may take, from opening it to reading its DOM.
    pub page_timeout: Duration,
    /// The most bytes a page's requests may receive; later requests are refused.
    pub page_bytes: u64,
}

impl fmt::Debug for SessionOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionOptions")
            .field("page_timeout", &self.page_timeout)
            .field("page_bytes", &self.page_bytes)
            .finish_non_exhaustive()
    }
}

/// Renders pages in a browser. See the module documentation.
#[async_trait]
pub trait PageRenderer: Send + Sync + fmt::Debug {
    /// Opens a session for one scan: its own cookies, storage and cache.
    async fn open(&self, options: SessionOptions) -> Result<Arc<dyn RenderSession>, RenderError>;
}

/// One scan's pages, rendered in isolation from every other scan's.
#[async_trait]
pub trait RenderSession: Send + Sync + fmt::Debug {
    /// Renders one page. A renderer whose browser crashed renders the page again in a new
    /// one before it gives up.
    async fn render(&self, page: RenderInput) -> Result<Rendered, RenderError>;

    /// Ends the session, discarding its cookies and storage; pages rendered after it fail.
    async fn close(&self);
}

/// Fewer words than this beside scripts, and no link, is a shell that script fills.
pub const SHELL_WORDS: u32 = 30;

/// Whether `auto` renders a page: its raw HTML shows that script builds it. An empty mount
/// element (`<div id="root"></div>`, `<app-root>`), a `<noscript>` asking for JavaScript, or
/// scripts beside no link and fewer than [`SHELL_WORDS`] words.
pub fn needs_rendering(raw: &PageFacts) -> bool {
    raw.empty_mount
        || raw.noscript_asks_for_javascript
        || (raw.scripts > 0 && raw.links.is_empty() && raw.word_count < SHELL_WORDS)
}

/// Whether a scan in `mode` renders a page whose raw facts are `raw`.
pub fn renders(mode: RenderMode, raw: &PageFacts) -> bool {
    match mode {
        RenderMode::Never => false,
        RenderMode::Auto => needs_rendering(raw),
        RenderMode::Always => true,
    }
}

/// The longest value quoted in a difference (characters).
const QUOTED: usize = 120;

/// What script changed in the head and the main heading: each of the title, the meta
/// description, the canonical and the h1 that the raw page has and the rendered page changes
/// or removes, and the robots directives whenever they differ (a raw `noindex` that script
/// removes is the classic trap: Google does not render a page whose raw HTML says `noindex`).
/// A value only script adds is no difference: Google sees it, and [`requires_javascript`]
/// reports pages built that way. One line per field, as `title: "Raw" → "Rendered"`.
pub fn differences(raw: &PageFacts, rendered: &PageFacts) -> Vec<String> {
    let mut out = Vec::new();
    let fields: [(&str, Option<&String>, Option<&String>); 4] = [
        ("title", raw.titles.first(), rendered.titles.first()),
        (
            "meta description",
            raw.meta_descriptions.first(),
            rendered.meta_descriptions.first(),
        ),
        (
            "canonical",
            raw.canonicals.first(),
            rendered.canonicals.first(),
        ),
        ("h1", raw.h1s.first(), rendered.h1s.first()),
    ];
    for (field, before, after) in fields {
        let Some(before) = before.filter(|b| !b.is_empty()) else {
            continue;
        };
        if after != Some(before) {
            out.push(format!(
                "{field}: {} → {}",
                quoted(Some(before)),
                quoted(after)
            ));
        }
    }
    let directives = |facts: &PageFacts| -> BTreeSet<String> {
        facts.robots_directives.iter().cloned().collect()
    };
    let (before, after) = (directives(raw), directives(rendered));
    if before != after {
        let join = |set: &BTreeSet<String>| {
            if set.is_empty() {
                "none".to_owned()
            } else {
                set.iter().cloned().collect::<Vec<_>>().join(", ")
            }
        };
        out.push(format!("robots meta: {} → {}", join(&before), join(&after)));
    }
    out
}

fn quoted(value: Option<&String>) -> String {
    match value {
        Some(value) => format!("\"{}\"", excerpt(value, QUOTED)),
        None => "(none)".to_owned(),
    }
}

/// Fewer words than this that only rendering shows are no content that requires JavaScript.
pub const SCRIPT_WORDS: u32 = 50;

/// What only rendering shows, when it is what the page is: links (by `href`) that the raw
/// page lacks, where they are at least half of the rendered page's links, or at least
/// [`SCRIPT_WORDS`] words more, where they are at least half of the rendered text. A widget
/// that adds a link or a sentence to a page served whole is not this.
pub fn requires_javascript(raw: &PageFacts, rendered: &PageFacts) -> Option<String> {
    let raw_links: BTreeSet<&str> = raw.links.iter().map(|l| l.href.as_str()).collect();
    let rendered_links: BTreeSet<&str> = rendered.links.iter().map(|l| l.href.as_str()).collect();
    let only_rendered = rendered_links.difference(&raw_links).count();
    let links = only_rendered > 0 && only_rendered * 2 >= rendered_links.len();
    let added_words = rendered.word_count.saturating_sub(raw.word_count);
    let words = added_words >= SCRIPT_WORDS && added_words * 2 >= rendered.word_count;
    if !links && !words {
        return None;
    }
    Some(format!(
        "{only_rendered} of {} links and {added_words} of {} words appear only after rendering",
        rendered_links.len(),
        rendered.word_count
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crawl::html::{Link, PageScanner};

    fn facts(html: &str) -> PageFacts {
        let mut scanner = PageScanner::new();
        scanner.write(html.as_bytes());
        scanner.finish()
    }

    #[test]
    fn shells_are_rendered_and_served_pages_are_not() {
        let shells = [
            r#"<html><body><div id="root"></div><script src="/app.js"></script></body></html>"#,
            r#"<body><div id="app">  </div><script>start()</script>"#,
            r#"<body><app-root></app-root><script src="main.js"></script>"#,
            r#"<body><noscript>You need to enable JavaScript to run this app.</noscript><script src=a.js></script>"#,
            r#"<body><p>Loading</p><script src="/bundle.js"></script>"#,
        ];
        for shell in shells {
            assert!(needs_rendering(&facts(shell)), "{shell}");
        }
        let served = [
            r#"<body><div id="root"><h1>Shop</h1><a href="/a">A</a></div><script src="/app.js"></script>"#,
            r#"<body><p>Plain page, no script at all.</p>"#,
            r#"<body><a href="/next">Next</a><script>track()</script>"#,
            r#"<body><noscript><img src="/pixel.gif"></noscript><a href="/x">x</a>"#,
        ];
        for page in served {
            assert!(!needs_rendering(&facts(page)), "{page}");
        }
        assert!(!renders(RenderMode::Never, &facts(shells[0])));
        assert!(renders(RenderMode::Always, &facts(served[1])));
    }

    #[test]
    fn differences_name_changed_and_removed_values_only() {
        let raw = facts(
            r#"<head><title>Raw title</title><meta name="robots" content="noindex">
            <link rel="canonical" href="/a"></head><body><h1>Raw</h1>"#,
        );
        let rendered = facts(
            r#"<head><title>Rendered title</title><link rel="canonical" href="/a">
            <meta name="description" content="Added by script"></head><body><h1>Raw</h1>"#,
        );
        assert_eq!(
            differences(&raw, &rendered),
            [
                "title: \"Raw title\" → \"Rendered title\"",
                "robots meta: noindex → none"
            ]
        );
        assert!(differences(&rendered, &rendered).is_empty());
        let removed = facts("<head></head><body>");
        assert_eq!(
            differences(&facts("<h1>Topic</h1>"), &removed),
            ["h1: \"Topic\" → (none)"]
        );
    }

    #[test]
    fn content_that_only_script_shows_is_told_apart_from_a_widget() {
        let shell = facts(r#"<body><div id="root"></div><script src="/app.js"></script>"#);
        let mut built = facts(&format!(
            "<body><h1>Shop</h1><p>{}</p>",
            "word ".repeat(120)
        ));
        assert!(requires_javascript(&shell, &built).is_some());
        built.links = vec![Link {
            href: "/only-by-script".into(),
            nofollow: false,
        }];
        let evidence = requires_javascript(&shell, &built).unwrap_or_default();
        assert!(evidence.starts_with("1 of 1 links"), "{evidence}");

        let served = facts(&format!(
            "<body><a href=/a>a</a><a href=/b>b</a><p>{}</p>",
            "word ".repeat(300)
        ));
        let mut widget = served.clone();
        widget.links.push(Link {
            href: "/cookie-settings".into(),
            nofollow: false,
        });
        widget.word_count += 20;
        assert_eq!(requires_javascript(&served, &widget), None);
    }
}
