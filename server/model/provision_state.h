// File: server/model/provision_state.h
//
// Provision and power state names as they appear on the wire (docs/ironic-api.md §6.1).
#pragma once

#include <string_view>

namespace kiln::server::state {

inline constexpr std::string_view kEnroll = "enroll";
inline constexpr std::string_view kVerifying = "verifying";
inline constexpr std::string_view kManageable = "manageable";
inline constexpr std::string_view kAvailable = "available";
inline constexpr std::string_view kActive = "active";
inline constexpr std::string_view kDeploying = "deploying";
inline constexpr std::string_view kDeployWait = "wait call-back";
inline constexpr std::string_view kDeployFailed = "deploy failed";
inline constexpr std::string_view kDeployHold = "deploy hold";
inline constexpr std::string_view kDeleting = "deleting";
inline constexpr std::string_view kCleaning = "cleaning";
inline constexpr std::string_view kCleanWait = "clean wait";
inline constexpr std::string_view kCleanFailed = "clean failed";
inline constexpr std::string_view kCleanHold = "clean hold";
inline constexpr std::string_view kInspecting = "inspecting";
inline constexpr std::string_view kInspectWait = "inspect wait";
inline constexpr std::string_view kInspectFailed = "inspect failed";
inline constexpr std::string_view kAdopting = "adopting";
inline constexpr std::string_view kAdoptFailed = "adopt failed";
inline constexpr std::string_view kRescue = "rescue";
inline constexpr std::string_view kRescuing = "rescuing";
inline constexpr std::string_view kRescueWait = "rescue wait";
inline constexpr std::string_view kRescueFailed = "rescue failed";
inline constexpr std::string_view kUnrescuing = "unrescuing";
inline constexpr std::string_view kUnrescueFailed = "unrescue failed";
inline constexpr std::string_view kServicing = "servicing";
inline constexpr std::string_view kServiceWait = "service wait";
inline constexpr std::string_view kServiceFailed = "service failed";
inline constexpr std::string_view kServiceHold = "service hold";
inline constexpr std::string_view kError = "error";

/// Every provision state a node can be in.
inline constexpr std::string_view kAll[] = {
    kEnroll,     kVerifying,    kManageable,    kAvailable,    kActive,      kDeploying,
    kDeployWait, kDeployFailed, kDeployHold,    kDeleting,     kCleaning,    kCleanWait,
    kCleanFailed, kCleanHold,   kInspecting,    kInspectWait,  kInspectFailed, kAdopting,
    kAdoptFailed, kRescue,      kRescuing,      kRescueWait,   kRescueFailed, kUnrescuing,
    kUnrescueFailed, kServicing, kServiceWait, kServiceFailed, kServiceHold, kError};

inline bool isValid(std::string_view s) {
  for (auto x : kAll) {
    if (x == s) return true;
  }
  return false;
}

/// Ironic's UPDATE_ALLOWED_STATES: states with a target_provision_state in which a node's
/// fields may still be changed (a PATCH, removing an allocation).
inline bool updateAllowedInTransition(std::string_view s) {
  for (auto x : {kDeployFailed, kInspecting, kInspectFailed, kInspectWait, kCleanFailed, kError,
                 kVerifying, kAdoptFailed, kRescueFailed, kUnrescueFailed, kServiceFailed}) {
    if (x == s) return true;
  }
  return false;
}

/// States in which the driver, the interfaces and the resource class may change, and an
/// allocation's instance may be removed by PATCH (Ironic's update_node allowed states).
inline bool driverChangeAllowed(std::string_view s) {
  return s == kEnroll || s == kInspecting || s == kInspectWait || s == kManageable ||
         s == kAvailable;
}

/// States in which a conductor worker owns the node (it holds the reservation; a node in one
/// of them with no reservation is waiting for its conductor to pick the flow up).
inline constexpr std::string_view kWorkingStates[] = {kVerifying, kCleaning,   kDeploying,
                                                      kDeleting,  kInspecting, kAdopting,
                                                      kRescuing,  kUnrescuing, kServicing};
inline bool isWorkingState(std::string_view s) {
  for (auto x : kWorkingStates) {
    if (x == s) return true;
  }
  return false;
}

/// States parked until something resumes the flow (an agent, a wait step's timer), with a
/// callback timeout: clean wait, wait call-back, inspect wait, service wait.
inline bool isWaitState(std::string_view s) {
  return s == kCleanWait || s == kDeployWait || s == kInspectWait || s == kServiceWait;
}

/// States a `hold` step parks a flow in until `unhold` (1.85) or `abort`; no timeout applies.
inline bool isHoldState(std::string_view s) {
  return s == kCleanHold || s == kDeployHold || s == kServiceHold;
}

inline constexpr std::string_view kPowerOn = "power on";
inline constexpr std::string_view kPowerOff = "power off";

}  // namespace kiln::server::state
