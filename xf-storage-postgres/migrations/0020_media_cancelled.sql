-- A media item whose every post was cancelled before it was published (`POST
-- /media/{videos|images}/{id}/cancel`) is `cancelled`. Posts keep their status in `targets`
-- (JSON), where `cancelled` needs no change.
ALTER TABLE media_items DROP CONSTRAINT media_items_status_check;
ALTER TABLE media_items ADD CONSTRAINT media_items_status_check CHECK (status IN
    ('draft', 'pending', 'scheduled', 'processing', 'completed', 'failed', 'cancelled'));
