//! Sample deliveries: the data of test deliveries (`POST /webhooks/{id}/test`), and the
//! examples of the OpenAPI document's `webhooks` section and of docs/webhooks.md.

use serde_json::Value;

use crate::ids::{EventId, Id, JobId, PropertyId};
use crate::model::{EventType, Job, JobStatus, SEO_SCAN, TENANT_TYPE};
use crate::time::Timestamp;

/// The job of a test delivery of job event `event` at `now`: a scan in the state the event
/// names, of no real property, for an organization named `tenant_label`.
pub fn sample_job(
    event: EventType,
    now: Timestamp,
    tenant_label: &str,
    shop_domain: Option<&str>,
) -> Job {
    let (status, error, result) = match event {
        EventType::JobCompleted => (
            JobStatus::Completed,
            None,
            Some(serde_json::json!({"score": 87, "pagesScanned": 42, "issuesCount": 5})),
        ),
        EventType::JobFailed => (
            JobStatus::Failed,
            Some("test delivery: the site could not be reached".to_owned()),
            None,
        ),
        _ => (JobStatus::Cancelled, None, None),
    };
    let started = now.plus(chrono::Duration::seconds(-30));
    Job {
        id: JobId::derived(&[0u8; 16]),
        job_type: SEO_SCAN.to_owned(),
        status,
        progress: if status == JobStatus::Completed {
            100
        } else {
            40
        },
        property_id: PropertyId::derived(&[0u8; 16]),
        property_name: "Test property".to_owned(),
        tenant_type: TENANT_TYPE,
        tenant_label: tenant_label.to_owned(),
        shop_domain: shop_domain.map(str::to_owned),
        created_at: now.plus(chrono::Duration::seconds(-60)),
        started_at: Some(started),
        completed_at: Some(now),
        error,
        result,
    }
}

/// When the examples of the document and the guide happened.
pub const EXAMPLE_TIME: &str = "2026-11-26T09:30:00.000Z";

/// The whole body of a sample delivery of `event` at `at`, as a receiver gets it (without
/// `test`): what the document and the guide show for each event.
pub fn sample_body(event: EventType, at: Timestamp) -> Value {
    let data = match crate::media::events::sample_data(event, at) {
        Some(data) => data,
        None => serde_json::json!({"job": sample_job(event, at, "Acme", None)}),
    };
    serde_json::json!({
        "id": EventId::derived(&[0u8; 16]),
        "type": event,
        "createdAt": at,
        "data": data,
    })
}
