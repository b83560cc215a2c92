//! Run with: `cargo run -p xf-server -- --demo` (then see `--help`, and
//! docs/configuration.md).
//!
//! # xf-server
//!
//! The standalone server: the SEO developer API of [`xf_tower::XfService`] under `/api/v1`,
//! and, when an admin token is configured, the host's admin API of
//! [`xf_tower::AdminService`] under `/admin`. Everything is configured by flags, each with an
//! `XF_*` environment variable as fallback ([`Config`]).
//!
//! The binary is a thin `main` over this library so that tests can build the same app
//! ([`build_app`]) and serve it on a socket of their own ([`serve()`]).
//!
//! ```no_run
//! # async fn start() -> Result<(), xf_server::StartError> {
//! use clap::Parser;
//! let config = xf_server::Config::parse_from(["xf-server", "--demo", "--listen", "127.0.0.1:0"]);
//! let app = xf_server::build_app(&config).await?;
//! let listener = tokio::net::TcpListener::bind(config.listen).await.map_err(|source| {
//!     xf_server::StartError::Bind { address: config.listen, source }
//! })?;
//! xf_server::serve(listener, app.service, std::future::pending()).await.map_err(xf_server::StartError::Serve)?;
//! # Ok(())
//! # }
//! ```

pub mod log_lines;
pub mod log_queue;
pub mod serve;

pub use serve::ServeOptions;

use std::fmt;
use std::future::Future;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::{ArgAction, Parser, ValueEnum};
use tokio::net::TcpListener;
use tracing_subscriber::filter::{filter_fn, EnvFilter, LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use xf_core::media::blob::{BlobStore, LocalBlobStore};
use xf_core::media::platforms;
use xf_core::media::s3::{S3BlobStore, S3Config};
use xf_core::runtime::WorkerOptions;
use xf_core::store::Store;
use xf_core::{CreatedOrganization, Xf};
use xf_storage_memory::MemoryStore;
use xf_storage_postgres::PgStore;
use xf_tower::Mounts;

pub use xf_core::MIN_SECRET_KEY_LEN;

pub use xf_tower::{ADMIN_PREFIX, API_PREFIX, MEDIA_FILE_PREFIX, REPORT_PREFIX};

/// The server's configuration: flags, each falling back to an `XF_*` environment variable.
#[derive(Clone, Parser)]
#[command(
    name = "xf-server",
    version,
    about = "The xf SEO developer API and media publishing API (under /api/v1, the media API also at the root), the report pages (/r), signed media URLs (/m) and the admin API (/admin)."
)]
pub struct Config {
    /// Address and port to listen on.
    #[arg(long, env = "XF_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Storage: `memory` (lost on exit), or a PostgreSQL URL (`postgres://user:pass@host/db`),
    /// which is migrated on start.
    #[arg(long, env = "XF_STORE", default_value = "memory", value_parser = StoreConfig::parse)]
    pub store: StoreConfig,

    /// Create (or, on PostgreSQL, reuse) the demo organizations and print their ids and keys:
    /// one on the `growth` plan for the SEO developer API, one on `pro` for the media API.
    #[arg(long, env = "XF_DEMO", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub demo: bool,

    /// With `--demo`: use this live key (`xf_live_` and at least 32 letters or digits)
    /// instead of a random one.
    #[arg(long, env = "XF_DEMO_LIVE_KEY", hide_env_values = true)]
    pub demo_live_key: Option<String>,

    /// With `--demo`: use this test key (`xf_test_` and at least 32 letters or digits)
    /// instead of a random one.
    #[arg(long, env = "XF_DEMO_TEST_KEY", hide_env_values = true)]
    pub demo_test_key: Option<String>,

    /// With `--demo`: the media demo organization's live key (`xf_live_` and at least 32
    /// letters or digits) instead of a random one.
    #[arg(long, env = "XF_DEMO_MEDIA_LIVE_KEY", hide_env_values = true)]
    pub demo_media_live_key: Option<String>,

    /// With `--demo`: the media demo organization's test key instead of a random one.
    #[arg(long, env = "XF_DEMO_MEDIA_TEST_KEY", hide_env_values = true)]
    pub demo_media_test_key: Option<String>,

    /// Secret (at least 32 bytes) that signs pagination cursors and derives test-mode ids.
    /// Required with PostgreSQL, where every instance must share it; random per start with
    /// the memory store.
    #[arg(long, env = "XF_SECRET_KEY", hide_env_values = true)]
    pub secret_key: Option<String>,

    /// Public base URL of this server; report links are `{base}/r/{token}`.
    /// [default: http://{listen}]
    #[arg(long, env = "XF_PUBLIC_BASE_URL")]
    pub public_base_url: Option<String>,

    /// The status page `GET /health` names as `statusPage`; without it, health names none.
    #[arg(long, env = "XF_STATUS_PAGE_URL")]
    pub status_page_url: Option<String>,

    /// Serve the admin API under /admin, accepting `Authorization: Bearer <this token>`.
    /// Without it, no admin API is served.
    #[arg(long, env = "XF_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,

    /// Log format: `text` for people, `json` for log collectors. Filter with RUST_LOG
    /// (default `info`).
    #[arg(long, env = "XF_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// What this process runs: `all` (the API and the background runtime), `api` (only the
    /// API: run the workers elsewhere) or `workers` (only the background runtime, no
    /// listener; PostgreSQL only, since a memory store is not shared).
    #[arg(long, env = "XF_ROLE", value_enum, default_value_t = Role::All)]
    pub role: Role,

    /// Also serve the probes `GET /livez` and `GET /readyz` on this address: what a
    /// `--role workers` process, which has no other listener, is probed on. The other roles
    /// serve them on `--listen` as well.
    #[arg(long, env = "XF_HEALTH_LISTEN")]
    pub health_listen: Option<SocketAddr>,

    /// Serve `GET /metrics` (the Prometheus text format) on this address only, rather than
    /// on `--listen`: where the scraper reaches it and the public does not. A `--role
    /// workers` process is scraped here.
    #[arg(long, env = "XF_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,

    /// Export spans over OTLP/HTTP to this traces URL (such as
    /// `http://collector:4318/v1/traces`): each job attempt, webhook delivery and publish step,
    /// and each request. Needs a build with the `otlp` feature (`cargo build -p xf-server
    /// --features otlp`).
    #[arg(long, env = "XF_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,

    /// Jobs the background runtime runs at once.
    #[arg(long, env = "XF_WORKERS", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    pub workers: u16,

