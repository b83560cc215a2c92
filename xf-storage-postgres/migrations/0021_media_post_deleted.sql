-- A published post deleted from its platform (`DELETE /media/{videos|images}/{id}/posts/
-- {platform}`) announces it: `media.post.deleted`. Posts keep their status (`deleting`,
-- `deleted`) in `targets` (JSON), which needs no change.
ALTER TABLE events DROP CONSTRAINT events_event_type_check;
ALTER TABLE events ADD CONSTRAINT events_event_type_check
    CHECK (event_type IN ('job.completed', 'job.failed', 'job.cancelled', 'scan.schedule.failed',
                          'media.post.published', 'media.post.failed', 'media.post.deleted',
                          'media.completed', 'media.failed', 'channel.disconnected'));

ALTER TABLE webhooks DROP CONSTRAINT webhooks_events_check;
ALTER TABLE webhooks ADD CONSTRAINT webhooks_events_check
    CHECK (events <@ ARRAY['job.completed', 'job.failed', 'job.cancelled', 'scan.schedule.failed',
                           'media.post.published', 'media.post.failed', 'media.post.deleted',
                           'media.completed', 'media.failed', 'channel.disconnected']::text[]);

ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_event_check
    CHECK (event IN ('job.completed', 'job.failed', 'job.cancelled', 'scan.schedule.failed',
                     'media.post.published', 'media.post.failed', 'media.post.deleted',
                     'media.completed', 'media.failed', 'channel.disconnected'));
