//! What a page says about itself, read from its HTML as it streams in.
//!
//! [`PageScanner`] feeds chunks to a streaming HTML parser (`lol_html`: no DOM, memory bounded
//! by the largest tag, not by the page) and collects the [`PageFacts`] the checks need: titles,
//! meta descriptions and robots directives, headings, canonical and hreflang links, links,
//! images, sub-resources, the language, the viewport, and the visible text's size and
//! fingerprint. It is `Send`, so a crawler can feed it chunk by chunk between `.await`s.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};

use lol_html::send::{EndTagHandler, HtmlRewriter, Settings};
use lol_html::{doc_text, element, text, MemorySettings};

/// A link found on a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The `href` as written.
    pub href: String,
    /// `rel="nofollow"` (or `ugc`/`sponsored`).
    pub nofollow: bool,
}

/// What the checks need to know about a page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageFacts {
    /// The text of each `<title>` (white space collapsed).
    pub titles: Vec<String>,
    /// The `content` of each `<meta name="description">` (white space collapsed).
    pub meta_descriptions: Vec<String>,
    /// The directives of `<meta name="robots">` (lower case, e.g. `noindex`).
    pub robots_directives: Vec<String>,
    /// The text of each `<h1>` (white space collapsed).
    pub h1s: Vec<String>,
    /// The level (1 to 6) of every heading, in document order.
    pub heading_levels: Vec<u8>,
    /// The `href` of each `<link rel="canonical">`.
    pub canonicals: Vec<String>,
    /// `(hreflang, href)` of each `<link rel="alternate" hreflang>`.
    pub hreflangs: Vec<(String, String)>,
    /// Every `<a href>`.
    pub links: Vec<Link>,
    /// How many `<img>` the page has.
    pub images: u32,
    /// The `src` of each `<img>` without an `alt` attribute.
    pub images_without_alt: Vec<String>,
    /// Addresses of resources the page loads (`img`, `script`, `iframe`, `source`, `video`,
    /// `audio` sources, stylesheets), as written.
    pub subresources: Vec<String>,
    /// `<html lang>`.
    pub lang: Option<String>,
    /// Whether a `<meta name="viewport">` is present.
    pub has_viewport: bool,
    /// `<base href>`, which relative links resolve against.
    pub base_href: Option<String>,
    /// Words of visible text (outside `script`, `style`, `noscript` and `template`).
    pub word_count: u32,
    /// A fingerprint of the visible text (lower-cased words), equal for pages with the same
    /// text.
    pub text_fingerprint: u64,
    /// The parser gave up (a tag too large for its memory budget); facts are partial.
    pub truncated: bool,
}

/// Facts being collected, and the parser state that needs to outlive one handler call.
#[derive(Debug, Default)]
struct Collector {
    facts: PageFacts,
    /// Open elements whose text is not visible.
    hidden_depth: u32,
    title: Option<String>,
    h1: Option<String>,
    /// Visible text after the last white space seen, not yet counted.
    partial_word: String,
    hasher: DefaultHasher,
}

/// Elements whose text the facts keep.
#[derive(Debug, Clone, Copy)]
enum Captured {
    Title,
    H1,
}

impl Collector {
    /// The text being read for `what` (while one is open) and the texts read so far.
    fn slot(&mut self, what: Captured) -> (&mut Option<String>, &mut Vec<String>) {
        match what {
            Captured::Title => (&mut self.title, &mut self.facts.titles),
            Captured::H1 => (&mut self.h1, &mut self.facts.h1s),
        }
    }

    /// Keeps the text read for `what`, if one is open.
    fn close(&mut self, what: Captured) {
        let (open, done) = self.slot(what);
        if let Some(text) = open.take() {
            done.push(collapse(&text));
        }
    }

    /// Counts and hashes the words of a chunk of visible text. A chunk may end inside a word,
    /// so the last partial word waits for the next chunk (or the end of the text node).
    fn visible_text(&mut self, text: &str, last_in_node: bool) {
        if self.hidden_depth > 0 {
            return;
        }
        self.partial_word.push_str(text);
        let complete = if last_in_node {
            self.partial_word.len()
        } else {
            self.partial_word
                .rfind(char::is_whitespace)
                .map_or(0, |at| at + 1)
        };
        let rest = self.partial_word.split_off(complete);
        let done = std::mem::replace(&mut self.partial_word, rest);
        for word in done.split_whitespace() {
            self.facts.word_count = self.facts.word_count.saturating_add(1);
            word.to_lowercase().hash(&mut self.hasher);
        }
    }
}

