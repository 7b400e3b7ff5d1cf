#include "server/api/node_view.h"

#include "server/api/common.h"
#include "server/model/node.h"
#include "shared/core/secrets.h"
#include "server/model/versions.h"

namespace kiln::server {

FieldMask nodeDetailMask(int version) { return visibleFields(nodeSchema(), version); }

void renderNode(JsonWriter& w, const NodeViewContext& view, const Record& node,
                const FieldMask& mask, const std::vector<std::string>* traits) {
  const int version = view.ctx.version;
  const std::string& base = view.ctx.baseUrl;
  std::string path;
  path.reserve(48);
  path.append("nodes/").append(node.uuid());
  renderRecord(w, nodeSchema(), node, mask, [&](JsonWriter& out, size_t field) {
    switch (field) {
      case kNodeProvisionState: {
        const std::string& state = node.str(kNodeProvisionState);
        if (version < ver::k2AvailableState && state == "available") {
          out.null();
        } else if (version < ver::k39InspectWait && state == "inspect wait") {
          out.string("inspecting");
        } else {
          out.string(state);
        }
        return true;
      }
      // Secret masking (shared/core/secrets.h). clean_step and deploy_step carry step
      // arguments, which may be passwords.
      case kNodeDriverInfo:
      case kNodeDriverInternalInfo:
      case kNodeCleanStep:
      case kNodeDeployStep:
        out.raw(node[field].isNull() ? "{}" : maskSecrets(node.str(field)));
        return true;
      case kNodeInstanceInfo:
        out.raw(node[field].isNull() ? "{}" : maskInstanceInfo(node.str(field)));
        return true;
      case kNodeProperties:
      case kNodeExtra:
      case kNodeRaidConfig:
      case kNodeTargetRaidConfig:
      case kNodeNetworkData:
        if (node[field].isNull()) return false;
        out.raw(maskUrlCredentials(node.str(field)));
        return true;
      case kNodeLastError:
      case kNodeMaintenanceReason:
        if (node[field].isNull()) return false;
        out.string(maskUrlsInText(node.str(field)));
        return true;
      case kNodeTraits:
        out.beginArray();
        if (traits) {
          for (const auto& t : *traits) out.string(t);
        }
        out.endArray();
        return true;
      case kNodeConductor:
        out.string(view.conductors.ownerOf(node));
        return true;
      case kNodeLinks: writeLinks(out, base, path); return true;
      case kNodePorts: writeLinks(out, base, path, "/ports"); return true;
      case kNodeStates: writeLinks(out, base, path, "/states"); return true;
      case kNodePortgroups: writeLinks(out, base, path, "/portgroups"); return true;
      case kNodeVolume: writeLinks(out, base, path, "/volume"); return true;
      default: return false;
    }
  });
}

}  // namespace kiln::server
