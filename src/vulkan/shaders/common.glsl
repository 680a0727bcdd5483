// Shared by every jf compute shader: extensions, the fixed workgroup width and a fixed-order reduction.
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
// UNROLL marks loops of a fixed count (NO, R, a piece's words) [[unroll]] in the builds for GPUs
// (UNROLL_LOOPS): their arrays must stay in registers, and a driver that leaves such a loop rolled indexes them
// in memory (llama.cpp's shaders mark theirs the same way). A software device runs the rolled twin
// (kernels.h): LLVM takes ~9x as long to compile the unrolled nests, for SIMD lanes that gain nothing.
#extension GL_EXT_control_flow_attributes : require
#ifdef UNROLL_LOOPS
#define UNROLL [[unroll]]
#else
#define UNROLL
#endif

// Every reduction runs over WG threads in the same tree, whatever the device's subgroup size or the number
// of rows in the forward: a row's result is the same bits alone or in any batch (batch invariance).
#define WG 64

// Small integers as floats by their bits: the float with bits 0x4B000000 | q is 2^23 + q (for 0 <= q < 2^23),
// so less 2^23 it is q exactly, and less 2^23 + bias it is q - bias exactly (a small integer bias). The same
// value as float(q), so the same bits downstream, without a conversion instruction: NVIDIA issues those at an
// eighth of its FMA rate (16 a clock an SM on Hopper), and a decode kernel would convert every weight it reads
// (vec members every weight again for each row), a ceiling of ~2 TB/s on Q4_K before any load.
float small_float(uint q) { return uintBitsToFloat(q | 0x4B000000u) - 8388608.0; }
vec2 small_float(uvec2 q) { return uintBitsToFloat(q | 0x4B000000u) - 8388608.0; }
vec4 small_float(uvec4 q) { return uintBitsToFloat(q | 0x4B000000u) - 8388608.0; }
float small_float_less(uint q, float bias) { return uintBitsToFloat(q | 0x4B000000u) - (8388608.0 + bias); }
vec4 small_float_less(uvec4 q, float bias) { return uintBitsToFloat(q | 0x4B000000u) - (8388608.0 + bias); }
// A signed byte (two's complement in bits 0-7, the rest zero) as a float: flipping its sign bit adds 128.
float signed_byte_float(uint b) { return small_float_less(b ^ 0x80u, 128.0); }
vec4 signed_byte_float(uvec4 b) { return small_float_less(b ^ 0x80u, 128.0); }
