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
use xf_core::{Caller, Error, Fingerprint, IdempotencyStart, IdempotencyTicket, Keep, Xf};

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
            Answer::of(&data).map_err(Error::internal)
        },
    )
    .await
}

/// [`respond`] for a write that keeps its answer in its own transaction
/// ([`Keep`]): `run` gets the [`Keep`] (none without a key) and returns the written value and,
/// when the write kept the answer, that response; `answer` renders the value's `{data}`. An answer
/// the write did not keep (a failure, or test mode) is completed or abandoned as [`respond`]
/// does.
pub async fn respond_keeping<T, F, Fut>(
    xf: &Xf,
    caller: &Caller,
    write: &Write,
    success: StatusCode,
    answer: fn(&T) -> Result<Answer, serde_json::Error>,
    run: F,
) -> Response
where
    T: 'static,
    F: FnOnce(Option<Keep<T>>) -> Fut,
    Fut: Future<Output = Result<(T, Option<StoredResponse>), Error>>,
{
    let api = Api::Developer;
    let key = write.idempotency.idempotency_key.as_ref();
    let ticket = match begin(xf, caller, key, &write.fingerprint, api).await {
        Ok(ticket) => ticket,
        Err(response) => return response,
    };
    let keep = ticket.clone().map(|ticket| {
        Keep::new(ticket, move |value: &T| match answer(value) {
            Ok(answer) => kept_success(api, success, &answer),
            Err(error) => {
                tracing::error!(%error, "an answer does not serialize");
                None
            }
        })
    });
    match run(keep).await {
        // Kept with the write: sent as its replays will be, with nothing left to complete.
        Ok((_, Some(kept))) => envelope::render(success, &kept.body),
        Ok((value, None)) => {
            let answer = answer(&value).map_err(Error::internal);
            finish(xf, ticket, api, success, answer).await
        }
        Err(error) => finish(xf, ticket, api, success, Err(error)).await,
    }
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
    match begin(xf, caller, key, fingerprint, api).await {
        Ok(ticket) => finish(xf, ticket, api, success, run().await).await,
        Err(response) => response,
    }
}

/// Claims `key` (none: nothing to claim): the ticket to complete, or the response to send
/// instead of running the request (a replay, or why the key cannot be used).
async fn begin(
    xf: &Xf,
    caller: &Caller,
    key: Option<&IdempotencyKey>,
    fingerprint: &Fingerprint,
    api: Api,
) -> Result<Option<IdempotencyTicket>, Response> {
    let Some(key) = key else {
        return Ok(None);
    };
    match xf.begin_idempotent(caller, key, fingerprint).await {
        Ok(IdempotencyStart::Proceed(ticket)) => Ok(Some(ticket)),
        Ok(IdempotencyStart::Replay(stored)) => Err(replay(&stored)),
        Err(error) => Err(error_response(api, &error)),
    }
}

/// Keeps `outcome` for `ticket` as the core's rule says (or frees the key), and answers it.
async fn finish(
    xf: &Xf,
    ticket: Option<IdempotencyTicket>,
    api: Api,
    success: StatusCode,
    outcome: Result<Answer, Error>,
) -> Response {
    if let Some(ticket) = ticket {
        let kept = match &outcome {
            Ok(answer) => kept_success(api, success, answer),
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

/// What idempotency keeps for a successful `answer`: its envelope without `meta`, or nothing
/// (logged) if it does not serialize.
fn kept_success(api: Api, success: StatusCode, answer: &Answer) -> Option<StoredResponse> {
    envelope::answer_object(api, answer)
        .map_err(|error| tracing::error!(%error, "an answer does not serialize"))
        .ok()
        .map(|body| StoredResponse {
            status: success.as_u16(),
            body,
        })
}

/// A kept response again, with the new request's id and `Idempotent-Replayed: true`.
pub fn replay(stored: &StoredResponse) -> Response {
    let Ok(status) = StatusCode::from_u16(stored.status) else {
        let cause = format!(
            "the idempotency record holds the status {}, which is not an HTTP status",
            stored.status
        );
        return error_response(Api::Developer, &Error::internal(cause));
    };
    let mut response = envelope::render(status, &stored.body);
    response
        .headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    response
}
