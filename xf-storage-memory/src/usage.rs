//! Monthly usage meters.

use async_trait::async_trait;
use xf_core::ids::OrganizationId;
use xf_core::model::UsageCounters;
use xf_core::store::{StoreResult, UsageStore};

use crate::MemoryStore;

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
        let mut state = self.write();
        let entry = state
            .usage
            .entry((organization_id.to_string(), month.to_owned()))
            .or_default();
        *entry = entry.plus(delta);
        Ok(*entry)
    }
}
