// File: agent/main.cpp
//
// kiln-agent's entry point: `kiln-agent write-image ...` writes one image by hand (benchmarks,
// labs); otherwise the agent loop runs (agent/agent.h), configured from the arguments or, in
// the ramdisk, from the kernel command line (agent/agent_config.h).
#include <pthread.h>
#include <signal.h>

#include <cstring>
#include <iostream>
#include <thread>

#include "agent/agent.h"
#include "agent/hardware/hardware_manager.h"
#include "agent/image/write_image_command.h"
#include "shared/core/file.h"
#include "shared/core/log.h"

int main(int argc, char** argv) {
  using namespace kiln;
  using namespace kiln::agent;
  if (argc >= 2 && std::strcmp(argv[1], "write-image") == 0) {
    return runWriteImageCommand(argc - 1, argv + 1);
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
  Logger::setLevel(parseLogLevel(config->logLevel));

  // SIGTERM/SIGINT are taken by a thread that asks the agent to stop (no work in a handler);
  // blocked before any thread starts, so every thread inherits the mask.
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

  ProcessCommandRunner runner;
  HttpClientPtr http = makeHttpClient();
  SystemClock clock;
  RootedSysfsReader sysfs(config->sysRoot);
  HttpServerClient server(*http, config->apiUrl);
  Agent agent(*config, AgentDeps{server, runner, *http, clock, sysfs}, genericHardwareSteps(sysfs));
  std::thread([&agent, stopSignals] {
    int signal = 0;
    if (sigwait(&stopSignals, &signal) == 0) agent.stop();
  }).detach();
  Logger("agent").info("starting", {{"version", agentVersion()}, {"api_url", config->apiUrl},
                                    {"by_hand", config->byHand ? "yes" : "no"}});
  return agent.run();
}
