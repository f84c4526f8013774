// Libraries the shim loads on first use instead of linking: libheif, libde265, libavif, libwebp (+ demux, mux) and
// Little CMS.
// A JPEG, PNG or GIF job never maps them (with their codecs: x265, aom, dav1d, de265, libstdc++ …), which
// keeps about 3.5 MB out of every such process.
//
// Each library is an X-macro list of the functions the shim calls. `SP_LAZY_DECLARE` turns a list into a
// table of function pointers typed from the library's own header (`__typeof__`), so a call site reads
// `sp_libheif.heif_context_alloc()` and the compiler checks every argument as before. `SP_LAZY_DEFINE`
// (sp_lazy.c) makes the table and `sp_<id>_require(message)`: the first call `dlopen`s the library by its
// SONAME and resolves every function (pthread_once, so any thread may be first); every call returns SP_OK,
// or SP_ERR_UNAVAILABLE with "<library> not available (<why>)" in `message`. Call it in every shim entry that
// can be the first to touch the library (the ones that create a handle); calls on an existing handle need
// nothing. The environment variable `SHAREPIPE_<ID>` (e.g. SHAREPIPE_LIBHEIF), read once, names another
// file to load: tests use it to make a load fail.
//
// Adding a library: include its header here, write its list, one SP_LAZY_DECLARE line below and one
// SP_LAZY_DEFINE line in sp_lazy.c, and call sp_<id>_require where a handle is created.
#ifndef SP_LAZY_H
#define SP_LAZY_H

#include "sp_common.h"

#include <avif/avif.h>
#include <lcms2.h>
#include <libde265/de265.h>
#include <libheif/heif.h>
#include <webp/decode.h>
#include <webp/demux.h>
#include <webp/encode.h>
#include <webp/mux.h>

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

#define SP_LIBWEBPDEMUX_FUNCTIONS(X) \
    X(WebPAnimDecoderOptionsInitInternal) \
    X(WebPAnimDecoderNewInternal) \
    X(WebPAnimDecoderGetInfo) \
    X(WebPAnimDecoderHasMoreFrames) \
    X(WebPAnimDecoderGetNext) \
    X(WebPAnimDecoderDelete)

#define SP_LIBWEBPMUX_FUNCTIONS(X) \
    X(WebPNewInternal) \
    X(WebPMuxSetImage) \
    X(WebPMuxSetChunk) \
    X(WebPMuxAssemble) \
    X(WebPMuxDelete)

// libde265 directly, for the grid tile route (sp_hevc.c); libheif loads its own copy through its plugin.
#define SP_LIBDE265_FUNCTIONS(X) \
    X(de265_init) \
    X(de265_set_verbosity) \
    X(de265_get_error_text) \
    X(de265_new_decoder) \
    X(de265_free_decoder) \
    X(de265_push_NAL) \
    X(de265_flush_data) \
    X(de265_decode) \
    X(de265_get_next_picture) \
    X(de265_release_next_picture) \
    X(de265_get_image_width) \
    X(de265_get_image_height) \
    X(de265_get_chroma_format) \
    X(de265_get_bits_per_pixel) \
    X(de265_get_image_plane) \
    X(de265_get_image_full_range_flag) \
    X(de265_get_image_colour_primaries) \
    X(de265_get_image_transfer_characteristics) \
    X(de265_get_image_matrix_coefficients)

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

#define SP_LIBLCMS2_FUNCTIONS(X) \
    X(cmsCreateContext) \
    X(cmsDeleteContext) \
    X(cmsGetContextUserData) \
    X(cmsSetLogErrorHandlerTHR) \
    X(cmsOpenProfileFromMemTHR) \
    X(cmsCreate_sRGBProfileTHR) \
    X(cmsCreateRGBProfileTHR) \
    X(cmsGetColorSpace) \
    X(cmsCloseProfile) \
    X(cmsCreateTransformTHR) \
    X(cmsDoTransform) \
    X(cmsDeleteTransform) \
    X(cmsBuildParametricToneCurve) \
    X(cmsFreeToneCurve) \
    X(cmsMLUalloc) \
    X(cmsMLUsetASCII) \
    X(cmsMLUfree) \
    X(cmsSetProfileVersion) \
    X(cmsWriteTag) \
    X(cmsSaveProfileToMem)

/// A table field: a pointer of the function's own type, named like the function.
#define SP_LAZY_FIELD(function) __typeof__(function) *function;

/// The table `sp_<id>` and its loader `sp_<id>_require` for the functions in `LIST`.
#define SP_LAZY_DECLARE(id, LIST) \
    typedef struct { LIST(SP_LAZY_FIELD) } sp_##id##_table; \
    extern sp_##id##_table sp_##id; \
    sp_status sp_##id##_require(char *message);

SP_LAZY_DECLARE(libheif, SP_LIBHEIF_FUNCTIONS)
SP_LAZY_DECLARE(libwebp, SP_LIBWEBP_FUNCTIONS)
SP_LAZY_DECLARE(libwebpdemux, SP_LIBWEBPDEMUX_FUNCTIONS)
SP_LAZY_DECLARE(libwebpmux, SP_LIBWEBPMUX_FUNCTIONS)
SP_LAZY_DECLARE(liblcms2, SP_LIBLCMS2_FUNCTIONS)
SP_LAZY_DECLARE(libde265, SP_LIBDE265_FUNCTIONS)
SP_LAZY_DECLARE(libavif, SP_LIBAVIF_FUNCTIONS)

#endif
