//! Webhook endpoints, their delivery queue and their delivery log.
//!
//! Deliveries start in the event outbox ([`EventStore`](super::EventStore)). A *fan-out*
//! takes events no fan-out has taken yet and queues one *message* per (event, enabled webhook
//! of the event's organization that subscribes to the event type), marking the events taken,
//! all at once: an event is fanned out exactly once however many instances try. A message is
//! then *claimed* for an attempt (a lease and a fresh [`AttemptToken`], as jobs are), sent,
//! and its attempt *recorded*: one row in the delivery log, the webhook's `lastDeliveryAt`
//! and `lastDeliveryStatus` (unless a later attempt is recorded there already: they show the
//! latest attempt by its time), and the message's next step, all in one write that is refused
//! unless the attempt's token is still the message's. A message whose lease ran out (its
//! sender died) is claimable again.
//!
//! A message leaves the queue when it is delivered, when its attempts are used up, when its
//! webhook answers `410 Gone` (which also disables the webhook) and when its webhook is
//! disabled or deleted: a disabled webhook is sent nothing, and events that happen while it is
//! disabled are not queued for it.

use async_trait::async_trait;

use super::{AttemptToken, PageRequest, StoreResult};
use crate::ids::{EventId, OrganizationId, WebhookId};
use crate::model::{Event, EventType, JobRecord, Webhook, WebhookDelivery};
use crate::time::Timestamp;

/// The changes of a `PATCH`: `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebhookChanges {
    /// A new name.
    pub name: Option<String>,
    /// A new URL (already checked).
    pub url: Option<String>,
    /// New events (not empty).
    pub events: Option<Vec<EventType>>,
    /// Turn on or off.
    pub enabled: Option<bool>,
}

/// A new signing secret for [`WebhookStore::rotate_webhook_secret`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretRotation {
    /// The sealed current secret this rotation replaces, as its caller read it.
    pub replaces: String,
    /// The new secret, sealed.
    pub sealed: String,
    /// Its `secretPrefix`.
    pub prefix: String,
    /// Until when the secret it replaces still signs.
    pub previous_until: Timestamp,
    /// Now: the webhook's `updatedAt`.
    pub now: Timestamp,
}

/// One message claimed for an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedDelivery {
    /// The event to deliver; its id is the message's `webhook-id`.
    pub event: Event,
    /// The webhook, as it is now.
    pub webhook: Webhook,
    /// A job event's job, as it is now (final states do not change, so as it was); `None`
    /// for the events that carry their data.
    pub job: Option<JobRecord>,
    /// Which attempt this is: 1 for the first.
    pub attempt: u32,
    /// Names this attempt in [`WebhookStore::record_deliveries`].
    pub token: AttemptToken,
}

/// What happens to a message after an attempt.
///
/// Not `#[non_exhaustive]`: every store (or edge) that is given one matches on it, and a
/// variant added must stop one that does not handle it from compiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    /// Delivered, or given up on: the message leaves the queue.
    Done,
    /// Try again at this time.
    RetryAt(Timestamp),
    /// The receiver answered `410 Gone`: disable the webhook and drop its queued messages.
    Disable,
}

/// One attempt's outcome, for [`WebhookStore::record_deliveries`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRecord {
    /// The event the message carries.
    pub event_id: EventId,
    /// The webhook it went to.
    pub webhook_id: WebhookId,
    /// The attempt's token, from the claim.
    pub token: AttemptToken,
    /// The log row (its `createdAt` is the attempt's time).
    pub log: WebhookDelivery,
    /// What happens next.
    pub next: NextStep,
}

/// Webhooks, the delivery queue and the delivery log.
#[async_trait]
pub trait WebhookStore: Send + Sync {
    /// Inserts a webhook unless its organization has `max` already:
    /// [`StoreError::LimitReached`](crate::StoreError::LimitReached) then. Atomic, so
    /// concurrent inserts never pass the cap.
    async fn insert_webhook(&self, webhook: &Webhook, max: u64) -> StoreResult<()>;

    /// The webhook with this id (any organization: the caller checks ownership).
    async fn get_webhook(&self, id: &WebhookId) -> StoreResult<Option<Webhook>>;

    /// All the organization's webhooks, newest first.
    async fn list_webhooks(&self, organization_id: &OrganizationId) -> StoreResult<Vec<Webhook>>;

    /// Applies `changes` and sets `updatedAt` to `now`, in one write (a concurrent delivery's
    /// `lastDelivery*` is kept); disabling drops the webhook's queued messages. The webhook as
    /// it is now, or `None` if it does not exist.
    async fn update_webhook(
        &self,
        id: &WebhookId,
        changes: &WebhookChanges,
        now: Timestamp,
    ) -> StoreResult<Option<Webhook>>;

    /// Makes the current secret the previous one (signing until `previous_until`) and
    /// `rotation`'s the current one, in one write, if the current secret is still
    /// `rotation.replaces`: of concurrent rotations of one secret exactly one applies, and
    /// no caller is handed a secret that a rotation it never saw pushed out. Answers the
    /// webhook as it is then, rotated or not (the caller compares its current secret with
    /// its own); `None` if the webhook does not exist.
    async fn rotate_webhook_secret(
        &self,
        id: &WebhookId,
        rotation: &SecretRotation,
    ) -> StoreResult<Option<Webhook>>;

    /// Deletes the webhook with its queued messages and its log; whether it existed.
    async fn delete_webhook(&self, id: &WebhookId) -> StoreResult<bool>;

    /// A page of the webhook's delivery log, newest first.
    async fn list_deliveries(
        &self,
        webhook_id: &WebhookId,
        page: &PageRequest,
    ) -> StoreResult<Vec<WebhookDelivery>>;

    /// Records an attempt made outside the queue (a test delivery): its log row and the
    /// webhook's `lastDelivery*`. Whether the webhook still exists.
    async fn record_test_delivery(&self, log: &WebhookDelivery) -> StoreResult<bool>;

    /// Fans out up to `limit` events no fan-out has taken, oldest first, queueing their
    /// messages due at `now`; returns how many events it took. Concurrent calls take
    /// different events. An event written while no enabled webhook of its organization
    /// subscribed to its type has nobody to go to, and no fan-out takes it.
    async fn fan_out_events(&self, limit: usize, now: Timestamp) -> StoreResult<usize>;

    /// Claims up to `limit` messages of enabled webhooks that are due at `now` (or whose
    /// lease expired by `now`), oldest due first, leasing them until `lease_until`.
    async fn claim_deliveries(
        &self,
        limit: usize,
        now: Timestamp,
        lease_until: Timestamp,
    ) -> StoreResult<Vec<ClaimedDelivery>>;

    /// Records attempts; per record, in order, whether it was written (its token was still
    /// the message's). A refused record writes nothing, not even its log row.
    async fn record_deliveries(&self, records: &[DeliveryRecord]) -> StoreResult<Vec<bool>>;

    /// Deletes log rows created before `before`; how many.
    async fn purge_deliveries(&self, before: Timestamp) -> StoreResult<u64>;
}
