// File: shared/json/json_fwd.h
//
// The forward declaration of nlohmann::json under Kiln's name. Headers include this; only .cpp
// files that build or parse JSON include the full <nlohmann/json.hpp> (build-time budget).
#pragma once

#include <nlohmann/json_fwd.hpp>

namespace kiln {
using Json = nlohmann::json;
}  // namespace kiln