    /// Seconds running jobs get to finish on SIGINT/SIGTERM before they go back to the queue.
    #[arg(long, env = "XF_SHUTDOWN_GRACE", default_value_t = 20)]
    pub shutdown_grace: u64,

    /// Let scans and webhooks reach loopback and private addresses, and webhooks use plain
    /// http (development and tests only: in production it would let a customer reach your
    /// internal network).
    #[arg(long, env = "XF_ALLOW_PRIVATE_TARGETS", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub allow_private_targets: bool,

    /// Render pages of scans in headless Chromium started from this binary (Debian's
    /// `/usr/bin/chromium`, Chrome, or chrome-headless-shell); xf starts and supervises
    /// `--render-processes` of them. Scans then take `render` (default `auto`).
    #[arg(long, env = "XF_CHROMIUM")]
    pub chromium: Option<std::path::PathBuf>,

    /// Render in the browser at this DevTools endpoint (`ws://…/devtools/browser/…`, or
    /// `http://host:9222`); repeat for a fleet (browserless, headless-shell pods). With
    /// `--chromium` too, pages go to both.
    #[arg(
        long = "chromium-endpoint",
        env = "XF_CHROMIUM_ENDPOINTS",
        value_delimiter = ','
    )]
    pub chromium_endpoints: Vec<String>,

    /// Pages rendered at once by this process, in all its browsers together.
    #[arg(long, env = "XF_RENDER_CONCURRENCY", default_value_t = 4)]
    pub render_concurrency: u16,

    /// Chromium processes started from `--chromium`.
    #[arg(long, env = "XF_RENDER_PROCESSES", default_value_t = 1)]
    pub render_processes: u16,

    /// Webhook deliveries the background runtime makes at once; 0 makes none in this process.
    #[arg(long, env = "XF_WEBHOOK_CONCURRENCY", default_value_t = 64)]
    pub webhook_concurrency: u16,

    /// The directory uploaded media files are kept in (the local blob store).
    #[arg(long, env = "XF_MEDIA_DIR", default_value = "xf-media")]
    pub media_dir: std::path::PathBuf,

    /// Keep uploaded media in this S3-compatible bucket instead of `--media-dir` (the bucket
    /// must exist).
    #[arg(long, env = "XF_S3_BUCKET")]
    pub s3_bucket: Option<String>,

    /// The S3 service's base URL (a MinIO or other S3-compatible service); AWS S3 without it.
    #[arg(long, env = "XF_S3_ENDPOINT")]
    pub s3_endpoint: Option<String>,

    /// The bucket's region.
    #[arg(long, env = "XF_S3_REGION", default_value = "us-east-1")]
    pub s3_region: String,

    /// A key prefix inside the bucket (e.g. `xf/prod`).
    #[arg(long, env = "XF_S3_PREFIX", default_value = "")]
    pub s3_prefix: String,

    /// The S3 access key id.
    #[arg(long, env = "XF_S3_ACCESS_KEY_ID", hide_env_values = true)]
    pub s3_access_key_id: Option<String>,

    /// The S3 secret access key.
    #[arg(long, env = "XF_S3_SECRET_ACCESS_KEY", hide_env_values = true)]
    pub s3_secret_access_key: Option<String>,

    /// The largest video upload, in bytes (larger ones are refused with 413).
    #[arg(long, env = "XF_MAX_VIDEO_BYTES", default_value_t = 4 << 30)]
    pub max_video_bytes: u64,

    /// The largest image upload, in bytes.
    #[arg(long, env = "XF_MAX_IMAGE_BYTES", default_value_t = 50 << 20)]
    pub max_image_bytes: u64,

    /// The most parts an upload form may have.
    #[arg(long, env = "XF_MAX_FORM_PARTS", default_value_t = 256)]
    pub max_form_parts: usize,

    /// The longest text field of an upload form, in bytes.
    #[arg(long, env = "XF_MAX_FORM_FIELD_BYTES", default_value_t = 64 << 10)]
    pub max_form_field_bytes: usize,

    /// The most bytes of text fields an upload form may have in all.
    #[arg(long, env = "XF_MAX_FORM_TEXT_BYTES", default_value_t = 1 << 20)]
    pub max_form_text_bytes: usize,

    /// The most uploads one organization may have in progress at once on this instance
    /// (beyond, 429 too_many_uploads).
    #[arg(long, env = "XF_MAX_UPLOADS_PER_ORGANIZATION", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_uploads_per_organization: u32,

    /// The slowest a request body may arrive, in bytes per second averaged over each
    /// `--body-rate-window` (slower: 408 request_timeout); 0 accepts any rate.
    #[arg(long, env = "XF_MIN_BODY_RATE", default_value_t = 1024)]
    pub min_body_rate: u64,

    /// The window, in seconds, over which a body's rate is measured.
    #[arg(long, env = "XF_BODY_RATE_WINDOW", default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    pub body_rate_window: u64,

    /// The most connections open at once; beyond, new ones wait to be accepted. Lowered to
    /// what the process's open-file limit allows.
    #[arg(long, env = "XF_MAX_CONNECTIONS", default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,

    /// Seconds a client gets to send a request's headers, from opening the connection or
    /// from the previous response (so also how long an idle HTTP/1 connection stays open).
    #[arg(long, env = "XF_HEADER_READ_TIMEOUT", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub header_read_timeout: u64,

    /// Seconds a connection may go without a byte either way while no request is handled.
    #[arg(long, env = "XF_IDLE_TIMEOUT", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub idle_timeout: u64,

    /// The Google OAuth client id of Search Console syncs; without it and the secret, a sync
    /// is `400 gsc_not_configured`.
    #[arg(long, env = "XF_GOOGLE_CLIENT_ID")]
    pub google_client_id: Option<String>,

    /// The Google OAuth client secret.
    #[arg(long, env = "XF_GOOGLE_CLIENT_SECRET", hide_env_values = true)]
    pub google_client_secret: Option<String>,

    /// Google's OAuth token endpoint (a local stand-in in tests).
    #[arg(long, env = "XF_GOOGLE_TOKEN_URL", default_value = xf_core::gsc::GOOGLE_TOKEN_URL)]
    pub google_token_url: String,

    /// Google's authorization endpoint, where connect links for Search Console send users
    /// (a local stand-in in tests).
    #[arg(long, env = "XF_GOOGLE_AUTHORIZE_URL", default_value = xf_core::gsc::GOOGLE_AUTHORIZE_URL)]
    pub google_authorize_url: String,

    /// The Search Console API's base URL (a local stand-in in tests).
    #[arg(long, env = "XF_GOOGLE_API_BASE_URL", default_value = xf_core::gsc::GOOGLE_API_BASE_URL)]
    pub google_api_base_url: String,

    /// The Google OAuth client that YouTube channels were connected with (refreshes their
    /// tokens); without it and the secret, posts to YouTube fail saying so.
    #[arg(long, env = "XF_YOUTUBE_CLIENT_ID")]
    pub youtube_client_id: Option<String>,

    /// Its secret.
    #[arg(long, env = "XF_YOUTUBE_CLIENT_SECRET", hide_env_values = true)]
    pub youtube_client_secret: Option<String>,

    /// Google's token endpoint for YouTube tokens.
    #[arg(long, env = "XF_YOUTUBE_TOKEN_URL", default_value = platforms::youtube::TOKEN_URL)]
    pub youtube_token_url: String,

    /// Google's authorization endpoint, where connect links for YouTube send users.
    #[arg(long, env = "XF_YOUTUBE_AUTHORIZE_URL", default_value = platforms::youtube::AUTHORIZE_URL)]
    pub youtube_authorize_url: String,

    /// The base of YouTube's upload endpoint.
    #[arg(long, env = "XF_YOUTUBE_UPLOAD_BASE_URL", default_value = platforms::youtube::UPLOAD_BASE_URL)]
    pub youtube_upload_base_url: String,

    /// The Instagram Graph API's base, version included (publishing needs no app
    /// credentials: its tokens are the channels').
    #[arg(long, env = "XF_INSTAGRAM_GRAPH_BASE_URL", default_value = platforms::instagram::GRAPH_BASE_URL)]
    pub instagram_graph_base_url: String,

    /// The Facebook app's id, for connect links to Instagram (Facebook Login).
    #[arg(long, env = "XF_INSTAGRAM_APP_ID")]
    pub instagram_app_id: Option<String>,

    /// Its secret.
    #[arg(long, env = "XF_INSTAGRAM_APP_SECRET", hide_env_values = true)]
    pub instagram_app_secret: Option<String>,

    /// Facebook Login's authorization page, where connect links for Instagram send users.
    #[arg(long, env = "XF_INSTAGRAM_AUTHORIZE_URL", default_value = platforms::instagram::AUTHORIZE_URL)]
    pub instagram_authorize_url: String,

    /// The TikTok app's client key; without it and the secret, posts to TikTok fail.
    #[arg(long, env = "XF_TIKTOK_CLIENT_KEY")]
    pub tiktok_client_key: Option<String>,

    /// Its secret.
    #[arg(long, env = "XF_TIKTOK_CLIENT_SECRET", hide_env_values = true)]
    pub tiktok_client_secret: Option<String>,

    /// TikTok's API base (its token endpoint is under it).
    #[arg(long, env = "XF_TIKTOK_API_BASE_URL", default_value = platforms::tiktok::API_BASE_URL)]
    pub tiktok_api_base_url: String,

    /// TikTok's authorization page, where connect links for TikTok send users.
    #[arg(long, env = "XF_TIKTOK_AUTHORIZE_URL", default_value = platforms::tiktok::AUTHORIZE_URL)]
    pub tiktok_authorize_url: String,

    /// The LinkedIn app's client id; without it and the secret, posts to LinkedIn fail.
    #[arg(long, env = "XF_LINKEDIN_CLIENT_ID")]
    pub linkedin_client_id: Option<String>,

    /// Its secret.
    #[arg(long, env = "XF_LINKEDIN_CLIENT_SECRET", hide_env_values = true)]
    pub linkedin_client_secret: Option<String>,

    /// LinkedIn's REST API base.
    #[arg(long, env = "XF_LINKEDIN_API_BASE_URL", default_value = platforms::linkedin::API_BASE_URL)]
    pub linkedin_api_base_url: String,

    /// LinkedIn's OAuth token endpoint.
    #[arg(long, env = "XF_LINKEDIN_TOKEN_URL", default_value = platforms::linkedin::TOKEN_URL)]
    pub linkedin_token_url: String,

    /// LinkedIn's authorization page, where connect links for LinkedIn send users.
    #[arg(long, env = "XF_LINKEDIN_AUTHORIZE_URL", default_value = platforms::linkedin::AUTHORIZE_URL)]
    pub linkedin_authorize_url: String,

    /// Connect links for LinkedIn also connect the organizations the member administers (the
    /// app needs LinkedIn's Community Management API).
    #[arg(long, env = "XF_LINKEDIN_CONNECT_ORGANIZATIONS", action = ArgAction::SetTrue, value_parser = BoolishValueParser::new())]
    pub linkedin_connect_organizations: bool,

    /// The Pinterest app's id; without it and the secret, posts to Pinterest fail.
    #[arg(long, env = "XF_PINTEREST_CLIENT_ID")]
    pub pinterest_client_id: Option<String>,

    /// Its secret.
    #[arg(long, env = "XF_PINTEREST_CLIENT_SECRET", hide_env_values = true)]
    pub pinterest_client_secret: Option<String>,

    /// Pinterest's API base (its token endpoint is under it).
    #[arg(long, env = "XF_PINTEREST_API_BASE_URL", default_value = platforms::pinterest::API_BASE_URL)]
    pub pinterest_api_base_url: String,

    /// Pinterest's authorization page, where connect links for Pinterest send users.
    #[arg(long, env = "XF_PINTEREST_AUTHORIZE_URL", default_value = platforms::pinterest::AUTHORIZE_URL)]
    pub pinterest_authorize_url: String,
}

