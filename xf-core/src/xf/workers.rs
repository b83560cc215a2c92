//! Starting the background runtime over this facade: its handlers, its upkeep and the webhook
//! engine.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::{Xf, IDEMPOTENCY_TTL_HOURS};
use crate::runtime::{self, Parts, Service, Signals, Upkeep, WorkerHandle, WorkerOptions};
use crate::time::Timestamp;
use crate::webhooks::engine::{self as webhook_engine, Delivery, EngineOptions};

/// How long rate-limit windows are kept: the longest window (a day) and a day of margin.
const RATE_WINDOW_RETENTION: chrono::Duration = chrono::Duration::days(2);

/// How old a blob must be before the sweep may delete it for nothing naming it: far longer
/// than the moment between finishing a blob and recording it.
const BLOB_SWEEP_GRACE: Duration = Duration::from_secs(3600);

/// Expired resumable uploads deleted per purge pass (with their chunks' blobs).
const PURGE_BATCH: usize = 1_000;

impl Xf {
    /// Starts the background runtime on the current Tokio runtime. See [`crate::runtime`].
    /// Unless the options name a handler for `seo-scan` (or run no jobs), the facade's own
    /// scan handler (`Xf::scan_handler`, feature `crawler`) runs scans, and its
    /// [`publish handler`](Xf::publish_handler) runs `media-publish` and `media-delete-post`
    /// jobs.
    ///
    /// The returned [`WorkerHandle`] stops the runtime with [`WorkerHandle::shutdown`]:
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// use xf_core::runtime::WorkerOptions;
    /// use xf_core::Xf;
    /// use xf_storage_memory::MemoryStore;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let xf = Xf::builder(Arc::new(MemoryStore::new()))
    ///     .secret_key(Xf::random_secret_key())
    ///     .public_base_url("https://app.example.com")
    ///     .build()
    ///     .expect("a complete configuration");
    /// let workers = xf.spawn_workers(WorkerOptions::new());
    /// // ... serve requests until the process is told to stop, then:
    /// let report = workers.shutdown(Duration::from_secs(1)).await;
    /// assert_eq!(report.released, 0);
    /// # }
    /// ```
    pub fn spawn_workers(&self, mut options: WorkerOptions) -> WorkerHandle {
        #[cfg(feature = "crawler")]
        if options.run_jobs && !options.handlers.contains_key(crate::model::SEO_SCAN) {
            if let Some(scans) = self.scan_handler() {
                options = options.handler(crate::model::SEO_SCAN, scans);
            }
        }
        for job_type in [
            crate::media::publish::MEDIA_PUBLISH,
            crate::model::media::MEDIA_DELETE_POST,
        ] {
            if options.run_jobs && !options.handlers.contains_key(job_type) {
                options = options.handler(job_type, self.publish_handler());
            }
        }
        let mut services: Vec<Service> = Vec::new();
        let delivers = options.run_jobs && options.webhook_concurrency > 0;
        if let Some(transport) = self.webhook_transport().filter(|_| delivers) {
            let delivery = Delivery {
                store: self.store().clone(),
                clock: Arc::clone(&self.inner.clock),
                secrets: self.secret_box().clone(),
                transport: Arc::clone(transport),
                metrics: self.metrics().clone(),
            };
            let engine = EngineOptions {
                concurrency: options.webhook_concurrency,
                poll_interval: options.poll_interval,
            };
            services.push(Box::new(move |signals: Signals| {
                webhook_engine::spawn(delivery, engine, signals)
            }));
        }
        let scheduler = self.clone();
        let every = options.schedule_interval;
        services.push(Box::new(move |signals: Signals| {
            vec![tokio::spawn(schedule_loop(
                scheduler,
                every,
                signals.stopped,
            ))]
        }));
        let upkeep = Purges {
            xf: self.clone(),
            blob_sweep_interval: options.blob_sweep_interval,
            last_sweep: Mutex::new(None),
        };
        let parts = Parts {
            queue: self.store().clone(),
            clock: Arc::clone(&self.inner.clock),
            upkeep: Box::new(upkeep),
            services,
            metrics: self.metrics().clone(),
        };
        let handle = runtime::start(parts, options);
        *self.runtime_stopped() = Some(handle.stopped());
        handle
    }

