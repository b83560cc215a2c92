//! Shared reports.

use async_trait::async_trait;
use sqlx::QueryBuilder;
use xf_core::ids::OrganizationId;
use xf_core::model::Report;
use xf_core::store::{PageRequest, ReportStore, StoreResult};
use xf_core::time::Timestamp;

use crate::error::store_error;
use crate::rows::{self, at, REPORT_COLUMNS};
use crate::{all, list_live_reports_query, one, PgStore};

#[async_trait]
impl ReportStore for PgStore {
    async fn insert_report(&self, report: &Report) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO reports \
             (token, organization_id, property_id, scan_id, expires_at, view_count, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&report.token)
        .bind(report.organization_id.as_str())
        .bind(report.property_id.as_str())
        .bind(report.scan_id.as_str())
        .bind(at(report.expires_at))
        .bind(rows::signed(report.view_count, "view count")?)
        .bind(at(report.created_at))
        .execute(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(())
    }

    async fn get_report(&self, token: &str) -> StoreResult<Option<Report>> {
        let row = sqlx::query(&format!(
            "SELECT {REPORT_COLUMNS} FROM reports WHERE token = $1"
        ))
        .bind(token)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::report)
    }

    async fn list_live_reports(
        &self,
        organization_id: &OrganizationId,
        now: Timestamp,
        page: &PageRequest,
    ) -> StoreResult<Vec<Report>> {
        let mut builder = QueryBuilder::new("");
        list_live_reports_query(&mut builder, organization_id.as_str(), now, page);
        let rows = builder
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(store_error)?;
        all(rows, rows::report)
    }

    async fn increment_report_views(&self, token: &str) -> StoreResult<Option<Report>> {
        let row = sqlx::query(&format!(
            "UPDATE reports SET view_count = view_count + 1 WHERE token = $1 \
             RETURNING {REPORT_COLUMNS}"
        ))
        .bind(token)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::report)
    }
}
