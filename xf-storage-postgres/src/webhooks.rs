//! Webhooks, their delivery queue (`webhook_messages`) and their delivery log.
//!
//! See migration 0005 for the tables and for the order in which writes lock webhook and
//! message rows (webhook first, always), which keeps them free of deadlocks.

use std::sync::OnceLock;
use xf_core::store::text_rule::*;

use async_trait::async_trait;
use sqlx::{Postgres, QueryBuilder};
use uuid::Uuid;
use xf_core::ids::{OrganizationId, WebhookId};
use xf_core::model::{Webhook, WebhookDelivery};
use xf_core::store::{
    AttemptToken, ClaimedDelivery, DeliveryRecord, NextStep, PageRequest, SecretRotation,
    StoreResult, WebhookChanges, WebhookStore,
};
use xf_core::time::Timestamp;
use xf_core::StoreError;

use crate::error::store_error;
use crate::rows::{
    self, at, at_opt, prefixed_columns, signed, Prefixed, RowExt, EVENT_COLUMNS, JOB_COLUMNS,
    WEBHOOK_COLUMNS,
};
use crate::{all, list_deliveries_query, one, PgStore, WEBHOOK_CAP_LOCK_CLASS};

/// The `INSERT` of one delivery log row, as `$1…$7`.
const INSERT_DELIVERY: &str = "INSERT INTO webhook_deliveries \
     (id, webhook_id, event, status_code, success, duration_ms, created_at) ";

/// The claim: one statement that picks the oldest due messages of enabled webhooks nobody
/// else holds (waiting ones whose time has come, and ones whose lease ran out), starts an
/// attempt on each (a new token, one more attempt, the lease), and returns each with its
/// event, webhook and job.
///
/// The two kinds of claimable messages are picked by two locking scans, each served by a
/// partial index in order and stopping after the limit (`FOR UPDATE` is not allowed on the
/// branches of a `UNION`, and one scan of both conditions could not use an index range); the
/// union of the two is cut to the limit. A row one scan locked but the cut left out stays
/// locked only until the statement commits: a concurrent claim skips it for that long.
/// SKIP LOCKED: concurrent claims, on any instance, never wait for each other nor return the
/// same message; a row another transaction changed is checked again after its lock (a message
/// another claim just took no longer matches).
fn claim_sql() -> &'static str {
    static SQL: OnceLock<String> = OnceLock::new();
    SQL.get_or_init(|| {
        let enabled = "EXISTS (SELECT 1 FROM webhooks w WHERE w.id = m.webhook_id AND w.enabled)";
        let order = "ORDER BY m.due_at, m.event_id, m.webhook_id LIMIT $2";
        format!(
            "WITH waiting AS ( \
                 SELECT m.event_id, m.webhook_id, m.due_at FROM webhook_messages m \
                 WHERE m.attempt_token IS NULL AND m.due_at <= $1 AND {enabled} \
                 {order} FOR UPDATE OF m SKIP LOCKED \
             ), lost AS ( \
                 SELECT m.event_id, m.webhook_id, m.due_at FROM webhook_messages m \
                 WHERE m.attempt_token IS NOT NULL AND m.lease_until <= $1 AND {enabled} \
                 {order} FOR UPDATE OF m SKIP LOCKED \
             ), picked AS ( \
                 SELECT * FROM waiting UNION ALL SELECT * FROM lost \
                 ORDER BY due_at, event_id, webhook_id LIMIT $2 \
             ), claimed AS ( \
                 UPDATE webhook_messages m SET \
                     attempts = m.attempts + 1, \
                     attempt_token = gen_random_uuid(), \
                     lease_until = $3 \
                 FROM picked p \
                 WHERE m.event_id = p.event_id AND m.webhook_id = p.webhook_id \
                 RETURNING m.event_id, m.webhook_id, m.attempts, m.attempt_token, m.due_at \
             ) \
             SELECT c.attempts AS claim_attempt, c.attempt_token AS claim_token, \
                    c.due_at AS claim_due_at, {webhook}, {event}, {job} \
             FROM claimed c \
             JOIN events e ON e.id = c.event_id \
             JOIN webhooks w ON w.id = c.webhook_id \
             LEFT JOIN jobs j ON j.id = e.job_id",
            webhook = prefixed_columns(WEBHOOK_COLUMNS, "w", ""),
            event = prefixed_columns(EVENT_COLUMNS, "e", "e_"),
            job = prefixed_columns(JOB_COLUMNS, "j", "j_"),
        )
    })
}

