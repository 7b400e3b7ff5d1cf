// File: shared/disk/device_hints.h
//
// Ironic's device hints (node.properties.root_device, and the object entries of a software
// RAID logical disk's `physical_disks`): parsing and validation, shared by the server (which
// rejects bad hints when a request arrives) and the agent (which matches them against its
// disks, agent/disk/root_device_hints.h). Pure: no disks, no I/O.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shared/core/error.h"
#include "shared/json/json_fwd.h"

namespace kiln {

/// The hint names Kiln supports, sorted.
std::span<const std::string_view> deviceHintNames();

/// One parsed hint.
struct DeviceHint {
  enum class Kind { Text, Size, Boolean };
  std::string
      name;  ///< "by_path", "model", "name", "rotational", "serial", "size", "vendor", "wwn"
  Kind kind = Kind::Text;
  /// Text: "s==", "s!=", "s>=", "s<=", "s>", "s<", "<in>" (substring), "<or>" (any of values).
  /// Size: "==", "!=", ">=", "<=", ">", "<".
  std::string op;
  /// Text operands: one ("<or>": one or more), lower-cased for the caseless hints (wwn,
  /// model, vendor); a "name" without a leading "/" gets "/dev/" in front.
  std::vector<std::string> values;
  int64_t gib = 0;       ///< Size: GiB, positive
  bool boolean = false;  ///< Boolean (rotational)

  /// Whether a device's text property (serial, model, ...) satisfies this Text hint.
  bool matchesText(std::string_view have) const;
  /// Whether a device of `bytes` satisfies this Size hint (GiB = floor(bytes / 2^30)).
  bool matchesSize(uint64_t bytes) const;
};

/// A set of hints; a device matches when it satisfies all of them. Sorted by name.
struct DeviceHints {
  std::vector<DeviceHint> hints;
  bool empty() const { return hints.empty(); }
};

/// Parses and validates hints (a JSON object; null or {} give no hints).
///
/// Values: "size" an integer or a string of one ("100", ">= 100"; operators ==, !=, >=, <=,
/// >, <), positive; "rotational" a boolean, 0/1 or "true"/"false"/"yes"/"no"/"on"/"off";
/// the others strings, optionally starting with an oslo operator (s==, s!=, s>=, s<=, s>,
/// s<, <in>, "<or> a <or> b"). Errors (InvalidArgument), `label` ("Root device hint",
/// "Device hint") starting the per-hint ones: unknown hint names ('The hints "x" are
/// invalid. Valid hints are: "..."'), a value of the wrong type, a malformed number or
/// boolean, an unsupported operator.
Result<DeviceHints> parseDeviceHints(const Json& hints, std::string_view label = "Device hint");

}  // namespace kiln
