#!/usr/bin/env python3
"""Writes the synthetic logs of tests/data/logs (README.md says what each is and where its format comes
from). Deterministic: run it again and the files do not change. bloom_eta.log and bloom_spike.log are not
generated: they are lines copied from ../shared/reference/seeds/004 (the BLOOM-176B chronicles)."""
import datetime
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def jitter(i, amplitude):
    """A deterministic wobble in [-amplitude, amplitude] (no random module: stable across Pythons)."""
    return amplitude * math.sin(1.7 * i + 0.3 * math.cos(0.9 * i))


def megatron_lm_line(t, it, total, samples, ms, tflops, lr, gbs, loss, scale, gnorm, skipped=0, nan=0):
    # megatron/training/training.py training_log (Megatron-LM core, 2024-2025)
    s = f" [{t.strftime('%Y-%m-%d %H:%M:%S')}]"
    s += ' iteration {:8d}/{:8d} |'.format(it, total)
    s += ' consumed samples: {:12d} |'.format(samples)
    s += ' elapsed time per iteration (ms): {:.1f} |'.format(ms)
    s += f' throughput per GPU (TFLOP/s/GPU): {tflops:.1f} |'
    s += f' learning rate: {lr:.6E} |'
    s += ' global batch size: {:5d} |'.format(gbs)
    s += ' {}: {:.6E} |'.format('lm loss', loss)
    s += f' loss scale: {scale:.1f} |'
    s += f' grad norm: {gnorm:.3f} |'
    s += ' number of skipped iterations: {:3d} |'.format(skipped)
    s += ' number of nan iterations: {:3d} |'.format(nan)
    return s


def megatron_deepspeed_line(it, total, samples, tokens, sec, lr, gbs, loss, gnorm, tflops):
    # bigscience-workshop/Megatron-DeepSpeed megatron/training.py training_log, as the seeds print it
    s = ' iteration {:8d}/{:8d} |'.format(it, total)
    s += ' consumed samples: {:12d} |'.format(samples)
    s += ' consumed tokens: {:12d} |'.format(tokens)
    s += ' elapsed time per iteration (s): {:.2f} |'.format(sec)
    s += ' learning rate: {:.3E} |'.format(lr)
    s += ' global batch size: {:5d} |'.format(gbs)
    s += ' lm loss: {:.6E} |'.format(loss)
    s += ' grad norm: {:.3f} |'.format(gnorm)
    s += ' num zeros: 0.0 |'
    s += ' number of skipped iterations: {:3d} |'.format(0)
    s += ' number of nan iterations: {:3d} |'.format(0)
    s += ' samples per second: {:.3f} |'.format(gbs / sec)
    s += ' TFLOPs: {:.2f} |'.format(tflops)
    return '[default7]:' + s


def write(name, lines, newline='\n'):
    with open(os.path.join(HERE, name), 'w', newline='') as f:
        f.write(newline.join(lines) + '\n')


def megatron_lm():
    """60 iterations of 1.5 s; a checkpoint save before 31 and an evaluation before 41 each make the
    next line slow; the loss scale halves at 50 (fp16)."""
    t = datetime.datetime(2025, 8, 1, 7, 0, 0)
    lines = ['using world size: 64, data-parallel size: 8, context-parallel size: 1, tensor-model-parallel size: 4',
             '> initializing torch distributed ...']
    scale = 65536.0
    for it in range(1, 61):
        ms = 1500.0 * (1 + jitter(it, 0.004))
        if it == 1:
            ms = 9000.0
        if it in (31, 41):
            ms = 2600.0
        if it == 50:
            scale /= 2
        t += datetime.timedelta(milliseconds=ms)
        loss = 9.0 - 0.03 * it + jitter(it, 0.01)
        lines.append(megatron_lm_line(t, it, 100, it * 256, ms, 400.0 * 1500 / ms, 3e-4, 256, loss, scale, 1.2 + jitter(it, 0.1)))
        if it == 30:  # megatron/training/checkpointing.py save_checkpoint
            lines.append('saving checkpoint at iteration      30 to /ckpt in torch_dist format')
            lines.append('  successfully saved checkpoint from iteration      30 to /ckpt [ t 1/4, p 1/1 ]')
        if it == 40:  # megatron/training/training.py evaluate_and_print_results
            lines.append('-' * 100)
            lines.append(' validation loss at iteration 40 | lm loss value: 6.123456E+00 | lm loss PPL: 4.56E+02 | ')
            lines.append('-' * 100)
    write('megatron_lm.log', lines)


def restart():
    """Megatron-LM: iterations 1-20 every 2 s, a crash, 10 minutes later a restart that resumes from the
    checkpoint of iteration 15 and logs 16-30."""
    t = datetime.datetime(2025, 8, 2, 12, 0, 0)
    lines = ['> initializing torch distributed ...']
    for it in range(1, 21):
        t += datetime.timedelta(seconds=2)
        lines.append(megatron_lm_line(t, it, 1000, it * 64, 2000.0, 300.0, 1e-4, 64, 5.0, 1.0, 0.8))
    lines.append('[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout')
    t += datetime.timedelta(minutes=10)
    lines.append('> initializing torch distributed ...')
    lines.append(' loading checkpoint from /ckpt at iteration 15')
    for it in range(16, 31):
        t += datetime.timedelta(seconds=2)
        lines.append(megatron_lm_line(t, it, 1000, it * 64, 2000.0, 300.0, 1e-4, 64, 5.0, 1.0, 0.8))
    write('restart.log', lines)


