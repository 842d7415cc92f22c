#include "util/parallel.hpp"

#include "util/interrupt.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace util {

void parallel_for(std::size_t n, int jobs, const std::function<void(std::size_t)>& fn) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::exception_ptr first;
  std::mutex m;
  auto work = [&] {
    while (!stop) {
      std::size_t i = next++;
      if (i >= n) {
        return;
      }
      try {
        check_interrupted();
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> g(m);
        if (!first) {
          first = std::current_exception();
        }
        stop = true;
      }
    }
  };
  std::size_t k = std::min<std::size_t>(n, static_cast<std::size_t>(std::max(jobs, 1)));
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < k; ++t) {
    threads.emplace_back(work);
  }
  work();
  for (auto& t : threads) {
    t.join();
  }
  if (first) {
    std::rethrow_exception(first);
  }
}

} // namespace util
