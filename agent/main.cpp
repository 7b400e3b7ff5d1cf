// File: agent/main.cpp
//
// kiln-agent's entry point: `kiln-agent write-image ...` writes one image by hand (benchmarks,
// labs); `kiln-agent network-config FILE` configures the ramdisk's network from a
// network_data.json (agent/network/network_data.h, run by image-build/init); otherwise the agent loop runs (agent/agent.h), configured from the arguments or, in
// the ramdisk, from the kernel command line (agent/agent_config.h).
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>

#include "agent/agent.h"
#include "agent/api_tls.h"
#include "agent/dns_resolver.h"
#include "agent/hardware/hardware_manager.h"
#include "agent/image/write_image_command.h"
#include "agent/network/network_data.h"
#include "shared/core/file.h"
#include "shared/core/log.h"

int main(int argc, char** argv) {
  using namespace kiln;
  using namespace kiln::agent;
  if (argc >= 2 && std::strcmp(argv[1], "write-image") == 0) {
    return runWriteImageCommand(argc - 1, argv + 1);
  }
  if (argc >= 2 && std::strcmp(argv[1], "network-config") == 0) {
    return runNetworkConfigCommand(argc - 1, argv + 1);
  }
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << agentUsage();
    return 0;
  }
  if (!args.empty() && args[0] == "--version") {
    std::cout << agentVersion() << "\n";
    return 0;
  }
  auto config = parseAgentArgs(args, kiln::readFile("/proc/cmdline").value_or(""));
  if (!config) {
    std::cerr << "kiln-agent: " << config.error().message << "\n\n" << agentUsage();
    return 2;
  }
  // parseAgentArgs accepted only a level's name.
  Logger::setLevel(parseLogLevel(config->logLevel).value_or(LogLevel::Info));
  // This boot's log lines and commands, for collect_logs (agent/diagnostics/log_bundle.h).
  // Static: the tap may still be called by a thread logging while main returns.
  static RamdiskRecord record;
  // The same lines go to kiln-server with the heartbeats (agent/diagnostics/log_outbox.h).
  static LogOutbox outbox;
  Logger::setTap([](std::string_view line) {
    record.appendLogLine(line);
    outbox.append(line);
  });

  // SIGTERM/SIGINT are taken by a thread that asks the agent to stop (no work in a handler);
  // blocked before any thread starts, so every thread inherits the mask.
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

  // TLS (agent/api_tls.h): an inline CA and the download bundle go to a private temporary
  // directory, removed on exit.
  std::string tlsDir;
  if (!config->tls.insecure && (!config->tls.inlineCaPem.empty() || !config->tls.caFile.empty())) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/kiln-agent-tls.XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::cerr << "kiln-agent: cannot create a directory for the CA files: "
                << std::strerror(errno) << "\n";
      return 2;
    }
    tlsDir = pattern;
  }
  struct RemoveDir {
    std::string path;
    ~RemoveDir() {
      std::error_code ec;
      if (!path.empty()) std::filesystem::remove_all(path, ec);
    }
  } removeTlsDir{tlsDir};
  auto tls = prepareTlsFiles(config->tls, tlsDir, systemCaBundle());
  if (!tls) {
    std::cerr << "kiln-agent: " << tls.error().message << "\n";
    return 2;
  }

  ProcessCommandRunner processRunner;
  SystemClock clock;
  RecordingCommandRunner runner(processRunner, record, clock);
  // Host names go to DNS through c-ares (agent/dns_resolver.h): this binary has no NSS.
  const DnsOptions dns{config->dnsServers};
  HttpClientPtr http = makeHttpClient(makeDnsResolver(dns));
  TlsDefaultsHttpClient apiHttp(*http, tls->api);
  TlsDefaultsHttpClient downloadHttp(*http, tls->downloads);
  RootedSysfsReader sysfs(config->sysRoot);
  HttpServerClient server(apiHttp, config->apiUrl);
  Agent agent(*config,
              AgentDeps{server, runner, downloadHttp, clock, sysfs, &record, &processRunner, &outbox},
              genericHardwareSteps(sysfs));
  std::thread([&agent, stopSignals] {
    int signal = 0;
    if (sigwait(&stopSignals, &signal) == 0) agent.stop();
  }).detach();
  Logger log("agent");
  log.info("starting", {{"version", agentVersion()},
                        {"api_url", config->apiUrl},
                        {"by_hand", config->byHand ? "yes" : "no"},
                        {"tls_ca", config->tls.source},
                        {"dns", describeDns(dns)}});
  if (config->tls.insecure) {
    log.warning("TLS certificate verification is OFF (insecure switch: --insecure, kiln.insecure= "
                "or ipa-insecure=): anyone on the path can impersonate kiln-server and take the "
                "agent token, the node's secrets and the images; use it only in a lab");
  } else if (config->apiUrl.rfind("http://", 0) == 0) {
    log.warning("the API URL is plain http: the agent token and step arguments cross the network "
                "in clear (serve the API over https: [api] enable_ssl_api)");
  }
  return agent.run();
}
