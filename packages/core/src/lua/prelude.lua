-- Floodgate prelude: helpers shared by every algorithm chunk. Concatenated before the chunks.
local EPSILON = 1e-9
local CHECK = {}
-- Doubles survive a round trip through a Redis string only with 17 significant digits.
local function fmt(x) return string.format('%.17g', x) end
-- A TTL is always a positive whole number of ms: no key is ever written without an expiry.
local function ttl(ms) return math.max(1, math.ceil(ms)) end
