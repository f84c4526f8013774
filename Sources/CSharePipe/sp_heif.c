// libheif calls (HEIC, HEIF, AVIF) and the Little CMS call that turns an nclx colour description into an ICC
// profile. libheif reports errors as returned heif_error values (no longjmp, no exit): each is copied into
// the caller's message buffer and becomes a status. Only the primary image handle is ever taken. libheif and
// lcms2 are called through the tables of sp_lazy.h, loaded when the first reader (or profile) is made.
#include "sp_heif.h"

#include "sp_lazy.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libheif/heif.h>

// The library this file loads on first use (sp_lazy.h).
#define SP_LIBHEIF_FUNCTIONS(X) \
    X(heif_init) \
    X(heif_context_alloc) \
    X(heif_context_free) \
    X(heif_context_set_maximum_image_size_limit) \
    X(heif_context_read_from_reader) \
    X(heif_context_read_from_memory_without_copy) \
    X(heif_context_get_primary_image_handle) \
    X(heif_context_get_number_of_top_level_images) \
    X(heif_context_set_max_decoding_threads) \
    X(heif_image_handle_release) \
    X(heif_image_handle_get_width) \
    X(heif_image_handle_get_height) \
    X(heif_image_handle_get_ispe_width) \
    X(heif_image_handle_get_ispe_height) \
    X(heif_image_handle_has_alpha_channel) \
    X(heif_image_handle_is_premultiplied_alpha) \
    X(heif_image_handle_get_luma_bits_per_pixel) \
    X(heif_image_handle_get_chroma_bits_per_pixel) \
    X(heif_image_handle_get_number_of_thumbnails) \
    X(heif_image_handle_has_depth_image) \
    X(heif_image_handle_get_number_of_auxiliary_images) \
    X(heif_image_handle_get_raw_color_profile_size) \
    X(heif_image_handle_get_raw_color_profile) \
    X(heif_image_handle_get_nclx_color_profile) \
    X(heif_image_handle_get_number_of_metadata_blocks) \
    X(heif_image_handle_get_list_of_metadata_block_IDs) \
    X(heif_image_handle_get_metadata_type) \
    X(heif_image_handle_get_metadata_content_type) \
    X(heif_image_handle_get_metadata_size) \
    X(heif_image_handle_get_metadata) \
    X(heif_nclx_color_profile_free) \
    X(heif_decoding_options_alloc) \
    X(heif_decoding_options_free) \
    X(heif_decode_image) \
    X(heif_image_release) \
    X(heif_image_get_colorspace) \
    X(heif_image_get_chroma_format) \
    X(heif_image_get_width) \
    X(heif_image_get_height) \
    X(heif_image_get_bits_per_pixel_range) \
    X(heif_image_get_plane_readonly) \
    X(heif_image_has_channel) \
    X(heif_image_get_nclx_color_profile)

SP_LAZY_DECLARE(libheif, SP_LIBHEIF_FUNCTIONS)
SP_LAZY_DEFINE(libheif, "libheif.so.1", "SHAREPIPE_LIBHEIF", SP_LIBHEIF_FUNCTIONS)

struct sp_heif_reader {
    struct heif_context *context;
    struct heif_image_handle *handle;
    struct heif_image *image;
    FILE *file;
    int64_t file_size;
    heif_item_id *metadata_ids;
    int metadata_count;
};

static void copy_message(char *message, const char *text) {
    sp_copy_message(message, text != NULL ? text : "unknown libheif error");
}

