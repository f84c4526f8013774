// The JPEG reader: header and metadata segments (saved within limits), DCT-scaled decode row by row, and the
// banded decode of a progressive file (its coefficients in the compact store, sp_jpeg_coefficients.c; each
// scan read over the band's rows only from the second band on, sp_jpeg_band_skip.c), and an encode decoded
// 8 rows at a time into the SSIMULACRA2 scorer (sp_jpeg_ssimulacra2). Every call is behind its own setjmp (the
// error manager: sp_jpeg_common.c).
#include "sp_jpeg_private.h"
#include "sp_jpeg_coefficients.h"
#include "sp_jpeg_band_skip.h"
#include "sp_ssimulacra2.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/// What a banded decode's later re-reads of the file must find again: the image the first decode sized its
/// buffers and bands for. Zero-filled before it is noted, so two compare with memcmp.
typedef struct {
    JDIMENSION image_width, image_height, output_width, output_height, total_iMCU_rows;
    int num_components, output_components, progressive, color_space;
    int component_id[MAX_COMPONENTS], h_samp_factor[MAX_COMPONENTS], v_samp_factor[MAX_COMPONENTS];
} sp_jpeg_geometry;

struct sp_jpeg_reader {
    struct jpeg_decompress_struct cinfo;   // first, so a j_decompress_ptr is also the reader
    sp_error_mgr error;
    struct jpeg_progress_mgr progress;
    sp_jpeg_limits limits;
    long metadata_bytes;       // saved marker payloads plus per-segment overhead, so far
    int metadata_segments;
    FILE *file;
    const uint8_t *memory;     // or the caller's bytes
    size_t memory_length;
    int started;
    int full_coefficients;     // 1: libjpeg's own whole-image coefficient arrays instead of the compact store
    int portable_store;        // 1: the store's plain C block codec even where the SSSE3 one runs
    sp_coef_store store;
    // Bands (see sp_jpeg_coefficients.h): the file is decoded once per band of output rows.
    long band_budget;          // 0: one decode, the store holding the whole image
    int max_bands;             // the fewest iMCU rows a band has is total / max_bands
    int scale_num;             // what sp_jpeg_reader_start was given, for the next band's decode
    J_COLOR_SPACE out_color_space;
    JDIMENSION band_end_row;   // output row where this band ends (output_height for the last)
    JDIMENSION band_end_iMCU;  // iMCU row where it ends
    JDIMENSION band_rows;      // iMCU rows the last band's decode kept (sizes the next band's first guess)
    int bands;                 // decodes so far
    size_t store_peak;         // over every band's decode
    uint64_t *refines;         // the store's refinement history (sp_coef_store), kept across bands
    uint64_t *later;
    int scan_capacity;
    sp_band_skip skip;         // each scan decoded once over all bands (sp_jpeg_band_skip.h)
    int skip_ready;            // its tables allocated
    JDIMENSION next_start_row; // where the next band's decode starts every scan (a checkpoint row; 0: the first)
    sp_jpeg_geometry first;    // the first decode's image; every band's re-read must find it again
};

// Bytes counted against the metadata limit for each saved segment besides its payload (libjpeg's node).
#define SEGMENT_OVERHEAD 64

// Called by libjpeg as it consumes input. A progressive file can hold thousands of tiny scans, each of
// which makes libjpeg pass over every coefficient again: decode time grows without bound while memory does
// not. Real encoders write about 10 scans; libjpeg-turbo's own fuzzers stop at 500.
static void sp_progress_monitor(j_common_ptr cinfo) {
    if (!cinfo->is_decompressor) return;
    sp_jpeg_reader *reader = (sp_jpeg_reader *)cinfo;
    if (reader->limits.max_scans > 0 && reader->cinfo.input_scan_number > reader->limits.max_scans) {
        sp_jpeg_fail_at_limit(cinfo, SP_JPEG_LIMIT_SCANS, "too many progressive scans");
    }
}

// MARK: - Saving metadata segments within a budget

