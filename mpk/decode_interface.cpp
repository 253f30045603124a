// The decode interface: its roles read from the program's declaration and checked against the
// plan's tensors.
#include "mpk/decode_interface.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/error.h"

namespace weft {

namespace {

const char* const kSingleRoles[] = {"token_embedding", "mask",     "logits",
                                    "rope_cos",        "rope_sin", "embedding_table"};
const char* const kLayerRoles[] = {"k_cache", "v_cache", "new_k", "new_v"};

const char* const kHowToDeclare =
    "declare it after the outputs, e.g. `interface decode(token_embedding=X, mask=M, "
    "logits=LOGITS, k_cache=[Kc0], v_cache=[Vc0], new_k=[KN0], new_v=[VN0])`, or pass one "
    "(docs/mpk.md, \"The decode interface\")";

class Resolver {
 public:
  Resolver(const ProgramPlan& plan, const ProgramInterface& decl) : plan_(plan), decl_(decl) {
    for (const auto& [role, values] : decl.roles) {
      auto is_role = [name = role](const char* r) { return name == r; };
      const bool single = std::find_if(std::begin(kSingleRoles), std::end(kSingleRoles), is_role) !=
                          std::end(kSingleRoles);
      const bool layer = std::find_if(std::begin(kLayerRoles), std::end(kLayerRoles), is_role) !=
                         std::end(kLayerRoles);
      if (!single && !layer)
        fail(fmt::format("unknown role '{}' (roles: {}, {})", role, fmt::join(kSingleRoles, ", "),
                         fmt::join(kLayerRoles, ", ")));
      if (single && values.size() != 1)
        fail(fmt::format("role {} names {} values, not one", role, values.size()));
    }
  }

  DecodeInterface resolve() {
    DecodeInterface i;
    i.x = input("token_embedding");
    i.m = input("mask");
    i.logits = output("logits");
    const Shape& xs = tensor(plan_.inputs[i.x]).shape;
    const Shape& ms = tensor(plan_.inputs[i.m]).shape;
    if (xs.size() != 2 || xs[0] != 1 || ms.size() != 3)
      fail(fmt::format("token_embedding {} must be [1, D] and mask {} [1, 1, T]", plan_.inputs[i.x],
                       plan_.inputs[i.m]));
    i.dim = xs[1];
    i.ctx = ms[2];
    i.vocab = numel(tensor(plan_.outputs[i.logits]).shape);
    resolve_layers(i);
    resolve_rope(i);
    if (decl_.find("embedding_table")) {
      i.emb = input("embedding_table");
      const std::string& e = plan_.inputs[*i.emb];
      if (tensor(e).shape != Shape{i.dim, i.vocab})
        fail(fmt::format("embedding_table {} must be [{}, {}] (D, V)", e, i.dim, i.vocab));
    }
    return i;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw UserError(decl_.loc, fmt::format("{}: the decode interface: {}", plan_.name, what));
  }

  const PlanBuffer& tensor(const std::string& name) const {
    const PlanBuffer* b = plan_.find_tensor(name);
    if (!b) fail(fmt::format("the plan has no tensor {}", name));
    return *b;
  }

  const std::vector<std::string>& values(const char* role) const {
    const std::vector<std::string>* v = decl_.find(role);
    if (!v) fail(fmt::format("role {} is missing", role));
    return *v;
  }

  size_t position(const std::vector<std::string>& list, const std::string& name, const char* role,
                  const char* what) const {
    auto it = std::find(list.begin(), list.end(), name);
    if (it == list.end()) fail(fmt::format("{} {} is not a program {}", role, name, what));
    return static_cast<size_t>(it - list.begin());
  }
  size_t input(const char* role) const {
    return position(plan_.inputs, values(role)[0], role, "input");
  }
  size_t output(const char* role) const {
    return position(plan_.outputs, values(role)[0], role, "output");
  }

