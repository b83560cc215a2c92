//! Headless Chromium as the crawler's [`PageRenderer`], over the DevTools protocol (feature
//! `render`).
//!
//! [`ChromiumRenderer`] renders in browsers it starts itself ([`ChromiumRenderer::launch`],
//! one or more processes of a Chromium binary) or in browsers that run elsewhere
//! ([`ChromiumRenderer::connect`], DevTools endpoints such as a browserless fleet or a
//! Kubernetes deployment of headless-shell). Pages render up to [`ChromiumBuilder::concurrency`]
//! at once across all of them. Each scan's session is a browser context of its own, so
//! cookies, storage and cache never cross scans (nor organizations); each page is a tab of
//! it, closed once its DOM is read.
//!
//! Supervision: a browser whose connection closes (it crashed, or was killed) is replaced on
//! the next page, and the pages that were in it render once more in the new one before they
//! fail; a browser that hangs (a page's time limit passed and its tab would not close) is
//! killed and replaced. Browsers xf started are killed, with every process they started,
//! when the renderer is dropped.
//!
//! The protocol client is our own (about 250 lines over `tokio-tungstenite`) rather than
//! chromiumoxide: rendering needs sixteen commands, and chromiumoxide's generated bindings of
//! the whole protocol cost minutes of compile time on every build of the workspace.

mod cdp;
mod page;
mod process;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use self::cdp::{text_field, CdpError, Connection};
use self::page::PageRules;
use self::process::Launched;
use super::render::{
    PageRenderer, RenderError, RenderInput, RenderSession, Rendered, SessionOptions,
};

/// Where a browser comes from.
#[derive(Debug, Clone)]
enum Source {
    /// A Chromium binary xf starts.
    Launch(PathBuf),
    /// A DevTools endpoint: `ws://…/devtools/browser/…`, or `http://host:port`, whose
    /// `/json/version` names it.
    Endpoint(String),
}

/// Configures a [`ChromiumRenderer`].
#[derive(Debug, Clone)]
pub struct ChromiumBuilder {
    sources: Vec<Source>,
    concurrency: usize,
    allow_private: bool,
    quiet: Duration,
    dom_limit: usize,
    profiles: Option<PathBuf>,
}

impl ChromiumBuilder {
    fn new(source: Source) -> Self {
        ChromiumBuilder {
            sources: vec![source],
            concurrency: 4,
            allow_private: false,
            quiet: Duration::from_millis(100),
            dom_limit: 2 * 1024 * 1024,
            profiles: None,
        }
    }

    /// Where the browsers xf starts keep their profiles, one directory each, removed when
    /// the browser ends (the system's temporary directory by default).
    pub fn profiles(mut self, directory: impl Into<PathBuf>) -> Self {
        self.profiles = Some(directory.into());
        self
    }

    /// Starts `count` browser processes of the binary given to
    /// [`ChromiumRenderer::launch`] (1 by default); pages go to the least busy.
    pub fn processes(mut self, count: usize) -> Self {
        if let Some(Source::Launch(path)) = self.sources.first().cloned() {
            self.sources
                .retain(|source| !matches!(source, Source::Launch(_)));
            for _ in 0..count.max(1) {
                self.sources.insert(0, Source::Launch(path.clone()));
            }
        }
        self
    }

    /// Renders in the browser at this DevTools endpoint too.
    pub fn endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.sources.push(Source::Endpoint(endpoint.into()));
        self
    }

    /// Pages rendered at once, in all browsers together (4 by default).
    pub fn concurrency(mut self, pages: usize) -> Self {
        self.concurrency = pages.max(1);
        self
    }

    /// Lets pages load from private and reserved addresses (tests, intranet sites), as the
    /// crawler's own `allow_private_targets`.
    pub fn allow_private_targets(mut self, allow: bool) -> Self {
        self.allow_private = allow;
        self
    }

    /// How long the network must be quiet after the load event before the DOM is read
    /// (100 ms by default).
    pub fn quiet(mut self, quiet: Duration) -> Self {
        self.quiet = quiet;
        self
    }

    /// The most characters of a rendered DOM read (2 MiB by default, the crawler's body
    /// limit).
    pub fn dom_limit(mut self, characters: usize) -> Self {
        self.dom_limit = characters;
        self
    }

    /// The renderer. Browsers start, or are connected to, when the first page needs one.
    pub fn build(self) -> ChromiumRenderer {
        let slots = self
            .sources
            .into_iter()
            .map(|source| Slot {
                source,
                profiles: self.profiles.clone().unwrap_or_else(std::env::temp_dir),
                browser: tokio::sync::Mutex::new(None),
                generation: AtomicU64::new(0),
                pid: Mutex::new(None),
                sessions: AtomicUsize::new(0),
            })
            .collect();
        ChromiumRenderer {
            pool: Arc::new(Pool {
                slots,
                permits: Semaphore::new(self.concurrency),
                rules: PageRules {
                    allow_private: self.allow_private,
                    quiet: self.quiet,
                    dom_limit: self.dom_limit,
                },
            }),
        }
    }
}

