// A compact store for libjpeg's whole-image DCT coefficient arrays (private to the shim).
//
// A multi-scan (progressive) JPEG makes libjpeg keep every coefficient of the image, 64 × 2 bytes per block,
// because every scan adds to every block. A DCT-scaled decode reads only some of them (the IDCT of a k/8
// scale, and block smoothing's first ten zigzag positions). The store replaces the arrays libjpeg requests
// through its public memory manager (request_virt_barray / realize_virt_arrays / access_virt_barray) and
// keeps, per block, a one-bit-per-coefficient non-zero map plus the values of the non-zero coefficients the
// IDCT reads. The block rows libjpeg accesses are expanded into a small window of full blocks and compacted
// again when it moves on. Coefficients not kept are expanded as 1 where their bit is set: the entropy decoder
// only ever tests them against zero (successive-approximation refinement) and never turns a non-zero
// coefficient into zero, and the IDCT never reads them, so the decoded pixels are those of libjpeg's own
// arrays (Tests/SharePipeTests/CSharePipe/ProgressiveStoreTests.swift checks it byte for byte).
//
// Bands. Even compact, the store grows with the image (every scan refines every block, so each block's
// non-zero map must live until the last scan). With a budget, the store keeps the IDCT's coefficients only for
// a band of iMCU rows, [keep_start, keep_end): the rows outside keep only their non-zero map (what the entropy
// decoder reads of them), and when the store grows past the budget it drops rows from the end of the band
// (their values freed, their map kept) until it fits again, down to a minimal band. After the last scan the
// rows of the band, less the margin that block smoothing and context upsampling read around an output row
// (SP_COEF_MARGIN_BEFORE/AFTER), decode exactly; the reader (sp_jpeg_decode.c) outputs them, then decodes the file
// again for the next band. With the band skipper (sp_jpeg_band_skip.h, Huffman-coded progressive files) that
// decode reads each scan over the band's rows only, so rows outside the band hold nothing at all.
#ifndef SP_JPEG_COEFFICIENTS_H
#define SP_JPEG_COEFFICIENTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jpeglib.h>

typedef struct sp_coef_array sp_coef_array;
struct sp_band_skip;

/// The store's state, one per decompressor; the decompressor's client_data points at it once installed.
typedef struct {
    // libjpeg's own methods, called for everything the store does not handle.
    jvirt_barray_ptr (*base_request_virt_barray)(j_common_ptr, int, boolean, JDIMENSION, JDIMENSION, JDIMENSION);
    void (*base_realize_virt_arrays)(j_common_ptr);
    JBLOCKARRAY (*base_access_virt_barray)(j_common_ptr, jvirt_barray_ptr, JDIMENSION, JDIMENSION, boolean);
    void (*base_free_pool)(j_common_ptr, int);
    void (*base_self_destruct)(j_common_ptr);
    sp_coef_array *arrays;      // requested since the image pool was last freed, in request order
    int requested;              // how many; the n-th belongs to component n (libjpeg's coefficient controller)
    long max_bytes;             // 0: no limit; past it the decode fails as libjpeg's own arrays would
    size_t bytes;               // allocated now: compacted rows, windows, row tables
    size_t peak_bytes;
    // Bands, in iMCU rows (the same for every component). Without a budget the band is the whole image.
    long budget;                // 0: no band; else drop rows from the band's end while bytes > budget
    JDIMENSION keep_start;      // first iMCU row whose coefficients are kept
    JDIMENSION keep_end;        // one past the last; only shrinks during a decode
    JDIMENSION min_keep_end;    // never shrunk below this (the minimal band)
    int dropped;                // 1 once keep_end shrank
    // Refinement history. `refines` (scan number × 4 components, owned by the reader) collects, as the scans
    // are read, the natural-order AC positions each successive-approximation refinement scan reads of each
    // component. `later` (same shape), once an earlier decode of the file has seen every scan, holds per scan
    // the positions refined by any later scan: all a block must remember of its non-zero map after that scan.
    // NULL while unknown: every map bit is kept.
    uint64_t *refines;
    const uint64_t *later;
    int scan_capacity;          // entries of both, per component
    // With a skipper (sp_jpeg_band_skip.h) a Huffman-coded progressive file's scans are read only over the
    // band's rows: rows dropped from the band are freed whole (no later scan of this decode reads them).
    struct sp_band_skip *skip;
    // 1: rows are expanded and compacted with the SSSE3 block codec (the same bytes, fewer instructions).
    int vector;
} sp_coef_store;

/// iMCU rows around an output iMCU row whose coefficients its pixels depend on: block smoothing reads the
/// DC of two block rows either side (libjpeg-turbo 2.1's decompress_smooth_data, 5×5 neighbourhood), which for a
/// component of v_samp_factor 1 are two iMCU rows, and reads one iMCU row past the rows it asks for; context
/// (fancy) upsampling reads the IDCT output of the iMCU rows above and below. One more each side for safety.
#define SP_COEF_MARGIN_BEFORE 4
#define SP_COEF_MARGIN_AFTER 5

/// Replaces the virtual block arrays of `cinfo` (after jpeg_create_decompress, before jpeg_start_decompress)
/// with the compact store. `max_bytes` bounds the store (0: no bound).
void sp_coef_store_install(j_decompress_ptr cinfo, sp_coef_store *store, long max_bytes);

/// After sp_coef_store_install: keep coefficients only from iMCU row `keep_start`, and while the store is
/// over `budget` bytes drop rows from the band's end, down to [keep_start, min_keep_end).
void sp_coef_store_set_band(sp_coef_store *store, long budget, JDIMENSION keep_start, JDIMENSION keep_end,
                            JDIMENSION min_keep_end);

/// After sp_coef_store_install: whether to use the SSSE3 block codec where the CPU has SSSE3 and POPCNT
/// (`allowed` 0: the plain C codec, which gives the same store and pixels).
void sp_coef_store_set_vector(sp_coef_store *store, int allowed);

/// After sp_coef_store_install: the skipper to attach when libjpeg realizes the arrays (NULL: none).
void sp_coef_store_set_skip(sp_coef_store *store, struct sp_band_skip *skip);

/// After sp_coef_store_install: where to record the refinement scans (`refines`) and, once known, what later
/// scans refine (`later`, NULL while unknown); `scan_capacity` scan numbers each, 4 components a scan.
void sp_coef_store_set_history(sp_coef_store *store, uint64_t *refines, const uint64_t *later, int scan_capacity);

/// `later` from a complete `refines`: per scan, the union of the positions every later scan refines.
void sp_coef_history_from_refines(const uint64_t *refines, uint64_t *later, int scan_capacity);

#endif
