//! The one error type of the library. `xf-tower` maps each variant to an HTTP status in one
//! place; the status each variant documents below is that mapping.

use std::fmt;

use serde::Serialize;

/// A cause of a failure, kept with its own causes so the log shows the whole chain
/// ([`Chain`]). Anything that is an error converts, and so do `String` and `&str`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// One problem with one input field, listed in `error.details`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FieldError {
    /// The field: a JSON path such as `scans[3].maxPages`, a query parameter, or a header.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

/// Everything a use case can fail with.
///
/// New variants may come in a minor release: a host that matches on it keeps a wildcard arm
/// (and can read [`Error::code`], which every variant has). Outages and bugs keep their cause
/// as [`std::error::Error::source`], down to the driver's error; [`Chain`] prints it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// 400 `validation_error`: the request is malformed or a value is out of range.
    #[error("{message}")]
    Validation {
        /// A summary for people.
        message: String,
        /// One entry per offending field.
        details: Vec<FieldError>,
    },
    /// 401 `api_key_invalid`: missing, unknown or revoked API key.
    #[error("the API key is missing, invalid or revoked")]
    ApiKeyInvalid,
    /// 401 `admin_token_invalid`: the admin API's bearer token is missing or wrong.
    #[error("the admin token is missing or invalid")]
    AdminTokenInvalid,
    /// 403 `plan_required`: the organization's plan lacks the entitlement.
    #[error("this API needs a plan with the {entitlement} entitlement ({plans})")]
    PlanRequired {
        /// The missing entitlement, e.g. `developerApi`.
        entitlement: &'static str,
        /// The plans of the default catalog that include it, for the message.
        plans: String,
    },
    /// 404 `not_found`: no such resource in this organization (or no such route).
    #[error("{0} not found")]
    NotFound(&'static str),
    /// 400 `job_not_cancellable`: the job already finished.
    #[error("the job is already {status}; only pending or processing jobs can be cancelled")]
    JobNotCancellable {
        /// The job's current status.
        status: &'static str,
    },
    /// 400 `gsc_not_configured`: the host has no Google OAuth client, so nothing can sync.
    #[error("{0}")]
    GscNotConfigured(String),
    /// 400 `gsc_not_linked`: no Google account is linked to the organization, or no Search
    /// Console site to the property.
    #[error("{0}")]
    GscNotLinked(String),
    /// 400 `gsc_token_revoked`: Google answered `invalid_grant` for the organization's
    /// refresh token; the account must be linked again.
    #[error(
        "Google refused the organization's refresh token (invalid_grant): access was revoked or has expired; link the Google account again (a connect link with provider google does)"
    )]
    GscTokenRevoked,
    /// 400 `gsc_site_inaccessible`: the linked Google account cannot read the property's
    /// Search Console site (Google's 403 or 404), or Google rejected the request.
    #[error("{0}")]
    GscSiteInaccessible(String),
    /// 429 `rate_limit` or 503 `unavailable`, with `Retry-After`: a third party (Google) is
    /// over its quota, failing, or did not answer in time.
    #[error("{message}")]
    Upstream {
        /// Whether it was the third party's rate limit (429) rather than a failure (503).
        rate_limited: bool,
        /// For people: what failed.
        message: String,
        /// Whole seconds to wait.
        retry_after_secs: u64,
    },
    /// 409 `upload_offset_mismatch`: a chunk sent for another offset than the upload's.
    #[error(
        "Upload-Offset must be the upload's offset, {offset}; ask with HEAD and resume from there"
    )]
    UploadOffsetMismatch {
        /// The upload's offset.
        offset: u64,
    },
    /// 460 `checksum_mismatch`: the chunk's bytes do not have the digest the client gave for
    /// them (`Upload-Checksum`); the chunk was dropped.
    #[error(
        "Upload-Checksum does not match the bytes received; the chunk was dropped, send it again"
    )]
    ChecksumMismatch,
    /// 409 `conflict`: the request collides with an existing resource.
    #[error("{0}")]
    Conflict(String),
    /// 409 `idempotency_key_in_use`: the first request with this key is still running.
    #[error("a request with this Idempotency-Key is still being processed; retry shortly")]
    IdempotencyKeyInUse,
    /// 422 `idempotency_key_reused`: the key was used with another method, path or body.
    #[error("this Idempotency-Key was already used with a different request")]
    IdempotencyKeyReused,
    /// 413 `payload_too_large`.
    #[error("request body exceeds the limit of {limit_bytes} bytes")]
    PayloadTooLarge {
        /// The limit that was exceeded.
        limit_bytes: u64,
    },
    /// 408 `request_timeout`: the request's body arrived slower than the configured minimum
    /// rate (see `RequestLimits`); what arrived was dropped.
    #[error("{0}")]
    RequestTimeout(String),
    /// 429 `too_many_uploads`, with `Retry-After`: the organization already has as many
    /// uploads in progress as this instance takes at once.
    #[error(
        "this organization already has {limit} uploads in progress, the most taken at once; \
         retry when one has finished"
    )]
    TooManyUploads {
        /// The configured number of uploads an organization may have in progress.
        limit: usize,
    },
    /// 429 `rate_limit`, with `Retry-After`.
    #[error("rate limit exceeded; retry in {retry_after_secs} seconds")]
    RateLimited {
        /// Whole seconds until the exceeded window resets.
        retry_after_secs: u64,
    },
    /// 429 `quota_exceeded`, with `Retry-After`: the monthly scan quota is spent.
    #[error(
        "the monthly scan quota of {limit} is used up; it renews in {retry_after_secs} seconds"
    )]
    QuotaExceeded {
        /// The plan's `scansPerMonth`.
        limit: u64,
        /// Whole seconds until the next UTC month.
        retry_after_secs: u64,
    },
    /// 503 `unavailable`, with `Retry-After`: storage (or the blob store) is unreachable.
    #[error("the service is temporarily unavailable; retry shortly")]
    Unavailable {
        /// The cause, for the log only ([`Error::unavailable`] makes one).
        source: BoxError,
    },
    /// 500 `internal_error`: a bug. The cause is logged, never sent ([`Error::internal`]
    /// makes one).
    #[error("internal error")]
    Internal {
        /// What went wrong, for the log only.
        source: BoxError,
    },
}

