//! Audits over time through the service (beyond the spec): the scan history, the comparison's
//! errors, the issue list's further filters and its CSV export.

use std::sync::Arc;

use http::Method;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use xf_core::ids::JobId;
use xf_core::model::{IssueStatus, ScanKind, Severity};
use xf_core::store::{NewFinding, ScanFindings};
use xf_core::testing::{Counting, TestStore};
use xf_tests::{request, TestApp};

use crate::properties::issue;
use crate::{backends, org, property, scan, start};

backends!(
    the_history_lists_every_scan_of_the_property,
    the_issue_list_takes_check_severity_and_address_filters,
    the_issue_list_exports_as_csv,
);

/// The document's schemas, to check what the endpoints answer.
async fn schemas(app: &TestApp) -> xf_tests::Schemas {
    let doc = app
        .send(request(Method::GET, "/openapi.json", None, None, &[]))
        .await
        .body;
    xf_tests::Schemas::of(&doc)
}

/// Completes the queued scan `job_id` as the crawler would, with one finding per `(check,
/// severity)`, each on its own page.
async fn complete_with(app: &TestApp, property_id: &str, job_id: &str, found: &[(&str, Severity)]) {
    let attempt = start(app, job_id).await;
    let job = app
        .store
        .get_job(&JobId::parse(job_id).expect("job id"))
        .await
        .unwrap()
        .expect("job");
    let findings: Vec<NewFinding> = found
        .iter()
        .enumerate()
        .map(|(n, (check, severity))| {
            let url = format!("https://acme.example/page/{n}");
            NewFinding {
                issue_type: (*check).to_owned(),
                title: format!("The {check} check"),
                severity: *severity,
                scan_kind: ScanKind::Page,
                url: Some(url.clone()),
                subject: url,
                evidence: "seen".to_owned(),
                how_to_fix: "fix it".to_owned(),
            }
        })
        .collect();
    let scan = ScanFindings {
        organization_id: job.organization_id.clone(),
        property_id: xf_core::ids::PropertyId::parse(property_id).expect("property id"),
        job_id: job.id.clone(),
        now: app.xf.now(),
        score: 81,
        pages_scanned: 12,
        reached: findings.iter().filter_map(|f| f.url.clone()).collect(),
        findings,
        pages: Vec::new(),
    };
    let result = json!({"score": 81, "pagesScanned": 12, "issuesCount": found.len()});
    assert!(app
        .store
        .complete_scan(scan, &attempt, &result)
        .await
        .unwrap());
}

