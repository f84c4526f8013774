// Each scan decoded once over all bands: see sp_jpeg_band_skip.h for how and what it relies on.
#include "sp_jpeg_band_skip.h"
#include "sp_jpeg_coefficients.h"
#include "sp_jpeg_private.h"
#include "sp_jpeg.h"

#include <jerror.h>
#include <jpegint.h>
#include <stdlib.h>
#include <string.h>

// libjpeg-turbo 2.1's progressive Huffman decoder (jdphuff.c's phuff_entropy_decoder), up to the fields the
// checkpoint holds.
typedef struct {
    struct jpeg_entropy_decoder pub;
    struct {
        size_t get_buffer;
        int bits_left;
    } bitstate;
    struct {
        unsigned int EOBRUN;
        int last_dc_val[MAX_COMPS_IN_SCAN];
    } saved;
    unsigned int restarts_to_go;
} sp_phuff_state;

#if defined(LIBJPEG_TURBO_VERSION_NUMBER) && LIBJPEG_TURBO_VERSION_NUMBER >= 2001000 \
    && LIBJPEG_TURBO_VERSION_NUMBER < 2002000
#define SP_SKIP_LAYOUT_KNOWN 1
#else
#define SP_SKIP_LAYOUT_KNOWN 0
#endif

size_t sp_jpeg_band_skip_table_bytes(int max_scans) {
    return (size_t)(max_scans + 2) * (SP_SKIP_SLOTS + 1) * sizeof(sp_entropy_checkpoint);
}

int sp_band_skip_init(sp_band_skip *skip, int scan_capacity) {
    memset(skip, 0, sizeof *skip);
    if (!SP_SKIP_LAYOUT_KNOWN || scan_capacity <= 0) return 0;
    skip->starts = calloc((size_t)scan_capacity, sizeof(sp_entropy_checkpoint));
    skip->saved = calloc((size_t)scan_capacity * SP_SKIP_SLOTS, sizeof(sp_entropy_checkpoint));
    if (skip->starts == NULL || skip->saved == NULL) {
        sp_band_skip_free(skip);
        return 0;
    }
    skip->scan_capacity = scan_capacity;
    skip->bytes = (size_t)scan_capacity * (SP_SKIP_SLOTS + 1) * sizeof(sp_entropy_checkpoint);
    skip->usable = 1;
    return 1;
}

void sp_band_skip_free(sp_band_skip *skip) {
    free(skip->starts);
    free(skip->saved);
    skip->starts = NULL;
    skip->saved = NULL;
    skip->usable = 0;
    skip->scan_capacity = 0;
}

void sp_band_skip_begin(sp_band_skip *skip, int active, JDIMENSION start_row, JDIMENSION save_from,
                        JDIMENSION save_end) {
    skip->active = active && skip->usable;
    skip->start_row = skip->active ? start_row : 0;
    skip->save_from = save_from;
    JDIMENSION span = save_end > save_from ? save_end - save_from : 1;
    skip->save_stride = (span + SP_SKIP_SLOTS - 1) / SP_SKIP_SLOTS;
    if (skip->save_stride < 1) skip->save_stride = 1;
    skip->last_scan = 0;
    skip->base_consume_data = NULL;
    // Checkpoints of earlier reads are told apart by their read number (the table's pages are touched only
    // where checkpoints are written).
    if (skip->read_number == UINT16_MAX && skip->saved != NULL) {
        memset(skip->saved, 0, (size_t)skip->scan_capacity * SP_SKIP_SLOTS * sizeof(sp_entropy_checkpoint));
        skip->read_number = 0;
    }
    skip->read_number++;
}

// MARK: - The source position

static uint64_t source_offset(j_decompress_ptr cinfo, const sp_band_skip *skip) {
    struct jpeg_source_mgr *source = cinfo->src;
    if (skip->file != NULL) {
        long position = ftell(skip->file);
        if (position < 0) ERREXIT(cinfo, JERR_FILE_READ);
        // After the end of the file the source holds a made-up EOI in its own buffer; a marker already in
        // unread_marker stops the entropy decoder from reading it (see the header), so any offset will do.
        return (uint64_t)position >= source->bytes_in_buffer ? (uint64_t)position - source->bytes_in_buffer : 0;
    }
    const uint8_t *next = source->next_input_byte;
    if (next >= skip->memory && next <= skip->memory + skip->memory_length) return (uint64_t)(next - skip->memory);
    return skip->memory_length;   // the made-up EOI past the end of the bytes
}