/// Collapses runs of white space to one space and trims, after decoding character
/// references (the parser hands text over as written: `&amp;` is `&`).
fn collapse(text: &str) -> String {
    html_escape::decode_html_entities(text)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The value of an attribute, character references decoded (`href="/a?x=1&amp;y=2"` is
/// `/a?x=1&y=2`), as a browser reads it.
fn attribute(
    element: &lol_html::html_content::Element<'_, '_, impl lol_html::HandlerTypes>,
    name: &str,
) -> Option<String> {
    element
        .get_attribute(name)
        .map(|value| html_escape::decode_html_entities(&value).into_owned())
}

/// The largest amount of memory the parser may buffer (a single tag or text node larger than
/// this stops the scan of that page, which is then marked truncated).
const PARSER_MEMORY: usize = 1024 * 1024;

type Shared = Arc<Mutex<Collector>>;

fn lock(shared: &Shared) -> MutexGuard<'_, Collector> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

/// The parser, writing its (unused) output nowhere.
type Parser = HtmlRewriter<'static, fn(&[u8])>;

/// Reads a page's HTML chunk by chunk. See the module documentation.
pub struct PageScanner {
    rewriter: Option<Parser>,
    collector: Shared,
}

impl std::fmt::Debug for PageScanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageScanner")
            .field("collector", &self.collector)
            .finish_non_exhaustive()
    }
}

impl Default for PageScanner {
    fn default() -> Self {
        Self::new()
    }
}

fn discard(_: &[u8]) {}

/// A handler as the parser takes it: a selector and what to do with its matches.
type Handler = (
    std::borrow::Cow<'static, lol_html::Selector>,
    lol_html::send::ElementContentHandlers<'static>,
);

/// The handlers that read the text of each `selector` element into `what`: opened at its start
/// tag, filled by its text, kept at its end tag (or at the end of the page).
fn captured_text(selector: &'static str, what: Captured, shared: &Shared) -> [Handler; 2] {
    let (opening, filling) = (Arc::clone(shared), Arc::clone(shared));
    [
        element!(selector, move |el| {
            *lock(&opening).slot(what).0 = Some(String::new());
            let closing = Arc::clone(&opening);
            if let Some(handlers) = el.end_tag_handlers() {
                let on_end: EndTagHandler<'static> = Box::new(move |_end| {
                    lock(&closing).close(what);
                    Ok(())
                });
                handlers.push(on_end);
            }
            Ok(())
        }),
        text!(selector, move |chunk| {
            if let Some(text) = lock(&filling).slot(what).0.as_mut() {
                text.push_str(chunk.as_str());
            }
            Ok(())
        }),
    ]
}

