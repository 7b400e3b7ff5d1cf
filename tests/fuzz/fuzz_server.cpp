#include "tests/fuzz/fuzz_server.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "server/config.h"
#include "shared/core/log.h"
#include "shared/exec/command_runner.h"
#include "shared/http/http_client.h"
#include "tests/fuzz/fuzz_support.h"

namespace kiln::fuzz {
namespace {

/// ipmitool as if every BMC were unreachable: no process is started.
class NoCommandRunner final : public CommandRunner {
 public:
  Result<CommandOutput> run(const Command& command) override {
    return CommandOutput{1, "", "Error: Unable to establish IPMI v2 / RMCP+ session\n"};
  }
};

/// Redfish as if every BMC were unreachable: nothing leaves the process.
class NoHttpClient final : public HttpClient {
 public:
  Result<HttpResponse> send(const HttpRequest& request) override {
    return std::unexpected(Error{ErrorCode::Unavailable, "connection refused (fuzzing)"});
  }
  Result<HttpResponse> stream(const HttpRequest& request, const BodySink& sink) override {
    return send(request);
  }
};

std::string describe(const server::ApiRequest& request, const server::ApiResponse& response) {
  std::string out = request.method + " " + request.path;
  for (size_t i = 0; i < request.query.size(); ++i) {
    out += (i == 0 ? "?" : "&") + request.query[i].first + "=" + request.query[i].second;
  }
  out += "\n";
  for (const auto& [k, v] : request.headers) out += k + ": " + v + "\n";
  out += "\n" + request.body.substr(0, 1024) + "\n--- answered " + std::to_string(response.status) +
         " (" + response.contentType + ")\n" + response.body;
  return out;
}

void replaceAll(std::string& text, std::string_view what, const std::string& with) {
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size())) {
    text.replace(at, what.size(), with);
  }
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// Every resource, parents first.
constexpr server::Resource kResources[] = {server::Resource::Chassis, server::Resource::Node,
                                           server::Resource::Portgroup, server::Resource::Port,
                                           server::Resource::DeployTemplate,
                                           server::Resource::Allocation,
                                           server::Resource::VolumeConnector,
                                           server::Resource::VolumeTarget,
                                           server::Resource::Runbook,
                                           server::Resource::InspectionRule};

}  // namespace

std::optional<server::ApiRequest> parseRequestText(std::string_view text) {
  const size_t eol = text.find('\n');
  const std::string_view line = text.substr(0, eol);
  const size_t space = line.find(' ');
  if (space == std::string_view::npos || space == 0) return std::nullopt;
  server::ApiRequest request;
  request.method = std::string(line.substr(0, space));
  const std::string_view target = line.substr(space + 1);
  const size_t q = target.find('?');
  request.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) request.query = server::parseQueryString(target.substr(q + 1));
  text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view header = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (header.empty()) break;
    const size_t colon = header.find(':');
    std::string_view value = colon == std::string_view::npos ? "" : header.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    request.headers.emplace_back(lowercase(header.substr(0, colon)), std::string(value));
  }
  request.body = std::string(text);
  return request;
}

FuzzServer& FuzzServer::instance() {
  static FuzzServer* server = new FuzzServer();  // never destroyed: libFuzzer exits with it
  return *server;
}

FuzzServer::FuzzServer() {
  // Log lines are formatted (their masking is code under test too) but not printed.
  Logger::setLevel(LogLevel::Debug);
  Logger::setSink([](std::string_view) {});
  const char* rebuild = std::getenv("KILN_FUZZ_REBUILD");
  rebuild_ = rebuild && std::string_view(rebuild) == "1";
  std::string dir = (std::filesystem::temp_directory_path() / "kiln-fuzz-XXXXXX").string();
  if (!mkdtemp(dir.data())) fail("cannot create a temporary directory");
  tempDir_ = dir;
  // The server is never destroyed (libFuzzer exits with it); its directory goes at exit. The
  // path is on the heap so that no static destructor runs before the handler.
  static const std::string* removeAtExit = new std::string(dir);
  std::atexit([] {
    std::error_code ignored;
    std::filesystem::remove_all(*removeAtExit, ignored);
  });
  build();
}

FuzzServer::~FuzzServer() {
  if (app_) app_->stop();
  std::error_code ignored;
  std::filesystem::remove_all(tempDir_, ignored);
}

