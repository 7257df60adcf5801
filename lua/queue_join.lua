-- queue_join: a fan joins a concert's waiting line, or gets back the live token they already hold.
-- FIFO by arrival: seq is an INCR. Admitted at once when nobody waits, a slot is free, the queue is not
-- paused and the admission rate budget has a token left.
-- KEYS[1] cfg       hash: cap, rate, ttl (ms), paused
-- KEYS[2] seq       string: arrival sequence
-- KEYS[3] wait      zset: member user, score seq (the line)
-- KEYS[4] active    zset: member user, score activeUntil (ms)
-- KEYS[5] aseq      hash: user -> seq of the ACTIVE token
-- KEYS[6] head      string: highest seq that left the line by admission
-- KEYS[7] bucket    hash: tok, ts (ms): the admission rate budget, refilled at rate/s up to rate
-- KEYS[8] admitted  string: admissions so far
-- KEYS[9] events    stream: the concert's outbox
-- ARGV[1] user id
-- ARGV[2] now (ms)
-- Reply: {status ('WAITING'|'ACTIVE'), seq, activeUntil (ms, 0 unless ACTIVE), created (1|0)}
-- Errors: NOT_FOUND (no such concert in Redis)
local cfg = redis.call('HMGET', KEYS[1], 'cap', 'rate', 'ttl', 'paused')
if not cfg[1] then
  return redis.error_reply('NOT_FOUND')
end
local user, now = ARGV[1], tonumber(ARGV[2])

local waiting = redis.call('ZSCORE', KEYS[3], user)
if waiting then
  return {'WAITING', tonumber(waiting), 0, 0}
end
local aseq = redis.call('HGET', KEYS[5], user)
if aseq then
  local till = tonumber(redis.call('ZSCORE', KEYS[4], user))
  if till and till > now then
    return {'ACTIVE', tonumber(aseq), till, 0}
  end
  redis.call('ZREM', KEYS[4], user)
  redis.call('HDEL', KEYS[5], user)
  redis.call('XADD', KEYS[9], '*', 'type', 'queue.lapse', 'user', user, 'seq', aseq, 'at', ARGV[2])
end

local seq = redis.call('INCR', KEYS[2])
local cap, rate, ttl = tonumber(cfg[1]), tonumber(cfg[2]), tonumber(cfg[3])
if cfg[4] ~= '1' and redis.call('ZCARD', KEYS[3]) == 0 and redis.call('ZCARD', KEYS[4]) < cap then
  local b = redis.call('HMGET', KEYS[7], 'tok', 'ts')
  local tok, ts = tonumber(b[1]) or rate, tonumber(b[2]) or now
  if now > ts then
    tok, ts = math.min(rate, tok + (now - ts) * rate / 1000), now
  end
  if tok >= 1 then
    local till = now + ttl
    redis.call('HSET', KEYS[7], 'tok', string.format('%.6f', tok - 1), 'ts', ts)
    redis.call('ZADD', KEYS[4], till, user)
    redis.call('HSET', KEYS[5], user, seq)
    redis.call('SET', KEYS[6], seq)
    redis.call('INCR', KEYS[8])
    redis.call('XADD', KEYS[9], '*', 'type', 'queue.admit', 'user', user, 'seq', seq, 'until', till, 'at', ARGV[2])
    return {'ACTIVE', seq, till, 1}
  end
end
redis.call('ZADD', KEYS[3], seq, user)
redis.call('XADD', KEYS[9], '*', 'type', 'queue.join', 'user', user, 'seq', seq, 'at', ARGV[2])
return {'WAITING', seq, 0, 1}
