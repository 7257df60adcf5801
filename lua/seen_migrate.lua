-- seen_migrate: moves a line of one slot's liveness from the hash of layout version 1 (alive) into the
-- 6-byte fields of seen, a batch at a time, keeping the later of the two times of each arrival; once
-- the hash is gone, records the layout version in cfg (lv). A concert's layout migration
-- (docs/operations.md, "Layout versions") calls it after line_migrate, until it replies 0 left.
-- KEYS[1] cfg     hash: the concert's settings: seenbase, lv
-- KEYS[2] alive   hash: seq -> when its fan was last seen (ms), as layout version 1 keeps it
-- KEYS[3] seen    string: 6 bytes per arrival at byte (seq - seenbase - 1) x 6 (Unix ms, big-endian)
-- ARGV[1] batch: most fields moved by this call
-- ARGV[2] version: the layout version to record once alive is gone
-- Reply: {moved, left}: fields moved by this call, fields still in alive
-- Errors: NOT_FOUND (no such concert in Redis)
local cfg, alive, seen = KEYS[1], KEYS[2], KEYS[3]
local batch, version = tonumber(ARGV[1]), ARGV[2]
--#include seen
local conf = redis.call('HMGET', cfg, 'cap', 'seenbase')
if not conf[1] then
  return redis.error_reply('NOT_FOUND')
end
local base = tonumber(conf[2] or '0')
local scan = redis.call('HSCAN', alive, '0', 'COUNT', batch)
local fields, moved = scan[2], 0
for i = 1, #fields, 2 do
  local at = tonumber(fields[i]) - base
  if at > 0 then -- an arrival at or below seenbase left the line before seen started afresh
    local t = tonumber(fields[i + 1])
    local was = seen_time(redis.call('GETRANGE', seen, string.format('%d', (at - 1) * 6), string.format('%d', at * 6 - 1)))
    if t > was then
      redis.call('SETRANGE', seen, string.format('%d', (at - 1) * 6), seen_field(t))
    end
    moved = moved + 1
  end
  redis.call('HDEL', alive, fields[i])
end
local left = redis.call('HLEN', alive)
if left == 0 then
  redis.call('HSET', cfg, 'lv', version)
end
return {moved, left}
