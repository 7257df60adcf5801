-- gated(cfg, limit, aseq, active, places, noshow, user, seq, t): the checks a hold makes on the concert's
-- slot before the seat's (seat_hold, gate_apply): the concert in Redis (its settings hold and maxholds),
-- the user's rate (limit(t): true when this call is past it, lib/rate_limit.lua), the queue token of arrival seq ACTIVE at t; the fan is then off the
-- no-show watch, whatever the seat's answer (a gated call: they showed up). Returns the settings
-- {hold (ms), maxholds}, or nil and the error reply: NOT_FOUND, RATE_LIMITED, QUEUE_NOT_ACTIVE,
-- QUEUE_TOKEN_EXPIRED.
--#include active_token
local function gated(cfg, limit, aseq, active, places, noshow, user, seq, t)
  local conf = redis.call('HMGET', cfg, 'hold', 'maxholds')
  if not conf[1] then
    return nil, redis.error_reply('NOT_FOUND')
  end
  if limit(t) then
    return nil, redis.error_reply('RATE_LIMITED')
  end
  local refused = token_refusal(aseq, active, places, user, seq, t)
  if refused then
    return nil, refused
  end
  redis.call('ZREM', noshow, user)
  return conf
end
