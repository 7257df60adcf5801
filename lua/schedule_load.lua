-- schedule_load: a schedule's seat count on its slot of its own, for a concert whose seats are spread
-- over slots (written beside concert_load, which writes the concert's settings and its whole count).
-- KEYS[1] inv     hash: seats (the schedule's), avail, sold, soldout ('0'|'1'): kept by the seat scripts
-- KEYS[2] events  stream: the schedule's outbox
-- ARGV[1] seats (of the schedule)  ARGV[2] now (ms)
-- Reply: 1 when loaded, 0 when the schedule was already there (nothing written).
-- Errors: none.
local inv, events = KEYS[1], KEYS[2]
local seats, now = ARGV[1], ARGV[2]
if redis.call('EXISTS', inv) == 1 then
  return 0
end
redis.call('HSET', inv, 'seats', seats, 'avail', seats, 'sold', 0, 'soldout', 0)
redis.call('XADD', events, '*', 'type', 'concert.load', 'at', now)
return 1
