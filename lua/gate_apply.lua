-- gate_apply: the fan's side of the holds and of the steps of reservations whose seat slots are not
-- the concert's own (docs/scaleout.md, "One concert over every master: seat slots"), for a batch of
-- them an instance received meanwhile (one call for the steps that arrived while its previous call was
-- in flight: docs/scaleout.md, "Calls that share a slot"), each as if alone, in the batch's order. Two
-- kinds of step:
--   H (a hold's first step, before seat_take on the seat's slot): the fan's rate, the token ACTIVE, the
--     fan shown up (off the no-show watch), and one of the fan's maxHoldsPerUser reserved for the
--     reservation until the hold's expiry (lib/gate.lua). Idempotent by id: a second step for the same
--     id reserves nothing more and replies with its time.
--   G (a gated read's check: the seat map, the dates' counts): the token ACTIVE and the fan shown up, as an
--     H step checks them, with no rate and nothing reserved.
--   F (after a step on the seat's slot, or a hold the seat refused): the fan's gate entry of the
--     reservation follows what the step left (lib/follow.lua): until the hold's expiry while HELD, until
--     paying ms after now at least while being paid, gone otherwise; after a sale, once no other entry of
--     the fan's counts, their queue token becomes DONE. Idempotent: the same step again leaves the same
--     state.
-- Each gate entry counts until its time, so an entry whose hold never came (a crash between the steps)
-- or whose follow was lost stops counting by itself when the hold would have lapsed. The fan's rate
-- bucket for holds (lib/rate_limit.lua's rule) is kept in their gate record, as a first item '~<its
-- time, ms>', while they have open holds and its time is to come (a winning hold writes one field of the
-- shard); once they have none, in the key rl, which expires with the bucket's time, as the
-- other rate buckets do (a fan leaves no record behind).
-- It runs on the fan's own line shard, batched per shard, never on the concert's slot: the shard keeps the
-- fan's ACTIVE token as the round that admitted them left it (tok, written by line_pop), their record and
-- rate bucket, and takes their show-up (a mark in shown, which the next round reads: line_heads,
-- line_admit). A hold or a gated read whose token the shard does not have (admitted, not yet popped; after
-- a restore), or whose fan is past the no-show deadline with no call here (who may have shown on the
-- concert's slot) is answered ASK: the caller asks the concert's slot and sends the step again with the token it answered
-- (given), which the shard then keeps (docs/scaleout.md, "The gate on the fan's shard"). A sale's DONE
-- ends the shard's token; the caller ends the concert's (token_done).
-- KEYS[1] tok      hash: user -> '<seq>:<until ms>:<show deadline ms, 0 once shown>' of the fan's ACTIVE
--                  token, '<seq>:d' once DONE, '<seq>:x' once left (line_leave)
-- KEYS[2] places   hash: user -> seq of each fan WAITING in the shard
-- KEYS[3] ugate    hash: user -> the fan's record: '~<rate bucket's time>' first while it is to come, then
--                  '<res>:<until ms>' of each of their open holds over every schedule, comma-separated
-- KEYS[4] shown    set: '<user>:<seq>' of the fans shown up here since the last round read them
-- KEYS[5..] rl     string: the rate bucket of each step's user while they have no open hold (its time, ms)
-- ARGV[1] ulimit (requests/s, 0 = off)  ARGV[2] uburst  ARGV[3] paying (ms: how long a claim keeps counting,
-- PayingGate)  ARGV[4] hold (ms)  ARGV[5] maxholds (the concert's settings, fixed at its creation)
-- ARGV[6..] steps: eight items each: kind (H|G|F), user, id (the reservation), seq (of the fan's queue token),
-- status (F: the reservation's after its step, HELD, PAYING, PAID; anything else removes the entry; H, G: ''),
-- expires (F: the reservation's expiry, ms; H, G: ''), now (ms), given (H, G after an ASK: the token's
-- activeUntil (ms) as the concert's slot answered it ACTIVE; else '')
-- Reply: one item a step, in order: H, the hold's expiry (ms), which seat_take gives the reservation, or
--        the code of its refusal (below); G, the token's activeUntil (ms) or the code of its refusal; F, 1 when the token became DONE (the caller ends it on the
--        concert's slot), else 0
-- Errors: none of the call; an H or G step's refusal, as its item: NOT_FOUND (no hold settings given),
--         QUEUE_NOT_ACTIVE, QUEUE_TOKEN_EXPIRED, HOLD_LIMIT_REACHED, RATE_LIMITED, ASK
local tok, places, ugate, shown = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local ulimit, uburst, paying, hold, maxholds = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5]
-- The concert's keys the rules name, answered here and never sent (no such key is in this slot).
local cfg, active, aseq, noshow, done, events = '@cfg', '@active', '@aseq', '@noshow', '@done', '@events'
local first, width, fixed = 6, 8, 4
-- The rules below (lib/gate.lua, lib/follow.lua) call redis.call as they do in a call of their own. Here
-- that is the batch's: their reads of the fans' gate records, and of the tokens and expiries of the
-- fans who hold, are answered from one read of each for every such fan of the batch (HMGET of the records
-- and of the shard's tokens), their writes of the gate records and of the no-show watch are kept and made once
-- at the end, and any other command goes to Redis as it is. A step reads what the steps before it wrote,
-- as if each ran alone.
local real, users, seen, latest = redis, {}, {}, 0
local rlOf, seqOf = {}, {} -- user -> their rate bucket's key, and the seq of their first step
for i = first, #ARGV, width do
  local user = ARGV[i + 1]
  if not seen[user] then
    seen[user] = {}
    users[#users + 1] = user
    rlOf[user], seqOf[user] = KEYS[fixed + 1 + (i - first) / width], ARGV[i + 3]
  end
  if ARGV[i] == 'H' then
    seen[user].holds = true
  end
  latest = math.max(latest, tonumber(ARGV[i + 6]))
end
local function read(cmd, key, who)
  local m = {}
  if #who > 0 then
    local vals = real.call(cmd, key, unpack(who))
    for i, u in ipairs(who) do
      m[u] = vals[i]
    end
  end
  return m
end
local view = {[ugate] = read('HMGET', ugate, users)}
local toks, tokDirty, shownNow = {}, {}, {} -- user -> {seq, till (ms, or 'd'|'x'), deadline}
local function token_view(u)
  local t = toks[u]
  if t then
    view[aseq][u] = t.till ~= 'x' and t.seq -- a DONE token keeps its seq: the same sale's follow again is 1
    view[active][u] = tonumber(t.till) and t.till or false
  else
    view[aseq][u], view[active][u] = seqOf[u], false -- a follow's seq: the concert's slot decides (token_done)
  end
end
view[aseq], view[active] = {}, {}
for u, v in pairs(read('HMGET', tok, users)) do
  local seq, till, deadline = string.match(v or '', '^(%d+):([^:]+):?(%d*)$')
  if seq then
    toks[u] = {seq = seq, till = till, deadline = tonumber(deadline) or 0}
  end
  token_view(u)
end
local tats, inRecord, bare = {}, {}, {} -- user -> their hold rate bucket's time (ms), and where it was
for u, v in pairs(view[ugate]) do
  local tat, rest = string.match(v or '', '^~([%d.]+),?(.*)$')
  if tat then
    tats[u], inRecord[u], view[ugate][u] = tonumber(tat), true, rest ~= '' and rest
  elseif seen[u].holds then
    bare[#bare + 1] = u
  end
end
if #bare > 0 and ulimit > 0 then -- holders without a bucket in their record: their key's
  local keys = {}
  for i, u in ipairs(bare) do
    keys[i] = rlOf[u]
  end
  for i, v in ipairs(real.call('MGET', unpack(keys))) do
    tats[bare[i]] = tonumber(v)
  end
end
local dirty, moved = {}, {} -- moved: the fan's bucket changed in this batch
local redis = {error_reply = real.error_reply, call = function(cmd, key, ...)
  local field, value = ...
  local m = view[key]
  if m and m[field] ~= nil then
    if cmd == 'HGET' or cmd == 'ZSCORE' then
      return m[field]
    elseif key == ugate then -- HSET, HDEL: kept for the end
      m[field], dirty[field] = cmd == 'HSET' and value, true
      return 1
    end
    m[field] = false -- HDEL of aseq, ZREM of active: a sale's DONE ends the shard's token (token_done the concert's)
    if key == aseq then
      local t = toks[field]
      toks[field], tokDirty[field] = {seq = t and t.seq or seqOf[field], till = 'd', deadline = 0}, true
    end
    return 1
  elseif key == noshow and cmd == 'ZREM' then
    if toks[field] and toks[field].deadline > 0 then -- the fan's first gated call: marked for the round
      toks[field].deadline, tokDirty[field] = 0, true
      shownNow[#shownNow + 1] = field .. ':' .. toks[field].seq
    end
    return 1
  elseif key == cfg and cmd == 'HMGET' then
    return {hold ~= '' and hold or false, maxholds}
  elseif key == done or key == events then
    return 1 -- the concert's slot keeps them (token_done)
  end
  return real.call(cmd, key, ...)
end}
--#include rate_limit
--#include gate
--#include follow
-- limit is gated's rate check of user's hold, on their bucket as this batch has it (tats).
local function limit(user)
  return function(t)
    if ulimit <= 0 then
      return false
    end
    local over, after = gcra(tats[user], t, ulimit, uburst)
    if not over then
      tats[user], dirty[user], moved[user] = after, true, true
    end
    return over
  end
end
-- ask reports whether the shard must learn user's token of seq from the concert's slot before a hold at
-- t: it has none of that seq (not popped yet, or lost), or the fan is past the no-show deadline with no
-- call here, and may have shown by a gated read. With given (the concert's slot's answer) the shard
-- keeps the token, shown, unless it has that seq ended or a later one.
local function ask(user, seq, t, given)
  local tk = toks[user]
  if given ~= '' and not (tk and tonumber(tk.seq) >= tonumber(seq) and (tk.seq ~= seq or not tonumber(tk.till))) then
    toks[user], tokDirty[user] = {seq = seq, till = given, deadline = 0}, true
    token_view(user)
    return false
  end
  if not tk or tonumber(tk.seq) < tonumber(seq) then
    return true
  end
  return tk.seq == seq and tonumber(tk.till) ~= nil and tk.deadline > 0 and t > tk.deadline
end
local function never()
  return false
end
local out = {}
for i = first, #ARGV, width do
  local kind, user, id, seq, now = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 6]
  if kind ~= 'F' and ask(user, seq, tonumber(now), ARGV[i + 7]) then
    out[#out + 1] = 'ASK'
  elseif kind ~= 'F' then
    local answer, refused
    if kind == 'H' then
      answer, refused = gate_reserve(cfg, limit(user), aseq, active, places, noshow, ugate, user, seq, id, tonumber(now))
    else
      local conf
      conf, refused = gated(cfg, never, aseq, active, places, noshow, user, seq, tonumber(now))
      answer = conf and tonumber(view[active][user])
    end
    out[#out + 1] = answer or string.match(refused.err, '([%u_]+)$') -- the code alone ('ERR ' may lead it)
  else
    out[#out + 1] = follow(ugate, active, aseq, done, events, {id = id, user = user, seq = tonumber(seq),
      status = ARGV[i + 4], expiresAt = tonumber(ARGV[i + 5])}, tonumber(now), now, paying)
  end
end
-- The batch's writes: each record a fan changed once, their rate bucket first while it is to come; a
-- fan left without open holds has no record, and a bucket still to come goes to their key.
local set, gone = {}, {}
for u in pairs(dirty) do
  local v, tat = view[ugate][u] or '', tats[u]
  if tat and tat <= latest then
    tat = nil
  end
  if v ~= '' then
    set[#set + 1], set[#set + 2] = u, tat and '~' .. string.format('%.3f', tat) .. ',' .. v or v
  else
    gone[#gone + 1] = u
    if tat and (inRecord[u] or moved[u]) then
      real.call('SET', rlOf[u], string.format('%.3f', tat), 'PX', math.ceil(tat - latest) + 1)
    end
  end
end
local tokens = {}
for u in pairs(tokDirty) do
  local t = toks[u]
  tokens[#tokens + 1] = u
  tokens[#tokens + 1] = tonumber(t.till) and string.format('%s:%s:%d', t.seq, t.till, t.deadline) or
    t.seq .. ':' .. t.till
end
for _, w in ipairs({{'HSET', ugate, set}, {'HDEL', ugate, gone}, {'HSET', tok, tokens}, {'SADD', shown, shownNow}}) do
  if #w[3] > 0 then
    real.call(w[1], w[2], unpack(w[3]))
  end
end
return out
