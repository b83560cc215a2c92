//! Every parser of what the web and uploads send is total: property tests over arbitrary bytes,
//! and over text built from the pieces each format is made of, mixed with multi-byte white
//! space (U+00A0, U+2028, U+3000), zero-width and combining characters, and broken UTF-8. One
//! suite per parser: the HTML scanner, robots.txt, sitemaps, URL normalisation and scope, the
//! headers (`Refresh`, `Retry-After`, `X-Robots-Tag`, `Content-Type`) with JSON-LD, and the
//! media inspectors (movie boxes nested at random with edge-case sizes and counts; image
//! signatures followed by anything).
//!
//! Each property says more than "does not panic" where the format allows: feeding a page in
//! any chunks gives the facts of feeding it whole, a normalised URL normalises to itself, a
//! text sitemap of URLs lists exactly those URLs, and so on.

use std::io::Write as _;

use proptest::prelude::*;
use url::Url;
use xf_core::crawl::headers::{is_html, parse_refresh, retry_after, robots_tag_noindex};
use xf_core::crawl::html::{self, json_ld_problem, PageScanner, Sampled};
use xf_core::crawl::robots::Robots;
use xf_core::crawl::sitemap::{parse_sitemap, Sitemap};
use xf_core::crawl::urls::{self, Scope};

/// Characters that break naive text handling: multi-byte white space, zero-width and
/// combining characters, right-to-left text, astral characters, and controls.
const TRICKY: &[&str] = &[
    "\u{a0}",
    "\u{2028}",
    "\u{3000}",
    "\u{200b}",
    "\u{feff}",
    "\u{301}",
    "e\u{301}",
    "\u{5d0}",
    "\u{1f600}",
    "\u{0}",
    "\t",
    "\r",
    "\n",
    "\r\n",
    " ",
    "é",
    "ß",
    "İ",
];

/// Text made of `pieces` and [`TRICKY`] characters, in any order.
fn text_of(pieces: &'static [&'static str]) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => proptest::sample::select(pieces).prop_map(str::to_owned),
        2 => proptest::sample::select(TRICKY).prop_map(str::to_owned),
        1 => "[a-zA-Z0-9]{0,6}",
    ];
    proptest::collection::vec(piece, 0..60).prop_map(|parts| parts.concat())
}

/// Bytes of that text with some bytes replaced by arbitrary ones (broken UTF-8 included).
fn bytes_of(pieces: &'static [&'static str]) -> impl Strategy<Value = Vec<u8>> {
    (
        text_of(pieces),
        proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
    )
        .prop_map(|(text, noise)| {
            let mut bytes = text.into_bytes();
            if !bytes.is_empty() {
                for (at, byte) in noise {
                    let at = at.index(bytes.len());
                    bytes[at] = byte;
                }
            }
            bytes
        })
}

const HTML_PIECES: &[&str] = &[
    "<",
    ">",
    "</",
    "/>",
    "\"",
    "'",
    "=",
    "<!--",
    "-->",
    "<!doctype html>",
    "<html lang=\"en\">",
    "<head>",
    "</head>",
    "<title>",
    "</title>",
    "<h1>",
    "</h1>",
    "<h2>",
    "<p>",
    "</p>",
    "<a href=\"",
    "<a href=/x>",
    "<a onclick=\"go()\">",
    "</a>",
    "<a name=top>",
    "click here",
    "read more",
    "<img src=\"/i.png\" alt=\"",
    "<img src=x>",
    "<meta name=\"description\" content=\"",
    "<meta name=robots content=noindex>",
    "<meta http-equiv=\"refresh\" content=\"",
    "0; url=",
    "<link rel=\"canonical\" href=\"",
    "<link rel=alternate hreflang=de href=/de>",
    "<script type=\"application/ld+json\">",
    "<script>",
    "</script>",
    "{\"@context\":",
    "\"@type\":\"Thing\"}",
    "<style>",
    "</style>",
    "<noscript>",
    "</noscript>",
    "<template>",
    "<nav>",
    "</nav>",
    "<footer>",
    "<base href=\"/b/\">",
    "&amp;",
    "&nbsp;",
    "&#xA0;",
    "&#12288;",
    "&",
    "javascript:void(0)",
    "<![CDATA[",
    "]]>",
    "<svg><title>t</title></svg>",
    "<math>",
    "<textarea>",
    "</textarea>",
    "<plaintext>",
    "<table><tr><td>",
];

fn feed(chunks: &[&[u8]]) -> html::PageFacts {
    let mut scanner = PageScanner::new();
    for chunk in chunks {
        scanner.write(chunk);
    }
    scanner.finish()
}

