#include "util/interrupt.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>
#include <unistd.h>

namespace util {

namespace {

volatile std::sig_atomic_t g_signal = 0;

void write_stderr(const char* s) {
  // write(2) is async-signal-safe; a short or failed write is of no consequence here.
  ssize_t rc = ::write(STDERR_FILENO, s, std::strlen(s));
  (void)rc;
}

extern "C" void on_signal(int sig) {
  if (g_signal != 0) {
    // Second signal: stop now, the way the user asked.
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_signal = sig;
  write_stderr(sig == SIGINT ? "\npaddle-image: interrupted; removing temporary files (press Ctrl-C again to stop "
                               "at once)\n"
                             : "\npaddle-image: terminated; removing temporary files\n");
}

} // namespace

void install_interrupt_handlers() {
  // A peer that closes its end (a credential helper that exits without reading its
  // input, a pipe to `head`) makes write(2) fail with EPIPE, which the writer reports;
  // it never kills the process without a message (exit 141). Children started with
  // posix_spawn get SIGPIPE's default back (util: spawn attributes).
  std::signal(SIGPIPE, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  // SA_RESTART: system calls that do not expect EINTR go on; the work notices the
  // signal at its next check point (at most about a second away).
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction old {};
    // A signal ignored by the parent (nohup, `cmd &` in a non-interactive shell) stays ignored.
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) {
      continue;
    }
    ::sigaction(sig, &sa, nullptr);
  }
}

int interrupted() {
  return g_signal;
}

void throw_interrupted() {
  int sig = g_signal != 0 ? static_cast<int>(g_signal) : SIGINT;
  throw Error(ErrorKind::interrupted,
              std::string(sig == SIGTERM ? "terminated (SIGTERM)" : "interrupted (SIGINT)") +
                  "; temporary files removed, nothing half-written was kept",
              "run the same command again: finished blobs and cached layers are reused");
}

void check_interrupted() {
  if (g_signal != 0) {
    throw_interrupted();
  }
}

void sleep_interruptible(double seconds) {
  using clock = std::chrono::steady_clock;
  auto end = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(seconds));
  for (;;) {
    check_interrupted();
    auto now = clock::now();
    if (now >= end) {
      return;
    }
    clock::duration step = std::chrono::milliseconds(50);
    std::this_thread::sleep_for(std::min(step, end - now));
  }
}

void simulate_interrupt(int sig) {
  g_signal = sig;
}

} // namespace util
