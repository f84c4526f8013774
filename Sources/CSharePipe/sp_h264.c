// OpenH264 calls (sp_h264.h). OpenH264 reports every error by return code and never exits; the encoder is a
// C vtable (ISVCEncoder), created and destroyed by the two functions loaded from libopenh264.so.7 on first use.
#include "sp_h264.h"

#include "sp_lazy.h"
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <wels/codec_api.h>

#define SP_LIBOPENH264_FUNCTIONS(X) \
    X(WelsCreateSVCEncoder) \
    X(WelsDestroySVCEncoder)

SP_LAZY_DECLARE(libopenh264, SP_LIBOPENH264_FUNCTIONS)
SP_LAZY_DEFINE(libopenh264, "libopenh264.so.7", "SHAREPIPE_LIBOPENH264", SP_LIBOPENH264_FUNCTIONS)

struct sp_h264_encoder {
    ISVCEncoder *codec;
    int width, height;
    uint8_t *planes;        // the picture being encoded: Y, then Cb, then Cr
    uint8_t *coded;         // the last picture the encoder coded (not skipped), for sp_h264_encode_repeat
    uint8_t *sample;        // the last access unit, length-prefixed NAL units
    size_t sample_length, sample_capacity;
    uint8_t sps[256], pps[256];
    size_t sps_length, pps_length;
    int has_coded;          // whether `coded` holds a picture
};

static int grow(sp_h264_encoder *encoder, size_t needed) {
    if (needed <= encoder->sample_capacity) return 1;
    size_t capacity = encoder->sample_capacity ? encoder->sample_capacity : 1 << 16;
    while (capacity < needed) capacity *= 2;
    uint8_t *grown = realloc(encoder->sample, capacity);
    if (grown == NULL) return 0;
    encoder->sample = grown;
    encoder->sample_capacity = capacity;
    return 1;
}

