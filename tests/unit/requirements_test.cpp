// pip's requirements-file format as parse_requirements reads it: continuations,
// comments, markers, extras, --hash, the global options, -r includes, and the refusals
// of a lock (unpinned, hashless, direct URL, unknown options, duplicates).
#include <doctest/doctest.h>

#include "python/requirements.hpp"
#include "tests/unit/support.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace unit_requirements_test {

namespace fs = std::filesystem;
using python::RequirementsMode;
using namespace test_support;

namespace {

const std::string k_a(64, 'a');
const std::string k_b(64, 'b');
const std::string k_c(64, 'c');
const std::string k_d(64, 'd');

std::string upper(std::string s) {
  for (auto& c : s) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return s;
}

struct Dir {
  util::TempDir tmp = make_temp("pi-reqs-");
  fs::path write(const std::string& name, const std::string& text) const {
    fs::path p = tmp.path() / name;
    fs::create_directories(p.parent_path());
    util::write_file_atomic(p, text);
    return p;
  }
  const fs::path& path() const { return tmp.path(); }
};

python::RequirementsFile parse_text(const Dir& d, const std::string& text,
                                    RequirementsMode mode = RequirementsMode::lock) {
  return python::parse_requirements(d.write("requirements.txt", text), mode);
}

util::Error refusal(const Dir& d, const std::string& text, RequirementsMode mode = RequirementsMode::lock) {
  fs::path p = d.write("requirements.txt", text);
  return error_of([&] { python::parse_requirements(p, mode); });
}

python::RequirementLine line_of(const std::string& text) {
  python::RequirementLine l;
  l.requirement = python::Requirement::parse(text);
  l.text = text;
  return l;
}

} // namespace

TEST_CASE("parse_requirements joins continuations, drops comments and reads markers, extras and hashes") {
  Dir d;
  auto f = parse_text(d, "# a lock written by pip-compile\n"
                         "\n"
                         "alpha==1.0 \\\n"
                         "    --hash=sha256:" +
                             upper(k_a) +
                             " \\\n"
                             "    --hash sha256:" +
                             k_b +
                             "\n"
                             "    # via beta\n"
                             "Beta[Fast,extra_one]==2.0 --hash=sha256:" +
                             k_c +
                             "  # a trailing comment\n"
                             "gamma==3.0 ; python_version < \"3.12\" and sys_platform == 'linux' --hash=sha256:" +
                             k_d + "\r\n" + "delta==4.0; os_name == \"posix\" \\\n  --hash=sha256:" + k_a + "\n");
  REQUIRE(f.requirements.size() == 4);
  const auto& alpha = f.requirements[0];
  CHECK(alpha.requirement.key == "alpha");
  CHECK(alpha.text == "alpha==1.0");
  CHECK(alpha.sha256 == std::vector<std::string>{k_a, k_b}); // upper-case hex lowered
  CHECK(alpha.line == 3);
  CHECK(alpha.file == d.path() / "requirements.txt");
  CHECK(alpha.where() == (d.path() / "requirements.txt").string() + ":3");
  CHECK(alpha.pinned() == "1.0");

  const auto& beta = f.requirements[1];
  CHECK(beta.requirement.key == "beta");
  CHECK(beta.requirement.extras == std::set<std::string>{"fast", "extra-one"});
  CHECK(beta.sha256 == std::vector<std::string>{k_c});
  CHECK(beta.line == 7);

  const auto& gamma = f.requirements[2];
  CHECK(gamma.line == 8);
  REQUIRE(gamma.requirement.marker);
  CHECK(gamma.requirement.marker->str() == "python_version < \"3.12\" and sys_platform == \"linux\"");
  CHECK(gamma.pinned() == "3.0");
  CHECK(gamma.sha256 == std::vector<std::string>{k_d});

  const auto& delta = f.requirements[3];
  CHECK(delta.line == 9);
  REQUIRE(delta.requirement.marker);
  CHECK(delta.requirement.marker->str() == "os_name == \"posix\"");
  CHECK(delta.sha256 == std::vector<std::string>{k_a});

  CHECK_FALSE(f.index_url);
  CHECK(f.extra_index_urls.empty());
  CHECK(f.find_links.empty());
  CHECK_FALSE(f.no_index);
}

