// The Huffman symbols of a progressive recode's scans, counted from the coefficients instead of by libjpeg's own
// statistics passes (sp_jpeg_count_scans_directly). libjpeg forces optimize_coding on for progressive files and
// runs each scan twice: once through its encoder only to count the symbols, once to write them. The count is
// half of that work and needs none of the encoder's bookkeeping; made here from masks of each block's non-zero
// coefficients in zigzag order, it is the same count (the same tables, so the same file: JPEGRecodeTests).
//
// libjpeg-turbo 2.1 internals relied on (jpegint.h, jcphuff.c, jcmaster.c): the entropy encoder's three methods,
// which its start_pass sets for each pass; a statistics pass followed by the output pass of each scan; and the
// rules by which jcphuff.c codes a block (end-of-band runs up to 0x7FFF, ZRL folded into them in refinement scans,
// at most MAX_CORR_BITS = 1000 correction bits held back).
#include "sp_jpeg_private.h"

#include <jpegint.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// MARK: - Masks in zigzag order

void sp_jpeg_make_zigzag_masks(sp_zigzag_masks zigzag) {
    int position[DCTSIZE2];
    for (int k = 0; k < DCTSIZE2; k++) position[sp_jpeg_natural_order[k]] = k;
    for (int b = 0; b < 8; b++) {
        for (int v = 0; v < 256; v++) {
            uint64_t mask = 0;
            for (int bit = 0; bit < 8; bit++) {
                if (v >> bit & 1) mask |= 1ull << position[8 * b + bit];
            }
            zigzag[b][v] = mask;
        }
    }
}

uint64_t sp_jpeg_zigzag_mask_above(const JCOEF *block, const sp_zigzag_masks zigzag, int threshold) {
    uint64_t natural = 0;
#if defined(__SSE2__)
    // 16 coefficients at a time: their magnitudes compared with the threshold, packed to bytes.
    const __m128i zero = _mm_setzero_si128(), limit = _mm_set1_epi16((short)threshold);
    for (int i = 0; i < DCTSIZE2; i += 16) {
        __m128i low = _mm_loadu_si128((const __m128i *)(block + i));
        __m128i high = _mm_loadu_si128((const __m128i *)(block + i + 8));
        low = _mm_max_epi16(low, _mm_sub_epi16(zero, low));
        high = _mm_max_epi16(high, _mm_sub_epi16(zero, high));
        const __m128i above = _mm_packs_epi16(_mm_cmpgt_epi16(low, limit), _mm_cmpgt_epi16(high, limit));
        natural |= (uint64_t)(uint16_t)_mm_movemask_epi8(above) << i;
    }
#else
    for (int i = 0; i < DCTSIZE2; i++) natural |= (uint64_t)((block[i] < 0 ? -block[i] : block[i]) > threshold) << i;
#endif
    uint64_t mask = 0;
    for (int b = 0; b < 8; b++) mask |= zigzag[b][(natural >> (8 * b)) & 0xFF];
    return mask;
}

// MARK: - One scan's symbols

enum { MAX_EOB_RUN = 0x7FFF, MAX_HELD_BITS = 1000 - DCTSIZE2 + 1 };

// What a scan's coder carries from block to block.
typedef struct {
    const sp_zigzag_masks *zigzag;
    int Ss, Se, Al;
    uint64_t band;      // bits Ss..Se
    long *dc[MAX_COMPS_IN_SCAN];
    int last_dc[MAX_COMPS_IN_SCAN];
    long *ac;
    int eob_run;        // blocks whose end-of-band is not coded yet
    int held_bits;      // correction bits held back with them (refinement)
} scan_coder;

// The pending end-of-band run coded (its symbol counted), as emit_eobrun does.
static inline void flush_eob_run(scan_coder *coder) {
    if (coder->eob_run > 0) {
        coder->ac[(31 - __builtin_clz((unsigned int)coder->eob_run)) << 4]++;
        coder->eob_run = 0;
        coder->held_bits = 0;
    }
}

static void count_dc_first(void *state, int member, const JCOEF *block) {
    scan_coder *coder = state;
    int value = block[0] >> coder->Al; // an arithmetic shift, as IRIGHT_SHIFT
    coder->dc[member][sp_jpeg_magnitude_bits(value - coder->last_dc[member])]++;
    coder->last_dc[member] = value;
}

static void count_ac_first(void *state, int member, const JCOEF *block) {
    scan_coder *coder = state;
    (void)member;
    const int Al = coder->Al;
    uint64_t nonzero = sp_jpeg_zigzag_mask_above(block, *coder->zigzag, (1 << Al) - 1) & coder->band;
    if (nonzero) flush_eob_run(coder);
    int last = coder->Ss - 1;
    while (nonzero) {
        const int k = __builtin_ctzll(nonzero);
        nonzero &= nonzero - 1;
        int run = k - last - 1;
        last = k;
        for (; run > 15; run -= 16) coder->ac[0xF0]++;
        const int value = block[sp_jpeg_natural_order[k]];
        coder->ac[(run << 4) + sp_jpeg_magnitude_bits((value < 0 ? -value : value) >> Al)]++;
    }
    if (last < coder->Se && ++coder->eob_run == MAX_EOB_RUN) flush_eob_run(coder);
}

