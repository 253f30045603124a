// The finite-field check of a rewritten model function before it is used: the bindings it
// changed, as kernel-level µGraphs at one binding of the variables (the original's and the
// rewritten's, same live-ins and live-outs), compared by the equivalence verifier. The rest of
// the function is the same text, so the two functions are equivalent exactly when these are.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "model/module.h"
#include "sym/evaluate.h"
#include "verify/equivalence.h"

namespace weft {

struct RewriteCheck {
  Verdict verdict = Verdict::error;
  double bound = 1;     // equivalent: the chance a wrong rewrite passed
  int changed = 0;      // bindings of the original that the rewrite replaced
  std::string message;  // otherwise: what differed or why it could not be checked
};

// `renamed`: values of the original whose readers read another value in `rewritten`.
RewriteCheck check_rewritten_function(const Function& original, const Function& rewritten,
                                      const std::map<std::string, std::string>& renamed,
                                      const SymBinding& at, uint64_t seed);

}  // namespace weft