/// Seconds a client is told to wait after a storage outage.
pub const UNAVAILABLE_RETRY_AFTER_SECS: u64 = 5;

/// Every `error.code` a use case fails with, as [`Error::code`] gives them. (The HTTP edge adds
/// its own, such as `method_not_allowed`; the served documents list both as `ErrorBody.code`'s
/// enum.) A client should treat a code it does not know (one added later) as its HTTP
/// status's general meaning.
pub const ERROR_CODES: [&str; 22] = [
    "validation_error",
    "api_key_invalid",
    "admin_token_invalid",
    "plan_required",
    "not_found",
    "job_not_cancellable",
    "gsc_not_configured",
    "gsc_not_linked",
    "gsc_token_revoked",
    "gsc_site_inaccessible",
    "rate_limit",
    "unavailable",
    "upload_offset_mismatch",
    "checksum_mismatch",
    "conflict",
    "idempotency_key_in_use",
    "idempotency_key_reused",
    "payload_too_large",
    "request_timeout",
    "too_many_uploads",
    "quota_exceeded",
    "internal_error",
];

impl Error {
    /// The machine-readable code of the error envelope (one of [`ERROR_CODES`]).
    pub fn code(&self) -> &'static str {
        match self {
            Error::Validation { .. } => "validation_error",
            Error::ApiKeyInvalid => "api_key_invalid",
            Error::AdminTokenInvalid => "admin_token_invalid",
            Error::PlanRequired { .. } => "plan_required",
            Error::NotFound(_) => "not_found",
            Error::JobNotCancellable { .. } => "job_not_cancellable",
            Error::GscNotConfigured(_) => "gsc_not_configured",
            Error::GscNotLinked(_) => "gsc_not_linked",
            Error::GscTokenRevoked => "gsc_token_revoked",
            Error::GscSiteInaccessible(_) => "gsc_site_inaccessible",
            Error::Upstream {
                rate_limited: true, ..
            } => "rate_limit",
            Error::Upstream { .. } => "unavailable",
            Error::UploadOffsetMismatch { .. } => "upload_offset_mismatch",
            Error::ChecksumMismatch => "checksum_mismatch",
            Error::Conflict(_) => "conflict",
            Error::IdempotencyKeyInUse => "idempotency_key_in_use",
            Error::IdempotencyKeyReused => "idempotency_key_reused",
            Error::PayloadTooLarge { .. } => "payload_too_large",
            Error::RequestTimeout(_) => "request_timeout",
            Error::TooManyUploads { .. } => "too_many_uploads",
            Error::RateLimited { .. } => "rate_limit",
            Error::QuotaExceeded { .. } => "quota_exceeded",
            Error::Unavailable { .. } => "unavailable",
            Error::Internal { .. } => "internal_error",
        }
    }

    /// A bug: `cause` is logged with its chain of sources and never sent.
    pub fn internal(cause: impl Into<BoxError>) -> Self {
        Error::Internal {
            source: cause.into(),
        }
    }

    /// A bug met while `doing` something: logged as "`doing`: `cause`".
    pub fn internal_while(doing: impl Into<String>, cause: impl Into<BoxError>) -> Self {
        Self::internal(While::new(doing, cause))
    }

    /// An outage of storage: `cause` (the driver's error, say) is logged, the client is told
    /// to retry.
    pub fn unavailable(cause: impl Into<BoxError>) -> Self {
        Error::Unavailable {
            source: cause.into(),
        }
    }

    /// An outage met while `doing` something: logged as "`doing`: `cause`".
    pub fn unavailable_while(doing: impl Into<String>, cause: impl Into<BoxError>) -> Self {
        Self::unavailable(While::new(doing, cause))
    }

    /// A validation error about one field.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        let field = field.into();
        let message = message.into();
        Error::Validation {
            message: format!("{field}: {message}"),
            details: vec![FieldError { field, message }],
        }
    }

    /// A validation error about several fields.
    pub fn invalid_fields(details: Vec<FieldError>) -> Self {
        let message = details
            .iter()
            .map(|d| format!("{}: {}", d.field, d.message))
            .collect::<Vec<_>>()
            .join("; ");
        Error::Validation { message, details }
    }

    /// The `Retry-After` seconds this error asks for, if any.
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            Error::RateLimited { retry_after_secs } => Some(*retry_after_secs),
            Error::QuotaExceeded {
                retry_after_secs, ..
            } => Some(*retry_after_secs),
            Error::Unavailable { .. } | Error::TooManyUploads { .. } => {
                Some(UNAVAILABLE_RETRY_AFTER_SECS)
            }
            Error::Upstream {
                retry_after_secs, ..
            } => Some(*retry_after_secs),
            _ => None,
        }
    }

    /// Whether an idempotent request that failed with this error keeps its record, so that a
    /// retry with the same key replays the failure. Outcomes that a retry could change are
    /// not kept: bad input the client will correct, rate and quota limits that reset, and
    /// outages and bugs. What the request found (a missing property, a conflict, a job that
    /// can no longer be cancelled) is kept, like a success.
    pub fn kept_by_idempotency(&self) -> bool {
        match self {
            Error::NotFound(_)
            | Error::Conflict(_)
            | Error::JobNotCancellable { .. }
            | Error::PlanRequired { .. }
            | Error::ApiKeyInvalid
            | Error::AdminTokenInvalid
            | Error::IdempotencyKeyInUse
            | Error::IdempotencyKeyReused => true,
            Error::Validation { .. }
            | Error::PayloadTooLarge { .. }
            | Error::RequestTimeout(_)
            | Error::TooManyUploads { .. }
            | Error::RateLimited { .. }
            | Error::QuotaExceeded { .. }
            | Error::Unavailable { .. }
            | Error::Internal { .. }
            // Linking the account or the site, or Google recovering, changes the outcome.
            | Error::GscNotConfigured(_)
            | Error::GscNotLinked(_)
            | Error::GscTokenRevoked
            | Error::GscSiteInaccessible(_)
            | Error::Upstream { .. }
            | Error::UploadOffsetMismatch { .. }
            | Error::ChecksumMismatch => false,
        }
    }

    /// The field details of a validation error.
    pub fn details(&self) -> Option<&[FieldError]> {
        match self {
            Error::Validation { details, .. } if !details.is_empty() => Some(details),
            _ => None,
        }
    }
}

