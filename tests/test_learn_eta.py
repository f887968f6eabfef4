"""learn's time left (issue 35, item 5): estimated from the generations after the session's first,
"estimating" until then; a fake clock stands in for time."""

from __future__ import annotations

from pathlib import Path

import pytest

from simsched.cli.learn import time_left
from simsched.learning.eta import LearnEta
from simsched.learning.gp import learn, learn_config

TINY = """name = "tiny"
seed = 3
[[cluster]]
name = "a"
nodes = [{ count = 1, gpus = 8, gpu_type = "V100" }]
[workload]
source = "synthetic"
generator = "paper"
jobs_per_node = 4
[scheduler]
policy = "fifo"
"""


class FakeClock:
    """Seconds that move only when a run is made: the first run costs the warm-up, each other one 1 s."""

    def __init__(self, warm_up: float) -> None:
        self.now = 0.0
        self.warm_up = warm_up
        self.runs = 0

    def __call__(self) -> float:
        return self.now

    def run(self) -> None:
        self.now += self.warm_up if self.runs == 0 else 1.0
        self.runs += 1


CLOCK = FakeClock(0.0)


def costly_objective(scenario_path: str, seed, graph_json: str, jobs: int | None) -> float:
    """A stand-in for a run (the local executor with one worker calls it in this process)."""
    CLOCK.run()
    return float(len(graph_json) % 7 + 1)


def test_eta_by_hand():
    clock = [0.0]
    eta = LearnEta(lambda: clock[0])
    assert eta.remaining(100, 10, 20) is None
    eta.begin(0)
    clock[0] = 500.0  # generation 0: warm-up, 10 runs
    eta.end(5, 10)
    assert not eta.known and eta.remaining(100, 10, 20) is None
    eta.begin(10)
    clock[0] = 540.0  # generation 1: 40 s, 10 slots, 8 runs (2 memo hits)
    eta.end(10, 18)
    assert eta.known
    # 4 s a slot, 5 s a run: 30 slots of generations and 20 validation runs left
    assert eta.remaining(30, 10, 20) == pytest.approx(4 * 30 + 5 * 20)
    # a quarter of the generation in progress made: 2.5 of its 10 slots behind us
    assert eta.remaining(30, 10, 20, done=2, total=8) == pytest.approx(4 * 27.5 + 5 * 20)
    # validation only, 3 of its 12 runs made
    assert eta.remaining(0, 0, 12, done=3, total=12) == pytest.approx(5 * 9)
    eta.begin(18)
    clock[0] = 600.0  # generation 2: 60 s, 10 slots, 10 runs; the rate is over both
    eta.end(10, 28)
    assert eta.remaining(10, 10, 0) == pytest.approx(100 / 20 * 10)


def test_end_without_begin_is_an_error():
    with pytest.raises(ValueError, match="without begin"):
        LearnEta(lambda: 0.0).end(1, 1)


def test_time_left_says_estimating_until_known():
    assert time_left(None) == "estimating time left"
    assert time_left(3725.0) == "1:02:05 left"


def test_learn_estimates_from_generations_after_the_first(tmp_path: Path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    clock = CLOCK
    clock.__init__(warm_up=10_000.0)  # generation 0 pays a huge warm-up
    config = learn_config(path, population=4, generations=3, alpha=2, train=4, validation=2, seed=5)
    seen = []
    learn(path, config, objective_fn=costly_objective, clock_fn=clock,
          progress=lambda p: seen.append((p.phase, p.generation, p.evaluated, p.to_evaluate, p.eta_s, clock.runs)))
    done = [row for row in seen if row[0] == "generation_done"]
    assert [row[1] for row in done] == [0, 1, 2, 3]
    # until generation 1 has finished: no estimate (generation 0's warm-up would make it 100x too high)
    first_known = seen.index(done[1])
    assert all(row[4] is None for row in seen[:first_known])
    assert all(row[4] is not None for row in seen[first_known:])
    # after generation 1: its runs cost 1 s each; slots left: generations 2 and 3 (2 x 4 x 2 each)
    runs_gen1 = done[1][5] - done[0][5]
    per_slot, per_run = runs_gen1 / 16, 1.0
    assert done[1][4] == pytest.approx(per_slot * 32 + per_run * 4 * 2)
    assert done[1][4] < 100  # nowhere near the warm-up
    # after the last generation: validation only, from generations 1-3's runs (1 s each)
    assert done[3][4] == pytest.approx(4 * 2)
    assert seen[-1][0] == "done" and seen[-1][4] == 0.0
