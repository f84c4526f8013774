// libpng calls, each behind its own setjmp. libpng reports errors by calling the error function, which must
// not return; ours copies the message into the reader (or encoder) state and longjmps back to the shim
// function that made the call, which returns a status. Swift never sees the longjmp.
//
// State that the error path touches lives in heap structs whose pointers are set before setjmp, so
// nothing the longjmp restores is an automatic variable modified in between.
#include "sp_png.h"

#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    jmp_buf jump;
    char message[SP_MESSAGE_LENGTH];
    char last_warning[SP_MESSAGE_LENGTH];
    int warnings;
    int data_after_image;   // libpng found compressed data (or IDATs) after the image: "Too much image data"
} sp_png_error_state;

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

#define copy_message sp_copy_message

static void on_error(png_structp png, png_const_charp text) {
    sp_png_error_state *error = (sp_png_error_state *)png_get_error_ptr(png);
    // libpng explains an IHDR refusal (e.g. "Image width exceeds user limit") in warnings and then fails
    // with a generic "Invalid IHDR data": keep the explanation.
    if (error->warnings > 0 && strcmp(text, "Invalid IHDR data") == 0) {
        snprintf(error->message, SP_MESSAGE_LENGTH, "%s (%s)", text, error->last_warning);
    } else {
        copy_message(error->message, text);
    }
    longjmp(error->jump, 1);
}

static void on_warning(png_structp png, png_const_charp text) {
    sp_png_error_state *error = (sp_png_error_state *)png_get_error_ptr(png);
    error->warnings += 1;
    copy_message(error->last_warning, text);
    if (strstr(text, "Too much image data") != NULL || strstr(text, "Too many IDATs") != NULL) error->data_after_image = 1;
}

// libpng 1.6 recognises the widespread HP/Microsoft "sRGB IEC61966-2.1" profile (3,144 bytes, in countless
// files from old Photoshop, GIMP and Windows tools) and flags it "known incorrect sRGB profile": a warning on
// read, an error on write, so every such PNG that needs resizing would fail at encode. Browsers use the
// profile as it is; so do we: the check is skipped and the profile is kept byte for byte.
static void skip_srgb_profile_check(png_structp png) {
    png_set_option(png, PNG_SKIP_sRGB_CHECK_PROFILE, PNG_OPTION_ON);
}

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

// MARK: - Encoding

// The encoder's state, on the heap (see the note at the top). The output buffer is ours, so it can be
// freed when an error unwinds the encoder.
typedef struct {
    sp_png_error_state error;
    png_structp png;
    png_infop info;
    uint8_t *buffer;
    size_t capacity;
    size_t length;
} sp_png_encoder;

static void write_to_memory(png_structp png, png_bytep data, size_t length) {
    sp_png_encoder *encoder = (sp_png_encoder *)png_get_io_ptr(png);
    if (length > SIZE_MAX - encoder->length) png_error(png, "encoded PNG too large");
    size_t needed = encoder->length + length;
    if (needed > encoder->capacity) {
        size_t capacity = encoder->capacity > 0 ? encoder->capacity : 65536;
        while (capacity < needed) capacity = capacity > SIZE_MAX / 2 ? needed : capacity * 2;
        uint8_t *grown = realloc(encoder->buffer, capacity);
        if (grown == NULL) png_error(png, "out of memory");
        encoder->buffer = grown;
        encoder->capacity = capacity;
    }
    memcpy(encoder->buffer + encoder->length, data, length);
    encoder->length = needed;
}

static void flush_memory(png_structp png) { (void)png; }

static int channels_of(int color_type) {
    switch (color_type) {
    case PNG_COLOR_TYPE_GRAY: return 1;
    case PNG_COLOR_TYPE_GRAY_ALPHA: return 2;
    case PNG_COLOR_TYPE_RGB: return 3;
    case PNG_COLOR_TYPE_RGB_ALPHA: return 4;
    case PNG_COLOR_TYPE_PALETTE: return 1;
    default: return 0;
    }
}

static void write_chunks(png_structp png, const uint8_t *chunk_data, const sp_png_chunk *chunks, int count,
                         int before_palette) {
    for (int i = 0; i < count; i++) {
        if ((chunks[i].before_palette != 0) != (before_palette != 0)) continue;
        png_byte type[4] = {
            (png_byte)(chunks[i].type >> 24), (png_byte)(chunks[i].type >> 16),
            (png_byte)(chunks[i].type >> 8), (png_byte)chunks[i].type
        };
        png_write_chunk(png, type, chunk_data + chunks[i].offset, chunks[i].length);
    }
}

