//! Behaviours of scan history and of the issue list's further filters.

use std::sync::Arc;

use super::issues::{complete, finding};
use super::{
    first_page, issue, minutes, seed_job, seed_organization, seed_property, seed_running_job,
    TestStore,
};
use crate::model::{
    net_changes, ChangeCounts, IssueChange, IssueStatus, JobStatus, ScanKind, ScanRecord, Severity,
    SeverityCounts,
};
use crate::store::{IssueFilter, NewFinding, ScanFindings};

/// A finding of `check` with `severity`.
fn finding_of(check: &str, severity: Severity, kind: ScanKind, subject: &str) -> NewFinding {
    NewFinding {
        severity,
        ..finding(check, kind, subject, "seen")
    }
}

/// Each completion keeps the scan's record: its figures, its findings by severity and by
/// check, and what it changed (opened, resolved, reopened; a fixed issue found again
/// reopens), with one change row per issue changed. Records read back by job id and newest
/// first (strictly before a given one); the changes of a run of scans read back oldest scan
/// first and net out per issue. A scan whose attempt is not current keeps no record.
pub async fn history_records_each_completed_scan(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "History").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let base = site.url.trim_end_matches('/').to_owned();
    let (u1, u2) = (format!("{base}/one"), format!("{base}/two"));
    let mut runs = Vec::new();
    for n in 1..=3 {
        runs.push(seed_running_job(&*store, &org, &site, minutes(n)).await);
    }
    let scan = |n: usize, findings: Vec<NewFinding>| ScanFindings {
        organization_id: org.id.clone(),
        property_id: site.id.clone(),
        job_id: runs[n - 1].job.id.clone(),
        now: minutes(10 * n as i64),
        score: 50 + n as u32,
        pages_scanned: n as u64,
        findings,
        reached: vec![u1.clone(), u2.clone()],
        pages: Vec::new(),
    };
    let a = || finding_of("check_a", Severity::High, ScanKind::Page, &u1);
    let b = || finding_of("check_b", Severity::Critical, ScanKind::Page, &u2);
    let c = || finding_of("check_c", Severity::Low, ScanKind::Site, "robots.txt");
    let a2 = || finding_of("check_a", Severity::High, ScanKind::Page, &u2);

    // 1: a, b, c open. 2: a still open, a2 opens; b and c resolve. The host marks a fixed.
    // 3: a and b found again (both reopen), a2 resolves.
    let first = scan(1, vec![a(), b(), c()]);
    complete(&*store, &first, &runs[0]).await;
    let second = scan(2, vec![a(), a2()]);
    complete(&*store, &second, &runs[1]).await;
    let issues = store
        .list_issues(&site.id, &IssueFilter::default(), &first_page(10))
        .await
        .unwrap();
    let id_of = |check: &str, subject: &str| {
        issues
            .iter()
            .find(|i| i.issue_type == check && i.subject == subject)
            .unwrap_or_else(|| panic!("no {check} issue on {subject}"))
            .id
            .clone()
    };
    let (id_a, id_b, id_c, id_a2) = (
        id_of("check_a", &u1),
        id_of("check_b", &u2),
        id_of("check_c", "robots.txt"),
        id_of("check_a", &u2),
    );
    store.set_issue_fixed(&id_a, minutes(25)).await.unwrap();
    let third = scan(3, vec![a(), b()]);
    complete(&*store, &third, &runs[2]).await;

    let ids: Vec<_> = runs.iter().map(|run| run.job.id.clone()).collect();
    let mut records = store.scan_records(&ids).await.unwrap();
    records.sort_by_key(|record| record.completed_at);
    let expected =
        |scan: &ScanFindings, by_severity, by_check: &[(&str, u64)], changes| ScanRecord {
            job_id: scan.job_id.clone(),
            organization_id: org.id.clone(),
            property_id: site.id.clone(),
            completed_at: scan.now,
            score: scan.score,
            pages_scanned: scan.pages_scanned,
            issues_count: scan.findings.len() as u64,
            by_severity,
            by_check: by_check
                .iter()
                .map(|(check, n)| (check.to_string(), *n))
                .collect(),
            changes,
        };
    let severities = |critical, high, low| SeverityCounts {
        critical,
        high,
        medium: 0,
        low,
    };
    let changes = |opened, resolved, reopened| ChangeCounts {
        opened,
        resolved,
        reopened,
    };
    assert_eq!(
        records,
        vec![
            expected(
                &first,
                severities(1, 1, 1),
                &[("check_a", 1), ("check_b", 1), ("check_c", 1)],
                changes(3, 0, 0)
            ),
            expected(
                &second,
                severities(0, 2, 0),
                &[("check_a", 2)],
                changes(1, 2, 0)
            ),
            expected(
                &third,
                severities(1, 1, 0),
                &[("check_a", 1), ("check_b", 1)],
                changes(0, 1, 2)
            ),
        ]
    );
    let (r1, r2, r3) = (&records[0], &records[1], &records[2]);

    // Newest first, and strictly before a record.
    let recent = store.recent_scan_records(&site.id, None, 10).await.unwrap();
    assert_eq!(recent, vec![r3.clone(), r2.clone(), r1.clone()]);
    let before = store
        .recent_scan_records(&site.id, Some(r3), 1)
        .await
        .unwrap();
    assert_eq!(before, vec![r2.clone()]);
    assert!(store
        .recent_scan_records(&site.id, Some(r1), 10)
        .await
        .unwrap()
        .is_empty());

    // The change rows of scans 2 and 3, oldest scan first, each scan's by issue id.
    let rows = store.issue_changes(&site.id, Some(r1), r3).await.unwrap();
    let mut scan_two = [
        (id_a2.clone(), IssueChange::Opened),
        (id_b.clone(), IssueChange::Resolved),
        (id_c.clone(), IssueChange::Resolved),
    ];
    scan_two.sort_by(|x, y| x.0.as_str().cmp(y.0.as_str()));
    let mut scan_three = [
        (id_a.clone(), IssueChange::Reopened),
        (id_b.clone(), IssueChange::Reopened),
        (id_a2.clone(), IssueChange::Resolved),
    ];
    scan_three.sort_by(|x, y| x.0.as_str().cmp(y.0.as_str()));
    assert_eq!(
        rows.iter()
            .map(|row| (row.job_id.clone(), row.issue_id.clone(), row.change))
            .collect::<Vec<_>>(),
        scan_two
            .iter()
            .map(|(id, change)| (r2.job_id.clone(), id.clone(), *change))
            .chain(
                scan_three
                    .iter()
                    .map(|(id, change)| (r3.job_id.clone(), id.clone(), *change))
            )
            .collect::<Vec<_>>()
    );
    // From scan 1 to 3: a was open and is open again after a fix (reopened), b resolved and
    // reopened (no net change), c resolved, a2 opened and resolved (no net change).
    let mut net: Vec<_> = net_changes(&rows)
        .into_iter()
        .map(|(id, _, change)| (id, change))
        .collect();
    net.sort_by(|x, y| x.0.as_str().cmp(y.0.as_str()));
    let mut expected_net = vec![
        (id_a.clone(), IssueChange::Reopened),
        (id_c.clone(), IssueChange::Resolved),
    ];
    expected_net.sort_by(|x, y| x.0.as_str().cmp(y.0.as_str()));
    assert_eq!(net, expected_net);
    // From the start: every row of the three scans.
    assert_eq!(
        store.issue_changes(&site.id, None, r3).await.unwrap().len(),
        3 + 3 + 3
    );
    assert_eq!(
        store.issue_changes(&site.id, None, r1).await.unwrap().len(),
        3
    );

    // A scan whose attempt is not current: no record.
    let cancelled = seed_running_job(&*store, &org, &site, minutes(4)).await;
    store
        .cancel_job(&cancelled.job.id, minutes(40))
        .await
        .unwrap();
    let late = ScanFindings {
        job_id: cancelled.job.id.clone(),
        now: minutes(41),
        ..scan(3, vec![c()])
    };
    let done = store
        .complete_scan(late, &cancelled.attempt, &serde_json::json!({}))
        .await
        .unwrap();
    assert!(!done);
    assert!(store
        .scan_records(std::slice::from_ref(&cancelled.job.id))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        store.recent_scan_records(&site.id, None, 10).await.unwrap(),
        recent
    );
}