/// What a storage backend can fail with. Expected outcomes (a duplicate, a spent quota) are
/// variants here so that each backend reports them the same way. The driver's error, where
/// there is one, is the [`source`](std::error::Error::source) of `Unavailable` and `Internal`.
///
/// It is `Clone` (its causes are shared), so that one outage can answer every request that
/// waited on it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum StoreError {
    /// The backend cannot be reached; the request may succeed later.
    Unavailable(SharedError),
    /// A uniqueness rule was violated; names the rule.
    Duplicate(&'static str),
    /// A counted limit would be exceeded; names the limit.
    LimitReached(&'static str),
    /// Anything else: a bug or corrupt data.
    Internal(SharedError),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Unavailable(_) => f.write_str("storage unavailable"),
            StoreError::Duplicate(rule) => write!(f, "duplicate: {rule}"),
            StoreError::LimitReached(limit) => write!(f, "limit reached: {limit}"),
            StoreError::Internal(_) => f.write_str("storage error"),
        }
    }
}

/// The source is the cause itself (the driver's error, say), not the `Arc` that shares it,
/// so a caller can downcast it.
impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Unavailable(cause) | StoreError::Internal(cause) => Some(&**cause),
            StoreError::Duplicate(_) | StoreError::LimitReached(_) => None,
        }
    }
}

/// A cause that several errors share: [`StoreError`]'s.
pub type SharedError = std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>;

impl StoreError {
    /// Corrupt data or a bug, described by `cause` (a message or the driver's error).
    pub fn internal(cause: impl Into<BoxError>) -> Self {
        StoreError::Internal(cause.into().into())
    }

