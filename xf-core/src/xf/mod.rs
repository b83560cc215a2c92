//! The [`Xf`] facade: every use case of the APIs as one method.
//!
//! `Xf` holds the store, the clock, the plan catalog and the host's configuration. It is cheap
//! to clone (one `Arc`) and safe to share between requests and tasks.
//!
//! ```
//! use std::sync::Arc;
//!
//! use xf_core::store::Store;
//! use xf_core::Xf;
//!
//! /// The facade over whichever backend the host chose (`MemoryStore`, `PgStore`, ...).
//! fn facade(store: Arc<dyn Store>, secret: Vec<u8>) -> Result<Xf, xf_core::BuildError> {
//!     Xf::builder(store)
//!         .secret_key(secret)
//!         .public_base_url("https://app.example.com")
//!         .status_page_url("https://status.example.com")
//!         .build()
//! }
//! ```
//!
//! The secret and the public base URL have no defaults: a random secret would break cursors
//! and test-mode ids as soon as a second instance shares the store, and a made-up base URL
//! would print report links that lead nowhere. [`XfBuilder::build`] says what is missing.

mod access;
mod account;
mod admin;
mod connect;
mod gsc;
mod history;
mod key_cache;
mod media;
mod properties;
mod publishing;
mod report_page;
mod reports;
mod scans;
mod schedules;
mod uploads;
mod webhooks;
mod workers;

use crate::media::file_url::MediaUrls;
use crate::media::publishing::{Publishers, Publishing};

pub use crate::media::publishing::{PublishHandler, PublishOptions};
pub use publishing::MediaFile;

use std::collections::HashMap;
use std::sync::Arc;

use crate::api::{Page, PageParams};
#[cfg(feature = "crawler")]
use crate::crawl::fetch::PageFetcher;
use crate::cursor::CursorCodec;
use crate::error::Result;
use crate::gsc::sync::TokenCache;
use crate::gsc::SearchConsole;
use crate::ids::ApiKeyId;
use crate::media::blob::{BlobStore, LocalBlobStore};
use crate::metrics::Metrics;
use crate::model::{KeyMode, Organization};
use crate::params::PageSize;
use crate::plans::{Limits, Plan, PlanCatalog};
use crate::secret::{derive_key, keyed_digest, Sealer};
use crate::store::{After, PageRequest, Store};
use crate::time::{Clock, SystemClock, Timestamp};
use crate::webhooks::secrets::SecretBox;
use crate::webhooks::transport::WebhookTransport;

pub(crate) use access::IDEMPOTENCY_TTL_HOURS;
pub use access::{Fingerprint, IdempotencyStart, IdempotencyTicket, Keep, RateCheck, RequestKind};
pub use account::PROBE_TIMEOUT;
pub use admin::{
    Admin, CreatedApiKey, CreatedOrganization, NewOrganization, NewReport, OrganizationPatch,
    RevokedApiKey, UsageDelta,
};
pub use media::{BodyError, ChunkSource, Media, MediaLimits, RequestLimits, StagedFile};
pub use properties::normalize_property_url;
pub use report_page::{
    Audit, CheckFindings, ReportPage, TrendPoint, MAX_LISTED_FINDINGS, TREND_SCANS,
};
pub use scans::MAX_BATCH;
pub use uploads::SweepReport;
pub use uploads::UPLOAD_LIFETIME_HOURS;

/// The path version label.
pub const API_VERSION_LABEL: &str = "v1";
/// The semantic version of the API.
pub const API_VERSION: &str = "1.0.0";

/// How long an API-key lookup is reused by default: the bound on how long another
/// instance's revocation (or change of an organization's plan or limits) goes unseen.
pub const KEY_CACHE_TTL: std::time::Duration = std::time::Duration::from_secs(1);

/// The shortest secret key accepted, in bytes: it signs cursors and derives test-mode ids,
/// so it must be as hard to guess as a 256-bit key.
pub const MIN_SECRET_KEY_LEN: usize = 32;

