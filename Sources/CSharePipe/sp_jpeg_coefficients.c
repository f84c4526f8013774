// The compact coefficient store: see sp_jpeg_coefficients.h for what it keeps and why that is exact.
// Its block encoding is in sp_jpeg_coefficients_blocks.h, the encoding's SSSE3 twin in sp_jpeg_coefficients_ssse3.c.
//
// libjpeg-turbo 2.1 facts the store relies on (jdcoefct.c, jdphuff.c, jdarith.c, jidctint.c, jidctred.c):
// - jinit_d_coef_controller requests one pre-zeroed array per component, in component order, padded to
//   whole MCUs, with a window of v_samp_factor block rows (5 × that for a progressive file, for smoothing).
// - consume_data accesses one iMCU row of a component writable per call; decompress_data and
//   decompress_smooth_data access rows read-only (smoothing: the previous, current and next rows).
// - The entropy decoders write coefficients by assignment (first scans) and, in refinement scans, read a
//   coefficient only to test it against zero (jdphuff `*thiscoef != 0`, jdarith `if (*thiscoef)`) or its sign
//   and correction bit, to change that same coefficient by ±2^Al, which never makes it zero (|value| stays
//   below 2^15). So for a coefficient the IDCT does not read, "non-zero" is all the history there is.
// - jpeg_idct_kxk (k = 3, 5, 6, 7) reads the top-left k×k coefficients; jpeg_idct_4x4 all but row and
//   column 4; jpeg_idct_2x2 rows and columns 0, 1, 3, 5, 7; jpeg_idct_1x1 the DC; 8×8 and the larger IDCTs
//   a chroma component gets beside a subsampled luma (10×10 … 16×16) read all 64.
// - Block smoothing (decompress_smooth_data) reads the DC of the neighbouring blocks and zigzag positions
//   0…9 of the block itself; those are always kept.
// Anything the store cannot place (an array that is not a component's coefficient array) keeps all 64.
// - A refinement scan (Ah > 0) reads the non-zero history of positions Ss…Se only (jdarith's EOB index search
//   may look below Ss, but only compares the result with positions ≥ Ss). Once every scan is known, a block
//   keeps in its map only the positions a later refinement scan of its component reads (plus those whose
//   values it keeps): after its last refinement, nothing.
// - Outside the band (see the header) a block keeps only its AC non-zero map: the DC is never read by the
//   entropy decoders (DC first scans add to their own last_dc_val, refinement ORs a bit in), the AC first
//   scans assign, and refinement only tests against zero (above).
#include "sp_jpeg_coefficients.h"
#include "sp_jpeg_private.h"
#include "sp_jpeg_band_skip.h"
#include "sp_jpeg_coefficients_blocks.h"

#include <jerror.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct sp_coef_array {
    sp_coef_array *next;
    JDIMENSION blocks_per_row;
    JDIMENSION rows;
    JDIMENSION max_access;
    JDIMENSION iMCU_rows;       // block rows per iMCU row (the component's v_samp_factor)
    JDIMENSION window_capacity; // rows the window can hold
    uint64_t kept;              // natural-order positions whose values are stored (inside the band)
    int bandable;               // a component's coefficient array: rows outside the band keep only a map
    int component;              // its component index (bandable arrays)
    int window_scan;            // the scan that last wrote the window (input_scan_number)
    JCOEF **row_dc;             // per block row inside the band: its blocks' DC (a DC scan touches nothing else)
    uint8_t **row_data;         // per block row: the encoded AC of its blocks, or NULL while all are zero
    uint32_t *row_length;
    uint32_t *row_capacity;
    uint64_t *window_maps;      // per window block: where it is non-zero (cleared there, not wholesale)
    JBLOCKARRAY window;         // window_capacity rows of full blocks, each allocated when first used (a
                                // complete file is never smoothed: its accesses need one iMCU row, not five)
    JDIMENSION window_start;   // first row in the window
    JDIMENSION window_rows;
    int window_valid;
    int window_dirty;
    int window_dc_only;         // the window holds current DC only (its AC is stale): a DC scan's access
};

