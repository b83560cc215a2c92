-- Counting several requests against their rate-limit windows in one round trip.
--
-- Concurrent requests of one instance are gathered (see `guards.rs`) and counted by one call
-- of this function, in the order given, each exactly as `xf_hit_rate_limits` (0002) would
-- count it alone: a request is counted in all of its consumed windows or, when one of them is
-- at its limit, in none; each gets its own counts and exceeded indexes.
--
-- First every counter the batch may consume is created if missing and locked, in one fixed
-- order (name, then window), by one upsert that changes nothing: so two batches (or a batch
-- and a single request) sharing counters cannot deadlock, and no other transaction can count
-- in them until this one commits. Then the requests are decided one after the other against
-- the counts as this transaction sees them, which include the earlier requests of the batch.
--
-- Arguments are parallel arrays, one element per bucket; `p_requests` says which request
-- (an integer chosen by the caller) each bucket belongs to, with a request's buckets in its
-- own order. Returns one row per request: its number, each bucket's count after the call,
-- and the 0-based positions (within the request) of the consumed buckets at their limit.
CREATE FUNCTION xf_hit_rate_limits_many(
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
    r integer;
BEGIN
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

    FOR r IN SELECT DISTINCT x FROM unnest(p_requests) AS x ORDER BY x LOOP
        SELECT coalesce(array_agg(b.pos - 1 ORDER BY b.pos)
                        FILTER (WHERE b.consume AND coalesce(c.count, 0) >= b.lim), '{}')
        INTO exceeded
        FROM (
            SELECT t.name, t.window_start, t.lim, t.consume,
                   row_number() OVER (ORDER BY t.ord) AS pos
            FROM unnest(p_requests, p_names, p_windows, p_limits, p_consume)
                 WITH ORDINALITY AS t(req, name, window_start, lim, consume, ord)
            WHERE t.req = r
        ) AS b
        LEFT JOIN rate_limit_counters AS c
          ON c.name = b.name AND c.window_start = b.window_start;

        IF cardinality(exceeded) = 0 THEN
            UPDATE rate_limit_counters AS c SET count = c.count + 1
            FROM (
                SELECT DISTINCT t.name, t.window_start
                FROM unnest(p_requests, p_names, p_windows, p_consume)
                     AS t(req, name, window_start, consume)
                WHERE t.req = r AND t.consume
            ) AS d
            WHERE c.name = d.name AND c.window_start = d.window_start;
        END IF;

        SELECT array_agg(coalesce(c.count, 0) ORDER BY t.ord)
        INTO counts
        FROM unnest(p_requests, p_names, p_windows)
             WITH ORDINALITY AS t(req, name, window_start, ord)
        LEFT JOIN rate_limit_counters AS c
          ON c.name = t.name AND c.window_start = t.window_start
        WHERE t.req = r;

        request := r;
        RETURN NEXT;
    END LOOP;
END;
$$;
