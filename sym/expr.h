// Symbolic integer expressions over bounded variables (sizes such as 2 * n + floordiv(s, 4)),
// always held in their normal form, so that equal normal forms mean equal values and comparing
// two expressions is a structural comparison. docs/symbolic-shapes.md describes the form.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sym/range.h"

namespace weft {

class SymExpr;
struct SymAtom;
using SymAtomRef = std::shared_ptr<const SymAtom>;

// The non-polynomial building blocks of the normal form. The order here is the print order.
enum class SymAtomKind : uint8_t { var, floordiv, mod, min, max };

// atom^exponent, exponent >= 1.
struct SymFactor {
  SymAtomRef atom;
  int exponent = 1;
};

// coeff * (product of factors): factors ordered by atom, each atom once, never empty.
struct SymTerm {
  int64_t coeff = 0;
  std::vector<SymFactor> factors;
};

// Limits that keep hostile or runaway inputs from exhausting memory; beyond them a UserError.
inline constexpr size_t kSymMaxTerms = 4096;         // terms of one normal form
inline constexpr int kSymMaxExponent = 64;           // power of one atom in a term
inline constexpr size_t kSymMaxMinMaxOperands = 64;  // distinct operands of one min/max
// Bounds of variables stay within +-2^62, so sums and products of bounds fit in 128 bits.
inline constexpr int64_t kSymMaxBound = int64_t{1} << 62;

// A value: an integer polynomial (a constant plus terms ordered by monomial, no zero coefficient,
// no repeated monomial) whose atoms are variables and normalized floordiv/mod/min/max
// applications. Every operation returns a normal form. Copies share immutable nodes; comparison
// uses a cached hash and is structural, never by address. Coefficients and constants are int64
// values other than INT64_MIN; arithmetic that leaves that range throws UserError.
//
// Floor semantics: floordiv(a, b) = floor(a / b), floormod(a, b) = a - b * floordiv(a, b). A
// divisor must be positive: a constant divisor <= 0 is rejected when the expression is built, a
// symbolic one is checked when the expression is evaluated. The normal form equals the original
// expression at every binding within the variables' bounds at which the original is defined.
class SymExpr {
 public:
  SymExpr() = default;
  SymExpr(int64_t value);  // NOLINT: integers are expressions (2 * n + 1)

  bool is_constant() const { return !terms_; }
  std::optional<int64_t> as_constant() const;
  // The constant term, and the other terms in canonical order.
  int64_t constant() const { return constant_; }
  const std::vector<SymTerm>& terms() const;
  // The atom when the expression is exactly one atom (1 * atom^1 + 0), else null.
  const SymAtom* as_atom() const;
  size_t hash() const;

  // The text form; parse_sym_expr(str()) gives back an equal expression.
  std::string str() const;

  // An expression that is one existing atom (a variable or an application).
  static SymExpr from_atom(SymAtomRef atom);
  // constant + sum of the given terms, normalized (sorted, merged, zeros dropped).
  static SymExpr sum_of_terms(int64_t constant, std::vector<SymTerm> terms);
  // min/max of one or more operands.
  static SymExpr min_of(std::vector<SymExpr> operands);
  static SymExpr max_of(std::vector<SymExpr> operands);

  friend SymExpr operator+(const SymExpr& a, const SymExpr& b);
  friend SymExpr operator-(const SymExpr& a, const SymExpr& b);
  friend SymExpr operator-(const SymExpr& a);
  friend SymExpr operator*(const SymExpr& a, const SymExpr& b);
  SymExpr& operator+=(const SymExpr& b) { return *this = *this + b; }
  SymExpr& operator-=(const SymExpr& b) { return *this = *this - b; }
  SymExpr& operator*=(const SymExpr& b) { return *this = *this * b; }
  // Hidden friends: found only for SymExpr arguments, so they never capture calls on integers.
  friend SymExpr floordiv(const SymExpr& a, const SymExpr& b);
  friend SymExpr floormod(const SymExpr& a, const SymExpr& b);
  friend SymExpr min(const SymExpr& a, const SymExpr& b) { return min_of({a, b}); }
  friend SymExpr max(const SymExpr& a, const SymExpr& b) { return max_of({a, b}); }

  friend bool operator==(const SymExpr& a, const SymExpr& b);
  // A deterministic total order (by structure and names), for ordered containers and printing.
  friend bool operator<(const SymExpr& a, const SymExpr& b) { return compare(a, b) < 0; }
  friend int compare(const SymExpr& a, const SymExpr& b);

 private:
  struct Terms;
  SymExpr(int64_t constant, std::shared_ptr<const Terms> terms)
      : constant_(constant), terms_(std::move(terms)) {}

  int64_t constant_ = 0;
  std::shared_ptr<const Terms> terms_;  // null: a constant
};

// A variable: its name and inclusive bounds lo <= v <= hi (no hi: unbounded above). Two
// variables are the same variable when their names are equal; one expression must not mix two
// variables of the same name with different bounds (SymScope keeps one per name).
class SymVar : public SymExpr {
 public:
  // Throws UserError when the name is not an identifier or is a keyword of the text form, or when
  // the bounds are empty or beyond +-kSymMaxBound.
  explicit SymVar(std::string name, int64_t lo = 0, std::optional<int64_t> hi = std::nullopt);
  // The variable of an existing variable atom.
  explicit SymVar(const SymAtomRef& var_atom);

  const std::string& name() const;
  int64_t lo() const;
  std::optional<int64_t> hi() const;
  // "n", "1 <= n", "0 <= n <= 2048": the declaration with its bounds.
  std::string decl_str() const;
};

struct SymAtom {
  SymAtomKind kind = SymAtomKind::var;
  // var: the name and bounds.
  std::string name;
  int64_t lo = 0;
  std::optional<int64_t> hi;
  // floordiv/mod: {numerator, divisor}; min/max: two or more operands, ordered and distinct.
  std::vector<SymExpr> args;
  // The atom's values over the variables' bounds (where defined), computed once when built.
  SymRange range;
  size_t hash = 0;

  std::string str() const;
};

int compare(const SymAtom& a, const SymAtom& b);
// Keywords of the text form, which no variable may be named: floordiv, mod, min, max.
bool is_sym_keyword(std::string_view name);
// Whether `c` may appear in a variable name (letters, '_', and digits after the first).
bool is_sym_name_char(char c, bool first);
// floor(a / b) on integers, b != 0.
int64_t floor_div_int(int64_t a, int64_t b);

}  // namespace weft
