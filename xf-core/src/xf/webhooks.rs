//! Webhook endpoints: registration, changes, secrets, test deliveries and the delivery log.

use super::{Caller, Fingerprint, Xf};
use crate::api::{
    DeletedWebhook, DeliveryListParams, NewWebhook, Page, TestDeliveryRequest, WebhookPatch,
    WebhookWithSecret,
};
use crate::error::{Error, Result, StoreError};
use crate::ids::{DeliveryId, EventId, Id, WebhookId};
use crate::model::{EventType, Webhook, WebhookDelivery, WebhookSecrets};
use crate::params::{WebhookName, WebhookUrl};
use crate::store::{After, SecretRotation, WebhookChanges};
use crate::webhooks::samples::sample_job;
use crate::webhooks::secrets::{SigningSecret, SECRET_BYTES};
use crate::webhooks::{log_row, send, MessageData, WebhookMessage, MAX_WEBHOOKS, ROTATION_OVERLAP};

impl Xf {
    /// `GET /webhooks`: all the organization's webhooks (at most [`MAX_WEBHOOKS`]), newest
    /// first.
    pub async fn list_webhooks(&self, caller: &Caller) -> Result<Vec<Webhook>> {
        Ok(self.store().list_webhooks(&caller.organization.id).await?)
    }

    /// `GET /webhooks/{id}`: one of the organization's webhooks (its secret never).
    pub async fn get_webhook(&self, caller: &Caller, id: &WebhookId) -> Result<Webhook> {
        self.owned_webhook(caller, id).await
    }

    /// `POST /webhooks`. The secret is in the answer and nowhere else.
    pub async fn create_webhook(
        &self,
        caller: &Caller,
        request: &Fingerprint,
        input: NewWebhook,
    ) -> Result<WebhookWithSecret> {
        let name = webhook_name(input.name);
        let url = self.webhook_url(input.url).await?;
        let events = match input.events {
            Some(events) => webhook_events(caller, events)?,
            None => receivable_events(caller),
        };
        let too_many = || {
            Error::Conflict(format!(
                "the organization already has its maximum of {MAX_WEBHOOKS} webhooks; delete one first"
            ))
        };
        let test = caller.is_test();
        if test && self.list_webhooks(caller).await?.len() as u64 >= MAX_WEBHOOKS {
            return Err(too_many());
        }
        // A test key's webhook is derived from the request and never stored, so it needs no
        // sealed secret.
        let (id, secret, at) = if test {
            (
                WebhookId::derived(&self.mock_digest(caller, request, WebhookId::PREFIX, 0)),
                self.mock_secret(caller, request),
                self.mock_time(),
            )
        } else {
            (WebhookId::new(), SigningSecret::generate(), self.now())
        };
        let current = if test {
            String::new()
        } else {
            self.secret_box().seal(&id, &secret)
        };
        let webhook = Webhook {
            secret_prefix: secret.prefix(),
            secrets: WebhookSecrets {
                current,
                previous: None,
            },
            id,
            organization_id: caller.organization.id.clone(),
            name,
            url,
            events,
            enabled: input.enabled.unwrap_or(true),
            last_delivery_at: None,
            last_delivery_status: None,
            created_at: at,
            updated_at: at,
        };
        if test {
            return Ok(WebhookWithSecret {
                webhook,
                secret: secret.as_str().to_owned(),
            });
        }
        match self.store().insert_webhook(&webhook, MAX_WEBHOOKS).await {
            Ok(()) => Ok(WebhookWithSecret {
                webhook,
                secret: secret.as_str().to_owned(),
            }),
            Err(StoreError::LimitReached(_)) => Err(too_many()),
            Err(other) => Err(other.into()),
        }
    }

    /// `PATCH /webhooks/{id}`.
    pub async fn update_webhook(
        &self,
        caller: &Caller,
        id: &WebhookId,
        patch: WebhookPatch,
    ) -> Result<Webhook> {
        let webhook = self.owned_webhook(caller, id).await?;
        let url = match patch.url {
            Some(url) => Some(self.webhook_url(url).await?),
            None => None,
        };
        let changes = WebhookChanges {
            name: patch.name.map(webhook_name),
            url,
            events: patch
                .events
                .map(|events| webhook_events(caller, events))
                .transpose()?,
            enabled: patch.enabled,
        };
        if changes == WebhookChanges::default() {
            return Ok(webhook);
        }
        if caller.is_test() {
            return Ok(Webhook {
                name: changes.name.unwrap_or(webhook.name),
                url: changes.url.unwrap_or(webhook.url),
                events: changes.events.unwrap_or(webhook.events),
                enabled: changes.enabled.unwrap_or(webhook.enabled),
                updated_at: self.mock_time().max(webhook.updated_at),
                ..webhook
            });
        }
        self.store()
            .update_webhook(&webhook.id, &changes, self.now())
            .await?
            .ok_or(Error::NotFound("webhook"))
    }

