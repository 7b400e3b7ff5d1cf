// File: agent/image/write_image_command.h
//
// `kiln-agent write-image`: writes one image by hand (benchmarks, labs) through the same
// pipeline as the write_image deploy step and prints a one-line JSON result.
#pragma once

namespace kiln::agent {

/// Runs `write-image --url URL --device PATH [--checksum ALGO:HEX] [--compression C]
/// [--format raw|qcow2]` (argv[0] = "write-image"); returns the process exit code.
int runWriteImageCommand(int argc, char** argv);

}  // namespace kiln::agent
