-- wrk script: GET /v1/nodes/{uuid}, cycling through every node UUID listed (one per line)
-- in the file named by $KILN_BENCH_UUIDS. Each wrk thread starts at a different offset.
local uuids = {}
local i = 0

-- setup() runs once per wrk thread in the main Lua state: give each thread its own offset.
local threads = 0
function setup(thread)
  thread:set("offset", threads * 4999)
  threads = threads + 1
end

function init(args)
  for line in io.lines(os.getenv("KILN_BENCH_UUIDS")) do
    if #line > 0 then uuids[#uuids + 1] = line end
  end
  i = (offset or 0) % #uuids
end

function request()
  i = i % #uuids + 1
  return wrk.format(nil, "/v1/nodes/" .. uuids[i])
end
