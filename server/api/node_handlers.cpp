#include "server/api/node_handlers.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/api/handler_support.h"
#include "server/api/node_view.h"
#include "server/conductor/node_lock.h"
#include "server/drivers/raid_validation.h"
#include "server/model/bios_setting.h"
#include "server/model/node.h"
#include "server/model/node_history.h"
#include "server/model/provision_state.h"
#include "server/model/trait.h"
#include "server/storage/queries/node_events.h"
#include "shared/core/secrets.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"
#include "shared/raid/raid_config.h"
#include "server/model/versions.h"

namespace kiln::server {
namespace {

using Mode = Storage::Mode;

ListOptions nodeListOptions(bool detailPath, int maxLimit) {
  ListOptions opts;
  opts.collection = "nodes";
  opts.invalidSortKeys = {"properties", "driver_info", "extra", "instance_info",
                          "driver_internal_info", "clean_step", "deploy_step", "raid_config",
                          "target_raid_config", "traits", "network_data"};
  opts.detailPath = detailPath;
  opts.detailSince = ver::k43EnableDetailQuery;
  opts.fieldsSince = ver::k8FetchingSubsetOfFields;
  opts.maxLimit = maxLimit;
  return opts;
}

/// Ironic's node controller reads some values of a PATCH before applying it and refuses a
/// null network_data (validate_network_data), parent_node (authorize_node_link_patch) or name
/// (_check_names_acceptable) in its own words, in that order. The node's field table refuses
/// the three too (kNullRefusedOnPatch); these are the messages.
Result<void> refuseNullPatchValues(const Patch& patch, const std::string& ident) {
  auto nulled = [&](std::string_view path) {
    for (size_t i = 0; i < patch.ops.size(); ++i) {
      if (patch.ops[i].path == path && patch.ops[i].op != "remove" && patch.values[i].is_null()) {
        return true;
      }
    }
    return false;
  };
  if (nulled("/network_data")) {
    return invalid("Invalid network_data: None is not of type 'object' ");
  }
  if (nulled("/parent_node")) {
    return invalid(
        "Unable to apply the requested parent_node 'None'. Requested value was invalid.");
  }
  if (nulled("/name")) {
    return invalid("Node " + ident + ": Cannot change name to invalid name 'None'");
  }
  return {};
}

Result<void> validateConductorGroup(Record& node) {
  if (node[kNodeConductorGroup].isNull()) {
    node.setText(kNodeConductorGroup, "");
    return {};
  }
  std::string group = node.str(kNodeConductorGroup);
  for (auto& c : group) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) {
      return invalid("Invalid conductor_group '" + node.str(kNodeConductorGroup) +
                     "': only letters, digits, '_', '-' and '.' are allowed");
    }
    c = asciiLower(c);
  }
  node.setText(kNodeConductorGroup, group);
  return {};
}

Result<void> requireUuidField(Record& node, size_t field, std::string_view name) {
  if (node[field].isNull()) return {};
  if (!isUuidLike(node.str(field))) {
    return invalid("Expected UUID for " + std::string(name) + ": " + node.str(field));
  }
  node.setText(field, normalizeUuid(node.str(field)));
  return {};
}

