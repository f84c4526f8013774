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

static const unsigned int *base_table(sp_jpeg_quant_tables tables, int chroma) {
    if (tables == SP_JPEG_TABLES_KLEIN_SILVERSTEIN_CARNEY) return klein_silverstein_carney;
    return chroma ? annex_k_chrominance : annex_k_luminance;
}

// libjpeg's jpeg_quality_scaling and jpeg_add_quant_table with force_baseline: the table at q50, 200 − 2q
// percent above, 5000/q percent below, each value rounded and clamped to 1...255.
void sp_jpeg_quant_table(sp_jpeg_quant_tables tables, int chroma, int quality, unsigned int out[64]) {
    if (quality < 1) quality = 1;
    if (quality > 100) quality = 100;
    long scale = quality < 50 ? 5000 / quality : 200 - quality * 2;
    const unsigned int *base = base_table(tables, chroma);
    for (int i = 0; i < 64; i++) {
        long value = ((long)base[i] * scale + 50) / 100;
        out[i] = (unsigned int)(value < 1 ? 1 : value > 255 ? 255 : value);
    }
}

void sp_jpeg_set_tables(j_compress_ptr cinfo, sp_jpeg_quant_tables tables, int quality) {
    if (tables != SP_JPEG_TABLES_KLEIN_SILVERSTEIN_CARNEY) {
        jpeg_set_quality(cinfo, quality, TRUE);   // Annex K, as libjpeg always wrote it
        return;
    }
    int scale = jpeg_quality_scaling(quality);
    jpeg_add_quant_table(cinfo, 0, base_table(tables, 0), scale, TRUE);
    jpeg_add_quant_table(cinfo, 1, base_table(tables, 1), scale, TRUE);
}
