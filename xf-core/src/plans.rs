//! The plan catalog: limits and entitlements per plan, and per-organization overrides.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What a plan gives access to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Entitlement {
    /// The SEO developer API.
    DeveloperApi,
    /// The media publishing API.
    MediaApi,
    /// Either API: what `/webhooks` needs (each API has events to deliver).
    EitherApi,
}

impl Entitlement {
    /// The name used in messages and the catalog.
    pub fn as_str(&self) -> &'static str {
        match self {
            Entitlement::DeveloperApi => "developerApi",
            Entitlement::MediaApi => "mediaApi",
            Entitlement::EitherApi => "developerApi or mediaApi",
        }
    }
}

/// The numeric limits of a plan, after overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// GET requests per key per UTC hour.
    pub read_per_hour: u64,
    /// POST/PATCH/DELETE requests per key per UTC hour.
    pub write_per_hour: u64,
    /// Writes per organization per UTC day, across all keys.
    pub org_write_daily: u64,
    /// Keys that may be active at once.
    pub max_active_keys: u64,
    /// Live scans per UTC month.
    pub scans_per_month: u64,
    /// AI credits per UTC month.
    pub ai_credits_per_month: u64,
    /// Most pages one scan may fetch.
    pub max_pages: u64,
    /// Deepest click depth one scan may follow.
    pub max_depth: u64,
}

/// Per-organization overrides set by the host; `None` keeps the plan's value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitOverrides {
    /// Overrides `readPerHour`.
    #[serde(default, deserialize_with = "crate::params::optional_count")]
    #[cfg_attr(
        feature = "openapi",
        schema(required = true, maximum = 1_000_000_000_000_u64)
    )]
    pub read_per_hour: Option<u64>,
    /// Overrides `writePerHour`.
    #[serde(default, deserialize_with = "crate::params::optional_count")]
    #[cfg_attr(
        feature = "openapi",
        schema(required = true, maximum = 1_000_000_000_000_u64)
    )]
    pub write_per_hour: Option<u64>,
    /// Overrides `orgWriteDaily`.
    #[serde(default, deserialize_with = "crate::params::optional_count")]
    #[cfg_attr(
        feature = "openapi",
        schema(required = true, maximum = 1_000_000_000_000_u64)
    )]
    pub org_write_daily: Option<u64>,
    /// Overrides `maxActiveKeys`.
    #[serde(default, deserialize_with = "crate::params::optional_count")]
    #[cfg_attr(
        feature = "openapi",
        schema(required = true, maximum = 1_000_000_000_000_u64)
    )]
    pub max_active_keys: Option<u64>,
    /// Overrides `scansPerMonth`.
    #[serde(default, deserialize_with = "crate::params::optional_count")]
    #[cfg_attr(
        feature = "openapi",
        schema(required = true, maximum = 1_000_000_000_000_u64)
    )]
    pub scans_per_month: Option<u64>,
    /// Overrides `maxPages`.
    #[serde(default, deserialize_with = "crate::params::optional_count")]
    #[cfg_attr(
        feature = "openapi",
        schema(required = true, maximum = 1_000_000_000_000_u64)
    )]
    pub max_pages: Option<u64>,
    /// Overrides `maxDepth`.
    #[serde(default, deserialize_with = "crate::params::optional_count")]
    #[cfg_attr(
        feature = "openapi",
        schema(required = true, maximum = 1_000_000_000_000_u64)
    )]
    pub max_depth: Option<u64>,
}

