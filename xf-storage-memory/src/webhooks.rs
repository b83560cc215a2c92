//! Webhooks, their delivery queue and their delivery log ([`WebhookStore`]).
//!
//! The queue is a map of messages keyed by (webhook, event), so that a webhook's messages are
//! one range (disabling and deleting drop them), and an ordered index by the time each message
//! becomes claimable, which claims walk: its due time while it waits, its lease end while an
//! attempt holds it. A fan-out is a cursor into the outbox: events are appended in id order
//! under the lock, so the events after the cursor are exactly those no fan-out has taken.

use std::collections::HashSet;
use xf_core::store::text_rule::*;

use async_trait::async_trait;
use xf_core::ids::{OrganizationId, WebhookId};
use xf_core::model::{Event, EventSubject, EventType, Webhook, WebhookDelivery};
use xf_core::store::{
    AttemptToken, ClaimedDelivery, DeliveryRecord, NextStep, PageRequest, SecretRotation,
    StoreResult, WebhookChanges, WebhookStore,
};
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::{MemoryStore, State};

/// A message's key: (webhook id, event id).
pub(crate) type MessageKey = (String, String);

/// One queued message.
#[derive(Debug, Clone)]
pub(crate) struct QueuedMessage {
    /// When it can be claimed: its due time, or its lease's end while an attempt holds it.
    available_at: Timestamp,
    /// Attempts claimed so far.
    attempts: u32,
    /// The current attempt's token; `None` before the first claim and after a recorded
    /// retry, so that an attempt is recorded at most once.
    token: Option<AttemptToken>,
}

/// A page that holds everything.
fn everything() -> PageRequest {
    PageRequest {
        limit: usize::MAX,
        after: None,
    }
}

impl State {
    /// The enabled webhooks of `organization` that subscribe to `event_type`.
    pub(crate) fn subscribers<'a>(
        &'a self,
        organization: &'a OrganizationId,
        event_type: EventType,
    ) -> impl Iterator<Item = &'a Webhook> + 'a {
        self.webhooks
            .of(organization.as_str())
            .filter(move |hook| hook.enabled && hook.events.contains(&event_type))
    }

    /// Queues a message due at `due`, unless the (webhook, event) pair has one already.
    fn queue_message(&mut self, webhook_id: &str, event_id: &str, due: Timestamp) {
        let key = (webhook_id.to_owned(), event_id.to_owned());
        if self.messages.contains_key(&key) {
            return;
        }
        self.message_queue
            .insert((due, key.0.clone(), key.1.clone()));
        self.messages.insert(
            key,
            QueuedMessage {
                available_at: due,
                attempts: 0,
                token: None,
            },
        );
    }

    /// Takes a message out of the queue.
    fn drop_message(&mut self, key: &MessageKey) {
        if let Some(message) = self.messages.remove(key) {
            self.message_queue
                .remove(&(message.available_at, key.0.clone(), key.1.clone()));
        }
    }

    /// Moves a message in the claim order.
    fn reschedule_message(&mut self, key: &MessageKey, available_at: Timestamp) {
        if let Some(message) = self.messages.get_mut(key) {
            self.message_queue
                .remove(&(message.available_at, key.0.clone(), key.1.clone()));
            message.available_at = available_at;
            self.message_queue
                .insert((available_at, key.0.clone(), key.1.clone()));
        }
    }

    /// Drops every queued message of the webhook.
    fn drop_messages_of(&mut self, webhook_id: &str) {
        let keys: Vec<MessageKey> = self
            .messages
            .range((webhook_id.to_owned(), String::new())..)
            .take_while(|((webhook, _), _)| webhook == webhook_id)
            .map(|(key, _)| key.clone())
            .collect();
        for key in keys {
            self.drop_message(&key);
        }
    }

    /// Adds a row to the delivery log and sets the webhook's `lastDelivery*` from it, unless
    /// a later attempt was recorded already (a slow sender's outcome arrives late).
    fn log_delivery(&mut self, log: &WebhookDelivery) {
        let webhook = log.webhook_id.as_str();
        self.deliveries
            .insert(webhook, log.created_at, log.id.as_str(), log);
        if let Some(hook) = self
            .webhooks
            .get_mut(webhook)
            .filter(|hook| hook.last_delivery_at.is_none_or(|at| at <= log.created_at))
        {
            hook.last_delivery_at = Some(log.created_at);
            hook.last_delivery_status = Some(log.status_code);
        }
    }

    /// The outbox event with this id (the outbox is sorted by id).
    fn event(&self, id: &str) -> Option<&Event> {
        let at = self.events.partition_point(|e| e.id.as_str() < id);
        self.events.get(at).filter(|e| e.id.as_str() == id)
    }

    /// Writes one attempt's outcome if its token is still the message's.
    fn record_delivery(&mut self, record: &DeliveryRecord) -> bool {
        let key = (record.webhook_id.to_string(), record.event_id.to_string());
        let current = self
            .messages
            .get(&key)
            .is_some_and(|m| m.token == Some(record.token));
        if !current {
            return false;
        }
        self.log_delivery(&WebhookDelivery {
            webhook_id: record.webhook_id.clone(),
            ..record.log.clone()
        });
        match record.next {
            NextStep::Done => self.drop_message(&key),
            NextStep::RetryAt(at) => {
                self.reschedule_message(&key, at);
                if let Some(message) = self.messages.get_mut(&key) {
                    message.token = None;
                }
            }
            NextStep::Disable => {
                if let Some(hook) = self.webhooks.get_mut(&key.0) {
                    hook.enabled = false;
                }
                self.drop_messages_of(&key.0);
            }
        }
        true
    }
}

