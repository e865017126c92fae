#!/usr/bin/env bash
# tests/fuzz_campaign_jobs.sh — fuzz/campaign respects its job count: the cores it gives the
# targets (--plan: the split, without starting anything) add up to exactly --jobs, one at least
# each, the differential targets no fewer than the parsers; fewer jobs than targets is refused
# (exit 2) instead of starting one fuzzer per target anyway.
set -u
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
bad=0
for jobs in 10 11 12 13 17 20 64; do
    line=$(fuzz/campaign --plan --jobs "$jobs" --dir "$dir" 2>&1)
    shares=$(grep -o '=[0-9]*' <<<"$line" | tr -d =)
    sum=0
    min=999
    for s in $shares; do sum=$((sum + s)); [ "$s" -lt "$min" ] && min=$s; done
    diff_min=$(grep -oE 'fuzz_(qlinearmatmul|matmulinteger|qorderedmatmul|matmulnbits|dequantizelinear|dynamicquantizematmul|matmul_integer_to_float)=[0-9]+' <<<"$line" |
               cut -d= -f2 | sort -n | head -1)
    parse_max=$(grep -oE 'fuzz_(onnx_tensor|onnx_model|meta)=[0-9]+' <<<"$line" |
                cut -d= -f2 | sort -n | tail -1)
    if [ "$sum" -ne "$jobs" ] || [ "$min" -lt 1 ] || [ "${diff_min:-0}" -lt "${parse_max:-0}" ]; then
        echo "FAIL --jobs $jobs: $line (sum $sum)"
        bad=1
    else
        echo "ok   $line"
    fi
done
fuzz/campaign --plan --jobs 2 --dir "$dir" >/dev/null 2>"$dir/err"
rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "fewer than the 10 targets" "$dir/err"; then
    echo "FAIL --jobs 2 (10 targets): exit $rc: $(cat "$dir/err")"
    bad=1
else
    echo "ok   --jobs 2: refused: $(cat "$dir/err")"
fi
exit $bad
