//! Metrics in the Prometheus text format: what an operator scrapes and alerts on.
//!
//! [`Metrics`] holds every metric family of xf; the facade records into it as requests, jobs,
//! deliveries, crawls, publishing and uploads happen, and [`Xf::metrics`](crate::Xf::metrics)
//! hands it to whoever exposes it:
//!
//! - xf-tower's `MetricsService` (xf-server's `/metrics`) refreshes the store's gauges and
//!   renders [`Metrics::encode`];
//! - a host with a registry of its own registers xf's families into it with
//!   [`Metrics::register`], and calls [`Xf::refresh_metrics`](crate::Xf::refresh_metrics)
//!   before each scrape.
//!
//! Every label has a bounded set of values: route templates rather than paths, status
//! classes rather than codes, error classes rather than messages. The gauges of what the
//! queues hold (`xf_jobs`, `xf_webhook_messages_waiting`, `xf_tus_uploads_open`) are read from
//! the store by one query at most every [`STORE_READ_INTERVAL`], however often it is scraped,
//! and say what every instance sharing the store sees. `docs/observability.md` lists every
//! family with its labels.
//!
//! Recording is a hash lookup and an add under a short lock; a request's, on the hot path,
//! takes a lock of its own thread's shard (see [`RequestRecorder`]). `tests/benches/request_path.sh`
//! (with `BEFORE=`) measures what recording adds to a request.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::hash::TrustedHash;
use crate::store::{PoolStatus, Store, StoreGauges};

/// The `prometheus-client` crate the families are made with: a host that registers them into
/// a registry of its own ([`Metrics::register`]) makes it with this version.
pub use prometheus_client;

/// How long the store's gauges are reused before a scrape reads them again.
pub const STORE_READ_INTERVAL: Duration = Duration::from_secs(5);

/// The `Content-Type` of [`Metrics::encode`]: the Prometheus text format, version 0.0.4.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Request latencies: half a millisecond to ten seconds.
const REQUEST_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Job runs: a tenth of a second to an hour.
const JOB_BUCKETS: [f64; 12] = [
    0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 150.0, 300.0, 900.0, 3600.0,
];
/// Webhook deliveries: 5 ms to the 15 s an attempt may take.
const DELIVERY_BUCKETS: [f64; 10] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 15.0];
/// The phases of a scan: 1 ms to 30 minutes.
/// Seconds a page's rendering takes: from a static page's tens of milliseconds to the time
/// limit's 20 s.
const RENDER_BUCKETS: [f64; 10] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0];

const PHASE_BUCKETS: [f64; 12] = [
    0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0, 300.0, 1800.0,
];
/// Pages audited per scan.
const PAGES_BUCKETS: [f64; 10] = [
    1.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 5000.0,
];

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// A family of histograms made by `constructor`.
fn histograms<L: Clone + std::hash::Hash + Eq>(constructor: fn() -> Histogram) -> Histograms<L> {
    Family::new_with_constructor(constructor)
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabels {
    phase: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabels {
    r#type: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DeliveryLabels {
    outcome: &'static str,
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PublishLabels {
    platform: &'static str,
    outcome: &'static str,
    error: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PlatformLabels {
    platform: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PlatformOutcomeLabels {
    platform: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    operation: &'static str,
}

/// How a job attempt ended, for `xf_job_run_duration_seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JobOutcome {
    /// The job completed.
    Completed,
    /// The attempt failed and another will follow.
    Retrying,
    /// The job failed for good.
    Failed,
    /// The attempt stopped before its handler finished: the job was cancelled, the attempt
    /// lost its lease, or the runtime shut down and gave the job back to the queue.
    Stopped,
}

impl JobOutcome {
    fn label(self) -> &'static str {
        match self {
            JobOutcome::Completed => "completed",
            JobOutcome::Retrying => "retrying",
            JobOutcome::Failed => "failed",
            JobOutcome::Stopped => "stopped",
        }
    }
}

/// An HTTP status as its class: `2xx` … `5xx`, `none` for no answer.
pub fn status_class(status: Option<u16>) -> &'static str {
    match status {
        Some(100..=199) => "1xx",
        Some(200..=299) => "2xx",
        Some(300..=399) => "3xx",
        Some(400..=499) => "4xx",
        Some(500..=599) => "5xx",
        Some(_) => "other",
        None => "none",
    }
}

/// An HTTP method as a label: the standard ones by name, any other as `other`.
pub fn method_label(method: &str) -> &'static str {
    const KNOWN: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE",
    ];
    KNOWN
        .into_iter()
        .find(|known| *known == method)
        .unwrap_or("other")
}