// Natural-order positions of zigzag coefficients 0…9: what block smoothing reads of a block.
static const uint64_t smoothing_positions =
    (1ull << 0) | (1ull << 1) | (1ull << 8) | (1ull << 16) | (1ull << 9) | (1ull << 2) | (1ull << 3)
    | (1ull << 10) | (1ull << 17) | (1ull << 24);

static uint64_t square(int size, unsigned int row_and_column_set) {
    uint64_t positions = 0;
    for (int row = 0; row < DCTSIZE; row++) {
        for (int column = 0; column < DCTSIZE; column++) {
            int in = size > 0 ? (row < size && column < size)
                              : ((row_and_column_set >> row) & 1) && ((row_and_column_set >> column) & 1);
            if (in) positions |= 1ull << (row * DCTSIZE + column);
        }
    }
    return positions;
}

// The coefficients the IDCT for a component of this scaled size reads, plus smoothing's.
static uint64_t kept_positions(int scaled_size) {
    uint64_t idct;
    switch (scaled_size) {
    case 1: idct = 1; break;
    case 2: idct = square(0, 0xAB); break;                          // rows/columns 0, 1, 3, 5, 7
    case 3: case 5: case 6: case 7: idct = square(scaled_size, 0); break;
    case 4: idct = square(0, 0xEF); break;                          // all but row/column 4
    default: idct = ~0ull; break;
    }
    return idct | smoothing_positions;
}

static sp_coef_store *store_of(j_common_ptr cinfo) { return (sp_coef_store *)cinfo->client_data; }

// Whether block row `row` keeps its values (inside the band); outside it only its AC non-zero map.
static inline int row_kept(const sp_coef_store *store, const sp_coef_array *array, JDIMENSION row) {
    if (!array->bandable) return 1;
    JDIMENSION iMCU_row = row / array->iMCU_rows;
    return iMCU_row >= store->keep_start && iMCU_row < store->keep_end;
}

// Counts an allocation against the limit; past it the decode fails the way libjpeg's own arrays fail at
// max_memory_to_use (JERR_NO_BACKING_STORE), which the reader reports as the decoder memory limit.
static void count_bytes(j_common_ptr cinfo, long delta) {
    sp_coef_store *store = store_of(cinfo);
    store->bytes = (size_t)((long)store->bytes + delta);
    if (store->bytes > store->peak_bytes) store->peak_bytes = store->bytes;
    if (delta > 0 && store->max_bytes > 0 && (long)store->bytes > store->max_bytes) ERREXIT(cinfo, JERR_NO_BACKING_STORE);
}

static void *checked_calloc(j_common_ptr cinfo, size_t count, size_t size) {
    void *pointer = calloc(count == 0 ? 1 : count, size);
    if (pointer == NULL) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 90);
    return pointer;
}


// MARK: - Rows

// Stores window row `slot` as block row `row` (its DC in the DC plane, its AC encoded); leaves the slot's
// non-zero maps up to date.
static void compact_row(j_common_ptr cinfo, sp_coef_array *array, JDIMENSION row, JDIMENSION slot) {
    JBLOCKROW blocks = array->window[slot];
    uint64_t *maps = array->window_maps + (size_t)slot * array->blocks_per_row;
    JCOEF *dc = array->row_dc[row];   // NULL outside the band
    uint64_t kept = dc != NULL ? array->kept & ~1ull : 0;
    // The map bits worth keeping: the kept values' and the history later refinement scans read.
    sp_coef_store *store = store_of(cinfo);
    uint64_t history = ~0ull;
    if (store->later != NULL && array->bandable && array->window_scan >= 0 && array->window_scan < store->scan_capacity) {
        history = store->later[(size_t)array->window_scan * 4 + (size_t)array->component];
    }
    uint64_t wanted = kept | history;
    size_t size = 0;
    int any = 0;
#if SP_COEF_VECTOR
    if (store->vector) {
        size = sp_coef_measure_row_vector(blocks, maps, dc, array->blocks_per_row, wanted & ~1ull, kept, &any);
    } else
#endif
    for (JDIMENSION b = 0; b < array->blocks_per_row; b++) {
        uint64_t map = nonzero_map(blocks[b]);
        maps[b] = map;
        if (dc != NULL) dc[b] = blocks[b][0];
        map &= wanted & ~1ull;
        any |= map != 0;
        size += encoded_size(map, kept);
    }
    if (!any) size = 0;   // an all-zero row is stored as nothing
    if (size > UINT32_MAX) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 91);
    uint32_t capacity = array->row_capacity[row];
    if (size > capacity || size < capacity / 2) {
        uint8_t *data = NULL;
        if (size > 0) {
            data = realloc(array->row_data[row], size);
            if (data == NULL) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 92);
        } else {
            free(array->row_data[row]);
        }
        array->row_data[row] = data;
        array->row_capacity[row] = (uint32_t)size;
        count_bytes(cinfo, (long)size - (long)capacity);
    }
    array->row_length[row] = (uint32_t)size;
    if (size == 0) return;
    uint8_t *out = array->row_data[row];
