// Fixed-point resampling kernels (see sp_resample.h). Pure arithmetic: no library calls, so no setjmp.
#include "sp_resample.h"

#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// The RGBA kernels' float arithmetic must give the SSE2 kernels' bits in the plain C fallback too: no fused
// multiply-add.
#pragma STDC FP_CONTRACT OFF

#define SHIFT_H (SP_RESAMPLE_WEIGHT_BITS - SP_RESAMPLE_RING_BITS)
#define SHIFT_V (SP_RESAMPLE_WEIGHT_BITS + SP_RESAMPLE_RING_BITS)

static inline int16_t saturate16(int32_t v) {
    return v < -32768 ? -32768 : v > 32767 ? 32767 : (int16_t)v;
}

#if defined(__SSE2__)
// Two int16 weights in one int32 lane, `first` in the low half, for pmaddwd. Put together unsigned: shifting a
// weight's bits into the sign bit of an int32 is undefined in C.
static inline int32_t weight_pair(int16_t first, int16_t second) {
    return (int32_t)((uint32_t)(uint16_t)first | (uint32_t)(uint16_t)second << 16);
}
#endif

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
                int32_t wpair = weight_pair(w[t], w[t + 1]);
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
            int32_t wpair = weight_pair(weights[t], second ? weights[t + 1] : 0);
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

// RGBA: exact premultiplication (c × a, a × 255, less 32768), horizontal sums in int32, a Float ring, Float
// vertical sums and division by alpha as the Float resampler does.

#define RGBA_BIAS 32768
/// Σ w × (x − 32768) + 32768 × 2^14 = Σ w × x when the weights sum to 2^14.
#define RGBA_BIAS_SUM (RGBA_BIAS << SP_RESAMPLE_WEIGHT_BITS)

static inline void premultiply_pixel(const uint8_t *p, int16_t s[4]) {
    int32_t a = p[3];
    s[0] = (int16_t)(p[0] * a - RGBA_BIAS);
    s[1] = (int16_t)(p[1] * a - RGBA_BIAS);
    s[2] = (int16_t)(p[2] * a - RGBA_BIAS);
    s[3] = (int16_t)(a * 255 - RGBA_BIAS);
}

#if defined(__SSE2__)
/// Two pixels' 8 int16 samples premultiplied and biased (mullo is exact: c × a ≤ 65025 fits 16 bits).
static inline __m128i premultiply_two(__m128i v) {
    const __m128i colour_lanes = _mm_set_epi16(0, -1, -1, -1, 0, -1, -1, -1);
    const __m128i alpha_factor = _mm_set_epi16(255, 0, 0, 0, 255, 0, 0, 0);
    __m128i a = _mm_shufflehi_epi16(_mm_shufflelo_epi16(v, 0xFF), 0xFF);
    __m128i factor = _mm_or_si128(_mm_and_si128(a, colour_lanes), alpha_factor);
    return _mm_xor_si128(_mm_mullo_epi16(v, factor), _mm_set1_epi16((short)0x8000));
}
#endif

void sp_resample_expand_rgba(const uint8_t *row, int pixels, int16_t *out) {
    int k = 0;
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128();
    for (; k + 4 < pixels; k += 4) {
        __m128i bytes = _mm_loadu_si128((const __m128i *)(row + 4 * k));
        int32_t next;
        memcpy(&next, row + 4 * (k + 4), 4);
        __m128i s01 = premultiply_two(_mm_unpacklo_epi8(bytes, zero));
        __m128i s23 = premultiply_two(_mm_unpackhi_epi8(bytes, zero));
        __m128i s4 = premultiply_two(_mm_unpacklo_epi8(_mm_cvtsi32_si128(next), zero));
        __m128i s12 = _mm_castpd_si128(_mm_shuffle_pd(_mm_castsi128_pd(s01), _mm_castsi128_pd(s23), 1));
        __m128i s34 = _mm_castpd_si128(_mm_shuffle_pd(_mm_castsi128_pd(s23), _mm_castsi128_pd(s4), 1));
        _mm_storeu_si128((__m128i *)(out + 8 * k), _mm_unpacklo_epi16(s01, s12));
        _mm_storeu_si128((__m128i *)(out + 8 * (k + 1)), _mm_unpackhi_epi16(s01, s12));
        _mm_storeu_si128((__m128i *)(out + 8 * (k + 2)), _mm_unpacklo_epi16(s23, s34));
        _mm_storeu_si128((__m128i *)(out + 8 * (k + 3)), _mm_unpackhi_epi16(s23, s34));
    }
#endif
    for (; k < pixels; k++) {
        int16_t here[4], next[4] = {-RGBA_BIAS, -RGBA_BIAS, -RGBA_BIAS, -RGBA_BIAS};
        premultiply_pixel(row + 4 * k, here);
        if (k + 1 < pixels) premultiply_pixel(row + 4 * (k + 1), next);
        for (int c = 0; c < 4; c++) {
            out[8 * k + 2 * c] = here[c];
            out[8 * k + 2 * c + 1] = next[c];
        }
    }
}

