//! Sitemaps and sitemap indexes (the sitemaps.org protocol): XML, and plain text.
//!
//! A body whose first character (after a byte order mark and white space) is `<` is XML;
//! any other body is read as a text sitemap: one absolute `http`/`https` URL a line, in UTF-8,
//! blank lines allowed and nothing else (a line that is not such a URL makes the file
//! invalid, naming the line).
//!
//! The XML file is read as a stream of XML events, never as a tree, so memory is bounded by the
//! entries kept. Elements are recognised by their local name whatever their namespace or
//! prefix: the root `<urlset>` (pages, each a `<url>`) or `<sitemapindex>` (sitemaps, each a
//! `<sitemap>`), and in each entry its `<loc>` and `<lastmod>` children. Only direct children
//! count, so the `<image:loc>` of an image inside a `<url>` is not the page's `loc`. Text is
//! entity-unescaped, CDATA is read as is, and both are trimmed; an entry without a `loc` is
//! skipped, and of several `loc` or `lastmod` the first is kept.
//!
//! Limits follow sitemaps.org: at most [`MAX_ENTRIES`] entries are kept, and at most
//! [`MAX_BYTES`] of XML are read, after gzip decompression, which stops as soon as the output
//! passes that size so a small "gzip bomb" cannot exhaust memory. The same limits hold for text
//! sitemaps.

use std::borrow::Cow;
use std::io::Read;

use flate2::read::MultiGzDecoder;
use quick_xml::events::Event;
use quick_xml::Reader;

/// The most URLs (or sitemaps) one file may list (sitemaps.org); more are ignored.
pub const MAX_ENTRIES: usize = 50_000;

/// The largest uncompressed sitemap read (sitemaps.org: 50 MB).
pub const MAX_BYTES: usize = 50 * 1024 * 1024;

/// The first two bytes of a gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// What a sitemap file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sitemap {
    /// A `<urlset>`: the pages it lists.
    UrlSet(Vec<SitemapUrl>),
    /// A `<sitemapindex>`: the sitemaps it lists (their `loc`).
    Index(Vec<String>),
}

/// One `<url>` of a url set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitemapUrl {
    /// The page's URL, as written (unescaped and trimmed, not validated).
    pub loc: String,
    /// When the page last changed, as written (a W3C datetime such as `2024-05-01`).
    pub lastmod: Option<String>,
}

/// Why a sitemap could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SitemapError {
    /// The body is empty (or only white space).
    #[error("the sitemap is empty")]
    Empty,
    /// Not XML, and not text in UTF-8.
    #[error("the sitemap is neither XML nor UTF-8 text")]
    NotUtf8,
    /// Not XML, and a line of it is not an absolute http(s) URL, as a text sitemap's lines
    /// must be.
    #[error(
        "the sitemap is not XML, and its line {line} is not an absolute http(s) URL: `{excerpt}`"
    )]
    NotAUrlList {
        /// The line's number, from 1.
        line: usize,
        /// Its first 80 characters.
        excerpt: String,
    },
    /// The XML is broken: the message says where and how.
    #[error("the sitemap is malformed XML: {0}")]
    Malformed(String),
    /// Well-formed so far, but the root is neither `<urlset>` nor `<sitemapindex>` (e.g. an
    /// HTML page or an RSS feed).
    #[error("the XML is not a sitemap: its root is neither <urlset> nor <sitemapindex>")]
    NotASitemap,
    /// The uncompressed sitemap is larger than [`MAX_BYTES`].
    #[error("the sitemap is larger than {} bytes uncompressed", MAX_BYTES)]
    TooLarge,
    /// The body starts like gzip but does not decompress.
    #[error("the sitemap is not valid gzip: {0}")]
    BadGzip(String),
}

/// Parses a sitemap body; a gzip body (magic bytes 1f 8b) is decompressed first, reading at
/// most MAX_BYTES of output (more is TooLarge, not an out-of-memory). A NUL is read as U+FFFD.
pub fn parse_sitemap(body: &[u8]) -> Result<Sitemap, SitemapError> {
    let xml = if body.starts_with(&GZIP_MAGIC) {
        Cow::Owned(gunzip(body)?)
    } else if body.len() > MAX_BYTES {
        return Err(SitemapError::TooLarge);
    } else {
        Cow::Borrowed(body)
    };
    let xml = crate::text::nul_bytes_replaced(&xml);
    let body = xml.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&xml);
    match body.iter().find(|byte| !byte.is_ascii_whitespace()) {
        None => Err(SitemapError::Empty),
        Some(b'<') => parse_xml(body),
        Some(_) => parse_text(body),
    }
}