/// Host configuration.
#[derive(Clone)]
pub struct XfConfig {
    /// The host's secret: signs cursors and derives test-mode ids. Instances sharing a store
    /// must share it.
    pub secret_key: Vec<u8>,
    /// Public base URL of the host app, without a trailing slash; report links are
    /// `{base}/r/{token}`.
    pub public_base_url: String,
    /// The status page named by `GET /health`, if the host has one.
    pub status_page_url: Option<String>,
}

/// What [`XfBuilder::build`] refuses to build without.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No [`XfBuilder::secret_key`].
    #[error(
        "a secret key is required (XfBuilder::secret_key, at least {MIN_SECRET_KEY_LEN} random \
         bytes): it signs pagination cursors and derives test-mode ids, and every instance that \
         shares a store must use the same one"
    )]
    SecretKeyMissing,
    /// A secret shorter than [`MIN_SECRET_KEY_LEN`].
    #[error("the secret key must be at least {MIN_SECRET_KEY_LEN} bytes long")]
    SecretKeyTooShort,
    /// No [`XfBuilder::public_base_url`].
    #[error(
        "a public base URL is required (XfBuilder::public_base_url): report links are \
         {{base}}/r/{{token}}"
    )]
    PublicBaseUrlMissing,
    /// The default blob store's directory could not be made.
    #[error("the media directory {path} could not be created: {cause}")]
    BlobStore {
        /// The directory.
        path: String,
        /// Why.
        cause: String,
    },
    /// A base or status page URL that is not an absolute `http`/`https` URL.
    #[error("{field} must be an absolute http or https URL, got {value:?}")]
    InvalidUrl {
        /// Which setting.
        field: &'static str,
        /// What was given.
        value: String,
    },
}

impl std::fmt::Debug for XfConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XfConfig")
            .field("secret_key", &"<redacted>")
            .field("public_base_url", &self.public_base_url)
            .field("status_page_url", &self.status_page_url)
            .finish()
    }
}

/// The facade. See the module documentation.
#[derive(Clone, Debug)]
pub struct Xf {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    /// What scans fetch pages with.
    #[cfg(feature = "crawler")]
    fetcher: Option<Arc<dyn PageFetcher>>,
    /// How scans crawl (the job's budgets replace its page and depth limits).
    #[cfg(feature = "crawler")]
    crawl_options: crate::crawl::crawler::CrawlOptions,
    /// What scans render pages with, if anything.
    #[cfg(feature = "crawler")]
    renderer: Option<Arc<dyn crate::crawl::render::PageRenderer>>,
    plans: PlanCatalog,
    config: XfConfig,
    cursors: CursorCodec,
    mock_key: [u8; 32],
    /// Whether private targets and plain-`http` webhooks are allowed.
    allow_private_targets: bool,
    /// Recent API-key lookups.
    keys: key_cache::KeyCache,
    /// Seals webhook signing secrets.
    secret_box: SecretBox,
    /// What webhooks are checked and posted with; `None` without the `net` feature and a
    /// host's transport.
    webhooks: Option<Arc<dyn WebhookTransport>>,
    /// Google's Search Console; `None` when the host configured no OAuth client.
    search_console: Option<Arc<dyn SearchConsole>>,
    /// Access tokens of the organizations' Google accounts.
    gsc_tokens: TokenCache,
    /// Seals Google refresh tokens and channels' OAuth tokens.
    token_sealer: Sealer,
    /// Where uploaded media files live.
    blobs: Arc<dyn BlobStore>,
    /// Upload size limits.
    media_limits: MediaLimits,
    /// The uploads each organization has in progress here.
    upload_slots: Arc<media::UploadSlots>,
    /// The slowest request bodies accepted.
    request_limits: RequestLimits,
    /// What the publishing handler works with: the platforms' clients, the signer of the
    /// media URLs platforms pull from, …
    publishing: Arc<Publishing>,
    /// Settings of the publishing handler.
    publish_options: PublishOptions,
    /// Seals connect links and states.
    connect_tokens: crate::connect::TokenCodec,
    /// The providers accounts can be connected at, by provider.
    connectors: HashMap<crate::connect::Provider, Arc<dyn crate::connect::Connector>>,
    /// The hosts a connect link may send users back to (lowercase).
    connect_return_hosts: Vec<String>,
    /// Turns true when the runtime this facade started stops (see [`Xf::readiness`]).
    runtime_stopped: std::sync::Mutex<Option<tokio::sync::watch::Receiver<bool>>>,
    /// What the facade records for the operator's scrapes.
    metrics: Metrics,
}

