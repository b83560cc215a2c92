//! Search Console: accounts, sync claims, snapshots and the latest scan's pages.

use std::sync::Arc;

use chrono::NaiveDate;

use super::issues::{complete, finding};
use super::{minutes, seed_organization, seed_property, seed_running_job, TestStore};
use crate::gsc::{
    CrawlCorrelation, GscAccount, GscDay, GscRow, GscSnapshot, Metrics, NewSnapshot, PageCrawl,
    PortfolioCounts, RowKind,
};
use crate::ids::{JobId, OrganizationId, PropertyId};
use crate::model::{Organization, Property, ScanKind};
use crate::store::{FetchedPage, ScanFindings};
use crate::time::Timestamp;

fn account(organization_id: &OrganizationId, linked_at: Timestamp) -> GscAccount {
    GscAccount {
        organization_id: organization_id.clone(),
        sealed_refresh_token: format!("v1.sealed-{}", linked_at.unix_millis()),
        account_email: Some("owner@example.com".to_owned()),
        linked_at,
        revoked_at: None,
    }
}

/// A snapshot of `property` for `site_url` synced at `synced_at`, with `queries` query rows
/// and `pages` page rows (clicks falling with rank; every third page row crawled).
pub fn snapshot(
    property: &Property,
    site_url: &str,
    synced_at: Timestamp,
    queries: usize,
    pages: usize,
) -> NewSnapshot {
    let end_date = NaiveDate::from_ymd_opt(2026, 11, 13).expect("a date");
    let daily: Vec<GscDay> = (0..28)
        .map(|back| GscDay {
            date: end_date - chrono::Duration::days(27 - back),
            metrics: if back % 7 == 0 {
                Metrics::ZERO
            } else {
                Metrics::new(
                    back as u64,
                    10 * back as u64 + 1,
                    Some(3.25 + back as f64 / 8.0),
                )
            },
        })
        .collect();
    let rows = |count: usize, kind: &str| -> Vec<GscRow> {
        (0..count)
            .map(|rank| GscRow {
                rank: rank as u32,
                key: format!("{kind} {rank} «ü»"),
                metrics: Metrics::new(
                    (count - rank) as u64,
                    (count - rank) as u64 * 7,
                    Some(1.0 + rank as f64 / 3.0),
                ),
                crawl: (kind == "page" && rank % 3 == 0).then_some(PageCrawl {
                    status_code: (rank % 2 == 0).then_some(200),
                    open_issues: (rank % 5) as u32,
                }),
            })
            .collect()
    };
    NewSnapshot {
        snapshot: GscSnapshot {
            property_id: property.id.clone(),
            organization_id: property.organization_id.clone(),
            site_url: site_url.to_owned(),
            synced_at,
            start_date: end_date - chrono::Duration::days(27),
            end_date,
            totals: Metrics::sum(daily.iter().map(|d| &d.metrics)),
            daily,
            query_count: queries as u32,
            page_count: pages as u32,
            correlation: CrawlCorrelation {
                scan_id: Some(JobId::new()),
                scanned_at: Some(synced_at),
                pages_crawled: 3,
                pages_not_crawled: 4,
                pages_with_errors: 1,
                pages_with_open_issues: 2,
            },
        },
        queries: rows(queries, "query"),
        pages: rows(pages, "https://example.com/page"),
    }
}

async fn linked_property(
    store: &dyn crate::store::Store,
    organization: &Organization,
    site_url: &str,
) -> Property {
    let property = seed_property(store, organization, minutes(0)).await;
    store
        .set_property_gsc_site(&property.id, Some(site_url))
        .await
        .expect("link the site")
        .expect("the property exists")
}

/// An organization's Google account is stored, replaced by a new linking (which clears a
/// revocation), and revoked only while it is the linking that failed.
pub async fn gsc_account_link_and_revoke(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Google account").await;
    assert_eq!(store.get_gsc_account(&org.id).await.unwrap(), None);
    assert!(!store
        .put_gsc_account(&account(&OrganizationId::new(), minutes(1)))
        .await
        .unwrap());

    let first = account(&org.id, minutes(1));
    assert!(store.put_gsc_account(&first).await.unwrap());
    assert_eq!(
        store.get_gsc_account(&org.id).await.unwrap(),
        Some(first.clone())
    );

    assert!(!store
        .revoke_gsc_account(&org.id, minutes(0), minutes(2))
        .await
        .unwrap());
    assert!(store
        .revoke_gsc_account(&org.id, first.linked_at, minutes(2))
        .await
        .unwrap());
    let revoked = store.get_gsc_account(&org.id).await.unwrap().unwrap();
    assert_eq!(revoked.revoked_at, Some(minutes(2)));

    let second = GscAccount {
        account_email: None,
        ..account(&org.id, minutes(3))
    };
    assert!(store.put_gsc_account(&second).await.unwrap());
    assert_eq!(
        store.get_gsc_account(&org.id).await.unwrap(),
        Some(second.clone())
    );
    // A failure of the first linking, reported late, leaves the second alone.
    assert!(!store
        .revoke_gsc_account(&org.id, first.linked_at, minutes(4))
        .await
        .unwrap());
    assert_eq!(store.get_gsc_account(&org.id).await.unwrap(), Some(second));
}

