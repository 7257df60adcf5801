-- hold_sweep: lapses HELD reservations past their expiry, oldest first, at most batch of them: the
-- reservation becomes EXPIRED and its seat AVAILABLE.
-- KEYS[1] holds    zset: member res, score expires (ms)
-- KEYS[2] res      hash: res -> reservation JSON
-- KEYS[3] uholds   hash: user -> comma list of open reservations
-- KEYS[4] events   stream: the concert's outbox
-- KEYS[5] inv      hash: avail (each lapsed seat comes back)
-- KEYS[6..] seats  hash: seat -> state, one per schedule, in the order of ARGV[3..]
-- ARGV[1] now (ms)  ARGV[2] batch  ARGV[3..] schedule ids, matching KEYS[6..]
-- Reply: the number of holds lapsed
-- Errors: none
local holds, res, uholds, events, inv = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local now, batch = ARGV[1], tonumber(ARGV[2])
local seats = {}
for i = 3, #ARGV do
  seats[ARGV[i]] = KEYS[i + 3]
end
--#include open
local due = redis.call('ZRANGEBYSCORE', holds, '-inf', now, 'LIMIT', 0, batch)
for _, id in ipairs(due) do
  redis.call('ZREM', holds, id)
  local rec = cjson.decode(redis.call('HGET', res, id))
  if rec.status == 'HELD' then
    rec.status = 'EXPIRED'
    redis.call('HSET', res, id, cjson.encode(rec))
    if seats[rec.schedule] then
      redis.call('HDEL', seats[rec.schedule], rec.seat)
      redis.call('HINCRBY', inv, 'avail', 1)
    end
    drop_open(uholds, rec.user, id)
    redis.call('XADD', events, '*', 'type', 'hold.lapse', 'res', id, 'user', rec.user, 'schedule', rec.schedule,
      'seat', rec.seat, 'at', now)
  end
end
return #due
