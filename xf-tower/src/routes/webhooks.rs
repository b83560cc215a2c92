//! Webhook endpoints and their delivery log.

use axum::extract::State;
use axum::response::Response;
use http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::routes;
use xf_core::api::{
    DeletedWebhook, DeliveryListParams, NewWebhook, TestDeliveryRequest, WebhookPatch,
    WebhookWithSecret,
};
use xf_core::ids::WebhookId;
use xf_core::model::{Webhook, WebhookDelivery};
use xf_core::Xf;

use super::{Envelope, PageEnvelope, Routes};
use crate::envelope;
use crate::error::ApiError;
use crate::extract::{PathParam, Query, Sent, WebhooksAuthed};

/// `data` of `GET /webhooks`.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookList {
    /// Newest first; at most 10.
    pub webhooks: Vec<Webhook>,
}

/// `data` of `GET` and `PATCH /webhooks/{webhookId}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookData {
    /// The webhook as it is now.
    pub webhook: Webhook,
}

/// `data` of `POST /webhooks/{webhookId}/test`.
#[derive(Debug, Serialize, ToSchema)]
pub struct TestDelivery {
    /// The attempt, as the log records it.
    pub delivery: WebhookDelivery,
}

/// `data` of `GET /webhooks/{webhookId}/deliveries`.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryList {
    /// Attempts of the last 30 days, newest first.
    pub deliveries: Vec<WebhookDelivery>,
}

/// The routes of this module.
pub fn router(routes: Routes) -> Routes {
    routes
        .routes(routes!(list_webhooks, create_webhook))
        .routes(routes!(get_webhook, update_webhook, delete_webhook))
        .routes(routes!(test_webhook))
        .routes(routes!(rotate_secret))
        .routes(routes!(list_deliveries))
}

/// The organization's webhooks.
#[utoipa::path(get, path = "/webhooks", tag = "webhooks",
    responses((status = 200, description = "The webhooks", body = Envelope<WebhookList>)))]
async fn list_webhooks(
    State(xf): State<Xf>,
    WebhooksAuthed(caller): WebhooksAuthed,
) -> Result<Response, ApiError> {
    let webhooks = xf.list_webhooks(&caller).await?;
    Ok(envelope::data(StatusCode::OK, &WebhookList { webhooks }))
}

/// Registers an endpoint for the events the plan may receive (job outcomes; publishing
/// outcomes and channel disconnections for the media API). The signing secret is in this
/// answer only.
#[utoipa::path(post, path = "/webhooks", tag = "webhooks", request_body = NewWebhook,
    responses(
        (status = 201, description = "Created, with its secret", body = Envelope<WebhookWithSecret>),
        (status = 400, description = "`validation_error`: also a URL that is not https, or whose host is or resolves to a private or reserved address"),
        (status = 409, description = "`conflict`: the organization has 10 webhooks already"),
    ))]
async fn create_webhook(
    State(xf): State<Xf>,
    WebhooksAuthed(caller): WebhooksAuthed,
    sent: Sent,
) -> Result<Response, ApiError> {
    let created = xf
        .create_webhook(&caller, &sent.fingerprint, sent.json()?)
        .await?;
    Ok(envelope::data(StatusCode::CREATED, &created))
}

/// One webhook of the organization (never its secret).
#[utoipa::path(get, path = "/webhooks/{webhookId}", tag = "webhooks",
    params(("webhookId" = inline(WebhookId), Path, description = "Webhook id")),
    responses(
        (status = 200, description = "The webhook", body = Envelope<WebhookData>),
        (status = 404, description = "`not_found`: no such webhook in this organization"),
    ))]
async fn get_webhook(
    State(xf): State<Xf>,
    WebhooksAuthed(caller): WebhooksAuthed,
    PathParam(id): PathParam<WebhookId>,
) -> Result<Response, ApiError> {
    let webhook = xf.get_webhook(&caller, &id).await?;
    Ok(envelope::data(StatusCode::OK, &WebhookData { webhook }))
}

/// Changes a webhook's name, URL, events or whether it is enabled.
#[utoipa::path(patch, path = "/webhooks/{webhookId}", tag = "webhooks", request_body = WebhookPatch,
    params(("webhookId" = inline(WebhookId), Path, description = "Webhook id")),
    responses(
        (status = 200, description = "The webhook as it is now", body = Envelope<WebhookData>),
        (status = 400, description = "`validation_error`"),
        (status = 404, description = "`not_found`"),
    ))]
