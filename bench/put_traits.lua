-- wrk script: PUT /v1/nodes/{uuid}/traits replacing the node's traits with three traits.
-- With $KILN_BENCH_UUIDS set (a file, one UUID a line) requests cycle through those nodes;
-- otherwise every request goes to the URL given on the wrk command line.
wrk.method = "PUT"
wrk.body = '{"traits": ["CUSTOM_BENCH_A", "CUSTOM_BENCH_B", "HW_CPU_X86_AVX2"]}'
wrk.headers["Content-Type"] = "application/json"

local uuids = {}
local i = 0

-- setup() runs once per wrk thread in the main Lua state: give each thread its own offset.
local threads = 0
function setup(thread)
  thread:set("offset", threads * 4999)
  threads = threads + 1
end

function init(args)
  local file = os.getenv("KILN_BENCH_UUIDS")
  if file and #file > 0 then
    for line in io.lines(file) do
      if #line > 0 then uuids[#uuids + 1] = line end
    end
    i = (offset or 0) % #uuids
  end
end

function request()
  if #uuids == 0 then return wrk.format() end
  i = i % #uuids + 1
  return wrk.format(nil, "/v1/nodes/" .. uuids[i] .. "/traits")
end
