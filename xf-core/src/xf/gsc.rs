//! Search Console: the portfolio summary, a property's snapshot and rows (stored data only),
//! the sync (the one call to Google), and the admin's linking of accounts and sites.

use std::collections::HashMap;

use super::{Admin, Caller, Xf};
use crate::api::{
    GscAccountLink, GscAccountView, GscConnection, GscOverview, GscPageRow, GscPortfolio,
    GscQueryRow, GscSnapshotView, GscSyncResult, Page, PageParams, PropertyGscDetail,
};
use crate::error::{Error, Result};
use crate::gsc::sync::{self, Session};
use crate::gsc::{
    GoogleError, GscAccount, GscRow, GscSnapshot, Metrics, RowKind, STALE_AFTER_HOURS, TOP_ROWS,
};
use crate::ids::{OrganizationId, PropertyId};
use crate::model::Property;
use crate::store::After;
use crate::time::Timestamp;

/// How long a sync may hold its claim on a property before another may start.
const SYNC_CLAIM_MINUTES: i64 = 5;
/// Seconds a client is told to wait when Google failed without saying how long.
const GOOGLE_RETRY_AFTER_SECS: u64 = 30;
/// The longest refresh token accepted (Google's are about 100 characters).
const MAX_REFRESH_TOKEN_LEN: usize = 2048;

/// Whether a snapshot belongs to the property: it is of the site the property is mapped to
/// now.
fn is_current(property: &Property, snapshot: &GscSnapshot) -> bool {
    property.gsc_site_url.as_deref() == Some(snapshot.site_url.as_str())
}

/// `orgConnected` and `tokenRevoked` of the organization's linked account, if any.
fn account_state(account: Option<&GscAccount>) -> (bool, bool) {
    match account {
        Some(account) => (account.revoked_at.is_none(), account.revoked_at.is_some()),
        None => (false, false),
    }
}

fn query_row(row: GscRow) -> GscQueryRow {
    GscQueryRow {
        query: row.key,
        metrics: row.metrics,
    }
}

fn page_row(row: GscRow) -> GscPageRow {
    GscPageRow {
        page: row.key,
        metrics: row.metrics,
        crawl: row.crawl,
    }
}

/// Google's failure as the API answers it.
fn google_error(error: GoogleError) -> Error {
    let retry = |after: Option<std::time::Duration>| {
        after.map_or(GOOGLE_RETRY_AFTER_SECS, |d| d.as_secs().clamp(1, 3600))
    };
    match error {
        GoogleError::InvalidGrant(_) => Error::GscTokenRevoked,
        GoogleError::ClientRejected(message) => Error::GscNotConfigured(format!(
            "Google refused the host's OAuth client ({message}); the host must fix its Google \
             client id and secret"
        )),
        GoogleError::SiteInaccessible(message) => Error::GscSiteInaccessible(format!(
            "the linked Google account cannot read this property's Search Console site: \
             {message}"
        )),
        GoogleError::Rejected(message) => Error::GscSiteInaccessible(format!(
            "Google rejected the request for this property's Search Console site: {message}"
        )),
        GoogleError::RateLimited {
            message,
            retry_after,
        } => Error::Upstream {
            rate_limited: true,
            message: format!(
                "Google Search Console's rate limit was reached ({message}); retry later"
            ),
            retry_after_secs: retry(retry_after),
        },
        // A token that a fresh exchange did not make acceptable: Google is misbehaving.
        GoogleError::Unauthenticated(message) | GoogleError::Unavailable(message) => {
            Error::Upstream {
                rate_limited: false,
                message: format!("Google Search Console failed ({message}); retry later"),
                retry_after_secs: GOOGLE_RETRY_AFTER_SECS,
            }
        }
        GoogleError::Unreachable(message) => Error::Upstream {
            rate_limited: false,
            message: format!("Google Search Console did not answer ({message}); retry later"),
            retry_after_secs: GOOGLE_RETRY_AFTER_SECS,
        },
    }
}