    /// The backend cannot be reached: `cause` says why.
    pub fn unavailable(cause: impl Into<BoxError>) -> Self {
        StoreError::Unavailable(cause.into().into())
    }
}

/// Two store errors are equal when they are of one kind and say the same: the rule or limit
/// they name, or the text of their causes' chains (causes are not comparable themselves).
impl PartialEq for StoreError {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (StoreError::Duplicate(a), StoreError::Duplicate(b))
            | (StoreError::LimitReached(a), StoreError::LimitReached(b)) => a == b,
            (StoreError::Unavailable(a), StoreError::Unavailable(b))
            | (StoreError::Internal(a), StoreError::Internal(b)) => {
                Chain(a.as_ref()).to_string() == Chain(b.as_ref()).to_string()
            }
            _ => false,
        }
    }
}

impl Eq for StoreError {}

impl From<StoreError> for Error {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Unavailable(_) => Error::unavailable(error),
            other => Error::internal(other),
        }
    }
}

/// A cause with what was being done when it happened: "writing to the blob store", over the
/// I/O error. Its [`Display`](fmt::Display) is what was being done; the cause is its source.
#[derive(Debug, thiserror::Error)]
#[error("{doing}")]
pub struct While {
    doing: String,
    #[source]
    source: BoxError,
}

impl While {
    /// `cause`, met while `doing` something.
    pub fn new(doing: impl Into<String>, cause: impl Into<BoxError>) -> Self {
        While {
            doing: doing.into(),
            source: cause.into(),
        }
    }
}

/// An error with its chain of sources, for the log: "storage unavailable: error
/// communicating with database: Connection refused (os error 111)".
#[derive(Debug)]
pub struct Chain<'a>(pub &'a (dyn std::error::Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // An error that prints its source in its own message (sqlx's do) is not repeated.
        let mut shown = self.0.to_string();
        f.write_str(&shown)?;
        let mut next = self.0.source();
        while let Some(cause) = next {
            let text = cause.to_string();
            if !shown.ends_with(&text) {
                write!(f, ": {text}")?;
            }
            shown = text;
            next = cause.source();
        }
        Ok(())
    }
}

/// The result type of the use cases.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// [`ERROR_CODES`] is exactly the codes the variants give.
    #[test]
    fn the_code_list_is_every_variants_code() {
        let every_variant = [
            Error::invalid("f", "m"),
            Error::ApiKeyInvalid,
            Error::AdminTokenInvalid,
            Error::PlanRequired {
                entitlement: "developerApi",
                plans: String::new(),
            },
            Error::NotFound("job"),
            Error::JobNotCancellable { status: "failed" },
            Error::GscNotConfigured(String::new()),
            Error::GscNotLinked(String::new()),
            Error::GscTokenRevoked,
            Error::GscSiteInaccessible(String::new()),
            Error::Upstream {
                rate_limited: true,
                message: String::new(),
                retry_after_secs: 1,
            },
            Error::Upstream {
                rate_limited: false,
                message: String::new(),
                retry_after_secs: 1,
            },
            Error::UploadOffsetMismatch { offset: 0 },
            Error::ChecksumMismatch,
            Error::Conflict(String::new()),
            Error::IdempotencyKeyInUse,
            Error::IdempotencyKeyReused,
            Error::PayloadTooLarge { limit_bytes: 1 },
            Error::RequestTimeout(String::new()),
            Error::TooManyUploads { limit: 1 },
            Error::RateLimited {
                retry_after_secs: 1,
            },
            Error::QuotaExceeded {
                limit: 1,
                retry_after_secs: 1,
            },
            Error::unavailable("the database is down"),
            Error::internal("a bug"),
        ];
        let given: std::collections::BTreeSet<&str> =
            every_variant.iter().map(Error::code).collect();
        let listed: std::collections::BTreeSet<&str> = ERROR_CODES.into_iter().collect();
        assert_eq!(given, listed);
        assert_eq!(listed.len(), ERROR_CODES.len(), "no code twice");
    }

    /// A store's outage reaches the use case's error with the driver's cause as its source,
    /// and [`Chain`] prints every link.
    #[test]
    fn a_store_outage_keeps_its_cause() {
        let driver = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let error = Error::from(StoreError::unavailable(While::new("connecting", driver)));
        assert!(matches!(error, Error::Unavailable { .. }));
        assert_eq!(
            error.to_string(),
            "the service is temporarily unavailable; retry shortly"
        );
        assert_eq!(
            Chain(&error).to_string(),
            "the service is temporarily unavailable; retry shortly: storage unavailable: \
             connecting: refused"
        );
        let internal = Error::from(StoreError::internal("corrupt row"));
        assert_eq!(
            Chain(&internal).to_string(),
            "internal error: storage error: corrupt row"
        );
    }
}
