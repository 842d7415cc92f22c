// PubGrub over finite version sets (python/resolver.hpp). The names follow the
// algorithm's description (https://github.com/dart-lang/pub/blob/master/doc/solver.md):
// terms, incompatibilities, the partial solution (the trail of assignments, each a
// decision or a derivation with its cause), unit propagation, conflict resolution and
// the report of a failure's derivation.
#include "python/resolver.hpp"

#include "python/metadata.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <stdexcept>

namespace python::resolver {

using util::Error;
using util::ErrorKind;

namespace {

// A set of a package's candidates, one bit each (index into Pkg::cands).
class Bits {
public:
  Bits() = default;
  explicit Bits(std::size_t n, bool all = false) : m_n(n), m_w((n + 63) / 64, all ? ~std::uint64_t{0} : 0) { trim(); }
  void set(std::size_t i) { m_w[i / 64] |= std::uint64_t{1} << (i % 64); }
  bool test(std::size_t i) const { return ((m_w[i / 64] >> (i % 64)) & 1U) != 0; }
  std::size_t count() const {
    std::size_t c = 0;
    for (auto w : m_w) {
      c += static_cast<std::size_t>(std::popcount(w));
    }
    return c;
  }
  bool none() const {
    return std::all_of(m_w.begin(), m_w.end(), [](std::uint64_t w) { return w == 0; });
  }
  std::size_t size() const { return m_n; }
  Bits operator&(const Bits& o) const {
    return combine(o, [](auto a, auto b) { return a & b; });
  }
  Bits operator|(const Bits& o) const {
    return combine(o, [](auto a, auto b) { return a | b; });
  }
  Bits minus(const Bits& o) const {
    return combine(o, [](auto a, auto b) { return a & ~b; });
  }
  bool operator==(const Bits& o) const = default;
  // The highest index in the set, or -1.
  long highest() const {
    for (std::size_t k = m_w.size(); k-- > 0;) {
      if (m_w[k] != 0) {
        return static_cast<long>(k * 64 + 63 - static_cast<std::size_t>(std::countl_zero(m_w[k])));
      }
    }
    return -1;
  }

private:
  template <class F> Bits combine(const Bits& o, F f) const {
    Bits r(m_n);
    for (std::size_t k = 0; k < m_w.size(); ++k) {
      r.m_w[k] = f(m_w[k], o.m_w[k]);
    }
    r.trim();
    return r;
  }
  void trim() {
    if (m_n % 64 != 0 && !m_w.empty()) {
      m_w.back() &= (std::uint64_t{1} << (m_n % 64)) - 1;
    }
  }
  std::size_t m_n = 0;
  std::vector<std::uint64_t> m_w;
};

// "The package is selected at a version in `set`" (positive), or "it is not selected
// at a version in `set`" (negative: absent, or elsewhere).
struct Term {
  int pkg = 0;
  bool positive = true;
  Bits set;
};

Term negate(const Term& t) {
  return {t.pkg, !t.positive, t.set};
}

// Both terms hold (same package).
Term intersect(const Term& a, const Term& b) {
  if (a.positive && b.positive) {
    return {a.pkg, true, a.set & b.set};
  }
  if (a.positive) {
    return {a.pkg, true, a.set.minus(b.set)};
  }
  if (b.positive) {
    return {a.pkg, true, b.set.minus(a.set)};
  }
  return {a.pkg, false, a.set | b.set};
}

// No selection satisfies it (a negative term always admits absence).
bool empty(const Term& t) {
  return t.positive && t.set.none();
}
// Every selection satisfies it.
bool vacuous(const Term& t) {
  return !t.positive && t.set.none();
}
bool subset(const Term& a, const Term& b) {
  return empty(intersect(a, negate(b)));
}
bool disjoint(const Term& a, const Term& b) {
  return empty(intersect(a, b));
}

struct Pkg {
  std::string key;              // "numpy", "requests[socks]"; "" for the root
  std::string base;             // "numpy", "requests"
  std::string extra;            // "", "socks"
  std::string name;             // as first written
  std::vector<Candidate> cands; // ascending
};

enum class Kind { input, dependency, derived };
struct Incompat {
  std::vector<Term> terms;
  Kind kind = Kind::derived;
  int left = -1, right = -1; // derived: the two it came from
  std::string text;          // external: what it says, in words
};

struct Assignment {
  Term term;
  int level = 0;
  int cause = -1; // -1: a decision
};

// A dependency of a chosen version (or of the input): the package and the versions
// that satisfy it, and who asked.
struct Dep {
  int pkg = 0;
  Bits set;
  std::string text; // "opencv-python 4.8.0.76 depends on numpy>=1.21.2"
  std::string via;  // "opencv-python 4.8.0.76", "requirements.in:3"
  bool constraint = false;
};

enum class Relation { satisfied, contradicted, almost, inconclusive };

class Solver {
public:
  Solver(Source& source, const Options& options) : m_src(source), m_opt(options) {}

