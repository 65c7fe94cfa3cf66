-- The client address an analysis was asked from (an IPv6 address as its /64), while the
-- job waits or runs: one address may hold only so many of the queue's places at once
-- (`--analysis-pending-per-address`), however many guests it makes. Cleared when the job
-- ends, so that no address is kept with a finished job.
ALTER TABLE analysis_jobs ADD COLUMN requested_from TEXT;
CREATE INDEX analysis_jobs_by_address ON analysis_jobs (requested_from)
    WHERE requested_from IS NOT NULL;
