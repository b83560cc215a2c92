//! The host's operations: what the spec says "happens in the web app". Served over HTTP by
//! the admin service of `xf-tower`, and callable directly from a host's Rust code.

use rand::distributions::{Alphanumeric, DistString};
use rand::rngs::OsRng;
use serde::{Deserialize, Serialize};

use super::Xf;
use crate::api::{Includes, Page, PageParams, PropertyView, ReportItem};
use crate::auth;
use crate::error::{Error, Result, StoreError};
use crate::ids::{ApiKeyId, IssueId, JobId, OrganizationId, PropertyId};
use crate::media::api::AdminChannelView;
use crate::media::Channel;
use crate::model::{ApiKey, Issue, JobStatus, KeyMode, Organization, Report, UsageCounters};
use crate::plans::{LimitOverrides, LimitsPatch};
use crate::store::After;
use crate::time::Timestamp;

/// The admin API's use cases, [`Xf::admin`]'s: what the host does for its customers, behind
/// the admin token (organizations and their keys, plans and limits, verifying properties,
/// marking issues fixed, reports, usage, Search Console links, connect links and channels).
/// Each method is one operation of the admin API; the methods live beside their domain's
/// (`xf/gsc.rs` has the Search Console ones, `xf/media.rs` the channels'), and this type's
/// documentation lists them all.
#[derive(Debug, Clone, Copy)]
pub struct Admin<'a> {
    pub(super) xf: &'a Xf,
}

impl Xf {
    /// The admin API's use cases ([`Admin`]): `xf.admin().create_organization(…)`.
    pub fn admin(&self) -> Admin<'_> {
        Admin { xf: self }
    }
}

/// Longest organization name, in characters.
const MAX_ORG_NAME: usize = 200;
/// The name of the organization `--demo` creates and reuses.
pub const DEMO_ORGANIZATION_NAME: &str = "Demo organization";

/// The name of the media API's demo organization (see [`Xf::ensure_media_demo_organization`]).
pub const MEDIA_DEMO_ORGANIZATION_NAME: &str = "Demo media organization";

/// Body of `POST /admin/organizations`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct NewOrganization {
    /// Display name: 1 to 200 characters once trimmed.
    #[cfg_attr(
        feature = "openapi",
        schema(min_length = 1, max_length = 200, pattern = r"\S")
    )]
    pub name: String,
    /// A plan of the catalog (the served document lists the host's).
    pub plan: String,
    /// Shown on jobs as `shopDomain`.
    #[serde(default)]
    pub shop_domain: Option<String>,
}

/// `201` of `POST /admin/organizations`: the organization and its first keys (shown once).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CreatedOrganization {
    /// The organization.
    pub organization: Organization,
    /// Its live key.
    pub live_key: String,
    /// Its test key.
    pub test_key: String,
}

/// Body of `PATCH /admin/organizations/{id}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OrganizationPatch {
    /// A plan of the catalog.
    #[serde(default)]
    pub plan: Option<String>,
    /// Overrides to set (a number) or clear (`null`, back to the plan's value); fields left
    /// out keep their current override.
    #[serde(default, deserialize_with = "crate::params::optional_object")]
    pub limits: Option<LimitsPatch>,
}

/// `201` of `POST /admin/organizations/{id}/api-keys`: the key, shown once.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreatedApiKey {
    /// `key_…`
    pub id: ApiKeyId,
    /// The full key.
    pub key: String,
}

/// `200` of `DELETE /admin/api-keys/{id}`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RevokedApiKey {
    /// `key_…`
    pub id: ApiKeyId,
    /// Always true.
    pub revoked: bool,
}

/// Body of `POST /admin/reports`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct NewReport {
    /// The property.
    pub property_id: String,
    /// A completed scan of that property.
    pub scan_id: String,
    /// When the link expires; must be in the future.
    pub expires_at: Timestamp,
}

/// Body of `POST /admin/organizations/{id}/usage`: increments, all optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UsageDelta {
    /// AI input tokens used.
    #[serde(default, deserialize_with = "crate::params::admin_count")]
    #[cfg_attr(feature = "openapi", schema(maximum = 1_000_000_000_000_u64))]
    pub ai_input_tokens: u64,
    /// AI output tokens used.
    #[serde(default, deserialize_with = "crate::params::admin_count")]
    #[cfg_attr(feature = "openapi", schema(maximum = 1_000_000_000_000_u64))]
    pub ai_output_tokens: u64,
    /// Redirects created.
    #[serde(default, deserialize_with = "crate::params::admin_count")]
    #[cfg_attr(feature = "openapi", schema(maximum = 1_000_000_000_000_u64))]
    pub redirects_created: u64,
    /// Images optimized.
    #[serde(default, deserialize_with = "crate::params::admin_count")]
    #[cfg_attr(feature = "openapi", schema(maximum = 1_000_000_000_000_u64))]
    pub images_optimized: u64,
}

