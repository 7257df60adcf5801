-- pow_refusal(pow, powid, powbits, powexp, need, now): nil when a join need not carry a proof of work
-- (need 0), or must carry one of need bits and carries a good one, which is then marked used until it
-- expires (pow: the challenge's key; a challenge works once); else the error reply. powid is the checked
-- challenge's id ('' none, '-' a proof that failed the check), powbits its difficulty, powexp its expiry
-- (ms).
local function pow_refusal(pow, powid, powbits, powexp, need, now)
  if need <= 0 then
    return nil
  elseif powid == '' then
    return redis.error_reply('POW_REQUIRED')
  elseif powid == '-' or powbits < need or powexp <= now then
    return redis.error_reply('POW_INVALID')
  end
  if not redis.call('SET', pow, '1', 'NX', 'PX', powexp - now) then
    return redis.error_reply('POW_INVALID')
  end
  return nil
end

-- code_refusal(required, code, valid): nil unless the concert asks for an access code (required) and the
-- join carries none (code '': ACCESS_CODE_REQUIRED) or one that is not valid for the fan (valid false:
-- ACCESS_CODE_INVALID).
local function code_refusal(required, code, valid)
  if not required then
    return nil
  elseif code == '' then
    return redis.error_reply('ACCESS_CODE_REQUIRED')
  elseif not valid then
    return redis.error_reply('ACCESS_CODE_INVALID')
  end
  return nil
end

-- join_refusal(required, code, valid, pow, powid, powbits, powexp, need, now): the gates a join without a
-- live token passes (queue_join, line_enter): nil, or the error reply of code_refusal, then of
-- pow_refusal. The code is asked first: pow_refusal marks a good proof used, so a join refused for its
-- code keeps its proof.
local function join_refusal(required, code, valid, pow, powid, powbits, powexp, need, now)
  return code_refusal(required, code, valid) or pow_refusal(pow, powid, powbits, powexp, need, now)
end
