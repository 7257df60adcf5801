-- end_token(active, aseq, events, user, seq, why, now): user's ACTIVE token of arrival seq ends now: out
-- of the active set, with its event: why 'lapse' (queue.lapse), 'leave' (queue.leave from ACTIVE) or
-- 'done' (queue.done; the caller also marks the seq done).
local function end_token(active, aseq, events, user, seq, why, now)
  redis.call('ZREM', active, user)
  redis.call('HDEL', aseq, user)
  if why == 'lapse' then
    redis.call('XADD', events, '*', 'type', 'queue.lapse', 'user', user, 'seq', seq, 'at', now)
  elseif why == 'done' then
    redis.call('XADD', events, '*', 'type', 'queue.done', 'user', user, 'seq', seq, 'at', now)
  else
    redis.call('XADD', events, '*', 'type', 'queue.leave', 'user', user, 'seq', seq, 'from', 'ACTIVE', 'at', now)
  end
end
