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
-- KEYS[10] inv     hash: seats, sold, soldout: the sale that sells the last seat marks the concert sold out
-- KEYS[11] holds   zset: member res, score expires (ms): every HELD reservation (lib/open.lua)
-- ARGV[1] id (the reservation)  ARGV[2] payment id  ARGV[3] balance after the debit  ARGV[4] paid at (ms)
-- ARGV[5] now (ms)
-- Reply: the reservation JSON (status PAID)
-- Errors: NOT_FOUND (no such reservation), RESERVATION_NOT_HELD (not being paid: the caller refunds)
local seats, res, paying, uholds, sold = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local active, aseq, done, events, inv, holds = KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local id, payment, balance, paid, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
--#include sell
--#include open
--#include end_token
local raw, rec, total = sell(seats, res, paying, sold, inv, events, id, payment, balance, paid)
if not rec then
  return raw -- PAID already, or refused
end
local open = open_holds(uholds, holds, paying, rec.user, tonumber(now), id)
redis.call('HSET', uholds, rec.user, table.concat(open, ','))
if total >= tonumber(redis.call('HGET', inv, 'seats') or '0') and redis.call('HGET', inv, 'soldout') ~= '1' then
  redis.call('HSET', inv, 'soldout', 1)
  redis.call('XADD', events, '*', 'type', 'concert.soldout', 'sold', total, 'at', now)
end
if #open == 0 and tonumber(redis.call('HGET', aseq, rec.user)) == rec.seq then
  end_token(active, aseq, events, rec.user, rec.seq, 'done', now)
  redis.call('SADD', done, rec.seq)
end
return raw
