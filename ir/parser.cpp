// Recursive-descent parser of the µGraph text format; types are inferred as statements are read.
#include "ir/parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <set>

#include "core/rational.h"
#include "ir/lexer.h"

namespace weft {
namespace {

// Values one interface role may name (one per layer of a model, say).
constexpr size_t kMaxInterfaceValues = 4096;

bool is_keyword(std::string_view s) {
  return s == "program" || s == "input" || s == "output" || s == "after";
}

// Multiplies sizes with saturation at kMaxTensorElements + 1 so callers can compare safely.
int64_t saturating_numel(const Shape& s) {
  __int128 n = 1;
  for (int64_t d : s) {
    n *= d < 0 ? 0 : d;
    if (n > kMaxTensorElements) return kMaxTensorElements + 1;
  }
  return static_cast<int64_t>(n);
}

// One graph being read: the kernel graph of the file, a kernel body or a thread body.
struct Scope {
  GraphBuilder builder;
  Scope* parent = nullptr;
  Stage stage = Stage::loop;
  bool seen_after = false;
  bool seen_statement = false;  // any statement other than program/input
  bool seen_any = false;        // any statement at all
  // Kernel bodies: the kernel statement's result names, with their tokens.
  std::vector<Token> result_names;
  std::vector<SourceLoc> save_locs;  // loc of each save, in order

  explicit Scope(Level level, std::string name = {}) : builder(level, std::move(name)) {}
  Level level() const { return builder.graph().level; }
};

const char* scope_noun(Level level) {
  return level == Level::block ? "kernel" : level == Level::thread ? "thread graph" : "program";
}

class Parser {
 public:
  Parser(std::string_view text, const std::string& file) : lex_(text, file), file_(file) {
    cur_ = lex_.next();
    next_ = lex_.next();
  }

  Graph parse() {
    Scope top(Level::kernel);
    parse_statements(top);
    Graph g = std::move(top.builder).finish();
    // Whole-program errors (no outputs) are reported where the program ends.
    g.loc = loc(cur_);
    check_interface_values(g);
    g.interfaces = std::move(interfaces_);
    return g;
  }

 private:
  SourceLoc loc(const Token& t) const { return SourceLoc{file_, t.line, t.col}; }
  void advance() {
    cur_ = next_;
    if (cur_.kind != Tok::end) next_ = lex_.next();
  }
  bool at(Tok k) const { return cur_.kind == k; }
  Token expect(Tok k, std::string_view what) {
    if (!at(k)) WEFT_USER_ERROR(loc(cur_), "expected {}, found {}", what, describe(cur_));
    Token t = cur_;
    advance();
    return t;
  }
  void expect_end_of_statement() {
    if (at(Tok::newline)) {
      advance();
      return;
    }
    if (at(Tok::end)) return;
    WEFT_USER_ERROR(loc(cur_), "expected end of line after the statement, found {}",
                    describe(cur_));
  }

  int64_t parse_int(const Token& t, const char* what) {
    if (t.kind != Tok::number)
      WEFT_USER_ERROR(loc(t), "expected {} (an integer), found {}", what, describe(t));
    int64_t v = 0;
    const char* first = t.text.data();
    const char* last = first + t.text.size();
    auto [ptr, ec] = std::from_chars(first, last, v);
    if (ec == std::errc::result_out_of_range)
      WEFT_USER_ERROR(loc(t), "integer {} is too large", t.text);
    if (ec != std::errc() || ptr != last)
      WEFT_USER_ERROR(loc(t), "expected {} (an integer), found '{}'", what, t.text);
    return v;
  }

  // A positive size (tensor dim, grid dim, loop range) bounded by `limit`.
  int64_t parse_size(const char* what, int64_t limit) {
    Token t = cur_;
    int64_t v = parse_int(t, what);
    advance();
    if (v < 1) WEFT_USER_ERROR(loc(t), "{} must be >= 1, got {}", what, v);
    if (v > limit) WEFT_USER_ERROR(loc(t), "{} {} is too large (at most {})", what, v, limit);
    return v;
  }