/// What a process of xf-server runs (`--role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Role {
    /// The API and the background runtime: one process does everything.
    All,
    /// Only the API; jobs run in `workers` processes sharing the database.
    Api,
    /// Only the background runtime: job workers, lease rescue, retention purges.
    Workers,
}

impl Role {
    /// Whether this process serves HTTP.
    pub fn serves_api(self) -> bool {
        matches!(self, Role::All | Role::Api)
    }

    /// Whether this process runs jobs.
    pub fn runs_jobs(self) -> bool {
        matches!(self, Role::All | Role::Workers)
    }
}

/// Secrets are left out: a config can be logged whole.
impl fmt::Debug for Config {
    /// One piece: one line per field of the configuration, secrets redacted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let redacted = |set: &Option<String>| set.as_ref().map(|_| "<redacted>");
        f.debug_struct("Config")
            .field("listen", &self.listen)
            .field("store", &self.store)
            .field("demo", &self.demo)
            .field("demo_live_key", &redacted(&self.demo_live_key))
            .field("demo_test_key", &redacted(&self.demo_test_key))
            .field("demo_media_live_key", &redacted(&self.demo_media_live_key))
            .field("demo_media_test_key", &redacted(&self.demo_media_test_key))
            .field("secret_key", &redacted(&self.secret_key))
            .field("public_base_url", &self.public_base_url)
            .field("status_page_url", &self.status_page_url)
            .field("admin_token", &redacted(&self.admin_token))
            .field("log_format", &self.log_format)
            .field("role", &self.role)
            .field("health_listen", &self.health_listen)
            .field("metrics_listen", &self.metrics_listen)
            .field("otlp_endpoint", &self.otlp_endpoint)
            .field("workers", &self.workers)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("allow_private_targets", &self.allow_private_targets)
            .field("chromium", &self.chromium)
            .field("chromium_endpoints", &self.chromium_endpoints)
            .field("render_concurrency", &self.render_concurrency)
            .field("render_processes", &self.render_processes)
            .field("webhook_concurrency", &self.webhook_concurrency)
            .field("media_dir", &self.media_dir)
            .field("s3_bucket", &self.s3_bucket)
            .field("s3_endpoint", &self.s3_endpoint)
            .field("s3_region", &self.s3_region)
            .field("s3_prefix", &self.s3_prefix)
            .field("s3_access_key_id", &redacted(&self.s3_access_key_id))
            .field(
                "s3_secret_access_key",
                &redacted(&self.s3_secret_access_key),
            )
            .field("max_video_bytes", &self.max_video_bytes)
            .field("max_image_bytes", &self.max_image_bytes)
            .field("max_form_parts", &self.max_form_parts)
            .field("max_form_field_bytes", &self.max_form_field_bytes)
            .field("max_form_text_bytes", &self.max_form_text_bytes)
            .field(
                "max_uploads_per_organization",
                &self.max_uploads_per_organization,
            )
            .field("min_body_rate", &self.min_body_rate)
            .field("body_rate_window", &self.body_rate_window)
            .field("max_connections", &self.max_connections)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("google_client_id", &self.google_client_id)
            .field(
                "google_client_secret",
                &redacted(&self.google_client_secret),
            )
            .field("google_token_url", &self.google_token_url)
            .field("google_authorize_url", &self.google_authorize_url)
            .field("google_api_base_url", &self.google_api_base_url)
            .field("youtube_client_id", &self.youtube_client_id)
            .field(
                "youtube_client_secret",
                &redacted(&self.youtube_client_secret),
            )
            .field("youtube_token_url", &self.youtube_token_url)
            .field("youtube_authorize_url", &self.youtube_authorize_url)
            .field("youtube_upload_base_url", &self.youtube_upload_base_url)
            .field("instagram_graph_base_url", &self.instagram_graph_base_url)
            .field("instagram_app_id", &self.instagram_app_id)
            .field(
                "instagram_app_secret",
                &redacted(&self.instagram_app_secret),
            )
            .field("instagram_authorize_url", &self.instagram_authorize_url)
            .field("tiktok_client_key", &self.tiktok_client_key)
            .field(
                "tiktok_client_secret",
                &redacted(&self.tiktok_client_secret),
            )
            .field("tiktok_api_base_url", &self.tiktok_api_base_url)
            .field("tiktok_authorize_url", &self.tiktok_authorize_url)
            .field("linkedin_client_id", &self.linkedin_client_id)
            .field(
                "linkedin_client_secret",
                &redacted(&self.linkedin_client_secret),
            )
            .field("linkedin_api_base_url", &self.linkedin_api_base_url)
            .field("linkedin_token_url", &self.linkedin_token_url)
            .field("linkedin_authorize_url", &self.linkedin_authorize_url)
            .field(
                "linkedin_connect_organizations",
                &self.linkedin_connect_organizations,
            )
            .field("pinterest_client_id", &self.pinterest_client_id)
            .field(
                "pinterest_client_secret",
                &redacted(&self.pinterest_client_secret),
            )
            .field("pinterest_api_base_url", &self.pinterest_api_base_url)
            .field("pinterest_authorize_url", &self.pinterest_authorize_url)
            .finish()
    }
}

