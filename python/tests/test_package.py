"""The package around the results: the examples run, the search lets other threads run, results go into
pandas as they are, and the committed type stubs are the ones the flag tables give."""
import os
import pathlib
import subprocess
import sys
import threading
import time

import pytest

import trainplan
from conftest import SOURCE_DIR

EXAMPLES = sorted((SOURCE_DIR / "examples" / "python").glob("*.py"))


def test_there_is_an_example_per_common_question():
    assert {p.stem for p in EXAMPLES} >= {"does_my_layout_fit", "best_layout", "zero2_vs_zero3", "campaign"}


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs(script):
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env={**os.environ})
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip(), "the example prints its answer"


def test_search_releases_the_gil():
    """While the search runs in one thread, Python code in another keeps running."""
    finished = threading.Event()
    result = {}

    def run():
        # Megatron-530B on 641 DGX A100 nodes (Calculon's question): tens of ms on one thread, long enough
        # for the loop below to tick (BLOOM's default search now takes a few ms).
        result["search"] = trainplan.search(model="megatron-530b", cluster="dgx-a100", num_nodes=641, gbs=2520, threads=1)
        finished.set()

    ticks = 0
    worker = threading.Thread(target=run)
    start = time.monotonic()
    worker.start()
    while not finished.is_set():
        ticks += 1
        finished.wait(0.001)
    elapsed_ms = (time.monotonic() - start) * 1e3
    worker.join()
    assert result["search"]["search"]["candidates"]
    # With the GIL held by the search this loop could not run until it returned (ticks would be ~1); free,
    # it ticks about once a millisecond for as long as the search takes.
    assert ticks >= max(5, 0.25 * elapsed_ms), (ticks, elapsed_ms)


def test_candidates_are_flat_rows():
    """pandas.DataFrame(candidates) works as is: every candidate is a flat dict with the same keys."""
    candidates = trainplan.search(model="llama2-7b", cluster="dgx-a100", num_nodes=1, gbs=64)["search"]["candidates"]
    keys = set(candidates[0])
    for c in candidates:
        assert set(c) == keys
        assert all(isinstance(v, (int, float, str, bool)) for v in c.values()), c


def test_pandas_dataframe_from_candidates():
    pandas = pytest.importorskip("pandas")
    candidates = trainplan.search(model="llama2-7b", cluster="dgx-a100", num_nodes=1, gbs=64)["search"]["candidates"]
    frame = pandas.DataFrame(candidates)
    assert len(frame) == len(candidates)
    assert frame["iteration_s"].is_monotonic_increasing


def test_stubs_are_current():
    """python/trainplan/__init__.pyi is what python/tools/gen_stubs.py writes from the flag tables."""
    generated = subprocess.run([sys.executable, str(SOURCE_DIR / "python" / "tools" / "gen_stubs.py")],
                               capture_output=True, text=True, check=True).stdout
    committed = (SOURCE_DIR / "python" / "trainplan" / "__init__.pyi").read_text()
    assert generated == committed, "regenerate: python3 python/tools/gen_stubs.py > python/trainplan/__init__.pyi"


def test_stubs_name_every_keyword_of_the_job():
    stubs = (SOURCE_DIR / "python" / "trainplan" / "__init__.pyi").read_text()
    for row in trainplan.flags("job"):
        for keyword in row["keywords"]:
            assert f"        {keyword}: " in stubs, keyword


def test_stubs_list_the_megatron_flags_that_are_not_modelled():
    # Issue 29: every Megatron flag classified, and the stubs list them: the ignored ones and the refused
    # ones, with what each would change, in Job's docstring; **megatron_flags takes them.
    stubs = (SOURCE_DIR / "python" / "trainplan" / "__init__.pyi").read_text()
    classes = trainplan.flag_classes()
    assert "        **megatron_flags: Any," in stubs
    for flag in classes["ignored"] + [f for g in classes["refused"] for f in g["flags"]]:
        assert flag[2:].replace("-", "_") in stubs, flag
    for group in classes["refused"]:
        assert f"        {group['would_change']}:" in stubs, group["would_change"]


def test_flags_show_units_and_kinds():
    rows = {r["keywords"][0]: r for r in trainplan.flags("job")}
    assert rows["gpu_memory_gib"]["value_name"] == "GIB" and rows["gpu_memory_gib"]["kind"] == "number"
    assert rows["tensor_model_parallel_size"]["kind"] == "integer"
    assert "tp" in rows["tensor_model_parallel_size"]["keywords"]
    assert rows["sequence_parallel"]["kind"] == "switch"
    search_rows = {r["keywords"][0]: r for r in trainplan.flags("search")}
    assert search_rows["tp"]["kind"] == "list"
    assert "csv" not in {k for r in trainplan.flags("search") for k in r["keywords"]}


def test_docstrings_show_units():
    assert "_s" in trainplan.Job.time.__doc__ and "seconds" in trainplan.Job.time.__doc__
    assert "bytes" in trainplan.Job.memory.__doc__
    assert "GiB" in trainplan.__doc__
