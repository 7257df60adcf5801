-- line_migrate: moves a line kept as a sorted set (layout version 1) into places and order (version 2
-- on), a batch at a time from its highest seqs, each entry pushed in front of order (whose entries, joins
-- since the concert's layout changed, come after every one of these): called until it replies none left,
-- the line holds every fan at their seq. A fan in places already (joined again since) keeps that place.
-- The same for a line of one slot and for each shard of a sharded line.
-- KEYS[1] wait    zset: member user, score seq (the line in layout version 1)
-- KEYS[2] places  hash: user -> seq of each fan WAITING in the line
-- KEYS[3] order   list: '<seq>|<user>' of the line's arrivals in seq order
-- ARGV[1] batch: most fans moved by this call
-- Reply: {moved, left}: the fans moved by this call, the fans still in wait
-- Errors: none.
local wait, places, order = KEYS[1], KEYS[2], KEYS[3]
local batch = tonumber(ARGV[1])
--#include line
local popped = redis.call('ZPOPMAX', wait, batch)
local moved = 0
for i = 1, #popped, 2 do
  local user, seq = popped[i], string.format('%d', tonumber(popped[i + 1]))
  if redis.call('HSETNX', places, user, seq) == 1 then
    redis.call('LPUSH', order, entry(seq, user))
    moved = moved + 1
  end
end
return {moved, redis.call('ZCARD', wait)}