  std::vector<int64_t> parse_int_list(const char* what, bool allow_dash) {
    expect(Tok::lbrack, fmt::format("'[' to start the {}", what));
    std::vector<int64_t> out;
    while (!at(Tok::rbrack)) {
      if (out.size() >= 64) WEFT_USER_ERROR(loc(cur_), "the {} has too many entries", what);
      if (allow_dash && at(Tok::dash)) {
        out.push_back(-1);
        advance();
      } else if (at(Tok::number)) {
        int64_t v = parse_int(cur_, "a list entry");
        if (allow_dash && v < 0)
          WEFT_USER_ERROR(loc(cur_), "expected a data dim (>= 0) or '-' in the {}, found {}", what,
                          v);
        out.push_back(v);
        advance();
      } else {
        WEFT_USER_ERROR(loc(cur_), "expected {} in the {}, found {}",
                        allow_dash ? "an integer or '-'" : "an integer", what, describe(cur_));
      }
      if (at(Tok::comma)) {
        advance();
        if (at(Tok::rbrack))
          WEFT_USER_ERROR(loc(cur_), "expected another entry after ',' in the {}, found ']'", what);
      } else if (!at(Tok::rbrack)) {
        WEFT_USER_ERROR(loc(cur_), "expected ',' or ']' in the {}, found {}", what, describe(cur_));
      }
    }
    Token close = cur_;
    advance();
    if (out.empty()) WEFT_USER_ERROR(loc(close), "the {} needs at least one entry", what);
    return out;
  }

  TensorType parse_type() {
    Token dt = cur_;
    if (!at(Tok::name))
      WEFT_USER_ERROR(loc(dt), "expected an element type (f32, f16, bf16), found {}", describe(dt));
    auto dtype = dtype_from_name(dt.text);
    if (!dtype)
      WEFT_USER_ERROR(loc(dt), "unknown element type '{}' (expected f32, f16 or bf16)", dt.text);
    if (!is_kernel_dtype(*dtype))
      WEFT_USER_ERROR(loc(dt),
                      "a kernel program's tensors are f32, f16 or bf16, not {} (integer, bool and "
                      "f64 tensors belong to model functions, .wmod)",
                      dt.text);
    advance();
    expect(Tok::lbrack, "'[' and the dims of the tensor type");
    Shape shape;
    for (;;) {
      if (shape.size() >= 64) WEFT_USER_ERROR(loc(cur_), "tensor rank is too large (at most 64)");
      shape.push_back(parse_size("a tensor dim", kMaxTensorElements));
      if (at(Tok::comma)) {
        advance();
        continue;
      }
      if (at(Tok::rbrack)) break;
      WEFT_USER_ERROR(loc(cur_), "expected ',' or ']' in the tensor type, found {}",
                      describe(cur_));
    }
    Token close = cur_;
    advance();
    if (saturating_numel(shape) > kMaxTensorElements)
      WEFT_USER_ERROR(loc(close), "tensor type {}{} has more than {} elements", dt.text,
                      shape_str(shape), kMaxTensorElements);
    return TensorType{*dtype, shape};
  }

  // Looks a name up in `scope`; explains scoping when it names an outer value.
  ValueId lookup(Scope& scope, const Token& t) {
    ValueId id = scope.builder.graph().find(t.text);
    if (id >= 0) return id;
    for (Scope* s = scope.parent; s; s = s->parent)
      if (s->builder.graph().find(t.text) >= 0)
        WEFT_USER_ERROR(loc(t), "'{}' is not an operand of this {}; pass it in {}(...)", t.text,
                        scope_noun(scope.level()),
                        scope.level() == Level::block ? "kernel" : "thread");
    if (is_keyword(t.text)) WEFT_USER_ERROR(loc(t), "'{}' is a keyword, not a value name", t.text);
    WEFT_USER_ERROR(loc(t), "'{}' is not defined", t.text);
  }

