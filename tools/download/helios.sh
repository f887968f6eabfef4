#!/usr/bin/env bash
# Fetch the SenseTime Helios per-job logs (cluster_log.csv per cluster) read by `source = "helios"`.
# Source: S-Lab-System-Group/HeliosData, data.zip (CC-BY-4.0; cite Hu et al., SC'21).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
dest="$here/data/traces/helios"
mkdir -p "$dest"
curl -fL --retry 3 -o "$dest/data.zip" "https://github.com/S-Lab-System-Group/HeliosData/raw/main/data.zip"
(cd "$dest" && unzip -o -q data.zip && rm -f data.zip)
# the archive may hold a top-level data/ folder: keep <Cluster>/cluster_log.csv directly under $dest
if [ -d "$dest/data" ]; then cp -r "$dest/data/." "$dest/" && rm -rf "$dest/data"; fi
echo "wrote $dest/<Cluster>/cluster_log.csv"