// jpeg_save_markers would keep every APPn/COM segment with no limit on their number: a file of empty or
// 64 KiB segments then costs memory in proportion to its size, twice over for an in-memory upload. This
// processor saves segments exactly as jpeg_save_markers does (onto cinfo->marker_list, from the image
// pool) while counting them against limits.max_metadata, and does for APP0 and APP14 what libjpeg's own
// processor does besides saving: note the JFIF and Adobe markers (Adobe_transform decides YCCK vs CMYK).
// Our data sources never suspend, so reading byte by byte through the source manager is safe.
static unsigned int next_byte(j_decompress_ptr cinfo) {
    struct jpeg_source_mgr *source = cinfo->src;
    if (source->bytes_in_buffer == 0 && !(*source->fill_input_buffer)(cinfo)) ERREXIT(cinfo, JERR_CANT_SUSPEND);
    source->bytes_in_buffer--;
    return *source->next_input_byte++;
}

static void note_jfif_or_adobe(j_decompress_ptr cinfo, int marker, const JOCTET *data, unsigned int length) {
    if (marker == JPEG_APP0 && length >= 14 && memcmp(data, "JFIF", 5) == 0) {
        cinfo->saw_JFIF_marker = TRUE;
        cinfo->JFIF_major_version = data[5];
        cinfo->JFIF_minor_version = data[6];
        cinfo->density_unit = data[7];
        cinfo->X_density = (UINT16)((data[8] << 8) + data[9]);
        cinfo->Y_density = (UINT16)((data[10] << 8) + data[11]);
    } else if (marker == JPEG_APP0 + 14 && length >= 12 && memcmp(data, "Adobe", 5) == 0) {
        cinfo->saw_Adobe_marker = TRUE;
        cinfo->Adobe_transform = data[11];
    }
}

static boolean save_segment(j_decompress_ptr cinfo) {
    sp_jpeg_reader *reader = (sp_jpeg_reader *)cinfo;
    long length = (long)(next_byte(cinfo) << 8);
    length += (long)next_byte(cinfo);
    length -= 2;
    reader->metadata_segments += 1;
    reader->metadata_bytes += (length > 0 ? length : 0) + SEGMENT_OVERHEAD;
    if (reader->limits.max_metadata > 0 && reader->metadata_bytes > reader->limits.max_metadata) {
        sp_jpeg_fail_at_limit((j_common_ptr)cinfo, SP_JPEG_LIMIT_METADATA, "metadata segments over the limit");
    }
    if (reader->limits.max_segments > 0 && reader->metadata_segments > reader->limits.max_segments) {
        sp_jpeg_fail_at_limit((j_common_ptr)cinfo, SP_JPEG_LIMIT_SEGMENTS, "too many metadata segments");
    }
    // A length word below 2 is bogus. libjpeg's save_marker (jdmarker.c) then saves nothing: the two length
    // bytes are consumed and reading goes on at the next marker, so djpeg, browsers and Pillow all decode
    // such a file. Do the same (the segment still counts against the segment limit above).
    if (length < 0) return TRUE;
    jpeg_saved_marker_ptr node = (jpeg_saved_marker_ptr)(*cinfo->mem->alloc_large)(
        (j_common_ptr)cinfo, JPOOL_IMAGE, sizeof(struct jpeg_marker_struct) + (size_t)length);
    node->next = NULL;
    node->marker = (UINT8)cinfo->unread_marker;
    node->original_length = (unsigned int)length;
    node->data_length = (unsigned int)length;
    node->data = (JOCTET *)(node + 1);
    for (long i = 0; i < length;) {
        struct jpeg_source_mgr *source = cinfo->src;
        if (source->bytes_in_buffer == 0 && !(*source->fill_input_buffer)(cinfo)) ERREXIT(cinfo, JERR_CANT_SUSPEND);
        size_t chunk = source->bytes_in_buffer;
        if (chunk > (size_t)(length - i)) chunk = (size_t)(length - i);
        memcpy(node->data + i, source->next_input_byte, chunk);
        source->next_input_byte += chunk;
        source->bytes_in_buffer -= chunk;
        i += (long)chunk;
    }
    if (cinfo->marker_list == NULL) {
        cinfo->marker_list = node;
    } else {
        jpeg_saved_marker_ptr last = cinfo->marker_list;
        while (last->next != NULL) last = last->next;
        last->next = node;
    }
    note_jfif_or_adobe(cinfo, node->marker, node->data, node->data_length);
    return TRUE;
}

