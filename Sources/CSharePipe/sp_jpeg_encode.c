// The JPEG encoder: a bitmap's rows or 4:2:0 YCbCr planes made here as libjpeg would make them, into a memory
// destination, the whole-image coefficient arrays in the compact store (sp_jpeg_encode_store.c). Every call
// is behind its own setjmp (the error manager: sp_jpeg_common.c).
#include "sp_jpeg_private.h"
#include "sp_jpeg_encode_store.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// MARK: - Encoding

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

// SharePipe's progressive script for colour: the DC of every component in one scan (no successive approximation),
// luma's first two AC coefficients in their own scan, its other 61 in two (the high bit planes, then the last
// one), each chroma component's first two and other 61 in a scan each: 8 scans. Against libjpeg's simple script
// (10 scans, successive approximation on every component) the files are smaller on most photos at 1080 pixels
// (median 0.986×, total 0.990× over 24 photos; held out: 0.980×, 0.997× over 14), its Huffman passes a quarter
// cheaper, and unlike the simple script's it was smaller than the optimized baseline file on every one of
// those 38 photos (bench/results/2026-11-29-progressive-script.md). Grey keeps libjpeg's simple script (the same
// shape for one component was larger on 3 of 6 photos).
static const jpeg_scan_info colour_scans[] = {
    {3, {0, 1, 2}, 0, 0, 0, 0},
    {1, {0}, 1, 2, 0, 0},
    {1, {0}, 3, 63, 0, 1},
    {1, {0}, 3, 63, 1, 0},
    {1, {1}, 1, 2, 0, 0},
    {1, {1}, 3, 63, 0, 0},
    {1, {2}, 1, 2, 0, 0},
    {1, {2}, 3, 63, 0, 0},
};

void sp_jpeg_set_progressive_scans(j_compress_ptr cinfo) {
    if (cinfo->num_components == 3 && cinfo->jpeg_color_space == JCS_YCbCr) {
        cinfo->scan_info = colour_scans;
        cinfo->num_scans = (int)(sizeof colour_scans / sizeof colour_scans[0]);
    } else {
        jpeg_simple_progression(cinfo);
    }
}

/// The parameters every encode shares, set on a created compressor before jpeg_start_compress.
static void set_encode_parameters(j_compress_ptr cinfo, int width, int height, int components,
                                  sp_jpeg_encode_settings settings) {
    cinfo->image_width = (JDIMENSION)width;
    cinfo->image_height = (JDIMENSION)height;
    cinfo->input_components = components;
    cinfo->in_color_space = components == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(cinfo);
    sp_jpeg_set_tables(cinfo, (sp_jpeg_quant_tables)settings.tables, settings.quality);
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
    if (settings.progressive) sp_jpeg_set_progressive_scans(cinfo);
}

void sp_jpeg_memory_destination_init(j_compress_ptr cinfo, sp_memory_destination *dest) {
    dest->pub.init_destination = dest_init;
    dest->pub.empty_output_buffer = dest_empty;
    dest->pub.term_destination = dest_term;
    cinfo->dest = &dest->pub;
}

void sp_jpeg_write_markers(j_compress_ptr cinfo, const sp_jpeg_marker *markers, int marker_count) {
    for (int i = 0; i < marker_count; i++) {
        jpeg_write_marker(cinfo, markers[i].marker, markers[i].data, markers[i].length);
    }
}

// sp_jpeg_encode_use_libjpeg_arrays: this thread's encodes keep libjpeg's own coefficient arrays (for the tests).
static _Thread_local int use_libjpeg_arrays = 0;

