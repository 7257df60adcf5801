-- concert_load: loads a concert's catalog and queue settings into Redis (from Postgres, the record).
-- KEYS[1] meta    hash: title, venue
-- KEYS[2] cfg     hash: cap, rate, ttl (ms), hold (ms), maxholds, paused ('0'|'1')
-- KEYS[3] events  stream: the concert's outbox
-- KEYS[4] draw    hash: seed (hex, secret until the draw), sealed, base, n, placed, digest, drawnAt
-- ARGV[1] title  ARGV[2] venue  ARGV[3] cap  ARGV[4] rate  ARGV[5] ttl (ms)  ARGV[6] hold (ms)
-- ARGV[7] maxholds  ARGV[8] paused ('0'|'1')  ARGV[9] now (ms)
-- ARGV[10] opens (ms, '' without a sale)  ARGV[11] pqopens (ms)  ARGV[12] seed (hex; '' without a sale)
-- Reply: 1 when loaded, 0 when the concert was already there (nothing written).
-- Errors: none.
local meta, cfg, events, draw = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local title, venue, cap, rate, ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local hold, maxholds, paused, now = ARGV[6], ARGV[7], ARGV[8], ARGV[9]
local opens, pqopens, seed = ARGV[10], ARGV[11], ARGV[12]
if redis.call('EXISTS', cfg) == 1 then
  return 0
end
redis.call('HSET', meta, 'title', title, 'venue', venue)
redis.call('HSET', cfg, 'cap', cap, 'rate', rate, 'ttl', ttl, 'hold', hold, 'maxholds', maxholds, 'paused', paused)
if opens ~= '' then
  redis.call('HSET', cfg, 'opens', opens, 'pqopens', pqopens)
  redis.call('HSET', draw, 'seed', seed)
end
redis.call('XADD', events, '*', 'type', 'concert.load', 'at', now)
return 1
