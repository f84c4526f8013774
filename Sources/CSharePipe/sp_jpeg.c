// libjpeg calls, each behind its own setjmp. libjpeg reports errors by calling error_exit, whose default
// prints and calls exit(); ours formats the message into the reader and longjmps back to the shim function
// that made the call, which returns a status. Swift never sees the longjmp.
#include "sp_jpeg.h"

#include <jpeglib.h>
#include <jerror.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    char last_warning[JMSG_LENGTH_MAX];
    int warnings;
} sp_error_mgr;

struct sp_jpeg_reader {
    struct jpeg_decompress_struct cinfo;
    sp_error_mgr error;
    FILE *file;
    int started;
};

static void copy_message(char *message, const char *text) {
    if (message == NULL) return;
    strncpy(message, text, SP_MESSAGE_LENGTH - 1);
    message[SP_MESSAGE_LENGTH - 1] = '\0';
}

static void sp_error_exit(j_common_ptr cinfo) {
    sp_error_mgr *error = (sp_error_mgr *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, error->message);
    longjmp(error->jump, 1);
}

// Level -1 is a warning about corrupt data. Premature end of data is treated as an error: a truncated
// file would otherwise decode with its missing rows filled grey and be posted as if whole.
static void sp_emit_message(j_common_ptr cinfo, int level) {
    sp_error_mgr *error = (sp_error_mgr *)cinfo->err;
    if (level >= 0) return;  // trace messages
    if (cinfo->err->msg_code == JWRN_JPEG_EOF) {
        strcpy(error->message, "premature end of JPEG data (file is truncated)");
        longjmp(error->jump, 1);
    }
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
}

static sp_status reader_create(long max_memory, sp_jpeg_reader **out, char *message) {
    sp_jpeg_reader *reader = calloc(1, sizeof(sp_jpeg_reader));
    if (reader == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    install_error_manager((j_common_ptr)&reader->cinfo, &reader->error);
    if (setjmp(reader->error.jump)) {
        copy_message(message, reader->error.message);
        free(reader);
        return SP_ERR_LIBRARY;
    }
    jpeg_create_decompress(&reader->cinfo);
    // Caps libjpeg's big arrays (a progressive file's coefficients): past it libjpeg fails cleanly
    // ("backing store not supported") instead of allocating without bound.
    if (max_memory > 0) reader->cinfo.mem->max_memory_to_use = max_memory;
    *out = reader;
    return SP_OK;
}

sp_status sp_jpeg_reader_open_file(const char *path, long max_memory, sp_jpeg_reader **out, char *message) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) { copy_message(message, "cannot open file for reading"); return SP_ERR_IO; }
    sp_status status = reader_create(max_memory, out, message);
    if (status != SP_OK) { fclose(file); return status; }
    (*out)->file = file;
    jpeg_stdio_src(&(*out)->cinfo, file);  // a 4 KiB buffer: the file is streamed, never held whole
    return SP_OK;
}

sp_status sp_jpeg_reader_open_memory(const uint8_t *data, size_t length, long max_memory, sp_jpeg_reader **out, char *message) {
    if (data == NULL || length == 0) { copy_message(message, "empty input"); return SP_ERR_ARGUMENT; }
    sp_status status = reader_create(max_memory, out, message);
    if (status != SP_OK) return status;
    jpeg_mem_src(&(*out)->cinfo, data, (unsigned long)length);
    return SP_OK;
}

