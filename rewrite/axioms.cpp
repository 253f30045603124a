// The axioms, per operator. Shapes are not modelled by the prover except through the dims an
// axiom's inputs share (its conditions: `split` undoes `concat` only of equal halves), so every
// axiom holds at every size its inputs allow.
#include "rewrite/axioms.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "core/error.h"

namespace weft {

namespace {

// exp
constexpr const char* kExpAxioms = R"(
rule 0 unverified from axiom:exp
input x: [n, m]
input y: [n, m]
source
  t0 = add(x, y)
  t1 = exp(t0)
  output t1
target
  t0 = exp(x)
  t1 = exp(y)
  t2 = mul(t0, t1)
  output t2
end
rule 1 unverified from axiom:exp
input x: [n, m]
input y: [k, m]
source
  t0 = concat(x, y, dim=0)
  t1 = exp(t0)
  output t1
target
  t0 = exp(x)
  t1 = exp(y)
  t2 = concat(t0, t1, dim=0)
  output t2
end
rule 2 unverified from axiom:exp
input x: [n, m]
input y: [n, k]
source
  t0 = concat(x, y, dim=1)
  t1 = exp(t0)
  output t1
target
  t0 = exp(x)
  t1 = exp(y)
  t2 = concat(t0, t1, dim=1)
  output t2
end
)";

// relu
constexpr const char* kReluAxioms = R"(
rule 0 unverified from axiom:relu
input x: [n, m]
input y: [k, m]
source
  t0 = concat(x, y, dim=0)
  t1 = relu(t0)
  output t1
target
  t0 = relu(x)
  t1 = relu(y)
  t2 = concat(t0, t1, dim=0)
  output t2
end
rule 1 unverified from axiom:relu
input x: [n, m]
input y: [n, k]
source
  t0 = concat(x, y, dim=1)
  t1 = relu(t0)
  output t1
target
  t0 = relu(x)
  t1 = relu(y)
  t2 = concat(t0, t1, dim=1)
  output t2
end
)";

// scale
constexpr const char* kScaleAxioms = R"(
rule 0 unverified from axiom:scale
input x: [n, m]
source
  t0 = scale(x, factor=2)
  output t0
target
  t0 = add(x, x)
  output t0
end
rule 1 unverified from axiom:scale
input x: [n, m]
source
  t0 = scale(x, factor=4)
  output t0
target
  t0 = scale(x, factor=2)
  t1 = scale(t0, factor=2)
  output t1
end
)";

// add
constexpr const char* kAddAxioms = R"(
rule 0 unverified from axiom:add
input x: [n, m]
input y: [n, m]
source
  t0 = add(x, y)
  output t0
target
  t0 = add(y, x)
  output t0
end
rule 1 unverified from axiom:add
input x: [n, m]
input y: [n, m]
input z: [n, m]
source
  t0 = add(x, y)
  t1 = add(t0, z)
  output t1
target
  t0 = add(y, z)
  t1 = add(x, t0)
  output t1
end
rule 2 unverified from axiom:add
input x: [n, m]
input y: [k, m]
input z: [n, m]
input w: [k, m]
source
  t0 = concat(x, y, dim=0)
  t1 = concat(z, w, dim=0)
  t2 = add(t0, t1)
  output t2
target
  t0 = add(x, z)
  t1 = add(y, w)
  t2 = concat(t0, t1, dim=0)
  output t2
end
rule 3 unverified from axiom:add
input x: [n, m]
input y: [n, k]
input z: [n, m]
input w: [n, k]
source
  t0 = concat(x, y, dim=1)
  t1 = concat(z, w, dim=1)
  t2 = add(t0, t1)
  output t2
target
  t0 = add(x, z)
  t1 = add(y, w)
  t2 = concat(t0, t1, dim=1)
  output t2
end
)";

// mul
constexpr const char* kMulAxioms = R"(
rule 0 unverified from axiom:mul
input x: [n, m]
input y: [n, m]
source
  t0 = mul(x, y)
  output t0
target
  t0 = mul(y, x)
  output t0
end
rule 1 unverified from axiom:mul
input x: [n, m]
input y: [n, m]
input z: [n, m]
source
  t0 = mul(x, y)
  t1 = mul(t0, z)
  output t1
target
  t0 = mul(y, z)
  t1 = mul(x, t0)
  output t1
end
rule 2 unverified from axiom:mul
input x: [n, m]
input y: [n, m]
input z: [n, m]
source
  t0 = add(y, z)
  t1 = mul(x, t0)
  output t1
target
  t0 = mul(x, y)
  t1 = mul(x, z)
  t2 = add(t0, t1)
  output t2
