// Recursive-descent parser of the .wmod text format; deduction runs on the finished module.
#include "model/parser.h"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>

#include "core/source_file.h"
#include "ir/lexer.h"
#include "ir/parser.h"
#include "model/deduce.h"
#include "model/model_ops.h"
#include "sym/parse.h"

namespace weft {
namespace {

// Extra single-character tokens of .wmod: comparison in `sym` lines, arithmetic in dims, '/' in
// paths, '"' around paths, '>' of '->'.
constexpr std::string_view kPunct = "<>+*/\"";

bool is_keyword(std::string_view s) {
  static const char* const kw[] = {
      "module",     "sym",         "ugraph",   "fn",    "dataflow", "return", "tuple", "item",
      "match_cast", "call_ugraph", "call_lib", "shape", "int",      "if",     "else",  "yield"};
  for (const char* k : kw)
    if (s == k) return true;
  return false;
}

constexpr size_t kMaxListEntries = 4096;  // params, args, fields: far beyond any real model
constexpr int kMaxIfDepth = 64;           // nested ifs (recursion in the parser and deduction)

class Parser {
 public:
  Parser(std::string_view text, const std::string& file, const std::string& base_dir)
      : text_(text), lex_(text, file, kPunct), file_(file), base_dir_(base_dir) {
    cur_ = lex_.next();
    next_ = lex_.next();
  }

  Module parse() {
    skip_newlines();
    if (at_name("module")) {
      advance();
      m_.name = std::string(expect_name("the module's name").text);
      end_statement();
    }
    for (skip_newlines(); !at(Tok::end); skip_newlines()) {
      if (at_name("sym"))
        parse_sym();
      else if (at_name("ugraph"))
        parse_ugraph();
      else if (at_name("fn"))
        parse_function();
      else
        fail(cur_, fmt::format("expected 'sym', 'ugraph' or 'fn', found {}", describe(cur_)));
    }
    // An empty or cut-short file must not pass as a model that does nothing.
    if (m_.functions.empty())
      fail(cur_,
           "the module defines no function (a model needs at least `fn main(...)`; is the "
           "file empty or truncated?)");
    return std::move(m_);
  }

 private:
  SourceLoc loc(const Token& t) const { return SourceLoc{file_, t.line, t.col}; }
  [[noreturn]] void fail(const Token& t, const std::string& message) const {
    throw UserError(loc(t), message);
  }
  void advance() {
    cur_ = next_;
    if (cur_.kind != Tok::end) next_ = lex_.next();
  }
  bool at(Tok k) const { return cur_.kind == k; }
  bool at_name(std::string_view s) const { return at(Tok::name) && cur_.text == s; }
  bool at_punct(char c) const { return at(Tok::punct) && cur_.text[0] == c; }
  void skip_newlines() {
    while (at(Tok::newline)) advance();
  }
  Token expect(Tok k, std::string_view what) {
    if (!at(k)) fail(cur_, fmt::format("expected {}, found {}", what, describe(cur_)));
    Token t = cur_;
    advance();
    return t;
  }
  void expect_punct(char c, std::string_view what) {
    if (!at_punct(c)) fail(cur_, fmt::format("expected {}, found {}", what, describe(cur_)));
    advance();
  }
  Token expect_name(std::string_view what) {
    Token t = expect(Tok::name, what);
    if (is_keyword(t.text)) fail(t, fmt::format("'{}' is a keyword, not {}", t.text, what));
    return t;
  }
  void end_statement() {
    if (at(Tok::end)) return;
    if (!at(Tok::newline))
      fail(cur_, fmt::format("expected end of line after the statement, found {}", describe(cur_)));
    advance();
  }

  int64_t parse_int(const Token& t, std::string_view what) {
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (t.kind != Tok::number || ec != std::errc() || ptr != t.text.data() + t.text.size())
      fail(t, fmt::format("expected {} (an integer), found {}", what, describe(t)));
    return v;
  }

