//! Organizations and API keys.

use async_trait::async_trait;
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::Query;
use sqlx::types::Json;
use sqlx::Postgres;
use sqlx::QueryBuilder;
use xf_core::ids::{ApiKeyId, OrganizationId};
use xf_core::model::{ApiKey, Organization};
use xf_core::plans::LimitOverrides;
use xf_core::store::text_rule::*;
use xf_core::store::{OrganizationStore, PageRequest, StoreResult};
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::error::store_error;
use crate::rows::{self, at, at_opt, RowExt, API_KEY_COLUMNS, ORGANIZATION_COLUMNS};
use crate::{all, one, push_page, PgStore, KEY_CAP_LOCK_CLASS};

/// The `INSERT` of an organization.
fn insert_organization_query(organization: &Organization) -> Query<'_, Postgres, PgArguments> {
    sqlx::query(
        "INSERT INTO organizations (id, name, plan, shop_domain, limits, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(organization.id.as_str())
    .bind(&organization.name)
    .bind(&organization.plan)
    .bind(&organization.shop_domain)
    .bind(Json(organization.limits))
    .bind(at(organization.created_at))
}

/// The `INSERT` of an API key.
fn insert_api_key_query(key: &ApiKey) -> Query<'_, Postgres, PgArguments> {
    sqlx::query(
        "INSERT INTO api_keys \
           (id, organization_id, mode, key_hash, prefix, created_at, revoked_at, last_used_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(key.id.as_str())
    .bind(key.organization_id.as_str())
    .bind(key.mode.as_str())
    .bind(&key.key_hash)
    .bind(stored_str(&key.prefix).into_owned())
    .bind(at(key.created_at))
    .bind(at_opt(key.revoked_at))
    .bind(at_opt(key.last_used_at))
}

/// The organization columns of `find_api_key`'s join, prefixed with `org_`.
fn prefixed_organization(row: &PgRow) -> StoreResult<Organization> {
    Ok(Organization {
        id: row.id("org_id")?,
        name: row.col("org_name")?,
        plan: row.col("org_plan")?,
        shop_domain: row.col("org_shop_domain")?,
        limits: row.col::<Json<LimitOverrides>>("org_limits")?.0,
        created_at: row.timestamp("org_created_at")?,
    })
}

#[async_trait]
impl OrganizationStore for PgStore {
    async fn insert_organization(&self, organization: &Organization) -> StoreResult<()> {
        let organization = &*stored(organization);
        insert_organization_query(organization)
            .execute(&self.pool)
            .await
            .map_err(store_error)?;
        Ok(())
    }

    async fn insert_organization_with_keys(
        &self,
        organization: &Organization,
        keys: &[ApiKey],
    ) -> StoreResult<()> {
        let organization = &*stored(organization);
        // A failing insert returns early and drops the transaction, which rolls it back.
        let mut tx = self.begin().await?;
        insert_organization_query(organization)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        for key in keys {
            insert_api_key_query(key)
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
        }
        tx.commit().await.map_err(store_error)
    }

    async fn get_organization(&self, id: &OrganizationId) -> StoreResult<Option<Organization>> {
        let row = sqlx::query(&format!(
            "SELECT {ORGANIZATION_COLUMNS} FROM organizations WHERE id = $1"
        ))
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::organization)
    }

    async fn list_organizations(&self, page: &PageRequest) -> StoreResult<Vec<Organization>> {
        let mut builder = QueryBuilder::new(format!(
            "SELECT {ORGANIZATION_COLUMNS} FROM organizations WHERE true"
        ));
        push_page(&mut builder, "id", page);
        let rows = builder
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(store_error)?;
        all(rows, rows::organization)
    }

    async fn find_organization_by_name(&self, name: &str) -> StoreResult<Option<Organization>> {
        let name = &*stored_str(name);
        let row = sqlx::query(&format!(
            "SELECT {ORGANIZATION_COLUMNS} FROM organizations WHERE name = $1 \
             ORDER BY created_at, id LIMIT 1"
        ))
        .bind(name)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::organization)
    }

    async fn update_organization(
        &self,
        id: &OrganizationId,
        plan: Option<&str>,
        limits: Option<&LimitOverrides>,
    ) -> StoreResult<Option<Organization>> {
        let plan = plan.map(stored_str);
        let plan = plan.as_deref();
        let row = sqlx::query(&format!(
            "UPDATE organizations SET plan = COALESCE($2, plan), limits = COALESCE($3, limits) \
             WHERE id = $1 RETURNING {ORGANIZATION_COLUMNS}"
        ))
        .bind(id.as_str())
        .bind(plan)
        .bind(limits.map(|limits| Json(*limits)))
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::organization)
    }

    async fn insert_api_key(&self, key: &ApiKey, max_active: u64) -> StoreResult<()> {
        let mut tx = self.begin().await?;
        // Serialises key creation per organization across instances. An advisory lock rather
        // than a lock on the organization row: it works whether or not that row exists and
        // does not block updates of the organization.
        sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
            .bind(KEY_CAP_LOCK_CLASS)
            .bind(key.organization_id.as_str())
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        // Insert first, so a duplicate is reported as such even when the cap is also reached.
        insert_api_key_query(key)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        let others_active: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM api_keys \
             WHERE organization_id = $1 AND revoked_at IS NULL AND id <> $2",
        )
        .bind(key.organization_id.as_str())
        .bind(key.id.as_str())
        .fetch_one(&mut *tx)
        .await
        .map_err(store_error)?;
        if rows::unsigned(others_active, "key count")? >= max_active {
            tx.rollback().await.map_err(store_error)?;
            return Err(StoreError::LimitReached("maxActiveKeys"));
        }
        tx.commit().await.map_err(store_error)
    }

    async fn find_api_key(&self, key_hash: &str) -> StoreResult<Option<(ApiKey, Organization)>> {
        let row = sqlx::query(
            "SELECT k.id, k.organization_id, k.mode, k.key_hash, k.prefix, k.created_at, \
                    k.revoked_at, k.last_used_at, \
                    o.id AS org_id, o.name AS org_name, o.plan AS org_plan, \
                    o.shop_domain AS org_shop_domain, o.limits AS org_limits, \
                    o.created_at AS org_created_at \
             FROM api_keys k JOIN organizations o ON o.id = k.organization_id \
             WHERE k.key_hash = $1",
        )
        .bind(key_hash)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, |row| {
            Ok((rows::api_key(row)?, prefixed_organization(row)?))
        })
    }

    async fn list_api_keys(&self, organization_id: &OrganizationId) -> StoreResult<Vec<ApiKey>> {
        let rows = sqlx::query(&format!(
            "SELECT {API_KEY_COLUMNS} FROM api_keys WHERE organization_id = $1 \
             ORDER BY created_at, id"
        ))
        .bind(organization_id.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(rows, rows::api_key)
    }

    async fn touch_api_key(&self, id: &ApiKeyId, at_time: Timestamp) -> StoreResult<()> {
        sqlx::query(
            "UPDATE api_keys SET last_used_at = $2 WHERE id = $1 \
             AND (last_used_at IS NULL OR last_used_at < $2)",
        )
        .bind(id.as_str())
        .bind(at(at_time))
        .execute(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(())
    }

    async fn revoke_api_key(&self, id: &ApiKeyId, now: Timestamp) -> StoreResult<Option<ApiKey>> {
        let row = sqlx::query(&format!(
            "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1 \
             RETURNING {API_KEY_COLUMNS}"
        ))
        .bind(id.as_str())
        .bind(at(now))
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::api_key)
    }
}
