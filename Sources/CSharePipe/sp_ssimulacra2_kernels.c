// SSIMULACRA2's row kernels (sp_ssimulacra2_private.h): sp_ssimulacra2_kernels.h written once over a vector of W
// floats and included once per instruction set, plain C (W 1: every architecture, and the tails of rows), SSE2
// (W 4: every x86-64) and AVX2 (W 8: where cpuid reports it); the averaging of pairs for the next scale and the
// sRGB table's lookups, vectorised by hand. The blurs and the XYB conversion give the same floats on every path
// (no fused multiply-add), the pooled sums are added in another order. The 8-bit samples become linear through
// table lookups, under AVX2 put together into vectors (on the AMD EPYC of the benchmarks AVX2's gathers took 1.4
// times as long as plain lookups, and lookups stored as vectors 0.77 times, in a microbenchmark).
#include "sp_ssimulacra2_private.h"

#include <math.h>
#include <stdint.h>
#include <string.h>
#if SP_SSIM_X86
#include <immintrin.h>
#endif

// The opsin absorbance matrix and bias of XYB (libjxl's opsin parameters).
static const float opsin[3][3] = {
    {0.30f, 0.622f, 0.078f},
    {0.23f, 0.692f, 0.078f},
    {0.24342268924547819f, 0.20476744424496821f, 0.55180986650955360f},
};
static const float opsin_bias = SP_SSIM_OPSIN_BIAS;

// The cube root's first guess from the bits (within a few percent; the kernels' Halley step brings it within
// 3e-5).
static inline float cube_root_guess(float value) {
    union {
        float f;
        uint32_t u;
    } bits = {value};
    bits.u = bits.u / 3 + 709921077u;
    return bits.f;
}

#define KERNEL(name) name##_plain
#define KERNEL_ATTR
#define W 1
#define vf float
#define LD(p) (*(p))
#define ST(p, v) (*(p) = (v))
#define SET(x) ((float)(x))
#define ADD(a, b) ((a) + (b))
#define SUB(a, b) ((a) - (b))
#define MUL(a, b) ((a) * (b))
#define DIV(a, b) ((a) / (b))
#define MAX(a, b) fmaxf(a, b)
#define ABS(a) fabsf(a)
#define CBRT_GUESS(v) cube_root_guess(v)
#define HSUM(v) (v)
#include "sp_ssimulacra2_kernels.h"

#if SP_SSIM_X86
static inline __m128 cube_root_guess4(__m128 value) {
    const __m128i bits = _mm_castps_si128(value);
    const __m128i guess = _mm_cvttps_epi32(_mm_mul_ps(_mm_cvtepi32_ps(bits), _mm_set1_ps(1.0f / 3.0f)));
    return _mm_castsi128_ps(_mm_add_epi32(guess, _mm_set1_epi32(709921077)));
}

static inline float sum4(__m128 value) {
    float lanes[4];
    _mm_storeu_ps(lanes, value);
    return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}

#define KERNEL(name) name##_sse2
#define KERNEL_ATTR
#define W 4
#define vf __m128
#define LD _mm_loadu_ps
#define ST _mm_storeu_ps
#define SET _mm_set1_ps
#define ADD _mm_add_ps
#define SUB _mm_sub_ps
#define MUL _mm_mul_ps
#define DIV _mm_div_ps
#define MAX _mm_max_ps
#define ABS(a) _mm_and_ps(a, _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff)))
#define CBRT_GUESS cube_root_guess4
#define HSUM sum4
#include "sp_ssimulacra2_kernels.h"

__attribute__((target("avx2"))) static inline __m256 cube_root_guess8(__m256 value) {
    const __m256i bits = _mm256_castps_si256(value);
    const __m256i guess = _mm256_cvttps_epi32(_mm256_mul_ps(_mm256_cvtepi32_ps(bits), _mm256_set1_ps(1.0f / 3.0f)));
    return _mm256_castsi256_ps(_mm256_add_epi32(guess, _mm256_set1_epi32(709921077)));
}

