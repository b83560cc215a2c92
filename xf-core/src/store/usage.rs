//! Monthly usage meters.

use async_trait::async_trait;

use super::StoreResult;
use crate::ids::OrganizationId;
use crate::model::UsageCounters;

/// Monthly usage meters, per organization.
#[async_trait]
pub trait UsageStore: Send + Sync {
    /// The organization's counters for `month` (`YYYY-MM`); zeros when none were recorded.
    async fn get_usage(
        &self,
        organization_id: &OrganizationId,
        month: &str,
    ) -> StoreResult<UsageCounters>;

    /// Adds `delta` to the organization's counters for `month`; returns the new totals.
    async fn add_usage(
        &self,
        organization_id: &OrganizationId,
        month: &str,
        delta: &UsageCounters,
    ) -> StoreResult<UsageCounters>;
}