impl LimitOverrides {
    /// Each override by its name in the API.
    pub fn named(&self) -> [(&'static str, Option<u64>); 7] {
        [
            ("readPerHour", self.read_per_hour),
            ("writePerHour", self.write_per_hour),
            ("orgWriteDaily", self.org_write_daily),
            ("maxActiveKeys", self.max_active_keys),
            ("scansPerMonth", self.scans_per_month),
            ("maxPages", self.max_pages),
            ("maxDepth", self.max_depth),
        ]
    }

    /// `self` with `patch` applied: a field it gives replaces the override (`null` clears
    /// it, back to the plan's value); a field it leaves out keeps it.
    pub fn patched(&self, patch: &LimitsPatch) -> LimitOverrides {
        let apply = |given: Option<Option<u64>>, current: Option<u64>| given.unwrap_or(current);
        LimitOverrides {
            read_per_hour: apply(patch.read_per_hour, self.read_per_hour),
            write_per_hour: apply(patch.write_per_hour, self.write_per_hour),
            org_write_daily: apply(patch.org_write_daily, self.org_write_daily),
            max_active_keys: apply(patch.max_active_keys, self.max_active_keys),
            scans_per_month: apply(patch.scans_per_month, self.scans_per_month),
            max_pages: apply(patch.max_pages, self.max_pages),
            max_depth: apply(patch.max_depth, self.max_depth),
        }
    }
}

/// The `limits` of an organization's `PATCH`: a field left out keeps its override, `null`
/// clears it (the plan's value applies again), a number sets it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitsPatch {
    /// Sets or (`null`) clears `readPerHour`.
    #[serde(default, deserialize_with = "crate::params::patched_count")]
    #[cfg_attr(feature = "openapi", schema(maximum = 1_000_000_000_000_u64, nullable))]
    pub read_per_hour: Option<Option<u64>>,
    /// Sets or (`null`) clears `writePerHour`.
    #[serde(default, deserialize_with = "crate::params::patched_count")]
    #[cfg_attr(feature = "openapi", schema(maximum = 1_000_000_000_000_u64, nullable))]
    pub write_per_hour: Option<Option<u64>>,
    /// Sets or (`null`) clears `orgWriteDaily`.
    #[serde(default, deserialize_with = "crate::params::patched_count")]
    #[cfg_attr(feature = "openapi", schema(maximum = 1_000_000_000_000_u64, nullable))]
    pub org_write_daily: Option<Option<u64>>,
    /// Sets or (`null`) clears `maxActiveKeys`.
    #[serde(default, deserialize_with = "crate::params::patched_count")]
    #[cfg_attr(feature = "openapi", schema(maximum = 1_000_000_000_000_u64, nullable))]
    pub max_active_keys: Option<Option<u64>>,
    /// Sets or (`null`) clears `scansPerMonth`.
    #[serde(default, deserialize_with = "crate::params::patched_count")]
    #[cfg_attr(feature = "openapi", schema(maximum = 1_000_000_000_000_u64, nullable))]
    pub scans_per_month: Option<Option<u64>>,
    /// Sets or (`null`) clears `maxPages`.
    #[serde(default, deserialize_with = "crate::params::patched_count")]
    #[cfg_attr(feature = "openapi", schema(maximum = 1_000_000_000_000_u64, nullable))]
    pub max_pages: Option<Option<u64>>,
    /// Sets or (`null`) clears `maxDepth`.
    #[serde(default, deserialize_with = "crate::params::patched_count")]
    #[cfg_attr(feature = "openapi", schema(maximum = 1_000_000_000_000_u64, nullable))]
    pub max_depth: Option<Option<u64>>,
}

impl LimitsPatch {
    /// The numbers it sets, each with its field's name.
    pub fn set(&self) -> impl Iterator<Item = (&'static str, u64)> {
        [
            ("readPerHour", self.read_per_hour),
            ("writePerHour", self.write_per_hour),
            ("orgWriteDaily", self.org_write_daily),
            ("maxActiveKeys", self.max_active_keys),
            ("scansPerMonth", self.scans_per_month),
            ("maxPages", self.max_pages),
            ("maxDepth", self.max_depth),
        ]
        .into_iter()
        .filter_map(|(name, value)| Some((name, value.flatten()?)))
    }
}

/// A plan of the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Its name, as stored on organizations.
    pub name: String,
    /// Access to the SEO developer API.
    pub developer_api: bool,
    /// Access to the media publishing API.
    pub media_api: bool,
    /// The crawler tier shown as `crawlTier`.
    pub crawl_tier: String,
    /// Its limits.
    pub limits: Limits,
}

