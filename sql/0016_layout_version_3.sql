-- Layout version 3 (docs/operations.md, "Layout versions"): every schedule's seats in a seat slot of its
-- own (a line of one shard keeps them in the concert's own slot), none in the concert's keys. New concerts
-- start at 3 (the column's default); those below are migrated at a process's start, as `ticketrush
-- migrate-layout` does. A placement of '' (seats in the concert's keys) reads as none recorded, and the
-- migration's placement is recorded over it.
ALTER TABLE concerts ALTER COLUMN layout_version SET DEFAULT 3;
