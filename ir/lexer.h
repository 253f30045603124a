// The lexer shared by weft's text formats (.weft µGraphs, .wmod modules): names, numbers,
// punctuation, newlines as statement ends, `#` comments, and located errors for any other byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"

namespace weft {

enum class Tok : uint8_t {
  name,
  number,
  lparen,
  rparen,
  lbrack,
  rbrack,
  lbrace,
  rbrace,
  comma,
  equals,
  colon,
  dash,
  punct,  // one of the lexer's extra punctuation characters (its text says which)
  newline,
  end,
};

struct Token {
  Tok kind = Tok::end;
  std::string_view text;
  int line = 1;
  int col = 1;
  size_t offset = 0;  // of the first byte, in the lexed text
};

bool is_name_start(char c);
bool is_name_char(char c);  // letters, digits, '_' and '.'
bool is_digit(char c);

// Streaming lexer. Names: [A-Za-z_][A-Za-z0-9_.]*. Numbers: a digit (or '-' or '.' then a digit)
// followed by name characters, '/', and a sign after an exponent letter, so `1/4096`, `-1`, `1e-6`
// are single tokens (their meaning is the parser's business). `extra_punct` lists further
// characters a format uses as single-character tokens (Tok::punct); .weft uses none.
class Lexer {
 public:
  Lexer(std::string_view text, const std::string& file, std::string_view extra_punct = {})
      : text_(text), file_(file), extra_punct_(extra_punct) {}

  Token next();

 private:
  void skip_blanks();

  std::string_view text_;
  const std::string& file_;
  std::string_view extra_punct_;
  size_t pos_ = 0;
  size_t line_start_ = 0;
  int line_ = 1;
};

// "end of line", "end of file", or the token's text in quotes.
std::string describe(const Token& t);

size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace weft
