//! The event outbox.

use async_trait::async_trait;
use xf_core::ids::{EventId, JobId};
use xf_core::model::Event;
use xf_core::store::{EventStore, StoreResult};

use crate::MemoryStore;

#[async_trait]
impl EventStore for MemoryStore {
    async fn list_events(&self, after: Option<&EventId>, limit: usize) -> StoreResult<Vec<Event>> {
        let state = self.read();
        // Events are appended with increasing ids, so the list is sorted by id.
        let start = after.map_or(0, |after| state.events.partition_point(|e| &e.id <= after));
        Ok(state.events[start..].iter().take(limit).cloned().collect())
    }

    async fn job_events(&self, job_id: &JobId) -> StoreResult<Vec<Event>> {
        Ok(self
            .read()
            .events
            .iter()
            .filter(|e| e.job_id() == Some(job_id))
            .cloned()
            .collect())
    }
}
