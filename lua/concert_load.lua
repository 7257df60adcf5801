-- concert_load: loads a concert's catalog and queue settings into Redis (from Postgres, the record).
-- KEYS[1] meta    hash: title, venue
-- KEYS[2] cfg     hash: cap, rate, ttl (ms), hold (ms), maxholds, paused ('0'|'1'), aps, abandon (ms), noshow (ms)
-- KEYS[3] events  stream: the concert's outbox
-- KEYS[4] inv     hash: seats (total, every schedule), avail (seats neither held, being paid nor sold),
--                 sold, soldout ('0'|'1'): kept by the seat scripts
-- ARGV[1] title  ARGV[2] venue  ARGV[3] cap  ARGV[4] rate  ARGV[5] ttl (ms)  ARGV[6] hold (ms)
-- ARGV[7] maxholds  ARGV[8] paused ('0'|'1')  ARGV[9] now (ms)  ARGV[10] aps (activePerSeat, 0: off)
-- ARGV[11] total (seats of every schedule)  ARGV[12] abandon (abandonAfter, ms; 0: off)
-- ARGV[13] noshow (noShow, ms; 0: off)
-- Reply: 1 when loaded, 0 when the concert was already there (nothing written).
-- Errors: none.
local meta, cfg, events, inv = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local title, venue, cap, rate, ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local hold, maxholds, paused, now = ARGV[6], ARGV[7], ARGV[8], ARGV[9]
local aps, total, abandon, noshow = ARGV[10], ARGV[11], ARGV[12], ARGV[13]
if redis.call('EXISTS', cfg) == 1 then
  return 0
end
redis.call('HSET', meta, 'title', title, 'venue', venue)
redis.call('HSET', cfg, 'cap', cap, 'rate', rate, 'ttl', ttl, 'hold', hold, 'maxholds', maxholds, 'paused', paused)
redis.call('HSET', cfg, 'aps', aps, 'abandon', abandon, 'noshow', noshow)
redis.call('HSET', inv, 'seats', total, 'avail', total, 'sold', 0, 'soldout', 0)
redis.call('XADD', events, '*', 'type', 'concert.load', 'at', now)
return 1
