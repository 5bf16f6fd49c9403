-- wrk script of the protocol-overhead series: POST /a2a/jsonrpc, a fresh messageId per request.
-- BENCH_METHOD names the JSON-RPC method; done() prints one JSON line for bench/protocol.py.
local method = os.getenv("BENCH_METHOD") or "SendMessage"
local prefix = tostring(os.time()) .. "-" .. tostring(math.random(1, 1000000000))
local counter = 0

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["A2A-Version"] = "1.0"

request = function()
  counter = counter + 1
  local body = string.format(
    '{"jsonrpc":"2.0","id":%d,"method":"%s","params":{"message":' ..
    '{"messageId":"%s-%d","role":"ROLE_USER","parts":[{"text":"hello bench"}]}}}',
    counter, method, prefix, counter)
  return wrk.format(nil, "/a2a/jsonrpc", nil, body)
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"errors":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.status + e.timeout))
end