void FuzzServer::build() {
  if (app_) app_->stop();
  app_.reset();
  std::error_code ignored;
  std::filesystem::remove_all(tempDir_ + "/tftpboot", ignored);
  std::filesystem::create_directories(tempDir_ + "/tftpboot", ignored);
  const std::string text =
      "[DEFAULT]\n"
      "enabled_hardware_types = fake-hardware, ipmi, redfish, manual-management\n"
      "host = fuzz-conductor\n"
      "[api]\nrestrict_lookup = false\n"
      "[database]\nconnection = sqlite://\n"
      "[conductor]\nworkers_pool_size = 2\nperiodic_interval = 0\n"
      "deploy_kernel = http://192.0.2.1/agent.kernel\n"
      "deploy_ramdisk = http://192.0.2.1/agent.initramfs\n"
      "[pxe]\ntftp_root = " +
      tempDir_ +
      "/tftpboot\n"
      // Bundles a fuzzed heartbeat might carry stay in the fuzzer's directory.
      "[agent]\ndeploy_logs_local_path = " +
      tempDir_ + "/deploy-logs\n";
  auto config = server::parseConfig(text, "fuzz");
  if (!config) fail("the fuzz configuration is refused", config.error().message);
  clock_ = std::make_shared<test::FakeClock>();
  server::InterfaceDeps deps{std::make_shared<NoCommandRunner>(), std::make_shared<NoHttpClient>()};
  auto app = server::ServerApp::create(std::move(*config), clock_, std::move(deps));
  if (!app) fail("cannot create the server", app.error().message);
  app_ = std::move(*app);
  if (auto started = app_->start(/*http=*/false, /*periodic=*/false); !started) {
    fail("cannot start the conductor", started.error().message);
  }

  mustCall("POST", "/v1/chassis",
           std::string(R"({"uuid": ")") + kChassisUuid + R"(", "description": "fuzz"})");
  mustCall("POST", "/v1/nodes",
           std::string(R"({"uuid": ")") + kNodeUuid + R"(", "name": "fuzz-node", )" +
               R"("driver": "fake-hardware", "chassis_uuid": ")" + kChassisUuid + R"(", )" +
               R"("properties": {"cpus": 2, "memory_mb": 4096, "local_gb": 40}, )" +
               R"("instance_info": {"image_source": "http://192.0.2.1/image.qcow2"}, )" +
               R"("driver_info": {"ipmi_password": "secret"}, "extra": {"k": "v"}})");
  mustCall("PUT", std::string("/v1/nodes/") + kNodeUuid + "/traits/CUSTOM_FUZZ", "");
  mustCall("POST", "/v1/portgroups",
           std::string(R"({"uuid": ")") + kPortgroupUuid + R"(", "name": "fuzz-pg", "node_uuid": ")" +
               kNodeUuid + R"(", "address": "52:54:00:00:01:00"})");
  mustCall("POST", "/v1/ports",
           std::string(R"({"uuid": ")") + kPortUuid + R"(", "address": ")" + kPortMac +
               R"(", "node_uuid": ")" + kNodeUuid + R"(", "portgroup_uuid": ")" + kPortgroupUuid +
               R"("})");
  mustCall("POST", "/v1/deploy_templates",
           std::string(R"({"uuid": ")") + kTemplateUuid + R"(", "name": "CUSTOM_FUZZ", "steps": [)" +
               R"({"interface": "raid", "step": "apply_configuration", "priority": 95, "args": )" +
               R"({"raid_config": {"logical_disks": [{"size_gb": "MAX", "raid_level": "1"}]}}}]})");
  mustCall("POST", "/v1/volume/connectors",
           std::string(R"({"uuid": ")") + kVolumeConnectorUuid + R"(", "node_uuid": ")" +
               kNodeUuid + R"(", "type": "iqn", "connector_id": "iqn.2017-05.org.fuzz:1"})");
  mustCall("POST", "/v1/volume/targets",
           std::string(R"({"uuid": ")") + kVolumeTargetUuid + R"(", "node_uuid": ")" + kNodeUuid +
               R"(", "volume_type": "iscsi", "boot_index": 0, "volume_id": "fuzz-volume", )" +
               R"("properties": {"auth_password": "secret"}})");
  server::ApiRequest lookup;
  lookup.method = "GET";
  lookup.path = "/v1/lookup";
  lookup.query = {{"node_uuid", kNodeUuid}};
  lookup.headers = {{"x-openstack-ironic-api-version", "1.68"}};
  const server::ApiResponse found = app_->api().handle(lookup);
  const auto body = nlohmann::json::parse(found.body, nullptr, false);
  if (found.status != 200 || !body.is_object()) fail("the fixture's lookup failed", found.body);
  token_ = body["config"].value("agent_token", "");
  app_->conductor().waitIdle();
  takeSnapshot();
}