/// A sync claim is held by one claimant until it runs out or is released by its holder;
/// of many concurrent claims, one wins.
pub async fn gsc_sync_claims_are_exclusive(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Sync claims").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    let other = seed_property(&*store, &org, minutes(0)).await;
    let claim = |store: Arc<dyn TestStore>, property: PropertyId, who: String, now: i64| async move {
        store
            .claim_gsc_sync(&property, &who, minutes(now), minutes(now + 5))
            .await
            .unwrap()
    };
    assert!(claim(store.clone(), site.id.clone(), "a".into(), 1).await);
    assert!(!claim(store.clone(), site.id.clone(), "b".into(), 2).await);
    assert!(
        claim(store.clone(), other.id.clone(), "b".into(), 2).await,
        "per property"
    );
    store.release_gsc_sync(&site.id, "b").await.unwrap();
    assert!(
        !claim(store.clone(), site.id.clone(), "c".into(), 3).await,
        "not b's to release"
    );
    assert!(
        claim(store.clone(), site.id.clone(), "c".into(), 6).await,
        "a's ran out"
    );
    store.release_gsc_sync(&site.id, "c").await.unwrap();

    let contenders: Vec<_> = (0..8)
        .map(|n| tokio::spawn(claim(store.clone(), site.id.clone(), format!("n{n}"), 7)))
        .collect();
    let mut winners = 0;
    for contender in contenders {
        winners += usize::from(contender.await.unwrap());
    }
    assert_eq!(winners, 1);
}

/// A snapshot replaces the property's previous one whole (rows included); rows page by rank;
/// several snapshots are read at once.
pub async fn gsc_snapshot_replaced_whole(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Snapshots").await;
    let site = linked_property(&*store, &org, "sc-domain:one.example").await;
    let other = linked_property(&*store, &org, "https://two.example/").await;
    assert_eq!(store.get_gsc_snapshot(&site.id).await.unwrap(), None);
    assert!(store
        .list_gsc_rows(&site.id, RowKind::Query, None, 10)
        .await
        .unwrap()
        .is_empty());

    // More rows than one bulk statement of a SQL backend may take.
    let big = snapshot(&site, "sc-domain:one.example", minutes(10), 30_001, 12);
    store.replace_gsc_snapshot(&big).await.unwrap();
    assert_eq!(
        store.get_gsc_snapshot(&site.id).await.unwrap().as_ref(),
        Some(&big.snapshot)
    );
    let first = store
        .list_gsc_rows(&site.id, RowKind::Query, None, 10)
        .await
        .unwrap();
    assert_eq!(first, big.queries[..10]);
    let later = store
        .list_gsc_rows(&site.id, RowKind::Query, Some(29_995), 10)
        .await
        .unwrap();
    assert_eq!(later, big.queries[29_996..]);
    let pages = store
        .list_gsc_rows(&site.id, RowKind::Page, Some(3), 100)
        .await
        .unwrap();
    assert_eq!(pages, big.pages[4..]);

    let small = snapshot(&site, "sc-domain:one.example", minutes(20), 2, 0);
    store.replace_gsc_snapshot(&small).await.unwrap();
    assert_eq!(
        store.get_gsc_snapshot(&site.id).await.unwrap(),
        Some(small.snapshot.clone())
    );
    assert_eq!(
        store
            .list_gsc_rows(&site.id, RowKind::Query, None, 100)
            .await
            .unwrap(),
        small.queries
    );
    assert!(store
        .list_gsc_rows(&site.id, RowKind::Page, None, 100)
        .await
        .unwrap()
        .is_empty());

    let theirs = snapshot(&other, "https://two.example/", minutes(30), 1, 1);
    store.replace_gsc_snapshot(&theirs).await.unwrap();
    let mut many = store
        .get_gsc_snapshots(&[site.id.clone(), PropertyId::new(), other.id.clone()])
        .await
        .unwrap();
    many.sort_by_key(|s| s.synced_at);
    assert_eq!(many, vec![small.snapshot, theirs.snapshot]);
}

