//! Search Console through the API: the sync against a local stand-in of Google's token
//! endpoint and `searchAnalytics.query` (which checks what the client sends), the stored
//! snapshot's endpoints, `include=gsc`, the portfolio, each error, and the admin linking.

use std::time::Duration;

use chrono::NaiveDate;
use http::Method;
use serde_json::{json, Value};
use xf_core::gsc::GoogleConfig;
use xf_core::model::ScanKind;
use xf_core::store::{FetchedPage, NewFinding, ScanFindings};
use xf_tests::google::{Day, Failure, GoogleStandIn, Row, SiteData, CLIENT_ID, CLIENT_SECRET};
use xf_tests::TestApp;

use crate::{assert_time, org, property, property_id, Org};

crate::backends!(
    sync_fetches_every_page_and_serves_the_snapshot,
    crawl_correlation_joins_the_latest_completed_scan,
    portfolio_sums_linked_properties_and_counts_stale_ones,
    access_tokens_are_cached_and_refreshed,
    sync_errors_are_mapped_honestly,
    revoked_grant_is_shown_until_linked_again,
    concurrent_syncs_call_google_once,
    reads_before_linking_and_bad_input,
    tenants_see_only_their_own,
    admin_links_accounts_and_sites,
);

const SITE: &str = "sc-domain:acme.example";
const REFRESH_TOKEN: &str = "1//0g-refresh-token-of-acme";

/// The app with Google pointed at a fresh stand-in (answers within 2 s, or time out).
async fn with_google(app: TestApp) -> (TestApp, GoogleStandIn) {
    let google = GoogleStandIn::start().await;
    let config = GoogleConfig {
        token_url: google.token_url(),
        api_base_url: google.api_base_url(),
        timeout: Duration::from_secs(2),
        ..GoogleConfig::new(CLIENT_ID, CLIENT_SECRET)
    };
    (app.reconfigured(|builder| builder.google(config)), google)
}

fn date(text: &str) -> NaiveDate {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").unwrap()
}

/// 35 days of data ending 2026-11-13 (three days before the test clock's today), `queries`
/// query rows and `pages` page rows under `https://acme.example/`.
fn site_data(queries: usize, pages: usize) -> SiteData {
    let last = date("2026-11-13");
    SiteData {
        days: (0..35)
            .map(|back| Day {
                date: last - chrono::Duration::days(back),
                clicks: 100 + back as u64,
                impressions: 1_000 + 10 * back as u64,
                position: 4.0 + back as f64 / 10.0,
            })
            .collect(),
        queries: (0..queries)
            .map(|n| Row {
                key: format!("query {n}"),
                clicks: (queries - n) as u64,
                impressions: 10 * (queries - n) as u64,
                position: 1.5,
            })
            .collect(),
        pages: (0..pages)
            .map(|n| Row {
                key: format!("https://acme.example/page-{n}"),
                clicks: 1_000 - n as u64,
                impressions: 5_000,
                position: 2.0,
            })
            .collect(),
    }
}

/// Links the organization's Google account and maps the property to `site`.
async fn link(app: &TestApp, org: &Org, property_id: &str, site: &str, refresh_token: &str) {
    app.admin(
        Method::PUT,
        &format!("/organizations/{}/gsc", org.id),
        Some(json!({"refreshToken": refresh_token, "accountEmail": "seo@acme.example"})),
    )
    .await
    .expect(200);
    app.admin(
        Method::PUT,
        &format!("/properties/{property_id}/gsc"),
        Some(json!({"siteUrl": site})),
    )
    .await
    .expect(200);
}

/// An organization with a property linked to [`SITE`], granted and filled on `google`.
async fn linked(app: &TestApp, google: &GoogleStandIn, data: SiteData) -> (Org, String) {
    let org = org(app, "Acme").await;
    let id = property_id(app, &org.live, "https://acme.example").await;
    google.grant(REFRESH_TOKEN, &[SITE]);
    google.set_site(SITE, data);
    link(app, &org, &id, SITE, REFRESH_TOKEN).await;
    (org, id)
}

async fn sync(app: &TestApp, key: &str, id: &str) -> xf_tests::Reply {
    app.post(&format!("/properties/{id}/gsc/sync"), key, json!({}))
        .await
}

