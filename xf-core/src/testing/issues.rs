//! Behaviours of issues.

use std::sync::Arc;

use super::{
    first_page, issue, minutes, seed_job, seed_organization, seed_property, seed_running_job,
    sort_newest_first, walk_pages, TestStore,
};
use crate::ids::IssueId;
use crate::model::{Issue, IssueStatus, IssueSummary, JobStatus, ScanKind, Severity};
use crate::store::{After, IssueFilter, NewFinding, ScanFindings};

fn issue_position(issue: &Issue) -> After {
    After {
        created_at: issue.created_at,
        id: issue.id.to_string(),
    }
}

/// An inserted issue reads back equal; an unknown id is `None`.
pub async fn issue_insert_and_get(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Issues").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let scan = seed_job(&*store, &org, &site, minutes(1), JobStatus::Completed).await;
    let mut page_issue = issue(
        &site,
        &scan.id,
        ScanKind::Page,
        IssueStatus::Resolved,
        minutes(2),
    );
    page_issue.severity = Severity::Critical;
    page_issue.last_seen_at = minutes(3);
    page_issue.resolved_at = Some(minutes(4));
    let site_issue = issue(
        &site,
        &scan.id,
        ScanKind::Site,
        IssueStatus::Open,
        minutes(2),
    );
    store.insert_issue(&page_issue).await.unwrap();
    store.insert_issue(&site_issue).await.unwrap();

    assert_eq!(
        store.get_issue(&page_issue.id).await.unwrap(),
        Some(page_issue)
    );
    assert_eq!(
        store.get_issue(&site_issue.id).await.unwrap(),
        Some(site_issue)
    );
    assert_eq!(store.get_issue(&IssueId::new()).await.unwrap(), None);
}

/// `list_issues` is newest first (ties by id descending), scoped to the property, and
/// applies the scan-kind and status filters alone and together.
pub async fn issue_list_with_filters(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Issue lists").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let other_site = seed_property(&*store, &org, minutes(0)).await;
    let scan = seed_job(&*store, &org, &site, minutes(1), JobStatus::Completed).await;
    let other_scan = seed_job(&*store, &org, &other_site, minutes(1), JobStatus::Completed).await;

    let i1 = issue(
        &site,
        &scan.id,
        ScanKind::Page,
        IssueStatus::Open,
        minutes(2),
    );
    let i2 = issue(
        &site,
        &scan.id,
        ScanKind::Site,
        IssueStatus::Open,
        minutes(3),
    );
    let i3 = issue(
        &site,
        &scan.id,
        ScanKind::Page,
        IssueStatus::Resolved,
        minutes(4),
    );
    let i4 = issue(
        &site,
        &scan.id,
        ScanKind::Page,
        IssueStatus::Fixed,
        minutes(5),
    );
    let i5 = issue(
        &site,
        &scan.id,
        ScanKind::Site,
        IssueStatus::Fixed,
        minutes(5),
    );
    let foreign = issue(
        &other_site,
        &other_scan.id,
        ScanKind::Page,
        IssueStatus::Open,
        minutes(6),
    );
    for issue in [&i3, &i5, &foreign, &i1, &i4, &i2] {
        store.insert_issue(issue).await.unwrap();
    }

    let list = |scan_kind: Option<ScanKind>, status: Option<IssueStatus>| {
        let store = Arc::clone(&store);
        let property_id = site.id.clone();
        async move {
            store
                .list_issues(
                    &property_id,
                    &IssueFilter {
                        scan_kind,
                        status,
                        ..IssueFilter::default()
                    },
                    &first_page(100),
                )
                .await
                .unwrap()
        }
    };
    assert_eq!(
        list(None, None).await,
        vec![i5.clone(), i4.clone(), i3.clone(), i2.clone(), i1.clone()]
    );
    assert_eq!(
        list(Some(ScanKind::Page), None).await,
        vec![i4.clone(), i3.clone(), i1.clone()]
    );
    assert_eq!(
        list(Some(ScanKind::Site), None).await,
        vec![i5.clone(), i2.clone()]
    );
    assert_eq!(
        list(None, Some(IssueStatus::Open)).await,
        vec![i2.clone(), i1.clone()]
    );
    assert_eq!(
        list(None, Some(IssueStatus::Resolved)).await,
        vec![i3.clone()]
    );
    assert_eq!(
        list(None, Some(IssueStatus::Fixed)).await,
        vec![i5.clone(), i4.clone()]
    );
    assert_eq!(
        list(Some(ScanKind::Page), Some(IssueStatus::Fixed)).await,
        vec![i4.clone()]
    );
    assert_eq!(
        list(Some(ScanKind::Site), Some(IssueStatus::Resolved)).await,
        vec![]
    );
    assert_eq!(
        store
            .list_issues(&site.id, &IssueFilter::default(), &first_page(2))
            .await
            .unwrap(),
        vec![i5, i4]
    );
    assert_eq!(
        store
            .list_issues(&other_site.id, &IssueFilter::default(), &first_page(100))
            .await
            .unwrap(),
        vec![foreign]
    );
}

