-- seat_sell: step 3 of a payment of a concert whose seats are spread over slots of their own, on the
-- schedule's slot, once the wallet is debited: the reservation becomes PAID and its seat SOLD (the fan's
-- DONE follows it: lib/follow.lua, in this call or gate_apply's). Selling a PAID reservation again replies with it
-- unchanged.
-- KEYS[1] seats    hash: seat -> state
-- KEYS[2] res      hash: res -> reservation JSON, the schedule's
-- KEYS[3] paying   zset: member res, score claimed at (ms)
-- KEYS[4] sold     hash: schedule -> seats sold
-- KEYS[5] events   stream: the schedule's outbox
-- KEYS[6] inv      hash: seats, avail, sold, soldout ('1' once every seat of the schedule is sold)
-- KEYS[7] ugate    hash: user -> comma list of '<res>:<until ms>' (the concert's gate entries); this key
--                  and the four after it are given when the schedule's seat slot is the concert's own:
--                  the fan's entry then follows the step in this call (lib/follow.lua), as gate_apply's follow
--                  does after it otherwise
-- KEYS[8] active   zset: member user, score activeUntil (ms)
-- KEYS[9] aseq     hash: user -> seq of the ACTIVE token
-- KEYS[10] done     set: seqs whose fan finished
-- KEYS[11] cevents stream: the concert's outbox
-- ARGV[1] id (the reservation)  ARGV[2] payment id  ARGV[3] balance after the debit  ARGV[4] paid at (ms)
-- ARGV[5] now (ms)  ARGV[6] payms (ms: how long a claim keeps the fan's entry counting, PayingGate)
-- Reply: the reservation JSON (status PAID)
-- Errors: NOT_FOUND (no such reservation), RESERVATION_NOT_HELD (not being paid: the caller refunds)
local seats, res, paying, sold = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local events, inv = KEYS[5], KEYS[6]
local id, payment, balance, paid = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local ugate, active, aseq, done, cevents = KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local now, payms = ARGV[5], tonumber(ARGV[6])
--#include sell
local function step()
  local raw, rec, total = sell(seats, res, paying, sold, inv, events, id, payment, balance, paid)
  if not rec then
    return raw, rec -- PAID already, or refused
  end
  if total >= tonumber(redis.call('HGET', inv, 'seats') or '0') then
    redis.call('HSET', inv, 'soldout', 1)
  end
  return raw, rec
end
--#include follow
return followed(ugate, active, aseq, done, cevents, now, payms, step())
