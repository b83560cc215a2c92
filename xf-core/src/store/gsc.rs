//! Search Console: linked Google accounts, per-property snapshots, and the claims that keep
//! two syncs of one property from running at once.

use async_trait::async_trait;

use super::StoreResult;
use crate::ids::{OrganizationId, PropertyId};
use crate::model::gsc::{
    GscAccount, GscRow, GscSnapshot, NewSnapshot, PortfolioCounts, RowKind, ScanPages,
};
use crate::time::Timestamp;

/// Search Console data.
#[async_trait]
pub trait GscStore: Send + Sync {
    /// Links (or links again) the organization's Google account, replacing an earlier one and
    /// clearing its revocation. `false` when the organization does not exist.
    async fn put_gsc_account(&self, account: &GscAccount) -> StoreResult<bool>;

    /// The organization's linked Google account.
    async fn get_gsc_account(
        &self,
        organization_id: &OrganizationId,
    ) -> StoreResult<Option<GscAccount>>;

    /// Marks the account revoked at `now` if it is still the one linked at `linked_at` (an
    /// account linked again meanwhile is left alone). Whether it was marked.
    async fn revoke_gsc_account(
        &self,
        organization_id: &OrganizationId,
        linked_at: Timestamp,
        now: Timestamp,
    ) -> StoreResult<bool>;

    /// Claims the right to sync the property until `until`, as `claim`, unless another claim
    /// holds it at `now`. Whether this claim got it.
    async fn claim_gsc_sync(
        &self,
        property_id: &PropertyId,
        claim: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool>;

    /// Gives the claim back (if it is still `claim`).
    async fn release_gsc_sync(&self, property_id: &PropertyId, claim: &str) -> StoreResult<()>;

    /// Replaces the property's snapshot and all its rows with `new`, atomically: a reader sees
    /// the old snapshot or the new one, never a mix.
    async fn replace_gsc_snapshot(&self, new: &NewSnapshot) -> StoreResult<()>;

    /// The property's snapshot (without its rows).
    async fn get_gsc_snapshot(&self, property_id: &PropertyId) -> StoreResult<Option<GscSnapshot>>;

    /// The snapshots of several properties (those that have one), in no particular order.
    async fn get_gsc_snapshots(&self, property_ids: &[PropertyId])
        -> StoreResult<Vec<GscSnapshot>>;

    /// Up to `limit` rows of one kind of the property's snapshot, by rank, starting after
    /// rank `after` (from the top when `None`).
    async fn list_gsc_rows(
        &self,
        property_id: &PropertyId,
        kind: RowKind,
        after: Option<u32>,
        limit: usize,
    ) -> StoreResult<Vec<GscRow>>;

    /// The portfolio figures of the organization: a snapshot counts (for the totals, and as
    /// fresh when synced at or after `fresh_since`) only while its site is still the one its
    /// property is mapped to.
    async fn gsc_portfolio(
        &self,
        organization_id: &OrganizationId,
        fresh_since: Timestamp,
    ) -> StoreResult<PortfolioCounts>;

    /// The property's latest completed scan, page by page, with the open issues about each
    /// page; `None` when it has none (or it fetched no page).
    async fn latest_scan_pages(&self, property_id: &PropertyId) -> StoreResult<Option<ScanPages>>;
}