/// Builds an [`Xf`]. The secret key and the public base URL are required.
pub struct XfBuilder {
    store: Arc<dyn Store>,
    connectors: HashMap<crate::connect::Provider, Arc<dyn crate::connect::Connector>>,
    connect_return_hosts: Vec<String>,
    clock: Arc<dyn Clock>,
    #[cfg(feature = "crawler")]
    fetcher: Option<Arc<dyn PageFetcher>>,
    /// How scans crawl (the job's budgets replace its page and depth limits).
    #[cfg(feature = "crawler")]
    crawl_options: crate::crawl::crawler::CrawlOptions,
    #[cfg(feature = "crawler")]
    renderer: Option<Arc<dyn crate::crawl::render::PageRenderer>>,
    webhooks: Option<Arc<dyn WebhookTransport>>,
    search_console: Option<Arc<dyn SearchConsole>>,
    blobs: Option<Arc<dyn BlobStore>>,
    media_limits: MediaLimits,
    request_limits: RequestLimits,
    publishers: Publishers,
    publish_options: PublishOptions,
    allow_private_targets: bool,
    key_cache_ttl: std::time::Duration,
    plans: PlanCatalog,
    secret_key: Option<Vec<u8>>,
    public_base_url: Option<String>,
    status_page_url: Option<String>,
}

impl std::fmt::Debug for XfBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XfBuilder")
            .field("store", &self.store)
            .field("clock", &self.clock)
            .field(
                "secret_key",
                &self.secret_key.as_ref().map(|_| "<redacted>"),
            )
            .field("public_base_url", &self.public_base_url)
            .field("status_page_url", &self.status_page_url)
            .finish_non_exhaustive()
    }
}

fn absolute_http_url(field: &'static str, value: String) -> Result<String, BuildError> {
    match url::Url::parse(&value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => {
            Ok(value.trim_end_matches('/').to_owned())
        }
        _ => Err(BuildError::InvalidUrl { field, value }),
    }
}

impl XfBuilder {
    /// Publishes to `client`'s platform with it and connects its channels with it: both
    /// [`publisher`](Self::publisher) and [`connector`](Self::connector).
    pub fn platform<C>(self, client: Arc<C>) -> Self
    where
        C: crate::media::publish::Publisher + crate::connect::Connector + 'static,
    {
        self.publisher(client.clone()).connector(client)
    }

    /// Lets accounts be connected at `connector`'s provider with connect links (replacing an
    /// earlier connector of the provider). See [`crate::connect`].
    pub fn connector(mut self, connector: Arc<dyn crate::connect::Connector>) -> Self {
        self.connectors.insert(connector.provider(), connector);
        self
    }