  // sym [LO <=] NAME [<= HI], ...   (LO defaults to 1: variables are sizes)
  void parse_sym() {
    advance();
    for (;;) {
      Token start = cur_;
      int64_t lo = 1;
      std::optional<int64_t> hi;
      if (at(Tok::number)) {
        lo = parse_int(cur_, "a lower bound");
        advance();
        expect_le();
      }
      Token name = expect_name("a symbolic variable's name");
      if (at_punct('<')) {
        advance();
        expect(Tok::equals, "'<='");
        hi = parse_int(cur_, "an upper bound");
        advance();
      }
      m_.syms.declare(std::string(name.text), lo, hi, loc(name));
      (void)start;
      if (!at(Tok::comma)) break;
      advance();
    }
    end_statement();
  }
  void expect_le() {
    expect_punct('<', "'<='");
    expect(Tok::equals, "'<='");
  }

  // The raw text of a symbolic expression: tokens up to ',' ']' ')' or end of line at depth 0.
  SymExpr parse_sym(std::string_view what) {
    return parse_sym_until(what,
                           [&] { return at(Tok::comma) || at(Tok::rbrack) || at(Tok::rparen); });
  }

  // ... up to a token where `stop()` holds at depth 0 (or the end of the line).
  template <class Stop>
  SymExpr parse_sym_until(std::string_view what, Stop&& stop) {
    Token first = cur_;
    int depth = 0;
    Token last = cur_;
    while (!at(Tok::newline) && !at(Tok::end)) {
      if (depth == 0 && stop()) break;
      if (at(Tok::lparen)) ++depth;
      if (at(Tok::rparen)) --depth;
      last = cur_;
      advance();
    }
    if (last.offset < first.offset || (first.kind != Tok::name && first.kind != Tok::number &&
                                       first.kind != Tok::lparen && first.kind != Tok::dash))
      fail(first,
           fmt::format("expected {} (a symbolic expression), found {}", what, describe(first)));
    std::string_view span =
        text_.substr(first.offset, last.offset + last.text.size() - first.offset);
    return parse_sym_expr(span, m_.syms, loc(first));
  }

  MType parse_type() {
    Token t = cur_;
    if (!at(Tok::name)) fail(t, fmt::format("expected a type, found {}", describe(t)));
    if (t.text == "tuple") {
      advance();
      expect(Tok::lparen, "'(' after 'tuple'");
      std::vector<MType> fields;
      for (;;) {
        if (fields.size() >= kMaxListEntries) fail(cur_, "the tuple has too many fields");
        fields.push_back(parse_type());
        if (!at(Tok::comma)) break;
        advance();
      }
      expect(Tok::rparen, "',' or ')' in the tuple type");
      return MType::tuple(std::move(fields));
    }
    if (t.text == "int") {
      advance();
      if (!at(Tok::lparen)) return MType::integer();
      advance();
      SymExpr v = parse_sym("the integer's value");
      expect(Tok::rparen, "')' after the integer's value");
      return MType::integer(v);
    }
    bool is_shape = t.text == "shape";
    auto dtype = dtype_from_name(t.text);
    if (!is_shape && !dtype)
      fail(t, fmt::format("unknown type '{}' (expected a dtype ({}), shape, tuple or int)", t.text,
                          dtype_names()));
    advance();
    expect(Tok::lbrack, "'[' and the dims");
    MType out;
    if (at_name("ndim") && next_.kind == Tok::equals) {
      advance();
      advance();
      Token r = cur_;
      int64_t rank = parse_int(r, "a rank");
      advance();
      if (rank < 1 || rank > kMaxModelRank) fail(r, "the rank must be between 1 and 64");
      out = MType::tensor_of_rank(dtype.value_or(DType::f32), static_cast<int>(rank));
      if (is_shape) out.kind = MTypeKind::shape;
    } else {
      std::vector<SymExpr> dims;
      for (;;) {
        if (dims.size() >= static_cast<size_t>(kMaxModelRank))
          fail(cur_, "the rank is too large (at most 64)");
        dims.push_back(parse_sym("a dim"));
        if (!at(Tok::comma)) break;
        advance();
      }
      out = is_shape ? MType::shape(std::move(dims)) : MType::tensor(*dtype, std::move(dims));
    }
    expect(Tok::rbrack, "',' or ']' in the dims");
    return out;
  }