/// `GET /properties/{id}/scans`: every scan of the property newest first, pending ones with
/// null figures, completed ones with their record; paged with a cursor bound to the
/// property; another organization's property is a 404. A comparison needs completed scans.
pub(crate) async fn the_history_lists_every_scan_of_the_property(app: TestApp) {
    let org = org(&app, "History").await;
    let created = property(&app, &org.live, "https://acme.example").await;
    let pid = created["id"].as_str().unwrap().to_owned();
    let other = property(&app, &org.live, "https://other.example").await;
    let other_pid = other["id"].as_str().unwrap().to_owned();
    let first = scan(&app, &org.live, &pid).await;
    complete_with(
        &app,
        &pid,
        &first,
        &[
            ("title_missing", Severity::High),
            ("h1_missing", Severity::Medium),
            ("broken_internal_link", Severity::Critical),
        ],
    )
    .await;
    app.clock.advance(chrono::Duration::minutes(1));
    let second = scan(&app, &org.live, &pid).await;
    app.clock.advance(chrono::Duration::minutes(1));
    let elsewhere = scan(&app, &org.live, &other_pid).await;

    let schemas = schemas(&app).await;
    let reply = app
        .get(&format!("/properties/{pid}/scans"), &org.live)
        .await;
    schemas.check("PageEnvelope_ScanHistory", &reply.body);
    let scans = reply.expect(200)["scans"].as_array().unwrap().clone();
    assert_eq!(scans.len(), 2, "{scans:#?}");
    assert_eq!(scans[0]["jobId"], second.as_str());
    assert_eq!(scans[0]["status"], "pending");
    for field in [
        "score",
        "pagesScanned",
        "issuesCount",
        "bySeverity",
        "changes",
        "completedAt",
    ] {
        assert_eq!(scans[0][field], Value::Null, "{field}");
    }
    assert_eq!(scans[1]["jobId"], first.as_str());
    assert_eq!(scans[1]["status"], "completed");
    assert_eq!(
        (
            &scans[1]["score"],
            &scans[1]["pagesScanned"],
            &scans[1]["issuesCount"]
        ),
        (&json!(81), &json!(12), &json!(3))
    );
    assert_eq!(
        scans[1]["bySeverity"],
        json!({"critical": 1, "high": 1, "medium": 1, "low": 0})
    );
    assert_eq!(
        scans[1]["changes"],
        json!({"opened": 3, "resolved": 0, "reopened": 0})
    );

    // Paged, the cursor bound to the property.
    let paged = app
        .get(&format!("/properties/{pid}/scans?limit=1"), &org.live)
        .await;
    assert_eq!(paged.body["meta"]["hasMore"], true);
    let cursor = paged.body["meta"]["nextCursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let next = app
        .get(
            &format!("/properties/{pid}/scans?limit=1&cursor={cursor}"),
            &org.live,
        )
        .await;
    assert_eq!(next.expect(200)["scans"][0]["jobId"], first.as_str());
    assert_eq!(next.body["meta"]["hasMore"], false);
    app.get(
        &format!("/properties/{other_pid}/scans?cursor={cursor}"),
        &org.live,
    )
    .await
    .expect_error(400, "validation_error");
    for bad in ["limit=0", "limit=101", "cursor=nope"] {
        app.get(&format!("/properties/{pid}/scans?{bad}"), &org.live)
            .await
            .expect_error(400, "validation_error");
    }

    // Another organization sees none of it.
    let stranger = crate::org(&app, "Stranger").await;
    app.get(&format!("/properties/{pid}/scans"), &stranger.live)
        .await
        .expect_error(404, "not_found");
    app.get(
        &format!("/properties/{pid}/scans/{first}/changes"),
        &stranger.live,
    )
    .await
    .expect_error(404, "not_found");
    app.get("/properties/prop_nope/scans", &org.live)
        .await
        .expect_error(404, "not_found");

    // Comparisons: the first scan against nothing; a pending scan has nothing to compare; a
    // scan of another property is not this property's.
    let compared = app
        .get(
            &format!("/properties/{pid}/scans/{first}/changes"),
            &org.live,
        )
        .await;
    schemas.check("PageEnvelope_ScanComparison", &compared.body);
    let data = compared.expect(200);
    assert_eq!(data["against"], Value::Null);
    assert_eq!(
        data["totals"],
        json!({"opened": 3, "resolved": 0, "reopened": 0})
    );
    assert_eq!(data["changes"].as_array().unwrap().len(), 3);
    assert!(data["changes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["change"] == "opened" && c["issue"]["status"] == "open"));
    app.get(
        &format!("/properties/{pid}/scans/{second}/changes"),
        &org.live,
    )
    .await
    .expect_error(409, "conflict");
    app.get(
        &format!("/properties/{pid}/scans/{elsewhere}/changes"),
        &org.live,
    )
    .await
    .expect_error(404, "not_found");
    app.get(
        &format!("/properties/{pid}/scans/{first}/changes?against={second}"),
        &org.live,
    )
    .await
    .expect_error(400, "validation_error");
    app.get(
        &format!("/properties/{pid}/scans/job_nope/changes"),
        &org.live,
    )
    .await
    .expect_error(404, "not_found");
}

/// Seeds issues of several checks, severities and addresses on a new property; returns its
/// id and the key.
async fn seeded_issues(app: &TestApp) -> (crate::Org, String) {
    let org = org(app, "Filters").await;
    let created = property(app, &org.live, "https://acme.example").await;
    let pid = created["id"].as_str().unwrap().to_owned();
    let job_id = scan(app, &org.live, &pid).await;
    let t = xf_tests::start_time();
    let seeds = [
        ("title_missing", Severity::High, "/blog/a", "no <title>"),
        (
            "h1_missing",
            Severity::Medium,
            "/blog/b",
            "=HYPERLINK(\"http://evil\")",
        ),
        (
            "title_missing",
            Severity::High,
            "/shop/a",
            "a, \"quoted\"\nline",
        ),
        (
            "broken_internal_link",
            Severity::Critical,
            "/blog_old",
            "-1 links",
        ),
    ];
    for (n, (check, severity, path, evidence)) in seeds.into_iter().enumerate() {
        let mut made = issue(
            &org.id,
            &pid,
            &job_id,
            ScanKind::Page,
            IssueStatus::Open,
            t.plus(chrono::Duration::seconds(n as i64)),
        );
        made.issue_type = check.to_owned();
        made.severity = severity;
        made.url = Some(format!("https://acme.example{path}"));
        made.subject = format!("https://acme.example{path}");
        made.evidence = evidence.to_owned();
        app.store.insert_issue(&made).await.unwrap();
    }
    (org, pid)
}

/// `type` (check ids, comma-separated), `severity` and `url` (a prefix) filter the list,
/// alone and together; a bad value is a 400 naming the parameter; the cursor is bound to them.
pub(crate) async fn the_issue_list_takes_check_severity_and_address_filters(app: TestApp) {
    let (org, pid) = seeded_issues(&app).await;
    let urls = |query: &str| {
        let app = &app;
        let path = format!("/properties/{pid}/issues?{query}");
        let key = org.live.clone();
        async move {
            let reply = app.get(&path, &key).await;
            reply.expect(200)["issues"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    i["url"]
                        .as_str()
                        .unwrap_or_default()
                        .trim_start_matches("https://acme.example")
                        .to_owned()
                })
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(urls("type=title_missing").await, ["/shop/a", "/blog/a"]);
    assert_eq!(
        urls("type=h1_missing,broken_internal_link,h1_missing").await,
        ["/blog_old", "/blog/b"]
    );
    assert_eq!(urls("severity=critical").await, ["/blog_old"]);
    assert_eq!(
        urls("url=https://acme.example/blog/").await,
        ["/blog/b", "/blog/a"]
    );
    assert_eq!(
        urls("url=https%3A%2F%2Facme.example%2Fblog").await,
        ["/blog_old", "/blog/b", "/blog/a"]
    );
    assert_eq!(
        urls("type=title_missing&severity=high&url=https://acme.example/blog/&status=open&scanKind=page").await,
        ["/blog/a"]
    );
    assert!(urls("severity=low").await.is_empty());

    for (bad, field) in [
        ("type=nope_missing", "type"),
        ("type=Title_Missing", "type"),
        ("type=title_missing,", "type"),
        ("type=", "type"),
        ("severity=urgent", "severity"),
        ("url=", "url"),
        ("url=https://acme.example/a%20b", "url"),
        ("url=https://acme.example/%00", "url"),
    ] {
        let reply = app
            .get(&format!("/properties/{pid}/issues?{bad}"), &org.live)
            .await;
        reply.expect_error(400, "validation_error");
        assert_eq!(
            reply.body["error"]["details"][0]["field"], field,
            "{bad}: {}",
            reply.body
        );
    }
    let long = format!("url=https://acme.example/{}", "a".repeat(2100));
    app.get(&format!("/properties/{pid}/issues?{long}"), &org.live)
        .await
        .expect_error(400, "validation_error");

    let paged = app
        .get(
            &format!("/properties/{pid}/issues?type=title_missing&limit=1"),
            &org.live,
        )
        .await;
    let cursor = paged.body["meta"]["nextCursor"]
        .as_str()
        .unwrap()
        .to_owned();
    app.get(
        &format!("/properties/{pid}/issues?type=title_missing&limit=1&cursor={cursor}"),
        &org.live,
    )
    .await
    .expect(200);
    app.get(
        &format!("/properties/{pid}/issues?type=h1_missing&limit=1&cursor={cursor}"),
        &org.live,
    )
    .await
    .expect_error(400, "validation_error");
}

/// The body of a response, whole.
async fn text_of(response: http::Response<xf_tower::Body>) -> String {
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    String::from_utf8(bytes.to_vec()).expect("UTF-8")
}

/// `Accept: text/csv` (preferred) or the `.csv` path give every matching issue as CSV with a
/// header row, cells quoted where needed and formulas guarded; errors stay JSON envelopes.
async fn the_issue_list_exports_as_csv(app: TestApp) {
    let (org, pid) = seeded_issues(&app).await;
    let csv_request = |path: &str, accept: &str| {
        request(
            Method::GET,
            path,
            Some(&org.live),
            None,
            &[("accept", accept)],
        )
    };
    let negotiated = app
        .send_raw(csv_request(
            &format!("/properties/{pid}/issues?type=title_missing,h1_missing"),
            "text/csv",
        ))
        .await;
    assert_eq!(negotiated.status(), 200);
    assert_eq!(
        negotiated.headers()["content-type"],
        "text/csv; charset=utf-8"
    );
    assert_eq!(
        negotiated.headers()["content-disposition"],
        format!("attachment; filename=\"issues-{pid}.csv\"").as_str()
    );
    let body = text_of(negotiated).await;
    let lines: Vec<&str> = body.split("\r\n").collect();
    assert_eq!(
        lines[0],
        "id,type,title,severity,scanKind,status,url,evidence,howToFix,createdAt,lastSeenAt,resolvedAt,fixedAt,jobId"
    );
    // Three issues (one with a line break in a quoted cell), then the final CRLF.
    assert_eq!(body.matches("https://acme.example/").count(), 3, "{body}");
    assert!(
        body.contains(",\"'=HYPERLINK(\"\"http://evil\"\")\","),
        "{body}"
    );
    assert!(body.contains(",\"a, \"\"quoted\"\"\nline\","), "{body}");
    assert!(body.ends_with("\r\n"));

    let twin = app
        .send_raw(request(
            Method::GET,
            &format!("/properties/{pid}/issues.csv?type=title_missing,h1_missing"),
            Some(&org.live),
            None,
            &[],
        ))
        .await;
    assert_eq!(twin.status(), 200);
    assert_eq!(text_of(twin).await, body);

    // Every issue without filters; the guard on a leading minus.
    let all = text_of(
        app.send_raw(csv_request(&format!("/properties/{pid}/issues.csv"), "*/*"))
            .await,
    )
    .await;
    assert!(all.contains(",\"'-1 links\","), "{all}");

    // JSON when JSON is named first; errors are the JSON envelope.
    let json_first = app
        .send(csv_request(
            &format!("/properties/{pid}/issues"),
            "application/json, text/csv",
        ))
        .await;
    assert_eq!(
        json_first.expect(200)["issues"].as_array().unwrap().len(),
        4
    );
    app.send(csv_request("/properties/prop_nope/issues", "text/csv"))
        .await
        .expect_error(404, "not_found");
    app.send(csv_request(
        &format!("/properties/{pid}/issues.csv?severity=urgent"),
        "text/csv",
    ))
    .await
    .expect_error(400, "validation_error");
    let stranger = crate::org(&app, "Stranger").await;
    app.send(request(
        Method::GET,
        &format!("/properties/{pid}/issues.csv"),
        Some(&stranger.live),
        None,
        &[],
    ))
    .await
    .expect_error(404, "not_found");
}

/// The issues seeded for the large export.
const MANY: usize = 10_000;

/// An export of 10,000 issues streams a store page at a time (21 reads of at most
/// `CSV_BATCH` issues, no frame larger than one page's rows) and Python's `csv` module reads
/// back every row.
async fn a_large_export_streams_page_by_page(inner: Arc<dyn TestStore>) {
    let counting = Arc::new(Counting::new(inner));
    let app = TestApp::over(counting.clone());
    let org = org(&app, "Large export").await;
    let created = property(&app, &org.live, "https://acme.example").await;
    let pid = created["id"].as_str().unwrap().to_owned();
    let job_id = scan(&app, &org.live, &pid).await;
    let t = xf_tests::start_time();
    for n in 0..MANY {
        let mut made = issue(
            &org.id,
            &pid,
            &job_id,
            ScanKind::Page,
            IssueStatus::Open,
            t.plus(chrono::Duration::milliseconds(n as i64)),
        );
        made.evidence = format!("=cell {n}, with \"quotes\"");
        app.store.insert_issue(&made).await.unwrap();
    }
    counting.reset();
    let response = app
        .send_raw(request(
            Method::GET,
            &format!("/properties/{pid}/issues.csv"),
            Some(&org.live),
            None,
            &[],
        ))
        .await;
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let mut text = Vec::new();
    let mut largest = 0;
    let mut frames = 0;
    while let Some(frame) = body.frame().await {
        let frame = frame.expect("a frame");
        if let Some(data) = frame.data_ref() {
            largest = largest.max(data.len());
            frames += 1;
            text.extend_from_slice(data);
        }
    }
    let batches = MANY / xf_core::export::CSV_BATCH;
    assert_eq!(frames, 1 + batches, "a header and one frame per page");
    assert_eq!(
        counting.calls().get("list_issues"),
        Some(&(batches as u64 + 1))
    );
    let row_bytes = text.len() / MANY;
    assert!(
        largest <= (xf_core::export::CSV_BATCH + 1) * row_bytes * 2,
        "a frame of {largest} bytes holds more than a page"
    );

    let path = std::env::temp_dir().join(format!("xf-export-{pid}.csv"));
    std::fs::write(&path, &text).expect("write the export");
    let python = std::env::var("XF_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let script = r#"
import csv, sys
with open(sys.argv[1], newline="", encoding="utf-8") as f:
    rows = list(csv.reader(f))
header, rows = rows[0], rows[1:]
assert header[0] == "id" and header[7] == "evidence", header
assert all(len(row) == len(header) for row in rows)
evidence = sorted(int(row[7].split(" ")[1].rstrip(",")) for row in rows)
assert evidence == list(range(len(rows))), "every issue once"
assert all(row[7].startswith("'=cell ") and row[7].endswith(', with "quotes"') for row in rows)
print(len(rows))
"#;
    let output = std::process::Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(&path)
        .output()
        .expect("run python");
    assert!(
        output.status.success(),
        "python: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        MANY.to_string()
    );
    std::fs::remove_file(&path).expect("remove the export");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_export_streams_page_by_page_from_memory() {
    a_large_export_streams_page_by_page(Arc::new(xf_storage_memory::MemoryStore::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_export_streams_page_by_page_from_postgres() {
    a_large_export_streams_page_by_page(Arc::new(
        xf_storage_postgres::testing::fresh_database().await,
    ))
    .await;
}
