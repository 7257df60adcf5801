-- draw_status: the state of a pre-queue token (seq 0) of a sale, read only: still in the pre-queue,
-- placed in the line by the draw (their seq), admitted, or gone.
-- KEYS[1] pre     zset: the pre-queue's entrants
-- KEYS[2] draw    hash: sealed, drawnAt
-- KEYS[3] places  hash: user -> seq of each fan WAITING in the line
-- KEYS[4] active  zset: member user, score activeUntil (ms)
-- KEYS[5] aseq    hash: user -> seq of the ACTIVE token
-- KEYS[6] head    string: highest seq that left the line by admission
-- KEYS[7] left    zset: member seq, score seq (leavers still above head)
-- ARGV[1] user id
-- ARGV[2] now (ms)
-- Reply: {status ('PREQUEUE'|'WAITING'|'ACTIVE'|'EXPIRED'), seq (0 unless WAITING or ACTIVE),
--         position (1-based, 0 unless WAITING), activeUntil (ms, 0 unless ACTIVE)}
-- Errors: none.
local pre, draw, places, active, aseq, head, left = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local user, now = ARGV[1], tonumber(ARGV[2])
if not redis.call('ZSCORE', pre, user) then
  return {'EXPIRED', 0, 0, 0}
end
--#include line
--#include active_until
local waiting = tonumber(redis.call('HGET', places, user))
if waiting then
  return {'WAITING', waiting, position(head, left, waiting), 0}
end
local live, till = active_until(aseq, active, user, now)
if till then
  return {'ACTIVE', tonumber(live), 0, till}
end
if redis.call('HEXISTS', draw, 'drawnAt') == 0 then
  return {'PREQUEUE', 0, 0, 0}
end
return {'EXPIRED', 0, 0, 0}
