//! Monthly usage meters.

use async_trait::async_trait;
use xf_core::ids::OrganizationId;
use xf_core::model::UsageCounters;
use xf_core::store::{StoreResult, UsageStore};

use crate::{MemoryStore, State};

#[async_trait]
impl UsageStore for MemoryStore {
    async fn get_usage(
        &self,
        organization_id: &OrganizationId,
        month: &str,
    ) -> StoreResult<UsageCounters> {
        Ok(self
            .read()
            .usage
            .get(&(organization_id.to_string(), month.to_owned()))
            .copied()
            .unwrap_or_default())
    }

    async fn add_usage(
        &self,
        organization_id: &OrganizationId,
        month: &str,
        delta: &UsageCounters,
    ) -> StoreResult<UsageCounters> {
        Ok(self.write().add_usage(organization_id, month, delta))
    }
}

impl State {
    /// Adds `delta` to the organization's meters of `month`; the totals.
    pub(crate) fn add_usage(
        &mut self,
        organization_id: &OrganizationId,
        month: &str,
        delta: &UsageCounters,
    ) -> UsageCounters {
        let entry = self
            .usage
            .entry((organization_id.to_string(), month.to_owned()))
            .or_default();
        *entry = entry.plus(delta);
        *entry
    }
}
