-- line_left: on the concert's slot, where admission is decided, an arrival seq of a sharded line that is
-- not, or no longer, in the line: a fan's leave (from 'LEAVE'), or a seq line_arrive gave to a join that
-- did not take it (a rejoin, or a join refused in its shard: from 'SKIP').
-- A leave is decided here, before the fan's shard forgets them (line_leave), so that it is final whatever
-- a tick is doing (docs/scaleout.md, "A leave"): the fan's ACTIVE slot is given back when seq is their
-- ACTIVE token; otherwise the seq is marked quit, and no line_admit admits a quit seq, whatever heads it
-- read before. Either way a seq above the head is logged once (left, leftlog), so that every instance
-- closes the gap in the positions behind it, and the seq is no longer owed (line_admit).
-- KEYS[1] left     zset: member seq, score seq (leavers still above head)
-- KEYS[2] leftlog  zset: member seq, score leave ordinal (what instances read incrementally)
-- KEYS[3] leftn    string: leave ordinal counter
-- KEYS[4] events   stream: the concert's outbox
-- KEYS[5] head     string: highest seq that left the line by admission
-- KEYS[6] active   zset: member user, score activeUntil (ms)
-- KEYS[7] aseq     hash: user -> seq of the ACTIVE token
-- KEYS[8] quit     zset: member seq, score when it left (ms): seqs no tick may admit
-- KEYS[9] owed     zset: member seq, score when a tick passed it (ms): seqs a tick passed unread
-- ARGV[1] user id
-- ARGV[2] seq
-- ARGV[3] from ('LEAVE' | 'SKIP')
-- ARGV[4] now (ms)
-- Reply: 'ACTIVE' (a leave that gave back the ACTIVE slot), 'LOGGED' (the seq logged as out of the line),
--        'NONE' (logged already, or at or behind the head)
-- Events: queue.leave user seq from ('ACTIVE', or 'WAITING' for a leave, 'SKIP') ord (not for ACTIVE) at
-- Errors: none.
local left, leftlog, leftn, events, head = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local active, aseq, quit, owed = KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local user, seq, from, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
--#include leaves
--#include end_token
redis.call('ZREM', owed, seq)
if from == 'LEAVE' then
  redis.call('ZADD', quit, now, seq)
  if redis.call('HGET', aseq, user) == seq then
    end_token(active, aseq, events, user, seq, 'leave', now)
    return 'ACTIVE'
  end
  from = 'WAITING'
end
if redis.call('ZSCORE', leftlog, seq) or tonumber(seq) <= tonumber(redis.call('GET', head) or '0') then
  return 'NONE'
end
log_leave(left, leftlog, leftn, events, user, seq, from, now)
return 'LOGGED'
