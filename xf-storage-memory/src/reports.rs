//! Shared reports.

use async_trait::async_trait;
use xf_core::ids::OrganizationId;
use xf_core::model::Report;
use xf_core::store::{PageRequest, ReportStore, StoreResult};
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::MemoryStore;

#[async_trait]
impl ReportStore for MemoryStore {
    async fn insert_report(&self, report: &Report) -> StoreResult<()> {
        let mut state = self.write();
        let (owner, at, token) = (
            report.organization_id.as_str(),
            report.created_at,
            report.token.as_str(),
        );
        if !state.reports.insert(owner, at, token, report) {
            return Err(StoreError::Duplicate("report token"));
        }
        Ok(())
    }

    async fn get_report(&self, token: &str) -> StoreResult<Option<Report>> {
        Ok(self.read().reports.get(token))
    }

    async fn list_live_reports(
        &self,
        organization_id: &OrganizationId,
        now: Timestamp,
        page: &PageRequest,
    ) -> StoreResult<Vec<Report>> {
        let state = self.read();
        state
            .reports
            .page(organization_id.as_str(), page, |r| r.expires_at > now)
    }

    async fn increment_report_views(&self, token: &str) -> StoreResult<Option<Report>> {
        Ok(self.write().reports.update(token, |r| r.view_count += 1))
    }
}
