//! Audits over time (beyond the spec): a property's scan history and the comparison of two of
//! its scans.

use std::collections::{BTreeMap, HashMap};

use super::{Caller, Xf};
use crate::api::{
    ChangesQuery, CheckDelta, IssueChangeItem, Page, PageParams, ScanComparison, ScanHistoryItem,
};
use crate::error::{Error, Result};
use crate::ids::{IssueId, JobId, PropertyId};
use crate::model::{net_changes, ChangeCounts, IssueChange, JobRecord, ScanRecord, SEO_SCAN};
use crate::store::{After, JobFilter};

/// A scan's history item: the job's state and times, with its record's figures when it has
/// one (else, for a completed scan, its job's result).
fn history_item(job: &JobRecord, record: Option<&ScanRecord>) -> ScanHistoryItem {
    let result = job.scan_result();
    ScanHistoryItem {
        job_id: job.id.clone(),
        status: job.status,
        created_at: job.created_at,
        started_at: job.started_at,
        completed_at: job.completed_at,
        error: job.error.clone(),
        score: record.map(|r| r.score).or(result.as_ref().map(|r| r.score)),
        pages_scanned: record
            .map(|r| r.pages_scanned)
            .or(result.as_ref().map(|r| u64::from(r.pages_scanned))),
        issues_count: record
            .map(|r| r.issues_count)
            .or(result.as_ref().map(|r| u64::from(r.issues_count))),
        by_severity: record.map(|r| r.by_severity),
        changes: record.map(|r| r.changes),
    }
}

impl Xf {
    /// `GET /properties/{propertyId}/scans`: the property's scans, newest first.
    pub async fn list_scans(
        &self,
        caller: &Caller,
        property_id: &PropertyId,
        params: &PageParams,
    ) -> Result<Page<ScanHistoryItem>> {
        let property = self.owned_property(caller, property_id).await?;
        let filter = JobFilter {
            status: None,
            property_id: Some(property.id.clone()),
            job_type: Some(SEO_SCAN.to_owned()),
        };
        let filters = format!("property={}", property.id);
        let (request, limit) = self.page_request("scans", &filters, params)?;
        let jobs = self
            .store()
            .list_jobs(&caller.organization.id, &filter, &request)
            .await?;
        let page = self.finish_page("scans", &filters, jobs, limit, |job| After {
            created_at: job.created_at,
            id: job.id.as_str().to_owned(),
        });
        let ids: Vec<JobId> = page.items.iter().map(|job| job.id.clone()).collect();
        let records: HashMap<String, ScanRecord> = self
            .store()
            .scan_records(&ids)
            .await?
            .into_iter()
            .map(|record| (record.job_id.to_string(), record))
            .collect();
        Ok(page.map(|job| history_item(&job, records.get(job.id.as_str()))))
    }

