// Recursive-descent parser of symbolic expressions with located errors.
#include "sym/parse.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace weft {
namespace {

constexpr int kMaxNesting = 256;

enum class Tok { integer, ident, plus, minus, star, lparen, rparen, comma, end };

constexpr std::pair<unsigned char, Tok> kPunctuation[] = {{'+', Tok::plus},   {'-', Tok::minus},
                                                          {'*', Tok::star},   {'(', Tok::lparen},
                                                          {')', Tok::rparen}, {',', Tok::comma}};

struct Token {
  Tok kind = Tok::end;
  size_t pos = 0;  // offset in the text
  std::string_view text;
};

std::string describe(const Token& t) {
  if (t.kind == Tok::end) return "the end of the expression";
  return fmt::format("'{}'", t.text);
}

class Parser {
 public:
  Parser(std::string_view text, const SymScope& scope, const SourceLoc& origin)
      : text_(text), scope_(scope), origin_(origin) {
    lex();
  }

  SymExpr parse() {
    SymExpr e = sum(0);
    if (peek().kind != Tok::end)
      fail(peek(), "expected an operator (+, -, *) or the end of the expression, found {}",
           describe(peek()));
    return e;
  }

 private:
  SourceLoc loc_at(size_t pos) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < pos && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    SourceLoc loc{origin_.file, line, col};
    if (origin_.known()) {
      loc.line = origin_.line + line - 1;
      loc.col = line == 1 ? origin_.col + col - 1 : col;
    }
    return loc;
  }

  template <class... Args>
  [[noreturn]] void fail(const Token& at, fmt::format_string<Args...> format, Args&&... args) {
    throw UserError(loc_at(at.pos), fmt::format(format, std::forward<Args>(args)...));
  }

  // Runs a normalizing constructor; its errors (overflow, bad divisor) are located at `at`.
  template <class Fn>
  SymExpr build(const Token& at, Fn&& fn) {
    try {
      return fn();
    } catch (const UserError& e) {
      throw UserError(loc_at(at.pos), e.message());
    }
  }

  void lex() {
    size_t i = 0;
    while (true) {
      while (i < text_.size() &&
             (text_[i] == ' ' || text_[i] == '\t' || text_[i] == '\n' || text_[i] == '\r'))
        ++i;
      Token t;
      t.pos = i;
      if (i == text_.size()) {
        tokens_.push_back(t);
        return;
      }
      unsigned char c = static_cast<unsigned char>(text_[i]);
      size_t start = i;
      if (c >= '0' && c <= '9') {
        while (i < text_.size() && text_[i] >= '0' && text_[i] <= '9') ++i;
        t.kind = Tok::integer;
      } else if (is_sym_name_char(text_[i], true)) {
        while (i < text_.size() && is_sym_name_char(text_[i], false)) ++i;
        t.kind = Tok::ident;
      } else {
        ++i;
        auto punct = std::find_if(std::begin(kPunctuation), std::end(kPunctuation),
                                  [&](const auto& p) { return p.first == c; });
        if (punct != std::end(kPunctuation)) {
          t.kind = punct->second;
        } else if (c == '/') {
          throw UserError(loc_at(start), "integer division is written floordiv(a, b)");
        } else if (c == '%') {
          throw UserError(loc_at(start), "the remainder is written mod(a, b)");
        } else if (c >= 0x21 && c < 0x7F) {
          throw UserError(loc_at(start), fmt::format("unexpected character '{}'", char(c)));
        } else {
          throw UserError(loc_at(start), fmt::format("unexpected byte 0x{:02X}", unsigned{c}));
        }
      }
      t.text = text_.substr(start, i - start);
      tokens_.push_back(t);
    }
  }

  const Token& peek() const { return tokens_[next_]; }
  const Token& take() { return tokens_[next_ == tokens_.size() - 1 ? next_ : next_++]; }

  void expect(Tok kind, const char* what) {
    if (peek().kind != kind) fail(peek(), "expected {}, found {}", what, describe(peek()));
    take();
  }

  void enter(const Token& at, int depth) {
    if (depth > kMaxNesting) fail(at, "expression nested deeper than {} levels", kMaxNesting);
  }

  SymExpr sum(int depth) {
    SymExpr e = product(depth);
    while (peek().kind == Tok::plus || peek().kind == Tok::minus) {
      Token op = take();
      SymExpr rhs = product(depth);
      e = build(op, [&] { return op.kind == Tok::plus ? e + rhs : e - rhs; });
    }
    return e;
  }

  SymExpr product(int depth) {
    SymExpr e = unary(depth);
    while (peek().kind == Tok::star) {
      Token op = take();
      SymExpr rhs = unary(depth);
      e = build(op, [&] { return e * rhs; });
    }
    return e;
  }

  SymExpr unary(int depth) {
    if (peek().kind == Tok::minus) {
      Token op = take();
      enter(op, depth + 1);
      SymExpr inner = unary(depth + 1);
      return build(op, [&] { return -inner; });
    }
    return primary(depth);
  }

  SymExpr primary(int depth) {
    Token t = take();
    switch (t.kind) {
      case Tok::integer: {
        int64_t v = 0;
        auto [end, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
        if (ec != std::errc() || end != t.text.data() + t.text.size())
          fail(t, "integer {} is out of range (at most {})", t.text, INT64_MAX);
        return v;
      }
      case Tok::ident: {
        if (is_sym_keyword(t.text)) return call(t, depth);
        const SymVar* v = scope_.find(t.text);
        if (!v) fail(t, "undefined symbolic variable '{}'", t.text);
        return *v;
      }
      case Tok::lparen: {
        enter(t, depth + 1);
        SymExpr e = sum(depth + 1);
        expect(Tok::rparen, "')'");
        return e;
      }
      case Tok::plus:
      case Tok::minus:
      case Tok::star:
      case Tok::rparen:
      case Tok::comma:
      case Tok::end:
        break;
    }
    fail(t, "expected an integer, a variable, '(' or floordiv/mod/min/max, found {}", describe(t));
  }

  SymExpr call(const Token& name, int depth) {
    enter(name, depth + 1);
    expect(Tok::lparen, fmt::format("'(' after {}", name.text).c_str());
    std::vector<SymExpr> args{sum(depth + 1)};
    while (peek().kind == Tok::comma) {
      take();
      args.push_back(sum(depth + 1));
    }
    expect(Tok::rparen, "',' or ')'");
    bool binary = name.text == "floordiv" || name.text == "mod";
    if (binary && args.size() != 2)
      fail(name, "{} takes 2 arguments, found {}", name.text, args.size());
    if (!binary && args.size() < 2)
      fail(name, "{} takes 2 or more arguments, found {}", name.text, args.size());
    return build(name, [&] {
      if (name.text == "floordiv") return floordiv(args[0], args[1]);
      if (name.text == "mod") return floormod(args[0], args[1]);
      if (name.text == "min") return SymExpr::min_of(args);
      return SymExpr::max_of(args);
    });
  }

  std::string_view text_;
  const SymScope& scope_;
  const SourceLoc& origin_;
  std::vector<Token> tokens_;
  size_t next_ = 0;
};

}  // namespace

SymExpr parse_sym_expr(std::string_view text, const SymScope& scope, const SourceLoc& origin) {
  return Parser(text, scope, origin).parse();
}

}  // namespace weft
