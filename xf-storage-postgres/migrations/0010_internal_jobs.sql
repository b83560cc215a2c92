-- Jobs about no property: the library's own background work (publishing a media item to a
-- platform) runs on the same queue as scans, so it is claimed exactly once across instances
-- by the same function. Such a job has no property, property name or tenant label; the jobs
-- API (`GET /jobs`, counts, usage) and the webhook outbox only ever see jobs that have them.
ALTER TABLE jobs
    ALTER COLUMN property_id DROP NOT NULL,
    ALTER COLUMN property_name DROP NOT NULL,
    ALTER COLUMN tenant_label DROP NOT NULL,
    ADD CONSTRAINT jobs_subject_complete CHECK (
        (property_id IS NULL) = (property_name IS NULL)
        AND (property_id IS NULL) = (tenant_label IS NULL)
        AND (property_id IS NOT NULL OR shop_domain IS NULL)
    );