  void check_new_name(Scope& scope, const Token& t) {
    if (is_keyword(t.text))
      WEFT_USER_ERROR(loc(t), "'{}' is a keyword and cannot be a name", t.text);
    const Graph& g = scope.builder.graph();
    if (ValueId prior = g.find(t.text); prior >= 0) {
      const SourceLoc& where = g.value(prior).loc;
      WEFT_USER_ERROR(loc(t), "'{}' is already defined{}; every name is assigned once", t.text,
                      where.known() ? fmt::format(" (at line {})", where.line) : "");
    }
  }

  // An operator of the table; a model-level one is refused at once (the builder checks the
  // others' levels), before its operands, whose attributes no µGraph row describes.
  OpKind lookup_op(const Token& t, Level level) {
    if (auto k = op_by_name(t.text)) {
      if (is_model_only(*k)) check_op_level(op_info(*k), level, loc(t));
      return *k;
    }
    std::string best;
    size_t best_d = 3;
    for (const OpInfo& info : all_ops()) {
      if (!(info.levels & kAtUGraph)) continue;  // model-level operators are no suggestion
      size_t d = edit_distance(t.text, info.name);
      if (d < best_d) {
        best_d = d;
        best = info.name;
      }
    }
    WEFT_USER_ERROR(loc(t), "unknown operator '{}'{}", t.text,
                    best.empty() ? std::string(" (`weft ops` lists the operators)")
                                 : fmt::format(" (did you mean '{}'?)", best));
  }

  void parse_statements(Scope& scope) {
    for (;;) {
      while (at(Tok::newline)) advance();
      if (at(Tok::end)) {
        if (scope.parent)
          WEFT_USER_ERROR(loc(cur_), "expected '}}' to close the {} body, found end of file",
                          scope.level() == Level::block ? "kernel" : "thread");
        return;
      }
      if (at(Tok::rbrace)) {
        if (!scope.parent) WEFT_USER_ERROR(loc(cur_), "unexpected '}}': no body is open here");
        return;  // the caller consumes it
      }
      if (!at(Tok::name))
        WEFT_USER_ERROR(loc(cur_), "expected a statement, found {}", describe(cur_));
      parse_statement(scope);
      scope.seen_any = true;
    }
  }

  void parse_statement(Scope& scope) {
    Token first = cur_;
    Level level = scope.level();
    if (first.text == "program" && next_.kind != Tok::equals && next_.kind != Tok::comma) {
      if (level != Level::kernel || scope.parent)
        WEFT_USER_ERROR(loc(first), "'program' can only start the file");
      if (scope.seen_any)
        WEFT_USER_ERROR(loc(first), "'program' must be the first statement of the file");
      advance();
      Token name = expect(Tok::name, "the program name after 'program'");
      if (is_keyword(name.text))
        WEFT_USER_ERROR(loc(name), "'{}' is a keyword and cannot be a name", name.text);
      scope.builder = GraphBuilder(Level::kernel, std::string(name.text));
      expect_end_of_statement();
      return;
    }
    if (first.text == "input" && next_.kind != Tok::equals && next_.kind != Tok::comma) {
      if (level != Level::kernel)
        WEFT_USER_ERROR(loc(first),
                        "'input' declares program inputs; inside a {} body the operands are the "
                        "inputs",
                        level == Level::block ? "kernel" : "thread");
      if (scope.seen_statement)
        WEFT_USER_ERROR(loc(first), "inputs must be declared before the other statements");
      advance();
      Token name = expect(Tok::name, "the input name after 'input'");
      check_new_name(scope, name);
      expect(Tok::colon, fmt::format("':' and the type of input '{}'", name.text));
      TensorType type = parse_type();
      scope.builder.add_input(std::string(name.text), type, loc(name));
      expect_end_of_statement();
      return;
    }
    scope.seen_statement = true;
    if (first.text == "interface" && next_.kind == Tok::name) {
      if (level != Level::kernel || scope.parent)
        WEFT_USER_ERROR(loc(first),
                        "'interface' declares the program's interface, at the top level of the "
                        "file");
      parse_interface();
      return;
    }
    if (first.text == "output" && next_.kind != Tok::equals && next_.kind != Tok::comma) {
      if (level == Level::block)
        WEFT_USER_ERROR(loc(first),
                        "a kernel body has no 'output' statements: its results are its saves "
                        "(NAME = save(...))");
      advance();
      for (;;) {
        Token name = expect(Tok::name, "a value name after 'output'");
        ValueId id = lookup(scope, name);
        scope.builder.add_output(id, loc(name));
        if (!at(Tok::comma)) break;
        advance();
      }
      expect_end_of_statement();
      return;
    }
    if (first.text == "after" && next_.kind == Tok::colon) {
      if (level != Level::block)
        WEFT_USER_ERROR(loc(first), "'after:' can only appear inside a kernel body");
      if (scope.seen_after) WEFT_USER_ERROR(loc(first), "a kernel body has only one 'after:'");
      scope.seen_after = true;
      scope.stage = Stage::post;
      advance();
      advance();
      expect_end_of_statement();
      return;
    }
    parse_assignment(scope);
  }

