//! Properties.

use async_trait::async_trait;
use sqlx::postgres::PgArguments;
use sqlx::query::Query;
use sqlx::{PgPool, Postgres, QueryBuilder};
use xf_core::ids::{OrganizationId, PropertyId};
use xf_core::model::Property;
use xf_core::store::text_rule::*;
use xf_core::store::{KeptResponse, PageRequest, PropertyStore, StoreResult};

use crate::batch::{BatchFuture, Batcher};
use crate::error::store_error;
use crate::rows::{self, at, PROPERTY_COLUMNS};
use crate::{all, list_properties_query, one, PgStore};

/// The statement that inserts a property: its fields are `$1` to `$7`, as [`bind_property`]
/// binds them. A macro, so that `concat!` can build the statements around it.
macro_rules! insert_property {
    () => {
        "INSERT INTO properties \
         (id, organization_id, name, url, verified, created_at, gsc_site_url) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)"
    };
}

/// `query` with `property`'s fields bound as `$1` to `$7`, in the order of `insert_property!`.
fn bind_property<'q>(
    query: Query<'q, Postgres, PgArguments>,
    property: &'q Property,
) -> Query<'q, Postgres, PgArguments> {
    query
        .bind(property.id.as_str())
        .bind(property.organization_id.as_str())
        .bind(&property.name)
        .bind(&property.url)
        .bind(property.verified)
        .bind(at(property.created_at))
        .bind(&property.gsc_site_url)
}

/// Reads of one property by id, which most of the API's requests make, gathered into batches
/// (see [`crate::batch`]): the reads that wait while one batch is in the database go together
/// in the next `SELECT`. One per store and its clones.
pub(crate) struct PropertyReads(Batcher<PropertyId, Option<Property>>);

impl PropertyReads {
    pub(crate) const fn new() -> Self {
        Self(Batcher::new(read_properties))
    }
}

impl std::fmt::Debug for PropertyReads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PropertyReads")
    }
}

/// A batch of reads by id, answered in order (the same id may come more than once, and is
/// asked for once).
fn read_properties(pool: PgPool, ids: Vec<PropertyId>) -> BatchFuture<Option<Property>> {
    Box::pin(async move {
        let mut distinct: Vec<&str> = ids.iter().map(PropertyId::as_str).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let mut found = select_properties(&pool, &distinct).await?;
        // The last reader of an id takes its property, the ones before it a copy.
        Ok(ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let at = found.iter().position(|p| p.id == *id)?;
                let again = ids[i + 1..].contains(id);
                Some(if again {
                    found[at].clone()
                } else {
                    found.swap_remove(at)
                })
            })
            .collect())
    })
}

/// The properties of `ids` that exist, in no particular order.
///
/// The statement is planned anew each time, with its ids: a plan kept for the connection
/// (sqlx's prepared statements) may be the one made when the table was small, a sequential
/// scan, and PostgreSQL replans only after an `ANALYZE`, which may never come (autovacuum
/// off). Measured with a kept plan, batched reads took a server from 12,000 to 115 `GET`s a
/// second within four minutes of writes. A fresh plan sees the table's size as it is and
/// probes the primary key.
async fn select_properties(pool: &PgPool, ids: &[&str]) -> StoreResult<Vec<Property>> {
    let rows = sqlx::query(&format!(
        "SELECT {PROPERTY_COLUMNS} FROM properties WHERE id = ANY($1::text[])"
    ))
    .bind(ids)
    .persistent(false)
    .fetch_all(pool)
    .await
    .map_err(store_error)?;
    all(rows, rows::property)
}

#[async_trait]
impl PropertyStore for PgStore {
    async fn insert_property(&self, property: &Property) -> StoreResult<()> {
        let property = &*stored(property);
        bind_property(sqlx::query(insert_property!()), property)
            .execute(&self.pool)
            .await
            .map_err(store_error)?;
        Ok(())
    }

    async fn insert_property_keeping(
        &self,
        property: &Property,
        kept: &KeptResponse,
    ) -> StoreResult<()> {
        let (property, kept) = (&*stored(property), &*stored(kept));
        // One statement, so one transaction and one durable commit: the record is updated
        // only when the insert succeeds (a failed insert fails the statement). Its row was
        // claimed by this request and stays locked by nobody else, so the update cannot wait.
        let sql = concat!(
            "WITH inserted AS (",
            insert_property!(),
            " RETURNING 1) \
             UPDATE idempotency_keys SET response_status = $10, response_body = $11 \
             WHERE scope = $8 AND fingerprint = $9 AND EXISTS (SELECT 1 FROM inserted)"
        );
        bind_property(sqlx::query(sql), property)
            .bind(&kept.scope)
            .bind(&kept.fingerprint)
            .bind(i32::from(kept.response.status))
            .bind(&kept.response.body)
            .execute(&self.pool)
            .await
            .map_err(store_error)?;
        Ok(())
    }

    async fn get_property(&self, id: &PropertyId) -> StoreResult<Option<Property>> {
        self.reads.0.submit(&self.pool, id.clone()).await
    }

    async fn get_properties(&self, ids: &[PropertyId]) -> StoreResult<Vec<Property>> {
        let ids: Vec<&str> = ids.iter().map(PropertyId::as_str).collect();
        select_properties(&self.pool, &ids).await
    }

    async fn find_property_by_url(
        &self,
        organization_id: &OrganizationId,
        url: &str,
    ) -> StoreResult<Option<Property>> {
        let url = &*stored_str(url);
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
        let site_url = site_url.map(stored_str);
        let site_url = site_url.as_deref();
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
