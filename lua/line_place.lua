-- line_place: places one shard's part of a batch of the draw in the line: each entrant gets the arrival
-- seq of their draw place (base+place) in this shard's line, and their pre-queue entry the score -seq
-- (placed). An entrant placed already is left alone, so a batch sent twice, or by a drawer whose lease
-- lapsed after the line was admitted from, never puts a fan back in line. draw_place then moves the
-- draw's cursor on the concert's slot.
-- KEYS[1] places hash: user -> seq of each fan WAITING in this shard's part of the line
-- KEYS[2] pre    zset: this shard's pre-queue entrants, score the entry time (ms), or -seq once placed
-- KEYS[3] drawn  list: '<seq>|<user>' of this shard's entrants placed, in draw order
-- ARGV[1..] user: the entrants of this shard in the batch, each as user, seq
-- Reply: the entrants placed by this call
-- Errors: none.
local places, pre, drawn = KEYS[1], KEYS[2], KEYS[3]
if #ARGV == 0 then
  return 0
end
local users = {}
for i = 1, #ARGV, 2 do
  users[#users + 1] = ARGV[i]
end
--#include line
-- one call of each kind for the whole batch: a thousand entrants cost four calls, not 4,000
local entered, toline, tolist, topre, placed = redis.call('ZMSCORE', pre, unpack(users)), {}, {}, {}, {}
for k, user in ipairs(users) do
  local seq = ARGV[2 * k]
  if entered[k] and tonumber(entered[k]) >= 0 and not placed[user] then
    placed[user] = true
    toline[#toline + 1], toline[#toline + 2] = user, seq
    tolist[#tolist + 1] = entry(seq, user)
    topre[#topre + 1], topre[#topre + 2] = -tonumber(seq), user
  end
end
if #tolist > 0 then
  redis.call('HSET', places, unpack(toline))
  redis.call('RPUSH', drawn, unpack(tolist))
  redis.call('ZADD', pre, 'XX', unpack(topre))
end
return #tolist
