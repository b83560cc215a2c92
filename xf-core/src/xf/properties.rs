//! Properties and their issues.

use std::collections::HashMap;

use super::{Caller, Fingerprint, Keep, Xf};
use crate::api::{
    Includes, IssueListQuery, IssuePage, LastScan, NewProperty, Page, PageParams, PropertyGsc,
    PropertyView,
};
use crate::error::{Error, Result, StoreError};
use crate::ids::{Id, PropertyId};
use crate::model::{JobRecord, Property};
use crate::params::PropertyUrl;
use crate::store::{After, IssueFilter, StoredResponse};

/// Normalises a property URL that matched [`PropertyUrl`]'s pattern: lower-case host, no
/// default port, no fragment; path and query kept. Returns the URL and its host.
pub fn normalize_property_url(url: &PropertyUrl) -> Result<(String, String)> {
    let mut parsed = url::Url::parse(url.as_str()).map_err(|e| {
        // The pattern admits only URLs the parser accepts; one that slips through is a bug in
        // the pattern, answered as bad input rather than with a 500.
        Error::invalid("url", format!("must be {} ({e})", PropertyUrl::EXPECTS))
    })?;
    let host = parsed
        .host_str()
        .filter(|host| !host.is_empty())
        .ok_or_else(|| Error::invalid("url", format!("must be {}", PropertyUrl::EXPECTS)))?
        .to_owned();
    // `Url` already lower-cases the host and drops the scheme's default port.
    parsed.set_fragment(None);
    Ok((parsed.to_string(), host))
}

impl Xf {
    /// `POST /properties`.
    pub async fn create_property(
        &self,
        caller: &Caller,
        request: &Fingerprint,
        input: NewProperty,
    ) -> Result<Property> {
        let (property, _) = self
            .create_property_keeping(caller, request, input, None)
            .await?;
        Ok(property)
    }

    /// [`create_property`](Self::create_property) under an idempotency key: the answer `keep`
    /// renders is kept in the insert's transaction, and returned beside the property when it
    /// was (not in test mode, which inserts nothing, nor when the insert fails).
    pub async fn create_property_keeping(
        &self,
        caller: &Caller,
        request: &Fingerprint,
        input: NewProperty,
        keep: Option<Keep<Property>>,
    ) -> Result<(Property, Option<StoredResponse>)> {
        let (url, host) = normalize_property_url(&input.url)?;
        let name = input
            .name
            .map(|name| name.as_str().trim().to_owned())
            .filter(|name| !name.is_empty())
            .unwrap_or(host);
        let conflict = || Error::Conflict(format!("a property with the URL {url} already exists"));
        if caller.is_test() {
            if self
                .store()
                .find_property_by_url(&caller.organization.id, &url)
                .await?
                .is_some()
            {
                return Err(conflict());
            }
            let property = Property {
                id: PropertyId::derived(&self.mock_digest(caller, request, PropertyId::PREFIX, 0)),
                organization_id: caller.organization.id.clone(),
                name,
                url,
                verified: false,
                created_at: self.mock_time(),
                gsc_site_url: None,
            };
            return Ok((property, None));
        }
        let property = Property {
            id: PropertyId::new(),
            organization_id: caller.organization.id.clone(),
            name,
            url: url.clone(),
            verified: false,
            created_at: self.now(),
            gsc_site_url: None,
        };
        let kept = keep.and_then(|keep| keep.kept(&property));
        let inserted = match &kept {
            Some(kept) => self.store().insert_property_keeping(&property, kept).await,
            None => self.store().insert_property(&property).await,
        };
        match inserted {
            Ok(()) => Ok((property, kept.map(|kept| kept.response))),
            Err(StoreError::Duplicate(_)) => Err(conflict()),
            Err(other) => Err(other.into()),
        }
    }

    /// `GET /properties`.
    pub async fn list_properties(
        &self,
        caller: &Caller,
        params: &PageParams,
        includes: Includes,
    ) -> Result<Page<PropertyView>> {
        let (request, limit) = self.page_request("properties", "", params)?;
        let properties = self
            .store()
            .list_properties(&caller.organization.id, &request)
            .await?;
        let page = self.finish_page("properties", "", properties, limit, |p| After {
            created_at: p.created_at,
            id: p.id.as_str().to_owned(),
        });
        Ok(Page {
            items: self.property_views(page.items, includes).await?,
            next_cursor: page.next_cursor,
        })
    }

    /// `GET /properties/{id}`.
    pub async fn get_property(
        &self,
        caller: &Caller,
        id: &PropertyId,
        includes: Includes,
    ) -> Result<PropertyView> {
        let property = self.owned_property(caller, id).await?;
        self.property_view_with(property, includes).await
    }

    /// `GET /properties/{id}/issues`.
    pub async fn list_issues(
        &self,
        caller: &Caller,
        property_id: &PropertyId,
        query: &IssueListQuery,
        params: &PageParams,
    ) -> Result<IssuePage> {
        let filter = issue_filter(query)?;
        let property = self.owned_property(caller, property_id).await?;
        let filters = format!("property={}&{}", property.id, canonical(&filter));
        let (request, limit) = self.page_request("issues", &filters, params)?;
        let issues = self
            .store()
            .list_issues(&property.id, &filter, &request)
            .await?;
        let summary = self.store().issue_summary(&property.id).await?;
        let issues = self.finish_page("issues", &filters, issues, limit, |i| After {
            created_at: i.created_at,
            id: i.id.as_str().to_owned(),
        });
        Ok(IssuePage { summary, issues })
    }