/// A libheif error as a status: memory errors become SP_ERR_MEMORY; a file that needs what libheif or its
/// codec plugins cannot do (heif_error_Unsupported_feature, _Unsupported_filetype) SP_ERR_UNSUPPORTED; the
/// rest SP_ERR_LIBRARY.
static sp_status fail(struct heif_error error, char *message) {
    copy_message(message, error.message);
    switch (error.code) {
    case heif_error_Memory_allocation_error: return SP_ERR_MEMORY;
    case heif_error_Unsupported_feature:
    case heif_error_Unsupported_filetype:
        return SP_ERR_UNSUPPORTED;
    default: return SP_ERR_LIBRARY;
    }
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
// heif_init loads the codec plugins (libde265, dav1d/aom) where libheif was built with plugins; reference
// counted, so one call for the process and no deinit.
static void init_library(void) { (void)sp_libheif.heif_init(NULL); }

// MARK: - Reading a file through stdio

static int64_t file_position(void *userdata) {
    return (int64_t)ftello(((sp_heif_reader *)userdata)->file);
}

static int file_read(void *data, size_t size, void *userdata) {
    return fread(data, 1, size, ((sp_heif_reader *)userdata)->file) == size ? 0 : 1;
}

static int file_seek(int64_t position, void *userdata) {
    return fseeko(((sp_heif_reader *)userdata)->file, (off_t)position, SEEK_SET) == 0 ? 0 : 1;
}

static enum heif_reader_grow_status file_wait(int64_t target_size, void *userdata) {
    return target_size <= ((sp_heif_reader *)userdata)->file_size ? heif_reader_grow_status_size_reached
                                                                   : heif_reader_grow_status_size_beyond_eof;
}

static const struct heif_reader file_reader = {
    .reader_api_version = 1,
    .get_position = file_position,
    .read = file_read,
    .seek = file_seek,
    .wait_for_file_size = file_wait,
};

static sp_status reader_create(int max_dimension, sp_heif_reader **out, char *message) {
    sp_status loaded = sp_libheif_require(message);
    if (loaded != SP_OK) return loaded;
    pthread_once(&init_once, init_library);
    sp_heif_reader *reader = calloc(1, sizeof(sp_heif_reader));
    if (reader == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    reader->context = sp_libheif.heif_context_alloc();
    if (reader->context == NULL) { free(reader); copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    // libheif refuses an ispe (or grid) larger than this while parsing, before it allocates pixels.
    if (max_dimension > 0) sp_libheif.heif_context_set_maximum_image_size_limit(reader->context, max_dimension);
    *out = reader;
    return SP_OK;
}

/// After the boxes are read: the primary image's handle and its metadata item ids.
static sp_status reader_finish_open(sp_heif_reader *reader, char *message) {
    struct heif_error error = sp_libheif.heif_context_get_primary_image_handle(reader->context, &reader->handle);
    if (error.code != heif_error_Ok) return fail(error, message);
    int count = sp_libheif.heif_image_handle_get_number_of_metadata_blocks(reader->handle, NULL);
    if (count > 0) {
        reader->metadata_ids = calloc((size_t)count, sizeof(heif_item_id));
        if (reader->metadata_ids == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
        reader->metadata_count = sp_libheif.heif_image_handle_get_list_of_metadata_block_IDs(reader->handle, NULL,
                                                                                 reader->metadata_ids, count);
    }
    return SP_OK;
}

sp_status sp_heif_reader_open_file(const char *path, int max_dimension, sp_heif_reader **out, char *message) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) { copy_message(message, "cannot open file for reading"); return SP_ERR_IO; }
    struct stat status;
    if (fstat(fileno(file), &status) != 0) { fclose(file); copy_message(message, "cannot read the file's size"); return SP_ERR_IO; }
    sp_heif_reader *reader = NULL;
    sp_status result = reader_create(max_dimension, &reader, message);
    if (result != SP_OK) { fclose(file); return result; }
    reader->file = file;
    reader->file_size = (int64_t)status.st_size;
    struct heif_error error = sp_libheif.heif_context_read_from_reader(reader->context, &file_reader, reader, NULL);
    result = error.code == heif_error_Ok ? reader_finish_open(reader, message) : fail(error, message);
    if (result != SP_OK) { sp_heif_reader_free(reader); return result; }
    *out = reader;
    return SP_OK;
}

sp_status sp_heif_reader_open_memory(const uint8_t *data, size_t length, int max_dimension,
                                     sp_heif_reader **out, char *message) {
    if (data == NULL || length == 0) { copy_message(message, "empty input"); return SP_ERR_ARGUMENT; }
    sp_heif_reader *reader = NULL;
    sp_status result = reader_create(max_dimension, &reader, message);
    if (result != SP_OK) return result;
    struct heif_error error = sp_libheif.heif_context_read_from_memory_without_copy(reader->context, data, length, NULL);
    result = error.code == heif_error_Ok ? reader_finish_open(reader, message) : fail(error, message);
    if (result != SP_OK) { sp_heif_reader_free(reader); return result; }
    *out = reader;
    return SP_OK;
}

static void copy_nclx(const struct heif_color_profile_nclx *from, sp_heif_nclx *to) {
    to->present = 1;
    to->color_primaries = (int)from->color_primaries;
    to->transfer_characteristics = (int)from->transfer_characteristics;
    to->matrix_coefficients = (int)from->matrix_coefficients;
    to->full_range = from->full_range_flag ? 1 : 0;
    to->red_x = from->color_primary_red_x; to->red_y = from->color_primary_red_y;
    to->green_x = from->color_primary_green_x; to->green_y = from->color_primary_green_y;
    to->blue_x = from->color_primary_blue_x; to->blue_y = from->color_primary_blue_y;
    to->white_x = from->color_primary_white_x; to->white_y = from->color_primary_white_y;
}

sp_status sp_heif_reader_info(sp_heif_reader *reader, sp_heif_info *info, char *message) {
    if (reader == NULL || reader->handle == NULL) { copy_message(message, "no image"); return SP_ERR_ARGUMENT; }
    struct heif_image_handle *handle = reader->handle;
    memset(info, 0, sizeof(*info));
    info->width = sp_libheif.heif_image_handle_get_width(handle);
    info->height = sp_libheif.heif_image_handle_get_height(handle);
    info->ispe_width = sp_libheif.heif_image_handle_get_ispe_width(handle);
    info->ispe_height = sp_libheif.heif_image_handle_get_ispe_height(handle);
    info->has_alpha = sp_libheif.heif_image_handle_has_alpha_channel(handle);
    info->premultiplied_alpha = sp_libheif.heif_image_handle_is_premultiplied_alpha(handle);
    info->luma_bits = sp_libheif.heif_image_handle_get_luma_bits_per_pixel(handle);
    info->chroma_bits = sp_libheif.heif_image_handle_get_chroma_bits_per_pixel(handle);
    info->top_level_images = sp_libheif.heif_context_get_number_of_top_level_images(reader->context);
    info->thumbnails = sp_libheif.heif_image_handle_get_number_of_thumbnails(handle);
    info->has_depth = sp_libheif.heif_image_handle_has_depth_image(handle);
    info->auxiliary_images = sp_libheif.heif_image_handle_get_number_of_auxiliary_images(handle, 0);
    info->icc_length = sp_libheif.heif_image_handle_get_raw_color_profile_size(handle);
    info->metadata_blocks = reader->metadata_count;
    // libheif allocates the nclx struct before it validates the code points: free it on errors too.
    struct heif_color_profile_nclx *nclx = NULL;
    if (sp_libheif.heif_image_handle_get_nclx_color_profile(handle, &nclx).code == heif_error_Ok && nclx != NULL) {
        copy_nclx(nclx, &info->nclx);
    }
    if (nclx != NULL) sp_libheif.heif_nclx_color_profile_free(nclx);
    return SP_OK;
}

sp_status sp_heif_reader_copy_icc(sp_heif_reader *reader, uint8_t *buffer, size_t length, char *message) {
    if (length != sp_libheif.heif_image_handle_get_raw_color_profile_size(reader->handle) || buffer == NULL) {
        copy_message(message, "ICC buffer size does not match the profile");
        return SP_ERR_ARGUMENT;
    }
    struct heif_error error = sp_libheif.heif_image_handle_get_raw_color_profile(reader->handle, buffer);
    return error.code == heif_error_Ok ? SP_OK : fail(error, message);
}

sp_status sp_heif_reader_metadata(sp_heif_reader *reader, int index, sp_heif_metadata *metadata, char *message) {
    if (index < 0 || index >= reader->metadata_count) { copy_message(message, "no such metadata item"); return SP_ERR_ARGUMENT; }
    heif_item_id id = reader->metadata_ids[index];
    memset(metadata, 0, sizeof(*metadata));
    const char *type = sp_libheif.heif_image_handle_get_metadata_type(reader->handle, id);
    if (type != NULL) strncpy(metadata->type, type, sizeof(metadata->type) - 1);
    const char *content_type = sp_libheif.heif_image_handle_get_metadata_content_type(reader->handle, id);
    if (content_type != NULL) strncpy(metadata->content_type, content_type, sizeof(metadata->content_type) - 1);
    metadata->length = sp_libheif.heif_image_handle_get_metadata_size(reader->handle, id);
    return SP_OK;
}

sp_status sp_heif_reader_copy_metadata(sp_heif_reader *reader, int index, uint8_t *buffer, size_t length,
                                       char *message) {
    if (index < 0 || index >= reader->metadata_count || buffer == NULL
        || length != sp_libheif.heif_image_handle_get_metadata_size(reader->handle, reader->metadata_ids[index])) {
        copy_message(message, "metadata buffer does not match the item");
        return SP_ERR_ARGUMENT;
    }
    struct heif_error error = sp_libheif.heif_image_handle_get_metadata(reader->handle, reader->metadata_ids[index], buffer);
    return error.code == heif_error_Ok ? SP_OK : fail(error, message);
}

sp_status sp_heif_reader_decode(sp_heif_reader *reader, int wanted_chroma, int threads, sp_heif_planes *planes, char *message) {
    if (reader->image != NULL) { copy_message(message, "image already decoded"); return SP_ERR_ARGUMENT; }
    memset(planes, 0, sizeof(*planes));
    sp_libheif.heif_context_set_max_decoding_threads(reader->context, threads);
    struct heif_decoding_options *options = sp_libheif.heif_decoding_options_alloc();
    if (options == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    options->ignore_transformations = 0;    // irot, imir and clap are authoritative: libheif applies them
    options->convert_hdr_to_8bit = 0;       // 10/12-bit samples reach the Swift side whole
    // The coded planes: YCbCr in the chroma format the caller read from the file's configuration box (or
    // monochrome), so libheif converts nothing. (Left undefined, libheif 1.15 converts: to planar RGB for an
    // undefined colorspace, to 4:4:4 for YCbCr with an undefined chroma.)
    if (wanted_chroma < 0 || wanted_chroma > 3) { sp_libheif.heif_decoding_options_free(options); copy_message(message, "bad chroma"); return SP_ERR_ARGUMENT; }
    enum heif_colorspace wanted_space = wanted_chroma == heif_chroma_monochrome ? heif_colorspace_monochrome : heif_colorspace_YCbCr;
    struct heif_error error = sp_libheif.heif_decode_image(reader->handle, &reader->image, wanted_space,
                                                (enum heif_chroma)wanted_chroma, options);
    sp_libheif.heif_decoding_options_free(options);
    if (error.code != heif_error_Ok) { reader->image = NULL; return fail(error, message); }
    struct heif_image *image = reader->image;
    enum heif_colorspace space = sp_libheif.heif_image_get_colorspace(image);
    enum heif_chroma chroma = sp_libheif.heif_image_get_chroma_format(image);
    if (space != heif_colorspace_YCbCr && space != heif_colorspace_monochrome) {
        snprintf(message, SP_MESSAGE_LENGTH, "decoded image is not YCbCr or monochrome (colorspace %d, chroma %d)", (int)space, (int)chroma);
        return SP_ERR_LIBRARY;
    }
    planes->chroma = (int)chroma;
    planes->width = sp_libheif.heif_image_get_width(image, heif_channel_Y);
    planes->height = sp_libheif.heif_image_get_height(image, heif_channel_Y);
    planes->bits = sp_libheif.heif_image_get_bits_per_pixel_range(image, heif_channel_Y);
    planes->y = sp_libheif.heif_image_get_plane_readonly(image, heif_channel_Y, &planes->y_stride);
    if (planes->y == NULL || planes->width <= 0 || planes->height <= 0) {
        copy_message(message, "decoded image has no luma plane");
        return SP_ERR_LIBRARY;
    }
    if (space == heif_colorspace_YCbCr && chroma != heif_chroma_monochrome) {
        planes->cb = sp_libheif.heif_image_get_plane_readonly(image, heif_channel_Cb, &planes->cb_stride);
        planes->cr = sp_libheif.heif_image_get_plane_readonly(image, heif_channel_Cr, &planes->cr_stride);
        planes->chroma_width = sp_libheif.heif_image_get_width(image, heif_channel_Cb);
        planes->chroma_height = sp_libheif.heif_image_get_height(image, heif_channel_Cb);
        planes->chroma_bits = sp_libheif.heif_image_get_bits_per_pixel_range(image, heif_channel_Cb);
        if (planes->cb == NULL || planes->cr == NULL || sp_libheif.heif_image_get_width(image, heif_channel_Cr) != planes->chroma_width
            || sp_libheif.heif_image_get_height(image, heif_channel_Cr) != planes->chroma_height
            || sp_libheif.heif_image_get_bits_per_pixel_range(image, heif_channel_Cr) != planes->chroma_bits) {
            copy_message(message, "decoded image has inconsistent chroma planes");
            return SP_ERR_LIBRARY;
        }
    } else {
        planes->chroma = (int)heif_chroma_monochrome;
    }
    if (sp_libheif.heif_image_has_channel(image, heif_channel_Alpha)) {
        planes->alpha = sp_libheif.heif_image_get_plane_readonly(image, heif_channel_Alpha, &planes->alpha_stride);
        planes->alpha_bits = sp_libheif.heif_image_get_bits_per_pixel_range(image, heif_channel_Alpha);
        if (planes->alpha != NULL && (sp_libheif.heif_image_get_width(image, heif_channel_Alpha) != planes->width
                                      || sp_libheif.heif_image_get_height(image, heif_channel_Alpha) != planes->height)) {
            copy_message(message, "alpha plane size differs from the image");
            return SP_ERR_LIBRARY;
        }
    }
    struct heif_color_profile_nclx *nclx = NULL;
    if (sp_libheif.heif_image_get_nclx_color_profile(image, &nclx).code == heif_error_Ok && nclx != NULL) {
        copy_nclx(nclx, &planes->nclx);
    }
    if (nclx != NULL) sp_libheif.heif_nclx_color_profile_free(nclx);
    return SP_OK;
}

void sp_heif_reader_release_image(sp_heif_reader *reader) {
    if (reader == NULL || reader->image == NULL) return;
    sp_libheif.heif_image_release(reader->image);
    reader->image = NULL;
}

void sp_heif_reader_free(sp_heif_reader *reader) {
    if (reader == NULL) return;
    sp_heif_reader_release_image(reader);
    if (reader->handle != NULL) sp_libheif.heif_image_handle_release(reader->handle);
    if (reader->context != NULL) sp_libheif.heif_context_free(reader->context);
    if (reader->file != NULL) fclose(reader->file);
    free(reader->metadata_ids);
    free(reader);
}

// MARK: - nclx → ICC

/// The tone curve (encoded value → linear light) of an H.273 transfer characteristic, as an ICC parametric
/// curve; 0 when there is none (PQ, HLG, logarithmic).
static int transfer_curve(int transfer, cmsInt32Number *type, cmsFloat64Number params[5]) {
    switch (transfer) {
    case 2:   // unspecified: sRGB, as browsers assume
    case 13:  // IEC 61966-2-1 (sRGB)
        *type = 4;
        params[0] = 2.4; params[1] = 1 / 1.055; params[2] = 0.055 / 1.055; params[3] = 1 / 12.92; params[4] = 0.04045;
        return 1;
    case 1: case 6: case 14: case 15:   // BT.709, BT.601, BT.2020 (10/12-bit): the inverse of the camera curve
        *type = 4;
        params[0] = 1 / 0.45; params[1] = 1 / 1.099; params[2] = 0.099 / 1.099; params[3] = 1 / 4.5; params[4] = 0.081;
        return 1;
    case 7:   // SMPTE 240M
        *type = 4;
        params[0] = 1 / 0.45; params[1] = 1 / 1.1115; params[2] = 0.1115 / 1.1115; params[3] = 1 / 4.0; params[4] = 0.0913;
        return 1;
    case 4: *type = 1; params[0] = 2.2; return 1;   // BT.470 System M
    case 5: *type = 1; params[0] = 2.8; return 1;   // BT.470 System B, G
    case 8: *type = 1; params[0] = 1.0; return 1;   // linear
    case 17: *type = 1; params[0] = 2.6; return 1;  // SMPTE ST 428-1
    default: return 0;
    }
}

sp_status sp_heif_icc_from_nclx(const sp_heif_nclx *nclx, const char *description, uint8_t **out,
                                size_t *out_length, char *message) {
    sp_status loaded = sp_liblcms2_require(message);
    if (loaded != SP_OK) return loaded;
    cmsInt32Number type = 0;
    cmsFloat64Number params[5] = {0};
    if (!transfer_curve(nclx->transfer_characteristics, &type, params)) {
        copy_message(message, "transfer characteristic has no ICC tone curve (HDR or logarithmic)");
        return SP_ERR_ARGUMENT;
    }
    if (!(nclx->white_y > 0 && nclx->red_y > 0 && nclx->green_y > 0 && nclx->blue_y > 0)) {
        copy_message(message, "colour primaries are not usable");
        return SP_ERR_ARGUMENT;
    }
    cmsCIExyY white = { nclx->white_x, nclx->white_y, 1.0 };
    cmsCIExyYTRIPLE primaries = {
        { nclx->red_x, nclx->red_y, 1.0 }, { nclx->green_x, nclx->green_y, 1.0 }, { nclx->blue_x, nclx->blue_y, 1.0 }
    };
    cmsContext context = sp_liblcms2.cmsCreateContext(NULL, NULL);
    if (context == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    sp_status result = SP_OK;
    cmsToneCurve *curve = sp_liblcms2.cmsBuildParametricToneCurve(context, type, params);
    cmsToneCurve *curves[3] = { curve, curve, curve };
    cmsHPROFILE profile = curve != NULL ? sp_liblcms2.cmsCreateRGBProfileTHR(context, &white, &primaries, curves) : NULL;
    cmsMLU *text = profile != NULL ? sp_liblcms2.cmsMLUalloc(context, 1) : NULL;
    cmsUInt32Number length = 0;
    if (profile == NULL || text == NULL) {
        copy_message(message, "Little CMS could not build the profile");
        result = SP_ERR_LIBRARY;
    } else {
        sp_liblcms2.cmsSetProfileVersion(profile, 4.3);
        sp_liblcms2.cmsMLUsetASCII(text, "en", "US", description != NULL ? description : "RGB");
        sp_liblcms2.cmsWriteTag(profile, cmsSigProfileDescriptionTag, text);
        if (!sp_liblcms2.cmsSaveProfileToMem(profile, NULL, &length) || length == 0) {
            copy_message(message, "Little CMS could not size the profile");
            result = SP_ERR_LIBRARY;
        } else if ((*out = malloc(length)) == NULL) {
            copy_message(message, "out of memory");
            result = SP_ERR_MEMORY;
        } else if (!sp_liblcms2.cmsSaveProfileToMem(profile, *out, &length)) {
            free(*out);
            *out = NULL;
            copy_message(message, "Little CMS could not write the profile");
            result = SP_ERR_LIBRARY;
        } else {
            // Little CMS stamps the header's creation date (bytes 24–35) with the clock: a fixed date instead,
            // so the same input always gives the same output bytes (the profile ID, 84–99, is left zero).
            static const uint8_t fixed_date[12] = { 0x07, 0xE6, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0 };  // 2022-01-01
            if (length >= 36) memcpy(*out + 24, fixed_date, sizeof fixed_date);
            *out_length = length;
        }
    }
    if (text != NULL) sp_liblcms2.cmsMLUfree(text);
    if (profile != NULL) sp_liblcms2.cmsCloseProfile(profile);
    if (curve != NULL) sp_liblcms2.cmsFreeToneCurve(curve);
    sp_liblcms2.cmsDeleteContext(context);
    return result;
}
