//! One page rendered in a browser context: a new tab, every request it makes paused and
//! judged, the document served from the crawler's answer, the load and the network's quiet
//! waited for, the DOM read, the tab closed.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;
use url::Url;

use super::cdp::{text_field, CdpError, Connection, Event};
use crate::crawl::render::{
    Refusal, RefusedRequest, RenderError, RenderInput, Rendered, SessionOptions,
};
use crate::net::is_public;

/// The most exceptions and refused requests kept of one page.
const KEEP: usize = 20;

/// What the page's rendering is allowed and how long it waits.
#[derive(Debug, Clone, Copy)]
pub(super) struct PageRules {
    /// Private and reserved addresses may be reached.
    pub allow_private: bool,
    /// How long the network must be quiet after the load event.
    pub quiet: Duration,
    /// The longest DOM read, in UTF-16 code units (the crawler's body limit).
    pub dom_limit: usize,
}

fn browser_error(error: CdpError) -> RenderError {
    match error {
        CdpError::Closed => RenderError::Crashed("the DevTools connection closed".into()),
        other => RenderError::Browser(other.to_string()),
    }
}

/// A page that did not render, and whether its browser is to be restarted (it hung).
#[derive(Debug)]
pub(super) struct Failure {
    pub error: RenderError,
    pub restart: bool,
}

impl From<RenderError> for Failure {
    fn from(error: RenderError) -> Self {
        Failure {
            error,
            restart: false,
        }
    }
}

/// Renders `input` in a new tab of `context`.
pub(super) async fn render(
    connection: &Connection,
    context: &str,
    input: &RenderInput,
    options: &SessionOptions,
    rules: PageRules,
) -> Result<Rendered, Failure> {
    let created = connection
        .call(
            None,
            "Target.createTarget",
            json!({ "url": "about:blank", "browserContextId": context }),
        )
        .await
        .map_err(browser_error)?;
    let target = text_field(&created, "targetId").map_err(browser_error)?;
    let mut page = Page {
        connection,
        target: &target,
        input,
        options,
        rules,
        sessions: Vec::new(),
        state: State::default(),
        hosts: HashMap::new(),
    };
    let outcome = tokio::time::timeout(options.page_timeout, page.run()).await;
    for session in &page.sessions {
        connection.forget(session);
    }
    // The tab goes whatever happened; a browser that cannot close it within a few seconds is
    // not well, which the caller learns from the error.
    let closed = tokio::time::timeout(
        Duration::from_secs(5),
        connection.call(None, "Target.closeTarget", json!({ "targetId": target })),
    )
    .await;
    match outcome {
        Ok(rendered) => rendered.map_err(Failure::from),
        Err(_) if !matches!(closed, Ok(Ok(_))) => Err(Failure {
            error: RenderError::Crashed(format!(
                "the browser hung: the page took longer than {:?} and its tab did not close",
                options.page_timeout
            )),
            restart: true,
        }),
        Err(_) => Err(RenderError::Timeout(options.page_timeout).into()),
    }
}

/// What the page's events have told so far.
#[derive(Debug, Default)]
struct State {
    document_served: bool,
    loaded: bool,
    in_flight: HashSet<String>,
    last_activity: Option<Instant>,
    rendered: Rendered,
    refused_by_kind: HashMap<Refusal, usize>,
    crashed: bool,
}

struct Page<'a> {
    connection: &'a Connection,
    target: &'a str,
    input: &'a RenderInput,
    options: &'a SessionOptions,
    rules: PageRules,
    sessions: Vec<String>,
    state: State,
    /// Host names already judged by the egress rule.
    hosts: HashMap<String, bool>,
}