    /// The property's issues matching the list's filters, as CSV (beyond the spec): every
    /// one, read from the store a page at a time as the body is sent.
    pub async fn issues_csv(
        &self,
        caller: &Caller,
        property_id: &PropertyId,
        query: &IssueListQuery,
    ) -> Result<crate::export::IssueCsv> {
        let filter = issue_filter(query)?;
        let property = self.owned_property(caller, property_id).await?;
        Ok(crate::export::IssueCsv::new(
            self.store().clone(),
            property.id,
            filter,
        ))
    }

    /// The property `id` if it belongs to the caller's organization; `NotFound` otherwise,
    /// so that another organization's ids are indistinguishable from unknown ones.
    pub(super) async fn owned_property(
        &self,
        caller: &Caller,
        id: &PropertyId,
    ) -> Result<Property> {
        // A malformed id names nothing; checking its form first also keeps arbitrary bytes
        // (a NUL, say) away from the store.
        self.store()
            .get_property(id)
            .await?
            .filter(|p| p.organization_id == caller.organization.id)
            .ok_or(Error::NotFound("property"))
    }

    pub(super) async fn property_view_with(
        &self,
        property: Property,
        includes: Includes,
    ) -> Result<PropertyView> {
        let mut views = self.property_views(vec![property], includes).await?;
        views
            .pop()
            .ok_or_else(|| Error::internal("property view went missing"))
    }

    /// The views of a page of properties, with one store call for all their latest scans.
    async fn property_views(
        &self,
        properties: Vec<Property>,
        includes: Includes,
    ) -> Result<Vec<PropertyView>> {
        let mut latest: HashMap<PropertyId, JobRecord> = HashMap::new();
        if includes.last_scan && !properties.is_empty() {
            let ids: Vec<PropertyId> = properties.iter().map(|p| p.id.clone()).collect();
            for job in self.store().latest_jobs_for_properties(&ids).await? {
                if let Some(property_id) = job.property_id().cloned() {
                    latest.insert(property_id, job);
                }
            }
        }
        let mut snapshots = if includes.gsc {
            self.gsc_blocks(&properties).await?
        } else {
            HashMap::new()
        };
        Ok(properties
            .into_iter()
            .map(|property| {
                let gsc = includes.gsc.then(|| {
                    let snapshot = snapshots.remove(&property.id);
                    PropertyGsc {
                        linked: property.gsc_site_url.is_some(),
                        site_url: property.gsc_site_url.clone(),
                        last_synced_at: snapshot.as_ref().map(|s| s.synced_at),
                        clicks_28d: snapshot.as_ref().map_or(0, |s| s.totals.clicks),
                        impressions_28d: snapshot.as_ref().map_or(0, |s| s.totals.impressions),
                    }
                });
                let last_scan = includes.last_scan.then(|| {
                    latest.remove(&property.id).map(|job| {
                        let result = job.scan_result();
                        LastScan {
                            score: result.map(|r| r.score),
                            pages_scanned: result.map(|r| r.pages_scanned),
                            issues_count: result.map(|r| r.issues_count),
                            job_id: job.id,
                            status: job.status,
                            completed_at: job.completed_at,
                        }
                    })
                });
                PropertyView {
                    property,
                    gsc,
                    last_scan,
                }
            })
            .collect())
    }
}

/// The store's filter of the issue list's query; an unknown check id is a `400` naming it.
fn issue_filter(query: &IssueListQuery) -> Result<IssueFilter> {
    let mut types: Vec<String> = Vec::new();
    for id in query
        .types
        .as_ref()
        .map(|t| t.as_str())
        .unwrap_or("")
        .split(',')
    {
        if id.is_empty() {
            continue;
        }
        if !is_check_id(id) {
            return Err(Error::invalid(
                "type",
                format!("{id:?} is not a check id of the catalogue (docs/crawler.md)"),
            ));
        }
        if !types.iter().any(|known| known == id) {
            types.push(id.to_owned());
        }
    }
    types.sort();
    Ok(IssueFilter {
        scan_kind: query.scan_kind,
        status: query.status,
        types,
        severity: query.severity,
        url_prefix: query.url.as_ref().map(|u| u.as_str().to_owned()),
    })
}

/// The filters in one canonical form, for the cursor's signature.
fn canonical(filter: &IssueFilter) -> String {
    format!(
        "scanKind={}&status={}&type={}&severity={}&url={}",
        filter.scan_kind.map_or("", |k| k.as_str()),
        filter.status.map_or("", |s| s.as_str()),
        filter.types.join(","),
        filter.severity.map_or("", |s| s.as_str()),
        filter.url_prefix.as_deref().unwrap_or(""),
    )
}

/// Whether `id` names a check of the crawler's catalogue. Without the crawler (a host that
/// runs its own `seo-scan` handler), any id of the right form may name one of the host's.
fn is_check_id(id: &str) -> bool {
    #[cfg(feature = "crawler")]
    return crate::crawl::checks::Check::by_id(id).is_some();
    #[cfg(not(feature = "crawler"))]
    return !id.is_empty();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalized(raw: &str) -> String {
        normalize_property_url(&PropertyUrl::parse(raw).unwrap())
            .unwrap()
            .0
    }

    #[test]
    fn normalises_urls() {
        let url = PropertyUrl::parse("HTTPS://Example.COM:443/Shop?q=1#top").unwrap();
        let (url, host) = normalize_property_url(&url).unwrap();
        assert_eq!(url, "https://example.com/Shop?q=1");
        assert_eq!(host, "example.com");
        assert_eq!(normalized("http://example.com:80"), "http://example.com/");
        assert_eq!(
            normalized("http://example.com:8080/"),
            "http://example.com:8080/"
        );
    }
}
