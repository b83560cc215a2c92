//! The storage seam: one trait per aggregate, and [`Store`], their sum.
//!
//! Every rule that must hold across app instances sharing one store is an operation here that
//! the backend performs atomically: property uniqueness, the scan quota, job claiming and
//! cancellation, attempt tokens, rate-limit counters, idempotency claims and the key cap. The
//! use cases in [`crate::Xf`] never read-then-write for those rules. The conformance suite in
//! `xf_core::testing` (feature `testing`) pins down the behaviour of each operation; both
//! backends run all of it.
//!
//! A part of the service that needs one aggregate holds just that trait: the job runtime
//! holds an `Arc<dyn QueueStore>` and an `Arc<dyn GuardStore>` (for its purges), which an
//! `Arc<dyn Store>` turns into by upcasting.

mod events;
mod gsc;
mod guards;
mod issues;
mod jobs;
mod media;
mod organizations;
mod properties;
mod queue;
mod reports;
mod schedules;
mod text;
mod usage;
mod webhooks;

use async_trait::async_trait;

use crate::error::StoreError;
use crate::time::Timestamp;

pub use events::EventStore;
pub use gsc::GscStore;
pub use guards::{
    GuardStore, IdempotencyClaim, IdempotencyRequest, KeptResponse, RateBucket, RateOutcome,
    StoredResponse,
};
pub use issues::{
    subject_is_address, FetchedPage, IssueFilter, IssueStore, NewFinding, ScanFindings,
};
pub use jobs::{check_new_job, CancelOutcome, JobFilter, JobStore};
pub use media::{
    edit_refused_running, Appended, MediaCancel, MediaDelete, MediaEdited, MediaFilter, MediaStore,
    PostsDelete,
};
pub use organizations::OrganizationStore;
pub use properties::PropertyStore;
pub use queue::{
    lease_expired_error, Attempt, AttemptOutcome, AttemptState, AttemptToken, ClaimRequest,
    ClaimedJob, Finish, QueueListener, QueueSignal, QueueStore, RescueReport, LEASE_EXPIRED_ERROR,
};
pub use reports::ReportStore;
pub use schedules::{ScheduleStore, SlotClaim};
pub use text::{stored, stored_all, stored_str, StoredText};

/// What a backend's write methods use to keep [`StoredText`]'s rule (`use
/// xf_core::store::text_rule::*;`).
pub mod text_rule {
    pub use super::text::{stored, stored_all, stored_str, StoredText};
}
pub use usage::UsageStore;
pub use webhooks::{
    ClaimedDelivery, DeliveryRecord, NextStep, SecretRotation, WebhookChanges, WebhookStore,
};

/// Every storage trait, to call store methods on a concrete backend (`use
/// xf_core::store::prelude::*;`). Through `Arc<dyn Store>` they are callable without it.
pub mod prelude {
    pub use super::{
        EventStore, GscStore, GuardStore, IssueStore, JobStore, MediaStore, OrganizationStore,
        PropertyStore, QueueStore, ReportStore, ScheduleStore, Store, UsageStore, WebhookStore,
    };
}

/// The result type of storage operations.
pub type StoreResult<T> = Result<T, StoreError>;

/// A position in a newest-first list: items strictly older than this are next.
///
/// Ids (and report tokens) compare as byte strings, in Rust's `String` order; an SQL backend
/// compares them with `COLLATE "C"`, so `Z` sorts before `a` everywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct After {
    /// The last item's `createdAt`.
    pub created_at: Timestamp,
    /// The last item's id (or token, for reports), the tie-breaker.
    pub id: String,
}

/// One page request: ordered by `created_at` desc, then id desc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    /// At most this many items. Callers ask for one more than they show, to learn whether
    /// another page exists.
    pub limit: usize,
    /// Start after this position; `None` for the first page.
    pub after: Option<After>,
}

/// A storage backend: every aggregate's store. Object-safe: the facade holds an
/// `Arc<dyn Store>`.
#[async_trait]
pub trait Store:
    OrganizationStore
    + PropertyStore
    + JobStore
    + QueueStore
    + IssueStore
    + ReportStore
    + UsageStore
    + GuardStore
    + EventStore
    + WebhookStore
    + GscStore
    + MediaStore
    + ScheduleStore
    + std::fmt::Debug
{
    /// Checks that the backend answers.
    async fn ping(&self) -> StoreResult<()>;

    /// Whether the backend's schema is the one this build expects: on PostgreSQL, every
    /// migration of this build applied. A backend without a schema keeps the default, `true`.
    async fn schema_is_current(&self) -> StoreResult<bool> {
        Ok(true)
    }

    /// What the queues hold now, for the metrics a scrape reports: the unfinished jobs by type
    /// and state, the webhook messages waiting to be delivered and the resumable uploads
    /// open. One cheap read (on PostgreSQL, one statement over the partial indexes of the
    /// unfinished rows); a scrape caches it for a few seconds.
    async fn gauges(&self) -> StoreResult<StoreGauges>;

    /// The backend's connection pool and statement errors, if it has them (PostgreSQL does;
    /// the memory store has neither, the default).
    fn pool_status(&self) -> Option<PoolStatus> {
        None
    }
}

/// What [`Store::gauges`] reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreGauges {
    /// The unfinished jobs of each type that has any, sorted by type.
    pub jobs: Vec<JobGauge>,
    /// Webhook messages not yet delivered (waiting, retrying or in flight).
    pub webhook_messages_waiting: u64,
    /// Resumable uploads created and not yet finished or expired-and-purged.
    pub uploads_open: u64,
}

/// The unfinished jobs of one type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobGauge {
    /// The job type (`seo-scan`, `media-publish`, a host's own).
    pub job_type: String,
    /// Pending jobs no attempt has started.
    pub queued: u64,
    /// Jobs an attempt is running (`processing`).
    pub running: u64,
    /// Pending jobs waiting for another attempt after one failed or was given back.
    pub retrying: u64,
}

/// A backend's connection pool, and how many of its statements failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStatus {
    /// Connections open (idle and in use).
    pub size: u32,
    /// Connections open and idle.
    pub idle: u32,
    /// The pool's upper bound.
    pub max: u32,
    /// Statements that failed for any reason but a unique violation (an outage, a bug), since
    /// the store was made.
    pub statement_errors: u64,
}
