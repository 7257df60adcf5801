-- queue_tick: one admission round for one concert. Lapses ACTIVE tokens past their activeUntil, then,
-- unless paused, admits min(free slots, rate budget, batch) fans from the head of the line. Atomic, so
-- any number of schedulers may run it at once without admitting past capacity or rate.
-- KEYS[1]  cfg       hash: cap, rate, ttl (ms), paused
-- KEYS[2]  wait      zset: member user, score seq
-- KEYS[3]  active    zset: member user, score activeUntil (ms)
-- KEYS[4]  aseq      hash: user -> seq of the ACTIVE token
-- KEYS[5]  head      string: highest seq that left the line by admission
-- KEYS[6]  bucket    hash: tok, ts (ms): the admission rate budget
-- KEYS[7]  admitted  string: admissions so far
-- KEYS[8]  left      zset: member seq, score seq
-- KEYS[9]  leftlog   zset: member seq, score leave ordinal
-- KEYS[10] events    stream: the concert's outbox
-- ARGV[1] now (ms)
-- ARGV[2] batch: most lapses and most admissions in this call
-- Reply: {admitted, lapsed, waiting, active} (counts after the tick)
-- Errors: NOT_FOUND (no such concert in Redis)
local cfg = redis.call('HMGET', KEYS[1], 'cap', 'rate', 'ttl', 'paused')
if not cfg[1] then
  return redis.error_reply('NOT_FOUND')
end
local now, batch = tonumber(ARGV[1]), tonumber(ARGV[2])
local cap, rate, ttl = tonumber(cfg[1]), tonumber(cfg[2]), tonumber(cfg[3])

local lapsed = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, batch)
for _, user in ipairs(lapsed) do
  local seq = redis.call('HGET', KEYS[4], user)
  redis.call('ZREM', KEYS[3], user)
  redis.call('HDEL', KEYS[4], user)
  redis.call('XADD', KEYS[10], '*', 'type', 'queue.lapse', 'user', user, 'seq', seq or '0', 'at', ARGV[1])
end

local b = redis.call('HMGET', KEYS[6], 'tok', 'ts')
local tok, ts = tonumber(b[1]) or rate, tonumber(b[2]) or now
if now > ts then
  tok, ts = math.min(rate, tok + (now - ts) * rate / 1000), now
end
local admitted = 0
local free = cap - redis.call('ZCARD', KEYS[3])
local n = math.min(free, math.floor(tok), batch)
if cfg[4] ~= '1' and n > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[2], n)
  local till = now + ttl
  local last
  for i = 1, #popped, 2 do
    local user, seq = popped[i], popped[i + 1]
    redis.call('ZADD', KEYS[3], till, user)
    redis.call('HSET', KEYS[4], user, seq)
    redis.call('XADD', KEYS[10], '*', 'type', 'queue.admit', 'user', user, 'seq', seq, 'until', till, 'at', ARGV[1])
    last = seq
  end
  admitted = #popped / 2
  if admitted > 0 then
    tok = tok - admitted
    redis.call('SET', KEYS[5], last)
    redis.call('INCRBY', KEYS[7], admitted)
    local gone = redis.call('ZRANGEBYSCORE', KEYS[8], '-inf', last, 'LIMIT', 0, batch)
    if #gone > 0 then
      redis.call('ZREM', KEYS[8], unpack(gone))
      redis.call('ZREM', KEYS[9], unpack(gone))
    end
  end
end
redis.call('HSET', KEYS[6], 'tok', string.format('%.6f', tok), 'ts', ts)
return {admitted, #lapsed, redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[3])}