static sp_status reader_create(sp_jpeg_limits limits, sp_jpeg_reader **out, char *message) {
    sp_jpeg_reader *reader = calloc(1, sizeof(sp_jpeg_reader));
    if (reader == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    sp_jpeg_install_error_manager((j_common_ptr)&reader->cinfo, &reader->error);
    if (setjmp(reader->error.jump)) {
        sp_status status = sp_jpeg_failure(&reader->error, message);
        free(reader);
        return status;
    }
    jpeg_create_decompress(&reader->cinfo);
    reader->limits = limits;
    // Caps libjpeg's big arrays (a progressive file's coefficients): past it libjpeg fails cleanly
    // ("backing store not supported") instead of allocating without bound.
    if (limits.max_memory > 0) reader->cinfo.mem->max_memory_to_use = limits.max_memory;
    reader->progress.progress_monitor = sp_progress_monitor;
    reader->cinfo.progress = &reader->progress;
    *out = reader;
    return SP_OK;
}

sp_status sp_jpeg_reader_open_file(const char *path, sp_jpeg_limits limits, sp_jpeg_reader **out, char *message) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) { copy_message(message, "cannot open file for reading"); return SP_ERR_IO; }
    sp_status status = reader_create(limits, out, message);
    if (status != SP_OK) { fclose(file); return status; }
    (*out)->file = file;
    jpeg_stdio_src(&(*out)->cinfo, file);  // a 4 KiB buffer: the file is streamed, never held whole
    return SP_OK;
}

sp_status sp_jpeg_reader_open_memory(const uint8_t *data, size_t length, sp_jpeg_limits limits, sp_jpeg_reader **out,
                                     char *message) {
    if (data == NULL || length == 0) { copy_message(message, "empty input"); return SP_ERR_ARGUMENT; }
    sp_status status = reader_create(limits, out, message);
    if (status != SP_OK) return status;
    (*out)->memory = data;
    (*out)->memory_length = length;
    jpeg_mem_src(&(*out)->cinfo, data, (unsigned long)length);
    return SP_OK;
}

sp_status sp_jpeg_reader_read_header(sp_jpeg_reader *reader, int save_markers, sp_jpeg_header *header, char *message) {
    if (setjmp(reader->error.jump)) return sp_jpeg_failure(&reader->error, message);
    if (save_markers) {
        // Every APPn/COM segment whole (at most 65533 bytes each), within the metadata limits.
        jpeg_set_marker_processor(&reader->cinfo, JPEG_COM, save_segment);
        for (int m = 0; m < 16; m++) jpeg_set_marker_processor(&reader->cinfo, JPEG_APP0 + m, save_segment);
    }
    int result = jpeg_read_header(&reader->cinfo, TRUE);
    if (result != JPEG_HEADER_OK) { copy_message(message, "no image in JPEG data"); return SP_ERR_LIBRARY; }
    header->width = (int)reader->cinfo.image_width;
    header->height = (int)reader->cinfo.image_height;
    header->components = reader->cinfo.num_components;
    header->jpeg_color_space = (int)reader->cinfo.jpeg_color_space;
    header->progressive = reader->cinfo.progressive_mode ? 1 : 0;
    header->saw_adobe_marker = reader->cinfo.saw_Adobe_marker ? 1 : 0;
    header->adobe_transform = reader->cinfo.Adobe_transform;
    return SP_OK;
}

int sp_jpeg_reader_marker_count(const sp_jpeg_reader *reader) {
    int count = 0;
    for (jpeg_saved_marker_ptr m = reader->cinfo.marker_list; m != NULL; m = m->next) count++;
    return count;
}

int sp_jpeg_reader_markers(const sp_jpeg_reader *reader, sp_jpeg_marker *markers, int capacity) {
    int i = 0;
    for (jpeg_saved_marker_ptr m = reader->cinfo.marker_list; m != NULL && i < capacity; m = m->next, i++) {
        markers[i].marker = m->marker;
        markers[i].data = m->data;
        markers[i].length = m->data_length;
    }
    return i;
}

sp_jpeg_limit sp_jpeg_reader_limit_hit(const sp_jpeg_reader *reader) {
    return reader->error.limit_hit;
}

