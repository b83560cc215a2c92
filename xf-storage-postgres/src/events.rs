//! The event outbox.

use async_trait::async_trait;
use xf_core::ids::{EventId, JobId};
use xf_core::model::Event;
use xf_core::store::{EventStore, StoreResult};

use crate::error::store_error;
use crate::rows::{self, EVENT_COLUMNS};
use crate::{all, PgStore};

#[async_trait]
impl EventStore for PgStore {
    async fn list_events(&self, after: Option<&EventId>, limit: usize) -> StoreResult<Vec<Event>> {
        let rows = sqlx::query(&format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE id > $1 ORDER BY id LIMIT $2"
        ))
        .bind(after.map_or("", EventId::as_str))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(rows, rows::event)
    }

    async fn job_events(&self, job_id: &JobId) -> StoreResult<Vec<Event>> {
        let rows = sqlx::query(&format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE job_id = $1 ORDER BY id"
        ))
        .bind(job_id.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(rows, rows::event)
    }
}
