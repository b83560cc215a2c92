//! Issues.

use async_trait::async_trait;
use xf_core::ids::{IssueId, PropertyId};
use xf_core::model::{Issue, IssueStatus, IssueSummary};
use xf_core::store::{IssueFilter, IssueStore, PageRequest, StoreResult};
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::MemoryStore;

#[async_trait]
impl IssueStore for MemoryStore {
    async fn insert_issue(&self, issue: &Issue) -> StoreResult<()> {
        let mut state = self.write();
        let (owner, at, id) = (
            issue.property_id.as_str(),
            issue.created_at,
            issue.id.as_str(),
        );
        if !state.issues.insert(owner, at, id, issue) {
            return Err(StoreError::Duplicate("issue id"));
        }
        Ok(())
    }

    async fn get_issue(&self, id: &IssueId) -> StoreResult<Option<Issue>> {
        Ok(self.read().issues.get(id.as_str()))
    }

    async fn set_issue_fixed(&self, id: &IssueId, now: Timestamp) -> StoreResult<Option<Issue>> {
        Ok(self.write().issues.update(id.as_str(), |issue| {
            issue.status = IssueStatus::Fixed;
            issue.fixed_at.get_or_insert(now);
        }))
    }

    async fn list_issues(
        &self,
        property_id: &PropertyId,
        filter: &IssueFilter,
        page: &PageRequest,
    ) -> StoreResult<Vec<Issue>> {
        let state = self.read();
        state.issues.page(property_id.as_str(), page, |i| {
            filter.scan_kind.is_none_or(|k| i.scan_kind == k)
                && filter.status.is_none_or(|s| i.status == s)
        })
    }

    async fn issue_summary(&self, property_id: &PropertyId) -> StoreResult<IssueSummary> {
        let state = self.read();
        let mut summary = IssueSummary::default();
        for issue in state
            .issues
            .values()
            .filter(|i| &i.property_id == property_id)
        {
            match issue.status {
                IssueStatus::Open => summary.open += 1,
                IssueStatus::Resolved => summary.resolved += 1,
                IssueStatus::Fixed => summary.fixed += 1,
            }
            summary.total += 1;
        }
        Ok(summary)
    }
}
