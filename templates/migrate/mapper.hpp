#pragma once
// Inside `init --from-dockerfile` (templates/from_dockerfile.hpp is the interface): the
// model a Dockerfile is mapped onto and the Mapper that walks its instructions. One file
// per part, all in namespace templates::migrate:
//   words.cpp       shell words, JSON form, paths, Dockerfile's $VAR substitution
//   parse.cpp       the Dockerfile read into instructions (continuations, heredocs)
//   mapper.cpp      the walk: stages, ARG, FROM, the simple instructions, what is skipped
//   copy.cpp        COPY and ADD (files, downloads), and where an image path came from
//   env.cpp         ENV, LABEL, MAINTAINER, exports to .bashrc
//   run.cpp         RUN: its commands, each to the family below, and the hints
//   apt.cpp         apt-get install -> the debs layer
//   pip.cpp         pip install -> wheels layers and requirements inputs
//   downloads.cpp   wget/curl/tar/unzip and git clone -> data layers and git sources
//   users_dirs.cpp  mkdir, chmod, ln -s
//   accounts.cpp    useradd, adduser, groupadd, addgroup -> the accounts layer; owners by name
//   emit.cpp        the spec's YAML with the report (what is not mapped, left out, next)
// Pure: no file access.
#include "templates/docker_lex.hpp"
#include "templates/from_dockerfile.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace templates::migrate {

// One copy rule of a files or data layer, as init writes it.
struct Copy {
  std::string from;
  std::string to;
  std::string owner;
  std::string mode;
  std::string url;    // ADD [--checksum=sha256:HEX] URL, wget, curl: a download rule in place of `from`
  std::string sha256; // its hex digest ("": the sources lock pins it)
  bool extract = false;
  int strip_components = 0;
  std::string git; // git clone URL [&& git checkout X]: a git source
  std::string commit;
  std::string ref;        // a branch or tag (or HEAD) the sources lock pins
  std::string symlink;    // ln -s TARGET LINK: a symlink rule (to: LINK)
  bool directory = false; // mkdir [-p] [-m MODE] DIR: a directory rule (to: DIR)
  std::string image;      // COPY --from=IMAGE (or a stage that only names one): from is a path in it
};

Copy local_copy(std::string from, std::string to, std::string owner, std::string mode);

// useradd/adduser and groupadd/addgroup, as an accounts layer writes them.
struct AccountGroup {
  std::string name;
  std::int64_t gid = 0;
};

struct AccountUser {
  std::string name;
  std::int64_t uid = 0;
  std::optional<std::int64_t> gid; // none: the group of the user's name (useradd's user group)
  std::string home;                // "" for /home/NAME
  bool create_home = false;        // useradd -m, adduser's default
  std::string shell;               // "" for the spec's default, /bin/sh (useradd's)
  std::string comment;
  std::vector<std::string> groups; // -G
  std::string note;                // why the uid is what it is, when the Dockerfile did not say
};

struct Layer {
  std::string name;
  bool accounts = false; // an accounts layer: `groups` and `users`
  std::vector<AccountGroup> groups;
  std::vector<AccountUser> users;
  bool wheels = false;
  bool debs = false;                 // a debs layer: `packages` from the base's distribution
  bool data = false;                 // a data layer (downloads)
  std::vector<std::string> packages; // debs: as apt-get install named them
  bool recommends = false;           // debs: the Dockerfile's apt-get installed Recommends
  std::vector<Copy> copies;
  std::string lock;
  std::vector<std::string> indexes;
  std::vector<std::string> find_links;
  std::vector<std::string> uninstall; // wheels: pip uninstall of these (nothing installed)
};

struct Mapping {
  std::string base = "scratch";
  std::string platform;
  std::vector<Layer> layers;
  std::optional<std::vector<std::string>> entrypoint;
  std::optional<std::vector<std::string>> cmd;
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<std::string> ports;
  std::string workdir;
  std::string user;
  std::string stop_signal;
  std::set<std::string> names;
};

// A layer name made of `want` (lower case, [a-z0-9_-]), unique in m ("deps-2").
std::string layer_name(Mapping& m, std::string want);

