//! End-to-end tests through the tower service (`oneshot`, no sockets). Every test is an async
//! fn over a [`TestApp`]; `backends!` runs each one on every storage backend.

mod access;
mod admin_reads;
mod answers;
mod basics;
mod builder;
mod contract;
mod gsc;
mod history;
mod hostile;
mod idempotency;
mod jobs;
mod media;
mod openapi;
mod properties;
mod publishing;
mod reports;
mod runtime;
mod scans;
mod schedules;
mod test_mode;
mod text_input;
mod tus;
mod webhooks;

use serde_json::{json, Value};
use xf_tests::TestApp;

/// Expands to one test per function per backend: `memory::<name>` and `postgres::<name>`.
#[macro_export]
macro_rules! backends {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(xf_tests::TestApp::memory().await).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(xf_tests::TestApp::postgres().await).await
                }
            )*
        }
    };
}

/// An organization on `growth` and its live and test keys.
#[derive(Debug)]
pub struct Org {
    pub id: xf_core::ids::OrganizationId,
    pub live: String,
    pub test: String,
}

/// The events a media-plan organization may receive, in the order webhooks list them.
pub const MEDIA_EVENTS: [&str; 6] = [
    "media.post.published",
    "media.post.failed",
    "media.post.deleted",
    "media.completed",
    "media.failed",
    "channel.disconnected",
];

pub async fn org(app: &TestApp, name: &str) -> Org {
    let created = app.organization(name, "growth").await;
    Org {
        id: created.organization.id,
        live: created.live_key,
        test: created.test_key,
    }
}

/// Creates a property through the API and returns it.
pub async fn property(app: &TestApp, key: &str, url: &str) -> Value {
    let reply = app.post("/properties", key, json!({ "url": url })).await;
    reply.expect(201)["property"].clone()
}

/// Creates a property through the API and returns its id.
pub async fn property_id(app: &TestApp, key: &str, url: &str) -> String {
    property(app, key, url).await["id"]
        .as_str()
        .expect("a property id")
        .to_owned()
}

/// Queues a scan through the API and returns the job id.
pub async fn scan(app: &TestApp, key: &str, property_id: &str) -> String {
    let reply = app
        .post(&format!("/properties/{property_id}/scans"), key, json!({}))
        .await;
    reply.expect(202)["job"]["id"]
        .as_str()
        .expect("job id")
        .to_owned()
}

/// Starts a queued scan in the store, as a worker would: claims the due scans, keeps this
/// one running (its attempt is returned) and gives the others back.
pub async fn start(app: &TestApp, job_id: &str) -> xf_core::store::Attempt {
    use xf_core::store::ClaimRequest;
    let now = app.xf.now();
    let claimed = app
        .store
        .claim_jobs(&ClaimRequest {
            job_types: vec![xf_core::model::SEO_SCAN.to_owned()],
            limit: 1_000,
            now,
            lease_expires_at: now.plus(chrono::Duration::minutes(5)),
        })
        .await
        .unwrap();
    let mut started = None;
    for job in claimed {
        if job.job.id.as_str() == job_id {
            started = Some(job.attempt);
        } else {
            assert!(app.store.release_job(&job.attempt, now).await.unwrap());
        }
    }
    started.unwrap_or_else(|| panic!("job {job_id} was not pending"))
}

/// Runs a queued scan to completion in the store, as a worker would.
pub async fn complete(app: &TestApp, job_id: &str, score: u32) {
    use xf_core::store::{AttemptOutcome, Finish};
    let attempt = start(app, job_id).await;
    let result = json!({"score": score, "pagesScanned": 12, "issuesCount": 3});
    let finish = Finish {
        attempt,
        outcome: AttemptOutcome::Completed(result),
    };
    let reached = app
        .store
        .finish_jobs(&[finish], app.xf.now())
        .await
        .unwrap();
    assert_eq!(reached, vec![Some(xf_core::model::JobStatus::Completed)]);
}

/// Checks the `createdAt`-style format: RFC 3339 UTC with milliseconds.
#[track_caller]
pub fn assert_time(value: &Value) {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("not a time: {value}"));
    assert_eq!(text.len(), 24, "{text}");
    assert!(text.ends_with('Z') && text.as_bytes()[19] == b'.', "{text}");
    assert!(
        xf_core::time::Timestamp::parse_rfc3339(text).is_some(),
        "{text}"
    );
}