/// Renders pages in headless Chromium. See the module documentation.
#[derive(Debug, Clone)]
pub struct ChromiumRenderer {
    pool: Arc<Pool>,
}

impl ChromiumRenderer {
    /// Renders in browsers started from the Chromium binary at `path` (Debian's
    /// `/usr/bin/chromium`, Chrome, or chrome-headless-shell).
    pub fn launch(path: impl Into<PathBuf>) -> ChromiumBuilder {
        ChromiumBuilder::new(Source::Launch(path.into()))
    }

    /// Renders in the browser at a DevTools endpoint (`ws://…` or `http://host:port`).
    pub fn connect(endpoint: impl Into<String>) -> ChromiumBuilder {
        ChromiumBuilder::new(Source::Endpoint(endpoint.into()))
    }

    /// The process ids of the browsers xf started that run now.
    pub fn browser_pids(&self) -> Vec<u32> {
        self.pool
            .slots
            .iter()
            .filter_map(|slot| *slot.pid.lock().unwrap_or_else(PoisonError::into_inner))
            .collect()
    }
}

#[derive(Debug)]
struct Pool {
    slots: Vec<Slot>,
    permits: Semaphore,
    rules: PageRules,
}

#[derive(Debug)]
struct Slot {
    source: Source,
    profiles: PathBuf,
    browser: tokio::sync::Mutex<Option<Arc<Browser>>>,
    generation: AtomicU64,
    pid: Mutex<Option<u32>>,
    /// Sessions open on it, for choosing the least busy.
    sessions: AtomicUsize,
}

#[derive(Debug)]
struct Browser {
    connection: Connection,
    generation: u64,
    /// The process, for a browser xf started (killed when the last page lets go of it).
    _process: Option<Launched>,
}

impl Slot {
    /// The slot's browser, started or connected to now if it has none or its connection
    /// closed.
    async fn browser(&self) -> Result<Arc<Browser>, RenderError> {
        let mut current = self.browser.lock().await;
        if let Some(browser) = current.as_ref().filter(|b| !b.connection.is_closed()) {
            return Ok(Arc::clone(browser));
        }
        // The dead one goes first, so that its processes are gone before new ones start.
        *current = None;
        *self.pid.lock().unwrap_or_else(PoisonError::into_inner) = None;
        let (connection, process) = match &self.source {
            Source::Launch(path) => {
                let launched = Launched::start(path, &self.profiles)
                    .await
                    .map_err(RenderError::Unavailable)?;
                let connection = Connection::connect(&launched.endpoint)
                    .await
                    .map_err(|e| RenderError::Unavailable(e.to_string()))?;
                *self.pid.lock().unwrap_or_else(PoisonError::into_inner) = launched.pid();
                (connection, Some(launched))
            }
            Source::Endpoint(endpoint) => {
                let address = devtools_address(endpoint).await?;
                let connection = Connection::connect(&address)
                    .await
                    .map_err(|e| RenderError::Unavailable(e.to_string()))?;
                (connection, None)
            }
        };
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        if generation > 1 {
            tracing::warn!(generation, "a browser of the renderer was replaced");
        }
        let browser = Arc::new(Browser {
            connection,
            generation,
            _process: process,
        });
        *current = Some(Arc::clone(&browser));
        Ok(browser)
    }

    /// Drops the slot's browser if it is still generation `generation` (killing it, for one
    /// xf started, once no page holds it).
    async fn discard(&self, generation: u64) {
        let mut current = self.browser.lock().await;
        if current.as_ref().is_some_and(|b| b.generation == generation) {
            *current = None;
            *self.pid.lock().unwrap_or_else(PoisonError::into_inner) = None;
        }
    }
}

