#include "agent/raid/mdadm.h"

#include <map>
#include <sstream>

#include "shared/core/strings.h"

namespace kiln::agent {
namespace {

/// The leading integer of "10476544 (9.99 GiB 10.73 GB)".
template <typename T>
T leadingNumber(const std::string& text) {
  const auto end = text.find_first_not_of("0123456789");
  return parseInt<T>(std::string_view(text).substr(0, end)).value_or(T{});
}

std::string firstWord(const std::string& text) { return text.substr(0, text.find(' ')); }

/// "   Raid Level : raid1" -> {"Raid Level", "raid1"}; nullopt for other lines.
std::optional<std::pair<std::string, std::string>> keyValue(std::string_view line) {
  const auto colon = line.find(" : ");
  if (colon == std::string_view::npos) return std::nullopt;
  return std::make_pair(trim(line.substr(0, colon)), trim(line.substr(colon + 3)));
}

/// The "/dev/md0:" line that opens --detail and --examine output.
std::string deviceLine(std::string_view line) {
  const std::string text = trim(line);
  if (text.starts_with("/") && text.ends_with(":")) return text.substr(0, text.size() - 1);
  return {};
}

Result<MdMember> parseMemberRow(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  if (words.size() < 5) return invalid("Malformed mdadm device row: '" + line + "'");
  MdMember member;
  member.number = parseInt<int>(words[0]).value_or(-1);
  member.raidDevice = parseInt<int>(words[3]).value_or(-1);
  size_t stateEnd = words.size();
  if (words.back().starts_with("/")) {
    member.device = words.back();
    --stateEnd;
  }
  for (size_t i = 4; i < stateEnd; ++i) {
    if (!member.state.empty()) member.state += ' ';
    member.state += words[i];
  }
  return member;
}

void applyDetailField(MdArrayDetail& d, const std::string& key, const std::string& value) {
  static const std::map<std::string, int MdArrayDetail::*> kCounts = {
      {"Raid Devices", &MdArrayDetail::raidDevices},
      {"Total Devices", &MdArrayDetail::totalDevices},
      {"Active Devices", &MdArrayDetail::activeDevices},
      {"Working Devices", &MdArrayDetail::workingDevices},
      {"Failed Devices", &MdArrayDetail::failedDevices},
      {"Spare Devices", &MdArrayDetail::spareDevices}};
  if (auto it = kCounts.find(key); it != kCounts.end()) {
    d.*(it->second) = leadingNumber<int>(value);
  } else if (key == "Version") {
    d.version = value;
  } else if (key == "Raid Level") {
    d.raidLevel = value;
  } else if (key == "Array Size") {
    d.arraySizeKiB = leadingNumber<uint64_t>(value);
  } else if (key == "State") {
    d.state = value;
  } else if (key == "Name") {
    d.name = firstWord(value);
  } else if (key == "UUID") {
    d.uuid = value;
  }
}

void applyExamineField(MdExamine& e, const std::string& key, const std::string& value) {
  if (key == "Version") e.version = value;
  if (key == "Array UUID") e.arrayUuid = value;
  if (key == "Name") e.name = firstWord(value);
  if (key == "Raid Level") e.raidLevel = value;
  if (key == "Raid Devices") e.raidDevices = leadingNumber<int>(value);
  if (key == "Device Role") e.deviceRole = value;
  if (key == "Array State") e.arrayState = firstWord(value);
}

Result<MdstatMember> parseMdstatMember(const std::string& word) {
  const auto open = word.find('[');
  const auto close = word.find(']', open);
  if (open == std::string::npos || close == std::string::npos) {
    return invalid("Malformed /proc/mdstat member '" + word + "'");
  }
  MdstatMember member;
  member.device = word.substr(0, open);
  auto index = parseInt<int>(std::string_view(word).substr(open + 1, close - open - 1));
  if (!index) return invalid("Malformed /proc/mdstat member '" + word + "'");
  member.index = *index;
  const std::string flags = word.substr(close + 1);
  member.faulty = flags.find("(F)") != std::string::npos;
  member.spare = flags.find("(S)") != std::string::npos;
  member.writeMostly = flags.find("(W)") != std::string::npos;
  return member;
}

/// "md0 : active (auto-read-only) raid1 sdb1[1] sda1[0]"
Result<MdstatArray> parseMdstatArrayLine(const std::string& line) {
  const auto colon = line.find(" : ");
  MdstatArray array;
  array.name = trim(std::string_view(line).substr(0, colon));
  std::istringstream in(line.substr(colon + 3));
  std::string word;
  in >> word;
  if (word != "active" && word != "inactive") {
    return invalid("Malformed /proc/mdstat line: '" + line + "'");
  }
  array.active = word == "active";
  while (in >> word) {
    if (word.starts_with("(")) {
      array.readOnly = word.find("read-only") != std::string::npos;
    } else if (word.find('[') == std::string::npos) {
      array.level = word;  // a personality: raid1, raid10, linear
    } else {
      array.members.push_back(KILN_TRY(parseMdstatMember(word)));
    }
  }
  return array;
}

/// "      10476544 blocks super 1.0 [2/1] [U_]"
void parseMdstatStatusLine(const std::string& line, MdstatArray& array) {
  const std::string text = trim(line);
  array.blocks = leadingNumber<uint64_t>(text);
  const auto counts = text.find('[');
  if (counts == std::string::npos) return;
  const auto slash = text.find('/', counts);
  const auto close = text.find(']', counts);
  if (slash == std::string::npos || close == std::string::npos || slash > close) return;
  array.raidDevices = parseInt<int>(text.substr(counts + 1, slash - counts - 1)).value_or(-1);
  array.workingDevices = parseInt<int>(text.substr(slash + 1, close - slash - 1)).value_or(-1);
  const auto health = text.find('[', close);
  const auto healthEnd = text.find(']', health);
  if (health != std::string::npos && healthEnd != std::string::npos) {
    array.health = text.substr(health + 1, healthEnd - health - 1);
  }
}

}  // namespace

std::vector<std::string> MdArrayDetail::memberDevices() const {
  std::vector<std::string> devices;
  for (const MdMember& m : members) {
    if (!m.device.empty()) devices.push_back(m.device);
  }
  return devices;
}

Result<MdArrayDetail> parseMdadmDetail(std::string_view text) {
  MdArrayDetail detail;
  bool inTable = false;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    if (detail.device.empty() && !deviceLine(line).empty()) {
      detail.device = deviceLine(line);
    } else if (inTable) {
      if (!trim(line).empty()) detail.members.push_back(KILN_TRY(parseMemberRow(line)));
    } else if (line.find("Number   Major   Minor   RaidDevice State") != std::string::npos) {
      inTable = true;
    } else if (auto kv = keyValue(line)) {
      applyDetailField(detail, kv->first, kv->second);
    }
  }
  if (detail.device.empty()) return invalid("mdadm --detail output names no array device");
  if (detail.raidLevel.empty()) return invalid("mdadm --detail output has no 'Raid Level'");
  return detail;
}

