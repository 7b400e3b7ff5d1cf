// File: server/conductor/conductor.h
//
// The conductor inside kiln-server (architecture principle 4): API handlers validate, call one
// of the request methods below (which check the node's reservation and state, commit the
// transition and queue the work) and answer 202; worker threads then run the flow under the
// node's reservation, one unit of work per transaction, and a periodic pass handles timers
// (wait steps, callback timeouts, power-state sync).
//
// The reservation is held through a NodeLock (server/conductor/node_lock.h): a request
// reserves the node in its transaction and the worker it queues adopts the reservation; the
// periodic tasks and the synchronous management calls acquire one of their own. No database
// transaction stays open while a BMC or an agent is talked to.
//
// Every transition is committed before it is acted on. At start-up, nodes a stopped server
// left mid-flow are failed with a last_error saying where they stopped; nodes parked in a wait
// state stay there and resume (or time out) as usual.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/conductor/conductor_registry.h"
#include "server/conductor/failure_policy.h"
#include "server/conductor/node_lock.h"
#include "server/conductor/step_planner.h"
#include "server/conductor/task_store.h"
#include "server/conductor/worker_pool.h"
#include "server/config.h"
#include "server/drivers/driver_registry.h"
#include "server/drivers/interface_registry.h"
#include "server/drivers/node_validation.h"
#include "server/model/node_history.h"
#include "server/storage/storage.h"
#include "shared/core/clock.h"
#include "shared/core/log.h"
#include "shared/protocol/messages.h"

namespace kiln::server {

/// The parts of PUT /v1/nodes/{id}/states/provision the conductor needs.
struct ProvisionRequest {
  std::string verb;  ///< as sent: active, deploy, rebuild, deleted, undeploy, manage, ...
  std::optional<nlohmann::json> cleanSteps;   ///< for "clean"
  std::optional<nlohmann::json> serviceSteps; ///< for "service" (1.87)
  std::optional<nlohmann::json> deploySteps;  ///< for active/deploy/rebuild (1.69)
  std::optional<nlohmann::json> configdrive;  ///< for active/deploy/rebuild
  std::optional<std::string> rescuePassword;  ///< for rescue (non-empty)
  std::string user;  ///< the requesting user, journalled with failures; "" when unknown
  int version = 1;   ///< the request's microversion (abort in wait call-back needs 1.110)
};

/// The outcome of a vendor passthru call.
struct VendorCallResult {
  nlohmann::json result;  ///< the method's result (null for an asynchronous method)
  bool async = false;     ///< the method runs in a worker: the API answers 202
  bool attach = false;    ///< the result is a file, not JSON
};

/// GET /v1/nodes/{id}/cleaning/steps (manual cleaning spec).
struct CleaningStepsView {
  bool complete = true;  ///< false: in-band steps are not known yet (202 + Retry-Request-After)
  std::vector<AvailableStep> steps;  ///< sorted by priority, descending
};

class Conductor {
 public:
  struct Deps {
    Storage& storage;
    const InterfaceRegistry& interfaces;
    const DriverRegistry& drivers;
    const Config& config;
    const Clock& clock;
    DhcpProvider* dhcp = nullptr;  ///< the provisioning network's DHCP; null = none
  };

  explicit Conductor(Deps deps);
  ~Conductor();

  /// Recovers nodes a previous process left mid-flow, then starts the workers and, when
  /// `periodicThread` is set and [conductor] periodic_interval > 0, the periodic thread.
  Result<void> start(bool periodicThread = true);
  /// Stops the periodic thread and the workers (running units finish). Idempotent.
  void stop();

