#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "shared/disk/device_hints.h"

using kiln::DeviceHint;
using kiln::parseDeviceHints;
using J = nlohmann::json;

namespace {

std::string errorOf(const J& hints) {
  auto parsed = parseDeviceHints(hints);
  if (parsed) return "ok";
  CHECK(parsed.error().code == kiln::ErrorCode::InvalidArgument);
  return parsed.error().message;
}

}  // namespace

TEST_CASE("parseDeviceHints parses every supported hint and operator", "[shared][disk]") {
  auto parsed = parseDeviceHints(J::parse(R"({"name": "vda", "size": ">= 100", "serial": "<in> ABC",
      "wwn": "0X5000", "model": "<or> QEMU <or> Virtio", "vendor": "s!= ATA",
      "by_path": "/dev/disk/by-path/x", "rotational": "yes"})"));
  REQUIRE(parsed);
  REQUIRE(parsed->hints.size() == 8);
  const auto& h = parsed->hints;  // sorted by name
  CHECK(h[0].name == "by_path");
  CHECK(h[1].name == "model");
  CHECK(h[1].op == "<or>");
  CHECK(h[1].values == std::vector<std::string>{"qemu", "virtio"});
  CHECK(h[2].values == std::vector<std::string>{"/dev/vda"});
  CHECK(h[3].kind == DeviceHint::Kind::Boolean);
  CHECK(h[3].boolean);
  CHECK(h[4].op == "<in>");
  CHECK(h[5].kind == DeviceHint::Kind::Size);
  CHECK(h[5].op == ">=");
  CHECK(h[5].gib == 100);
  CHECK(h[6].op == "s!=");
  CHECK(h[6].values == std::vector<std::string>{"ata"});
  CHECK(h[7].values == std::vector<std::string>{"0x5000"});
}

TEST_CASE("parseDeviceHints gives no hints for null and {}", "[shared][disk]") {
  CHECK(parseDeviceHints(nullptr)->empty());
  CHECK(parseDeviceHints(J::object())->empty());
}

TEST_CASE("DeviceHint matches text and sizes with its operator", "[shared][disk]") {
  auto hints = parseDeviceHints(J{{"model", "<in> qemu"}, {"size", "< 10"}});
  REQUIRE(hints);
  CHECK(hints->hints[0].matchesText(" QEMU HARDDISK "));
  CHECK_FALSE(hints->hints[0].matchesText("Samsung"));
  CHECK(hints->hints[1].matchesSize((9ULL << 30) + 1));
  CHECK_FALSE(hints->hints[1].matchesSize(10ULL << 30));
  auto serial = parseDeviceHints(J{{"serial", "abc"}});
  REQUIRE(serial);
  CHECK(serial->hints[0].matchesText("abc"));
  CHECK_FALSE(serial->hints[0].matchesText("ABC"));  // serial is case-sensitive
}

TEST_CASE("parseDeviceHints names unknown hints in Ironic's words", "[shared][disk]") {
  CHECK(errorOf(J{{"hctl", "0:0:0:0"}, {"nme", "x"}, {"size", 1}}) ==
        "The hints \"hctl, nme\" are invalid. Valid hints are: \"by_path, model, name, "
        "rotational, serial, size, vendor, wwn\"");
}

TEST_CASE("parseDeviceHints rejects malformed values and operators", "[shared][disk]") {
  CHECK(errorOf(J{{"serial", 42}}) ==
        "Device hint \"serial\" is not a string value. Hint expression: 42");
  CHECK(errorOf(J{{"size", "big"}}) ==
        "Device hint \"size\" is not an integer value. Current value: big");
  CHECK(errorOf(J{{"size", 1.5}}) ==
        "Device hint \"size\" is not an integer value. Current value: 1.5");
  CHECK(errorOf(J{{"size", "=> 4"}}) ==
        "Device hint \"size\" is not an integer value. Current value: => 4");
  CHECK(errorOf(J{{"size", -1}}) ==
        "Device hint \"size\" should be a positive integer. Current value: -1");
  CHECK(errorOf(J{{"rotational", "maybe"}}) ==
        "Device hint \"rotational\" is not a Boolean value. Current value: maybe");
  CHECK(errorOf(J{{"rotational", 2}}) ==
        "Device hint \"rotational\" is not a Boolean value. Current value: 2");
  CHECK_THAT(errorOf(J{{"model", "<all-in> a b"}}),
             Catch::StartsWith("Device hint \"model\" uses an unsupported operator"));
  CHECK_THAT(errorOf(J{{"model", "s=~ a"}}), Catch::Contains("unsupported operator"));
  CHECK_THAT(errorOf(J{{"model", "<or>"}}), Catch::Contains("has an operator but no value"));
  CHECK(errorOf(J::array()) == "Device hints must be an object, got []");
  CHECK(errorOf(J("sda")) == "Device hints must be an object, got \"sda\"");
  // A value that merely contains '<' or starts with 's' is a value, not an operator.
  CHECK(errorOf(J{{"serial", "s123"}}) == "ok");
  CHECK(errorOf(J{{"model", "<none>"}}) != "ok");
  CHECK(errorOf(J{{"model", "a<b>"}}) == "ok");
}