#if SP_COEF_VECTOR
    if (store->vector) {
        sp_coef_encode_row_vector(out, out + size, blocks, maps, array->blocks_per_row, wanted & ~1ull, kept);
        return;
    }
#endif
    for (JDIMENSION b = 0; b < array->blocks_per_row; b++) out = encode_block(out, blocks[b], maps[b] & wanted & ~1ull, kept);
}

// Decodes block row `row` into window row `slot`, clearing only what the slot held non-zero before. Outside
// the band the AC non-zero coefficients come back as 1 and the DC as 0 (only the map is kept).
static void expand_row(sp_coef_array *array, JDIMENSION row, JDIMENSION slot, int vector) {
    JBLOCKROW blocks = array->window[slot];
    uint64_t *maps = array->window_maps + (size_t)slot * array->blocks_per_row;
    const JCOEF *dc = array->row_dc[row];
#if SP_COEF_VECTOR
    if (vector && array->row_length[row] != 0) {
        const uint8_t *in = array->row_data[row];
        sp_coef_expand_row_vector(in, in + array->row_length[row], blocks, maps, array->blocks_per_row,
                          dc != NULL ? array->kept : 0);
    } else
#else
    (void)vector;
#endif
    {
        for (JDIMENSION b = 0; b < array->blocks_per_row; b++) {
            for (uint64_t bits = maps[b]; bits != 0; bits &= bits - 1) blocks[b][__builtin_ctzll(bits)] = 0;
            maps[b] = 0;
        }
        if (array->row_length[row] != 0) {
            const uint8_t *in = array->row_data[row];
            uint64_t kept = dc != NULL ? array->kept : 0;
            for (JDIMENSION b = 0; b < array->blocks_per_row; b++) in = decode_block(in, blocks[b], kept, &maps[b]);
        }
    }
    if (dc == NULL) return;
    for (JDIMENSION b = 0; b < array->blocks_per_row; b++) {
        blocks[b][0] = dc[b];
        maps[b] |= (uint64_t)(dc[b] != 0);
    }
}

// A DC scan's window: only the DC of window row `slot` is made current (its AC stays whatever it was).
static void expand_dc(sp_coef_array *array, JDIMENSION row, JDIMENSION slot) {
    JBLOCKROW blocks = array->window[slot];
    uint64_t *maps = array->window_maps + (size_t)slot * array->blocks_per_row;
    const JCOEF *dc = array->row_dc[row];
    for (JDIMENSION b = 0; b < array->blocks_per_row; b++) {
        JCOEF value = dc != NULL ? dc[b] : 0;
        blocks[b][0] = value;
        maps[b] = (maps[b] & ~1ull) | (uint64_t)(value != 0);
    }
}