void sp_resample_horizontal_rgba(const int16_t *pairs, int origin, const int32_t *starts, const int32_t *counts,
                                 const int16_t *weight_pairs, int pair_stride, int outputs, float *out) {
    // Sums of samples on the c × a scale with 14 weight bits, to c × a / 255 on the 0...255 scale.
    const float scale = 1.0f / (255.0f * (float)(1 << SP_RESAMPLE_WEIGHT_BITS));
    for (int i = 0; i < outputs; i++) {
        const int16_t *p = pairs + 8L * (starts[i] - origin);
        const int16_t *w = weight_pairs + 8L * i * pair_stride;
        int count = (counts[i] + 1) / 2;
#if defined(__SSE2__)
        __m128i acc = _mm_set1_epi32(RGBA_BIAS_SUM);
        for (int j = 0; j < count; j++) {
            __m128i samples = _mm_loadu_si128((const __m128i *)(p + 16 * j));
            __m128i weights = _mm_loadu_si128((const __m128i *)(w + 8 * j));
            acc = _mm_add_epi32(acc, _mm_madd_epi16(samples, weights));
        }
        _mm_storeu_ps(out + 4 * i, _mm_mul_ps(_mm_cvtepi32_ps(acc), _mm_set1_ps(scale)));
#else
        int32_t sums[4] = {RGBA_BIAS_SUM, RGBA_BIAS_SUM, RGBA_BIAS_SUM, RGBA_BIAS_SUM};
        for (int j = 0; j < count; j++) {
            const int16_t *e = p + 16 * j, *k = w + 8 * j;
            for (int c = 0; c < 4; c++) sums[c] += e[2 * c] * k[2 * c] + e[2 * c + 1] * k[2 * c + 1];
        }
        for (int c = 0; c < 4; c++) out[4 * i + c] = (float)sums[c] * scale;
#endif
    }
}

static inline uint8_t float_to_byte(float v) {
    if (v <= 0) return 0;
    if (v >= 255) return 255;
    return (uint8_t)(v + 0.5f);
}

/// One pixel's sums to bytes, as `ResampleKernels.store` (Swift's max(x, 0) is `0 >= x ? 0 : x`).
static inline void store_pixel(const float s[4], uint8_t *out) {
    float alpha = 0 >= s[3] ? 0 : s[3];
    alpha = 255 < alpha ? 255 : alpha;
    float scale = alpha > 0.001f ? 255 / alpha : 0;
    out[0] = float_to_byte(s[0] * scale);
    out[1] = float_to_byte(s[1] * scale);
    out[2] = float_to_byte(s[2] * scale);
    out[3] = float_to_byte(alpha);
}

#if defined(__SSE2__)
/// store_pixel on one pixel's sums in a vector: the four bytes as int32 lanes.
static inline __m128i store_pixel_sse(__m128 v) {
    const __m128 zero = _mm_setzero_ps(), top = _mm_set1_ps(255);
    const __m128 colour_lanes = _mm_castsi128_ps(_mm_set_epi32(0, -1, -1, -1));
    __m128 alpha = _mm_min_ps(_mm_max_ps(_mm_shuffle_ps(v, v, _MM_SHUFFLE(3, 3, 3, 3)), zero), top);
    __m128 scale = _mm_and_ps(_mm_cmpgt_ps(alpha, _mm_set1_ps(0.001f)), _mm_div_ps(top, alpha));
    __m128 values = _mm_or_ps(_mm_and_ps(colour_lanes, _mm_mul_ps(v, scale)), _mm_andnot_ps(colour_lanes, alpha));
    values = _mm_min_ps(_mm_max_ps(values, zero), top);
    return _mm_cvttps_epi32(_mm_add_ps(values, _mm_set1_ps(0.5f)));
}
#endif

void sp_resample_vertical_rgba(const float *const *rows, const float *weights, int taps, int pixels, uint8_t *out) {
    int x = 0;
#if defined(__SSE2__)
    for (; x + 4 <= pixels; x += 4) {
        __m128 s0 = _mm_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        for (int t = 0; t < taps; t++) {
            __m128 w = _mm_set1_ps(weights[t]);
            const float *r = rows[t] + 4 * x;
            s0 = _mm_add_ps(s0, _mm_mul_ps(w, _mm_loadu_ps(r)));
            s1 = _mm_add_ps(s1, _mm_mul_ps(w, _mm_loadu_ps(r + 4)));
            s2 = _mm_add_ps(s2, _mm_mul_ps(w, _mm_loadu_ps(r + 8)));
            s3 = _mm_add_ps(s3, _mm_mul_ps(w, _mm_loadu_ps(r + 12)));
        }
        __m128i low = _mm_packs_epi32(store_pixel_sse(s0), store_pixel_sse(s1));
        __m128i high = _mm_packs_epi32(store_pixel_sse(s2), store_pixel_sse(s3));
        _mm_storeu_si128((__m128i *)(out + 4 * x), _mm_packus_epi16(low, high));
    }
#endif
    for (; x < pixels; x++) {
        float sums[4] = {0, 0, 0, 0};
        for (int t = 0; t < taps; t++) {
            const float *r = rows[t] + 4 * x;
            for (int c = 0; c < 4; c++) sums[c] += weights[t] * r[c];
        }
        store_pixel(sums, out + 4 * x);
    }
}
