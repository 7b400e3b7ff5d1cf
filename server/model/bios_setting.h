// File: server/model/bios_setting.h
//
// Cached BIOS settings (API 1.40; registry fields 1.74): what the node's bios interface last
// reported (BiosInterface::cacheBiosSettings), one row per setting, kept in step by
// syncBiosSettings() (server/storage/queries/bios_settings.h) the way Ironic's
// BIOSSettingList.sync_node_setting does. Read by GET /v1/nodes/{id}/bios[/{name}]; deleted with
// the node.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/schema/record.h"
#include "server/model/resources.h"
#include "shared/core/error.h"
#include "shared/json/json_fwd.h"

namespace kiln::server {

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

}  // namespace kiln::server
