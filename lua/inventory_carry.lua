-- inventory_carry: the concert's seat count on its slot, carried there by the admission tick of a line
-- over shards from the counts of its schedules' seat slots (lib/carry.lua), so that the scripts of the
-- line (line_arrive, line_admit, queue_status, queue_snapshot) read it. A line of one shard, whose seat
-- slots are in the concert's own slot, carries them in its queue_tick instead.
-- KEYS[1] inv     hash: seats (every schedule's), avail, sold, soldout ('0'|'1')
-- KEYS[2] events  stream: the concert's outbox
-- ARGV[1] avail (the schedules' AVAILABLE seats, lapsed holds not yet swept included)  ARGV[2] sold
-- ARGV[3] now (ms)
-- Reply: 1 when the concert is sold out, else 0
-- Errors: NOT_FOUND (no such concert)
local inv, events = KEYS[1], KEYS[2]
local avail, sold, now = ARGV[1], ARGV[2], ARGV[3]
--#include carry
local soldout = carry(inv, events, avail, sold, now)
if soldout == nil then
  return redis.error_reply('NOT_FOUND')
end
return soldout and 1 or 0
