-- line_place: places one shard's part of a batch of the draw in the line: each entrant gets the arrival
-- seq of their draw place (base+place) in this shard's line, and their pre-queue entry the score -seq
-- (placed). An entrant placed already is left alone, so a batch sent twice, or by a drawer whose lease
-- lapsed after the line was admitted from, never puts a fan back in line. draw_place then moves the
-- draw's cursor on the concert's slot.
-- KEYS[1] wait  zset: member user, score seq (this shard's part of the line)
-- KEYS[2] pre   zset: this shard's pre-queue entrants, score the entry time (ms), or -seq once placed
-- ARGV[1..] user: the entrants of this shard in the batch, each as user, seq
-- Reply: the entrants placed by this call
-- Errors: none.
local wait, pre = KEYS[1], KEYS[2]
if #ARGV == 0 then
  return 0
end
local users = {}
for i = 1, #ARGV, 2 do
  users[#users + 1] = ARGV[i]
end
-- one call of each kind for the whole batch: a thousand entrants cost three calls, not 3,000
local entered, toline, topre, placed = redis.call('ZMSCORE', pre, unpack(users)), {}, {}, {}
for k, user in ipairs(users) do
  local seq = ARGV[2 * k]
  if entered[k] and tonumber(entered[k]) >= 0 and not placed[user] then
    placed[user] = true
    toline[#toline + 1], toline[#toline + 2] = seq, user
    topre[#topre + 1], topre[#topre + 2] = -tonumber(seq), user
  end
end
if #toline > 0 then
  redis.call('ZADD', wait, unpack(toline))
  redis.call('ZADD', pre, 'XX', unpack(topre))
end
return #toline / 2
