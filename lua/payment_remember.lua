-- payment_remember: records the Idempotency-Key of a payment for its lifetime, unless the key is
-- recorded already (the first record stands). The event makes the record durable, so restore can bring
-- it back.
-- KEYS[1] idem     string: the idempotency record of (user, key), JSON {fingerprint, ref, created}
-- KEYS[2] events   stream: the wallet shard's outbox
-- ARGV[1] user  ARGV[2] key  ARGV[3] fp (the request's fingerprint)  ARGV[4] ref (the payment id)
-- ARGV[5] created ('1' when the first answer was a creation, else '0')  ARGV[6] ttl (the lifetime, s)
-- ARGV[7] now (ms)
-- Event: idem.remember user key fp ref created at
-- Reply: 1 when recorded, 0 when the key had a record already
-- Errors: none
local idem, events = KEYS[1], KEYS[2]
local user, key, fp, ref, created, ttl, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local rec = cjson.encode({fingerprint = fp, ref = ref, created = created == '1'})
if not redis.call('SET', idem, rec, 'NX', 'EX', tonumber(ttl)) then
  return 0
end
redis.call('XADD', events, '*', 'type', 'idem.remember', 'user', user, 'key', key, 'fp', fp, 'ref', ref,
  'created', created, 'at', now)
return 1
