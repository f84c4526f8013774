// libjpeg calls, each behind its own setjmp. libjpeg reports errors by calling error_exit, whose default
// prints and calls exit(); ours formats the message into the reader and longjmps back to the shim function
// that made the call, which returns a status. Swift never sees the longjmp.
#include "sp_jpeg.h"
#include "sp_jpeg_coefficients.h"
#include "sp_jpeg_encode_store.h"

#include <jpeglib.h>
#include <jerror.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/// What a banded decode's later re-reads of the file must find again: the image the first decode sized its
/// buffers and bands for. Zero-filled before it is noted, so two compare with memcmp.
typedef struct {
    JDIMENSION image_width, image_height, output_width, output_height, total_iMCU_rows;
    int num_components, output_components, progressive, color_space;
    int component_id[MAX_COMPONENTS], h_samp_factor[MAX_COMPONENTS], v_samp_factor[MAX_COMPONENTS];
} sp_jpeg_geometry;

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    char last_warning[JMSG_LENGTH_MAX];
    int warnings;
    int quiet;                 // 1: warnings not counted (a band's decode repeats the first decode's warnings)
    sp_jpeg_limit limit_hit;   // which limit ended the last call, if any
} sp_error_mgr;

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
    sp_jpeg_geometry first;    // the first decode's image; every band's re-read must find it again
};

// Bytes counted against the metadata limit for each saved segment besides its payload (libjpeg's node).
#define SEGMENT_OVERHEAD 64

#define copy_message sp_copy_message

static void sp_error_exit(j_common_ptr cinfo) {
    sp_error_mgr *error = (sp_error_mgr *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, error->message);
    // max_memory_to_use refuses a big array with "backing store not supported" (we have none); a failed
    // malloc or a request over libjpeg's 1 GB chunk limit is "insufficient memory". Both mean the image
    // needs more memory than allowed, not that it is damaged.
    int code = cinfo->err->msg_code;
    if (code == JERR_NO_BACKING_STORE || code == JERR_OUT_OF_MEMORY || code == JERR_TFILE_CREATE) {
        error->limit_hit = SP_JPEG_LIMIT_MEMORY;
    }
    longjmp(error->jump, 1);
}

// Stops at a limit: the message says which, Swift adds the numbers.
static void fail_at_limit(j_common_ptr cinfo, sp_jpeg_limit limit, const char *text) {
    sp_error_mgr *error = (sp_error_mgr *)cinfo->err;
    error->limit_hit = limit;
    // error->message is libjpeg's JMSG_LENGTH_MAX, shorter than SP_MESSAGE_LENGTH: not copy_message.
    snprintf(error->message, sizeof error->message, "%s", text);
    longjmp(error->jump, 1);
}

// Stops with a message of its own (not a limit): the call returns SP_ERR_LIBRARY.
static void fail_with(j_common_ptr cinfo, const char *text) {
    sp_error_mgr *error = (sp_error_mgr *)cinfo->err;
    snprintf(error->message, sizeof error->message, "%s", text);
    longjmp(error->jump, 1);
}

// What a shim function returns when a libjpeg call longjmped back to it.
static sp_status failure(sp_error_mgr *error, char *message) {
    copy_message(message, error->message);
    return error->limit_hit != SP_JPEG_LIMIT_NONE ? SP_ERR_MEMORY : SP_ERR_LIBRARY;
}

