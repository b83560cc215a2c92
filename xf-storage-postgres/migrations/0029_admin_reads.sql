-- The admin API's reads. `GET /admin/organizations` pages every organization newest first:
-- one index range scan on (created_at, id).
CREATE INDEX organizations_created_idx ON organizations (created_at, id);

-- A key's first characters in clear (its mode's prefix and four more), to tell keys apart;
-- keys made before this column existed keep only their mode's prefix, which is still true
-- of them. And when a request last authenticated with it, written at most once a minute.
ALTER TABLE api_keys ADD COLUMN prefix text COLLATE "C";
UPDATE api_keys SET prefix = 'xf_' || mode || '_';
ALTER TABLE api_keys ALTER COLUMN prefix SET NOT NULL;
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;
