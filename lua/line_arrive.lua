-- line_arrive: the first step of joins to a concert whose line is spread over shards (lineShards > 1),
-- on the concert's slot, for a batch of joins an instance received meanwhile (one call for the joins
-- that arrived while its previous call was in flight: docs/scaleout.md, "Calls that share a
-- slot"), each as if alone and in the batch's order: a fan holding a live ACTIVE token gets it
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
-- ARGV[2] coded  '1': the joins' codes follow their users; '0': no join of the batch carries one
-- ARGV[3..] joins: the user id of each join of the batch, then (coded) each one's code (hex SHA-256 of
--           the access code, '' none) in the same order
-- Reply: {pow (bits the concert asks), codereq (0|1), status, first, room, k, then k triples, then m
--         pairs}, one flat array whose length grows with the joins that are not plain arrivals only (a
--         reply of five items a join was half of a join's time here: BenchmarkArriveBatch). status is every
--         join's but the k ACTIVE ones: 'ARRIVE' (they take the arrival seqs from first on, in the batch's
--         order), 'PREQUEUE', 'SEAL', 'SOLD_OUT' (every seat is sold) or 'SALE_NOT_OPEN' (before the
--         pre-queue opens), the last two the joins' refusal; room (1: nobody waited at the last tick and
--         the active set has room: an arrival may be admitted at once by a tick). The triples are the
--         joins that hold a live ACTIVE token and get it back: index in the batch (1-based), seq,
--         activeUntil (ms); the pairs the joins that carried a code, where the concert asks for one and
--         the join is not refused: index, '1' (valid for this fan) or '0' (not).
-- Event: code.claim code user at, when a join claims an access code
-- Errors: NOT_FOUND (no such concert in Redis)
local cfg, seq, active, aseq, events, inv, codes, lw = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local draw = KEYS[9]
local now = tonumber(ARGV[1])
local coded = ARGV[2]
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
-- Every join's ACTIVE token in one HMGET, and the live ones' activeUntil in one ZMSCORE: a live one is
-- given back, a lapsed one ended (once a user, though they be twice in the batch).
local n = coded == '1' and (#ARGV - 2) / 2 or #ARGV - 2
local lives = redis.call('HMGET', aseq, unpack(ARGV, 3, 2 + n))
local withLive, at = {}, {}
for i, live in ipairs(lives) do
  if live then
    withLive[#withLive + 1], at[#at + 1] = ARGV[2 + i], i
  end
end
local actives, back = {}, {} -- the triples of the reply; back[i]: join i gets its token back
if #withLive > 0 then
  local scores, ended = redis.call('ZMSCORE', active, unpack(withLive)), {}
  for j, user in ipairs(withLive) do
    local i, till = at[j], tonumber(scores[j])
    if till and till > now then
      actives[#actives + 1], actives[#actives + 2], actives[#actives + 3] = i, tonumber(lives[i]), till
      back[i] = true
    elseif not ended[user] then
      end_token(active, aseq, events, user, lives[i], 'lapse', now)
      ended[user] = true
    end
  end
end
local status = soldout and 'SOLD_OUT' or sale or 'ARRIVE'
-- The joins that take an arrival seq, all of them at once (one INCRBY, in the batch's order).
local first, room, arriving = 0, 0, status == 'ARRIVE' and n - #actives / 3 or 0
if arriving > 0 then
  first = redis.call('INCRBY', seq, arriving) - arriving + 1
  if not gated and not paused and not waited and redis.call('ZCARD', active) < cap then
    room = 1
  end
end
local out = {pow, codereq, status, first, room, #actives / 3}
for _, v in ipairs(actives) do
  out[#out + 1] = v
end
if coded == '1' and codereq == 1 and status ~= 'SOLD_OUT' and status ~= 'SALE_NOT_OPEN' then
  for i = 1, n do
    local user, code = ARGV[2 + i], ARGV[2 + n + i]
    if code ~= '' and not back[i] then
      local owner, ok = redis.call('HGET', codes, code), '0'
      if owner == '' then
        redis.call('HSET', codes, code, user)
        redis.call('XADD', events, '*', 'type', 'code.claim', 'code', code, 'user', user, 'at', now)
        ok = '1'
      elseif owner == user then
        ok = '1'
      end
      out[#out + 1], out[#out + 2] = i, ok
    end
  end
end
return out
