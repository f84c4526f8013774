// An encode of ours written again from its quantised coefficients (sp_jpeg_recode): read back once with
// jpeg_read_coefficients and written with jpeg_write_coefficients, progressive (SharePipe's scan script) and,
// unless the progressive file is certainly the smaller, baseline: the same coefficients, so the same pixels;
// only the Huffman coding and the markers are new. Every call is behind its own setjmp.
#include "sp_jpeg_private.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// sp_jpeg_recode_count_with_libjpeg: this thread's progressive recodes run libjpeg's own statistics passes.
static _Thread_local int count_with_libjpeg = 0;

void sp_jpeg_recode_count_with_libjpeg(int on) { count_with_libjpeg = on != 0; }

size_t sp_jpeg_recode_scans_counted_directly(void) { return sp_jpeg_scans_counted_directly; }

// Writes the read coefficients of `source` as a new file into `dest` (optimized Huffman tables; progressive with
// SharePipe's script when asked, its scans' symbols counted from the coefficients): a compressor of its own,
// destroyed before returning; errors longjmp to the caller's setjmp.
static void write_recoded(j_decompress_ptr source, jvirt_barray_ptr *coefficients, j_compress_ptr cinfo,
                          int *created, sp_memory_destination *dest, int progressive, int write_jfif,
                          const sp_jpeg_marker *markers, int marker_count) {
    cinfo->err = source->err;
    jpeg_create_compress(cinfo);
    *created = 1;
    sp_jpeg_memory_destination_init(cinfo, dest);
    jpeg_copy_critical_parameters(source, cinfo);
    cinfo->optimize_coding = TRUE;
    cinfo->write_JFIF_header = write_jfif ? TRUE : FALSE;
    if (progressive) sp_jpeg_set_progressive_scans(cinfo);
    jpeg_write_coefficients(cinfo, coefficients);
    sp_scan_counts counts;
    if (progressive && !count_with_libjpeg) sp_jpeg_count_scans_directly(cinfo, &counts, source, coefficients);
    sp_jpeg_write_markers(cinfo, markers, marker_count);
    jpeg_finish_compress(cinfo);
    jpeg_destroy_compress(cinfo);
    *created = 0;
}

// What the baseline bound counts as it walks the blocks: Huffman symbols per table (0 luma, 1 chroma), the bits
// written beside the codes, each component's last DC.
typedef struct {
    const sp_zigzag_masks *zigzag;
    long dc_freq[2][257], ac_freq[2][257];
    long bits;
    int last_dc[MAX_COMPONENTS];
} baseline_counts;

// Counts one block's Huffman symbols as libjpeg's baseline coder emits them (DC difference category; AC
// run/size pairs, ZRL, EOB) and the bits written beside the codes. The AC coefficients are visited through a
// mask of the non-zero ones in zigzag order (made from the natural order's mask a byte at a time), not one
// branch each.
static void count_baseline_block(void *state, int member, const JCOEF *block) {
    baseline_counts *counts = state;
    long *ac_freq = counts->ac_freq[member == 0 ? 0 : 1];
    int category = sp_jpeg_magnitude_bits(block[0] - counts->last_dc[member]);
    counts->dc_freq[member == 0 ? 0 : 1][category]++;
    counts->last_dc[member] = block[0];
    long extra = category;
    uint64_t nonzero = sp_jpeg_zigzag_mask_above(block, *counts->zigzag, 0) & ~1ull; // the DC is coded apart
    int last = 0;
    while (nonzero) {
        int k = __builtin_ctzll(nonzero);
        nonzero &= nonzero - 1;
        int run = k - last - 1;
        last = k;
        while (run > 15) { ac_freq[0xF0]++; run -= 16; }
        int size = sp_jpeg_magnitude_bits(block[sp_jpeg_natural_order[k]]);
        ac_freq[(run << 4) + size]++;
        extra += size;
    }
    if (last < DCTSIZE2 - 1) ac_freq[0]++;
    counts->bits += extra;
}

