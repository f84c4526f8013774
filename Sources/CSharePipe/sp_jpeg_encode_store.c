// The compressor's compact coefficient store (see sp_jpeg_encode_store.h).
#include "sp_jpeg_encode_store.h"
#include "sp_jpeg.h"

#include <jerror.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct sp_enc_array {
    sp_enc_array *next;
    JDIMENSION blocks_per_row;
    JDIMENSION rows;
    JDIMENSION max_access;
    uint8_t **compact;          // per block row: the compacted row (malloc'ed), NULL until first written
    JBLOCKROW *window_rows;     // max_access row pointers into `window`
    JBLOCKROW window;           // max_access × blocks_per_row full blocks
    JDIMENSION window_start;
    JDIMENSION window_count;    // 0: nothing expanded
    int window_dirty;           // the window was handed out writable: compact it before it moves
};

static sp_enc_store *store_of(j_common_ptr cinfo) { return (sp_enc_store *)cinfo->client_data; }

// sp_jpeg_encode_store_fail_allocation: this thread's allocations until the failing one (0: none fails).
static _Thread_local int allocations_until_failure = 0;

void sp_jpeg_encode_store_fail_allocation(int nth) { allocations_until_failure = nth > 0 ? nth : 0; }

static void *store_alloc(j_common_ptr cinfo, sp_enc_store *store, size_t bytes) {
    int fail = allocations_until_failure > 0 && --allocations_until_failure == 0;
    void *memory = fail ? NULL : malloc(bytes);
    if (memory == NULL) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 11);
    store->bytes += bytes;
    if (store->bytes > store->peak_bytes) store->peak_bytes = store->bytes;
    return memory;
}

static void store_free(sp_enc_store *store, void *memory, size_t bytes) {
    if (memory == NULL) return;
    free(memory);
    store->bytes -= bytes;
}

// A compacted row: a 32-bit header, then per block a little-endian 64-bit map of the non-zero coefficients and
// their values. The header's low 31 bits are the row's size in bytes; its top bit says the values are 16-bit.
// Otherwise each value is one signed byte, or for a value outside −127…127 the byte −128 and the value's two
// bytes: quantised coefficients past the DC and the lowest frequencies are almost all small, so a row takes
// about half the bytes; a row where that would be larger (many large values) keeps 16-bit values, so a row is
// never larger than a map and 16-bit values (the bound MemoryEstimate prices).
#define SP_ENC_ESCAPE (-128)
#define SP_ENC_WIDE 0x80000000u

static size_t compact_size(const uint8_t *row) {
    uint32_t header;
    memcpy(&header, row, sizeof header);
    return header & ~SP_ENC_WIDE;
}

static void compact_row(j_common_ptr cinfo, sp_enc_store *store, sp_enc_array *array, JDIMENSION row,
                        const JBLOCK *blocks) {
    size_t nonzero = 0, escaped = 0;
    for (JDIMENSION b = 0; b < array->blocks_per_row; b++) {
        for (int k = 0; k < DCTSIZE2; k++) {
            JCOEF value = blocks[b][k];
            nonzero += value != 0;
            escaped += value < -127 || value > 127;
        }
    }
    int wide = escaped * sizeof(JCOEF) > nonzero;   // bytes with escapes: nonzero + 2 escaped; wide: 2 nonzero
    size_t values_size = wide ? nonzero * sizeof(JCOEF) : nonzero + escaped * sizeof(JCOEF);
    size_t size = sizeof(uint32_t) + (size_t)array->blocks_per_row * 8 + values_size;
    uint8_t *out = store_alloc(cinfo, store, size);
    uint32_t header = (uint32_t)size | (wide ? SP_ENC_WIDE : 0);
    memcpy(out, &header, sizeof header);
    uint8_t *p = out + sizeof(uint32_t);
    for (JDIMENSION b = 0; b < array->blocks_per_row; b++) {
        uint64_t mask = 0;
        uint8_t *values = p + 8;
        for (int k = 0; k < DCTSIZE2; k++) {
            JCOEF value = blocks[b][k];
            if (value == 0) continue;
            mask |= (uint64_t)1 << k;
            if (!wide && value >= -127 && value <= 127) {
                *values++ = (uint8_t)(int8_t)value;
                continue;
            }
            if (!wide) *values++ = (uint8_t)(int8_t)SP_ENC_ESCAPE;
            memcpy(values, &value, sizeof value);
            values += sizeof value;
        }
        memcpy(p, &mask, 8);
        p = values;
    }
    if (array->compact[row] != NULL) store_free(store, array->compact[row], compact_size(array->compact[row]));
    array->compact[row] = out;
}

