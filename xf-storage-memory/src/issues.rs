//! Issues.

use async_trait::async_trait;
use std::collections::HashSet;
use xf_core::store::text_rule::*;

use serde_json::Value;
use xf_core::ids::{IssueId, JobId, PropertyId};
use xf_core::model::JobStatus;
use xf_core::model::{
    ChangeCounts, Issue, IssueChange, IssueChangeRecord, IssueStatus, IssueSummary, ScanRecord,
};
use xf_core::store::{
    subject_is_address, Attempt, AttemptOutcome, Finish, IssueFilter, IssueStore, NewFinding,
    PageRequest, ScanFindings, StoreResult,
};
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::{FastMap, MemoryStore, State};

#[async_trait]
impl IssueStore for MemoryStore {
    async fn insert_issue(&self, issue: &Issue) -> StoreResult<()> {
        let issue = &*stored(issue);
        let mut state = self.write();
        if state.issues.contains(issue.id.as_str()) {
            return Err(StoreError::Duplicate("issue id"));
        }
        let (property, issue_type, subject) = (
            issue.property_id.as_str(),
            issue.issue_type.as_str(),
            issue.subject.as_str(),
        );
        if state
            .issue_keys
            .get(property, issue_type, subject)
            .is_some()
        {
            return Err(StoreError::Duplicate("issue"));
        }
        let (owner, at, id) = (
            issue.property_id.as_str(),
            issue.created_at,
            issue.id.as_str(),
        );
        state.issues.insert(owner, at, id, issue);
        state
            .issue_keys
            .insert(property, issue_type, subject.to_owned(), id.to_owned());
        Ok(())
    }

    async fn complete_scan(
        &self,
        mut scan: ScanFindings,
        attempt: &Attempt,
        result: &Value,
    ) -> StoreResult<bool> {
        scan.replace_nul();
        let result = &*stored(result);
        let mut state = self.write();
        // The completion first: it happens only for the current attempt; the findings follow
        // under the same lock.
        let finish = Finish {
            attempt: attempt.clone(),
            outcome: AttemptOutcome::Completed(result.clone()),
        };
        if state.finish(&finish, scan.now) != Some(JobStatus::Completed) {
            return Ok(false);
        }
        // The record counts the findings (by severity and check), so it is made before they
        // are taken to become issues; the changes are counted once they are known.
        let mut record = scan.record(&[]);
        let findings = std::mem::take(&mut scan.findings);
        let changes = state.apply_findings(&scan, findings);
        record.changes = ChangeCounts::of(&changes);
        state.record_scan(record, changes);
        state.record_scan_pages(&scan.property_id, &scan.job_id, scan.pages);
        Ok(true)
    }

    async fn issues_by_ids(&self, ids: &[IssueId]) -> StoreResult<Vec<Issue>> {
        let state = self.read();
        Ok(ids
            .iter()
            .filter_map(|id| state.issues.get(id.as_str()))
            .collect())
    }

    async fn scan_records(&self, job_ids: &[JobId]) -> StoreResult<Vec<ScanRecord>> {
        let state = self.read();
        Ok(job_ids
            .iter()
            .filter_map(|id| state.scan_records.get(id.as_str()).cloned())
            .collect())
    }

    async fn recent_scan_records(
        &self,
        property_id: &PropertyId,
        before: Option<&ScanRecord>,
        limit: usize,
    ) -> StoreResult<Vec<ScanRecord>> {
        let state = self.read();
        Ok(state
            .scans_of(property_id, None, before)
            .rev()
            .take(limit)
            .map(|job| state.scan_records[job].clone())
            .collect())
    }

    async fn issue_changes(
        &self,
        property_id: &PropertyId,
        after: Option<&ScanRecord>,
        upto: &ScanRecord,
    ) -> StoreResult<Vec<IssueChangeRecord>> {
        let state = self.read();
        Ok(state
            .scans_of(property_id, after, Some(upto))
            .chain(std::iter::once(upto.job_id.as_str()))
            .filter_map(|job| state.issue_changes.get(job))
            .flatten()
            .cloned()
            .collect())
    }

    async fn get_issue(&self, id: &IssueId) -> StoreResult<Option<Issue>> {
        Ok(self.read().issues.get(id.as_str()))
    }

    async fn set_issue_fixed(&self, id: &IssueId, now: Timestamp) -> StoreResult<Option<Issue>> {
        Ok(self.write().issues.update(id.as_str(), |issue| {
            issue.status = IssueStatus::Fixed;
            issue.fixed_at.get_or_insert(now);
        }))
    }

    async fn list_issues(
        &self,
        property_id: &PropertyId,
        filter: &IssueFilter,
        page: &PageRequest,
    ) -> StoreResult<Vec<Issue>> {
        let state = self.read();
        state
            .issues
            .page(property_id.as_str(), page, |issue| filter.matches(issue))
    }

    async fn issue_summary(&self, property_id: &PropertyId) -> StoreResult<IssueSummary> {
        let state = self.read();
        let mut summary = IssueSummary::default();
        for issue in state.issues.of(property_id.as_str()) {
            summary.count(issue.status);
        }
        Ok(summary)
    }

    async fn issues_seen_at(
        &self,
        property_id: &PropertyId,
        at: Timestamp,
    ) -> StoreResult<Vec<Issue>> {
        let state = self.read();
        let mut seen: Vec<Issue> = state
            .issues
            .of(property_id.as_str())
            .filter(|i| i.created_at <= at && i.last_seen_at >= at)
            .cloned()
            .collect();
        seen.sort_by(|a, b| (&a.issue_type, &a.subject).cmp(&(&b.issue_type, &b.subject)));
        Ok(seen)
    }
}