  // `interface NAME(role=V, role=[V, W], ...)`. Its values are checked once the file is read:
  // outputs may be listed after it.
  void parse_interface() {
    Token keyword = cur_;
    advance();
    Token name = expect(Tok::name, "the interface name after 'interface'");
    if (find_interface(interfaces_, name.text))
      WEFT_USER_ERROR(loc(name), "interface '{}' is declared twice", name.text);
    ProgramInterface declared{std::string(name.text), {}, loc(keyword)};
    expect(Tok::lparen, fmt::format("'(' and the roles of interface '{}'", name.text));
    while (!at(Tok::rparen)) {
      Token role = expect(Tok::name, "a role (role=VALUE or role=[VALUE, ...])");
      if (declared.find(role.text))
        WEFT_USER_ERROR(loc(role), "role '{}' appears twice in interface '{}'", role.text,
                        name.text);
      expect(Tok::equals, fmt::format("'=' after role '{}'", role.text));
      const bool list = at(Tok::lbrack);
      if (list) advance();
      std::vector<std::string> values;
      for (;;) {
        if (values.size() >= kMaxInterfaceValues)
          WEFT_USER_ERROR(loc(cur_), "role '{}' names more than {} values", role.text,
                          kMaxInterfaceValues);
        Token value =
            expect(Tok::name, fmt::format("a program input or output for role '{}'", role.text));
        values.emplace_back(value.text);
        interface_values_.push_back(value);
        if (!list || !at(Tok::comma)) break;
        advance();
      }
      if (list)
        expect(Tok::rbrack, fmt::format("',' or ']' in the values of role '{}'", role.text));
      declared.roles.emplace_back(std::string(role.text), std::move(values));
      if (at(Tok::comma)) {
        advance();
        continue;
      }
      if (!at(Tok::rparen))
        WEFT_USER_ERROR(loc(cur_), "expected ',' or ')' after role '{}', found {}", role.text,
                        describe(cur_));
    }
    advance();  // ')'
    if (declared.roles.empty())
      WEFT_USER_ERROR(loc(name), "interface '{}' declares no roles", name.text);
    interfaces_.push_back(std::move(declared));
    expect_end_of_statement();
  }

  void check_interface_values(const Graph& g) {
    for (const Token& t : interface_values_) {
      const ValueId id = g.find(t.text);
      if (id < 0) WEFT_USER_ERROR(loc(t), "'{}' is not defined", t.text);
      auto listed = [&](const std::vector<ValueId>& ids) {
        return std::find(ids.begin(), ids.end(), id) != ids.end();
      };
      if (!listed(g.inputs) && !listed(g.outputs))
        WEFT_USER_ERROR(loc(t),
                        "'{}' is neither a program input nor an output; an interface names only "
                        "those",
                        t.text);
    }
  }