  /// Starts a provision action (verbs and rules in docs/ironic-api.md §6). InvalidArgument for
  /// a verb not valid in the node's state, Conflict when the node is locked.
  Result<void> provision(const std::string& nodeUuid, const ProvisionRequest& request);
  /// Starts a power action: "power on", "power off", "rebooting", "soft power off",
  /// "soft rebooting".
  /// `user`: the requesting user, journalled with a failure (node history).
  Result<void> changePower(const std::string& nodeUuid, const std::string& target,
                           std::optional<int> timeoutSeconds, const std::string& user = {});
  /// Boot device through the node's management interface (synchronous, under the lock).
  Result<ManagementInterface::BootDevice> getBootDevice(const std::string& nodeUuid);
  Result<void> setBootDevice(const std::string& nodeUuid, const std::string& device,
                             bool persistent);
  Result<std::vector<std::string>> supportedBootDevices(const std::string& nodeUuid);

  // The other management features (conductor_management.cpp), as Ironic's conductor: boot mode
  // and secure boot change asynchronously (Conflict when locked, InvalidArgument when the
  // management interface does not validate; the worker records a failure in last_error and a
  // success in boot_mode / secure_boot), the rest synchronously under the node's lock.
  Result<void> setBootMode(const std::string& nodeUuid, const std::string& mode);
  Result<void> setSecureBoot(const std::string& nodeUuid, bool enabled);
  Result<void> injectNmi(const std::string& nodeUuid);
  /// Every component's indicators (no lock, as Ironic's shared task).
  Result<ManagementInterface::Indicators> supportedIndicators(const std::string& nodeUuid);
  Result<std::string> getIndicatorState(const std::string& nodeUuid, const std::string& component,
                                        const std::string& indicator);
  Result<void> setIndicatorState(const std::string& nodeUuid, const std::string& component,
                                 const std::string& indicator, const std::string& state);

  /// Virtual media (1.89, 1.93; conductor_vmedia.cpp). Attach and detach run in a worker
  /// under the node's lock (Conflict when locked; InvalidArgument when the management interface
  /// has no virtual media or does not validate; a failure goes to last_error and the node's
  /// history); the list is read at once.
  Result<void> attachVirtualMedia(const std::string& nodeUuid, const std::string& deviceType,
                                  const std::string& url, const std::string& downloadSource,
                                  const std::string& user);
  Result<void> detachVirtualMedia(const std::string& nodeUuid,
                                  const std::vector<std::string>& deviceTypes,
                                  const std::string& user);
  Result<std::vector<ManagementInterface::VirtualMedia>> getVirtualMedia(const std::string& nodeUuid);

  /// Resumes a node parked in "clean wait" or "wait call-back". `stepFinished`: the current
  /// asynchronous step completed (the next one runs); false re-runs the current one.
  Result<void> resume(const std::string& nodeUuid, bool stepFinished);
  /// A flow parked for its agent's logs (server/drivers/agent/ramdisk_logs.h) whose
  /// [agent] deploy_logs_collect_timeout passed: logs a warning and resumes it without them
  /// (conductor_agent.cpp). Conflict when the node no longer waits for its logs or is reserved.
  Result<void> stopWaitingForLogs(const std::string& nodeUuid);

  /// GET /v1/lookup (docs/protocol.md): the node an agent serves, found by its UUID or by the
  /// (normalised) MAC addresses of its ports, with the agent token on the first lookup of a
  /// ramdisk session ("******" afterwards). NotFound when no node matches or (restrict_lookup)
  /// the node is in no state where an agent is expected; Conflict while a worker holds it.
  Result<nlohmann::json> lookup(const std::vector<std::string>& macs, const std::string& nodeUuid);
  /// POST /v1/continue_inspection (1.84): the inventory of a node in "inspect wait", found by
  /// `nodeUuid` or by the inventory's MACs as lookup() finds it; inspection then finishes as
  /// with an agent's report. Returns lookup()'s answer. NotFound as lookup(); Conflict when
  /// the node is not waiting for inspection data or is locked.
  Result<nlohmann::json> continueInspection(const nlohmann::json& inventory,
                                            const std::vector<std::string>& macs,
                                            const std::string& nodeUuid);
  /// POST /v1/heartbeat/{uuid}: records what the agent reports, hands finished commands to the
  /// parked flow and resumes it, and answers with the command the agent should run next.
  /// Unauthenticated for a wrong or missing token (nothing changes).
  Result<protocol::HeartbeatResponse> heartbeat(const std::string& nodeUuid,
                                                const protocol::HeartbeatRequest& beat);

