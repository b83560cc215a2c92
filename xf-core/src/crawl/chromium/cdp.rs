//! A DevTools protocol connection over a WebSocket: commands matched to their answers by id,
//! and events routed by the session they belong to (sessions attached with `flatten`).
//!
//! One reader task takes every message off the socket and one writer task puts commands on
//! it, so a command never waits for another's answer. When the socket closes (the browser
//! crashed or went away), every command waiting fails with [`CdpError::Closed`] and every
//! session's event stream ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

/// An event of a session.
#[derive(Debug)]
pub(super) struct Event {
    /// The session it came from.
    pub session: String,
    /// `Domain.event`.
    pub method: String,
    /// Its parameters.
    pub params: Value,
}

/// Why a command got no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum CdpError {
    /// The connection closed before the answer came.
    #[error("the DevTools connection closed")]
    Closed,
    /// The browser answered with an error.
    #[error("{method}: {message}")]
    Command { method: String, message: String },
    /// No connection could be made.
    #[error("could not connect to DevTools at {url}: {why}")]
    Connect { url: String, why: String },
}

type Answer = Result<Value, String>;

#[derive(Default)]
struct Shared {
    pending: Mutex<HashMap<u64, oneshot::Sender<Answer>>>,
    sessions: Mutex<HashMap<String, mpsc::UnboundedSender<Event>>>,
    closed: AtomicBool,
}

impl Shared {
    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Answer>>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::UnboundedSender<Event>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ends everything waiting on the connection.
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.pending().clear();
        self.sessions().clear();
    }

    fn dispatch(&self, text: &str) {
        let Ok(message) = serde_json::from_str::<Value>(text) else {
            tracing::debug!("DevTools sent a message that is no JSON");
            return;
        };
        if let Some(id) = message.get("id").and_then(Value::as_u64) {
            let Some(answer) = self.pending().remove(&id) else {
                return;
            };
            let result = match message.get("error") {
                Some(error) => Err(error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("an error without a message")
                    .to_owned()),
                None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
            };
            let _ = answer.send(result);
            return;
        }
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            return;
        };
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        // A browser-level event about a session (`Target.detachedFromTarget`,
        // `Target.targetCrashed` carry theirs in the parameters) goes to that session.
        let session = message
            .get("sessionId")
            .or_else(|| params.get("sessionId"))
            .and_then(Value::as_str);
        let Some(session) = session else {
            return;
        };
        let sessions = self.sessions();
        if let Some(events) = sessions.get(session) {
            let _ = events.send(Event {
                session: session.to_owned(),
                method: method.to_owned(),
                params,
            });
        }
    }
}

/// A connection to a browser's DevTools endpoint (`ws://…/devtools/browser/…`).
#[derive(Clone)]
pub(super) struct Connection {
    out: mpsc::UnboundedSender<Message>,
    shared: Arc<Shared>,
    next_id: Arc<AtomicU64>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

/// The largest message taken from the browser: a page's DOM is cut to the crawler's body
/// limit before it is sent, so this bounds what a misbehaving endpoint can make xf hold.
const MAX_MESSAGE: usize = 64 * 1024 * 1024;

impl Connection {
    /// Connects to `url`.
    pub async fn connect(url: &str) -> Result<Connection, CdpError> {
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE))
            .max_frame_size(Some(MAX_MESSAGE));
        let (socket, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), true)
            .await
            .map_err(|error| CdpError::Connect {
                url: url.to_owned(),
                why: error.to_string(),
            })?;
        let (mut sink, mut stream) = socket.split();
        let (out, mut queue) = mpsc::unbounded_channel::<Message>();
        let shared = Arc::new(Shared::default());
        tokio::spawn(async move {
            while let Some(message) = queue.recv().await {
                if sink.send(message).await.is_err() {
                    break;
                }
            }
            let _ = sink.close().await;
        });
        let reader = Arc::clone(&shared);
        let closer = out.clone();
        tokio::spawn(async move {
            while let Some(message) = stream.next().await {
                match message {
                    Ok(Message::Text(text)) => reader.dispatch(text.as_str()),
                    Ok(Message::Close(_)) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            reader.close();
            // The writer ends with the last sender; this one is the reader's.
            drop(closer);
        });
        Ok(Connection {
            out,
            shared,
            next_id: Arc::new(AtomicU64::new(1)),
        })
    }

    /// Whether the connection closed.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::SeqCst)
    }

    /// Sends `method` (to `session`, or to the browser) and waits for its result.
    pub async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, CdpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (answer, result) = oneshot::channel();
        self.shared.pending().insert(id, answer);
        // Closed after the insert: the reader's close either saw the entry and dropped it, or
        // ran before it, and then this sees `closed`.
        if self.is_closed() {
            self.shared.pending().remove(&id);
            return Err(CdpError::Closed);
        }
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = Value::from(session);
        }
        if self.out.send(Message::text(message.to_string())).is_err() {
            self.shared.pending().remove(&id);
            return Err(CdpError::Closed);
        }
        match result.await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(message)) => Err(CdpError::Command {
                method: method.to_owned(),
                message,
            }),
            Err(_) => Err(CdpError::Closed),
        }
    }

    /// Routes `session`'s events to `events` (until [`Connection::forget`]).
    pub fn route(&self, session: &str, events: mpsc::UnboundedSender<Event>) {
        if !self.is_closed() {
            self.shared.sessions().insert(session.to_owned(), events);
        }
    }

    /// Stops routing `session`'s events.
    pub fn forget(&self, session: &str) {
        self.shared.sessions().remove(session);
    }
}

/// A field of a command's result as text.
pub(super) fn text_field(value: &Value, field: &str) -> Result<String, CdpError> {
    value
        .get(field)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| CdpError::Command {
            method: field.to_owned(),
            message: format!("the answer has no {field}"),
        })
}
