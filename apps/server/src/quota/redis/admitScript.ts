import { createHash } from "node:crypto"

/**
 * One admission, decided inside Redis in one step, exactly as PostgreSQL's
 * `quota_admit` decides it: both windows admitted or refused together, windows
 * that only move forward, the ban. A subject is one hash (its key carries the
 * subject as hash tag, so a Cluster keeps it on one slot):
 * ms/mc/mr minute start, count and refusals; ds/dc day start and count; bu banned until.
 *
 * ARGV: now ("" = Redis's own clock, `TIME`: every host then decides on one clock), per-minute, per-day,
 * ban threshold, ban millis, consume (1/0), whether the subject has a daily window (1/0), expiry grace.
 * Returns {admitted, minuteStart, minuteCount, dayStart, dayCount, bannedUntil (-1: none), now}.
 * Every write sets the key's TTL to when no window needs it any more, plus the grace: state bounds itself.
 * Millisecond times are below 2^53, so Lua's doubles hold them exactly.
 */
export const ADMIT_SCRIPT = `
local key = KEYS[1]
local now = tonumber(ARGV[1])
if now == nil then
  local time = redis.call("TIME")
  now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local per_minute, per_day = tonumber(ARGV[2]), tonumber(ARGV[3])
local ban_threshold, ban_millis = tonumber(ARGV[4]), tonumber(ARGV[5])
local consume, daily, grace = ARGV[6] == "1", ARGV[7] == "1", tonumber(ARGV[8])
local minute = now - now % 60000
local day = now - now % 86400000
local s = redis.call("HMGET", key, "ms", "mc", "mr", "ds", "dc", "bu")
local ms, mc, mr = tonumber(s[1]) or minute, tonumber(s[2]) or 0, tonumber(s[3]) or 0
local ds, dc, bu = tonumber(s[4]) or day, tonumber(s[5]) or 0, tonumber(s[6]) or -1
if minute > ms then ms, mc, mr = minute, 0, 0 end
if day > ds then ds, dc = day, 0 end
if bu ~= -1 and bu <= now then bu = -1 end
local admitted = bu == -1 and mc < per_minute and dc < per_day
if consume then
  if admitted then
    mc, dc = mc + 1, dc + 1
  elseif bu == -1 then
    mr = mr + 1
    if mr > ban_threshold then bu = now + ban_millis end
  end
  redis.call("HSET", key, "ms", ms, "mc", mc, "mr", mr, "ds", ds, "dc", dc, "bu", bu)
  local expires = daily and ds + 86400000 or ms + 60000
  if bu > expires then expires = bu end
  redis.call("PEXPIRE", key, math.max(1, expires + grace - now))
end
return {admitted and 1 or 0, ms, mc, ds, dc, bu, now}
`

export const ADMIT_SCRIPT_SHA1 = createHash("sha1").update(ADMIT_SCRIPT).digest("hex")

/** Lifts a ban where it is: the counts stay, the TTL too. */
export const UNBAN_SCRIPT = `
if redis.call("EXISTS", KEYS[1]) == 1 then redis.call("HSET", KEYS[1], "bu", -1, "mr", 0) end
return 0
`

export const UNBAN_SCRIPT_SHA1 = createHash("sha1").update(UNBAN_SCRIPT).digest("hex")
