// Rule text: printing, parsing (each side type-checked through the .weft parser at one
// instantiation, with its lines kept where they are so errors point into the rule file) and
// instantiation at chosen sizes.
#include "rewrite/rule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>
#include <sstream>

#include "core/error.h"
#include "ir/parser.h"
#include "ir/printer.h"

namespace weft {
namespace {

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string input_line(const RuleInput& in, const std::map<std::string, int64_t>& sizes) {
  std::string dims;
  for (size_t d = 0; d < in.dims.size(); ++d)
    dims += fmt::format("{}{}", d ? ", " : "", sizes.at(in.dims[d]));
  return fmt::format("input {}: f32[{}]", in.name, dims);
}

// A .weft program for one side: `lines` holds the text at the line numbers it has in the rule
// file (1-based; empty where the side has nothing), so the parser's locations are the file's.
Graph parse_side(const std::vector<std::string>& lines, const std::string& filename) {
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  return parse_graph(text, filename);
}

}  // namespace

std::optional<int> power_of_two(const Rational& r) {
  auto log2_of = [](int64_t v) -> std::optional<int> {
    if (v <= 0 || (v & (v - 1)) != 0) return std::nullopt;
    int k = 0;
    while (v > 1) v >>= 1, ++k;
    return k;
  };
  if (r.den() == 1) return log2_of(r.num());
  if (r.num() == 1)
    if (auto k = log2_of(r.den())) return -*k;
  return std::nullopt;
}

std::optional<Rational> rule_base_pow(const Rational& p, const std::optional<Rational>& base) {
  const std::optional<int> k = power_of_two(p);
  if (!base || !k || *k == 0) return p;
  std::optional<Rational> out = Rational(1);
  for (int i = 0; i < std::abs(*k) && out; ++i)
    out = Rational::make(static_cast<__int128>(out->num()) * base->num(),
                         static_cast<__int128>(out->den()) * base->den());
  if (out && *k < 0) out = Rational::make(out->den(), out->num());
  return out;
}

const std::vector<int64_t>& rule_reading_sizes() {
  static const std::vector<int64_t> sizes = {3, 5, 7, 11, 13, 17, 19, 23};
  return sizes;
}

const char* rule_status_name(RuleStatus status) {
  switch (status) {
    case RuleStatus::unverified:
      return "unverified";
    case RuleStatus::finite_field:
      return "finite_field";
    case RuleStatus::proven:
      return "proven";
  }
  return "?";
}

std::vector<std::string> rule_variables(const Rule& rule) {
  std::vector<std::string> vars;
  for (const RuleInput& in : rule.inputs)
    for (const std::string& d : in.dims)
      if (std::find(vars.begin(), vars.end(), d) == vars.end()) vars.push_back(d);
  return vars;
}

std::map<std::string, int64_t> instantiation(const Rule& rule, const std::vector<int64_t>& sizes) {
  WEFT_CHECK(!sizes.empty(), "no sizes to instantiate rule {} with", rule.id);
  std::map<std::string, int64_t> out;
  const std::vector<std::string> vars = rule_variables(rule);
  for (size_t i = 0; i < vars.size(); ++i) {
    WEFT_CHECK(sizes[i % sizes.size()] > 1, "rule {}: size {} for {} broadcasts", rule.id,
               sizes[i % sizes.size()], vars[i]);
    out[vars[i]] = sizes[i % sizes.size()];
  }
  return out;
}

Graph instantiate(const Rule& rule, bool target_side, const std::map<std::string, int64_t>& sizes) {
  std::vector<std::string> lines = {
      fmt::format("program rule{}_{}", rule.id, target_side ? "target" : "source")};
  for (const RuleInput& in : rule.inputs) lines.push_back(input_line(in, sizes));
  for (const std::string& l : target_side ? rule.target : rule.source) lines.push_back(l);
  return parse_side(lines, fmt::format("rule {} {}", rule.id, target_side ? "target" : "source"));
}

std::vector<std::string> side_lines(const Graph& program) {
  std::vector<std::string> out;
  std::istringstream in(print_graph(program, /*type_comments=*/false));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("program ", 0) == 0 || line.rfind("input ", 0) == 0 || trim(line).empty())
      continue;
    out.push_back(line);
  }
  return out;
}