end
rule 3 unverified from axiom:mul
input x: [n, m]
input y: [k, m]
input z: [n, m]
input w: [k, m]
source
  t0 = concat(x, y, dim=0)
  t1 = concat(z, w, dim=0)
  t2 = mul(t0, t1)
  output t2
target
  t0 = mul(x, z)
  t1 = mul(y, w)
  t2 = concat(t0, t1, dim=0)
  output t2
end
rule 4 unverified from axiom:mul
input x: [n, m]
input y: [n, k]
input z: [n, m]
input w: [n, k]
source
  t0 = concat(x, y, dim=1)
  t1 = concat(z, w, dim=1)
  t2 = mul(t0, t1)
  output t2
target
  t0 = mul(x, z)
  t1 = mul(y, w)
  t2 = concat(t0, t1, dim=1)
  output t2
end
)";

// matmul
constexpr const char* kMatmulAxioms = R"(
rule 0 unverified from axiom:matmul
input x: [n, m]
input y: [m, k]
input z: [k, p]
source
  t0 = matmul(x, y)
  t1 = matmul(t0, z)
  output t1
target
  t0 = matmul(y, z)
  t1 = matmul(x, t0)
  output t1
end
rule 1 unverified from axiom:matmul
input x: [n, m]
input y: [m, k]
input z: [m, k]
source
  t0 = add(y, z)
  t1 = matmul(x, t0)
  output t1
target
  t0 = matmul(x, y)
  t1 = matmul(x, z)
  t2 = add(t0, t1)
  output t2
end
rule 2 unverified from axiom:matmul
input x: [n, m]
input y: [n, m]
input z: [m, k]
source
  t0 = add(x, y)
  t1 = matmul(t0, z)
  output t1
target
  t0 = matmul(x, z)
  t1 = matmul(y, z)
  t2 = add(t0, t1)
  output t2
end
rule 3 unverified from axiom:matmul
input x: [n, m]
input y: [k, m]
input z: [m, p]
source
  t0 = concat(x, y, dim=0)
  t1 = matmul(t0, z)
  output t1
target
  t0 = matmul(x, z)
  t1 = matmul(y, z)
  t2 = concat(t0, t1, dim=0)
  output t2
end
rule 4 unverified from axiom:matmul
input x: [n, m]
input y: [m, k]
input z: [m, p]
source
  t0 = concat(y, z, dim=1)
  t1 = matmul(x, t0)
  output t1
target
  t0 = matmul(x, y)
  t1 = matmul(x, z)
  t2 = concat(t0, t1, dim=1)
  output t2
end
rule 5 unverified from axiom:matmul
input x: [n, m]
input y: [n, k]
input z: [m, p]
input w: [k, p]
source
  t0 = concat(x, y, dim=1)
  t1 = concat(z, w, dim=0)
  t2 = matmul(t0, t1)
  output t2
target
  t0 = matmul(x, z)
  t1 = matmul(y, w)
  t2 = add(t0, t1)
  output t2
end
)";

// sum
constexpr const char* kSumAxioms = R"(
rule 0 unverified from axiom:sum
input x: [n, m]
input y: [n, m]
source
  t0 = add(x, y)
  t1 = sum(t0, dim=0)
  output t1
target
  t0 = sum(x, dim=0)
  t1 = sum(y, dim=0)
  t2 = add(t0, t1)
  output t2
end
rule 1 unverified from axiom:sum
input x: [n, m]
input y: [n, m]
source
  t0 = add(x, y)
  t1 = sum(t0, dim=1)
  output t1
target
  t0 = sum(x, dim=1)
  t1 = sum(y, dim=1)
  t2 = add(t0, t1)
  output t2
end
rule 2 unverified from axiom:sum
input x: [n, m]
input y: [k, m]
source
  t0 = concat(x, y, dim=0)
  t1 = sum(t0, dim=0)
  output t1
target
  t0 = sum(x, dim=0)
  t1 = sum(y, dim=0)
  t2 = add(t0, t1)
  output t2
end
rule 3 unverified from axiom:sum
input x: [n, m]
input y: [n, k]
source
  t0 = concat(x, y, dim=1)
  t1 = sum(t0, dim=1)
  output t1
target
  t0 = sum(x, dim=1)
  t1 = sum(y, dim=1)
  t2 = add(t0, t1)
  output t2
end
rule 4 unverified from axiom:sum
input x: [n, m]
input y: [n, k]
source
  t0 = concat(x, y, dim=1)
  t1 = sum(t0, dim=0)
  output t1
target
  t0 = sum(x, dim=0)
  t1 = sum(y, dim=0)
  t2 = concat(t0, t1, dim=1)
  output t2
end
rule 5 unverified from axiom:sum
input x: [n, m]
input y: [k, m]
source
  t0 = concat(x, y, dim=0)
  t1 = sum(t0, dim=1)
  output t1
