-- The fan's gate entry follows a step of their reservation (gate_apply's follow; a cancel, claim, release or
-- sale whose seats share the concert's slot follows in the same call).
-- follow(ugate, active, aseq, done, events, rec, t, now, paying): rec is the reservation as the step left
-- it ({id, user, seq, status, expiresAt}). Its entry counts until its expiry while HELD, until paying ms
-- after now at least while PAYING (nothing to write while the hold's own entry, until its expiry, is
-- later than that: every hold writes its entry as it takes the seat), and goes otherwise; once PAID with
-- no other entry of the fan's still counting, their queue token of rec.seq becomes DONE and the active
-- slot frees for the next in line.
-- Idempotent: the same call again leaves the same state. Returns 1 when the token became DONE, else 0.
-- followed(ugate, active, aseq, done, events, now, paying, out, rec): a step's reply out (the reservation's
-- JSON, or a refusal) with rec, its decoded record when the step has it; follows it where ugate is given
-- (the seat slot is the concert's own), and returns out.
--#include gate_entries
--#include end_token
local function follow(ugate, active, aseq, done, events, rec, t, now, paying)
  if rec.status == 'PAYING' and tonumber(rec.expiresAt) >= t + paying then
    return 0 -- the entry the hold wrote (until its expiry) already counts as long as it must
  end
  local live = gate_live(ugate, rec.user, t, rec.id)
  local till = 0
  if rec.status == 'HELD' then
    till = tonumber(rec.expiresAt)
  elseif rec.status == 'PAYING' then
    till = math.max(t + paying, tonumber(rec.expiresAt))
  end
  if till > t then
    live[#live + 1] = rec.id .. ':' .. string.format('%d', till)
  end
  gate_write(ugate, rec.user, live)
  local seq = string.format('%d', rec.seq)
  if rec.status == 'PAID' and #live == 0 and redis.call('HGET', aseq, rec.user) == seq then
    end_token(active, aseq, events, rec.user, seq, 'done', now)
    redis.call('SADD', done, seq)
    return 1
  end
  return 0
end

local function followed(ugate, active, aseq, done, events, now, paying, out, rec)
  if ugate and type(out) == 'string' then
    follow(ugate, active, aseq, done, events, rec or cjson.decode(out), tonumber(now), now, paying)
  end
  return out
end
