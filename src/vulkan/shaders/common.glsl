// Shared by every jf compute shader: extensions, the fixed workgroup width and a fixed-order reduction.
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

// Every reduction runs over WG threads in the same tree, whatever the device's subgroup size or the number
// of rows in the forward: a row's result is the same bits alone or in any batch (batch invariance).
#define WG 64
