-- payment_remember: records the Idempotency-Key of a payment for its lifetime, unless the key is
-- recorded already (the first record stands). The event makes the record durable, so restore can bring
-- it back.
-- KEYS[1] idem     string: the idempotency record of (user, key), JSON {fingerprint, ref, created}
-- KEYS[2] events   stream: the wallet shard's outbox
-- ARGV[1] user  ARGV[2] key  ARGV[3] request fingerprint  ARGV[4] ref (the payment id)
-- ARGV[5] created ('1' when the first answer was a creation, else '0')  ARGV[6] lifetime (s)  ARGV[7] now (ms)
-- Event: idem.remember user key fp ref created at
-- Reply: 1 when recorded, 0 when the key had a record already
-- Errors: none
local rec = cjson.encode({fingerprint = ARGV[3], ref = ARGV[4], created = ARGV[5] == '1'})
if not redis.call('SET', KEYS[1], rec, 'NX', 'EX', tonumber(ARGV[6])) then
  return 0
end
redis.call('XADD', KEYS[2], '*', 'type', 'idem.remember', 'user', ARGV[1], 'key', ARGV[2], 'fp', ARGV[3],
  'ref', ARGV[4], 'created', ARGV[5], 'at', ARGV[7])
return 1