  /// The node's clean steps with priority >= minPriority.
  Result<CleaningStepsView> cleaningSteps(const std::string& nodeUuid, int minPriority);

  /// GET /v1/nodes/{id}/validate: every non-vendor interface's verdict. The deploy entry also
  /// applies the instance-traits rule and checks the enabled deploy templates' steps.
  Result<std::vector<InterfaceValidation>> validateNode(const std::string& nodeUuid);

  /// The deploy steps the node's enabled deploy templates (names among its traits) add,
  /// checked against the node's interfaces: InvalidArgument explaining what is unsupported.
  Result<void> validateTemplates(Transaction& tx, const Record& node,
                                 const std::vector<std::string>& traits);

  /// The methods of the node's vendor interface, as Ironic lists them: {name: {http_methods,
  /// async, description, attach, require_exclusive_lock}}. InvalidArgument when the node's
  /// vendor interface offers none (no-vendor). (conductor_vendor.cpp)
  Result<nlohmann::json> vendorMethods(const std::string& nodeUuid);
  /// Calls a vendor passthru method with `args` (a JSON object) for the request's HTTP method.
  /// InvalidArgument for an unknown method, an HTTP method it does not take or arguments it
  /// refuses; Conflict when the method needs the node's lock and another operation holds it.
  /// An asynchronous method runs in a worker (holding the lock when it needs it).
  Result<VendorCallResult> vendorPassthru(const std::string& nodeUuid, const std::string& method,
                                          const std::string& httpMethod,
                                          const nlohmann::json& args);

  /// Queues the scheduling of an allocation in state "allocating": a worker binds a free,
  /// suitable node to it (server/conductor/allocations.h), trying again [conductor]
  /// node_locked_retry_attempts times, node_locked_retry_interval seconds apart, while
  /// operations hold every suitable node; otherwise the allocation goes to "error" with a
  /// last_error saying why. An allocation deleted meanwhile is left alone.
  void allocate(const std::string& allocationUuid);

  /// One pass of the periodic work at the clock's current time: finished wait steps, callback
  /// timeouts, and (when due) the power-state sync.
  void runPeriodicTasks();
  /// Applies the node event journal's retention ([events] max_per_node, max_age) when a
  /// minute has passed since the last time (the first call always does).
  void pruneNodeEventsWhenDue();
  /// Blocks until no conductor work is queued or running (tests).
  void waitIdle();

  /// The node's interface implementations.
  Result<NodeDriver> driverFor(const Record& node) const;
  /// Priority overrides from configuration.
  const PriorityOverrides& overrides() const { return overrides_; }
  /// This conductor's name (the reservation it writes).
  const std::string& host() const { return deps_.config.host; }
  /// This server's conductor in the database and the hash ring of the live ones.
  ConductorRegistry& registry() { return registry_; }
  const ConductorRegistry& registry() const { return registry_; }

 private:
  enum class Next { Continue, Stop };

