//! Organizations and API keys.

use std::collections::HashSet;
use xf_core::store::text_rule::*;

use async_trait::async_trait;
use xf_core::ids::{ApiKeyId, OrganizationId};
use xf_core::model::{ApiKey, Organization};
use xf_core::plans::LimitOverrides;
use xf_core::store::{OrganizationStore, PageRequest, StoreResult};
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::MemoryStore;

#[async_trait]
impl OrganizationStore for MemoryStore {
    async fn insert_organization(&self, organization: &Organization) -> StoreResult<()> {
        let organization = &*stored(organization);
        let mut state = self.write();
        if state.organizations.contains_key(organization.id.as_str()) {
            return Err(StoreError::Duplicate("organization id"));
        }
        state
            .organizations
            .insert(organization.id.to_string(), organization.clone());
        Ok(())
    }

    async fn insert_organization_with_keys(
        &self,
        organization: &Organization,
        keys: &[ApiKey],
    ) -> StoreResult<()> {
        let organization = &*stored(organization);
        let mut state = self.write();
        if state.organizations.contains_key(organization.id.as_str()) {
            return Err(StoreError::Duplicate("organization id"));
        }
        // Every check before the first write: a failure leaves nothing behind.
        let mut hashes = HashSet::new();
        let mut ids = HashSet::new();
        for key in keys {
            let taken = state.key_ids_by_hash.contains_key(&key.key_hash)
                || state.api_keys.contains_key(key.id.as_str());
            if taken || !hashes.insert(&key.key_hash) || !ids.insert(&key.id) {
                return Err(StoreError::Duplicate("api key"));
            }
        }
        state
            .organizations
            .insert(organization.id.to_string(), organization.clone());
        for key in keys {
            state
                .key_ids_by_hash
                .insert(key.key_hash.clone(), key.id.to_string());
            state.api_keys.insert(key.id.to_string(), key.clone());
        }
        Ok(())
    }

    async fn get_organization(&self, id: &OrganizationId) -> StoreResult<Option<Organization>> {
        Ok(self.read().organizations.get(id.as_str()).cloned())
    }

    async fn list_organizations(&self, page: &PageRequest) -> StoreResult<Vec<Organization>> {
        let state = self.read();
        let mut organizations: Vec<&Organization> = state
            .organizations
            .values()
            .filter(|o| {
                page.after.as_ref().is_none_or(|after| {
                    (o.created_at, o.id.as_str()) < (after.created_at, after.id.as_str())
                })
            })
            .collect();
        organizations.sort_unstable_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        Ok(organizations
            .into_iter()
            .take(page.limit)
            .cloned()
            .collect())
    }

    async fn find_organization_by_name(&self, name: &str) -> StoreResult<Option<Organization>> {
        let name = &*stored_str(name);
        Ok(self
            .read()
            .organizations
            .values()
            .filter(|o| o.name == name)
            .min_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)))
            .cloned())
    }

    async fn update_organization(
        &self,
        id: &OrganizationId,
        plan: Option<&str>,
        limits: Option<&LimitOverrides>,
    ) -> StoreResult<Option<Organization>> {
        let plan = plan.map(stored_str);
        let plan = plan.as_deref();
        let mut state = self.write();
        let Some(org) = state.organizations.get_mut(id.as_str()) else {
            return Ok(None);
        };
        if let Some(plan) = plan {
            org.plan = plan.to_owned();
        }
        if let Some(limits) = limits {
            org.limits = *limits;
        }
        Ok(Some(org.clone()))
    }

    async fn insert_api_key(&self, key: &ApiKey, max_active: u64) -> StoreResult<()> {
        let mut state = self.write();
        if state.key_ids_by_hash.contains_key(&key.key_hash)
            || state.api_keys.contains_key(key.id.as_str())
        {
            return Err(StoreError::Duplicate("api key"));
        }
        let active = state
            .api_keys
            .values()
            .filter(|k| k.organization_id == key.organization_id && k.revoked_at.is_none())
            .count() as u64;
        if active >= max_active {
            return Err(StoreError::LimitReached("maxActiveKeys"));
        }
        state
            .key_ids_by_hash
            .insert(key.key_hash.clone(), key.id.to_string());
        state.api_keys.insert(key.id.to_string(), key.clone());
        Ok(())
    }

    async fn find_api_key(&self, key_hash: &str) -> StoreResult<Option<(ApiKey, Organization)>> {
        let state = self.read();
        Ok(state
            .key_ids_by_hash
            .get(key_hash)
            .and_then(|id| state.api_keys.get(id))
            .and_then(|key| {
                let org = state.organizations.get(key.organization_id.as_str())?;
                Some((key.clone(), org.clone()))
            }))
    }

    async fn list_api_keys(&self, organization_id: &OrganizationId) -> StoreResult<Vec<ApiKey>> {
        let mut keys: Vec<ApiKey> = self
            .read()
            .api_keys
            .values()
            .filter(|k| &k.organization_id == organization_id)
            .cloned()
            .collect();
        keys.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(keys)
    }

    async fn touch_api_key(&self, id: &ApiKeyId, at: Timestamp) -> StoreResult<()> {
        if let Some(key) = self.write().api_keys.get_mut(id.as_str()) {
            key.last_used_at = key.last_used_at.max(Some(at));
        }
        Ok(())
    }

    async fn revoke_api_key(&self, id: &ApiKeyId, now: Timestamp) -> StoreResult<Option<ApiKey>> {
        let mut state = self.write();
        Ok(state.api_keys.get_mut(id.as_str()).map(|key| {
            key.revoked_at.get_or_insert(now);
            key.clone()
        }))
    }
}
