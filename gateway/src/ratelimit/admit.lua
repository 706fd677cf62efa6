-- Admits one request against every bucket in KEYS at once, or refuses it (redis.rs).
-- The rules of bucket.rs: a bucket refills continuously up to its limit; a request needs one
-- request left and tokens out of debt, checked in KEYS order (the key's bucket, then the
-- model's), each bucket's requests before its tokens. Redis's clock: replicas' never matter.
--
-- KEYS[i]: a bucket, a hash {r = requests left, t = tokens left, ts = last refill, ms}.
-- ARGV[2i-1], ARGV[2i]: its requests_per_minute and tokens_per_minute (0: no such limit).
-- Returns {1} (admitted: one request taken from each bucket), or the refusal:
-- {0, i, what (1 requests, 2 tokens), wait_ms,
--  rpm, requests_left, requests_full_ms, tpm, tokens_left, tokens_full_ms} of bucket i.
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

-- Milliseconds until `left` refills to `need` at `per_minute`.
local function ms_until(need, left, per_minute)
  if per_minute <= 0 then return 0 end
  return math.max(0, math.ceil((need - left) / per_minute * 60000))
end

local buckets = {}
for i = 1, #KEYS do
  local rpm, tpm = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  local h = redis.call('HMGET', KEYS[i], 'r', 't', 'ts')
  local minutes = math.max(0, now - (tonumber(h[3]) or now)) / 60000
  local r = math.min(rpm, (tonumber(h[1]) or rpm) + minutes * rpm)
  local t = math.min(tpm, (tonumber(h[2]) or tpm) + minutes * tpm)
  buckets[i] = { rpm, tpm, r, t }
end

for i, b in ipairs(buckets) do
  local rpm, tpm, r, t = b[1], b[2], b[3], b[4]
  local what, wait
  if rpm > 0 and r < 1 then
    what, wait = 1, ms_until(1, r, rpm)
  elseif tpm > 0 and t <= 0 then
    what, wait = 2, ms_until(1, t, tpm)
  end
  if what then
    return { 0, i, what, wait,
      rpm, math.floor(math.max(r, 0)), ms_until(rpm, r, rpm),
      tpm, math.floor(math.max(t, 0)), ms_until(tpm, t, tpm) }
  end
end

for i, b in ipairs(buckets) do
  local rpm, tpm, r, t = b[1], b[2], b[3], b[4]
  if rpm > 0 then r = r - 1 end
  redis.call('HSET', KEYS[i], 'r', r, 't', t, 'ts', now)
  -- A bucket that has refilled is the same as none: let Redis forget it then.
  redis.call('PEXPIRE', KEYS[i], math.max(ms_until(rpm, r, rpm), ms_until(tpm, t, tpm)) + 1000)
end
return { 1 }