  /// Runs the node's flow under `lock` until it stops; `user` (who started it, if known) goes
  /// with the tasks. A flow step that returns Next::Stop has given the node up in its last save
  /// (it ended or parked in a wait or hold state: endFlow, parkFlow, failFlow, which tell the
  /// lock through the task's onReleased), or found it no longer reserved by this conductor.
  void advance(NodeLock& lock, const std::string& user = {});
  /// Runs the flow of a node whose working state a request or a heartbeat just committed under
  /// `lock`: here when this server owns the node (`mine`, the hash ring), otherwise handed to
  /// the owner through the database: the reservation is released with the node left in its
  /// working state, which the owner's periodic pass picks up (pickUpHandedOffNodes).
  /// `done` runs once the flow stopped here or was handed off.
  void startFlow(NodeLock lock, bool mine, const std::string& user = {},
                 std::function<void()> done = {});
  /// The owner's side of the hand-off: nodes in a working state with no reservation that this
  /// server owns are locked and their flows run.
  void pickUpHandedOffNodes();
  /// The owner's side of a power action another server received (changePower): nodes this
  /// server holds reserved with driver_internal_info.handed_off_power are claimed (the note
  /// removed in one transaction) and the action run under the adopted reservation.
  void pickUpHandedOffPower();
  /// Takes over the nodes this server owns that a dead conductor left reserved (recoverNode).
  void takeOverNodes();
  /// Fails an interrupted flow of node `uuid` as a restart does, while `reservedBy` (this
  /// server at start-up, a dead conductor otherwise; "" for none) still holds it: a working
  /// state goes to its failure state with a last_error saying where it stopped (`who` stopped),
  /// a pending power action is dropped, the reservation is cleared. A parked node keeps its
  /// wait state and resumes as usual.
  void recoverNode(const std::string& uuid, const std::string& reservedBy, const std::string& who);
  /// `user` asked for the flow; a handed-off flow's requester (driver_internal_info) fills it
  /// in when it is empty, for the passes after this one too.
  /// One unit of work of the flow `lock` holds.
  Result<Next> advanceOnce(NodeLock& lock, std::string& user);
  Result<Next> doVerify(TaskContext& task);
  Result<Next> doCleaning(TaskContext& task);
  Result<Next> doDeploying(TaskContext& task);
  Result<Next> doDeleting(TaskContext& task);
  Result<Next> doInspecting(TaskContext& task);
  Result<Next> doAdopting(TaskContext& task);
  /// The end of a successful inspection (conductor_inspection.cpp): the inspection rules (1.96)
  /// run on the inventory and the node, then the inventory and plugin data are stored (1.81)
  /// with the node's changes in one transaction; a failing rule fails the inspection.
  Result<Next> finishInspection(TaskContext& task);
  /// Servicing (1.87, conductor_service.cpp): the requested steps on an active node.
  Result<Next> doServicing(TaskContext& task);
  Result<Next> finishServicing(TaskContext& task);
  /// After in-band servicing: out of the agent ramdisk and back into the instance (nothing to
  /// do when no ramdisk was booted for it).
  Result<void> tearDownServiceRamdisk(TaskContext& task);
  /// Abort from "service failed" after in-band servicing (under `lock`): tears the ramdisk
  /// down and returns the node to active, or keeps it in "service failed" with last_error when
  /// that fails.
  void abortFailedService(NodeLock& lock);
  /// Fails a node parked in a wait or hold state by request (abort), in a worker under `lock`:
  /// `message` becomes last_error (with "aborted" in it, as clients look for).
  void failParked(NodeLock& lock, const std::string& message, const std::string& user);
  /// Takes the node's lock for a management action that then runs `body` in a worker; a
  /// failure is recorded as last_error "<failure>: <error>" with a history event.
  Result<void> startManagementAction(const std::string& uuid, const std::string& user,
                                     std::string failure,
                                     std::function<Result<void>(TaskContext&)> body);
  /// The rescue and unrescue flows (conductor_rescue.cpp).
  Result<Next> doRescuing(TaskContext& task);
  Result<Next> doUnrescuing(TaskContext& task);
  /// Runs the next step of the node's clean or deploy plan.
  Result<Next> runNextStep(TaskContext& task, StepKind kind);
  Result<StepResult> executeStep(TaskContext& task, const PlannedStep& step, StepKind kind);
  /// After a step ran: fails the flow naming the step, parks the node (Wait), or marks the step
  /// completed so the next one runs.
  Result<Next> stepOutcome(TaskContext& task, StepKind kind, const PlannedStep& step,
                           const Result<StepResult>& result);
  /// Handles the agent's report on the command the current step queued (conductor_agent.cpp).
  Result<Next> takeAgentResult(TaskContext& task, StepKind kind);
  /// Marks a parked node as resumed and reserves it for this conductor (NodeLock::reserve, in
  /// the caller's transaction; Conflict when it is reserved). The worker adopts the lock.
  Result<void> markResumed(TaskContext& task, bool stepFinished);
  Result<Next> finishCleaning(TaskContext& task);
  /// The end of a flow: `event` (done, manage) moves the node to its stable state with no
  /// target, and the save recording it (task.node plus `extra`) clears the reservation: the
  /// node is free the moment it is committed. Returns Next::Stop.
  Result<Next> endFlow(TaskContext& task, std::string_view event, const FieldMask& extra = {});
  /// Parks the flow (`event` wait or hold): the save that moves the node to the wait or hold
  /// state clears the reservation too, so the agent's heartbeat, the API and the timers can
  /// act on it; it resumes under a new lock (markResumed). Returns Next::Stop.
  Result<Next> parkFlow(TaskContext& task, std::string_view event, const FieldMask& extra = {});
  /// Fails the flow as planFailure(state, `cause`) says (server/conductor/failure_policy.h):
  /// tears down a failed cleaning, powers off a failed deployment (when configured), moves the
  /// node to its failure state with last_error `message`, journals it (node history) and gives
  /// the node up in that save; `extra` names node fields the flow changed besides the
  /// conductor's own. Returns Next::Stop.
  Result<Next> failFlow(TaskContext& task, const std::string& message, const FieldMask& extra = {},
                        FailureCause cause = FailureCause::StepFailed);
  /// Refreshes the node's cached BIOS settings from its bios interface (Ironic's
  /// node_cache_bios_settings): nothing for no-bios; a failure is logged, never fatal.
  void cacheBiosSettings(TaskContext& task);
  /// Queues `job` for the worker pool under `lock` (the reservation the request committed,
  /// adoptLock). The worker owns the lock: what the job still holds when it returns is
  /// released; when it throws, failUnfinished fails the node's action, still under the lock,
  /// and the lock is released. A job dropped unrun (the conductor stopping) releases it too.
  void submit(NodeLock lock, std::function<void(NodeLock&)> job);
  /// Queues a job that works on node `uuid` without its lock (a shared vendor passthru call);
  /// if it throws, the exception is logged and the node left as it is.
  void submitUnlocked(const std::string& uuid, std::function<void()> job);
  /// The lock on a node this conductor reserved in a request's committed transaction
  /// (NodeLock::reserve, markResumed).
  NodeLock adoptLock(const std::string& uuid, std::string purpose);
  /// NodeLock::acquire for this conductor.
  Result<NodeLock> lockNode(const std::string& uuid, std::string purpose,
                            const NodeLock::Precondition& precondition = {});
  /// Fails an action a worker could not finish (an error or an exception escaped it): the
  /// working state's failure state (deploying -> deploy failed, ...), `message` as last_error,
  /// no target power state, no reservation. Needs nothing but the plain columns, so it works
  /// on a corrupt row; a node another conductor holds is left alone. `lock`, when given, is
  /// the worker's: it counts as released once the failure is committed.
  void failUnfinished(const std::string& uuid, const std::string& message,
                      NodeLock* lock = nullptr);
  void powerAction(NodeLock& lock, const std::string& target, int timeoutSeconds,
                   const std::string& user);
  /// The workers of setBootMode / setSecureBoot (Ironic's node_change_boot_mode and
  /// node_change_secure_boot), under `lock`.
  void changeBootMode(NodeLock& lock, const std::string& mode);
  void changeSecureBoot(NodeLock& lock, bool enabled);
  /// Locks the node for a management call (NodeLock::acquire) and runs `body` with its driver,
  /// after the management interface validated, with no transaction open; releases the node
  /// in the save of driver_internal_info.
  Result<void> withManagementLock(const std::string& uuid,
                                  const std::function<Result<void>(TaskContext&)>& body);
  /// Ironic's node_cache_boot_mode: reads the boot mode and secure boot state (null when the
  /// management interface does not support them) into task.node; the fields it changed, or
  /// none when reading failed otherwise.
  FieldMask cacheBootMode(TaskContext& task);

