#!/usr/bin/env python3
"""An adversarial campaign over every way into trainplan (issue 31): the commands with hostile flags and
values, hostile files (FIFOs, devices, directories, link loops, YAML alias bombs, corrupted configs and
logs), `logs --follow` on files that rotate and pipes that stall, the Python package with hostile keyword
arguments, and trainplan-bench under injected hangs and slowdowns.

Every run must end by itself within its time limit, with exit status 0, 2 (bad input, said on stderr as
"trainplan: error: ..."), 3 (a stalled log; the bench's hung rank) or 1 (the bench's slow rank); never a
signal, never 70 (an internal error), never a NaN or an infinity printed with exit 0, never exit 0 with
the output lost. Usage:

    tools/adversarial.py BUILD_DIR [--runs N] [--seed S] [--jobs J] [--no-bench]

It prints what it ran and every violation with the command that reproduces it; exit 1 when any.
"""
import argparse
import concurrent.futures as cf
import json
import math
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Every log excerpt the tests read, the real ones in tests/data/logs/real/ included (regular files only).
LOG_EXCERPTS = sorted(os.path.join(d, f) for d, _, names in os.walk(os.path.join(ROOT, "tests/data/logs"))
                      for f in names if not f.endswith(".md"))

MODELS = ["llama3-8b", "llama2-70b", "mixtral-8x7b", "gpt3-175b", "bloom-176b", "gemma2-27b", "qwen3-30b-a3b",
          "deepseek-v3", "nemotron-h-8b", "gpt-oss-20b", "llama4-scout"]
CLUSTERS = ["dgx-a100", "dgx-h100", "jean-zay-a100", "gb200-nvl72", "aws-p4d", "aws-p3dn"]
NUMBERS = ["0", "-1", "1", "2", "3", "7", "8", "64", "1e-307", "1e-300", "5e-324", "1e300", "1.7e308", "1e18", "9e15",
           "nan", "inf", "-inf", "0x10", "1e", "", " ", "4611686018427387904", "99999999999999999999", "0.5", "-0.0",
           "1,2", "1e6", "2048", "8192"]
NUMERIC_FLAGS = ["--tp", "--pp", "--cp", "--ep", "--etp", "--dp", "--mbs", "--gbs", "--num-gpus", "--num-nodes",
                 "--gpus-per-node", "--seq-length", "--num-layers", "--hidden-size", "--num-attention-heads",
                 "--ffn-hidden-size", "--vocab-size", "--vpp", "--zero-stage", "--recompute-num-layers",
                 "--gpu-peak-tflops", "--gpu-memory-gib", "--gpu-memory-bandwidth-gb-per-s",
                 "--intra-node-bandwidth-gb-per-s", "--nic-bandwidth-gbit-per-s", "--intra-node-latency-us",
                 "--inter-node-latency-us", "--cuda-context-mib", "--nccl-buffer-mib", "--allocator-reserve-fraction",
                 "--host-overhead-ms", "--zero3-fetch-overhead-us", "--num-experts", "--moe-router-topk",
                 "--window-size", "--mtp-num-layers", "--decoder-first-pipeline-num-layers", "--bucket-size-bytes",
                 "--num-distributed-optimizer-instances", "--moe-load-imbalance", "--attention-dropout"]
SWITCHES = ["--sequence-parallel", "--use-distributed-optimizer", "--bf16", "--fp16", "--fp32", "--use-flash-attn",
            "--overlap-grad-reduce", "--overlap-param-gather", "--tp-comm-overlap", "--embedding-as-stage",
            "--offload-optimizer", "--fp8-param-gather", "--swiglu", "--disable-bias-linear"]
TEXT_FLAGS = {"--framework": ["megatron", "deepspeed", "fsdp", "x", ""],
              "--recompute-granularity": ["none", "selective", "full", "bogus"],
              "--fp8-format": ["e4m3", "hybrid", "nvfp4"], "--fp8-recipe": ["mxfp8", "delayed", "?"],
              "--moe-token-dispatcher-type": ["alltoall", "allgather", "flex", "a2a"],
              "--cp-comm-type": ["p2p", "all_gather", "a2a"], "--rank-order": ["tp-cp-ep-dp-pp", "pp-dp", "x"],
              "--optimizer": ["adam", "sgd", "lion"], "--grad-accum-dtype": ["fp32", "bf16", "fp8"]}
PLAN_FLAGS = ["--train-tokens", "--train-samples", "--train-iters", "--iteration-s", "--tflops-per-gpu",
              "--model-params", "--checkpoint-bytes-per-param", "--checkpoint-write-gb-per-s", "--gpu-mtbf-hours",
              "--restart-minutes", "--eval-interval", "--eval-cost-iterations", "--allocation-gpu-hours",
              "--start-iteration", "--flops-per-param-token"]