static void compact_dc(sp_coef_array *array, JDIMENSION row, JDIMENSION slot) {
    JBLOCKROW blocks = array->window[slot];
    uint64_t *maps = array->window_maps + (size_t)slot * array->blocks_per_row;
    JCOEF *dc = array->row_dc[row];
    if (dc == NULL) return;   // outside the band: the DC is not kept
    for (JDIMENSION b = 0; b < array->blocks_per_row; b++) {
        dc[b] = blocks[b][0];
        maps[b] = (maps[b] & ~1ull) | (uint64_t)(dc[b] != 0);
    }
}

// Turns block row `row` into a row outside the band: its DC freed, its encoded blocks rewritten in place
// without their values (the summary byte and map bytes stay).
static void drop_row(j_common_ptr cinfo, sp_coef_array *array, JDIMENSION row) {
    size_t dc_bytes = (size_t)array->blocks_per_row * sizeof(JCOEF);
    if (array->row_dc[row] == NULL) return;
    free(array->row_dc[row]);
    array->row_dc[row] = NULL;
    count_bytes(cinfo, -(long)dc_bytes);
    if (array->row_length[row] == 0) return;
    sp_coef_store *store = store_of(cinfo);
    if (store->skip != NULL && store->skip->active) {
        // No later scan of this decode reads the row (each stops at the band's end): not even its map stays.
        free(array->row_data[row]);
        array->row_data[row] = NULL;
        count_bytes(cinfo, -(long)array->row_capacity[row]);
        array->row_capacity[row] = 0;
        array->row_length[row] = 0;
        return;
    }
    uint64_t kept = array->kept & ~1ull;
    uint8_t *data = array->row_data[row], *out = data;
    const uint8_t *in = data;
    for (JDIMENSION b = 0; b < array->blocks_per_row; b++) {
        unsigned int summary = *in++;
        *out++ = (uint8_t)summary;
        uint64_t map = 0;
        for (unsigned int bytes = summary; bytes != 0; bytes &= bytes - 1) {
            uint8_t byte = *in++;
            map |= (uint64_t)byte << (8 * __builtin_ctz(bytes));
            *out++ = byte;
        }
        in += 2 * (size_t)count_bits(map & kept);
    }
    size_t size = (size_t)(out - data);
    uint32_t capacity = array->row_capacity[row];
    if (size < capacity / 2) {
        // A new chunk rather than shrinking in place: the old one freed whole can hold a growing row later,
        // where its tail alone would be a hole too small for one (the heap grew 25 % past the store without).
        uint8_t *smaller = malloc(size);
        if (smaller != NULL) {
            memcpy(smaller, data, size);
            free(data);
            array->row_data[row] = smaller;
            array->row_capacity[row] = (uint32_t)size;
            count_bytes(cinfo, (long)size - (long)capacity);
        }
    }
    array->row_length[row] = (uint32_t)size;
}

// While the store is over its budget, moves the band's last iMCU row out of the band (down to the minimal
// band). Called between accesses, never while a row is being compacted.
static void fit_budget(j_common_ptr cinfo) {
    sp_coef_store *store = store_of(cinfo);
    while (store->budget > 0 && (long)store->bytes > store->budget && store->keep_end > store->min_keep_end) {
        JDIMENSION iMCU_row = --store->keep_end;
        store->dropped = 1;
        for (sp_coef_array *array = store->arrays; array != NULL; array = array->next) {
            if (!array->bandable || array->row_dc == NULL) continue;
            JDIMENSION first = iMCU_row * array->iMCU_rows;
            for (JDIMENSION r = first; r < first + array->iMCU_rows && r < array->rows; r++) drop_row(cinfo, array, r);
        }
    }
}

static void release_arrays(j_common_ptr cinfo) {
    sp_coef_store *store = store_of(cinfo);
    sp_coef_array *array = store->arrays;
    while (array != NULL) {
        sp_coef_array *next = array->next;
        if (array->row_data != NULL) {
            for (JDIMENSION r = 0; r < array->rows; r++) free(array->row_data[r]);
        }
        if (array->row_dc != NULL) {
            for (JDIMENSION r = 0; r < array->rows; r++) free(array->row_dc[r]);
        }
        free(array->row_data);
        free(array->row_length);
        free(array->row_capacity);
        free(array->window_maps);
        free(array->row_dc);
        if (array->window != NULL) {
            for (JDIMENSION r = 0; r < array->window_capacity; r++) free(array->window[r]);
        }
        free(array->window);
        free(array);
        array = next;
    }
    store->arrays = NULL;
    store->requested = 0;
    store->bytes = 0;
}

