#pragma once
// Runs a helper program (apt-get, gpgv) to completion: its stdin from /dev/null, its
// stdout and stderr captured (each up to a cap), within a deadline, with the default
// SIGPIPE back, so a hung or chatty helper cannot hold paddle-image for ever.
#include <string>
#include <vector>

namespace util {

struct ProcessResult {
  int exit_code = -1; // the exit status; -1 when killed by a signal
  int signal = 0;     // the signal that ended it (SIGKILL when the deadline passed)
  bool timed_out = false;
  std::string out, err;
};

struct ProcessOptions {
  std::vector<std::string> env_set; // "NAME=value" added to (or replacing in) the environment
  int timeout_s = 600;
  std::size_t output_cap = std::size_t{64} << 20; // per stream; more is dropped
};

// Runs argv[0] (looked up on PATH) with argv. Throws util::Error(usage) naming the
// program and `install_hint` when it cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options,
                          const std::string& install_hint);

} // namespace util
