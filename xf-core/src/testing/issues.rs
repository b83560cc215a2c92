//! Behaviours of issues.

use std::sync::Arc;

use super::{
    first_page, issue, minutes, seed_job, seed_organization, seed_property, sort_newest_first,
    walk_pages, TestStore,
};
use crate::ids::IssueId;
use crate::model::{Issue, IssueStatus, IssueSummary, JobStatus, ScanKind, Severity};
use crate::store::{After, IssueFilter};

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
    page_issue.severity = Severity::Error;
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
                    &IssueFilter { scan_kind, status },
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
        status: None,
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
