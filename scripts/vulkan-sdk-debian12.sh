#!/bin/sh
# Lays out a minimal "Vulkan SDK" for building ggml's Vulkan backend on Debian 12, from Debian 13 (trixie) packages,
# without installing them into the system: glslc 2025.2 (run with trixie's own glibc/libstdc++ through its loader),
# Vulkan headers 1.4.309 and SPIRV-Headers. Debian 12's glslc 2023.2 lacks GL_KHR_cooperative_matrix, which ggml's
# flash_attn_decode_phase_{1,2}.comp need unconditionally, and its Vulkan headers 1.3.239 lack
# VkPhysicalDeviceCooperativeMatrixFeaturesKHR, which ggml-vulkan.cpp needs once glslc has cooperative matrices.
# The system's libvulkan (loader) is still the one linked. See docs/native.md, "Vulkan on lavapipe".
#
# Usage (root, apt reachable): sh scripts/vulkan-sdk-debian12.sh [PREFIX]   (default /opt/vulkan-sdk-deb13)
# then:  VULKAN_SDK=PREFIX LLAMAD_BACKEND=vulkan npm install   (with a fresh build/vulkan)
set -eu
PREFIX=${1:-/opt/vulkan-sdk-deb13}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/lists/partial" "$WORK/cache/archives/partial" "$WORK/debs" "$WORK/x"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
  >"$WORK/sources.list"
# A private apt state: the system's sources and package lists are left as they are.
APT="-o Dir::Etc::SourceList=$WORK/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$WORK/lists
  -o Dir::Cache=$WORK/cache -o APT::Sandbox::User=root"
# shellcheck disable=SC2086
apt-get $APT -qq update
cd "$WORK/debs"
# shellcheck disable=SC2086
apt-get $APT -qq download glslc/trixie libshaderc1/trixie libc6/trixie libstdc++6/trixie libgcc-s1/trixie \
  libvulkan-dev/trixie spirv-headers/trixie
for d in *.deb; do dpkg-deb -x "$d" "$WORK/x"; done
rm -rf "$PREFIX"
mkdir -p "$PREFIX/bin" "$PREFIX/libexec" "$PREFIX/share"
cp -a "$WORK/x/usr/include" "$PREFIX/"
cp -a "$WORK/x/usr/share/cmake" "$PREFIX/share/"
cp -a "$WORK/x/usr/bin/glslc" "$PREFIX/libexec/"
cp -a "$WORK/x/usr/lib/x86_64-linux-gnu" "$PREFIX/libexec/lib"
cat >"$PREFIX/bin/glslc" <<EOF
#!/bin/sh
exec "$PREFIX/libexec/lib/ld-linux-x86-64.so.2" --library-path "$PREFIX/libexec/lib" "$PREFIX/libexec/glslc" "\$@"
EOF
chmod +x "$PREFIX/bin/glslc"
"$PREFIX/bin/glslc" --version | head -3
echo "VULKAN_SDK=$PREFIX"