/// Issue ids by property, check and subject (an issue's identity), found without building a
/// key.
#[derive(Debug, Default)]
pub(crate) struct IssueKeys(FastMap<String, FastMap<String, FastMap<String, String>>>);

impl IssueKeys {
    fn get(&self, property: &str, issue_type: &str, subject: &str) -> Option<&str> {
        let id = self.0.get(property)?.get(issue_type)?.get(subject)?;
        Some(id.as_str())
    }

    fn insert(&mut self, property: &str, issue_type: &str, subject: String, id: String) {
        // Looked up before an owned key is made: the property and the check are there
        // almost always.
        if !self.0.contains_key(property) {
            self.0.insert(property.to_owned(), FastMap::default());
        }
        let of_property = self.0.get_mut(property).expect("inserted above");
        if !of_property.contains_key(issue_type) {
            of_property.insert(issue_type.to_owned(), FastMap::default());
        }
        of_property
            .get_mut(issue_type)
            .expect("inserted above")
            .insert(subject, id);
    }
}

impl State {
    /// The job ids of the property's history records strictly between `after` and `before`
    /// (either end open when `None`), oldest first.
    fn scans_of<'a>(
        &'a self,
        property_id: &PropertyId,
        after: Option<&ScanRecord>,
        before: Option<&ScanRecord>,
    ) -> impl DoubleEndedIterator<Item = &'a str> + 'a {
        let property = property_id.to_string();
        let key = |record: &ScanRecord| {
            (
                property.clone(),
                record.completed_at,
                record.job_id.to_string(),
            )
        };
        let low = match after {
            Some(record) => std::ops::Bound::Excluded(key(record)),
            None => std::ops::Bound::Included((property.clone(), Timestamp::MIN, String::new())),
        };
        let high = match before {
            Some(record) => std::ops::Bound::Excluded(key(record)),
            None => std::ops::Bound::Included((property.clone(), Timestamp::MAX, String::new())),
        };
        self.scan_order
            .range((low, high))
            .map(|(_, _, job)| job.as_str())
    }

    /// Keeps a completed scan's history record and its issue changes.
    fn record_scan(&mut self, record: ScanRecord, mut changes: Vec<IssueChangeRecord>) {
        changes.sort_by(|a, b| a.issue_id.as_str().cmp(b.issue_id.as_str()));
        let job = record.job_id.to_string();
        self.scan_order.insert((
            record.property_id.to_string(),
            record.completed_at,
            job.clone(),
        ));
        self.scan_records.insert(job.clone(), record);
        self.issue_changes.insert(job, changes);
    }

    /// The lifecycle of [`IssueStore::complete_scan`] for `findings` (taken out of `scan`),
    /// under the caller's lock; returns what it changed.
    fn apply_findings(
        &mut self,
        scan: &ScanFindings,
        findings: Vec<NewFinding>,
    ) -> Vec<IssueChangeRecord> {
        let property = scan.property_id.as_str();
        let mut changes = Vec::new();
        let change = |issue: &Issue, change: IssueChange| IssueChangeRecord {
            job_id: scan.job_id.clone(),
            issue_id: issue.id.clone(),
            issue_type: issue.issue_type.clone(),
            change,
        };
        for finding in findings {
            let known = self
                .issue_keys
                .get(property, &finding.issue_type, &finding.subject)
                .and_then(|id| self.issues.get_mut(id));
            if let Some(issue) = known {
                if let Some(made) = IssueChange::of_finding(Some(issue.status)) {
                    changes.push(change(issue, made));
                }
                issue.job_id.clone_from(&scan.job_id);
                issue.last_seen_at = scan.now;
                issue.url = finding.url;
                issue.evidence = finding.evidence;
                issue.title = finding.title;
                issue.severity = finding.severity;
                issue.how_to_fix = finding.how_to_fix;
                issue.status = IssueStatus::Open;
                issue.resolved_at = None;
                issue.fixed_at = None;
                continue;
            }
            let id = IssueId::new();
            self.issue_keys.insert(
                property,
                &finding.issue_type,
                finding.subject.clone(),
                id.to_string(),
            );
            let issue = Issue {
                id,
                organization_id: scan.organization_id.clone(),
                property_id: scan.property_id.clone(),
                job_id: scan.job_id.clone(),
                scan_kind: finding.scan_kind,
                issue_type: finding.issue_type,
                title: finding.title,
                severity: finding.severity,
                url: finding.url,
                evidence: finding.evidence,
                how_to_fix: finding.how_to_fix,
                subject: finding.subject,
                status: IssueStatus::Open,
                created_at: scan.now,
                last_seen_at: scan.now,
                resolved_at: None,
                fixed_at: None,
            };
            changes.push(change(&issue, IssueChange::Opened));
            let id = issue.id.to_string();
            self.issues.insert_owned(property, scan.now, &id, || issue);
        }
        // What this scan did not find (everything it found now carries its job id) is
        // resolved, where the scan reached it.
        let reached: HashSet<&str> = scan.reached.iter().map(String::as_str).collect();
        self.issues.for_each_of(property, |issue| {
            if issue.status == IssueStatus::Open
                && issue.job_id != scan.job_id
                && (!subject_is_address(&issue.subject) || reached.contains(issue.subject.as_str()))
            {
                issue.status = IssueStatus::Resolved;
                issue.resolved_at = Some(scan.now);
                changes.push(change(issue, IssueChange::Resolved));
            }
        });
        changes
    }
}
