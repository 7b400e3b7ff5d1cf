#include "shared/core/file.h"

#include <fstream>

namespace kiln {

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string out;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();  // -1 where seeking to the end fails (/proc)
  in.clear();
  in.seekg(0, std::ios::beg);
  if (size > 0) {
    out.resize(static_cast<size_t>(size));
    in.read(out.data(), size);
    out.resize(static_cast<size_t>(in.gcount()));
  }
  // What the size did not tell: /proc and /sys files report 0, and a file may grow.
  char chunk[65536];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    out.append(chunk, static_cast<size_t>(in.gcount()));
  }
  return out;
}

}  // namespace kiln