/// Adds the list filters of the request to `query`. Unknown parameters are ignored, as in Ironic.
Result<void> addNodeFilters(const RequestContext& ctx, const ConductorRegistry& conductors,
                            const DriverRegistry& drivers, ListQuery& query) {
  auto eq = [&](size_t field, std::string value) {
    query.filters.push_back({ListFilter::Op::Equals, static_cast<int>(field), Value::text(std::move(value)), {}});
  };
  auto flag = [&](size_t field, bool value) {
    query.filters.push_back({ListFilter::Op::Equals, static_cast<int>(field), Value::boolean(value), {}});
  };
  for (const auto& [key, value] : ctx.request.query) {
    if (key == "associated") {
      const bool v = KILN_TRY(parseBool("associated", value));
      query.filters.push_back({v ? ListFilter::Op::IsNotNull : ListFilter::Op::IsNull,
                               kNodeInstanceUuid, {}, {}});
    } else if (key == "maintenance") {
      flag(kNodeMaintenance, KILN_TRY(parseBool("maintenance", value)));
    } else if (key == "retired") {
      KILN_TRY_VOID(requireVersion(ctx, ver::k61NodeRetired));
      flag(kNodeRetired, KILN_TRY(parseBool("retired", value)));
    } else if (key == "provision_state") {
      KILN_TRY_VOID(requireVersion(ctx, ver::k9ProvisionStateFilter));
      if (!state::isValid(value)) return invalid("Provision state \"" + value + "\" is not valid");
      eq(kNodeProvisionState, value);
    } else if (key == "driver") {
      KILN_TRY_VOID(requireVersion(ctx, ver::k16DriverFilter));
      eq(kNodeDriver, value);
    } else if (key == "resource_class") {
      KILN_TRY_VOID(requireVersion(ctx, ver::k21ResourceClass));
      eq(kNodeResourceClass, value);
    } else if (key == "fault") {
      KILN_TRY_VOID(requireVersion(ctx, ver::k42Fault));
      if (value != "power failure" && value != "clean failure" && value != "rescue abort failure") {
        return invalid("Unrecognized fault \"" + value +
                       "\" is specified, allowed faults are power failure, clean failure, "
                       "rescue abort failure");
      }
      eq(kNodeFault, value);
    } else if (key == "conductor_group") {
      KILN_TRY_VOID(requireVersion(ctx, ver::k46NodeConductorGroup));
      eq(kNodeConductorGroup, asciiLower(value));
    } else if (key == "conductor") {
      KILN_TRY_VOID(requireVersion(ctx, ver::k49Conductors));
      // Nodes of the enabled hardware types, when `value` is a live conductor; the page is
      // then narrowed to the nodes it owns (listNodes), as Ironic filters its page.
      ListFilter f{ListFilter::Op::In, kNodeDriver, {}, {}};
      const auto live = conductors.liveConductors();
      if (std::find(live.begin(), live.end(), value) != live.end()) {
        for (const auto& hw : drivers.hardwareTypes()) f.values.push_back(hw.name);
      }
      if (f.values.empty()) f.values.push_back("");
      query.filters.push_back(std::move(f));
    } else if (key == "owner") {
      KILN_TRY_VOID(requireVersion(ctx, ver::k50NodeOwner));
      eq(kNodeOwner, value);
    } else if (key == "lessee") {
      KILN_TRY_VOID(requireVersion(ctx, ver::k65NodeLessee));
      eq(kNodeLessee, value);
    } else if (key == "description_contains") {
      KILN_TRY_VOID(requireVersion(ctx, ver::k51NodeDescription));
      query.filters.push_back({ListFilter::Op::Contains, kNodeDescription, Value::text(value), {}});
    } else if (key == "name_contains") {
      // Kiln extension (the web console's search), any version: a substring of the name,
      // case-insensitive as description_contains.
      query.filters.push_back({ListFilter::Op::Contains, kNodeName, Value::text(value), {}});
    } else if (key == "shard") {
      KILN_TRY_VOID(requireVersion(ctx, ver::k82NodeShard));
      ListFilter f{ListFilter::Op::In, kNodeShard, {}, {}};
      for (auto& shard : splitCommaList(value)) f.values.push_back(std::move(shard));
      if (f.values.empty()) return invalid("The shard filter needs at least one shard");
      query.filters.push_back(std::move(f));
    } else if (key == "sharded") {
      KILN_TRY_VOID(requireVersion(ctx, ver::k82NodeShard));
      const bool v = KILN_TRY(parseBool("sharded", value));
      query.filters.push_back(
          {v ? ListFilter::Op::IsNotNull : ListFilter::Op::IsNull, kNodeShard, {}, {}});
    } else if (key == "include_children" || key == "parent_node") {
      KILN_TRY_VOID(requireVersion(ctx, ver::k83ParentChildNodes));  // applied below
    } else if (key == "instance_name") {
      KILN_TRY_VOID(requireVersion(ctx, ver::k104NodeInstanceName));
      eq(kNodeInstanceName, value);
    } else if (key == "chassis_uuid") {
      eq(kNodeChassisUuid, normalizeUuid(value));
    } else if (key == "instance_uuid") {
      eq(kNodeInstanceUuid, normalizeUuid(value));
    } else if (key == "traits" || key == "not-traits" || key == "traits-any" ||
               key == "not-traits-any") {
      // The node traits spec's filters (Ironic never built them).
      KILN_TRY_VOID(requireVersion(ctx, ver::k37NodeTraits));
      auto traits = splitCommaList(value);
      if (traits.empty()) return invalid("The " + key + " filter needs at least one trait");
      for (const auto& t : traits) KILN_TRY_VOID(validateTrait(t, "Invalid trait in " + key + " filter"));
      ListFilter::Op op = key == "traits"       ? ListFilter::Op::TraitsAll
                          : key == "not-traits" ? ListFilter::Op::NotTraitsAll
                          : key == "traits-any" ? ListFilter::Op::TraitsAny
                                                : ListFilter::Op::NotTraitsAny;
      query.filters.push_back({op, kNodeId, {}, std::move(traits)});
    } else {
      // The driver composition spec's <interface>_interface filters.
      for (const auto& info : kInterfaceTypes) {
        if (key == info.nodeField) {
          KILN_TRY_VOID(requireVersion(ctx, info.since));
          eq(nodeInterfaceField(info.type), value);
        }
      }
    }
  }
  // Child nodes (1.83) are left out of every list, at every version, unless the request asks
  // for them with include_children=true or names their parent_node (Ironic's node query).
  const auto includeChildren = ctx.request.param("include_children");
  const bool children = includeChildren && KILN_TRY(parseBool("include_children", *includeChildren));
  if (!children) {
    if (auto parent = ctx.request.param("parent_node")) {
      eq(kNodeParentNode, isUuidLike(*parent) ? normalizeUuid(*parent) : *parent);
    } else {
      query.filters.push_back({ListFilter::Op::IsNull, kNodeParentNode, {}, {}});
    }
  }
  return {};
}

