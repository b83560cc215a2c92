//! Health, the organization overview, usage, limits and live rate-limit counters.

use std::collections::BTreeMap;

use super::{Caller, Xf, API_VERSION, API_VERSION_LABEL};
use crate::api::{
    Activity, ActivityTotals, CrawlLimits, DeveloperApiLimits, Health, LimitsPeriod, LimitsReport,
    OrganizationOverview, OrganizationSummary, OverviewTotals, OverviewUsage, RateLimitHeaderNames,
    RateLimitsReport, Readiness, UsageLimits, UsageMeters, UsageReport, READ_REMAINING_HEADER,
    WRITE_REMAINING_HEADER,
};
use crate::error::Result;

/// How long [`Xf::readiness`] waits for the store.
pub const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

impl Xf {
    /// `GET /health`: `ok`, or `degraded` when storage does not answer.
    pub async fn health(&self) -> Health {
        let status = match self.store().ping().await {
            Ok(()) => "ok",
            Err(error) => {
                tracing::warn!(%error, "health check: storage does not answer");
                "degraded"
            }
        };
        Health {
            status: status.to_owned(),
            version: API_VERSION_LABEL.to_owned(),
            api_version: API_VERSION.to_owned(),
            timestamp: self.now(),
            status_page: self.config().status_page_url.clone(),
        }
    }

    /// What a readiness probe reports (see [`Readiness`]). The store gets
    /// [`PROBE_TIMEOUT`] to answer both of its questions.
    pub async fn readiness(&self) -> Readiness {
        let schema = async {
            self.store().ping().await?;
            self.store().schema_is_current().await
        };
        let (store, migrations) = match tokio::time::timeout(PROBE_TIMEOUT, schema).await {
            Ok(Ok(true)) => ("ok", "ok"),
            Ok(Ok(false)) => ("ok", "pending"),
            Ok(Err(error)) => {
                tracing::warn!(%error, "readiness: storage does not answer");
                ("unreachable", "unknown")
            }
            Err(_) => {
                tracing::warn!(?PROBE_TIMEOUT, "readiness: storage does not answer in time");
                ("unreachable", "unknown")
            }
        };
        let runtime = match &*self.runtime_stopped() {
            None => "not_started",
            Some(stopped) if *stopped.borrow() || stopped.has_changed().is_err() => "stopped",
            Some(_) => "running",
        };
        Readiness {
            store,
            migrations,
            runtime,
        }
    }

    /// `GET /organization`.
    pub async fn organization_overview(&self, caller: &Caller) -> Result<OrganizationOverview> {
        let org = &caller.organization;
        let properties = self.store().count_properties(&org.id).await?;
        let active_jobs = self.store().count_active_jobs(&org.id).await?;
        Ok(OrganizationOverview {
            organization: OrganizationSummary {
                id: org.id.clone(),
                name: org.name.clone(),
                plan: org.plan.clone(),
            },
            usage: OverviewUsage {
                plan: org.plan.clone(),
                period_label: self.now().as_datetime().format("%B %Y").to_string(),
            },
            totals: OverviewTotals {
                properties,
                active_jobs,
            },
        })
    }

    /// `GET /usage`: this UTC month's meters and job activity.
    pub async fn usage(&self, caller: &Caller) -> Result<UsageReport> {
        let now = self.now();
        let period = now.month_key();
        let org = &caller.organization;
        let counters = self.store().get_usage(&org.id, &period).await?;
        let by_type: BTreeMap<_, _> = self
            .store()
            .job_counts_by_type(&org.id, now.start_of_month(), now.next_month_start())
            .await?
            .into_iter()
            .collect();
        let totals = by_type
            .values()
            .fold(ActivityTotals::default(), |sum, c| ActivityTotals {
                jobs: sum.jobs + c.total,
                completed: sum.completed + c.completed,
                failed: sum.failed + c.failed,
            });
        Ok(UsageReport {
            usage: UsageMeters {
                period: period.clone(),
                plan: org.plan.clone(),
                counters,
                limits: UsageLimits {
                    scans_per_month: caller.limits.scans_per_month,
                    ai_credits_per_month: caller.limits.ai_credits_per_month,
                },
            },
            activity: Activity {
                period,
                totals,
                by_type,
            },
            crawl_limits: CrawlLimits {
                max_pages: caller.limits.max_pages,
                max_depth: caller.limits.max_depth,
            },
        })
    }

    /// `GET /limits`.
    pub fn limits(&self, caller: &Caller) -> LimitsReport {
        let now = self.now();
        let limits = &caller.limits;
        LimitsReport {
            plan: caller.organization.plan.clone(),
            period: LimitsPeriod {
                start: now.month_start_date().to_string(),
                end: now.month_end_date().to_string(),
            },
            developer_api: DeveloperApiLimits {
                read_per_hour: limits.read_per_hour,
                write_per_hour: limits.write_per_hour,
                org_write_daily: limits.org_write_daily,
                max_active_keys: limits.max_active_keys,
                rate_limit_headers: RateLimitHeaderNames {
                    read: READ_REMAINING_HEADER.to_owned(),
                    write: WRITE_REMAINING_HEADER.to_owned(),
                },
            },
        }
    }

    /// `GET /rate-limits`: the caller's live counters (this request included).
    pub async fn rate_limits(&self, caller: &Caller) -> Result<RateLimitsReport> {
        let [read, write, org_write_daily] = self.peek_rate_limits(caller).await?;
        Ok(RateLimitsReport {
            read,
            write,
            org_write_daily,
        })
    }
}
