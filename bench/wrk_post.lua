-- wrk_post.lua - POST AdmissionReview bodies with wrk and print one machine-readable line.
--
--   wrk -t1 -c16 -d10s --timeout 5s -s bench/wrk_post.lua \
--       'https://127.0.0.1:8443/validate?timeout=10s' -- BODY.json [BODY2.json ...]
--
-- One body: wrk sends it as its static request (the cheapest path through wrk, so
-- the load generator steals as little CPU from the server as it can). Several
-- bodies: each connection sends them in turn, starting at a different one per
-- thread, so a soak mixes sizes and verdicts. wrk adds Content-Length itself.
--
-- done() prints
--   RESULT requests=.. duration_s=.. rps=.. mean_us=.. p50_us=.. p90_us=.. p99_us=..
--          p999_us=.. max_us=.. rx_bytes=.. bodies=.. err_connect=.. err_read=..
--          err_write=.. err_status=.. err_timeout=..
-- err_status counts answers with a status of 400 or more (wrk's "non-2xx or 3xx").

local threads = {}
local counter = 0

local function slurp(path)
   local f, err = io.open(path, "rb")
   if not f then
      error("wrk_post.lua: cannot open body file: " .. tostring(err))
   end
   local s = f:read("*a")
   f:close()
   return s
end

-- Main Lua state, once per thread, before init(): each thread gets its own offset.
function setup(thread)
   thread:set("offset", counter)
   counter = counter + 1
   table.insert(threads, thread)
end

function init(args)
   if #args == 0 then
      error("wrk_post.lua: give one or more body files after '--'")
   end
   nbodies = #args
   wrk.method = "POST"
   wrk.headers["Content-Type"] = "application/json"
   if nbodies == 1 then
      wrk.body = slurp(args[1])
      return
   end
   local reqs = {}
   for i, path in ipairs(args) do
      reqs[i] = wrk.format("POST", nil, nil, slurp(path))
   end
   local next_i = (offset or 0) % nbodies
   function request()
      next_i = next_i % nbodies + 1
      return reqs[next_i]
   end
end

function done(summary, latency, requests)
   local secs = summary.duration / 1e6
   local e = summary.errors
   local n = threads[1] and threads[1]:get("nbodies") or 0
   io.write(string.format(
      "RESULT requests=%d duration_s=%.3f rps=%.1f mean_us=%.1f p50_us=%d p90_us=%d p99_us=%d " ..
      "p999_us=%d max_us=%d rx_bytes=%d bodies=%d err_connect=%d err_read=%d " ..
      "err_write=%d err_status=%d err_timeout=%d\n",
      summary.requests, secs, summary.requests / secs, latency.mean,
      latency:percentile(50), latency:percentile(90), latency:percentile(99),
      latency:percentile(99.9), latency.max, summary.bytes, n,
      e.connect, e.read, e.write, e.status, e.timeout))
end
