"""Does my layout fit? A pre-launch check: memory per GPU for every pipeline stage against the GPU's
usable memory. Exit status 1 when a stage does not fit, so a launcher can stop before it allocates nodes.

    PYTHONPATH=build/python python3 examples/python/does_my_layout_fit.py
"""
import sys

import trainplan

GIB = 2**30

job = trainplan.Job(model="llama3-70b", cluster="dgx-h100", num_gpus=64, tp=8, pp=2, sequence_parallel=True,
                    use_distributed_optimizer=True, mbs=1, gbs=512, seq_length=8192)
memory = job.memory()["memory"]
for stage in memory["stages"]:
    print(f"stage {stage['stage']}: {stage['reserved_bytes'] / GIB:6.1f} GiB of "
          f"{memory['capacity_bytes'] / GIB:.1f} GiB ({stage['headroom_bytes'] / GIB:+.1f} GiB headroom)")
print("fits" if memory["fits"] else "DOES NOT FIT")
sys.exit(0 if memory["fits"] else 1)
