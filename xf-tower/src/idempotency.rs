//! Running a write under its `Idempotency-Key`.
//!
//! The response is kept as the envelope without `meta` and replayed with the new request id
//! and `Idempotent-Replayed: true`. Which failures are kept is the core's rule
//! ([`Error::kept_by_idempotency`]): validation failures, 429s and 5xx are not, so a
//! corrected or later retry runs for real.

use std::future::Future;

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode};
use serde::Serialize;
use xf_core::store::StoredResponse;
use xf_core::{Caller, Error, IdempotencyStart, IdempotencyTicket, Xf};

use crate::envelope;
use crate::error::{error_object, status_of, ApiError};
use crate::extract::Write;

/// Runs `run` once per idempotency key and renders its outcome as `success` or the error.
pub async fn respond<T, F, Fut>(
    xf: &Xf,
    caller: &Caller,
    write: &Write,
    success: StatusCode,
    run: F,
) -> Response
where
    T: Serialize,
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let ticket = match &write.idempotency.idempotency_key {
        None => None,
        Some(key) => match xf.begin_idempotent(caller, key, &write.fingerprint).await {
            Ok(IdempotencyStart::Proceed(ticket)) => Some(ticket),
            Ok(IdempotencyStart::Replay(stored)) => return replay(&stored),
            Err(error) => return ApiError(error).into_response(),
        },
    };
    let outcome = run().await.and_then(|data| envelope::data_object(&data));
    if let Some(ticket) = ticket {
        record(xf, &ticket, &outcome, success, error_object).await;
    }
    match outcome {
        Ok(object) => envelope::render(success, &object),
        Err(error) => ApiError(error).into_response(),
    }
}

/// Keeps what a request under an idempotency key answered (`success` with its object, or an
/// error the core's rule keeps, rendered by `error_body`), or frees the key for a retry.
pub async fn record(
    xf: &Xf,
    ticket: &IdempotencyTicket,
    outcome: &Result<String, Error>,
    success: StatusCode,
    error_body: fn(&Error) -> String,
) {
    let kept = match outcome {
        Ok(object) => Some(StoredResponse {
            status: success.as_u16(),
            body: object.clone(),
        }),
        Err(error) if error.kept_by_idempotency() => Some(StoredResponse {
            status: status_of(error).as_u16(),
            body: error_body(error),
        }),
        Err(_) => None,
    };
    let saved = match &kept {
        Some(response) => xf.complete_idempotent(ticket, response).await,
        None => xf.abandon_idempotent(ticket).await,
    };
    if let Err(error) = saved {
        // The answer is still right; the key frees itself once its claim goes stale.
        tracing::warn!(%error, "could not record the idempotency outcome");
    }
}

/// A kept response again, with the new request's id and `Idempotent-Replayed: true`.
pub fn replay(stored: &StoredResponse) -> Response {
    let Ok(status) = StatusCode::from_u16(stored.status) else {
        return ApiError(Error::Internal(format!(
            "the idempotency record holds the status {}, which is not an HTTP status",
            stored.status
        )))
        .into_response();
    };
    let mut response = envelope::render(status, &stored.body);
    response
        .headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    response
}