/// What a node PATCH means for the node's allocation (Ironic's update_node and node PATCH):
/// removing the instance_uuid of an allocated node deletes the allocation (only in the states
/// where the driver may change, or in maintenance), and the owner of a node whose allocation
/// has an owner cannot change.
Result<void> applyAllocationRules(Transaction& tx, const Record& before, Record& node) {
  if (before[kNodeAllocationUuid].isNull()) return {};
  auto allocation = KILN_TRY(tx.allocations().findBy(kAllocUuid, before[kNodeAllocationUuid]));
  if (!allocation) {
    node.setNull(kNodeAllocationUuid);  // a dangling reference: nothing to keep in step
    return {};
  }
  if (node[kNodeOwner] != before[kNodeOwner] && !(*allocation)[kAllocOwner].isNull()) {
    return conflict("Cannot update owner of node \"" + before.uuid() +
                    "\" while it is allocated to an allocation with an owner.");
  }
  if (!before[kNodeInstanceUuid].isNull() && node[kNodeInstanceUuid].isNull()) {
    const std::string& s = before.str(kNodeProvisionState);
    if (!before.flag(kNodeMaintenance) && !state::driverChangeAllowed(s)) {
      return conflict("Node " + before.uuid() + " with an allocation can not have instance_uuid "
                      "removed unless it is in one of allowed (enroll, inspecting, inspect wait, "
                      "manageable, available) states or in maintenance mode.");
    }
    KILN_TRY_VOID(tx.allocations().remove(allocation->id()));
    node.setNull(kNodeAllocationUuid);
  }
  return {};
}

}  // namespace

Result<void> findNodeInto(Transaction& tx, const RequestContext& ctx, const std::string& ident,
                          Record& out) {
  if (isUuidLike(ident)) {
    if (KILN_TRY(tx.nodes().findInto(kNodeUuid, Value::text(normalizeUuid(ident)), out))) return {};
  } else if (ctx.atLeast(ver::k5NodeName)) {
    if (!validateNodeName(ident)) {
      return invalid("Expected a logical name or UUID but received " + ident + ".");
    }
    if (KILN_TRY(tx.nodes().findInto(kNodeName, Value::text(ident), out))) return {};
  }
  return notFound("Node " + ident + " could not be found.");
}

Result<Record> findNode(Transaction& tx, const RequestContext& ctx, const std::string& ident) {
  Record node;
  KILN_TRY_VOID(findNodeInto(tx, ctx, ident, node));
  return node;
}

Error uniqueViolation(const Error& error, std::string_view resource, const Record& record,
                      const Schema& schema, const UniqueWording& special) {
  if (!error.is(Reason::UniqueViolation)) return error;
  const std::string& column = error.subject;
  const auto conflict = [&](std::string message) {
    return Error{ErrorCode::AlreadyExists, std::move(message), Reason::UniqueViolation, column};
  };
  if (special) {
    if (auto worded = special(column)) return conflict(std::move(*worded));
  }
  const int idx = schema.indexOf(column);
  const std::string value = idx >= 0 ? record.str(static_cast<size_t>(idx)) : "";
  const std::string what = std::string(std::string_view("aeiou").find(resource.front()) !=
                                               std::string_view::npos
                                           ? "An "
                                           : "A ") +
                           std::string(resource);
  if (column == "uuid") return conflict(what + " with UUID " + value + " already exists.");
  if (column == "name") return conflict(what + " with name " + value + " already exists.");
  if (column == "address") return conflict(what + " with MAC address " + value + " already exists.");
  if (column == "instance_uuid") {
    return conflict("Instance " + value +
                    " is already associated with a node, it cannot be associated with this "
                    "other node " +
                    record.uuid());
  }
  return conflict(what + " with this " + column + " already exists.");
}

std::string NodeHandlers::renderFull(const RequestContext& ctx, Transaction& tx, const Record& node) {
  auto traits = tx.traits().get(node.id());
  const std::vector<std::string> empty;
  JsonWriter w;
  NodeViewContext view{ctx, deps_.conductor.registry()};
  renderNode(w, view, node, nodeDetailMask(ctx.version), traits ? &*traits : &empty);
  return w.take();
}

