//! The metric families: their names, labels and values as Prometheus reads them, the store's
//! gauges read at most once per interval, and a host's registry taking them in.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::registry::Registry;
use xf_core::metrics::Metrics;

fn metrics() -> Metrics {
    Metrics::new(Arc::new(xf_storage_memory::MemoryStore::new()))
}

fn line<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|line| line.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting {start:?} in:\n{text}"))
}

#[test]
fn requests_are_labelled_by_template_method_and_status_class() {
    let metrics = metrics();
    let ms = Duration::from_millis;
    metrics.request("api", "/jobs/{jobId}", "GET", 200, ms(3));
    metrics.request("api", "/jobs/{jobId}", "GET", 204, ms(7));
    metrics.request("api", "/jobs/{jobId}", "BREW", 418, ms(1));
    let text = metrics.encode();
    let count = line(
        &text,
        r#"xf_http_request_duration_seconds_count{service="api",route="/jobs/{jobId}",method="GET",status="2xx"}"#,
    );
    assert!(count.ends_with(" 2"), "{count}");
    let sum = line(
        &text,
        r#"xf_http_request_duration_seconds_sum{service="api",route="/jobs/{jobId}",method="GET",status="2xx"}"#,
    );
    let seconds: f64 = sum.rsplit(' ').next().unwrap().parse().unwrap();
    assert!((seconds - 0.010).abs() < 1e-9, "{sum}");
    line(
        &text,
        r#"xf_http_request_duration_seconds_count{service="api",route="/jobs/{jobId}",method="other",status="4xx"}"#,
    );
    assert!(text.contains("# TYPE xf_http_request_duration_seconds histogram"));
}

#[test]
fn counters_carry_the_total_suffix_and_their_labels() {
    let metrics = metrics();
    metrics.rate_limit_refused("write");
    metrics.idempotency_replayed();
    metrics.jobs_rescued(2, 0);
    metrics.webhook_delivery("retrying", None, Duration::from_millis(40));
    metrics.crawl_page_fetched(1_500);
    metrics.crawl_page_fetched(500);
    metrics.crawl_fetch_failed("timeout");
    metrics.scan_phase("store", Duration::from_millis(12));
    metrics.publish_attempt("tiktok", "failed", "rejected");
    metrics.token_refresh("tiktok", "refreshed");
    metrics.disconnection("linkedin");
    metrics.upload_bytes("resumable", 4_096);
    metrics.blob_error("write");
    let text = metrics.encode();
    for expected in [
        r#"xf_rate_limit_refusals_total{kind="write"} 1"#,
        "xf_idempotency_replays_total 1",
        r#"xf_job_rescues_total{outcome="requeued"} 2"#,
        r#"xf_webhook_delivery_duration_seconds_count{outcome="retrying",status="none"} 1"#,
        "xf_crawl_pages_total 2",
        "xf_crawl_bytes_total 2000",
        r#"xf_crawl_fetch_errors_total{kind="timeout"} 1"#,
        r#"xf_scan_phase_duration_seconds_count{phase="store"} 1"#,
        r#"xf_scan_phase_duration_seconds_sum{phase="store"} 0.012"#,
        r#"xf_publish_attempts_total{platform="tiktok",outcome="failed",error="rejected"} 1"#,
        r#"xf_token_refreshes_total{platform="tiktok",outcome="refreshed"} 1"#,
        r#"xf_channel_disconnections_total{platform="linkedin"} 1"#,
        r#"xf_upload_bytes_total{kind="resumable"} 4096"#,
        r#"xf_blob_errors_total{operation="write"} 1"#,
    ] {
        assert!(
            text.lines().any(|line| line == expected),
            "{expected} in:\n{text}"
        );
    }
    // Nothing was rescued as failed: no series with a zero of its own.
    assert!(!text.contains(r#"outcome="failed"} 0"#));
}

#[tokio::test]
async fn the_store_s_gauges_appear_once_read_and_are_read_at_most_every_interval() {
    use xf_core::store::JobStore;
    let store = Arc::new(xf_storage_memory::MemoryStore::new());
    let metrics = Metrics::new(store.clone());
    assert!(
        !metrics.encode().contains("xf_store_up"),
        "nothing before the first read"
    );
    metrics.refresh().await;
    let text = metrics.encode();
    assert_eq!(line(&text, "xf_store_up "), "xf_store_up 1");
    assert_eq!(
        line(&text, "xf_webhook_messages_waiting "),
        "xf_webhook_messages_waiting 0"
    );
    assert_eq!(line(&text, "xf_tus_uploads_open "), "xf_tus_uploads_open 0");
    assert!(!text.contains("xf_jobs{"), "{text}");

    // A job queued now is seen by the next read, not by a refresh within the interval.
    let organization = xf_core::ids::OrganizationId::new();
    let now = xf_core::time::Timestamp::from_datetime(chrono::Utc::now());
    let job =
        xf_core::model::JobRecord::new(organization, "thumbnail", serde_json::json!({}), None, now);
    store.insert_jobs(&[job]).await.unwrap();
    metrics.refresh().await;
    assert!(
        !metrics.encode().contains("xf_jobs{"),
        "read again too soon"
    );
    let fresh = Metrics::new(store);
    fresh.refresh().await;
    let text = fresh.encode();
    assert_eq!(
        line(&text, r#"xf_jobs{type="thumbnail",state="queued"}"#),
        r#"xf_jobs{type="thumbnail",state="queued"} 1"#
    );
    assert_eq!(
        line(&text, r#"xf_jobs{type="thumbnail",state="running"}"#),
        r#"xf_jobs{type="thumbnail",state="running"} 0"#
    );
}

#[test]
fn a_host_registry_gets_every_family() {
    let metrics = metrics();
    metrics.idempotency_replayed();
    let mut registry = Registry::with_prefix("host");
    let mine = prometheus_client::metrics::counter::Counter::<u64>::default();
    registry.register("requests", "The host's own", mine.clone());
    mine.inc();
    metrics.register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(text.contains("host_requests_total 1"), "{text}");
    assert!(
        text.contains("host_xf_idempotency_replays_total 1"),
        "{text}"
    );
}
