// Exact parsing and printing of rational constants.
#include "core/rational.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <limits>

namespace weft {

static __int128 gcd128(__int128 a, __int128 b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b != 0) {
    __int128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

std::optional<Rational> Rational::make(__int128 num, __int128 den) {
  if (den == 0) return std::nullopt;
  if (den < 0) {
    num = -num;
    den = -den;
  }
  __int128 g = gcd128(num, den);
  if (g > 1) {
    num /= g;
    den /= g;
  }
  constexpr __int128 kMax = std::numeric_limits<int64_t>::max();
  if (num > kMax || num < -kMax || den > kMax) return std::nullopt;
  Rational r;
  r.num_ = static_cast<int64_t>(num);
  r.den_ = static_cast<int64_t>(den);
  return r;
}

// Parses an unsigned decimal "digits[.digits][e[+-]digits]" into mantissa/10^scale.
static std::optional<Rational> parse_decimal(std::string_view s) {
  size_t i = 0;
  __int128 mantissa = 0;
  int64_t scale = 0;  // value = mantissa * 10^-scale
  bool any_digit = false;
  constexpr __int128 kLimit = static_cast<__int128>(1) << 100;
  auto take_digits = [&](bool fractional) {
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      mantissa = mantissa * 10 + (s[i] - '0');
      if (mantissa > kLimit) return false;
      if (fractional) ++scale;
      any_digit = true;
      ++i;
    }
    return true;
  };
  if (!take_digits(false)) return std::nullopt;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!take_digits(true)) return std::nullopt;
  }
  if (!any_digit) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool negative = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
    if (i >= s.size()) return std::nullopt;
    int64_t exponent = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      exponent = exponent * 10 + (s[i++] - '0');
      if (exponent > 40) return std::nullopt;
    }
    scale += negative ? exponent : -exponent;
  }
  if (i != s.size()) return std::nullopt;
  __int128 num = mantissa, den = 1;
  while (scale > 0) {
    den *= 10;
    --scale;
    if (den > kLimit) return std::nullopt;
  }
  while (scale < 0) {
    num *= 10;
    ++scale;
    if (num > kLimit) return std::nullopt;
  }
  return Rational::make(num, den);
}

std::optional<Rational> Rational::parse(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  std::optional<Rational> value;
  if (size_t slash = text.find('/'); slash != std::string_view::npos) {
    auto a = parse_decimal(text.substr(0, slash));
    auto b = parse_decimal(text.substr(slash + 1));
    if (!a || !b || b->num_ == 0) return std::nullopt;
    value =
        make(static_cast<__int128>(a->num_) * b->den_, static_cast<__int128>(a->den_) * b->num_);
  } else {
    value = parse_decimal(text);
  }
  if (value && negative) value->num_ = -value->num_;
  return value;
}

std::string Rational::str() const {
  if (den_ == 1) return fmt::format("{}", num_);
  int64_t d = den_;
  int zeros = 0;
  while (d % 10 == 0) {
    d /= 10;
    ++zeros;
  }
  if (d != 1) return fmt::format("{}/{}", num_, den_);
  // den_ == 10^zeros: print as mantissa e-zeros when that is shorter, else as a plain decimal.
  int64_t mag = num_ < 0 ? -num_ : num_;
  std::string digits = fmt::format("{}", mag);
  std::string sign = num_ < 0 ? "-" : "";
  if (zeros >= 5) return fmt::format("{}{}e-{}", sign, digits, zeros);
  if (static_cast<int>(digits.size()) <= zeros)
    digits = std::string(zeros - digits.size() + 1, '0') + digits;
  return sign + digits.substr(0, digits.size() - zeros) + "." +
         digits.substr(digits.size() - zeros);
}

}  // namespace weft
