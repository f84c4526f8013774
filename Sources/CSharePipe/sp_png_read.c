// libpng's reader behind status + message, from a file or from memory, row by row within limits
// (see sp_png_private.h for how errors come back).
#include "sp_png_private.h"

struct sp_png_reader {
    sp_png_error_state error;
    png_structp png;
    png_infop info;
    FILE *file;
    const uint8_t *data;
    size_t length;
    size_t position;
    int info_read;
    int started;
    uint64_t rows_expected;     // calls to read_row that complete the image (height × passes)
    uint64_t rows_read;
    // Where the image ends in the zlib stream. libpng inflates whatever compressed data follows the last row
    // (png_read_finish_IDAT) before it returns that row: a stream that goes on for gigabytes costs seconds.
    // The user transform counts the rows that carry data; once the last one is in, at most
    // SP_PNG_TAIL_ALLOWANCE more input bytes are read inside read_row (the stream's end code, its Adler-32,
    // the rest of the IDAT chunk) before the read stops with tail_cut set.
    uint64_t data_rows_expected;
    uint64_t data_rows_seen;
    int in_read_row;
    int image_complete;
    int tail_cut;
    uint64_t bytes_read;
    uint64_t bytes_at_completion;
};

#define SP_PNG_TAIL_ALLOWANCE (64u << 10)

// MARK: - Reading

// Stops a read that goes on past the image's end by more than the allowance (see sp_png_reader).
static void count_input(png_structp png, sp_png_reader *reader, size_t length) {
    reader->bytes_read += length;
    if (reader->in_read_row && reader->image_complete
        && reader->bytes_read - reader->bytes_at_completion > SP_PNG_TAIL_ALLOWANCE) {
        reader->tail_cut = 1;
        png_error(png, "image data goes on after the last row");
    }
}

// Our own read functions, so a short read says "truncated" instead of libpng's bare "Read Error".
static void read_from_file(png_structp png, png_bytep data, size_t length) {
    sp_png_reader *reader = (sp_png_reader *)png_get_io_ptr(png);
    count_input(png, reader, length);
    if (fread(data, 1, length, reader->file) != length) {
        png_error(png, ferror(reader->file) ? "error reading the file" : "unexpected end of file (file is truncated)");
    }
}

static void read_from_memory(png_structp png, png_bytep data, size_t length) {
    sp_png_reader *reader = (sp_png_reader *)png_get_io_ptr(png);
    count_input(png, reader, length);
    if (length > reader->length - reader->position) {
        png_error(png, "unexpected end of data (file is truncated)");
    }
    memcpy(data, reader->data + reader->position, length);
    reader->position += length;
}

static sp_status reader_create(sp_png_reader_limits limits, sp_png_read_mode mode, sp_png_reader **out, char *message) {
    sp_png_reader *reader = calloc(1, sizeof(sp_png_reader));
    if (reader == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    if (setjmp(reader->error.jump)) {
        copy_message(message, reader->error.message);
        png_destroy_read_struct(&reader->png, &reader->info, NULL);
        free(reader);
        return SP_ERR_LIBRARY;
    }
    reader->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader->error, on_error, on_warning);
    if (reader->png == NULL) { free(reader); copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    reader->info = png_create_info_struct(reader->png);
    if (reader->info == NULL) png_error(reader->png, "out of memory");
    skip_srgb_profile_check(reader->png);
    // Second line of defence behind the Swift header checks: libpng refuses larger IHDRs itself and never
    // allocates a chunk (or an inflated iCCP/zTXt) larger than max_chunk_bytes.
    png_set_user_limits(reader->png, limits.max_width, limits.max_height);
    png_set_chunk_malloc_max(reader->png, limits.max_chunk_bytes);
    // Metadata is read by the Swift chunk walker, not here: skip every ancillary chunk but tRNS (needed to
    // expand transparency), and in ICC mode iCCP (only libpng can inflate it: zlib is not linked directly).
    png_set_keep_unknown_chunks(reader->png, PNG_HANDLE_CHUNK_NEVER, NULL, -1);
    if (mode == SP_PNG_READ_ICC) {
        static const png_byte iccp[] = { 'i', 'C', 'C', 'P', '\0' };
        png_set_keep_unknown_chunks(reader->png, PNG_HANDLE_CHUNK_AS_DEFAULT, iccp, 1);
    }
    *out = reader;
    return SP_OK;
}

sp_status sp_png_reader_open_file(const char *path, sp_png_reader_limits limits, sp_png_read_mode mode,
                                  sp_png_reader **out, char *message) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) { copy_message(message, "cannot open file for reading"); return SP_ERR_IO; }
    sp_status status = reader_create(limits, mode, out, message);
    if (status != SP_OK) { fclose(file); return status; }
    (*out)->file = file;
    png_set_read_fn((*out)->png, *out, read_from_file);
    return SP_OK;
}

sp_status sp_png_reader_open_memory(const uint8_t *data, size_t length, sp_png_reader_limits limits,
                                    sp_png_read_mode mode, sp_png_reader **out, char *message) {
    if (data == NULL || length == 0) { copy_message(message, "empty input"); return SP_ERR_ARGUMENT; }
    sp_status status = reader_create(limits, mode, out, message);
    if (status != SP_OK) return status;
    (*out)->data = data;
    (*out)->length = length;
    png_set_read_fn((*out)->png, *out, read_from_memory);
    return SP_OK;
}

