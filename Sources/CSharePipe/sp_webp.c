// libwebp calls. libwebp reports every error by status code and never exits, so no setjmp is needed; each
// function turns the status into an sp_status with a readable message. libwebp, libwebpdemux and libwebpmux
// are called through the tables of sp_lazy.h, loaded by the first call that creates a decoder or encodes.
#include "sp_webp.h"

#include "sp_lazy.h"
#include "sp_ssimulacra2.h"
#include <stdlib.h>
#include <string.h>

#include <webp/decode.h>
#include <webp/encode.h>
#include <webp/demux.h>
#include <webp/mux.h>

// The library this file loads on first use (sp_lazy.h).
// The header's inline initialisers (WebPInitDecoderConfig, WebPConfigInit, WebPPictureInit,
// WebPAnimDecoderOptionsInit, WebPAnimDecoderNew, WebPMuxNew) call these *Internal functions with the ABI
// version: the shim calls them the same way through the tables.
#define SP_LIBWEBP_FUNCTIONS(X) \
    X(WebPInitDecoderConfigInternal) \
    X(WebPIDecode) \
    X(WebPIAppend) \
    X(WebPIDecGetRGB) \
    X(WebPIDelete) \
    X(WebPFreeDecBuffer) \
    X(WebPConfigInitInternal) \
    X(WebPValidateConfig) \
    X(WebPPictureInitInternal) \
    X(WebPPictureImportRGB) \
    X(WebPPictureImportRGBA) \
    X(WebPPictureFree) \
    X(WebPMemoryWriterInit) \
    X(WebPMemoryWrite) \
    X(WebPMemoryWriterClear) \
    X(WebPEncode)

SP_LAZY_DECLARE(libwebp, SP_LIBWEBP_FUNCTIONS)
SP_LAZY_DEFINE(libwebp, "libwebp.so.7", "SHAREPIPE_LIBWEBP", SP_LIBWEBP_FUNCTIONS)

#define SP_LIBWEBPDEMUX_FUNCTIONS(X) \
    X(WebPAnimDecoderOptionsInitInternal) \
    X(WebPAnimDecoderNewInternal) \
    X(WebPAnimDecoderGetInfo) \
    X(WebPAnimDecoderHasMoreFrames) \
    X(WebPAnimDecoderGetNext) \
    X(WebPAnimDecoderDelete)

SP_LAZY_DECLARE(libwebpdemux, SP_LIBWEBPDEMUX_FUNCTIONS)
SP_LAZY_DEFINE(libwebpdemux, "libwebpdemux.so.2", "SHAREPIPE_LIBWEBPDEMUX", SP_LIBWEBPDEMUX_FUNCTIONS)

#define SP_LIBWEBPMUX_FUNCTIONS(X) \
    X(WebPNewInternal) \
    X(WebPMuxSetImage) \
    X(WebPMuxSetChunk) \
    X(WebPMuxAssemble) \
    X(WebPMuxDelete)

SP_LAZY_DECLARE(libwebpmux, SP_LIBWEBPMUX_FUNCTIONS)
SP_LAZY_DEFINE(libwebpmux, "libwebpmux.so.3", "SHAREPIPE_LIBWEBPMUX", SP_LIBWEBPMUX_FUNCTIONS)

static void copy_message(char *message, const char *text) { sp_copy_message(message, text); }

static const char *vp8_status_text(VP8StatusCode status) {
    switch (status) {
    case VP8_STATUS_OK: return "ok";
    case VP8_STATUS_OUT_OF_MEMORY: return "libwebp ran out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid decoding parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "damaged WebP bitstream";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported WebP feature";
    case VP8_STATUS_SUSPENDED: return "WebP data ends early (file is truncated)";
    case VP8_STATUS_USER_ABORT: return "decoding aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "WebP data ends early (file is truncated)";
    }
    return "unknown libwebp status";
}

static sp_status vp8_status(VP8StatusCode status, char *message) {
    copy_message(message, vp8_status_text(status));
    if (status == VP8_STATUS_UNSUPPORTED_FEATURE) return SP_ERR_UNSUPPORTED;
    return status == VP8_STATUS_OUT_OF_MEMORY ? SP_ERR_MEMORY : SP_ERR_LIBRARY;
}

// MARK: - Still images, incremental

struct sp_webp_decoder {
    WebPDecoderConfig config;   // must outlive the WebPIDecoder, which refers to its options and output
    WebPIDecoder *decoder;
};

