// matmul-avxvnni-selftest: matmul-selftest over a copy of the quant module compiled with
// FOLIO_AVX_VNNI_VIA_AVX512 (quant/kernels.h; native/CMakeLists.txt builds the copy into this program), so
// that the AVX2 table's AVX-VNNI variant ("AVX2+ext") runs against the scalar reference on a CPU that has
// AVX512-VNNI but not AVX-VNNI. Elsewhere it checks what matmul-selftest checks.
#include "matmul-selftest.cc"
