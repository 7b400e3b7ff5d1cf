// File: shared/core/strings.h
//
// Small string helpers shared by the server and the agent.
#pragma once

#include <string>
#include <string_view>

namespace kiln {

/// `text` without leading and trailing spaces, tabs, carriage returns and newlines. Pure.
std::string trim(std::string_view text);

/// `text` with A-Z lowered (ASCII only; other bytes as they are). Pure.
std::string asciiLower(std::string_view text);

/// True when `a` and `b` are equal ignoring ASCII case. Pure.
bool equalsIgnoreCase(std::string_view a, std::string_view b);

}  // namespace kiln