impl Xf {
    /// The property's stored snapshot, if it is of the site the property is mapped to now.
    async fn current_snapshot(&self, property: &Property) -> Result<Option<GscSnapshot>> {
        let snapshot = self.store().get_gsc_snapshot(&property.id).await?;
        Ok(snapshot.filter(|s| is_current(property, s)))
    }

    /// Whether the host configured a Google client.
    fn gsc_configured(&self) -> bool {
        self.inner.search_console.is_some()
    }

    /// The cut-off of fresh snapshots.
    fn gsc_fresh_since(&self) -> Timestamp {
        self.now().plus(chrono::Duration::hours(-STALE_AFTER_HOURS))
    }

    /// `GET /organization/gsc`.
    pub async fn gsc_portfolio(&self, caller: &Caller) -> Result<GscPortfolio> {
        let organization_id = &caller.organization.id;
        let account = self.store().get_gsc_account(organization_id).await?;
        let counts = self
            .store()
            .gsc_portfolio(organization_id, self.gsc_fresh_since())
            .await?;
        let (org_connected, token_revoked) = account_state(account.as_ref());
        Ok(GscPortfolio {
            configured: self.gsc_configured(),
            org_connected,
            linked_properties: counts.linked_properties,
            total_properties: counts.total_properties,
            total_clicks_28d: counts.total_clicks,
            total_impressions_28d: counts.total_impressions,
            stale_sync_count: counts.stale,
            token_revoked,
        })
    }

    /// The property, its connection state and its current snapshot.
    async fn gsc_state(
        &self,
        caller: &Caller,
        property_id: &PropertyId,
    ) -> Result<(Property, GscConnection, Option<GscSnapshot>)> {
        let property = self.owned_property(caller, property_id).await?;
        let account = self
            .store()
            .get_gsc_account(&caller.organization.id)
            .await?;
        let snapshot = self.current_snapshot(&property).await?;
        let linked = property.gsc_site_url.is_some();
        let (org_connected, token_revoked) = account_state(account.as_ref());
        let connection = GscConnection {
            property_id: property.id.clone(),
            configured: self.gsc_configured(),
            org_connected,
            token_revoked,
            linked,
            site_url: property.gsc_site_url.clone(),
            last_synced_at: snapshot.as_ref().map(|s| s.synced_at),
            stale: linked
                && snapshot
                    .as_ref()
                    .is_none_or(|s| s.synced_at < self.gsc_fresh_since()),
        };
        Ok((property, connection, snapshot))
    }

    /// `GET /properties/{id}/gsc`.
    pub async fn property_gsc(
        &self,
        caller: &Caller,
        property_id: &PropertyId,
    ) -> Result<PropertyGscDetail> {
        let (property, connection, snapshot) = self.gsc_state(caller, property_id).await?;
        let snapshot = match snapshot {
            None => None,
            Some(snapshot) => {
                let top = |kind| {
                    self.store()
                        .list_gsc_rows(&property.id, kind, None, TOP_ROWS)
                };
                let (queries, pages) = tokio::try_join!(top(RowKind::Query), top(RowKind::Page))?;
                Some(GscSnapshotView {
                    site_url: snapshot.site_url,
                    synced_at: snapshot.synced_at,
                    start_date: snapshot.start_date,
                    end_date: snapshot.end_date,
                    data_state: crate::gsc::DataState::Final.as_str(),
                    totals: snapshot.totals,
                    daily: snapshot.daily,
                    query_count: snapshot.query_count,
                    page_count: snapshot.page_count,
                    top_queries: queries.into_iter().map(query_row).collect(),
                    top_pages: pages.into_iter().map(page_row).collect(),
                    crawl_correlation: snapshot.correlation,
                })
            }
        };
        Ok(PropertyGscDetail {
            connection,
            snapshot,
        })
    }

