-- A line's list entry is '<seq>|<user>' (lib/line.lua): entry(seq, user) makes one, seq_of(e) reads
-- its seq (a string), split(entries) the users and seqs of a list's entries.
local function entry(seq, user)
  return seq .. '|' .. user
end

local function seq_of(e)
  return string.sub(e, 1, string.find(e, '|', 1, true) - 1)
end

local function split(entries)
  local users, seqs = {}, {}
  for i, e in ipairs(entries) do
    local seq = seq_of(e)
    seqs[i], users[i] = seq, string.sub(e, #seq + 2)
  end
  return users, seqs
end