/// Scans of one property completing at the same time are applied one after the other: the
/// issue both find new is opened by exactly one of them, and every change row matches a
/// record's counts.
pub async fn history_concurrent_completions_count_each_change_once(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "History race").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let page = format!("{}/race", site.url.trim_end_matches('/'));
    for round in 0..4_i64 {
        let one = seed_running_job(&*store, &org, &site, minutes(10 * round + 1)).await;
        let two = seed_running_job(&*store, &org, &site, minutes(10 * round + 2)).await;
        let check = format!("check_race_{round}");
        let scan = |job: &crate::store::ClaimedJob, now: i64| ScanFindings {
            organization_id: org.id.clone(),
            property_id: site.id.clone(),
            job_id: job.job.id.clone(),
            now: minutes(now),
            score: 70,
            pages_scanned: 1,
            findings: vec![finding(&check, ScanKind::Page, &page, "race")],
            reached: vec![page.clone()],
            pages: Vec::new(),
        };
        let (first, second) = (scan(&one, 10 * round + 5), scan(&two, 10 * round + 6));
        let (store_a, store_b) = (Arc::clone(&store), Arc::clone(&store));
        let (a, b) = tokio::join!(
            tokio::spawn(async move { complete(&*store_a, &first, &one).await }),
            tokio::spawn(async move { complete(&*store_b, &second, &two).await }),
        );
        a.expect("first completion");
        b.expect("second completion");
    }
    let records = store
        .recent_scan_records(&site.id, None, 100)
        .await
        .unwrap();
    assert_eq!(records.len(), 8);
    let opened: u64 = records.iter().map(|r| r.changes.opened).sum();
    let resolved: u64 = records.iter().map(|r| r.changes.resolved).sum();
    // Each round's check is new: opened once per round. Each round resolves the previous
    // round's issue (same page, reached, not found) once.
    assert_eq!((opened, resolved), (4, 3));
    let last = &records[0];
    let rows = store.issue_changes(&site.id, None, last).await.unwrap();
    let mut counted = ChangeCounts::default();
    for row in &rows {
        counted.add(row.change);
    }
    assert_eq!(
        counted,
        ChangeCounts {
            opened: 4,
            resolved: 3,
            reopened: 0
        }
    );
}