  // ugraph NAME = "PATH"   |   ugraph NAME { <µGraph text> }
  void parse_ugraph() {
    Token kw = cur_;
    advance();
    UGraphDef def;
    Token name = expect_name("the µGraph's name");
    def.name = std::string(name.text);
    def.loc = loc(kw);
    if (at(Tok::equals)) {
      advance();
      expect_punct('"', "'\"' and the path of a .weft file");
      Token first = cur_;
      while (!at_punct('"')) {
        if (at(Tok::newline) || at(Tok::end)) fail(cur_, "expected '\"' to close the path");
        advance();
      }
      def.path = std::string(text_.substr(first.offset, cur_.offset - first.offset));
      if (def.path.empty()) fail(first, "the path is empty");
      advance();
      std::filesystem::path p = def.path;
      if (p.is_relative() && !base_dir_.empty()) p = std::filesystem::path(base_dir_) / p;
      def.graph =
          std::make_shared<const Graph>(parse_graph(read_source_file(p.string()), p.string()));
      end_statement();
    } else {
      expect(Tok::lbrace, "'=' and a path, or '{' and the µGraph's text");
      Token nl = expect(Tok::newline, "end of line after '{'");
      size_t start = nl.offset + 1;
      int start_line = nl.line + 1;
      int depth = 0;
      while (!(depth == 0 && at(Tok::rbrace))) {
        if (at(Tok::end)) fail(cur_, "expected '}' to close the µGraph");
        if (at(Tok::lbrace)) ++depth;
        if (at(Tok::rbrace)) --depth;
        advance();
      }
      // Pad with newlines so the µGraph parser's positions are the module file's.
      std::string body(static_cast<size_t>(start_line - 1), '\n');
      body += text_.substr(start, cur_.offset - start);
      def.graph = std::make_shared<const Graph>(parse_graph(body, file_));
      advance();
      end_statement();
    }
    m_.ugraphs.push_back(std::move(def));
  }

  void parse_function() {
    Token kw = cur_;
    advance();
    Function f;
    f.loc = loc(kw);
    Token name = expect_name("the function's name");
    f.name = std::string(name.text);
    expect(Tok::lparen, "'(' and the parameters");
    skip_newlines();  // a long parameter list may continue on the next lines
    while (!at(Tok::rparen)) {
      if (f.params.size() >= kMaxListEntries) fail(cur_, "too many parameters");
      Param p;
      Token pn = expect_name("a parameter name");
      p.name = std::string(pn.text);
      p.loc = loc(pn);
      expect(Tok::colon, "':' and the parameter's type");
      p.type = parse_type();
      f.params.push_back(std::move(p));
      if (!at(Tok::comma)) break;
      advance();
      skip_newlines();
    }
    expect(Tok::rparen, "',' or ')' after a parameter");
    expect(Tok::dash, "'->' and the return type");
    expect_punct('>', "'->' and the return type");
    f.ret = parse_type();
    expect(Tok::lbrace, "'{' to start the function's body");
    expect(Tok::newline, "end of line after '{'");
    for (skip_newlines(); !at_name("return"); skip_newlines()) {
      if (at(Tok::end) || at(Tok::rbrace))
        fail(cur_, fmt::format("expected a binding, a dataflow block or 'return', found {}",
                               describe(cur_)));
      if (at_name("dataflow")) {
        Block b;
        b.dataflow = true;
        b.loc = loc(cur_);
        advance();
        expect(Tok::lbrace, "'{' after 'dataflow'");
        expect(Tok::newline, "end of line after '{'");
        for (skip_newlines(); !at(Tok::rbrace); skip_newlines()) {
          if (at(Tok::end)) fail(cur_, "expected '}' to close the dataflow block");
          b.bindings.push_back(parse_binding());
        }
        advance();
        end_statement();
        f.blocks.push_back(std::move(b));
      } else {
        if (f.blocks.empty() || f.blocks.back().dataflow) {
          f.blocks.emplace_back();
          f.blocks.back().loc = loc(cur_);
        }
        f.blocks.back().bindings.push_back(parse_binding());
      }
    }
    Token result =
        parse_result_and_close("the returned value", "'}' to close the function after 'return'");
    f.result = std::string(result.text);
    f.result_loc = loc(result);
    end_statement();
    m_.functions.push_back(std::move(f));
  }