#[async_trait]
impl WebhookStore for PgStore {
    async fn insert_webhook(&self, webhook: &Webhook, max: u64) -> StoreResult<()> {
        let webhook = &*stored(webhook);
        let mut tx = self.begin().await?;
        // Serialises webhook creation per organization across instances, as the key cap does
        // (see `insert_api_key`): the count below then sees every webhook committed before.
        sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
            .bind(WEBHOOK_CAP_LOCK_CLASS)
            .bind(webhook.organization_id.as_str())
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        // Inserts, then counts the others: the count's snapshot is the statement's, which
        // does not see the row the statement inserts. Inserting first reports a duplicate id
        // as such even when the cap is also reached.
        let (previous, previous_until) = match &webhook.secrets.previous {
            Some((sealed, until)) => (Some(sealed.as_str()), Some(at(*until))),
            None => (None, None),
        };
        let events: Vec<&str> = webhook.events.iter().map(|e| e.as_str()).collect();
        let others: i64 = sqlx::query_scalar(
            "WITH added AS ( \
                 INSERT INTO webhooks (id, organization_id, name, url, secret_prefix, events, \
                     enabled, last_delivery_at, last_delivery_status, secret_current, \
                     secret_previous, secret_previous_until, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
             ) \
             SELECT count(*) FROM webhooks WHERE organization_id = $2",
        )
        .bind(webhook.id.as_str())
        .bind(webhook.organization_id.as_str())
        .bind(&webhook.name)
        .bind(&webhook.url)
        .bind(&webhook.secret_prefix)
        .bind(&events)
        .bind(webhook.enabled)
        .bind(at_opt(webhook.last_delivery_at))
        .bind(webhook.last_delivery_status.map(i32::from))
        .bind(&webhook.secrets.current)
        .bind(previous)
        .bind(previous_until)
        .bind(at(webhook.created_at))
        .bind(at(webhook.updated_at))
        .fetch_one(&mut *tx)
        .await
        .map_err(store_error)?;
        if rows::unsigned(others, "webhook count")? >= max {
            tx.rollback().await.map_err(store_error)?;
            return Err(StoreError::LimitReached("webhooks"));
        }
        tx.commit().await.map_err(store_error)
    }

    async fn get_webhook(&self, id: &WebhookId) -> StoreResult<Option<Webhook>> {
        let row = sqlx::query(&format!(
            "SELECT {WEBHOOK_COLUMNS} FROM webhooks WHERE id = $1"
        ))
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        one(row, rows::webhook)
    }

    async fn list_webhooks(&self, organization_id: &OrganizationId) -> StoreResult<Vec<Webhook>> {
        let rows = sqlx::query(&format!(
            "SELECT {WEBHOOK_COLUMNS} FROM webhooks WHERE organization_id = $1 \
             ORDER BY created_at DESC, id DESC"
        ))
        .bind(organization_id.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        all(rows, rows::webhook)
    }

    async fn update_webhook(
        &self,
        id: &WebhookId,
        changes: &WebhookChanges,
        now: Timestamp,
    ) -> StoreResult<Option<Webhook>> {
        let changes = &*stored(changes);
        let events: Option<Vec<&str>> = changes
            .events
            .as_ref()
            .map(|events| events.iter().map(|e| e.as_str()).collect());
        // One UPDATE of the changed columns only, so an attempt recorded meanwhile keeps its
        // `last_delivery_*`.
        let sql = format!(
            "UPDATE webhooks SET name = COALESCE($2, name), url = COALESCE($3, url), \
                 events = COALESCE($4, events), enabled = COALESCE($5, enabled), \
                 updated_at = $6 \
             WHERE id = $1 RETURNING {WEBHOOK_COLUMNS}"
        );
        let update = sqlx::query(&sql)
            .bind(id.as_str())
            .bind(&changes.name)
            .bind(&changes.url)
            .bind(events)
            .bind(changes.enabled)
            .bind(at(now));
        if changes.enabled != Some(false) {
            let row = update
                .fetch_optional(&self.pool)
                .await
                .map_err(store_error)?;
            return one(row, rows::webhook);
        }
        // Disabling drops the queued messages in the same transaction, in a second statement:
        // its snapshot, taken after the UPDATE got the webhook's row lock, sees the messages
        // a fan-out holding that lock (FOR SHARE) queued meanwhile, which a CTE of the UPDATE
        // (whose snapshot predates the wait) would miss. Fan-outs after the commit see the
        // webhook disabled.
        let mut tx = self.begin().await?;
        let row = update.fetch_optional(&mut *tx).await.map_err(store_error)?;
        if row.is_some() {
            sqlx::query("DELETE FROM webhook_messages WHERE webhook_id = $1")
                .bind(id.as_str())
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
        }
        tx.commit().await.map_err(store_error)?;
        one(row, rows::webhook)
    }

    async fn rotate_webhook_secret(
        &self,
        id: &WebhookId,
        rotation: &SecretRotation,
    ) -> StoreResult<Option<Webhook>> {
        // One UPDATE: a concurrent rotation waits for the row lock and then re-reads the row
        // (PostgreSQL's read committed), finds the secret it meant to replace gone, and
        // changes nothing; its caller then reads the webhook as the winner left it.
        let row = sqlx::query(&format!(
            "UPDATE webhooks SET secret_previous = secret_current, \
                 secret_previous_until = $2, secret_current = $3, secret_prefix = $4, \
                 updated_at = $5 \
             WHERE id = $1 AND secret_current = $6 RETURNING {WEBHOOK_COLUMNS}"
        ))
        .bind(id.as_str())
        .bind(at(rotation.previous_until))
        .bind(&rotation.sealed)
        .bind(&rotation.prefix)
        .bind(at(rotation.now))
        .bind(&rotation.replaces)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_error)?;
        match row {
            Some(row) => Ok(Some(rows::webhook(&row)?)),
            None => self.get_webhook(id).await,
        }
    }

    async fn delete_webhook(&self, id: &WebhookId) -> StoreResult<bool> {
        // Its messages and log rows go with it (ON DELETE CASCADE).
        let deleted = sqlx::query("DELETE FROM webhooks WHERE id = $1")
            .bind(id.as_str())
            .execute(&self.pool)
            .await
            .map_err(store_error)?
            .rows_affected();
        Ok(deleted > 0)
    }

    async fn list_deliveries(
        &self,
        webhook_id: &WebhookId,
        page: &PageRequest,
    ) -> StoreResult<Vec<WebhookDelivery>> {
        let mut builder = QueryBuilder::<Postgres>::new("");
        list_deliveries_query(&mut builder, webhook_id.as_str(), page);
        let rows = builder
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(store_error)?;
        all(rows, rows::delivery)
    }

    async fn record_test_delivery(&self, log: &WebhookDelivery) -> StoreResult<bool> {
        // The UPDATE locks the webhook (a concurrent delete waits, or has happened and
        // nothing is written); the log row is inserted only when it found the webhook. An
        // attempt older than the one shown does not replace it, as in xf_record_deliveries.
        let recorded: bool = sqlx::query_scalar(&format!(
            "WITH touched AS ( \
                 UPDATE webhooks SET \
                     last_delivery_status = CASE \
                         WHEN last_delivery_at IS NULL OR last_delivery_at <= $7 \
                         THEN $4 ELSE last_delivery_status END, \
                     last_delivery_at = GREATEST(last_delivery_at, $7) \
                 WHERE id = $2 RETURNING id \
             ), logged AS ( \
                 {INSERT_DELIVERY} \
                 SELECT $1, id, $3, $4, $5, $6, $7 FROM touched RETURNING 1 \
             ) \
             SELECT EXISTS (SELECT 1 FROM logged)"
        ))
        .bind(log.id.as_str())
        .bind(log.webhook_id.as_str())
        .bind(log.event.as_str())
        .bind(i32::from(log.status_code))
        .bind(log.success)
        .bind(signed(log.duration_ms, "duration")?)
        .bind(at(log.created_at))
        .fetch_one(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(recorded)
    }

    async fn fan_out_events(&self, limit: usize, now: Timestamp) -> StoreResult<usize> {
        if limit == 0 {
            return Ok(0);
        }
        // One statement: take the oldest events no fan-out has taken (SKIP LOCKED: concurrent
        // fan-outs take different ones), queue a message per subscribed enabled webhook of
        // the event's organization, and mark the events taken. The webhooks are share-locked
        // in id order (the order every writer of webhooks locks them): a webhook being
        // disabled or deleted meanwhile is read again once that commits, and left out; one
        // that is disabled after this reads it waits for this to commit, then drops what it
        // queued.
        let taken: i64 = sqlx::query_scalar(
            "WITH picked AS ( \
                 SELECT id, organization_id, event_type FROM events \
                 WHERE NOT fanned_out ORDER BY id LIMIT $1 \
                 FOR UPDATE SKIP LOCKED \
             ), targets AS ( \
                 SELECT w.id, w.organization_id, w.events FROM webhooks w \
                 WHERE w.enabled AND w.organization_id IN (SELECT organization_id FROM picked) \
                 ORDER BY w.id FOR SHARE \
             ), queued AS ( \
                 INSERT INTO webhook_messages (event_id, webhook_id, attempts, due_at) \
                 SELECT p.id, t.id, 0, $2 FROM picked p JOIN targets t \
                     ON t.organization_id = p.organization_id AND p.event_type = ANY (t.events) \
                 ON CONFLICT DO NOTHING \
             ), taken AS ( \
                 UPDATE events e SET fanned_out = true FROM picked p WHERE e.id = p.id \
                 RETURNING 1 \
             ) \
             SELECT count(*) FROM taken",
        )
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .bind(at(now))
        .fetch_one(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(usize::try_from(taken).unwrap_or(0))
    }

    async fn claim_deliveries(
        &self,
        limit: usize,
        now: Timestamp,
        lease_until: Timestamp,
    ) -> StoreResult<Vec<ClaimedDelivery>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let rows = sqlx::query(claim_sql())
            .bind(at(now))
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .bind(at(lease_until))
            .fetch_all(&self.pool)
            .await
            .map_err(store_error)?;
        let mut claimed = Vec::with_capacity(rows.len());
        for row in &rows {
            let delivery = ClaimedDelivery {
                event: rows::event(&Prefixed(row, "e_"))?,
                webhook: rows::webhook(row)?,
                // Only job events have a job.
                job: match row.col::<Option<String>>("j_id")? {
                    Some(_) => Some(rows::job(&Prefixed(row, "j_"))?),
                    None => None,
                },
                attempt: row.int("claim_attempt")?,
                token: AttemptToken::from_uuid(row.col::<Uuid>("claim_token")?),
            };
            claimed.push((row.timestamp("claim_due_at")?, delivery));
        }
        // A statement's RETURNING has no order: oldest due first, as the claim picked them.
        claimed.sort_by(|(a_due, a), (b_due, b)| {
            (a_due, &a.event.id, &a.webhook.id).cmp(&(b_due, &b.event.id, &b.webhook.id))
        });
        Ok(claimed.into_iter().map(|(_, delivery)| delivery).collect())
    }

    async fn record_deliveries(&self, records: &[DeliveryRecord]) -> StoreResult<Vec<bool>> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let n = records.len();
        let mut event_ids = Vec::with_capacity(n);
        let mut webhook_ids = Vec::with_capacity(n);
        let mut tokens = Vec::with_capacity(n);
        let mut log_ids = Vec::with_capacity(n);
        let mut events = Vec::with_capacity(n);
        let mut statuses = Vec::with_capacity(n);
        let mut successes = Vec::with_capacity(n);
        let mut durations = Vec::with_capacity(n);
        let mut times = Vec::with_capacity(n);
        let mut steps = Vec::with_capacity(n);
        let mut retry_at = Vec::with_capacity(n);
        for record in records {
            event_ids.push(record.event_id.as_str());
            webhook_ids.push(record.webhook_id.as_str());
            tokens.push(record.token.as_uuid());
            log_ids.push(record.log.id.as_str());
            events.push(record.log.event.as_str());
            statuses.push(i32::from(record.log.status_code));
            successes.push(record.log.success);
            durations.push(signed(record.log.duration_ms, "duration")?);
            times.push(at(record.log.created_at));
            let (step, when) = match record.next {
                NextStep::Done => ("done", None),
                NextStep::RetryAt(when) => ("retry", Some(at(when))),
                NextStep::Disable => ("disable", None),
            };
            steps.push(step);
            retry_at.push(when);
        }
        // One round trip: the function `xf_record_deliveries` of migration 0005 locks the
        // webhooks, then writes every attempt whose token is still its message's, atomically.
        let written: Vec<i64> = sqlx::query_scalar(
            "SELECT * FROM xf_record_deliveries($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        )
        .bind(&event_ids)
        .bind(&webhook_ids)
        .bind(&tokens)
        .bind(&log_ids)
        .bind(&events)
        .bind(&statuses)
        .bind(&successes)
        .bind(&durations)
        .bind(&times)
        .bind(&steps)
        .bind(&retry_at)
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        let mut answer = vec![false; n];
        for position in written {
            let index = usize::try_from(position - 1)
                .ok()
                .filter(|index| *index < n)
                .ok_or_else(|| {
                    StoreError::internal(format!("record position out of range: {position}"))
                })?;
            answer[index] = true;
        }
        Ok(answer)
    }

    async fn purge_deliveries(&self, before: Timestamp) -> StoreResult<u64> {
        let purged = sqlx::query("DELETE FROM webhook_deliveries WHERE created_at < $1")
            .bind(at(before))
            .execute(&self.pool)
            .await
            .map_err(store_error)?
            .rows_affected();
        Ok(purged)
    }
}
