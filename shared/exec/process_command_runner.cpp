#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "shared/core/log.h"
#include "shared/core/strings.h"
#include "shared/exec/command_runner.h"

extern char** environ;

namespace kiln {
namespace {

struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() {
    for (int f : fd) {
      if (f >= 0) close(f);
    }
  }
  void closeEnd(int i) {
    if (fd[i] >= 0) close(fd[i]);
    fd[i] = -1;
  }
};

/// write() that reports a vanished reader as EPIPE instead of letting SIGPIPE kill the
/// process (a tool may exit without reading all its stdin). SIGPIPE from write() is sent to
/// the writing thread, so blocking it here and consuming the pending one is thread-local.
ssize_t writeWithoutSigpipe(int fd, const char* data, size_t size) {
  sigset_t pipeSet;
  sigset_t oldSet;
  sigemptyset(&pipeSet);
  sigaddset(&pipeSet, SIGPIPE);
  sigset_t pending;
  sigpending(&pending);
  const bool wasPending = sigismember(&pending, SIGPIPE) == 1;
  pthread_sigmask(SIG_BLOCK, &pipeSet, &oldSet);
  const ssize_t w = write(fd, data, size);
  const int writeErrno = errno;
  if (w < 0 && writeErrno == EPIPE && !wasPending) {
    const timespec zero{0, 0};
    while (sigtimedwait(&pipeSet, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &oldSet, nullptr);
  errno = writeErrno;
  return w;
}

}  // namespace

std::string failureMessage(const Command& command, const CommandOutput& output,
                           const std::string& device) {
  std::string detail = trim(output.err);
  if (detail.empty()) detail = trim(output.out);
  return command.display() + " failed" + (device.empty() ? "" : " on " + device) + " (exit " +
         std::to_string(output.exitCode) + "): " + detail;
}

std::string Command::display() const {
  if (!displayName.empty()) return displayName;
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out.push_back(' ');
    out += a;
  }
  return out;
}

Result<CommandOutput> ProcessCommandRunner::run(const Command& command) {
  if (command.argv.empty()) return invalid("empty command");
  Pipe in, out, err;
  if (pipe2(in.fd, O_CLOEXEC) != 0 || pipe2(out.fd, O_CLOEXEC) != 0 || pipe2(err.fd, O_CLOEXEC) != 0) {
    return fail(ErrorCode::Unavailable, std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.fd[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out.fd[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err.fd[1], 2);

  std::vector<std::string> envStore = {"LC_ALL=C"};
  if (const char* path = std::getenv("PATH")) {
    envStore.push_back(std::string("PATH=") + path);
  } else {
    envStore.push_back("PATH=/usr/sbin:/usr/bin:/sbin:/bin");
  }
  for (const auto& [k, v] : command.env) envStore.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : envStore) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (const auto& a : command.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  // The child starts with no signal blocked and the stop signals at their default actions,
  // whatever this process blocks (kiln-server and kiln-agent block SIGTERM and SIGINT in every
  // thread and take them with sigwait): a tool must stay killable by SIGTERM.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGTERM, SIGINT, SIGPIPE}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return fail(ErrorCode::Unavailable,
                "cannot run " + command.argv[0] + ": " + std::strerror(rc));
  }
  in.closeEnd(0);
  out.closeEnd(1);
  err.closeEnd(1);

  CommandOutput result;
  std::string toWrite = command.stdinData.value_or("");
  size_t written = 0;
  if (toWrite.empty()) in.closeEnd(1);
  fcntl(in.fd[1] >= 0 ? in.fd[1] : out.fd[0], F_SETFL, O_NONBLOCK);
  const auto deadline = std::chrono::steady_clock::now() + command.timeout;
  bool timedOut = false;
  while (out.fd[0] >= 0 || err.fd[0] >= 0) {
    pollfd fds[3];
    int n = 0;
    int outIdx = -1, errIdx = -1, inIdx = -1;
    if (out.fd[0] >= 0) { outIdx = n; fds[n++] = {out.fd[0], POLLIN, 0}; }
    if (err.fd[0] >= 0) { errIdx = n; fds[n++] = {err.fd[0], POLLIN, 0}; }
    if (in.fd[1] >= 0) { inIdx = n; fds[n++] = {in.fd[1], POLLOUT, 0}; }
    const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (remaining.count() <= 0) {
      timedOut = true;
      break;
    }
    const int ready = poll(fds, static_cast<nfds_t>(n), static_cast<int>(std::min<long long>(remaining.count(), 1000)));
    if (ready < 0 && errno != EINTR) {
      // poll() itself failed: stop the child rather than wait for it blindly.
      timedOut = true;
      break;
    }
    char buf[65536];
    auto drain = [&](int idx, Pipe& p, std::string& sink) {
      if (idx < 0 || !(fds[idx].revents & (POLLIN | POLLHUP | POLLERR))) return;
      const ssize_t got = read(p.fd[0], buf, sizeof buf);
      if (got > 0) {
        sink.append(buf, static_cast<size_t>(got));
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        p.closeEnd(0);
      }
    };
    drain(outIdx, out, result.out);
    drain(errIdx, err, result.err);
    if (inIdx >= 0 && (fds[inIdx].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t w =
          writeWithoutSigpipe(in.fd[1], toWrite.data() + written, toWrite.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if (w < 0 && errno != EAGAIN && errno != EINTR) written = toWrite.size();
      if (written >= toWrite.size()) in.closeEnd(1);
    }
  }
  if (timedOut) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timedOut) {
    return fail(ErrorCode::DeadlineExceeded,
                command.display() + " did not finish within " +
                    std::to_string(command.timeout.count()) + " ms");
  }
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  Logger("exec").debug("command finished", {{"command", command.display()},
                                            {"exit_code", std::to_string(result.exitCode)}});
  return result;
}

}  // namespace kiln
