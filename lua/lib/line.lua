-- The line of one slot or of one shard: places, the hash user -> seq of every fan WAITING in it, and
-- the lists drawn and order of '<seq>|<user>', a sale's entrants as the draw placed them and then the
-- arrivals, each in seq order (every entrant's seq comes before every arrival's). A fan who leaves is
-- taken out of places only; their entry stays in its list, stale, until the head reaches it.
-- position(head, left, n): the 1-based place of the WAITING arrival n, as the instances count it: the
-- seqs after the head up to n, less those of the leavers between (every other seq there waits).
local function position(head, left, n)
  local top = tonumber(redis.call('GET', head) or '0')
  return math.max(1, n - top - redis.call('ZCOUNT', left, '(' .. top, '(' .. n))
end

--#include line_entry

-- live(places, users, seqs): for each entry, whether its user still waits at its seq (one HMGET): an
-- entry is stale once its fan left, or left and joined again at another seq.
local function live(places, users, seqs)
  local now, out = redis.call('HMGET', places, unpack(users)), {}
  for i = 1, #users do
    out[i] = now[i] == seqs[i]
  end
  return out
end

-- take(places, drawn, order, k, most): takes the line's first k fans still WAITING (drawn's while it has
-- any, then order's) out of places and off the lists, passing the stale entries before and between them,
-- reading at most most entries: first an LPOP of k (each entry one it must take, live or stale), then,
-- when stale entries were among them, growing reads ahead (LRANGE, LTRIM of what it took). Returns
-- their users and seqs in order, the last seq taken (nil when nothing was) and how many entries it
-- took, the stale ones included.
local function take(places, drawn, order, k, most)
  local users, seqs, last, read = {}, {}, nil, 0
  for _, list in ipairs({drawn, order}) do
    local window = 0 -- 0: pop as many as are still wanted, every one of them taken whatever it is
    while #users < k and read < most do
      local got
      if window == 0 then
        got = redis.call('LPOP', list, math.min(k - #users, most - read)) or {}
      else
        got = redis.call('LRANGE', list, 0, math.min(window, most - read) - 1)
      end
      if #got == 0 then
        break -- this list is empty: the next one
      end
      local us, ss = split(got)
      local ok = live(places, us, ss)
      local used = 0
      for i = 1, #got do
        if ok[i] then
          users[#users + 1], seqs[#seqs + 1] = us[i], ss[i]
        end
        used, last = i, ss[i]
        if #users == k then
          break
        end
      end
      read = read + used
      if window > 0 then
        redis.call('LTRIM', list, used, -1)
      end
      window = math.min(2 * window + k, 1024) -- stale entries were among them: read further ahead
    end
    if #users == k or read >= most then
      break
    end
  end
  if #users > 0 then
    redis.call('HDEL', places, unpack(users))
  end
  return users, seqs, last, read
end