#[async_trait]
impl WebhookStore for MemoryStore {
    async fn insert_webhook(&self, webhook: &Webhook, max: u64) -> StoreResult<()> {
        let webhook = &*stored(webhook);
        let mut state = self.write();
        if state.webhooks.contains(webhook.id.as_str()) {
            return Err(StoreError::Duplicate("webhook id"));
        }
        let owner = webhook.organization_id.as_str();
        if state.webhooks.count(owner) as u64 >= max {
            return Err(StoreError::LimitReached("webhooks"));
        }
        state
            .webhooks
            .insert(owner, webhook.created_at, webhook.id.as_str(), webhook);
        Ok(())
    }

    async fn get_webhook(&self, id: &WebhookId) -> StoreResult<Option<Webhook>> {
        Ok(self.read().webhooks.get(id.as_str()))
    }

    async fn list_webhooks(&self, organization_id: &OrganizationId) -> StoreResult<Vec<Webhook>> {
        self.read()
            .webhooks
            .page(organization_id.as_str(), &everything(), |_| true)
    }

    async fn update_webhook(
        &self,
        id: &WebhookId,
        changes: &WebhookChanges,
        now: Timestamp,
    ) -> StoreResult<Option<Webhook>> {
        let changes = &*stored(changes);
        let mut state = self.write();
        let updated = state.webhooks.update(id.as_str(), |hook| {
            if let Some(name) = &changes.name {
                hook.name.clone_from(name);
            }
            if let Some(url) = &changes.url {
                hook.url.clone_from(url);
            }
            if let Some(events) = &changes.events {
                hook.events.clone_from(events);
            }
            if let Some(enabled) = changes.enabled {
                hook.enabled = enabled;
            }
            hook.updated_at = now;
        });
        if changes.enabled == Some(false) {
            state.drop_messages_of(id.as_str());
        }
        Ok(updated)
    }

    async fn rotate_webhook_secret(
        &self,
        id: &WebhookId,
        rotation: &SecretRotation,
    ) -> StoreResult<Option<Webhook>> {
        Ok(self.write().webhooks.update(id.as_str(), |hook| {
            if hook.secrets.current != rotation.replaces {
                return;
            }
            let replaced = std::mem::replace(&mut hook.secrets.current, rotation.sealed.clone());
            hook.secrets.previous = Some((replaced, rotation.previous_until));
            hook.secret_prefix.clone_from(&rotation.prefix);
            hook.updated_at = rotation.now;
        }))
    }

    async fn delete_webhook(&self, id: &WebhookId) -> StoreResult<bool> {
        let mut state = self.write();
        let Some(hook) = state.webhooks.get(id.as_str()) else {
            return Ok(false);
        };
        state
            .webhooks
            .remove(hook.organization_id.as_str(), hook.created_at, id.as_str());
        state.drop_messages_of(id.as_str());
        for delivery_id in state.deliveries.ids_of(id.as_str()) {
            if let Some(row) = state.deliveries.get(&delivery_id) {
                state
                    .deliveries
                    .remove(id.as_str(), row.created_at, &delivery_id);
            }
        }
        Ok(true)
    }