def slow_gpu():
    """Synthetic, from bloom-final-measurements.csv's last two rows (seeds/004): BLOOM-176B at 105.17 s and
    149.09 TFLOPs up to iteration 42781, one GPU slow from 42782 at 111.14 s and 141.09 TFLOPs; ±0.4%
    deterministic jitter. 80 lines each side."""
    lines = []
    for it in range(42702, 42862):
        slow = it >= 42782
        base_s, base_tf = (111.14, 141.09) if slow else (105.17, 149.09)
        sec = base_s * (1 + jitter(it, 0.004))
        tflops = base_tf * base_s / sec
        samples = 9841584 + (it - 12695) * 2048
        lines.append(megatron_deepspeed_line(it, 115311, samples, samples * 2048, sec, 5.0e-5, 2048, 2.1 + jitter(it, 0.01),
                                             0.2 + jitter(it, 0.02), tflops))
    write('bloom_slow_gpu.log', lines)


def nemo2():
    # nemo/lightning/pytorch/callbacks/progress_printer.py ProgressPrinter.format_string
    lines = ['Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/64']
    for it in range(10, 210, 10):
        metrics = {'lr': 1.5e-05, 'global_batch_size': 256.0, 'global_step': float(it), 'reduced_train_loss': 9.0 - 0.01 * it,
                   'train_step_timing in s': 4.21 * (1 + jitter(it, 0.003)), 'consumed_samples': float(it * 256),
                   'tflops_per_sec_per_gpu': 512.3 / (1 + jitter(it, 0.003))}
        s = f"Training epoch 0, iteration {it}/1000"
        for k, v in metrics.items():
            if isinstance(v, float) and v.is_integer():
                s += f' | {k}: {int(v)}'
            else:
                s += f' | {k}: {v:.4}'
        lines.append(s)
    write('nemo2.log', lines)


def nemo1_bar():
    # PTL's TQDM progress bar with NeMo's metrics (NeMo README "Expected Performance"): redrawn with \r
    parts = []
    for it in range(1, 51):
        pct = 2 * it
        parts.append(f"Epoch 0: : {pct:3d}%|{'█' * (it // 5):<10}| {it}/50 [{it * 6 // 60:02d}:{it * 6 % 60:02d}<00:00, "
                     f"reduced_train_loss={9 - 0.02 * it:.3f}, global_step={it - 1:.1f}, consumed_samples={it * 1536:.1f}, "
                     f"train_step_timing in s={5.9 * (1 + jitter(it, 0.003)):.3f}]")
    with open(os.path.join(HERE, 'nemo1_bar.log'), 'w', newline='') as f:
        f.write('GPU available: True (cuda), used: True\n' + '\r'.join(parts) + '\n')


def torchtitan():
    # torchtitan/components/metrics.py MetricsProcessor.log through torchtitan's logger format
    # "[titan] %(asctime)s - %(name)s - %(levelname)s - %(message)s", as torchrun --tee prefixes it.
    red, green, orange, turquoise, blue, cyan, magenta, reset = ('\033[31m', '\033[32m', '\033[38;2;255;165;0m',
                                                                 '\033[38;2;54;234;195m', '\033[34m', '\033[36m',
                                                                 '\033[35m', '\033[39m')
    t = datetime.datetime(2025, 3, 12, 10, 0, 0)
    lines = ['[rank0]:[titan] 2025-03-12 09:59:40,001 - root - INFO - Starting job: Llama 3 8B training']
    for step in [1] + list(range(10, 310, 10)):
        t += datetime.timedelta(seconds=0.66 * (10 if step > 1 else 1) * (1 + jitter(step, 0.003)))
        stamp = t.strftime('%Y-%m-%d %H:%M:%S') + f',{t.microsecond // 1000:03d}'
        lines.append(f"[rank0]:[titan] {stamp} - root - INFO - {red}step: {step:2}  {green}loss: {8.0 - step * 0.005:7.4f}  "
                     f"{orange}grad_norm: {1.5:7.4f}  {turquoise}memory: {42.12:5.2f}GiB({44.34:.2f}%)  "
                     f"{blue}tps: {round(6200):,}  {cyan}tflops: {359.12:,.2f}  {magenta}mfu: {36.31:.2f}%{reset}")
    write('torchtitan.log', lines)


def deepspeed():
    # deepspeed/runtime/pipe/engine.py PipelineEngine.train_batch (steps_per_print 10)
    lines = ['[2025-01-05 08:00:00,000] [INFO] [config.py:1000:print] DeepSpeedEngine configuration:']
    for step in range(10, 410, 10):
        it = 1.234 * (1 + jitter(step, 0.003))
        lines.append(f'steps: {step} loss: {7.5 - step * 0.001:0.4f} iter time (s): {it:0.3f} samples/sec: {512 / it:0.3f}')
    write('deepspeed.log', lines)


if __name__ == '__main__':
    megatron_lm()
    restart()
    slow_gpu()
    nemo2()
    nemo1_bar()
    torchtitan()
    deepspeed()