    /// `GET /properties/{propertyId}/scans/{jobId}/changes`: what changed between an earlier
    /// scan (`against`, or the one before) and this one, with the cursor of the next page of
    /// its changed issues.
    ///
    /// One piece: the scan, its predecessor, their records and the page of changed issues are
    /// read and checked in the order the errors are reported (404s first, then the cursor), and
    /// the answer is built from all of them at once.
    pub async fn scan_changes(
        &self,
        caller: &Caller,
        property_id: &PropertyId,
        job_id: &JobId,
        query: &ChangesQuery,
        params: &PageParams,
    ) -> Result<(ScanComparison, Option<String>)> {
        let property = self.owned_property(caller, property_id).await?;
        let (job, record) = self.recorded_scan(caller, &property.id, job_id).await?;
        let against = match &query.against {
            Some(id) => {
                let (job, earlier) = self.recorded_scan(caller, &property.id, id).await.map_err(
                    |error| match error {
                        Error::NotFound(_) | Error::Conflict(_) => Error::invalid(
                            "against",
                            format!(
                                "{error}; it must be an earlier completed scan of the property"
                            ),
                        ),
                        other => other,
                    },
                )?;
                if (earlier.completed_at, earlier.job_id.as_str())
                    >= (record.completed_at, record.job_id.as_str())
                {
                    return Err(Error::invalid(
                        "against",
                        "must be a scan that completed before this one",
                    ));
                }
                Some((job, earlier))
            }
            None => {
                let before = self
                    .store()
                    .recent_scan_records(&property.id, Some(&record), 1)
                    .await?
                    .pop();
                match before {
                    Some(earlier) => {
                        let job = self
                            .store()
                            .get_job(&earlier.job_id)
                            .await?
                            .ok_or_else(|| Error::internal("a recorded scan's job is gone"))?;
                        Some((job, earlier))
                    }
                    None => None,
                }
            }
        };
        let earlier = against.as_ref().map(|(_, record)| record);
        let records = self
            .store()
            .issue_changes(&property.id, earlier, &record)
            .await?;
        let net = net_changes(&records);

        // Per check: findings before and after, and the changes between.
        let mut checks: BTreeMap<String, CheckDelta> = BTreeMap::new();
        fn delta<'a>(
            checks: &'a mut BTreeMap<String, CheckDelta>,
            issue_type: &str,
        ) -> &'a mut CheckDelta {
            checks
                .entry(issue_type.to_owned())
                .or_insert_with(|| CheckDelta {
                    issue_type: issue_type.to_owned(),
                    before: 0,
                    after: 0,
                    delta: 0,
                    opened: 0,
                    resolved: 0,
                    reopened: 0,
                })
        }
        for (issue_type, count) in earlier.map(|r| &r.by_check).into_iter().flatten() {
            delta(&mut checks, issue_type).before = *count;
        }
        for (issue_type, count) in &record.by_check {
            delta(&mut checks, issue_type).after = *count;
        }
        let mut totals = ChangeCounts::default();
        for (_, issue_type, change) in &net {
            totals.add(*change);
            let entry = delta(&mut checks, issue_type);
            match change {
                IssueChange::Opened => entry.opened += 1,
                IssueChange::Resolved => entry.resolved += 1,
                IssueChange::Reopened => entry.reopened += 1,
            }
        }
        for entry in checks.values_mut() {
            entry.delta = i64::try_from(entry.after).unwrap_or(i64::MAX)
                - i64::try_from(entry.before).unwrap_or(i64::MAX);
        }

        // A page of the changed issues, by issue id.
        let filters = format!(
            "property={}&scan={}&against={}",
            property.id,
            record.job_id,
            earlier.map_or("", |r| r.job_id.as_str())
        );
        let (request, limit) = self.page_request("changes", &filters, params)?;
        let start = request.after.as_ref().map_or(0, |after| {
            net.partition_point(|(id, _, _)| id.as_str() <= after.id.as_str())
        });
        let slice = &net[start..net.len().min(start + request.limit)];
        let ids: Vec<IssueId> = slice.iter().map(|(id, _, _)| id.clone()).collect();
        let mut issues: HashMap<String, crate::model::Issue> = self
            .store()
            .issues_by_ids(&ids)
            .await?
            .into_iter()
            .map(|issue| (issue.id.to_string(), issue))
            .collect();
        let items: Vec<IssueChangeItem> = slice
            .iter()
            .filter_map(|(id, _, change)| {
                issues.remove(id.as_str()).map(|issue| IssueChangeItem {
                    change: *change,
                    issue,
                })
            })
            .collect();
        let page = self.finish_page("changes", &filters, items, limit, |item| After {
            created_at: record.completed_at,
            id: item.issue.id.as_str().to_owned(),
        });
        let comparison = ScanComparison {
            scan: history_item(&job, Some(&record)),
            against: against
                .as_ref()
                .map(|(job, record)| history_item(job, Some(record))),
            totals,
            checks: checks.into_values().collect(),
            changes: page.items,
        };
        Ok((comparison, page.next_cursor))
    }

    /// The caller's scan `job_id` of the property with its history record: `404` when it is
    /// no scan of this property, `409` when it has no record (not completed, or completed
    /// before history was kept).
    async fn recorded_scan(
        &self,
        caller: &Caller,
        property_id: &PropertyId,
        job_id: &JobId,
    ) -> Result<(JobRecord, ScanRecord)> {
        let job = self
            .store()
            .get_job(job_id)
            .await?
            .filter(|job| {
                job.organization_id == caller.organization.id
                    && job.job_type == SEO_SCAN
                    && job.property_id() == Some(property_id)
            })
            .ok_or(Error::NotFound("scan"))?;
        let record = self
            .store()
            .scan_records(std::slice::from_ref(&job.id))
            .await?
            .pop()
            .ok_or_else(|| {
                Error::Conflict(format!(
                    "scan {} has no recorded results: it is {}",
                    job.id,
                    if job.status == crate::model::JobStatus::Completed {
                        "from before scan history was kept"
                    } else {
                        job.status.as_str()
                    }
                ))
            })?;
        Ok((job, record))
    }
}
