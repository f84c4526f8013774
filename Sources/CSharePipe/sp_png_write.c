// libpng's encoder behind status + message, into a growable memory buffer, and the filter choice that
// encodes a sample of rows with each filter (see sp_png_private.h for how errors come back).
#include "sp_png_private.h"

// MARK: - Encoding

// The encoder's state, on the heap (see the note in sp_png_private.h). The output buffer is ours, so it can be
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
