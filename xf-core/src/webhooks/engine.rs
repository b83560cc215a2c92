//! The delivery engine: the runtime's webhook tasks.
//!
//! - A **dispatcher** fans new outbox events out to webhooks (when woken by events written,
//!   from the store's signals, or after a wait), then claims as many due messages as it has
//!   free slots (at most [`CLAIM_BATCH`] per claim) and starts an attempt for each. When a
//!   claim comes back short it waits for a wake-up or for the poll interval.
//! - Each **attempt** signs the message with the webhook's secrets, posts it, and hands its
//!   outcome (log row and next step) to the recorder; its slot goes back then, while a place
//!   among at most 1,000 unwritten outcomes (or the concurrency, if larger) is held until the
//!   write.
//! - The **recorder** writes whatever outcomes are waiting in one store call.
//!
//! The store makes each claim exclusive and refuses the outcome of an attempt whose lease ran
//! out, so any number of engines can share a database; a message whose sender died is claimed
//! again when its lease ends, so every event is delivered at least once.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tracing::Instrument;

use super::schedule::next_retry;
use super::secrets::SecretBox;
use super::transport::{Reply, WebhookTransport};
use super::{log_row, send, MessageData, WebhookMessage};
use crate::model::EventSubject;
use crate::runtime::{hand_over_slot, next_batch, unwritten_places, write_with_retries, Signals};
use crate::store::{ClaimedDelivery, DeliveryRecord, NextStep, WebhookStore};
use crate::time::{Clock, Timestamp};

/// Events taken per fan-out call.
const FAN_OUT_BATCH: usize = 500;
/// Messages taken per claim, at most.
pub(crate) const CLAIM_BATCH: usize = 100;
/// How long a claimed message is the claimer's: the attempt's time limit and a margin.
const LEASE: Duration = Duration::from_secs(60);
/// Outcomes written per store call, at most.
const RECORD_BATCH: usize = 500;

/// The engine's settings, from the runtime's options.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EngineOptions {
    /// Attempts in flight at once.
    pub concurrency: usize,
    /// How often an idle dispatcher looks without being woken.
    pub poll_interval: Duration,
}

/// What the engine delivers with.
pub(crate) struct Delivery {
    /// The outbox, the messages and the delivery log.
    pub store: Arc<dyn WebhookStore>,
    /// The clock attempts and retries are timed by.
    pub clock: Arc<dyn Clock>,
    /// Opens the webhooks' signing secrets.
    pub secrets: SecretBox,
    /// Posts the messages.
    pub transport: Arc<dyn WebhookTransport>,
    /// What attempts are recorded in.
    pub metrics: crate::metrics::Metrics,
}

struct Engine {
    delivery: Delivery,
    /// One per attempt in flight.
    slots: Arc<Semaphore>,
    /// Places among the outcomes waiting for the recorder.
    unwritten: Arc<Semaphore>,
    /// To the recorder: each outcome with its place, freed once it is written.
    outcomes: mpsc::UnboundedSender<(DeliveryRecord, OwnedSemaphorePermit)>,
    options: EngineOptions,
}

/// Starts the dispatcher and the recorder, woken when events are written and stopped with
/// the runtime.
pub(crate) fn spawn(
    delivery: Delivery,
    options: EngineOptions,
    signals: Signals,
) -> Vec<JoinHandle<()>> {
    let Signals {
        stopped,
        events_written: wake,
    } = signals;
    let (outcomes, received) = mpsc::unbounded_channel();
    let store = Arc::clone(&delivery.store);
    let engine = Arc::new(Engine {
        delivery,
        slots: Arc::new(Semaphore::new(options.concurrency.max(1))),
        unwritten: unwritten_places(options.concurrency),
        outcomes,
        options,
    });
    vec![
        tokio::spawn(dispatch_loop(engine, wake, stopped)),
        tokio::spawn(record_loop(store, received)),
    ]
}

async fn dispatch_loop(engine: Arc<Engine>, wake: Arc<Notify>, mut stopped: watch::Receiver<bool>) {
    // Whether events may be waiting for a fan-out: at the start and after each wait. While
    // attempts keep the dispatcher busy it fans out only when woken meanwhile, not before
    // every claim (with slots freed one or a few at a time, that was a statement per claim
    // finding nothing).
    let mut fan_out_due = true;
    loop {
        if *stopped.borrow() {
            return;
        }
        let now = engine.delivery.clock.now();
        if std::mem::take(&mut fan_out_due) || take_wake_up(&wake) {
            // A fan-out that failed is tried again on the next turn.
            fan_out_due = !fan_out(&engine, now).await;
        }
        let drained = match Arc::clone(&engine.slots).try_acquire_owned() {
            Err(_) => {
                // Every slot is busy: wait for one.
                tokio::select! {
                    _ = Arc::clone(&engine.slots).acquire_owned() => {}
                    _ = stopped.changed() => return,
                }
                continue;
            }
            Ok(first) => claim(&engine, now, first).await,
        };
        if drained {
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(engine.options.poll_interval) => {}
                _ = stopped.changed() => return,
            }
            fan_out_due = true;
        }
    }
}

