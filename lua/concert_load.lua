-- concert_load: loads a concert's catalog and queue settings into Redis (from Postgres, the record).
-- KEYS[1] meta    hash: title, venue
-- KEYS[2] cfg     hash: cap, rate, ttl (ms), hold (ms), maxholds, paused ('0'|'1'), pow (bits), codereq ('0'|'1'),
--                 opens, pqopens (ms, a sale's), aps, abandon (ms), noshow (ms), shards (lineShards),
--                 sched (the schedule ids, comma-separated, of a concert whose seats have slots of their own),
--                 lv (the layout version its state is written in)
-- KEYS[3] events  stream: the concert's outbox
-- KEYS[4] draw    hash: seed (hex, secret until the draw), sealed, base, n, placed, digest, drawnAt
-- KEYS[5] inv     hash: seats (total, every schedule), avail (seats neither held, being paid nor sold),
--                 sold, soldout ('0'|'1'): kept by the seat scripts
-- ARGV[1] title  ARGV[2] venue  ARGV[3] cap  ARGV[4] rate  ARGV[5] ttl (ms)  ARGV[6] hold (ms)
-- ARGV[7] maxholds  ARGV[8] paused ('0'|'1')  ARGV[9] now (ms)
-- ARGV[10] pow (joinPowBits)  ARGV[11] codereq (accessCodeRequired, '0'|'1')
-- ARGV[12] opens (ms, '' without a sale)  ARGV[13] pqopens (ms)  ARGV[14] seed (hex; '' without a sale)
-- ARGV[15] aps (activePerSeat, 0: off)  ARGV[16] total (seats of every schedule)
-- ARGV[17] abandon (abandonAfter, ms; 0: off)  ARGV[18] noshow (noShow, ms; 0: off)
-- ARGV[19] shards (lineShards: the slots the line is spread over)
-- ARGV[20] sched (schedule ids, comma-separated, when each schedule's seats have a slot of their own
--          (lineShards > 1); '' when they live in the concert's slot)
-- ARGV[21] lv (the layout version this build writes)
-- Reply: 1 when loaded, 0 when the concert was already there (nothing written).
-- Errors: none.
local meta, cfg, events, draw, inv = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local title, venue, cap, rate, ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local hold, maxholds, paused, now = ARGV[6], ARGV[7], ARGV[8], ARGV[9]
local pow, codereq = ARGV[10], ARGV[11]
local opens, pqopens, seed = ARGV[12], ARGV[13], ARGV[14]
local aps, total, abandon, noshow, shards = ARGV[15], ARGV[16], ARGV[17], ARGV[18], ARGV[19]
local sched, lv = ARGV[20], ARGV[21]
if redis.call('EXISTS', cfg) == 1 then
  return 0
end
redis.call('HSET', meta, 'title', title, 'venue', venue)
redis.call('HSET', cfg, 'cap', cap, 'rate', rate, 'ttl', ttl, 'hold', hold, 'maxholds', maxholds, 'paused', paused)
redis.call('HSET', cfg, 'pow', pow, 'codereq', codereq)
if opens ~= '' then
  redis.call('HSET', cfg, 'opens', opens, 'pqopens', pqopens)
  redis.call('HSET', draw, 'seed', seed)
end
redis.call('HSET', cfg, 'aps', aps, 'abandon', abandon, 'noshow', noshow, 'shards', shards, 'lv', lv)
if sched ~= '' then
  redis.call('HSET', cfg, 'sched', sched)
end
redis.call('HSET', inv, 'seats', total, 'avail', total, 'sold', 0, 'soldout', 0)
redis.call('XADD', events, '*', 'type', 'concert.load', 'at', now)
return 1
