-- points_charge: adds points to a fan's balance. With an Idempotency-Key the key is checked and recorded
-- here, with a fingerprint of the request: a retry with the same key and body replies with the first
-- charge again; the same key with another body is refused.
-- KEYS[1] bal      hash: user -> balance (the wallet shard's)
-- KEYS[2] idem     string: the idempotency record of (user, key), kept ARGV[7] seconds; any key of the
--                  shard when ARGV[5] is ''
-- KEYS[3] events   stream: the wallet shard's outbox
-- ARGV[1] user  ARGV[2] amount  ARGV[3] charge id  ARGV[4] now (ms)  ARGV[5] idempotency key ('' none)
-- ARGV[6] request fingerprint  ARGV[7] idempotency record lifetime (s)  ARGV[8] balance limit
-- Event: point.charge id user amount balance at, and idem fp (the key and fingerprint) when there is a key
-- Reply: {charge id, amount, balance after, created at (ms), replayed (0|1)}
-- Errors: IDEMPOTENCY_CONFLICT, BALANCE_LIMIT
local user, amount = ARGV[1], tonumber(ARGV[2])
if ARGV[5] ~= '' then
  local prior = redis.call('GET', KEYS[2])
  if prior then
    local p = cjson.decode(prior)
    if p.fingerprint ~= ARGV[6] then
      return redis.error_reply('IDEMPOTENCY_CONFLICT')
    end
    return {p.id, p.amount, p.balance, p.at, 1}
  end
end
local balance = tonumber(redis.call('HGET', KEYS[1], user) or '0')
if balance + amount > tonumber(ARGV[8]) then
  return redis.error_reply('BALANCE_LIMIT')
end
balance = redis.call('HINCRBY', KEYS[1], user, amount)
local event = {'type', 'point.charge', 'id', ARGV[3], 'user', user, 'amount', ARGV[2], 'balance', balance, 'at', ARGV[4]}
if ARGV[5] ~= '' then -- the key and fingerprint travel with the event, so restore can rebuild the record
  event[#event + 1], event[#event + 2], event[#event + 3], event[#event + 4] = 'idem', ARGV[5], 'fp', ARGV[6]
end
redis.call('XADD', KEYS[3], '*', unpack(event))
if ARGV[5] ~= '' then
  redis.call('SET', KEYS[2], cjson.encode({fingerprint = ARGV[6], id = ARGV[3], amount = amount, balance = balance,
    at = tonumber(ARGV[4])}), 'EX', tonumber(ARGV[7]))
end
return {ARGV[3], amount, balance, tonumber(ARGV[4]), 0}
