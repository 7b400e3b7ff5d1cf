// The end of an inspection: what the inspect interface found (the agent's inventory or an
// out-of-band one) becomes Ironic's plugin data, the inspection rules (API 1.96) run on it and
// may change the node and its ports, and everything is stored in one transaction with the
// node's move to manageable. A rule that fails (a `fail` action, or one that cannot run) fails
// the inspection with its message, and nothing the rules did is kept.
#include "server/conductor/conductor.h"
#include "server/conductor/firmware_cache.h"
#include "server/conductor/flow_keys.h"
#include "server/drivers/agent/agent_session.h"
#include "server/model/provision_state.h"
#include "server/inspection/rules_engine.h"
#include "server/model/inspection_rule.h"
#include "server/model/node.h"
#include "server/model/node_inventory.h"
#include "server/model/trait.h"
#include "server/storage/queries/inspection_rules.h"
#include "server/storage/queries/node_inventory.h"
#include "shared/json/json_util.h"

namespace kiln::server {

using nlohmann::json;
using Mode = Storage::Mode;

namespace {

/// The node attributes rules may read and set, with their fields.
constexpr std::pair<const char*, size_t> kRuleAttributes[] = {
    {"name", kNodeName},           {"resource_class", kNodeResourceClass},
    {"description", kNodeDescription}, {"owner", kNodeOwner},
    {"lessee", kNodeLessee},       {"driver", kNodeDriver},
};

/// The port fields rules may change.
constexpr std::pair<const char*, size_t> kRulePortFields[] = {
    {"extra", kPortExtra},
    {"local_link_connection", kPortLocalLinkConnection},
    {"physical_network", kPortPhysicalNetwork},
    {"pxe_enabled", kPortPxeEnabled},
};

json fieldJson(const Record& r, const Schema& schema, size_t field) {
  return valueToJson(r[field], schema[field].type);
}

}  // namespace

Result<Conductor::Next> Conductor::finishInspection(TaskContext& task) {
  std::optional<NodeInventory> data;
  std::vector<std::pair<Record, FieldMask>> changedPorts;  // each with the columns the rules set
  std::optional<std::vector<std::string>> traits;
  FieldMask extra;
  extra.set(kNodeProperties);
  if (task.inventory) {
    std::vector<std::string> pxeMacs;
    for (const auto& port : task.ports) {
      if (port.flag(kPortPxeEnabled)) pxeMacs.push_back(port.str(kPortAddress));
    }
    data = NodeInventory{*task.inventory, buildPluginData(*task.inventory, pxeMacs)};
    std::vector<Record> rules;
    {
      auto tx = KILN_TRY(deps_.storage.begin(Mode::Read));
      rules = KILN_TRY(loadInspectionRules(*tx));
    }
    if (!rules.empty()) {
      NodeView view;
      view.uuid = task.uuid();
      view.properties = objectField(task.node, kNodeProperties);
      view.extra = objectField(task.node, kNodeExtra);
      view.driverInfo = task.driverInfo;
      view.instanceInfo = task.instanceInfo;
      for (const auto& [name, field] : kRuleAttributes) {
        view.attributes[name] = fieldJson(task.node, nodeSchema(), field);
      }
      view.traits = task.traits;
      const Schema& portSchema = schemaOf(Resource::Port);
      for (const auto& port : task.ports) {
        PortView p{port.uuid(), port.str(kPortAddress), json::object(), false};
        for (const auto& [name, field] : kRulePortFields) p.fields[name] = fieldJson(port, portSchema, field);
        view.ports.push_back(std::move(p));
      }
      RulesReport report;
      auto applied = applyInspectionRules(rules, *task.inventory, data->pluginData, view, {}, &report);
      for (const auto& line : report.log) {
        task.log.info("inspection rule", {{"rule", line.rule}, {"message", line.message}});
      }
      if (!applied) {
        return failFlow(task, "Failed to finish inspection of node " + task.uuid() + ": " +
                                  applied.error().message);
      }
      if (view.changed) {
        task.node.setText(kNodeProperties, dumpJson(view.properties));
        task.node.setText(kNodeExtra, dumpJson(view.extra));
        task.driverInfo = view.driverInfo;
        task.node.setText(kNodeDriverInfo, dumpJson(view.driverInfo));
        task.instanceInfo = view.instanceInfo;
        extra.set(kNodeExtra).set(kNodeDriverInfo).set(kNodeInstanceInfo);
        for (const auto& [name, field] : kRuleAttributes) {
          auto v = valueFromJson(view.attributes.value(name, json()), nodeSchema()[field]);
          if (!v) {
            return failFlow(task, "Failed to finish inspection of node " + task.uuid() +
                                      ": an inspection rule set " + name + ": " + v.error().message);
          }
          if (!(*v == task.node[field])) {
            task.node[field] = std::move(*v);
            extra.set(field);
          }
        }
        if (view.traits != task.traits) {
          auto normalized = normalizeTraits(view.traits, task.uuid());
          if (!normalized) {
            return failFlow(task, "Failed to finish inspection of node " + task.uuid() + ": " +
                                      normalized.error().message);
          }
          traits = std::move(*normalized);
        }
      }
      for (size_t i = 0; i < view.ports.size(); ++i) {
        if (!view.ports[i].changed) continue;
        Record port = task.ports[i];
        FieldMask changed;
        for (const auto& [name, field] : kRulePortFields) {
          auto v = valueFromJson(view.ports[i].fields.value(name, json()), portSchema[field]);
          if (!v) {
            return failFlow(task, "Failed to finish inspection of node " + task.uuid() +
                                      ": an inspection rule set port " + port.uuid() + " " + name +
                                      ": " + v.error().message);
          }
          if (!(*v == port[field])) {
            port[field] = std::move(*v);
            changed.set(field);
          }
        }
        if (changed.any()) changedPorts.emplace_back(std::move(port), changed);
      }
    }
  }
  // As Ironic's node_update_cache, before its "done" event: while the node is still held.
  cacheFirmwareComponents(task, deps_.storage, deps_.clock);
  task.node.setText(kNodeInspectionFinishedAt, formatIsoTime(deps_.clock.now()));
  tasks_.transition(task, "done");
  task.node.setNull(kNodeTargetProvisionState);
  // The node is given up in the transaction that stores the inspection.
  const std::string now = formatIsoTime(deps_.clock.now());
  KILN_TRY_VOID(tasks_.saveReleasing(task, extra, nullptr, [&](Transaction& tx) -> Result<void> {
    if (data) KILN_TRY_VOID(storeNodeInventory(tx, task.node.id(), *data, now));
    if (traits) KILN_TRY_VOID(tx.traits().set(task.node.id(), *traits));
    // Ports were read in an earlier transaction: only the columns the rules changed are
    // written, so an API change to a port's other fields meanwhile is kept.
    for (auto& [port, changed] : changedPorts) {
      port.setText(kPortUpdatedAt, now);
      changed.set(kPortUpdatedAt);
      KILN_TRY_VOID(tx.ports().updateFields(port, changed));
    }
    return {};
  }));
  return Next::Stop;
}

}  // namespace kiln::server

