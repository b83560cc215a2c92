//! Properties.

use async_trait::async_trait;
use sqlx::QueryBuilder;
use xf_core::ids::{OrganizationId, PropertyId};
use xf_core::model::Property;
use xf_core::store::{PageRequest, PropertyStore, StoreResult};

use crate::error::store_error;
use crate::rows::{self, at, PROPERTY_COLUMNS};
use crate::{all, list_properties_query, one, PgStore};

#[async_trait]
impl PropertyStore for PgStore {
    async fn insert_property(&self, property: &Property) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO properties \
             (id, organization_id, name, url, verified, created_at, gsc_site_url) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(property.id.as_str())
        .bind(property.organization_id.as_str())
        .bind(&property.name)
        .bind(&property.url)
        .bind(property.verified)
        .bind(at(property.created_at))
        .bind(&property.gsc_site_url)
        .execute(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(())
    }

    async fn get_property(&self, id: &PropertyId) -> StoreResult<Option<Property>> {
        let row = sqlx::query(&format!(
            "SELECT {PROPERTY_COLUMNS} FROM properties WHERE id = $1"
        ))
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::property)
    }

    async fn get_properties(&self, ids: &[PropertyId]) -> StoreResult<Vec<Property>> {
        let ids: Vec<&str> = ids.iter().map(PropertyId::as_str).collect();
        let rows = sqlx::query(&format!(
            "SELECT {PROPERTY_COLUMNS} FROM properties WHERE id = ANY($1::text[])"
        ))
        .bind(&ids)
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(rows, rows::property)
    }

    async fn find_property_by_url(
        &self,
        organization_id: &OrganizationId,
        url: &str,
    ) -> StoreResult<Option<Property>> {
        let row = sqlx::query(&format!(
            "SELECT {PROPERTY_COLUMNS} FROM properties WHERE organization_id = $1 AND url = $2"
        ))
        .bind(organization_id.as_str())
        .bind(url)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::property)
    }

    async fn list_properties(
        &self,
        organization_id: &OrganizationId,
        page: &PageRequest,
    ) -> StoreResult<Vec<Property>> {
        let mut builder = QueryBuilder::new("");
        list_properties_query(&mut builder, organization_id.as_str(), page);
        let rows = builder
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(store_error)?;
        all(rows, rows::property)
    }

    async fn count_properties(&self, organization_id: &OrganizationId) -> StoreResult<u64> {
        let count: i64 =
            sqlx::query_scalar("SELECT count(*) FROM properties WHERE organization_id = $1")
                .bind(organization_id.as_str())
                .fetch_one(&self.pool)
                .await
                .map_err(store_error)?;
        rows::unsigned(count, "property count")
    }

    async fn set_property_verified(&self, id: &PropertyId) -> StoreResult<Option<Property>> {
        let row = sqlx::query(&format!(
            "UPDATE properties SET verified = true WHERE id = $1 RETURNING {PROPERTY_COLUMNS}"
        ))
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::property)
    }

    async fn set_property_gsc_site(
        &self,
        id: &PropertyId,
        site_url: Option<&str>,
    ) -> StoreResult<Option<Property>> {
        let row = sqlx::query(&format!(
            "UPDATE properties SET gsc_site_url = $2 WHERE id = $1 RETURNING {PROPERTY_COLUMNS}"
        ))
        .bind(id.as_str())
        .bind(site_url)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::property)
    }
}
