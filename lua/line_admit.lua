-- line_admit: one admission round of a concert whose line is spread over shards, on the concert's slot.
-- The scheduler read the heads of every shard (line_heads) and merged them in seq order: those are the
-- candidates here. A candidate whose seq is quit or logged as left (its fan left: line_left) is not
-- admitted, only taken out of its shard, so that a leave is final whatever heads a round read before it and
-- whether or not its shard's step ran. As queue_tick: lapses ACTIVE tokens past their activeUntil and
-- expires no-shows, then, unless paused, admits min(free slots, rate budget, batch) of the candidates in
-- seq order (activePerSeat and sold-out as queue_tick), dropping a candidate not seen for abandonAfter
-- (EXPIRED) and going on with the next. The active set, the rate budget and the capacity live here, so any
-- number of schedulers may run it at once without admitting past capacity or rate. A candidate already
-- ACTIVE with the same seq (a tick whose line_pop did not run) is reported again and not admitted twice.
-- The admitted and dropped fans then leave their shards (line_pop).
-- KEYS[1]  cfg       hash: cap, rate, ttl (ms), paused, aps, abandon, noshow
-- KEYS[2]  active    zset: member user, score activeUntil (ms)
-- KEYS[3]  aseq      hash: user -> seq of the ACTIVE token
-- KEYS[4]  head      string: highest seq that left the line by admission
-- KEYS[5]  bucket    hash: tok, ts (ms): the admission rate budget
-- KEYS[6]  admitted  string: admissions so far
-- KEYS[7]  left      zset: member seq, score seq
-- KEYS[8]  leftlog   zset: member seq, score leave ordinal
-- KEYS[9]  events    stream: the concert's outbox
-- KEYS[10] inv       hash: avail, soldout: the inventory the line protects (kept by the seat scripts)
-- KEYS[11] holds     zset: member res, score expires (ms): lapsed but unswept holds count as available
-- KEYS[12] abandoned string: fans dropped so far for not polling (abandonAfter) or not showing up
-- KEYS[13] noshow    zset: member user, score the deadline (ms) of their first gated call after admission
-- KEYS[14] lw        string: fans waiting in every shard after this tick (what line_arrive and the
--                    snapshot read)
-- KEYS[15] draw      hash: a sale's draw: nobody is admitted before its drawnAt
-- KEYS[16] quit      zset: member seq, score when its fan left (ms): never admitted (line_left)
-- KEYS[17] owed      zset: member seq, score when a round passed it (ms): seqs a round moved the head past
--                    that were neither its candidates nor logged leaves: joins between their two steps
--                    (line_arrive done, line_enter not yet) when the shards were read
-- ARGV[1] now (ms)
-- ARGV[2] batch: most lapses and most admissions in this call
-- ARGV[3] waiting: fans waiting in every shard, as the scheduler read them
-- ARGV[4] mode: 'tick', or 'first': a join to an empty line, admitted only if nobody is ahead of it (no
--         seq between the head and its own but the logged leaves, and no seq owed: a fan a round passed
--         while their join was between its steps is ahead of every later join); nobody is lapsed and the
--         waiting count is left as it is (as queue_join's admission at once)
-- ARGV[5] shown: '<user>:<seq>' of the fans whose first gated call their shards took since the last round
--         (line_heads reads them, line_pop clears them), comma-separated: off the no-show watch while
--         that token is theirs. A fan is expired as a no-show showGrace after their deadline, so that a
--         call their shard took before it reaches this round (a shard refuses a first hold past it)
-- ARGV[6..] user: the candidates, in seq order, each as user, seq, seen (ms; a sale's entrants count as
--           seen at its opening at the latest)
-- Events: one for each kind of fan the round took, naming the users and their seqs as comma lists in
-- the order taken: queue.lapses, queue.noshows, queue.abandons (with seens, when each was last seen),
-- queue.admits (with until)
-- Reply: {admitted, lapsed, waiting, active, abandoned, noshows, {user, seq, user, seq, ...}: the
--        candidates that left the line (admitted, dropped, or admitted already), {until, show deadline
--        (0: no watch), user, seq, ...}: those this round admitted, whose shards keep their tokens}
-- Errors: NOT_FOUND (no such concert in Redis)
local cfg, active, aseq, head, bucket, admitted = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local left, leftlog, events, inv, holds, abandoned = KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11], KEYS[12]
local noshow, lw, draw, quit, owed = KEYS[13], KEYS[14], KEYS[15], KEYS[16], KEYS[17]
local now, batch, waiting, mode, shown = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5]
local nows = string.format('%d', now) -- printed once for the writes
-- How long a quit or owed seq is kept (ms): longer than any join's two steps and any round's read of
-- the heads take (each bounded by a request deadline of seconds), so that no round still holds a read
-- from before the leave, and an owed seq's join has entered its shard (or failed) by then.
local linger = 10000
local conf = redis.call('HMGET', cfg, 'cap', 'rate', 'ttl', 'paused', 'aps', 'abandon', 'noshow', 'opens')
if not conf[1] then
  return redis.error_reply('NOT_FOUND')
