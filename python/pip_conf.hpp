#pragma once
// pip's configuration as pip reads it, for the index a wheels layer uses when the spec
// names none: pip.conf files and the PIP_* variables. The caller (cli/) reads the
// environment and hands the values in; nothing here calls getenv.
#include "python/wheel_fetch.hpp"

#include <filesystem>
#include <string>

namespace python {

// The environment variables pip's configuration depends on (empty: unset).
struct PipEnvironment {
  std::string home;                // HOME
  std::string xdg_config_home;     // XDG_CONFIG_HOME
  std::string pip_config_file;     // PIP_CONFIG_FILE ("os.devnull" or /dev/null: no files)
  std::string pip_index_url;       // PIP_INDEX_URL
  std::string pip_extra_index_url; // PIP_EXTRA_INDEX_URL (whitespace-separated)
  std::string pip_find_links;      // PIP_FIND_LINKS (whitespace-separated)
  std::string netrc;               // NETRC
};

// One pip.conf applied onto `d`: [global] then [install] (the install command's section
// wins); keys with '_' or '-'; indented continuation lines extend a value, as
// configparser reads them. A missing or unreadable file changes nothing.
void read_pip_conf(const std::filesystem::path& file, IndexDefaults& d);

// pip's order: /etc/xdg/pip/pip.conf, /etc/pip.conf, ~/.pip/pip.conf,
// $XDG_CONFIG_HOME/pip/pip.conf (default ~/.config), then PIP_CONFIG_FILE, later files
// overriding earlier ones; then PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS over
// every file; the netrc is $NETRC, else ~/.netrc. `root` prefixes the system paths (the
// tests' fake host; "" in use).
IndexDefaults index_defaults(const PipEnvironment& env, const std::filesystem::path& root = {});

} // namespace python