  Resolution run(const std::vector<Input>& inputs) {
    Pkg root;
    root.name = "the requirements";
    Candidate rc;
    rc.text = "";
    root.cands.push_back(rc);
    add_pkg(std::move(root));
    add_input_deps(inputs);
    Term t{0, true, Bits(1, true)};
    ++m_level;
    assign(t, -1);
    m_decided[0] = 0;
    add_deps(0, 0);
    int next = 0;
    while (true) {
      propagate(next);
      auto chosen = choose();
      if (!chosen) {
        break;
      }
      next = *chosen;
      if (++m_steps > m_opt.max_steps) {
        throw Error(ErrorKind::input,
                    "the resolution did not finish within " + std::to_string(m_opt.max_steps) + " steps (" +
                        std::to_string(m_res.decisions) + " decisions, " + std::to_string(m_res.conflicts) +
                        " conflicts)",
                    "narrow the ranges of the packages with many versions, or pin some of them");
      }
    }
    return result();
  }

private:
  // ---- packages and their candidates
  int add_pkg(Pkg p) {
    int id = static_cast<int>(m_pkgs.size());
    m_index[p.key] = id;
    m_pkgs.push_back(std::move(p));
    m_incs_of.emplace_back();
    m_trail_of.emplace_back();
    m_decided.push_back(-1);
    m_acc.push_back(Term{id, false, Bits(m_pkgs.back().cands.size())});
    return id;
  }

  int pkg_of(const std::string& base, const std::string& extra, const std::string& name) {
    std::string key = extra.empty() ? base : base + "[" + extra + "]";
    if (auto it = m_index.find(key); it != m_index.end()) {
      return it->second;
    }
    Pkg p;
    p.key = key;
    p.base = base;
    p.extra = extra;
    p.name = extra.empty() ? name : name + "[" + extra + "]";
    if (!extra.empty()) {
      p.cands = m_pkgs[static_cast<std::size_t>(pkg_of(base, "", name))].cands;
    } else {
      p.cands = m_src.candidates(base);
      std::stable_sort(p.cands.begin(), p.cands.end(), [](const Candidate& a, const Candidate& b) {
        return a.version < b.version || (a.version == b.version && a.installed && !b.installed);
      });
      // One candidate per version: the base's copy when it is one of them.
      p.cands.erase(std::unique(p.cands.begin(), p.cands.end(),
                                [](const Candidate& a, const Candidate& b) { return a.version == b.version; }),
                    p.cands.end());
    }
    return add_pkg(std::move(p));
  }

  const Pkg& pkg(int id) const { return m_pkgs[static_cast<std::size_t>(id)]; }

  // The candidates a specifier admits: pre-releases only when asked for (--pre, or a
  // clause naming one) or when nothing else fits; yanked ones only when pinned exactly.
  Bits admitted(int id, const pep440::SpecifierSet& spec) const {
    const auto& cands = pkg(id).cands;
    bool exact = spec.items.size() == 1 &&
                 (spec.items[0].op == "===" || (spec.items[0].op == "==" && !spec.items[0].version.ends_with("*")));
    auto pick = [&](bool pre) {
      Bits b(cands.size());
      for (std::size_t i = 0; i < cands.size(); ++i) {
        if ((!cands[i].yanked || exact) && spec.contains(cands[i].version, pre)) {
          b.set(i);
        }
      }
      return b;
    };
    Bits b = pick(m_opt.pre);
    return b.none() && !m_opt.pre ? pick(true) : b;
  }

