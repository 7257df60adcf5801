-- line_enter: the second step of a join to a sharded line, on the fan's shard (a stable function of the
-- user id): the fan is already WAITING here (a rejoin: their seq is given back, and the one line_arrive
-- gave this call is a gap), or passes the user's rate and the concert's gates and takes the line at
-- the seq line_arrive gave. Every fan of this shard is in this slot: their place, their liveness, their
-- rate bucket, their proof of work and, for a sale, their pre-queue entry. With seq 0 (line_arrive's
-- PREQUEUE, before the opening) the fan enters this shard's pre-queue unless it is sealed (SEALED:
-- the opening has passed for someone; the join seals and arrives). A pre-queue entrant the draw has not
-- placed yet (pre score >= 0) stays PREQUEUE; once placed (score -seq) they are in the line or gone.
-- KEYS[1] places  hash: user -> seq of each fan WAITING in this shard's part of the line
-- KEYS[2] alive   hash: seq -> when its fan was last seen (ms): a join or rejoin is a sign of life
-- KEYS[3] events  stream: the shard's outbox
-- KEYS[4] rl      string: the user's rate bucket (its theoretical arrival time, ms), same slot
-- KEYS[5] pow     string: marks the proof's challenge used until it expires (a placeholder without one)
-- KEYS[6] pre     zset: this shard's pre-queue entrants, score the entry time (ms), or -seq once placed
-- KEYS[7] draw    hash: sealed ('1' once this shard's pre-queue is closed)
-- KEYS[8] order   list: '<seq>|<user>' of this shard's arrivals in seq order
-- ARGV[1] user id
-- ARGV[2] now (ms)
-- ARGV[3] seq (line_arrive's; 0: enter the pre-queue)
-- ARGV[4] ulimit (requests/s, 0 = off)  ARGV[5] uburst
-- ARGV[6] powid (the checked challenge's id; '' none, '-' a proof that failed the check)  ARGV[7] powbits
-- (its difficulty)  ARGV[8] powexp (its expiry, ms)
-- ARGV[9] need (the proof-of-work bits the concert asks)  ARGV[10] codereq (0|1)  ARGV[11] code ('' none,
-- '1' valid, '0' not: line_arrive's)
-- Reply: {status ('WAITING'|'PREQUEUE'|'SEALED'), seq (0 unless WAITING), activeUntil (0), created (1|0: 0
--         when the fan was in line or in the pre-queue already)}
-- Event: queue.join user seq at; queue.prequeue user at
-- Errors: RATE_LIMITED, ACCESS_CODE_REQUIRED, ACCESS_CODE_INVALID, POW_REQUIRED, POW_INVALID
local places, alive, events, rl, pow, pre, draw = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local order = KEYS[8]
local user, now, seq = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local ulimit, uburst = tonumber(ARGV[4]), tonumber(ARGV[5])
local powid, powbits, powexp = ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8])
local need, codereq, code = tonumber(ARGV[9]), ARGV[10], ARGV[11]
--#include rate_limit
--#include pow
--#include prequeue
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
--#include line
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
