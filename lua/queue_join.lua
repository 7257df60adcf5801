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
-- KEYS[10] rl       string: the user's rate bucket (its theoretical arrival time, ms), same slot
-- KEYS[11] pow      string: marks the proof's challenge used until it expires (a placeholder without one)
-- KEYS[12] codes    hash: hex SHA-256(access code) -> owner user ('' while unclaimed)
-- ARGV[1] user id
-- ARGV[2] now (ms)
-- ARGV[3] ulimit (requests/s, 0 = off)  ARGV[4] uburst
-- ARGV[5] powid (the checked challenge's id; '' none, '-' a proof that failed the check)  ARGV[6] powbits
-- (its difficulty)  ARGV[7] powexp (its expiry, ms)  ARGV[8] code (hex SHA-256 of the access code, '' none)
-- Reply: {status ('WAITING'|'ACTIVE'), seq, activeUntil (ms, 0 unless ACTIVE), created (1|0)}
-- Event: code.claim code user at, when a join claims an access code
-- Errors: NOT_FOUND (no such concert in Redis), RATE_LIMITED, ACCESS_CODE_REQUIRED, ACCESS_CODE_INVALID,
--         POW_REQUIRED, POW_INVALID
local cfg, seq, wait, active, aseq = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local head, bucket, admitted, events = KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local user, now = ARGV[1], tonumber(ARGV[2])
local rl, ulimit, uburst = KEYS[10], tonumber(ARGV[3]), tonumber(ARGV[4])
local pow, codes = KEYS[11], KEYS[12]
local powid, powbits, powexp, code = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
local conf = redis.call('HMGET', cfg, 'cap', 'rate', 'ttl', 'paused')
if not conf[1] then
  return redis.error_reply('NOT_FOUND')
end
-- Rate limit (issue 15): the user's bucket, GCRA at ulimit/s with bursts of uburst; a limited call
-- does nothing. ulimit 0 turns it off.
if ulimit > 0 then
  local gap = 1000 / ulimit
  local tat = math.max(tonumber(redis.call('GET', rl)) or 0, now)
  if tat - now > gap * (uburst - 1) then
    return redis.error_reply('RATE_LIMITED')
  end
  redis.call('SET', rl, string.format('%.3f', tat + gap), 'PX', math.ceil(tat + gap - now) + 1)
end
-- Gates (issue 15): an access code and a proof of work, asked of a fan without a live token only.
local gate = redis.call('HMGET', cfg, 'pow', 'codereq')
local need = tonumber(gate[1]) or 0
if need > 0 or gate[2] == '1' then
  local live = redis.call('ZSCORE', wait, user)
  if not live and redis.call('HEXISTS', aseq, user) == 1 then
    live = tonumber(redis.call('ZSCORE', active, user) or 0) > now
  end
  if not live then
    local owner
    if gate[2] == '1' then
      if code == '' then
        return redis.error_reply('ACCESS_CODE_REQUIRED')
      end
      owner = redis.call('HGET', codes, code)
      if not owner or (owner ~= '' and owner ~= user) then
        return redis.error_reply('ACCESS_CODE_INVALID')
      end
    end
    if need > 0 then
      if powid == '' then
        return redis.error_reply('POW_REQUIRED')
      end
      if powid == '-' or powbits < need or powexp <= now then
        return redis.error_reply('POW_INVALID')
      end
      if not redis.call('SET', pow, '1', 'NX', 'PX', powexp - now) then
        return redis.error_reply('POW_INVALID')
      end
    end
    if owner == '' then
      redis.call('HSET', codes, code, user)
      redis.call('XADD', events, '*', 'type', 'code.claim', 'code', code, 'user', user, 'at', now)
    end
  end
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

local arrival = redis.call('INCR', seq)
local cap, rate, ttl = tonumber(conf[1]), tonumber(conf[2]), tonumber(conf[3])
if conf[4] ~= '1' and redis.call('ZCARD', wait) == 0 and redis.call('ZCARD', active) < cap then
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
