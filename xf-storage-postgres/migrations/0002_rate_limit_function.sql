-- Counting a request against its rate-limit windows in one round trip.
--
-- `hit_rate_limits` runs for every authenticated request, so it is one function call in an
-- implicit transaction instead of BEGIN / upsert / COMMIT from the client: a third of the
-- round trips, the same guarantees.
--
-- It counts the request in every consumed window first. That upsert locks each counter row,
-- in a fixed order (name, then window) so that two requests sharing counters cannot deadlock,
-- and keeps them locked until the function's transaction commits. If any consumed counter was
-- already at its limit, it takes the increments back before committing; as no other
-- transaction can read past the locks in between, nothing was ever counted (all or nothing,
-- exact across instances). Counters that are only peeked are read without locks.
--
-- Arguments are parallel arrays, one element per bucket. Returns each bucket's count after
-- the call, in argument order, and the 0-based indexes of the consumed buckets that were at
-- their limit (empty when the request was counted).
CREATE FUNCTION xf_hit_rate_limits(
    p_names text[],
    p_windows timestamptz[],
    p_limits bigint[],
    p_consume boolean[],
    OUT counts bigint[],
    OUT exceeded integer[]
)
LANGUAGE plpgsql
AS $$
BEGIN
    -- Bookkeeping in an unlogged table: no durable commit per request.
    PERFORM set_config('synchronous_commit', 'off', true);

    INSERT INTO rate_limit_counters AS c (name, window_start, count)
    SELECT d.name, d.window_start, 1
    FROM (
        SELECT DISTINCT t.name, t.window_start
        FROM unnest(p_names, p_windows, p_consume) AS t(name, window_start, consume)
        WHERE t.consume
    ) AS d
    ORDER BY d.name COLLATE "C", d.window_start
    ON CONFLICT (name, window_start) DO UPDATE SET count = c.count + 1;

    SELECT coalesce(array_agg(t.ord - 1 ORDER BY t.ord)
                    FILTER (WHERE t.consume AND r.count > t.lim), '{}')
    INTO exceeded
    FROM unnest(p_names, p_windows, p_limits, p_consume)
         WITH ORDINALITY AS t(name, window_start, lim, consume, ord)
    JOIN rate_limit_counters AS r
      ON r.name = t.name AND r.window_start = t.window_start;

    IF cardinality(exceeded) > 0 THEN
        UPDATE rate_limit_counters AS c SET count = c.count - 1
        FROM (
            SELECT DISTINCT t.name, t.window_start
            FROM unnest(p_names, p_windows, p_consume) AS t(name, window_start, consume)
            WHERE t.consume
        ) AS d
        WHERE c.name = d.name AND c.window_start = d.window_start;
    END IF;

    SELECT array_agg(coalesce(r.count, 0) ORDER BY t.ord)
    INTO counts
    FROM unnest(p_names, p_windows)
         WITH ORDINALITY AS t(name, window_start, ord)
    LEFT JOIN rate_limit_counters AS r
      ON r.name = t.name AND r.window_start = t.window_start;
END;
$$;