impl PageScanner {
    /// A scanner for one page.
    pub fn new() -> Self {
        let collector: Shared = Arc::default();
        let c = |collector: &Shared| Arc::clone(collector);
        let (meta, heading, link, anchor) =
            (c(&collector), c(&collector), c(&collector), c(&collector));
        let (image, resource, html, base) =
            (c(&collector), c(&collector), c(&collector), c(&collector));
        let (hidden, words) = (c(&collector), c(&collector));
        let element_handlers = vec![
            element!("h1, h2, h3, h4, h5, h6", move |el| {
                let level = el.tag_name().as_bytes().get(1).map_or(0, |b| b - b'0');
                lock(&heading).facts.heading_levels.push(level);
                Ok(())
            }),
            element!("meta[name]", move |el| {
                let name = attribute(el, "name")
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                let content = attribute(el, "content");
                let mut collector = lock(&meta);
                match name.as_str() {
                    "description" => collector
                        .facts
                        .meta_descriptions
                        .push(collapse(&content.unwrap_or_default())),
                    "robots" => collector.facts.robots_directives.extend(
                        content
                            .unwrap_or_default()
                            .split(',')
                            .map(|d| d.trim().to_ascii_lowercase())
                            .filter(|d| !d.is_empty()),
                    ),
                    "viewport" => collector.facts.has_viewport = true,
                    _ => {}
                }
                Ok(())
            }),
            element!("link[rel][href]", move |el| {
                let rel = attribute(el, "rel")
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                let href = attribute(el, "href").unwrap_or_default();
                let mut collector = lock(&link);
                let rels: Vec<&str> = rel.split_ascii_whitespace().collect();
                if rels.contains(&"canonical") {
                    collector.facts.canonicals.push(href.trim().to_owned());
                }
                if rels.contains(&"alternate") {
                    if let Some(lang) = attribute(el, "hreflang") {
                        collector
                            .facts
                            .hreflangs
                            .push((lang.trim().to_owned(), href.trim().to_owned()));
                    }
                }
                if rels.contains(&"stylesheet") {
                    collector.facts.subresources.push(href.trim().to_owned());
                }
                Ok(())
            }),
            element!("a[href]", move |el| {
                let href = attribute(el, "href").unwrap_or_default().trim().to_owned();
                let rel = attribute(el, "rel")
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                let nofollow = rel
                    .split_ascii_whitespace()
                    .any(|r| matches!(r, "nofollow" | "ugc" | "sponsored"));
                lock(&anchor).facts.links.push(Link { href, nofollow });
                Ok(())
            }),
            element!("img", move |el| {
                let src = attribute(el, "src").unwrap_or_default().trim().to_owned();
                let mut collector = lock(&image);
                collector.facts.images = collector.facts.images.saturating_add(1);
                if !el.has_attribute("alt") {
                    collector.facts.images_without_alt.push(src);
                }
                Ok(())
            }),
            element!(
                "img[src], script[src], iframe[src], source[src], video[src], audio[src]",
                move |el| {
                    let src = attribute(el, "src").unwrap_or_default().trim().to_owned();
                    lock(&resource).facts.subresources.push(src);
                    Ok(())
                }
            ),
            element!("html[lang]", move |el| {
                lock(&html).facts.lang = attribute(el, "lang").map(|l| l.trim().to_owned());
                Ok(())
            }),
            element!("base[href]", move |el| {
                let mut collector = lock(&base);
                if collector.facts.base_href.is_none() {
                    collector.facts.base_href = attribute(el, "href").map(|h| h.trim().to_owned());
                }
                Ok(())
            }),
            element!("script, style, noscript, template", move |el| {
                lock(&hidden).hidden_depth += 1;
                let hidden = Arc::clone(&hidden);
                if let Some(handlers) = el.end_tag_handlers() {
                    let on_end: EndTagHandler<'static> = Box::new(move |_end| {
                        let mut collector = lock(&hidden);
                        collector.hidden_depth = collector.hidden_depth.saturating_sub(1);
                        Ok(())
                    });
                    handlers.push(on_end);
                }
                Ok(())
            }),
        ];
        let captured = [
            captured_text("title", Captured::Title, &collector),
            captured_text("h1", Captured::H1, &collector),
        ];
        let mut settings = Settings::new_send().with_memory_settings(
            MemorySettings::new().with_max_allowed_memory_usage(PARSER_MEMORY),
        );
        for handler in element_handlers
            .into_iter()
            .chain(captured.into_iter().flatten())
        {
            settings = settings.append_element_content_handler(handler);
        }
        let settings = settings.append_document_content_handler(doc_text!(move |chunk| {
            lock(&words).visible_text(chunk.as_str(), chunk.last_in_text_node());
            Ok(())
        }));
        PageScanner {
            rewriter: Some(HtmlRewriter::new(settings, discard as fn(&[u8]))),
            collector,
        }
    }

    /// Feeds the next chunk of the body.
    pub fn write(&mut self, chunk: &[u8]) {
        if let Some(rewriter) = self.rewriter.as_mut() {
            if rewriter.write(chunk).is_err() {
                self.rewriter = None;
                lock(&self.collector).facts.truncated = true;
            }
        }
    }

    /// The facts, once the whole body was fed.
    pub fn finish(mut self) -> PageFacts {
        if let Some(rewriter) = self.rewriter.take() {
            if rewriter.end().is_err() {
                lock(&self.collector).facts.truncated = true;
            }
        }
        let mut collector = lock(&self.collector);
        // A title or h1 left open by the end of the page still counts.
        collector.close(Captured::Title);
        collector.close(Captured::H1);
        collector.visible_text("", true);
        collector.facts.text_fingerprint = collector.hasher.finish();
        std::mem::take(&mut collector.facts)
    }
}

