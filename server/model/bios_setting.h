// File: server/model/bios_setting.h
//
// Cached BIOS settings (API 1.40; registry fields 1.74): what the node's bios interface last
// reported (BiosInterface::cacheBiosSettings), one row per setting, kept in step by
// syncBiosSettings() the way Ironic's BIOSSettingList.sync_node_setting does. Read by
// GET /v1/nodes/{id}/bios[/{name}]; deleted with the node.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/model/record.h"
#include "server/model/resources.h"
#include "shared/core/error.h"
#include "shared/json/json_fwd.h"

namespace kiln::server {

class Transaction;

/// Order must match kBiosSettingFields in bios_setting.cpp. Unlike other resources, field 1 is
/// the setting's name (a setting has no UUID). The column of Ironic's `unique` is `is_unique`
/// (UNIQUE is an SQL keyword); the API renders it as "unique".
enum BiosSettingField : size_t {
  kBiosId,
  kBiosName,
  kBiosNodeId,
  kBiosValue,
  kBiosAttributeType,
  kBiosAllowableValues,
  kBiosLowerBound,
  kBiosMaxLength,
  kBiosMinLength,
  kBiosReadOnly,
  kBiosResetRequired,
  kBiosUnique,
  kBiosUpperBound,
  kBiosCreatedAt,
  kBiosUpdatedAt
};

const Schema& biosSettingSchema();

/// One setting as a bios interface reports it: the value and, where the hardware has a
/// registry, its description (Ironic's BIOSSetting fields).
struct BiosSetting {
  std::string name;
  std::optional<std::string> value;
  std::optional<std::string> attributeType;
  std::optional<std::vector<std::string>> allowableValues;
  std::optional<int64_t> lowerBound;
  std::optional<int64_t> maxLength;
  std::optional<int64_t> minLength;
  std::optional<bool> readOnly;
  std::optional<bool> resetRequired;
  std::optional<bool> unique;
  std::optional<int64_t> upperBound;
};

/// A setting's value as Ironic stores it (a string field): strings as they are, booleans
/// "True"/"False", numbers in decimal, null as no value, anything else as compact JSON.
std::optional<std::string> biosValueText(const Json& value);

/// The node's cached settings, sorted by name.
Result<std::vector<Record>> listBiosSettings(Transaction& tx, int64_t nodeId);

/// Makes the node's cached settings equal to `settings`: new names are created, changed ones
/// updated (updated_at = `now`), missing ones deleted; unchanged rows keep their timestamps.
Result<void> syncBiosSettings(Transaction& tx, int64_t nodeId,
                              const std::vector<BiosSetting>& settings, const std::string& now);

}  // namespace kiln::server
