-- budget(bucket, rate, now): the concert's admission rate budget (bucket: tok, ts), refilled at rate
-- tokens a second up to rate since it was last written. Returns the tokens and the time to write back
-- with them once spent.
local function budget(bucket, rate, now)
  local b = redis.call('HMGET', bucket, 'tok', 'ts')
  local tok, ts = tonumber(b[1]) or rate, tonumber(b[2]) or now
  if now > ts then
    tok, ts = math.min(rate, tok + (now - ts) * rate / 1000), now
  end
  return tok, ts
end
