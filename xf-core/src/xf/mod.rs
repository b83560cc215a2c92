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
//! fn facade(store: Arc<dyn Store>, secret: Vec<u8>) -> Xf {
//!     Xf::builder(store)
//!         .secret_key(secret)
//!         .public_base_url("https://app.example.com")
//!         .build()
//! }
//! ```

mod access;
mod account;
mod admin;
mod properties;
mod reports;
mod scans;

use std::sync::Arc;

use crate::api::{Page, PageParams};
use crate::cursor::CursorCodec;
use crate::error::{Error, Result};
use crate::ids;
use crate::model::{KeyMode, Organization};
use crate::plans::{Limits, Plan, PlanCatalog};
use crate::secret::{derive_key, keyed_digest};
use crate::store::{After, PageRequest, Store};
use crate::time::{Clock, SystemClock, Timestamp};

pub use access::{Fingerprint, IdempotencyStart, IdempotencyTicket, RateCheck, RequestKind};
pub use admin::{
    CreatedApiKey, CreatedOrganization, NewOrganization, NewReport, OrganizationPatch,
    RevokedApiKey, UsageDelta,
};
pub use properties::normalize_property_url;

/// Default page size of lists.
pub const DEFAULT_PAGE_SIZE: i64 = 40;
/// Largest page size of lists.
pub const MAX_PAGE_SIZE: i64 = 100;
/// The path version label.
pub const API_VERSION_LABEL: &str = "v1";
/// The semantic version of the API.
pub const API_VERSION: &str = "1.0.0";

/// Host configuration.
#[derive(Clone)]
pub struct XfConfig {
    /// The host's secret: signs cursors and derives test-mode ids. Instances sharing a store
    /// must share it.
    pub secret_key: Vec<u8>,
    /// Public base URL of the host app; report links are `{base}/r/{token}`.
    pub public_base_url: String,
    /// The status page named by `GET /health`.
    pub status_page_url: String,
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
    plans: PlanCatalog,
    config: XfConfig,
    cursors: CursorCodec,
    mock_key: [u8; 32],
}

/// Builds an [`Xf`].
#[derive(Debug)]
pub struct XfBuilder {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    plans: PlanCatalog,
    config: XfConfig,
}

impl XfBuilder {
    /// Replaces the system clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Replaces the default plan catalog.
    pub fn plans(mut self, plans: PlanCatalog) -> Self {
        self.plans = plans;
        self
    }

    /// Sets the host's secret (see [`XfConfig::secret_key`]). Without one, a random secret is
    /// drawn: fine for one process, wrong for several instances sharing a store.
    pub fn secret_key(mut self, secret: Vec<u8>) -> Self {
        self.config.secret_key = secret;
        self
    }

    /// Sets the public base URL used in report links (no trailing slash needed).
    pub fn public_base_url(mut self, url: impl Into<String>) -> Self {
        self.config.public_base_url = url.into().trim_end_matches('/').to_owned();
        self
    }

    /// Sets the status page named by `GET /health`.
    pub fn status_page_url(mut self, url: impl Into<String>) -> Self {
        self.config.status_page_url = url.into();
        self
    }

    /// The facade.
    pub fn build(self) -> Xf {
        let cursors = CursorCodec::new(&self.config.secret_key);
        let mock_key = derive_key(&self.config.secret_key, b"xf/test-mode/v1");
        Xf {
            inner: Arc::new(Inner {
                store: self.store,
                clock: self.clock,
                plans: self.plans,
                config: self.config,
                cursors,
                mock_key,
            }),
        }
    }
}

/// The authenticated caller of a request.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The key's organization.
    pub organization: Organization,
    /// The key's id.
    pub key_id: String,
    /// Live or test.
    pub mode: KeyMode,
    /// The organization's plan.
    pub plan: Plan,
    /// The plan's limits with the organization's overrides.
    pub limits: Limits,
}

impl Caller {
    /// Whether writes are to be mocked.
    pub fn is_test(&self) -> bool {
        self.mode == KeyMode::Test
    }
}

impl Xf {
    /// Starts building a facade over `store`.
    pub fn builder(store: Arc<dyn Store>) -> XfBuilder {
        use rand::RngCore;
        let mut secret = vec![0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut secret);
        XfBuilder {
            store,
            clock: Arc::new(SystemClock),
            plans: PlanCatalog::default(),
            config: XfConfig {
                secret_key: secret,
                public_base_url: "http://localhost:8080".to_owned(),
                status_page_url: "https://status.example.com".to_owned(),
            },
        }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
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

    /// Validates `limit` and `cursor` and makes the store request for list `list` with the
    /// canonical `filters` (a cursor is only valid for the same list and filters). The store
    /// is asked for one extra item to learn whether another page exists.
    fn page_request(
        &self,
        list: &str,
        filters: &str,
        params: &PageParams,
        default_limit: i64,
    ) -> Result<(PageRequest, usize)> {
        let limit = params.limit.unwrap_or(default_limit);
        if !(1..=MAX_PAGE_SIZE).contains(&limit) {
            return Err(Error::invalid(
                "limit",
                format!("must be an integer from 1 to {MAX_PAGE_SIZE}"),
            ));
        }
        let after = match params.cursor.as_deref() {
            None => None,
            Some(cursor) => Some(self.inner.cursors.decode(list, filters, cursor)?),
        };
        let limit = limit as usize;
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

    /// An id for a test-mode response: an HMAC of the key, the request and the item's place.
    fn mock_id(
        &self,
        caller: &Caller,
        request: &Fingerprint,
        prefix: &str,
        index: usize,
    ) -> String {
        let digest = keyed_digest(
            &self.inner.mock_key,
            &[
                caller.key_id.as_bytes(),
                request.as_bytes(),
                prefix.as_bytes(),
                &(index as u64).to_be_bytes(),
            ],
        );
        ids::derived_id(prefix, &digest)
    }

    /// The fixed time of test-mode responses: the start of the current UTC day.
    fn mock_time(&self) -> Timestamp {
        self.now().start_of_day()
    }
}