    /// The hosts a connect link's `returnUrl` may be on (default: the public base URL's).
    pub fn connect_return_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.connect_return_hosts = hosts
            .into_iter()
            .map(|host| host.into().trim().to_ascii_lowercase())
            .collect();
        self
    }

    /// Replaces the system clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Replaces how scans crawl: concurrency, body and redirect limits, sitemap and external
    /// link budgets (see [`CrawlOptions`](crate::crawl::crawler::CrawlOptions); each job's
    /// `maxPages` and `maxDepth` replace those two).
    #[cfg(feature = "crawler")]
    pub fn crawl_options(mut self, options: crate::crawl::crawler::CrawlOptions) -> Self {
        self.crawl_options = options;
        self
    }

    /// Replaces the HTTP fetcher of scans (tests, or a host's own egress).
    #[cfg(feature = "crawler")]
    pub fn page_fetcher(mut self, fetcher: Arc<dyn PageFetcher>) -> Self {
        self.fetcher = Some(fetcher);
        self
    }

    /// Renders pages of scans in a browser (see [`crate::crawl::render`]): scans then take
    /// `render` (`never`, `auto`, the default, or `always`). Without a renderer, scans render
    /// nothing and `auto` or `always` is a validation error. With feature `render`,
    /// [`ChromiumRenderer`](crate::crawl::chromium::ChromiumRenderer) is one.
    #[cfg(feature = "crawler")]
    pub fn renderer(mut self, renderer: Arc<dyn crate::crawl::render::PageRenderer>) -> Self {
        self.renderer = Some(renderer);
        self
    }

    /// Replaces the network side of webhooks (tests, or a host's own egress).
    pub fn webhook_transport(mut self, transport: Arc<dyn WebhookTransport>) -> Self {
        self.webhooks = Some(transport);
        self
    }

    /// Connects Search Console syncs to `client` (a host's own, or a test's). Without one
    /// (and without [`XfBuilder::google`]) a sync is `400 gsc_not_configured`.
    pub fn search_console(mut self, client: Arc<dyn SearchConsole>) -> Self {
        self.search_console = Some(client);
        self
    }

    /// Connects Search Console syncs to Google with the host's OAuth client (and, for tests,
    /// other token and API base URLs), and lets the organizations' Google accounts be
    /// connected with connect links.
    #[cfg(feature = "gsc")]
    pub fn google(self, config: crate::gsc::GoogleConfig) -> Self {
        let google = Arc::new(crate::gsc::GoogleSearchConsole::new(config));
        self.search_console(google.clone()).connector(google)
    }

    /// Where uploaded media files are stored (default: a [`LocalBlobStore`] in
    /// `xf-media` under the system's temporary directory, which suits one process and
    /// tests; a host that scales out gives every instance the same store).
    pub fn blob_store(mut self, blobs: Arc<dyn BlobStore>) -> Self {
        self.blobs = Some(blobs);
        self
    }

    /// Publishes to `publisher`'s platform with it (replacing an earlier one for the
    /// platform). A post to a platform without a publisher fails, saying so.
    pub fn publisher(mut self, publisher: Arc<dyn crate::media::publish::Publisher>) -> Self {
        self.publishers.insert(publisher.platform(), publisher);
        self
    }

    /// Replaces the settings of the publishing handler.
    pub fn publish_options(mut self, options: PublishOptions) -> Self {
        self.publish_options = options;
        self
    }

    /// Replaces the bounds of uploads (see [`MediaLimits`] for each default).
    pub fn media_limits(mut self, limits: MediaLimits) -> Self {
        self.media_limits = limits;
        self
    }

    /// Replaces the slowest request bodies the services accept (see [`RequestLimits`]).
    pub fn request_limits(mut self, limits: RequestLimits) -> Self {
        self.request_limits = limits;
        self
    }

    /// Lets scans and webhooks reach loopback and private addresses, and webhooks use plain
    /// `http` (development and tests; xf-server's `--allow-private-targets`). Off by
    /// default: a scan of a property whose host is or resolves to such an address fails
    /// without a request there, and such a webhook URL is refused at registration and again
    /// when a delivery connects.
    pub fn allow_private_targets(mut self, allow: bool) -> Self {
        self.allow_private_targets = allow;
        self
    }

    /// How long an API-key lookup is reused without asking the store (default
    /// [`KEY_CACHE_TTL`]; zero asks every time). It bounds how long a key revoked, or an
    /// organization changed, through *another* instance still works here as before; through
    /// this facade, the change applies at once.
    pub fn key_cache_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.key_cache_ttl = ttl;
        self
    }

    /// Replaces the default plan catalog.
    pub fn plans(mut self, plans: PlanCatalog) -> Self {
        self.plans = plans;
        self
    }

    /// Sets the host's secret (see [`XfConfig::secret_key`]): at least
    /// [`MIN_SECRET_KEY_LEN`] random bytes, the same on every instance sharing a store.
    pub fn secret_key(mut self, secret: impl Into<Vec<u8>>) -> Self {
        self.secret_key = Some(secret.into());
        self
    }

    /// Sets the public base URL used in report links (a trailing slash is dropped).
    pub fn public_base_url(mut self, url: impl Into<String>) -> Self {
        self.public_base_url = Some(url.into());
        self
    }

    /// Sets the status page named by `GET /health`; without one, health shows none.
    pub fn status_page_url(mut self, url: impl Into<String>) -> Self {
        self.status_page_url = Some(url.into());
        self
    }

    /// The facade, or what is missing or malformed in its configuration.
    ///
    /// One piece: the builder's one wiring of every part (store, clock, secret, clients,
    /// limits, caches) into the facade's state, in the order the parts depend on each other.
    pub fn build(self) -> Result<Xf, BuildError> {
        let secret_key = self.secret_key.ok_or(BuildError::SecretKeyMissing)?;
        if secret_key.len() < MIN_SECRET_KEY_LEN {
            return Err(BuildError::SecretKeyTooShort);
        }
        let public_base_url = self
            .public_base_url
            .ok_or(BuildError::PublicBaseUrlMissing)?;
        let config = XfConfig {
            public_base_url: absolute_http_url("public_base_url", public_base_url)?,
            status_page_url: self
                .status_page_url
                .map(|url| absolute_http_url("status_page_url", url))
                .transpose()?,
            secret_key,
        };
        let cursors = CursorCodec::new(&config.secret_key);
        let mock_key = derive_key(&config.secret_key, b"xf/test-mode/v1");
        #[cfg(feature = "crawler")]
        let fetcher = self.fetcher.or_else(|| {
            let agent = format!(
                "{}/{API_VERSION} (+{})",
                crate::crawl::crawler::AGENT_TOKEN,
                config.public_base_url
            );
            let http = crate::crawl::fetch::HttpFetcher::new(
                &agent,
                std::time::Duration::from_secs(10),
                self.allow_private_targets,
            );
            Some(Arc::new(http) as Arc<dyn PageFetcher>)
        });
        #[cfg(feature = "webhooks")]
        let webhooks = self.webhooks.or_else(|| {
            let agent = crate::webhooks::USER_AGENT;
            let http =
                crate::webhooks::transport::HttpTransport::new(agent, self.allow_private_targets);
            Some(Arc::new(http) as Arc<dyn WebhookTransport>)
        });
        #[cfg(not(feature = "webhooks"))]
        let webhooks = self.webhooks;
        let secret_box = SecretBox::new(&config.secret_key);
        let connect_tokens = crate::connect::TokenCodec::new(&config.secret_key);
        let connect_return_hosts = if self.connect_return_hosts.is_empty() {
            url::Url::parse(&config.public_base_url)
                .ok()
                .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
                .into_iter()
                .collect()
        } else {
            self.connect_return_hosts
        };
        let token_sealer = Sealer::new(&config.secret_key, b"xf/google-refresh-tokens/v1");
        let metrics = Metrics::new(self.store.clone());
        let blobs = match self.blobs {
            Some(blobs) => blobs,
            None => {
                let root = std::env::temp_dir().join("xf-media");
                let local = LocalBlobStore::new(&root).map_err(|e| BuildError::BlobStore {
                    path: root.display().to_string(),
                    cause: e.to_string(),
                })?;
                Arc::new(local) as Arc<dyn BlobStore>
            }
        };
        let blobs: Arc<dyn BlobStore> = Arc::new(crate::media::blob::Observed {
            inner: blobs,
            metrics: metrics.clone(),
        });
        let publishing = Arc::new(Publishing {
            metrics: metrics.clone(),
            store: self.store.clone(),
            clock: Arc::clone(&self.clock),
            blobs: Arc::clone(&blobs),
            publishers: self.publishers,
            token_sealer: token_sealer.clone(),
            media_urls: MediaUrls::new(
                derive_key(&config.secret_key, b"xf/media-url/v1"),
                &config.public_base_url,
            ),
        });
        Ok(Xf {
            inner: Arc::new(Inner {
                store: self.store,
                clock: self.clock,
                #[cfg(feature = "crawler")]
                fetcher,
                #[cfg(feature = "crawler")]
                crawl_options: self.crawl_options,
                #[cfg(feature = "crawler")]
                renderer: self.renderer,
                plans: self.plans,
                config,
                cursors,
                mock_key,
                secret_box,
                webhooks,
                search_console: self.search_console,
                gsc_tokens: TokenCache::default(),
                token_sealer,
                blobs,
                media_limits: self.media_limits,
                upload_slots: Arc::default(),
                request_limits: self.request_limits,
                publishing,
                publish_options: self.publish_options,
                allow_private_targets: self.allow_private_targets,
                keys: key_cache::KeyCache::new(self.key_cache_ttl),
                runtime_stopped: std::sync::Mutex::new(None),
                connect_tokens,
                connectors: self.connectors,
                connect_return_hosts,
                metrics,
            }),
        })
    }
}