// Starts the decode of the band whose output begins at iMCU row `first_iMCU` (0: the first decode, which
// has read the header already). A multi-scan file's coefficients go to the compact store
// (sp_jpeg_coefficients.c), bounded by the memory limit; it is installed here because libjpeg requests the
// arrays in jpeg_start_decompress, which reads every scan. With a band budget the store keeps values for the
// band only and may shrink it; the rows it kept, less the margin, are this band's output.
static void note_geometry(j_decompress_ptr cinfo, sp_jpeg_geometry *geometry) {
    memset(geometry, 0, sizeof *geometry);
    geometry->image_width = cinfo->image_width;
    geometry->image_height = cinfo->image_height;
    geometry->output_width = cinfo->output_width;
    geometry->output_height = cinfo->output_height;
    geometry->total_iMCU_rows = cinfo->total_iMCU_rows;
    geometry->num_components = cinfo->num_components;
    geometry->output_components = cinfo->output_components;
    geometry->progressive = cinfo->progressive_mode ? 1 : 0;
    geometry->color_space = (int)cinfo->jpeg_color_space;
    for (int c = 0; c < cinfo->num_components && c < MAX_COMPONENTS; c++) {
        geometry->component_id[c] = cinfo->comp_info[c].component_id;
        geometry->h_samp_factor[c] = cinfo->comp_info[c].h_samp_factor;
        geometry->v_samp_factor[c] = cinfo->comp_info[c].v_samp_factor;
    }
}

// A band's decode reads the file again from its start. Before it decodes anything, the header it read must
// describe the image of the first decode: the caller sized its row buffers for that output width, and the
// bands are counted in its iMCU rows. A file rewritten in between fails the read instead.
static void check_same_image(sp_jpeg_reader *reader) {
    sp_jpeg_geometry now;
    note_geometry(&reader->cinfo, &now);
    if (memcmp(&now, &reader->first, sizeof now) != 0) {
        sp_jpeg_fail_with((j_common_ptr)&reader->cinfo,
                  "the file changed while it was read (another image when it was read again for the next band)");
    }
}

// The size of the source in bytes (0 when unknown).
static long source_bytes(const sp_jpeg_reader *reader) {
    if (reader->file == NULL) return (long)reader->memory_length;
    struct stat status;
    return fstat(fileno(reader->file), &status) == 0 ? (long)status.st_size : 0;
}

