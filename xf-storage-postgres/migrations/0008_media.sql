-- Media publishing: the organizations' uploaded videos and images with their per-platform
-- plans, and the social channels they connected.
--
-- Foreign keys, as in 0005 and 0007: these rows belong to their organization and go with it.
-- Organizations are written rarely, so the KEY SHARE lock a check takes costs nothing that
-- matters.
--
-- Ids are COLLATE "C" like everywhere else, so the newest-first order and its tie-breaker are
-- byte order, as in the in-memory store. Platform names are the API's wire names, kept in
-- text columns with CHECK constraints (see 0001).

-- An uploaded video or image and its publication plan.
CREATE TABLE media_items (
    -- `med_…`.
    id              text COLLATE "C" NOT NULL,
    organization_id text COLLATE "C" NOT NULL
        REFERENCES organizations (id) ON DELETE CASCADE,
    kind            text NOT NULL CHECK (kind IN ('video', 'image')),
    -- Internal title and description (the default caption).
    title           text,
    description     text,
    status          text NOT NULL CHECK (status IN
        ('draft', 'pending', 'scheduled', 'processing', 'completed', 'failed')),
    -- When to publish; null for as soon as possible.
    scheduled_at    timestamptz,
    -- The file as stored and inspected (`StoredFile` as camelCase JSON: `key`, `name`,
    -- `size` and `facts`, which holds either a video's or an image's facts).
    file            jsonb NOT NULL,
    -- The selected platforms: the keys of `targets`, written with it by the application. A
    -- column of its own for the `platform` filter of the list.
    platforms       text[] NOT NULL CHECK (platforms <@ ARRAY[
        'youtube', 'instagram', 'tiktok', 'linkedin', 'pinterest']::text[]),
    -- The selected platforms' state: an object from platform name to `PlatformTarget` as
    -- camelCase JSON (`status`, `accounts`, `settings`, `remoteId`, `url`, `error`).
    targets         jsonb NOT NULL CHECK (jsonb_typeof(targets) = 'object'),
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    CONSTRAINT media_items_pkey PRIMARY KEY (id)
);

-- `GET /media/videos` and `GET /media/images`: newest first per organization and kind; also
-- serves the list's count. The status and platform filters are applied while walking it (an
-- organization's items of one kind are few enough).
CREATE INDEX media_items_organization_page_idx
    ON media_items (organization_id, kind, created_at DESC, id DESC);

-- A social account connected by the host. Connecting the same account again updates the
-- row (the unique constraint, not a prior lookup, decides), which keeps its id and
-- `created_at`. The constraint's index, led by the organization, also serves
-- `list_channels` (an organization has a handful of channels, sorted after reading).
CREATE TABLE channels (
    -- `ch_…`.
    id                   text COLLATE "C" NOT NULL,
    organization_id      text COLLATE "C" NOT NULL
        REFERENCES organizations (id) ON DELETE CASCADE,
    platform             text NOT NULL
        CHECK (platform IN ('youtube', 'instagram', 'tiktok', 'linkedin', 'pinterest')),
    -- The platform's id of the account (a YouTube channel id, an account id, URN or user
    -- id); compared for equality only.
    account_id           text COLLATE "C" NOT NULL,
    -- Its display name and picture.
    name                 text NOT NULL,
    thumbnail            text,
    -- The OAuth tokens, sealed by the application (never in the clear); not every platform
    -- issues a refresh token.
    sealed_access_token  text NOT NULL,
    sealed_refresh_token text,
    -- When the access token expires, if known.
    expires_at           timestamptz,
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL,
    CONSTRAINT channels_pkey PRIMARY KEY (id),
    CONSTRAINT channels_organization_account_key UNIQUE (organization_id, platform, account_id)
);

-- A resumable (tus) upload: its size, how far it got, and the pieces received so far (each
-- a blob of the application's blob store, listed in order as `UploadPart`s). The offset
-- moves only by a conditional update on its current value, so of two requests at one
-- offset one wins. Unused uploads are purged once `expires_at` has passed.
CREATE TABLE media_uploads (
    -- `upl_…`, the `fileId` the upload forms accept.
    id              text COLLATE "C" NOT NULL,
    organization_id text COLLATE "C" NOT NULL
        REFERENCES organizations (id) ON DELETE CASCADE,
    length          bigint NOT NULL CHECK (length >= 0),
    "offset"        bigint NOT NULL CHECK ("offset" >= 0 AND "offset" <= length),
    -- `Upload-Metadata` as sent: an array of [key, base64 value] pairs.
    metadata        jsonb NOT NULL,
    parts           jsonb NOT NULL,
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    CONSTRAINT media_uploads_pkey PRIMARY KEY (id)
);

CREATE INDEX media_uploads_expires_at_idx ON media_uploads (expires_at);