sp_status sp_h264_open(const sp_h264_settings *settings, sp_h264_encoder **out, char *message) {
    *out = NULL;
    if (settings->width < 2 || settings->height < 2 || settings->width > 4096 || settings->height > 4096 ||
        (settings->width & 1) || (settings->height & 1) || settings->quantizer < 0 || settings->quantizer > 51) {
        snprintf(message, SP_MESSAGE_LENGTH, "H.264: %dx%d at QP %d cannot be encoded (even sizes 2...4096)",
                 settings->width, settings->height, settings->quantizer);
        return SP_ERR_ARGUMENT;
    }
    sp_status loaded = sp_libopenh264_require(message);
    if (loaded != SP_OK) return loaded;
    sp_h264_encoder *encoder = calloc(1, sizeof *encoder);
    if (encoder == NULL) { sp_copy_message(message, "out of memory for the H.264 encoder"); return SP_ERR_MEMORY; }
    encoder->width = settings->width;
    encoder->height = settings->height;
    size_t luma = (size_t)settings->width * (size_t)settings->height;
    encoder->planes = malloc(luma + luma / 2);
    encoder->coded = malloc(luma + luma / 2);
    if (encoder->planes == NULL || encoder->coded == NULL ||
        sp_libopenh264.WelsCreateSVCEncoder(&encoder->codec) != 0 || encoder->codec == NULL) {
        sp_copy_message(message, "out of memory for the H.264 encoder");
        sp_h264_close(encoder);
        return SP_ERR_MEMORY;
    }
    ISVCEncoder *codec = encoder->codec;
    int quiet = WELS_LOG_QUIET;
    (*codec)->SetOption(codec, ENCODER_OPTION_TRACE_LEVEL, &quiet);
    SEncParamExt parameters;
    memset(&parameters, 0, sizeof parameters);
    (*codec)->GetDefaultParams(codec, &parameters);
    // Screen content: animations are mostly drawn pictures (flat colours, text, dithered palettes), for which
    // OpenH264's screen-content tools cut the bytes (a terminal-recording GIF: 56% fewer at the same PSNR);
    // on photographic animations they cost a few percent at most.
    parameters.iUsageType = SCREEN_CONTENT_REAL_TIME;
    parameters.iPicWidth = settings->width;
    parameters.iPicHeight = settings->height;
    parameters.iRCMode = RC_OFF_MODE;
    parameters.fMaxFrameRate = settings->frame_rate > 0 ? settings->frame_rate : 30;
    parameters.iTargetBitrate = 0;
    parameters.iTemporalLayerNum = 1;
    parameters.iSpatialLayerNum = 1;
    parameters.iComplexityMode = HIGH_COMPLEXITY;
    parameters.uiIntraPeriod = (unsigned)(settings->key_interval > 0 ? settings->key_interval : 0);
    parameters.iNumRefFrame = 1;
    parameters.eSpsPpsIdStrategy = CONSTANT_ID;
    parameters.bPrefixNalAddingCtrl = false;
    parameters.bEnableSSEI = false;
    parameters.iEntropyCodingModeFlag = settings->main_profile ? 1 : 0;
    parameters.bEnableFrameSkip = false;
    parameters.iMaxQp = settings->quantizer;
    parameters.iMinQp = settings->quantizer;
    parameters.iMultipleThreadIdc = 1;      // no threads: the job sandbox allows none, and jobs run side by side
    parameters.bUseLoadBalancing = false;
    parameters.bEnableDenoise = false;
    parameters.bEnableBackgroundDetection = true;
    parameters.bEnableAdaptiveQuant = false;
    parameters.bEnableFrameCroppingFlag = true;
    parameters.bEnableSceneChangeDetect = true;
    parameters.bEnableLongTermReference = false;
    SSpatialLayerConfig *layer = &parameters.sSpatialLayers[0];
    layer->iVideoWidth = settings->width;
    layer->iVideoHeight = settings->height;
    layer->fFrameRate = parameters.fMaxFrameRate;
    layer->iSpatialBitrate = 0;
    layer->iMaxSpatialBitrate = UNSPECIFIED_BIT_RATE;
    layer->uiProfileIdc = settings->main_profile ? PRO_MAIN : PRO_BASELINE;
    layer->uiLevelIdc = LEVEL_UNKNOWN;
    layer->iDLayerQp = settings->quantizer;
    layer->sSliceArgument.uiSliceMode = SM_SINGLE_SLICE;
    layer->sSliceArgument.uiSliceNum = 1;
    // BT.709 primaries, transfer and matrix, limited range: what the conversion below writes.
    layer->bVideoSignalTypePresent = true;
    layer->uiVideoFormat = VF_UNDEF;
    layer->bFullRange = false;
    layer->bColorDescriptionPresent = true;
    layer->uiColorPrimaries = CP_BT709;
    layer->uiTransferCharacteristics = TRC_BT709;
    layer->uiColorMatrix = CM_BT709;
    int status = (*codec)->InitializeExt(codec, &parameters);
    if (status != cmResultSuccess) {
        snprintf(message, SP_MESSAGE_LENGTH, "OpenH264 refused the stream settings (%dx%d, QP %d): error %d",
                 settings->width, settings->height, settings->quantizer, status);
        sp_h264_close(encoder);
        return SP_ERR_LIBRARY;
    }
    int format = videoFormatI420;
    (*codec)->SetOption(codec, ENCODER_OPTION_DATAFORMAT, &format);
    *out = encoder;
    return SP_OK;
}

// BT.709, limited range, 14-bit fixed point: Y = 16 + 219 (Kr R + Kg G + Kb B) / 255, Cb and Cr = 128 + 224 (B − Y)
// / (2 (1 − Kb)) / 255 and (R − Y) / (2 (1 − Kr)) / 255.
#define SP_FIX(x) ((int32_t)((x) * 16384.0 + 0.5))
static const int32_t yr = SP_FIX(0.2126 * 219.0 / 255.0), yg = SP_FIX(0.7152 * 219.0 / 255.0),
                     yb = SP_FIX(0.0722 * 219.0 / 255.0);
static const int32_t ur = SP_FIX(0.2126 / 1.8556 * 224.0 / 255.0), ug = SP_FIX(0.7152 / 1.8556 * 224.0 / 255.0),
                     ub = SP_FIX(0.5 * 224.0 / 255.0);
static const int32_t vr = SP_FIX(0.5 * 224.0 / 255.0), vg = SP_FIX(0.7152 / 1.5748 * 224.0 / 255.0),
                     vb = SP_FIX(0.0722 / 1.5748 * 224.0 / 255.0);

static inline uint8_t clamp8(int32_t value) { return value < 0 ? 0 : value > 255 ? 255 : (uint8_t)value; }

