-- Webhooks: the endpoints, their delivery queue (one message per event and webhook), the
-- delivery log, and the outbox's fan-out mark.
--
-- Locks, and why there are no deadlocks: every write that touches both a webhook and its
-- messages locks the webhook row first (`xf_record_deliveries` locks all of its webhooks in id
-- order before anything else; `update_webhook` and `delete_webhook` start with the webhook
-- row; a fan-out takes share locks on its webhooks in id order and creates messages, which
-- nobody else can hold yet). Claims lock messages only, with SKIP LOCKED, and never wait.
--
-- Foreign keys, unlike the tables of 0001: a webhook and everything queued or logged for it
-- go together (`ON DELETE CASCADE` makes `delete_webhook` one statement), and a message or
-- log row inserted for a webhook that a concurrent transaction is deleting fails or waits
-- instead of being left behind. Webhooks are written rarely (at most ten per organization),
-- so the KEY SHARE lock a foreign key check takes on the parent costs nothing that matters.

-- An organization's endpoints.
CREATE TABLE webhooks (
    id                    text COLLATE "C" NOT NULL,
    organization_id       text COLLATE "C" NOT NULL
        REFERENCES organizations (id) ON DELETE CASCADE,
    name                  text NOT NULL,
    url                   text NOT NULL,
    -- The first characters of the current secret, shown to tell secrets apart.
    secret_prefix         text NOT NULL,
    -- The wire names of the events it receives, in the order the host gave them.
    events                text[] NOT NULL
        CHECK (events <@ ARRAY['job.completed', 'job.failed', 'job.cancelled']::text[]),
    enabled               boolean NOT NULL,
    -- The latest attempt (queued or test delivery); the status is 0 when no answer came.
    last_delivery_at      timestamptz,
    last_delivery_status  integer CHECK (last_delivery_status BETWEEN 0 AND 65535),
    -- The signing secrets, sealed by the application (never in the clear): the current one,
    -- and the one the last rotation replaced with the end of its overlap (both or neither).
    secret_current        text NOT NULL,
    secret_previous       text,
    secret_previous_until timestamptz,
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL,
    CONSTRAINT webhooks_pkey PRIMARY KEY (id),
    CONSTRAINT webhooks_previous_secret_complete
        CHECK ((secret_previous IS NULL) = (secret_previous_until IS NULL))
);

-- `list_webhooks` (newest first), the cap's count, and the fan-out's lookup of an
-- organization's webhooks.
CREATE INDEX webhooks_organization_page_idx
    ON webhooks (organization_id, created_at DESC, id DESC);

-- The delivery queue: one message per (event, webhook) until it is delivered, given up on, or
-- its webhook is disabled or deleted. Small (it holds only undelivered messages) and written
-- on every attempt, so it has as few indexes as the claim allows.
CREATE TABLE webhook_messages (
    event_id      text COLLATE "C" NOT NULL,
    webhook_id    text COLLATE "C" NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    -- Attempts started.
    attempts      integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- Not claimed before this (first delivery: when it was fanned out; then each retry's time).
    due_at        timestamptz NOT NULL,
    -- The running attempt: its token and lease (both or neither). A message whose lease ran
    -- out (its sender died) is claimable again.
    attempt_token uuid,
    lease_until   timestamptz,
    CONSTRAINT webhook_messages_pkey PRIMARY KEY (event_id, webhook_id),
    CONSTRAINT webhook_messages_lease_complete
        CHECK ((attempt_token IS NULL) = (lease_until IS NULL))
);

-- Claiming waiting messages: due ones in `due_at` order. Only waiting messages are indexed;
-- the claim reads it in order and stops after its limit.
CREATE INDEX webhook_messages_due_idx
    ON webhook_messages (due_at, event_id, webhook_id) WHERE attempt_token IS NULL;

-- Claiming messages whose sender died: leases that ran out (a few at most: the in-flight
-- messages).
CREATE INDEX webhook_messages_lease_idx
    ON webhook_messages (lease_until) WHERE attempt_token IS NOT NULL;

-- Disabling a webhook drops its messages (the primary key leads with the event).
CREATE INDEX webhook_messages_webhook_idx ON webhook_messages (webhook_id);

-- The delivery log: one row per attempt, kept for the retention period.
CREATE TABLE webhook_deliveries (
    id          text COLLATE "C" NOT NULL,
    webhook_id  text COLLATE "C" NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event       text NOT NULL
        CHECK (event IN ('job.completed', 'job.failed', 'job.cancelled')),
    -- 0 when no answer came (refused, unreachable, timed out).
    status_code integer NOT NULL CHECK (status_code BETWEEN 0 AND 65535),
    success     boolean NOT NULL,
    duration_ms bigint NOT NULL CHECK (duration_ms >= 0),
    created_at  timestamptz NOT NULL,
    CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (id)
);

-- `GET /webhooks/{id}/deliveries`: newest first per webhook (also serves the cascade of
-- `delete_webhook`).
CREATE INDEX webhook_deliveries_webhook_page_idx
    ON webhook_deliveries (webhook_id, created_at DESC, id DESC);

-- `purge_deliveries` deletes rows older than the retention period.
CREATE INDEX webhook_deliveries_created_idx ON webhook_deliveries (created_at);

-- The outbox's fan-out mark. Events written before webhooks existed had nobody to go to:
-- the column is added with the default true, which PostgreSQL records once in the catalog
-- for the existing rows instead of rewriting the table, and new events then default to
-- false.
ALTER TABLE events ADD COLUMN fanned_out boolean NOT NULL DEFAULT true;
ALTER TABLE events ALTER COLUMN fanned_out SET DEFAULT false;

-- The fan-out reads events it has not taken yet in id order; only those are indexed, so the
-- index stays as small as the backlog.
CREATE INDEX events_pending_fan_out_idx ON events (id) WHERE NOT fanned_out;

-- New events wake the delivery engines: one notification per inserting statement that
-- inserted something (the statements that finish jobs insert events through a CTE that is
-- often empty: a retry writes no event), folded together within a transaction.
CREATE FUNCTION xf_notify_events_written() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM inserted) THEN
        PERFORM pg_notify('xf_events', '');
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER events_written_notify
    AFTER INSERT ON events
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION xf_notify_events_written();

