//! A webhook receiver for tests and benchmarks: a real HTTP server on a loopback port that
//! records every request it gets and answers as it is told.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use tokio::sync::Notify;

/// How the receiver answers.
#[derive(Debug, Clone)]
pub enum Answer {
    /// This status, empty body.
    Status(u16),
    /// This status with `Retry-After: value`.
    RetryAfter(u16, String),
    /// A redirect with this status to this location.
    Redirect(u16, String),
    /// Waits this long, then answers 200.
    Hang(Duration),
}

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    /// Its headers.
    pub headers: HeaderMap,
    /// Its body.
    pub body: Bytes,
    /// When it arrived.
    pub at: Instant,
}

impl Received {
    /// A header as text.
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

#[derive(Debug)]
struct Inner {
    answer: Mutex<Answer>,
    received: Mutex<Vec<Received>>,
    arrived: Notify,
    /// Keep the bodies (off for benchmarks, which only count).
    keep: bool,
    count: std::sync::atomic::AtomicUsize,
}

/// A running receiver; it stops when dropped.
#[derive(Debug)]
pub struct Receiver {
    /// `http://127.0.0.1:<port>/hook`.
    pub url: String,
    /// Its address.
    pub addr: SocketAddr,
    inner: Arc<Inner>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Receiver {
    /// Starts a receiver that answers `answer` and records every request.
    pub async fn start(answer: Answer) -> Self {
        Self::start_with(answer, true).await
    }

    /// Starts a receiver that only counts requests (for benchmarks).
    pub async fn counting() -> Self {
        Self::start_with(Answer::Status(204), false).await
    }

    async fn start_with(answer: Answer, keep: bool) -> Self {
        let inner = Arc::new(Inner {
            answer: Mutex::new(answer),
            received: Mutex::new(Vec::new()),
            arrived: Notify::new(),
            keep,
            count: std::sync::atomic::AtomicUsize::new(0),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("local address");
        let app = axum::Router::new()
            .fallback(receive)
            .with_state(Arc::clone(&inner));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver {
            url: format!("http://127.0.0.1:{}/hook", addr.port()),
            addr,
            inner,
            server,
        }
    }

    /// Changes how it answers from now on.
    pub fn answer(&self, answer: Answer) {
        *self.inner.answer.lock().unwrap() = answer;
    }

    /// Everything received so far.
    pub fn received(&self) -> Vec<Received> {
        self.inner.received.lock().unwrap().clone()
    }

    /// How many requests arrived.
    pub fn count(&self) -> usize {
        self.inner.count.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits until at least `n` requests arrived, for at most `limit`; everything received.
    pub async fn wait_for(&self, n: usize, limit: Duration) -> Vec<Received> {
        let deadline = Instant::now() + limit;
        loop {
            let arrived = self.inner.arrived.notified();
            if self.count() >= n {
                return self.received();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "the receiver got {} requests, not {n}, within {limit:?}",
                self.count()
            );
            let _ = tokio::time::timeout(left.min(Duration::from_millis(50)), arrived).await;
        }
    }
}

async fn receive(State(inner): State<Arc<Inner>>, headers: HeaderMap, body: Bytes) -> Response {
    let answer = inner.answer.lock().unwrap().clone();
    if inner.keep {
        inner.received.lock().unwrap().push(Received {
            headers,
            body,
            at: Instant::now(),
        });
    }
    inner
        .count
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    inner.arrived.notify_waiters();
    let status = |code: u16| StatusCode::from_u16(code).expect("a valid status");
    match answer {
        Answer::Status(code) => status(code).into_response(),
        Answer::RetryAfter(code, value) => (status(code), [("retry-after", value)]).into_response(),
        Answer::Redirect(code, location) => {
            (status(code), [("location", location)]).into_response()
        }
        Answer::Hang(wait) => {
            tokio::time::sleep(wait).await;
            StatusCode::OK.into_response()
        }
    }
}
