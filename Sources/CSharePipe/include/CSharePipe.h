#ifndef CSHAREPIPE_H
#define CSHAREPIPE_H
#include "sp_common.h"
#include "sp_jpeg.h"
#include "sp_jpeg_transform.h"
#include "sp_png.h"
#include "sp_gif.h"
#include "sp_heif.h"
#include "sp_avif.h"
#include "sp_hevc.h"
#include "sp_webp.h"
#include "sp_h264.h"
#include "sp_color.h"
#include "sp_resample.h"
#include "sp_sandbox.h"
#include "sp_ssimulacra2.h"
#endif
