-- line_enter: the second step of a join to a sharded line, on the fan's shard (a stable function of the
-- user id): the fan is already WAITING here (a rejoin: their seq is given back, and the one line_arrive
-- gave this call is a gap), or passes the user's rate and the concert's gates and takes the line at
-- the seq line_arrive gave. Every fan of this shard is in this slot: their place, their liveness, their
-- rate bucket, their proof of work and, for a sale, their pre-queue entry. With seq 0 (line_arrive's
-- PREQUEUE, before the opening) the fan enters this shard's pre-queue unless it is sealed (SEALED:
-- the opening has passed for someone; the join seals and arrives). A pre-queue entrant the draw has not
-- placed yet (pre score >= 0) stays PREQUEUE; once placed (score -seq) they are in the line or gone.
-- Joins of one shard go in batches (docs/scaleout.md, "Calls that share a slot"): each as if
-- alone, in the batch's order; one call and one replica wait a batch.
-- KEYS[1] places  hash: user -> seq of each fan WAITING in this shard's part of the line
-- KEYS[2] alive   hash: seq -> when its fan was last seen (ms): a join or rejoin is a sign of life
-- KEYS[3] events  stream: the shard's outbox
-- KEYS[4] pre     zset: this shard's pre-queue entrants, score the entry time (ms), or -seq once placed
-- KEYS[5] draw    hash: sealed ('1' once this shard's pre-queue is closed)
-- KEYS[6] order   list: '<seq>|<user>' of this shard's arrivals in seq order
-- KEYS[7..] rl|pow  two a join: the user's rate bucket (string: its theoretical arrival time, ms), and
--                   the mark of the proof's challenge used until it expires (a placeholder without one)
-- ARGV[1..] joins eleven items each: user id; now (ms); seq (line_arrive's; 0: enter the pre-queue);
-- ulimit (requests/s, 0 = off); uburst; powid (the checked challenge's id; '' none, '-' a proof that failed
-- the check); powbits (its difficulty); powexp (its expiry, ms); need (the proof-of-work bits the concert
-- asks); codereq (0|1); code ('' none, '1' valid, '0' not: line_arrive's)
-- Reply: four items a join, in order: status ('WAITING'|'PREQUEUE'|'SEALED', or the code of the join's
--         refusal), seq (0 unless WAITING), activeUntil (0), created (1|0: 0 when the fan was in line or in
--         the pre-queue already)
-- Event: queue.join user seq at; queue.prequeue user at
-- Errors: none of the call; a join's refusal, as its status: RATE_LIMITED, ACCESS_CODE_REQUIRED,
--         ACCESS_CODE_INVALID, POW_REQUIRED, POW_INVALID
local places, alive, events, pre, draw = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local order = KEYS[6]
local fixed, width = 6, 11
--#include rate_limit
--#include pow
--#include prequeue
--#include line
local function enter(rl, pow, user, now, seq, ulimit, uburst, powid, powbits, powexp, need, codereq, code)
  if limited(rl, now, ulimit, uburst) then
    return redis.error_reply('RATE_LIMITED')
  end
  local entered = tonumber(redis.call('ZSCORE', pre, user) or '-1')
  if seq == '0' then
    if entered >= 0 then
      return {'PREQUEUE', 0, 0, 0}
    end
    if redis.call('HGET', draw, 'sealed') == '1' then
      return {'SEALED', 0, 0, 0}
    end
  end
  local waiting = redis.call('HGET', places, user)
  if waiting then
    redis.call('HSET', alive, waiting, now)
    return {'WAITING', tonumber(waiting), 0, 0}
  end
  if entered >= 0 then
    return {'PREQUEUE', 0, 0, 0} -- an entrant the draw has not placed yet
  end
  -- Gates, asked of a fan without a live token (an ACTIVE one got theirs back at line_arrive).
  local refused = join_refusal(codereq == '1', code, code == '1', pow, powid, powbits, powexp, need, now)
  if refused then
    return refused
  end
  if seq == '0' then
    enter_prequeue(pre, events, user, now)
    return {'PREQUEUE', 0, 0, 1}
  end
  redis.call('HSET', places, user, seq)
  -- In seq order: a join that took a lower seq (line_arrive) may enter after one that took a higher; the
  -- entries past this one's seq (a few, in that race) move behind it, at most 64 of them: a join that
  -- stalled longer between its two steps enters behind the rest, which passes it as joins answered while
  -- it was in flight (the bound of docs/scaleout.md, "Arrival order across shards").
  local past = {}
  while #past < 64 do
    local last = redis.call('LINDEX', order, -1)
    if not last or tonumber(seq_of(last)) < tonumber(seq) then
      break
    end
    past[#past + 1] = redis.call('RPOP', order)
  end
  redis.call('RPUSH', order, entry(seq, user))
  for i = #past, 1, -1 do
    redis.call('RPUSH', order, past[i])
  end
  redis.call('HSET', alive, seq, now)
  redis.call('XADD', events, '*', 'type', 'queue.join', 'user', user, 'seq', seq, 'at', now)
  return {'WAITING', tonumber(seq), 0, 1}
end
local out = {}
for i = 1, #ARGV, width do
  local j = (i - 1) / width
  local r = enter(KEYS[fixed + 1 + 2 * j], KEYS[fixed + 2 + 2 * j], ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2],
    tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4]), ARGV[i + 5], tonumber(ARGV[i + 6]), tonumber(ARGV[i + 7]),
    tonumber(ARGV[i + 8]), ARGV[i + 9], ARGV[i + 10])
  if r.err then
    r = {string.match(r.err, '([%u_]+)$'), 0, 0, 0} -- the code alone ('ERR ' may lead it)
  end
  for _, v in ipairs(r) do
    out[#out + 1] = v
  end
end
return out
