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
//!   (so an idle keep-alive connection is closed after it too).
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
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_read_timeout);
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
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
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
    in_flight: AtomicUsize,
    /// Whether a request has begun on the connection.
    served: std::sync::atomic::AtomicBool,
    /// Woken when the first request begins.
    first_request: tokio::sync::Notify,
}

impl Activity {
    fn new() -> Self {
        Activity {
            start: Instant::now(),
            last_io: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            served: std::sync::atomic::AtomicBool::new(false),
            first_request: tokio::sync::Notify::new(),
        }
    }

    fn touch(&self) {
        let now = self.start.elapsed().as_millis() as u64;
        self.last_io.store(now, Ordering::Relaxed);
    }

    /// Completes once the connection has been idle for `timeout`, or, before its first
    /// request, once `first_request` has passed since it opened: until the protocol is known
    /// (HTTP/1 or HTTP/2) no header time-out of hyper's runs yet.
    async fn idle(&self, timeout: Duration, first_request: Duration) {
        loop {
            if !self.served.load(Ordering::Relaxed) {
                let deadline = self.start + first_request;
                if Instant::now() >= deadline {
                    return;
                }
                tokio::select! {
                    () = tokio::time::sleep_until(deadline) => {}
                    () = self.first_request.notified() => {}
                }
                continue;
            }
            let last = self.start + Duration::from_millis(self.last_io.load(Ordering::Relaxed));
            let busy = self.in_flight.load(Ordering::Relaxed) > 0;
            let deadline = last + timeout;
            if !busy && Instant::now() >= deadline {
                return;
            }
            let wake = if busy {
                Instant::now() + timeout
            } else {
                deadline
            };
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
            self.activity.touch();
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
            self.activity.touch();
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

/// The app for one connection: counts the requests being handled.
#[derive(Clone)]
struct ConnectionService {
    service: Mounts,
    activity: Arc<Activity>,
}

/// Counts a request as handled until its answer is ready.
struct InFlight(Arc<Activity>);

impl InFlight {
    fn start(activity: &Arc<Activity>) -> Self {
        if !activity.served.swap(true, Ordering::Relaxed) {
            activity.first_request.notify_one();
        }
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(Arc::clone(activity))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

impl hyper::service::Service<hyper::Request<hyper::body::Incoming>> for ConnectionService {
    type Response = axum::response::Response;
    type Error = std::convert::Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn call(&self, request: hyper::Request<hyper::body::Incoming>) -> Self::Future {
        let handled = InFlight::start(&self.activity);
        let mut service = self.service.clone();
        let answer = service.call(request.map(axum::body::Body::new));
        Box::pin(async move {
            let answer = answer.await;
            drop(handled);
            answer
        })
    }
}

/// Raises this process's soft limit of open files as far as its hard limit allows, and
/// returns the limit now in force (`None` where it cannot be read or changed).
pub fn raise_open_file_limit() -> Option<u64> {
    rlimit::increase_nofile_limit(u64::MAX).ok()
}