/// Every metric family of xf. Cheap to clone; clones record into the same families.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Families>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

struct Families {
    registry: Registry,
    /// This facade's requests in [`REQUESTS`].
    requests: RequestRecorder,
    rate_limit_refusals: Family<KindLabels, Counter>,
    idempotency_replays: Counter,
    job_runs: Histograms<JobLabels>,
    job_rescues: Family<OutcomeLabels, Counter>,
    deliveries: Histograms<DeliveryLabels>,
    crawl_pages: Counter,
    crawl_bytes: Counter,
    crawl_fetch_errors: Family<KindLabels, Counter>,
    crawl_pages_per_scan: Histogram,
    scan_phases: Histograms<PhaseLabels>,
    renders: Histogram,
    renders_in_flight: prometheus_client::metrics::gauge::Gauge,
    render_failures: Family<KindLabels, Counter>,
    publish_attempts: Family<PublishLabels, Counter>,
    token_refreshes: Family<PlatformOutcomeLabels, Counter>,
    disconnections: Family<PlatformLabels, Counter>,
    post_deletions: Family<PlatformOutcomeLabels, Counter>,
    upload_bytes: Family<KindLabels, Counter>,
    blob_errors: Family<OperationLabels, Counter>,
    store: Arc<StoreCollector>,
}