  void parse_assignment(Scope& scope) {
    std::vector<Token> lhs;
    for (;;) {
      Token name = expect(Tok::name, "a name");
      check_new_name(scope, name);
      for (const Token& prev : lhs)
        if (prev.text == name.text)
          WEFT_USER_ERROR(loc(name), "'{}' appears twice on the left of '='", name.text);
      lhs.push_back(name);
      if (at(Tok::comma)) {
        advance();
        continue;
      }
      if (at(Tok::equals)) break;
      if (at(Tok::newline) || at(Tok::end))
        WEFT_USER_ERROR(loc(cur_), "expected '=' after '{}', found {}", name.text, describe(cur_));
      WEFT_USER_ERROR(loc(cur_), "expected '=' or ',' after '{}', found {}", name.text,
                      describe(cur_));
    }
    advance();  // '='
    Token op_tok = cur_;
    if (!at(Tok::name))
      WEFT_USER_ERROR(loc(op_tok), "expected an operator call after '=', found {}",
                      describe(op_tok));
    OpKind kind = lookup_op(op_tok, scope.level());
    advance();
    if (kind == OpKind::kernel || kind == OpKind::thread) {
      parse_nested(scope, lhs, op_tok, kind);
      return;
    }
    if (kind == OpKind::save && scope.level() == Level::block) check_save_name(scope, lhs);
    int counter = 0;
    std::vector<std::string> names;
    for (const Token& t : lhs) names.emplace_back(t.text);
    parse_call(scope, op_tok, kind, names, names[0], 0, counter);
    if (kind == OpKind::save && scope.level() == Level::block)
      scope.save_locs.push_back(loc(op_tok));
    expect_end_of_statement();
  }

  void check_save_name(Scope& scope, const std::vector<Token>& lhs) {
    if (lhs.size() != 1)
      WEFT_USER_ERROR(loc(lhs[1]), "a save produces one result, but {} names are given",
                      lhs.size());
    for (const Token& r : scope.result_names)
      if (r.text == lhs[0].text) return;
    std::string names;
    for (const Token& r : scope.result_names)
      names += (names.empty() ? "" : ", ") + std::string(r.text);
    WEFT_USER_ERROR(loc(lhs[0]),
                    "'{}' is not a result of this kernel; a save must be named after one of the "
                    "kernel statement's results ({})",
                    lhs[0].text, names);
  }

  // Parses `(operands..., key=value...)` after the operator name and adds the op. `names` are
  // the results' names (one name for a nested call). Returns the results.
  std::vector<ValueId> parse_call(Scope& scope, const Token& op_tok, OpKind kind,
                                  const std::vector<std::string>& names, const std::string& base,
                                  int depth, int& counter) {
    if (depth > kMaxCallNesting)
      WEFT_USER_ERROR(loc(op_tok), "calls are nested too deeply (more than {} levels)",
                      kMaxCallNesting);
    const OpInfo& info = op_info(kind);
    expect(Tok::lparen, fmt::format("'(' after '{}'", info.name));
    std::vector<ValueId> operands;
    Attrs attrs;
    std::vector<Token> attr_toks;
    bool in_attrs = false;
    while (!at(Tok::rparen)) {
      Token t = cur_;
      if (t.kind == Tok::name && next_.kind == Tok::equals) {
        in_attrs = true;
        advance();
        advance();
        parse_attr(info, t, attrs, attr_toks);
        if (at(Tok::comma)) {
          advance();
          continue;
        }
        if (at(Tok::rparen)) break;
        WEFT_USER_ERROR(loc(cur_), "expected ',' or ')' after attribute '{}' of '{}', found {}",
                        t.text, info.name, describe(cur_));
      }
      if (t.kind != Tok::name)
        WEFT_USER_ERROR(loc(t), "expected an operand of '{}', found {}", info.name, describe(t));
      if (in_attrs)
        WEFT_USER_ERROR(loc(t),
                        "operand '{}' of '{}' comes after its attributes; operands go first",
                        t.text, info.name);
      if (next_.kind == Tok::lparen) {
        OpKind inner = lookup_op(t, scope.level());
        if (inner == OpKind::kernel || inner == OpKind::thread)
          WEFT_USER_ERROR(loc(t), "'{}' cannot be nested inside a call; assign it to a name first",
                          t.text);
        advance();
        std::vector<ValueId> r = parse_call(scope, t, inner, {}, base, depth + 1, counter);
        if (r.size() != 1)
          WEFT_USER_ERROR(loc(t),
                          "'{}' here has {} results, so it cannot be nested; assign it with "
                          "A, B, ... = {}(...)",
                          t.text, r.size(), t.text);
        operands.push_back(r[0]);
      } else {
        operands.push_back(lookup(scope, t));
        advance();
      }
      if (at(Tok::comma)) {
        advance();
        continue;
      }
      if (at(Tok::rparen)) break;
      WEFT_USER_ERROR(loc(cur_), "expected ')' after the operands of '{}', found {}", info.name,
                      describe(cur_));
    }
    advance();  // ')'
    std::vector<std::string> out_names = names;
    // Nested results are named when added: innermost first, left to right.
    if (names.empty()) out_names.push_back(fmt::format("{}.{}", base, ++counter));
    precheck_sizes(scope, op_tok, kind, operands, attrs, out_names.size());
    Stage stage = scope.stage;
    std::vector<ValueId> results =
        scope.builder.add_op(kind, operands, std::move(attrs), out_names, loc(op_tok), stage);
    for (ValueId r : results)
      if (saturating_numel(scope.builder.graph().type(r).shape) > kMaxTensorElements)
        WEFT_USER_ERROR(loc(op_tok), "the result of '{}' has more than {} elements", info.name,
                        kMaxTensorElements);
    return results;
  }