static void start_band(sp_jpeg_reader *reader, JDIMENSION first_iMCU) {
    struct jpeg_decompress_struct *cinfo = &reader->cinfo;
    cinfo->scale_num = (unsigned int)reader->scale_num;
    cinfo->scale_denom = 8;
    cinfo->out_color_space = reader->out_color_space;
    cinfo->dct_method = JDCT_ISLOW;
    jpeg_calc_output_dimensions(cinfo);   // jpeg_start_decompress computes them again, the same
    if (reader->bands == 0) {
        note_geometry(cinfo, &reader->first);
    } else {
        check_same_image(reader);
    }
    JDIMENSION total = cinfo->total_iMCU_rows;
    if (!reader->full_coefficients) {
        sp_coef_store_install(cinfo, &reader->store, reader->limits.max_memory);
        sp_coef_store_set_vector(&reader->store, !reader->portable_store);
        if (reader->band_budget > 0) {
            JDIMENSION keep_start = first_iMCU > SP_COEF_MARGIN_BEFORE ? first_iMCU - SP_COEF_MARGIN_BEFORE : 0;
            // At most max_bands decodes: a band is at least total / max_bands iMCU rows, even over the budget.
            JDIMENSION least = (total + (JDIMENSION)reader->max_bands - 1) / (JDIMENSION)reader->max_bands;
            if (least < 1) least = 1;
            JDIMENSION min_end = first_iMCU + least + SP_COEF_MARGIN_AFTER;
            // Where the band starts out ending. Every scan is read up to there until the store passes the budget
            // and the band shrinks, so rows past its final end cost their early scans for nothing (with the
            // skipper, sp_jpeg_band_skip.h, the next band reads them again). After the first decode, start from a
            // band an eighth larger than the last one kept. The first decode has only the file's size: a file
            // clearly larger than one band (its store is 2.2–2.7 times the file at the bench's 2/8 and 3/8
            // scales) starts from the rows 2.2 times its bytes would fill; a wrong guess costs a decode of the
            // early scans of a few rows, or one more band.
            JDIMENSION end = total;
            if (reader->bands > 0 && reader->band_rows > 0) {
                end = keep_start + reader->band_rows + reader->band_rows / 8;
            } else if (reader->limits.max_scans > 0 && cinfo->progressive_mode && !cinfo->arith_code) {
                double guess = 2.2 * (double)source_bytes(reader);
                if (guess > 1.5 * (double)reader->band_budget) end = (JDIMENSION)((double)total * (double)reader->band_budget / guess);
            }
            if (end > total) end = total;
            if (min_end > total) min_end = total;
            if (end < min_end) end = min_end;
            sp_coef_store_set_band(&reader->store, reader->band_budget, keep_start, end, min_end);
            // The first decode records which positions each refinement scan reads; the later ones know the
            // whole script and keep of a block's map only what a later scan reads.
            if (reader->refines == NULL && reader->limits.max_scans > 0) {
                reader->scan_capacity = reader->limits.max_scans + 2;
                reader->refines = calloc((size_t)reader->scan_capacity * 4, sizeof(uint64_t));
                reader->later = calloc((size_t)reader->scan_capacity * 4, sizeof(uint64_t));
                if (reader->refines == NULL || reader->later == NULL) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 93);
            }
            if (reader->refines != NULL) {
                sp_coef_store_set_history(&reader->store, reader->bands == 0 ? reader->refines : NULL,
                                          reader->bands == 0 ? NULL : reader->later, reader->scan_capacity);
                // Every scan read over this band's rows only, from the checkpoints the last decode saved; this
                // decode saves them where the next band may start (its end less the margins, the end being
                // somewhere from min_end to end).
                if (!reader->skip_ready) reader->skip_ready = sp_band_skip_init(&reader->skip, reader->scan_capacity);
                if (reader->skip_ready) {
                    reader->skip.file = reader->file;
                    reader->skip.memory = reader->memory;
                    reader->skip.memory_length = reader->memory_length;
                    JDIMENSION start_row = reader->bands == 0 ? 0 : reader->next_start_row;
                    JDIMENSION margins = SP_COEF_MARGIN_BEFORE + SP_COEF_MARGIN_AFTER;
                    JDIMENSION save_from = min_end > margins ? min_end - margins : 0;
                    if (save_from < start_row) save_from = start_row;
                    sp_band_skip_begin(&reader->skip, 1, start_row, save_from, end > margins ? end - margins : 0);
                    sp_coef_store_set_skip(&reader->store, &reader->skip);
                }
            }
        }
    }
    jpeg_start_decompress(cinfo);
    if (reader->bands == 0 && reader->refines != NULL) {
        sp_coef_history_from_refines(reader->refines, reader->later, reader->scan_capacity);
    }
    reader->bands += 1;
    size_t peak = reader->full_coefficients ? 0 : reader->store.peak_bytes;
    if (peak > reader->store_peak) reader->store_peak = peak;
    // This band's output: up to the margin before the first row the store did not keep.
    JDIMENSION lines = (JDIMENSION)(cinfo->min_DCT_scaled_size * cinfo->max_v_samp_factor);
    reader->band_end_row = cinfo->output_height;
    reader->band_end_iMCU = total;
    if (!reader->full_coefficients && reader->band_budget > 0 && reader->store.keep_end < total) {
        JDIMENSION end = reader->store.keep_end - SP_COEF_MARGIN_AFTER;
        reader->band_rows = reader->store.keep_end - reader->store.keep_start;
        reader->band_end_iMCU = end;
        if ((size_t)end * lines < cinfo->output_height) reader->band_end_row = end * lines;
        reader->next_start_row = 0;
        if (reader->skip_ready && reader->skip.active && end > SP_COEF_MARGIN_BEFORE) {
            reader->next_start_row = sp_band_skip_prepare_next(&reader->skip, end - SP_COEF_MARGIN_BEFORE);
        }
    }
    if (first_iMCU > 0) jpeg_skip_scanlines(cinfo, first_iMCU * lines);
}

// Ends this band's decode and starts the next one's: the same source from its start, the same parameters.
static void next_band(sp_jpeg_reader *reader) {
    struct jpeg_decompress_struct *cinfo = &reader->cinfo;
    JDIMENSION first = reader->band_end_iMCU;
    jpeg_abort_decompress(cinfo);
    if (reader->file != NULL) {
        if (fseek(reader->file, 0, SEEK_SET) != 0) ERREXIT(cinfo, JERR_FILE_READ);
        jpeg_stdio_src(cinfo, reader->file);
    } else {
        jpeg_mem_src(cinfo, reader->memory, (unsigned long)reader->memory_length);
    }
    // The first read saved the markers (the caller has copied them; they went with the image pool just now):
    // a re-read saves none. With length 0 libjpeg still parses APP0 and APP14 (JFIF, the Adobe transform) and
    // skips the rest, as it does for a header read without save_markers.
    jpeg_save_markers(cinfo, JPEG_COM, 0);
    for (int m = 0; m < 16; m++) jpeg_save_markers(cinfo, JPEG_APP0 + m, 0);
    reader->error.quiet = 1;
    if (jpeg_read_header(cinfo, TRUE) != JPEG_HEADER_OK) ERREXIT(cinfo, JERR_NO_IMAGE);
    start_band(reader, first);
}

