// Fuzz target json_patch (docs/fuzzing.md): a PATCH body (the input, as JSON text) parsed by
// parsePatch and applied by applyPatch to a node document shaped like the one the node
// handlers patch (recordToJson of a stored node). Neither may crash; a patch that applies
// leaves an object that serialises; an error is valid UTF-8 (it becomes an API answer) and
// never quotes the stored password unless the patch itself carries it.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/api/json_patch.h"
#include "shared/json/json_util.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

constexpr std::string_view kSecret = "Fuzz-Secret-5d41402a";

const kiln::Json& nodeDocument() {
  static const kiln::Json doc = kiln::Json::parse(R"({
    "uuid": "11111111-1111-4111-8111-111111111111", "name": "fuzz-node",
    "driver": "ipmi", "chassis_uuid": null, "owner": null, "lessee": null,
    "description": "rack 4, slot 2", "resource_class": "baremetal", "conductor_group": "",
    "driver_info": {"ipmi_address": "192.0.2.10", "ipmi_username": "admin",
                    "ipmi_password": "Fuzz-Secret-5d41402a", "deploy_kernel": "http://192.0.2.1/k",
                    "deploy_ramdisk": "http://192.0.2.1/r", "ipmi_port": 623},
    "properties": {"cpus": 8, "memory_mb": 32768, "local_gb": 400, "cpu_arch": "x86_64",
                   "capabilities": "boot_mode:uefi",
                   "root_device": {"serial": "S3Z9NB0K123456", "size": ">= 100"}},
    "instance_info": {"image_source": "http://192.0.2.1/img.qcow2", "image_checksum": "abc",
                      "root_gb": 10, "configdrive": {"meta_data": {"uuid": "x"}}},
    "extra": {"rack": "4", "tags": ["a", "b"], "nested": {"k": [1, {"x": null}]}},
    "target_raid_config": {"logical_disks": [{"size_gb": "MAX", "raid_level": "1",
                                              "is_root_volume": true}]},
    "maintenance": false, "maintenance_reason": null, "automated_clean": null,
    "protected": false, "protected_reason": null, "retired": false, "retired_reason": null,
    "boot_interface": "ipxe", "deploy_interface": "direct", "power_interface": "ipmitool",
    "network_data": {}, "instance_uuid": null, "parent_node": null, "shard": null
  })");
  return doc;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto body = kiln::parseJson(text);
  if (!body) return -1;  // the API answers malformed JSON before any patch code runs
  const bool carriesSecret = text.find(kSecret) != std::string_view::npos;
  auto checkError = [&](const kiln::Error& error) {
    if (!kiln::fuzz::isValidUtf8(error.message)) {
      kiln::fuzz::fail("a patch error is not valid UTF-8", error.message);
    }
    if (!carriesSecret && error.message.find(kSecret) != std::string::npos) {
      kiln::fuzz::fail("a patch error quotes the stored password", error.message);
    }
  };
  auto patch = kiln::server::parsePatch(*body);
  if (!patch) {
    checkError(patch.error());
    return 0;
  }
  kiln::Json doc = nodeDocument();
  auto applied = kiln::server::applyPatch(doc, *patch);
  if (!applied) {
    checkError(applied.error());
    return 0;
  }
  if (!doc.is_object()) kiln::fuzz::fail("a patch turned the document into a non-object", doc.dump());
  kiln::fuzz::checkJsonText(kiln::dumpJson(doc), "the patched document");
  return 0;
}