static void count_ac_refine(void *state, int member, const JCOEF *block) {
    scan_coder *coder = state;
    (void)member;
    const int Al = coder->Al;
    uint64_t nonzero = sp_jpeg_zigzag_mask_above(block, *coder->zigzag, (1 << Al) - 1) & coder->band;
    const uint64_t earlier = sp_jpeg_zigzag_mask_above(block, *coder->zigzag, (2 << Al) - 1) & coder->band;
    const uint64_t newly = nonzero & ~earlier;
    // The last newly non-zero coefficient (jcphuff.c's EOB, the band's first position when there is none): a
    // run of 16 zeros before it is coded as ZRL, after it folded into the end of band.
    const int end_of_band = newly ? 63 - __builtin_clzll(newly) : coder->Ss;
    int run = 0, held = 0, last = coder->Ss - 1;
    while (nonzero) {
        const int k = __builtin_ctzll(nonzero);
        nonzero &= nonzero - 1;
        run += k - last - 1;
        last = k;
        while (run > 15 && k <= end_of_band) {
            flush_eob_run(coder);
            coder->ac[0xF0]++;
            run -= 16;
            held = 0;
        }
        if (earlier >> k & 1) {
            held++; // a correction bit
            continue;
        }
        flush_eob_run(coder);
        coder->ac[(run << 4) + 1]++;
        held = 0;
        run = 0;
    }
    if (run > 0 || last < coder->Se || held > 0) {
        coder->eob_run++;
        coder->held_bits += held;
        if (coder->eob_run == MAX_EOB_RUN || coder->held_bits > MAX_HELD_BITS) flush_eob_run(coder);
    }
}

void sp_jpeg_visit_scan_blocks(j_decompress_ptr source, jvirt_barray_ptr *coefficients, const int *components,
                               int count, sp_jpeg_block_visitor visit, void *state) {
    JBLOCK dummy;
    memset(dummy, 0, sizeof(dummy));
    if (count == 1) {
        jpeg_component_info *component = &source->comp_info[components[0]];
        for (JDIMENSION row = 0; row < component->height_in_blocks; row++) {
            JBLOCKARRAY rows =
                source->mem->access_virt_barray((j_common_ptr)source, coefficients[components[0]], row, 1, FALSE);
            for (JDIMENSION column = 0; column < component->width_in_blocks; column++) visit(state, 0, rows[0][column]);
        }
        return;
    }
    // Interleaved: MCUs of h × v blocks of each component, as many as the largest sampling factors give.
    const JDIMENSION mcu_width = 8 * (JDIMENSION)source->max_h_samp_factor;
    const JDIMENSION mcu_height = 8 * (JDIMENSION)source->max_v_samp_factor;
    const JDIMENSION mcu_columns = (source->image_width + mcu_width - 1) / mcu_width;
    const JDIMENSION mcu_rows = (source->image_height + mcu_height - 1) / mcu_height;
    for (JDIMENSION mcu_row = 0; mcu_row < mcu_rows; mcu_row++) {
        JBLOCKARRAY rows[MAX_COMPS_IN_SCAN];
        for (int m = 0; m < count; m++) {
            jpeg_component_info *component = &source->comp_info[components[m]];
            JDIMENSION height = (JDIMENSION)component->v_samp_factor;
            JDIMENSION first = mcu_row * height;
            JDIMENSION available = component->height_in_blocks > first ? component->height_in_blocks - first : 0;
            rows[m] = available == 0 ? NULL
                : source->mem->access_virt_barray((j_common_ptr)source, coefficients[components[m]], first,
                                                  available < height ? available : height, FALSE);
        }
        for (JDIMENSION mcu_column = 0; mcu_column < mcu_columns; mcu_column++) {
            // The block before, in the MCU's order (jctrans.c copies a dummy block's DC from it).
            const JCOEF *previous = NULL;
            for (int m = 0; m < count; m++) {
                jpeg_component_info *component = &source->comp_info[components[m]];
                for (int y = 0; y < component->v_samp_factor; y++) {
                    JDIMENSION row = mcu_row * (JDIMENSION)component->v_samp_factor + (JDIMENSION)y;
                    for (int x = 0; x < component->h_samp_factor; x++) {
                        JDIMENSION column = mcu_column * (JDIMENSION)component->h_samp_factor + (JDIMENSION)x;
                        const JCOEF *block;
                        if (row < component->height_in_blocks && column < component->width_in_blocks) {
                            block = rows[m][y][column];
                        } else {
                            dummy[0] = previous == NULL ? 0 : previous[0]; // an MCU's first block is real
                            block = dummy;
                        }
                        visit(state, m, block);
                        previous = block;
                    }
                }
            }
        }
    }
}

