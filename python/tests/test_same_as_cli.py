"""Every function of the package against the CLI's --json output for the same inputs: equal, key for key
(one source of truth: the same result structs, the same serialization). Only the wall-clock `elapsed_s`
of the search and shapes differs between two runs and is dropped."""
import pytest

import trainplan
from conftest import run_cli

JOBS = [
    # BLOOM-176B's production layout (the preset), a Megatron-Core Llama 3 70B layout on H100, a Mixtral
    # layout with expert parallelism, and ZeRO-3 under DeepSpeed.
    dict(preset="bloom-176b-production"),
    dict(model="llama3-70b", cluster="dgx-h100", num_gpus=64, tp=8, pp=2, sequence_parallel=True,
         use_distributed_optimizer=True, gbs=512, seq_length=8192),
    dict(model="mixtral-8x7b", cluster="dgx-h100", num_gpus=64, tp=2, pp=4, ep=8, mbs=1, gbs=256,
         sequence_parallel=True, recompute_granularity="selective"),
    dict(model="llama2-7b", cluster="dgx-a100", num_nodes=2, framework="deepspeed", zero_stage=3, mbs=2, gbs=128),
    dict(model="llama3-70b", cluster="dgx-h100", num_gpus=128, tp=8, pp=4, vpp=5, sequence_parallel=True, gbs=256),
]


def without_timing(value):
    if isinstance(value, dict):
        return {k: without_timing(v) for k, v in value.items() if k != "elapsed_s"}
    if isinstance(value, list):
        return [without_timing(v) for v in value]
    return value


@pytest.mark.parametrize("kwargs", JOBS, ids=lambda k: k.get("model", k.get("preset")))
@pytest.mark.parametrize("command", ["model", "memory", "comm", "time", "schedule"])
def test_job_results_equal_the_cli(kwargs, command):
    job = trainplan.Job(**kwargs)
    assert getattr(job, command)() == run_cli(command, *job.args)


def test_gpipe_schedule_equals_the_cli():
    job = trainplan.Job(preset="bloom-176b-production")
    assert job.schedule(gpipe=True) == run_cli("schedule", "--gpipe", *job.args)
    assert job.schedule(gpipe=True) != job.schedule()


def test_job_args_are_the_cli_flags():
    job = trainplan.Job(model="llama3-70b", num_gpus=64, tp=8, sequence_parallel=True, bf16=False, gbs=512.0)
    # snake_case keywords become the flag the user spelled; a False switch and whole floats as ints.
    assert job.args == ["--model", "llama3-70b", "--num-gpus", "64", "--tp", "8", "--sequence-parallel",
                        "--gbs", "512"]
    assert trainplan.Job.from_args(job.args).time() == job.time()


def test_from_megatron_equals_the_cli_launch_line():
    line = ("torchrun --nproc_per_node 8 --nnodes 4 pretrain_gpt.py --tensor-model-parallel-size 4 "
            "--pipeline-model-parallel-size 2 --num-layers 32 --vocab-size 32000 --hidden-size 4096 --num-attention-heads 32 "
            "--seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 256 "
            "--bf16 --sequence-parallel --lr 3e-4 --train-iters 1000")
    job = trainplan.Job.from_megatron(line, cluster="dgx-a100")
    result = job.memory()
    assert result == run_cli("memory", "--cluster", "dgx-a100", "--", *line.split())
    assert result["context"]["from_launch_line"] is True
    assert "--lr" in " ".join(result["context"]["ignored_flags"])
    # A bare argument list (no launcher) and a list of words are read the same way.
    bare = trainplan.Job.from_megatron(line.split("pretrain_gpt.py ")[1], cluster="dgx-a100", num_gpus=32)
    assert bare.time()["time"] == job.time()["time"]


def test_from_files_equals_the_cli(source_dir):
    model = source_dir / "examples" / "my-model.yaml"
    cluster = source_dir / "examples" / "my-cluster.yaml"
    job = trainplan.Job.from_files(model, cluster, tp=2, gbs=64)
    assert job.memory() == run_cli("memory", "--model", str(model), "--cluster", str(cluster), "--tp", "2",
                                   "--gbs", "64")
    hf = source_dir / "tests" / "data" / "hf" / "qwen2-7b.json"
    assert trainplan.Job(model=hf, tp=2, seq_length=4096).model() == run_cli(
        "model", "--model", str(hf), "--tp", "2", "--seq-length", "4096")