Result<ApiResponse> NodeHandlers::list(RequestContext& ctx) { return listNodes(ctx, false, std::nullopt); }
Result<ApiResponse> NodeHandlers::listDetail(RequestContext& ctx) { return listNodes(ctx, true, std::nullopt); }

Result<ApiResponse> NodeHandlers::listForChassis(RequestContext& ctx, bool detail) {
  const std::string& ident = ctx.param(0);
  if (!isUuidLike(ident)) return invalid("Expected UUID for chassis_uuid: " + ident);
  return listNodes(ctx, detail, normalizeUuid(ident));
}

Result<ApiResponse> NodeHandlers::listNodes(RequestContext& ctx, bool detailPath,
                                            std::optional<std::string> chassisUuid) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    ListOptions opts = nodeListOptions(detailPath, deps_.config.maxLimit);
    ListRequest list = KILN_TRY(parseListRequest(ctx, tx.nodes(), opts));
    KILN_TRY_VOID(addNodeFilters(ctx, deps_.conductor.registry(), deps_.drivers, list.query));
    if (chassisUuid) {
      auto chassis = KILN_TRY(tx.chassis().findBy(1, Value::text(*chassisUuid)));
      if (!chassis) return notFound("Chassis " + *chassisUuid + " could not be found.");
      opts.nextPath = "chassis/" + *chassisUuid + "/nodes" + (detailPath ? "/detail" : "");
      list.query.filters.push_back({ListFilter::Op::Equals, kNodeChassisUuid, Value::text(*chassisUuid), {}});
    }
    if (list.detail) {
      // /detail shows the link fields too; ?fields never does.
      list.mask |= nodeDetailMask(ctx.version);
    }
    // The page's rows are read into records this thread keeps: their strings keep their
    // capacity from one page to the next, so reading a page allocates nothing once warm.
    // Kept only up to 200 records (a page of 1000 would otherwise hold ~3 MB per thread).
    thread_local std::vector<Record> pageRecords;
    auto& nodes = pageRecords;
    struct Trim {
      std::vector<Record>& v;
      ~Trim() {
        if (v.size() > 200) {
          v.resize(200);
          v.shrink_to_fit();
        }
      }
    } trim{nodes};
    KILN_TRY_VOID(tx.nodes().listInto(list.query, nodes));
    if (auto owner = ctx.request.param("conductor")) {
      std::erase_if(nodes, [&](const Record& n) {
        return deps_.conductor.registry().ownerOf(n) != *owner;
      });
    }
    std::unordered_map<int64_t, std::vector<std::string>> traits;
    if (list.mask.test(kNodeTraits)) {
      std::vector<int64_t> ids;
      ids.reserve(nodes.size());
      for (const auto& n : nodes) ids.push_back(n.id());
      traits = KILN_TRY(tx.traits().getMany(ids));
    }
    NodeViewContext view{ctx, deps_.conductor.registry()};
    std::string body = renderCollection(ctx, opts, list, nodes, [&](JsonWriter& w, const Record& n) {
      auto it = traits.find(n.id());
      renderNode(w, view, n, list.mask, it == traits.end() ? nullptr : &it->second);
    });
    return jsonResponse(200, std::move(body));
  });
}

Result<ApiResponse> NodeHandlers::show(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    // The hot GET path: the node is read into a record this thread keeps, whose strings keep
    // their capacity from one request to the next.
    thread_local Record node;
    KILN_TRY_VOID(findNodeInto(tx, ctx, ctx.param(0), node));
    const FieldMask mask = KILN_TRY(showFields(ctx, nodeSchema()));
    std::vector<std::string> traits;
    if (mask.test(kNodeTraits)) traits = KILN_TRY(tx.traits().get(node.id()));
    JsonWriter w;
    NodeViewContext view{ctx, deps_.conductor.registry()};
    renderNode(w, view, node, mask, &traits);
    return jsonResponse(200, w.take());
  });
}

Result<void> NodeHandlers::resolveInterfaces(Record& node, const Record* before,
                                             bool resetInterfaces, const Patch* patch) {
  const std::string& driver = node.str(kNodeDriver);
  const EnabledHardwareType* hw = deps_.drivers.find(driver);
  if (!hw) return invalid(DriverRegistry::unknownDriverMessage(driver));
  const bool driverChanged = before && before->str(kNodeDriver) != driver;
  for (const auto& info : kInterfaceTypes) {
    const auto field = nodeInterfaceField(info.type);
    const bool touched = patch && patchTouches(*patch, info.nodeField);
    const bool reset = before && driverChanged && resetInterfaces && !touched;
    if (node[field].isNull() || node.str(field).empty() || reset) {
      node.setText(field, KILN_TRY(deps_.drivers.defaultInterface(*hw, info.type)));
      continue;
    }
    KILN_TRY_VOID(deps_.drivers.checkInterface(*hw, info.type, node.str(field)));
  }
  return {};
}

