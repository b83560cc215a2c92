//! Properties (websites).

use async_trait::async_trait;

use super::{KeptResponse, PageRequest, StoreResult};
use crate::ids::{OrganizationId, PropertyId};
use crate::model::Property;

/// Properties.
#[async_trait]
pub trait PropertyStore: Send + Sync {
    /// Inserts a property; [`StoreError::Duplicate`](crate::StoreError::Duplicate) when the
    /// organization already has one with the same URL.
    async fn insert_property(&self, property: &Property) -> StoreResult<()>;

    /// [`insert_property`](Self::insert_property), keeping `kept` for its idempotency key as
    /// [`complete_idempotency_key`](super::GuardStore::complete_idempotency_key) does, in the
    /// insert's transaction: the response is kept if and only if the property was inserted.
    async fn insert_property_keeping(
        &self,
        property: &Property,
        kept: &KeptResponse,
    ) -> StoreResult<()>;

    /// The property with this id (any organization: the caller checks ownership).
    async fn get_property(&self, id: &PropertyId) -> StoreResult<Option<Property>>;

    /// The properties with these ids that exist (any organization), in no particular order.
    /// One call for the properties of a whole page of reports.
    async fn get_properties(&self, ids: &[PropertyId]) -> StoreResult<Vec<Property>>;

    /// The organization's property with exactly this normalised URL.
    async fn find_property_by_url(
        &self,
        organization_id: &OrganizationId,
        url: &str,
    ) -> StoreResult<Option<Property>>;

    /// A page of the organization's properties, newest first.
    async fn list_properties(
        &self,
        organization_id: &OrganizationId,
        page: &PageRequest,
    ) -> StoreResult<Vec<Property>>;

    /// How many properties the organization has.
    async fn count_properties(&self, organization_id: &OrganizationId) -> StoreResult<u64>;

    /// Marks a property verified; returns it, or `None` if unknown.
    async fn set_property_verified(&self, id: &PropertyId) -> StoreResult<Option<Property>>;

    /// Links (or unlinks, with `None`) a Search Console site; returns the property.
    async fn set_property_gsc_site(
        &self,
        id: &PropertyId,
        site_url: Option<&str>,
    ) -> StoreResult<Option<Property>>;
}
