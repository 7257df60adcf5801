-- The head and the leave log of a line (of one slot, or of shards on the concert's slot): head, the
-- highest seq that left the line by admission; left, the zset of the seqs out of the line above the head
-- (member and score the seq); leftlog, the same seqs scored by their leave ordinal, which every instance
-- reads onward from the last it saw to close the gaps in its positions; leftn, the ordinal counter.
-- log_leave(left, leftlog, leftn, events, user, seq, from, now): seq is logged out of the line (from
-- 'WAITING' or 'SKIP'), with its queue.leave event; returns its ordinal.
-- pass_head(head, left, leftlog, last, batch): the head moves to last when last is past it, and at most
-- batch of the logged seqs at or behind it are trimmed (a round trims what its own head passed).
local function log_leave(left, leftlog, leftn, events, user, seq, from, now)
  redis.call('ZADD', left, seq, seq)
  local ord = redis.call('INCR', leftn)
  redis.call('ZADD', leftlog, ord, seq)
  redis.call('XADD', events, '*', 'type', 'queue.leave', 'user', user, 'seq', seq, 'from', from, 'ord', ord, 'at', now)
  return ord
end

local function pass_head(head, left, leftlog, last, batch)
  if not last or tonumber(last) <= tonumber(redis.call('GET', head) or '0') then
    return
  end
  redis.call('SET', head, last)
  local gone = redis.call('ZRANGEBYSCORE', left, '-inf', last, 'LIMIT', 0, batch)
  if #gone > 0 then
    redis.call('ZREM', left, unpack(gone))
    redis.call('ZREM', leftlog, unpack(gone))
  end
end
