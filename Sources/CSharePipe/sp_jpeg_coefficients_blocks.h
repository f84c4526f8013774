// The compact store's block encoding (private to the shim), shared by its portable code
// (sp_jpeg_coefficients.c) and its SSSE3 twin (sp_jpeg_coefficients_ssse3.c), which encodes and decodes the
// same bytes a block row at a time where the CPU has SSSE3 and POPCNT.
#ifndef SP_JPEG_COEFFICIENTS_BLOCKS_H
#define SP_JPEG_COEFFICIENTS_BLOCKS_H

#include "sp_jpeg_coefficients.h"

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// The SSSE3 block codec (sp_jpeg_coefficients_ssse3.c): compiled for SSSE3 and POPCNT function by function
// and used only where the CPU has them (cpuid), so the shim still runs on any x86-64.
#define SP_COEF_VECTOR 1
#else
#define SP_COEF_VECTOR 0
#endif

// The most bytes one encoded block takes, plus the 16 the SSSE3 codec may read or write past its last value.
#define SP_COEF_VECTOR_REACH (1 + 8 + 2 * DCTSIZE2 + 16)

// MARK: - Blocks
//
// One block, encoded: a byte saying which of the 8 bytes of its 64-bit non-zero map are non-zero, those
// bytes, then the values (int16, native order) of the non-zero kept coefficients in natural order.

static inline uint64_t nonzero_map(const JCOEF *block) {
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128();
    uint64_t map = 0;
    for (int i = 0; i < 8; i += 2) {
        __m128i a = _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)(block + i * 8)), zero);
        __m128i b = _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)(block + i * 8 + 8)), zero);
        uint64_t zeros = (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_packs_epi16(a, b));
        map |= (~zeros & 0xFFFFull) << (i * 8);
    }
    return map;
#else
    uint64_t map = 0;
    for (int p = 0; p < DCTSIZE2; p++) map |= (uint64_t)(block[p] != 0) << p;
    return map;
#endif
}

// Bits counted without the POPCNT instruction (not in the x86-64 baseline, so __builtin_popcountll would
// become a library call).
static inline int count_bits(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
    return (int)((x * 0x0101010101010101ull) >> 56);
}

// Bit i set where byte i of map is non-zero.
static inline unsigned int nonzero_bytes(uint64_t map) {
    uint64_t x = map | (map >> 4);
    x |= x >> 2;
    x |= x >> 1;
    x &= 0x0101010101010101ull;
    return (unsigned int)((x * 0x0102040810204080ull) >> 56);
}

static inline size_t encoded_size(uint64_t map, uint64_t kept) {
    return 1 + (size_t)count_bits(nonzero_bytes(map)) + 2 * (size_t)count_bits(map & kept);
}

static inline uint8_t *encode_block(uint8_t *out, const JCOEF *block, uint64_t map, uint64_t kept) {
    unsigned int summary = nonzero_bytes(map);
    *out++ = (uint8_t)summary;
    for (unsigned int bytes = summary; bytes != 0; bytes &= bytes - 1) *out++ = (uint8_t)(map >> (8 * __builtin_ctz(bytes)));
    for (uint64_t values = map & kept; values != 0; values &= values - 1) {
        JCOEF value = block[__builtin_ctzll(values)];
        memcpy(out, &value, sizeof value);
        out += sizeof value;
    }
    return out;
}

// Fills a zeroed block; returns the byte after it and sets *map to its non-zero map.
static inline const uint8_t *decode_block(const uint8_t *in, JCOEF *block, uint64_t kept, uint64_t *map_out) {
    unsigned int summary = *in++;
    uint64_t map = 0;
    for (unsigned int bytes = summary; bytes != 0; bytes &= bytes - 1) map |= (uint64_t)(*in++) << (8 * __builtin_ctz(bytes));
    for (uint64_t bits = map; bits != 0; bits &= bits - 1) {
        int position = __builtin_ctzll(bits);
        if ((kept >> position) & 1) {
            memcpy(&block[position], in, sizeof(JCOEF));
            in += sizeof(JCOEF);
        } else {
            block[position] = 1;   // non-zero, value never read
        }
    }
    *map_out = map;
    return in;
}

#if SP_COEF_VECTOR
// Whether the CPU runs the SSSE3 codec (checked once).
int sp_coef_vector_available(void);
// compact_row's first loop: each block's non-zero map (into `maps`) and DC (into `dc`, if any); returns the
// row's encoded size and sets *any when some block has a map bit in `wanted`.
size_t sp_coef_measure_row_vector(JBLOCKROW blocks, uint64_t *maps, JCOEF *dc, JDIMENSION count, uint64_t wanted,
                                  uint64_t kept, int *any);
// compact_row's second loop: the blocks encoded into [out, end).
void sp_coef_encode_row_vector(uint8_t *out, const uint8_t *end, JBLOCKROW blocks, const uint64_t *maps,
                               JDIMENSION count, uint64_t wanted, uint64_t kept);
// expand_row's decode of a stored row [in, end) into its window blocks (the DC after it, by the caller).
void sp_coef_expand_row_vector(const uint8_t *in, const uint8_t *end, JBLOCKROW blocks, uint64_t *maps,
                               JDIMENSION count, uint64_t kept);
#else
static inline int sp_coef_vector_available(void) { return 0; }
#endif

#endif
