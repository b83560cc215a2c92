-- A job queued with insert_job_counted names the month whose `scans` meter counted it, so
-- that a job that fails for a reason of xf's own (an attempt outcome of kind `internal`, or
-- a rescue once its attempts are used up: its worker died) gives that scan back. NULL for
-- jobs that were not counted. A job fails at most once, so a scan is given back at most once.
ALTER TABLE jobs ADD COLUMN counted_month text COLLATE "C";