-- Records attempts, as `WebhookStore::record_deliveries` says: arguments are parallel
-- arrays, one element per attempt; returns the 1-based positions of the attempts that were
-- written (their token was still the message's).
--
-- A function so that its two statements are one round trip: the first locks the webhooks
-- concerned in id order (see the top of this file: webhook rows before messages, always), the
-- second does everything else. Within the batch, attempts are taken in order, as if recorded
-- one by one: only the first attempt naming a message can still hold its token (every step
-- clears it), and a `disable` drops the webhook's messages, refusing the later attempts of the
-- batch for them; the attempts before it are written, their messages dropped with the rest.
-- Each message row is changed by at most one of the statement's parts.
CREATE FUNCTION xf_record_deliveries(
    p_event_ids   text[],
    p_webhook_ids text[],
    p_tokens      uuid[],
    p_log_ids     text[],
    p_events      text[],
    p_statuses    integer[],
    p_successes   boolean[],
    p_durations   bigint[],
    p_times       timestamptz[],
    p_steps       text[],
    p_retry_at    timestamptz[]
) RETURNS SETOF bigint
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM 1 FROM webhooks WHERE id = ANY (p_webhook_ids) ORDER BY id FOR NO KEY UPDATE;

    RETURN QUERY
    WITH input AS (
        -- Ids compare in the byte order of the tables' columns.
        SELECT i.event_id COLLATE "C" AS event_id, i.webhook_id COLLATE "C" AS webhook_id,
               i.token, i.log_id, i.event, i.status, i.success, i.duration, i.created_at,
               i.step, i.retry_at, i.ord
        FROM UNNEST(p_event_ids, p_webhook_ids, p_tokens, p_log_ids, p_events, p_statuses,
                    p_successes, p_durations, p_times, p_steps, p_retry_at)
            WITH ORDINALITY
            AS i(event_id, webhook_id, token, log_id, event, status, success, duration,
                 created_at, step, retry_at, ord)
    ), holding AS (
        -- The attempts that hold their message's token. Locking the messages makes
        -- PostgreSQL check the token again on a message a concurrent claim has just taken
        -- (its lease had run out): that attempt is then refused, as if recorded after.
        SELECT i.ord
        FROM input i
        JOIN webhook_messages m ON m.event_id = i.event_id AND m.webhook_id = i.webhook_id
        WHERE m.attempt_token = i.token
        FOR UPDATE OF m
    ), current AS (
        -- The first attempt of the batch naming each message, if it holds the token.
        SELECT DISTINCT ON (i.event_id, i.webhook_id) i.*
        FROM input i
        WHERE i.ord IN (SELECT ord FROM holding)
        ORDER BY i.event_id, i.webhook_id, i.ord
    ), disabling AS (
        -- The first `disable` of each webhook: later attempts for it find no message.
        SELECT DISTINCT ON (c.webhook_id) c.webhook_id, c.ord
        FROM current c WHERE c.step = 'disable'
        ORDER BY c.webhook_id, c.ord
    ), written AS (
        SELECT c.* FROM current c
        LEFT JOIN disabling d ON d.webhook_id = c.webhook_id
        WHERE d.ord IS NULL OR c.ord <= d.ord
    ), logged AS (
        INSERT INTO webhook_deliveries
            (id, webhook_id, event, status_code, success, duration_ms, created_at)
        SELECT log_id, webhook_id, event, status, success, duration, created_at FROM written
    ), latest AS (
        -- Each webhook's latest attempt of the batch (by time, then batch order).
        SELECT DISTINCT ON (w.webhook_id) w.webhook_id, w.created_at, w.status
        FROM written w
        ORDER BY w.webhook_id, w.created_at DESC, w.ord DESC
    ), touched AS (
        -- An attempt older than the one already shown (a slow sender's) does not replace it.
        UPDATE webhooks h SET
            last_delivery_at = CASE
                WHEN h.last_delivery_at IS NULL OR h.last_delivery_at <= l.created_at
                    THEN l.created_at ELSE h.last_delivery_at END,
            last_delivery_status = CASE
                WHEN h.last_delivery_at IS NULL OR h.last_delivery_at <= l.created_at
                    THEN l.status ELSE h.last_delivery_status END,
            enabled = h.enabled AND NOT EXISTS (
                SELECT 1 FROM disabling d WHERE d.webhook_id = h.id)
        FROM latest l
        WHERE h.id = l.webhook_id
    ), dropped AS (
        DELETE FROM webhook_messages m USING disabling d WHERE m.webhook_id = d.webhook_id
    ), finished AS (
        DELETE FROM webhook_messages m USING written w
        WHERE w.step = 'done'
          AND m.event_id = w.event_id AND m.webhook_id = w.webhook_id
          AND NOT EXISTS (SELECT 1 FROM disabling d WHERE d.webhook_id = w.webhook_id)
    ), retried AS (
        UPDATE webhook_messages m SET
            due_at = w.retry_at, attempt_token = NULL, lease_until = NULL
        FROM written w
        WHERE w.step = 'retry'
          AND m.event_id = w.event_id AND m.webhook_id = w.webhook_id
          AND NOT EXISTS (SELECT 1 FROM disabling d WHERE d.webhook_id = w.webhook_id)
    )
    SELECT w.ord FROM written w;
END
$$;
