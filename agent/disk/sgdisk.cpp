#include "agent/disk/sgdisk.h"

#include <sstream>

#include "shared/core/strings.h"

namespace kiln::agent {
namespace {

template <typename T>
bool parseNumber(std::string_view text, T& out) {
  const auto value = parseInt<T>(text);
  if (value) out = *value;
  return value.has_value();
}

/// The number right after `prefix` in `line` ("Disk x: 204800 sectors" with "Disk x: ").
bool numberAfter(std::string_view line, std::string_view prefix, uint64_t& out) {
  const auto at = line.find(prefix);
  if (at == std::string_view::npos) return false;
  std::string_view rest = line.substr(at + prefix.size());
  const auto end = rest.find_first_not_of("0123456789");
  return parseNumber(rest.substr(0, end), out);
}

Result<GptPartition> parseRow(const std::string& line) {
  std::istringstream in(line);
  std::string number, start, end, size, unit, code;
  in >> number >> start >> end >> size >> unit >> code;
  GptPartition p;
  if (!parseNumber(number, p.number) || !parseNumber(start, p.startSector) ||
      !parseNumber(end, p.endSector) || p.endSector < p.startSector || code.empty()) {
    return invalid("Malformed sgdisk partition row: '" + line + "'");
  }
  p.code = code;
  std::string name;
  std::getline(in, name);
  p.name = trim(name);
  return p;
}

void parseHeaderLine(std::string_view line, GptTable& table) {
  uint64_t value = 0;
  if (line.starts_with("Sector size (logical): ") &&
      numberAfter(line, "Sector size (logical): ", value)) {
    table.sectorSize = static_cast<uint32_t>(value);
  } else if (line.starts_with("Disk identifier (GUID): ")) {
    table.diskGuid = trim(line.substr(24));
  } else if (line.starts_with("First usable sector is ")) {
    numberAfter(line, "First usable sector is ", table.firstUsableSector);
    numberAfter(line, "last usable sector is ", table.lastUsableSector);
  } else if (line.starts_with("Disk ") && line.find(" sectors") != std::string_view::npos) {
    // "Disk /dev/sda: 204800 sectors, 100.0 MiB" (the path may contain ": ").
    const auto colon = line.rfind(": ", line.find(" sectors"));
    if (colon != std::string_view::npos) numberAfter(line.substr(colon), ": ", table.diskSectors);
  }
}

}  // namespace

Result<GptTable> parseSgdiskPrint(std::string_view text) {
  GptTable table;
  bool inRows = false;
  bool sawHeader = false;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    if (inRows) {
      if (trim(line).empty()) continue;
      table.partitions.push_back(KILN_TRY(parseRow(line)));
    } else if (line.starts_with("Number  Start (sector)")) {
      inRows = true;
    } else {
      parseHeaderLine(line, table);
      if (table.diskSectors != 0) sawHeader = true;
    }
  }
  if (!sawHeader) return invalid("sgdisk output has no 'Disk ...: N sectors' line");
  if (!inRows) return invalid("sgdisk output has no partition table header");
  return table;
}

Result<CommandOutput> Sgdisk::run(std::vector<std::string> args) {
  Command command;
  command.argv = {"sgdisk"};
  command.argv.insert(command.argv.end(), args.begin(), args.end());
  CommandOutput out = KILN_TRY(runner_.run(command));
  if (out.exitCode != 0) return internalError(failureMessage(command, out));
  return out;
}

Result<GptTable> Sgdisk::print(const std::string& device) {
  CommandOutput out = KILN_TRY(run({"-p", device}));
  return parseSgdiskPrint(out.out);
}

Result<void> Sgdisk::zap(const std::string& device) {
  Command command;
  command.argv = {"sgdisk", "-Z", device};
  CommandOutput out = KILN_TRY(runner_.run(command));
  if (out.exitCode == 0) return {};
  // NOTE(kiln): on a damaged GPT sgdisk complains (and exits non-zero) while it still
  // destroys the structures; that is the result we wanted.
  if ((out.out + out.err).find("GPT data structures destroyed") != std::string::npos) return {};
  return internalError(failureMessage(command, out));
}

Result<void> Sgdisk::newTable(const std::string& device) {
  KILN_TRY(run({"-o", device}));
  return {};
}

Result<void> Sgdisk::moveBackupToEnd(const std::string& device) {
  KILN_TRY(run({"-e", device}));
  return {};
}

Result<void> Sgdisk::newPartition(const std::string& device, int number, const std::string& start,
                                  const std::string& end, const std::string& typeCode,
                                  const std::string& name) {
  const std::string n = std::to_string(number);
  std::vector<std::string> args = {"-n", n + ":" + start + ":" + end, "-t", n + ":" + typeCode};
  if (!name.empty()) {
    args.push_back("-c");
    args.push_back(n + ":" + name);
  }
  args.push_back(device);
  KILN_TRY(run(std::move(args)));
  return {};
}

}  // namespace kiln::agent
