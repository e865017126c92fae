"""qmm_build_backend: the build backend of the qmm-exec package (pyproject.toml), standard
library only.

`pip install ./python` (or PREFIX/share/qmm/python) builds the wheel with this file, so an
install needs nothing from a package index but qmm_exec's own requirements (numpy, onnx): it
works offline (`pip install --no-index`) and with build isolation. It implements the PEP 517
hooks pip calls (build_wheel, build_sdist) and PEP 660's build_editable (`pip install -e`).

The package's metadata is pyproject.toml's [project] table (read with tomllib, or tomli
before Python 3.11, which [build-system] requires there); the version is qmm_exec.__version__;
the modules are [tool.qmm-build] modules.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
# every file of a build gets this time, so that two builds of the same sources are the same
EPOCH = (1980, 1, 1, 0, 0, 0)


def _project():
    try:
        import tomllib
    except ImportError:  # Python < 3.11: pyproject.toml's [build-system] requires tomli
        import tomli as tomllib
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
        data = tomllib.load(f)
    project = dict(data["project"])
    with open(os.path.join(HERE, "qmm_exec.py"), encoding="utf-8") as f:
        project["version"] = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)
    project["modules"] = data["tool"]["qmm-build"]["modules"]
    return project


def _dist_name(project):
    return re.sub(r"[-_.]+", "_", project["name"]).lower()


def _metadata(project):
    lines = ["Metadata-Version: 2.1", "Name: " + project["name"],
             "Version: " + project["version"], "Summary: " + project["description"]]
    if "requires-python" in project:
        lines.append("Requires-Python: " + project["requires-python"])
    lines += ["Requires-Dist: " + d for d in project.get("dependencies", [])]
    readme = ""
    if "readme" in project:
        with open(os.path.join(HERE, project["readme"]), encoding="utf-8") as f:
            readme = f.read()
        lines.append("Description-Content-Type: text/markdown")
    return ("\n".join(lines) + "\n\n" + readme).encode("utf-8")


def _record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode("ascii")


def _wheel(wheel_directory, files):
    """Writes the wheel of `files` ([(path in the wheel, bytes)]) with its dist-info."""
    project = _project()
    name = "%s-%s" % (_dist_name(project), project["version"])
    info = name + ".dist-info"
    files = list(files) + [
        (info + "/METADATA", _metadata(project)),
        (info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: qmm_build_backend\n"
                          b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
        (info + "/top_level.txt", "".join(m + "\n" for m in project["modules"]).encode()),
    ]
    record = "".join("%s,%s,%d\n" % (path, _record_hash(data), len(data))
                     for path, data in files) + info + "/RECORD,,\n"
    files.append((info + "/RECORD", record.encode("utf-8")))
    filename = name + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w",
                         zipfile.ZIP_DEFLATED) as whl:
        for path, data in files:
            entry = zipfile.ZipInfo(path, EPOCH)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(entry, data)
    return filename


def _read(path):
    with open(os.path.join(HERE, path), "rb") as f:
        return f.read()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, [(m + ".py", _read(m + ".py")) for m in _project()["modules"]])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # the sources stay where they are: a .pth puts their folder on sys.path
    return _wheel(wheel_directory, [("qmm_exec_editable.pth", (HERE + "\n").encode("utf-8"))])


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    name = "%s-%s" % (_dist_name(project), project["version"])
    paths = ["pyproject.toml", os.path.basename(__file__), project.get("readme", "")]
    paths += [m + ".py" for m in project["modules"]]
    paths += ["examples/" + f for f in sorted(os.listdir(os.path.join(HERE, "examples")))
              if f.endswith(".py")]
    files = [(p, _read(p)) for p in paths if p] + [("PKG-INFO", _metadata(project))]
    filename = name + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz",
                      format=tarfile.PAX_FORMAT) as tar:
        for path, data in files:
            entry = tarfile.TarInfo(name + "/" + path)
            entry.size, entry.mode, entry.mtime = len(data), 0o644, 315532800
            tar.addfile(entry, io.BytesIO(data))
    return filename


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []
