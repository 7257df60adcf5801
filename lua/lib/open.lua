-- A user's open reservations of a concert (or of a seat slot): uholds, user -> a comma list of
-- '<res>:<expires ms>', or of '<res>' alone where the expiry is not known (docs/performance.md, "Where
-- a winning hold and a refused attempt go"), kept by every script that opens or ends a hold. Open means HELD and unexpired, or being paid. Every script that ends
-- a reservation (cancel, lapse, sale, release) takes its entry out, and a hold's expiry never changes, so
-- an entry whose expiry is still ahead is open without a read (HELD, or being paid). Past its expiry, or
-- without one, the zsets tell: every script keeps a reservation in holds (score: its expiry) exactly
-- while it is HELD and in paying exactly while it is PAYING.
-- open_holds(uholds, holds, paying, user, t, except): the user's entries open at t (ms), as stored, but
-- for the reservation except (nil: none); an entry without its expiry gets it when it is HELD.
-- drop_open(uholds, user, id): id's entry out of the user's list.
local function open_holds(uholds, holds, paying, user, t, except)
  local open = {}
  for entry in string.gmatch(redis.call('HGET', uholds, user) or '', '[^,]+') do
    local rid, due = string.match(entry, '^([^:]+):(%d+)$')
    rid = rid or entry
    if rid ~= except then
      if due and tonumber(due) > t then
        open[#open + 1] = entry
      else
        local exp = tonumber(redis.call('ZSCORE', holds, rid))
        if exp then
          if exp > t then open[#open + 1] = rid .. ':' .. string.format('%d', exp) end
        elseif redis.call('ZSCORE', paying, rid) then
          open[#open + 1] = entry
        end
      end
    end
  end
  return open
end

local function drop_open(uholds, user, id)
  local rest = {}
  for entry in string.gmatch(redis.call('HGET', uholds, user) or '', '[^,]+') do
    if entry ~= id and string.sub(entry, 1, #id + 1) ~= id .. ':' then rest[#rest + 1] = entry end
  end
  redis.call('HSET', uholds, user, table.concat(rest, ','))
end
