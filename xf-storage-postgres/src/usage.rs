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
        add_usage_in(&self.pool, organization_id, month, delta).await
    }
}

/// The upsert of [`add_usage_in`], made once: one statement, so concurrent additions from any
/// instance all count; sums saturate at the largest bigint instead of failing.
static ADD_USAGE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let updates: Vec<String> = USAGE_COLUMNS
        .split(", ")
        .map(|column| {
            format!(
                "{column} = LEAST(u.{column}::numeric + EXCLUDED.{column}, {max})::bigint",
                max = i64::MAX
            )
        })
        .collect();
    format!(
        "INSERT INTO usage_counters AS u (organization_id, month, {USAGE_COLUMNS}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
         ON CONFLICT (organization_id, month) DO UPDATE SET {} \
         RETURNING {USAGE_COLUMNS}",
        updates.join(", ")
    )
});

/// Adds `delta` to the organization's meters of `month` through `executor` (the pool, or a
/// transaction whose change the usage belongs to); the totals.
pub(crate) async fn add_usage_in<'e>(
    executor: impl sqlx::PgExecutor<'e>,
    organization_id: &OrganizationId,
    month: &str,
    delta: &UsageCounters,
) -> StoreResult<UsageCounters> {
    let row = sqlx::query(&ADD_USAGE)
        .bind(organization_id.as_str())
        .bind(month)
        .bind(big(delta.scans))
        .bind(big(delta.ai_input_tokens))
        .bind(big(delta.ai_output_tokens))
        .bind(big(delta.redirects_created))
        .bind(big(delta.images_optimized))
        .bind(big(delta.media_uploads))
        .bind(big(delta.media_bytes))
        .bind(big(delta.posts_published))
        .bind(big(delta.posts_deleted))
        .fetch_one(executor)
        .await
        .map_err(store_error)?;
    rows::usage(&row)
}