static void set_source_offset(j_decompress_ptr cinfo, const sp_band_skip *skip, uint64_t offset) {
    struct jpeg_source_mgr *source = cinfo->src;
    if (skip->file != NULL) {
        if (fseek(skip->file, (long)offset, SEEK_SET) != 0) ERREXIT(cinfo, JERR_FILE_READ);
        source->bytes_in_buffer = 0;   // the next read fills the buffer from there
        return;
    }
    if (offset > skip->memory_length) offset = skip->memory_length;
    source->next_input_byte = skip->memory + offset;
    source->bytes_in_buffer = skip->memory_length - (size_t)offset;
}

// MARK: - Checkpoints

static void save_checkpoint(j_decompress_ptr cinfo, const sp_band_skip *skip, sp_entropy_checkpoint *point) {
    point->saved = skip->read_number;
    const sp_phuff_state *entropy = (const sp_phuff_state *)cinfo->entropy;
    point->offset = source_offset(cinfo, skip);
    point->get_buffer = entropy->bitstate.get_buffer;
    point->bits_left = entropy->bitstate.bits_left;
    point->eob_run = entropy->saved.EOBRUN;
    memcpy(point->last_dc_val, entropy->saved.last_dc_val, sizeof point->last_dc_val);
    point->restarts_to_go = entropy->restarts_to_go;
    point->unread_marker = (int16_t)cinfo->unread_marker;
    point->next_restart_num = (int16_t)cinfo->marker->next_restart_num;
    point->insufficient_data = entropy->pub.insufficient_data ? 1 : 0;
}

static void restore_checkpoint(j_decompress_ptr cinfo, const sp_band_skip *skip, const sp_entropy_checkpoint *point) {
    sp_phuff_state *entropy = (sp_phuff_state *)cinfo->entropy;
    set_source_offset(cinfo, skip, point->offset);
    entropy->bitstate.get_buffer = point->get_buffer;
    entropy->bitstate.bits_left = point->bits_left;
    entropy->saved.EOBRUN = point->eob_run;
    memcpy(entropy->saved.last_dc_val, point->last_dc_val, sizeof point->last_dc_val);
    entropy->restarts_to_go = point->restarts_to_go;
    cinfo->unread_marker = point->unread_marker;
    cinfo->marker->next_restart_num = point->next_restart_num;
    entropy->pub.insufficient_data = point->insufficient_data ? TRUE : FALSE;
}

// What start_pass_phuff_decoder leaves at a scan's start, read through the mirror of its state: if the
// layout differs, some field will not read so.
static int fresh_scan_state(j_decompress_ptr cinfo) {
    const sp_phuff_state *entropy = (const sp_phuff_state *)cinfo->entropy;
    if (entropy->bitstate.bits_left != 0 || entropy->saved.EOBRUN != 0 || entropy->pub.insufficient_data) return 0;
    if (entropy->restarts_to_go != cinfo->restart_interval) return 0;
    for (int ci = 0; ci < cinfo->comps_in_scan && ci < MAX_COMPS_IN_SCAN; ci++) {
        if (entropy->saved.last_dc_val[ci] != 0) return 0;
    }
    return entropy->pub.decode_mcu != NULL;
}

// MARK: - Skipping the rest of a scan

static int next_source_byte(j_decompress_ptr cinfo) {
    struct jpeg_source_mgr *source = cinfo->src;
    if (source->bytes_in_buffer == 0 && !(*source->fill_input_buffer)(cinfo)) ERREXIT(cinfo, JERR_CANT_SUSPEND);
    source->bytes_in_buffer--;
    return *source->next_input_byte++;
}

// Reads past the rest of the current scan's entropy-coded data; returns the marker that ends it, as the
// entropy decoder would have left it in unread_marker (FF fill bytes skipped; FF 00 and RSTn are data).
static int skip_to_scan_end(j_decompress_ptr cinfo) {
    int marker = cinfo->unread_marker;
    if (marker != 0 && !(marker >= JPEG_RST0 && marker <= JPEG_RST0 + 7)) return marker;
    struct jpeg_source_mgr *source = cinfo->src;
    for (;;) {
        if (source->bytes_in_buffer == 0 && !(*source->fill_input_buffer)(cinfo)) ERREXIT(cinfo, JERR_CANT_SUSPEND);
        const JOCTET *found = memchr(source->next_input_byte, 0xFF, source->bytes_in_buffer);
        if (found == NULL) {
            source->next_input_byte += source->bytes_in_buffer;
            source->bytes_in_buffer = 0;
            continue;
        }
        size_t through = (size_t)(found - source->next_input_byte) + 1;
        source->next_input_byte += through;
        source->bytes_in_buffer -= through;
        int c;
        do {
            c = next_source_byte(cinfo);
        } while (c == 0xFF);
        if (c == 0 || (c >= JPEG_RST0 && c <= JPEG_RST0 + 7)) continue;
        return c;
    }
}

