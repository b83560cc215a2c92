//! Properties and their issues.

use std::collections::HashMap;

use super::{Caller, Fingerprint, Xf};
use crate::api::{
    Includes, IssueListQuery, IssuePage, LastScan, NewProperty, Page, PageParams, PropertyGsc,
    PropertyView,
};
use crate::error::{Error, Result, StoreError};
use crate::ids;
use crate::model::{IssueStatus, Job, Property, ScanKind};
use crate::store::{After, IssueFilter};

/// Longest accepted property URL.
const MAX_URL_LEN: usize = 2048;
/// Longest accepted property name, in characters.
const MAX_NAME_LEN: usize = 200;

/// Checks and normalises a property URL: absolute `http`/`https` with a host and no
/// credentials; lower-case host, no default port, no fragment; path and query kept.
pub fn normalize_property_url(raw: &str) -> Result<(String, String)> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Err(Error::invalid("url", "must not be empty"));
    }
    if raw.len() > MAX_URL_LEN {
        return Err(Error::invalid(
            "url",
            format!("must be at most {MAX_URL_LEN} characters"),
        ));
    }
    let mut url = url::Url::parse(raw).map_err(|e| {
        Error::invalid(
            "url",
            format!("must be an absolute http or https URL ({e})"),
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Error::invalid("url", "must use http or https"));
    }
    let host = match url.host_str() {
        Some(host) if !host.is_empty() => host.to_owned(),
        _ => return Err(Error::invalid("url", "must have a host")),
    };
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Error::invalid("url", "must not contain credentials"));
    }
    // `Url` already lower-cases the host and drops the scheme's default port.
    url.set_fragment(None);
    Ok((url.to_string(), host))
}

impl Includes {
    /// Parses `include`: a comma-separated list of `gsc` and `lastScan`.
    pub fn parse(raw: Option<&str>) -> Result<Includes> {
        let mut includes = Includes::default();
        for part in raw
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            match part {
                "gsc" => includes.gsc = true,
                "lastScan" => includes.last_scan = true,
                other => {
                    return Err(Error::invalid(
                        "include",
                        format!("unknown enrichment `{other}`; allowed: gsc, lastScan"),
                    ))
                }
            }
        }
        Ok(includes)
    }
}