// libpng's filter flag for a filter type 0...4, or all five for SP_PNG_FILTER_ADAPTIVE.
static int filter_mask(int filter) {
    static const int masks[5] = { PNG_FILTER_NONE, PNG_FILTER_SUB, PNG_FILTER_UP, PNG_FILTER_AVG, PNG_FILTER_PAETH };
    return filter == SP_PNG_FILTER_ADAPTIVE ? PNG_ALL_FILTERS : masks[filter];
}

// A trial encode that only counts its output bytes (sp_png_choose_filter), on the heap like the encoder.
typedef struct {
    sp_png_error_state error;
    png_structp png;
    png_infop info;
    size_t length;
} sp_png_trial;

static void count_output(png_structp png, png_bytep data, size_t length) {
    (void)data;
    sp_png_trial *trial = (sp_png_trial *)png_get_io_ptr(png);
    trial->length += length;
}

#define SP_PNG_SAMPLE_STRIPS 4
#define SP_PNG_SAMPLE_ROWS 12

// libpng's per-row heuristic (minimum sum of absolute differences) tries all five filters on every row:
// about 40 % of a zlib 3 encode of a photo, and its picks are not the smallest — on photos one filter
// (Average) for the whole image compresses smaller, on drawn images (flat areas, text) None or Up does. So
// the filter is chosen by what counts, compressed bytes, on a sample, at zlib 1: per candidate one small PNG
// of the strips, each strip led by the image row above it. That row is written with libpng's per-row choice
// (the same bytes for every candidate, and libpng keeps the row above for every filter only when it starts
// with those filters allowed; it may narrow them later), so the strip's first row is filtered against its
// real neighbour: a strip that started cold would cost Average and Paeth more than the others.
sp_status sp_png_choose_filter(const uint8_t *pixels, int width, int height, int color_type, int *filter,
                               char *message) {
    int channels = color_type == PNG_COLOR_TYPE_PALETTE ? 0 : channels_of(color_type);
    if (pixels == NULL || width <= 0 || height <= 0 || channels == 0 || filter == NULL) {
        copy_message(message, "filter choice needs an 8-bit gray or RGB bitmap");
        return SP_ERR_ARGUMENT;
    }
    int whole = height <= SP_PNG_SAMPLE_STRIPS * (SP_PNG_SAMPLE_ROWS + 1);
    int strips = whole ? 1 : SP_PNG_SAMPLE_STRIPS;
    int rows = whole ? height : SP_PNG_SAMPLE_ROWS + 1;     // with the row above, when sampled
    size_t stride = (size_t)width * (size_t)channels;
    sp_png_trial *trial = calloc(1, sizeof(sp_png_trial));
    if (trial == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    size_t sizes[5] = { 0 };
    for (int type = 0; type < 5; type++) {
        if (setjmp(trial->error.jump)) {
            copy_message(message, trial->error.message);
            png_destroy_write_struct(&trial->png, &trial->info);
            free(trial);
            return SP_ERR_LIBRARY;
        }
        trial->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &trial->error, on_error, on_warning);
        if (trial->png == NULL) { free(trial); copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
        trial->info = png_create_info_struct(trial->png);
        if (trial->info == NULL) png_error(trial->png, "out of memory");
        png_set_write_fn(trial->png, trial, count_output, flush_memory);
        png_set_IHDR(trial->png, trial->info, (png_uint_32)width, (png_uint_32)(strips * rows), 8, color_type,
                     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
        png_set_compression_level(trial->png, 1);
        png_set_filter(trial->png, PNG_FILTER_TYPE_BASE, whole ? filter_mask(type) : PNG_ALL_FILTERS);
        png_write_info(trial->png, trial->info);
        for (int strip = 0; strip < strips; strip++) {
            // Strips centred in equal bands of the image, so the sample spreads from top to bottom.
            size_t first = whole ? 0 : (size_t)(height - rows) * (size_t)(2 * strip + 1) / (size_t)(2 * strips);
            for (int row = 0; row < rows; row++) {
                if (!whole) png_set_filter(trial->png, PNG_FILTER_TYPE_BASE, row == 0 ? PNG_ALL_FILTERS : filter_mask(type));
                png_write_row(trial->png, pixels + (first + (size_t)row) * stride);
            }
        }
        png_write_end(trial->png, NULL);
        png_destroy_write_struct(&trial->png, &trial->info);
        sizes[type] = trial->length;
        trial->length = 0;
    }
    free(trial);
    int best = 0;
    for (int type = 1; type < 5; type++) if (sizes[type] < sizes[best]) best = type;
    *filter = best;
    return SP_OK;
}

sp_status sp_png_encode(const uint8_t *pixels, int width, int height, sp_png_image_format format,
                        sp_png_encode_settings settings, const uint8_t *icc, size_t icc_length,
                        const uint8_t *chunk_data, const sp_png_chunk *chunks, int chunk_count,
                        uint8_t **out, size_t *out_length, char *message) {
    int channels = channels_of(format.color_type);
    int is_palette = format.color_type == PNG_COLOR_TYPE_PALETTE;
    int depth_ok = is_palette ? (format.bit_depth == 1 || format.bit_depth == 2 || format.bit_depth == 4 || format.bit_depth == 8)
                              : format.bit_depth == 8;
    if (pixels == NULL || width <= 0 || height <= 0 || channels == 0 || !depth_ok) {
        copy_message(message, "encoder needs an 8-bit gray, RGB or palette bitmap");
        return SP_ERR_ARGUMENT;
    }
    if (is_palette && (format.palette == NULL || format.palette_count < 1 || format.palette_count > 256
                       || format.palette_count > (1 << format.bit_depth)
                       || format.palette_alpha_count < 0 || format.palette_alpha_count > format.palette_count)) {
        copy_message(message, "palette does not fit the bit depth");
        return SP_ERR_ARGUMENT;
    }
    if (chunk_count < 0 || (chunk_count > 0 && (chunks == NULL || chunk_data == NULL))) {
        copy_message(message, "chunk list is inconsistent");
        return SP_ERR_ARGUMENT;
    }
    if (settings.zlib_level < 0 || settings.zlib_level > 9) {
        copy_message(message, "zlib level must be 0...9");
        return SP_ERR_ARGUMENT;
    }
    if (settings.filter != SP_PNG_FILTER_ADAPTIVE && (settings.filter < 0 || settings.filter > 4)) {
        copy_message(message, "filter must be a PNG filter type 0...4 or adaptive");
        return SP_ERR_ARGUMENT;
    }

    sp_png_encoder *encoder = calloc(1, sizeof(sp_png_encoder));
    if (encoder == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    if (setjmp(encoder->error.jump)) {
        copy_message(message, encoder->error.message);
        png_destroy_write_struct(&encoder->png, &encoder->info);
        free(encoder->buffer);
        free(encoder);
        return SP_ERR_LIBRARY;
    }
    encoder->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &encoder->error, on_error, on_warning);
    if (encoder->png == NULL) { free(encoder); copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    png_structp png = encoder->png;
    encoder->info = png_create_info_struct(png);
    if (encoder->info == NULL) png_error(png, "out of memory");
    png_infop info = encoder->info;
    skip_srgb_profile_check(png);
    png_set_write_fn(png, encoder, write_to_memory, flush_memory);

    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, format.bit_depth, format.color_type,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (is_palette) {
        png_color palette[256];
        for (int i = 0; i < format.palette_count; i++) {
            palette[i].red = format.palette[i * 3];
            palette[i].green = format.palette[i * 3 + 1];
            palette[i].blue = format.palette[i * 3 + 2];
        }
        png_set_PLTE(png, info, palette, format.palette_count);
        if (format.palette_alpha_count > 0) {
            png_set_tRNS(png, info, format.palette_alpha, format.palette_alpha_count, NULL);
        }
    }
    if (icc != NULL && icc_length > 0) {
        if (icc_length > PNG_UINT_31_MAX) png_error(png, "ICC profile too large");
        png_set_iCCP(png, info, "ICC profile", PNG_COMPRESSION_TYPE_BASE, icc, (png_uint_32)icc_length);
    }
    png_set_compression_level(png, settings.zlib_level);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, filter_mask(settings.filter));

    png_write_info_before_PLTE(png, info);          // signature, IHDR, iCCP
    write_chunks(png, chunk_data, chunks, chunk_count, 1);
    png_write_info(png, info);                      // PLTE, tRNS
    write_chunks(png, chunk_data, chunks, chunk_count, 0);
    if (format.bit_depth < 8) png_set_packing(png); // one index per byte in, packed indices out

    size_t stride = (size_t)width * (size_t)channels;
    for (int y = 0; y < height; y++) png_write_row(png, pixels + (size_t)y * stride);
    png_write_end(png, NULL);
    png_destroy_write_struct(&encoder->png, &encoder->info);

    *out = encoder->buffer;
    *out_length = encoder->length;
    free(encoder);
    return SP_OK;
}
