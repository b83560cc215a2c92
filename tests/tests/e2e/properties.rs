//! Properties, includes, pagination and issues.

use std::collections::HashSet;

use http::Method;
use serde_json::{json, Value};
use xf_core::ids::{JobId, OrganizationId, PropertyId};
use xf_core::model::{Issue, IssueStatus, ScanKind};
use xf_core::time::Timestamp;
use xf_tests::{request, TestApp};

use crate::{assert_time, org, property};

pub(crate) async fn create_property_shape_and_normalisation(app: TestApp) {
    let org = org(&app, "Acme").await;
    let reply = app
        .post(
            "/properties",
            &org.live,
            json!({"url": "HTTPS://Shop.Example.COM:443/en#top"}),
        )
        .await;
    let property = &reply.expect(201)["property"];
    assert!(property["id"].as_str().unwrap().starts_with("prop_"));
    assert_eq!(property["url"], "https://shop.example.com/en");
    assert_eq!(property["name"], "shop.example.com");
    assert_eq!(property["verified"], false);
    assert_time(&property["createdAt"]);
    let keys: HashSet<_> = property.as_object().unwrap().keys().cloned().collect();
    assert_eq!(
        keys,
        ["id", "name", "url", "verified", "createdAt"]
            .map(String::from)
            .into()
    );

    let named = app
        .post(
            "/properties",
            &org.live,
            json!({"url": "http://blog.example.com", "name": "  Blog "}),
        )
        .await;
    assert_eq!(named.expect(201)["property"]["name"], "Blog");

    // Same normalised URL: conflict.
    app.post(
        "/properties",
        &org.live,
        json!({"url": "https://shop.example.com/en"}),
    )
    .await
    .expect_error(409, "conflict");
    // Another organization may register it.
    let other = crate::org(&app, "Other").await;
    app.post(
        "/properties",
        &other.live,
        json!({"url": "https://shop.example.com/en"}),
    )
    .await
    .expect(201);
}

async fn create_property_rejects_bad_input(app: TestApp) {
    let org = org(&app, "Acme").await;
    let cases: Vec<(String, &str)> = vec![
        (json!({}).to_string(), "url"),
        (json!({"url": 42}).to_string(), "url"),
        (json!({"url": "not a url"}).to_string(), "url"),
        (json!({"url": "ftp://example.com"}).to_string(), "url"),
        (json!({"url": " https://example.com"}).to_string(), "url"),
        (json!({"url": "https://127.0.0.1/"}).to_string(), "url"),
        (
            json!({"url": "https://user:pw@example.com/"}).to_string(),
            "url",
        ),
        (
            json!({"url": "https://example.com", "name": "tab\there"}).to_string(),
            "name",
        ),
        (
            json!({"url": "https://example.com", "extra": true}).to_string(),
            "extra",
        ),
        (
            json!({"url": "https://example.com", "name": 7}).to_string(),
            "name",
        ),
        (
            json!({"url": "https://example.com", "name": "x".repeat(201)}).to_string(),
            "name",
        ),
        ("{\"url\": ".to_owned(), "body"),
        ("[1,2]".to_owned(), "body"),
        ("".to_owned(), "body"),
        (
            "{\"url\":\"https://a.example\"} trailing".to_owned(),
            "body",
        ),
    ];
    for (body, field) in cases {
        let reply = app
            .send(request(
                Method::POST,
                "/properties",
                Some(&org.live),
                Some(body.clone()),
                &[],
            ))
            .await;
        reply.expect_error(400, "validation_error");
        assert_eq!(
            reply.body["error"]["details"][0]["field"], field,
            "body {body}: {}",
            reply.body
        );
    }
    let huge = json!({"url": "https://example.com", "name": "x".repeat(1024 * 1024)}).to_string();
    app.send(request(
        Method::POST,
        "/properties",
        Some(&org.live),
        Some(huge),
        &[],
    ))
    .await
    .expect_error(413, "payload_too_large");
    // Nothing was created by any of it.
    let list = app.get("/properties", &org.live).await;
    assert_eq!(list.expect(200)["properties"], json!([]));
}