  // Rejects attribute values whose type inference would overflow or allocate absurdly.
  void precheck_sizes(Scope& scope, const Token& op_tok, OpKind kind,
                      const std::vector<ValueId>& operands, const Attrs& attrs, size_t n_names) {
    const Graph& g = scope.builder.graph();
    auto too_big = [&](__int128 n) {
      if (n > kMaxTensorElements)
        WEFT_USER_ERROR(loc(op_tok), "the result of '{}' would have more than {} elements",
                        op_info(kind).name, kMaxTensorElements);
    };
    if (operands.empty()) return;
    const Shape& s = g.type(operands[0]).shape;
    __int128 n = saturating_numel(s);
    auto dim_ok = [&](const char* name) {
      if (!attrs.has(name)) return false;
      int64_t d = attrs.get_int(name);
      int64_t r = static_cast<int64_t>(s.size());
      return d >= -r && d < r;
    };
    switch (kind) {
      case OpKind::reshape:
        if (attrs.has("shape")) too_big(saturating_numel(attrs.get_list("shape")));
        break;
      case OpKind::repeat:
        if (attrs.has("times") && dim_ok("dim")) {
          int64_t t = attrs.get_int("times");
          if (t > kMaxTensorElements) too_big(t);
          too_big(n * std::max<int64_t>(t, 0));
        }
        break;
      case OpKind::accum_concat:
        too_big(n * g.loop);
        break;
      case OpKind::save:
        too_big(n * g.num_blocks());
        break;
      case OpKind::split:
        if (attrs.has("parts") &&
            static_cast<size_t>(std::max<int64_t>(attrs.get_int("parts"), 0)) != n_names)
          WEFT_USER_ERROR(loc(op_tok),
                          "split into {} parts needs {} names on the left of '=', got {}",
                          attrs.get_int("parts"), attrs.get_int("parts"), n_names);
        break;
      case OpKind::concat:  // the others' results are checked after inference
      case OpKind::iter:
      case OpKind::accum_sum:
      case OpKind::accum_max:
        WEFT_CASES_UNARY
        WEFT_CASES_BINARY
        WEFT_CASES_MATMUL
        WEFT_CASES_REDUCTION
        WEFT_CASES_COMPOSITE
        WEFT_CASES_HIERARCHY
        // Model-level operators: refused by lookup_op.
        WEFT_CASES_MODEL
        break;
    }
  }