/// Keyset pagination of issues, unfiltered (25 in pages of 7) and filtered to page issues (16
/// of them in pages of 5), yields every matching issue exactly once, newest first.
pub async fn issue_list_pages_with_keyset(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Issue paging").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let scan = seed_job(&*store, &org, &site, minutes(0), JobStatus::Completed).await;
    let issues: Vec<Issue> = (0..25_i64)
        .map(|n| {
            let kind = if n % 3 == 0 {
                ScanKind::Site
            } else {
                ScanKind::Page
            };
            issue(
                &site,
                &scan.id,
                kind,
                IssueStatus::Open,
                minutes(1 + (n * 4) % 7),
            )
        })
        .collect();
    for n in (0..25).map(|n| (n * 11) % 25) {
        store.insert_issue(&issues[n]).await.unwrap();
    }
    let mut expected = issues.clone();
    sort_newest_first(&mut expected, |i| (i.created_at, i.id.clone()));

    let store_ref = &store;
    let property_id = &site.id;
    let all = IssueFilter::default();
    let filter_ref = &all;
    let pages = walk_pages(
        7,
        |page| async move { store_ref.list_issues(property_id, filter_ref, &page).await },
        issue_position,
    )
    .await;
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![7, 7, 7, 4]
    );
    assert_eq!(pages.concat(), expected);

    let page_only = IssueFilter {
        scan_kind: Some(ScanKind::Page),
        ..IssueFilter::default()
    };
    let filter_ref = &page_only;
    let pages = walk_pages(
        5,
        |page| async move { store_ref.list_issues(property_id, filter_ref, &page).await },
        issue_position,
    )
    .await;
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![5, 5, 5, 1]
    );
    let expected_pages: Vec<Issue> = expected
        .into_iter()
        .filter(|i| i.scan_kind == ScanKind::Page)
        .collect();
    assert_eq!(pages.concat(), expected_pages);
}

/// `issue_summary` counts all of the property's issues by state (only that property's), and
/// is all zeros for a property without issues.
pub async fn issue_summary_counts(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Summary").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let other_site = seed_property(&*store, &org, minutes(0)).await;
    let empty_site = seed_property(&*store, &org, minutes(0)).await;
    let scan = seed_job(&*store, &org, &site, minutes(1), JobStatus::Completed).await;
    let other_scan = seed_job(&*store, &org, &other_site, minutes(1), JobStatus::Completed).await;
    let statuses = [
        (ScanKind::Page, IssueStatus::Open),
        (ScanKind::Site, IssueStatus::Open),
        (ScanKind::Page, IssueStatus::Open),
        (ScanKind::Page, IssueStatus::Resolved),
        (ScanKind::Page, IssueStatus::Fixed),
        (ScanKind::Site, IssueStatus::Fixed),
    ];
    let mut opened = Vec::new();
    for (n, (kind, status)) in statuses.into_iter().enumerate() {
        let item = issue(&site, &scan.id, kind, status, minutes(2 + n as i64));
        store.insert_issue(&item).await.unwrap();
        if status == IssueStatus::Open {
            opened.push(item);
        }
    }
    store
        .insert_issue(&issue(
            &other_site,
            &other_scan.id,
            ScanKind::Page,
            IssueStatus::Open,
            minutes(2),
        ))
        .await
        .unwrap();

    assert_eq!(
        store.issue_summary(&site.id).await.unwrap(),
        IssueSummary {
            open: 3,
            resolved: 1,
            fixed: 2,
            total: 6
        }
    );
    store
        .set_issue_fixed(&opened[0].id, minutes(30))
        .await
        .unwrap()
        .expect("known issue");
    assert_eq!(
        store.issue_summary(&site.id).await.unwrap(),
        IssueSummary {
            open: 2,
            resolved: 1,
            fixed: 3,
            total: 6
        }
    );
    assert_eq!(
        store.issue_summary(&other_site.id).await.unwrap(),
        IssueSummary {
            open: 1,
            resolved: 0,
            fixed: 0,
            total: 1
        }
    );
    assert_eq!(
        store.issue_summary(&empty_site.id).await.unwrap(),
        IssueSummary::default()
    );
}