fn split_at_points(bytes: &[u8], points: &[prop::sample::Index]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = points.iter().map(|p| p.index(bytes.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut chunks = Vec::new();
    let mut from = 0;
    for cut in cuts {
        chunks.push(bytes[from..cut].to_vec());
        from = cut;
    }
    chunks.push(bytes[from..].to_vec());
    chunks
}

fn bounded<T>(sample: &Sampled<T>) -> bool {
    sample.examples.len() <= Sampled::<T>::KEEP
        && sample.examples.len() as u64 <= u64::from(sample.total)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The HTML scanner: any bytes, in any chunks, give the facts of the whole page, within
    /// bounds.
    #[test]
    fn html_scanner_is_total_and_chunk_invariant(
        page in bytes_of(HTML_PIECES),
        points in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let whole = html::scan(&page);
        let chunks = split_at_points(&page, &points);
        let refs: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
        prop_assert_eq!(feed(&refs), whole.clone());
        prop_assert!(whole.word_count as usize <= page.len());
        prop_assert!(whole.content_words <= whole.word_count);
        prop_assert!(bounded(&whole.vague_links));
        prop_assert!(bounded(&whole.uncrawlable_links));
        prop_assert!(bounded(&whole.structured_data_problems));
        prop_assert!(whole.meta_refresh.as_ref().is_none_or(|r| r.chars().count() <= 2049));
        for link in &whole.vague_links.examples {
            prop_assert!(link.text.len() <= 256 && link.href.chars().count() <= 201);
        }
    }

    #[test]
    fn html_scanner_takes_arbitrary_bytes(page in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let facts = html::scan(&page);
        prop_assert!(facts.word_count as usize <= page.len());
    }
}

const ROBOTS_PIECES: &[&str] = &[
    "user-agent:",
    "User-Agent: *",
    "user agent: x",
    "useragent:",
    "allow:",
    "Allow: /",
    "disallow:",
    "Disallow: /private/",
    "disalow: /typo",
    "crawl-delay:",
    "Crawl-delay: 2.5",
    "crawl-delay: soon",
    "sitemap:",
    "Sitemap: https://example.com/s.xml",
    "sitemap: /rel.xml",
    "host: example.com",
    "#",
    "# comment",
    ":",
    "*",
    "$",
    "/",
    "?",
    "%",
    "%2F",
    "%7E",
    "%zz",
    "xf-seo-bot",
    "/a*b$",
    "\u{feff}",
    "\n",
    "\r\n",
    "\r",
];

const PATH_PIECES: &[&str] = &[
    "/",
    "a",
    "*",
    "$",
    "?",
    "=",
    "&",
    "%",
    "%2F",
    "%41",
    "#",
    "~",
    "robots.txt",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// robots.txt: any file parses, any path gets an answer, `/robots.txt` is always allowed,
    /// and the problem list stays bounded.
    #[test]
    fn robots_txt_is_total(
        body in bytes_of(ROBOTS_PIECES),
        agent in text_of(&["xf-seo-bot", "*", "/1.0", "Googlebot"]),
        path in text_of(PATH_PIECES),
    ) {
        let robots = Robots::parse(&body);
        let _ = robots.is_allowed(&agent, &path);
        let _ = robots.crawl_delay(&agent);
        prop_assert!(robots.is_allowed(&agent, "/robots.txt"));
        prop_assert!(robots.problems().len() <= 10);
        prop_assert!(robots.problems().len() as u64 <= u64::from(robots.problem_count()));
        for problem in robots.problems() {
            prop_assert!(problem.chars().count() < 200, "{problem}");
        }
    }

    #[test]
    fn robots_txt_takes_arbitrary_bytes(body in proptest::collection::vec(any::<u8>(), 0..2048), path in any::<String>()) {
        let robots = Robots::parse(&body);
        let _ = robots.is_allowed("xf-seo-bot", &path);
    }
}

const SITEMAP_PIECES: &[&str] = &[
    "<?xml version=\"1.0\"?>",
    "<urlset>",
    "</urlset>",
    "<sitemapindex>",
    "</sitemapindex>",
    "<url>",
    "</url>",
    "<sitemap>",
    "</sitemap>",
    "<loc>",
    "</loc>",
    "<lastmod>",
    "</lastmod>",
    "<sm:loc>",
    "<![CDATA[",
    "]]>",
    "&amp;",
    "&nbsp;",
    "&#38;",
    "https://example.com/",
    "http://example.com/a?b=c",
    "/relative",
    "<!-- c -->",
    "<",
    ">",
    "\n",
];

/// An absolute http(s) URL as sitemaps write them.
fn page_url() -> impl Strategy<Value = String> {
    (
        proptest::sample::select(&["http", "https"][..]),
        proptest::sample::select(&["example.com", "www.example.com", "b\u{fc}cher.example"][..]),
        proptest::collection::vec(
            proptest::sample::select(
                &["a", "b%20c", "\u{e9}t\u{e9}", "x.html", "?q=1", "&r=\u{a0}"][..],
            ),
            0..4,
        ),
    )
        .prop_map(|(scheme, host, parts)| format!("{scheme}://{host}/{}", parts.concat()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Sitemaps: any body, plain or gzipped, gives a sitemap or an error, never a panic.
    #[test]
    fn sitemaps_are_total(body in bytes_of(SITEMAP_PIECES)) {
        let plain = parse_sitemap(&body);
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(&body).expect("gzip in memory");
        let gzipped = parse_sitemap(&encoder.finish().expect("gzip in memory"));
        prop_assert_eq!(plain, gzipped);
    }

    #[test]
    fn sitemaps_take_arbitrary_bytes(body in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = parse_sitemap(&body);
    }

    /// A text sitemap lists exactly its lines' URLs, whatever the line endings and blank
    /// lines.
    #[test]
    fn text_sitemaps_list_their_urls(
        urls in proptest::collection::vec(page_url(), 1..20),
        ending in proptest::sample::select(&["\n", "\r\n", "\n\n", " \t\n"][..]),
    ) {
        let body = urls.join(ending);
        match parse_sitemap(body.as_bytes()) {
            Ok(Sitemap::UrlSet(entries)) => {
                let listed: Vec<&str> = entries.iter().map(|e| e.loc.as_str()).collect();
                prop_assert_eq!(listed, urls.iter().map(String::as_str).collect::<Vec<_>>());
            }
            other => prop_assert!(false, "{:?}", other),
        }
    }
}

const HREF_PIECES: &[&str] = &[
    "http://",
    "https://",
    "HTTP://",
    "//",
    "/",
    "..",
    ".",
    "?",
    "#",
    "&",
    "=",
    "%",
    "%zz",
    "%20",
    "@",
    ":",
    ":80",
    ":443",
    ":8080",
    "[::1]",
    "[",
    "]",
    "user:pw@",
    "www.",
    "example.com",
    "EXAMPLE.com",
    "xn--",
    "mailto:",
    "javascript:",
    "data:",
    "\\",
    " ",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// URL normalisation: any href resolves to nothing or to an http(s) address without a
    /// fragment or credentials that normalises to itself; the scope only holds addresses of
    /// its site.
    #[test]
    fn urls_normalise_to_a_fixed_point(
        href in text_of(HREF_PIECES),
        base in proptest::sample::select(&[
            "https://example.com/", "http://www.example.com/book/ch1.html?x=1", "https://example.com:8443/a/",
        ][..]),
    ) {
        let base = Url::parse(base).expect("a base");
        if let Some(url) = urls::resolve(&base, &href) {
            prop_assert!(matches!(url.scheme(), "http" | "https"));
            prop_assert!(url.fragment().is_none());
            prop_assert!(url.username().is_empty() && url.password().is_none());
            prop_assert_eq!(urls::resolve(&base, url.as_str()), Some(url.clone()));
            let scope = Scope::of(&base);
            if scope.contains(&url) {
                prop_assert!(scope.same_site(&url));
                prop_assert!(url.path().starts_with(scope.prefix()));
            }
            let _ = urls::robots_path(&url);
        }
    }
}

const REFRESH_PIECES: &[&str] = &[
    "0",
    "5",
    "1.5",
    ".",
    ";",
    ",",
    " ",
    "url",
    "URL",
    "=",
    "'",
    "\"",
    "/next",
    "http://x.example/",
    "-1",
    "99999999999999999999999",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Header values: any text gives an answer.
    #[test]
    fn headers_are_total(value in text_of(REFRESH_PIECES)) {
        let _ = parse_refresh(&value);
        let _ = retry_after(&value);
        let _ = robots_tag_noindex(&value);
        let _ = is_html(Some(&value));
    }

    /// A refresh written `N; url=X` (any spacing, case and quotes) reads as N seconds to X.
    #[test]
    fn refresh_values_read_back(
        seconds in 0_u64..100_000,
        separator in proptest::sample::select(&[";", ",", " ", "; ", " ;  "][..]),
        key in proptest::sample::select(&["url=", "URL = ", "Url=", ""][..]),
        quote in proptest::sample::select(&["", "'", "\""][..]),
        target in "[a-z/.?=&]{1,20}",
    ) {
        prop_assume!(!(key.is_empty() && target.to_ascii_lowercase().starts_with("url")));
        let value = format!("{seconds}{separator}{key}{quote}{target}{quote}");
        let parsed = parse_refresh(&value).expect("a refresh");
        prop_assert_eq!(parsed.seconds, seconds);
        prop_assert_eq!(parsed.url.as_deref(), Some(target.as_str()));
    }

    /// JSON-LD: any text gets a verdict; a typed item with a context has no problem.
    #[test]
    fn json_ld_is_total(text in text_of(&["{", "}", "[", "]", ":", ",", "\"@context\"", "\"@type\"", "\"@graph\"", "\"x\"", "1", "null"])) {
        let _ = json_ld_problem(&text);
    }

    #[test]
    fn typed_json_ld_passes(kind in "[A-Za-z]{1,12}", extra in any::<i64>()) {
        let text = serde_json::json!({"@context": "https://schema.org", "@type": kind, "n": extra}).to_string();
        prop_assert_eq!(json_ld_problem(&text), None);
    }
}

// -- Media containers ------------------------------------------------------------------------

/// A box of an ISO base media file: size, type, payload.
fn iso_box(kind: &[u8; 4], payload: &[u8]) -> Vec<u8> {
    let mut boxed = u32::try_from(payload.len() + 8)
        .unwrap_or(u32::MAX)
        .to_be_bytes()
        .to_vec();
    boxed.extend_from_slice(kind);
    boxed.extend_from_slice(payload);
    boxed
}

/// Box types of a movie's header tree, and numbers that are edges for sizes and counts.
const BOX_TYPES: &[&[u8; 4]] = &[
    b"moov", b"mvhd", b"trak", b"tkhd", b"mdia", b"mdhd", b"hdlr", b"minf", b"stbl", b"stsd",
    b"stsz", b"stz2", b"avc1", b"mp4a", b"mvex", b"mehd", b"free", b"mdat",
];

/// Nested boxes of those types around arbitrary payloads, behind an `ftyp` box.
fn movie() -> impl Strategy<Value = Vec<u8>> {
    let leaf = (
        prop::sample::select(BOX_TYPES),
        proptest::collection::vec(
            prop_oneof![
                any::<u8>().prop_map(|b| vec![b]),
                prop::sample::select(vec![0u32, 1, 8, 0x7fff_ffff, u32::MAX])
                    .prop_map(|n| n.to_be_bytes().to_vec()),
            ],
            0..24,
        ),
    )
        .prop_map(|(kind, parts)| iso_box(kind, &parts.concat()));
    let tree = leaf.prop_recursive(4, 32, 4, |inner| {
        (
            prop::sample::select(BOX_TYPES),
            proptest::collection::vec(inner, 0..4),
        )
            .prop_map(|(kind, children)| iso_box(kind, &children.concat()))
    });
    (
        prop::sample::select(vec!["isom", "qt  ", "mp42", "heic"]),
        proptest::collection::vec(tree, 0..4),
    )
        .prop_map(|(brand, boxes)| {
            let mut file = iso_box(b"ftyp", &[brand.as_bytes(), &[0, 0, 2, 0]].concat());
            file.extend(boxes.concat());
            file
        })
}

fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(future)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any movie-shaped bytes are read or refused, never a panic, with facts inside the sane
    /// limits when read.
    #[test]
    fn videos_are_read_or_refused(file in movie(), extension in prop::sample::select(vec!["mp4", "mov"])) {
        use xf_core::media::inspect::{inspect_video, MAX_VIDEO_SIDE};
        if let Ok(facts) = block_on(inspect_video(extension, &file)) {
            prop_assert!(facts.width <= MAX_VIDEO_SIDE && facts.height <= MAX_VIDEO_SIDE);
        }
    }

    /// Arbitrary bytes behind each image format's signature are read or refused, never a
    /// panic, with sides inside the sane limits when read.
    #[test]
    fn images_are_read_or_refused(
        signature in prop::sample::select(vec![
            &b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"[..],
            &b"\xff\xd8\xff"[..],
            &b"RIFF\0\0\0\0WEBPVP8X"[..],
            &b"RIFF\0\0\0\0WEBPVP8L"[..],
            &b""[..],
        ]),
        rest in proptest::collection::vec(any::<u8>(), 0..512),
        extension in prop::sample::select(vec!["png", "jpg", "webp"]),
    ) {
        use xf_core::media::inspect::{inspect_image, MAX_IMAGE_SIDE};
        let file = [signature, &rest].concat();
        if let Ok(facts) = block_on(inspect_image(extension, &file)) {
            prop_assert!(facts.width <= MAX_IMAGE_SIDE && facts.height <= MAX_IMAGE_SIDE);
        }
    }
}
