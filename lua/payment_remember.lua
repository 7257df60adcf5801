-- payment_remember: the Idempotency-Key of a payment, reserved in the same step that decides who acts:
-- 'reserve' before paying (a concurrent request with the key sees the reservation), 'finish' after (the
-- first finish stands: every answer with the key repeats it, a refusal's code as much as a payment),
-- 'release' when the payment failed without an answer to repeat (the key is free again). The event of
-- 'finish' makes the record durable, so restore can bring it back.
-- KEYS[1] idem     string: the idempotency record of (user, key), JSON {fingerprint, ref, created, pending}
--                  or, for a refusal, {fingerprint, refused}
-- KEYS[2] events   stream: the wallet shard's outbox
-- ARGV[1] user  ARGV[2] key  ARGV[3] fp (the request's fingerprint)  ARGV[4] ref (the payment id)
-- ARGV[5] created ('1' when the first answer was a creation, else '0')  ARGV[6] ttl (the lifetime, s)
-- ARGV[7] now (ms)  ARGV[8] step: 'reserve' | 'finish' | 'release'
-- ARGV[9] refused ('finish': the code of the refusal that answered the request, '' when it paid)
-- Event: idem.remember user key fp ref created at, and refused for a refusal (on 'finish', when it records)
-- Reply: {state, record JSON}: state 'RESERVED' (reserve: this call took the key), 'PENDING' (reserve: a
--        request with the same fingerprint holds it), 'DONE' (the key has its answer; record is it),
--        'RELEASED' or 'NONE' (release)
-- Errors: IDEMPOTENCY_CONFLICT
local idem, events = KEYS[1], KEYS[2]
local user, key, fp, ref, created, ttl, now, step = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local refused = ARGV[9]
local prior = redis.call('GET', idem)
local p = prior and cjson.decode(prior)
if p and p.fingerprint ~= fp then
  if step == 'release' then
    return {'NONE', prior}
  end
  return redis.error_reply('IDEMPOTENCY_CONFLICT')
end
if step == 'release' then
  if p and p.pending then
    redis.call('DEL', idem)
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
  local rec = cjson.encode({fingerprint = fp, ref = ref, created = false, pending = true})
  redis.call('SET', idem, rec, 'EX', tonumber(ttl))
  return {'RESERVED', rec}
end
local rec
if refused ~= '' then
  rec = cjson.encode({fingerprint = fp, refused = refused})
  redis.call('XADD', events, '*', 'type', 'idem.remember', 'user', user, 'key', key, 'fp', fp, 'ref', '',
    'created', '0', 'refused', refused, 'at', now)
else
  rec = cjson.encode({fingerprint = fp, ref = ref, created = created == '1'})
  redis.call('XADD', events, '*', 'type', 'idem.remember', 'user', user, 'key', key, 'fp', fp, 'ref', ref,
    'created', created, 'at', now)
end
redis.call('SET', idem, rec, 'EX', tonumber(ttl))
return {'DONE', rec}