/// The facts of a whole page held in memory.
pub fn scan(body: &[u8]) -> PageFacts {
    let mut scanner = PageScanner::new();
    scanner.write(body);
    scanner.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"<!doctype html>
<html lang="en-GB"><head>
  <title>  Blue   widgets |
   Acme </title>
  <meta name="Description" content="All about  blue widgets.">
  <meta name="robots" content="NOINDEX, follow">
  <meta name="viewport" content="width=device-width">
  <link rel="canonical" href="https://acme.example/widgets/blue">
  <link rel="alternate" hreflang="de" href="https://acme.example/de/widgets/blue">
  <link rel="stylesheet" href="http://cdn.example/site.css">
  <base href="https://acme.example/widgets/">
  <script>var words = "not visible text at all";</script>
  <style>p { color: blue }</style>
</head><body>
  <h1>Blue <em>widgets</em></h1>
  <p>Three visible words.</p>
  <h3>Skipped a level</h3>
  <a href="/about">About</a> <a href=" red " rel="nofollow ugc">Red</a>
  <img src="/a.png" alt="A"> <img src="/b.png">
  <script src="/app.js"></script>
</body></html>"#;

    #[test]
    fn character_references_are_decoded_as_a_browser_reads_them() {
        let facts = scan(
            b"<html><head><title>Fish &amp; chips &lt;fresh&gt; &eacute;t&#233; &#x27;24</title>\
              <meta name=\"description\" content=\"Caf&eacute; &quot;Chez&quot;\"></head>\
              <body><h1>A &amp; B</h1><a href=\"/menu?size=l&amp;salt=no\">Menu</a></body></html>",
        );
        assert_eq!(facts.titles, ["Fish & chips <fresh> été '24"]);
        assert_eq!(facts.meta_descriptions, ["Café \"Chez\""]);
        assert_eq!(facts.h1s, ["A & B"]);
        assert_eq!(facts.links[0].href, "/menu?size=l&salt=no");
    }

    #[test]
    fn collects_the_facts_of_a_page() {
        let facts = scan(PAGE.as_bytes());
        assert_eq!(facts.titles, ["Blue widgets | Acme"]);
        assert_eq!(facts.meta_descriptions, ["All about blue widgets."]);
        assert_eq!(facts.robots_directives, ["noindex", "follow"]);
        assert!(facts.has_viewport);
        assert_eq!(facts.canonicals, ["https://acme.example/widgets/blue"]);
        assert_eq!(
            facts.hreflangs,
            [(
                "de".to_owned(),
                "https://acme.example/de/widgets/blue".to_owned()
            )]
        );
        assert_eq!(facts.h1s, ["Blue widgets"]);
        assert_eq!(facts.heading_levels, [1, 3]);
        assert_eq!(
            facts.links,
            [
                Link {
                    href: "/about".into(),
                    nofollow: false
                },
                Link {
                    href: "red".into(),
                    nofollow: true
                },
            ]
        );
        assert_eq!(facts.images, 2);
        assert_eq!(facts.images_without_alt, ["/b.png"]);
        assert_eq!(
            facts.subresources,
            ["http://cdn.example/site.css", "/a.png", "/b.png", "/app.js"]
        );
        assert_eq!(facts.lang.as_deref(), Some("en-GB"));
        assert_eq!(
            facts.base_href.as_deref(),
            Some("https://acme.example/widgets/")
        );
        // Title, h1, paragraph, h3 and the two link texts; not the script or the style.
        assert_eq!(facts.word_count, 4 + 2 + 3 + 3 + 2);
        assert!(!facts.truncated);
    }

    #[test]
    fn chunk_boundaries_change_nothing() {
        let whole = scan(PAGE.as_bytes());
        for size in [1, 7, 64] {
            let mut scanner = PageScanner::new();
            for chunk in PAGE.as_bytes().chunks(size) {
                scanner.write(chunk);
            }
            assert_eq!(scanner.finish(), whole, "chunks of {size}");
        }
    }

    #[test]
    fn equal_text_has_an_equal_fingerprint() {
        let a = scan(b"<p>Hello   World</p><script>x</script>");
        let b = scan(b"<div>hello</div> <span>world</span>");
        let c = scan(b"<p>Hello there</p>");
        assert_eq!(a.text_fingerprint, b.text_fingerprint);
        assert_ne!(a.text_fingerprint, c.text_fingerprint);
    }

    #[test]
    fn an_empty_or_broken_page_gives_empty_facts() {
        let facts = scan(b"");
        assert_eq!(facts.word_count, 0);
        assert!(facts.titles.is_empty());
        let facts = scan(b"<title>Open<p>never closed");
        assert_eq!(facts.titles.len(), 1);
    }

    #[test]
    fn a_giant_tag_stops_the_scan_without_failing() {
        let mut body = b"<title>t</title><a href=\"".to_vec();
        body.extend(std::iter::repeat_n(b'x', 2 * PARSER_MEMORY));
        body.extend(b"\">");
        let mut scanner = PageScanner::new();
        for chunk in body.chunks(16 * 1024) {
            scanner.write(chunk);
        }
        let facts = scanner.finish();
        assert!(facts.truncated);
        assert_eq!(facts.titles, ["t"]);
    }
}