Result<void> NodeHandlers::checkCommonFields(Transaction& tx, Record& node, const std::string& ident,
                                             bool creating) {
  KILN_TRY_VOID(requireUuidField(node, kNodeInstanceUuid, "instance_uuid"));
  KILN_TRY_VOID(requireUuidField(node, kNodeChassisUuid, "chassis_uuid"));
  if (!node[kNodeChassisUuid].isNull()) {
    auto chassis = KILN_TRY(tx.chassis().findBy(1, node[kNodeChassisUuid]));
    if (!chassis) return invalid("Chassis " + node.str(kNodeChassisUuid) + " could not be found.");
  }
  KILN_TRY_VOID(validateConductorGroup(node));
  if (!node[kNodeName].isNull()) {
    KILN_TRY_VOID(validateNodeName(node.str(kNodeName), creating ? std::string_view() : ident));
  }
  if (node[kNodeDriver].isNull() || node.str(kNodeDriver).empty()) {
    return invalid("Schema error for " + std::string(creating ? "node" : "patch") +
                   ": 'driver' is a required property");
  }
  if (!node[kNodeTargetRaidConfig].isNull() && node.str(kNodeTargetRaidConfig) != "{}") {
    auto parsed = parseJson(node.str(kNodeTargetRaidConfig));
    if (parsed) KILN_TRY(parseRaidConfig(*parsed));
  }
  if (creating && !node.flag(kNodeRetired) && !node[kNodeRetiredReason].isNull()) {
    return invalid("The retired_reason field can only be set when retired is True");
  }
  if (!node[kNodeInstanceName].isNull() && node.str(kNodeInstanceName).empty()) {
    return invalid("Schema error for " + std::string(creating ? "node" : "patch") +
                   ": instance_name: '' is too short");
  }
  // parent_node (1.83): a node's name or UUID, stored as the UUID. As Ironic, a parent that
  // does not exist, is the node itself or has another owner gets one message, so that the
  // answer does not disclose which nodes exist.
  if (!node[kNodeParentNode].isNull()) {
    const std::string requested = node.str(kNodeParentNode);
    Record parent;
    const bool found = isUuidLike(requested)
                           ? KILN_TRY(tx.nodes().findInto(
                                 kNodeUuid, Value::text(normalizeUuid(requested)), parent))
                           : isValidLogicalName(requested) &&
                                 KILN_TRY(tx.nodes().findInto(kNodeName, Value::text(requested), parent));
    if (!found || parent.uuid() == node.uuid() || parent[kNodeOwner] != node[kNodeOwner]) {
      return invalid("Unable to apply the requested parent_node '" + requested +
                     "'. Requested value was invalid.");
    }
    node.setText(kNodeParentNode, parent.uuid());
  }
  return {};
}

Result<ApiResponse> NodeHandlers::create(RequestContext& ctx) {
  Json body = KILN_TRY(parseJsonBody(ctx));
  Record node = KILN_TRY(recordFromBody(nodeSchema(), body, ctx.version, {"driver"}, "node",
                                          NewerFields::IronicNode));
  KILN_TRY_VOID(assignUuid(node));
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    node.setText(kNodeProvisionState,
                 std::string(ctx.atLeast(ver::k11EnrollState) ? state::kEnroll : state::kAvailable));
    node.setBool(kNodeProtected, false);
    if (node[kNodeMaintenance].isNull()) node.setBool(kNodeMaintenance, false);
    if (node[kNodeConsoleEnabled].isNull()) node.setBool(kNodeConsoleEnabled, false);
    if (node[kNodeRetired].isNull()) node.setBool(kNodeRetired, false);
    KILN_TRY_VOID(checkCommonFields(tx, node, node.uuid(), true));
    KILN_TRY_VOID(resolveInterfaces(node, nullptr, false, nullptr));
    node.setText(kNodeCreatedAt, timestamp(deps_));
    auto inserted = tx.nodes().insert(node);
    if (!inserted) return std::unexpected(uniqueViolation(inserted.error(), "node", node, nodeSchema()));
    ApiResponse r = jsonResponse(201, renderFull(ctx, tx, *inserted));
    setLocation(r, ctx.baseUrl, "nodes/" + inserted->uuid());
    deps_.log.info("node created", {{"node", inserted->uuid()}, {"driver", inserted->str(kNodeDriver)}});
    return r;
  });
}