pub(crate) async fn get_property_with_includes(app: TestApp) {
    let org = org(&app, "Acme").await;
    let created = property(&app, &org.live, "https://acme.example").await;
    let id = created["id"].as_str().unwrap();
    let plain = app.get(&format!("/properties/{id}"), &org.live).await;
    assert_eq!(plain.expect(200), &created);

    let both = app
        .get(&format!("/properties/{id}?include=gsc,lastScan"), &org.live)
        .await;
    let data = both.expect(200);
    assert_eq!(data["lastScan"], Value::Null);
    assert_eq!(
        data["gsc"],
        json!({"linked": false, "siteUrl": null, "lastSyncedAt": null, "clicks28d": 0, "impressions28d": 0})
    );

    let job_id = crate::scan(&app, &org.live, id).await;
    crate::complete(&app, &job_id, 87).await;
    app.admin(
        Method::PUT,
        &format!("/properties/{id}/gsc"),
        Some(json!({"siteUrl": "sc-domain:acme.example"})),
    )
    .await
    .expect(200);
    let reply = app
        .get(&format!("/properties/{id}?include=lastScan,gsc"), &org.live)
        .await;
    let data = reply.expect(200);
    assert_eq!(data["lastScan"]["jobId"], job_id.as_str());
    assert_eq!(data["lastScan"]["status"], "completed");
    assert_eq!(data["lastScan"]["score"], 87);
    assert_eq!(data["lastScan"]["pagesScanned"], 12);
    assert_eq!(data["lastScan"]["issuesCount"], 3);
    assert_time(&data["lastScan"]["completedAt"]);
    assert_eq!(data["gsc"]["linked"], true);
    assert_eq!(data["gsc"]["siteUrl"], "sc-domain:acme.example");

    let list = app.get("/properties?include=lastScan", &org.live).await;
    assert_eq!(
        list.expect(200)["properties"][0]["lastScan"]["jobId"],
        job_id.as_str()
    );

    app.get(&format!("/properties/{id}?include=owner"), &org.live)
        .await
        .expect_error(400, "validation_error");
    app.get("/properties?include=gsc,nope", &org.live)
        .await
        .expect_error(400, "validation_error");
    app.get("/properties/prop_unknown", &org.live)
        .await
        .expect_error(404, "not_found");

    let verified = app
        .admin(Method::POST, &format!("/properties/{id}/verify"), None)
        .await;
    assert_eq!(verified.expect(200)["property"]["verified"], true);
    app.admin(Method::POST, "/properties/prop_unknown/verify", None)
        .await
        .expect_error(404, "not_found");
}

async fn pagination_walks_250_properties_once_newest_first(app: TestApp) {
    let org = org(&app, "Acme").await;
    let org_id = org.id.clone();
    let base = crate_start();
    // Seed through the store with distinct and some equal timestamps, to exercise the id
    // tie-break.
    let mut expected = Vec::new();
    for i in 0..250u32 {
        let created_at = base.plus(chrono::Duration::milliseconds(i64::from(i / 3)));
        let property = xf_core::model::Property {
            id: xf_core::ids::PropertyId::new(),
            organization_id: org_id.clone(),
            name: format!("Site {i}"),
            url: format!("https://site{i}.example/"),
            verified: false,
            created_at,
            gsc_site_url: None,
        };
        app.store.insert_property(&property).await.unwrap();
        expected.push((created_at, property.id));
    }
    expected.sort();
    expected.reverse();
    let expected: Vec<String> = expected.into_iter().map(|(_, id)| id.to_string()).collect();

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/properties?limit=7&cursor={c}"),
            None => "/properties?limit=7".to_owned(),
        };
        let reply = app.get(&path, &org.live).await;
        let page = reply.expect(200)["properties"].as_array().unwrap().clone();
        assert!(page.len() <= 7);
        seen.extend(page.iter().map(|p| p["id"].as_str().unwrap().to_owned()));
        let meta = &reply.body["meta"];
        if meta["hasMore"] == true {
            cursor = Some(meta["nextCursor"].as_str().unwrap().to_owned());
        } else {
            assert_eq!(meta["nextCursor"], Value::Null);
            break;
        }
    }
    assert_eq!(seen.len(), 250);
    assert_eq!(seen, expected);

    let default = app.get("/properties", &org.live).await;
    assert_eq!(
        default.expect(200)["properties"].as_array().unwrap().len(),
        40
    );
}

fn crate_start() -> Timestamp {
    xf_tests::start_time()
}

async fn list_parameters_are_validated(app: TestApp) {
    let org = org(&app, "Acme").await;
    for i in 0..3 {
        property(&app, &org.live, &format!("https://s{i}.example")).await;
    }
    for bad in [
        "limit=0",
        "limit=101",
        "limit=abc",
        "limit=1.5",
        "cursor=forged",
        "cursor=",
    ] {
        app.get(&format!("/properties?{bad}"), &org.live)
            .await
            .expect_error(400, "validation_error");
    }
    app.get("/properties?limit=100&unknown=1", &org.live)
        .await
        .expect(200);
    let first = app.get("/properties?limit=1", &org.live).await;
    let cursor = first.body["meta"]["nextCursor"]
        .as_str()
        .unwrap()
        .to_owned();
    // A cursor of another list, or of the same list with other filters, is refused.
    app.get(&format!("/jobs?cursor={cursor}"), &org.live)
        .await
        .expect_error(400, "validation_error");
    app.get(&format!("/reports?cursor={cursor}"), &org.live)
        .await
        .expect_error(400, "validation_error");
    let jobs = app.get("/jobs?limit=1&status=pending", &org.live).await;
    assert_eq!(jobs.expect(200)["jobs"], json!([]));
}