/// Reads a text sitemap: one absolute http(s) URL a line.
fn parse_text(body: &[u8]) -> Result<Sitemap, SitemapError> {
    let text = std::str::from_utf8(body).map_err(|_| SitemapError::NotUtf8)?;
    let mut entries = Vec::new();
    for (index, line) in text.lines().enumerate() {
        // Only ASCII white space frames a line: any other character is part of its URL.
        let line = line.trim_matches(|c: char| c.is_ascii_whitespace());
        if line.is_empty() {
            continue;
        }
        let is_page = url::Url::parse(line)
            .is_ok_and(|url| matches!(url.scheme(), "http" | "https") && url.has_host());
        if !is_page {
            return Err(SitemapError::NotAUrlList {
                line: index + 1,
                excerpt: crate::text::excerpt(line, 80),
            });
        }
        if entries.len() < MAX_ENTRIES {
            entries.push(SitemapUrl {
                loc: line.to_owned(),
                lastmod: None,
            });
        }
    }
    Ok(Sitemap::UrlSet(entries))
}

/// Decompresses a gzip body (every member of it, as `gzip -d` does), stopping one byte past
/// [`MAX_BYTES`].
fn gunzip(body: &[u8]) -> Result<Vec<u8>, SitemapError> {
    let limit = u64::try_from(MAX_BYTES).map_or(u64::MAX, |max| max + 1);
    let mut xml = Vec::new();
    MultiGzDecoder::new(body)
        .take(limit)
        .read_to_end(&mut xml)
        .map_err(|error| SitemapError::BadGzip(error.to_string()))?;
    if xml.len() > MAX_BYTES {
        return Err(SitemapError::TooLarge);
    }
    Ok(xml)
}

/// The kind of sitemap, known from its root element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    UrlSet,
    Index,
}

impl Kind {
    /// The local name of the root's entries.
    fn entry_name(self) -> &'static [u8] {
        match self {
            Kind::UrlSet => b"url",
            Kind::Index => b"sitemap",
        }
    }
}

/// The child of an entry whose text is being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Loc,
    Lastmod,
}

/// Element depths: the root is at 1, its entries at 2 and their fields at 3.
const ROOT_DEPTH: usize = 1;
const ENTRY_DEPTH: usize = 2;
const FIELD_DEPTH: usize = 3;

/// The state of a sitemap being read.
#[derive(Debug)]
struct SitemapReader {
    kind: Option<Kind>,
    /// How many elements are open.
    depth: usize,
    /// The `loc` and `lastmod` of the entry being read, while inside one.
    entry: Option<(Option<String>, Option<String>)>,
    /// The field being read, while inside one.
    field: Option<Field>,
    text: String,
    entries: Vec<SitemapUrl>,
    /// Entries past [`MAX_ENTRIES`], counted to be logged.
    ignored: usize,
}

impl SitemapReader {
    /// An element named `local_name` opened at `depth`.
    fn open(&mut self, local_name: &[u8], depth: usize) -> Result<(), SitemapError> {
        if depth == ROOT_DEPTH {
            if self.kind.is_some() {
                return Err(SitemapError::Malformed(
                    "the document has more than one root element".to_owned(),
                ));
            }
            self.kind = Some(match local_name {
                b"urlset" => Kind::UrlSet,
                b"sitemapindex" => Kind::Index,
                _ => return Err(SitemapError::NotASitemap),
            });
        } else if depth == ENTRY_DEPTH
            && self
                .kind
                .is_some_and(|kind| kind.entry_name() == local_name)
        {
            self.entry = Some((None, None));
        } else if depth == FIELD_DEPTH && self.entry.is_some() {
            self.field = match local_name {
                b"loc" => Some(Field::Loc),
                b"lastmod" => Some(Field::Lastmod),
                _ => None,
            };
            self.text.clear();
        }
        Ok(())
    }

    /// Text (unescaped) inside the element open at `depth`.
    fn text(&mut self, text: &str, depth: usize) {
        if depth == FIELD_DEPTH && self.field.is_some() {
            self.text.push_str(text);
        }
    }

