-- queue_status: the exact state of one queue token (read only). Polls of WAITING tokens are answered
-- from each instance's queue view instead; this runs when the view cannot answer.
-- KEYS[1] places  hash: user -> seq of each fan WAITING in the line
-- KEYS[2] active  zset: member user, score activeUntil (ms)
-- KEYS[3] aseq    hash: user -> seq of the ACTIVE token
-- KEYS[4] done    set: seqs whose fan finished (paid their last hold)
-- KEYS[5] inv     hash: soldout: once every seat is sold, a token still in the line reads SOLD_OUT
-- KEYS[6] head    string: highest seq that left the line by admission
-- KEYS[7] left    zset: member seq, score seq (leavers still above head)
-- ARGV[1] user id
-- ARGV[2] seq
-- ARGV[3] now (ms)
-- Reply: {status ('WAITING'|'ACTIVE'|'EXPIRED'|'DONE'|'SOLD_OUT'), position (1-based, 0 unless WAITING),
--         activeUntil (ms, 0 unless ACTIVE)}
-- Errors: none.
local places, active, aseq, done, inv, head, left = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local user, seq, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
--#include line
local n = tonumber(seq)
if tonumber(redis.call('HGET', aseq, user)) == n then
  local till = tonumber(redis.call('ZSCORE', active, user))
  if till and till > now then
    return {'ACTIVE', 0, till}
  end
end
if tonumber(redis.call('HGET', places, user)) == n then
  if redis.call('HGET', inv, 'soldout') == '1' then
    return {'SOLD_OUT', 0, 0}
  end
  return {'WAITING', position(head, left, n), 0}
end
if redis.call('SISMEMBER', done, seq) == 1 then
  return {'DONE', 0, 0}
end
return {'EXPIRED', 0, 0}