/// `set_issue_fixed` sets status fixed and `fixedAt` (keeping the first fix time, and any
/// `resolvedAt`) and returns the issue; an unknown id is `None`.
pub async fn issue_set_fixed_keeps_first_fixed_at(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Fixer").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let scan = seed_job(&*store, &org, &site, minutes(1), JobStatus::Completed).await;
    let open = issue(
        &site,
        &scan.id,
        ScanKind::Page,
        IssueStatus::Open,
        minutes(2),
    );
    let resolved = issue(
        &site,
        &scan.id,
        ScanKind::Site,
        IssueStatus::Resolved,
        minutes(3),
    );
    store.insert_issue(&open).await.unwrap();
    store.insert_issue(&resolved).await.unwrap();

    let fixed = Issue {
        status: IssueStatus::Fixed,
        fixed_at: Some(minutes(10)),
        ..open.clone()
    };
    assert_eq!(
        store.set_issue_fixed(&open.id, minutes(10)).await.unwrap(),
        Some(fixed.clone())
    );
    assert_eq!(
        store.set_issue_fixed(&open.id, minutes(20)).await.unwrap(),
        Some(fixed.clone())
    );
    assert_eq!(store.get_issue(&open.id).await.unwrap(), Some(fixed));

    let fixed_resolved = Issue {
        status: IssueStatus::Fixed,
        fixed_at: Some(minutes(11)),
        ..resolved.clone()
    };
    assert_eq!(fixed_resolved.resolved_at, Some(minutes(3)));
    assert_eq!(
        store
            .set_issue_fixed(&resolved.id, minutes(11))
            .await
            .unwrap(),
        Some(fixed_resolved.clone())
    );
    assert_eq!(
        store.get_issue(&resolved.id).await.unwrap(),
        Some(fixed_resolved)
    );
    assert_eq!(
        store
            .set_issue_fixed(&IssueId::new(), minutes(12))
            .await
            .unwrap(),
        None
    );
}

/// `issues_seen_at(property, t)` is the property's issues first found at or before `t` and
/// last seen at or after it, whatever their state now, ordered by check then subject; only
/// that property's.
pub async fn issue_seen_at_a_scan_time(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Seen").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let other_site = seed_property(&*store, &org, minutes(0)).await;
    let scan = seed_job(&*store, &org, &site, minutes(1), JobStatus::Completed).await;
    let at = minutes(10);
    // (first found, last seen, kind, status) and whether a scan at `at` saw it.
    let cases = [
        (
            minutes(2),
            minutes(10),
            ScanKind::Page,
            IssueStatus::Open,
            true,
        ),
        (
            minutes(10),
            minutes(10),
            ScanKind::Site,
            IssueStatus::Open,
            true,
        ),
        (
            minutes(3),
            minutes(20),
            ScanKind::Page,
            IssueStatus::Fixed,
            true,
        ),
        (
            minutes(4),
            minutes(9),
            ScanKind::Page,
            IssueStatus::Resolved,
            false,
        ),
        (
            minutes(11),
            minutes(12),
            ScanKind::Page,
            IssueStatus::Open,
            false,
        ),
    ];
    let mut expected = Vec::new();
    for (created_at, last_seen_at, kind, status, seen) in cases {
        let mut item = issue(&site, &scan.id, kind, status, created_at);
        item.last_seen_at = last_seen_at;
        store.insert_issue(&item).await.unwrap();
        if seen {
            expected.push(item);
        }
    }
    let elsewhere = issue(
        &other_site,
        &scan.id,
        ScanKind::Page,
        IssueStatus::Open,
        minutes(2),
    );
    store.insert_issue(&elsewhere).await.unwrap();
    expected.sort_by(|a, b| (&a.issue_type, &a.subject).cmp(&(&b.issue_type, &b.subject)));
    assert_eq!(store.issues_seen_at(&site.id, at).await.unwrap(), expected);
    assert_eq!(
        store.issues_seen_at(&site.id, minutes(0)).await.unwrap(),
        Vec::new()
    );
}

