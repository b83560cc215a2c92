-- xf: initial schema of the PostgreSQL store.
--
-- Conventions, and why:
-- * Identifiers (`org_…`, `key_…`, `job_…`, report tokens, …) are text produced by the
--   application, not database sequences, so that any number of stateless instances can create
--   rows without coordinating. They are declared COLLATE "C": ordering and keyset comparisons
--   are then plain byte order, exactly the order Rust's `String` uses in the in-memory store,
--   whatever the database's default collation is.
-- * Instants are `timestamptz`. The application truncates them to milliseconds before writing,
--   so a value read back compares equal to the value written.
-- * Every list is newest first, `created_at DESC, id DESC`, paged with the keyset condition
--   `(created_at, id) < ($after_created_at, $after_id)`. Each list has a btree index whose
--   leading columns are the list's owner followed by `(created_at DESC, id DESC)`, so a page is
--   one index range scan of at most `limit` matching entries: no list query scans a table, and
--   a page deep in a long list costs the same as the first one.
-- * There are no foreign keys. Rows of domain tables are never deleted, the use cases create
--   parents before children, and the storage contract (like the in-memory store) does not
--   require a parent to exist. A foreign key would also take a KEY SHARE lock on the parent
--   row for every insert of a child, adding contention on the hottest rows (organizations)
--   for no rule the service relies on.
-- * Status-like columns are text with CHECK constraints rather than enum types: the values are
--   the API's wire names, and adding a value later is a constraint change, not a type change.
-- * Counters that the API promises to enforce exactly (scan quota, key cap, rate limits) are
--   changed only by conditional statements inside transactions, never by read-then-write in
--   the application; see the crate documentation for each rule.

-- Customer organizations (workspaces).
CREATE TABLE organizations (
    id          text COLLATE "C" NOT NULL,
    name        text NOT NULL,
    -- The plan's name in the host's catalog; not constrained here because the catalog is
    -- configuration, not data.
    plan        text NOT NULL,
    shop_domain text,
    -- Per-organization limit overrides (`LimitOverrides`) as camelCase JSON; absent or null
    -- fields keep the plan's value. JSONB so that new overridable limits need no migration.
    limits      jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at  timestamptz NOT NULL,
    CONSTRAINT organizations_pkey PRIMARY KEY (id)
);

-- `find_organization_by_name` returns the first-created organization with a name (the
-- standalone server's `--demo` looks its organization up this way).
CREATE INDEX organizations_name_idx ON organizations (name, created_at, id);

-- API keys. Only the SHA-256 hash of the secret is stored.
CREATE TABLE api_keys (
    id              text COLLATE "C" NOT NULL,
    organization_id text COLLATE "C" NOT NULL,
    mode            text NOT NULL CHECK (mode IN ('live', 'test')),
    -- Lower-case hex SHA-256 of the full key: every authenticated request looks a key up by
    -- it, and two keys must never share one.
    key_hash        text COLLATE "C" NOT NULL,
    created_at      timestamptz NOT NULL,
    revoked_at      timestamptz,
    CONSTRAINT api_keys_pkey PRIMARY KEY (id),
    CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash)
);

-- Listing an organization's keys, oldest first.
CREATE INDEX api_keys_organization_idx ON api_keys (organization_id, created_at, id);

-- Counting an organization's unrevoked keys for the `maxActiveKeys` cap reads only those.
CREATE INDEX api_keys_active_idx ON api_keys (organization_id) WHERE revoked_at IS NULL;

-- Websites registered by organizations.
CREATE TABLE properties (
    id              text COLLATE "C" NOT NULL,
    organization_id text COLLATE "C" NOT NULL,
    name            text NOT NULL,
    -- The normalised URL. Unique per organization: the constraint, not a prior lookup, is
    -- what rejects a concurrent second registration of the same URL from another instance.
    url             text COLLATE "C" NOT NULL,
    verified        boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL,
    -- The Search Console site linked by the host, if any.
    gsc_site_url    text,
    CONSTRAINT properties_organization_url_key UNIQUE (organization_id, url)
);

