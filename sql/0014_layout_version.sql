-- The version of the Redis layout a concert's live state was last written in (docs/operations.md,
-- "Layout versions"). 1: the line may still hold what older builds wrote (a sorted set of the fans
-- waiting, a liveness hash); 2: neither. Every process migrates the concerts below its build's version
-- at its start, as `ticketrush migrate-layout` does, and records the version here; concerts created
-- from now on start at 2.
ALTER TABLE concerts ADD COLUMN layout_version int NOT NULL DEFAULT 1;
ALTER TABLE concerts ALTER COLUMN layout_version SET DEFAULT 2;