  // At 'return' or 'yield': the name, the end of its line, and the '}' closing the body.
  Token parse_result_and_close(std::string_view what, std::string_view close) {
    advance();
    Token result = expect_name(what);
    end_statement();
    skip_newlines();
    expect(Tok::rbrace, close);
    return result;
  }

  Binding parse_binding() {
    Binding b;
    Token var = expect_name("a value name");
    b.var = std::string(var.text);
    b.loc = loc(var);
    expect(Tok::equals, fmt::format("'=' after '{}'", var.text));
    if (at_name("if")) {
      b.call = parse_if();
      return b;
    }
    b.call = parse_call();
    end_statement();
    return b;
  }

  // if LHS REL RHS {  bindings  yield NAME  } else {  bindings  yield NAME  }
  Call parse_if() {
    Token kw = cur_;
    if (++if_depth_ > kMaxIfDepth) fail(kw, fmt::format("ifs nest deeper than {}", kMaxIfDepth));
    advance();
    Call c;
    c.kind = CallKind::if_;
    c.loc = loc(kw);
    auto at_rel = [&] { return at(Tok::equals) || at_punct('<') || at_punct('>'); };
    SymExpr lhs = parse_sym_until("the condition's left side", at_rel);
    Token rel = cur_;
    bool greater = at_punct('>');
    if (!at_rel())
      fail(cur_, fmt::format("expected '==', '<=', '<', '>=' or '>', found {}", describe(cur_)));
    bool equals_first = at(Tok::equals);
    advance();
    bool or_equal = at(Tok::equals);
    if (or_equal) advance();
    if (equals_first && !or_equal) fail(rel, "expected '==' (a single '=' is not a comparison)");
    SymExpr rhs = parse_sym_until("the condition's right side", [&] { return at(Tok::lbrace); });
    SymRel r = equals_first ? SymRel::eq : or_equal ? SymRel::le : SymRel::lt;
    c.cond = greater ? SymCondition{r, rhs, lhs} : SymCondition{r, lhs, rhs};
    for (int arm = 0; arm < 2; ++arm) {
      if (arm == 1) {
        if (!at_name("else"))
          fail(cur_, fmt::format("expected 'else' after '}}', found {}", describe(cur_)));
        advance();
      }
      expect(Tok::lbrace, arm == 0 ? "'{' after the if's condition" : "'{' after 'else'");
      expect(Tok::newline, "end of line after '{'");
      IfBranch branch;
      for (skip_newlines(); !at_name("yield"); skip_newlines()) {
        if (at(Tok::end) || at(Tok::rbrace))
          fail(cur_, fmt::format("expected a binding or 'yield', found {}", describe(cur_)));
        branch.bindings.push_back(parse_binding());
      }
      Token result =
          parse_result_and_close("the value the arm yields", "'}' to close the arm after 'yield'");
      branch.result = std::string(result.text);
      branch.result_loc = loc(result);
      c.branches.push_back(std::move(branch));
    }
    end_statement();
    --if_depth_;
    return c;
  }

