// File: shared/core/file.h
//
// Reading a whole file into memory.
#pragma once

#include <optional>
#include <string>

namespace kiln {

/// The bytes of the file at `path`, or nullopt when it cannot be opened. The file is read
/// straight into the string (one copy), whatever its size.
std::optional<std::string> readFile(const std::string& path);

}  // namespace kiln