impl Plan {
    /// Whether the plan includes `entitlement`.
    pub fn has(&self, entitlement: Entitlement) -> bool {
        match entitlement {
            Entitlement::DeveloperApi => self.developer_api,
            Entitlement::MediaApi => self.media_api,
            Entitlement::EitherApi => self.developer_api || self.media_api,
        }
    }

    /// The plan's limits with `overrides` applied.
    pub fn limits_with(&self, overrides: &LimitOverrides) -> Limits {
        let base = self.limits;
        Limits {
            read_per_hour: overrides.read_per_hour.unwrap_or(base.read_per_hour),
            write_per_hour: overrides.write_per_hour.unwrap_or(base.write_per_hour),
            org_write_daily: overrides.org_write_daily.unwrap_or(base.org_write_daily),
            max_active_keys: overrides.max_active_keys.unwrap_or(base.max_active_keys),
            scans_per_month: overrides.scans_per_month.unwrap_or(base.scans_per_month),
            ai_credits_per_month: base.ai_credits_per_month,
            max_pages: overrides.max_pages.unwrap_or(base.max_pages),
            max_depth: overrides.max_depth.unwrap_or(base.max_depth),
        }
    }
}

/// The plans a host offers, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanCatalog {
    plans: BTreeMap<String, Plan>,
}

impl PlanCatalog {
    /// A catalog of exactly these plans.
    pub fn new(plans: impl IntoIterator<Item = Plan>) -> Self {
        Self {
            plans: plans.into_iter().map(|p| (p.name.clone(), p)).collect(),
        }
    }

    /// The plan called `name`.
    pub fn get(&self, name: &str) -> Option<&Plan> {
        self.plans.get(name)
    }

    /// Names of the plans that include `entitlement`, comma-separated, for messages.
    pub fn names_with(&self, entitlement: Entitlement) -> String {
        self.plans
            .values()
            .filter(|p| p.has(entitlement))
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// All plan names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.plans.keys().map(String::as_str)
    }
}

impl Default for PlanCatalog {
    /// `free`, `starter`, `growth` (developer API), `plus`, `pro` (media API).
    fn default() -> Self {
        #[allow(clippy::too_many_arguments)]
        fn plan(
            name: &str,
            developer_api: bool,
            media_api: bool,
            crawl_tier: &str,
            per_hour: (u64, u64),
            org_write_daily: u64,
            max_active_keys: u64,
            scans_and_credits: (u64, u64),
            crawl: (u64, u64),
        ) -> Plan {
            Plan {
                name: name.to_owned(),
                developer_api,
                media_api,
                crawl_tier: crawl_tier.to_owned(),
                limits: Limits {
                    read_per_hour: per_hour.0,
                    write_per_hour: per_hour.1,
                    org_write_daily,
                    max_active_keys,
                    scans_per_month: scans_and_credits.0,
                    ai_credits_per_month: scans_and_credits.1,
                    max_pages: crawl.0,
                    max_depth: crawl.1,
                },
            }
        }
        PlanCatalog::new([
            plan(
                "free",
                false,
                false,
                "basic",
                (100, 20),
                50,
                2,
                (10, 0),
                (25, 2),
            ),
            plan(
                "starter",
                true,
                false,
                "standard",
                (1_000, 100),
                1_000,
                3,
                (100, 1_000),
                (250, 3),
            ),
            plan(
                "growth",
                true,
                false,
                "advanced",
                (5_000, 500),
                5_000,
                10,
                (1_000, 10_000),
                (1_000, 5),
            ),
            plan(
                "plus",
                false,
                true,
                "standard",
                (5_000, 500),
                5_000,
                10,
                (100, 5_000),
                (250, 3),
            ),
            plan(
                "pro",
                false,
                true,
                "advanced",
                (10_000, 1_000),
                10_000,
                25,
                (1_000, 20_000),
                (1_000, 5),
            ),
        ])
    }
}