  void resolve_layers(DecodeInterface& i) const {
    const std::vector<std::string>&kc = values("k_cache"), &vc = values("v_cache"),
          &kn = values("new_k"), &vn = values("new_v");
    if (vc.size() != kc.size() || kn.size() != kc.size() || vn.size() != kc.size())
      fail(
          fmt::format("k_cache, v_cache, new_k and new_v name {}, {}, {} and {} tensors: one per "
                      "layer each",
                      kc.size(), vc.size(), kn.size(), vn.size()));
    for (size_t l = 0; l < kc.size(); ++l) {
      const Shape& ks = tensor(kc[l]).shape;
      if (ks.size() != 3 || ks[2] != i.ctx)
        fail(fmt::format("k_cache {} must be [Hkv, dh, {}]", kc[l], i.ctx));
      const int64_t heads = ks[0], dh = ks[1];
      if (tensor(vc[l]).shape != Shape{heads, i.ctx, dh})
        fail(fmt::format("v_cache {} must be [{}, {}, {}]", vc[l], heads, i.ctx, dh));
      for (const std::string& n : {kn[l], vn[l]})
        if (numel(tensor(n).shape) != heads * dh)
          fail(fmt::format("{} must hold {} values (Hkv dh)", n, heads * dh));
      i.layers.push_back({position(plan_.inputs, kc[l], "k_cache", "input"),
                          position(plan_.inputs, vc[l], "v_cache", "input"),
                          position(plan_.outputs, kn[l], "new_k", "output"),
                          position(plan_.outputs, vn[l], "new_v", "output"), heads, dh});
    }
  }

  void resolve_rope(DecodeInterface& i) const {
    if (!decl_.find("rope_cos") && !decl_.find("rope_sin")) return;
    i.cos = input("rope_cos");
    i.sin = input("rope_sin");
    i.rope_dim = numel(tensor(plan_.inputs[*i.cos]).shape);
    if (i.rope_dim % 2 != 0 || numel(tensor(plan_.inputs[*i.sin]).shape) != i.rope_dim ||
        (!i.layers.empty() && i.layers[0].head_dim != i.rope_dim))
      fail("rope_cos and rope_sin must hold dh values, dh even (the head size)");
  }

  const ProgramPlan& plan_;
  const ProgramInterface& decl_;
};

}  // namespace

bool DecodeInterface::is_state_input(size_t input) const {
  if (input == x || input == m || input == cos || input == sin) return true;
  return std::any_of(layers.begin(), layers.end(),
                     [&](const DecodeLayer& l) { return input == l.kc || input == l.vc; });
}

bool declares_decode_interface(const ProgramPlan& plan) {
  return find_interface(plan.interfaces, kDecodeInterface) != nullptr;
}

DecodeInterface decode_interface(const ProgramPlan& plan) {
  const ProgramInterface* decl = find_interface(plan.interfaces, kDecodeInterface);
  if (!decl)
    throw UserError(fmt::format("{} declares no decode interface: {}",
                                plan.name.empty() ? "the program" : plan.name, kHowToDeclare));
  return Resolver(plan, *decl).resolve();
}

std::set<std::string> decode_cache_tensors(const ProgramPlan& plan) {
  const DecodeInterface d = decode_interface(plan);
  std::set<std::string> caches;
  for (const DecodeLayer& l : d.layers) {
    caches.insert(plan.inputs[l.kc]);
    caches.insert(plan.inputs[l.vc]);
  }
  return caches;
}

ProgramPlan with_decode_interface(ProgramPlan plan, const ProgramInterface& decode) {
  ProgramInterface d = decode;
  d.name = kDecodeInterface;
  std::erase_if(plan.interfaces,
                [](const ProgramInterface& i) { return i.name == kDecodeInterface; });
  plan.interfaces.push_back(std::move(d));
  (void)decode_interface(plan);
  return plan;
}

}  // namespace weft