/// The WebSocket address of a DevTools endpoint: as given for `ws://` and `wss://`, or the
/// `webSocketDebuggerUrl` of `/json/version` for `http://` and `https://`.
async fn devtools_address(endpoint: &str) -> Result<String, RenderError> {
    if endpoint.starts_with("ws://") || endpoint.starts_with("wss://") {
        return Ok(endpoint.to_owned());
    }
    let unavailable = |why: String| RenderError::Unavailable(format!("{endpoint}: {why}"));
    let address = format!("{}/json/version", endpoint.trim_end_matches('/'));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| unavailable(e.to_string()))?;
    let version: Value = client
        .get(&address)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| unavailable(e.to_string()))?
        .bytes()
        .await
        .map_err(|e| unavailable(e.to_string()))
        .and_then(|body| serde_json::from_slice(&body).map_err(|e| unavailable(e.to_string())))?;
    version
        .get("webSocketDebuggerUrl")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| unavailable("/json/version names no webSocketDebuggerUrl".into()))
}

#[async_trait]
impl PageRenderer for ChromiumRenderer {
    async fn open(&self, options: SessionOptions) -> Result<Arc<dyn RenderSession>, RenderError> {
        let slot = self
            .pool
            .slots
            .iter()
            .enumerate()
            .min_by_key(|(_, slot)| slot.sessions.load(Ordering::SeqCst))
            .map_or(0, |(index, _)| index);
        self.pool.slots[slot]
            .sessions
            .fetch_add(1, Ordering::SeqCst);
        Ok(Arc::new(Session {
            pool: Arc::clone(&self.pool),
            slot,
            options,
            context: tokio::sync::Mutex::new(None),
            closed: AtomicBool::new(false),
        }))
    }
}

/// One scan's browser context, made on its first page (and again in a new browser after a
/// crash).
#[derive(Debug)]
struct Session {
    pool: Arc<Pool>,
    slot: usize,
    options: SessionOptions,
    context: tokio::sync::Mutex<Option<(Arc<Browser>, String)>>,
    closed: AtomicBool,
}

impl Session {
    async fn context(&self) -> Result<(Arc<Browser>, String), RenderError> {
        let mut context = self.context.lock().await;
        if let Some((browser, id)) = context.as_ref() {
            if !browser.connection.is_closed() {
                return Ok((Arc::clone(browser), id.clone()));
            }
        }
        *context = None;
        let browser = self.pool.slots[self.slot].browser().await?;
        let failed = |e: CdpError| RenderError::Browser(e.to_string());
        let created = browser
            .connection
            .call(
                None,
                "Target.createBrowserContext",
                json!({ "disposeOnDetach": true }),
            )
            .await
            .map_err(failed)?;
        let id = text_field(&created, "browserContextId").map_err(failed)?;
        browser
            .connection
            .call(
                None,
                "Browser.setDownloadBehavior",
                json!({ "behavior": "deny", "browserContextId": id }),
            )
            .await
            .map_err(failed)?;
        *context = Some((Arc::clone(&browser), id.clone()));
        Ok((browser, id))
    }
}

#[async_trait]
impl RenderSession for Session {
    async fn render(&self, page: RenderInput) -> Result<Rendered, RenderError> {
        let _permit = self
            .pool
            .permits
            .acquire()
            .await
            .map_err(|_| RenderError::Unavailable("the renderer shut down".into()))?;
        let mut last = None;
        // A page whose browser died under it renders once more, in the browser that
        // replaces it.
        for _ in 0..2 {
            if self.closed.load(Ordering::SeqCst) {
                return Err(RenderError::Unavailable(
                    "the scan's session is closed".into(),
                ));
            }
            let (browser, context) = self.context().await?;
            let failure = match page::render(
                &browser.connection,
                &context,
                &page,
                &self.options,
                self.pool.rules,
            )
            .await
            {
                Ok(rendered) => return Ok(rendered),
                Err(failure) => failure,
            };
            let again = matches!(failure.error, RenderError::Crashed(_));
            if failure.restart {
                self.pool.slots[self.slot].discard(browser.generation).await;
            }
            if !again {
                return Err(failure.error);
            }
            last = Some(failure.error);
        }
        Err(last.unwrap_or_else(|| RenderError::Crashed("the browser crashed twice".into())))
    }

    async fn close(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        self.pool.slots[self.slot]
            .sessions
            .fetch_sub(1, Ordering::SeqCst);
        let Some((browser, id)) = self.context.lock().await.take() else {
            return;
        };
        let disposed = tokio::time::timeout(
            Duration::from_secs(5),
            browser.connection.call(
                None,
                "Target.disposeBrowserContext",
                json!({ "browserContextId": id }),
            ),
        )
        .await;
        if !matches!(disposed, Ok(Ok(_))) && !browser.connection.is_closed() {
            tracing::warn!("a scan's browser context could not be disposed of");
        }
    }
}
