//! Fetching: the [`PageFetcher`] seam, and its HTTP implementation on reqwest (feature `net`).
//!
//! The crawler asks for one address at a time and follows redirects itself, so that chains
//! and loops are findings and every hop passes the same checks. [`HttpFetcher`] reaches only
//! what the egress guard of [`crate::net`] allows (unless private targets are allowed).

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use url::Url;

/// Why a fetch failed (no HTTP answer).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The address is, or resolves to, a private or otherwise forbidden network.
    #[error("{0} is or resolves to a private or reserved address, which is not reached")]
    Forbidden(String),
    /// No answer in time.
    #[error("timed out")]
    Timeout,
    /// Anything else: DNS, connection, TLS, protocol.
    #[error("{0}")]
    Network(String),
}

impl FetchError {
    /// The failure as a metric label: `forbidden`, `timeout` or `network`.
    pub fn kind(&self) -> &'static str {
        match self {
            FetchError::Forbidden(_) => "forbidden",
            FetchError::Timeout => "timeout",
            FetchError::Network(_) => "network",
        }
    }
}

/// The body of an answer, read chunk by chunk.
#[async_trait]
pub trait BodyStream: Send {
    /// The next chunk, or `None` at the end.
    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, FetchError>;
}

/// An answer to one request (redirects not followed).
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// `Location`, for redirects.
    pub location: Option<String>,
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// `Retry-After` in seconds, for 429 and 503.
    pub retry_after: Option<Duration>,
    /// `X-Robots-Tag`.
    pub robots_tag: Option<String>,
    /// `Refresh` (a redirect when it names an address, as browsers follow it).
    pub refresh: Option<String>,
    /// The body.
    pub body: Box<dyn BodyStream>,
}

impl fmt::Debug for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Answer")
            .field("status", &self.status)
            .field("location", &self.location)
            .field("content_type", &self.content_type)
            .finish_non_exhaustive()
    }
}

/// What the crawler needs of the network: one request, redirects not followed.
#[async_trait]
pub trait PageFetcher: Send + Sync + fmt::Debug {
    /// `GET url`.
    async fn get(&self, url: &Url) -> Result<Answer, FetchError>;

    /// `HEAD url`, for checking links the crawler does not read. The default sends a `GET`
    /// (whose body the caller leaves unread).
    async fn head(&self, url: &Url) -> Result<Answer, FetchError> {
        self.get(url).await
    }
}

pub use crate::net::{is_private_literal, is_public};
#[cfg(feature = "net")]
pub use http::HttpFetcher;

#[cfg(feature = "net")]
mod http {
    use std::sync::Arc;
    use std::time::Duration;

    use async_trait::async_trait;
    use url::Url;

    use super::{is_private_literal, Answer, BodyStream, FetchError, PageFetcher};
    use crate::net::{classify, Outbound, PublicOnly};

    /// A failed request as the crawler reports it.
    fn fetch_error(error: &reqwest::Error) -> FetchError {
        match classify(error) {
            Outbound::Refused(host) => FetchError::Forbidden(host),
            Outbound::Timeout => FetchError::Timeout,
            Outbound::Network(text) => FetchError::Network(text),
        }
    }

    /// The HTTP fetcher: reqwest with rustls, no redirects, no cookies, a user agent of its
    /// own, and time limits.
    #[derive(Debug, Clone)]
    pub struct HttpFetcher {
        client: reqwest::Client,
        allow_private: bool,
    }

    impl HttpFetcher {
        /// A fetcher that sends `user_agent`, gives each request `timeout` (connecting, and
        /// the whole answer), and reaches private addresses only if `allow_private`.
        pub fn new(user_agent: &str, timeout: Duration, allow_private: bool) -> Self {
            let mut builder = reqwest::Client::builder()
                .user_agent(user_agent)
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(timeout.min(Duration::from_secs(5)))
                .timeout(timeout)
                .pool_max_idle_per_host(8)
                .no_proxy();
            if !allow_private {
                builder = builder.dns_resolver(Arc::new(PublicOnly));
            }
            let client = builder.build().unwrap_or_else(|_| reqwest::Client::new());
            HttpFetcher {
                client,
                allow_private,
            }
        }
    }

    /// The body of a reqwest response.
    struct ReqwestBody(reqwest::Response);

    #[async_trait]
    impl BodyStream for ReqwestBody {
        async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, FetchError> {
            match self.0.chunk().await {
                Ok(chunk) => Ok(chunk.map(|bytes| bytes.to_vec())),
                Err(error) => Err(fetch_error(&error)),
            }
        }
    }

    impl HttpFetcher {
        /// Sends one request of `method`, refusing private literals up front (names are
        /// refused by the resolver).
        async fn send(&self, method: reqwest::Method, url: &Url) -> Result<Answer, FetchError> {
            if !self.allow_private && is_private_literal(url) {
                return Err(FetchError::Forbidden(
                    url.host_str().unwrap_or("").to_owned(),
                ));
            }
            let response = self
                .client
                .request(method, url.as_str())
                .header(
                    reqwest::header::ACCEPT,
                    "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.5",
                )
                .send()
                .await
                .map_err(|e| fetch_error(&e))?;
            let header = |name: reqwest::header::HeaderName| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            let retry_after = header(reqwest::header::RETRY_AFTER)
                .and_then(|v| super::super::headers::retry_after(&v));
            Ok(Answer {
                status: response.status().as_u16(),
                location: header(reqwest::header::LOCATION),
                content_type: header(reqwest::header::CONTENT_TYPE),
                retry_after,
                robots_tag: header(reqwest::header::HeaderName::from_static("x-robots-tag")),
                refresh: header(reqwest::header::REFRESH),
                body: Box::new(ReqwestBody(response)),
            })
        }
    }

    #[async_trait]
    impl PageFetcher for HttpFetcher {
        async fn get(&self, url: &Url) -> Result<Answer, FetchError> {
            self.send(reqwest::Method::GET, url).await
        }

        async fn head(&self, url: &Url) -> Result<Answer, FetchError> {
            self.send(reqwest::Method::HEAD, url).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_reserved_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "240.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "64:ff9b::a00:1",
            "2001:db8::1",
            "ff02::1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }
}
