-- wallet_debit: step 2 of a payment. Debits a reservation's price from the fan's balance, once per
-- reservation id: a second call replies with the first debit. A reservation whose payment was refunded
-- is never debited again.
-- KEYS[1] bal      hash: user -> balance
-- KEYS[2] debits   hash: res -> debit JSON {id, amount, balance, at}
-- KEYS[3] refunds  hash: res -> refund JSON
-- KEYS[4] events   stream: the wallet shard's outbox
-- ARGV[1] user  ARGV[2] id (the reservation)  ARGV[3] amount  ARGV[4] payment id  ARGV[5] now (ms)
-- Reply: the debit JSON
-- Errors: INSUFFICIENT_BALANCE, RESERVATION_NOT_HELD (this reservation's payment was refunded)
local bal, debits, refunds, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local user, id, amount, payment, now = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
if redis.call('HEXISTS', refunds, id) == 1 then
  return redis.error_reply('RESERVATION_NOT_HELD')
end
local prior = redis.call('HGET', debits, id)
if prior then
  return prior
end
local balance = tonumber(redis.call('HGET', bal, user) or '0')
if balance < amount then
  return redis.error_reply('INSUFFICIENT_BALANCE')
end
balance = redis.call('HINCRBY', bal, user, -amount)
local debit = cjson.encode({id = payment, user = user, amount = amount, balance = balance, at = now})
redis.call('HSET', debits, id, debit)
redis.call('XADD', events, '*', 'type', 'point.debit', 'id', payment, 'res', id, 'user', user, 'amount', amount,
  'balance', balance, 'at', now)
return debit
