// File: server/drivers/redfish/redfish_task.h
//
// Redfish asynchronous operations (DSP0266, "Asynchronous operations"), as the redfish firmware
// and RAID interfaces follow them: the BMC answers an operation with 202 Accepted, a task
// monitor in Location and often the Task itself in the body; the monitor answers 202 while the
// task runs and the ended Task (or the operation's result) afterwards, and 404 once the BMC
// purged it. What sushy's TaskMonitor does for Ironic.
//
// Reading a task: TaskState New, Starting, Running or Pending means running (sushy's in-progress
// states); a task succeeded when it ended Completed with TaskStatus OK or Warning (or none). Its
// messages are each Message, else (empty or "unknown") the MessageId, as Ironic reports them.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/drivers/redfish/redfish_client.h"
#include "shared/core/clock.h"
#include "shared/core/error.h"
#include "shared/core/log.h"
#include "shared/http/http_client.h"

namespace kiln::server {

/// The task an operation started.
struct RedfishTaskRef {
  std::string monitor;   ///< the path to poll; "" when the answer named no task
  std::string taskPath;  ///< the Task resource the answer carried ("" when none)
};

/// The task an operation's answer points at: the Location header, else the @odata.id of a Task
/// in the body (taskPath is that Task either way). Empty when the answer names neither (the
/// BMC finished at once).
RedfishTaskRef redfishTaskOf(const HttpResponse& response);

/// What one look at a task monitor found.
struct RedfishTaskPoll {
  enum class Kind { Running, Ended, Gone, Unreachable } kind = Kind::Running;
  std::string state;   ///< TaskState when the BMC said ("" otherwise)
  std::string status;  ///< TaskStatus ("" when absent)
  std::vector<std::string> messages;
  std::string detail;  ///< why the BMC was unreachable
};

/// Ironic's in-progress task states (sushy's NEW, STARTING, RUNNING, PENDING).
bool redfishTaskInProgress(std::string_view state);

/// Reads a Task body into `poll` (state, status, messages); false when the body is no Task.
bool readRedfishTask(const nlohmann::json& body, RedfishTaskPoll& poll);

/// One GET of the task's monitor: Running (202, or an in-progress TaskState), Ended, Gone (404
/// or 410) or Unreachable (no answer, or another status; `detail` says which). When the monitor
/// answers with the operation's result instead of a Task, the Task at taskPath says how it
/// ended.
RedfishTaskPoll pollRedfishTask(RedfishClient& client, const RedfishTaskRef& task);

/// Whether an ended task succeeded: Completed with TaskStatus OK, Warning or none.
bool redfishTaskSucceeded(const RedfishTaskPoll& poll);

/// How watchRedfishTask waits.
struct RedfishTaskWatch {
  const Clock* clock = nullptr;       ///< never null
  std::chrono::seconds interval{60};  ///< between looks
  std::string_view what = "Redfish";  ///< names the task in log lines ("firmware update")
  std::string_view node;              ///< the node's UUID, for log lines
  /// Before each look; an error ends the watch with it (deadlines). Optional.
  std::function<Result<void>()> beforePoll = {};
  /// After each look that found the task running (a reboot the task waits for). Optional.
  std::function<Result<void>(const RedfishTaskPoll&)> whileRunning = {};
};

/// Polls `task` every watch.interval until it ended (Kind::Ended: the caller judges it with
/// redfishTaskSucceeded) or the BMC purged it (Kind::Gone, which Ironic takes as success). A
/// BMC that does not answer (it may be resetting) is logged and asked again.
Result<RedfishTaskPoll> watchRedfishTask(RedfishClient& client, const RedfishTaskRef& task,
                                         const RedfishTaskWatch& watch, const Logger& log);

}  // namespace kiln::server
