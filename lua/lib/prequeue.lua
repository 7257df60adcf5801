-- enter_prequeue(pre, events, user, now): user enters a sale's pre-queue (pre: member user, score the
-- entry time) at now (ms), with its queue.prequeue event (queue_join, and line_enter in the fan's shard).
local function enter_prequeue(pre, events, user, now)
  redis.call('ZADD', pre, now, user)
  redis.call('XADD', events, '*', 'type', 'queue.prequeue', 'user', user, 'at', now)
end
