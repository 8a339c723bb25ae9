"""Bad input from Python: a trainplan.Error (a ValueError) whose message names the keyword argument and
the rule, the CLI's message with its flags named by the caller's keywords; never a crash."""
import math

import pytest

import trainplan
from conftest import cli_error

LLAMA = dict(model="llama3-70b", cluster="dgx-h100")


def error_of(fn, *args, **kwargs):
    with pytest.raises(trainplan.Error) as info:
        fn(*args, **kwargs)
    return info.value


def test_error_is_a_value_error():
    assert issubclass(trainplan.Error, ValueError)


def test_unknown_keyword_suggests_the_nearest():
    e = error_of(trainplan.Job, tensor_model_paralel_size=2)
    assert str(e) == "unknown argument 'tensor_model_paralel_size' (did you mean 'tensor_model_parallel_size'?)"
    assert e.argument == "tensor_model_paralel_size"
    e = error_of(trainplan.search, recompute_granularty="full")
    assert "did you mean 'recompute_granularity'?" in str(e)


def test_command_line_outputs_are_not_keywords():
    assert str(error_of(trainplan.search, csv=True)).startswith("unknown argument 'csv'")
    assert str(error_of(trainplan.search, explain=1)).startswith("unknown argument 'explain'")


@pytest.mark.parametrize("key,value,expected", [
    ("tp", "8", "tp takes an int, got str '8'"),
    ("tp", True, "tp takes an int, got bool True"),
    ("tp", [8], "tp takes an int, got list [8]"),
    ("sequence_parallel", 1, "sequence_parallel takes True or False, got int 1"),
    ("model", 7, "model takes a str, got int 7"),
    ("gpu_memory_gib", "80", "gpu_memory_gib takes a number, got str '80'"),
])
def test_wrong_types_name_the_argument(key, value, expected):
    e = error_of(trainplan.Job, **{**LLAMA, key: value})
    assert str(e) == expected
    assert e.argument == key


@pytest.mark.parametrize("key,flags,value", [
    ("tp", ["--tp", "--tensor-model-parallel-size"], 0),
    ("tp", ["--tp", "--tensor-model-parallel-size"], -1),
    ("tp", ["--tp", "--tensor-model-parallel-size"], 2**31),
    ("tensor_model_parallel_size", ["--tensor-model-parallel-size"], 10**30),
    ("gbs", ["--gbs", "--global-batch-size"], 2.5),
    ("gpu_memory_gib", ["--gpu-memory-gib"], float("nan")),
    ("gpu_memory_gib", ["--gpu-memory-gib"], math.inf),
    ("recompute_granularity", ["--recompute-granularity"], "ful"),
    ("gpu", ["--gpu"], "h100-sxm5-80"),
    ("cluster", ["--cluster"], "dgx-h10"),
    ("cluster", ["--cluster"], "/nonexistent/cluster.yaml"),
])
def test_values_the_cli_refuses_get_its_message(key, flags, value):
    """The same rule and words as the CLI, with the flag (any spelling of it) named by the keyword."""
    text = repr(value) if isinstance(value, float) else str(value)
    expected = cli_error("memory", "--model", "llama3-70b", flags[0], text)
    for spelling in flags:
        expected = expected.replace(spelling, key)
    e = error_of(trainplan.Job, model="llama3-70b", **{key: value})
    assert str(e) == expected
    assert e.argument == key


def test_unknown_model_names_the_argument():
    e = error_of(trainplan.Job, model="llama3-70")
    assert str(e).startswith("model: unknown model 'llama3-70' (did you mean 'llama3-70b'?)")
    assert e.argument == "model"


def test_layout_rules_name_every_keyword_involved():
    e = error_of(trainplan.Job, **LLAMA, num_gpus=64, tp=8, pp=3)
    assert str(e) == ("world size 64 (num_gpus, or num_nodes × gpus_per_node) is not a multiple of TP×PP×CP = "
                      "8×3×1 = 24 (tp, pp, context_parallel_size)")
    assert e.argument == "num_gpus"
    # The keyword the caller used names the flag, whichever spelling the core's message uses.
    e = error_of(trainplan.Job, **LLAMA, num_gpus=64, tensor_model_parallel_size=8, pipeline_model_parallel_size=3)
    assert "(tensor_model_parallel_size, pipeline_model_parallel_size, context_parallel_size)" in str(e)


def test_a_pipeline_layout_is_read_and_its_errors_name_the_keyword():
    # Megatron-Core's layout string (formulas §2.2.1): 8 layers over PP 4 and VPP 2, rank 0 holding the
    # embedding alone (Megatron's own unit-test layout).
    job = trainplan.Job(model="llama3-8b", num_layers=8, cluster="dgx-h100", num_gpus=8, tp=2, pp=4, gbs=64,
                        pipeline_model_parallel_layout="E|t|tt|t||t|t|ttL")
    assert [s["num_layers"] for s in job.memory()["memory"]["stages"]] == [0, 2, 3, 3]
    e = error_of(trainplan.Job, model="llama3-8b", num_layers=8, cluster="dgx-h100", num_gpus=8, tp=2, pp=4, gbs=64,
                 pipeline_model_parallel_layout="Ett|tt|tt|tt")
    assert str(e) == "pipeline_model_parallel_layout: the last layer must be the loss, L"
    assert e.argument == "pipeline_model_parallel_layout"


