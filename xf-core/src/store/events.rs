//! The event outbox.
//!
//! Every change of a job to a final state writes its [`Event`] in the same transaction as the
//! change (see [`JobStore::cancel_job`](super::JobStore::cancel_job) and the engine's writes
//! in [`QueueStore`](super::QueueStore)): no change without its event, no event without its
//! change. Webhook delivery reads events in id order.

use async_trait::async_trait;

use super::StoreResult;
use crate::ids::{EventId, JobId};
use crate::model::Event;

/// The event outbox.
#[async_trait]
pub trait EventStore: Send + Sync {
    /// Up to `limit` events with ids greater than `after` (all, when `None`), in id order.
    async fn list_events(&self, after: Option<&EventId>, limit: usize) -> StoreResult<Vec<Event>>;

    /// The events of one job, in id order.
    async fn job_events(&self, job_id: &JobId) -> StoreResult<Vec<Event>>;
}