  void parse_attr(const OpInfo& info, const Token& key, Attrs& attrs,
                  std::vector<Token>& attr_toks) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : info.attrs)
      if (key.text == s.name) spec = &s;
    if (!spec) {
      std::string known;
      for (const AttrSpec& s : info.attrs)
        known += (known.empty() ? "" : ", ") + std::string(s.name);
      WEFT_USER_ERROR(
          loc(key), "'{}' has no attribute '{}'{}", info.name, key.text,
          known.empty() ? std::string(" (it takes none)") : fmt::format(" (it takes: {})", known));
    }
    for (const Token& t : attr_toks)
      if (t.text == key.text) WEFT_USER_ERROR(loc(key), "attribute '{}' is given twice", key.text);
    attr_toks.push_back(key);
    std::string name(key.text);
    Token v = cur_;
    switch (spec->kind) {
      case AttrKind::integer:
        attrs.set(name, parse_int(v, fmt::format("the value of '{}'", name).c_str()));
        advance();
        break;
      case AttrKind::opt_dim:
        if (at(Tok::dash)) {
          attrs.set(name, int64_t{-1});
        } else {
          int64_t d = parse_int(v, fmt::format("a dim or '-' for '{}'", name).c_str());
          if (d < 0)
            WEFT_USER_ERROR(loc(v), "expected a dim (>= 0) or '-' for '{}', found {}", name, d);
          attrs.set(name, d);
        }
        advance();
        break;
      case AttrKind::rational: {
        if (v.kind != Tok::number)
          WEFT_USER_ERROR(loc(v), "expected a number for '{}', found {}", name, describe(v));
        auto r = Rational::parse(v.text);
        if (!r)
          WEFT_USER_ERROR(loc(v),
                          "'{}' is not a usable number for '{}' (malformed or too large; "
                          "examples: 3, -0.5, 1e-6, 1/4096)",
                          v.text, name);
        attrs.set(name, *r);
        advance();
        break;
      }
      case AttrKind::int_list:
        attrs.set(name, parse_int_list(fmt::format("list of '{}'", name).c_str(), false));
        break;
      case AttrKind::dim_map:
        attrs.set(name, parse_int_list(fmt::format("dim map '{}'", name).c_str(), true));
        break;
    }
  }