pub(crate) fn issue(
    org_id: &OrganizationId,
    property_id: &str,
    job_id: &str,
    kind: ScanKind,
    status: IssueStatus,
    at: Timestamp,
) -> Issue {
    // The check's catalogue entry supplies title, severity and fix, as the crawler's do.
    let check = if kind == ScanKind::Page {
        &xf_core::crawl::checks::TITLE_MISSING
    } else {
        &xf_core::crawl::checks::SITEMAP_MISSING
    };
    let id = xf_core::ids::IssueId::new();
    let url = (kind == ScanKind::Page).then(|| format!("https://acme.example/about/{id}"));
    Issue {
        subject: url.clone().unwrap_or_else(|| format!("sitemap {id}")),
        id,
        organization_id: org_id.clone(),
        property_id: PropertyId::parse(property_id).expect("a property id"),
        job_id: JobId::parse(job_id).expect("a job id"),
        scan_kind: kind,
        issue_type: check.id.to_owned(),
        title: check.title.to_owned(),
        severity: check.severity,
        url,
        evidence: "no <title>".to_owned(),
        how_to_fix: check.fix.to_owned(),
        status,
        created_at: at,
        last_seen_at: at,
        resolved_at: None,
        fixed_at: None,
    }
}

pub(crate) async fn issues_list_filters_and_summary(app: TestApp) {
    let org = org(&app, "Acme").await;
    let created = property(&app, &org.live, "https://acme.example").await;
    let pid = created["id"].as_str().unwrap();
    let job_id = crate::scan(&app, &org.live, pid).await;
    let t = xf_tests::start_time();
    let statuses = [
        IssueStatus::Open,
        IssueStatus::Open,
        IssueStatus::Resolved,
        IssueStatus::Fixed,
    ];
    for (i, status) in statuses.into_iter().enumerate() {
        let kind = if i == 1 {
            ScanKind::Site
        } else {
            ScanKind::Page
        };
        let at = t.plus(chrono::Duration::seconds(i as i64));
        app.store
            .insert_issue(&issue(&org.id, pid, &job_id, kind, status, at))
            .await
            .unwrap();
    }
    let reply = app
        .get(&format!("/properties/{pid}/issues"), &org.live)
        .await;
    let data = reply.expect(200);
    assert_eq!(
        data["summary"],
        json!({"open": 2, "resolved": 1, "fixed": 1, "total": 4})
    );
    let issues = data["issues"].as_array().unwrap();
    assert_eq!(issues.len(), 4);
    assert_eq!(issues[0]["status"], "fixed");
    xf_tests::assert_issue_item_shape(&issues[3]);
    assert_eq!(reply.body["meta"]["hasMore"], false);

    let site = app
        .get(
            &format!("/properties/{pid}/issues?scanKind=site"),
            &org.live,
        )
        .await;
    let site = site.expect(200)["issues"].as_array().unwrap().clone();
    assert_eq!(site.len(), 1);
    assert_eq!(site[0]["url"], Value::Null);
    let open = app
        .get(
            &format!("/properties/{pid}/issues?status=open&scanKind=page"),
            &org.live,
        )
        .await;
    assert_eq!(open.expect(200)["issues"].as_array().unwrap().len(), 1);
    let paged = app
        .get(&format!("/properties/{pid}/issues?limit=3"), &org.live)
        .await;
    assert_eq!(paged.body["meta"]["hasMore"], true);
    let cursor = paged.body["meta"]["nextCursor"].as_str().unwrap();
    let next = app
        .get(
            &format!("/properties/{pid}/issues?limit=3&cursor={cursor}"),
            &org.live,
        )
        .await;
    assert_eq!(next.expect(200)["issues"].as_array().unwrap().len(), 1);
    // The cursor is bound to the filters.
    app.get(
        &format!("/properties/{pid}/issues?limit=3&status=open&cursor={cursor}"),
        &org.live,
    )
    .await
    .expect_error(400, "validation_error");

    for bad in ["status=closed", "scanKind=domain"] {
        app.get(&format!("/properties/{pid}/issues?{bad}"), &org.live)
            .await
            .expect_error(400, "validation_error");
    }
    app.get("/properties/prop_nope/issues", &org.live)
        .await
        .expect_error(404, "not_found");

    // The host marks the open page issue fixed.
    let open_id = open.body["data"]["issues"][0]["id"].as_str().unwrap();
    let fixed = app
        .admin(Method::POST, &format!("/issues/{open_id}/fixed"), None)
        .await;
    let fixed = fixed.expect(200);
    assert_eq!(fixed["issue"]["status"], "fixed");
    assert_time(&fixed["issue"]["fixedAt"]);
    let summary = app
        .get(&format!("/properties/{pid}/issues"), &org.live)
        .await;
    assert_eq!(
        summary.expect(200)["summary"],
        json!({"open": 1, "resolved": 1, "fixed": 2, "total": 4})
    );
    app.admin(Method::POST, "/issues/iss_nope/fixed", None)
        .await
        .expect_error(404, "not_found");
}

crate::backends!(
    create_property_shape_and_normalisation,
    create_property_rejects_bad_input,
    get_property_with_includes,
    pagination_walks_250_properties_once_newest_first,
    list_parameters_are_validated,
    issues_list_filters_and_summary,
);
