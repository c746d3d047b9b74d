-- tests/bench/post.lua - wrk script for the HTTP ceiling of `make bench`:
-- a POST with the side-effect protocol's headers (docs/protocol.md) and a
-- key no other request of the run uses, as an executor sends it.
--   wrk -c64 -s tests/bench/post.lua http://HOST:PORT/
local threads = {}
local next_id = 0

function setup(thread)
	next_id = next_id + 1
	thread:set("tid", next_id)
	table.insert(threads, thread)
end

function init(args)
	n = 0
end

function request()
	n = n + 1
	local key = "bench.http/" .. tid .. "/" .. n
	return wrk.format("POST", "/effects/bench.http", {
		["Idempotency-Key"] = key,
		["Palisade-Fencing-Token"] = tostring(n),
		["Palisade-Trigger"] = tostring(tid * 100000000 + n),
		["Palisade-Attempt"] = "1",
		["Palisade-Scheduled-At"] = "2026-12-01T10:00:00Z",
		["Content-Type"] = "application/json",
	}, '{"job": "bench.http", "at": "2026-12-01T10:00:00Z"}')
end
