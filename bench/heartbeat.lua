-- wrk script: simulated idle agents. POST /v1/heartbeat/{uuid} with each agent's token, cycling
-- through the "uuid token" lines of the file named by $KILN_BENCH_AGENTS (bench/scale.py
-- writes it after looking every agent's node up). The body is what an idle kiln-agent sends:
-- no results, no progress, its (small) step catalogue.
local agents = {}
local i = 0
local threads = 0

function setup(thread)
  thread:set("offset", threads * 997)
  threads = threads + 1
end

function init(args)
  for line in io.lines(os.getenv("KILN_BENCH_AGENTS")) do
    local uuid, token = line:match("^(%S+) (%S+)$")
    if uuid then agents[#agents + 1] = {uuid, token} end
  end
  i = (offset or 0) % #agents
end

local steps = '{"clean":{"deploy":[{"interface":"deploy","step":"erase_devices_metadata",' ..
  '"priority":99,"abortable":true,"reboot_requested":false,"argsinfo":{}}]},' ..
  '"deploy":{},"hardware_manager_version":{"generic":"1"}}'

function request()
  i = i % #agents + 1
  local a = agents[i]
  local body = '{"agent_token":"' .. a[2] .. '","agent_version":"kiln-agent bench",' ..
    '"callback_url":"","protocol_version":1,"results":[],"running":[],"steps":' .. steps .. '}'
  return wrk.format("POST", "/v1/heartbeat/" .. a[1],
                    {["Content-Type"] = "application/json",
                     ["X-OpenStack-Ironic-API-Version"] = "1.115"}, body)
end