// Level -1 is a warning about corrupt data. Premature end of data is treated as an error: a truncated
// file would otherwise decode with its missing rows filled grey and be posted as if whole. That covers
// the file ending (JWRN_JPEG_EOF) and the image data running into the end-of-image marker before the last
// row (JWRN_HIT_MARKER with EOI next: a cut file with EOI appended, or a header claiming a larger image
// than its data). Other warnings (extraneous bytes, bad Huffman codes, a marker libjpeg resyncs on) are
// counted and reported, and the image is used.
static void sp_emit_message(j_common_ptr cinfo, int level) {
    sp_error_mgr *error = (sp_error_mgr *)cinfo->err;
    if (level >= 0) return;  // trace messages
    if (cinfo->err->msg_code == JWRN_JPEG_EOF) {
        strcpy(error->message, "premature end of JPEG data (file is truncated)");
        longjmp(error->jump, 1);
    }
    if (cinfo->err->msg_code == JWRN_HIT_MARKER && cinfo->is_decompressor
        && ((j_decompress_ptr)cinfo)->unread_marker == JPEG_EOI) {
        strcpy(error->message, "image data ends before the last row (premature end of data segment)");
        longjmp(error->jump, 1);
    }
    if (error->quiet) return;
    error->warnings += 1;
    (*cinfo->err->format_message)(cinfo, error->last_warning);
}

static void sp_output_message(j_common_ptr cinfo) { (void)cinfo; }

static void install_error_manager(j_common_ptr cinfo, sp_error_mgr *error) {
    cinfo->err = jpeg_std_error(&error->pub);
    error->pub.error_exit = sp_error_exit;
    error->pub.emit_message = sp_emit_message;
    error->pub.output_message = sp_output_message;
    error->message[0] = '\0';
    error->last_warning[0] = '\0';
    error->warnings = 0;
    error->limit_hit = SP_JPEG_LIMIT_NONE;
}