// MARK: - The statistics passes replaced

_Thread_local size_t sp_jpeg_scans_counted_directly = 0;

// A statistics pass's iMCU rows: nothing to feed the encoder (the output pass's start resets the row count).
static boolean skip_rows(j_compress_ptr cinfo, JSAMPIMAGE input) {
    (void)cinfo, (void)input;
    return TRUE;
}

// A statistics pass's end, as finish_pass_gather_phuff: each table the scan uses made from its counts.
static void finish_counted_pass(j_compress_ptr cinfo) {
    sp_scan_counts *counts = (sp_scan_counts *)cinfo->client_data;
    const int dc = cinfo->Ss == 0;
    boolean made[NUM_HUFF_TBLS] = {FALSE};
    for (int m = 0; m < cinfo->comps_in_scan; m++) {
        jpeg_component_info *component = cinfo->cur_comp_info[m];
        if (dc && cinfo->Ah != 0) continue; // DC refinement codes no symbols
        const int table = dc ? component->dc_tbl_no : component->ac_tbl_no;
        if (made[table]) continue;
        JHUFF_TBL **slot = dc ? &cinfo->dc_huff_tbl_ptrs[table] : &cinfo->ac_huff_tbl_ptrs[table];
        if (*slot == NULL) *slot = jpeg_alloc_huff_table((j_common_ptr)cinfo);
        jpeg_gen_optimal_table(cinfo, *slot, counts->frequencies[table]);
        made[table] = TRUE;
    }
}

// libjpeg's start of a pass, then for a statistics pass the scan's symbols counted here and the coefficient
// controller's pass over the iMCU rows (which would feed them to the encoder) skipped.
static void start_counted_pass(j_compress_ptr cinfo, boolean gather_statistics) {
    sp_scan_counts *counts = (sp_scan_counts *)cinfo->client_data;
    counts->libjpeg_start_pass(cinfo, gather_statistics);
    cinfo->coef->compress_data = gather_statistics ? skip_rows : counts->libjpeg_compress_data;
    if (!gather_statistics) return;
    memset(counts->frequencies, 0, sizeof(counts->frequencies));
    scan_coder coder;
    memset(&coder, 0, sizeof(coder));
    coder.zigzag = &counts->zigzag;
    coder.Ss = cinfo->Ss;
    coder.Se = cinfo->Se;
    coder.Al = cinfo->Al;
    coder.band = (cinfo->Se == 63 ? ~0ull : (1ull << (cinfo->Se + 1)) - 1) & ~((1ull << cinfo->Ss) - 1);
    sp_jpeg_block_visitor count = NULL;
    if (cinfo->Ss == 0) {
        if (cinfo->Ah == 0) {
            for (int m = 0; m < cinfo->comps_in_scan; m++) {
                coder.dc[m] = counts->frequencies[cinfo->cur_comp_info[m]->dc_tbl_no];
            }
            count = count_dc_first;
        }
    } else {
        coder.ac = counts->frequencies[cinfo->cur_comp_info[0]->ac_tbl_no];
        count = cinfo->Ah == 0 ? count_ac_first : count_ac_refine;
    }
    if (count != NULL) {
        int components[MAX_COMPS_IN_SCAN];
        for (int m = 0; m < cinfo->comps_in_scan; m++) components[m] = cinfo->cur_comp_info[m]->component_index;
        sp_jpeg_visit_scan_blocks(counts->source, counts->coefficients, components, cinfo->comps_in_scan, count,
                                  &coder);
        if (coder.ac != NULL) flush_eob_run(&coder);
    }
    cinfo->entropy->finish_pass = finish_counted_pass;
    sp_jpeg_scans_counted_directly++;
}

void sp_jpeg_count_scans_directly(j_compress_ptr cinfo, sp_scan_counts *counts, j_decompress_ptr source,
                                  jvirt_barray_ptr *coefficients) {
    // Progressive Huffman coding without restart markers only: anything else keeps libjpeg's own passes.
    if (!cinfo->progressive_mode || cinfo->arith_code || cinfo->restart_interval != 0 ||
        cinfo->restart_in_rows != 0) {
        return;
    }
    counts->source = source;
    counts->coefficients = coefficients;
    sp_jpeg_make_zigzag_masks(counts->zigzag);
    counts->libjpeg_start_pass = cinfo->entropy->start_pass;
    counts->libjpeg_compress_data = cinfo->coef->compress_data;
    cinfo->client_data = counts;
    cinfo->entropy->start_pass = start_counted_pass;
}
