-- token_refusal(aseq, active, places, user, seq, t): nil when the queue token of user's arrival seq is
-- ACTIVE at t (the gated calls' check), else the error reply: QUEUE_NOT_ACTIVE while that arrival still
-- waits in the line, QUEUE_TOKEN_EXPIRED when it is not live.
local function token_refusal(aseq, active, places, user, seq, t)
  if redis.call('HGET', aseq, user) == seq and tonumber(redis.call('ZSCORE', active, user) or 0) > t then
    return nil
  end
  if tonumber(redis.call('HGET', places, user)) == tonumber(seq) then
    return redis.error_reply('QUEUE_NOT_ACTIVE')
  end
  return redis.error_reply('QUEUE_TOKEN_EXPIRED')
end