impl Metrics {
    /// Fresh families (all zero), whose store gauges are read from `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        let store = Arc::new(StoreCollector {
            store,
            read: tokio::sync::Mutex::new(None),
            last: Mutex::new(None),
        });
        let mut families = Families {
            registry: Registry::default(),
            requests: RequestRecorder {
                instance: NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed),
            },
            rate_limit_refusals: Family::default(),
            idempotency_replays: Counter::default(),
            job_runs: histograms(|| Histogram::new(JOB_BUCKETS)),
            job_rescues: Family::default(),
            deliveries: histograms(|| Histogram::new(DELIVERY_BUCKETS)),
            crawl_pages: Counter::default(),
            crawl_bytes: Counter::default(),
            crawl_fetch_errors: Family::default(),
            crawl_pages_per_scan: Histogram::new(PAGES_BUCKETS),
            scan_phases: histograms(|| Histogram::new(PHASE_BUCKETS)),
            renders: Histogram::new(RENDER_BUCKETS),
            renders_in_flight: Default::default(),
            render_failures: Family::default(),
            publish_attempts: Family::default(),
            token_refreshes: Family::default(),
            disconnections: Family::default(),
            post_deletions: Family::default(),
            upload_bytes: Family::default(),
            blob_errors: Family::default(),
            store,
        };
        let mut registry = Registry::default();
        families.register_into(&mut registry);
        families.registry = registry;
        Metrics {
            inner: Arc::new(families),
        }
    }

    /// Registers every family of xf (they keep recording here) into a host's `registry`.
    /// The store's gauges are read when [`Xf::refresh_metrics`](crate::Xf::refresh_metrics)
    /// last ran: call it before encoding the host's registry.
    pub fn register(&self, registry: &mut Registry) {
        self.inner.register_into(registry);
    }

    /// Every family in the Prometheus text format (version 0.0.4; [`CONTENT_TYPE`]), with the
    /// store's gauges as last read.
    pub fn encode(&self) -> String {
        let mut text = String::with_capacity(16 * 1024);
        // Writing into a `String` cannot fail.
        let _ =
            prometheus_client::encoding::prometheus_text::encode(&mut text, &self.inner.registry);
        text
    }

    /// Reads the store's gauges unless they were read less than [`STORE_READ_INTERVAL`] ago;
    /// concurrent calls share one read. A store that fails to answer is reported as down
    /// (`xf_store_up 0`) until it answers again.
    pub async fn refresh(&self) {
        self.inner.store.refresh().await;
    }

    /// A request answered: see [`RequestRecorder::record`].
    pub fn request(
        &self,
        service: &'static str,
        template: &str,
        method: &str,
        status: u16,
        latency: Duration,
    ) {
        (self.inner.requests).record(service, template, method, status, latency);
    }

    /// What records requests into these metrics: a `Copy` handle for the request path, which
    /// holds it without cloning (or counting references to) the metrics on every request.
    pub fn requests(&self) -> RequestRecorder {
        self.inner.requests
    }

    /// A request refused for its rate limit (`read` or `write`).
    pub fn rate_limit_refused(&self, kind: &'static str) {
        let labels = KindLabels { kind };
        self.inner.rate_limit_refusals.get_or_create(&labels).inc();
    }

    /// A request answered with a stored response for its `Idempotency-Key`.
    pub fn idempotency_replayed(&self) {
        self.inner.idempotency_replays.inc();
    }

    /// A job attempt ended.
    pub fn job_run(&self, job_type: &str, outcome: JobOutcome, took: Duration) {
        let labels = JobLabels {
            r#type: job_type.to_owned(),
            outcome: outcome.label(),
        };
        self.inner
            .job_runs
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// A rescue pass put `requeued` jobs back and failed `failed` whose worker died.
    pub fn jobs_rescued(&self, requeued: u64, failed: u64) {
        for (outcome, n) in [("requeued", requeued), ("failed", failed)] {
            if n > 0 {
                let labels = OutcomeLabels { outcome };
                self.inner.job_rescues.get_or_create(&labels).inc_by(n);
            }
        }
    }

    /// A webhook delivery attempt ended: `outcome` is `delivered`, `retrying`, `failed` (no
    /// attempt left) or `disabled` (the receiver answered `410`), `status` the receiver's
    /// answer (none when it gave none).
    pub fn webhook_delivery(&self, outcome: &'static str, status: Option<u16>, took: Duration) {
        let labels = DeliveryLabels {
            outcome,
            status: status_class(status),
        };
        self.inner
            .deliveries
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// A crawled page's body was read: `bytes` long.
    pub fn crawl_page_fetched(&self, bytes: u64) {
        self.inner.crawl_pages.inc();
        self.inner.crawl_bytes.inc_by(bytes);
    }

    /// A crawl fetch failed (`kind`: `timeout`, `connect`, `too_large`, …).
    pub fn crawl_fetch_failed(&self, kind: &'static str) {
        let labels = KindLabels { kind };
        self.inner.crawl_fetch_errors.get_or_create(&labels).inc();
    }

    /// A page's rendering starts; it ends (and is timed) when the guard is dropped.
    pub fn render_started(&self) -> RenderTimer {
        self.inner.renders_in_flight.inc();
        RenderTimer {
            metrics: self.clone(),
            began: Instant::now(),
        }
    }

    /// A page could not be rendered (`kind`: `timeout`, `crash`, `unavailable`, `browser`).
    pub fn render_failed(&self, kind: &'static str) {
        let labels = KindLabels { kind };
        self.inner.render_failures.get_or_create(&labels).inc();
    }

    /// A scan finished having audited `pages` pages.
    pub fn scan_finished(&self, pages: u64) {
        self.inner.crawl_pages_per_scan.observe(pages as f64);
    }

    /// A phase of a scan attempt (`crawl`, `analysis`, `store`) took `took`.
    pub fn scan_phase(&self, phase: &'static str, took: std::time::Duration) {
        let labels = PhaseLabels { phase };
        self.inner
            .scan_phases
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// A publishing attempt ended on `platform`: `outcome` is `published`, `retrying`,
    /// `failed` or `cancelled`, `error` the class of what stopped it (`none` when published
    /// or cancelled).
    pub fn publish_attempt(
        &self,
        platform: &'static str,
        outcome: &'static str,
        error: &'static str,
    ) {
        let labels = PublishLabels {
            platform,
            outcome,
            error,
        };
        self.inner.publish_attempts.get_or_create(&labels).inc();
    }

    /// A channel's access token was refreshed (`outcome` `refreshed` or `failed`).
    pub fn token_refresh(&self, platform: &'static str, outcome: &'static str) {
        let labels = PlatformOutcomeLabels { platform, outcome };
        self.inner.token_refreshes.get_or_create(&labels).inc();
    }

    /// A channel was marked disconnected (its grant revoked or refused).
    pub fn disconnection(&self, platform: &'static str) {
        let labels = PlatformLabels { platform };
        self.inner.disconnections.get_or_create(&labels).inc();
    }

    /// An attempt to delete a published post from its platform ended (`outcome` `deleted`,
    /// `retrying` or `failed`: given up, the post stays published).
    pub fn post_deletion(&self, platform: &'static str, outcome: &'static str) {
        let labels = PlatformOutcomeLabels { platform, outcome };
        self.inner.post_deletions.get_or_create(&labels).inc();
    }

    /// Upload bytes stored (`kind`: `multipart` for upload forms, `resumable` for the chunks
    /// of resumable and tus uploads).
    pub fn upload_bytes(&self, kind: &'static str, bytes: u64) {
        let labels = KindLabels { kind };
        self.inner.upload_bytes.get_or_create(&labels).inc_by(bytes);
    }

    /// A blob store operation failed (`create`, `write`, `finish`, `open`, `delete`, `list`,
    /// `clean_partials`).
    pub fn blob_error(&self, operation: &'static str) {
        let labels = OperationLabels { operation };
        self.inner.blob_errors.get_or_create(&labels).inc();
    }
}

impl Families {
    /// One piece: one registration per family, in the order of docs/observability.md's table.
    fn register_into(&self, registry: &mut Registry) {
        registry.register_collector(Box::new(self.requests));
        registry.register(
            "xf_rate_limit_refusals",
            "Requests refused with 429 for their rate limit, by kind (read, write)",
            self.rate_limit_refusals.clone(),
        );
        registry.register(
            "xf_idempotency_replays",
            "Requests answered with the stored response of their Idempotency-Key",
            self.idempotency_replays.clone(),
        );
        registry.register(
            "xf_job_run_duration_seconds",
            "Job attempts by type and outcome (completed, retrying, failed, stopped), and how \
             long each ran",
            self.job_runs.clone(),
        );
        registry.register(
            "xf_job_rescues",
            "Jobs whose worker died, taken up by a rescue pass: requeued or failed",
            self.job_rescues.clone(),
        );
        registry.register(
            "xf_webhook_delivery_duration_seconds",
            "Webhook delivery attempts by outcome (delivered, retrying, failed, disabled by a \
             410) and the receiver's status class (none without an answer), and how long each \
             took",
            self.deliveries.clone(),
        );
        registry.register(
            "xf_crawl_pages",
            "Pages whose body a scan read",
            self.crawl_pages.clone(),
        );
        registry.register(
            "xf_crawl_bytes",
            "Bytes of the pages scans read",
            self.crawl_bytes.clone(),
        );
        registry.register(
            "xf_crawl_fetch_errors",
            "Crawl fetches that failed, by kind",
            self.crawl_fetch_errors.clone(),
        );
        registry.register(
            "xf_render_duration_seconds",
            "How long rendering each page took, whether or not it rendered",
            self.renders.clone(),
        );
        registry.register(
            "xf_renders_in_flight",
            "Pages being rendered now",
            self.renders_in_flight.clone(),
        );
        registry.register(
            "xf_render_failures",
            "Pages that could not be rendered, by kind (timeout, crash, unavailable, browser)",
            self.render_failures.clone(),
        );
        registry.register(
            "xf_crawl_pages_per_scan",
            "Pages audited by each finished scan",
            self.crawl_pages_per_scan.clone(),
        );
        registry.register(
            "xf_scan_phase_duration_seconds",
            "How long the phases of each scan attempt took: crawl (whether or not it reached \
             the site), analysis (the checks) and store (the findings and the completion \
             written)",
            self.scan_phases.clone(),
        );
        registry.register(
            "xf_publish_attempts",
            "Publishing attempts by platform, outcome (published, retrying, failed) and error \
             class",
            self.publish_attempts.clone(),
        );
        registry.register(
            "xf_token_refreshes",
            "Channel access-token refreshes by platform and outcome",
            self.token_refreshes.clone(),
        );
        registry.register(
            "xf_channel_disconnections",
            "Channels marked disconnected, by platform",
            self.disconnections.clone(),
        );
        registry.register(
            "xf_post_deletions",
            "Attempts to delete a published post from its platform, by platform and outcome \
             (deleted, retrying, failed)",
            self.post_deletions.clone(),
        );
        registry.register(
            "xf_upload_bytes",
            "Media bytes stored, by kind of upload (multipart, resumable)",
            self.upload_bytes.clone(),
        );
        registry.register(
            "xf_blob_errors",
            "Blob store operations that failed, by operation",
            self.blob_errors.clone(),
        );
        registry.register_collector(Box::new(Arc::clone(&self.store)));
    }
}

impl Drop for Families {
    fn drop(&mut self) {
        REQUESTS.forget(self.requests.instance);
    }
}

/// Records requests into one [`Metrics`]' `xf_http_request_duration_seconds`. `Copy`: the
/// request path holds it without touching a reference count shared between threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestRecorder {
    instance: u32,
}

impl RequestRecorder {
    /// A request answered: `service` (`api`, `admin`, …), its route `template` (`-` when
    /// none matched), method, status and latency.
    pub fn record(
        self,
        service: &'static str,
        template: &str,
        method: &str,
        status: u16,
        latency: Duration,
    ) {
        let key = (
            self.instance,
            service,
            method_label(method),
            status_class(Some(status)),
        );
        REQUESTS.observe(key, template, latency.as_secs_f64());
    }
}

impl prometheus_client::collector::Collector for RequestRecorder {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        REQUESTS.encode(self.instance, encoder)
    }
}

