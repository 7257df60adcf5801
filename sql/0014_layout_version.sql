-- The version of the Redis layout a concert's live state was last written in (docs/operations.md, "Layout
-- versions"). 1: the line may hold the keys of layout version 1 (a sorted set of the fans waiting, a
-- liveness hash); 2: neither. Every process migrates the concerts below its build's version at its start,
-- as `ticketrush migrate-layout` does, and records the version here. The rows present when this file is
-- applied read 1; the default for new rows becomes 2 (later migrations raise it).
ALTER TABLE concerts ADD COLUMN layout_version int NOT NULL DEFAULT 1;
ALTER TABLE concerts ALTER COLUMN layout_version SET DEFAULT 2;