end
local cap, rate, ttl = tonumber(conf[1]), tonumber(conf[2]), tonumber(conf[3])
local cands = {}
for i = 6, #ARGV, 3 do
  cands[#cands + 1] = {ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])}
end

--#include sessions
local lapsed, noshows = 0, 0 -- a join to an empty line lapses nobody, as queue_join does not: the tick does
local showGrace = 3000 -- ms: longer than a round takes from its read of the heads to this call
if shown ~= '' then
  for user, seq in string.gmatch(shown, '([^,]+):(%d+)') do
    if redis.call('HGET', aseq, user) == seq then
      redis.call('ZREM', noshow, user)
    end
  end
end
if mode == 'tick' then
  lapsed, noshows = end_sessions(active, aseq, noshow, abandoned, events, now, nows, batch, showGrace)
  redis.call('ZREMRANGEBYSCORE', quit, '-inf', now - linger)
  redis.call('ZREMRANGEBYSCORE', owed, '-inf', now - linger)
end

--#include budget
--#include admit
--#include leaves

-- owe(owed, left, top, last, out, nows): the seqs between the head top and last (its new place) that
-- this round did not take and that are not logged leaves are owed: joins that took their seq before the
-- shards were read and entered their shard after. They wait behind the head, and no join is admitted at
-- once ('first') ahead of them while they are owed. A round passes at most a batch of fans and the
-- leaves between, plus the joins in flight: the walk stops after that many seqs and 1,024 more.
local function owe(owed, left, top, last, out, nows)
  local seen = {}
  for i = 2, #out, 2 do
    seen[tonumber(out[i])] = true
  end
  local logged = redis.call('ZRANGEBYSCORE', left, '(' .. top, last, 'LIMIT', 0, 4 * batch)
  for _, s in ipairs(logged) do
    seen[tonumber(s)] = true
  end
  local args, most = {}, #out / 2 + #logged + 1024
  for s = top + 1, math.min(last, top + most) do
    if not seen[s] then
      args[#args + 1] = nows
      args[#args + 1] = s
    end
  end
  for i = 1, #args, 1000 do
    redis.call('ZADD', owed, unpack(args, i, math.min(i + 999, #args)))
  end
end
local tok, ts = budget(bucket, rate, now)
local n = 0
local want = math.min(cap - redis.call('ZCARD', active), math.floor(tok), batch)
local stock = redis.call('HMGET', inv, 'avail', 'soldout')
local aps = tonumber(conf[5] or '0')
local opens = tonumber(conf[8] or '0') -- a pre-queue entrant's silence counts from the opening
if stock[2] == '1' or (conf[8] and redis.call('HEXISTS', draw, 'drawnAt') == 0) then
  want = 0 -- sold out, or a sale whose draw is not in place yet
elseif mode == 'first' and #cands > 0 then
  local top = tonumber(redis.call('GET', head) or '0')
  local seq = tonumber(cands[1][2])
  if seq - top - 1 - redis.call('ZCOUNT', left, '(' .. top, '(' .. seq) > 0 or
      redis.call('ZCOUNT', owed, now - linger, '+inf') > 0 then
    want = 0 -- someone is ahead: the tick admits in order
  end
end
if want > 0 and aps > 0 then
  local avail = tonumber(stock[1] or '0') + redis.call('ZCOUNT', holds, '-inf', now)
  want = math.min(want, aps * avail - redis.call('ZCARD', active))
end
local dropped, out, took = 0, {}, {'0', '0'}
if conf[4] ~= '1' then
  local abandon, show = tonumber(conf[6] or '0'), tonumber(conf[7] or '0')
  local till = now + ttl
  -- each number a write takes, printed once (redis.call prints a Lua number with %.17g each time)
  local tills, shows = string.format('%d', till), string.format('%d', now + show)
  local last
  local adm = new_round()
  local quitting, leaving = redis.call('EXISTS', quit) == 1, redis.call('EXISTS', left) == 1
  for _, cand in ipairs(cands) do
    local user, seq, seen = cand[1], cand[2], math.max(cand[3], opens)
    if redis.call('HGET', aseq, user) == seq then
      -- admitted by a tick whose pop did not run: only pop it
    elseif (quitting and redis.call('ZSCORE', quit, seq)) or (leaving and redis.call('ZSCORE', left, seq)) then
      -- left (after the heads were read, or without the shard's step: a logged leave above the head,
      -- which is never a seq a fan waits at): only pop it
    elseif abandon > 0 and seen + abandon <= now then
      if n >= want or n + dropped >= batch then break end
      dropped = dropped + 1
      drop(adm, user, seq, seen)
    else
      if n >= want or n + dropped >= batch then break end
      admit(adm, user, seq, tills, show > 0 and shows or nil)
      n = n + 1
    end
    out[#out + 1] = user
    out[#out + 1] = seq
    last = seq
  end
  write_admitted(active, aseq, noshow, admitted, abandoned, events, adm, tills, nows)
  took = {tills, show > 0 and shows or '0'}
  for i, user in ipairs(adm.users) do
    took[#took + 1], took[#took + 2] = user, adm.seqs[i]
  end
  tok = tok - n
  local top = tonumber(redis.call('GET', head) or '0')
  if #out > 0 and redis.call('EXISTS', owed) == 1 then
    local seqs = {}
    for i = 2, #out, 2 do
      seqs[#seqs + 1] = out[i]
    end
    redis.call('ZREM', owed, unpack(seqs)) -- a passed fan, now taken
  end
  if last and tonumber(last) > top then
    owe(owed, left, top, tonumber(last), out, nows)
  end
  pass_head(head, left, leftlog, last, batch) -- past every fan who left the line here
end
if mode == 'tick' then
  waiting = math.max(0, waiting - #out / 2)
  redis.call('SET', lw, waiting)
else
  waiting = tonumber(redis.call('GET', lw) or '0')
end
redis.call('HSET', bucket, 'tok', string.format('%.6f', tok), 'ts', ts)
return {n, lapsed, waiting, redis.call('ZCARD', active), dropped, noshows, out, took}
