-- The job engine: payloads, attempts and leases on jobs, the queue's indexes, wake-up
-- notifications, and the event outbox.

-- A prefixed, time-ordered id (`evt_` and 32 hex digits: 12 of milliseconds since the epoch,
-- 20 random), for rows written by statements that create a variable number of them.
CREATE FUNCTION xf_new_id(prefix text) RETURNS text
LANGUAGE sql VOLATILE AS $$
    SELECT prefix || '_'
        || lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0')
        || substr(replace(gen_random_uuid()::text, '-', ''), 13)
$$;

-- The handler's input and output are JSON documents now, so one table serves every job type;
-- the scan budgets and result move into them.
ALTER TABLE jobs
    ADD COLUMN payload          jsonb NOT NULL DEFAULT '{}'::jsonb,
    ADD COLUMN result           jsonb,
    -- Attempts started; the job fails once `max_attempts` of them failed or died.
    ADD COLUMN attempts         integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    ADD COLUMN max_attempts     integer NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
    -- Not claimed before this (retries wait out their backoff).
    ADD COLUMN run_at           timestamptz,
    -- The running attempt: its token (kept after a cancel, so its heartbeat learns of it) and
    -- its lease (set exactly while the job is processing).
    ADD COLUMN attempt_token    uuid,
    ADD COLUMN lease_expires_at timestamptz;

UPDATE jobs SET
    payload = jsonb_build_object('maxPages', max_pages, 'maxDepth', max_depth),
    result = CASE WHEN result_score IS NULL THEN NULL ELSE jsonb_build_object(
        'score', result_score,
        'pagesScanned', result_pages_scanned,
        'issuesCount', result_issues_count) END,
    run_at = created_at,
    attempts = CASE WHEN started_at IS NULL THEN 0 ELSE 1 END,
    -- Nothing ran jobs before this migration; a job marked processing is rescued at once.
    lease_expires_at = CASE WHEN status = 'processing' THEN created_at END;

ALTER TABLE jobs
    ALTER COLUMN payload DROP DEFAULT,
    ALTER COLUMN run_at SET NOT NULL,
    DROP CONSTRAINT jobs_result_complete,
    DROP COLUMN max_pages,
    DROP COLUMN max_depth,
    DROP COLUMN result_score,
    DROP COLUMN result_pages_scanned,
    DROP COLUMN result_issues_count,
    -- Always `organization`: a constant of the API, not data.
    DROP COLUMN tenant_type,
    ADD CONSTRAINT jobs_lease_while_processing
        CHECK ((status = 'processing') = (lease_expires_at IS NOT NULL));

-- Claiming: due pending jobs in `run_at` order. Only pending jobs are indexed, so the index
-- stays as small as the queue however many finished jobs the table holds.
CREATE INDEX jobs_ready_idx ON jobs (run_at, id) WHERE status = 'pending';

-- `count_active_jobs` is served by jobs_organization_status_page_idx (two status ranges of
-- one organization); every index of this table is written on each state change of a job, so
-- one fewer makes the queue cheaper.
DROP INDEX jobs_organization_active_idx;

-- A claim: up to `claim_limit` due pending jobs of the given types, oldest `run_at` first,
-- skipping rows other claims hold (SKIP LOCKED: concurrent workers never wait for each other
-- nor get the same job), each starting an attempt with a new token and lease.
--
-- A function, for two reasons. It carries its own planner settings: the only good plan reads
-- `jobs_ready_idx` in order and stops after `claim_limit` rows, but with stale statistics (a
-- queue's content changes faster than ANALYZE runs) the planner may instead collect and sort
-- every pending row, turning each claim into a scan of the whole queue. And it is PL/pgSQL,
-- whose statements keep their plan for the session, where a SQL function is planned again on
-- every call (0.79 ms against 0.48 ms a claim, measured with pgbench).
CREATE FUNCTION xf_claim_jobs(
    claim_now timestamptz,
    claim_types text[],
    claim_limit integer,
    claim_lease timestamptz
) RETURNS SETOF jobs
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_sort = off
AS $$
BEGIN
    RETURN QUERY
    WITH picked AS (
        SELECT j.id AS picked_id FROM jobs j
        WHERE j.status = 'pending' AND j.run_at <= claim_now AND j.job_type = ANY (claim_types)
        ORDER BY j.run_at, j.id
        LIMIT claim_limit
        FOR UPDATE SKIP LOCKED
    )
    UPDATE jobs SET
        status = 'processing',
        attempts = jobs.attempts + 1,
        attempt_token = gen_random_uuid(),
        lease_expires_at = claim_lease,
        started_at = COALESCE(jobs.started_at, claim_now)
    FROM picked
    WHERE jobs.id = picked_id
    RETURNING jobs.*;
END
$$;

-- Rescue: running jobs by lease end.
CREATE INDEX jobs_lease_idx ON jobs (lease_expires_at) WHERE status = 'processing';

-- New jobs wake idle workers: one notification per inserting statement (not per row), which
-- PostgreSQL also folds together within a transaction.
CREATE FUNCTION xf_notify_jobs_ready() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('xf_jobs_ready', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_ready_notify
    AFTER INSERT ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION xf_notify_jobs_ready();

-- The outbox: each final state change of a job, written by the same statement as the change.
CREATE TABLE events (
    id              text COLLATE "C" NOT NULL,
    organization_id text COLLATE "C" NOT NULL,
    event_type      text NOT NULL
        CHECK (event_type IN ('job.completed', 'job.failed', 'job.cancelled')),
    job_id          text COLLATE "C" NOT NULL,
    created_at      timestamptz NOT NULL,
    CONSTRAINT events_pkey PRIMARY KEY (id)
);

CREATE INDEX events_job_idx ON events (job_id, id);
