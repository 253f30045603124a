// The ONNX Einsum converter: an equation over one or more operands lowered to the table's
// operators — indices no later operand and no output needs summed away, each pair of operands
// contracted as one batched matmul ([batch, left, contracted] x [batch, contracted, right], the
// groups flattened by reshapes), and a final permute into the output's order. Ellipses expand to
// the operands' leading dims; a repeated index within one operand (a diagonal) is refused.
#ifdef WEFT_HAVE_ONNX
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "onnx/convert_common.h"

namespace weft::onnx_import {
namespace {

// An operand during the contraction: its run-time value and one index letter per dim.
struct Term {
  std::string value;
  std::string letters;
};

// The letters of `spec` with "..." replaced by `n` letters that no equation uses (from 'A' on:
// ONNX's equations are lowercase; an uppercase one is rejected before).
std::string expand_ellipsis(I& imp, const std::string& spec, int rank, int ellipsis_rank) {
  const size_t dots = spec.find("...");
  if (dots == std::string::npos) return spec;
  if (ellipsis_rank < 0) ellipsis_rank = rank - static_cast<int>(spec.size() - 3);
  if (ellipsis_rank < 0) imp.fail(fmt::format("Einsum term '{}' has more letters than dims", spec));
  std::string fill;
  for (int i = 0; i < ellipsis_rank; ++i) fill += static_cast<char>('A' + i);
  return spec.substr(0, dots) + fill + spec.substr(dots + 3);
}

// `t` with the dims of the letters not in `keep` summed away.
Term sum_unneeded(I& imp, Term t, const std::string& keep) {
  for (size_t i = t.letters.size(); i-- > 0;) {
    if (keep.find(t.letters[i]) != std::string::npos) continue;
    const Value s =
        imp.op("sum", {t.value}, {{"dim", SymExpr(static_cast<int64_t>(i))}, {"to", SymExpr(1)}});
    std::vector<SymExpr> d = imp.dims(s.name);
    d.erase(d.begin() + static_cast<ptrdiff_t>(i));
    if (d.empty()) imp.fail("Einsum to a scalar (a 0-d tensor) is not supported");
    t.value = imp.reshape(s.name, d);
    t.letters.erase(i, 1);
  }
  return t;
}

// `t` permuted so its letters read `order`.
std::string permuted(I& imp, const Term& t, const std::string& order) {
  std::vector<int64_t> perm;
  for (char c : order) perm.push_back(static_cast<int64_t>(t.letters.find(c)));
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity = identity && perm[i] == static_cast<int64_t>(i);
  return identity ? t.value : imp.op("permute", {t.value}, {{"perm", syms(perm)}}).name;
}

// The dims of `t` for the letters of `group`, and their product (1 for none).
SymExpr group_size(I& imp, const Term& t, const std::string& group, std::vector<SymExpr>* dims) {
  const std::vector<SymExpr> d = imp.dims(t.value);
  SymExpr n(1);
  for (char c : group) {
    const SymExpr& e = d[t.letters.find(c)];
    if (dims) dims->push_back(e);
    n = n * e;
  }
  return n;
}

// a and b contracted over their shared letters not in `keep`; shared letters in `keep` are
// batch dims (their extents must be equal).
Term contract(I& imp, const Term& a, const Term& b, const std::string& keep) {
  std::string batch, left, right, summed;
  for (char c : a.letters) {
    const bool in_b = b.letters.find(c) != std::string::npos;
    const bool kept = keep.find(c) != std::string::npos;
    (in_b ? (kept ? batch : summed) : left) += c;
  }
  for (char c : b.letters)
    if (a.letters.find(c) == std::string::npos) right += c;
  const std::vector<SymExpr> da = imp.dims(a.value), db = imp.dims(b.value);
  for (char c : batch + summed) {
    const SymExpr &x = da[a.letters.find(c)], &y = db[b.letters.find(c)];
    if (imp.prover().prove_eq(x, y).truth != SymTruth::proven_true)
      imp.fail(
          fmt::format("Einsum index '{}' has extents {} and {} in its operands (they must "
                      "be equal: Einsum broadcasting is not supported)",
                      c, x.str(), y.str()));
  }
  std::vector<SymExpr> out_dims;
  const SymExpr nb = group_size(imp, a, batch, &out_dims);
  const SymExpr nl = group_size(imp, a, left, &out_dims);
  const SymExpr nk = group_size(imp, a, summed, nullptr);
  const SymExpr nr = group_size(imp, b, right, &out_dims);
  const std::string am = imp.reshape(permuted(imp, a, batch + left + summed), {nb, nl, nk});
  const std::string bm = imp.reshape(permuted(imp, b, batch + summed + right), {nb, nk, nr});
  const Value y = imp.op("matmul", {am, bm});
  if (out_dims.empty()) imp.fail("Einsum to a scalar (a 0-d tensor) is not supported");
  return Term{imp.reshape(y.name, out_dims), batch + left + right};
}

void convert_einsum(I& imp) {
  std::string eq;
  for (char c : imp.attr_string("equation", ""))
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> specs;
  for (size_t at = 0;;) {
    const size_t comma = lhs.find(',', at);
    specs.push_back(lhs.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (static_cast<int>(specs.size()) != imp.num_inputs())
    imp.fail(fmt::format("Einsum equation '{}' names {} operands, the node has {}", eq,
                         specs.size(), imp.num_inputs()));
  for (char c : eq)
    if (!(c >= 'a' && c <= 'z') && c != ',' && c != '.' && c != '-' && c != '>')
      imp.fail(
          fmt::format("Einsum equation '{}': only lowercase letters, ',', '...' and '->'", eq));
  // Ellipses: the most dims any operand's ellipsis stands for (leading dims, aligned right).
  int ellipsis = 0;
  std::vector<Term> terms;
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string x = imp.rt(static_cast<int>(i));
    const int r = imp.rank(x);
    if (specs[i].find("...") != std::string::npos)
      ellipsis = std::max(ellipsis, r - static_cast<int>(specs[i].size() - 3));
    terms.push_back(Term{x, specs[i]});
  }
  for (Term& t : terms) {
    const int r = imp.rank(t.value);
    if (t.letters.find("...") != std::string::npos) {
      const int own = r - static_cast<int>(t.letters.size() - 3);
      if (own != ellipsis)
        imp.fail("Einsum ellipses of different ranks (broadcasting) are not supported");
      t.letters = expand_ellipsis(imp, t.letters, r, own);
    }
    if (static_cast<int>(t.letters.size()) != r)
      imp.fail(fmt::format("Einsum term '{}' has {} letters for a rank-{} operand", t.letters,
                           t.letters.size(), r));
    if (std::set<char>(t.letters.begin(), t.letters.end()).size() != t.letters.size())
      imp.fail(fmt::format("Einsum term '{}' repeats an index (a diagonal), which is not supported",
                           t.letters));
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = expand_ellipsis(imp, eq.substr(arrow + 2), 0, ellipsis);
  } else {  // implicit: the ellipsis, then the letters used once, in alphabetical order
    std::string all;
    for (const Term& t : terms) all += t.letters;
    for (char c = 'A'; c < 'A' + ellipsis; ++c) out += c;
    for (char c = 'a'; c <= 'z'; ++c)
      if (std::count(all.begin(), all.end(), c) == 1) out += c;
  }
  if (out.empty()) imp.fail("Einsum to a scalar (a 0-d tensor) is not supported");
  // Left to right: each operand first loses the letters nothing later needs.
  auto needed_after = [&](size_t i) {
    std::string keep = out;
    for (size_t j = i + 1; j < terms.size(); ++j) keep += terms[j].letters;
    return keep;
  };
  Term acc = sum_unneeded(imp, terms[0], needed_after(0));
  for (size_t i = 1; i < terms.size(); ++i) {
    const Term b = sum_unneeded(imp, terms[i], needed_after(i) + acc.letters);
    acc = sum_unneeded(imp, acc, needed_after(i) + b.letters);
    acc = contract(imp, acc, b, needed_after(i));
  }
  acc = sum_unneeded(imp, acc, out);
  for (char c : out)
    if (acc.letters.find(c) == std::string::npos)
      imp.fail(fmt::format("Einsum output index '{}' is in no operand", c));
  imp.out(0, imp.value_of(permuted(imp, acc, out)));
}

}  // namespace

// Einsum.
void add_einsum_converters(std::vector<Converter>& table) {
  table.push_back({"Einsum", 12, kMaxOpset, convert_einsum});
}

}  // namespace weft::onnx_import
#endif
