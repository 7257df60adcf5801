-- wallet_refund: the compensating step of a payment whose sale could not complete: gives a reservation's
-- debit back, once. Refunding a reservation never debited does nothing.
-- KEYS[1] bal      hash: user -> balance
-- KEYS[2] debits   hash: res -> debit JSON
-- KEYS[3] refunds  hash: res -> refund JSON {id, amount, balance, at}
-- KEYS[4] events   stream: the wallet shard's outbox
-- ARGV[1] user  ARGV[2] res  ARGV[3] refund id  ARGV[4] now (ms)
-- Reply: the refund JSON, or '' when there was no debit
-- Errors: none
local user, id = ARGV[1], ARGV[2]
local prior = redis.call('HGET', KEYS[3], id)
if prior then
  return prior
end
local raw = redis.call('HGET', KEYS[2], id)
if not raw then
  return ''
end
local debit = cjson.decode(raw)
local balance = redis.call('HINCRBY', KEYS[1], user, debit.amount)
local refund = cjson.encode({id = ARGV[3], user = user, amount = debit.amount, balance = balance, at = tonumber(ARGV[4])})
redis.call('HSET', KEYS[3], id, refund)
redis.call('XADD', KEYS[4], '*', 'type', 'point.refund', 'id', ARGV[3], 'res', id, 'user', user,
  'amount', debit.amount, 'balance', balance, 'at', ARGV[4])
return refund