  // ---- incompatibilities
  int add_incompat(Incompat inc, bool index = true) {
    // A term every selection satisfies says nothing: left out.
    std::erase_if(inc.terms, [](const Term& t) { return vacuous(t); });
    int id = static_cast<int>(m_incs.size());
    m_incs.push_back(std::move(inc));
    if (index) {
      register_incompat(id);
    }
    return id;
  }
  void register_incompat(int id) {
    for (const auto& t : m_incs[static_cast<std::size_t>(id)].terms) {
      m_incs_of[static_cast<std::size_t>(t.pkg)].push_back(id);
    }
  }
  const Incompat& inc(int id) const { return m_incs[static_cast<std::size_t>(id)]; }

  std::string describe_req(const Requirement& r) const {
    std::string s = r.name;
    if (!r.extras.empty()) {
      std::string e;
      for (const auto& x : r.extras) {
        e += (e.empty() ? "" : ",") + x;
      }
      s += "[" + e + "]";
    }
    return s + r.specifier.str();
  }

  // The dependencies a requirement makes: the project, and one virtual package per extra
  // (which depends on the project at the same version).
  void deps_of_requirement(const Requirement& r, const std::string& via, const std::string& text, bool constraint,
                           std::vector<Dep>& out) {
    std::vector<std::string> extras{""};
    extras.insert(extras.end(), r.extras.begin(), r.extras.end());
    for (const auto& x : extras) {
      int d = pkg_of(r.key, x, r.name);
      out.push_back({d, admitted(d, r.specifier), text, via, constraint});
    }
  }

  void add_input_deps(const std::vector<Input>& inputs) {
    std::vector<Dep> deps;
    std::vector<std::string> keys;
    for (const auto& in : inputs) {
      keys.push_back(in.requirement.key);
    }
    m_src.prefetch(keys);
    for (const auto& in : inputs) {
      if (in.requirement.marker) {
        bool holds = false;
        try {
          holds = in.requirement.marker->evaluate(m_opt.markers);
        } catch (const std::invalid_argument& e) {
          throw Error(ErrorKind::input, in.where + ": " + e.what());
        }
        if (!holds) {
          continue;
        }
      }
      std::string text = in.where + (in.constraint ? " constrains " : " needs ") + describe_req(in.requirement);
      deps_of_requirement(in.requirement, in.where, text, in.constraint, deps);
    }
    m_deps[{0, 0}] = std::move(deps);
  }

  // The Requires-Dist of pkg at candidate ci whose markers hold for the target (an
  // extra's package: those its extra adds), loaded once.
  const std::vector<Dep>& deps(int id, int ci) {
    auto key = std::make_pair(id, ci);
    if (auto it = m_deps.find(key); it != m_deps.end()) {
      return it->second;
    }
    // Copies: requiring a new project adds packages, which moves m_pkgs.
    const Pkg p = pkg(id);
    const Candidate c = p.cands[static_cast<std::size_t>(ci)];
    std::string who = p.name + " " + c.text;
    std::vector<Dep> out;
    if (!p.extra.empty()) {
      int b = m_index.at(p.base);
      Bits one(pkg(b).cands.size());
      one.set(static_cast<std::size_t>(ci));
      out.push_back({b, one, who + " is " + pkg(b).name + " " + c.text + " with its extra " + p.extra, who, false});
    }
    std::vector<Requirement> reqs;
    std::vector<std::string> keys;
    const std::set<std::string> with{p.extra};
    for (const auto& text : m_src.requires_dist(p.base, c)) {
      Requirement r;
      try {
        r = Requirement::parse(text);
      } catch (const std::invalid_argument& e) {
        throw Error(ErrorKind::input, pkg(m_index.at(p.base)).name + " " + c.text + ": Requires-Dist '" + text +
                                          "' is not a valid requirement: " + e.what());
      }
      try {
        bool here = !r.marker || r.marker->evaluate(m_opt.markers, p.extra.empty() ? std::set<std::string>{} : with);
        bool without = !r.marker || r.marker->evaluate(m_opt.markers);
        if (!here || (!p.extra.empty() && without) || r.key == p.base) {
          continue; // another target's, the project's own (without this extra), or itself
        }
      } catch (const std::invalid_argument& e) {
        throw Error(ErrorKind::input, who + ": Requires-Dist '" + text + "': " + e.what());
      }
      keys.push_back(r.key);
      reqs.push_back(std::move(r));
    }
    std::vector<std::string> fresh;
    for (const auto& k : keys) {
      if (!m_index.count(k)) {
        fresh.push_back(k);
      }
    }
    if (!fresh.empty()) {
      m_src.prefetch(fresh);
    }
    for (const auto& r : reqs) {
      deps_of_requirement(r, who, who + " depends on " + describe_req(r), false, out);
    }
    return m_deps[key] = std::move(out);
  }

