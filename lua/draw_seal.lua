-- draw_seal: the draw's first step: closes a sale's pre-queue at its opening, once. The entrants take
-- the arrival seqs base+1..base+n, so every later join (queue_join INCRs seq) queues behind them. A
-- join that raced the opening sealed it already (queue_join does the same): either way it happens once.
-- KEYS[1] cfg     hash: opens (ms) of a concert with a sale
-- KEYS[2] seq     string: arrival sequence
-- KEYS[3] pre     zset: the pre-queue's entrants
-- KEYS[4] draw    hash: sealed, base, n, placed, digest, drawnAt
-- KEYS[5] events  stream: the concert's outbox
-- ARGV[1] now (ms)
-- ARGV[2] given: the entrants of a line spread over shards, the sum of line_seal's counts ('' for a line of
--         one slot: the pre zset's size). Given, the shards were sealed by one who saw the opening pass.
-- Reply: {sealed (0|1), base, n, placed, drawnAt (ms, 0 until drawn)}; sealed is 0 before the opening.
-- Errors: NOT_FOUND (no such concert in Redis, or one without a sale)
local cfg, seq, pre, draw, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local now, given = tonumber(ARGV[1]), ARGV[2]
local opens = tonumber(redis.call('HGET', cfg, 'opens'))
if not opens then
  return redis.error_reply('NOT_FOUND')
end
--#include seal
if redis.call('HGET', draw, 'sealed') ~= '1' then
  if now < opens and given == '' then
    return {0, 0, 0, 0, 0}
  end
  local n = tonumber(given) or redis.call('ZCARD', pre)
  seal(seq, draw, events, n, now)
end
local d = redis.call('HMGET', draw, 'base', 'n', 'placed', 'drawnAt')
return {1, tonumber(d[1]), tonumber(d[2]), tonumber(d[3]), tonumber(d[4] or '0')}
