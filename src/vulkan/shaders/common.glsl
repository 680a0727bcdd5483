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
