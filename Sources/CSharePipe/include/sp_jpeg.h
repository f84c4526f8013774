#ifndef SP_JPEG_H
#define SP_JPEG_H

#include "sp_common.h"

/// A libjpeg decompressor with its error manager; opaque to Swift.
typedef struct sp_jpeg_reader sp_jpeg_reader;

/// What the header says, before any pixel is decoded.
typedef struct {
    int width;
    int height;
    int components;         // 1, 3 or 4
    int jpeg_color_space;   // libjpeg J_COLOR_SPACE of the stored data
    int progressive;        // 1 when the file is progressive (multi-scan)
    int saw_adobe_marker;   // APP14 Adobe seen (CMYK stored inverted)
    int adobe_transform;
} sp_jpeg_header;

/// One saved marker segment (APPn or COM), its payload without the 2-byte length.
typedef struct {
    int marker;             // 0xE0...0xEF for APPn, 0xFE for COM
    const uint8_t *data;    // owned by the reader; valid until sp_jpeg_reader_free or a banded decode's second band
    unsigned int length;
} sp_jpeg_marker;

/// Limits a reader enforces while it reads (0 means no limit). Past one, a call fails with SP_ERR_MEMORY
/// and `sp_jpeg_reader_limit_hit` says which.
typedef struct {
    long max_memory;        // libjpeg's max_memory_to_use, and the bound of the compact coefficient store
    long max_metadata;      // bytes of saved APPn/COM segments (payloads plus 64 bytes each)
    int max_segments;       // number of saved APPn/COM segments
    int max_scans;          // scans of a progressive (multi-scan) file
} sp_jpeg_limits;

/// Which limit stopped a reader.
typedef enum {
    SP_JPEG_LIMIT_NONE = 0,
    SP_JPEG_LIMIT_MEMORY = 1,    // max_memory (or a failed allocation)
    SP_JPEG_LIMIT_METADATA = 2,
    SP_JPEG_LIMIT_SEGMENTS = 3,
    SP_JPEG_LIMIT_SCANS = 4
} sp_jpeg_limit;

/// Output colour of the decoder.
typedef enum { SP_JPEG_OUT_GRAY = 1, SP_JPEG_OUT_RGB = 3, SP_JPEG_OUT_CMYK = 4 } sp_jpeg_out_space;

/// Opens a reader on a file, read through libjpeg's small stdio buffer (the file is never loaded whole).
sp_status sp_jpeg_reader_open_file(const char *path, sp_jpeg_limits limits, sp_jpeg_reader **out, char *message);
/// Opens a reader on caller-owned bytes that must outlive the reader.
sp_status sp_jpeg_reader_open_memory(const uint8_t *data, size_t length, sp_jpeg_limits limits, sp_jpeg_reader **out,
                                     char *message);
/// Reads markers and the frame header. With save_markers, APPn/COM payloads are kept for sp_jpeg_reader_markers.
sp_status sp_jpeg_reader_read_header(sp_jpeg_reader *reader, int save_markers, sp_jpeg_header *header, char *message);
/// Number of saved markers.
int sp_jpeg_reader_marker_count(const sp_jpeg_reader *reader);
/// Copies up to capacity saved markers, in file order, into markers; returns how many were copied.
int sp_jpeg_reader_markers(const sp_jpeg_reader *reader, sp_jpeg_marker *markers, int capacity);
/// The limit that made the last failed call fail (SP_JPEG_LIMIT_NONE when it was something else).
sp_jpeg_limit sp_jpeg_reader_limit_hit(const sp_jpeg_reader *reader);
/// Starts decompression with DCT scaling scale_num/8; reports the output size and component count.
sp_status sp_jpeg_reader_start(sp_jpeg_reader *reader, int scale_num, sp_jpeg_out_space space,
                               int *out_width, int *out_height, int *out_components, char *message);
