//! Issues.

use async_trait::async_trait;
use serde_json::Value;
use sqlx::{PgConnection, QueryBuilder};
use std::collections::HashMap;
use xf_core::store::text_rule::*;

use xf_core::ids::{IssueId, JobId, PropertyId};
use xf_core::model::{
    Issue, IssueChange, IssueChangeRecord, IssueStatus, IssueSummary, JobStatus, ScanRecord,
};
use xf_core::store::{
    Attempt, AttemptOutcome, Finish, IssueFilter, IssueStore, NewFinding, PageRequest,
    ScanFindings, StoreResult,
};
use xf_core::time::Timestamp;

use crate::error::store_error;
use crate::queue::finish_attempts;
use crate::rows::{self, at, at_opt, RowExt, ISSUE_COLUMNS, SCAN_HISTORY_COLUMNS};
use crate::{all, list_issues_query, one, PgStore};

#[async_trait]
impl IssueStore for PgStore {
    async fn insert_issue(&self, issue: &Issue) -> StoreResult<()> {
        let issue = &*stored(issue);
        sqlx::query(
            "INSERT INTO issues (id, organization_id, property_id, job_id, scan_kind, issue_type, \
             title, severity, url, evidence, how_to_fix, subject, status, created_at, \
             last_seen_at, resolved_at, fixed_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
        )
        .bind(issue.id.as_str())
        .bind(issue.organization_id.as_str())
        .bind(issue.property_id.as_str())
        .bind(issue.job_id.as_str())
        .bind(issue.scan_kind.as_str())
        .bind(&issue.issue_type)
        .bind(&issue.title)
        .bind(issue.severity.as_str())
        .bind(&issue.url)
        .bind(&issue.evidence)
        .bind(&issue.how_to_fix)
        .bind(&issue.subject)
        .bind(issue.status.as_str())
        .bind(at(issue.created_at))
        .bind(at(issue.last_seen_at))
        .bind(at_opt(issue.resolved_at))
        .bind(at_opt(issue.fixed_at))
        .execute(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(())
    }

    async fn complete_scan(
        &self,
        scan: ScanFindings,
        attempt: &Attempt,
        result: &Value,
    ) -> StoreResult<bool> {
        let mut scan = scan;
        scan.replace_nul();
        let result = &*stored(result);
        let mut tx = self.begin().await?;
        // The completion first: it succeeds only for the current attempt, and from then on the
        // job's row is locked, so a cancel waits and then finds it completed.
        let finish = Finish {
            attempt: attempt.clone(),
            outcome: AttemptOutcome::Completed(result.clone()),
        };
        let reached = finish_attempts(&mut tx, std::slice::from_ref(&finish), scan.now).await?;
        if reached != [Some(JobStatus::Completed)] {
            tx.rollback().await.map_err(store_error)?;
            return Ok(false);
        }
        // Two scans of one property may complete at the same time. Locking the property's row
        // first makes the second wait for the first to commit, so that it sees the issues (and
        // pages) as the first left them. (NO KEY UPDATE does not block the KEY SHARE locks of
        // foreign key checks.)
        sqlx::query("SELECT 1 FROM properties WHERE id = $1 FOR NO KEY UPDATE")
            .bind(scan.property_id.as_str())
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        let changes = apply_findings(&mut tx, &scan).await?;
        record_scan(&mut tx, &scan, &changes).await?;
        replace_scan_pages(&mut tx, &scan).await?;
        tx.commit().await.map_err(store_error)?;
        Ok(true)
    }

    async fn issues_by_ids(&self, ids: &[IssueId]) -> StoreResult<Vec<Issue>> {
        let ids: Vec<&str> = ids.iter().map(IssueId::as_str).collect();
        let found = sqlx::query(&format!(
            "SELECT {ISSUE_COLUMNS} FROM issues WHERE id = ANY($1::text[])"
        ))
        .bind(&ids)
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(found, rows::issue)
    }

    async fn scan_records(&self, job_ids: &[JobId]) -> StoreResult<Vec<ScanRecord>> {
        let ids: Vec<&str> = job_ids.iter().map(JobId::as_str).collect();
        let found = sqlx::query(&format!(
            "SELECT {SCAN_HISTORY_COLUMNS} FROM scan_history WHERE job_id = ANY($1::text[])"
        ))
        .bind(&ids)
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(found, rows::scan_record)
    }

    async fn recent_scan_records(
        &self,
        property_id: &PropertyId,
        before: Option<&ScanRecord>,
        limit: usize,
    ) -> StoreResult<Vec<ScanRecord>> {
        let found = sqlx::query(&format!(
            "SELECT {SCAN_HISTORY_COLUMNS} FROM scan_history \
             WHERE property_id = $1 AND ($2::timestamptz IS NULL OR (completed_at, job_id) < ($2, $3)) \
             ORDER BY completed_at DESC, job_id DESC LIMIT $4"
        ))
        .bind(property_id.as_str())
        .bind(before.map(|record| at(record.completed_at)))
        .bind(before.map(|record| record.job_id.as_str()))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(found, rows::scan_record)
    }

    async fn issue_changes(
        &self,
        property_id: &PropertyId,
        after: Option<&ScanRecord>,
        upto: &ScanRecord,
    ) -> StoreResult<Vec<IssueChangeRecord>> {
        let found = sqlx::query(
            "SELECT c.job_id, c.issue_id, c.issue_type, c.change \
             FROM issue_changes c JOIN scan_history h ON h.job_id = c.job_id \
             WHERE h.property_id = $1 \
               AND ($2::timestamptz IS NULL OR (h.completed_at, h.job_id) > ($2, $3)) \
               AND (h.completed_at, h.job_id) <= ($4, $5) \
             ORDER BY h.completed_at, h.job_id, c.issue_id",
        )
        .bind(property_id.as_str())
        .bind(after.map(|record| at(record.completed_at)))
        .bind(after.map(|record| record.job_id.as_str()))
        .bind(at(upto.completed_at))
        .bind(upto.job_id.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(found, rows::issue_change)
    }

    async fn get_issue(&self, id: &IssueId) -> StoreResult<Option<Issue>> {
        let row = sqlx::query(&format!("SELECT {ISSUE_COLUMNS} FROM issues WHERE id = $1"))
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(store_error)?;
        one(row, rows::issue)
    }

    async fn set_issue_fixed(&self, id: &IssueId, now: Timestamp) -> StoreResult<Option<Issue>> {
        let row = sqlx::query(&format!(
            "UPDATE issues SET status = 'fixed', fixed_at = COALESCE(fixed_at, $2) \
             WHERE id = $1 RETURNING {ISSUE_COLUMNS}"
        ))
        .bind(id.as_str())
        .bind(at(now))
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::issue)
    }

    async fn list_issues(
        &self,
        property_id: &PropertyId,
        filter: &IssueFilter,
        page: &PageRequest,
    ) -> StoreResult<Vec<Issue>> {
        let mut builder = QueryBuilder::new("");
        list_issues_query(&mut builder, property_id.as_str(), filter, page);
        let rows = builder
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(store_error)?;
        all(rows, rows::issue)
    }

    async fn issue_summary(&self, property_id: &PropertyId) -> StoreResult<IssueSummary> {
        let row = sqlx::query(
            "SELECT count(*) FILTER (WHERE status = 'open') AS open, \
                    count(*) FILTER (WHERE status = 'resolved') AS resolved, \
                    count(*) FILTER (WHERE status = 'fixed') AS fixed, \
                    count(*) AS total \
             FROM issues WHERE property_id = $1",
        )
        .bind(property_id.as_str())
        .fetch_one(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(IssueSummary {
            open: row.count("open")?,
            resolved: row.count("resolved")?,
            fixed: row.count("fixed")?,
            total: row.count("total")?,
        })
    }

    async fn issues_seen_at(
        &self,
        property_id: &PropertyId,
        at: Timestamp,
    ) -> StoreResult<Vec<Issue>> {
        let found = sqlx::query(&format!(
            "SELECT {ISSUE_COLUMNS} FROM issues \
             WHERE property_id = $1 AND created_at <= $2 AND last_seen_at >= $2 \
             ORDER BY issue_type COLLATE \"C\", subject COLLATE \"C\""
        ))
        .bind(property_id.as_str())
        .bind(rows::at(at))
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        found.iter().map(rows::issue).collect()
    }
}

/// The findings' lifecycle of [`IssueStore::complete_scan`], inside the caller's transaction
/// (which holds the property's row lock); returns what it changed.
///
/// One piece: the statements of one transaction in the order they must run (lock, match,
/// insert, update, record), each using what the one before returned.
async fn apply_findings(
    tx: &mut PgConnection,
    scan: &ScanFindings,
) -> StoreResult<Vec<IssueChangeRecord>> {
    let findings = &scan.findings;
    let ids: Vec<String> = findings
        .iter()
        .map(|_| IssueId::new().into_string())
        .collect();
    let column =
        |get: fn(&NewFinding) -> String| -> Vec<String> { findings.iter().map(get).collect() };
    let types = column(|f| f.issue_type.clone());
    let titles = column(|f| f.title.clone());
    let severities = column(|f| f.severity.as_str().to_owned());
    let kinds = column(|f| f.scan_kind.as_str().to_owned());
    let subjects = column(|f| f.subject.clone());
    let evidence = column(|f| f.evidence.clone());
    let fixes = column(|f| f.how_to_fix.clone());
    let urls: Vec<Option<String>> = findings.iter().map(|f| f.url.clone()).collect();
    // The states of the issues the findings name, before this scan: what the upsert does to
    // each is a change (opened, reopened) or none. Locked, so that a concurrent "mark fixed"
    // comes before or after, not between.
    let before_rows = sqlx::query(
        "SELECT i.issue_type, i.subject, i.status FROM issues i \
         JOIN UNNEST($2::text[], $3::text[]) AS f(issue_type, subject) \
           ON i.issue_type = f.issue_type AND i.subject = f.subject \
         WHERE i.property_id = $1 FOR UPDATE OF i",
    )
    .bind(scan.property_id.as_str())
    .bind(&types)
    .bind(&subjects)
    .fetch_all(&mut *tx)
    .await
    .map_err(store_error)?;
    let mut before: HashMap<(String, String), IssueStatus> = HashMap::new();
    for row in &before_rows {
        let status: String = row.col("status")?;
        let status = IssueStatus::parse(&status)
            .ok_or_else(|| xf_core::StoreError::internal(format!("issue status {status:?}")))?;
        before.insert((row.col("issue_type")?, row.col("subject")?), status);
    }
    // Every finding in one upsert on (property, type, subject): new ones are inserted
    // open, known ones take this scan's evidence and open again if they were resolved or
    // fixed.
    let upserted = sqlx::query(
        "INSERT INTO issues AS i (id, organization_id, property_id, job_id, scan_kind, \
                 issue_type, title, severity, url, evidence, how_to_fix, subject, status, \
                 created_at, last_seen_at) \
             SELECT f.id, $1, $2, $3, f.kind, f.issue_type, f.title, f.severity, f.url, \
                    f.evidence, f.fix, f.subject, 'open', $4, $4 \
             FROM UNNEST($5::text[], $6::text[], $7::text[], $8::text[], $9::text[], \
                         $10::text[], $11::text[], $12::text[], $13::text[]) \
                 AS f(id, issue_type, title, severity, kind, url, subject, evidence, fix) \
             ON CONFLICT (property_id, issue_type, subject) DO UPDATE SET \
                 job_id = EXCLUDED.job_id, last_seen_at = EXCLUDED.last_seen_at, \
                 url = EXCLUDED.url, evidence = EXCLUDED.evidence, title = EXCLUDED.title, \
                 severity = EXCLUDED.severity, how_to_fix = EXCLUDED.how_to_fix, \
                 status = 'open', resolved_at = NULL, fixed_at = NULL \
             RETURNING i.id, i.issue_type, i.subject",
    )
    .bind(scan.organization_id.as_str())
    .bind(scan.property_id.as_str())
    .bind(scan.job_id.as_str())
    .bind(at(scan.now))
    .bind(&ids)
    .bind(&types)
    .bind(&titles)
    .bind(&severities)
    .bind(&kinds)
    .bind(&urls)
    .bind(&subjects)
    .bind(&evidence)
    .bind(&fixes)
    .fetch_all(&mut *tx)
    .await
    .map_err(store_error)?;
    let mut changes = Vec::new();
    let mut change = |issue_id: IssueId, issue_type: String, change: IssueChange| {
        changes.push(IssueChangeRecord {
            job_id: scan.job_id.clone(),
            issue_id,
            issue_type,
            change,
        })
    };
    for row in &upserted {
        let key: (String, String) = (row.col("issue_type")?, row.col("subject")?);
        if let Some(made) = IssueChange::of_finding(before.get(&key).copied()) {
            change(row.id("id")?, key.0, made);
        }
    }
    // What this scan did not find (the upsert gave everything it found this scan's id) is
    // resolved, where the scan reached it.
    let resolved = sqlx::query(
        "UPDATE issues SET status = 'resolved', resolved_at = $3 \
             WHERE property_id = $1 AND status = 'open' AND job_id <> $2 \
               AND (subject NOT LIKE 'http://%' AND subject NOT LIKE 'https://%' \
                    OR subject = ANY($4::text[])) \
             RETURNING id, issue_type",
    )
    .bind(scan.property_id.as_str())
    .bind(scan.job_id.as_str())
    .bind(at(scan.now))
    .bind(&scan.reached)
    .fetch_all(&mut *tx)
    .await
    .map_err(store_error)?;
    for row in &resolved {
        change(row.id("id")?, row.col("issue_type")?, IssueChange::Resolved);
    }
    Ok(changes)
}

/// Keeps the scan's history record and its issue changes, inside the caller's transaction.
async fn record_scan(
    tx: &mut PgConnection,
    scan: &ScanFindings,
    changes: &[IssueChangeRecord],
) -> StoreResult<()> {
    let record = scan.record(changes);
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    sqlx::query(
        "INSERT INTO scan_history (job_id, organization_id, property_id, completed_at, score, \
             pages_scanned, issues_count, critical, high, medium, low, by_check, opened, \
             resolved, reopened) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
    )
    .bind(record.job_id.as_str())
    .bind(record.organization_id.as_str())
    .bind(record.property_id.as_str())
    .bind(at(record.completed_at))
    .bind(i32::try_from(record.score.min(100)).unwrap_or(100))
    .bind(count(record.pages_scanned))
    .bind(count(record.issues_count))
    .bind(count(record.by_severity.critical))
    .bind(count(record.by_severity.high))
    .bind(count(record.by_severity.medium))
    .bind(count(record.by_severity.low))
    .bind(sqlx::types::Json(&record.by_check))
    .bind(count(record.changes.opened))
    .bind(count(record.changes.resolved))
    .bind(count(record.changes.reopened))
    .execute(&mut *tx)
    .await
    .map_err(store_error)?;
    if changes.is_empty() {
        return Ok(());
    }
    let ids: Vec<&str> = changes.iter().map(|c| c.issue_id.as_str()).collect();
    let types: Vec<&str> = changes.iter().map(|c| c.issue_type.as_str()).collect();
    let kinds: Vec<&str> = changes.iter().map(|c| c.change.as_str()).collect();
    sqlx::query(
        "INSERT INTO issue_changes (job_id, issue_id, issue_type, change) \
         SELECT $1, c.issue_id, c.issue_type, c.change \
         FROM UNNEST($2::text[], $3::text[], $4::text[]) AS c(issue_id, issue_type, change)",
    )
    .bind(scan.job_id.as_str())
    .bind(&ids)
    .bind(&types)
    .bind(&kinds)
    .execute(&mut *tx)
    .await
    .map_err(store_error)?;
    Ok(())
}

/// The scan's pages replace the property's pages of its previous completed scan
/// (`scan_pages`, which Search Console's crawl correlation reads), inside the caller's
/// transaction. Each address appears once in `scan.pages`; their order is kept in `ord`.
async fn replace_scan_pages(tx: &mut PgConnection, scan: &ScanFindings) -> StoreResult<()> {
    // The caller holds the property's row lock: a second scan completing at the same time
    // deletes (and replaces) this one's pages instead of mixing both scans' pages.
    sqlx::query("DELETE FROM scan_pages WHERE property_id = $1")
        .bind(scan.property_id.as_str())
        .execute(&mut *tx)
        .await
        .map_err(store_error)?;
    if scan.pages.is_empty() {
        return Ok(());
    }
    let urls: Vec<&str> = scan.pages.iter().map(|page| page.url.as_str()).collect();
    let statuses: Vec<Option<i32>> = scan
        .pages
        .iter()
        .map(|page| page.status_code.map(i32::from))
        .collect();
    sqlx::query(
        "INSERT INTO scan_pages (property_id, url, job_id, status_code, ord) \
         SELECT $1, p.url, $2, p.status_code, p.ord::integer \
         FROM UNNEST($3::text[], $4::integer[]) WITH ORDINALITY AS p(url, status_code, ord)",
    )
    .bind(scan.property_id.as_str())
    .bind(scan.job_id.as_str())
    .bind(&urls)
    .bind(&statuses)
    .execute(&mut *tx)
    .await
    .map_err(store_error)?;
    Ok(())
}
