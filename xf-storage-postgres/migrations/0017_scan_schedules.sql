-- Scan schedules (beyond the spec): one per property, and the record of each claimed slot.
CREATE TABLE scan_schedules (
    property_id     text COLLATE "C" NOT NULL REFERENCES properties (id) ON DELETE CASCADE,
    organization_id text COLLATE "C" NOT NULL,
    frequency       text NOT NULL CHECK (frequency IN ('daily', 'weekly', 'monthly')),
    -- The local time, HH:MM.
    local_time      text NOT NULL CHECK (local_time ~ '^([01][0-9]|2[0-3]):[0-5][0-9]$'),
    -- An IANA zone name.
    timezone        text NOT NULL,
    day_of_week     text CHECK (day_of_week IN ('monday', 'tuesday', 'wednesday', 'thursday',
                                                'friday', 'saturday', 'sunday')),
    day_of_month    smallint CHECK (day_of_month BETWEEN 1 AND 31),
    max_pages       bigint CHECK (max_pages >= 1),
    max_depth       bigint CHECK (max_depth >= 1),
    -- The next slot to claim: a claim moves it on only while it still holds the slot read.
    next_run_at     timestamptz NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    CONSTRAINT scan_schedules_pkey PRIMARY KEY (property_id)
);

-- The runtime's look for due slots.
CREATE INDEX scan_schedules_due_idx ON scan_schedules (next_run_at);

-- Each claimed slot, once: the primary key is the slot's claim.
CREATE TABLE schedule_runs (
    property_id text COLLATE "C" NOT NULL REFERENCES properties (id) ON DELETE CASCADE,
    slot        timestamptz NOT NULL,
    outcome     text NOT NULL CHECK (outcome IN ('queued', 'skipped_busy', 'quota_exceeded')),
    job_id      text COLLATE "C",
    claimed_at  timestamptz NOT NULL,
    CONSTRAINT schedule_runs_pkey PRIMARY KEY (property_id, slot),
    CONSTRAINT schedule_runs_job_check CHECK ((outcome = 'queued') = (job_id IS NOT NULL))
);

-- A slot that queued no scan for want of quota announces it.
ALTER TABLE events DROP CONSTRAINT events_event_type_check;
ALTER TABLE events ADD CONSTRAINT events_event_type_check
    CHECK (event_type IN ('job.completed', 'job.failed', 'job.cancelled', 'scan.schedule.failed',
                          'media.post.published', 'media.post.failed', 'media.completed',
                          'media.failed', 'channel.disconnected'));

ALTER TABLE webhooks DROP CONSTRAINT webhooks_events_check;
ALTER TABLE webhooks ADD CONSTRAINT webhooks_events_check
    CHECK (events <@ ARRAY['job.completed', 'job.failed', 'job.cancelled', 'scan.schedule.failed',
                           'media.post.published', 'media.post.failed', 'media.completed',
                           'media.failed', 'channel.disconnected']::text[]);

ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_event_check
    CHECK (event IN ('job.completed', 'job.failed', 'job.cancelled', 'scan.schedule.failed',
                     'media.post.published', 'media.post.failed', 'media.completed',
                     'media.failed', 'channel.disconnected'));