/// The instance number of the next [`Metrics`].
static NEXT_INSTANCE: AtomicU32 = AtomicU32::new(0);

/// The request histograms of every [`Metrics`] of the process, by instance.
static REQUESTS: LazyLock<RequestStats> = LazyLock::new(RequestStats::new);

/// Request histograms, sharded by thread: a request locks a shard that its own thread is
/// almost alone to use, so the threads serving requests do not pass one lock (or one
/// histogram's) back and forth between their cores on every request. A scrape adds the
/// shards up.
#[derive(Debug)]
struct RequestStats {
    shards: Box<[Shard]>,
}

/// One shard, on a cache line (two, for adjacent-line prefetching) of its own. Its keys are
/// xf's own (fixed names and the route templates axum matched), hashed with [`TrustedHash`].
#[derive(Debug, Default)]
#[repr(align(128))]
struct Shard(Mutex<HashMap<RequestKey, Routes, TrustedHash>>);

/// The observations of one [`RequestKey`], by route template.
type Routes = HashMap<Box<str>, Observations, TrustedHash>;

/// A request's labels but its route (service, method and status class), after the instance
/// of [`Metrics`] it is recorded in.
type RequestKey = (u32, &'static str, &'static str, &'static str);

/// One histogram: the count in each bucket of [`REQUEST_BUCKETS`] and past the last.
#[derive(Debug, Clone, Copy, Default)]
struct Observations {
    buckets: [u64; REQUEST_BUCKETS.len() + 1],
    sum: f64,
}

impl RequestStats {
    fn new() -> Self {
        let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
        let shards = (threads * 4).next_power_of_two();
        RequestStats {
            shards: (0..shards).map(|_| Shard::default()).collect(),
        }
    }

    /// The shard of the calling thread: threads take slots in turn the first time they ask.
    fn shard(&self) -> &Shard {
        static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);
        thread_local! {
            static SLOT: usize = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
        }
        let slot = SLOT.with(|slot| *slot);
        &self.shards[slot % self.shards.len()]
    }

    fn observe(&self, key: RequestKey, route: &str, seconds: f64) {
        let mut shard = self.shard().0.lock().unwrap_or_else(|p| p.into_inner());
        let routes = shard.entry(key).or_default();
        // The route is copied once per shard, the first time it is seen there.
        let observations = match routes.get_mut(route) {
            Some(observations) => observations,
            None => routes.entry(route.into()).or_default(),
        };
        let bucket = REQUEST_BUCKETS
            .iter()
            .position(|upper| seconds <= *upper)
            .unwrap_or(REQUEST_BUCKETS.len());
        observations.buckets[bucket] += 1;
        observations.sum += seconds;
    }

    /// Every shard's observations of `instance` added up, by labels.
    fn totals(&self, instance: u32) -> BTreeMap<(RequestKey, Box<str>), Observations> {
        let mut totals: BTreeMap<(RequestKey, Box<str>), Observations> = BTreeMap::new();
        for shard in &self.shards {
            let shard = shard.0.lock().unwrap_or_else(|p| p.into_inner());
            let of_instance = shard.iter().filter(|(key, _)| key.0 == instance);
            for (key, routes) in of_instance {
                for (route, observations) in routes {
                    let total = totals.entry((*key, route.clone())).or_default();
                    for (sum, n) in total.buckets.iter_mut().zip(observations.buckets) {
                        *sum += n;
                    }
                    total.sum += observations.sum;
                }
            }
        }
        totals
    }
}

