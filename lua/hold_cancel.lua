-- hold_cancel: the owner gives back a HELD seat before it lapses.
-- KEYS[1] seats    hash: seat -> state, of the reservation's schedule
-- KEYS[2] holds    zset: member res, score expires (ms)
-- KEYS[3] res      hash: res -> reservation JSON
-- KEYS[4] uholds   hash: user -> comma list of open reservations
-- KEYS[5] events   stream: the concert's outbox
-- ARGV[1] user  ARGV[2] res  ARGV[3] now (ms)
-- Reply: the reservation JSON after the change
-- Errors: NOT_FOUND (no such reservation, or not the caller's), RESERVATION_NOT_HELD (not HELD, or lapsed)
local user, id, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local raw = redis.call('HGET', KEYS[3], id)
if not raw then
  return redis.error_reply('NOT_FOUND')
end
local rec = cjson.decode(raw)
if rec.user ~= user then
  return redis.error_reply('NOT_FOUND')
end
if rec.status ~= 'HELD' or rec.expiresAt <= now then
  return redis.error_reply('RESERVATION_NOT_HELD')
end
rec.status = 'CANCELLED'
raw = cjson.encode(rec)
redis.call('HSET', KEYS[3], id, raw)
redis.call('HDEL', KEYS[1], rec.seat)
redis.call('ZREM', KEYS[2], id)
local rest = {}
for rid in string.gmatch(redis.call('HGET', KEYS[4], user) or '', '[^,]+') do
  if rid ~= id then rest[#rest + 1] = rid end
end
redis.call('HSET', KEYS[4], user, table.concat(rest, ','))
redis.call('XADD', KEYS[5], '*', 'type', 'hold.cancel', 'res', id, 'user', user, 'schedule', rec.schedule,
  'seat', rec.seat, 'at', ARGV[3])
return raw
