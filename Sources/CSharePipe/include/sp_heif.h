#ifndef SP_HEIF_H
#define SP_HEIF_H

#include "sp_common.h"

/// A libheif context on one file or block of bytes, with its primary image handle; opaque to Swift.
/// Only the primary image is ever looked at: thumbnails, depth maps, auxiliary and other top-level images
/// are neither decoded nor read.
typedef struct sp_heif_reader sp_heif_reader;

/// The colour description of a `colr` box of type nclx (ITU-T H.273 code points), with the primaries libheif
/// derived from them.
typedef struct {
    int present;                // 1 when the file (or, after decoding, the bitstream) gives one
    int color_primaries;
    int transfer_characteristics;
    int matrix_coefficients;
    int full_range;
    float red_x, red_y, green_x, green_y, blue_x, blue_y, white_x, white_y;
} sp_heif_nclx;

/// What the header read found about the primary image. No pixels were decoded.
typedef struct {
    int width;                  // as displayed: after irot, imir and clap, which libheif applies on decode
    int height;
    int ispe_width;             // as coded (before the transforms)
    int ispe_height;
    int has_alpha;
    int premultiplied_alpha;
    int luma_bits;              // 8, 10 or 12 (-1 if the file does not say)
    int chroma_bits;
    int top_level_images;       // how many top-level images the file holds (only the primary is used)
    int thumbnails;             // thumbnails of the primary image (never used)
    int has_depth;              // a depth map is attached (never used)
    int auxiliary_images;       // auxiliary images other than alpha and depth (never used)
    size_t icc_length;          // 0 when there is no ICC profile (prof or rICC colr box)
    int metadata_blocks;        // Exif, XMP and other metadata items of the primary image
    sp_heif_nclx nclx;          // the colr nclx box, if any
} sp_heif_info;

/// One metadata item of the primary image.
typedef struct {
    char type[16];              // the item type: "Exif", "mime", "uri " …
    char content_type[64];      // for "mime" items: "application/rdf+xml" is XMP
    size_t length;
} sp_heif_metadata;

/// The decoded primary image: YCbCr (or monochrome) planes as the codec produced them, transforms applied.
/// The planes belong to the reader and stay valid until sp_heif_reader_release_image or sp_heif_reader_free.
typedef struct {
    int width;                  // luma plane size (= displayed size)
    int height;
    int chroma;                 // heif_chroma: 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4
    int bits;                   // bits per sample of luma (8: one byte per sample; 9…16: two bytes, host order)
    int chroma_bits;
    const uint8_t *y, *cb, *cr, *alpha;     // cb/cr NULL for monochrome, alpha NULL without alpha
    int y_stride, cb_stride, cr_stride, alpha_stride;
    int chroma_width, chroma_height;
    int alpha_bits;
    sp_heif_nclx nclx;          // as attached to the decoded image (colr box, else the bitstream's, if any)
} sp_heif_planes;

/// Opens a context on a file read through stdio (seek and read as libheif asks; the file is never loaded
/// whole), reads the boxes and picks the primary image. `max_dimension` is handed to libheif
/// (heif_context_set_maximum_image_size_limit), so larger images are refused before any allocation.
sp_status sp_heif_reader_open_file(const char *path, int max_dimension, sp_heif_reader **out, char *message);
/// The same on caller-owned bytes that must outlive the reader.
sp_status sp_heif_reader_open_memory(const uint8_t *data, size_t length, int max_dimension,
                                     sp_heif_reader **out, char *message);
/// The primary image's header facts.
sp_status sp_heif_reader_info(sp_heif_reader *reader, sp_heif_info *info, char *message);
/// Copies the ICC profile (info.icc_length bytes) into `buffer`.
sp_status sp_heif_reader_copy_icc(sp_heif_reader *reader, uint8_t *buffer, size_t length, char *message);
/// Describes metadata item `index` (0 ..< info.metadata_blocks).
sp_status sp_heif_reader_metadata(sp_heif_reader *reader, int index, sp_heif_metadata *metadata, char *message);
/// Copies metadata item `index` (metadata.length bytes, exactly as stored) into `buffer`.
sp_status sp_heif_reader_copy_metadata(sp_heif_reader *reader, int index, uint8_t *buffer, size_t length,
                                       char *message);
/// Decodes the primary image to YCbCr planes in `chroma` (heif_chroma: 0 monochrome, 1 4:2:0, 2 4:2:2,
/// 3 4:4:4; pass the coded format so that libheif converts nothing), with irot/imir/clap applied.
/// `threads` is libheif's tile-decoding thread count (0: grid tiles one after another in this thread).
sp_status sp_heif_reader_decode(sp_heif_reader *reader, int chroma, int threads, sp_heif_planes *planes,
                                char *message);
/// Frees the decoded image (the planes) early; the reader stays open.
void sp_heif_reader_release_image(sp_heif_reader *reader);
/// Frees the image, the handle and the context, and closes the file.
void sp_heif_reader_free(sp_heif_reader *reader);

/// Builds an ICC profile (v4, matrix/TRC) with Little CMS for an RGB space given by its primaries and white
/// point (CIE xy) and an H.273 transfer characteristic. On success *out is malloc'ed (free with sp_free).
/// Transfers without an ICC tone curve equivalent (PQ, HLG, log) return SP_ERR_ARGUMENT.
sp_status sp_heif_icc_from_nclx(const sp_heif_nclx *nclx, const char *description, uint8_t **out,
                                size_t *out_length, char *message);

#endif
