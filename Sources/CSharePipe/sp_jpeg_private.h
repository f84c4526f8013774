// What the JPEG shim's files share (private to the shim): the error manager that turns libjpeg's error_exit
// into a longjmp back to the shim function that made the call, and how a shim function reports it.
// sp_jpeg_common.c: the error manager; sp_jpeg_decode.c: the reader (markers, banded decode, an encode scored);
// sp_jpeg_encode.c: the encoder and the 4:2:0 planes; sp_jpeg_recode.c: an encode of ours written again from its
// coefficients; sp_jpeg_scan_counts.c: the progressive recode's Huffman statistics counted from them.
#ifndef SP_JPEG_PRIVATE_H
#define SP_JPEG_PRIVATE_H

#include "sp_jpeg.h"

#include <jpeglib.h>
#include <jerror.h>
#include <setjmp.h>

#define copy_message sp_copy_message

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    char last_warning[JMSG_LENGTH_MAX];
    int warnings;
    int quiet;                 // 1: warnings not counted (a band's decode repeats the first decode's warnings)
    sp_jpeg_limit limit_hit;   // which limit ended the last call, if any
} sp_error_mgr;

/// Points `cinfo` at `error`, whose error_exit longjmps to error->jump (set it before the next libjpeg call).
void sp_jpeg_install_error_manager(j_common_ptr cinfo, sp_error_mgr *error);

/// Sets the compressor's quantisation tables (0 and 1, or one per component for jpegli's) and which component
/// uses which: `tables` scaled by `quality` (sp_jpeg_tables.c). After jpeg_set_defaults.
void sp_jpeg_set_tables(j_compress_ptr cinfo, sp_jpeg_quant_tables tables, int quality);

/// Zigzag index → natural-order position (libjpeg's jpeg_natural_order, which it does not declare for callers).
extern const unsigned char sp_jpeg_natural_order[DCTSIZE2];

/// A growable memory destination whose buffer the shim owns, so it can be freed when an error unwinds the
/// encoder (sp_jpeg_encode.c).
typedef struct {
    struct jpeg_destination_mgr pub;
    uint8_t *buffer;
    size_t capacity;
    size_t length;
    int failed;
} sp_memory_destination;

/// Points `cinfo` at `dest`, whose buffer (malloc'ed by the caller, `capacity` bytes) grows as the encoder writes.
void sp_jpeg_memory_destination_init(j_compress_ptr cinfo, sp_memory_destination *dest);

/// Writes the marker segments (after jpeg_start_compress or jpeg_write_coefficients).
void sp_jpeg_write_markers(j_compress_ptr cinfo, const sp_jpeg_marker *markers, int marker_count);

/// Sets SharePipe's progressive scan script for the compressor's components (sp_jpeg_encode.c): every progressive
/// JPEG the shim writes, encoded or recoded, uses it.
void sp_jpeg_set_progressive_scans(j_compress_ptr cinfo);

/// libjpeg's optimal-table builder (jchuff.c), exported by every libjpeg since 6b but declared only in its private
/// jchuff.h: the code lengths optimize_coding gives a table's symbols (it clobbers `freq`).
extern void jpeg_gen_optimal_table(j_compress_ptr cinfo, JHUFF_TBL *htbl, long freq[]);

/// The bits of a magnitude: libjpeg's category of a coefficient or DC difference.
static inline int sp_jpeg_magnitude_bits(int value) {
    unsigned int magnitude = (unsigned int)(value < 0 ? -value : value);
    return magnitude == 0 ? 0 : 32 - __builtin_clz(magnitude);
}

/// Takes one block of a scan: `member` is its component's place among the scan's components.
typedef void (*sp_jpeg_block_visitor)(void *state, int member, const JCOEF *block);
/// Every block of `count` components of `source` (`components`: indices into its comp_info and `coefficients`) in
/// the order a scan of them codes them (sp_jpeg_scan_counts.c): one component's blocks row by row, or the
/// interleaved MCUs of several with the dummy blocks of partial MCUs (the previous block's DC and no AC, as
/// jctrans.c makes them).
void sp_jpeg_visit_scan_blocks(j_decompress_ptr source, jvirt_barray_ptr *coefficients, const int *components,
                               int count, sp_jpeg_block_visitor visit, void *state);

/// For each byte b of a block's mask in natural order and each value v of it, the mask in zigzag order of the
/// coefficients v marks (sp_jpeg_scan_counts.c).
typedef uint64_t sp_zigzag_masks[8][256];
void sp_jpeg_make_zigzag_masks(sp_zigzag_masks zigzag);
/// Bit k set where the coefficient at zigzag position k of `block` has a magnitude over `threshold`.
uint64_t sp_jpeg_zigzag_mask_above(const JCOEF *block, const sp_zigzag_masks zigzag, int threshold);

/// A progressive recode's scan statistics, counted from the coefficients (sp_jpeg_count_scans_directly).
typedef struct {
    j_decompress_ptr source;
    jvirt_barray_ptr *coefficients;
    void (*libjpeg_start_pass)(j_compress_ptr cinfo, boolean gather_statistics);
    boolean (*libjpeg_compress_data)(j_compress_ptr cinfo, JSAMPIMAGE input);
    long frequencies[NUM_HUFF_TBLS][257];
    sp_zigzag_masks zigzag;
} sp_scan_counts;

/// After jpeg_write_coefficients on a progressive compressor (Huffman, no restarts): its statistics passes count
/// each scan's symbols from `source`'s `coefficients` and skip libjpeg's pass over them, for the same tables. `counts`
/// (cinfo->client_data from now on) must outlive jpeg_finish_compress. Anything else is left as it is.
void sp_jpeg_count_scans_directly(j_compress_ptr cinfo, sp_scan_counts *counts, j_decompress_ptr source,
                                  jvirt_barray_ptr *coefficients);

/// The scans the calling thread's statistics passes counted from the coefficients so far (for the tests).
extern _Thread_local size_t sp_jpeg_scans_counted_directly;

/// Stops at a limit: the message says which, Swift adds the numbers.
void sp_jpeg_fail_at_limit(j_common_ptr cinfo, sp_jpeg_limit limit, const char *text);

/// Stops with a message of its own (not a limit): the call returns SP_ERR_LIBRARY.
void sp_jpeg_fail_with(j_common_ptr cinfo, const char *text);

/// What a shim function returns when a libjpeg call longjmped back to it.
sp_status sp_jpeg_failure(sp_error_mgr *error, char *message);

#endif
