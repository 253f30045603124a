// The persistent kernel's arguments and entry points, shared by the generated unit
// (mpk/device/megakernel.cuh) and the host code that loads it (mpk/runtime/megakernel_run.cpp): one
// definition of the by-value kernel parameter, plain C types only.
#pragma once

#include <stdint.h>

#include "mpk/device/protocol.cuh"

// Every pointer is device memory, except `report`, which is host memory the device can write
// (mapped pinned memory on a GPU), so the watchdog's report survives the trap.
struct WeftMpkArgs {
  const unsigned char* blob;  // the encoded task graph (mpk/encode.h), read in place
  uint64_t* state;            // weft_mpk_state_words() words, zeroed before each launch
  void* const* inputs;        // a device array of the plan's input pointers (plan input order)
  void* const* outputs;       // likewise for the outputs
  unsigned char* workspace;   // the device-memory plan's workspace
  weft_mpk::Report* report;   // zeroed before each launch; kind != 0 after a trip
  weft_mpk::TaskSpan* trace;  // null, or iterations x tasks spans
  uint64_t iterations;
};

// The unit's extern "C" entry points:
//   uint64_t weft_mpk_state_words(void);
//   int weft_mpk_grid(int* ctas, int* threads, int* smem_bytes);  // the launch shape
//   void weft_mpk_layout_of(weft_mpk::Layout* out);  // the graph shape it was emitted for
//   int weft_mpk_prepare(char* error, int error_bytes);
//   int weft_mpk_launch(const WeftMpkArgs* args, void* stream, char* error, int error_bytes);
//   uint64_t weft_mpk_setup_count(void);  // how many times weft_mpk_prepare ran
// weft_mpk_prepare does a launch's host-side set-up once (device queries, the shared-memory
// limit, the occupancy): 0 when every CTA can be resident, WEFT_MPK_REFUSED with a message in
// `error` when they cannot, else a cudaError_t. weft_mpk_launch only launches: 0 once launched
// (on a GPU, asynchronously on `stream`; in host emulation after the run), WEFT_MPK_UNPREPARED
// before a successful weft_mpk_prepare, else a cudaError_t.
#define WEFT_MPK_REFUSED (-1)
#define WEFT_MPK_UNPREPARED (-2)

// The persistent kernel's own dynamic shared memory before a task body's (the protocol lane's
// command to its CTA); the host's fit checks reserve it from every body's budget.
constexpr int kWeftMpkCommandBytes = 128;
// Threads a worker CTA has beyond its compute threads: the protocol warp.
constexpr int kWeftMpkProtocolThreads = 32;
typedef uint64_t (*WeftMpkStateWordsFn)(void);
typedef int (*WeftMpkGridFn)(int*, int*, int*);
typedef void (*WeftMpkLayoutFn)(weft_mpk::Layout*);
typedef int (*WeftMpkPrepareFn)(char*, int);
typedef int (*WeftMpkLaunchFn)(const WeftMpkArgs*, void*, char*, int);
typedef uint64_t (*WeftMpkSetupCountFn)(void);
