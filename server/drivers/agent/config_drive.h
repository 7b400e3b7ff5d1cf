// File: server/drivers/agent/config_drive.h
//
// Config drives given as JSON (API 1.56; vendor_data 1.59). A provision request's (or
// instance_info's) `configdrive` is a URL, the base64 text of a gzip-compressed ISO 9660 image,
// or an object with `meta_data`, `network_data`, `user_data` and `vendor_data`, from which the
// conductor builds the image at deploy.write_image, as Ironic does:
//
//   ISO 9660 (Rock Ridge + Joliet), volume label "config-2", built by xorrisofs with the options
//   openstacksdk's configdrive.pack uses;
//   openstack/2012-08-10/ and openstack/latest/, each with meta_data.json (`uuid` and `name`
//   defaulting to the node's), user_data (a string as is, an object or array as JSON),
//   network_data.json and vendor_data2.json (when given and non-empty);
//   then gzip, then base64 — the form kiln-agent (and ironic-python-agent) receives.
//
// An empty value (null, "", {}) means no config drive: gophercloud sends {} for an empty
// struct, and Ironic skips anything falsy.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "shared/core/error.h"
#include "shared/exec/command_runner.h"

namespace kiln::server {

/// Largest config drive image (the ISO, before gzip), as the agent accepts.
inline constexpr size_t kMaxConfigDriveImageBytes = 64 * 1024 * 1024;

/// True for null, "" and {}: no config drive.
bool isEmptyConfigDrive(const nlohmann::json& configdrive);

/// Ironic's checks of a `configdrive` value (check_allow_configdrive, without the microversion
/// rules, which the API applies): an object with only meta_data, network_data, vendor_data
/// (objects) and user_data (object, array, string or null); or a string that is a URL or
/// base64 text. InvalidArgument "Invalid configdrive format: ..." otherwise.
Result<void> validateConfigDrive(const nlohmann::json& configdrive);

/// The image's files as (path inside the image, content), in the order they are written.
std::vector<std::pair<std::string, std::string>> configDriveFiles(const nlohmann::json& configdrive,
                                                                  const std::string& nodeUuid,
                                                                  const std::string& nodeName);

/// Builds the config drive of a JSON `configdrive` (validated first) with xorrisofs through
/// `runner`, in a temporary directory that is removed afterwards. Returns base64(gzip(ISO)).
/// Errors: InvalidArgument for an invalid value or an image over kMaxConfigDriveImageBytes;
/// Unavailable when xorrisofs cannot run; Internal when it fails.
Result<std::string> buildConfigDrive(CommandRunner& runner, const nlohmann::json& configdrive,
                                     const std::string& nodeUuid, const std::string& nodeName);

}  // namespace kiln::server