    /// `DELETE /webhooks/{id}`: the webhook, its queued deliveries and its log.
    pub async fn delete_webhook(&self, caller: &Caller, id: &WebhookId) -> Result<DeletedWebhook> {
        let webhook = self.owned_webhook(caller, id).await?;
        if !caller.is_test() && !self.store().delete_webhook(&webhook.id).await? {
            return Err(Error::NotFound("webhook"));
        }
        Ok(DeletedWebhook {
            id: webhook.id,
            deleted: true,
        })
    }

    /// `POST /webhooks/{id}/rotate-secret`: a new secret; the old one keeps signing beside it
    /// for [`ROTATION_OVERLAP`].
    pub async fn rotate_webhook_secret(
        &self,
        caller: &Caller,
        request: &Fingerprint,
        id: &WebhookId,
    ) -> Result<WebhookWithSecret> {
        let webhook = self.owned_webhook(caller, id).await?;
        if caller.is_test() {
            let secret = self.mock_secret(caller, request);
            return Ok(WebhookWithSecret {
                webhook: Webhook {
                    secret_prefix: secret.prefix(),
                    updated_at: self.mock_time().max(webhook.updated_at),
                    ..webhook
                },
                secret: secret.as_str().to_owned(),
            });
        }
        let secret = SigningSecret::generate();
        let now = self.now();
        let rotation = SecretRotation {
            replaces: webhook.secrets.current.clone(),
            sealed: self.secret_box().seal(&webhook.id, &secret),
            prefix: secret.prefix(),
            previous_until: now.plus(ROTATION_OVERLAP),
            now,
        };
        let webhook = self
            .store()
            .rotate_webhook_secret(&webhook.id, &rotation)
            .await?
            .ok_or(Error::NotFound("webhook"))?;
        if webhook.secrets.current != rotation.sealed {
            return Err(Error::Conflict(
                "another rotation of this webhook's secret happened at the same time, and \
                 its secret is the one that signs; rotate again for a secret of your own"
                    .to_owned(),
            ));
        }
        Ok(WebhookWithSecret {
            webhook,
            secret: secret.as_str().to_owned(),
        })
    }

    /// `POST /webhooks/{id}/test`: one attempt now, with `test: true` and synthetic data (a
    /// job, a media item, a channel), recorded in the log (it counts as no job and no
    /// quota). The event defaults to the first the plan may receive; one it may not is a
    /// 400. A test key gets a mock delivery and nothing is sent.
    pub async fn test_webhook(
        &self,
        caller: &Caller,
        request: &Fingerprint,
        id: &WebhookId,
        input: TestDeliveryRequest,
    ) -> Result<WebhookDelivery> {
        let webhook = self.owned_webhook(caller, id).await?;
        let event = match input.event {
            Some(event) => {
                check_receivable(caller, event)?;
                event
            }
            None => receivable_events(caller)
                .first()
                .copied()
                .unwrap_or(EventType::JobCompleted),
        };
        if caller.is_test() {
            return Ok(WebhookDelivery {
                id: DeliveryId::derived(&self.mock_digest(caller, request, DeliveryId::PREFIX, 0)),
                webhook_id: webhook.id,
                event,
                status_code: 200,
                success: true,
                duration_ms: 0,
                created_at: self.mock_time(),
            });
        }
        let transport = self.webhook_transport().ok_or_else(|| {
            Error::internal("no webhook transport: build with the `net` feature or give one")
        })?;
        let now = self.now();
        let message_id = EventId::new();
        let job = sample_job(
            event,
            now,
            &caller.organization.name,
            caller.organization.shop_domain.as_deref(),
        );
        let sample = crate::media::events::sample_data(event, now);
        let data = match &sample {
            Some(sample) => MessageData::Snapshot(sample),
            None => MessageData::Job { job: &job },
        };
        let message = WebhookMessage {
            id: message_id.as_str(),
            event_type: event,
            created_at: now,
            test: true,
            data,
        };
        let (reply, took) = send(
            transport.as_ref(),
            self.secret_box(),
            &webhook,
            &message,
            now,
        )
        .await
        .map_err(Error::internal)?;
        let log = log_row(&webhook.id, event, &reply, took, now);
        if !self.store().record_test_delivery(&log).await? {
            return Err(Error::NotFound("webhook"));
        }
        Ok(log)
    }