impl Xf {
    /// `POST /properties`.
    pub async fn create_property(
        &self,
        caller: &Caller,
        request: &Fingerprint,
        input: NewProperty,
    ) -> Result<Property> {
        let (url, host) = normalize_property_url(&input.url)?;
        let name = match input.name {
            None => host,
            Some(name) => {
                let name = name.trim();
                if name.is_empty() || name.chars().count() > MAX_NAME_LEN {
                    return Err(Error::invalid(
                        "name",
                        format!("must be 1 to {MAX_NAME_LEN} characters"),
                    ));
                }
                name.to_owned()
            }
        };
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
            return Ok(Property {
                id: self.mock_id(caller, request, ids::PROPERTY, 0),
                organization_id: caller.organization.id.clone(),
                name,
                url,
                verified: false,
                created_at: self.mock_time(),
                gsc_site_url: None,
            });
        }
        let property = Property {
            id: ids::new_id(ids::PROPERTY),
            organization_id: caller.organization.id.clone(),
            name,
            url: url.clone(),
            verified: false,
            created_at: self.now(),
            gsc_site_url: None,
        };
        match self.store().insert_property(&property).await {
            Ok(()) => Ok(property),
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
        let (request, limit) =
            self.page_request("properties", "", params, super::DEFAULT_PAGE_SIZE)?;
        let properties = self
            .store()
            .list_properties(&caller.organization.id, &request)
            .await?;
        let page = self.finish_page("properties", "", properties, limit, |p| After {
            created_at: p.created_at,
            id: p.id.clone(),
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
        id: &str,
        includes: Includes,
    ) -> Result<PropertyView> {
        let property = self.owned_property(caller, id).await?;
        self.property_view_with(property, includes).await
    }

    /// `GET /properties/{id}/issues`.
    pub async fn list_issues(
        &self,
        caller: &Caller,
        property_id: &str,
        query: &IssueListQuery,
        params: &PageParams,
    ) -> Result<IssuePage> {
        let filter = IssueFilter {
            scan_kind: parse_filter(
                query.scan_kind.as_deref(),
                "scanKind",
                ScanKind::parse,
                "site, page",
            )?,
            status: parse_filter(
                query.status.as_deref(),
                "status",
                IssueStatus::parse,
                "open, resolved, fixed",
            )?,
        };
        let property = self.owned_property(caller, property_id).await?;
        let filters = format!(
            "property={}&scanKind={}&status={}",
            property.id,
            filter.scan_kind.map_or("", |k| k.as_str()),
            filter.status.map_or("", |s| s.as_str()),
        );
        let (request, limit) =
            self.page_request("issues", &filters, params, super::DEFAULT_PAGE_SIZE)?;
        let issues = self
            .store()
            .list_issues(&property.id, &filter, &request)
            .await?;
        let summary = self.store().issue_summary(&property.id).await?;
        let issues = self.finish_page("issues", &filters, issues, limit, |i| After {
            created_at: i.created_at,
            id: i.id.clone(),
        });
        Ok(IssuePage { summary, issues })
    }

    /// The property `id` if it belongs to the caller's organization; `NotFound` otherwise,
    /// so that another organization's ids are indistinguishable from unknown ones.
    pub(super) async fn owned_property(&self, caller: &Caller, id: &str) -> Result<Property> {
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
            .ok_or_else(|| Error::Internal("property view went missing".into()))
    }

    /// The views of a page of properties, with one store call for all their latest scans.
    async fn property_views(
        &self,
        properties: Vec<Property>,
        includes: Includes,
    ) -> Result<Vec<PropertyView>> {
        let mut latest: HashMap<String, Job> = HashMap::new();
        if includes.last_scan && !properties.is_empty() {
            let ids: Vec<String> = properties.iter().map(|p| p.id.clone()).collect();
            for job in self.store().latest_jobs_for_properties(&ids).await? {
                latest.insert(job.property_id.clone(), job);
            }
        }
        Ok(properties
            .into_iter()
            .map(|property| {
                let gsc = includes.gsc.then(|| PropertyGsc {
                    linked: property.gsc_site_url.is_some(),
                    site_url: property.gsc_site_url.clone(),
                    last_synced_at: None,
                    clicks_28d: 0,
                    impressions_28d: 0,
                });
                let last_scan = includes.last_scan.then(|| {
                    latest.remove(&property.id).map(|job| LastScan {
                        job_id: job.id,
                        status: job.status,
                        score: job.result.map(|r| r.score),
                        pages_scanned: job.result.map(|r| r.pages_scanned),
                        issues_count: job.result.map(|r| r.issues_count),
                        completed_at: job.completed_at,
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

/// Parses an optional filter value, naming the allowed values when it is not one of them.
pub(super) fn parse_filter<T>(
    raw: Option<&str>,
    field: &str,
    parse: impl Fn(&str) -> Option<T>,
    allowed: &str,
) -> Result<Option<T>> {
    raw.map(|value| {
        parse(value).ok_or_else(|| Error::invalid(field, format!("must be one of: {allowed}")))
    })
    .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_urls() {
        let (url, host) = normalize_property_url(" HTTPS://Example.COM:443/Shop?q=1#top ").unwrap();
        assert_eq!(url, "https://example.com/Shop?q=1");
        assert_eq!(host, "example.com");
        assert_eq!(
            normalize_property_url("http://example.com:80").unwrap().0,
            "http://example.com/"
        );
        assert_eq!(
            normalize_property_url("http://example.com:8080/")
                .unwrap()
                .0,
            "http://example.com:8080/"
        );
    }

    #[test]
    fn rejects_bad_urls() {
        for bad in [
            "",
            "example.com",
            "ftp://example.com",
            "https://user:pw@example.com",
            "mailto:a@b.c",
            "http://",
        ] {
            assert!(normalize_property_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn parses_includes() {
        assert_eq!(
            Includes::parse(Some("gsc,lastScan")).unwrap(),
            Includes {
                gsc: true,
                last_scan: true
            }
        );
        assert_eq!(Includes::parse(None).unwrap(), Includes::default());
        assert!(Includes::parse(Some("gsc,owner")).is_err());
    }
}
