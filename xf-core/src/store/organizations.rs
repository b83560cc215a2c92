//! Organizations and their API keys.

use async_trait::async_trait;

use super::{PageRequest, StoreResult};
use crate::ids::{ApiKeyId, OrganizationId};
use crate::model::{ApiKey, Organization};
use crate::plans::LimitOverrides;
use crate::time::Timestamp;

/// Organizations and API keys.
#[async_trait]
pub trait OrganizationStore: Send + Sync {
    /// Inserts a new organization.
    async fn insert_organization(&self, organization: &Organization) -> StoreResult<()>;

    /// Inserts a new organization together with its first keys, atomically: either the
    /// organization and every key are stored, or nothing is. A key whose hash is already
    /// stored (in any organization), or two keys sharing a hash, fail with
    /// [`StoreError::Duplicate`](crate::StoreError::Duplicate), as in
    /// [`OrganizationStore::insert_api_key`]. The key cap is not checked here: the
    /// organization has no other keys, so the caller compares `keys.len()` with it.
    async fn insert_organization_with_keys(
        &self,
        organization: &Organization,
        keys: &[ApiKey],
    ) -> StoreResult<()>;

    /// The organization with this id.
    async fn get_organization(&self, id: &OrganizationId) -> StoreResult<Option<Organization>>;

    /// A page of every organization, newest first (equal creation times: largest id first).
    async fn list_organizations(&self, page: &PageRequest) -> StoreResult<Vec<Organization>>;

    /// The first-created organization with exactly this name (case-sensitive; on equal
    /// creation times, the one with the smallest id).
    async fn find_organization_by_name(&self, name: &str) -> StoreResult<Option<Organization>>;

    /// Sets the plan and/or replaces the limit overrides; returns the updated organization.
    async fn update_organization(
        &self,
        id: &OrganizationId,
        plan: Option<&str>,
        limits: Option<&LimitOverrides>,
    ) -> StoreResult<Option<Organization>>;

    /// Inserts a key unless the organization already has `max_active` unrevoked keys, in
    /// which case it fails with [`StoreError::LimitReached`](crate::StoreError::LimitReached).
    /// Atomic with respect to concurrent inserts for the same organization. A key whose hash
    /// is already stored (in any organization) fails with
    /// [`StoreError::Duplicate`](crate::StoreError::Duplicate). Nothing is stored on failure.
    async fn insert_api_key(&self, key: &ApiKey, max_active: u64) -> StoreResult<()>;

    /// The key with this hash and its organization, revoked or not.
    async fn find_api_key(&self, key_hash: &str) -> StoreResult<Option<(ApiKey, Organization)>>;

    /// The organization's keys, revoked or not, oldest first (equal creation times: smallest
    /// id first).
    async fn list_api_keys(&self, organization_id: &OrganizationId) -> StoreResult<Vec<ApiKey>>;

    /// Records that a request authenticated with the key at `at`: `last_used_at` becomes
    /// `at` unless it is later already (revoked or not; an unknown id changes nothing).
    async fn touch_api_key(&self, id: &ApiKeyId, at: Timestamp) -> StoreResult<()>;

    /// Revokes a key (keeping the first revocation time); returns it, or `None` if unknown.
    async fn revoke_api_key(&self, id: &ApiKeyId, now: Timestamp) -> StoreResult<Option<ApiKey>>;
}
