//! Search Console: accounts, sync claims, snapshots, and the pages of each property's latest
//! completed scan.

use std::collections::HashMap;
use std::sync::Arc;
use xf_core::store::text_rule::*;

use async_trait::async_trait;
use xf_core::gsc::{
    GscAccount, GscRow, GscSnapshot, NewSnapshot, PortfolioCounts, RowKind, ScanPages, ScannedPage,
};
use xf_core::ids::{JobId, OrganizationId, PropertyId};
use xf_core::model::IssueStatus;
use xf_core::store::{FetchedPage, GscStore, StoreResult};
use xf_core::time::Timestamp;

use crate::{MemoryStore, State};

/// A claim on syncing one property.
#[derive(Debug, Clone)]
pub(crate) struct SyncClaim {
    claim: String,
    until: Timestamp,
}

/// The pages of a property's latest completed scan.
#[derive(Debug, Clone)]
pub(crate) struct LatestScan {
    job_id: JobId,
    pages: Vec<FetchedPage>,
}

impl State {
    /// Replaces the property's latest scan pages (under the caller's lock, in `complete_scan`).
    pub(crate) fn record_scan_pages(
        &mut self,
        property_id: &PropertyId,
        job_id: &JobId,
        pages: Vec<FetchedPage>,
    ) {
        self.scan_pages.insert(
            property_id.to_string(),
            LatestScan {
                job_id: job_id.clone(),
                pages,
            },
        );
    }

    /// The property's snapshot, if its site is still the one the property is mapped to.
    fn current_snapshot(&self, property_id: &str) -> Option<&GscSnapshot> {
        let property = self.properties.rows.get(property_id)?;
        let stored = self.gsc_snapshots.get(property_id)?;
        (property.gsc_site_url.as_deref() == Some(stored.snapshot.site_url.as_str()))
            .then_some(&stored.snapshot)
    }
}

#[async_trait]
impl GscStore for MemoryStore {
    async fn put_gsc_account(&self, account: &GscAccount) -> StoreResult<bool> {
        let account = &*stored(account);
        let mut state = self.write();
        let key = account.organization_id.to_string();
        if !state.organizations.contains_key(&key) {
            return Ok(false);
        }
        state.gsc_accounts.insert(key, account.clone());
        Ok(true)
    }

    async fn get_gsc_account(
        &self,
        organization_id: &OrganizationId,
    ) -> StoreResult<Option<GscAccount>> {
        Ok(self
            .read()
            .gsc_accounts
            .get(organization_id.as_str())
            .cloned())
    }

    async fn revoke_gsc_account(
        &self,
        organization_id: &OrganizationId,
        linked_at: Timestamp,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let mut state = self.write();
        match state.gsc_accounts.get_mut(organization_id.as_str()) {
            Some(account) if account.linked_at == linked_at => {
                account.revoked_at = Some(now);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn claim_gsc_sync(
        &self,
        property_id: &PropertyId,
        claim: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool> {
        let mut state = self.write();
        let held = state
            .gsc_claims
            .get(property_id.as_str())
            .is_some_and(|held| held.until > now);
        if held {
            return Ok(false);
        }
        state.gsc_claims.insert(
            property_id.to_string(),
            SyncClaim {
                claim: claim.to_owned(),
                until,
            },
        );
        Ok(true)
    }

    async fn release_gsc_sync(&self, property_id: &PropertyId, claim: &str) -> StoreResult<()> {
        let mut state = self.write();
        if state
            .gsc_claims
            .get(property_id.as_str())
            .is_some_and(|held| held.claim == claim)
        {
            state.gsc_claims.remove(property_id.as_str());
        }
        Ok(())
    }

    async fn replace_gsc_snapshot(&self, new: &NewSnapshot) -> StoreResult<()> {
        let new = &*stored(new);
        // Built outside the lock; swapped in under it.
        let stored = Arc::new(new.clone());
        let key = new.snapshot.property_id.to_string();
        self.write().gsc_snapshots.insert(key, stored);
        Ok(())
    }

    async fn get_gsc_snapshot(&self, property_id: &PropertyId) -> StoreResult<Option<GscSnapshot>> {
        Ok(self
            .read()
            .gsc_snapshots
            .get(property_id.as_str())
            .map(|stored| stored.snapshot.clone()))
    }

    async fn get_gsc_snapshots(
        &self,
        property_ids: &[PropertyId],
    ) -> StoreResult<Vec<GscSnapshot>> {
        let state = self.read();
        Ok(property_ids
            .iter()
            .filter_map(|id| state.gsc_snapshots.get(id.as_str()))
            .map(|stored| stored.snapshot.clone())
            .collect())
    }

    async fn list_gsc_rows(
        &self,
        property_id: &PropertyId,
        kind: RowKind,
        after: Option<u32>,
        limit: usize,
    ) -> StoreResult<Vec<GscRow>> {
        let Some(stored) = self.read().gsc_snapshots.get(property_id.as_str()).cloned() else {
            return Ok(Vec::new());
        };
        let rows = match kind {
            RowKind::Query => &stored.queries,
            RowKind::Page => &stored.pages,
        };
        let start = after.map_or(0, |rank| rows.partition_point(|r| r.rank <= rank));
        Ok(rows.iter().skip(start).take(limit).cloned().collect())
    }

    async fn gsc_portfolio(
        &self,
        organization_id: &OrganizationId,
        fresh_since: Timestamp,
    ) -> StoreResult<PortfolioCounts> {
        let state = self.read();
        let mut counts = PortfolioCounts::default();
        for id in state.properties.ids_of(organization_id.as_str()) {
            counts.total_properties += 1;
            let linked = state
                .properties
                .rows
                .get(&id)
                .is_some_and(|p| p.gsc_site_url.is_some());
            if !linked {
                continue;
            }
            counts.linked_properties += 1;
            match state.current_snapshot(&id) {
                Some(snapshot) => {
                    counts.total_clicks += snapshot.totals.clicks;
                    counts.total_impressions += snapshot.totals.impressions;
                    if snapshot.synced_at < fresh_since {
                        counts.stale += 1;
                    }
                }
                None => counts.stale += 1,
            }
        }
        Ok(counts)
    }

    async fn latest_scan_pages(&self, property_id: &PropertyId) -> StoreResult<Option<ScanPages>> {
        let state = self.read();
        // A scan that fetched no page has nothing to join.
        let Some(latest) = state
            .scan_pages
            .get(property_id.as_str())
            .filter(|latest| !latest.pages.is_empty())
        else {
            return Ok(None);
        };
        let Some(completed_at) = state
            .jobs
            .rows
            .get(latest.job_id.as_str())
            .and_then(|job| job.record.completed_at)
        else {
            return Ok(None);
        };
        let mut open: HashMap<&str, u32> = HashMap::new();
        for issue in state
            .issues
            .of(property_id.as_str())
            .filter(|i| i.status == IssueStatus::Open && i.url.is_some())
        {
            *open
                .entry(issue.url.as_deref().unwrap_or_default())
                .or_default() += 1;
        }
        Ok(Some(ScanPages {
            job_id: latest.job_id.clone(),
            completed_at,
            pages: latest
                .pages
                .iter()
                .map(|page| ScannedPage {
                    url: page.url.clone(),
                    status_code: page.status_code,
                    open_issues: open.get(page.url.as_str()).copied().unwrap_or(0),
                })
                .collect(),
        }))
    }
}
