//! The server's connection handling: HTTP/1.1 and HTTP/2 (prior knowledge) on one port, with
//! bounds a client cannot stretch:
//!
//! - **At most [`ServeOptions::max_connections`] connections** at once. At the cap the
//!   server stops accepting, and new connections wait in the listen backlog until one closes;
//!   the process never runs out of file descriptors (`accept` errors such as `EMFILE` are
//!   logged and retried after a pause).
//! - **Headers within [`ServeOptions::header_read_timeout`]**: a connection must begin its
//!   first request within this time of opening (whatever bytes it trickles), and an HTTP/1
//!   connection must send each request's complete headers within it of the previous response
//!   (so an idle keep-alive connection is closed after it too). The connection's one watch
//!   keeps this time, not a timer of hyper's armed for every request.
//! - **Idle connections closed after [`ServeOptions::idle_timeout`]**: no byte read or
//!   written while no request is being handled (a silent HTTP/2 connection, a client that
//!   stopped reading its answer).
//! - Request bodies are bounded by the services themselves (`RequestLimits`).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tower::Service;

use crate::Mounts;

/// How connections are bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeOptions {
    /// The most connections open at once (default 4,096).
    pub max_connections: usize,
    /// The time a client gets to send a request's headers (default 10 s).
    pub header_read_timeout: Duration,
    /// The time a connection may sit without a byte either way while no request is being
    /// handled (default 60 s).
    pub idle_timeout: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_connections: 4096,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
        }
    }
}