sp_status sp_jpeg_reader_start(sp_jpeg_reader *reader, int scale_num, sp_jpeg_out_space space,
                               int *out_width, int *out_height, int *out_components, char *message) {
    if (scale_num < 1 || scale_num > 8) { copy_message(message, "scale must be 1...8 eighths"); return SP_ERR_ARGUMENT; }
    if (setjmp(reader->error.jump)) return sp_jpeg_failure(&reader->error, message);
    struct jpeg_decompress_struct *cinfo = &reader->cinfo;
    reader->scale_num = scale_num;
    switch (space) {
    case SP_JPEG_OUT_GRAY: reader->out_color_space = JCS_GRAYSCALE; break;
    case SP_JPEG_OUT_CMYK: reader->out_color_space = JCS_CMYK; break;
    default: reader->out_color_space = JCS_RGB; break;
    }
    start_band(reader, 0);
    reader->started = 1;
    *out_width = (int)cinfo->output_width;
    *out_height = (int)cinfo->output_height;
    *out_components = cinfo->output_components;
    return SP_OK;
}

void sp_jpeg_reader_use_full_coefficients(sp_jpeg_reader *reader, int full) {
    reader->full_coefficients = full ? 1 : 0;
}

void sp_jpeg_reader_use_portable_store(sp_jpeg_reader *reader, int portable) {
    reader->portable_store = portable ? 1 : 0;
}

int sp_jpeg_reader_store_vector(const sp_jpeg_reader *reader) {
    return !reader->full_coefficients && reader->store.vector;
}

void sp_jpeg_reader_set_band_budget(sp_jpeg_reader *reader, long budget, int max_bands) {
    // Another decode needs the source again from its start: a file that cannot seek (a pipe) gets one.
    int seekable = reader->file == NULL || fseek(reader->file, 0, SEEK_CUR) == 0;
    reader->band_budget = seekable && max_bands > 1 ? budget : 0;
    reader->max_bands = max_bands;
}

size_t sp_jpeg_reader_coefficient_store_peak(const sp_jpeg_reader *reader) {
    size_t peak = reader->full_coefficients ? 0 : reader->store.peak_bytes;
    return peak > reader->store_peak ? peak : reader->store_peak;
}

int sp_jpeg_reader_band_count(const sp_jpeg_reader *reader) {
    return reader->bands;
}

long sp_jpeg_reader_entropy_rows(const sp_jpeg_reader *reader) {
    return reader->skip_ready && reader->skip.base_consume_data != NULL ? reader->skip.rows_read : -1;
}

sp_status sp_jpeg_reader_read_rows(sp_jpeg_reader *reader, uint8_t *buffer, size_t row_bytes, int max_rows,
                                   int *rows_read, char *message) {
    *rows_read = 0;
    if (setjmp(reader->error.jump)) return sp_jpeg_failure(&reader->error, message);
    struct jpeg_decompress_struct *cinfo = &reader->cinfo;
    if (cinfo->output_scanline >= cinfo->output_height) return SP_ERR_END;
    // Every band's output has the first decode's width (check_same_image), so this holds for all of them.
    if (buffer == NULL || row_bytes < (size_t)cinfo->output_width * (size_t)cinfo->output_components) {
        copy_message(message, "row buffer narrower than a decoded row");
        return SP_ERR_ARGUMENT;
    }
    int done = 0;
    while (done < max_rows && cinfo->output_scanline < cinfo->output_height) {
        if (cinfo->output_scanline >= reader->band_end_row) next_band(reader);
        JSAMPROW rows[16];
        int batch = max_rows - done;
        if (batch > 16) batch = 16;
        if ((JDIMENSION)batch > reader->band_end_row - cinfo->output_scanline) {
            batch = (int)(reader->band_end_row - cinfo->output_scanline);
        }
        for (int i = 0; i < batch; i++) rows[i] = buffer + (size_t)(done + i) * row_bytes;
        JDIMENSION got = jpeg_read_scanlines(cinfo, rows, (JDIMENSION)batch);
        if (got == 0) break;
        done += (int)got;
        *rows_read = done;
    }
    return SP_OK;
}