# A non-finite number as C and fmt print it ("nan", "-nan", "inf"), not a word such as "NaN iterations".
NON_FINITE_TEXT = re.compile(r"(?<![A-Za-z_])-?(nan|inf)(?![A-Za-z_])")


def non_finite(text):
    """The first non-finite number printed: in a JSON document (NaN, Infinity), else in text."""
    stripped = text.strip()
    if stripped.startswith("{"):
        found = []

        def walk(v):
            if isinstance(v, float) and not math.isfinite(v):
                found.append(repr(v))
            elif isinstance(v, dict):
                for x in v.values():
                    walk(x)
            elif isinstance(v, list):
                for x in v:
                    walk(x)
        try:
            for line in stripped.splitlines() if "\n{" in stripped else [stripped]:
                walk(json.loads(line))
        except ValueError:
            return "output that is not JSON"
        return found[0] if found else None
    # What the output quotes from its input ('1.5e-nan05', the field 'number of nan iterations') is not a
    # figure it printed.
    figures = re.sub(r"'[^'\n]*'", "''", text)
    m = NON_FINITE_TEXT.search(figures)
    return m.group(0) if m else None


class campaign:
    def __init__(self, build, seed, workdir):
        self.bin = os.path.join(build, "bin", "trainplan")
        self.bench = os.path.join(build, "bin", "trainplan-bench")
        self.python = os.path.join(build, "python")
        self.rng = random.Random(seed)
        self.work = workdir
        self.counts = {}
        self.violations = []

    # ---- inputs --------------------------------------------------------------------------------------
    def special_files(self):
        w = self.work
        files = {}
        fifo = os.path.join(w, "fifo.yaml")
        if not os.path.exists(fifo):
            os.mkfifo(fifo)
        files["fifo"] = fifo
        zero = os.path.join(w, "zero.yaml")
        if not os.path.lexists(zero):
            os.symlink("/dev/zero", zero)
        files["dev_zero"] = zero
        loop_a, loop_b = os.path.join(w, "loop_a.yaml"), os.path.join(w, "loop_b.yaml")
        if not os.path.lexists(loop_a):
            os.symlink(loop_b, loop_a)
            os.symlink(loop_a, loop_b)
        files["loop"] = loop_a
        files["dir"] = w
        files["missing"] = os.path.join(w, "missing.yaml")
        big = os.path.join(w, "big.yaml")
        if not os.path.exists(big):
            with open(big, "w") as f:
                f.write("name: x\n" + "# padding\n" * 600000)
        files["big"] = big
        for name, text in {
            "alias_cycle.yaml": "&a [*a]\n",
            "alias_map.yaml": "name: x\nmoe: &m {num_experts: *m}\n",
            "laughs.yaml": "a0: &a0 [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
                f"a{i}: &a{i} [" + ",".join([f"*a{i-1}"] * 10) + "]\n" for i in range(1, 10)),
            "empty.yaml": "",
            "nul.yaml": "name: x\x00\n",
            "bad_utf8.yaml": "name: \xff\n",
        }.items():
            p = os.path.join(w, name)
            with open(p, "w", encoding="latin-1") as f:
                f.write(text)
            files[name] = p
        return files

    def corrupted(self, path, name):
        data = open(path, "rb").read()
        b = bytearray(data)
        for _ in range(self.rng.randint(1, 8)):
            if not b:
                break
            i = self.rng.randrange(len(b))
            op = self.rng.random()
            if op < 0.4:
                b[i] = self.rng.randrange(256)
            elif op < 0.7:
                del b[i:i + self.rng.randint(1, 20)]
            else:
                b[i:i] = self.rng.choice([b"1e308", b"-1", b"nan", b"&a", b"*a", b"{", b"\n", b"0"])
        out = os.path.join(self.work, f"c{self.rng.randrange(10**9)}_{name}")
        with open(out, "wb") as f:
            f.write(bytes(b))
        return out

    def job_args(self):
        a = ["--model", self.rng.choice(MODELS), "--cluster", self.rng.choice(CLUSTERS)]
        a += ["--num-gpus", self.rng.choice(["8", "16", "64", "256", "1024"])]
        for _ in range(self.rng.randint(0, 6)):
            r = self.rng.random()
            if r < 0.5:
                a += [self.rng.choice(NUMERIC_FLAGS), self.rng.choice(NUMBERS)]
            elif r < 0.75:
                a.append(self.rng.choice(SWITCHES))
            else:
                flag = self.rng.choice(list(TEXT_FLAGS))
                a += [flag, self.rng.choice(TEXT_FLAGS[flag])]
        return a

    def generate(self, files):
        """One run: (kind, argv, stdin text or None, timeout)."""
        r = self.rng.random()
        cmd = self.rng.choice(["memory", "comm", "time", "schedule", "model"])
        if r < 0.55:
            return "flags", [self.bin, cmd] + self.job_args() + self.output_args(), None, 20
        if r < 0.65:
            return "plan", [self.bin, "plan"] + self.plan_args() + self.output_args(), None, 20
        if r < 0.70:
            shapes = ["shapes", "--target-params", self.rng.choice(NUMBERS + ["175e9", "1e30", "1e15"]), "--model",
                      self.rng.choice(MODELS), "--gbs", self.rng.choice(["256", "0", "-5", "1e12"])]
            return "shapes", [self.bin] + shapes, None, 30
        if r < 0.80:
            kind = self.rng.choice(["--model", "--cluster", "--calibration"])
            target = self.rng.choice(list(files.values()))
            if self.rng.random() < 0.5:
                source = os.path.join(ROOT, self.rng.choice(["examples/my-model.yaml", "examples/my-cluster.yaml",
                                                             "tests/data/hf/deepseek_v3.json"]))
                if os.path.exists(source):
                    target = self.corrupted(source, os.path.basename(source))
            base = ["--model", "llama3-8b"] if kind != "--model" else []
            return "files", [self.bin, cmd, *base, kind, target, "--num-gpus", "8"], None, 20
        if r < 0.83:
            target = self.rng.choice(list(files.values()) + [self.corrupted(os.path.join(ROOT, "tests/data/bloom-final-measurements.csv"), "v.csv")])
            return "validate", [self.bin, "validate", "--csv", target], None, 30
        if r < 0.93:
            log = self.rng.choice(LOG_EXCERPTS)
            target = self.corrupted(log, "l.log") if self.rng.random() < 0.7 else self.rng.choice(list(files.values()))
            extra = self.rng.choice([[], ["--now", self.rng.choice(["now", "2025-02-30 10:00:00", "2000-01-01 00:00:00", "x"])],
                                     ["--json"], ["--preset", "bloom-176b-production"]])
            return "logs", [self.bin, "logs", target, *extra], None, 20
        if r < 0.95:
            out = self.rng.choice(["/dev/null", self.work, os.path.join(self.work, "loop_a.yaml"), "",
                                   os.path.join(self.work, "page.html"), "/proc/version"])
            return "html", [self.bin, cmd, "--preset", "bloom-176b-production", "--html", out], None, 20
        if r < 0.97:
            return "full", [self.bin, self.rng.choice(["models", "gpus", "clusters", "memory", "time"])], "/dev/full", 20
        return "python", [sys.executable, "-c", self.python_snippet()], None, 30

    def output_args(self):
        return self.rng.choice([[], [], ["--json"], ["--format", "csv"], ["--format", "x"]])

    def plan_args(self):
        a = self.rng.choice([["--preset", "bloom-176b-production"],
                             ["--tflops-per-gpu", self.rng.choice(NUMBERS), "--model-params", self.rng.choice(NUMBERS),
                              "--num-gpus", self.rng.choice(["350", "0", "16777217"])]])
        for _ in range(self.rng.randint(1, 4)):
            a += [self.rng.choice(PLAN_FLAGS), self.rng.choice(NUMBERS)]
        return a

    def python_snippet(self):
        kinds = [("tp", self.rng.choice([2, 3, -1, 2.5, "2", None, True, 10**30])),
                 ("fp8_format", self.rng.choice(["hybrid", "e4m3", 3, "bogus"])),
                 ("model", self.rng.choice(["llama3-8b", "\\ud800", "x" * 5000, os.path.join(self.work, "alias_cycle.yaml"),
                                            os.path.join(self.work, "fifo.yaml")])),
                 ("gpu_peak_tflops", self.rng.choice([1e-307, float("nan"), float("inf"), 300, -1])),
                 ("num_gpus", self.rng.choice([8, 0, 2**40, "8"])),
                 ("recompute_granularity", self.rng.choice(["full", "none", 5]))]
        chosen = dict(self.rng.sample(kinds, self.rng.randint(1, len(kinds))))
        chosen.setdefault("model", "llama3-8b")
        chosen.setdefault("num_gpus", 8)
        def literal(v):
            if isinstance(v, float) and not math.isfinite(v):
                return f"float({str(v)!r})"
            if isinstance(v, str) and v.startswith("\\ud"):
                return f"'{v}'"
            return repr(v)
        args = ", ".join(f"{k}={literal(v)}" for k, v in chosen.items())
        method = self.rng.choice(["memory", "time", "comm", "model", "schedule"])
        return ("import json, math, sys\n"
                f"sys.path.insert(0, {self.python!r})\n"
                "import trainplan\n"
                "try:\n"
                f"    out = trainplan.Job({args}).{method}()\n"
                "except trainplan.Error as e:\n"
                "    print('refused:', e); sys.exit(2)\n"
                "text = json.dumps(out)\n"
                "assert 'NaN' not in text and 'Infinity' not in text, 'non-finite'\n"
                "print(text[:200])\n")

    # ---- a run ---------------------------------------------------------------------------------------
    def run_one(self, kind, argv, stdout_path, limit):
        env = dict(os.environ, TZ=self.rng.choice(["UTC", "America/New_York", "Asia/Tokyo"]))
        out = open(stdout_path, "w") if stdout_path else subprocess.PIPE
        start = time.monotonic()
        try:
            p = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE, timeout=limit, env=env, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return kind, argv, "hang", f"no answer within {limit} s"
        finally:
            if stdout_path:
                out.close()
        took = time.monotonic() - start
        err = p.stderr.decode("utf-8", "replace")
        text = "" if stdout_path else p.stdout.decode("utf-8", "replace")
        rc = p.returncode
        if rc < 0:
            return kind, argv, "signal", f"killed by signal {-rc}: {err[-300:]}"
        if rc == 70:
            return kind, argv, "internal", err[-300:]
        if kind == "full" and rc == 0:
            return kind, argv, "lost output", "exit 0 writing to /dev/full"
        allowed = {0, 2, 3} | ({74} if kind == "full" else set())
        if rc not in allowed:
            return kind, argv, "status", f"exit {rc}: {err[-300:]}"
        if rc == 2 and kind != "python" and not err.startswith("trainplan: error: "):
            return kind, argv, "message", f"exit 2 without 'trainplan: error:': {err[:200]!r}"
        if rc == 0 and kind not in ("full", "html", "python"):  # the Python snippet checks its own output
            if not text.strip():
                return kind, argv, "lost output", "exit 0 with nothing printed"
            if (bad := non_finite(text)) is not None:
                return kind, argv, "non-finite", bad + " in the output"
        return kind, argv, None, f"{took:.3f} s"

    # ---- the bench -----------------------------------------------------------------------------------
    def bench_runs(self, count):
        mpirun = shutil.which("mpirun")
        if mpirun is None or not os.path.exists(self.bench):
            return []
        env_flags = ["--oversubscribe", "--allow-run-as-root"] if os.geteuid() == 0 else ["--oversubscribe"]
        runs = []
        for i in range(count):
            fault = self.rng.choice(["--inject-hang 1", "--inject-slowdown 1:1.5", "", "--inject-hang 0"])
            runs.append(("bench", [mpirun, *env_flags, "-np", "2", self.bench, "health", "--timeout-s", "5",
                                   *fault.split()], None, 90))
        return runs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--runs", type=int, default=50000)
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--bench", type=int, default=8, help="trainplan-bench fault runs under mpirun")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="trainplan-adversarial-")
    c = campaign(os.path.abspath(args.build), args.seed, work)
    files = c.special_files()
    runs = [c.generate(files) for _ in range(args.runs)] + c.bench_runs(args.bench)
    counts, violations = {}, []
    t0 = time.monotonic()
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = []
        for kind, argv, stdout_path, limit in runs:
            if stdout_path == "/dev/full":
                futures.append(pool.submit(c.run_one, kind, argv, "/dev/full", limit))
            else:
                futures.append(pool.submit(c.run_one, kind, argv, None, limit))
        for n, f in enumerate(cf.as_completed(futures), 1):
            kind, argv, problem, detail = f.result()
            if kind == "bench" and problem == "status" and detail.startswith(("exit 1", "exit 3")):
                problem = None  # the bench names a slow rank (1) or a hung one (3)
            counts[kind] = counts.get(kind, 0) + 1
            if problem:
                violations.append((kind, problem, detail, argv))
            if n % 5000 == 0:
                print(f"{n} runs, {len(violations)} violations, {time.monotonic() - t0:.0f} s", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    print(f"{len(runs)} runs in {time.monotonic() - t0:.0f} s: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    by = {}
    for kind, problem, detail, argv in violations:
        by[problem] = by.get(problem, 0) + 1
    print("violations: " + (", ".join(f"{k} {v}" for k, v in sorted(by.items())) or "none"))
    for kind, problem, detail, argv in violations[:40]:
        print(f"- {problem} ({kind}): {detail}\n    {' '.join(repr(a) if ' ' in a or not a else a for a in argv)}")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
