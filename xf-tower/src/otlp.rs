//! Exporting spans over OTLP/HTTP (feature `otlp`): xf's `job_attempt`, `webhook_delivery`,
//! `publish_step` and `request` spans, with the host's own, to a tracing backend (an
//! OpenTelemetry Collector, Jaeger, Tempo, …).
//!
//! [`layer`] makes a `tracing-subscriber` layer that turns spans into OpenTelemetry spans and
//! sends them in batches, as protobuf, to the backend's `/v1/traces` endpoint; the host adds
//! it to its subscriber and keeps the [`Exporter`] until it stops, then calls
//! [`Exporter::shutdown`], which sends what is still waiting:
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//! use tracing_subscriber::util::SubscriberInitExt;
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let (otlp, exporter) = xf_tower::otlp::layer("http://collector:4318/v1/traces", "my-app")?;
//! tracing_subscriber::registry()
//!     .with(otlp)
//!     .with(tracing_subscriber::fmt::layer())
//!     .init();
//! // ... serve ...
//! exporter.shutdown();
//! # Ok(()) }
//! ```
//!
//! Batches go out through the workspace's HTTP client (reqwest, rustls) on the Tokio runtime
//! that [`layer`] was called on, each bounded by a 10-second time-out; a backend that does
//! not answer loses spans, never blocks a request.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use tracing_opentelemetry::OpenTelemetryLayer;

/// How long one batch may take to reach the backend.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest answer read from the backend (it answers with a small protobuf or nothing).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Why [`layer`] could not make the exporter.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Not called inside a Tokio runtime.
    #[error("the OTLP exporter needs a Tokio runtime: call xf_tower::otlp::layer inside one")]
    NoRuntime,
    /// The endpoint or the HTTP client could not be set up.
    #[error("the OTLP exporter: {0}")]
    Build(String),
}

/// The span exporter behind a [`layer`]: keep it while the process runs.
#[derive(Debug)]
pub struct Exporter {
    provider: SdkTracerProvider,
}

impl Exporter {
    /// Sends the spans still waiting and stops exporting.
    pub fn shutdown(self) {
        if let Err(error) = self.provider.shutdown() {
            tracing::warn!(%error, "the OTLP exporter did not shut down cleanly");
        }
    }
}

/// A layer that exports spans to `endpoint` (the backend's full traces URL, such as
/// `http://collector:4318/v1/traces`) as the service `service_name`, and the exporter that
/// sends them. Must be called inside a Tokio runtime, whose tasks post the batches.
pub fn layer<S>(
    endpoint: &str,
    service_name: &str,
) -> Result<(OpenTelemetryLayer<S, SdkTracer>, Exporter), Error>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
    let http = reqwest::Client::builder()
        .timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|e| Error::Build(e.to_string()))?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(Client { http, runtime })
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(endpoint)
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|e| Error::Build(e.to_string()))?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            Resource::builder()
                .with_service_name(service_name.to_owned())
                .build(),
        )
        .build();
    let tracer = provider.tracer("xf");
    Ok((
        tracing_opentelemetry::layer().with_tracer(tracer),
        Exporter { provider },
    ))
}

/// The exporter's HTTP client: reqwest on the host's Tokio runtime. The SDK's batch processor
/// runs on a thread of its own, outside any runtime, so each request is spawned onto the
/// runtime and awaited from there.
#[derive(Debug)]
struct Client {
    http: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

#[async_trait]
impl opentelemetry_http::HttpClient for Client {
    async fn send_bytes(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, opentelemetry_http::HttpError> {
        let http = self.http.clone();
        let sent = self.runtime.spawn(async move {
            let (parts, body) = request.into_parts();
            let mut answer = http
                .request(parts.method, parts.uri.to_string())
                .headers(parts.headers)
                .body(body)
                .send()
                .await?;
            let mut response = http::Response::builder().status(answer.status());
            if let Some(headers) = response.headers_mut() {
                *headers = answer.headers().clone();
            }
            let mut body = Vec::new();
            while let Some(chunk) = answer.chunk().await? {
                if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            Ok::<_, opentelemetry_http::HttpError>(response.body(Bytes::from(body))?)
        });
        sent.await?
    }
}
