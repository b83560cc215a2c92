-- Scan history: each completed scan's figures and what it changed, written by the transaction
-- that completes the scan (`GET /properties/{id}/scans` and `/scans/{jobId}/changes`).
CREATE TABLE scan_history (
    job_id          text COLLATE "C" NOT NULL,
    organization_id text COLLATE "C" NOT NULL,
    property_id     text COLLATE "C" NOT NULL,
    completed_at    timestamptz NOT NULL,
    score           integer NOT NULL CHECK (score BETWEEN 0 AND 100),
    pages_scanned   bigint NOT NULL CHECK (pages_scanned >= 0),
    issues_count    bigint NOT NULL CHECK (issues_count >= 0),
    -- Findings by severity.
    critical        bigint NOT NULL CHECK (critical >= 0),
    high            bigint NOT NULL CHECK (high >= 0),
    medium          bigint NOT NULL CHECK (medium >= 0),
    low             bigint NOT NULL CHECK (low >= 0),
    -- Findings by check: {"title_missing": 3, ...}.
    by_check        jsonb NOT NULL CHECK (jsonb_typeof(by_check) = 'object'),
    -- What it changed.
    opened          bigint NOT NULL CHECK (opened >= 0),
    resolved        bigint NOT NULL CHECK (resolved >= 0),
    reopened        bigint NOT NULL CHECK (reopened >= 0),
    CONSTRAINT scan_history_pkey PRIMARY KEY (job_id)
);

-- A property's scans in completion order (the report's trend, the scan before another).
CREATE INDEX scan_history_property_idx
    ON scan_history (property_id, completed_at DESC, job_id DESC);

-- Each issue a scan opened, resolved or reopened.
CREATE TABLE issue_changes (
    job_id     text COLLATE "C" NOT NULL REFERENCES scan_history (job_id) ON DELETE CASCADE,
    issue_id   text COLLATE "C" NOT NULL,
    issue_type text NOT NULL,
    change     text NOT NULL CHECK (change IN ('opened', 'resolved', 'reopened')),
    CONSTRAINT issue_changes_pkey PRIMARY KEY (job_id, issue_id)
);

-- The issue list's `severity` filter.
CREATE INDEX issues_property_severity_page_idx
    ON issues (property_id, severity, created_at DESC, id DESC);