Result<ApiResponse> NodeHandlers::update(RequestContext& ctx) {
  Json body = KILN_TRY(parseJsonBody(ctx));
  Patch patch = KILN_TRY(parsePatch(body));
  if (patchTouches(patch, "traits")) {
    return invalid("Cannot update node traits via node patch. Node traits should be updated via "
                   "the node traits API.");
  }
  bool resetInterfaces = false;
  if (auto reset = ctx.request.param("reset_interfaces")) {
    KILN_TRY_VOID(requireVersion(ctx, ver::k45ResetInterfaces));
    resetInterfaces = KILN_TRY(parseBool("reset_interfaces", *reset));
    if (resetInterfaces && !patchTouches(patch, "driver")) {
      return invalid("The reset_interfaces parameter can only be used when changing the node's driver.");
    }
  }
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    const std::string& ident = ctx.param(0);
    Record before = KILN_TRY(findNode(tx, ctx, ident));
    const std::string& provState = before.str(kNodeProvisionState);
    const bool removeInstanceOnly = patch.ops.size() == 1 && patch.ops[0].op == "remove" &&
                                    patch.ops[0].path == "/instance_uuid";
    if (!(removeInstanceOnly && before.flag(kNodeMaintenance))) {
      if (!before[kNodeTargetProvisionState].isNull() && !state::updateAllowedInTransition(provState)) {
        return conflict("Node " + ident + " can not be updated while a state transition is in progress.");
      }
      if (ctx.atLeast(ver::k39InspectWait) && provState == state::kInspecting) {
        return conflict("Cannot update node \"" + before.uuid() + "\" while it is in state \"inspecting\".");
      }
    }
    KILN_TRY_VOID(checkPatchPaths(nodeSchema(), patch, ctx.version, NewerFields::IronicNode));
    KILN_TRY_VOID(refuseNullPatchValues(patch, ident));
    Record node = KILN_TRY(patchRecord(nodeSchema(), before, patch, ctx.version,
                                           NewerFields::IronicNode));
    KILN_TRY_VOID(checkCommonFields(tx, node, ident, false));
    // Ironic's _update_changed_fields: taking a node out of its chassis needs 1.25.
    if (!ctx.atLeast(ver::k25UnsetChassisUuid) && !before[kNodeChassisUuid].isNull() &&
        node[kNodeChassisUuid].isNull()) {
      return fail(ErrorCode::NotAcceptable, "Request not acceptable.");
    }

    bool interfacesChanged = false;
    for (const auto& info : kInterfaceTypes) {
      interfacesChanged = interfacesChanged || patchTouches(patch, info.nodeField);
    }
    const bool driverChanged = node.str(kNodeDriver) != before.str(kNodeDriver);
    if (driverChanged || interfacesChanged) {
      const bool allowed = state::driverChangeAllowed(provState) ||
                           (!driverChanged && before.flag(kNodeMaintenance));
      if (!allowed) {
        return conflict("Node " + before.uuid() + " cannot change its driver or hardware "
                        "interfaces while in provision state \"" + provState +
                        "\". Allowed states: enroll, inspecting, inspect wait, manageable, "
                        "available" + std::string(driverChanged ? "" : " (or in maintenance)"));
      }
      if (driverChanged && before.flag(kNodeConsoleEnabled)) {
        return conflict("Node " + ident + " can not update the driver while the console is "
                        "enabled. Please stop the console first.");
      }
      KILN_TRY_VOID(resolveInterfaces(node, &before, resetInterfaces, &patch));
    }
    // Ironic's update_node takes the node's lock here, after the state checks above.
    KILN_TRY_VOID(NodeLock::checkFree(before));
    if (node[kNodeResourceClass] != before[kNodeResourceClass] && !before[kNodeResourceClass].isNull() &&
        !state::driverChangeAllowed(provState)) {
      return conflict("Node " + before.uuid() + " can not have resource_class updated unless it "
                      "is in one of allowed (enroll, inspecting, inspect wait, manageable, "
                      "available) states.");
    }
    if (!before[kNodeInstanceUuid].isNull() && !node[kNodeInstanceUuid].isNull() &&
        node[kNodeInstanceUuid] != before[kNodeInstanceUuid]) {
      return conflict("Node " + before.uuid() + " is associated with instance " +
                      before.str(kNodeInstanceUuid) + ".");
    }
    KILN_TRY_VOID(applyAllocationRules(tx, before, node));
    // Protected and retired carry reasons only while set.
    if (patchTouches(patch, "protected_reason") && !node.flag(kNodeProtected) &&
        !node[kNodeProtectedReason].isNull()) {
      return invalid("The protected_reason field can only be set when protected is True");
    }
    if (patchTouches(patch, "protected") && node.flag(kNodeProtected) &&
        provState != state::kActive && provState != state::kRescue) {
      return conflict("Node " + before.uuid() +
                      " can only be made protected in provision states 'active' or 'rescue', the "
                      "current state is '" + provState + "'");
    }
    if (node.flag(kNodeRetired) && !before.flag(kNodeRetired) && provState == state::kAvailable) {
      // Ironic's _check_update_retired: an available node would be scheduled meanwhile.
      return conflict("Node " + before.uuid() + " can not have 'retired' set in provision state "
                      "'available', the current state is '" + provState + "'");
    }
    if (patchTouches(patch, "retired_reason") && !node.flag(kNodeRetired) &&
        !node[kNodeRetiredReason].isNull()) {
      return invalid("The retired_reason field can only be set when retired is True");
    }
    // 1.104: a change of instance_info names the instance after its display_name when the
    // node has no instance_name yet (Ironic's update_node).
    if (patchTouches(patch, "instance_info") && node[kNodeInstanceName].isNull()) {
      const Json info = objectField(node, kNodeInstanceInfo);
      if (auto it = info.find("display_name");
          it != info.end() && it->is_string() && !it->get_ref<const std::string&>().empty()) {
        node.setText(kNodeInstanceName, it->get<std::string>().substr(0, 255));
      }
    }
    if (!node.flag(kNodeMaintenance)) node.setNull(kNodeMaintenanceReason);
    if (!node.flag(kNodeProtected)) node.setNull(kNodeProtectedReason);
    if (!node.flag(kNodeRetired)) node.setNull(kNodeRetiredReason);
    if (node.str(kNodeUuid) != before.str(kNodeUuid)) return internalError("uuid changed by patch");
    node.setText(kNodeUpdatedAt, timestamp(deps_));
    auto updated = tx.nodes().update(node);
    if (!updated) return std::unexpected(uniqueViolation(updated.error(), "node", node, nodeSchema()));
    return jsonResponse(200, renderFull(ctx, tx, node));
  });
}

