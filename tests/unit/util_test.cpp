#include <thread>

#include "tests/unit/support.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/interrupt.hpp"
#include "util/parallel.hpp"
#include "util/sha256.hpp"
#include "util/text.hpp"
#include "util/url.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdint>
#include <fcntl.h>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace unit_util_test {

namespace fs = std::filesystem;
using test_support::contains;
using test_support::error_of;

namespace {

util::TempDir make_temp() {
  return test_support::make_temp("pi-util-test-");
}

std::vector<std::string> list_dir(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  return names;
}

// Tries a non-blocking flock on a separate open file description.
bool can_flock(const fs::path& p, int op) {
  int fd = ::open(p.c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(fd >= 0);
  bool ok = ::flock(fd, op | LOCK_NB) == 0;
  ::close(fd);
  return ok;
}

const std::array<util::ErrorKind, 12> k_all_kinds = {
    util::ErrorKind::usage,   util::ErrorKind::input,        util::ErrorKind::io,         util::ErrorKind::auth,
    util::ErrorKind::network, util::ErrorKind::registry,     util::ErrorKind::integrity,  util::ErrorKind::incompatible,
    util::ErrorKind::host,    util::ErrorKind::verification, util::ErrorKind::incomplete, util::ErrorKind::internal};

} // namespace

TEST_SUITE("util") {

  TEST_CASE("Sha256 matches the FIPS 180-2 test vectors") {
    CHECK(util::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(util::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(util::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");

    SUBCASE("streaming in pieces gives the same digest as one call") {
      util::Sha256 h;
      std::string chunk(1000, 'a');
      for (int i = 0; i < 1000; ++i) {
        h.update(chunk);
      }
      CHECK(h.finish_hex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    }
    SUBCASE("reset starts over") {
      util::Sha256 h;
      h.update("partial bytes of a first attempt");
      h.reset();
      h.update("abc");
      CHECK(h.finish_hex() == util::sha256_hex("abc"));
    }
    SUBCASE("empty updates are ignored") {
      util::Sha256 h;
      h.update("a", 0);
      h.update("ab");
      h.update(nullptr, 0);
      h.update("c");
      CHECK(h.finish_hex() == util::sha256_hex("abc"));
    }
    SUBCASE("finish_raw is the binary form of finish_hex") {
      util::Sha256 h;
      h.update("abc");
      auto raw = h.finish_raw();
      CHECK(raw[0] == 0xba);
      CHECK(raw[1] == 0x78);
      CHECK(raw[31] == 0xad);
    }
    SUBCASE("sha256_file_hex hashes a file's content") {
      auto tmp = make_temp();
      util::write_file_atomic(tmp.path() / "f", "abc");
      CHECK(util::sha256_file_hex(tmp.path() / "f") == util::sha256_hex("abc"));
    }
  }

  TEST_CASE("base64url_nopad follows RFC 4648 without padding") {
    auto b64 = [](const std::string& s) {
      std::vector<std::uint8_t> bytes(s.begin(), s.end());
      return util::base64url_nopad(bytes);
    };
    CHECK(b64("") == "");
    CHECK(b64("f") == "Zg");
    CHECK(b64("fo") == "Zm8");
    CHECK(b64("foo") == "Zm9v");
    CHECK(b64("foob") == "Zm9vYg");
    CHECK(b64("fooba") == "Zm9vYmE");
    CHECK(b64("foobar") == "Zm9vYmFy");
    // The URL-safe alphabet uses '-' and '_' instead of '+' and '/'.
    std::vector<std::uint8_t> high = {0xfb, 0xff, 0xfe};
    CHECK(util::base64url_nopad(high) == "-__-");
    // As in wheel RECORD files: sha256 of the empty string.
    CHECK(util::hex_to_base64url_nopad("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") ==
          "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
  }

  TEST_CASE("levenshtein edit distance") {
    CHECK(util::levenshtein("", "") == 0);
    CHECK(util::levenshtein("abc", "") == 3);
    CHECK(util::levenshtein("", "abc") == 3);
    CHECK(util::levenshtein("layers", "layers") == 0);
    CHECK(util::levenshtein("kitten", "sitting") == 3);
    CHECK(util::levenshtein("flaw", "lawn") == 2);
    CHECK(util::levenshtein("layres", "layers") == 2);
    CHECK(util::levenshtein("form", "from") == 2);
    CHECK(util::levenshtein("abc", "abcd") == 1);
    // Symmetric.
    CHECK(util::levenshtein("sitting", "kitten") == util::levenshtein("kitten", "sitting"));
  }

  TEST_CASE("rfc3339_utc formats Unix times in UTC") {
    CHECK(util::rfc3339_utc(0) == "1970-01-01T00:00:00Z");
    CHECK(util::rfc3339_utc(315532800) == "1980-01-01T00:00:00Z");
    CHECK(util::rfc3339_utc(1704164645) == "2024-01-02T03:04:05Z");
    CHECK(util::rfc3339_utc(951782400) == "2000-02-29T00:00:00Z"); // leap day
    CHECK(util::rfc3339_utc(1709251199) == "2024-02-29T23:59:59Z");
  }

  TEST_CASE("is_lower_hex") {
    CHECK(util::is_lower_hex("0123456789abcdef"));
    CHECK(util::is_lower_hex(""));
    CHECK_FALSE(util::is_lower_hex("ABCDEF"));
    CHECK_FALSE(util::is_lower_hex("xyz"));
  }

  TEST_CASE("hex_encode") {
    CHECK(util::hex_encode("") == "");
    CHECK(util::hex_encode(std::string("\x00\x0f\xa5\xff", 4)) == "000fa5ff");
    CHECK(util::hex_encode("Hi") == "4869");
  }

  TEST_CASE("AtomicFile: commit makes the file visible with the written content") {
    auto tmp = make_temp();
    fs::path target = tmp.path() / "out.txt";
    {
      util::AtomicFile f(target);
      CHECK(f.fd() >= 0);
      CHECK(f.temp_path().parent_path() == tmp.path());
      CHECK(f.temp_path() != target);
      f.write("hello ");
      f.write(std::string("world"));
      CHECK_FALSE(fs::exists(target)); // not visible before commit
      CHECK(fs::exists(f.temp_path()));
      f.commit();
      CHECK(fs::exists(target));
      CHECK_FALSE(fs::exists(f.temp_path()));
    }
    CHECK(util::read_file(target) == "hello world");
    // Only the final file remains: no temporary leftovers after destruction.
    CHECK(list_dir(tmp.path()) == std::vector<std::string>{"out.txt"});
    CHECK((fs::status(target).permissions() & fs::perms::all) ==
          (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read));
  }

  TEST_CASE("AtomicFile: commit replaces an existing file atomically") {
    auto tmp = make_temp();
    fs::path target = tmp.path() / "f";
    util::write_file_atomic(target, "old");
    {
      util::AtomicFile f(target);
      f.write("new content");
      CHECK(util::read_file(target) == "old");
      f.commit();
    }
    CHECK(util::read_file(target) == "new content");
    CHECK(list_dir(tmp.path()).size() == 1);
  }

  TEST_CASE("AtomicFile: destroyed without commit leaves no file and no temporary") {
    auto tmp = make_temp();
    fs::path target = tmp.path() / "never.txt";
    fs::path temp;
    {
      util::AtomicFile f(target);
      f.write("partial data");
      temp = f.temp_path();
      CHECK(fs::exists(temp));
    }
    CHECK_FALSE(fs::exists(temp));
    CHECK_FALSE(fs::exists(target));
    CHECK(fs::is_empty(tmp.path()));
  }

  TEST_CASE("AtomicFile: temp_dir variant uses <pid>-XXXXXX names and commit_as") {
    auto tmp = make_temp();
    fs::create_directories(tmp.path() / ".tmp");
    fs::path final_path = tmp.path() / "blob";
    {
      util::AtomicFile f(tmp.path() / "pending", tmp.path() / ".tmp");
      CHECK(f.temp_path().parent_path() == tmp.path() / ".tmp");
      std::string name = f.temp_path().filename().string();
      CHECK(name.rfind(std::to_string(::getpid()) + "-", 0) == 0);
      f.write("abc");
      f.commit_as(final_path);
    }
    CHECK(util::read_file(final_path) == "abc");
    CHECK_FALSE(fs::exists(tmp.path() / "pending"));
    CHECK(fs::is_empty(tmp.path() / ".tmp"));
    {
      util::AtomicFile f(tmp.path() / "pending", tmp.path() / ".tmp");
      f.write("abandoned");
    }
    CHECK(fs::is_empty(tmp.path() / ".tmp"));
  }

  TEST_CASE("create_dirs: parents are made; a failure is an io error with context") {
    auto tmp = make_temp();
    util::create_dirs(tmp.path() / "a" / "b" / "c", "the test directory");
    CHECK(fs::is_directory(tmp.path() / "a" / "b" / "c"));
    util::create_dirs(tmp.path() / "a" / "b" / "c", "the test directory"); // already there: fine
    util::write_file_atomic(tmp.path() / "file", "x");
    auto e = error_of([&] { util::create_dirs(tmp.path() / "file" / "sub", "the blob directory", "free the path"); });
    CHECK(e.kind() == util::ErrorKind::io);
    CHECK(std::string(e.what()).find("cannot create the blob directory " + (tmp.path() / "file" / "sub").string() +
                                     ": ") == 0);
    CHECK(e.hint() == "free the path");
    auto t = error_of([&] { util::TempDir d(tmp.path() / "file" / "sub"); });
    CHECK(t.kind() == util::ErrorKind::io);
  }

  TEST_CASE("AtomicFile in a missing directory is an io error") {
    auto tmp = make_temp();
    auto e = error_of([&] { util::AtomicFile f(tmp.path() / "no" / "such" / "dir" / "file"); });
    CHECK(e.kind() == util::ErrorKind::io);
    CHECK(std::string(e.what()).find("cannot create a temporary file") != std::string::npos);
  }

  TEST_CASE("remove_stale_temps removes leftovers of dead processes only") {
    auto tmp = make_temp();
    // A pid above any possible pid_max cannot belong to a live process.
    std::string dead = std::to_string(INT_MAX - 7);
    std::string live = std::to_string(::getpid());
    util::write_file_atomic(tmp.path() / (dead + "-abc123"), "x");
    fs::create_directories(tmp.path() / (dead + "-dir") / "sub");
    util::write_file_atomic(tmp.path() / (live + "-keepme"), "x");
    util::write_file_atomic(tmp.path() / "nodash", "x");
    util::write_file_atomic(tmp.path() / "name-without-pid", "x");

    util::remove_stale_temps(tmp.path());

    CHECK_FALSE(fs::exists(tmp.path() / (dead + "-abc123")));
    CHECK_FALSE(fs::exists(tmp.path() / (dead + "-dir")));
    CHECK(fs::exists(tmp.path() / (live + "-keepme")));
    CHECK(fs::exists(tmp.path() / "nodash"));
    CHECK(fs::exists(tmp.path() / "name-without-pid"));
    // A missing directory is not an error.
    CHECK_NOTHROW(util::remove_stale_temps(tmp.path() / "missing"));
  }

  TEST_CASE("remove_stale_temps_beside removes a killed run's temporaries of that file only") {
    auto tmp = make_temp();
    std::string dead = std::to_string(INT_MAX - 7);
    std::string live = std::to_string(::getpid());
    fs::path out = tmp.path() / "image.tar";
    util::write_file_atomic(tmp.path() / (".image.tar.tmp-" + dead + "-Ab12Cd"), "half");
    util::write_file_atomic(tmp.path() / (".image.tar.tmp-" + live + "-Ab12Cd"), "mine");
    util::write_file_atomic(tmp.path() / (".other.tar.tmp-" + dead + "-Ab12Cd"), "other");
    util::write_file_atomic(tmp.path() / ".image.tar.tmp-XXXXXX", "old style, no pid");
    {
      // An AtomicFile's own temporary carries this process's pid.
      util::AtomicFile f(out);
      CHECK(f.temp_path().filename().string().rfind(".image.tar.tmp-" + live + "-", 0) == 0);
      util::remove_stale_temps_beside(out);
      CHECK(fs::exists(f.temp_path()));
    }
    CHECK_FALSE(fs::exists(tmp.path() / (".image.tar.tmp-" + dead + "-Ab12Cd")));
    CHECK(fs::exists(tmp.path() / (".image.tar.tmp-" + live + "-Ab12Cd")));
    CHECK(fs::exists(tmp.path() / (".other.tar.tmp-" + dead + "-Ab12Cd")));
    CHECK(fs::exists(tmp.path() / ".image.tar.tmp-XXXXXX"));
    // write_file_atomic cleans up beside its target before writing.
    util::write_file_atomic(tmp.path() / "other.tar", "x");
    CHECK_FALSE(fs::exists(tmp.path() / (".other.tar.tmp-" + dead + "-Ab12Cd")));
  }

  TEST_CASE("a signal stops writes, reads, parallel work and waits with Error(interrupted), 128 + signal") {
    auto tmp = make_temp();
    util::write_file_atomic(tmp.path() / "in", "data");
    fs::path temp;
    util::simulate_interrupt(SIGTERM);
    {
      util::AtomicFile f(tmp.path() / "out");
      temp = f.temp_path();
      auto e = error_of([&] { f.write("x"); });
      CHECK(e.kind() == util::ErrorKind::interrupted);
      CHECK(util::exit_code(e.kind()) == 143);
      CHECK(contains(e.what(), "SIGTERM"));
    }
    CHECK_FALSE(fs::exists(temp));
    CHECK_FALSE(fs::exists(tmp.path() / "out"));
    util::simulate_interrupt(SIGINT);
    CHECK(util::exit_code(util::ErrorKind::interrupted) == 130);
    CHECK(error_of([&] { util::read_file(tmp.path() / "in"); }).kind() == util::ErrorKind::interrupted);
    CHECK(error_of([&] { util::sleep_interruptible(30); }).kind() == util::ErrorKind::interrupted);
    int ran = 0;
    CHECK(error_of([&] { util::parallel_for(10, 2, [&](std::size_t) { ++ran; }); }).kind() ==
          util::ErrorKind::interrupted);
    CHECK(ran == 0);
    util::simulate_interrupt(0);
    CHECK(util::read_file(tmp.path() / "in") == "data");
    CHECK_NOTHROW(util::check_interrupted());
  }

  TEST_CASE("FileLock: exclusive excludes others until released; shared locks coexist") {
    auto tmp = make_temp();
    fs::path lock_file = tmp.path() / "x.lock";
    {
      util::FileLock lock(lock_file, util::FileLock::Mode::exclusive);
      CHECK(fs::exists(lock_file)); // created when missing
      CHECK_FALSE(can_flock(lock_file, LOCK_EX));
      CHECK_FALSE(can_flock(lock_file, LOCK_SH));
    }
    CHECK(can_flock(lock_file, LOCK_EX));
    {
      util::FileLock a(lock_file, util::FileLock::Mode::shared);
      util::FileLock b(lock_file, util::FileLock::Mode::shared); // does not block
      CHECK(can_flock(lock_file, LOCK_SH));
      CHECK_FALSE(can_flock(lock_file, LOCK_EX));
    }
    CHECK(can_flock(lock_file, LOCK_EX));
  }

  TEST_CASE("FileLock: a holder may remove the lock file; a waiter then locks the new one") {
    auto tmp = make_temp();
    fs::path lock_file = tmp.path() / "x.lock";
    auto holder = std::make_unique<util::FileLock>(lock_file, util::FileLock::Mode::exclusive);
    std::atomic<bool> got{false};
    std::thread waiter([&] {
      util::FileLock lock(lock_file, util::FileLock::Mode::exclusive); // opens the file the holder removes
      got = true;
      CHECK(fs::exists(lock_file)); // it locked a file at the path, not the removed one
      CHECK_FALSE(can_flock(lock_file, LOCK_EX));
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK_FALSE(got);
    fs::remove(lock_file);
    holder.reset();
    waiter.join();
    CHECK(got);
    CHECK(can_flock(lock_file, LOCK_EX));
  }

  TEST_CASE("FileLock on an impossible path is an io error") {
    auto tmp = make_temp();
    CHECK_THROWS_AS(util::FileLock(tmp.path() / "missing-dir" / "x.lock", util::FileLock::Mode::shared), util::Error);
    auto e =
        error_of([&] { util::FileLock l(tmp.path() / "missing-dir" / "x.lock", util::FileLock::Mode::exclusive); });
    CHECK(e.kind() == util::ErrorKind::io);
    CHECK(std::string(e.what()).find("cannot open lock file") != std::string::npos);
  }

  TEST_CASE("TempDir is created under its parent and removed recursively") {
    fs::path p;
    {
      util::TempDir d(fs::temp_directory_path(), "pi-tempdir-test-");
      p = d.path();
      CHECK(fs::is_directory(p));
      CHECK(p.parent_path() == fs::temp_directory_path());
      CHECK(p.filename().string().rfind(std::to_string(::getpid()) + "-pi-tempdir-test-", 0) == 0);
      fs::create_directories(p / "a" / "b");
      util::write_file_atomic(p / "a" / "b" / "f", "data");
    }
    CHECK_FALSE(fs::exists(p));
  }

  TEST_CASE("read_file_chunks delivers the whole file in chunks of at most 1 MiB") {
    auto tmp = make_temp();
    std::string big(3 * (1 << 20) + 17, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) {
      big[i] = static_cast<char>(i * 31 % 251);
    }
    util::write_file_atomic(tmp.path() / "big", big);
    std::string back;
    std::size_t max_chunk = 0;
    util::read_file_chunks(tmp.path() / "big", [&](const char* d, std::size_t n) {
      back.append(d, n);
      max_chunk = std::max(max_chunk, n);
    });
    CHECK(back == big);
    CHECK(max_chunk <= (1u << 20));
    CHECK_THROWS_AS(util::read_file(tmp.path() / "missing"), util::Error);
  }

  TEST_CASE("link_or_copy creates dst with src content and keeps an existing dst") {
    auto tmp = make_temp();
    util::write_file_atomic(tmp.path() / "src", "payload");
    util::link_or_copy(tmp.path() / "src", tmp.path() / "dst");
    CHECK(util::read_file(tmp.path() / "dst") == "payload");
    util::write_file_atomic(tmp.path() / "src2", "other");
    util::link_or_copy(tmp.path() / "src2", tmp.path() / "dst");
    CHECK(util::read_file(tmp.path() / "dst") == "payload");
    // No temporaries are left next to dst.
    std::set<std::string> names;
    for (const auto& n : list_dir(tmp.path())) {
      names.insert(n);
    }
    CHECK(names == std::set<std::string>{"src", "src2", "dst"});
  }

  TEST_CASE("every ErrorKind has a distinct, non-zero exit code and a distinct name") {
    std::set<int> codes;
    std::set<std::string> names;
    for (auto k : k_all_kinds) {
      int code = util::exit_code(k);
      CHECK(code != 0);
      CHECK(code != 1);
      codes.insert(code);
      names.insert(std::string(util::kind_name(k)));
    }
    CHECK(codes.size() == k_all_kinds.size());
    CHECK(names.size() == k_all_kinds.size());
    CHECK(util::exit_code(util::ErrorKind::usage) == 2);
    CHECK(util::exit_code(util::ErrorKind::internal) == 70);
    CHECK(util::kind_name(util::ErrorKind::integrity) == "integrity");
    CHECK(util::exit_code(util::ErrorKind::verification) == 11);
    CHECK(util::exit_code(util::ErrorKind::incomplete) == 12);
  }

  TEST_CASE("Error carries kind and hint; with_context prepends context and keeps both") {
    util::Error e(util::ErrorKind::integrity, "digest mismatch", "rebuild");
    CHECK(e.kind() == util::ErrorKind::integrity);
    CHECK(e.hint() == "rebuild");
    CHECK(std::string(e.what()) == "digest mismatch");
    util::Error c = e.with_context("layer app");
    CHECK(std::string(c.what()) == "layer app: digest mismatch");
    CHECK(c.kind() == util::ErrorKind::integrity);
    CHECK(c.hint() == "rebuild");

    auto err = error_of([] {
      util::with_context("outer", [] {
        return util::with_context("inner", []() -> int { throw util::Error(util::ErrorKind::io, "boom"); });
      });
    });
    CHECK(std::string(err.what()) == "outer: inner: boom");
    CHECK(err.kind() == util::ErrorKind::io);
    CHECK(util::with_context("ctx", [] { return 42; }) == 42);
  }

  TEST_CASE("throw_errno reports an io error with the errno text") {
    auto e = error_of([] {
      errno = ENOENT;
      util::throw_errno("cannot open x");
    });
    CHECK(e.kind() == util::ErrorKind::io);
    CHECK(std::string(e.what()).find("cannot open x: ") == 0);
    CHECK(std::string(e.what()).find("No such file") != std::string::npos);
  }

  TEST_CASE("write_file_atomic writes into a device or FIFO in place instead of renaming over it") {
    auto tmp = test_support::make_temp("pi-util-test-");
    fs::path fifo = tmp.path() / "fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    std::string got;
    std::thread reader([&] { got = util::read_file(fifo); });
    util::write_file_atomic(fifo, "through the pipe");
    reader.join();
    CHECK(got == "through the pipe");
    struct stat st {};
    REQUIRE(::stat(fifo.c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode)); // still the FIFO, not a regular file renamed over it
    util::write_file_atomic("/dev/null", "discarded");
    REQUIRE(::stat("/dev/null", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
  }

} // TEST_SUITE

TEST_CASE("util url: one parser, IPv6 brackets, and one redaction for every output") {
  auto u = util::parse_url("HTTPS://ci:T0p%40S3cret@[::1]:8443/simple/pkg/?a=1&b=2#frag");
  REQUIRE(u.has_value());
  CHECK(u->scheme == "https");
  CHECK(u->userinfo == "ci:T0p%40S3cret");
  CHECK(u->host == "[::1]");
  CHECK(u->port == "8443");
  CHECK(u->path == "/simple/pkg/");
  CHECK(u->query == "a=1&b=2");
  CHECK(u->fragment == "frag");
  CHECK(u->authority() == "[::1]:8443");
  CHECK(u->str(false) == "https://[::1]:8443/simple/pkg/?a=1&b=2#frag");
  CHECK(util::parse_url("http://host")->path == "/");
  CHECK(util::parse_url("http://h/a@b/c")->userinfo.empty()); // '@' in the path is not userinfo
  CHECK(util::parse_url("file:///srv/wheels")->host.empty());
  CHECK(util::parse_url("file:///srv/wheels")->str() == "file:///srv/wheels");
  for (const char* bad :
       {"/srv/wheels", "file://u@/x", "http://", "http://[::1", "http://h:80x/", "://h/", "1http://h/", "http://[]/"}) {
    INFO(bad);
    CHECK_FALSE(util::parse_url(bad).has_value());
  }
  CHECK(util::without_userinfo("https://u:p@idx.test/simple/") == "https://idx.test/simple/");
  CHECK(util::without_userinfo("/srv/wheels") == "/srv/wheels");
  CHECK(util::redact_url("https://u:p@idx.test/simple/") == "https://***@idx.test/simple/");
  CHECK(util::redact_url("https://token@[fd00::2]:5000/v2/") == "https://***@[fd00::2]:5000/v2/");
  // Presigned redirects of S3/GCS/Azure-backed registries carry their credential in the query.
  CHECK(util::redact_url(
            "https://b.s3.amazonaws.com/blob?X-Amz-Credential=AKIA%2F1&X-Amz-Signature=abc&x-id=GetObject") ==
        "https://b.s3.amazonaws.com/blob?X-Amz-Credential=***&X-Amz-Signature=***&x-id=GetObject");
  CHECK(util::redact_url("https://storage.googleapis.com/o?X-Goog-Signature=f00&Expires=1") ==
        "https://storage.googleapis.com/o?X-Goog-Signature=***&Expires=1");
  CHECK(util::redact_url("https://acct.blob.core.windows.net/c?sv=2020&sig=s3cret") ==
        "https://acct.blob.core.windows.net/c?sv=2020&sig=***");
  CHECK(util::redact_url("https://r/token?token=abc&scope=x") == "https://r/token?token=***&scope=x");
  CHECK(util::redact_url("https://idx.test/simple/?page=2") == "https://idx.test/simple/?page=2");
  // Free text: every URL in it, and Authorization headers.
  std::string text = "GET https://u:canary@h/x failed; redirected to 'https://s3/b?Signature=canary2' "
                     "(see http://ok/)\nAuthorization: Bearer canary3\nnext line";
  std::string red = util::redact_text(text);
  CHECK(red.find("canary") == std::string::npos);
  CHECK(red.find("https://***@h/x failed") != std::string::npos);
  CHECK(red.find("'https://s3/b?Signature=***'") != std::string::npos);
  CHECK(red.find("(see http://ok/)") != std::string::npos);
  CHECK(red.find("Authorization: [redacted]\nnext line") != std::string::npos);
  CHECK(util::redact_text("no urls here") == "no urls here");
  CHECK(util::redact_text("curl -u ci:canary4 -o x --password canary5 --token=canary6 x") ==
        "curl -u ci:*** -o x --password *** --token=*** x");
  CHECK(util::redact_text("useradd -u 1000 app && wget --user=ci:canary7 x") ==
        "useradd -u 1000 app && wget --user=ci:*** x");
  // An HTTP trace's request line has no scheme: its secret query parameters go too;
  // a '?' elsewhere in prose is left alone.
  CHECK(util::redact_text("> GET /v2/r/blobs/sha256:ab?X-Amz-Signature=canary8&sig=canary9&x=1 HTTP/1.1") ==
        "> GET /v2/r/blobs/sha256:ab?X-Amz-Signature=***&sig=***&x=1 HTTP/1.1");
  CHECK(util::redact_text("is it? token=x") == "is it? token=x");
  // An Authorization value a server echoed, however it quoted it (issue 34); a scheme
  // word followed by prose or a parameter stays.
  CHECK(util::redact_text(R"({"Authorization":["Basic YWxpY2U6Y2FuYXJ5MTA="]})") ==
        R"({"Authorization":["Basic [redacted]"]})");
  CHECK(util::redact_text("echo: bearer eyJhbGciOiJIUzI1NiJ9.canary11.sig, done") == "echo: bearer [redacted], done");
  CHECK(util::redact_text("the registry asked for Basic auth") == "the registry asked for Basic auth");
  CHECK(util::redact_text(R"(WWW-Authenticate: Bearer realm="https://auth.example.com/token")") ==
        R"(WWW-Authenticate: Bearer realm="https://auth.example.com/token")");
}

TEST_CASE("url: hide_query_values hides every value of every query, whatever its name") {
  CHECK(util::hide_query_values("< Location: /v2/r/blobs/x?sesame=canary12&x=1") ==
        "< Location: /v2/r/blobs/x?sesame=***&x=***");
  CHECK(util::hide_query_values("* Issue another request to this URL: 'http://h/p?a=canary13'") ==
        "* Issue another request to this URL: 'http://h/p?a=***'");
  CHECK(util::hide_query_values("no query here") == "no query here");
}

TEST_CASE("url: loopback origins from the literal authority, never DNS") {
  for (const char* yes :
       {"localhost", "LOCALHOST:5000", "127.0.0.1", "127.0.0.1:5000", "127.1.2.3:80", "[::1]", "[::1]:8080"}) {
    INFO(yes);
    CHECK(util::is_loopback_authority(yes));
  }
  for (const char* no :
       {"localhost.example.com", "127.0.0.1.nip.io", "128.0.0.1", "127.0.0", "127.0.0.256", "10.0.0.1:5000", "[::2]",
        "[::1", "[::1]x", "127.0.0.1:", "127.0.0.1:http", "user@127.0.0.1", "registry.local", "0.0.0.0", ""}) {
    INFO(no);
    CHECK_FALSE(util::is_loopback_authority(no));
  }
}

TEST_CASE("util::trim and its kin strip only the characters they are given") {
  CHECK(util::trim("  a b \t\r\n") == "a b");
  CHECK(util::trim(" \t\r\n") == "");
  CHECK(util::trim("") == "");
  CHECK(util::trim("\r\nx\r", " \t\r") == "\nx"); // a reader that keeps '\n' keeps it
  CHECK(util::trim("\v x \f", util::k_c_space) == "x");
  CHECK(util::trim("\v x \f") == "\v x \f");
  CHECK(util::trim_left("  a  ") == "a  ");
  CHECK(util::trim_right("  a  ") == "  a");
  CHECK(util::trim_left(util::trim_right("\r a \r\n"), " \t") == "\r a"); // an HTTP header value
  std::string buf = "  key  ";
  std::string_view v = util::trim_view(buf);
  CHECK(v == "key");
  CHECK(v.data() == buf.data() + 2);
}

TEST_CASE("util::split cuts at every separator, empty parts kept") {
  CHECK(util::split("a.b.c", '.') == std::vector<std::string>{"a", "b", "c"});
  CHECK(util::split("", '.') == std::vector<std::string>{""});
  CHECK(util::split(".a.", '.') == std::vector<std::string>{"", "a", ""});
  CHECK(util::split("x\n\ny", '\n') == std::vector<std::string>{"x", "", "y"});
}

TEST_CASE("util::shell_quote leaves plain words alone and single-quotes the rest") {
  CHECK(util::shell_quote("a/b-1.2_x@y%z+=:,") == "a/b-1.2_x@y%z+=:,");
  CHECK(util::shell_quote("") == "''");
  CHECK(util::shell_quote("a b") == "'a b'");
  CHECK(util::shell_quote("it's") == "'it'\\''s'");
  CHECK(util::shell_quote("$(x)") == "'$(x)'");
}

TEST_CASE("util::percent_encode keeps RFC 3986's unreserved characters; percent_decode undoes it") {
  CHECK(util::percent_encode("AZaz09-._~") == "AZaz09-._~");
  CHECK(util::percent_encode("a b/c:d+e") == "a%20b%2Fc%3Ad%2Be");
  CHECK(util::percent_encode(std::string("\xff\x00", 2)) == "%FF%00");
  CHECK(util::percent_decode("a%20b%2fc%3A") == "a b/c:");
  CHECK(util::percent_decode("100%") == "100%");
  CHECK(util::percent_decode("%zz%4") == "%zz%4");
  std::string all;
  for (int c = 0; c < 256; ++c) {
    all.push_back(static_cast<char>(c));
  }
  CHECK(util::percent_decode(util::percent_encode(all)) == all);
}

} // namespace unit_util_test
