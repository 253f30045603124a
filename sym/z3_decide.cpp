// Z3 encoding of normal forms and the decision query. One Z3 context per query keeps threads
// independent (Z3 contexts must not be shared between threads).
#include "sym/z3_decide.h"

#include <z3++.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "core/error.h"

namespace weft {
namespace {

// Interrupts the context if the query outlives `ms`. Z3's own "timeout" does this with a timer
// thread that unlocks a mutex locked by another thread, which ThreadSanitizer reports; this one
// synchronizes through its own mutex.
class Watchdog {
 public:
  Watchdog(z3::context& ctx, unsigned ms) {
    if (ms == 0) return;
    thread_ = std::thread([this, &ctx, ms] {
      std::unique_lock<std::mutex> lock(mu_);
      if (!done_cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return done_; }))
        ctx.interrupt();
    });
  }
  ~Watchdog() { stop(); }
  void stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    done_cv_.notify_one();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;
};

class Encoder {
 public:
  Encoder(z3::context& ctx, z3::solver& solver) : ctx_(ctx), solver_(solver) {}

  z3::expr expr(const SymExpr& e) {
    z3::expr sum = ctx_.int_val(e.constant());
    for (const SymTerm& t : e.terms()) {
      z3::expr product = ctx_.int_val(t.coeff);
      for (const SymFactor& f : t.factors) {
        z3::expr a = atom(*f.atom);
        for (int i = 0; i < f.exponent; ++i) product = product * a;
      }
      sum = sum + product;
    }
    return sum;
  }

  // The divisor is positive wherever the query's expressions are defined.
  void assume_positive(const SymExpr& divisor) { solver_.add(expr(divisor) >= 1); }

  const std::map<std::string, z3::expr>& vars() const { return vars_; }

 private:
  z3::expr atom(const SymAtom& a) {
    switch (a.kind) {
      case SymAtomKind::var: {
        auto it = vars_.find(a.name);
        if (it != vars_.end()) return it->second;
        z3::expr v = ctx_.int_const(a.name.c_str());
        solver_.add(v >= ctx_.int_val(a.lo));
        if (a.hi) solver_.add(v <= ctx_.int_val(*a.hi));
        vars_.emplace(a.name, v);
        return v;
      }
      case SymAtomKind::floordiv:
      case SymAtomKind::mod: {
        auto [quotient, remainder] = division(a.args[0], a.args[1]);
        return a.kind == SymAtomKind::floordiv ? quotient : remainder;
      }
      case SymAtomKind::min:
      case SymAtomKind::max: {
        z3::expr m = expr(a.args[0]);
        for (size_t i = 1; i < a.args.size(); ++i) {
          z3::expr x = expr(a.args[i]);
          m = a.kind == SymAtomKind::min ? z3::ite(x < m, x, m) : z3::ite(x > m, x, m);
        }
        return m;
      }
    }
    WEFT_CHECK(false, "unknown symbolic atom kind");
    return ctx_.int_val(0);
  }

  // p = d * q + r with 0 <= r < d and d >= 1: q = floordiv(p, d), r = mod(p, d), exactly.
  std::pair<z3::expr, z3::expr> division(const SymExpr& p, const SymExpr& d) {
    auto key = std::make_pair(p, d);
    auto it = divisions_.find(key);
    if (it != divisions_.end()) return it->second;
    z3::expr zp = expr(p), zd = expr(d);
    int id = static_cast<int>(divisions_.size());
    z3::expr q = ctx_.int_const(("!q" + std::to_string(id)).c_str());
    z3::expr r = ctx_.int_const(("!r" + std::to_string(id)).c_str());
    solver_.add(zd >= 1);
    solver_.add(zp == zd * q + r);
    solver_.add(r >= 0);
    solver_.add(r < zd);
    divisions_.emplace(key, std::make_pair(q, r));
    return {q, r};
  }

  z3::context& ctx_;
  z3::solver& solver_;
  std::map<std::string, z3::expr> vars_;
  std::map<std::pair<SymExpr, SymExpr>, std::pair<z3::expr, z3::expr>> divisions_;
};

}  // namespace

SymZ3Answer z3_decide(const SymExpr& d, bool equality, const std::vector<SymExpr>& defined,
                      const SymZ3Options& options) {
  SymZ3Answer answer;
  try {
    z3::context ctx;
    // Preprocessing then the SMT core: several times faster than the default solver on the
    // linear queries that dominate (docs/symbolic-shapes.md).
    z3::tactic tactic =
        z3::tactic(ctx, "simplify") & z3::tactic(ctx, "solve-eqs") & z3::tactic(ctx, "smt");
    z3::solver solver = tactic.mk_solver();
    z3::params params(ctx);
    params.set("rlimit", static_cast<unsigned>(std::min<uint64_t>(options.rlimit, UINT32_MAX)));
    // The legacy arithmetic solver counts its work against the resource limit also in nonlinear
    // problems, where the default one can loop without counting (and only stops when
    // interrupted): with it, the resource limit decides, and answers stay deterministic.
    params.set("arith.solver", 2u);
    solver.set(params);
    Encoder enc(ctx, solver);
    for (const SymExpr& divisor : defined) enc.assume_positive(divisor);
    z3::expr zd = enc.expr(d);
    solver.add(equality ? zd != 0 : zd < 0);  // a binding where the claim fails
    Watchdog watchdog(ctx, options.timeout_ms);
    z3::check_result result = solver.check();
    watchdog.stop();  // before reading the model: a late interrupt must not hit it
    switch (result) {
      case z3::unsat:
        answer.verdict = SymZ3Verdict::holds;
        break;
      case z3::sat: {
        answer.verdict = SymZ3Verdict::fails;
        z3::model model = solver.get_model();
        SymBinding binding;
        bool fits = true;
        for (const auto& [name, var] : enc.vars()) {
          int64_t value = 0;
          fits = fits && model.eval(var, true).is_numeral_i64(value);
          binding[name] = value;
        }
        if (fits) answer.model = std::move(binding);
        break;
      }
      case z3::unknown:
        answer.reason = solver.reason_unknown();
        break;
    }
  } catch (const z3::exception& e) {
    answer.verdict = SymZ3Verdict::unknown;
    answer.reason = std::string("z3: ") + e.msg();
  }
  return answer;
}

}  // namespace weft