    async fn list_deliveries(
        &self,
        webhook_id: &WebhookId,
        page: &PageRequest,
    ) -> StoreResult<Vec<WebhookDelivery>> {
        self.read()
            .deliveries
            .page(webhook_id.as_str(), page, |_| true)
    }

    async fn record_test_delivery(&self, log: &WebhookDelivery) -> StoreResult<bool> {
        let mut state = self.write();
        if !state.webhooks.contains(log.webhook_id.as_str()) {
            return Ok(false);
        }
        if state.deliveries.contains(log.id.as_str()) {
            return Err(StoreError::Duplicate("delivery id"));
        }
        state.log_delivery(log);
        Ok(true)
    }

    async fn fan_out_events(&self, limit: usize, now: Timestamp) -> StoreResult<usize> {
        let mut state = self.write();
        // The next `limit` events that had a subscriber when they were written.
        let mut end = state.fanned_out;
        let mut taken = Vec::new();
        while end < state.events.len() && taken.len() < limit {
            if state.subscribed[end] {
                taken.push(end);
            }
            end += 1;
        }
        let mut queued = Vec::new();
        for &index in &taken {
            let event = &state.events[index];
            queued.extend(
                state
                    .subscribers(&event.organization_id, event.event_type)
                    .map(|hook| (hook.id.to_string(), event.id.to_string())),
            );
        }
        for (webhook_id, event_id) in queued {
            state.queue_message(&webhook_id, &event_id, now);
        }
        state.fanned_out = end;
        Ok(taken.len())
    }

    async fn claim_deliveries(
        &self,
        limit: usize,
        now: Timestamp,
        lease_until: Timestamp,
    ) -> StoreResult<Vec<ClaimedDelivery>> {
        let mut state = self.write();
        // What to send with each message. A message of a disabled webhook waits (none
        // exists: disabling drops them); one whose webhook, event or job is gone cannot be
        // sent and leaves the queue.
        let mut taken = Vec::new();
        let mut unsendable = Vec::new();
        for (_, webhook_id, event_id) in state
            .message_queue
            .iter()
            .take_while(|(available_at, _, _)| *available_at <= now)
        {
            if taken.len() >= limit {
                break;
            }
            let key = (webhook_id.clone(), event_id.clone());
            let webhook = state.webhooks.get(webhook_id);
            if webhook.as_ref().is_some_and(|w| !w.enabled) {
                continue;
            }
            let event = state.event(event_id).cloned();
            // A job event needs its job; any other carries its data.
            let job = match event.as_ref().map(|e| &e.subject) {
                Some(EventSubject::Job(id)) => match state.jobs.get(id.as_str()) {
                    Some(job) => Some(Some(job.record)),
                    None => None,
                },
                Some(EventSubject::Snapshot(_)) => Some(None),
                None => None,
            };
            match (webhook, event, job) {
                (Some(webhook), Some(event), Some(job)) => {
                    taken.push((key, event, webhook, job));
                }
                _ => unsendable.push(key),
            }
        }
        for key in &unsendable {
            state.drop_message(key);
        }
        let mut claimed = Vec::with_capacity(taken.len());
        for (key, event, webhook, job) in taken {
            state.reschedule_message(&key, lease_until);
            let Some(message) = state.messages.get_mut(&key) else {
                continue;
            };
            let token = AttemptToken::new();
            message.attempts += 1;
            message.token = Some(token);
            claimed.push(ClaimedDelivery {
                event,
                webhook,
                job,
                attempt: message.attempts,
                token,
            });
        }
        Ok(claimed)
    }

    async fn record_deliveries(&self, records: &[DeliveryRecord]) -> StoreResult<Vec<bool>> {
        let mut state = self.write();
        // Log ids are fresh: a taken one is a bug of the caller, and fails the whole call.
        let mut ids = HashSet::new();
        let fresh = records.iter().all(|record| {
            ids.insert(&record.log.id) && !state.deliveries.contains(record.log.id.as_str())
        });
        if !fresh {
            return Err(StoreError::Duplicate("delivery id"));
        }
        Ok(records
            .iter()
            .map(|record| state.record_delivery(record))
            .collect())
    }

    async fn purge_deliveries(&self, before: Timestamp) -> StoreResult<u64> {
        let mut state = self.write();
        Ok(state.deliveries.remove_where(|row| row.created_at < before))
    }
}