sp_status sp_jpeg_reader_finish(sp_jpeg_reader *reader, char *message) {
    if (setjmp(reader->error.jump)) return sp_jpeg_failure(&reader->error, message);
    if (reader->started && reader->cinfo.output_scanline >= reader->cinfo.output_height) {
        jpeg_finish_decompress(&reader->cinfo);
    }
    return SP_OK;
}

int sp_jpeg_reader_warning_count(const sp_jpeg_reader *reader, char *last_warning) {
    copy_message(last_warning, reader->error.last_warning);
    return reader->error.warnings;
}

void sp_jpeg_reader_free(sp_jpeg_reader *reader) {
    if (reader == NULL) return;
    // jpeg_destroy never calls error_exit, but guard anyway so a longjmp cannot land in a stale frame.
    if (setjmp(reader->error.jump) == 0) jpeg_destroy_decompress(&reader->cinfo);
    if (reader->file != NULL) fclose(reader->file);
    free(reader->refines);
    free(reader->later);
    if (reader->skip_ready) sp_band_skip_free(&reader->skip);
    free(reader);
}

// MARK: - SSIMULACRA2 of an encode against its bitmap

sp_status sp_jpeg_ssimulacra2(const uint8_t *jpeg, size_t length, const uint8_t *pixels, int width, int height,
                              int channels, double *score, char *message) {
    if (jpeg == NULL || length == 0 || pixels == NULL || width <= 0 || height <= 0 || channels < 1 || channels > 4) {
        copy_message(message, "SSIMULACRA2 needs an encoded file and its bitmap");
        return SP_ERR_ARGUMENT;
    }
    struct jpeg_decompress_struct cinfo;
    sp_error_mgr error;
    uint8_t *rows = NULL;
    sp_ssimulacra2 *scorer = NULL;
    sp_jpeg_install_error_manager((j_common_ptr)&cinfo, &error);
    if (setjmp(error.jump)) {
        sp_status status = sp_jpeg_failure(&error, message);
        jpeg_destroy_decompress(&cinfo);
        free(rows);
        sp_ssimulacra2_free(scorer);
        return status;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, jpeg, (unsigned long)length);
    jpeg_read_header(&cinfo, TRUE);
    // The bitmap's own colour model: gray against gray, anything else decoded as RGB.
    const int decoded_channels = channels < 3 ? 1 : 3;
    cinfo.out_color_space = decoded_channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(&cinfo);
    if ((int)cinfo.output_width != width || (int)cinfo.output_height != height ||
        cinfo.output_components != decoded_channels) {
        sp_jpeg_fail_with((j_common_ptr)&cinfo, "the encode is not the bitmap's size");
    }
    if (sp_ssimulacra2_new(width, height, &scorer, NULL) != SP_OK) {
        sp_jpeg_fail_with((j_common_ptr)&cinfo, "out of memory");
    }
    const size_t stride = (size_t)width * decoded_channels, source_stride = (size_t)width * channels;
    rows = malloc(stride * 8 + (decoded_channels == channels ? 0 : (size_t)width * decoded_channels * 8));
    if (rows == NULL) sp_jpeg_fail_with((j_common_ptr)&cinfo, "out of memory");
    uint8_t *reference_rows = rows + stride * 8;
    while (cinfo.output_scanline < cinfo.output_height) {
        int first = (int)cinfo.output_scanline;
        int count = height - first < 8 ? height - first : 8;
        while ((int)cinfo.output_scanline < first + count) {
            JSAMPROW row = rows + (size_t)((int)cinfo.output_scanline - first) * stride;
            jpeg_read_scanlines(&cinfo, &row, 1);
        }
        const uint8_t *reference = pixels + (size_t)first * source_stride;
        if (decoded_channels != channels) {
            // Gray with alpha (2) or RGBA (4): the colour samples alone, as the encoder took them.
            for (int r = 0; r < count; r++) {
                for (int x = 0; x < width; x++) {
                    for (int c = 0; c < decoded_channels; c++) {
                        reference_rows[((size_t)r * width + x) * decoded_channels + c] =
                            reference[(size_t)r * source_stride + (size_t)x * channels + c];
                    }
                }
            }
            reference = reference_rows;
        }
        sp_ssimulacra2_push_rows(scorer, reference, rows, decoded_channels, stride, count);
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    free(rows);
    *score = sp_ssimulacra2_score(scorer);
    sp_ssimulacra2_free(scorer);
    return SP_OK;
}
