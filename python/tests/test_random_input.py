"""Random keyword arguments (fixed seed, bounded count): every call either returns a result or raises
trainplan.Error naming an argument; never another exception, never a crash of the interpreter."""
import math
import random

import trainplan

VALUES = [0, 1, -1, 2, 3, 8, 7, 64, 2**31, 2**63, 10**30, 0.5, 1e9, -2.5, math.nan, math.inf, True, False, "", "8",
          "full", "llama2-7b", "dgx-h100", "none", "x" * 300, "\u00e9\u4e2d", [1, 2], [], (1, 2, 3), None, {"a": 1},
          object()]


def test_random_job_keywords():
    rng = random.Random(20261123)
    keywords = [k for row in trainplan.flags("job") for k in row["keywords"]]
    outcomes = {"result": 0, "error": 0}
    for _ in range(400):
        kwargs = {"model": "llama2-7b", "cluster": "dgx-h100"}
        for key in rng.sample(keywords, rng.randint(1, 4)):
            kwargs[key] = rng.choice(VALUES)
        try:
            job = trainplan.Job(**kwargs)
            job.memory()
            job.time()
            outcomes["result"] += 1
        except trainplan.Error as e:
            assert str(e), kwargs
            outcomes["error"] += 1
    assert outcomes["result"] > 0 and outcomes["error"] > 0, outcomes


def test_random_plan_and_search_keywords():
    rng = random.Random(7)
    plan_keywords = [k for row in trainplan.flags("plan") for k in row["keywords"]]
    for _ in range(150):
        kwargs = {"train_tokens": 1e12}
        for key in rng.sample(plan_keywords, rng.randint(1, 3)):
            kwargs[key] = rng.choice(VALUES)
        try:
            trainplan.plan(**kwargs)
        except trainplan.Error as e:
            assert str(e)
    # The search's layout lists, kept small so that each search takes milliseconds.
    for _ in range(60):
        kwargs = {"model": "llama2-7b", "cluster": "dgx-a100", "num_nodes": 1, "gbs": 32, "threads": 1}
        key = rng.choice(["tp", "pp", "mbs", "recompute", "zero_stage", "sp", "top", "rank_by", "min_headroom_gib"])
        kwargs[key] = rng.choice(VALUES)
        try:
            trainplan.search(**kwargs)
        except trainplan.Error as e:
            assert str(e)