std::string print_rules(const std::vector<Rule>& rules, std::string_view header) {
  std::string out;
  if (!header.empty()) {
    std::istringstream in{std::string(header)};
    std::string line;
    while (std::getline(in, line)) out += "# " + line + "\n";
  }
  for (const Rule& r : rules) {
    out += fmt::format("\nrule {} {}", r.id, rule_status_name(r.status));
    if (r.status != RuleStatus::unverified && r.log2_bound < 0)
      out += fmt::format(" 2^{}", r.log2_bound);
    out += fmt::format(" from {}\n", r.provenance.empty() ? "hand" : r.provenance);
    for (const RuleInput& in : r.inputs)
      out += fmt::format("input {}: [{}]\n", in.name, fmt::join(in.dims, ", "));
    out += "source\n";
    for (const std::string& l : r.source) out += "  " + l + "\n";
    out += "target\n";
    for (const std::string& l : r.target) out += "  " + l + "\n";
    out += "end\n";
  }
  return out;
}

namespace {

class RuleFileParser {
 public:
  RuleFileParser(std::string_view text, std::string filename) : filename_(std::move(filename)) {
    std::istringstream in{std::string(text)};
    std::string line;
    while (std::getline(in, line)) lines_.push_back(line);
  }

  std::vector<Rule> parse() {
    std::vector<Rule> rules;
    std::set<int> ids;
    for (at_ = 0; at_ < lines_.size(); ++at_) {
      const std::string t = trim(lines_[at_]);
      if (t.empty() || t[0] == '#') continue;
      if (t.rfind("rule ", 0) != 0)
        fail(0, fmt::format("expected `rule ID STATUS from WHERE`, found `{}`", t));
      Rule r = rule();
      if (!ids.insert(r.id).second) fail(0, fmt::format("rule {} is defined twice", r.id));
      rules.push_back(std::move(r));
    }
    return rules;
  }

 private:
  [[noreturn]] void fail(size_t col, std::string message) const {
    throw UserError(SourceLoc{filename_, static_cast<int>(at_ + 1), static_cast<int>(col + 1)},
                    std::move(message));
  }
  size_t column_of(const std::string& word) const {
    const size_t c = lines_[at_].find(word);
    return c == std::string::npos ? 0 : c;
  }

  Rule rule() {
    const size_t header_line = at_;
    Rule r;
    header(r);
    std::vector<size_t> input_lines;
    while (next_line() && trim(lines_[at_]).rfind("input ", 0) == 0) {
      r.inputs.push_back(input());
      input_lines.push_back(at_);
    }
    if (r.inputs.empty()) fail(0, "expected `input NAME: [DIM, ...]` lines after the rule header");
    if (at_ >= lines_.size() || trim(lines_[at_]) != "source")
      fail(0, "expected `source` after the rule's inputs");
    const std::vector<size_t> source_lines = body("target");
    const std::vector<size_t> target_lines = body("end");
    r.source = checked_side(r, header_line, input_lines, source_lines, false);
    r.target = checked_side(r, header_line, input_lines, target_lines, true);
    const auto sizes = instantiation(r, rule_reading_sizes());
    const Graph s = instantiate(r, false, sizes), t = instantiate(r, true, sizes);
    bool same = s.outputs.size() == t.outputs.size();
    for (size_t o = 0; same && o < s.outputs.size(); ++o)
      same = s.type(s.outputs[o]).shape == t.type(t.outputs[o]).shape;
    if (!same) {
      at_ = header_line;
      fail(0, fmt::format("rule {}: the source and target outputs differ in number or shape "
                          "(output i of one must be output i of the other)",
                          r.id));
    }
    return r;
  }

  // Moves to the next line that is neither blank nor a comment; false at the end of the file.
  bool next_line() {
    for (++at_; at_ < lines_.size(); ++at_) {
      const std::string t = trim(lines_[at_]);
      if (!t.empty() && t[0] != '#') return true;
    }
    return false;
  }

