-- gate_apply: the concert's side of the holds and of the steps of reservations whose seat slots are not
-- the concert's own (a line over shards: docs/scaleout.md, "Seat slots"), for a batch of them an instance
-- received meanwhile (one call for the steps that arrived while its previous call was in flight:
-- docs/scaleout.md, "Calls that share the concert's slot"), each as if alone, in the batch's
-- order. Two kinds of step:
--   H (a hold's first step, before seat_take on the seat's slot): the fan's rate, the token ACTIVE, the
--     fan shown up (off the no-show watch), and one of the fan's maxHoldsPerUser reserved for the
--     reservation until the hold's expiry (lib/gate.lua). Idempotent by id: a second step for the same
--     id reserves nothing more and replies with its time.
--   F (after a step on the seat's slot, or a hold the seat refused): the fan's gate entry of the
--     reservation follows what the step left (lib/follow.lua): until the hold's expiry while HELD, until
--     paying ms after now at least while being paid, gone otherwise; after a sale, once no other entry of
--     the fan's counts, their queue token becomes DONE. Idempotent: the same step again leaves the same
--     state.
-- Each gate entry counts until its time, so an entry whose hold never came (a crash between the steps)
-- or whose follow was lost stops counting by itself when the hold would have lapsed. The fan's rate
-- bucket for holds (lib/rate_limit.lua's rule) is kept in their gate record, as a first item '~<its
-- time, ms>', while they have open holds and its time is to come (a winning hold writes one field of the
-- concert's slot); once they have none, in the key rl, which expires with the bucket's time, as the
-- other rate buckets do (a fan leaves no record behind).
-- KEYS[1] cfg      hash: hold (ms), maxholds
-- KEYS[2] places   hash: user -> seq of each fan WAITING in the line
-- KEYS[3] active   zset: member user, score activeUntil (ms)
-- KEYS[4] aseq     hash: user -> seq of the ACTIVE token
-- KEYS[5] ugate    hash: user -> the fan's record: '~<rate bucket's time>' first while it is to come, then
--                  '<res>:<until ms>' of each of their open holds over every schedule, comma-separated
-- KEYS[6] noshow   zset: member user: a gated call, so the fan has shown up
-- KEYS[7] done     set: seqs whose fan finished
-- KEYS[8] events   stream: the concert's outbox
-- KEYS[9..] rl     string: the rate bucket of each step's user while they have no open hold (its time, ms)
-- ARGV[1] ulimit (requests/s, 0 = off)  ARGV[2] uburst  ARGV[3] paying (ms: how long a claim keeps counting,
-- PayingGate)
-- ARGV[4..] steps: seven items each: kind (H|F), user, id (the reservation), seq (of the fan's queue token),
-- status (F: the reservation's after its step, HELD, PAYING, PAID; anything else removes the entry; H: ''),
-- expires (F: the reservation's expiry, ms; H: ''), now (ms)
-- Reply: one item a step, in order: H, the hold's expiry (ms), which seat_take gives the reservation, or
--        the code of its refusal (below); F, 1 when the token became DONE, else 0
-- Event: queue.done user seq at, when a sale makes a token DONE
-- Errors: none of the call; an H step's refusal, as its item: NOT_FOUND, QUEUE_NOT_ACTIVE,
--         QUEUE_TOKEN_EXPIRED, HOLD_LIMIT_REACHED, RATE_LIMITED
local cfg, places, active, aseq, ugate, noshow = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local done, events = KEYS[7], KEYS[8]
local ulimit, uburst, paying = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
-- The rules below (lib/gate.lua, lib/follow.lua) call redis.call as they do in a call of their own. Here
-- that is the batch's: their reads of the fans' gate records, and of the tokens and expiries of the
-- fans who hold, are answered from one read of each for every such fan of the batch (HMGET, ZMSCORE),
-- their writes of the gate records and of the no-show watch are kept and made once at the end, and any
-- other command goes to Redis as it is. A step reads what the steps before it wrote, as if each ran alone.
local real, users, holders, seen, latest = redis, {}, {}, {}, 0
local rlOf = {} -- user -> their rate bucket's key
for i = 4, #ARGV, 7 do
  local user = ARGV[i + 1]
  if not seen[user] then
    seen[user] = {}
    users[#users + 1] = user
    rlOf[user] = KEYS[9 + (i - 4) / 7]
  end
  if ARGV[i] == 'H' and not seen[user].holds then
    seen[user].holds = true
    holders[#holders + 1] = user
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
local view = {[ugate] = read('HMGET', ugate, users), [aseq] = read('HMGET', aseq, holders),
  [active] = read('ZMSCORE', active, holders)}
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
local conf, dirty, shown, moved = nil, {}, {}, {} -- moved: the fan's bucket changed in this batch
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
    m[field] = false -- HDEL of aseq, ZREM of active (a token ended): written now too
  elseif key == noshow and cmd == 'ZREM' then
    shown[#shown + 1] = field
    return 1
  elseif key == cfg and cmd == 'HMGET' then
    conf = conf or real.call(cmd, key, ...)
    return conf
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
local out = {}
for i = 4, #ARGV, 7 do
  local kind, user, id, seq, now = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 6]
  if kind == 'H' then
    local expires, refused = gate_reserve(cfg, limit(user), aseq, active, places, noshow, ugate, user, seq, id,
      tonumber(now))
    if expires then
      out[#out + 1] = expires
    else
      out[#out + 1] = string.match(refused.err, '([%u_]+)$') -- the code alone ('ERR ' may lead it)
    end
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
if #set > 0 then
  real.call('HSET', ugate, unpack(set))
end
if #gone > 0 then
  real.call('HDEL', ugate, unpack(gone))
end
if #shown > 0 then
  real.call('ZREM', noshow, unpack(shown))
end
return out