Result<MdExamine> parseMdadmExamine(std::string_view text) {
  MdExamine examine;
  bool sawMagic = false;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    if (examine.device.empty() && !deviceLine(line).empty()) {
      examine.device = deviceLine(line);
    } else if (auto kv = keyValue(line)) {
      if (kv->first == "Magic") sawMagic = true;
      applyExamineField(examine, kv->first, kv->second);
    }
  }
  if (!sawMagic) return invalid("mdadm --examine output has no md superblock 'Magic'");
  if (examine.raidLevel.empty()) return invalid("mdadm --examine output has no 'Raid Level'");
  return examine;
}

Result<Mdstat> parseMdstat(std::string_view text) {
  Mdstat mdstat;
  MdstatArray* current = nullptr;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("Personalities :")) {
      std::istringstream words(line.substr(15));
      for (std::string w; words >> w;) mdstat.personalities.push_back(w.substr(1, w.size() - 2));
    } else if (line.starts_with("unused devices:") || trim(line).empty()) {
      current = nullptr;
    } else if (!line.starts_with(" ") && line.find(" : ") != std::string::npos) {
      mdstat.arrays.push_back(KILN_TRY(parseMdstatArrayLine(line)));
      current = &mdstat.arrays.back();
    } else if (current && line.find(" blocks") != std::string::npos && current->blocks == 0) {
      parseMdstatStatusLine(line, *current);
    } else if (current && line.find('%') != std::string::npos) {
      current->progress = trim(line);
    }
  }
  return mdstat;
}

Result<CommandOutput> Mdadm::run(std::vector<std::string> args, bool checkExit) {
  Command command;
  command.argv = {"mdadm"};
  command.argv.insert(command.argv.end(), args.begin(), args.end());
  CommandOutput out = KILN_TRY(runner_.run(command));
  if (checkExit && out.exitCode != 0) return internalError(failureMessage(command, out));
  return out;
}

Result<void> Mdadm::create(const std::string& device, const std::string& level,
                           std::span<const std::string> members, const std::string& name) {
  std::vector<std::string> args = {"--create", device, "--metadata=1.0", "--level=" + level,
                                   "--raid-devices=" + std::to_string(members.size())};
  if (!name.empty()) args.push_back("--name=" + name);
  args.push_back("--run");
  args.push_back("--force");
  args.insert(args.end(), members.begin(), members.end());
  KILN_TRY(run(std::move(args)));
  return {};
}

Result<MdArrayDetail> Mdadm::detail(const std::string& device) {
  CommandOutput out = KILN_TRY(run({"--detail", device}));
  return parseMdadmDetail(out.out);
}

Result<std::optional<MdExamine>> Mdadm::examine(const std::string& device) {
  CommandOutput out = KILN_TRY(run({"--examine", device}, false));
  if (out.exitCode != 0) {
    if (out.err.find("No md superblock detected") != std::string::npos) {
      return std::optional<MdExamine>();
    }
    return internalError("mdadm --examine " + device + " failed (exit " +
                         std::to_string(out.exitCode) + "): " + trim(out.err));
  }
  // NOTE(kiln): on a disk with a partition table and no md superblock mdadm 4.2 exits 0 and
  // describes the MBR ("MBR Magic : aa55", "Partition[0] : ..."); an md superblock always
  // shows its magic a92b4efc (recorded in tests/data/commands/mdadm/examine_no_superblock.txt).
  if (out.out.find("a92b4efc") == std::string::npos) return std::optional<MdExamine>();
  return std::optional<MdExamine>(KILN_TRY(parseMdadmExamine(out.out)));
}

Result<void> Mdadm::stop(const std::string& device) {
  KILN_TRY(run({"--stop", device}));
  return {};
}

Result<void> Mdadm::zeroSuperblock(const std::string& device) {
  CommandOutput out = KILN_TRY(run({"--zero-superblock", device}, false));
  // NOTE(kiln): mdadm 4.2 says "Unrecognised md component device" when there is no superblock
  // to zero (exit 0 in the recorded fixture, 1 in some builds); the device is then already in
  // the state we want.
  if (out.exitCode == 0 || out.err.find("Unrecognised md component device") != std::string::npos) {
    return {};
  }
  return internalError("mdadm --zero-superblock " + device + " failed (exit " +
                       std::to_string(out.exitCode) + "): " + trim(out.err));
}

}  // namespace kiln::agent
