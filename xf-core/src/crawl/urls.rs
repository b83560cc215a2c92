//! URL handling of the crawler: resolving links, normalising them so that one page has one
//! address, and telling internal links from external ones.

use url::Url;

/// Resolves `href` against `base` and normalises it: `http`/`https` only, no fragment, no
/// credentials, scheme and host in lower case, default ports dropped (the `url` crate's
/// parsing), an empty path as `/`, and a `?` with nothing after it dropped. `None` for links
/// that are not web pages (`mailto:`, `javascript:`, `tel:`, `data:`, ...) or do not parse.
pub fn resolve(base: &Url, href: &str) -> Option<Url> {
    let href = href.trim();
    if href.is_empty() {
        return None;
    }
    let mut url = base.join(href).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return None;
    }
    url.set_fragment(None);
    if !url.username().is_empty() || url.password().is_some() {
        // A link that embeds credentials: crawl the page without them.
        url.set_username("").ok()?;
        url.set_password(None).ok()?;
    }
    if url.query() == Some("") {
        url.set_query(None);
    }
    Some(url)
}

/// Whether `url` belongs to the site that starts at `start`: the same host (ignoring a
/// leading `www.` on either side) and port, on `http` or `https`. Default ports count as the
/// same on both schemes (a site that moves from http to https stays one site), but another
/// explicit port is another site, with a robots.txt of its own (RFC 9309).
pub fn same_site(start: &Url, url: &Url) -> bool {
    fn bare(host: &str) -> &str {
        host.strip_prefix("www.").unwrap_or(host)
    }
    match (start.host_str(), url.host_str()) {
        (Some(a), Some(b)) => {
            bare(a) == bare(b)
                && start.port() == url.port()
                && matches!(url.scheme(), "http" | "https")
        }
        _ => false,
    }
}

/// What a scan may fetch: the property's site, or only the part of it under the property's
/// path (a URL-prefix property, as in Search Console).
///
/// A property `https://example.com/` covers its whole site (see [`same_site`]); a property
/// whose URL has a path, `https://example.com/book/`, covers the addresses of that site whose
/// path starts with `/book/`, literally (so `https://example.com/book` also covers
/// `/bookstore`, as Search Console's URL-prefix properties do). The property's query string
/// plays no part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    start: Url,
    prefix: String,
}

impl Scope {
    /// The scope of a property whose (normalised) URL is `start`.
    pub fn of(start: &Url) -> Scope {
        Scope {
            start: start.clone(),
            prefix: start.path().to_owned(),
        }
    }

    /// The property's URL.
    pub fn start(&self) -> &Url {
        &self.start
    }

    /// The path every address in scope starts with (`/` for a whole site).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Whether the scope is the whole site.
    pub fn is_whole_site(&self) -> bool {
        self.prefix == "/"
    }

    /// Whether `url` is on the property's site (whatever its path).
    pub fn same_site(&self, url: &Url) -> bool {
        same_site(&self.start, url)
    }

    /// Whether a scan may fetch `url` as a page: on the site and under the prefix.
    pub fn contains(&self, url: &Url) -> bool {
        self.same_site(url) && url.path().starts_with(&self.prefix)
    }
}

/// The part of `url` that robots.txt rules match: the path and the query.
pub fn robots_path(url: &Url) -> String {
    match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    }
}

/// The site's root, where `robots.txt` and `sitemap.xml` live: scheme, host and port.
pub fn origin_url(url: &Url, path: &str) -> Option<Url> {
    let mut root = url.clone();
    root.set_query(None);
    root.set_fragment(None);
    root.set_path(path);
    Some(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        Url::parse("https://Acme.Example:443/shop/index.html?x=1").unwrap()
    }

    #[test]
    fn links_resolve_and_normalise() {
        let cases = [
            ("/about#team", Some("https://acme.example/about")),
            ("item?id=2", Some("https://acme.example/shop/item?id=2")),
            ("../", Some("https://acme.example/")),
            ("HTTP://ACME.example:80", Some("http://acme.example/")),
            (
                "https://user:pw@acme.example/p",
                Some("https://acme.example/p"),
            ),
            ("/search?", Some("https://acme.example/search")),
            ("  /spaced  ", Some("https://acme.example/spaced")),
            ("mailto:hi@acme.example", None),
            ("javascript:void(0)", None),
            ("tel:+123", None),
            ("", None),
            ("http://[::1", None),
        ];
        for (href, expected) in cases {
            assert_eq!(
                resolve(&base(), href).map(|u| u.to_string()).as_deref(),
                expected,
                "{href:?}"
            );
        }
    }

    #[test]
    fn the_site_is_one_host_with_or_without_www() {
        let start = Url::parse("https://acme.example/").unwrap();
        for inside in ["http://acme.example/a", "https://www.acme.example/b"] {
            assert!(same_site(&start, &Url::parse(inside).unwrap()), "{inside}");
        }
        for outside in [
            "https://shop.acme.example/",
            "https://acme.example.evil/",
            "ftp://acme.example/",
            "https://acme.example:8443/",
        ] {
            assert!(
                !same_site(&start, &Url::parse(outside).unwrap()),
                "{outside}"
            );
        }
    }

    #[test]
    fn a_path_makes_a_url_prefix_scope() {
        let url = |u: &str| Url::parse(u).unwrap();
        let whole = Scope::of(&url("https://acme.example/"));
        assert!(whole.is_whole_site());
        assert!(whole.contains(&url("https://www.acme.example/any/where")));
        let book = Scope::of(&url("https://acme.example/book/?lang=en"));
        assert_eq!(book.prefix(), "/book/");
        for inside in [
            "https://acme.example/book/",
            "http://www.acme.example/book/ch1.html?x=1",
        ] {
            assert!(book.contains(&url(inside)), "{inside}");
        }
        for outside in [
            "https://acme.example/",
            "https://acme.example/book",
            "https://acme.example/blog/book/",
            "https://other.example/book/",
        ] {
            assert!(!book.contains(&url(outside)), "{outside}");
            assert_eq!(book.same_site(&url(outside)), !outside.contains("other"));
        }
        let literal = Scope::of(&url("https://acme.example/book"));
        assert!(literal.contains(&url("https://acme.example/bookstore")));
    }

    #[test]
    fn robots_paths_and_roots() {
        let url = Url::parse("https://acme.example/a/b?q=1#x").unwrap();
        assert_eq!(robots_path(&url), "/a/b?q=1");
        assert_eq!(
            origin_url(&url, "/robots.txt").unwrap().as_str(),
            "https://acme.example/robots.txt"
        );
    }
}
