"""The model file: a verified, versioned artefact around a joblib payload (STYLE habit 8).

Layout of a model file::

    MAGIC (8 bytes) | format version (uint16, big endian) | metadata length (uint32)
    | metadata (UTF-8 JSON) | joblib payload

The metadata records the format version, the scikit-learn, numpy and sigclass
versions, the corpus hash, the ledger hash, the labels, the abstain threshold,
the payload's sha256 and when the file was made. Everything is checked before
the payload is unpickled, and nothing is unpickled unless the whole file's
sha256 is trusted: pinned inside the package (the shipped model) or recorded in
the per-user trust list by `sigclass train --out PATH` on this machine.

Refusals are ModelError with one line naming the file, what differs and the
command that rebuilds it.
"""

from __future__ import annotations

from datetime import datetime, timezone
import hashlib
import io
import json
import os
from pathlib import Path
import stat
import struct
from typing import Any
import warnings

from sigclass import __version__
from sigclass.errors import ModelError
from sigclass.folders import data_dir

MAGIC = b"SIGCLSM\x00"
FORMAT_VERSION = 1
_HEAD = struct.Struct(">HI")
MAX_META = 1 << 20
MAX_FILE = 256 << 20
TRUST_FILE = "trusted-models.json"
PIN_FILE = "model-pin.json"
SHIPPED_FILE = "model.joblib"
COMPACT_FILE = "model.npz"  # the shipped model's compact export (sigclass.learn.compact), read by the scanner
SHIPPED_REBUILD = "sigclass train --out classifier/sigclass/data/model.joblib --pin"

_REQUIRED = ("format", "sklearn", "sigclass", "corpus_hash", "ledger_hash", "labels", "threshold",
             "created", "payload_sha256", "payload_bytes")


def rebuild_command(path: str | Path) -> str:
    return f"sigclass train --out {path}"


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def library_versions() -> dict[str, str]:
    import numpy
    import sklearn

    return {"sklearn": sklearn.__version__, "numpy": numpy.__version__, "sigclass": __version__}


