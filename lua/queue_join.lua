-- queue_join: a fan joins a concert's waiting line, or gets back the live token they already hold.
-- FIFO by arrival: seq is an INCR. A concert with a sale (cfg opens, pqopens) refuses joins before the
-- pre-queue opens, takes joins before the opening into the pre-queue (PREQUEUE, seq 0), and from the
-- opening on queues FIFO behind the entrants' places: the first join after the opening seals the
-- pre-queue (as draw_seal does), so a racing join is an entrant or an arrival, never both. Nobody is
-- admitted before the draw is in place (draw drawnAt). Admitted at once when nobody waits, a slot is free, the queue is not
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
-- KEYS[10] pre      zset: the pre-queue's entrants, member user, score entry time (ms)
-- KEYS[11] draw     hash: sealed ('1' once the pre-queue is closed), base, n, drawnAt (see draw_seal)
-- ARGV[1] user id
-- ARGV[2] now (ms)
-- Reply: {status ('PREQUEUE'|'WAITING'|'ACTIVE'), seq (0 for PREQUEUE), activeUntil (ms, 0 unless ACTIVE),
--         created (1|0)}
-- Errors: NOT_FOUND (no such concert in Redis), SALE_NOT_OPEN (before the pre-queue opens)
local cfg, seq, wait, active, aseq = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local head, bucket, admitted, events = KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local pre, draw = KEYS[10], KEYS[11]
local user, now = ARGV[1], tonumber(ARGV[2])
local conf = redis.call('HMGET', cfg, 'cap', 'rate', 'ttl', 'paused', 'opens', 'pqopens')
if not conf[1] then
  return redis.error_reply('NOT_FOUND')
end
local opens, pqopens = tonumber(conf[5]), tonumber(conf[6])
local gated = false -- a sale whose draw is not in place yet: nobody is admitted
if opens then
  if redis.call('HGET', draw, 'sealed') ~= '1' then
    if now < pqopens then
      return redis.error_reply('SALE_NOT_OPEN')
    end
    if now < opens then
      if redis.call('ZSCORE', pre, user) then
        return {'PREQUEUE', 0, 0, 0}
      end
      redis.call('ZADD', pre, now, user)
      redis.call('XADD', events, '*', 'type', 'queue.prequeue', 'user', user, 'at', now)
      return {'PREQUEUE', 0, 0, 1}
    end
    -- The opening has passed and no scheduler sealed yet: this join seals, so it is an arrival.
    local n = redis.call('ZCARD', pre)
    local base = tonumber(redis.call('GET', seq) or '0')
    redis.call('INCRBY', seq, n)
    redis.call('HSET', draw, 'sealed', '1', 'base', base, 'n', n, 'placed', 0)
    redis.call('XADD', events, '*', 'type', 'draw.seal', 'n', n, 'base', base, 'seq', base + n, 'at', now)
  end
  gated = redis.call('HEXISTS', draw, 'drawnAt') == 0
end

local waiting = redis.call('ZSCORE', wait, user)
if waiting then
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

if gated and redis.call('ZSCORE', pre, user) then
  return {'PREQUEUE', 0, 0, 0} -- an entrant the draw has not placed yet
end

local arrival = redis.call('INCR', seq)
local cap, rate, ttl = tonumber(conf[1]), tonumber(conf[2]), tonumber(conf[3])
if conf[4] ~= '1' and not gated and redis.call('ZCARD', wait) == 0 and redis.call('ZCARD', active) < cap then
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
    return {'ACTIVE', arrival, till, 1}
  end
end
redis.call('ZADD', wait, arrival, user)
redis.call('XADD', events, '*', 'type', 'queue.join', 'user', user, 'seq', arrival, 'at', now)
return {'WAITING', arrival, 0, 1}