// The bits of the codes a table libjpeg would make for `freq` gives them (jpeg_gen_optimal_table, as
// optimize_coding makes it), and the number of symbols the table holds.
static long coded_bits(j_compress_ptr cinfo, long freq[257], int *symbols) {
    long counts[257];
    memcpy(counts, freq, sizeof(counts));
    JHUFF_TBL *table = jpeg_alloc_huff_table((j_common_ptr)cinfo);
    jpeg_gen_optimal_table(cinfo, table, counts);
    // The symbols in huffval are ordered by code length: bits[l] of them have length l.
    long total = 0;
    int index = 0;
    for (int length = 1; length <= 16; length++) {
        for (int i = 0; i < table->bits[length]; i++, index++) total += (long)length * freq[table->huffval[index]];
    }
    *symbols = index;
    return total;
}

// Fewer bytes than the baseline file of the read coefficients can have: the bytes before the first scan's tables
// (`header`: SOI, JFIF, the markers, DQT and SOF, as in the progressive file), its Huffman tables (one DHT segment
// each, as libjpeg writes them), its SOS, the entropy-coded bits (every symbol counted in the order of libjpeg's
// interleaved MCUs, the dummy blocks of a partial MCU included, at the lengths jpeg_gen_optimal_table gives them),
// and EOI; only the stuffed zero bytes after 0xFF are not counted. `cinfo` is a created compressor (its pool
// holds the scratch tables).
static size_t baseline_bytes_lower_bound(j_decompress_ptr source, jvirt_barray_ptr *coefficients,
                                         j_compress_ptr cinfo, size_t header) {
    int components = source->num_components;
    baseline_counts *counts = (baseline_counts *)(*cinfo->mem->alloc_small)((j_common_ptr)cinfo, JPOOL_IMAGE,
                                                                             sizeof(baseline_counts));
    memset(counts, 0, sizeof(baseline_counts));
    sp_zigzag_masks *zigzag = (sp_zigzag_masks *)(*cinfo->mem->alloc_small)((j_common_ptr)cinfo, JPOOL_IMAGE,
                                                                             sizeof(sp_zigzag_masks));
    sp_jpeg_make_zigzag_masks(*zigzag);
    counts->zigzag = zigzag;
    // One scan of every component: interleaved MCUs where there are several.
    int all[MAX_COMPONENTS];
    for (int c = 0; c < components; c++) all[c] = c;
    sp_jpeg_visit_scan_blocks(source, coefficients, all, components, count_baseline_block, counts);
    long bits = counts->bits;
    size_t tables_bytes = 0;
    for (int t = 0; t < (components > 1 ? 2 : 1); t++) {
        int symbols;
        bits += coded_bits(cinfo, counts->dc_freq[t], &symbols);
        tables_bytes += 21 + (size_t)symbols;   // FFC4, length, class and index, 16 counts, the symbols
        bits += coded_bits(cinfo, counts->ac_freq[t], &symbols);
        tables_bytes += 21 + (size_t)symbols;
    }
    size_t sos = 8 + 2 * (size_t)components;
    return header + tables_bytes + sos + (size_t)((bits + 7) / 8) + 2;
}

// The offset of the first DHT segment of a file we wrote (the bytes every recode of the same coefficients and
// markers shares before its scans), or 0 when there is none.
static size_t offset_of_first_tables(const uint8_t *file, size_t length) {
    size_t at = 2;
    while (at + 4 <= length && file[at] == 0xFF) {
        if (file[at + 1] == 0xC4) return at;
        at += 2 + ((size_t)file[at + 2] << 8 | file[at + 3]);
    }
    return 0;
}

// Reads the coefficients of a baseline JPEG of ours into `source` (created here: *created set at once, for the
// caller's cleanup); anything else stops with `refusal`. Errors longjmp to the caller's setjmp.
static jvirt_barray_ptr *read_baseline_coefficients(j_decompress_ptr source, int *created, const uint8_t *jpeg,
                                                    size_t length, const char *refusal) {
    jpeg_create_decompress(source);
    *created = 1;
    jpeg_mem_src(source, jpeg, (unsigned long)length);
    jpeg_read_header(source, TRUE);
    if (source->progressive_mode || source->arith_code || source->num_components > MAX_COMPS_IN_SCAN) {
        sp_jpeg_fail_with((j_common_ptr)source, refusal);
    }
    return jpeg_read_coefficients(source);
}