  // The incompatibilities of a decision's dependencies: {pkg at ci, not dep}, or for a
  // constraint {root, dep's complement}.
  void add_deps(int id, int ci) {
    if (!m_deps_added.insert({id, ci}).second) {
      return;
    }
    Bits one(pkg(id).cands.size());
    one.set(static_cast<std::size_t>(ci));
    for (const auto& d : deps(id, ci)) {
      Incompat x;
      x.kind = id == 0 ? Kind::input : Kind::dependency;
      x.text = d.text;
      if (d.set.none() && !d.constraint) {
        std::string why = m_src.why_none(pkg(d.pkg).base);
        x.text += pkg(d.pkg).cands.empty()
                      ? ", and " + (why.empty() ? "the index has no version of " + pkg(d.pkg).name : why)
                      : ", and no version of " + pkg(d.pkg).name +
                            (why.empty() ? " on the index matches" : " matches: " + why);
      }
      x.terms.push_back({id, true, one});
      if (d.constraint) {
        Bits all(pkg(d.pkg).cands.size(), true);
        x.terms.push_back({d.pkg, true, all.minus(d.set)});
      } else {
        x.terms.push_back({d.pkg, false, d.set});
      }
      add_incompat(std::move(x));
    }
  }

  // ---- the partial solution
  void assign(const Term& t, int cause) {
    std::size_t p = static_cast<std::size_t>(t.pkg);
    m_trail_of[p].push_back(static_cast<int>(m_trail.size()));
    m_trail.push_back({t, m_level, cause});
    m_acc[p] = intersect(m_acc[p], t);
  }

  Relation relation(int id, int& unsatisfied) const {
    unsatisfied = -1;
    const auto& terms = inc(id).terms;
    for (std::size_t k = 0; k < terms.size(); ++k) {
      const Term& acc = m_acc[static_cast<std::size_t>(terms[k].pkg)];
      if (subset(acc, terms[k])) {
        continue;
      }
      if (disjoint(acc, terms[k])) {
        return Relation::contradicted;
      }
      if (unsatisfied != -1) {
        return Relation::inconclusive;
      }
      unsatisfied = static_cast<int>(k);
    }
    return unsatisfied == -1 ? Relation::satisfied : Relation::almost;
  }

  void propagate(int start) {
    std::vector<int> changed{start};
    while (!changed.empty()) {
      int p = changed.back();
      changed.pop_back();
      const std::size_t n = m_incs_of[static_cast<std::size_t>(p)].size();
      for (std::size_t k = n; k-- > 0;) {
        int id = m_incs_of[static_cast<std::size_t>(p)][k];
        int u = -1;
        Relation r = relation(id, u);
        if (r == Relation::satisfied) {
          id = resolve_conflict(id);
          r = relation(id, u);
          if (r != Relation::almost) {
            throw Error(ErrorKind::internal, "resolver: a learned incompatibility is not almost satisfied");
          }
          const Term& t = inc(id).terms[static_cast<std::size_t>(u)];
          assign(negate(t), id);
          changed.assign(1, t.pkg);
          break;
        }
        if (r == Relation::almost) {
          const Term& t = inc(id).terms[static_cast<std::size_t>(u)];
          int q = t.pkg;
          assign(negate(t), id);
          changed.push_back(q);
        }
      }
    }
  }