// The variables an instruction may refer to: name -> value (nullopt: declared by an ARG
// without a default, which only a --build-arg would give).
using Vars = DockerVars;

// words.cpp
std::string shown_instruction(const std::string& text);
std::string upper(std::string s);
std::vector<std::string> words(const std::string& s, bool* vars = nullptr);
std::vector<std::string> raw_words(const std::string& s);
std::optional<std::vector<std::string>> json_form(const std::string& args);
std::string join_path(const std::string& dir, const std::string& p);
bool is_remote_source(const std::string& s);
bool is_archive(const std::string& s);
std::string expand(const std::string& s, const Vars& vars, std::string* missing);

// emit.cpp: the spec's text.
std::string emit(const Mapping& m, const std::vector<Unmapped>& unmapped, const std::string& file_name,
                 const std::vector<std::string>& commands, const std::vector<std::string>& left_out);

// The walk over one Dockerfile's instructions: instruction() for each in order,
// restart() where a new stage begins, finish() at the end; then m is the last stage's
// mapping and the public members what the report needs.
class Mapper {
public:
  Mapper(std::string context, std::string file_name, const FromDockerfileOptions& options)
      : m_context(std::move(context)), m_file(std::move(file_name)), m_requirement_error(options.requirement_error),
        m_build_args(options.build_args) {}

  void instruction(const DockerInstruction& raw);
  void restart();
  void finish();

  Mapping m;
  std::vector<Unmapped> unmapped;
  std::vector<std::string> m_lock_commands;
  std::set<std::string> m_used_build_args;                // the --build-arg names an ARG declared
  std::vector<std::pair<std::string, std::string>> files; // requirements files of pip install NAME lines
  std::vector<std::string> left_out;                      // "LINE: command" a spec needs nothing for

private:
  struct PipInstall {
    std::vector<std::string> reqs;  // -r FILE, as image paths
    std::vector<std::string> names; // NAME[==VERSION] arguments
    std::vector<std::string> indexes, find_links;
    bool upgrade = false;
    std::vector<std::string> uninstall; // pip uninstall NAME...: this, and nothing else
  };

