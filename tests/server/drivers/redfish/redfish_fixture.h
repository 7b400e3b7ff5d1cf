// File: tests/server/drivers/redfish/redfish_fixture.h
//
// What the redfish driver tests share: a started test BMC, the real HttpClient, a FakeClock,
// and a TaskContext for a node whose driver_info points at the BMC.
#pragma once

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "server/drivers/interfaces.h"
#include "server/model/node.h"
#include "tests/support/fake_clock.h"
#include "tests/support/redfish_test_server.h"

namespace kiln::test {

inline constexpr const char* kRedfishNode = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123";

struct RedfishFixture {
  RedfishTestServer bmc;
  FakeClock clock;
  HttpClientPtr http = makeHttpClient();

  RedfishFixture() { REQUIRE(bmc.start()); }

  /// A task for node kRedfishNode; `driverInfo` is merged over redfish_address = the BMC.
  server::TaskContext task(const nlohmann::json& driverInfo = nlohmann::json::object()) {
    server::TaskContext t;
    t.node = server::defaultRecord(server::nodeSchema());
    t.node.setText(server::kNodeUuid, kRedfishNode);
    t.driverInfo = {{"redfish_address", bmc.address()}};
    t.driverInfo.update(driverInfo);
    t.clock = &clock;
    return t;
  }

  /// Seconds the fake clock has moved since the start of the test.
  long long elapsedSeconds() const {
    return std::chrono::duration_cast<std::chrono::seconds>(clock.monotonic().time_since_epoch())
        .count();
  }
};

}  // namespace kiln::test