def test_bridge_config_equals_the_cli(source_dir):
    # A Megatron-Bridge ConfigContainer dump read through the keyword, as --bridge-config reads it.
    config = source_dir / "tests" / "data" / "launch" / "bridge" / "gpt_oss_120b_pretrain_h100_fp8_mx_v1.yaml"
    job = trainplan.Job(bridge_config=config, cluster="dgx-h100", num_gpus=64)
    assert job.time() == run_cli("time", "--bridge-config", str(config), "--cluster", "dgx-h100", "--num-gpus", "64")
    assert job.time()["context"]["parallel"]["pp"] == 4


def test_search_equals_the_cli():
    # One thread: with several, which layouts past the top K the bound lets through depends on timing.
    kwargs = dict(model="llama2-7b", cluster="dgx-a100", num_nodes=2, gbs=128, tp=[1, 2, 4], recompute=["none", "full"],
                  threads=1)
    args = ["--model", "llama2-7b", "--cluster", "dgx-a100", "--num-nodes", "2", "--gbs", "128", "--tp", "1,2,4",
            "--recompute", "none,full", "--threads", "1"]
    result = trainplan.search(**kwargs)
    assert without_timing(result) == without_timing(run_cli("search", *args))
    assert result["search"]["candidates"], "the search found layouts"


def test_default_search_equals_the_cli():
    assert without_timing(trainplan.search(threads=1)) == without_timing(run_cli("search", "--threads", "1"))


def test_shapes_equals_the_cli():
    kwargs = dict(target_params=7e9, model="llama2-7b", cluster="dgx-a100", num_nodes=1, gbs=64, max_shapes=3,
                  ratio=(100, 200), threads=1)
    args = ["--target-params", "7e9", "--model", "llama2-7b", "--cluster", "dgx-a100", "--num-nodes", "1",
            "--gbs", "64", "--max-shapes", "3", "--ratio", "100-200", "--threads", "1"]
    assert without_timing(trainplan.shapes(**kwargs)) == without_timing(run_cli("shapes", *args))


def test_plan_equals_the_cli():
    job = trainplan.Job(model="llama3-8b", cluster="dgx-h100", num_nodes=2, tp=2, gbs=256, seq_length=4096)
    result = trainplan.plan(job, train_tokens=1e12, rampup_batch_size=(32, 32, 1e6))
    assert result == run_cli("plan", "--train-tokens", "1e12", "--rampup-batch-size", "32", "32", "1000000", *job.args)
    given = trainplan.plan(train_tokens=350e9, iteration_s=105, num_gpus=384, gbs=2048, seq_length=2048,
                           model_params=176e9)
    assert given == run_cli("plan", "--train-tokens", "350e9", "--iteration-s", "105", "--num-gpus", "384",
                            "--gbs", "2048", "--seq-length", "2048", "--model-params", "176e9")


def test_validate_equals_the_cli(tmp_path):
    assert trainplan.validate() == run_cli("validate")
    csv = tmp_path / "mine.csv"
    with open(trainplan_source("tests/data/bloom-final-measurements.csv")) as f:
        csv.write_text(f.read())
    assert trainplan.validate(csv) == run_cli("validate", "--csv", str(csv))
    # Leave-one-source-out over BLOOM's tables (the A100 constants' fit), as `validate --loso` gives it.
    loso = trainplan.validate(loso=True)
    assert loso == run_cli("validate", "--loso")
    assert len(loso["validation"]["leave_one_source_out"]["folds"]) == 10


def trainplan_source(path):
    from conftest import SOURCE_DIR
    return SOURCE_DIR / path


@pytest.mark.parametrize("name", ["models", "gpus", "clusters"])
def test_catalogs_equal_the_cli(name):
    assert getattr(trainplan, name)() == run_cli(name)


def test_version_and_schema():
    result = trainplan.Job().time()
    assert result["schema_version"] == trainplan.schema_version
    assert result["context"]["version"] == trainplan.__version__
