//! The network side of webhooks: checking a target and posting a delivery.
//!
//! [`HttpTransport`] (feature `net`) posts with reqwest and rustls: 15 s for the whole
//! attempt, redirects not followed (a `3xx` is a failed attempt like any other non-`2xx`), at
//! most [`RESPONSE_BODY_CAP`] bytes of the answer read, and, unless the host allows private
//! targets, no connection to a loopback, private, link-local, CGNAT, metadata or otherwise
//! reserved address: IP literals are refused before connecting and names are resolved by a
//! resolver that keeps only public addresses, which are the only ones the connection may use.
//! The same checks run when a webhook is registered ([`WebhookTransport::check_target`]), so
//! a bad URL is a 400 then rather than a failed delivery later: an IP literal, or a name any
//! of whose addresses is not public. (A name that does not resolve at that moment is taken;
//! its deliveries get no answer until it does.)

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use url::Url;

/// How long an attempt may take, connecting included.
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(15);
/// The most bytes of a receiver's answer that are read (and then dropped).
pub const RESPONSE_BODY_CAP: usize = 16 * 1024;

/// One delivery attempt to send.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// The webhook's URL.
    pub url: Url,
    /// `webhook-id`, `webhook-timestamp`, `webhook-signature` and the like.
    pub headers: Vec<(&'static str, String)>,
    /// The JSON body.
    pub body: Vec<u8>,
}

/// What came of an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reply {
    /// The receiver answered.
    Answered {
        /// Its status.
        status: u16,
        /// Its `Retry-After`, if it sent one that parses.
        retry_after: Option<Duration>,
    },
    /// No answer: refused address, DNS, connection, TLS or time-out.
    NoAnswer(String),
}

/// Why a URL cannot be a webhook's target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TargetRefused(pub String);

/// What webhooks need of the network.
#[async_trait]
pub trait WebhookTransport: Send + Sync + fmt::Debug {
    /// Checks where `url` leads, at registration: an error says why it may not be a target.
    async fn check_target(&self, url: &Url) -> Result<(), TargetRefused>;

    /// Posts one attempt.
    async fn post(&self, outgoing: Outgoing) -> Reply;
}

#[cfg(feature = "webhooks")]
pub use http::HttpTransport;

#[cfg(feature = "webhooks")]
mod http {
    use std::sync::Arc;

    use async_trait::async_trait;
    use url::Url;

    use super::{
        Outgoing, Reply, TargetRefused, WebhookTransport, DELIVERY_TIMEOUT, RESPONSE_BODY_CAP,
    };
    use crate::net::{classify, is_private_literal, is_public, PublicOnly};
    use crate::webhooks::schedule::parse_retry_after;

    /// How long a registration waits for the resolver.
    const RESOLVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

    /// Webhook deliveries over HTTP; see the module documentation.
    #[derive(Debug, Clone)]
    pub struct HttpTransport {
        client: reqwest::Client,
        allow_private: bool,
    }

    impl HttpTransport {
        /// A transport that sends `user_agent` and reaches private addresses only if
        /// `allow_private`.
        pub fn new(user_agent: &str, allow_private: bool) -> Self {
            let mut builder = reqwest::Client::builder()
                .user_agent(user_agent)
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(DELIVERY_TIMEOUT)
                .timeout(DELIVERY_TIMEOUT)
                .pool_max_idle_per_host(64)
                .no_proxy();
            if !allow_private {
                builder = builder.dns_resolver(Arc::new(PublicOnly));
            }
            let client = builder.build().unwrap_or_else(|_| reqwest::Client::new());
            HttpTransport {
                client,
                allow_private,
            }
        }

        async fn send(&self, outgoing: Outgoing) -> Result<Reply, reqwest::Error> {
            let mut request = self
                .client
                .post(outgoing.url.as_str())
                .header(reqwest::header::CONTENT_TYPE, "application/json");
            for (name, value) in outgoing.headers {
                request = request.header(name, value);
            }
            let mut response = request.body(outgoing.body).send().await?;
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| parse_retry_after(v, chrono::Utc::now()));
            // Read a little of the answer, so a keep-alive connection can be reused when the
            // body is short, and never more.
            let mut read = 0;
            while read < RESPONSE_BODY_CAP {
                match response.chunk().await {
                    Ok(Some(chunk)) => read += chunk.len(),
                    Ok(None) | Err(_) => break,
                }
            }
            Ok(Reply::Answered {
                status,
                retry_after,
            })
        }
    }

    #[async_trait]
    impl WebhookTransport for HttpTransport {
        async fn check_target(&self, url: &Url) -> Result<(), TargetRefused> {
            if self.allow_private {
                return Ok(());
            }
            if is_private_literal(url) {
                return Err(TargetRefused(
                    "is a private or reserved address; webhooks must reach a public one".to_owned(),
                ));
            }
            let Some(url::Host::Domain(name)) = url.host() else {
                return Ok(());
            };
            let port = url.port_or_known_default().unwrap_or(443);
            let resolved = tokio::time::timeout(
                RESOLVE_TIMEOUT,
                tokio::net::lookup_host((name.to_owned(), port)),
            )
            .await;
            // A name that does not resolve now is taken: DNS may be down for a moment, and
            // every delivery checks the addresses it connects to anyway.
            let Ok(Ok(addresses)) = resolved else {
                return Ok(());
            };
            let addresses: Vec<std::net::SocketAddr> = addresses.collect();
            if addresses.iter().any(|a| !is_public(a.ip())) {
                return Err(TargetRefused(format!(
                    "the host name {name} resolves to a private or reserved address; webhooks must reach a public one"
                )));
            }
            Ok(())
        }

        async fn post(&self, outgoing: Outgoing) -> Reply {
            if !self.allow_private && is_private_literal(&outgoing.url) {
                return Reply::NoAnswer(format!(
                    "{} is a private or reserved address, which is not reached",
                    outgoing.url.host_str().unwrap_or("")
                ));
            }
            match self.send(outgoing).await {
                Ok(reply) => reply,
                Err(error) => Reply::NoAnswer(classify(&error).to_string()),
            }
        }
    }
}
