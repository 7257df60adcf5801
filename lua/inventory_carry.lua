-- inventory_carry: the concert's seat count on its slot, carried there by the admission tick from the
-- counts of its schedules' slots (a concert whose seats are spread over slots of their own), so that the
-- scripts of the line (line_arrive, line_admit, queue_status, queue_snapshot) read it as they read the
-- count the seat scripts keep for a concert of one slot. Sold only grows (a tick that read older counts
-- writes no fewer); the carry that finds every seat sold marks the concert sold out, once.
-- KEYS[1] inv     hash: seats (every schedule's), avail, sold, soldout ('0'|'1')
-- KEYS[2] events  stream: the concert's outbox
-- ARGV[1] avail (the schedules' AVAILABLE seats, lapsed holds not yet swept included)  ARGV[2] sold
-- ARGV[3] now (ms)
-- Reply: 1 when the concert is sold out, else 0
-- Errors: NOT_FOUND (no such concert)
local inv, events = KEYS[1], KEYS[2]
local avail, sold, now = ARGV[1], ARGV[2], ARGV[3]
local had = redis.call('HMGET', inv, 'seats', 'sold', 'soldout')
if not had[1] then
  return redis.error_reply('NOT_FOUND')
end
local total = math.max(tonumber(sold), tonumber(had[2] or '0'))
redis.call('HSET', inv, 'avail', avail, 'sold', total)
if had[3] == '1' then
  return 1
end
if total >= tonumber(had[1]) then
  redis.call('HSET', inv, 'soldout', 1)
  redis.call('XADD', events, '*', 'type', 'concert.soldout', 'sold', total, 'at', now)
  return 1
end
return 0
