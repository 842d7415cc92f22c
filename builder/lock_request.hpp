#pragma once
// `paddle-image lock` around builder::lock: the checks of its request before the spec
// is read, where the lock goes, and the result it reports.
#include "python/wheel_fetch.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace builder {

// What `lock` needs before it reads the spec: a spec file (its base and python settings
// decide which wheels fit) and index URLs that are http(s). Throws util::Error(usage)
// with the command or URL to give.
void check_lock_request(const std::string& spec_file, const std::string& requirements,
                        const std::vector<std::string>& index_urls);

// Whether the lock goes to stdout: no -o, or -o -.
bool lock_to_stdout(const std::string& output);

// The result of `lock` (the JSON of --json): the requirements, the output (null on
// stdout, where the lock text itself is the result and goes in as "lock"), the indexes
// and find-links with their credentials redacted, each line's hashed files and the
// warnings.
nlohmann::json lock_report(const python::LockResult& r, const std::string& requirements, const std::string& output,
                           bool all_platforms);

} // namespace builder
