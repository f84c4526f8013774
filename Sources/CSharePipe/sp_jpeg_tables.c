// The quantisation tables the encoder scales by its quality (sp_jpeg_quant_tables), and the scaling itself.
#include "sp_jpeg_private.h"

// ITU-T T.81 (1992) Annex K, tables K.1 and K.2: libjpeg's defaults (jcparam.c), natural order.
static const unsigned int annex_k_luminance[64] = {
    16, 11, 10, 16, 24, 40, 51, 61,       12, 12, 14, 19, 26, 58, 60, 55,
    14, 13, 16, 24, 40, 57, 69, 56,       14, 17, 22, 29, 51, 87, 80, 62,
    18, 22, 37, 56, 68, 109, 103, 77,     24, 35, 55, 64, 81, 104, 113, 92,
    49, 64, 78, 87, 103, 121, 120, 101,   72, 92, 95, 98, 112, 100, 103, 99,
};
static const unsigned int annex_k_chrominance[64] = {
    17, 18, 24, 47, 99, 99, 99, 99,   18, 21, 26, 66, 99, 99, 99, 99,
    24, 26, 56, 99, 99, 99, 99, 99,   47, 66, 99, 99, 99, 99, 99, 99,
    99, 99, 99, 99, 99, 99, 99, 99,   99, 99, 99, 99, 99, 99, 99, 99,
    99, 99, 99, 99, 99, 99, 99, 99,   99, 99, 99, 99, 99, 99, 99, 99,
};

// S. A. Klein, A. D. Silverstein and T. Carney, "Relevance of human vision to JPEG-DCT compression", Proc. SPIE
// 1666, Human Vision, Visual Processing, and Digital Display III (1992): a luminance table from contrast
// thresholds, as MozJPEG offers it (jcparam.c, quant_tbl_master_idx 5), used for both luminance and chrominance.
// Of the tables MozJPEG offers, it needed the fewest bytes at the same SSIMULACRA2 on 23 real photos at 1080
// pixels, 4:2:0: at a score of 80, 0.91× Annex K's (median; 0.82–1.06 per photo), and the same quality number
// scores about the same (bench/README.md, "Picture quality").
static const unsigned int klein_silverstein_carney[64] = {
    10, 12, 14, 19, 26, 38, 57, 86,       12, 18, 21, 28, 35, 41, 54, 76,
    14, 21, 25, 32, 44, 63, 92, 136,      19, 28, 32, 41, 54, 75, 107, 157,
    26, 35, 44, 54, 70, 95, 132, 190,     38, 41, 63, 75, 95, 125, 170, 239,
    57, 54, 92, 107, 132, 170, 227, 312,  86, 76, 136, 157, 190, 239, 312, 419,
};

// jpegli's tables for YCbCr 4:2:0 at its distance 3.0 (google/jpegli, lib/jpegli/quant.cc; as its encoder writes them
// in its DQT segments, natural order): Y, Cb, Cr, each channel its own shape. Scaled as one shape by a quality (see
// jpegli_quality_points below), they needed 0.96× the bytes of Klein–Silverstein–Carney at the same SSIMULACRA2 of
// 80 on 23 real photos (median; bench/results/2026-11-29-jpegli-tables.md); under `--quality auto` 0.85× the bytes
// of Annex K at equal score (bench/results/2026-11-29-jpegli-shape.md).
//
// These table values are taken from jpegli, under this licence:
//
// Copyright (c) the JPEG XL Project Authors.
// All rights reserved.
//
// Redistribution and use in source and binary forms, with or without
// modification, are permitted provided that the following conditions are met:
//
// 1. Redistributions of source code must retain the above copyright notice, this
//    list of conditions and the following disclaimer.
//
// 2. Redistributions in binary form must reproduce the above copyright notice,
//    this list of conditions and the following disclaimer in the documentation
//    and/or other materials provided with the distribution.
//
// 3. Neither the name of the copyright holder nor the names of its
//    contributors may be used to endorse or promote products derived from
//    this software without specific prior written permission.
//
// THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
// AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
// IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE
// DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE LIABLE
// FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL
// DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR
// SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER
// CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY,
// OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
// OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
static const unsigned int jpegli_distance_3[3][64] = {
    {
        8, 8, 15, 15, 21, 22, 24, 25,    8, 11, 15, 16, 22, 20, 26, 26,
        15, 15, 17, 19, 22, 25, 24, 27,  15, 16, 19, 22, 27, 29, 29, 29,
        21, 22, 22, 27, 29, 31, 35, 35,  22, 20, 25, 29, 31, 35, 32, 39,
        24, 26, 24, 29, 35, 32, 35, 34,  25, 26, 27, 29, 35, 39, 34, 28,
    },
    {
        7, 9, 16, 19, 22, 31, 38, 62,      9, 14, 16, 22, 32, 33, 71, 47,
        16, 16, 23, 34, 33, 57, 220, 54,   19, 22, 34, 36, 36, 51, 59, 88,
        22, 32, 33, 36, 38, 32, 34, 125,   31, 33, 57, 51, 32, 64, 95, 31,
        38, 71, 220, 59, 34, 95, 31, 31,   62, 47, 54, 88, 125, 31, 31, 241,
    },
    {
        8, 7, 13, 12, 17, 16, 19, 20,    7, 10, 13, 12, 16, 14, 18, 18,
        13, 13, 14, 13, 15, 16, 17, 19,  12, 12, 13, 13, 17, 16, 18, 20,
        17, 16, 15, 17, 13, 21, 16, 20,  16, 14, 16, 16, 21, 18, 20, 30,
        19, 18, 17, 18, 16, 20, 32, 29,  20, 18, 19, 20, 20, 30, 29, 246,
    },
};