  // The trail index from which the assignments of t.pkg (up to and including it)
  // satisfy t; with `with`, counting that assignment's term in as well.
  int earliest_satisfier(const Term& t, int before = -1, const Term* with = nullptr) const {
    const auto& idx = m_trail_of[static_cast<std::size_t>(t.pkg)];
    Term acc{t.pkg, false, Bits(pkg(t.pkg).cands.size())};
    for (int i : idx) {
      if (before >= 0 && i >= before) {
        break;
      }
      acc = intersect(acc, m_trail[static_cast<std::size_t>(i)].term);
      if (subset(with ? intersect(acc, *with) : acc, t)) {
        return i;
      }
    }
    return -1;
  }

  int resolve_conflict(int id) {
    bool learned = false;
    ++m_res.conflicts;
    while (true) {
      const Incompat& x = inc(id);
      if (terminal(x)) {
        throw Error(ErrorKind::input, report(id), hint());
      }
      int satisfier = -1, term = -1, prev = 1;
      std::vector<int> sat(x.terms.size());
      for (std::size_t k = 0; k < x.terms.size(); ++k) {
        sat[k] = earliest_satisfier(x.terms[k]);
        if (sat[k] < 0) {
          throw Error(ErrorKind::internal, "resolver: a satisfied incompatibility has an unsatisfied term");
        }
        if (sat[k] > satisfier) {
          satisfier = sat[k];
          term = static_cast<int>(k);
        }
      }
      for (std::size_t k = 0; k < x.terms.size(); ++k) {
        if (static_cast<int>(k) != term) {
          prev = std::max(prev, m_trail[static_cast<std::size_t>(sat[k])].level);
        }
      }
      const Assignment& s = m_trail[static_cast<std::size_t>(satisfier)];
      const Term& t = x.terms[static_cast<std::size_t>(term)];
      bool alone = subset(s.term, t);
      if (!alone) {
        // The assignments before it that, with it, satisfy t.
        int p = earliest_satisfier(t, satisfier, &s.term);
        if (p >= 0) {
          prev = std::max(prev, m_trail[static_cast<std::size_t>(p)].level);
        }
      }
      if (s.cause == -1 || prev != s.level) {
        if (learned) {
          register_incompat(id);
        }
        backtrack(prev);
        return id;
      }
      Incompat prior;
      prior.left = id;
      prior.right = s.cause;
      for (const auto* src : {&x, &inc(s.cause)}) {
        for (const auto& u : src->terms) {
          if (u.pkg != t.pkg) {
            merge_term(prior.terms, u);
          }
        }
      }
      if (!alone) {
        merge_term(prior.terms, negate(intersect(s.term, negate(t))));
      }
      id = add_incompat(std::move(prior), false);
      learned = true;
    }
  }

  static void merge_term(std::vector<Term>& terms, const Term& t) {
    for (auto& u : terms) {
      if (u.pkg == t.pkg) {
        u = intersect(u, t);
        return;
      }
    }
    terms.push_back(t);
  }

  bool terminal(const Incompat& x) const {
    return x.terms.empty() || (x.terms.size() == 1 && x.terms[0].pkg == 0 && x.terms[0].positive);
  }

  void backtrack(int level) {
    std::set<int> touched;
    while (!m_trail.empty() && m_trail.back().level > level) {
      const Assignment& a = m_trail.back();
      std::size_t p = static_cast<std::size_t>(a.term.pkg);
      if (a.cause == -1) {
        m_decided[p] = -1;
      }
      m_trail_of[p].pop_back();
      touched.insert(a.term.pkg);
      m_trail.pop_back();
    }
    for (int p : touched) {
      Term acc{p, false, Bits(pkg(p).cands.size())};
      for (int i : m_trail_of[static_cast<std::size_t>(p)]) {
        acc = intersect(acc, m_trail[static_cast<std::size_t>(i)].term);
      }
      m_acc[static_cast<std::size_t>(p)] = acc;
    }
    m_level = level;
  }