__attribute__((target("avx2"))) static inline float sum8(__m256 value) {
    float lanes[8];
    _mm256_storeu_ps(lanes, value);
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

#define KERNEL(name) name##_avx2
#define KERNEL_ATTR __attribute__((target("avx2")))
#define W 8
#define vf __m256
#define LD _mm256_loadu_ps
#define ST _mm256_storeu_ps
#define SET _mm256_set1_ps
#define ADD _mm256_add_ps
#define SUB _mm256_sub_ps
#define MUL _mm256_mul_ps
#define DIV _mm256_div_ps
#define MAX _mm256_max_ps
#define ABS(a) _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)))
#define CBRT_GUESS cube_root_guess8
#define HSUM sum8
#include "sp_ssimulacra2_kernels.h"
#endif

// Pairs of samples averaged: out[i] = 0.5 (in[2i] + in[2i + 1]), or with `accumulate` the average of that and
// out[i]. The vector versions add and scale in the same order (the same floats).
static int halve_pairs_plain(const float *restrict in, float *restrict out, int pairs, int accumulate) {
    if (accumulate) {
        for (int i = 0; i < pairs; i++) out[i] = 0.5f * (out[i] + 0.5f * (in[2 * i] + in[2 * i + 1]));
    } else {
        for (int i = 0; i < pairs; i++) out[i] = 0.5f * (in[2 * i] + in[2 * i + 1]);
    }
    return pairs;
}

// A row of 8-bit RGB to linear planes through `table`.
static int rgb_to_linear_plain(const uint8_t *in, const float *table, float *r, float *g, float *b, int width) {
    for (int i = 0; i < width; i++) {
        const uint8_t *pixel = in + (size_t)i * 3;
        r[i] = table[pixel[0]];
        g[i] = table[pixel[1]];
        b[i] = table[pixel[2]];
    }
    return width;
}

#if SP_SSIM_X86
static int halve_pairs_sse2(const float *in, float *out, int pairs, int accumulate) {
    const __m128 half = _mm_set1_ps(0.5f);
    int i = 0;
    for (; i + 4 <= pairs; i += 4) {
        const __m128 a = _mm_loadu_ps(in + 2 * i), b = _mm_loadu_ps(in + 2 * i + 4);
        const __m128 even = _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
        const __m128 odd = _mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
        __m128 value = _mm_mul_ps(half, _mm_add_ps(even, odd));
        if (accumulate) value = _mm_mul_ps(half, _mm_add_ps(_mm_loadu_ps(out + i), value));
        _mm_storeu_ps(out + i, value);
    }
    return i;
}

// 8 pixels of 8-bit RGB to linear planes at a time: 24 plain lookups stored as 3 vectors (the same floats).
__attribute__((target("avx2"))) static int rgb_to_linear_avx2(const uint8_t *in, const float *t, float *r, float *g,
                                                              float *b, int width) {
    int i = 0;
    for (; i + 8 <= width; i += 8) {
        const uint8_t *p = in + 3 * (size_t)i;
        _mm256_storeu_ps(r + i, _mm256_setr_ps(t[p[0]], t[p[3]], t[p[6]], t[p[9]], t[p[12]], t[p[15]], t[p[18]],
                                               t[p[21]]));
        _mm256_storeu_ps(g + i, _mm256_setr_ps(t[p[1]], t[p[4]], t[p[7]], t[p[10]], t[p[13]], t[p[16]], t[p[19]],
                                               t[p[22]]));
        _mm256_storeu_ps(b + i, _mm256_setr_ps(t[p[2]], t[p[5]], t[p[8]], t[p[11]], t[p[14]], t[p[17]], t[p[20]],
                                               t[p[23]]));
    }
    return i;
}

__attribute__((target("avx2"))) static int halve_pairs_avx2(const float *in, float *out, int pairs, int accumulate) {
    const __m256 half = _mm256_set1_ps(0.5f);
    int i = 0;
    for (; i + 8 <= pairs; i += 8) {
        const __m256 a = _mm256_loadu_ps(in + 2 * i), b = _mm256_loadu_ps(in + 2 * i + 8);
        // Within each 128-bit lane, then the lanes put in order: a's pairs, then b's.
        const __m256 even = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
        const __m256 odd = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
        const __m256 sum = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_add_ps(even, odd)), 0xd8));
        __m256 value = _mm256_mul_ps(half, sum);
        if (accumulate) value = _mm256_mul_ps(half, _mm256_add_ps(_mm256_loadu_ps(out + i), value));
        _mm256_storeu_ps(out + i, value);
    }
    return i;
}

#endif

const sp_ssimulacra2_kernels sp_ssimulacra2_plain = {to_xyb_plain, blur_horizontal_plain, blur_vertical_plain,
                                                     blur_vertical_pair_plain, pool_plain, halve_pairs_plain,
                                                     rgb_to_linear_plain};

sp_ssimulacra2_kernels sp_ssimulacra2_chosen_kernels(void) {
#if SP_SSIM_X86
    if (__builtin_cpu_supports("avx2")) {
        return (sp_ssimulacra2_kernels){to_xyb_avx2, blur_horizontal_avx2, blur_vertical_avx2,
                                        blur_vertical_pair_avx2, pool_avx2, halve_pairs_avx2, rgb_to_linear_avx2};
    }
    return (sp_ssimulacra2_kernels){to_xyb_sse2, blur_horizontal_sse2, blur_vertical_sse2, blur_vertical_pair_sse2,
                                    pool_sse2,   halve_pairs_sse2,     rgb_to_linear_plain};
#else
    return sp_ssimulacra2_plain;
#endif
}