TEST_CASE("parse_requirements reads the index options") {
  Dir d;
  SUBCASE("-i") {
    CHECK(parse_text(d, "-i https://a.test/simple\n").index_url == "https://a.test/simple");
  }
  SUBCASE("--index-url VALUE") {
    CHECK(parse_text(d, "--index-url https://b.test/simple\n").index_url == "https://b.test/simple");
  }
  SUBCASE("--index-url=VALUE") {
    CHECK(parse_text(d, "--index-url=https://c.test/simple\n").index_url == "https://c.test/simple");
  }
  SUBCASE("the last one counts") {
    auto f = parse_text(d, "-i https://a.test/simple\n--index-url=https://c.test/simple\n");
    CHECK(f.index_url == "https://c.test/simple");
  }
  SUBCASE("--extra-index-url in both forms adds up") {
    auto f = parse_text(d, "--extra-index-url https://e.test/simple\n--extra-index-url=https://f.test/simple\n");
    CHECK(f.extra_index_urls == std::vector<std::string>{"https://e.test/simple", "https://f.test/simple"});
    CHECK_FALSE(f.index_url);
  }
  SUBCASE("--no-index") {
    auto f = parse_text(d, "--no-index\n-f ./wheels\n");
    CHECK(f.no_index);
  }
}

TEST_CASE("parse_requirements makes a relative -f absolute against the file's directory and keeps URLs") {
  Dir d;
  fs::path p = d.write("sub/requirements.txt", "-f wheels\n"
                                               "--find-links ../shared/wheels\n"
                                               "--find-links=https://links.test/whl/stable.html\n"
                                               "-f /srv/wheels\n"
                                               "-f file:///srv/more\n");
  auto f = python::parse_requirements(p, RequirementsMode::lock);
  REQUIRE(f.find_links.size() == 5);
  CHECK(f.find_links[0] == (d.path() / "sub" / "wheels").string());
  CHECK(f.find_links[1] == (d.path() / "shared" / "wheels").string());
  CHECK(f.find_links[2] == "https://links.test/whl/stable.html");
  CHECK(f.find_links[3] == "/srv/wheels");
  CHECK(f.find_links[4] == "file:///srv/more");
  CHECK(fs::path(f.find_links[0]).is_absolute());
}

TEST_CASE("parse_requirements follows -r relative to the including file; lines keep their own file and line") {
  Dir d;
  d.write("common.txt", "# shared\n\nzeta==0.1 --hash=sha256:" + k_d + "\n");
  d.write("sub/inner.txt", "-r ../common.txt\n"
                           "--extra-index-url https://extra.test/simple\n"
                           "\n"
                           "epsilon==5.0 --hash=sha256:" +
                               k_c + "\n");
  fs::path top = d.write("requirements.txt", "alpha==1.0 --hash=sha256:" + k_a +
                                                 "\n"
                                                 "-r sub/inner.txt\n"
                                                 "beta==2.0 --hash=sha256:" +
                                                 k_b + "\n");
  auto f = python::parse_requirements(top, RequirementsMode::lock);
  REQUIRE(f.requirements.size() == 4);
  CHECK(f.requirements[0].requirement.key == "alpha");
  CHECK(f.requirements[0].file == top);
  CHECK(f.requirements[0].line == 1);
  CHECK(f.requirements[1].requirement.key == "zeta");
  CHECK(fs::weakly_canonical(f.requirements[1].file) == fs::weakly_canonical(d.path() / "common.txt"));
  CHECK(f.requirements[1].line == 3);
  CHECK(f.requirements[2].requirement.key == "epsilon");
  CHECK(fs::weakly_canonical(f.requirements[2].file) == fs::weakly_canonical(d.path() / "sub" / "inner.txt"));
  CHECK(f.requirements[2].line == 4);
  CHECK(f.requirements[3].requirement.key == "beta");
  CHECK(f.requirements[3].file == top);
  CHECK(f.requirements[3].line == 3);
  CHECK(f.extra_index_urls == std::vector<std::string>{"https://extra.test/simple"});

  SUBCASE("--requirement=FILE and --requirement FILE") {
    fs::path other = d.write("other.txt", "--requirement=common.txt\n");
    auto g = python::parse_requirements(other, RequirementsMode::lock);
    REQUIRE(g.requirements.size() == 1);
    CHECK(g.requirements[0].requirement.key == "zeta");
    fs::path spaced = d.write("spaced.txt", "--requirement common.txt\n");
    CHECK(python::parse_requirements(spaced, RequirementsMode::lock).requirements.size() == 1);
  }
  SUBCASE("the same file included twice (not a cycle) is read twice and so is a duplicate") {
    fs::path twice = d.write("twice.txt", "-r common.txt\n-r common.txt\n");
    auto e = error_of([&] { python::parse_requirements(twice, RequirementsMode::lock); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "listed again"));
  }
}