/// Before sp_jpeg_reader_start: with full = 1, a multi-scan (progressive) file keeps libjpeg's own
/// whole-image coefficient arrays (128 bytes per block) instead of the compact store, which keeps only the
/// coefficients the chosen DCT scale reads plus a non-zero map and decodes the same pixels. For comparisons.
void sp_jpeg_reader_use_full_coefficients(sp_jpeg_reader *reader, int full);
/// Before sp_jpeg_reader_start: 1 makes the compact store expand and compact its rows with its plain C code
/// even where the CPU runs its SSSE3 code (the two give the same bytes; for the tests).
void sp_jpeg_reader_use_portable_store(sp_jpeg_reader *reader, int portable);
/// Whether the last decode's compact store ran its SSSE3 code (0 without a store).
int sp_jpeg_reader_store_vector(const sp_jpeg_reader *reader);
/// Before sp_jpeg_reader_start: decode a multi-scan file in bands of output rows when its compact store would
/// exceed `budget` bytes (0: never). The store then keeps the coefficients of one band; each band is a read
/// of the file (the source re-read from its start), at most `max_bands` of them (a band is at least
/// 1/max_bands of the image, even over the budget). A Huffman-coded progressive file's reads decode each
/// scan over their band's rows only, from checkpoints the previous read saved (sp_jpeg_band_skip.h); other
/// multi-scan files decode every row in every read, the store keeping the non-zero map outside the band.
/// The rows come out of sp_jpeg_reader_read_rows as from one decode, the same pixels. A file that cannot
/// seek gets one band.
void sp_jpeg_reader_set_band_budget(sp_jpeg_reader *reader, long budget, int max_bands);
/// How many times the file was decoded so far (bands; 1 without).
int sp_jpeg_reader_band_count(const sp_jpeg_reader *reader);
/// With a band budget, for a Huffman-coded progressive file: how many iMCU rows the entropy decoder read, summed
/// over every scan of every band's read (each scan's rows once, plus the margins the bands share); -1 otherwise.
long sp_jpeg_reader_entropy_rows(const sp_jpeg_reader *reader);
/// The most bytes the compact coefficient store held during this decode, over every band (0 for a
/// single-scan file).
size_t sp_jpeg_reader_coefficient_store_peak(const sp_jpeg_reader *reader);
/// The most bytes the compact store keeps for one 8×8 block of a component whose IDCT produces
/// scaled_size × scaled_size pixels (libjpeg's DCT_scaled_size, 1…16): for MemoryEstimate.
size_t sp_jpeg_coefficient_store_block_bound(int scaled_size);
/// The most bytes a banded decode keeps for its entropy decoder checkpoints (each scan read once over all
/// bands) with the scan limit `max_scans`: for MemoryEstimate.
size_t sp_jpeg_band_skip_table_bytes(int max_scans);
/// Reads up to max_rows scanlines into buffer (rows of out_width*out_components bytes, stride row_bytes).
sp_status sp_jpeg_reader_read_rows(sp_jpeg_reader *reader, uint8_t *buffer, size_t row_bytes, int max_rows,
                                   int *rows_read, char *message);
/// Finishes decompression (reads to EOI); errors here mean trailing corruption.
sp_status sp_jpeg_reader_finish(sp_jpeg_reader *reader, char *message);
/// Number of warnings libjpeg emitted (corrupt data it recovered from), and the last one's text.
int sp_jpeg_reader_warning_count(const sp_jpeg_reader *reader, char *last_warning);
/// Destroys the decompressor and closes the file, if any.
void sp_jpeg_reader_free(sp_jpeg_reader *reader);

/// The quantisation tables an encode scales by its quality (as libjpeg's jpeg_set_quality scales its own: the
/// table as given at 50, 200 − 2q percent above, 5000/q percent below, clamped to 1...255).
typedef enum {
    SP_JPEG_TABLES_ANNEX_K = 0,                   // libjpeg's: ITU-T T.81 Annex K, luminance and chrominance
    SP_JPEG_TABLES_KLEIN_SILVERSTEIN_CARNEY = 1,  // sp_jpeg_tables.c: fewer bytes at the same SSIMULACRA2 on photos
    SP_JPEG_TABLES_JPEGLI_DISTANCE_3 = 2          // sp_jpeg_tables.c: jpegli's Y, Cb and Cr tables at its distance
                                                  // 3.0 as one shape, its quality mapped to keep KSC's scores
} sp_jpeg_quant_tables;

