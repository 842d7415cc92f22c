#pragma once
// The account databases an accounts layer writes (docs/spec.md "Accounts"): the base's
// /etc/passwd, /etc/group, and /etc/shadow and /etc/gshadow where it has them, with the
// layer's groups and users added as groupadd and useradd add them. Every line of the
// base is kept as it is (comments and NIS "+" lines too); new lines are appended in the
// spec's order, so the same inputs give the same bytes. Pure: the kind
// (kinds/accounts_layer.cpp) lays the results out.
#include "spec/spec.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace builder {

struct AccountHome {
  std::string path; // image path without the leading '/'
  std::uint32_t mode = 0755;
  std::int64_t uid = 0;
  std::int64_t gid = 0;
  std::string user; // the owner's names, written into the tar header as useradd's chown gives them
  std::string group;
};

struct MergedAccounts {
  // "etc/passwd" -> the new content, for each database written (the base's shadow files
  // only where the base has them).
  std::map<std::string, std::string> files;
  std::vector<AccountHome> homes; // the users' with create_home, in order
  // What was added or found already there, one line each for the build's log.
  std::vector<std::string> notes;
};

// `base`: "etc/passwd", "etc/group", "etc/shadow", "etc/gshadow" -> the landing's content
// (absent: the base has no such file; passwd and group are then written with the layer's
// entries only). `where` prefixes errors ("spec.yaml:9:5: layer 'users'"). Throws
// Error(input) naming the spec's entry and the base's line for a clash: a name the base
// has with another id, an id the base gives another name, a gid no group has, a
// supplementary group that does not exist.
MergedAccounts merge_accounts(const spec::AccountsLayerSpec& a, const std::map<std::string, std::string>& base,
                              const std::string& where);

} // namespace builder
