#!/usr/bin/env bash
# Builds what scripts/gpu_check.sh needs on a lent GPU machine, which has no Debian packages of jf's: a
# portable jf (-DJF_NATIVE=OFF), forward_cost and the Vulkan test binaries, the shared libraries they load that a
# bare machine lacks (the Vulkan loader included), the default code model and stories260K, and llama.cpp's
# prebuilt Vulkan build (node-llama-cpp's, xz-compressed) with bench/llamacpp/llamacpp_bench built against it,
# the baseline of the GPU benchmarks. Writes gpu-bundle/
# (git-ignored; carry it to the device: `carry: ["gpu-bundle"]`) and checks it fits the 64 MiB a call carries.
# BUILD=DIR takes the binaries of an existing build instead (e.g. BUILD=build to check the bundling here; a
# native build may not run on the device's CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
out=gpu-bundle
build="${BUILD:-build-portable}"
if [ -z "${BUILD:-}" ]; then
  cmake -S . -B build-portable -DCMAKE_BUILD_TYPE=Release -DJF_NATIVE=OFF -DJF_BUILD_BENCH=ON > /dev/null
  cmake --build build-portable -j "${JF_JOBS:-2}" --target jf forward_cost test_vulkan_kernels test_vulkan_ops \
    test_vulkan_forward test_vulkan_tree test_vulkan_attention test_vulkan_tiles test_vulkan_decoders
fi
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/models/stories260K" "$out/data"
for b in jf forward_cost test_vulkan_kernels test_vulkan_ops test_vulkan_forward test_vulkan_tree test_vulkan_attention test_vulkan_tiles test_vulkan_decoders; do cp "$build/bin/$b" "$out/bin/"; done
strip "$out"/bin/*
# Every library the binaries link beyond the C/C++ runtime a bare Debian-like machine has, and the loader.
for b in "$out"/bin/*; do ldd "$b"; done | awk '/=> \//{print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libgcc_s.so*|libstdc++.so*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
cp -L "$(ldconfig -p | awk '/libvulkan.so.1 /{print $NF; exit}')" "$out/lib/libvulkan.so.1"
cp models/pycode-ar-q8_0.gguf "$out/models/"
[ -e models/pycode-ar-q8_0.draft.gguf ] && cp models/pycode-ar-q8_0.draft.gguf "$out/models/"
cp models/emoji16-q8_0.gguf bench/prompts/emoji_heldout.txt "$out/models/"
shared=../shared
cp "$shared/models/stories260K/stories260K.gguf" "$out/models/stories260K/"
cp "$shared/models/tokenizers/ggml-vocab-llama-spm.gguf" "$out/models/"
mkdir -p "$out/data/tinystories"
head -c 200000 "$shared/data/tinystories/TinyStories-valid_sample_Ahmedessaa.txt" > "$out/data/tinystories/TinyStories-valid_sample_Ahmedessaa.txt"
# llama.cpp: node-llama-cpp's Vulkan build (its CPU backend too, for the CPU comparison) and the llama.h of the
# llama.cpp release it was built from (in the package's git bundle), for a driver with no bindings in between.
eval "$(VULKAN=1 scripts/install-llamacpp.sh)"
llama_libs="$(dirname "$JF_LIBLLAMA_VULKAN")"
src="$(mktemp -d)"
git clone -q "$JF_LLAMACPP_MODULES/node-llama-cpp/llama/gitRelease.bundle" "$src/llama.cpp" 2>/dev/null
g++ -O2 -std=c++17 -I"$src/llama.cpp/include" -I"$src/llama.cpp/ggml/include" bench/llamacpp/llamacpp_bench.cpp \
  -o "$out/bin/llamacpp_bench" -L"$llama_libs" -l:"$(basename "$JF_LIBLLAMA_VULKAN")" -l:"$(cd "$llama_libs" && ls libggml.*.so)" \
  -l:libggml-base.so -Wl,-rpath,'$ORIGIN/../llama'
rm -rf "$src"
(cd "$llama_libs" && tar -cJf - ./*.so) > "$out/llama-vulkan.tar.xz"
# The GL/Vulkan dispatch libraries NVIDIA's Vulkan driver loads, for a device image without them (unpacked
# there by gpu_check.sh only when its loader finds no libvulkan).
mkdir -p "$out/debs"
(cd "$out/debs" && apt-get download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >/dev/null 2>&1) ||
  echo "gpu-bundle: could not download the GL dispatch packages; the device must have its own" >&2
# xz keeps the carried tree small (the repository travels with it, 64 MiB in all); gpu_check.sh unpacks it.
tar -C "$out" -cf - bin lib models data debs | xz -T"${JF_JOBS:-2}" -6 > "$out/jf.tar.xz"
rm -rf "$out"/bin "$out"/lib "$out"/models "$out"/data "$out"/debs
size=$(du -sb "$out" | cut -f1)
echo "gpu-bundle: $((size / 1048576)) MiB in $out"
[ "$size" -lt $((40 * 1048576)) ] || { echo "gpu-bundle: over 40 MiB, too large to carry beside the repository" >&2; exit 1; }