    /// Turns true when the runtime this facade started last is stopping, or closes when its
    /// handle is gone; `None` before any.
    pub(super) fn runtime_stopped(
        &self,
    ) -> std::sync::MutexGuard<'_, Option<tokio::sync::watch::Receiver<bool>>> {
        self.inner
            .runtime_stopped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }
}

/// Runs the scheduler pass every `every` until the runtime stops.
async fn schedule_loop(xf: Xf, every: Duration, mut stopped: tokio::sync::watch::Receiver<bool>) {
    loop {
        if *stopped.borrow() {
            return;
        }
        match xf.run_due_schedules().await {
            Ok(tick) if tick == crate::api::ScheduleTick::default() => {}
            Ok(tick) => tracing::info!(?tick, "claimed due scheduled scans"),
            Err(error) => tracing::warn!(%error, "the scheduler pass failed"),
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            changed = stopped.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
    }
}

/// The facade's upkeep: deletes rate-limit windows, idempotency records, old delivery log
/// rows and expired resumable uploads, and sweeps the blob store (every
/// `blob_sweep_interval`; in between, it only cleans the partial files of dead writers).
#[derive(Debug)]
struct Purges {
    xf: Xf,
    blob_sweep_interval: Duration,
    last_sweep: Mutex<Option<tokio::time::Instant>>,
}

impl Purges {
    /// Whether this pass sweeps the blob store (and notes that it does).
    fn sweeps_now(&self) -> bool {
        let mut last = self.last_sweep.lock().unwrap_or_else(|p| p.into_inner());
        let due = last.is_none_or(|at| at.elapsed() >= self.blob_sweep_interval);
        if due {
            *last = Some(tokio::time::Instant::now());
        }
        due
    }
}

#[async_trait]
impl Upkeep for Purges {
    async fn run(&self, now: Timestamp) {
        let windows_before = now.plus(-RATE_WINDOW_RETENTION);
        let idempotency_before = now.plus(chrono::Duration::hours(-IDEMPOTENCY_TTL_HOURS));
        let store = self.xf.store();
        match store
            .purge_expired(windows_before, idempotency_before)
            .await
        {
            Ok(0) => {}
            Ok(rows) => tracing::info!(
                rows,
                "purged expired rate-limit windows and idempotency records"
            ),
            Err(error) => tracing::warn!(%error, "retention purge failed"),
        }
        match store
            .purge_deliveries(now.plus(-crate::webhooks::LOG_RETENTION))
            .await
        {
            Ok(0) => {}
            Ok(rows) => tracing::info!(rows, "purged webhook delivery log rows older than 30 days"),
            Err(error) => tracing::warn!(%error, "purging the webhook delivery log failed"),
        }
        match self.xf.purge_expired_uploads(PURGE_BATCH).await {
            Ok(0) => {}
            Ok(uploads) => tracing::info!(uploads, "purged resumable uploads older than 24 hours"),
            Err(error) => tracing::warn!(%error, "purging expired resumable uploads failed"),
        }
        if self.sweeps_now() {
            match self.xf.sweep_blobs(BLOB_SWEEP_GRACE).await {
                Ok(report) if report.orphans + report.partial_files == 0 => {}
                Ok(report) => tracing::info!(?report, "deleted blobs that nothing names"),
                Err(error) => tracing::warn!(%error, "sweeping the blob store failed"),
            }
        } else {
            match self.xf.clean_partial_blobs().await {
                Ok(0) => {}
                Ok(files) => tracing::info!(files, "removed the partial files of dead writers"),
                Err(error) => tracing::warn!(%error, "cleaning partial blob files failed"),
            }
        }
    }
}
