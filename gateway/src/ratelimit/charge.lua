-- Charges the tokens a finished request used to every bucket in KEYS (redis.rs), each
-- refilled first and going at most `max_debt_minutes` of refill into debt (bucket.rs).
--
-- KEYS[i], ARGV[2i-1], ARGV[2i]: as in admit.lua.
-- ARGV[2n+1]: the tokens; ARGV[2n+2]: max_debt_minutes.
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local n = #KEYS
local tokens = tonumber(ARGV[2 * n + 1])
local max_debt = tonumber(ARGV[2 * n + 2])

local function ms_until(need, left, per_minute)
  if per_minute <= 0 then return 0 end
  return math.max(0, math.ceil((need - left) / per_minute * 60000))
end

for i = 1, n do
  local rpm, tpm = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  local h = redis.call('HMGET', KEYS[i], 'r', 't', 'ts')
  local minutes = math.max(0, now - (tonumber(h[3]) or now)) / 60000
  local r = math.min(rpm, (tonumber(h[1]) or rpm) + minutes * rpm)
  local t = math.min(tpm, (tonumber(h[2]) or tpm) + minutes * tpm)
  t = math.max(t - tokens, -tpm * max_debt)
  redis.call('HSET', KEYS[i], 'r', r, 't', t, 'ts', now)
  redis.call('PEXPIRE', KEYS[i], math.max(ms_until(rpm, r, rpm), ms_until(tpm, t, tpm)) + 1000)
end
return 1