sp_status sp_jpeg_reader_read_header(sp_jpeg_reader *reader, int save_markers, sp_jpeg_header *header, char *message) {
    if (setjmp(reader->error.jump)) { copy_message(message, reader->error.message); return SP_ERR_LIBRARY; }
    if (save_markers) {
        // A marker segment is at most 65533 bytes of payload; keep all of each.
        jpeg_save_markers(&reader->cinfo, JPEG_COM, 0xFFFF);
        for (int m = 0; m < 16; m++) jpeg_save_markers(&reader->cinfo, JPEG_APP0 + m, 0xFFFF);
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

sp_jpeg_marker sp_jpeg_reader_marker(const sp_jpeg_reader *reader, int index) {
    sp_jpeg_marker result = {0, NULL, 0};
    int i = 0;
    for (jpeg_saved_marker_ptr m = reader->cinfo.marker_list; m != NULL; m = m->next, i++) {
        if (i == index) {
            result.marker = m->marker;
            result.data = m->data;
            result.length = m->data_length;
            break;
        }
    }
    return result;
}

sp_status sp_jpeg_reader_start(sp_jpeg_reader *reader, int scale_num, sp_jpeg_out_space space,
                               int *out_width, int *out_height, int *out_components, char *message) {
    if (scale_num < 1 || scale_num > 8) { copy_message(message, "scale must be 1...8 eighths"); return SP_ERR_ARGUMENT; }
    if (setjmp(reader->error.jump)) { copy_message(message, reader->error.message); return SP_ERR_LIBRARY; }
    struct jpeg_decompress_struct *cinfo = &reader->cinfo;
    cinfo->scale_num = (unsigned int)scale_num;
    cinfo->scale_denom = 8;
    switch (space) {
    case SP_JPEG_OUT_GRAY: cinfo->out_color_space = JCS_GRAYSCALE; break;
    case SP_JPEG_OUT_CMYK: cinfo->out_color_space = JCS_CMYK; break;
    default: cinfo->out_color_space = JCS_RGB; break;
    }
    cinfo->dct_method = JDCT_ISLOW;
    jpeg_start_decompress(cinfo);
    reader->started = 1;
    *out_width = (int)cinfo->output_width;
    *out_height = (int)cinfo->output_height;
    *out_components = cinfo->output_components;
    return SP_OK;
}

sp_status sp_jpeg_reader_read_rows(sp_jpeg_reader *reader, uint8_t *buffer, size_t row_bytes, int max_rows,
                                   int *rows_read, char *message) {
    *rows_read = 0;
    if (setjmp(reader->error.jump)) { copy_message(message, reader->error.message); return SP_ERR_LIBRARY; }
    struct jpeg_decompress_struct *cinfo = &reader->cinfo;
    if (cinfo->output_scanline >= cinfo->output_height) return SP_ERR_END;
    int done = 0;
    while (done < max_rows && cinfo->output_scanline < cinfo->output_height) {
        JSAMPROW rows[16];
        int batch = max_rows - done;
        if (batch > 16) batch = 16;
        for (int i = 0; i < batch; i++) rows[i] = buffer + (size_t)(done + i) * row_bytes;
        JDIMENSION got = jpeg_read_scanlines(cinfo, rows, (JDIMENSION)batch);
        if (got == 0) break;
        done += (int)got;
        *rows_read = done;
    }
    return SP_OK;
}

sp_status sp_jpeg_reader_finish(sp_jpeg_reader *reader, char *message) {
    if (setjmp(reader->error.jump)) { copy_message(message, reader->error.message); return SP_ERR_LIBRARY; }
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

sp_status sp_jpeg_encode(const uint8_t *pixels, int width, int height, int components,
                         sp_jpeg_encode_settings settings,
                         const sp_jpeg_marker *markers, int marker_count,
                         uint8_t **out, size_t *out_length, char *message) {
    if (pixels == NULL || width <= 0 || height <= 0 || (components != 1 && components != 3)) {
        copy_message(message, "encoder needs a gray or RGB bitmap");
        return SP_ERR_ARGUMENT;
    }
    struct jpeg_compress_struct cinfo;
    sp_error_mgr error;
    sp_memory_destination dest;
    memset(&dest, 0, sizeof(dest));
    dest.capacity = 65536;
    dest.buffer = malloc(dest.capacity);
    if (dest.buffer == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }

    install_error_manager((j_common_ptr)&cinfo, &error);
    if (setjmp(error.jump)) {
        copy_message(message, error.message);
        jpeg_destroy_compress(&cinfo);
        free(dest.buffer);
        return SP_ERR_LIBRARY;
    }
    jpeg_create_compress(&cinfo);
    dest.pub.init_destination = dest_init;
    dest.pub.empty_output_buffer = dest_empty;
    dest.pub.term_destination = dest_term;
    cinfo.dest = &dest.pub;

    cinfo.image_width = (JDIMENSION)width;
    cinfo.image_height = (JDIMENSION)height;
    cinfo.input_components = components;
    cinfo.in_color_space = components == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, settings.quality, TRUE);
    cinfo.optimize_coding = settings.optimize_coding ? TRUE : FALSE;
    cinfo.write_JFIF_header = settings.write_jfif ? TRUE : FALSE;
    cinfo.dct_method = JDCT_ISLOW;
    if (components == 3) {
        int factor = settings.subsample_420 ? 2 : 1;
        cinfo.comp_info[0].h_samp_factor = factor;
        cinfo.comp_info[0].v_samp_factor = factor;
        cinfo.comp_info[1].h_samp_factor = 1; cinfo.comp_info[1].v_samp_factor = 1;
        cinfo.comp_info[2].h_samp_factor = 1; cinfo.comp_info[2].v_samp_factor = 1;
    }
    if (settings.progressive) jpeg_simple_progression(&cinfo);

    jpeg_start_compress(&cinfo, TRUE);
    for (int i = 0; i < marker_count; i++) {
        jpeg_write_marker(&cinfo, markers[i].marker, markers[i].data, markers[i].length);
    }
    size_t stride = (size_t)width * (size_t)components;
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW rows[16];
        int batch = 0;
        while (batch < 16 && cinfo.next_scanline + (JDIMENSION)batch < cinfo.image_height) {
            rows[batch] = (JSAMPROW)(pixels + (size_t)(cinfo.next_scanline + (JDIMENSION)batch) * stride);
            batch++;
        }
        jpeg_write_scanlines(&cinfo, rows, (JDIMENSION)batch);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    *out = dest.buffer;
    *out_length = dest.length;
    return SP_OK;
}
