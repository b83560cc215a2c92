//! Conversions between the domain records and table rows.

use chrono::{DateTime, NaiveDate, NaiveTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use sqlx::{Decode, Postgres, Row, Type};
use xf_core::ids::{Id, JobId};
use xf_core::model::{
    ApiKey, ChangeCounts, Event, EventSubject, EventType, Issue, IssueChange, IssueChangeRecord,
    IssueStatus, JobRecord, JobStatus, JobSubject, KeyMode, Organization, Property, Report,
    ScanKind, ScanRecord, Severity, SeverityCounts, UsageCounters, Webhook, WebhookDelivery,
    WebhookSecrets,
};
use xf_core::plans::LimitOverrides;
use xf_core::store::StoreResult;
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::error::store_error;

/// The columns [`organization`] reads, in `SELECT` order.
pub(crate) const ORGANIZATION_COLUMNS: &str = "id, name, plan, shop_domain, limits, created_at";
/// The columns [`api_key`] reads.
pub(crate) const API_KEY_COLUMNS: &str =
    "id, organization_id, mode, key_hash, prefix, created_at, revoked_at, last_used_at";
/// The columns [`property`] reads.
pub(crate) const PROPERTY_COLUMNS: &str =
    "id, organization_id, name, url, verified, created_at, gsc_site_url";
/// The columns [`job`] reads.
pub(crate) const JOB_COLUMNS: &str = "id, organization_id, job_type, payload, status, \
     progress, property_id, property_name, tenant_label, shop_domain, attempts, max_attempts, \
     run_at, created_at, started_at, completed_at, error, result";
/// The columns [`event`] reads.
pub(crate) const EVENT_COLUMNS: &str = "id, organization_id, event_type, job_id, data, created_at";
/// The columns [`issue`] reads.
pub(crate) const ISSUE_COLUMNS: &str = "id, organization_id, property_id, job_id, scan_kind, \
     issue_type, title, severity, url, evidence, how_to_fix, subject, status, created_at, \
     last_seen_at, resolved_at, fixed_at";
/// The columns [`report`] reads.
pub(crate) const REPORT_COLUMNS: &str =
    "token, organization_id, property_id, scan_id, expires_at, view_count, created_at";
/// The columns [`usage`] reads.
pub(crate) const USAGE_COLUMNS: &str =
    "scans, ai_input_tokens, ai_output_tokens, redirects_created, images_optimized, \
     media_uploads, media_bytes, posts_published, posts_deleted";
/// The columns [`webhook`] reads.
pub(crate) const WEBHOOK_COLUMNS: &str = "id, organization_id, name, url, secret_prefix, \
     events, enabled, last_delivery_at, last_delivery_status, secret_current, secret_previous, \
     secret_previous_until, created_at, updated_at";
/// The columns [`delivery`] reads.
pub(crate) const DELIVERY_COLUMNS: &str =
    "id, webhook_id, event, status_code, success, duration_ms, created_at";

/// `columns` (a list like [`JOB_COLUMNS`]) of the table aliased `table`, each renamed with
/// `prefix`: the select list of one table of a join whose tables share column names, read
/// back through [`Prefixed`].
pub(crate) fn prefixed_columns(columns: &str, table: &str, prefix: &str) -> String {
    columns
        .split(',')
        .map(|column| {
            let column = column.trim();
            format!("{table}.{column} AS {prefix}{column}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The earliest instant bound as a parameter. PostgreSQL's `timestamptz` starts in 4714 BC
/// while `Timestamp::MIN` lies far before; clamping keeps "since the beginning of time"
/// arguments valid without changing any comparison with a storable value. A constant, so an
/// invalid date would fail the build rather than need a fallback.
const EARLIEST: DateTime<Utc> = match NaiveDate::from_ymd_opt(-4712, 1, 1) {
    Some(day) => day.and_time(NaiveTime::MIN).and_utc(),
    None => panic!("4713 BC is a valid date"),
};

/// A timestamp as a query parameter.
pub(crate) fn at(timestamp: Timestamp) -> DateTime<Utc> {
    timestamp.as_datetime().max(EARLIEST)
}

/// An optional timestamp as a query parameter.
pub(crate) fn at_opt(timestamp: Option<Timestamp>) -> Option<DateTime<Utc>> {
    timestamp.map(at)
}

/// A limit or a meter increment as a `bigint` parameter. Values beyond `i64::MAX` saturate,
/// which changes no outcome: no count reaches a limit of `i64::MAX`, and meters saturate at
/// `i64::MAX` anyway (see `add_usage`). A value to store as it is goes through [`signed`].
pub(crate) fn big(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A count to store as a `bigint`; one beyond `i64::MAX` cannot be stored unchanged.
pub(crate) fn signed(value: u64, what: &str) -> StoreResult<i64> {
    i64::try_from(value).map_err(|_| StoreError::internal(format!("{what} out of range: {value}")))
}

/// A non-negative `bigint` read back as `u64`.
pub(crate) fn unsigned(value: i64, what: &str) -> StoreResult<u64> {
    u64::try_from(value).map_err(|_| StoreError::internal(format!("negative {what}: {value}")))
}

/// Typed access to a row's columns, with decoding failures as [`StoreError::Internal`].
pub(crate) trait RowExt {
    /// The column's value.
    fn col<'r, T>(&'r self, name: &str) -> StoreResult<T>
    where
        T: Decode<'r, Postgres> + Type<Postgres>;

    /// A `timestamptz` column.
    fn timestamp(&self, name: &str) -> StoreResult<Timestamp> {
        Ok(Timestamp::from_datetime(self.col::<DateTime<Utc>>(name)?))
    }

    /// A nullable `timestamptz` column.
    fn timestamp_opt(&self, name: &str) -> StoreResult<Option<Timestamp>> {
        Ok(self
            .col::<Option<DateTime<Utc>>>(name)?
            .map(Timestamp::from_datetime))
    }

    /// A text column holding an id of type `T`, which the store wrote checked.
    fn id<T: Id>(&self, name: &str) -> StoreResult<T> {
        Ok(T::from_trusted(self.col::<String>(name)?))
    }

    /// A non-negative `integer` column holding a `u32`.
    fn int(&self, name: &str) -> StoreResult<u32> {
        let value = self.col::<i32>(name)?;
        u32::try_from(value)
            .map_err(|_| StoreError::internal(format!("{name} out of range: {value}")))
    }

    /// A non-negative `bigint` column.
    fn count(&self, name: &str) -> StoreResult<u64> {
        unsigned(self.col::<i64>(name)?, name)
    }
}

impl RowExt for PgRow {
    fn col<'r, T>(&'r self, name: &str) -> StoreResult<T>
    where
        T: Decode<'r, Postgres> + Type<Postgres>,
    {
        self.try_get(name).map_err(store_error)
    }
}

/// The columns of a row that carry a prefix (the second field, see [`prefixed_columns`]),
/// under their names without it, so the decoders below read one table of a join.
pub(crate) struct Prefixed<'a>(pub &'a PgRow, pub &'static str);

impl RowExt for Prefixed<'_> {
    fn col<'r, T>(&'r self, name: &str) -> StoreResult<T>
    where
        T: Decode<'r, Postgres> + Type<Postgres>,
    {
        self.0
            .try_get(format!("{}{name}", self.1).as_str())
            .map_err(store_error)
    }
}

/// A nullable `integer` column holding an HTTP status (`u16`).
fn status_opt(row: &impl RowExt, name: &str) -> StoreResult<Option<u16>> {
    row.col::<Option<i32>>(name)?
        .map(|value| {
            u16::try_from(value)
                .map_err(|_| StoreError::internal(format!("{name} out of range: {value}")))
        })
        .transpose()
}

fn parsed<T>(value: String, parse: impl FnOnce(&str) -> Option<T>, what: &str) -> StoreResult<T> {
    parse(&value).ok_or_else(|| StoreError::internal(format!("unknown {what} {value:?}")))
}

/// An `organizations` row.
pub(crate) fn organization(row: &PgRow) -> StoreResult<Organization> {
    Ok(Organization {
        id: row.id("id")?,
        name: row.col("name")?,
        plan: row.col("plan")?,
        shop_domain: row.col("shop_domain")?,
        limits: row.col::<Json<LimitOverrides>>("limits")?.0,
        created_at: row.timestamp("created_at")?,
    })
}

/// An `api_keys` row.
pub(crate) fn api_key(row: &PgRow) -> StoreResult<ApiKey> {
    Ok(ApiKey {
        id: row.id("id")?,
        organization_id: row.id("organization_id")?,
        mode: parsed(row.col("mode")?, KeyMode::parse, "key mode")?,
        key_hash: row.col("key_hash")?,
        prefix: row.col("prefix")?,
        created_at: row.timestamp("created_at")?,
        revoked_at: row.timestamp_opt("revoked_at")?,
        last_used_at: row.timestamp_opt("last_used_at")?,
    })
}

/// A `properties` row.
pub(crate) fn property(row: &PgRow) -> StoreResult<Property> {
    Ok(Property {
        id: row.id("id")?,
        organization_id: row.id("organization_id")?,
        name: row.col("name")?,
        url: row.col("url")?,
        verified: row.col("verified")?,
        created_at: row.timestamp("created_at")?,
        gsc_site_url: row.col("gsc_site_url")?,
    })
}

/// A `jobs` row.
pub(crate) fn job(row: &impl RowExt) -> StoreResult<JobRecord> {
    let progress = row.col::<i16>("progress")?;
    Ok(JobRecord {
        id: row.id("id")?,
        organization_id: row.id("organization_id")?,
        job_type: row.col("job_type")?,
        payload: row.col::<Json<serde_json::Value>>("payload")?.0,
        status: parsed(row.col("status")?, JobStatus::parse, "job status")?,
        progress: u8::try_from(progress)
            .map_err(|_| StoreError::internal(format!("progress out of range: {progress}")))?,
        subject: match row.col::<Option<String>>("property_id")? {
            None => None,
            Some(_) => Some(JobSubject {
                property_id: row.id("property_id")?,
                property_name: row.col("property_name")?,
                tenant_label: row.col("tenant_label")?,
                shop_domain: row.col("shop_domain")?,
            }),
        },
        attempts: row.int("attempts")?,
        max_attempts: row.int("max_attempts")?,
        run_at: row.timestamp("run_at")?,
        created_at: row.timestamp("created_at")?,
        started_at: row.timestamp_opt("started_at")?,
        completed_at: row.timestamp_opt("completed_at")?,
        error: row.col("error")?,
        result: row
            .col::<Option<Json<serde_json::Value>>>("result")?
            .map(|json| json.0),
    })
}

/// An `events` row.
pub(crate) fn event(row: &impl RowExt) -> StoreResult<Event> {
    Ok(Event {
        id: row.id("id")?,
        organization_id: row.id("organization_id")?,
        event_type: parsed(row.col("event_type")?, EventType::parse, "event type")?,
        subject: match (
            row.col::<Option<String>>("job_id")?,
            row.col::<Option<Json<serde_json::Value>>>("data")?,
        ) {
            (Some(job_id), None) => EventSubject::Job(JobId::from_trusted(job_id)),
            (None, Some(data)) => EventSubject::Snapshot(data.0),
            _ => {
                return Err(StoreError::internal(
                    "an event has both a job and data, or neither",
                ))
            }
        },
        created_at: row.timestamp("created_at")?,
    })
}

/// An `issues` row.
pub(crate) fn issue(row: &PgRow) -> StoreResult<Issue> {
    Ok(Issue {
        id: row.id("id")?,
        organization_id: row.id("organization_id")?,
        property_id: row.id("property_id")?,
        job_id: row.id("job_id")?,
        scan_kind: parsed(row.col("scan_kind")?, ScanKind::parse, "scan kind")?,
        issue_type: row.col("issue_type")?,
        title: row.col("title")?,
        severity: parsed(row.col("severity")?, Severity::parse, "severity")?,
        url: row.col("url")?,
        evidence: row.col("evidence")?,
        how_to_fix: row.col("how_to_fix")?,
        subject: row.col("subject")?,
        status: parsed(row.col("status")?, IssueStatus::parse, "issue status")?,
        created_at: row.timestamp("created_at")?,
        last_seen_at: row.timestamp("last_seen_at")?,
        resolved_at: row.timestamp_opt("resolved_at")?,
        fixed_at: row.timestamp_opt("fixed_at")?,
    })
}

/// The columns of [`scan_record`].
pub(crate) const SCAN_HISTORY_COLUMNS: &str = "job_id, organization_id, property_id, \
    completed_at, score, pages_scanned, issues_count, critical, high, medium, low, by_check, \
    opened, resolved, reopened";

/// A `scan_history` row.
pub(crate) fn scan_record(row: &PgRow) -> StoreResult<ScanRecord> {
    let score: i32 = row.col("score")?;
    let by_check: Json<std::collections::BTreeMap<String, u64>> = row.col("by_check")?;
    Ok(ScanRecord {
        job_id: row.id("job_id")?,
        organization_id: row.id("organization_id")?,
        property_id: row.id("property_id")?,
        completed_at: row.timestamp("completed_at")?,
        score: u32::try_from(score).unwrap_or(0),
        pages_scanned: row.count("pages_scanned")?,
        issues_count: row.count("issues_count")?,
        by_severity: SeverityCounts {
            critical: row.count("critical")?,
            high: row.count("high")?,
            medium: row.count("medium")?,
            low: row.count("low")?,
        },
        by_check: by_check.0,
        changes: ChangeCounts {
            opened: row.count("opened")?,
            resolved: row.count("resolved")?,
            reopened: row.count("reopened")?,
        },
    })
}

/// An `issue_changes` row.
pub(crate) fn issue_change(row: &PgRow) -> StoreResult<IssueChangeRecord> {
    Ok(IssueChangeRecord {
        job_id: row.id("job_id")?,
        issue_id: row.id("issue_id")?,
        issue_type: row.col("issue_type")?,
        change: parsed(row.col("change")?, IssueChange::parse, "issue change")?,
    })
}

/// A `reports` row.
pub(crate) fn report(row: &PgRow) -> StoreResult<Report> {
    Ok(Report {
        token: row.col("token")?,
        organization_id: row.id("organization_id")?,
        property_id: row.id("property_id")?,
        scan_id: row.id("scan_id")?,
        expires_at: row.timestamp("expires_at")?,
        view_count: row.count("view_count")?,
        created_at: row.timestamp("created_at")?,
    })
}

/// The meters of a `usage_counters` row.
pub(crate) fn usage(row: &PgRow) -> StoreResult<UsageCounters> {
    Ok(UsageCounters {
        scans: row.count("scans")?,
        ai_input_tokens: row.count("ai_input_tokens")?,
        ai_output_tokens: row.count("ai_output_tokens")?,
        redirects_created: row.count("redirects_created")?,
        images_optimized: row.count("images_optimized")?,
        media_uploads: row.count("media_uploads")?,
        media_bytes: row.count("media_bytes")?,
        posts_published: row.count("posts_published")?,
        posts_deleted: row.count("posts_deleted")?,
    })
}

/// A `webhooks` row.
pub(crate) fn webhook(row: &impl RowExt) -> StoreResult<Webhook> {
    let events = row
        .col::<Vec<String>>("events")?
        .into_iter()
        .map(|name| parsed(name, EventType::parse, "event type"))
        .collect::<StoreResult<_>>()?;
    let previous = match (
        row.col::<Option<String>>("secret_previous")?,
        row.timestamp_opt("secret_previous_until")?,
    ) {
        (Some(sealed), Some(until)) => Some((sealed, until)),
        _ => None,
    };
    Ok(Webhook {
        id: row.id("id")?,
        organization_id: row.id("organization_id")?,
        name: row.col("name")?,
        url: row.col("url")?,
        secret_prefix: row.col("secret_prefix")?,
        events,
        enabled: row.col("enabled")?,
        last_delivery_at: row.timestamp_opt("last_delivery_at")?,
        last_delivery_status: status_opt(row, "last_delivery_status")?,
        created_at: row.timestamp("created_at")?,
        updated_at: row.timestamp("updated_at")?,
        secrets: WebhookSecrets {
            current: row.col("secret_current")?,
            previous,
        },
    })
}

/// A `webhook_deliveries` row.
pub(crate) fn delivery(row: &impl RowExt) -> StoreResult<WebhookDelivery> {
    Ok(WebhookDelivery {
        id: row.id("id")?,
        webhook_id: row.id("webhook_id")?,
        event: parsed(row.col("event")?, EventType::parse, "event type")?,
        status_code: status_opt(row, "status_code")?
            .ok_or_else(|| StoreError::internal("null status_code"))?,
        success: row.col("success")?,
        duration_ms: row.count("duration_ms")?,
        created_at: row.timestamp("created_at")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_before_postgres_range_are_clamped_and_later_ones_kept() {
        assert_eq!(at(Timestamp::MIN), EARLIEST);
        assert_eq!(EARLIEST.to_rfc3339(), "-4712-01-01T00:00:00+00:00");
        let now = Timestamp::from_unix_millis(1_790_000_000_123).expect("in range");
        assert_eq!(at(now), now.as_datetime());
        assert_eq!(at(Timestamp::MAX), Timestamp::MAX.as_datetime());
    }

    #[test]
    fn limits_saturate_into_bigint_and_unstorable_counts_are_rejected() {
        assert_eq!(big(7), 7);
        assert_eq!(big(u64::MAX), i64::MAX);
        assert_eq!(unsigned(5, "x"), Ok(5));
        assert!(matches!(unsigned(-1, "x"), Err(StoreError::Internal(_))));
        assert_eq!(signed(7, "x"), Ok(7));
        assert!(matches!(
            signed(u64::MAX, "x"),
            Err(StoreError::Internal(_))
        ));
    }
}