/// The authenticated caller of a request: what [`CallerInfo`] says, behind an `Arc`.
///
/// Cheap to clone: one caller is built per key lookup and shared by every request that
/// presents the key until the lookup expires (see
/// [`XfBuilder::key_cache_ttl`](XfBuilder::key_cache_ttl)).
#[derive(Debug, Clone)]
pub struct Caller(Arc<CallerInfo>);

impl std::ops::Deref for Caller {
    type Target = CallerInfo;

    fn deref(&self) -> &CallerInfo {
        &self.0
    }
}

/// Who calls, with what plan and limits.
#[derive(Debug)]
pub struct CallerInfo {
    /// The key's organization.
    pub organization: Organization,
    /// The key's id.
    pub key_id: ApiKeyId,
    /// Live or test.
    pub mode: KeyMode,
    /// The organization's plan.
    pub plan: Plan,
    /// The plan's limits with the organization's overrides.
    pub limits: Limits,
    /// The names of the caller's rate-limit counters: key reads, key writes, organization
    /// writes.
    rate_names: [Arc<str>; 3],
}

impl CallerInfo {
    /// Whether writes are to be mocked.
    pub fn is_test(&self) -> bool {
        self.mode == KeyMode::Test
    }
}

impl Xf {
    /// Starts building a facade over `store`. The secret key and the public base URL are
    /// required; every other setting of [`XfBuilder`] has a default.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use xf_core::{BuildError, Xf};
    /// use xf_storage_memory::MemoryStore;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let xf = Xf::builder(Arc::new(MemoryStore::new()))
    ///     .secret_key(Xf::random_secret_key())
    ///     .public_base_url("https://app.example.com")
    ///     .build()
    ///     .expect("a complete configuration");
    /// assert_eq!(xf.health().await.status, "ok");
    ///
    /// // Without a secret key, `build` says what is missing.
    /// let incomplete = Xf::builder(Arc::new(MemoryStore::new()))
    ///     .public_base_url("https://app.example.com")
    ///     .build();
    /// assert!(matches!(incomplete, Err(BuildError::SecretKeyMissing)));
    /// # }
    /// ```
    pub fn builder(store: Arc<dyn Store>) -> XfBuilder {
        XfBuilder {
            store,
            connectors: HashMap::new(),
            connect_return_hosts: Vec::new(),
            clock: Arc::new(SystemClock),
            #[cfg(feature = "crawler")]
            fetcher: None,
            webhooks: None,
            search_console: None,
            blobs: None,
            media_limits: MediaLimits::default(),
            request_limits: RequestLimits::default(),
            publishers: Publishers::new(),
            publish_options: PublishOptions::default(),
            #[cfg(feature = "crawler")]
            crawl_options: crate::crawl::crawler::CrawlOptions::default(),
            #[cfg(feature = "crawler")]
            renderer: None,
            allow_private_targets: false,
            key_cache_ttl: KEY_CACHE_TTL,
            plans: PlanCatalog::default(),
            secret_key: None,
            public_base_url: None,
            status_page_url: None,
        }
    }

