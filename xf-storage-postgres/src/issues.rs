//! Issues.

use async_trait::async_trait;
use sqlx::QueryBuilder;
use xf_core::ids::{IssueId, PropertyId};
use xf_core::model::{Issue, IssueSummary};
use xf_core::store::{IssueFilter, IssueStore, PageRequest, StoreResult};
use xf_core::time::Timestamp;

use crate::error::store_error;
use crate::rows::{self, at, at_opt, RowExt, ISSUE_COLUMNS};
use crate::{all, list_issues_query, one, PgStore};

#[async_trait]
impl IssueStore for PgStore {
    async fn insert_issue(&self, issue: &Issue) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO issues (id, organization_id, property_id, job_id, scan_kind, issue_type, \
             severity, url, message, status, created_at, last_seen_at, resolved_at, fixed_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
        )
        .bind(issue.id.as_str())
        .bind(issue.organization_id.as_str())
        .bind(issue.property_id.as_str())
        .bind(issue.job_id.as_str())
        .bind(issue.scan_kind.as_str())
        .bind(&issue.issue_type)
        .bind(issue.severity.as_str())
        .bind(&issue.url)
        .bind(&issue.message)
        .bind(issue.status.as_str())
        .bind(at(issue.created_at))
        .bind(at(issue.last_seen_at))
        .bind(at_opt(issue.resolved_at))
        .bind(at_opt(issue.fixed_at))
        .execute(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(())
    }

    async fn get_issue(&self, id: &IssueId) -> StoreResult<Option<Issue>> {
        let row = sqlx::query(&format!("SELECT {ISSUE_COLUMNS} FROM issues WHERE id = $1"))
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(store_error)?;
        one(row, rows::issue)
    }

    async fn set_issue_fixed(&self, id: &IssueId, now: Timestamp) -> StoreResult<Option<Issue>> {
        let row = sqlx::query(&format!(
            "UPDATE issues SET status = 'fixed', fixed_at = COALESCE(fixed_at, $2) \
             WHERE id = $1 RETURNING {ISSUE_COLUMNS}"
        ))
        .bind(id.as_str())
        .bind(at(now))
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::issue)
    }

    async fn list_issues(
        &self,
        property_id: &PropertyId,
        filter: &IssueFilter,
        page: &PageRequest,
    ) -> StoreResult<Vec<Issue>> {
        let mut builder = QueryBuilder::new("");
        list_issues_query(&mut builder, property_id.as_str(), filter, page);
        let rows = builder
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(store_error)?;
        all(rows, rows::issue)
    }

    async fn issue_summary(&self, property_id: &PropertyId) -> StoreResult<IssueSummary> {
        let row = sqlx::query(
            "SELECT count(*) FILTER (WHERE status = 'open') AS open, \
                    count(*) FILTER (WHERE status = 'resolved') AS resolved, \
                    count(*) FILTER (WHERE status = 'fixed') AS fixed, \
                    count(*) AS total \
             FROM issues WHERE property_id = $1",
        )
        .bind(property_id.as_str())
        .fetch_one(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(IssueSummary {
            open: row.count("open")?,
            resolved: row.count("resolved")?,
            fixed: row.count("fixed")?,
            total: row.count("total")?,
        })
    }
}
