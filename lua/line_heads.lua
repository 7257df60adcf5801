-- line_heads: the head of one shard of a sharded line: its size and its first fans in seq order (the
-- entrants the draw placed, then the arrivals), with when each was last seen, for the tick to merge the
-- shards' heads in arrival order. The stale entries before the first fan still waiting (fans who left,
-- or whom line_pop took out) are trimmed from the lists on the way.
-- KEYS[1] places hash: user -> seq of each fan WAITING in this shard's part of the line
-- KEYS[2] alive  hash: seq -> when its fan was last seen (ms)
-- KEYS[3] order  list: '<seq>|<user>' of this shard's arrivals in seq order
-- KEYS[4] drawn  list: '<seq>|<user>' of this shard's entrants placed, in draw order
-- KEYS[5] shown  set: '<user>:<seq>' of the ACTIVE fans whose first gated call this shard took (gate_apply)
-- ARGV[1] count: most fans to return
-- Reply: {waiting, bound, shown, user, seq, seen (ms, 0 never), user, seq, seen, ...}: bound is 0, or the
--        seq of the last entry read when the read stopped on its budget (stale entries count) before
--        count fans: the shard may hold fans past it that it did not return; shown, up to 512 of the
--        shown set's members, for line_admit to take off the no-show watch (line_pop clears them)
-- Errors: none.
local places, alive, order, drawn, shown = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local count = tonumber(ARGV[1])
--#include line
local out = {redis.call('HLEN', places), 0, redis.call('SRANDMEMBER', shown, 512)}
local found, read, most = 0, 0, 4 * count + 64 -- most entries read, the stale ones included
local last -- the seq of the last entry read
for _, list in ipairs({drawn, order}) do
  local from, front, stale, ended = 0, true, 0, false
  while found < count and read < most do
    local got = redis.call('LRANGE', list, from, from + count - 1)
    if #got == 0 then
      ended = true
      break
    end
    read, from = read + #got, from + #got
    local users, seqs = split(got)
    last = seqs[#seqs]
    local ok = live(places, users, seqs)
    for i = 1, #users do
      if ok[i] then
        front = false
        if found < count then
          found = found + 1
          out[#out + 1], out[#out + 2] = users[i], tonumber(seqs[i])
          out[#out + 1] = tonumber(redis.call('HGET', alive, seqs[i]) or '0')
        end
      elseif front then
        stale = stale + 1
      end
    end
  end
  if stale > 0 then
    redis.call('LTRIM', list, stale, -1)
  end
  if not ended then
    if found < count then
      out[2] = tonumber(last) -- stopped on the budget
    end
    break -- the arrivals come after every entrant still in drawn
  end
end
return out