Result<ApiResponse> NodeHandlers::remove(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    const std::string& ident = ctx.param(0);
    Record node = KILN_TRY(findNode(tx, ctx, ident));
    const bool maintenance = node.flag(kNodeMaintenance);
    const std::string& provState = node.str(kNodeProvisionState);
    if (!maintenance && !node[kNodeInstanceUuid].isNull()) {
      return conflict("Node " + node.uuid() + " is associated with instance " +
                      node.str(kNodeInstanceUuid) + ".");
    }
    if (node.flag(kNodeProtected)) return std::unexpected(nodeProtectedError(node.uuid()));
    std::vector<std::string> valid = {"manageable", "enroll", "adopt failed"};
    if (deps_.config.allowDeletingAvailableNodes) valid.emplace_back("available");
    if (!maintenance && std::find(valid.begin(), valid.end(), provState) == valid.end()) {
      std::string list;
      for (const auto& v : valid) list += (list.empty() ? "'" : ", '") + v + "'";
      return conflict("Can not delete node \"" + node.uuid() +
                      "\" while it is in provision state \"" + provState +
                      "\". Valid provision states to perform deletion are: \"(" + list +
                      ")\", or set the node into maintenance mode");
    }
    KILN_TRY_VOID(NodeLock::checkFree(node));
    // The node's allocations go with it (Ironic orphans nothing either).
    KILN_TRY(tx.allocations().removeWhere(kAllocNodeUuid, Value::text(node.uuid())));
    KILN_TRY(tx.ports().removeWhere(kPortNodeUuid, Value::text(node.uuid())));
    KILN_TRY(tx.portgroups().removeWhere(kPgNodeUuid, Value::text(node.uuid())));
    KILN_TRY(tx.volumeConnectors().removeWhere(kVcNodeUuid, Value::text(node.uuid())));
    KILN_TRY(tx.volumeTargets().removeWhere(kVtNodeUuid, Value::text(node.uuid())));
    KILN_TRY_VOID(tx.traits().clear(node.id()));
    // So do its history and cached BIOS settings.
    KILN_TRY(
        tx.records(Resource::NodeHistory).removeWhere(kHistNodeId, Value::integer(node.id())));
    KILN_TRY(
        tx.records(Resource::BiosSetting).removeWhere(kBiosNodeId, Value::integer(node.id())));
    KILN_TRY_VOID(deleteNodeEvents(tx, node.id()));  // and its event journal
    KILN_TRY_VOID(tx.nodes().remove(node.id()));
    deps_.log.info("node deleted", {{"node", node.uuid()}});
    return emptyResponse(204);
  });
}