/// Encoder settings.
typedef struct {
    int quality;            // 1...100
    int progressive;        // 0 or 1
    int subsample_420;      // 1: 4:2:0 chroma, 0: 4:4:4
    int optimize_coding;    // 1: optimized Huffman tables
    int write_jfif;         // 1: write a JFIF APP0
    int tables;             // sp_jpeg_quant_tables
} sp_jpeg_encode_settings;

/// The table of `component` (0 Y, 1 Cb, 2 Cr) an encode with `tables` at `quality` writes, in natural (row-major)
/// order: 64 values in `out`. For tests and for reading a file's quality back.
void sp_jpeg_quant_table(sp_jpeg_quant_tables tables, int component, int quality, unsigned int out[64]);

/// Encodes a whole bitmap (components 1 or 3, 8-bit, tightly packed rows) to JPEG in memory,
/// writing the given markers (payloads, in order) right after the JFIF header.
/// On success *out is malloc'ed and freed with sp_free.
sp_status sp_jpeg_encode(const uint8_t *pixels, int width, int height, int components,
                         sp_jpeg_encode_settings settings,
                         const sp_jpeg_marker *markers, int marker_count,
                         uint8_t **out, size_t *out_length, char *message);

/// An RGB bitmap as the YCbCr 4:2:0 planes libjpeg's compressor makes of it (half the bytes); opaque to Swift.
typedef struct sp_jpeg_planes sp_jpeg_planes;

/// Converts an RGB bitmap (8-bit, tightly packed rows) to 4:2:0 YCbCr planes exactly as libjpeg would
/// (its colour conversion, downsampling and edge padding), so that sp_jpeg_encode_planes writes the same
/// file as sp_jpeg_encode with subsample_420 on the bitmap. With release_rows the bitmap's pages are given
/// back to the system (madvise MADV_DONTNEED) as its rows are converted: its contents are lost (they read as
/// zero), and only the caller's sole copy may be passed. Free with sp_jpeg_planes_free.
sp_status sp_jpeg_planes_from_rgb(uint8_t *pixels, int width, int height, int release_rows, sp_jpeg_planes **out,
                                  char *message);
/// Empty planes for a width × height image, filled top to bottom by sp_jpeg_planes_push_rgb_rows (their pages
/// become resident as rows reach them): a render can stream its rows in, so that the RGB bitmap never exists
/// whole. Free with sp_jpeg_planes_free; they encode once every row is in.
sp_status sp_jpeg_planes_new(int width, int height, sp_jpeg_planes **out, char *message);
/// Converts the next `count` RGB rows (8-bit, `row_bytes` apart) into the planes, exactly as
/// sp_jpeg_planes_from_rgb converts a bitmap's (it keeps the even row of a pair until its partner comes); the
/// last row also writes the padding. More rows than the image has left is SP_ERR_ARGUMENT.
sp_status sp_jpeg_planes_push_rgb_rows(sp_jpeg_planes *planes, const uint8_t *rows, size_t row_bytes, int count,
                                       char *message);
/// How many image rows the planes hold so far.
int sp_jpeg_planes_rows(const sp_jpeg_planes *planes);
/// The bytes the planes hold.
size_t sp_jpeg_planes_bytes(const sp_jpeg_planes *planes);
/// The bytes the planes of a width × height bitmap would hold (0 outside JPEG's size).
size_t sp_jpeg_planes_bytes_for_size(int width, int height);
void sp_jpeg_planes_free(sp_jpeg_planes *planes);
/// Encodes complete planes with jpeg_write_raw_data (settings.subsample_420 is implied); otherwise as
/// sp_jpeg_encode. Planes still missing rows are SP_ERR_ARGUMENT.
sp_status sp_jpeg_encode_planes(const sp_jpeg_planes *planes, sp_jpeg_encode_settings settings,
                                const sp_jpeg_marker *markers, int marker_count,
                                uint8_t **out, size_t *out_length, char *message);
