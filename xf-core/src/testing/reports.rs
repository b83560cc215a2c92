//! Behaviours of shared reports.

use std::sync::Arc;

use chrono::Duration;

use super::{
    first_page, millis, minutes, random_token, report, seed_job, seed_organization, seed_property,
    sort_newest_first, walk_pages, TestStore,
};
use crate::error::StoreError;
use crate::model::{JobStatus, Report};
use crate::store::After;

fn report_position(report: &Report) -> After {
    After {
        created_at: report.created_at,
        id: report.token.clone(),
    }
}

/// An inserted report reads back equal; a second report with the same token is
/// [`StoreError::Duplicate`] and changes nothing; an unknown token is `None`.
pub async fn report_insert_get_and_duplicate_token(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Reports").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let other_site = seed_property(&*store, &org, minutes(0)).await;
    let scan = seed_job(&*store, &org, &site, minutes(1), JobStatus::Completed).await;
    let other_scan = seed_job(&*store, &org, &other_site, minutes(1), JobStatus::Completed).await;
    let shared = report(&site, &scan.id, minutes(2), minutes(60 * 24 * 7));
    store.insert_report(&shared).await.unwrap();
    assert_eq!(
        store.get_report(&shared.token).await.unwrap(),
        Some(shared.clone())
    );

    let mut clash = report(
        &other_site,
        &other_scan.id,
        minutes(3),
        minutes(60 * 24 * 30),
    );
    clash.token = shared.token.clone();
    assert!(matches!(
        store.insert_report(&clash).await,
        Err(StoreError::Duplicate(_))
    ));
    assert_eq!(store.get_report(&shared.token).await.unwrap(), Some(shared));
    assert_eq!(store.get_report(&random_token()).await.unwrap(), None);
}

/// `list_live_reports` lists the organization's reports expiring strictly after `now`, newest
/// first with ties ordered by token descending (tokens compare bytewise, so `Z` sorts before
/// `a`), and pages with (`createdAt`, token) positions: 25 live reports in pages of 7 yield 7,
/// 7, 7, 4, each exactly once.
pub async fn report_list_live_excludes_expired_and_pages(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Live reports").await;
    let other = seed_organization(&*store, "Live reports neighbour").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let other_site = seed_property(&*store, &other, minutes(0)).await;
    let scan = seed_job(&*store, &org, &site, minutes(0), JobStatus::Completed).await;
    let other_scan = seed_job(
        &*store,
        &other,
        &other_site,
        minutes(0),
        JobStatus::Completed,
    )
    .await;
    let now = minutes(1_000);

    let mut live = Vec::new();
    for n in 0..25_i64 {
        let mut item = report(
            &site,
            &scan.id,
            minutes(1 + (n * 7) % 6),
            now.plus(Duration::days(1 + n)),
        );
        // Tokens starting with upper- and lower-case letters share creation times.
        let first = ["A", "b", "Z", "c", "M"][(n % 5) as usize];
        item.token = format!("{first}{}", &item.token[1..]);
        live.push(item);
    }
    // Expiring exactly at `now` counts as expired; 1 ms later is live.
    live[0].expires_at = millis(now, 1);
    let mut expired = Vec::new();
    for n in 0..5_i64 {
        let expires_at = if n == 0 {
            now
        } else {
            now.plus(Duration::days(-n))
        };
        expired.push(report(&site, &scan.id, minutes(1 + n), expires_at));
    }
    let foreign = report(
        &other_site,
        &other_scan.id,
        minutes(3),
        now.plus(Duration::days(9)),
    );
    store.insert_report(&foreign).await.unwrap();
    for n in (0..25).map(|n| (n * 11) % 25) {
        store.insert_report(&live[n]).await.unwrap();
        if n < 5 {
            store.insert_report(&expired[n]).await.unwrap();
        }
    }
    let mut expected = live.clone();
    sort_newest_first(&mut expected, |r| (r.created_at, r.token.clone()));

    let everything = store
        .list_live_reports(&org.id, now, &first_page(100))
        .await
        .unwrap();
    assert_eq!(everything, expected);

    let store_ref = &store;
    let org_id = &org.id;
    let pages = walk_pages(
        7,
        |page| async move { store_ref.list_live_reports(org_id, now, &page).await },
        report_position,
    )
    .await;
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![7, 7, 7, 4]
    );
    assert_eq!(pages.concat(), expected);

    // Later, the first report (expiring 1 ms after `now`) is gone too.
    let later = store
        .list_live_reports(&org.id, millis(now, 1), &first_page(100))
        .await
        .unwrap();
    assert_eq!(later.len(), 24);
    assert!(later.iter().all(|r| r.token != live[0].token));

    assert_eq!(
        store
            .list_live_reports(&other.id, now, &first_page(100))
            .await
            .unwrap(),
        vec![foreign]
    );
}

/// `increment_report_views` adds one view per call and returns the report; an unknown token
/// is `None`.
pub async fn report_increment_views(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Views").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let scan = seed_job(&*store, &org, &site, minutes(1), JobStatus::Completed).await;
    let shared = report(&site, &scan.id, minutes(2), minutes(10_000));
    let untouched = report(&site, &scan.id, minutes(3), minutes(10_000));
    store.insert_report(&shared).await.unwrap();
    store.insert_report(&untouched).await.unwrap();

    for views in 1..=3 {
        assert_eq!(
            store.increment_report_views(&shared.token).await.unwrap(),
            Some(Report {
                view_count: views,
                ..shared.clone()
            })
        );
    }
    assert_eq!(
        store
            .get_report(&shared.token)
            .await
            .unwrap()
            .map(|r| r.view_count),
        Some(3)
    );
    assert_eq!(
        store.get_report(&untouched.token).await.unwrap(),
        Some(untouched)
    );
    assert_eq!(
        store.increment_report_views(&random_token()).await.unwrap(),
        None
    );
}