/// The storage backend chosen by `--store`.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreConfig {
    /// [`MemoryStore`]: one process, lost on exit.
    Memory,
    /// [`PgStore`] on this URL.
    Postgres(String),
}

impl StoreConfig {
    /// `memory`, or a `postgres://` / `postgresql://` URL.
    pub fn parse(value: &str) -> Result<Self, String> {
        if value == "memory" {
            return Ok(Self::Memory);
        }
        let url = url::Url::parse(value).map_err(|error| {
            format!("expected `memory` or a postgres:// URL, got something else ({error})")
        })?;
        match url.scheme() {
            "postgres" | "postgresql" => Ok(Self::Postgres(value.to_owned())),
            scheme => Err(format!(
                "expected `memory` or a postgres:// URL, got a {scheme}:// URL"
            )),
        }
    }
}

/// The URL without its password, so it can be logged.
impl fmt::Debug for StoreConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Memory => f.write_str("memory"),
            Self::Postgres(url) => match url::Url::parse(url) {
                Ok(mut shown) => {
                    if shown.password().is_some() {
                        // Cannot fail: a URL with a password has a host.
                        let _ = shown.set_password(Some("***"));
                    }
                    write!(f, "{shown}")
                }
                // Not from `parse` (which validates); show nothing that could be a secret.
                Err(_) => f.write_str("postgres://<malformed URL>"),
            },
        }
    }
}

