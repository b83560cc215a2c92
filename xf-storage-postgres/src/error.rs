//! The one place where database errors become [`StoreError`]s.

use std::sync::atomic::{AtomicU64, Ordering};

use xf_core::error::{BoxError, While};
use xf_core::StoreError;

/// Maps an sqlx error to the store's error kinds:
///
/// * a unique violation (SQLSTATE `23505`) is [`StoreError::Duplicate`], naming the rule of
///   the violated constraint;
/// * anything that means "the database cannot be reached right now" is
///   [`StoreError::Unavailable`], so the API answers `503` with `Retry-After` and the caller
///   retries: I/O and TLS failures, a pool that timed out or was closed, and the SQLSTATE
///   classes `08` (connection exception) and `53` (insufficient resources) and codes
///   `57P01`–`57P03` (administrator or crash shutdown, cannot connect now: the server is
///   going down or still starting);
/// * everything else is [`StoreError::Internal`]: a bug or corrupt data.
pub(crate) fn store_error(error: sqlx::Error) -> StoreError {
    let mapped = map_error(error);
    if !matches!(mapped, StoreError::Duplicate(_)) {
        STATEMENT_ERRORS.fetch_add(1, Ordering::Relaxed);
    }
    mapped
}

/// Statements of this process's PostgreSQL stores that failed for another reason than a
/// unique violation (which is an answer, not a failure): the `statement_errors` of
/// [`xf_core::store::PoolStatus`].
pub(crate) static STATEMENT_ERRORS: AtomicU64 = AtomicU64::new(0);

/// The sqlx error stays the mapped error's source, so the log shows the driver's own words
/// (and, under them, the I/O error).
fn map_error(error: sqlx::Error) -> StoreError {
    match &error {
        sqlx::Error::Database(database) => {
            let code = database.code().unwrap_or_default().into_owned();
            let constraint = database.constraint().map(str::to_owned);
            let cause = While::new(format!("database error {code}"), error);
            classify_database_error(&code, constraint.as_deref(), cause.into())
        }
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => StoreError::unavailable(error),
        _ => StoreError::internal(error),
    }
}

/// The mapping of [`store_error`] for an error the server reported with `code` (SQLSTATE).
fn classify_database_error(code: &str, constraint: Option<&str>, cause: BoxError) -> StoreError {
    if code == "23505" {
        return StoreError::Duplicate(unique_rule(constraint));
    }
    let unavailable = code.starts_with("08")
        || code.starts_with("53")
        || matches!(code, "57P01" | "57P02" | "57P03");
    if unavailable {
        StoreError::unavailable(cause)
    } else {
        StoreError::internal(cause)
    }
}

/// The rule a unique constraint of the schema enforces, named as the in-memory store names it.
fn unique_rule(constraint: Option<&str>) -> &'static str {
    match constraint.unwrap_or_default() {
        "organizations_pkey" => "organization id",
        "api_keys_pkey" | "api_keys_key_hash_key" => "api key",
        "properties_organization_url_key" => "property url",
        "properties_pkey" => "property id",
        "jobs_pkey" => "job id",
        "events_pkey" => "event id",
        "issues_pkey" => "issue id",
        "issues_identity_idx" => "issue",
        "reports_pkey" => "report token",
        "usage_counters_pkey" => "usage month",
        "idempotency_keys_pkey" => "idempotency key",
        "rate_limit_counters_pkey" => "rate limit window",
        "webhooks_pkey" => "webhook id",
        "webhook_deliveries_pkey" => "delivery id",
        "webhook_messages_pkey" => "webhook message",
        "media_items_pkey" => "media item id",
        "media_uploads_pkey" => "upload id",
        "channels_pkey" => "channel id",
        _ => "unique constraint",
    }
}

/// Maps a migration failure: failures to reach the database stay `Unavailable`.
pub(crate) fn migrate_error(error: sqlx::migrate::MigrateError) -> StoreError {
    match error {
        sqlx::migrate::MigrateError::Execute(error) => store_error(error),
        other => StoreError::internal(While::new("migration failed", other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_violations_name_their_rule() {
        assert_eq!(
            classify_database_error(
                "23505",
                Some("properties_organization_url_key"),
                "dup".into()
            ),
            StoreError::Duplicate("property url")
        );
        assert_eq!(
            classify_database_error("23505", Some("api_keys_key_hash_key"), "dup".into()),
            StoreError::Duplicate("api key")
        );
        assert_eq!(
            classify_database_error("23505", Some("reports_pkey"), "dup".into()),
            StoreError::Duplicate("report token")
        );
        assert_eq!(
            classify_database_error("23505", Some("webhooks_pkey"), "dup".into()),
            StoreError::Duplicate("webhook id")
        );
        assert_eq!(
            classify_database_error("23505", None, "dup".into()),
            StoreError::Duplicate("unique constraint")
        );
    }

    #[test]
    fn connection_and_resource_classes_are_unavailable() {
        for code in [
            "08000", "08003", "08006", "08001", "08004", "57P01", "57P02", "57P03",
        ] {
            assert!(
                matches!(
                    classify_database_error(code, None, "x".into()),
                    StoreError::Unavailable(_)
                ),
                "{code}"
            );
        }
        for code in ["53000", "53100", "53200", "53300", "53400"] {
            assert!(
                matches!(
                    classify_database_error(code, None, "x".into()),
                    StoreError::Unavailable(_)
                ),
                "{code}"
            );
        }
    }

    #[test]
    fn other_database_errors_are_internal() {
        for code in ["42P01", "23514", "22003", "40P01", "57014", "XX000"] {
            assert!(
                matches!(
                    classify_database_error(code, None, "x".into()),
                    StoreError::Internal(_)
                ),
                "{code}"
            );
        }
    }

    /// The driver's error is the mapped error's source, reachable by downcasting, so the log
    /// (which prints the chain) has the driver's own words.
    #[test]
    fn the_driver_error_is_the_source() {
        let io = sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "refused",
        ));
        let mapped = store_error(io);
        let source = std::error::Error::source(&mapped).expect("a source");
        assert!(
            matches!(
                source.downcast_ref::<sqlx::Error>(),
                Some(sqlx::Error::Io(_))
            ),
            "{source:?}"
        );
        let error = xf_core::Error::from(mapped);
        assert_eq!(
            xf_core::error::Chain(&error).to_string(),
            "the service is temporarily unavailable; retry shortly: storage unavailable: \
             error communicating with database: refused"
        );
    }

    #[test]
    fn transport_failures_are_unavailable() {
        let io = sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "refused",
        ));
        assert!(matches!(store_error(io), StoreError::Unavailable(_)));
        assert!(matches!(
            store_error(sqlx::Error::PoolTimedOut),
            StoreError::Unavailable(_)
        ));
        assert!(matches!(
            store_error(sqlx::Error::PoolClosed),
            StoreError::Unavailable(_)
        ));
        assert!(matches!(
            store_error(sqlx::Error::RowNotFound),
            StoreError::Internal(_)
        ));
        assert!(matches!(
            store_error(sqlx::Error::ColumnNotFound("x".into())),
            StoreError::Internal(_)
        ));
    }
}