def created_stamp() -> str:
    """Now in UTC, or SOURCE_DATE_EPOCH when set (byte-reproducible builds)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    t = datetime.fromtimestamp(int(epoch), timezone.utc) if epoch and epoch.isdigit() else datetime.now(timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# --------------------------------------------------------------------------- writing

def dump_bytes(obj: Any, meta: dict[str, Any]) -> bytes:
    """The bytes of a model file holding ``obj`` with ``meta`` (versions and hashes are filled in)."""
    import joblib

    buf = io.BytesIO()
    joblib.dump(obj, buf, compress=("zlib", 6))
    payload = buf.getvalue()
    record = dict(meta)
    record.update(library_versions())
    record["format"] = FORMAT_VERSION
    record.setdefault("created", created_stamp())
    record["payload_sha256"] = hashlib.sha256(payload).hexdigest()
    record["payload_bytes"] = len(payload)
    missing = [k for k in _REQUIRED if k not in record]
    if missing:
        raise ValueError(f"model metadata lacks {', '.join(missing)}")
    head = json.dumps(record, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return MAGIC + _HEAD.pack(FORMAT_VERSION, len(head)) + head + payload


def save(obj: Any, meta: dict[str, Any], path: str | Path) -> str:
    """Write a model file atomically; returns its sha256."""
    data = dump_bytes(obj, meta)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    import tempfile  # writing only: a scan reads the model and never pays this import (~8 ms)

    fd, tmp = tempfile.mkstemp(prefix=".model-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- reading

def _read_regular(path: str | Path, rebuild: str) -> bytes:
    """The bytes of a regular file of at most MAX_FILE bytes. Anything else (a device such as /dev/zero, a
    FIFO, a socket) is refused before a byte is read: opened without blocking, checked, never read."""
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(path)
    if not stat.S_ISREG(st.st_mode):
        raise ModelError(f"{path}: not a regular file (a device, pipe or socket is never read as a model); "
                         f"give the file written by `{rebuild}`")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)  # the file opened, which may not be the one looked at
        if not stat.S_ISREG(st.st_mode):
            raise ModelError(f"{path}: not a regular file (a device, pipe or socket is never read as a model); "
                             f"give the file written by `{rebuild}`")
        if st.st_size > MAX_FILE:
            raise ModelError(f"{path}: {st.st_size} bytes is too large for a sigclass model; rebuild it with `{rebuild}`")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_FILE + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_FILE:
        raise ModelError(f"{path}: over {MAX_FILE} bytes, too large for a sigclass model; rebuild it with `{rebuild}`")
    return data


def read_header(path: str | Path, *, rebuild: str | None = None) -> tuple[dict[str, Any], bytes, str]:
    """Verify the marker, format and payload hash without unpickling: (metadata, payload, file sha256)."""
    rebuild = rebuild or rebuild_command(path)
    try:
        data = _read_regular(path, rebuild)
    except FileNotFoundError:
        raise ModelError(f"{path}: no such model file; build one with `{rebuild}`") from None
    except IsADirectoryError:
        raise ModelError(f"{path}: is a directory, not a model file; build one with `{rebuild}`") from None
    except OSError as exc:
        raise ModelError(f"{path}: cannot read the model file ({exc.strerror or exc})") from None
    if not data.startswith(MAGIC):
        raise ModelError(f"{path}: not a sigclass model file (no {MAGIC[:7].decode()} marker); rebuild it with `{rebuild}`")
    if len(data) < len(MAGIC) + _HEAD.size:
        raise ModelError(f"{path}: model file is corrupt (truncated header); rebuild it with `{rebuild}`")
    version, meta_len = _HEAD.unpack_from(data, len(MAGIC))
    if version != FORMAT_VERSION:
        raise ModelError(f"{path}: model format version {version}, but this sigclass {__version__} reads version "
                         f"{FORMAT_VERSION}; rebuild it with `{rebuild}`")
    start = len(MAGIC) + _HEAD.size
    if meta_len > MAX_META or start + meta_len > len(data):
        raise ModelError(f"{path}: model file is corrupt (bad metadata length); rebuild it with `{rebuild}`")
    try:
        meta = json.loads(data[start:start + meta_len].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ModelError(f"{path}: model file is corrupt (unreadable metadata); rebuild it with `{rebuild}`") from None
    if not isinstance(meta, dict) or any(k not in meta for k in _REQUIRED):
        raise ModelError(f"{path}: model file is corrupt (incomplete metadata); rebuild it with `{rebuild}`")
    if meta["format"] != FORMAT_VERSION:
        raise ModelError(f"{path}: model file is corrupt (metadata says format {meta['format']}, header says "
                         f"{version}); rebuild it with `{rebuild}`")
    payload = data[start + meta_len:]
    if len(payload) != meta["payload_bytes"] or hashlib.sha256(payload).hexdigest() != meta["payload_sha256"]:
        raise ModelError(f"{path}: model file is corrupt (payload does not match its recorded sha256); "
                         f"rebuild it with `{rebuild}`")
    return meta, payload, hashlib.sha256(data).hexdigest()


def load(path: str | Path, *, trusted: set[str] | frozenset[str], rebuild: str | None = None,
         untrusted_hint: str | None = None) -> tuple[Any, dict[str, Any]]:
    """Verify, check trust and versions, then unpickle: (object, metadata). Raises ModelError."""
    rebuild = rebuild or rebuild_command(path)
    meta, payload, digest = read_header(path, rebuild=rebuild)
    if digest not in trusted:
        raise ModelError(untrusted_hint or (
            f"{path}: refusing to load a model this machine did not train (sha256 {digest[:16]}); "
            f"rebuild it with `{rebuild}`"))
    have = library_versions()
    if meta["sklearn"] != have["sklearn"]:
        raise ModelError(f"{path}: model was trained with scikit-learn {meta['sklearn']}, this environment has "
                         f"scikit-learn {have['sklearn']}; rebuild it with `{rebuild}`")
    import joblib
    from sklearn.exceptions import InconsistentVersionWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", InconsistentVersionWarning)
        try:
            obj = joblib.load(io.BytesIO(payload))
        except InconsistentVersionWarning as w:
            raise ModelError(f"{path}: model was pickled by scikit-learn {w.original_sklearn_version}, this environment "
                             f"has scikit-learn {w.current_sklearn_version}; rebuild it with `{rebuild}`") from None
        except Exception as exc:  # noqa: BLE001 - any unpickling failure is a broken artefact
            raise ModelError(f"{path}: model payload cannot be loaded ({type(exc).__name__}: {exc}); "
                             f"rebuild it with `{rebuild}`") from None
    return obj, meta


# --------------------------------------------------------------------------- trust

def trust_path() -> Path:
    return data_dir() / TRUST_FILE


def trusted_hashes() -> set[str]:
    """sha256 values of the models this user trained here (an unreadable list trusts nothing)."""
    p = trust_path()
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    models = data.get("models") if isinstance(data, dict) else None
    return {k for k in models if isinstance(k, str)} if isinstance(models, dict) else set()


def trust(path: str | Path, digest: str) -> Path:
    """Record a model file's sha256 in the per-user trust list; returns the list's path."""
    p = trust_path()
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
            data = {"models": {}}
    except (OSError, ValueError):
        data = {"models": {}}
    data["models"][digest] = {"path": str(Path(path).resolve()), "added": created_stamp()}
    p.parent.mkdir(parents=True, exist_ok=True)
    import tempfile  # writing only (see save)

    fd, tmp = tempfile.mkstemp(prefix=".trust-", dir=p.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
    os.replace(tmp, p)
    return p


# --------------------------------------------------------------------------- the shipped model

def shipped_dir() -> Path:
    from sigclass.folders import package_dir

    return package_dir("data")


def _pin_field(key: str, folder: Path | None) -> str | None:
    p = (folder or shipped_dir()) / PIN_FILE
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    v = data.get(key) if isinstance(data, dict) else None
    return v if isinstance(v, str) else None


def pinned_hash(folder: Path | None = None) -> str | None:
    """The sha256 pinned for the shipped model, or None when no pin file is there."""
    return _pin_field("sha256", folder)


def write_pin(digest: str, folder: Path | None = None, *, compact_digest: str | None = None) -> Path:
    p = (folder or shipped_dir()) / PIN_FILE
    rec = {"file": SHIPPED_FILE, "sha256": digest}
    if compact_digest:
        rec.update({"compact_file": COMPACT_FILE, "compact_sha256": compact_digest})
    p.write_text(json.dumps(rec, indent=1) + "\n", encoding="utf-8")
    return p


def pinned_compact_hash(folder: Path | None = None) -> str | None:
    """The sha256 pinned for the shipped compact model (model.npz), or None."""
    return _pin_field("compact_sha256", folder)


def load_shipped(folder: Path | None = None) -> tuple[Any, dict[str, Any]] | None:
    """The shipped model, verified against its pinned hash; None when the package ships none."""
    folder = folder or shipped_dir()
    path = folder / SHIPPED_FILE
    if not path.exists():
        return None
    pin = pinned_hash(folder)
    if pin is None:
        raise ModelError(f"{path}: the shipped model has no pinned hash ({PIN_FILE}); rebuild it with `{SHIPPED_REBUILD}`")
    digest = sha256_file(path)
    if digest != pin:
        raise ModelError(f"{path}: the shipped model does not match its pinned sha256 ({digest[:16]} != {pin[:16]}); "
                         f"rebuild it with `{SHIPPED_REBUILD}`")
    return load(path, trusted={pin}, rebuild=SHIPPED_REBUILD)