// MARK: - Memory manager methods

static jvirt_barray_ptr store_request_virt_barray(j_common_ptr cinfo, int pool_id, boolean pre_zero,
                                                  JDIMENSION blocksperrow, JDIMENSION numrows, JDIMENSION maxaccess) {
    sp_coef_store *store = store_of(cinfo);
    if (pool_id != JPOOL_IMAGE || !cinfo->is_decompressor) {
        return store->base_request_virt_barray(cinfo, pool_id, pre_zero, blocksperrow, numrows, maxaccess);
    }
    j_decompress_ptr dinfo = (j_decompress_ptr)cinfo;
    sp_coef_array *array = checked_calloc(cinfo, 1, sizeof(sp_coef_array));
    array->blocks_per_row = blocksperrow;
    array->rows = numrows;
    array->max_access = maxaccess < numrows ? maxaccess : numrows;
    array->iMCU_rows = array->max_access;
    array->kept = ~0ull;
    int index = store->requested++;
    if (index < dinfo->num_components) {
        jpeg_component_info *component = &dinfo->comp_info[index];
        JDIMENSION wide = (JDIMENSION)((component->width_in_blocks + component->h_samp_factor - 1)
                                       / component->h_samp_factor * component->h_samp_factor);
        JDIMENSION high = (JDIMENSION)((component->height_in_blocks + component->v_samp_factor - 1)
                                       / component->v_samp_factor * component->v_samp_factor);
        if (wide == blocksperrow && high == numrows) {
            array->kept = kept_positions(component->DCT_scaled_size);
            array->iMCU_rows = (JDIMENSION)component->v_samp_factor;
            array->bandable = 1;
            array->component = index;
        }
    }
    // Appended, so the list is in request (component) order.
    sp_coef_array **last = &store->arrays;
    while (*last != NULL) last = &(*last)->next;
    *last = array;
    return (jvirt_barray_ptr)array;
}

static void store_realize_virt_arrays(j_common_ptr cinfo) {
    sp_coef_store *store = store_of(cinfo);
    store->base_realize_virt_arrays(cinfo);
    if (store->skip != NULL) {
        j_decompress_ptr dinfo = (j_decompress_ptr)cinfo;
        // Only the progressive Huffman decoder's state is known (not the sequential one of a multi-scan
        // baseline file, nor arithmetic coding's).
        if (cinfo->is_decompressor && dinfo->progressive_mode && !dinfo->arith_code) {
            sp_band_skip_attach(dinfo, store->skip, &store->keep_end);
        } else {
            store->skip->active = 0;
        }
    }
    for (sp_coef_array *array = store->arrays; array != NULL; array = array->next) {
        if (array->window != NULL) continue;
        // Smoothing's read-only accesses get one iMCU row beyond the request (see store_access_virt_barray).
        array->window_capacity = array->max_access + array->iMCU_rows;
        if (array->window_capacity > array->rows) array->window_capacity = array->rows;
        size_t rows = array->rows, window_blocks = (size_t)array->window_capacity * array->blocks_per_row;
        count_bytes(cinfo, (long)(rows * (2 * sizeof(uint8_t *) + 2 * sizeof(uint32_t))
                                  + array->window_capacity * sizeof(JBLOCKROW) + window_blocks * sizeof(uint64_t)));
        array->row_data = checked_calloc(cinfo, rows, sizeof(uint8_t *));
        array->row_length = checked_calloc(cinfo, rows, sizeof(uint32_t));
        array->row_capacity = checked_calloc(cinfo, rows, sizeof(uint32_t));
        array->window_maps = checked_calloc(cinfo, window_blocks, sizeof(uint64_t));
        array->row_dc = checked_calloc(cinfo, rows, sizeof(JCOEF *));
        for (JDIMENSION r = 0; r < array->rows; r++) {
            if (!row_kept(store, array, r)) continue;
            count_bytes(cinfo, (long)(array->blocks_per_row * sizeof(JCOEF)));
            array->row_dc[r] = checked_calloc(cinfo, array->blocks_per_row, sizeof(JCOEF));
        }
        array->window = checked_calloc(cinfo, array->window_capacity, sizeof(JBLOCKROW));
    }
}

