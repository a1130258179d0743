#!/bin/bash
# Runs gpucheck on a machine with an NVIDIA GPU and driver but perhaps no
# Vulkan loader. Lay out a folder as
#   DIR/run.sh  DIR/gpucheck (go build -o DIR/gpucheck ./cmd/gpucheck)
#   DIR/captures/ (a copy of ../shared/golden/h200)
#   DIR/*.deb or DIR/../.gl/*.deb (amd64 libvulkan1 and libglvnd0 at least)
# and run `bash DIR/run.sh [gpucheck flags]`. It unpacks the loader packages
# (libglvnd is what the driver's libGLX_nvidia.so.0, the ICD's library,
# needs to answer vkCreateInstance), picks the NVIDIA ICD file and runs
# gpucheck on the captures.
set -u
here=$(cd "$(dirname "$0")" && pwd)
for f in "$here"/*.deb "$here"/../.gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -z "${VK_ICD_FILENAMES:-}" ]; then
  for j in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json; do
    if [ -f "$j" ]; then export VK_DRIVER_FILES=$j; break; fi
  done
fi
echo "run.sh: VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset}" >&2
exec "$here/gpucheck" -captures "$here/captures" "$@"