/// Format of the log lines on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One line per event, with the spans (and so the request id) it happened in.
    Text,
    /// One JSON object per event, with the current span and the span list.
    Json,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// `--store postgres://...` without `--secret-key`.
    #[error(
        "XF_SECRET_KEY (--secret-key) is required with a PostgreSQL store: every instance that \
         shares the database must sign cursors and derive test-mode ids with the same secret. \
         Set it to at least {MIN_SECRET_KEY_LEN} random bytes, e.g. `openssl rand -hex 32`."
    )]
    SecretKeyRequired,
    /// The facade refused the configuration: a secret key that is too short, or a malformed
    /// base or status page URL.
    #[error("invalid configuration (XF_SECRET_KEY, XF_PUBLIC_BASE_URL, XF_STATUS_PAGE_URL): {0}")]
    Config(#[from] xf_core::BuildError),
    /// `--admin-token` shorter than [`MIN_ADMIN_TOKEN_LEN`] characters (blank included).
    #[error(
        "XF_ADMIN_TOKEN (--admin-token) must be at least {MIN_ADMIN_TOKEN_LEN} characters (e.g. \
         `openssl rand -hex 32`); unset it to serve no admin API"
    )]
    ShortAdminToken,
    /// The PostgreSQL URL is malformed, or the database refused the migrations.
    #[error("cannot open the PostgreSQL store: {0}")]
    Store(#[from] xf_core::StoreError),
    /// `--media-dir` cannot be created, or the S3 settings are incomplete or malformed.
    #[error("cannot store media: {0}")]
    Media(String),
    /// `--demo` failed, e.g. because of a malformed fixed key.
    #[error("cannot set up the demo organization: {0}")]
    Demo(#[source] xf_core::Error),
    /// The listen address is taken or not ours.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// `--listen`.
        address: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// `--role workers` with the memory store: nothing else could ever see its jobs.
    #[error("--role workers needs --store postgres://…: a memory store is not shared with any API process")]
    WorkersNeedSharedStore,
    /// The server stopped with an I/O error.
    #[error("the server stopped: {0}")]
    Serve(#[source] std::io::Error),
    /// RUST_LOG is malformed, or logging was already set up.
    #[error("cannot set up logging: {0}")]
    Logging(String),
}

/// The app [`build_app`] makes.
#[derive(Debug)]
pub struct App {
    /// `/api/v1` (and `/admin` when enabled), with a JSON 404 everywhere else.
    pub service: Mounts,
    /// The facade the routes use.
    pub xf: Xf,
    /// The demo organization (developer API) and its keys, with `--demo`.
    pub demo: Option<CreatedOrganization>,
    /// The media API's demo organization and its keys, with `--demo`.
    pub media_demo: Option<CreatedOrganization>,
}

/// Sets up logging on stderr (stdout is kept for the demo keys): the format of
/// `--log-format`, filtered by `RUST_LOG` (default `info`). Every request is logged by
/// xf-tower inside a `request` span carrying `request_id`, method and path; both formats show
/// it. With `otlp_endpoint` (`--otlp-endpoint`, feature `otlp`), spans are also exported there.
pub fn init_logging(
    format: LogFormat,
    otlp_endpoint: Option<&str>,
) -> Result<LogWriter, StartError> {
    let (otlp, exporter) = otlp_layer(otlp_endpoint)?;
    let (targets, env_filter) = log_filter(std::env::var("RUST_LOG").ok().as_deref())?;
    // Events are captured where they happen and formatted and written by a thread of their
    // own, so a request neither formats its line nor waits for stderr (see `log_lines` and
    // `log_queue`).
    let format = match format {
        LogFormat::Text => log_lines::Format::Text {
            ansi: std::io::stderr().is_terminal(),
        },
        LogFormat::Json => log_lines::Format::Json,
    };
    let mut renderer = log_lines::Renderer::new(format);
    let (queue, sender) = log_queue::LogQueue::start(std::io::stderr(), move |record, out| {
        renderer.render(record, out)
    })
    .map_err(|error| StartError::Logging(format!("the log thread: {error}")))?;
    // With a filter of targets and levels, xf-tower's `request` span is left out, which
    // spares every request its cost; the few events a request logs are shown inside it all
    // the same, from the request's own record of its id. Span directives (`EnvFilter`) keep
    // the span, so that they can match it.
    let mut layer = log_lines::DeferredFormat::new(sender);
    let mut no_request_span = None;
    if targets.is_some() {
        layer = layer.with_request_context(log_lines::request_span_fields);
        no_request_span = Some(filter_fn(|metadata| !xf_tower::is_request_span(metadata)));
    }
    tracing_subscriber::registry()
        .with(targets)
        .with(env_filter)
        .with(no_request_span)
        .with(otlp)
        .with(layer)
        .try_init()
        .map_err(|error| StartError::Logging(error.to_string()))?;
    Ok(LogWriter {
        _queue: queue,
        otlp: exporter,
    })
}

/// The OTLP layer of `--otlp-endpoint`, and its exporter.
#[cfg(feature = "otlp")]
fn otlp_layer<S>(
    endpoint: Option<&str>,
) -> Result<
    (
        Option<impl tracing_subscriber::Layer<S>>,
        Option<OtlpExporter>,
    ),
    StartError,
>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    let Some(endpoint) = endpoint else {
        return Ok((None, None));
    };
    let (layer, exporter) = xf_tower::otlp::layer(endpoint, "xf-server")
        .map_err(|error| StartError::Logging(error.to_string()))?;
    Ok((Some(layer), Some(exporter)))
}

/// Without the `otlp` feature, `--otlp-endpoint` is refused rather than ignored.
#[cfg(not(feature = "otlp"))]
fn otlp_layer(
    endpoint: Option<&str>,
) -> Result<
    (
        Option<tracing_subscriber::layer::Identity>,
        Option<OtlpExporter>,
    ),
    StartError,
> {
    match endpoint {
        Some(_) => Err(StartError::Logging(
            "--otlp-endpoint needs xf-server built with the otlp feature \
             (cargo build -p xf-server --features otlp)"
                .to_owned(),
        )),
        None => Ok((None, None)),
    }
}

#[cfg(feature = "otlp")]
type OtlpExporter = xf_tower::otlp::Exporter;
/// Nothing to keep without the `otlp` feature.
#[cfg(not(feature = "otlp"))]
#[derive(Debug)]
enum OtlpExporter {}

/// The filter of `RUST_LOG` (unset or empty: `info`). Target-and-level directives, the usual
/// kind (`info`, `xf_tower=debug,info`), are matched by `Targets`, which decides once per
/// call site; directives that name spans or fields need `EnvFilter`, which also works on
/// every span's entry and exit.
fn log_filter(
    directives: Option<&str>,
) -> Result<(Option<Targets>, Option<EnvFilter>), StartError> {
    let directives = directives.map(str::trim).filter(|d| !d.is_empty());
    let Some(directives) = directives else {
        return Ok((Some(Targets::new().with_default(LevelFilter::INFO)), None));
    };
    if let Ok(targets) = directives.parse::<Targets>() {
        return Ok((Some(targets), None));
    }
    let env_filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::INFO.into())
        .parse(directives)
        .map_err(|error| StartError::Logging(format!("RUST_LOG: {error}")))?;
    Ok((None, Some(env_filter)))
}