/// Every row of the property's `queries` or `pages`, following `nextCursor`.
async fn walk(app: &TestApp, key: &str, id: &str, list: &str) -> Vec<Value> {
    let path = format!("/properties/{id}/gsc/{list}");
    let mut rows = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let url = match &cursor {
            Some(cursor) => format!("{path}?limit=100&cursor={cursor}"),
            None => format!("{path}?limit=100"),
        };
        let reply = app.get(&url, key).await;
        let data = reply.expect(200);
        rows.extend(data[list].as_array().unwrap().iter().cloned());
        match reply.body["meta"]["nextCursor"].as_str() {
            Some(next) => {
                assert_eq!(reply.body["meta"]["hasMore"], true);
                cursor = Some(next.to_owned());
            }
            None => {
                assert_eq!(reply.body["meta"]["hasMore"], false);
                return rows;
            }
        }
    }
}

#[track_caller]
fn assert_close(value: &Value, expected: f64) {
    let got = value
        .as_f64()
        .unwrap_or_else(|| panic!("not a number: {value}"));
    assert!((got - expected).abs() < 1e-9, "{got} != {expected}");
}

pub(crate) async fn sync_fetches_every_page_and_serves_the_snapshot(app: TestApp) {
    let (app, google) = with_google(app).await;
    let (org, id) = linked(&app, &google, site_data(30_001, 40)).await;

    let reply = sync(&app, &org.live, &id).await;
    let data = reply.expect(202);
    assert_eq!(data["synced"], true);
    assert_eq!(data["syncedAt"], "2026-11-16T10:20:30.000Z");
    assert!(reply
        .header("x-developer-api-ratelimit-write-remaining")
        .is_some());

    // The refresh: the documented form fields.
    let tokens = google.token_requests();
    assert_eq!(tokens.len(), 1);
    let form = &tokens[0].form;
    assert_eq!(form["grant_type"], "refresh_token");
    assert_eq!(form["client_id"], CLIENT_ID);
    assert_eq!(form["client_secret"], CLIENT_SECRET);
    assert_eq!(form["refresh_token"], REFRESH_TOKEN);
    assert_eq!(form.len(), 4);

    // The queries: 35 days by date to find the latest date with data, then the 28 days
    // ending there by query (two pages: 25,000 and 5,001 rows) and by page.
    let queries = google.query_requests();
    let bodies: Vec<&Value> = queries.iter().map(|q| &q.body).collect();
    let expected = [
        ("2026-10-13", "2026-11-16", "date", 0),
        ("2026-10-17", "2026-11-13", "query", 0),
        ("2026-10-17", "2026-11-13", "query", 25_000),
        ("2026-10-17", "2026-11-13", "page", 0),
    ];
    assert_eq!(bodies.len(), expected.len(), "{bodies:?}");
    for (body, (start, end, dimension, start_row)) in bodies.iter().zip(expected) {
        assert_eq!(
            **body,
            json!({
                "startDate": start,
                "endDate": end,
                "dimensions": [dimension],
                "type": "web",
                "rowLimit": 25_000,
                "startRow": start_row,
                "dataState": "final",
            })
        );
    }
    for query in &queries {
        assert_eq!(query.site_url, SITE);
        assert!(query.bearer.starts_with("ya29."), "{}", query.bearer);
        assert_eq!(query.bearer, queries[0].bearer, "one access token");
    }

    // The snapshot.
    let detail = app.get(&format!("/properties/{id}/gsc"), &org.live).await;
    let detail = detail.expect(200);
    assert_eq!(detail["propertyId"], id.as_str());
    assert_eq!(detail["linked"], true);
    assert_eq!(detail["configured"], true);
    assert_eq!(detail["orgConnected"], true);
    assert_eq!(detail["tokenRevoked"], false);
    assert_eq!(detail["siteUrl"], SITE);
    assert_eq!(detail["lastSyncedAt"], "2026-11-16T10:20:30.000Z");
    assert_eq!(detail["stale"], false);
    let snapshot = &detail["snapshot"];
    assert_eq!(snapshot["siteUrl"], SITE);
    assert_eq!(snapshot["syncedAt"], "2026-11-16T10:20:30.000Z");
    assert_eq!(snapshot["startDate"], "2026-10-17");
    assert_eq!(snapshot["endDate"], "2026-11-13");
    assert_eq!(snapshot["dataState"], "final");
    assert_eq!(snapshot["queryCount"], 30_001);
    assert_eq!(snapshot["pageCount"], 40);
    // Days 0..=27 back from 2026-11-13: clicks 100+back, impressions 1000+10*back.
    let clicks: u64 = (0..28).map(|b| 100 + b).sum();
    let impressions: u64 = (0..28).map(|b| 1_000 + 10 * b).sum();
    let weighted: f64 = (0..28)
        .map(|b| (4.0 + b as f64 / 10.0) * (1_000 + 10 * b) as f64)
        .sum();
    assert_eq!(snapshot["totals"]["clicks"], clicks);
    assert_eq!(snapshot["totals"]["impressions"], impressions);
    assert_close(
        &snapshot["totals"]["ctr"],
        clicks as f64 / impressions as f64,
    );
    assert_close(
        &snapshot["totals"]["position"],
        weighted / impressions as f64,
    );
    let daily = snapshot["daily"].as_array().unwrap();
    assert_eq!(daily.len(), 28);
    assert_eq!(
        daily[0],
        json!({"date": "2026-10-17", "clicks": 127, "impressions": 1270, "ctr": 0.1, "position": 6.7})
    );
    assert_eq!(daily[27]["date"], "2026-11-13");
    assert_eq!(daily[27]["clicks"], 100);
    let top = snapshot["topQueries"].as_array().unwrap();
    assert_eq!(top.len(), 10);
    assert_eq!(
        top[0],
        json!({"query": "query 0", "clicks": 30_001, "impressions": 300_010, "ctr": 0.1, "position": 1.5})
    );
    assert_eq!(snapshot["topPages"].as_array().unwrap().len(), 10);
    assert_eq!(
        snapshot["topPages"][0]["page"],
        "https://acme.example/page-0"
    );
    assert_eq!(snapshot["crawlCorrelation"]["scanId"], Value::Null);
    assert_eq!(snapshot["crawlCorrelation"]["pagesNotCrawled"], 40);

    let overview = app
        .get(&format!("/properties/{id}/gsc/overview"), &org.live)
        .await;
    let overview = overview.expect(200);
    assert_eq!(overview["startDate"], "2026-10-17");
    assert_eq!(overview["endDate"], "2026-11-13");
    assert_eq!(overview["totals"], snapshot["totals"]);
    assert_eq!(overview["queryCount"], 30_001);
    assert_eq!(overview["pageCount"], 40);
    assert_eq!(overview["linked"], true);
    assert_eq!(overview["stale"], false);

    // Every query row, once, by clicks: rows past Google's first 25,000 included.
    let rows = walk(&app, &org.live, &id, "queries").await;
    assert_eq!(rows.len(), 30_001);
    for (n, row) in rows.iter().enumerate() {
        assert_eq!(row["query"], format!("query {n}"));
        assert_eq!(row["clicks"], 30_001 - n as u64);
    }
    let pages = walk(&app, &org.live, &id, "pages").await;
    assert_eq!(pages.len(), 40);
    assert_eq!(
        pages[39],
        json!({
            "page": "https://acme.example/page-39",
            "clicks": 961,
            "impressions": 5000,
            "ctr": 0.1922,
            "position": 2.0,
            "crawl": null,
        })
    );

    // include=gsc and the portfolio show the same totals.
    let with = app
        .get(&format!("/properties/{id}?include=gsc"), &org.live)
        .await;
    assert_eq!(
        with.expect(200)["gsc"],
        json!({
            "linked": true,
            "siteUrl": SITE,
            "lastSyncedAt": "2026-11-16T10:20:30.000Z",
            "clicks28d": clicks,
            "impressions28d": impressions,
        })
    );
    let list = app.get("/properties?include=gsc", &org.live).await;
    assert_eq!(
        list.expect(200)["properties"][0]["gsc"]["clicks28d"],
        clicks
    );
    let portfolio = app.get("/organization/gsc", &org.live).await;
    assert_eq!(
        portfolio.expect(200),
        &json!({
            "configured": true,
            "orgConnected": true,
            "linkedProperties": 1,
            "totalProperties": 1,
            "totalClicks28d": clicks,
            "totalImpressions28d": impressions,
            "staleSyncCount": 0,
            "tokenRevoked": false,
        })
    );

    // A later sync replaces the snapshot whole; a cursor of the earlier one is refused.
    let first_page = app
        .get(&format!("/properties/{id}/gsc/queries?limit=2"), &org.live)
        .await;
    let old_cursor = first_page.body["meta"]["nextCursor"]
        .as_str()
        .unwrap()
        .to_owned();
    google.set_site(SITE, site_data(3, 0));
    app.clock.advance(chrono::Duration::hours(1));
    assert_eq!(sync(&app, &org.live, &id).await.expect(202)["synced"], true);
    let rows = walk(&app, &org.live, &id, "queries").await;
    assert_eq!(rows.len(), 3);
    assert!(walk(&app, &org.live, &id, "pages").await.is_empty());
    app.get(
        &format!("/properties/{id}/gsc/queries?limit=2&cursor={old_cursor}"),
        &org.live,
    )
    .await
    .expect_error(400, "validation_error");
}

