-- Counting a batch of requests with a constant number of statements.
--
-- `xf_hit_rate_limits_many` (0006) ran three statements per request of the batch, each
-- unnesting the whole batch's arrays: a batch of n requests cost O(n²) work in the database.
-- This version keeps the same contract and the same guarantees (see 0006) and runs three
-- statements per batch, whatever its size:
--
-- 1. the same locking upsert of every counter the batch may consume (fixed order, no
--    deadlock; no other transaction counts in them until this one commits);
-- 2. one read of every counter the batch names into arrays (consumed ones are locked by 1;
--    peeked ones are read as they are, as before);
-- 3. after the requests were decided one after the other against those arrays, in memory,
--    one update writes back the counters that changed.
--
-- A request's buckets must be contiguous in the arrays, and requests in ascending order of
-- their number (the store's caller builds them so); anything else is refused with an error.
CREATE OR REPLACE FUNCTION xf_hit_rate_limits_many(
    p_requests integer[],
    p_names text[],
    p_windows timestamptz[],
    p_limits bigint[],
    p_consume boolean[]
)
RETURNS TABLE (request integer, counts bigint[], exceeded integer[])
LANGUAGE plpgsql
AS $$
DECLARE
    n integer := coalesce(cardinality(p_requests), 0);
    c_names text[];
    c_windows timestamptz[];
    c_counts bigint[];
    c_before bigint[];
    slot integer[] := array_fill(0, ARRAY[n]);
    counted integer[];
    i integer;
    j integer;
    k integer;
    first integer;
BEGIN
    IF coalesce(cardinality(p_names), 0) <> n OR coalesce(cardinality(p_windows), 0) <> n
       OR coalesce(cardinality(p_limits), 0) <> n OR coalesce(cardinality(p_consume), 0) <> n THEN
        RAISE EXCEPTION 'xf_hit_rate_limits_many: the arrays differ in length';
    END IF;
    IF n = 0 THEN
        RETURN;
    END IF;

    -- Bookkeeping in an unlogged table: no durable commit per batch.
    PERFORM set_config('synchronous_commit', 'off', true);

    INSERT INTO rate_limit_counters AS c (name, window_start, count)
    SELECT d.name, d.window_start, 0
    FROM (
        SELECT DISTINCT t.name, t.window_start
        FROM unnest(p_names, p_windows, p_consume) AS t(name, window_start, consume)
        WHERE t.consume
    ) AS d
    ORDER BY d.name COLLATE "C", d.window_start
    ON CONFLICT (name, window_start) DO UPDATE SET count = c.count;

    SELECT array_agg(d.name), array_agg(d.window_start), array_agg(coalesce(c.count, 0))
    INTO c_names, c_windows, c_counts
    FROM (
        SELECT DISTINCT t.name, t.window_start
        FROM unnest(p_names, p_windows) AS t(name, window_start)
    ) AS d
    LEFT JOIN rate_limit_counters AS c
      ON c.name = d.name AND c.window_start = d.window_start;
    c_before := c_counts;

    -- Each bucket's counter: its index in the c_ arrays (a batch names few distinct ones).
    FOR i IN 1..n LOOP
        FOR j IN 1..cardinality(c_names) LOOP
            IF c_names[j] = p_names[i] AND c_windows[j] = p_windows[i] THEN
                slot[i] := j;
                EXIT;
            END IF;
        END LOOP;
    END LOOP;

    i := 1;
    WHILE i <= n LOOP
        first := i;
        WHILE i <= n AND p_requests[i] = p_requests[first] LOOP
            i := i + 1;
        END LOOP;
        IF i <= n AND p_requests[i] < p_requests[first] THEN
            RAISE EXCEPTION 'xf_hit_rate_limits_many: requests out of order';
        END IF;

        exceeded := '{}';
        FOR k IN first..i - 1 LOOP
            IF p_consume[k] AND c_counts[slot[k]] >= p_limits[k] THEN
                exceeded := exceeded || (k - first);
            END IF;
        END LOOP;
        IF cardinality(exceeded) = 0 THEN
            -- Each distinct consumed counter once, as the lone function counts.
            counted := '{}';
            FOR k IN first..i - 1 LOOP
                IF p_consume[k] AND NOT (slot[k] = ANY (counted)) THEN
                    c_counts[slot[k]] := c_counts[slot[k]] + 1;
                    counted := counted || slot[k];
                END IF;
            END LOOP;
        END IF;

        counts := '{}';
        FOR k IN first..i - 1 LOOP
            counts := counts || c_counts[slot[k]];
        END LOOP;
        request := p_requests[first];
        RETURN NEXT;
    END LOOP;

    UPDATE rate_limit_counters AS c SET count = u.count
    FROM unnest(c_names, c_windows, c_counts, c_before) AS u(name, window_start, count, before)
    WHERE u.count <> u.before AND c.name = u.name AND c.window_start = u.window_start;
END;
$$;
