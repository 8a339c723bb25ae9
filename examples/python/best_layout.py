"""The best layout for my cluster: every valid layout ranked by time per iteration, top five shown
(as a pandas DataFrame when pandas is installed).

    PYTHONPATH=build/python python3 examples/python/best_layout.py
"""
import trainplan

result = trainplan.search(model="llama3-8b", cluster="dgx-h100", num_nodes=2, gbs=256, seq_length=8192)
candidates = result["search"]["candidates"]
columns = ["dp", "tp", "pp", "cp", "vpp", "mbs", "recompute", "zero_stage", "iteration_s", "mfu"]
try:
    import pandas

    print(pandas.DataFrame(candidates)[columns].head(5).to_string(index=False))
except ImportError:
    for c in candidates[:5]:
        print("  ".join(f"{k}={c[k]:.3g}" if isinstance(c[k], float) else f"{k}={c[k]}" for k in columns))
best = candidates[0]
print(f"best: DP {best['dp']} × TP {best['tp']} × PP {best['pp']}, {best['iteration_s']:.2f} s/iteration, "
      f"MFU {best['mfu']:.0%}")
