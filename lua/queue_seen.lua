-- queue_seen: the fans of these WAITING arrivals were seen now (a poll or an open event stream): each
-- arrival's field in seen, for a line of one slot. An instance sends it at most once a second per concert.
-- An arrival older than seenbase (from before the line last emptied) or newer than the newest seq gets
-- no field: a late or forged seq must not grow seen past the line's arrivals. The seqs polled in a second
-- are mostly a run of neighbours: each run of seqs less than 16 apart is one GETRANGE (if it has gaps) and
-- one SETRANGE, not a command per seq.
-- KEYS[1] cfg   hash: seenbase (the seq seen's fields count from, absent 0)
-- KEYS[2] seen  string: 6 bytes per arrival at byte (seq - seenbase - 1) x 6, when its fan was last seen
--               (Unix ms, big-endian; zero never)
-- KEYS[3] seq   string: arrival sequence
-- ARGV[1] now (ms)
-- ARGV[2..] seqs: the arrivals seen
-- Reply: how many fields were written
-- Errors: none.
local cfg, seen, seq = KEYS[1], KEYS[2], KEYS[3]
local now = tonumber(ARGV[1])
local base = tonumber(redis.call('HGET', cfg, 'seenbase') or '0')
local top = tonumber(redis.call('GET', seq) or '0')
--#include seen
local field = seen_field(now)
local at = {} -- field indexes (seq - base - 1), each once
local have = {}
for i = 2, #ARGV do
  local s = tonumber(ARGV[i])
  if s and s > base and s <= top and not have[s] then
    have[s] = true
    at[#at + 1] = s - base - 1
  end
end
table.sort(at)
-- one run: fields first..last, of which those in have are seen now; the others keep what they hold
local function write(first, last, gaps)
  local old = ''
  if gaps then
    old = redis.call('GETRANGE', seen, first * 6, last * 6 + 5)
  end
  local out = {}
  for f = first, last do
    if have[f + base + 1] then
      out[#out + 1] = field
    else
      local kept = string.sub(old, (f - first) * 6 + 1, (f - first) * 6 + 6)
      out[#out + 1] = kept .. string.rep('\0', 6 - #kept)
    end
  end
  redis.call('SETRANGE', seen, string.format('%d', first * 6), table.concat(out))
end
local first, prev, n = nil, nil, 0
for _, f in ipairs(at) do
  if first and f - prev >= 16 then
    write(first, prev, prev - first + 1 > n)
    first = nil
  end
  if not first then
    first, n = f, 0
  end
  prev, n = f, n + 1
end
if first then
  write(first, prev, prev - first + 1 > n)
end
return #at