  /// What a one-shot worker action under a lock (runLocked) is called and how it fails.
  struct LockedAction {
    std::string what;     ///< logged when its last save fails ("cannot record ...")
    std::string failure;  ///< last_error is "<failure>: <error>"
    /// The history event type a failure is journalled under; empty: not journalled.
    std::string_view historyType;
    std::string user;  ///< who asked for it (history)
  };
  using LockedBody = std::function<Result<void>(TaskContext& task, FieldMask& extra)>;
  /// Runs a one-shot action in a worker under `lock` (power, boot mode, secure boot, virtual
  /// media, tear-downs): loads the node (failing the node's action when that fails), resolves
  /// its driver, runs `body`, records a failure as last_error (and history), clears any target
  /// power state, and gives the node up in the save of the outcome (with `extra`'s fields).
  void runLocked(NodeLock& lock, const LockedAction& action, const LockedBody& body);

  // Requests (conductor_requests.cpp): provision() per verb.
  /// abort: from clean wait, inspect wait, a hold, deploy wait (1.110), servicing (1.87).
  Result<void> abortFrom(TransactionPtr tx, TaskContext& task, const ProvisionRequest& request);
  /// unhold (1.85): the held flow goes back to its wait state and carries on.
  Result<void> unhold(TransactionPtr tx, TaskContext& task, const ProvisionRequest& request,
                      bool mine);
  /// The synchronous checks of a verb that starts a flow, as Ironic's do_node_deploy,
  /// do_node_clean, do_node_rescue, ...: InvalidArgument saying what fails.
  Result<void> validateForVerb(TaskContext& task, std::string_view event,
                               const ProvisionRequest& request);
  /// The flow bookkeeping a verb starts with (requested steps, configdrive, timestamps).
  void seedFlowInfo(TaskContext& task, std::string_view event, const ProvisionRequest& request);