    /// `GET /properties/{id}/gsc/overview`.
    pub async fn property_gsc_overview(
        &self,
        caller: &Caller,
        property_id: &PropertyId,
    ) -> Result<GscOverview> {
        let (_, connection, snapshot) = self.gsc_state(caller, property_id).await?;
        Ok(GscOverview {
            connection,
            start_date: snapshot.as_ref().map(|s| s.start_date),
            end_date: snapshot.as_ref().map(|s| s.end_date),
            totals: snapshot.as_ref().map_or(Metrics::ZERO, |s| s.totals),
            query_count: snapshot.as_ref().map_or(0, |s| s.query_count),
            page_count: snapshot.as_ref().map_or(0, |s| s.page_count),
        })
    }

    /// `GET /properties/{id}/gsc/queries`: the snapshot's query rows by clicks.
    pub async fn gsc_queries(
        &self,
        caller: &Caller,
        property_id: &PropertyId,
        params: &PageParams,
    ) -> Result<Page<GscQueryRow>> {
        let page = self
            .gsc_rows(caller, property_id, RowKind::Query, params)
            .await?;
        Ok(Page {
            items: page.items.into_iter().map(query_row).collect(),
            next_cursor: page.next_cursor,
        })
    }

    /// `GET /properties/{id}/gsc/pages`: the snapshot's page rows by clicks, with their crawl
    /// correlation.
    pub async fn gsc_pages(
        &self,
        caller: &Caller,
        property_id: &PropertyId,
        params: &PageParams,
    ) -> Result<Page<GscPageRow>> {
        let page = self
            .gsc_rows(caller, property_id, RowKind::Page, params)
            .await?;
        Ok(Page {
            items: page.items.into_iter().map(page_row).collect(),
            next_cursor: page.next_cursor,
        })
    }

    /// A page of one kind of rows. The cursor is bound to the property, the kind and the
    /// snapshot: after a new sync, an older snapshot's cursor is a 400.
    async fn gsc_rows(
        &self,
        caller: &Caller,
        property_id: &PropertyId,
        kind: RowKind,
        params: &PageParams,
    ) -> Result<Page<GscRow>> {
        let property = self.owned_property(caller, property_id).await?;
        let list = match kind {
            RowKind::Query => "gsc-queries",
            RowKind::Page => "gsc-pages",
        };
        let filters = format!("property={}", property.id);
        let (request, limit) = self.page_request(list, &filters, params)?;
        let snapshot = self.current_snapshot(&property).await?;
        let after = match (&request.after, &snapshot) {
            (None, _) => None,
            (Some(after), Some(snapshot)) if after.created_at == snapshot.synced_at => Some(
                after
                    .id
                    .parse::<u32>()
                    .map_err(|_| Error::invalid("cursor", "is not a valid cursor for this list"))?,
            ),
            (Some(_), _) => {
                return Err(Error::invalid(
                    "cursor",
                    "belongs to an earlier Search Console snapshot; the property was synced \
                     again since, so start from the first page",
                ))
            }
        };
        let Some(snapshot) = snapshot else {
            return Ok(Page {
                items: Vec::new(),
                next_cursor: None,
            });
        };
        let rows = self
            .store()
            .list_gsc_rows(&property.id, kind, after, request.limit)
            .await?;
        Ok(self.finish_page(list, &filters, rows, limit, |row| After {
            created_at: snapshot.synced_at,
            id: row.rank.to_string(),
        }))
    }

