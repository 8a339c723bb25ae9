"""How many days and GPU-hours? The whole campaign for a token budget: ramp-up, checkpoints, expected
failures and the GPU-hours against an allocation.

    PYTHONPATH=build/python python3 examples/python/campaign.py
"""
import trainplan

job = trainplan.Job(model="llama3-8b", cluster="dgx-h100", num_nodes=4, tp=2, pp=1, mbs=1, gbs=512, seq_length=8192,
                    use_distributed_optimizer=True, recompute_granularity="selective")
num_gpus = job.time()["context"]["parallel"]["num_gpus"]
plan = trainplan.plan(job, train_tokens=2e12, allocation_gpu_hours=200_000)["plan"]
print(f"{plan['total_iterations']:,} iterations, {plan['train_days']:.1f} days on {num_gpus} GPUs, "
      f"{plan['gpu_hours']:,.0f} GPU-hours ({plan['expected_failures']:.1f} failures expected, "
      f"goodput {plan['goodput']:.1%})")
if not plan["layout_fits"]:
    print("warning: the layout does not fit in GPU memory (job.memory() says where)")
print("the allocation is enough" if plan["allocation_sufficient"] else "the allocation is NOT enough")
