#!/usr/bin/env bash
# Builds what scripts/gpu_check.sh needs on a lent GPU machine, which has no Debian packages of jf's: a
# portable jf (-DJF_NATIVE=OFF) and the Vulkan test binaries, the shared libraries they load that a bare
# machine lacks (the Vulkan loader included), the default code model and stories260K. Writes gpu-bundle/
# (git-ignored; carry it to the device: `carry: ["gpu-bundle"]`) and checks it fits the 64 MiB a call carries.
# BUILD=DIR takes the binaries of an existing build instead (e.g. BUILD=build to check the bundling here; a
# native build may not run on the device's CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
out=gpu-bundle
build="${BUILD:-build-portable}"
if [ -z "${BUILD:-}" ]; then
  cmake -S . -B build-portable -DCMAKE_BUILD_TYPE=Release -DJF_NATIVE=OFF -DJF_BUILD_BENCH=OFF > /dev/null
  cmake --build build-portable -j "${JF_JOBS:-2}" --target jf test_vulkan_kernels test_vulkan_ops test_vulkan_forward test_vulkan_decoders
fi
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/models/stories260K" "$out/data"
for b in jf test_vulkan_kernels test_vulkan_ops test_vulkan_forward test_vulkan_decoders; do cp "$build/bin/$b" "$out/bin/"; done
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
shared=../shared
cp "$shared/models/stories260K/stories260K.gguf" "$out/models/stories260K/"
cp "$shared/models/tokenizers/ggml-vocab-llama-spm.gguf" "$out/models/"
mkdir -p "$out/data/tinystories"
head -c 200000 "$shared/data/tinystories/TinyStories-valid_sample_Ahmedessaa.txt" > "$out/data/tinystories/TinyStories-valid_sample_Ahmedessaa.txt"
size=$(du -sb "$out" | cut -f1)
echo "gpu-bundle: $((size / 1048576)) MiB in $out"
[ "$size" -lt $((60 * 1048576)) ] || { echo "gpu-bundle: over 60 MiB, too large to carry" >&2; exit 1; }
