-- The blob sweep asks which stored files are still some media item's: an index on the key
-- inside `file` answers it without reading every item.
CREATE INDEX media_items_file_key_idx ON media_items ((file->>'key'));
