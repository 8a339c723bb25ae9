"""The Python API's cost per call for one layout, against the native call it wraps (the same C++ compute
and JSON serialization, called from Python without parsing the JSON). Reported in the README; compare the
native column with build/bin/trainplan_perf --benchmark_filter=output_json.

    PYTHONPATH=build/python python3 python/tools/time_api.py
"""
import timeit

import trainplan


def per_call_us(fn, number=2000):
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def main():
    job = trainplan.Job(preset="bloom-176b-production")
    print(f"{'call':<34}{'Python API':>12}{'native':>10}{'ratio':>8}")
    for name in ("time", "memory"):
        api = per_call_us(getattr(job, name))
        native = per_call_us(getattr(job._job, name))
        print(f"{'Job(preset=…).' + name + '()':<34}{api:>10.1f}us{native:>8.1f}us{api / native:>8.2f}")
    args = dict(model="llama3-70b", cluster="dgx-h100", num_gpus=64, tp=8, pp=2, sequence_parallel=True, gbs=512)
    print(f"{'Job(model=llama3-70b, …)':<34}{per_call_us(lambda: trainplan.Job(**args)):>10.1f}us")


if __name__ == "__main__":
    main()