TEST_CASE("parse_requirements refuses an include cycle, naming the line of the include") {
  Dir d;
  d.write("a.txt", "alpha==1.0 --hash=sha256:" + k_a + "\n-r b.txt\n");
  d.write("b.txt", "\n-r a.txt\n");
  auto e = error_of([&] { python::parse_requirements(d.path() / "a.txt", RequirementsMode::lock); });
  CHECK(e.kind() == util::ErrorKind::input);
  CHECK(contains(e.what(), "include cycle"));
  CHECK(contains(e.what(), (d.path() / "b.txt").string() + ":2"));

  SUBCASE("a file including itself") {
    d.write("self.txt", "-r ./self.txt\n");
    auto s = error_of([&] { python::parse_requirements(d.path() / "self.txt", RequirementsMode::lock); });
    CHECK(s.kind() == util::ErrorKind::input);
    CHECK(contains(s.what(), "include cycle"));
  }
}

TEST_CASE("parse_requirements refuses options it does not know or that have no meaning for a lock") {
  Dir d;
  SUBCASE("an unknown option") {
    auto e = refusal(d, "alpha==1.0 --hash=sha256:" + k_a + "\n--frobnicate=yes\n");
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), (d.path() / "requirements.txt").string() + ":2"));
    CHECK(contains(e.what(), "unknown pip option '--frobnicate'"));
  }
  SUBCASE("-e") {
    auto e = refusal(d, "-e .\n");
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "'-e'"));
    CHECK(contains(e.what(), "no meaning"));
  }
  SUBCASE("--editable=") {
    auto e = refusal(d, "--editable=git+https://x.test/r.git#egg=r\n");
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "'--editable'"));
  }
  SUBCASE("-c") {
    auto e = refusal(d, "-c constraints.txt\n");
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "'-c'"));
  }
  SUBCASE("an option after a requirement other than --hash") {
    auto e = refusal(d, "alpha==1.0 --hash=sha256:" + k_a + " --no-deps\n");
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "--no-deps"));
  }
  SUBCASE("an option without its value") {
    auto e = refusal(d, "--index-url\n");
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "needs a value"));
  }
  SUBCASE("options pip needs and a lock implies are accepted") {
    auto f = parse_text(d, "--require-hashes\n--prefer-binary\n--only-binary :all:\n--trusted-host idx.test\n"
                           "alpha==1.0 --hash=sha256:" +
                               k_a + "\n");
    CHECK(f.requirements.size() == 1);
  }
}

TEST_CASE("parse_requirements refuses a direct URL requirement and a malformed one") {
  Dir d;
  auto e = refusal(d, "pkg @ https://files.test/pkg-1.0-py3-none-any.whl --hash=sha256:" + k_a + "\n");
  CHECK(e.kind() == util::ErrorKind::input);
  CHECK(contains(e.what(), "direct URL"));
  CHECK(contains(e.what(), "requirements.txt:1"));

  auto m = refusal(d, "\n\npkg[oops==1.0 --hash=sha256:" + k_a + "\n");
  CHECK(m.kind() == util::ErrorKind::input);
  CHECK(contains(m.what(), "requirements.txt:3"));
}

