#!/usr/bin/env bash
# tests/report/html.sh QMMCHECK FAKE_PLUGIN STRIPE_CASE — the HTML report as a browser shows
# it: a case whose wrong elements are one column of y (tests/report/stripe_case.c, judged
# against the fake backend's zeros), once more under a hostile name, rendered by headless
# Chromium (Debian's chromium-headless-shell or chromium, scripts/deps.sh); the screenshot
# must show each picture's wrong column, and only it, in the mismatch colour, and the hostile
# name must stay text. Exit 77 (ctest: skipped) when no Chromium is installed.
set -uo pipefail
qmmcheck=$1 fake=$2 stripe_case=$3
browser=""
for b in chromium-headless-shell chromium chromium-browser; do
  if command -v "$b" >/dev/null; then browser=$b; break; fi
done
[ -n "$browser" ] || { echo "report_html: no chromium (scripts/deps.sh installs chromium-headless-shell): skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "report_html: FAIL: $*"; exit 1; }

hostile='<img src=x onerror=alert(1)><b style=background:red>'
mkdir -p "$tmp/vec"
"$stripe_case" "$tmp/vec/stripe" || fail "stripe_case"
cp -r "$tmp/vec/stripe" "$tmp/vec/$hostile"
"$qmmcheck" run -q --backend "$fake:mode=zeros" --vectors "$tmp/vec" \
    --report "html:$tmp/r.html" >"$tmp/out" 2>&1
rc=$?
[ "$rc" = 1 ] || fail "run exited $rc, not 1: $(cat "$tmp/out")"
html=$tmp/r.html
[ -s "$html" ] || fail "no HTML report"
# one self-contained file: nothing fetched, no script; the hostile name only as text
if grep -iE '<script|<img|<link|<iframe|<b style' "$html" >/dev/null; then
  fail "markup from a case name or a fetch in the report: $(grep -ioE '<script|<img[^>]*|<link|<iframe|<b style' "$html" | head -3)"
fi
grep -q '&lt;img src=x onerror=alert(1)&gt;&lt;b style=background:red&gt;' "$html" ||
  fail "the hostile name is not shown escaped"
grep -q "Content-Security-Policy\" content=\"default-src 'none'" "$html" || fail "no CSP"

"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --user-data-dir="$tmp/profile" --force-device-scale-factor=1 --window-size=700,1400 \
    --screenshot="$tmp/shot.png" "file://$html" >"$tmp/browser.log" 2>&1
[ -s "$tmp/shot.png" ] || fail "$browser wrote no screenshot: $(tail -5 "$tmp/browser.log")"

# The PNG read with the standard library only (zlib): each picture is a 6 x 4 grid of
# 24-pixel cells (harness/report/html.c), so the wrong column is runs of exactly 24 pixels of
# the mismatch colour #cc0000, 96 rows high per picture, with the accepted colour #d9efd9 on
# both sides, and there are two pictures.
python3 - "$tmp/shot.png" <<'PY' || fail "the screenshot does not show the wrong column"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
        bpp = 3 if ctype == 2 else 4
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
LOW, HIGH = int.from_bytes(b"\x7f" * stride, "big"), int.from_bytes(b"\x80" * stride, "big")
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    if f == 2:  # Up, the usual one: every byte plus the one above, mod 256, as big integers
        a, b = int.from_bytes(line, "big"), int.from_bytes(prev, "big")
        line = bytearray((((a & LOW) + (b & LOW)) ^ ((a ^ b) & HIGH)).to_bytes(stride, "big"))
    elif f != 0:
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line)
    prev = line
RED, OK = (0xcc, 0, 0), (0xd9, 0xef, 0xd9)
px = lambda line, x: tuple(line[x * bpp:x * bpp + 3])
red_rows = 0
for y, line in enumerate(rows):
    x = 0
    runs = []
    while x < w:
        if px(line, x) == RED:
            x0 = x
            while x < w and px(line, x) == RED:
                x += 1
            runs.append((x0, x))
        x += 1
    if not runs:
        continue
    red_rows += 1
    for x0, x1 in runs:
        assert x1 - x0 == 24, f"row {y}: a red run of {x1 - x0} pixels at x={x0}, not one cell"
        assert px(line, x0 - 1) == OK and px(line, x1) == OK, f"row {y}: no accepted cell beside the red one at x={x0}"
        assert px(line, x0 - 48) == OK, f"row {y}: column 0 is not accepted"
assert red_rows == 2 * 96, f"{red_rows} rows hold red pixels, not two pictures of 4 rows of 24"
print("report_html: two pictures, each one red column of 4 cells, the rest accepted")
PY
echo "report_html: ok ($browser)"