target
  t0 = sum(x, dim=1)
  t1 = sum(y, dim=1)
  t2 = concat(t0, t1, dim=0)
  output t2
end
rule 6 unverified from axiom:sum
input x: [n, m]
source
  t0 = sum(x, dim=0)
  t1 = sum(t0, dim=1)
  output t1
target
  t0 = sum(x, dim=1)
  t1 = sum(t0, dim=0)
  output t1
end
rule 9 unverified from axiom:sum
input x: [n, m]
source
  t0 = sum(x, dim=0)
  t1 = sum(t0, dim=0)
  output t1
target
  t0 = sum(x, dim=0)
  output t0
end
rule 10 unverified from axiom:sum
input x: [n, m]
source
  t0 = sum(x, dim=1)
  t1 = sum(t0, dim=1)
  output t1
target
  t0 = sum(x, dim=1)
  output t0
end
rule 7 unverified from axiom:sum
input x: [n, m]
input y: [m, k]
source
  t0 = matmul(x, y)
  t1 = sum(t0, dim=1)
  output t1
target
  t0 = sum(y, dim=1)
  t1 = matmul(x, t0)
  output t1
end
rule 8 unverified from axiom:sum
input x: [n, m]
input y: [m, k]
source
  t0 = matmul(x, y)
  t1 = sum(t0, dim=0)
  output t1
target
  t0 = sum(x, dim=0)
  t1 = matmul(t0, y)
  output t1
end
)";

// concat
constexpr const char* kConcatAxioms = R"(
rule 0 unverified from axiom:concat
input x: [n, m]
input y: [k, m]
input z: [p, m]
source
  t0 = concat(x, y, dim=0)
  t1 = concat(t0, z, dim=0)
  output t1
target
  t0 = concat(y, z, dim=0)
  t1 = concat(x, t0, dim=0)
  output t1
end
rule 1 unverified from axiom:concat
input x: [n, m]
input y: [n, k]
input z: [n, p]
source
  t0 = concat(x, y, dim=1)
  t1 = concat(t0, z, dim=1)
  output t1
target
  t0 = concat(y, z, dim=1)
  t1 = concat(x, t0, dim=1)
  output t1
end
rule 2 unverified from axiom:concat
input x: [n, m]
input y: [n, k]
input z: [p, m]
input w: [p, k]
source
  t0 = concat(x, y, dim=1)
  t1 = concat(z, w, dim=1)
  t2 = concat(t0, t1, dim=0)
  output t2
target
  t0 = concat(x, z, dim=0)
  t1 = concat(y, w, dim=0)
  t2 = concat(t0, t1, dim=1)
  output t2
end
)";

// split
constexpr const char* kSplitAxioms = R"(
rule 0 unverified from axiom:split
input x: [n, m]
input y: [n, m]
source
  t0 = concat(x, y, dim=0)
  t1, t2 = split(t0, dim=0, parts=2)
  output t1
  output t2
target
  output x
  output y
end
rule 1 unverified from axiom:split
input x: [n, m]
input y: [n, m]
source
  t0 = concat(x, y, dim=1)
  t1, t2 = split(t0, dim=1, parts=2)
  output t1
  output t2
target
  output x
  output y
end
)";

}  // namespace

const std::vector<OperatorAxioms>& operator_axioms() {
  static const std::vector<OperatorAxioms> table = {
      {OpKind::exp, kExpAxioms}, {OpKind::relu, kReluAxioms},     {OpKind::scale, kScaleAxioms},
      {OpKind::add, kAddAxioms}, {OpKind::mul, kMulAxioms},       {OpKind::matmul, kMatmulAxioms},
      {OpKind::sum, kSumAxioms}, {OpKind::concat, kConcatAxioms}, {OpKind::split, kSplitAxioms},
  };
  return table;
}

const std::vector<Rule>& axioms() {
  static const std::vector<Rule> all = [] {
    std::vector<Rule> out;
    // A rewrite row without an entry would be enumerated with nothing to prove its rules from.
    for (const OpInfo& info : all_ops())
      WEFT_CHECK(!info.rewrite ||
                     std::any_of(operator_axioms().begin(), operator_axioms().end(),
                                 [&](const OperatorAxioms& a) { return a.kind == info.kind; }),
                 "rewrite row {} has no entry in operator_axioms()", info.name);
    for (const OperatorAxioms& a : operator_axioms()) {
      WEFT_CHECK(op_info(a.kind).rewrite, "axioms for {}, which is not a rewrite row",
                 op_kind_name(a.kind));
      const std::string name = fmt::format("<axioms of {}>", op_kind_name(a.kind));
      for (Rule r : parse_rules(a.rules, name)) {
        r.id = static_cast<int>(out.size());
        out.push_back(std::move(r));
      }
    }
    return out;
  }();
  return all;
}

}  // namespace weft