// SharePipe's quality (1...100) → the libjpeg quality, in tenths, at which jpegli's distance-3.0 shape gives about
// the same SSIMULACRA2 as Klein–Silverstein–Carney at that quality, so a quality number keeps its meaning: the
// median over 23 photos (at 1080 pixels, 4:2:0) of the quality each photo needs with the shape for the score it
// gets with KSC (bench/results/2026-11-29-jpegli-shape.md). Linear between the points; strictly increasing, 100 at
// 100.
static const int jpegli_quality_points[][2] = {
    {1, 43}, {10, 80}, {15, 100}, {20, 148}, {30, 210}, {40, 263}, {50, 326},
    {70, 474}, {80, 656}, {90, 793}, {95, 880}, {98, 940}, {100, 1000},
};

/// The libjpeg quality, in tenths (43...1000), jpegli's shape is scaled by for SharePipe's `quality` (1...100).
static int jpegli_quality_tenths(int quality) {
    int count = (int)(sizeof jpegli_quality_points / sizeof jpegli_quality_points[0]);
    for (int i = 1; i < count; i++) {
        int q0 = jpegli_quality_points[i - 1][0], q1 = jpegli_quality_points[i][0];
        if (quality > q1) continue;
        int t0 = jpegli_quality_points[i - 1][1], t1 = jpegli_quality_points[i][1];
        return t0 + ((t1 - t0) * (quality - q0) * 2 + (q1 - q0)) / ((q1 - q0) * 2);   // rounded to the nearest
    }
    return 1000;
}

// libjpeg's jpeg_quality_scaling at a quality in tenths, in hundredths of a percent: 200 − 2q above 50, 5000/q
// below (at whole qualities exactly libjpeg's percent × 100).
static long scale_hundredths(int tenths) {
    return tenths >= 500 ? 20000L - 20L * tenths : (5000000L + tenths / 2) / tenths;
}

static const unsigned int *base_table(sp_jpeg_quant_tables tables, int component) {
    if (tables == SP_JPEG_TABLES_JPEGLI_DISTANCE_3) return jpegli_distance_3[component > 2 ? 2 : component];
    if (tables == SP_JPEG_TABLES_KLEIN_SILVERSTEIN_CARNEY) return klein_silverstein_carney;
    return component ? annex_k_chrominance : annex_k_luminance;
}

// libjpeg's jpeg_quality_scaling and jpeg_add_quant_table with force_baseline: the table at q50, 200 − 2q
// percent above, 5000/q percent below, each value rounded and clamped to 1...255; jpegli's shape at the libjpeg
// quality its map gives.
void sp_jpeg_quant_table(sp_jpeg_quant_tables tables, int component, int quality, unsigned int out[64]) {
    if (quality < 1) quality = 1;
    if (quality > 100) quality = 100;
    if (component < 0) component = 0;
    long scale = tables == SP_JPEG_TABLES_JPEGLI_DISTANCE_3
        ? scale_hundredths(jpegli_quality_tenths(quality))
        : 100L * (quality < 50 ? 5000 / quality : 200 - quality * 2);
    const unsigned int *base = base_table(tables, component);
    for (int i = 0; i < 64; i++) {
        long value = ((long)base[i] * scale + 5000) / 10000;
        out[i] = (unsigned int)(value < 1 ? 1 : value > 255 ? 255 : value);
    }
}

void sp_jpeg_set_tables(j_compress_ptr cinfo, sp_jpeg_quant_tables tables, int quality) {
    if (tables == SP_JPEG_TABLES_JPEGLI_DISTANCE_3) {
        // Each component its own table: Y in slot 0, Cb in 1, Cr in 2 (libjpeg's defaults put Cr on slot 1).
        unsigned int table[64];
        int components = cinfo->num_components < 3 ? cinfo->num_components : 3;
        for (int c = 0; c < components; c++) {
            sp_jpeg_quant_table(tables, c, quality, table);
            jpeg_add_quant_table(cinfo, c, table, 100, TRUE);   // already scaled: 100 % keeps each value
            cinfo->comp_info[c].quant_tbl_no = c;
        }
        return;
    }
    if (tables != SP_JPEG_TABLES_KLEIN_SILVERSTEIN_CARNEY) {
        jpeg_set_quality(cinfo, quality, TRUE);   // Annex K, as libjpeg always wrote it
        return;
    }
    int scale = jpeg_quality_scaling(quality);
    jpeg_add_quant_table(cinfo, 0, base_table(tables, 0), scale, TRUE);
    jpeg_add_quant_table(cinfo, 1, base_table(tables, 1), scale, TRUE);
}
