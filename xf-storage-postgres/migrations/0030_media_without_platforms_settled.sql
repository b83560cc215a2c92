-- An item with no platform to publish to (an image uploaded without `platforms`) is settled
-- at once, `completed`, unless it is a draft. Items stored before that sat `pending` or
-- `scheduled` for good.
UPDATE media_items SET status = 'completed'
WHERE status IN ('pending', 'scheduled') AND targets = '{}'::jsonb;