/// Writes a baseline JPEG of ours again from its quantised coefficients (read back once, never decoded to pixels):
/// the same pixels, with optimized Huffman tables, progressive into *progressive_out and baseline into
/// *baseline_out (either may be NULL: not asked for), a JFIF APP0 with write_jfif and the given markers (the
/// source's own markers are not copied); the quantisation tables and sampling are the source's. Each output is
/// the same file as sp_jpeg_encode with optimize_coding at the source's quality (progressive: SharePipe's scan
/// script). Asked for both, the baseline file is written only where it could be the smaller: where a lower bound
/// of its size (its symbols counted and coded without writing them) is over the progressive file's, *baseline_out
/// stays NULL. The coefficients are held in libjpeg's arrays (128 bytes a block). The outputs are freed with
/// sp_free.
sp_status sp_jpeg_recode(const uint8_t *jpeg, size_t length, int write_jfif, const sp_jpeg_marker *markers,
                         int marker_count, uint8_t **baseline_out, size_t *baseline_length,
                         uint8_t **progressive_out, size_t *progressive_length, char *message);

/// The lower bound sp_jpeg_recode compares the progressive file with, for a baseline JPEG with Huffman tables
/// (for the tests: on an optimized baseline file of ours it is the file's size less its stuffed zero bytes).
sp_status sp_jpeg_baseline_bytes_bound(const uint8_t *jpeg, size_t length, size_t *bound, char *message);

/// A compressor fed RGB rows as a render makes them (4:2:0, `jpeg_write_raw_data` one 16-row band at a time):
/// neither the bitmap nor its planes exist whole, only one band and the compact coefficient store. It writes
/// the same file as sp_jpeg_encode_planes on the planes of the same rows; opaque to Swift.
typedef struct sp_jpeg_row_encoder sp_jpeg_row_encoder;
/// Starts an encode of a width × height image (settings.subsample_420 is implied), writing the markers (copied
/// now). Free with sp_jpeg_row_encoder_free, finished or not.
sp_status sp_jpeg_row_encoder_new(int width, int height, sp_jpeg_encode_settings settings,
                                  const sp_jpeg_marker *markers, int marker_count, sp_jpeg_row_encoder **out,
                                  char *message);
/// Encodes the next `count` RGB rows (8-bit, `row_bytes` apart), top to bottom. After an error every later
/// call fails.
sp_status sp_jpeg_row_encoder_push_rgb_rows(sp_jpeg_row_encoder *encoder, const uint8_t *rows, size_t row_bytes,
                                            int count, char *message);
/// After the last row: the Huffman passes and the file. On success *out is malloc'ed (free with sp_free); the
/// encoder is then done (free it).
sp_status sp_jpeg_row_encoder_finish(sp_jpeg_row_encoder *encoder, uint8_t **out, size_t *out_length,
                                     char *message);
void sp_jpeg_row_encoder_free(sp_jpeg_row_encoder *encoder);
/// What the row encoder holds of the pixels for an image `width` wide: its band and the row it keeps (0
/// outside JPEG's size). The coefficient store is libjpeg's memory, not pixels.
size_t sp_jpeg_row_encoder_band_bytes(int width);

/// The SSIMULACRA2 score (sp_ssimulacra2.h) of `jpeg` against the bitmap it was made from (`pixels`: `width` ×
/// `height`, `channels` samples a pixel, tightly packed; alpha ignored, as the encoder ignored it), decoded as a
/// viewer would 8 rows at a time: memory for 8 decoded rows, the streaming scorer and libjpeg's decompressor
/// (a progressive file also needs libjpeg's whole-image coefficients: score its baseline twin instead).
sp_status sp_jpeg_ssimulacra2(const uint8_t *jpeg, size_t length, const uint8_t *pixels, int width, int height,
                              int channels, double *score, char *message);

/// For tests: the `nth` allocation of the compressor's coefficient store on the calling thread (counted from
/// this call) fails as a failed malloc would; 0 turns it off. The encode then returns SP_ERR_MEMORY.
void sp_jpeg_encode_store_fail_allocation(int nth);

/// For tests: 1 makes the calling thread's encodes keep libjpeg's own whole-image coefficient arrays instead of
/// the compact store (the same file, more memory); 0 turns it off.
void sp_jpeg_encode_use_libjpeg_arrays(int on);

/// For tests: 1 makes the calling thread's progressive recodes count each scan's Huffman symbols with libjpeg's
/// own statistics pass (its encoder run without writing) instead of from the coefficients (the same file); 0
/// turns it off.
void sp_jpeg_recode_count_with_libjpeg(int on);
/// For tests: how many scans the calling thread's progressive recodes counted from the coefficients so far.
size_t sp_jpeg_recode_scans_counted_directly(void);

#endif