// Called by libjpeg as it consumes input. A progressive file can hold thousands of tiny scans, each of
// which makes libjpeg pass over every coefficient again: decode time grows without bound while memory does
// not. Real encoders write about 10 scans; libjpeg-turbo's own fuzzers stop at 500.
static void sp_progress_monitor(j_common_ptr cinfo) {
    if (!cinfo->is_decompressor) return;
    sp_jpeg_reader *reader = (sp_jpeg_reader *)cinfo;
    if (reader->limits.max_scans > 0 && reader->cinfo.input_scan_number > reader->limits.max_scans) {
        fail_at_limit(cinfo, SP_JPEG_LIMIT_SCANS, "too many progressive scans");
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
        fail_at_limit((j_common_ptr)cinfo, SP_JPEG_LIMIT_METADATA, "metadata segments over the limit");
    }
    if (reader->limits.max_segments > 0 && reader->metadata_segments > reader->limits.max_segments) {
        fail_at_limit((j_common_ptr)cinfo, SP_JPEG_LIMIT_SEGMENTS, "too many metadata segments");
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
    install_error_manager((j_common_ptr)&reader->cinfo, &reader->error);
    if (setjmp(reader->error.jump)) {
        sp_status status = failure(&reader->error, message);
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
    if (setjmp(reader->error.jump)) return failure(&reader->error, message);
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
        fail_with((j_common_ptr)&reader->cinfo,
                  "the file changed while it was read (another image when it was read again for the next band)");
    }
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
        if (reader->band_budget > 0) {
            JDIMENSION keep_start = first_iMCU > SP_COEF_MARGIN_BEFORE ? first_iMCU - SP_COEF_MARGIN_BEFORE : 0;
            // At most max_bands decodes: a band is at least total / max_bands iMCU rows, even over the budget.
            JDIMENSION least = (total + (JDIMENSION)reader->max_bands - 1) / (JDIMENSION)reader->max_bands;
            if (least < 1) least = 1;
            JDIMENSION min_end = first_iMCU + least + SP_COEF_MARGIN_AFTER;
            // After the first decode, start from a band a little larger than the last one kept: rows that would
            // be dropped anyway are not worth compacting with their values.
            JDIMENSION end = total;
            if (reader->bands > 0 && reader->band_rows > 0) end = keep_start + reader->band_rows + reader->band_rows / 2;
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
    if (setjmp(reader->error.jump)) return failure(&reader->error, message);
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

sp_status sp_jpeg_reader_read_rows(sp_jpeg_reader *reader, uint8_t *buffer, size_t row_bytes, int max_rows,
                                   int *rows_read, char *message) {
    *rows_read = 0;
    if (setjmp(reader->error.jump)) return failure(&reader->error, message);
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
    if (setjmp(reader->error.jump)) return failure(&reader->error, message);
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
    free(reader);
}

// MARK: - Encoding

// A growable memory destination whose buffer we own, so it can be freed when an error unwinds the encoder.
typedef struct {
    struct jpeg_destination_mgr pub;
    uint8_t *buffer;
    size_t capacity;
    size_t length;
    int failed;
} sp_memory_destination;

static void dest_init(j_compress_ptr cinfo) {
    sp_memory_destination *dest = (sp_memory_destination *)cinfo->dest;
    dest->pub.next_output_byte = dest->buffer;
    dest->pub.free_in_buffer = dest->capacity;
}

static boolean dest_empty(j_compress_ptr cinfo) {
    sp_memory_destination *dest = (sp_memory_destination *)cinfo->dest;
    size_t new_capacity = dest->capacity * 2;
    uint8_t *grown = realloc(dest->buffer, new_capacity);
    if (grown == NULL) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 10);
    dest->buffer = grown;
    dest->pub.next_output_byte = grown + dest->capacity;
    dest->pub.free_in_buffer = new_capacity - dest->capacity;
    dest->capacity = new_capacity;
    return TRUE;
}

static void dest_term(j_compress_ptr cinfo) {
    sp_memory_destination *dest = (sp_memory_destination *)cinfo->dest;
    dest->length = dest->capacity - dest->pub.free_in_buffer;
}

/// The parameters every encode shares, set on a created compressor before jpeg_start_compress.
static void set_encode_parameters(j_compress_ptr cinfo, int width, int height, int components,
                                  sp_jpeg_encode_settings settings) {
    cinfo->image_width = (JDIMENSION)width;
    cinfo->image_height = (JDIMENSION)height;
    cinfo->input_components = components;
    cinfo->in_color_space = components == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(cinfo);
    jpeg_set_quality(cinfo, settings.quality, TRUE);
    cinfo->optimize_coding = settings.optimize_coding ? TRUE : FALSE;
    cinfo->write_JFIF_header = settings.write_jfif ? TRUE : FALSE;
    cinfo->dct_method = JDCT_ISLOW;
    if (components == 3) {
        int factor = settings.subsample_420 ? 2 : 1;
        cinfo->comp_info[0].h_samp_factor = factor;
        cinfo->comp_info[0].v_samp_factor = factor;
        cinfo->comp_info[1].h_samp_factor = 1; cinfo->comp_info[1].v_samp_factor = 1;
        cinfo->comp_info[2].h_samp_factor = 1; cinfo->comp_info[2].v_samp_factor = 1;
    }
    if (settings.progressive) jpeg_simple_progression(cinfo);
}

static void init_memory_destination(j_compress_ptr cinfo, sp_memory_destination *dest) {
    dest->pub.init_destination = dest_init;
    dest->pub.empty_output_buffer = dest_empty;
    dest->pub.term_destination = dest_term;
    cinfo->dest = &dest->pub;
}

static void write_markers(j_compress_ptr cinfo, const sp_jpeg_marker *markers, int marker_count) {
    for (int i = 0; i < marker_count; i++) {
        jpeg_write_marker(cinfo, markers[i].marker, markers[i].data, markers[i].length);
    }
}

// Writes the image's rows: jpeg_write_scanlines or jpeg_write_raw_data until next_scanline reaches the end.
typedef void (*sp_encode_writer)(j_compress_ptr cinfo, const void *source);

// Every encode: the memory destination, the error manager and its setjmp, the compressor with the compact
// coefficient store, the settings and markers; `write_rows` feeds them (raw_data: YCbCr planes, raw_data_in).
static sp_status encode_with(int width, int height, int components, sp_jpeg_encode_settings settings, int raw_data,
                             const sp_jpeg_marker *markers, int marker_count, sp_encode_writer write_rows,
                             const void *source, uint8_t **out, size_t *out_length, char *message) {
    struct jpeg_compress_struct cinfo;
    sp_error_mgr error;
    sp_memory_destination dest;
    sp_enc_store store;   // the coefficient arrays of optimize_coding / progressive, compacted
    memset(&dest, 0, sizeof(dest));
    dest.capacity = 65536;
    dest.buffer = malloc(dest.capacity);
    if (dest.buffer == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }

    install_error_manager((j_common_ptr)&cinfo, &error);
    if (setjmp(error.jump)) {
        // A failed allocation (the store's, the destination's, libjpeg's own) is SP_ERR_MEMORY, as in the reader.
        sp_status status = failure(&error, message);
        jpeg_destroy_compress(&cinfo);
        free(dest.buffer);
        return status;
    }
    jpeg_create_compress(&cinfo);
    sp_enc_store_install(&cinfo, &store);
    init_memory_destination(&cinfo, &dest);
    set_encode_parameters(&cinfo, width, height, components, settings);
    if (raw_data) cinfo.raw_data_in = TRUE;   // after jpeg_set_defaults, which clears it
    jpeg_start_compress(&cinfo, TRUE);
    write_markers(&cinfo, markers, marker_count);
    write_rows(&cinfo, source);
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    *out = dest.buffer;
    *out_length = dest.length;
    return SP_OK;
}

// A bitmap's rows, 16 at a time (tightly packed, input_components bytes a pixel).
static void write_bitmap_rows(j_compress_ptr cinfo, const void *source) {
    const uint8_t *pixels = source;
    size_t stride = (size_t)cinfo->image_width * (size_t)cinfo->input_components;
    while (cinfo->next_scanline < cinfo->image_height) {
        JSAMPROW rows[16];
        int batch = 0;
        while (batch < 16 && cinfo->next_scanline + (JDIMENSION)batch < cinfo->image_height) {
            rows[batch] = (JSAMPROW)(pixels + (size_t)(cinfo->next_scanline + (JDIMENSION)batch) * stride);
            batch++;
        }
        jpeg_write_scanlines(cinfo, rows, (JDIMENSION)batch);
    }
}

sp_status sp_jpeg_encode(const uint8_t *pixels, int width, int height, int components,
                         sp_jpeg_encode_settings settings,
                         const sp_jpeg_marker *markers, int marker_count,
                         uint8_t **out, size_t *out_length, char *message) {
    if (pixels == NULL || width <= 0 || height <= 0 || (components != 1 && components != 3)) {
        copy_message(message, "encoder needs a gray or RGB bitmap");
        return SP_ERR_ARGUMENT;
    }
    return encode_with(width, height, components, settings, 0, markers, marker_count, write_bitmap_rows, pixels,
                       out, out_length, message);
}

// MARK: - 4:2:0 planes

// libjpeg's RGB → YCbCr (jccolor.c, 16-bit fixed point; Cb and Cr rounded with 0.5 − ε so they never reach
// 256) and 2×2 box downsampling with its alternating 1, 2 bias (jcsample.c h2v2_downsample). libjpeg-turbo's
// SIMD versions give the same bits, so raw data made here encodes to the same file as the RGB scanlines.
#define YCC_SCALEBITS 16
#define YCC_FIX(x) ((long)((x) * (1L << YCC_SCALEBITS) + 0.5))
#define YCC_ONE_HALF (1L << (YCC_SCALEBITS - 1))
#define YCC_CBCR_OFFSET (128L << YCC_SCALEBITS)

struct sp_jpeg_planes {
    int width, height;               // the image
    int y_width, y_height;           // luma as libjpeg reads it: whole 8×8 blocks, edges replicated
    int c_width, c_height;           // each chroma plane, the same
    uint8_t *y, *cb, *cr;            // one allocation, starting at y
};

static inline uint8_t ycc_y(int r, int g, int b) {
    return (uint8_t)((YCC_FIX(0.29900) * r + YCC_FIX(0.58700) * g + YCC_FIX(0.11400) * b + YCC_ONE_HALF) >> YCC_SCALEBITS);
}
static inline int ycc_cb(int r, int g, int b) {
    return (int)((-YCC_FIX(0.16874) * r - YCC_FIX(0.33126) * g + YCC_FIX(0.50000) * b + YCC_CBCR_OFFSET + YCC_ONE_HALF - 1)
                 >> YCC_SCALEBITS);
}
static inline int ycc_cr(int r, int g, int b) {
    return (int)((YCC_FIX(0.50000) * r - YCC_FIX(0.41869) * g - YCC_FIX(0.08131) * b + YCC_CBCR_OFFSET + YCC_ONE_HALF - 1)
                 >> YCC_SCALEBITS);
}

/// The planes of a width × height image as libjpeg reads them: luma in whole 8×8 blocks, each chroma plane
/// half the size each way, also in whole blocks (the one place these sizes are computed).
static void plane_sizes(sp_jpeg_planes *planes, int width, int height) {
    planes->width = width;
    planes->height = height;
    planes->y_width = (width + 7) / 8 * 8;
    planes->y_height = (height + 7) / 8 * 8;
    planes->c_width = (width + 15) / 16 * 8;
    planes->c_height = (height + 15) / 16 * 8;
}

static size_t plane_bytes(const sp_jpeg_planes *planes) {
    return (size_t)planes->y_width * (size_t)planes->y_height + 2 * (size_t)planes->c_width * (size_t)planes->c_height;
}

/// Gives the whole pages of [from, to) back to the system (their contents read as zero afterwards).
static void release_pages(uint8_t *from, uint8_t *to) {
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return;
    uintptr_t start = ((uintptr_t)from + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t end = (uintptr_t)to & ~(uintptr_t)(page - 1);
    if (end > start) (void)madvise((void *)start, end - start, MADV_DONTNEED);
}

sp_status sp_jpeg_planes_from_rgb(uint8_t *pixels, int width, int height, int release_rows, sp_jpeg_planes **out,
                                  char *message) {
    *out = NULL;
    if (pixels == NULL || width <= 0 || height <= 0 || width > JPEG_MAX_DIMENSION || height > JPEG_MAX_DIMENSION) {
        copy_message(message, "planes need an RGB bitmap within JPEG's size");
        return SP_ERR_ARGUMENT;
    }
    sp_jpeg_planes *planes = calloc(1, sizeof(sp_jpeg_planes));
    if (planes == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    plane_sizes(planes, width, height);
    size_t luma = (size_t)planes->y_width * (size_t)planes->y_height;
    size_t chroma = (size_t)planes->c_width * (size_t)planes->c_height;
    planes->y = malloc(plane_bytes(planes));
    if (planes->y == NULL) { free(planes); copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    planes->cb = planes->y + luma;
    planes->cr = planes->cb + chroma;

    // Two source rows at a time (the last row doubled for an odd height), every column past the right edge
    // a copy of the last pixel, as libjpeg's edge expansion does before it downsamples.
    size_t stride = (size_t)width * 3;
    for (int pair = 0; pair < (height + 1) / 2; pair++) {
        const uint8_t *rows[2] = { pixels + (size_t)(2 * pair) * stride,
                                   pixels + (size_t)(2 * pair + 1 < height ? 2 * pair + 1 : 2 * pair) * stride };
        for (int k = 0; k < 2 && 2 * pair + k < height; k++) {
            uint8_t *y = planes->y + (size_t)(2 * pair + k) * (size_t)planes->y_width;
            const uint8_t *p = rows[k];
            for (int x = 0; x < width; x++, p += 3) y[x] = ycc_y(p[0], p[1], p[2]);
            for (int x = width; x < planes->y_width; x++) y[x] = y[width - 1];
        }
        uint8_t *cb = planes->cb + (size_t)pair * (size_t)planes->c_width;
        uint8_t *cr = planes->cr + (size_t)pair * (size_t)planes->c_width;
        int bias = 1;
        for (int c = 0; c < planes->c_width; c++) {
            int sum_cb = bias, sum_cr = bias;
            for (int k = 0; k < 2; k++) {
                for (int dx = 0; dx < 2; dx++) {
                    int x = 2 * c + dx < width ? 2 * c + dx : width - 1;
                    const uint8_t *p = rows[k] + (size_t)x * 3;
                    sum_cb += ycc_cb(p[0], p[1], p[2]);
                    sum_cr += ycc_cr(p[0], p[1], p[2]);
                }
            }
            cb[c] = (uint8_t)(sum_cb >> 2);
            cr[c] = (uint8_t)(sum_cr >> 2);
            bias ^= 3;
        }
        // Every 64 rows converted, their pages go: the bitmap and the planes are never both whole.
        if (release_rows && (pair % 32 == 31 || 2 * pair + 2 >= height)) {
            int done = 2 * pair + 2 < height ? 2 * pair + 2 : height;
            release_pages(pixels, pixels + (size_t)done * stride);
        }
    }
    // Rows past the bottom: copies of the last row (libjpeg pads each component's last iMCU row so).
    for (int row = height; row < planes->y_height; row++) {
        memcpy(planes->y + (size_t)row * planes->y_width, planes->y + (size_t)(height - 1) * planes->y_width,
               (size_t)planes->y_width);
    }
    for (int row = (height + 1) / 2; row < planes->c_height; row++) {
        size_t last = (size_t)((height + 1) / 2 - 1) * planes->c_width;
        memcpy(planes->cb + (size_t)row * planes->c_width, planes->cb + last, (size_t)planes->c_width);
        memcpy(planes->cr + (size_t)row * planes->c_width, planes->cr + last, (size_t)planes->c_width);
    }
    *out = planes;
    return SP_OK;
}

size_t sp_jpeg_planes_bytes(const sp_jpeg_planes *planes) {
    return planes == NULL ? 0 : plane_bytes(planes);
}

size_t sp_jpeg_planes_bytes_for_size(int width, int height) {
    if (width <= 0 || height <= 0 || width > JPEG_MAX_DIMENSION || height > JPEG_MAX_DIMENSION) return 0;
    sp_jpeg_planes planes;
    plane_sizes(&planes, width, height);
    return plane_bytes(&planes);
}

void sp_jpeg_planes_free(sp_jpeg_planes *planes) {
    if (planes == NULL) return;
    free(planes->y);
    free(planes);
}

// One iMCU row per call: 16 luma rows and 8 of each chroma; rows past a plane's end are never read
// (libjpeg makes dummy blocks there) but must point somewhere: the last row.
static void write_plane_rows(j_compress_ptr cinfo, const void *source) {
    const sp_jpeg_planes *planes = source;
    JSAMPROW y_rows[16], cb_rows[8], cr_rows[8];
    JSAMPARRAY data[3] = { y_rows, cb_rows, cr_rows };
    while (cinfo->next_scanline < cinfo->image_height) {
        int first = (int)cinfo->next_scanline;
        for (int i = 0; i < 16; i++) {
            int row = first + i < planes->y_height ? first + i : planes->y_height - 1;
            y_rows[i] = planes->y + (size_t)row * (size_t)planes->y_width;
        }
        for (int i = 0; i < 8; i++) {
            int row = first / 2 + i < planes->c_height ? first / 2 + i : planes->c_height - 1;
            cb_rows[i] = planes->cb + (size_t)row * (size_t)planes->c_width;
            cr_rows[i] = planes->cr + (size_t)row * (size_t)planes->c_width;
        }
        if (jpeg_write_raw_data(cinfo, data, 16) == 0) ERREXIT(cinfo, JERR_BAD_BUFFER_MODE);
    }
}

sp_status sp_jpeg_encode_planes(const sp_jpeg_planes *planes, sp_jpeg_encode_settings settings,
                                const sp_jpeg_marker *markers, int marker_count,
                                uint8_t **out, size_t *out_length, char *message) {
    if (planes == NULL) { copy_message(message, "no planes"); return SP_ERR_ARGUMENT; }
    settings.subsample_420 = 1;
    return encode_with(planes->width, planes->height, 3, settings, 1, markers, marker_count, write_plane_rows, planes,
                       out, out_length, message);
}