static void expand_row(const sp_enc_array *array, JDIMENSION row, JBLOCK *blocks) {
    memset(blocks, 0, (size_t)array->blocks_per_row * sizeof(JBLOCK));
    const uint8_t *p = array->compact[row];
    if (p == NULL) return;
    uint32_t header;
    memcpy(&header, p, sizeof header);
    int wide = (header & SP_ENC_WIDE) != 0;
    p += sizeof(uint32_t);
    for (JDIMENSION b = 0; b < array->blocks_per_row; b++) {
        uint64_t mask;
        memcpy(&mask, p, 8);
        p += 8;
        while (mask != 0) {
            int k = __builtin_ctzll(mask);
            int8_t small = wide ? SP_ENC_ESCAPE : (int8_t)*p++;
            if (small == SP_ENC_ESCAPE) {
                memcpy(&blocks[b][k], p, sizeof(JCOEF));
                p += sizeof(JCOEF);
            } else {
                blocks[b][k] = small;
            }
            mask &= mask - 1;
        }
    }
}

static void flush_window(j_common_ptr cinfo, sp_enc_store *store, sp_enc_array *array) {
    if (array->window_dirty) {
        for (JDIMENSION i = 0; i < array->window_count; i++) {
            compact_row(cinfo, store, array, array->window_start + i, array->window_rows[i]);
        }
    }
    array->window_dirty = 0;
    array->window_count = 0;
}

static jvirt_barray_ptr request_virt_barray(j_common_ptr cinfo, int pool_id, boolean pre_zero,
                                            JDIMENSION blocks_per_row, JDIMENSION rows, JDIMENSION max_access) {
    (void)pre_zero;   // rows never written read back as zero blocks
    sp_enc_store *store = store_of(cinfo);
    if (pool_id != JPOOL_IMAGE) ERREXIT1(cinfo, JERR_BAD_POOL_ID, pool_id);
    // Sizes first, pointers as they are allocated: an allocation failing here (a longjmp) leaves an array
    // free_arrays can take apart.
    sp_enc_array *array = store_alloc(cinfo, store, sizeof(sp_enc_array));
    memset(array, 0, sizeof(*array));
    array->blocks_per_row = blocks_per_row;
    array->rows = rows;
    array->max_access = max_access;
    array->next = store->arrays;
    store->arrays = array;
    array->compact = store_alloc(cinfo, store, (size_t)rows * sizeof(uint8_t *));
    memset(array->compact, 0, (size_t)rows * sizeof(uint8_t *));
    array->window_rows = store_alloc(cinfo, store, (size_t)max_access * sizeof(JBLOCKROW));
    array->window = store_alloc(cinfo, store, (size_t)max_access * blocks_per_row * sizeof(JBLOCK));
    for (JDIMENSION i = 0; i < max_access; i++) array->window_rows[i] = array->window + (size_t)i * blocks_per_row;
    return (jvirt_barray_ptr)array;
}

static JBLOCKARRAY access_virt_barray(j_common_ptr cinfo, jvirt_barray_ptr pointer, JDIMENSION start_row,
                                      JDIMENSION num_rows, boolean writable) {
    sp_enc_store *store = store_of(cinfo);
    sp_enc_array *array = (sp_enc_array *)pointer;
    if (num_rows > array->max_access || start_row + num_rows > array->rows || num_rows == 0) {
        ERREXIT(cinfo, JERR_BAD_VIRTUAL_ACCESS);
    }
    if (array->window_count != num_rows || array->window_start != start_row) {
        flush_window(cinfo, store, array);
        for (JDIMENSION i = 0; i < num_rows; i++) expand_row(array, start_row + i, array->window_rows[i]);
        array->window_start = start_row;
        array->window_count = num_rows;
    }
    if (writable) array->window_dirty = 1;
    return array->window_rows;
}

static void free_arrays(sp_enc_store *store) {
    sp_enc_array *array = store->arrays;
    while (array != NULL) {
        sp_enc_array *next = array->next;
        for (JDIMENSION row = 0; array->compact != NULL && row < array->rows; row++) {
            if (array->compact[row] != NULL) {
                store_free(store, array->compact[row], compact_size(array->compact[row]));
            }
        }
        store_free(store, array->compact, (size_t)array->rows * sizeof(uint8_t *));
        store_free(store, array->window_rows, (size_t)array->max_access * sizeof(JBLOCKROW));
        store_free(store, array->window, (size_t)array->max_access * array->blocks_per_row * sizeof(JBLOCK));
        store_free(store, array, sizeof(sp_enc_array));
        array = next;
    }
    store->arrays = NULL;
}

static void free_pool(j_common_ptr cinfo, int pool_id) {
    sp_enc_store *store = store_of(cinfo);
    if (pool_id == JPOOL_IMAGE) free_arrays(store);
    store->base_free_pool(cinfo, pool_id);
}

static void self_destruct(j_common_ptr cinfo) {
    sp_enc_store *store = store_of(cinfo);
    free_arrays(store);
    store->base_self_destruct(cinfo);
}

void sp_enc_store_install(j_compress_ptr cinfo, sp_enc_store *store) {
    memset(store, 0, sizeof(*store));
    struct jpeg_memory_mgr *mem = cinfo->mem;
    store->base_request_virt_barray = mem->request_virt_barray;
    store->base_free_pool = mem->free_pool;
    store->base_self_destruct = mem->self_destruct;
    cinfo->client_data = store;
    mem->request_virt_barray = request_virt_barray;
    mem->access_virt_barray = access_virt_barray;
    mem->free_pool = free_pool;
    mem->self_destruct = self_destruct;
}