impl Xf {
    /// A page of one of an existing organization's lists that the store gives whole (its
    /// keys or channels: a few each), the cursor bound to the list and the organization.
    async fn admin_page<T: OrganizationList>(
        &self,
        list: &str,
        organization_id: &OrganizationId,
        params: &PageParams,
        position: impl Fn(&T) -> (Timestamp, &str),
    ) -> Result<Page<T>> {
        let filters = organization_id.as_str();
        let (request, limit) = self.page_request(list, filters, params)?;
        self.admin().get_organization(organization_id).await?;
        let mut items = T::load(self, organization_id).await?;
        if let Some(after) = &request.after {
            items.retain(|item| position(item) < (after.created_at, after.id.as_str()));
        }
        items.sort_unstable_by(|a, b| position(b).cmp(&position(a)));
        items.truncate(request.limit);
        Ok(self.finish_page(list, filters, items, limit, |item| {
            let (created_at, id) = position(item);
            After {
                created_at,
                id: id.to_owned(),
            }
        }))
    }

    /// The demo organization on the `growth` plan: created on first use, reused after (on a
    /// durable store). Keys fixed by the host are reused or added; otherwise fresh keys are
    /// issued and the demo's earlier keys of that mode are revoked. A new demo organization is
    /// stored together with its keys in one store operation.
    pub async fn ensure_demo_organization(
        &self,
        live_key: Option<String>,
        test_key: Option<String>,
    ) -> Result<CreatedOrganization> {
        let fields = ["XF_DEMO_LIVE_KEY", "XF_DEMO_TEST_KEY"];
        self.ensure_demo(
            DEMO_ORGANIZATION_NAME,
            "growth",
            [live_key, test_key],
            fields,
        )
        .await
    }

    /// The media API's demo organization, on the `pro` plan (no plan of the default catalog
    /// has both APIs, so a newcomer gets one organization for each): created on first use,
    /// reused after, with fresh keys each time.
    /// Fixed keys (`live_key`, `test_key`) are used as [`Xf::ensure_demo_organization`] uses
    /// its own, so that commands copied from a guide keep working after a restart.
    pub async fn ensure_media_demo_organization(
        &self,
        live_key: Option<String>,
        test_key: Option<String>,
    ) -> Result<CreatedOrganization> {
        let fields = ["XF_DEMO_MEDIA_LIVE_KEY", "XF_DEMO_MEDIA_TEST_KEY"];
        self.ensure_demo(
            MEDIA_DEMO_ORGANIZATION_NAME,
            "pro",
            [live_key, test_key],
            fields,
        )
        .await
    }

    async fn ensure_demo(
        &self,
        name: &str,
        plan: &str,
        [live_key, test_key]: [Option<String>; 2],
        [live_field, test_field]: [&str; 2],
    ) -> Result<CreatedOrganization> {
        for (key, mode, field) in [
            (&live_key, KeyMode::Live, live_field),
            (&test_key, KeyMode::Test, test_field),
        ] {
            if let Some(key) = key {
                if !auth::is_well_formed(key, mode) {
                    return Err(Error::invalid(
                        field,
                        format!(
                            "must be `{}` followed by at least {} letters or digits",
                            mode.key_prefix(),
                            auth::MIN_KEY_BODY_LEN
                        ),
                    ));
                }
            }
        }
        if let Some(organization) = self.store().find_organization_by_name(name).await? {
            let live_key = self
                .demo_key(&organization, KeyMode::Live, live_key)
                .await?;
            let test_key = self
                .demo_key(&organization, KeyMode::Test, test_key)
                .await?;
            return Ok(CreatedOrganization {
                organization,
                live_key,
                test_key,
            });
        }
        let organization = self.new_organization(NewOrganization {
            name: name.to_owned(),
            plan: plan.to_owned(),
            shop_domain: None,
        })?;
        // A new organization owns no keys yet, so a fixed key that is already stored belongs
        // to another one (or is revoked). Checked first for the clear error; a key stored
        // meanwhile still makes the insert fail, with nothing stored.
        for (key, mode) in [(&live_key, KeyMode::Live), (&test_key, KeyMode::Test)] {
            if let Some(key) = key {
                if self
                    .store()
                    .find_api_key(&auth::hash_key(key))
                    .await?
                    .is_some()
                {
                    return Err(demo_key_in_use(mode));
                }
            }
        }
        self.create_with_keys(organization, live_key, test_key)
            .await
    }

