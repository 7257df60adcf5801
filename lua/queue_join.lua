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
-- KEYS[10] inv      hash: avail, soldout (kept by the seat scripts)
-- KEYS[11] holds    zset: member res, score expires (ms): lapsed but unswept holds count as available
-- KEYS[12] alive    hash: seq -> when its fan was last seen (ms): a join or rejoin is a sign of life
-- KEYS[13] noshow   zset: member user, score the deadline (ms) of their first gated call after admission
-- ARGV[1] user id
-- ARGV[2] now (ms)
-- Reply: {status ('WAITING'|'ACTIVE'), seq, activeUntil (ms, 0 unless ACTIVE), created (1|0)}
-- Errors: NOT_FOUND (no such concert in Redis), SOLD_OUT (every seat is sold; an ACTIVE fan gets their token)
local cfg, seq, wait, active, aseq = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local head, bucket, admitted, events = KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local inv, holds, alive, noshow = KEYS[10], KEYS[11], KEYS[12], KEYS[13]
local user, now = ARGV[1], tonumber(ARGV[2])
local conf = redis.call('HMGET', cfg, 'cap', 'rate', 'ttl', 'paused', 'aps', 'noshow')
if not conf[1] then
  return redis.error_reply('NOT_FOUND')
end
local stock = redis.call('HMGET', inv, 'avail', 'soldout')
if stock[2] == '1' and not (redis.call('HGET', aseq, user) and
    tonumber(redis.call('ZSCORE', active, user) or '0') > now) then
  return redis.error_reply('SOLD_OUT')
end
local room = true -- activePerSeat: admitted at once only while ACTIVE stays within aps x AVAILABLE seats
if tonumber(conf[5] or '0') > 0 then
  local avail = tonumber(stock[1] or '0') + redis.call('ZCOUNT', holds, '-inf', now)
  room = redis.call('ZCARD', active) < tonumber(conf[5]) * avail
end

local waiting = redis.call('ZSCORE', wait, user)
if waiting then
  redis.call('HSET', alive, waiting, now)
  return {'WAITING', tonumber(waiting), 0, 0}
end
local live = redis.call('HGET', aseq, user)
if live then
  local till = tonumber(redis.call('ZSCORE', active, user))
  if till and till > now then
    return {'ACTIVE', tonumber(live), till, 0}
  end
  redis.call('ZREM', active, user)
  redis.call('HDEL', aseq, user)
  redis.call('XADD', events, '*', 'type', 'queue.lapse', 'user', user, 'seq', live, 'at', now)
end

local arrival = redis.call('INCR', seq)
local cap, rate, ttl = tonumber(conf[1]), tonumber(conf[2]), tonumber(conf[3])
if room and conf[4] ~= '1' and redis.call('ZCARD', wait) == 0 and redis.call('ZCARD', active) < cap then
  local b = redis.call('HMGET', bucket, 'tok', 'ts')
  local tok, ts = tonumber(b[1]) or rate, tonumber(b[2]) or now
  if now > ts then
    tok, ts = math.min(rate, tok + (now - ts) * rate / 1000), now
  end
  if tok >= 1 then
    local till = now + ttl
    redis.call('HSET', bucket, 'tok', string.format('%.6f', tok - 1), 'ts', ts)
    redis.call('ZADD', active, till, user)
    redis.call('HSET', aseq, user, arrival)
    redis.call('SET', head, arrival)
    redis.call('INCR', admitted)
    redis.call('XADD', events, '*', 'type', 'queue.admit', 'user', user, 'seq', arrival, 'until', till, 'at', now)
    if tonumber(conf[6] or '0') > 0 then
      redis.call('ZADD', noshow, now + tonumber(conf[6]), user)
    end
    return {'ACTIVE', arrival, till, 1}
  end
end
redis.call('ZADD', wait, arrival, user)
redis.call('HSET', alive, arrival, now)
redis.call('XADD', events, '*', 'type', 'queue.join', 'user', user, 'seq', arrival, 'at', now)
return {'WAITING', arrival, 0, 1}
