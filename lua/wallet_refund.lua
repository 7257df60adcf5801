-- wallet_refund: the compensating step of a payment whose sale could not complete: gives a reservation's
-- debit back, once. Refunding a reservation never debited does nothing.
-- KEYS[1] bal      hash: user -> balance
-- KEYS[2] debits   hash: res -> debit JSON
-- KEYS[3] refunds  hash: res -> refund JSON {id, amount, balance, at}
-- KEYS[4] events   stream: the wallet shard's outbox
-- ARGV[1] user  ARGV[2] id (the reservation)  ARGV[3] refund id  ARGV[4] now (ms)
-- Reply: the refund JSON, or '' when there was no debit
-- Errors: none
local bal, debits, refunds, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local user, id, refund, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local prior = redis.call('HGET', refunds, id)
if prior then
  return prior
end
local raw = redis.call('HGET', debits, id)
if not raw then
  return ''
end
local debit = cjson.decode(raw)
local balance = redis.call('HINCRBY', bal, user, debit.amount)
local rec = cjson.encode({id = refund, user = user, amount = debit.amount, balance = balance, at = now})
redis.call('HSET', refunds, id, rec)
redis.call('XADD', events, '*', 'type', 'point.refund', 'id', refund, 'res', id, 'user', user,
  'amount', debit.amount, 'balance', balance, 'at', now)
return rec