    /// The element open at `depth` closed.
    fn close(&mut self, depth: usize) {
        if depth == FIELD_DEPTH {
            if let (Some(field), Some((loc, lastmod))) = (self.field.take(), self.entry.as_mut()) {
                let value = self.text.trim();
                let slot = match field {
                    Field::Loc => loc,
                    Field::Lastmod => lastmod,
                };
                if slot.is_none() && !value.is_empty() {
                    *slot = Some(value.to_owned());
                }
            }
        } else if depth == ENTRY_DEPTH {
            if let Some((Some(loc), lastmod)) = self.entry.take() {
                if self.entries.len() < MAX_ENTRIES {
                    self.entries.push(SitemapUrl { loc, lastmod });
                } else {
                    self.ignored += 1;
                }
            }
        }
    }
}

/// Reads the XML of a sitemap.
fn parse_xml(xml: &[u8]) -> Result<Sitemap, SitemapError> {
    let start = xml
        .iter()
        .position(|byte| !byte.is_ascii_whitespace())
        .unwrap_or(xml.len());
    let mut reader = Reader::from_reader(&xml[start..]);
    let malformed = |error: quick_xml::Error, position: u64| {
        SitemapError::Malformed(format!("{error} (at byte {position})"))
    };

    let mut sitemap = SitemapReader {
        kind: None,
        depth: 0,
        entry: None,
        field: None,
        text: String::new(),
        entries: Vec::new(),
        ignored: 0,
    };
    loop {
        match reader.read_event() {
            Err(error) => return Err(malformed(error, reader.error_position())),
            Ok(Event::Start(element)) => {
                sitemap.depth += 1;
                sitemap.open(element.local_name().as_ref(), sitemap.depth)?;
            }
            Ok(Event::Empty(element)) => {
                sitemap.open(element.local_name().as_ref(), sitemap.depth + 1)?;
                sitemap.close(sitemap.depth + 1);
            }
            Ok(Event::End(_)) => {
                // The reader rejects an end tag that closes nothing, so `depth` is at least 1.
                sitemap.close(sitemap.depth);
                sitemap.depth = sitemap.depth.saturating_sub(1);
            }
            Ok(Event::Text(text)) => {
                let text = text
                    .unescape()
                    .map_err(|error| malformed(error, reader.buffer_position()))?;
                sitemap.text(&text, sitemap.depth);
            }
            Ok(Event::CData(cdata)) => {
                let text = cdata
                    .decode()
                    .map_err(|error| malformed(error.into(), reader.buffer_position()))?;
                sitemap.text(&text, sitemap.depth);
            }
            Ok(Event::Eof) => break,
            Ok(_) => {}
        }
    }
    if sitemap.depth > 0 {
        return Err(SitemapError::Malformed(format!(
            "the document ends with {} element(s) still open",
            sitemap.depth
        )));
    }
    let kind = sitemap
        .kind
        .ok_or_else(|| SitemapError::Malformed("the document has no root element".to_owned()))?;
    if sitemap.ignored > 0 {
        tracing::debug!(
            ignored = sitemap.ignored,
            "sitemap lists more than {MAX_ENTRIES} entries; the rest are ignored"
        );
    }
    Ok(match kind {
        Kind::UrlSet => Sitemap::UrlSet(sitemap.entries),
        Kind::Index => Sitemap::Index(sitemap.entries.into_iter().map(|entry| entry.loc).collect()),
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::write::GzEncoder;
    use flate2::Compression;

    use super::*;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    fn url(loc: &str, lastmod: Option<&str>) -> SitemapUrl {
        SitemapUrl {
            loc: loc.to_owned(),
            lastmod: lastmod.map(str::to_owned),
        }
    }

    const URL_SET: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url>
    <loc>https://www.example.com/</loc>
    <lastmod>2024-05-01</lastmod>
    <changefreq>monthly</changefreq>
    <priority>0.8</priority>
  </url>
  <url>
    <loc>
      https://www.example.com/about
    </loc>
    <lastmod> </lastmod>
  </url>
  <url><lastmod>2024-01-01</lastmod></url>
  <url><loc></loc></url>
  <url><loc>https://www.example.com/first</loc><loc>https://www.example.com/second</loc></url>
</urlset>
"#;

    #[test]
    fn reads_a_url_set() {
        assert_eq!(
            parse_sitemap(URL_SET.as_bytes()),
            Ok(Sitemap::UrlSet(vec![
                url("https://www.example.com/", Some("2024-05-01")),
                url("https://www.example.com/about", None),
                url("https://www.example.com/first", None),
            ]))
        );
    }

    #[test]
    fn reads_namespaces_cdata_and_entities() {
        let xml = "\u{feff}<?xml version=\"1.0\"?>\n\
            <!-- generated -->\n\
            <sm:urlset xmlns:sm=\"http://www.sitemaps.org/schemas/sitemap/0.9\" \
                       xmlns:image=\"http://www.google.com/schemas/sitemap-image/1.1\">\n\
              <sm:url>\n\
                <sm:loc><![CDATA[https://example.com/search?q=a&b=c]]></sm:loc>\n\
                <image:image><image:loc>https://example.com/photo.jpg</image:loc></image:image>\n\
              </sm:url>\n\
              <sm:url>\n\
                <image:image><image:loc>https://example.com/orphan.jpg</image:loc></image:image>\n\
                <sm:loc>https://example.com/list?page=2&amp;sort=new&#38;x=&#x31;</sm:loc>\n\
                <sm:lastmod>2024-05-01T10:00:00+00:00</sm:lastmod>\n\
              </sm:url>\n\
              <sm:url><sm:loc>https://example.com/a<![CDATA[&]]>b</sm:loc></sm:url>\n\
            </sm:urlset>";
        assert_eq!(
            parse_sitemap(xml.as_bytes()),
            Ok(Sitemap::UrlSet(vec![
                url("https://example.com/search?q=a&b=c", None),
                url(
                    "https://example.com/list?page=2&sort=new&x=1",
                    Some("2024-05-01T10:00:00+00:00")
                ),
                url("https://example.com/a&b", None),
            ]))
        );
    }

    #[test]
    fn reads_a_sitemap_index() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap>
    <loc>https://www.example.com/sitemap-pages.xml.gz</loc>
    <lastmod>2024-05-01</lastmod>
  </sitemap>
  <sitemap><loc>https://www.example.com/sitemap-posts.xml</loc></sitemap>
  <sitemap/>
  <url><loc>https://www.example.com/not-an-entry-here</loc></url>
</sitemapindex>"#;
        assert_eq!(
            parse_sitemap(xml.as_bytes()),
            Ok(Sitemap::Index(vec![
                "https://www.example.com/sitemap-pages.xml.gz".to_owned(),
                "https://www.example.com/sitemap-posts.xml".to_owned(),
            ]))
        );
    }

    #[test]
    fn reads_empty_sitemaps() {
        assert_eq!(parse_sitemap(b"<urlset/>"), Ok(Sitemap::UrlSet(Vec::new())));
        assert_eq!(
            parse_sitemap(b"<sitemapindex></sitemapindex>"),
            Ok(Sitemap::Index(Vec::new()))
        );
    }

    #[test]
    fn reads_a_gzipped_sitemap() {
        assert_eq!(
            parse_sitemap(&gzip(URL_SET.as_bytes())),
            parse_sitemap(URL_SET.as_bytes())
        );
        // Concatenated gzip members are one stream, as for `gzip -d`.
        let half = URL_SET.len() / 2;
        let mut members = gzip(&URL_SET.as_bytes()[..half]);
        members.extend(gzip(&URL_SET.as_bytes()[half..]));
        assert_eq!(parse_sitemap(&members), parse_sitemap(URL_SET.as_bytes()));
    }

    #[test]
    fn rejects_broken_gzip() {
        let mut truncated = gzip(URL_SET.as_bytes());
        truncated.truncate(truncated.len() / 2);
        assert!(matches!(
            parse_sitemap(&truncated),
            Err(SitemapError::BadGzip(_))
        ));
        assert!(matches!(
            parse_sitemap(&[0x1f, 0x8b, 0, 0]),
            Err(SitemapError::BadGzip(_))
        ));
    }

    #[test]
    fn ignores_entries_past_the_limit() {
        let mut xml = String::from("<urlset>");
        for index in 0..=MAX_ENTRIES {
            xml.push_str(&format!(
                "<url><loc>https://example.com/{index}</loc></url>"
            ));
        }
        xml.push_str("</urlset>");
        let Ok(Sitemap::UrlSet(urls)) = parse_sitemap(xml.as_bytes()) else {
            panic!("not a url set");
        };
        assert_eq!(urls.len(), MAX_ENTRIES);
        assert_eq!(
            urls.last().map(|url| url.loc.as_str()),
            Some(format!("https://example.com/{}", MAX_ENTRIES - 1).as_str())
        );
    }

    #[test]
    fn rejects_a_gzip_bomb() {
        // 51 gzip members of 1 MiB of zeros each: about 50 KiB that inflate to 51 MiB.
        let member = gzip(&vec![0; 1024 * 1024]);
        let bomb = member.repeat(51);
        assert!(bomb.len() < 100 * 1024);
        assert_eq!(parse_sitemap(&bomb), Err(SitemapError::TooLarge));
    }

    #[test]
    fn rejects_an_oversized_plain_body() {
        let mut xml = b"<urlset>".to_vec();
        xml.resize(MAX_BYTES + 1, b' ');
        assert_eq!(parse_sitemap(&xml), Err(SitemapError::TooLarge));
    }

    #[test]
    fn rejects_html_and_feeds() {
        let html = "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>Oops</title>\
                    </head><body><p>Page not found<br></body></html>";
        assert_eq!(
            parse_sitemap(html.as_bytes()),
            Err(SitemapError::NotASitemap)
        );
        let rss = r#"<?xml version="1.0"?><rss version="2.0"><channel><item>
                     <link>https://example.com/post</link></item></channel></rss>"#;
        assert_eq!(
            parse_sitemap(rss.as_bytes()),
            Err(SitemapError::NotASitemap)
        );
    }

    #[test]
    fn reads_text_sitemaps() {
        let text = "\u{feff}https://example.com/a\r\n\n  https://example.com/b?x=1&y=2  \nhttp://example.com/c\n";
        assert_eq!(
            parse_sitemap(text.as_bytes()),
            Ok(Sitemap::UrlSet(vec![
                url("https://example.com/a", None),
                url("https://example.com/b?x=1&y=2", None),
                url("http://example.com/c", None),
            ]))
        );
        assert_eq!(
            parse_sitemap(&gzip(text.as_bytes())),
            parse_sitemap(text.as_bytes())
        );
    }

    #[test]
    fn rejects_bodies_that_are_neither_xml_nor_a_list_of_urls() {
        assert_eq!(parse_sitemap(b""), Err(SitemapError::Empty));
        assert_eq!(parse_sitemap(b" \n\t"), Err(SitemapError::Empty));
        assert_eq!(
            parse_sitemap(b"{\"urls\": []}"),
            Err(SitemapError::NotAUrlList {
                line: 1,
                excerpt: "{\"urls\": []}".to_owned()
            })
        );
        assert_eq!(
            parse_sitemap(b"https://example.com/a\n/relative\n"),
            Err(SitemapError::NotAUrlList {
                line: 2,
                excerpt: "/relative".to_owned()
            })
        );
        assert_eq!(
            parse_sitemap(b"https://example.com/a\nftp://example.com/f\n"),
            Err(SitemapError::NotAUrlList {
                line: 2,
                excerpt: "ftp://example.com/f".to_owned()
            })
        );
        assert_eq!(
            parse_sitemap(b"https://example.com/caf\xe9\n"),
            Err(SitemapError::NotUtf8)
        );
    }

    #[test]
    fn rejects_malformed_xml() {
        let cases: [&[u8]; 7] = [
            b"<urlset><url><loc>https://example.com/</loc></urlset>",
            b"<urlset><url><loc>https://example.com/</loc></url>",
            b"<urlset><url><loc>https://example.com/&nbsp;</loc></url></urlset>",
            b"<urlset><url><loc>https://example.com/\xff</loc></url></urlset>",
            b"<urlset><url><loc",
            b"<?xml version=\"1.0\"?><!-- nothing else -->",
            b"<urlset></urlset><urlset></urlset>",
        ];
        for xml in cases {
            assert!(
                matches!(parse_sitemap(xml), Err(SitemapError::Malformed(_))),
                "{:?}: {:?}",
                String::from_utf8_lossy(xml),
                parse_sitemap(xml)
            );
        }
    }
}
