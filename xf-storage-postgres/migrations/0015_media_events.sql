-- Media events: the outbox also carries events that are not about a job (a post published or
-- failed, a media item settled, a channel disconnected). Such an event has no job and carries
-- its delivery's `data`, taken in the transaction of the change it announces; a job event has
-- a job and no data (its job is read when it is delivered). Webhooks may subscribe to them,
-- and the delivery log names them.
ALTER TABLE events ALTER COLUMN job_id DROP NOT NULL;
ALTER TABLE events ADD COLUMN data jsonb;
ALTER TABLE events ADD CONSTRAINT events_subject_check
    CHECK ((job_id IS NULL) <> (data IS NULL));

ALTER TABLE events DROP CONSTRAINT events_event_type_check;
ALTER TABLE events ADD CONSTRAINT events_event_type_check
    CHECK (event_type IN ('job.completed', 'job.failed', 'job.cancelled',
                          'media.post.published', 'media.post.failed', 'media.completed',
                          'media.failed', 'channel.disconnected'));

ALTER TABLE webhooks DROP CONSTRAINT webhooks_events_check;
ALTER TABLE webhooks ADD CONSTRAINT webhooks_events_check
    CHECK (events <@ ARRAY['job.completed', 'job.failed', 'job.cancelled',
                           'media.post.published', 'media.post.failed', 'media.completed',
                           'media.failed', 'channel.disconnected']::text[]);

ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_event_check
    CHECK (event IN ('job.completed', 'job.failed', 'job.cancelled',
                     'media.post.published', 'media.post.failed', 'media.completed',
                     'media.failed', 'channel.disconnected'));
