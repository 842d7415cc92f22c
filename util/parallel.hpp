#pragma once
// The one worker pool of the project: run n independent items on up to `jobs` threads.
#include <cstddef>
#include <functional>

namespace util {

// Runs fn(i) for i in [0, n) on up to `jobs` threads (the caller's thread is one of
// them); the first error stops the others from starting new items and is rethrown
// once every running item has finished.
void parallel_for(std::size_t n, int jobs, const std::function<void(std::size_t)>& fn);

} // namespace util