/// The portfolio counts the organization's properties, the linked ones, the totals of
/// snapshots of their current sites, and the stale ones (no such snapshot, or an old one).
pub async fn gsc_portfolio_counts_current_snapshots(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Portfolio").await;
    let empty = seed_organization(&*store, "Portfolio, empty").await;
    assert_eq!(
        store.gsc_portfolio(&empty.id, minutes(0)).await.unwrap(),
        PortfolioCounts::default()
    );
    let fresh = linked_property(&*store, &org, "sc-domain:fresh.example").await;
    let old = linked_property(&*store, &org, "sc-domain:old.example").await;
    let moved = linked_property(&*store, &org, "sc-domain:moved.example").await;
    let _never = linked_property(&*store, &org, "sc-domain:never.example").await;
    let unlinked = seed_property(&*store, &org, minutes(0)).await;
    let fresh_snapshot = snapshot(&fresh, "sc-domain:fresh.example", minutes(100), 1, 1);
    let old_snapshot = snapshot(&old, "sc-domain:old.example", minutes(10), 1, 1);
    // A snapshot of the site this property was mapped to before: it no longer counts.
    let moved_snapshot = snapshot(&moved, "sc-domain:before.example", minutes(100), 1, 1);
    // A property that is not linked has no snapshot that counts either.
    let unlinked_snapshot = snapshot(&unlinked, "sc-domain:gone.example", minutes(100), 1, 1);
    for new in [
        &fresh_snapshot,
        &old_snapshot,
        &moved_snapshot,
        &unlinked_snapshot,
    ] {
        store.replace_gsc_snapshot(new).await.unwrap();
    }
    let totals = Metrics::sum([
        &fresh_snapshot.snapshot.totals,
        &old_snapshot.snapshot.totals,
    ]);
    assert_eq!(
        store.gsc_portfolio(&org.id, minutes(50)).await.unwrap(),
        PortfolioCounts {
            total_properties: 5,
            linked_properties: 4,
            total_clicks: totals.clicks,
            total_impressions: totals.impressions,
            stale: 3,
        }
    );
    // A snapshot synced exactly at the cut-off is fresh.
    assert_eq!(
        store
            .gsc_portfolio(&org.id, minutes(10))
            .await
            .unwrap()
            .stale,
        2
    );
}

/// A completed scan's pages replace the property's previous scan's, and are read back with
/// the open issues about each page; a property without a completed scan has none.
pub async fn gsc_latest_scan_pages_with_open_issues(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Scan pages").await;
    let site = seed_property(&*store, &org, minutes(0)).await;
    assert_eq!(store.latest_scan_pages(&site.id).await.unwrap(), None);
    let base = site.url.trim_end_matches('/').to_owned();
    let (home, about, gone) = (
        format!("{base}/"),
        format!("{base}/about"),
        format!("{base}/gone"),
    );
    let page = |url: &str, status: Option<u16>| FetchedPage {
        url: url.to_owned(),
        status_code: status,
    };

    let first_run = seed_running_job(&*store, &org, &site, minutes(1)).await;
    let first = ScanFindings {
        organization_id: org.id.clone(),
        property_id: site.id.clone(),
        job_id: first_run.job.id.clone(),
        now: minutes(5),
        score: 90,
        pages_scanned: 1,
        findings: vec![
            finding("check_a", ScanKind::Page, &about, "a"),
            finding("check_b", ScanKind::Page, &about, "b"),
            finding("check_c", ScanKind::Page, &gone, "c"),
            finding("check_d", ScanKind::Site, "robots.txt", "d"),
        ],
        reached: vec![home.clone(), about.clone(), gone.clone()],
        pages: vec![
            page(&home, Some(200)),
            page(&about, Some(200)),
            page(&gone, None),
        ],
    };
    complete(&*store, &first, &first_run).await;
    assert_eq!(
        latest_pages(&*store, &site.id).await,
        (
            first_run.job.id.clone(),
            minutes(5),
            vec![
                (home.clone(), Some(200), 0),
                (about.clone(), Some(200), 2),
                (gone.clone(), None, 1),
            ]
        )
    );

    // The next scan fetched two pages, found one issue on `about` and resolved the rest.
    let second_run = seed_running_job(&*store, &org, &site, minutes(6)).await;
    let second = ScanFindings {
        job_id: second_run.job.id.clone(),
        now: minutes(9),
        score: 90,
        pages_scanned: 1,
        findings: vec![finding("check_a", ScanKind::Page, &about, "a")],
        pages: vec![page(&about, Some(404)), page(&home, Some(200))],
        ..first
    };
    complete(&*store, &second, &second_run).await;
    assert_eq!(
        latest_pages(&*store, &site.id).await,
        (
            second_run.job.id.clone(),
            minutes(9),
            vec![(home, Some(200), 0), (about, Some(404), 1)]
        )
    );
}

/// The property's latest scan: its job, when it completed, and its pages by URL as (URL,
/// status, open issues).
async fn latest_pages(
    store: &dyn crate::store::Store,
    property_id: &PropertyId,
) -> (JobId, Timestamp, Vec<(String, Option<u16>, u32)>) {
    let latest = store
        .latest_scan_pages(property_id)
        .await
        .unwrap()
        .expect("the pages of a completed scan");
    let mut pages: Vec<(String, Option<u16>, u32)> = latest
        .pages
        .into_iter()
        .map(|p| (p.url, p.status_code, p.open_issues))
        .collect();
    pages.sort();
    (latest.job_id, latest.completed_at, pages)
}
