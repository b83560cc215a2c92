-- Issues as the crawler records them: the catalogue's severities, a title, evidence, how to
-- fix, and a subject that identifies an issue across scans.

ALTER TABLE issues DROP CONSTRAINT issues_severity_check;
UPDATE issues SET severity = CASE severity
    WHEN 'error' THEN 'high'
    WHEN 'warning' THEN 'medium'
    ELSE 'low' END;
ALTER TABLE issues ADD CONSTRAINT issues_severity_check
    CHECK (severity IN ('critical', 'high', 'medium', 'low'));

ALTER TABLE issues RENAME COLUMN message TO evidence;
ALTER TABLE issues
    ADD COLUMN title      text,
    ADD COLUMN how_to_fix text NOT NULL DEFAULT '',
    -- The page for page issues; what a site issue is about (an address, a title, ...).
    ADD COLUMN subject    text COLLATE "C";
UPDATE issues SET title = issue_type, subject = COALESCE(url, issue_type || ' ' || id);
ALTER TABLE issues
    ALTER COLUMN title SET NOT NULL,
    ALTER COLUMN subject SET NOT NULL,
    ALTER COLUMN how_to_fix DROP DEFAULT;

-- One issue per check and subject within a property: a scan's findings are upserted on it.
CREATE UNIQUE INDEX issues_identity_idx ON issues (property_id, issue_type, subject);