    async fn demo_key(
        &self,
        organization: &Organization,
        mode: KeyMode,
        fixed: Option<String>,
    ) -> Result<String> {
        if let Some(key) = &fixed {
            if let Some((existing, owner)) = self.store().find_api_key(&auth::hash_key(key)).await?
            {
                if owner.id == organization.id
                    && existing.revoked_at.is_none()
                    && existing.mode == mode
                {
                    return Ok(key.clone());
                }
                return Err(demo_key_in_use(mode));
            }
        }
        for key in self.store().list_api_keys(&organization.id).await? {
            if key.mode == mode && key.revoked_at.is_none() {
                self.store().revoke_api_key(&key.id, self.now()).await?;
                self.inner.keys.forget_key(&key.id);
            }
        }
        Ok(self.issue_key(organization, mode, fixed).await?.1)
    }

    fn check_plan(&self, plan: &str) -> Result<()> {
        if self.plans().get(plan).is_none() {
            let known = self.plans().names().collect::<Vec<_>>().join(", ");
            return Err(Error::invalid("plan", format!("must be one of: {known}")));
        }
        Ok(())
    }

    fn new_organization(&self, input: NewOrganization) -> Result<Organization> {
        let name = input.name.trim();
        if name.is_empty() || name.chars().count() > MAX_ORG_NAME {
            return Err(Error::invalid(
                "name",
                format!("must be 1 to {MAX_ORG_NAME} characters"),
            ));
        }
        self.check_plan(&input.plan)?;
        let shop_domain = input
            .shop_domain
            .map(|d| d.trim().to_owned())
            .filter(|d| !d.is_empty());
        Ok(Organization {
            id: OrganizationId::new(),
            name: name.to_owned(),
            plan: input.plan,
            shop_domain,
            limits: LimitOverrides::default(),
            created_at: self.now(),
        })
    }

    /// Stores a new organization with one live and one test key (the given ones, or random
    /// ones) in one store operation, so that no organization is ever left without its keys.
    async fn create_with_keys(
        &self,
        organization: Organization,
        live_key: Option<String>,
        test_key: Option<String>,
    ) -> Result<CreatedOrganization> {
        let max_active = self.max_active_keys(&organization)?;
        let (live, live_key) = self.new_key(&organization, KeyMode::Live, live_key);
        let (test, test_key) = self.new_key(&organization, KeyMode::Test, test_key);
        let keys = [live, test];
        if keys.len() as u64 > max_active {
            return Err(Error::Conflict(format!(
                "a new organization gets {} keys but its plan allows at most {max_active} active keys (maxActiveKeys)",
                keys.len()
            )));
        }
        match self
            .store()
            .insert_organization_with_keys(&organization, &keys)
            .await
        {
            Ok(()) => Ok(CreatedOrganization {
                organization,
                live_key,
                test_key,
            }),
            Err(StoreError::Duplicate("api key")) => Err(key_in_use()),
            Err(other) => Err(other.into()),
        }
    }

    /// Stores a key (the given one, or a random one) within `maxActiveKeys`; returns its id and
    /// the plain key.
    async fn issue_key(
        &self,
        organization: &Organization,
        mode: KeyMode,
        fixed: Option<String>,
    ) -> Result<(ApiKeyId, String)> {
        let max_active = self.max_active_keys(organization)?;
        let (record, key) = self.new_key(organization, mode, fixed);
        match self.store().insert_api_key(&record, max_active).await {
            Ok(()) => Ok((record.id, key)),
            Err(StoreError::LimitReached(_)) => Err(Error::Conflict(format!(
                "the organization already has its maximum of {max_active} active keys (maxActiveKeys); revoke one first"
            ))),
            Err(StoreError::Duplicate(_)) => Err(key_in_use()),
            Err(other) => Err(other.into()),
        }
    }

    /// The organization's `maxActiveKeys`. Organizations only get plans of the catalog, so a
    /// plan it lacks is a broken invariant, not a cap of zero.
    fn max_active_keys(&self, organization: &Organization) -> Result<u64> {
        let plan = self.plans().get(&organization.plan).ok_or_else(|| {
            Error::internal(format!(
                "organization {} has plan {:?}, which the plan catalog lacks",
                organization.id, organization.plan
            ))
        })?;
        Ok(plan.limits_with(&organization.limits).max_active_keys)
    }

