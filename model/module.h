// The model IR: a module of functions whose bodies are blocks of bindings (dataflow blocks of
// pure calls, plain blocks that may also assert types with match_cast), over values typed by
// MType. Cross-level calls reach µGraphs (call_ugraph, destination-passing) and library
// functions (call_lib). docs/model-format.md is its text form, docs/model-layer.md its design.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "core/error.h"
#include "core/rational.h"
#include "ir/graph.h"
#include "ir/sym_attrs.h"
#include "model/types.h"
#include "sym/prove.h"
#include "sym/scope.h"

namespace weft {

enum class CallKind : uint8_t {
  op,          // an operator of the table (ir/ops.h) with the model level; its class says how
               // it runs: a model-only one by model/model_ops.h, the others as one-op µGraphs
  ugraph,      // call_ugraph: a µGraph of the module, outputs allocated by the caller
  lib,         // call_lib: a library function (model/library.h)
  func,        // a function of the module
  tuple,       // tuple(a, b, ...)
  item,        // item(t, index=i)
  match_cast,  // match_cast(x, TYPE): x, asserted to have TYPE (binds its new variables)
  if_,         // if COND { bindings; yield a } else { bindings; yield b } (plain blocks only)
};

struct Binding;

// One arm of an `if`: bindings local to it, and the value it yields.
struct IfBranch {
  std::vector<Binding> bindings;
  std::string result;
  SourceLoc result_loc;
};

struct Call {
  CallKind kind = CallKind::op;
  std::string callee;  // op / model op / µGraph / library / function name; empty otherwise
  std::vector<std::string> args;
  MAttrs attrs;     // completed with defaults
  MType cast_type;  // match_cast only
  // if_ only: the condition over symbolic variables (true: then_branch), and the two arms.
  SymCondition cond;
  std::vector<IfBranch> branches;  // {then, else}
  SourceLoc loc;
  friend bool operator==(const Call& a, const Call& b);
};

struct Binding {
  std::string var;
  Call call;
  MType type;  // deduced
  // Conditions deduction could neither prove nor refute: checked when the binding runs.
  std::vector<SymCondition> runtime_checks;
  SourceLoc loc;
  friend bool operator==(const Binding& a, const Binding& b) {
    return a.var == b.var && a.call == b.call && a.type == b.type;
  }
};

bool operator==(const IfBranch& a, const IfBranch& b);
inline bool operator==(const Call& a, const Call& b) {
  return a.kind == b.kind && a.callee == b.callee && a.args == b.args && a.attrs == b.attrs &&
         a.cast_type == b.cast_type && a.cond.rel == b.cond.rel && a.cond.lhs == b.cond.lhs &&
         a.cond.rhs == b.cond.rhs && a.branches == b.branches;
}

// The values a call reads: its operands and, for an if, what its arms read from outside them.
std::vector<std::string> reads_of(const Call& c);

struct Block {
  bool dataflow = false;  // pure bindings only: no match_cast
  std::vector<Binding> bindings;
  SourceLoc loc;
  friend bool operator==(const Block& a, const Block& b) {
    return a.dataflow == b.dataflow && a.bindings == b.bindings;
  }
};

struct Param {
  std::string name;
  MType type;
  SourceLoc loc;
  friend bool operator==(const Param& a, const Param& b) {
    return a.name == b.name && a.type == b.type;
  }
};

struct Function {
  std::string name;
  std::vector<Param> params;
  MType ret;
  std::vector<Block> blocks;
  std::string result;                       // the returned variable
  std::vector<SymCondition> return_checks;  // the result's deduced type against `ret`
  SourceLoc loc;
  SourceLoc result_loc;
  friend bool operator==(const Function& a, const Function& b) {
    return a.name == b.name && a.params == b.params && a.ret == b.ret && a.blocks == b.blocks &&
           a.result == b.result;
  }
};

// A µGraph the module calls: read from a .weft file (path as written, relative to the module's
// file) or written inline in the module.
struct UGraphDef {
  std::string name;
  std::string path;  // empty: inline
  std::shared_ptr<const Graph> graph;
  SourceLoc loc;
  friend bool operator==(const UGraphDef& a, const UGraphDef& b) {
    return a.name == b.name && a.path == b.path && *a.graph == *b.graph;
  }
};

struct Module {
  std::string name;
  SymScope syms;
  std::vector<UGraphDef> ugraphs;
  std::vector<Function> functions;

  const Function* find_function(std::string_view name) const;
  const UGraphDef* find_ugraph(std::string_view name) const;
};

bool operator==(const Module& a, const Module& b);

// The type of every parameter and top-level binding of `f`, by name.
std::map<std::string, MType> value_types(const Function& f);

std::string_view call_kind_name(CallKind kind);

}  // namespace weft
