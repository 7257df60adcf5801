-- hold_sweep: lapses HELD reservations past their expiry, oldest first, at most batch of them: the
-- reservation becomes EXPIRED and its seat AVAILABLE.
-- KEYS[1] holds    zset: member res, score expires (ms)
-- KEYS[2] res      hash: res -> reservation JSON
-- KEYS[3] events   stream: the concert's outbox
-- KEYS[4] inv      hash: avail (each lapsed seat comes back)
-- KEYS[5..] seats  hash: seat -> state, one per schedule, in the order of ARGV[3..]
-- ARGV[1] now (ms)  ARGV[2] batch  ARGV[3..] schedule ids, matching KEYS[5..]
-- Reply: the number of holds lapsed
-- Errors: none
local holds, res, events, inv = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now, batch = ARGV[1], tonumber(ARGV[2])
local seats = {}
for i = 3, #ARGV do
  seats[ARGV[i]] = KEYS[i + 2]
end
-- The holds leave holds in one ZREM and give their seats back to avail in one HINCRBY: a wave of holds
-- expiring together (an opening's first minute) is lapsed call after call while the slot waits.
local due = redis.call('ZRANGEBYSCORE', holds, '-inf', now, 'LIMIT', 0, batch)
if #due == 0 then
  return 0
end
redis.call('ZREM', holds, unpack(due))
local back = 0
for _, id in ipairs(due) do
  local rec = cjson.decode(redis.call('HGET', res, id))
  if rec.status == 'HELD' then
    rec.status = 'EXPIRED'
    redis.call('HSET', res, id, cjson.encode(rec))
    if seats[rec.schedule] then
      redis.call('HDEL', seats[rec.schedule], rec.seat)
      back = back + 1
    end
    redis.call('XADD', events, '*', 'type', 'hold.lapse', 'res', id, 'user', rec.user, 'schedule', rec.schedule,
      'seat', rec.seat, 'at', now)
  end
end
if back > 0 then
  redis.call('HINCRBY', inv, 'avail', back)
end
return #due
