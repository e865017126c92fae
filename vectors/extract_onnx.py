#!/usr/bin/env python3
"""Extracts the ONNX backend node tests of QLinearMatMul, MatMulInteger and DequantizeLinear (and
QOrderedMatMul, should onnx ever carry one) from the installed onnx package into
vectors/onnx/onnx-<version>/.

    pip install onnx==1.23.2        # the pinned version (vectors/check_extraction.sh does this)
    python3 vectors/extract_onnx.py [--out DIR] [--manifest-only FOLDER --source TEXT]

Where the package ships stored test data (onnx/backend/test/data/node/test_qlinearmatmul*,
test_matmulinteger*, test_dequantizelinear*, up to onnx 1.22), those files are copied byte for byte. From onnx 1.23 on
the wheel has none; the tests are regenerated from onnx.backend.test.case.node exactly as
onnx's own `backend-test-tools generate-data` writes them (model.SerializeToString(),
numpy_helper.from_array(value, graph input/output name)). Every case directory gets a qmm.meta
like the older extractions, and the folder a MANIFEST.json: onnx version, how the files were
obtained, and the sha256 of every file. The output is deterministic: running it again with the
same onnx gives the same bytes, which is what check_extraction.sh verifies.

--manifest-only writes MANIFEST.json for an existing folder (used for the 1.12.0, 1.21.0 and
1.22.0 copies, which came from the onnx repository at those tags).
"""
import argparse
import hashlib
import json
import os
import shutil
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import qmm_requires  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = ("QLinearMatMul", "MatMulInteger", "QOrderedMatMul", "DequantizeLinear")
PREFIXES = ("test_qlinearmatmul", "test_matmulinteger", "test_qorderedmatmul",
            "test_dequantizelinear")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def write_manifest(folder, version, source):
    files = {}
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        for n in sorted(names):
            p = os.path.join(root, n)
            rel = os.path.relpath(p, folder)
            if rel == "MANIFEST.json":
                continue
            files[rel] = sha256(p)
    manifest = {
        "onnx_version": version,
        "source": source,
        "operators": [op for op, pre in zip(OPS, PREFIXES)
                      if any(rel.startswith(pre + "_") or rel.startswith(pre + "/")
                             for rel in files)],
        "files": dict(sorted(files.items())),
    }
    with open(os.path.join(folder, "MANIFEST.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=False)
        f.write("\n")
    return manifest


def tags_for(name):
    tags = ["onnx-node-test"]
    if "int8" in name and "uint8" not in name:
        tags.append("int8")
    elif "uint8" in name:
        tags.append("uint8")
    if "float16" in name:
        tags.append("float16-scales")
    if name.startswith("test_dequantizelinear"):
        tags.append("dequantizelinear")
        # the packed sub-byte x types (include/qmm/tensor.h qmm_dtype_bytes)
        tags += [t for t in ("int4", "uint4", "int2", "uint2", "float4e2m1")
                 if t in name.split("_")]
    return ", ".join(tags)


def write_meta(case_dir, name, version, where):
    with open(os.path.join(case_dir, "qmm.meta"), "w") as f:
        f.write(f"tags = {tags_for(name)}\n")
        f.write(f"provenance = onnx {version}, {where}\n")
        f.write(f"onnx_version = {version}\n")


def stored_cases(onnx_dir):
    data = os.path.join(onnx_dir, "backend", "test", "data", "node")
    if not os.path.isdir(data):
        return []
    return sorted(d for d in os.listdir(data) if d.startswith(PREFIXES))


def copy_stored(onnx_dir, out, version):
    data = os.path.join(onnx_dir, "backend", "test", "data", "node")
    names = stored_cases(onnx_dir)
    for name in names:
        dst = os.path.join(out, name)
        shutil.copytree(os.path.join(data, name), dst)
        write_meta(dst, name, version, f"onnx/backend/test/data/node/{name}")
    return names


def regenerate(out, version):
    from onnx import TensorProto, numpy_helper
    from onnx.backend.test.case import node as node_cases

    # collect_testcases imports every operator's module once and accumulates; one call with
    # no filter, then pick ours by the node's op_type (numpy warnings of other ops muted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node_cases.collect_testcases(None)
    names = []
    for case in sorted(cases, key=lambda c: c.name):
        op = case.model.graph.node[0].op_type if case.model else ""
        if case.kind != "node" or op not in OPS or case.name in names:
            continue
        d = os.path.join(out, case.name)
        os.makedirs(d)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, f"test_data_set_{i}")
            os.makedirs(ds)
            for kind, values, infos in (("input", inputs, case.model.graph.input),
                                        ("output", outputs, case.model.graph.output)):
                for j, v in enumerate(values):
                    t = v if isinstance(v, TensorProto) else numpy_helper.from_array(v, infos[j].name)
                    with open(os.path.join(ds, f"{kind}_{j}.pb"), "wb") as f:
                        f.write(t.SerializeToString())
        write_meta(d, case.name, version,
                   f"regenerated from onnx.backend.test.case.node ({op}), {case.name}")
        names.append(case.name)
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="output folder (default vectors/onnx/onnx-<version>)")
    ap.add_argument("--manifest-only", metavar="FOLDER")
    ap.add_argument("--version", help="with --manifest-only: the onnx version of FOLDER")
    ap.add_argument("--source", help="with --manifest-only: where FOLDER's files came from")
    args = ap.parse_args()

    if args.manifest_only:
        if not (args.version and args.source):
            ap.error("--manifest-only needs --version and --source")
        m = write_manifest(args.manifest_only, args.version, args.source)
        print(f"{args.manifest_only}/MANIFEST.json: {len(m['files'])} files")
        return 0

    # --manifest-only needs only the standard library; an extraction needs onnx
    qmm_requires.modules("numpy", "onnx")
    import onnx

    version = onnx.__version__
    out = args.out or os.path.join(HERE, "onnx", f"onnx-{version}")
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    onnx_dir = os.path.dirname(onnx.__file__)
    names = copy_stored(onnx_dir, out, version)
    if names:
        source = (f"onnx {version} wheel from PyPI: stored test data copied unchanged from "
                  "onnx/backend/test/data/node/")
    else:
        names = regenerate(out, version)
        source = (f"onnx {version} wheel from PyPI (it ships no stored node-test data): "
                  "regenerated from onnx.backend.test.case.node as backend-test-tools "
                  "generate-data writes it")
    if not names:
        print(f"onnx {version}: no QLinearMatMul/MatMulInteger/DequantizeLinear node tests found", file=sys.stderr)
        return 1
    m = write_manifest(out, version, source)
    print(f"{out}: {len(names)} cases, {len(m['files'])} files ({source})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
