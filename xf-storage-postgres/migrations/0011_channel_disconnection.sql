-- A channel whose grant was revoked is kept, marked disconnected with the platform's reason,
-- until the host connects it again (which clears the mark): its pending posts fail with that
-- reason instead of calling the platform.
ALTER TABLE channels
    ADD COLUMN disconnected text;
