-- wallet_debit: step 2 of a payment. Debits a reservation's price from the fan's balance, once per
-- reservation id: a second call replies with the first debit. A reservation whose payment was refunded
-- is never debited again.
-- KEYS[1] bal      hash: user -> balance
-- KEYS[2] debits   hash: res -> debit JSON {id, amount, balance, at}
-- KEYS[3] refunds  hash: res -> refund JSON
-- KEYS[4] events   stream: the wallet shard's outbox
-- ARGV[1] user  ARGV[2] res  ARGV[3] amount  ARGV[4] payment id  ARGV[5] now (ms)
-- Reply: the debit JSON
-- Errors: INSUFFICIENT_BALANCE, RESERVATION_NOT_HELD (this reservation's payment was refunded)
local user, id, amount = ARGV[1], ARGV[2], tonumber(ARGV[3])
if redis.call('HEXISTS', KEYS[3], id) == 1 then
  return redis.error_reply('RESERVATION_NOT_HELD')
end
local prior = redis.call('HGET', KEYS[2], id)
if prior then
  return prior
end
local balance = tonumber(redis.call('HGET', KEYS[1], user) or '0')
if balance < amount then
  return redis.error_reply('INSUFFICIENT_BALANCE')
end
balance = redis.call('HINCRBY', KEYS[1], user, -amount)
local debit = cjson.encode({id = ARGV[4], user = user, amount = amount, balance = balance, at = tonumber(ARGV[5])})
redis.call('HSET', KEYS[2], id, debit)
redis.call('XADD', KEYS[4], '*', 'type', 'point.debit', 'id', ARGV[4], 'res', id, 'user', user, 'amount', ARGV[3],
  'balance', balance, 'at', ARGV[5])
return debit
