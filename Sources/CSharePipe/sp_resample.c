// Fixed-point resampling kernels (see sp_resample.h). Pure arithmetic: no library calls, so no setjmp.
#include "sp_resample.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define SHIFT_H (SP_RESAMPLE_WEIGHT_BITS - SP_RESAMPLE_RING_BITS)
#define SHIFT_V (SP_RESAMPLE_WEIGHT_BITS + SP_RESAMPLE_RING_BITS)

static inline int16_t saturate16(int32_t v) {
    return v < -32768 ? -32768 : v > 32767 ? 32767 : (int16_t)v;
}

static inline uint8_t saturate8(int32_t v) {
    return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
}

void sp_resample_expand_row(const uint8_t *row, int pixels, int channels, int16_t *out) {
    if (channels == 3) {
        for (int x = 0; x < pixels; x++) {
            out[4 * x] = row[3 * x];
            out[4 * x + 1] = row[3 * x + 1];
            out[4 * x + 2] = row[3 * x + 2];
            out[4 * x + 3] = 0;
        }
    } else {
        for (int x = 0; x < pixels * channels; x++) out[x] = row[x];
    }
}

void sp_resample_horizontal(const int16_t *in, int channels, const int32_t *starts, const int32_t *counts,
                            const int16_t *weights, int stride, int outputs, int16_t *out) {
    const int32_t round = 1 << (SHIFT_H - 1);
    if (channels == 3) {
        for (int i = 0; i < outputs; i++) {
            const int16_t *p = in + 4 * starts[i];
            const int16_t *w = weights + (long)i * stride;
            int taps = (counts[i] + 1) & ~1;
#if defined(__SSE2__)
            // Two taps at a time: [R0 G0 B0 0 R1 G1 B1 0] interleaved to [R0 R1 G0 G1 B0 B1 0 0], times
            // [w0 w1 w0 w1 …] with pmaddwd: the four channel sums of both taps.
            __m128i acc = _mm_set1_epi32(round);
            for (int t = 0; t < taps; t += 2) {
                __m128i two = _mm_loadu_si128((const __m128i *)(p + 4 * t));
                __m128i pairs = _mm_unpacklo_epi16(two, _mm_srli_si128(two, 8));
                int32_t wpair = (int32_t)(uint16_t)w[t] | ((int32_t)(uint16_t)w[t + 1] << 16);
                acc = _mm_add_epi32(acc, _mm_madd_epi16(pairs, _mm_set1_epi32(wpair)));
            }
            acc = _mm_srai_epi32(acc, SHIFT_H);
            _mm_storel_epi64((__m128i *)(out + 3 * i), _mm_packs_epi32(acc, acc));
#else
            int32_t r = round, g = round, b = round;
            for (int t = 0; t < taps; t++) {
                r += w[t] * p[4 * t];
                g += w[t] * p[4 * t + 1];
                b += w[t] * p[4 * t + 2];
            }
            out[3 * i] = saturate16(r >> SHIFT_H);
            out[3 * i + 1] = saturate16(g >> SHIFT_H);
            out[3 * i + 2] = saturate16(b >> SHIFT_H);
            out[3 * i + 3] = 0;
#endif
        }
        return;
    }
    if (channels == 1) {
        for (int i = 0; i < outputs; i++) {
            const int16_t *p = in + starts[i];
            const int16_t *w = weights + (long)i * stride;
            int taps = (counts[i] + 7) & ~7;
#if defined(__SSE2__)
            __m128i acc = _mm_setzero_si128();
            for (int t = 0; t < taps; t += 8) {
                __m128i v = _mm_loadu_si128((const __m128i *)(p + t));
                __m128i k = _mm_loadu_si128((const __m128i *)(w + t));
                acc = _mm_add_epi32(acc, _mm_madd_epi16(v, k));
            }
            acc = _mm_add_epi32(acc, _mm_srli_si128(acc, 8));
            acc = _mm_add_epi32(acc, _mm_srli_si128(acc, 4));
            int32_t sum = _mm_cvtsi128_si32(acc) + round;
#else
            int32_t sum = round;
            for (int t = 0; t < taps; t++) sum += w[t] * p[t];
#endif
            out[i] = saturate16(sum >> SHIFT_H);
        }
        return;
    }
    // Any other channel count (not used by the resampler: alpha layouts filter in float).
    for (int i = 0; i < outputs; i++) {
        const int16_t *w = weights + (long)i * stride;
        for (int c = 0; c < channels; c++) {
            int32_t sum = round;
            for (int t = 0; t < counts[i]; t++) sum += w[t] * in[(starts[i] + t) * channels + c];
            out[i * channels + c] = saturate16(sum >> SHIFT_H);
        }
    }
}

void sp_resample_vertical(const int16_t *const *rows, const int16_t *weights, int taps, int length, uint8_t *out) {
    const int32_t round = 1 << (SHIFT_V - 1);
    int i = 0;
#if defined(__SSE2__)
    // Eight samples at a time, two rows at a time: the rows' samples interleaved, times [wa wb wa wb …] with
    // pmaddwd. An odd last row pairs with itself at weight 0.
    for (; i + 8 <= length; i += 8) {
        __m128i lo = _mm_set1_epi32(round), hi = lo;
        for (int t = 0; t < taps; t += 2) {
            int second = t + 1 < taps;
            __m128i a = _mm_loadu_si128((const __m128i *)(rows[t] + i));
            __m128i b = second ? _mm_loadu_si128((const __m128i *)(rows[t + 1] + i)) : a;
            int32_t wpair = (int32_t)(uint16_t)weights[t] | (second ? ((int32_t)(uint16_t)weights[t + 1] << 16) : 0);
            __m128i k = _mm_set1_epi32(wpair);
            lo = _mm_add_epi32(lo, _mm_madd_epi16(_mm_unpacklo_epi16(a, b), k));
            hi = _mm_add_epi32(hi, _mm_madd_epi16(_mm_unpackhi_epi16(a, b), k));
        }
        lo = _mm_srai_epi32(lo, SHIFT_V);
        hi = _mm_srai_epi32(hi, SHIFT_V);
        __m128i words = _mm_packs_epi32(lo, hi);
        _mm_storel_epi64((__m128i *)(out + i), _mm_packus_epi16(words, words));
    }
#endif
    for (; i < length; i++) {
        int32_t sum = round;
        for (int t = 0; t < taps; t++) sum += weights[t] * rows[t][i];
        out[i] = saturate8(sum >> SHIFT_V);
    }
}
