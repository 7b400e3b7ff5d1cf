#include "agent/disk/block_device.h"

namespace kiln::agent {

nlohmann::json BlockDevice::toJson() const {
  return {{"name", name},     {"size", size},     {"model", model},   {"vendor", vendor},
          {"serial", serial}, {"wwn", wwn},       {"by_path", byPath}, {"rotational", rotational},
          {"supports_discard", supportsDiscard}, {"logical_block_size", logicalBlockSize}};
}

}  // namespace kiln::agent
