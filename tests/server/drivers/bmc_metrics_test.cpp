// kiln_bmc_requests_total and kiln_bmc_request_duration_seconds (server/drivers/bmc_metrics.h),
// recorded where each driver talks to its BMC.
#include <catch2/catch.hpp>

#include "server/drivers/bmc_metrics.h"
#include "server/drivers/ipmitool/ipmitool.h"
#include "server/drivers/redfish/redfish_client.h"
#include "tests/server/drivers/ipmitool/ipmitool_test_support.h"
#include "tests/server/drivers/redfish/redfish_fixture.h"
#include "tests/support/metrics_sample.h"

using namespace kiln;
using namespace kiln::server;
using kiln::test::processSample;

namespace {

std::string bmcSeries(const std::string& driver, const std::string& operation,
                      const std::string& result) {
  return "kiln_bmc_requests_total{driver=\"" + driver + "\",operation=\"" + operation +
         "\",result=\"" + result + "\"}";
}

}  // namespace

TEST_CASE("ipmitoolOperation keeps the command words and drops raw bytes and options",
          "[server][drivers][metrics]") {
  CHECK(ipmitoolOperation({"chassis", "power", "status"}) == "chassis power status");
  CHECK(ipmitoolOperation({"chassis", "bootdev", "pxe", "options=persistent"}) ==
        "chassis bootdev pxe");
  CHECK(ipmitoolOperation({"chassis", "bootparam", "get", "5"}) == "chassis bootparam get");
  CHECK(ipmitoolOperation({"raw", "0x00", "0x08", "0x03", "0x08"}) == "raw");
  CHECK(ipmitoolOperation({"power", "diag"}) == "power diag");
  CHECK(ipmitoolOperation({"10.0.0.1"}) == "other");
  CHECK(ipmitoolOperation({}) == "other");
}

TEST_CASE("Every ipmitool run is counted by result when the BMC fails and then answers",
          "[server][drivers][metrics][ipmitool]") {
  const std::string ok = bmcSeries("ipmitool", "chassis power status", "success");
  const std::string failed = bmcSeries("ipmitool", "chassis power status", "error");
  const std::string timedOut = bmcSeries("ipmitool", "chassis power status", "timeout");
  const std::string duration =
      R"(kiln_bmc_request_duration_seconds_count{driver="ipmitool",operation="chassis power status"})";
  const double before[] = {processSample(ok), processSample(failed), processSample(timedOut),
                           processSample(duration)};
  test::IpmiFixture f;
  f.expect({"chassis", "power", "status"}, "session_failed_lanplus")
      .expect({"chassis", "power", "status"}, "power_status_on");
  test::ExpectedCommand hung;
  hung.argv = test::IpmiFixture::argv({"chassis", "power", "status"});
  hung.error = Error{ErrorCode::DeadlineExceeded, "timed out"};
  f.runner->expect(std::move(hung));
  f.expect({"chassis", "power", "status"}, "power_status_on");
  Ipmitool ipmitool(f.runner);
  REQUIRE(ipmitool.powerStatus(f.task));  // one failed run, then one that answers
  REQUIRE(ipmitool.powerStatus(f.task));  // one run that hangs, then one that answers
  CHECK(processSample(ok) == before[0] + 2);
  CHECK(processSample(failed) == before[1] + 1);
  CHECK(processSample(timedOut) == before[2] + 1);
  CHECK(processSample(duration) == before[3] + 4);
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("Every Redfish request is counted by method and result when the BMC answers or fails",
          "[server][drivers][metrics][redfish]") {
  const std::string ok = bmcSeries("redfish", "GET", "success");
  const std::string failed = bmcSeries("redfish", "GET", "error");
  const double before[] = {processSample(ok), processSample(failed)};
  test::RedfishFixture f;
  auto config = parseRedfishConfig({{"redfish_address", f.bmc.address()}}, test::kRedfishNode);
  REQUIRE(config);
  RedfishClient client(f.http, *config);
  REQUIRE(client.get("/redfish/v1/Systems/1"));
  f.bmc.injectError({.method = "GET", .path = "/redfish/v1/Systems/1", .status = 500});
  REQUIRE_FALSE(client.get("/redfish/v1/Systems/1"));
  CHECK(processSample(ok) == before[0] + 1);
  CHECK(processSample(failed) == before[1] + 1);
  // No address, path or credential becomes a label.
  const std::string text = metrics::processRegistry().render();
  CHECK_THAT(text, !Catch::Contains("Systems/1"));
  CHECK_THAT(text, !Catch::Contains(f.bmc.address()));
}
