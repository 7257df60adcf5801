-- gate_mark: the fan's gate entry of reservation id (see gate_hold) follows the reservation after a step
-- on its schedule's slot: until its expiry while HELD, until a later time while being paid, and gone
-- ('' until) once it is cancelled, lapsed or refused. Entries whose time has passed are dropped on the
-- way. Idempotent: the same call again leaves the same entry.
-- KEYS[1] ugate    hash: user -> comma list of '<res>:<until ms>'
-- ARGV[1] user  ARGV[2] id (the reservation)  ARGV[3] till (ms: until when the entry counts; '' to remove it)  ARGV[4] now (ms)
-- Reply: the fan's entries still counting after the change
-- Errors: none
local ugate = KEYS[1]
local user, id, till, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local t = tonumber(now)
--#include gate_entries
local live = gate_live(ugate, user, t, id)
if till ~= '' and tonumber(till) > t then
  live[#live + 1] = id .. ':' .. till
end
gate_write(ugate, user, live)
return #live
