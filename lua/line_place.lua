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
local n = 0
for i = 1, #ARGV, 2 do
  local user, seq = ARGV[i], ARGV[i + 1]
  local entered = redis.call('ZSCORE', pre, user)
  if entered and tonumber(entered) >= 0 then
    redis.call('ZADD', wait, seq, user)
    redis.call('ZADD', pre, 'XX', -tonumber(seq), user)
    n = n + 1
  end
end
return n
