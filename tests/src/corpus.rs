//! A real site to crawl: Debian's `postgresql-doc-15` package installs PostgreSQL's manual, about
//! 1,100 pages of real HTML, in `/usr/share/doc/postgresql-doc-15/html` (`XF_CORPUS_DIR`
//! points elsewhere). [`StaticSite`] serves such a directory on loopback from memory, as a fast
//! static server would: the corpus test and the corpus benchmark both read it through HTTP.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use std::sync::Mutex;

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use url::Url;
use xf_core::crawl::fetch::{Answer, BodyStream, FetchError, HttpFetcher, PageFetcher};

/// Where the corpus is: `XF_CORPUS_DIR`, or where Debian's package installs it.
pub fn corpus_dir() -> PathBuf {
    std::env::var_os("XF_CORPUS_DIR").map_or_else(
        || PathBuf::from("/usr/share/doc/postgresql-doc-15/html"),
        PathBuf::from,
    )
}

/// The corpus's own name for itself: the `<title>` of its `index.html`
/// ("PostgreSQL 15.20 Documentation"), which names the release the pages come from.
pub fn corpus_title(dir: &Path) -> String {
    let index = std::fs::read_to_string(dir.join("index.html")).unwrap_or_default();
    index
        .split_once("<title>")
        .and_then(|(_, rest)| rest.split_once("</title>"))
        .map(|(title, _)| title.trim().to_owned())
        .unwrap_or_default()
}

/// The content type of a file, from its extension.
fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or_default() {
        "html" | "htm" => "text/html; charset=utf-8",
        "css" => "text/css",
        "js" => "text/javascript",
        "png" => "image/png",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "jpg" | "jpeg" => "image/jpeg",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// A directory served on 127.0.0.1 from memory: `GET` and `HEAD` of its files (`/` is
/// `index.html`), 404 for anything else. It counts the requests it answers.
#[derive(Debug, Clone)]
pub struct StaticSite {
    /// Where it listens.
    pub address: SocketAddr,
    requests: Arc<AtomicU64>,
}

/// The served files, by path (`/index.html`), with their content types.
type Files = HashMap<String, (&'static str, Bytes)>;

fn read_files(dir: &Path) -> std::io::Result<Files> {
    let mut files = Files::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder)? {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let Ok(relative) = path.strip_prefix(dir) else {
                continue;
            };
            let name = format!("/{}", relative.to_string_lossy().replace('\\', "/"));
            let body = Bytes::from(std::fs::read(&path)?);
            files.insert(name.clone(), (content_type(&name), body));
        }
    }
    Ok(files)
}

impl StaticSite {
    /// Serves `dir` (read whole into memory first) on a fresh loopback port.
    pub async fn serve(dir: &Path) -> std::io::Result<StaticSite> {
        let files = Arc::new(read_files(dir)?);
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let requests = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&requests);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let files = Arc::clone(&files);
                let counted = Arc::clone(&counted);
                let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                    counted.fetch_add(1, Ordering::Relaxed);
                    let path = match request.uri().path() {
                        "/" => "/index.html",
                        path => path,
                    };
                    let response = match files.get(path) {
                        Some((kind, body)) => Response::builder()
                            .header(http::header::CONTENT_TYPE, *kind)
                            .body(Full::new(body.clone())),
                        None => Response::builder()
                            .status(StatusCode::NOT_FOUND)
                            .body(Full::new(Bytes::new())),
                    };
                    std::future::ready(response)
                });
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(StaticSite { address, requests })
    }

    /// `http://localhost:{port}` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://localhost:{}{path}", self.address.port())
    }

    /// Requests answered so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

/// The web as a scan of a loopback site sees it in a test, which may reach nothing else: the
/// real fetcher for loopback addresses, and for every other address an answer of `200` with
/// no body, without a request. It records those other addresses, so a test can check which
/// external links a scan checked.
#[derive(Debug)]
pub struct OfflineWeb {
    inner: HttpFetcher,
    elsewhere: Mutex<Vec<String>>,
}

impl Default for OfflineWeb {
    fn default() -> Self {
        OfflineWeb {
            inner: HttpFetcher::new("xf-seo-bot/test", std::time::Duration::from_secs(10), true),
            elsewhere: Mutex::new(Vec::new()),
        }
    }
}

impl OfflineWeb {
    /// The addresses off loopback asked for so far, in order.
    pub fn elsewhere(&self) -> Vec<String> {
        self.elsewhere
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    async fn answer(&self, url: &Url, head: bool) -> Result<Answer, FetchError> {
        let loopback = matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
        if loopback {
            return if head {
                self.inner.head(url).await
            } else {
                self.inner.get(url).await
            };
        }
        self.elsewhere
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(url.to_string());
        Ok(Answer {
            status: 200,
            location: None,
            content_type: Some("text/html".to_owned()),
            retry_after: None,
            robots_tag: None,
            refresh: None,
            body: Box::new(NoBody),
        })
    }
}

/// An empty body.
struct NoBody;

#[async_trait]
impl BodyStream for NoBody {
    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, FetchError> {
        Ok(None)
    }
}

#[async_trait]
impl PageFetcher for OfflineWeb {
    async fn get(&self, url: &Url) -> Result<Answer, FetchError> {
        self.answer(url, false).await
    }

    async fn head(&self, url: &Url) -> Result<Answer, FetchError> {
        self.answer(url, true).await
    }
}
