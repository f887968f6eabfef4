"""The built-in agent: a linear scorer over candidate features with a masked softmax (numpy only).

Candidate i scores ``theta . x_i`` (x_i its observation row); masked candidates
get probability 0. Sampling draws from the softmax (training);
:meth:`LinearAgent.greedy` takes the highest score, the first candidate on ties
(inference), so the initial agent (theta = 0) starts the first candidate.

The built-in agent never chooses "wait" while a candidate fits: it is
work-conserving. (A first version scored "wait" from the global features too;
its sampled policy waited rarely, but greedily it waited whenever the wait score
topped every candidate, and validation mean JCT rose tenfold. Other agents can
use the environment's wait action; docs/rl.md.)

An agent file is a ``.npz`` holding ``theta`` and ``meta`` (JSON text:
observation settings, fleet shape, feature names, how it was trained).
Loading checks the weights' shape against ``meta``.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from simsched.core import atomic
from simsched.core.errors import InputError
from simsched.core.inputs import missing_or_irregular, note_read
from simsched.rl.features import CANDIDATE_FEATURES, GLOBAL_TAIL, FleetShape, ObsConfig

FORMAT = "simsched-rl-linear/1"


@dataclass
class LinearAgent:
    config: ObsConfig
    shape: FleetShape
    theta: np.ndarray  # (row features,)
    meta: dict = field(default_factory=dict)  # how it was trained (free-form, saved as JSON)

    @classmethod
    def initial(cls, config: ObsConfig, shape: FleetShape) -> LinearAgent:
        """All weights 0: uniform among fitting candidates when sampling, the first one greedily."""
        return cls(config, shape, np.zeros(len(CANDIDATE_FEATURES) + len(shape.gpu_types)))

    # -- parameters as one vector (for the optimiser) ------------------------------
    def parameters(self) -> np.ndarray:
        return self.theta.copy()

    def set_parameters(self, vector: np.ndarray) -> None:
        if np.shape(vector) != self.theta.shape:
            raise InputError(f"agent parameters: expected shape {self.theta.shape}, got {np.shape(vector)}")
        self.theta = np.array(vector, dtype=np.float64)

    # -- acting --------------------------------------------------------------------
    def logits(self, rows: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Scores of the ``top_k`` candidates; masked ones (and the wait action's mask entry) ignored: -inf."""
        scores = rows.astype(np.float64) @ self.theta
        scores[mask[:len(rows)] == 0] = -np.inf
        return scores

    def probabilities(self, rows: np.ndarray, mask: np.ndarray) -> np.ndarray:
        scores = self.logits(rows, mask)
        weights = np.exp(scores - scores.max())
        return weights / weights.sum()

    def greedy(self, rows: np.ndarray, mask: np.ndarray) -> int:
        """The best fitting candidate; "wait" (``top_k``) only when no candidate is allowed."""
        if not mask[:len(rows)].any():
            return len(rows)
        return int(np.argmax(self.logits(rows, mask)))

    def sample(self, rows: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        if not mask[:len(rows)].any():
            return len(rows)
        p = self.probabilities(rows, mask)
        index = int(np.searchsorted(np.cumsum(p), rng.random(), side="right"))
        return min(index, int(np.flatnonzero(p)[-1]))

    def grad_log_prob(self, rows: np.ndarray, mask: np.ndarray, action: int) -> np.ndarray:
        """d log pi(action) / d theta = x_action - E_pi[x] (the REINFORCE score function)."""
        p = self.probabilities(rows, mask)
        x = rows.astype(np.float64)
        return x[action] - p @ x

    # -- files -----------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the agent (atomically: a temporary file renamed over ``path``)."""
        path = Path(path)
        meta = {"format": FORMAT, "config": asdict(self.config), "shape": self.shape.as_dict(),
                "features": list(CANDIDATE_FEATURES) + [f"speed_{t}" for t in self.shape.gpu_types],
                "globals": [f"free_{c}_{t}" for c, t in self.shape.groups] + list(GLOBAL_TAIL),
                "training": self.meta}
        with atomic.replacing(path) as tmp, open(tmp, "wb") as fh:  # a fresh name, never a planted link
            np.savez(fh, theta=self.theta, meta=np.array(json.dumps(meta)))
        return path

    @classmethod
    def load(cls, path: str | Path) -> LinearAgent:
        """Read an agent file; a missing, foreign or damaged file is an :class:`InputError`."""
        path = Path(path)
        if not path.is_file():
            raise InputError(f"{path}: agent file {missing_or_irregular(path)} (train one with `python -m simsched rl train`)")
        note_read(path, "agent file")
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                theta = data["theta"]
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, json.JSONDecodeError) as exc:
            raise InputError(f"{path}: not a simsched RL agent file ({type(exc).__name__}: {exc})") from None
        if not isinstance(meta, dict):
            raise InputError(f"{path}: not a simsched RL agent file (its metadata is a {type(meta).__name__}, "
                             "not a table)")
        if meta.get("format") != FORMAT:
            raise InputError(f"{path}: agent format {meta.get('format')!r}, expected {FORMAT!r}")
        if not isinstance(meta.get("config"), dict) or not isinstance(meta.get("shape"), dict):
            raise InputError(f"{path}: agent settings are incomplete or damaged: 'config' and 'shape' must be tables")
        try:
            config = ObsConfig(**meta["config"])
            shape = FleetShape.from_dict(meta["shape"])
            weights = np.asarray(theta, dtype=float)
        except InputError as exc:
            raise InputError(f"{path}: agent settings are invalid: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - any failure to read foreign content is bad input
            raise InputError(f"{path}: agent settings are invalid ({type(exc).__name__}: {exc})") from None
        if not np.isfinite(weights).all():
            bad = int((~np.isfinite(weights)).sum())
            raise InputError(f"{path}: {bad} of {weights.size} weights are NaN or infinite; the agent is damaged "
                             "(retrain it with `python -m simsched rl train`)")
        training = meta.get("training", {})
        agent = cls(config, shape, weights, training if isinstance(training, dict) else {})
        expected = cls.initial(config, shape)
        if agent.theta.shape != expected.theta.shape:
            raise InputError(f"{path}: weight shape {agent.theta.shape} does not match its "
                             f"settings {expected.theta.shape}")
        return agent
