-- A pre-queue leave is kept as a row (left_queue), not a deletion: an entry's event written again after
-- its leave (a worker that died between its commit and its acknowledgement, an entry claimed twice) finds
-- the newer leave and changes nothing, rather than putting the fan back for restore and the draw; and a
-- leave written before its entry keeps that entry out. The newest event of a fan
-- decides, whatever order the events are written in.
ALTER TABLE prequeue_entries ADD COLUMN left_queue boolean NOT NULL DEFAULT false;