/// Whether `wake` was notified since it was last waited on, taking the notification (a
/// `notify_one` with nobody waiting leaves one, which the first poll of `notified` takes).
fn take_wake_up(wake: &Notify) -> bool {
    let notified = std::pin::pin!(wake.notified());
    notified
        .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
        .is_ready()
}

/// Fans out every event waiting in the outbox; whether it did (`false` after a failure).
async fn fan_out(engine: &Engine, now: Timestamp) -> bool {
    loop {
        match engine
            .delivery
            .store
            .fan_out_events(FAN_OUT_BATCH, now)
            .await
        {
            Ok(taken) if taken >= FAN_OUT_BATCH => continue,
            Ok(_) => return true,
            Err(error) => {
                tracing::warn!(%error, "fanning events out to webhooks failed");
                return false;
            }
        }
    }
}

/// Claims as many messages as there are free slots and starts their attempts; whether the
/// claim came back short (nothing more is due now).
async fn claim(engine: &Arc<Engine>, now: Timestamp, first: OwnedSemaphorePermit) -> bool {
    let mut permits = vec![first];
    while permits.len() < CLAIM_BATCH {
        match Arc::clone(&engine.slots).try_acquire_owned() {
            Ok(permit) => permits.push(permit),
            Err(_) => break,
        }
    }
    let wanted = permits.len();
    let lease_until = now.plus(chrono::Duration::from_std(LEASE).unwrap_or_default());
    let claimed = match engine
        .delivery
        .store
        .claim_deliveries(wanted, now, lease_until)
        .await
    {
        Ok(claimed) => claimed,
        Err(error) => {
            tracing::warn!(%error, "claiming webhook deliveries failed");
            return true;
        }
    };
    let drained = claimed.len() < wanted;
    for (delivery, permit) in claimed.into_iter().zip(permits) {
        // The attempt's log lines (and a tracing backend's span) name the webhook, the event
        // and the attempt.
        let span = tracing::info_span!(
            "webhook_delivery",
            webhook_id = %delivery.webhook.id,
            event_id = %delivery.event.id,
            attempt = delivery.attempt,
            organization_id = %delivery.webhook.organization_id,
        );
        tokio::spawn(attempt(Arc::clone(engine), delivery, permit).instrument(span));
    }
    drained
}

/// Makes one attempt and hands its outcome to the recorder.
async fn attempt(engine: Arc<Engine>, delivery: ClaimedDelivery, permit: OwnedSemaphorePermit) {
    let started_at = engine.delivery.clock.now();
    // Stores write events only for jobs the API shows, so every job event's job has a view.
    let job = delivery.job.as_ref().map(|job| job.view());
    let data = match (&delivery.event.subject, &job) {
        (EventSubject::Job(_), Some(Some(job))) => MessageData::Job { job },
        (EventSubject::Snapshot(data), _) => MessageData::Snapshot(data),
        (EventSubject::Job(_), _) => {
            tracing::error!(event_id = %delivery.event.id, "a job event without a job the API shows; not delivered");
            return;
        }
    };
    let message = WebhookMessage {
        id: delivery.event.id.as_str(),
        event_type: delivery.event.event_type,
        created_at: delivery.event.created_at,
        test: false,
        data,
    };
    let sent = send(
        engine.delivery.transport.as_ref(),
        &engine.delivery.secrets,
        &delivery.webhook,
        &message,
        started_at,
    )
    .await;
    let (reply, took) = match sent {
        Ok(sent) => sent,
        Err(error) => (Reply::NoAnswer(error.to_string()), Duration::ZERO),
    };
    if let Reply::NoAnswer(reason) = &reply {
        tracing::info!(webhook_id = %delivery.webhook.id, event_id = %delivery.event.id, attempt = delivery.attempt, reason, "webhook delivery got no answer");
    }
    let next = next_step(delivery.attempt, &reply, engine.delivery.clock.now());
    let (outcome, status) = match (&reply, &next) {
        (Reply::Answered { status, .. }, NextStep::Done) if (200..300).contains(status) => {
            ("delivered", Some(*status))
        }
        (Reply::Answered { status, .. }, NextStep::Disable) => ("disabled", Some(*status)),
        (reply, next) => {
            let status = match reply {
                Reply::Answered { status, .. } => Some(*status),
                Reply::NoAnswer(_) => None,
            };
            let retries = matches!(next, NextStep::RetryAt(_));
            (if retries { "retrying" } else { "failed" }, status)
        }
    };
    engine
        .delivery
        .metrics
        .webhook_delivery(outcome, status, took);
    let record = DeliveryRecord {
        event_id: delivery.event.id.clone(),
        webhook_id: delivery.webhook.id.clone(),
        token: delivery.token,
        log: log_row(
            &delivery.webhook.id,
            delivery.event.event_type,
            &reply,
            took,
            started_at,
        ),
        next,
    };
    // The slot goes back once the outcome is queued, so claims overlap with the recorder's
    // writes (the message stays leased to this attempt until its record is written). A
    // closed recorder means the runtime stopped: the lease runs out and the message is
    // delivered again.
    let (held, slot) = hand_over_slot(&engine.unwritten, permit).await;
    let _ = engine.outcomes.send((record, held));
    drop(slot);
}

