//! Issues.

use async_trait::async_trait;
use serde_json::Value;
use sqlx::{PgConnection, QueryBuilder};
use xf_core::ids::{IssueId, PropertyId};
use xf_core::model::JobStatus;
use xf_core::model::{Issue, IssueSummary};
use xf_core::store::{
    Attempt, AttemptOutcome, Finish, IssueFilter, IssueStore, NewFinding, PageRequest,
    ScanFindings, StoreResult,
};
use xf_core::time::Timestamp;

use crate::error::store_error;
use crate::queue::finish_attempts;
use crate::rows::{self, at, at_opt, RowExt, ISSUE_COLUMNS};
use crate::{all, list_issues_query, one, PgStore};

#[async_trait]
impl IssueStore for PgStore {
    async fn insert_issue(&self, issue: &Issue) -> StoreResult<()> {
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
        scan: &ScanFindings,
        attempt: &Attempt,
        result: &Value,
    ) -> StoreResult<bool> {
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
        apply_findings(&mut tx, scan).await?;
        replace_scan_pages(&mut tx, scan).await?;
        tx.commit().await.map_err(store_error)?;
        Ok(true)
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

/// The findings' lifecycle of [`IssueStore::complete_scan`], inside the caller's transaction.
async fn apply_findings(tx: &mut PgConnection, scan: &ScanFindings) -> StoreResult<()> {
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
    // Every finding in one upsert on (property, type, subject): new ones are inserted
    // open, known ones take this scan's evidence and open again if they were resolved or
    // fixed.
    sqlx::query(
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
                 status = 'open', resolved_at = NULL, fixed_at = NULL",
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
    .execute(&mut *tx)
    .await
    .map_err(store_error)?;
    // What this scan did not find (the upsert gave everything it found this scan's id) is
    // resolved, where the scan reached it.
    sqlx::query(
        "UPDATE issues SET status = 'resolved', resolved_at = $3 \
             WHERE property_id = $1 AND status = 'open' AND job_id <> $2 \
               AND (subject NOT LIKE 'http://%' AND subject NOT LIKE 'https://%' \
                    OR subject = ANY($4::text[]))",
    )
    .bind(scan.property_id.as_str())
    .bind(scan.job_id.as_str())
    .bind(at(scan.now))
    .bind(&scan.reached)
    .execute(&mut *tx)
    .await
    .map_err(store_error)?;
    Ok(())
}

/// The scan's pages replace the property's pages of its previous completed scan
/// (`scan_pages`, which Search Console's crawl correlation reads), inside the caller's
/// transaction. Each address appears once in `scan.pages`; their order is kept in `ord`.
async fn replace_scan_pages(tx: &mut PgConnection, scan: &ScanFindings) -> StoreResult<()> {
    // Two scans of one property may complete at the same time. Locking the property's row
    // first makes the second wait for the first to commit, so that its delete sees (and
    // removes) the first one's pages instead of mixing both scans' pages. (NO KEY UPDATE does
    // not block the KEY SHARE locks of foreign key checks.)
    sqlx::query("SELECT 1 FROM properties WHERE id = $1 FOR NO KEY UPDATE")
        .bind(scan.property_id.as_str())
        .execute(&mut *tx)
        .await
        .map_err(store_error)?;
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