/// One pixel composited over the background (in the encoded values, as browsers composite).
static inline void composite(const uint8_t *pixel, int br, int bg, int bb, int *r, int *g, int *b, size_t *seen) {
    int a = pixel[3];
    if (a == 255) { *r = pixel[0]; *g = pixel[1]; *b = pixel[2]; return; }
    (*seen)++;
    *r = (pixel[0] * a + br * (255 - a) + 127) / 255;
    *g = (pixel[1] * a + bg * (255 - a) + 127) / 255;
    *b = (pixel[2] * a + bb * (255 - a) + 127) / 255;
}

static size_t convert(sp_h264_encoder *encoder, const uint8_t *rgba, size_t stride, uint32_t background) {
    int width = encoder->width, height = encoder->height;
    int br = (background >> 16) & 0xFF, bg = (background >> 8) & 0xFF, bb = background & 0xFF;
    uint8_t *yplane = encoder->planes, *uplane = yplane + (size_t)width * height,
            *vplane = uplane + (size_t)width * height / 4;
    size_t seen = 0;
    for (int y = 0; y < height; y += 2) {
        const uint8_t *rows[2] = { rgba + (size_t)y * stride, rgba + (size_t)(y + 1) * stride };
        for (int x = 0; x < width; x += 2) {
            int sr = 0, sg = 0, sb = 0;
            for (int dy = 0; dy < 2; dy++) {
                for (int dx = 0; dx < 2; dx++) {
                    int r, g, b;
                    composite(rows[dy] + (size_t)(x + dx) * 4, br, bg, bb, &r, &g, &b, &seen);
                    yplane[(size_t)(y + dy) * width + x + dx] =
                        clamp8(16 + ((yr * r + yg * g + yb * b + 8192) >> 14));
                    sr += r; sg += g; sb += b;
                }
            }
            // The 2×2 block's mean colour (sums are 4×: the rounding constant and shift account for it).
            size_t chroma = (size_t)(y / 2) * (width / 2) + x / 2;
            uplane[chroma] = clamp8(128 + ((-ur * sr - ug * sg + ub * sb + 32768) >> 16));
            vplane[chroma] = clamp8(128 + ((vr * sr - vg * sg - vb * sb + 32768) >> 16));
        }
    }
    return seen;
}

/// Appends a NAL unit (start code removed) to the sample, or keeps it as a parameter set.
static int take_nal(sp_h264_encoder *encoder, const uint8_t *nal, size_t length) {
    size_t skip = 0;
    if (length >= 4 && nal[0] == 0 && nal[1] == 0 && nal[2] == 0 && nal[3] == 1) skip = 4;
    else if (length >= 3 && nal[0] == 0 && nal[1] == 0 && nal[2] == 1) skip = 3;
    nal += skip;
    length -= skip;
    if (length == 0) return 1;
    int type = nal[0] & 0x1F;
    if (type == 7 || type == 8) {
        uint8_t *target = type == 7 ? encoder->sps : encoder->pps;
        size_t *target_length = type == 7 ? &encoder->sps_length : &encoder->pps_length;
        if (length > sizeof encoder->sps) return 0;
        memcpy(target, nal, length);
        *target_length = length;
        return 1;
    }
    if (!grow(encoder, encoder->sample_length + 4 + length)) return -1;
    uint8_t *at = encoder->sample + encoder->sample_length;
    at[0] = (uint8_t)(length >> 24); at[1] = (uint8_t)(length >> 16);
    at[2] = (uint8_t)(length >> 8); at[3] = (uint8_t)length;
    memcpy(at + 4, nal, length);
    encoder->sample_length += 4 + length;
    return 1;
}