  Call parse_call() {
    Call c;
    Token head = expect(Tok::name, "an operator, function or call");
    c.loc = loc(head);
    std::string_view h = head.text;
    expect(Tok::lparen, fmt::format("'(' after '{}'", h));
    if (h == "match_cast") {
      c.kind = CallKind::match_cast;
      c.args.push_back(std::string(expect_name("the value to cast").text));
      expect(Tok::comma, "',' and the type");
      c.cast_type = parse_type();
      expect(Tok::rparen, "')' after the type");
      return c;
    }
    if (h == "call_ugraph" || h == "call_lib") {
      c.kind = h == "call_ugraph" ? CallKind::ugraph : CallKind::lib;
      Token callee =
          expect(Tok::name, h == "call_ugraph" ? "a µGraph's name" : "a library function");
      c.callee = std::string(callee.text);
      if (c.kind == CallKind::ugraph && !m_.find_ugraph(c.callee))
        fail(callee, fmt::format("unknown µGraph '{}' (declare it with 'ugraph' first)", c.callee));
      if (!at(Tok::rparen)) expect(Tok::comma, "',' and the operands");
    } else if (h == "tuple") {
      c.kind = CallKind::tuple;
    } else if (h == "item") {
      c.kind = CallKind::item;
    } else if (op_by_name(h)) {
      c.kind = CallKind::op;
      c.callee = std::string(h);
    } else {
      c.kind = CallKind::func;  // resolved (or refused) by deduction, once every function is read
      c.callee = std::string(h);
      if (is_keyword(h)) fail(head, fmt::format("'{}' is a keyword, not a callee", h));
      func_calls_.push_back(head);
    }
    parse_operands(c);
    return c;
  }

  void parse_operands(Call& c) {
    while (!at(Tok::rparen)) {
      if (c.args.size() + c.attrs.size() >= kMaxListEntries) fail(cur_, "too many operands");
      Token t = expect(Tok::name, "an operand (a value name) or an attribute");
      if (at(Tok::equals)) {
        advance();
        std::string key(t.text);
        if (c.attrs.count(key)) fail(t, fmt::format("attribute '{}' is given twice", key));
        c.attrs.emplace(key, parse_attr_value());
      } else {
        if (!c.attrs.empty()) fail(t, "operands come before attributes");
        if (is_keyword(t.text)) fail(t, fmt::format("'{}' is a keyword, not a value", t.text));
        c.args.push_back(std::string(t.text));
      }
      if (!at(Tok::comma)) break;
      advance();
    }
    expect(Tok::rparen, "',' or ')' in the call");
  }

  MAttrValue parse_attr_value() {
    if (at(Tok::lbrack)) {
      advance();
      std::vector<SymExpr> list;
      for (; !at(Tok::rbrack);) {
        if (list.size() >= 64) fail(cur_, "the list has too many entries (at most 64)");
        list.push_back(parse_sym("a list entry"));
        if (!at(Tok::comma)) break;
        advance();
      }
      expect(Tok::rbrack, "',' or ']' in the list");
      return list;
    }
    // A rational: a number with a point, exponent or fraction bar, perhaps after a minus.
    bool minus = at(Tok::dash) && next_.kind == Tok::number &&
                 next_.text.find_first_of(".eE/") != std::string_view::npos;
    if (minus) advance();
    if (at(Tok::number) && (next_.kind == Tok::comma || next_.kind == Tok::rparen) &&
        cur_.text.find_first_of(".eE/") != std::string_view::npos) {
      auto r = Rational::parse((minus ? "-" : "") + std::string(cur_.text));
      if (!r) fail(cur_, fmt::format("'{}' is not a number weft can hold exactly", cur_.text));
      advance();
      return *r;
    }
    if (minus) fail(cur_, "a number after '-' in an attribute value");
    return parse_sym("an attribute value");
  }

  std::string_view text_;
  Lexer lex_;
  const std::string& file_;
  std::string base_dir_;
  Token cur_, next_;
  Module m_;
  std::vector<Token> func_calls_;
  int if_depth_ = 0;
};

}  // namespace

Module parse_module(std::string_view text, const std::string& filename, SymProver& prover,
                    const std::string& base_dir) {
  Module m = Parser(text, filename, base_dir).parse();
  deduce_module(m, prover);
  return m;
}

Module load_module(const std::string& path, SymProver& prover) {
  std::string text = read_source_file(path);
  return parse_module(text, path, prover, std::filesystem::path(path).parent_path().string());
}

}  // namespace weft
