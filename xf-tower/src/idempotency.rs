//! Running a write under its `Idempotency-Key`.
//!
//! The response is kept as the envelope without `meta` and replayed with the new request id
//! and `Idempotent-Replayed: true`. Which failures are kept is the core's rule
//! ([`Error::kept_by_idempotency`]): validation failures, 429s and 5xx are not, so a
//! corrected or later retry runs for real.

use std::future::Future;

use axum::response::Response;
use http::{HeaderValue, StatusCode};
use serde::Serialize;
use xf_core::params::IdempotencyKey;
use xf_core::store::StoredResponse;
use xf_core::{Caller, Error, Fingerprint, IdempotencyStart, Xf};

use crate::envelope::{self, Answer, Api};
use crate::error::{error_object, respond as error_response, status_of};
use crate::extract::Write;

/// Runs `run` once per idempotency key and renders its outcome as `success` (the developer
/// envelope's `{data}`) or the error.
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
    let key = write.idempotency.idempotency_key.as_ref();
    once(
        xf,
        caller,
        key,
        &write.fingerprint,
        Api::Developer,
        success,
        || async {
            let data = run().await?;
            Answer::of(&data).map_err(|e| Error::Internal(e.to_string()))
        },
    )
    .await
}

/// Runs `run` once per idempotency key (none: it just runs) and answers in `api`'s envelope: a
/// request with the key and fingerprint of a finished one gets its answer again, and the
/// outcome is kept as the core's rule says.
pub async fn once<F, Fut>(
    xf: &Xf,
    caller: &Caller,
    key: Option<&IdempotencyKey>,
    fingerprint: &Fingerprint,
    api: Api,
    success: StatusCode,
    run: F,
) -> Response
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<Answer, Error>>,
{
    let ticket = match key {
        None => None,
        Some(key) => match xf.begin_idempotent(caller, key, fingerprint).await {
            Ok(IdempotencyStart::Proceed(ticket)) => Some(ticket),
            Ok(IdempotencyStart::Replay(stored)) => return replay(&stored),
            Err(error) => return error_response(api, &error),
        },
    };
    let outcome = run().await;
    if let Some(ticket) = ticket {
        let kept = match &outcome {
            Ok(answer) => envelope::answer_object(api, answer)
                .map_err(|error| tracing::error!(%error, "an answer does not serialize"))
                .ok()
                .map(|body| StoredResponse {
                    status: success.as_u16(),
                    body,
                }),
            Err(error) if error.kept_by_idempotency() => Some(StoredResponse {
                status: status_of(error).as_u16(),
                body: error_object(api, error),
            }),
            Err(_) => None,
        };
        let saved = match &kept {
            Some(response) => xf.complete_idempotent(&ticket, response).await,
            None => xf.abandon_idempotent(&ticket).await,
        };
        if let Err(error) = saved {
            // The answer is still right; the key frees itself once its claim goes stale.
            tracing::warn!(%error, "could not record the idempotency outcome");
        }
    }
    match outcome {
        Ok(answer) => envelope::answer(api, success, &answer),
        Err(error) => error_response(api, &error),
    }
}

/// A kept response again, with the new request's id and `Idempotent-Replayed: true`.
pub fn replay(stored: &StoredResponse) -> Response {
    let Ok(status) = StatusCode::from_u16(stored.status) else {
        let cause = format!(
            "the idempotency record holds the status {}, which is not an HTTP status",
            stored.status
        );
        return error_response(Api::Developer, &Error::Internal(cause));
    };
    let mut response = envelope::render(status, &stored.body);
    response
        .headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    response
}