    /// `POST /properties/{id}/gsc/sync`: fetches the property's 28 days from Google and
    /// replaces its snapshot. A sync of the property already running elsewhere is not
    /// repeated (`synced: false`). With a test key, nothing is fetched or stored.
    pub async fn sync_property_gsc(
        &self,
        caller: &Caller,
        property_id: &PropertyId,
    ) -> Result<GscSyncResult> {
        let property = self.owned_property(caller, property_id).await?;
        if caller.is_test() {
            return Ok(GscSyncResult {
                synced: true,
                synced_at: Some(self.mock_time()),
            });
        }
        let client = self.inner.search_console.clone().ok_or_else(|| {
            Error::GscNotConfigured(
                "Search Console is not configured on this host (no Google OAuth client)".into(),
            )
        })?;
        let site_url = property.gsc_site_url.clone().ok_or_else(|| {
            Error::GscNotLinked(
                "this property is not mapped to a Search Console site; the host maps it".into(),
            )
        })?;
        let (account, refresh_token) = self.linked_google(&caller.organization.id).await?;

        let claim = uuid::Uuid::now_v7().to_string();
        let now = self.now();
        let until = now.plus(chrono::Duration::minutes(SYNC_CLAIM_MINUTES));
        if !self
            .store()
            .claim_gsc_sync(&property.id, &claim, now, until)
            .await?
        {
            let stored = self.current_snapshot(&property).await?;
            return Ok(GscSyncResult {
                synced: false,
                synced_at: stored.map(|s| s.synced_at),
            });
        }
        let outcome = self
            .run_sync(&*client, &property, &site_url, &account, &refresh_token)
            .await;
        // The claim is given back whatever happened; a failure to do so only delays the next
        // sync until the claim runs out.
        if let Err(error) = self.store().release_gsc_sync(&property.id, &claim).await {
            tracing::warn!(%error, property = %property.id, "a sync claim was not released");
        }
        let synced_at = outcome?;
        Ok(GscSyncResult {
            synced: true,
            synced_at: Some(synced_at),
        })
    }

    async fn run_sync(
        &self,
        client: &dyn crate::gsc::SearchConsole,
        property: &Property,
        site_url: &str,
        account: &GscAccount,
        refresh_token: &str,
    ) -> Result<Timestamp> {
        let session = Session {
            client,
            tokens: &self.inner.gsc_tokens,
            organization_id: &account.organization_id,
            linked_at: account.linked_at,
            refresh_token,
            site_url,
            current: std::sync::Mutex::new(None),
        };
        let today = self.now().as_datetime().date_naive();
        let fetched = match session.fetch(today).await {
            Ok(fetched) => fetched,
            Err(error) => return Err(self.google_failure(account, error).await),
        };
        let scan = self.store().latest_scan_pages(&property.id).await?;
        let synced_at = self.now();
        let new = sync::snapshot(property, site_url, synced_at, fetched, scan);
        self.store().replace_gsc_snapshot(&new).await?;
        Ok(synced_at)
    }

    /// The `include=gsc` blocks of several properties, by property.
    pub(super) async fn gsc_blocks(
        &self,
        properties: &[Property],
    ) -> Result<HashMap<PropertyId, GscSnapshot>> {
        let linked: Vec<PropertyId> = properties
            .iter()
            .filter(|p| p.gsc_site_url.is_some())
            .map(|p| p.id.clone())
            .collect();
        if linked.is_empty() {
            return Ok(HashMap::new());
        }
        let by_id: HashMap<&PropertyId, &Property> =
            properties.iter().map(|p| (&p.id, p)).collect();
        Ok(self
            .store()
            .get_gsc_snapshots(&linked)
            .await?
            .into_iter()
            .filter(|s| by_id.get(&s.property_id).is_some_and(|p| is_current(p, s)))
            .map(|s| (s.property_id.clone(), s))
            .collect())
    }

    /// The organization's linked, unrevoked Google account, and its refresh token.
    async fn linked_google(
        &self,
        organization_id: &OrganizationId,
    ) -> Result<(GscAccount, String)> {
        let account = self
            .store()
            .get_gsc_account(organization_id)
            .await?
            .ok_or_else(|| {
                Error::GscNotLinked(
                    "no Google account is linked to this organization; link one in the app".into(),
                )
            })?;
        if account.revoked_at.is_some() {
            return Err(Error::GscTokenRevoked);
        }
        let refresh_token = self
            .inner
            .token_sealer
            .open(organization_id.as_str(), &account.sealed_refresh_token)
            .map_err(|e| Error::internal(format!("organization {organization_id}: {e}")))?;
        Ok((account, refresh_token))
    }

