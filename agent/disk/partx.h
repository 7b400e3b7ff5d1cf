// File: agent/disk/partx.h
//
// Telling the kernel about a partition table the agent just wrote (util-linux partx).
#pragma once

#include <string>

#include "agent/hardware/step_context.h"

namespace kiln::agent {

/// `partx -u DEVICE` for a block device (image files have no kernel view: nothing runs). Best
/// effort: a failure is logged, not returned, because the agent writes partitions through
/// whole-device offsets; only what mounts a partition node needs the kernel to know it.
void rereadPartitions(StepContext& context, const std::string& device);

}  // namespace kiln::agent
