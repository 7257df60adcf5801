-- points_charge: adds points to a fan's balance. With an Idempotency-Key the key is checked and recorded
-- here, with a fingerprint of the request: a retry with the same key and body replies with the first
-- answer again (the charge, or the BALANCE_LIMIT that refused it); the same key with another body is
-- refused.
-- KEYS[1] bal      hash: user -> balance (the wallet shard's)
-- KEYS[2] idem     string: the idempotency record of (user, key), kept ttl seconds; the shard's
--                  placeholder key when there is no key
-- KEYS[3] events   stream: the wallet shard's outbox
-- KEYS[4] rl       string: the user's rate bucket (its theoretical arrival time, ms), same slot
-- ARGV[1] user  ARGV[2] amount  ARGV[3] id (of the charge)  ARGV[4] now (ms)  ARGV[5] key (the
-- Idempotency-Key, '' for none)  ARGV[6] fp (the request's fingerprint)  ARGV[7] ttl (the idempotency
-- record's lifetime, s)  ARGV[8] limit (of a balance)
-- ARGV[9] ulimit (requests/s, 0 = off)  ARGV[10] uburst
-- Event: point.charge id user amount balance at, and idem fp (the key and fingerprint) when there is a key;
--        a refusal with a key: idem.remember user key fp ref ('') created (0) kind (charge) refused at
-- Reply: {charge id, amount, balance after, created at (ms), replayed (0|1)}
-- Errors: IDEMPOTENCY_CONFLICT, BALANCE_LIMIT, RATE_LIMITED
local bal, idem, events = KEYS[1], KEYS[2], KEYS[3]
local user, amount, id, now = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local key, fp, ttl, limit = ARGV[5], ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8])
local rl, ulimit, uburst = KEYS[4], tonumber(ARGV[9]), tonumber(ARGV[10])
--#include rate_limit
if limited(rl, now, ulimit, uburst) then
  return redis.error_reply('RATE_LIMITED')
end
if key ~= '' then
  local prior = redis.call('GET', idem)
  if prior then
    local p = cjson.decode(prior)
    if p.fingerprint ~= fp then
      return redis.error_reply('IDEMPOTENCY_CONFLICT')
    end
    if p.refused then
      return redis.error_reply(p.refused)
    end
    return {p.id, p.amount, p.balance, p.at, 1}
  end
end
local balance = tonumber(redis.call('HGET', bal, user) or '0')
if balance + amount > limit then
  if key ~= '' then -- the key answers every retry with this refusal, durably as a payment's does
    redis.call('SET', idem, cjson.encode({fingerprint = fp, refused = 'BALANCE_LIMIT'}), 'EX', ttl)
    redis.call('XADD', events, '*', 'type', 'idem.remember', 'user', user, 'key', key, 'fp', fp, 'ref', '',
      'created', '0', 'kind', 'charge', 'refused', 'BALANCE_LIMIT', 'at', now)
  end
  return redis.error_reply('BALANCE_LIMIT')
end
balance = redis.call('HINCRBY', bal, user, amount)
local event = {'type', 'point.charge', 'id', id, 'user', user, 'amount', amount, 'balance', balance, 'at', now}
if key ~= '' then -- the key and fingerprint travel with the event, so restore can rebuild the record
  event[#event + 1], event[#event + 2], event[#event + 3], event[#event + 4] = 'idem', key, 'fp', fp
end
redis.call('XADD', events, '*', unpack(event))
if key ~= '' then
  redis.call('SET', idem, cjson.encode({fingerprint = fp, id = id, amount = amount, balance = balance, at = now}),
    'EX', ttl)
end
return {id, amount, balance, now, 0}
