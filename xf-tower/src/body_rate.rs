//! The slowest request bodies the services read: [`MinRate`] cuts off a body that delivers
//! fewer bytes in a window than [`RequestLimits`] asks, so a client that trickles (or sends
//! nothing after its headers) cannot hold a request open for ever. An honest upload on a slow
//! link keeps going: only each window's average counts.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use tokio::time::{Instant, Sleep};
use xf_core::{BodyError, RequestLimits};

use crate::{Body, BoxError};

/// The error a request body ends with when its client sends fewer bytes in a window than
/// [`RequestLimits`] asks (the crate's `MinRate` body); the services answer it with
/// `408 request_timeout`.
#[derive(Debug)]
pub struct BodyTooSlow {
    /// For people: the rate and the window.
    pub message: String,
}

impl std::fmt::Display for BodyTooSlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for BodyTooSlow {}

/// What became of a body that failed: too slow (found anywhere in the error's sources) or
/// broken.
pub(crate) fn body_error(error: &(dyn std::error::Error + 'static)) -> BodyError {
    let mut source = Some(error);
    while let Some(error) = source {
        if let Some(slow) = error.downcast_ref::<BodyTooSlow>() {
            return BodyError::TooSlow(slow.message.clone());
        }
        source = error.source();
    }
    BodyError::Broken(error.to_string())
}

/// A body that fails with [`BodyTooSlow`] when a window of `window` passes with fewer than
/// `min_bytes` bytes.
pub(crate) struct MinRate {
    inner: Body,
    min_bytes: u64,
    window: std::time::Duration,
    /// When the current window ends, and what arrived in it.
    window_end: Instant,
    received: u64,
    /// Armed only while the body waits for its client.
    timer: Option<Pin<Box<Sleep>>>,
}

impl MinRate {
    /// `body` under `limits`; as it is when they accept any rate.
    pub(crate) fn wrap(body: Body, limits: RequestLimits) -> Body {
        let window = limits.body_rate_window;
        let min_bytes = limits
            .min_body_bytes_per_sec
            .saturating_mul(window.as_secs().max(1));
        if min_bytes == 0 || window.is_zero() || body.is_end_stream() {
            return body;
        }
        Body::new(MinRate {
            inner: body,
            min_bytes,
            window,
            window_end: Instant::now() + window,
            received: 0,
            timer: None,
        })
    }

    /// Ends the window if its time is up: an error when too little arrived in it.
    fn close_window(&mut self, now: Instant) -> Result<(), BodyTooSlow> {
        if now < self.window_end {
            return Ok(());
        }
        if self.received < self.min_bytes {
            let window = self.window.as_secs().max(1);
            return Err(BodyTooSlow {
                message: format!(
                    "the request body arrived too slowly: {} bytes in {window} s, where at least \
                     {} bytes per second are required",
                    self.received,
                    self.min_bytes / window
                ),
            });
        }
        self.window_end = now + self.window;
        self.received = 0;
        Ok(())
    }
}

impl HttpBody for MinRate {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    if let Some(data) = frame.data_ref() {
                        this.received += data.len() as u64;
                    }
                    this.close_window(Instant::now())?;
                    return Poll::Ready(Some(Ok(frame)));
                }
                Poll::Ready(other) => return Poll::Ready(other.map(|r| r.map_err(Into::into))),
                Poll::Pending => {}
            }
            let deadline = this.window_end;
            let timer = this
                .timer
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
            if timer.deadline() != deadline {
                timer.as_mut().reset(deadline);
            }
            ready!(timer.as_mut().poll(cx));
            this.close_window(Instant::now())?;
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    /// A body that sends `chunk` every `every`, `count` times.
    fn trickle(chunk: &'static [u8], every: std::time::Duration, count: usize) -> Body {
        let stream = futures::stream::unfold(0, move |sent| async move {
            if sent == count {
                return None;
            }
            tokio::time::sleep(every).await;
            Some((Ok::<_, std::io::Error>(Bytes::from_static(chunk)), sent + 1))
        });
        Body::from_stream(stream)
    }

    fn limits(rate: u64, window_secs: u64) -> RequestLimits {
        RequestLimits {
            min_body_bytes_per_sec: rate,
            body_rate_window: std::time::Duration::from_secs(window_secs),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_trickle_is_cut_off_after_one_window_and_says_why() {
        let body = trickle(b"x", std::time::Duration::from_secs(1), 1000);
        let error = MinRate::wrap(body, limits(100, 10))
            .collect()
            .await
            .unwrap_err();
        let started = Instant::now();
        match body_error(&error) {
            BodyError::TooSlow(message) => {
                assert!(message.contains("100 bytes per second"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        assert!(started.elapsed() <= std::time::Duration::from_secs(11));
    }

    #[tokio::test(start_paused = true)]
    async fn silence_after_the_headers_is_cut_off_too() {
        let body = trickle(b"x", std::time::Duration::from_secs(3600), 1);
        let error = MinRate::wrap(body, limits(1, 5))
            .collect()
            .await
            .unwrap_err();
        assert!(matches!(body_error(&error), BodyError::TooSlow(_)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_but_steady_upload_goes_on_for_as_long_as_it_takes() {
        // 2 KiB a second for 100 s, against a minimum of 1 KiB a second.
        static CHUNK: [u8; 2048] = [7; 2048];
        let body = trickle(&CHUNK, std::time::Duration::from_secs(1), 100);
        let bytes = MinRate::wrap(body, limits(1024, 10))
            .collect()
            .await
            .unwrap()
            .to_bytes();
        assert_eq!(bytes.len(), 2048 * 100);
    }

    #[tokio::test]
    async fn a_broken_body_is_broken_not_slow() {
        let stream = futures::stream::iter([
            Ok(Bytes::from_static(b"x")),
            Err(std::io::Error::other("connection reset")),
        ]);
        let error = MinRate::wrap(Body::from_stream(stream), limits(1, 10))
            .collect()
            .await
            .unwrap_err();
        assert!(matches!(body_error(&error), BodyError::Broken(_)));
    }
}