    /// The error of a failed call to Google with `account`'s token; a refused refresh token
    /// marks the account revoked.
    async fn google_failure(&self, account: &GscAccount, error: GoogleError) -> Error {
        let GoogleError::InvalidGrant(message) = error else {
            return google_error(error);
        };
        tracing::info!(organization = %account.organization_id, %message, "Google refresh token revoked");
        self.inner.gsc_tokens.forget(&account.organization_id);
        if let Err(error) = self
            .store()
            .revoke_gsc_account(&account.organization_id, account.linked_at, self.now())
            .await
        {
            return error.into();
        }
        Error::GscTokenRevoked
    }

    /// Stores the refresh `token` (sealed) as the organization's Google link, replacing any.
    pub(crate) async fn save_gsc_account(
        &self,
        organization_id: &OrganizationId,
        token: &str,
        email: Option<String>,
    ) -> Result<GscAccountView> {
        let account = GscAccount {
            sealed_refresh_token: self
                .inner
                .token_sealer
                .seal(organization_id.as_str(), token),
            organization_id: organization_id.clone(),
            account_email: email,
            linked_at: self.now(),
            revoked_at: None,
        };
        if !self.store().put_gsc_account(&account).await? {
            return Err(Error::NotFound("organization"));
        }
        self.inner.gsc_tokens.forget(&account.organization_id);
        Ok(GscAccountView {
            organization_id: account.organization_id,
            account_email: account.account_email,
            linked_at: account.linked_at,
            token_revoked: false,
        })
    }
}

impl Admin<'_> {
    /// `PUT /admin/organizations/{orgId}/gsc`: links (or links again) the organization's
    /// Google account; its refresh token is sealed with the host's secret.
    pub async fn link_organization_gsc(
        &self,
        organization_id: &OrganizationId,
        link: GscAccountLink,
    ) -> Result<GscAccountView> {
        let token = link.refresh_token.trim();
        if token.is_empty()
            || token.len() > MAX_REFRESH_TOKEN_LEN
            || !token.bytes().all(|b| b.is_ascii_graphic())
        {
            return Err(Error::invalid(
                "refreshToken",
                format!("must be 1 to {MAX_REFRESH_TOKEN_LEN} visible ASCII characters"),
            ));
        }
        let email = link.account_email.map(|e| e.trim().to_owned());
        if let Some(email) = &email {
            let (local, domain) = email.split_once('@').unwrap_or_default();
            if local.is_empty()
                || domain.is_empty()
                || email.len() > 320
                || email.contains(char::is_whitespace)
            {
                return Err(Error::invalid("accountEmail", "must be an email address"));
            }
        }
        self.xf
            .save_gsc_account(organization_id, token, email)
            .await
    }

    /// `GET /admin/organizations/{orgId}/gsc/sites`: the Search Console sites the
    /// organization's linked Google account can see, asked of Google now: what a property
    /// can be mapped to.
    pub async fn gsc_sites(
        &self,
        organization_id: &OrganizationId,
    ) -> Result<crate::gsc::GscSites> {
        let client = self.xf.inner.search_console.clone().ok_or_else(|| {
            Error::GscNotConfigured(
                "Search Console is not configured on this host (no Google OAuth client)".into(),
            )
        })?;
        let (account, refresh_token) = self.xf.linked_google(organization_id).await?;
        let session = Session {
            client: &*client,
            tokens: &self.xf.inner.gsc_tokens,
            organization_id,
            linked_at: account.linked_at,
            refresh_token: &refresh_token,
            site_url: "",
            current: std::sync::Mutex::new(None),
        };
        match session.sites().await {
            Ok(sites) => Ok(crate::gsc::GscSites { sites }),
            Err(error) => Err(self.xf.google_failure(&account, error).await),
        }
    }
}