Result<ApiResponse> NodeHandlers::setMaintenance(RequestContext& ctx) {
  std::optional<std::string> reason = ctx.request.param("reason");
  if (ctx.request.body.find_first_not_of(" \t\r\n") != std::string::npos) {
    Json body = KILN_TRY(parseJsonBody(ctx));
    if (!body.is_object()) return invalid("Expected a JSON object with an optional 'reason'");
    for (auto it = body.begin(); it != body.end(); ++it) {
      if (it.key() != "reason") return invalid("Unexpected arguments: " + it.key());
    }
    if (body.contains("reason")) {
      if (body["reason"].is_null()) {
        reason.reset();
      } else if (!body["reason"].is_string()) {
        return invalid("Expected string for reason: " + maskedDump(body["reason"]));
      } else {
        reason = body["reason"].get<std::string>();
      }
    }
  }
  if (reason && reason->size() > 255) {
    return invalid("Invalid input for field/attribute maintenance_reason. Value should have a "
                   "maximum character requirement of 255");
  }
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
    KILN_TRY_VOID(NodeLock::checkFree(node));
    node.setBool(kNodeMaintenance, true);
    if (reason) node.setText(kNodeMaintenanceReason, *reason); else node.setNull(kNodeMaintenanceReason);
    node.setText(kNodeUpdatedAt, timestamp(deps_));
    KILN_TRY_VOID(tx.nodes().update(node));
    ApiResponse r = emptyResponse(202);
    setLocation(r, ctx.baseUrl, "nodes/" + node.uuid() + "/maintenance");
    return r;
  });
}

Result<ApiResponse> NodeHandlers::clearMaintenance(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
    KILN_TRY_VOID(NodeLock::checkFree(node));
    node.setBool(kNodeMaintenance, false);
    node.setNull(kNodeMaintenanceReason);
    node.setText(kNodeUpdatedAt, timestamp(deps_));
    KILN_TRY_VOID(tx.nodes().update(node));
    ApiResponse r = emptyResponse(202);
    setLocation(r, ctx.baseUrl, "nodes/" + node.uuid() + "/maintenance");
    return r;
  });
}

Result<ApiResponse> NodeHandlers::states(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
    FieldMask mask;
    for (size_t f : {kNodeConsoleEnabled, kNodeLastError, kNodePowerState, kNodeProvisionState,
                     kNodeTargetPowerState, kNodeTargetProvisionState, kNodeProvisionUpdatedAt}) {
      mask.set(f);
    }
    if (ctx.atLeast(ver::k12RaidConfig)) mask.set(kNodeRaidConfig).set(kNodeTargetRaidConfig);
    if (ctx.atLeast(ver::k75NodeBootMode)) mask.set(kNodeBootMode).set(kNodeSecureBoot);
    JsonWriter w;
    NodeViewContext view{ctx, deps_.conductor.registry()};
    renderNode(w, view, node, mask, nullptr);
    return jsonResponse(200, w.take());
  });
}

Result<ApiResponse> NodeHandlers::setRaidConfig(RequestContext& ctx) {
  Json body = KILN_TRY(parseJsonBody(ctx));
  if (!body.is_object()) {
    return invalid("Expected types <class 'dict'> for target_raid_config: " + maskedRepr(body));
  }
  if (!body.empty()) KILN_TRY(parseRaidConfig(body));
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
    const std::string& raid = node.str(kNodeRaidInterface);
    const auto* impl = findImplementation(InterfaceType::Raid, raid);
    if (!impl || impl->noop) {
      return notFound("Driver " + node.str(kNodeDriver) +
                      " does not support raid (disabled or not implemented).");
    }
    KILN_TRY_VOID(NodeLock::checkFree(node));
    // What the node's RAID implementation cannot build is refused now, not when the step runs.
    if (!body.empty()) KILN_TRY_VOID(validateRaidConfigFor(raid, body));
    node.setText(kNodeTargetRaidConfig, dumpJson(body));
    node.setText(kNodeUpdatedAt, timestamp(deps_));
    KILN_TRY_VOID(tx.nodes().update(node));
    return emptyResponse(204);
  });
}

Result<ApiResponse> NodeHandlers::validate(RequestContext& ctx) { return validateNode(ctx, ctx.param(0)); }

Result<ApiResponse> NodeHandlers::validateByQuery(RequestContext& ctx) {
  auto ident = ctx.request.param("node");
  if (!ident) return invalid("Missing mandatory parameter: node");
  return validateNode(ctx, *ident);
}

Result<ApiResponse> NodeHandlers::validateNode(RequestContext& ctx, const std::string& ident) {
  const std::string uuid = KILN_TRY(nodeUuid(ctx, ident));
  auto results = KILN_TRY(deps_.conductor.validateNode(uuid));
  JsonWriter w;
  w.beginObject();
  for (const auto& v : results) {
    w.key(interfaceInfo(v.type).name);
    w.beginObject();
    w.key("result");
    w.boolean(v.result);
    if (v.reason) w.field("reason", maskUrlsInText(*v.reason));
    w.endObject();
  }
  w.endObject();
  return jsonResponse(200, w.take());
}

Result<std::string> NodeHandlers::nodeUuid(const RequestContext& ctx, const std::string& ident) {
  auto tx = KILN_TRY(deps_.storage.begin(Storage::Mode::Read));
  Record node = KILN_TRY(findNode(*tx, ctx, ident));
  return node.uuid();
}

}  // namespace kiln::server