/// Completes a queued scan of the property with these pages and page findings.
async fn complete_scan_with_pages(
    app: &TestApp,
    org: &Org,
    property_id: &str,
    pages: &[(&str, Option<u16>)],
    findings: &[(&str, &str)],
) -> String {
    let job_id = crate::scan(app, &org.live, property_id).await;
    let attempt = crate::start(app, &job_id).await;
    use xf_core::ids::Id;
    let property_id = xf_core::ids::PropertyId::parse_str(property_id).unwrap();
    let scan = ScanFindings {
        organization_id: org.id.clone(),
        property_id,
        job_id: xf_core::ids::JobId::parse_str(&job_id).unwrap(),
        now: app.xf.now(),
        score: 90,
        pages_scanned: 1,
        findings: findings
            .iter()
            .map(|(check, url)| NewFinding {
                issue_type: (*check).to_owned(),
                title: format!("{check} title"),
                severity: xf_core::model::Severity::Medium,
                scan_kind: ScanKind::Page,
                url: Some((*url).to_owned()),
                subject: (*url).to_owned(),
                evidence: "seen".to_owned(),
                how_to_fix: "fix it".to_owned(),
            })
            .collect(),
        reached: pages.iter().map(|(url, _)| (*url).to_owned()).collect(),
        pages: pages
            .iter()
            .map(|(url, status)| FetchedPage {
                url: (*url).to_owned(),
                status_code: *status,
            })
            .collect(),
    };
    let result = json!({"score": 80, "pagesScanned": pages.len(), "issuesCount": findings.len()});
    assert!(app
        .store
        .complete_scan(scan, &attempt, &result)
        .await
        .unwrap());
    job_id
}