    /// A new key record of the organization (for the given key, or a random one), not stored
    /// yet, and the plain key.
    fn new_key(
        &self,
        organization: &Organization,
        mode: KeyMode,
        fixed: Option<String>,
    ) -> (ApiKey, String) {
        let key = fixed.unwrap_or_else(|| auth::generate_key(mode));
        let record = ApiKey {
            id: ApiKeyId::new(),
            organization_id: organization.id.clone(),
            mode,
            key_hash: auth::hash_key(&key),
            prefix: auth::shown_prefix(&key),
            created_at: self.now(),
            revoked_at: None,
            last_used_at: None,
        };
        // A fixed (demo) key may have been tried before it existed.
        self.inner.keys.forget_hash(&record.key_hash);
        (record, key)
    }
}

impl Admin<'_> {
    /// Creates an organization with one live and one test key.
    pub async fn create_organization(&self, input: NewOrganization) -> Result<CreatedOrganization> {
        let organization = self.xf.new_organization(input)?;
        self.xf.create_with_keys(organization, None, None).await
    }

    /// Changes an organization's plan and/or limit overrides.
    pub async fn update_organization(
        &self,
        id: &OrganizationId,
        patch: OrganizationPatch,
    ) -> Result<Organization> {
        let current = self
            .xf
            .store()
            .get_organization(id)
            .await?
            .ok_or(Error::NotFound("organization"))?;
        if let Some(plan) = &patch.plan {
            self.xf.check_plan(plan)?;
        }
        let max = crate::params::MAX_ADMIN_COUNT;
        for (name, value) in patch.limits.iter().flat_map(LimitsPatch::set) {
            if value > max {
                return Err(Error::invalid(
                    format!("limits.{name}"),
                    format!("must be at most {max}"),
                ));
            }
        }
        let limits = patch.limits.map(|l| current.limits.patched(&l));
        let updated = self
            .xf
            .store()
            .update_organization(id, patch.plan.as_deref(), limits.as_ref())
            .await?
            .ok_or(Error::NotFound("organization"))?;
        self.xf.inner.keys.forget_organization(id);
        Ok(updated)
    }

    /// Every organization, newest first, a page at a time.
    pub async fn list_organizations(&self, params: &PageParams) -> Result<Page<Organization>> {
        let (request, limit) = self.xf.page_request("admin-organizations", "", params)?;
        let organizations = self.xf.store().list_organizations(&request).await?;
        Ok(self
            .xf
            .finish_page("admin-organizations", "", organizations, limit, |o| After {
                created_at: o.created_at,
                id: o.id.as_str().to_owned(),
            }))
    }

    /// One organization.
    pub async fn get_organization(&self, id: &OrganizationId) -> Result<Organization> {
        self.xf
            .store()
            .get_organization(id)
            .await?
            .ok_or(Error::NotFound("organization"))
    }

    /// The organization's keys, revoked or not, newest first, a page at a time (never their
    /// secrets: a prefix to tell them apart).
    pub async fn list_api_keys(
        &self,
        organization_id: &OrganizationId,
        params: &PageParams,
    ) -> Result<Page<ApiKey>> {
        self.xf
            .admin_page("admin-api-keys", organization_id, params, |k: &ApiKey| {
                (k.created_at, k.id.as_str())
            })
            .await
    }

    /// The organization's channels, newest first, a page at a time (never their tokens).
    pub async fn list_channels(
        &self,
        organization_id: &OrganizationId,
        params: &PageParams,
    ) -> Result<Page<AdminChannelView>> {
        let page = self
            .xf
            .admin_page("admin-channels", organization_id, params, |c: &Channel| {
                (c.created_at, c.id.as_str())
            })
            .await?;
        Ok(page.map(AdminChannelView::from))
    }

    /// Issues a new key, within the organization's `maxActiveKeys`.
    pub async fn create_api_key(
        &self,
        organization_id: &OrganizationId,
        mode: KeyMode,
    ) -> Result<CreatedApiKey> {
        let organization = self
            .xf
            .store()
            .get_organization(organization_id)
            .await?
            .ok_or(Error::NotFound("organization"))?;
        let (id, key) = self.xf.issue_key(&organization, mode, None).await?;
        Ok(CreatedApiKey { id, key })
    }

    /// Revokes a key; requests with it get `401` from now on.
    pub async fn revoke_api_key(&self, id: &ApiKeyId) -> Result<RevokedApiKey> {
        let key = self
            .xf
            .store()
            .revoke_api_key(id, self.xf.now())
            .await?
            .ok_or(Error::NotFound("API key"))?;
        self.xf.inner.keys.forget_key(&key.id);
        Ok(RevokedApiKey {
            id: key.id,
            revoked: true,
        })
    }

    /// Marks a property verified.
    pub async fn verify_property(&self, id: &PropertyId) -> Result<PropertyView> {
        let property = self
            .xf
            .store()
            .set_property_verified(id)
            .await?
            .ok_or(Error::NotFound("property"))?;
        Ok(PropertyView {
            property,
            gsc: None,
            last_scan: None,
        })
    }

    /// Marks an issue fixed.
    pub async fn mark_issue_fixed(&self, id: &IssueId) -> Result<Issue> {
        self.xf
            .store()
            .set_issue_fixed(id, self.xf.now())
            .await?
            .ok_or(Error::NotFound("issue"))
    }

    /// Creates a share link for a completed scan of a property.
    pub async fn create_report(&self, input: NewReport) -> Result<ReportItem> {
        let now = self.xf.now();
        let property_id =
            PropertyId::parse(&input.property_id).map_err(|_| Error::NotFound("property"))?;
        let property = self
            .xf
            .store()
            .get_property(&property_id)
            .await?
            .ok_or(Error::NotFound("property"))?;
        let scan_id = JobId::parse(&input.scan_id).map_err(|_| Error::NotFound("scan"))?;
        let job = self
            .xf
            .store()
            .get_job(&scan_id)
            .await?
            .filter(|job| job.property_id() == Some(&property.id))
            .ok_or(Error::NotFound("scan"))?;
        if job.status != JobStatus::Completed {
            return Err(Error::invalid("scanId", "must be a completed scan"));
        }
        if input.expires_at <= now {
            return Err(Error::invalid("expiresAt", "must be in the future"));
        }
        let report = Report {
            // 32 base62 characters: about 190 bits, unguessable as a public link must be.
            token: Alphanumeric.sample_string(&mut OsRng, 32),
            organization_id: property.organization_id,
            property_id: property.id,
            scan_id: job.id,
            expires_at: input.expires_at,
            view_count: 0,
            created_at: now,
        };
        self.xf.store().insert_report(&report).await?;
        self.xf.report_item(report).await
    }

    /// Counts one view of a report's public page.
    pub async fn record_report_view(&self, token: &str) -> Result<ReportItem> {
        let report = self
            .xf
            .store()
            .increment_report_views(token)
            .await?
            .ok_or(Error::NotFound("report"))?;
        self.xf.report_item(report).await
    }

    /// Adds AI, redirect and image usage to this month's meters.
    pub async fn record_usage(
        &self,
        organization_id: &OrganizationId,
        delta: UsageDelta,
    ) -> Result<UsageCounters> {
        self.xf
            .store()
            .get_organization(organization_id)
            .await?
            .ok_or(Error::NotFound("organization"))?;
        let delta = UsageCounters {
            ai_input_tokens: delta.ai_input_tokens,
            ai_output_tokens: delta.ai_output_tokens,
            redirects_created: delta.redirects_created,
            images_optimized: delta.images_optimized,
            ..UsageCounters::default()
        };
        Ok(self
            .xf
            .store()
            .add_usage(organization_id, &self.xf.now().month_key(), &delta)
            .await?)
    }

    /// Links a property to a Search Console site (`siteUrl`, e.g. `sc-domain:example.com`).
    pub async fn link_property_gsc(&self, id: &PropertyId, site_url: &str) -> Result<PropertyView> {
        let site_url = site_url.trim();
        crate::gsc::check_site_url(site_url).map_err(|rule| Error::invalid("siteUrl", rule))?;
        let property = self
            .xf
            .store()
            .set_property_gsc_site(id, Some(site_url))
            .await?
            .ok_or(Error::NotFound("property"))?;
        self.xf
            .property_view_with(
                property,
                Includes {
                    gsc: true,
                    last_scan: false,
                },
            )
            .await
    }
}

/// A list of an organization's that the store gives whole.
#[async_trait::async_trait]
trait OrganizationList: Sized + Send {
    async fn load(xf: &Xf, organization_id: &OrganizationId) -> Result<Vec<Self>>;
}

#[async_trait::async_trait]
impl OrganizationList for ApiKey {
    async fn load(xf: &Xf, organization_id: &OrganizationId) -> Result<Vec<Self>> {
        Ok(xf.store().list_api_keys(organization_id).await?)
    }
}

#[async_trait::async_trait]
impl OrganizationList for Channel {
    async fn load(xf: &Xf, organization_id: &OrganizationId) -> Result<Vec<Self>> {
        Ok(xf.store().list_channels(organization_id).await?)
    }
}

fn key_in_use() -> Error {
    Error::Conflict("that key is already in use".to_owned())
}

fn demo_key_in_use(mode: KeyMode) -> Error {
    Error::Conflict(format!(
        "the {} demo key is already in use elsewhere or revoked",
        mode.as_str()
    ))
}
