"""ZeRO-2 or ZeRO-3? The same DeepSpeed job under both: memory per GPU and time per iteration.

    PYTHONPATH=build/python python3 examples/python/zero2_vs_zero3.py
"""
import trainplan

GIB = 2**30

for stage in (2, 3):
    job = trainplan.Job(model="llama2-13b", cluster="dgx-a100", num_nodes=4, framework="deepspeed",
                        zero_stage=stage, mbs=2, gbs=256, recompute_granularity="full")
    memory = job.memory()["memory"]
    time = job.time()["time"]
    print(f"ZeRO-{stage}: {memory['peak_reserved_bytes'] / GIB:5.1f} GiB per GPU "
          f"({'fits' if memory['fits'] else 'does not fit'}), {time['iteration_s']:.2f} s/iteration, "
          f"{time['tflops_per_gpu']:.0f} TFLOP/s per GPU, exposed DP {time['breakdown_s']['dp_comm']:.2f} s")
