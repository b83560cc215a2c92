-- The media meters of an organization's month: items uploaded and the bytes of their files
-- (added with the item, in its transaction), posts published and posts deleted from their
-- platforms (added with the change that got them there).
ALTER TABLE usage_counters
    ADD COLUMN media_uploads bigint NOT NULL DEFAULT 0,
    ADD COLUMN media_bytes bigint NOT NULL DEFAULT 0,
    ADD COLUMN posts_published bigint NOT NULL DEFAULT 0,
    ADD COLUMN posts_deleted bigint NOT NULL DEFAULT 0;
