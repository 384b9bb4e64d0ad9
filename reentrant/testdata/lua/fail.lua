-- A script that fails on a known line, run after the library by
-- TestScriptErrorsNameTheirFileAndLine: the error must name this file and
-- the line of the error() call, not its line in the whole script.
-- KEYS[1] hash: any key
local hash = KEYS[1]

if hash then
  error('failed on purpose')
end
return 0