/// The log's writer thread, and the OTLP exporter with `--otlp-endpoint`: keep it until the
/// process ends; dropping it writes out what is queued and sends the spans still waiting.
#[derive(Debug)]
pub struct LogWriter {
    _queue: log_queue::LogQueue<log_lines::Record>,
    otlp: Option<OtlpExporter>,
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        #[cfg(feature = "otlp")]
        if let Some(exporter) = self.otlp.take() {
            // The last batch is posted by a task of the runtime: on a multi-threaded one the
            // wait lets the runtime's other threads run it.
            let multi_thread = tokio::runtime::Handle::try_current().is_ok_and(|runtime| {
                runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
            });
            if multi_thread {
                tokio::task::block_in_place(|| exporter.shutdown());
            } else {
                exporter.shutdown();
            }
        }
        #[cfg(not(feature = "otlp"))]
        if let Some(never) = self.otlp.take() {
            match never {}
        }
    }
}

/// The shortest admin token xf-server starts with: whoever holds it manages every
/// organization, so a guessable one is refused rather than served.
pub const MIN_ADMIN_TOKEN_LEN: usize = 16;

/// Opens the store (migrating PostgreSQL), builds the facade, sets up the demo organization
/// with `--demo`, and mounts the services.
///
/// One piece: the server's one wiring of its configuration (store, blobs, clients, limits,
/// mounts) into the app, in the order the parts depend on each other, as a reader of
/// configuration.md follows it.
pub async fn build_app(config: &Config) -> Result<App, StartError> {
    if config
        .admin_token
        .as_deref()
        .is_some_and(|t| t.trim().chars().count() < MIN_ADMIN_TOKEN_LEN)
    {
        return Err(StartError::ShortAdminToken);
    }
    if config.role == Role::Workers && config.store == StoreConfig::Memory {
        return Err(StartError::WorkersNeedSharedStore);
    }
    let store: Arc<dyn Store> = match &config.store {
        StoreConfig::Memory => Arc::new(MemoryStore::new()),
        StoreConfig::Postgres(url) => {
            if config.secret_key.is_none() {
                return Err(StartError::SecretKeyRequired);
            }
            let store = PgStore::connect(url)?;
            store.migrate().await?;
            Arc::new(store)
        }
    };

    let public_base_url = config
        .public_base_url
        .clone()
        .unwrap_or_else(|| format!("http://{}", config.listen));
    // Without a configured secret the memory store gets a random one: its data, and so every
    // cursor and test-mode id, dies with the process anyway. PostgreSQL required one above.
    let secret = match &config.secret_key {
        Some(secret) => secret.clone().into_bytes(),
        None => {
            tracing::info!(
                "no XF_SECRET_KEY: cursors and test-mode ids use a random secret until the server stops"
            );
            Xf::random_secret_key()
        }
    };
    let mut builder = Xf::builder(store)
        .allow_private_targets(config.allow_private_targets)
        .secret_key(secret)
        .public_base_url(public_base_url);
    if let Some(url) = &config.status_page_url {
        builder = builder.status_page_url(url.clone());
    }
    if let Some(renderer) = renderer(config) {
        builder = builder.renderer(Arc::new(renderer));
    }
    builder = builder
        .blob_store(blob_store(config)?)
        .media_limits(xf_core::MediaLimits {
            max_video_bytes: config.max_video_bytes,
            max_image_bytes: config.max_image_bytes,
            max_form_parts: config.max_form_parts,
            max_form_field_bytes: config.max_form_field_bytes,
            max_form_text_bytes: config.max_form_text_bytes,
            max_uploads_per_organization: config.max_uploads_per_organization as usize,
        })
        .request_limits(xf_core::RequestLimits {
            min_body_bytes_per_sec: config.min_body_rate,
            body_rate_window: Duration::from_secs(config.body_rate_window),
        });
    match (&config.google_client_id, &config.google_client_secret) {
        (Some(id), Some(secret)) => {
            builder = builder.google(xf_core::gsc::GoogleConfig {
                token_url: config.google_token_url.clone(),
                authorize_url: config.google_authorize_url.clone(),
                api_base_url: config.google_api_base_url.clone(),
                ..xf_core::gsc::GoogleConfig::new(id.clone(), secret.clone())
            });
        }
        (None, None) => {}
        _ => tracing::warn!(
            "Search Console needs both XF_GOOGLE_CLIENT_ID and XF_GOOGLE_CLIENT_SECRET; syncs \
             answer gsc_not_configured"
        ),
    }
    builder = with_publishers(builder, config);
    let xf = builder.build()?;

    let (demo, media_demo) = if config.demo {
        let created = xf
            .ensure_demo_organization(config.demo_live_key.clone(), config.demo_test_key.clone())
            .await
            .map_err(StartError::Demo)?;
        let media = xf
            .ensure_media_demo_organization(
                config.demo_media_live_key.clone(),
                config.demo_media_test_key.clone(),
            )
            .await
            .map_err(StartError::Demo)?;
        (Some(created), Some(media))
    } else {
        (None, None)
    };

    let mut service = Mounts::new(xf.clone());
    if config.metrics_listen.is_none() {
        service = service.metrics();
    }
    if let Some(token) = &config.admin_token {
        service = service.admin(token.clone());
    }
    Ok(App {
        service,
        xf,
        demo,
        media_demo,
    })
}

/// The renderer of `--chromium` and `--chromium-endpoint`, if either is given.
fn renderer(config: &Config) -> Option<xf_core::crawl::chromium::ChromiumRenderer> {
    use xf_core::crawl::chromium::ChromiumRenderer;
    let mut endpoints = config.chromium_endpoints.iter();
    let builder = match &config.chromium {
        Some(path) => {
            ChromiumRenderer::launch(path).processes(usize::from(config.render_processes))
        }
        None => ChromiumRenderer::connect(endpoints.next()?.clone()),
    };
    let builder = endpoints.fold(builder, |builder, endpoint| {
        builder.endpoint(endpoint.clone())
    });
    Some(
        builder
            .concurrency(usize::from(config.render_concurrency))
            .allow_private_targets(config.allow_private_targets)
            .build(),
    )
}