sp_status sp_png_reader_read_info(sp_png_reader *reader, sp_png_header *header, char *message) {
    if (reader->info_read) { copy_message(message, "header already read"); return SP_ERR_ARGUMENT; }
    if (setjmp(reader->error.jump)) { copy_message(message, reader->error.message); return SP_ERR_LIBRARY; }
    png_read_info(reader->png, reader->info);
    reader->info_read = 1;
    header->width = png_get_image_width(reader->png, reader->info);
    header->height = png_get_image_height(reader->png, reader->info);
    header->bit_depth = png_get_bit_depth(reader->png, reader->info);
    header->color_type = png_get_color_type(reader->png, reader->info);
    header->interlaced = png_get_interlace_type(reader->png, reader->info) == PNG_INTERLACE_ADAM7 ? 1 : 0;
    header->has_trns = png_get_valid(reader->png, reader->info, PNG_INFO_tRNS) ? 1 : 0;
    return SP_OK;
}

int sp_png_reader_icc(const sp_png_reader *reader, const uint8_t **profile, uint32_t *length) {
    png_charp name = NULL;
    int compression = 0;
    png_bytep data = NULL;
    png_uint_32 size = 0;
    if (!reader->info_read || !png_get_valid(reader->png, reader->info, PNG_INFO_iCCP)) return 0;
    if (png_get_iCCP(reader->png, reader->info, &name, &compression, &data, &size) == 0) return 0;
    *profile = data;
    *length = size;
    return 1;
}

// A no-op user transform: libpng calls it once for every row that carries data, after the row is inflated and
// before the last one lets libpng inflate what follows.
static void count_data_row(png_structp png, png_row_infop row_info, png_bytep data) {
    (void)row_info; (void)data;
    sp_png_reader *reader = (sp_png_reader *)png_get_io_ptr(png);
    reader->data_rows_seen += 1;
    if (reader->data_rows_seen == reader->data_rows_expected && !reader->image_complete) {
        reader->image_complete = 1;
        reader->bytes_at_completion = reader->bytes_read;
    }
}

sp_status sp_png_reader_start(sp_png_reader *reader, sp_png_output *output, char *message) {
    if (!reader->info_read || reader->started) { copy_message(message, "start needs a header and no earlier start"); return SP_ERR_ARGUMENT; }
    if (setjmp(reader->error.jump)) { copy_message(message, reader->error.message); return SP_ERR_LIBRARY; }
    png_structp png = reader->png;
    png_infop info = reader->info;
    int color_type = png_get_color_type(png, info);
    if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color_type == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    // 16-bit samples stay 16-bit and big-endian: the Swift side keeps their fraction through resampling.
    // No gamma transform: gAMA/cHRM/iCCP travel with the image instead.
    int passes = png_set_interlace_handling(png);
    png_uint_32 width = png_get_image_width(png, info), height = png_get_image_height(png, info);
    if (png_get_interlace_type(png, info) == PNG_INTERLACE_ADAM7) {
        for (int pass = 0; pass < 7; pass++) {
            if (PNG_PASS_COLS(width, pass) > 0) reader->data_rows_expected += PNG_PASS_ROWS(height, pass);
        }
    } else {
        reader->data_rows_expected = height;
    }
    png_set_read_user_transform_fn(png, count_data_row);
    png_read_update_info(png, info);
    reader->started = 1;
    output->channels = png_get_channels(png, info);
    output->bit_depth = png_get_bit_depth(png, info);
    output->row_bytes = png_get_rowbytes(png, info);
    output->passes = passes;
    reader->rows_expected = (uint64_t)png_get_image_height(png, info) * (uint64_t)passes;
    return SP_OK;
}

sp_status sp_png_reader_read_row(sp_png_reader *reader, uint8_t *row, char *message) {
    if (!reader->started) { copy_message(message, "read_row before start"); return SP_ERR_ARGUMENT; }
    if (reader->rows_read >= reader->rows_expected) return SP_ERR_END;
    // Calls left after a cut tail are rows a pass skips (every row with data is in): libpng is not called again.
    if (reader->tail_cut) { reader->rows_read += 1; return SP_OK; }
    if (setjmp(reader->error.jump)) {
        reader->in_read_row = 0;
        if (reader->tail_cut) {
            // The row is whole (libpng combines it before inflating the rest); the stream after it is left unread.
            reader->rows_read += 1;
            return SP_OK;
        }
        copy_message(message, reader->error.message);
        return SP_ERR_LIBRARY;
    }
    reader->in_read_row = 1;
    png_read_row(reader->png, row, NULL);
    reader->in_read_row = 0;
    reader->rows_read += 1;
    return SP_OK;
}

int sp_png_reader_tail_cut(const sp_png_reader *reader) { return reader->tail_cut || reader->error.data_after_image; }

sp_status sp_png_reader_finish(sp_png_reader *reader, char *message) {
    if (setjmp(reader->error.jump)) { copy_message(message, reader->error.message); return SP_ERR_LIBRARY; }
    // Only a reader that delivered every row is at the end of the image data; png_read_end would otherwise
    // inflate the rest just to discard it. After a cut tail libpng is mid-stream: nothing more is read.
    if (reader->started && reader->rows_read == reader->rows_expected && !reader->tail_cut) png_read_end(reader->png, NULL);
    return SP_OK;
}

int sp_png_reader_warning_count(const sp_png_reader *reader, char *last_warning) {
    copy_message(last_warning, reader->error.last_warning);
    return reader->error.warnings;
}

void sp_png_reader_free(sp_png_reader *reader) {
    if (reader == NULL) return;
    // png_destroy_read_struct does not call the error function, but guard anyway so a longjmp cannot land
    // in a stale frame.
    if (setjmp(reader->error.jump) == 0) png_destroy_read_struct(&reader->png, &reader->info, NULL);
    if (reader->file != NULL) fclose(reader->file);
    free(reader);
}
