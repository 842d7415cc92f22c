#include "registry/retry.hpp"

#include "util/interrupt.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <random>

namespace registry {

bool retryable_status(long s) {
  return s == 408 || s == 429 || (s >= 500 && s != 501 && s != 505);
}

double retry_after_s(const Response& r) {
  std::string ra = r.headers.get("retry-after");
  if (ra.empty()) {
    return -1;
  }
  if (std::all_of(ra.begin(), ra.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    return ra.size() > 9 ? 1e9 : std::stod(ra); // any delay that long is capped by the caller
  }
  std::tm tm{};
  if (strptime(ra.c_str(), "%a, %d %b %Y %H:%M:%S", &tm)) {
    return static_cast<double>(timegm(&tm) - std::time(nullptr));
  }
  return -1;
}

RetryOptions retry_options(const ClientOptions& o) {
  return RetryOptions{o.max_attempts, o.backoff_initial_s, o.backoff_max_s, o.log};
}

Retrying::Retrying(std::shared_ptr<Transport> http, RetryOptions options, std::atomic<std::int64_t>* retries)
    : m_http(std::move(http)), m_opt(std::move(options)), m_retries(retries) {}

void Retrying::log(int level, const std::string& line) const {
  if (m_opt.log) {
    m_opt.log(level, line);
  }
}

void Retrying::backoff(int attempt, const Response* r, const std::string& why) {
  thread_local std::mt19937 rng{std::random_device{}()};
  double base = std::min(m_opt.backoff_max_s, m_opt.backoff_initial_s * std::pow(2.0, attempt - 1));
  double delay = base * std::uniform_real_distribution<double>(0.5, 1.0)(rng);
  if (r) {
    double after = retry_after_s(*r);
    if (after >= 0) {
      delay = std::min(std::max(after, 0.0), std::max(m_opt.backoff_max_s, 1.0));
    }
  }
  if (m_retries) {
    ++*m_retries;
  }
  if (m_opt.log) {
    std::string secs =
        std::to_string(std::lround(delay * 10) / 10) + "." + std::to_string(std::lround(delay * 10) % 10);
    m_opt.log(1, "retrying in " + secs + " s (attempt " + std::to_string(attempt + 1) + " of " +
                     std::to_string(m_opt.max_attempts) + "): " + why);
  }
  util::sleep_interruptible(delay);
}

bool Retrying::retry(const std::function<Attempt(int attempt)>& attempt) {
  for (int n = 1;; ++n) {
    Attempt a = attempt(n);
    switch (a.verdict) {
    case Attempt::Verdict::finish:
      return true;
    case Attempt::Verdict::abandon:
      return false;
    case Attempt::Verdict::again:
      --n;
      continue;
    case Attempt::Verdict::retry:
      if (n >= m_opt.max_attempts) {
        return false;
      }
      backoff(n, a.response ? &*a.response : nullptr, a.why);
      continue;
    }
  }
}

std::optional<Response> Retrying::call(const Call& c) {
  std::optional<Response> last;
  std::optional<TransportFailure> failure;
  bool stopped = false;
  bool finished = retry([&](int) -> Attempt {
    Request req = c.make();
    failure.reset();
    try {
      last = m_http->perform(req, c.tls);
    } catch (const TransportFailure& f) {
      if (c.fall_back && c.fall_back(f)) {
        stopped = true;
        return Attempt::abandon();
      }
      if (!f.retryable) {
        throw;
      }
      failure = f;
      return Attempt::retry(c.log_prefix + f.what());
    }
    if (c.judge) {
      if (auto verdict = c.judge(*last)) {
        return Attempt{*verdict, {}, std::nullopt};
      }
    }
    if (retryable_status(last->status)) {
      std::string reason = c.status_reason ? c.status_reason(*last) : "HTTP " + std::to_string(last->status);
      return Attempt::retry(c.log_prefix + reason, *last);
    }
    return Attempt::finish();
  });
  if (stopped) {
    return std::nullopt;
  }
  if (!finished && failure) {
    throw *failure;
  }
  return last;
}

Response Retrying::perform_once(const Request& q, const TlsPolicy& tls) {
  return m_http->perform(q, tls);
}

} // namespace registry
