// File: shared/core/strings.h
//
// Small string helpers shared by the server and the agent.
#pragma once

#include <string>
#include <string_view>

namespace kiln {

/// `text` without leading and trailing spaces, tabs, carriage returns and newlines. Pure.
std::string trim(std::string_view text);

}  // namespace kiln
