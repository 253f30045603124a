// Exact rational constants (scale factors, eps): parsed from decimals, usable in every value
// domain.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weft {

// num/den in lowest terms with den > 0. Arithmetic is exact or reports overflow.
class Rational {
 public:
  Rational() = default;
  Rational(int64_t integer) : num_(integer), den_(1) {}  // NOLINT: integers are rationals
  // Normalizes; den must be non-zero. Returns nullopt on int64 overflow.
  static std::optional<Rational> make(__int128 num, __int128 den);
  // Parses "3", "-0.5", "1e-6", "2.5E3", "1/4096", "-3/8". nullopt if malformed or too large.
  static std::optional<Rational> parse(std::string_view text);

  int64_t num() const { return num_; }
  int64_t den() const { return den_; }
  double to_double() const { return static_cast<double>(num_) / static_cast<double>(den_); }
  bool is_integer() const { return den_ == 1; }

  // Canonical text: integer, short decimal when den is a power of 10, else "num/den".
  // Always accepted by parse() and parse(str()) == *this.
  std::string str() const;

  friend bool operator==(const Rational&, const Rational&) = default;
  friend bool operator<(const Rational& a, const Rational& b) {
    return static_cast<__int128>(a.num_) * b.den_ < static_cast<__int128>(b.num_) * a.den_;
  }

 private:
  int64_t num_ = 0;
  int64_t den_ = 1;
};

}  // namespace weft
