-- Grants a lease. KEYS[1]: lock key, KEYS[2]: its fence counter, in the
-- same hash tag. ARGV: owner (see below), ttl ms, holder, fence counter ttl
-- ms, and only when not the defaults: mode ("preempt", "reenter"; ""
-- acquires), min fence, nonce.
--
-- The lock key is a string that expires with the lease (SET PX):
--   <owner> <count> <nonce> <waited> <fence> <since µs> <holder>
-- owner is '<length of the token>:<token>', built by the client, so that a
-- prefix comparison compares tokens exactly without formatting a number
-- here; nonce is '-' until a re-entry, or a release of one of several
-- holds, records its own; waited is 'w' once an acquire was turned away
-- (the release is then announced), else '-'; holder runs to the end.
--
-- Reply, on a grant of a free key: the fence as an integer when it is the
-- server time in microseconds (and so also the time granted), else
-- {1, fence, since µs}. Otherwise:
--   {2, holder, fence, since µs, count}: this owner already holds it (a
--      retried call or a re-entry: the same grant);
--   {3, fence, since µs}: granted by taking over another holder;
--   {0, holder, fence, pttl ms}: held by another (now marked waited);
--   {-1}: reenter by an owner that does not hold the key.
local v = redis.call('GET', KEYS[1])
local mode = ARGV[5]
if v then
  local tl, p = string.match(v, '^(%d+):()')
  local e = p + tonumber(tl)
  local n, r, w, rest = string.match(v, '^ (%d+) (%S+) (%S) (.*)$', e)
  local f, s, h = string.match(rest, '^(%d+) (%d+) (.*)$')
  if string.sub(v, 1, e - 1) == ARGV[1] then
    n = tonumber(n)
    if mode == 'reenter' and r ~= ARGV[7] then
      n = n + 1
      redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. n .. ' ' .. ARGV[7] .. ' ' .. w .. ' ' .. rest, 'PX', ARGV[2])
    else
      redis.call('PEXPIRE', KEYS[1], ARGV[2])
    end
    return {2, h, tonumber(f), tonumber(s), n}
  end
  if mode == 'reenter' then
    return {-1}
  end
  if mode ~= 'preempt' then
    if w ~= 'w' then
      redis.call('SET', KEYS[1], string.sub(v, 1, e - 1) .. ' ' .. n .. ' ' .. r .. ' w ' .. rest, 'KEEPTTL')
    end
    return {0, h, tonumber(f), redis.call('PTTL', KEYS[1])}
  end
elseif mode == 'reenter' then
  return {-1}
end
-- fence = max(counter + 1, server time in microseconds, min fence + 1): it
-- grows strictly while the counter lives and keeps growing after every key
-- was lost, as long as the server clock does not step back. The time is
-- kept as the string TIME's two parts make (formatting a Lua number,
-- string.format or tostring, costs about 0.3 µs of server time here), and
-- the counter is written once, with the final fence. The counter expires
-- ARGV[4] (10 minutes by default, at least 10 lease TTLs) after the grant,
-- plus however far the fence is ahead of the clock (a floor, grants faster
-- than one per µs): past that the server time alone is above it, so keys
-- of resources locked once do not stay, and a grant after it expired is
-- above it by the time component.
local t = redis.call('TIME')
local us = t[2]
if #us < 6 then us = string.rep('0', 6 - #us) .. us end
local fs = t[1] .. us
local since = fs
local now = tonumber(fs)
local f = now
local c = tonumber(redis.call('GET', KEYS[2]) or '0')
if c + 1 > f then f = c + 1 end
local floor = tonumber(ARGV[6] or '0')
if floor + 1 > f then f = floor + 1 end
if f ~= now then fs = string.format('%.0f', f) end
local px = tonumber(ARGV[4])
if f > now then px = px + math.ceil((f - now) / 1000) end
redis.call('SET', KEYS[2], fs, 'PX', px)
redis.call('SET', KEYS[1], ARGV[1] .. ' 1 - - ' .. fs .. ' ' .. since .. ' ' .. ARGV[3], 'PX', ARGV[2])
if v then
  return {3, f, now}
end
if f == now then
  return f
end
return {1, f, now}