// MARK: - The wrapped consume_data

static int skipping_consume_data(j_decompress_ptr cinfo) {
    sp_coef_store *store = (sp_coef_store *)cinfo->client_data;
    sp_band_skip *skip = store->skip;
    int scan = cinfo->input_scan_number;
    if (!skip->usable || scan < 0 || scan >= skip->scan_capacity) {
        // A scan the tables cannot hold (past the scan limit, which stops the decode first) after rows were
        // skipped: its rows could not be placed.
        if (skip->active) sp_jpeg_fail_with((j_common_ptr)cinfo, "banded decode: a scan without a checkpoint");
        return skip->base_consume_data(cinfo);
    }
    if (scan > skip->last_scan) skip->last_scan = scan;
    JDIMENSION row = cinfo->input_iMCU_row;
    if (row == 0) {
        if (!fresh_scan_state(cinfo)) {
            // The decoder's state does not read as libjpeg-turbo 2.1's: no skipping, from the first scan's first
            // row of the first read on (nothing was skipped before it).
            if (skip->active && (scan > 1 || skip->start_row > 0)) {
                sp_jpeg_fail_with((j_common_ptr)cinfo, "banded decode: the entropy decoder's state is not as expected");
            }
            skip->usable = 0;
            skip->active = 0;
            return skip->base_consume_data(cinfo);
        }
        if (skip->active && skip->start_row > 0) {
            const sp_entropy_checkpoint *start = &skip->starts[scan];
            if (!start->saved || skip->start_row + 1 >= cinfo->total_iMCU_rows) {
                sp_jpeg_fail_with((j_common_ptr)cinfo, "banded decode: a scan without a checkpoint");
            }
            restore_checkpoint(cinfo, skip, start);
            cinfo->input_iMCU_row = row = skip->start_row;
        }
    }
    if (skip->active && row > skip->start_row && row >= *skip->stop) {
        cinfo->unread_marker = skip_to_scan_end(cinfo);
        cinfo->input_iMCU_row = cinfo->total_iMCU_rows;
        (*cinfo->inputctl->finish_input_pass)(cinfo);
        return JPEG_SCAN_COMPLETED;
    }
    if (row >= skip->save_from && (row - skip->save_from) % skip->save_stride == 0) {
        JDIMENSION slot = (row - skip->save_from) / skip->save_stride;
        if (slot < SP_SKIP_SLOTS) save_checkpoint(cinfo, skip, &skip->saved[(size_t)scan * SP_SKIP_SLOTS + slot]);
    }
    skip->rows_read++;
    return skip->base_consume_data(cinfo);
}

void sp_band_skip_attach(j_decompress_ptr cinfo, sp_band_skip *skip, const JDIMENSION *stop) {
    if (cinfo->coef == NULL || cinfo->coef->consume_data == skipping_consume_data) return;
    skip->base_consume_data = cinfo->coef->consume_data;
    skip->stop = stop;
    cinfo->coef->consume_data = skipping_consume_data;
}

JDIMENSION sp_band_skip_prepare_next(sp_band_skip *skip, JDIMENSION wanted) {
    if (!skip->usable || skip->base_consume_data == NULL || wanted < skip->save_from) return 0;
    JDIMENSION slot = (wanted - skip->save_from) / skip->save_stride;
    if (slot >= SP_SKIP_SLOTS) slot = SP_SKIP_SLOTS - 1;
    JDIMENSION row = skip->save_from + slot * skip->save_stride;
    if (row == 0 || skip->last_scan < 1) return 0;
    for (int scan = 1; scan <= skip->last_scan; scan++) {
        // Every scan number up to the last had data (one per SOS), and reached this row.
        if (skip->saved[(size_t)scan * SP_SKIP_SLOTS + slot].saved != skip->read_number) return 0;
    }
    memset(skip->starts, 0, (size_t)skip->scan_capacity * sizeof(sp_entropy_checkpoint));
    for (int scan = 1; scan <= skip->last_scan; scan++) skip->starts[scan] = skip->saved[(size_t)scan * SP_SKIP_SLOTS + slot];
    return row;
}
