// Hand-written task bodies of a decode loop kept on the device (mpk/decode_tasks.h): what no
// kernel plan computes (the next token's embedding, the rotary tables of its position, the KV-cache
// append, the greedy argmax that also advances the position). Pasted after the CUDA prelude and the
// plan's task bodies; every body is run by threads [0, THREADS) of a worker CTA, synchronizes them
// on named barrier 1 only (as plan bodies do), and the caller synchronizes the CTA after it.
//
// The decode state is f32 words in the workspace (decode_tasks.h, DecodeDeviceLayout): [0] the
// position p of the step (cache positions [0, p) hold earlier tokens), [1] the prompt's length,
// [2 + i] token i (integers, exact in f32 up to 2^24). The rotary inverse frequencies (doubles)
// and a host-held embedding table are constants uploaded before the first launch.
#pragma once

// The position of this step.
WEFT_DEV int64_t weft_decode_pos(const float* state) {
  return static_cast<int64_t>(state[0]);
}

// X[j] = table[token * row + j * col], j < dim, for the step's token (tokens[p]).
template <int THREADS, class TX, class TE>
WEFT_DEV void weft_decode_embed(TX* x, const TE* table, int64_t dim, int64_t row, int64_t col,
                                const float* state) {
  const int64_t token = static_cast<int64_t>(state[2 + weft_decode_pos(state)]);
  for (int64_t j = weft_tid(); j < dim; j += THREADS)
    weft_st(&x[j], weft_ld(&table[token * row + j * col]));
}

// The rotate-half rotary tables of position p: entries i and i + half are cos / sin(p inv_freq[i])
// (computed in double and rounded to f32 before the tensor's dtype, as the host hooks do).
template <int THREADS, class TC, class TS>
WEFT_DEV void weft_decode_rope_tables(TC* cos_t, TS* sin_t, const double* inv_freq, int64_t half,
                                      const float* state) {
  const double p = static_cast<double>(weft_decode_pos(state));
  for (int64_t i = weft_tid(); i < half; i += THREADS) {
    const double a = p * inv_freq[i];
    const float c = static_cast<float>(cos(a)), s = static_cast<float>(sin(a));
    weft_st(&cos_t[i], c);
    weft_st(&cos_t[i + half], c);
    weft_st(&sin_t[i], s);
    weft_st(&sin_t[i + half], s);
  }
}

// The step's key (after rotary embedding) and value into the caches at position p:
// Kc [Hkv, dh, T] column p and Vc [Hkv, T, dh] row p from KN, VN [Hkv dh].
template <int THREADS, class TK, class TV, class TKN, class TVN>
WEFT_DEV void weft_decode_kv_append(TK* kc, TV* vc, const TKN* kn, const TVN* vn, int64_t heads,
                                    int64_t dh, int64_t ctx, const float* state) {
  const int64_t p = weft_decode_pos(state);
  for (int64_t e = weft_tid(); e < heads * dh; e += THREADS) {
    const int64_t h = e / dh, j = e % dh;
    weft_st(&kc[e * ctx + p], weft_ld(&kn[e]));
    weft_st(&vc[(h * ctx + p) * dh + j], weft_ld(&vn[e]));
  }
}

// The greedy choice over LOGITS [vocab] (the first largest, as std::max_element), written as token
// p + 1 unless the prompt gives it; then the mask entry p set and the position advanced (by thread
// 0 after the last barrier, so after every thread's reads of p in this task, the appends before it
// included). `value` and `index` are THREADS entries of shared memory each.
template <int THREADS, class TL, class TM>
WEFT_DEV void weft_decode_argmax_advance(const TL* logits, int64_t vocab, TM* mask, float* state,
                                         float* value, int* index) {
  const int tid = weft_tid();
  float best = -INFINITY;
  int arg = -1;
  for (int64_t v = tid; v < vocab; v += THREADS) {
    const float l = weft_ld(&logits[v]);
    if (arg < 0 || l > best) {
      best = l;
      arg = static_cast<int>(v);
    }
  }
  value[tid] = best;
  index[tid] = arg;
  int width = 1;
  while (width < THREADS) width *= 2;
  for (int s = width / 2; s > 0; s /= 2) {
    weft_bar_sync(1, THREADS);
    if (tid < s && tid + s < THREADS) {
      const int o = index[tid + s];
      // Larger wins; equal values go to the lower index; an empty slot (-1) never wins.
      if (o >= 0 && (index[tid] < 0 || value[tid + s] > value[tid] ||
                     (value[tid + s] == value[tid] && o < index[tid]))) {
        value[tid] = value[tid + s];
        index[tid] = o;
      }
    }
  }
  weft_bar_sync(1, THREADS);
  if (tid == 0) {
    const int64_t p = weft_decode_pos(state);
    if (p + 2 > static_cast<int64_t>(state[1])) state[2 + p + 1] = static_cast<float>(index[0]);
    weft_st(&mask[p], 1.0f);
    state[0] = static_cast<float>(p + 1);
  }
}