impl RequestStats {
    /// Drops what `instance` recorded (its [`Metrics`] is gone).
    fn forget(&self, instance: u32) {
        for shard in &self.shards {
            let mut shard = shard.0.lock().unwrap_or_else(|p| p.into_inner());
            shard.retain(|key, _| key.0 != instance);
        }
    }

    fn encode(&self, instance: u32, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut metric = encoder.encode_descriptor(
            "xf_http_request_duration_seconds",
            "Requests answered, by service, route template, method and status class, and how \
             long each took (its _count is the request count)",
            None,
            MetricType::Histogram,
        )?;
        for (((_, service, method, status), route), observations) in self.totals(instance) {
            let labels = [
                ("service", service),
                ("route", &*route),
                ("method", method),
                ("status", status),
            ];
            let bounds = REQUEST_BUCKETS.iter().copied().chain([f64::INFINITY]);
            let buckets: Vec<(f64, u64)> = bounds.zip(observations.buckets).collect();
            let count = observations.buckets.iter().sum();
            metric
                .encode_family(&labels)?
                .encode_histogram::<NoLabelSet>(observations.sum, count, &buckets, None)?;
        }
        Ok(())
    }
}

/// The store's gauges, as last read.
#[derive(Debug)]
struct StoreCollector {
    store: Arc<dyn Store>,
    /// Held while a read runs: concurrent scrapes wait for it rather than read again.
    read: tokio::sync::Mutex<Option<Instant>>,
    /// What the last read found: `None` when it failed (or before the first).
    last: Mutex<Option<Result<StoreGauges, ()>>>,
}