/// Serves `service` on `listener` until `shutdown` completes, then stops accepting, lets the
/// requests in flight finish and closes each connection once it is idle.
pub async fn serve(
    listener: TcpListener,
    service: Mounts,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // The connection's watch (`Activity::idle`) bounds the time to send headers: hyper's
    // own bound would arm and drop a timer for every request.
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(None);
    // No HTTP/2 keep-alive pings: they would keep an idle connection from ever being idle.
    builder.http2().timer(TokioTimer::new());
    let permits = Arc::new(tokio::sync::Semaphore::new(options.max_connections.max(1)));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&permits).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    accept_failed(error).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let activity = Arc::new(Activity::new());
        let io = TokioIo::new(Tracked {
            stream,
            activity: Arc::clone(&activity),
        });
        let connection_service = ConnectionService {
            service: service.clone(),
            activity: Arc::clone(&activity),
            peer,
        };
        let connection = builder
            .serve_connection_with_upgrades(io, connection_service)
            .into_owned();
        let connection = graceful.watch(connection);
        let (idle_timeout, header_read_timeout) =
            (options.idle_timeout, options.header_read_timeout);
        tokio::spawn(async move {
            let _permit = permit;
            tokio::select! {
                served = connection => {
                    if let Err(error) = served {
                        tracing::debug!(%error, "connection closed with an error");
                    }
                }
                () = activity.idle(idle_timeout, header_read_timeout) => {
                    tracing::debug!("idle connection closed");
                }
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// An `accept` that failed: a connection reset before it was taken is nothing; running out
/// of descriptors or memory waits a little for connections to close.
async fn accept_failed(error: std::io::Error) {
    use std::io::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::Interrupted
    ) {
        return;
    }
    tracing::warn!(%error, "accept failed; retrying in 100 ms");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// When a connection last moved a byte, and how many of its requests are being handled.
struct Activity {
    start: Instant,
    /// Milliseconds from `start` to the last byte read or written.
    last_io: AtomicU64,
    /// Milliseconds from `start` to the last answer's end or byte written: where an HTTP/1
    /// connection's time to send its next request's headers starts.
    last_answer: AtomicU64,
    /// Requests being handled: no clock runs.
    in_flight: AtomicUsize,
    /// Answers whose bodies are being sent: the idle clock runs (a client that stopped
    /// reading is closed by it), the header clock waits for their end.
    sending: AtomicUsize,
    /// Whether a request has begun on the connection.
    served: std::sync::atomic::AtomicBool,
    /// Whether the connection speaks HTTP/1 (known with its first request): HTTP/2 has no
    /// header time-out, its streams being bounded by the idle time-out.
    http1: std::sync::atomic::AtomicBool,
    /// Woken when the first request begins.
    first_request: tokio::sync::Notify,
}

impl Activity {
    fn new() -> Self {
        Activity {
            start: Instant::now(),
            last_io: AtomicU64::new(0),
            last_answer: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            sending: AtomicUsize::new(0),
            served: std::sync::atomic::AtomicBool::new(false),
            http1: std::sync::atomic::AtomicBool::new(false),
            first_request: tokio::sync::Notify::new(),
        }
    }

    fn millis(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// A byte read.
    fn touch(&self) {
        self.last_io.store(self.millis(), Ordering::Relaxed);
    }

    /// A byte written, or an answer's end: the next request's header time starts over.
    fn answered(&self) {
        let now = self.millis();
        self.last_io.store(now, Ordering::Relaxed);
        self.last_answer.store(now, Ordering::Relaxed);
    }

    fn at(&self, millis: &AtomicU64) -> Instant {
        self.start + Duration::from_millis(millis.load(Ordering::Relaxed))
    }

    /// Completes once the connection has been idle for `timeout`; before its first request,
    /// once `headers` has passed since it opened; and on HTTP/1, once `headers` has passed
    /// since its last answer ended (its body sent, its last byte written) without a new
    /// request begun, whatever bytes of one it trickles.
    async fn idle(&self, timeout: Duration, headers: Duration) {
        loop {
            if !self.served.load(Ordering::Relaxed) {
                let deadline = self.start + headers;
                if Instant::now() >= deadline {
                    return;
                }
                tokio::select! {
                    () = tokio::time::sleep_until(deadline) => {}
                    () = self.first_request.notified() => {}
                }
                continue;
            }
            let busy = self.in_flight.load(Ordering::Acquire) > 0;
            let now = Instant::now();
            if busy {
                // A request being handled stops both clocks; look again a time-out later
                // (never sooner than 10 ms, whatever the time-outs).
                let again = timeout.min(headers).max(Duration::from_millis(10));
                tokio::time::sleep_until(now + again).await;
                continue;
            }
            let idle = self.at(&self.last_io) + timeout;
            if now >= idle {
                return;
            }
            let mut wake = idle;
            if self.http1.load(Ordering::Relaxed) {
                if self.sending.load(Ordering::Acquire) > 0 {
                    // The header clock starts when the answer ends: look again a header
                    // time-out from now at the latest.
                    wake = wake.min(now + headers.max(Duration::from_millis(10)));
                } else {
                    let next_headers = self.at(&self.last_answer) + headers;
                    if now >= next_headers {
                        return;
                    }
                    wake = wake.min(next_headers);
                }
            }
            tokio::time::sleep_until(wake).await;
        }
    }
}

/// A socket that records its activity.
struct Tracked {
    stream: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.answered();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.answered();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// The app for one connection: counts the requests being handled and the answers being sent.
#[derive(Clone)]
struct ConnectionService {
    service: Mounts,
    activity: Arc<Activity>,
    /// The client's address.
    peer: std::net::SocketAddr,
}

/// Counts a request as handled until its answer is ready.
struct InFlight(Arc<Activity>);

/// Counts an answer as being sent until its body ends (or is dropped, the connection gone).
struct Sending(Arc<Activity>);

impl Sending {
    fn start(activity: &Arc<Activity>) -> Self {
        activity.sending.fetch_add(1, Ordering::Relaxed);
        Sending(Arc::clone(activity))
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        // The end's time first: the watch, seeing no answer being sent, must not read the
        // previous answer's.
        self.0.answered();
        self.0.sending.fetch_sub(1, Ordering::Release);
    }
}

/// An answer's body, counted as being sent while it lasts: hyper drops it at its end.
struct SentBody {
    body: axum::body::Body,
    _sending: Sending,
}

impl http_body::Body for SentBody {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

impl InFlight {
    fn start(activity: &Arc<Activity>, version: hyper::Version) -> Self {
        if !activity.served.load(Ordering::Relaxed) {
            let http1 = version < hyper::Version::HTTP_2;
            activity.http1.store(http1, Ordering::Relaxed);
            activity.served.store(true, Ordering::Relaxed);
            activity.first_request.notify_one();
        }
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(Arc::clone(activity))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        // No clock read: an answer is counted as being sent before this (`Sending`), and its
        // end starts the header clock; a request dropped unanswered has lost its connection.
        self.0.in_flight.fetch_sub(1, Ordering::Release);
    }
}

impl hyper::service::Service<hyper::Request<hyper::body::Incoming>> for ConnectionService {
    type Response = axum::response::Response;
    type Error = std::convert::Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn call(&self, mut request: hyper::Request<hyper::body::Incoming>) -> Self::Future {
        let handled = InFlight::start(&self.activity, request.version());
        // The admin API throttles wrong tokens by client address; no other request pays for
        // the extension.
        if request.uri().path().starts_with(xf_tower::ADMIN_PREFIX) {
            request
                .extensions_mut()
                .insert(axum::extract::ConnectInfo(self.peer));
        }
        let mut service = self.service.clone();
        let answer = service.call(request.map(axum::body::Body::new));
        let activity = Arc::clone(&self.activity);
        Box::pin(async move {
            let answer = answer.await;
            // Counted as sent before it stops being handled, so that the header clock never
            // runs in between.
            let sending = Sending::start(&activity);
            drop(handled);
            answer.map(|response| {
                response.map(|body| {
                    axum::body::Body::new(SentBody {
                        body,
                        _sending: sending,
                    })
                })
            })
        })
    }
}

/// Raises this process's soft limit of open files as far as its hard limit allows, and
/// returns the limit now in force (`None` where it cannot be read or changed).
pub fn raise_open_file_limit() -> Option<u64> {
    rlimit::increase_nofile_limit(u64::MAX).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDLE: Duration = Duration::from_secs(60);
    const HEADERS: Duration = Duration::from_secs(10);

    /// An HTTP/1 connection that has served a request, and its watch, started now: the watch
    /// reports when it would close the connection.
    fn watched() -> (Arc<Activity>, tokio::task::JoinHandle<Instant>) {
        let activity = Arc::new(Activity::new());
        activity.served.store(true, Ordering::Relaxed);
        activity.http1.store(true, Ordering::Relaxed);
        let watching = Arc::clone(&activity);
        let watch = tokio::spawn(async move {
            watching.idle(IDLE, HEADERS).await;
            Instant::now()
        });
        (activity, watch)
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_being_sent_holds_the_header_clock_not_the_idle_one() {
        let started = Instant::now();
        let (activity, watch) = watched();
        let sending = Sending::start(&activity);
        // Bytes of the answer go out for 30 s, far past the header time-out.
        for _ in 0..30 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            activity.answered();
        }
        assert!(!watch.is_finished());
        // Then the client stops reading: the idle time-out closes the connection.
        let closed = watch.await.unwrap();
        assert_eq!(closed - started, Duration::from_secs(30) + IDLE);
        drop(sending);
    }

    #[tokio::test(start_paused = true)]
    async fn the_header_clock_starts_when_the_answer_ends() {
        let started = Instant::now();
        let (activity, watch) = watched();
        let sending = Sending::start(&activity);
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert!(!watch.is_finished());
        drop(sending);
        let closed = watch.await.unwrap();
        assert_eq!(closed - started, Duration::from_secs(30) + HEADERS);
    }
}
