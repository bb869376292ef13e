"""The estimator: failure blocks normalised and masked (`BlockText`), word and character n-gram TF-IDF, and a
linear model with calibrated probabilities (`CalibratedLinearClassifier`). sklearn naming (`X`, `y`,
trailing-underscore attributes) stays inside this module.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any
import warnings

import numpy as np
from sklearn.base import _fit_context, BaseEstimator, ClassifierMixin, TransformerMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import LabelEncoder
from sklearn.svm import LinearSVC
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from sigclass.learn.blocktext import exception_view, normalise_block


SEED = 0

DEFAULT_PARAMS: dict[str, Any] = {
    "C": 100.0, "loss": "logistic", "calibration": "none",
    "word_min_df": 1, "word_features": 8000, "char_min_df": 2, "char_features": 12000, "char_max_n": 5,
    "repeat_exceptions": 2, "facts": True, "signals": True, "frames": "none", "exc_features": 0,
    "split_words": "none", "last_exception": 1, "path_kinds": True,
    "code": "last",
    # weights of the training rows by where the text comes from: real excerpts, written ones, the ledger's own
    # `# expect:` examples and the corpus's framework phrasings (0 leaves those out)
    "written_weight": 1.0, "example_weight": 0.5, "phrasing_weight": 0.25,
}


class BlockText(TransformerMixin, BaseEstimator):
    """Raw failure blocks (strings) -> normalised, masked strings. Stateless."""

    _parameter_constraints: dict = {
        "max_lines": [Interval(Integral, 2, None, closed="left")],
        "repeat_exceptions": [Interval(Integral, 0, None, closed="left")],
        "facts": ["boolean"],
        "signals": ["boolean"],
        "frames": [StrOptions({"all", "last", "none"})],
        "split_words": [StrOptions({"none", "exc", "all"})],
        "last_exception": [Interval(Integral, 0, None, closed="left")],
        "path_kinds": ["boolean"],
        "code": [StrOptions({"all", "last", "none"})],
    }

    def __init__(self, *, max_lines: int = 160, repeat_exceptions: int = 1, facts: bool = True,
                 signals: bool = False, frames: str = "all", split_words: str = "none", last_exception: int = 0,
                 path_kinds: bool = False, code: str = "all") -> None:
        self.max_lines = max_lines
        self.repeat_exceptions = repeat_exceptions
        self.facts = facts
        self.signals = signals
        self.frames = frames
        self.split_words = split_words
        self.last_exception = last_exception
        self.path_kinds = path_kinds
        self.code = code

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        self.fitted_ = True
        return self

    def transform(self, X):
        return [normalise_block(str(x), **self.get_params()) for x in X]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = False
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        return tags


class CalibratedLinearClassifier(ClassifierMixin, BaseEstimator):
    """A linear classifier with calibrated probabilities, on numeric (dense or sparse) features.

    ``loss='hinge'`` fits a LinearSVC, ``'logistic'`` a LogisticRegression.
    With ``calibration`` set, probabilities come from CalibratedClassifierCV
    (one base model on all data, calibrators from ``calibration_cv``-fold predictions;
    ``calibration_cv`` shrinks to the smallest class). ``coef_dtype='float32'`` stores the
    weights in single precision (half the file). When a class has a single sample,
    or ``calibration='none'``, the logistic model's own probabilities (or a
    softmax of the SVM's decision values) are used.
    """

    _parameter_constraints: dict = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "loss": [StrOptions({"hinge", "logistic"})],
        "calibration": [StrOptions({"sigmoid", "isotonic", "none"})],
        "calibration_cv": [Interval(Integral, 2, None, closed="left")],
        "class_weight": [StrOptions({"balanced"}), dict, None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "coef_dtype": [StrOptions({"float32", "float64"})],
        "random_state": ["random_state"],
    }

    def __init__(self, *, C: float = 1.0, loss: str = "hinge", calibration: str = "sigmoid", calibration_cv: int = 3,
                 class_weight: str | dict | None = "balanced", max_iter: int = 5000, coef_dtype: str = "float32",
                 random_state=SEED) -> None:
        self.C = C
        self.loss = loss
        self.calibration = calibration
        self.calibration_cv = calibration_cv
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.coef_dtype = coef_dtype
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
        check_classification_targets(y)
        self.label_encoder_ = LabelEncoder().fit(y)
        self.classes_ = self.label_encoder_.classes_
        if len(self.classes_) < 2:
            raise ValueError(f"the data has one class only ({self.classes_[0]!r}); a classifier needs at least 2 classes")
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
        return self._fit_model(X, self.label_encoder_.transform(y), sample_weight)

    def _base(self):
        if self.loss == "hinge":
            return LinearSVC(C=self.C, class_weight=self.class_weight, max_iter=self.max_iter, random_state=self.random_state)
        return LogisticRegression(C=self.C, class_weight=self.class_weight, max_iter=self.max_iter, random_state=self.random_state)

    def _fit_model(self, X, y_enc, sample_weight):
        counts = np.bincount(y_enc)
        folds = int(min(self.calibration_cv, counts.min()))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*(converge|least populated).*")
            if self.calibration != "none" and folds >= 2:
                from sklearn.model_selection import StratifiedKFold

                cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=self.random_state)
                model = CalibratedClassifierCV(self._base(), method=self.calibration, cv=cv, ensemble=False)
                self.calibrated_ = True
            else:
                model = self._base()
                self.calibrated_ = False
            model.fit(X, y_enc, sample_weight=sample_weight)
        self.model_ = model
        base = model.calibrated_classifiers_[0].estimator if self.calibrated_ else model
        self.n_iter_ = int(np.max(base.n_iter_))
        # float32 weights halve the model file; the probabilities move by about 1e-8
        base.coef_ = base.coef_.astype(self.coef_dtype)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def predict_proba(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        if hasattr(self.model_, "predict_proba"):
            return self.model_.predict_proba(X)
        d = self.model_.decision_function(X)
        if d.ndim == 1:
            d = np.column_stack([-d, d])
        e = np.exp(d - d.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, X):
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


_WORD_TOKENS = r"<[A-Z]+>|[A-Za-z_][A-Za-z0-9_]+"


def make_pipeline(params: dict[str, Any] | None = None) -> Pipeline:
    """The whole model: block text -> word and char TF-IDF -> calibrated linear classifier."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    p = {**DEFAULT_PARAMS, **(params or {})}
    parts = [
        ("word", TfidfVectorizer(token_pattern=_WORD_TOKENS, lowercase=False, ngram_range=(1, 2), sublinear_tf=True,
                                 min_df=p["word_min_df"], max_features=p["word_features"], dtype=np.float32)),
        ("char", TfidfVectorizer(analyzer="char_wb", ngram_range=(3, p["char_max_n"]), sublinear_tf=True,
                                 min_df=p["char_min_df"], max_features=p["char_features"], dtype=np.float32)),
    ]
    if p["exc_features"]:
        # character n-grams of the exception lines alone: the raised error's type and message weigh on their own
        parts.append(("exc", TfidfVectorizer(analyzer="char_wb", ngram_range=(3, p["char_max_n"]), sublinear_tf=True,
                                             preprocessor=exception_view, min_df=p["char_min_df"],
                                             max_features=p["exc_features"], dtype=np.float32)))
    features = FeatureUnion(parts)
    clf = CalibratedLinearClassifier(C=p["C"], loss=p["loss"], calibration=p["calibration"], random_state=SEED)
    text = BlockText(repeat_exceptions=p["repeat_exceptions"], facts=p["facts"], signals=p["signals"], frames=p["frames"],
                     split_words=p["split_words"], last_exception=p["last_exception"], path_kinds=p["path_kinds"],
                     code=p["code"])
    return Pipeline([("text", text), ("features", features), ("clf", clf)])