// Notes the positions the current scan refines, if it is an AC refinement scan.
static void record_scan(sp_coef_store *store, j_decompress_ptr dinfo) {
    int scan = dinfo->input_scan_number;
    if (store->refines == NULL || scan < 0 || scan >= store->scan_capacity || dinfo->Ah == 0 || dinfo->Ss == 0) return;
    uint64_t positions = 0;
    for (int k = dinfo->Ss; k <= dinfo->Se && k < DCTSIZE2; k++) positions |= 1ull << sp_jpeg_natural_order[k];
    for (int i = 0; i < dinfo->comps_in_scan && i < MAX_COMPS_IN_SCAN; i++) {
        int component = dinfo->cur_comp_info[i]->component_index;
        if (component >= 0 && component < 4) store->refines[(size_t)scan * 4 + (size_t)component] |= positions;
    }
}

static JBLOCKARRAY store_access_virt_barray(j_common_ptr cinfo, jvirt_barray_ptr pointer, JDIMENSION start_row,
                                           JDIMENSION num_rows, boolean writable) {
    sp_coef_store *store = store_of(cinfo);
    sp_coef_array *array = store->arrays;
    while (array != NULL && (jvirt_barray_ptr)array != pointer) array = array->next;
    if (array == NULL) return store->base_access_virt_barray(cinfo, pointer, start_row, num_rows, writable);
    if (array->window == NULL || num_rows > array->max_access || start_row > array->rows
        || num_rows > array->rows - start_row) {
        ERREXIT(cinfo, JERR_BAD_VIRTUAL_ACCESS);
    }
    // libjpeg-turbo 2.1's decompress_smooth_data reads one iMCU row past the rows it asks for (on its second
    // iMCU row it asks for 3 but reads the 4th, which libjpeg's own arrays, wholly in memory, happen to hold).
    // Its read-only accesses of more than one iMCU row are smoothing's, so those get one more iMCU row.
    JDIMENSION wanted_end = start_row + num_rows;
    if (!writable && num_rows > array->iMCU_rows) wanted_end += array->iMCU_rows;
    if (wanted_end > array->rows) wanted_end = array->rows;
    // A progressive DC scan (Ss = Se = 0) reads and writes nothing but the DC: only that is made current.
    j_decompress_ptr dinfo = (j_decompress_ptr)cinfo;
    int dc_only = writable && dinfo->progressive_mode && dinfo->Se == 0;
    int inside = array->window_valid && dc_only == array->window_dc_only && start_row >= array->window_start
        && wanted_end <= array->window_start + array->window_rows;
    if (!inside) {
        if (array->window_dirty) {
            for (JDIMENSION r = 0; r < array->window_rows; r++) {
                if (array->window_dc_only) compact_dc(array, array->window_start + r, r);
                else compact_row(cinfo, array, array->window_start + r, r);
            }
        }
        for (JDIMENSION r = 0; r < wanted_end - start_row; r++) {
            if (array->window[r] == NULL) {
                count_bytes(cinfo, (long)(array->blocks_per_row * sizeof(JBLOCK)));
                array->window[r] = checked_calloc(cinfo, array->blocks_per_row, sizeof(JBLOCK));
            }
            if (dc_only) expand_dc(array, start_row + r, r);
            else expand_row(array, start_row + r, r, store->vector);
        }
        array->window_start = start_row;
        array->window_rows = wanted_end - start_row;
        array->window_valid = 1;
        array->window_dirty = 0;
        array->window_dc_only = dc_only;
        // Only while the scans are read: once jpeg_start_decompress returns, the reader has fixed the band's
        // output rows by the rows kept (the output's read-only accesses compact nothing).
        if (writable) fit_budget(cinfo);
    }
    if (writable) {
        array->window_dirty = 1;
        array->window_scan = dinfo->input_scan_number;
        record_scan(store, dinfo);
    }
    return array->window + (start_row - array->window_start);
}