  // mapper.cpp
  void skip(const std::string& reason, const std::string& shown = {});
  bool no_vars(const std::string& args);
  std::string unresolved() const;
  void arg(const std::string& args, Vars& scope, const Vars* global);
  void from(const std::string& args);
  // copy.cpp
  void copy(const DockerInstruction& in);
  void copy_from(const std::string& src, const std::string& rest, const std::string& owner, const std::string& mode);
  void copy_from_image(const std::string& image, const std::string& stage, std::vector<std::string> w,
                       const std::string& dest, const std::string& owner, const std::string& mode);
  void add_download(const std::string& url, const std::string& dest, const std::string& checksum,
                    const std::string& owner, const std::string& mode);
  std::optional<std::string> copied_from(const std::string& image_path, const Copy** remote = nullptr) const;
  // env.cpp
  static std::optional<std::pair<std::string, std::string>> bashrc_export(const std::vector<std::string>& seg);
  static bool secret_env(const std::string& name, const std::string& value);
  void add_env(const std::string& name, const std::string& value);
  void env(const DockerInstruction& in);
  void label(const std::string& args);
  void set_label(const std::string& key, const std::string& value);
  void maintainer(const std::string& args);
  // What one RUN's commands map to, applied once all of them map.
  struct RunParts {
    std::vector<PipInstall> pips;
    std::vector<std::string> harmless;                        // commands a spec needs nothing for
    std::vector<std::string> chmods;                          // mapped into the copy rules' mode
    std::vector<Copy> links;                                  // ln -s: symlink rules
    std::vector<Copy> dirs;                                   // mkdir: directory rules
    std::vector<std::pair<std::string, std::string>> exports; // echo "export X=V" >> ~/.bashrc: config.env
    Layer accounts;                                           // useradd, groupadd: the accounts layer's
  };
  // run.cpp
  static std::vector<std::vector<std::string>> segments(const std::vector<std::string>& w);
  static std::string command_hint(const std::vector<std::string>& seg);
  void run(const std::string& args);
  bool run_segment(const std::vector<std::string>& seg, bool vars, std::string& cwd, RunParts& parts);
  void apply_run(RunParts& parts);
  // apt.cpp
  static bool apt_install(const std::vector<std::string>& seg, std::vector<std::string>& pkgs, bool& recommends);
  bool apt_run(const std::vector<std::string>& w, bool vars);
  // pip.cpp
  static std::size_t pip_start(const std::vector<std::string>& seg);
  std::optional<std::string> not_one_requirement(const std::string& a) const;
  std::optional<std::string> parse_pip_install(const std::vector<std::string>& w, std::size_t i, const std::string& cwd,
                                               PipInstall& p);
  bool requirement_sources(const PipInstall& p, std::vector<std::string>& sources);
  void add_pip_layer(PipInstall& p);
  void add_uninstall_layer(const PipInstall& p);
  std::optional<std::string> parse_pip_uninstall(const std::vector<std::string>& w, std::size_t i, PipInstall& p);
  bool pip_segment(const std::vector<std::string>& seg, const std::string& cwd, std::vector<PipInstall>& pips,
                   std::vector<std::string>& harmless);
  // downloads.cpp
  bool git_clone(const std::vector<std::vector<std::string>>& segs, const std::string& cwd);
  void need_sources_lock();
  static bool fetch_command(const std::vector<std::string>& seg, const std::string& cwd,
                            std::vector<std::pair<std::string, std::string>>& out);
  static bool unpack_command(const std::vector<std::string>& seg, const std::string& cwd, std::string& file,
                             std::string& into, int& strip);
  bool download_run(const std::vector<std::vector<std::string>>& segs, std::string cwd);
  // users_dirs.cpp
  static std::optional<Copy> link_command(const std::vector<std::string>& seg, const std::string& cwd);
  Layer& links_layer(const char* name = "links");
  static std::optional<std::vector<Copy>> mkdir_command(const std::vector<std::string>& seg, const std::string& cwd);
  bool chmod_of_copies(const std::vector<std::string>& seg, const std::string& cwd, std::vector<Copy>& made);
  // accounts.cpp
  static bool account_command(const std::string& c);
  std::optional<std::string> add_account(const std::vector<std::string>& seg, Layer& pending);
  std::optional<std::string> useradd(const std::vector<std::string>& seg, Layer& pending);
  std::optional<std::string> adduser(const std::vector<std::string>& seg, Layer& pending);
  std::optional<std::string> add_user(AccountUser u, bool uid_given, bool system, bool user_group,
                                      const std::string& base_dir, Layer& pending);
  std::optional<std::string> add_to_group(const std::string& user, const std::string& group, Layer& pending);
  std::optional<std::string> groupadd(const std::vector<std::string>& seg, Layer& pending);
  const Layer* accounts_layer() const;
  void commit_accounts(const Layer& pending);
  std::optional<std::int64_t> known_uid(const std::string& name, const Layer* pending = nullptr) const;
  std::optional<std::int64_t> known_gid(const std::string& name, const Layer* pending = nullptr) const;
  std::int64_t free_id(const Layer& pending, bool gid) const;
  std::optional<std::string> numeric_owner(const std::string& owner) const;

  std::string m_context;
  std::string m_file;
  std::function<std::optional<std::string>(const std::string&)> m_requirement_error;
  std::map<std::string, std::string> m_build_args; // --build-arg
  Vars m_global;                                   // the ARGs before the first FROM
  Vars m_vars;                                     // the stage's ARGs and ENVs, as set so far
  DockerRefs m_refs;                               // its ENVs whose values refer to the base's variables (spec form)
  bool m_seen_from = false;
  // The stage being walked: its name (FROM IMAGE AS NAME), its image, and whether it is
  // only that FROM (no instruction of its own but ARG); such stages by name, for a
  // later COPY --from=NAME, which reads the image itself.
  std::string m_stage_name;
  std::string m_stage_image;
  bool m_stage_plain = true;
  std::map<std::string, std::string> m_image_stages;
  std::string m_missing; // the current instruction's first variable without a value
  const DockerInstruction* m_cur = nullptr;
  std::vector<Unmapped> m_stage;
  std::vector<const DockerInstruction*> m_stage_ins;
};

} // namespace templates::migrate
