#!/usr/bin/env bash
# End-to-end loopback throughput of `portcv stream serve` -> `portcv stream view` (docs/stream.md):
# two processes, synthetic source, no pacing, no video writing; one line per backend x size x encoding.
#   python -m tools.measure stream-e2e [BACKENDS] [FRAMES]      e.g. python -m tools.measure stream-e2e numpy,cupy 300
set -uo pipefail
backends=${1:-numpy}
frames=${2:-300}
port=9300
for backend in ${backends//,/ }; do
  for size in 640x480 1920x1080; do
    for enc in raw compact; do
      port=$((port + 1))
      python3 -m portcv stream serve --fps 0 --backend "$backend" --frames "$frames" --size "$size" --encoding "$enc" \
        --quiet --port "$port" > /tmp/stream_serve.txt 2>&1 &
      server=$!
      for _ in $(seq 50); do grep -q listening /tmp/stream_serve.txt 2>/dev/null && break; sleep 0.2; done
      view=$(timeout 120 python3 -m portcv stream view --port "$port" --quiet 2>&1 | head -1)
      wait "$server"
      echo "$backend $size $enc | $(tail -1 /tmp/stream_serve.txt) | $view"
    done
  done
done
