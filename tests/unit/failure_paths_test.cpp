// Failure paths (issue 34): every exception stored across a C callback is thrown through
// it here, so the ASan+UBSan run of the unit tests (scripts/test.sh) sees any
// use-after-free of the error in flight; and no network read can hang for ever (an
// endless body, a drip), checked against a small HTTP server on 127.0.0.1.
#include <doctest/doctest.h>

#include "layers/tar.hpp"
#include "layers/tree.hpp"
#include "registry/http.hpp"
#include "tests/unit/support.hpp"
#include "util/parallel.hpp"

#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace unit_failure_paths_test {

using namespace test_support;
namespace fs = std::filesystem;

namespace {

// A one-thread HTTP server on 127.0.0.1: each connection's request head is read, then
// `answer` writes whatever it likes to the socket (it returns when the client goes).
class TinyServer {
public:
  explicit TinyServer(std::function<void(int fd)> answer) : m_answer(std::move(answer)) {
    std::signal(SIGPIPE, SIG_IGN); // a client that hangs up turns writes into EPIPE
    m_listen = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(m_listen >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    REQUIRE(::bind(m_listen, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(m_listen, 4) == 0);
    socklen_t len = sizeof a;
    ::getsockname(m_listen, reinterpret_cast<sockaddr*>(&a), &len);
    m_port = ntohs(a.sin_port);
    m_thread = std::thread([this] {
      for (;;) {
        int fd = ::accept(m_listen, nullptr, nullptr);
        if (fd < 0 || m_stop) {
          if (fd >= 0) {
            ::close(fd);
          }
          return;
        }
        std::string head;
        char c = 0;
        while (head.find("\r\n\r\n") == std::string::npos && ::read(fd, &c, 1) == 1) {
          head += c;
        }
        m_answer(fd);
        ::close(fd);
      }
    });
  }
  ~TinyServer() {
    m_stop = true;
    ::shutdown(m_listen, SHUT_RDWR);
    ::close(m_listen);
    m_thread.join();
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(m_port) + path; }

private:
  std::function<void(int)> m_answer;
  int m_listen = -1;
  int m_port = 0;
  std::atomic<bool> m_stop{false};
  std::thread m_thread;
};

bool send_all(int fd, const std::string& s) {
  return ::send(fd, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
}

registry::HttpOptions quick_options() {
  registry::HttpOptions o;
  o.connect_timeout_s = 5;
  o.stall_timeout_s = 5;
  o.document_deadline_s = 1;
  o.min_rate_bps = 1024;
  o.rate_window_s = 1;
  o.trust = registry::SystemTrust{};
  return o;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

} // namespace

TEST_SUITE("failure paths") {
  // layers/tar.cpp write_cb: the sink's exception is kept, libarchive fails the write,
  // and the same exception reaches the caller, whether the archive is finished or
  // abandoned half-written.
  TEST_CASE("a TarBuilder whose sink fails rethrows the sink's own error, finished or abandoned") {
    for (int fail_at : {1, 3, 50}) {
      CAPTURE(fail_at);
      int calls = 0;
      auto sink = [&](const char*, std::size_t) {
        if (++calls >= fail_at) {
          throw util::Error(util::ErrorKind::io, "no space left on device: /cache/blob.tmp", "free some space");
        }
      };
      auto e = error_of([&] {
        layers::TarBuilder tb(0, sink);
        for (int i = 0; i < 200; ++i) {
          tb.add_bytes("f" + std::to_string(i), std::string(4096, 'x'));
        }
        tb.finish();
      });
      CHECK(e.kind() == util::ErrorKind::io);
      CHECK(std::string(e.what()) == "no space left on device: /cache/blob.tmp");
      CHECK(e.hint() == "free some space");
    }
    // Abandoned after the failure (the caller's own error unwinds it): the destructor
    // must not call into the failed sink's destroyed state.
    int calls = 0;
    auto sink = [&](const char*, std::size_t) {
      if (++calls >= 2) {
        throw util::Error(util::ErrorKind::io, "disk full");
      }
    };
    {
      layers::TarBuilder tb(0, sink);
      auto e = error_of([&] {
        for (int i = 0; i < 50; ++i) {
          tb.add_bytes("f" + std::to_string(i), std::string(8192, 'y'));
        }
      });
      CHECK(std::string(e.what()) == "disk full");
    }
  }

  TEST_CASE("write_tar with a failing sink rethrows its error (a full disk while a layer is written)") {
    auto tmp = make_temp("pi-failure-test-");
    for (int i = 0; i < 20; ++i) {
      util::write_file_atomic(tmp.path() / ("f" + std::to_string(i)), std::string(10000, 'a'));
    }
    layers::EntrySet set;
    layers::CopyRule rule;
    rule.from = tmp.path();
    rule.to = "/data/";
    rule.origin = "test";
    set.add(rule);
    std::int64_t written = 0;
    auto e = error_of([&] {
      layers::write_tar(set, layers::TarOptions{}, [&](const char*, std::size_t n) {
        written += static_cast<std::int64_t>(n);
        if (written > 30000) {
          throw util::Error(util::ErrorKind::io, "cannot write layer: No space left on device");
        }
      });
    });
    CHECK(e.kind() == util::ErrorKind::io);
    CHECK(contains(e.what(), "No space left on device"));
  }

  // layers/tar.cpp stream_read: the reader's exception is kept and rethrown by scan_tar.
  TEST_CASE("scan_tar over a reader that fails rethrows the reader's error") {
    std::string tar;
    {
      layers::TarBuilder tb(0, [&](const char* d, std::size_t n) { tar.append(d, n); });
      for (int i = 0; i < 40; ++i) {
        tb.add_bytes("m" + std::to_string(i), std::string(50000, 'z'));
      }
      tb.finish();
    }
    std::size_t pos = 0;
    auto read = [&](char* buf, std::size_t len) -> std::size_t {
      if (pos > tar.size() / 2) {
        throw util::Error(util::ErrorKind::network, "the registry connection was cut");
      }
      std::size_t n = std::min(len, tar.size() - pos);
      std::memcpy(buf, tar.data() + pos, n);
      pos += n;
      return n;
    };
    auto e = error_of([&] {
      layers::scan_tar(
          read, "layer", [](const layers::TarMember&) { return true; },
          [](const layers::TarMember&, const std::string&) {});
    });
    CHECK(e.kind() == util::ErrorKind::network);
    CHECK(std::string(e.what()) == "the registry connection was cut");
  }

  // layers/tree.cpp: a scan worker's exception is kept and rethrown after the join.
  TEST_CASE("a tree scan on several threads rethrows one worker's error") {
    auto tmp = make_temp("pi-failure-test-");
    for (int d = 0; d < 8; ++d) {
      fs::create_directories(tmp.path() / ("d" + std::to_string(d)));
      util::write_file_atomic(tmp.path() / ("d" + std::to_string(d)) / "x", "x");
    }
    fs::create_symlink("/etc/passwd", tmp.path() / "d5" / "escape");
    layers::EntrySet set;
    set.set_threads(4);
    layers::CopyRule rule;
    rule.from = tmp.path();
    rule.to = "/app/";
    rule.origin = "spec.yaml:3:5";
    auto e = error_of([&] { set.add(rule); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "escape"));
  }

  // util/parallel.cpp: the first failure is kept and rethrown after every thread ends.
  TEST_CASE("parallel_for rethrows the first failure after joining") {
    std::atomic<int> ran{0};
    auto e = error_of([&] {
      util::parallel_for(64, 4, [&](std::size_t i) {
        ++ran;
        if (i % 7 == 3) {
          throw util::Error(util::ErrorKind::io, "job " + std::to_string(i) + " failed");
        }
      });
    });
    CHECK(e.kind() == util::ErrorKind::io);
    CHECK(contains(e.what(), "failed"));
    CHECK(ran.load() >= 1);
  }

  // registry/http.cpp on_write and on_read: a sink's or a reader's exception crosses
  // libcurl's frames as a stored exception and reaches the caller whole.
  TEST_CASE("Http: a sink or a body reader that throws gives the caller that error") {
    TinyServer server([](int fd) {
      send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\nConnection: close\r\n\r\n");
      std::string chunk(65536, 'b');
      for (int i = 0; i < 16 && send_all(fd, chunk); ++i) {
      }
    });
    registry::Http http(quick_options());
    registry::Request q;
    q.url = server.url("/v2/r/blobs/sha256:x");
    q.sink = [](const char*, std::size_t) -> bool {
      throw util::Error(util::ErrorKind::io, "cannot write blob: No space left on device");
    };
    auto e = error_of([&] { http.perform(q, {}); });
    CHECK(e.kind() == util::ErrorKind::io);
    CHECK(contains(e.what(), "No space left on device"));

    // The upload's server answers nothing: it waits for the body, so curl certainly asks
    // the reader for it (a server that answered at once could win the race).
    TinyServer quiet([](int fd) {
      char c = 0;
      while (::read(fd, &c, 1) == 1) {
      }
    });
    registry::Request put;
    put.method = "PUT";
    put.url = quiet.url("/v2/r/blobs/uploads/1");
    put.body_size = 1 << 20;
    put.reader = [](char*, std::size_t) -> std::size_t {
      throw util::Error(util::ErrorKind::io, "cannot read layer: Input/output error");
    };
    auto e2 = error_of([&] { http.perform(put, {}); });
    CHECK(e2.kind() == util::ErrorKind::io);
    CHECK(contains(e2.what(), "Input/output error"));
  }

  TEST_CASE("Http: a document without end fails at its cap instead of being cut and parsed") {
    TinyServer server([](int fd) {
      send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"a\":\"");
      std::string chunk(65536, 'a');
      for (int i = 0; i < 200 && send_all(fd, chunk); ++i) {
      }
    });
    registry::Http http(quick_options());
    registry::Request q;
    q.url = server.url("/v2/r/manifests/t");
    q.max_body = 1u << 20;
    auto e = error_of([&] { http.perform(q, {}); });
    CHECK(e.kind() == util::ErrorKind::registry);
    CHECK(contains(e.what(), "larger than 1048576 bytes"));
    CHECK(contains(e.what(), "127.0.0.1"));
  }

  TEST_CASE("Http: a dripping document fails at its deadline, a dripping blob below the minimum rate") {
    auto drip = [](int fd) {
      send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nConnection: close\r\n\r\n");
      for (int i = 0; i < 60 && send_all(fd, "x"); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    };
    {
      TinyServer server(drip);
      registry::Http http(quick_options());
      registry::Request q;
      q.url = server.url("/token");
      auto t0 = std::chrono::steady_clock::now();
      try {
        http.perform(q, {});
        FAIL("a drip of 10 bytes/s finished");
      } catch (const registry::TransportFailure& f) {
        CHECK(f.curl_code == 28);
        CHECK(f.retryable);
        CHECK(contains(f.what(), "no complete answer within 1 s"));
      }
      CHECK(seconds_since(t0) < 4);
    }
    {
      TinyServer server(drip);
      registry::Http http(quick_options());
      registry::Request q;
      q.url = server.url("/v2/r/blobs/sha256:y");
      std::size_t got = 0;
      q.sink = [&](const char*, std::size_t n) {
        got += n;
        return true;
      };
      auto t0 = std::chrono::steady_clock::now();
      try {
        http.perform(q, {});
        FAIL("a drip of 10 bytes/s finished");
      } catch (const registry::TransportFailure& f) {
        CHECK(f.curl_code == 28);
        CHECK(contains(f.what(), "too slow: fewer than 1024 bytes a second over 1 s"));
      }
      CHECK(got > 0);
      CHECK(seconds_since(t0) < 4);
    }
  }

  TEST_CASE("Http: a slow but steady blob completes (the rate floor is an average, not a stall)") {
    TinyServer server([](int fd) {
      send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 40960\r\nConnection: close\r\n\r\n");
      for (int i = 0; i < 20; ++i) {
        send_all(fd, std::string(2048, 's')); // 2 KiB every 100 ms: 20 KiB/s, 2 s in all
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    registry::Http http(quick_options());
    registry::Request q;
    q.url = server.url("/v2/r/blobs/sha256:z");
    std::size_t got = 0;
    q.sink = [&](const char*, std::size_t n) {
      got += n;
      return true;
    };
    registry::Response r = http.perform(q, {});
    CHECK(r.status == 200);
    CHECK(got == 40960);
  }
}

} // namespace unit_failure_paths_test