  // ---- decisions
  // The next package to decide: of those required and undecided, the one with the
  // fewest versions left (a conflict surfaces soonest there), then its preferred
  // version if it is left, else its newest.
  std::optional<int> choose() {
    int best = -1;
    std::size_t fewest = 0;
    for (std::size_t p = 1; p < m_pkgs.size(); ++p) {
      if (m_decided[p] != -1 || !m_acc[p].positive) {
        continue;
      }
      std::size_t c = m_acc[p].set.count();
      if (best == -1 || c < fewest) {
        best = static_cast<int>(p);
        fewest = c;
      }
    }
    if (best == -1) {
      return std::nullopt;
    }
    const Bits& allowed = m_acc[static_cast<std::size_t>(best)].set;
    int ci = static_cast<int>(allowed.highest());
    const Pkg& p = pkg(best);
    if (auto it = m_opt.preferred.find(p.base); it != m_opt.preferred.end()) {
      if (auto v = pep440::Version::parse(it->second)) {
        for (std::size_t i = 0; i < p.cands.size(); ++i) {
          if (allowed.test(i) && p.cands[i].version == *v) {
            ci = static_cast<int>(i);
          }
        }
      }
    }
    const std::size_t n = p.cands.size();
    add_deps(best, ci); // may add packages: p and allowed are not used after it
    ++m_res.decisions;
    // A dependency the partial solution already contradicts: no decision; propagation
    // derives that this version is out.
    for (int id : m_incs_of[static_cast<std::size_t>(best)]) {
      const auto& terms = inc(id).terms;
      bool conflict = true;
      for (const auto& t : terms) {
        if (t.pkg == best) {
          conflict = conflict && t.positive == t.set.test(static_cast<std::size_t>(ci));
        } else {
          conflict = conflict && subset(m_acc[static_cast<std::size_t>(t.pkg)], t);
        }
      }
      if (conflict) {
        return best;
      }
    }
    ++m_level;
    Bits one(n);
    one.set(static_cast<std::size_t>(ci));
    assign({best, true, one}, -1);
    m_decided[static_cast<std::size_t>(best)] = ci;
    return best;
  }

  // ---- the answer
  Resolution result() {
    std::map<int, Resolved> by_pkg;
    for (std::size_t p = 1; p < m_pkgs.size(); ++p) {
      if (m_decided[p] == -1 || !m_pkgs[p].extra.empty()) {
        continue;
      }
      Resolved r;
      r.key = m_pkgs[p].base;
      r.name = m_pkgs[p].name;
      r.candidate = m_pkgs[p].cands[static_cast<std::size_t>(m_decided[p])];
      by_pkg[static_cast<int>(p)] = r;
    }
    for (std::size_t p = 0; p < m_pkgs.size(); ++p) {
      if (m_decided[p] == -1) {
        continue;
      }
      if (!m_pkgs[p].extra.empty()) {
        by_pkg[m_index.at(m_pkgs[p].base)].extras.insert(m_pkgs[p].extra);
      }
      for (const auto& d : deps(static_cast<int>(p), m_decided[p])) {
        int b = m_index.at(pkg(d.pkg).base);
        auto it = by_pkg.find(b);
        if (it == by_pkg.end() || d.constraint || b == static_cast<int>(p) ||
            (static_cast<int>(p) != 0 && m_index.at(m_pkgs[p].base) == b)) {
          continue;
        }
        auto& via = it->second.via;
        if (std::find(via.begin(), via.end(), d.via) == via.end()) {
          via.push_back(d.via);
        }
      }
    }
    for (auto& [p, r] : by_pkg) {
      m_res.packages.push_back(std::move(r));
    }
    std::sort(m_res.packages.begin(), m_res.packages.end(),
              [](const Resolved& a, const Resolved& b) { return a.key < b.key; });
    return m_res;
  }

  // ---- the report of a failure
  std::string versions(const Term& t) const {
    const Pkg& p = pkg(t.pkg);
    const std::size_t n = p.cands.size();
    const std::size_t c = t.set.count();
    if (t.pkg == 0) {
      return "the requirements";
    }
    if (c == n) {
      return p.name;
    }
    std::vector<std::size_t> in;
    for (std::size_t i = 0; i < n; ++i) {
      if (t.set.test(i)) {
        in.push_back(i);
      }
    }
    if (c == 1) {
      return p.name + " " + p.cands[in[0]].text;
    }
    if (in.back() - in.front() + 1 == c) {
      const std::string& lo = p.cands[in.front()].text;
      const std::string& hi = p.cands[in.back()].text;
      if (in.front() == 0) {
        return p.name + " <=" + hi;
      }
      if (in.back() == n - 1) {
        return p.name + " >=" + lo;
      }
      return p.name + " >=" + lo + ",<=" + hi;
    }
    std::string s = p.name + " ";
    for (std::size_t k = 0; k < in.size() && k < 4; ++k) {
      s += (k ? (k + 1 == in.size() ? " or " : ", ") : "") + p.cands[in[k]].text;
    }
    return in.size() > 4 ? s + ", ... (" + std::to_string(in.size()) + " versions)" : s;
  }

