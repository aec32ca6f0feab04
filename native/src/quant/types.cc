#include "quant/types.h"

namespace folio {

// Block sizes and byte sizes from ggml's block structs (ggml-common.h).
static const TypeInfo kTypes[] = {
    /* 0 */ {"F32", 1, 4},
    /* 1 */ {"F16", 1, 2},
    /* 2 */ {"Q4_0", 32, 18},
    /* 3 */ {"Q4_1", 32, 20},
    /* 4 */ {nullptr, 0, 0},  // Q4_2, removed from ggml
    /* 5 */ {nullptr, 0, 0},  // Q4_3, removed from ggml
    /* 6 */ {"Q5_0", 32, 22},
    /* 7 */ {"Q5_1", 32, 24},
    /* 8 */ {"Q8_0", 32, 34},
    /* 9 */ {"Q8_1", 32, 36},
    /* 10 */ {"Q2_K", 256, 84},
    /* 11 */ {"Q3_K", 256, 110},
    /* 12 */ {"Q4_K", 256, 144},
    /* 13 */ {"Q5_K", 256, 176},
    /* 14 */ {"Q6_K", 256, 210},
    /* 15 */ {"Q8_K", 256, 292},
    /* 16 */ {"IQ2_XXS", 256, 66},
    /* 17 */ {"IQ2_XS", 256, 74},
    /* 18 */ {"IQ3_XXS", 256, 98},
    /* 19 */ {"IQ1_S", 256, 50},
    /* 20 */ {"IQ4_NL", 32, 18},
    /* 21 */ {"IQ3_S", 256, 110},
    /* 22 */ {"IQ2_S", 256, 82},
    /* 23 */ {"IQ4_XS", 256, 136},
    /* 24 */ {"I8", 1, 1},
    /* 25 */ {"I16", 1, 2},
    /* 26 */ {"I32", 1, 4},
    /* 27 */ {"I64", 1, 8},
    /* 28 */ {"F64", 1, 8},
    /* 29 */ {"IQ1_M", 256, 56},
    /* 30 */ {"BF16", 1, 2},
    /* 31 */ {nullptr, 0, 0},  // Q4_0_4_4, removed
    /* 32 */ {nullptr, 0, 0},  // Q4_0_4_8, removed
    /* 33 */ {nullptr, 0, 0},  // Q4_0_8_8, removed
    /* 34 */ {"TQ1_0", 256, 54},
    /* 35 */ {"TQ2_0", 256, 66},
    /* 36 */ {nullptr, 0, 0},  // IQ4_NL_4_4, removed
    /* 37 */ {nullptr, 0, 0},  // IQ4_NL_4_8, removed
    /* 38 */ {nullptr, 0, 0},  // IQ4_NL_8_8, removed
    /* 39 */ {"MXFP4", 32, 17},
    // Folio's own (blocks.h): 8 rows' Q4_K or Q6_K super-blocks interleaved, the same bytes per row.
    /* 40 */ {"Q4_K_R8", 256, 144, true},
    /* 41 */ {"Q6_K_R8", 256, 210, true},
    // 8 rows' Q8_0 blocks interleaved (blocks.h: BlockQ8_0x8), the same bytes per row.
    /* 42 */ {"Q8_0_R8", 32, 34, true},
    // 8 rows' Q3_K or Q2_K super-blocks interleaved (BlockQ3_Kx8, BlockQ2_Kx8), the same bytes per row.
    /* 43 */ {"Q3_K_R8", 256, 110, true},
    /* 44 */ {"Q2_K_R8", 256, 84, true},
    // 8 rows' IQ4_XS super-blocks interleaved (BlockIQ4_XSx8), the same bytes per row.
    /* 45 */ {"IQ4_XS_R8", 256, 136, true},
};

const TypeInfo* type_info(uint32_t id) {
  if (id >= sizeof(kTypes) / sizeof(kTypes[0]) || kTypes[id].name == nullptr) return nullptr;
  return &kTypes[id];
}

}  // namespace folio