/// The blob store of `--s3-bucket` (with its credentials), else of `--media-dir`.
fn blob_store(config: &Config) -> Result<Arc<dyn BlobStore>, StartError> {
    let Some(bucket) = &config.s3_bucket else {
        let local = LocalBlobStore::new(&config.media_dir)
            .map_err(|e| StartError::Media(format!("{}: {e}", config.media_dir.display())))?;
        return Ok(Arc::new(local));
    };
    let (Some(access_key_id), Some(secret_access_key)) =
        (&config.s3_access_key_id, &config.s3_secret_access_key)
    else {
        return Err(StartError::Media(
            "--s3-bucket needs XF_S3_ACCESS_KEY_ID and XF_S3_SECRET_ACCESS_KEY".to_owned(),
        ));
    };
    let s3 = S3BlobStore::new(S3Config {
        endpoint: config.s3_endpoint.clone(),
        region: config.s3_region.clone(),
        bucket: bucket.clone(),
        access_key_id: access_key_id.clone(),
        secret_access_key: secret_access_key.clone(),
        prefix: config.s3_prefix.clone(),
        allow_http: config
            .s3_endpoint
            .as_deref()
            .is_some_and(|endpoint| endpoint.starts_with("http://")),
    })
    .map_err(|e| StartError::Media(format!("the S3 bucket {bucket}: {e}")))?;
    Ok(Arc::new(s3))
}

/// Serves `service` on `listener` with the default [`ServeOptions`] until `shutdown`
/// completes (see [`serve::serve`]).
pub async fn serve(
    listener: TcpListener,
    service: Mounts,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve::serve(listener, service, ServeOptions::default(), shutdown).await
}

impl Config {
    /// How connections are bounded. The connection cap is lowered, with a warning, to what
    /// the open-file limit (raised to its hard limit first) leaves after 256 descriptors for
    /// the database pool, blobs and logs.
    pub fn serve_options(&self) -> ServeOptions {
        let mut max_connections = self.max_connections as usize;
        if let Some(files) = serve::raise_open_file_limit() {
            let room = usize::try_from(files.saturating_sub(256))
                .unwrap_or(usize::MAX)
                .max(16);
            if room < max_connections {
                tracing::warn!(
                    open_file_limit = files,
                    max_connections = room,
                    "the open-file limit leaves room for fewer connections than \
                     XF_MAX_CONNECTIONS; raise `ulimit -n` to serve more"
                );
                max_connections = room;
            }
        }
        ServeOptions {
            max_connections,
            header_read_timeout: Duration::from_secs(self.header_read_timeout),
            idle_timeout: Duration::from_secs(self.idle_timeout),
        }
    }
}

/// The background runtime's settings for `config`: scans (the facade's `seo-scan` handler),
/// lease rescue and retention purges; in the `api` role only the last two.
pub fn worker_options(config: &Config) -> WorkerOptions {
    let options = WorkerOptions::new()
        .concurrency(usize::from(config.workers))
        .webhook_concurrency(usize::from(config.webhook_concurrency));
    if config.role.runs_jobs() {
        options
    } else {
        options.without_jobs()
    }
}

/// Runs the server: builds the app, starts the background runtime, listens, prints the demo
/// keys, and serves until SIGINT or SIGTERM; then stops the runtime within the grace.
pub async fn run(config: Config) -> Result<(), StartError> {
    let app = build_app(&config).await?;
    let health = match config.health_listen {
        Some(address) => Some(
            TcpListener::bind(address)
                .await
                .map_err(|source| StartError::Bind { address, source })?,
        ),
        None => None,
    };
    let metrics = match config.metrics_listen {
        Some(address) => {
            let listener = TcpListener::bind(address)
                .await
                .map_err(|source| StartError::Bind { address, source })?;
            Some(tokio::spawn(serve_metrics(listener, app.xf.clone())))
        }
        None => None,
    };
    let _metrics = AbortOnDrop(metrics);
    let grace = Duration::from_secs(config.shutdown_grace);
    if !config.role.serves_api() {
        tracing::info!(store = ?config.store, "xf-server running workers only");
        let stopped = run_workers(
            &app.xf,
            worker_options(&config),
            grace,
            health,
            xf_tower::shutdown_signal(),
        );
        return stopped.await.map_err(StartError::Serve);
    }
    let workers = app.xf.spawn_workers(worker_options(&config));
    let probes = health.map(|listener| tokio::spawn(serve_probes(listener, app.xf.clone())));
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|source| StartError::Bind {
            address: config.listen,
            source,
        })?;
    let address = listener.local_addr().map_err(StartError::Serve)?;
    tracing::info!(
        %address,
        store = ?config.store,
        admin_api = config.admin_token.is_some(),
        "xf-server listening"
    );
    if let Some(demo) = &app.demo {
        println!("{}", demo_banner(demo, app.media_demo.as_ref(), address));
    }
    let options = config.serve_options();
    let served = serve::serve(listener, app.service, options, xf_tower::shutdown_signal()).await;
    let report = workers.shutdown(grace).await;
    if let Some(probes) = probes {
        probes.abort();
    }
    served.map_err(StartError::Serve)?;
    tracing::info!(?report, "xf-server stopped");
    Ok(())
}

/// The `workers` role: runs the background runtime over `xf`, with the probes on `health`
/// when given, until `shutdown` completes; then readiness turns `503` while running jobs get
/// `grace` to finish, and the probes stop with the runtime.
pub async fn run_workers(
    xf: &Xf,
    options: WorkerOptions,
    grace: Duration,
    health: Option<TcpListener>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let workers = xf.spawn_workers(options);
    let probes = health.map(|listener| tokio::spawn(serve_probes(listener, xf.clone())));
    shutdown.await;
    let report = workers.shutdown(grace).await;
    tracing::info!(?report, "xf-server stopped");
    match probes {
        Some(probes) => {
            probes.abort();
            match probes.await {
                Ok(served) => served,
                Err(_aborted) => Ok(()),
            }
        }
        None => Ok(()),
    }
}

/// Serves `GET /metrics` of `xf` on `listener` (see `xf_tower::MetricsService`).
async fn serve_metrics(listener: TcpListener, xf: Xf) -> std::io::Result<()> {
    if let Ok(address) = listener.local_addr() {
        tracing::info!(%address, "metrics listening");
    }
    axum::serve(listener, xf_tower::MetricsService::new(xf).into_router()).await
}

