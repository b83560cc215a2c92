//! Monthly usage meters.

use async_trait::async_trait;
use xf_core::ids::OrganizationId;
use xf_core::model::UsageCounters;
use xf_core::store::{StoreResult, UsageStore};

use crate::error::store_error;
use crate::rows::{self, big, USAGE_COLUMNS};
use crate::{one, PgStore};

#[async_trait]
impl UsageStore for PgStore {
    async fn get_usage(
        &self,
        organization_id: &OrganizationId,
        month: &str,
    ) -> StoreResult<UsageCounters> {
        let row = sqlx::query(&format!(
            "SELECT {USAGE_COLUMNS} FROM usage_counters WHERE organization_id = $1 AND month = $2"
        ))
        .bind(organization_id.as_str())
        .bind(month)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(one(row, rows::usage)?.unwrap_or_default())
    }

    async fn add_usage(
        &self,
        organization_id: &OrganizationId,
        month: &str,
        delta: &UsageCounters,
    ) -> StoreResult<UsageCounters> {
        // One upsert: concurrent additions from any instance all count. Sums saturate at the
        // largest bigint instead of failing.
        let row = sqlx::query(&format!(
            "INSERT INTO usage_counters AS u (organization_id, month, scans, ai_input_tokens, \
             ai_output_tokens, redirects_created, images_optimized) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (organization_id, month) DO UPDATE SET \
             scans = LEAST(u.scans::numeric + EXCLUDED.scans, {max})::bigint, \
             ai_input_tokens = LEAST(u.ai_input_tokens::numeric + EXCLUDED.ai_input_tokens, {max})::bigint, \
             ai_output_tokens = LEAST(u.ai_output_tokens::numeric + EXCLUDED.ai_output_tokens, {max})::bigint, \
             redirects_created = LEAST(u.redirects_created::numeric + EXCLUDED.redirects_created, {max})::bigint, \
             images_optimized = LEAST(u.images_optimized::numeric + EXCLUDED.images_optimized, {max})::bigint \
             RETURNING {USAGE_COLUMNS}",
            max = i64::MAX
        ))
        .bind(organization_id.as_str())
        .bind(month)
        .bind(big(delta.scans))
        .bind(big(delta.ai_input_tokens))
        .bind(big(delta.ai_output_tokens))
        .bind(big(delta.redirects_created))
        .bind(big(delta.images_optimized))
        .fetch_one(&self.pool)
        .await
        .map_err(store_error)?;
        rows::usage(&row)
    }
}