-- Added after the URL constraint on purpose: PostgreSQL checks unique indexes in creation
-- order, so a row that repeats both the id and the URL is reported as a duplicate URL, the
-- rule the API reports (and the one the in-memory store checks first).
ALTER TABLE properties ADD CONSTRAINT properties_pkey PRIMARY KEY (id);

-- `GET /properties`: newest first per organization; also serves `count_properties`.
CREATE INDEX properties_organization_page_idx
    ON properties (organization_id, created_at DESC, id DESC);

-- Background jobs (scans and crawls).
CREATE TABLE jobs (
    id              text COLLATE "C" NOT NULL,
    organization_id text COLLATE "C" NOT NULL,
    job_type        text COLLATE "C" NOT NULL,
    status          text NOT NULL
        CHECK (status IN ('pending', 'processing', 'completed', 'failed', 'cancelled')),
    progress        smallint NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 100),
    property_id     text COLLATE "C" NOT NULL,
    -- Copies taken when the job was queued, as the API shows them on the job.
    property_name   text NOT NULL,
    tenant_type     text NOT NULL,
    tenant_label    text NOT NULL,
    shop_domain     text,
    -- Crawl budgets (u32 in the application).
    max_pages       bigint NOT NULL CHECK (max_pages >= 0),
    max_depth       bigint NOT NULL CHECK (max_depth >= 0),
    created_at      timestamptz NOT NULL,
    started_at      timestamptz,
    completed_at    timestamptz,
    error           text,
    -- The result of a completed scan: all three or none.
    result_score         bigint,
    result_pages_scanned bigint,
    result_issues_count  bigint,
    CONSTRAINT jobs_pkey PRIMARY KEY (id),
    CONSTRAINT jobs_result_complete CHECK (
        (result_score IS NULL) = (result_pages_scanned IS NULL)
        AND (result_score IS NULL) = (result_issues_count IS NULL)
    )
);

-- `GET /jobs`: newest first per organization. Also serves `job_counts_by_type` (a range of
-- `created_at` within the organization) and the `type` filter (every job is `seo-scan`
-- today, so an index on the type would select nothing).
CREATE INDEX jobs_organization_page_idx
    ON jobs (organization_id, created_at DESC, id DESC);

-- `GET /jobs?status=…`: a page of one state does not wade through the other states.
CREATE INDEX jobs_organization_status_page_idx
    ON jobs (organization_id, status, created_at DESC, id DESC);

-- `GET /jobs?propertyId=…` and `latest_job_for_property` (the `lastScan` include).
CREATE INDEX jobs_property_page_idx
    ON jobs (property_id, created_at DESC, id DESC);

-- `count_active_jobs`: only live jobs are indexed, so the count stays small and cheap no
-- matter how many finished jobs an organization accumulates.
CREATE INDEX jobs_organization_active_idx
    ON jobs (organization_id) WHERE status IN ('pending', 'processing');

-- Problems scans found on properties.
CREATE TABLE issues (
    id              text COLLATE "C" NOT NULL,
    organization_id text COLLATE "C" NOT NULL,
    property_id     text COLLATE "C" NOT NULL,
    -- The scan that last saw it.
    job_id          text COLLATE "C" NOT NULL,
    scan_kind       text NOT NULL CHECK (scan_kind IN ('page', 'site')),
    issue_type      text NOT NULL,
    severity        text NOT NULL CHECK (severity IN ('error', 'warning', 'notice')),
    -- The page, for page issues; null for site issues.
    url             text,
    message         text NOT NULL,
    status          text NOT NULL CHECK (status IN ('open', 'resolved', 'fixed')),
    created_at      timestamptz NOT NULL,
    last_seen_at    timestamptz NOT NULL,
    resolved_at     timestamptz,
    fixed_at        timestamptz,
    CONSTRAINT issues_pkey PRIMARY KEY (id)
);

-- `GET /properties/{id}/issues`: newest first per property; also serves `issue_summary`.
CREATE INDEX issues_property_page_idx
    ON issues (property_id, created_at DESC, id DESC);

-- The `status` filter of the issue list.
CREATE INDEX issues_property_status_page_idx
    ON issues (property_id, status, created_at DESC, id DESC);

