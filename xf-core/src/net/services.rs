//! Reading HTTP answers of the services xf calls (Google, the social platforms): the status,
//! the headers, `Retry-After`, and a body read up to a size.

use std::time::Duration;

/// An answer, read whole (up to the caller's limit).
#[derive(Debug)]
pub(crate) struct Answer {
    /// The status code.
    pub status: u16,
    /// `Retry-After`, when it is a number of seconds.
    pub retry_after: Option<Duration>,
    /// The headers.
    pub headers: reqwest::header::HeaderMap,
    /// The body.
    pub body: Vec<u8>,
}

impl Answer {
    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// A header's value, if it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name)?.to_str().ok()
    }
}

/// Why no answer could be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ExchangeError {
    /// No connection, no answer in time, or the body broke off.
    #[error("{0}")]
    Unreachable(String),
    /// The body is larger than the limit.
    #[error("the answer is larger than {0} bytes")]
    TooLarge(usize),
}

fn unreachable(error: reqwest::Error) -> ExchangeError {
    ExchangeError::Unreachable(if error.is_timeout() {
        "no answer in time".to_owned()
    } else {
        error.to_string()
    })
}

/// Sends `request` and reads its answer, at most `max_bytes` of body.
pub(crate) async fn exchange(
    request: reqwest::RequestBuilder,
    max_bytes: usize,
) -> Result<Answer, ExchangeError> {
    let mut response = request.send().await.map_err(unreachable)?;
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let headers = response.headers().clone();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
        if body.len() + chunk.len() > max_bytes {
            return Err(ExchangeError::TooLarge(max_bytes));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Answer {
        status,
        retry_after,
        headers,
        body,
    })
}

/// The HTTP client of a service: its own user agent, time-outs, and no redirects.
pub(crate) fn client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .user_agent(concat!("xf/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(timeout)
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap_or_else(|_| reqwest::Client::new())
}
