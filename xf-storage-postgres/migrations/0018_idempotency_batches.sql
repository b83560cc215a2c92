-- Claiming and completing idempotency keys in batches: one call (one round trip, one commit)
-- for all the claims, or all the completions, that an instance's requests are waiting for,
-- each decided exactly as alone (see `GuardStore::claim_idempotency_key`).
--
-- Their statements keep one plan (`force_generic_plan`): planned anew on each call, as the
-- planner otherwise chooses for statements over array parameters, they cost more to plan
-- than to run.
--
-- Rows are visited in the order of their scope, so two batches that touch the same records
-- (from two instances) lock them in the same order and cannot deadlock. Within a batch the
-- requests are decided one after the other, so two claims of one scope in a batch behave as
-- two claims in a row: the second sees the first's record.

-- Claims: for each request, its number in the arrays (1-based), whether it acquired the key,
-- and otherwise the record that made it decline (locked by the upsert while it is read).
CREATE OR REPLACE FUNCTION xf_claim_idempotency_keys(
    p_scopes text[],
    p_fingerprints text[],
    p_nows timestamptz[],
    p_expired_before timestamptz[],
    p_stale_before timestamptz[]
)
RETURNS TABLE (request integer, acquired boolean, held_fingerprint text,
               held_status integer, held_body text)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    n integer := coalesce(cardinality(p_scopes), 0);
    idx integer;
    claimed text;
BEGIN
    IF coalesce(cardinality(p_fingerprints), 0) <> n OR coalesce(cardinality(p_nows), 0) <> n
       OR coalesce(cardinality(p_expired_before), 0) <> n
       OR coalesce(cardinality(p_stale_before), 0) <> n THEN
        RAISE EXCEPTION 'xf_claim_idempotency_keys: the arrays differ in length';
    END IF;

    -- A claim promises nothing to anyone yet: the write it guards commits durably after it,
    -- and that commit's flush of the log carries this one (the log is written in order). A
    -- claim lost in a crash leaves the key free, which is right, as its request then changed
    -- nothing. The completions below are durable before the response leaves.
    PERFORM set_config('synchronous_commit', 'off', true);

    FOR idx IN
        SELECT t.o FROM unnest(p_scopes) WITH ORDINALITY AS t(scope, o)
        ORDER BY t.scope COLLATE "C", t.o
    LOOP
        claimed := NULL;
        -- Claims the key when it is new, when the record expired (then it is replaced), or
        -- when the same request's unfinished claim went stale (then only the claim time
        -- moves). Otherwise the upsert updates nothing but locks the existing row.
        INSERT INTO idempotency_keys AS k (scope, fingerprint, created_at, claimed_at)
        VALUES (p_scopes[idx], p_fingerprints[idx], p_nows[idx], p_nows[idx])
        ON CONFLICT (scope) DO UPDATE SET
            fingerprint = EXCLUDED.fingerprint,
            created_at = CASE WHEN k.created_at < p_expired_before[idx]
                              THEN EXCLUDED.created_at ELSE k.created_at END,
            claimed_at = EXCLUDED.claimed_at,
            response_status = NULL,
            response_body = NULL
        WHERE k.created_at < p_expired_before[idx]
           OR (k.fingerprint = EXCLUDED.fingerprint
               AND k.response_status IS NULL
               AND k.claimed_at < p_stale_before[idx])
        RETURNING k.scope INTO claimed;

        request := idx;
        IF claimed IS NOT NULL THEN
            acquired := true;
            held_fingerprint := NULL;
            held_status := NULL;
            held_body := NULL;
        ELSE
            acquired := false;
            SELECT k.fingerprint, k.response_status, k.response_body
            INTO held_fingerprint, held_status, held_body
            FROM idempotency_keys AS k
            WHERE k.scope = p_scopes[idx];
        END IF;
        RETURN NEXT;
    END LOOP;
END;
$$;

-- Completions: stores each response on its record, where the record still has the request's
-- fingerprint; durable when the call returns.
CREATE OR REPLACE FUNCTION xf_complete_idempotency_keys(
    p_scopes text[],
    p_fingerprints text[],
    p_statuses integer[],
    p_bodies text[]
)
RETURNS void
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    n integer := coalesce(cardinality(p_scopes), 0);
    idx integer;
BEGIN
    IF coalesce(cardinality(p_fingerprints), 0) <> n OR coalesce(cardinality(p_statuses), 0) <> n
       OR coalesce(cardinality(p_bodies), 0) <> n THEN
        RAISE EXCEPTION 'xf_complete_idempotency_keys: the arrays differ in length';
    END IF;
    FOR idx IN
        SELECT t.o FROM unnest(p_scopes) WITH ORDINALITY AS t(scope, o)
        ORDER BY t.scope COLLATE "C", t.o
    LOOP
        UPDATE idempotency_keys
        SET response_status = p_statuses[idx], response_body = p_bodies[idx]
        WHERE scope = p_scopes[idx] AND fingerprint = p_fingerprints[idx];
    END LOOP;
END;
$$;
