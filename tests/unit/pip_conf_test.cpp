#include <doctest/doctest.h>

#include "tests/unit/support.hpp"

#include "python/pip_conf.hpp"
#include "util/fs.hpp"

namespace unit_pip_conf_test {

namespace fs = std::filesystem;

TEST_SUITE("pip_conf") {
  TEST_CASE("pip.conf: [install] over [global], '_' keys, continuation lines, comments") {
    auto tmp = test_support::make_temp("pi-pipconf-");
    fs::path f = tmp.path() / "pip.conf";
    util::write_file_atomic(f, "# a comment\n[global]\nindex_url = https://global.test/simple\n"
                               "extra-index-url = https://a.test/simple\n    https://b.test/simple\n"
                               "; another\n[install]\nindex-url: https://install.test/simple\n"
                               "[freeze]\nfind-links = /ignored\n");
    python::IndexDefaults d;
    python::read_pip_conf(f, d);
    CHECK(d.index_url == "https://install.test/simple");
    CHECK(d.index_url_from == f.string());
    CHECK(d.extra_index_urls == std::vector<std::string>{"https://a.test/simple", "https://b.test/simple"});
    CHECK(d.find_links.empty());
    python::IndexDefaults untouched;
    python::read_pip_conf(tmp.path() / "missing.conf", untouched);
    CHECK_FALSE(untouched.index_url);
  }

  TEST_CASE("pip's order: system, user, XDG, PIP_CONFIG_FILE, then PIP_* over every file") {
    auto tmp = test_support::make_temp("pi-pipconf-");
    fs::path root = tmp.path() / "root", home = tmp.path() / "home";
    util::create_dirs(root / "etc/xdg/pip", "test");
    util::create_dirs(home / ".pip", "test");
    util::create_dirs(home / ".config/pip", "test");
    util::write_file_atomic(root / "etc/xdg/pip/pip.conf", "[global]\nindex-url = https://xdg-system.test/\n"
                                                           "find-links = /wheels\n");
    util::write_file_atomic(root / "etc/pip.conf", "[global]\nindex-url = https://system.test/\n");
    python::PipEnvironment env;
    env.home = home.string();
    auto d = python::index_defaults(env, root);
    CHECK(d.index_url == "https://system.test/");
    CHECK(d.find_links == std::vector<std::string>{"/wheels"});
    CHECK(d.netrc == home / ".netrc");

    util::write_file_atomic(home / ".pip/pip.conf", "[global]\nindex-url = https://legacy-user.test/\n");
    util::write_file_atomic(home / ".config/pip/pip.conf", "[global]\nindex-url = https://user.test/\n");
    CHECK(python::index_defaults(env, root).index_url == "https://user.test/");

    util::write_file_atomic(tmp.path() / "ci.conf", "[global]\nindex-url = https://ci.test/\n");
    env.pip_config_file = (tmp.path() / "ci.conf").string();
    d = python::index_defaults(env, root);
    CHECK(d.index_url == "https://ci.test/");
    CHECK(d.index_url_from == env.pip_config_file);

    env.pip_index_url = "https://env.test/simple";
    env.pip_extra_index_url = "https://x.test/ https://y.test/";
    env.netrc = "/run/secrets/netrc";
    d = python::index_defaults(env, root);
    CHECK(d.index_url == "https://env.test/simple");
    CHECK(d.index_url_from == "PIP_INDEX_URL");
    CHECK(d.extra_index_urls.size() == 2);
    CHECK(d.netrc == "/run/secrets/netrc");

    python::PipEnvironment none;
    none.home = home.string();
    none.pip_config_file = "/dev/null";
    d = python::index_defaults(none, root);
    CHECK_FALSE(d.index_url); // no file at all, the system's neither
    CHECK(d.find_links.empty());
  }
}

} // namespace unit_pip_conf_test