    /// A fresh random secret of [`MIN_SECRET_KEY_LEN`] bytes, for a host that knowingly runs
    /// a single process over a store that dies with it (the in-memory store): cursors and
    /// test-mode ids then change with every start.
    pub fn random_secret_key() -> Vec<u8> {
        use rand::RngCore;
        let mut secret = vec![0u8; MIN_SECRET_KEY_LEN];
        rand::rngs::OsRng.fill_bytes(&mut secret);
        secret
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// What this facade records for the operator: every metric family of xf (see
    /// [`crate::metrics`]). A host with a Prometheus registry of its own registers them into it
    /// with [`Metrics::register`].
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// Reads the store's gauges (jobs, waiting webhook messages, open uploads) for the next
    /// scrape, unless they were read less than
    /// [`STORE_READ_INTERVAL`](crate::metrics::STORE_READ_INTERVAL) ago.
    pub async fn refresh_metrics(&self) {
        self.inner.metrics.refresh().await;
    }

    /// [`refresh_metrics`](Self::refresh_metrics), then every family in the Prometheus text
    /// format: the body of a `/metrics` answer.
    pub async fn metrics_text(&self) -> String {
        self.refresh_metrics().await;
        self.inner.metrics.encode()
    }

    /// The `seo-scan` handler over this facade's store, clock and fetcher; `None` when there
    /// is no fetcher.
    #[cfg(feature = "crawler")]
    pub fn scan_handler(&self) -> Option<crate::crawl::scan::ScanHandler> {
        let fetcher = self.inner.fetcher.clone()?;
        let handler = crate::crawl::scan::ScanHandler::new(
            Arc::clone(&self.inner.store),
            fetcher,
            Arc::clone(&self.inner.clock),
            self.inner.crawl_options.clone(),
            self.inner.metrics.clone(),
        );
        Some(match &self.inner.renderer {
            Some(renderer) => handler.renderer(Arc::clone(renderer)),
            None => handler,
        })
    }

    /// Whether scans can render pages (a renderer is configured): the default `render` is
    /// then `auto`, and otherwise `never`.
    pub fn renders_pages(&self) -> bool {
        #[cfg(feature = "crawler")]
        return self.inner.renderer.is_some();
        #[cfg(not(feature = "crawler"))]
        return false;
    }

    /// What webhooks are posted with, if anything.
    pub fn webhook_transport(&self) -> Option<&Arc<dyn WebhookTransport>> {
        self.inner.webhooks.as_ref()
    }

    /// Seals and opens webhook signing secrets.
    pub(crate) fn secret_box(&self) -> &SecretBox {
        &self.inner.secret_box
    }

    /// The plan catalog.
    pub fn plans(&self) -> &PlanCatalog {
        &self.inner.plans
    }

    /// The host configuration.
    pub fn config(&self) -> &XfConfig {
        &self.inner.config
    }

    /// Now, by the injected clock.
    pub fn now(&self) -> Timestamp {
        self.inner.clock.now()
    }

    /// Checks the cursor and makes the store request for list `list` with the canonical
    /// `filters` (a cursor is only valid for the same list and filters). The store is asked
    /// for one extra item to learn whether another page exists.
    fn page_request(
        &self,
        list: &str,
        filters: &str,
        params: &PageParams,
    ) -> Result<(PageRequest, usize)> {
        let limit = params.limit.unwrap_or(PageSize::DEFAULT).get();
        let after = match &params.cursor {
            None => None,
            Some(cursor) => Some(self.inner.cursors.decode(list, filters, cursor.as_str())?),
        };
        Ok((
            PageRequest {
                limit: limit + 1,
                after,
            },
            limit,
        ))
    }

    /// Cuts the extra item off and signs the cursor of the next page.
    fn finish_page<T>(
        &self,
        list: &str,
        filters: &str,
        mut items: Vec<T>,
        limit: usize,
        position: impl Fn(&T) -> After,
    ) -> Page<T> {
        let next_cursor = if items.len() > limit {
            items.truncate(limit);
            items
                .last()
                .map(|last| self.inner.cursors.encode(list, filters, &position(last)))
        } else {
            None
        };
        Page { items, next_cursor }
    }

    /// The digest a test-mode response derives an id from ([`crate::ids::Id::derived`]): an
    /// HMAC of the key, the request and the item's place.
    fn mock_digest(
        &self,
        caller: &Caller,
        request: &Fingerprint,
        prefix: &str,
        index: usize,
    ) -> [u8; 32] {
        keyed_digest(
            &self.inner.mock_key,
            &[
                caller.key_id.as_str().as_bytes(),
                request.as_bytes(),
                prefix.as_bytes(),
                &(index as u64).to_be_bytes(),
            ],
        )
    }

    /// The fixed time of test-mode responses: the start of the current UTC day.
    fn mock_time(&self) -> Timestamp {
        self.now().start_of_day()
    }
}