/// Encodes `source` (`planes`, or `coded` for a repeat: a 4:2:0 picture of the encoder's size) and collects the
/// access unit; unless the encoder skipped the picture, the planes then become the last coded picture (swapped
/// with `coded`).
static sp_status encode_planes(sp_h264_encoder *encoder, uint8_t *source, long long timestamp_ms, int force_key,
                               const uint8_t **sample, size_t *sample_length, int *is_key, char *message) {
    *sample = NULL;
    *sample_length = 0;
    *is_key = 0;
    ISVCEncoder *codec = encoder->codec;
    if (force_key) (*codec)->ForceIntraFrame(codec, true);
    SSourcePicture picture;
    memset(&picture, 0, sizeof picture);
    picture.iColorFormat = videoFormatI420;
    picture.iPicWidth = encoder->width;
    picture.iPicHeight = encoder->height;
    picture.iStride[0] = encoder->width;
    picture.iStride[1] = picture.iStride[2] = encoder->width / 2;
    picture.pData[0] = source;
    picture.pData[1] = source + (size_t)encoder->width * encoder->height;
    picture.pData[2] = picture.pData[1] + (size_t)encoder->width * encoder->height / 4;
    picture.uiTimeStamp = timestamp_ms;
    SFrameBSInfo info;
    memset(&info, 0, sizeof info);
    int status = (*codec)->EncodeFrame(codec, &picture, &info);
    if (status != cmResultSuccess) {
        snprintf(message, SP_MESSAGE_LENGTH, "OpenH264 could not encode the picture: error %d", status);
        return status == cmMallocMemeError ? SP_ERR_MEMORY : SP_ERR_LIBRARY;
    }
    encoder->sample_length = 0;
    if (info.eFrameType == videoFrameTypeSkip || info.eFrameType == videoFrameTypeInvalid) return SP_OK;
    for (int index = 0; index < info.iLayerNum && index < MAX_LAYER_NUM_OF_FRAME; index++) {
        const SLayerBSInfo *layer = &info.sLayerInfo[index];
        const uint8_t *at = layer->pBsBuf;
        for (int nal = 0; nal < layer->iNalCount; nal++) {
            int length = layer->pNalLengthInByte[nal];
            int taken = length > 0 ? take_nal(encoder, at, (size_t)length) : 1;
            if (taken < 0) { sp_copy_message(message, "out of memory for an H.264 sample"); return SP_ERR_MEMORY; }
            if (taken == 0) { sp_copy_message(message, "OpenH264 wrote an oversized parameter set"); return SP_ERR_LIBRARY; }
            at += length;
        }
    }
    if (source == encoder->planes && encoder->sample_length > 0) {
        encoder->planes = encoder->coded;
        encoder->coded = source;
        encoder->has_coded = 1;
    }
    *sample = encoder->sample;
    *sample_length = encoder->sample_length;
    *is_key = info.eFrameType == videoFrameTypeIDR;
    return SP_OK;
}

sp_status sp_h264_encode_rgba(sp_h264_encoder *encoder, const uint8_t *rgba, size_t stride, uint32_t background,
                              long long timestamp_ms, int force_key, const uint8_t **sample, size_t *sample_length,
                              int *is_key, size_t *transparent_pixels, char *message) {
    *transparent_pixels = convert(encoder, rgba, stride, background);
    return encode_planes(encoder, encoder->planes, timestamp_ms, force_key, sample, sample_length, is_key, message);
}

sp_status sp_h264_encode_repeat(sp_h264_encoder *encoder, long long timestamp_ms, int force_key,
                                const uint8_t **sample, size_t *sample_length, int *is_key, char *message) {
    if (!encoder->has_coded) {
        *sample = NULL;
        *sample_length = 0;
        *is_key = 0;
        sp_copy_message(message, "H.264: no picture coded yet to repeat");
        return SP_ERR_ARGUMENT;
    }
    return encode_planes(encoder, encoder->coded, timestamp_ms, force_key, sample, sample_length, is_key, message);
}

sp_status sp_h264_parameter_sets(const sp_h264_encoder *encoder, const uint8_t **sps, size_t *sps_length,
                                 const uint8_t **pps, size_t *pps_length, char *message) {
    if (encoder->sps_length == 0 || encoder->pps_length == 0) {
        sp_copy_message(message, "no parameter sets yet (no picture encoded)");
        return SP_ERR_END;
    }
    *sps = encoder->sps; *sps_length = encoder->sps_length;
    *pps = encoder->pps; *pps_length = encoder->pps_length;
    return SP_OK;
}

void sp_h264_close(sp_h264_encoder *encoder) {
    if (encoder == NULL) return;
    if (encoder->codec != NULL) {
        (*encoder->codec)->Uninitialize(encoder->codec);
        sp_libopenh264.WelsDestroySVCEncoder(encoder->codec);
    }
    free(encoder->planes);
    free(encoder->coded);
    free(encoder->sample);
    free(encoder);
}