TEST_CASE("parse_requirements: a control byte is refused by line and column, never quoted") {
  Dir d;
  auto e = refusal(d, "alpha==1.0 --hash=sha256:" + k_a + "\napp" + std::string(1, '\0') + "evil\n",
                   RequirementsMode::resolve);
  CHECK(e.kind() == util::ErrorKind::input);
  CHECK(contains(e.what(), "requirements.txt:2"));
  CHECK(contains(e.what(), "control byte (0x00) at column 4"));
  CHECK(std::string(e.what()).find("evil") == std::string::npos);
  auto esc = refusal(d, "beta\x1b[2J\n", RequirementsMode::resolve);
  CHECK(contains(esc.what(), "(0x1b) at column 5"));
  // UTF-16 (a file saved by a Windows editor): NULs between the letters.
  auto wide = refusal(d, std::string("a\0l\0p\0h\0a\0\n\0", 12), RequirementsMode::resolve);
  CHECK(contains(wide.what(), "requirements.txt:1"));
  CHECK(contains(wide.hint(), "UTF-16"));
}

TEST_CASE("parse_requirements: a lock pins every requirement with == and hashes it") {
  Dir d;
  SUBCASE("an unpinned requirement in a lock") {
    auto e = refusal(d, "alpha==1.0 --hash=sha256:" + k_a + "\nbeta>=2.0 --hash=sha256:" + k_b + "\n");
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), (d.path() / "requirements.txt").string() + ":2"));
    CHECK(contains(e.what(), "not pinned"));
  }
  SUBCASE("an unpinned requirement in a pinned file") {
    auto e = refusal(d, "beta\n", RequirementsMode::pinned);
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "requirements.txt:1"));
    CHECK(contains(e.what(), "not pinned"));
  }
  SUBCASE("a prefix pin is not a pin") {
    auto e = refusal(d, "beta==2.*\n", RequirementsMode::pinned);
    CHECK(contains(e.what(), "not pinned"));
  }
  SUBCASE("a hashless requirement in a lock") {
    auto e = refusal(d, "alpha==1.0\n");
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "requirements.txt:1"));
    CHECK(contains(e.what(), "--hash"));
  }
  SUBCASE("a hashless requirement in a pinned file is fine") {
    auto f = parse_text(d, "alpha==1.0\nbeta===2.0-custom\n", RequirementsMode::pinned);
    REQUIRE(f.requirements.size() == 2);
    CHECK(f.requirements[0].sha256.empty());
    CHECK(f.requirements[1].pinned() == "2.0-custom");
  }
  SUBCASE("an md5 hash") {
    auto e = refusal(d, "alpha==1.0 --hash=md5:0123456789abcdef0123456789abcdef\n");
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "only sha256"));
  }
  SUBCASE("a hash that is not 64 hex digits") {
    auto bad = refusal(d, "alpha==1.0 --hash=sha256:" + std::string(63, 'a') + "g\n");
    CHECK(bad.kind() == util::ErrorKind::input);
    CHECK(contains(bad.what(), "not a sha256"));
    auto shorter = refusal(d, "alpha==1.0 --hash=sha256:" + std::string(63, 'a') + "\n");
    CHECK(contains(shorter.what(), "not a sha256"));
  }
}

TEST_CASE("parse_requirements refuses a project listed twice unless markers split it") {
  Dir d;
  auto e = refusal(d, "alpha==1.0 --hash=sha256:" + k_a + "\n# again\nALPHA==1.1 --hash=sha256:" + k_b + "\n");
  CHECK(e.kind() == util::ErrorKind::input);
  CHECK(contains(e.what(), "requirements.txt:3"));
  CHECK(contains(e.what(), "listed again"));
  CHECK(contains(e.what(), "first at " + (d.path() / "requirements.txt").string() + ":1"));

  // One marked line and one unmarked: both would apply on some target.
  auto g = refusal(d, "numpy==1.24.4 ; python_version < \"3.9\" --hash=sha256:" + k_a +
                          "\nnumpy==1.26.4 --hash=sha256:" + k_b + "\n");
  CHECK(contains(g.what(), "listed again"));

  auto f = parse_text(d, "numpy==1.24.4 ; python_version < \"3.9\" --hash=sha256:" + k_a +
                             "\nnumpy==1.26.4 ; python_version >= \"3.9\" --hash=sha256:" + k_b + "\n");
  CHECK(f.requirements.size() == 2);
}

