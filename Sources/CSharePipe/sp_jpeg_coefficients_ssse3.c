// The SSSE3 twin of the compact store's block codec (sp_jpeg_coefficients_blocks.h): the same bytes, a block
// row at a time. Only x86-64 builds with GCC or Clang compile it; the store calls it only where cpuid reports
// SSSE3 and POPCNT (sp_coef_vector_available).
#include "sp_jpeg_coefficients_blocks.h"

#if SP_COEF_VECTOR
#include <cpuid.h>
#include <pthread.h>
#include <tmmintrin.h>

// MARK: - The SSSE3 block codec
//
// The same encoding, a block row (8 positions, one map byte) at a time: PSHUFB packs a row's kept non-zero
// values together (encode) or puts them back at their positions with zeros between (decode), through tables
// indexed by the row's map byte. Decoding writes all 64 coefficients of the block, so a window block needs no
// clearing first. Both read or write up to 16 bytes past a row's last value: they run only while a block's
// most bytes (SP_COEF_VECTOR_REACH) fit before the end of the row's buffer, the plain code
// (sp_jpeg_coefficients_blocks.h) after that.

typedef struct {
    uint8_t count[256];             // set bits of a byte
    __m128i pack_bytes[256];        // the bytes whose bit is set, first
    __m128i unpack_bytes[256];      // the first bytes back at the set bits' places, zero elsewhere
    __m128i pack_words[256];        // the same for 16-bit lanes
    __m128i unpack_words[256];
    __m128i ones[256];              // 16-bit 1 at the set bits' lanes
} sp_coef_tables;

static sp_coef_tables vector_tables;
static int vector_usable;
static pthread_once_t vector_once = PTHREAD_ONCE_INIT;

static void vector_setup(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & bit_SSSE3) || !(ecx & bit_POPCNT)) return;
    for (int mask = 0; mask < 256; mask++) {
        uint8_t pack_bytes[16], unpack_bytes[16], pack_words[16], unpack_words[16];
        int16_t ones[8];
        memset(pack_bytes, 0x80, 16);
        memset(unpack_bytes, 0x80, 16);
        memset(pack_words, 0x80, 16);
        memset(unpack_words, 0x80, 16);
        int rank = 0;
        for (int lane = 0; lane < 8; lane++) {
            ones[lane] = (int16_t)((mask >> lane) & 1);
            if (!((mask >> lane) & 1)) continue;
            pack_bytes[rank] = (uint8_t)lane;
            unpack_bytes[lane] = (uint8_t)rank;
            pack_words[2 * rank] = (uint8_t)(2 * lane);
            pack_words[2 * rank + 1] = (uint8_t)(2 * lane + 1);
            unpack_words[2 * lane] = (uint8_t)(2 * rank);
            unpack_words[2 * lane + 1] = (uint8_t)(2 * rank + 1);
            rank++;
        }
        vector_tables.count[mask] = (uint8_t)rank;
        vector_tables.pack_bytes[mask] = _mm_loadu_si128((const __m128i *)pack_bytes);
        vector_tables.unpack_bytes[mask] = _mm_loadu_si128((const __m128i *)unpack_bytes);
        vector_tables.pack_words[mask] = _mm_loadu_si128((const __m128i *)pack_words);
        vector_tables.unpack_words[mask] = _mm_loadu_si128((const __m128i *)unpack_words);
        vector_tables.ones[mask] = _mm_loadu_si128((const __m128i *)ones);
    }
    vector_usable = 1;
}

int sp_coef_vector_available(void) {
    pthread_once(&vector_once, vector_setup);
    return vector_usable;
}

// encode_block's bytes; `out` has SP_COEF_VECTOR_REACH bytes of room.
__attribute__((target("ssse3,popcnt"))) static inline uint8_t *encode_block_vector(uint8_t *out, const JCOEF *block,
                                                                                  uint64_t map, uint64_t kept) {
    __m128i map_bytes = _mm_cvtsi64_si128((long long)map);
    unsigned int summary = ~(unsigned int)_mm_movemask_epi8(_mm_cmpeq_epi8(map_bytes, _mm_setzero_si128())) & 0xFF;
    *out++ = (uint8_t)summary;
    _mm_storel_epi64((__m128i *)out, _mm_shuffle_epi8(map_bytes, vector_tables.pack_bytes[summary]));
    out += vector_tables.count[summary];
    uint64_t values = map & kept;
    // Rows past the last with a value to keep add nothing.
    for (const JCOEF *source = block; values != 0; values >>= 8, source += DCTSIZE) {
        unsigned int lanes = (unsigned int)values & 0xFF;
        __m128i coefficients = _mm_loadu_si128((const __m128i *)source);
        _mm_storeu_si128((__m128i *)out, _mm_shuffle_epi8(coefficients, vector_tables.pack_words[lanes]));
        out += 2 * vector_tables.count[lanes];
    }
    return out;
}