impl StoreCollector {
    async fn refresh(&self) {
        let mut read_at = self.read.lock().await;
        if read_at.is_some_and(|at| at.elapsed() < STORE_READ_INTERVAL) {
            return;
        }
        let read = self.store.gauges().await;
        if let Err(error) = &read {
            tracing::warn!(%error, "reading the store's gauges for the metrics failed");
        }
        *read_at = Some(Instant::now());
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some(read.map_err(|_| ()));
    }
}

impl prometheus_client::collector::Collector for StoreCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let gauge = |encoder: &mut DescriptorEncoder, name: &str, help: &str, value: u64| {
            let metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            ConstGauge::new(clamp(value)).encode(metric)
        };
        if let Some(read) = &last {
            gauge(
                &mut encoder,
                "xf_store_up",
                "Whether the store answered the metrics' last read (1) or not (0)",
                u64::from(read.is_ok()),
            )?;
        }
        if let Some(Ok(gauges)) = &last {
            let mut metric = encoder.encode_descriptor(
                "xf_jobs",
                "Unfinished jobs by type and state (queued, running, retrying), across every \
                 instance sharing the store",
                None,
                MetricType::Gauge,
            )?;
            for job in &gauges.jobs {
                for (state, value) in [
                    ("queued", job.queued),
                    ("running", job.running),
                    ("retrying", job.retrying),
                ] {
                    let labels = [("type", job.job_type.as_str()), ("state", state)];
                    ConstGauge::new(clamp(value)).encode(metric.encode_family(&labels)?)?;
                }
            }
            gauge(
                &mut encoder,
                "xf_webhook_messages_waiting",
                "Webhook messages not yet delivered (due, retrying or in flight)",
                gauges.webhook_messages_waiting,
            )?;
            gauge(
                &mut encoder,
                "xf_tus_uploads_open",
                "Resumable uploads created and not yet finished or purged",
                gauges.uploads_open,
            )?;
        }
        if let Some(pool) = self.store.pool_status() {
            encode_pool(&mut encoder, pool)?;
        }
        Ok(())
    }
}

fn encode_pool(encoder: &mut DescriptorEncoder, pool: PoolStatus) -> Result<(), std::fmt::Error> {
    for (name, help, value) in [
        (
            "xf_store_pool_connections",
            "Connections the store's pool holds open",
            pool.size,
        ),
        (
            "xf_store_pool_idle_connections",
            "Open connections of the store's pool that are idle",
            pool.idle,
        ),
        (
            "xf_store_pool_max_connections",
            "The most connections the store's pool opens",
            pool.max,
        ),
    ] {
        let metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
        ConstGauge::new(i64::from(value)).encode(metric)?;
    }
    let metric = encoder.encode_descriptor(
        "xf_store_statement_errors",
        "Store statements that failed (an outage or a bug; unique violations are not counted)",
        None,
        MetricType::Counter,
    )?;
    ConstCounter::new(pool.statement_errors).encode(metric)
}

fn clamp(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A page being rendered: counted in flight until dropped, then timed.
#[derive(Debug)]
pub struct RenderTimer {
    metrics: Metrics,
    began: Instant,
}

impl Drop for RenderTimer {
    fn drop(&mut self) {
        let families = &self.metrics.inner;
        families.renders_in_flight.dec();
        families.renders.observe(self.began.elapsed().as_secs_f64());
    }
}