TEST_CASE("parse_requirements: a whole-line comment ending in a backslash does not swallow the next line") {
  Dir d;
  auto f = parse_text(d, "# see C:\\\nalpha==1.0 --hash=sha256:" + k_a + "\n");
  REQUIRE(f.requirements.size() == 1);
  CHECK(f.requirements[0].requirement.key == "alpha");
  CHECK(f.requirements[0].line == 2);
  // Inside a continued requirement a comment line ends it.
  auto g = parse_text(d, "beta==2.0 \\\n    --hash=sha256:" + k_b +
                             " \\\n    # via app\ngamma==1.0 --hash=sha256:" + k_c + "\n");
  REQUIRE(g.requirements.size() == 2);
  CHECK(g.requirements[0].sha256 == std::vector<std::string>{k_b});
  CHECK(g.requirements[1].line == 4);
}

TEST_CASE("RequirementLine::pinned is the version of a single == or === without a wildcard") {
  CHECK(line_of("a==1.0").pinned() == "1.0");
  CHECK(line_of("a == 1.0.post1").pinned() == "1.0.post1");
  CHECK(line_of("a===x").pinned() == "x");
  CHECK(line_of("a==1.*").pinned() == "");
  CHECK(line_of("a>=1.0").pinned() == "");
  CHECK(line_of("a==1.0,!=1.1").pinned() == "");
  CHECK(line_of("a").pinned() == "");
}

TEST_CASE("parse_requirements: a missing file is an io error, a missing include names the including line") {
  Dir d;
  auto e = error_of([&] { python::parse_requirements(d.path() / "absent.txt", RequirementsMode::lock); });
  CHECK(e.kind() == util::ErrorKind::io);
  CHECK(contains(e.what(), "absent.txt"));

  auto inc = refusal(d, "\n-r missing.txt\n");
  CHECK(inc.kind() == util::ErrorKind::io);
  CHECK(contains(inc.what(), (d.path() / "requirements.txt").string() + ":2"));
  CHECK(contains(inc.what(), "missing.txt"));
}

TEST_CASE("a lock line without hashes is accepted only with a marker") {
  Dir d;
  auto f = parse_text(d, "alpha==1.0 --hash=sha256:" + k_a + "\npywin32==306 ; sys_platform == \"win32\"\n");
  REQUIRE(f.requirements.size() == 2);
  CHECK(f.requirements[1].sha256.empty());
  CHECK(f.requirements[1].requirement.marker.has_value());
  auto e = refusal(d, "pywin32==306\n");
  CHECK(test_support::contains(e.what(), "has no --hash=sha256:"));
}

TEST_CASE("an include that cannot be a requirements file is an input error naming the line, never a crash") {
  Dir d;
  // A name too long for the file system: weakly_canonical threw filesystem_error out of
  // the parser (found by fuzz_requirements).
  auto e = refusal(d, "-r " + std::string(5000, 'x') + "\n");
  CHECK(e.kind() == util::ErrorKind::io); // as any file that cannot be read
  CHECK(contains(e.what(), "requirements.txt:1: -r: "));
  CHECK(contains(e.what(), "File name too long"));
  // A device would be read forever.
  e = refusal(d, "numpy==1.26.4 --hash=sha256:" + std::string(64, 'a') + "\n-r /dev/zero\n");
  CHECK(e.kind() == util::ErrorKind::input);
  CHECK(contains(e.what(), "requirements.txt:2: -r: /dev/zero is not a regular file"));
}

} // namespace unit_requirements_test