def test_launch_line_flags_keep_their_spelling():
    e = error_of(trainplan.Job.from_megatron, "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 0",
                 model="llama2-7b", cluster="dgx-a100")
    assert str(e).startswith("--tensor-model-parallel-size must be a positive integer")


def test_search_and_plan_errors():
    e = error_of(trainplan.search, model="llama2-7b", num_nodes=1, tp=["a"])
    assert "tp" in str(e) and e.argument == "tp"
    e = error_of(trainplan.search, model="llama2-7b", num_nodes=1)
    assert str(e) == "search needs the global batch: global_batch_size (gbs)"
    e = error_of(trainplan.search, model="llama2-7b", num_nodes=1, gbs=64, threads=10**6)
    assert str(e).startswith("threads must be at most") and e.argument == "threads"
    e = error_of(trainplan.plan, job="llama2-7b")
    assert str(e) == "job takes a trainplan.Job, got str" and e.argument == "job"
    e = error_of(trainplan.plan, rampup_batch_size=(32, 32))
    assert e.argument == "rampup_batch_size"
    e = error_of(trainplan.shapes, ratio="200")
    assert str(e) == "ratio expects MIN-MAX, e.g. 150-200"


def test_other_arguments():
    job = trainplan.Job()
    e = error_of(job.schedule, gpipe="yes")
    assert e.argument == "gpipe"
    e = error_of(trainplan.validate, "/nonexistent.csv")
    assert str(e) == "csv '/nonexistent.csv': no such file" and e.argument == "csv"
    e = error_of(trainplan.validate, 3)
    assert e.argument == "csv"
    with pytest.raises(trainplan.Error):
        trainplan.flags("serach")


def test_pattern_flags_take_a_count_or_megatrons_string():
    """--moe-layer-freq takes N or a pattern, --hybrid-layer-pattern a string of blocks (number_or_text)."""
    every_other = trainplan.Job(model="mixtral-8x7b", moe_layer_freq=2).model()
    pattern = trainplan.Job(model="mixtral-8x7b", moe_layer_freq="([0,1]*16)").model()
    assert every_other["model"]["parameters"] == pattern["model"]["parameters"]
    hybrid = trainplan.Job(model="nemotron-h-8b").model()
    assert hybrid["model"]["parameters"] == 8_100_852_736
    assert hybrid["model"]["hybrid_pattern"].count("M") == 24
    e = error_of(trainplan.Job, model="nemotron-h-8b", moe_layer_freq=[1, 0])
    assert e.argument == "moe_layer_freq"
    e = error_of(lambda: trainplan.Job(model="nemotron-h-8b", hybrid_layer_pattern="M*X").model())
    assert "not a layer" in str(e) and e.argument == "hybrid_layer_pattern"


def test_megatron_flags_the_cli_refuses_or_ignores_get_its_handling():
    # Issue 32: a Megatron flag the CLI refuses or ignores gave "unknown argument" in Python.
    base = dict(model="llama3-8b", cluster="dgx-h100", num_gpus=8)
    e = error_of(trainplan.Job, **base, fp16_lm_cross_entropy=True)
    assert str(e) == cli_error("memory", "--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8",
                               "--fp16-lm-cross-entropy").replace("--fp16-lm-cross-entropy", "fp16_lm_cross_entropy")
    assert e.argument == "fp16_lm_cross_entropy"
    job = trainplan.Job(**base, lr=1e-4, train_iters=1000, log_interval=10)
    assert job.time()["context"]["ignored_flags"] == ["--lr", "--train-iters", "--log-interval"]
    assert str(error_of(trainplan.Job, **base, tpp=2)) == "unknown argument 'tpp' (did you mean 'pp'?)"


def test_the_module_exports_only_its_api():
    # Issue 32: Any, Dict, json, os, re and shlex were names of the module.
    public = {name for name in vars(trainplan) if not name.startswith("_")}
    assert public == set(trainplan.__all__) - {"__version__"}
    assert set(dir(trainplan)) == set(trainplan.__all__)


def test_flag_classes_say_what_each_refused_flag_would_change():
    # Issue 29: every Megatron flag classified, and each refused one with what it would change.
    classes = trainplan.flag_classes()
    assert "--tensorboard-dir" in classes["ignored"]
    graphs = next(g for g in classes["refused"] if "--cuda-graph-impl" in g["flags"])
    assert "CUDA graphs" in graphs["would_change"]
    assert all(g["would_change"] and g["flags"] for g in classes["refused"])
    assert {"flag": "--checkpoint-num-layers", "harmless_value": "1",
            "would_change": "how many layers Megatron-DeepSpeed checkpoints as one chunk"} in classes["ignored_at_value"]
    # A keyword spelling a refused flag raises the CLI's message, which names what it would change.
    e = error_of(trainplan.Job, model="llama3-8b", num_gpus=8, cuda_graph_impl="local")
    assert e.argument == "cuda_graph_impl" and graphs["would_change"] in str(e)