  // `kernel(...) {` or `thread(...) {`, the body, and the closing `}`.
  void parse_nested(Scope& scope, const std::vector<Token>& lhs, const Token& op_tok, OpKind kind) {
    const OpInfo& info = op_info(kind);
    Level level = scope.level();
    if (kind == OpKind::kernel && level != Level::kernel)
      WEFT_USER_ERROR(loc(op_tok),
                      "'kernel' cannot appear in a {} graph (allowed in: kernel "
                      "graphs)",
                      level_name(level));
    if (kind == OpKind::thread && level != Level::block)
      WEFT_USER_ERROR(loc(op_tok),
                      "'thread' cannot appear in a {} graph (allowed in: block "
                      "graphs, i.e. kernel bodies)",
                      level_name(level));
    expect(Tok::lparen, fmt::format("'(' after '{}'", info.name));
    std::vector<Token> operand_toks;
    std::vector<ValueId> operands;
    std::array<int64_t, 3> grid = {1, 1, 1};
    int64_t block = 128, loop = 1;
    std::set<std::string, std::less<>> seen_attrs;
    bool in_attrs = false;
    while (!at(Tok::rparen)) {
      Token t = cur_;
      if (t.kind == Tok::name && next_.kind == Tok::equals) {
        in_attrs = true;
        if (kind == OpKind::thread)
          WEFT_USER_ERROR(loc(t), "'thread' takes no attributes, found '{}'", t.text);
        if (t.text != "grid" && t.text != "block" && t.text != "loop")
          WEFT_USER_ERROR(loc(t), "'kernel' has no attribute '{}' (it takes: grid, block, loop)",
                          t.text);
        if (!seen_attrs.insert(std::string(t.text)).second)
          WEFT_USER_ERROR(loc(t), "attribute '{}' is given twice", t.text);
        advance();
        advance();
        if (t.text == "grid") {
          Token open = cur_;
          std::vector<int64_t> g = parse_int_list("grid", false);
          if (g.size() > 3)
            WEFT_USER_ERROR(loc(open), "a grid has at most 3 dims (x, y, z), got {}", g.size());
          __int128 blocks = 1;
          for (size_t i = 0; i < g.size(); ++i) {
            if (g[i] < 1) WEFT_USER_ERROR(loc(open), "grid dims must be >= 1, got {}", g[i]);
            grid[i] = g[i];
            blocks *= g[i];
            if (blocks > kMaxGridBlocks)
              WEFT_USER_ERROR(loc(open), "the grid has more than {} blocks", kMaxGridBlocks);
          }
        } else if (t.text == "block") {
          block = parse_size("block (threads per block)", kMaxLoopOrBlock);
        } else {
          loop = parse_size("loop (for-loop range)", kMaxLoopOrBlock);
        }
      } else {
        if (t.kind != Tok::name)
          WEFT_USER_ERROR(loc(t), "expected an operand of '{}', found {}", info.name, describe(t));
        if (in_attrs)
          WEFT_USER_ERROR(loc(t),
                          "operand '{}' of '{}' comes after its attributes; operands go "
                          "first",
                          t.text, info.name);
        if (next_.kind == Tok::lparen)
          WEFT_USER_ERROR(loc(t), "the operands of '{}' must be names, not calls", info.name);
        ValueId id = lookup(scope, t);
        for (size_t i = 0; i < operands.size(); ++i)
          if (operands[i] == id)
            WEFT_USER_ERROR(loc(t),
                            "'{}' is passed twice to {}; pass it once and read it twice "
                            "inside",
                            t.text, info.name);
        operands.push_back(id);
        operand_toks.push_back(t);
        advance();
      }
      if (at(Tok::comma)) {
        advance();
        continue;
      }
      if (at(Tok::rparen)) break;
      WEFT_USER_ERROR(loc(cur_), "expected ')' after the operands of '{}', found {}", info.name,
                      describe(cur_));
    }
    advance();  // ')'
    if (operands.empty())
      WEFT_USER_ERROR(loc(op_tok), "'{}' needs at least one operand", info.name);
    expect(Tok::lbrace, fmt::format("'{{' to open the body of '{}'", info.name));
    if (!at(Tok::newline))
      WEFT_USER_ERROR(loc(cur_), "expected end of line after '{{', found {}", describe(cur_));

    Scope body(kind == OpKind::kernel ? Level::block : Level::thread);
    body.parent = &scope;
    if (kind == OpKind::kernel) {
      body.builder.set_block_params(grid, block, loop, loc(op_tok));
      body.result_names = lhs;
    }
    for (size_t i = 0; i < operands.size(); ++i)
      body.builder.add_input(std::string(operand_toks[i].text),
                             scope.builder.graph().type(operands[i]), loc(operand_toks[i]));
    parse_statements(body);
    Token close = cur_;  // '}'
    advance();
    if (kind == OpKind::kernel) check_saves(body, lhs, close);
    std::vector<std::string> names;
    for (const Token& t : lhs) names.emplace_back(t.text);
    scope.builder.add_nested(kind, operands, std::move(body.builder).finish(), names, loc(op_tok),
                             scope.stage);
    expect_end_of_statement();
  }

  void check_saves(Scope& body, const std::vector<Token>& lhs, const Token& close) {
    const Graph& g = body.builder.graph();
    for (size_t i = 0; i < lhs.size(); ++i) {
      if (i >= g.outputs.size())
        WEFT_USER_ERROR(loc(lhs[i]),
                        "kernel result '{}' is never saved; add '{} = save(...)' to "
                        "the kernel body",
                        lhs[i].text, lhs[i].text);
      if (g.value(g.outputs[i]).name != lhs[i].text)
        WEFT_USER_ERROR(body.save_locs.at(i),
                        "save number {} is named '{}', but the kernel statement's result number "
                        "{} is '{}'; saves must come in the order of the kernel's results",
                        i + 1, g.value(g.outputs[i]).name, i + 1, lhs[i].text);
    }
    if (g.outputs.size() > lhs.size())
      WEFT_USER_ERROR(loc(close), "this kernel body has {} saves for {} kernel results",
                      g.outputs.size(), lhs.size());
  }

  std::vector<ProgramInterface> interfaces_;
  std::vector<Token> interface_values_;  // every value an interface names, checked at the end
  Lexer lex_;
  const std::string& file_;
  Token cur_, next_;
};

}  // namespace

Graph parse_graph(std::string_view text, const std::string& filename) {
  Parser p(text, filename);
  return p.parse();
}

}  // namespace weft
