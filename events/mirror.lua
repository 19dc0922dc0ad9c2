-- Writes a mirror document unless the mirror already holds the same or a
-- newer revision, so a late writer never moves it backwards.
-- KEYS[1]: mirror key. ARGV: revision, document.
local cur = redis.call('HGET', KEYS[1], 'rev')
if cur and tonumber(cur) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('HSET', KEYS[1], 'rev', ARGV[1], 'doc', ARGV[2])
return 1