async fn update_webhook(
    State(xf): State<Xf>,
    WebhooksAuthed(caller): WebhooksAuthed,
    PathParam(id): PathParam<WebhookId>,
    sent: Sent,
) -> Result<Response, ApiError> {
    let webhook = xf.update_webhook(&caller, &id, sent.json()?).await?;
    Ok(envelope::data(StatusCode::OK, &WebhookData { webhook }))
}

/// Deletes a webhook with its queued deliveries and its log.
#[utoipa::path(delete, path = "/webhooks/{webhookId}", tag = "webhooks",
    params(("webhookId" = inline(WebhookId), Path, description = "Webhook id")),
    responses(
        (status = 200, description = "Deleted", body = Envelope<DeletedWebhook>),
        (status = 404, description = "`not_found`"),
    ))]
async fn delete_webhook(
    State(xf): State<Xf>,
    WebhooksAuthed(caller): WebhooksAuthed,
    PathParam(id): PathParam<WebhookId>,
) -> Result<Response, ApiError> {
    let deleted = xf.delete_webhook(&caller, &id).await?;
    Ok(envelope::data(StatusCode::OK, &deleted))
}

/// Sends one signed test delivery now (`test: true`, a synthetic job) and answers with the
/// attempt. It is recorded in the log and counts as no job.
#[utoipa::path(post, path = "/webhooks/{webhookId}/test", tag = "webhooks",
    request_body(content = Option<TestDeliveryRequest>, description = "Optional; the event defaults to `job.completed`"),
    params(("webhookId" = inline(WebhookId), Path, description = "Webhook id")),
    responses(
        (status = 200, description = "The attempt (`success` false when the receiver failed)", body = Envelope<TestDelivery>),
        (status = 404, description = "`not_found`"),
    ))]
async fn test_webhook(
    State(xf): State<Xf>,
    WebhooksAuthed(caller): WebhooksAuthed,
    PathParam(id): PathParam<WebhookId>,
    sent: Sent,
) -> Result<Response, ApiError> {
    let delivery = xf
        .test_webhook(&caller, &sent.fingerprint, &id, sent.json_or_default()?)
        .await?;
    Ok(envelope::data(StatusCode::OK, &TestDelivery { delivery }))
}

/// Replaces the signing secret. The old one keeps signing beside it for 24 hours.
#[utoipa::path(post, path = "/webhooks/{webhookId}/rotate-secret", tag = "webhooks",
    params(("webhookId" = inline(WebhookId), Path, description = "Webhook id")),
    responses(
        (status = 200, description = "The webhook and its new secret", body = Envelope<WebhookWithSecret>),
        (status = 404, description = "`not_found`"),
        (status = 409, description = "`conflict`: another rotation of the secret happened at the same time and its secret signs; rotate again"),
    ))]
async fn rotate_secret(
    State(xf): State<Xf>,
    WebhooksAuthed(caller): WebhooksAuthed,
    PathParam(id): PathParam<WebhookId>,
    sent: Sent,
) -> Result<Response, ApiError> {
    let rotated = xf
        .rotate_webhook_secret(&caller, &sent.fingerprint, &id)
        .await?;
    Ok(envelope::data(StatusCode::OK, &rotated))
}

/// The webhook's delivery log: one row per attempt, kept 30 days, newest first.
#[utoipa::path(get, path = "/webhooks/{webhookId}/deliveries", tag = "webhooks",
    params(("webhookId" = inline(WebhookId), Path, description = "Webhook id"), DeliveryListParams),
    responses(
        (status = 200, description = "A page of the log", body = PageEnvelope<DeliveryList>),
        (status = 404, description = "`not_found`"),
    ))]
async fn list_deliveries(
    State(xf): State<Xf>,
    WebhooksAuthed(caller): WebhooksAuthed,
    PathParam(id): PathParam<WebhookId>,
    Query(params): Query<DeliveryListParams>,
) -> Result<Response, ApiError> {
    let page = xf.list_deliveries(&caller, &id, &params).await?;
    Ok(envelope::page("deliveries", &page))
}