// decode_block's result, every coefficient of the block written; `in` has SP_COEF_VECTOR_REACH bytes.
__attribute__((target("ssse3,popcnt"))) static inline const uint8_t *decode_block_vector(const uint8_t *in,
                                                                                        JCOEF *block, uint64_t kept,
                                                                                        uint64_t *map_out) {
    unsigned int summary = *in++;
    __m128i packed = _mm_loadl_epi64((const __m128i *)in);
    uint64_t map = (uint64_t)_mm_cvtsi128_si64(_mm_shuffle_epi8(packed, vector_tables.unpack_bytes[summary]));
    in += vector_tables.count[summary];
    uint64_t values = map & kept, ones = map & ~kept;
    // The block cleared, then its rows up to the last with a non-zero coefficient.
    const __m128i zero = _mm_setzero_si128();
    for (int row = 0; row < DCTSIZE; row++) _mm_storeu_si128((__m128i *)(block + row * DCTSIZE), zero);
    for (JCOEF *target = block; (values | ones) != 0; values >>= 8, ones >>= 8, target += DCTSIZE) {
        unsigned int lanes = (unsigned int)values & 0xFF;
        __m128i coefficients = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)in), vector_tables.unpack_words[lanes]);
        coefficients = _mm_or_si128(coefficients, vector_tables.ones[ones & 0xFF]);
        _mm_storeu_si128((__m128i *)target, coefficients);
        in += 2 * vector_tables.count[lanes];
    }
    *map_out = map;
    return in;
}

// compact_row's first loop: each block's non-zero map (into `maps`) and DC (into `dc`, if any); returns the
// row's encoded size and sets *any when some block has a map bit in `wanted`.
__attribute__((target("ssse3,popcnt"))) size_t sp_coef_measure_row_vector(JBLOCKROW blocks, uint64_t *maps, JCOEF *dc,
                                                                        JDIMENSION count, uint64_t wanted,
                                                                        uint64_t kept, int *any) {
    size_t size = 0;
    uint64_t seen = 0;
    const __m128i zero = _mm_setzero_si128();
    for (JDIMENSION b = 0; b < count; b++) {
        uint64_t map = nonzero_map(blocks[b]);
        maps[b] = map;
        if (dc != NULL) dc[b] = blocks[b][0];
        map &= wanted;
        seen |= map;
        unsigned int zero_bytes =
            (unsigned int)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_cvtsi64_si128((long long)map), zero)) & 0xFF;
        size += 1 + 8 - (size_t)__builtin_popcount(zero_bytes) + 2 * (size_t)__builtin_popcountll(map & kept);
    }
    *any = seen != 0;
    return size;
}

// compact_row's second loop: the blocks encoded into [out, end).
__attribute__((target("ssse3,popcnt"))) void sp_coef_encode_row_vector(uint8_t *out, const uint8_t *end,
                                                                     JBLOCKROW blocks, const uint64_t *maps,
                                                                     JDIMENSION count, uint64_t wanted,
                                                                     uint64_t kept) {
    for (JDIMENSION b = 0; b < count; b++) {
        if ((size_t)(end - out) >= SP_COEF_VECTOR_REACH) out = encode_block_vector(out, blocks[b], maps[b] & wanted, kept);
        else out = encode_block(out, blocks[b], maps[b] & wanted, kept);
    }
}

// expand_row's decode of a stored row [in, end) into its window blocks (the DC after it, by the caller).
__attribute__((target("ssse3,popcnt"))) void sp_coef_expand_row_vector(const uint8_t *in, const uint8_t *end,
                                                                     JBLOCKROW blocks, uint64_t *maps,
                                                                     JDIMENSION count, uint64_t kept) {
    for (JDIMENSION b = 0; b < count; b++) {
        if ((size_t)(end - in) >= SP_COEF_VECTOR_REACH) {
            in = decode_block_vector(in, blocks[b], kept, &maps[b]);
        } else {
            for (uint64_t bits = maps[b]; bits != 0; bits &= bits - 1) blocks[b][__builtin_ctzll(bits)] = 0;
            in = decode_block(in, blocks[b], kept, &maps[b]);
        }
    }
}
#endif
