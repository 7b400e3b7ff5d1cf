// File: server/api/version.h
//
// Microversion negotiation exactly as Ironic does it: `OpenStack-API-Version: baremetal 1.N`
// (checked first) or `X-OpenStack-Ironic-API-Version: 1.N`; `latest` means the maximum; no
// header means the minimum (1.1); anything else outside [1.1, max] is 406.
#pragma once

#include <string>

#include "server/api/http.h"
#include "server/model/versions.h"
#include "shared/core/error.h"

namespace kiln::server {

inline constexpr int kMinMinorVersion = ver::kMin;
/// The highest microversion Kiln serves. docs/compatibility.md lists what each version adds
/// and what Kiln does not implement.
inline constexpr int kMaxMinorVersion = ver::kMax;

/// "1.78"
std::string versionString(int minor);

/// The requested minor version. NotAcceptable with Ironic's message for an unparsable value,
/// a major version other than 1, or a minor version out of range.
Result<int> negotiateVersion(const ApiRequest& request);

}  // namespace kiln::server
