"""The learned model as plain arrays: inference without scikit-learn and without unpickling.

`sigclass train` fits a scikit-learn pipeline (see learn/train.py). For the scanner
it is exported to a `.npz` file of plain arrays — the two TF-IDF vocabularies
and idf weights, the linear weights, the sigmoid calibrators — plus a JSON
record of the settings. Loading it is `numpy.load(allow_pickle=False)` after
a sha256 check, and inference reproduces the pipeline's probabilities
(a test compares them on every corpus block). It keeps the scan's memory and
start-up small: scikit-learn alone costs about 100 MB and a second to import.
"""

from __future__ import annotations

import hashlib
import inspect
import io
import json
import math
from pathlib import Path
import re
from typing import Any
import zipfile

import numpy as np

from sigclass.errors import ModelError
from sigclass.learn.blocktext import block_input, decide, exception_view, normalise_block, retry_pending

FORMAT = "sigclass-compact-1"
from sigclass.learn.artefact import COMPACT_FILE  # noqa: E402,F401  (re-exported)
from sigclass.vocab import SignatureMode


# --------------------------------------------------------------------------- export (needs scikit-learn)

def export(pipeline: Any, meta: dict[str, Any], *, source_sha256: str) -> bytes:
    """The fitted pipeline as .npz bytes. `source_sha256` names the model file it was taken from."""
    text = pipeline.named_steps["text"]
    feats = dict(pipeline.named_steps["features"].transformer_list)
    clf = pipeline.named_steps["clf"]
    word, char, exc = feats.get("word"), feats.get("char"), feats.get("exc")
    if (word is None or char is None or set(feats) - {"word", "char", "exc"} or word.analyzer != "word"
            or char.analyzer != "char_wb" or word.norm != "l2" or char.norm != "l2"
            or (exc is not None and (exc.analyzer != "char_wb" or exc.norm != "l2" or exc.preprocessor is not exception_view))):
        raise ModelError("this model's features cannot be exported to the compact form")
    model = clf.model_
    if getattr(clf, "calibrated_", False):
        cal = model.calibrated_classifiers_
        if len(cal) != 1 or model.method != "sigmoid":
            raise ModelError("only a single sigmoid-calibrated model can be exported to the compact form")
        est = cal[0].estimator
        a = np.array([c.a_ for c in cal[0].calibrators], dtype=np.float64)
        b = np.array([c.b_ for c in cal[0].calibrators], dtype=np.float64)
        kind = "sigmoid"
    else:
        est, a, b, kind = model, np.zeros(0), np.zeros(0), "softmax"
    if not hasattr(est, "decision_function") or not hasattr(est, "coef_"):
        raise ModelError("only a linear model can be exported to the compact form")

    def vocab(vec) -> tuple[np.ndarray, np.ndarray]:
        terms = [None] * len(vec.vocabulary_)
        for term, idx in vec.vocabulary_.items():
            terms[idx] = term
        if any("\n" in t for t in terms):
            raise ModelError("a vocabulary term holds a newline; it cannot be exported")
        return np.frombuffer("\n".join(terms).encode("utf-8"), dtype=np.uint8), vec.idf_.astype(np.float64)

    wv, widf = vocab(word)
    cv, cidf = vocab(char)
    settings = {
        "format": FORMAT,
        "classes": [str(c) for c in clf.classes_],
        "threshold": float(meta["threshold"]),
        "threshold_both": meta.get("threshold_both"),
        "calibration": kind,
        "text": text.get_params(),
        "word": {"token_pattern": word.token_pattern, "lowercase": word.lowercase, "ngram_range": list(word.ngram_range),
                 "sublinear_tf": word.sublinear_tf},
        "char": {"lowercase": char.lowercase, "ngram_range": list(char.ngram_range), "sublinear_tf": char.sublinear_tf},
        # the exception lines' character n-grams (a preprocessor replaces sklearn's lowercasing: case kept)
        **({"exc": {"ngram_range": list(exc.ngram_range), "sublinear_tf": exc.sublinear_tf}} if exc is not None else {}),
        "source_sha256": source_sha256,
        "meta": {k: v for k, v in meta.items() if isinstance(v, (str, int, float, list, dict, bool)) or v is None},
    }
    arrays = {
        "settings": np.frombuffer(json.dumps(settings, sort_keys=True).encode(), dtype=np.uint8),
        "word_vocab": wv, "word_idf": widf, "char_vocab": cv, "char_idf": cidf,
        "coef": np.asarray(est.coef_, dtype=np.float32), "intercept": np.asarray(est.intercept_, dtype=np.float64),
        "cal_a": a, "cal_b": b,
    }
    if exc is not None:
        arrays["exc_vocab"], arrays["exc_idf"] = vocab(exc)
    # an .npz written entry by entry with a fixed timestamp, so the same model gives the same bytes
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, arr in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with zf.open(info, "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


# --------------------------------------------------------------------------- inference (numpy only)

_WS = re.compile(r"\s\s+")


SEEN_MAX = 512  # probabilities remembered per model, by normalised block text


class CompactModel:
    """Probabilities of a failure block's text, as the exported pipeline computes them."""

    def __init__(self, arrays: dict[str, np.ndarray], where: str) -> None:
        try:
            self.settings = json.loads(bytes(arrays["settings"]).decode())
            if self.settings.get("format") != FORMAT:
                raise ModelError(f"{where}: compact model format {self.settings.get('format')!r}, expected {FORMAT!r}")
            self.classes = list(self.settings["classes"])
            self.threshold = float(self.settings["threshold"])
            self.word_index = {t: i for i, t in enumerate(bytes(arrays["word_vocab"]).decode().split("\n"))}
            self.char_index = {t: i for i, t in enumerate(bytes(arrays["char_vocab"]).decode().split("\n"))}
            self.word_idf = arrays["word_idf"]
            self.char_idf = arrays["char_idf"]
            self.coef = arrays["coef"]
            self.intercept = arrays["intercept"]
            self.cal_a, self.cal_b = arrays["cal_a"], arrays["cal_b"]
            self.exc = self.settings.get("exc")
            self.exc_index = ({t: i for i, t in enumerate(bytes(arrays["exc_vocab"]).decode().split("\n"))}
                              if self.exc is not None else {})
            self.exc_idf = arrays["exc_idf"] if self.exc is not None else np.zeros(0)
        except (KeyError, ValueError, UnicodeDecodeError) as exc:
            raise ModelError(f"{where}: compact model is incomplete or corrupt ({exc})") from None
        n_word, n_char = len(self.word_index), len(self.char_index)
        if (self.coef.shape[1] != n_word + n_char + len(self.exc_index) or len(self.word_idf) != n_word
                or len(self.char_idf) != n_char or len(self.exc_idf) != len(self.exc_index)):
            raise ModelError(f"{where}: compact model arrays do not fit together")
        w = self.settings["word"]
        self._token = re.compile(w["token_pattern"])
        self._wlow, self._wn = bool(w["lowercase"]), tuple(w["ngram_range"])
        self._wsub = bool(w["sublinear_tf"])
        ch = self.settings["char"]
        self._clow, self._cn, self._csub = bool(ch["lowercase"]), tuple(ch["ngram_range"]), bool(ch["sublinear_tf"])
        self._text = dict(self.settings["text"])
        unknown = set(self._text) - set(inspect.signature(normalise_block).parameters)
        if unknown:
            raise ModelError(f"{where}: compact model text settings {sorted(unknown)} are unknown to this sigclass; "
                             "retrain it with `sigclass train --out PATH`")
        self._seen: dict[str, np.ndarray] = {}  # normalised block text -> probabilities (a failure storm repeats)

    @classmethod
    def load(cls, path: str | Path, *, sha256: str | None) -> "CompactModel":
        """Load after checking the file's sha256 (None: the caller has verified it)."""
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise ModelError(f"{path}: cannot read the compact model ({exc.strerror or exc})") from None
        if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
            raise ModelError(f"{path}: compact model does not match its pinned sha256; "
                             "rebuild it with `sigclass train --out classifier/sigclass/data/model.joblib --pin`")
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        except Exception as exc:  # zipfile, zlib, numpy format errors: all mean a broken file
            raise ModelError(f"{path}: compact model is corrupt ({exc}); "
                             "rebuild it with `sigclass train --out classifier/sigclass/data/model.joblib --pin`") from None
        return cls(arrays, str(path))

    # sklearn's word analyzer: token_pattern findall, then n-grams joined by a space
    def _word_terms(self, doc: str) -> list[str]:
        toks = self._token.findall(doc.lower() if self._wlow else doc)
        lo, hi = self._wn
        out = list(toks) if lo == 1 else []
        for n in range(max(lo, 2), min(hi, len(toks)) + 1):
            out.extend(" ".join(toks[i : i + n]) for i in range(len(toks) - n + 1))
        return out

    # sklearn's char_wb analyzer: n-grams inside space-padded words
    def _char_terms(self, doc: str, lowercase: bool | None = None, ngrams: tuple[int, int] | None = None) -> list[str]:
        doc = _WS.sub(" ", doc.lower() if (self._clow if lowercase is None else lowercase) else doc)
        lo, hi = ngrams or self._cn
        out: list[str] = []
        for w in doc.split():
            w = f" {w} "
            wl = len(w)
            for n in range(lo, hi + 1):
                off = 0
                out.append(w[off : off + n])
                while off + n < wl:
                    off += 1
                    out.append(w[off : off + n])
                if off == 0:
                    break
        return out

    @staticmethod
    def _tfidf(terms: list[str], index: dict[str, int], idf: np.ndarray, sublinear: bool) -> dict[int, float]:
        counts: dict[int, int] = {}
        for t in terms:
            i = index.get(t)
            if i is not None:
                counts[i] = counts.get(i, 0) + 1
        vals = {i: ((1.0 + math.log(c)) if sublinear else float(c)) * float(idf[i]) for i, c in counts.items()}
        norm = math.sqrt(sum(v * v for v in vals.values()))
        return {i: v / norm for i, v in vals.items()} if norm > 0 else vals

    def proba(self, text: str) -> np.ndarray:
        doc = normalise_block(text, **self._text)
        got = self._seen.get(doc)
        if got is None:
            # the features are a function of the normalised (masked) text alone: blocks that mask alike score alike
            got = self._proba_doc(doc)
            if len(self._seen) >= SEEN_MAX:
                self._seen.clear()
            self._seen[doc] = got
        return got.copy()

    def _proba_doc(self, doc: str) -> np.ndarray:
        word = self._tfidf(self._word_terms(doc), self.word_index, self.word_idf, self._wsub)
        char = self._tfidf(self._char_terms(doc), self.char_index, self.char_idf, self._csub)
        off = len(self.word_index)
        off2 = off + len(self.char_index)
        exc: dict[int, float] = {}
        if self.exc is not None:
            exc = self._tfidf(self._char_terms(exception_view(doc), False, tuple(self.exc["ngram_range"])),
                              self.exc_index, self.exc_idf, bool(self.exc["sublinear_tf"]))
        idx = np.fromiter([*word.keys(), *(off + i for i in char.keys()), *(off2 + i for i in exc.keys())], dtype=np.int64)
        val = np.fromiter([*word.values(), *char.values(), *exc.values()], dtype=np.float64)
        d = (self.coef[:, idx].astype(np.float64) @ val if len(idx) else np.zeros(self.coef.shape[0])) + self.intercept
        k = len(self.classes)
        if self.settings["calibration"] == "sigmoid":
            if k == 2:
                p1 = 1.0 / (1.0 + np.exp(self.cal_a[0] * d[0] + self.cal_b[0]))
                return np.array([1.0 - p1, p1])
            p = 1.0 / (1.0 + np.exp(self.cal_a * d + self.cal_b))
            s = p.sum()
            return p / s if s != 0 else np.full(k, 1.0 / k)
        if d.shape[0] == 1:
            d = np.array([-d[0], d[0]])
        e = np.exp(d - d.max())
        return e / e.sum()


class CompactPredictor:
    """The scanner's learned callback backed by a CompactModel."""

    wants_facts = True

    def __init__(self, model: CompactModel, signatures: str = SignatureMode.LEARNED) -> None:
        self.model = model
        self.threshold = model.threshold
        self.set_mode(signatures)

    def set_mode(self, signatures: str) -> None:
        """`both`: the model sees only what no regex explains; use the threshold chosen for that."""
        both = self.model.settings.get("threshold_both")
        self.threshold = float(both) if signatures == SignatureMode.BOTH and both is not None else self.model.threshold

    def __call__(self, bodies: list[str], facts: dict[str, str] | None = None) -> tuple[str, float] | None:
        text = block_input(bodies, facts)
        if retry_pending(text):
            return None
        return decide(self.model.proba(text), self.model.classes, self.threshold)
