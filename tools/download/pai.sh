#!/usr/bin/env bash
# Fetch the Alibaba PAI 2020 GPU trace tables used by scenarios/pai_hetero_trace.toml.
# Source: alibaba/clusterdata, cluster-trace-gpu-v2020 (CC-BY-4.0; cite Weng et al., NSDI'22).
# The archives are published on Alibaba's OSS; the trace README lists these names.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
dest="$here/data/traces/pai"
mkdir -p "$dest"
base="https://aliopentrace.oss-cn-beijing.aliyuncs.com/v2020GPUTraces"
for table in pai_job_table pai_task_table pai_machine_spec; do
  curl -fL --retry 3 -o "$dest/$table.tar.gz" "$base/$table.tar.gz"
  tar -xzf "$dest/$table.tar.gz" -C "$dest"
  rm -f "$dest/$table.tar.gz"
done
echo "wrote $dest/pai_job_table.csv, pai_task_table.csv, pai_machine_spec.csv"
