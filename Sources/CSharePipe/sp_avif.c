// libavif calls (AVIF stills, layered images and image sequences), through the table of sp_lazy.h loaded when
// the first reader is made. libavif reports errors as returned avifResult values with a diagnostic text in
// the decoder (no longjmp, no exit): each becomes a status and a message. The decoder is set up as Chromium
// sets up its own (strict checks off, the source picked by the major brand), so a file is read as a browser
// shows it.
#include "sp_avif.h"

#include "sp_lazy.h"
#include <stdlib.h>
#include <string.h>

#include <avif/avif.h>

// The library this file loads on first use (sp_lazy.h).
// libavif (AVIF stills and image sequences, sp_avif.c); it brings dav1d (and the encoders it was built with).
#define SP_LIBAVIF_FUNCTIONS(X) \
    X(avifDecoderCreate) \
    X(avifDecoderDestroy) \
    X(avifDecoderSetIOFile) \
    X(avifDecoderSetIOMemory) \
    X(avifDecoderParse) \
    X(avifDecoderNextImage) \
    X(avifResultToString) \
    X(avifColorPrimariesGetValues)

SP_LAZY_DECLARE(libavif, SP_LIBAVIF_FUNCTIONS)
SP_LAZY_DEFINE(libavif, "libavif.so.15", "SHAREPIPE_LIBAVIF", SP_LIBAVIF_FUNCTIONS)

struct sp_avif_reader {
    avifDecoder *decoder;
};

/// A libavif result as a status and a message ("<result>: <diagnostic>"). A file that needs what this
/// libavif or its codecs cannot do is SP_ERR_UNSUPPORTED; a limit libavif enforced while parsing is
/// SP_ERR_LIMIT; memory is SP_ERR_MEMORY; anything else is the file's damage (SP_ERR_LIBRARY).
static sp_status fail(const avifDecoder *decoder, avifResult result, char *message) {
    const char *what = sp_libavif.avifResultToString(result);
    const char *detail = decoder != NULL ? decoder->diag.error : "";
    char text[SP_MESSAGE_LENGTH];
    if (detail[0] != '\0') snprintf(text, sizeof text, "%s: %s", what, detail);
    else snprintf(text, sizeof text, "%s", what);
    sp_copy_message(message, text);
    switch (result) {
    case AVIF_RESULT_OUT_OF_MEMORY: return SP_ERR_MEMORY;
    case AVIF_RESULT_NOT_IMPLEMENTED:
    case AVIF_RESULT_NO_CODEC_AVAILABLE:
    case AVIF_RESULT_UNSUPPORTED_DEPTH:
        return SP_ERR_UNSUPPORTED;
    default:
        if (strstr(detail, "imageCountLimit") != NULL || strstr(detail, "dimensions are too large") != NULL) {
            return SP_ERR_LIMIT;
        }
        return SP_ERR_LIBRARY;
    }
}

