//! The public page of a shared report (`/r/{token}`): what it shows, and its view count.

use std::collections::BTreeMap;

use super::Xf;
use crate::error::{Error, Result};
use crate::model::{ChangeCounts, ScanKind, Severity};
use crate::time::Timestamp;

/// The most findings a check lists on the page; the rest are counted.
pub const MAX_LISTED_FINDINGS: usize = 100;

/// The most scans the page's score trend shows (the report's scan and those before it).
pub const TREND_SCANS: usize = 12;

/// What `GET /r/{token}` shows.
///
/// Not `#[non_exhaustive]`: the edge that is given one matches on it, and a variant
/// added must stop one that does not handle it from compiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportPage {
    /// A report that has not expired: the audit.
    Live(Box<Audit>),
    /// An expired report: only what it was and when it expired.
    Expired {
        /// The property's name.
        property_name: String,
        /// When the link expired.
        expired_at: Timestamp,
    },
}

/// The audit of one completed scan, as a shared report shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audit {
    /// The property's name.
    pub property_name: String,
    /// The property's URL.
    pub property_url: String,
    /// When the scan completed.
    pub scanned_at: Timestamp,
    /// Until when the link works.
    pub expires_at: Timestamp,
    /// 0 to 100.
    pub score: u32,
    /// Pages the scan fetched.
    pub pages_scanned: u32,
    /// Findings per severity, most serious first (all four, zeros included).
    pub counts: Vec<(Severity, u64)>,
    /// The findings grouped by check: most serious first, then most findings, then by id.
    pub checks: Vec<CheckFindings>,
    /// The scores of the property's recorded scans up to this one, oldest first (at most
    /// [`TREND_SCANS`]); empty when this scan completed before history was kept.
    pub trend: Vec<TrendPoint>,
    /// What this scan changed since the one before it; `None` when it has no record.
    pub changes: Option<ChangeCounts>,
}

/// One scan of a report's trend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrendPoint {
    /// When it completed.
    pub completed_at: Timestamp,
    /// Its score.
    pub score: u32,
}

/// The findings of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckFindings {
    /// The check's id (`type`).
    pub check: String,
    /// Its title.
    pub title: String,
    /// Its severity.
    pub severity: Severity,
    /// Page or site.
    pub scan_kind: ScanKind,
    /// How to fix it.
    pub how_to_fix: String,
    /// How many findings it has.
    pub total: usize,
    /// Up to [`MAX_LISTED_FINDINGS`] of them: the page (none for site findings) and what was
    /// found.
    pub findings: Vec<(Option<String>, String)>,
}

impl Xf {
    /// The page of the report `token`, counting the view (when `count_view`, so not for a
    /// `HEAD`) if the report is live. An unknown or malformed token is `NotFound`.
    pub async fn report_page(&self, token: &str, count_view: bool) -> Result<ReportPage> {
        let report = self
            .report_by_token(token)
            .await?
            .ok_or(Error::NotFound("report"))?;
        let property = self
            .store()
            .get_property(&report.property_id)
            .await?
            .ok_or_else(|| Error::internal(format!("report {token} lost its property")))?;
        if report.expires_at <= self.now() {
            return Ok(ReportPage::Expired {
                property_name: property.name,
                expired_at: report.expires_at,
            });
        }
        let job = self
            .store()
            .get_job(&report.scan_id)
            .await?
            .ok_or_else(|| Error::internal(format!("report {token} lost its scan")))?;
        let (Some(result), Some(scanned_at)) = (job.scan_result(), job.completed_at) else {
            return Err(Error::internal(format!(
                "report {token} shows scan {}, which has no result or completion time",
                job.id
            )));
        };
        let issues = self
            .store()
            .issues_seen_at(&property.id, scanned_at)
            .await?;
        let record = self
            .store()
            .scan_records(std::slice::from_ref(&job.id))
            .await?
            .pop();
        let (trend, changes) = match &record {
            Some(record) => {
                let mut earlier = self
                    .store()
                    .recent_scan_records(&property.id, Some(record), TREND_SCANS - 1)
                    .await?;
                earlier.reverse();
                earlier.push(record.clone());
                let trend = earlier
                    .iter()
                    .map(|r| TrendPoint {
                        completed_at: r.completed_at,
                        score: r.score,
                    })
                    .collect();
                (trend, Some(record.changes))
            }
            None => (Vec::new(), None),
        };
        if count_view {
            self.store().increment_report_views(token).await?;
        }
        let mut counts: BTreeMap<Severity, u64> = Severity::ALL.iter().map(|s| (*s, 0)).collect();
        let mut checks: BTreeMap<String, CheckFindings> = BTreeMap::new();
        for issue in issues {
            *counts.entry(issue.severity).or_default() += 1;
            let check = checks
                .entry(issue.issue_type.clone())
                .or_insert_with(|| CheckFindings {
                    check: issue.issue_type.clone(),
                    title: issue.title.clone(),
                    severity: issue.severity,
                    scan_kind: issue.scan_kind,
                    how_to_fix: issue.how_to_fix.clone(),
                    total: 0,
                    findings: Vec::new(),
                });
            check.total += 1;
            if check.findings.len() < MAX_LISTED_FINDINGS {
                check.findings.push((issue.url, issue.evidence));
            }
        }
        let mut checks: Vec<CheckFindings> = checks.into_values().collect();
        checks.sort_by(|a, b| {
            (a.severity, std::cmp::Reverse(a.total), &a.check).cmp(&(
                b.severity,
                std::cmp::Reverse(b.total),
                &b.check,
            ))
        });
        Ok(ReportPage::Live(Box::new(Audit {
            property_name: property.name,
            property_url: property.url,
            scanned_at,
            expires_at: report.expires_at,
            score: result.score,
            pages_scanned: result.pages_scanned,
            counts: Severity::ALL.iter().map(|s| (*s, counts[s])).collect(),
            checks,
            trend,
            changes,
        })))
    }
}