/// The issue list's `type` (any of several checks), `severity` and `url` prefix filters, alone
/// and together with the others.
pub async fn history_issue_list_filters_by_check_severity_and_url(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Issue filters").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let scan = seed_job(&*store, &org, &site, minutes(1), JobStatus::Completed).await;
    let base = site.url.trim_end_matches('/').to_owned();
    let make = |check: &str, severity: Severity, path: &str, status: IssueStatus, n: i64| {
        let mut made = issue(&site, &scan.id, ScanKind::Page, status, minutes(n));
        made.issue_type = check.to_owned();
        made.severity = severity;
        made.url = Some(format!("{base}{path}"));
        made.subject = format!("{base}{path}");
        made
    };
    let i1 = make(
        "title_missing",
        Severity::High,
        "/blog/a",
        IssueStatus::Open,
        2,
    );
    let i2 = make(
        "h1_missing",
        Severity::Medium,
        "/blog/b",
        IssueStatus::Open,
        3,
    );
    let i3 = make(
        "title_missing",
        Severity::High,
        "/shop/a",
        IssueStatus::Resolved,
        4,
    );
    let i4 = make(
        "broken_link",
        Severity::Critical,
        "/blog_old",
        IssueStatus::Open,
        5,
    );
    let mut site_issue = issue(
        &site,
        &scan.id,
        ScanKind::Site,
        IssueStatus::Open,
        minutes(6),
    );
    site_issue.severity = Severity::High;
    for made in [&i1, &i2, &i3, &i4, &site_issue] {
        store.insert_issue(made).await.unwrap();
    }
    let list = |filter: IssueFilter| {
        let store = Arc::clone(&store);
        let property_id = site.id.clone();
        async move {
            store
                .list_issues(&property_id, &filter, &first_page(100))
                .await
                .unwrap()
                .into_iter()
                .map(|issue| issue.id)
                .collect::<Vec<_>>()
        }
    };
    let types = |checks: &[&str]| checks.iter().map(|c| c.to_string()).collect::<Vec<_>>();
    assert_eq!(
        list(IssueFilter {
            types: types(&["title_missing"]),
            ..IssueFilter::default()
        })
        .await,
        vec![i3.id.clone(), i1.id.clone()]
    );
    assert_eq!(
        list(IssueFilter {
            types: types(&["h1_missing", "broken_link"]),
            ..IssueFilter::default()
        })
        .await,
        vec![i4.id.clone(), i2.id.clone()]
    );
    assert_eq!(
        list(IssueFilter {
            severity: Some(Severity::High),
            ..IssueFilter::default()
        })
        .await,
        vec![site_issue.id.clone(), i3.id.clone(), i1.id.clone()]
    );
    // A prefix is compared byte for byte: `/blog/` is not `/blog_old`; site issues have no
    // address and never match.
    assert_eq!(
        list(IssueFilter {
            url_prefix: Some(format!("{base}/blog/")),
            ..IssueFilter::default()
        })
        .await,
        vec![i2.id.clone(), i1.id.clone()]
    );
    assert_eq!(
        list(IssueFilter {
            url_prefix: Some(format!("{base}/blog")),
            ..IssueFilter::default()
        })
        .await,
        vec![i4.id.clone(), i2.id.clone(), i1.id.clone()]
    );
    // A `%` or `_` in a prefix is a character, not a pattern.
    assert!(list(IssueFilter {
        url_prefix: Some(format!("{base}/%")),
        ..IssueFilter::default()
    })
    .await
    .is_empty());
    assert_eq!(
        list(IssueFilter {
            types: types(&["title_missing", "h1_missing"]),
            severity: Some(Severity::High),
            status: Some(IssueStatus::Open),
            url_prefix: Some(format!("{base}/blog/")),
            ..IssueFilter::default()
        })
        .await,
        vec![i1.id.clone()]
    );
    assert!(list(IssueFilter {
        types: types(&["viewport_missing"]),
        ..IssueFilter::default()
    })
    .await
    .is_empty());
}
