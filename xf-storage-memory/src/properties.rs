//! Properties.

use std::collections::BTreeSet;
use xf_core::store::text_rule::*;

use async_trait::async_trait;
use xf_core::ids::{OrganizationId, PropertyId};
use xf_core::model::Property;
use xf_core::store::{KeptResponse, PageRequest, PropertyStore, StoreResult};
use xf_core::StoreError;

use crate::guards::keep_response;
use crate::{MemoryStore, State};

#[async_trait]
impl PropertyStore for MemoryStore {
    async fn insert_property(&self, property: &Property) -> StoreResult<()> {
        let property = &*stored(property);
        insert(&mut self.write(), property)
    }

    async fn insert_property_keeping(
        &self,
        property: &Property,
        kept: &KeptResponse,
    ) -> StoreResult<()> {
        let (property, kept) = (&*stored(property), &*stored(kept));
        // One lock over both: the response is kept if and only if the property went in.
        let mut state = self.write();
        insert(&mut state, property)?;
        keep_response(&mut state, &kept.scope, &kept.fingerprint, &kept.response);
        Ok(())
    }

    async fn get_property(&self, id: &PropertyId) -> StoreResult<Option<Property>> {
        Ok(self.read().properties.get(id.as_str()))
    }

    async fn get_properties(&self, ids: &[PropertyId]) -> StoreResult<Vec<Property>> {
        let unique: BTreeSet<&PropertyId> = ids.iter().collect();
        let state = self.read();
        Ok(unique
            .into_iter()
            .filter_map(|id| state.properties.get(id.as_str()))
            .collect())
    }

    async fn find_property_by_url(
        &self,
        organization_id: &OrganizationId,
        url: &str,
    ) -> StoreResult<Option<Property>> {
        let url = &*stored_str(url);
        let state = self.read();
        Ok(state
            .property_urls
            .get(&(organization_id.to_string(), url.to_owned()))
            .and_then(|id| state.properties.get(id)))
    }

    async fn list_properties(
        &self,
        organization_id: &OrganizationId,
        page: &PageRequest,
    ) -> StoreResult<Vec<Property>> {
        let state = self.read();
        state
            .properties
            .page(organization_id.as_str(), page, |_| true)
    }

    async fn count_properties(&self, organization_id: &OrganizationId) -> StoreResult<u64> {
        Ok(self
            .read()
            .properties
            .values()
            .filter(|p| &p.organization_id == organization_id)
            .count() as u64)
    }

    async fn set_property_verified(&self, id: &PropertyId) -> StoreResult<Option<Property>> {
        Ok(self
            .write()
            .properties
            .update(id.as_str(), |p| p.verified = true))
    }

    async fn set_property_gsc_site(
        &self,
        id: &PropertyId,
        site_url: Option<&str>,
    ) -> StoreResult<Option<Property>> {
        let site_url = site_url.map(stored_str);
        let site_url = site_url.as_deref();
        Ok(self.write().properties.update(id.as_str(), |p| {
            p.gsc_site_url = site_url.map(str::to_owned)
        }))
    }
}

/// Inserts `property` unless its id, or its URL in its organization, is taken.
fn insert(state: &mut State, property: &Property) -> StoreResult<()> {
    let url_key = (property.organization_id.to_string(), property.url.clone());
    if state.property_urls.contains_key(&url_key) {
        return Err(StoreError::Duplicate("property url"));
    }
    let (owner, at, id) = (
        property.organization_id.as_str(),
        property.created_at,
        property.id.as_str(),
    );
    if !state.properties.insert(owner, at, id, property) {
        return Err(StoreError::Duplicate("property id"));
    }
    state.property_urls.insert(url_key, property.id.to_string());
    Ok(())
}