namespace kiln::server {

Result<json> Conductor::continueInspection(const json& inventory, const std::vector<std::string>& macs,
                                           const std::string& nodeUuid) {
  // The node is found (and, on a new ramdisk session, its agent token issued) as a lookup does.
  json answer = KILN_TRY(lookup(macs, nodeUuid));
  const std::string uuid = answer["node"].value("uuid", "");
  bool mine = true;
  {
    auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
    TaskContext task = KILN_TRY(tasks_.load(*tx, uuid));
    const std::string s = task.node.str(kNodeProvisionState);
    if (s != state::kInspectWait) {
      return conflict("Node " + uuid + " is not waiting for inspection data (provision state \"" +
                      s + "\").");
    }
    KILN_TRY_VOID(NodeLock::checkFree(task.node));
    mine = registry_.owns(task.node);
    task.internalInfo[agent::kInventory] = inventory;
    task.internalInfo[flow::kAgentInspecting] = true;
    task.internalInfo.erase(agent::kWaiting);
    KILN_TRY_VOID(markResumed(task, true));
    KILN_TRY_VOID(tasks_.save(*tx, task));
    KILN_TRY_VOID(tx->commit());
  }
  startFlow(adoptLock(uuid, "inspection data"), mine);
  return answer;
}

}  // namespace kiln::server
