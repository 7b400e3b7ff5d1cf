#include "server/conductor/provision_state_machine.h"

#include "server/model/provision_state.h"
#include "server/model/versions.h"

namespace kiln::server {
namespace {

using namespace state;

// Ironic's transitions (ironic/common/states.py) for the states Kiln implements.
constexpr StateTransition kTransitions[] = {
    {kEnroll, "manage", kVerifying},
    {kVerifying, "done", kManageable},
    {kVerifying, "fail", kEnroll},

    {kManageable, "provide", kCleaning},
    {kManageable, "clean", kCleaning},
    {kManageable, "inspect", kInspecting},
    {kManageable, "adopt", kAdopting},

    {kCleaning, "done", kAvailable},    // automated cleaning finished
    {kCleaning, "manage", kManageable}, // manual cleaning finished
    {kCleaning, "wait", kCleanWait},
    {kCleaning, "fail", kCleanFailed},
    {kCleanWait, "resume", kCleaning},
    {kCleanWait, "fail", kCleanFailed},
    {kCleanWait, "abort", kCleanFailed},
    {kCleanFailed, "manage", kManageable},

    {kAvailable, "deploy", kDeploying},
    {kAvailable, "manage", kManageable},
    {kDeploying, "done", kActive},
    {kDeploying, "wait", kDeployWait},
    {kDeploying, "fail", kDeployFailed},
    {kDeployWait, "resume", kDeploying},
    {kDeployWait, "fail", kDeployFailed},
    {kDeployWait, "deleted", kDeleting},
    {kDeployFailed, "deploy", kDeploying},
    {kDeployFailed, "rebuild", kDeploying},
    {kDeployFailed, "deleted", kDeleting},

    {kActive, "rebuild", kDeploying},
    {kActive, "deleted", kDeleting},
    {kDeleting, "done", kCleaning},
    {kDeleting, "fail", kError},
    {kError, "rebuild", kDeploying},
    {kError, "deleted", kDeleting},

    {kInspecting, "done", kManageable},
    {kInspecting, "wait", kInspectWait},
    {kInspecting, "fail", kInspectFailed},
    {kInspectWait, "done", kManageable},
    {kInspectWait, "resume", kInspecting},
    {kInspectWait, "fail", kInspectFailed},
    {kInspectWait, "abort", kInspectFailed},
    {kInspectFailed, "inspect", kInspecting},
    {kInspectFailed, "manage", kManageable},

    {kAdopting, "done", kActive},
    {kAdopting, "fail", kAdoptFailed},
    {kAdoptFailed, "adopt", kAdopting},
    {kAdoptFailed, "manage", kManageable},

    // Rescue (1.38). "rescue wait" is Ironic's state for a rescue interface that waits for an
    // agent; Kiln's rescue implementations finish at once, so nothing enters it yet.
    {kActive, "rescue", kRescuing},
    {kRescuing, "done", kRescue},
    {kRescuing, "wait", kRescueWait},
    {kRescuing, "fail", kRescueFailed},
    {kRescueWait, "resume", kRescuing},
    {kRescueWait, "fail", kRescueFailed},
    {kRescueWait, "abort", kRescueFailed},
    {kRescueWait, "deleted", kDeleting},
    {kRescue, "rescue", kRescuing},
    {kRescue, "unrescue", kUnrescuing},
    {kRescue, "deleted", kDeleting},
    {kRescueFailed, "rescue", kRescuing},
    {kRescueFailed, "unrescue", kUnrescuing},
    {kRescueFailed, "deleted", kDeleting},
    {kUnrescuing, "done", kActive},
    {kUnrescuing, "fail", kUnrescueFailed},
    {kUnrescueFailed, "rescue", kRescuing},
    {kUnrescueFailed, "unrescue", kUnrescuing},
    {kUnrescueFailed, "deleted", kDeleting},

    // Hold steps (1.85): a `hold` step parks the flow; unhold resumes it, abort fails it.
    {kCleaning, "hold", kCleanHold},
    {kCleanWait, "hold", kCleanHold},
    {kCleanHold, "unhold", kCleanWait},
    {kCleanHold, "abort", kCleanFailed},
    {kDeploying, "hold", kDeployHold},
    {kDeployWait, "hold", kDeployHold},
    {kDeployHold, "unhold", kDeployWait},
    {kDeployHold, "abort", kDeployFailed},
    // 1.110: abort a deployment waiting for the agent.
    {kDeployWait, "abort", kDeployFailed},

    // Servicing (1.87): steps on an active node.
    {kActive, "service", kServicing},
    {kServicing, "done", kActive},
    {kServicing, "wait", kServiceWait},
    {kServicing, "fail", kServiceFailed},
    {kServicing, "hold", kServiceHold},
    {kServiceWait, "resume", kServicing},
    {kServiceWait, "fail", kServiceFailed},
    {kServiceWait, "abort", kServiceFailed},
    {kServiceWait, "hold", kServiceHold},
    {kServiceWait, "deleted", kDeleting},
    {kServiceHold, "unhold", kServiceWait},
    {kServiceHold, "service", kServicing},
    {kServiceHold, "abort", kServiceFailed},
    {kServiceFailed, "service", kServicing},
    {kServiceFailed, "abort", kActive},
    {kServiceFailed, "deleted", kDeleting},
};

}  // namespace

std::span<const StateTransition> provisionTransitions() { return kTransitions; }

std::optional<std::string_view> nextProvisionState(std::string_view from, std::string_view event) {
  for (const auto& t : kTransitions) {
    if (t.from == from && t.event == event) return t.to;
  }
  return std::nullopt;
}

std::string_view verbToEvent(std::string_view verb) {
  if (verb == "active") return "deploy";
  if (verb == "undeploy") return "deleted";
  return verb;
}

std::optional<std::string_view> verbTarget(std::string_view verb) {
  const auto event = verbToEvent(verb);
  if (event == "manage" || event == "clean" || event == "inspect") return kManageable;
  if (event == "provide" || event == "deleted") return kAvailable;
  if (event == "deploy" || event == "rebuild" || event == "adopt" || event == "unrescue") {
    return kActive;
  }
  if (event == "rescue") return kRescue;
  if (event == "service") return kActive;
  return std::nullopt;
}

std::optional<int> verbSince(std::string_view verb) {
  if (verb == "active" || verb == "deleted" || verb == "rebuild") return ver::k1InitialVersion;
  if (verb == "manage" || verb == "provide") return ver::k4ManageableState;
  if (verb == "inspect") return ver::k6InspectState;
  if (verb == "abort") return ver::k13AbortVerb;
  if (verb == "clean") return ver::k15ManualClean;
  if (verb == "adopt") return ver::k17AdoptVerb;
  if (verb == "rescue" || verb == "unrescue") return ver::k38RescueInterface;
  if (verb == "deploy" || verb == "undeploy") return ver::k73DeployUndeployVerbs;
  if (verb == "unhold") return ver::k85UnholdVerb;
  if (verb == "service") return ver::k87Service;
  return std::nullopt;
}

std::string provisionStatesDot() {
  std::string out =
      "// Generated from server/conductor/provision_state_machine.cpp by the test\n"
      "// \"the committed state diagram matches the transition table\". Do not edit.\n"
      "digraph provision_states {\n  rankdir=LR;\n  node [shape=box, style=rounded];\n";
  for (const auto& t : kTransitions) {
    const bool internal = t.event == "done" || t.event == "fail" || t.event == "wait" ||
                          t.event == "resume" || t.event == "hold" ||
                          (t.event == "manage" && t.from == std::string_view(state::kCleaning));
    out += "  \"" + std::string(t.from) + "\" -> \"" + std::string(t.to) + "\" [label=\"" +
           std::string(t.event) + "\"" + (internal ? ", style=dashed" : "") + "];\n";
  }
  out += "}\n";
  return out;
}

}  // namespace kiln::server
