-- draw_read: reads a page of a sealed pre-queue's entrants (a line's, or one shard's) for the draw, in
-- the set's order from just after the last user read: up, the entrants not placed yet (score the entry
-- time, >= 0), or down, the ones placed (score -seq, from the first placed). Placing an entrant
-- (line_place) moves them from the first part to the end of the second, which shifts the ranks of the
-- others: each page starts after the last user read, wherever placing has moved them or their rank
-- since, so a read of the whole up part, then of the whole down part, has every entrant: once in each
-- part they were in when it was read (docs/onsale.md).
-- KEYS[1] pre    zset: the pre-queue's entrants, score the entry time (ms), or -seq once placed
-- ARGV[1] dir: 'up' or 'down'
-- ARGV[2] score: the last user read's score then, as ZSCORE gave it ('' before the first page of dir)
-- ARGV[3] last: the last user read ('' before the first page of dir)
-- ARGV[4] count: the page's size
-- Reply: {users, score, last}: the page's users, and the score and last to read on from ('' and '' after
--        the last page of dir)
-- Errors: none.
local pre = KEYS[1]
local dir, score, last, count = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
-- before reports whether user a sorts before user b of the same score: byte by byte, as Redis sorts.
local function before(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x < y
    end
  end
  return #a < #b
end
local start, page
if dir == 'down' then
  if last == '' then
    start = redis.call('ZCOUNT', pre, 0, '+inf')
  else -- a placed entrant stays where it is: the next page starts next to them
    start = redis.call('ZREVRANK', pre, last) + 1
  end
  page = redis.call('ZRANGE', pre, start, start + count - 1, 'REV')
else
  if last == '' then
    start = redis.call('ZCOUNT', pre, '-inf', '(0')
  elseif redis.call('ZSCORE', pre, last) == score then
    start = redis.call('ZRANK', pre, last) + 1
  else -- placed since: the first of their run of equal entry times that sorts after them
    local lo = redis.call('ZCOUNT', pre, '-inf', '(' .. score)
    local hi = lo + redis.call('ZCOUNT', pre, score, score)
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if before(last, redis.call('ZRANGE', pre, mid, mid)[1]) then
        hi = mid
      else
        lo = mid + 1
      end
    end
    start = lo
  end
  page = redis.call('ZRANGE', pre, start, start + count - 1)
end
if #page < count then
  return {page, '', ''}
end
return {page, redis.call('ZSCORE', pre, page[#page]), page[#page]}