    /// `GET /webhooks/{id}/deliveries`: the log, newest first (kept 30 days).
    pub async fn list_deliveries(
        &self,
        caller: &Caller,
        id: &WebhookId,
        params: &DeliveryListParams,
    ) -> Result<Page<WebhookDelivery>> {
        let webhook = self.owned_webhook(caller, id).await?;
        let filters = format!("webhook={}", webhook.id);
        let (request, limit) = self.page_request("deliveries", &filters, &params.page())?;
        let deliveries = self.store().list_deliveries(&webhook.id, &request).await?;
        Ok(
            self.finish_page("deliveries", &filters, deliveries, limit, |d| After {
                created_at: d.created_at,
                id: d.id.as_str().to_owned(),
            }),
        )
    }

    /// The webhook `id` if it belongs to the caller's organization.
    async fn owned_webhook(&self, caller: &Caller, id: &WebhookId) -> Result<Webhook> {
        self.store()
            .get_webhook(id)
            .await?
            .filter(|w| w.organization_id == caller.organization.id)
            .ok_or(Error::NotFound("webhook"))
    }

    /// Checks a webhook URL: it parses, its scheme is allowed, it has no credentials, and the
    /// transport may reach its host. The URL as the parser writes it.
    async fn webhook_url(&self, url: WebhookUrl) -> Result<String> {
        let invalid = |message: String| Error::invalid("url", message);
        let parsed = url::Url::parse(url.as_str())
            .map_err(|e| invalid(format!("is not a valid URL ({e})")))?;
        match parsed.scheme() {
            "https" => {}
            "http" if self.inner.allow_private_targets => {}
            _ => return Err(invalid("must be an https URL".to_owned())),
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(invalid("must not carry credentials".to_owned()));
        }
        if !parsed.has_host() {
            return Err(invalid("must have a host".to_owned()));
        }
        if let Some(transport) = self.webhook_transport() {
            transport
                .check_target(&parsed)
                .await
                .map_err(|refused| invalid(refused.0))?;
        }
        Ok(parsed.to_string())
    }

    /// The deterministic secret of a test-mode create or rotation.
    fn mock_secret(&self, caller: &Caller, request: &Fingerprint) -> SigningSecret {
        let digest = self.mock_digest(caller, request, "whsec", 0);
        let mut bytes = [0u8; SECRET_BYTES];
        bytes.copy_from_slice(&digest[..SECRET_BYTES]);
        SigningSecret::from_bytes(&bytes)
    }
}

/// A name without its surrounding white space (the pattern guarantees some is left).
fn webhook_name(name: WebhookName) -> String {
    name.as_str().trim().to_owned()
}

/// The events the caller's plan may receive: those of the APIs it includes, in the order of
/// [`EventType::ALL`].
fn receivable_events(caller: &Caller) -> Vec<EventType> {
    EventType::ALL
        .into_iter()
        .filter(|e| caller.plan.has(e.entitlement()))
        .collect()
}

/// A 400 unless the caller's plan may receive `event`.
fn check_receivable(caller: &Caller, event: EventType) -> Result<()> {
    if caller.plan.has(event.entitlement()) {
        return Ok(());
    }
    let api = match event.entitlement() {
        crate::plans::Entitlement::DeveloperApi => "the SEO developer API",
        _ => "the media publishing API",
    };
    Err(Error::invalid(
        "events",
        format!(
            "{} is an event of {api}, which the organization's plan ({}) does not include; \
             it may receive: {}",
            event.as_str(),
            caller.plan.name,
            names(&receivable_events(caller))
        ),
    ))
}

/// The events, each once, in the order of [`EventType::ALL`]; an empty list, or an event of
/// an API the plan lacks, is a 400.
fn webhook_events(caller: &Caller, events: Vec<EventType>) -> Result<Vec<EventType>> {
    if events.is_empty() {
        return Err(Error::invalid(
            "events",
            format!(
                "must name at least one event: {}",
                names(&receivable_events(caller))
            ),
        ));
    }
    for event in &events {
        check_receivable(caller, *event)?;
    }
    Ok(EventType::ALL
        .into_iter()
        .filter(|e| events.contains(e))
        .collect())
}

fn names(events: &[EventType]) -> String {
    events
        .iter()
        .map(EventType::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}
