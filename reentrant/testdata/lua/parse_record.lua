-- Reads queue records with the library's parseWaiter, for
-- TestRecordRoundTrip.
-- ARGV[i] records[i]: a queue record
-- Returns one array per record: {} when parseWaiter cannot read it, else
-- {id, lease, unconfirmed, shared ('1' or '0'), channel, alive ('' for
-- none), owner}.
local records = ARGV

local out = {}
for i, rec in ipairs(records) do
  local w = parseWaiter(rec)
  if w then
    out[i] = {w.id, w.l, w.u, w.shared and '1' or '0', w.c, w.a or '', w.o}
  else
    out[i] = {}
  end
end
return out
