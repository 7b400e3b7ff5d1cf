// File: agent/image/qcow2_writer.h
//
// qcow2 images for writeImage (agent/image/image_writer.h): the download is staged at the tail
// of the target through the image pipeline, checked (QFI magic, a virtual size that fits
// before the staging area), then converted in place to raw bytes at the start of the target
// by `qemu-img convert` through the CommandRunner, and the staging area's start is zeroed.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/hardware/step_context.h"
#include "agent/image/image_info.h"
#include "agent/image/image_writer.h"
#include "shared/core/error.h"

namespace kiln::agent {

/// Writes the qcow2 image `info` to `target`, whose usable size is `capacity`. Errors as
/// writeImage's; Unimplemented for a compressed download; InvalidArgument when the server
/// sends no Content-Length (the staging area needs it) or the image does not fit.
Result<WriteResult> writeQcow2(StepContext& ctx, const ImageInfo& info, const WriteTarget& target,
                               uint64_t capacity, std::chrono::steady_clock::time_point start);

/// Escapes a value for qemu's key=value option syntax (a comma is written twice). Pure.
std::string qemuOptionValue(std::string_view value);

}  // namespace kiln::agent
