-- payment_complete: step 3 of a payment, once the wallet is debited. The reservation becomes PAID and
-- its seat SOLD. When it was the fan's last open hold, their queue token becomes DONE and the active
-- slot frees for the next in line. Completing a PAID reservation again replies with it unchanged.
-- KEYS[1] seats    hash: seat -> state, of the reservation's schedule
-- KEYS[2] res      hash: res -> reservation JSON
-- KEYS[3] paying   zset: member res, score claimed at (ms)
-- KEYS[4] uholds   hash: user -> comma list of open reservations
-- KEYS[5] sold     hash: schedule -> seats sold
-- KEYS[6] active   zset: member user, score activeUntil (ms)
-- KEYS[7] aseq     hash: user -> seq of the ACTIVE token
-- KEYS[8] done     set: seqs whose fan finished
-- KEYS[9] events   stream: the concert's outbox
-- ARGV[1] res  ARGV[2] payment id  ARGV[3] balance after the debit  ARGV[4] paid at (ms)  ARGV[5] now (ms)
-- Reply: the reservation JSON (status PAID)
-- Errors: NOT_FOUND (no such reservation), RESERVATION_NOT_HELD (not being paid: the caller refunds)
local id, now = ARGV[1], tonumber(ARGV[5])
local raw = redis.call('HGET', KEYS[2], id)
if not raw then
  return redis.error_reply('NOT_FOUND')
end
local rec = cjson.decode(raw)
if rec.status == 'PAID' then
  return raw
end
if rec.status ~= 'PAYING' then
  return redis.error_reply('RESERVATION_NOT_HELD')
end
rec.status, rec.payment, rec.balance, rec.paidAt = 'PAID', ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
raw = cjson.encode(rec)
redis.call('HSET', KEYS[2], id, raw)
redis.call('ZREM', KEYS[3], id)
redis.call('HSET', KEYS[1], rec.seat, 'S|' .. id)
redis.call('HINCRBY', KEYS[5], rec.schedule, 1)
local open = {}
for rid in string.gmatch(redis.call('HGET', KEYS[4], rec.user) or '', '[^,]+') do
  if rid ~= id then
    local r = cjson.decode(redis.call('HGET', KEYS[2], rid))
    if r.status == 'PAYING' or (r.status == 'HELD' and r.expiresAt > now) then
      open[#open + 1] = rid
    end
  end
end
redis.call('HSET', KEYS[4], rec.user, table.concat(open, ','))
redis.call('XADD', KEYS[9], '*', 'type', 'sale', 'res', id, 'user', rec.user, 'schedule', rec.schedule,
  'seat', rec.seat, 'price', rec.price, 'payment', ARGV[2], 'at', ARGV[4])
if #open == 0 and tonumber(redis.call('HGET', KEYS[7], rec.user)) == rec.seq then
  redis.call('ZREM', KEYS[6], rec.user)
  redis.call('HDEL', KEYS[7], rec.user)
  redis.call('SADD', KEYS[8], rec.seq)
  redis.call('XADD', KEYS[9], '*', 'type', 'queue.done', 'user', rec.user, 'seq', rec.seq, 'at', ARGV[5])
end
return raw