static sp_status reader_create(sp_avif_options options, sp_avif_reader **out, char *message) {
    sp_status loaded = sp_libavif_require(message);
    if (loaded != SP_OK) return loaded;
    sp_avif_reader *reader = calloc(1, sizeof(sp_avif_reader));
    if (reader == NULL) { sp_copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    reader->decoder = sp_libavif.avifDecoderCreate();
    if (reader->decoder == NULL) { free(reader); sp_copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    avifDecoder *decoder = reader->decoder;
    decoder->strictFlags = AVIF_STRICT_DISABLED;   // as Chromium: a missing pixi or an odd clap is shown
    decoder->maxThreads = options.threads > 0 ? options.threads : 1;
    // 0 would mean "no limit" to libavif: the caller's limits are at least 1.
    if (options.max_pixels > 0 && options.max_pixels < decoder->imageSizeLimit) decoder->imageSizeLimit = options.max_pixels;
    if (options.max_dimension > 0
        && (decoder->imageDimensionLimit == 0 || options.max_dimension < decoder->imageDimensionLimit)) {
        decoder->imageDimensionLimit = options.max_dimension;
    }
    if (options.max_images > 0 && options.max_images < decoder->imageCountLimit) decoder->imageCountLimit = options.max_images;
    *out = reader;
    return SP_OK;
}

static sp_status reader_parse(sp_avif_reader *reader, avifResult io, sp_avif_reader **out, char *message) {
    avifResult result = io == AVIF_RESULT_OK ? sp_libavif.avifDecoderParse(reader->decoder) : io;
    if (result != AVIF_RESULT_OK) {
        sp_status status = result == AVIF_RESULT_IO_ERROR && io != AVIF_RESULT_OK ? SP_ERR_IO : fail(reader->decoder, result, message);
        if (status == SP_ERR_IO) sp_copy_message(message, "cannot open file for reading");
        sp_avif_reader_free(reader);
        return status;
    }
    *out = reader;
    return SP_OK;
}

sp_status sp_avif_reader_open_file(const char *path, sp_avif_options options, sp_avif_reader **out, char *message) {
    sp_avif_reader *reader = NULL;
    sp_status status = reader_create(options, &reader, message);
    if (status != SP_OK) return status;
    return reader_parse(reader, sp_libavif.avifDecoderSetIOFile(reader->decoder, path), out, message);
}

sp_status sp_avif_reader_open_memory(const uint8_t *data, size_t length, sp_avif_options options,
                                     sp_avif_reader **out, char *message) {
    if (data == NULL || length == 0) { sp_copy_message(message, "empty input"); return SP_ERR_ARGUMENT; }
    sp_avif_reader *reader = NULL;
    sp_status status = reader_create(options, &reader, message);
    if (status != SP_OK) return status;
    return reader_parse(reader, sp_libavif.avifDecoderSetIOMemory(reader->decoder, data, length), out, message);
}

static int heif_chroma(avifPixelFormat format) {
    switch (format) {
    case AVIF_PIXEL_FORMAT_YUV400: return 0;
    case AVIF_PIXEL_FORMAT_YUV420: return 1;
    case AVIF_PIXEL_FORMAT_YUV422: return 2;
    default: return 3;
    }
}

/// The image's CICP as an nclx description, with the primaries' chromaticities.
static void copy_nclx(const avifImage *image, sp_heif_nclx *nclx) {
    memset(nclx, 0, sizeof *nclx);
    nclx->present = 1;
    nclx->color_primaries = (int)image->colorPrimaries;
    nclx->transfer_characteristics = (int)image->transferCharacteristics;
    nclx->matrix_coefficients = (int)image->matrixCoefficients;
    nclx->full_range = image->yuvRange == AVIF_RANGE_FULL;
    float values[8];
    sp_libavif.avifColorPrimariesGetValues(image->colorPrimaries, values);
    nclx->red_x = values[0]; nclx->red_y = values[1];
    nclx->green_x = values[2]; nclx->green_y = values[3];
    nclx->blue_x = values[4]; nclx->blue_y = values[5];
    nclx->white_x = values[6]; nclx->white_y = values[7];
}

sp_status sp_avif_reader_info(sp_avif_reader *reader, sp_avif_info *info, char *message) {
    if (reader == NULL || reader->decoder == NULL || reader->decoder->image == NULL) {
        sp_copy_message(message, "no image");
        return SP_ERR_ARGUMENT;
    }
    const avifDecoder *decoder = reader->decoder;
    const avifImage *image = decoder->image;
    memset(info, 0, sizeof *info);
    info->width = (int)image->width;
    info->height = (int)image->height;
    info->depth = (int)image->depth;
    info->chroma = heif_chroma(image->yuvFormat);
    info->has_alpha = decoder->alphaPresent ? 1 : 0;
    info->premultiplied_alpha = image->alphaPremultiplied ? 1 : 0;
    info->image_count = decoder->imageCount;
    info->irot_angle = image->transformFlags & AVIF_TRANSFORM_IROT ? (int)(image->irot.angle & 3) : 0;
    info->imir_mode = image->transformFlags & AVIF_TRANSFORM_IMIR ? (int)(image->imir.mode & 1) : -1;
    info->has_clap = image->transformFlags & AVIF_TRANSFORM_CLAP ? 1 : 0;
    info->icc_length = image->icc.size;
    info->exif_length = image->exif.size;
    info->xmp_length = image->xmp.size;
    copy_nclx(image, &info->nclx);
    return SP_OK;
}

sp_status sp_avif_reader_copy_payload(sp_avif_reader *reader, int which, uint8_t *buffer, size_t length, char *message) {
    const avifImage *image = reader->decoder->image;
    const avifRWData *payload = which == 0 ? &image->icc : which == 1 ? &image->exif : which == 2 ? &image->xmp : NULL;
    if (payload == NULL || buffer == NULL || length != payload->size) {
        sp_copy_message(message, "payload buffer does not match the payload");
        return SP_ERR_ARGUMENT;
    }
    memcpy(buffer, payload->data, length);
    return SP_OK;
}

sp_status sp_avif_reader_next_image(sp_avif_reader *reader, sp_heif_planes *planes, int *duration_ms, char *message) {
    avifDecoder *decoder = reader->decoder;
    memset(planes, 0, sizeof *planes);
    avifResult result = sp_libavif.avifDecoderNextImage(decoder);
    if (result == AVIF_RESULT_NO_IMAGES_REMAINING) { sp_copy_message(message, "no more images"); return SP_ERR_END; }
    if (result != AVIF_RESULT_OK) return fail(decoder, result, message);
    const avifImage *image = decoder->image;
    if (image->yuvPlanes[AVIF_CHAN_Y] == NULL || image->width == 0 || image->height == 0) {
        sp_copy_message(message, "decoded image has no luma plane");
        return SP_ERR_LIBRARY;
    }
    planes->width = (int)image->width;
    planes->height = (int)image->height;
    planes->bits = (int)image->depth;
    planes->y = image->yuvPlanes[AVIF_CHAN_Y];
    planes->y_stride = (int)image->yuvRowBytes[AVIF_CHAN_Y];
    planes->chroma = heif_chroma(image->yuvFormat);
    if (image->yuvFormat != AVIF_PIXEL_FORMAT_YUV400) {
        if (image->yuvPlanes[AVIF_CHAN_U] == NULL || image->yuvPlanes[AVIF_CHAN_V] == NULL) {
            sp_copy_message(message, "decoded image has no chroma planes");
            return SP_ERR_LIBRARY;
        }
        planes->cb = image->yuvPlanes[AVIF_CHAN_U];
        planes->cr = image->yuvPlanes[AVIF_CHAN_V];
        planes->cb_stride = (int)image->yuvRowBytes[AVIF_CHAN_U];
        planes->cr_stride = (int)image->yuvRowBytes[AVIF_CHAN_V];
        int x_shift = image->yuvFormat == AVIF_PIXEL_FORMAT_YUV444 ? 0 : 1;
        int y_shift = image->yuvFormat == AVIF_PIXEL_FORMAT_YUV420 ? 1 : 0;
        planes->chroma_width = (int)((image->width + (uint32_t)x_shift) >> x_shift);
        planes->chroma_height = (int)((image->height + (uint32_t)y_shift) >> y_shift);
        planes->chroma_bits = (int)image->depth;
    }
    if (image->alphaPlane != NULL) {
        planes->alpha = image->alphaPlane;
        planes->alpha_stride = (int)image->alphaRowBytes;
        planes->alpha_bits = (int)image->depth;
    }
    copy_nclx(image, &planes->nclx);
    if (duration_ms != NULL) {
        double milliseconds = decoder->imageTiming.duration * 1000.0 + 0.5;
        *duration_ms = milliseconds > 0 && milliseconds < 2147483647.0 ? (int)milliseconds : 0;
    }
    return SP_OK;
}

void sp_avif_reader_free(sp_avif_reader *reader) {
    if (reader == NULL) return;
    if (reader->decoder != NULL) sp_libavif.avifDecoderDestroy(reader->decoder);
    free(reader);
}