pub(crate) async fn crawl_correlation_joins_the_latest_completed_scan(app: TestApp) {
    let (app, google) = with_google(app).await;
    let mut data = site_data(2, 0);
    data.pages = [
        "https://acme.example/",
        "https://ACME.example/pricing#plans",
        "https://acme.example/old",
        "https://acme.example/never-crawled",
    ]
    .iter()
    .enumerate()
    .map(|(n, page)| Row {
        key: (*page).to_owned(),
        clicks: 40 - n as u64,
        impressions: 400,
        position: 3.0,
    })
    .collect();
    let (org, id) = linked(&app, &google, data).await;
    // An earlier scan saw other pages; only the latest completed one counts.
    complete_scan_with_pages(
        &app,
        &org,
        &id,
        &[("https://acme.example/never-crawled", Some(200))],
        &[],
    )
    .await;
    app.clock.advance(chrono::Duration::minutes(5));
    let scan_id = complete_scan_with_pages(
        &app,
        &org,
        &id,
        &[
            ("https://acme.example/", Some(200)),
            ("https://acme.example/pricing", Some(200)),
            ("https://acme.example/old", Some(404)),
        ],
        &[
            ("title_missing", "https://acme.example/pricing"),
            ("meta_description_missing", "https://acme.example/pricing"),
            ("broken_page", "https://acme.example/old"),
        ],
    )
    .await;
    let scanned_at = app.xf.now();
    sync(&app, &org.live, &id).await.expect(202);

    let pages = walk(&app, &org.live, &id, "pages").await;
    let crawl: Vec<(&str, &Value)> = pages
        .iter()
        .map(|p| (p["page"].as_str().unwrap(), &p["crawl"]))
        .collect();
    assert_eq!(
        crawl,
        vec![
            (
                "https://acme.example/",
                &json!({"statusCode": 200, "openIssues": 0})
            ),
            (
                "https://ACME.example/pricing#plans",
                &json!({"statusCode": 200, "openIssues": 2})
            ),
            (
                "https://acme.example/old",
                &json!({"statusCode": 404, "openIssues": 1})
            ),
            ("https://acme.example/never-crawled", &Value::Null),
        ]
    );
    let detail = app.get(&format!("/properties/{id}/gsc"), &org.live).await;
    let detail = detail.expect(200);
    let correlation = &detail["snapshot"]["crawlCorrelation"];
    assert_eq!(correlation["scanId"], scan_id.as_str());
    assert_time(&correlation["scannedAt"]);
    assert_eq!(correlation["scannedAt"], json!(scanned_at));
    assert_eq!(correlation["pagesCrawled"], 3);
    assert_eq!(correlation["pagesNotCrawled"], 1);
    assert_eq!(correlation["pagesWithErrors"], 1);
    assert_eq!(correlation["pagesWithOpenIssues"], 2);
    assert_eq!(
        detail["snapshot"]["topPages"][2]["crawl"]["statusCode"],
        404
    );
}