  // `rule ID STATUS [2^-N] from PROVENANCE`: a bound is required for finite_field, optional
  // for proven (a proven rule may also have been tested), absent for unverified.
  void header(Rule& r) {
    std::istringstream in(trim(lines_[at_]));
    std::vector<std::string> w;
    for (std::string word; in >> word;) w.push_back(word);
    const std::string id = w.size() > 1 ? w[1] : "";
    try {
      size_t used = 0;
      r.id = std::stoi(id, &used);
      if (used != id.size() || r.id < 0) throw std::invalid_argument(id);
    } catch (const std::exception&) {
      fail(column_of(id), fmt::format("expected a rule number, found `{}`", id));
    }
    const std::string status = w.size() > 2 ? w[2] : "";
    if (status == "unverified")
      r.status = RuleStatus::unverified;
    else if (status == "proven")
      r.status = RuleStatus::proven;
    else if (status == "finite_field")
      r.status = RuleStatus::finite_field;
    else
      fail(column_of(status),
           fmt::format("expected a status (unverified, finite_field, proven), found `{}`", status));
    size_t at = 3;
    if (w.size() > at && w[at] != "from" && r.status != RuleStatus::unverified) {
      const std::string& bound = w[at++];
      if (bound.rfind("2^-", 0) != 0 || bound.size() < 4 || bound.size() > 8 ||
          !std::all_of(bound.begin() + 3, bound.end(), ::isdigit))
        fail(column_of(bound),
             fmt::format("expected the finite-field bound as 2^-N, found `{}`", bound));
      r.log2_bound = -std::stoi(bound.substr(3));
    } else if (r.status == RuleStatus::finite_field) {
      fail(lines_[at_].size(), "a finite_field rule needs its bound (2^-N) after the status");
    }
    if (w.size() != at + 2 || w[at] != "from")
      fail(w.size() > at ? column_of(w[at]) : lines_[at_].size(),
           "expected `from WHERE` (e.g. `from hand`) to end the rule header");
    r.provenance = w[at + 1];
  }

  RuleInput input() {
    const std::string& l = lines_[at_];
    const size_t colon = l.find(':');
    const size_t open = l.find('[');
    const size_t close = l.find(']');
    if (colon == std::string::npos || open == std::string::npos || close == std::string::npos ||
        !(colon < open && open < close) || !trim(l.substr(close + 1)).empty())
      fail(0, "expected `input NAME: [DIM, ...]` with variable dims");
    RuleInput in;
    in.name = trim(l.substr(l.find("input ") + 6, colon - l.find("input ") - 6));
    if (!is_identifier(in.name)) fail(0, fmt::format("`{}` is not an input name", in.name));
    std::istringstream dims(l.substr(open + 1, close - open - 1));
    std::string d;
    while (std::getline(dims, d, ',')) {
      d = trim(d);
      if (!is_identifier(d))
        fail(column_of(d), fmt::format("a rule's dims are variable names, found `{}`", d));
      in.dims.push_back(d);
    }
    if (in.dims.empty()) fail(open, "an input needs at least one dim");
    return in;
  }

  // The statement lines up to the line holding `closing` (which is consumed).
  std::vector<size_t> body(const std::string& closing) {
    std::vector<size_t> out;
    while (next_line()) {
      if (trim(lines_[at_]) == closing) return out;
      out.push_back(at_);
    }
    at_ = lines_.size() - 1;
    fail(lines_.back().size(), fmt::format("the rule ends without `{}`", closing));
  }

  std::vector<std::string> checked_side(const Rule& r, size_t header_line,
                                        const std::vector<size_t>& input_lines,
                                        const std::vector<size_t>& stmt_lines, bool target_side) {
    const std::map<std::string, int64_t> sizes = instantiation(r, rule_reading_sizes());
    // Read from this side's lines alone (a file of thousands of rules reads in linear time);
    // a side with a mistake is read again with the lines outside it blank, so the parser's error
    // is at the file's line.
    auto side_text = [&](bool at_file_lines) {
      std::vector<std::string> text;
      if (at_file_lines)
        text.resize(stmt_lines.empty() ? input_lines.back() + 1 : stmt_lines.back() + 1);
      auto put = [&](size_t line, std::string s) {
        if (at_file_lines)
          text[line] = std::move(s);
        else
          text.push_back(std::move(s));
      };
      put(header_line, fmt::format("program rule{}_{}", r.id, target_side ? "target" : "source"));
      for (size_t i = 0; i < input_lines.size(); ++i)
        put(input_lines[i], input_line(r.inputs[i], sizes));
      for (size_t l : stmt_lines) put(l, lines_[l]);
      return text;
    };
    Graph g;
    try {
      g = parse_side(side_text(false), filename_);
    } catch (const UserError&) {
      g = parse_side(side_text(true), filename_);
      WEFT_CHECK(false, "rule {}: a side that fails alone parsed at the file's lines", r.id);
    }
    if (g.outputs.empty()) {
      at_ = stmt_lines.empty() ? header_line : stmt_lines.back();
      fail(0, fmt::format("the {} has no `output` line", target_side ? "target" : "source"));
    }
    return side_lines(g);
  }

  std::string filename_;
  std::vector<std::string> lines_;
  size_t at_ = 0;
};

}  // namespace

std::vector<Rule> parse_rules(std::string_view text, const std::string& filename) {
  return RuleFileParser(text, filename).parse();
}

}  // namespace weft