/// Stops a server task when the process's main server returns.
struct AbortOnDrop(Option<tokio::task::JoinHandle<std::io::Result<()>>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

/// Serves `GET /livez` and `GET /readyz` of `xf` on `listener` (see `xf_tower::ProbeService`).
async fn serve_probes(listener: TcpListener, xf: Xf) -> std::io::Result<()> {
    if let Ok(address) = listener.local_addr() {
        tracing::info!(%address, "probes listening");
    }
    axum::serve(listener, xf_tower::ProbeService::new(xf).into_router()).await
}

/// What `--demo` prints on stdout: each demo organization with its plan, id and keys, and a
/// first request to try with each API.
pub fn demo_banner(
    demo: &CreatedOrganization,
    media: Option<&CreatedOrganization>,
    address: SocketAddr,
) -> String {
    let section = |title: &str, created: &CreatedOrganization, try_it: String| {
        format!(
            "\n{title} (plan {plan})\n  \
             organization id: {id}\n  \
             live key:        {live}\n  \
             test key:        {test}\n  \
             try: {try_it}\n",
            plan = created.organization.plan,
            id = created.organization.id,
            live = created.live_key,
            test = created.test_key,
        )
    };
    let api = format!("http://{address}{API_PREFIX}");
    let mut banner = section(
        "Demo organization ready: the SEO developer API",
        demo,
        format!(
            "curl -H 'Authorization: Bearer {}' {api}/organization",
            demo.live_key
        ),
    );
    if let Some(media) = media {
        banner.push_str(&section(
            "Demo media organization ready: the media publishing API",
            media,
            format!("curl -H 'X-API-Key: {}' {api}/channels", media.live_key),
        ));
    }
    banner
}

/// Both halves of an app's credentials, or none (a warning when only one is given).
fn credentials(
    platform: &str,
    id: &Option<String>,
    secret: &Option<String>,
) -> Option<(String, String)> {
    match (id, secret) {
        (Some(id), Some(secret)) => Some((id.clone(), secret.clone())),
        (None, None) => None,
        _ => {
            tracing::warn!(
                platform,
                "an app needs both its client id and its secret; posts to it fail"
            );
            None
        }
    }
}

/// The platforms' clients the configuration names (Instagram always: it needs no app).
fn with_publishers(mut builder: xf_core::XfBuilder, config: &Config) -> xf_core::XfBuilder {
    use platforms::{instagram, linkedin, pinterest, tiktok, youtube};
    let app = credentials(
        "instagram",
        &config.instagram_app_id,
        &config.instagram_app_secret,
    );
    let instagram = instagram::InstagramConfig {
        graph_base_url: config.instagram_graph_base_url.clone(),
        authorize_url: config.instagram_authorize_url.clone(),
        app: app.map(|(id, secret)| platforms::OAuthApp::new(id, secret)),
        ..instagram::InstagramConfig::default()
    };
    // Publishing to Instagram needs no app; connect links need the Facebook app.
    builder = if instagram.app.is_some() {
        builder.platform(Arc::new(instagram::Instagram::new(instagram)))
    } else {
        builder.publisher(Arc::new(instagram::Instagram::new(instagram)))
    };
    if let Some((id, secret)) = credentials(
        "youtube",
        &config.youtube_client_id,
        &config.youtube_client_secret,
    ) {
        let youtube = youtube::YoutubeConfig {
            token_url: config.youtube_token_url.clone(),
            authorize_url: config.youtube_authorize_url.clone(),
            upload_base_url: config.youtube_upload_base_url.clone(),
            ..youtube::YoutubeConfig::new(id, secret)
        };
        builder = builder.platform(Arc::new(youtube::Youtube::new(youtube)));
    }
    if let Some((key, secret)) = credentials(
        "tiktok",
        &config.tiktok_client_key,
        &config.tiktok_client_secret,
    ) {
        let tiktok = tiktok::TiktokConfig {
            api_base_url: config.tiktok_api_base_url.clone(),
            authorize_url: config.tiktok_authorize_url.clone(),
            ..tiktok::TiktokConfig::new(key, secret)
        };
        builder = builder.platform(Arc::new(tiktok::Tiktok::new(tiktok)));
    }
    if let Some((id, secret)) = credentials(
        "linkedin",
        &config.linkedin_client_id,
        &config.linkedin_client_secret,
    ) {
        let linkedin = linkedin::LinkedinConfig {
            api_base_url: config.linkedin_api_base_url.clone(),
            token_url: config.linkedin_token_url.clone(),
            authorize_url: config.linkedin_authorize_url.clone(),
            connect_organizations: config.linkedin_connect_organizations,
            ..linkedin::LinkedinConfig::new(id, secret)
        };
        builder = builder.platform(Arc::new(linkedin::Linkedin::new(linkedin)));
    }
    if let Some((id, secret)) = credentials(
        "pinterest",
        &config.pinterest_client_id,
        &config.pinterest_client_secret,
    ) {
        let pinterest = pinterest::PinterestConfig {
            api_base_url: config.pinterest_api_base_url.clone(),
            authorize_url: config.pinterest_authorize_url.clone(),
            ..pinterest::PinterestConfig::new(id, secret)
        };
        builder = builder.platform(Arc::new(pinterest::Pinterest::new(pinterest)));
    }
    builder
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(directives: Option<&str>) -> Targets {
        match log_filter(directives) {
            Ok((Some(targets), None)) => targets,
            other => panic!("{directives:?} gave {other:?}"),
        }
    }

    #[test]
    fn rust_log_picks_the_cheapest_filter_that_says_it() {
        for unset in [None, Some(""), Some("  ")] {
            let targets = targets(unset);
            assert!(targets.would_enable("xf_tower::request_id", &tracing::Level::INFO));
            assert!(!targets.would_enable("xf_tower::request_id", &tracing::Level::DEBUG));
        }
        let targets = targets(Some("xf_tower=debug,warn"));
        assert!(targets.would_enable("xf_tower::request_id", &tracing::Level::DEBUG));
        assert!(!targets.would_enable("xf_core::runtime", &tracing::Level::INFO));
        assert!(targets.would_enable("xf_core::runtime", &tracing::Level::WARN));
        // As with EnvFilter, naming targets leaves the others off.
        assert_eq!(self::targets(Some("xf_tower=debug")).default_level(), None);
        // Span and field directives need EnvFilter.
        match log_filter(Some("[request{service=api}]=debug,info")) {
            Ok((None, Some(filter))) => {
                assert!(filter.to_string().contains("[request{service=api}]=debug"))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            log_filter(Some("xf_tower=loud")),
            Err(StartError::Logging(message)) if message.starts_with("RUST_LOG")
        ));
    }
}
