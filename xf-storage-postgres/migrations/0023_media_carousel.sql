-- A carousel (an image upload with several `file` parts): its images after the first, in
-- order (`StoredFile`s as in `file`); empty for a single file. The blob sweep asks which blobs
-- items name, so each image's key is found through a GIN index (`carousel @> [{"key": …}]`).
ALTER TABLE media_items ADD COLUMN carousel jsonb NOT NULL DEFAULT '[]';
CREATE INDEX media_items_carousel_idx ON media_items USING gin (carousel jsonb_path_ops);