pub(crate) async fn portfolio_sums_linked_properties_and_counts_stale_ones(app: TestApp) {
    let (app, google) = with_google(app).await;
    let (org, first) = linked(&app, &google, site_data(5, 5)).await;
    let other_site = "https://www.acme-shop.example/";
    let second = property_id(&app, &org.live, "https://www.acme-shop.example").await;
    let never = property_id(&app, &org.live, "https://acme-blog.example").await;
    let _unlinked = property(&app, &org.live, "https://acme-docs.example").await;
    google.grant(
        REFRESH_TOKEN,
        &[SITE, other_site, "sc-domain:acme-blog.example"],
    );
    let mut shop = site_data(1, 1);
    for day in &mut shop.days {
        day.clicks = 1;
        day.impressions = 2;
    }
    google.set_site(other_site, shop);
    link(&app, &org, &second, other_site, REFRESH_TOKEN).await;
    link(
        &app,
        &org,
        &never,
        "sc-domain:acme-blog.example",
        REFRESH_TOKEN,
    )
    .await;

    let before = app.get("/organization/gsc", &org.live).await;
    let before = before.expect(200);
    assert_eq!(before["linkedProperties"], 3);
    assert_eq!(before["totalProperties"], 4);
    assert_eq!(before["staleSyncCount"], 3, "never synced counts as stale");
    assert_eq!(before["totalClicks28d"], 0);

    sync(&app, &org.live, &first).await.expect(202);
    app.clock.advance(chrono::Duration::hours(30));
    sync(&app, &org.live, &second).await.expect(202);
    let clicks: u64 = (0..28).map(|b| 100 + b).sum::<u64>() + 28;
    let impressions: u64 = (0..28).map(|b| 1_000 + 10 * b).sum::<u64>() + 56;
    let summary = app.get("/organization/gsc", &org.live).await;
    let summary = summary.expect(200);
    assert_eq!(summary["totalClicks28d"], clicks);
    assert_eq!(summary["totalImpressions28d"], impressions);
    assert_eq!(summary["staleSyncCount"], 1);

    // 49 hours after the first sync, it is stale too (by the injected clock).
    app.clock.advance(chrono::Duration::hours(19));
    let summary = app.get("/organization/gsc", &org.live).await;
    assert_eq!(summary.expect(200)["staleSyncCount"], 2);
    let overview = app
        .get(&format!("/properties/{first}/gsc/overview"), &org.live)
        .await;
    assert_eq!(overview.expect(200)["stale"], true);

    // Mapped to another site, the property's old snapshot no longer counts or shows.
    app.admin(
        Method::PUT,
        &format!("/properties/{first}/gsc"),
        Some(json!({"siteUrl": "sc-domain:acme-new.example"})),
    )
    .await
    .expect(200);
    let summary = app.get("/organization/gsc", &org.live).await;
    assert_eq!(summary.expect(200)["totalClicks28d"], 28);
    let detail = app
        .get(&format!("/properties/{first}/gsc"), &org.live)
        .await;
    assert_eq!(detail.expect(200)["snapshot"], Value::Null);
}

async fn access_tokens_are_cached_and_refreshed(app: TestApp) {
    let (app, google) = with_google(app).await;
    let (org, id) = linked(&app, &google, site_data(1, 1)).await;
    sync(&app, &org.live, &id).await.expect(202);
    sync(&app, &org.live, &id).await.expect(202);
    assert_eq!(
        google.token_requests().len(),
        1,
        "the access token is reused"
    );

    // Tokens that expire within the refresh margin are not kept.
    google.set_token_lifetime(30);
    app.admin(
        Method::PUT,
        &format!("/organizations/{}/gsc", org.id),
        Some(json!({"refreshToken": REFRESH_TOKEN})),
    )
    .await
    .expect(200);
    sync(&app, &org.live, &id).await.expect(202);
    sync(&app, &org.live, &id).await.expect(202);
    assert_eq!(google.token_requests().len(), 3);

    // An access token Google stops accepting (401) is replaced once, and the sync goes on.
    google.set_token_lifetime(3599);
    sync(&app, &org.live, &id).await.expect(202);
    assert_eq!(google.token_requests().len(), 4);
    google.expire_access_tokens();
    assert_eq!(sync(&app, &org.live, &id).await.expect(202)["synced"], true);
    assert_eq!(google.token_requests().len(), 5);
    let rejected = google
        .query_requests()
        .iter()
        .filter(|q| q.bearer != google.query_requests().last().unwrap().bearer)
        .count();
    assert!(rejected > 0);
}