sp_status sp_jpeg_recode(const uint8_t *jpeg, size_t length, int write_jfif, const sp_jpeg_marker *markers,
                         int marker_count, uint8_t **baseline_out, size_t *baseline_length,
                         uint8_t **progressive_out, size_t *progressive_length, char *message) {
    if (baseline_out != NULL) { *baseline_out = NULL; *baseline_length = 0; }
    if (progressive_out != NULL) { *progressive_out = NULL; *progressive_length = 0; }
    if (jpeg == NULL || length == 0 || (baseline_out == NULL && progressive_out == NULL)) {
        copy_message(message, "recoding needs a JPEG and an output");
        return SP_ERR_ARGUMENT;
    }
    struct jpeg_decompress_struct source;
    struct jpeg_compress_struct cinfo;
    sp_error_mgr error;
    sp_memory_destination dests[2];   // baseline, progressive
    int source_created = 0, created = 0;
    memset(dests, 0, sizeof(dests));
    for (int i = 0; i < 2; i++) {
        if ((i == 0 ? (void *)baseline_out : (void *)progressive_out) == NULL) continue;
        dests[i].capacity = 65536;
        dests[i].buffer = malloc(dests[i].capacity);
        if (dests[i].buffer == NULL) {
            free(dests[0].buffer);
            copy_message(message, "out of memory");
            return SP_ERR_MEMORY;
        }
    }
    sp_jpeg_install_error_manager((j_common_ptr)&source, &error);
    if (setjmp(error.jump)) {
        sp_status status = sp_jpeg_failure(&error, message);
        if (created) jpeg_destroy_compress(&cinfo);
        if (source_created) jpeg_destroy_decompress(&source);
        free(dests[0].buffer);
        free(dests[1].buffer);
        return status;
    }
    jvirt_barray_ptr *coefficients =
        read_baseline_coefficients(&source, &source_created, jpeg, length, "recoding takes a baseline JPEG");
    if (progressive_out != NULL) {
        write_recoded(&source, coefficients, &cinfo, &created, &dests[1], 1, write_jfif, markers, marker_count);
    }
    int write_baseline = baseline_out != NULL;
    if (write_baseline && progressive_out != NULL) {
        // The baseline file only where it could be the smaller: its bound costs one pass over the coefficients
        // without writing, the file two passes and the bytes.
        size_t header = offset_of_first_tables(dests[1].buffer, dests[1].length);
        if (header > 0) {
            cinfo.err = source.err;
            jpeg_create_compress(&cinfo);
            created = 1;
            size_t bound = baseline_bytes_lower_bound(&source, coefficients, &cinfo, header);
            jpeg_destroy_compress(&cinfo);
            created = 0;
            write_baseline = bound <= dests[1].length;
        }
    }
    if (write_baseline) {
        write_recoded(&source, coefficients, &cinfo, &created, &dests[0], 0, write_jfif, markers, marker_count);
    }
    jpeg_destroy_decompress(&source);
    if (baseline_out != NULL) {
        if (write_baseline) {
            *baseline_out = dests[0].buffer;
            *baseline_length = dests[0].length;
        } else {
            free(dests[0].buffer);
        }
    }
    if (progressive_out != NULL) { *progressive_out = dests[1].buffer; *progressive_length = dests[1].length; }
    return SP_OK;
}

sp_status sp_jpeg_baseline_bytes_bound(const uint8_t *jpeg, size_t length, size_t *bound, char *message) {
    *bound = 0;
    size_t header = jpeg == NULL ? 0 : offset_of_first_tables(jpeg, length);
    if (header == 0) {
        copy_message(message, "the bound needs a JPEG with Huffman tables");
        return SP_ERR_ARGUMENT;
    }
    struct jpeg_decompress_struct source;
    struct jpeg_compress_struct cinfo;
    sp_error_mgr error;
    int source_created = 0, created = 0;
    sp_jpeg_install_error_manager((j_common_ptr)&source, &error);
    if (setjmp(error.jump)) {
        sp_status status = sp_jpeg_failure(&error, message);
        if (created) jpeg_destroy_compress(&cinfo);
        if (source_created) jpeg_destroy_decompress(&source);
        return status;
    }
    jvirt_barray_ptr *coefficients =
        read_baseline_coefficients(&source, &source_created, jpeg, length, "the bound takes a baseline JPEG");
    cinfo.err = source.err;
    jpeg_create_compress(&cinfo);
    created = 1;
    *bound = baseline_bytes_lower_bound(&source, coefficients, &cinfo, header);
    jpeg_destroy_compress(&cinfo);
    jpeg_destroy_decompress(&source);
    return SP_OK;
}
