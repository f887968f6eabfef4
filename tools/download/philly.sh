#!/usr/bin/env bash
# Fetch the real Philly per-job table used by scenarios/philly_hetero_trace.toml.
# Source: the Pollux (OSDI'21) artifact's extraction of the Microsoft Philly trace
# (petuum/adaptdl, branch osdi21-artifact, simulator/traces/philly.csv; data CC-BY-4.0).
# The raw trace (msr-fiddle/philly-traces, trace-data.tar.gz, ~1 GB via Git LFS) is read
# by `source = "philly"` with `format = "raw"`.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
dest="$here/data/traces/philly"
mkdir -p "$dest"
url="https://raw.githubusercontent.com/petuum/adaptdl/osdi21-artifact/simulator/traces/philly.csv"
curl -fL --retry 3 -o "$dest/pollux_philly.csv" "$url"
echo "wrote $dest/pollux_philly.csv"
