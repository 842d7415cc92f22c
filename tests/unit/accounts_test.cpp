#include <doctest/doctest.h>

#include "tests/unit/error_text.hpp"

#include "builder/accounts.hpp"

namespace unit_accounts_test {

namespace {

const std::string k_passwd = "root:x:0:0:root:/root:/bin/bash\n"
                             "www-data:x:33:33:www-data:/var/www:/usr/sbin/nologin\n"
                             "+::::::\n";
const std::string k_group = "root:x:0:\nvideo:x:44:\nml:x:2000:ann\n";
const std::string k_shadow = "root:*:19000:0:99999:7:::\n";
const std::string k_gshadow = "root:*::\nvideo:*::\nml:!::ann"; // no final newline

spec::UserSpec user(std::string name, std::int64_t uid) {
  spec::UserSpec u;
  u.name = std::move(name);
  u.uid = uid;
  u.home = "/home/" + u.name;
  u.origin = "spec.yaml:7:11";
  return u;
}

std::map<std::string, std::string> debian_base() {
  return {{"etc/passwd", k_passwd}, {"etc/group", k_group}, {"etc/shadow", k_shadow}, {"etc/gshadow", k_gshadow}};
}

} // namespace

TEST_CASE("accounts: the base's lines kept, the layer's appended as groupadd and useradd write them") {
  spec::AccountsLayerSpec a;
  a.groups.push_back({"data", 3000, "spec.yaml:5:11"});
  auto paddle = user("paddle", 1000);
  paddle.groups = {"ml", "video"};
  paddle.shell = "/bin/bash";
  paddle.comment = "Paddle user";
  a.users.push_back(paddle);
  auto svc = user("svc", 999);
  svc.gid = 3000;
  svc.create_home = false;
  a.users.push_back(svc);
  auto m = builder::merge_accounts(a, debian_base(), "layer 'users'");
  CHECK(m.files.at("etc/passwd") == k_passwd + "paddle:x:1000:1000:Paddle user:/home/paddle:/bin/bash\n"
                                               "svc:x:999:3000::/home/svc:/bin/sh\n");
  CHECK(m.files.at("etc/group") ==
        "root:x:0:\nvideo:x:44:paddle\nml:x:2000:ann,paddle\ndata:x:3000:\npaddle:x:1000:\n");
  CHECK(m.files.at("etc/shadow") == k_shadow + "paddle:!::0:99999:7:::\nsvc:!::0:99999:7:::\n");
  CHECK(m.files.at("etc/gshadow") == "root:*::\nvideo:*::paddle\nml:!::ann,paddle\ndata:!::\npaddle:!::\n");
  REQUIRE(m.homes.size() == 1);
  CHECK(m.homes[0].path == "home/paddle");
  CHECK(m.homes[0].uid == 1000);
  CHECK(m.homes[0].gid == 1000);
  CHECK(m.homes[0].group == "paddle");
  // The same inputs, the same bytes.
  CHECK(builder::merge_accounts(a, debian_base(), "layer 'users'").files == m.files);
}

TEST_CASE("accounts: a user's own group, an entry already there, and a base without databases") {
  spec::AccountsLayerSpec a;
  a.groups.push_back({"video", 44, "spec.yaml:5:11"}); // the base's, the same gid: kept
  a.groups.push_back({"bob", 1500, "spec.yaml:6:11"});
  a.users.push_back(user("bob", 1001)); // takes group bob (1500), as it exists
  a.users.push_back(user("www-data", 33));
  auto m = builder::merge_accounts(a, debian_base(), "layer 'u'");
  CHECK(m.files.at("etc/passwd") == k_passwd + "bob:x:1001:1500::/home/bob:/bin/sh\n");
  CHECK(m.files.at("etc/group") == k_group + "bob:x:1500:\n");
  spec::AccountsLayerSpec one;
  one.users.push_back(user("app", 10001));
  auto scratch = builder::merge_accounts(one, {}, "layer 'u'");
  CHECK(scratch.files.at("etc/passwd") == "app:x:10001:10001::/home/app:/bin/sh\n");
  CHECK(scratch.files.at("etc/group") == "app:x:10001:\n");
  CHECK(scratch.files.count("etc/shadow") == 0);
}

TEST_CASE("accounts: clashes with the base name the spec's entry and the base's line") {
  auto merge = [](const spec::AccountsLayerSpec& a) {
    return ::error_of([&] { builder::merge_accounts(a, debian_base(), "layer 'u'"); });
  };
  spec::AccountsLayerSpec name;
  name.users.push_back(user("www-data", 1000));
  CHECK(merge(name) == "spec.yaml:7:11: layer 'u': user 'www-data' has uid 1000, but the base's /etc/passwd line 2 "
                       "('www-data:x:33:33:www-data:/var/www:/usr/sbin/nologin') gives it uid 33 | use uid 33 (the "
                       "base has the user: drop it from the layer), or another name");
  spec::AccountsLayerSpec uid;
  uid.users.push_back(user("admin", 0));
  CHECK(merge(uid).find("uid 0 of user 'admin' is the base's user 'root' (the base's /etc/passwd line 1") !=
        std::string::npos);
  spec::AccountsLayerSpec gid;
  gid.groups.push_back({"gpu", 44, "spec.yaml:5:11"});
  CHECK(merge(gid).find("spec.yaml:5:11: layer 'u': gid 44 of group 'gpu' is the base's group 'video'") !=
        std::string::npos);
  spec::AccountsLayerSpec own;
  own.groups.push_back({"data", 1000, "spec.yaml:5:11"});
  own.users.push_back(user("bob", 1000)); // its own group would take gid 1000: this layer's group data has it
  CHECK(merge(own).find("gid 1000 of group 'bob' is this layer's group 'data'") != std::string::npos);
  spec::AccountsLayerSpec nogroup;
  auto u = user("paddle", 1000);
  u.gid = 4242;
  nogroup.users.push_back(u);
  CHECK(merge(nogroup).find("has gid 4242, which no group has") != std::string::npos);
  spec::AccountsLayerSpec supp;
  auto v = user("paddle", 1000);
  v.groups = {"gpus"};
  supp.users.push_back(v);
  CHECK(merge(supp).find("joins group 'gpus', which neither the base's /etc/group nor this layer's groups has") !=
        std::string::npos);
}

} // namespace unit_accounts_test