void FuzzServer::takeSnapshot() {
  auto tx = app_->storage().begin(server::Storage::Mode::Read);
  if (!tx) fail("cannot read the fixture", tx.error().message);
  rows_.assign(server::kResourceCount, {});
  for (server::Resource r : kResources) {
    server::ListQuery all;
    all.limit = 0;
    auto& rows = rows_[static_cast<size_t>(r)];
    if (auto listed = (*tx)->records(r).listInto(all, rows); !listed) {
      fail("cannot read the fixture", listed.error().message);
    }
  }
  const auto& nodes = rows_[static_cast<size_t>(server::Resource::Node)];
  if (nodes.size() != 1) fail("the fixture should hold one node");
  auto traits = (*tx)->traits().get(nodes.front().id());
  if (!traits) fail("cannot read the fixture's traits", traits.error().message);
  traits_ = *traits;
}

void FuzzServer::restoreSnapshot() {
  auto check = [](const auto& result, const char* what) {
    if (!result) fail(std::string("cannot reset the database: ") + what, result.error().message);
  };
  auto tx = app_->storage().begin(server::Storage::Mode::Write);
  check(tx, "begin");
  // What the last request added goes first, children before parents; then the fixture's rows
  // come back, parents first.
  std::vector<std::vector<server::Record>> current(server::kResourceCount);
  for (auto it = std::rbegin(kResources); it != std::rend(kResources); ++it) {
    server::ListQuery all;
    all.limit = 0;
    auto& rows = current[static_cast<size_t>(*it)];
    check((*tx)->records(*it).listInto(all, rows), "list");
    const auto& fixture = rows_[static_cast<size_t>(*it)];
    for (const auto& row : rows) {
      const bool kept = std::any_of(fixture.begin(), fixture.end(),
                                    [&](const server::Record& f) { return f.uuid() == row.uuid(); });
      if (!kept) check((*tx)->records(*it).remove(row.id()), "remove");
    }
  }
  int64_t nodeId = 0;
  for (server::Resource r : kResources) {
    for (server::Record& want : rows_[static_cast<size_t>(r)]) {
      const auto& rows = current[static_cast<size_t>(r)];
      auto now = std::find_if(rows.begin(), rows.end(),
                              [&](const server::Record& row) { return row.uuid() == want.uuid(); });
      if (now == rows.end()) {
        auto inserted = (*tx)->records(r).insert(want);
        check(inserted, "insert");
        want[0] = (*inserted)[0];  // its new id
      } else {
        want[0] = (*now)[0];
        bool same = true;
        for (size_t i = 0; i < want.size() && same; ++i) same = want[i] == (*now)[i];
        if (!same) check((*tx)->records(r).update(want), "update");
      }
      if (r == server::Resource::Node) nodeId = want.id();
    }
  }
  check((*tx)->traits().set(nodeId, traits_), "traits");
  check((*tx)->commit(), "commit");
  // Boot files the pxe interface wrote.
  std::error_code ignored;
  if (!std::filesystem::is_empty(tempDir_ + "/tftpboot", ignored)) {
    std::filesystem::remove_all(tempDir_ + "/tftpboot", ignored);
    std::filesystem::create_directories(tempDir_ + "/tftpboot", ignored);
  }
}

void FuzzServer::mustCall(const std::string& method, const std::string& target,
                          const std::string& body) {
  server::ApiRequest request;
  request.method = method;
  request.path = target;
  request.headers = {{"x-openstack-ironic-api-version", "1.78"}};
  request.body = body;
  const server::ApiResponse response = app_->api().handle(request);
  if (response.status >= 300) fail("the fuzz fixture could not be set up", describe(request, response));
}

server::ApiResponse FuzzServer::call(server::ApiRequest request) {
  if (dirty_) {
    if (rebuild_) {
      build();
    } else {
      restoreSnapshot();
    }
  }
  dirty_ = true;
  replaceAll(request.body, "@TOKEN@", token_);
  for (auto& header : request.headers) replaceAll(header.second, "@TOKEN@", token_);
  server::ApiResponse response = app_->api().handle(request);
  app_->conductor().waitIdle();
  checkResponse(request, response);
  return response;
}

void checkResponse(const server::ApiRequest& request, const server::ApiResponse& response) {
  if (response.status < 100 || response.status >= 500) {
    fail("the API answered with status " + std::to_string(response.status),
         describe(request, response));
  }
  if (response.body.empty()) return;
  if (response.contentType.find("json") != std::string::npos) {
    if (!isValidUtf8(response.body)) fail("the JSON body is not UTF-8", describe(request, response));
    const auto body = nlohmann::json::parse(response.body, nullptr, false);
    if (body.is_discarded()) fail("the JSON body does not parse", describe(request, response));
    if (body.is_object() && body.contains("error_message") && body["error_message"].is_string() &&
        !nlohmann::json::accept(body["error_message"].get<std::string>())) {
      fail("the error_message is not JSON", describe(request, response));
    }
  } else if (response.contentType.starts_with("text/") && !isValidUtf8(response.body)) {
    fail("the text body is not UTF-8", describe(request, response));
  }
}

}  // namespace kiln::fuzz
