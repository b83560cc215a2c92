//! Small statements that many requests make at once, gathered into batches: whatever is
//! waiting when the previous batch returns goes to the database in one call. A busy instance
//! then makes one round trip (and one commit) for many requests, and an idle one answers at
//! once, with a batch of one. The rate-limit counts and the idempotency claims and completions
//! of the request path go this way.

use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::time::Duration;

use sqlx::PgPool;
use tokio::sync::{mpsc, oneshot};
use xf_core::store::StoreResult;
use xf_core::StoreError;

/// The most requests one batch carries.
const MAX_BATCH: usize = 256;

/// How long after a batch found the database unreachable new requests are answered
/// `Unavailable` without trying.
const OUTAGE_FAST_FAIL: Duration = Duration::from_millis(500);

/// What a batch call returns: one outcome per request, in request order.
pub(crate) type BatchFuture<O> = Pin<Box<dyn Future<Output = StoreResult<Vec<O>>> + Send>>;

/// Runs one batch (never empty) against the database.
pub(crate) type Runner<R, O> = fn(PgPool, Vec<R>) -> BatchFuture<O>;

type Pending<R, O> = (R, oneshot::Sender<StoreResult<O>>);

/// The batches of one kind of request, run by a task started on first use on the runtime of
/// that use.
pub(crate) struct Batcher<R, O> {
    run: Runner<R, O>,
    sender: OnceLock<mpsc::UnboundedSender<Pending<R, O>>>,
}

impl<R: Send + 'static, O: Send + 'static> Batcher<R, O> {
    pub(crate) const fn new(run: Runner<R, O>) -> Self {
        Self {
            run,
            sender: OnceLock::new(),
        }
    }

    /// The outcome of `request`, run in the next batch. When the batching task is gone (the
    /// runtime it was started on ended, as in tests that share a store between runtimes), the
    /// request runs alone, on the caller's runtime. Were the task to end with the request
    /// taken, whether it ran is unknown: the answer is then `Unavailable`, never a second run.
    pub(crate) async fn submit(&self, pool: &PgPool, request: R) -> StoreResult<O> {
        let sender = self.sender.get_or_init(|| {
            let (sender, receiver) = mpsc::unbounded_channel();
            tokio::spawn(run_batches(pool.clone(), receiver, self.run));
            sender
        });
        let (reply, answer) = oneshot::channel();
        let request = match sender.send((request, reply)) {
            Ok(()) => {
                return answer.await.unwrap_or_else(|_| {
                    Err(StoreError::unavailable(
                        "the batching task ended before answering",
                    ))
                })
            }
            Err(mpsc::error::SendError((request, _))) => request,
        };
        let mut outcomes = (self.run)(pool.clone(), vec![request]).await?;
        outcomes
            .pop()
            .ok_or_else(|| StoreError::internal("a batch of one gave no outcome"))
    }
}

/// The batching task: takes what is waiting (up to [`MAX_BATCH`]), runs it, answers each.
///
/// When the database cannot be reached, a batch waits out the pool's acquire time-out; the
/// requests that queued behind it are then answered `Unavailable` at once, as are those that
/// arrive within [`OUTAGE_FAST_FAIL`] of it, so that no request waits for two time-outs in a
/// row (docs/limits.md's bound on answers during an outage).
async fn run_batches<R, O>(
    pool: PgPool,
    mut waiting: mpsc::UnboundedReceiver<Pending<R, O>>,
    run: Runner<R, O>,
) {
    let mut down: Option<(tokio::time::Instant, StoreError)> = None;
    while let Some(first) = waiting.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match waiting.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        if let Some((since, error)) = &down {
            if since.elapsed() < OUTAGE_FAST_FAIL {
                for (_, reply) in batch {
                    let _ = reply.send(Err(error.clone()));
                }
                continue;
            }
            down = None;
        }
        let (requests, replies): (Vec<R>, Vec<_>) = batch.into_iter().unzip();
        let count = requests.len();
        let outcomes = run(pool.clone(), requests).await.and_then(|outcomes| {
            if outcomes.len() == count {
                Ok(outcomes)
            } else {
                Err(StoreError::internal(format!(
                    "a batch of {count} requests gave {} outcomes",
                    outcomes.len()
                )))
            }
        });
        match outcomes {
            Ok(outcomes) => {
                for (reply, outcome) in replies.into_iter().zip(outcomes) {
                    let _ = reply.send(Ok(outcome));
                }
            }
            Err(error) => {
                if matches!(error, StoreError::Unavailable(_)) {
                    down = Some((tokio::time::Instant::now(), error.clone()));
                    // Whoever queued while this batch waited has waited long enough.
                    while let Ok((_, reply)) = waiting.try_recv() {
                        let _ = reply.send(Err(error.clone()));
                    }
                }
                for reply in replies {
                    let _ = reply.send(Err(error.clone()));
                }
            }
        }
    }
}
