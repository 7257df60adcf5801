-- Layout version 4 (docs/operations.md, "Layout versions"): a line over shards keeps its fans' gate
-- records in their line shards, beside the tokens its rounds leave there, not in the concert's slot. New
-- concerts start at 4 (the column's default); those below are migrated at a process's start, as
-- `ticketrush migrate-layout` does.
ALTER TABLE concerts ALTER COLUMN layout_version SET DEFAULT 4;