/// Completes the running scan `run` with `scan`'s findings.
pub(super) async fn complete(
    store: &dyn crate::store::Store,
    scan: &ScanFindings,
    run: &crate::store::ClaimedJob,
) {
    let result = serde_json::json!({"issuesCount": scan.findings.len()});
    let done = store
        .complete_scan(scan.clone(), &run.attempt, &result)
        .await
        .expect("complete the scan");
    assert!(done, "the scan's attempt is current");
}

/// A finding of a check for [`issue_scans_apply_the_lifecycle`].
pub(super) fn finding(check: &str, kind: ScanKind, subject: &str, evidence: &str) -> NewFinding {
    NewFinding {
        issue_type: check.to_owned(),
        title: format!("Title of {check}"),
        severity: Severity::High,
        scan_kind: kind,
        url: (kind == ScanKind::Page).then(|| subject.to_owned()),
        subject: subject.to_owned(),
        evidence: evidence.to_owned(),
        how_to_fix: format!("Fix {check}"),
    }
}

/// `complete_scan` applies the lifecycle of docs/crawler.md: a new finding opens an issue; a
/// known one is updated (and a fixed or resolved one reopens); an open issue a later scan
/// reached and did not find is resolved; one whose address the scan did not reach keeps its
/// state; fixed and resolved issues not found stay; an issue already carrying the scan's job
/// counts as found; other properties are untouched. Also: a second issue of the same check
/// and subject is a duplicate.
pub async fn issue_scans_apply_the_lifecycle(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Lifecycle").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let other_site = seed_property(&*store, &org, minutes(0)).await;
    let base = site.url.trim_end_matches('/').to_owned();
    let (u1, u2, u3) = (
        format!("{base}/one"),
        format!("{base}/two"),
        format!("{base}/three"),
    );
    // Each scan is a running job of the property, completed with its findings.
    let mut runs = Vec::new();
    for n in 1..=4 {
        runs.push(seed_running_job(&*store, &org, &site, minutes(n)).await);
    }
    let scan = |n: usize| ScanFindings {
        organization_id: org.id.clone(),
        property_id: site.id.clone(),
        job_id: runs[n - 1].job.id.clone(),
        now: minutes(10 * n as i64),
        score: 90,
        pages_scanned: 1,
        findings: Vec::new(),
        reached: Vec::new(),
        pages: Vec::new(),
    };
    let list = |store: Arc<dyn TestStore>, property: crate::ids::PropertyId| async move {
        store
            .list_issues(&property, &IssueFilter::default(), &first_page(100))
            .await
            .unwrap()
    };
    let one = |issues: &[Issue], check: &str, subject: &str| -> Issue {
        issues
            .iter()
            .find(|i| i.issue_type == check && i.subject == subject)
            .unwrap_or_else(|| panic!("no {check} issue for {subject}"))
            .clone()
    };

    // Scan 1 finds a, b (pages) and c (a site issue about no address).
    let first = ScanFindings {
        findings: vec![
            finding("check_a", ScanKind::Page, &u1, "a, first"),
            finding("check_b", ScanKind::Page, &u2, "b"),
            finding("check_c", ScanKind::Site, "robots.txt", "c"),
        ],
        reached: vec![u1.clone(), u2.clone()],
        ..scan(1)
    };
    complete(&*store, &first, &runs[0]).await;
    let issues = list(store.clone(), site.id.clone()).await;
    assert_eq!(issues.len(), 3);
    let a = one(&issues, "check_a", &u1);
    assert_eq!(
        (a.status, a.created_at, a.last_seen_at, &a.job_id),
        (IssueStatus::Open, minutes(10), minutes(10), &first.job_id)
    );
    assert_eq!(
        (a.url.as_deref(), a.evidence.as_str()),
        (Some(u1.as_str()), "a, first")
    );
    assert_eq!(
        (a.title.as_str(), a.how_to_fix.as_str()),
        ("Title of check_a", "Fix check_a")
    );
    let c = one(&issues, "check_c", "robots.txt");
    assert_eq!((c.scan_kind, c.url.as_deref()), (ScanKind::Site, None));

    // The host marks b fixed; a duplicate of a is refused.
    let b = one(&issues, "check_b", &u2);
    store.set_issue_fixed(&b.id, minutes(15)).await.unwrap();
    let mut copy = a.clone();
    copy.id = IssueId::new();
    assert!(matches!(
        store.insert_issue(&copy).await,
        Err(crate::StoreError::Duplicate(_))
    ));

    // Scan 2 finds a again and d; it reached every address.
    let second = ScanFindings {
        findings: vec![
            finding("check_a", ScanKind::Page, &u1, "a, second"),
            finding("check_d", ScanKind::Page, &u3, "d"),
        ],
        reached: vec![u1.clone(), u2.clone(), u3.clone()],
        ..scan(2)
    };
    complete(&*store, &second, &runs[1]).await;
    let issues = list(store.clone(), site.id.clone()).await;
    let a2 = one(&issues, "check_a", &u1);
    assert_eq!(a2.id, a.id, "the same issue, updated");
    assert_eq!(
        (
            a2.status,
            a2.created_at,
            a2.last_seen_at,
            a2.evidence.as_str(),
            &a2.job_id
        ),
        (
            IssueStatus::Open,
            minutes(10),
            minutes(20),
            "a, second",
            &second.job_id
        )
    );
    let b2 = one(&issues, "check_b", &u2);
    assert_eq!(
        (b2.status, b2.fixed_at),
        (IssueStatus::Fixed, Some(minutes(15))),
        "fixed stays fixed"
    );
    let c2 = one(&issues, "check_c", "robots.txt");
    assert_eq!(
        (c2.status, c2.resolved_at),
        (IssueStatus::Resolved, Some(minutes(20)))
    );
    assert_eq!(c2.job_id, first.job_id, "the scan that last saw it");
    let d = one(&issues, "check_d", &u3);
    assert_eq!((d.status, d.created_at), (IssueStatus::Open, minutes(20)));

    // Scan 3 reached only u2: it finds b again (fixed: it reopens); a and d were not reached
    // and keep their state; c, resolved and not found, stays resolved.
    let third = ScanFindings {
        findings: vec![finding("check_b", ScanKind::Page, &u2, "b again")],
        reached: vec![u2.clone()],
        ..scan(3)
    };
    complete(&*store, &third, &runs[2]).await;
    let issues = list(store.clone(), site.id.clone()).await;
    let b3 = one(&issues, "check_b", &u2);
    assert_eq!(
        (
            b3.status,
            b3.fixed_at,
            b3.last_seen_at,
            b3.evidence.as_str()
        ),
        (IssueStatus::Open, None, minutes(30), "b again")
    );
    assert_eq!(one(&issues, "check_a", &u1).status, IssueStatus::Open);
    assert_eq!(one(&issues, "check_d", &u3).status, IssueStatus::Open);
    assert_eq!(
        one(&issues, "check_c", "robots.txt").status,
        IssueStatus::Resolved
    );

    // Scan 4 finds c again: resolved issues reopen too. It reached u1 and found nothing there.
    // An issue that already carries scan 4's job (inserted while it ran) counts as one the
    // scan found: it stays open, though the scan reached its page and did not find it there.
    let carried = issue(
        &site,
        &runs[3].job.id,
        ScanKind::Page,
        IssueStatus::Open,
        minutes(35),
    );
    store.insert_issue(&carried).await.unwrap();
    let fourth = ScanFindings {
        findings: vec![finding("check_c", ScanKind::Site, "robots.txt", "c again")],
        reached: vec![u1.clone(), carried.subject.clone()],
        ..scan(4)
    };
    complete(&*store, &fourth, &runs[3]).await;
    let issues = list(store.clone(), site.id.clone()).await;
    assert_eq!(
        one(&issues, &carried.issue_type, &carried.subject),
        carried,
        "an issue carrying the scan's job is left as it was"
    );
    let c4 = one(&issues, "check_c", "robots.txt");
    assert_eq!((c4.status, c4.resolved_at), (IssueStatus::Open, None));
    let a4 = one(&issues, "check_a", &u1);
    assert_eq!(
        (a4.status, a4.resolved_at),
        (IssueStatus::Resolved, Some(minutes(40)))
    );
    assert_eq!(
        store.issue_summary(&site.id).await.unwrap(),
        IssueSummary {
            open: 4,
            resolved: 1,
            fixed: 0,
            total: 5
        }
    );
    assert!(list(store.clone(), other_site.id.clone()).await.is_empty());
}

