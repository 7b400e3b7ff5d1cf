// File: server/config/option_values.h
//
// Parsers of the configuration values that have a syntax of their own (server/config.cpp
// reads the INI file and calls them; each answers InvalidArgument with the reason, which the
// configuration prefixes with the option's name).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shared/core/error.h"

namespace kiln::server {

/// [conductor] clean_step_priority_override and its siblings (server/conductor/step_planner.h
/// applies them): "interface.step:priority, ..." with a priority >= 0.
/// Parses "a.b:10, c.d:0". InvalidArgument for malformed entries.
Result<std::map<std::string, int>> parsePriorityOverrides(const std::string& text);

/// [pxe] loader_file_paths (server/drivers/netboot/loader_files.h copies the files).
/// Parses Ironic's dictionary form "dest:/source,dest2:/source2" (spaces around items
/// ignored). InvalidArgument for an item without ':', a destination that is empty, absolute,
/// or has an empty, "." or ".." component, a source that is not an absolute path, or a
/// destination named twice.
Result<std::vector<std::pair<std::string, std::string>>> parseLoaderFilePaths(
    std::string_view text);

}  // namespace kiln::server
