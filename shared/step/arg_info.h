// File: shared/step/arg_info.h
//
// One argument a step accepts (manual cleaning spec: name, description, required). Shared by
// the server's interface step tables and the agent's step catalogue.
#pragma once

#include <string>

namespace kiln {

struct ArgInfo {
  std::string name;
  std::string description;
  bool required = false;
};

}  // namespace kiln