async fn sync_errors_are_mapped_honestly(app: TestApp) {
    // No Google client on the host.
    let org_a = org(&app, "Unconfigured").await;
    let unconfigured = property_id(&app, &org_a.live, "https://a.example").await;
    sync(&app, &org_a.live, &unconfigured)
        .await
        .expect_error(400, "gsc_not_configured");
    let portfolio = app.get("/organization/gsc", &org_a.live).await;
    assert_eq!(portfolio.expect(200)["configured"], false);

    let (app, google) = with_google(app).await;
    let org = org(&app, "Acme").await;
    let id = property_id(&app, &org.live, "https://acme.example").await;
    // No site mapped, then no account linked.
    let reply = sync(&app, &org.live, &id).await;
    reply.expect_error(400, "gsc_not_linked");
    assert!(reply.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("site"));
    app.admin(
        Method::PUT,
        &format!("/properties/{id}/gsc"),
        Some(json!({"siteUrl": SITE})),
    )
    .await
    .expect(200);
    let reply = sync(&app, &org.live, &id).await;
    reply.expect_error(400, "gsc_not_linked");
    assert!(reply.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Google account"));
    assert!(google.token_requests().is_empty());

    // The account cannot see the site.
    link(&app, &org, &id, SITE, REFRESH_TOKEN).await;
    google.grant(REFRESH_TOKEN, &["sc-domain:other.example"]);
    google.set_site(SITE, site_data(1, 1));
    sync(&app, &org.live, &id)
        .await
        .expect_error(400, "gsc_site_inaccessible");

    google.grant(REFRESH_TOKEN, &[SITE]);
    // Google's rate limit, with and without Retry-After.
    google.fail_next(Failure::RateLimited(Some(120)));
    let reply = sync(&app, &org.live, &id).await;
    reply.expect_error(429, "rate_limit");
    assert_eq!(reply.header("retry-after"), Some("120"));
    google.fail_next(Failure::RateLimited(None));
    let reply = sync(&app, &org.live, &id).await;
    reply.expect_error(429, "rate_limit");
    assert_eq!(reply.header("retry-after"), Some("30"));
    // Google failing, or not answering in time.
    google.fail_next(Failure::ServerError(503));
    let reply = sync(&app, &org.live, &id).await;
    reply.expect_error(503, "unavailable");
    assert_eq!(reply.header("retry-after"), Some("30"));
    assert!(reply.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Google"));
    google.fail_next(Failure::ServerError(500));
    sync(&app, &org.live, &id)
        .await
        .expect_error(503, "unavailable");
    google.fail_next(Failure::Hang(Duration::from_secs(4)));
    let reply = sync(&app, &org.live, &id).await;
    reply.expect_error(503, "unavailable");
    assert!(reply.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("did not answer"));
    // None of those stored anything; the claim was given back each time.
    let detail = app.get(&format!("/properties/{id}/gsc"), &org.live).await;
    assert_eq!(detail.expect(200)["snapshot"], Value::Null);
    assert_eq!(sync(&app, &org.live, &id).await.expect(202)["synced"], true);

    // A host whose OAuth client Google does not know.
    let wrong_client = GoogleConfig {
        token_url: google.token_url(),
        api_base_url: google.api_base_url(),
        ..GoogleConfig::new("someone-else", "nope")
    };
    let app = app.reconfigured(|builder| builder.google(wrong_client));
    sync(&app, &org.live, &id)
        .await
        .expect_error(400, "gsc_not_configured");

    // Unknown properties, and test keys (which never reach Google).
    sync(&app, &org.live, "prop_unknown")
        .await
        .expect_error(404, "not_found");
    let before = google.query_requests().len();
    let mock = sync(&app, &org.test, &id).await;
    assert_eq!(
        mock.expect(202),
        &json!({"synced": true, "syncedAt": "2026-11-16T00:00:00.000Z"})
    );
    assert_eq!(google.query_requests().len(), before);
}

pub(crate) async fn revoked_grant_is_shown_until_linked_again(app: TestApp) {
    let (app, google) = with_google(app).await;
    let (org, id) = linked(&app, &google, site_data(1, 1)).await;
    google.revoke(REFRESH_TOKEN);
    sync(&app, &org.live, &id)
        .await
        .expect_error(400, "gsc_token_revoked");
    let summary = app.get("/organization/gsc", &org.live).await;
    let summary = summary.expect(200);
    assert_eq!(summary["tokenRevoked"], true);
    assert_eq!(summary["orgConnected"], false);
    let detail = app.get(&format!("/properties/{id}/gsc"), &org.live).await;
    assert_eq!(detail.expect(200)["tokenRevoked"], true);
    // Revoked stays revoked without asking Google again.
    let asked = google.token_requests().len();
    sync(&app, &org.live, &id)
        .await
        .expect_error(400, "gsc_token_revoked");
    assert_eq!(google.token_requests().len(), asked);

    google.grant("1//new-token", &[SITE]);
    app.admin(
        Method::PUT,
        &format!("/organizations/{}/gsc", org.id),
        Some(json!({"refreshToken": "1//new-token"})),
    )
    .await
    .expect(200);
    let summary = app.get("/organization/gsc", &org.live).await;
    assert_eq!(summary.expect(200)["tokenRevoked"], false);
    assert_eq!(sync(&app, &org.live, &id).await.expect(202)["synced"], true);
    assert_eq!(
        google.token_requests().last().unwrap().form["refresh_token"],
        "1//new-token"
    );
}

async fn concurrent_syncs_call_google_once(app: TestApp) {
    let (app, google) = with_google(app).await;
    let (org, id) = linked(&app, &google, site_data(3, 3)).await;
    google.set_query_delay(Duration::from_millis(300));
    let (a, b) = tokio::join!(sync(&app, &org.live, &id), sync(&app, &org.live, &id));
    let (a, b) = (a.expect(202).clone(), b.expect(202).clone());
    let mut synced = [
        a["synced"].as_bool().unwrap(),
        b["synced"].as_bool().unwrap(),
    ];
    synced.sort();
    assert_eq!(synced, [false, true], "{a} {b}");
    let skipped = if a["synced"] == false { &a } else { &b };
    assert_eq!(
        skipped["syncedAt"],
        Value::Null,
        "nothing was stored before"
    );
    assert_eq!(google.token_requests().len(), 1);
    assert_eq!(
        google.query_requests().len(),
        3,
        "date, query and page, once"
    );
    // Once it is done, the next sync runs.
    google.set_query_delay(Duration::ZERO);
    assert_eq!(sync(&app, &org.live, &id).await.expect(202)["synced"], true);
}

async fn reads_before_linking_and_bad_input(app: TestApp) {
    let org = org(&app, "Acme").await;
    let id = property_id(&app, &org.live, "https://acme.example").await;
    let detail = app.get(&format!("/properties/{id}/gsc"), &org.live).await;
    assert_eq!(
        detail.expect(200),
        &json!({
            "propertyId": id,
            "configured": false,
            "orgConnected": false,
            "tokenRevoked": false,
            "linked": false,
            "siteUrl": null,
            "lastSyncedAt": null,
            "stale": false,
            "snapshot": null,
        })
    );
    let overview = app
        .get(&format!("/properties/{id}/gsc/overview"), &org.live)
        .await;
    let overview = overview.expect(200);
    assert_eq!(overview["startDate"], Value::Null);
    assert_eq!(
        overview["totals"],
        json!({"clicks": 0, "impressions": 0, "ctr": 0.0, "position": null})
    );
    for list in ["queries", "pages"] {
        let reply = app
            .get(&format!("/properties/{id}/gsc/{list}"), &org.live)
            .await;
        assert_eq!(reply.expect(200)[list], json!([]));
        assert_eq!(reply.body["meta"]["hasMore"], false);
        assert_eq!(reply.body["meta"]["nextCursor"], Value::Null);
        for bad in ["limit=0", "limit=101", "limit=x", "cursor=forged"] {
            app.get(&format!("/properties/{id}/gsc/{list}?{bad}"), &org.live)
                .await
                .expect_error(400, "validation_error");
        }
    }
    // A cursor of one list is not one of another's.
    for path in ["gsc", "gsc/overview", "gsc/queries", "gsc/pages"] {
        app.get(&format!("/properties/prop_unknown/{path}"), &org.live)
            .await
            .expect_error(404, "not_found");
        app.get(&format!("/properties/{id}/{path}"), "xf_live_wrong")
            .await
            .expect_error(401, "api_key_invalid");
    }
    app.send(xf_tests::request(
        Method::DELETE,
        &format!("/properties/{id}/gsc/sync"),
        Some(&org.live),
        None,
        &[],
    ))
    .await
    .expect_error(405, "method_not_allowed");
}

async fn tenants_see_only_their_own(app: TestApp) {
    let (app, google) = with_google(app).await;
    let (acme, id) = linked(&app, &google, site_data(2, 2)).await;
    sync(&app, &acme.live, &id).await.expect(202);
    let other = org(&app, "Globex").await;
    for path in ["gsc", "gsc/overview", "gsc/queries", "gsc/pages"] {
        app.get(&format!("/properties/{id}/{path}"), &other.live)
            .await
            .expect_error(404, "not_found");
    }
    sync(&app, &other.live, &id)
        .await
        .expect_error(404, "not_found");
    let theirs = app.get("/organization/gsc", &other.live).await;
    let theirs = theirs.expect(200);
    assert_eq!(theirs["totalProperties"], 0);
    assert_eq!(theirs["totalClicks28d"], 0);
    assert_eq!(theirs["orgConnected"], false);
    // Acme's linked account does not serve Globex's property.
    let their_property = property_id(&app, &other.live, "https://globex.example").await;
    app.admin(
        Method::PUT,
        &format!("/properties/{their_property}/gsc"),
        Some(json!({"siteUrl": SITE})),
    )
    .await
    .expect(200);
    sync(&app, &other.live, &their_property)
        .await
        .expect_error(400, "gsc_not_linked");
}

pub(crate) async fn admin_links_accounts_and_sites(app: TestApp) {
    let org = org(&app, "Acme").await;
    let reply = app
        .admin(
            Method::PUT,
            &format!("/organizations/{}/gsc", org.id),
            Some(json!({"refreshToken": REFRESH_TOKEN, "accountEmail": "seo@acme.example"})),
        )
        .await;
    let account = &reply.expect(200)["gscAccount"];
    assert_eq!(account["organizationId"], org.id.as_str());
    assert_eq!(account["accountEmail"], "seo@acme.example");
    assert_eq!(account["tokenRevoked"], false);
    assert_time(&account["linkedAt"]);
    assert!(!reply.body.to_string().contains(REFRESH_TOKEN));
    // Sealed at rest.
    let stored = app.store.get_gsc_account(&org.id).await.unwrap().unwrap();
    assert!(!stored.sealed_refresh_token.contains(REFRESH_TOKEN));
    assert!(stored.sealed_refresh_token.starts_with("v1."));

    let path = format!("/organizations/{}/gsc", org.id);
    for bad in [
        json!({}),
        json!({"refreshToken": ""}),
        json!({"refreshToken": "has space"}),
        json!({"refreshToken": "x".repeat(2049)}),
        json!({"refreshToken": 7}),
        json!({"refreshToken": "ok", "accountEmail": "not-an-email"}),
        json!({"refreshToken": "ok", "extra": true}),
    ] {
        app.admin(Method::PUT, &path, Some(bad.clone()))
            .await
            .expect_error(400, "validation_error");
    }
    app.admin(
        Method::PUT,
        "/organizations/org_unknown/gsc",
        Some(json!({"refreshToken": "ok"})),
    )
    .await
    .expect_error(404, "not_found");
    let id = property_id(&app, &org.live, "https://acme.example").await;
    for bad in [
        "acme.example",
        "https://acme.example",
        "sc-domain:",
        "ftp://acme.example/",
    ] {
        app.admin(
            Method::PUT,
            &format!("/properties/{id}/gsc"),
            Some(json!({"siteUrl": bad})),
        )
        .await
        .expect_error(400, "validation_error");
    }
    let linked = app
        .admin(
            Method::PUT,
            &format!("/properties/{id}/gsc"),
            Some(json!({"siteUrl": "https://www.acme.example/"})),
        )
        .await;
    assert_eq!(linked.expect(200)["property"]["gsc"]["linked"], true);
    app.get(&format!("/properties/{id}/gsc"), &org.live)
        .await
        .expect(200);
}