/// What follows attempt `attempt` (1 for the first) that got `reply`, at `now`.
pub(crate) fn next_step(attempt: u32, reply: &Reply, now: Timestamp) -> NextStep {
    let retry_after = match reply {
        Reply::Answered { status, .. } if (200..300).contains(status) => return NextStep::Done,
        Reply::Answered { status: 410, .. } => return NextStep::Disable,
        Reply::Answered { retry_after, .. } => *retry_after,
        Reply::NoAnswer(_) => None,
    };
    match next_retry(attempt, retry_after) {
        Some(delay) => NextStep::RetryAt(
            now.plus(chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::MAX)),
        ),
        None => NextStep::Done,
    }
}

/// Writes outcomes in batches: whatever is waiting when the previous write returns. A write
/// that fails is retried for a while; after that the leases run out and the messages are
/// sent again.
async fn record_loop(
    store: Arc<dyn WebhookStore>,
    mut outcomes: mpsc::UnboundedReceiver<(DeliveryRecord, OwnedSemaphorePermit)>,
) {
    while let Some(batch) = next_batch(&mut outcomes, RECORD_BATCH).await {
        let (records, permits): (Vec<DeliveryRecord>, Vec<OwnedSemaphorePermit>) =
            batch.into_iter().unzip();
        let written = write_with_retries(LEASE / 2, "recording webhook deliveries", || {
            store.record_deliveries(&records)
        })
        .await;
        match written {
            Ok(written) => {
                let refused = written.iter().filter(|w| !**w).count();
                if refused > 0 {
                    tracing::info!(
                        refused,
                        "delivery outcomes dropped: their leases had run out"
                    );
                }
            }
            Err(error) => {
                tracing::error!(%error, deliveries = records.len(), "giving up on recording webhook deliveries; they will be sent again");
            }
        }
        drop(permits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse_rfc3339(text).unwrap()
    }

    #[test]
    fn outcomes_map_to_steps() {
        let now = at("2026-11-22T10:00:00.000Z");
        let answered = |status| Reply::Answered {
            status,
            retry_after: None,
        };
        assert_eq!(next_step(1, &answered(200), now), NextStep::Done);
        assert_eq!(next_step(1, &answered(204), now), NextStep::Done);
        assert_eq!(next_step(3, &answered(410), now), NextStep::Disable);
        for reply in [
            answered(500),
            answered(302),
            answered(404),
            Reply::NoAnswer("timed out".into()),
        ] {
            let NextStep::RetryAt(when) = next_step(1, &reply, now) else {
                panic!("{reply:?} is retried");
            };
            let wait = now.seconds_until(when);
            assert!((4..=6).contains(&wait), "{wait}");
        }
        assert_eq!(next_step(8, &answered(500), now), NextStep::Done);
        let asked = Reply::Answered {
            status: 429,
            retry_after: Some(Duration::from_secs(90)),
        };
        assert_eq!(
            next_step(1, &asked, now),
            NextStep::RetryAt(at("2026-11-22T10:01:30.000Z"))
        );
    }

    #[test]
    fn a_wake_up_is_taken_once_and_only_after_a_notification() {
        let wake = Notify::new();
        assert!(!take_wake_up(&wake), "nothing was notified");
        wake.notify_one();
        assert!(take_wake_up(&wake), "the stored notification");
        assert!(!take_wake_up(&wake), "taken already");
    }
}
