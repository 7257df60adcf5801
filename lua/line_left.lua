-- line_left: logs, on the concert's slot, an arrival seq of a sharded line that is not in the line: a fan
-- who left it from their shard (line_leave: from 'WAITING'), or a seq line_arrive gave to a join that
-- did not take it (a rejoin, or a join refused in its shard: from 'SKIP'), so that every instance closes
-- the gap in the positions behind it as it does for a leave. Logged once per seq.
-- KEYS[1] left     zset: member seq, score seq (leavers still above head)
-- KEYS[2] leftlog  zset: member seq, score leave ordinal (what instances read incrementally)
-- KEYS[3] leftn    string: leave ordinal counter
-- KEYS[4] events   stream: the concert's outbox
-- KEYS[5] head     string: highest seq that left the line by admission
-- ARGV[1] user id
-- ARGV[2] seq
-- ARGV[3] from ('WAITING' | 'SKIP')
-- ARGV[4] now (ms)
-- Reply: the leave ordinal (0 when the seq was logged already or is behind the head)
-- Event: queue.leave user seq from ord at
-- Errors: none.
local left, leftlog, leftn, events, head = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local user, seq, from, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if redis.call('ZSCORE', leftlog, seq) or tonumber(seq) <= tonumber(redis.call('GET', head) or '0') then
  return 0
end
redis.call('ZADD', left, seq, seq)
local ord = redis.call('INCR', leftn)
redis.call('ZADD', leftlog, ord, seq)
redis.call('XADD', events, '*', 'type', 'queue.leave', 'user', user, 'seq', seq, 'from', from, 'ord', ord, 'at', now)
return ord
