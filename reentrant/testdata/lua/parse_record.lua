-- Reads queue records with the library's parseWaiter or
-- parseSharedWaiter, for TestRecordRoundTrip.
-- ARGV[1] kind: 'plain' (parseWaiter) or 'shared' (parseSharedWaiter)
-- ARGV[i], i > 1, records[i - 1]: a queue record
-- Returns one array per record: {} when the parser cannot read it, else
-- {id, lease, unconfirmed, given ('1' or '0'), channel, alive ('' for
-- none), owner}, and for 'shared' then the mode and the weight (a string).
local kind = ARGV[1]
local records = {unpack(ARGV, 2)}

local out = {}
for i, rec in ipairs(records) do
  local w
  if kind == 'shared' then
    w = parseSharedWaiter(rec)
  else
    w = parseWaiter(rec)
  end
  out[i] = {}
  if w then
    out[i] = {w.id, w.l, w.u, w.given and '1' or '0', w.c, w.a or '', w.o}
    if kind == 'shared' then
      table.insert(out[i], w.m)
      table.insert(out[i], string.format('%d', w.n))
    end
  end
end
return out
