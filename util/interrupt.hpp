#pragma once
// SIGINT and SIGTERM as errors. The handler only records the signal; the work notices
// it at its next check point (a file write or read, a parallel task, an HTTP transfer's
// progress callback, a retry's wait) and throws Error(interrupted), so the stack
// unwinds and every temporary file, directory and upload session is cleaned up by the
// object that owns it. main then exits 128 + the signal (130, 143). A second signal
// while cleaning up takes the default action at once.
#include "util/error.hpp"

namespace util {

// Installs the handlers (main calls it once, before any work).
void install_interrupt_handlers();
// The signal received, or 0.
int interrupted();
// Throws Error(interrupted) when a signal was received.
void check_interrupted();
[[noreturn]] void throw_interrupted();
// Sleeps for `seconds`, waking every 50 ms to check_interrupted().
void sleep_interruptible(double seconds);
// Records `sig` as if it had been received; 0 forgets it (tests).
void simulate_interrupt(int sig);

} // namespace util