/// `complete_scan` records the findings and completes the job together, for the job's
/// current attempt only: the job is `completed` with the result, progress 100, `completedAt`
/// and one `job.completed` event, and the findings are open issues. For an attempt that is
/// not current (the job was cancelled) it writes nothing and answers `false`.
pub async fn issue_scan_completes_with_its_findings_or_not_at_all(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Complete scans").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let other_site = seed_property(&*store, &org, minutes(0)).await;
    let page = format!("{}/page", site.url.trim_end_matches('/'));
    let scan_of = |property: &crate::model::Property, job_id: &crate::ids::JobId| ScanFindings {
        organization_id: org.id.clone(),
        property_id: property.id.clone(),
        job_id: job_id.clone(),
        now: minutes(30),
        score: 90,
        pages_scanned: 1,
        findings: vec![finding("check_a", ScanKind::Page, &page, "found")],
        reached: vec![page.clone()],
        pages: vec![crate::store::FetchedPage {
            url: page.clone(),
            status_code: Some(200),
        }],
    };
    let result = serde_json::json!({"score": 95, "pagesScanned": 1, "issuesCount": 1});

    let running = seed_running_job(&*store, &org, &site, minutes(1)).await;
    let done = store
        .complete_scan(scan_of(&site, &running.job.id), &running.attempt, &result)
        .await
        .unwrap();
    assert!(done);
    let job = store.get_job(&running.job.id).await.unwrap().expect("job");
    assert_eq!(
        (
            job.status,
            job.progress,
            job.completed_at,
            job.result.as_ref()
        ),
        (JobStatus::Completed, 100, Some(minutes(30)), Some(&result))
    );
    let events = store.job_events(&running.job.id).await.unwrap();
    assert_eq!(
        events.iter().map(|e| e.event_type).collect::<Vec<_>>(),
        vec![crate::model::EventType::JobCompleted]
    );
    let issues = store
        .list_issues(&site.id, &IssueFilter::default(), &first_page(10))
        .await
        .unwrap();
    assert_eq!(issues.len(), 1);
    assert_eq!(
        (issues[0].status, &issues[0].job_id),
        (IssueStatus::Open, &running.job.id)
    );
    // The attempt is spent: a second completion writes nothing.
    assert!(!store
        .complete_scan(scan_of(&site, &running.job.id), &running.attempt, &result)
        .await
        .unwrap());

    // A scan cancelled while it ran: its findings are not recorded, the job stays cancelled.
    let cancelled = seed_running_job(&*store, &org, &other_site, minutes(2)).await;
    store
        .cancel_job(&cancelled.job.id, minutes(20))
        .await
        .unwrap();
    let done = store
        .complete_scan(
            scan_of(&other_site, &cancelled.job.id),
            &cancelled.attempt,
            &result,
        )
        .await
        .unwrap();
    assert!(!done);
    let job = store
        .get_job(&cancelled.job.id)
        .await
        .unwrap()
        .expect("job");
    assert_eq!((job.status, job.result), (JobStatus::Cancelled, None));
    assert!(store
        .list_issues(&other_site.id, &IssueFilter::default(), &first_page(10))
        .await
        .unwrap()
        .is_empty());
    let events = store.job_events(&cancelled.job.id).await.unwrap();
    assert_eq!(
        events.iter().map(|e| e.event_type).collect::<Vec<_>>(),
        vec![crate::model::EventType::JobCancelled]
    );
}