  // What an incompatibility says, in words.
  std::string describe(int id) const {
    const Incompat& x = inc(id);
    if (x.kind != Kind::derived) {
      return x.text;
    }
    std::vector<const Term*> pos, neg;
    for (const auto& t : x.terms) {
      (t.positive ? pos : neg).push_back(&t);
    }
    if (x.terms.empty()) {
      return "no versions can be chosen";
    }
    if (pos.size() == 1 && neg.empty()) {
      return pos[0]->pkg == 0 ? "the requirements cannot be met" : versions(*pos[0]) + " cannot be chosen";
    }
    if (pos.size() == 1 && neg.size() == 1) {
      return versions(*pos[0]) + (pos[0]->pkg == 0 ? " need " : " needs ") + versions(*neg[0]);
    }
    if (pos.size() == 2 && neg.empty()) {
      if (pos[0]->pkg == 0 || pos[1]->pkg == 0) {
        const Term* other = pos[0]->pkg == 0 ? pos[1] : pos[0];
        return "the requirements forbid " + versions(*other);
      }
      return versions(*pos[0]) + " and " + versions(*pos[1]) + " cannot be chosen together";
    }
    if (pos.empty() && neg.size() == 1) {
      return versions(*neg[0]) + " is needed";
    }
    std::string s = "these cannot all hold: ";
    for (std::size_t k = 0; k < x.terms.size(); ++k) {
      s += (k ? "; " : "") + std::string(x.terms[k].positive ? "" : "not ") + versions(x.terms[k]);
    }
    return s;
  }

  std::string report(int id) const {
    std::vector<std::string> lines;
    std::map<int, int> numbered;
    std::function<std::string(int)> ref;
    std::function<void(int)> visit = [&](int i) {
      const Incompat& x = inc(i);
      if (x.kind != Kind::derived || numbered.count(i)) {
        return;
      }
      visit(x.left);
      visit(x.right);
      lines.push_back("because " + ref(x.left) + "\n      and " + ref(x.right) + ",\n      " + describe(i));
      numbered[i] = static_cast<int>(lines.size());
    };
    ref = [&](int i) {
      auto it = numbered.find(i);
      return it == numbered.end() ? describe(i) : describe(i) + " (" + std::to_string(it->second) + ")";
    };
    visit(id);
    std::string out = "no set of versions satisfies the requirements:";
    for (std::size_t k = 0; k < lines.size(); ++k) {
      out += "\n  (" + std::to_string(k + 1) + ") " + lines[k];
    }
    if (lines.empty()) {
      out += "\n  " + describe(id);
    }
    return out;
  }

  std::string hint() const {
    return "change the input lines named above (a range, or a pin), or name a package the base keeps to let the "
           "lock replace it";
  }

  Source& m_src;
  const Options& m_opt;
  std::vector<Pkg> m_pkgs;
  std::map<std::string, int> m_index;
  std::vector<Incompat> m_incs;
  std::vector<std::vector<int>> m_incs_of;
  std::vector<Assignment> m_trail;
  std::vector<std::vector<int>> m_trail_of;
  std::vector<Term> m_acc;
  std::vector<int> m_decided;
  std::map<std::pair<int, int>, std::vector<Dep>> m_deps;
  std::set<std::pair<int, int>> m_deps_added;
  int m_level = 0;
  std::size_t m_steps = 0;
  Resolution m_res;
};

} // namespace

Resolution resolve(const std::vector<Input>& inputs, Source& source, const Options& options) {
  Solver s(source, options);
  return s.run(inputs);
}

} // namespace python::resolver
