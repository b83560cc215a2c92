-- An event written while no enabled webhook of its organization subscribes to its type has
-- nobody to go to: it is written already fanned out, so no fan-out reads it, marks it (a
-- second version of the row and of its index entries) or wakes for it. Most organizations
-- have no webhook, and every job that finishes writes an event: measured with
-- `--bench jobs`, the separate fan-out of such events was a fifth of a job's database time.
--
-- The check reads the webhooks without locking them. A webhook created, enabled or
-- subscribed while the event's statement runs may not be seen, and then does not get the
-- event, which happened before it could: the same answer as for any earlier event. A webhook
-- being disabled or deleted meanwhile is seen as it was, and the event goes through the
-- fan-out, whose share locks decide (0005).
CREATE FUNCTION xf_event_without_subscriber() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT NEW.fanned_out AND NOT EXISTS (
        SELECT 1 FROM webhooks w
        WHERE w.organization_id = NEW.organization_id
          AND w.enabled
          AND NEW.event_type = ANY (w.events)
    ) THEN
        NEW.fanned_out := true;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER events_without_subscriber
    BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION xf_event_without_subscriber();

-- Only events a fan-out will take wake the delivery engines.
CREATE OR REPLACE FUNCTION xf_notify_events_written() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM inserted WHERE NOT fanned_out) THEN
        PERFORM pg_notify('xf_events', '');
    END IF;
    RETURN NULL;
END
$$;