/// The domains every session of the page (the tab, its workers and out-of-process frames)
/// enables: every request paused for judgement, the network followed, WebSockets (which
/// DevTools cannot pause) asked to be blocked, and new workers and frames held until they
/// are set up the same way. The WebSocket block does not hold in Chromium 156 (a test shows
/// a socket to loopback opening): WebSockets are the one kind of request the egress rule
/// does not reach yet (docs/crawler.md says so).
async fn set_up(connection: &Connection, session: &str, top: bool) -> Result<(), CdpError> {
    let call = |method: &'static str, params: Value| connection.call(Some(session), method, params);
    let fetch = call(
        "Fetch.enable",
        json!({ "patterns": [{ "urlPattern": "*", "requestStage": "Request" }] }),
    );
    let network = call("Network.enable", json!({}));
    let sockets = call(
        "Network.setBlockedURLs",
        json!({
            "urls": ["ws://*", "wss://*"],
            "urlPatterns": [
                { "urlPattern": "ws://*:*", "block": true },
                { "urlPattern": "wss://*:*", "block": true }
            ]
        }),
    );
    let attach = call(
        "Target.setAutoAttach",
        json!({ "autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true }),
    );
    let runtime = call("Runtime.enable", json!({}));
    let (fetch, network, sockets, attach, runtime) =
        tokio::join!(fetch, network, sockets, attach, runtime);
    fetch?;
    network?;
    // Workers have no Network.setBlockedURLs in every version; their sockets are still
    // judged by the frame that created them.
    if top {
        sockets?;
    }
    attach?;
    runtime?;
    if top {
        call("Page.enable", json!({})).await?;
    }
    Ok(())
}

impl Page<'_> {
    async fn run(&mut self) -> Result<Rendered, RenderError> {
        let attached = self
            .connection
            .call(
                None,
                "Target.attachToTarget",
                json!({ "targetId": self.target, "flatten": true }),
            )
            .await
            .map_err(browser_error)?;
        let session = text_field(&attached, "sessionId").map_err(browser_error)?;
        let (events, mut incoming) = mpsc::unbounded_channel();
        self.connection.route(&session, events.clone());
        self.sessions.push(session.clone());
        set_up(self.connection, &session, true)
            .await
            .map_err(browser_error)?;

        let navigate = self.connection.call(
            Some(&session),
            "Page.navigate",
            json!({ "url": self.input.url.as_str() }),
        );
        tokio::pin!(navigate);
        let mut navigated = false;
        // A page that keeps the network busy (a long poll, an event stream) is read as it
        // stands a quarter of its time limit before the limit.
        let settle_by = Instant::now() + self.options.page_timeout * 3 / 4;
        loop {
            let quiet_at = self.quiet_at();
            tokio::select! {
                answer = &mut navigate, if !navigated => {
                    navigated = true;
                    let answer = answer.map_err(browser_error)?;
                    if let Some(error) = answer.get("errorText").and_then(Value::as_str) {
                        return Err(RenderError::Browser(format!("the page did not load: {error}")));
                    }
                }
                event = incoming.recv() => {
                    let Some(event) = event else {
                        return Err(RenderError::Crashed("the DevTools connection closed".into()));
                    };
                    self.on_event(event, &events).await?;
                    if self.state.crashed {
                        return Err(RenderError::Crashed("the page's renderer process crashed".into()));
                    }
                }
                () = sleep_until(quiet_at), if quiet_at.is_some() => break,
                () = tokio::time::sleep_until(settle_by) => {
                    if !self.state.document_served {
                        return Err(RenderError::Timeout(self.options.page_timeout));
                    }
                    self.state.rendered.cut_short = true;
                    break;
                }
            }
            if self.state.rendered.bytes > self.options.page_bytes {
                self.state.rendered.cut_short = true;
                let _ = self
                    .connection
                    .call(Some(&session), "Page.stopLoading", json!({}))
                    .await;
                break;
            }
        }
        let html = self.read_dom(&session).await?;
        let mut rendered = std::mem::take(&mut self.state.rendered);
        rendered.html = html;
        Ok(rendered)
    }

    /// When the page counts as rendered: after the load event, once no request has been in
    /// flight for the quiet period.
    fn quiet_at(&self) -> Option<Instant> {
        if !self.state.loaded || !self.state.in_flight.is_empty() {
            return None;
        }
        Some(self.state.last_activity.unwrap_or_else(Instant::now) + self.rules.quiet)
    }

    async fn read_dom(&self, session: &str) -> Result<String, RenderError> {
        let expression = format!(
            "(() => {{ const d = document; const t = d.doctype ? '<!DOCTYPE ' + d.doctype.name + '>' : ''; \
             const h = t + (d.documentElement ? d.documentElement.outerHTML : ''); \
             return h.length > {limit} ? h.slice(0, {limit}) : h; }})()",
            limit = self.rules.dom_limit
        );
        let evaluated = self
            .connection
            .call(
                Some(session),
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true }),
            )
            .await
            .map_err(browser_error)?;
        evaluated
            .pointer("/result/value")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| RenderError::Browser("the page's DOM could not be read".into()))
    }

    async fn on_event(
        &mut self,
        event: Event,
        events: &mpsc::UnboundedSender<Event>,
    ) -> Result<(), RenderError> {
        let params = &event.params;
        let text = |pointer: &str| {
            params
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        match event.method.as_str() {
            "Fetch.requestPaused" => self.judge(&event.session, params).await,
            "Network.requestWillBeSent" => {
                self.state.in_flight.insert(text("/requestId"));
                self.state.rendered.requests = self.state.rendered.requests.saturating_add(1);
                self.state.last_activity = Some(Instant::now());
            }
            "Network.loadingFinished" => {
                self.state.in_flight.remove(&text("/requestId"));
                let bytes = params
                    .get("encodedDataLength")
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0);
                // A count of bytes, as DevTools sends it (a float).
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let bytes = bytes.max(0.0) as u64;
                self.state.rendered.bytes = self.state.rendered.bytes.saturating_add(bytes);
                self.state.last_activity = Some(Instant::now());
            }
            "Network.loadingFailed" => {
                self.state.in_flight.remove(&text("/requestId"));
                self.state.last_activity = Some(Instant::now());
            }
            "Page.loadEventFired" => {
                self.state.loaded = true;
                self.state.last_activity = Some(Instant::now());
            }
            "Runtime.exceptionThrown" => {
                let details = params.get("exceptionDetails").unwrap_or(&Value::Null);
                let message = details
                    .pointer("/exception/description")
                    .and_then(Value::as_str)
                    .or_else(|| details.get("text").and_then(Value::as_str))
                    .unwrap_or("an exception without a message");
                // The first line: the message, not the stack.
                let message = message.lines().next().unwrap_or_default();
                if self.state.rendered.exceptions.len() < KEEP {
                    self.state
                        .rendered
                        .exceptions
                        .push(crate::text::excerpt(message, 300));
                }
            }
            "Page.javascriptDialogOpening" => {
                let _ = self
                    .connection
                    .call(
                        Some(&event.session),
                        "Page.handleJavaScriptDialog",
                        json!({ "accept": false }),
                    )
                    .await;
            }
            "Target.attachedToTarget" => {
                let child = text("/sessionId");
                if !child.is_empty() {
                    self.connection.route(&child, events.clone());
                    self.sessions.push(child.clone());
                    // A worker or frame that cannot be set up is not let run unjudged.
                    if set_up(self.connection, &child, false).await.is_ok() {
                        let _ = self
                            .connection
                            .call(Some(&child), "Runtime.runIfWaitingForDebugger", json!({}))
                            .await;
                    } else {
                        let _ = self
                            .connection
                            .call(
                                None,
                                "Target.closeTarget",
                                json!({ "targetId": text("/targetInfo/targetId") }),
                            )
                            .await;
                    }
                }
            }
            "Inspector.targetCrashed" | "Target.targetCrashed" => self.state.crashed = true,
            "Target.detachedFromTarget" if text("/sessionId") == self.sessions[0] => {
                self.state.crashed = true;
            }
            _ => {}
        }
        Ok(())
    }

    /// Decides about one paused request: the tab's first document is the crawler's answer;
    /// anything else goes on only where the egress rule, robots.txt and the byte budget let
    /// it.
    async fn judge(&mut self, session: &str, params: &Value) {
        let Some(request_id) = params.get("requestId").and_then(Value::as_str) else {
            return;
        };
        let address = params
            .pointer("/request/url")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let resource_type = params
            .get("resourceType")
            .and_then(Value::as_str)
            .unwrap_or("Other");
        let top_document = resource_type == "Document"
            && params.get("frameId").and_then(Value::as_str) == Some(self.target);
        if top_document && !self.state.document_served {
            self.state.document_served = true;
            return self.serve_document(session, request_id).await;
        }
        let refusal = if top_document {
            Some(Refusal::Navigation)
        } else if self.state.rendered.bytes > self.options.page_bytes {
            Some(Refusal::Budget)
        } else {
            match Url::parse(address) {
                Ok(url) if matches!(url.scheme(), "data" | "blob") => None,
                Ok(url) if matches!(url.scheme(), "http" | "https") => {
                    if !self.reachable(&url).await {
                        Some(Refusal::Egress)
                    } else if !(self.options.robots)(&url) {
                        Some(Refusal::Robots)
                    } else {
                        None
                    }
                }
                _ => Some(Refusal::Egress),
            }
        };
        let Some(refusal) = refusal else {
            let _ = self
                .connection
                .call(
                    Some(session),
                    "Fetch.continueRequest",
                    json!({ "requestId": request_id }),
                )
                .await;
            return;
        };
        let reason = match refusal {
            Refusal::Egress => "AddressUnreachable",
            _ => "BlockedByClient",
        };
        let _ = self
            .connection
            .call(
                Some(session),
                "Fetch.failRequest",
                json!({ "requestId": request_id, "errorReason": reason }),
            )
            .await;
        let kept = self.state.refused_by_kind.entry(refusal).or_default();
        if *kept < KEEP {
            *kept += 1;
            self.state.rendered.refused.push(RefusedRequest {
                url: crate::text::excerpt(address, 2048),
                resource_type: resource_type.to_owned(),
                why: refusal,
            });
        }
    }

    async fn serve_document(&mut self, session: &str, request_id: &str) {
        let mut headers = Vec::new();
        if let Some(content_type) = &self.input.content_type {
            headers.push(json!({ "name": "Content-Type", "value": content_type }));
        }
        let body = base64::engine::general_purpose::STANDARD.encode(&self.input.body);
        let _ = self
            .connection
            .call(
                Some(session),
                "Fetch.fulfillRequest",
                json!({
                    "requestId": request_id,
                    "responseCode": self.input.status,
                    "responseHeaders": headers,
                    "body": body,
                }),
            )
            .await;
    }

    /// The egress rule: an IP literal must be public, and a host name must resolve to public
    /// addresses only (unless private targets are allowed).
    async fn reachable(&mut self, url: &Url) -> bool {
        if self.rules.allow_private {
            return true;
        }
        let Some(host) = url.host() else {
            return false;
        };
        match host {
            url::Host::Ipv4(ip) => is_public(IpAddr::V4(ip)),
            url::Host::Ipv6(ip) => is_public(IpAddr::V6(ip)),
            url::Host::Domain(name) => {
                if let Some(known) = self.hosts.get(name) {
                    return *known;
                }
                let port = url.port_or_known_default().unwrap_or(80);
                let verdict = match tokio::net::lookup_host((name, port)).await {
                    Ok(addresses) => {
                        let addresses: Vec<_> = addresses.collect();
                        !addresses.is_empty() && addresses.iter().all(|a| is_public(a.ip()))
                    }
                    Err(_) => false,
                };
                self.hosts.insert(name.to_owned(), verdict);
                verdict
            }
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
