// The shared lexer of weft's text formats.
#include "ir/lexer.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace weft {

bool is_name_start(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9') || c == '.';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

Token Lexer::next() {
  skip_blanks();
  Token t;
  t.line = line_;
  t.col = static_cast<int>(pos_ - line_start_) + 1;
  t.offset = pos_;
  if (pos_ >= text_.size()) {
    t.kind = Tok::end;
    return t;
  }
  size_t start = pos_;
  char c = text_[pos_];
  auto single = [&](Tok k) {
    ++pos_;
    t.kind = k;
    t.text = text_.substr(start, 1);
    return t;
  };
  if (c == '\n') {
    ++pos_;
    ++line_;
    line_start_ = pos_;
    t.kind = Tok::newline;
    t.text = text_.substr(start, 1);
    return t;
  }
  if (is_name_start(c)) {
    while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
    t.kind = Tok::name;
    t.text = text_.substr(start, pos_ - start);
    return t;
  }
  if (is_digit(c) || (c == '-' && pos_ + 1 < text_.size() && is_digit(text_[pos_ + 1])) ||
      (c == '.' && pos_ + 1 < text_.size() && is_digit(text_[pos_ + 1]))) {
    ++pos_;
    while (pos_ < text_.size()) {
      char d = text_[pos_];
      if (is_name_char(d) || d == '/') {
        ++pos_;
      } else if ((d == '+' || d == '-') && (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E')) {
        ++pos_;
      } else {
        break;
      }
    }
    t.kind = Tok::number;
    t.text = text_.substr(start, pos_ - start);
    return t;
  }
  switch (c) {
    case '(':
      return single(Tok::lparen);
    case ')':
      return single(Tok::rparen);
    case '[':
      return single(Tok::lbrack);
    case ']':
      return single(Tok::rbrack);
    case '{':
      return single(Tok::lbrace);
    case '}':
      return single(Tok::rbrace);
    case ',':
      return single(Tok::comma);
    case '=':
      return single(Tok::equals);
    case ':':
      return single(Tok::colon);
    case '-':
      return single(Tok::dash);
    default:
      break;
  }
  if (c != '\0' && extra_punct_.find(c) != std::string_view::npos) return single(Tok::punct);
  SourceLoc loc{file_, t.line, t.col};
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x80)
    WEFT_USER_ERROR(loc, "unexpected byte 0x{:02X}: only ASCII is allowed outside comments", u);
  if (u < 0x20 || u == 0x7F) WEFT_USER_ERROR(loc, "unexpected control character 0x{:02X}", u);
  WEFT_USER_ERROR(loc, "unexpected character '{}'", c);
}

void Lexer::skip_blanks() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == ' ' || c == '\t' ||
        (c == '\r' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n')) {
      ++pos_;
    } else if (c == '#') {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    } else {
      break;
    }
  }
}

std::string describe(const Token& t) {
  if (t.kind == Tok::newline) return "end of line";
  if (t.kind == Tok::end) return "end of file";
  return fmt::format("'{}'", t.text);
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] =
          std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1] ? 1 : 0)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace weft
