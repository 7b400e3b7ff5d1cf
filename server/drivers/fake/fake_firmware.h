// File: server/drivers/fake/fake_firmware.h
//
// The fake firmware interface (fake-hardware, firmware_interface "fake"). Ironic's FakeFirmware
// reports nothing; Kiln's keeps a fake machine's firmware in driver_internal_info.fake_firmware
// ({"<component>": "<version>"}), so that a firmware.update through cleaning or deployment shows
// in GET /v1/nodes/{id}/firmware as on real hardware:
//   - until updated, the machine has "bios" at kFakeBiosVersion and "bmc" at kFakeBmcVersion
//     (the BMC's model is kFakeBmcModel; no other identity is reported);
//   - firmware.update (a clean and deploy step, settings checked as Ironic's) gives each named
//     component the version named by its URL: the URL's last path segment
//     ("http://host/fw/bmc-5.1.bin?x=1" installs "bmc-5.1.bin"), or the whole URL when it has
//     none. A "nic:<id>" component is added if the machine had none by that name.
#pragma once

#include <memory>
#include <string_view>

#include "server/drivers/interfaces.h"

namespace kiln::server {

inline constexpr std::string_view kFakeBiosVersion = "1.0.0";
inline constexpr std::string_view kFakeBmcVersion = "5.0.0";
inline constexpr std::string_view kFakeBmcModel = "Fake BMC";

std::unique_ptr<FirmwareInterface> makeFakeFirmware();

/// The version the fake installs from `url` (see above).
std::string fakeFirmwareVersion(std::string_view url);

}  // namespace kiln::server