sp_status sp_webp_decoder_new(int output_width, int output_height, int channels, sp_webp_decoder **out,
                              char *message) {
    *out = NULL;
    sp_status loaded = sp_libwebp_require(message);
    if (loaded != SP_OK) return loaded;
    const int unscaled = output_width == 0 && output_height == 0;
    if ((!unscaled && (output_width <= 0 || output_height <= 0)) || (channels != 3 && channels != 4)) {
        copy_message(message, "invalid output size or channel count");
        return SP_ERR_ARGUMENT;
    }
    sp_webp_decoder *decoder = calloc(1, sizeof(sp_webp_decoder));
    if (decoder == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    if (!sp_libwebp.WebPInitDecoderConfigInternal(&decoder->config, WEBP_DECODER_ABI_VERSION)) {
        free(decoder);
        copy_message(message, "libwebp version mismatch");
        return SP_ERR_LIBRARY;
    }
    decoder->config.output.colorspace = channels == 4 ? MODE_RGBA : MODE_RGB;
    // Scaling turns off libwebp's fancy upsampling even when the scaled size is the stored size, so an
    // unscaled decode (0 × 0) leaves it off: its pixels are then those of WebPDecode and WebPAnimDecoder.
    decoder->config.options.use_scaling = unscaled ? 0 : 1;
    decoder->config.options.scaled_width = output_width;
    decoder->config.options.scaled_height = output_height;
    // libwebp's worker thread runs the loop filter and row output beside the entropy decoding: the same
    // pixels (dwebp -mt gives the same bytes), ~40 % less wall time on two cores.
    decoder->config.options.use_threads = 1;
    decoder->decoder = sp_libwebp.WebPIDecode(NULL, 0, &decoder->config);
    if (decoder->decoder == NULL) {
        free(decoder);
        copy_message(message, "out of memory");
        return SP_ERR_MEMORY;
    }
    *out = decoder;
    return SP_OK;
}

sp_status sp_webp_decoder_append(sp_webp_decoder *decoder, const uint8_t *data, size_t length, int *complete,
                                 int *rows_ready, char *message) {
    *complete = 0;
    *rows_ready = 0;
    if (decoder == NULL || data == NULL || length == 0) {
        copy_message(message, "no decoder or no data");
        return SP_ERR_ARGUMENT;
    }
    VP8StatusCode status = sp_libwebp.WebPIAppend(decoder->decoder, data, length);
    int last_y = 0;
    if (sp_libwebp.WebPIDecGetRGB(decoder->decoder, &last_y, NULL, NULL, NULL) != NULL) *rows_ready = last_y;
    if (status == VP8_STATUS_OK) { *complete = 1; return SP_OK; }
    if (status == VP8_STATUS_SUSPENDED) return SP_OK;
    return vp8_status(status, message);
}

const uint8_t *sp_webp_decoder_rows(const sp_webp_decoder *decoder, int *width, int *height, int *stride) {
    int last_y = 0;
    return sp_libwebp.WebPIDecGetRGB(decoder->decoder, &last_y, width, height, stride);
}

void sp_webp_decoder_free(sp_webp_decoder *decoder) {
    if (decoder == NULL) return;
    sp_libwebp.WebPIDelete(decoder->decoder);
    sp_libwebp.WebPFreeDecBuffer(&decoder->config.output);
    free(decoder);
}

// MARK: - Animations

struct sp_webp_animation {
    WebPAnimDecoder *decoder;
};

sp_status sp_webp_animation_open(const uint8_t *data, size_t length, sp_webp_animation **out,
                                 sp_webp_animation_info *info, char *message) {
    *out = NULL;
    memset(info, 0, sizeof(*info));
    if (data == NULL || length == 0) { copy_message(message, "no data"); return SP_ERR_ARGUMENT; }
    sp_status loaded = sp_libwebpdemux_require(message);
    if (loaded != SP_OK) return loaded;
    WebPAnimDecoderOptions options;
    if (!sp_libwebpdemux.WebPAnimDecoderOptionsInitInternal(&options, WEBP_DEMUX_ABI_VERSION)) { copy_message(message, "libwebp version mismatch"); return SP_ERR_LIBRARY; }
    options.color_mode = MODE_RGBA;   // straight alpha
    // As for stills: libwebp's worker thread filters and outputs rows beside the entropy decoding of each
    // lossy frame (the same pixels).
    options.use_threads = 1;
    WebPData webp = { data, length };
    WebPAnimDecoder *decoder = sp_libwebpdemux.WebPAnimDecoderNewInternal(&webp, &options, WEBP_DEMUX_ABI_VERSION);
    if (decoder == NULL) {
        copy_message(message, "damaged or truncated animated WebP (the demuxer refused it)");
        return SP_ERR_LIBRARY;
    }
    WebPAnimInfo anim;
    if (!sp_libwebpdemux.WebPAnimDecoderGetInfo(decoder, &anim)) {
        sp_libwebpdemux.WebPAnimDecoderDelete(decoder);
        copy_message(message, "cannot read the animation's header");
        return SP_ERR_LIBRARY;
    }
    sp_webp_animation *animation = calloc(1, sizeof(sp_webp_animation));
    if (animation == NULL) {
        sp_libwebpdemux.WebPAnimDecoderDelete(decoder);
        copy_message(message, "out of memory");
        return SP_ERR_MEMORY;
    }
    animation->decoder = decoder;
    info->canvas_width = (int)anim.canvas_width;
    info->canvas_height = (int)anim.canvas_height;
    info->loop_count = (int)anim.loop_count;
    info->frame_count = (int)anim.frame_count;
    *out = animation;
    return SP_OK;
}

sp_status sp_webp_animation_next(sp_webp_animation *animation, const uint8_t **canvas, int *end_time_ms,
                                 char *message) {
    *canvas = NULL;
    *end_time_ms = 0;
    if (!sp_libwebpdemux.WebPAnimDecoderHasMoreFrames(animation->decoder)) return SP_ERR_END;
    uint8_t *buffer = NULL;
    int timestamp = 0;
    if (!sp_libwebpdemux.WebPAnimDecoderGetNext(animation->decoder, &buffer, &timestamp)) {
        copy_message(message, "damaged animation frame");
        return SP_ERR_LIBRARY;
    }
    *canvas = buffer;
    *end_time_ms = timestamp;
    return SP_OK;
}

void sp_webp_animation_free(sp_webp_animation *animation) {
    if (animation == NULL) return;
    sp_libwebpdemux.WebPAnimDecoderDelete(animation->decoder);
    free(animation);
}

// MARK: - Encoding

static const char *encoding_error_text(WebPEncodingError error) {
    switch (error) {
    case VP8_ENC_OK: return "ok";
    case VP8_ENC_ERROR_OUT_OF_MEMORY: return "libwebp ran out of memory";
    case VP8_ENC_ERROR_BITSTREAM_OUT_OF_MEMORY: return "libwebp ran out of memory for the bitstream";
    case VP8_ENC_ERROR_NULL_PARAMETER: return "missing encoder parameter";
    case VP8_ENC_ERROR_INVALID_CONFIGURATION: return "invalid encoder configuration";
    case VP8_ENC_ERROR_BAD_DIMENSION: return "image too large for WebP (16383 px at most per edge)";
    case VP8_ENC_ERROR_PARTITION0_OVERFLOW: return "partition 0 overflow (image too complex at this quality)";
    case VP8_ENC_ERROR_PARTITION_OVERFLOW: return "partition overflow";
    case VP8_ENC_ERROR_BAD_WRITE: return "write error";
    case VP8_ENC_ERROR_FILE_TOO_BIG: return "encoded WebP over 4 GiB";
    case VP8_ENC_ERROR_USER_ABORT: return "encoding aborted";
    case VP8_ENC_ERROR_LAST: break;
    }
    return "unknown libwebp encoding error";
}

/// Wraps a bare bitstream with metadata chunks (WebPMux writes VP8X with the matching flags).
static sp_status add_metadata(const uint8_t *bitstream, size_t length, const sp_webp_chunk *chunks, int chunk_count,
                              uint8_t **out, size_t *out_length, char *message) {
    sp_status loaded = sp_libwebpmux_require(message);
    if (loaded != SP_OK) return loaded;
    WebPMux *mux = sp_libwebpmux.WebPNewInternal(WEBP_MUX_ABI_VERSION);
    if (mux == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    WebPData image = { bitstream, length };
    sp_status status = SP_OK;
    WebPMuxError error = sp_libwebpmux.WebPMuxSetImage(mux, &image, 0);
    if (error != WEBP_MUX_OK) {
        snprintf(message, SP_MESSAGE_LENGTH, "cannot wrap the encoded image (mux error %d)", (int)error);
        status = SP_ERR_LIBRARY;
    }
    for (int i = 0; status == SP_OK && i < chunk_count; i++) {
        char fourcc[5] = { chunks[i].fourcc[0], chunks[i].fourcc[1], chunks[i].fourcc[2], chunks[i].fourcc[3], 0 };
        WebPData data = { chunks[i].data, chunks[i].length };
        error = sp_libwebpmux.WebPMuxSetChunk(mux, fourcc, &data, 1);
        if (error != WEBP_MUX_OK) {
            snprintf(message, SP_MESSAGE_LENGTH, "cannot add the '%s' chunk (mux error %d)", fourcc, (int)error);
            status = error == WEBP_MUX_MEMORY_ERROR ? SP_ERR_MEMORY : SP_ERR_LIBRARY;
        }
    }
    if (status == SP_OK) {
        WebPData assembled = { NULL, 0 };
        error = sp_libwebpmux.WebPMuxAssemble(mux, &assembled);
        if (error != WEBP_MUX_OK) {
            snprintf(message, SP_MESSAGE_LENGTH, "cannot assemble the WebP file (mux error %d)", (int)error);
            status = error == WEBP_MUX_MEMORY_ERROR ? SP_ERR_MEMORY : SP_ERR_LIBRARY;
        } else {
            *out = (uint8_t *)assembled.bytes;   // malloc'ed by libwebp (WebPMalloc): freed by sp_free
            *out_length = assembled.size;
        }
    }
    sp_libwebpmux.WebPMuxDelete(mux);
    return status;
}

sp_status sp_webp_encode(const uint8_t *pixels, int width, int height, int channels, sp_webp_encode_settings settings,
                         const sp_webp_chunk *chunks, int chunk_count, uint8_t **out, size_t *out_length, char *message) {
    *out = NULL;
    *out_length = 0;
    sp_status loaded = sp_libwebp_require(message);
    if (loaded != SP_OK) return loaded;
    if (pixels == NULL || width <= 0 || height <= 0 || (channels != 3 && channels != 4)) {
        copy_message(message, "invalid bitmap");
        return SP_ERR_ARGUMENT;
    }
    if (width > WEBP_MAX_DIMENSION || height > WEBP_MAX_DIMENSION) {
        copy_message(message, encoding_error_text(VP8_ENC_ERROR_BAD_DIMENSION));
        return SP_ERR_ARGUMENT;
    }
    WebPConfig config;
    if (!sp_libwebp.WebPConfigInitInternal(&config, WEBP_PRESET_DEFAULT, 75.f, WEBP_ENCODER_ABI_VERSION)) { copy_message(message, "libwebp version mismatch"); return SP_ERR_LIBRARY; }
    config.lossless = settings.lossless ? 1 : 0;
    config.quality = (float)(settings.quality < 0 ? 0 : settings.quality > 100 ? 100 : settings.quality);
    config.method = settings.method < 0 ? 0 : settings.method > 6 ? 6 : settings.method;
    config.exact = 0;               // RGB under fully transparent pixels may change (invisible)
    // A second thread for the analysis pass and alpha: the same bitstream (cwebp -mt gives the same bytes).
    config.thread_level = 1;
    if (!sp_libwebp.WebPValidateConfig(&config)) { copy_message(message, "invalid encoder configuration"); return SP_ERR_ARGUMENT; }

    WebPPicture picture;
    if (!sp_libwebp.WebPPictureInitInternal(&picture, WEBP_ENCODER_ABI_VERSION)) { copy_message(message, "libwebp version mismatch"); return SP_ERR_LIBRARY; }
    picture.width = width;
    picture.height = height;
    picture.use_argb = config.lossless;   // lossless works on ARGB, lossy on YUV: import straight into it
    int imported = channels == 4 ? sp_libwebp.WebPPictureImportRGBA(&picture, pixels, width * 4)
                                 : sp_libwebp.WebPPictureImportRGB(&picture, pixels, width * 3);
    if (!imported) {
        sp_libwebp.WebPPictureFree(&picture);
        copy_message(message, "out of memory importing the bitmap");
        return SP_ERR_MEMORY;
    }
    WebPMemoryWriter writer;
    sp_libwebp.WebPMemoryWriterInit(&writer);
    picture.writer = sp_libwebp.WebPMemoryWrite;
    picture.custom_ptr = &writer;
    int encoded = sp_libwebp.WebPEncode(&config, &picture);
    WebPEncodingError error = picture.error_code;
    sp_libwebp.WebPPictureFree(&picture);
    if (!encoded) {
        sp_libwebp.WebPMemoryWriterClear(&writer);
        copy_message(message, encoding_error_text(error));
        return error == VP8_ENC_ERROR_OUT_OF_MEMORY || error == VP8_ENC_ERROR_BITSTREAM_OUT_OF_MEMORY ? SP_ERR_MEMORY
                                                                                                       : SP_ERR_LIBRARY;
    }
    if (chunk_count == 0) {
        *out = writer.mem;   // malloc'ed by WebPMemoryWrite
        *out_length = writer.size;
        return SP_OK;
    }
    sp_status status = add_metadata(writer.mem, writer.size, chunks, chunk_count, out, out_length, message);
    sp_libwebp.WebPMemoryWriterClear(&writer);
    return status;
}

// MARK: - Scoring an encode

// Composites `count` rows of straight-alpha RGBA over the grey level `background` into RGB.
static void composite_rows(const uint8_t *rgba, size_t stride, int width, int count, int background, uint8_t *rgb) {
    for (int r = 0; r < count; r++) {
        const uint8_t *in = rgba + (size_t)r * stride;
        uint8_t *out = rgb + (size_t)r * width * 3;
        for (int x = 0; x < width; x++) {
            const int alpha = in[4 * x + 3];
            for (int c = 0; c < 3; c++) {
                out[3 * x + c] = (uint8_t)((in[4 * x + c] * alpha + background * (255 - alpha) + 127) / 255);
            }
        }
    }
}

sp_status sp_webp_ssimulacra2(const uint8_t *webp, size_t length, const uint8_t *pixels, int width, int height,
                              int channels, double *score, char *message) {
    if (webp == NULL || length == 0 || pixels == NULL || width <= 0 || height <= 0 || (channels != 3 && channels != 4)) {
        copy_message(message, "SSIMULACRA2 needs an encoded file and its RGB or RGBA bitmap");
        return SP_ERR_ARGUMENT;
    }
    sp_webp_decoder *decoder = NULL;
    sp_status status = sp_webp_decoder_new(0, 0, channels, &decoder, message);
    if (status != SP_OK) return status;
    int complete = 0, rows_ready = 0;
    status = sp_webp_decoder_append(decoder, webp, length, &complete, &rows_ready, message);
    int decoded_width = 0, decoded_height = 0, stride = 0;
    const uint8_t *decoded = sp_webp_decoder_rows(decoder, &decoded_width, &decoded_height, &stride);
    if (status == SP_OK && (!complete || decoded == NULL)) {
        copy_message(message, "WebP data ends early (file is truncated)");
        status = SP_ERR_LIBRARY;
    } else if (status == SP_OK && (decoded_width != width || decoded_height != height)) {
        copy_message(message, "the encode is not the bitmap's size");
        status = SP_ERR_ARGUMENT;
    }
    if (status != SP_OK) { sp_webp_decoder_free(decoder); return status; }
    // Opaque: the rows as they are (both 3 samples a pixel, each picture with its own stride, so through a
    // band of copies when libwebp's stride is not the bitmap's). With alpha: both pictures composited over a
    // dark and a light grey, and the lower of the two scores.
    const int passes = channels == 4 ? 2 : 1;
    const size_t packed = (size_t)width * 3, source_stride = (size_t)width * channels;
    const int band = 8;
    sp_ssimulacra2 *scorers[2] = {NULL, NULL};
    uint8_t *rows = NULL;
    const int copy = channels == 4 || (size_t)stride != packed;
    for (int p = 0; p < passes && status == SP_OK; p++) status = sp_ssimulacra2_new(width, height, &scorers[p], message);
    if (status == SP_OK && copy && (rows = malloc(packed * band * 2)) == NULL) {
        copy_message(message, "out of memory");
        status = SP_ERR_MEMORY;
    }
    for (int first = 0; status == SP_OK && first < height; first += band) {
        const int count = height - first < band ? height - first : band;
        const uint8_t *reference = pixels + (size_t)first * source_stride;
        const uint8_t *distorted = decoded + (size_t)first * stride;
        if (!copy) { sp_ssimulacra2_push_rows(scorers[0], reference, distorted, 3, packed, count); continue; }
        for (int p = 0; p < passes; p++) {
            uint8_t *reference_rows = rows, *distorted_rows = rows + packed * band;
            if (channels == 4) {
                composite_rows(reference, source_stride, width, count, p == 0 ? 26 : 230, reference_rows);
                composite_rows(distorted, (size_t)stride, width, count, p == 0 ? 26 : 230, distorted_rows);
            } else {
                for (int r = 0; r < count; r++) {
                    memcpy(reference_rows + (size_t)r * packed, reference + (size_t)r * source_stride, packed);
                    memcpy(distorted_rows + (size_t)r * packed, distorted + (size_t)r * stride, packed);
                }
            }
            sp_ssimulacra2_push_rows(scorers[p], reference_rows, distorted_rows, 3, packed, count);
        }
    }
    if (status == SP_OK) {
        *score = sp_ssimulacra2_score(scorers[0]);
        if (passes == 2) {
            const double over_light = sp_ssimulacra2_score(scorers[1]);
            if (over_light < *score) *score = over_light;
        }
    }
    free(rows);
    for (int p = 0; p < passes; p++) sp_ssimulacra2_free(scorers[p]);
    sp_webp_decoder_free(decoder);
    return status;
}
