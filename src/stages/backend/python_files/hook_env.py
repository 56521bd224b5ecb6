# Written by crosswheel into each build's own environment (a venv in the identifier's work
# folder, where `before-build` and a build without isolation run) and imported at start-up
# through `_crosswheel_hook_env.pth`. docs/hooks.md describes the rule; in short:
#
# - After every `pip install` into this environment (and once more after the hook, for
#   installers that are not this interpreter's pip, such as uv), each newly installed
#   *library wheel* (a platform wheel, not a build tool, that ships files a compiler or
#   linker reads: lib*.so, .dylib, .a, headers, .pc, .cmake) gets the link-time files of
#   the target's wheel of the same version in place of the build machine's. Its Python code
#   stays the build machine's, so `import scipy_openblas64` still works here and
#   `get_pkg_config()` names the target's library.
# - The build machine's copies of the replaced shared libraries are kept beside the
#   environment (`crosswheel-host-twins/`); a `ctypes.CDLL` of a replaced library loads its
#   twin, since the target's cannot be loaded into this interpreter (scipy-openblas asks
#   its library for its configuration string at import).
import os
import sys

_STATE = os.path.join(sys.prefix, "crosswheel-target")
_INNER = "CROSSWHEEL_HOOK_ENV_INNER"


def _config():
    import json

    with open(os.path.join(_STATE, "config.json"), encoding="utf-8") as handle:
        return json.load(handle)


