-- A video's custom YouTube thumbnail (the upload's `thumbnail` part) is a blob of its own, named
-- in the YouTube target of `targets` (JSON). The blob sweep asks which blobs items name, so it
-- is found by an index, as the files are (0012).
CREATE INDEX media_items_thumbnail_key_idx ON media_items ((targets->'youtube'->'thumbnail'->>'key'))
    WHERE (targets->'youtube'->'thumbnail'->>'key') IS NOT NULL;
