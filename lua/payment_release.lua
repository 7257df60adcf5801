-- payment_release: undoes step 1 of a payment that was not debited (the balance was short, or the
-- sweeper found a payment a crash left claimed without a debit). The reservation is HELD again until its
-- original expiry, or EXPIRED with its seat AVAILABLE when that has passed.
-- KEYS[1] seats    hash: seat -> state, of the reservation's schedule
-- KEYS[2] holds    zset: member res, score expires (ms)
-- KEYS[3] res      hash: res -> reservation JSON
-- KEYS[4] paying   zset: member res, score claimed at (ms)
-- KEYS[5] uholds   hash: user -> comma list of open reservations
-- KEYS[6] events   stream: the concert's outbox
-- ARGV[1] res  ARGV[2] now (ms)
-- Reply: the reservation JSON after the change (unchanged when it was not PAYING)
-- Errors: NOT_FOUND
local id, now = ARGV[1], tonumber(ARGV[2])
local raw = redis.call('HGET', KEYS[3], id)
if not raw then
  return redis.error_reply('NOT_FOUND')
end
local rec = cjson.decode(raw)
if rec.status ~= 'PAYING' then
  return raw
end
redis.call('ZREM', KEYS[4], id)
redis.call('XADD', KEYS[6], '*', 'type', 'payment.release', 'res', id, 'user', rec.user, 'at', ARGV[2])
if rec.expiresAt > now then
  rec.status = 'HELD'
  redis.call('ZADD', KEYS[2], rec.expiresAt, id)
  redis.call('HSET', KEYS[1], rec.seat, 'H|' .. id .. '|' .. rec.expiresAt)
else
  rec.status = 'EXPIRED'
  redis.call('HDEL', KEYS[1], rec.seat)
  local rest = {}
  for rid in string.gmatch(redis.call('HGET', KEYS[5], rec.user) or '', '[^,]+') do
    if rid ~= id then rest[#rest + 1] = rid end
  end
  redis.call('HSET', KEYS[5], rec.user, table.concat(rest, ','))
  redis.call('XADD', KEYS[6], '*', 'type', 'hold.lapse', 'res', id, 'user', rec.user, 'schedule', rec.schedule,
    'seat', rec.seat, 'at', ARGV[2])
end
raw = cjson.encode(rec)
redis.call('HSET', KEYS[3], id, raw)
return raw