def _read_json(name, default):
    import json

    try:
        with open(os.path.join(_STATE, name), encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        return default


def _write_json(name, value):
    import json

    path = os.path.join(_STATE, name)
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(value, handle, indent=1, sort_keys=True)
    os.replace(path + ".tmp", path)


def _normalize(name):
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def _site_packages():
    import sysconfig

    return sysconfig.get_paths()["purelib"]


def is_link_time_file(relative, rule):
    """A file a compiler, linker, pkg-config or CMake reads (not a Python extension module)."""
    base = relative.rsplit("/", 1)[-1]
    if any(base.endswith(suffix) for suffix in rule["suffixes"]):
        return True
    return base.startswith(rule["shared_library_prefix"]) and (
        base.endswith(".so") or ".so." in base
    )


def _is_runtime_folder(relative):
    """auditwheel's `<name>.libs/` and delocate's `.dylibs/`: the libraries a package's own
    extension modules load, never the linker's business."""
    return any(part.endswith(".libs") or part == ".dylibs" for part in relative.split("/")[:-1])


def _is_shared_library(relative):
    base = relative.rsplit("/", 1)[-1]
    return base.endswith(".dylib") or base.endswith(".so") or ".so." in base


def _twin_key(relative):
    """`lib/libgfortran-daac5196.so.5.0.0` and `lib/libgfortran-040039e1.so.5.0.0` are twins."""
    import re

    folder, _, base = relative.rpartition("/")
    stem = base.split(".", 1)[0]
    return folder + "/" + re.sub(r"-[0-9a-f]{8}$", "", stem)


def _metadata(dist_info):
    fields = {}
    with open(os.path.join(dist_info, "METADATA"), encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.strip():
                break
            key, _, value = line.partition(":")
            fields.setdefault(key.strip().lower(), value.strip())
    tags = []
    try:
        with open(os.path.join(dist_info, "WHEEL"), encoding="utf-8") as handle:
            tags = [line.split(":", 1)[1].strip() for line in handle if line.startswith("Tag:")]
    except FileNotFoundError:
        pass
    return fields.get("name", ""), fields.get("version", ""), tags


def _record(dist_info):
    import csv

    try:
        with open(os.path.join(dist_info, "RECORD"), encoding="utf-8", newline="") as handle:
            return [row[0] for row in csv.reader(handle) if row]
    except FileNotFoundError:
        return []


class TargetInstallError(Exception):
    pass


def _fetch_target_wheel(name, version, config):
    """The target's wheel of name==version (the newest the target can install when version
    is None) from crosswheel's cache, downloaded first when missing; None when the index
    has none for the target."""
    import glob
    import subprocess
    import tempfile

    cache = config["wheel_cache"]
    os.makedirs(cache, exist_ok=True)
    wanted = _normalize(name).replace("-", "_")
    for path in sorted(glob.glob(os.path.join(cache, "*.whl"))) if version else []:
        file_name = os.path.basename(path).split("-")
        if len(file_name) > 2 and _normalize(file_name[0]).replace("-", "_") == wanted and file_name[1] == version:
            return path
    if config["offline"]:
        raise TargetInstallError(
            f"the {config['target']} wheel of {name} {version} is not in crosswheel's cache and --offline forbids downloading it"
        )
    with tempfile.TemporaryDirectory(dir=cache, prefix=".download-") as staging:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                   "--no-deps", "--only-binary=:all:", "--python-version", config["python_version"],
                   "--implementation", "cp", "--abi", config["abi"], "--abi", "abi3", "--abi", "none"]
        for platform in config["platforms"]:
            command += ["--platform", platform]
        command += ["--dest", staging, f"{name}=={version}" if version else name]
        done = subprocess.run(command, env=dict(os.environ, **{_INNER: "1"}),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if done.returncode != 0:
            if "No matching distribution" in done.stdout or "Could not find a version" in done.stdout:
                return None
            last = done.stdout.strip().splitlines()[-1:] or ["no output"]
            raise TargetInstallError(f"downloading the {config['target']} wheel of {name} {version} failed: {last[0]}")
        for downloaded in os.listdir(staging):
            if downloaded.endswith(".whl"):
                final = os.path.join(cache, downloaded)
                os.replace(os.path.join(staging, downloaded), final)
                return final
    return None


def _swap(site, dist, host_files, wheel, rule):
    """Moves the build machine's link-time files of `dist` aside and writes the target's."""
    import zipfile

    twins_root = os.path.join(sys.prefix, "crosswheel-host-twins")
    moved = {}
    for relative in host_files:
        source = os.path.join(site, relative)
        if os.path.isfile(source):
            twin = os.path.join(twins_root, relative)
            os.makedirs(os.path.dirname(twin), exist_ok=True)
            os.replace(source, twin)
            moved[relative] = twin
    written = []
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            parts = info.filename.split("/")
            if info.is_dir() or ".." in parts or info.filename.startswith("/"):
                continue
            if parts[0].endswith(".dist-info"):
                continue
            if parts[0].endswith(".data"):
                if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
                    continue
                parts = parts[2:]
            relative = "/".join(parts)
            destination = os.path.join(site, relative)
            if _is_runtime_folder(relative):
                # The target's vendored runtime libraries (libgfortran beside OpenBLAS) are
                # added for the repair to find; the build machine's stay for its imports.
                if os.path.exists(destination):
                    continue
            elif not is_link_time_file(relative, rule):
                continue
            os.makedirs(os.path.dirname(destination), exist_ok=True)
            with archive.open(info) as source, open(destination, "wb") as target:
                target.write(source.read())
            mode = (info.external_attr >> 16) & 0o777
            os.chmod(destination, mode or 0o644)
            written.append(relative)
    by_key = {_twin_key(relative): twin for relative, twin in moved.items() if _is_shared_library(relative)}
    twins = {}
    for relative in written:
        if _is_shared_library(relative):
            twin = moved.get(relative) or by_key.get(_twin_key(relative))
            if twin:
                twins[os.path.realpath(os.path.join(site, relative))] = twin
    return written, twins


def _reinstall(name, version):
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--no-deps", f"{name}=={version}"],
        env=dict(os.environ, **{_INNER: "1"}), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        last = done.stdout.strip().splitlines()[-1:] or ["no output"]
        raise TargetInstallError(f"installing {name} {version} for the build machine failed: {last[0]}")


def _dist_info_of(site, name, version):
    import glob

    for dist_info in glob.glob(os.path.join(site, "*.dist-info")):
        found, found_version, _ = _metadata(dist_info)
        if _normalize(found) == _normalize(name) and found_version == version:
            return dist_info
    return None


def reconcile():
    """Installs for the target the link-time files of every library wheel in this
    environment that has not been looked at yet; returns the lines to print."""
    import glob

    config = _config()
    rule = config["rule"]
    site = _site_packages()
    done = _read_json("done.json", {})
    twins = _read_json("twins.json", {})
    target_files = _read_json("target-files.json", [])
    lines = []
    for dist_info in sorted(glob.glob(os.path.join(site, "*.dist-info"))):
        name, version, tags = _metadata(dist_info)
        key = f"{_normalize(name)}=={version}"
        if not name or key in done:
            continue
        if not tags or all(tag.endswith("-any") for tag in tags):
            done[key] = "pure"
            continue
        if _normalize(name) in config["build_tools"]:
            done[key] = "build tool"
            continue
        host_files = [
            relative for relative in _record(dist_info)
            if is_link_time_file(relative, rule) and not _is_runtime_folder(relative)
        ]
        if not host_files:
            done[key] = "no link-time files"
            continue
        wheel = _fetch_target_wheel(name, version, config)
        if wheel is None:
            # As pip on the target would: the newest version the target has a wheel of
            # (scipy-openblas32 0.3.34 has none for manylinux2014 aarch64), installed here
            # at the same version so Python code and libraries agree.
            wheel = _fetch_target_wheel(name, None, config)
            if wheel is not None:
                older = os.path.basename(wheel).split("-")[1]
                lines.append(
                    f"crosswheel: {name} {version} has no {config['target']} wheel; "
                    f"{older} has one and is installed instead"
                )
                _reinstall(name, older)
                done[key] = f"replaced by {older}"
                dist_info = _dist_info_of(site, name, older)
                if dist_info is None:
                    raise TargetInstallError(f"pip did not install {name} {older}")
                name, version, tags = _metadata(dist_info)
                key = f"{_normalize(name)}=={version}"
                host_files = [
                    relative for relative in _record(dist_info)
                    if is_link_time_file(relative, rule) and not _is_runtime_folder(relative)
                ]
        if wheel is None:
            lines.append(
                f"crosswheel: warning: {name} {version} has no {config['target']} wheel: its "
                f"{len(host_files)} link-time files ({host_files[0]}, ...) stay the build machine's"
            )
            done[key] = "no target wheel"
            continue
        written, new_twins = _swap(site, name, host_files, wheel, rule)
        twins.update(new_twins)
        target_files.extend(os.path.join(site, relative) for relative in written)
        lines.append(
            f"crosswheel: {name} {version} installed for {config['target']}: {len(written)} "
            f"link-time files from {os.path.basename(wheel)}; its Python code stays the build machine's"
        )
        done[key] = "target"
    _write_json("twins.json", twins)
    _write_json("target-files.json", sorted(set(target_files)))
    _write_json("done.json", done)
    return lines


def _after_pip():
    try:
        lines = reconcile()
    except TargetInstallError as error:
        print(f"crosswheel: error: {error}", file=sys.stderr)
        sys.stderr.flush()
        os._exit(1)
    for line in lines:
        print(line, file=sys.stderr)


def _runs_pip_install():
    argv = list(getattr(sys, "orig_argv", None) or sys.argv)
    if "-m" not in argv[1:-1]:
        return False
    module_at = argv.index("-m", 1) + 1
    if argv[module_at] != "pip":
        return False
    rest = argv[module_at + 1:]
    words = [word for word in rest if not word.startswith("-")]
    if not words or words[0] != "install":
        return False
    # An install somewhere else is not this environment's business.
    return not any(word.split("=")[0] in ("--target", "-t", "--prefix", "--root", "--user") for word in rest)


def _use_host_twins():
    twins = _read_json("twins.json", {})
    if not twins:
        return
    import ctypes

    original = ctypes.CDLL.__init__

    def load(self, name, *args, **kwargs):
        if isinstance(name, (str, os.PathLike)):
            name = twins.get(os.path.realpath(os.fspath(name)), name)
        original(self, name, *args, **kwargs)

    ctypes.CDLL.__init__ = load


def _start():
    if os.environ.get(_INNER) or not os.path.isdir(_STATE):
        return
    if _runs_pip_install():
        import atexit

        atexit.register(_after_pip)
    _use_host_twins()


if __name__ == "__main__":
    try:
        for message in reconcile():
            print(message, file=sys.stderr)
    except TargetInstallError as error:
        sys.exit(f"crosswheel: error: {error}")
else:
    _start()
