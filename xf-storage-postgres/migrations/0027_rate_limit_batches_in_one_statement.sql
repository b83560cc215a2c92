-- A batch of rate-limit counts in one statement when every request fits.
--
-- Measured on the request path (`request_path.sh`, a build that skipped the count against
-- today's): the rate count was about two fifths of a PostgreSQL `GET`'s cost, 24 µs of the
-- database's CPU and 11 µs of the server's per request, most of it in the PL/pgSQL functions'
-- statements and loops (0009, 0019). Far from the limits every request of a batch is counted,
-- and then no request's outcome depends on another's.
--
-- So the store now sends one plain statement per batch (`xf-storage-postgres/src/guards.rs`):
-- it adds to each consumed counter the number of the batch's requests consuming it, with the
-- same locking upsert in the same fixed order as the functions (no deadlock between them),
-- and checks, with the rows locked, that each counter's new count is within the smallest
-- limit any request gave it. Then every request fits, and the statement returns each
-- counter's count before the batch (the peeked ones as they are), from which the store
-- derives each request's counts as deciding them in order would. When one counter does not
-- fit, the function below raises `XFR01`, the statement's additions are undone with it
-- before anyone could see them, and the store decides the batch in order with
-- `xf_hit_rate_limits_many`, as before.
--
-- This version no longer calls `xf_hit_rate_limits` (0002, 0019), which counted a lone
-- request; it stays for the instances of the previous version that still run during a rolling
-- upgrade, which this migration must not break.
CREATE FUNCTION xf_rate_batch_fits(fits boolean) RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    IF NOT fits THEN
        RAISE EXCEPTION USING ERRCODE = 'XFR01',
            MESSAGE = 'a rate-limit batch reaches a limit: decide it in order';
    END IF;
    RETURN true;
END;
$$;