static void store_free_pool(j_common_ptr cinfo, int pool_id) {
    sp_coef_store *store = store_of(cinfo);
    if (pool_id == JPOOL_IMAGE) release_arrays(cinfo);
    store->base_free_pool(cinfo, pool_id);
}

static void store_self_destruct(j_common_ptr cinfo) {
    sp_coef_store *store = store_of(cinfo);
    release_arrays(cinfo);
    store->base_self_destruct(cinfo);
}

void sp_coef_store_install(j_decompress_ptr cinfo, sp_coef_store *store, long max_bytes) {
    struct jpeg_memory_mgr *mem = cinfo->mem;
    if (mem->request_virt_barray == store_request_virt_barray) {
        // Installed for an earlier decode of this decompressor (a band): its arrays went with the image pool.
        store->max_bytes = max_bytes;
        store->peak_bytes = store->bytes;
        store->budget = 0;
        store->keep_start = 0;
        store->keep_end = (JDIMENSION)-1;
        store->min_keep_end = store->keep_end;
        store->dropped = 0;
        store->refines = NULL;
        store->later = NULL;
        store->scan_capacity = 0;
        store->skip = NULL;
        return;
    }
    memset(store, 0, sizeof *store);
    store->base_request_virt_barray = mem->request_virt_barray;
    store->base_realize_virt_arrays = mem->realize_virt_arrays;
    store->base_access_virt_barray = mem->access_virt_barray;
    store->base_free_pool = mem->free_pool;
    store->base_self_destruct = mem->self_destruct;
    store->max_bytes = max_bytes;
    store->keep_end = (JDIMENSION)-1;   // no band: every row keeps its values
    store->min_keep_end = store->keep_end;
    cinfo->client_data = store;
    mem->request_virt_barray = store_request_virt_barray;
    mem->realize_virt_arrays = store_realize_virt_arrays;
    mem->access_virt_barray = store_access_virt_barray;
    mem->free_pool = store_free_pool;
    mem->self_destruct = store_self_destruct;
}

void sp_coef_store_set_band(sp_coef_store *store, long budget, JDIMENSION keep_start, JDIMENSION keep_end,
                            JDIMENSION min_keep_end) {
    store->budget = budget;
    store->keep_start = keep_start;
    store->keep_end = keep_end;
    store->min_keep_end = min_keep_end < keep_end ? min_keep_end : keep_end;
}

void sp_coef_store_set_vector(sp_coef_store *store, int allowed) { store->vector = allowed && sp_coef_vector_available(); }

void sp_coef_store_set_skip(sp_coef_store *store, struct sp_band_skip *skip) { store->skip = skip; }

void sp_coef_store_set_history(sp_coef_store *store, uint64_t *refines, const uint64_t *later, int scan_capacity) {
    store->refines = refines;
    store->later = later;
    store->scan_capacity = scan_capacity;
}

void sp_coef_history_from_refines(const uint64_t *refines, uint64_t *later, int scan_capacity) {
    uint64_t after[4] = {0, 0, 0, 0};
    for (int scan = scan_capacity - 1; scan >= 0; scan--) {
        for (int c = 0; c < 4; c++) {
            later[(size_t)scan * 4 + (size_t)c] = after[c];
            after[c] |= refines[(size_t)scan * 4 + (size_t)c];
        }
    }
}

size_t sp_jpeg_coefficient_store_block_bound(int scaled_size) {
    // The summary byte, up to 8 bytes of non-zero map, and every kept coefficient non-zero.
    return 1 + 8 + 2 * (size_t)__builtin_popcountll(kept_positions(scaled_size));
}
