-- line_arrive: the first step of joins to a concert whose line is spread over shards (lineShards > 1),
-- on the concert's slot, for a batch of joins an instance received meanwhile (one call for the joins
-- that arrived while its previous call was in flight: docs/scaleout.md, "Calls that share the
-- concert's slot"), each as if alone and in the batch's order: a fan holding a live ACTIVE token gets it
-- back; otherwise the join takes the next arrival seq (one INCR: the order across every shard) and goes
-- on to line_enter in the fan's shard.
-- Claims an access code the join carries while it is unclaimed (the shard decides whether the fan needed
-- one). A lapsed ACTIVE token is lapsed here, as queue_join does. Nothing else of the line lives here: the
-- waiting fans are in the shards. A concert with a sale (cfg opens, pqopens) refuses joins before its
-- pre-queue opens, sends those before its opening to the pre-queue in their shard (PREQUEUE: line_enter
-- with seq 0), and from the opening on asks for the seal first (SEAL: every shard's pre-queue is closed and
-- the entrants' seqs reserved, draw_seal) until the draw hash is sealed.
-- KEYS[1] cfg     hash: cap, paused, pow (bits), codereq, opens, pqopens (ms, a sale's)
-- KEYS[2] seq     string: arrival sequence (across every shard)
-- KEYS[3] active  zset: member user, score activeUntil (ms)
-- KEYS[4] aseq    hash: user -> seq of the ACTIVE token
-- KEYS[5] events  stream: the concert's outbox
-- KEYS[6] inv     hash: soldout (kept by the seat scripts)
-- KEYS[7] codes   hash: hex SHA-256(access code) -> owner user ('' while unclaimed)
-- KEYS[8] lw      string: fans waiting in every shard at the last tick
-- KEYS[9] draw    hash: sealed, drawnAt (a sale's draw; nobody is admitted before it is in place)
-- ARGV[1] now (ms)
-- ARGV[2..] joins: user id, code (hex SHA-256 of the access code, '' none) of each join of the batch
-- Reply: pow (bits the concert asks), codereq (0|1), then for each join, in order, five items: status
--         ('ACTIVE'|'ARRIVE'|'PREQUEUE'|'SEAL'|'SOLD_OUT'|'SALE_NOT_OPEN'), seq (0 unless ACTIVE or
--         ARRIVE), activeUntil (ms, 0 unless ACTIVE), code ('' none, '1' valid for this fan, '0' not),
--         room (1: nobody waited at the last tick and the active set has room: the join may be admitted
--         at once by a tick); SOLD_OUT (every seat is sold) and SALE_NOT_OPEN (before the pre-queue opens)
--         are that join's refusal. One flat array: a table a join cost Redis about a third more.
-- Event: code.claim code user at, when a join claims an access code
-- Errors: NOT_FOUND (no such concert in Redis)
local cfg, seq, active, aseq, events, inv, codes, lw = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local draw = KEYS[9]
local now = tonumber(ARGV[1])
local conf = redis.call('HMGET', cfg, 'cap', 'paused', 'pow', 'codereq', 'opens', 'pqopens')
if not conf[1] then
  return redis.error_reply('NOT_FOUND')
end
--#include end_token
local cap, paused = tonumber(conf[1]), conf[2] == '1'
local pow, codereq = tonumber(conf[3] or '0'), conf[4] == '1' and 1 or 0
local soldout = redis.call('HGET', inv, 'soldout') == '1'
local sale, gated = nil, false -- sale: 'SALE_NOT_OPEN', 'PREQUEUE' or 'SEAL' while the draw is not sealed
if conf[5] then
  local d = redis.call('HMGET', draw, 'sealed', 'drawnAt')
  if d[1] ~= '1' then
    if now < tonumber(conf[6]) then
      sale = 'SALE_NOT_OPEN'
    elseif now < tonumber(conf[5]) then
      sale = 'PREQUEUE'
    else
      sale = 'SEAL'
    end
  end
  gated = not d[2]
end
local waited = tonumber(redis.call('GET', lw) or '0') > 0
-- Every join's ACTIVE token in one HMGET, and the live ones' activeUntil in one ZMSCORE.
local users = {}
for i = 2, #ARGV, 2 do
  users[#users + 1] = ARGV[i]
end
local lives = redis.call('HMGET', aseq, unpack(users))
local withLive = {}
for i, live in ipairs(lives) do
  if live then
    withLive[#withLive + 1] = users[i]
  end
end
local tills = {}
if #withLive > 0 then
  local scores = redis.call('ZMSCORE', active, unpack(withLive))
  for i, u in ipairs(withLive) do
    tills[u] = tonumber(scores[i])
  end
end
-- The joins that take an arrival seq, all of them at once (one INCRBY, in the batch's order).
local arriving, ended = 0, {}
if not soldout and not sale then
  for i, user in ipairs(users) do
    local till = tills[user]
    if not (lives[i] and till and till > now) then
      arriving = arriving + 1
    end
  end
end
local next_seq, held = 0, nil -- held: the ACTIVE set's size, read once for the batch (lapses count down)
if arriving > 0 then
  next_seq = redis.call('INCRBY', seq, arriving) - arriving + 1
  if not gated and not paused and not waited then
    held = redis.call('ZCARD', active)
  end
end
local out, n = {pow, codereq}, 2
local function put(status, sq, tl, cd, rm)
  out[n + 1], out[n + 2], out[n + 3], out[n + 4], out[n + 5] = status, sq, tl, cd, rm
  n = n + 5
end
for i, user in ipairs(users) do
  local code, live, till = ARGV[2 * i + 1], lives[i], tills[user]
  if live and till and till > now then
    put('ACTIVE', tonumber(live), till, '', 0)
  else
    if live and not ended[user] then -- a user twice in the batch lapses once
      end_token(active, aseq, events, user, live, 'lapse', now)
      ended[user] = true
      held = held and held - 1
    end
    if soldout then
      put('SOLD_OUT', 0, 0, '', 0)
    else
      local ok = ''
      if codereq == 1 and code ~= '' then
        local owner = redis.call('HGET', codes, code)
        ok = '0'
        if owner == '' then
          redis.call('HSET', codes, code, user)
          redis.call('XADD', events, '*', 'type', 'code.claim', 'code', code, 'user', user, 'at', now)
          ok = '1'
        elseif owner == user then
          ok = '1'
        end
      end
      if sale == 'SALE_NOT_OPEN' then
        put(sale, 0, 0, '', 0)
      elseif sale then
        put(sale, 0, 0, ok, 0)
      else
        put('ARRIVE', next_seq, 0, ok, held and held < cap and 1 or 0)
        next_seq = next_seq + 1
      end
    end
  end
end
return out