void sp_jpeg_encode_use_libjpeg_arrays(int on) { use_libjpeg_arrays = on != 0; }

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

    sp_jpeg_install_error_manager((j_common_ptr)&cinfo, &error);
    if (setjmp(error.jump)) {
        // A failed allocation (the store's, the destination's, libjpeg's own) is SP_ERR_MEMORY, as in the reader.
        sp_status status = sp_jpeg_failure(&error, message);
        jpeg_destroy_compress(&cinfo);
        free(dest.buffer);
        return status;
    }
    jpeg_create_compress(&cinfo);
    if (!use_libjpeg_arrays) sp_enc_store_install(&cinfo, &store);
    sp_jpeg_memory_destination_init(&cinfo, &dest);
    set_encode_parameters(&cinfo, width, height, components, settings);
    if (raw_data) cinfo.raw_data_in = TRUE;   // after jpeg_set_defaults, which clears it
    jpeg_start_compress(&cinfo, TRUE);
    sp_jpeg_write_markers(&cinfo, markers, marker_count);
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
    int rows_done;                   // image rows converted so far (sp_jpeg_planes_push_rgb_rows)
    uint8_t *pending;                // the even row of the pair not yet downsampled (width × 3 bytes)
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

sp_status sp_jpeg_planes_new(int width, int height, sp_jpeg_planes **out, char *message) {
    *out = NULL;
    if (width <= 0 || height <= 0 || width > JPEG_MAX_DIMENSION || height > JPEG_MAX_DIMENSION) {
        copy_message(message, "planes need a size within JPEG's");
        return SP_ERR_ARGUMENT;
    }
    sp_jpeg_planes *planes = calloc(1, sizeof(sp_jpeg_planes));
    if (planes == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    plane_sizes(planes, width, height);
    size_t luma = (size_t)planes->y_width * (size_t)planes->y_height;
    size_t chroma = (size_t)planes->c_width * (size_t)planes->c_height;
    // Filled as rows arrive: pages the rows have not reached are not resident yet.
    planes->y = malloc(plane_bytes(planes));
    planes->pending = malloc((size_t)width * 3);
    if (planes->y == NULL || planes->pending == NULL) {
        sp_jpeg_planes_free(planes);
        copy_message(message, "out of memory");
        return SP_ERR_MEMORY;
    }
    planes->cb = planes->y + luma;
    planes->cr = planes->cb + chroma;
    *out = planes;
    return SP_OK;
}

/// One luma row from an RGB row, every column past the right edge a copy of the last pixel.
static void convert_luma_row(const uint8_t *rgb, int width, uint8_t *y, int y_width) {
    const uint8_t *p = rgb;
    for (int x = 0; x < width; x++, p += 3) y[x] = ycc_y(p[0], p[1], p[2]);
    for (int x = width; x < y_width; x++) y[x] = y[width - 1];
}

/// One row of each chroma plane from two RGB rows (the same row twice for an odd height's last): every column
/// past the right edge a copy of the last pixel, as libjpeg's edge expansion does before it downsamples.
static void downsample_pair(const uint8_t *top, const uint8_t *bottom, int width, int c_width, uint8_t *cb,
                            uint8_t *cr) {
    const uint8_t *rows[2] = { top, bottom };
    int bias = 1;
    for (int c = 0; c < c_width; c++) {
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
}

/// After the last row: rows past the bottom are copies of the last row (libjpeg pads each component's last
/// iMCU row so).
static void pad_bottom(sp_jpeg_planes *planes) {
    int height = planes->height;
    for (int row = height; row < planes->y_height; row++) {
        memcpy(planes->y + (size_t)row * planes->y_width, planes->y + (size_t)(height - 1) * planes->y_width,
               (size_t)planes->y_width);
    }
    for (int row = (height + 1) / 2; row < planes->c_height; row++) {
        size_t last = (size_t)((height + 1) / 2 - 1) * planes->c_width;
        memcpy(planes->cb + (size_t)row * planes->c_width, planes->cb + last, (size_t)planes->c_width);
        memcpy(planes->cr + (size_t)row * planes->c_width, planes->cr + last, (size_t)planes->c_width);
    }
    free(planes->pending);
    planes->pending = NULL;
}

sp_status sp_jpeg_planes_push_rgb_rows(sp_jpeg_planes *planes, const uint8_t *rows, size_t row_bytes, int count,
                                       char *message) {
    if (planes == NULL || rows == NULL || count < 0 || row_bytes < (size_t)planes->width * 3 ||
        count > planes->height - planes->rows_done) {
        copy_message(message, "planes take RGB rows of their width, no more than their height");
        return SP_ERR_ARGUMENT;
    }
    int width = planes->width;
    for (int i = 0; i < count; i++) {
        const uint8_t *rgb = rows + (size_t)i * row_bytes;
        int row = planes->rows_done;
        convert_luma_row(rgb, width, planes->y + (size_t)row * (size_t)planes->y_width, planes->y_width);
        size_t chroma_row = (size_t)(row / 2) * (size_t)planes->c_width;
        if (row % 2 == 1) {
            downsample_pair(planes->pending, rgb, width, planes->c_width, planes->cb + chroma_row,
                            planes->cr + chroma_row);
        } else if (row == planes->height - 1) {
            // An odd height: the last row doubled.
            downsample_pair(rgb, rgb, width, planes->c_width, planes->cb + chroma_row, planes->cr + chroma_row);
        } else {
            memcpy(planes->pending, rgb, (size_t)width * 3);
        }
        planes->rows_done = row + 1;
    }
    if (planes->rows_done == planes->height && planes->pending != NULL) pad_bottom(planes);
    return SP_OK;
}

sp_status sp_jpeg_planes_from_rgb(uint8_t *pixels, int width, int height, int release_rows, sp_jpeg_planes **out,
                                  char *message) {
    *out = NULL;
    if (pixels == NULL) {
        copy_message(message, "planes need an RGB bitmap within JPEG's size");
        return SP_ERR_ARGUMENT;
    }
    sp_jpeg_planes *planes = NULL;
    sp_status status = sp_jpeg_planes_new(width, height, &planes, message);
    if (status != SP_OK) return status;
    // 64 rows at a time; with release_rows their pages go: the bitmap and the planes are never both whole.
    size_t stride = (size_t)width * 3;
    for (int first = 0; first < height; first += 64) {
        int count = height - first < 64 ? height - first : 64;
        status = sp_jpeg_planes_push_rgb_rows(planes, pixels + (size_t)first * stride, stride, count, message);
        if (status != SP_OK) { sp_jpeg_planes_free(planes); return status; }
        if (release_rows) release_pages(pixels, pixels + (size_t)(first + count) * stride);
    }
    *out = planes;
    return SP_OK;
}

int sp_jpeg_planes_rows(const sp_jpeg_planes *planes) { return planes == NULL ? 0 : planes->rows_done; }

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
    free(planes->pending);
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
    if (planes == NULL || planes->rows_done < planes->height) {
        copy_message(message, "the planes are not complete");
        return SP_ERR_ARGUMENT;
    }
    settings.subsample_420 = 1;
    return encode_with(planes->width, planes->height, 3, settings, 1, markers, marker_count, write_plane_rows, planes,
                       out, out_length, message);
}

// MARK: - Rows streamed into the compressor

// One compressor fed RGB rows as they are made: each 16 rows become one iMCU row of 4:2:0 planes (converted as
// sp_jpeg_planes_push_rgb_rows converts them) written with jpeg_write_raw_data, so neither the bitmap nor its
// planes ever exist whole; the coefficients wait in the compact store for the Huffman passes of
// jpeg_finish_compress. The same file as sp_jpeg_encode_planes on the planes of the same rows.
struct sp_jpeg_row_encoder {
    struct jpeg_compress_struct cinfo;
    sp_error_mgr error;
    sp_memory_destination dest;
    sp_enc_store store;       // cinfo.client_data points here: the encoder never moves
    int created;              // jpeg_create_compress ran (jpeg_destroy_compress is due)
    int failed;               // a libjpeg error ended the encode: every later call fails
    int width, height, y_width, c_width;
    int rows_done;
    uint8_t *band;            // one iMCU row: 16 luma rows (y_width), then 8 Cb and 8 Cr rows (c_width)
    uint8_t *pending;         // the even row of the pair not yet downsampled (width × 3 bytes)
};

size_t sp_jpeg_row_encoder_band_bytes(int width) {
    if (width <= 0 || width > JPEG_MAX_DIMENSION) return 0;
    return 16 * (size_t)((width + 7) / 8 * 8) + 16 * (size_t)((width + 15) / 16 * 8) + 3 * (size_t)width;
}

void sp_jpeg_row_encoder_free(sp_jpeg_row_encoder *encoder) {
    if (encoder == NULL) return;
    if (encoder->created) jpeg_destroy_compress(&encoder->cinfo);
    free(encoder->dest.buffer);
    free(encoder->band);
    free(encoder->pending);
    free(encoder);
}

sp_status sp_jpeg_row_encoder_new(int width, int height, sp_jpeg_encode_settings settings,
                                  const sp_jpeg_marker *markers, int marker_count, sp_jpeg_row_encoder **out,
                                  char *message) {
    *out = NULL;
    if (width <= 0 || height <= 0 || width > JPEG_MAX_DIMENSION || height > JPEG_MAX_DIMENSION) {
        copy_message(message, "the row encoder needs a size within JPEG's");
        return SP_ERR_ARGUMENT;
    }
    sp_jpeg_row_encoder *encoder = calloc(1, sizeof(sp_jpeg_row_encoder));
    if (encoder == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    encoder->width = width;
    encoder->height = height;
    encoder->y_width = (width + 7) / 8 * 8;
    encoder->c_width = (width + 15) / 16 * 8;
    encoder->band = malloc(16 * (size_t)encoder->y_width + 16 * (size_t)encoder->c_width);
    encoder->pending = malloc((size_t)width * 3);
    encoder->dest.capacity = 65536;
    encoder->dest.buffer = malloc(encoder->dest.capacity);
    if (encoder->band == NULL || encoder->pending == NULL || encoder->dest.buffer == NULL) {
        sp_jpeg_row_encoder_free(encoder);
        copy_message(message, "out of memory");
        return SP_ERR_MEMORY;
    }
    sp_jpeg_install_error_manager((j_common_ptr)&encoder->cinfo, &encoder->error);
    if (setjmp(encoder->error.jump)) {
        sp_status status = sp_jpeg_failure(&encoder->error, message);
        sp_jpeg_row_encoder_free(encoder);
        return status;
    }
    jpeg_create_compress(&encoder->cinfo);
    encoder->created = 1;
    if (!use_libjpeg_arrays) sp_enc_store_install(&encoder->cinfo, &encoder->store);
    sp_jpeg_memory_destination_init(&encoder->cinfo, &encoder->dest);
    settings.subsample_420 = 1;
    set_encode_parameters(&encoder->cinfo, width, height, 3, settings);
    encoder->cinfo.raw_data_in = TRUE;   // after jpeg_set_defaults, which clears it
    jpeg_start_compress(&encoder->cinfo, TRUE);
    sp_jpeg_write_markers(&encoder->cinfo, markers, marker_count);
    *out = encoder;
    return SP_OK;
}

// The band's first `luma_rows` rows (16 but at the bottom) as one iMCU row; rows past them point at the last
// (they hold what the whole planes' padding holds: copies of the last row, or are never read).
static void write_band(sp_jpeg_row_encoder *encoder, int luma_rows) {
    JSAMPROW y_rows[16], cb_rows[8], cr_rows[8];
    JSAMPARRAY data[3] = { y_rows, cb_rows, cr_rows };
    uint8_t *cb = encoder->band + 16 * (size_t)encoder->y_width, *cr = cb + 8 * (size_t)encoder->c_width;
    int chroma_rows = (luma_rows + 1) / 2;
    for (int i = 0; i < 16; i++) {
        y_rows[i] = encoder->band + (size_t)(i < luma_rows ? i : luma_rows - 1) * (size_t)encoder->y_width;
    }
    for (int i = 0; i < 8; i++) {
        size_t row = (size_t)(i < chroma_rows ? i : chroma_rows - 1) * (size_t)encoder->c_width;
        cb_rows[i] = cb + row;
        cr_rows[i] = cr + row;
    }
    if (jpeg_write_raw_data(&encoder->cinfo, data, 16) == 0) ERREXIT(&encoder->cinfo, JERR_BAD_BUFFER_MODE);
}

sp_status sp_jpeg_row_encoder_push_rgb_rows(sp_jpeg_row_encoder *encoder, const uint8_t *rows, size_t row_bytes,
                                            int count, char *message) {
    if (encoder == NULL || rows == NULL || count < 0 || row_bytes < (size_t)encoder->width * 3 ||
        count > encoder->height - encoder->rows_done) {
        copy_message(message, "the row encoder takes RGB rows of its width, no more than its height");
        return SP_ERR_ARGUMENT;
    }
    if (encoder->failed) { copy_message(message, "the encode failed earlier"); return SP_ERR_LIBRARY; }
    if (setjmp(encoder->error.jump)) {
        encoder->failed = 1;
        return sp_jpeg_failure(&encoder->error, message);
    }
    int width = encoder->width, y_width = encoder->y_width, c_width = encoder->c_width;
    uint8_t *cb = encoder->band + 16 * (size_t)y_width, *cr = cb + 8 * (size_t)c_width;
    for (int i = 0; i < count; i++) {
        const uint8_t *rgb = rows + (size_t)i * row_bytes;
        int row = encoder->rows_done, in_band = row % 16;
        convert_luma_row(rgb, width, encoder->band + (size_t)in_band * (size_t)y_width, y_width);
        size_t chroma_row = (size_t)(in_band / 2) * (size_t)c_width;
        if (row % 2 == 1) {
            downsample_pair(encoder->pending, rgb, width, c_width, cb + chroma_row, cr + chroma_row);
        } else if (row == encoder->height - 1) {
            downsample_pair(rgb, rgb, width, c_width, cb + chroma_row, cr + chroma_row);   // odd height
        } else {
            memcpy(encoder->pending, rgb, (size_t)width * 3);
        }
        encoder->rows_done = row + 1;
        if (in_band == 15 || row == encoder->height - 1) write_band(encoder, in_band + 1);
    }
    return SP_OK;
}

sp_status sp_jpeg_row_encoder_finish(sp_jpeg_row_encoder *encoder, uint8_t **out, size_t *out_length,
                                     char *message) {
    *out = NULL;
    *out_length = 0;
    if (encoder == NULL || encoder->rows_done < encoder->height) {
        copy_message(message, "the row encoder has not had every row");
        return SP_ERR_ARGUMENT;
    }
    if (encoder->failed) { copy_message(message, "the encode failed earlier"); return SP_ERR_LIBRARY; }
    if (setjmp(encoder->error.jump)) {
        encoder->failed = 1;
        return sp_jpeg_failure(&encoder->error, message);
    }
    // The band and the pending row are done with: gone before the Huffman passes and the output grow.
    free(encoder->band);
    encoder->band = NULL;
    free(encoder->pending);
    encoder->pending = NULL;
    jpeg_finish_compress(&encoder->cinfo);
    jpeg_destroy_compress(&encoder->cinfo);   // the store's rows go before the caller copies the output
    encoder->created = 0;
    *out = encoder->dest.buffer;
    *out_length = encoder->dest.length;
    encoder->dest.buffer = NULL;
    return SP_OK;
}
