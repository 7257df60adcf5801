-- payment_remember: the Idempotency-Key of a payment, reserved in the same step that decides who acts:
-- 'reserve' before paying (a concurrent request with the key sees the reservation), 'finish' after (the
-- first finish stands: every answer with the key repeats it), 'release' when the payment was refused
-- (the key is free again). The event of 'finish' makes the record durable, so restore can bring it back.
-- KEYS[1] idem     string: the idempotency record of (user, key), JSON {fingerprint, ref, created, pending}
-- KEYS[2] events   stream: the wallet shard's outbox
-- ARGV[1] user  ARGV[2] key  ARGV[3] request fingerprint  ARGV[4] ref (the payment id)
-- ARGV[5] created ('1' when the first answer was a creation, else '0')  ARGV[6] lifetime (s)  ARGV[7] now (ms)
-- ARGV[8] step: 'reserve' | 'finish' | 'release'
-- Event: idem.remember user key fp ref created at (on 'finish', when it records)
-- Reply: {state, record JSON}: state 'RESERVED' (reserve: this call took the key), 'PENDING' (reserve: a
--        request with the same fingerprint holds it), 'DONE' (the key has its answer; record is it),
--        'RELEASED' or 'NONE' (release)
-- Errors: IDEMPOTENCY_CONFLICT (the key is recorded or reserved with another fingerprint)
local step = ARGV[8]
local prior = redis.call('GET', KEYS[1])
local p = prior and cjson.decode(prior)
if p and p.fingerprint ~= ARGV[3] then
  if step == 'release' then
    return {'NONE', prior}
  end
  return redis.error_reply('IDEMPOTENCY_CONFLICT')
end
if step == 'release' then
  if p and p.pending then
    redis.call('DEL', KEYS[1])
    return {'RELEASED', prior}
  end
  return {'NONE', prior or ''}
end
if p and not p.pending then
  return {'DONE', prior}
end
if step == 'reserve' then
  if p then
    return {'PENDING', prior}
  end
  local rec = cjson.encode({fingerprint = ARGV[3], ref = ARGV[4], created = false, pending = true})
  redis.call('SET', KEYS[1], rec, 'EX', tonumber(ARGV[6]))
  return {'RESERVED', rec}
end
local rec = cjson.encode({fingerprint = ARGV[3], ref = ARGV[4], created = ARGV[5] == '1'})
redis.call('SET', KEYS[1], rec, 'EX', tonumber(ARGV[6]))
redis.call('XADD', KEYS[2], '*', 'type', 'idem.remember', 'user', ARGV[1], 'key', ARGV[2], 'fp', ARGV[3],
  'ref', ARGV[4], 'created', ARGV[5], 'at', ARGV[7])
return {'DONE', rec}
