-- Search Console: the organizations' linked Google accounts, the claims that keep two syncs of
-- one property apart, each property's snapshot and its query and page rows, and the pages of
-- each property's latest completed scan (which a sync joins with its page rows).
--
-- Foreign keys, as in 0005: these rows belong to their organization or property and go with
-- it. The parents are written rarely, so the KEY SHARE lock a check takes costs nothing that
-- matters.
--
-- Collations: ids are COLLATE "C" like everywhere else. The other strings (site URLs, page
-- URLs, queries) are only ever compared for equality, with columns of the default collation
-- (`properties.gsc_site_url`, `issues.url`), so they keep the default collation too: two
-- columns of different collations cannot be compared without an explicit COLLATE.

-- An organization's linked Google account; linking again replaces the row.
CREATE TABLE gsc_accounts (
    organization_id      text COLLATE "C" NOT NULL
        REFERENCES organizations (id) ON DELETE CASCADE,
    -- The refresh token, sealed by the application (never in the clear).
    sealed_refresh_token text NOT NULL,
    account_email        text,
    -- When it was linked: a revocation names the linking it is about, so one of an account
    -- linked again meanwhile changes nothing.
    linked_at            timestamptz NOT NULL,
    -- When Google refused the token; set until the account is linked again.
    revoked_at           timestamptz,
    CONSTRAINT gsc_accounts_pkey PRIMARY KEY (organization_id)
);

-- Who is syncing a property, until when. A claim is taken by one conditional upsert (no row,
-- or the holder's time ran out), so two instances can never both hold it; a sync that dies
-- holds it only until `until`.
CREATE TABLE gsc_sync_claims (
    property_id text COLLATE "C" NOT NULL REFERENCES properties (id) ON DELETE CASCADE,
    -- The holder's token.
    claim       text COLLATE "C" NOT NULL,
    until       timestamptz NOT NULL,
    CONSTRAINT gsc_sync_claims_pkey PRIMARY KEY (property_id)
);

-- A property's latest sync, without its rows. Replaced together with its rows, in one
-- transaction that locks this row first (so two replacements of one property follow each
-- other instead of mixing their rows).
CREATE TABLE gsc_snapshots (
    property_id     text COLLATE "C" NOT NULL REFERENCES properties (id) ON DELETE CASCADE,
    organization_id text COLLATE "C" NOT NULL,
    -- The Search Console site it was fetched from. The property may be mapped to another
    -- site since: the snapshot then no longer counts (see `gsc_portfolio`).
    site_url        text NOT NULL,
    synced_at       timestamptz NOT NULL,
    -- The window (Google's dates, Pacific time).
    start_date      date NOT NULL,
    end_date        date NOT NULL,
    -- The totals over the window; the average position is null without impressions.
    clicks          bigint NOT NULL CHECK (clicks >= 0),
    impressions     bigint NOT NULL CHECK (impressions >= 0),
    ctr             double precision NOT NULL,
    position        double precision,
    -- The daily series, oldest first: an array of
    -- `{"date": "YYYY-MM-DD", "clicks": n, "impressions": n, "position": x | null}`.
    -- Read back through SQL casts (`(e ->> 'position')::float8`), which restore the exact
    -- double the application wrote.
    daily           jsonb NOT NULL,
    -- Rows stored in `gsc_rows`, per kind.
    query_count     integer NOT NULL CHECK (query_count >= 0),
    page_count      integer NOT NULL CHECK (page_count >= 0),
    -- How the page rows met the latest completed scan: `{"scanId": id | null, "scannedAt":
    -- RFC 3339 | null, "pagesCrawled": n, "pagesNotCrawled": n, "pagesWithErrors": n,
    -- "pagesWithOpenIssues": n}`.
    correlation     jsonb NOT NULL,
    CONSTRAINT gsc_snapshots_pkey PRIMARY KEY (property_id)
);

-- An organization's snapshots.
CREATE INDEX gsc_snapshots_organization_idx ON gsc_snapshots (organization_id);

-- The query and page rows of each snapshot, by Google's rank (0 is the top row). Up to
-- 100,000 of each kind per property: written in bulk (UNNEST of arrays, in batches), read a
-- page at a time along the primary key.
CREATE TABLE gsc_rows (
    property_id       text COLLATE "C" NOT NULL REFERENCES properties (id) ON DELETE CASCADE,
    kind              text NOT NULL CHECK (kind IN ('query', 'page')),
    rank              integer NOT NULL CHECK (rank >= 0),
    -- The query, or the page's URL.
    key               text NOT NULL,
    clicks            bigint NOT NULL CHECK (clicks >= 0),
    impressions       bigint NOT NULL CHECK (impressions >= 0),
    -- Null without impressions.
    position          double precision,
    -- Page rows the latest completed scan fetched: the final status (null when the fetch got
    -- no answer) and the open issues about the URL. Both null when it did not fetch the page,
    -- so "crawled" is `crawl_open_issues IS NOT NULL`.
    crawl_status      integer CHECK (crawl_status BETWEEN 0 AND 65535),
    crawl_open_issues integer CHECK (crawl_open_issues >= 0),
    CONSTRAINT gsc_rows_pkey PRIMARY KEY (property_id, kind, rank),
    CONSTRAINT gsc_rows_crawl_complete
        CHECK (crawl_status IS NULL OR crawl_open_issues IS NOT NULL)
);

-- The pages of each property's latest completed scan: replaced by the transaction that
-- completes a scan, so they are always those of one scan (`job_id`, the same on all of a
-- property's rows).
CREATE TABLE scan_pages (
    property_id text COLLATE "C" NOT NULL REFERENCES properties (id) ON DELETE CASCADE,
    -- The normalised address fetched; compared with `issues.url`.
    url         text NOT NULL,
    job_id      text COLLATE "C" NOT NULL,
    -- The final status; null when the fetch got no answer.
    status_code integer CHECK (status_code BETWEEN 0 AND 65535),
    -- The page's position in the scan's list, which reads give back in that order.
    ord         integer NOT NULL,
    CONSTRAINT scan_pages_pkey PRIMARY KEY (property_id, url)
);