-- The `scanKind` filter of the issue list.
CREATE INDEX issues_property_scan_kind_page_idx
    ON issues (property_id, scan_kind, created_at DESC, id DESC);

-- Shared audit report links.
CREATE TABLE reports (
    -- The secret token of the public link; it doubles as the id (and keyset tie-breaker).
    token           text COLLATE "C" NOT NULL,
    organization_id text COLLATE "C" NOT NULL,
    property_id     text COLLATE "C" NOT NULL,
    scan_id         text COLLATE "C" NOT NULL,
    expires_at      timestamptz NOT NULL,
    view_count      bigint NOT NULL DEFAULT 0 CHECK (view_count >= 0),
    created_at      timestamptz NOT NULL,
    CONSTRAINT reports_pkey PRIMARY KEY (token)
);

-- The list of live reports: newest first per organization; expired ones are filtered while
-- walking the index (they are few: links are short-lived and listed newest first).
CREATE INDEX reports_organization_page_idx
    ON reports (organization_id, created_at DESC, token DESC);

-- Monthly plan meters, one row per organization and UTC month (`YYYY-MM`). The `scans`
-- meter is the monthly scan quota: it is only ever raised by a conditional upsert that
-- refuses to pass the limit, in the same transaction that inserts the job it pays for.
CREATE TABLE usage_counters (
    organization_id   text COLLATE "C" NOT NULL,
    month             text COLLATE "C" NOT NULL,
    scans             bigint NOT NULL DEFAULT 0 CHECK (scans >= 0),
    ai_input_tokens   bigint NOT NULL DEFAULT 0 CHECK (ai_input_tokens >= 0),
    ai_output_tokens  bigint NOT NULL DEFAULT 0 CHECK (ai_output_tokens >= 0),
    redirects_created bigint NOT NULL DEFAULT 0 CHECK (redirects_created >= 0),
    images_optimized  bigint NOT NULL DEFAULT 0 CHECK (images_optimized >= 0),
    CONSTRAINT usage_counters_pkey PRIMARY KEY (organization_id, month)
);

-- Fixed-window rate-limit counters, one row per counter name and window start.
--
-- UNLOGGED: every API request increments one of these, and a WAL-logged, fsynced commit per
-- request would make the database's disk the limit of the API's throughput. An unlogged
-- table writes no WAL; the price is that PostgreSQL empties it after a crash (not after a
-- clean restart), which at worst grants callers a fresh window once. The transactions that
-- touch it also run with `synchronous_commit = off`. Domain tables stay logged and durable.
CREATE UNLOGGED TABLE rate_limit_counters (
    name         text COLLATE "C" NOT NULL,
    window_start timestamptz NOT NULL,
    count        bigint NOT NULL DEFAULT 0 CHECK (count >= 0),
    CONSTRAINT rate_limit_counters_pkey PRIMARY KEY (name, window_start)
);

-- `purge_expired` deletes whole windows that ended.
CREATE INDEX rate_limit_counters_window_idx ON rate_limit_counters (window_start);

-- Idempotency records, one per scope (organization, key mode and Idempotency-Key).
--
-- Logged, unlike the rate-limit counters: a record lost in a crash would let a retry repeat a
-- write (a second job, a second property) that did survive.
CREATE TABLE idempotency_keys (
    scope           text COLLATE "C" NOT NULL,
    -- Hash of method, path and body of the request that claimed the key.
    fingerprint     text COLLATE "C" NOT NULL,
    -- When the record was created; after 24 h it is expired and replaced by a new claim.
    created_at      timestamptz NOT NULL,
    -- When the current claim was made; an unfinished claim older than 60 s belongs to a
    -- request that died and may be taken over.
    claimed_at      timestamptz NOT NULL,
    -- The response to replay, once the request finished; both or neither.
    response_status integer,
    response_body   text,
    CONSTRAINT idempotency_keys_pkey PRIMARY KEY (scope),
    CONSTRAINT idempotency_keys_response_complete
        CHECK ((response_status IS NULL) = (response_body IS NULL))
);

-- `purge_expired` deletes expired records.
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
