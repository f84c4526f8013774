// Little CMS calls. lcms2 reports errors through a log handler and NULL returns, never by longjmp or exit;
// each transform has its own context whose handler copies the message into a buffer the shim returns.
// lcms2 is called through the table of sp_lazy.h, loaded when the first transform is made.
#include "sp_color.h"

#include "sp_lazy.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
    char message[SP_MESSAGE_LENGTH];
} sp_color_log;

// The log lives with the transform, on the heap, so the context's user data never points at a dead frame.
struct sp_color_transform {
    sp_color_log log;
    cmsContext context;
    cmsHTRANSFORM transform;
};

static void on_log(cmsContext context, cmsUInt32Number code, const char *text) {
    (void)code;
    sp_color_log *log = (sp_color_log *)sp_liblcms2.cmsGetContextUserData(context);
    if (log == NULL || text == NULL) return;
    strncpy(log->message, text, SP_MESSAGE_LENGTH - 1);
    log->message[SP_MESSAGE_LENGTH - 1] = '\0';
}

static void copy_message(char *message, const char *text) {
    if (message == NULL) return;
    strncpy(message, text, SP_MESSAGE_LENGTH - 1);
    message[SP_MESSAGE_LENGTH - 1] = '\0';
}

static sp_status fail(sp_color_transform *result, const char *fallback, char *message) {
    copy_message(message, result->log.message[0] != '\0' ? result->log.message : fallback);
    sp_liblcms2.cmsDeleteContext(result->context);
    free(result);
    return SP_ERR_LIBRARY;
}

sp_status sp_color_cmyk_to_srgb_create(const uint8_t *icc, size_t length, int inverted,
                                       sp_color_transform **out, char *message) {
    sp_status loaded = sp_liblcms2_require(message);
    if (loaded != SP_OK) return loaded;
    if (icc == NULL || length < 132 || length > UINT32_MAX) { copy_message(message, "no usable ICC profile"); return SP_ERR_ARGUMENT; }
    sp_color_transform *result = calloc(1, sizeof(sp_color_transform));
    if (result == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    result->context = sp_liblcms2.cmsCreateContext(NULL, &result->log);
    if (result->context == NULL) { free(result); copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    cmsContext context = result->context;
    sp_liblcms2.cmsSetLogErrorHandlerTHR(context, on_log);

    cmsHPROFILE cmyk = sp_liblcms2.cmsOpenProfileFromMemTHR(context, icc, (cmsUInt32Number)length);
    if (cmyk == NULL) return fail(result, "the ICC profile cannot be parsed", message);
    if (sp_liblcms2.cmsGetColorSpace(cmyk) != cmsSigCmykData) {
        sp_liblcms2.cmsCloseProfile(cmyk);
        return fail(result, "the ICC profile is not a CMYK profile", message);
    }
    cmsHPROFILE srgb = sp_liblcms2.cmsCreate_sRGBProfileTHR(context);
    if (srgb == NULL) { sp_liblcms2.cmsCloseProfile(cmyk); return fail(result, "cannot create the sRGB profile", message); }
    // TYPE_CMYK_8_REV reads 0 as full ink: Adobe's inverted storage.
    cmsUInt32Number input = inverted ? TYPE_CMYK_8_REV : TYPE_CMYK_8;
    // No white-on-white fix-up: the profile's own table decides what unprinted paper looks like, as in
    // browsers (skcms) and ImageMagick.
    result->transform = sp_liblcms2.cmsCreateTransformTHR(context, cmyk, input, srgb, TYPE_RGB_8, INTENT_PERCEPTUAL,
                                              cmsFLAGS_NOWHITEONWHITEFIXUP);
    sp_liblcms2.cmsCloseProfile(cmyk);
    sp_liblcms2.cmsCloseProfile(srgb);
    if (result->transform == NULL) return fail(result, "the CMYK profile cannot be used as an input profile", message);
    *out = result;
    return SP_OK;
}

void sp_color_transform_row(sp_color_transform *transform, const uint8_t *cmyk, uint8_t *rgb, size_t pixels) {
    while (pixels > 0) {
        cmsUInt32Number count = pixels > UINT32_MAX ? UINT32_MAX : (cmsUInt32Number)pixels;
        sp_liblcms2.cmsDoTransform(transform->transform, cmyk, rgb, count);
        cmyk += (size_t)count * 4;
        rgb += (size_t)count * 3;
        pixels -= count;
    }
}

void sp_color_transform_free(sp_color_transform *transform) {
    if (transform == NULL) return;
    sp_liblcms2.cmsDeleteTransform(transform->transform);
    sp_liblcms2.cmsDeleteContext(transform->context);
    free(transform);
}
