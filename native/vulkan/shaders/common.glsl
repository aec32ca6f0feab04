// Shared by every kernel: the table's pointers arrive as buffer device addresses in push constants.
// Arrays are indexed with 32-bit ints (GLSL allows no wider index); a row of a large matrix is reached by
// adding its 64-bit byte offset to the base address first (at()).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference2 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Ints { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer Int64s { int64_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer Halves { uint16_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 1) buffer Bytes { uint8_t v[]; };

// The 1-D kernels run 256 invocations a group (pipelines.cc, dispatch_1d) over a grid of (x, y) groups
// (x ≤ 65535): element index. (Not gl_WorkGroupSize: this file is included before the kernel declares it.)
int flat_index() {
  return int((gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u + gl_LocalInvocationID.x);
}
// Likewise the group index of a kernel that runs one group per row.
int flat_group() { return int(gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x); }

float half_to_float(uint h) { return unpackHalf2x16(h).x; }