  void recoverInterruptedNodes();
  /// Queues every allocation a stopped server left in "allocating" (conductor_allocations.cpp).
  void recoverAllocations();
  void runAllocation(const std::string& uuid);
  /// Puts an allocation in "error" with `message` (unless it is gone or no longer allocating).
  void failAllocation(const std::string& uuid, const std::string& message);
  void checkWaitingNodes();
  /// Fast track's periodic check (every 10 seconds at most): a node in manageable or available
  /// whose agent session or boot_target "agent" fast track left is no longer usable (its last
  /// heartbeat older than [deploy] fast_track_timeout, powered off, in maintenance, fast track
  /// turned off) loses both (agent::endFastTrack), in a short transaction that re-checks the
  /// node is free and unchanged.
  void expireFastTrack();
  /// Whether an idle agent of this node may stay in fast track: manageable or available, not
  /// in maintenance, fast track enabled for it (an invalid driver_info value counts as off).
  bool fastTrackIdle(const TaskContext& task) const;
  void syncPowerStates();
  /// One node of syncPowerStates(); false stops the sync (the database is unavailable). Every
  /// BMC call runs with no transaction open; restoring the recorded power state
  /// (force_power_state_during_sync) runs under the node's lock, and the outcome is written in
  /// one short transaction that re-checks the node first.
  bool syncPowerState(const Record& node);
  /// Reads the node's sensors into the sensor metrics ([sensor_data] send_sensor_data).
  void readSensors(TaskContext& task, ManagementInterface& management);
  void periodicLoop();

  Deps deps_;
  TaskStore tasks_;
  ConductorRegistry registry_;
  bool registered_ = false;
  PriorityOverrides overrides_;
  Logger log_{"conductor"};
  std::unique_ptr<WorkerPool> pool_;
  std::thread periodic_;
  std::mutex periodicMutex_;
  std::condition_variable periodicWake_;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point lastPowerSync_{};
  bool powerSyncDone_ = false;
  /// The nodes whose sensors the current power-state sync pass read ([sensor_data]); the
  /// others' sensor samples go at the end of the pass.
  std::set<std::string> sensorNodesRead_;
  std::chrono::steady_clock::time_point lastEventsPrune_{};
  bool eventsPruneDone_ = false;
  std::chrono::steady_clock::time_point lastFastTrackSweep_{};
  bool fastTrackSweepDone_ = false;
};

}  // namespace kiln::server
