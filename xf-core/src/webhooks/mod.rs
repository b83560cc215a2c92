//! Webhooks: signed deliveries of job, media and channel events to the organization's endpoints.
//!
//! - [`secrets`]: the signing secrets, sealed at rest, and the Standard Webhooks signature.
//! - [`transport`]: the network seam, and the HTTP transport with its SSRF guard.
//! - [`schedule`]: the retry schedule.
//! - The delivery engine runs in the background runtime ([`crate::runtime`]): it fans the
//!   event outbox out to webhooks, claims due messages, posts them, and records each attempt
//!   (see [`crate::store::WebhookStore`] for the rules the store keeps).
//!
//! A delivery is a `POST` of `{id, type, createdAt, test?, data}` (`data` is `{job}` for job
//! events; docs/webhooks.md shows every event's) with the headers
//! `webhook-id` (the event's id, the same for every attempt, for receivers to deduplicate
//! on), `webhook-timestamp` (the attempt's time, in Unix seconds) and `webhook-signature`.

pub(crate) mod engine;
pub mod samples;
pub mod schedule;
pub mod secrets;
pub mod transport;

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::ids::{DeliveryId, Id, WebhookId};
use crate::model::{EventType, Job, Webhook, WebhookDelivery};
use crate::time::Timestamp;
use secrets::{signature_header, SealError, SecretBox, SigningSecret};
use transport::{Outgoing, Reply, WebhookTransport};

/// The most webhooks an organization may have.
pub const MAX_WEBHOOKS: u64 = 10;
/// How long the secret a rotation replaced keeps signing.
pub const ROTATION_OVERLAP: chrono::Duration = chrono::Duration::hours(24);
/// How long delivery log rows are kept.
pub const LOG_RETENTION: chrono::Duration = chrono::Duration::days(30);
/// The `User-Agent` of deliveries.
pub const USER_AGENT: &str = "xf-webhooks/1.0";

/// The body of a delivery.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookMessage<'a> {
    /// The event's id, also sent as `webhook-id`; the same for every attempt.
    pub id: &'a str,
    /// What happened.
    #[serde(rename = "type")]
    pub event_type: EventType,
    /// When it happened.
    pub created_at: Timestamp,
    /// Present and true only on test deliveries.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub test: bool,
    /// What it happened to.
    pub data: MessageData<'a>,
}

/// `data` of a delivery.
#[derive(Debug, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum MessageData<'a> {
    /// A job event's: `{job}`, the job as `GET /jobs/{id}` shows it.
    Job {
        /// The job.
        job: &'a Job,
    },
    /// Any other event's: its snapshot (see [`crate::media::events`]).
    Snapshot(&'a serde_json::Value),
}

/// `data` of a job event.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobEventData {
    /// The job as `GET /jobs/{id}` shows it.
    pub job: Job,
}

impl WebhookMessage<'_> {
    /// The JSON body.
    pub fn to_body(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a webhook message serializes")
    }
}

/// Makes one attempt of `message` to `webhook` at `now` (the engine's deliveries and test
/// deliveries alike): signs it with the webhook's secrets, posts it, and answers the reply
/// and how long the post took. A URL that does not parse is an attempt without an answer;
/// secrets that do not open are an error, and nothing is sent.
pub(crate) async fn send(
    transport: &dyn WebhookTransport,
    sealer: &SecretBox,
    webhook: &Webhook,
    message: &WebhookMessage<'_>,
    now: Timestamp,
) -> Result<(Reply, Duration), SealError> {
    let secrets = signing_secrets(sealer, webhook, now)?;
    let started = Instant::now();
    let reply = match url::Url::parse(&webhook.url) {
        Ok(url) => {
            let request = outgoing(url, message.id, now, message.to_body(), &secrets);
            transport.post(request).await
        }
        Err(error) => Reply::NoAnswer(format!("the webhook's URL does not parse: {error}")),
    };
    Ok((reply, started.elapsed()))
}

/// The secrets that sign a webhook's deliveries at `now`: the current one, and the one a
/// rotation replaced until its overlap ends.
fn signing_secrets(
    sealer: &SecretBox,
    webhook: &Webhook,
    now: Timestamp,
) -> Result<Vec<SigningSecret>, SealError> {
    let mut secrets = vec![sealer.open(&webhook.id, &webhook.secrets.current)?];
    if let Some((previous, until)) = &webhook.secrets.previous {
        if *until > now {
            secrets.push(sealer.open(&webhook.id, previous)?);
        }
    }
    Ok(secrets)
}

/// The request of one attempt.
fn outgoing(
    url: url::Url,
    message_id: &str,
    now: Timestamp,
    body: Vec<u8>,
    secrets: &[SigningSecret],
) -> Outgoing {
    let timestamp = now.unix_millis().div_euclid(1000);
    let signature = signature_header(secrets, message_id, timestamp, &body);
    Outgoing {
        url,
        headers: vec![
            ("webhook-id", message_id.to_owned()),
            ("webhook-timestamp", timestamp.to_string()),
            ("webhook-signature", signature),
        ],
        body,
    }
}

/// The log row of an attempt.
pub(crate) fn log_row(
    webhook_id: &WebhookId,
    event: EventType,
    reply: &Reply,
    took: Duration,
    at: Timestamp,
) -> WebhookDelivery {
    let status_code = match reply {
        Reply::Answered { status, .. } => *status,
        Reply::NoAnswer(_) => 0,
    };
    WebhookDelivery {
        id: DeliveryId::generate(),
        webhook_id: webhook_id.clone(),
        event,
        status_code,
        success: (200..300).contains(&status_code),
        duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
        created_at: at,
    }
}
