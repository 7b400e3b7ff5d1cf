#include "server/drivers/redfish/redfish_task.h"

#include <algorithm>
#include <cctype>

#include "server/drivers/redfish/redfish_common.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

using nlohmann::json;

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : std::string(sep)) + i;
  return out;
}

}  // namespace

RedfishTaskRef redfishTaskOf(const HttpResponse& response) {
  RedfishTaskRef ref;
  const json answer = parseJson(response.body).value_or(json());
  RedfishTaskPoll probe;
  if (readRedfishTask(answer, probe)) {
    if (auto id = redfishStringAt(answer, "@odata.id"); id && !id->empty()) {
      ref.taskPath = redfishLinkPath(*id);
    }
  }
  if (auto location = response.header("location"); location && !location->empty()) {
    ref.monitor = redfishLinkPath(*location);
  } else {
    ref.monitor = ref.taskPath;
  }
  return ref;
}

bool redfishTaskInProgress(std::string_view state) {
  return state == "New" || state == "Starting" || state == "Running" || state == "Pending";
}

bool readRedfishTask(const json& body, RedfishTaskPoll& poll) {
  const auto state = redfishStringAt(body, "TaskState");
  if (!state) return false;
  poll.state = *state;
  poll.status = redfishStringAt(body, "TaskStatus").value_or("");
  if (auto it = body.find("Messages"); it != body.end() && it->is_array()) {
    for (const auto& m : *it) {
      // As Ironic: the Message, else (empty or "unknown") the MessageId.
      std::string text = redfishStringAt(m, "Message").value_or("");
      const std::string lower = asciiLower(text);
      if (text.empty() || lower == "unknown" || lower == "unknown error") {
        text = redfishStringAt(m, "MessageId").value_or("");
      }
      if (!text.empty()) poll.messages.push_back(std::move(text));
    }
  }
  return true;
}

RedfishTaskPoll pollRedfishTask(RedfishClient& client, const RedfishTaskRef& task) {
  RedfishTaskPoll poll;
  auto response = client.exchange("GET", task.monitor);
  if (!response) {
    poll.kind = RedfishTaskPoll::Kind::Unreachable;
    poll.detail = response.error().message;
    return poll;
  }
  if (response->status == 404 || response->status == 410) {
    poll.kind = RedfishTaskPoll::Kind::Gone;
    return poll;
  }
  if (response->status < 200 || response->status >= 300) {
    poll.kind = RedfishTaskPoll::Kind::Unreachable;
    poll.detail = client.errorFor("GET", task.monitor, *response).message;
    return poll;
  }
  const json body = parseJson(response->body).value_or(json());
  const bool isTask = readRedfishTask(body, poll);
  if (response->status == 202) {
    // Still running, whatever the body says.
    poll.kind = RedfishTaskPoll::Kind::Running;
    if (!isTask) poll.state = "Running";
    return poll;
  }
  if (!isTask && !task.taskPath.empty() && task.taskPath != task.monitor) {
    // The monitor answers with the operation's result once the task ended; the Task says how.
    if (auto t = client.get(task.taskPath)) readRedfishTask(*t, poll);
  }
  if (poll.state.empty()) poll.state = "Completed";
  poll.kind = redfishTaskInProgress(poll.state) ? RedfishTaskPoll::Kind::Running
                                                : RedfishTaskPoll::Kind::Ended;
  return poll;
}

bool redfishTaskSucceeded(const RedfishTaskPoll& poll) {
  return poll.kind == RedfishTaskPoll::Kind::Gone ||
         (poll.kind == RedfishTaskPoll::Kind::Ended && poll.state == "Completed" &&
          (poll.status.empty() || poll.status == "OK" || poll.status == "Warning"));
}

Result<RedfishTaskPoll> watchRedfishTask(RedfishClient& client, const RedfishTaskRef& task,
                                         const RedfishTaskWatch& watch, const Logger& log) {
  for (;;) {
    if (watch.beforePoll) KILN_TRY_VOID(watch.beforePoll());
    RedfishTaskPoll poll = pollRedfishTask(client, task);
    switch (poll.kind) {
      case RedfishTaskPoll::Kind::Unreachable:
        log.warning(
            "cannot read the " + std::string(watch.what) + " task; trying again",
            {{"node", std::string(watch.node)}, {"monitor", task.monitor}, {"error", poll.detail}});
        break;
      case RedfishTaskPoll::Kind::Gone:
        log.warning(std::string(watch.what) + " task purged by the BMC; assuming it succeeded",
                    {{"node", std::string(watch.node)}, {"monitor", task.monitor}});
        return poll;
      case RedfishTaskPoll::Kind::Ended:
        log.info(std::string(watch.what) + " task ended",
                 {{"node", std::string(watch.node)},
                  {"monitor", task.monitor},
                  {"state", poll.state},
                  {"status", poll.status},
                  {"messages", join(poll.messages, ", ")}});
        return poll;
      case RedfishTaskPoll::Kind::Running:
        if (watch.whileRunning) KILN_TRY_VOID(watch.whileRunning(poll));
        break;
    }
    watch.clock->sleepFor(watch.interval);
  }
}

}  // namespace kiln::server
