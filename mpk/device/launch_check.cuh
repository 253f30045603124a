// The co-residency rule of the persistent kernel's launch, a pure function of the device's
// numbers: every CTA must be resident at once (workers spin on each other's events; a CTA left
// waiting for a free SM would hang the rest), so a configuration that cannot be is refused
// before anything is launched. Host code; the generated unit and weft's tests both use it.
#pragma once

#include <stdint.h>
#include <stdio.h>

// 0 when `ctas` CTAs of `threads` threads and `smem_bytes` dynamic shared memory can all be
// resident: the device supports cooperative launch (cudaDevAttrCooperativeLaunch) and
// blocks_per_sm (cudaOccupancyMaxActiveBlocksPerMultiprocessor) x sms >= ctas. Otherwise 1, with
// the reason and the numbers in `message`.
static inline int weft_mpk_check_co_residency(int cooperative, int blocks_per_sm, int sms, int ctas,
                                              int threads, int64_t smem_bytes, char* message,
                                              int message_bytes) {
  if (!cooperative) {
    snprintf(message, static_cast<size_t>(message_bytes),
             "the device does not support cooperative launch (cudaDevAttrCooperativeLaunch is "
             "0), so the persistent kernel's %d CTAs cannot be guaranteed to be co-resident",
             ctas);
    return 1;
  }
  if (static_cast<int64_t>(blocks_per_sm) * sms < ctas) {
    snprintf(message, static_cast<size_t>(message_bytes),
             "refused: the persistent kernel needs all %d CTAs resident at once, but at %d "
             "threads and %lld bytes of shared memory per CTA only %d fit per SM, x %d SMs = "
             "%lld; use fewer workers or smaller task bodies",
             ctas, threads, static_cast<long long>(smem_bytes), blocks_per_sm, sms,
             static_cast<long long>(blocks_per_sm) * sms);
    return 1;
  }
  return 0;
}
