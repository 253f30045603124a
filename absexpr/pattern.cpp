// Parser of rewrite-rule patterns.
#include "absexpr/pattern.h"

#include <cctype>
#include <charconv>
#include <map>

#include "core/error.h"

namespace weft {
namespace {

class PatternReader {
 public:
  PatternReader(std::map<std::string, int>& vars, std::map<std::string, int>& size_vars,
                bool may_bind)
      : vars_(vars), size_vars_(size_vars), may_bind_(may_bind) {}

  Pattern read_all(std::string_view text) {
    s_ = text;
    pos_ = 0;
    Pattern p;
    p.root = read(p);
    skip();
    WEFT_CHECK(pos_ == s_.size(), "trailing text in rule pattern '{}'", text);
    return p;
  }

 private:
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  std::string_view word() {
    skip();
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) ||
                                s_[pos_] == '?' || s_[pos_] == '_'))
      ++pos_;
    return s_.substr(start, pos_ - start);
  }
  int lookup(std::map<std::string, int>& table, std::string_view name) {
    auto it = table.find(std::string(name));
    if (it != table.end()) return it->second;
    WEFT_CHECK(may_bind_, "rule right side uses unbound variable {} in '{}'", name, s_);
    int id = static_cast<int>(table.size());
    table.emplace(std::string(name), id);
    return id;
  }

  int read(Pattern& p) {
    skip();
    WEFT_CHECK(pos_ < s_.size(), "rule pattern '{}' ends early", s_);
    PatNode n;
    if (s_[pos_] != '(') {
      std::string_view name = word();
      WEFT_CHECK(name.size() > 1 && name[0] == '?', "rule pattern '{}': expected ?var", s_);
      n.is_var = true;
      n.var = lookup(vars_, name);
    } else {
      ++pos_;
      std::string_view head = word();
      WEFT_CHECK(read_term_symbol(head, n.op, n.k), "rule pattern '{}': unknown operator {}", s_,
                 head);
      if (n.op == TermOp::sum || n.op == TermOp::max) {
        std::string_view size = word();
        if (!size.empty() && size[0] == '?') {
          n.k_var = lookup(size_vars_, size);
        } else {
          auto [ptr, ec] = std::from_chars(size.data(), size.data() + size.size(), n.k);
          WEFT_CHECK(ec == std::errc() && n.k > 1, "rule pattern '{}': bad size {}", s_, size);
        }
      }
      int arity = term_arity(n.op);
      if (arity >= 1) n.a = read(p);
      if (arity >= 2) n.b = read(p);
      skip();
      WEFT_CHECK(pos_ < s_.size() && s_[pos_] == ')', "rule pattern '{}': expected ')'", s_);
      ++pos_;
    }
    p.nodes.push_back(n);
    return static_cast<int>(p.nodes.size()) - 1;
  }

  std::map<std::string, int>& vars_;
  std::map<std::string, int>& size_vars_;
  bool may_bind_;
  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

PatternPair parse_rule_patterns(std::string_view lhs, std::string_view rhs) {
  std::map<std::string, int> vars, size_vars;
  PatternPair pair;
  pair.lhs = PatternReader(vars, size_vars, true).read_all(lhs);
  pair.rhs = PatternReader(vars, size_vars, false).read_all(rhs);
  pair.num_vars = static_cast<int>(vars.size());
  pair.num_size_vars = static_cast<int>(size_vars.size());
  return pair;
}

}  // namespace weft
